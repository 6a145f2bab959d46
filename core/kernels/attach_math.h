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

#endif /* SSK_ATTACH_MATH_H */
