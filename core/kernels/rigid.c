/*
 * rigid.c — rigid attachment skinning, the first stage of incremental
 * rotation skinning (Toothman 2020 dissertation, 4.1; SCA 2017 poster,
 * sec. 2): each vertex follows its attachment point a' = p' + t (c' - p')
 * on its posed bone, and its scale vector turns with the bone:
 *   v' = a' + R_b s.
 * No skin weights are involved; bone stretch moves a' along the bone, the
 * scale vector keeps its length. All positions are rig space.
 *
 * Per vertex (the GLSL port does the same): one bone fetch, a lerp, one
 * quaternion rotation (two cross products). No allocation, no branch.
 */
#include "kernels/attach_math.h"

typedef struct rigid_job {
    float *dst;
    const int32_t *bones;
    const float *t, *scale_vectors;
    const ssk_attach_bone *bones_data;
} rigid_job;

static void rigid_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const rigid_job *j = ctx;
    (void)chunk;
    float *restrict dst = j->dst;
    const int32_t *restrict bones = j->bones;
    const float *restrict t = j->t, *restrict scale_vectors = j->scale_vectors;
    const ssk_attach_bone *restrict bones_data = j->bones_data;
    for (int64_t v = begin; v < end; ++v) {
        const ssk_attach_bone *bone = &bones_data[bones[v]];
        float a[3], s[3];
        ssk_am_attachment(a, bone, t[v]);
        ssk_am_rotate(s, bone->rotation, scale_vectors + 3 * v);
        dst[3 * v] = a[0] + s[0];
        dst[3 * v + 1] = a[1] + s[1];
        dst[3 * v + 2] = a[2] + s[2];
    }
}

void ssk_rigid_deform(float *restrict dst, uint32_t vertex_count, const int32_t *restrict bones,
                      const float *restrict t, const float *restrict scale_vectors,
                      const ssk_attach_bone *restrict bones_data)
{
    rigid_job j = {dst, bones, t, scale_vectors, bones_data};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, rigid_chunk, &j);
}
