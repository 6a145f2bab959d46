/*
 * rotation.c — rotation helpers shared by the DQS preparation (dqs.c) and
 * the attachment deformers' per-bone preparation (attach.c); host side,
 * per bone and frame (the per-vertex kernels inline their own quaternion
 * math, core/kernels/attach_math.h).
 *
 * Matrices are row-major (r[row * 4 + col]); a matrix's "axis i" is its
 * column i (Blender's m[i] in its column-major storage).
 */
#include "model/internal.h"

#include <cglm/cglm.h>
#include <math.h>

/* Hand-written branch structure, cglm vector operations: cglm has no
 * orthogonalization, and this one must choose its branch and its helper
 * vector as Blender's orthogonalize_m4(m, 1) does (the DQS scale split and
 * the attachment deformers' bone frames compare with Blender's Armature
 * modifier). glm_vec3_normalize scales by the reciprocal length, as
 * Blender's normalize_v3. */
void ssk_orthogonalize_keep_y(float axes[3][3], const float m[16])
{
    vec3 x = {m[0], m[4], m[8]}, y = {m[1], m[5], m[9]}, z = {m[2], m[6], m[10]};
    glm_vec3_normalize(y);
    if (glm_vec3_dot(x, y) < 1.0f) {
        glm_vec3_cross(x, y, z);
        glm_vec3_normalize(z);
        glm_vec3_cross(y, z, x);
    } else if (glm_vec3_dot(x, z) < 1.0f) {
        glm_vec3_cross(y, z, x);
        glm_vec3_normalize(x);
        glm_vec3_cross(x, y, z);
    } else {
        vec3 helper = {y[1], y[2], y[0]};
        glm_vec3_cross(y, helper, x);
        glm_vec3_normalize(x);
        glm_vec3_cross(x, y, z);
    }
    for (int k = 0; k < 3; ++k) {
        axes[0][k] = x[k];
        axes[1][k] = y[k];
        axes[2][k] = z[k];
    }
}

/* Hand-written in double, not glm_mat3_quat: this quaternion feeds the DQS
 * dual quaternions and the attachment deformers' bone rotations, compared
 * with Blender's Armature modifier. cglm's single-precision conversion
 * (branches on trace >= 0) was measured to move DQS farther from Blender
 * (blender_test_conformance: largest DQS error 1.07e-6 -> 1.38e-6 of the
 * mesh diagonal), so the double-precision arithmetic stays. */
void ssk_axes_to_quat(float q[4], const float a[3][3])
{
    /* r(row, col) = a[col][row]; Shepperd's method: largest diagonal term. */
    const double r00 = a[0][0], r11 = a[1][1], r22 = a[2][2];
    const double r01 = a[1][0], r02 = a[2][0], r10 = a[0][1];
    const double r12 = a[2][1], r20 = a[0][2], r21 = a[1][2];
    const double tr = r00 + r11 + r22;
    double w, x, y, z;
    if (tr > 0.0) {
        double s = 2.0 * sqrt(tr + 1.0);
        w = 0.25 * s;
        x = (r21 - r12) / s;
        y = (r02 - r20) / s;
        z = (r10 - r01) / s;
    } else if (r00 > r11 && r00 > r22) {
        double s = 2.0 * sqrt(1.0 + r00 - r11 - r22);
        w = (r21 - r12) / s;
        x = 0.25 * s;
        y = (r01 + r10) / s;
        z = (r02 + r20) / s;
    } else if (r11 > r22) {
        double s = 2.0 * sqrt(1.0 + r11 - r00 - r22);
        w = (r02 - r20) / s;
        x = (r01 + r10) / s;
        y = 0.25 * s;
        z = (r12 + r21) / s;
    } else {
        double s = 2.0 * sqrt(1.0 + r22 - r00 - r11);
        w = (r10 - r01) / s;
        x = (r02 + r20) / s;
        y = (r12 + r21) / s;
        z = 0.25 * s;
    }
    double n = sqrt(w * w + x * x + y * y + z * z);
    q[0] = (float)(w / n);
    q[1] = (float)(x / n);
    q[2] = (float)(y / n);
    q[3] = (float)(z / n);
}
