/*
 * spring_multigrid.c — the surface multigrid correction of the spring
 * solver (issue #36; not in Toothman 2020, whose solver is the plain Jacobi
 * update of Eq. 23).
 *
 * Why. The per-bone multilevel correction (spring_multilevel.c) removes
 * error that is smooth along a bone. On a character the slowest error is
 * smooth over the surface instead: a torso twist spreading over the spine,
 * pelvis and thighs, whose vertices belong to many short bones. Measured on
 * the walk of bench/cor_bodies.py's body at 15,070 vertices (frame 6, the
 * torso turned 45 degrees): after 80 multilevel passes the largest distance
 * to the equilibrium is still 1.0e-3 (8% of an edge), contracting by 0.985
 * a pass, and the passes to the old threshold grow with the density (45 a
 * frame at 15k, 74 and the cap at 60k).
 *
 * What. A smoothed-aggregation algebraic multigrid (Vanek, Mandel and
 * Brezina 1996) of the solver's own linearization at rest, used as the
 * coarse-grid correction of each nonlinear pass:
 *
 *   A0 = -dF/dx at the rest pose (#V by #V blocks of 3 by 3, the one-ring
 *        stencil of the forces), probed with the plain pass itself (the
 *        detail force off, its Jacobian added exactly): the vertices of
 *        one color of a distance-2 coloring are displaced by a small probe
 *        along one axis at once, and F = g / p (g the plain step, p its
 *        per-vertex step size) read back; then scaled by the vertex
 *        degree, symmetrized and replaced by a positive semi-definite
 *        model (psd_model below);
 *   P0   the prolongation from level-1 aggregates to vertices: the
 *        aggregates' translations (the tentative prolongation T0, one
 *        aggregate per vertex) smoothed once by the umbrella operator,
 *        P0 = (1/3) T0 + (2/3) W T0 (W the mean over the one-ring), so a
 *        vertex takes a scalar weight of its own and its neighbors'
 *        aggregates;
 *   Al+1 = Pl^T Al Pl (Galerkin), Pl for l >= 1 the block-smoothed
 *        aggregation (I - w Dl^-1 Al) Tl, Dl the 3 by 3 block diagonal,
 *        w = 4 / (3 lambda_max(Dl^-1 Al));
 *        coarsening stops at SSK_SPRING_MG_COARSEST nodes, where Al is
 *        factored (LU with partial pivoting, double).
 *
 * Each pass: the nonlinear plain pass from x gives the step g = p F(x)
 * (the pre-smoothing); the linearized residual after it is r = D F(x) -
 * A0 g; one V-cycle (block Jacobi weighted w, SSK_SPRING_MG_SWEEPS sweeps
 * before and after) solves A1 e1 = P0^T r approximately; the step becomes
 * g + theta P0 e1 on the free vertices, then the Anderson fit of the last
 * steps (ssk_spring_mg_anderson). The fixed point is the plain update's:
 * everything added is a linear map of F, which vanishes at the
 * equilibrium. docs/springs-at-density.md measures each part.
 *
 * Aggregation: greedy (the three phases of Vanek et al.): a node whose
 * neighbors are all free forms an aggregate with them; the rest join a
 * neighboring aggregate; what is left forms its own.
 */
#include "kernels/spring.h"
#include "kernels/simd.h"

#include "model/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- block sparse rows --------------------------------------------------- */

static void bsr_free(ssk_spring_bsr *m)
{
    free(m->ptr);
    free(m->col);
    free(m->val);
    memset(m, 0, sizeof *m);
}

static bool bsr_alloc(ssk_spring_bsr *m, uint32_t rows, uint32_t cols, size_t nnz)
{
    m->rows = rows;
    m->cols = cols;
    m->ptr = calloc((size_t)rows + 1, sizeof(uint32_t));
    m->col = malloc((nnz + 1) * sizeof(uint32_t));
    m->val = calloc(9 * nnz + 1, sizeof(float));
    return m->ptr && m->col && m->val;
}

/* y = M x (3-vectors), rows [begin, end) */
static void bsr_mul_rows(const ssk_spring_bsr *m, const float *x, float *y, int64_t begin,
                         int64_t end)
{
    for (int64_t i = begin; i < end; ++i) {
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
        for (uint32_t e = m->ptr[i]; e < m->ptr[i + 1]; ++e) {
            const float *b = m->val + 9 * (size_t)e, *v = x + 3 * (size_t)m->col[e];
            s0 += b[0] * v[0] + b[1] * v[1] + b[2] * v[2];
            s1 += b[3] * v[0] + b[4] * v[1] + b[5] * v[2];
            s2 += b[6] * v[0] + b[7] * v[1] + b[8] * v[2];
        }
        y[3 * (size_t)i] = s0;
        y[3 * (size_t)i + 1] = s1;
        y[3 * (size_t)i + 2] = s2;
    }
}

typedef struct mul_job {
    const ssk_spring_bsr *m;
    const float *x;
    float *y;
} mul_job;

static void mul_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const mul_job *j = ctx;
    (void)chunk;
    bsr_mul_rows(j->m, j->x, j->y, begin, end);
}

/* y = M x; rows in parallel (each row's sum in one order: the same result
 * whatever the thread count) */
static void bsr_mul(const ssk_spring_bsr *m, const float *x, float *y)
{
    mul_job j = {m, x, y};
    if (m->rows >= SSK_SPRING_MG_PARALLEL_ROWS)
        ssk_parallel_for(m->rows, SSK_SPRING_MG_PARALLEL_ROWS / 2, mul_chunk, &j);
    else
        bsr_mul_rows(m, x, y, 0, m->rows);
}

static void mat3_mul(float *c, const float *a, const float *b, bool accumulate)
{
    float t[9];
    for (int r = 0; r < 3; ++r)
        for (int q = 0; q < 3; ++q)
            t[3 * r + q] = a[3 * r] * b[q] + a[3 * r + 1] * b[3 + q] + a[3 * r + 2] * b[6 + q];
    for (int k = 0; k < 9; ++k) c[k] = accumulate ? c[k] + t[k] : t[k];
}

/* C = A B; marker: B->cols entries of scratch. */
static bool bsr_product(ssk_spring_bsr *c, const ssk_spring_bsr *a, const ssk_spring_bsr *b)
{
    int64_t *where = malloc(((size_t)b->cols + 1) * sizeof(int64_t));
    if (!where) return false;
    for (uint32_t k = 0; k < b->cols; ++k) where[k] = -1;
    /* count */
    size_t nnz = 0;
    uint32_t *ptr = calloc((size_t)a->rows + 1, sizeof(uint32_t));
    if (!ptr) {
        free(where);
        return false;
    }
    for (uint32_t i = 0; i < a->rows; ++i) {
        const size_t start = nnz;
        for (uint32_t e = a->ptr[i]; e < a->ptr[i + 1]; ++e) {
            const uint32_t j = a->col[e];
            for (uint32_t f = b->ptr[j]; f < b->ptr[j + 1]; ++f) {
                const uint32_t k = b->col[f];
                if (where[k] < (int64_t)start) where[k] = (int64_t)nnz++;
            }
        }
        ptr[i + 1] = (uint32_t)nnz;
    }
    free(ptr);
    for (uint32_t k = 0; k < b->cols; ++k) where[k] = -1;
    if (!bsr_alloc(c, a->rows, b->cols, nnz)) {
        free(where);
        return false;
    }
    size_t at = 0;
    for (uint32_t i = 0; i < a->rows; ++i) {
        const size_t start = at;
        for (uint32_t e = a->ptr[i]; e < a->ptr[i + 1]; ++e) {
            const uint32_t j = a->col[e];
            for (uint32_t f = b->ptr[j]; f < b->ptr[j + 1]; ++f) {
                const uint32_t k = b->col[f];
                if (where[k] < (int64_t)start) {
                    where[k] = (int64_t)at;
                    c->col[at++] = k;
                }
                mat3_mul(c->val + 9 * (size_t)where[k], a->val + 9 * (size_t)e,
                         b->val + 9 * (size_t)f, true);
            }
        }
        c->ptr[i + 1] = (uint32_t)at;
    }
    free(where);
    return true;
}

