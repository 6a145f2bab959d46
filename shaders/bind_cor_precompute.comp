#version 430 core
// bind_cor_precompute.comp - Eq. 4 of Le & Hodgins 2016 for one representative
// vertex per invocation, over the weight-space cells of core/bind/cor_cells.c
// (core/backends/cor_gl.c lays out the data; issue #18). For each pair of the
// vertex's bones (j < k, weights q_j, q_k), over the pair's occupied cells,
// the second-order expansion of Eq. 1's kernel K = exp(-x^2) about the cell's
// weighted centroid (u_j, u_k), x = d . u, d = (-q_k, q_j) / sigma:
//   sum W K   = K W + 1/2 K (4x^2 - 2) d^T S d
//   sum W K c = K Wc + grad K . M1 + 1/2 K (4x^2 - 2) sum_ab d_a d_b T_ab
// times q_j q_k, summed over the pairs: (sum s a c, sum s a), the center being
// their ratio. The same terms as pair_sums in cor_cells.c, in float.
//
// A pair's cells are SSK_COR_FIELDS rows of `padded` floats (field f of cell
// i at first + f padded + i); padding cells are all zero and add nothing.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Indices { uint idx[]; };
layout(std430, binding = 1) readonly buffer Weights { vec2 entry_weights[]; };
layout(std430, binding = 2) readonly buffer Fields { float fields[]; };
layout(std430, binding = 3) writeonly buffer Sums { vec4 sums[]; };

layout(location = 0) uniform uint u_base;
layout(location = 1) uniform uint u_count;
layout(location = 2) uniform float u_inv_sigma;
layout(location = 3) uniform uint u_sections[4];

// Sections of idx (the order of core/backends/cor_gl.c).
#define SEC_ENTRY_OFFSETS 0
#define SEC_ENTRY_PAIRS 1
#define SEC_PAIR_FIRST 2
#define SEC_PAIR_PADDED 3

// Fields of a cell (the enum F_* of core/bind/cor_cells.c).
#define F_UJ 0u
#define F_UK 1u
#define F_W 2u
#define F_SJJ 3u
#define F_SJK 4u
#define F_SKK 5u
#define F_C 6u
#define F_M1J 9u
#define F_M1K 12u
#define F_TJJ 15u
#define F_TJK 18u
#define F_TKK 21u

// x^2 above which a cell is skipped (COR_CELL_SKIP of core/bind/cor_cells.c).
#define COR_CELL_SKIP 48.0

uint at(uint section, uint i) { return idx[u_sections[section] + i]; }

void main()
{
    uint r = u_base + gl_GlobalInvocationID.x;
    if (r >= u_count) return;
    vec4 acc = vec4(0.0);
    for (uint e = at(SEC_ENTRY_OFFSETS, r); e < at(SEC_ENTRY_OFFSETS, r + 1u); ++e) {
        uint p = at(SEC_ENTRY_PAIRS, e);
        uint first = at(SEC_PAIR_FIRST, p), n = at(SEC_PAIR_PADDED, p);
        vec2 q = entry_weights[e];
        float dj = -q.y * u_inv_sigma, dk = q.x * u_inv_sigma;
        float djj = dj * dj, djk = 2.0 * dj * dk, dkk = dk * dk;
        float w = 0.0;
        vec3 num = vec3(0.0);
        for (uint i = 0u; i < n; ++i) {
            uint c = first + i;
            float x = dj * fields[c + F_UJ * n] + dk * fields[c + F_UK * n];
            float x2 = x * x;
            if (x2 > COR_CELL_SKIP) continue;
            float K = exp(-x2);
            float curv = 0.5 * K * (4.0 * x2 - 2.0);
            float gx = -2.0 * x * K;
            w += fields[c + F_W * n] * K +
                 curv * (djj * fields[c + F_SJJ * n] + djk * fields[c + F_SJK * n] +
                         dkk * fields[c + F_SKK * n]);
            for (uint a = 0u; a < 3u; ++a)
                num[a] += K * fields[c + (F_C + a) * n] +
                          gx * (dj * fields[c + (F_M1J + a) * n] + dk * fields[c + (F_M1K + a) * n]) +
                          curv * (djj * fields[c + (F_TJJ + a) * n] + djk * fields[c + (F_TJK + a) * n] +
                                  dkk * fields[c + (F_TKK + a) * n]);
        }
        float alpha = q.x * q.y;
        acc += alpha * vec4(num, w);
    }
    sums[r] = acc;
}
