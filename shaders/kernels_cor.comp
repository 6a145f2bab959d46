#version 430 core
// kernels_cor.comp - skinning with optimized centers of rotation (Le & Hodgins
// 2016, Algorithm 1), one invocation per vertex of one mesh: the GL twin of
// cor_vertex in core/kernels/cor.c (the same method; not bit-identical, results
// agree to rounding):
// - total weight <= SSK_WEIGHT_EPSILON: the vertex stays at rest;
// - q = running sum of w_i q_i, each term negated when it points away from
//   the sum so far (line 5); R = rotation of q / |q|^2 (line 6);
// - the center c is the vertex's CoR (rig space), or for a vertex without
//   CoR (flag 0) the vertex itself, for which the method is its LBS;
// - with COR_FLAG_SCALED (a bone of the frame has scale or shear, sec.
//   3.3): a vertex without CoR is skinned by LBS with the skinning matrices,
//   and the others first get the blended scale matrix M (scaled bones' Sc_i
//   with their weights, identity for the rest) on v and c;
// - c~ = sum_i w_i (R_i c + t_i) / W, the LBS of the center (line 7), and
//   v' = R (v - c) + c~ (lines 8-9), with the mesh's pre and post matrices
//   around it when SSK_FLAG_PRE_POST is set.
//
// Bone data: #B ssk_cor_bone of 9 vec4: rotation quaternion (w, x, y, z),
// translation, the skinning matrix's 3 rows, the scale matrix's 3 rows,
// scale weight in .x of the last.
#include "kernels_skinning_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_BINDING_REST) readonly buffer Rest { float rest[]; };
layout(std430, binding = SSK_BINDING_BONE_INDICES) readonly buffer BoneIndices { int bone_indices[]; };
layout(std430, binding = SSK_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = SSK_BINDING_BONES) readonly buffer Bones { vec4 bones[]; };
layout(std430, binding = SSK_BINDING_PRE_POST) readonly buffer PrePost { vec4 pre_post[]; };
layout(std430, binding = SSK_BINDING_DEFORMED) writeonly buffer Deformed { float deformed[]; };
layout(std430, binding = SSK_BINDING_COR_CENTERS) readonly buffer Centers { vec4 centers[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_INFLUENCES) uniform uint u_influences;
layout(location = SSK_LOC_WEIGHT_OFFSET) uniform uint u_weight_offset;
layout(location = SSK_LOC_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_FLAGS) uniform uint u_flags;

#define COR_VEC4S 9u
#define COR_ROTATION 0u
#define COR_TRANSLATION 1u
#define COR_MATRIX 2u
#define COR_SCALE 5u
#define COR_SCALE_WEIGHT 8u
#define COR_FLAG_SCALED 2u

// v rotated by the unit quaternion q (w, x, y, z): t = 2 u x v,
// v' = v + w t + u x t.
vec3 rotate_unit(vec4 q, vec3 v)
{
    vec3 t = 2.0 * cross(q.yzw, v);
    return v + q.x * t + cross(q.yzw, t);
}

// R(q) v / |q|^2 for an unnormalized q (0 when q = 0), as core/kernels/cor.c.
vec3 rotate_unnormalized(vec4 q, vec3 v)
{
    float qw = q.x, qx = q.y, qy = q.z, qz = q.w;
    float len2 = qw * qw + qx * qx + qy * qy + qz * qz;
    len2 = len2 > 0.0 ? 1.0 / len2 : len2;
    vec3 r;
    r.x = (qw * qw + qx * qx - qy * qy - qz * qz) * v.x + 2.0 * (qx * qy - qw * qz) * v.y +
          2.0 * (qx * qz + qw * qy) * v.z;
    r.y = 2.0 * (qx * qy + qw * qz) * v.x + (qw * qw + qy * qy - qx * qx - qz * qz) * v.y +
          2.0 * (qy * qz - qw * qx) * v.z;
    r.z = 2.0 * (qx * qz - qw * qy) * v.x + 2.0 * (qy * qz + qw * qx) * v.y +
          (qw * qw + qz * qz - qx * qx - qy * qy) * v.z;
    return r * len2;
}

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uint v = u_first_vertex + i;
    vec3 co = SSK_LOAD3(rest, v);
    uint first = u_weight_offset + i * u_influences;
    float total = 0.0;
    for (uint k = 0u; k < u_influences; ++k) total += weights[first + k];
    vec3 r = co;
    if (total > SSK_WEIGHT_EPSILON) {
        bool apply_pre_post = (u_flags & SSK_FLAG_PRE_POST) != 0u;
        uint pre = 4u * u_mesh, post = 4u * (u_mesh_count + u_mesh);
        if (apply_pre_post)
            co = ssk_transform_point(pre_post[pre], pre_post[pre + 1u], pre_post[pre + 2u], co);
        float inv_total = 1.0 / total;
        vec4 center = centers[v];
        bool has = center.w != 0.0;
        vec3 c = has ? center.xyz : co;
        if ((u_flags & COR_FLAG_SCALED) == 0u) {
            // rigid bones: one pass over the influences
            vec4 q = vec4(0.0);
            vec3 ct = vec3(0.0);
            for (uint k = 0u; k < u_influences; ++k) {
                float w = weights[first + k];
                uint b = COR_VEC4S * uint(bone_indices[first + k]);
                vec4 qk = bones[b + COR_ROTATION];
                q += (dot(q, qk) < 0.0 ? -w : w) * qk;
                ct += w * (rotate_unit(qk, c) + bones[b + COR_TRANSLATION].xyz);
            }
            r = rotate_unnormalized(q, co - c) + ct * inv_total;
        } else if (!has) {
            // LBS with the skinning matrices
            vec4 r0 = vec4(0.0), r1 = vec4(0.0), r2 = vec4(0.0);
            for (uint k = 0u; k < u_influences; ++k) {
                float w = weights[first + k];
                uint b = COR_VEC4S * uint(bone_indices[first + k]) + COR_MATRIX;
                r0 += w * bones[b];
                r1 += w * bones[b + 1u];
                r2 += w * bones[b + 2u];
            }
            r = ssk_rows_times_point(r0, r1, r2, co) * inv_total;
        } else {
            // phase 1: the blended scale on the vertex and its center
            vec4 q = vec4(0.0), s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0);
            float scale_weight = 0.0;
            for (uint k = 0u; k < u_influences; ++k) {
                float w = weights[first + k];
                uint b = COR_VEC4S * uint(bone_indices[first + k]);
                vec4 qk = bones[b + COR_ROTATION];
                q += (dot(q, qk) < 0.0 ? -w : w) * qk;
                if (bones[b + COR_SCALE_WEIGHT].x != 0.0 && w != 0.0) {
                    s0 += w * bones[b + COR_SCALE];
                    s1 += w * bones[b + COR_SCALE + 1u];
                    s2 += w * bones[b + COR_SCALE + 2u];
                    scale_weight += w;
                }
            }
            if (scale_weight != 0.0) {
                float add = total - scale_weight;
                s0.x += add;
                s1.y += add;
                s2.z += add;
                co = ssk_rows_times_point(s0, s1, s2, co) * inv_total;
                c = ssk_rows_times_point(s0, s1, s2, c) * inv_total;
            }
            // phase 2: Algorithm 1 on the scaled points
            vec3 ct = vec3(0.0);
            for (uint k = 0u; k < u_influences; ++k) {
                float w = weights[first + k];
                uint b = COR_VEC4S * uint(bone_indices[first + k]);
                ct += w * (rotate_unit(bones[b + COR_ROTATION], c) +
                           bones[b + COR_TRANSLATION].xyz);
            }
            r = rotate_unnormalized(q, co - c) + ct * inv_total;
        }
        if (apply_pre_post)
            r = ssk_transform_point(pre_post[post], pre_post[post + 1u], pre_post[post + 2u], r);
    }
    deformed[3u * v] = r.x;
    deformed[3u * v + 1u] = r.y;
    deformed[3u * v + 2u] = r.z;
}
