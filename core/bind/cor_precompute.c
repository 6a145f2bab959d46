/*
 * cor_precompute.c — centers of rotation of skinning with optimized
 * centers of rotation (Le & Hodgins 2016, sec. 3.1-3.2, Eq. 1, 3c, 4):
 *   p*_i = sum_t s(w_i, w_t) c_t a_t / sum_t s(w_i, w_t) a_t
 * over the triangles t of the integration mesh, with Eq. 1's similarity
 *   s(w_p, w_v) = sum_{j != k} w_pj w_pk w_vj w_vk
 *                 exp(-(w_pj w_vk - w_pk w_vj)^2 / sigma^2).
 *
 * Integration mesh (sec. 3.2, "Discretization"): every input triangle is
 * split on its own, recursively, by bisecting its edge of largest l2
 * weight distance (the first of ab, bc, ca on ties) at the midpoint (the
 * weights there are the mean of the edge's ends), until every edge's
 * weight distance is below epsilon. Each leaf carries its centroid, its
 * area and the mean of its three corner weights (w_t of Eq. 4). The
 * leaves of a triangle need not match those of its neighbors: they are
 * only summed, never connected. The output mesh is not changed.
 *
 * Integration (sec. 3.2, "Integration"), per vertex p with two or more
 * bones: Eq. 4's two sums over every leaf of the mesh, per bone pair over
 * cells of weight space (cor_cells.c says why that is the same sum within
 * 1e-4 of the diagonal, and measured 1e-6 against a brute force over every
 * leaf of BCN_Epileptic.X, tests/c/test_cor.c). A vertex's cost is the
 * occupied cells of its bone pairs, which does not grow with the mesh:
 * the whole precomputation is linear in the leaves and the vertices
 * (issue #18: the breadth-first search this replaced visited every
 * triangle of a joint region from every vertex of it, about n^1.9 on a
 * subdivided body, and stopped at a similarity cutoff that moved some
 * centers 2% of the diagonal from Eq. 4 on BCN_Epileptic.X). A vertex
 * whose denominator is zero (one bone, or no leaf weighting two of its
 * bones) has no CoR: flag 0, its own position as center. The result
 * depends on the vertex only through its weights, so vertices with
 * bit-identical weights share one computation. Vertices run in parallel
 * (chunks of 16 claimed one by one); each vertex's sums run in a fixed
 * order, so the result does not depend on the thread count.
 */
#include "kernels/cor_internal.h"
#include "backends/gl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <xxhash.h>

/* Chunk of the per-vertex integration (model/parallel.h: chunks are
 * claimed one by one, so the slow vertices balance out). */
#define COR_SCHEDULE_CHUNK 16
/* Chunk of the per-triangle subdivision and of the per-vertex loops. */
#define COR_TRIANGLE_CHUNK 256
#define COR_VERTEX_CHUNK 1024

void ssk_cor_mesh_free(ssk_cor_mesh *m)
{
    if (!m) return;
    free(m->positions);
    free(m->triangles);
    free(m->w_offsets);
    free(m->w_bones);
    free(m->w_values);
    free(m->vt_offsets);
    free(m->vt_triangles);
    free(m->tb_offsets);
    free(m->tb_bones);
    free(m->leaf_offsets);
    free(m->leaf_geometry);
    free(m->leaf_weight_offsets);
    free(m->leaf_weights);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------ */
/* Input: sparse weights, vertex-triangle CSR.                               */
/* ------------------------------------------------------------------------ */

/* Appends the sparse weights of `count` vertices from K-slot arrays at row
 * `first` (w_offsets[first] must be set): non-zero weights merged by bone,
 * ascending, normalized. With `validate`, checks indices and values (raw
 * input); rig weights are already valid. */
static ssk_status append_weights(ssk_cor_mesh *m, uint32_t first, uint32_t count,
                                 const int32_t *bone_indices, const float *weights, uint32_t k,
                                 bool validate, ssk_error *err)
{
    int32_t bones[SSK_MAX_INFLUENCES];
    double values[SSK_MAX_INFLUENCES];
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t v = first + i;
        uint32_t n = 0;
        double sum = 0.0;
        for (uint32_t s = 0; s < k; ++s) {
            const float w = weights[(size_t)i * k + s];
            const int32_t b = bone_indices ? bone_indices[(size_t)i * k + s] : 0;
            if (validate) {
                if (!isfinite(w))
                    return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                         "centers of rotation: vertex %u weight %u is non-finite",
                                         v, s);
                if (w < 0.0f)
                    return ssk_error_set(err, SSK_ERROR_NEGATIVE_WEIGHT,
                                         "centers of rotation: vertex %u has negative weight %g",
                                         v, (double)w);
                if (w != 0.0f && (b < 0 || (uint32_t)b >= m->bone_count))
                    return ssk_error_set(err, SSK_ERROR_BONE_INDEX,
                                         "centers of rotation: vertex %u has bone index %d, "
                                         "expected [0, %u)",
                                         v, (int)b, m->bone_count);
            }
            if (w == 0.0f) continue;
            sum += w;
            /* insertion by bone, merging repeats */
            uint32_t at = 0;
            while (at < n && bones[at] < b) ++at;
            if (at < n && bones[at] == b) {
                values[at] += w;
                continue;
            }
            for (uint32_t j = n; j > at; --j) {
                bones[j] = bones[j - 1];
                values[j] = values[j - 1];
            }
            bones[at] = b;
            values[at] = w;
            ++n;
        }
        uint32_t o = m->w_offsets[v];
        if (sum > SSK_WEIGHT_EPSILON) {
            if (fabs(sum - 1.0) > SSK_COR_WEIGHT_SUM_TOLERANCE) m->renormalized++;
            for (uint32_t j = 0; j < n; ++j) {
                m->w_bones[o] = bones[j];
                m->w_values[o++] = (float)(values[j] / sum);
            }
        }
        m->w_offsets[v + 1] = o;
    }
    return SSK_OK;
}

/* Vertex -> triangles CSR over m->triangles (a triangle listed once per
 * distinct corner). */
static ssk_status build_vertex_triangles(ssk_cor_mesh *m, ssk_error *err)
{
    const uint32_t nv = m->vertex_count, nt = m->triangle_count;
    m->vt_offsets = calloc((size_t)nv + 1, sizeof(uint32_t));
    m->vt_triangles = malloc((3 * (size_t)nt + 1) * sizeof(uint32_t));
    uint32_t *fill = calloc((size_t)nv + 1, sizeof(uint32_t));
    if (!m->vt_offsets || !m->vt_triangles || !fill) {
        free(fill);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    }
    for (uint32_t t = 0; t < nt; ++t) {
        const int32_t *c = m->triangles + 3 * (size_t)t;
        for (int k = 0; k < 3; ++k)
            if ((k < 1 || c[k] != c[0]) && (k < 2 || c[k] != c[1])) m->vt_offsets[c[k] + 1]++;
    }
    for (uint32_t v = 0; v < nv; ++v) m->vt_offsets[v + 1] += m->vt_offsets[v];
    for (uint32_t t = 0; t < nt; ++t) {
        const int32_t *c = m->triangles + 3 * (size_t)t;
        for (int k = 0; k < 3; ++k)
            if ((k < 1 || c[k] != c[0]) && (k < 2 || c[k] != c[1]))
                m->vt_triangles[m->vt_offsets[c[k]] + fill[c[k]]++] = t;
    }
    free(fill);
    return SSK_OK;
}

/* ------------------------------------------------------------------------ */
/* Integration mesh: bone sets and leaves.                                   */
/* ------------------------------------------------------------------------ */

/* Bone set of triangle t: the union of its corners' bones, ascending, into
 * out (at most 3 SSK_MAX_INFLUENCES); returns its size. */
static uint32_t triangle_bones(const ssk_cor_mesh *m, uint32_t t, int32_t *out)
{
    uint32_t n = 0;
    for (int k = 0; k < 3; ++k) {
        const uint32_t v = (uint32_t)m->triangles[3 * (size_t)t + k];
        for (uint32_t e = m->w_offsets[v]; e < m->w_offsets[v + 1]; ++e) {
            const int32_t b = m->w_bones[e];
            uint32_t at = 0;
            while (at < n && out[at] < b) ++at;
            if (at < n && out[at] == b) continue;
            for (uint32_t j = n; j > at; --j) out[j] = out[j - 1];
            out[at] = b;
            ++n;
        }
    }
    return n;
}

/* Recursive bisection state of one triangle: a stack of points, each
 * (x, y, z, weights over the triangle's bones) in double. */
