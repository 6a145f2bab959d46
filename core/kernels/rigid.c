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

void ssk_rigid_deform(float *restrict dst, uint32_t vertex_count, const int32_t *restrict bones,
                      const float *restrict t, const float *restrict scale_vectors,
                      const ssk_attach_bone *restrict bones_data)
{
    const int64_t nv = vertex_count;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; ++v) {
        const ssk_attach_bone *bone = &bones_data[bones[v]];
        float a[3], s[3];
        ssk_am_attachment(a, bone, t[v]);
        ssk_am_rotate(s, bone->rotation, scale_vectors + 3 * v);
        dst[3 * v] = a[0] + s[0];
        dst[3 * v + 1] = a[1] + s[1];
        dst[3 * v + 2] = a[2] + s[2];
    }
}
