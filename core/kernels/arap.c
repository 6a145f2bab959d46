/*
 * arap.c — as-rigid-as-possible deformation of the scale vectors
 * (Toothman 2020, 4.1.1, Eq. 19-20), the dissertation's global-solve
 * comparison for IRS and the springs (issue #16). springskin.h gives the
 * energy; this file builds and factorizes its system and solves it per
 * frame.
 *
 * Unknowns: one scale vector per welded group (the representative of
 * core/model/weld.c), so a UV seam is no boundary and coincident vertices
 * stay together; the other members take their representative's position.
 * For representative i with welded neighbors N(i) (weld.c's adjacency,
 * symmetric between representatives):
 *   (deg_i + lambda deg_i) s'_i - sum_{j in N(i)} s'_j
 *     = sum_{j in N(i)} 1/2 (R_i + R_j)(s_i - s_j) + lambda deg_i R_i s_i,
 * the normal equations of Eq. 19's energy (w_ij = 1) plus the pull
 * lambda deg_i |s'_i - R_i s_i|^2 toward rigid skinning that makes L +
 * lambda D positive definite (Eq. 20 is singular without it: s' + c solves
 * it for any constant c). The pull is per unit of degree so lambda means
 * the same on any mesh. R_i is the posed rotation of vertex i's binding
 * bone, s_i its bind scale vector (the binding), a'_i its posed attachment
 * point: v'_i = a'_i + s'_i.
 *
 * Why CHOLMOD: the matrix is sparse, symmetric positive definite and the
 * same for every frame, so one sparse Cholesky factorization with a
 * fill-reducing order (CHOLMOD's default analysis: AMD/METIS) makes each
 * frame three forward/back substitutions; the project takes a Debian
 * library for what is not a deformer (libsuitesparse-dev), as the
 * dissertation's own implementation did (SuiteSparse through Eigen).
 */
#include "model/internal.h"

#include "kernels/attach_math.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cholmod.h>

#define SSK_ARAP_DEFAULT_REGULARIZATION 1e-3f

struct ssk_arap {
    uint32_t vertex_count;  /* #V */
    uint32_t unknown_count; /* n: welded groups */
    uint32_t *unknown_of;   /* #V: the unknown of vertex v (its representative's) */
    uint32_t *row_of;       /* n: the representative's row */
    uint32_t *offsets;      /* n + 1: CSR over unknowns */
    uint32_t *neighbors;    /* unknowns */
    int32_t *bones;         /* #V: binding bone */
    float *t;               /* #V */
    float *s;               /* #V by 3: bind scale vectors */
    float lambda;
    cholmod_common common;
    int started;
    cholmod_factor *factor;
    cholmod_dense *rhs;     /* n by 3, column-major */
};

void ssk_arap_params_default(ssk_arap_params *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->regularization = SSK_ARAP_DEFAULT_REGULARIZATION;
}

void ssk_arap_destroy(ssk_arap *a)
{
    if (!a) return;
    if (a->started) {
        cholmod_free_factor(&a->factor, &a->common);
        cholmod_free_dense(&a->rhs, &a->common);
        cholmod_finish(&a->common);
    }
    free(a->unknown_of);
    free(a->row_of);
    free(a->offsets);
    free(a->neighbors);
    free(a->bones);
    free(a->t);
    free(a->s);
    free(a);
}

