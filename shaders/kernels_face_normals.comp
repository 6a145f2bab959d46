#version 430 core
// kernels_face_normals.comp - one invocation per triangle of the whole rig: the
// unnormalized face normal (b - a) x (c - a), twice the triangle's area
// times its unit normal, of the deformed positions (core/kernels/normals.c).
// Triangle vertex indices are whole-rig rows (the mesh's first vertex added
// at upload), so one dispatch covers every mesh.
#include "kernels_skinning_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_BINDING_DEFORMED) readonly buffer Deformed { float deformed[]; };
layout(std430, binding = SSK_BINDING_TRIANGLES) readonly buffer Triangles { uint triangles[]; };
layout(std430, binding = SSK_BINDING_FACE_NORMALS) writeonly buffer FaceNormals { float face_normals[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count; // #F of the rig

void main()
{
    uint t = u_base + gl_GlobalInvocationID.x;
    if (t >= u_count) return;
    vec3 a = SSK_LOAD3(deformed, triangles[3u * t]);
    vec3 b = SSK_LOAD3(deformed, triangles[3u * t + 1u]);
    vec3 c = SSK_LOAD3(deformed, triangles[3u * t + 2u]);
    vec3 n = cross(b - a, c - a);
    face_normals[3u * t] = n.x;
    face_normals[3u * t + 1u] = n.y;
    face_normals[3u * t + 2u] = n.z;
}
