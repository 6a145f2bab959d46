#version 430 core
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
// NVIDIA's compiler: unroll the fixed loops (over 12 moments, 9 modes,
// 81 inverse-curvature entries), whose loads then overlap instead of each
// waiting for the last; other compilers ignore the pragma.
#pragma optionNV(unroll all)
// kernels_spring_ml_restrict.comp - RESTRICT of the spring solver's
// multilevel correction (kernels_spring_multilevel.comp has the buffers and
// the modes; core/kernels/spring_multilevel.c is the CPU twin), a work
// group per chunk: a run of at most SSK_LOCAL_SIZE rows of one slab
// (core/backends/gl_backend.c spring_ml_upload; the chunk table [first,
// end) into ROWS at SSK_ML_OFF_CHUNKS). Each invocation sums the
// moments of its row j = first + lane, if it takes part, as A = (1 - u) m
// and B = u m, then the group adds its invocations' sums (below) and
// writes the chunk's 24 floats at SSK_ML_OFF_SLAB_SUMS + 24 chunk; the
// coarse step adds a slab's chunks in order (slab_sum).
//
// For hardware GPUs. The one-invocation-per-slab RESTRICT of
// kernels_spring_multilevel.comp left most of a GPU idle (a few hundred
// slabs of a few hundred rows, each row's loads waiting in turn): 2.5 ms
// per pass at 100k vertices on an H200, where this takes microseconds.
// The sums are added in another order than the CPU's (rows in order), so
// they agree to rounding, not bit for bit.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

#include "kernels_spring_watch_lib.glsl"
#include "kernels_spring_ml_lib.glsl"

#include "kernels_spring_group_sum_lib.glsl"

layout(location = SSK_LOC_SPRING_ML_PROBE) uniform uint u_probe;

void main()
{
    // the chunk of this group
    uint chunk = u_base + gl_WorkGroupID.x;
    uint lane = gl_LocalInvocationIndex;
    float acc[2 * MOM];
    for (int c = 0; c < 2 * MOM; ++c) acc[c] = 0.0;
    // SSK_GL_SPRING_PROBE 6 (a developer's timing probe): the rows skipped
    if (chunk < u_count && u_probe != 6u) {
        uint first = mu[u_off[SSK_ML_OFF_CHUNKS] + 2u * chunk];
        uint last = mu[u_off[SSK_ML_OFF_CHUNKS] + 2u * chunk + 1u];
        for (uint j = first + lane; j < last; j += SSK_LOCAL_SIZE) {
            uint v = mu[u_off[SSK_ML_OFF_ROWS] + j];
            if (!takes_part(v)) continue;
            float up, m[MOM];
            row_moments(v, up, m);
            for (int c = 0; c < MOM; ++c) {
                acc[c] += (1.0 - up) * m[c];
                acc[MOM + c] += up * m[c];
            }
        }
    }
    // the group's sums (kernels_spring_group_sum_lib.glsl)
    float x = group_sum24(acc, lane);
    if (lane < 2u * MOM && chunk < u_count) mw[u_off[SSK_ML_OFF_SLAB_SUMS] + chunk * 24u + lane] = x;
}
