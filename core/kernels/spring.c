/*
 * spring.c — the spring deformer's solver on the CPU: Toothman 2020
 * dissertation 4.2 (Eq. 21-23), 5.2 (surface edits, F_e), 6.1
 * (frame-dependent mode, differential transforms), 6.3 (Algorithm 1); the
 * MIG 2019 paper "Spring Rigs for Skinning". Set-up (rest data, regions,
 * checks) is spring_rest.c; the data layout is spring.h.
 *
 * Forces on vertex i (rig space; s = v - a', a' the vertex's posed anchor,
 * below; every force a displacement rate, so v += dt F moves model units):
 *
 *   F_s = k_s sum_j (L_ij - L0_ij) (v_j - v_i) / L_ij
 *   F_l = -k_l sum_j ((|s_i| - |s_j|) - (|s_i| - |s_j|)_rest) s_i/|s_i|
 *   F_t = k_t sum_j (m_ij^2 / |s_i|) (theta_ij - theta0_ij) d_ij,
 *         d_ij = (u_j - (u_i.u_j) u_i) / |u_i x u_j|, u = s/|s|,
 *         m_ij = min(|s_i|, |s_j|)
 *   F_b = k_b |s_i| (phi_i - phi0_i) (beta - (u_i.beta) u_i) / |u_i x beta|,
 *         beta the unit posed bone direction of the anchor
 *
 * Anchors. The paper's a' is the posed attachment point p' + t (c' - p')
 * of the binding's bone, and beta that bone's direction (attachment
 * "binding"). With attachment "weights" (the default on a rig with skin
 * weights; a departure from the paper, issue #15) a' is the weighted mean
 * of the vertex's attachment points on its skin-weight bones,
 * a' = sum_k w_k a'_k(t_k), t_k the rest position's projection onto rest
 * bone k (as core/kernels/attach_weights.c's slots; recomputed each frame
 * from the rig rather than stored: 32 bytes per influence and vertex
 * saved, issue #16's memory bound), and
 * beta the normalized weighted mean of those bones' directions (the bone
 * of the largest weight where they cancel, SSK_SPRING_DIRECTION_EPSILON).
 * Why: on a real rig neighbors bound to one bone each are often bound to
 * bones that move apart (thigh.L and thigh.R, pelvis and spine), and the
 * length, torsion and bone springs then pull the skin between them toward
 * two incompatible rest relations; the weighted anchor moves continuously
 * over the surface, as the weights do. Measured with the default 50
 * iterations (bench/real_quality.py, triangles turned > 60 degrees from
 * LBS / largest edge stretch over LBS's): Rigify body 2.20% / 104 with the
 * binding, 1.17% / 39 with the weights; BCN_Epileptic.X 0.58% / 1.11 and
 * 0.44% / 1.00. ssk_spring_anchors computes a' and beta once per frame
 * (and at rest with the same arithmetic).
 *
 * The torsion lever m_ij^2 / |s_i|. Read as acting on the arc (below),
 * the force would be k_t |s_i| (theta - theta0); its derivative with
 * respect to the NEIGHBOR's position is k_t |s_i| / |s_j|, unbounded when
 * |s_j| is small. Weighted anchors make short scale vectors common (skin
 * between two legs, whose anchor lies between the bones), and the Jacobi
 * iteration then diverged on 8 of the 10 frames of the Rigify body at
 * 2000 iterations. With m_ij = min(|s_i|, |s_j|) both derivatives are at
 * most k_t, the force is -dE/dv_i of E_t = 1/2 k_t m_ij^2 (theta -
 * theta0)^2 per edge (up to the variation of m), and where |s_i| = |s_j|
 * it is the arc reading's force unchanged: 0 divergent frames, and every
 * frame converged by 2000 iterations.
 *   F_e = K_i (target_i - v_i)   (kinematic vertices; spring.h)
 *   F_d = k_d ((mean_j v_j - v_i) - (mean_j f_j - f_i))   (below)
 *
 * The detail force (not in the paper; issue #15). On real characters the
 * springs' own equilibrium folds and crumples skin wherever the rest
 * relations cannot all hold: the back of BCN_Epileptic.X's neck with the
 * head thrown back (the skin LBS tucks under the head is pushed out into
 * a band of flipped faces), the Rigify body's waist between a pelvis that
 * stays and a spine that twists (a sawtooth of spikes), shoulders and hips
 * where several bones meet. Each force alone does it (BCN frame 32,
 * converged: surface alone 99 flipped triangles, torsion 66, length 29,
 * bone 17); weakening compression (tension-only surface springs,
 * one-sided torsion) or a Laplacian term toward the REST shape rotated by
 * blended bone rotations did not remove it (60 -> 69). What did is to keep
 * the first stage's differential coordinates delta_f(i) = f_i - mean_j f_j
 * (Laplacian surface editing's detail, Sorkine et al. 2004, reviewed in
 * the dissertation's 2.2.2): F_d = k_d (mean_j v_j - v_i + delta_f(i)),
 * the umbrella operator of the correction v - f. The springs then move the
 * skin by a smooth correction: thicker bent joints, an untwisted ring, but
 * no fold the first stage does not have. With IRS as the first stage
 * (attachment per skin weight influence) and the short-edge clusters
 * below, all four rigs of docs/real-characters.md went from 0.44-1.36% of
 * triangles turned > 60 degrees from LBS to 0.00-0.11%, with volume,
 * joint thickness and the 180-degree twist section at least LBS's and
 * IRS's (bench/real_quality.py). Its energy term is 1/2 k_d |r_i|^2, r_i
 * = mean_j v_j - v_i + delta_f(i), per vertex (F_d is -dE/dv_i up to the
 * neighbors' terms). The vertex's own part of F_d, -k_d v_i, is taken
 * implicitly (a Jacobi preconditioner): each step is dt F / (1 + dt
 * k_d(i)), stable at any k_d; the other forces' steps shrink by the same
 * factor, so the stability checks on dt stay valid. delta_f is computed
 * once per solve from the first stage (in frame-dependent mode too: the
 * frame's own first stage, not the continued start).
 *
 * The twist anchor (issue #16's decision 2; not in the paper): F_a =
 * -k_a psi |s_i| (beta x u_perp), psi the signed angle about the vertex's
 * bone direction beta from f_perp (the first stage's scale vector f_i -
 * a'_i without its beta component) to u_perp (the unit scale vector's),
 * atan2 of (f_perp x u_perp) . beta and f_perp . u_perp; off where either
 * projection is shorter than its epsilon. Energy 1/2 k_a |s|^2 |u_perp|^2
 * psi^2. In the paper's model nothing resists a free turn of the skin
 * about its bone, so a twist's equilibrium depended on the iteration
 * count; the anchor makes it spread over about sqrt(k_t / k_a) rings. The
 * defaults leave it off (k_a 0): the detail force already holds the
 * first stage's twist where the springs should not move it, and with it
 * the anchor only pulls the twisted ring in (measured in springskin.h).
 *
 * Short-edge clusters. Metaball, remeshed and scanned bodies have
 * near-duplicate vertices: edges of 1e-4 of the diagonal beside edges of
 * 1e-2 (the Rigify bodies: 7% of the triangles have an edge below 0.1 of
 * the median). A per-vertex solver moves two such vertices by corrections
 * that differ by far more than their distance, so their sliver triangles
 * flip (34 of the Rigify body's 38 remaining turned triangles at frame 9)
 * and stretch by 5x (the "stretch" measure). After the solve, each
 * cluster of vertices joined by edges shorter than
 * SSK_SPRING_CLUSTER_FRACTION of their vertex's mean rest edge length
 * moves by the mean correction of its non-static members, v_m = f_m +
 * mean(v - f): the cluster keeps the first stage's shape (38 -> 4 turned
 * there). The clusters are built once (spring_rest.c) and the solve's
 * energy and report are those of the iterate before this step.
 *
 * Eq. 21 writes every force as k (Delta_current - Delta_bind); Eq. 22 sums
 * them. The torsion and bone springs are angular: the dissertation turns a
 * torque into a linear force of magnitude m = |F_t| / |s_i| (4.2) applied
 * orthogonally to s_i, toward j (torsion) or against the angular
 * displacement (bone). Taken literally that makes the force shrink as the
 * scale vector grows, which is not what a torque at lever arm |s_i| does
 * to the arc length |s_i| theta; we read the conversion as acting on the
 * arc, k |s_i| (theta - theta0), so that a stiffness means the same
 * displacement per unit time on a thin and a thick limb, and bound the
 * torsion's lever by the shorter scale vector of the pair (above). Angles are atan2(|a x b|, a . b) (accurate at 0 and pi,
 * unlike acos), through a polynomial (spring.h). Degenerate terms (a
 * zero-length edge or scale vector, parallel directions) contribute no
 * force.
 *
 * Algorithm 1: the neighbor forces (F_s, F_l, F_t) of a kinematic vertex
 * are multiplied by the control handle weight SSK_SPRING_HANDLE_WEIGHT,
 * then F_e is added, then F_b. Static vertices never move (they keep the
 * first stage). Jacobi iteration: every force of an iteration is computed
 * from the previous iterate (double buffering, 6.1), so the result does not
 * depend on the vertex order or the thread count.
 *
 * Update (Eq. 23): explicit v += dt F; semi-implicit (4.2) with velocity u:
 * u = (1 - damping)(u + dt F), v += dt u.
 *
 * Energy: E = sum over edges of 1/2 k_s (L - L0)^2 + 1/2 k_l (dl - dl0)^2
 * + 1/2 k_t min(|s_i|, |s_j|)^2 (theta - theta0)^2, plus per vertex
 * 1/2 k_b |s_i|^2 (phi - phi0)^2 and 1/2 K_i |target_i - v_i|^2; each
 * directed edge adds half its edge's terms with its own vertex's
 * stiffness. F_s, F_l and F_e are exactly -dE/dv_i; F_t and F_b are
 * -dE/dv_i up to the variation of the |s|^2 and m^2 weights (the arc
 * reading above) and the handle weight. It is accumulated in the force pass, so it
 * costs a few multiply-adds per edge. With the semi-implicit integrator
 * the convergence scheme and the divergence watch use E plus the kinetic
 * energy 1/2 sum |u|^2 (the potential energy alone oscillates); the
 * report gives E.
 *
 * Convergence (4.2.2-4.2.3), pass k evaluating the forces at iterate
 * x_{k-1} and writing x_k:
 *   DISPLACEMENT  max_i |x_k - x_{k-1}| < threshold: result x_k;
 *   FORCE         max_i |F(x_{k-1})| < threshold (compared as is): x_k;
 *   ENERGY        E(x_{k-1}) >= E(x_{k-2}): result x_{k-2}, the minimum;
 *   ITERATIONS    max_iterations passes: x_max (reported as converged);
 *   RELATIVE      (issue #36) an estimate of the distance to the fixed
 *                 point below threshold x the mean rest edge length: x_k.
 *                 Derivation: if every later move shrinks by at least q,
 *                 the distance from x_k is at most sum_{j>=1} m_k q^j =
 *                 m_k q / (1 - q), m_k = max_i |x_k - x_{k-1}|. q is the
 *                 mean contraction of the last SSK_SPRING_RELATIVE_WINDOW
 *                 (5) moves, (m_k / m_{k-5})^(1/5), at least
 *                 SSK_SPRING_RELATIVE_CONTRACTION_FLOOR (none before pass
 *                 6; q >= 1: none). The estimate shrinks by at most q a
 *                 pass, a pass whose moves grew adds its move (the
 *                 triangle inequality), a move at the rounding of the
 *                 positions (SSK_SPRING_RELATIVE_NEGLIGIBLE_ULPS) keeps
 *                 the last q (the first pass's ends the solve: the start
 *                 was the equilibrium), and with the multigrid it is at
 *                 least SSK_SPRING_MG_RESIDUAL_FACTOR x the largest
 *                 corrected step. Why (docs/springs-at-density.md): the
 *                 displacement rule stops at an absolute move, which on a
 *                 denser mesh leaves a far larger distance in edges (12%
 *                 of an edge on bench/cor_bodies.py's 15k body); the last
 *                 ratio alone underestimates the moves to come (a
 *                 corrected solve stopped 6% of an edge away); the largest
 *                 ratio of a few, or a stop on any small move, is fooled by
 *                 an accelerated pass's jump or by a stall at the rounding
 *                 (test_spaces' limb twisted 170 degrees stopped 9% of an
 *                 edge away; a sheet pulled by handles, 0.8%). The
 *                 residual is this estimate.
 * The residual is the scheme's measure (max displacement for ENERGY and
 * ITERATIONS) of the last pass that produced the result. These decisions
 * (and the divergence rule below) are ssk_spring_watch_pass, and the
 * per-frame set-up is ssk_spring_prepare_frame (spring.h): the GL backend,
 * which runs the passes as compute shaders (core/backends/gl_backend.c run_spring,
 * shaders/kernels_spring_*.comp), calls the same functions on the same reductions.
 *
 * Divergence: a pass that meets non-finite values, or an energy that grew
 * (by more than SSK_SPRING_GROWTH_TOLERANCE of itself) together with the
 * largest step over SSK_SPRING_DIVERGENCE_WINDOW passes in a row, stops
 * the solve with SSK_ERROR_SPRING_DIVERGED; the positions are then the
 * lowest-energy finite iterate kept (the one before the run of increases,
 * or the last finite one). Why both: F_t and F_b are not exactly -dE/dv
 * (above), so near its fixed point the iteration may trade a little energy
 * (measured on the test limb: up to 1e-4 of E per pass, for thousands of
 * passes) while its steps keep shrinking; an unstable mode grows both the
 * energy and the steps geometrically.
 *
 * Chebyshev acceleration (params.chebyshev_rho = rho > 0; not in the
 * paper: the semi-iterative method of Golub & Varga 1961, used on
 * position-based dynamics by Wang 2015). The plain update is a fixed-point
 * iteration x_{k+1} = x_k + dt F(x_k) whose slow modes (a first-stage
 * discontinuity spreading along the limb ring by ring) decay like rho^k
 * with rho close to 1. After SSK_SPRING_CHEBYSHEV_WARMUP plain passes, pass
 * k blends its plain result x^ with the iterate before the current one,
 * x_k = w_k (x^ - x_{k-2}) + x_{k-2} (the three rotating buffers already
 * hold it), w = 2 / (2 - rho^2), then 4 / (4 - rho^2 w) (towards
 * 2 / (1 + sqrt(1 - rho^2))): on a linear iteration with spectrum in
 * [-rho, rho] that is the Chebyshev polynomial, error ~ (rho / (1 +
 * sqrt(1 - rho^2)))^k instead of rho^k; a rho below the true radius still
 * converges, more slowly. Its only fixed point is F = 0, so the
 * equilibrium is the plain update's. The step and the displacement scheme
 * then measure |x_k - x_{k-1}| of the blended iterate. The energy of an
 * accelerated iteration is not monotone, so the energy scheme and the
 * semi-implicit integrator (which has its own momentum) refuse it
 * (spring_rest.c), and the divergence rule below restarts an accelerated
 * run (plain passes again, then the blend) where it would otherwise stop:
 * the plain passes decide whether it really diverges. Measured (2-bone
 * limb of test_spring_quality, default threshold, rho 0.99): bends 90 /
 * 135 in 60 / 76 passes (plain 208 / 245), twists 90 / 180 in 728 / 949
 * (1842 / 3444); after 50 passes a bend is 0.007 / 0.039 of the radius
 * from its equilibrium (plain 0.130 / 0.199); on BCN_Epileptic.X's 80
 * frames 1.28x fewer passes in all (per frame from 2.7x fewer to 1.8x
 * more: the non-gradient torsion terms make some frames circulate) and
 * about half the distance to the 1e-6 equilibrium after the default
 * threshold. The blend costs one more 12-byte read per vertex.
 *
 * Speed: per iteration one pre-pass writes each vertex's record (x, |s|,
 * s/|s|; 8 lanes, bone ends gathered and transposed), then the force pass
 * takes 8 consecutive vertices at once (lanes = vertices, as core/kernels/dqs.c
 * and core/kernels/irs.c) and for k = 0 .. (their largest degree - 1) loads each
 * lane's k-th 16-byte edge record (one load per lane, a 4x8 transpose;
 * lanes past their last edge read on into the next rows, which the edge
 * array's padding keeps in bounds, and are masked off), then the 8
 * neighbor records (8 row loads, an 8x8 transpose). Per-lane reductions
 * stay in vectors until the end of a block. No libm call in the loop:
 * square roots and divisions vectorize, the angles use the polynomial.
 * Measured (bench/bench_spring.c, 2 cores, AVX-512 clone): 1.5 ms per
 * iteration on a 100k-vertex limb, 76 ms for a 50-iteration frame (one
 * core: 3.0 ms per iteration; the first version, which filled the lanes
 * element by element from four separate rest arrays and reduced per lane
 * in scalars, took 3.9).
 */
