/*
 * cpu_backend.c — the CPU backend (the thread pool of model/parallel.h):
 * buffers are host arrays; kernels are the CPU functions of lbs.c, dqs.c,
 * cor.c, rigid.c, irs.c, radial.c and normals.c, run mesh by mesh over
 * whole-rig buffers.
 */
#include "backends/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpu_state {
    const ssk_rig *rig;
    const int32_t *bind_bones; /* binding, #V (NULL without one) */
    const float *bind_t;
    const float *bind_s;
    const float *cor_centers;  /* #V by 3 rig space, NULL without CoRs */
    const uint8_t *cor_flags;
    float **own;               /* per buffer: its own memory */
    float **data;              /* per buffer: where it lives (own or aliased) */
    int buffer_count;
    const ssk_frame_data *frame; /* valid during a deform */
    char name[64];
} cpu_state;

static ssk_status cpu_create(void **out_state, const ssk_rig *rig,
                             const ssk_binding_view *binding, ssk_gl_context *gl, ssk_error *err)
{
    (void)gl;
    cpu_state *s = calloc(1, sizeof *s);
    if (!s) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    s->rig = rig;
    if (binding) {
        s->bind_bones = binding->bones;
        s->bind_t = binding->t;
        s->bind_s = binding->scale_vectors;
        s->cor_centers = binding->cor_centers;
        s->cor_flags = binding->cor_flags;
    }
    snprintf(s->name, sizeof s->name, "cpu (%u threads)", ssk_parallel_threads());
    *out_state = s;
    return SSK_OK;
}

static void cpu_destroy(void *state)
{
    cpu_state *s = state;
    if (!s) return;
    for (int i = 0; i < s->buffer_count; ++i) free(s->own[i]);
    free(s->own);
    free(s->data);
    free(s);
}

static ssk_status cpu_buffer_create(void *state, int *out_id, ssk_error *err)
{
    cpu_state *s = state;
    const int n = s->buffer_count + 1;
    float **own = realloc(s->own, (size_t)n * sizeof *own);
    if (own) s->own = own;
    float **data = own ? realloc(s->data, (size_t)n * sizeof *data) : NULL;
    if (data) s->data = data;
    float *mem = data ? calloc(3 * (size_t)s->rig->vertex_count + 1, sizeof(float)) : NULL;
    if (!mem) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory (CPU buffer)");
    s->own[s->buffer_count] = s->data[s->buffer_count] = mem;
    *out_id = s->buffer_count++;
    return SSK_OK;
}

static ssk_status cpu_frame_upload(void *state, const ssk_frame_data *frame, ssk_error *err)
{
    ((cpu_state *)state)->frame = frame;
    return ssk_error_ok(err);
}

static bool cpu_alias(void *state, int id, float *host)
{
    cpu_state *s = state;
    s->data[id] = host ? host : s->own[id];
    return host != NULL;
}

/* Rows of mesh m: rig space -> its object space at the frame (post), in
 * place, or object -> rig space (objects). */
typedef struct rows_job {
    float *rows;
    const float *m, *reference;
    float *best; /* per chunk, max_displacement only */
} rows_job;

static void transform_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const rows_job *j = ctx;
    (void)chunk;
    for (int64_t v = begin; v < end; ++v)
        ssk_mat4_transform_point(j->rows + 3 * v, j->m, j->rows + 3 * v);
}

static void transform_rows(float *rows, uint32_t count, const float *m)
{
    rows_job j = {rows, m, NULL, NULL};
    ssk_parallel_for(count, SSK_PARALLEL_GRAIN, transform_chunk, &j);
}

ssk_status ssk_cpu_implicit_track(const ssk_rig *rig, const ssk_frame_data *frame,
                                  const ssk_kernel_call *call, float *positions, ssk_error *err)
{
    for (uint32_t m = 0; m < rig->mesh_count; ++m) /* object -> rig */
        if (!frame->mesh_identity[m])
            transform_rows(positions + 3 * (size_t)rig->meshes[m].first_vertex,
                           rig->meshes[m].vertex_count, frame->objects + 16 * (size_t)m);
    ssk_status st = ssk_implicit_pose(call->implicit, call->skinning, err);
    if (st == SSK_OK)
        st = ssk_implicit_track_frame(call->implicit, positions, call->frame, call->implicit_report,
                                      err);
    if (st != SSK_OK) return st;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) /* rig -> object */
        if (!frame->mesh_identity[m])
            transform_rows(positions + 3 * (size_t)rig->meshes[m].first_vertex,
                           rig->meshes[m].vertex_count, frame->post + 16 * (size_t)m);
    return SSK_OK;
}

