/*
 * implicit_op.c — evaluation of implicit skinning's composition operators
 * and their controllers (Vaillant 2015, 4.5, 4.5.1, Fig. 4.6; issue #20).
 * The grids are bind/implicit_ops.c's.
 *
 * Value: trilinear interpolation of the N^3 grid, inputs clamped to
 * [0, 1].
 *
 * Partial derivatives: the trilinear interpolant T has a slope that jumps
 * at every cell face, which makes a Newton projection of the skin chatter
 * from cell to cell. We return instead the central difference of T with a
 * one-cell step h = 1 / (N - 1):
 *     dg/df1 = (T(f1 + h, f2, d) - T(f1 - h, f2, d)) / (2 h),
 * the step shortened at the box (f1 + h clamped to 1, f1 - h to 0, the
 * divisor the clamped span), likewise in f2. Since T is continuous, so is
 * this derivative, in all three inputs; it is piecewise trilinear (the
 * linear interpolation of the grid's nodal central differences), and
 * O(h^2)-close to the operator's gradient where g is smooth. For inputs
 * outside [0, 1] it is the derivative at the clamped point.
 *
 * Controllers (Fig. 4.6; the figure's curves are not in the text): d(alpha)
 * is the C1 cubic s(t) = t^2 (3 - 2 t) of t = (alpha - start) / (end -
 * start) clamped to [0, 1], 0 before `start`, 1 after `end`, with zero
 * slope at both ends (so C1 everywhere) and increasing in between.
 * Gourmel et al.'s three-point controller (3.4.1, Fig. 3.8) is described
 * there only through its control points and slopes, not its formula; the
 * cubic is the documented stand-in.
 * - contact d_c: start pi/2 ("between 0 and pi/2 ... no contact", 4.5),
 *   end pi (gradients opposite: full contact).
 * - bulge d_b: start 0 ("the bulge starts at low bending angles"; the
 *   cubic's zero slope at 0 makes it small but growing at small angles),
 *   end pi: half the bulge (Fig. 4.8(b)'s d_b = 1/2) at a right angle.
 */
#include "kernels/implicit.h"

#include <math.h>

#define SSK_IMPLICIT_PI 3.14159265358979323846
#define SSK_IMPLICIT_CONTACT_ALPHA_START (0.5 * SSK_IMPLICIT_PI)
#define SSK_IMPLICIT_CONTACT_ALPHA_END SSK_IMPLICIT_PI
#define SSK_IMPLICIT_BULGE_ALPHA_START 0.0
#define SSK_IMPLICIT_BULGE_ALPHA_END SSK_IMPLICIT_PI

static inline float clamp01(float x)
{
    /* NaN goes to 0 */
    return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f;
}

/* fminf(x, 1) and fmaxf(x, 0) for the clamped inputs' neighbors (never
 * NaN), without libm's calls. */
static inline float at_most_1(float x) { return x < 1.0f ? x : 1.0f; }
static inline float at_least_0(float x) { return x > 0.0f ? x : 0.0f; }

/* One axis of the grid: the cell c (0 .. N-2) holding x in [0, 1] and the
 * fraction t in it. */
static inline void grid_axis(float x, uint32_t n, uint32_t *c, float *t)
{
    const float g = x * (float)(n - 1);
    uint32_t i = (uint32_t)g;
    if (i > n - 2) i = n - 2;
    *c = i;
    *t = g - (float)i;
}

/* One axis position in the grid: cell and fraction (grid_axis). */
typedef struct axis_at {
    uint32_t c;
    float t;
} axis_at;

static inline axis_at axis(float x, uint32_t n)
{
    axis_at a;
    grid_axis(x, n, &a.c, &a.t);
    return a;
}

/* The bilinear interpolation of slice s (the grid from its corner (i, j))
 * by ti along f1, then tj along f2. */
static inline float bilinear(const float *s, uint32_t n, float ti, float tj)
{
    const float a = s[0] + ti * (s[1] - s[0]);
    const float b = s[n] + ti * (s[n + 1] - s[n]);
    return a + tj * (b - a);
}

