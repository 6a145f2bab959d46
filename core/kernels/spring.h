/*
 * spring.h — the spring deformer's state (Toothman 2020, 4.2, 5.2, 6.1,
 * 6.3; MIG 2019 "Spring Rigs for Skinning"), shared by spring_rest.c (rest
 * data, surface-edit regions, parameter checks: ssk_spring_create) and
 * spring.c (the solver: ssk_spring_solve); not installed. The arrays are
 * plain, so a GPU backend can upload them as they are.
 *
 * Rows and spaces
 * ---------------
 * Vertex rows are whole-rig rows (meshes concatenated in mesh order, as
 * ssk_rig_vertex_count); every position, scale vector and direction is in
 * rig space, model units; angles are radians.
 *
 * Adjacency (CSR, Toothman 2020, 6.3)
 * -----------------------------------
 * The directed edges of vertex i are edges[offsets[i] .. offsets[i + 1]),
 * in the order of the rig's welded adjacency (ssk_rig_weld), whole-rig
 * rows. Every undirected
 * edge {i, j} is stored twice, as e = (i -> j) in i's row and (j -> i) in
 * j's row (the dissertation stores i < j once and flips signs; storing
 * both lets the loop over i's row read only i's entries, contiguously).
 * edges[e] is one 16-byte ssk_spring_edge (std430 layout
 * {float; float; float; uint;}, a GPU backend can upload it as it is):
 *   rest_length       L0_ij = |v_j - v_i| at rest          (symmetric)
 *   rest_length_diff  (|s_i| - |s_j|) at rest             (antisymmetric)
 *   rest_angle        theta0_ij = angle(s_i, s_j) at rest  (symmetric)
 *   neighbor          j, a whole-rig row
 * computed from the rest positions v_i = a_i + s_i (a_i the attachment
 * point on the rest bones, s_i the binding's scale vector), with exactly
 * the arithmetic of the solver, so the rest pose is an equilibrium bit for
 * bit. One record per edge (rather than four arrays) makes the solver's
 * per-lane fetch one 16-byte load.
 *
 * Per vertex (#V)
 *   rest_bone_angle[i]   phi0_i = angle(s_i, c - p) at rest (0 for a
 *                        zero-length bone)
 *   rest_scale_length[i] |s0_i| = |s_i| at rest
 *   bones[i], t[i]       the binding's attachment (copied)
 *   roles[i]             SSK_ROLE_* of the surface edits (all of them;
 *                        a solve uses frame_roles: those of the edits
 *                        whose weight is > 0 at its frame, so an edit
 *                        keyed to 0 is no edit at all)
 *   maps[f][i]           per-vertex multiplier of stiffness f (NULL: 1); the
 *                        force ON vertex i uses maps[f][i]
 *
 * Surface edits (5.2)
 * -------------------
 * One entry per (edit, kinematic vertex): edit_vertex[n], edit_roi[n], and
 * edit_vector[3n..3n+3) = s_i + offset_i, the edited scale vector in bind
 * space. Per ROI r: roi_stiffness[r], its keys roi_keys[2 key_first[r] ..]
 * (key_count[r] (frame, weight) pairs). Per solve, for each kinematic
 * vertex i:
 *   K_i = k_e sum_n stiffness_r(n) w_r(n)(frame) maps[EDIT][i],
 *   target_i = (sum_n K_n (a'_i + R_b e_n)) / K_i
 * are written to edit_target[4i..4i+4) = (target xyz, K_i), so
 * F_e(i) = K_i (target_i - v_i) = sum over the ROIs of k w (target - v).
 * edit_target is zero for every other vertex; edit_unique lists the
 * distinct kinematic vertices (edit_unique_count of them).
 *
 * Solver buffers (owned, reused every solve; one solve at a time)
 *   pos[3]       three #V by 3 position buffers, rotated: the iterate
 *                before the current one, the current one, the next one
 *                (Jacobi: a whole iteration reads the current one only)
 *   good         #V by 3, the lowest-energy iterate seen before a run of
 *                energy increases (divergence recovery)
 *   rec          #V by 8 per-iteration vertex records of the current
 *                iterate: (x, y, z, |s|, s_x/|s|, s_y/|s|, s_z/|s|, 0),
 *                s = v - a' (the pre-pass; the neighbor loop only reads)
 *   velocity     #V by 3, semi-implicit integrator only (else NULL)
 *   prev_output  #V by 3, frame-dependent mode only (else NULL): the last
 *                solve's result; prev_skinning #B by 16 its matrices
 *   edit_target  #V by 4 when there are edits (else NULL)
 *   bone_inv     #B by 16 scratch for the differential transforms,
 *                frame-dependent mode only (else NULL)
 * Nothing else is kept per bone: the posed unit bone directions (c' -
 * p')/|c' - p'| are computed where the anchors read them (issue #16's
 * 256 bytes per vertex, which a rig of many bones and few vertices spent
 * on per-bone arrays).
 */
#ifndef SSK_SPRING_H
#define SSK_SPRING_H

#include "model/internal.h"

#include <math.h>

/* Algorithm 1's "control handle weight": the neighbor forces on a
 * kinematic vertex are multiplied by it before F_e is added, so that over
 * the iterations the handle pulls its neighbors more than they pull it. */
#define SSK_SPRING_HANDLE_WEIGHT 0.5f
/* Fraction of the rest bounding-box diagonal below which a length (edge,
 * scale vector) counts as zero: its direction is undefined, and the terms
 * that need it contribute no force. */
#define SSK_SPRING_LENGTH_EPSILON 1e-6f
/* Sine of the angle below which two directions count as parallel (or
 * anti-parallel): no orthogonal direction, no angular force. */
#define SSK_SPRING_PARALLEL_EPSILON 1e-6f
/* The relative scheme's smallest contraction per pass that its estimate
 * assumes (spring.c "Convergence"): with it the estimate is at least the
 * last move. */
#define SSK_SPRING_RELATIVE_CONTRACTION_FLOOR 0.5f
/* The relative scheme's window: the contraction is the largest of this
 * many last ratios of moves (an accelerated solve's moves do not shrink
 * steadily: spring.c "Convergence") */
#define SSK_SPRING_RELATIVE_WINDOW 5
/* The relative scheme with the multigrid: the distance to the equilibrium
 * is also at least this times the largest corrected step |s_k| (the map
 * x -> x + s(x) assumed to contract by at least 1/2 a pass: |x - x*| <=
 * |s(x)| / (1 - 1/2)). Moves can shrink while the iterate stalls; the
 * residual s cannot (spring.c "Convergence"). */
#define SSK_SPRING_MG_RESIDUAL_FACTOR 2.0f
/* A move below this many float ulps of the rest positions' largest
 * coordinate ends a relative solve whatever the contraction: a frame that
 * starts at its equilibrium (the rest pose), whose moves are rounding
 * noise that need not contract */