static ssk_status cpu_run_kernel(void *state, const ssk_kernel_call *call, ssk_error *err)
{
    cpu_state *s = state;
    const ssk_rig *rig = s->rig;
    const ssk_frame_data *frame = s->frame;
    const uint32_t nb = rig->bone_count, nv = rig->vertex_count;
    float *out = s->data[call->output];
    const float *in = call->input >= 0 ? s->data[call->input] : NULL;
    switch (call->kernel) {
    case SSK_KERNEL_LBS:
    case SSK_KERNEL_DQS:
        for (uint32_t m = 0; m < rig->mesh_count; ++m) {
            const ssk_mesh *mesh = &rig->meshes[m];
            float *o = out + 3 * (size_t)mesh->first_vertex;
            if (mesh->influence_count == 0 || nb == 0) {
                memcpy(o, mesh->positions, 3 * (size_t)mesh->vertex_count * sizeof(float));
            } else if (call->kernel == SSK_KERNEL_LBS) {
                ssk_lbs_deform(o, mesh->positions, mesh->vertex_count, mesh->bone_indices,
                               mesh->weights, mesh->influence_count,
                               frame->lbs_matrices + (size_t)m * nb * 16, nb);
            } else {
                const bool identity = frame->mesh_identity[m];
                ssk_dqs_deform(o, mesh->positions, mesh->vertex_count, mesh->bone_indices,
                               mesh->weights, mesh->influence_count, frame->dual_quats, nb,
                               identity ? NULL : frame->pre + 16 * (size_t)m,
                               identity ? NULL : frame->post + 16 * (size_t)m);
            }
        }
        return SSK_OK;
    case SSK_KERNEL_COR:
        if (!s->cor_centers || !frame->cor_bones)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "CoR kernel without centers of rotation");
        for (uint32_t m = 0; m < rig->mesh_count; ++m) {
            const ssk_mesh *mesh = &rig->meshes[m];
            const size_t v0 = mesh->first_vertex;
            float *o = out + 3 * v0;
            if (mesh->influence_count == 0 || nb == 0) {
                memcpy(o, mesh->positions, 3 * (size_t)mesh->vertex_count * sizeof(float));
                continue;
            }
            const bool identity = frame->mesh_identity[m];
            ssk_cor_deform(o, NULL, mesh->positions, NULL, mesh->vertex_count, mesh->bone_indices,
                           mesh->weights, mesh->influence_count, s->cor_centers + 3 * v0,
                           s->cor_flags + v0, frame->cor_bones, nb,
                           identity ? NULL : frame->pre + 16 * (size_t)m,
                           identity ? NULL : frame->post + 16 * (size_t)m);
        }
        return SSK_OK;
    case SSK_KERNEL_RIGID:
    case SSK_KERNEL_IRS:
    case SSK_KERNEL_RADIAL:
        if (!s->bind_bones)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "attachment kernel without a binding");
        if (call->kernel == SSK_KERNEL_RADIAL) {
            if (out != in) memcpy(out, in, 3 * (size_t)nv * sizeof(float));
            for (uint32_t m = 0; m < rig->mesh_count; ++m) /* object -> rig */
                if (!frame->mesh_identity[m])
                    transform_rows(out + 3 * (size_t)rig->meshes[m].first_vertex,
                                   rig->meshes[m].vertex_count, frame->objects + 16 * (size_t)m);
            ssk_radial_deform(out, out, nv, s->bind_bones, s->bind_t, call->attach_bones,
                              call->bone_mask, call->profile, call->amount);
        } else if (call->weight_slots) {
            size_t slot = 0;
            for (uint32_t m = 0; m < rig->mesh_count; ++m) {
                const ssk_mesh *mesh = &rig->meshes[m];
                const uint32_t k = mesh->influence_count;
                ssk_attach_weights_deform(out + 3 * (size_t)mesh->first_vertex,
                                          mesh->vertex_count, k,
                                          call->weight_slots + SSK_ATTACH_SLOT_FLOATS * slot,
                                          call->attach_bones, call->kernel == SSK_KERNEL_IRS,
                                          call->length_adjust, call->rest_bones);
                slot += (size_t)mesh->vertex_count * (k ? k : 1);
            }
        } else if (call->kernel == SSK_KERNEL_RIGID) {
            ssk_rigid_deform(out, nv, s->bind_bones, s->bind_t, s->bind_s, call->attach_bones);
        } else {
            ssk_irs_deform(out, nv, s->bind_bones, s->bind_t, s->bind_s, call->attach_bones,
                           call->length_adjust, call->rest_distances);
        }
        for (uint32_t m = 0; m < rig->mesh_count; ++m) /* rig -> object */
            if (!frame->mesh_identity[m])
                transform_rows(out + 3 * (size_t)rig->meshes[m].first_vertex,
                               rig->meshes[m].vertex_count, frame->post + 16 * (size_t)m);
        return SSK_OK;
    case SSK_KERNEL_NORMALS:
        return ssk_rig_normals(rig, out, in, err);
    case SSK_KERNEL_ARAP: {
        ssk_status st = ssk_arap_deform(call->arap, out, call->attach_bones, err);
        if (st != SSK_OK) return st;
        for (uint32_t m = 0; m < rig->mesh_count; ++m) /* rig -> object */
            if (!frame->mesh_identity[m])
                transform_rows(out + 3 * (size_t)rig->meshes[m].first_vertex,
                               rig->meshes[m].vertex_count, frame->post + 16 * (size_t)m);
        return SSK_OK;
    }
    case SSK_KERNEL_IMPLICIT: {
        if (out != in) memcpy(out, in, 3 * (size_t)nv * sizeof(float));
        return ssk_cpu_implicit_track(rig, frame, call, out, err);
    }
    case SSK_KERNEL_SPRING: {
        if (out != in) memcpy(out, in, 3 * (size_t)nv * sizeof(float));
        for (uint32_t m = 0; m < rig->mesh_count; ++m) /* object -> rig */
            if (!frame->mesh_identity[m])
                transform_rows(out + 3 * (size_t)rig->meshes[m].first_vertex,
                               rig->meshes[m].vertex_count, frame->objects + 16 * (size_t)m);
        ssk_status st = ssk_spring_solve(call->spring, out, call->attach_bones, call->skinning,
                                         call->frame, call->report, err);
        if (st != SSK_OK && st != SSK_ERROR_SPRING_DIVERGED) return st;
        for (uint32_t m = 0; m < rig->mesh_count; ++m) /* rig -> object */
            if (!frame->mesh_identity[m])
                transform_rows(out + 3 * (size_t)rig->meshes[m].first_vertex,
                               rig->meshes[m].vertex_count, frame->post + 16 * (size_t)m);
        return st;
    }
    default:
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "unknown kernel %d",
                             (int)call->kernel);
    }
}