#include "kernels/spring.h"

#include "kernels/attach_math.h"
#include "kernels/simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef ssk_v8 v8;
typedef ssk_i8 i8;
#define V8(x) ssk_v8_splat(x)
#define SEL(m, a, b) ssk_v8_select((m), (a), (b))

/* What one force pass reads and writes. */
typedef struct pass_args {
    const uint32_t *offsets;
    const ssk_spring_edge *edges;
    const float *rest_bone_angle;
    const uint8_t *roles;
    const float *maps[SSK_FORCE_COUNT];
    const float *rec;         /* records of the current iterate */
    const float *vertex_dir;  /* #V by 4: each vertex's bone direction */
    const float *edit_target; /* #V by 4 or NULL */
    const float *detail;      /* #V by 4: the first stage's differential coordinates */
    const float *first;       /* #V by 3: the first stage (the twist anchor) */
    const float *anchor;      /* #V by 4: the frame's anchors a' */
    int twist;                /* the twist anchor is on (k_a > 0 or a map) */
    float *next;              /* #V by 3: the next iterate */
    float *step_out;          /* or, when not NULL, #V by 3: the step itself
                                 (no velocity, no blend): unrounded by the
                                 positions' ulps (the multigrid's map) */
    float *velocity;          /* semi-implicit, or NULL */
    const float *prev;        /* Chebyshev pass: #V by 3 x_{k-1}, else NULL */
    float omega;              /* its weight w_k */
    float k[SSK_FORCE_COUNT];
    float dt, keep;           /* keep = 1 - damping */
    float eps_len, eps_par;
    /* the multilevel correction's restriction, fused (spring_multilevel.c):
     * ml_fused = 1 adds each chunk's moments into its part of ml->partial */
    const ssk_spring_ml *ml;
    int ml_fused;
    const float *t;           /* #V binding parameters */
    const int32_t *bones;     /* #V binding bones */
    ssk_spring_pass *chunk_results; /* #chunks: each chunk's reductions */
    int write;                /* the pass writes next (else: energy only) */
} pass_args;

typedef double v8d __attribute__((vector_size(64)));

/* Per-lane partial reductions of a block; with the multilevel
 * restriction fused, the sums of the moments m and u m of the current run
 * of rows in slab ml_key (spring_multilevel.c restrict_range). */
typedef struct lane_acc {
    v8d energy, kinetic;
    v8 max_disp2, max_force2;
    i8 bad;
    v8 ml_sum[SSK_SPRING_ML_MOMENTS], ml_up[SSK_SPRING_ML_MOMENTS];
    uint32_t ml_key, ml_base; /* the run's slab; the chunk's first local node */
    float *ml_buf;            /* the chunk's part of ml->partial */
} lane_acc;

/* Adds a run's sums to its slab's two nodes (k: sum - up, k + 1: up). */
static inline __attribute__((always_inline)) void ml_flush(lane_acc *acc)
{
    enum { MOM = SSK_SPRING_ML_MOMENTS };
    if (acc->ml_key == UINT32_MAX) return;
    float *m = acc->ml_buf + (size_t)(acc->ml_key - acc->ml_base) * MOM;
    for (int c = 0; c < MOM; ++c) {
        float s = 0.0f, u = 0.0f;
        for (int l = 0; l < 8; ++l) {
            s += acc->ml_sum[c][l];
            u += acc->ml_up[c][l];
        }
        m[c] += s - u;
        m[MOM + c] += u;
        acc->ml_sum[c] = acc->ml_up[c] = (v8){0};
    }
    acc->ml_key = UINT32_MAX;
}

/* The moments (F, F s~^T) of 8 rows into the run (spring_multilevel.c:
 * f = q g is the force F of the pass; s~ = |s| u / r_b from the records,
 * 0 where s is undefined): 8 rows of one bone and slab that all take
 * part at once, others one by one. */
static inline __attribute__((always_inline)) void
ml_moments8(const pass_args *restrict a, int64_t v0, int n, i8 role, i8 degv, v8 fx, v8 fy,
            v8 fz, v8 li, v8 ux, v8 uy, v8 uz, lane_acc *restrict acc)
{
    enum { MOM = SSK_SPRING_ML_MOMENTS };
    const ssk_spring_ml *ml = a->ml;
    const uint8_t *frozen = ml->frozen;
    bool uniform = n == 8;
    const int32_t b0 = a->bones[v0];
    for (int l = 0; l < 8 && uniform; ++l)
        uniform = a->bones[v0 + l] == b0 && role[l] == SSK_ROLE_FREE && degv[l] > 0 &&
                  !(frozen && frozen[v0 + l]);
    float upf[8];
    uint32_t keys[8];
    if (uniform) { /* one bone: its slot once */
        const uint32_t slot = ml->slot[b0], levels = ml->bone_levels[slot];
        if (levels == 0) { /* rows that take no part: a run ends */
            ml_flush(acc);
            return;
        }
        const uint32_t base = ssk_spring_ml_loc_slot(ml, slot, levels - 1u);
        for (int l = 0; l < 8; ++l) {
            keys[l] = base + ssk_spring_ml_slab(a->t[v0 + l], levels - 1u, &upf[l]);
            uniform &= keys[l] == keys[0];
        }
    }
    if (uniform) {
        const v8 r = V8(ml->inv_radius[ml->slot[b0]]) * li;
        const v8 s0 = r * ux, s1 = r * uy, s2 = r * uz;
        v8 up;
        memcpy(&up, upf, sizeof up);
        if (keys[0] != acc->ml_key) {
            ml_flush(acc);
            acc->ml_key = keys[0];
        }
        const v8 m[MOM] = {fx,      fy,      fz,      fx * s0, fx * s1, fx * s2,
                           fy * s0, fy * s1, fy * s2, fz * s0, fz * s1, fz * s2};
        for (int c = 0; c < MOM; ++c) {
            acc->ml_sum[c] += m[c];
            acc->ml_up[c] += up * m[c];
        }
        return;
    }
    for (int l = 0; l < n; ++l) {
        const int64_t i = v0 + l;
        if (role[l] != SSK_ROLE_FREE || (frozen && frozen[i])) continue;
        const uint32_t slot = ml->slot[a->bones[i]], levels = ml->bone_levels[slot];
        if (levels == 0) continue; /* takes no part */
        keys[l] = ssk_spring_ml_loc_slot(ml, slot, levels - 1u) +
                  ssk_spring_ml_slab(a->t[v0 + l], levels - 1u, &upf[l]);
        const float r = ml->inv_radius[slot] * li[l];
        const float s[3] = {r * ux[l], r * uy[l], r * uz[l]}, f[3] = {fx[l], fy[l], fz[l]};
        float *m = acc->ml_buf + (size_t)(keys[l] - acc->ml_base) * MOM;
        const float w[2] = {1.0f - upf[l], upf[l]};
        for (int h = 0; h < 2; ++h)
            for (int c = 0; c < 3; ++c) {
                m[h * MOM + c] += w[h] * f[c];
                for (int e = 0; e < 3; ++e) m[h * MOM + 3 + 3 * c + e] += w[h] * f[c] * s[e];
            }
    }
}

/* Reductions of one pass (spring.h). */
typedef ssk_spring_pass pass_result;

