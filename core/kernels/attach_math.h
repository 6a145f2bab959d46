/*
 * attach_math.h — the small vector and quaternion operations of the
 * attachment kernels (rigid.c, irs.c, radial.c), always inlined. Written in
 * the order a GLSL port computes them: quaternions are vec4 (w, x, y, z),
 * rotation is the two-cross-product form, no matrices per vertex.
 */
#ifndef SSK_ATTACH_MATH_H
#define SSK_ATTACH_MATH_H

#include "model/internal.h"

#include <math.h>

#define SSK_AM_INLINE static inline __attribute__((always_inline))

/* r = q v q^-1 for a unit quaternion q = (w, u):
 * t = 2 (u x v), r = v + w t + u x t. r may alias v. */
SSK_AM_INLINE void ssk_am_rotate(float r[3], const float q[4], const float v[3])
{
    const float tx = 2.0f * (q[2] * v[2] - q[3] * v[1]);
    const float ty = 2.0f * (q[3] * v[0] - q[1] * v[2]);
    const float tz = 2.0f * (q[1] * v[1] - q[2] * v[0]);
    const float rx = v[0] + q[0] * tx + (q[2] * tz - q[3] * ty);
    const float ry = v[1] + q[0] * ty + (q[3] * tx - q[1] * tz);
    const float rz = v[2] + q[0] * tz + (q[1] * ty - q[2] * tx);
    r[0] = rx;
    r[1] = ry;
    r[2] = rz;
}

/* Hamilton product r = a b (apply b first, then a). r may alias a or b. */
SSK_AM_INLINE void ssk_am_qmul(float r[4], const float a[4], const float b[4])
{
    const float w = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    const float x = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    const float y = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    const float z = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    r[0] = w;
    r[1] = x;
    r[2] = y;
    r[3] = z;
}

/* Posed attachment point a' = p' + t (c' - p') of a prepared bone. */
SSK_AM_INLINE void ssk_am_attachment(float a[3], const ssk_attach_bone *bone, float t)
{
    a[0] = bone->head[0] + t * (bone->tail[0] - bone->head[0]);
    a[1] = bone->head[1] + t * (bone->tail[1] - bone->head[1]);
    a[2] = bone->head[2] + t * (bone->tail[2] - bone->head[2]);
}

/* Squared distance from v to the segment p -> c, and the nearest point
 * (u = clamp(dot(v - p, c - p) inv_len2, 0, 1) with inv_len2 = 1 / |c - p|^2,
 * 0 for a zero-length segment, which gives p). */
SSK_AM_INLINE float ssk_am_segment_nearest(float out[3], const float v[3], const float p[3],
                                           const float c[3], float inv_len2)
{
    const float d[3] = {c[0] - p[0], c[1] - p[1], c[2] - p[2]};
    const float proj = (v[0] - p[0]) * d[0] + (v[1] - p[1]) * d[1] + (v[2] - p[2]) * d[2];
    float u = proj * inv_len2;
    u = u < 0.0f ? 0.0f : (u > 1.0f ? 1.0f : u);
    out[0] = p[0] + u * d[0];
    out[1] = p[1] + u * d[1];
    out[2] = p[2] + u * d[2];
    const float e[3] = {v[0] - out[0], v[1] - out[1], v[2] - out[2]};
    return e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
}

/* Nearest point of v on the infinite line through p and c (p when p = c);
 * returns the squared distance. */
SSK_AM_INLINE float ssk_am_line_nearest(float out[3], const float v[3], const float p[3],
                                        const float c[3])
{
    const float d[3] = {c[0] - p[0], c[1] - p[1], c[2] - p[2]};
    const float len2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    const float proj = (v[0] - p[0]) * d[0] + (v[1] - p[1]) * d[1] + (v[2] - p[2]) * d[2];
    const float u = len2 > 0.0f ? proj / len2 : 0.0f;
    out[0] = p[0] + u * d[0];
    out[1] = p[1] + u * d[1];
    out[2] = p[2] + u * d[2];
    const float e[3] = {v[0] - out[0], v[1] - out[1], v[2] - out[2]};
    return e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
}

/* sin and cos of |x| <= pi/4 (the Delta half-angles of IRS: theta <= pi
 * and weights <= 1 give |phi| <= pi/4) by their Taylor polynomials to
 * degree 9 and 10: the truncation error there is below 3e-9, under float
 * rounding; unlike libm calls, the polynomials vectorize. */
