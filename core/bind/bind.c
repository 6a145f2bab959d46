/* bind.c — attachment binding (Toothman 2020, ch. 3 "Attachment binding";
 * Toothman & Neff 2017, SCA poster, sec. 3).
 *
 * Every vertex i (rig space: v_i = O_m · rest position) is attached to one
 * bone b_i, the segment head p -> tail c, at t_i in [0, 1]: attachment point
 * a_i = p + t_i (c - p), scale vector s_i = v_i - a_i.
 *
 * Initial attachment, by method:
 * - DIRECT (3.1, Eq. 12): the closest point of every bone segment,
 *     t = clamp((v - p) · (c - p) / |c - p|^2, 0, 1),
 *   and the bone with the smallest |v - a| (lowest bone index on ties). The
 *   extracted Eq. 12 divides by |c - p|; that is a typo: only |c - p|^2 makes
 *   t the parameter of the closest point (re-derived: minimize
 *   |v - p - t (c - p)|^2 over t).
 * - WEIGHTS (3.2, "for a rig with skin weights"): the bones at the joint of
 *   the largest skin weight of the vertex, i.e. that bone B (the first
 *   influence slot on ties), its parent and its siblings (the bones with
 *   B's parent, the roots being siblings of each other); closest projection
 *   among them as DIRECT. A vertex without weight uses every bone (DIRECT).
 * - PLANAR (3.2, Eq. 13): a plane through each joint. Bone b has a head
 *   plane through p with normal n_h = normalize(u_parent + u_b) (u: unit
 *   bone direction; u_b for a root) and a tail plane through c with normal
 *   n_t = normalize(u_b + u_tc) for its tail child tc (the first child whose
 *   head is at b's tail), u_b without one; a sum shorter than
 *   SSK_BIND_OPPOSITE_EPSILON (opposite bones) gives u_b. Both normals point
 *   from the head side to the tail side, so the plane's normal lies in the
 *   plane of the two bones, along their half-vector, and their cross product
 *   lies in the plane, as the dissertation asks. Vertex v is in b's region
 *   when d_p = (v - p) · n_h >= 0 and d_c = (c - v) · n_t >= 0; then
 *   t = d_p / (d_p + d_c) (Eq. 13: the distances to the two planes' closest
 *   points; the projection t when both are 0). Among the bones whose region
 *   holds v, the one with the smallest |v - a| (lowest index on ties); no
 *   such bone: DIRECT. Siblings at a joint with several children each get a
 *   head plane of their own, from (parent, that child).
 * - AUTO: WEIGHTS when the rig has a non-zero skin weight, else DIRECT.
 *
 * Smoothing and reprojection (3.2, last paragraph; poster sec. 3), repeated
 * smooth_iterations times (Jacobi, so the result does not depend on the
 * vertex order or thread count):
 *   1. every attachment point becomes the mean of its neighbors'
 *      attachment points (uniform Laplacian over the rig's welded
 *      triangle-edge adjacency, ssk_rig_weld, so UV seams and borders shared
 *      by two meshes are no boundary; a vertex without neighbors keeps its
 *      own); coincident vertices then take their representative's bone, t
 *      and attachment point;
 *   2. that point is projected onto the skeleton as DIRECT does, over every
 *      bone for DIRECT- and PLANAR-bound rigs, over the vertex's WEIGHTS
 *      candidates for WEIGHTS (every bone for a vertex without weight); the
 *      vertex's bone and t become those of the projection.
 * After the last iteration s_i = v_i - a_i.
 *
 * Bones shorter than SSK_BIND_ZERO_BONE_FRACTION of the skeleton size (the
 * diagonal of the bounding box of every head and tail) are never candidates;
 * such a bone that carries skin weight is an error, as are degenerate
 * triangles (checked before any projection); loose vertices (in no
 * triangle) are bound by their own projection. With
 * max_distance > 0, a vertex farther than it from its chosen bone's segment
 * (checked after the last iteration) is an error naming the vertex, its bone
 * and the nearest bone. Projections are parallel over vertices (model/parallel.h). */
#include "bind/binding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A bone shorter than this fraction of the skeleton size has zero length. */
#define SSK_BIND_ZERO_BONE_FRACTION 1e-6
/* A child whose head is within this fraction of the skeleton size of a
 * bone's tail is that bone's tail child (PLANAR tail planes). */
#define SSK_BIND_JOINT_FRACTION 1e-5
/* A triangle with an area below this fraction of the squared diagonal of
 * its mesh's bounding box is degenerate (e.g. a right triangle whose legs
 * are 1e-6 of the mesh size; coincident or collinear vertices give 0). */
#define SSK_BIND_DEGENERATE_AREA_FRACTION 1e-12
/* |u_a + u_b| below this: the two bones point in opposite directions and
 * their joint plane falls back to the bone's own direction. */
#define SSK_BIND_OPPOSITE_EPSILON 1e-6
/* Rows per chunk of the binding's loops (model/parallel.h): below it a
 * loop runs on the calling thread (waking workers would cost more than the
 * work). */
#define SSK_BIND_PARALLEL_MIN_VERTICES 2048

static const char *const bind_method_names[SSK_BIND_METHOD_COUNT] = {"auto", "direct",
                                                                      "weights", "planar"};

void ssk_bind_params_default(ssk_bind_params *out)
{
    if (!out) return;
    out->method = SSK_BIND_AUTO;
    out->smooth_iterations = 6;
    out->max_distance = 0.0f;
    out->compute_cor = 0;
    ssk_cor_params_default(&out->cor);
    out->compute_implicit = 0;
}

const char *ssk_bind_method_name(ssk_bind_method method)
{
    if ((unsigned)method >= (unsigned)SSK_BIND_METHOD_COUNT) return NULL;
    return bind_method_names[method];
}

