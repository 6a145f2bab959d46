#version 430 core
// kernels_spring_detail.comp - the spring deformer's detail targets and
// short-edge clusters (core/kernels/spring.c "The detail force" and "Short-edge
// clusters"; the host side is run_spring in core/backends/gl_backend.c), one
// invocation per whole-rig vertex:
//   DETAIL   before the iterations: frame[u_detail_first + i] =
//            (-(sum_j (f_j - f_i)) / deg(i), 0) over i's CSR row, in the
//            row's order (ssk_spring_detail_row of core/kernels/spring.h),
//            and frame[u_twist_first + i] = (f_perp, 0), the first stage's
//            scale vector f_i - a'_i without its component along the bone
//            direction frame[i] (the twist anchor; twist_reference of
//            core/kernels/spring.c, which the CPU computes in every pass);
//   CLUSTER  after them, in place on the result: the first member (the
//            cluster's root) of each cluster block writes every non-static
//            member m as f_m + the mean of (result - f) over the block's
//            non-static members (ssk_spring_cluster_mean); one invocation
//            owns a whole cluster, so no row is read after it changed.
// Every value is `precise` and uses the CPU's operations in its order, so
// the results are the CPU's bit for bit on an IEEE device.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_SPRING_DET_VERTEX) readonly buffer VertexData { uvec4 vertex_data[]; };
layout(std430, binding = SSK_SPRING_DET_EDGES) readonly buffer Edges { uvec4 edges[]; };
layout(std430, binding = SSK_SPRING_DET_FIRST) readonly buffer First { float first_stage[]; };
layout(std430, binding = SSK_SPRING_DET_FRAME) buffer Frame { vec4 frame_data[]; };
layout(std430, binding = SSK_SPRING_DET_SCALARS) readonly buffer Scalars { uint scalars[]; };
layout(std430, binding = SSK_SPRING_DET_RESULT) buffer Result { float result[]; };
layout(std430, binding = SSK_SPRING_DET_CLUSTERS) readonly buffer Clusters { uint clusters[]; };
layout(std430, binding = SSK_SPRING_DET_ANCHOR) readonly buffer Anchors { vec4 anchors[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count; // #V of the rig
layout(location = SSK_LOC_SPRING_DET_MODE) uniform uint u_mode;
layout(location = SSK_LOC_SPRING_DETAIL_FIRST) uniform uint u_detail_first;
layout(location = SSK_LOC_SPRING_TWIST_FIRST) uniform uint u_twist_first;

uint role_of(uint v) { return (scalars[v >> 2u] >> (8u * (v & 3u))) & 0xffu; }

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    if (u_mode == SSK_SPRING_DET_DETAIL) {
        uvec4 vd = vertex_data[i];
        vec3 fi = SSK_LOAD3(first_stage, i);
        precise float sx = 0.0, sy = 0.0, sz = 0.0;
        for (uint e = vd.x; e < vd.y; ++e) {
            uint j = edges[e].w; // SpringEdge.neighbor
            vec3 fj = SSK_LOAD3(first_stage, j);
            sx += fj.x - fi.x;
            sy += fj.y - fi.y;
            sz += fj.z - fi.z;
        }
        precise float inv = vd.y > vd.x ? 1.0 / float(vd.y - vd.x) : 0.0;
        precise vec4 d = vec4(-(sx * inv), -(sy * inv), -(sz * inv), 0.0);
        frame_data[u_detail_first + i] = d;
        vec4 a = anchors[i], b = frame_data[i];
        precise float qx = fi.x - a.x, qy = fi.y - a.y, qz = fi.z - a.z;
        precise float dd = qx * b.x + qy * b.y + qz * b.z;
        precise vec4 fp = vec4(qx - dd * b.x, qy - dd * b.y, qz - dd * b.z, 0.0);
        frame_data[u_twist_first + i] = fp;
        return;
    }
    uint block = clusters[i];
    if (block == SSK_SPRING_NO_CLUSTER || clusters[block + 1u] != i) return;
    uint n = clusters[block];
    precise float sx = 0.0, sy = 0.0, sz = 0.0;
    uint count = 0u;
    for (uint k = 1u; k <= n; ++k) {
        uint m = clusters[block + k];
        if (role_of(m) == SSK_ROLE_STATIC) continue;
        sx += result[3u * m] - first_stage[3u * m];
        sy += result[3u * m + 1u] - first_stage[3u * m + 1u];
        sz += result[3u * m + 2u] - first_stage[3u * m + 2u];
        ++count;
    }
    if (count == 0u) return;
    precise float inv = 1.0 / float(count);
    precise float mx = sx * inv, my = sy * inv, mz = sz * inv;
    for (uint k = 1u; k <= n; ++k) {
        uint m = clusters[block + k];
        if (role_of(m) == SSK_ROLE_STATIC) continue;
        precise float x = first_stage[3u * m] + mx;
        precise float y = first_stage[3u * m + 1u] + my;
        precise float z = first_stage[3u * m + 2u] + mz;
        result[3u * m] = x;
        result[3u * m + 1u] = y;
        result[3u * m + 2u] = z;
    }
}
