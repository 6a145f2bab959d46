#version 430 core
// kernels_spring_records.comp - the spring solver's per-iteration pre-pass
// (records / records_lanes8 of core/kernels/spring.c, ssk_spring_record of
// core/kernels/spring.h), one invocation per vertex of the whole rig: the record of
// the current iterate x_v anchored at a'_v (the frame's anchor, spring.c
// "Anchors"),
//   rec[2v] = (x, |s|), rec[2v + 1] = (s / |s|, 0), s = x - a'
// (s / |s| = 0 when |s| <= the length epsilon), so the step kernel's loop
// over neighbors reads two vec4 per neighbor and computes no square root
// of its own for them. Same operations in the same order as the CPU.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_SPRING_REC_ANCHOR) readonly buffer Anchors { vec4 anchors[]; };
layout(std430, binding = SSK_SPRING_REC_POSITIONS) readonly buffer Positions { float positions[]; };
layout(std430, binding = SSK_SPRING_REC_RECORDS) writeonly buffer Records { vec4 records[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count; // #V of the rig
layout(location = SSK_LOC_SPRING_EPS_LEN) uniform float u_eps_len;

void main()
{
    uint v = u_base + gl_GlobalInvocationID.x;
    if (v >= u_count) return;
    vec4 r0, r1;
    ssk_spring_record(anchors[v], SSK_LOAD3(positions, v), u_eps_len, r0, r1);
    records[2u * v] = r0;
    records[2u * v + 1u] = r1;
}
