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
 * Search (sec. 3.2, "Integration"), per vertex p with two or more bones:
 * 1. seeds: every vertex j with |w_p - w_j|_2 < omega, found through about
 *    sqrt(#V) clusters in weight space (farthest-point centers, the greedy
 *    form of the maximized minimum distance point sets the paper cites;
 *    each vertex belongs to its nearest center); a cluster whose center is
 *    at distance d from w_p and whose members lie within r of it is
 *    skipped when d - r >= omega (triangle inequality);
 * 2. breadth-first search over the input triangles (two triangles are
 *    adjacent when they share a vertex; coincident vertices are one, see
 *    ssk_rig_weld), starting from every triangle of
 *    every seed: each visited triangle's leaves are summed into Eq. 4, and
 *    the search goes on from it only when the largest normalized
 *    similarity of its leaves is at least the cutoff. The normalized
 *    similarity is s divided by sum_{j != k} w_pj w_pk, a factor of both
 *    sums of Eq. 4 (so p* is unchanged): the cutoff then means the same
 *    for every vertex (the paper gives 1e-6 without its scale);
 * 3. a vertex whose denominator is zero (one bone, or no leaf sharing two
 *    of its bones) has no CoR: flag 0, its own position as center.
 * Everything above depends on the vertex only through its weights (the
 * seeds are those near w_p, the search starts from their triangles), so
 * vertices with bit-identical weights share one computation.
 * Vertices run in parallel (chunks of 16 claimed one by one, for the load
 * balance the paper gets by shuffling); each vertex's sums run in a fixed order,
 * so the result does not depend on the thread count.
 */
#include "kernels/cor_internal.h"
#include "backends/gl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <xxhash.h>

/* exp(-x) is below 4e-18 for x above this: a leaf term that small is
 * skipped (far below any cutoff in range, and below float resolution of
 * the sums). */
#define COR_EXP_SKIP 40.0f
/* Chunk of the per-vertex search (model/parallel.h: chunks are claimed
 * one by one, so the slow vertices balance out). */
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
/* Weight space: distances and clusters.                                     */
/* ------------------------------------------------------------------------ */

/* Squared l2 distance of the sparse weights of vertices a and b. */
static float sparse_distance2(const ssk_cor_mesh *m, uint32_t a, uint32_t b)
{
    uint32_t i = m->w_offsets[a], ie = m->w_offsets[a + 1];
    uint32_t j = m->w_offsets[b], je = m->w_offsets[b + 1];
    float d = 0.0f;
    while (i < ie || j < je) {
        float x;
        if (j >= je || (i < ie && m->w_bones[i] < m->w_bones[j])) {
            x = m->w_values[i++];
        } else if (i >= ie || m->w_bones[j] < m->w_bones[i]) {
            x = m->w_values[j++];
        } else {
            x = m->w_values[i++] - m->w_values[j++];
        }
        d += x * x;
    }
    return d;
}

typedef struct clusters {
    uint32_t count;
    uint32_t *centers;        /* vertex of each center */
    float *radius;            /* largest member distance to its center */
    uint32_t *member_offsets; /* count + 1 */
    uint32_t *members;
} clusters;

static void clusters_free(clusters *c)
{
    free(c->centers);
    free(c->radius);
    free(c->member_offsets);
    free(c->members);
}

/* One farthest-point step: each weighted vertex's distance to the new
 * center, and its cluster when that center is the nearest so far. */
typedef struct nearest_job {
    const ssk_cor_mesh *m;
    float *dist;
    uint32_t *assign;
    uint32_t center, ci;
} nearest_job;

static void nearest_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const nearest_job *j = ctx;
    (void)chunk;
    const ssk_cor_mesh *m = j->m;
    for (int64_t v = begin; v < end; ++v) {
        if (m->w_offsets[v + 1] == m->w_offsets[v]) continue;
        const float d = sparse_distance2(m, (uint32_t)v, j->center);
        if (j->ci == 0 || d < j->dist[v]) {
            j->dist[v] = d;
            j->assign[v] = j->ci;
        }
    }
}

