/*
 * cage.h — coupled cages and skeletons (Corda et al. 2020,
 * 003_3bdce6713f645d88.txt; issue #21): the pieces that bind a closed
 * triangle cage to a rigged mesh and keep the cage, the skeleton and the
 * skin in sync. Internal to the core. Double precision throughout (the
 * coordinates feed square solves whose conditioning needs it).
 *
 * Who fills what:
 * - bind/cage_mvc.c: ssk_cage_mvc (3D mean value coordinates, Ju, Schaefer
 *   and Warren 2005, for triangle cages).
 * - bind/cage_up.c: ssk_cage_maxvol and the cage updater of 4.1 (Eq. 8:
 *   MaxVol rows, Thiery et al. 2012; the square system factorized once
 *   with LAPACK, solved by back-substitution per frame).
 * - bind/cage_skel.c: the skeleton updater of 4.2 (joint localization,
 *   Eq. 9; maximum-entropy coordinates, Eq. 10-12, Hormann and Sukumar
 *   2008; the joints' refit, Eq. 13).
 * - bind/cage_rev.c: the reverse cage deformer of 4.3 (Eq. 15-19).
 *
 * Matrices are dense and row-major.
 */
#ifndef SSK_BIND_CAGE_H
#define SSK_BIND_CAGE_H

#include "model/internal.h"

/* ------------------------------------------------------------------------ */
/* Mean value coordinates (Ju et al. 2005)                                   */
/* ------------------------------------------------------------------------ */

/* phi (count by cage_vertex_count, caller-owned) gets the 3D mean value
 * coordinates of each point (count by 3) with respect to the closed,
 * consistently oriented triangle cage (cage_vertex_count by 3 positions,
 * cage_triangle_count by 3 vertex indices), any one space: every row sums
 * to 1 and reproduces its point (linear precision), sum_k phi_ik c_k =
 * p_i. A point on a cage face or vertex gets that face's barycentric
 * coordinates (the limit); a point near one is handled without dividing by
 * its vanishing distance. Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, a
 * triangle index out of range, a degenerate cage: named), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_mvc(double *phi, const double *points, uint32_t count,
                        const double *cage_vertices, uint32_t cage_vertex_count,
                        const uint32_t *cage_triangles, uint32_t cage_triangle_count,
                        ssk_error *err);

/* The checks ssk_cage_mvc makes of a cage, alone: at least 4 vertices and
 * 4 triangles, finite vertices, indices in range, no repeated corner or
 * zero-area triangle, closed and consistently oriented (every directed
 * edge once, and its reverse once). Errors: SSK_ERROR_INVALID_ARGUMENT
 * with ssk_cage_mvc's message, SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_check(const double *cage_vertices, uint32_t cage_vertex_count,
                          const uint32_t *cage_triangles, uint32_t cage_triangle_count,
                          ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Cage updater (4.1)                                                        */
/* ------------------------------------------------------------------------ */

/* rows (c entries, caller-owned) gets c distinct row indices of the count
 * by c matrix phi whose square submatrix has a (locally) maximal volume
 * |det| (MaxVol, Goreinov et al.; as Thiery et al. 2012 use it).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, count < c, c = 0, phi of rank
 * below c: named), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_maxvol(uint32_t *rows, const double *phi, uint32_t count, uint32_t c,
                           ssk_error *err);

/* The cage updater: the MaxVol rows of phi and the LU factors of the
 * square system Phi~ C' = M~' (Eq. 8). Owned arrays (ssk_cage_up_free). */
typedef struct ssk_cage_up {
    uint32_t c;       /* cage vertices */
    uint32_t *rows;   /* c: the mesh vertices (rows of phi) the cage is fitted to */
    double *lu;       /* c by c: LAPACK dgetrf's factors of Phi~ (column-major) */
    int *pivots;      /* c */
} ssk_cage_up;

/* Selects the rows (ssk_cage_maxvol) and factorizes Phi~ once.
 * - out: zeroed on entry, the caller's (ssk_cage_up_free).
 * Errors: those of ssk_cage_maxvol, SSK_ERROR_BIND (a singular Phi~). */
