#version 430 core
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
// kernels_spring_reduce.comp - the reductions of one spring force pass (the
// ssk_spring_pass that core/kernels/spring.c's force_pass returns, from the
// per-vertex values kernels_spring_step.comp leaves in scratch): the largest
// |x_next - x|^2 and |F|^2, the sums of the energy and the kinetic energy,
// and whether some step or force is not finite.
//
// Two dispatches. Pass 0: #V / (256 x 16) work groups, at most
// GL_REDUCTION_MAX_GROUPS (core/backends/gl_backend.c spring_reduce), each
// invocation looping over the vertices u_base + gl_GlobalInvocationID.x +
// j u_stride (grid stride), then a two-level shared-memory reduction per
// group; invocation 0 writes the group's partial. Pass 1: one work group
// over the partials, writing result[u_slot]: the host reads back the
// slots of a batch of passes at once (32 bytes per pass; the positions
// stay on the device; core/backends/gl_backend.c run_spring).
//
// Maxima, sums and the group's reduction: kernels_spring_reduce_lib.glsl.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

#include "kernels_spring_reduce_lib.glsl"

layout(std430, binding = SSK_SPRING_RED_SCRATCH) readonly buffer Scratch { vec4 scratch[]; };
layout(std430, binding = SSK_SPRING_RED_PARTIALS) buffer Partials { SpringPartial partials[]; };
layout(std430, binding = SSK_SPRING_RED_RESULT) writeonly buffer Result { SpringPartial result[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;   // pass 0: #V, pass 1: #partials
layout(location = SSK_LOC_STRIDE) uniform uint u_stride; // invocations dispatched
layout(location = SSK_LOC_SPRING_RED_PASS) uniform uint u_pass;
layout(location = SSK_LOC_SPRING_RED_SLOT) uniform uint u_slot;

void main()
{
    precise double energy = 0.0LF, kinetic = 0.0LF;
    float disp2 = 0.0, force2 = 0.0;
    uint bad = 0u;
    for (uint v = u_base + gl_GlobalInvocationID.x; v < u_count; v += u_stride) {
        if (u_pass == 0u) {
            vec4 s = scratch[v];
            energy += double(s.z);
            kinetic += double(s.w);
            if (s.x > disp2) disp2 = s.x;
            if (s.y > force2) force2 = s.y;
            if (ssk_spring_nonfinite(s.x) || ssk_spring_nonfinite(s.y)) bad = 1u;
        } else {
            SpringPartial p = partials[v];
            energy += p.energy;
            kinetic += p.kinetic;
            if (p.max_disp2 > disp2) disp2 = p.max_disp2;
            if (p.max_force2 > force2) force2 = p.max_force2;
            bad |= p.bad;
        }
    }
    SpringPartial p = spring_group_reduce(energy, kinetic, disp2, force2, bad);
    if (gl_LocalInvocationIndex == 0u) {
        if (u_pass == 0u)
            partials[gl_WorkGroupID.x] = p;
        else
            result[u_slot] = p;
    }
}