/* About sqrt(#weighted vertices) farthest-point centers over the weighted
 * vertices: the first weighted vertex, then repeatedly the vertex farthest
 * from every center so far (lowest index on ties), until the count or
 * until every vertex sits on a center. */
static ssk_status build_clusters(clusters *c, const ssk_cor_mesh *m, ssk_error *err)
{
    const uint32_t nv = m->vertex_count;
    uint32_t weighted = 0, first = UINT32_MAX;
    for (uint32_t v = 0; v < nv; ++v)
        if (m->w_offsets[v + 1] > m->w_offsets[v]) {
            if (first == UINT32_MAX) first = v;
            ++weighted;
        }
    memset(c, 0, sizeof *c);
    if (!weighted) return SSK_OK;
    const uint32_t target = (uint32_t)ceil(sqrt((double)weighted));
    c->centers = malloc(target * sizeof(uint32_t));
    c->radius = calloc(target, sizeof(float));
    c->member_offsets = calloc((size_t)target + 1, sizeof(uint32_t));
    c->members = malloc((size_t)weighted * sizeof(uint32_t));
    float *dist = malloc((size_t)nv * sizeof(float));
    uint32_t *assign = malloc((size_t)nv * sizeof(uint32_t));
    if (!c->centers || !c->radius || !c->member_offsets || !c->members || !dist || !assign) {
        free(dist);
        free(assign);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    }
    const int64_t nv64 = nv;
    uint32_t center = first;
    for (;;) {
        const uint32_t ci = c->count++;
        c->centers[ci] = center;
        nearest_job nj = {m, dist, assign, center, ci};
        ssk_parallel_for(nv64, COR_VERTEX_CHUNK, nearest_chunk, &nj);
        if (c->count == target) break;
        float best = 0.0f;
        uint32_t best_v = UINT32_MAX;
        for (uint32_t v = 0; v < nv; ++v)
            if (m->w_offsets[v + 1] > m->w_offsets[v] && dist[v] > best) {
                best = dist[v];
                best_v = v;
            }
        if (best_v == UINT32_MAX) break; /* every vertex is on a center */
        center = best_v;
    }
    for (uint32_t v = 0; v < nv; ++v)
        if (m->w_offsets[v + 1] > m->w_offsets[v]) {
            c->member_offsets[assign[v] + 1]++;
            const float r = sqrtf(dist[v]);
            if (r > c->radius[assign[v]]) c->radius[assign[v]] = r;
        }
    for (uint32_t i = 0; i < c->count; ++i) c->member_offsets[i + 1] += c->member_offsets[i];
    uint32_t *fill = calloc(c->count + 1, sizeof(uint32_t));
    if (!fill) {
        free(dist);
        free(assign);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    }
    for (uint32_t v = 0; v < nv; ++v)
        if (m->w_offsets[v + 1] > m->w_offsets[v])
            c->members[c->member_offsets[assign[v]] + fill[assign[v]]++] = v;
    free(fill);
    free(dist);
    free(assign);
    return SSK_OK;
}

/* ------------------------------------------------------------------------ */
/* Per-vertex search and integration.                                        */
/* ------------------------------------------------------------------------ */

/* Per-thread scratch. */
typedef struct search {
    uint32_t *stamp;   /* #T: vertex + 1 that last visited the triangle */
    uint32_t *queue;   /* #T */
    uint32_t *seeds;   /* #V */
    /* the vertex's pairs matched in the current triangle */
    uint32_t *pair_i, *pair_j;
    float *pair_a;
} search;