ssk_status ssk_cage_up_create(ssk_cage_up *out, const double *phi, uint32_t count, uint32_t c,
                              ssk_error *err);
/* The same with the rows given (c distinct indices below count, e.g. a
 * stored binding's MaxVol selection; NULL: ssk_cage_maxvol): only Phi~ is
 * factorized (a few ms for c = 88, against the selection's tens).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (a row repeated or out of range),
 * those of ssk_cage_up_create. */
ssk_status ssk_cage_up_create_rows(ssk_cage_up *out, const double *phi, uint32_t count,
                                   uint32_t c, const uint32_t *rows, ssk_error *err);
/* cage (c by 3, caller-owned) gets C' solving Phi~ C' = M~', posed_rows (c
 * by 3) the posed positions of the mesh vertices up->rows, in order.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_NONFINITE. */
ssk_status ssk_cage_up_solve(const ssk_cage_up *up, double *cage, const double *posed_rows,
                             ssk_error *err);
void ssk_cage_up_free(ssk_cage_up *up);

/* ------------------------------------------------------------------------ */
/* Skeleton updater (4.2)                                                    */
/* ------------------------------------------------------------------------ */

/* Eq. 9 with exponent s (the paper: 0.1): L (joint_count by count,
 * caller-owned) gets L_ji = -1 + w_ij^s + (sum_{k != j} w_ik)^s, w the
 * skin weights: count by joint_count dense, rows summing to 1 (or all 0:
 * L = -1 + 0 + 0 is then clamped to 0, an unweighted vertex locates no
 * joint). 0 in rigid regions, largest where w_ij is near 1/2. */
void ssk_cage_joint_localization(double *L, const double *weights, uint32_t count,
                                 uint32_t joint_count, double s);

/* The maximum-entropy coordinates of Eq. 11 (Hormann and Sukumar 2008):
 * psi (c, caller-owned) maximizing sum_k -psi_k ln(psi_k / m_k) subject to
 * sum_k psi_k = 1 and sum_k psi_k c_k = point, for the prior masses m (c
 * values >= 0, not all 0; normalized here) and the cage vertices (c by
 * 3). Solved through its 3-variable dual (psi_k proportional to m_k
 * exp(lambda . (c_k - point))) by a damped Newton method.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, no positive mass, the point
 * outside the convex hull of the cage vertices with positive mass: no
 * solution), SSK_ERROR_BIND (no convergence, with the residual). */
ssk_status ssk_cage_max_entropy(double *psi, const double *prior, const double *cage_vertices,
                                uint32_t c, const double point[3], ssk_error *err);

/* Eq. 10-12 for every joint: psi (joint_count by c, caller-owned) row j =
 * MEC(sum_i (mvc_ji L_ji) phi_i) for joint position joints[j], where mvc
 * (joint_count by count) are the mean value coordinates of the joints with
 * respect to the rest mesh (ssk_cage_mvc with the mesh as the cage), L the
 * joint localization (joint_count by count) and phi (count by c) the mesh's
 * cage coordinates. Negative masses (MVC may be negative) are clamped to
 * 0 before MEC; a joint whose masses are all 0 falls back to the
 * unlocalized sum (say so in the code).
 * Errors: those of ssk_cage_max_entropy, naming the joint. */
ssk_status ssk_cage_joint_coordinates(double *psi, const double *joints, uint32_t joint_count,
                                      const double *mvc, const double *L, uint32_t count,
                                      const double *phi, const double *cage_vertices, uint32_t c,
                                      ssk_error *err);

/* ------------------------------------------------------------------------ */
/* A rig's cage binding and the reshaped skeleton (bind/cage_bind.c,         */
/* bind/cage_skinning.c)                                                     */
/* ------------------------------------------------------------------------ */

/* What binds a closed triangle cage to a rig at rest: every rig vertex's
 * cage coordinates (Eq. 7, M = Phi C), the joints' (Eq. 12, A = Psi C; joint
 * b is bone b's head), and the cage updater (4.1). Rig space. Owned arrays
 * (ssk_cage_binding_free). */