typedef struct subdiv {
    double *points;
    uint32_t stride;    /* 3 + |B_t| */
    uint32_t top;       /* points in use */
    double epsilon2;
    /* output: counting only (geometry NULL) or writing */
    uint64_t count;
    float *geometry;    /* leaf (centroid, area), at index count */
    float *weights;     /* leaf weights, |B_t| per leaf */
} subdiv;

static double weight_distance2(const subdiv *s, uint32_t a, uint32_t b)
{
    const double *wa = s->points + (size_t)a * s->stride + 3;
    const double *wb = s->points + (size_t)b * s->stride + 3;
    double d = 0.0;
    for (uint32_t i = 0; i + 3 < s->stride; ++i) d += (wa[i] - wb[i]) * (wa[i] - wb[i]);
    return d;
}

static void emit_leaf(subdiv *s, uint32_t a, uint32_t b, uint32_t c)
{
    if (s->geometry) {
        const double *pa = s->points + (size_t)a * s->stride;
        const double *pb = s->points + (size_t)b * s->stride;
        const double *pc = s->points + (size_t)c * s->stride;
        const double e1[3] = {pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]};
        const double e2[3] = {pc[0] - pa[0], pc[1] - pa[1], pc[2] - pa[2]};
        const double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                             e1[0] * e2[1] - e1[1] * e2[0]};
        float *g = s->geometry + 4 * s->count;
        for (int k = 0; k < 3; ++k) g[k] = (float)((pa[k] + pb[k] + pc[k]) / 3.0);
        g[3] = (float)(0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]));
        const uint32_t nb = s->stride - 3;
        float *w = s->weights + (size_t)s->count * nb;
        for (uint32_t i = 0; i < nb; ++i) w[i] = (float)((pa[3 + i] + pb[3 + i] + pc[3 + i]) / 3.0);
    }
    s->count++;
}

static void subdivide(subdiv *s, uint32_t a, uint32_t b, uint32_t c, int depth)
{
    const double dab = weight_distance2(s, a, b), dbc = weight_distance2(s, b, c),
                 dca = weight_distance2(s, c, a);
    if ((dab < s->epsilon2 && dbc < s->epsilon2 && dca < s->epsilon2) ||
        depth >= SSK_COR_MAX_SUBDIVISION_DEPTH) {
        emit_leaf(s, a, b, c);
        return;
    }
    /* the edge of largest weight distance, the first on ties */
    uint32_t e0 = a, e1 = b, opposite = c;
    if (dbc > dab && dbc >= dca) {
        e0 = b;
        e1 = c;
        opposite = a;
    } else if (dca > dab && dca > dbc) {
        e0 = c;
        e1 = a;
        opposite = b;
    }
    const uint32_t mid = s->top++;
    double *pm = s->points + (size_t)mid * s->stride;
    const double *p0 = s->points + (size_t)e0 * s->stride, *p1 = s->points + (size_t)e1 * s->stride;
    for (uint32_t i = 0; i < s->stride; ++i) pm[i] = 0.5 * (p0[i] + p1[i]);
    subdivide(s, e0, mid, opposite, depth + 1);
    subdivide(s, mid, e1, opposite, depth + 1);
    s->top--;
}

/* Loads triangle t's corners into s (points 0..2) over its bones tb[nb]. */
static void load_corners(subdiv *s, const ssk_cor_mesh *m, uint32_t t, const int32_t *tb,
                         uint32_t nb)
{
    s->stride = 3 + nb;
    s->top = 3;
    for (int k = 0; k < 3; ++k) {
        const uint32_t v = (uint32_t)m->triangles[3 * (size_t)t + k];
        double *p = s->points + (size_t)k * s->stride;
        for (int a = 0; a < 3; ++a) p[a] = m->positions[3 * (size_t)v + a];
        for (uint32_t i = 0; i < nb; ++i) p[3 + i] = 0.0;
        uint32_t i = 0;
        for (uint32_t e = m->w_offsets[v]; e < m->w_offsets[v + 1]; ++e) {
            while (tb[i] != m->w_bones[e]) ++i;
            p[3 + i] = m->w_values[e];
        }
    }
}

/* The subdivision loops: per-thread point stacks (slots of
 * model/parallel.h), allocated on first use. */
typedef struct leaves_job {
    ssk_cor_mesh *m;
    size_t pool;       /* doubles of one point stack */
    double epsilon2;
    int write;         /* pass 2 (else: counting) */
    double **points;   /* #slots */
    uint32_t slots;
    atomic_int oom;
} leaves_job;

static void leaves_job_free(leaves_job *j)
{
    for (uint32_t i = 0; i < j->slots; ++i) free(j->points[i]);
    free(j->points);
}

static void leaves_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    leaves_job *j = ctx;
    (void)chunk;
    ssk_cor_mesh *m = j->m;
    const uint32_t slot = ssk_parallel_slot();
    double *own = NULL;
    double **points = slot < j->slots ? &j->points[slot] : &own;
    if (!*points) *points = malloc(j->pool * sizeof(double));
    if (!*points) {
        atomic_store(&j->oom, 1);
        return;
    }
    subdiv s = {0};
    s.points = *points;
    s.epsilon2 = j->epsilon2;
    for (int64_t t = begin; t < end; ++t) {
        const uint32_t nb = m->tb_offsets[t + 1] - m->tb_offsets[t];
        load_corners(&s, m, (uint32_t)t, m->tb_bones + m->tb_offsets[t], nb);
        s.count = 0;
        if (j->write) {
            s.geometry = m->leaf_geometry + 4 * m->leaf_offsets[t];
            s.weights = m->leaf_weights + m->leaf_weight_offsets[t];
            subdivide(&s, 0, 1, 2, 0);
        } else {
            subdivide(&s, 0, 1, 2, 0);
            m->leaf_offsets[t + 1] = s.count;
            m->leaf_weight_offsets[t + 1] = s.count * nb;
        }
    }
    free(own);
}

/* Bone sets and leaves of every triangle (two passes: count, then write,
 * both parallel over triangles). */
static ssk_status build_leaves(ssk_cor_mesh *m, const ssk_cor_params *params, ssk_error *err)
{
    const uint32_t nt = m->triangle_count;
    const int64_t nt64 = nt;
    m->tb_offsets = calloc((size_t)nt + 1, sizeof(uint32_t));
    m->leaf_offsets = calloc((size_t)nt + 1, sizeof(uint64_t));
    m->leaf_weight_offsets = calloc((size_t)nt + 1, sizeof(uint64_t));
    if (!m->tb_offsets || !m->leaf_offsets || !m->leaf_weight_offsets)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    /* bone set sizes */
    uint32_t max_bones = 0;
    for (uint32_t t = 0; t < nt; ++t) {
        int32_t tb[3 * SSK_MAX_INFLUENCES];
        const uint32_t n = triangle_bones(m, t, tb);
        m->tb_offsets[t + 1] = m->tb_offsets[t] + n;
        if (n > max_bones) max_bones = n;
    }
    m->tb_bones = malloc(((size_t)m->tb_offsets[nt] + 1) * sizeof(int32_t));
    if (!m->tb_bones)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    for (uint32_t t = 0; t < nt; ++t) triangle_bones(m, t, m->tb_bones + m->tb_offsets[t]);

    leaves_job j = {.m = m,
                    .pool = (size_t)(SSK_COR_MAX_SUBDIVISION_DEPTH + 4) * (3 + max_bones),
                    .epsilon2 = (double)params->epsilon * params->epsilon};
    atomic_init(&j.oom, 0);
    j.slots = ssk_parallel_threads();
    j.points = calloc(j.slots, sizeof *j.points);
    if (!j.points)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    /* pass 1: leaf counts */
    ssk_parallel_for(nt64, COR_TRIANGLE_CHUNK, leaves_chunk, &j);
    if (atomic_load(&j.oom)) {
        leaves_job_free(&j);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    }
    for (uint32_t t = 0; t < nt; ++t) {
        m->leaf_offsets[t + 1] += m->leaf_offsets[t];
        m->leaf_weight_offsets[t + 1] += m->leaf_weight_offsets[t];
    }
    const uint64_t leaves = m->leaf_offsets[nt], leaf_w = m->leaf_weight_offsets[nt];
    if (leaves > SIZE_MAX / (4 * sizeof(float)) || leaf_w > SIZE_MAX / sizeof(float)) {
        leaves_job_free(&j);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "centers of rotation: %llu integration triangles do not fit in "
                             "memory (raise epsilon)",
                             (unsigned long long)leaves);
    }
    m->leaf_geometry = malloc((size_t)(4 * leaves + 1) * sizeof(float));
    m->leaf_weights = malloc((size_t)(leaf_w + 1) * sizeof(float));
    if (!m->leaf_geometry || !m->leaf_weights) {
        leaves_job_free(&j);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "centers of rotation: cannot allocate %llu integration triangles "
                             "(raise epsilon)",
                             (unsigned long long)leaves);
    }
    /* pass 2: the leaves */
    j.write = 1;
    ssk_parallel_for(nt64, COR_TRIANGLE_CHUNK, leaves_chunk, &j);
    const int oom = atomic_load(&j.oom);
    leaves_job_free(&j);
    if (oom) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    return SSK_OK;
}

