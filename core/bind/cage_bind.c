/*
 * cage_bind.c — a rig's cage binding and its rest reshape (coupled cages
 * and skeletons, Corda et al. 2020, 003_3bdce6713f645d88.txt, sections 3,
 * 4.1 and 4.2; issue #21; bind/cage.h: ssk_cage_binding_create,
 * ssk_cage_binding_free, ssk_cage_binding_reshape).
 *
 * What the binding holds, all in rig space, double precision:
 * - phi (#V by c): the mean value coordinates (ssk_cage_mvc) of every rig
 *   vertex at rest (each mesh's object-space positions through its object
 *   matrix) with respect to the cage: M = Phi C (Eq. 7);
 * - psi (#B by c): the cage coordinates of every joint (joint b = bone b's
 *   rest head), Eq. 10-12 (ssk_cage_joint_coordinates): the maximum-entropy
 *   coordinates of the joint with the prior masses sum_i mvc_ji L_ji phi_i,
 *   L the joint localization of Eq. 9 (s = SSK_CAGE_LOCALIZATION_EXPONENT)
 *   from the dense skin weights (#V by #B, built from every mesh's
 *   bone_indices / weights; repeated indices add up, out-of-range ones are
 *   skipped), so A = Psi C (Eq. 12-13);
 * - the cage updater of 4.1 over phi (ssk_cage_up_create).
 *
 * The joints' mvc_ji of Eq. 10 ("the mean value coordinates of joint j
 * with respect to the rest mesh"):
 * - the rest mesh is the rig's welded rest surface: one vertex per weld
 *   group (its representative, rig->weld.point[v] == v), every mesh's
 *   triangles mapped through weld.point, the ones that become degenerate
 *   (a repeated corner, or twice the area below MESH_DEGENERATE_AREA times
 *   the squared bounding-box diagonal) dropped; the columns of the other
 *   (non-representative) vertices are 0, so a weld group counts once;
 * - when ssk_cage_mvc accepts that surface (closed and consistently
 *   oriented), mvc_ji are its mean value coordinates and
 *   joints_from_mesh_mvc = 1;
 * - when it refuses it (open meshes are common: BCN_Epileptic.X has
 *   boundary edges; so are non-manifold welds), a DOCUMENTED STAND-IN, not
 *   the paper's: inverse-square distance weights over the representatives,
 *   mvc_ji = |v_i - a_j|^-2 / sum_k |v_k - a_j|^-2 (positive, summing to 1,
 *   largest at the vertices nearest the joint, as mean value coordinates
 *   are inside a mesh; they lack linear precision, which Eq. 10 does not
 *   need: they only weigh the prior of Eq. 11, whose constraints restore
 *   the joint exactly); a joint on a vertex (closer than
 *   MESH_VERTEX_EPSILON times the diagonal) gets that vertex's identity
 *   row, the limit; joints_from_mesh_mvc = 0.
 *
 * Threads (model/parallel.h): ssk_cage_mvc runs its points in parallel;
 * the stand-in's rows, the joints' maximum-entropy solves and the reshape's
 * rows are parallel loops whose every row is written by one chunk from
 * the same inputs in the same order, so the results do not depend on the
 * thread count.
 */
#include "bind/cage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Twice a welded mesh triangle's area below this, relative to the squared
 * bounding-box diagonal of the rest surface: dropped as degenerate (the
 * threshold ssk_cage_mvc refuses a cage triangle at). */
#define MESH_DEGENERATE_AREA 1e-14
/* A joint closer than this to a rest-surface vertex, relative to the
 * diagonal, is on that vertex (the stand-in's identity row). */
#define MESH_VERTEX_EPSILON 1e-12
/* Rows per chunk: the stand-in's joints (#V distances each), the joints'
 * maximum-entropy solves (one each, ~#V c flops for the prior), the
 * reshape's vertices (c multiply-adds by 3 each). */
#define JOINT_GRAIN 1
#define RESHAPE_GRAIN 1024

/* ------------------------------------------------------------------------ */
/* Rest data of the rig                                                      */
/* ------------------------------------------------------------------------ */

/* rest (#V by 3) gets every rig vertex in rig space (the object matrix,
 * row-major, applied in double). */