typedef struct ssk_cage_binding {
    uint32_t vertex_count;      /* #V of the rig */
    uint32_t cage_vertex_count; /* c */
    uint32_t cage_triangle_count;
    double *cage_rest;          /* c by 3: the rest cage C0 */
    uint32_t *cage_triangles;   /* by 3 */
    double *phi;                /* #V by c: ssk_cage_mvc of each rest vertex */
    uint32_t joint_count;       /* #B */
    double *psi;                /* #B by c: ssk_cage_joint_coordinates of the bone heads */
    int joints_from_mesh_mvc;   /* 1: the joints' mvc_ji are mean value coordinates with
                                   respect to the rest mesh (closed, consistently oriented);
                                   0: the mesh is not, and a documented stand-in was used */
    ssk_cage_up up;             /* the cage updater */
} ssk_cage_binding;

/* Binds the cage (cage_vertex_count by 3 rest positions in rig space,
 * triangle indices) to `rig` at rest: phi of every vertex (each mesh's
 * positions through its object matrix), the joint localization (Eq. 9,
 * s = SSK_CAGE_LOCALIZATION_EXPONENT) from the skin weights, psi of every
 * bone head (Eq. 10-12), and the cage updater over phi.
 * - out: zeroed on entry, the caller's (ssk_cage_binding_free).
 * Errors: those of ssk_cage_mvc (the cage), ssk_cage_joint_coordinates (a
 * joint outside the cage, named) and ssk_cage_up_create. */
#define SSK_CAGE_LOCALIZATION_EXPONENT 0.1
ssk_status ssk_cage_binding_create(ssk_cage_binding *out, const ssk_rig *rig,
                                   const double *cage_vertices, uint32_t cage_vertex_count,
                                   const uint32_t *cage_triangles, uint32_t cage_triangle_count,
                                   ssk_error *err);
void ssk_cage_binding_free(ssk_cage_binding *cb);

/* The version of what ssk_cage_binding_create computes (Phi, Psi and its
 * localization exponent, the MaxVol selection): part of the key of a
 * stored cage binding, raised whenever a change alters their values. */
#define SSK_CAGE_BIND_VERSION 1u

/* The key of a cage binding (binding files' cage section, binding_io.c):
 * XXH3 of a little-endian stream: the tag "SSKCAGE1", SSK_CAGE_BIND_VERSION,
 * SSK_CAGE_LOCALIZATION_EXPONENT (binary64 bits), c, the triangle count,
 * the rest cage's vertices (c by 3 float32, rig space, as ssk_cage_mesh
 * holds them) and triangles (by 3 uint32). */
uint64_t ssk_cage_binding_key(const float *cage_vertices, uint32_t cage_vertex_count,
                              const uint32_t *cage_triangles, uint32_t cage_triangle_count);

/* A copy of `src` (a complete binding, or a stored one: cage_rest,
 * cage_triangles and up.lu / up.pivots NULL):
 * - cage_vertices NULL: the stored form (phi, psi, up.rows, the counts and
 *   joints_from_mesh_mvc; what a binding file keeps);
 * - else the complete form for that rest cage (c by 3, rig space, checked
 *   by ssk_cage_check; triangles by 3): phi, psi and rows copied, Phi~
 *   factorized again (ssk_cage_up_create_rows), bit for bit the binding
 *   ssk_cage_binding_create made when src came from it for this cage.
 * - out: zeroed on entry, the caller's (ssk_cage_binding_free).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, counts differ from src's),
 * those of ssk_cage_check and ssk_cage_up_create_rows,
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_binding_copy(ssk_cage_binding *out, const ssk_cage_binding *src,
                                 const double *cage_vertices, uint32_t cage_vertex_count,
                                 const uint32_t *cage_triangles, uint32_t cage_triangle_count,
                                 ssk_error *err);

/* The rest shape under an edited rest cage (cage: c by 3, rig space):
 * positions (#V by 3, rig space, caller-owned, may be NULL) = Phi C (Eq. 7)
 * and heads (#B by 3, rig space, caller-owned, may be NULL) = Psi C
 * (Eq. 13). */
void ssk_cage_binding_reshape(const ssk_cage_binding *cb, const double *cage, float *positions,
                              float *heads);