static inline __attribute__((always_inline)) v8 v8_sqrt(v8 x)
{
    v8 r;
    for (int l = 0; l < 8; ++l) r[l] = sqrtf(x[l]);
    return r;
}

/* ssk_spring_atan2 on lanes, same operations in the same order. */
static inline __attribute__((always_inline)) v8 v8_atan2(v8 y, v8 x)
{
    const v8 ax = SEL(x < V8(0.0f), -x, x);
    const i8 ybig = y > ax;
    const v8 mx = SEL(ybig, y, ax), mn = SEL(ybig, ax, y);
    const v8 q = mn / SEL(mx > V8(0.0f), mx, V8(1.0f));
    const v8 q2 = q * q;
    const v8 p =
        q * (V8(SSK_SPRING_ATAN_C0) +
             q2 * (V8(SSK_SPRING_ATAN_C1) +
                   q2 * (V8(SSK_SPRING_ATAN_C2) +
                         q2 * (V8(SSK_SPRING_ATAN_C3) +
                               q2 * (V8(SSK_SPRING_ATAN_C4) +
                                     q2 * (V8(SSK_SPRING_ATAN_C5) +
                                           q2 * V8(SSK_SPRING_ATAN_C6)))))));
    const v8 r = SEL(ybig, V8(SSK_SPRING_HALF_PI) - p, p);
    return SEL(x < V8(0.0f), V8(SSK_SPRING_PI) - r, r);
}

/* Records of 8 vertices, transposed: c[q][lane] = rec[idx[lane]][q]. */
static inline __attribute__((always_inline)) void gather_rec(v8 c[8], const float *restrict rec,
                                                             const int32_t idx[8])
{
    for (int l = 0; l < 8; ++l) c[l] = ssk_v8_load(rec + 8 * (size_t)idx[l]);
    ssk_v8_transpose8(c);
}

/* The twist anchor's reference: the first stage's scale vector sf
 * projected orthogonal to the unit bone direction b. */
static inline __attribute__((always_inline)) void twist_reference(v8 *px, v8 *py, v8 *pz, v8 sx,
                                                                  v8 sy, v8 sz, v8 bx, v8 by,
                                                                  v8 bz)
{
    const v8 d = sx * bx + sy * by + sz * bz;
    *px = sx - d * bx;
    *py = sy - d * by;
    *pz = sz - d * bz;
}

/* Eight 16-byte edge records (lane l = r[l]) to four lane vectors: rest
 * length, rest length difference, rest angle, neighbor (bits). */
static inline __attribute__((always_inline)) void edges_transpose(const ssk_v4 r[8], v8 *L0,
                                                                  v8 *D0, v8 *T0, v8 *J)
{
    const v8 r0 = __builtin_shufflevector(r[0], r[4], 0, 1, 2, 3, 4, 5, 6, 7);
    const v8 r1 = __builtin_shufflevector(r[1], r[5], 0, 1, 2, 3, 4, 5, 6, 7);
    const v8 r2 = __builtin_shufflevector(r[2], r[6], 0, 1, 2, 3, 4, 5, 6, 7);
    const v8 r3 = __builtin_shufflevector(r[3], r[7], 0, 1, 2, 3, 4, 5, 6, 7);
    const v8 t0 = __builtin_shufflevector(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13);
    const v8 t1 = __builtin_shufflevector(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15);
    const v8 t2 = __builtin_shufflevector(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);
    const v8 t3 = __builtin_shufflevector(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);
    *L0 = __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
    *D0 = __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
    *T0 = __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
    *J = __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
}

/* values[vi[l]] on lanes: one load when the 8 rows are consecutive. */
static inline __attribute__((always_inline)) v8 lane_load(const float *restrict values,
                                                          const int32_t vi[8], int n)
{
    if (n == 8) return ssk_v8_load(values + vi[0]);
    v8 m;
    for (int l = 0; l < 8; ++l) m[l] = values[vi[l]];
    return m;
}

static inline __attribute__((always_inline)) v8 lane_map(const float *restrict map, float k,
                                                         const int32_t vi[8], int n)
{
    if (!map) return V8(k);
    return V8(k) * lane_load(map, vi, n);
}

/* Rows of 4 floats (base + 4 index[l]) to 4 lane vectors. */
static inline __attribute__((always_inline)) void lane_rows4(const float *restrict base,
                                                             const int32_t index[8], v8 *c0,
                                                             v8 *c1, v8 *c2, v8 *c3)
{
    ssk_v4 r[8];
    for (int l = 0; l < 8; ++l) r[l] = ssk_v4_load(base + 4 * (size_t)index[l]);
    edges_transpose(r, c0, c1, c2, c3);
}

/* Vertices v0 .. v0 + n - 1 (n <= 8; lanes n.. repeat v0 and are
 * discarded). With write = 0 only the energy is accumulated. */
