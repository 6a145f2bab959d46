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
 * All rig space. The loop is parallel over vertices (model/parallel.h), allocation
 * free, and its only data-dependent choices are selects (the GLSL port
 * uses the same order of operations).
 */
#include "kernels/attach_math.h"
#include "kernels/simd.h"

/* The arrays of one IRS loop (rest distances or deform). */
typedef struct irs_job {
    float *dst;
    const int32_t *bones;
    const float *t, *scale_vectors, *rest_distances;
    const ssk_attach_bone *bones_data;
    int length_adjust_on;
} irs_job;

static void rest_distances_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const irs_job *j = ctx;
    (void)chunk;
    for (int64_t v = begin; v < end; ++v) {
        float a[3];
        ssk_am_attachment(a, &j->bones_data[j->bones[v]], j->t[v]);
        const float *s = j->scale_vectors + 3 * v;
        const float p[3] = {a[0] + s[0], a[1] + s[1], a[2] + s[2]};
        j->dst[v] = ssk_am_skeleton_distance(p, j->bones_data, j->bones[v]);
    }
}

void ssk_irs_rest_distances(float *restrict dst, uint32_t vertex_count,
                            const int32_t *restrict bones, const float *restrict t,
                            const float *restrict scale_vectors,
                            const ssk_attach_bone *restrict rest_bones)
{
    irs_job j = {dst, bones, t, scale_vectors, NULL, rest_bones, 0};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, rest_distances_chunk, &j);
}

/* One vertex of IRS (steps 1-6 of the header comment). */
static inline __attribute__((always_inline)) void
irs_vertex(float *restrict dst, int64_t v, const int32_t *restrict bones,
           const float *restrict t, const float *restrict scale_vectors,
           const ssk_attach_bone *restrict bones_data, const int length_adjust_on,
           const float *restrict rest_distances)
{
    const float s[3] = {scale_vectors[3 * v], scale_vectors[3 * v + 1], scale_vectors[3 * v + 2]};
    ssk_am_irs_point(dst + 3 * v, bones_data, bones[v], t[v], s, length_adjust_on,
                     rest_distances ? rest_distances[v] : -1.0f);
}

/* Lane helpers for irs_lanes8. */
typedef ssk_v8 v8;
#define V8(x) ssk_v8_splat(x)

static inline __attribute__((always_inline)) v8 v8_sqrt(v8 x)
{
    v8 r;
    for (int l = 0; l < 8; ++l) r[l] = sqrtf(x[l]);
    return r;
}

static inline __attribute__((always_inline)) v8 v8_clamp01(v8 x)
{
    x = ssk_v8_select(x < V8(0.0f), V8(0.0f), x);
    return ssk_v8_select(x > V8(1.0f), V8(1.0f), x);
}

/* Columns 0..7 of the first 8 floats of each lane's bone struct. */
static inline __attribute__((always_inline)) void
gather8(v8 col[8], const ssk_attach_bone *restrict bones_data, const int32_t idx[8], int chunk)
{
    for (int l = 0; l < 8; ++l) col[l] = ssk_v8_load((const float *)&bones_data[idx[l]] + 8 * chunk);
    ssk_v8_transpose8(col);
}

/* Squared distance from lanes p to the segments h -> c (ssk_am_segment_nearest). */
static inline __attribute__((always_inline)) v8
segment_distance2(const v8 p[3], const v8 h[3], const v8 c[3], v8 inv_len2)
{
    const v8 d0 = c[0] - h[0], d1 = c[1] - h[1], d2 = c[2] - h[2];
    const v8 proj = (p[0] - h[0]) * d0 + (p[1] - h[1]) * d1 + (p[2] - h[2]) * d2;
    const v8 u = v8_clamp01(proj * inv_len2);
    const v8 e0 = p[0] - (h[0] + u * d0), e1 = p[1] - (h[1] + u * d1), e2 = p[2] - (h[2] + u * d2);
    return e0 * e0 + e1 * e1 + e2 * e2;
}

/* Eight vertices of IRS: the arithmetic of irs_vertex with lanes =
 * vertices; bone data gathered per lane and transposed. */