ssk_status ssk_bind_method_parse(ssk_bind_method *out, const char *name, ssk_error *err)
{
    for (int m = 0; name && m < SSK_BIND_METHOD_COUNT; ++m)
        if (strcasecmp(name, bind_method_names[m]) == 0) {
            if (out) *out = (ssk_bind_method)m;
            return ssk_error_ok(err);
        }
    return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                         "unknown binding method '%s' (expected auto, direct, weights or "
                         "planar)",
                         name ? name : "(null)");
}

ssk_status ssk_bind_params_check(const ssk_bind_params *params, ssk_error *err)
{
    if (!params)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "binding: NULL parameters");
    if ((unsigned)params->method >= (unsigned)SSK_BIND_METHOD_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "binding: method %d out of range [0, %d)", (int)params->method,
                             (int)SSK_BIND_METHOD_COUNT);
    if (!isfinite(params->max_distance) || params->max_distance < 0.0f)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "binding: max_distance %g must be finite and >= 0 (0: no limit)",
                             (double)params->max_distance);
    if (params->smooth_iterations > SSK_BIND_MAX_SMOOTH_ITERATIONS)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "binding: %u smoothing iterations, more than the %u allowed",
                             (unsigned)params->smooth_iterations,
                             (unsigned)SSK_BIND_MAX_SMOOTH_ITERATIONS);
    if (params->compute_cor) return ssk_cor_params_check(&params->cor, err);
    return ssk_error_ok(err);
}

ssk_bind_method ssk_bind_resolve_method(const ssk_rig *rig, ssk_bind_method method)
{
    if (method != SSK_BIND_AUTO) return method;
    return rig && ssk_rig_deforming_bone_count(rig) > 0 ? SSK_BIND_WEIGHTS : SSK_BIND_DIRECT;
}

ssk_binding *ssk_binding_alloc(uint32_t vertex_count, uint32_t bone_count)
{
    ssk_binding *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->vertex_count = vertex_count;
    b->bone_count = bone_count;
    size_t n = vertex_count ? vertex_count : 1;
    b->bones = calloc(n, sizeof *b->bones);
    b->t = calloc(n, sizeof *b->t);
    b->scale_vectors = calloc(n * 3, sizeof *b->scale_vectors);
    if (!b->bones || !b->t || !b->scale_vectors) {
        ssk_binding_destroy(b);
        return NULL;
    }
    return b;
}

bool ssk_binding_alloc_cor(ssk_binding *b)
{
    size_t n = b->vertex_count ? b->vertex_count : 1;
    float *centers = calloc(3 * n, sizeof(float));
    uint8_t *flags = calloc(n, 1);
    if (!centers || !flags) {
        free(centers);
        free(flags);
        return false;
    }
    free(b->cor_centers);
    free(b->cor_flags);
    b->cor_centers = centers;
    b->cor_flags = flags;
    return true;
}

void ssk_binding_destroy(ssk_binding *binding)
{
    if (!binding) return;
    free(binding->cor_centers);
    free(binding->cor_flags);
    if (binding->implicit) ssk_implicit_fit_free(binding->implicit);
    free(binding->implicit);
    ssk_cage_binding_free(binding->cage);
    free(binding->cage);
    free(binding->bones);
    free(binding->t);
    free(binding->scale_vectors);
    free(binding);
}

ssk_status ssk_binding_get(const ssk_binding *binding, ssk_binding_view *out, ssk_error *err)
{
    if (!binding || !out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_binding_get: NULL %s",
                             binding ? "output" : "binding");
    out->vertex_count = binding->vertex_count;
    out->bone_count = binding->bone_count;
    out->bones = binding->bones;
    out->t = binding->t;
    out->scale_vectors = binding->scale_vectors;
    out->rig_hash = binding->rig_hash;
    out->params = binding->params;
    out->seconds = binding->seconds;
    out->cor_centers = binding->cor_centers;
    out->cor_flags = binding->cor_flags;
    out->cor_seconds = binding->cor_seconds;
    out->has_implicit = binding->implicit != NULL;
    out->implicit_field_count = binding->implicit ? binding->implicit->field_count : 0;
    out->implicit_seconds = binding->implicit_seconds;
    out->implicit_current = ssk_binding_implicit_fit(binding, NULL) != NULL;
    out->has_cage = binding->cage != NULL;
    out->cage_vertex_count = binding->cage ? binding->cage->cage_vertex_count : 0;
    out->cage_seconds = binding->cage_seconds;
    return ssk_error_ok(err);
}

const ssk_implicit_fit *ssk_binding_implicit_fit(const ssk_binding *binding,
                                                 const ssk_implicit_fit_params *want)
{
    if (!binding || !binding->implicit || binding->implicit_version != SSK_IMPLICIT_FIT_VERSION)
        return NULL;
    ssk_implicit_fit_params defaults;
    ssk_implicit_fit_params_default(&defaults);
    const ssk_implicit_fit_params *w = want ? want : &defaults;
    const ssk_implicit_fit_params *have = &binding->implicit_params;
    if (have->target_samples != w->target_samples || have->cull_b != w->cull_b ||
        have->resolution != w->resolution)
        return NULL;
    return binding->implicit;
}

/* ------------------------------------------------------------------------ */
/* Skeleton preparation.                                                     */
/* ------------------------------------------------------------------------ */

/* One bone as the projections see it (rig space). */
typedef struct bind_segment {
    float head[3];
    float dir[3];        /* tail - head */
    float inv_len2;      /* 1 / |tail - head|^2 (0 for an unusable bone) */
    float tail[3];
    float head_normal[3]; /* PLANAR planes, see the top of the file */
    float tail_normal[3];
} bind_segment;

