#version 430 core
// kernels_dqs.comp - dual quaternion skinning as Blender 3.4's Armature modifier
// with Preserve Volume, one invocation per vertex of one mesh. The GL twin
// of dqs_vertex in core/kernels/dqs.c, with the same arithmetic in the same order:
// - influence k's weight is negated when its bone's real part points away
//   from the running sum of the earlier ones, decided like dqs.c from the
//   pairwise dots: dot(sum_{j<k} s_j r_j, r_k) = sum_{j<k} s_j dot(r_j, r_k)
//   (the signs s_j are kept as a 64-bit mask, K <= SSK_MAX_INFLUENCES = 64;
//   r_j is re-read from the bone buffer instead of a per-invocation array);
// - scale matrices of scaled bones (scale weight != 0) are summed with the
//   positive weights, the rest of the total weight filled with identity;
// - total weight <= SSK_WEIGHT_EPSILON: the vertex stays at rest (no
//   pre/post either);
// - otherwise v' = post . dq(scale(pre . v)) with the blend divided by the
//   total weight and the rigid part divided by |real|^2.
//
// Every value is `precise` and computed in dqs.c's order (see
// kernels_skinning_lib.glsl).
//
// Bone data: #B dual quaternions of 6 vec4 (ssk_dual_quat: real, dual,
// three scale rows, scale weight in .x of the last). Pre/post: #M pre
// matrices then #M post matrices, 4 vec4 rows each.
#include "kernels_skinning_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_BINDING_REST) readonly buffer Rest { float rest[]; };
layout(std430, binding = SSK_BINDING_BONE_INDICES) readonly buffer BoneIndices { int bone_indices[]; };
layout(std430, binding = SSK_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = SSK_BINDING_BONES) readonly buffer Bones { vec4 bones[]; };
layout(std430, binding = SSK_BINDING_PRE_POST) readonly buffer PrePost { vec4 pre_post[]; };
layout(std430, binding = SSK_BINDING_DEFORMED) writeonly buffer Deformed { float deformed[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_INFLUENCES) uniform uint u_influences;
layout(location = SSK_LOC_WEIGHT_OFFSET) uniform uint u_weight_offset;
layout(location = SSK_LOC_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_FLAGS) uniform uint u_flags;

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uint v = u_first_vertex + i;
    precise vec3 co = SSK_LOAD3(rest, v);
    uint first = u_weight_offset + i * u_influences;

    precise vec4 q = vec4(0.0), d = vec4(0.0), s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0);
    precise float total = 0.0, scale_weight = 0.0;
    uvec2 negated = uvec2(0u); // bit k: the weight of influence k is negated
    for (uint k = 0u; k < u_influences; ++k) {
        float wk = weights[first + k];
        uint bk = SSK_DQ_VEC4S * uint(bone_indices[first + k]);
        vec4 real_k = bones[bk + SSK_DQ_REAL];
        precise float dot_sum = 0.0;
        for (uint j = 0u; j < k; ++j) {
            float wj = weights[first + j];
            float sj = (negated[j >> 5u] & (1u << (j & 31u))) != 0u ? -wj : wj;
            vec4 real_j = bones[SSK_DQ_VEC4S * uint(bone_indices[first + j]) + SSK_DQ_REAL];
            dot_sum += sj * ssk_dot_pairs(real_j, real_k);
        }
        float sk = wk;
        if (dot_sum < 0.0) {
            sk = -wk;
            negated[k >> 5u] |= 1u << (k & 31u);
        }
        total += wk;
        if (bones[bk + SSK_DQ_SCALE_WEIGHT].x != 0.0 && wk != 0.0) {
            s0 += wk * bones[bk + SSK_DQ_SCALE];
            s1 += wk * bones[bk + SSK_DQ_SCALE + 1u];
            s2 += wk * bones[bk + SSK_DQ_SCALE + 2u];
            scale_weight += wk;
        }
        q += sk * real_k;
        d += sk * bones[bk + SSK_DQ_DUAL];
    }

    precise vec3 r = co;
    if (total > SSK_WEIGHT_EPSILON) {
        bool apply_pre_post = (u_flags & SSK_FLAG_PRE_POST) != 0u;
        uint pre = 4u * u_mesh, post = 4u * (u_mesh_count + u_mesh);
        if (apply_pre_post)
            co = ssk_transform_point(pre_post[pre], pre_post[pre + 1u], pre_post[pre + 2u], co);
        precise float inv_total = 1.0 / total;
        q *= inv_total;
        d *= inv_total;
        if (scale_weight != 0.0) {
            precise float add = total - scale_weight;
            s0.x += add;
            s1.y += add;
            s2.z += add;
            co = ssk_rows_times_point(s0, s1, s2, co) * inv_total;
        }
        r = ssk_dq_rigid_transform(q, d, co);
        if (apply_pre_post)
            r = ssk_transform_point(pre_post[post], pre_post[post + 1u], pre_post[post + 2u], r);
    }
    deformed[3u * v] = r.x;
    deformed[3u * v + 1u] = r.y;
    deformed[3u * v + 2u] = r.z;
}
