/*
 * implicit_fit.c — the per-bone field reconstruction of implicit skinning
 * (Vaillant 2015, 4.4; issue #20): sub-meshes, Poisson-disk samples,
 * culling (Eq. 4.2), closure centers, the HRBF of Eq. 4.1 (bind/hrbf.c),
 * the remap t_r, and each field sampled into its N^3 grid; see
 * bind/implicit_bind.h. The rest normals and the mean value coordinates
 * of Eq. 4.6 are bind/implicit_mvc.c's.
 *
 * Rest space: rig space at bind (object_matrix * position). Per bone i,
 * with head h, tail t (rig space), L = |t - h|, u = (t - h) / L:
 *
 * 1. Sub-mesh M_i: the welded representatives whose largest skin weight
 *    (first slot on a tie, as bind.c) is bone i, with a non-zero rest
 *    normal (a vertex of no triangle cannot carry Hermite data).
 * 2. Joint ends: the head is a joint when the parent's tail is within
 *    FIT_JOINT_TOLERANCE * max(L, L_parent) of it and the parent is
 *    expected to get a field (its sub-mesh has at least FIT_MIN_CENTERS
 *    vertices); the tail is one when a child with a sub-mesh that large
 *    has its head there. Other ends are free.
 * 3. Culling (Eq. 4.2): with tau = (v - h) . (t - h) / L^2, a candidate
 *    with tau <= b at a joint head, or tau >= 1 - b at a joint tail, is
 *    removed. The paper culls "samples which are too close to a joint"
 *    to leave the joint's hole to the closure centers; a free end has no
 *    neighbor field and its skin is the sub-mesh's own (a head top, a
 *    finger tip, a limb's cap), so nothing is culled there. Culling is
 *    applied to the candidates before sampling (the same set of surviving
 *    points as culling the samples, and the target count then holds for
 *    what is fitted).
 * 4. Poisson-disk samples (4.4 cites [WCE07]): the candidates in a fixed
 *    pseudo-random order (a hash of their vertex index: no rand() state),
 *    a greedy pass accepts a candidate when no accepted one is within the
 *    disk radius rho; rho is found by bisection (FIT_BISECTION_STEPS
 *    halvings between 0 and the candidates' bounding-box diagonal) as the
 *    largest radius found accepting at least target_samples; a sub-mesh
 *    with no more candidates than the target keeps them all.
 * 5. Closure centers (4.4, Fig. 4.3): at each joint end, one center on
 *    the bone's line beyond the joint, at s_j = the distance from the
 *    joint to the nearest vertex of M_i (culled or not), normal u at the
 *    tail and -u at the head. A free end gets none (its samples close the
 *    field, or the cubic HRBF closes the hole by itself, 4.4, Fig. 4.4a).
 * 6. The HRBF (Eq. 4.1) fitted in double to the samples and closure
 *    centers; fewer than FIT_MIN_CENTERS centers, or a singular system:
 *    no field for that bone (bone_field -1), not an error.
 * 7. r = the largest distance from a center (samples and closure centers)
 *    to the bone segment [h, t], so that f = t_r(d) reaches 1 only near
 *    the skeleton (4.4).
 * 8. The grid: the bone's frame has its Y axis along u (X, Z: any
 *    orthonormal completion, from the world axis least aligned with u);
 *    the box is the bounding box, in that frame, of the centers and the
 *    bone's two ends, grown by a margin on every side: 1.25 r, else 2 r,
 *    else 3.2 r, the first for which f = t_r(d) <= FIT_FACE_TOLERANCE
 *    (1e-3) at every grid point of the box's faces (the HRBF's d is close
 *    to a signed distance near its data, so r away from it d >= r and
 *    f = 0 is expected; an open end closed by the cubic alone may bulge
 *    farther). When no margin works the HRBF does not close the sub-mesh
 *    (an open patch: BCN_Epileptic.X's eyelids, eyebrows, ponytail) and
 *    f would jump at the box's faces: no field for that bone. Then the
 *    N^3 points, each
 *    f = t_r(d(x)), grad f = t_r'(d) grad d (rest space, analytic:
 *    ssk_hrbf_eval and ssk_hrbf_remap, in double, stored as float).
 *
 * Cost: N^3 m kernel terms per bone (32^3 points, m ~ 66 centers); the
 * grids are computed in parallel over (field, z-slab) items of the pool
 * (model/parallel.h), the fits in parallel over bones; every item writes
 * its own outputs, so the results do not depend on the thread count.
 */
