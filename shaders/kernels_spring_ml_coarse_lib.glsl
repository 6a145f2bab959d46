// kernels_spring_ml_coarse_lib.glsl - the coarse step of the spring solver's
// multilevel correction (COARSE of kernels_spring_multilevel.comp, whose
// header has the buffers' layout; core/kernels/spring_multilevel.c
// ssk_spring_ml_correct is the CPU twin): one work group, its invocations
// over the local nodes of each level (finest to coarsest), then the global
// nodes, then the local nodes of each level again (coarsest to finest),
// with a barrier after each level. (An invocation per bone walking its
// levels in turn left the group's other invocations idle: 0.66 ms per pass
// on an H200 at 100k vertices.)
//
// Included by kernels_spring_ml_coarse.comp (64 invocations: software
// renderers, where each invocation of a program with barriers is a
// coroutine) and kernels_spring_ml_coarse_wide.comp (1024: hardware GPUs,
// where the invocations hide each other's memory latency), each of which
// declares its work group size first.

layout(std430, binding = SSK_SPRING_ML_U) readonly buffer MlU { uint mu[]; };
layout(std430, binding = SSK_SPRING_ML_F) readonly buffer MlF { float mf[]; };
// coherent: the invocations read each other's writes within the group
layout(std430, binding = SSK_SPRING_ML_W) coherent buffer MlW { float mwc[]; };

layout(location = SSK_LOC_SPRING_ML_NODES) uniform uint u_nodes;
layout(location = SSK_LOC_SPRING_ML_THETA) uniform float u_theta; // theta x this solve's scale
layout(location = SSK_LOC_SPRING_ML_TRUST) uniform float u_trust;
layout(location = SSK_LOC_SPRING_ML_MAX_LEVELS) uniform uint u_max_levels;
layout(location = SSK_LOC_SPRING_ML_OFF) uniform uint u_off[SSK_ML_OFF_COUNT];

#define MOM 12
#define UNK 9

// The local nodes' moments and maps (LOC below): in shared memory when the
// including program defines SSK_ML_COARSE_SHARED (its capacity in floats;
// the host picks that program when #local x 12 fits), written back to W
// at the end for the prolongation; else in W itself. The same operations
// in the same order either way.
//
// The shared program also keeps the integers the level loops read in every
// round in shared memory, loaded once (index_load): per local node its
// NODE_INFO word, and its BY_LEVEL list entry with its L2G node packed in
// one word (both < 2^16: the host picks the program only for at most
// SSK_ML_COARSE_SHARED_NODES local nodes), and the BY_LEVEL offsets. Read
// from U, each round of a level waited on two dependent loads before its
// shared-memory ones (17 levels a pass).
#ifdef SSK_ML_COARSE_SHARED
shared float s_loc[SSK_ML_COARSE_SHARED];
shared uint s_info[SSK_ML_COARSE_SHARED_NODES];
shared uint s_pack[SSK_ML_COARSE_SHARED_NODES];
shared uint s_byl[SSK_SPRING_ML_MAX_LEVELS_GLSL + 1];
#define LOC_GET(i) s_loc[i]
#define LOC_SET(i, x) s_loc[i] = (x)
#define INFO_GET(lo) s_info[lo]
#define LIST_GET(i) (s_pack[i] & 0xffffu)
#define L2G_GET(lo) (s_pack[lo] >> 16u)
#define BYL_GET(l) s_byl[l]
#else
#define LOC_GET(i) mwc[LOC + (i)]
#define LOC_SET(i, x) mwc[LOC + (i)] = (x)
#define INFO_GET(lo) mu[INFO + (lo)]
#define LIST_GET(i) mu[LIST + (i)]
#define L2G_GET(lo) mu[u_off[SSK_ML_OFF_L2G] + (lo)]
#define BYL_GET(l) mu[BYL + (l)]
#endif
layout(location = SSK_LOC_COUNT) uniform uint u_local; // #local nodes
// A developer's probe (SSK_GL_SPRING_PROBE, core/backends/gl_backend.c):
// 1 .. 5 end the step after that phase (the result is then wrong: for
// timing the phases with SSK_GL_PROFILE only); 0 runs it all.
layout(location = SSK_LOC_SPRING_ML_PROBE) uniform uint u_probe;
// Where the restriction left the slabs' sums, at SSK_ML_OFF_SLAB_SUMS (SL):
// [0] 0: by local node (the one-invocation-per-slab restriction of
// kernels_spring_multilevel.comp); 1: by chunk (the work groups of
// kernels_spring_ml_restrict.comp), [1] the offset of each local node's
// chunks (CSR offsets in U: a slab's chunks are consecutive).
layout(location = SSK_LOC_SPRING_ML_SUMS) uniform uint u_sums[2];

