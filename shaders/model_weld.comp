#version 430 core
// model_weld.comp - welded topology (core/model/weld.c): copies the position of each
// group's representative onto its members, in place, after a kernel that
// writes positions; the GL twin of ssk_weld_apply. Members never represent
// a group, so no invocation reads what another writes. Between meshes whose
// object matrices differ at the frame, the row goes through rig space:
// post(member mesh) * objects(representative mesh) * p.
#include "kernels_skinning_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

// Binding point of the member table; shared with SSK_BINDING_TRIANGLES,
// which no welded kernel reads in the same dispatch.
#define SSK_BINDING_WELD_MEMBERS 6

layout(std430, binding = SSK_BINDING_DEFORMED) buffer Deformed { float pos[]; };
layout(std430, binding = SSK_BINDING_PRE_POST) readonly buffer PrePost { vec4 pre_post[]; };
// (member, representative, member's mesh, representative's mesh)
layout(std430, binding = SSK_BINDING_WELD_MEMBERS) readonly buffer Members { uvec4 members[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_FLAGS) uniform uint u_flags;
#define SSK_FLAG_MESH_MATRICES 1u  // pre_post holds the frame's matrices

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uvec4 m = members[i];
    vec3 p = SSK_LOAD3(pos, m.y);
    if ((u_flags & SSK_FLAG_MESH_MATRICES) != 0u && m.z != m.w) {
        uint om = 4u * (2u * u_mesh_count + m.z), orep = 4u * (2u * u_mesh_count + m.w);
        if (pre_post[om] != pre_post[orep] || pre_post[om + 1u] != pre_post[orep + 1u] ||
            pre_post[om + 2u] != pre_post[orep + 2u]) {
            uint post = 4u * (u_mesh_count + m.z);
            p = ssk_transform_point(pre_post[orep], pre_post[orep + 1u], pre_post[orep + 2u], p);
            p = ssk_transform_point(pre_post[post], pre_post[post + 1u], pre_post[post + 2u], p);
        }
    }
    pos[3u * m.x] = p.x;
    pos[3u * m.x + 1u] = p.y;
    pos[3u * m.x + 2u] = p.z;
}