#include "bind/implicit_bind.h"
#include "bind/hrbf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Defaults (4.4: "targeting around 50 to 100 samples"; b = 0.05; the
 * grid of 4.6.2.2). */
#define FIT_DEFAULT_TARGET_SAMPLES 64u
#define FIT_DEFAULT_CULL_B 0.05f
/* Fewer HRBF centers than this: no field for the bone. */
#define FIT_MIN_CENTERS SSK_IMPLICIT_FIT_MIN_CENTERS
/* Parameter limits: the dense 4m by 4m system of a bone (m up to
 * 1024 + 2: 134 MB of doubles), b in [0, 0.5), the grid's N. */
#define FIT_MAX_TARGET_SAMPLES 1024u
#define FIT_MAX_CULL_B 0.5f
#define FIT_MIN_RESOLUTION 2u
#define FIT_MAX_RESOLUTION 256u
/* Two bone ends coincide within this fraction of the longer bone. */
#define FIT_JOINT_TOLERANCE 1e-3
/* A bone shorter than this fraction of its sub-mesh's bounding-box
 * diagonal is a point: no culling, no joints, axis Y. */
#define FIT_MIN_BONE_LENGTH_RATIO 1e-6
/* Halvings of the Poisson-disk radius. */
#define FIT_BISECTION_STEPS 40
/* The final greedy pass stops after this many times the target (a guard:
 * the count at the radius found is about the target). */
#define FIT_MAX_SAMPLE_FACTOR SSK_IMPLICIT_FIT_MAX_SAMPLE_FACTOR
/* The grid's margin around the centers, in units of r (>= 1: see 8.):
 * FIT_MARGIN_RADII first, then times FIT_MARGIN_GROWTH, FIT_MARGIN_TRIES
 * margins in all (1.25 r, 2 r, 3.2 r), until f on the box's faces is at
 * most FIT_FACE_TOLERANCE. */
#define FIT_MARGIN_RADII 1.25
#define FIT_MARGIN_GROWTH 1.6
#define FIT_MARGIN_TRIES 3
#define FIT_FACE_TOLERANCE 1e-3
/* Grid work items are z-slabs: one per chunk. */
#define FIT_GRID_GRAIN 1
/* Channels of a grid point: f, grad f. */
#define FIT_CHANNELS 4u

void ssk_implicit_fit_params_default(ssk_implicit_fit_params *p)
{
    if (!p) return;
    p->target_samples = FIT_DEFAULT_TARGET_SAMPLES;
    p->cull_b = FIT_DEFAULT_CULL_B;
    p->resolution = SSK_IMPLICIT_FIELD_RESOLUTION;
}

ssk_status ssk_implicit_fit_params_check(const ssk_implicit_fit_params *p, ssk_error *err)
{
    if (!p)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit fit parameters: NULL");
    if (p->target_samples < FIT_MIN_CENTERS || p->target_samples > FIT_MAX_TARGET_SAMPLES)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit fit parameters: target_samples %u outside [%u, %u]",
                             p->target_samples, FIT_MIN_CENTERS, FIT_MAX_TARGET_SAMPLES);
    if (!(p->cull_b >= 0.0f && p->cull_b < FIT_MAX_CULL_B))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit fit parameters: cull_b %g outside [0, %g)",
                             (double)p->cull_b, (double)FIT_MAX_CULL_B);
    if (p->resolution < FIT_MIN_RESOLUTION || p->resolution > FIT_MAX_RESOLUTION)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit fit parameters: resolution %u outside [%u, %u]",
                             p->resolution, FIT_MIN_RESOLUTION, FIT_MAX_RESOLUTION);
    return ssk_error_ok(err);
}

