/*
 * surface_roi.c — strokes on the surface and their regions of interest
 * (Toothman 2020, 7.4: "the stroke's control points are mapped to the
 * surface using their source triangle IDs and barycentric coordinates ...
 * Any vertices attached to the faces intersected by the stroke are
 * designated as kinematic ... The rest of the ROI is found by visiting all
 * vertices within n = 4 edges from the kinematic vertices"; 7.3: "the
 * outermost immediate neighbors of the passive set are selected and marked
 * static"). The breadth-first search is shared with the spring node's
 * surface edits (core/bind/spring_rest.c), so a stroke's region is the one
 * the spring deformer builds from the same kinematic rows.
 */
#include "model/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint32_t ssk_weld_rings(const ssk_weld *weld, const uint32_t *seeds, uint32_t seed_count,
                        uint32_t grow, uint32_t *dist, uint32_t *queue, uint32_t *duplicate)
{
    uint32_t head = 0, tail = 0;
    *duplicate = UINT32_MAX;
    for (uint32_t k = 0; k < seed_count; ++k) {
        const uint32_t v = seeds[k];
        if (dist[v] == 0) {
            *duplicate = k;
            return tail;
        }
        dist[v] = 0;
        queue[tail++] = v;
    }
    while (head < tail) {
        const uint32_t v = queue[head++];
        const uint32_t d = dist[v];
        if (d > grow) continue; /* the static ring ends the region */
        for (uint32_t n = weld->adjacency_offsets[v]; n < weld->adjacency_offsets[v + 1]; ++n) {
            const uint32_t w = weld->adjacency[n];
            if (dist[w] != UINT32_MAX) continue;
            dist[w] = d + 1;
            queue[tail++] = w;
        }
    }
    return tail;
}

/* The mesh and local triangle of whole-rig triangle row `row`; false when
 * out of range. */
static bool triangle_of(const ssk_rig *rig, uint32_t row, const ssk_mesh **mesh, uint32_t *local)
{
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        if (row < rig->meshes[m].triangle_count) {
            *mesh = &rig->meshes[m];
            *local = row;
            return true;
        }
        row -= rig->meshes[m].triangle_count;
    }
    return false;
}

static uint64_t triangle_total(const ssk_rig *rig)
{
    uint64_t n = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) n += rig->meshes[m].triangle_count;
    return n;
}

ssk_status ssk_rig_surface_points(double *dst, const ssk_rig *rig, const uint32_t *triangles,
                                  const double *barycentric, uint32_t count,
                                  const float *positions, ssk_error *err)
{
    if (!dst || !rig || ((!triangles || !barycentric) && count))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "surface_points: NULL argument");
    for (uint32_t i = 0; i < count; ++i) {
        const ssk_mesh *mesh;
        uint32_t local;
        if (!triangle_of(rig, triangles[i], &mesh, &local))
            return ssk_error_set(err, SSK_ERROR_TRIANGLE_INDEX,
                                 "surface_points: point %u: triangle row %u out of range (the "
                                 "rig has %llu triangles)",
                                 i, triangles[i], (unsigned long long)triangle_total(rig));
        const double *w = barycentric + 3 * (size_t)i;
        if (!isfinite(w[0]) || !isfinite(w[1]) || !isfinite(w[2]))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "surface_points: point %u: non-finite barycentric coordinate",
                                 i);
        double p[3] = {0, 0, 0};
        for (int k = 0; k < 3; ++k) {
            const uint32_t v = (uint32_t)mesh->triangles[3 * (size_t)local + k];
            float x[3];
            if (positions) {
                memcpy(x, positions + 3 * ((size_t)mesh->first_vertex + v), sizeof x);
            } else {
                ssk_mat4_transform_point(x, mesh->object_matrix, mesh->positions + 3 * (size_t)v);
            }
            for (int c = 0; c < 3; ++c) p[c] += w[k] * x[c];
        }
        memcpy(dst + 3 * (size_t)i, p, sizeof p);
    }
    return ssk_error_ok(err);
}

ssk_status ssk_rig_surface_roi(uint8_t *roles, uint32_t *kinematic, uint32_t *kinematic_count,
                               const ssk_rig *rig, const uint32_t *triangles,
                               uint32_t triangle_count, uint32_t grow, ssk_error *err)
{
    if (!roles || !rig || !triangles)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "surface_roi: NULL argument");
    if (triangle_count == 0)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "surface_roi: the stroke crosses no triangle");
    if (grow > SSK_ROI_GROW_LIMIT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "surface_roi: grow must be in [0, %d], got %u", SSK_ROI_GROW_LIMIT,
                             grow);
    const uint32_t nv = rig->vertex_count;
    const ssk_weld *weld = &rig->weld;
    uint32_t *dist = malloc(((size_t)nv + 1) * sizeof *dist);
    uint32_t *queue = malloc(((size_t)nv + 1) * sizeof *queue);
    uint32_t *seeds = malloc(((size_t)nv + 1) * sizeof *seeds);
    if (!dist || !queue || !seeds) {
        free(dist), free(queue), free(seeds);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "surface_roi: out of memory");
    }
    for (uint32_t v = 0; v < nv; ++v) dist[v] = UINT32_MAX;
    ssk_status st = SSK_OK;
    uint32_t seed_count = 0;
    for (uint32_t i = 0; i < triangle_count; ++i) {
        const ssk_mesh *mesh;
        uint32_t local;
        if (!triangle_of(rig, triangles[i], &mesh, &local)) {
            st = ssk_error_set(err, SSK_ERROR_TRIANGLE_INDEX,
                               "surface_roi: entry %u: triangle row %u out of range (the rig "
                               "has %llu triangles)",
                               i, triangles[i], (unsigned long long)triangle_total(rig));
            goto done;
        }
        for (int k = 0; k < 3; ++k) {
            const uint32_t row = mesh->first_vertex + (uint32_t)mesh->triangles[3 * (size_t)local + k];
            const uint32_t rep = weld->point[row];
            if (dist[rep] == 0) continue; /* marks the seeds while collecting */
            dist[rep] = 0;
            seeds[seed_count++] = rep;
        }
    }
    for (uint32_t k = 0; k < seed_count; ++k) dist[seeds[k]] = UINT32_MAX;
    uint32_t duplicate;
    ssk_weld_rings(weld, seeds, seed_count, grow, dist, queue, &duplicate);
    uint32_t n = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        const uint32_t d = dist[weld->point[v]];
        roles[v] = d == UINT32_MAX ? SSK_ROLE_FREE
                   : d == 0       ? SSK_ROLE_KINEMATIC
                   : d <= grow    ? SSK_ROLE_PASSIVE
                                  : SSK_ROLE_STATIC;
        if (d == 0 && weld->point[v] == v) {
            if (kinematic) kinematic[n] = v;
            ++n;
        }
    }
    if (kinematic_count) *kinematic_count = n;
    st = ssk_error_ok(err);
done:
    free(dist), free(queue), free(seeds);
    return st;
}
