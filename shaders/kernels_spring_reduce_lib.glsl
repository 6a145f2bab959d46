// kernels_spring_reduce_lib.glsl - a work group's reduction of the spring
// pass values (kernels_spring_reduce.comp, and the hardware GPUs' fused
// prolongation kernels_spring_ml_prolong.comp): the sums of the energy and
// the kinetic energy, the largest |x_next - x|^2 and |F|^2, and whether
// some value is not finite. Included after kernels_spring_lib.glsl, by a
// program of SSK_LOCAL_SIZE invocations that enables the subgroup
// extensions first (#extension GL_KHR_shader_subgroup_basic and
// _arithmetic : enable).
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

struct SpringPartial {
    double energy;
    double kinetic;
    float max_disp2;
    float max_force2;
    uint bad;
    uint pad;
};

// sqrt(SSK_LOCAL_SIZE): the fan-in of each level of the group's reduction
#define SSK_SPRING_RED_FAN 16u
#if SSK_LOCAL_SIZE != 256
#error "kernels_spring_reduce_lib.glsl: SSK_SPRING_RED_FAN^2 must be SSK_LOCAL_SIZE"
#endif

shared double s_energy[SSK_LOCAL_SIZE];
shared double s_kinetic[SSK_LOCAL_SIZE];
shared float s_disp2[SSK_LOCAL_SIZE];
shared float s_force2[SSK_LOCAL_SIZE];
shared uint s_bad[SSK_LOCAL_SIZE];

// The values of slot k of the shared arrays added into a partial.
void spring_partial_add(inout double energy, inout double kinetic, inout float disp2,
                        inout float force2, inout uint bad, uint k)
{
    precise double e = energy + s_energy[k], kin = kinetic + s_kinetic[k];
    energy = e;
    kinetic = kin;
    disp2 = max(disp2, s_disp2[k]);
    force2 = max(force2, s_force2[k]);
    bad |= s_bad[k];
}

void spring_partial_store(uint k, double energy, double kinetic, float disp2, float force2,
                          uint bad)
{
    s_energy[k] = energy;
    s_kinetic[k] = kinetic;
    s_disp2[k] = disp2;
    s_force2[k] = force2;
    s_bad[k] = bad;
}

// The group's partial from each invocation's values, valid in invocation 0
// (every invocation of the group must call it).
SpringPartial spring_group_reduce(double energy_in, double kinetic_in, float disp2, float force2,
                                  uint bad)
{
    precise double energy = energy_in, kinetic = kinetic_in;
    uint lane = gl_LocalInvocationIndex;
#if defined(GL_KHR_shader_subgroup_arithmetic)
    // With subgroup arithmetic (NVIDIA's drivers offer it): each subgroup's
    // sums and maxima, then invocation 0 over the subgroups in order (the
    // maxima are exact in any order; the sums in double, see above).
    energy = subgroupAdd(energy);
    kinetic = subgroupAdd(kinetic);
    disp2 = subgroupMax(disp2);
    force2 = subgroupMax(force2);
    bad = subgroupOr(bad);
    if (subgroupElect()) spring_partial_store(gl_SubgroupID, energy, kinetic, disp2, force2, bad);
    memoryBarrierShared();
    barrier();
    if (lane == 0u)
        for (uint k = 1u; k < gl_NumSubgroups; ++k)
            spring_partial_add(energy, kinetic, disp2, force2, bad, k);
#else
    spring_partial_store(lane, energy, kinetic, disp2, force2, bad);
    memoryBarrierShared();
    barrier();
    // Two levels (SSK_SPRING_RED_FAN leaders of SSK_SPRING_RED_FAN values
    // each, then invocation 0): two barriers instead of the eight of a
    // halving tree, which on a CPU device (llvmpipe runs a work group's
    // invocations as coroutines switched at every barrier) cost more than
    // the additions.
    if (lane < SSK_SPRING_RED_FAN)
        for (uint k = 1u; k < SSK_SPRING_RED_FAN; ++k)
            spring_partial_add(energy, kinetic, disp2, force2, bad, lane + k * SSK_SPRING_RED_FAN);
    memoryBarrierShared();
    barrier();
    if (lane < SSK_SPRING_RED_FAN) spring_partial_store(lane, energy, kinetic, disp2, force2, bad);
    memoryBarrierShared();
    barrier();
    if (lane == 0u)
        for (uint k = 1u; k < SSK_SPRING_RED_FAN; ++k)
            spring_partial_add(energy, kinetic, disp2, force2, bad, k);
#endif
    SpringPartial p;
    p.energy = energy;
    p.kinetic = kinetic;
    p.max_disp2 = disp2;
    p.max_force2 = force2;
    p.bad = bad;
    p.pad = 0u;
    return p;
}