/* One bone's fit, before its grid. */
typedef struct bone_fit {
    ssk_status status; /* SSK_OK or SSK_ERROR_OUT_OF_MEMORY */
    bool has_field;
    ssk_hrbf hrbf;
    double radius;
    double axes[3][3]; /* rows: the frame's X, Y (along the bone), Z */
    double origin[3];  /* the head */
    double lo[3], hi[3]; /* the box in the frame */
    uint32_t centers;
} bone_fit;

typedef struct fit_ctx {
    const ssk_rig *rig;
    const ssk_implicit_fit_params *params;
    const float *rest;          /* #V by 3 */
    const float *normals;       /* #V by 3 */
    const uint32_t *bone_offsets, *bone_vertices; /* CSR: M_i, ascending */
    const uint8_t *expected;    /* #B: M_i has >= FIT_MIN_CENTERS vertices */
    bone_fit *bones;            /* #B */
} fit_ctx;

/* A candidate of the Poisson-disk sampling. */
typedef struct candidate {
    uint64_t key; /* hash of the vertex index: the visiting order */
    uint32_t vertex;
    double p[3];
} candidate;

static uint64_t hash_index(uint64_t x)
{
    /* splitmix64's finalizer */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static int candidate_cmp(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->vertex < y->vertex ? -1 : x->vertex > y->vertex ? 1 : 0;
}

static double dist2(const double a[3], const double b[3])
{
    const double d[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
    return d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
}

/* Greedy dart throwing over the candidates in order with disk radius
 * sqrt(r2): indices of the accepted ones into `out` (room for `cap`);
 * stops at cap accepted. Returns the count. */
static uint32_t poisson_pass(const candidate *c, uint32_t n, double r2, uint32_t cap,
                             uint32_t *out)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < n && count < cap; ++i) {
        bool free_disk = true;
        for (uint32_t k = 0; k < count && free_disk; ++k)
            if (dist2(c[i].p, c[out[k]].p) < r2) free_disk = false;
        if (free_disk) out[count++] = i;
    }
    return count;
}

/* Distance from p to the segment [a, a + axis] (axis_len2 = |axis|^2; 0:
 * the point a). */
static double segment_distance(const double p[3], const double a[3], const double axis[3],
                               double axis_len2)
{
    const double d[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
    double tau = axis_len2 > 0.0 ? (d[0] * axis[0] + d[1] * axis[1] + d[2] * axis[2]) / axis_len2
                                 : 0.0;
    tau = tau < 0.0 ? 0.0 : tau > 1.0 ? 1.0 : tau;
    const double e[3] = {d[0] - tau * axis[0], d[1] - tau * axis[1], d[2] - tau * axis[2]};
    return sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
}

static bool ends_meet(const float a[3], const float b[3], double tolerance)
{
    const double d[3] = {(double)a[0] - b[0], (double)a[1] - b[1], (double)a[2] - b[2]};
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) <= tolerance;
}

