/*
 * cage_rev.c — the reverse cage deformer CageRev (Corda et al. 2020, 4.3,
 * Eq. 15-19, 003_3bdce6713f645d88.txt; issue #21; bind/cage.h:
 * ssk_cage_rev_solve): the rest-cage offset dC that moves the posed cage
 * C' by a requested dC' through C -> S -> S' -> C'.
 *
 * Notation (rig space; row-major 4x4 skinning matrices acting on column
 * vectors, as bind/cage_skinning.c): c cage vertices, #B bones; Phi~ the c
 * MaxVol rows i = up.rows[k] of phi (c by c), Psi (#B by c); w_ij the skin
 * weights; R_j the 3x3 linear part of the frame's skinning matrix S_j, t_j
 * its translation; a_b the rest head of bone b, e_b = da_b its offset; p(b)
 * the parent of b.
 *
 * The chain, for fixed rotations R_j (4.2 keeps them when the rest changes):
 *   A = Psi C                                  (Eq. 13)
 *   m_i = Phi_i C                              (Eq. 7, the rest rows)
 *   m'_i = sum_j w_ij (R_j m_i + t_j(A))       (LBS, Eq. 15 third line)
 *   Phi~ C' = M~'                              (Eq. 8, the cage updater)
 * so, with R~_i = sum_j w_ij R_j,
 *   Phi~ dC' = R~ Phi~ dC + Omega~ dT,         dT = K dA = K Psi dC,
 * which is Eq. 19 with K standing for the paper's B_topo^-1 A_R.
 *
 * K, the map dA -> dT, is read off ssk_cage_skinning (cage_skinning.c),
 * which is what the forward direction uses: t'_b = t_b + d_b - R_b e_b with
 * d_root = R_root e_root, d_b = d_p + R_p (e_b - e_p). Unrolling along the
 * path root = q_0, q_1, ..., q_n = b,
 *   dt_b = sum_{m=1..n} (R_{p(q_m)} - R_{q_m}) e_{q_m},   dt_root = 0,
 * i.e. dt_b = dt_p + (R_p - R_b) e_b: the paper's Eq. 17 for a bone with a
 * father ((T_b - T_f) da_b = dT_f - dT_b). K is built directly from this
 * recurrence instead of forming B_topo and inverting it (the same map;
 * B_topo is unit lower block-triangular in a root-first order, and its
 * inverse is the sum over the path).
 *
 * DEVIATION (the root): the paper's Eq. 16-17 keep a root's pivot where it
 * is ((I - T^r_root) da_root = dT^t_root). Our forward pipeline
 * (ssk_cage_skinning, bind/cage.h) keeps a root's whole skinning matrix
 * instead, so a moved root head is carried by it (h'_root = S_root a'_root)
 * and dT_root = 0: the root's block row of K is 0. CageRev must invert the
 * pipeline that is actually run, so it follows ssk_cage_skinning; both agree
 * when a root's rotation is the identity.
 *
 * Omega~ K folded: sum_j w_ij dt_j = sum_b G_ib e_b with
 *   G_ib = W_ib (R_{p(b)} - R_b),   W_ib = sum of w_ij over the bones j in
 * the subtree of b (b included), G_ib = 0 for a root. So the 3c by 3c
 * matrix of Eq. 19 has the 3x3 block, row k (mesh vertex i = rows[k]),
 * column l (cage vertex l),
 *   E_kl = phi_il R~_i + sum_b psi_bl G_ib,
 * and the right-hand side row k is sum_l phi_il dC'_l. Unknowns and rows
 * are interleaved (3 l + axis, 3 k + axis); the matrix is stored column-
 * major for LAPACK dgesv (LU with partial pivoting), its conditioning
 * checked with dgecon.
 *
 * Exactness: for fixed rotations C' is an affine function of C (LBS of
 * Phi C with translations affine in Psi C), so the solve is exact for any
 * dC', not only small ones, and needs neither the rest positions nor the
 * skinning translations. With R_j = I for every bone (the rest pose) E =
 * Phi~ and dC = dC' ("C' and C match"). For DQS and the other methods the
 * same LBS matrix is used: an approximation (the paper's "approximated
 * result with the other skinning methods"). The miss is first order in
 * dC' (the DQS and LBS Jacobians differ), so small steps shrink it only in
 * proportion: test_cage_rev measures about 21% of dC' for DQS at a
 * 75-degree bend of its 2-bone bar. The paper's exact alternative, fitting
 * the cage to an LBS "ghost" of the MaxVol rows whatever the method, is
 * not implemented here.
 *
 * Cost: O(c^2 x #B) to form (bones with W_ib = 0 skipped), O(27 c^3) for
 * the LU; independent of the mesh size.
 */
#include "bind/cage.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK (Debian liblapack), column-major, Fortran calling convention:
 * dgesv (LU with partial pivoting and solve), dgecon (reciprocal condition
 * estimate from the LU factors), dlange (matrix norm). */
extern void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv,
                   double *b, const int *ldb, int *info);
