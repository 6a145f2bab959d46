#version 430 core
// kernels_spring_anchors.comp - the spring solver's anchors of a frame on the
// device (core/kernels/spring.c "Anchors": ssk_spring_anchors, whose
// arithmetic this repeats in its order), one invocation per vertex of the
// whole rig: the posed attachment point a'_v with its "defined" flag and
// the unit bone direction of its bone springs, from the frame's bones and
// the vertex's terms (ssk_spring_anchor_terms of core/kernels/spring.h,
// uploaded once: the kinds BINDING, UNWEIGHTED and WEIGHTS are described
// there). The anchors were computed on the host and uploaded every frame
// before (3.2 MB at 100k vertices: 1.1-1.2 ms a frame on an H200's host).
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

// [#V headers (first term, end, default dominant bone, kind | defined << 2)]
// then the terms (bone, w bits, t bits, 0)
layout(std430, binding = SSK_SPRING_ANC_TERMS) readonly buffer Terms { uvec4 terms[]; };
layout(std430, binding = SSK_SPRING_ANC_BONES) readonly buffer Bones { vec4 bones[]; };
layout(std430, binding = SSK_SPRING_ANC_ANCHOR) writeonly buffer Anchors { vec4 anchors[]; };
layout(std430, binding = SSK_SPRING_ANC_DIR) writeonly buffer Dirs { vec4 dirs[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count; // #V of the rig
layout(location = SSK_LOC_SPRING_ANC_EPS_DIR) uniform float u_eps_dir;

vec3 bone_head(uint b) { return bones[b * SSK_AB_VEC4S + SSK_AB_HEAD].xyz; }
vec3 bone_tail(uint b) { return bones[b * SSK_AB_VEC4S + SSK_AB_TAIL].xyz; }

// ssk_spring_bone_direction of core/kernels/spring.h
vec3 bone_direction(uint b)
{
    vec3 h = bone_head(b), t = bone_tail(b);
    precise float dx = t.x - h.x, dy = t.y - h.y, dz = t.z - h.z;
    precise float l = sqrt(dx * dx + dy * dy + dz * dz);
    precise float inv = l > 0.0 ? 1.0 / l : 0.0;
    precise vec3 d = vec3(dx * inv, dy * inv, dz * inv);
    return d;
}

void main()
{
    uint v = u_base + gl_GlobalInvocationID.x;
    if (v >= u_count) return;
    uvec4 h = terms[v];
    uint kind = h.w & 3u;
    precise vec3 acc = vec3(0.0), dir = vec3(0.0);
    uint dominant = h.z;
    if (kind != SSK_SPRING_ANCHOR_WEIGHTS) {
        uvec4 e = terms[h.x];
        acc = ssk_am_attachment(bone_head(e.x), bone_tail(e.x), uintBitsToFloat(e.z));
        dir = bone_direction(e.x);
    } else {
        float best = -1.0;
        for (uint j = h.x; j < h.y; ++j) {
            uvec4 e = terms[j];
            float w = uintBitsToFloat(e.y);
            vec3 p = ssk_am_attachment(bone_head(e.x), bone_tail(e.x), uintBitsToFloat(e.z));
            vec3 u = bone_direction(e.x);
            acc.x = acc.x + w * p.x;
            acc.y = acc.y + w * p.y;
            acc.z = acc.z + w * p.z;
            dir.x = dir.x + w * u.x;
            dir.y = dir.y + w * u.y;
            dir.z = dir.z + w * u.z;
            if (w > best) {
                best = w;
                dominant = e.x;
            }
        }
    }
    precise vec3 d = dir;
    if (kind != SSK_SPRING_ANCHOR_BINDING) {
        precise float len = sqrt(dir.x * dir.x + dir.y * dir.y + dir.z * dir.z);
        if (len > u_eps_dir)
            d = vec3(dir.x / len, dir.y / len, dir.z / len);
        else // opposite bones cancel: the largest weight's bone
            d = bone_direction(dominant);
    }
    anchors[v] = vec4(acc, (h.w & 4u) != 0u ? 1.0 : 0.0);
    dirs[v] = vec4(d, 0.0);
}