static void rig_rest_positions(double *rest, const ssk_rig *rig)
{
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const float *o = mesh->object_matrix;
        for (uint32_t i = 0; i < mesh->vertex_count; ++i) {
            const float *p = mesh->positions + 3 * (size_t)i;
            double *dst = rest + 3 * ((size_t)mesh->first_vertex + i);
            for (int r = 0; r < 3; ++r)
                dst[r] = (double)o[4 * r] * p[0] + (double)o[4 * r + 1] * p[1] +
                         (double)o[4 * r + 2] * p[2] + (double)o[4 * r + 3];
        }
    }
}

/* weights (#V by #B, zeroed by the caller) gets the dense skin weights. */
static void rig_dense_weights(double *weights, const ssk_rig *rig)
{
    const uint32_t nb = rig->bone_count;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const uint32_t k = mesh->influence_count;
        if (!mesh->bone_indices || !mesh->weights) continue;
        for (uint32_t i = 0; i < mesh->vertex_count; ++i) {
            double *row = weights + ((size_t)mesh->first_vertex + i) * nb;
            for (uint32_t q = 0; q < k; ++q) {
                const int32_t b = mesh->bone_indices[(size_t)i * k + q];
                const float w = mesh->weights[(size_t)i * k + q];
                if (b < 0 || (uint32_t)b >= nb || !(w > 0.0f)) continue;
                row[b] += w;
            }
        }
    }
}

static uint32_t rig_representative(const ssk_rig *rig, uint32_t v)
{
    return rig->weld.point ? rig->weld.point[v] : v;
}

/* ------------------------------------------------------------------------ */
/* The joints' mvc_ji (Eq. 10)                                               */
/* ------------------------------------------------------------------------ */

/* The welded rest surface: rep (#V: compact index of v's representative),
 * verts (n by 3), tris (t by 3, compact indices), degenerate ones dropped. */
typedef struct rest_surface {
    uint32_t n, t;
    uint32_t *compact; /* #V: compact index of v's representative */
    uint32_t *index;   /* n: the rig vertex of compact index k */
    double *verts;     /* n by 3 */
    uint32_t *tris;    /* t by 3 */
    double size;       /* bounding-box diagonal */
} rest_surface;

static void rest_surface_free(rest_surface *s)
{
    free(s->compact);
    free(s->index);
    free(s->verts);
    free(s->tris);
    memset(s, 0, sizeof *s);
}

static ssk_status rest_surface_build(rest_surface *s, const ssk_rig *rig, const double *rest,
                                     ssk_error *err)
{
    memset(s, 0, sizeof *s);
    const uint32_t nv = rig->vertex_count;
    size_t tri_total = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) tri_total += rig->meshes[m].triangle_count;
    s->compact = malloc((size_t)nv * sizeof *s->compact);
    s->index = malloc((size_t)nv * sizeof *s->index);
    s->verts = malloc(3u * (size_t)nv * sizeof *s->verts);
    s->tris = malloc(3u * (tri_total ? tri_total : 1) * sizeof *s->tris);
    if (!s->compact || !s->index || !s->verts || !s->tris) {
        rest_surface_free(s);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "ssk_cage_binding_create: out of memory (rest surface)");
    }
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t v = 0; v < nv; ++v) {
        if (rig_representative(rig, v) != v) continue;
        s->compact[v] = s->n;
        s->index[s->n] = v;
        for (int a = 0; a < 3; ++a) {
            s->verts[3 * (size_t)s->n + a] = rest[3 * (size_t)v + a];
            lo[a] = fmin(lo[a], rest[3 * (size_t)v + a]);
            hi[a] = fmax(hi[a], rest[3 * (size_t)v + a]);
        }
        ++s->n;
    }
    for (uint32_t v = 0; v < nv; ++v) s->compact[v] = s->compact[rig_representative(rig, v)];
    s->size = s->n ? sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                          (hi[2] - lo[2]) * (hi[2] - lo[2]))
                   : 0.0;
    const double min_area2 = MESH_DEGENERATE_AREA * s->size * s->size;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t f = 0; f < mesh->triangle_count; ++f) {
            uint32_t k[3];
            bool valid = true;
            for (int c = 0; c < 3; ++c) {
                const int32_t local = mesh->triangles[3 * (size_t)f + c];
                if (local < 0 || (uint32_t)local >= mesh->vertex_count) valid = false;
                else k[c] = s->compact[mesh->first_vertex + (uint32_t)local];
            }
            if (!valid || k[0] == k[1] || k[1] == k[2] || k[0] == k[2]) continue;
            const double *p0 = s->verts + 3 * (size_t)k[0], *p1 = s->verts + 3 * (size_t)k[1],
                         *p2 = s->verts + 3 * (size_t)k[2];
            const double e1[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
            const double e2[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
            const double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                                 e1[0] * e2[1] - e1[1] * e2[0]};
            if (!(sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) >= min_area2)) continue;
            memcpy(s->tris + 3 * (size_t)s->t, k, sizeof k);
            ++s->t;
        }
    }
    return ssk_error_ok(err);
}