/* ------------------------------------------------------------------------ */
/* Eq. 4 per vertex over the pair cells (cor_cells.c).                       */
/* ------------------------------------------------------------------------ */

/* Centers and flags from Eq. 4's sums: p* = sum s a c / sum s a when the
 * denominator is positive and the result finite, else no CoR. */
static bool finish_center(float dst[3], const double sum[4], const float *position)
{
    if (sum[3] > 0.0) {
        const float c[3] = {(float)(sum[0] / sum[3]), (float)(sum[1] / sum[3]),
                            (float)(sum[2] / sum[3])};
        if (isfinite(c[0]) && isfinite(c[1]) && isfinite(c[2])) {
            memcpy(dst, c, sizeof c);
            return true;
        }
    }
    memcpy(dst, position, 3 * sizeof(float));
    return false;
}

/* Groups the vertices with two or more bones by bit-identical sparse
 * weights: out[k] lists one representative per group (ascending), rep[v] is
 * v's representative (v itself for a representative, UINT32_MAX for a
 * vertex with fewer than two bones). Returns the representative count. */
typedef struct hashed_vertex {
    uint64_t hash;
    uint32_t v;
} hashed_vertex;

static int compare_hashed(const void *a, const void *b)
{
    const hashed_vertex *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

static bool same_weights(const ssk_cor_mesh *m, uint32_t a, uint32_t b)
{
    const uint32_t na = m->w_offsets[a + 1] - m->w_offsets[a];
    if (na != m->w_offsets[b + 1] - m->w_offsets[b]) return false;
    return memcmp(m->w_bones + m->w_offsets[a], m->w_bones + m->w_offsets[b],
                  na * sizeof(int32_t)) == 0 &&
           memcmp(m->w_values + m->w_offsets[a], m->w_values + m->w_offsets[b],
                  na * sizeof(float)) == 0;
}

static ssk_status group_weights(uint32_t *out, uint32_t *out_count, uint32_t *rep,
                                const ssk_cor_mesh *m, ssk_error *err)
{
    const uint32_t nv = m->vertex_count;
    hashed_vertex *h = malloc(((size_t)nv + 1) * sizeof *h);
    if (!h) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    uint32_t n = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        rep[v] = UINT32_MAX;
        const uint32_t e0 = m->w_offsets[v], k = m->w_offsets[v + 1] - e0;
        if (k < 2) continue;
        const uint64_t hb = XXH3_64bits(m->w_bones + e0, k * sizeof(int32_t));
        h[n].hash = XXH3_64bits_withSeed(m->w_values + e0, k * sizeof(float), hb);
        h[n++].v = v;
    }
    qsort(h, n, sizeof *h, compare_hashed);
    uint32_t count = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j < n && h[j].hash == h[i].hash) ++j;
        /* a run of equal hashes: each vertex joins the first earlier
         * vertex of the run with the same weights (runs ascend in v) */
        for (uint32_t a = i; a < j; ++a) {
            const uint32_t v = h[a].v;
            for (uint32_t b = i; b < a && rep[v] == UINT32_MAX; ++b)
                if (rep[h[b].v] == h[b].v && same_weights(m, v, h[b].v)) rep[v] = h[b].v;
            if (rep[v] == UINT32_MAX) {
                rep[v] = v;
                out[count++] = v;
            }
        }
        i = j;
    }
    free(h);
    *out_count = count;
    return SSK_OK;
}

/* Eq. 4 over the pair cells (cor_cells.c), per representative vertex,
 * then the other vertices of each group. */
typedef struct cells_job {
    const ssk_cor_mesh *m;
    const ssk_cor_cells *cells;
    const uint32_t *reps, *rep_of;
    float *dst_centers;
    uint8_t *dst_flags;
    float sigma;
    _Atomic uint64_t evaluated;
    atomic_uint cor_count;
    const ssk_cor_params *params; /* its progress */
    uint32_t rep_count;
    atomic_uint reps_done;
    uint32_t reported;            /* the caller's last report */
} cells_job;

/* Work units of the phases (ssk_cor_params.progress): the leaves, the
 * cells, then the vertices. */
#define COR_PROGRESS_LEAVES (SSK_COR_PROGRESS / 10)
#define COR_PROGRESS_CELLS (SSK_COR_PROGRESS / 5)

static void report(const ssk_cor_params *params, uint32_t done)
{
    if (params->progress) params->progress(params->progress_user, done, SSK_COR_PROGRESS);
}

/* The other vertices of each group, and those without two bones. */
static void spread_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    cells_job *j = ctx;
    (void)chunk;
    uint32_t count = 0;
    for (int64_t v = begin; v < end; ++v) {
        const uint32_t r = j->rep_of[v];
        if (r != (uint32_t)v) {
            j->dst_flags[v] = r != UINT32_MAX && j->dst_flags[r];
            memcpy(j->dst_centers + 3 * v,
                   (j->dst_flags[v] ? j->dst_centers + 3 * (size_t)r : j->m->positions + 3 * v),
                   3 * sizeof(float));
        }
        count += j->dst_flags[v];
    }
    atomic_fetch_add(&j->cor_count, count);
}

static void cells_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    cells_job *j = ctx;
    (void)chunk;
    const ssk_cor_mesh *m = j->m;
    uint64_t visited = 0;
    for (int64_t r = begin; r < end; ++r) {
        const uint32_t v = j->reps[r];
        const uint32_t e0 = m->w_offsets[v], kp = m->w_offsets[v + 1] - e0;
        double sum[4];
        visited += ssk_cor_cells_integrate(sum, j->cells, m->w_bones + e0, m->w_values + e0, kp,
                                           j->sigma);
        j->dst_flags[v] = finish_center(j->dst_centers + 3 * (size_t)v, sum,
                                        m->positions + 3 * (size_t)v);
    }
    atomic_fetch_add(&j->evaluated, visited);
    const uint32_t done = atomic_fetch_add(&j->reps_done, (uint32_t)(end - begin)) +
                          (uint32_t)(end - begin);
    /* progress on the calling thread only (slot 0), about 100 reports */
    if (j->params->progress && ssk_parallel_slot() == 0 && j->rep_count > 0) {
        const uint32_t units = COR_PROGRESS_CELLS +
                               (uint32_t)((uint64_t)(SSK_COR_PROGRESS - COR_PROGRESS_CELLS) *
                                          done / j->rep_count);
        if (units >= j->reported + SSK_COR_PROGRESS / 100 && units < SSK_COR_PROGRESS) {
            j->reported = units;
            report(j->params, units);
        }
    }
}

/* Eq. 4 of the representatives on GL (cor_gl.c), then their centers. */
static ssk_status reps_on_gl(cells_job *j, ssk_gl_context *gl, ssk_error *err)
{
    const ssk_cor_mesh *m = j->m;
    float *sums = malloc((4 * (size_t)j->rep_count + 1) * sizeof(float));
    if (!sums) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    uint64_t visited = 0;
    ssk_status st = ssk_cor_gl_integrate(sums, m, j->cells, j->reps, j->rep_count, j->sigma, gl,
                                         &visited, err);
    if (st == SSK_OK) {
        for (uint32_t r = 0; r < j->rep_count; ++r) {
            const uint32_t v = j->reps[r];
            const double sum[4] = {sums[4 * (size_t)r], sums[4 * (size_t)r + 1],
                                   sums[4 * (size_t)r + 2], sums[4 * (size_t)r + 3]};
            j->dst_flags[v] = finish_center(j->dst_centers + 3 * (size_t)v, sum,
                                            m->positions + 3 * (size_t)v);
        }
        atomic_store(&j->evaluated, visited);
    }
    free(sums);
    return st;
}

/* The cells, the representatives' sums (CPU, or GL when gl is given), and
 * every vertex's center. */