// Component c (< 24) of slab lo's sums: read, or its chunks' added in order.
float slab_sum(uint SL, uint lo, uint c)
{
    if (u_sums[0] == 0u) return mwc[SL + lo * 24u + c];
    float x = 0.0;
    uint a = mu[u_sums[1] + lo], b = mu[u_sums[1] + lo + 1u];
    for (uint p = a; p < b; ++p) x += mwc[SL + p * 24u + c];
    return x;
}


// After writes of LOC that other invocations read next: in shared memory a
// shared-memory barrier only (a buffer barrier is a global fence, about a
// microsecond each on an H200, and the step has 17 of these).
void sync()
{
#ifdef SSK_ML_COARSE_SHARED
    memoryBarrierShared();
#else
    memoryBarrierBuffer();
#endif
    barrier();
}

// After the node maps' writes to W, which the next phase reads.
void sync_global()
{
    memoryBarrierBuffer();
    barrier();
}

// The coarse step of global node n in three parts (spreading them over
// more invocations, with r and d in W between, measured no faster on an
// H200 at 100k vertices): its residual r = the moments of its local nodes in its frame (9 modes),
void node_residual(uint n, out float r[UNK])
{
    uint LOC = u_off[SSK_ML_OFF_LOCAL]; // LOC_GET's base when the nodes are in W
    float g[MOM];
    for (uint c = 0u; c < MOM; ++c) g[c] = 0.0;
    uint a0 = mu[u_off[SSK_ML_OFF_G2L] + n], a1 = mu[u_off[SSK_ML_OFF_G2L] + n + 1u];
    for (uint j = a0; j < a1; ++j) {
        uint lo = mu[u_off[SSK_ML_OFF_G2L_LIST] + j];
        for (uint c = 0u; c < MOM; ++c) g[c] += LOC_GET(lo * MOM + c);
    }
    float F[9];
    for (uint c = 0u; c < 9u; ++c) F[c] = mf[u_off[SSK_ML_OFF_FRAME] + n * 9u + c];
    vec2 cn = vec2(mf[u_off[SSK_ML_OFF_CENTER] + 2u * n], mf[u_off[SSK_ML_OFF_CENTER] + 2u * n + 1u]);
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
}

// row a of its step d = theta K^-1 r (precise: no fused multiply-add, as
// the CPU's sums have none),
float node_row(uint n, uint a, float r[UNK], float theta)
{
    precise float x = 0.0;
    for (uint c = 0u; c < UNK; ++c) x += mf[u_off[SSK_ML_OFF_KINV] + n * 81u + a * UNK + c] * r[c];
    precise float d = theta * x;
    return d;
}

// and its map from d (capped at the trust radius), into W.
void node_map(uint n, float d[UNK])
{
    precise float d2 = 0.0;
    for (int a = 0; a < UNK; ++a) d2 += d[a] * d[a];
    float F[9];
    for (uint c = 0u; c < 9u; ++c) F[c] = mf[u_off[SSK_ML_OFF_FRAME] + n * 9u + c];
    vec2 cn = vec2(mf[u_off[SSK_ML_OFF_CENTER] + 2u * n], mf[u_off[SSK_ML_OFF_CENTER] + 2u * n + 1u]);
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
    for (int c = 0; c < 3; ++c) mwc[M + uint(c)] = F[3 * c] * t[0] + F[3 * c + 1] * t[1] + F[3 * c + 2] * t[2];
    for (int c = 0; c < 3; ++c)
        for (int e = 0; e < 3; ++e) {
            float x = 0.0;
            for (int a = 0; a < 3; ++a)
                x += F[3 * c + a] * (L[2 * a] * F[3 * e] + L[2 * a + 1] * F[3 * e + 1]);
            mwc[M + 3u + uint(3 * c + e)] = x;
        }
}

