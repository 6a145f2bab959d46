/*
 * test_cor.c — skinning with optimized centers of rotation (Le & Hodgins
 * 2016): the precomputation (Eq. 1, 4) against an independent brute-force
 * O(#V #T) integration written here, on the CPU and on GL; the
 * curve-skeleton property of the centers (Fig. 7); the paper's claims on
 * the 2-bone limb (no candy wrapper at a 135 degree twist, less bulge than
 * DQS at a 120 degree bend, no LBS collapse); CPU against GL at runtime;
 * the lane kernel against the general one; vertices without a center
 * skinned by LBS; parameter and input errors; the binding file and its
 * cache; CoR in a deformer graph (first stage of a spring node); the CLI.
 *
 * The limb: tu_make_limb, 80 rings x 32 segments, length 2 (two bones of
 * length 1 along +Y, joint J = (0, 1, 0)), radius 0.25, weights blended
 * over half a bone length around the joint (two influences, K = 4), the
 * measures of tests/c/quality.h as test_quality.c uses them.
 */
#include "testutil.h"
#include "quality.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PI_D 3.14159265358979323846
#define RINGS 80u
#define SEGMENTS 32u
#define LENGTH 2.0f
#define RADIUS 0.25f
#define BLEND 0.5f
/* Joint region: rest |y - 1| within half the weight blend zone. */
#define JOINT_HALF_WIDTH 0.25
/* CPU and GL agree within this fraction of the bounding-box diagonal. */
#define PARITY_TOL 1e-5
/* Precomputations (accelerated, brute force, GL) agree within this
 * fraction of the diagonal. */
#define PRECOMPUTE_TOL 1e-4
/* Equal weights give equal centers, on the axis, within this fraction. */
#define AXIS_TOL 1e-5

static ssk_gl_context *gl;
static char gl_unavailable[SSK_ERROR_MESSAGE_SIZE];

static void need_gl(void)
{
    if (!gl) {
        print_message("GL test skipped: no GL context can be created: %s\n", gl_unavailable);
        skip();
    }
}

/* The limb, its centers (CPU) and flags. */
typedef struct fixture {
    ssk_rig *limb;
    ssk_mesh_view mv;
    uint32_t nv;
    float *centers;
    uint8_t *flags;
    double diag;
} fixture;

static fixture fx;

static int group_setup(void **state)
{
    (void)state;
    ssk_error err = {0};
    if (ssk_gl_context_create(&gl, &err) != SSK_OK) {
        gl = NULL;
        snprintf(gl_unavailable, sizeof gl_unavailable, "%s", err.message);
    }
    fx.limb = tu_make_limb(RINGS, SEGMENTS, 2, LENGTH, RADIUS, BLEND, 4);
    assert_int_equal(ssk_rig_mesh(fx.limb, 0, &fx.mv, NULL), SSK_OK);
    fx.nv = fx.mv.vertex_count;
    fx.centers = malloc(3 * (size_t)fx.nv * sizeof(float));
    fx.flags = malloc(fx.nv);
    ssk_cor_params params;
    ssk_cor_params_default(&params);
    ssk_cor_stats stats;
    if (ssk_cor_precompute(fx.centers, fx.flags, fx.limb, &params, SSK_BACKEND_CPU, NULL, &stats,
                           &err) != SSK_OK)
        fail_msg("ssk_cor_precompute: %s", err.message);
    fx.diag = tu_bbox_diagonal(fx.mv.positions, fx.nv);
    printf("limb: %u vertices, %u with a CoR, %llu integration triangles, %.3f s\n", fx.nv,
           stats.cor_count, (unsigned long long)stats.integration_triangles, stats.seconds);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    free(fx.centers);
    free(fx.flags);
    ssk_rig_destroy(fx.limb);
    ssk_gl_context_destroy(gl);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Brute force: Eq. 1 and 4 over every leaf for every vertex, double.        */
/* ------------------------------------------------------------------------ */

/* A mesh as plain arrays (the raw ssk_cor_compute input). */
typedef struct raw_mesh {
    uint32_t nv, nt, k, nb;
    float *pos;
    int32_t *tri;
    int32_t *idx;
    float *w;
} raw_mesh;

static void raw_free(raw_mesh *m)
{
    free(m->pos);
    free(m->tri);
    free(m->idx);
    free(m->w);
}

/* Dense weights of vertex v (#B), normalized as the core normalizes them:
 * the double quotient rounded to float. */
static void dense_weights(double *out, const raw_mesh *m, uint32_t v)
{
    double sum = 0.0;
    for (uint32_t b = 0; b < m->nb; ++b) out[b] = 0.0;
    for (uint32_t s = 0; s < m->k; ++s) {
        const float w = m->w[(size_t)v * m->k + s];
        if (w == 0.0f) continue;
        out[m->idx[(size_t)v * m->k + s]] += w;
        sum += w;
    }
    for (uint32_t b = 0; b < m->nb; ++b) out[b] = sum > 1e-4 ? (double)(float)(out[b] / sum) : 0.0;
}

/* Leaves of the documented subdivision: bisect the edge of largest l2
 * weight distance (ab, then bc, then ca on ties) at its midpoint until
 * every edge is below epsilon. Each leaf: centroid, area, mean weights. */
typedef struct leaves {
    size_t count, capacity;
    uint32_t nb;
    double *data; /* per leaf: cx, cy, cz, area, nb weights */
} leaves;

static double dist2(const double *a, const double *b, uint32_t nb)
{
    double d = 0.0;
    for (uint32_t i = 0; i < nb; ++i) d += (a[3 + i] - b[3 + i]) * (a[3 + i] - b[3 + i]);
    return d;
}

static void split(leaves *L, const double *a, const double *b, const double *c, double eps2,
                  int depth)
{
    const uint32_t nb = L->nb, stride = 3 + nb;
    const double dab = dist2(a, b, nb), dbc = dist2(b, c, nb), dca = dist2(c, a, nb);
    if ((dab < eps2 && dbc < eps2 && dca < eps2) || depth >= 32) {
        if (L->count == L->capacity) {
            L->capacity = L->capacity ? 2 * L->capacity : 1024;
            L->data = realloc(L->data, L->capacity * (4 + nb) * sizeof(double));
            assert_non_null(L->data);
        }
        double *o = L->data + L->count++ * (4 + nb);
        const double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        const double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        const double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                             e1[0] * e2[1] - e1[1] * e2[0]};
        for (int k = 0; k < 3; ++k) o[k] = (a[k] + b[k] + c[k]) / 3.0;
        o[3] = 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        for (uint32_t i = 0; i < nb; ++i) o[4 + i] = (a[3 + i] + b[3 + i] + c[3 + i]) / 3.0;
        return;
    }
    const double *p0 = a, *p1 = b, *q = c;
    double best = dab;
    if (dbc > best) p0 = b, p1 = c, q = a, best = dbc;
    if (dca > best) p0 = c, p1 = a, q = b;
    double *m = malloc(stride * sizeof(double));
    assert_non_null(m);
    for (uint32_t i = 0; i < stride; ++i) m[i] = 0.5 * (p0[i] + p1[i]);
    split(L, p0, m, q, eps2, depth + 1);
    split(L, m, p1, q, eps2, depth + 1);
    free(m);
}

/* Eq. 1 with every ordered pair j != k of every bone. */
static double similarity(const double *wp, const double *wv, uint32_t nb, double sigma)
{
    /* the terms of a bone p does not weight are 0: only p's bones (a real
     * character has 54, a vertex at most a few) */
    uint32_t bones[64], n = 0;
    for (uint32_t j = 0; j < nb && n < 64; ++j)
        if (wp[j] != 0.0) bones[n++] = j;
    double s = 0.0;
    for (uint32_t a = 0; a < n; ++a)
        for (uint32_t b = 0; b < n; ++b) {
            const uint32_t j = bones[a], k = bones[b];
            if (j == k) continue;
            const double d = wp[j] * wv[k] - wp[k] * wv[j];
            s += wp[j] * wp[k] * wv[j] * wv[k] * exp(-d * d / (sigma * sigma));
        }
    return s;
}

static void brute_force_sampled(float *centers, uint8_t *flags, const raw_mesh *m,
                                const ssk_cor_params *p, uint32_t sample);

static void brute_force(float *centers, uint8_t *flags, const raw_mesh *m,
                        const ssk_cor_params *p)
{
    brute_force_sampled(centers, flags, m, p, 1);
}

/* The brute force on every `sample`-th vertex only (the others: flag 2,
 * centers untouched). */
static void brute_force_sampled(float *centers, uint8_t *flags, const raw_mesh *m,
                                const ssk_cor_params *p, uint32_t sample)
{
    const uint32_t nb = m->nb, stride = 3 + nb;
    leaves L = {0, 0, nb, NULL};
    double *corner = malloc(3 * stride * sizeof(double));
    for (uint32_t t = 0; t < m->nt; ++t) {
        for (int c = 0; c < 3; ++c) {
            const uint32_t v = (uint32_t)m->tri[3 * t + c];
            for (int k = 0; k < 3; ++k) corner[c * stride + k] = m->pos[3 * v + k];
            dense_weights(corner + c * stride + 3, m, v);
        }
        split(&L, corner, corner + stride, corner + 2 * stride,
              (double)p->epsilon * p->epsilon, 0);
    }
    double *wp = malloc(nb * sizeof(double));
    for (uint32_t v = 0; v < m->nv; ++v) {
        if (v % sample != 0) {
            flags[v] = 2;
            continue;
        }
        dense_weights(wp, m, v);
        double num[3] = {0, 0, 0}, den = 0.0;
        for (size_t l = 0; l < L.count; ++l) {
            const double *o = L.data + l * (4 + nb);
            const double sa = similarity(wp, o + 4, nb, p->sigma) * o[3];
            for (int k = 0; k < 3; ++k) num[k] += sa * o[k];
            den += sa;
        }
        flags[v] = den > 0.0;
        for (int k = 0; k < 3; ++k)
            centers[3 * v + k] = den > 0.0 ? (float)(num[k] / den) : m->pos[3 * v + k];
    }
    free(wp);
    free(corner);
    free(L.data);
}

/* A tube along +Y: rings x segments (no caps), `bones` bones of length
 * length / bones; weights are hats of half-width `hat` bones about the
 * bone centers (so up to 3 bones blend for hat > 1), K = 4; `copies`
 * tubes side by side along X (components sharing the bones). */
