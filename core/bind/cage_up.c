/*
 * cage_up.c — the cage updater of Corda et al. 2020, 4.1 (CageUp, Eq. 8;
 * 003_3bdce6713f645d88.txt; issue #21): MaxVol row selection and the
 * square system Phi~ C' = M~', factorized once and solved per frame.
 *
 * MaxVol (S. A. Goreinov, I. V. Oseledets, D. V. Savostyanov, E. E.
 * Tyrtyshnikov, N. L. Zamarashkin, "How to find a good submatrix", 2010;
 * used for cages by Thiery, Tierny and Boubekeur 2012): among the count
 * rows of the count by c matrix phi, c rows whose square submatrix A~ has
 * a locally maximal |det|:
 * 1. the start: the c pivot rows of Gaussian elimination with partial
 *    pivoting of phi (greedy: each step takes the row with the largest
 *    remaining entry in the next column), by LAPACK dgetrf on phi as a
 *    count by c column-major matrix (the row-major phi buffer is phi^T in
 *    column-major order, so it is transposed into a copy first); its row
 *    interchanges, applied in order to the identity permutation, give the
 *    rows. A zero pivot (dgetrf's info > 0) or one below MAXVOL_RANK_RATIO
 *    of the largest: phi has rank below c, refused.
 * 2. B = phi A~^{-1} (count by c; B's selected rows are the identity). If
 *    some |B_ij| > 1 + MAXVOL_TOLERANCE, putting row i in place of the j-th
 *    selected row multiplies |det A~| by |B_ij| > 1; B is updated by the
 *    rank-one formula B -= B[:, j] (B_i - e_j^T) / B_ij (Sherman-Morrison).
 *    The largest |B_ij| is swapped in until none exceeds 1 + tolerance;
 *    |det| grows by a factor above 1 + tolerance per swap, so this ends.
 *    The start's B comes from the elimination's factors: with P phi = L U
 *    (L count by c, unit lower trapezoidal), A~ = L_11 U, so B = P^T [I;
 *    L_21 L_11^{-1}] (dtrsm on L_21: c^2 (count - c) flops). After every
 *    MAXVOL_REFRESH swaps B is computed afresh (dgetrf on A~ and dgetrs,
 *    as B^T = A~^{-T} phi^T, whose column-major right-hand side is the
 *    row-major phi buffer as is), so that the rank-one updates' rounding
 *    cannot accumulate; fewer updates than that, each exact up to a few
 *    ulps of |B| (<= 1 + tolerance after a swap), leave B within ~1e-13 of
 *    a fresh one, far inside the tolerance, and the loop stops on them.
 *    Before (issue #21's speed goal) the start's B came from dgetrs too and
 *    the loop ended on one more fresh B: 2 c^2 count flops each, two thirds
 *    of the bind time of the arm's fine cage in bench_cage (c = 88, count
 *    1,984, 16 swaps; netlib BLAS); the rows chosen are the same on every
 *    bench_cage case and on the tests' rigs (compared bit for bit).
 *
 * The updater factorizes A~ = Phi~ once with dgetrf (LU with partial
 * pivoting: A~ is square, general (not symmetric) and well conditioned by
 * construction, so LU is the cheapest stable factorization; dgecon checks
 * its conditioning once) and solves the 3 right-hand sides of each frame
 * with dgetrs (two triangular solves, O(c^2)).
 */
#include "bind/cage.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK (Debian liblapack), column-major, Fortran calling convention:
 * dgetrf (LU with partial pivoting), dgetrs (solve with its factors),
 * dgecon (reciprocal condition number from the factors), dlange (the
 * 1-norm dgecon needs). */
extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
extern void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a,
                    const int *lda, const int *ipiv, double *b, const int *ldb, int *info);
extern void dgecon_(const char *norm, const int *n, const double *a, const int *lda,
                    const double *anorm, double *rcond, double *work, int *iwork, int *info);
extern void dtrsm_(const char *side, const char *uplo, const char *transa, const char *diag,
                   const int *m, const int *n, const double *alpha, const double *a,
                   const int *lda, double *b, const int *ldb);
extern double dlange_(const char *norm, const int *m, const int *n, const double *a,
                      const int *lda, double *work);

/* Swap while some |B_ij| exceeds 1 + this (Goreinov et al. use 1e-2 to
 * 5e-2: a smaller one costs swaps for little volume). */