static ssk_status cells_all(float *dst_centers, uint8_t *dst_flags, const ssk_cor_mesh *m,
                            const ssk_cor_params *params, ssk_gl_context *gl,
                            ssk_cor_stats *stats, ssk_error *err)
{
    ssk_cor_cells *cells = NULL;
    ssk_status st = ssk_cor_cells_build(&cells, m, 0, err);
    if (st != SSK_OK) return st;
    report(params, COR_PROGRESS_CELLS);
    uint32_t *reps = malloc(((size_t)m->vertex_count + 1) * sizeof(uint32_t));
    uint32_t *rep_of = malloc(((size_t)m->vertex_count + 1) * sizeof(uint32_t));
    uint32_t rep_count = 0;
    st = reps && rep_of ? group_weights(reps, &rep_count, rep_of, m, err)
                        : ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                        "centers of rotation: out of memory");
    if (st == SSK_OK) {
        cells_job j = {.m = m, .cells = cells, .reps = reps, .rep_of = rep_of,
                       .dst_centers = dst_centers, .dst_flags = dst_flags,
                       .sigma = params->sigma, .params = params, .rep_count = rep_count,
                       .reported = COR_PROGRESS_CELLS};
        atomic_init(&j.evaluated, 0);
        atomic_init(&j.cor_count, 0u);
        atomic_init(&j.reps_done, 0u);
        if (gl) {
            st = reps_on_gl(&j, gl, err);
        } else {
            /* each representative's center depends on its weights only: the
             * same bits whichever thread runs it */
            ssk_parallel_for(rep_count, COR_SCHEDULE_CHUNK, cells_chunk, &j);
        }
        if (st == SSK_OK) {
            ssk_parallel_for(m->vertex_count, COR_VERTEX_CHUNK, spread_chunk, &j);
            if (stats) {
                stats->cluster_count = (uint32_t)ssk_cor_cells_count(cells);
                stats->evaluated_triangles = atomic_load(&j.evaluated);
                stats->cor_count = atomic_load(&j.cor_count);
            }
        }
    }
    free(reps);
    free(rep_of);
    ssk_cor_cells_destroy(cells);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Public entry points.                                                      */
/* ------------------------------------------------------------------------ */

static ssk_status mesh_arrays(ssk_cor_mesh *m, uint32_t nv, uint32_t nt, size_t weight_slots,
                              ssk_error *err)
{
    m->vertex_count = nv;
    m->triangle_count = nt;
    m->positions = malloc((3 * (size_t)nv + 1) * sizeof(float));
    m->triangles = malloc((3 * (size_t)nt + 1) * sizeof(int32_t));
    m->w_offsets = calloc((size_t)nv + 1, sizeof(uint32_t));
    m->w_bones = malloc((weight_slots + 1) * sizeof(int32_t));
    m->w_values = malloc((weight_slots + 1) * sizeof(float));
    if (!m->positions || !m->triangles || !m->w_offsets || !m->w_bones || !m->w_values)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    return SSK_OK;
}

/* Leaves, then Eq. 4 over their cells (the vertices' sums on the CPU, or
 * on GL when use_gl); fills stats. */
static ssk_status run(float *dst_centers, uint8_t *dst_flags, ssk_cor_mesh *m,
                      const ssk_cor_params *params, bool use_gl, ssk_gl_context *gl,
                      ssk_cor_stats *stats, ssk_error *err)
{
    ssk_status st = build_vertex_triangles(m, err);
    if (st == SSK_OK) st = build_leaves(m, params, err);
    if (st != SSK_OK) return st;
    report(params, COR_PROGRESS_LEAVES);
    stats->integration_triangles = m->leaf_offsets[m->triangle_count];
    stats->renormalized_count = m->renormalized;
    st = cells_all(dst_centers, dst_flags, m, params, use_gl ? gl : NULL, stats, err);
    if (st == SSK_OK) report(params, SSK_COR_PROGRESS);
    return st;
}

ssk_status ssk_cor_compute(float *dst_centers, uint8_t *dst_flags, const float *positions,
                           uint32_t vertex_count, const int32_t *triangles,
                           uint32_t triangle_count, const int32_t *bone_indices,
                           const float *weights, uint32_t influence_count, uint32_t bone_count,
                           const ssk_cor_params *params, ssk_cor_stats *stats, ssk_error *err)
{
    const double start = ssk_time_seconds();
    if (!dst_centers || !dst_flags || !positions || !triangles || !weights || !params ||
        (!bone_indices && influence_count))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cor_compute: NULL argument");
    ssk_status st = ssk_cor_params_check(params, err);
    if (st != SSK_OK) return st;
    if (vertex_count == 0 || triangle_count == 0)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "centers of rotation: %u vertices and %u triangles (each must be "
                             ">= 1)",
                             vertex_count, triangle_count);
    if (influence_count > SSK_MAX_INFLUENCES)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "centers of rotation: %u influences per vertex, more than %d",
                             influence_count, SSK_MAX_INFLUENCES);
    if (!ssk_floats_finite(positions, 3 * (size_t)vertex_count))
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "centers of rotation: a position is non-finite");
    for (size_t i = 0; i < 3 * (size_t)triangle_count; ++i)
        if (triangles[i] < 0 || (uint32_t)triangles[i] >= vertex_count)
            return ssk_error_set(err, SSK_ERROR_TRIANGLE_INDEX,
                                 "centers of rotation: triangle %zu has vertex index %d, "
                                 "expected [0, %u)",
                                 i / 3, (int)triangles[i], vertex_count);
    ssk_cor_stats local = {0};
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->vertex_count = vertex_count;
    ssk_cor_mesh m = {0};
    m.bone_count = bone_count;
    st = mesh_arrays(&m, vertex_count, triangle_count,
                     (size_t)vertex_count * influence_count, err);
    if (st == SSK_OK) {
        memcpy(m.positions, positions, 3 * (size_t)vertex_count * sizeof(float));
        memcpy(m.triangles, triangles, 3 * (size_t)triangle_count * sizeof(int32_t));
        st = append_weights(&m, 0, vertex_count, bone_indices, weights, influence_count, true,
                            err);
    }
    if (st == SSK_OK) st = run(dst_centers, dst_flags, &m, params, false, NULL, stats, err);
    const uint32_t renormalized = m.renormalized;
    ssk_cor_mesh_free(&m);
    stats->seconds = ssk_time_seconds() - start;
    if (st != SSK_OK) return st;
    if (renormalized)
        return ssk_error_set(err, SSK_OK,
                             "warning: centers of rotation: the weights of %u vertices did not "
                             "sum to 1 (within %g) and were normalized",
                             renormalized, (double)SSK_COR_WEIGHT_SUM_TOLERANCE);
    return ssk_error_ok(err);
}

/* The GL context for a precomputation: GL asks for it (the caller's, or a
 * new one), AUTO takes it on a hardware GPU. *use_gl false: the CPU. */
static ssk_status resolve_gl(ssk_backend backend, ssk_gl_context *given, ssk_gl_context **owned,
                             ssk_gl_context **use, ssk_error *err)
{
    *owned = NULL;
    *use = NULL;
    if (backend == SSK_BACKEND_CPU) return SSK_OK;
    ssk_gl_context *gl = given;
    if (!gl) {
        ssk_error gl_err = {0};
        ssk_status st = ssk_gl_context_create(owned, &gl_err);
        if (st != SSK_OK) {
            if (backend == SSK_BACKEND_GL) {
                if (err) *err = gl_err;
                return st;
            }
            return SSK_OK; /* AUTO: the CPU */
        }
        gl = *owned;
    }
    if (backend == SSK_BACKEND_AUTO && !ssk_gl_context_info_ref(gl)->hardware) {
        ssk_gl_context_destroy(*owned);
        *owned = NULL;
        return SSK_OK;
    }
    *use = gl;
    return SSK_OK;
}

/* The integration mesh of a rig (rig space, welded triangles, sparse
 * normalized weights of every vertex). A loose vertex (in no triangle) gets
 * its center from its weights like any other (Eq. 4 integrates over the
 * whole mesh). */
static ssk_status mesh_from_rig(ssk_cor_mesh *m, const ssk_rig *rig, ssk_error *err)
{
    uint32_t nt = 0;
    size_t slots = 0;
    for (uint32_t mi = 0; mi < rig->mesh_count; ++mi) {
        nt += rig->meshes[mi].triangle_count;
        slots += (size_t)rig->meshes[mi].vertex_count * rig->meshes[mi].influence_count;
    }
    m->bone_count = rig->bone_count;
    ssk_status st = mesh_arrays(m, rig->vertex_count, nt, slots, err);
    uint32_t first_triangle = 0;
    for (uint32_t mi = 0; st == SSK_OK && mi < rig->mesh_count; ++mi) {
        const ssk_mesh *mesh = &rig->meshes[mi];
        const uint32_t v0 = mesh->first_vertex;
        for (uint32_t v = 0; v < mesh->vertex_count; ++v)
            ssk_mat4_transform_point(m->positions + 3 * ((size_t)v0 + v), mesh->object_matrix,
                                     mesh->positions + 3 * (size_t)v);
        /* Welded (weld.c): a triangle names the representatives of its
         * corners, so the integration crosses UV seams and shared mesh
         * borders. */
        for (size_t i = 0; i < 3 * (size_t)mesh->triangle_count; ++i)
            m->triangles[3 * (size_t)first_triangle + i] =
                (int32_t)rig->weld.point[(uint32_t)mesh->triangles[i] + v0];
        first_triangle += mesh->triangle_count;
        if (mesh->influence_count && rig->bone_count) {
            st = append_weights(m, v0, mesh->vertex_count, mesh->bone_indices, mesh->weights,
                                mesh->influence_count, false, err);
        } else {
            for (uint32_t v = 0; v < mesh->vertex_count; ++v)
                m->w_offsets[v0 + v + 1] = m->w_offsets[v0 + v];
        }
    }
    return st;
}

