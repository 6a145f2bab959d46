/*
 * cpu_backend.c — the OpenMP backend: runs the CPU kernels (lbs.c, dqs.c,
 * normals.c) mesh by mesh on whole-rig buffers.
 */
#include "backend.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpu_state {
    const ssk_rig *rig;
    ssk_method method;
    const float *last; /* output of the last deform: caller's dst or `own` */
    float *own;        /* used when deform is called with dst == NULL */
    char name[64];
} cpu_state;

static ssk_status cpu_create(void **out_state, const ssk_rig *rig, ssk_method method,
                             ssk_gl_context *gl, ssk_error *err)
{
    (void)gl;
    cpu_state *s = calloc(1, sizeof *s);
    if (!s) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    s->rig = rig;
    s->method = method;
    snprintf(s->name, sizeof s->name, "cpu (OpenMP, %d threads)", omp_get_max_threads());
    *out_state = s;
    return SSK_OK;
}

static void cpu_destroy(void *state)
{
    cpu_state *s = state;
    if (!s) return;
    free(s->own);
    free(s);
}

static ssk_status cpu_deform(void *state, float *dst, const ssk_frame_data *frame,
                             ssk_deform_timing *timing, ssk_error *err)
{
    cpu_state *s = state;
    const ssk_rig *rig = s->rig;
    if (!dst) {
        if (!s->own && !(s->own = malloc(3 * (size_t)rig->vertex_count * sizeof(float))))
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        dst = s->own;
    }
    const double t0 = ssk_time_seconds();
    const uint32_t nb = rig->bone_count;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        float *out = dst + 3 * (size_t)mesh->first_vertex;
        if (mesh->influence_count == 0 || nb == 0) {
            memcpy(out, mesh->positions, 3 * (size_t)mesh->vertex_count * sizeof(float));
        } else if (s->method == SSK_METHOD_LBS) {
            ssk_lbs_deform(out, mesh->positions, mesh->vertex_count, mesh->bone_indices,
                           mesh->weights, mesh->influence_count,
                           frame->lbs_matrices + (size_t)m * nb * 16, nb);
        } else {
            const bool identity = frame->mesh_identity[m];
            ssk_dqs_deform(out, mesh->positions, mesh->vertex_count, mesh->bone_indices,
                           mesh->weights, mesh->influence_count, frame->dual_quats, nb,
                           identity ? NULL : frame->pre + 16 * (size_t)m,
                           identity ? NULL : frame->post + 16 * (size_t)m);
        }
    }
    s->last = dst;
    timing->upload_seconds = 0.0;
    timing->compute_seconds = ssk_time_seconds() - t0;
    timing->readback_seconds = 0.0;
    return SSK_OK;
}

static ssk_status cpu_normals(void *state, float *dst, ssk_error *err)
{
    cpu_state *s = state;
    return ssk_rig_normals(s->rig, dst, s->last, err);
}

static ssk_status cpu_max_displacement(void *state, float *out, const float *reference,
                                       ssk_error *err)
{
    cpu_state *s = state;
    const int64_t nv = s->rig->vertex_count;
    const float *p = s->last;
    float best = 0.0f;
#pragma omp parallel for schedule(static) reduction(max : best)
    for (int64_t v = 0; v < nv; ++v) {
        const float dx = p[3 * v] - reference[3 * v], dy = p[3 * v + 1] - reference[3 * v + 1],
                    dz = p[3 * v + 2] - reference[3 * v + 2];
        const float d = sqrtf(dx * dx + dy * dy + dz * dz);
        if (d > best) best = d;
    }
    *out = best;
    return ssk_error_ok(err);
}

static const char *cpu_device_name(void *state) { return ((cpu_state *)state)->name; }

const ssk_backend_ops ssk_cpu_backend = {
    "cpu", cpu_create, cpu_destroy, cpu_deform, cpu_normals, cpu_max_displacement,
    cpu_device_name,
};