SSK_AM_INLINE void ssk_am_sincos_quarter(float x, float *s, float *c)
{
    const float x2 = x * x;
    *s = x * (1.0f + x2 * (-1.0f / 6.0f + x2 * (1.0f / 120.0f +
                                              x2 * (-1.0f / 5040.0f + x2 * (1.0f / 362880.0f)))));
    *c = 1.0f + x2 * (-0.5f + x2 * (1.0f / 24.0f +
                                    x2 * (-1.0f / 720.0f + x2 * (1.0f / 40320.0f +
                                                                  x2 * (-1.0f / 3628800.0f)))));
}

/* sin and cos of |x| <= pi/2: the quarter-range polynomials at x/2, then
 * the double angle (the weights attachment's p_w, c_w reach 1 / p_i). */
SSK_AM_INLINE void ssk_am_sincos_half(float x, float *s, float *c)
{
    float sh, ch;
    ssk_am_sincos_quarter(0.5f * x, &sh, &ch);
    *s = 2.0f * sh * ch;
    *c = ch * ch - sh * sh;
}

static inline __attribute__((always_inline)) float ssk_am_clamp01(float x)
{
    return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}

/* The attachment parameter of rig-space point x on a (rest) bone: its
 * projection onto the segment head -> tail, clamped to [0, 1] (head[3]
 * holds 1 / |tail - head|^2, ssk_attach_prepare); _segment: from the
 * bone's head[4] and tail[3] alone. */
SSK_AM_INLINE float ssk_am_project_t_segment(const float head[4], const float tail[3],
                                             const float x[3])
{
    const float d[3] = {tail[0] - head[0], tail[1] - head[1], tail[2] - head[2]};
    const float proj = (x[0] - head[0]) * d[0] + (x[1] - head[1]) * d[1] + (x[2] - head[2]) * d[2];
    return ssk_am_clamp01(proj * head[3]);
}
SSK_AM_INLINE float ssk_am_project_t(const ssk_attach_bone *bone, const float x[3])
{
    return ssk_am_project_t_segment(bone->head, bone->tail, x);
}

/* IRS's rotation of a scale vector (Toothman 2020, Eq. 15-17;
 * core/kernels/irs.c gives the derivation) for Eq. 14's weights p_w, c_w
 * (in [0, 1] from t; up to 1 / p_i and 1 / (1 - c_i) in the weights mode,
 * attach_weights.c): q = Delta R_b, a unit quaternion, from the half joint
 * rotations of Eq. 15-16 as quaternions and their normalized, sign-aligned
 * blend. */