extern void dgecon_(const char *norm, const int *n, const double *a, const int *lda,
                    const double *anorm, double *rcond, double *work, int *iwork, int *info);
extern double dlange_(const char *norm, const int *m, const int *n, const double *a,
                      const int *lda, double *work);

/* Entries of a row-major 4x4 matrix, and its row stride. */
#define MAT4_SIZE 16
#define MAT4_ROW 4
/* Reciprocal condition number (1-norm) of the Eq. 19 matrix below this:
 * singular (the cage updater's threshold, bind/cage_up.c). */
#define CAGE_REV_MIN_RCOND 1e-13
/* The largest c whose 3c side fits LAPACK's int. */
#define CAGE_REV_MAX_C (2147483647u / 3u)

/* The 3x3 linear part of bone b's skinning matrix, in double, row-major. */
static void bone_linear(double r[9], const float *skinning, uint32_t b)
{
    const float *s = skinning + MAT4_SIZE * (size_t)b;
    for (int row = 0; row < 3; ++row)
        for (int col = 0; col < 3; ++col) r[3 * row + col] = (double)s[MAT4_ROW * row + col];
}

/* The mesh holding rig vertex v (v < rig->vertex_count); NULL if none. */
static const ssk_mesh *vertex_mesh(const ssk_rig *rig, uint32_t v)
{
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        if (v >= mesh->first_vertex && v - mesh->first_vertex < mesh->vertex_count) return mesh;
    }
    return NULL;
}

/* w (#B, overwritten) gets the dense skin weights of rig vertex v, by the
 * rule of bind/cage_bind.c's rig_dense_weights (repeated indices add up;
 * out-of-range indices and weights <= 0 are skipped). */
static void vertex_weights(double *w, const ssk_rig *rig, uint32_t v)
{
    const uint32_t nb = rig->bone_count;
    memset(w, 0, (size_t)nb * sizeof *w);
    const ssk_mesh *mesh = vertex_mesh(rig, v);
    if (!mesh || !mesh->bone_indices || !mesh->weights) return;
    const uint32_t k = mesh->influence_count;
    const size_t local = (size_t)(v - mesh->first_vertex);
    for (uint32_t q = 0; q < k; ++q) {
        const int32_t b = mesh->bone_indices[local * k + q];
        const float wt = mesh->weights[local * k + q];
        if (b < 0 || (uint32_t)b >= nb || !(wt > 0.0f)) continue;
        w[b] += wt;
    }
}

/* The parent of b, or -1 for a root (an out-of-range parent counts as a
 * root, as in ssk_cage_skinning). */
static int32_t bone_parent(const ssk_rig *rig, uint32_t b)
{
    const int32_t p = rig->bones[b].parent;
    return p >= 0 && (uint32_t)p < rig->bone_count ? p : -1;
}

