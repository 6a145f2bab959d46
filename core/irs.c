/*
 * irs.c — incremental rotation skinning (IRS), Toothman 2020 dissertation,
 * 4.1, Eq. 14-18 and Fig. 13; SCA 2017 poster, sec. 2.
 *
 * Per vertex i attached to bone b at t with bind scale vector s (rig space),
 * from the prepared bone (ssk_attach_prepare):
 *
 *  1. Rigid stage: a' = p' + t (c' - p'), s' = R_b s.
 *  2. Eq. 14 weights, with the bone's influences p_i, c_i:
 *       p_w = clamp(1 - t / p_i, 0, 1),
 *       c_w = clamp((t - c_i) / (1 - c_i), 0, 1)   (c_w = 0 when c_i = 1).
 *     p_w is 1 at the head joint and falls to 0 at t = p_i; c_w rises from
 *     0 at t = c_i to 1 at the tail joint.
 *  3. Eq. 15-16, the incremental rotations:
 *       Delta_p = Rot(-p_w theta_h / 2, x_h),  Delta_c = Rot(+c_w theta_t / 2, x_t),
 *     (theta_h, x_h) the head joint's rotation R_b R_parent^-1 and
 *     (theta_t, x_t) the tail joint's R_child R_b^-1, both rig space.
 *     At a joint J between parent P and child C with relative rotation
 *     D = R_C R_P^-1, the parent's vertices at J get D^(1/2) R_P and the
 *     child's get D^(-1/2) D R_P = D^(1/2) R_P: both sides meet, each having
 *     turned half the joint's rotation (toward the other bone).
 *     As quaternions: q_p = (cos(phi_p), sin(phi_p) x_h) with
 *     phi_p = -p_w theta_h / 4 (a quaternion carries the half angle), and
 *     q_c likewise with phi_c = +c_w theta_t / 4.
 *  4. Eq. 17, both weights positive: the paper averages the two matrices
 *     with weights p_w / (p_w + c_w) and c_w / (p_w + c_w); a weighted sum
 *     of rotation matrices is not a rotation (it shrinks s). We blend the
 *     quaternions with the same weights, sign-aligned (q_c negated when
 *     dot(q_p, q_c) < 0), and normalize (nlerp): the same blend, kept a
 *     rotation. With one weight zero the other quaternion is taken as it is
 *     (its blend weight is 1), with both zero q_p = identity: the four cases
 *     of Eq. 17 without a branch.
 *  5. Eq. 18: v'' = a' + Delta s'  (computed as the rotation Delta R_b of s).
 *  6. Length adjustment (Fig. 13; optional). The text: "re-project v''
 *     onto the skeleton to find v_s and compare |v'' - v_s| against the
 *     bind distance", so that the vertex keeps its bind distance to the
 *     skeleton. The printed update, v''' = v_p + (|s'| / |v'' - v_s|)
 *     (v'' - v_p), is ambiguous after extraction; both readings fail on a
 *     strong bend: pushing away from v_s tears the concave side, where the
 *     nearest skeleton point jumps from one bone to the other between
 *     neighboring vertices (edges stretched 11x at 135 degrees on the test
 *     limb), and scaling s'' from a' overshoots (ring areas 1.5x). We keep
 *     the goal and move the vertex along its own rotated scale vector,
 *     which is continuous over the mesh:
 *       d = |v'' - v_s|,  v''' = v'' + (d_rest - d) s''/|s''|,
 *     two such steps (the distance after one step is not exactly d_rest on
 *     a bend), where v_s is the nearest point on the posed segments of the
 *     bone, its parent and its tail child, and d_rest is the same distance
 *     at rest (ssk_irs_rest_distances; |s| when not given). At rest d =
 *     d_rest: the rest pose is reproduced exactly whatever the binding.
 *     Measured on the 2-bone test limb at a 135 degree bend
 *     (tests/c/test_quality.c): volume 0.95 of rest (0.89 without the
 *     adjustment), largest edge stretch 2.4 (1.6 without, DQS 2.9), every
 *     vertex at its rest distance to the skeleton; the concave side spreads
 *     along the bones (joint rings grow up to 1.55x in area). Variants
 *     tried and rejected: pushing off the nearest point of the bone's own
 *     segment or line (tears at the joint: stretch 11-12), pushing only
 *     outward (no effect on this limb).
 *
 * All rig space. The loop is OpenMP-parallel over vertices, allocation
 * free, and its only data-dependent choices are selects (the GLSL port
 * uses the same order of operations).
 */
#include "attach_math.h"

/* Fixed-point steps of the length adjustment. */
#define SSK_IRS_LENGTH_STEPS 2
/* Squared length below which a scale vector has no direction to move
 * along: its vertex is left as it is (it lies on the skeleton). */
#define SSK_IRS_DIRECTION_EPSILON 1e-12f

static inline __attribute__((always_inline)) float clamp01(float x)
{
    return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}

/* Distance from v to the nearest point of the posed segments of the bone,
 * its parent and its tail child (a missing one is the bone's own). */