#define MAXVOL_TOLERANCE 1e-2
/* Rank-one updates between fresh computations of B. */
#define MAXVOL_REFRESH 64u
/* A guard: swaps at most this times c (each multiplies |det| by more than
 * 1 + tolerance, so a few times c suffice in practice). */
#define MAXVOL_MAX_SWAPS_PER_COLUMN 100u
/* A pivot of the start's elimination below this times the largest: rank
 * below c. */
#define MAXVOL_RANK_RATIO 1e-13
/* Reciprocal condition number (1-norm) of Phi~ below this: singular. */
#define CAGE_UP_MIN_RCOND 1e-13
/* LAPACK's int dimensions: the largest matrix side accepted. */
#define LAPACK_MAX_SIDE 2147483647u

/* B = phi A~^{-1} (count by c, row-major) for the rows `rows`; a (c by c)
 * is scratch. Returns dgetrf's info (> 0: A~ singular). */
static int maxvol_fresh_b(double *b, double *a, int *piv, const double *phi, uint32_t count,
                          uint32_t c, const uint32_t *rows)
{
    /* a row-major A~ is A~^T column-major */
    for (uint32_t j = 0; j < c; ++j) memcpy(a + (size_t)j * c, phi + (size_t)rows[j] * c, c * sizeof *a);
    const int n = (int)c, m = (int)count;
    int info = 0;
    dgetrf_(&n, &n, a, &n, piv, &info);
    if (info != 0) return info;
    /* solve A~^T X = phi^T, X = B^T (c by count column-major = B row-major) */
    memcpy(b, phi, (size_t)count * c * sizeof *b);
    dgetrs_("N", &n, &m, a, &n, piv, b, &n, &info);
    return info;
}

/* The largest |B_ij| of row i (c values) into *best (strictly larger
 * only: the first in row-major order wins a tie), *bi and *bj its place. */
static void maxvol_row_largest(const double *row, uint32_t i, uint32_t c, double *best,
                               uint32_t *bi, uint32_t *bj)
{
    for (uint32_t j = 0; j < c; ++j) {
        const double v = fabs(row[j]);
        if (v > *best) {
            *best = v;
            *bi = i;
            *bj = j;
        }
    }
}

/* The largest |B_ij| over the rows; *i, *j get its place. */
static double maxvol_largest(const double *b, uint32_t count, uint32_t c, uint32_t *bi,
                             uint32_t *bj)
{
    double best = -1.0;
    for (uint32_t i = 0; i < count; ++i) maxvol_row_largest(b + (size_t)i * c, i, c, &best, bi, bj);
    return best;
}

