/*
 * normals.c — area-weighted vertex normals of a deformed mesh.
 * Each vertex gathers the unnormalized face normals (cross products, whose
 * length is twice the triangle area) of its triangles through the
 * vertex-to-triangle CSR, so the loop is parallel without atomics. A rig's
 * normals use its welded shading triangles (weld.c): coincident vertices of
 * one mesh share the triangles around all of them, hard edges excepted.
 */
#include "model/internal.h"

#include <math.h>

typedef struct normals_job {
    float *dst;
    const float *positions;
    const int32_t *triangles;
    const uint32_t *vertex_triangle_offsets, *vertex_triangles;
} normals_job;

static void normals_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const normals_job *j = ctx;
    (void)chunk;
    float *restrict dst = j->dst;
    const float *restrict positions = j->positions;
    const int32_t *restrict triangles = j->triangles;
    const uint32_t *restrict vertex_triangle_offsets = j->vertex_triangle_offsets;
    const uint32_t *restrict vertex_triangles = j->vertex_triangles;
    for (int64_t v = begin; v < end; ++v) {
        double n[3] = {0.0, 0.0, 0.0};
        for (uint32_t i = vertex_triangle_offsets[v]; i < vertex_triangle_offsets[v + 1]; ++i) {
            const int32_t *t = triangles + 3 * (size_t)vertex_triangles[i];
            const float *a = positions + 3 * (size_t)t[0];
            const float *b = positions + 3 * (size_t)t[1];
            const float *c = positions + 3 * (size_t)t[2];
            const float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
            const float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
            n[0] += (double)e1[1] * e2[2] - (double)e1[2] * e2[1];
            n[1] += (double)e1[2] * e2[0] - (double)e1[0] * e2[2];
            n[2] += (double)e1[0] * e2[1] - (double)e1[1] * e2[0];
        }
        const double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        const double inv = len > 0.0 ? 1.0 / len : 0.0;
        dst[3 * v] = (float)(n[0] * inv);
        dst[3 * v + 1] = (float)(n[1] * inv);
        dst[3 * v + 2] = (float)(n[2] * inv);
    }
}

void ssk_normals_compute(float *restrict dst, const float *restrict positions,
                         uint32_t vertex_count, const int32_t *restrict triangles,
                         const uint32_t *restrict vertex_triangle_offsets,
                         const uint32_t *restrict vertex_triangles)
{
    normals_job j = {dst, positions, triangles, vertex_triangle_offsets, vertex_triangles};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, normals_chunk, &j);
}

ssk_status ssk_rig_normals(const ssk_rig *rig, float *dst_normals, const float *positions,
                           ssk_error *err)
{
    if (!rig || !dst_normals || !positions)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_rig_normals: NULL argument");
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const size_t off = 3 * (size_t)mesh->first_vertex;
        ssk_normals_compute(dst_normals + off, positions + off, mesh->vertex_count,
                            mesh->triangles, mesh->shading_triangle_offsets,
                            mesh->shading_triangles);
    }
    return ssk_error_ok(err);
}
