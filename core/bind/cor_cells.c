/*
 * cor_cells.c — Eq. 4 of skinning with optimized centers of rotation (Le &
 * Hodgins 2016) summed per bone pair over cells of weight space, so that a
 * vertex's cost does not grow with the mesh (issue #18).
 *
 * Why it is the same sum. Eq. 1's similarity is a sum over the pairs of
 * bones {j, k} that both the vertex p and the leaf t weight:
 *   s(w_p, w_t) = 2 sum_{j<k} w_pj w_pk u_j u_k exp(-(w_pj u_k - w_pk u_j)^2 / sigma^2)
 * with u = w_t, so Eq. 4's sums (sum s a c, sum s a) are, per pair, sums
 * over the leaves of the triangles holding both bones of
 *   W_t K(u_t) (c_t, 1),  W_t = a_t u_j u_k,  K(u) = exp(-x(u)^2),
 *   x(u) = (w_pj u_k - w_pk u_j) / sigma,
 * times w_pj w_pk. Only the pair's two weights (u_j, u_k) of a leaf enter
 * K: a point of the unit square. The square is cut into SSK_COR_CELLS x
 * SSK_COR_CELLS cells; each cell keeps the moments of its leaves up to
 * second order (W, W u, W u u^T, W c, W c u^T, W c u u^T). A vertex then
 * sums, per pair of its bones, over the pair's occupied cells: the second
 * order Taylor expansion of K about the cell's weighted centroid ū (the
 * first-order term of the denominator vanishes there):
 *   sum W K      = K(ū) W + 1/2 K (4x^2 - 2) d^T S d,
 *   sum W K c    = K(ū) Wc + grad K . M1 + 1/2 K (4x^2 - 2) sum W c (d.(u - ū))^2,
 * d = (-w_pk, w_pj) / sigma the gradient of x, S = sum W (u - ū)(u - ū)^T,
 * M1 = sum W c (u - ū)^T. The error is the third-order remainder: with
 * cells of 1/64 and |d| <= |w_p| / sigma, |d| h <= 0.16 at sigma 0.1, a
 * relative error of the cell's share of at most about (|d| h)^3 / 6 times
 * |K'''| (<= 3), below 2e-3 where K is largest and smaller elsewhere: the
 * centers land within 1e-4 of the bounding-box diagonal of the exact sum
 * (tests/c/test_cor.c measures it against a brute force over every leaf).
 * Unlike the breadth-first search this replaced, every leaf of the mesh
 * counts, as Eq. 4 says (the search stopped at a similarity cutoff).
 *
 * Cost: building the cells reads every leaf once per pair of its bones
 * (linear in the leaves); a vertex visits the occupied cells of its pairs,
 * at most SSK_COR_CELLS^2 per pair however dense the mesh (a two-bone
 * blend's leaves lie on the line u_j + u_k = 1: about 90 cells).
 */
#include "kernels/cor_internal.h"
#include "kernels/simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Moments of a cell (doubles): W; W u (2); W u u^T (3: jj, jk, kk); W c
 * (3); W c u_j (3); W c u_k (3); W c u_j^2, W c u_j u_k, W c u_k^2 (3 each). */
enum {
    M_W = 0,
    M_U = 1,
    M_UU = 3,
    M_C = 6,
    M_CUJ = 9,
    M_CUK = 12,
    M_CJJ = 15,
    M_CJK = 18,
    M_CKK = 21,
    MOMENTS = 24
};

/* x^2 above which a cell's kernel, exp(-x^2), is skipped: exp(-48) is
 * below 2e-21, and a cell's points lie within |d| h <= 0.16 of its
 * centroid in x, so no point of a skipped cell reaches exp(-40). */
#define COR_CELL_SKIP 48.0

/* What a vertex reads of a cell, about its centroid ū, as floats in
 * structure-of-arrays blocks of 8 cells (a pair's block is padded with
 * empty cells, W = 0, which add nothing): ū (2), W, S = sum W (u - ū)(u -
 * ū)^T (3), W c (3), M1 = sum W c (u - ū)^T (3 by 2: j then k), T = sum W c
 * (u - ū)_a (u - ū)_b (3 by 3: jj, jk, kk). */
