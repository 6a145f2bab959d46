#version 430 core
// kernels_attach_weights.comp - rigid attachment or IRS with one attachment per
// skin weight influence, blended with the weights (the "weights"
// attachment of a rigid or irs skinning node); one invocation per vertex
// of one mesh; the GL twin of core/kernels/attach_weights.c (same
// arithmetic, same order; see that file for why Eq. 14's p_w, c_w come
// from the weights), then the mesh's post matrix when it is not the
// identity.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

// Slot records (ssk_attach_weight_slots): vec4 (t, s) then vec4 (w, bone
// bits, p_share, c_share), max(K, 1) per vertex, meshes concatenated.
layout(std430, binding = SSK_ATTACH_SLOTS) readonly buffer Slots { vec4 slots[]; };
layout(std430, binding = SSK_ATTACH_BONE_DATA) readonly buffer BoneData { vec4 bone_data[]; };
layout(std430, binding = SSK_ATTACH_PRE_POST) readonly buffer PrePost { vec4 pre_post[]; };
layout(std430, binding = SSK_ATTACH_OUTPUT) writeonly buffer Output { float outp[]; };
// The identity pose's prepared bones (length adjustment only).
layout(std430, binding = SSK_ATTACH_EXTRA) readonly buffer RestBones { vec4 rest_data[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_ATTACH_SLOTS_PER_VERTEX) uniform uint u_k;
layout(location = SSK_LOC_ATTACH_FIRST_SLOT) uniform uint u_first_slot;
layout(location = SSK_LOC_ATTACH_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_ATTACH_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_ATTACH_FLAGS) uniform uint u_flags;

#define SSK_IRS_LENGTH_STEPS 2
#define SSK_IRS_DIRECTION_EPSILON 1e-12

// Distance to the nearest of the rest segments of the bone, its parent
// and its tail child (ssk_am_skeleton_distance on the rest bones).
float rest_skeleton_distance(vec3 v, uint b)
{
    uint bb = SSK_AB_VEC4S * b;
    ivec2 links = floatBitsToInt(rest_data[bb + SSK_AB_LINKS].xy);
    uint pb = SSK_AB_VEC4S * uint(links.x >= 0 ? links.x : int(b));
    uint cb = SSK_AB_VEC4S * uint(links.y >= 0 ? links.y : int(b));
    precise float best = ssk_am_segment_distance2(v, rest_data[pb].xyz, rest_data[pb + 1u].xyz, rest_data[pb].w);
    precise float d2 = ssk_am_segment_distance2(v, rest_data[bb].xyz, rest_data[bb + 1u].xyz, rest_data[bb].w);
    best = d2 < best ? d2 : best;
    d2 = ssk_am_segment_distance2(v, rest_data[cb].xyz, rest_data[cb + 1u].xyz, rest_data[cb].w);
    best = d2 < best ? d2 : best;
    return sqrt(best);
}

// Distance to the nearest of the posed segments of the bone, its parent
// and its tail child (ssk_am_skeleton_distance).
float skeleton_distance(vec3 v, uint b)
{
    uint bb = SSK_AB_VEC4S * b;
    ivec2 links = floatBitsToInt(bone_data[bb + SSK_AB_LINKS].xy);
    uint pb = SSK_AB_VEC4S * uint(links.x >= 0 ? links.x : int(b));
    uint cb = SSK_AB_VEC4S * uint(links.y >= 0 ? links.y : int(b));
    precise float best = ssk_am_segment_distance2(v, bone_data[pb].xyz, bone_data[pb + 1u].xyz, bone_data[pb].w);
    precise float d2 = ssk_am_segment_distance2(v, bone_data[bb].xyz, bone_data[bb + 1u].xyz, bone_data[bb].w);
    best = d2 < best ? d2 : best;
    d2 = ssk_am_segment_distance2(v, bone_data[cb].xyz, bone_data[cb + 1u].xyz, bone_data[cb].w);
    best = d2 < best ? d2 : best;
    return sqrt(best);
}

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uint v = u_first_vertex + i;
    uint first = u_first_slot + i * u_k;
    bool incremental = (u_flags & SSK_FLAG_INCREMENTAL) != 0u;
    precise vec3 acc = vec3(0.0);
    for (uint k = 0u; k < u_k; ++k) {
        vec4 ts = slots[2u * (first + k)];
        vec4 meta = slots[2u * (first + k) + 1u];
        float w = meta.x;
        if (!(w > 0.0)) continue;
        int b = floatBitsToInt(meta.y);
        uint bb = SSK_AB_VEC4S * uint(b);
        precise vec4 q = bone_data[bb + SSK_AB_ROTATION];
        if (incremental) {
            // Eq. 14's p_w, c_w from the weights' shares (attach_weights.c)
            vec4 head_joint = bone_data[bb + SSK_AB_HEAD_JOINT];
            vec4 tail_joint = bone_data[bb + SSK_AB_TAIL_JOINT];
            vec4 influence = bone_data[bb + SSK_AB_INFLUENCE];
            precise float pw = meta.z * influence.z;
            precise float cw = meta.w * influence.w;
            // Eq. 15-17 (ssk_am_irs_rotation_pc)
            precise float phi_p = -0.25 * pw * head_joint.w;
            precise float phi_c = 0.25 * cw * tail_joint.w;
            precise float sp = sin(phi_p), sc = sin(phi_c);
            precise vec4 qp = vec4(cos(phi_p), sp * head_joint.x, sp * head_joint.y, sp * head_joint.z);
            precise vec4 qc = vec4(cos(phi_c), sc * tail_joint.x, sc * tail_joint.y, sc * tail_joint.z);
            precise float wsum = pw + cw;
            precise float alpha = wsum > 0.0 ? pw / wsum : 1.0;
            precise float dotq = qp.x * qc.x + qp.y * qc.y + qp.z * qc.z + qp.w * qc.w;
            precise float beta = dotq < 0.0 ? alpha - 1.0 : 1.0 - alpha;
            precise vec4 r = vec4(alpha * qp.x + beta * qc.x, alpha * qp.y + beta * qc.y,
                                  alpha * qp.z + beta * qc.z, alpha * qp.w + beta * qc.w);
            precise float inv = 1.0 / sqrt(r.x * r.x + r.y * r.y + r.z * r.z + r.w * r.w);
            r = vec4(r.x * inv, r.y * inv, r.z * inv, r.w * inv);
            q = ssk_am_qmul(r, q);
        }
        precise vec3 a = ssk_am_attachment(bone_data[bb + SSK_AB_HEAD].xyz,
                                           bone_data[bb + SSK_AB_TAIL].xyz, ts.x);
        precise vec3 r = ssk_am_rotate(q, ts.yzw);
        precise vec3 p = vec3(a.x + r.x, a.y + r.y, a.z + r.z);
        precise float rlen2 = r.x * r.x + r.y * r.y + r.z * r.z;
        if (incremental && (u_flags & SSK_FLAG_LENGTH_ADJUST) != 0u &&
            rlen2 > SSK_IRS_DIRECTION_EPSILON) {
            precise float inv_len = 1.0 / sqrt(rlen2);
            precise vec3 dir = vec3(r.x * inv_len, r.y * inv_len, r.z * inv_len);
            uint rb = SSK_AB_VEC4S * uint(b);
            precise vec3 xr = ssk_am_attachment(rest_data[rb + SSK_AB_HEAD].xyz,
                                                rest_data[rb + SSK_AB_TAIL].xyz, ts.x);
            xr = vec3(xr.x + ts.y, xr.y + ts.z, xr.z + ts.w);
            precise float rest = rest_skeleton_distance(xr, uint(b));
            for (int step = 0; step < SSK_IRS_LENGTH_STEPS; ++step) {
                precise float kk = rest - skeleton_distance(p, uint(b));
                p = vec3(p.x + kk * dir.x, p.y + kk * dir.y, p.z + kk * dir.z);
            }
        }
        acc = vec3(acc.x + w * p.x, acc.y + w * p.y, acc.z + w * p.z);
    }
    precise vec3 p = acc;
    if ((u_flags & SSK_FLAG_MESH_MATRICES) != 0u) {
        uint post = 4u * (u_mesh_count + u_mesh);
        p = ssk_transform_point(pre_post[post], pre_post[post + 1u], pre_post[post + 2u], p);
    }
    outp[3u * v] = p.x;
    outp[3u * v + 1u] = p.y;
    outp[3u * v + 2u] = p.z;
}