ssk_status ssk_cage_maxvol(uint32_t *rows, const double *phi, uint32_t count, uint32_t c,
                           ssk_error *err)
{
    if (!rows || !phi)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_maxvol: NULL %s",
                             !rows ? "rows" : "phi");
    if (c == 0 || count < c)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_maxvol: %u rows cannot give %u (need 0 < c <= count)",
                             count, c);
    if (count > LAPACK_MAX_SIDE || (uint64_t)count * c > (uint64_t)LAPACK_MAX_SIDE)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_maxvol: %u by %u: too large for LAPACK", count, c);
    for (size_t k = 0; k < (size_t)count * c; ++k)
        if (!isfinite(phi[k]))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "ssk_cage_maxvol: phi[%zu][%zu] is not finite", k / c, k % c);

    const size_t mc = (size_t)count * c;
    double *b = malloc(mc * sizeof *b), *a = malloc((size_t)c * c * sizeof *a);
    double *f = malloc(mc * sizeof *f);
    int *piv = malloc((size_t)c * sizeof *piv);
    uint32_t *perm = malloc((size_t)count * sizeof *perm);
    ssk_status st = SSK_OK;
    if (!b || !a || !f || !piv || !perm) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_maxvol: out of memory");
        goto done;
    }

    /* 1. the start: partial pivoting on phi (count by c column-major) */
    for (uint32_t i = 0; i < count; ++i)
        for (uint32_t j = 0; j < c; ++j) f[(size_t)j * count + i] = phi[(size_t)i * c + j];
    {
        const int m = (int)count, n = (int)c;
        int info = 0;
        dgetrf_(&m, &n, f, &m, piv, &info);
        double largest = 0.0;
        for (uint32_t j = 0; j < c; ++j) largest = fmax(largest, fabs(f[(size_t)j * count + j]));
        for (uint32_t j = 0; j < c && info == 0; ++j)
            if (!(fabs(f[(size_t)j * count + j]) > MAXVOL_RANK_RATIO * largest)) info = (int)j + 1;
        if (info != 0) {
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "ssk_cage_maxvol: phi (%u by %u) has rank below c (pivot %d of "
                               "the elimination vanishes)",
                               count, c, info);
            goto done;
        }
    }
    for (uint32_t i = 0; i < count; ++i) perm[i] = i;
    for (uint32_t j = 0; j < c; ++j) { /* dgetrf's interchanges, 1-based, in order */
        const uint32_t p = (uint32_t)piv[j] - 1u, tmp = perm[j];
        perm[j] = perm[p];
        perm[p] = tmp;
    }
    memcpy(rows, perm, (size_t)c * sizeof *rows);

    /* the start's B: row perm[i] is e_i for i < c, else row i - c of
     * L_21 L_11^{-1} (X L_11 = L_21, dtrsm in place on f's rows c..) */
    if (count > c) {
        const int m = (int)(count - c), n = (int)c, ld = (int)count;
        const double one = 1.0;
        dtrsm_("R", "L", "N", "U", &m, &n, &one, f, &ld, f + c, &ld);
    }
    for (uint32_t i = 0; i < count; ++i) {
        double *dst = b + (size_t)perm[i] * c;
        for (uint32_t j = 0; j < c; ++j)
            dst[j] = i < c ? (i == j ? 1.0 : 0.0) : f[(size_t)j * count + i];
    }

    /* 2. swaps */
    const uint64_t max_swaps = (uint64_t)MAXVOL_MAX_SWAPS_PER_COLUMN * c;
    uint64_t swaps = 0;
    for (bool fresh = false;; fresh = true) {
        if (fresh && maxvol_fresh_b(b, a, piv, phi, count, c, rows) != 0) {
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "ssk_cage_maxvol: the selected rows became singular (phi of "
                               "rank below c?)");
            goto done;
        }
        uint32_t bi = 0, bj = 0;
        double big = maxvol_largest(b, count, c, &bi, &bj);
        if (big <= 1.0 + MAXVOL_TOLERANCE) break; /* converged */
        for (uint32_t u = 0; u < MAXVOL_REFRESH && big > 1.0 + MAXVOL_TOLERANCE; ++u) {
            if (++swaps > max_swaps) {
                st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                   "ssk_cage_maxvol: no convergence after %llu swaps "
                                   "(largest |B_ij| %g)",
                                   (unsigned long long)max_swaps, big);
                goto done;
            }
            /* B -= B[:, bj] (B_bi - e_bj^T) / B_{bi,bj}; a (c) holds the
             * row factor, perm (reused) is not needed here */
            const double pivot = b[(size_t)bi * c + bj];
            for (uint32_t k = 0; k < c; ++k) a[k] = b[(size_t)bi * c + k] / pivot;
            a[bj] -= 1.0 / pivot;
            const uint32_t col = bj;
            rows[bj] = bi;
            /* the update and the next largest |B_ij| in one pass */
            big = -1.0;
            for (uint32_t i = 0; i < count; ++i) {
                double *bri = b + (size_t)i * c;
                const double g = bri[col];
                if (g != 0.0)
                    for (uint32_t k = 0; k < c; ++k) bri[k] -= g * a[k];
                maxvol_row_largest(bri, i, c, &big, &bi, &bj);
            }
        }
        if (big <= 1.0 + MAXVOL_TOLERANCE) break; /* converged on the updated B */
    }
done:
    free(b);
    free(a);
    free(f);
    free(piv);
    free(perm);
    return st == SSK_OK ? ssk_error_ok(err) : st;
}

/* ------------------------------------------------------------------------ */
/* The updater                                                               */
/* ------------------------------------------------------------------------ */

ssk_status ssk_cage_up_create(ssk_cage_up *out, const double *phi, uint32_t count, uint32_t c,
                              ssk_error *err)
{
    return ssk_cage_up_create_rows(out, phi, count, c, NULL, err);
}

