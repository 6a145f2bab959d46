/* test_implicit.c — implicit skinning (Vaillant 2015; issue #20), its
 * parts against analytic cases as they are built:
 * - the HRBF field of Eq. 4.1 (core/bind/hrbf.c) interpolates its Hermite
 *   data: value 0 and the prescribed gradient at every center, within
 *   1e-5 relative (issue #20's bar), on a sphere, an ellipsoid and a
 *   capsule-like point set; its gradient is the derivative of its value
 *   (central differences);
 * - fitted to samples of a sphere, its zero set is that sphere;
 * - the remap t_r of 4.4 at -r, 0 and r, with its first and second
 *   derivatives (C2 junctions), and decreasing in between;
 * - bad Hermite data is refused with a message. */
#include "testutil.h"

#include "bind/hrbf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Issue #20: Hermite data interpolated within this relative error. */
#define HERMITE_TOL 1e-5
/* Points of the test shapes (the paper: 50 to 100 per bone). */
#define SAMPLES 80

/* Points spread over the unit sphere (a Fibonacci spiral). */
static void sphere_points(double *p, uint32_t n)
{
    const double golden = 3.14159265358979323846 * (3.0 - sqrt(5.0)); /* pi (3 - sqrt 5) */
    for (uint32_t i = 0; i < n; ++i) {
        const double z = 1.0 - 2.0 * (i + 0.5) / n, r = sqrt(1.0 - z * z), a = golden * i;
        p[3 * i] = r * cos(a);
        p[3 * i + 1] = r * sin(a);
        p[3 * i + 2] = z;
    }
}

/* Hermite data of an ellipsoid with semi-axes (ax, ay, az): points and
 * unit outward normals. */
static void ellipsoid(double *p, double *nrm, uint32_t n, double ax, double ay, double az)
{
    sphere_points(p, n);
    for (uint32_t i = 0; i < n; ++i) {
        double *x = p + 3 * i, *g = nrm + 3 * i;
        x[0] *= ax;
        x[1] *= ay;
        x[2] *= az;
        g[0] = x[0] / (ax * ax);
        g[1] = x[1] / (ay * ay);
        g[2] = x[2] / (az * az);
        const double len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
        for (int c = 0; c < 3; ++c) g[c] /= len;
    }
}

