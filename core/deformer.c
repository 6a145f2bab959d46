/*
 * deformer.c — a skinning method on a backend for a whole rig: per-frame
 * preparation of bone data (rig-space skinning matrices folded with each
 * mesh's object matrices for LBS, dual quaternions for DQS) and dispatch of
 * the kernels mesh by mesh.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct ssk_deformer {
    const ssk_rig *rig;
    ssk_method method;
    ssk_backend backend;
    float *mesh_matrices;      /* #B by 16 scratch: LBS matrices of one mesh */
    ssk_dual_quat *dual_quats; /* #B scratch: DQS bones of the frame */
};

static const char *const method_names[SSK_METHOD_COUNT] = {"lbs", "dqs"};
static const char *const backend_names[SSK_BACKEND_COUNT] = {"auto", "cpu"};

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
                         "unknown backend '%s' (expected auto or cpu)", name ? name : "(null)");
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
    d->backend = SSK_BACKEND_CPU; /* the only backend so far; AUTO resolves here */
    size_t nb = (size_t)rig->bone_count + 1;
    d->mesh_matrices = malloc(nb * 16 * sizeof(float));
    d->dual_quats = malloc(nb * sizeof(ssk_dual_quat));
    if (!d->mesh_matrices || !d->dual_quats) {
        ssk_deformer_destroy(d);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    *out = d;
    return ssk_error_ok(err);
}

void ssk_deformer_destroy(ssk_deformer *d)
{
    if (!d) return;
    free(d->mesh_matrices);
    free(d->dual_quats);
    free(d);
}

ssk_backend ssk_deformer_backend(const ssk_deformer *d) { return d->backend; }

ssk_status ssk_deformer_deform(ssk_deformer *d, float *dst_positions,
                               const float *skinning_matrices, const float *object_matrices,
                               ssk_error *err)
{
    if (!d || !dst_positions || (!skinning_matrices && d->rig->bone_count))
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
    if (d->method == SSK_METHOD_DQS && nb) {
        float *bind = d->mesh_matrices; /* gather bind matrices contiguously */
        for (uint32_t b = 0; b < nb; ++b)
            memcpy(bind + 16 * (size_t)b, rig->bones[b].bind_matrix, 16 * sizeof(float));
        st = ssk_dqs_prepare(d->dual_quats, skinning_matrices, bind, nb, err);
        if (st != SSK_OK) return st;
    }
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        float *out = dst_positions + 3 * (size_t)mesh->first_vertex;
        /* v' = post · blend(pre · v), pre = rest object matrix, post = the
         * inverse of the object matrix at this frame. */
        float post[16];
        const float *frame_object = object_matrices ? object_matrices + 16 * (size_t)m
                                                    : mesh->object_matrix;
        if (!ssk_mat4_invert(post, frame_object))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "object matrix of mesh '%s' is singular", mesh->name);
        const bool trivial = ssk_mat4_is_identity(mesh->object_matrix) &&
                             ssk_mat4_is_identity(frame_object);
        if (mesh->influence_count == 0 || nb == 0) {
            memcpy(out, mesh->positions, 3 * (size_t)mesh->vertex_count * sizeof(float));
            continue;
        }
        if (d->method == SSK_METHOD_LBS) {
            const float *mats = skinning_matrices;
            if (!trivial) {
                for (uint32_t b = 0; b < nb; ++b) {
                    float *dm = d->mesh_matrices + 16 * (size_t)b;
                    ssk_mat4_mul(dm, skinning_matrices + 16 * (size_t)b, mesh->object_matrix);
                    ssk_mat4_mul(dm, post, dm);
                }
                mats = d->mesh_matrices;
            }
            ssk_lbs_deform(out, mesh->positions, mesh->vertex_count, mesh->bone_indices,
                           mesh->weights, mesh->influence_count, mats, nb);
        } else {
            ssk_dqs_deform(out, mesh->positions, mesh->vertex_count, mesh->bone_indices,
                           mesh->weights, mesh->influence_count, d->dual_quats, nb,
                           trivial ? NULL : mesh->object_matrix, trivial ? NULL : post);
        }
    }
    return ssk_error_ok(err);
}