static inline __attribute__((always_inline)) void
spring_lanes8(const pass_args *restrict a, int64_t v0, int n, const int write,
              lane_acc *restrict acc)
{
    int32_t vi[8];
    const ssk_spring_edge *row[8];
    i8 degv;
    int32_t kmax = 0;
    for (int l = 0; l < 8; ++l) {
        vi[l] = (int32_t)(v0 + (l < n ? l : 0));
        const uint32_t first = a->offsets[vi[l]];
        row[l] = a->edges + first;
        degv[l] = l < n ? (int32_t)(a->offsets[vi[l] + 1] - first) : 0;
        kmax = degv[l] > kmax ? degv[l] : kmax;
    }
    v8 ci[8];
    gather_rec(ci, a->rec, vi);
    const v8 xi = ci[0], yi = ci[1], zi = ci[2], li = ci[3];
    const v8 uxi = ci[4], uyi = ci[5], uzi = ci[6];
    const v8 eps_len = V8(a->eps_len), eps_par = V8(a->eps_par);

    v8 fsx = V8(0.0f), fsy = V8(0.0f), fsz = V8(0.0f), es = V8(0.0f);
    v8 nsx = V8(0.0f), nsy = V8(0.0f), nsz = V8(0.0f); /* sum_j (v_j - v_i) */
    v8 sdl = V8(0.0f), el = V8(0.0f);
    v8 tx = V8(0.0f), ty = V8(0.0f), tz = V8(0.0f), twd = V8(0.0f), et = V8(0.0f);
    /* The k-th neighbor of each lane. */
    for (int32_t k = 0; k < kmax; ++k) {
        /* Lanes past their vertex's last edge read on into the next rows
         * (the edge array is padded by max_degree records) and are masked
         * off. */
        const i8 act = (i8){k, k, k, k, k, k, k, k} < degv;
        int32_t jj[8];
        v8 L0, D0, T0;
        {
            ssk_v4 r[8];
            for (int l = 0; l < 8; ++l) r[l] = ssk_v4_load((const float *)&row[l][k]);
            v8 J;
            edges_transpose(r, &L0, &D0, &T0, &J);
            memcpy(jj, &J, sizeof jj);
        }
        v8 cj[8];
        gather_rec(cj, a->rec, jj);
        /* F_s */
        const v8 dx = cj[0] - xi, dy = cj[1] - yi, dz = cj[2] - zi;
        const v8 L = v8_sqrt(dx * dx + dy * dy + dz * dz);
        const i8 okL = act & (L > eps_len);
        const v8 stretch = L - L0;
        const v8 cs = SEL(okL, stretch / SEL(okL, L, V8(1.0f)), V8(0.0f));
        fsx += cs * dx;
        fsy += cs * dy;
        fsz += cs * dz;
        es += SEL(act, stretch * stretch, V8(0.0f));
        /* F_d */
        nsx += SEL(act, dx, V8(0.0f));
        nsy += SEL(act, dy, V8(0.0f));
        nsz += SEL(act, dz, V8(0.0f));
        /* F_l */
        const v8 lj = cj[3];
        const v8 dl = (li - lj) - D0;
        sdl += SEL(act, dl, V8(0.0f));
        el += SEL(act, dl * dl, V8(0.0f));
        /* F_t */
        const v8 uxj = cj[4], uyj = cj[5], uzj = cj[6];
        const v8 cx = uyi * uzj - uzi * uyj;
        const v8 cy = uzi * uxj - uxi * uzj;
        const v8 cz = uxi * uyj - uyi * uxj;
        const v8 c = v8_sqrt(cx * cx + cy * cy + cz * cz);
        const v8 d = uxi * uxj + uyi * uyj + uzi * uzj;
        const v8 dtheta = v8_atan2(c, d) - T0;
        const i8 okT = act & (c > eps_par);
        const v8 m = SEL(li < lj, li, lj);
        const v8 lever = m * m / SEL(li > eps_len, li, V8(1.0f));
        const v8 w = SEL(okT, lever * dtheta / SEL(okT, c, V8(1.0f)), V8(0.0f));
        tx += w * uxj;
        ty += w * uyj;
        tz += w * uzj;
        twd += w * d;
        const i8 defined = act & (li > eps_len) & (lj > eps_len);
        et += SEL(defined, m * m * dtheta * dtheta, V8(0.0f));
    }

    const v8 ks = lane_map(a->maps[SSK_FORCE_SURFACE], a->k[SSK_FORCE_SURFACE], vi, n);
    const v8 kl = lane_map(a->maps[SSK_FORCE_LENGTH], a->k[SSK_FORCE_LENGTH], vi, n);
    const v8 kt = lane_map(a->maps[SSK_FORCE_TORSION], a->k[SSK_FORCE_TORSION], vi, n);
    const v8 kb = lane_map(a->maps[SSK_FORCE_BONE], a->k[SSK_FORCE_BONE], vi, n);
    /* Neighbor stiffness per edge k(i, j) = k / deg(i) (Eq. 21 leaves
     * k(i, j) free): the force on a vertex is the mean of its neighbors'
     * pulls, so the explicit update's stability does not depend on the
     * vertex degree (a pole of 32 triangles behaves like any vertex). */
    const i8 ones = {1, 1, 1, 1, 1, 1, 1, 1};
    const i8 no_edges = degv < ones;
    const v8 degf = __builtin_convertvector((no_edges & ones) | (~no_edges & degv), v8);
    const v8 inv_deg = SEL(no_edges, V8(0.0f), V8(1.0f) / degf);
    const v8 ksn = ks * inv_deg, cl = -(kl * inv_deg * sdl), ct = kt * inv_deg;
    i8 role;
    for (int l = 0; l < 8; ++l) role[l] = a->roles[vi[l]];
    /* F_d: none on a vertex without edges, nor inside an active surface
     * edit's region (its kinematic and passive vertices take the edit's
     * shape, 5.2, which the first stage's detail would resist) */
    const v8 kd = SEL(no_edges | (role != SSK_ROLE_FREE), V8(0.0f),
                      lane_map(a->maps[SSK_FORCE_DETAIL], a->k[SSK_FORCE_DETAIL], vi, n));
    v8 rx, ry, rz, rpad;
    lane_rows4(a->detail, vi, &rx, &ry, &rz, &rpad);
    rx = nsx * inv_deg + rx;
    ry = nsy * inv_deg + ry;
    rz = nsz * inv_deg + rz;
    v8 fx = ksn * fsx + cl * uxi + ct * (tx - twd * uxi) + kd * rx;
    v8 fy = ksn * fsy + cl * uyi + ct * (ty - twd * uyi) + kd * ry;
    v8 fz = ksn * fsz + cl * uzi + ct * (tz - twd * uzi) + kd * rz;
    v8 energy = V8(0.25f) * (ks * es + kl * el + kt * et) +
                V8(0.5f) * kd * (rx * rx + ry * ry + rz * rz);

    const i8 kinematic = role == SSK_ROLE_KINEMATIC, fixed = role == SSK_ROLE_STATIC;
    v8 bx, by, bz, bpad;
    lane_rows4(a->vertex_dir, vi, &bx, &by, &bz, &bpad);
    const v8 phi0 = lane_load(a->rest_bone_angle, vi, n);
    /* Algorithm 1: handle weight, then F_e, then F_b. */
    const v8 hw = SEL(kinematic, V8(SSK_SPRING_HANDLE_WEIGHT), V8(1.0f));
    fx *= hw;
    fy *= hw;
    fz *= hw;
    if (a->edit_target) {
        v8 gx, gy, gz, gk;
        lane_rows4(a->edit_target, vi, &gx, &gy, &gz, &gk);
        const v8 ex = gx - xi, ey = gy - yi, ez = gz - zi;
        fx += gk * ex;
        fy += gk * ey;
        fz += gk * ez;
        energy += V8(0.5f) * gk * (ex * ex + ey * ey + ez * ez);
    }
    {
        const v8 cphi = uxi * bx + uyi * by + uzi * bz;
        const v8 cx = uyi * bz - uzi * by;
        const v8 cy = uzi * bx - uxi * bz;
        const v8 cz = uxi * by - uyi * bx;
        const v8 sphi = v8_sqrt(cx * cx + cy * cy + cz * cz);
        const v8 dphi = v8_atan2(sphi, cphi) - phi0;
        const i8 ok = sphi > eps_par;
        const v8 cb = SEL(ok, kb * li * dphi / SEL(ok, sphi, V8(1.0f)), V8(0.0f));
        fx += cb * (bx - cphi * uxi);
        fy += cb * (by - cphi * uyi);
        fz += cb * (bz - cphi * uzi);
        energy += SEL(li > eps_len, V8(0.5f) * kb * (li * li) * (dphi * dphi), V8(0.0f));
    }
    if (a->twist) {
        /* F_a, the twist anchor (springskin.h SSK_FORCE_TWIST; "The twist
         * anchor" above); the GL step reads f_perp from its frame buffer,
         * computed with these operations by kernels_spring_detail.comp */
        const v8 ka = lane_map(a->maps[SSK_FORCE_TWIST], a->k[SSK_FORCE_TWIST], vi, n);
        v8 ax, ay, az, aw;
        lane_rows4(a->anchor, vi, &ax, &ay, &az, &aw);
        v8 gx, gy, gz;
        if (n == 8) {
            ssk_v8_load_xyz(a->first + 3 * v0, &gx, &gy, &gz);
        } else {
            for (int l = 0; l < 8; ++l) {
                const float *g = a->first + 3 * (size_t)vi[l];
                gx[l] = g[0];
                gy[l] = g[1];
                gz[l] = g[2];
            }
        }
        v8 fpx, fpy, fpz;
        twist_reference(&fpx, &fpy, &fpz, gx - ax, gy - ay, gz - az, bx, by, bz);
        const v8 du = uxi * bx + uyi * by + uzi * bz;
        const v8 upx = uxi - du * bx, upy = uyi - du * by, upz = uzi - du * bz;
        const v8 crx = fpy * upz - fpz * upy, cry = fpz * upx - fpx * upz,
                 crz = fpx * upy - fpy * upx;
        const v8 y = crx * bx + cry * by + crz * bz;
        const v8 xx = fpx * upx + fpy * upy + fpz * upz;
        const v8 ang = v8_atan2(SEL(y < V8(0.0f), -y, y), xx);
        const v8 psi = SEL(y < V8(0.0f), -ang, ang);
        const v8 lu2 = upx * upx + upy * upy + upz * upz;
        const v8 lf2 = fpx * fpx + fpy * fpy + fpz * fpz;
        const i8 ok = (v8_sqrt(lu2) > eps_par) & (v8_sqrt(lf2) > eps_len) & (li > eps_len);
        const v8 c = SEL(ok, -(ka * psi * li), V8(0.0f));
        fx += c * (by * upz - bz * upy);
        fy += c * (bz * upx - bx * upz);
        fz += c * (bx * upy - by * upx);
        energy += SEL(ok, V8(0.5f) * ka * (li * li) * lu2 * (psi * psi), V8(0.0f));
    }
    const i8 valid = (i8){0, 1, 2, 3, 4, 5, 6, 7} < (i8){n, n, n, n, n, n, n, n};
    acc->energy += __builtin_convertvector(SEL(valid, energy, V8(0.0f)), v8d);
    if (!write) return;

    fx = SEL(fixed, V8(0.0f), fx);
    fy = SEL(fixed, V8(0.0f), fy);
    fz = SEL(fixed, V8(0.0f), fz);
    if (a->ml_fused) ml_moments8(a, v0, n, role, degv, fx, fy, fz, li, uxi, uyi, uzi, acc);
    const v8 dt = V8(a->dt);
    /* the detail force's own term implicitly: the step of F / (1 + dt k_d) */
    const v8 pre = V8(1.0f) / (V8(1.0f) + dt * kd);
    const v8 px = fx * pre, py = fy * pre, pz = fz * pre;
    v8 mx, my, mz; /* the step */
    if (a->velocity) {
        v8 ux, uy, uz;
        for (int l = 0; l < 8; ++l) {
            const float *u = a->velocity + 3 * (size_t)vi[l];
            ux[l] = u[0];
            uy[l] = u[1];
            uz[l] = u[2];
        }
        const v8 kin = V8(0.5f) * (ux * ux + uy * uy + uz * uz);
        acc->kinetic += __builtin_convertvector(SEL(valid, kin, V8(0.0f)), v8d);
        const v8 keep = V8(a->keep);
        ux = SEL(fixed, V8(0.0f), keep * (ux + dt * px));
        uy = SEL(fixed, V8(0.0f), keep * (uy + dt * py));
        uz = SEL(fixed, V8(0.0f), keep * (uz + dt * pz));
        for (int l = 0; l < n; ++l) {
            float *u = a->velocity + 3 * (size_t)vi[l];
            u[0] = ux[l];
            u[1] = uy[l];
            u[2] = uz[l];
        }
        mx = dt * ux;
        my = dt * uy;
        mz = dt * uz;
    } else {
        mx = dt * px;
        my = dt * py;
        mz = dt * pz;
    }
    v8 nx = xi + mx, ny = yi + my, nz = zi + mz;
    if (a->prev) {
        /* Chebyshev: x_{k+1} = w (x^ - x_{k-1}) + x_{k-1}; the step is then
         * x_{k+1} - x_k (a static vertex: x^ = x_k = x_{k-1}, kept exactly) */
        v8 qx, qy, qz;
        if (n == 8) {
            ssk_v8_load_xyz(a->prev + 3 * v0, &qx, &qy, &qz);
        } else {
            qx = qy = qz = V8(0.0f);
            for (int l = 0; l < n; ++l) {
                const float *q = a->prev + 3 * (size_t)vi[l];
                qx[l] = q[0];
                qy[l] = q[1];
                qz[l] = q[2];
            }
        }
        const v8 om = V8(a->omega);
        nx = om * (nx - qx) + qx;
        ny = om * (ny - qy) + qy;
        nz = om * (nz - qz) + qz;
        mx = nx - xi;
        my = ny - yi;
        mz = nz - zi;
    }
    const v8 d2 = mx * mx + my * my + mz * mz;
    const v8 f2 = fx * fx + fy * fy + fz * fz;
    float *const out = a->step_out ? a->step_out : a->next;
    if (a->step_out) {
        nx = mx;
        ny = my;
        nz = mz;
    }
    if (n == 8) {
        ssk_v8_store_xyz(out + 3 * v0, nx, ny, nz);
    } else {
        for (int l = 0; l < n; ++l) {
            float *p = out + 3 * (size_t)vi[l];
            p[0] = nx[l];
            p[1] = ny[l];
            p[2] = nz[l];
        }
    }
    /* NaN and infinity fail both comparisons */
    acc->bad |= valid & ~((d2 < V8(INFINITY)) & (f2 < V8(INFINITY)));
    const v8 vd2 = SEL(valid, d2, V8(0.0f)), vf2 = SEL(valid, f2, V8(0.0f));
    acc->max_disp2 = SEL(vd2 > acc->max_disp2, vd2, acc->max_disp2);
    acc->max_force2 = SEL(vf2 > acc->max_force2, vf2, acc->max_force2);
}

SSK_TARGET_CLONES
static void spring_block(const pass_args *restrict a, int64_t begin, int64_t end, int write,
                         uint32_t chunk, pass_result *restrict res)
{
    lane_acc acc;
    memset(&acc, 0, sizeof acc);
    acc.ml_key = UINT32_MAX;
    if (a->ml_fused) {
        const ssk_spring_ml *ml = a->ml;
        acc.ml_buf = ml->partial + (size_t)ml->chunk_offset[chunk] * SSK_SPRING_ML_MOMENTS;
        acc.ml_base = ml->chunk_key[chunk];
        memset(acc.ml_buf, 0,
               (size_t)(ml->chunk_offset[chunk + 1] - ml->chunk_offset[chunk]) *
                   SSK_SPRING_ML_MOMENTS * sizeof(float));
    }
    int64_t v = begin;
    if (write) {
        for (; v + 8 <= end; v += 8) spring_lanes8(a, v, 8, 1, &acc);
        if (v < end) spring_lanes8(a, v, (int)(end - v), 1, &acc);
    } else {
        for (; v + 8 <= end; v += 8) spring_lanes8(a, v, 8, 0, &acc);
        if (v < end) spring_lanes8(a, v, (int)(end - v), 0, &acc);
    }
    if (acc.ml_buf) ml_flush(&acc);
    pass_result r = {0.0, 0.0, 0.0f, 0.0f, 0, 0.0f};
    for (int l = 0; l < 8; ++l) {
        r.energy += acc.energy[l];
        r.kinetic += acc.kinetic[l];
        r.max_disp2 = acc.max_disp2[l] > r.max_disp2 ? acc.max_disp2[l] : r.max_disp2;
        r.max_force2 = acc.max_force2[l] > r.max_force2 ? acc.max_force2[l] : r.max_force2;
        r.bad |= acc.bad[l] != 0;
    }
    *res = r;
}

static void force_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const pass_args *a = ctx;
    spring_block(a, begin, end, a->write, chunk, &a->chunk_results[chunk]);
}

/* One force pass over all vertices, in chunks (model/parallel.h) whose
 * reductions are summed in chunk order. */
static pass_result force_pass(pass_args *a, uint32_t nv, int write)
{
    a->write = write;
    ssk_parallel_for(nv, SSK_PARALLEL_GRAIN, force_chunk, a);
    pass_result out = {0.0, 0.0, 0.0f, 0.0f, 0, 0.0f};
    const uint32_t chunks = ssk_parallel_chunk_count(nv, SSK_PARALLEL_GRAIN);
    for (uint32_t c = 0; c < chunks; ++c) {
        const pass_result *r = &a->chunk_results[c];
        out.energy += r->energy;
        out.kinetic += r->kinetic;
        out.max_disp2 = r->max_disp2 > out.max_disp2 ? r->max_disp2 : out.max_disp2;
        out.max_force2 = r->max_force2 > out.max_force2 ? r->max_force2 : out.max_force2;
        out.bad |= r->bad;
    }
    return out;
}

/* The pre-pass on 8 vertices (ssk_spring_record on lanes, same
 * operations): the anchors are rows of 4 floats, transposed. */
static inline __attribute__((always_inline)) void
records_lanes8(float *restrict rec, const float *restrict x, const float *restrict anchor,
               int64_t v0, float eps)
{
    int32_t vi[8];
    for (int l = 0; l < 8; ++l) vi[l] = (int32_t)(v0 + l);
    v8 ax, ay, az, apad;
    lane_rows4(anchor, vi, &ax, &ay, &az, &apad);
    v8 px, py, pz;
    ssk_v8_load_xyz(x + 3 * v0, &px, &py, &pz);
    const v8 sx = px - ax, sy = py - ay, sz = pz - az;
    const v8 l = v8_sqrt(sx * sx + sy * sy + sz * sz);
    const i8 ok = (l > V8(eps)) & (apad > V8(0.0f));
    const v8 inv = SEL(ok, V8(1.0f) / SEL(ok, l, V8(1.0f)), V8(0.0f));
    v8 r[8] = {px, py, pz, l, sx * inv, sy * inv, sz * inv, V8(0.0f)};
    ssk_v8_transpose8(r);
    for (int k = 0; k < 8; ++k) ssk_v8_store(rec + 8 * (v0 + k), r[k]);
}

