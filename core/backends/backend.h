/*
 * Stage backends (core/backends/, above kernels): the CPU dispatch over
 * the kernels (cpu_backend.c), the GL backend (gl_backend.c) on the core's
 * EGL thread (gl_context.c), the shaders embedded at build time
 * (shaders.c) and the GL precomputation of centers of rotation (cor_gl.c).
 *
 * backend.h — what a deformer backend implements. The deformer
 * (deformer.c) runs a deformer graph: it prepares per-bone data once per
 * frame on the host, uploads it, then runs one kernel per graph node on
 * buffers that stay on the backend, and reads back only what the caller
 * asks for.
 */
#ifndef SSK_BACKEND_H
#define SSK_BACKEND_H

#include "model/internal.h"
#include "kernels/implicit.h"

/* Per-frame data, prepared by the deformer for every backend. */
typedef struct ssk_frame_data {
    /* LBS: #M by #B by 16 row-major matrices, the rig-space skinning
     * matrices folded with each mesh's object matrices
     * (inverse(O_m(t)) · S_b · O_m), so they act in object space.
     * NULL when the graph has no LBS node. */
    const float *lbs_matrices;
    /* DQS: #B dual quaternions of the rig-space skinning matrices (NULL
     * when the graph has no DQS node). */
    const ssk_dual_quat *dual_quats;
    /* CoR: #B ssk_cor_bone of the rig-space skinning matrices (NULL when
     * the graph has no CoR node). */
    const ssk_cor_bone *cor_bones;
    /* #M by 16: pre = rest object matrix O_m (object -> rig), post =
     * inverse(O_m(t)) (rig -> object at the frame), objects = O_m(t);
     * mesh_identity[m] is 1 when O_m and O_m(t) are both the identity. */
    const float *pre;
    const float *post;
    const float *objects;
    const uint8_t *mesh_identity;
} ssk_frame_data;

typedef enum ssk_kernel {
    SSK_KERNEL_LBS = 0, /* output <- LBS of the rest positions */
    SSK_KERNEL_DQS,     /* output <- DQS of the rest positions */
    SSK_KERNEL_RIGID,   /* output <- rigid attachment skinning (binding) */
    SSK_KERNEL_IRS,     /* output <- IRS (binding) */
    SSK_KERNEL_RADIAL,  /* output <- radial deformation of input */
    SSK_KERNEL_NORMALS, /* output <- area-weighted vertex normals of input */
    SSK_KERNEL_SPRING,  /* output <- spring deformer relaxing input (the
                           first stage) */
    SSK_KERNEL_ARAP,    /* output <- ARAP on scale vectors (ssk_arap, solved
                           on the CPU by every backend) */
    SSK_KERNEL_COR,     /* output <- CoR skinning of the rest positions
                           (centers of rotation from the binding view) */
    SSK_KERNEL_IMPLICIT, /* output <- implicit skinning's tracking of input
                            (ssk_implicit; the GL backend runs it in
                            shaders/kernels_implicit.comp) */
    SSK_KERNEL_COUNT
} ssk_kernel;

/* Whether a backend welds the output of `kernel` (core/model/weld.c): every
 * kernel that writes positions from the binding or from neighbors (rigid,
 * IRS, radial, spring, CoR). LBS and DQS follow the skin weights alone, as
 * Blender's Armature modifier does: coincident copies that an importer made
 * at a seam have the same weights and come out identical anyway, and
 * coincident vertices that a file gives different weights separate there
 * as they do in Blender (ssk_scene_check warns). */
static inline bool ssk_kernel_welds(ssk_kernel kernel)
{
    return kernel == SSK_KERNEL_RIGID || kernel == SSK_KERNEL_IRS || kernel == SSK_KERNEL_RADIAL ||
           kernel == SSK_KERNEL_SPRING || kernel == SSK_KERNEL_COR || kernel == SSK_KERNEL_ARAP ||
           kernel == SSK_KERNEL_IMPLICIT;
}

/* One kernel run over the whole rig (all meshes). Buffers hold whole-rig
 * #V by 3 floats, positions in each mesh's object space. Attachment
 * kernels work in rig space internally: object -> rig with
 * frame->objects, rig -> object with frame->post. */
