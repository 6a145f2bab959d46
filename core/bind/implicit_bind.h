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

/* Reconstructs every bone's field from the rig's rest pose (4.4): bone i's
 * sub-mesh is the vertices whose largest skin weight is i (welded
 * representatives); Poisson-disk samples with normals on it, culled by
 * Eq. 4.2, plus one closure center at each end of the bone that is a joint
 * with another field's bone, on the bone's line at the distance of the
 * nearest vertex from that joint, normal along the bone outward; the HRBF
 * (bind/hrbf.h) fitted to them; r the farthest sample's distance to the
 * bone; the grid sampled from t_r(d). Also the mean value coordinates.
 * - out: zeroed on entry, the caller's (ssk_implicit_fit_free).
 * - params: NULL for the defaults.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL rig or out, bad params),
 * SSK_ERROR_OUT_OF_MEMORY. A bone whose fit fails (too few samples, a
 * singular system) gets no field (bone_field -1), not an error. */
ssk_status ssk_implicit_fit_create(ssk_implicit_fit *out, const ssk_rig *rig,
                                   const ssk_implicit_fit_params *params, ssk_error *err);
void ssk_implicit_fit_free(ssk_implicit_fit *fit);

#endif /* SSK_BIND_IMPLICIT_BIND_H */