static raw_mesh make_tube(uint32_t rings, uint32_t segments, uint32_t bones, float length,
                          double hat, uint32_t copies)
{
    raw_mesh m = {0};
    const uint32_t per = rings * segments, per_t = 2 * (rings - 1) * segments;
    m.nv = per * copies;
    m.nt = per_t * copies;
    m.k = 4;
    m.nb = bones;
    m.pos = malloc(3 * (size_t)m.nv * sizeof(float));
    m.tri = malloc(3 * (size_t)m.nt * sizeof(int32_t));
    m.idx = calloc((size_t)m.nv * m.k, sizeof(int32_t));
    m.w = calloc((size_t)m.nv * m.k, sizeof(float));
    const double bl = (double)length / bones;
    uint32_t f = 0;
    for (uint32_t c = 0; c < copies; ++c) {
        const uint32_t v0 = c * per;
        for (uint32_t r = 0; r < rings; ++r)
            for (uint32_t s = 0; s < segments; ++s) {
                const uint32_t v = v0 + r * segments + s;
                const double a = 2 * PI_D * s / segments, y = (double)length * r / (rings - 1);
                m.pos[3 * v] = (float)(0.25 * cos(a) + 1.5 * c);
                m.pos[3 * v + 1] = (float)y;
                m.pos[3 * v + 2] = (float)(0.25 * sin(a));
                const double u = y / bl + 0.1 * sin(a); /* a tilted joint */
                uint32_t slot = 0;
                for (uint32_t b = 0; b < bones && slot < m.k; ++b) {
                    double h = 1.0 - fabs(u - (b + 0.5)) / hat;
                    if ((b == 0 && u < b + 0.5) || (b + 1 == bones && u > b + 0.5)) h = 1.0;
                    if (h <= 0.0) continue;
                    m.idx[(size_t)v * m.k + slot] = (int32_t)b;
                    m.w[(size_t)v * m.k + slot++] = (float)(h * h);
                }
            }
        for (uint32_t r = 0; r + 1 < rings; ++r)
            for (uint32_t s = 0; s < segments; ++s) {
                const int32_t a = (int32_t)(v0 + r * segments + s);
                const int32_t b = (int32_t)(v0 + r * segments + (s + 1) % segments);
                int32_t *t = m.tri + 3 * f++;
                t[0] = a, t[1] = a + (int32_t)segments, t[2] = b;
                t = m.tri + 3 * f++;
                t[0] = b, t[1] = a + (int32_t)segments, t[2] = b + (int32_t)segments;
            }
    }
    return m;
}

static double max_center_diff(const float *a, const float *b, uint32_t n)
{
    return tu_max_abs_diff(a, b, 3 * (size_t)n);
}

/* The CPU cells and GL equal the brute force on small
 * meshes: two bones; three bones blending together; two components
 * sharing the bones (the seeds reach the other component); without
 * subdivision; a wider kernel. */
static void test_accelerated_equals_brute_force(void **state)
{
    (void)state;
    struct {
        uint32_t rings, segments, bones, copies;
        double hat;
        float sigma, epsilon;
    } const cases[] = {
        {16, 10, 2, 1, 0.8, 0.1f, 0.1f},  {20, 8, 3, 1, 1.3, 0.1f, 0.1f},
        {14, 8, 2, 2, 0.8, 0.1f, 0.1f},   {16, 10, 3, 1, 1.3, 0.1f, 2.0f},
        {12, 8, 3, 1, 1.3, 0.25f, 0.05f},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        raw_mesh m = make_tube(cases[c].rings, cases[c].segments, cases[c].bones, 2.0f,
                               cases[c].hat, cases[c].copies);
        ssk_cor_params p;
        ssk_cor_params_default(&p);
        p.sigma = cases[c].sigma;
        p.epsilon = cases[c].epsilon;
        float *ref = malloc(3 * (size_t)m.nv * sizeof(float)),
              *got = malloc(3 * (size_t)m.nv * sizeof(float));
        uint8_t *ref_f = malloc(m.nv), *got_f = malloc(m.nv);
        brute_force(ref, ref_f, &m, &p);
        ssk_cor_stats stats;
        ssk_error err = {0};
        /* the tube's hats do not sum to 1: normalized with a warning */
        assert_int_equal(ssk_cor_compute(got, got_f, m.pos, m.nv, m.tri, m.nt, m.idx, m.w, m.k,
                                         m.nb, &p, &stats, &err),
                         SSK_OK);
        const double diag = tu_bbox_diagonal(m.pos, m.nv);
        uint32_t blended = 0;
        for (uint32_t v = 0; v < m.nv; ++v) {
            assert_int_equal(got_f[v], ref_f[v]);
            blended += ref_f[v];
        }
        assert_true(blended > m.nv / 8);
        const double diff = max_center_diff(got, ref, m.nv);
        printf("case %zu: %u vertices (%u with a CoR), %llu leaves, %llu evaluations of %llu "
               "(brute force): max |accelerated - brute force| = %.3g diagonal\n",
               c, m.nv, blended, (unsigned long long)stats.integration_triangles,
               (unsigned long long)stats.evaluated_triangles,
               (unsigned long long)stats.integration_triangles * blended, diff / diag);
        if (!(diff <= PRECOMPUTE_TOL * diag))
            fail_msg("case %zu: accelerated and brute force differ by %g (diagonal %g)", c, diff,
                     diag);
        /* the search really is a search: fewer evaluations than brute force
         * on the two-bone tube */
        if (c == 0)
            assert_true(stats.evaluated_triangles <
                        stats.integration_triangles * (uint64_t)blended);
        free(ref);
        free(got);
        free(ref_f);
        free(got_f);
        raw_free(&m);
    }
}

/* A real character as one raw mesh in rig space: BCN_Epileptic.X's three
 * meshes, their object matrices applied, K slots padded to the largest. */
static raw_mesh raw_from_rig(const ssk_rig *rig)
{
    raw_mesh m = {0};
    m.nb = ssk_rig_bone_count(rig);
    for (uint32_t i = 0; i < ssk_rig_mesh_count(rig); ++i) {
        ssk_mesh_view mv;
        assert_int_equal(ssk_rig_mesh(rig, i, &mv, NULL), SSK_OK);
        m.nv += mv.vertex_count;
        m.nt += mv.triangle_count;
        if (mv.influence_count > m.k) m.k = mv.influence_count;
    }
    m.pos = malloc(3 * (size_t)m.nv * sizeof(float));
    m.tri = malloc(3 * (size_t)m.nt * sizeof(int32_t));
    m.idx = calloc((size_t)m.nv * m.k, sizeof(int32_t));
    m.w = calloc((size_t)m.nv * m.k, sizeof(float));
    uint32_t v0 = 0, t0 = 0;
    for (uint32_t i = 0; i < ssk_rig_mesh_count(rig); ++i) {
        ssk_mesh_view mv;
        assert_int_equal(ssk_rig_mesh(rig, i, &mv, NULL), SSK_OK);
        const float *M = mv.object_matrix;
        for (uint32_t v = 0; v < mv.vertex_count; ++v) {
            const float *x = mv.positions + 3 * (size_t)v;
            for (int r = 0; r < 3; ++r)
                m.pos[3 * (size_t)(v0 + v) + r] =
                    M[4 * r] * x[0] + M[4 * r + 1] * x[1] + M[4 * r + 2] * x[2] + M[4 * r + 3];
            for (uint32_t s = 0; s < mv.influence_count; ++s) {
                m.idx[(size_t)(v0 + v) * m.k + s] = mv.bone_indices[(size_t)v * mv.influence_count + s];
                m.w[(size_t)(v0 + v) * m.k + s] = mv.weights[(size_t)v * mv.influence_count + s];
            }
        }
        for (uint32_t t = 0; t < 3 * mv.triangle_count; ++t)
            m.tri[3 * (size_t)t0 + t] = mv.triangles[t] + (int32_t)v0;
        v0 += mv.vertex_count;
        t0 += mv.triangle_count;
    }
    return m;
}

/* One midpoint subdivision (every triangle into 4; an edge's midpoint is
 * shared by its triangles): positions and dense weights averaged, as
 * Blender's Subdivide interpolates vertex groups. K doubles. */
typedef struct edge_ref {
    uint64_t key;     /* lower vertex << 32 | upper */
    uint32_t slot;    /* 3 t + e */
} edge_ref;

