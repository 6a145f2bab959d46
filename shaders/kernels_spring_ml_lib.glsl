// kernels_spring_ml_lib.glsl - what the per-vertex programs of the spring
// solver's multilevel correction share (kernels_spring_multilevel.comp,
// whose header describes the buffers, and kernels_spring_ml_restrict.comp):
// the buffers, the uniforms and the per-row helpers. Included after
// kernels_spring_lib.glsl.

layout(std430, binding = SSK_SPRING_ML_VERTEX) readonly buffer Vertices { uvec4 vdata[]; };
layout(std430, binding = SSK_SPRING_ML_U) readonly buffer MlU { uint mu[]; };
layout(std430, binding = SSK_SPRING_ML_F) readonly buffer MlF { float mf[]; };
layout(std430, binding = SSK_SPRING_ML_W) buffer MlW { float mw[]; };
layout(std430, binding = SSK_SPRING_ML_SCALARS) readonly buffer Scalars { uint scalars[]; };
layout(std430, binding = SSK_SPRING_ML_NEXT) buffer Next { float next[]; };
// written only by the fused prolongation (kernels_spring_ml_prolong.comp
// defines SSK_ML_RECORDS_WRITE), which leaves the next pass's records
#ifdef SSK_ML_RECORDS_WRITE
layout(std430, binding = SSK_SPRING_ML_RECORDS) buffer Records { vec4 records[]; };
#else
layout(std430, binding = SSK_SPRING_ML_RECORDS) readonly buffer Records { vec4 records[]; };
#endif
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
// This pass's Chebyshev weight: from the watch on the device in the
// programs that include kernels_spring_watch_lib.glsl first (hardware GPUs).
#ifdef SSK_SPRING_WATCH_LIB
#define SSK_ML_OMEGA watch_omega(u_omega)
#else
#define SSK_ML_OMEGA u_omega
#endif
layout(location = SSK_LOC_SPRING_ML_DT) uniform float u_dt;
layout(location = SSK_LOC_SPRING_ML_KD) uniform float u_kd;
layout(location = SSK_LOC_SPRING_ML_MAP) uniform uint u_map; // detail map offset + 1, or 0
layout(location = SSK_LOC_SPRING_ML_TRUST) uniform float u_trust;
layout(location = SSK_LOC_SPRING_ML_MAX_LEVELS) uniform uint u_max_levels;
layout(location = SSK_LOC_SPRING_ML_OFF) uniform uint u_off[SSK_ML_OFF_COUNT];

#define MOM 12
#define UNK 9


uint role_of(uint v) { return (scalars[v >> 2u] >> (8u * (v & 3u))) & 255u; }

// a free row, not frozen, of a bone with levels (core/kernels/spring_multilevel.c
// row_on): the last two, which do not change, in ROW_KEY (uploaded once:
// one load instead of a chain of three)
bool takes_part(uint v)
{
    return role_of(v) == SSK_ROLE_FREE && mu[u_off[SSK_ML_OFF_ROW_KEY] + v] != 0xffffffffu;
}

// 1 / p of a row that takes part (core/kernels/spring_multilevel.c row_q)
float row_q(uint v)
{
    uvec4 d = vdata[v];
    if (d.y <= d.x) return 1.0 / u_dt;
    float map = u_map != 0u ? uintBitsToFloat(scalars[u_map - 1u + v]) : 1.0;
    return (1.0 + u_dt * u_kd * map) / u_dt;
}

// the finest local node k (the slab) of row v, which takes part, and its
// upper weight (ssk_spring_ml_finest of core/kernels/spring.h, uploaded once)
uint row_key(uint v, out float up)
{
    up = mf[u_off[SSK_ML_OFF_ROW_F] + 2u * v];
    return mu[u_off[SSK_ML_OFF_ROW_KEY] + v];
}

// s~ of row v from the records of the current iterate
vec3 row_offset(uint v)
{
    vec4 r1 = records[2u * v + 1u];
    float r = mf[u_off[SSK_ML_OFF_ROW_F] + 2u * v + 1u]; // 1 / r_b of its bone
    return r * records[2u * v].w * r1.xyz;
}

// the restriction's moments of row v, which takes part: m = (f, f s~^T) with
// f = (g / p) the pass's force from its step g (unblended: with the
// Chebyshev weight w != 1, g = (next - prev) / w + prev - cur), s~ = (x -
// a') / r_b; `up` the upper node's hat weight
void row_moments(uint v, out float up, out float m[MOM])
{
    row_key(v, up);
    vec3 cur = records[2u * v].xyz;
    vec3 nx = SSK_LOAD3(next, v);
    vec3 g = nx - cur;
    float omega = SSK_ML_OMEGA;
    if (omega != 1.0) {
        vec3 pv = SSK_LOAD3(aux, v);
        g = (nx - pv) / omega + pv - cur;
    }
    vec3 f = row_q(v) * g;
    vec3 s = row_offset(v);
    m = float[MOM](f.x, f.y, f.z, f.x * s.x, f.x * s.y, f.x * s.z, f.y * s.x, f.y * s.y,
                   f.y * s.z, f.z * s.x, f.z * s.y, f.z * s.z);
}

// PROLONG of row v: next += w (sum of its two finest nodes' maps at s~)
// for a row that takes part; returns the new next and its squared move
// from the current iterate, the move the reduction measures.
// (precise: the fused and the plain prolongation, two programs, then round
// alike on any compiler)
vec3 ml_prolong(uint v, out float move2)
{
    vec3 cur = records[2u * v].xyz;
    precise vec3 y = SSK_LOAD3(next, v);
    if (takes_part(v)) {
        float up;
        uint key = row_key(v, up);
        vec3 s = row_offset(v);
        uint L = u_off[SSK_ML_OFF_LOCAL] + key * MOM;
        precise vec3 corr = vec3(0.0);
        for (uint h = 0u; h < 2u; ++h) {
            uint m = L + h * MOM;
            float w = h == 0u ? 1.0 - up : up;
            for (uint c = 0u; c < 3u; ++c)
                corr[c] += w * (mw[m + c] + mw[m + 3u + 3u * c] * s.x + mw[m + 4u + 3u * c] * s.y +
                                mw[m + 5u + 3u * c] * s.z);
        }
        y += SSK_ML_OMEGA * corr;
        next[3u * v] = y.x;
        next[3u * v + 1u] = y.y;
        next[3u * v + 2u] = y.z;
    }
    precise vec3 d = y - cur;
    precise float m2 = d.x * d.x + d.y * d.y + d.z * d.z;
    move2 = m2;
    return y;
}
