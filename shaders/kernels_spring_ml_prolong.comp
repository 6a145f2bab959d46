#version 430 core
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
// NVIDIA's compiler: unroll the fixed loops (over 12 moments, 9 modes,
// 81 inverse-curvature entries), whose loads then overlap instead of each
// waiting for the last; other compilers ignore the pragma.
#pragma optionNV(unroll all)
// kernels_spring_ml_prolong.comp - for hardware GPUs, the last kernel of a
// multilevel spring pass: PROLONG of kernels_spring_multilevel.comp, the
// pass's reductions (kernels_spring_reduce.comp's two dispatches) and the
// records of the new iterate for the next pass (kernels_spring_records.comp)
// in one dispatch. On an H200 each dispatch of a pass cost about 10 us
// however little it did (its barrier and launch): a pass had seven.
//
// Grid stride over the vertices (at most GL_REDUCTION_MAX_GROUPS work
// groups of SSK_LOCAL_SIZE): per vertex the prolongation (ml_prolong), its
// squared move and the step's force, energy and kinetic energy from the
// scratch (kernels_spring_step.comp), then the records of the result (the
// invocation read its own records before: no other invocation reads
// them). Per group the reduction of kernels_spring_reduce_lib.glsl into
// partials[group]; the last group to finish (a counter, atomicAdd) adds the
// partials in order, writes result[u_slot] and sets the counter back to 0.
// The order of the sums is fixed, so a solve repeats itself bit for bit.
// With the watch on the device (u_watch), that last group's invocation 0
// then takes the pass's decisions (kernels_spring_watch_lib.glsl).
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

#define SSK_ML_RECORDS_WRITE
#include "kernels_spring_watch_lib.glsl"
#include "kernels_spring_ml_lib.glsl"
#include "kernels_spring_reduce_lib.glsl"

layout(std430, binding = SSK_SPRING_MLP_ANCHOR) readonly buffer Anchors { vec4 anchors[]; };
layout(std430, binding = SSK_SPRING_MLP_PARTIALS) coherent buffer Partials { SpringPartial partials[]; };
layout(std430, binding = SSK_SPRING_MLP_RESULT) writeonly buffer Result { SpringPartial result[]; };
layout(std430, binding = SSK_SPRING_MLP_COUNTER) coherent buffer Counter { uint counter[]; };

layout(location = SSK_LOC_STRIDE) uniform uint u_stride; // invocations dispatched
layout(location = SSK_LOC_SPRING_MLP_SLOT) uniform uint u_slot;
layout(location = SSK_LOC_SPRING_MLP_EPS_LEN) uniform float u_eps_len;

shared bool s_last;

void main()
{
    precise double energy = 0.0LF, kinetic = 0.0LF;
    float disp2 = 0.0, force2 = 0.0;
    uint bad = 0u;
    for (uint v = gl_GlobalInvocationID.x; v < u_count; v += u_stride) {
        float move2;
        vec3 y = ml_prolong(v, move2);
        float f2 = aux[4u * v + 1u];
        energy += double(aux[4u * v + 2u]);
        kinetic += double(aux[4u * v + 3u]);
        if (move2 > disp2) disp2 = move2;
        if (f2 > force2) force2 = f2;
        if (ssk_spring_nonfinite(move2) || ssk_spring_nonfinite(f2)) bad = 1u;
        vec4 r0, r1;
        ssk_spring_record(anchors[v], y, u_eps_len, r0, r1);
        records[2u * v] = r0;
        records[2u * v + 1u] = r1;
    }
    SpringPartial p = spring_group_reduce(energy, kinetic, disp2, force2, bad);
    if (gl_LocalInvocationIndex == 0u) {
        partials[gl_WorkGroupID.x] = p;
        memoryBarrierBuffer();
        s_last = atomicAdd(counter[0], 1u) == gl_NumWorkGroups.x - 1u;
    }
    memoryBarrierShared();
    barrier();
    if (!s_last) return;
    memoryBarrierBuffer();
    energy = 0.0LF;
    kinetic = 0.0LF;
    disp2 = 0.0;
    force2 = 0.0;
    bad = 0u;
    for (uint k = gl_LocalInvocationIndex; k < gl_NumWorkGroups.x; k += SSK_LOCAL_SIZE) {
        SpringPartial q = partials[k];
        energy += q.energy;
        kinetic += q.kinetic;
        if (q.max_disp2 > disp2) disp2 = q.max_disp2;
        if (q.max_force2 > force2) force2 = q.max_force2;
        bad |= q.bad;
    }
    p = spring_group_reduce(energy, kinetic, disp2, force2, bad);
    if (gl_LocalInvocationIndex == 0u) {
        result[u_slot] = p;
        counter[0] = 0u;
        // the watch on the device decides on this pass (every other group
        // is done reading this pass's weight and scale)
        if (u_watch != 0u)
            watch_pass(u_pass, p.energy, p.kinetic, p.max_disp2, p.max_force2, p.bad);
    }
}
