// kernels_skinning_lib.glsl - code shared by the SpringSkin compute shaders.
//
// Included (one level, by ssk_shader_source in core/backends/shaders.c) by a line
// `#include "kernels_skinning_lib.glsl"` right after `#version 430 core`; it has no
// #version of its own.
//
// Buffer layout conventions (std430 shader storage blocks):
// - Per-vertex triples (positions, normals) are plain `float` arrays, three
//   floats per vertex, exactly the host's #V by 3 layout. vec3 arrays are
//   never used: std430 pads them to 16 bytes.
// - Per-bone data is a `vec4` array: a vec4 array has a 16-byte stride in
//   std430 with no padding, so a row-major 4x4 matrix is 4 consecutive
//   vec4 rows and a dual quaternion (ssk_dual_quat, 24 floats) is 6 vec4.
// - Indices are uint/int arrays; every index is computed in uint, which is
//   exact for any buffer that fits in a shader storage block.
//
// Binding points, uniform locations and the work group size below are
// mirrored by core/backends/gl_backend.c (enum gl_binding, gl_uniform, and the
// program's queried GL_COMPUTE_WORK_GROUP_SIZE): keep them in sync.

// Work group size of every skinning kernel: 256 invocations (a multiple of
// the 32/64-wide SIMD groups of current GPUs, and the size of the shared
// array of the max_displacement reduction).
#define SSK_LOCAL_SIZE 256

// Total weight at or below which a vertex stays at rest
// (SSK_WEIGHT_EPSILON of springskin.h).
#define SSK_WEIGHT_EPSILON 1e-4

#define SSK_BINDING_REST 0          // float[3 #V]  rest positions, object space
#define SSK_BINDING_BONE_INDICES 1  // int[sum #V_m K_m]
#define SSK_BINDING_WEIGHTS 2       // float[sum #V_m K_m]
#define SSK_BINDING_BONES 3         // vec4[]: LBS #M #B matrices, DQS #B dual quats
#define SSK_BINDING_PRE_POST 4      // vec4[]: DQS #M pre matrices, then #M post
#define SSK_BINDING_DEFORMED 5      // float[3 #V]  deformed positions
#define SSK_BINDING_TRIANGLES 6     // uint[3 #F]   whole-rig vertex indices
#define SSK_BINDING_FACE_NORMALS 7  // float[3 #F]
#define SSK_BINDING_VT_OFFSETS 8    // uint[#V + 1] vertex-to-triangle CSR
#define SSK_BINDING_VT_TRIANGLES 9  // uint[]       whole-rig triangle indices
#define SSK_BINDING_NORMALS 10      // float[3 #V]
#define SSK_BINDING_REFERENCE 11    // float[3 #V]
#define SSK_BINDING_RESULT 12       // uint[1]
#define SSK_BINDING_COR_CENTERS 13  // vec4[#V]     CoR center (rig space), flag

// Uniform locations common to every kernel: the dispatch covers items
// u_base + gl_GlobalInvocationID.x (the host loops over chunks when the
// item count needs more work groups than GL_MAX_COMPUTE_WORK_GROUP_COUNT),
// of u_count items.
#define SSK_LOC_BASE 0
#define SSK_LOC_COUNT 1
// Grid-stride kernels (backends_max_displacement.comp) also take the number of
// invocations dispatched, and each handles every u_stride-th item.
#define SSK_LOC_STRIDE 2
// Further uniforms of the deformation kernels (kernels_lbs.comp, kernels_dqs.comp), which
// run once per mesh with u_count = the mesh's #V:
#define SSK_LOC_FIRST_VERTEX 2   // row of the mesh's vertex 0 in whole-rig buffers
#define SSK_LOC_INFLUENCES 3     // K of the mesh (0: every vertex stays at rest)
#define SSK_LOC_WEIGHT_OFFSET 4  // index of the mesh's first weight / bone index
#define SSK_LOC_MESH 5           // mesh index m
#define SSK_LOC_BONE_COUNT 6     // #B
#define SSK_LOC_MESH_COUNT 7     // #M
#define SSK_LOC_FLAGS 8          // SSK_FLAG_*
#define SSK_FLAG_PRE_POST 1u     // DQS: apply the mesh's pre and post matrices