SSK_AM_INLINE void ssk_am_irs_rotation_pc(float q[4], const ssk_attach_bone *bone, float pw,
                                          float cw)
{
    const float phi_p = -0.25f * pw * bone->head_joint[3];
    const float phi_c = 0.25f * cw * bone->tail_joint[3];
    float sp, cp, sc, cc;
    if (pw > 1.0f || cw > 1.0f) { /* |phi| up to pi/2 (weights mode) */
        ssk_am_sincos_half(phi_p, &sp, &cp);
        ssk_am_sincos_half(phi_c, &sc, &cc);
    } else {
        ssk_am_sincos_quarter(phi_p, &sp, &cp);
        ssk_am_sincos_quarter(phi_c, &sc, &cc);
    }
    const float qp[4] = {cp, sp * bone->head_joint[0], sp * bone->head_joint[1],
                         sp * bone->head_joint[2]};
    const float qc[4] = {cc, sc * bone->tail_joint[0], sc * bone->tail_joint[1],
                         sc * bone->tail_joint[2]};
    const float wsum = pw + cw;
    const float alpha = wsum > 0.0f ? pw / (wsum > 0.0f ? wsum : 1.0f) : 1.0f;
    const float dot = qp[0] * qc[0] + qp[1] * qc[1] + qp[2] * qc[2] + qp[3] * qc[3];
    const float beta = dot < 0.0f ? alpha - 1.0f : 1.0f - alpha;
    float r[4] = {alpha * qp[0] + beta * qc[0], alpha * qp[1] + beta * qc[1],
                  alpha * qp[2] + beta * qc[2], alpha * qp[3] + beta * qc[3]};
    const float inv = 1.0f / sqrtf(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
    r[0] *= inv;
    r[1] *= inv;
    r[2] *= inv;
    r[3] *= inv;
    ssk_am_qmul(q, r, bone->rotation);
}

/* ssk_am_irs_rotation_pc with Eq. 14's weights from t: the paper's IRS. */
SSK_AM_INLINE void ssk_am_irs_rotation(float q[4], const ssk_attach_bone *bone, float t)
{
    const float ci = bone->influence[1];
    const float pw = ssk_am_clamp01(1.0f - t * bone->influence[2]);
    const float cw = ssk_am_clamp01((t - ci) * bone->influence[3]);
    ssk_am_irs_rotation_pc(q, bone, pw, cw);
}

/* Distance from v to the nearest point of the prepared segments of bone b,
 * its parent and its tail child (a missing one is the bone's own): the
 * skeleton near b that IRS's length adjustment measures against. */
SSK_AM_INLINE float ssk_am_skeleton_distance(const float v[3], const ssk_attach_bone *bones_data,
                                             int32_t b)
{
    const ssk_attach_bone *bone = &bones_data[b];
    const ssk_attach_bone *parent = &bones_data[bone->parent >= 0 ? bone->parent : b];
    const ssk_attach_bone *child = &bones_data[bone->tail_child >= 0 ? bone->tail_child : b];
    float q[3];
    float best = ssk_am_segment_nearest(q, v, parent->head, parent->tail, parent->head[3]);
    float d2 = ssk_am_segment_nearest(q, v, bone->head, bone->tail, bone->head[3]);
    best = d2 < best ? d2 : best;
    d2 = ssk_am_segment_nearest(q, v, child->head, child->tail, child->head[3]);
    best = d2 < best ? d2 : best;
    return sqrtf(best);
}

/* Fixed-point steps of IRS's length adjustment (irs.c, Fig. 13). */
#define SSK_IRS_LENGTH_STEPS 2
/* Squared length below which a scale vector has no direction to move
 * along: its vertex is left as it is (it lies on the skeleton). */
#define SSK_IRS_DIRECTION_EPSILON 1e-12f

/* Fig. 13 as irs.c reads it: moves p along the unit direction of its
 * rotated scale vector r until its distance to the skeleton near bone b
 * is rest_distance (< 0: |r|), in SSK_IRS_LENGTH_STEPS fixed-point steps. */
SSK_AM_INLINE void ssk_am_length_adjust(float p[3], const float r[3], float rest_distance,
                                        const ssk_attach_bone *bones_data, int32_t b)
{
    const float rlen2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    const int has_dir = rlen2 > SSK_IRS_DIRECTION_EPSILON;
    const float rlen = sqrtf(has_dir ? rlen2 : 1.0f);
    const float inv_len = has_dir ? 1.0f / rlen : 0.0f; /* no direction: no move */
    const float dir[3] = {r[0] * inv_len, r[1] * inv_len, r[2] * inv_len};
    const float rest = rest_distance >= 0.0f ? rest_distance : rlen;
    for (int step = 0; step < SSK_IRS_LENGTH_STEPS; ++step) {
        const float k = rest - ssk_am_skeleton_distance(p, bones_data, b);
        p[0] += k * dir[0];
        p[1] += k * dir[1];
        p[2] += k * dir[2];
    }
}

/* One point of IRS (Eq. 14-18, with Fig. 13's length adjustment as irs.c
 * reads it when length_adjust_on): attached to bone b at t with bind scale
 * vector s; rest_distance < 0 means |s|. Rig space. */
SSK_AM_INLINE void ssk_am_irs_point(float out[3], const ssk_attach_bone *bones_data, int32_t b,
                                    float t, const float s[3], int length_adjust_on,
                                    float rest_distance)
{
    const ssk_attach_bone *bone = &bones_data[b];
    float q[4], a[3], r[3];
    ssk_am_irs_rotation(q, bone, t);
    ssk_am_attachment(a, bone, t);
    ssk_am_rotate(r, q, s);
    out[0] = a[0] + r[0];
    out[1] = a[1] + r[1];
    out[2] = a[2] + r[2];
    if (length_adjust_on) ssk_am_length_adjust(out, r, rest_distance, bones_data, b);
}

#endif /* SSK_ATTACH_MATH_H */
