#version 430 core
// kernels_spring_multilevel.comp - the multilevel correction of the spring
// solver (core/kernels/spring_multilevel.c, the CPU twin; issue #16), three
// modes of one program, run after each force pass
// (kernels_spring_step.comp) and before its reduction:
//
//   RESTRICT (one work group per slab, the finest local node k of a bone):
//     over the slab's rows (a CSR of rows by slab, uploaded once), the
//     moments m = (f, f s~^T) of each row that takes part (a free vertex on
//     which some force acts), f = (g / p) the pass's force from its step g
//     (unblended: with the Chebyshev weight w != 1, g = (next - prev) / w +
//     prev - cur), s~ = (x - a') / r_b from the records of the current
//     iterate; summed as A = sum (1 - u) m and B = sum u m (u the upper
//     node's hat weight) by a shared-memory reduction, written to the
//     slab's 24 floats.
//   COARSE (one work group): per bone, the finest local nodes' moments
//     (A_k + B_(k-1)) and the coarser levels' (hat_l,k = hat_l+1,2k +
//     (hat_l+1,2k-1 + hat_l+1,2k+1) / 2); per global node the sum of its
//     local nodes, the restriction to its 9 modes in its posed basis F and
//     center c, the step theta K^-1 r (trust region), and the map
//     (translation, 3 by 3); per bone the maps of every level, prolonged
//     down to the finest.
//   PROLONG (one invocation per vertex): next += w (sum of its two finest
//     nodes' maps at s~) for a row that takes part, and scratch.x = |next -
//     cur|^2, the move the reduction measures.
//
// Buffers: U (uint, static): per (bone, level) the first local node, the
// bones' level counts, local -> global node, global -> local (CSR), slabs'
// rows (CSR), and the frozen flags (a byte per vertex, 4 per uint, or
// none); F (float): t per vertex, 1 / r_b per bone, K^-1 (81 per node),
// centers (2), radii (1), then the frame's posed bases (9 per node,
// uploaded per solve); W (float, work): slab sums (24 per local node),
// local moments / maps (12), node moments (12), node maps (12). Offsets in
// u_off (see SSK_ML_OFF_*).
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = SSK_SPRING_ML_VERTEX) readonly buffer Vertices { uvec4 vdata[]; };
layout(std430, binding = SSK_SPRING_ML_U) readonly buffer MlU { uint mu[]; };
layout(std430, binding = SSK_SPRING_ML_F) readonly buffer MlF { float mf[]; };
layout(std430, binding = SSK_SPRING_ML_W) coherent buffer MlW { float mw[]; };
layout(std430, binding = SSK_SPRING_ML_SCALARS) readonly buffer Scalars { uint scalars[]; };
layout(std430, binding = SSK_SPRING_ML_NEXT) buffer Next { float next[]; };
layout(std430, binding = SSK_SPRING_ML_RECORDS) readonly buffer Records { vec4 records[]; };
// RESTRICT: the iterate before the current one (Chebyshev); PROLONG: the
// step's scratch (vec4 per vertex, .x rewritten)
layout(std430, binding = SSK_SPRING_ML_AUX) buffer Aux { float aux[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count; // #V (PROLONG), slabs (RESTRICT)
layout(location = SSK_LOC_SPRING_ML_MODE) uniform uint u_mode;
layout(location = SSK_LOC_SPRING_ML_BONES) uniform uint u_bones;
layout(location = SSK_LOC_SPRING_ML_NODES) uniform uint u_nodes;
layout(location = SSK_LOC_SPRING_ML_OMEGA) uniform float u_omega;
layout(location = SSK_LOC_SPRING_ML_THETA) uniform float u_theta; // theta x this solve's scale
layout(location = SSK_LOC_SPRING_ML_DT) uniform float u_dt;
layout(location = SSK_LOC_SPRING_ML_KD) uniform float u_kd;
layout(location = SSK_LOC_SPRING_ML_MAP) uniform uint u_map; // detail map offset + 1, or 0
layout(location = SSK_LOC_SPRING_ML_TRUST) uniform float u_trust;
layout(location = SSK_LOC_SPRING_ML_MAX_LEVELS) uniform uint u_max_levels;
layout(location = SSK_LOC_SPRING_ML_OFF) uniform uint u_off[SSK_ML_OFF_COUNT];

#define MOM 12
#define UNK 9

shared float s_sum[SSK_LOCAL_SIZE];

uint role_of(uint v) { return (scalars[v >> 2u] >> (8u * (v & 3u))) & 255u; }

bool takes_part(uint v)
{
    if (role_of(v) != SSK_ROLE_FREE) return false;
    if (u_off[SSK_ML_OFF_FROZEN_WORDS] == 0u) return true;
    uint word = mu[u_off[SSK_ML_OFF_FROZEN] + (v >> 2u)];
    return ((word >> (8u * (v & 3u))) & 255u) == 0u;
}

// 1 / p of a row that takes part (core/kernels/spring_multilevel.c row_q)
float row_q(uint v)
{
    uvec4 d = vdata[v];
    if (d.y <= d.x) return 1.0 / u_dt;
    float map = u_map != 0u ? uintBitsToFloat(scalars[u_map - 1u + v]) : 1.0;
    return (1.0 + u_dt * u_kd * map) / u_dt;
}

// the finest local node k (the slab) of row v and its upper weight
uint row_key(uint v, out float up)
{
    uint b = vdata[v].z;
    uint l = mu[u_off[SSK_ML_OFF_LEVELS] + b] - 1u;
    uint segments = 1u << l;
    float t = clamp(mf[u_off[SSK_ML_OFF_T] + v], 0.0, 1.0);
    float u = t * float(segments);
    uint k = min(uint(u), segments - 1u);
    up = u - float(k);
    return mu[u_off[SSK_ML_OFF_LOC_FIRST] + b * u_max_levels + l] + k;
}

// s~ of row v from the records of the current iterate
vec3 row_offset(uint v)
{
    vec4 r1 = records[2u * v + 1u];
    float r = mf[u_off[SSK_ML_OFF_INV_RADIUS] + vdata[v].z];
    return r * records[2u * v].w * r1.xyz;
}

void restrict_slab(uint key)
{
    uint first = mu[u_off[SSK_ML_OFF_SLAB] + key], last = mu[u_off[SSK_ML_OFF_SLAB] + key + 1u];
    float acc[2 * MOM];
    for (int c = 0; c < 2 * MOM; ++c) acc[c] = 0.0;
    for (uint j = first + gl_LocalInvocationID.x; j < last; j += SSK_LOCAL_SIZE) {
        uint v = mu[u_off[SSK_ML_OFF_ROWS] + j];
        if (!takes_part(v)) continue;
        float up;
        row_key(v, up);
        vec3 cur = records[2u * v].xyz;
        vec3 nx = SSK_LOAD3(next, v);
        vec3 g = nx - cur;
        if (u_omega != 1.0) {
            vec3 pv = SSK_LOAD3(aux, v);
            g = (nx - pv) / u_omega + pv - cur;
        }
        vec3 f = row_q(v) * g;
        vec3 s = row_offset(v);
        float m[MOM] = float[MOM](f.x, f.y, f.z, f.x * s.x, f.x * s.y, f.x * s.z, f.y * s.x,
                                  f.y * s.y, f.y * s.z, f.z * s.x, f.z * s.y, f.z * s.z);
        for (int c = 0; c < MOM; ++c) {
            acc[c] += (1.0 - up) * m[c];
            acc[MOM + c] += up * m[c];
        }
    }
    for (int c = 0; c < 2 * MOM; ++c) {
        s_sum[gl_LocalInvocationID.x] = acc[c];
        barrier();
        for (uint w = SSK_LOCAL_SIZE / 2u; w > 0u; w >>= 1u) {
            if (gl_LocalInvocationID.x < w)
                s_sum[gl_LocalInvocationID.x] += s_sum[gl_LocalInvocationID.x + w];
            barrier();
        }
        if (gl_LocalInvocationID.x == 0u) mw[u_off[SSK_ML_OFF_SLAB_SUMS] + key * 24u + uint(c)] = s_sum[0];
        barrier();
    }
}

uint loc_first(uint b, uint l) { return mu[u_off[SSK_ML_OFF_LOC_FIRST] + b * u_max_levels + l]; }

void sync()
{
    memoryBarrierBuffer();
    barrier();
}

void coarse()
{
    uint lanes = SSK_LOCAL_SIZE;
    uint lane = gl_LocalInvocationID.x;
    uint LOC = u_off[SSK_ML_OFF_LOCAL], SL = u_off[SSK_ML_OFF_SLAB_SUMS];
    // per bone: finest local moments, then the coarser levels
    for (uint b = lane; b < u_bones; b += lanes) {
        uint levels = mu[u_off[SSK_ML_OFF_LEVELS] + b];
        if (levels == 0u) continue;
        uint lf = levels - 1u, n = 1u << lf, base = loc_first(b, lf);
        for (uint k = 0u; k <= n; ++k)
            for (uint c = 0u; c < MOM; ++c) {
                float x = 0.0;
                if (k < n) x += mw[SL + (base + k) * 24u + c];
                if (k > 0u) x += mw[SL + (base + k - 1u) * 24u + MOM + c];
                mw[LOC + (base + k) * MOM + c] = x;
            }
        for (int l = int(levels) - 2; l >= 0; --l) {
            uint fine = loc_first(b, uint(l) + 1u), crs = loc_first(b, uint(l));
            uint kn = 1u << uint(l), fn = 2u * kn;
            for (uint k = 0u; k <= kn; ++k)
                for (uint c = 0u; c < MOM; ++c) {
                    float x = mw[LOC + (fine + 2u * k) * MOM + c];
                    if (k > 0u) x += 0.5 * mw[LOC + (fine + 2u * k - 1u) * MOM + c];
                    if (2u * k + 1u <= fn) x += 0.5 * mw[LOC + (fine + 2u * k + 1u) * MOM + c];
                    mw[LOC + (crs + k) * MOM + c] = x;
                }
        }
    }
    sync();
    // per global node: moments, step, map
    for (uint n = lane; n < u_nodes; n += lanes) {
        float g[MOM];
        for (uint c = 0u; c < MOM; ++c) g[c] = 0.0;
        uint a0 = mu[u_off[SSK_ML_OFF_G2L] + n], a1 = mu[u_off[SSK_ML_OFF_G2L] + n + 1u];
        for (uint j = a0; j < a1; ++j) {
            uint lo = mu[u_off[SSK_ML_OFF_G2L_LIST] + j];
            for (uint c = 0u; c < MOM; ++c) g[c] += mw[LOC + lo * MOM + c];
        }
        float F[9];
        for (uint c = 0u; c < 9u; ++c) F[c] = mf[u_off[SSK_ML_OFF_FRAME] + n * 9u + c];
        vec2 cn = vec2(mf[u_off[SSK_ML_OFF_CENTER] + 2u * n], mf[u_off[SSK_ML_OFF_CENTER] + 2u * n + 1u]);
        float r[UNK];
        for (int a = 0; a < 3; ++a) r[a] = F[a] * g[0] + F[3 + a] * g[1] + F[6 + a] * g[2];
        float P[6]; // P[a][b], a < 3, b < 2
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 2; ++b) {
                float x = 0.0;
                for (int c = 0; c < 3; ++c) {
                    float mfc = g[3 + 3 * c] * F[b] + g[4 + 3 * c] * F[3 + b] + g[5 + 3 * c] * F[6 + b];
                    x += F[3 * c + a] * mfc;
                }
                P[2 * a + b] = x - r[a] * cn[b];
            }
        // generators (core/kernels/spring_multilevel.c): scale, twist, two tilts, two ovalizations
        r[3] = P[0] + P[3];
        r[4] = -P[1] + P[2];
        r[5] = P[4];
        r[6] = P[5];
        r[7] = P[0] - P[3];
        r[8] = P[1] + P[2];
        float d[UNK];
        float d2 = 0.0;
        for (int a = 0; a < UNK; ++a) {
            float x = 0.0;
            for (int c = 0; c < UNK; ++c) x += mf[u_off[SSK_ML_OFF_KINV] + n * 81u + uint(a * UNK + c)] * r[c];
            d[a] = u_theta * x;
            d2 += d[a] * d[a];
        }
        float cap = u_trust * mf[u_off[SSK_ML_OFF_RADIUS] + n];
        if (d2 > cap * cap) {
            float f = cap / sqrt(d2);
            for (int a = 0; a < UNK; ++a) d[a] *= f;
        }
        // L = sum_j d_j G_j (3 by 2)
        float L[6] = float[6](d[3] + d[7], -d[4] + d[8], d[4] + d[8], d[3] - d[7], d[5], d[6]);
        float t[3];
        for (int a = 0; a < 3; ++a) t[a] = d[a] - (L[2 * a] * cn.x + L[2 * a + 1] * cn.y);
        uint M = u_off[SSK_ML_OFF_NODE_MAP] + n * MOM;
        for (int c = 0; c < 3; ++c) mw[M + uint(c)] = F[3 * c] * t[0] + F[3 * c + 1] * t[1] + F[3 * c + 2] * t[2];
        for (int c = 0; c < 3; ++c)
            for (int e = 0; e < 3; ++e) {
                float x = 0.0;
                for (int a = 0; a < 3; ++a)
                    x += F[3 * c + a] * (L[2 * a] * F[3 * e] + L[2 * a + 1] * F[3 * e + 1]);
                mw[M + 3u + uint(3 * c + e)] = x;
            }
    }
    sync();
    // per bone: every level's maps from the nodes, prolonged to the finest
    for (uint b = lane; b < u_bones; b += lanes) {
        uint levels = mu[u_off[SSK_ML_OFF_LEVELS] + b];
        for (uint l = 0u; l < levels; ++l) {
            uint base = loc_first(b, l);
            for (uint k = 0u; k <= (1u << l); ++k) {
                uint n = mu[u_off[SSK_ML_OFF_L2G] + base + k];
                for (uint c = 0u; c < MOM; ++c)
                    mw[LOC + (base + k) * MOM + c] = mw[u_off[SSK_ML_OFF_NODE_MAP] + n * MOM + c];
            }
        }
        for (uint l = 0u; l + 1u < levels; ++l) {
            uint crs = loc_first(b, l), fine = loc_first(b, l + 1u);
            uint kn = 1u << l, fn = 2u * kn;
            for (uint k = 0u; k <= kn; ++k)
                for (uint c = 0u; c < MOM; ++c) {
                    float x = mw[LOC + (crs + k) * MOM + c];
                    mw[LOC + (fine + 2u * k) * MOM + c] += x;
                    if (k > 0u) mw[LOC + (fine + 2u * k - 1u) * MOM + c] += 0.5 * x;
                    if (2u * k + 1u <= fn) mw[LOC + (fine + 2u * k + 1u) * MOM + c] += 0.5 * x;
                }
        }
    }
}

void prolong(uint v)
{
    vec3 cur = records[2u * v].xyz;
    vec3 y = SSK_LOAD3(next, v);
    if (takes_part(v)) {
        float up;
        uint key = row_key(v, up);
        vec3 s = row_offset(v);
        uint L = u_off[SSK_ML_OFF_LOCAL] + key * MOM;
        vec3 corr = vec3(0.0);
        for (uint h = 0u; h < 2u; ++h) {
            uint m = L + h * MOM;
            float w = h == 0u ? 1.0 - up : up;
            for (uint c = 0u; c < 3u; ++c)
                corr[c] += w * (mw[m + c] + mw[m + 3u + 3u * c] * s.x + mw[m + 4u + 3u * c] * s.y +
                                mw[m + 5u + 3u * c] * s.z);
        }
        y += u_omega * corr;
        next[3u * v] = y.x;
        next[3u * v + 1u] = y.y;
        next[3u * v + 2u] = y.z;
    }
    vec3 d = y - cur;
    aux[4u * v] = d.x * d.x + d.y * d.y + d.z * d.z;
}

void main()
{
    if (u_mode == SSK_SPRING_ML_RESTRICT) {
        uint key = u_base + gl_WorkGroupID.x;
        if (key < u_count) restrict_slab(key);
    } else if (u_mode == SSK_SPRING_ML_COARSE) {
        coarse();
    } else {
        uint v = u_base + gl_GlobalInvocationID.x;
        if (v < u_count) prolong(v);
    }
}
