#version 430 core
// kernels_radial.comp - radial deformation (Toothman 2020, 5.1), one invocation per
// vertex of one mesh; the GL twin of core/kernels/radial.c: the input (object
// space) goes to rig space with the mesh's object matrix, a vertex whose
// bone is selected becomes a' + m (v - a') with m = offset + amount f(t),
// then back with the post matrix.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_ATTACH_BONES_OF_VERTEX) readonly buffer VBones { int vbones[]; };
layout(std430, binding = SSK_ATTACH_T) readonly buffer VT { float vt[]; };
layout(std430, binding = SSK_ATTACH_BONE_DATA) readonly buffer BoneData { vec4 bone_data[]; };
layout(std430, binding = SSK_ATTACH_PRE_POST) readonly buffer PrePost { vec4 pre_post[]; };
layout(std430, binding = SSK_ATTACH_OUTPUT) writeonly buffer Output { float outp[]; };
layout(std430, binding = SSK_ATTACH_EXTRA) readonly buffer Mask { uint bone_mask[]; };
layout(std430, binding = SSK_ATTACH_INPUT) readonly buffer Input { float inp[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_ATTACH_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_ATTACH_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_ATTACH_FLAGS) uniform uint u_flags;
layout(location = SSK_LOC_ATTACH_PROFILE) uniform uint u_profile;
layout(location = SSK_LOC_ATTACH_AMOUNT) uniform float u_amount;

#define SSK_PI 3.14159265358979323846

// f(t) of ssk_radial_profile (radial.c's profile_eval, same order).
float profile_eval(uint profile, float t)
{
    precise float u = 1.0 - t;
    precise float f;
    switch (profile) {
    case 0u: f = -(0.5 - t) * (0.5 - t) + 1.25; break; // bulge
    case 1u: f = t; break;                               // linear
    case 2u: f = t * t; break;                           // quad_in
    case 3u: f = 1.0 - u * u; break;                     // quad_out
    case 4u: f = t * t * t; break;                       // cubic_in
    case 5u: f = 1.0 - u * u * u; break;                 // cubic_out
    case 6u: f = (t * t) * (t * t); break;               // quartic_in
    case 7u: f = 1.0 - (u * u) * (u * u); break;         // quartic_out
    case 8u: f = 0.5 * (1.0 - cos(SSK_PI * t)); break;   // sine_in_out
    default: f = 0.0; break;
    }
    return f;
}

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uint v = u_first_vertex + i;
    uint b = uint(vbones[v]);
    uint bb = SSK_AB_VEC4S * b;
    float traw = vt[v];
    float tv = traw > 0.0 ? (traw < 1.0 ? traw : 1.0) : 0.0;
    precise float offset = u_profile == 0u ? 1.0 - u_amount : 1.0;
    precise float m = offset + u_amount * profile_eval(u_profile, tv);
    precise vec3 p = SSK_LOAD3(inp, v);
    bool matrices = (u_flags & SSK_FLAG_MESH_MATRICES) != 0u;
    if (matrices) {
        uint object = 4u * (2u * u_mesh_count + u_mesh);
        p = ssk_transform_point(pre_post[object], pre_post[object + 1u], pre_post[object + 2u], p);
    }
    precise vec3 a = ssk_am_attachment(bone_data[bb + SSK_AB_HEAD].xyz,
                                       bone_data[bb + SSK_AB_TAIL].xyz, tv);
    if (bone_mask[b] != 0u && m != 1.0)
        p = vec3(a.x + m * (p.x - a.x), a.y + m * (p.y - a.y), a.z + m * (p.z - a.z));
    if (matrices) {
        uint post = 4u * (u_mesh_count + u_mesh);
        p = ssk_transform_point(pre_post[post], pre_post[post + 1u], pre_post[post + 2u], p);
    }
    outp[3u * v] = p.x;
    outp[3u * v + 1u] = p.y;
    outp[3u * v + 2u] = p.z;
}