SSK_TARGET_CLONES
static void records_block(float *restrict rec, const float *restrict x,
                          const float *restrict anchor, int64_t begin, int64_t end, float eps)
{
    int64_t i = begin;
    for (; i + 8 <= end; i += 8) records_lanes8(rec, x, anchor, i, eps);
    for (; i < end; ++i) ssk_spring_record(rec + 8 * i, x + 3 * i, anchor + 4 * i, eps);
}

/* A per-row loop of the solver: the spring and one array. */
typedef struct rows_job {
    ssk_spring *sp;
    float *out;
    const float *in, *first;
    const ssk_attach_bone *bones;
    const uint8_t *roles;
} rows_job;

static void records_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const rows_job *j = ctx;
    (void)chunk;
    records_block(j->sp->rec, j->in, j->sp->anchor, begin, end, j->sp->length_epsilon);
}

/* The pre-pass: records of positions x (the frame's anchors). */
static void records(ssk_spring *sp, const float *x)
{
    rows_job j = {.sp = sp, .in = x};
    ssk_parallel_for(sp->vertex_count, SSK_PARALLEL_GRAIN, records_chunk, &j);
}

/* Weight of ROI r at `frame`: its keys linearly interpolated, clamped. */
static float roi_weight(const ssk_spring *sp, uint32_t r, double frame)
{
    const uint32_t count = sp->roi_key_count[r];
    if (count == 0) return 1.0f;
    const float *k = sp->roi_keys + 2 * (size_t)sp->roi_key_first[r];
    if (frame <= k[0]) return k[1];
    for (uint32_t i = 1; i < count; ++i)
        if (frame <= k[2 * i]) {
            const double u = (frame - k[2 * (i - 1)]) / ((double)k[2 * i] - k[2 * (i - 1)]);
            return (float)(k[2 * i - 1] + u * ((double)k[2 * i + 1] - k[2 * i - 1]));
        }
    return k[2 * count - 1];
}

/* Per-solve surface-edit state (spring.h): target_i, K_i of each
 * kinematic vertex from the posed bones, and the roles of the ROIs whose
 * weight is > 0 at `frame` (returned). */
static const uint8_t *edit_frame(ssk_spring *sp, const ssk_attach_bone *bones, double frame)
{
    float *g = sp->edit_target;
    for (uint32_t u = 0; u < sp->edit_unique_count; ++u)
        memset(g + 4 * (size_t)sp->edit_unique[u], 0, 4 * sizeof(float));
    const float ke = sp->params.stiffness[SSK_FORCE_EDIT];
    const float *map = sp->maps[SSK_FORCE_EDIT];
    bool all_active = true;
    for (uint32_t r = 0; r < sp->roi_count; ++r) all_active &= roi_weight(sp, r, frame) > 0.0f;
    for (uint32_t n = 0; n < sp->edit_entry_count; ++n) {
        const uint32_t v = sp->edit_vertex[n], r = sp->edit_roi[n];
        const float K =
            ke * sp->roi_stiffness[r] * roi_weight(sp, r, frame) * (map ? map[v] : 1.0f);
        if (!(K > 0.0f)) continue;
        const ssk_attach_bone *bone = &bones[sp->bones[v]];
        float a[3], s[3];
        ssk_am_attachment(a, bone, sp->t[v]);
        ssk_am_rotate(s, bone->rotation, sp->edit_vector + 3 * (size_t)n);
        float *gv = g + 4 * (size_t)v;
        for (int c = 0; c < 3; ++c) gv[c] += K * (a[c] + s[c]);
        gv[3] += K;
    }
    /* Sums -> the K-weighted mean target of each kinematic vertex. */
    for (uint32_t u = 0; u < sp->edit_unique_count; ++u) {
        float *gv = g + 4 * (size_t)sp->edit_unique[u];
        if (gv[3] > 0.0f)
            for (int c = 0; c < 3; ++c) gv[c] /= gv[3];
    }
    if (all_active) return sp->roles;
    uint8_t *roles = sp->frame_roles;
    memset(roles, SSK_ROLE_FREE, sp->vertex_count);
    for (uint32_t v = 0; v < sp->vertex_count; ++v) /* loose vertices: spring_rest.c */
        if (sp->offsets[v + 1] == sp->offsets[v]) roles[v] = SSK_ROLE_STATIC;
    for (uint32_t r = 0; r < sp->roi_count; ++r) {
        if (!(roi_weight(sp, r, frame) > 0.0f)) continue;
        const uint32_t first = sp->roi_member_first[r];
        for (uint32_t m = first; m < first + sp->roi_member_count[r]; ++m) {
            const uint32_t v = sp->roi_member_vertex[m];
            const uint8_t role = sp->roi_member_role[m];
            if (ssk_spring_role_rank(role) > ssk_spring_role_rank(roles[v])) roles[v] = role;
        }
    }
    return roles;
}

/* The normalized skin weight of influence j (of k) and its t on the
 * bone's rest segment, the terms of a per-weight anchor (spring.c
 * "Anchors"): ssk_spring_anchor_terms gives them to GPU backends, which
 * sum them as weights_anchor does. */
static inline float weights_sum(const float *weights, uint32_t k)
{
    float sum = 0.0f;
    for (uint32_t j = 0; j < k; ++j) sum += weights[j];
    return sum;
}

static inline float weights_t(const ssk_spring *sp, int32_t b, const float x[3])
{
    const float *rest = sp->rest_segment + 8 * (size_t)sp->bone_slot[b];
    return ssk_am_project_t_segment(rest, rest + 4, x);
}

/* The anchor a' (out[0..2]) and bone direction (dir[0..3]) of vertex i,
 * rest position x (rig space), from its skin weights (K influences) on
 * the posed `bones` (spring.c "Anchors"). */
static inline void weights_anchor(float *a, float *d, const ssk_spring *sp,
                                  const ssk_attach_bone *bones, const float x[3],
                                  const int32_t *idx, const float *weights, uint32_t k,
                                  uint32_t i)
{
    const float sum = weights_sum(weights, k);
    float acc[3] = {0.0f, 0.0f, 0.0f}, dir[3] = {0.0f, 0.0f, 0.0f}, best = -1.0f;
    int32_t dominant = sp->bones[i];
    if (!(sum > SSK_WEIGHT_EPSILON)) { /* no skin weight: the binding's attachment */
        ssk_am_attachment(acc, &bones[dominant], sp->t[i]);
        float u[4];
        ssk_spring_bone_direction(u, bones[dominant].head, bones[dominant].tail);
        memcpy(dir, u, 3 * sizeof(float));
    } else {
        for (uint32_t j = 0; j < k; ++j) {
            const float w = weights[j] / sum;
            if (!(w > 0.0f)) continue;
            const int32_t b = idx[j];
            float p[3];
            ssk_am_attachment(p, &bones[b], weights_t(sp, b, x));
            float u[4];
            ssk_spring_bone_direction(u, bones[b].head, bones[b].tail);
            for (int c = 0; c < 3; ++c) {
                acc[c] += w * p[c];
                dir[c] += w * u[c];
            }
            if (w > best) {
                best = w;
                dominant = b;
            }
        }
    }
    const float len = sqrtf(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    if (len > SSK_SPRING_DIRECTION_EPSILON) {
        for (int c = 0; c < 3; ++c) d[c] = dir[c] / len;
    } else { /* opposite bones cancel: the largest weight's bone */
        ssk_spring_bone_direction(d, bones[dominant].head, bones[dominant].tail);
    }
    d[3] = 0.0f;
    memcpy(a, acc, sizeof acc);
    a[3] = sp->scale_defined[i] ? 1.0f : 0.0f;
}

uint32_t ssk_spring_anchor_terms(const ssk_spring *sp, uint32_t i, ssk_spring_anchor_term *dst,
                                 uint32_t *count)
{
    const ssk_rig *rig = sp->weights_rig;
    dst[0].bone = sp->bones[i];
    dst[0].w = 1.0f;
    dst[0].t = sp->t[i];
    *count = 1;
    if (!rig) return SSK_SPRING_ANCHOR_BINDING;
    const ssk_mesh *mesh = NULL;
    for (uint32_t m = 0; m < rig->mesh_count && !mesh; ++m)
        if (i >= rig->meshes[m].first_vertex &&
            i - rig->meshes[m].first_vertex < rig->meshes[m].vertex_count)
            mesh = &rig->meshes[m];
    if (!mesh) return SSK_SPRING_ANCHOR_BINDING;
    const uint32_t k = mesh->influence_count, v = i - mesh->first_vertex;
    const int32_t *idx = mesh->bone_indices + (size_t)v * k;
    const float *weights = mesh->weights + (size_t)v * k;
    const float sum = weights_sum(weights, k);
    if (!(sum > SSK_WEIGHT_EPSILON)) return SSK_SPRING_ANCHOR_UNWEIGHTED;
    float x[3];
    ssk_mat4_transform_point(x, mesh->object_matrix, mesh->positions + 3 * (size_t)v);
    *count = 0;
    for (uint32_t j = 0; j < k; ++j) {
        const float w = weights[j] / sum;
        if (!(w > 0.0f)) continue;
        dst[*count].bone = idx[j];
        dst[*count].w = w;
        dst[*count].t = weights_t(sp, idx[j], x);
        ++*count;
    }
    return SSK_SPRING_ANCHOR_WEIGHTS;
}

/* Anchors of the binding's bone, rows [begin, end). */
static void binding_anchors_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const rows_job *j = ctx;
    (void)chunk;
    ssk_spring *sp = j->sp;
    const ssk_attach_bone *bones = j->bones;
    for (int64_t i = begin; i < end; ++i) {
        float *a = sp->anchor + 4 * i, *d = sp->vertex_dir + 4 * i;
        const ssk_attach_bone *bone = &bones[sp->bones[i]];
        ssk_am_attachment(a, bone, sp->t[i]);
        ssk_spring_bone_direction(d, bone->head, bone->tail);
        a[3] = sp->scale_defined[i] ? 1.0f : 0.0f;
    }
}

/* Anchors per skin weight, rows [begin, end) of one mesh. */
typedef struct mesh_anchors_job {
    ssk_spring *sp;
    const ssk_mesh *mesh;
    const ssk_attach_bone *bones;
} mesh_anchors_job;

static void weights_anchors_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const mesh_anchors_job *j = ctx;
    (void)chunk;
    ssk_spring *sp = j->sp;
    const ssk_mesh *mesh = j->mesh;
    const uint32_t k = mesh->influence_count;
    for (int64_t v = begin; v < end; ++v) {
        const uint32_t i = mesh->first_vertex + (uint32_t)v;
        float x[3];
        ssk_mat4_transform_point(x, mesh->object_matrix, mesh->positions + 3 * v);
        weights_anchor(sp->anchor + 4 * (size_t)i, sp->vertex_dir + 4 * (size_t)i, sp, j->bones,
                       x, mesh->bone_indices + (size_t)v * k, mesh->weights + (size_t)v * k, k,
                       i);
    }
}

void ssk_spring_anchors(ssk_spring *sp, const ssk_attach_bone *bones)
{
    const ssk_rig *rig = sp->weights_rig;
    if (!rig) { /* the binding's bone */
        rows_job j = {.sp = sp, .bones = bones};
        ssk_parallel_for(sp->vertex_count, SSK_PARALLEL_GRAIN, binding_anchors_chunk, &j);
        return;
    }
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        mesh_anchors_job j = {sp, &rig->meshes[m], bones};
        ssk_parallel_for(rig->meshes[m].vertex_count, SSK_PARALLEL_GRAIN, weights_anchors_chunk,
                         &j);
    }
}

const uint8_t *ssk_spring_prepare_edits(ssk_spring *sp, const ssk_attach_bone *bones,
                                        double frame)
{
    return sp->edit_target ? edit_frame(sp, bones, frame) : sp->roles;
}

const uint8_t *ssk_spring_prepare_frame(ssk_spring *sp, const ssk_attach_bone *bones,
                                        double frame)
{
    ssk_spring_anchors(sp, bones);
    return ssk_spring_prepare_edits(sp, bones, frame);
}

