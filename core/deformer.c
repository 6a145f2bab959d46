/*
 * deformer.c — a skinning method on a backend for a whole rig: per-frame
 * preparation of bone data (rig-space skinning matrices folded with each
 * mesh's object matrices for LBS, dual quaternions for DQS) and dispatch of
 * the kernels mesh by mesh.
 */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

struct ssk_deformer {
    const ssk_rig *rig;
    ssk_method method;
    ssk_backend backend;          /* resolved, never AUTO */
    const ssk_backend_ops *ops;
    void *state;                  /* the backend's */
    ssk_gl_context *owned_gl;     /* created here when the caller gave none */
    float *lbs_matrices;          /* #M by #B by 16 */
    float *bind;                  /* #B by 16, gathered once */
    ssk_dual_quat *dual_quats;    /* #B */
    float *pre, *post;            /* #M by 16 */
    uint8_t *mesh_identity;       /* #M */
    ssk_deform_timing timing;
    bool deformed;
};

static const char *const method_names[SSK_METHOD_COUNT] = {"lbs", "dqs"};
static const char *const backend_names[SSK_BACKEND_COUNT] = {"auto", "cpu", "gl"};

const char *ssk_method_name(ssk_method method)
{
    return (unsigned)method < SSK_METHOD_COUNT ? method_names[method] : NULL;
}

const char *ssk_backend_name(ssk_backend backend)
{
    return (unsigned)backend < SSK_BACKEND_COUNT ? backend_names[backend] : NULL;
}

ssk_status ssk_method_parse(ssk_method *out, const char *name, ssk_error *err)
{
    for (int m = 0; name && m < SSK_METHOD_COUNT; ++m)
        if (strcmp(name, method_names[m]) == 0) {
            if (out) *out = (ssk_method)m;
            return ssk_error_ok(err);
        }
    return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                         "unknown method '%s' (expected lbs or dqs)", name ? name : "(null)");
}

ssk_status ssk_backend_parse(ssk_backend *out, const char *name, ssk_error *err)
{
    for (int b = 0; name && b < SSK_BACKEND_COUNT; ++b)
        if (strcmp(name, backend_names[b]) == 0) {
            if (out) *out = (ssk_backend)b;
            return ssk_error_ok(err);
        }
    return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                         "unknown backend '%s' (expected auto, cpu or gl)", name ? name : "(null)");
}

/* Picks the backend: GL when asked for (or, for AUTO, when the context's
 * renderer is a hardware GPU), the CPU otherwise. */
static ssk_status resolve_backend(ssk_deformer *d, const ssk_deformer_desc *desc,
                                  ssk_gl_context **out_gl, ssk_error *err)
{
    *out_gl = NULL;
    if (desc->backend == SSK_BACKEND_CPU) {
        d->backend = SSK_BACKEND_CPU;
        return SSK_OK;
    }
    ssk_gl_context *gl = desc->gl_context;
    if (!gl) {
        ssk_error gl_err = {0};
        ssk_status st = ssk_gl_context_create(&d->owned_gl, &gl_err);
        if (st != SSK_OK) {
            if (desc->backend == SSK_BACKEND_GL) {
                if (err) *err = gl_err;
                return st;
            }
            d->backend = SSK_BACKEND_CPU; /* AUTO: fall back with a warning */
            ssk_error_set(err, SSK_OK, "warning: GL backend unavailable, using the CPU: %s",
                          gl_err.message);
            return SSK_OK;
        }
        gl = d->owned_gl;
    }
    if (desc->backend == SSK_BACKEND_AUTO) {
        ssk_gl_info info;
        ssk_gl_context_info(gl, &info, NULL);
        if (!info.hardware) {
            d->backend = SSK_BACKEND_CPU; /* software GL is slower than OpenMP */
            ssk_gl_context_destroy(d->owned_gl);
            d->owned_gl = NULL;
            return SSK_OK;
        }
    }
    d->backend = SSK_BACKEND_GL;
    *out_gl = gl;
    return SSK_OK;
}