#define SSK_SPRING_RELATIVE_NEGLIGIBLE_ULPS 16.0f
/* The default convergence threshold: AABB_min times this (4.2.2). */
#define SSK_SPRING_THRESHOLD_FRACTION 1e-4f
/* An energy counts as growing when it exceeds the previous one by more
 * than this fraction (float rounding and the non-gradient parts of the
 * forces move it a little near an equilibrium; see spring.c). */
#define SSK_SPRING_GROWTH_TOLERANCE 1e-3
/* Length below which the weighted mean of an anchor's bone directions
 * counts as zero (opposite bones of equal weight): the bone of the largest
 * weight gives the direction (spring.c "Anchors"). */
#define SSK_SPRING_DIRECTION_EPSILON 1e-3f
/* Largest accepted max_iterations (a larger value is a likely mistake). */
#define SSK_SPRING_MAX_ITERATIONS 1000000u
/* Explicit update stability bound: dt times the curvature <= 2. */
#define SSK_SPRING_STABILITY_BOUND 2.0f
/* Lower bounds of the curvature of the mean neighbor forces along one
 * vertex's own motion, per unit stiffness (spring_rest.c). */
#define SSK_SPRING_MIN_CURVATURE_SURFACE (1.0 / 3.0)
#define SSK_SPRING_MIN_CURVATURE_LENGTH 1.0
#define SSK_SPRING_MIN_CURVATURE_TORSION (1.0 / 3.0)

/* Short-edge clusters (spring.c "Short-edge clusters"): an edge shorter
 * than this fraction of the mean rest length of its vertex's edges joins
 * its two vertices into one cluster. */
#define SSK_SPRING_CLUSTER_FRACTION 0.1f
/* cluster_index of a vertex in no cluster. */
#define SSK_SPRING_NO_CLUSTER 0xffffffffu

/* One directed edge (i -> j) of the CSR (see above). */
typedef struct ssk_spring_edge {
    float rest_length;
    float rest_length_diff;
    float rest_angle;
    uint32_t neighbor;
} ssk_spring_edge;

struct ssk_spring {
    uint32_t vertex_count;   /* #V of the rig */
    uint32_t bone_count;     /* #B */
    uint32_t edge_count;     /* directed edges, = offsets[#V] */
    uint32_t max_degree;     /* D */
    ssk_spring_params params; /* as given; stiffness_maps point at `maps` */
    float threshold;         /* resolved (params.threshold or the default) */
    float aabb_min;          /* smallest side of the rest bounding box */
    /* the relative scheme: a move that counts as rounding noise
     * (SSK_SPRING_RELATIVE_NEGLIGIBLE_ULPS) */
    float negligible;
    float length_epsilon;    /* SSK_SPRING_LENGTH_EPSILON x rest diagonal */

    /* CSR and per-edge rest data (see above) */
    uint32_t *offsets;       /* #V + 1 */
    ssk_spring_edge *edges;  /* #E + D (the last D zero: padding that the
                                solver's lanes may read, masked off) */

    /* per vertex */
    float *rest_bone_angle;  /* #V */
    float *rest_scale_length; /* #V */
    int32_t *bones;          /* #V */
    float *t;                /* #V */
    uint8_t *roles;          /* #V */
    float *maps[SSK_FORCE_COUNT]; /* #V each or NULL */

    /* surface edits */
    uint32_t roi_count;
    float *roi_stiffness;    /* #ROI */
    uint32_t *roi_key_first; /* #ROI: first key (pair index) in roi_keys */
    uint32_t *roi_key_count; /* #ROI */
    float *roi_keys;         /* all keys, (frame, weight) pairs */
    uint32_t *roi_member_first; /* #ROI: first member in roi_member_* */
    uint32_t *roi_member_count; /* #ROI */
    uint32_t *roi_member_vertex; /* every ROI's vertices (kinematic, passive, static) */
    uint8_t *roi_member_role;    /* their SSK_ROLE_* in that ROI */
    uint8_t *frame_roles;    /* #V roles of the ROIs whose weight is > 0 at
                                the frame being solved (NULL without edits) */
    uint32_t edit_entry_count;
    uint32_t *edit_vertex;   /* #entries */
    uint32_t *edit_roi;      /* #entries */
    float *edit_vector;      /* #entries by 3, bind space */
    uint32_t edit_unique_count;
    uint32_t *edit_unique;   /* the distinct kinematic vertices */
    float *edit_target;      /* #V by 4, or NULL without edits */

    /* solver buffers */
    float *pos[3];
    /* the last solve's last pass: the iterates before and after it (two of
     * pos[], valid until the next solve; NULL before a CPU solve), for
     * ssk_spring_unsettled */
    const float *last_before, *last_after;
    float *good;
    float *rec;
    float *velocity;         /* NULL unless semi-implicit */
    float *prev_output;      /* NULL unless frame-dependent */
    float *prev_skinning;    /* #B by 16, NULL unless frame-dependent */
    double prev_frame;
    int has_prev;            /* prev_output/prev_skinning hold a result */
    float *bone_inv;         /* #B by 16, NULL unless frame-dependent */

    /* anchors (spring.c "Anchors"): per vertex the posed attachment point
     * a'_i and the unit bone direction of its bone springs, written by
     * ssk_spring_prepare_frame from the binding (bones, t) or, when
     * weights_rig != NULL, from the attachment per skin weight influence */
    float *anchor;           /* #V by 4 (xyz, defined): defined = 1 when
                                the vertex's rest scale vector is longer
                                than length_epsilon, else 0: a vertex on
                                the skeleton at rest (a limb's cap center)
                                has no direction, and its length, torsion
                                and bone terms stay off in every pose (its
                                direction would flip about the anchor from
                                one iteration to the next) */
    uint8_t *scale_defined;  /* #V: that flag */
    float *vertex_dir;       /* #V by 4 (xyz, 0) */
    /* the attachment per skin weight influence (spring.c "Anchors"): the
     * rig (borrowed; its rest positions, object matrices, skin weights and
     * bone indices are read every frame) and its rest bones (#B, the
     * identity pose: only its segments are kept), or NULL for the binding's
     * anchors. Nothing per
     * vertex and influence is stored: t_k is the rest position's
     * projection onto rest bone k, computed again each frame (issue #16's
     * bound of 256 bytes per vertex; slot records took 32 per influence) */
    const ssk_rig *weights_rig;
    float *rest_segment;     /* #slots by 8: each rest bone's head[4] and
                                tail[4] of its ssk_attach_bone (head[3] = 1 /
                                |tail - head|^2), what ssk_am_project_t reads,
                                by bone_slot */
    /* per-bone state is kept only for the bones some vertex has (its
     * binding bone, or a skin weight > 0 in the weights attachment): slot
     * s = bone_slot[b] > 0 of those, 0 (a slot of zeros) for the others (a
     * generated Rigify rig has 706 bones, 173 of them with vertices, for
     * 2738 vertices: issue #16's 256 bytes per vertex) */
    uint32_t *bone_slot;     /* #B */
    uint32_t slot_count;     /* 1 + the bones with a slot */