bool ssk_spring_differential(float *out, const float *skinning, const float *prev_skinning,
                             uint32_t bone_count)
{
    for (uint32_t b = 0; b < bone_count; ++b) {
        float inv[16];
        if (!ssk_mat4_invert(inv, prev_skinning + 16 * (size_t)b)) return false;
        ssk_mat4_mul(out + 16 * (size_t)b, skinning + 16 * (size_t)b, inv);
    }
    return true;
}

static void continue_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const rows_job *j = ctx;
    (void)chunk;
    const ssk_spring *sp = j->sp;
    for (int64_t i = begin; i < end; ++i) {
        if (j->roles[i] == SSK_ROLE_STATIC)
            memcpy(j->out + 3 * i, j->first + 3 * i, 3 * sizeof(float));
        else
            ssk_mat4_transform_point(j->out + 3 * i, sp->bone_inv + 16 * (size_t)sp->bones[i],
                                     sp->prev_output + 3 * i);
    }
}

/* Starting iterate of frame-dependent mode (6.1): each non-static vertex
 * is the previous output moved by its bone's differential transform
 * S_b(n) S_b(n-1)^-1. false when a previous matrix is singular. */
static bool continue_previous(ssk_spring *sp, float *x, const float *first_stage,
                              const float *skinning, const uint8_t *roles)
{
    if (!ssk_spring_differential(sp->bone_inv, skinning, sp->prev_skinning, sp->bone_count))
        return false;
    rows_job j = {.sp = sp, .out = x, .first = first_stage, .roles = roles};
    ssk_parallel_for(sp->vertex_count, SSK_PARALLEL_GRAIN, continue_chunk, &j);
    return true;
}

static void detail_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const rows_job *j = ctx;
    (void)chunk;
    for (int64_t i = begin; i < end; ++i)
        ssk_spring_detail_row(j->sp->detail + 4 * i, j->first, j->sp->offsets, j->sp->edges,
                              (uint32_t)i);
}

void ssk_spring_detail(ssk_spring *sp, const float *first)
{
    rows_job j = {.sp = sp, .first = first};
    ssk_parallel_for(sp->vertex_count, SSK_PARALLEL_GRAIN, detail_chunk, &j);
}

/* cluster by cluster (a few per mesh, each read before it is written;
 * the clusters share no row) */
void ssk_spring_clusters_apply(const ssk_spring *sp, float *result, const float *first,
                               const uint8_t *roles)
{
    const uint32_t *w = sp->cluster_words;
    for (uint32_t block = 0; block < sp->cluster_word_count; block += 1 + w[block]) {
        float mean[3];
        if (!ssk_spring_cluster_mean(mean, w + block, result, first, roles)) continue;
        for (uint32_t k = 1; k <= w[block]; ++k) {
            const uint32_t m = w[block + k];
            if (roles[m] == SSK_ROLE_STATIC) continue;
            for (int c = 0; c < 3; ++c)
                result[3 * (size_t)m + c] = first[3 * (size_t)m + c] + mean[c];
        }
    }
}

static void fill_args(pass_args *a, ssk_spring *sp, const uint8_t *roles)
{
    memset(a, 0, sizeof *a);
    a->offsets = sp->offsets;
    a->edges = sp->edges;
    a->rest_bone_angle = sp->rest_bone_angle;
    a->roles = roles;
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) {
        a->maps[f] = sp->maps[f];
        a->k[f] = sp->params.stiffness[f];
    }
    a->rec = sp->rec;
    a->vertex_dir = sp->vertex_dir;
    a->edit_target = sp->edit_target;
    a->detail = sp->detail;
    a->anchor = sp->anchor;
    a->twist = sp->params.stiffness[SSK_FORCE_TWIST] > 0.0f;
    a->velocity = sp->velocity;
    a->dt = sp->params.dt;
    a->keep = 1.0f - sp->params.damping;
    a->eps_len = sp->length_epsilon;
    a->eps_par = SSK_SPRING_PARALLEL_EPSILON;
    a->ml = sp->ml;
    a->t = sp->t;
    a->bones = sp->bones;
    a->chunk_results = sp->chunk_results;
}

void ssk_spring_watch_begin(ssk_spring_watch *w)
{
    memset(w, 0, sizeof *w);
    w->good_energy = INFINITY;
    w->omega = 1.0;
}

_Static_assert(SSK_SPRING_CHEBYSHEV_WARMUP >= SSK_SPRING_DIVERGENCE_WINDOW,
               "a restart's plain passes decide divergence");

float ssk_spring_watch_omega(ssk_spring_watch *w, const ssk_spring *sp, uint32_t k)
{
    const double rho = sp->params.chebyshev_rho;
    /* a multilevel solve's first run starts sooner; a restart (accel_start
     * > 0) warms up long enough to decide divergence */
    const uint32_t warmup = w->accel_start == 0 && sp->params.multilevel
                                ? SSK_SPRING_ML_CHEBYSHEV_WARMUP
                                : SSK_SPRING_CHEBYSHEV_WARMUP;
    if (!(rho > 0.0) || k <= w->accel_start + warmup) {
        w->omega = 1.0;
    } else {
        const double r2 = rho * rho;
        w->omega = w->omega == 1.0 ? 2.0 / (2.0 - r2) : 4.0 / (4.0 - r2 * w->omega);
    }
    return (float)w->omega;
}

/* The relative scheme's contraction: the mean over `span` passes whose
 * moves went from `oldest` to `newest`, at least
 * SSK_SPRING_RELATIVE_CONTRACTION_FLOOR. */
static float mean_contraction(float newest, float oldest, uint32_t span)
{
    const float q = powf(newest / oldest, 1.0f / (float)span);
    return q > SSK_SPRING_RELATIVE_CONTRACTION_FLOOR ? q : SSK_SPRING_RELATIVE_CONTRACTION_FLOOR;
}

unsigned ssk_spring_watch_pass(ssk_spring_watch *w, const ssk_spring *sp, uint32_t k,
                               const ssk_spring_pass *r)
{
    const ssk_spring_params *p = &sp->params;
    const double e = r->energy + r->kinetic;
    const float disp = sqrtf(r->max_disp2), force = sqrtf(r->max_force2);
    w->iterations = k;
    if (!isfinite(e) || r->bad) {
        /* x_{k-1} (energy e) is finite when only the step was bad. */
        w->diverged = 1;
        w->why = SSK_SPRING_WHY_NONFINITE;
        if (isfinite(e) && e <= w->good_energy) {
            w->result = SSK_SPRING_PICK_CURRENT;
            w->result_energy = r->energy;
        } else if (k >= 2 && w->e_prev <= w->good_energy) {
            w->result = SSK_SPRING_PICK_PREVIOUS;
            w->result_energy = w->epot_prev;
        } else if (w->has_good) {
            w->result = SSK_SPRING_PICK_GOOD;
            w->result_energy = w->good_energy;
        } else {
            w->result = SSK_SPRING_PICK_FIRST_STAGE; /* finite */
            w->energy_known = 0;
            return SSK_SPRING_DONE;
        }
        w->energy_known = 1;
        w->residual = w->disp_prev;
        return SSK_SPRING_DONE;
    }
    unsigned actions = 0;
    if (k >= 2) {
        /* an unstable mode grows both; a converging non-gradient drift
         * raises the energy while its steps shrink */
        const bool grew =
            e > w->e_prev + SSK_SPRING_GROWTH_TOLERANCE * fabs(w->e_prev) && disp > w->disp_prev;
        if (p->convergence == SSK_CONVERGE_ENERGY && e >= w->e_prev) {
            w->result = SSK_SPRING_PICK_PREVIOUS;
            w->result_energy = w->epot_prev;
            w->energy_known = 1;
            w->converged = 1;
            w->residual = w->disp_prev;
            /* the velocities belong to a later iterate */
            return SSK_SPRING_ZERO_VELOCITY | SSK_SPRING_DONE;
        }
        if (grew) {
            if (w->streak == 0 && w->e_prev < w->good_energy) {
                actions |= SSK_SPRING_SAVE_GOOD; /* x_{k-2}: a local minimum */
                w->good_energy = w->e_prev;
                w->has_good = 1;
            }
            if (w->omega != 1.0 && w->streak + 1 >= SSK_SPRING_DIVERGENCE_WINDOW) {
                /* an accelerated run that keeps growing: restart with plain
                 * passes (a warm-up) before calling it divergence, which
                 * those plain passes then decide by the rule above */
                w->accel_start = k;
                w->omega = 1.0;
                w->streak = 0;
            } else if (++w->streak >= SSK_SPRING_DIVERGENCE_WINDOW) {
                w->diverged = 1;
                w->why = SSK_SPRING_WHY_GREW;
                w->result = SSK_SPRING_PICK_GOOD;
                w->result_energy = w->good_energy;
                w->energy_known = 1;
                w->residual = disp;
                return actions | SSK_SPRING_DONE;
            }
        } else {
            w->streak = 0;
        }
    }
    if (p->convergence == SSK_CONVERGE_RELATIVE) {
        /* the distance left, bounded by the remaining moves' geometric
         * series at the slowest of the last SSK_SPRING_RELATIVE_WINDOW
         * contractions; none yet in the first passes, nor while the moves
         * do not shrink */
        float left = INFINITY;
        enum { W = SSK_SPRING_RELATIVE_WINDOW };
        const bool noise = disp <= sp->negligible;
        if (noise && k == 1) {
            /* a first move at the rounding of the positions: the start is
             * the equilibrium (the rest pose) */
            left = disp;
        } else if (noise) {
            /* a move lost in the rounding: the last contraction measured
             * goes on (the noise's own ratios mean nothing); an iteration
             * that was contracting slowly has stalled, not converged */
            if (isfinite(w->left_prev) && w->q_prev > 0.0f) {
                left = w->q_prev * w->left_prev;
            } else if (w->kept > 0) {
                /* reached before a full window: the mean contraction since
                 * the oldest move kept (the noise moves are not kept) */
                const uint32_t span = w->kept < W ? w->kept : W;
                const float oldest = span >= 2 ? w->disp_before[span - 2] : w->disp_prev;
                if (oldest > 0.0f) {
                    const float q = mean_contraction(disp, oldest, span);
                    if (q < 1.0f) {
                        left = disp * q / (1.0f - q);
                        w->q_prev = q;
                    }
                }
            }
        } else if (k > W && w->disp_before[W - 2] > 0.0f) {
            /* the mean contraction over the window: m_k / m_{k-W} = q^W */
            const float q = mean_contraction(disp, w->disp_before[W - 2], W);
            if (q < 1.0f) {
                left = disp * q / (1.0f - q);
                /* the distance shrinks by at most q a pass: a move that
                 * drops faster (an accelerated pass's jump) does not bring
                 * the estimate down faster */
                if (isfinite(w->left_prev) && q * w->left_prev > left) left = q * w->left_prev;
                w->q_prev = q;
            } else if (isfinite(w->left_prev) && w->left_prev > 0.0f) {
                /* a move that grew: no contraction to go by, but the
                 * distance grew by at most the move (the triangle
                 * inequality) */
                left = w->left_prev + disp;
            }
        }
        /* the multigrid's residual: a stall cannot pass for convergence;
         * a step within an ulp of the largest coordinate is the map's own
         * rounding (the float forces at float positions), which no pass
         * reduces */
        if (r->max_step2 > 0.0f &&
            sqrtf(r->max_step2) > sp->negligible / SSK_SPRING_RELATIVE_NEGLIGIBLE_ULPS) {
            const float floor = SSK_SPRING_MG_RESIDUAL_FACTOR * sqrtf(r->max_step2);
            left = left > floor ? left : floor;
        }
        w->left_prev = left;
        w->residual = left;
        if (left < sp->threshold) {
            w->result = SSK_SPRING_PICK_NEXT;
            w->converged = 1;
            return actions | SSK_SPRING_DONE;
        }
        if (!noise) {
            for (int j = W - 1; j > 0; --j) w->disp_before[j] = w->disp_before[j - 1];
            w->disp_before[0] = w->disp_prev;
            w->disp_prev = disp;
            ++w->kept;
        }
        w->e_prev = e;
        w->epot_prev = r->energy;
        return actions;
    }
    if ((p->convergence == SSK_CONVERGE_DISPLACEMENT && disp < sp->threshold) ||
        (p->convergence == SSK_CONVERGE_FORCE && force < sp->threshold)) {
        w->result = SSK_SPRING_PICK_NEXT;
        w->converged = 1;
        w->residual = p->convergence == SSK_CONVERGE_FORCE ? force : disp;
        return actions | SSK_SPRING_DONE;
    }
    w->residual = p->convergence == SSK_CONVERGE_FORCE ? force : disp;
    w->disp_prev = disp;
    w->e_prev = e;
    w->epot_prev = r->energy;
    return actions;
}