// Vertex dual quaternion: 6 vec4 per bone, as ssk_dual_quat.
#define SSK_DQ_VEC4S 6u
#define SSK_DQ_REAL 0u
#define SSK_DQ_DUAL 1u
#define SSK_DQ_SCALE 2u          // 3 rows of the 3x4 scale matrix
#define SSK_DQ_SCALE_WEIGHT 5u   // .x

// A float triple of item i of a plain float array.
#define SSK_LOAD3(buf, i) vec3(buf[3u * (i)], buf[3u * (i) + 1u], buf[3u * (i) + 2u])

// Floating-point order. The kernels reproduce the CPU kernels' arithmetic
// operation by operation, so that on an IEEE-conforming device the results
// are bit-identical and, elsewhere, differ only by the device's rounding:
// every value is `precise` (no fused multiply-add contraction, no
// reassociation) and sums run in the CPU's order. This matters beyond the
// positions' own tolerance: on meshes with tiny triangles, a one-ulp change
// of a position turns a vertex normal by far more than one ulp.

// The 4-term dot product in the order of the CPU's ssk_v4_dot and
// ssk_v4_sum4 (core/kernels/simd.h): (a.x b.x + a.z b.z) + (a.y b.y + a.w b.w).
float ssk_dot_pairs(vec4 a, vec4 b)
{
    precise vec4 p = a * b;
    precise float r = (p.x + p.z) + (p.y + p.w);
    return r;
}

// Row-major affine transform of a point by the first three rows of a 4x4
// matrix in the order of ssk_mat4_transform_point (core/model/mat4.c):
// ((m0 x + m1 y) + m2 z) + m3 per row.
vec3 ssk_transform_point(vec4 r0, vec4 r1, vec4 r2, vec3 p)
{
    precise vec3 r;
    r.x = r0.x * p.x + r0.y * p.y + r0.z * p.z + r0.w;
    r.y = r1.x * p.x + r1.y * p.y + r1.z * p.z + r1.w;
    r.z = r2.x * p.x + r2.y * p.y + r2.z * p.z + r2.w;
    return r;
}

// Rows r0, r1, r2 applied to (p, 1) with ssk_dot_pairs, as the CPU's
// ssk_v4_sum4(r0 * p, r1 * p, r2 * p, p) (LBS blend, DQS scale matrix).
vec3 ssk_rows_times_point(vec4 r0, vec4 r1, vec4 r2, vec3 p)
{
    vec4 h = vec4(p, 1.0);
    precise vec3 r = vec3(ssk_dot_pairs(r0, h), ssk_dot_pairs(r1, h), ssk_dot_pairs(r2, h));
    return r;
}

// Blender's mul_v3m3_dq without the scale part: rotation and translation of
// the blended, unnormalized dual quaternion (real q = (w, x, y, z), dual t),
// divided by |q|^2 (multiplied by 0 when |q|^2 is 0, as Blender). The same
// expressions, in the same order, as dqs_vertex in core/kernels/dqs.c.
vec3 ssk_dq_rigid_transform(vec4 q, vec4 t, vec3 co)
{
    float qw = q.x, qx = q.y, qy = q.z, qz = q.w;
    float t0 = t.x, t1 = t.y, t2 = t.z, t3 = t.w;
    precise float len2 = qw * qw + qx * qx + qy * qy + qz * qz;
    len2 = len2 > 0.0 ? 1.0 / len2 : len2;
    precise float tx = 2.0 * (-t0 * qx + qw * t1 - t2 * qz + qy * t3);
    precise float ty = 2.0 * (-t0 * qy + t1 * qz - qx * t3 + qw * t2);
    precise float tz = 2.0 * (-t0 * qz + qx * t2 + qw * t3 - t1 * qy);
    float x = co.x, y = co.y, z = co.z;
    precise vec3 r;
    r.x = (qw * qw + qx * qx - qy * qy - qz * qz) * x + 2.0 * (qx * qy - qw * qz) * y +
          2.0 * (qx * qz + qw * qy) * z;
    r.y = 2.0 * (qx * qy + qw * qz) * x + (qw * qw + qy * qy - qx * qx - qz * qz) * y +
          2.0 * (qy * qz - qw * qx) * z;
    r.z = 2.0 * (qx * qz - qw * qy) * x + 2.0 * (qy * qz + qw * qx) * y +
          (qw * qw + qz * qz - qx * qx - qy * qy) * z;
    r.x = (r.x + tx) * len2;
    r.y = (r.y + ty) * len2;
    r.z = (r.z + tz) * len2;
    return r;
}