static bool bsr_transpose(ssk_spring_bsr *t, const ssk_spring_bsr *m)
{
    const size_t nnz = m->ptr[m->rows];
    if (!bsr_alloc(t, m->cols, m->rows, nnz)) return false;
    for (size_t e = 0; e < nnz; ++e) ++t->ptr[m->col[e] + 1];
    for (uint32_t k = 0; k < t->rows; ++k) t->ptr[k + 1] += t->ptr[k];
    uint32_t *fill = malloc(((size_t)t->rows + 1) * sizeof(uint32_t));
    if (!fill) return false;
    memcpy(fill, t->ptr, (size_t)t->rows * sizeof(uint32_t));
    for (uint32_t i = 0; i < m->rows; ++i)
        for (uint32_t e = m->ptr[i]; e < m->ptr[i + 1]; ++e) {
            const uint32_t at = fill[m->col[e]]++;
            t->col[at] = i;
            const float *b = m->val + 9 * (size_t)e;
            float *d = t->val + 9 * (size_t)at;
            for (int r = 0; r < 3; ++r)
                for (int q = 0; q < 3; ++q) d[3 * r + q] = b[3 * q + r];
        }
    free(fill);
    return true;
}

/* m = (m + m^T) / 2 over the union of both patterns (repeated columns of a
 * row merged). */
static bool bsr_symmetrize(ssk_spring_bsr *m)
{
    ssk_spring_bsr t, s;
    memset(&t, 0, sizeof t);
    memset(&s, 0, sizeof s);
    int64_t *where = malloc(((size_t)m->cols + 1) * sizeof(int64_t));
    bool ok = where && bsr_transpose(&t, m) &&
              bsr_alloc(&s, m->rows, m->cols, (size_t)m->ptr[m->rows] + t.ptr[t.rows]);
    if (ok) {
        for (uint32_t k = 0; k < m->cols; ++k) where[k] = -1;
        size_t at = 0;
        for (uint32_t i = 0; i < m->rows; ++i) {
            const size_t start = at;
            for (int side = 0; side < 2; ++side) {
                const ssk_spring_bsr *src = side ? &t : m;
                for (uint32_t e = src->ptr[i]; e < src->ptr[i + 1]; ++e) {
                    const uint32_t j = src->col[e];
                    if (where[j] < (int64_t)start) {
                        where[j] = (int64_t)at;
                        s.col[at++] = j;
                    }
                    float *d = s.val + 9 * (size_t)where[j];
                    for (int k = 0; k < 9; ++k) d[k] += 0.5f * src->val[9 * (size_t)e + k];
                }
            }
            s.ptr[i + 1] = (uint32_t)at;
        }
        bsr_free(m);
        *m = s;
        memset(&s, 0, sizeof s);
    }
    free(where);
    bsr_free(&t);
    bsr_free(&s);
    return ok;
}

/* The symmetric 3 by 3 block b with its negative eigenvalues set to 0
 * (cyclic Jacobi rotations, double). */
static void psd_projection(float *dst, const float *b)
{
    double a[3][3], v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int r = 0; r < 3; ++r)
        for (int q = 0; q < 3; ++q) a[r][q] = 0.5 * ((double)b[3 * r + q] + b[3 * q + r]);
    for (int sweep = 0; sweep < 12; ++sweep)
        for (int p = 0; p < 2; ++p)
            for (int q = p + 1; q < 3; ++q) {
                if (fabs(a[p][q]) < 1e-30) continue;
                const double theta = 0.5 * atan2(2.0 * a[p][q], a[q][q] - a[p][p]);
                const double c = cos(theta), s = sin(theta);
                for (int k = 0; k < 3; ++k) {
                    const double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; ++k) {
                    const double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; ++k) {
                    const double vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = c * vkp - s * vkq;
                    v[k][q] = s * vkp + c * vkq;
                }
            }
    for (int r = 0; r < 3; ++r)
        for (int q = 0; q < 3; ++q) {
            double x = 0.0;
            for (int k = 0; k < 3; ++k) x += v[r][k] * (a[k][k] > 0.0 ? a[k][k] : 0.0) * v[q][k];
            dst[3 * r + q] = (float)x;
        }
}

/* Replaces the symmetric m (vertex rows) by a model that is positive
 * semi-definite by construction: each coupling i-j by the isotropic
 * c_ij I, c_ij = min(0, trace(m_ij) / 3) (a weighted graph Laplacian),
 * plus on the diagonal the positive part of the row's sum (what resists a
 * translation of the vertex with its neighbors: the anchored springs).
 * The spring forces are not all gradients (the torsion's lever, the bone
 * springs): their symmetric part can be indefinite (the 241k-vertex
 * body's toes: an eigenvalue of -52 against diagonals of 650 and more),
 * and a multigrid of an indefinite operator corrects along its negative
 * modes without bound. */
static void psd_model(ssk_spring_bsr *m)
{
    for (uint32_t i = 0; i < m->rows; ++i) {
        float sum[9] = {0}, lap = 0.0f;
        uint32_t self = UINT32_MAX;
        for (uint32_t e = m->ptr[i]; e < m->ptr[i + 1]; ++e) {
            float *b = m->val + 9 * (size_t)e;
            for (int k = 0; k < 9; ++k) sum[k] += b[k];
            if (m->col[e] == i) {
                self = e;
                continue;
            }
            float c = (b[0] + b[4] + b[8]) / 3.0f;
            c = c < 0.0f ? c : 0.0f;
            memset(b, 0, 9 * sizeof(float));
            b[0] = b[4] = b[8] = c;
            lap -= c;
        }
        if (self == UINT32_MAX) continue; /* every row has its vertex */
        float *d = m->val + 9 * (size_t)self;
        psd_projection(d, sum);
        d[0] += lap;
        d[4] += lap;
        d[8] += lap;
    }
}

/* Inverse of a 3 by 3 block (0 when singular relative to its scale). */
static void mat3_inverse(float *dst, const float *m)
{
    const double a = m[0], b = m[1], c = m[2], d = m[3], e = m[4], f = m[5], g = m[6], h = m[7],
                 i = m[8];
    const double A = e * i - f * h, B = -(d * i - f * g), C = d * h - e * g;
    const double det = a * A + b * B + c * C;
    const double scale = fabs(a) + fabs(e) + fabs(i);
    if (!(fabs(det) > 1e-9 * scale * scale * scale) || !isfinite(det)) {
        memset(dst, 0, 9 * sizeof(float));
        return;
    }
    const double r = 1.0 / det;
    dst[0] = (float)(A * r);
    dst[1] = (float)(-(b * i - c * h) * r);
    dst[2] = (float)((b * f - c * e) * r);
    dst[3] = (float)(B * r);
    dst[4] = (float)((a * i - c * g) * r);
    dst[5] = (float)(-(a * f - c * d) * r);
    dst[6] = (float)(C * r);
    dst[7] = (float)(-(a * h - b * g) * r);
    dst[8] = (float)((a * e - b * d) * r);
}