typedef struct bind_ctx {
    const ssk_rig *rig;
    ssk_bind_method method; /* resolved */
    uint32_t nv, nb;
    bind_segment *segments;  /* #B */
    int32_t *usable;         /* bones of non-zero length, ascending */
    uint32_t usable_count;
    /* WEIGHTS candidates of group g = parent + 1 (g = 0: the roots): the
     * usable bones whose parent is g - 1, and bone g - 1 itself, ascending;
     * group_bones[group_offsets[g] .. group_offsets[g + 1]). */
    uint32_t *group_offsets; /* #B + 2 */
    int32_t *group_bones;
    float *positions;        /* #V by 3, rig space */
    int32_t *main_bone;      /* #V largest-weight bone, -1 without weight */
    float *attach;           /* #V by 3 attachment points */
    float *smoothed;         /* #V by 3, smoothing scratch */
} bind_ctx;

static void ctx_free(bind_ctx *c)
{
    free(c->segments);
    free(c->usable);
    free(c->group_offsets);
    free(c->group_bones);
    free(c->positions);
    free(c->main_bone);
    free(c->attach);
    free(c->smoothed);
}

static double length3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

/* normalize(a + b) of two unit vectors, or `fallback` when they are
 * (nearly) opposite. */
static void joint_normal(float dst[3], const double a[3], const double b[3],
                         const double fallback[3])
{
    double s[3] = {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
    double l = length3(s);
    if (!(l >= SSK_BIND_OPPOSITE_EPSILON)) {
        for (int k = 0; k < 3; ++k) dst[k] = (float)fallback[k];
        return;
    }
    for (int k = 0; k < 3; ++k) dst[k] = (float)(s[k] / l);
}

/* Segments, usable bones, zero-length check, PLANAR planes and WEIGHTS
 * candidate groups. */
static ssk_status prepare_skeleton(bind_ctx *c, ssk_error *err)
{
    const ssk_rig *rig = c->rig;
    uint32_t nb = c->nb;
    c->segments = calloc(nb, sizeof *c->segments);
    c->usable = calloc(nb, sizeof *c->usable);
    c->group_offsets = calloc((size_t)nb + 2, sizeof *c->group_offsets);
    /* each bone is listed as a child once and as a parent once */
    c->group_bones = calloc(2 * (size_t)nb, sizeof *c->group_bones);
    double *unit = calloc(3 * (size_t)nb, sizeof *unit);
    uint8_t *weighted = calloc(nb, 1);
    ssk_status s = SSK_OK;
    if (!c->segments || !c->usable || !c->group_offsets || !c->group_bones || !unit ||
        !weighted) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                          "binding: cannot allocate the skeleton data (%u bones)", (unsigned)nb);
        goto done;
    }

    /* Skeleton size: bounding-box diagonal of every head and tail. */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t b = 0; b < nb; ++b)
        for (int k = 0; k < 3; ++k) {
            lo[k] = fmin(lo[k], fmin(rig->bones[b].head[k], rig->bones[b].tail[k]));
            hi[k] = fmax(hi[k], fmax(rig->bones[b].head[k], rig->bones[b].tail[k]));
        }
    double ext[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
    double size = length3(ext);
    double min_length = SSK_BIND_ZERO_BONE_FRACTION * size;
    double joint_tolerance = SSK_BIND_JOINT_FRACTION * size;

    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        size_t n = (size_t)mesh->vertex_count * mesh->influence_count;
        for (size_t i = 0; i < n; ++i)
            if (mesh->weights[i] > 0.0f) weighted[mesh->bone_indices[i]] = 1;
    }

    c->usable_count = 0;
    for (uint32_t b = 0; b < nb; ++b) {
        const ssk_bone *bone = &rig->bones[b];
        bind_segment *sg = &c->segments[b];
        double d[3];
        for (int k = 0; k < 3; ++k) {
            d[k] = (double)bone->tail[k] - bone->head[k];
            sg->head[k] = bone->head[k];
            sg->tail[k] = bone->tail[k];
            sg->dir[k] = (float)d[k];
        }
        double len = length3(d);
        /* !(len > min) also catches a zero-size skeleton (every bone 0). */
        if (!(len > min_length) || !(len > 0.0)) {
            if (weighted[b]) {
                s = ssk_error_set(err, SSK_ERROR_BIND,
                                  "binding: bone '%s' (index %u) has zero length "
                                  "(|tail - head| = %g, below %g = %g x the skeleton size %g) "
                                  "but carries skin weight",
                                  bone->name, (unsigned)b, len, min_length,
                                  SSK_BIND_ZERO_BONE_FRACTION, size);
                goto done;
            }
            sg->inv_len2 = 0.0f;
            continue;
        }
        sg->inv_len2 = (float)(1.0 / (len * len));
        for (int k = 0; k < 3; ++k) unit[3 * b + k] = d[k] / len;
        c->usable[c->usable_count++] = (int32_t)b;
    }
    if (c->usable_count == 0) {
        s = ssk_error_set(err, SSK_ERROR_BIND,
                          "binding: all %u bones have zero length (skeleton size %g)",
                          (unsigned)nb, size);
        goto done;
    }

    /* PLANAR planes. */
    for (uint32_t u = 0; u < c->usable_count; ++u) {
        uint32_t b = (uint32_t)c->usable[u];
        bind_segment *sg = &c->segments[b];
        const double *ub = unit + 3 * (size_t)b;
        int32_t parent = rig->bones[b].parent;
        if (parent >= 0 && c->segments[parent].inv_len2 > 0.0f)
            joint_normal(sg->head_normal, unit + 3 * (size_t)parent, ub, ub);
        else
            joint_normal(sg->head_normal, ub, ub, ub);
        int32_t tail_child = -1;
        for (uint32_t ch = 0; ch < nb && tail_child < 0; ++ch) {
            if (rig->bones[ch].parent != (int32_t)b || c->segments[ch].inv_len2 == 0.0f) continue;
            double g[3];
            for (int k = 0; k < 3; ++k) g[k] = (double)rig->bones[ch].head[k] - sg->tail[k];
            if (length3(g) <= joint_tolerance) tail_child = (int32_t)ch;
        }
        if (tail_child >= 0)
            joint_normal(sg->tail_normal, ub, unit + 3 * (size_t)tail_child, ub);
        else
            joint_normal(sg->tail_normal, ub, ub, ub);
    }

    /* WEIGHTS groups: one ascending pass keeps every group sorted, since
     * bone x enters group parent(x) + 1 (as a child) and group x + 1 (as
     * the parent) when x is visited. */
    uint32_t *count = c->group_offsets + 1; /* count[g] lands at offsets[g + 1] */
    for (uint32_t u = 0; u < c->usable_count; ++u) {
        int32_t b = c->usable[u];
        count[rig->bones[b].parent + 1]++;
        count[b + 1]++;
    }
    for (uint32_t g = 0; g <= nb; ++g) c->group_offsets[g + 1] += c->group_offsets[g];
    uint32_t *fill = calloc((size_t)nb + 1, sizeof *fill);
    if (!fill) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "binding: cannot allocate groups");
        goto done;
    }
    for (uint32_t u = 0; u < c->usable_count; ++u) {
        int32_t b = c->usable[u];
        uint32_t g = (uint32_t)(rig->bones[b].parent + 1);
        c->group_bones[c->group_offsets[g] + fill[g]++] = b;
        g = (uint32_t)b + 1;
        c->group_bones[c->group_offsets[g] + fill[g]++] = b;
    }
    free(fill);