static int compare_edge(const void *a, const void *b)
{
    const edge_ref *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static raw_mesh raw_subdivide(const raw_mesh *in)
{
    raw_mesh m = {0};
    m.nb = in->nb;
    m.k = 2 * in->k;
    const size_t ne = 3 * (size_t)in->nt;
    const uint32_t max_v = in->nv + (uint32_t)ne;
    m.pos = malloc(3 * (size_t)max_v * sizeof(float));
    m.idx = calloc((size_t)max_v * m.k, sizeof(int32_t));
    m.w = calloc((size_t)max_v * m.k, sizeof(float));
    m.tri = malloc(12 * (size_t)in->nt * sizeof(int32_t));
    double *dense = malloc(2 * (size_t)in->nb * sizeof(double));
    edge_ref *edges = malloc(ne * sizeof *edges);
    uint32_t *mid = malloc(ne * sizeof(uint32_t));
    memcpy(m.pos, in->pos, 3 * (size_t)in->nv * sizeof(float));
    for (uint32_t v = 0; v < in->nv; ++v)
        for (uint32_t s = 0; s < in->k; ++s) {
            m.idx[(size_t)v * m.k + s] = in->idx[(size_t)v * in->k + s];
            m.w[(size_t)v * m.k + s] = in->w[(size_t)v * in->k + s];
        }
    m.nv = in->nv;
    for (size_t i = 0; i < ne; ++i) {
        const uint32_t t = (uint32_t)(i / 3), e = (uint32_t)(i % 3);
        const uint32_t a = (uint32_t)in->tri[3 * t + e], b = (uint32_t)in->tri[3 * t + (e + 1) % 3];
        edges[i].key = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
        edges[i].slot = (uint32_t)i;
    }
    qsort(edges, ne, sizeof *edges, compare_edge);
    for (size_t i = 0; i < ne; ++i) {
        if (i == 0 || edges[i].key != edges[i - 1].key) {
            const uint32_t a = (uint32_t)(edges[i].key >> 32), b = (uint32_t)edges[i].key;
            const uint32_t v = m.nv++;
            for (int r = 0; r < 3; ++r)
                m.pos[3 * (size_t)v + r] =
                    0.5f * (in->pos[3 * (size_t)a + r] + in->pos[3 * (size_t)b + r]);
            dense_weights(dense, in, a);
            dense_weights(dense + in->nb, in, b);
            uint32_t slot = 0;
            for (uint32_t bone = 0; bone < in->nb; ++bone) {
                const double w = 0.5 * (dense[bone] + dense[in->nb + bone]);
                if (w > 0.0 && slot < m.k) {
                    m.idx[(size_t)v * m.k + slot] = (int32_t)bone;
                    m.w[(size_t)v * m.k + slot++] = (float)w;
                }
            }
        }
        mid[edges[i].slot] = m.nv - 1;
    }
    for (uint32_t t = 0; t < in->nt; ++t) {
        const int32_t a = in->tri[3 * t], b = in->tri[3 * t + 1], c = in->tri[3 * t + 2];
        const int32_t m0 = (int32_t)mid[3 * t], m1 = (int32_t)mid[3 * t + 1],
                      m2 = (int32_t)mid[3 * t + 2];
        const int32_t four[4][3] = {{a, m0, m2}, {m0, b, m1}, {m2, m1, c}, {m0, m1, m2}};
        memcpy(m.tri + 12 * (size_t)t, four, sizeof four);
    }
    m.nt = 4 * in->nt;
    free(dense);
    free(edges);
    free(mid);
    return m;
}

/* Issue #18: the per-pair cells (core/bind/cor_cells.c) against the brute
 * force over every leaf, on a real character and on it subdivided once
 * (every 6th / 29th vertex sampled: the brute force is quadratic). */
static void test_cells_equal_brute_force_on_a_character(void **state)
{
    (void)state;
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    if (ssk_scene_import(&scene, SSK_MODELS_DIR "/X/BCN_Epileptic.X", &err) != SSK_OK)
        fail_msg("import: %s", err.message);
    raw_mesh base = raw_from_rig(ssk_scene_rig(scene));
    raw_mesh meshes[2] = {base, raw_subdivide(&base)};
    const uint32_t sample[2] = {6, 29};
    ssk_cor_params p;
    ssk_cor_params_default(&p);
    for (int k = 0; k < 2; ++k) {
        const raw_mesh *m = &meshes[k];
        float *ref = malloc(3 * (size_t)m->nv * sizeof(float)),
              *got = malloc(3 * (size_t)m->nv * sizeof(float));
        uint8_t *ref_f = malloc(m->nv), *got_f = malloc(m->nv);
        ssk_cor_stats stats;
        if (ssk_cor_compute(got, got_f, m->pos, m->nv, m->tri, m->nt, m->idx, m->w, m->k, m->nb,
                            &p, &stats, &err) != SSK_OK)
            fail_msg("ssk_cor_compute: %s", err.message);
        brute_force_sampled(ref, ref_f, m, &p, sample[k]);
        const double diag = tu_bbox_diagonal(m->pos, m->nv);
        double worst = 0.0;
        uint32_t compared = 0, with_cor = 0;
        for (uint32_t v = 0; v < m->nv; v += sample[k]) {
            assert_int_equal(got_f[v], ref_f[v]);
            ++compared;
            with_cor += ref_f[v];
            for (int c = 0; c < 3; ++c)
                worst = fmax(worst, fabs((double)got[3 * v + c] - ref[3 * v + c]));
        }
        printf("BCN_Epileptic.X%s: %u vertices, %llu leaves, %u compared (%u with a CoR), %.3f "
               "s: max |cells - brute force| = %.3g diagonal\n",
               k ? " subdivided" : "", m->nv, (unsigned long long)stats.integration_triangles,
               compared, with_cor, stats.seconds, worst / diag);
        assert_true(with_cor > compared / 4);
        if (!(worst <= PRECOMPUTE_TOL * diag))
            fail_msg("%s: cells and brute force differ by %g of the diagonal",
                     k ? "subdivided" : "base", worst / diag);
        free(ref);
        free(got);
        free(ref_f);
        free(got_f);
    }
    raw_free(&meshes[0]);
    raw_free(&meshes[1]);
    ssk_scene_destroy(scene);
}

/* Issue #18's progress: on the calling thread, never decreasing, ending at
 * SSK_COR_PROGRESS; the centers are the same with or without it. */
typedef struct progress_log {
    pthread_t caller;
    uint32_t calls, last, total, wrong_thread, decreased;
} progress_log;

static void log_progress(void *user, uint32_t done, uint32_t total)
{
    progress_log *p = user;
    p->wrong_thread += !pthread_equal(pthread_self(), p->caller);
    p->decreased += done < p->last;
    p->last = done;
    p->total = total;
    ++p->calls;
}

static void test_progress_is_reported_on_the_calling_thread(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(120, 40, 4, LENGTH, RADIUS, BLEND, 4);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    float *a = malloc(3 * (size_t)nv * sizeof(float)), *b = malloc(3 * (size_t)nv * sizeof(float));
    uint8_t *fa = malloc(nv), *fb = malloc(nv);
    ssk_cor_params p;
    ssk_cor_params_default(&p);
    ssk_error err = {0};
    assert_int_equal(ssk_cor_precompute(a, fa, rig, &p, SSK_BACKEND_CPU, NULL, NULL, &err), SSK_OK);
    progress_log log = {pthread_self(), 0, 0, 0, 0, 0};
    p.progress = log_progress;
    p.progress_user = &log;
    assert_int_equal(ssk_cor_precompute(b, fb, rig, &p, SSK_BACKEND_CPU, NULL, NULL, &err), SSK_OK);
    printf("progress: %u calls, last %u of %u\n", log.calls, log.last, log.total);
    assert_true(log.calls >= 3);
    assert_int_equal(log.total, SSK_COR_PROGRESS);
    assert_int_equal(log.last, SSK_COR_PROGRESS);
    assert_int_equal(log.wrong_thread, 0);
    assert_int_equal(log.decreased, 0);
    assert_memory_equal(a, b, 3 * (size_t)nv * sizeof(float));
    assert_memory_equal(fa, fb, nv);
    free(a);
    free(b);
    free(fa);
    free(fb);
    ssk_rig_destroy(rig);
}

/* A copy of `rig` (one mesh) whose weights go through edit(v, bones,
 * weights, K) first. */
typedef void (*weight_edit)(uint32_t v, int32_t *bones, float *weights, uint32_t k);

static ssk_rig *rig_with_weights(const ssk_rig *rig, weight_edit edit)
{
    const uint32_t nb = ssk_rig_bone_count(rig);
    int32_t *parents = malloc(nb * sizeof(int32_t));
    float *bind = malloc(16 * (size_t)nb * sizeof(float)), *heads = malloc(3 * (size_t)nb * sizeof(float)),
          *tails = malloc(3 * (size_t)nb * sizeof(float));
    for (uint32_t b = 0; b < nb; ++b) {
        ssk_bone_view bv;
        assert_int_equal(ssk_rig_bone(rig, b, &bv, NULL), SSK_OK);
        parents[b] = bv.parent;
        memcpy(bind + 16 * (size_t)b, bv.bind_matrix, 16 * sizeof(float));
        memcpy(heads + 3 * (size_t)b, bv.head, 3 * sizeof(float));
        memcpy(tails + 3 * (size_t)b, bv.tail, 3 * sizeof(float));
    }
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    const size_t slots = (size_t)mv.vertex_count * mv.influence_count;
    int32_t *bones = malloc(slots * sizeof(int32_t));
    float *weights = malloc(slots * sizeof(float));
    memcpy(bones, mv.bone_indices, slots * sizeof(int32_t));
    memcpy(weights, mv.weights, slots * sizeof(float));
    for (uint32_t v = 0; v < mv.vertex_count; ++v)
        edit(v, bones + (size_t)v * mv.influence_count, weights + (size_t)v * mv.influence_count,
             mv.influence_count);
    ssk_skeleton_desc sk = {nb, NULL, parents, bind, heads, tails};
    ssk_mesh_desc md = {"edited", mv.vertex_count, mv.positions, mv.triangle_count,
                        mv.triangles, mv.influence_count, bones, weights, mv.object_matrix, NULL};
    ssk_rig *out = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&out, &sk, &md, 1, &err) != SSK_OK) fail_msg("rig: %s", err.message);
    free(parents);
    free(bind);
    free(heads);
    free(tails);
    free(bones);
    free(weights);
    return out;
}

/* The rows an edit changes: 10 vertices of the limb's joint region (every
 * 7th vertex weighting two bones, from the first; set by the test). */
#define EDITED 10u
/* Two sets of edited rows (blended vertices, interleaved); the edits below
 * change the rows of set edit_set. */
static uint32_t edit_rows[2][EDITED];
static int edit_set;

static bool is_edited(uint32_t v)
{
    for (uint32_t i = 0; i < EDITED; ++i)
        if (edit_rows[edit_set][i] == v) return true;
    return false;
}

/* A painter's stroke: the first two weights of the edited vertices move by
 * 0.15 toward each other (bone sets unchanged). */
static void stroke(uint32_t v, int32_t *bones, float *w, uint32_t k)
{
    (void)bones;
    if (!is_edited(v) || k < 2 || !(w[0] > 0.0f && w[1] > 0.0f)) return;
    const float d = 0.15f * (w[0] > w[1] ? w[0] - w[1] : w[1] - w[0]);
    if (w[0] > w[1]) {
        w[0] -= d;
        w[1] += d;
    } else {
        w[0] += d;
        w[1] -= d;
    }
}

/* A second stroke on the same vertices, the other way. */
static void stroke_back(uint32_t v, int32_t *bones, float *w, uint32_t k)
{
    (void)bones;
    if (!is_edited(v) || k < 2 || !(w[0] > 0.0f && w[1] > 0.0f)) return;
    const float d = 0.05f * (w[0] + w[1]);
    if (w[0] > d) {
        w[0] -= d;
        w[1] += d;
    }
}

/* A bone added to the edited vertices: their triangles' bone sets change,
 * and with them the pairs (new pairs (0, 2) and (1, 2) where no triangle
 * held both bones). */
static void add_bone(uint32_t v, int32_t *bones, float *w, uint32_t k)
{
    if (!is_edited(v)) return;
    for (uint32_t s = 0; s < k; ++s)
        if (w[s] == 0.0f) {
            bones[s] = 2;
            w[s] = 0.2f;
            return;
        }
}

/* The bone add_bone added, taken away (the sets shrink back). */
static void drop_added(uint32_t v, int32_t *bones, float *w, uint32_t k)
{
    if (!is_edited(v)) return;
    for (uint32_t s = 2; s < k; ++s)
        if (bones[s] == 2) w[s] = 0.0f;
}

/* Issue #18's incremental update: after a weight edit of 10 vertices it
 * equals a full precomputation of the edited rig (within 1e-5 of the
 * diagonal), through two strokes in a row and through a bone-set change
 * (done in full). */
