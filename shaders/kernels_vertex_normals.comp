#version 430 core
// kernels_vertex_normals.comp - one invocation per vertex of the whole rig: the sum
// of the face normals of the vertex's triangles (vertex-to-triangle CSR,
// whole-rig offsets and triangle indices), normalized; a vertex with no
// triangle or a zero sum gets (0, 0, 0) (core/kernels/normals.c). A gather, so no
// atomics are needed.
#include "kernels_skinning_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_BINDING_FACE_NORMALS) readonly buffer FaceNormals { float face_normals[]; };
layout(std430, binding = SSK_BINDING_VT_OFFSETS) readonly buffer VtOffsets { uint vt_offsets[]; };
layout(std430, binding = SSK_BINDING_VT_TRIANGLES) readonly buffer VtTriangles { uint vt_triangles[]; };
layout(std430, binding = SSK_BINDING_NORMALS) writeonly buffer Normals { float normals[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count; // #V of the rig

void main()
{
    uint v = u_base + gl_GlobalInvocationID.x;
    if (v >= u_count) return;
    vec3 n = vec3(0.0);
    uint end = vt_offsets[v + 1u];
    for (uint i = vt_offsets[v]; i < end; ++i) n += SSK_LOAD3(face_normals, vt_triangles[i]);
    float len = length(n);
    n = len > 0.0 ? n * (1.0 / len) : vec3(0.0);
    normals[3u * v] = n.x;
    normals[3u * v + 1u] = n.y;
    normals[3u * v + 2u] = n.z;
}
