/*
 * backend.h — what a deformer backend implements. The deformer
 * (deformer.c) prepares per-bone data once per frame on the host and hands
 * it to the backend, which owns the per-vertex work and its buffers.
 */
#ifndef SSK_BACKEND_H
#define SSK_BACKEND_H

#include "internal.h"

/* Per-frame bone data, prepared by the deformer for every backend. */
typedef struct ssk_frame_data {
    /* LBS: #M by #B by 16 row-major matrices, the rig-space skinning
     * matrices folded with each mesh's object matrices
     * (inverse(O_m(t)) · S_b · O_m), so they act in object space. */
    const float *lbs_matrices;
    /* DQS: #B dual quaternions of the rig-space skinning matrices. */
    const ssk_dual_quat *dual_quats;
    /* DQS: #M by 16 pre (object -> rig) and post (rig -> object at the
     * frame) matrices; mesh_identity[m] is 1 when both are the identity. */
    const float *pre;
    const float *post;
    const uint8_t *mesh_identity;
} ssk_frame_data;

typedef struct ssk_backend_ops {
    const char *name;
    /* Uploads/keeps what the rig needs. *out_state is the backend's. */
    ssk_status (*create)(void **out_state, const ssk_rig *rig, ssk_method method,
                         ssk_gl_context *gl, ssk_error *err);
    void (*destroy)(void *state);
    /* Deforms every mesh; dst (whole-rig #V by 3) may be NULL: the result
     * then stays in the backend for normals/max_displacement. */
    ssk_status (*deform)(void *state, float *dst, const ssk_frame_data *frame,
                         ssk_deform_timing *timing, ssk_error *err);
    /* Normals of the last deform (whole rig, #V by 3). */
    ssk_status (*normals)(void *state, float *dst, ssk_error *err);
    /* max_v |p_v - reference_v| of the last deform. */
    ssk_status (*max_displacement)(void *state, float *out, const float *reference,
                                   ssk_error *err);
    /* Human-readable device ("cpu (OpenMP, 2 threads)", GL renderer). */
    const char *(*device_name)(void *state);
} ssk_backend_ops;

extern const ssk_backend_ops ssk_cpu_backend;
extern const ssk_backend_ops ssk_gl_backend;

#endif /* SSK_BACKEND_H */