    /* the detail force (spring.c "The detail force"): per solve, the first
     * stage's differential coordinates f_i - mean_j f_j */
    float *detail;           /* #V by 4 (xyz, 0) */
    /* short-edge clusters (spring.c "Short-edge clusters"), one uint32
     * array of blocks in the order of their roots (a cluster's smallest
     * row): each the cluster's member count n, then its n member rows
     * (ascending). Nothing per vertex (issue #16's 256 bytes per vertex;
     * the GL backend builds its per-vertex index at upload) */
    uint32_t *cluster_words;
    uint32_t cluster_word_count; /* sum over clusters of (1 + n) */
    uint32_t cluster_count;

    /* the force pass's reductions per chunk (model/parallel.h) */
    struct ssk_spring_pass *chunk_results;

    /* the multilevel correction (spring_multilevel.c), NULL unless
     * params.multilevel_levels > 0 */
    struct ssk_spring_ml *ml;
    /* the surface multigrid correction (spring_multigrid.c), NULL unless
     * params.multilevel == SSK_SPRING_MULTIGRID */
    struct ssk_spring_mg *mg;

    size_t bytes;            /* everything above that the solver owns */
};

/* --- shared arithmetic (spring_rest.c and spring.c must agree bit for bit
 * so the rest pose is an exact equilibrium) ---------------------------- */

/* atan(x) for x in [0, 1]: odd minimax polynomial of degree 13, fitted
 * for this project (largest error 2.5e-7 rad in exact arithmetic); the
 * constants are shared with the 8-lane kernel. */
#define SSK_SPRING_ATAN_C0 0.9999961115619035f
#define SSK_SPRING_ATAN_C1 (-0.33317368071630293f)
#define SSK_SPRING_ATAN_C2 0.1980781562993631f
#define SSK_SPRING_ATAN_C3 (-0.1323334216907157f)
#define SSK_SPRING_ATAN_C4 0.07962367186141679f
#define SSK_SPRING_ATAN_C5 (-0.03360421913153608f)
#define SSK_SPRING_ATAN_C6 0.006811792602989308f
#define SSK_SPRING_HALF_PI 1.5707963267948966f
#define SSK_SPRING_PI 3.1415926535897932f

/* atan2(y, x) for y >= 0, in [0, pi]; atan2(0, 0) = 0. Branch-free in the
 * order the 8-lane version computes it. */
static inline __attribute__((always_inline)) float ssk_spring_atan2(float y, float x)
{
    const float ax = x < 0.0f ? -x : x;
    const float mx = y > ax ? y : ax, mn = y > ax ? ax : y;
    const float q = mn / (mx > 0.0f ? mx : 1.0f);
    const float q2 = q * q;
    const float p =
        q * (SSK_SPRING_ATAN_C0 +
             q2 * (SSK_SPRING_ATAN_C1 +
                   q2 * (SSK_SPRING_ATAN_C2 +
                         q2 * (SSK_SPRING_ATAN_C3 +
                               q2 * (SSK_SPRING_ATAN_C4 +
                                     q2 * (SSK_SPRING_ATAN_C5 + q2 * SSK_SPRING_ATAN_C6))))));
    const float r = y > ax ? SSK_SPRING_HALF_PI - p : p;
    return x < 0.0f ? SSK_SPRING_PI - r : r;
}

/* The vertex record of position x anchored at a = (a', defined) (see
 * `rec` and `anchor` above): rec[0..3) = x, rec[3] = |s|, rec[4..7) =
 * s/|s| (0 when |s| <= eps or the anchor's scale vector is undefined,
 * a[3] = 0), rec[7] = 0. */
static inline __attribute__((always_inline)) void
ssk_spring_record(float rec[8], const float x[3], const float a[4], float eps)
{
    const float sx = x[0] - a[0], sy = x[1] - a[1], sz = x[2] - a[2];
    const float l = sqrtf(sx * sx + sy * sy + sz * sz);
    const float inv = l > eps && a[3] > 0.0f ? 1.0f / l : 0.0f;
    rec[0] = x[0];
    rec[1] = x[1];
    rec[2] = x[2];
    rec[3] = l;
    rec[4] = sx * inv;
    rec[5] = sy * inv;
    rec[6] = sz * inv;
    rec[7] = 0.0f;
}

/* Priority of a role where regions overlap: kinematic > passive > static >
 * free. */
static inline int ssk_spring_role_rank(uint8_t role)
{
    switch (role) {
    case SSK_ROLE_KINEMATIC: return 3;
    case SSK_ROLE_PASSIVE: return 2;
    case SSK_ROLE_STATIC: return 1;
    default: return 0;
    }
}

/* Unit direction of the segment head -> tail, 0 for a zero-length one. */
static inline __attribute__((always_inline)) void
ssk_spring_bone_direction(float out[4], const float head[3], const float tail[3])
{
    const float dx = tail[0] - head[0], dy = tail[1] - head[1], dz = tail[2] - head[2];
    const float l = sqrtf(dx * dx + dy * dy + dz * dz);
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    out[0] = dx * inv;
    out[1] = dy * inv;
    out[2] = dz * inv;
    out[3] = 0.0f;
}

/* Angle between two unit (or zero) vectors: atan2(|a x b|, a . b). */
static inline __attribute__((always_inline)) float ssk_spring_angle(const float a[3],
                                                                    const float b[3])
{
    const float cx = a[1] * b[2] - a[2] * b[1];
    const float cy = a[2] * b[0] - a[0] * b[2];
    const float cz = a[0] * b[1] - a[1] * b[0];
    const float c = sqrtf(cx * cx + cy * cy + cz * cz);
    const float d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    return ssk_spring_atan2(c, d);
}

/* Edge measures of e = (i -> j) from the two records: |v_j - v_i|. */
static inline __attribute__((always_inline)) float ssk_spring_edge_length(const float ri[8],
                                                                          const float rj[8])
{
    const float dx = rj[0] - ri[0], dy = rj[1] - ri[1], dz = rj[2] - ri[2];
    return sqrtf(dx * dx + dy * dy + dz * dz);
}

/* Row i of the detail targets: f_i - mean_j f_j = -(sum_j (f_j - f_i)) /
 * deg(i), with the sum over i's CSR row in order and the solver's own
 * operations (spring.c sums v_j - v_i the same way), so that the residual
 * of the detail force is exactly 0 where v = f (the rest pose stays an
 * equilibrium bit for bit; the GL kernel computes the same); (0, 0, 0, 0)
 * without edges. */
static inline void ssk_spring_detail_row(float out[4], const float *first,
                                         const uint32_t *offsets, const ssk_spring_edge *edges,
                                         uint32_t i)
{
    const uint32_t b = offsets[i], e = offsets[i + 1];
    const float *fi = first + 3 * (size_t)i;
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    for (uint32_t k = b; k < e; ++k) {
        const float *fj = first + 3 * (size_t)edges[k].neighbor;
        sx += fj[0] - fi[0];
        sy += fj[1] - fi[1];
        sz += fj[2] - fi[2];
    }
    const float inv = e > b ? 1.0f / (float)(e - b) : 0.0f;
    out[0] = -(sx * inv);
    out[1] = -(sy * inv);
    out[2] = -(sz * inv);
    out[3] = 0.0f;
}