/* The stand-in for an open or non-manifold rest surface (see the file's
 * comment): one row of mvc (#V, zeroed) per joint. */
typedef struct standin_job {
    double *mvc;           /* #B by #V */
    const rest_surface *s;
    const double *joints;  /* #B by 3 */
    uint32_t vertex_count;
} standin_job;

static void standin_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const standin_job *j = ctx;
    const rest_surface *s = j->s;
    const double eps2 = (MESH_VERTEX_EPSILON * s->size) * (MESH_VERTEX_EPSILON * s->size);
    for (int64_t b = begin; b < end; ++b) {
        double *row = j->mvc + (size_t)b * j->vertex_count;
        const double *a = j->joints + 3 * b;
        double total = 0.0;
        int64_t on_vertex = -1;
        for (uint32_t k = 0; k < s->n && on_vertex < 0; ++k) {
            const double *v = s->verts + 3 * (size_t)k;
            const double d2 = (v[0] - a[0]) * (v[0] - a[0]) + (v[1] - a[1]) * (v[1] - a[1]) +
                              (v[2] - a[2]) * (v[2] - a[2]);
            if (d2 <= eps2) {
                on_vertex = k;
                break;
            }
            row[s->index[k]] = 1.0 / d2;
            total += row[s->index[k]];
        }
        if (on_vertex >= 0) {
            memset(row, 0, (size_t)j->vertex_count * sizeof *row);
            row[s->index[on_vertex]] = 1.0;
            continue;
        }
        const double inv = 1.0 / total;
        for (uint32_t k = 0; k < s->n; ++k) row[s->index[k]] *= inv;
    }
}

/* mvc (#B by #V, zeroed by the caller): the joints' mvc_ji; *from_mesh
 * whether they are mean value coordinates (1) or the stand-in (0). */
static ssk_status joint_mesh_mvc(double *mvc, int *from_mesh, const ssk_rig *rig,
                                 const double *rest, const double *joints, ssk_error *err)
{
    const uint32_t nv = rig->vertex_count, nb = rig->bone_count;
    rest_surface s;
    ssk_status st = rest_surface_build(&s, rig, rest, err);
    if (st != SSK_OK) return st;
    double *compact = malloc((size_t)nb * s.n * sizeof *compact);
    if (!compact) {
        rest_surface_free(&s);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "ssk_cage_binding_create: out of memory (joints' mvc)");
    }
    ssk_error inner = {0};
    st = ssk_cage_mvc(compact, joints, nb, s.verts, s.n, s.tris, s.t, &inner);
    if (st == SSK_OK) {
        *from_mesh = 1;
        for (uint32_t b = 0; b < nb; ++b)
            for (uint32_t k = 0; k < s.n; ++k)
                mvc[(size_t)b * nv + s.index[k]] = compact[(size_t)b * s.n + k];
        st = ssk_error_ok(err);
    } else if (st == SSK_ERROR_INVALID_ARGUMENT) {
        /* the rest surface is not a valid closed cage (open, non-manifold,
         * inconsistently oriented) or a joint cancels its weights: the
         * stand-in */
        *from_mesh = 0;
        standin_job job = {mvc, &s, joints, nv};
        ssk_parallel_for(nb, JOINT_GRAIN, standin_chunk, &job);
        st = ssk_error_ok(err);
    } else {
        st = ssk_error_set(err, st, "ssk_cage_binding_create: joints' mean value coordinates: %s",
                           inner.message);
    }
    free(compact);
    rest_surface_free(&s);
    return st;
}

/* ------------------------------------------------------------------------ */
/* The joints' cage coordinates, one joint per chunk                         */
/* ------------------------------------------------------------------------ */