static void test_incremental_update_equals_a_full_precomputation(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(60, 40, 3, LENGTH, RADIUS, 0.5f, 4);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    {
        ssk_mesh_view m0;
        ssk_rig_mesh(rig, 0, &m0, NULL);
        uint32_t found = 0, blended = 0, other = 0;
        for (uint32_t v = 0; v < nv && (found < EDITED || other < EDITED); ++v) {
            const float *w = m0.weights + (size_t)v * m0.influence_count;
            if (!(w[0] > 0.05f && w[1] > 0.05f)) continue;
            const uint32_t b = blended++;
            if (b % 7 == 0 && found < EDITED) edit_rows[0][found++] = v;
            if (b % 7 == 3 && other < EDITED) edit_rows[1][other++] = v;
        }
        assert_int_equal(found, EDITED);
        assert_int_equal(other, EDITED);
    }
    float *centers = malloc(3 * (size_t)nv * sizeof(float)), *ref = malloc(3 * (size_t)nv * sizeof(float));
    uint8_t *flags = malloc(nv), *ref_flags = malloc(nv);
    ssk_cor_params p;
    ssk_cor_params_default(&p);
    ssk_error err = {0};
    ssk_cor_state *st = NULL;
    ssk_cor_stats full_stats, update_stats;
    assert_int_equal(ssk_cor_state_create(&st, centers, flags, rig, &p, &full_stats, &err), SSK_OK);
    assert_int_equal(ssk_cor_precompute(ref, ref_flags, rig, &p, SSK_BACKEND_CPU, NULL, NULL, &err),
                     SSK_OK);
    ssk_mesh_view mv;
    ssk_rig_mesh(rig, 0, &mv, NULL);
    const double diag = tu_bbox_diagonal(mv.positions, nv);
    assert_true(tu_max_abs_diff(centers, ref, 3 * (size_t)nv) <= 1e-5 * diag);
    /* on rows A: weights only, twice; a bone added (new pairs); then on rows
     * B the same bone added (the A rows, not edited now, take the changed
     * cells of the new pairs: their pair lists were made again); on A:
     * weights only with the new sets; the bone taken away; on B: weights
     * only */
    const struct {
        weight_edit edit;
        int set;
    } edits[7] = {{stroke, 0},     {stroke_back, 0}, {add_bone, 0},   {add_bone, 1},
                  {stroke, 0},     {drop_added, 0},  {stroke_back, 1}};
    ssk_rig *edited = NULL;
    const ssk_rig *current = rig;
    for (int e = 0; e < 7; ++e) {
        edit_set = edits[e].set;
        ssk_rig *next = rig_with_weights(current, edits[e].edit);
        assert_int_equal(ssk_cor_state_update(st, centers, flags, next, edit_rows[edit_set], EDITED,
                                              &update_stats, &err),
                         SSK_OK);
        assert_int_equal(ssk_cor_precompute(ref, ref_flags, next, &p, SSK_BACKEND_CPU, NULL,
                                            &full_stats, &err),
                         SSK_OK);
        const double diff = tu_max_abs_diff(centers, ref, 3 * (size_t)nv);
        printf("edit %d: %u centers updated, %u cells changed, %.4f s (full %.4f s): max "
               "|update - full| = %.3g diagonal\n",
               e, update_stats.cor_count, update_stats.cluster_count, update_stats.seconds,
               full_stats.seconds, diff / diag);
        assert_memory_equal(flags, ref_flags, nv);
        if (!(diff <= 1e-5 * diag)) fail_msg("edit %d: update and full differ by %g", e, diff / diag);
        ssk_rig_destroy(edited);
        edited = next;
        current = next;
    }
    ssk_rig_destroy(edited);
    ssk_cor_state_destroy(st);
    /* errors */
    ssk_cor_state_destroy(NULL);
    assert_int_equal(ssk_cor_state_create(NULL, centers, flags, rig, &p, NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    free(centers);
    free(ref);
    free(flags);
    free(ref_flags);
    ssk_rig_destroy(rig);
}

/* GL (the same cells, the sums on the GPU) equals the CPU (limb, and a rig of two
 * meshes with object matrices: rig space). */
static void test_gl_precompute_matches_cpu(void **state)
{
    (void)state;
    need_gl();
    ssk_cor_params p;
    ssk_cor_params_default(&p);
    float *c = malloc(3 * (size_t)fx.nv * sizeof(float));
    uint8_t *f = malloc(fx.nv);
    ssk_cor_stats stats;
    ssk_error err = {0};
    if (ssk_cor_precompute(c, f, fx.limb, &p, SSK_BACKEND_GL, gl, &stats, &err) != SSK_OK)
        fail_msg("%s", err.message);
    assert_memory_equal(f, fx.flags, fx.nv);
    const double diff = max_center_diff(c, fx.centers, fx.nv);
    printf("limb: max |GL - CPU| = %.3g diagonal\n", diff / fx.diag);
    assert_true(diff <= PRECOMPUTE_TOL * fx.diag);
    free(c);
    free(f);

    /* two meshes (two tubes), the second moved by its object matrix */
    raw_mesh m = make_tube(12, 8, 3, 2.0f, 1.3, 2);
    const uint32_t half = m.nv / 2, half_t = m.nt / 2;
    int32_t *tri2 = malloc(3 * (size_t)half_t * sizeof(int32_t));
    for (size_t i = 0; i < 3 * (size_t)half_t; ++i) tri2[i] = m.tri[3 * (size_t)half_t + i] - (int32_t)half;
    float *pos2 = malloc(3 * (size_t)half * sizeof(float));
    for (uint32_t v = 0; v < half; ++v) {
        pos2[3 * v] = m.pos[3 * (half + v)] - 1.5f; /* back to the origin... */
        pos2[3 * v + 1] = m.pos[3 * (half + v) + 1];
        pos2[3 * v + 2] = m.pos[3 * (half + v) + 2];
    }
    float object[16];
    tu_mat4_translation(object, 1.5f, 0.0f, 0.0f); /* ...and moved by the object matrix */
    int32_t parents[3] = {-1, 0, 1};
    float bind[48];
    for (int b = 0; b < 3; ++b) tu_mat4_translation(bind + 16 * b, 0, 2.0f / 3 * b, 0);
    ssk_skeleton_desc sk = {3, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md[2] = {{"a", half, m.pos, half_t, m.tri, m.k, m.idx, m.w, NULL},
                           {"b", half, pos2, half_t, tri2, m.k, m.idx + (size_t)half * m.k,
                            m.w + (size_t)half * m.k, object}};
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &sk, md, 2, &err), SSK_OK);
    float *cc = malloc(3 * (size_t)m.nv * sizeof(float)), *cg = malloc(3 * (size_t)m.nv * sizeof(float));
    float *ref = malloc(3 * (size_t)m.nv * sizeof(float));
    uint8_t *fc = malloc(m.nv), *fg = malloc(m.nv), *fr = malloc(m.nv);
    assert_int_equal(ssk_cor_precompute(cc, fc, rig, &p, SSK_BACKEND_CPU, NULL, NULL, &err), SSK_OK);
    if (ssk_cor_precompute(cg, fg, rig, &p, SSK_BACKEND_GL, gl, NULL, &err) != SSK_OK)
        fail_msg("%s", err.message);
    brute_force(ref, fr, &m, &p); /* the same surface in one space */
    const double diag = tu_bbox_diagonal(m.pos, m.nv);
    assert_memory_equal(fc, fr, m.nv);
    assert_memory_equal(fg, fr, m.nv);
    const double dc = max_center_diff(cc, ref, m.nv), dg = max_center_diff(cg, ref, m.nv);
    printf("two meshes: max |CPU - brute force| = %.3g, |GL - brute force| = %.3g diagonal\n",
           dc / diag, dg / diag);
    assert_true(dc <= PRECOMPUTE_TOL * diag);
    assert_true(dg <= PRECOMPUTE_TOL * diag);
    free(cc);
    free(cg);
    free(ref);
    free(fc);
    free(fg);
    free(fr);
    free(tri2);
    free(pos2);
    ssk_rig_destroy(rig);
    raw_free(&m);
}

/* Fig. 7: the centers of vertices influenced by two bones form a curve on
 * the medial axis: on the limb, every vertex of a ring has the same weights
 * and the same center, on the bone axis (x = z = 0), and the centers move
 * up the axis with the rings; vertices of one bone have no center (their
 * own position) and flag 0. */
static void test_curve_skeleton(void **state)
{
    (void)state;
    const float *rest = fx.mv.positions, *w = fx.mv.weights;
    uint32_t rings_with = 0;
    double last_y = -1.0;
    for (uint32_t r = 0; r < RINGS; ++r) {
        const uint32_t first = r * SEGMENTS;
        const bool blended = w[4 * first] < 1.0f && w[4 * first + 1] > 0.0f;
        for (uint32_t s = 0; s < SEGMENTS; ++s) {
            const uint32_t v = first + s;
            assert_int_equal(fx.flags[v], blended ? 1 : 0);
            if (!blended) {
                assert_memory_equal(fx.centers + 3 * v, rest + 3 * v, 3 * sizeof(float));
                continue;
            }
            for (int k = 0; k < 3; ++k)
                assert_true(fabs((double)fx.centers[3 * v + k] - fx.centers[3 * first + k]) <=
                            AXIS_TOL * fx.diag);
            assert_true(fabs(fx.centers[3 * v]) <= AXIS_TOL * fx.diag);
            assert_true(fabs(fx.centers[3 * v + 2]) <= AXIS_TOL * fx.diag);
        }
        if (!blended) continue;
        ++rings_with;
        const double y = fx.centers[3 * first + 1];
        assert_true(y > last_y);
        assert_true(fabs(y - 1.0) < JOINT_HALF_WIDTH); /* near the joint */
        last_y = y;
    }
    assert_true(rings_with >= 8);
    /* the caps carry one bone */
    assert_int_equal(fx.flags[RINGS * SEGMENTS], 0);
    assert_int_equal(fx.flags[RINGS * SEGMENTS + 1], 0);
}

/* ------------------------------------------------------------------------ */
/* Runtime.                                                                  */
/* ------------------------------------------------------------------------ */

enum { M_LBS, M_DQS, M_COR_CPU, M_COR_GL, M_COUNT };

static void deform(float *dst, const ssk_rig *rig, ssk_method method, ssk_backend backend,
                   const ssk_binding *binding, const float *skin, const float *objects)
{
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = method, .backend = backend, .gl_context = gl,
                              .binding = binding};
    ssk_error err = {0};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK)
        fail_msg("ssk_deformer_create: %s", err.message);
    if (ssk_deformer_deform(d, dst, skin, objects, &err) != SSK_OK)
        fail_msg("ssk_deformer_deform: %s", err.message);
    ssk_deformer_destroy(d);
}

/* Smallest ring area ratio over the joint region, and the largest distance
 * to the posed skeleton over the rest distance (quality.h, test_quality.c). */
