#version 430 core
// bind_cor_precompute.comp - the sums of Eq. 4 of Le & Hodgins 2016 for one
// vertex per invocation (core/backends/cor_gl.c builds the data and explains the
// visiting rule):
//   sum over leaves l of s(w_p, w_l) a_l (c_l, 1),
// with Eq. 1's similarity divided by sum_{i<j} w_pi w_pj (the same factor
// in both sums, so the center is unchanged; core/bind/cor_precompute.c):
//   s = sum over pairs i < j of the vertex's bones held by the leaf's
//       triangle of  w_pi w_pj u_i u_j exp(-(w_pi u_j - w_pj u_i)^2 / sigma^2)
//       / sum_{i<j} w_pi w_pj
// (Eq. 1 sums ordered pairs j != k, twice each unordered pair: the factor 2
// cancels the same way). Each triangle is visited from the list of the
// first of the vertex's bone pairs that it holds, so it counts once.
//
// Buffers: one uint array of sections (offsets in u_sections), one float
// array (vertex weights from 0, leaf weights from the base in section
// LEAF_WEIGHT_BASE), the leaves' (centroid, area), the output.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Indices { uint idx[]; };
layout(std430, binding = 1) readonly buffer Values { float values[]; };
layout(std430, binding = 2) readonly buffer Geometry { vec4 geometry[]; };
layout(std430, binding = 3) writeonly buffer Sums { vec4 sums[]; };

layout(location = 0) uniform uint u_base;
layout(location = 1) uniform uint u_count;
layout(location = 2) uniform float u_inv_sigma2;
layout(location = 3) uniform uint u_sections[12];

// Sections of idx (the order of core/backends/cor_gl.c).
#define SEC_VERTICES 0
#define SEC_CAND_OFFSETS 1
#define SEC_CAND_LISTS 2
#define SEC_W_OFFSETS 3
#define SEC_W_BONES 4
#define SEC_LIST_OFFSETS 5
#define SEC_LIST_TRIANGLES 6
#define SEC_TB_OFFSETS 7
#define SEC_TB_BONES 8
#define SEC_LEAF_OFFSETS 9
#define SEC_LEAF_WEIGHT_OFFSETS 10
#define SEC_LEAF_WEIGHT_BASE 11

// SSK_MAX_INFLUENCES: the most bones of one vertex.
#define COR_MAX_BONES 64
// exp(-x) below 4e-18 is skipped (COR_EXP_SKIP of core/bind/cor_precompute.c).
#define COR_EXP_SKIP 40.0

uint at(uint section, uint i) { return idx[u_sections[section] + i]; }

void main()
{
    uint c = u_base + gl_GlobalInvocationID.x;
    if (c >= u_count) return;
    uint v = at(SEC_VERTICES, c);
    uint e0 = at(SEC_W_OFFSETS, v);
    uint kp = at(SEC_W_OFFSETS, v + 1u) - e0;
    int pb[COR_MAX_BONES];
    float pw[COR_MAX_BONES];
    for (uint i = 0u; i < kp; ++i) {
        pb[i] = int(at(SEC_W_BONES, e0 + i));
        pw[i] = values[e0 + i];
    }
    float norm = 0.0;
    for (uint i = 0u; i < kp; ++i)
        for (uint j = i + 1u; j < kp; ++j) norm += pw[i] * pw[j];
    float inv_norm = norm > 0.0 ? 1.0 / norm : 0.0;
    uint leaf_base = at(SEC_LEAF_WEIGHT_BASE, 0u);
    vec4 acc = vec4(0.0);
    uint matched[COR_MAX_BONES];
    uint slot[COR_MAX_BONES];
    for (uint e = at(SEC_CAND_OFFSETS, c); e < at(SEC_CAND_OFFSETS, c + 1u); ++e) {
        uint list = at(SEC_CAND_LISTS, 2u * e);
        uint code = at(SEC_CAND_LISTS, 2u * e + 1u);
        for (uint k = at(SEC_LIST_OFFSETS, list); k < at(SEC_LIST_OFFSETS, list + 1u); ++k) {
            uint t = at(SEC_LIST_TRIANGLES, k);
            uint tb0 = at(SEC_TB_OFFSETS, t);
            uint nb = at(SEC_TB_OFFSETS, t + 1u) - tb0;
            uint nm = 0u;
            uint i = 0u, j = 0u;
            while (i < kp && j < nb) {
                int tbj = int(at(SEC_TB_BONES, tb0 + j));
                if (pb[i] < tbj) {
                    ++i;
                } else if (tbj < pb[i]) {
                    ++j;
                } else {
                    matched[nm] = i;
                    slot[nm] = j;
                    ++nm;
                    ++i;
                    ++j;
                }
            }
            // counted from the list of the first pair it holds only
            if (nm < 2u || ((matched[0] << 16u) | matched[1]) != code) continue;
            uint l0 = at(SEC_LEAF_OFFSETS, t), l1 = at(SEC_LEAF_OFFSETS, t + 1u);
            uint lw = leaf_base + at(SEC_LEAF_WEIGHT_OFFSETS, t);
            for (uint l = l0; l < l1; ++l, lw += nb) {
                float sim = 0.0;
                for (uint a = 0u; a < nm; ++a)
                    for (uint b = a + 1u; b < nm; ++b) {
                        float ua = values[lw + slot[a]], ub = values[lw + slot[b]];
                        float wa = pw[matched[a]], wb = pw[matched[b]];
                        float diff = wa * ub - wb * ua;
                        float x = diff * diff * u_inv_sigma2;
                        if (x < COR_EXP_SKIP) sim += wa * wb * inv_norm * ua * ub * exp(-x);
                    }
                if (sim > 0.0) {
                    vec4 g = geometry[l];
                    float sa = sim * g.w;
                    acc += vec4(sa * g.xyz, sa);
                }
            }
        }
    }
    sums[c] = acc;
}