typedef struct psi_job {
    double *psi;           /* #B by c */
    const double *joints;  /* #B by 3 */
    const double *mvc, *L; /* #B by #V */
    const double *phi;     /* #V by c */
    const double *cage;    /* c by 3 */
    uint32_t vertex_count, c;
    ssk_error *errors;     /* #B */
} psi_job;

static void psi_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const psi_job *j = ctx;
    for (int64_t b = begin; b < end; ++b)
        ssk_cage_joint_coordinates(j->psi + (size_t)b * j->c, j->joints + 3 * b, 1,
                                   j->mvc + (size_t)b * j->vertex_count,
                                   j->L + (size_t)b * j->vertex_count, j->vertex_count, j->phi,
                                   j->cage, j->c, &j->errors[b]);
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */
/* ------------------------------------------------------------------------ */

ssk_status ssk_cage_binding_create(ssk_cage_binding *out, const ssk_rig *rig,
                                   const double *cage_vertices, uint32_t cage_vertex_count,
                                   const uint32_t *cage_triangles, uint32_t cage_triangle_count,
                                   ssk_error *err)
{
    if (!out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_binding_create: NULL out");
    memset(out, 0, sizeof *out);
    if (!rig || !cage_vertices || !cage_triangles)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_binding_create: NULL %s",
                             !rig ? "rig" : !cage_vertices ? "cage_vertices" : "cage_triangles");
    const uint32_t nv = rig->vertex_count, nb = rig->bone_count, c = cage_vertex_count;
    if (nv == 0 || nb == 0)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_binding_create: the rig has %u vertices and %u bones "
                             "(a binding needs both)",
                             nv, nb);
    if (nv < c)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_binding_create: %u rig vertices cannot fit %u cage "
                             "vertices (the cage updater needs at least as many)",
                             nv, c);

    ssk_status st = SSK_OK;
    ssk_error inner = {0};
    double *rest = malloc(3u * (size_t)nv * sizeof *rest);
    double *joints = malloc(3u * (size_t)nb * sizeof *joints);
    double *weights = calloc((size_t)nv * nb, sizeof *weights);
    double *L = malloc((size_t)nb * nv * sizeof *L);
    double *mvc = calloc((size_t)nb * nv, sizeof *mvc);
    ssk_error *errors = calloc(nb, sizeof *errors);
    out->vertex_count = nv;
    out->cage_vertex_count = c;
    out->cage_triangle_count = cage_triangle_count;
    out->joint_count = nb;
    out->cage_rest = malloc(3u * (size_t)c * sizeof *out->cage_rest);
    out->cage_triangles = malloc(3u * (size_t)cage_triangle_count * sizeof *out->cage_triangles);
    out->phi = malloc((size_t)nv * c * sizeof *out->phi);
    out->psi = malloc((size_t)nb * c * sizeof *out->psi);
    if (!rest || !joints || !weights || !L || !mvc || !errors || !out->cage_rest ||
        (cage_triangle_count && !out->cage_triangles) || (c && (!out->phi || !out->psi))) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_binding_create: out of memory");
        goto done;
    }
    memcpy(out->cage_rest, cage_vertices, 3u * (size_t)c * sizeof *out->cage_rest);
    memcpy(out->cage_triangles, cage_triangles,
           3u * (size_t)cage_triangle_count * sizeof *out->cage_triangles);

    /* Eq. 7: phi of every rest vertex (ssk_cage_mvc validates the cage) */
    rig_rest_positions(rest, rig);
    st = ssk_cage_mvc(out->phi, rest, nv, cage_vertices, c, cage_triangles, cage_triangle_count,
                      &inner);
    if (st != SSK_OK) {
        st = ssk_error_set(err, st, "ssk_cage_binding_create: the rig's rest vertices: %s",
                           inner.message);
        goto done;
    }

    /* Eq. 9: the joint localization from the dense skin weights */
    rig_dense_weights(weights, rig);
    ssk_cage_joint_localization(L, weights, nv, nb, SSK_CAGE_LOCALIZATION_EXPONENT);

    /* Eq. 10's mvc_ji */
    for (uint32_t b = 0; b < nb; ++b)
        for (int a = 0; a < 3; ++a) joints[3 * (size_t)b + a] = rig->bones[b].head[a];
    for (uint32_t b = 0; b < nb; ++b)
        if (!isfinite(joints[3 * b]) || !isfinite(joints[3 * b + 1]) ||
            !isfinite(joints[3 * b + 2])) {
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "ssk_cage_binding_create: bone %u (%s): head not finite", b,
                               rig->bones[b].name ? rig->bones[b].name : "");
            goto done;
        }
    st = joint_mesh_mvc(mvc, &out->joints_from_mesh_mvc, rig, rest, joints, err);
    if (st != SSK_OK) goto done;

    /* Eq. 10-12: psi of every joint, one maximum-entropy solve each */
    psi_job job = {out->psi, joints, mvc, L, out->phi, cage_vertices, nv, c, errors};
    ssk_parallel_for(nb, JOINT_GRAIN, psi_chunk, &job);
    for (uint32_t b = 0; b < nb; ++b) /* the first failure, in bone order */
        if (errors[b].status != SSK_OK) {
            st = ssk_error_set(err, errors[b].status,
                               "ssk_cage_binding_create: bone %u (%s), head (%g, %g, %g): %s "
                               "(is the joint inside the cage?)",
                               b, rig->bones[b].name ? rig->bones[b].name : "", joints[3 * b],
                               joints[3 * b + 1], joints[3 * b + 2], errors[b].message);
            goto done;
        }

    /* 4.1: the cage updater over phi */
    st = ssk_cage_up_create(&out->up, out->phi, nv, c, &inner);
    if (st != SSK_OK) {
        st = ssk_error_set(err, st, "ssk_cage_binding_create: cage updater: %s", inner.message);
        goto done;
    }
    st = ssk_error_ok(err);