static double bone_length(const ssk_bone *bone)
{
    const double d[3] = {(double)bone->tail[0] - bone->head[0],
                         (double)bone->tail[1] - bone->head[1],
                         (double)bone->tail[2] - bone->head[2]};
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* Rest-space position of grid point (i, j, k) of bf's box at resolution n. */
static void grid_point(const bone_fit *bf, uint32_t n, uint32_t i, uint32_t j, uint32_t k,
                       double x[3])
{
    const uint32_t idx[3] = {i, j, k};
    double local[3];
    for (int a = 0; a < 3; ++a)
        local[a] = bf->lo[a] + idx[a] * ((bf->hi[a] - bf->lo[a]) / (double)(n - 1));
    for (int a = 0; a < 3; ++a)
        x[a] = bf->origin[a] + local[0] * bf->axes[0][a] + local[1] * bf->axes[1][a] +
               local[2] * bf->axes[2][a];
}

/* Whether f = t_r(d) is at most FIT_FACE_TOLERANCE at every grid point on
 * the faces of bf's box (the grid's outer layers). */
static bool faces_vanish(const bone_fit *bf, uint32_t n)
{
    for (uint32_t k = 0; k < n; ++k)
        for (uint32_t j = 0; j < n; ++j)
            for (uint32_t i = 0; i < n; i += (k == 0 || k == n - 1 || j == 0 || j == n - 1)
                                                     ? 1
                                                     : n - 1) {
                double x[3];
                grid_point(bf, n, i, j, k, x);
                const double d = ssk_hrbf_eval(&bf->hrbf, x, NULL);
                if (!(ssk_hrbf_remap(d, bf->radius, NULL) <= FIT_FACE_TOLERANCE)) return false;
            }
    return true;
}

/* Steps 2-8 of the header for bone b (the grid's box, not its values). */
static void fit_bone(const fit_ctx *c, uint32_t b)
{
    bone_fit *out = &c->bones[b];
    out->status = SSK_OK;
    const ssk_rig *rig = c->rig;
    const ssk_bone *bone = &rig->bones[b];
    const uint32_t first = c->bone_offsets[b], count = c->bone_offsets[b + 1] - first;
    if (count < FIT_MIN_CENTERS) return;
    const double head[3] = {bone->head[0], bone->head[1], bone->head[2]};
    const double tail[3] = {bone->tail[0], bone->tail[1], bone->tail[2]};
    double axis[3] = {tail[0] - head[0], tail[1] - head[1], tail[2] - head[2]};
    double len = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    /* the sub-mesh's extent decides whether the bone is a point */
    double bmin[3] = {INFINITY, INFINITY, INFINITY}, bmax[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < count; ++i) {
        const float *p = c->rest + 3 * (size_t)c->bone_vertices[first + i];
        for (int a = 0; a < 3; ++a) {
            if (p[a] < bmin[a]) bmin[a] = p[a];
            if (p[a] > bmax[a]) bmax[a] = p[a];
        }
    }
    const double diag = sqrt(dist2(bmin, bmax));
    const bool point_bone = !(len > FIT_MIN_BONE_LENGTH_RATIO * diag);
    bool head_joint = false, tail_joint = false;
    if (!point_bone) {
        if (bone->parent >= 0 && c->expected[bone->parent]) {
            const ssk_bone *pb = &rig->bones[bone->parent];
            const double l = fmax(len, bone_length(pb));
            head_joint = ends_meet(pb->tail, bone->head, FIT_JOINT_TOLERANCE * l);
        }
        for (uint32_t k = 0; k < rig->bone_count && !tail_joint; ++k) {
            const ssk_bone *ch = &rig->bones[k];
            if (ch->parent != (int32_t)b || !c->expected[k]) continue;
            const double l = fmax(len, bone_length(ch));
            tail_joint = ends_meet(ch->head, bone->tail, FIT_JOINT_TOLERANCE * l);
        }
    }
    const double len2 = point_bone ? 0.0 : len * len;
    if (point_bone) {
        axis[0] = axis[2] = 0.0;
        axis[1] = 1.0;
        len = 0.0;
    }
    const double unit[3] = {point_bone ? 0.0 : axis[0] / len, point_bone ? 1.0 : axis[1] / len,
                            point_bone ? 0.0 : axis[2] / len};
    const double b_cull = c->params->cull_b;
    candidate *cand = malloc((size_t)count * sizeof *cand);
    uint32_t *picked = malloc(((size_t)count + 1) * sizeof *picked);
    double *pts = NULL, *nrm = NULL;
    if (!cand || !picked) goto oom;
    uint32_t n = 0;
    double near_head = INFINITY, near_tail = INFINITY;
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t v = c->bone_vertices[first + i];
        const float *pf = c->rest + 3 * (size_t)v;
        const double p[3] = {pf[0], pf[1], pf[2]};
        near_head = fmin(near_head, sqrt(dist2(p, head)));
        near_tail = fmin(near_tail, sqrt(dist2(p, tail)));
        if (len2 > 0.0) {
            const double tau = ((p[0] - head[0]) * axis[0] + (p[1] - head[1]) * axis[1] +
                                (p[2] - head[2]) * axis[2]) / len2;
            /* Eq. 4.2 at the joint ends only (header, 3.) */
            if ((head_joint && !(tau > b_cull)) || (tail_joint && !(tau < 1.0 - b_cull)))
                continue;
        }
        cand[n].key = hash_index(v);
        cand[n].vertex = v;
        memcpy(cand[n].p, p, sizeof p);
        ++n;
    }
    qsort(cand, n, sizeof *cand, candidate_cmp);
    const uint32_t target = c->params->target_samples;
    uint32_t chosen;
    if (n <= target) {
        for (uint32_t i = 0; i < n; ++i) picked[i] = i;
        chosen = n;
    } else {
        double cmin[3] = {INFINITY, INFINITY, INFINITY};
        double cmax[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (uint32_t i = 0; i < n; ++i)
            for (int a = 0; a < 3; ++a) {
                cmin[a] = fmin(cmin[a], cand[i].p[a]);
                cmax[a] = fmax(cmax[a], cand[i].p[a]);
            }
        double lo = 0.0, hi = sqrt(dist2(cmin, cmax));
        for (int step = 0; step < FIT_BISECTION_STEPS; ++step) {
            const double mid = 0.5 * (lo + hi);
            if (poisson_pass(cand, n, mid * mid, target, picked) >= target)
                lo = mid;
            else
                hi = mid;
        }
        uint32_t cap = FIT_MAX_SAMPLE_FACTOR * target;
        if (cap > n) cap = n;
        chosen = poisson_pass(cand, n, lo * lo, cap, picked);
    }
    /* Hermite data: samples, then the closure centers */
    const uint32_t m_max = chosen + SSK_IMPLICIT_FIT_CLOSURE_CENTERS;
    pts = malloc(3 * (size_t)m_max * sizeof *pts);
    nrm = malloc(3 * (size_t)m_max * sizeof *nrm);
    if (!pts || !nrm) goto oom;
    uint32_t m = 0;
    for (uint32_t k = 0; k < chosen; ++k, ++m) {
        const candidate *cd = &cand[picked[k]];
        const float *nf = c->normals + 3 * (size_t)cd->vertex;
        for (int a = 0; a < 3; ++a) {
            pts[3 * m + a] = cd->p[a];
            nrm[3 * m + a] = nf[a];
        }
    }
    if (head_joint && near_head > 0.0) {
        for (int a = 0; a < 3; ++a) {
            pts[3 * m + a] = head[a] - near_head * unit[a];
            nrm[3 * m + a] = -unit[a];
        }
        ++m;
    }
    if (tail_joint && near_tail > 0.0) {
        for (int a = 0; a < 3; ++a) {
            pts[3 * m + a] = tail[a] + near_tail * unit[a];
            nrm[3 * m + a] = unit[a];
        }
        ++m;
    }
    if (m < FIT_MIN_CENTERS) goto done;
    ssk_error fit_err = {0};
    const ssk_status fs = ssk_hrbf_fit(&out->hrbf, pts, nrm, m, &fit_err);
    if (fs == SSK_ERROR_OUT_OF_MEMORY) goto oom;
    if (fs != SSK_OK) goto done; /* singular: no field */
    double r = 0.0;
    for (uint32_t k = 0; k < m; ++k) r = fmax(r, segment_distance(pts + 3 * k, head, axis, len2));
    if (!(r > 0.0) || !isfinite(r)) {
        ssk_hrbf_free(&out->hrbf);
        goto done;
    }
    /* the frame: Y along the bone */
    double *ax = out->axes[0], *ay = out->axes[1], *az = out->axes[2];
    memcpy(ay, unit, sizeof unit);
    {
        const double fx = fabs(unit[0]), fy = fabs(unit[1]), fz = fabs(unit[2]);
        const double w[3] = {fx <= fy && fx <= fz ? 1.0 : 0.0, fy < fx && fy <= fz ? 1.0 : 0.0,
                             fz < fx && fz < fy ? 1.0 : 0.0};
        /* X = normalize(Y x w), Z = X x Y */
        double t[3] = {ay[1] * w[2] - ay[2] * w[1], ay[2] * w[0] - ay[0] * w[2],
                       ay[0] * w[1] - ay[1] * w[0]};
        const double tl = sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
        for (int a = 0; a < 3; ++a) ax[a] = t[a] / tl;
        az[0] = ax[1] * ay[2] - ax[2] * ay[1];
        az[1] = ax[2] * ay[0] - ax[0] * ay[2];
        az[2] = ax[0] * ay[1] - ax[1] * ay[0];
    }
    memcpy(out->origin, head, sizeof head);
    for (int a = 0; a < 3; ++a) {
        out->lo[a] = 0.0;
        out->hi[a] = a == 1 ? len : 0.0;
    }
    for (uint32_t k = 0; k < m; ++k) {
        const double d[3] = {pts[3 * k] - head[0], pts[3 * k + 1] - head[1],
                             pts[3 * k + 2] - head[2]};
        for (int a = 0; a < 3; ++a) {
            const double x = d[0] * out->axes[a][0] + d[1] * out->axes[a][1] +
                             d[2] * out->axes[a][2];
            out->lo[a] = fmin(out->lo[a], x);
            out->hi[a] = fmax(out->hi[a], x);
        }
    }
    out->radius = r;
    const double core_lo[3] = {out->lo[0], out->lo[1], out->lo[2]};
    const double core_hi[3] = {out->hi[0], out->hi[1], out->hi[2]};
    double margin = FIT_MARGIN_RADII * r;
    bool closed = false;
    for (int attempt = 0; attempt < FIT_MARGIN_TRIES && !closed; ++attempt) {
        if (attempt > 0) margin *= FIT_MARGIN_GROWTH;
        for (int a = 0; a < 3; ++a) {
            out->lo[a] = core_lo[a] - margin;
            out->hi[a] = core_hi[a] + margin;
        }
        closed = faces_vanish(out, c->params->resolution);
    }
    if (!closed) { /* an open patch: t_r(d) does not vanish away from it */
        ssk_hrbf_free(&out->hrbf);
        goto done;
    }
    out->centers = m;
    out->has_field = true;
    goto done;
oom:
    out->status = SSK_ERROR_OUT_OF_MEMORY;
    ssk_hrbf_free(&out->hrbf);
done:
    free(cand);
    free(picked);
    free(pts);
    free(nrm);
}

static void fit_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const fit_ctx *c = ctx;
    (void)chunk;
    for (int64_t b = begin; b < end; ++b) fit_bone(c, (uint32_t)b);
}