static inline __attribute__((always_inline)) void
irs_lanes8(float *restrict dst, int64_t v0, const int32_t *restrict bones,
           const float *restrict t, const float *restrict scale_vectors,
           const ssk_attach_bone *restrict bones_data, const int length_adjust_on,
           const float *restrict rest_distances)
{
    int32_t idx[8];
    for (int l = 0; l < 8; ++l) idx[l] = bones[v0 + l];
    v8 c0[8], c1[8], c2[8];
    gather8(c0, bones_data, idx, 0); /* head xyz_, tail xyz_ */
    gather8(c1, bones_data, idx, 1); /* rotation wxyz, head joint xyz angle */
    gather8(c2, bones_data, idx, 2); /* tail joint xyz angle, influence p c _ _ */
    const v8 tv = ssk_v8_load(t + v0);
    v8 sx, sy, sz;
    ssk_v8_load_xyz(scale_vectors + 3 * v0, &sx, &sy, &sz);

    /* Eq. 14 */
    const v8 pw = v8_clamp01(V8(1.0f) - tv * c2[6]);
    const v8 cw = v8_clamp01((tv - c2[5]) * c2[7]);

    /* Eq. 15-16: the polynomials of ssk_am_sincos_quarter */
    const v8 phi_p = V8(-0.25f) * pw * c1[7];
    const v8 phi_c = V8(0.25f) * cw * c2[3];
#define SIN_Q(x, x2) ((x) * (V8(1.0f) + (x2) * (V8(-1.0f / 6.0f) + (x2) * (V8(1.0f / 120.0f) + (x2) * (V8(-1.0f / 5040.0f) + (x2) * V8(1.0f / 362880.0f))))))
#define COS_Q(x2) (V8(1.0f) + (x2) * (V8(-0.5f) + (x2) * (V8(1.0f / 24.0f) + (x2) * (V8(-1.0f / 720.0f) + (x2) * (V8(1.0f / 40320.0f) + (x2) * V8(-1.0f / 3628800.0f))))))
    const v8 pp2 = phi_p * phi_p, pc2 = phi_c * phi_c;
    const v8 sp = SIN_Q(phi_p, pp2), cp = COS_Q(pp2), sc = SIN_Q(phi_c, pc2), cc = COS_Q(pc2);
#undef SIN_Q
#undef COS_Q
    const v8 qp0 = cp, qp1 = sp * c1[4], qp2 = sp * c1[5], qp3 = sp * c1[6];
    const v8 qc0 = cc, qc1 = sc * c2[0], qc2 = sc * c2[1], qc3 = sc * c2[2];

    /* Eq. 17 */
    const v8 wsum = pw + cw;
    const ssk_i8 some = wsum > V8(0.0f);
    const v8 alpha = ssk_v8_select(some, pw / ssk_v8_select(some, wsum, V8(1.0f)), V8(1.0f));
    const v8 dot = qp0 * qc0 + qp1 * qc1 + qp2 * qc2 + qp3 * qc3;
    const v8 beta = ssk_v8_select(dot < V8(0.0f), alpha - V8(1.0f), V8(1.0f) - alpha);
    v8 q0 = alpha * qp0 + beta * qc0, q1 = alpha * qp1 + beta * qc1;
    v8 q2 = alpha * qp2 + beta * qc2, q3 = alpha * qp3 + beta * qc3;
    const v8 inv = V8(1.0f) / v8_sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3);
    q0 *= inv;
    q1 *= inv;
    q2 *= inv;
    q3 *= inv;

    /* Eq. 18: Delta R_b (Hamilton product, ssk_am_qmul), then rotate s. */
    const v8 b0 = c1[0], b1 = c1[1], b2 = c1[2], b3 = c1[3];
    const v8 w = q0 * b0 - q1 * b1 - q2 * b2 - q3 * b3;
    const v8 x = q0 * b1 + q1 * b0 + q2 * b3 - q3 * b2;
    const v8 y = q0 * b2 - q1 * b3 + q2 * b0 + q3 * b1;
    const v8 z = q0 * b3 + q1 * b2 - q2 * b1 + q3 * b0;
    const v8 tx = V8(2.0f) * (y * sz - z * sy);
    const v8 ty = V8(2.0f) * (z * sx - x * sz);
    const v8 tz = V8(2.0f) * (x * sy - y * sx);
    const v8 rx = sx + w * tx + (y * tz - z * ty);
    const v8 ry = sy + w * ty + (z * tx - x * tz);
    const v8 rz = sz + w * tz + (x * ty - y * tx);
    const v8 head[3] = {c0[0], c0[1], c0[2]}, tail[3] = {c0[4], c0[5], c0[6]};
    v8 p[3] = {head[0] + tv * (tail[0] - head[0]) + rx, head[1] + tv * (tail[1] - head[1]) + ry,
               head[2] + tv * (tail[2] - head[2]) + rz};

    if (length_adjust_on) {
        int32_t pidx[8], cidx[8];
        for (int l = 0; l < 8; ++l) {
            const ssk_attach_bone *bone = &bones_data[idx[l]];
            pidx[l] = bone->parent >= 0 ? bone->parent : idx[l];
            cidx[l] = bone->tail_child >= 0 ? bone->tail_child : idx[l];
        }
        v8 pc[8], cc8[8];
        gather8(pc, bones_data, pidx, 0);
        gather8(cc8, bones_data, cidx, 0);
        const v8 ph[3] = {pc[0], pc[1], pc[2]}, pt[3] = {pc[4], pc[5], pc[6]};
        const v8 ch[3] = {cc8[0], cc8[1], cc8[2]}, ct[3] = {cc8[4], cc8[5], cc8[6]};
        const v8 rlen2 = rx * rx + ry * ry + rz * rz;
        const ssk_i8 has_dir = rlen2 > V8(SSK_IRS_DIRECTION_EPSILON);
        const v8 rlen = v8_sqrt(ssk_v8_select(has_dir, rlen2, V8(1.0f)));
        const v8 inv_len = ssk_v8_select(has_dir, V8(1.0f) / rlen, V8(0.0f));
        const v8 dir[3] = {rx * inv_len, ry * inv_len, rz * inv_len};
        const v8 rest = rest_distances ? ssk_v8_load(rest_distances + v0) : rlen;
        for (int step = 0; step < SSK_IRS_LENGTH_STEPS; ++step) {
            v8 best = segment_distance2(p, ph, pt, pc[3]);
            v8 d2 = segment_distance2(p, head, tail, c0[3]);
            best = ssk_v8_select(d2 < best, d2, best);
            d2 = segment_distance2(p, ch, ct, cc8[3]);
            best = ssk_v8_select(d2 < best, d2, best);
            const v8 k = rest - v8_sqrt(best);
            p[0] += k * dir[0];
            p[1] += k * dir[1];
            p[2] += k * dir[2];
        }
    }
    ssk_v8_store_xyz(dst + 3 * v0, p[0], p[1], p[2]);
}
#undef V8