/* --- aggregation ---------------------------------------------------------- */

/* Aggregates of the graph (ptr, col) over n nodes (self entries ignored):
 * agg[i] in [0, count). Returns the count. */
static uint32_t aggregate(uint32_t n, const uint32_t *ptr, const uint32_t *col, int32_t *agg)
{
    for (uint32_t i = 0; i < n; ++i) agg[i] = -1;
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (agg[i] >= 0) continue;
        bool free_all = true;
        for (uint32_t e = ptr[i]; e < ptr[i + 1] && free_all; ++e) free_all = agg[col[e]] < 0;
        if (!free_all) continue;
        agg[i] = (int32_t)count;
        for (uint32_t e = ptr[i]; e < ptr[i + 1]; ++e) agg[col[e]] = (int32_t)count;
        ++count;
    }
    /* phase 2: join a neighbor's aggregate from phase 1 */
    int32_t *first = malloc(((size_t)n + 1) * sizeof(int32_t));
    if (!first) return 0;
    memcpy(first, agg, (size_t)n * sizeof(int32_t));
    for (uint32_t i = 0; i < n; ++i) {
        if (first[i] >= 0) continue;
        for (uint32_t e = ptr[i]; e < ptr[i + 1]; ++e)
            if (first[col[e]] >= 0) {
                agg[i] = first[col[e]];
                break;
            }
    }
    free(first);
    /* phase 3: the rest join any neighboring aggregate (phase 2's
     * included); only a node with none forms its own with its free
     * neighbors. Singletons and pairs would make basis functions that the
     * smoothing below spreads almost entirely onto their neighbors' (an
     * almost singular Galerkin diagonal block) */
    for (int sweep = 0; sweep < 2; ++sweep)
        for (uint32_t i = 0; i < n; ++i) {
            if (agg[i] >= 0) continue;
            for (uint32_t e = ptr[i]; e < ptr[i + 1]; ++e)
                if (agg[col[e]] >= 0) {
                    agg[i] = agg[col[e]];
                    break;
                }
        }
    for (uint32_t i = 0; i < n; ++i) {
        if (agg[i] >= 0) continue;
        agg[i] = (int32_t)count;
        for (uint32_t e = ptr[i]; e < ptr[i + 1]; ++e)
            if (agg[col[e]] < 0) agg[col[e]] = (int32_t)count;
        ++count;
    }
    return count;
}

/* --- the spring graph, symmetric ------------------------------------------- */

/* The spring's adjacency made symmetric and without repeats (a welded rig
 * can list an edge one way only, or twice): what the coloring and the
 * first aggregation need. */
static bool symmetric_graph(const ssk_spring *sp, uint32_t **out_ptr, uint32_t **out_col)
{
    const uint32_t nv = sp->vertex_count;
    uint32_t *ptr = calloc((size_t)nv + 1, sizeof(uint32_t));
    uint32_t *col = malloc((2 * (size_t)sp->edge_count + 1) * sizeof(uint32_t));
    uint32_t *fill = malloc(((size_t)nv + 1) * sizeof(uint32_t));
    if (!ptr || !col || !fill) goto fail;
    for (uint32_t i = 0; i < nv; ++i)
        for (uint32_t e = sp->offsets[i]; e < sp->offsets[i + 1]; ++e) {
            ++ptr[i + 1];
            ++ptr[sp->edges[e].neighbor + 1];
        }
    for (uint32_t i = 0; i < nv; ++i) ptr[i + 1] += ptr[i];
    memcpy(fill, ptr, (size_t)nv * sizeof(uint32_t));
    for (uint32_t i = 0; i < nv; ++i)
        for (uint32_t e = sp->offsets[i]; e < sp->offsets[i + 1]; ++e) {
            const uint32_t j = sp->edges[e].neighbor;
            col[fill[i]++] = j;
            col[fill[j]++] = i;
        }
    /* drop repeats and self entries, compacting in place */
    uint32_t at = 0, start = 0;
    for (uint32_t i = 0; i < nv; ++i) {
        const uint32_t end = ptr[i + 1], first = at;
        for (uint32_t e = start; e < end; ++e) {
            const uint32_t j = col[e];
            bool seen = j == i;
            for (uint32_t f = first; f < at && !seen; ++f) seen = col[f] == j;
            if (!seen) col[at++] = j;
        }
        start = end;
        ptr[i + 1] = at;
    }
    free(fill);
    *out_ptr = ptr;
    *out_col = col;
    return true;
fail:
    free(ptr);
    free(col);
    free(fill);
    return false;
}

/* --- creation -------------------------------------------------------------- */

void ssk_spring_mg_destroy(ssk_spring_mg *mg)
{
    if (!mg) return;
    for (uint32_t l = 0; l <= SSK_SPRING_MG_MAX_LEVELS; ++l) {
        bsr_free(&mg->A[l]);
        free(mg->dinv[l]);
        free(mg->b[l]);
        free(mg->x[l]);
        free(mg->t[l]);
    }
    for (uint32_t l = 0; l < SSK_SPRING_MG_MAX_LEVELS; ++l) {
        bsr_free(&mg->P[l]);
        bsr_free(&mg->R[l]);
    }
    free(mg->p0_ptr);
    free(mg->p0_col);
    free(mg->p0_w);
    free(mg->r0_ptr);
    free(mg->r0_row);
    free(mg->r0_w);
    free(mg->aa_s);
    free(mg->aa_df);
    free(mg->aa_x);
    free(mg->aa_f);
    free(mg->aa_partial);
    free(mg->chunk_max);
    free(mg->frozen);
    free(mg->f_ptr);
    free(mg->f_col);
    free(mg->f_off);
    free(mg->f_diag);
    free(mg->lu);
    free(mg->piv);
    free(mg->work);
    free(mg);
}

uint32_t ssk_spring_mg_colors(const ssk_spring *sp, uint32_t *color)
{
    const uint32_t nv = sp->vertex_count;
    uint32_t *ptr = NULL, *col = NULL;
    if (!symmetric_graph(sp, &ptr, &col)) return 0;
    uint32_t count = 0, cap = 64;
    /* the colors within distance 2 of vertex i, marked with i + 1 */
    uint32_t *seen = calloc(cap, sizeof(uint32_t));
    if (!seen) {
        free(ptr);
        free(col);
        return 0;
    }
    for (uint32_t i = 0; i < nv; ++i) color[i] = UINT32_MAX;
    for (uint32_t i = 0; i < nv; ++i) {
        for (uint32_t e = ptr[i]; e < ptr[i + 1]; ++e) {
            const uint32_t j = col[e];
            if (color[j] != UINT32_MAX) seen[color[j]] = i + 1;
            for (uint32_t f = ptr[j]; f < ptr[j + 1]; ++f)
                if (color[col[f]] != UINT32_MAX) seen[color[col[f]]] = i + 1;
        }
        uint32_t c = 0; /* the smallest color not seen */
        while (c < count && seen[c] == i + 1) ++c;
        if (c == count) {
            if (count == cap) {
                uint32_t *grown = realloc(seen, 2 * (size_t)cap * sizeof(uint32_t));
                if (!grown) {
                    free(seen);
                    free(ptr);
                    free(col);
                    return 0;
                }
                memset(grown + cap, 0, cap * sizeof(uint32_t));
                seen = grown;
                cap *= 2;
            }
            ++count;
        }
        color[i] = c;
    }
    free(seen);
    free(ptr);
    free(col);
    return count;
}

