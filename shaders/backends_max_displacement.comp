#version 430 core
// backends_max_displacement.comp - max_v |p_v - r_v| over the whole rig, p the
// deformed positions and r the reference (the convergence measure of the
// iterative deformers).
//
// Each invocation takes the largest distance over the vertices
// u_base + gl_GlobalInvocationID.x + j u_stride, j = 0, 1, ... (a grid-stride
// loop: the host dispatches a bounded number of work groups, so the
// reduction below runs once per group, not once per 256 vertices); the
// distance is sqrt(dx dx + dy dy + dz dz) in the CPU backend's order, and a
// NaN distance is skipped as the CPU's `d > best` skips it. The work group
// then reduces its SSK_LOCAL_SIZE values to their maximum in shared memory
// (a tree of halving steps), and invocation 0 folds the group's maximum into
// result[0] with atomicMax on floatBitsToUint(max). That is exact: a
// non-negative IEEE-754 float (every value here is +0 or a positive
// distance) orders like its bit pattern read as an unsigned integer, so the
// largest uint is the bits of the largest float. The host zeroes result[0]
// (the bits of +0.0) before the dispatch and reads it back as a float.
#include "kernels_skinning_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_BINDING_DEFORMED) readonly buffer Deformed { float deformed[]; };
layout(std430, binding = SSK_BINDING_REFERENCE) readonly buffer Reference { float reference[]; };
layout(std430, binding = SSK_BINDING_RESULT) coherent buffer Result { uint result[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count; // #V of the rig
layout(location = SSK_LOC_STRIDE) uniform uint u_stride; // invocations dispatched

shared float partial[SSK_LOCAL_SIZE];

void main()
{
    uint lane = gl_LocalInvocationIndex;
    float distance = 0.0;
    for (uint v = u_base + gl_GlobalInvocationID.x; v < u_count; v += u_stride) {
        precise vec3 e = SSK_LOAD3(deformed, v) - SSK_LOAD3(reference, v);
        precise float d = sqrt(e.x * e.x + e.y * e.y + e.z * e.z);
        if (d > distance) distance = d;
    }
    partial[lane] = distance;
    memoryBarrierShared();
    barrier();
    for (uint half_size = uint(SSK_LOCAL_SIZE) / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) partial[lane] = max(partial[lane], partial[lane + half_size]);
        memoryBarrierShared();
        barrier();
    }
    if (lane == 0u) atomicMax(result[0], floatBitsToUint(partial[0]));
}