/* The vertex being integrated: its bones and weights, and Eq. 4's sums. */
typedef struct query {
    uint32_t kp;
    const int32_t *bones;
    const float *w;
    double inv_pair_norm; /* 1 / sum_{i<j} w_i w_j */
    float inv_sigma2;
    double sum[4];        /* sum s a c (xyz), sum s a */
    uint64_t evaluated;
} query;

/* Adds the leaves of triangle t to q's sums; returns the largest
 * normalized similarity of its leaves (0 when t holds fewer than two of
 * the vertex's bones). */
static float integrate_triangle(query *q, search *s, const ssk_cor_mesh *m, uint32_t t)
{
    const uint32_t b0 = m->tb_offsets[t], nb = m->tb_offsets[t + 1] - b0;
    const int32_t *tb = m->tb_bones + b0;
    uint32_t slot_of[SSK_MAX_INFLUENCES];
    uint32_t matched[SSK_MAX_INFLUENCES];
    uint32_t nm = 0;
    for (uint32_t i = 0, j = 0; i < q->kp && j < nb;) {
        if (q->bones[i] < tb[j]) {
            ++i;
        } else if (tb[j] < q->bones[i]) {
            ++j;
        } else {
            matched[nm] = i;
            slot_of[nm++] = j;
            ++i;
            ++j;
        }
    }
    if (nm < 2) return 0.0f;
    uint32_t np = 0;
    for (uint32_t a = 0; a < nm; ++a)
        for (uint32_t b = a + 1; b < nm; ++b) {
            s->pair_i[np] = a;
            s->pair_j[np] = b;
            s->pair_a[np++] = (float)((double)q->w[matched[a]] * q->w[matched[b]] *
                                      q->inv_pair_norm);
        }
    const uint64_t l0 = m->leaf_offsets[t], l1 = m->leaf_offsets[t + 1];
    const float *lw = m->leaf_weights + m->leaf_weight_offsets[t];
    float best = 0.0f;
    for (uint64_t l = l0; l < l1; ++l, lw += nb) {
        float sim = 0.0f;
        for (uint32_t p = 0; p < np; ++p) {
            const uint32_t a = s->pair_i[p], b = s->pair_j[p];
            const float ua = lw[slot_of[a]], ub = lw[slot_of[b]];
            const float wa = q->w[matched[a]], wb = q->w[matched[b]];
            const float diff = wa * ub - wb * ua;
            const float x = diff * diff * q->inv_sigma2;
            if (x < COR_EXP_SKIP) sim += s->pair_a[p] * ua * ub * expf(-x);
        }
        if (sim > 0.0f) {
            const float *g = m->leaf_geometry + 4 * l;
            const double sa = (double)sim * g[3];
            q->sum[0] += sa * g[0];
            q->sum[1] += sa * g[1];
            q->sum[2] += sa * g[2];
            q->sum[3] += sa;
            if (sim > best) best = sim;
        }
    }
    q->evaluated += l1 - l0;
    return best;
}

/* Seeds of vertex p (the vertices within omega in weight space, p itself
 * included), breadth-first search from their triangles, Eq. 4. */
static void integrate_vertex(query *q, search *s, const ssk_cor_mesh *m, const clusters *cl,
                             uint32_t p, const ssk_cor_params *params)
{
    const float omega = params->omega, omega2 = omega * omega, cutoff = params->cutoff;
    uint32_t seed_count = 0;
    for (uint32_t c = 0; c < cl->count; ++c) {
        const float dc = sqrtf(sparse_distance2(m, p, cl->centers[c]));
        if (dc - cl->radius[c] >= omega) continue;
        for (uint32_t e = cl->member_offsets[c]; e < cl->member_offsets[c + 1]; ++e) {
            const uint32_t j = cl->members[e];
            if (sparse_distance2(m, p, j) < omega2) s->seeds[seed_count++] = j;
        }
    }
    const uint32_t mark = p + 1;
    uint32_t head = 0, tail = 0;
    for (uint32_t k = 0; k < seed_count; ++k) {
        const uint32_t j = s->seeds[k];
        for (uint32_t e = m->vt_offsets[j]; e < m->vt_offsets[j + 1]; ++e) {
            const uint32_t t = m->vt_triangles[e];
            if (s->stamp[t] == mark) continue;
            s->stamp[t] = mark;
            if (integrate_triangle(q, s, m, t) >= cutoff) s->queue[tail++] = t;
        }
    }
    while (head < tail) {
        const uint32_t t = s->queue[head++];
        for (int k = 0; k < 3; ++k) {
            const uint32_t v = (uint32_t)m->triangles[3 * (size_t)t + k];
            for (uint32_t e = m->vt_offsets[v]; e < m->vt_offsets[v + 1]; ++e) {
                const uint32_t n = m->vt_triangles[e];
                if (s->stamp[n] == mark) continue;
                s->stamp[n] = mark;
                if (integrate_triangle(q, s, m, n) >= cutoff) s->queue[tail++] = n;
            }
        }
    }
}

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