ssk_spring_mg *ssk_spring_mg_begin(const ssk_spring *sp)
{
    const uint32_t nv = sp->vertex_count;
    ssk_spring_mg *mg = calloc(1, sizeof *mg);
    if (!mg) return NULL;
    /* A0's pattern: the vertex itself, then its neighbors */
    if (!bsr_alloc(&mg->A[0], nv, nv, (size_t)nv + sp->edge_count)) goto fail;
    uint32_t at = 0;
    for (uint32_t i = 0; i < nv; ++i) {
        mg->A[0].col[at++] = i;
        for (uint32_t e = sp->offsets[i]; e < sp->offsets[i + 1]; ++e)
            mg->A[0].col[at++] = sp->edges[e].neighbor;
        mg->A[0].ptr[i + 1] = at;
    }
    bool any_map = false;
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) any_map |= sp->maps[f] != NULL;
    if (any_map) {
        if (!(mg->frozen = malloc((size_t)nv + 1))) goto fail;
        for (uint32_t i = 0; i < nv; ++i) {
            float k = 0.0f;
            for (int f = 0; f < SSK_FORCE_COUNT; ++f)
                k += sp->params.stiffness[f] * (sp->maps[f] ? sp->maps[f][i] : 1.0f);
            mg->frozen[i] = !(k > 0.0f);
        }
    }
    return mg;
fail:
    ssk_spring_mg_destroy(mg);
    return NULL;
}

void ssk_spring_mg_probe_read(ssk_spring_mg *mg, const ssk_spring *sp, const uint32_t *color,
                              uint32_t c, uint32_t axis, const float *dforce,
                              const float *amplitude)
{
    const uint32_t nv = sp->vertex_count;
    ssk_spring_bsr *a = &mg->A[0];
    for (uint32_t i = 0; i < nv; ++i)
        for (uint32_t e = a->ptr[i]; e < a->ptr[i + 1]; ++e) {
            if (color[a->col[e]] != c) continue;
            float *b = a->val + 9 * (size_t)e;
            const float amp = amplitude[a->col[e]];
            for (int r = 0; r < 3; ++r) b[3 * r + axis] = -dforce[3 * (size_t)i + r] / amp;
            break; /* distance-2 coloring: one per row */
        }
}

void ssk_spring_mg_add_detail(ssk_spring_mg *mg, const ssk_spring *sp, const uint8_t *roles)
{
    const float *map = sp->maps[SSK_FORCE_DETAIL];
    ssk_spring_bsr *a = &mg->A[0];
    for (uint32_t i = 0; i < sp->vertex_count; ++i) {
        const uint32_t deg = sp->offsets[i + 1] - sp->offsets[i];
        if (!deg || roles[i] != SSK_ROLE_FREE) continue;
        const float kd = sp->params.stiffness[SSK_FORCE_DETAIL] * (map ? map[i] : 1.0f);
        /* A0 = -dF/dx: +k_d on the vertex, -k_d / deg per directed edge
         * (a neighbor listed twice counts twice) */
        for (uint32_t e = a->ptr[i]; e < a->ptr[i + 1]; ++e) {
            float *b = a->val + 9 * (size_t)e;
            const float v = e == a->ptr[i] ? kd : -kd / (float)deg;
            b[0] += v;
            b[4] += v;
            b[8] += v;
        }
    }
}

static bool make_dinv(ssk_spring_mg *mg, uint32_t l)
{
    const ssk_spring_bsr *a = &mg->A[l];
    mg->dinv[l] = malloc((9 * (size_t)a->rows + 1) * sizeof(float));
    if (!mg->dinv[l]) return false;
    for (uint32_t i = 0; i < a->rows; ++i) {
        float *d = mg->dinv[l] + 9 * (size_t)i;
        memset(d, 0, 9 * sizeof(float));
        for (uint32_t e = a->ptr[i]; e < a->ptr[i + 1]; ++e)
            if (a->col[e] == i) mat3_inverse(d, a->val + 9 * (size_t)e);
    }
    return true;
}

/* The largest eigenvalue of D_l^-1 A_l by power iteration (the Jacobi
 * weights are 4 / (3 lambda): damped where the Galerkin operators are far
 * from M-matrices). */
static float lambda_max(const ssk_spring_mg *mg, uint32_t l, float *v, float *w)
{
    const ssk_spring_bsr *a = &mg->A[l];
    const size_t n3 = 3 * (size_t)a->rows;
    ssk_spring_fixed_noise(v, n3);
    double lambda = 0.0;
    for (int it = 0; it < 40; ++it) {
        double norm = 0.0;
        for (size_t k = 0; k < n3; ++k) norm += (double)v[k] * v[k];
        norm = sqrt(norm);
        if (!(norm > 0.0)) return 1.0f;
        for (size_t k = 0; k < n3; ++k) v[k] = (float)(v[k] / norm);
        bsr_mul(a, v, w);
        for (uint32_t i = 0; i < a->rows; ++i) {
            const float *d = mg->dinv[l] + 9 * (size_t)i, *x = w + 3 * (size_t)i;
            float *o = v + 3 * (size_t)i;
            o[0] = d[0] * x[0] + d[1] * x[1] + d[2] * x[2];
            o[1] = d[3] * x[0] + d[4] * x[1] + d[5] * x[2];
            o[2] = d[6] * x[0] + d[7] * x[1] + d[8] * x[2];
        }
        double out = 0.0;
        for (size_t k = 0; k < n3; ++k) out += (double)v[k] * v[k];
        lambda = sqrt(out);
    }
    lambda *= 1.1; /* power iteration approaches from below */
    return lambda > 1.0 ? (float)lambda : 1.0f;
}

static bool work_vectors(ssk_spring_mg *mg, uint32_t l, uint32_t n)
{
    mg->n[l] = n;
    mg->b[l] = calloc(3 * (size_t)n + 1, sizeof(float));
    mg->x[l] = calloc(3 * (size_t)n + 1, sizeof(float));
    mg->t[l] = calloc(3 * (size_t)n + 1, sizeof(float));
    return mg->b[l] && mg->x[l] && mg->t[l];
}

/* Dense LU with partial pivoting of A (n by n, row-major, double). */
static void lu_factor(double *a, int32_t *piv, uint32_t n)
{
    double top = 0.0;
    for (size_t k = 0; k < (size_t)n * n; ++k) top = fabs(a[k]) > top ? fabs(a[k]) : top;
    const double floor = 1e-9 * (top > 0.0 ? top : 1.0);
    for (uint32_t k = 0; k < n; ++k) {
        uint32_t p = k;
        for (uint32_t i = k + 1; i < n; ++i)
            if (fabs(a[(size_t)i * n + k]) > fabs(a[(size_t)p * n + k])) p = i;
        piv[k] = (int32_t)p;
        if (p != k)
            for (uint32_t j = 0; j < n; ++j) {
                const double t = a[(size_t)k * n + j];
                a[(size_t)k * n + j] = a[(size_t)p * n + j];
                a[(size_t)p * n + j] = t;
            }
        /* a singular coarsest operator (a mode nothing resists): regularize */
        if (fabs(a[(size_t)k * n + k]) < floor) a[(size_t)k * n + k] = floor;
        const double inv = 1.0 / a[(size_t)k * n + k];
        for (uint32_t i = k + 1; i < n; ++i) {
            const double f = a[(size_t)i * n + k] * inv;
            a[(size_t)i * n + k] = f;
            if (f == 0.0) continue;
            for (uint32_t j = k + 1; j < n; ++j) a[(size_t)i * n + j] -= f * a[(size_t)k * n + j];
        }
    }
}

