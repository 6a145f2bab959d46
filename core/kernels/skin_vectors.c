/*
 * skin_vectors.c — the linear part of a frame's LBS or DQS skinning applied
 * to rest-space offsets (ssk_rig_skin_vectors, springskin.h): what carries a
 * shape key or a corrective added before skinning through the pose, as
 * Blender's Armature modifier does when it deforms a shape-keyed mesh.
 *
 * Skinning is affine per vertex, v' = J v + t, so skinned(p + d) =
 * skinned(p) + J d. J is obtained with the deform's own kernels on
 * translation-free inputs: LBS matrices post · S · pre with the translation
 * column zeroed; dual quaternions with a zero dual part (ssk_dqs_prepare's
 * real parts and scale matrices, their translation column zeroed), the
 * vectors taken to rig space by pre3 and back by post3 around it.
 */
#include "model/internal.h"

#include <stdlib.h>
#include <string.h>

static void apply3(float dst[3], const float m[16], const float v[3])
{
    const float x = v[0], y = v[1], z = v[2];
    dst[0] = m[0] * x + m[1] * y + m[2] * z;
    dst[1] = m[4] * x + m[5] * y + m[6] * z;
    dst[2] = m[8] * x + m[9] * y + m[10] * z;
}

ssk_status ssk_rig_skin_vectors(float *dst, const ssk_rig *rig, const uint32_t *rows,
                                uint32_t row_count, const float *vectors,
                                const float *skinning, const float *object_matrices,
                                ssk_method method, ssk_error *err)
{
    if (!dst || !rig || (row_count && (!rows || !vectors)) || !skinning)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "skin_vectors: NULL argument");
    if (method != SSK_METHOD_LBS && method != SSK_METHOD_DQS)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "skin_vectors: the method must be LBS or DQS");
    for (uint32_t r = 0; r < row_count; ++r) {
        if (rows[r] >= rig->vertex_count)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "skin_vectors: row %u is vertex %u, the rig has %u", r, rows[r],
                                 rig->vertex_count);
    }
    if (!ssk_floats_finite(vectors, 3 * (size_t)row_count))
        return ssk_error_set(err, SSK_ERROR_NONFINITE, "skin_vectors: a vector is not finite");
    const uint32_t nb = rig->bone_count;
    uint32_t k_max = 1;
    for (uint32_t m = 0; m < rig->mesh_count; ++m)
        if (rig->meshes[m].influence_count > k_max) k_max = rig->meshes[m].influence_count;
    float *mats = malloc(((size_t)nb + 1) * 16 * sizeof(float));
    float *bind = malloc(((size_t)nb + 1) * 16 * sizeof(float));
    ssk_dual_quat *dq = malloc(((size_t)nb + 1) * sizeof(ssk_dual_quat));
    uint32_t *which = malloc(((size_t)row_count + 1) * sizeof(uint32_t));
    int32_t *idx = malloc(((size_t)row_count * k_max + 1) * sizeof(int32_t));
    float *w = malloc(((size_t)row_count * k_max + 1) * sizeof(float));
    float *in = malloc(((size_t)row_count * 3 + 1) * sizeof(float));
    float *out = malloc(((size_t)row_count * 3 + 1) * sizeof(float));
    ssk_status st = SSK_OK;
    if (!mats || !bind || !dq || !which || !idx || !w || !in || !out) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "skin_vectors: out of memory");
        goto done;
    }
    if (method == SSK_METHOD_DQS && nb) {
        for (uint32_t b = 0; b < nb; ++b)
            memcpy(bind + 16 * (size_t)b, rig->bones[b].bind_matrix, 16 * sizeof(float));
        if ((st = ssk_dqs_prepare(dq, skinning, bind, nb, err)) != SSK_OK) goto done;
        for (uint32_t b = 0; b < nb; ++b) {
            memset(dq[b].dual, 0, sizeof dq[b].dual);
            dq[b].scale[3] = dq[b].scale[7] = dq[b].scale[11] = 0.0f;
        }
    }
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const uint32_t k = mesh->influence_count;
        uint32_t n = 0;
        for (uint32_t r = 0; r < row_count; ++r) {
            if (rows[r] < mesh->first_vertex || rows[r] - mesh->first_vertex >= mesh->vertex_count)
                continue;
            const uint32_t v = rows[r] - mesh->first_vertex;
            which[n] = r;
            if (k) {
                memcpy(idx + (size_t)n * k, mesh->bone_indices + (size_t)v * k, k * sizeof(int32_t));
                memcpy(w + (size_t)n * k, mesh->weights + (size_t)v * k, k * sizeof(float));
            }
            memcpy(in + 3 * (size_t)n, vectors + 3 * (size_t)r, 3 * sizeof(float));
            ++n;
        }
        if (!n) continue;
        if (!k || !nb) { /* a mesh without weights keeps its vectors */
            for (uint32_t i = 0; i < n; ++i)
                memcpy(dst + 3 * (size_t)which[i], in + 3 * (size_t)i, 3 * sizeof(float));
            continue;
        }
        const float *pre = mesh->object_matrix;
        const float *frame_object = object_matrices ? object_matrices + 16 * (size_t)m : pre;
        float post[16];
        if (!ssk_mat4_invert(post, frame_object)) {
            st = ssk_error_set(err, SSK_ERROR_NONFINITE,
                               "skin_vectors: object matrix of mesh '%s' is singular", mesh->name);
            goto done;
        }
        if (method == SSK_METHOD_LBS) {
            for (uint32_t b = 0; b < nb; ++b) {
                float *dm = mats + 16 * (size_t)b;
                ssk_mat4_mul(dm, skinning + 16 * (size_t)b, pre);
                ssk_mat4_mul(dm, post, dm);
                dm[3] = dm[7] = dm[11] = 0.0f;
            }
            ssk_lbs_deform(out, in, n, idx, w, k, mats, nb);
        } else {
            for (uint32_t i = 0; i < n; ++i) apply3(in + 3 * (size_t)i, pre, in + 3 * (size_t)i);
            ssk_dqs_deform(out, in, n, idx, w, k, dq, nb, NULL, NULL);
            for (uint32_t i = 0; i < n; ++i) apply3(out + 3 * (size_t)i, post, out + 3 * (size_t)i);
        }
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t r = which[i];
            float sum = 0.0f;
            for (uint32_t j = 0; j < k; ++j) sum += w[(size_t)i * k + j];
            /* no weight: the vertex keeps its position, the vector stays */
            memcpy(dst + 3 * (size_t)r, sum > SSK_WEIGHT_EPSILON ? out + 3 * (size_t)i
                                                                 : vectors + 3 * (size_t)r,
                   3 * sizeof(float));
        }
    }
done:
    free(mats);
    free(bind);
    free(dq);
    free(which);
    free(idx);
    free(w);
    free(in);
    free(out);
    return st == SSK_OK ? ssk_error_ok(err) : st;
}