/* One search loop: per-thread scratch (slots of model/parallel.h) made on
 * first use, and the per-vertex results. */
typedef struct search_job {
    const ssk_cor_mesh *m;
    const clusters *cl;
    const ssk_cor_params *params;
    const uint32_t *reps, *rep_of;
    float *dst_centers, inv_sigma2;
    uint8_t *dst_flags;
    size_t max_pairs;
    search *slots;       /* #slot_count */
    uint32_t slot_count;
    atomic_int oom;
    _Atomic uint64_t evaluated;
    atomic_uint cor_count;
} search_job;

static void search_free(search *s)
{
    free(s->stamp);
    free(s->queue);
    free(s->seeds);
    free(s->pair_i);
    free(s->pair_j);
    free(s->pair_a);
    memset(s, 0, sizeof *s);
}

static bool search_alloc(search *s, const ssk_cor_mesh *m, size_t max_pairs)
{
    s->stamp = calloc((size_t)m->triangle_count + 1, sizeof(uint32_t));
    s->queue = malloc(((size_t)m->triangle_count + 1) * sizeof(uint32_t));
    s->seeds = malloc(((size_t)m->vertex_count + 1) * sizeof(uint32_t));
    s->pair_i = malloc(max_pairs * sizeof(uint32_t));
    s->pair_j = malloc(max_pairs * sizeof(uint32_t));
    s->pair_a = malloc(max_pairs * sizeof(float));
    if (s->stamp && s->queue && s->seeds && s->pair_i && s->pair_j && s->pair_a) return true;
    search_free(s);
    return false;
}

static void search_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    search_job *j = ctx;
    (void)chunk;
    const ssk_cor_mesh *m = j->m;
    const uint32_t slot = ssk_parallel_slot();
    search own = {0};
    search *s = slot < j->slot_count ? &j->slots[slot] : &own;
    const bool ok = s->stamp || search_alloc(s, m, j->max_pairs);
    if (!ok) atomic_store(&j->oom, 1);
    uint64_t evaluated = 0;
    for (int64_t r = begin; r < end; ++r) {
        const uint32_t v = j->reps[r];
        const uint32_t e0 = m->w_offsets[v], kp = m->w_offsets[v + 1] - e0;
        query q = {0};
        if (ok) {
            q.kp = kp;
            q.bones = m->w_bones + e0;
            q.w = m->w_values + e0;
            double norm = 0.0;
            for (uint32_t i = 0; i < kp; ++i)
                for (uint32_t k = i + 1; k < kp; ++k) norm += (double)q.w[i] * q.w[k];
            q.inv_pair_norm = norm > 0.0 ? 1.0 / norm : 0.0;
            q.inv_sigma2 = j->inv_sigma2;
            if (norm > 0.0) integrate_vertex(&q, s, m, j->cl, (uint32_t)v, j->params);
        }
        j->dst_flags[v] = finish_center(j->dst_centers + 3 * (size_t)v, q.sum,
                                        m->positions + 3 * (size_t)v);
        evaluated += q.evaluated;
    }
    atomic_fetch_add(&j->evaluated, evaluated);
    search_free(&own);
}