/* The skinning matrices of a skeleton whose rest heads moved (4.2, "keeping
 * its rotational component unchanged and recomputing its translational
 * component according to the new joints rest-pose locations ... updating
 * first all roots, and then processing children"): dst (#B by 16,
 * caller-owned, row-major, rig space) from the frame's skinning matrices
 * of the original skeleton (#B by 16), its rest heads (rig->bones[b].head)
 * and the new rest heads (#B by 3). Each bone keeps its posed rotation;
 * its posed head follows its parent's: h'_b = h'_p + R_p (a'_b - a'_p) +
 * (h_b - h_p - R_p (a_b - a_p)), the last term the frame's own translation
 * of the bone relative to its parent (0 for a rigid chain); a root's is
 * S_root a'_root. With new_heads equal to the rest heads, dst equals
 * skinning up to rounding. */
void ssk_cage_skinning(float *dst, const ssk_rig *rig, const float *new_heads,
                       const float *skinning);

/* ------------------------------------------------------------------------ */
/* Reverse cage deformer (4.3, bind/cage_rev.c)                              */
/* ------------------------------------------------------------------------ */

/* CageRev (Eq. 15-19): rest_offset (c by 3, rig space, caller-owned) gets
 * the rest-cage offset dC whose reshape (ssk_cage_binding_reshape: rest
 * rows Phi (C + dC), heads Psi (C + dC)), skinned with ssk_cage_skinning's
 * carried matrices and LBS, and fitted by the cage updater at the MaxVol
 * rows (ssk_cage_up_solve), moves the posed cage by posed_offset (c by 3,
 * rig space: dC'). Solves the 3c by 3c system
 *   (R~ Phi~ + Omega~ K Psi) dC = Phi~ dC'   (Eq. 19)
 * with LAPACK dgesv, R~ the LBS blend of the skinning rotations at the
 * MaxVol rows and K the map from rest-head offsets to skinning-translation
 * offsets of ssk_cage_skinning (the paper's B_topo^-1 A_R; a root keeps its
 * matrix, see cage_rev.c for this deviation from Eq. 16).
 * - cb: the binding (phi, psi, the updater's rows);
 * - rig: the rig the skinning belongs to and whose rest cage is cb's (after
 *   a reshape, the reshaped rig: only its skin weights and parents are
 *   read, which a reshape keeps), vertex and bone counts matching cb;
 * - skinning: #B by 16, row-major, rig space, the current pose; only the
 *   3x3 linear parts enter (translations and rest positions cancel).
 * Exact for LBS, for any size of dC' (C' is affine in C for fixed
 * rotations); for DQS and the other methods an approximation (the LBS
 * matrix is used): the posed cage misses dC' by an amount proportional
 * to dC' (first order, it does not vanish for small steps; test_cage_rev
 * measures about 21% of dC' for DQS at a 75-degree bend of a 2-bone
 * limb), each interactive step starting afresh from the refitted C'.
 * Identity rotations (the rest pose) give dC = dC'.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, an empty cage),
 * SSK_ERROR_BINDING_MISMATCH (counts differ), SSK_ERROR_NONFINITE (a
 * skinning matrix, dC' or the result), SSK_ERROR_BIND (a singular
 * system, with its reciprocal condition), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_rev_solve(double *rest_offset, const ssk_cage_binding *cb, const ssk_rig *rig,
                              const float *skinning, const double *posed_offset, ssk_error *err);

/* The rig an edited cage describes (ssk_cage_reshape) and, when
 * with_centers, its centers of rotation repositioned by Eq. 14
 * (ssk_cage_cor_centers): *out_centers #V by 3 and *out_flags #V, malloc'd,
 * the caller frees them (NULL without with_centers); *out_rig the caller
 * destroys. The bake and the preview of a --cage edit (cage_rig.c). On
 * failure nothing is left allocated. */
ssk_status ssk_cage_reshape_with_centers(ssk_rig **out_rig, float **out_centers,
                                         uint8_t **out_flags, ssk_cage *cage,
                                         const float *edited_vertices, bool with_centers,
                                         ssk_error *err);

#endif /* SSK_BIND_CAGE_H */