/* The mean correction of one cluster block (count, members...): false
 * when every member is static. */
static inline bool ssk_spring_cluster_mean(float mean[3], const uint32_t *block,
                                           const float *result, const float *first,
                                           const uint8_t *roles)
{
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    uint32_t count = 0;
    for (uint32_t k = 1; k <= block[0]; ++k) {
        const uint32_t m = block[k];
        if (roles[m] == SSK_ROLE_STATIC) continue;
        sx += result[3 * (size_t)m] - first[3 * (size_t)m];
        sy += result[3 * (size_t)m + 1] - first[3 * (size_t)m + 1];
        sz += result[3 * (size_t)m + 2] - first[3 * (size_t)m + 2];
        ++count;
    }
    if (count == 0) return false;
    const float inv = 1.0f / (float)count;
    mean[0] = sx * inv;
    mean[1] = sy * inv;
    mean[2] = sz * inv;
    return true;
}

/* --- the per-frame set-up and the per-iteration decisions, shared by the
 * CPU solver (ssk_spring_solve) and the GL backend (core/backends/gl_backend.c, whose
 * compute shaders do the passes; shaders/kernels_spring_*.comp) so that both take
 * the same decisions from the same reductions ------------------------- */

/* Per-frame state of a solve from the frame's posed attachment bones
 * (#B, ssk_attach_prepare): the anchors sp->anchor and
 * sp->vertex_dir (#V by 4 each, spring.c "Anchors") and, with surface edits,
 * sp->edit_target (#V by 4, target xyz and K_i at `frame`: see "Surface
 * edits" above). Returns the roles of the frame: sp->roles when every ROI's
 * weight is > 0 at `frame`, else sp->frame_roles (the roles of the active
 * ROIs only; both #V bytes, owned by sp). */
const uint8_t *ssk_spring_prepare_frame(ssk_spring *sp, const ssk_attach_bone *bones,
                                        double frame);
/* Its second part alone (the edit targets and the roles), for a backend
 * that computes the anchors itself. */
const uint8_t *ssk_spring_prepare_edits(ssk_spring *sp, const ssk_attach_bone *bones,
                                        double frame);

/* Anchors computed elsewhere (the GL backend's kernels_spring_anchors.comp):
 * vertex i's anchor is one of three kinds, from terms that do not change
 * between frames (ssk_spring_anchor_terms), which the other side sums in
 * the CPU's order with the CPU's arithmetic (spring.c weights_anchor,
 * binding_anchors_chunk):
 *   BINDING     a' = attachment(b, t), d = the bone direction of b (the
 *               binding's bone and t: one term);
 *   UNWEIGHTED  per skin weight, but the vertex has none: a' the same, d =
 *               that direction divided by its length when longer than
 *               SSK_SPRING_DIRECTION_EPSILON (one term);
 *   WEIGHTS     a' = sum_j w_j attachment(b_j, t_j), d = sum_j w_j dir(b_j)
 *               divided by its length, or, when not longer than
 *               SSK_SPRING_DIRECTION_EPSILON, the direction of the first
 *               term of largest w (the terms: the influences with w > 0, in
 *               order). */
#define SSK_SPRING_ANCHOR_BINDING 0u
#define SSK_SPRING_ANCHOR_UNWEIGHTED 1u
#define SSK_SPRING_ANCHOR_WEIGHTS 2u
typedef struct ssk_spring_anchor_term {
    int32_t bone; /* bone index */
    float w;      /* normalized skin weight (1 for one-term kinds) */
    float t;      /* attachment parameter on the bone */
} ssk_spring_anchor_term;
/* Vertex i's anchor kind (SSK_SPRING_ANCHOR_*) and terms: dst (room for
 * max(K, 1) terms, K the influences per vertex of i's mesh) gets *count. */
uint32_t ssk_spring_anchor_terms(const ssk_spring *sp, uint32_t i, ssk_spring_anchor_term *dst,
                                 uint32_t *count);

/* sp->anchor and sp->vertex_dir of the posed bones (the
 * first part of ssk_spring_prepare_frame; spring_rest.c calls it with the
 * rest bones so that the rest pose is an equilibrium bit for bit). */
void ssk_spring_anchors(ssk_spring *sp, const ssk_attach_bone *bones);

/* The detail force's targets of a solve (spring.c "The detail force"):
 * row i of sp->detail (#V by 4) = (f_i - mean_j f_j, 0) over i's CSR row,
 * first: #V by 3 rig-space first-stage positions. */
void ssk_spring_detail(ssk_spring *sp, const float *first);

/* The short-edge clusters' step after a solve (spring.c "Short-edge
 * clusters"): every non-static member m of a cluster gets result_m =
 * first_m + the mean of (result - first) over the cluster's non-static
 * members. result, first: #V by 3 rig space (distinct buffers); roles:
 * the frame's #V roles. */
void ssk_spring_clusters_apply(const ssk_spring *sp, float *result, const float *first,
                               const uint8_t *roles);

/* Differential bone transforms of frame-dependent mode (6.1): out[b] =
 * S_b(n) S_b(n-1)^-1, #B by 16 row-major each (rig space). false when a
 * previous matrix is singular (then the frame starts from the first
 * stage). */
bool ssk_spring_differential(float *out, const float *skinning, const float *prev_skinning,
                             uint32_t bone_count);

/* true when a frame-dependent solve of `frame` starts from the previous
 * output: has_prev, skinning given and frame = prev_frame + 1. */
static inline bool ssk_spring_continues(const ssk_spring_params *p, int has_prev,
                                        double prev_frame, const float *skinning, double frame)
{
    return p->mode == SSK_SPRING_FRAME_DEPENDENT && has_prev && skinning &&
           frame == prev_frame + 1.0;
}

/* The reductions of one force pass k (forces at iterate x_{k-1}, writing
 * x_k; spring.c's force pass, or shaders/kernels_spring_reduce.comp). */
typedef struct ssk_spring_pass {
    double energy;    /* potential energy of x_{k-1} */
    double kinetic;   /* 1/2 sum |u|^2 before the update (semi-implicit) */
    float max_disp2;  /* max over vertices of |x_k - x_{k-1}|^2 (NaN skipped) */
    float max_force2; /* max |F|^2 */
    int bad;          /* some |x_k - x_{k-1}|^2 or |F|^2 is not finite */
    /* the multigrid solver: max over vertices of |s_k|^2, s_k the pass's
     * corrected step before the Anderson fit (the residual of the
     * preconditioned fixed-point map at x_{k-1}) under the relative scheme;
     * 0 for the other solvers and schemes */
    float max_step2;
} ssk_spring_pass;

/* Which iterate a solve's result is. The solver rotates three buffers:
 * x_{k-2} (PREVIOUS), x_{k-1} (CURRENT), x_k (NEXT) during pass k. */
