#version 430 core
// kernels_irs.comp - incremental rotation skinning (Toothman 2020, Eq. 14-18 and
// Fig. 13), one invocation per vertex of one mesh; the GL twin of
// core/kernels/irs.c (same arithmetic, same order; see that file for the
// derivation and for the reading of the length adjustment), then the
// mesh's post matrix when it is not the identity.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_ATTACH_BONES_OF_VERTEX) readonly buffer VBones { int vbones[]; };
layout(std430, binding = SSK_ATTACH_T) readonly buffer VT { float vt[]; };
layout(std430, binding = SSK_ATTACH_S) readonly buffer VS { float vs[]; };
layout(std430, binding = SSK_ATTACH_BONE_DATA) readonly buffer BoneData { vec4 bone_data[]; };
layout(std430, binding = SSK_ATTACH_PRE_POST) readonly buffer PrePost { vec4 pre_post[]; };
layout(std430, binding = SSK_ATTACH_OUTPUT) writeonly buffer Output { float outp[]; };
layout(std430, binding = SSK_ATTACH_EXTRA) readonly buffer RestDistances { float rest_distances[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_ATTACH_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_ATTACH_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_ATTACH_FLAGS) uniform uint u_flags;

// Fixed-point steps of the length adjustment (SSK_IRS_LENGTH_STEPS).
#define SSK_IRS_LENGTH_STEPS 2
// SSK_IRS_DIRECTION_EPSILON of irs.c.
#define SSK_IRS_DIRECTION_EPSILON 1e-12

float clamp01(float x) { return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x); }

// Distance to the nearest of the posed segments of the bone, its parent
// and its tail child (order parent, own, child as irs.c).
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
    uint b = uint(vbones[v]);
    uint bb = SSK_AB_VEC4S * b;
    float tv = vt[v];
    vec3 s = SSK_LOAD3(vs, v);
    vec4 head_joint = bone_data[bb + SSK_AB_HEAD_JOINT];
    vec4 tail_joint = bone_data[bb + SSK_AB_TAIL_JOINT];
    vec4 influence = bone_data[bb + SSK_AB_INFLUENCE];

    // Eq. 14 (with the prepared inverses 1 / p_i, 1 / (1 - c_i))
    precise float pw = clamp01(1.0 - tv * influence.z);
    precise float cw = clamp01((tv - influence.y) * influence.w);
    // Eq. 15-16 as quaternions (half of each Delta angle)
    precise float phi_p = -0.25 * pw * head_joint.w;
    precise float phi_c = 0.25 * cw * tail_joint.w;
    precise float sp = sin(phi_p), sc = sin(phi_c);
    precise vec4 qp = vec4(cos(phi_p), sp * head_joint.x, sp * head_joint.y, sp * head_joint.z);
    precise vec4 qc = vec4(cos(phi_c), sc * tail_joint.x, sc * tail_joint.y, sc * tail_joint.z);
    // Eq. 17: normalized, sign-aligned blend
    precise float wsum = pw + cw;
    precise float alpha = wsum > 0.0 ? pw / wsum : 1.0;
    precise float dotq = qp.x * qc.x + qp.y * qc.y + qp.z * qc.z + qp.w * qc.w;
    precise float beta = dotq < 0.0 ? alpha - 1.0 : 1.0 - alpha;
    precise vec4 q = vec4(alpha * qp.x + beta * qc.x, alpha * qp.y + beta * qc.y,
                          alpha * qp.z + beta * qc.z, alpha * qp.w + beta * qc.w);
    precise float inv = 1.0 / sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
    q = vec4(q.x * inv, q.y * inv, q.z * inv, q.w * inv);
    // Eq. 18: v'' = a' + Delta R_b s
    q = ssk_am_qmul(q, bone_data[bb + SSK_AB_ROTATION]);
    precise vec3 a = ssk_am_attachment(bone_data[bb + SSK_AB_HEAD].xyz,
                                       bone_data[bb + SSK_AB_TAIL].xyz, tv);
    precise vec3 r = ssk_am_rotate(q, s);
    precise vec3 p = vec3(a.x + r.x, a.y + r.y, a.z + r.z);
    // Fig. 13 (irs.c): move along the rotated scale vector toward the rest
    // distance to the skeleton
    precise float rlen2 = r.x * r.x + r.y * r.y + r.z * r.z;
    if ((u_flags & SSK_FLAG_LENGTH_ADJUST) != 0u && rlen2 > SSK_IRS_DIRECTION_EPSILON) {
        precise float inv_len = 1.0 / sqrt(rlen2);
        precise vec3 dir = vec3(r.x * inv_len, r.y * inv_len, r.z * inv_len);
        float rest = rest_distances[v];
        for (int step = 0; step < SSK_IRS_LENGTH_STEPS; ++step) {
            precise float k = rest - skeleton_distance(p, b);
            p = vec3(p.x + k * dir.x, p.y + k * dir.y, p.z + k * dir.z);
        }
    }
    if ((u_flags & SSK_FLAG_MESH_MATRICES) != 0u) {
        uint post = 4u * (u_mesh_count + u_mesh);
        p = ssk_transform_point(pre_post[post], pre_post[post + 1u], pre_post[post + 2u], p);
    }
    outp[3u * v] = p.x;
    outp[3u * v + 1u] = p.y;
    outp[3u * v + 2u] = p.z;
}