static void measure(double *section, double *bulge, const float *def, const float skin[32])
{
    const float *rest = fx.mv.positions;
    double child_tail[3];
    for (int r = 0; r < 3; ++r) child_tail[r] = skin[16 + 4 * r + 1] * 2.0 + skin[16 + 4 * r + 3];
    *section = INFINITY;
    for (uint32_t r = 0; r < RINGS; ++r) {
        const uint32_t first = r * SEGMENTS;
        if (fabs(rest[3 * first + 1] - 1.0) > JOINT_HALF_WIDTH) continue;
        const double ratio = q_polygon_area(def + 3 * first, SEGMENTS) /
                             q_polygon_area(rest + 3 * first, SEGMENTS);
        if (ratio < *section) *section = ratio;
    }
    *bulge = 0.0;
    const double o[3] = {0, 0, 0}, j[3] = {0, 1, 0}, rest_tail[3] = {0, 2, 0};
    for (uint32_t v = 0; v < fx.nv; ++v) {
        const float *p = rest + 3 * v, *q = def + 3 * v;
        if (fabs(p[1] - 1.0) > JOINT_HALF_WIDTH) continue;
        const double pv[3] = {p[0], p[1], p[2]}, qv[3] = {q[0], q[1], q[2]};
        const double sr = fmin(q_segment_distance(pv, o, j), q_segment_distance(pv, j, rest_tail));
        const double sd = fmin(q_segment_distance(qv, o, j), q_segment_distance(qv, j, child_tail));
        if (sr > 0.0 && sd / sr > *bulge) *bulge = sd / sr;
    }
}

/* Section and bulge of each method at a pose (the child bone turned by
 * `angle` about `axis` through J). */
static void run_pose(double section[M_COUNT], double bulge[M_COUNT], const float axis[3],
                     double angle)
{
    static const float J[3] = {0, 1, 0};
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, axis, (float)angle, J);
    float *def = malloc(3 * (size_t)fx.nv * sizeof(float));
    const ssk_method methods[M_COUNT] = {SSK_METHOD_LBS, SSK_METHOD_DQS, SSK_METHOD_COR,
                                         SSK_METHOD_COR};
    for (int m = 0; m < M_COUNT; ++m) {
        section[m] = bulge[m] = NAN;
        if (m == M_COR_GL && !gl) continue;
        deform(def, fx.limb, methods[m], m == M_COR_GL ? SSK_BACKEND_GL : SSK_BACKEND_CPU, NULL,
               skin, NULL);
        measure(&section[m], &bulge[m], def, skin);
    }
    free(def);
}

/* The candy wrapper: at a 135 degree twist LBS collapses the joint ring to
 * under 30% of its area; CoR turns each ring rigidly about its center on
 * the axis and keeps at least 90% (the paper's Fig. 2, 4, 6). */
static void test_twist_135_keeps_the_section(void **state)
{
    (void)state;
    static const float Y[3] = {0, 1, 0};
    double section[M_COUNT], bulge[M_COUNT];
    run_pose(section, bulge, Y, 3 * PI_D / 4);
    printf("twist 135: section LBS %.4f, DQS %.4f, CoR %.4f (GL %.4f)\n", section[M_LBS],
           section[M_DQS], section[M_COR_CPU], section[M_COR_GL]);
    assert_true(section[M_LBS] < 0.3);
    assert_true(section[M_COR_CPU] >= 0.9);
    if (gl) assert_true(section[M_COR_GL] >= 0.9);
}

/* The bulge: at a 120 degree bend DQS swings the joint's outer side away
 * from the bones (every vertex turns about J); CoR's centers follow the
 * bones, so its bulge is smaller, and its cross-section stays above LBS's
 * (which flattens the elbow). */
static void test_bend_120_less_bulge_than_dqs(void **state)
{
    (void)state;
    static const float Z[3] = {0, 0, 1};
    double section[M_COUNT], bulge[M_COUNT];
    run_pose(section, bulge, Z, 2 * PI_D / 3);
    printf("bend 120: bulge LBS %.4f, DQS %.4f, CoR %.4f (GL %.4f); section LBS %.4f, CoR %.4f\n",
           bulge[M_LBS], bulge[M_DQS], bulge[M_COR_CPU], bulge[M_COR_GL], section[M_LBS],
           section[M_COR_CPU]);
    assert_true(bulge[M_COR_CPU] < bulge[M_DQS]);
    assert_true(section[M_COR_CPU] > section[M_LBS]);
    assert_true(bulge[M_DQS] > 1.05); /* the measure does see DQS's bulge */
    if (gl) {
        assert_true(bulge[M_COR_GL] < bulge[M_DQS]);
        assert_true(section[M_COR_GL] > section[M_LBS]);
    }
}

/* A rig of two meshes (object matrices: a translation and a rotation with a
 * uniform scale) with three bones, one of them scaled, 3 influences. */
static ssk_rig *make_scaled_rig(void)
{
    raw_mesh m = make_tube(24, 12, 3, 2.0f, 1.3, 2);
    const uint32_t half = m.nv / 2, half_t = m.nt / 2;
    int32_t *tri2 = malloc(3 * (size_t)half_t * sizeof(int32_t));
    for (size_t i = 0; i < 3 * (size_t)half_t; ++i)
        tri2[i] = m.tri[3 * (size_t)half_t + i] - (int32_t)half;
    float o1[16], o2[16], rot[16], sc[16];
    static const float axis[3] = {0, 0, 1}, origin[3] = {0, 0, 0};
    tu_mat4_translation(o1, 0.0f, 0.3f, 0.0f);
    tu_mat4_rotation(rot, axis, 0.4f, origin);
    tu_mat4_scale(sc, 1.2f, 1.2f, 1.2f, origin);
    tu_mat4_mul(o2, rot, sc);
    int32_t parents[3] = {-1, 0, 1};
    float bind[48];
    for (int b = 0; b < 3; ++b) tu_mat4_translation(bind + 16 * b, 0, 2.0f / 3 * b, 0);
    ssk_skeleton_desc sk = {3, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md[2] = {{"a", half, m.pos, half_t, m.tri, m.k, m.idx, m.w, o1},
                           {"b", half, m.pos + 3 * (size_t)half, half_t, tri2, m.k,
                            m.idx + (size_t)half * m.k, m.w + (size_t)half * m.k, o2}};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&rig, &sk, md, 2, &err) != SSK_OK) fail_msg("%s", err.message);
    free(tri2);
    raw_free(&m);
    return rig;
}

/* Skinning matrices of the scaled rig: bone 1 bent and twisted, bone 2
 * bent more and (optionally) scaled non-uniformly about its head. */
static void scaled_pose(float skin[48], bool scaled)
{
    static const float Z[3] = {0, 0, 1}, Y[3] = {0, 1, 0};
    const float j1[3] = {0, 2.0f / 3, 0}, j2[3] = {0, 4.0f / 3, 0};
    float a[16], b[16], s[16];
    tu_mat4_identity(skin);
    tu_mat4_rotation(a, Z, 0.9f, j1);
    tu_mat4_rotation(b, Y, 1.2f, j1);
    tu_mat4_mul(skin + 16, a, b);
    tu_mat4_rotation(a, Z, 0.7f, j2);
    tu_mat4_scale(s, scaled ? 1.3f : 1.0f, scaled ? 0.8f : 1.0f, 1.0f, j2);
    tu_mat4_mul(a, a, s);
    tu_mat4_mul(skin + 32, skin + 16, a);
}

/* CPU and GL agree within 1e-5 of the diagonal: the limb at a bend and a
 * twist; two meshes with object matrices, at the frame's own object
 * matrices, with and without a scaled bone. */
static void test_cpu_gl_runtime_parity(void **state)
{
    (void)state;
    need_gl();
    static const float Z[3] = {0, 0, 1}, Y[3] = {0, 1, 0}, J[3] = {0, 1, 0};
    float *pc = malloc(3 * (size_t)fx.nv * sizeof(float)), *pg = malloc(3 * (size_t)fx.nv * sizeof(float));
    /* a bend, a twist, and a twist past 180 degrees (the child's
     * quaternion points away from the parent's: the sign rule acts) */
    const float angles[3] = {2.0f, 2.5f, 3.6f};
    for (int pose = 0; pose < 3; ++pose) {
        float skin[32];
        tu_mat4_identity(skin);
        tu_mat4_rotation(skin + 16, pose ? Y : Z, angles[pose], J);
        deform(pc, fx.limb, SSK_METHOD_COR, SSK_BACKEND_CPU, NULL, skin, NULL);
        deform(pg, fx.limb, SSK_METHOD_COR, SSK_BACKEND_GL, NULL, skin, NULL);
        const double diff = tu_max_abs_diff(pc, pg, 3 * (size_t)fx.nv);
        printf("limb pose %d: max |CPU - GL| = %.3g diagonal\n", pose, diff / fx.diag);
        assert_true(diff <= PARITY_TOL * fx.diag);
    }
    free(pc);
    free(pg);

    ssk_rig *rig = make_scaled_rig();
    const uint32_t nv = ssk_rig_vertex_count(rig);
    pc = malloc(3 * (size_t)nv * sizeof(float));
    pg = malloc(3 * (size_t)nv * sizeof(float));
    float objects[32], rot[16];
    static const float X[3] = {1, 0, 0}, origin[3] = {0, 0, 0};
    tu_mat4_translation(objects, 0.1f, 0.2f, 0.0f);
    tu_mat4_rotation(rot, X, 0.3f, origin);
    ssk_mesh_view mb;
    assert_int_equal(ssk_rig_mesh(rig, 1, &mb, NULL), SSK_OK);
    tu_mat4_mul(objects + 16, rot, mb.object_matrix);
    for (int scaled = 0; scaled < 2; ++scaled) {
        float skin[48];
        scaled_pose(skin, scaled);
        deform(pc, rig, SSK_METHOD_COR, SSK_BACKEND_CPU, NULL, skin, objects);
        deform(pg, rig, SSK_METHOD_COR, SSK_BACKEND_GL, NULL, skin, objects);
        const double diag = tu_bbox_diagonal(pc, nv);
        const double diff = tu_max_abs_diff(pc, pg, 3 * (size_t)nv);
        printf("two meshes, %s: max |CPU - GL| = %.3g diagonal\n", scaled ? "scaled" : "rigid",
               diff / diag);
        assert_true(diff <= PARITY_TOL * diag);
    }
    free(pc);
    free(pg);
    ssk_rig_destroy(rig);
}

/* Unit quaternion (w, x, y, z) of the rotation in the 3x3 part of a
 * row-major matrix (Shepperd: from the largest of the trace and the
 * diagonal). */
static void matrix_quat(double q[4], const float *m)
{
    const double m00 = m[0], m11 = m[5], m22 = m[10], tr = m00 + m11 + m22;
    if (tr >= m00 && tr >= m11 && tr >= m22) {
        const double s = 2.0 * sqrt(1.0 + tr);
        q[0] = 0.25 * s;
        q[1] = (m[9] - m[6]) / s;
        q[2] = (m[2] - m[8]) / s;
        q[3] = (m[4] - m[1]) / s;
    } else if (m00 >= m11 && m00 >= m22) {
        const double s = 2.0 * sqrt(1.0 + m00 - m11 - m22);
        q[0] = (m[9] - m[6]) / s;
        q[1] = 0.25 * s;
        q[2] = (m[1] + m[4]) / s;
        q[3] = (m[2] + m[8]) / s;
    } else if (m11 >= m22) {
        const double s = 2.0 * sqrt(1.0 + m11 - m00 - m22);
        q[0] = (m[2] - m[8]) / s;
        q[1] = (m[1] + m[4]) / s;
        q[2] = 0.25 * s;
        q[3] = (m[6] + m[9]) / s;
    } else {
        const double s = 2.0 * sqrt(1.0 + m22 - m00 - m11);
        q[0] = (m[4] - m[1]) / s;
        q[1] = (m[2] + m[8]) / s;
        q[2] = (m[6] + m[9]) / s;
        q[3] = 0.25 * s;
    }
}