ssk_status ssk_cage_up_create_rows(ssk_cage_up *out, const double *phi, uint32_t count,
                                   uint32_t c, const uint32_t *rows, ssk_error *err)
{
    if (!out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_up_create: NULL out");
    memset(out, 0, sizeof *out);
    if (!phi)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_up_create: NULL phi");
    if (c == 0 || count < c)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_up_create: %u mesh vertices cannot fit %u cage vertices",
                             count, c);
    out->c = c;
    out->rows = malloc((size_t)c * sizeof *out->rows);
    out->lu = malloc((size_t)c * c * sizeof *out->lu);
    out->pivots = malloc((size_t)c * sizeof *out->pivots);
    double *work = malloc(4u * (size_t)c * sizeof *work);
    int *iwork = malloc((size_t)c * sizeof *iwork);
    ssk_status st = SSK_OK;
    if (!out->rows || !out->lu || !out->pivots || !work || !iwork) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_up_create: out of memory");
        goto done;
    }
    if (rows) { /* given (a stored binding's): distinct and in range */
        for (uint32_t j = 0; j < c && st == SSK_OK; ++j) {
            bool repeated = false;
            for (uint32_t k = 0; k < j; ++k) repeated = repeated || rows[k] == rows[j];
            if (rows[j] >= count || repeated)
                st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                   "ssk_cage_up_create: row %u is %u (rows are distinct and "
                                   "below %u)",
                                   j, rows[j], count);
        }
        if (st != SSK_OK) goto done;
        memcpy(out->rows, rows, (size_t)c * sizeof *out->rows);
    } else {
        st = ssk_cage_maxvol(out->rows, phi, count, c, err);
        if (st != SSK_OK) goto done;
    }
    /* Phi~ column-major: entry (j, k) = phi[rows[j]][k] */
    for (uint32_t j = 0; j < c; ++j)
        for (uint32_t k = 0; k < c; ++k)
            out->lu[(size_t)k * c + j] = phi[(size_t)out->rows[j] * c + k];
    const int n = (int)c;
    int info = 0;
    const double anorm = dlange_("1", &n, &n, out->lu, &n, work);
    dgetrf_(&n, &n, out->lu, &n, out->pivots, &info);
    if (info != 0) {
        st = ssk_error_set(err, SSK_ERROR_BIND,
                           "ssk_cage_up_create: Phi~ (%u by %u) is singular (dgetrf info %d)",
                           c, c, info);
        goto done;
    }
    double rcond = 0.0;
    dgecon_("1", &n, out->lu, &n, &anorm, &rcond, work, iwork, &info);
    if (info != 0 || !(rcond >= CAGE_UP_MIN_RCOND)) {
        st = ssk_error_set(err, SSK_ERROR_BIND,
                           "ssk_cage_up_create: Phi~ (%u by %u) is numerically singular "
                           "(reciprocal condition %g)",
                           c, c, rcond);
        goto done;
    }
done:
    free(work);
    free(iwork);
    if (st != SSK_OK) {
        ssk_cage_up_free(out);
        return st;
    }
    return ssk_error_ok(err);
}

ssk_status ssk_cage_up_solve(const ssk_cage_up *up, double *cage, const double *posed_rows,
                             ssk_error *err)
{
    if (!up || !cage || !posed_rows || !up->lu || !up->pivots)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_up_solve: NULL %s",
                             !up || !up->lu || !up->pivots ? "updater"
                             : !cage                        ? "cage"
                                                            : "posed_rows");
    const uint32_t c = up->c;
    for (uint32_t k = 0; k < 3u * c; ++k)
        if (!isfinite(posed_rows[k]))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "ssk_cage_up_solve: posed row %u is not finite", k / 3);
    /* the 3 right-hand sides column-major (c by 3) in `cage` itself would
     * need a transpose in place; a stack-free heap copy keeps it simple */
    double *rhs = malloc(3u * (size_t)c * sizeof *rhs);
    if (!rhs) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_up_solve: out of memory");
    for (uint32_t j = 0; j < c; ++j)
        for (int a = 0; a < 3; ++a) rhs[(size_t)a * c + j] = posed_rows[3 * j + a];
    const int n = (int)c, nrhs = 3;
    int info = 0;
    dgetrs_("N", &n, &nrhs, up->lu, &n, up->pivots, rhs, &n, &info);
    ssk_status st = ssk_error_ok(err);
    for (uint32_t j = 0; j < c && st == SSK_OK; ++j)
        for (int a = 0; a < 3; ++a) {
            const double v = rhs[(size_t)a * c + j];
            if (!isfinite(v)) {
                st = ssk_error_set(err, SSK_ERROR_NONFINITE,
                                   "ssk_cage_up_solve: cage vertex %u is not finite", j);
                break;
            }
            cage[3 * j + a] = v;
        }
    free(rhs);
    return st;
}

void ssk_cage_up_free(ssk_cage_up *up)
{
    if (!up) return;
    free(up->rows);
    free(up->lu);
    free(up->pivots);
    memset(up, 0, sizeof *up);
}