enum {
    F_UJ = 0,
    F_UK = 1,
    F_W = 2,
    F_SJJ = 3,
    F_SJK = 4,
    F_SKK = 5,
    F_C = 6,
    F_M1J = 9,
    F_M1K = 12,
    F_TJJ = 15,
    F_TJK = 18,
    F_TKK = 21,
    FIELDS = 24
};

_Static_assert(FIELDS == SSK_COR_FIELDS, "cor_internal.h and shaders/bind_cor_precompute.comp "
                                        "read these fields");

/* One pair's cells. */
typedef struct pair_cells {
    float *fields;           /* FIELDS blocks of `padded` cells */
    uint64_t padded;         /* a multiple of 8 */
    uint64_t count;          /* occupied cells */
    /* kept for incremental updates (ssk_cor_cells_build with keep_raw):
     * raw moments and grid cell of each occupied cell, and the grid's
     * cell -> slot index (-1: empty) */
    double *raw;             /* capacity by MOMENTS */
    uint32_t *coord;         /* capacity */
    int32_t *index;          /* SSK_COR_CELLS^2 */
    uint64_t capacity;
} pair_cells;

struct ssk_cor_cells {
    uint32_t pair_count;
    uint64_t *pair_key;      /* #pairs: j << 32 | k, j < k (ascending as built; pairs an
                              * update adds go at the end) */
    uint32_t *sorted;        /* #pairs: the pairs in ascending key order */
    pair_cells *pairs;       /* #pairs */
    uint64_t cell_count;     /* occupied cells (without the padding) */
    int keep_raw;
};

static inline uint64_t pair_key(int32_t j, int32_t k)
{
    return (uint64_t)(uint32_t)j << 32 | (uint32_t)k;
}