ssk_status ssk_cage_rev_solve(double *rest_offset, const ssk_cage_binding *cb, const ssk_rig *rig,
                              const float *skinning, const double *posed_offset, ssk_error *err)
{
    if (!rest_offset || !cb || !rig || !posed_offset || (!skinning && rig->bone_count) ||
        !cb->phi || !cb->up.rows || (!cb->psi && cb->joint_count))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_rev_solve: NULL argument");
    const uint32_t c = cb->cage_vertex_count, nb = rig->bone_count;
    if (c == 0 || cb->up.c != c || c > CAGE_REV_MAX_C)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_rev_solve: the binding's cage has %u vertices "
                             "(its updater %u)", c, cb->up.c);
    if (cb->vertex_count != rig->vertex_count || cb->joint_count != nb)
        return ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                             "ssk_cage_rev_solve: the binding has %u vertices and %u joints, "
                             "the rig %u and %u", cb->vertex_count, cb->joint_count,
                             rig->vertex_count, nb);
    if (nb && !ssk_floats_finite(skinning, MAT4_SIZE * (size_t)nb))
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "ssk_cage_rev_solve: a skinning matrix is not finite");
    for (size_t q = 0; q < 3 * (size_t)c; ++q)
        if (!isfinite(posed_offset[q]))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "ssk_cage_rev_solve: posed offset of cage vertex %zu is not "
                                 "finite", q / 3);

    const size_t n = 3 * (size_t)c;
    if (n > SIZE_MAX / n / sizeof(double))
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "ssk_cage_rev_solve: a %zu by %zu matrix does not fit in memory", n,
                             n);
    double *a = malloc(n * n * sizeof *a);        /* the Eq. 19 matrix, column-major */
    double *rhs = malloc(n * sizeof *rhs);        /* Phi~ dC', then dC */
    double *rot = malloc((9 * (size_t)nb + 1) * sizeof *rot);  /* R_b */
    double *w = malloc(((size_t)nb + 1) * sizeof *w);          /* w_ib of one row */
    double *sub = malloc(((size_t)nb + 1) * sizeof *sub);      /* W_ib of one row */
    double *g = malloc((9 * (size_t)nb + 1) * sizeof *g);      /* G_ib of one row */
    uint32_t *live = malloc(((size_t)nb + 1) * sizeof *live);  /* bones with G_ib != 0 */
    int *piv = malloc(n * sizeof *piv);
    double *work = malloc(4 * n * sizeof *work);
    int *iwork = malloc(n * sizeof *iwork);
    ssk_status st = SSK_OK;
    if (!a || !rhs || !rot || !w || !sub || !g || !live || !piv || !work || !iwork) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_rev_solve: out of memory");
        goto done;
    }
    for (uint32_t b = 0; b < nb; ++b) bone_linear(rot + 9 * (size_t)b, skinning, b);

    for (uint32_t k = 0; k < c; ++k) {
        const uint32_t i = cb->up.rows[k];
        if (i >= cb->vertex_count) {
            st = ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                               "ssk_cage_rev_solve: updater row %u names vertex %u of %u", k,
                               i, cb->vertex_count);
            goto done;
        }
        const double *phi_i = cb->phi + (size_t)i * c;
        vertex_weights(w, rig, i);
        /* R~_i = sum_j w_ij R_j; W_ib: each weight added up the path from
         * its bone to (not including) the root, whose dt is 0 */
        double rt[9] = {0};
        memset(sub, 0, (size_t)nb * sizeof *sub);
        for (uint32_t j = 0; j < nb; ++j) {
            if (w[j] == 0.0) continue;
            for (int e = 0; e < 9; ++e) rt[e] += w[j] * rot[9 * (size_t)j + (size_t)e];
            uint32_t b = j;
            for (uint32_t step = 0; step < nb; ++step) { /* bounded: parents are acyclic */
                const int32_t p = bone_parent(rig, b);
                if (p < 0) break;
                sub[b] += w[j];
                b = (uint32_t)p;
            }
        }
        /* G_ib = W_ib (R_p(b) - R_b) */
        uint32_t live_count = 0;
        for (uint32_t b = 0; b < nb; ++b) {
            if (sub[b] == 0.0) continue;
            const double *rp = rot + 9 * (size_t)bone_parent(rig, b), *rb = rot + 9 * (size_t)b;
            double *gb = g + 9 * (size_t)b;
            for (int e = 0; e < 9; ++e) gb[e] = sub[b] * (rp[e] - rb[e]);
            live[live_count++] = b;
        }
        /* block row k: E_kl = phi_il R~_i + sum_b psi_bl G_ib */
        for (uint32_t l = 0; l < c; ++l) {
            double blk[9];
            for (int e = 0; e < 9; ++e) blk[e] = phi_i[l] * rt[e];
            for (uint32_t q = 0; q < live_count; ++q) {
                const uint32_t b = live[q];
                const double psi_bl = cb->psi[(size_t)b * c + l];
                const double *gb = g + 9 * (size_t)b;
                for (int e = 0; e < 9; ++e) blk[e] += psi_bl * gb[e];
            }
            for (int row = 0; row < 3; ++row)
                for (int col = 0; col < 3; ++col)
                    a[(3 * (size_t)l + (size_t)col) * n + 3 * (size_t)k + (size_t)row] =
                        blk[3 * row + col];
        }
        /* right-hand side: Phi~ dC' */
        for (int ax = 0; ax < 3; ++ax) {
            double s = 0.0;
            for (uint32_t l = 0; l < c; ++l) s += phi_i[l] * posed_offset[3 * (size_t)l + (size_t)ax];
            rhs[3 * (size_t)k + (size_t)ax] = s;
        }
    }

    const int side = (int)n, one = 1;
    int info = 0;
    const double anorm = dlange_("1", &side, &side, a, &side, work);
    dgesv_(&side, &one, a, &side, piv, rhs, &side, &info);
    if (info != 0) {
        st = ssk_error_set(err, SSK_ERROR_BIND,
                           "ssk_cage_rev_solve: the Eq. 19 matrix (%d by %d) is singular "
                           "(dgesv info %d)", side, side, info);
        goto done;
    }
    double rcond = 0.0;
    dgecon_("1", &side, a, &side, &anorm, &rcond, work, iwork, &info);
    if (info != 0 || !(rcond >= CAGE_REV_MIN_RCOND)) {
        st = ssk_error_set(err, SSK_ERROR_BIND,
                           "ssk_cage_rev_solve: the Eq. 19 matrix (%d by %d) is numerically "
                           "singular (reciprocal condition %g)", side, side, rcond);
        goto done;
    }
    for (size_t q = 0; q < n; ++q) {
        if (!isfinite(rhs[q])) {
            st = ssk_error_set(err, SSK_ERROR_NONFINITE,
                               "ssk_cage_rev_solve: rest offset of cage vertex %zu is not "
                               "finite", q / 3);
            goto done;
        }
    }
    memcpy(rest_offset, rhs, n * sizeof *rest_offset);
    st = ssk_error_ok(err);
done:
    free(a);
    free(rhs);
    free(rot);
    free(w);
    free(sub);
    free(g);
    free(live);
    free(piv);
    free(work);
    free(iwork);
    return st;
}
