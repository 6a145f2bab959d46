#version 430 core
// kernels_lbs.comp - linear blend skinning, one invocation per vertex of one mesh
// (the GL twin of core/kernels/lbs.c): the three rows of the bone matrices are
// blended with the weights, applied to (x, y, z, 1) and divided by the
// weight sum; a vertex whose weight sum is <= SSK_WEIGHT_EPSILON (or a mesh
// with K = 0) stays at rest.
//
// Arithmetic in lbs.c's order (see kernels_skinning_lib.glsl): rows accumulated
// with w * row then +, the rows applied with ssk_rows_times_point, times
// 1 / sum.
//
// Bone data: #M by #B row-major 4x4 matrices (4 vec4 rows each), already
// folded with the mesh's object matrices, so they act in object space.
#include "kernels_skinning_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_BINDING_REST) readonly buffer Rest { float rest[]; };
layout(std430, binding = SSK_BINDING_BONE_INDICES) readonly buffer BoneIndices { int bone_indices[]; };
layout(std430, binding = SSK_BINDING_WEIGHTS) readonly buffer Weights { float weights[]; };
layout(std430, binding = SSK_BINDING_BONES) readonly buffer Bones { vec4 matrices[]; };
layout(std430, binding = SSK_BINDING_DEFORMED) writeonly buffer Deformed { float deformed[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_INFLUENCES) uniform uint u_influences;
layout(location = SSK_LOC_WEIGHT_OFFSET) uniform uint u_weight_offset;
layout(location = SSK_LOC_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_BONE_COUNT) uniform uint u_bone_count;

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uint v = u_first_vertex + i;
    vec3 co = SSK_LOAD3(rest, v);
    uint first = u_weight_offset + i * u_influences;
    uint mesh_rows = 4u * u_mesh * u_bone_count;
    precise vec4 r0 = vec4(0.0), r1 = vec4(0.0), r2 = vec4(0.0);
    precise float sum = 0.0;
    for (uint k = 0u; k < u_influences; ++k) {
        float w = weights[first + k];
        uint row = mesh_rows + 4u * uint(bone_indices[first + k]);
        r0 += w * matrices[row];
        r1 += w * matrices[row + 1u];
        r2 += w * matrices[row + 2u];
        sum += w;
    }
    precise vec3 p = co;
    if (sum > SSK_WEIGHT_EPSILON) {
        precise float inv_sum = 1.0 / sum;
        p = ssk_rows_times_point(r0, r1, r2, co) * inv_sum;
    }
    deformed[3u * v] = p.x;
    deformed[3u * v + 1u] = p.y;
    deformed[3u * v + 2u] = p.z;
}