static void lu_solve(const double *a, const int32_t *piv, uint32_t n, double *x)
{
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t p = (uint32_t)piv[k];
        if (p != k) {
            const double t = x[k];
            x[k] = x[p];
            x[p] = t;
        }
    }
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < i; ++j) x[i] -= a[(size_t)i * n + j] * x[j];
    for (uint32_t i = n; i-- > 0;) {
        for (uint32_t j = i + 1; j < n; ++j) x[i] -= a[(size_t)i * n + j] * x[j];
        x[i] /= a[(size_t)i * n + i];
    }
}

bool ssk_spring_mg_finish(ssk_spring_mg *mg, const ssk_spring *sp)
{
    const uint32_t nv = sp->vertex_count;
    /* level 1 aggregates over the mesh graph */
    int32_t *agg = malloc(((size_t)nv + 1) * sizeof(int32_t));
    if (!agg) return false;
    uint32_t *gptr = NULL, *gcol = NULL;
    if (!symmetric_graph(sp, &gptr, &gcol)) {
        free(agg);
        return false;
    }
    const uint32_t n1 = aggregate(nv, gptr, gcol, agg);
    free(gptr);
    free(gcol);
    if (n1 == 0) {
        free(agg);
        return false;
    }
    /* P0 (scalar weights): (1/3) own aggregate + (2/3) mean of the
     * neighbors' aggregates; rows without neighbors: their own */
    mg->p0_ptr = calloc((size_t)nv + 1, sizeof(uint32_t));
    mg->p0_col = malloc(((size_t)nv + sp->edge_count + 1) * sizeof(uint32_t));
    mg->p0_w = malloc(((size_t)nv + sp->edge_count + 1) * sizeof(float));
    if (!mg->p0_ptr || !mg->p0_col || !mg->p0_w) {
        free(agg);
        return false;
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < nv; ++i) {
        const uint32_t start = at, deg = sp->offsets[i + 1] - sp->offsets[i];
        const float own = deg ? SSK_SPRING_MG_P0_OWN : 1.0f;
        const float each = deg ? (1.0f - SSK_SPRING_MG_P0_OWN) / (float)deg : 0.0f;
        mg->p0_col[at] = (uint32_t)agg[i];
        mg->p0_w[at++] = own;
        for (uint32_t e = sp->offsets[i]; e < sp->offsets[i + 1]; ++e) {
            const uint32_t a = (uint32_t)agg[sp->edges[e].neighbor];
            uint32_t k = start;
            while (k < at && mg->p0_col[k] != a) ++k;
            if (k == at) {
                mg->p0_col[at] = a;
                mg->p0_w[at++] = 0.0f;
            }
            mg->p0_w[k] += each;
        }
        mg->p0_ptr[i + 1] = at;
    }
    free(agg);
    /* its transpose, for the restriction */
    mg->r0_ptr = calloc((size_t)n1 + 1, sizeof(uint32_t));
    mg->r0_row = malloc(((size_t)at + 1) * sizeof(uint32_t));
    mg->r0_w = malloc(((size_t)at + 1) * sizeof(float));
    if (!mg->r0_ptr || !mg->r0_row || !mg->r0_w) return false;
    for (uint32_t k = 0; k < at; ++k) ++mg->r0_ptr[mg->p0_col[k] + 1];
    for (uint32_t a = 0; a < n1; ++a) mg->r0_ptr[a + 1] += mg->r0_ptr[a];
    {
        uint32_t *fill = malloc(((size_t)n1 + 1) * sizeof(uint32_t));
        if (!fill) return false;
        memcpy(fill, mg->r0_ptr, (size_t)n1 * sizeof(uint32_t));
        for (uint32_t i = 0; i < nv; ++i)
            for (uint32_t k = mg->p0_ptr[i]; k < mg->p0_ptr[i + 1]; ++k) {
                const uint32_t d = fill[mg->p0_col[k]]++;
                mg->r0_row[d] = i;
                mg->r0_w[d] = mg->p0_w[k];
            }
        free(fill);
    }
    /* A0's rows times the vertex degree: the forces are means over the
     * one-ring (the umbrella operator D^-1 L of the detail force), so D A0
     * is about symmetric, and the Galerkin operators below and the V-cycle
     * with them */
    for (uint32_t i = 0; i < nv; ++i) {
        const uint32_t deg = sp->offsets[i + 1] - sp->offsets[i];
        const float d = deg ? (float)deg : 1.0f;
        for (uint32_t e = mg->A[0].ptr[i]; e < mg->A[0].ptr[i + 1]; ++e)
            for (int k = 0; k < 9; ++k) mg->A[0].val[9 * (size_t)e + k] *= d;
    }
    /* the hierarchy is built for the symmetric part (the torsion and bone
     * forces are not exactly gradients, a welded rig can list an edge one
     * way, and the probes round): a Galerkin product of a nonsymmetric
     * operator through smoothed prolongations drifts away from it level by
     * level (on the 241k-vertex body the coarsest level came out
     * indefinite) */
    if (!bsr_symmetrize(&mg->A[0])) return false; /* agg is freed above */
    psd_model(&mg->A[0]);
    /* A1 = P0^T A0 P0 through block forms of P0 and R0 */
    {
        ssk_spring_bsr p0, r0, ap;
        memset(&p0, 0, sizeof p0);
        memset(&r0, 0, sizeof r0);
        memset(&ap, 0, sizeof ap);
        bool ok = bsr_alloc(&p0, nv, n1, at);
        if (ok) {
            for (uint32_t i = 0; i <= nv; ++i) p0.ptr[i] = mg->p0_ptr[i];
            for (uint32_t k = 0; k < at; ++k) {
                p0.col[k] = mg->p0_col[k];
                float *b = p0.val + 9 * (size_t)k;
                b[0] = b[4] = b[8] = mg->p0_w[k];
            }
            ok = bsr_transpose(&r0, &p0) && bsr_product(&ap, &mg->A[0], &p0) &&
                 bsr_product(&mg->A[1], &r0, &ap);
        }
        bsr_free(&p0);
        bsr_free(&r0);
        bsr_free(&ap);
        if (!ok) return false;
    }
    /* level 0: the step (b) and the residual (t) only */
    mg->n[0] = nv;
    mg->b[0] = calloc(3 * (size_t)nv + 1, sizeof(float));
    mg->t[0] = calloc(3 * (size_t)nv + 1, sizeof(float));
    if (!mg->b[0] || !mg->t[0] || !work_vectors(mg, 1, n1)) return false;
    /* the per-pass form of A0: psd_model left every coupling isotropic, so
     * a scalar per neighbor and a block per vertex (a third of the loads) */
    {
        const ssk_spring_bsr *a = &mg->A[0];
        const size_t off = a->ptr[nv] - (size_t)nv; /* one diagonal block a row */
        mg->f_ptr = calloc((size_t)nv + 1, sizeof(uint32_t));
        mg->f_col = malloc((off + 1) * sizeof(uint32_t));
        mg->f_off = malloc((off + 1) * sizeof(float));
        mg->f_diag = calloc(9 * (size_t)nv + 1, sizeof(float));
        if (!mg->f_ptr || !mg->f_col || !mg->f_off || !mg->f_diag) return false;
        uint32_t k = 0;
        for (uint32_t i = 0; i < nv; ++i) {
            for (uint32_t e = a->ptr[i]; e < a->ptr[i + 1]; ++e) {
                const float *b = a->val + 9 * (size_t)e;
                if (a->col[e] == i) {
                    memcpy(mg->f_diag + 9 * (size_t)i, b, 9 * sizeof(float));
                } else {
                    mg->f_col[k] = a->col[e];
                    mg->f_off[k++] = b[0];
                }
            }
            mg->f_ptr[i + 1] = k;
        }
        bsr_free(&mg->A[0]);
    }
    /* coarser levels: block smoothed aggregation of A_l */
    uint32_t l = 1;
    while (mg->n[l] > SSK_SPRING_MG_COARSEST && l < SSK_SPRING_MG_MAX_LEVELS) {
        const ssk_spring_bsr *a = &mg->A[l];
        const uint32_t n = a->rows;
        int32_t *ag = malloc(((size_t)n + 1) * sizeof(int32_t));
        if (!ag || !make_dinv(mg, l)) {
            free(ag);
            return false;
        }
        mg->omega[l] = 4.0f / (3.0f * lambda_max(mg, l, mg->x[l], mg->t[l]));
        const uint32_t nc = aggregate(n, a->ptr, a->col, ag);
        if (nc == 0 || nc * 10u > n * 9u) { /* no real coarsening left */
            free(ag);
            break;
        }
        /* P = (I - w D^-1 A) T: row i, column ag[j] gets delta_ij I - w D_i^-1 A_ij */
        ssk_spring_bsr t, s;
        memset(&t, 0, sizeof t);
        memset(&s, 0, sizeof s);
        bool ok = bsr_alloc(&t, n, nc, n) && bsr_alloc(&s, n, n, a->ptr[n]);
        if (ok) {
            for (uint32_t i = 0; i < n; ++i) {
                t.ptr[i + 1] = i + 1;
                t.col[i] = (uint32_t)ag[i];
                float *b = t.val + 9 * (size_t)i;
                b[0] = b[4] = b[8] = 1.0f;
            }
            memcpy(s.ptr, a->ptr, ((size_t)n + 1) * sizeof(uint32_t));
            memcpy(s.col, a->col, (size_t)a->ptr[n] * sizeof(uint32_t));
            for (uint32_t i = 0; i < n; ++i)
                for (uint32_t e = a->ptr[i]; e < a->ptr[i + 1]; ++e) {
                    float *b = s.val + 9 * (size_t)e;
                    mat3_mul(b, mg->dinv[l] + 9 * (size_t)i, a->val + 9 * (size_t)e, false);
                    for (int k = 0; k < 9; ++k) b[k] *= -mg->omega[l];
                    if (a->col[e] == i) {
                        b[0] += 1.0f;
                        b[4] += 1.0f;
                        b[8] += 1.0f;
                    }
                }
            ssk_spring_bsr ap;
            memset(&ap, 0, sizeof ap);
            ok = bsr_product(&mg->P[l], &s, &t) && bsr_transpose(&mg->R[l], &mg->P[l]) &&
                 bsr_product(&ap, a, &mg->P[l]) && bsr_product(&mg->A[l + 1], &mg->R[l], &ap) &&
                 work_vectors(mg, l + 1, nc);
            bsr_free(&ap);
        }
        bsr_free(&t);
        bsr_free(&s);
        free(ag);
        if (!ok) return false;
        ++l;
    }
    mg->levels = l; /* the coarsest level */
    for (uint32_t k = 1; k < l; ++k)
        if (!mg->dinv[k]) {
            if (!make_dinv(mg, k)) return false;
            mg->omega[k] = 4.0f / (3.0f * lambda_max(mg, k, mg->x[k], mg->t[k]));
        }
    /* the coarsest: dense LU */
    const uint32_t m = 3 * mg->n[l];
    mg->lu = calloc((size_t)m * m + 1, sizeof(double));
    mg->piv = calloc((size_t)m + 1, sizeof(int32_t));
    mg->work = calloc((size_t)m + 1, sizeof(double));
    if (!mg->lu || !mg->piv || !mg->work) return false;
    const ssk_spring_bsr *a = &mg->A[l];
    for (uint32_t i = 0; i < a->rows; ++i)
        for (uint32_t e = a->ptr[i]; e < a->ptr[i + 1]; ++e)
            for (int r = 0; r < 3; ++r)
                for (int q = 0; q < 3; ++q)
                    mg->lu[(size_t)(3 * i + r) * m + 3 * a->col[e] + q] =
                        a->val[9 * (size_t)e + 3 * r + q];
    lu_factor(mg->lu, mg->piv, m);
    mg->bytes = sizeof *mg + (size_t)m * m * sizeof(double) +
                (mg->frozen ? (size_t)sp->vertex_count : 0);
    /* the levels' operators, inverse diagonals and work vectors (A[0] is
     * in the per-pass form, below) */
    for (uint32_t k = 1; k <= l; ++k)
        mg->bytes += (size_t)mg->A[k].ptr[mg->A[k].rows] * (9 * sizeof(float) + sizeof(uint32_t)) +
                     18 * sizeof(float) * (size_t)mg->n[k];
    mg->bytes += 9 * sizeof(float) * (size_t)mg->n[0];
    for (uint32_t k = 1; k < l; ++k)
        mg->bytes += 2 * (size_t)mg->P[k].ptr[mg->P[k].rows] * (9 * sizeof(float) + sizeof(uint32_t));
    mg->bytes += 2 * (size_t)at * (sizeof(float) + sizeof(uint32_t)) +
                 (size_t)mg->f_ptr[nv] * (sizeof(float) + sizeof(uint32_t)) +
                 9 * sizeof(float) * (size_t)nv;
    return true;
}