typedef struct grid_job {
    const bone_fit *bones;
    ssk_implicit_field *fields;
    uint32_t resolution;
} grid_job;

/* z-slabs: item = field * N + k */
static void grid_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const grid_job *j = ctx;
    (void)chunk;
    const uint32_t n = j->resolution;
    for (int64_t item = begin; item < end; ++item) {
        const uint32_t f = (uint32_t)(item / n), k = (uint32_t)(item % n);
        ssk_implicit_field *field = &j->fields[f];
        const bone_fit *bf = &j->bones[field->bone];
        float *dst = field->samples + (size_t)k * n * n * FIT_CHANNELS;
        for (uint32_t jy = 0; jy < n; ++jy)
            for (uint32_t i = 0; i < n; ++i) {
                double x[3];
                grid_point(bf, n, i, jy, k, x);
                double gd[3], dt;
                const double d = ssk_hrbf_eval(&bf->hrbf, x, gd);
                const double fv = ssk_hrbf_remap(d, bf->radius, &dt);
                float *s = dst + ((size_t)jy * n + i) * FIT_CHANNELS;
                s[0] = (float)fv;
                for (int a = 0; a < 3; ++a) s[1 + a] = (float)(dt * gd[a]);
            }
    }
}

/* rest space -> grid coordinates (row-major 4x4), header 8. */
static void grid_matrix(float dst[16], const bone_fit *bf, uint32_t n)
{
    for (int a = 0; a < 3; ++a) {
        const double scale = (double)(n - 1) / (bf->hi[a] - bf->lo[a]);
        const double *row = bf->axes[a];
        const double o = row[0] * bf->origin[0] + row[1] * bf->origin[1] + row[2] * bf->origin[2];
        for (int c = 0; c < 3; ++c) dst[4 * a + c] = (float)(scale * row[c]);
        dst[4 * a + 3] = (float)(-scale * (o + bf->lo[a]));
    }
    dst[12] = dst[13] = dst[14] = 0.0f;
    dst[15] = 1.0f;
}