/* The trilinear interpolant T at clamped inputs (cells u along f1, w along
 * f2): the bilinear values of slices k and k + 1 blended by tk. For tk = 0
 * (d = 0: a contact below a right angle, the most common merge) slice k
 * alone: c0 + 0 (c1 - c0) = c0 for the finite grid values, the same
 * number (a zero's sign aside), half the fetches. */
static float trilinear(const ssk_implicit_op *op, axis_at u, axis_at w, uint32_t k, float tk)
{
    const uint32_t n = op->resolution;
    const size_t nn = (size_t)n * n;
    const float *s0 = op->values + (size_t)k * nn + (size_t)w.c * n + u.c;
    const float c0 = bilinear(s0, n, u.t, w.t);
    if (tk == 0.0f) return c0;
    const float c1 = bilinear(s0 + nn, n, u.t, w.t);
    return c0 + tk * (c1 - c0);
}

float ssk_implicit_op_eval(const ssk_implicit_op *op, float f1, float f2, float d,
                           float *dg_df1, float *dg_df2)
{
    if (!op || !op->values || op->resolution < 2) {
        if (dg_df1) *dg_df1 = 0.0f;
        if (dg_df2) *dg_df2 = 0.0f;
        return 0.0f;
    }
    const uint32_t n = op->resolution;
    f1 = clamp01(f1);
    f2 = clamp01(f2);
    uint32_t k;
    float tk;
    grid_axis(clamp01(d), n, &k, &tk);
    const float h = 1.0f / (float)(n - 1);
    const axis_at u = axis(f1, n), w = axis(f2, n);
    if (dg_df1) {
        const float hi = at_most_1(f1 + h), lo = at_least_0(f1 - h);
        *dg_df1 = (trilinear(op, axis(hi, n), w, k, tk) - trilinear(op, axis(lo, n), w, k, tk)) /
                  (hi - lo);
    }
    if (dg_df2) {
        const float hi = at_most_1(f2 + h), lo = at_least_0(f2 - h);
        *dg_df2 = (trilinear(op, u, axis(hi, n), k, tk) - trilinear(op, u, axis(lo, n), k, tk)) /
                  (hi - lo);
    }
    return trilinear(op, u, w, k, tk);
}

/* Taylor terms of sin and cos on [-pi/2, pi/2] in ssk_implicit_acos: the
 * first omitted term is below 2e-18. */
#define SSK_IMPLICIT_TAYLOR_TERMS 11

float ssk_implicit_acos(float c)
{
    const float y0 = acosf(c);
    const double cd = (double)c;
    const double sn = sqrt(1.0 - cd * cd); /* 1 - c^2 is exact in double */
    /* sin and cos of u = y0 - pi/2 (|u| <= pi/2), each term from the last */
    const double u = (double)y0 - 0.5 * SSK_IMPLICIT_PI, u2 = u * u;
    double ts = u, tc = 1.0, s = u, co = 1.0;
    for (int k = 1; k < SSK_IMPLICIT_TAYLOR_TERMS; ++k) {
        ts = -ts * u2 / (double)((2 * k) * (2 * k + 1));
        tc = -tc * u2 / (double)((2 * k - 1) * (2 * k));
        s += ts;
        co += tc;
    }
    /* cos y0 = -sin u, sin y0 = cos u */
    const double d = sn * (-s) - cd * co;
    return (float)((double)y0 + (d + d * d * d / 6.0));
}

/* 0 before start, 1 after end, t^2 (3 - 2 t) between (C1). */
static float smooth_rise(double alpha, double start, double end)
{
    double t = (alpha - start) / (end - start);
    t = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0;
    return (float)(t * t * (3.0 - 2.0 * t));
}

float ssk_implicit_controller(ssk_implicit_op_kind kind, float alpha)
{
    if (kind == SSK_IMPLICIT_OP_BULGE)
        return smooth_rise(alpha, SSK_IMPLICIT_BULGE_ALPHA_START, SSK_IMPLICIT_BULGE_ALPHA_END);
    return smooth_rise(alpha, SSK_IMPLICIT_CONTACT_ALPHA_START, SSK_IMPLICIT_CONTACT_ALPHA_END);
}
