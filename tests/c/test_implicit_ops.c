/* test_implicit_ops.c — the composition operators of implicit skinning
 * (Vaillant 2015, 4.5-4.5.1; issue #20; core/bind/implicit_ops.c and
 * core/kernels/implicit_op.c) against what the text fixes, computed here
 * independently of the builder:
 * - Eq. 4.3 at every boundary grid vertex of every slice, and through
 *   ssk_implicit_op_eval along the boundary between vertices and slices;
 * - Eq. 4.4: g = 0.5 along the profile curves (the L-shaped union line,
 *   the contact line f1 = f2 of length d, the bulge's B-splines evaluated
 *   here by the Cox-de Boor recursion), within a tolerance tied to h;
 * - d = 0 is the clean union: g = 0.5 where max(f1, f2) = 0.5, and away
 *   from that line g > 0.5 exactly where max(f1, f2) > 0.5;
 * - d = 1 is full contact: g = 0.5 on f1 = f2 from (0.5, 0.5) to the box,
 *   g > 0.5 on both sides of it; the bulge at d = 1 is inflated where the
 *   union is not (g > 0.5 between its curve and f2 = 0.5);
 * - g(f1, f2, d) = g(f2, f1, d);
 * - the derivatives of eval against finite differences of eval, their
 *   continuity across cell faces, and exactness on a linear grid;
 * - the controllers at 0, pi/2, pi, their C1 continuity, monotonicity;
 * - the same grid on 1 and 2 threads; bad arguments refused. */
#include "testutil.h"

#include "bind/implicit_bind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PI 3.14159265358979323846
#define ISO 0.5
/* Resolutions of the checks (the paper's 128 once, timed) */
#define N_SMALL 33
#define N_MAIN 64
#define N_PAPER 128
/* Points sampled along each profile piece */
#define PROFILE_SAMPLES 400
/* |g - 0.5| on the outer profile curves, in units of the grid step h:
 * exact where the curve crosses a cell as a straight line (the signed
 * distance is linear there); where two pieces meet at (0.5, 0.5) the
 * distance is not, and the bilinear cell misses by about 0.3 h */
#define PROFILE_TOL_CELLS 0.4
/* ... and on the contact line: g = 0.5 + |distance| at the vertices of
 * its cells is a valley that the bilinear interpolant fills by
 * h / (2 sqrt 2) in the middle of a cell the line crosses diagonally, and
 * by up to about h / 2 near the line's tip inside a cell */
