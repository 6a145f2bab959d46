#version 430 core
// kernels_rigid.comp - rigid attachment skinning (Toothman 2020, 4.1, first
// stage), one invocation per vertex of one mesh; the GL twin of
// core/kernels/rigid.c: v' = a' + R_b s in rig space, then the mesh's post matrix
// (rig -> object at the frame) when it is not the identity.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_ATTACH_BONES_OF_VERTEX) readonly buffer VBones { int vbones[]; };
layout(std430, binding = SSK_ATTACH_T) readonly buffer VT { float vt[]; };
layout(std430, binding = SSK_ATTACH_S) readonly buffer VS { float vs[]; };
layout(std430, binding = SSK_ATTACH_BONE_DATA) readonly buffer BoneData { vec4 bone_data[]; };
layout(std430, binding = SSK_ATTACH_PRE_POST) readonly buffer PrePost { vec4 pre_post[]; };
layout(std430, binding = SSK_ATTACH_OUTPUT) writeonly buffer Output { float outp[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_ATTACH_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_ATTACH_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_ATTACH_FLAGS) uniform uint u_flags;

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uint v = u_first_vertex + i;
    uint bb = SSK_AB_VEC4S * uint(vbones[v]);
    precise vec3 a = ssk_am_attachment(bone_data[bb + SSK_AB_HEAD].xyz,
                                       bone_data[bb + SSK_AB_TAIL].xyz, vt[v]);
    precise vec3 r = ssk_am_rotate(bone_data[bb + SSK_AB_ROTATION], SSK_LOAD3(vs, v));
    precise vec3 p = vec3(a.x + r.x, a.y + r.y, a.z + r.z);
    if ((u_flags & SSK_FLAG_MESH_MATRICES) != 0u) {
        uint post = 4u * (u_mesh_count + u_mesh);
        p = ssk_transform_point(pre_post[post], pre_post[post + 1u], pre_post[post + 2u], p);
    }
    outp[3u * v] = p.x;
    outp[3u * v + 1u] = p.y;
    outp[3u * v + 2u] = p.z;
}