/* The other vertices of each group, and those without two bones. */
static void spread_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    search_job *j = ctx;
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

/* The CPU search over every vertex of m. */
static ssk_status search_all(float *dst_centers, uint8_t *dst_flags, const ssk_cor_mesh *m,
                             const ssk_cor_params *params, ssk_cor_stats *stats,
                             ssk_error *err)
{
    clusters cl;
    ssk_status st = build_clusters(&cl, m, err);
    if (st != SSK_OK) {
        clusters_free(&cl);
        return st;
    }
    uint32_t kmax = 0;
    for (uint32_t v = 0; v < m->vertex_count; ++v) {
        const uint32_t k = m->w_offsets[v + 1] - m->w_offsets[v];
        if (k > kmax) kmax = k;
    }
    const size_t max_pairs = (size_t)kmax * (kmax > 0 ? kmax - 1 : 0) / 2 + 1;
    uint32_t *reps = malloc(((size_t)m->vertex_count + 1) * sizeof(uint32_t));
    uint32_t *rep_of = malloc(((size_t)m->vertex_count + 1) * sizeof(uint32_t));
    uint32_t rep_count = 0;
    st = reps && rep_of ? group_weights(reps, &rep_count, rep_of, m, err)
                        : ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                        "centers of rotation: out of memory");
    if (st != SSK_OK) {
        free(reps);
        free(rep_of);
        clusters_free(&cl);
        return st;
    }
    search_job j = {.m = m,
                    .cl = &cl,
                    .params = params,
                    .reps = reps,
                    .rep_of = rep_of,
                    .dst_centers = dst_centers,
                    .inv_sigma2 = 1.0f / (params->sigma * params->sigma),
                    .dst_flags = dst_flags,
                    .max_pairs = max_pairs};
    atomic_init(&j.oom, 0);
    atomic_init(&j.evaluated, 0);
    atomic_init(&j.cor_count, 0u);
    j.slot_count = ssk_parallel_threads();
    j.slots = calloc(j.slot_count, sizeof *j.slots);
    if (!j.slots) {
        free(reps);
        free(rep_of);
        clusters_free(&cl);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    }
    /* each rep's center depends on the rep only: the same bits whichever
     * thread runs it */
    ssk_parallel_for(rep_count, COR_SCHEDULE_CHUNK, search_chunk, &j);
    for (uint32_t i = 0; i < j.slot_count; ++i) search_free(&j.slots[i]);
    free(j.slots);
    ssk_parallel_for(m->vertex_count, COR_VERTEX_CHUNK, spread_chunk, &j);
    const uint64_t evaluated = atomic_load(&j.evaluated);
    const uint32_t cor_count = atomic_load(&j.cor_count);
    const int oom = atomic_load(&j.oom);
    free(reps);
    free(rep_of);
    if (stats) {
        stats->cluster_count = cl.count;
        stats->evaluated_triangles = evaluated;
        stats->cor_count = cor_count;
    }
    clusters_free(&cl);
    if (oom) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    return SSK_OK;
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