ssk_status ssk_cor_precompute(float *dst_centers, uint8_t *dst_flags, const ssk_rig *rig,
                              const ssk_cor_params *params, ssk_backend backend,
                              ssk_gl_context *gl, ssk_cor_stats *stats, ssk_error *err)
{
    const double start = ssk_time_seconds();
    if (!dst_centers || !dst_flags || !rig || !params)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cor_precompute: NULL argument");
    if ((unsigned)backend >= SSK_BACKEND_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cor_precompute: backend %d out of range", (int)backend);
    ssk_status st = ssk_cor_params_check(params, err);
    if (st != SSK_OK) return st;
    ssk_cor_stats local = {0};
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->vertex_count = rig->vertex_count;
    ssk_cor_mesh m = {0};
    st = mesh_from_rig(&m, rig, err);
    const uint32_t nt = m.triangle_count;
    ssk_gl_context *owned = NULL, *use = NULL;
    if (st == SSK_OK) st = resolve_gl(backend, gl, &owned, &use, err);
    if (st == SSK_OK && nt == 0) {
        /* no surface to integrate: no vertex has a CoR */
        memcpy(dst_centers, m.positions, 3 * (size_t)rig->vertex_count * sizeof(float));
        memset(dst_flags, 0, rig->vertex_count);
    } else if (st == SSK_OK) {
        st = run(dst_centers, dst_flags, &m, params, use != NULL, use, stats, err);
    }
    /* Coincident vertices are one surface point: the representative's
     * center (rig space) for all of them. */
    for (uint32_t i = 0; st == SSK_OK && i < rig->weld.member_count; ++i) {
        const uint32_t v = rig->weld.members[i], r = rig->weld.point[v];
        memcpy(dst_centers + 3 * (size_t)v, dst_centers + 3 * (size_t)r, 3 * sizeof(float));
        dst_flags[v] = dst_flags[r];
    }
    ssk_gl_context_destroy(owned);
    ssk_cor_mesh_free(&m);
    stats->seconds = ssk_time_seconds() - start;
    return st == SSK_OK ? ssk_error_ok(err) : st;
}

/* ------------------------------------------------------------------------ */
/* Incremental updates (issue #18).                                          */
/* ------------------------------------------------------------------------ */

/* A weight edit moves only the leaves of the triangles around the edited
 * vertices: their old moments leave the cells, their new ones enter, and
 * every other vertex's Eq. 4 sums change by the difference of the changed
 * cells alone (the sums are linear in the cells): a vertex sharing a
 * changed pair adds (new cell - old cell) for the changed cells only,
 * instead of summing all the cells of its pairs again. The edited vertices
 * themselves are integrated again in full. */
struct ssk_cor_state {
    ssk_cor_mesh m;            /* with its leaves as first built */
    ssk_cor_cells *cells;      /* keep_raw */
    ssk_cor_params params;     /* progress cleared */
    uint32_t nv;
    uint32_t *weld_point;      /* #V: the representative of each row */
    uint32_t *weld_members;    /* the rows that are not their own representative */
    uint32_t weld_member_count;
    double *sums;              /* #V by 4: Eq. 4 sums of every vertex of two bones */
    uint32_t *pair_first;      /* pair_list_count + 1 */
    uint32_t *pair_vertices;   /* representatives weighting both bones of a pair */
    uint32_t pair_list_count;  /* the pairs pair_first covers */
    /* per triangle: the leaves an update made (leaf_count UINT32_MAX: m's) */
    uint32_t *leaf_count;
    float **leaf_geo, **leaf_w;
    uint32_t *stamp;           /* #T: the last update that touched a triangle */
    uint32_t generation;
    double *points;            /* a subdivision stack */
    size_t pool;
};

void ssk_cor_state_destroy(ssk_cor_state *s)
{
    if (!s) return;
    /* the per-triangle leaves first: ssk_cor_mesh_free clears triangle_count */
    for (uint32_t t = 0; s->leaf_geo && t < s->m.triangle_count; ++t) {
        free(s->leaf_geo[t]);
        free(s->leaf_w[t]);
    }
    ssk_cor_mesh_free(&s->m);
    ssk_cor_cells_destroy(s->cells);
    free(s->leaf_geo);
    free(s->leaf_w);
    free(s->leaf_count);
    free(s->weld_point);
    free(s->weld_members);
    free(s->sums);
    free(s->pair_first);
    free(s->pair_vertices);
    free(s->stamp);
    free(s->points);
    free(s);
}

/* Eq. 4's sums of every vertex of two bones (per weight group, copied). */
typedef struct sums_job {
    const ssk_cor_state *s;
    const uint32_t *reps;
} sums_job;

static void sums_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const sums_job *j = ctx;
    (void)chunk;
    const ssk_cor_mesh *m = &j->s->m;
    for (int64_t r = begin; r < end; ++r) {
        const uint32_t v = j->reps[r];
        const uint32_t e0 = m->w_offsets[v], kp = m->w_offsets[v + 1] - e0;
        ssk_cor_cells_integrate(j->s->sums + 4 * (size_t)v, j->s->cells, m->w_bones + e0,
                                m->w_values + e0, kp, j->s->params.sigma);
    }
}

/* Centers and flags of row v from its sums (the sums of its
 * representative for a welded copy). */
static void state_center(const ssk_cor_state *s, float *dst_centers, uint8_t *dst_flags,
                         uint32_t v)
{
    const uint32_t kp = s->m.w_offsets[v + 1] - s->m.w_offsets[v];
    if (kp < 2) {
        memcpy(dst_centers + 3 * (size_t)v, s->m.positions + 3 * (size_t)v, 3 * sizeof(float));
        dst_flags[v] = 0;
        return;
    }
    dst_flags[v] = finish_center(dst_centers + 3 * (size_t)v, s->sums + 4 * (size_t)v,
                                 s->m.positions + 3 * (size_t)v);
}

/* pair_first / pair_vertices: the representatives weighting both bones of
 * each pair, from the current weights; false: out of memory (the old
 * lists are kept). */
static bool build_pair_vertices(ssk_cor_state *s)
{
    const uint32_t np = ssk_cor_cells_pair_count(s->cells), nv = s->nv;
    uint32_t *first = calloc((size_t)np + 1, sizeof(uint32_t));
    uint32_t *fill = calloc((size_t)np + 1, sizeof(uint32_t));
    uint32_t *list = NULL;
    if (!first || !fill) goto oom;
    for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t v = 0; v < nv; ++v) {
            if (s->weld_point[v] != v) continue;
            const uint32_t e0 = s->m.w_offsets[v], kp = s->m.w_offsets[v + 1] - e0;
            for (uint32_t a = 0; a < kp; ++a)
                for (uint32_t b = a + 1; b < kp; ++b) {
                    const int64_t p = ssk_cor_cells_pair(s->cells, s->m.w_bones[e0 + a],
                                                         s->m.w_bones[e0 + b]);
                    if (p < 0) continue;
                    if (pass == 0)
                        first[p + 1]++;
                    else
                        list[first[p] + fill[p]++] = v;
                }
        }
        if (pass == 0) {
            for (uint32_t p = 0; p < np; ++p) first[p + 1] += first[p];
            list = malloc(((size_t)first[np] + 1) * sizeof(uint32_t));
            if (!list) goto oom;
        }
    }
    free(fill);
    free(s->pair_first);
    free(s->pair_vertices);
    s->pair_first = first;
    s->pair_vertices = list;
    s->pair_list_count = np;
    return true;
oom:
    free(first);
    free(fill);
    free(list);
    return false;
}