done:
    free(unit);
    free(weighted);
    return s;
}

/* Degenerate triangles, in mesh order (loose vertices, in no triangle, are
 * bound by their own projection: step 1 leaves them their own point). */
static ssk_status check_meshes(const ssk_rig *rig, ssk_error *err)
{
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        if (mesh->triangle_count == 0) continue;
        double lo[3] = {INFINITY, INFINITY, INFINITY};
        double hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (uint32_t v = 0; v < mesh->vertex_count; ++v)
            for (int k = 0; k < 3; ++k) {
                lo[k] = fmin(lo[k], mesh->positions[3 * (size_t)v + k]);
                hi[k] = fmax(hi[k], mesh->positions[3 * (size_t)v + k]);
            }
        double ext[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
        double diag2 = ext[0] * ext[0] + ext[1] * ext[1] + ext[2] * ext[2];
        double min_area = SSK_BIND_DEGENERATE_AREA_FRACTION * diag2;
        for (uint32_t f = 0; f < mesh->triangle_count; ++f) {
            const int32_t *t = mesh->triangles + 3 * (size_t)f;
            if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2])
                return ssk_error_set(err, SSK_ERROR_BIND,
                                     "binding: mesh '%s' triangle %u is degenerate: it "
                                     "repeats a vertex (%d, %d, %d)",
                                     mesh->name, (unsigned)f, (int)t[0], (int)t[1], (int)t[2]);
            const float *a = mesh->positions + 3 * (size_t)t[0];
            const float *b = mesh->positions + 3 * (size_t)t[1];
            const float *q = mesh->positions + 3 * (size_t)t[2];
            double e1[3] = {(double)b[0] - a[0], (double)b[1] - a[1], (double)b[2] - a[2]};
            double e2[3] = {(double)q[0] - a[0], (double)q[1] - a[1], (double)q[2] - a[2]};
            double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                           e1[0] * e2[1] - e1[1] * e2[0]};
            double area = 0.5 * length3(n);
            if (!(area >= min_area) || area == 0.0)
                return ssk_error_set(err, SSK_ERROR_BIND,
                                     "binding: mesh '%s' triangle %u (%d, %d, %d) is "
                                     "degenerate: area %g below %g (%g x the squared mesh "
                                     "size)",
                                     mesh->name, (unsigned)f, (int)t[0], (int)t[1], (int)t[2],
                                     area, min_area, SSK_BIND_DEGENERATE_AREA_FRACTION);
        }
    }
    return ssk_error_ok(err);
}

/* ------------------------------------------------------------------------ */
/* Projections.                                                              */
/* ------------------------------------------------------------------------ */

/* Closest point of segment `sg` to x: returns its squared distance, t in
 * [0, 1] in *out_t (Eq. 12 with |c - p|^2). */
static inline float segment_project(const bind_segment *sg, const float x[3], float *out_t)
{
    float w[3] = {x[0] - sg->head[0], x[1] - sg->head[1], x[2] - sg->head[2]};
    float t = (w[0] * sg->dir[0] + w[1] * sg->dir[1] + w[2] * sg->dir[2]) * sg->inv_len2;
    t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
    float r[3] = {w[0] - t * sg->dir[0], w[1] - t * sg->dir[1], w[2] - t * sg->dir[2]};
    *out_t = t;
    return r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
}

/* The closest of `count` bones (ascending) to x; the first on ties. */
static inline int32_t nearest_of(const bind_segment *segments, const int32_t *list,
                                 uint32_t count, const float x[3], float *out_t)
{
    int32_t best = list[0];
    float best_t = 0.0f, best_d2 = INFINITY;
    for (uint32_t i = 0; i < count; ++i) {
        float t;
        float d2 = segment_project(&segments[list[i]], x, &t);
        if (d2 < best_d2) {
            best_d2 = d2;
            best = list[i];
            best_t = t;
        }
    }
    *out_t = best_t;
    return best;
}

/* The bones vertex `v` may attach to under the context's method (every
 * usable bone except for WEIGHTS on a weighted vertex). */
static inline const int32_t *candidates(const bind_ctx *c, uint32_t v, uint32_t *out_count)
{
    int32_t primary = c->main_bone[v];
    if (c->method == SSK_BIND_WEIGHTS && primary >= 0) {
        uint32_t g = (uint32_t)(c->rig->bones[primary].parent + 1);
        *out_count = c->group_offsets[g + 1] - c->group_offsets[g];
        return c->group_bones + c->group_offsets[g];
    }
    *out_count = c->usable_count;
    return c->usable;
}