typedef enum ssk_spring_pick {
    SSK_SPRING_PICK_NONE = 0,    /* not decided (the loop goes on) */
    SSK_SPRING_PICK_PREVIOUS,    /* x_{k-2} */
    SSK_SPRING_PICK_CURRENT,     /* x_{k-1} */
    SSK_SPRING_PICK_NEXT,        /* x_k */
    SSK_SPRING_PICK_GOOD,        /* the kept lowest-energy iterate */
    SSK_SPRING_PICK_FIRST_STAGE  /* the input, unchanged */
} ssk_spring_pick;

/* Actions of ssk_spring_watch_pass, to take in this order. */
#define SSK_SPRING_SAVE_GOOD 1u     /* copy x_{k-2} to the good buffer now */
#define SSK_SPRING_ZERO_VELOCITY 2u /* zero the velocities (semi-implicit) */
#define SSK_SPRING_DONE 4u          /* stop: the result is watch.result */

/* The convergence and divergence watch of one solve (see spring.c). */
/* ssk_spring_watch.why: the divergence reasons (static strings; the GL
 * backend's watch on the device names them by code). */
#define SSK_SPRING_WHY_NONFINITE "non-finite values"
#define SSK_SPRING_WHY_GREW "an energy that grew over consecutive iterations"

typedef struct ssk_spring_watch {
    /* state between passes */
    double e_prev, epot_prev, good_energy;
    float disp_prev;
    /* the relative scheme: the moves of the SSK_SPRING_RELATIVE_WINDOW
     * passes before the last (newest first) */
    float disp_before[SSK_SPRING_RELATIVE_WINDOW];
    float left_prev; /* the relative scheme's last estimate (0 before one) */
    float q_prev;    /* and the last contraction it measured (0 before one) */
    uint32_t kept;   /* the moves kept in disp_prev and disp_before (not
                        those at the rounding of the positions) */
    int streak, has_good;
    /* Chebyshev acceleration (params.chebyshev_rho > 0): the weight of the
     * last pass (1: plain), the pass after which the current run of
     * accelerated passes began its warm-up */
    double omega;
    uint32_t accel_start;
    /* outcome */
    uint32_t iterations;    /* the pass that decided, or max_iterations */
    ssk_spring_pick result;
    double result_energy;   /* meaningful when energy_known */
    int energy_known;       /* else: evaluate the result's energy for a report */
    int converged, diverged;
    const char *why;        /* divergence reason (static string) */
    float residual;
} ssk_spring_watch;

void ssk_spring_watch_begin(ssk_spring_watch *w);
/* The Chebyshev weight w_k of pass k (both backends blend with this float):
 * 1 without acceleration or during a warm-up, then 2 / (2 - rho^2), then
 * 4 / (4 - rho^2 w_{k-1}) (in double, rounded to float once). */
float ssk_spring_watch_omega(ssk_spring_watch *w, const ssk_spring *sp, uint32_t k);
/* Pass k's reductions -> SSK_SPRING_* actions. */
unsigned ssk_spring_watch_pass(ssk_spring_watch *w, const ssk_spring *sp, uint32_t k,
                               const ssk_spring_pass *r);
/* After the loop: when no pass decided, max_iterations passes ran and the
 * result is x_max (CURRENT after the last rotation). */
void ssk_spring_watch_end(ssk_spring_watch *w, const ssk_spring *sp);
/* Fills the report (may be NULL) and returns SSK_ERROR_SPRING_DIVERGED
 * with the solver's message when the watch saw divergence, else SSK_OK. */
ssk_status ssk_spring_watch_finish(const ssk_spring_watch *w, const ssk_spring *sp,
                                   ssk_spring_report *report, ssk_error *err);

/* --- the multilevel correction (spring_multilevel.c; issue #16) ---------
 *
 * Coarse unknowns: per bone b and level l < levels[b], the nodes k = 0 ..
 * 2^l of a piecewise-linear hat basis over the bone's attachment
 * parameter t (level l splits the bone into 2^l slabs; a bone that starts
 * at its parent's tail shares the parent's last node, so the basis is
 * continuous over the joint). A node's unknown is an affine map in its
 * posed frame E (3 by 3, columns the node's axes): vertex i with hat
 * weight w moves by w E (t + L s~_i), s~_i = R_b^-1 (v_i - a'_i) / r_b
 * (the offset in its bone's rest frame), r_b the bone's mean rest
 * distance from its axis: SSK_SPRING_ML_MODES = 12
 * modes (3 translations, 9 linear maps: scale, twist, shear, ovalize).
 *
 * Node numbering: nodes (shared at joints) for the coarse solve; local
 * nodes per (bone, level), ssk_spring_ml_loc(ml, b, l) + k, k = 0 .. 2^l,
 * for the transfers between levels within a bone; node_of maps a local
 * node to its node.
 *
 * Two layouts (issue #16: the state within 256 bytes per vertex).
 * ssk_spring_ml_create makes every node of every bone with vertices (the
 * probing reads them all); after the curvatures are inverted,
 * ssk_spring_ml_compact keeps only the nodes whose inverse block is not
 * zero (the active nodes: enough hat weight, SSK_SPRING_ML_NODE_WEIGHT)
 * and, where a kept bone has local nodes of the others, one zero node
 * (all its data 0) that they map to; a bone none of whose local nodes maps to an active node gets no
 * levels (its rows take no part: their correction was 0) and no local
 * nodes. The blocks are symmetric (ssk_spring_ml_invert), so only their
 * upper triangles are kept. The solve reads only the compact layout. */
#define SSK_SPRING_ML_MAX_LEVELS 8
#define SSK_SPRING_ML_MODES 9
/* Per node and vertex sums of an iteration: sum w f (3), sum w f s~^T (9). */
#define SSK_SPRING_ML_MOMENTS 12
/* Fewest vertices per slab of a bone's finest level (below that the
 * plain pass's own smoothing reaches across the slab). */
#define SSK_SPRING_ML_SLAB_VERTICES 256u
/* The probe's displacement: this fraction of the mean rest edge length. */
#define SSK_SPRING_ML_PROBE_FRACTION 1e-2f
/* Smallest diagonal coarse curvature, as a fraction of the sum of the
 * plain pass's own curvatures over the mode: a mode nothing resists (a
 * free twist) moves at most 1 / this times the plain pass's step. */
#define SSK_SPRING_ML_CURVATURE_FLOOR 1e-3f
/* Smallest sum of hat weights of a node that gets a correction. */
#define SSK_SPRING_ML_NODE_WEIGHT 32.0f
/* A mode whose plain curvature sum is below this fraction of its node's
 * largest moves no vertex (an axial shear of a flat ring): left out. */
#define SSK_SPRING_ML_MODE_EPSILON 1e-6f
/* A child bone whose rest head is within this fraction of its parent's
 * length of the parent's rest tail shares the parent's last node. */
#define SSK_SPRING_ML_JOINT_FRACTION 1e-3f
/* The largest eigenvalue of the corrected pass's operator that the coarse
 * step scale theta allows (the plain pass is stable below 2). */