/* Leaves, then the CPU search or the GL integration; fills stats. */
static ssk_status run(float *dst_centers, uint8_t *dst_flags, ssk_cor_mesh *m,
                      const ssk_cor_params *params, bool use_gl, ssk_gl_context *gl,
                      ssk_cor_stats *stats, ssk_error *err)
{
    ssk_status st = build_vertex_triangles(m, err);
    if (st == SSK_OK) st = build_leaves(m, params, err);
    if (st != SSK_OK) return st;
    stats->integration_triangles = m->leaf_offsets[m->triangle_count];
    stats->renormalized_count = m->renormalized;
    if (!use_gl) return search_all(dst_centers, dst_flags, m, params, stats, err);
    float *sums = malloc((4 * (size_t)m->vertex_count + 1) * sizeof(float));
    if (!sums) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    st = ssk_cor_gl_integrate(sums, m, params, gl, err);
    if (st == SSK_OK) {
        uint32_t count = 0;
        for (uint32_t v = 0; v < m->vertex_count; ++v) {
            const double sum[4] = {sums[4 * (size_t)v], sums[4 * (size_t)v + 1],
                                   sums[4 * (size_t)v + 2], sums[4 * (size_t)v + 3]};
            dst_flags[v] = finish_center(dst_centers + 3 * (size_t)v, sum,
                                         m->positions + 3 * (size_t)v);
            count += dst_flags[v];
        }
        stats->cor_count = count;
    }
    free(sums);
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
    if (st == SSK_OK) st = build_vertex_triangles(&m, err);
    if (st == SSK_OK) {
        for (uint32_t v = 0; v < vertex_count; ++v)
            if (m.vt_offsets[v + 1] == m.vt_offsets[v]) {
                st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                   "centers of rotation: vertex %u is isolated: it is in none "
                                   "of the %u triangles",
                                   v, triangle_count);
                break;
            }
        free(m.vt_offsets);
        free(m.vt_triangles);
        m.vt_offsets = NULL;
        m.vt_triangles = NULL;
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
    /* isolated vertices of meshes with triangles */
    for (uint32_t mi = 0; mi < rig->mesh_count; ++mi) {
        const ssk_mesh *mesh = &rig->meshes[mi];
        if (mesh->triangle_count == 0) continue;
        for (uint32_t v = 0; v < mesh->vertex_count; ++v)
            if (mesh->vertex_triangle_offsets[v + 1] == mesh->vertex_triangle_offsets[v])
                return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                     "centers of rotation: mesh '%s' vertex %u is isolated: it "
                                     "is in none of the mesh's %u triangles",
                                     mesh->name, v, mesh->triangle_count);
    }
    ssk_cor_stats local = {0};
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->vertex_count = rig->vertex_count;
    uint32_t nt = 0;
    size_t slots = 0;
    for (uint32_t mi = 0; mi < rig->mesh_count; ++mi) {
        nt += rig->meshes[mi].triangle_count;
        slots += (size_t)rig->meshes[mi].vertex_count * rig->meshes[mi].influence_count;
    }
    ssk_cor_mesh m = {0};
    m.bone_count = rig->bone_count;
    st = mesh_arrays(&m, rig->vertex_count, nt, slots, err);
    uint32_t first_triangle = 0;
    for (uint32_t mi = 0; st == SSK_OK && mi < rig->mesh_count; ++mi) {
        const ssk_mesh *mesh = &rig->meshes[mi];
        const uint32_t v0 = mesh->first_vertex;
        for (uint32_t v = 0; v < mesh->vertex_count; ++v)
            ssk_mat4_transform_point(m.positions + 3 * ((size_t)v0 + v), mesh->object_matrix,
                                     mesh->positions + 3 * (size_t)v);
        /* Welded (weld.c): a triangle names the representatives of its
         * corners, so the search crosses UV seams and shared mesh borders. */
        for (size_t i = 0; i < 3 * (size_t)mesh->triangle_count; ++i)
            m.triangles[3 * (size_t)first_triangle + i] =
                (int32_t)rig->weld.point[(uint32_t)mesh->triangles[i] + v0];
        first_triangle += mesh->triangle_count;
        if (mesh->influence_count && rig->bone_count) {
            st = append_weights(&m, v0, mesh->vertex_count, mesh->bone_indices, mesh->weights,
                                mesh->influence_count, false, err);
        } else {
            for (uint32_t v = 0; v < mesh->vertex_count; ++v)
                m.w_offsets[v0 + v + 1] = m.w_offsets[v0 + v];
        }
    }
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