ssk_status ssk_cor_state_create(ssk_cor_state **out, float *dst_centers, uint8_t *dst_flags,
                                const ssk_rig *rig, const ssk_cor_params *params,
                                ssk_cor_stats *stats, ssk_error *err)
{
    const double start = ssk_time_seconds();
    if (!out || !dst_centers || !dst_flags || !rig || !params)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cor_state_create: NULL argument");
    *out = NULL;
    ssk_status st = ssk_cor_params_check(params, err);
    if (st != SSK_OK) return st;
    ssk_cor_stats local = {0};
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->vertex_count = rig->vertex_count;
    ssk_cor_state *s = calloc(1, sizeof *s);
    if (!s) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    s->params = *params;
    s->params.progress = NULL;
    s->params.progress_user = NULL;
    s->nv = rig->vertex_count;
    uint32_t *reps = NULL, *rep_of = NULL;
    st = mesh_from_rig(&s->m, rig, err);
    if (st == SSK_OK) st = build_vertex_triangles(&s->m, err);
    if (st == SSK_OK) st = build_leaves(&s->m, params, err);
    report(params, COR_PROGRESS_LEAVES);
    if (st == SSK_OK) st = ssk_cor_cells_build(&s->cells, &s->m, 1, err);
    report(params, COR_PROGRESS_CELLS);
    if (st != SSK_OK) goto fail;
    const uint32_t nv = s->nv, nt = s->m.triangle_count;
    s->weld_point = malloc(((size_t)nv + 1) * sizeof(uint32_t));
    s->weld_members = malloc(((size_t)rig->weld.member_count + 1) * sizeof(uint32_t));
    s->sums = calloc(4 * (size_t)nv + 1, sizeof(double));
    s->leaf_count = malloc(((size_t)nt + 1) * sizeof(uint32_t));
    s->leaf_geo = calloc((size_t)nt + 1, sizeof(float *));
    s->leaf_w = calloc((size_t)nt + 1, sizeof(float *));
    s->stamp = calloc((size_t)nt + 1, sizeof(uint32_t));
    reps = malloc(((size_t)nv + 1) * sizeof(uint32_t));
    rep_of = malloc(((size_t)nv + 1) * sizeof(uint32_t));
    if (!s->weld_point || !s->weld_members || !s->sums || !s->leaf_count || !s->leaf_geo ||
        !s->leaf_w || !s->stamp || !reps || !rep_of)
        goto oom;
    memcpy(s->weld_point, rig->weld.point, (size_t)nv * sizeof(uint32_t));
    memcpy(s->weld_members, rig->weld.members, (size_t)rig->weld.member_count * sizeof(uint32_t));
    s->weld_member_count = rig->weld.member_count;
    for (uint32_t t = 0; t < nt; ++t) s->leaf_count[t] = UINT32_MAX;
    /* the sums, once per weight group */
    uint32_t rep_count = 0;
    st = group_weights(reps, &rep_count, rep_of, &s->m, err);
    if (st != SSK_OK) goto fail;
    sums_job sj = {s, reps};
    ssk_parallel_for(rep_count, COR_SCHEDULE_CHUNK, sums_chunk, &sj);
    for (uint32_t v = 0; v < nv; ++v)
        if (rep_of[v] != UINT32_MAX && rep_of[v] != v)
            memcpy(s->sums + 4 * (size_t)v, s->sums + 4 * (size_t)rep_of[v], 4 * sizeof(double));
    /* the representatives of each pair */
    if (!build_pair_vertices(s)) goto oom;
    /* a subdivision stack for the updates */
    uint32_t max_bones = 0;
    for (uint32_t t = 0; t < nt; ++t) {
        const uint32_t nb = s->m.tb_offsets[t + 1] - s->m.tb_offsets[t];
        max_bones = nb > max_bones ? nb : max_bones;
    }
    s->pool = (size_t)(SSK_COR_MAX_SUBDIVISION_DEPTH + 4) * (3 + max_bones);
    s->points = malloc(s->pool * sizeof(double));
    if (!s->points) goto oom;
    uint32_t count = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        state_center(s, dst_centers, dst_flags, v);
        count += dst_flags[v];
    }
    for (uint32_t i = 0; i < s->weld_member_count; ++i) {
        const uint32_t v = s->weld_members[i], r = s->weld_point[v];
        count -= dst_flags[v];
        memcpy(dst_centers + 3 * (size_t)v, dst_centers + 3 * (size_t)r, 3 * sizeof(float));
        dst_flags[v] = dst_flags[r];
        count += dst_flags[v];
    }
    stats->cor_count = count;
    stats->integration_triangles = s->m.leaf_offsets[nt];
    stats->cluster_count = (uint32_t)ssk_cor_cells_count(s->cells);
    stats->renormalized_count = s->m.renormalized;
    stats->seconds = ssk_time_seconds() - start;
    report(params, SSK_COR_PROGRESS);
    free(reps);
    free(rep_of);
    *out = s;
    return ssk_error_ok(err);
oom:
    st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
fail:
    free(reps);
    free(rep_of);
    ssk_cor_state_destroy(s);
    return st;
}

/* The current leaves of triangle t: (geometry, weights, count). */
static uint32_t current_leaves(const ssk_cor_state *s, uint32_t t, const float **geo,
                               const float **w)
{
    if (s->leaf_count[t] != UINT32_MAX) {
        *geo = s->leaf_geo[t];
        *w = s->leaf_w[t];
        return s->leaf_count[t];
    }
    *geo = s->m.leaf_geometry + 4 * s->m.leaf_offsets[t];
    *w = s->m.leaf_weights + s->m.leaf_weight_offsets[t];
    return (uint32_t)(s->m.leaf_offsets[t + 1] - s->m.leaf_offsets[t]);
}

/* One changed cell of an update: its pair, slot and moments before. */
typedef struct changed_cell {
    uint32_t pair;
    uint64_t slot;
    double old[SSK_COR_MOMENTS];
} changed_cell;

typedef struct update_ctx {
    ssk_cor_state *s;
    changed_cell *cells;
    uint32_t count, capacity;
    uint64_t *keys;            /* open addressing: pair << 40 | slot + 1, 0 empty */
    uint32_t *where;
    uint32_t table;            /* a power of two */
} update_ctx;

/* Records the cell's moments before its first change; false: out of memory. */
static bool touch_cell(update_ctx *u, uint32_t p, uint64_t slot)
{
    const uint64_t key = ((uint64_t)p << 40 | slot) + 1;
    if (2 * (u->count + 1) > u->table) {
        const uint32_t table = u->table ? 2 * u->table : 1024;
        uint64_t *keys = calloc(table, sizeof *keys);
        uint32_t *where = malloc(table * sizeof *where);
        if (!keys || !where) {
            free(keys);
            free(where);
            return false;
        }
        for (uint32_t i = 0; i < u->table; ++i)
            if (u->keys[i]) {
                uint32_t h = (uint32_t)(XXH64(&u->keys[i], sizeof u->keys[i], 0) & (table - 1));
                while (keys[h]) h = (h + 1) & (table - 1);
                keys[h] = u->keys[i];
                where[h] = u->where[i];
            }
        free(u->keys);
        free(u->where);
        u->keys = keys;
        u->where = where;
        u->table = table;
    }
    uint32_t h = (uint32_t)(XXH64(&key, sizeof key, 0) & (u->table - 1));
    while (u->keys[h]) {
        if (u->keys[h] == key) return true;
        h = (h + 1) & (u->table - 1);
    }
    if (u->count == u->capacity) {
        const uint32_t cap = u->capacity ? 2 * u->capacity : 256;
        changed_cell *cells = realloc(u->cells, cap * sizeof *cells);
        if (!cells) return false;
        u->cells = cells;
        u->capacity = cap;
    }
    changed_cell *c = &u->cells[u->count];
    c->pair = p;
    c->slot = slot;
    memcpy(c->old, ssk_cor_cells_raw(u->s->cells, p, slot), sizeof c->old);
    u->keys[h] = key;
    u->where[h] = u->count++;
    return true;
}

/* Adds sign times the leaves of triangle t (as given) to the cells. */
static bool apply_leaves(update_ctx *u, uint32_t t, const float *geo, const float *lw,
                         uint32_t count, double sign)
{
    ssk_cor_state *s = u->s;
    const int32_t *tb = s->m.tb_bones + s->m.tb_offsets[t];
    const uint32_t nb = s->m.tb_offsets[t + 1] - s->m.tb_offsets[t];
    for (uint32_t a = 0; a < nb; ++a)
        for (uint32_t b = a + 1; b < nb; ++b) {
            const int64_t p = ssk_cor_cells_pair(s->cells, tb[a], tb[b]);
            if (p < 0) continue;
            for (uint32_t l = 0; l < count; ++l) {
                const float *w = lw + (size_t)l * nb;
                if (!(w[a] > 0.0f && w[b] > 0.0f)) continue;
                const double uj = w[a], uk = w[b];
                const int64_t slot = ssk_cor_cells_slot(s->cells, (uint32_t)p, uj, uk);
                if (slot < 0 || !touch_cell(u, (uint32_t)p, (uint64_t)slot)) return false;
                ssk_cor_moments_add(ssk_cor_cells_raw(s->cells, (uint32_t)p, (uint64_t)slot), uj,
                                    uk, geo + 4 * (size_t)l, sign);
            }
        }
    return true;
}