/* PLANAR (Eq. 13): the bone whose joint planes enclose x with the smallest
 * |x - a|, or -1. */
static inline int32_t planar_attach(const bind_ctx *c, const float x[3], float *out_t)
{
    int32_t best = -1;
    float best_t = 0.0f, best_d2 = INFINITY;
    for (uint32_t u = 0; u < c->usable_count; ++u) {
        const bind_segment *sg = &c->segments[c->usable[u]];
        float wp[3] = {x[0] - sg->head[0], x[1] - sg->head[1], x[2] - sg->head[2]};
        float dp = wp[0] * sg->head_normal[0] + wp[1] * sg->head_normal[1] +
                   wp[2] * sg->head_normal[2];
        if (!(dp >= 0.0f)) continue;
        float dc = (sg->tail[0] - x[0]) * sg->tail_normal[0] +
                   (sg->tail[1] - x[1]) * sg->tail_normal[1] +
                   (sg->tail[2] - x[2]) * sg->tail_normal[2];
        if (!(dc >= 0.0f)) continue;
        float t;
        if (dp + dc > 0.0f) {
            t = dp / (dp + dc);
        } else {
            (void)segment_project(sg, x, &t);
        }
        t = t > 1.0f ? 1.0f : t;
        float r[3] = {wp[0] - t * sg->dir[0], wp[1] - t * sg->dir[1], wp[2] - t * sg->dir[2]};
        float d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        if (d2 < best_d2) {
            best_d2 = d2;
            best = c->usable[u];
            best_t = t;
        }
    }
    *out_t = best_t;
    return best;
}

static inline void attachment_point(float a[3], const bind_segment *sg, float t)
{
    for (int k = 0; k < 3; ++k) a[k] = sg->head[k] + t * sg->dir[k];
}

/* A loop of the binding: the context, one mesh (or NULL), the output. */
typedef struct bind_job {
    bind_ctx *c;
    const ssk_mesh *mesh;
    int32_t *bones;
    float *ts;
} bind_job;

static void prepare_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const bind_job *j = ctx;
    (void)chunk;
    bind_ctx *c = j->c;
    const ssk_mesh *mesh = j->mesh;
    const uint32_t k = mesh->influence_count;
    for (int64_t v = begin; v < end; ++v) {
        size_t row = mesh->first_vertex + (size_t)v;
        ssk_mat4_transform_point(c->positions + 3 * row, mesh->object_matrix,
                                 mesh->positions + 3 * (size_t)v);
        int32_t best = -1;
        float best_w = 0.0f;
        for (uint32_t i = 0; i < k; ++i) {
            float w = mesh->weights[(size_t)v * k + i];
            if (w > best_w) {
                best_w = w;
                best = mesh->bone_indices[(size_t)v * k + i];
            }
        }
        c->main_bone[row] = best;
    }
}

/* Rig-space positions and largest-weight bones of every vertex. */
static void prepare_vertices(bind_ctx *c)
{
    for (uint32_t m = 0; m < c->rig->mesh_count; ++m) {
        bind_job j = {c, &c->rig->meshes[m], NULL, NULL};
        ssk_parallel_for(c->rig->meshes[m].vertex_count, SSK_BIND_PARALLEL_MIN_VERTICES,
                         prepare_chunk, &j);
    }
}

static void initial_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const bind_job *j = ctx;
    (void)chunk;
    bind_ctx *c = j->c;
    int32_t *bones = j->bones;
    float *ts = j->ts;
    for (int64_t v = begin; v < end; ++v) {
        const float *x = c->positions + 3 * v;
        float t = 0.0f;
        int32_t b = -1;
        if (c->method == SSK_BIND_PLANAR) b = planar_attach(c, x, &t);
        if (b < 0) {
            uint32_t count;
            const int32_t *list = candidates(c, (uint32_t)v, &count);
            b = nearest_of(c->segments, list, count, x, &t);
        }
        bones[v] = b;
        ts[v] = t;
        attachment_point(c->attach + 3 * v, &c->segments[b], t);
    }
}

/* The initial attachment of every vertex (the method's projection). */
static void initial_attachment(bind_ctx *c, int32_t *bones, float *ts)
{
    bind_job j = {c, NULL, bones, ts};
    ssk_parallel_for(c->nv, SSK_BIND_PARALLEL_MIN_VERTICES, initial_chunk, &j);
}

static void smooth_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const bind_job *j = ctx;
    (void)chunk;
    bind_ctx *c = j->c;
    const ssk_weld *weld = &c->rig->weld;
    for (int64_t v = begin; v < end; ++v) {
        uint32_t lo = weld->adjacency_offsets[v], hi = weld->adjacency_offsets[v + 1];
        float *dst = c->smoothed + 3 * (size_t)v;
        if (lo == hi) {
            memcpy(dst, c->attach + 3 * (size_t)v, 3 * sizeof(float));
            continue;
        }
        double sum[3] = {0.0, 0.0, 0.0};
        for (uint32_t i = lo; i < hi; ++i) {
            const float *a = c->attach + 3 * (size_t)weld->adjacency[i];
            sum[0] += a[0];
            sum[1] += a[1];
            sum[2] += a[2];
        }
        double inv = 1.0 / (double)(hi - lo);
        for (int k = 0; k < 3; ++k) dst[k] = (float)(sum[k] * inv);
    }
}

static void reproject_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const bind_job *j = ctx;
    (void)chunk;
    bind_ctx *c = j->c;
    int32_t *bones = j->bones;
    float *ts = j->ts;
    for (int64_t v = begin; v < end; ++v) {
        uint32_t count;
        const int32_t *list = candidates(c, (uint32_t)v, &count);
        float t;
        int32_t b = nearest_of(c->segments, list, count, c->smoothed + 3 * v, &t);
        bones[v] = b;
        ts[v] = t;
        attachment_point(c->attach + 3 * v, &c->segments[b], t);
    }
}