/* The CoR kernel against Algorithm 1 written out here per vertex in double
 * (QLERP with the running-sum signs, LBS of the center, v' = R v + t): the
 * 8-lane path (4 influences, rigid bones) and the general path (forced by
 * asking for normals) both match it; normals turn by R. */
static void test_kernel_matches_algorithm_1(void **state)
{
    (void)state;
    static const float Z[3] = {0, 0, 1}, Y[3] = {0, 1, 0}, J[3] = {0, 1, 0};
    float skin[32], a[16], b[16];
    tu_mat4_identity(skin);
    tu_mat4_rotation(a, Z, 1.7f, J);
    tu_mat4_rotation(b, Y, 2.2f, J);
    tu_mat4_mul(skin + 16, a, b);
    ssk_cor_bone bones[2];
    float bind[32];
    ssk_bone_view bv;
    for (int k = 0; k < 2; ++k) {
        assert_int_equal(ssk_rig_bone(fx.limb, (uint32_t)k, &bv, NULL), SSK_OK);
        memcpy(bind + 16 * k, bv.bind_matrix, 16 * sizeof(float));
    }
    assert_int_equal(ssk_cor_prepare(bones, skin, bind, 2, NULL), SSK_OK);
    const uint32_t nv = fx.nv;
    float *lanes = malloc(3 * (size_t)nv * sizeof(float)), *general = malloc(3 * (size_t)nv * sizeof(float));
    float *normals = malloc(3 * (size_t)nv * sizeof(float)), *out_n = malloc(3 * (size_t)nv * sizeof(float));
    for (uint32_t v = 0; v < nv; ++v) { /* the rest normal of the cylinder */
        const float *p = fx.mv.positions + 3 * v;
        const double l = sqrt((double)p[0] * p[0] + (double)p[2] * p[2]);
        normals[3 * v] = l > 0 ? (float)(p[0] / l) : 0.0f;
        normals[3 * v + 1] = l > 0 ? 0.0f : 1.0f;
        normals[3 * v + 2] = l > 0 ? (float)(p[2] / l) : 0.0f;
    }
    ssk_cor_deform(lanes, NULL, fx.mv.positions, NULL, nv, fx.mv.bone_indices, fx.mv.weights, 4,
                   fx.centers, fx.flags, bones, 2, NULL, NULL);
    ssk_cor_deform(general, out_n, fx.mv.positions, normals, nv, fx.mv.bone_indices,
                   fx.mv.weights, 4, fx.centers, fx.flags, bones, 2, NULL, NULL);
    double worst = 0.0, worst_n = 0.0;
    for (uint32_t v = 0; v < nv; ++v) {
        const float *w = fx.mv.weights + 4 * v;
        const int32_t *ix = fx.mv.bone_indices + 4 * v;
        /* per-bone rotation as a quaternion from its matrix (3x3 part) */
        double q[4] = {0, 0, 0, 0}, rt[3][4] = {{0}};
        for (int i = 0; i < 4; ++i) {
            if (w[i] == 0.0f) continue;
            const float *m = skin + 16 * ix[i];
            double bq[4];
            matrix_quat(bq, m);
            const double dot = q[0] * bq[0] + q[1] * bq[1] + q[2] * bq[2] + q[3] * bq[3];
            const double s = dot < 0.0 ? -w[i] : w[i];
            for (int k = 0; k < 4; ++k) q[k] += s * bq[k];
            for (int r = 0; r < 3; ++r)
                for (int c = 0; c < 4; ++c) rt[r][c] += w[i] * m[4 * r + c];
        }
        const double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        for (int k = 0; k < 4; ++k) q[k] /= n;
        const double W = q[0], X = q[1], Yq = q[2], Zq = q[3];
        const double R[3][3] = {{1 - 2 * (Yq * Yq + Zq * Zq), 2 * (X * Yq - W * Zq), 2 * (X * Zq + W * Yq)},
                                {2 * (X * Yq + W * Zq), 1 - 2 * (X * X + Zq * Zq), 2 * (Yq * Zq - W * X)},
                                {2 * (X * Zq - W * Yq), 2 * (Yq * Zq + W * X), 1 - 2 * (X * X + Yq * Yq)}};
        const float *p = fx.mv.positions + 3 * v, *c = fx.centers + 3 * v;
        for (int r = 0; r < 3; ++r) {
            /* t = R~ p* + t~ - R p*; v' = R v + t */
            double t = rt[r][3], rv = 0.0, nr = 0.0;
            for (int k = 0; k < 3; ++k) {
                t += rt[r][k] * c[k] - R[r][k] * c[k];
                rv += R[r][k] * p[k];
                nr += R[r][k] * normals[3 * v + k];
            }
            const double expected = fx.flags[v] ? rv + t
                                                : rt[r][0] * p[0] + rt[r][1] * p[1] + rt[r][2] * p[2] + rt[r][3];
            worst = fmax(worst, fabs(lanes[3 * v + r] - expected));
            worst = fmax(worst, fabs(general[3 * v + r] - expected));
            if (fx.flags[v] && fabs(p[1] - 1.0) < 0.2) worst_n = fmax(worst_n, fabs(out_n[3 * v + r] - nr));
        }
    }
    printf("kernel vs Algorithm 1: positions %.3g diagonal, normals %.3g\n", worst / fx.diag,
           worst_n);
    assert_true(worst <= 1e-5 * fx.diag);
    assert_true(worst_n <= 1e-5);
    free(lanes);
    free(general);
    free(normals);
    free(out_n);
}

/* A vertex without a center (one bone) is skinned by LBS: exactly the LBS
 * deformer's result, also with a scaled bone and object matrices; and a
 * rigid motion of the whole skeleton moves every vertex rigidly. */
static void test_single_influence_is_lbs(void **state)
{
    (void)state;
    ssk_rig *rig = make_scaled_rig();
    const uint32_t nv = ssk_rig_vertex_count(rig);
    float *lbs = malloc(3 * (size_t)nv * sizeof(float)), *cor = malloc(3 * (size_t)nv * sizeof(float));
    float *centers = malloc(3 * (size_t)nv * sizeof(float));
    uint8_t *flags = malloc(nv);
    ssk_cor_params p;
    ssk_cor_params_default(&p);
    assert_int_equal(ssk_cor_precompute(centers, flags, rig, &p, SSK_BACKEND_CPU, NULL, NULL, NULL),
                     SSK_OK);
    float skin[48];
    scaled_pose(skin, true);
    deform(lbs, rig, SSK_METHOD_LBS, SSK_BACKEND_CPU, NULL, skin, NULL);
    deform(cor, rig, SSK_METHOD_COR, SSK_BACKEND_CPU, NULL, skin, NULL);
    const double diag = tu_bbox_diagonal(lbs, nv);
    uint32_t single = 0, moved = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        if (flags[v]) {
            moved += tu_max_abs_diff(lbs + 3 * v, cor + 3 * v, 3) > 1e-3 * diag;
            continue;
        }
        ++single;
        assert_true(tu_max_abs_diff(lbs + 3 * v, cor + 3 * v, 3) <= 1e-6 * diag);
    }
    assert_true(single > nv / 10);
    assert_true(moved > 0); /* and the others are not LBS */

    /* one rigid motion for every bone: every vertex moves rigidly */
    static const float axis[3] = {0.6f, 0.8f, 0.0f}, pivot[3] = {0.3f, -0.2f, 0.5f};
    float motion[16];
    tu_mat4_rotation(motion, axis, 2.0f, pivot);
    for (int b = 0; b < 3; ++b) memcpy(skin + 16 * b, motion, sizeof motion);
    deform(cor, rig, SSK_METHOD_COR, SSK_BACKEND_CPU, NULL, skin, NULL);
    deform(lbs, rig, SSK_METHOD_LBS, SSK_BACKEND_CPU, NULL, skin, NULL);
    assert_true(tu_max_abs_diff(lbs, cor, 3 * (size_t)nv) <= 1e-5 * diag);
    free(lbs);
    free(cor);
    free(centers);
    free(flags);
    ssk_rig_destroy(rig);
}

/* ------------------------------------------------------------------------ */
/* Errors.                                                                   */
/* ------------------------------------------------------------------------ */

static void expect_message(const ssk_error *err, const char *text)
{
    if (!strstr(err->message, text)) fail_msg("'%s' not in '%s'", text, err->message);
}