/* The leaves of triangle t from the mesh's current weights, into the
 * state's per-triangle arrays. */
static bool remake_leaves(ssk_cor_state *s, uint32_t t)
{
    const int32_t *tb = s->m.tb_bones + s->m.tb_offsets[t];
    const uint32_t nb = s->m.tb_offsets[t + 1] - s->m.tb_offsets[t];
    subdiv d = {0};
    d.points = s->points;
    d.epsilon2 = (double)s->params.epsilon * s->params.epsilon;
    load_corners(&d, &s->m, t, tb, nb);
    d.count = 0;
    subdivide(&d, 0, 1, 2, 0);
    const uint64_t count = d.count;
    float *geo = malloc((4 * count + 1) * sizeof(float));
    float *w = malloc(((size_t)count * nb + 1) * sizeof(float));
    if (!geo || !w) {
        free(geo);
        free(w);
        return false;
    }
    load_corners(&d, &s->m, t, tb, nb);
    d.count = 0;
    d.geometry = geo;
    d.weights = w;
    subdivide(&d, 0, 1, 2, 0);
    free(s->leaf_geo[t]);
    free(s->leaf_w[t]);
    s->leaf_geo[t] = geo;
    s->leaf_w[t] = w;
    s->leaf_count[t] = (uint32_t)count;
    return true;
}

/* The edited vertices' new weights when some gained or lost a bone: the
 * weight CSR made again with them, the bone sets of the triangles around
 * them (stamped with the current generation) made again, their new bone
 * pairs added to the cells, the subdivision stack grown to the largest
 * set. O(#V + #T) copies; false: out of memory (the state is then
 * unusable). */
static bool replace_bone_sets(ssk_cor_state *s, const uint32_t *edited_list, uint32_t n,
                              const uint32_t *new_offsets, const int32_t *new_bones,
                              const float *new_values)
{
    ssk_cor_mesh *m = &s->m;
    const uint32_t nv = m->vertex_count, nt = m->triangle_count;
    uint32_t *slot = malloc(((size_t)nv + 1) * sizeof(uint32_t));
    if (!slot) return false;
    for (uint32_t v = 0; v < nv; ++v) slot[v] = UINT32_MAX;
    size_t total = m->w_offsets[nv];
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t v = edited_list[i];
        slot[v] = i;
        total = total - (m->w_offsets[v + 1] - m->w_offsets[v]) + (new_offsets[i + 1] - new_offsets[i]);
    }
    uint32_t *w_offsets = malloc(((size_t)nv + 1) * sizeof(uint32_t));
    int32_t *w_bones = malloc((total + 1) * sizeof(int32_t));
    float *w_values = malloc((total + 1) * sizeof(float));
    uint32_t *tb_offsets = malloc(((size_t)nt + 1) * sizeof(uint32_t));
    int32_t *tb_bones = NULL;
    if (!w_offsets || !w_bones || !w_values || !tb_offsets) goto oom;
    uint32_t o = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        w_offsets[v] = o;
        const bool mine = slot[v] != UINT32_MAX;
        const uint32_t a = mine ? new_offsets[slot[v]] : m->w_offsets[v];
        const uint32_t k = mine ? new_offsets[slot[v] + 1] - a : m->w_offsets[v + 1] - a;
        memcpy(w_bones + o, (mine ? new_bones : m->w_bones) + a, k * sizeof(int32_t));
        memcpy(w_values + o, (mine ? new_values : m->w_values) + a, k * sizeof(float));
        o += k;
    }
    w_offsets[nv] = o;
    free(m->w_offsets);
    free(m->w_bones);
    free(m->w_values);
    m->w_offsets = w_offsets;
    m->w_bones = w_bones;
    m->w_values = w_values;
    w_offsets = NULL;
    w_bones = NULL;
    w_values = NULL;
    /* the triangles' bone sets: the stamped ones from the new weights */
    int32_t set[3 * SSK_MAX_INFLUENCES];
    size_t tb_total = 0;
    uint32_t max_bones = 0;
    for (uint32_t t = 0; t < nt; ++t) {
        const uint32_t k = s->stamp[t] == s->generation ? triangle_bones(m, t, set)
                                                        : m->tb_offsets[t + 1] - m->tb_offsets[t];
        tb_offsets[t] = (uint32_t)tb_total;
        tb_total += k;
        max_bones = k > max_bones ? k : max_bones;
    }
    tb_offsets[nt] = (uint32_t)tb_total;
    tb_bones = malloc((tb_total + 1) * sizeof(int32_t));
    if (!tb_bones) goto oom;
    for (uint32_t t = 0; t < nt; ++t) {
        int32_t *dst = tb_bones + tb_offsets[t];
        if (s->stamp[t] == s->generation) {
            const uint32_t k = triangle_bones(m, t, dst);
            for (uint32_t a = 0; a < k; ++a)
                for (uint32_t b = a + 1; b < k; ++b)
                    if (ssk_cor_cells_add_pair(s->cells, dst[a], dst[b]) < 0) goto oom;
        } else {
            memcpy(dst, m->tb_bones + m->tb_offsets[t], (tb_offsets[t + 1] - tb_offsets[t]) *
                                                         sizeof(int32_t));
        }
    }
    free(m->tb_offsets);
    free(m->tb_bones);
    m->tb_offsets = tb_offsets;
    m->tb_bones = tb_bones;
    tb_offsets = NULL;
    tb_bones = NULL;
    const size_t pool = (size_t)(SSK_COR_MAX_SUBDIVISION_DEPTH + 4) * (3 + max_bones);
    if (pool > s->pool) {
        double *points = realloc(s->points, pool * sizeof(double));
        if (!points) goto oom;
        s->points = points;
        s->pool = pool;
    }
    free(slot);
    return true;
oom:
    free(slot);
    free(w_offsets);
    free(w_bones);
    free(w_values);
    free(tb_offsets);
    free(tb_bones);
    return false;
}

/* The pair weights (w_j, w_k) of vertex v; false when v lacks one. */
static bool pair_weights(const ssk_cor_mesh *m, uint32_t v, int32_t j, int32_t k, double *wj,
                         double *wk)
{
    *wj = *wk = 0.0;
    for (uint32_t e = m->w_offsets[v]; e < m->w_offsets[v + 1]; ++e) {
        if (m->w_bones[e] == j) *wj = m->w_values[e];
        if (m->w_bones[e] == k) *wk = m->w_values[e];
    }
    return *wj > 0.0 && *wk > 0.0;
}

typedef struct delta_job {
    ssk_cor_state *s;
    const uint32_t *vertices;
    const float *fields;
    uint64_t padded;
    int32_t j, k;
    const uint8_t *edited;     /* #V: 1 for the edited representatives */
    uint8_t *touched;          /* #V */
} delta_job;

static void delta_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const delta_job *d = ctx;
    (void)chunk;
    for (int64_t i = begin; i < end; ++i) {
        const uint32_t v = d->vertices[i];
        if (d->edited[v]) continue;
        double wj, wk, num[3], den;
        if (!pair_weights(&d->s->m, v, d->j, d->k, &wj, &wk)) continue;
        ssk_cor_fields_sums(num, &den, d->fields, d->padded, wj, wk, d->s->params.sigma);
        double *sum = d->s->sums + 4 * (size_t)v;
        const double alpha = wj * wk;
        for (int c = 0; c < 3; ++c) sum[c] += alpha * num[c];
        sum[3] += alpha * den;
        d->touched[v] = 1;
    }
}