/* --- the V-cycle ------------------------------------------------------------ */

static void jacobi(const ssk_spring_mg *mg, uint32_t l, const float *r, float *x)
{
    const float *d = mg->dinv[l], w = mg->omega[l];
    for (uint32_t i = 0; i < mg->n[l]; ++i) {
        const float *b = d + 9 * (size_t)i, *v = r + 3 * (size_t)i;
        float *o = x + 3 * (size_t)i;
        o[0] += w * (b[0] * v[0] + b[1] * v[1] + b[2] * v[2]);
        o[1] += w * (b[3] * v[0] + b[4] * v[1] + b[5] * v[2]);
        o[2] += w * (b[6] * v[0] + b[7] * v[1] + b[8] * v[2]);
    }
}

/* x[l] = approximately A_l^-1 b[l] */
static void vcycle(ssk_spring_mg *mg, uint32_t l)
{
    const size_t n3 = 3 * (size_t)mg->n[l];
    float *b = mg->b[l], *x = mg->x[l], *t = mg->t[l];
    if (l == mg->levels) {
        double *w = mg->work;
        for (size_t k = 0; k < n3; ++k) w[k] = b[k];
        lu_solve(mg->lu, mg->piv, (uint32_t)n3, w);
        for (size_t k = 0; k < n3; ++k) x[k] = (float)w[k];
        return;
    }
    memset(x, 0, n3 * sizeof(float));
    jacobi(mg, l, b, x); /* the first sweep from x = 0: its residual is b */
    for (uint32_t s = 1; s < SSK_SPRING_MG_SWEEPS; ++s) {
        bsr_mul(&mg->A[l], x, t);
        for (size_t k = 0; k < n3; ++k) t[k] = b[k] - t[k];
        jacobi(mg, l, t, x);
    }
    bsr_mul(&mg->A[l], x, t);
    for (size_t k = 0; k < n3; ++k) t[k] = b[k] - t[k];
    bsr_mul(&mg->R[l], t, mg->b[l + 1]);
    vcycle(mg, l + 1);
    bsr_mul(&mg->P[l], mg->x[l + 1], t);
    for (size_t k = 0; k < n3; ++k) x[k] += t[k];
    for (uint32_t s = 0; s < SSK_SPRING_MG_SWEEPS; ++s) {
        bsr_mul(&mg->A[l], x, t);
        for (size_t k = 0; k < n3; ++k) t[k] = b[k] - t[k];
        jacobi(mg, l, t, x);
    }
}