/* Runs a kernel, then welds its output positions when the kernel is one
 * that welds (backend.h): coincident vertices take their representative's
 * position. */
static ssk_status cpu_run(void *state, const ssk_kernel_call *call, ssk_error *err)
{
    cpu_state *s = state;
    ssk_status st = cpu_run_kernel(state, call, err);
    const ssk_weld *weld = &s->rig->weld;
    if ((st == SSK_OK || st == SSK_ERROR_SPRING_DIVERGED) && ssk_kernel_welds(call->kernel) &&
        weld->member_count) {
        bool matrices = false;
        for (uint32_t m = 0; m < s->rig->mesh_count; ++m) matrices |= !s->frame->mesh_identity[m];
        ssk_weld_apply(weld, s->data[call->output], matrices ? s->frame->objects : NULL,
                       s->frame->post);
    }
    return st;
}

static ssk_status cpu_read(void *state, int id, float *dst, ssk_error *err)
{
    cpu_state *s = state;
    if (dst != s->data[id])
        memcpy(dst, s->data[id], 3 * (size_t)s->rig->vertex_count * sizeof(float));
    return ssk_error_ok(err);
}

static void displacement_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const rows_job *j = ctx;
    const float *p = j->rows, *reference = j->reference;
    float best = 0.0f;
    for (int64_t v = begin; v < end; ++v) {
        const float dx = p[3 * v] - reference[3 * v], dy = p[3 * v + 1] - reference[3 * v + 1],
                    dz = p[3 * v + 2] - reference[3 * v + 2];
        const float d = sqrtf(dx * dx + dy * dy + dz * dz);
        if (d > best) best = d;
    }
    j->best[chunk] = best;
}

static ssk_status cpu_max_displacement(void *state, int id, const float *reference, float *out,
                                       ssk_error *err)
{
    cpu_state *s = state;
    const int64_t nv = s->rig->vertex_count;
    const uint32_t chunks = ssk_parallel_chunk_count(nv, SSK_PARALLEL_GRAIN);
    float *best = calloc(chunks ? chunks : 1, sizeof *best);
    if (!best) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    rows_job j = {s->data[id], NULL, reference, best};
    ssk_parallel_for(nv, SSK_PARALLEL_GRAIN, displacement_chunk, &j);
    float m = 0.0f;
    for (uint32_t c = 0; c < chunks; ++c) m = best[c] > m ? best[c] : m;
    free(best);
    *out = m;
    return ssk_error_ok(err);
}

static const char *cpu_device_name(void *state) { return ((cpu_state *)state)->name; }

const ssk_backend_ops ssk_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .buffer_create = cpu_buffer_create,
    .frame_upload = cpu_frame_upload,
    .run = cpu_run,
    .alias = cpu_alias,
    .read = cpu_read,
    .max_displacement = cpu_max_displacement,
    .device_name = cpu_device_name,
};
