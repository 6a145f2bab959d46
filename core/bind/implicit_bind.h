/*
 * implicit_bind.h — what implicit skinning makes before the first frame
 * (Vaillant 2015, 4.4 and 4.5.1; issue #20): the composition operators'
 * grids (bind/implicit_ops.c) and the rig's fields and tracking data
 * (bind/implicit_fit.c). The structures are kernels/implicit.h's. Internal
 * to the core.
 */
#ifndef SSK_BIND_IMPLICIT_BIND_H
#define SSK_BIND_IMPLICIT_BIND_H

#include "kernels/implicit.h"

/* Builds operator `kind` at `resolution` N by bi-harmonic interpolation,
 * one 2D slice (f1, f2) per d (4.5.1): Delta^2 g = 0 with the boundary
 * values of Eq. 4.3, zero normal derivatives on the f1 = 0 and f2 = 0 axes,
 * and g = 0.5 along the slice's profile curve (Eq. 4.4).
 * - out: zeroed on entry, the caller's (ssk_implicit_op_free).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL out, N < 8 or N > 512, unknown
 * kind), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_implicit_op_build(ssk_implicit_op *out, ssk_implicit_op_kind kind,
                                 uint32_t resolution, ssk_error *err);
void ssk_implicit_op_free(ssk_implicit_op *op);

void ssk_implicit_fit_params_default(ssk_implicit_fit_params *p);

/* The version of the fit's algorithm (bind/implicit_fit.c,
 * bind/implicit_mvc.c): stored with a fit in a binding file, which is used
 * only by a build of the same version. Increase it with every change that
 * changes a fit's output. */
#define SSK_IMPLICIT_FIT_VERSION 1u
/* A field has at least this many HRBF centers (fewer: no field), and at
 * most SSK_IMPLICIT_FIT_MAX_SAMPLE_FACTOR times target_samples samples
 * plus the two closure centers. */
#define SSK_IMPLICIT_FIT_MIN_CENTERS 4u
#define SSK_IMPLICIT_FIT_MAX_SAMPLE_FACTOR 2u
#define SSK_IMPLICIT_FIT_CLOSURE_CENTERS 2u
/* A mean value coordinate row has at most this many neighbors (more: an
 * empty row). */
#define SSK_IMPLICIT_MVC_MAX_VALENCE 128u

/* Checks the ranges of ssk_implicit_fit_create's parameters (below).
 * Errors: SSK_ERROR_INVALID_ARGUMENT naming the field. */
ssk_status ssk_implicit_fit_params_check(const ssk_implicit_fit_params *p, ssk_error *err);

/* Deep copy of `src` (a fit of a rig of #V vertex_count and #B bone_count:
 * bone_field #B, mvc_offsets #V + 1, rest_normals #V by 3) into `dst`
 * (zeroed on entry, the caller's: ssk_implicit_fit_free); the same bits.
 * Errors: SSK_ERROR_OUT_OF_MEMORY (dst left zeroed). */
ssk_status ssk_implicit_fit_copy(ssk_implicit_fit *dst, const ssk_implicit_fit *src,
                                 uint32_t vertex_count, uint32_t bone_count, ssk_error *err);

/* Reconstructs every bone's field from the rig's rest pose (4.4; the
 * steps and their choices in detail: bind/implicit_fit.c's header): bone
 * i's sub-mesh is the welded representatives whose largest skin weight is
 * i (rest space = rig space, object_matrix * position); Poisson-disk
 * samples with their rest normals on it (a hash-ordered greedy pass, the
 * disk radius found by bisection for about target_samples), culled by
 * Eq. 4.2 at the ends that are joints (none culled at a free end); one
 * closure center at each end of the bone that is a joint with another
 * field's bone (the parent's tail at the head, a child's head at the
 * tail), on the bone's line beyond the joint at the distance of the
 * sub-mesh's nearest vertex from it, normal along the bone outward, none
 * at a free end; the HRBF (bind/hrbf.h) fitted to them; r the farthest
 * center's distance to the bone segment; the grid (a box in the bone's
 * frame, Y along the bone, around the centers grown by 1.25 r, 2 r or
 * 3.2 r, the first on whose faces f <= 1e-3) sampled from t_r(d) and its
 * analytic gradient. Also the rest normals and the
 * mean value coordinates (ssk_implicit_mvc_build). Results do not depend
 * on the thread count.
 * - out: zeroed on entry, the caller's (ssk_implicit_fit_free).
 * - params: NULL for the defaults (ssk_implicit_fit_params_default:
 *   64 samples, b = 0.05, N = 32); target_samples in [4, 1024], cull_b in
 *   [0, 0.5), resolution in [2, 256].
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL rig or out, bad params),
 * SSK_ERROR_OUT_OF_MEMORY (out left zeroed). A bone whose fit fails (fewer
 * than 4 centers, a singular system, a field that does not vanish on its
 * largest box's faces: an open patch) gets no field (bone_field -1), not
 * an error. */
ssk_status ssk_implicit_fit_create(ssk_implicit_fit *out, const ssk_rig *rig,
                                   const ssk_implicit_fit_params *params, ssk_error *err);

/* The welded rest surface (bind/implicit_mvc.c): area-weighted vertex
 * normals of the rig at rest, each welded representative summing its
 * welded triangles' cross products (winding fixed for mirroring object
 * matrices), outward for counter-clockwise triangles; members copy their
 * representative's; a vertex of no triangle gets (0, 0, 0).
 * - rest: #V by 3 rig-space rest positions; normals: #V by 3 (the
 *   caller's), unit or zero.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_implicit_rest_normals(const ssk_rig *rig, const float *rest, float *normals,
                                     ssk_error *err);

/* The mean value coordinates of the tangential relaxation (Eq. 4.6,
 * [HF06]): fit->mvc_offsets, mvc_neighbors, mvc_weights (allocated here,
 * freed by ssk_implicit_fit_free) from rest (#V by 3, rig space) and
 * fit->rest_normals. A representative with a closed manifold one-ring
 * (over the triangles of all meshes mapped through weld.point) gets its
 * neighbors in order around it (counter-clockwise about its normal,
 * starting at the smallest index) and 2D mean value coordinates of it in
 * the neighbors projected onto its tangent plane (tan(alpha / 2)
 * formula), normalized to sum 1. Empty rows: weld members, boundary and
 * non-manifold vertices, valence above 128, and degenerate projections
 * (bind/implicit_mvc.c lists them).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, no rest normals),
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_implicit_mvc_build(ssk_implicit_fit *fit, const ssk_rig *rig, const float *rest,
                                  ssk_error *err);

#endif /* SSK_BIND_IMPLICIT_BIND_H */