ssk_status ssk_implicit_fit_create(ssk_implicit_fit *out, const ssk_rig *rig,
                                   const ssk_implicit_fit_params *params, ssk_error *err)
{
    if (!out || !rig)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_implicit_fit_create: NULL rig or output");
    memset(out, 0, sizeof *out);
    ssk_implicit_fit_params defaults;
    ssk_implicit_fit_params_default(&defaults);
    const ssk_implicit_fit_params *p = params ? params : &defaults;
    ssk_status st = ssk_implicit_fit_params_check(p, err);
    if (st != SSK_OK) return st;
    const size_t nv = rig->vertex_count;
    const uint32_t nb = rig->bone_count;
    float *rest = malloc((3 * nv + 1) * sizeof *rest);
    int32_t *owner = malloc((nv + 1) * sizeof *owner);
    uint32_t *bone_offsets = calloc((size_t)nb + 2, sizeof *bone_offsets);
    uint32_t *bone_vertices = malloc((nv + 1) * sizeof *bone_vertices);
    uint8_t *expected = calloc((size_t)nb + 1, 1);
    bone_fit *bones = calloc((size_t)nb + 1, sizeof *bones);
    out->rest_normals = malloc((3 * nv + 1) * sizeof *out->rest_normals);
    out->bone_field = malloc(((size_t)nb + 1) * sizeof *out->bone_field);
    if (!rest || !owner || !bone_offsets || !bone_vertices || !expected || !bones ||
        !out->rest_normals || !out->bone_field)
        goto oom;
    for (uint32_t mi = 0; mi < rig->mesh_count; ++mi) {
        const ssk_mesh *mesh = &rig->meshes[mi];
        for (uint32_t v = 0; v < mesh->vertex_count; ++v)
            ssk_mat4_transform_point(rest + 3 * ((size_t)mesh->first_vertex + v),
                                     mesh->object_matrix, mesh->positions + 3 * (size_t)v);
    }
    st = ssk_implicit_rest_normals(rig, rest, out->rest_normals, err);
    if (st != SSK_OK) goto fail;
    /* 1. the sub-meshes */
    for (uint32_t mi = 0; mi < rig->mesh_count; ++mi) {
        const ssk_mesh *mesh = &rig->meshes[mi];
        const uint32_t k = mesh->influence_count;
        for (uint32_t v = 0; v < mesh->vertex_count; ++v) {
            const uint32_t row = mesh->first_vertex + v;
            int32_t best = -1;
            float best_w = 0.0f;
            const float *nf = out->rest_normals + 3 * (size_t)row;
            const bool representative = !rig->weld.point || rig->weld.point[row] == row;
            if (representative && (nf[0] != 0.0f || nf[1] != 0.0f || nf[2] != 0.0f))
                for (uint32_t i = 0; i < k; ++i) {
                    const float w = mesh->weights[(size_t)v * k + i];
                    if (w > best_w) {
                        best_w = w;
                        best = mesh->bone_indices[(size_t)v * k + i];
                    }
                }
            if (best >= (int32_t)nb) best = -1;
            owner[row] = best;
            if (best >= 0) ++bone_offsets[best + 1];
        }
    }
    for (uint32_t b = 0; b < nb; ++b) {
        expected[b] = bone_offsets[b + 1] >= FIT_MIN_CENTERS;
        bone_offsets[b + 1] += bone_offsets[b];
    }
    {
        uint32_t *fill = bone_offsets + 1; /* shifted: fill[b] starts at offsets[b] */
        memmove(fill, bone_offsets, (size_t)nb * sizeof *fill);
        for (size_t v = 0; v < nv; ++v)
            if (owner[v] >= 0) bone_vertices[fill[owner[v]]++] = (uint32_t)v;
        /* fill[b] now is the end of b = offsets[b + 1]: restored */
    }
    fit_ctx ctx = {rig, p, rest, out->rest_normals, bone_offsets, bone_vertices, expected, bones};
    ssk_parallel_for(nb, 1, fit_chunk, &ctx);
    uint32_t fields = 0;
    for (uint32_t b = 0; b < nb; ++b) {
        if (bones[b].status != SSK_OK) goto oom;
        out->bone_field[b] = bones[b].has_field ? (int32_t)fields++ : -1;
    }
    const uint32_t n = p->resolution;
    const size_t grid_floats = (size_t)n * n * n * FIT_CHANNELS;
    out->fields = calloc((size_t)fields + 1, sizeof *out->fields);
    if (!out->fields) goto oom;
    out->field_count = fields;
    for (uint32_t b = 0; b < nb; ++b) {
        if (out->bone_field[b] < 0) continue;
        ssk_implicit_field *field = &out->fields[out->bone_field[b]];
        field->bone = b;
        field->radius = (float)bones[b].radius;
        grid_matrix(field->grid_from_rest, &bones[b], n);
        field->resolution = n;
        field->sample_count = bones[b].centers;
        field->samples = malloc(grid_floats * sizeof *field->samples);
        if (!field->samples) goto oom;
    }
    grid_job gj = {bones, out->fields, n};
    ssk_parallel_for((int64_t)fields * n, FIT_GRID_GRAIN, grid_chunk, &gj);
    st = ssk_implicit_mvc_build(out, rig, rest, err);
    if (st != SSK_OK) goto fail;
    st = ssk_error_ok(err);
    goto done;
oom:
    st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_implicit_fit_create: out of memory");
fail:
    ssk_implicit_fit_free(out);
done:
    if (bones)
        for (uint32_t b = 0; b < nb; ++b) ssk_hrbf_free(&bones[b].hrbf);
    free(bones);
    free(rest);
    free(owner);
    free(bone_offsets);
    free(bone_vertices);
    free(expected);
    return st;
}