ssk_status ssk_arap_create(ssk_arap **out, const ssk_rig *rig, const ssk_binding *binding,
                           const ssk_arap_params *params, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !rig || !binding || !params)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_arap_create: NULL argument");
    if (!(isfinite(params->regularization) && params->regularization > 0.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "arap parameters: regularization = %g must be finite and > 0",
                             (double)params->regularization);
    ssk_binding_view bv;
    ssk_status st = ssk_binding_get(binding, &bv, err);
    if (st != SSK_OK) return st;
    const uint32_t nv = rig->vertex_count;
    if (bv.vertex_count != nv || bv.bone_count != rig->bone_count ||
        bv.rig_hash != ssk_rig_hash(rig))
        return ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                             "arap: the binding (%u vertices, %u bones) was not made for this "
                             "rig (%u vertices, %u bones)",
                             bv.vertex_count, bv.bone_count, nv, rig->bone_count);
    ssk_arap *a = calloc(1, sizeof *a);
    if (!a) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    a->vertex_count = nv;
    a->lambda = params->regularization;
    const ssk_weld *weld = &rig->weld;
    a->unknown_of = malloc(((size_t)nv + 1) * sizeof *a->unknown_of);
    a->row_of = malloc(((size_t)nv + 1) * sizeof *a->row_of);
    a->bones = malloc(((size_t)nv + 1) * sizeof *a->bones);
    a->t = malloc(((size_t)nv + 1) * sizeof *a->t);
    a->s = malloc((3 * (size_t)nv + 1) * sizeof *a->s);
    a->offsets = malloc(((size_t)nv + 2) * sizeof *a->offsets);
    if (!a->unknown_of || !a->row_of || !a->bones || !a->t || !a->s || !a->offsets) goto oom;
    memcpy(a->bones, bv.bones, (size_t)nv * sizeof *a->bones);
    memcpy(a->t, bv.t, (size_t)nv * sizeof *a->t);
    memcpy(a->s, bv.scale_vectors, 3 * (size_t)nv * sizeof *a->s);
    /* unknowns: the representatives, in row order */
    uint32_t n = 0;
    for (uint32_t v = 0; v < nv; ++v)
        if (weld->point[v] == v) {
            a->unknown_of[v] = n;
            a->row_of[n++] = v;
        }
    for (uint32_t v = 0; v < nv; ++v) a->unknown_of[v] = a->unknown_of[weld->point[v]];
    a->unknown_count = n;
    size_t edges = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t v = a->row_of[i];
        edges += weld->adjacency_offsets[v + 1] - weld->adjacency_offsets[v];
    }
    a->neighbors = malloc((edges + 1) * sizeof *a->neighbors);
    if (!a->neighbors) goto oom;
    edges = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t v = a->row_of[i];
        a->offsets[i] = (uint32_t)edges;
        for (uint32_t k = weld->adjacency_offsets[v]; k < weld->adjacency_offsets[v + 1]; ++k)
            a->neighbors[edges++] = a->unknown_of[weld->adjacency[k]];
    }
    a->offsets[n] = (uint32_t)edges;

    /* L + lambda D, upper triangle (stype 1) */
    cholmod_start(&a->common);
    a->started = 1;
    a->common.print = 0;
    cholmod_triplet *T =
        cholmod_allocate_triplet(n, n, (size_t)n + edges, 1, CHOLMOD_REAL, &a->common);
    if (!T) goto oom;
    int *ti = T->i, *tj = T->j;
    double *tx = T->x;
    size_t nz = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const double deg = (double)(a->offsets[i + 1] - a->offsets[i]);
        ti[nz] = (int)i;
        tj[nz] = (int)i;
        tx[nz++] = deg > 0.0 ? deg * (1.0 + (double)a->lambda) : 1.0;
        for (uint32_t k = a->offsets[i]; k < a->offsets[i + 1]; ++k) {
            const uint32_t j = a->neighbors[k];
            if (j <= i) continue; /* the upper triangle; (j, i) is in j's row */
            ti[nz] = (int)i;
            tj[nz] = (int)j;
            tx[nz++] = -1.0;
        }
    }
    T->nnz = nz;
    cholmod_sparse *A = cholmod_triplet_to_sparse(T, nz, &a->common);
    cholmod_free_triplet(&T, &a->common);
    if (!A) goto oom;
    a->factor = cholmod_analyze(A, &a->common);
    const int factored = a->factor && cholmod_factorize(A, a->factor, &a->common);
    cholmod_free_sparse(&A, &a->common);
    if (!factored || a->common.status != CHOLMOD_OK || a->factor->minor < n) {
        const int status = a->common.status;
        ssk_arap_destroy(a);
        return ssk_error_set(err, SSK_ERROR_BIND,
                             "arap: the sparse Cholesky factorization of %u unknowns failed "
                             "(CHOLMOD status %d)",
                             n, status);
    }
    a->rhs = cholmod_allocate_dense(n, 3, n, CHOLMOD_REAL, &a->common);
    if (!a->rhs) goto oom;
    *out = a;
    return ssk_error_ok(err);