void coarse()
{
    uint lanes = gl_WorkGroupSize.x;
    uint lane = gl_LocalInvocationID.x;
    uint LOC = u_off[SSK_ML_OFF_LOCAL], SL = u_off[SSK_ML_OFF_SLAB_SUMS];
    // The finest local moments of each bone (A_k + B_(k-1)), then the
    // coarser levels, finest first, each level after a barrier; within a
    // level the items (node, moment c) are shared by all invocations (a
    // level gathers from the finer one, so no two invocations write one
    // value). Each loop runs over the local nodes of all bones at once (one
    // loop per bone waited on each bone's loads in turn: 11 us a sweep on
    // an H200), from NODE_INFO (k, level, the bone's levels) and BY_LEVEL
    // (the local nodes of each level); level l + 1 of a bone starts 2^l + 1
    // nodes after its level l (ssk_spring_ml_loc). Every value is added in
    // the order of the CPU's loops (core/kernels/spring_multilevel.c),
    // which these loops only reorganize, so the results are the same bit
    // for bit.
    uint INFO = u_off[SSK_ML_OFF_NODE_INFO], BYL = u_off[SSK_ML_OFF_BY_LEVEL];
    uint LIST = BYL + u_max_levels + 1u;
#ifdef SSK_ML_COARSE_SHARED
    for (uint i = lane; i < u_local; i += lanes) {
        s_info[i] = mu[INFO + i];
        s_pack[i] = mu[LIST + i] | (mu[u_off[SSK_ML_OFF_L2G] + i] << 16u);
    }
    for (uint l = lane; l <= u_max_levels; l += lanes) s_byl[l] = mu[BYL + l];
    sync();
#endif
    for (uint i = lane; i < u_local * MOM; i += lanes) {
        uint lo = i / MOM, c = i % MOM;
        uint info = INFO_GET(lo);
        uint k = info & 0xffffu, l = (info >> 16u) & 0xffu, levels = info >> 24u;
        if (l + 1u != levels) continue; // not the bone's finest level
        uint n = 1u << l;
        float x = 0.0;
        if (k < n) x += slab_sum(SL, lo, c);
        if (k > 0u) x += slab_sum(SL, lo - 1u, MOM + c);
        LOC_SET(lo * MOM + c, x);
    }
    sync();
    if (u_probe == 1u) return;
    for (int l = int(u_max_levels) - 2; l >= 0; --l) {
        uint first = BYL_GET(uint(l)), end = BYL_GET(uint(l) + 1u);
        uint kn = 1u << uint(l), fn = 2u * kn;
        for (uint i = lane; i < (end - first) * MOM; i += lanes) {
            uint lo = LIST_GET(first + i / MOM), c = i % MOM;
            uint info = INFO_GET(lo);
            uint k = info & 0xffffu, levels = info >> 24u;
            if (l > int(levels) - 2) continue; // the bone's finest level
            uint fine = lo - k + kn + 1u;
            float x = LOC_GET((fine + 2u * k) * MOM + c);
            if (k > 0u) x += 0.5 * LOC_GET((fine + 2u * k - 1u) * MOM + c);
            if (2u * k + 1u <= fn) x += 0.5 * LOC_GET((fine + 2u * k + 1u) * MOM + c);
            LOC_SET(lo * MOM + c, x);
        }
        sync();
    }
    if (u_probe == 2u) return;
    // per global node: moments, step, map
#ifdef SSK_SPRING_WATCH_LIB
    float theta = u_watch != 0u ? wt.theta * wt.scale : u_theta;
#else
    float theta = u_theta;
#endif
    for (uint n = lane; n < u_nodes; n += lanes) {
        float r[UNK], d[UNK];
        node_residual(n, r);
        for (uint a = 0u; a < UNK; ++a) d[a] = node_row(n, a, r, theta);
        node_map(n, d);
    }
    sync_global();
    if (u_probe == 3u) return;
    // Every local node's map from its node (the local nodes of all bones
    // and levels in one flat loop: a loop per bone and level waited on the
    // two dependent loads of each of its ~50 rounds in turn, 10 of the
    // step's 60 us on an H200), then prolonged to the finest, coarsest
    // first: level l + 1 gathers from level l (an even node k' = 2k adds
    // x_k, an odd one 0.5 x_k then 0.5 x_(k+1), the CPU's order).
    for (uint i = lane; i < u_local * MOM; i += lanes) {
        uint lo = i / MOM, c = i % MOM;
        uint n = L2G_GET(lo);
        LOC_SET(i, mwc[u_off[SSK_ML_OFF_NODE_MAP] + n * MOM + c]);
    }
    sync();
    if (u_probe == 4u) return;
    for (uint l = 0u; l + 1u < u_max_levels; ++l) {
        // the nodes of level l + 1 (of bones with more than l + 1 levels)
        uint first = BYL_GET(l + 1u), end = BYL_GET(l + 2u);
        for (uint i = lane; i < (end - first) * MOM; i += lanes) {
            uint lo = LIST_GET(first + i / MOM), c = i % MOM;
            uint j = INFO_GET(lo) & 0xffffu;
            uint crs = lo - j - ((1u << l) + 1u);
            float y = LOC_GET(lo * MOM + c);
            if ((j & 1u) == 0u) {
                y += LOC_GET((crs + j / 2u) * MOM + c);
            } else {
                y += 0.5 * LOC_GET((crs + (j - 1u) / 2u) * MOM + c);
                y += 0.5 * LOC_GET((crs + (j + 1u) / 2u) * MOM + c);
            }
            LOC_SET(lo * MOM + c, y);
        }
        sync();
    }
    if (u_probe == 5u) return;
#ifdef SSK_ML_COARSE_SHARED
    for (uint i = lane; i < u_local * MOM; i += lanes) mwc[LOC + i] = s_loc[i];
#endif
}

void main() { coarse(); }