static inline __attribute__((always_inline)) float
skeleton_distance(const float v[3], const ssk_attach_bone *restrict bones_data, int32_t b)
{
    const ssk_attach_bone *bone = &bones_data[b];
    const ssk_attach_bone *parent = &bones_data[bone->parent >= 0 ? bone->parent : b];
    const ssk_attach_bone *child = &bones_data[bone->tail_child >= 0 ? bone->tail_child : b];
    float q[3];
    float best = ssk_am_segment_nearest(q, v, parent->head, parent->tail);
    float d2 = ssk_am_segment_nearest(q, v, bone->head, bone->tail);
    best = d2 < best ? d2 : best;
    d2 = ssk_am_segment_nearest(q, v, child->head, child->tail);
    best = d2 < best ? d2 : best;
    return sqrtf(best);
}

/* Fig. 13 as documented above: steps along the unit direction `dir` of
 * the rotated scale vector toward the rest distance. */
static inline __attribute__((always_inline)) void
length_adjust(float v[3], const float dir[3], float rest_distance,
              const ssk_attach_bone *restrict bones_data, int32_t b)
{
    for (int step = 0; step < SSK_IRS_LENGTH_STEPS; ++step) {
        const float k = rest_distance - skeleton_distance(v, bones_data, b);
        v[0] += k * dir[0];
        v[1] += k * dir[1];
        v[2] += k * dir[2];
    }
}

void ssk_irs_rest_distances(float *restrict dst, uint32_t vertex_count,
                            const int32_t *restrict bones, const float *restrict t,
                            const float *restrict scale_vectors,
                            const ssk_attach_bone *restrict rest_bones)
{
    const int64_t nv = vertex_count;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; ++v) {
        float a[3];
        ssk_am_attachment(a, &rest_bones[bones[v]], t[v]);
        const float *s = scale_vectors + 3 * v;
        const float p[3] = {a[0] + s[0], a[1] + s[1], a[2] + s[2]};
        dst[v] = skeleton_distance(p, rest_bones, bones[v]);
    }
}

void ssk_irs_deform(float *restrict dst, uint32_t vertex_count, const int32_t *restrict bones,
                    const float *restrict t, const float *restrict scale_vectors,
                    const ssk_attach_bone *restrict bones_data, int length_adjust_on,
                    const float *restrict rest_distances)
{
    const int64_t nv = vertex_count;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; ++v) {
        const int32_t b = bones[v];
        const ssk_attach_bone *bone = &bones_data[b];
        const float tv = t[v];
        const float *s = scale_vectors + 3 * v;

        /* Eq. 14 */
        const float pi = bone->influence[0], ci = bone->influence[1];
        const float pw = clamp01(1.0f - tv / pi);
        const float cw = ci < 1.0f ? clamp01((tv - ci) / (1.0f - ci)) : 0.0f;

        /* Eq. 15-16 as quaternions (half of each Delta angle). */
        const float phi_p = -0.25f * pw * bone->head_joint[3];
        const float phi_c = 0.25f * cw * bone->tail_joint[3];
        const float sp = sinf(phi_p), sc = sinf(phi_c);
        const float qp[4] = {cosf(phi_p), sp * bone->head_joint[0], sp * bone->head_joint[1],
                             sp * bone->head_joint[2]};
        const float qc[4] = {cosf(phi_c), sc * bone->tail_joint[0], sc * bone->tail_joint[1],
                             sc * bone->tail_joint[2]};

        /* Eq. 17: normalized, sign-aligned blend. */
        const float wsum = pw + cw;
        const float alpha = wsum > 0.0f ? pw / wsum : 1.0f;
        const float dot = qp[0] * qc[0] + qp[1] * qc[1] + qp[2] * qc[2] + qp[3] * qc[3];
        const float beta = dot < 0.0f ? alpha - 1.0f : 1.0f - alpha;
        float q[4] = {alpha * qp[0] + beta * qc[0], alpha * qp[1] + beta * qc[1],
                      alpha * qp[2] + beta * qc[2], alpha * qp[3] + beta * qc[3]};
        const float inv = 1.0f / sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        q[0] *= inv;
        q[1] *= inv;
        q[2] *= inv;
        q[3] *= inv;

        /* Eq. 18: v'' = a' + Delta R_b s. */
        ssk_am_qmul(q, q, bone->rotation);
        float a[3], r[3];
        ssk_am_attachment(a, bone, tv);
        ssk_am_rotate(r, q, s);
        float out[3] = {a[0] + r[0], a[1] + r[1], a[2] + r[2]};

        const float rlen2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        if (length_adjust_on && rlen2 > SSK_IRS_DIRECTION_EPSILON) {
            const float inv_len = 1.0f / sqrtf(rlen2);
            const float dir[3] = {r[0] * inv_len, r[1] * inv_len, r[2] * inv_len};
            const float rest = rest_distances ? rest_distances[v] : sqrtf(rlen2);
            length_adjust(out, dir, rest, bones_data, b);
        }
        dst[3 * v] = out[0];
        dst[3 * v + 1] = out[1];
        dst[3 * v + 2] = out[2];
    }
}