static int compare_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The position of `key` in the sorted order (where it would go). */
static uint32_t lower_bound(const ssk_cor_cells *c, uint64_t key)
{
    uint32_t lo = 0, hi = c->pair_count;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (c->pair_key[c->sorted[mid]] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int64_t find_pair(const ssk_cor_cells *c, uint64_t key)
{
    const uint32_t at = lower_bound(c, key);
    return at < c->pair_count && c->pair_key[c->sorted[at]] == key ? (int64_t)c->sorted[at] : -1;
}

/* The grid cell of a leaf's pair weights (u_j, u_k). */
static inline uint32_t cell_of(double uj, double uk)
{
    int ij = (int)(uj * SSK_COR_CELLS), ik = (int)(uk * SSK_COR_CELLS);
    ij = ij < 0 ? 0 : ij >= SSK_COR_CELLS ? SSK_COR_CELLS - 1 : ij;
    ik = ik < 0 ? 0 : ik >= SSK_COR_CELLS ? SSK_COR_CELLS - 1 : ik;
    return (uint32_t)ij * SSK_COR_CELLS + (uint32_t)ik;
}

void ssk_cor_moments_add(double *mo, double uj, double uk, const float geo[4], double sign)
{
    const double w = sign * (double)geo[3] * uj * uk;
    const double c[3] = {geo[0], geo[1], geo[2]};
    mo[M_W] += w;
    mo[M_U] += w * uj;
    mo[M_U + 1] += w * uk;
    mo[M_UU] += w * uj * uj;
    mo[M_UU + 1] += w * uj * uk;
    mo[M_UU + 2] += w * uk * uk;
    for (int k = 0; k < 3; ++k) {
        const double wc = w * c[k];
        mo[M_C + k] += wc;
        mo[M_CUJ + k] += wc * uj;
        mo[M_CUK + k] += wc * uk;
        mo[M_CJJ + k] += wc * uj * uj;
        mo[M_CJK + k] += wc * uj * uk;
        mo[M_CKK + k] += wc * uk * uk;
    }
}

/* One leaf's (weight slots a, b of its triangle) entry of a pair. */
typedef struct entry {
    uint64_t leaf;          /* leaf index (its geometry) */
    uint64_t weights;       /* offset of its weights in leaf_weights */
    uint8_t a, b;
} entry;

typedef struct build_job {
    const ssk_cor_mesh *m;
    ssk_cor_cells *cells;
    const entry *entries;
    const uint64_t *entry_first; /* #pairs + 1 */
    double **grids;              /* per thread slot: SSK_COR_CELLS^2 by MOMENTS */
    uint32_t slots;
    int keep_raw;
    int oom;
} build_job;

/* Cell n of a block of `padded` cells: the fields of raw moments mo, about
 * the centroid (in double, then rounded once). */
static void central_fields(float *block, uint64_t padded, uint64_t n, const double *mo)
{
    const double W = mo[M_W], uj = mo[M_U] / W, uk = mo[M_U + 1] / W;
    double f[FIELDS];
    f[F_UJ] = uj;
    f[F_UK] = uk;
    f[F_W] = W;
    f[F_SJJ] = mo[M_UU] - W * uj * uj;
    f[F_SJK] = mo[M_UU + 1] - W * uj * uk;
    f[F_SKK] = mo[M_UU + 2] - W * uk * uk;
    for (int k = 0; k < 3; ++k) {
        const double wc = mo[M_C + k], cj = mo[M_CUJ + k], ck = mo[M_CUK + k];
        f[F_C + k] = wc;
        f[F_M1J + k] = cj - wc * uj;
        f[F_M1K + k] = ck - wc * uk;
        f[F_TJJ + k] = mo[M_CJJ + k] - 2.0 * uj * cj + uj * uj * wc;
        f[F_TJK + k] = mo[M_CJK + k] - uk * cj - uj * ck + uj * uk * wc;
        f[F_TKK + k] = mo[M_CKK + k] - 2.0 * uk * ck + uk * uk * wc;
    }
    for (int i = 0; i < FIELDS; ++i) block[(uint64_t)i * padded + n] = (float)f[i];
}

/* The cells of one pair: accumulate its entries in a dense grid, then keep
 * the occupied cells (in cell order, so the sums are the same bits on any
 * thread count). */
static void build_pair(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    build_job *j = ctx;
    (void)chunk;
    const size_t grid_cells = (size_t)SSK_COR_CELLS * SSK_COR_CELLS;
    const uint32_t slot = ssk_parallel_slot();
    double *own = NULL;
    double **grid = slot < j->slots ? &j->grids[slot] : &own;
    if (!*grid) *grid = malloc(grid_cells * MOMENTS * sizeof(double));
    if (!*grid) {
        j->oom = 1;
        return;
    }
    double *g = *grid;
    const ssk_cor_mesh *m = j->m;
    for (int64_t p = begin; p < end; ++p) {
        memset(g, 0, grid_cells * MOMENTS * sizeof(double));
        uint8_t *used = calloc(grid_cells, 1);
        if (!used) {
            j->oom = 1;
            break;
        }
        uint64_t count = 0;
        for (uint64_t e = j->entry_first[p]; e < j->entry_first[p + 1]; ++e) {
            const entry *en = &j->entries[e];
            const float *lw = m->leaf_weights + en->weights;
            const double uj = lw[en->a], uk = lw[en->b];
            const float *geo = m->leaf_geometry + 4 * en->leaf;
            const size_t cell = cell_of(uj, uk);
            double *mo = g + cell * MOMENTS;
            count += !used[cell];
            used[cell] = 1;
            ssk_cor_moments_add(mo, uj, uk, geo, 1.0);
        }
        const uint64_t padded = (count + 7) & ~(uint64_t)7;
        pair_cells *pc = &j->cells->pairs[p];
        pc->fields = calloc(padded * FIELDS + 1, sizeof(float));
        if (j->keep_raw) {
            pc->capacity = count + 8;
            pc->raw = malloc(pc->capacity * MOMENTS * sizeof(double));
            pc->coord = malloc(pc->capacity * sizeof(uint32_t));
        }
        if (!pc->fields || (j->keep_raw && (!pc->raw || !pc->coord))) {
            free(used);
            j->oom = 1;
            break;
        }
        uint64_t n = 0;
        for (size_t cell = 0; cell < grid_cells; ++cell) {
            const double *mo = g + cell * MOMENTS;
            if (!used[cell] || !(mo[M_W] > 0.0)) continue;
            if (j->keep_raw) {
                memcpy(pc->raw + n * MOMENTS, mo, MOMENTS * sizeof(double));
                pc->coord[n] = (uint32_t)cell;
            }
            central_fields(pc->fields, padded, n++, mo);
        }
        free(used);
        pc->count = n;
        pc->padded = n ? padded : 0;
    }
    free(own);
}

void ssk_cor_cells_destroy(ssk_cor_cells *c)
{
    if (!c) return;
    for (uint32_t p = 0; c->pairs && p < c->pair_count; ++p) {
        free(c->pairs[p].fields);
        free(c->pairs[p].raw);
        free(c->pairs[p].coord);
        free(c->pairs[p].index);
    }
    free(c->pairs);
    free(c->pair_key);
    free(c->sorted);
    free(c);
}

ssk_status ssk_cor_cells_build(ssk_cor_cells **out, const ssk_cor_mesh *m, int keep_raw,
                               ssk_error *err)
{
    *out = NULL;
    const uint32_t nt = m->triangle_count;
    ssk_cor_cells *c = calloc(1, sizeof *c);
    uint64_t *keys = NULL, *entry_first = NULL, *fill = NULL;
    entry *entries = NULL;
    build_job job = {0};
    ssk_status st = SSK_OK;
    if (!c) goto oom;
    /* the bone pairs of every triangle's bone set, sorted, unique */
    uint64_t key_count = 0;
    for (uint32_t t = 0; t < nt; ++t) {
        const uint64_t nb = m->tb_offsets[t + 1] - m->tb_offsets[t];
        key_count += nb * (nb - (nb > 0)) / 2;
    }
    keys = malloc((key_count + 1) * sizeof(uint64_t));
    if (!keys) goto oom;
    uint64_t nk = 0;
    for (uint32_t t = 0; t < nt; ++t) {
        const int32_t *tb = m->tb_bones + m->tb_offsets[t];
        const uint32_t nb = m->tb_offsets[t + 1] - m->tb_offsets[t];
        for (uint32_t a = 0; a < nb; ++a)
            for (uint32_t b = a + 1; b < nb; ++b) keys[nk++] = pair_key(tb[a], tb[b]);
    }
    qsort(keys, nk, sizeof *keys, compare_u64);
    uint64_t unique = 0;
    for (uint64_t i = 0; i < nk; ++i)
        if (unique == 0 || keys[unique - 1] != keys[i]) keys[unique++] = keys[i];
    c->pair_count = (uint32_t)unique;
    c->keep_raw = keep_raw;
    c->pair_key = malloc((unique + 1) * sizeof(uint64_t));
    c->sorted = malloc((unique + 1) * sizeof(uint32_t));
    c->pairs = calloc((size_t)unique + 1, sizeof(pair_cells));
    if (!c->pair_key || !c->sorted || !c->pairs) goto oom;
    memcpy(c->pair_key, keys, unique * sizeof(uint64_t));
    for (uint64_t p = 0; p < unique; ++p) c->sorted[p] = (uint32_t)p;
    free(keys);
    keys = NULL;

    /* the entries of each pair: leaves weighting both of its bones */
    entry_first = calloc((size_t)unique + 1, sizeof(uint64_t));
    fill = calloc((size_t)unique + 1, sizeof(uint64_t));
    if (!entry_first || !fill) goto oom;
    for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t t = 0; t < nt; ++t) {
            const int32_t *tb = m->tb_bones + m->tb_offsets[t];
            const uint32_t nb = m->tb_offsets[t + 1] - m->tb_offsets[t];
            if (nb < 2) continue;
            const uint64_t l0 = m->leaf_offsets[t], l1 = m->leaf_offsets[t + 1];
            for (uint32_t a = 0; a < nb; ++a)
                for (uint32_t b = a + 1; b < nb; ++b) {
                    const int64_t p = find_pair(c, pair_key(tb[a], tb[b]));
                    uint64_t w = m->leaf_weight_offsets[t];
                    for (uint64_t l = l0; l < l1; ++l, w += nb) {
                        const float *lw = m->leaf_weights + w;
                        if (!(lw[a] > 0.0f && lw[b] > 0.0f)) continue;
                        if (pass == 0) {
                            ++entry_first[p + 1];
                        } else {
                            entry *en = &entries[entry_first[p] + fill[p]++];
                            en->leaf = l;
                            en->weights = w;
                            en->a = (uint8_t)a;
                            en->b = (uint8_t)b;
                        }
                    }
                }
        }
        if (pass == 0) {
            for (uint64_t p = 0; p < unique; ++p) entry_first[p + 1] += entry_first[p];
            entries = malloc((entry_first[unique] + 1) * sizeof(entry));
            if (!entries) goto oom;
        }
    }
    free(fill);
    fill = NULL;

    /* the cells of each pair, in parallel over pairs */
    job.m = m;
    job.cells = c;
    job.entries = entries;
    job.entry_first = entry_first;
    job.keep_raw = keep_raw;
    job.slots = ssk_parallel_threads();
    job.grids = calloc(job.slots, sizeof(double *));
    if (!job.grids) goto oom;
    ssk_parallel_for((int64_t)unique, 1, build_pair, &job);
    if (job.oom) goto oom;
    for (uint64_t p = 0; p < unique; ++p) c->cell_count += c->pairs[p].count;
    goto done;
oom:
    st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
done:
    if (job.grids)
        for (uint32_t i = 0; i < job.slots; ++i) free(job.grids[i]);
    free(job.grids);
    free(keys);
    free(fill);
    free(entries);
    free(entry_first);
    if (st != SSK_OK) {
        ssk_cor_cells_destroy(c);
        return st;
    }
    *out = c;
    return SSK_OK;
}