#define SSK_SPRING_ML_LAMBDA_TARGET 1.8f
/* Power iterations of that estimate. */
#define SSK_SPRING_ML_POWER_ITERATIONS 30u
/* Consecutive growing moves after which a solve halves its coarse steps. */
#define SSK_SPRING_ML_GROWTH_WINDOW 4u
/* A move more than this times the last one quarters them at once. */
#define SSK_SPRING_ML_JUMP 4.0f
/* Passes without a move smaller than the smallest since the coarse steps
 * last changed after which a solve halves them: an oscillation that
 * neither grows nor decays (a corrected pass's eigenvalue near -1 in a
 * pose far from rest, the 10k limb twisted 180 degrees) never trips the
 * growth rule. Longer than a Chebyshev start's rise (5 passes on the
 * bent limb); at 12 the default BCN_Epileptic.X bake keeps its bytes (at
 * 8 some frames halved). */
#define SSK_SPRING_ML_STALL_WINDOW 12u
/* A node's coarse step moves it at most this times its radius per pass. */
#define SSK_SPRING_ML_TRUST 0.05f

typedef struct ssk_spring_ml {
    uint32_t levels;          /* largest levels[b] */
    uint32_t node_count;      /* nodes (see "Two layouts" above) */
    uint32_t local_count;     /* local nodes */
    const uint32_t *slot;     /* #B: sp->bone_slot (borrowed); the arrays "by
                                 slot" below (slot_count + 1 entries) hold bone b
                                 at slot[b] */
    uint32_t slot_count;
    uint8_t *bone_levels;     /* by slot: levels of the bone (0: its rows take no part) */
    uint32_t *bone_loc;       /* by slot: local node of (b, level 0, k = 0); level l's
                                 2^l + 1 nodes start at ssk_spring_ml_loc(ml, b, l) */
    uint32_t *node_of;        /* #local: the node of each local node */
    uint8_t *node_level;      /* #nodes, create time only: a node's level */
    uint8_t *node_color;      /* #nodes, create time only: probing colors (no two
                                 nodes of a color reach a common vertex or mesh edge) */
    uint32_t color_count[SSK_SPRING_ML_MAX_LEVELS];
    float *inv_radius;        /* by slot: 1 / r_b (0: no linear modes) */
    float *kinv;              /* inverse coarse curvature blocks, rest frame: create
                                 time #nodes by 81; solving #nodes by 45 (the upper
                                 triangle, row by row: ssk_spring_ml_kinv_index) */
    float *node_basis;        /* #nodes by 9: rest basis (u, v across the node's rest axis, w along) */
    float *node_center;       /* #nodes by 2: rest mean offset (u, v) of the node's vertices */
    float *node_weight;       /* #nodes, create time only: sum of the hat weights of its vertices */
    float *node_radius;       /* #nodes: largest r_b of its bones, model units */
    uint8_t *frozen;          /* #V (+ 8 padding) or NULL without stiffness maps: 1 where
                                 every stiffness times its map is 0 */
    float *node_frame;        /* #nodes by 9: posed basis F = E B (row-major) of the frame being solved */
    float *node_moment;       /* #nodes by 12: an iteration's moments, then (in place)
                                 its translation and 3 by 3 map */
    float *local;             /* #local by 12: moments, then maps */
    /* the restriction per chunk of SSK_PARALLEL_GRAIN rows (the force
     * pass's chunks, model/parallel.h), summed in chunk order: the same
     * bits with any thread count. Chunk c adds into the local nodes
     * chunk_key[c] .. chunk_key[c] + (chunk_offset[c + 1] - chunk_offset[c])
     * - 1 (the finest nodes its rows reach), stored at rows chunk_offset[c]
     * .. of partial. One chunk: partial is `local` itself (its range all
     * the local nodes). */
    uint32_t chunk_count;
    uint32_t *chunk_key;      /* #chunks */
    uint32_t *chunk_offset;   /* #chunks + 1 */
    float *partial;           /* chunk_offset[#chunks] by 12, or `local` */
    float *chunk_max;         /* #chunks: the prolongation's largest squared moves */
    float probe;              /* the probe's amplitude, model units */
    float theta;              /* scale of the coarse steps (stability, probed) */
    float scale;              /* this solve's further scale (halved on growth) */
} ssk_spring_ml;

/* The upper triangle's index of entry (a, c) of a 9 by 9 block. */
static inline __attribute__((always_inline)) uint32_t ssk_spring_ml_kinv_index(uint32_t a,
                                                                               uint32_t c)
{
    const uint32_t r = a < c ? a : c, k = a < c ? c : a;
    return r * SSK_SPRING_ML_MODES - r * (r - 1u) / 2u + (k - r);
}
#define SSK_SPRING_ML_KINV_FLOATS (SSK_SPRING_ML_MODES * (SSK_SPRING_ML_MODES + 1) / 2)

/* Local node of (the bone of slot s, level l, k = 0): level l' holds
 * 2^l' + 1 nodes. */
static inline __attribute__((always_inline)) uint32_t ssk_spring_ml_loc_slot(const ssk_spring_ml *ml,
                                                                             uint32_t s, uint32_t l)
{
    return ml->bone_loc[s] + (1u << l) - 1u + l;
}

/* The same of bone b. */
static inline __attribute__((always_inline)) uint32_t ssk_spring_ml_loc(const ssk_spring_ml *ml,
                                                                        uint32_t b, uint32_t l)
{
    return ssk_spring_ml_loc_slot(ml, ml->slot[b], l);
}

/* Levels of bone b. */
static inline __attribute__((always_inline)) uint32_t ssk_spring_ml_levels(const ssk_spring_ml *ml,
                                                                           uint32_t b)
{
    return ml->bone_levels[ml->slot[b]];
}

/* Slab k (0 .. 2^l - 1) of level l at attachment parameter t (clamped to
 * [0, 1]) and the hat weight of its upper node k + 1. */
static inline __attribute__((always_inline)) uint32_t ssk_spring_ml_slab(float t, uint32_t l,
                                                                         float *upper)
{
    const uint32_t segments = 1u << l;
    t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
    const float u = t * (float)segments;
    uint32_t k = (uint32_t)u;
    k = k >= segments ? segments - 1 : k;
    *upper = u - (float)k;
    return k;
}

/* The finest local node of bone b at parameter t (the key of its slab,
 * which the restriction sums by) and the upper node's hat weight; b has
 * levels (bone_levels[b] > 0). */
static inline __attribute__((always_inline)) uint32_t
ssk_spring_ml_finest(const ssk_spring_ml *ml, uint32_t b, float t, float *upper)
{
    const uint32_t s = ml->slot[b], l = ml->bone_levels[s] - 1u;
    return ssk_spring_ml_loc_slot(ml, s, l) + ssk_spring_ml_slab(t, l, upper);
}

/* Levels, node numbering, probing colors and radii of sp (which has its
 * rest data); the curvatures are probed by ssk_spring_multilevel_probe.
 * NULL when out of memory. */
ssk_spring_ml *ssk_spring_ml_create(const ssk_spring *sp, const float *rest,
                                    const ssk_attach_bone *rest_bones);