done:
    free(rest);
    free(joints);
    free(weights);
    free(L);
    free(mvc);
    free(errors);
    if (st != SSK_OK) ssk_cage_binding_free(out);
    return st;
}

void ssk_cage_binding_free(ssk_cage_binding *cb)
{
    if (!cb) return;
    free(cb->cage_rest);
    free(cb->cage_triangles);
    free(cb->phi);
    free(cb->psi);
    ssk_cage_up_free(&cb->up);
    memset(cb, 0, sizeof *cb);
}

/* ------------------------------------------------------------------------ */
/* Stored bindings (binding files' cage section)                             */
/* ------------------------------------------------------------------------ */

#define CAGE_KEY_TAG "SSKCAGE1"
#define CAGE_KEY_TAG_SIZE 8

static bool key_u32(XXH3_state_t *state, uint32_t v)
{
    unsigned char b[4];
    for (int k = 0; k < 4; ++k) b[k] = (unsigned char)((v >> (8 * k)) & 0xffu);
    return XXH3_64bits_update(state, b, sizeof b) == XXH_OK;
}

uint64_t ssk_cage_binding_key(const float *cage_vertices, uint32_t cage_vertex_count,
                              const uint32_t *cage_triangles, uint32_t cage_triangle_count)
{
    XXH3_state_t *state = XXH3_createState();
    if (!state) return 0;
    const double s = SSK_CAGE_LOCALIZATION_EXPONENT;
    uint64_t sbits;
    memcpy(&sbits, &s, sizeof sbits);
    bool ok = XXH3_64bits_reset(state) == XXH_OK &&
              XXH3_64bits_update(state, CAGE_KEY_TAG, CAGE_KEY_TAG_SIZE) == XXH_OK &&
              key_u32(state, SSK_CAGE_BIND_VERSION) && key_u32(state, (uint32_t)sbits) &&
              key_u32(state, (uint32_t)(sbits >> 32)) && key_u32(state, cage_vertex_count) &&
              key_u32(state, cage_triangle_count);
    for (size_t i = 0; ok && cage_vertices && i < 3 * (size_t)cage_vertex_count; ++i) {
        uint32_t bits;
        memcpy(&bits, &cage_vertices[i], sizeof bits);
        ok = key_u32(state, bits);
    }
    for (size_t i = 0; ok && cage_triangles && i < 3 * (size_t)cage_triangle_count; ++i)
        ok = key_u32(state, cage_triangles[i]);
    const uint64_t key = ok ? XXH3_64bits_digest(state) : 0;
    XXH3_freeState(state);
    return key;
}