void ssk_spring_watch_end(ssk_spring_watch *w, const ssk_spring *sp)
{
    if (w->result != SSK_SPRING_PICK_NONE) return;
    /* max_iterations without meeting the scheme */
    w->iterations = sp->params.max_iterations;
    w->result = SSK_SPRING_PICK_CURRENT;
    w->converged = sp->params.convergence == SSK_CONVERGE_ITERATIONS;
}

ssk_status ssk_spring_watch_finish(const ssk_spring_watch *w, const ssk_spring *sp,
                                   ssk_spring_report *report, ssk_error *err)
{
    const ssk_spring_params *p = &sp->params;
    if (report) {
        report->iterations = w->iterations;
        report->residual = w->residual;
        report->energy = w->result_energy;
        report->converged = w->converged ? 1 : 0;
    }
    if (!w->diverged) return ssk_error_ok(err);
    return ssk_error_set(
        err, SSK_ERROR_SPRING_DIVERGED,
        "spring solve diverged at iteration %u (%s) with dt = %.4g, k_s = %g, k_l = %g, "
        "k_t = %g, k_b = %g, k_e = %g (%s integrator%s): lower dt or the stiffnesses; the "
        "positions hold the last good iterate",
        w->iterations, w->why, (double)p->dt, (double)p->stiffness[SSK_FORCE_SURFACE],
        (double)p->stiffness[SSK_FORCE_LENGTH], (double)p->stiffness[SSK_FORCE_TORSION],
        (double)p->stiffness[SSK_FORCE_BONE], (double)p->stiffness[SSK_FORCE_EDIT],
        p->integrator == SSK_SPRING_EXPLICIT ? "explicit" : "semi-implicit",
        p->integrator == SSK_SPRING_SEMI_IMPLICIT ? ", or raise the damping" : "");
}

/* One plain pass from x into next (no blend, no velocity): next = x + g
 * (sp->rec already holds x's records when have_records). */
static pass_result plain_step(ssk_spring *sp, pass_args *a, float *next, const float *x,
                              bool have_records)
{
    if (!have_records) records(sp, x);
    a->next = next;
    a->omega = 1.0f;
    a->prev = NULL;
    return force_pass(a, sp->vertex_count, 1);
}

/* The largest eigenvalue of the multilevel pass's linear operator B A at
 * x0 (g0 its plain step), by power iteration from a fixed pseudo-random
 * displacement: v <- (the corrected step at x0 + v) - (that at x0). */
static float ml_lambda(ssk_spring *sp, pass_args *a, const float *x0, const float *g0, float *v,
                       float *y, float *g, const uint8_t *roles)
{
    const uint32_t nv = sp->vertex_count;
    const size_t n3 = 3 * (size_t)nv;
    ssk_spring_fixed_noise(v, n3);
    float lambda = 0.0f;
    for (uint32_t it = 0; it < SSK_SPRING_ML_POWER_ITERATIONS; ++it) {
        double norm = 0.0;
        for (size_t k = 0; k < n3; ++k) norm += (double)v[k] * v[k];
        const float scale = norm > 0.0 ? sp->ml->probe / (float)sqrt(norm / nv) : 0.0f;
        const int64_t n = (int64_t)n3;
        /* the element-wise loops and the sums serial (the same theta, bit
         * for bit, whatever the thread count) */
        for (int64_t k = 0; k < n; ++k) y[k] = x0[k] + scale * v[k];
        plain_step(sp, a, g, y, false);
        /* next = x0 + (step at y - step at x0): the linear response */
        for (int64_t k = 0; k < n; ++k) g[k] = x0[k] + ((g[k] - y[k]) - (g0[k] - x0[k]));
        ssk_spring_ml_correct(sp->ml, sp, g, x0, NULL, 1.0f, roles, NULL, false);
        double out = 0.0;
        for (size_t k = 0; k < n3; ++k) {
            v[k] = -(g[k] - x0[k]);
            out += (double)v[k] * v[k];
        }
        lambda = norm > 0.0 ? (float)(sqrt(out / nv) / (double)sp->ml->probe) : 0.0f;
    }
    return lambda;
}

ssk_status ssk_spring_multilevel_probe(ssk_spring *sp, const float *rest,
                                       const ssk_attach_bone *rest_bones, ssk_error *err)
{
    const uint32_t nv = sp->vertex_count;
    ssk_spring_ml *ml = ssk_spring_ml_create(sp, rest, rest_bones);
    const size_t bytes = 3 * (size_t)nv * sizeof(float);
    float *x0 = malloc(bytes + 1), *g0 = malloc(bytes + 1), *probe = malloc(bytes + 1),
          *g = malloc(bytes + 1);
    /* every vertex free: the surface edits (off at rest) change neither
     * the forces nor, so, the curvatures, and a spring with edits whose
     * weights are 0 solves bit for bit as one without */
    uint8_t *free_roles = calloc((size_t)nv + 8, 1);
    float *blocks = NULL, *own = NULL, *scratch = NULL;
    if (!ml || !x0 || !g0 || !probe || !g || !free_roles) goto fail;
    sp->ml = ml;
    memcpy(x0, rest, bytes);
    ssk_spring_anchors(sp, rest_bones);
    ssk_spring_ml_frame(ml, sp, rest_bones);
    ssk_spring_detail(sp, x0);
    pass_args a;
    fill_args(&a, sp, free_roles);
    a.first = x0;
    a.velocity = NULL;
    plain_step(sp, &a, g0, x0, false);
    const size_t M = SSK_SPRING_ML_MODES;
    blocks = calloc((size_t)ml->node_count * M * M + 1, sizeof(float));
    own = calloc((size_t)ml->node_count * M + 1, sizeof(float));
    scratch = malloc(((size_t)ml->chunk_count * ml->node_count * (M + 1) + 1) * sizeof(float));
    if (!blocks || !own || !scratch) goto fail;
    for (uint32_t l = 0; l < ml->levels; ++l)
        for (uint32_t m = 0; m < SSK_SPRING_ML_MODES; ++m)
            for (uint32_t c = 0; c < ml->color_count[l]; ++c) {
                if (!ssk_spring_ml_probe_set(ml, sp, probe, x0, free_roles, l, m, c)) continue;
                plain_step(sp, &a, g, probe, false);
                /* steps: g - probe and g0 - x0 */
                const int64_t n3 = 3 * (int64_t)nv;
                for (int64_t k = 0; k < n3; ++k) g[k] -= probe[k] - x0[k];
                ssk_spring_ml_probe_read(ml, sp, blocks, own, scratch, g, g0, x0, free_roles, l,
                                         m, c);
            }
    ssk_spring_ml_invert(ml, blocks, own, ml->node_weight);
    free(blocks);
    free(own);
    free(scratch);
    blocks = own = scratch = NULL;
    /* the solve's layout: the active nodes only (spring.h "Two layouts") */
    if (!ssk_spring_ml_compact(ml, sp)) goto fail;
    /* theta: the coarse steps' scale that keeps B A's largest eigenvalue
     * below SSK_SPRING_ML_LAMBDA_TARGET */
    ml->theta = 0.0f;
    const float plain = ml_lambda(sp, &a, x0, g0, probe, sp->good, g, free_roles);
    ml->theta = 1.0f;
    float full = ml_lambda(sp, &a, x0, g0, probe, sp->good, g, free_roles);
    for (int tries = 0; full > SSK_SPRING_ML_LAMBDA_TARGET && tries < 8; ++tries) {
        const float want = full > plain && SSK_SPRING_ML_LAMBDA_TARGET > plain
                               ? ml->theta * (SSK_SPRING_ML_LAMBDA_TARGET - plain) / (full - plain)
                               : 0.5f * ml->theta;
        ml->theta = want < 0.9f * ml->theta ? want : 0.9f * ml->theta;
        full = ml_lambda(sp, &a, x0, g0, probe, sp->good, g, free_roles);
    }
    free(free_roles);
    free(x0);
    free(g0);
    free(probe);
    free(g);
    sp->bytes += ssk_spring_ml_bytes(ml, sp->bone_count, sp->vertex_count);
    return ssk_error_ok(err);

fail:
    free(blocks);
    free(own);
    free(scratch);
    free(free_roles);
    free(x0);
    free(g0);
    free(probe);
    free(g);
    ssk_spring_ml_destroy(ml);
    sp->ml = NULL;
    return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
}


ssk_status ssk_spring_multigrid_probe(ssk_spring *sp, const float *rest,
                                      const ssk_attach_bone *rest_bones, ssk_error *err)
{
    const uint32_t nv = sp->vertex_count;
    const size_t n3 = 3 * (size_t)nv, bytes = n3 * sizeof(float);
    ssk_spring_mg *mg = ssk_spring_mg_begin(sp);
    float *x0 = malloc(bytes + 1), *g0 = malloc(bytes + 1), *probe = malloc(bytes + 1),
          *g = malloc(bytes + 1);
    uint32_t *color = malloc(((size_t)nv + 1) * sizeof(uint32_t));
    /* every vertex free, as the multilevel probe (above) */
    uint8_t *free_roles = calloc((size_t)nv + 8, 1);
    if (!mg || !x0 || !g0 || !probe || !g || !color || !free_roles) goto fail;
    memcpy(x0, rest, bytes);
    ssk_spring_anchors(sp, rest_bones);
    ssk_spring_detail(sp, x0);
    pass_args a;
    fill_args(&a, sp, free_roles);
    a.first = x0;
    a.velocity = NULL;
    /* the detail force's Jacobian is known exactly (below); the probes
     * measure the other forces alone, whose changes are not buried under
     * its large, cancelling terms */
    a.k[SSK_FORCE_DETAIL] = 0.0f;
    a.maps[SSK_FORCE_DETAIL] = NULL;
    plain_step(sp, &a, g0, x0, false);
    const uint32_t colors = ssk_spring_mg_colors(sp, color);
    if (nv && !colors) goto fail;
    /* one probe length for every vertex, a fraction of the mean rest edge:
     * long enough that float positions resolve the change of the forces
     * (a fraction of a sliver's edge would not), short enough to stay in
     * their linear range elsewhere */
    double edge_sum = 0.0;
    for (uint32_t e = 0; e < sp->edge_count; ++e) edge_sum += sp->edges[e].rest_length;
    const float mean_edge = sp->edge_count ? (float)(edge_sum / sp->edge_count) : 1.0f;
    float *amplitude = malloc(((size_t)nv + 1) * sizeof(float));
    if (!amplitude) goto fail;
    for (uint32_t c = 0; c < colors; ++c)
        for (uint32_t axis = 0; axis < 3; ++axis) {
            memcpy(probe, x0, bytes);
            for (uint32_t i = 0; i < nv; ++i)
                if (color[i] == c) {
                    float *p = probe + 3 * (size_t)i + axis;
                    *p += SSK_SPRING_MG_PROBE_FRACTION * mean_edge;
                    /* the displacement as rounded (exact: Sterbenz), not
                     * the one asked for: a 0.2% error of the asked one
                     * would be of the order of the weak anchoring terms
                     * once the translation-invariant forces cancel */
                    amplitude[i] = *p - x0[3 * (size_t)i + axis];
                }
            plain_step(sp, &a, g, probe, false);
            for (uint32_t i = 0; i < nv; ++i) {
                const float q = 1.0f / sp->params.dt; /* the step is dt F without k_d */
                for (int k = 0; k < 3; ++k) {
                    const size_t at = 3 * (size_t)i + k;
                    g[at] = ((g[at] - probe[at]) - (g0[at] - x0[at])) * q;
                }
            }
            ssk_spring_mg_probe_read(mg, sp, color, c, axis, g, amplitude);
        }
    free(amplitude);
    /* + the detail force's Jacobian: F_d,i = k_d,i (mean_j x_j - x_i + ...)
     * over the row's directed edges (spring.c "The detail force") */
    ssk_spring_mg_add_detail(mg, sp, free_roles);
    mg->chunk_max = malloc(((size_t)ssk_parallel_chunk_count(nv, SSK_PARALLEL_GRAIN) + 1) *
                           sizeof(float));
    if (!mg->chunk_max || !ssk_spring_mg_finish(mg, sp) || !ssk_spring_mg_anderson_alloc(mg, sp))
        goto fail;
    mg->theta = 1.0f;
    sp->mg = mg;
    sp->bytes += mg->bytes + bytes;
    mg = NULL;
fail:
    free(free_roles);
    free(color);
    free(x0);
    free(g0);
    free(probe);
    free(g);
    if (!mg && sp->mg) return ssk_error_ok(err);
    ssk_spring_mg_destroy(mg);
    return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
}

