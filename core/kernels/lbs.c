/*
 * lbs.c — linear blend skinning kernel (CPU, the thread pool of model/parallel.h).
 *
 * Stage kernels (core/kernels/, above model and io): one pure function per
 * deformer over caller-owned arrays (lbs, dqs, rigid, irs, radial, spring,
 * cor, normals; attach.c prepares the per-frame attachment bones), and
 * their shared inline helpers (simd.h, attach_math.h, spring.h). No
 * backend state: the backends call them.
 *
 * Source: Magnenat-Thalmann et al. 1988; matches Blender 3.4's
 * armature_deform.c with Preserve Volume off (weights normalized by their
 * sum, unweighted vertices left at rest).
 *
 * Per vertex the three matrix rows are blended with the weights (3 vector
 * loads and multiply-adds per influence), then applied to (x, y, z, 1).
 */
#include "model/internal.h"
#include "kernels/simd.h"

SSK_TARGET_CLONES
static void lbs_block(float *restrict dst, const float *restrict positions, int64_t begin,
                      int64_t end, const int32_t *restrict bone_indices,
                      const float *restrict weights, uint32_t k, const float *restrict matrices)
{
    for (int64_t v = begin; v < end; ++v) {
        const float x = positions[3 * v], y = positions[3 * v + 1], z = positions[3 * v + 2];
        const int32_t *idx = bone_indices + (size_t)v * k;
        const float *w = weights + (size_t)v * k;
        ssk_v4 r0 = {0, 0, 0, 0}, r1 = r0, r2 = r0;
        float sum = 0.0f;
        for (uint32_t i = 0; i < k; ++i) {
            const float *m = matrices + 16 * (size_t)idx[i];
            const ssk_v4 wi = ssk_v4_splat(w[i]);
            r0 += wi * ssk_v4_load(m);
            r1 += wi * ssk_v4_load(m + 4);
            r2 += wi * ssk_v4_load(m + 8);
            sum += w[i];
        }
        if (sum > SSK_WEIGHT_EPSILON) {
            const ssk_v4 p = {x, y, z, 1.0f};
            const ssk_v4 out = ssk_v4_sum4(r0 * p, r1 * p, r2 * p, p) * ssk_v4_splat(1.0f / sum);
            dst[3 * v] = out[0];
            dst[3 * v + 1] = out[1];
            dst[3 * v + 2] = out[2];
        } else {
            dst[3 * v] = x;
            dst[3 * v + 1] = y;
            dst[3 * v + 2] = z;
        }
    }
}

typedef struct lbs_job {
    float *dst;
    const float *positions, *weights, *matrices;
    const int32_t *bone_indices;
    uint32_t influence_count;
} lbs_job;

static void lbs_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const lbs_job *j = ctx;
    (void)chunk;
    lbs_block(j->dst, j->positions, begin, end, j->bone_indices, j->weights, j->influence_count,
              j->matrices);
}

void ssk_lbs_deform(float *restrict dst, const float *restrict positions, uint32_t vertex_count,
                    const int32_t *restrict bone_indices, const float *restrict weights,
                    uint32_t influence_count, const float *restrict matrices,
                    uint32_t bone_count)
{
    (void)bone_count;
    lbs_job j = {dst, positions, weights, matrices, bone_indices, influence_count};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, lbs_chunk, &j);
}