static int compare_changed(const void *a, const void *b)
{
    const changed_cell *x = a, *y = b;
    if (x->pair != y->pair) return x->pair < y->pair ? -1 : 1;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

ssk_status ssk_cor_state_update(ssk_cor_state *s, float *dst_centers, uint8_t *dst_flags,
                                const ssk_rig *rig, const uint32_t *rows, uint32_t count,
                                ssk_cor_stats *stats, ssk_error *err)
{
    const double start = ssk_time_seconds();
    if (!s || !dst_centers || !dst_flags || !rig || (count && !rows))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cor_state_update: NULL argument");
    if (rig->vertex_count != s->nv || rig->bone_count != s->m.bone_count)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "centers of rotation update: the rig has %u vertices and %u bones, "
                             "the state was made for %u and %u",
                             rig->vertex_count, rig->bone_count, s->nv, s->m.bone_count);
    for (uint32_t i = 0; i < count; ++i)
        if (rows[i] >= s->nv)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "centers of rotation update: row %u of %u is out of range",
                                 rows[i], s->nv);
    ssk_cor_stats local = {0};
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->vertex_count = s->nv;
    /* the new weights of the edited representatives (sparse, normalized:
     * as mesh_from_rig reads them) */
    uint8_t *edited = calloc((size_t)s->nv + 1, 1), *touched = calloc((size_t)s->nv + 1, 1);
    update_ctx u = {.s = s};
    uint32_t *edited_list = malloc(((size_t)count + 1) * sizeof(uint32_t));
    uint32_t *new_offsets = malloc(((size_t)count + 2) * sizeof(uint32_t));
    int32_t *new_bones = malloc(((size_t)count * SSK_MAX_INFLUENCES + 1) * sizeof(int32_t));
    float *new_values = malloc(((size_t)count * SSK_MAX_INFLUENCES + 1) * sizeof(float));
    uint32_t edited_count = 0;
    ssk_status st = SSK_OK;
    bool sets_changed = false;
    if (!edited || !touched || !edited_list || !new_offsets || !new_bones || !new_values)
        goto oom;
    ssk_cor_mesh scratch = {0};
    scratch.bone_count = s->m.bone_count;
    scratch.w_offsets = new_offsets;
    scratch.w_bones = new_bones;
    scratch.w_values = new_values;
    new_offsets[0] = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t v = s->weld_point[rows[i]];
        if (edited[v]) continue;
        uint32_t mi = 0;
        while (mi + 1 < rig->mesh_count && rig->meshes[mi + 1].first_vertex <= v) ++mi;
        const ssk_mesh *mesh = &rig->meshes[mi];
        const uint32_t local_v = v - mesh->first_vertex, k = mesh->influence_count;
        const uint32_t n = edited_count;
        if (k == 0) {
            new_offsets[n + 1] = new_offsets[n];
        } else {
            st = append_weights(&scratch, n, 1, mesh->bone_indices + (size_t)local_v * k,
                                mesh->weights + (size_t)local_v * k, k, false, err);
            if (st != SSK_OK) goto done;
        }
        const uint32_t e0 = s->m.w_offsets[v], kp = s->m.w_offsets[v + 1] - e0;
        const uint32_t kn = new_offsets[n + 1] - new_offsets[n];
        if (kn != kp ||
            memcmp(new_bones + new_offsets[n], s->m.w_bones + e0, kp * sizeof(int32_t)) != 0)
            sets_changed = true;
        edited[v] = 1;
        edited_list[edited_count++] = v;
    }
    /* the triangles around them: old leaves out (with their old bone sets) */
    if (++s->generation == 0) {
        memset(s->stamp, 0, (size_t)s->m.triangle_count * sizeof(uint32_t));
        s->generation = 1;
    }
    for (uint32_t i = 0; i < edited_count; ++i) {
        const uint32_t v = edited_list[i];
        for (uint32_t e = s->m.vt_offsets[v]; e < s->m.vt_offsets[v + 1]; ++e) {
            const uint32_t t = s->m.vt_triangles[e];
            if (s->stamp[t] == s->generation) continue;
            s->stamp[t] = s->generation;
            const float *geo, *lw;
            const uint32_t n = current_leaves(s, t, &geo, &lw);
            if (!apply_leaves(&u, t, geo, lw, n, -1.0)) goto oom;
        }
    }
    /* the new weights; a vertex that gained or lost a bone changes its
     * triangles' bone sets (and may make new bone pairs) */
    if (!sets_changed) {
        for (uint32_t i = 0; i < edited_count; ++i)
            memcpy(s->m.w_values + s->m.w_offsets[edited_list[i]], new_values + new_offsets[i],
                   (new_offsets[i + 1] - new_offsets[i]) * sizeof(float));
    } else if (!replace_bone_sets(s, edited_list, edited_count, new_offsets, new_bones,
                                  new_values)) {
        goto oom;
    }
    /* new leaves in */
    for (uint32_t i = 0; i < edited_count; ++i) {
        const uint32_t v = edited_list[i];
        for (uint32_t e = s->m.vt_offsets[v]; e < s->m.vt_offsets[v + 1]; ++e) {
            const uint32_t t = s->m.vt_triangles[e];
            if (s->stamp[t] != s->generation) continue;
            s->stamp[t] = s->generation - 1; /* once */
            if (!remake_leaves(s, t)) goto oom;
            if (!apply_leaves(&u, t, s->leaf_geo[t], s->leaf_w[t], s->leaf_count[t], 1.0))
                goto oom;
        }
    }
    if (sets_changed && !build_pair_vertices(s)) goto oom;
    /* cells that lost their last leaf: exactly empty */
    for (uint32_t i = 0; i < u.count; ++i) {
        double *raw = ssk_cor_cells_raw(s->cells, u.cells[i].pair, u.cells[i].slot);
        if (!(raw[0] > 1e-9 * fabs(u.cells[i].old[0]))) memset(raw, 0, SSK_COR_MOMENTS * sizeof(double));
    }
    /* the other vertices: the differences of the changed cells, pair by pair */
    qsort(u.cells, u.count, sizeof *u.cells, compare_changed);
    double *old_raw = NULL, *new_raw = NULL;
    for (uint32_t i = 0; i < u.count;) {
        uint32_t e = i;
        while (e < u.count && u.cells[e].pair == u.cells[i].pair) ++e;
        const uint32_t p = u.cells[i].pair, n = e - i;
        old_raw = malloc((size_t)n * SSK_COR_MOMENTS * sizeof(double));
        new_raw = malloc((size_t)n * SSK_COR_MOMENTS * sizeof(double));
        if (!old_raw || !new_raw) {
            free(old_raw);
            free(new_raw);
            goto oom;
        }
        for (uint32_t c = 0; c < n; ++c) {
            memcpy(old_raw + (size_t)c * SSK_COR_MOMENTS, u.cells[i + c].old,
                   SSK_COR_MOMENTS * sizeof(double));
            memcpy(new_raw + (size_t)c * SSK_COR_MOMENTS,
                   ssk_cor_cells_raw(s->cells, p, u.cells[i + c].slot),
                   SSK_COR_MOMENTS * sizeof(double));
        }
        uint64_t padded = 0;
        float *fields = ssk_cor_delta_fields(old_raw, new_raw, n, &padded);
        free(old_raw);
        free(new_raw);
        if (!fields) goto oom;
        int32_t j, k;
        ssk_cor_cells_pair_bones(s->cells, p, &j, &k);
        const uint32_t listed = p < s->pair_list_count ? s->pair_first[p + 1] - s->pair_first[p]
                                                       : 0;
        delta_job d = {s, listed ? s->pair_vertices + s->pair_first[p] : NULL, fields, padded, j,
                       k, edited, touched};
        if (listed) ssk_parallel_for(listed, COR_VERTEX_CHUNK, delta_chunk, &d);
        free(fields);
        stats->evaluated_triangles += (uint64_t)listed * padded;
        st = ssk_cor_cells_refresh(s->cells, p, err);
        if (st != SSK_OK) goto done;
        i = e;
    }
    /* the edited vertices: integrated again in full */
    for (uint32_t i = 0; i < edited_count; ++i) {
        const uint32_t v = edited_list[i];
        const uint32_t e0 = s->m.w_offsets[v], kp = s->m.w_offsets[v + 1] - e0;
        stats->evaluated_triangles +=
            ssk_cor_cells_integrate(s->sums + 4 * (size_t)v, s->cells, s->m.w_bones + e0,
                                    s->m.w_values + e0, kp, s->params.sigma);
        touched[v] = 1;
    }
    /* the centers of what changed, and of the welded copies */
    uint32_t updated = 0;
    for (uint32_t v = 0; v < s->nv; ++v)
        if (touched[v]) {
            state_center(s, dst_centers, dst_flags, v);
            ++updated;
        }
    for (uint32_t i = 0; i < s->weld_member_count; ++i) {
        const uint32_t v = s->weld_members[i], r = s->weld_point[v];
        if (!touched[r]) continue;
        memcpy(dst_centers + 3 * (size_t)v, dst_centers + 3 * (size_t)r, 3 * sizeof(float));
        dst_flags[v] = dst_flags[r];
    }
    stats->cor_count = updated;
    stats->cluster_count = u.count;
    stats->integration_triangles = 0;
    goto done;
oom:
    st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
done:
    free(u.cells);
    free(u.keys);
    free(u.where);
    free(edited);
    free(touched);
    free(edited_list);
    free(new_offsets);
    free(new_bones);
    free(new_values);
    stats->seconds = ssk_time_seconds() - start;
    return st == SSK_OK ? ssk_error_ok(err) : st;
}