ssk_status ssk_cage_binding_copy(ssk_cage_binding *out, const ssk_cage_binding *src,
                                 const double *cage_vertices, uint32_t cage_vertex_count,
                                 const uint32_t *cage_triangles, uint32_t cage_triangle_count,
                                 ssk_error *err)
{
    if (!out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_binding_copy: NULL out");
    memset(out, 0, sizeof *out);
    if (!src || !src->phi || !src->psi || !src->up.rows || (cage_vertices && !cage_triangles))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_binding_copy: NULL argument");
    const uint32_t nv = src->vertex_count, nb = src->joint_count, c = src->cage_vertex_count;
    if (cage_vertices && cage_vertex_count != c)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_binding_copy: a cage of %u vertices for a binding of %u",
                             cage_vertex_count, c);
    ssk_status st = SSK_OK;
    if (cage_vertices) {
        st = ssk_cage_check(cage_vertices, cage_vertex_count, cage_triangles,
                            cage_triangle_count, err);
        if (st != SSK_OK) return st;
    }
    out->vertex_count = nv;
    out->cage_vertex_count = c;
    out->joint_count = nb;
    out->joints_from_mesh_mvc = src->joints_from_mesh_mvc;
    out->phi = malloc(((size_t)nv * c + 1) * sizeof *out->phi);
    out->psi = malloc(((size_t)nb * c + 1) * sizeof *out->psi);
    if (!out->phi || !out->psi) goto oom;
    memcpy(out->phi, src->phi, (size_t)nv * c * sizeof *out->phi);
    memcpy(out->psi, src->psi, (size_t)nb * c * sizeof *out->psi);
    if (cage_vertices) {
        out->cage_triangle_count = cage_triangle_count;
        out->cage_rest = malloc((3 * (size_t)c + 1) * sizeof *out->cage_rest);
        out->cage_triangles =
            malloc((3 * (size_t)cage_triangle_count + 1) * sizeof *out->cage_triangles);
        if (!out->cage_rest || !out->cage_triangles) goto oom;
        memcpy(out->cage_rest, cage_vertices, 3 * (size_t)c * sizeof *out->cage_rest);
        memcpy(out->cage_triangles, cage_triangles,
               3 * (size_t)cage_triangle_count * sizeof *out->cage_triangles);
        ssk_error inner = {0};
        st = ssk_cage_up_create_rows(&out->up, out->phi, nv, c, src->up.rows, &inner);
        if (st != SSK_OK) {
            st = ssk_error_set(err, st, "ssk_cage_binding_copy: cage updater: %s", inner.message);
            ssk_cage_binding_free(out);
            return st;
        }
    } else {
        out->up.c = c;
        out->up.rows = malloc(((size_t)c + 1) * sizeof *out->up.rows);
        if (!out->up.rows) goto oom;
        memcpy(out->up.rows, src->up.rows, (size_t)c * sizeof *out->up.rows);
    }
    return ssk_error_ok(err);
oom:
    ssk_cage_binding_free(out);
    return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_binding_copy: out of memory");
}

/* rows [begin, end) of dst (by 3, float) = coords (by c) times cage (c by 3) */
typedef struct reshape_job {
    float *dst;
    const double *coords, *cage;
    uint32_t c;
} reshape_job;

static void reshape_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const reshape_job *j = ctx;
    for (int64_t i = begin; i < end; ++i) {
        const double *row = j->coords + (size_t)i * j->c;
        double p[3] = {0.0, 0.0, 0.0};
        for (uint32_t k = 0; k < j->c; ++k)
            for (int a = 0; a < 3; ++a) p[a] += row[k] * j->cage[3 * (size_t)k + a];
        for (int a = 0; a < 3; ++a) j->dst[3 * i + a] = (float)p[a];
    }
}

void ssk_cage_binding_reshape(const ssk_cage_binding *cb, const double *cage, float *positions,
                              float *heads)
{
    if (!cb || !cage) return;
    if (positions && cb->phi) {
        reshape_job job = {positions, cb->phi, cage, cb->cage_vertex_count};
        ssk_parallel_for(cb->vertex_count, RESHAPE_GRAIN, reshape_chunk, &job);
    }
    if (heads && cb->psi) {
        reshape_job job = {heads, cb->psi, cage, cb->cage_vertex_count};
        reshape_chunk(&job, 0, cb->joint_count, 0);
    }
}