/* One Jacobi step of uniform Laplacian smoothing of the attachment points
 * followed by reprojection (see the top of the file). */
static void smooth_and_reproject(bind_ctx *c, int32_t *bones, float *ts)
{
    /* The welded adjacency (weld.c): one surface across UV seams and mesh
     * borders; neighbors are representatives, and every vertex of a
     * coincident group has the same neighbors. */
    bind_job j = {c, NULL, bones, ts};
    ssk_parallel_for(c->nv, SSK_BIND_PARALLEL_MIN_VERTICES, smooth_chunk, &j);
    ssk_parallel_for(c->nv, SSK_BIND_PARALLEL_MIN_VERTICES, reproject_chunk, &j);
}

/* Coincident vertices are one surface point (weld.c): each takes its
 * representative's bone, t and attachment point. */
static void weld_attachment(bind_ctx *c, int32_t *bones, float *ts)
{
    const ssk_weld *weld = &c->rig->weld;
    for (uint32_t i = 0; i < weld->member_count; ++i) {
        const uint32_t v = weld->members[i], r = weld->point[v];
        bones[v] = bones[r];
        ts[v] = ts[r];
        memcpy(c->attach + 3 * (size_t)v, c->attach + 3 * (size_t)r, 3 * sizeof(float));
    }
}

/* Mesh and local index of whole-rig row `row`. */
static void locate_row(const ssk_rig *rig, uint32_t row, uint32_t *mesh, uint32_t *local)
{
    uint32_t m = 0;
    while (m + 1 < rig->mesh_count && rig->meshes[m + 1].first_vertex <= row) ++m;
    *mesh = m;
    *local = row - rig->meshes[m].first_vertex;
}

ssk_status ssk_binding_create(ssk_binding **out, const ssk_rig *rig,
                              const ssk_bind_params *params, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !rig || !params)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_binding_create: NULL %s",
                             !out ? "output" : (!rig ? "rig" : "parameters"));
    ssk_status s = ssk_bind_params_check(params, err);
    if (s != SSK_OK) return s;
    double start = ssk_time_seconds();
    if (rig->bone_count == 0)
        return ssk_error_set(err, SSK_ERROR_BIND,
                             "binding: the rig has no bones to attach its %u vertices to",
                             (unsigned)rig->vertex_count);

    bind_ctx c;
    memset(&c, 0, sizeof c);
    c.rig = rig;
    c.method = ssk_bind_resolve_method(rig, params->method);
    c.nv = rig->vertex_count;
    c.nb = rig->bone_count;
    ssk_binding *binding = NULL;
    s = prepare_skeleton(&c, err);
    if (s == SSK_OK) s = check_meshes(rig, err);
    if (s != SSK_OK) goto fail;

    size_t n = c.nv ? c.nv : 1;
    c.positions = malloc(3 * n * sizeof(float));
    c.main_bone = malloc(n * sizeof(int32_t));
    c.attach = malloc(3 * n * sizeof(float));
    c.smoothed = malloc(3 * n * sizeof(float));
    binding = ssk_binding_alloc(c.nv, c.nb);
    if (!c.positions || !c.main_bone || !c.attach || !c.smoothed || !binding) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                          "binding: cannot allocate the arrays of %u vertices", (unsigned)c.nv);
        goto fail;
    }

    prepare_vertices(&c);
    initial_attachment(&c, binding->bones, binding->t);
    weld_attachment(&c, binding->bones, binding->t);
    for (uint32_t it = 0; it < params->smooth_iterations; ++it) {
        smooth_and_reproject(&c, binding->bones, binding->t);
        weld_attachment(&c, binding->bones, binding->t);
    }

    for (uint32_t v = 0; v < c.nv; ++v)
        for (int k = 0; k < 3; ++k)
            binding->scale_vectors[3 * (size_t)v + k] =
                c.positions[3 * (size_t)v + k] - c.attach[3 * (size_t)v + k];

    /* max_distance: the distance from each vertex to its chosen bone's
     * segment (<= |s|, equal without smoothing). */
    if (params->max_distance > 0.0f) {
        double limit = params->max_distance;
        for (uint32_t v = 0; v < c.nv; ++v) {
            const float *x = c.positions + 3 * (size_t)v;
            float t;
            double len = sqrt((double)segment_project(&c.segments[binding->bones[v]], x, &t));
            if (len <= limit) continue;
            uint32_t mesh, local;
            locate_row(rig, v, &mesh, &local);
            int32_t near = nearest_of(c.segments, c.usable, c.usable_count, x, &t);
            double near_len = sqrt((double)segment_project(&c.segments[near], x, &t));
            s = ssk_error_set(err, SSK_ERROR_BIND,
                              "binding: mesh '%s' vertex %u (row %u) is %g from its bone "
                              "'%s', farther than max_distance %g (nearest bone '%s' at %g)",
                              rig->meshes[mesh].name, (unsigned)local, (unsigned)v, len,
                              rig->bones[binding->bones[v]].name, limit,
                              rig->bones[near].name, near_len);
            goto fail;
        }
    }

    /* Centers of rotation (Le & Hodgins 2016), stored with the binding. */
    if (params->compute_cor) {
        const double cor_start = ssk_time_seconds();
        if (!ssk_binding_alloc_cor(binding)) {
            s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                              "binding: cannot allocate the centers of rotation of %u vertices",
                              (unsigned)c.nv);
            goto fail;
        }
        s = ssk_cor_precompute(binding->cor_centers, binding->cor_flags, rig, &params->cor,
                               SSK_BACKEND_CPU, NULL, NULL, err);
        if (s != SSK_OK) goto fail;
        binding->cor_seconds = ssk_time_seconds() - cor_start;
    }

    /* Implicit skinning's fields and tracking data (Vaillant 2015, 4.4),
     * stored with the binding, with the deformer's (default) parameters. */
    if (params->compute_implicit) {
        const double implicit_start = ssk_time_seconds();
        binding->implicit = calloc(1, sizeof *binding->implicit);
        if (!binding->implicit) {
            s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                              "binding: cannot allocate the implicit fit");
            goto fail;
        }
        ssk_implicit_fit_params_default(&binding->implicit_params);
        s = ssk_implicit_fit_create(binding->implicit, rig, &binding->implicit_params, err);
        if (s != SSK_OK) goto fail;
        binding->implicit_version = SSK_IMPLICIT_FIT_VERSION;
        binding->implicit_seconds = ssk_time_seconds() - implicit_start;
    }

    s = ssk_rig_hash_checked(rig, &binding->rig_hash, err);
    if (s != SSK_OK) goto fail;
    binding->params = *params;
    binding->params.compute_implicit = params->compute_implicit ? 1 : 0;
    binding->params.method = c.method;
    binding->params.compute_cor = params->compute_cor ? 1 : 0;
    if (!params->compute_cor) ssk_cor_params_default(&binding->params.cor);
    binding->params.cor.progress = NULL; /* the caller's, for this call only */
    binding->params.cor.progress_user = NULL;
    binding->seconds = ssk_time_seconds() - start;
    ctx_free(&c);
    *out = binding;
    return ssk_error_ok(err);