ssk_status ssk_deformer_create(ssk_deformer **out, const ssk_rig *rig,
                               const ssk_deformer_desc *desc, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !rig || !desc)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_create: NULL argument");
    if ((unsigned)desc->method >= SSK_METHOD_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "method %d out of range",
                             (int)desc->method);
    if ((unsigned)desc->backend >= SSK_BACKEND_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "backend %d out of range",
                             (int)desc->backend);
    ssk_deformer *d = calloc(1, sizeof *d);
    if (!d) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    d->rig = rig;
    d->method = desc->method;
    const size_t nb = (size_t)rig->bone_count + 1, nm = rig->mesh_count;
    d->lbs_matrices = malloc(nm * nb * 16 * sizeof(float));
    d->bind = malloc(nb * 16 * sizeof(float));
    d->dual_quats = malloc(nb * sizeof(ssk_dual_quat));
    d->pre = malloc(nm * 16 * sizeof(float));
    d->post = malloc(nm * 16 * sizeof(float));
    d->mesh_identity = malloc(nm);
    if (!d->lbs_matrices || !d->bind || !d->dual_quats || !d->pre || !d->post ||
        !d->mesh_identity) {
        ssk_deformer_destroy(d);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t b = 0; b < rig->bone_count; ++b)
        memcpy(d->bind + 16 * (size_t)b, rig->bones[b].bind_matrix, 16 * sizeof(float));
    ssk_error_ok(err);
    ssk_gl_context *gl = NULL;
    ssk_status st = resolve_backend(d, desc, &gl, err);
    if (st == SSK_OK) {
        ssk_error warning = {0};
        if (err) warning = *err; /* keep an AUTO fallback warning */
        d->ops = d->backend == SSK_BACKEND_GL ? &ssk_gl_backend : &ssk_cpu_backend;
        st = d->ops->create(&d->state, rig, d->method, gl, err);
        if (st == SSK_OK && err) *err = warning;
    }
    if (st != SSK_OK) {
        ssk_deformer_destroy(d);
        return st;
    }
    *out = d;
    return SSK_OK;
}

void ssk_deformer_destroy(ssk_deformer *d)
{
    if (!d) return;
    if (d->ops && d->state) d->ops->destroy(d->state);
    ssk_gl_context_destroy(d->owned_gl);
    free(d->lbs_matrices);
    free(d->bind);
    free(d->dual_quats);
    free(d->pre);
    free(d->post);
    free(d->mesh_identity);
    free(d);
}

ssk_backend ssk_deformer_backend(const ssk_deformer *d) { return d->backend; }

const char *ssk_deformer_device_name(const ssk_deformer *d)
{
    return d->ops->device_name(d->state);
}

void ssk_deformer_timing(const ssk_deformer *d, ssk_deform_timing *out) { *out = d->timing; }

ssk_status ssk_deformer_deform(ssk_deformer *d, float *dst_positions,
                               const float *skinning_matrices, const float *object_matrices,
                               ssk_error *err)
{
    if (!d || (!skinning_matrices && d->rig->bone_count))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_deform: NULL argument");
    const ssk_rig *rig = d->rig;
    const uint32_t nb = rig->bone_count;
    ssk_status st = ssk_matrices_validate(skinning_matrices, nb, "skinning matrices", err);
    if (st != SSK_OK) return st;
    if (object_matrices) {
        st = ssk_matrices_validate(object_matrices, rig->mesh_count, "object matrices", err);
        if (st != SSK_OK) return st;
    }
    /* Per mesh: pre = rest object matrix, post = inverse of the object
     * matrix at this frame: v' = post · blend(pre · v). */
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const float *frame_object = object_matrices ? object_matrices + 16 * (size_t)m
                                                    : mesh->object_matrix;
        float *pre = d->pre + 16 * (size_t)m, *post = d->post + 16 * (size_t)m;
        if (!ssk_mat4_invert(post, frame_object))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "object matrix of mesh '%s' is singular", mesh->name);
        memcpy(pre, mesh->object_matrix, 16 * sizeof(float));
        d->mesh_identity[m] = ssk_mat4_is_identity(pre) && ssk_mat4_is_identity(frame_object);
        if (d->method != SSK_METHOD_LBS) continue;
        float *mats = d->lbs_matrices + (size_t)m * nb * 16;
        for (uint32_t b = 0; b < nb; ++b) {
            float *dm = mats + 16 * (size_t)b;
            const float *s = skinning_matrices + 16 * (size_t)b;
            if (d->mesh_identity[m]) {
                memcpy(dm, s, 16 * sizeof(float));
            } else {
                ssk_mat4_mul(dm, s, pre);
                ssk_mat4_mul(dm, post, dm);
            }
        }
    }
    if (d->method == SSK_METHOD_DQS && nb) {
        st = ssk_dqs_prepare(d->dual_quats, skinning_matrices, d->bind, nb, err);
        if (st != SSK_OK) return st;
    }
    const ssk_frame_data frame = {d->lbs_matrices, d->dual_quats, d->pre, d->post,
                                  d->mesh_identity};
    st = d->ops->deform(d->state, dst_positions, &frame, &d->timing, err);
    if (st != SSK_OK) return st;
    d->deformed = true;
    return ssk_error_ok(err);
}

ssk_status ssk_deformer_normals(ssk_deformer *d, float *dst_normals, ssk_error *err)
{
    if (!d || !dst_normals)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_deformer_normals: NULL argument");
    if (!d->deformed)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_normals: no ssk_deformer_deform yet");
    return d->ops->normals(d->state, dst_normals, err);
}

ssk_status ssk_deformer_max_displacement(ssk_deformer *d, float *out_max, const float *reference,
                                         ssk_error *err)
{
    if (!d || !out_max || !reference)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_max_displacement: NULL argument");
    if (!d->deformed)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_max_displacement: no ssk_deformer_deform yet");
    return d->ops->max_displacement(d->state, out_max, reference, err);
}