void ssk_spring_ml_destroy(ssk_spring_ml *ml);
/* For a GPU backend (the compact layout): the slab (finest local node k)
 * of row i, UINT32_MAX when its bone has no levels; dst (#nodes by 81) the
 * full inverse blocks. */
uint32_t ssk_spring_ml_row_slab(const ssk_spring_ml *ml, const ssk_spring *sp, uint32_t i);
void ssk_spring_ml_kinv_full(const ssk_spring_ml *ml, float *dst);
/* A solve's record of its corrected moves (largest squared moves). */
typedef struct ssk_spring_ml_moves {
    float last;      /* the last pass's (INFINITY before the first) */
    float best;      /* the smallest since ml->scale last changed */
    uint32_t growth; /* consecutive passes that moved more than the one before */
    uint32_t stall;  /* passes since `best` last fell */
} ssk_spring_ml_moves;
/* Before a solve's first pass: ml->scale = 1, an empty record. */
void ssk_spring_ml_watch_begin(ssk_spring_ml *ml, ssk_spring_ml_moves *m);
/* After a corrected pass whose largest squared move is md: the rules of a
 * solve's coarse-step scale: SSK_SPRING_ML_GROWTH_WINDOW growing moves or
 * SSK_SPRING_ML_STALL_WINDOW passes without a new smallest move halve
 * ml->scale, a jump of SSK_SPRING_ML_JUMP quarters it. */
void ssk_spring_ml_watch(ssk_spring_ml *ml, float md, ssk_spring_ml_moves *m);
/* Bytes ml owns (counted in the spring's bytes). */
size_t ssk_spring_ml_bytes(const ssk_spring_ml *ml, uint32_t bone_count, uint32_t vertex_count);
/* The nodes' posed frames of a frame from its attachment bones. */
void ssk_spring_ml_frame(ssk_spring_ml *ml, const ssk_spring *sp, const ssk_attach_bone *bones);
/* dst = x + probe * sum of mode `mode` of level `level`'s nodes of color
 * `color`; returns how many nodes. */
uint32_t ssk_spring_ml_probe_set(const ssk_spring_ml *ml, const ssk_spring *sp, float *dst,
                                 const float *x, const uint8_t *roles, uint32_t level,
                                 uint32_t mode, uint32_t color);
/* From the plain steps g (at the probe) and g0 (at x): column `mode` of
 * the curvature block of each probed node, added into blocks (#nodes by
 * 81) and own (#nodes by 9, the plain curvature sums); scratch:
 * ml->chunk_count by #nodes by 10 floats. */
void ssk_spring_ml_probe_read(const ssk_spring_ml *ml, const ssk_spring *sp, float *blocks,
                              float *own, float *scratch, const float *g, const float *g0,
                              const float *x, const uint8_t *roles, uint32_t level, uint32_t mode,
                              uint32_t color);
/* Inverts the probed blocks into ml->kinv (floored, modes that move
 * nothing left out; symmetric). */
void ssk_spring_ml_invert(ssk_spring_ml *ml, const float *blocks, const float *own,
                          const float *weight);
/* The compact layout (see "Two layouts" above) once ml->kinv holds the
 * inverted blocks; the restriction's chunks. false when out of memory
 * (then only ssk_spring_ml_destroy may be called on ml). */
bool ssk_spring_ml_compact(ssk_spring_ml *ml, const ssk_spring *sp);
/* Creates sp->ml and probes its curvatures at rest (spring.c): rest the
 * #V by 3 rest positions, rest_bones the rest attachment bones. */
ssk_status ssk_spring_multilevel_probe(ssk_spring *sp, const float *rest,
                                       const ssk_attach_bone *rest_bones, ssk_error *err);
/* One multilevel iteration's correction and blend: next holds the plain
 * step x + g of cur; adds the coarse correction sum_u phi_u (phi_u . P^-1
 * g) / c_u, then (omega != 1) the Chebyshev blend with prev. rec (#V by
 * 8, or NULL): also the records of the result (the next pass's pre-pass,
 * fused). restricted: ml->partial already holds the per-chunk moments
 * (the CPU force pass computes them, spring.c ml_moments8). Returns the
 * largest squared move |next - cur|^2 (NaN or infinite when a value is not
 * finite). */
float ssk_spring_ml_correct(ssk_spring_ml *ml, const ssk_spring *sp, float *next,
                            const float *cur, const float *prev, float omega,
                            const uint8_t *roles, float *rec, bool restricted);

/* 1 / p_i: the plain pass's step of vertex i is g_i = p_i F_i, the
 * detail force's own term taken implicitly (spring.c "The detail force");
 * the multilevel and multigrid corrections read the forces back as g / p. */
static inline float ssk_spring_step_inverse(const ssk_spring *sp, const uint8_t *roles,
                                            uint32_t i)
{
    const float dt = sp->params.dt;
    const float *map = sp->maps[SSK_FORCE_DETAIL];
    const bool on = roles[i] == SSK_ROLE_FREE && sp->offsets[i + 1] > sp->offsets[i];
    const float kd = on ? sp->params.stiffness[SSK_FORCE_DETAIL] * (map ? map[i] : 1.0f) : 0.0f;
    return (1.0f + dt * kd) / dt;
}

/* n values in [-0.5, 0.5) from a fixed xorshift sequence: the start of the
 * power iterations (the same numbers on every run and thread count). */
static inline void ssk_spring_fixed_noise(float *v, size_t n)
{
    uint32_t state = 2463534242u;
    for (size_t k = 0; k < n; ++k) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        v[k] = (float)state / 4294967296.0f - 0.5f;
    }
}

/* --- the surface multigrid correction (spring_multigrid.c, issue #36) --- */

#define SSK_SPRING_MG_MAX_LEVELS 12
/* coarsening stops at this many nodes (the dense LU's size is 3 times it) */
#define SSK_SPRING_MG_COARSEST 200u
/* P0's weight of a vertex's own aggregate (the rest: its one-ring's) */
#define SSK_SPRING_MG_P0_OWN (1.0f / 3.0f)
/* block Jacobi sweeps before and after the coarse step of each level */
#define SSK_SPRING_MG_SWEEPS 2u
/* a level's products run in parallel from this many rows */
#define SSK_SPRING_MG_PARALLEL_ROWS 8192u
/* the probe's displacement, a fraction of the mean rest edge length */
#define SSK_SPRING_MG_PROBE_FRACTION 1e-2f
/* plain (not blended) passes in a row whose largest move grew before the
 * correction is halved for the rest of the solve */
#define SSK_SPRING_MG_GROWTH_WINDOW 2u
/* Anderson acceleration's depth (steps remembered) */
#define SSK_SPRING_MG_ANDERSON 8u

/* Block sparse rows of 3 by 3 blocks (row-major blocks). */
typedef struct ssk_spring_bsr {
    uint32_t rows, cols;
    uint32_t *ptr; /* rows + 1 */
    uint32_t *col; /* ptr[rows] */
    float *val;    /* 9 ptr[rows] */
} ssk_spring_bsr;

