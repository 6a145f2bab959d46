#version 430 core
// kernels_spring_in.comp - the spring deformer's conversions around the solve
// (core/backends/gl_backend.c run_spring; on the CPU, core/backends/cpu_backend.c and
// continue_previous in core/kernels/spring.c), one invocation per vertex:
//   TO_RIG     (one dispatch per mesh) the first stage, object -> rig space
//              with the mesh's object matrix at the frame when it is not
//              the identity (else a copy), and the smallest whole-rig row
//              whose rig-space position is not finite folded into
//              result[0] with atomicMin (the host sets it to 0xffffffff
//              first; ssk_spring_solve's SSK_ERROR_NONFINITE check);
//   TO_OBJECT  (one dispatch per mesh) the result, rig -> object space with
//              the inverse object matrix at the frame (else a copy);
//   CONTINUE   (whole rig) the starting iterate of frame-dependent mode
//              (Toothman 2020, 6.1): D_b prev_v with D_b = S_b(n)
//              S_b(n-1)^-1 of the vertex's bone; static vertices take the
//              first stage.
// Transforms are ssk_mat4_transform_point's arithmetic
// (ssk_transform_point of kernels_skinning_lib.glsl).
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_SPRING_IN_VERTEX) readonly buffer VertexData { uvec4 vertex_data[]; };
layout(std430, binding = SSK_SPRING_IN_INPUT) readonly buffer Input { float inp[]; };
layout(std430, binding = SSK_SPRING_IN_OUTPUT) writeonly buffer Output { float outp[]; };
layout(std430, binding = SSK_SPRING_IN_MATRICES) readonly buffer Matrices { vec4 matrices[]; };
layout(std430, binding = SSK_SPRING_IN_SCALARS) readonly buffer Scalars { uint scalars[]; };
layout(std430, binding = SSK_SPRING_IN_FIRST) readonly buffer First { float first_stage[]; };
layout(std430, binding = SSK_SPRING_IN_RESULT) coherent buffer Result { uint result[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_SPRING_IN_MODE) uniform uint u_mode;
layout(location = SSK_LOC_SPRING_IN_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_SPRING_IN_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_SPRING_IN_FLAGS) uniform uint u_flags;

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uint v = u_first_vertex + i;
    precise vec3 p;
    if (u_mode == SSK_SPRING_IN_CONTINUE) {
        uint role = (scalars[v >> 2u] >> (8u * (v & 3u))) & 0xffu;
        if (role == SSK_ROLE_STATIC) {
            p = SSK_LOAD3(first_stage, v);
        } else {
            uint m = 4u * vertex_data[v].z;
            p = ssk_transform_point(matrices[m], matrices[m + 1u], matrices[m + 2u],
                                    SSK_LOAD3(inp, v));
        }
    } else {
        p = SSK_LOAD3(inp, v);
        if ((u_flags & SSK_FLAG_MESH_MATRICES) != 0u) {
            uint m = 4u * ((u_mode == SSK_SPRING_IN_TO_RIG ? 2u : 1u) * u_mesh_count + u_mesh);
            p = ssk_transform_point(matrices[m], matrices[m + 1u], matrices[m + 2u], p);
        }
        if (u_mode == SSK_SPRING_IN_TO_RIG &&
            (ssk_spring_nonfinite(p.x) || ssk_spring_nonfinite(p.y) || ssk_spring_nonfinite(p.z)))
            atomicMin(result[0], v);
    }
    outp[3u * v] = p.x;
    outp[3u * v + 1u] = p.y;
    outp[3u * v + 2u] = p.z;
}