fail:
    ssk_binding_destroy(binding);
    ctx_free(&c);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Report.                                                                   */
/* ------------------------------------------------------------------------ */

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Point of bone b's segment closest to x (rig space). */
static void closest_on_bone(double dst[3], const ssk_bone *bone, const double x[3])
{
    double d[3], w[3], dd = 0.0, wd = 0.0;
    for (int k = 0; k < 3; ++k) {
        d[k] = (double)bone->tail[k] - bone->head[k];
        w[k] = x[k] - bone->head[k];
        dd += d[k] * d[k];
        wd += w[k] * d[k];
    }
    double t = dd > 0.0 ? wd / dd : 0.0;
    t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
    for (int k = 0; k < 3; ++k) dst[k] = bone->head[k] + t * d[k];
}

/* The artifact-risk fields of ssk_binding_report (see springskin.h); false
 * when out of memory. */
static bool artifact_risks(ssk_binding_report *out, const ssk_binding *binding,
                           const ssk_rig *rig)
{
    const uint32_t nb = rig->bone_count, nv = rig->vertex_count;
    const ssk_weld *weld = &rig->weld;
    uint8_t *weights_some = calloc((size_t)nb + 1, 1);
    uint64_t *pairs = malloc(((size_t)nv + 1) * sizeof *pairs);
    if (!weights_some || !pairs) {
        free(weights_some);
        free(pairs);
        return false;
    }
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t b = 0; b < nb; ++b)
        for (int k = 0; k < 3; ++k) {
            lo[k] = fmin(lo[k], fmin(rig->bones[b].head[k], rig->bones[b].tail[k]));
            hi[k] = fmax(hi[k], fmax(rig->bones[b].head[k], rig->bones[b].tail[k]));
        }
    double size = nb ? sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                            (hi[2] - lo[2]) * (hi[2] - lo[2]))
                     : 0.0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (size_t i = 0; i < (size_t)mesh->vertex_count * mesh->influence_count; ++i)
            if (mesh->weights[i] > 0.0f) weights_some[mesh->bone_indices[i]] = 1;
    }
    uint32_t unrelated = 0, weak = 0, far = 0, npairs = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const uint32_t k = mesh->influence_count;
        for (uint32_t v = 0; v < mesh->vertex_count; ++v) {
            const uint32_t row = mesh->first_vertex + v;
            const int32_t b = binding->bones[row];
            const ssk_bone *bone = &rig->bones[b];
            double len = 0.0;
            for (int c = 0; c < 3; ++c)
                len += ((double)bone->tail[c] - bone->head[c]) * ((double)bone->tail[c] - bone->head[c]);
            if (!weights_some[b] || sqrt(len) < SSK_BIND_SHORT_BONE_FRACTION * size) weak++;
            /* a neighbor on a bone that is not b, its parent or its child */
            int32_t other_bone = -1;
            for (uint32_t e = weld->adjacency_offsets[row]; e < weld->adjacency_offsets[row + 1];
                 ++e) {
                const int32_t o = binding->bones[weld->adjacency[e]];
                if (o != b && rig->bones[b].parent != o && rig->bones[o].parent != b) {
                    other_bone = o;
                    break;
                }
            }
            if (other_bone >= 0) {
                uint64_t lo_b = (uint64_t)(b < other_bone ? b : other_bone);
                uint64_t hi_b = (uint64_t)(b < other_bone ? other_bone : b);
                pairs[npairs++] = lo_b << 32 | hi_b;
                unrelated++;
            }
            /* attachment vs the weights' center */
            double x[3], a[3], c[3] = {0.0, 0.0, 0.0}, wsum = 0.0;
            float xf[3];
            ssk_mat4_transform_point(xf, mesh->object_matrix, mesh->positions + 3 * (size_t)v);
            for (int q = 0; q < 3; ++q) {
                x[q] = xf[q];
                a[q] = x[q] - binding->scale_vectors[3 * (size_t)row + q];
            }
            for (uint32_t i = 0; i < k; ++i) {
                const float w = mesh->weights[(size_t)v * k + i];
                if (!(w > 0.0f)) continue;
                double p[3];
                closest_on_bone(p, &rig->bones[mesh->bone_indices[(size_t)v * k + i]], x);
                for (int q = 0; q < 3; ++q) c[q] += w * p[q];
                wsum += w;
            }
            if (wsum > 0.0) {
                double d2 = 0.0, s2 = 0.0;
                for (int q = 0; q < 3; ++q) {
                    d2 += (a[q] - c[q] / wsum) * (a[q] - c[q] / wsum);
                    s2 += (x[q] - a[q]) * (x[q] - a[q]);
                }
                far += d2 > s2;
            }
        }
    }
    /* the most frequent unrelated pair */
    qsort(pairs, npairs, sizeof *pairs, compare_u64);
    uint32_t best = 0;
    out->unrelated_bones[0] = out->unrelated_bones[1] = -1;
    for (uint32_t i = 0; i < npairs;) {
        uint32_t j = i;
        while (j < npairs && pairs[j] == pairs[i]) ++j;
        if (j - i > best) {
            best = j - i;
            out->unrelated_bones[0] = (int32_t)(pairs[i] >> 32);
            out->unrelated_bones[1] = (int32_t)(pairs[i] & 0xffffffffu);
        }
        i = j;
    }
    out->unrelated_neighbor_vertices = unrelated;
    out->unrelated_pair_vertices = best;
    out->weak_bone_vertices = weak;
    out->far_from_weights_vertices = far;
    free(weights_some);
    free(pairs);
    return true;
}

