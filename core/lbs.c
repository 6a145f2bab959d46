/*
 * lbs.c — linear blend skinning kernel (CPU, OpenMP).
 * Source: Magnenat-Thalmann et al. 1988; matches Blender 3.4's
 * armature_deform.c with Preserve Volume off (weights normalized by their
 * sum, unweighted vertices left at rest).
 */
#include "internal.h"

void ssk_lbs_deform(float *restrict dst, const float *restrict positions, uint32_t vertex_count,
                    const int32_t *restrict bone_indices, const float *restrict weights,
                    uint32_t influence_count, const float *restrict matrices,
                    uint32_t bone_count)
{
    const int64_t nv = vertex_count;
    const uint32_t k = influence_count;
    (void)bone_count;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; ++v) {
        const float x = positions[3 * v], y = positions[3 * v + 1], z = positions[3 * v + 2];
        const int32_t *idx = bone_indices + (size_t)v * k;
        const float *w = weights + (size_t)v * k;
        float ax = 0.0f, ay = 0.0f, az = 0.0f, sum = 0.0f;
        for (uint32_t i = 0; i < k; ++i) {
            const float wi = w[i];
            const float *m = matrices + 16 * (size_t)idx[i];
            ax += wi * (m[0] * x + m[1] * y + m[2] * z + m[3]);
            ay += wi * (m[4] * x + m[5] * y + m[6] * z + m[7]);
            az += wi * (m[8] * x + m[9] * y + m[10] * z + m[11]);
            sum += wi;
        }
        if (sum > SSK_WEIGHT_EPSILON) {
            const float inv = 1.0f / sum;
            dst[3 * v] = ax * inv;
            dst[3 * v + 1] = ay * inv;
            dst[3 * v + 2] = az * inv;
        } else {
            dst[3 * v] = x;
            dst[3 * v + 1] = y;
            dst[3 * v + 2] = z;
        }
    }
}
