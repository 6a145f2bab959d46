#version 430 core
// kernels_spring_multilevel.comp - the multilevel correction of the spring
// solver (core/kernels/spring_multilevel.c, the CPU twin; issue #16), run
// after each force pass (kernels_spring_step.comp) and before its
// reduction: RESTRICT and PROLONG here, COARSE in
// kernels_spring_ml_coarse.comp (a program with barrier() runs every
// invocation as a coroutine on llvmpipe: kept out of the per-vertex modes,
// which it slowed from about 1 to 22 ms per pass at 100k vertices).
//
//   RESTRICT (one invocation per slab, the finest local node k of a bone):
//     over the slab's rows in order (a CSR of rows by slab, uploaded once), the
//     moments m = (f, f s~^T) of each row that takes part (a free vertex on
//     which some force acts), f = (g / p) the pass's force from its step g
//     (unblended: with the Chebyshev weight w != 1, g = (next - prev) / w +
//     prev - cur), s~ = (x - a') / r_b from the records of the current
//     iterate; summed as A = sum (1 - u) m and B = sum u m (u the upper
//     node's hat weight), written to the slab's 24 floats.
//   COARSE (kernels_spring_ml_coarse.comp, one work group): per bone, the
//     finest local nodes' moments
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

#include "kernels_spring_ml_lib.glsl"

// one invocation per slab, its rows in order (the program of llvmpipe and
// other software renderers, where a work group's barriers are costly:
// each invocation is a coroutine there; hardware GPUs run
// kernels_spring_ml_restrict.comp, a work group per slab)
void restrict_slab(uint key)
{
    uint first = mu[u_off[SSK_ML_OFF_SLAB] + key], last = mu[u_off[SSK_ML_OFF_SLAB] + key + 1u];
    float acc[2 * MOM];
    for (int c = 0; c < 2 * MOM; ++c) acc[c] = 0.0;
    for (uint j = first; j < last; ++j) {
        uint v = mu[u_off[SSK_ML_OFF_ROWS] + j];
        if (!takes_part(v)) continue;
        float up, m[MOM];
        row_moments(v, up, m);
        for (int c = 0; c < MOM; ++c) {
            acc[c] += (1.0 - up) * m[c];
            acc[MOM + c] += up * m[c];
        }
    }
    for (int c = 0; c < 2 * MOM; ++c) mw[u_off[SSK_ML_OFF_SLAB_SUMS] + key * 24u + uint(c)] = acc[c];
}

void prolong(uint v)
{
    float move2;
    ml_prolong(v, move2);
    aux[4u * v] = move2;
}

void main()
{
    if (u_mode == SSK_SPRING_ML_RESTRICT) {
        uint key = u_base + gl_GlobalInvocationID.x;
        if (key < u_count) restrict_slab(key);
    } else {
        uint v = u_base + gl_GlobalInvocationID.x;
        if (v < u_count) prolong(v);
    }
}