/* The report's sums over the rows of one mesh, per chunk (summed in
 * chunk order by ssk_binding_report_compute). */
typedef struct report_part {
    double sum, max_len, max_gap2;
    uint64_t off;
} report_part;

typedef struct report_job {
    const ssk_binding *binding;
    const ssk_rig *rig;
    const ssk_mesh *mesh;
    report_part *parts;
} report_job;

static void report_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const report_job *j = ctx;
    const ssk_binding *binding = j->binding;
    const ssk_rig *rig = j->rig;
    const ssk_mesh *mesh = j->mesh;
    const size_t base = mesh->first_vertex;
    const uint32_t k = mesh->influence_count;
    double msum = 0.0, mmax = 0.0, mgap2 = 0.0;
    uint64_t moff = 0;
    for (int64_t v = begin; v < end; ++v) {
        size_t row = base + (size_t)v;
        const float *sv = binding->scale_vectors + 3 * row;
        double len = sqrt((double)sv[0] * sv[0] + (double)sv[1] * sv[1] +
                          (double)sv[2] * sv[2]);
        msum += len;
        if (len > mmax) mmax = len;
        int32_t best = -1;
        float best_w = 0.0f;
        for (uint32_t i = 0; i < k; ++i) {
            float w = mesh->weights[(size_t)v * k + i];
            if (w > best_w) {
                best_w = w;
                best = mesh->bone_indices[(size_t)v * k + i];
            }
        }
        if (best >= 0 && best != binding->bones[row]) moff++;
        const ssk_bone *bv = &rig->bones[binding->bones[row]];
        double tv = binding->t[row];
        /* Neighbors on the welded adjacency, as the smoothing sees them
         * (across UV seams and shared mesh borders). */
        const ssk_weld *weld = &rig->weld;
        for (uint32_t i = weld->adjacency_offsets[row]; i < weld->adjacency_offsets[row + 1];
             ++i) {
            size_t other = weld->adjacency[i];
            const ssk_bone *bo = &rig->bones[binding->bones[other]];
            double to = binding->t[other], g2 = 0.0;
            for (int c = 0; c < 3; ++c) {
                double av = bv->head[c] + tv * ((double)bv->tail[c] - bv->head[c]);
                double ao = bo->head[c] + to * ((double)bo->tail[c] - bo->head[c]);
                g2 += (av - ao) * (av - ao);
            }
            if (g2 > mgap2) mgap2 = g2;
        }
    }
    j->parts[chunk] = (report_part){msum, mmax, mgap2, moff};
}

ssk_status ssk_binding_report_compute(ssk_binding_report *out, const ssk_binding *binding,
                                      const ssk_rig *rig, ssk_error *err)
{
    if (!out || !binding || !rig)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_binding_report_compute: NULL %s",
                             !out ? "output" : (!binding ? "binding" : "rig"));
    uint64_t rig_h = 0;
    ssk_status s = ssk_rig_hash_checked(rig, &rig_h, err);
    if (s != SSK_OK) return s;
    if (binding->vertex_count != rig->vertex_count || binding->bone_count != rig->bone_count ||
        binding->rig_hash != rig_h)
        return ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                             "binding report: the binding (%u vertices, %u bones) was made "
                             "for another rig (%u vertices, %u bones%s)",
                             (unsigned)binding->vertex_count, (unsigned)binding->bone_count,
                             (unsigned)rig->vertex_count, (unsigned)rig->bone_count,
                             binding->vertex_count == rig->vertex_count &&
                                     binding->bone_count == rig->bone_count
                                 ? ", different rig hash"
                                 : "");
    double sum = 0.0, max_len = 0.0, max_gap2 = 0.0;
    uint64_t off = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const uint32_t chunks =
            ssk_parallel_chunk_count(mesh->vertex_count, SSK_BIND_PARALLEL_MIN_VERTICES);
        report_job j = {binding, rig, mesh, calloc((size_t)chunks + 1, sizeof(report_part))};
        if (!j.parts)
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                 "binding report: out of memory");
        ssk_parallel_for(mesh->vertex_count, SSK_BIND_PARALLEL_MIN_VERTICES, report_chunk, &j);
        for (uint32_t c = 0; c < chunks; ++c) {
            sum += j.parts[c].sum;
            if (j.parts[c].max_len > max_len) max_len = j.parts[c].max_len;
            if (j.parts[c].max_gap2 > max_gap2) max_gap2 = j.parts[c].max_gap2;
            off += j.parts[c].off;
        }
        free(j.parts);
    }
    uint32_t nv = rig->vertex_count;
    out->mean_scale_length = nv ? sum / nv : 0.0;
    out->max_scale_length = max_len;
    out->max_attachment_gap = sqrt(max_gap2);
    out->off_weight_share = nv ? (double)off / nv : 0.0;
    if (!artifact_risks(out, binding, rig))
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "binding report: out of memory for %u vertices", (unsigned)nv);
    return ssk_error_ok(err);
}