typedef struct mg_rows_job {
    const ssk_spring *sp;
    const uint8_t *roles;
    float *next, *step, *chunk_max;
    const float *cur, *prev;
    float omega;
} mg_rows_job;

/* next = cur + step, blended with prev (omega != 1); the chunk's largest
 * squared move (NaN when one is) */
static void mg_result_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const mg_rows_job *j = ctx;
    float md = 0.0f;
    for (int64_t i = begin; i < end; ++i) {
        float d2 = 0.0f;
        for (int k = 0; k < 3; ++k) {
            const size_t at = 3 * (size_t)i + k;
            float x = j->cur[at] + j->step[at];
            if (j->omega != 1.0f) x = j->omega * (x - j->prev[at]) + j->prev[at];
            j->next[at] = x;
            const float d = x - j->cur[at];
            d2 += d * d;
        }
        if (!(d2 <= md)) md = isnan(d2) ? NAN : (isnan(md) ? md : d2);
    }
    j->chunk_max[chunk] = md;
}

ssk_spring_pass ssk_spring_mg_pass_finish(ssk_spring *sp, float *next, const float *cur,
                                          const float *prev, float omega, const uint8_t *roles,
                                          ssk_spring_pass r)
{
    const uint32_t nv = sp->vertex_count;
    ssk_spring_mg *mg = sp->mg;
    mg_rows_job j = {sp, roles, next, mg->b[0], mg->chunk_max, cur, prev, omega};
    float *step = mg->b[0];
    /* the corrected step's largest square: the preconditioned residual,
     * which the relative scheme reads */
    const float corrected = ssk_spring_mg_correct(mg, sp, step, roles);
    const float ms = sp->params.convergence == SSK_CONVERGE_RELATIVE ? corrected : 0.0f;
    /* Anderson acceleration of the corrected passes: what the rest-pose
     * model gets wrong in a pose is left for the last passes, which a fit
     * over the last few steps removes (60k body, frame 6: 3.8e-4 from the
     * equilibrium after 10 passes without, 1.6e-5 with) */
    ssk_spring_mg_anderson(mg, sp, cur, step);
    ssk_parallel_for(nv, SSK_PARALLEL_GRAIN, mg_result_chunk, &j);
    const float md = ssk_spring_mg_chunks_max(mg, nv);
    r.max_disp2 = md;
    r.max_step2 = ms;
    if (isnan(md) || isinf(md) || isnan(ms) || isinf(ms)) r.bad = 1;
    /* the correction was made for the rest pose: where a pose makes it
     * overshoot, the moves grow; halve it then (as the per-bone levels
     * do, ssk_spring_ml_watch); moves at the rounding of the positions
     * grow and shrink at random, and do not count */
    if (md > mg->move_prev && omega == 1.0f && md > sp->negligible * sp->negligible) {
        if (++mg->growth >= SSK_SPRING_MG_GROWTH_WINDOW) {
            mg->theta *= 0.5f;
            mg->growth = 0;
        }
    } else {
        mg->growth = 0;
    }
    mg->move_prev = md;
    return r;
}

void ssk_spring_mg_solve_begin(ssk_spring_mg *mg)
{
    mg->theta = 1.0f;
    mg->aa_count = mg->aa_next = 0;
    mg->aa_started = 0;
    mg->growth = 0;
    mg->move_prev = INFINITY;
}

/* One multigrid pass (spring_multigrid.c) from cur into next: the plain
 * step g into mg->b[0], then ssk_spring_mg_pass_finish. */
static pass_result multigrid_pass(ssk_spring *sp, pass_args *a, float *next, const float *cur,
                                  const float *prev, float omega, const uint8_t *roles)
{
    /* the plain step g itself (next - cur would round it to the positions'
     * ulps: on the 241k body, 8 ulps are a tenth of the tolerance, and the
     * Anderson fit of such steps stagnated) */
    a->step_out = sp->mg->b[0];
    const pass_result r = plain_step(sp, a, next, cur, false);
    a->step_out = NULL;
    return ssk_spring_mg_pass_finish(sp, next, cur, prev, omega, roles, r);
}

ssk_status ssk_spring_solve(ssk_spring *sp, float *positions, const ssk_attach_bone *bones,
                            const float *skinning, double frame, ssk_spring_report *report,
                            ssk_error *err)
{
    if (report) memset(report, 0, sizeof *report);
    if (!sp || !positions || (!bones && sp->bone_count > 0))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_spring_solve: NULL argument");
    const uint32_t nv = sp->vertex_count, nb = sp->bone_count;
    const ssk_spring_params *p = &sp->params;
    sp->last_before = sp->last_after = NULL; /* this solve's, once a pass ran */
    for (uint32_t i = 0; i < nv; ++i)
        if (!(isfinite(positions[3 * (size_t)i]) && isfinite(positions[3 * (size_t)i + 1]) &&
              isfinite(positions[3 * (size_t)i + 2])))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "spring solve: first-stage position of vertex %u is not finite",
                                 i);

    const uint8_t *roles = ssk_spring_prepare_frame(sp, bones, frame);

    /* Starting iterate. */
    float *px = sp->pos[0], *cx = sp->pos[1], *nx = sp->pos[2];
    const size_t bytes = 3 * (size_t)nv * sizeof(float);
    bool continued = false;
    if (ssk_spring_continues(p, sp->has_prev, sp->prev_frame, skinning, frame))
        continued = continue_previous(sp, cx, positions, skinning, roles);
    if (!continued) memcpy(cx, positions, bytes);
    if (sp->velocity && !continued) memset(sp->velocity, 0, bytes);
    /* static vertices keep the first stage in every buffer */
    memcpy(nx, cx, bytes);
    memcpy(px, cx, bytes);

    ssk_spring_detail(sp, positions);
    pass_args a;
    fill_args(&a, sp, roles);
    a.first = positions; /* the first stage until the result is copied back */
    ssk_spring_watch w;
    ssk_spring_watch_begin(&w);
    ssk_spring_ml_moves ml_moves;
    if (sp->mg) ssk_spring_mg_solve_begin(sp->mg);
    if (sp->ml) {
        ssk_spring_ml_frame(sp->ml, sp, bones);
        ssk_spring_ml_watch_begin(sp->ml, &ml_moves);
    }
    for (uint32_t k = 1; k <= p->max_iterations; ++k) {
        pass_result r;
        if (sp->mg) {
            const float omega = ssk_spring_watch_omega(&w, sp, k);
            r = multigrid_pass(sp, &a, nx, cx, px, omega, roles);
        } else if (sp->ml) {
            const float omega = ssk_spring_watch_omega(&w, sp, k);
            /* the restriction runs inside the force pass (ml_moments8) */
            a.ml_fused = 1;
            r = plain_step(sp, &a, nx, cx, k > 1);
            a.ml_fused = 0;
            /* the records of the result come with the correction: the
             * next pass's pre-pass (k > 1 above) */
            const float md =
                ssk_spring_ml_correct(sp->ml, sp, nx, cx, px, omega, roles, sp->rec, true);
            /* a move that grows over SSK_SPRING_ML_GROWTH_WINDOW passes, or
             * no smaller one in SSK_SPRING_ML_STALL_WINDOW: the coarse steps
             * overshoot in this pose; halve them */
            ssk_spring_ml_watch(sp->ml, md, &ml_moves);
            r.max_disp2 = md;
            if (isnan(md)) r.bad = 1;
        } else {
            records(sp, cx);
            a.next = nx;
            a.omega = ssk_spring_watch_omega(&w, sp, k);
            a.prev = a.omega != 1.0f ? px : NULL;
            r = force_pass(&a, nv, 1);
        }
        sp->last_before = cx;
        sp->last_after = nx;
        const unsigned act = ssk_spring_watch_pass(&w, sp, k, &r);
        if (act & SSK_SPRING_SAVE_GOOD) memcpy(sp->good, px, bytes);
        if ((act & SSK_SPRING_ZERO_VELOCITY) && sp->velocity) memset(sp->velocity, 0, bytes);
        if (act & SSK_SPRING_DONE) break;
        float *old = px;
        px = cx;
        cx = nx;
        nx = old;
    }
    ssk_spring_watch_end(&w, sp);
    const float *result = w.result == SSK_SPRING_PICK_PREVIOUS   ? px
                          : w.result == SSK_SPRING_PICK_CURRENT  ? cx
                          : w.result == SSK_SPRING_PICK_NEXT     ? nx
                          : w.result == SSK_SPRING_PICK_GOOD     ? sp->good
                                                                 : positions;
    if (!w.energy_known && report) {
        records(sp, result);
        w.result_energy = force_pass(&a, nv, 0).energy;
    }
    if (result != positions) {
        ssk_spring_clusters_apply(sp, (float *)result, positions, roles);
        memcpy(positions, result, bytes);
    }
    if (p->mode == SSK_SPRING_FRAME_DEPENDENT) {
        if (w.diverged || !skinning) {
            sp->has_prev = 0;
        } else {
            memcpy(sp->prev_output, positions, bytes);
            memcpy(sp->prev_skinning, skinning, 16 * (size_t)nb * sizeof(float));
            sp->prev_frame = frame;
            sp->has_prev = 1;
        }
    }
    if (w.diverged && sp->velocity) memset(sp->velocity, 0, bytes);
    return ssk_spring_watch_finish(&w, sp, report, err);
}

bool ssk_spring_unsettled(const ssk_spring *sp, const ssk_spring_report *report, float *dst)
{
    if (!sp->last_before || !sp->last_after) return false;
    const uint32_t nv = sp->vertex_count;
    double largest = 0.0;
    for (uint32_t i = 0; i < nv; ++i) {
        const float *a = sp->last_before + 3 * (size_t)i, *b = sp->last_after + 3 * (size_t)i;
        const double dx = (double)b[0] - a[0], dy = (double)b[1] - a[1], dz = (double)b[2] - a[2];
        const double m = dx * dx + dy * dy + dz * dz;
        largest = m > largest ? m : largest;
    }
    if (!(largest > 0.0) || !(sp->threshold > 0.0f)) return true;
    /* an infinite residual (no estimate yet): the moves over the tolerance */
    const double scale = isfinite(report->residual)
                             ? (double)report->residual / sp->threshold / sqrt(largest)
                             : 1.0 / sp->threshold;
    for (uint32_t i = 0; i < nv; ++i) {
        const float *a = sp->last_before + 3 * (size_t)i, *b = sp->last_after + 3 * (size_t)i;
        const double dx = (double)b[0] - a[0], dy = (double)b[1] - a[1], dz = (double)b[2] - a[2];
        const float e = (float)(scale * sqrt(dx * dx + dy * dy + dz * dz));
        if (e > dst[i]) dst[i] = e;
    }
    return true;
}