ssk_status ssk_implicit_fit_copy(ssk_implicit_fit *dst, const ssk_implicit_fit *src,
                                 uint32_t vertex_count, uint32_t bone_count, ssk_error *err)
{
    if (!dst || !src)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_implicit_fit_copy: NULL");
    memset(dst, 0, sizeof *dst);
    const size_t nv = vertex_count, nb = bone_count;
    const size_t entries = src->mvc_offsets ? src->mvc_offsets[nv] : 0;
    dst->fields = calloc((size_t)src->field_count + 1, sizeof *dst->fields);
    dst->bone_field = malloc((nb + 1) * sizeof *dst->bone_field);
    dst->mvc_offsets = malloc((nv + 1) * sizeof *dst->mvc_offsets);
    dst->mvc_neighbors = malloc((entries + 1) * sizeof *dst->mvc_neighbors);
    dst->mvc_weights = malloc((entries + 1) * sizeof *dst->mvc_weights);
    dst->rest_normals = malloc((3 * nv + 1) * sizeof *dst->rest_normals);
    if (!dst->fields || !dst->bone_field || !dst->mvc_offsets || !dst->mvc_neighbors ||
        !dst->mvc_weights || !dst->rest_normals)
        goto oom;
    dst->field_count = src->field_count;
    for (uint32_t f = 0; f < src->field_count; ++f) {
        const ssk_implicit_field *s = &src->fields[f];
        const size_t n = s->resolution;
        dst->fields[f] = *s;
        dst->fields[f].samples = malloc(n * n * n * FIT_CHANNELS * sizeof(float));
        if (!dst->fields[f].samples) goto oom;
        memcpy(dst->fields[f].samples, s->samples, n * n * n * FIT_CHANNELS * sizeof(float));
    }
    memcpy(dst->bone_field, src->bone_field, nb * sizeof *dst->bone_field);
    if (src->mvc_offsets) {
        memcpy(dst->mvc_offsets, src->mvc_offsets, (nv + 1) * sizeof *dst->mvc_offsets);
        memcpy(dst->mvc_neighbors, src->mvc_neighbors, entries * sizeof *dst->mvc_neighbors);
        memcpy(dst->mvc_weights, src->mvc_weights, entries * sizeof *dst->mvc_weights);
    } else {
        memset(dst->mvc_offsets, 0, (nv + 1) * sizeof *dst->mvc_offsets);
    }
    memcpy(dst->rest_normals, src->rest_normals, 3 * nv * sizeof *dst->rest_normals);
    return ssk_error_ok(err);
oom:
    ssk_implicit_fit_free(dst);
    return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_implicit_fit_copy: out of memory");
}