static void test_parameter_errors(void **state)
{
    (void)state;
    raw_mesh m = make_tube(6, 6, 2, 2.0f, 0.8, 1);
    float *c = malloc(3 * (size_t)m.nv * sizeof(float));
    uint8_t *f = malloc(m.nv);
    struct {
        int field;
        float value;
        const char *name;
    } const bad[] = {
        {0, 0.0f, "sigma"},      {0, -0.1f, "sigma"},   {0, NAN, "sigma"},
        {0, 11.0f, "sigma"},     {1, 0.01f, "epsilon"}, {1, 2.5f, "epsilon"},
        {1, NAN, "epsilon"},     {2, 0.0f, "omega"},    {2, 2.1f, "omega"},
        {3, 0.0f, "cutoff"},     {3, 0.02f, "cutoff"},  {3, -1e-6f, "cutoff"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        ssk_cor_params p;
        ssk_cor_params_default(&p);
        float *fields[4] = {&p.sigma, &p.epsilon, &p.omega, &p.cutoff};
        *fields[bad[i].field] = bad[i].value;
        ssk_error err = {0};
        assert_int_equal(ssk_cor_params_check(&p, &err), SSK_ERROR_INVALID_ARGUMENT);
        expect_message(&err, bad[i].name);
        assert_int_equal(ssk_cor_compute(c, f, m.pos, m.nv, m.tri, m.nt, m.idx, m.w, m.k, m.nb,
                                         &p, NULL, &err),
                         SSK_ERROR_INVALID_ARGUMENT);
        expect_message(&err, bad[i].name);
        assert_int_equal(ssk_cor_precompute(c, f, fx.limb, &p, SSK_BACKEND_CPU, NULL, NULL, &err),
                         SSK_ERROR_INVALID_ARGUMENT);
        expect_message(&err, bad[i].name);
        /* the binding checks them only when it computes centers */
        ssk_bind_params bp;
        ssk_bind_params_default(&bp);
        bp.cor = p;
        ssk_binding *b = NULL;
        assert_int_equal(ssk_binding_create(&b, fx.limb, &bp, &err), SSK_OK);
        ssk_binding_destroy(b);
        bp.compute_cor = 1;
        assert_int_equal(ssk_binding_create(&b, fx.limb, &bp, &err), SSK_ERROR_INVALID_ARGUMENT);
        assert_null(b);
        expect_message(&err, bad[i].name);
    }
    /* the bounds themselves are accepted */
    ssk_cor_params p = {SSK_COR_MIN_SIGMA, SSK_COR_MAX_EPSILON, SSK_COR_MAX_OMEGA,
                        SSK_COR_MAX_CUTOFF};
    assert_int_equal(ssk_cor_params_check(&p, NULL), SSK_OK);
    p = (ssk_cor_params){SSK_COR_MAX_SIGMA, SSK_COR_MIN_EPSILON, 1e-3f, 1e-9f};
    assert_int_equal(ssk_cor_params_check(&p, NULL), SSK_OK);
    free(c);
    free(f);
    raw_free(&m);
}

/* Weights that do not sum to one are normalized with a warning (the same
 * centers as the normalized weights); bad input is an error naming it. */
static void test_input_errors(void **state)
{
    (void)state;
    raw_mesh m = make_tube(10, 8, 2, 2.0f, 0.8, 1);
    ssk_cor_params p;
    ssk_cor_params_default(&p);
    float *c1 = malloc(3 * (size_t)m.nv * sizeof(float)), *c2 = malloc(3 * (size_t)m.nv * sizeof(float));
    uint8_t *f1 = malloc(m.nv), *f2 = malloc(m.nv);
    ssk_error err = {0};
    ssk_cor_stats stats;
    /* normalize first: no warning */
    for (uint32_t v = 0; v < m.nv; ++v) {
        float sum = 0.0f;
        for (uint32_t s = 0; s < m.k; ++s) sum += m.w[v * m.k + s];
        for (uint32_t s = 0; s < m.k; ++s) m.w[v * m.k + s] /= sum;
    }
    assert_int_equal(ssk_cor_compute(c1, f1, m.pos, m.nv, m.tri, m.nt, m.idx, m.w, m.k, m.nb, &p,
                                     &stats, &err),
                     SSK_OK);
    assert_int_equal(stats.renormalized_count, 0);
    assert_null(strstr(err.message, "warning"));
    /* every weight doubled: normalized back with a warning */
    for (size_t i = 0; i < (size_t)m.nv * m.k; ++i) m.w[i] *= 2.0f;
    assert_int_equal(ssk_cor_compute(c2, f2, m.pos, m.nv, m.tri, m.nt, m.idx, m.w, m.k, m.nb, &p,
                                     &stats, &err),
                     SSK_OK);
    expect_message(&err, "warning");
    expect_message(&err, "did not sum to 1");
    assert_int_equal(stats.renormalized_count, m.nv);
    assert_memory_equal(f1, f2, m.nv);
    assert_true(max_center_diff(c1, c2, m.nv) <= 1e-6);
    for (size_t i = 0; i < (size_t)m.nv * m.k; ++i) m.w[i] *= 0.5f;

    /* negative weight, bone index, triangle index, non-finite position */
    m.w[5 * m.k] = -0.5f;
    assert_int_equal(ssk_cor_compute(c1, f1, m.pos, m.nv, m.tri, m.nt, m.idx, m.w, m.k, m.nb, &p,
                                     NULL, &err),
                     SSK_ERROR_NEGATIVE_WEIGHT);
    expect_message(&err, "vertex 5");
    m.w[5 * m.k] = 0.5f;
    const int32_t saved = m.idx[7 * m.k];
    m.idx[7 * m.k] = 9;
    assert_int_equal(ssk_cor_compute(c1, f1, m.pos, m.nv, m.tri, m.nt, m.idx, m.w, m.k, m.nb, &p,
                                     NULL, &err),
                     SSK_ERROR_BONE_INDEX);
    expect_message(&err, "vertex 7");
    m.idx[7 * m.k] = saved;
    const int32_t corner = m.tri[4];
    m.tri[4] = (int32_t)m.nv;
    assert_int_equal(ssk_cor_compute(c1, f1, m.pos, m.nv, m.tri, m.nt, m.idx, m.w, m.k, m.nb, &p,
                                     NULL, &err),
                     SSK_ERROR_TRIANGLE_INDEX);
    expect_message(&err, "triangle 1");
    m.tri[4] = corner;
    /* an isolated vertex: drop the triangles of vertex 0 */
    int32_t *tri = malloc(3 * (size_t)m.nt * sizeof(int32_t));
    uint32_t nt = 0;
    for (uint32_t t = 0; t < m.nt; ++t)
        if (m.tri[3 * t] != 0 && m.tri[3 * t + 1] != 0 && m.tri[3 * t + 2] != 0) {
            memcpy(tri + 3 * nt, m.tri + 3 * t, 3 * sizeof(int32_t));
            ++nt;
        }
    /* a loose vertex (issue #37): its center from its weights, as any */
    assert_int_equal(ssk_cor_compute(c1, f1, m.pos, m.nv, tri, nt, m.idx, m.w, m.k, m.nb, &p,
                                     NULL, &err),
                     SSK_OK);
    assert_true(isfinite(c1[0]) && isfinite(c1[1]) && isfinite(c1[2]));
    /* the same in a rig (a mesh with triangles) */
    int32_t parents[2] = {-1, 0};
    float bind[32];
    tu_mat4_identity(bind);
    tu_mat4_translation(bind + 16, 0, 1, 0);
    ssk_skeleton_desc sk = {2, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md = {"tube", m.nv, m.pos, nt, tri, m.k, m.idx, m.w, NULL};
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &sk, &md, 1, &err), SSK_OK);
    assert_int_equal(ssk_cor_precompute(c1, f1, rig, &p, SSK_BACKEND_CPU, NULL, NULL, &err),
                     SSK_OK);
    assert_true(isfinite(c1[0]) && isfinite(c1[1]) && isfinite(c1[2]));
    /* NULL and empty */
    assert_int_equal(ssk_cor_compute(NULL, f1, m.pos, m.nv, m.tri, m.nt, m.idx, m.w, m.k, m.nb,
                                     &p, NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cor_compute(c1, f1, m.pos, m.nv, m.tri, 0, m.idx, m.w, m.k, m.nb, &p,
                                     NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cor_precompute(c1, f1, rig, &p, (ssk_backend)7, NULL, NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    ssk_rig_destroy(rig);
    free(tri);
    free(c1);
    free(c2);
    free(f1);
    free(f2);
    raw_free(&m);
}

/* ------------------------------------------------------------------------ */
/* Binding, graph, CLI.                                                      */
/* ------------------------------------------------------------------------ */

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* The centers are stored with the binding (file version 2, same rig hash),
 * reused by the cache when the parameters match, recomputed otherwise;
 * version 1 files (no centers) still load. */
static void test_binding_stores_centers(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char path[512], path1[512];
    snprintf(path, sizeof path, "%s/cor.bind", dir);
    snprintf(path1, sizeof path1, "%s/plain.bind", dir);
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    assert_int_equal(bp.compute_cor, 0);
    bp.compute_cor = 1;
    ssk_binding *b = NULL, *c = NULL;
    ssk_error err = {0};
    int reused = -1;
    assert_int_equal(ssk_binding_cached(&b, fx.limb, &bp, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    ssk_binding_view v;
    assert_int_equal(ssk_binding_get(b, &v, NULL), SSK_OK);
    assert_non_null(v.cor_centers);
    assert_memory_equal(v.cor_centers, fx.centers, 3 * (size_t)fx.nv * sizeof(float));
    assert_memory_equal(v.cor_flags, fx.flags, fx.nv);
    /* the file: version 2, the CoR section after the version 1 arrays */
    size_t size;
    unsigned char *bytes = tu_read_file(path, &size);
    assert_int_equal(le32(bytes + 8), 2);
    assert_int_equal(le32(bytes + 40), 1);
    assert_int_equal(size, 68 + 20 * (size_t)fx.nv + 12 * (size_t)fx.nv + ((fx.nv + 3) & ~3u));
    float first_center;
    memcpy(&first_center, bytes + 60 + 20 * (size_t)fx.nv, 4);
    assert_true(first_center == fx.centers[0]);
    assert_int_equal(bytes[60 + 32 * (size_t)fx.nv], fx.flags[0]);
    free(bytes);
    /* the same parameters: reused, centers loaded */
    assert_int_equal(ssk_binding_cached(&c, fx.limb, &bp, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_view w;
    assert_int_equal(ssk_binding_get(c, &w, NULL), SSK_OK);
    assert_memory_equal(w.cor_centers, fx.centers, 3 * (size_t)fx.nv * sizeof(float));
    assert_memory_equal(w.cor_flags, fx.flags, fx.nv);
    assert_true(w.params.cor.sigma == bp.cor.sigma && w.params.cor.cutoff == bp.cor.cutoff);
    ssk_binding_destroy(c);
    /* without compute_cor the file is still good */
    ssk_bind_params plain;
    ssk_bind_params_default(&plain);
    assert_int_equal(ssk_binding_cached(&c, fx.limb, &plain, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_destroy(c);
    /* another sigma: recomputed and saved */
    bp.cor.sigma = 0.2f;
    assert_int_equal(ssk_binding_cached(&c, fx.limb, &bp, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    assert_int_equal(ssk_binding_get(c, &w, NULL), SSK_OK);
    assert_true(w.params.cor.sigma == 0.2f);
    assert_true(max_center_diff(w.cor_centers, fx.centers, fx.nv) > 0.0);
    ssk_binding_destroy(c);
    assert_int_equal(ssk_binding_cached(&c, fx.limb, &bp, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_destroy(c);
    /* a binding without centers: version 1, loads without them; asking for
     * centers recomputes */
    assert_int_equal(ssk_binding_cached(&c, fx.limb, &plain, path1, &reused, &err), SSK_OK);
    ssk_binding_destroy(c);
    bytes = tu_read_file(path1, &size);
    assert_int_equal(le32(bytes + 8), 1);
    assert_int_equal(size, 48 + 20 * (size_t)fx.nv);
    free(bytes);
    assert_int_equal(ssk_binding_load(&c, path1, fx.limb, &err), SSK_OK);
    assert_int_equal(ssk_binding_get(c, &w, NULL), SSK_OK);
    assert_null(w.cor_centers);
    assert_null(w.cor_flags);
    assert_int_equal(w.params.compute_cor, 0);
    ssk_binding_destroy(c);
    bp.cor.sigma = 0.1f;
    assert_int_equal(ssk_binding_cached(&c, fx.limb, &bp, path1, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    ssk_binding_destroy(c);
    /* a flipped flag byte is caught */
    bytes = tu_read_file(path, &size);
    bytes[60 + 32 * (size_t)fx.nv] ^= 2;
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, size, f);
    fclose(f);
    free(bytes);
    assert_int_equal(ssk_binding_load(&c, path, fx.limb, &err), SSK_ERROR_IO);
    expect_message(&err, "checksum");
    ssk_binding_destroy(b);
    remove(path);
    remove(path1);
    rmdir(dir);
    free(dir);
}

/* A deformer takes the centers of its binding; without them (or without a
 * binding) it computes the same ones; CoR is a first stage for a spring
 * node in a graph. */
static void test_deformer_and_graph(void **state)
{
    (void)state;
    static const float Z[3] = {0, 0, 1}, J[3] = {0, 1, 0};
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z, 1.2f, J);
    const size_t n = 3 * (size_t)fx.nv;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)), *c = malloc(n * sizeof(float));
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    ssk_binding *plain = NULL, *with = NULL;
    assert_int_equal(ssk_binding_create(&plain, fx.limb, &bp, NULL), SSK_OK);
    bp.compute_cor = 1;
    bp.cor.sigma = 0.3f; /* other centers than the defaults */
    assert_int_equal(ssk_binding_create(&with, fx.limb, &bp, NULL), SSK_OK);
    deform(a, fx.limb, SSK_METHOD_COR, SSK_BACKEND_CPU, NULL, skin, NULL);
    deform(b, fx.limb, SSK_METHOD_COR, SSK_BACKEND_CPU, plain, skin, NULL);
    deform(c, fx.limb, SSK_METHOD_COR, SSK_BACKEND_CPU, with, skin, NULL);
    assert_memory_equal(a, b, n * sizeof(float));
    assert_true(tu_max_abs_diff(a, c, n) > 1e-4 * fx.diag); /* the binding's were used */

    ssk_graph *g = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_graph_from_method(&g, SSK_METHOD_COR, fx.limb, &err), SSK_OK);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    assert_int_equal(ssk_graph_needs_cor(g), 1);
    ssk_graph_destroy(g);
    assert_int_equal(ssk_graph_from_method(&g, SSK_METHOD_LBS, fx.limb, &err), SSK_OK);
    assert_int_equal(ssk_graph_needs_cor(g), 0);
    ssk_graph_destroy(g);
    /* examples/graphs/cor_spring.json: CoR skinning feeding a spring node */
    if (ssk_graph_load(&g, SSK_SOURCE_DIR "/examples/graphs/cor_spring.json", fx.limb, &err) !=
        SSK_OK)
        fail_msg("%s", err.message);
    assert_int_equal(ssk_graph_needs_cor(g), 1);
    char *json = ssk_graph_to_json(g);
    assert_non_null(strstr(json, "\"cor\""));
    free(json);
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU, .graph = g};
    if (ssk_deformer_create(&d, fx.limb, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    ssk_status st = ssk_deformer_deform(d, b, skin, NULL, &err);
    if (st != SSK_OK && st != SSK_ERROR_SPRING_DIVERGED) fail_msg("%s", err.message);
    ssk_spring_report report;
    ssk_deformer_spring_report(d, &report);
    assert_true(report.iterations > 0);
    /* the spring relaxes the CoR first stage: moves it, a little */
    const double moved = tu_max_abs_diff(a, b, n);
    printf("spring after CoR: moved the first stage by at most %.3g diagonal (%u iterations, "
           "%s)\n",
           moved / fx.diag, report.iterations, ssk_status_name(st));
    assert_true(moved > 0.0);
    if (st == SSK_OK) assert_true(moved < 0.2 * fx.diag);
    ssk_deformer_destroy(d);
    ssk_graph_destroy(g);
    ssk_binding_destroy(plain);
    ssk_binding_destroy(with);
    free(a);
    free(b);
    free(c);
}

/* A deformer given centers of rotation (ssk_deformer_desc.cor_centers, what
 * an incremental update feeds it) uses them in place of the binding's, on
 * the CPU and on GL; one of the two alone and non-finite centers are
 * errors. */
static void test_deformer_takes_given_centers(void **state)
{
    (void)state;
    static const float Z[3] = {0, 0, 1}, J[3] = {0, 1, 0};
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z, 1.2f, J);
    const size_t n = 3 * (size_t)fx.nv;
    float *ref = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    ssk_binding *plain = NULL, *other = NULL;
    assert_int_equal(ssk_binding_create(&plain, fx.limb, &bp, NULL), SSK_OK);
    bp.compute_cor = 1;
    bp.cor.sigma = 0.3f; /* centers other than fx.centers (the defaults) */
    assert_int_equal(ssk_binding_create(&other, fx.limb, &bp, NULL), SSK_OK);
    ssk_binding_view ov;
    assert_int_equal(ssk_binding_get(other, &ov, NULL), SSK_OK);
    ssk_error err = {0};
    for (int backend = 0; backend < 2; ++backend) {
        if (backend == 1 && !gl) {
            print_message("GL half skipped: no GL context: %s\n", gl_unavailable);
            break;
        }
        const ssk_backend b = backend ? SSK_BACKEND_GL : SSK_BACKEND_CPU;
        /* reference: the binding made with sigma 0.3 carries the centers */
        deform(ref, fx.limb, SSK_METHOD_COR, b, other, skin, NULL);
        /* the same centers given to a deformer whose binding has none */
        ssk_deformer *d = NULL;
        ssk_deformer_desc desc = {.method = SSK_METHOD_COR, .backend = b, .gl_context = gl,
                                  .binding = plain, .cor_centers = ov.cor_centers,
                                  .cor_flags = ov.cor_flags};
        if (ssk_deformer_create(&d, fx.limb, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
        assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_OK);
        ssk_deformer_destroy(d);
        assert_memory_equal(out, ref, n * sizeof(float));
        /* given centers win over the binding's */
        desc.binding = other;
        desc.cor_centers = fx.centers;
        desc.cor_flags = fx.flags;
        if (ssk_deformer_create(&d, fx.limb, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
        assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_OK);
        ssk_deformer_destroy(d);
        deform(ref, fx.limb, SSK_METHOD_COR, b, plain, skin, NULL); /* computes the defaults */
        const double diff = tu_max_abs_diff(out, ref, n);
        printf("%s: given default centers vs computed at creation: %.3g diagonal\n",
               backend ? "GL" : "CPU", diff / fx.diag);
        assert_true(diff <= 1e-5 * fx.diag);
    }
    /* errors */
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = SSK_METHOD_COR, .backend = SSK_BACKEND_CPU,
                              .cor_centers = fx.centers};
    assert_int_equal(ssk_deformer_create(&d, fx.limb, &desc, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(d);
    assert_non_null(strstr(err.message, "cor_flags"));
    float *bad = malloc(n * sizeof(float));
    memcpy(bad, fx.centers, n * sizeof(float));
    uint32_t flagged = 0;
    while (!fx.flags[flagged]) ++flagged;
    bad[3 * (size_t)flagged + 1] = NAN;
    desc.cor_centers = bad;
    desc.cor_flags = fx.flags;
    assert_int_equal(ssk_deformer_create(&d, fx.limb, &desc, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(d);
    assert_non_null(strstr(err.message, "not finite"));
    free(bad);
    ssk_binding_destroy(plain);
    ssk_binding_destroy(other);
    free(ref);
    free(out);
}

/* Runs the CLI; returns its exit status, stdout in out. */
static int run_cli(char *out, size_t size, const char *const *args)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        const char *argv[16];
        int n = 0;
        argv[n++] = SSK_CLI_PATH;
        for (; args[n - 1] && n < 15; ++n) argv[n] = args[n - 1];
        argv[n] = NULL;
        execv(SSK_CLI_PATH, (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    size_t used = 0;
    ssize_t r;
    while (used + 1 < size && (r = read(fd[0], out + used, size - 1 - used)) > 0) used += (size_t)r;
    out[used] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* `springskin bind FILE --cor -o B` precomputes and saves the centers; a
 * second run reuses them; bake --method cor uses them. */
static void test_cli_bind_cor(void **state)
{
    (void)state;
    const char *model = SSK_MODELS_DIR "/X/BCN_Epileptic.X";
    struct stat st;
    if (stat(model, &st) != 0) {
        print_message("skipped: %s not installed\n", model);
        skip();
    }
    char *dir = tu_temp_dir();
    char bind_path[512], out_path[512], out[4096];
    snprintf(bind_path, sizeof bind_path, "%s/bcn.bind", dir);
    snprintf(out_path, sizeof out_path, "%s/bcn.pc2", dir);
    const char *bind_args[] = {"bind", model, "--cor", "-o", bind_path, NULL};
    assert_int_equal(run_cli(out, sizeof out, bind_args), 0);
    printf("%s", out);
    assert_non_null(strstr(out, "centers of rotation:"));
    assert_null(strstr(out, "reused"));
    size_t size;
    unsigned char *bytes = tu_read_file(bind_path, &size);
    assert_int_equal(le32(bytes + 8), 2);
    free(bytes);
    assert_int_equal(run_cli(out, sizeof out, bind_args), 0);
    assert_non_null(strstr(out, "reused"));
    assert_non_null(strstr(out, "centers of rotation:"));
    const char *bake_args[] = {"bake", model, "-o", out_path, "--method", "cor", "--binding",
                               bind_path, "--frames", "0:3", "--backend", "cpu", NULL};
    assert_int_equal(run_cli(out, sizeof out, bake_args), 0);
    printf("%s", out);
    assert_non_null(strstr(out, "binding: loaded"));
    assert_non_null(strstr(out, "(cor, cpu backend"));
    const char *bad_args[] = {"bind", model, "--cor", "--cor-omega", "3", NULL};
    assert_int_equal(run_cli(out, sizeof out, bad_args), 2);
    const char *orphan_args[] = {"bind", model, "--cor-sigma", "0.2", NULL};
    assert_int_equal(run_cli(out, sizeof out, orphan_args), 2);
    remove(bind_path);
    remove(out_path);
    rmdir(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accelerated_equals_brute_force),
        cmocka_unit_test(test_cells_equal_brute_force_on_a_character),
        cmocka_unit_test(test_progress_is_reported_on_the_calling_thread),
        cmocka_unit_test(test_incremental_update_equals_a_full_precomputation),
        cmocka_unit_test(test_gl_precompute_matches_cpu),
        cmocka_unit_test(test_curve_skeleton),
        cmocka_unit_test(test_twist_135_keeps_the_section),
        cmocka_unit_test(test_bend_120_less_bulge_than_dqs),
        cmocka_unit_test(test_cpu_gl_runtime_parity),
        cmocka_unit_test(test_kernel_matches_algorithm_1),
        cmocka_unit_test(test_single_influence_is_lbs),
        cmocka_unit_test(test_parameter_errors),
        cmocka_unit_test(test_input_errors),
        cmocka_unit_test(test_binding_stores_centers),
        cmocka_unit_test(test_deformer_and_graph),
        cmocka_unit_test(test_deformer_takes_given_centers),
        cmocka_unit_test(test_cli_bind_cor),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