typedef struct ssk_spring_mg {
    uint32_t levels;                                 /* the coarsest level, >= 1 */
    uint32_t n[SSK_SPRING_MG_MAX_LEVELS + 1];        /* nodes per level (n[0] = #V) */
    ssk_spring_bsr A[SSK_SPRING_MG_MAX_LEVELS + 1];  /* A[0] = -dF/dx at rest */
    ssk_spring_bsr P[SSK_SPRING_MG_MAX_LEVELS];      /* P[l]: level l+1 -> l (l >= 1) */
    ssk_spring_bsr R[SSK_SPRING_MG_MAX_LEVELS];      /* P[l]^T */
    float *dinv[SSK_SPRING_MG_MAX_LEVELS + 1];       /* inverse diagonal blocks (l >= 1) */
    float omega[SSK_SPRING_MG_MAX_LEVELS + 1];       /* Jacobi weights 4 / (3 lambda_max) */
    float *b[SSK_SPRING_MG_MAX_LEVELS + 1], *x[SSK_SPRING_MG_MAX_LEVELS + 1],
        *t[SSK_SPRING_MG_MAX_LEVELS + 1];            /* work, 3 n[l] each */
    /* A0 per pass (A[0] is freed once A1 is built): a 3 by 3 block per
     * vertex and a scalar per neighbor (the model's couplings are
     * isotropic), f_ptr / f_col the neighbors */
    uint32_t *f_ptr, *f_col;
    float *f_off, *f_diag;
    /* P0: scalar weights, vertex rows to level-1 aggregates, and its
     * transpose */
    uint32_t *p0_ptr, *p0_col, *r0_ptr, *r0_row;
    float *p0_w, *r0_w;
    double *lu, *work; /* the coarsest level's LU (3 n by 3 n) */
    int32_t *piv;
    float theta;       /* the correction's weight in this solve (1, halved
                          when the moves grow) */
    float move_prev;   /* the last pass's largest squared move */
    /* Anderson acceleration (ssk_spring_mg_anderson): the last
     * SSK_SPRING_MG_ANDERSON differences of steps dF and the sums dX + dF
     * with those of iterates (rings), the last iterate and step */
    float *aa_s, *aa_df, *aa_x, *aa_f;
    double aa_gram[SSK_SPRING_MG_ANDERSON][SSK_SPRING_MG_ANDERSON]; /* dF^T dF */
    double *aa_partial; /* per chunk: 2 x depth partial dot products */
    float *chunk_max;   /* per chunk of SSK_PARALLEL_GRAIN rows: its largest move */
    uint32_t aa_count, aa_next;
    int aa_started;
    uint32_t growth;   /* passes in a row whose move grew */
    /* #V: 1 where no force acts (every stiffness times its map 0): the
     * correction leaves those rows, as the plain pass does; NULL without
     * stiffness maps */
    uint8_t *frozen;
    size_t bytes;
} ssk_spring_mg;

/* A distance-2 coloring of the spring's graph (color: #V); returns the
 * color count (0 when out of memory). */
uint32_t ssk_spring_mg_colors(const ssk_spring *sp, uint32_t *color);
/* The correction with A0's pattern, its values to probe (NULL: out of
 * memory). */
ssk_spring_mg *ssk_spring_mg_begin(const ssk_spring *sp);
/* Writes column `axis` of the blocks of color c from one probe: dforce #V
 * by 3 the change of F when each vertex i of color c moved by amplitude[i]
 * along `axis`. */
void ssk_spring_mg_probe_read(ssk_spring_mg *mg, const ssk_spring *sp, const uint32_t *color,
                              uint32_t c, uint32_t axis, const float *dforce,
                              const float *amplitude);
/* Adds the detail force's Jacobian (exact) to A0's probed blocks. */
void ssk_spring_mg_add_detail(ssk_spring_mg *mg, const ssk_spring *sp, const uint8_t *roles);
/* Aggregates, prolongations, Galerkin operators and the coarsest LU once
 * A0 is probed; false when out of memory. */
bool ssk_spring_mg_finish(ssk_spring_mg *mg, const ssk_spring *sp);
void ssk_spring_mg_destroy(ssk_spring_mg *mg);
/* step (#V by 3): the plain step g of the pass (F = g / p,
 * ssk_spring_step_inverse); adds theta P0 V(P0^T (D F - A0 g)) on the free
 * rows. Returns the largest squared corrected step over all rows (NaN or
 * infinite when one is not finite). */
float ssk_spring_mg_correct(ssk_spring_mg *mg, const ssk_spring *sp, float *step,
                            const uint8_t *roles);
/* The largest of mg->chunk_max over the chunks of SSK_PARALLEL_GRAIN rows
 * of #V = nv (squared lengths; NaN when one is NaN). */
float ssk_spring_mg_chunks_max(const ssk_spring_mg *mg, uint32_t nv);
/* Anderson acceleration of the corrected passes (Walker and Ni 2011, type
 * II): step (#V by 3) holds the pass's step f_k = G(x_k) - x_k at cur =
 * x_k; replaced by f_k - (dX + dF) gamma, gamma the least-squares fit of
 * f_k by the last differences of steps (a solve starts with aa_count,
 * aa_next and aa_started 0). Its buffers: ssk_spring_mg_anderson_alloc
 * (false when out of memory). */
void ssk_spring_mg_anderson(ssk_spring_mg *mg, const ssk_spring *sp, const float *cur,
                            float *step);
bool ssk_spring_mg_anderson_alloc(ssk_spring_mg *mg, const ssk_spring *sp);
/* A solve's start: the correction's weight theta 1, no Anderson history,
 * no growth streak. */
void ssk_spring_mg_solve_begin(ssk_spring_mg *mg);
/* The multigrid pass after its plain step (spring.c multigrid_pass; the
 * GL backend runs the plain step on the device and this on the host):
 * sp->mg->b[0] holds the plain step g of the pass from cur (#V by 3 rig
 * space, x_{k-1}; the step itself, not cur + g rounded), r that pass's
 * reductions (its energy). Writes next = x_k (#V by 3; prev = x_{k-2} for
 * a blend, omega != 1) and returns r with max_disp2, max_step2 and bad of
 * the corrected move; halves the correction's weight when the moves grow
 * (SSK_SPRING_MG_GROWTH_WINDOW). */
ssk_spring_pass ssk_spring_mg_pass_finish(ssk_spring *sp, float *next, const float *cur,
                                          const float *prev, float omega, const uint8_t *roles,
                                          ssk_spring_pass r);
/* Creates sp->mg and probes A0 at rest (spring.c). */
ssk_status ssk_spring_multigrid_probe(ssk_spring *sp, const float *rest,
                                      const ssk_attach_bone *rest_bones, ssk_error *err);


/* dst (#V floats): the larger of dst and each vertex's estimated distance to
 * the equilibrium over the tolerance after the last CPU solve: its move in
 * the last pass over that pass's largest move, times report->residual over
 * the spring's threshold (1 or more: not settled). False when no CPU solve
 * has run. */
bool ssk_spring_unsettled(const ssk_spring *sp, const ssk_spring_report *report, float *dst);

#endif /* SSK_SPRING_H */