SSK_TARGET_CLONES
static void irs_block(float *restrict dst, int64_t begin, int64_t end,
                      const int32_t *restrict bones, const float *restrict t,
                      const float *restrict scale_vectors,
                      const ssk_attach_bone *restrict bones_data, int length_adjust_on,
                      const float *restrict rest_distances)
{
    int64_t v = begin;
    if (length_adjust_on) {
        for (; v + 8 <= end; v += 8)
            irs_lanes8(dst, v, bones, t, scale_vectors, bones_data, 1, rest_distances);
    } else {
        for (; v + 8 <= end; v += 8)
            irs_lanes8(dst, v, bones, t, scale_vectors, bones_data, 0, rest_distances);
    }
    for (; v < end; ++v) /* the last < 8 vertices */
        irs_vertex(dst, v, bones, t, scale_vectors, bones_data, length_adjust_on, rest_distances);
}

static void irs_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const irs_job *j = ctx;
    (void)chunk;
    irs_block(j->dst, begin, end, j->bones, j->t, j->scale_vectors, j->bones_data,
              j->length_adjust_on, j->rest_distances);
}

void ssk_irs_deform(float *restrict dst, uint32_t vertex_count, const int32_t *restrict bones,
                    const float *restrict t, const float *restrict scale_vectors,
                    const ssk_attach_bone *restrict bones_data, int length_adjust_on,
                    const float *restrict rest_distances)
{
    irs_job j = {dst, bones, t, scale_vectors, rest_distances, bones_data, length_adjust_on};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, irs_chunk, &j);
}
