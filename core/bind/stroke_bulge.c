/*
 * stroke_bulge.c — the parabolic bulge along a surface stroke as a spring
 * edit's offsets (Toothman 2020, 5.1: "Multiplying s_i by the result of
 * -(0.5 - t)^2 + 1.25 produces a parabolic bulge along the length of the
 * bone that adds volume and terminates evenly at both ends"; 7.4: "the
 * parabolic bulge formula provided in Chapter 5 can be easily applied to
 * compute kinematic vertex offsets using stroke position
 * parameterization"). -(0.5 - t)^2 + 1.25 = 1 + t (1 - t), so the offset
 * of s_v is amount x 4 t (1 - t) x s_v, amount 0.25 being the paper's
 * curve. Contract: springskin.h, ssk_stroke_bulge_offsets.
 */
#include "model/internal.h"

#include <math.h>

ssk_status ssk_stroke_bulge_offsets(float *dst, const ssk_rig *rig, const ssk_binding *binding,
                                    const ssk_stroke *stroke, const uint32_t *kinematic,
                                    uint32_t count, double amount, ssk_error *err)
{
    if (!dst || !rig || !binding || !stroke || (!kinematic && count))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "bulge: NULL argument");
    if (!isfinite(amount))
        return ssk_error_set(err, SSK_ERROR_NONFINITE, "bulge: amount is not finite");
    ssk_binding_view view;
    ssk_status st = ssk_binding_get(binding, &view, err);
    if (st != SSK_OK) return st;
    uint64_t hash = 0;
    if ((st = ssk_rig_hash_checked(rig, &hash, err)) != SSK_OK) return st;
    if (view.vertex_count != rig->vertex_count || view.bone_count != rig->bone_count ||
        view.rig_hash != hash)
        return ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                             "bulge: the binding (%u vertices, %u bones) was made for another "
                             "rig (%u vertices, %u bones)",
                             view.vertex_count, view.bone_count, rig->vertex_count,
                             rig->bone_count);
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t v = kinematic[k];
        if (v >= rig->vertex_count)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "bulge: kinematic entry %u: row %u out of range (the rig has "
                                 "%u vertices)",
                                 k, v, rig->vertex_count);
    }
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t v = kinematic[k];
        /* the rest position in rig space */
        const ssk_mesh *mesh = rig->meshes;
        while (v >= mesh->first_vertex + mesh->vertex_count) ++mesh;
        float x[3];
        ssk_mat4_transform_point(x, mesh->object_matrix,
                                 mesh->positions + 3 * (size_t)(v - mesh->first_vertex));
        const double p[3] = {x[0], x[1], x[2]};
        const double t = ssk_stroke_closest(stroke, p, NULL);
        const double scale = amount * 4.0 * t * (1.0 - t);
        for (int c = 0; c < 3; ++c)
            dst[3 * (size_t)k + c] = (float)(scale * view.scale_vectors[3 * (size_t)v + c]);
    }
    return ssk_error_ok(err);
}