static double norm3(const double v[3])
{
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Largest |d| and |grad d - n| at the centers, over the field's scale
 * (the shape's size for values, 1 for unit normals). */
static void hermite_errors(const ssk_hrbf *h, const double *p, const double *nrm, uint32_t n,
                           double size, double *value_error, double *gradient_error)
{
    *value_error = *gradient_error = 0.0;
    for (uint32_t i = 0; i < n; ++i) {
        double g[3];
        const double d = ssk_hrbf_eval(h, p + 3 * i, g);
        const double diff[3] = {g[0] - nrm[3 * i], g[1] - nrm[3 * i + 1], g[2] - nrm[3 * i + 2]};
        *value_error = fmax(*value_error, fabs(d) / size);
        *gradient_error = fmax(*gradient_error, norm3(diff));
    }
}

static void test_hrbf_interpolates_its_hermite_data(void **state)
{
    (void)state;
    double p[3 * SAMPLES], nrm[3 * SAMPLES];
    const double shapes[3][3] = {{1.0, 1.0, 1.0}, {0.4, 0.7, 1.5}, {0.3, 0.3, 2.0}};
    for (int s = 0; s < 3; ++s) {
        ellipsoid(p, nrm, SAMPLES, shapes[s][0], shapes[s][1], shapes[s][2]);
        ssk_hrbf h;
        ssk_error err = {0};
        if (ssk_hrbf_fit(&h, p, nrm, SAMPLES, &err) != SSK_OK) fail_msg("%s", err.message);
        double ve, ge;
        hermite_errors(&h, p, nrm, SAMPLES, fmax(shapes[s][0], fmax(shapes[s][1], shapes[s][2])),
                       &ve, &ge);
        printf("shape %d (%g, %g, %g): |d| at the centers %.2g of the size, |grad d - n| %.2g\n",
               s, shapes[s][0], shapes[s][1], shapes[s][2], ve, ge);
        assert_true(ve <= HERMITE_TOL);
        assert_true(ge <= HERMITE_TOL);
        /* the gradient is the derivative of the value, away from centers */
        const double x[3] = {0.21, -0.33, 0.47}, eps = 1e-6;
        double g[3];
        ssk_hrbf_eval(&h, x, g);
        for (int c = 0; c < 3; ++c) {
            double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
            xp[c] += eps;
            xm[c] -= eps;
            const double fd = (ssk_hrbf_eval(&h, xp, NULL) - ssk_hrbf_eval(&h, xm, NULL)) / (2 * eps);
            assert_true(fabs(fd - g[c]) <= 1e-6 * fmax(1.0, fabs(g[c])));
        }
        /* negative inside, positive outside */
        const double inside[3] = {0.0, 0.0, 0.0}, outside[3] = {3.0, 3.0, 3.0};
        assert_true(ssk_hrbf_eval(&h, inside, NULL) < 0.0);
        assert_true(ssk_hrbf_eval(&h, outside, NULL) > 0.0);
        ssk_hrbf_free(&h);
    }
}

/* Fitted to a sphere's Hermite data, the zero set is that sphere: along
 * directions between the samples, the root of d is at radius 1. */
static void test_hrbf_of_a_sphere_is_a_sphere(void **state)
{
    (void)state;
    double p[3 * SAMPLES], nrm[3 * SAMPLES];
    ellipsoid(p, nrm, SAMPLES, 1.0, 1.0, 1.0);
    ssk_hrbf h;
    assert_int_equal(ssk_hrbf_fit(&h, p, nrm, SAMPLES, NULL), SSK_OK);
    double worst = 0.0;
    for (int k = 0; k < 200; ++k) {
        /* a direction off the sample spiral */
        const double z = cos(0.37 + 2.9 * k), a = 1.7 * k * k + 0.2;
        const double dir[3] = {sqrt(1 - z * z) * cos(a), sqrt(1 - z * z) * sin(a), z};
        double lo = 0.5, hi = 1.5;
        for (int it = 0; it < 60; ++it) {
            const double mid = 0.5 * (lo + hi), x[3] = {mid * dir[0], mid * dir[1], mid * dir[2]};
            if (ssk_hrbf_eval(&h, x, NULL) < 0.0)
                lo = mid;
            else
                hi = mid;
        }
        worst = fmax(worst, fabs(0.5 * (lo + hi) - 1.0));
    }
    printf("sphere of %d samples: the zero set within %.2g of radius 1\n", SAMPLES, worst);
    assert_true(worst <= 1e-3);
    ssk_hrbf_free(&h);
}

static void test_remap_t_r(void **state)
{
    (void)state;
    const double r = 0.7;
    double d;
    assert_true(ssk_hrbf_remap(-r, r, &d) == 1.0 && d == 0.0);
    assert_true(ssk_hrbf_remap(r, r, &d) == 0.0 && d == 0.0);
    assert_true(fabs(ssk_hrbf_remap(0.0, r, &d) - 0.5) < 1e-15);
    assert_true(fabs(d - (-15.0 / 16.0) / r) < 1e-12);
    assert_true(ssk_hrbf_remap(-5 * r, r, NULL) == 1.0 && ssk_hrbf_remap(5 * r, r, NULL) == 0.0);
    /* the polynomial's own value, slope and curvature at the junctions:
     * 1, 0, 0 at -r and 0, 0, 0 at r (C2), from just inside: at a distance
     * e, the curvature is O(e) (the third derivative is 15/2 / r^3 there) */
    const double e = 1e-5 * r;
    double d0, d1;
    const double at_left = ssk_hrbf_remap(-r + e, r, &d0);
    ssk_hrbf_remap(-r + 2 * e, r, &d1);
    assert_true(fabs(at_left - 1.0) < 1e-12 && fabs(d0) < 1e-8);
    assert_true(fabs((d1 - d0) / e) < 20.0 * e / (r * r * r));
    const double at_right = ssk_hrbf_remap(r - e, r, &d0);
    ssk_hrbf_remap(r - 2 * e, r, &d1);
    assert_true(fabs(at_right) < 1e-12 && fabs(d0) < 1e-8);
    assert_true(fabs((d0 - d1) / e) < 20.0 * e / (r * r * r));
    /* decreasing inside the support, its derivative the slope of its value */
    double last = 1.0;
    for (int i = 1; i < 100; ++i) {
        const double x = -r + 2 * r * i / 100.0, v = ssk_hrbf_remap(x, r, &d);
        assert_true(v < last);
        last = v;
        const double h = 1e-7;
        const double fd = (ssk_hrbf_remap(x + h, r, NULL) - ssk_hrbf_remap(x - h, r, NULL)) / (2 * h);
        assert_true(fabs(fd - d) < 1e-6);
    }
}

static void test_bad_hermite_data(void **state)
{
    (void)state;
    ssk_hrbf h;
    ssk_error err = {0};
    double p[6] = {0, 0, 0, 1, 0, 0}, n[6] = {1, 0, 0, 0, 0, 0};
    assert_int_equal(ssk_hrbf_fit(&h, p, n, 2, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "point 1"));
    n[3] = 1.0;
    p[3] = 0.0; /* two equal points */
    assert_int_equal(ssk_hrbf_fit(&h, p, n, 2, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "singular"));
    assert_int_equal(ssk_hrbf_fit(&h, p, n, 0, &err), SSK_ERROR_INVALID_ARGUMENT);
    ssk_hrbf_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hrbf_interpolates_its_hermite_data),
        cmocka_unit_test(test_hrbf_of_a_sphere_is_a_sphere),
        cmocka_unit_test(test_remap_t_r),
        cmocka_unit_test(test_bad_hermite_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