#define LINE_TOL_CELLS 0.6
/* Sign checks only at this distance (cells) from the profile */
#define SIGN_MARGIN_CELLS 2.0
/* The text's bulge control points at d = 1 (4.5.1) */
static const double bulge_ctrl[5][2] = {
    {0.0, 0.5}, {0.15, 0.45}, {0.39, 0.40}, {0.44, 0.44}, {0.5, 0.5}};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void build(ssk_implicit_op *op, ssk_implicit_op_kind kind, uint32_t n)
{
    ssk_error err = {0};
    if (ssk_implicit_op_build(op, kind, n, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(op->resolution, n);
    assert_int_equal(op->kind, kind);
}

static float grid_at(const ssk_implicit_op *op, uint32_t i, uint32_t j, uint32_t k)
{
    const size_t n = op->resolution;
    return op->values[(k * n + j) * n + i];
}

/* Cox-de Boor basis N_{i,p}(t) over the open uniform knots 0 0 0 0 .5 1 1 1 1
 * (the right end included in the last span). */
static double basis(int i, int p, double t)
{
    static const double knots[9] = {0, 0, 0, 0, 0.5, 1, 1, 1, 1};
    if (p == 0) {
        if (t == 1.0) return (knots[i] < 1.0 && knots[i + 1] == 1.0) ? 1.0 : 0.0;
        return knots[i] <= t && t < knots[i + 1] ? 1.0 : 0.0;
    }
    double v = 0.0;
    const double l = knots[i + p] - knots[i], r = knots[i + p + 1] - knots[i + 1];
    if (l > 0.0) v += (t - knots[i]) / l * basis(i, p - 1, t);
    if (r > 0.0) v += (knots[i + p + 1] - t) / r * basis(i + 1, p - 1, t);
    return v;
}

/* The bulge curve (f2 >= f1 side) at slice d, parameter t. */
static void bulge_point(double d, double t, double out[2])
{
    out[0] = out[1] = 0.0;
    for (int i = 0; i < 5; ++i) {
        const double b = basis(i, 3, t);
        out[0] += b * bulge_ctrl[i][0];
        out[1] += b * ((1.0 - d) * ISO + d * bulge_ctrl[i][1]);
    }
}

/* g at a point through eval. */
static double ev(const ssk_implicit_op *op, double f1, double f2, double d)
{
    return ssk_implicit_op_eval(op, (float)f1, (float)f2, (float)d, NULL, NULL);
}

/* Largest |g - 0.5| along the profile of slice k: *outer on both outer
 * curves, *line on the contact line clipped one cell short of the corner
 * (where Eq. 4.3's g(1, 1) = 1 wins). */
static void profile_error(const ssk_implicit_op *op, uint32_t k, double *outer, double *line)
{
    const uint32_t n = op->resolution;
    const double h = 1.0 / (n - 1), d = k * h;
    double worst = 0.0, worst_line = 0.0;
    for (int s = 0; s <= PROFILE_SAMPLES; ++s) {
        const double t = (double)s / PROFILE_SAMPLES;
        double p[2];
        if (op->kind == SSK_IMPLICIT_OP_CONTACT) {
            p[0] = t * ISO;
            p[1] = ISO;
        } else {
            bulge_point(d, t, p);
        }
        worst = fmax(worst, fabs(ev(op, p[0], p[1], d) - ISO));
        worst = fmax(worst, fabs(ev(op, p[1], p[0], d) - ISO));
        const double end = fmin(ISO + d / sqrt(2.0), 1.0 - h);
        if (end > ISO) {
            const double c = ISO + t * (end - ISO);
            worst_line = fmax(worst_line, fabs(ev(op, c, c, d) - ISO));
        }
    }
    *outer = fmax(*outer, worst);
    *line = fmax(*line, worst_line);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    ssk_error err = {0};
    ssk_implicit_op op;
    memset(&op, 0xab, sizeof op);
    assert_int_equal(ssk_implicit_op_build(NULL, SSK_IMPLICIT_OP_CONTACT, 32, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "NULL"));
    assert_int_equal(ssk_implicit_op_build(&op, SSK_IMPLICIT_OP_CONTACT, 7, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "resolution 7"));
    assert_null(op.values);
    assert_int_equal(ssk_implicit_op_build(&op, SSK_IMPLICIT_OP_CONTACT, 513, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_implicit_op_build(&op, SSK_IMPLICIT_OP_KIND_COUNT, 32, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "kind"));
    assert_int_equal(ssk_implicit_op_build(&op, (ssk_implicit_op_kind)-1, 32, NULL),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_null(op.values);
    ssk_implicit_op_free(NULL);
    ssk_implicit_op_free(&op);
    float d1 = 7.0f, d2 = 7.0f;
    assert_true(ssk_implicit_op_eval(NULL, 0.5f, 0.5f, 0.5f, &d1, &d2) == 0.0f);
    assert_true(d1 == 0.0f && d2 == 0.0f);
    /* the smallest resolution builds */
    assert_int_equal(ssk_implicit_op_build(&op, SSK_IMPLICIT_OP_BULGE, 8, &err), SSK_OK);
    ssk_implicit_op_free(&op);
    assert_null(op.values);
}

/* Eq. 4.3 at every boundary vertex of every slice, and along the boundary
 * through eval (between vertices and slices). */
static void test_boundary_values(void **state)
{
    (void)state;
    for (int kind = 0; kind < SSK_IMPLICIT_OP_KIND_COUNT; ++kind) {
        ssk_implicit_op op;
        build(&op, (ssk_implicit_op_kind)kind, N_SMALL);
        const uint32_t n = op.resolution;
        for (uint32_t k = 0; k < n; ++k) {
            for (uint32_t t = 0; t < n; ++t) {
                const float f = (float)((double)t / (n - 1));
                assert_true(grid_at(&op, t, 0, k) == f);     /* g(f1, 0) = f1 */
                assert_true(grid_at(&op, 0, t, k) == f);     /* g(0, f2) = f2 */
                assert_true(grid_at(&op, t, n - 1, k) == 1.0f); /* g(f1, 1) = 1 */
                assert_true(grid_at(&op, n - 1, t, k) == 1.0f); /* g(1, f2) = 1 */
            }
        }
        for (int s = 0; s <= 97; ++s) {
            const double f = s / 97.0, d = fmod(0.37 * s, 1.0);
            assert_true(fabs(ev(&op, f, 0.0, d) - f) < 1e-6);
            assert_true(fabs(ev(&op, 0.0, f, d) - f) < 1e-6);
            assert_true(fabs(ev(&op, f, 1.0, d) - 1.0) < 1e-6);
            assert_true(fabs(ev(&op, 1.0, f, d) - 1.0) < 1e-6);
            /* clamped inputs */
            assert_true(fabs(ev(&op, f, -0.5, d) - f) < 1e-6);
            assert_true(fabs(ev(&op, 2.0, f, d) - 1.0) < 1e-6);
        }
        /* the normal derivative on the axes is zero: g rises from the axis
         * slower than with unit slope (the union's) in the first cells */
        double worst = 0.0;
        const double h = 1.0 / (n - 1);
        for (uint32_t k = 0; k < n; ++k)
            for (uint32_t i = 1; i + 1 < n; ++i) {
                worst = fmax(worst, fabs(grid_at(&op, i, 1, k) - grid_at(&op, i, 0, k)) / h);
                worst = fmax(worst, fabs(grid_at(&op, 1, i, k) - grid_at(&op, 0, i, k)) / h);
            }
        printf("kind %d, N %u: largest one-cell slope off the axes %.3f\n", kind, n, worst);
        ssk_implicit_op_free(&op);
    }
}

/* Eq. 4.4 along the profile of every slice; the clean union at d = 0; full
 * contact at d = 1. */
static void test_profile_and_union(void **state)
{
    (void)state;
    for (int kind = 0; kind < SSK_IMPLICIT_OP_KIND_COUNT; ++kind) {
        ssk_implicit_op op;
        const double t0 = now_s();
        build(&op, (ssk_implicit_op_kind)kind, N_MAIN);
        const uint32_t n = op.resolution;
        const double h = 1.0 / (n - 1);
        printf("kind %d: N %u built in %.3f s\n", kind, n, now_s() - t0);
        double worst = 0.0, worst_line = 0.0;
        for (uint32_t k = 0; k < n; ++k) profile_error(&op, k, &worst, &worst_line);
        printf("kind %d: |g - 0.5| on the outer profile <= %.3f h, on the contact line <= %.3f h\n",
               kind, worst / h, worst_line / h);
        assert_true(worst <= PROFILE_TOL_CELLS * h);
        assert_true(worst_line <= LINE_TOL_CELLS * h);

        /* d = 0: the clean union. g = 0.5 on max(f1, f2) = 0.5 ... */
        for (int s = 0; s <= PROFILE_SAMPLES; ++s) {
            const double t = ISO * s / PROFILE_SAMPLES;
            assert_true(fabs(ev(&op, t, ISO, 0.0) - ISO) <= PROFILE_TOL_CELLS * h);
            assert_true(fabs(ev(&op, ISO, t, 0.0) - ISO) <= PROFILE_TOL_CELLS * h);
        }
        /* ... and away from it, g > 0.5 iff max(f1, f2) > 0.5 */
        const double margin = SIGN_MARGIN_CELLS * h;
        int checked = 0;
        for (int a = 0; a <= 100; ++a)
            for (int b = 0; b <= 100; ++b) {
                const double f1 = a / 100.0, f2 = b / 100.0, m = fmax(f1, f2);
                if (fabs(m - ISO) < margin) continue;
                const double g = ev(&op, f1, f2, 0.0);
                if ((g > ISO) != (m > ISO))
                    fail_msg("kind %d, d = 0: g(%g, %g) = %g, max %g", kind, f1, f2, g, m);
                ++checked;
            }
        assert_true(checked > 9000);

        /* d = 1: full contact along f1 = f2 up to the box; g > 0.5 on both
         * sides of the contact line (a slit inside the union) */
        for (int s = 0; s <= PROFILE_SAMPLES; ++s) {
            const double c = ISO + (ISO - h) * s / PROFILE_SAMPLES;
            assert_true(fabs(ev(&op, c, c, 1.0) - ISO) <= LINE_TOL_CELLS * h);
            if (c > ISO + margin && c < 1.0 - 2.0 * margin) {
                assert_true(ev(&op, c + margin, c - margin, 1.0) > ISO);
                assert_true(ev(&op, c - margin, c + margin, 1.0) > ISO);
            }
        }
        /* the slit's tip moves with d: at d = 0.3 it ends at
         * 0.5 + 0.3 / sqrt 2; beyond the tip g > 0.5 on the diagonal */
        const uint32_t k = (uint32_t)lround(0.3 * (n - 1));
        const double d = k * h, tip = ISO + d / sqrt(2.0);
        assert_true(fabs(ev(&op, tip, tip, d) - ISO) <= LINE_TOL_CELLS * h);
        assert_true(ev(&op, tip + margin, tip + margin, d) > ISO + 0.5 * margin);
        assert_true(ev(&op, ISO + 0.5 * (tip - ISO), ISO + 0.5 * (tip - ISO), d) - ISO <=
                    LINE_TOL_CELLS * h);
        ssk_implicit_op_free(&op);
    }
}

/* The bulge inflates the union: at d = 1, between the bulge curve and
 * f2 = 0.5 the bulge operator is inside, the contact operator outside;
 * below the bulge curve both are outside. */
static void test_bulge_inflates(void **state)
{
    (void)state;
    ssk_implicit_op contact, bulge;
    build(&contact, SSK_IMPLICIT_OP_CONTACT, N_MAIN);
    build(&bulge, SSK_IMPLICIT_OP_BULGE, N_MAIN);
    const double h = 1.0 / (N_MAIN - 1), margin = SIGN_MARGIN_CELLS * h;
    int checked = 0;
    for (int s = 1; s < 40; ++s) {
        double p[2];
        bulge_point(1.0, s / 40.0, p);
        if (ISO - p[1] < 2.0 * margin || p[0] < margin) continue;
        const double between = 0.5 * (p[1] + ISO), below = p[1] - margin;
        assert_true(ev(&bulge, p[0], between, 1.0) > ISO);
        assert_true(ev(&bulge, between, p[0], 1.0) > ISO);
        assert_true(ev(&contact, p[0], between, 1.0) < ISO);
        assert_true(ev(&bulge, p[0], below, 1.0) < ISO);
        ++checked;
    }
    assert_true(checked > 10);
    ssk_implicit_op_free(&contact);
    ssk_implicit_op_free(&bulge);
}

/* g(f1, f2, d) = g(f2, f1, d) on the grid. */
static void test_symmetry(void **state)
{
    (void)state;
    for (int kind = 0; kind < SSK_IMPLICIT_OP_KIND_COUNT; ++kind) {
        ssk_implicit_op op;
        build(&op, (ssk_implicit_op_kind)kind, N_SMALL);
        const uint32_t n = op.resolution;
        double worst = 0.0;
        for (uint32_t k = 0; k < n; ++k)
            for (uint32_t j = 0; j < n; ++j)
                for (uint32_t i = 0; i < j; ++i)
                    worst = fmax(worst, fabs(grid_at(&op, i, j, k) - grid_at(&op, j, i, k)));
        printf("kind %d: |g(f1, f2) - g(f2, f1)| <= %.2g\n", kind, worst);
        assert_true(worst <= 1e-5);
        ssk_implicit_op_free(&op);
    }
}

/* The same bits on 1 and 2 threads. */
static void test_thread_count_independent(void **state)
{
    (void)state;
    ssk_threading saved, one;
    ssk_threading_get(&saved);
    ssk_threading_default(&one);
    one.threads = 1;
    ssk_implicit_op a, b;
    assert_int_equal(ssk_threading_set(&one, NULL), SSK_OK);
    build(&a, SSK_IMPLICIT_OP_BULGE, N_SMALL);
    one.threads = 2;
    assert_int_equal(ssk_threading_set(&one, NULL), SSK_OK);
    build(&b, SSK_IMPLICIT_OP_BULGE, N_SMALL);
    assert_int_equal(ssk_threading_set(&saved, NULL), SSK_OK);
    const size_t n = N_SMALL;
    assert_memory_equal(a.values, b.values, n * n * n * sizeof *a.values);
    ssk_implicit_op_free(&a);
    ssk_implicit_op_free(&b);
}

/* eval's derivatives: exact on a grid linear in f1 and f2, close to
 * finite differences of eval, continuous across cell faces. */
static void test_derivatives(void **state)
{
    (void)state;
    /* a grid of g = 0.25 + 0.5 f1 - 0.3 f2 + 0.1 d: trilinear is exact */
    const uint32_t n = 9;
    ssk_implicit_op lin = {.kind = SSK_IMPLICIT_OP_CONTACT, .resolution = n};
    lin.values = malloc((size_t)n * n * n * sizeof *lin.values);
    assert_non_null(lin.values);
    for (uint32_t k = 0; k < n; ++k)
        for (uint32_t j = 0; j < n; ++j)
            for (uint32_t i = 0; i < n; ++i)
                lin.values[(k * n + j) * n + i] =
                    (float)(0.25 + (0.5 * i - 0.3 * j + 0.1 * k) / (n - 1));
    for (int s = 0; s <= 50; ++s) {
        const float f1 = s / 50.0f, f2 = fmodf(0.61f * s, 1.0f), d = fmodf(0.29f * s, 1.0f);
        float g1, g2;
        const float g = ssk_implicit_op_eval(&lin, f1, f2, d, &g1, &g2);
        assert_true(fabsf(g - (0.25f + 0.5f * f1 - 0.3f * f2 + 0.1f * d)) < 1e-5f);
        assert_true(fabsf(g1 - 0.5f) < 1e-4f && fabsf(g2 + 0.3f) < 1e-4f);
    }
    free(lin.values);

    for (int kind = 0; kind < SSK_IMPLICIT_OP_KIND_COUNT; ++kind) {
        ssk_implicit_op op;
        build(&op, (ssk_implicit_op_kind)kind, N_MAIN);
        const double h = 1.0 / (N_MAIN - 1);
        /* along lines f2 = c: the derivative belongs to the values. Over
         * [a, b] inside [h, 1 - h] the integral of the one-cell central
         * difference is exactly the change of the mean of g over the
         * window [x - h, x + h] from x = a to x = b */
        double worst_int = 0.0, worst_jump = 0.0, worst_fd = 0.0;
        for (int line = 1; line < 10; ++line) {
            const double c = line / 10.0 + 0.013, d = fmod(0.31 * line, 1.0);
            const int steps = 4000;
            const double a = 2.0 * h, b = 1.0 - 2.0 * h;
            double integral = 0.0, mean_a = 0.0, mean_b = 0.0;
            float prev;
            ssk_implicit_op_eval(&op, (float)a, (float)c, (float)d, &prev, NULL);
            for (int s = 1; s <= steps; ++s) {
                float cur;
                const double x = a + (b - a) * s / steps;
                ssk_implicit_op_eval(&op, (float)x, (float)c, (float)d, &cur, NULL);
                integral += 0.5 * (prev + cur) * (b - a) / steps;
                prev = cur;
            }
            for (int s = 0; s <= steps; ++s) { /* trapezoid means */
                const double u = -h + 2.0 * h * s / steps, wt = (s == 0 || s == steps) ? 0.5 : 1.0;
                mean_a += wt * ev(&op, a + u, c, d) / steps;
                mean_b += wt * ev(&op, b + u, c, d) / steps;
            }
            worst_int = fmax(worst_int, fabs(integral - (mean_b - mean_a)));
            /* continuity across the faces f1 = i h */
            for (uint32_t i = 1; i + 1 < N_MAIN; ++i) {
                float a1, a2, b1, b2;
                const double x = i * h, e = 1e-4 * h;
                ssk_implicit_op_eval(&op, (float)(x - e), (float)c, (float)d, &a1, &a2);
                ssk_implicit_op_eval(&op, (float)(x + e), (float)c, (float)d, &b1, &b2);
                worst_jump = fmax(worst_jump, fmax(fabs(a1 - b1), fabs(a2 - b2)));
            }
            /* against central differences of eval with a one-cell step at
             * cell centers (where the two agree up to rounding) */
            for (uint32_t i = 1; i + 1 < N_MAIN; ++i) {
                const double x = i * h;
                float g1, g2;
                ssk_implicit_op_eval(&op, (float)x, (float)c, (float)d, &g1, &g2);
                const double fd1 = (ev(&op, x + h, c, d) - ev(&op, x - h, c, d)) / (2 * h);
                const double fd2 = (ev(&op, x, c + h, d) - ev(&op, x, c - h, d)) / (2 * h);
                worst_fd = fmax(worst_fd, fmax(fabs(g1 - fd1), fabs(g2 - fd2)));
            }
        }
        printf("kind %d: |int dg/df1 - delta g| %.2g, jumps %.2g, vs differences %.2g\n", kind,
               worst_int, worst_jump, worst_fd);
        assert_true(worst_int <= 1e-4);
        assert_true(worst_jump <= 1e-2);
        assert_true(worst_fd <= 1e-3);
        ssk_implicit_op_free(&op);
    }
}

static void test_controllers(void **state)
{
    (void)state;
    const ssk_implicit_op_kind c = SSK_IMPLICIT_OP_CONTACT, b = SSK_IMPLICIT_OP_BULGE;
    assert_true(ssk_implicit_controller(c, 0.0f) == 0.0f);
    assert_true(ssk_implicit_controller(c, (float)(PI / 4)) == 0.0f);
    assert_true(fabsf(ssk_implicit_controller(c, (float)(PI / 2))) < 1e-6f);
    assert_true(fabsf(ssk_implicit_controller(c, (float)PI) - 1.0f) < 1e-6f);
    assert_true(fabsf(ssk_implicit_controller(c, (float)(0.75 * PI)) - 0.5f) < 1e-5f);
    assert_true(fabsf(ssk_implicit_controller(b, 0.0f)) < 1e-6f);
    assert_true(fabsf(ssk_implicit_controller(b, (float)PI) - 1.0f) < 1e-6f);
    assert_true(ssk_implicit_controller(b, (float)(PI / 8)) > 0.01f); /* starts early */
    assert_true(ssk_implicit_controller(b, (float)(PI / 2)) > 0.4f);
    /* beyond the range: clamped */
    assert_true(ssk_implicit_controller(c, 4.0f) == 1.0f);
    assert_true(ssk_implicit_controller(b, -1.0f) == 0.0f);
    /* continuous, monotone, with a continuous slope (C1): no jump of the
     * value nor of the difference quotient between neighboring steps */
    for (int kind = 0; kind < SSK_IMPLICIT_OP_KIND_COUNT; ++kind) {
        const int steps = 4000;
        const double da = PI / steps;
        double prev = ssk_implicit_controller((ssk_implicit_op_kind)kind, 0.0f), prev_slope = 0.0;
        for (int s = 1; s <= steps; ++s) {
            const double v = ssk_implicit_controller((ssk_implicit_op_kind)kind, (float)(s * da));
            const double slope = (v - prev) / da;
            assert_true(v >= prev - 1e-7);
            assert_true(fabs(v - prev) <= 2.0 * da);
            if (s > 1) assert_true(fabs(slope - prev_slope) <= 0.02);
            prev = v;
            prev_slope = slope;
        }
        assert_true(fabs(prev_slope) < 0.01); /* flat at pi */
    }
}

/* The paper's resolution, timed (reported, not asserted: a shared
 * machine), with its profile and symmetry. */
static void test_paper_resolution(void **state)
{
    (void)state;
    ssk_implicit_op op;
    ssk_threading threading;
    ssk_threading_get(&threading);
    const double t0 = now_s();
    build(&op, SSK_IMPLICIT_OP_BULGE, N_PAPER);
    printf("bulge operator, N %u: built in %.3f s on %u threads\n", N_PAPER, now_s() - t0,
           threading.threads);
    const double h = 1.0 / (N_PAPER - 1);
    double worst = 0.0, worst_line = 0.0;
    for (uint32_t k = 0; k < N_PAPER; k += 9) profile_error(&op, k, &worst, &worst_line);
    printf("N %u: |g - 0.5| on the outer profile <= %.3f h, on the contact line <= %.3f h\n",
           N_PAPER, worst / h, worst_line / h);
    assert_true(worst <= PROFILE_TOL_CELLS * h);
    assert_true(worst_line <= LINE_TOL_CELLS * h);
    ssk_implicit_op_free(&op);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_boundary_values),
        cmocka_unit_test(test_profile_and_union),
        cmocka_unit_test(test_bulge_inflates),
        cmocka_unit_test(test_symmetry),
        cmocka_unit_test(test_thread_count_independent),
        cmocka_unit_test(test_derivatives),
        cmocka_unit_test(test_controllers),
        cmocka_unit_test(test_paper_resolution),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
