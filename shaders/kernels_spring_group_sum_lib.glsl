// kernels_spring_group_sum_lib.glsl - a work group's sum of each of 24
// floats over its SSK_LOCAL_SIZE invocations, for the multilevel
// restriction (kernels_spring_ml_restrict.comp, a chunk of a slab per
// group). With subgroup arithmetic (GL_KHR_shader_subgroup_
// arithmetic, which NVIDIA's drivers offer): subgroupAdd per component, the
// subgroups' sums in shared memory, then invocation c < 24 adds component
// c over the subgroups in order. Else a halving tree in shared memory (8
// barriers). (The former sum, 16 leaders of 16 invocations then invocation
// 0, each reading 384 floats from shared memory in turn, took most of the
// 38 us a restriction pass on an H200 at 100k vertices.) Included by a
// program of SSK_LOCAL_SIZE invocations that enables the subgroup
// extensions first.

#define SSK_GROUP_SUM_N 24u
#if defined(GL_KHR_shader_subgroup_arithmetic)
// the sum of subgroup g's component c at g * 24 + c (subgroups of at least
// 4 invocations: every NVIDIA, AMD and Intel GPU)
shared float s_group_sum[SSK_GROUP_SUM_N * SSK_LOCAL_SIZE / 4u];
#else
// component c of lane i at c * SSK_LOCAL_SIZE + i
shared float s_group_sum[SSK_GROUP_SUM_N * SSK_LOCAL_SIZE];
#endif

// Component `lane` of the group's sum of `acc`, in invocations lane < 24
// (0 in the others). Every invocation of the group calls it; the shared
// memory is free again when it returns.
float group_sum24(float acc[SSK_GROUP_SUM_N], uint lane)
{
    float x = 0.0;
#if defined(GL_KHR_shader_subgroup_arithmetic)
    for (uint c = 0u; c < SSK_GROUP_SUM_N; ++c) {
        float y = subgroupAdd(acc[c]);
        if (subgroupElect()) s_group_sum[gl_SubgroupID * SSK_GROUP_SUM_N + c] = y;
    }
    memoryBarrierShared();
    barrier();
    if (lane < SSK_GROUP_SUM_N)
        for (uint g = 0u; g < gl_NumSubgroups; ++g) x += s_group_sum[g * SSK_GROUP_SUM_N + lane];
#else
    for (uint c = 0u; c < SSK_GROUP_SUM_N; ++c) s_group_sum[c * SSK_LOCAL_SIZE + lane] = acc[c];
    memoryBarrierShared();
    barrier();
    for (uint half_ = SSK_LOCAL_SIZE / 2u; half_ > 0u; half_ /= 2u) {
        if (lane < half_)
            for (uint c = 0u; c < SSK_GROUP_SUM_N; ++c)
                s_group_sum[c * SSK_LOCAL_SIZE + lane] += s_group_sum[c * SSK_LOCAL_SIZE + lane + half_];
        memoryBarrierShared();
        barrier();
    }
    if (lane < SSK_GROUP_SUM_N) x = s_group_sum[lane * SSK_LOCAL_SIZE];
#endif
    memoryBarrierShared();
    barrier();
    return x;
}