typedef struct fine_job {
    const ssk_spring_mg *mg;
    const ssk_spring *sp;
    const float *step;
    const uint8_t *roles;
    float *r;
    float *out; /* the step the correction is added to */
    float *chunk_max; /* per chunk: the largest squared corrected step */
} fine_job;

/* r = D F - A0 g on the free rows (0 elsewhere), F = g / p, rows [begin,
 * end) */
static void fine_residual_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const fine_job *j = ctx;
    const ssk_spring_mg *mg = j->mg;
    (void)chunk;
    for (int64_t i = begin; i < end; ++i) {
        float *o = j->r + 3 * (size_t)i;
        if (j->roles[i] != SSK_ROLE_FREE || (mg->frozen && mg->frozen[i])) {
            o[0] = o[1] = o[2] = 0.0f;
            continue;
        }
        const float *d = mg->f_diag + 9 * (size_t)i, *g = j->step + 3 * (size_t)i;
        float s0 = d[0] * g[0] + d[1] * g[1] + d[2] * g[2];
        float s1 = d[3] * g[0] + d[4] * g[1] + d[5] * g[2];
        float s2 = d[6] * g[0] + d[7] * g[1] + d[8] * g[2];
        for (uint32_t e = mg->f_ptr[i]; e < mg->f_ptr[i + 1]; ++e) {
            const float c = mg->f_off[e], *v = j->step + 3 * (size_t)mg->f_col[e];
            s0 += c * v[0];
            s1 += c * v[1];
            s2 += c * v[2];
        }
        const uint32_t deg = j->sp->offsets[i + 1] - j->sp->offsets[i];
        const float w = deg ? (float)deg : 1.0f;
        const float q = ssk_spring_step_inverse(j->sp, j->roles, (uint32_t)i);
        o[0] = w * (g[0] * q) - s0;
        o[1] = w * (g[1] * q) - s1;
        o[2] = w * (g[2] * q) - s2;
    }
}

static void restrict_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const fine_job *j = ctx;
    const ssk_spring_mg *mg = j->mg;
    (void)chunk;
    float *b1 = mg->b[1];
    for (int64_t a = begin; a < end; ++a) {
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
        for (uint32_t k = mg->r0_ptr[a]; k < mg->r0_ptr[a + 1]; ++k) {
            const float w = mg->r0_w[k], *v = j->r + 3 * (size_t)mg->r0_row[k];
            s0 += w * v[0];
            s1 += w * v[1];
            s2 += w * v[2];
        }
        b1[3 * (size_t)a] = s0;
        b1[3 * (size_t)a + 1] = s1;
        b1[3 * (size_t)a + 2] = s2;
    }
}

static void prolong_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const fine_job *j = ctx;
    const ssk_spring_mg *mg = j->mg;
    const float *e1 = mg->x[1];
    float md = 0.0f;
    for (int64_t i = begin; i < end; ++i) {
        float *o = j->out + 3 * (size_t)i;
        if (j->roles[i] == SSK_ROLE_FREE && !(mg->frozen && mg->frozen[i])) {
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
            for (uint32_t k = mg->p0_ptr[i]; k < mg->p0_ptr[i + 1]; ++k) {
                const float w = mg->p0_w[k], *v = e1 + 3 * (size_t)mg->p0_col[k];
                s0 += w * v[0];
                s1 += w * v[1];
                s2 += w * v[2];
            }
            o[0] += mg->theta * s0;
            o[1] += mg->theta * s1;
            o[2] += mg->theta * s2;
        }
        const float d2 = o[0] * o[0] + o[1] * o[1] + o[2] * o[2];
        if (!(d2 <= md)) md = isnan(d2) ? NAN : (isnan(md) ? md : d2);
    }
    j->chunk_max[chunk] = md;
}

float ssk_spring_mg_correct(ssk_spring_mg *mg, const ssk_spring *sp, float *step,
                            const uint8_t *roles)
{
    const uint32_t nv = sp->vertex_count;
    /* r = D F - (D A0) g on the free rows */
    float *r = mg->t[0];
    fine_job j = {mg, sp, step, roles, r, step, mg->chunk_max};
    ssk_parallel_for(nv, SSK_SPRING_MG_PARALLEL_ROWS / 2, fine_residual_chunk, &j);
    /* b1 = P0^T r */
    ssk_parallel_for(mg->n[1], SSK_SPRING_MG_PARALLEL_ROWS / 2, restrict_chunk, &j);
    vcycle(mg, 1);
    /* step += theta P0 e1 on the free rows; the largest corrected step */
    _Static_assert(SSK_SPRING_MG_PARALLEL_ROWS / 2 == SSK_PARALLEL_GRAIN,
                   "chunk_max holds a value per chunk of SSK_PARALLEL_GRAIN rows");
    ssk_parallel_for(nv, SSK_SPRING_MG_PARALLEL_ROWS / 2, prolong_chunk, &j);
    return ssk_spring_mg_chunks_max(mg, nv);
}

float ssk_spring_mg_chunks_max(const ssk_spring_mg *mg, uint32_t nv)
{
    float md = 0.0f;
    const uint32_t chunks = ssk_parallel_chunk_count(nv, SSK_PARALLEL_GRAIN);
    for (uint32_t c = 0; c < chunks; ++c) {
        const float d2 = mg->chunk_max[c];
        if (!(d2 <= md)) md = isnan(d2) ? NAN : (isnan(md) ? md : d2);
    }
    return md;
}

/* --- Anderson acceleration ------------------------------------------------ */

#define AA_GRAIN 4096

bool ssk_spring_mg_anderson_alloc(ssk_spring_mg *mg, const ssk_spring *sp)
{
    const size_t n3 = 3 * (size_t)sp->vertex_count;
    const uint32_t m = SSK_SPRING_MG_ANDERSON;
    const uint32_t chunks = ssk_parallel_chunk_count((int64_t)n3, AA_GRAIN);
    mg->aa_s = malloc((m * n3 + 1) * sizeof(float));
    mg->aa_df = malloc((m * n3 + 1) * sizeof(float));
    mg->aa_x = malloc((n3 + 1) * sizeof(float));
    mg->aa_f = malloc((n3 + 1) * sizeof(float));
    mg->aa_partial = malloc(((size_t)chunks * 2 * m + 1) * sizeof(double));
    mg->bytes += (2 * (size_t)m + 2) * n3 * sizeof(float);
    return mg->aa_s && mg->aa_df && mg->aa_x && mg->aa_f && mg->aa_partial;
}

