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
// Maxima: `x > m` from m = 0, so a NaN is skipped as the CPU's select
// skips it; `bad` tests the bits (exponent all ones: inf or NaN), the
// CPU's !(d2 < inf && f2 < inf). Maxima are exact in any order.
// Sums: each per-vertex energy is a float (as on the CPU, where each lane's
// float energy is converted to double before it is added), summed here in
// double precision (double is core in GLSL 4.00, so every GL 4.3 device
// has it; it costs two double adds per vertex per iteration). In float the
// sum of 10^5 terms would carry a relative error of up to ~1e-6 that
// depends on the summation order, enough to flip the energy scheme's
// "E(x_{k-1}) >= E(x_{k-2})" near a minimum, where successive energies
// differ by that much; in double the CPU and GL sums (different orders)
// agree to ~1e-13 and the decisions are the CPU's.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

struct SpringPartial {
    double energy;
    double kinetic;
    float max_disp2;
    float max_force2;
    uint bad;
    uint pad;
};

layout(std430, binding = SSK_SPRING_RED_SCRATCH) readonly buffer Scratch { vec4 scratch[]; };
layout(std430, binding = SSK_SPRING_RED_PARTIALS) buffer Partials { SpringPartial partials[]; };
layout(std430, binding = SSK_SPRING_RED_RESULT) writeonly buffer Result { SpringPartial result[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;   // pass 0: #V, pass 1: #partials
layout(location = SSK_LOC_STRIDE) uniform uint u_stride; // invocations dispatched
layout(location = SSK_LOC_SPRING_RED_PASS) uniform uint u_pass;
layout(location = SSK_LOC_SPRING_RED_SLOT) uniform uint u_slot;

// sqrt(SSK_LOCAL_SIZE): the fan-in of each level of the group's reduction
#define SSK_SPRING_RED_FAN 16u
#if SSK_LOCAL_SIZE != 256
#error "kernels_spring_reduce.comp: SSK_SPRING_RED_FAN^2 must be SSK_LOCAL_SIZE"
#endif

shared double s_energy[SSK_LOCAL_SIZE];
shared double s_kinetic[SSK_LOCAL_SIZE];
shared float s_disp2[SSK_LOCAL_SIZE];
shared float s_force2[SSK_LOCAL_SIZE];
shared uint s_bad[SSK_LOCAL_SIZE];

void main()
{
    uint lane = gl_LocalInvocationIndex;
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
#if defined(GL_KHR_shader_subgroup_arithmetic)
    // With subgroup arithmetic (NVIDIA's drivers offer it): each subgroup's
    // sums and maxima, then invocation 0 over the subgroups in order (the
    // maxima are exact in any order; the sums in double, see above).
    energy = subgroupAdd(energy);
    kinetic = subgroupAdd(kinetic);
    disp2 = subgroupMax(disp2);
    force2 = subgroupMax(force2);
    bad = subgroupOr(bad);
    if (subgroupElect()) {
        s_energy[gl_SubgroupID] = energy;
        s_kinetic[gl_SubgroupID] = kinetic;
        s_disp2[gl_SubgroupID] = disp2;
        s_force2[gl_SubgroupID] = force2;
        s_bad[gl_SubgroupID] = bad;
    }
    memoryBarrierShared();
    barrier();
    if (lane == 0u)
        for (uint k = 1u; k < gl_NumSubgroups; ++k) {
            energy += s_energy[k];
            kinetic += s_kinetic[k];
            disp2 = max(disp2, s_disp2[k]);
            force2 = max(force2, s_force2[k]);
            bad |= s_bad[k];
        }
#else
    s_energy[lane] = energy;
    s_kinetic[lane] = kinetic;
    s_disp2[lane] = disp2;
    s_force2[lane] = force2;
    s_bad[lane] = bad;
    memoryBarrierShared();
    barrier();
    // Two levels (SSK_SPRING_RED_FAN leaders of SSK_SPRING_RED_FAN values
    // each, then invocation 0): two barriers instead of the eight of a
    // halving tree, which on a CPU device (llvmpipe runs a work group's
    // invocations as coroutines switched at every barrier) cost more than
    // the additions.
    if (lane < SSK_SPRING_RED_FAN) {
        for (uint k = 1u; k < SSK_SPRING_RED_FAN; ++k) {
            uint o = lane + k * SSK_SPRING_RED_FAN;
            energy += s_energy[o];
            kinetic += s_kinetic[o];
            disp2 = max(disp2, s_disp2[o]);
            force2 = max(force2, s_force2[o]);
            bad |= s_bad[o];
        }
    }
    memoryBarrierShared();
    barrier();
    if (lane < SSK_SPRING_RED_FAN) {
        s_energy[lane] = energy;
        s_kinetic[lane] = kinetic;
        s_disp2[lane] = disp2;
        s_force2[lane] = force2;
        s_bad[lane] = bad;
    }
    memoryBarrierShared();
    barrier();
    if (lane == 0u)
        for (uint k = 1u; k < SSK_SPRING_RED_FAN; ++k) {
            energy += s_energy[k];
            kinetic += s_kinetic[k];
            disp2 = max(disp2, s_disp2[k]);
            force2 = max(force2, s_force2[k]);
            bad |= s_bad[k];
        }
#endif
    if (lane == 0u) {
        SpringPartial p;
        p.energy = energy;
        p.kinetic = kinetic;
        p.max_disp2 = disp2;
        p.max_force2 = force2;
        p.bad = bad;
        p.pad = 0u;
        if (u_pass == 0u)
            partials[gl_WorkGroupID.x] = p;
        else
            result[u_slot] = p;
    }
}
