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

#include <math.h>

static void cross3(float r[3], const float a[3], const float b[3])
{
    float x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2],
          z = a[0] * b[1] - a[1] * b[0];
    r[0] = x;
    r[1] = y;
    r[2] = z;
}

static void normalize3(float v[3])
{
    float l = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (l > 0.0f) {
        v[0] /= l;
        v[1] /= l;
        v[2] /= l;
    }
}

void ssk_orthogonalize_keep_y(float axes[3][3], const float m[16])
{
    float x[3] = {m[0], m[4], m[8]}, y[3] = {m[1], m[5], m[9]}, z[3] = {m[2], m[6], m[10]};
    normalize3(y);
    if (x[0] * y[0] + x[1] * y[1] + x[2] * y[2] < 1.0f) {
        cross3(z, x, y);
        normalize3(z);
        cross3(x, y, z);
    } else if (x[0] * z[0] + x[1] * z[1] + x[2] * z[2] < 1.0f) {
        cross3(x, y, z);
        normalize3(x);
        cross3(z, x, y);
    } else {
        float helper[3] = {y[1], y[2], y[0]};
        cross3(x, y, helper);
        normalize3(x);
        cross3(z, x, y);
    }
    for (int k = 0; k < 3; ++k) {
        axes[0][k] = x[k];
        axes[1][k] = y[k];
        axes[2][k] = z[k];
    }
}

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