typedef struct aa_job {
    ssk_spring_mg *mg;
    size_t n3;
    const float *cur;
    float *step;
    uint32_t slot, h;
    const float *gamma; /* the update's weights (h) */
} aa_job;

/* sum_k a[k] b[k] in double over n floats: eight lanes (independent
 * chains: the scalar sum was latency-bound, a sixth of a 60k solve), the
 * lanes added in a fixed order (the same result on every CPU) */
typedef double aa_v8d __attribute__((vector_size(64)));
typedef float aa_v8f __attribute__((vector_size(32)));

SSK_TARGET_CLONES
static void aa_dot2(const float *restrict f, const float *restrict a, const float *restrict b,
                    int64_t n, double *fa, double *fb)
{
    aa_v8d sa = {0}, sb = {0};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        aa_v8f vf, va, vb;
        memcpy(&vf, f + k, sizeof vf);
        memcpy(&va, a + k, sizeof va);
        memcpy(&vb, b + k, sizeof vb);
        const aa_v8d df = __builtin_convertvector(vf, aa_v8d);
        sa += df * __builtin_convertvector(va, aa_v8d);
        sb += df * __builtin_convertvector(vb, aa_v8d);
    }
    for (int l = 0; k < n; ++k, ++l) {
        sa[l] += (double)f[k] * a[k];
        sb[l] += (double)f[k] * b[k];
    }
    double ra = 0.0, rb = 0.0;
    for (int l = 0; l < 8; ++l) {
        ra += sa[l];
        rb += sb[l];
    }
    *fa = ra;
    *fb = rb;
}

/* The newest differences into ring slot `slot`, the last iterate and step
 * kept, and the chunk's partial dot products of the newest step
 * difference and of the step with every remembered step difference. */
static void aa_dots_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const aa_job *j = ctx;
    ssk_spring_mg *mg = j->mg;
    const uint32_t m = SSK_SPRING_MG_ANDERSON;
    double *part = mg->aa_partial + (size_t)chunk * 2 * m;
    for (uint32_t i = 0; i < 2 * m; ++i) part[i] = 0.0;
    float *ss = mg->aa_s + j->slot * j->n3, *dfs = mg->aa_df + j->slot * j->n3;
    for (int64_t k = begin; k < end; ++k) {
        if (j->slot != UINT32_MAX) {
            const float dx = j->cur[k] - mg->aa_x[k];
            dfs[k] = j->step[k] - mg->aa_f[k];
            ss[k] = dx + dfs[k]; /* what the update reads: one array, not two */
        }
        mg->aa_x[k] = j->cur[k];
        mg->aa_f[k] = j->step[k];
    }
    if (j->slot == UINT32_MAX) return;
    for (uint32_t i = 0; i < j->h; ++i)
        aa_dot2(mg->aa_df + i * j->n3 + begin, dfs + begin, j->step + begin, end - begin,
                &part[i], &part[m + i]);
}

SSK_TARGET_CLONES
static void aa_update_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const aa_job *j = ctx;
    (void)chunk;
    for (uint32_t i = 0; i < j->h; ++i) {
        const float gi = j->gamma[i];
        const float *s = j->mg->aa_s + i * j->n3;
        for (int64_t k = begin; k < end; ++k) j->step[k] -= gi * s[k];
    }
}

void ssk_spring_mg_anderson(ssk_spring_mg *mg, const ssk_spring *sp, const float *cur,
                            float *step)
{
    const size_t n3 = 3 * (size_t)sp->vertex_count;
    const uint32_t m = SSK_SPRING_MG_ANDERSON;
    const uint32_t chunks = ssk_parallel_chunk_count((int64_t)n3, AA_GRAIN);
    aa_job j = {mg, n3, cur, step, UINT32_MAX, 0, NULL};
    if (mg->aa_started) {
        j.slot = mg->aa_next;
        mg->aa_next = (j.slot + 1) % m;
        if (mg->aa_count < m) ++mg->aa_count;
        j.h = mg->aa_count;
    }
    ssk_parallel_for((int64_t)n3, AA_GRAIN, aa_dots_chunk, &j);
    mg->aa_started = 1;
    const uint32_t h = mg->aa_count;
    if (j.slot == UINT32_MAX || !h) return;
    /* the Gram matrix of the step differences, its new row, and the
     * right-hand side; the chunks' sums in chunk order (the same whatever
     * the thread count) */
    double b[SSK_SPRING_MG_ANDERSON];
    for (uint32_t i = 0; i < h; ++i) {
        double g = 0.0, r = 0.0;
        for (uint32_t c = 0; c < chunks; ++c) {
            g += mg->aa_partial[(size_t)c * 2 * m + i];
            r += mg->aa_partial[(size_t)c * 2 * m + m + i];
        }
        mg->aa_gram[i][j.slot] = mg->aa_gram[j.slot][i] = g;
        b[i] = r;
    }
    /* gamma = argmin |f - dF gamma|: normal equations with a small
     * Tikhonov term relative to their diagonal, by Cholesky */
    double G[SSK_SPRING_MG_ANDERSON][SSK_SPRING_MG_ANDERSON], top = 0.0;
    for (uint32_t i = 0; i < h; ++i)
        for (uint32_t k = 0; k < h; ++k) G[i][k] = mg->aa_gram[i][k];
    for (uint32_t i = 0; i < h; ++i) top = G[i][i] > top ? G[i][i] : top;
    if (!(top > 0.0)) return;
    for (uint32_t i = 0; i < h; ++i) G[i][i] += 1e-8 * top;
    double L[SSK_SPRING_MG_ANDERSON][SSK_SPRING_MG_ANDERSON] = {{0}}, gamma[SSK_SPRING_MG_ANDERSON];
    for (uint32_t i = 0; i < h; ++i)
        for (uint32_t k = 0; k <= i; ++k) {
            double v = G[i][k];
            for (uint32_t q = 0; q < k; ++q) v -= L[i][q] * L[k][q];
            if (i == k) {
                if (!(v > 0.0)) {
                    mg->aa_count = mg->aa_next = 0; /* dependent history: again */
                    return;
                }
                L[i][i] = sqrt(v);
            } else {
                L[i][k] = v / L[k][k];
            }
        }
    for (uint32_t i = 0; i < h; ++i) {
        double v = b[i];
        for (uint32_t q = 0; q < i; ++q) v -= L[i][q] * gamma[q];
        gamma[i] = v / L[i][i];
    }
    for (uint32_t i = h; i-- > 0;) {
        double v = gamma[i];
        for (uint32_t q = i + 1; q < h; ++q) v -= L[q][i] * gamma[q];
        gamma[i] = v / L[i][i];
    }
    /* step = f - (dX + dF) gamma: x_next = x + step */
    float gf[SSK_SPRING_MG_ANDERSON];
    for (uint32_t i = 0; i < h; ++i) gf[i] = (float)gamma[i];
    j.h = h;
    j.gamma = gf;
    ssk_parallel_for((int64_t)n3, AA_GRAIN, aa_update_chunk, &j);
}