uint64_t ssk_cor_cells_count(const ssk_cor_cells *c)
{
    return c->cell_count;
}

typedef ssk_v8 v8;
typedef ssk_i8 i8;
#define V8(x) ssk_v8_splat(x)

/* exp(-y) for y in [0, COR_CELL_SKIP] (8 lanes): 2^n e^z with y log2(e) =
 * -n - z / ln 2, |z| <= ln 2 / 2, e^z by its Taylor polynomial of degree 7
 * (relative error below 1e-8 on that interval, under float rounding). */
static inline __attribute__((always_inline)) v8 exp_neg8(v8 y)
{
    const v8 t = y * V8(-1.4426950408889634f);
    const v8 n = __builtin_convertvector(__builtin_convertvector(t - V8(0.5f), i8), v8);
    /* t - 0.5 truncated toward zero is floor(t + 0.5) for t <= 0.5 */
    const v8 z = (t - n) * V8(0.6931471805599453f);
    v8 p = V8(1.0f / 5040.0f);
    p = p * z + V8(1.0f / 720.0f);
    p = p * z + V8(1.0f / 120.0f);
    p = p * z + V8(1.0f / 24.0f);
    p = p * z + V8(1.0f / 6.0f);
    p = p * z + V8(0.5f);
    p = p * z + V8(1.0f);
    p = p * z + V8(1.0f);
    i8 bits = (__builtin_convertvector(n, i8) + (i8){127, 127, 127, 127, 127, 127, 127, 127})
              << 23;
    v8 scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

SSK_TARGET_CLONES
static void pair_sums(double num[3], double *den, const float *block, uint64_t n, float dj,
                      float dk)
{
    v8 acc_w = V8(0.0f), acc0 = V8(0.0f), acc1 = V8(0.0f), acc2 = V8(0.0f);
    const v8 vdj = V8(dj), vdk = V8(dk);
    const v8 djj = V8(dj * dj), djk = V8(2.0f * dj * dk), dkk = V8(dk * dk);
    const v8 skip = V8((float)COR_CELL_SKIP);
#define F(field) ssk_v8_load(block + (uint64_t)(field) * n + i)
    for (uint64_t i = 0; i < n; i += 8) {
        const v8 x = vdj * F(F_UJ) + vdk * F(F_UK);
        const v8 x2 = x * x;
        const i8 live = x2 <= skip;
        const v8 K = ssk_v8_select(live, exp_neg8(ssk_v8_select(live, x2, V8(0.0f))), V8(0.0f));
        const v8 curv = V8(0.5f) * K * (V8(4.0f) * x2 - V8(2.0f));
        const v8 gx = V8(-2.0f) * x * K; /* grad K = gx d */
        acc_w += F(F_W) * K + curv * (djj * F(F_SJJ) + djk * F(F_SJK) + dkk * F(F_SKK));
        acc0 += K * F(F_C) + gx * (vdj * F(F_M1J) + vdk * F(F_M1K)) +
                curv * (djj * F(F_TJJ) + djk * F(F_TJK) + dkk * F(F_TKK));
        acc1 += K * F(F_C + 1) + gx * (vdj * F(F_M1J + 1) + vdk * F(F_M1K + 1)) +
                curv * (djj * F(F_TJJ + 1) + djk * F(F_TJK + 1) + dkk * F(F_TKK + 1));
        acc2 += K * F(F_C + 2) + gx * (vdj * F(F_M1J + 2) + vdk * F(F_M1K + 2)) +
                curv * (djj * F(F_TJJ + 2) + djk * F(F_TJK + 2) + dkk * F(F_TKK + 2));
    }
#undef F
    double w = 0.0, s0 = 0.0, s1 = 0.0, s2 = 0.0;
    for (int l = 0; l < 8; ++l) {
        w += acc_w[l];
        s0 += acc0[l];
        s1 += acc1[l];
        s2 += acc2[l];
    }
    *den = w;
    num[0] = s0;
    num[1] = s1;
    num[2] = s2;
}

uint64_t ssk_cor_cells_integrate(double sum[4], const ssk_cor_cells *c, const int32_t *bones,
                                 const float *w, uint32_t kp, float sigma)
{
    sum[0] = sum[1] = sum[2] = sum[3] = 0.0;
    const double inv_sigma = 1.0 / sigma;
    uint64_t visited = 0;
    for (uint32_t a = 0; a < kp; ++a)
        for (uint32_t b = a + 1; b < kp; ++b) {
            const double qj = w[a], qk = w[b];
            if (!(qj > 0.0 && qk > 0.0)) continue;
            const int64_t p = find_pair(c, pair_key(bones[a], bones[b]));
            if (p < 0) continue;
            const uint64_t n = c->pairs[p].padded;
            if (n == 0) continue;
            double num[3], den;
            pair_sums(num, &den, c->pairs[p].fields, n, (float)(-qk * inv_sigma),
                      (float)(qj * inv_sigma));
            const double alpha = qj * qk;
            for (int k = 0; k < 3; ++k) sum[k] += alpha * num[k];
            sum[3] += alpha * den;
            visited += n;
        }
    return visited;
}

/* ------------------------------------------------------------------------ */
/* Incremental updates (cells built with keep_raw; cor_precompute.c's       */
/* ssk_cor_state_update).                                                    */
/* ------------------------------------------------------------------------ */

int64_t ssk_cor_cells_pair(const ssk_cor_cells *c, int32_t j, int32_t k)
{
    return find_pair(c, pair_key(j, k));
}

int64_t ssk_cor_cells_add_pair(ssk_cor_cells *c, int32_t j, int32_t k)
{
    const uint64_t key = pair_key(j, k);
    const uint32_t at = lower_bound(c, key);
    if (at < c->pair_count && c->pair_key[c->sorted[at]] == key) return c->sorted[at];
    const uint32_t n = c->pair_count;
    uint64_t *keys = realloc(c->pair_key, ((size_t)n + 2) * sizeof(uint64_t));
    if (!keys) return -1;
    c->pair_key = keys;
    uint32_t *sorted = realloc(c->sorted, ((size_t)n + 2) * sizeof(uint32_t));
    if (!sorted) return -1;
    c->sorted = sorted;
    pair_cells *pairs = realloc(c->pairs, ((size_t)n + 2) * sizeof(pair_cells));
    if (!pairs) return -1;
    c->pairs = pairs;
    memset(&c->pairs[n], 0, sizeof c->pairs[n]); /* no cells yet: slots grow it */
    c->pair_key[n] = key;
    memmove(c->sorted + at + 1, c->sorted + at, (size_t)(n - at) * sizeof(uint32_t));
    c->sorted[at] = n;
    c->pair_count = n + 1;
    return n;
}

int64_t ssk_cor_cells_slot(ssk_cor_cells *c, uint32_t p, double uj, double uk)
{
    pair_cells *pc = &c->pairs[p];
    if (!pc->index) {
        pc->index = malloc((size_t)SSK_COR_CELLS * SSK_COR_CELLS * sizeof(int32_t));
        if (!pc->index) return -1;
        for (size_t i = 0; i < (size_t)SSK_COR_CELLS * SSK_COR_CELLS; ++i) pc->index[i] = -1;
        for (uint64_t n = 0; n < pc->count; ++n) pc->index[pc->coord[n]] = (int32_t)n;
    }
    const uint32_t cell = cell_of(uj, uk);
    if (pc->index[cell] >= 0) return pc->index[cell];
    if (pc->count == pc->capacity) {
        const uint64_t cap = 2 * pc->capacity + 8;
        double *raw = realloc(pc->raw, cap * MOMENTS * sizeof(double));
        if (!raw) return -1;
        pc->raw = raw;
        uint32_t *coord = realloc(pc->coord, cap * sizeof(uint32_t));
        if (!coord) return -1;
        pc->coord = coord;
        pc->capacity = cap;
    }
    const uint64_t n = pc->count++;
    memset(pc->raw + n * MOMENTS, 0, MOMENTS * sizeof(double));
    pc->coord[n] = cell;
    pc->index[cell] = (int32_t)n;
    c->cell_count++;
    return (int64_t)n;
}

double *ssk_cor_cells_raw(ssk_cor_cells *c, uint32_t p, uint64_t slot)
{
    return c->pairs[p].raw + slot * MOMENTS;
}

ssk_status ssk_cor_cells_refresh(ssk_cor_cells *c, uint32_t p, ssk_error *err)
{
    pair_cells *pc = &c->pairs[p];
    uint64_t live = 0;
    for (uint64_t n = 0; n < pc->count; ++n) live += pc->raw[n * MOMENTS + M_W] > 0.0;
    const uint64_t padded = (live + 7) & ~(uint64_t)7;
    float *fields = calloc(padded * FIELDS + 1, sizeof(float));
    if (!fields)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    uint64_t i = 0;
    for (uint64_t n = 0; n < pc->count; ++n)
        if (pc->raw[n * MOMENTS + M_W] > 0.0) central_fields(fields, padded, i++, pc->raw + n * MOMENTS);
    free(pc->fields);
    pc->fields = fields;
    pc->padded = live ? padded : 0;
    return SSK_OK;
}

float *ssk_cor_delta_fields(const double *old_raw, const double *new_raw, uint32_t n,
                            uint64_t *out_padded)
{
    const uint64_t padded = ((uint64_t)2 * n + 7) & ~(uint64_t)7;
    float *fields = calloc(padded * FIELDS + 1, sizeof(float));
    if (!fields) return NULL;
    uint64_t i = 0;
    for (uint32_t k = 0; k < n; ++k) {
        if (new_raw[(size_t)k * MOMENTS + M_W] > 0.0)
            central_fields(fields, padded, i++, new_raw + (size_t)k * MOMENTS);
        if (old_raw[(size_t)k * MOMENTS + M_W] > 0.0) {
            central_fields(fields, padded, i, old_raw + (size_t)k * MOMENTS);
            /* minus the old cell: every field but the centroid is linear in
             * the moments */
            for (int f = F_W; f < FIELDS; ++f) fields[(uint64_t)f * padded + i] *= -1.0f;
            ++i;
        }
    }
    *out_padded = padded;
    return fields;
}

void ssk_cor_fields_sums(double num[3], double *den, const float *fields, uint64_t padded,
                         double qj, double qk, float sigma)
{
    const double inv_sigma = 1.0 / sigma;
    pair_sums(num, den, fields, padded, (float)(-qk * inv_sigma), (float)(qj * inv_sigma));
}

uint32_t ssk_cor_cells_pair_count(const ssk_cor_cells *c) { return c->pair_count; }

void ssk_cor_cells_pair_bones(const ssk_cor_cells *c, uint32_t p, int32_t *j, int32_t *k)
{
    *j = (int32_t)(uint32_t)(c->pair_key[p] >> 32);
    *k = (int32_t)(uint32_t)c->pair_key[p];
}

const float *ssk_cor_cells_pair_fields(const ssk_cor_cells *c, uint32_t p, uint64_t *padded)
{
    *padded = c->pairs[p].padded;
    return c->pairs[p].fields;
}