oom:
    ssk_arap_destroy(a);
    return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* One frame's loops (the right-hand side, then the positions). */
typedef struct arap_job {
    const ssk_arap *a;
    const ssk_attach_bone *bones;
    float *dst;
    const double *xs;
    atomic_int nonfinite;
} arap_job;

/* b_i = sum_j 1/2 (R_i + R_j)(s_i - s_j) + lambda deg_i R_i s_i */
static void rhs_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    arap_job *j = ctx;
    (void)chunk;
    const ssk_arap *a = j->a;
    const ssk_attach_bone *bones = j->bones;
    const uint32_t n = a->unknown_count;
    double *b = a->rhs->x;
    for (int64_t ii = begin; ii < end; ++ii) {
        const uint32_t i = (uint32_t)ii, vi = a->row_of[i];
        const float *qi = bones[a->bones[vi]].rotation, *si = a->s + 3 * (size_t)vi;
        double acc[3] = {0.0, 0.0, 0.0};
        for (uint32_t k = a->offsets[i]; k < a->offsets[i + 1]; ++k) {
            const uint32_t vj = a->row_of[a->neighbors[k]];
            const float *sj = a->s + 3 * (size_t)vj;
            const float d[3] = {si[0] - sj[0], si[1] - sj[1], si[2] - sj[2]};
            float ri[3], rj[3];
            ssk_am_rotate(ri, qi, d);
            ssk_am_rotate(rj, bones[a->bones[vj]].rotation, d);
            for (int c = 0; c < 3; ++c) acc[c] += 0.5 * ((double)ri[c] + rj[c]);
        }
        float rs[3];
        ssk_am_rotate(rs, qi, si);
        const double pull = (double)a->lambda * (double)(a->offsets[i + 1] - a->offsets[i]);
        for (int c = 0; c < 3; ++c)
            b[(size_t)c * n + i] = acc[c] + (pull > 0.0 ? pull : 1.0) * rs[c];
    }
}

static void positions_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    arap_job *j = ctx;
    (void)chunk;
    const ssk_arap *a = j->a;
    const uint32_t n = a->unknown_count;
    bool finite = true;
    for (int64_t v = begin; v < end; ++v) {
        const uint32_t u = a->unknown_of[v], r = a->row_of[u];
        float ap[3];
        ssk_am_attachment(ap, &j->bones[a->bones[r]], a->t[r]);
        for (int c = 0; c < 3; ++c) {
            j->dst[3 * v + c] = (float)(ap[c] + j->xs[(size_t)c * n + u]);
            finite = finite && isfinite(j->dst[3 * v + c]);
        }
    }
    if (!finite) atomic_store_explicit(&j->nonfinite, 1, memory_order_relaxed);
}

ssk_status ssk_arap_deform(ssk_arap *a, float *dst, const ssk_attach_bone *bones,
                           ssk_error *err)
{
    if (!a || !dst || !bones)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_arap_deform: NULL argument");
    arap_job j = {.a = a, .bones = bones, .dst = dst};
    atomic_init(&j.nonfinite, 0);
    ssk_parallel_for(a->unknown_count, SSK_PARALLEL_GRAIN, rhs_chunk, &j);
    cholmod_dense *x = cholmod_solve(CHOLMOD_A, a->factor, a->rhs, &a->common);
    if (!x) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "arap: the solve failed");
    j.xs = x->x;
    ssk_parallel_for(a->vertex_count, SSK_PARALLEL_GRAIN, positions_chunk, &j);
    cholmod_free_dense(&x, &a->common);
    if (atomic_load(&j.nonfinite))
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "arap: a non-finite position (the posed bones are not finite)");
    return ssk_error_ok(err);
}