typedef struct ssk_kernel_call {
    ssk_kernel kernel;
    int input;  /* buffer id (RADIAL, NORMALS), else -1 */
    int output; /* buffer id */
    const ssk_attach_bone *attach_bones; /* #B (RIGID, IRS, RADIAL) */
    int length_adjust;                   /* IRS */
    const float *rest_distances;         /* #V (IRS with length_adjust) */
    const float *weight_slots;           /* RIGID, IRS with attachment WEIGHTS:
                                            per mesh #V by max(K, 1) records,
                                            concatenated (ssk_attach_weight_slots);
                                            NULL: the binding's attachment */
    size_t weight_slot_count;            /* records in weight_slots */
    const ssk_attach_bone *rest_bones;   /* #B, the identity pose (IRS with
                                            weight_slots and length_adjust) */
    const uint8_t *bone_mask;            /* #B (RADIAL) */
    ssk_radial_profile profile;          /* RADIAL */
    float amount;                        /* RADIAL, at this frame */
    ssk_spring *spring;                  /* SPRING: the node's solver */
    const float *skinning;               /* SPRING, IMPLICIT: #B by 16 of the frame */
    double frame;                        /* SPRING: the frame */
    ssk_spring_report *report;           /* SPRING: out */
    ssk_arap *arap;                      /* ARAP: the node's solver */
    ssk_implicit *implicit;              /* IMPLICIT: the node's tracker */
    ssk_implicit_report *implicit_report; /* IMPLICIT: out */
    int defer_finish;                    /* not the deform's last step: the GL
                                            backend returns once the kernel is
                                            issued (the next step's commands
                                            follow it on the GPU), not finished */
} ssk_kernel_call;

typedef struct ssk_backend_ops {
    const char *name;
    /* Uploads/keeps what the rig needs, and from `binding` (NULL when no
     * node needs one) the bones, t and scale vectors when binding->bones
     * is not NULL (attachment kernels) and the centers of rotation when
     * binding->cor_centers is not NULL (CoR kernel). */
    ssk_status (*create)(void **out_state, const ssk_rig *rig, const ssk_binding_view *binding,
                         ssk_gl_context *gl, ssk_error *err);
    void (*destroy)(void *state);
    /* A new #V by 3 float buffer; ids are 0, 1, 2, ... */
    ssk_status (*buffer_create)(void *state, int *out_id, ssk_error *err);
    /* Uploads the per-frame data the following runs read. */
    ssk_status (*frame_upload)(void *state, const ssk_frame_data *frame, ssk_error *err);
    /* Runs one kernel; returns when its output is complete (GL: finished,
     * unless call->defer_finish: then issued, in order before any later
     * run, read or max_displacement of the same state). */
    ssk_status (*run)(void *state, const ssk_kernel_call *call, ssk_error *err);
    /* Optional (may be NULL): makes buffer `id` live in caller memory `host`
     * (#V by 3) until the next call, so a kernel writing it needs no
     * readback; host NULL returns it to the backend's own memory. Returns
     * true when aliased. */
    bool (*alias)(void *state, int id, float *host);
    /* Copies buffer `id` to dst (#V by 3). */
    ssk_status (*read)(void *state, int id, float *dst, ssk_error *err);
    /* max_v |buffer_v - reference_v| (reference: #V by 3 host array). */
    ssk_status (*max_displacement)(void *state, int id, const float *reference, float *out,
                                   ssk_error *err);
    /* Human-readable device ("cpu (2 threads)", the GL renderer). */
    const char *(*device_name)(void *state);
} ssk_backend_ops;

extern const ssk_backend_ops ssk_cpu_backend;
extern const ssk_backend_ops ssk_gl_backend;

/* The implicit node on the CPU (cpu_backend.c; gl_backend.c's run_implicit
 * is its device twin):
 * positions (#V by 3, object space, the first stage) are taken to rig
 * space, tracked (ssk_implicit_pose, ssk_implicit_track with
 * call->skinning) and taken back, in place. */
ssk_status ssk_cpu_implicit_track(const ssk_rig *rig, const ssk_frame_data *frame,
                                  const ssk_kernel_call *call, float *positions, ssk_error *err);

#endif /* SSK_BACKEND_H */
