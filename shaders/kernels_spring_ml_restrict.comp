#version 430 core
// kernels_spring_ml_restrict.comp - RESTRICT of the spring solver's
// multilevel correction (kernels_spring_multilevel.comp has the buffers and
// the modes; core/kernels/spring_multilevel.c is the CPU twin), a work
// group per slab: each invocation sums the moments of the slab's rows j =
// first + lane, first + lane + SSK_LOCAL_SIZE, ... that take part, as A =
// sum (1 - u) m and B = sum u m, then the group adds its invocations'
// sums in shared memory (16 leaders of 16 invocations each, then
// invocation 0) and writes the slab's 24 floats.
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

#include "kernels_spring_ml_lib.glsl"

// sqrt(SSK_LOCAL_SIZE): the fan-in of each level of the group's sum
#define SSK_ML_RESTRICT_FAN 16u
#if SSK_LOCAL_SIZE != 256
#error "kernels_spring_ml_restrict.comp: SSK_ML_RESTRICT_FAN^2 must be SSK_LOCAL_SIZE"
#endif

shared float s_acc[2 * MOM * SSK_LOCAL_SIZE]; // component c of lane i at c * SSK_LOCAL_SIZE + i

void main()
{
    uint key = u_base + gl_WorkGroupID.x;
    uint lane = gl_LocalInvocationIndex;
    float acc[2 * MOM];
    for (int c = 0; c < 2 * MOM; ++c) acc[c] = 0.0;
    if (key < u_count) {
        uint first = mu[u_off[SSK_ML_OFF_SLAB] + key], last = mu[u_off[SSK_ML_OFF_SLAB] + key + 1u];
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
    for (uint c = 0u; c < 2u * MOM; ++c) s_acc[c * SSK_LOCAL_SIZE + lane] = acc[c];
    memoryBarrierShared();
    barrier();
    if (lane < SSK_ML_RESTRICT_FAN) {
        for (uint c = 0u; c < 2u * MOM; ++c) {
            float x = 0.0;
            for (uint k = 0u; k < SSK_ML_RESTRICT_FAN; ++k)
                x += s_acc[c * SSK_LOCAL_SIZE + lane + k * SSK_ML_RESTRICT_FAN];
            acc[c] = x;
        }
    }
    memoryBarrierShared();
    barrier();
    if (lane < SSK_ML_RESTRICT_FAN)
        for (uint c = 0u; c < 2u * MOM; ++c) s_acc[c * SSK_LOCAL_SIZE + lane] = acc[c];
    memoryBarrierShared();
    barrier();
    if (lane == 0u && key < u_count)
        for (uint c = 0u; c < 2u * MOM; ++c) {
            float x = 0.0;
            for (uint k = 0u; k < SSK_ML_RESTRICT_FAN; ++k) x += s_acc[c * SSK_LOCAL_SIZE + k];
            mw[u_off[SSK_ML_OFF_SLAB_SUMS] + key * 24u + c] = x;
        }
}
