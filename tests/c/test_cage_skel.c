/* test_cage_skel.c — the skeleton updater of coupled cages and skeletons
 * (Corda et al. 2020, 4.2; issue #21; core/bind/cage_skel.c):
 * - the joint localization of Eq. 9: 0 in rigid regions, largest at
 *   w = 1/2, values against a hand computation;
 * - the maximum-entropy coordinates of Eq. 11 (Hormann and Sukumar 2008):
 *   partition of unity, linear precision and positivity on a unit cube;
 *   1/8 each at its center; a non-uniform prior is followed (closer in
 *   KL divergence than the uniform-prior solution); points on a vertex,
 *   an edge, a face and near one converge; points outside the hull of the
 *   positive-mass vertices are refused; 1000 random points in an
 *   88-vertex irregular cage with random priors (iterations and time
 *   printed);
 * - the joints' coordinates of Eq. 10-12 on a bar-like cage: every joint
 *   reproduced, rows summing to 1, and refitted (Eq. 13) with the cage. */
#include "testutil.h"

#include "bind/cage_skel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Eq. 9's exponent (the paper: s = 0.1). */
#define LOCALIZATION_S 0.1
/* Values of L against the hand computation. */
#define L_TOL 1e-14
/* Issue #21: the cube's points reproduced within 1e-10, the irregular
 * cage's within 1e-9; partition of unity to roundoff. */
#define CUBE_REPRO_TOL 1e-10
#define IRREGULAR_REPRO_TOL 1e-9
#define SUM_TOL 1e-12
/* The cube's center: 1/8 each, to roundoff. */
#define SYMMETRY_TOL 1e-14
/* The irregular cage: 80 points on an ellipsoid, 8 inside, and the random
 * points drawn in the ellipsoid shrunk by INTERIOR_SCALE (the hull of the
 * 80 surface points contains it: their spacing is ~0.4 rad). */
#define SURFACE_POINTS 80
#define INNER_POINTS 8
#define IRREGULAR_VERTICES (SURFACE_POINTS + INNER_POINTS)
#define RANDOM_POINTS 1000
#define INTERIOR_SCALE 0.85
/* Random priors span exp(-PRIOR_LOG_RANGE) to exp(PRIOR_LOG_RANGE). */
#define PRIOR_LOG_RANGE 4.0
#define PRIOR_LOG_RANGE_WIDE 20.0

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

/* Deterministic uniform in [0, 1) (64-bit LCG, Knuth's MMIX constants). */
static double rand01(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) * (1.0 / 9007199254740992.0);
}

static const double CUBE[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0,
                                   0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};

/* |sum psi_k c_k - x|, |sum psi_k - 1| and min psi_k. */
static void mec_errors(const double *psi, const double *cage, uint32_t c, const double x[3],
                       double *repro, double *sum_error, double *min_psi)
{
    double y[3] = {0, 0, 0}, sum = 0.0;
    *min_psi = INFINITY;
    for (uint32_t k = 0; k < c; ++k) {
        for (int a = 0; a < 3; ++a) y[a] += psi[k] * cage[3 * k + a];
        sum += psi[k];
        *min_psi = fmin(*min_psi, psi[k]);
    }
    *repro = sqrt((y[0] - x[0]) * (y[0] - x[0]) + (y[1] - x[1]) * (y[1] - x[1]) +
                  (y[2] - x[2]) * (y[2] - x[2]));
    *sum_error = fabs(sum - 1.0);
}

/* Solves and checks the three properties within repro_tol. */
static uint32_t check_mec(double *psi, const double *prior, const double *cage, uint32_t c,
                          const double x[3], double repro_tol)
{
    ssk_error err = {0};
    uint32_t iterations = 0;
    const ssk_status st = ssk_cage_max_entropy_counted(psi, prior, cage, c, x, &iterations, &err);
    if (st != SSK_OK) print_error("(%g, %g, %g): %s\n", x[0], x[1], x[2], err.message);
    assert_int_equal(st, SSK_OK);
    double repro, sum_error, min_psi;
    mec_errors(psi, cage, c, x, &repro, &sum_error, &min_psi);
    assert_true(repro <= repro_tol);
    assert_true(sum_error <= SUM_TOL);
    assert_true(min_psi >= 0.0);
    return iterations;
}

/* KL(psi || prior / sum prior). */
static double kl_divergence(const double *psi, const double *prior, uint32_t c)
{
    double total = 0.0, kl = 0.0;
    for (uint32_t k = 0; k < c; ++k) total += prior[k];
    for (uint32_t k = 0; k < c; ++k)
        if (psi[k] > 0.0) kl += psi[k] * log(psi[k] / (prior[k] / total));
    return kl;
}

/* ------------------------------------------------------------------------ */
/* Joint localization (Eq. 9)                                                */
/* ------------------------------------------------------------------------ */

static void test_localization_values(void **state)
{
    (void)state;
    enum { VERTICES = 5, JOINTS = 3 };
    const double w[VERTICES * JOINTS] = {
        1.0, 0.0, 0.0, /* rigid */
        0.5, 0.5, 0.0, /* the blend's middle */
        0.3, 0.7, 0.0, /* off the middle */
        0.2, 0.3, 0.5, /* three joints */
        0.0, 0.0, 0.0, /* unweighted */
    };
    double L[JOINTS * VERTICES];
    ssk_cage_joint_localization(L, w, VERTICES, JOINTS, LOCALIZATION_S);
    /* By hand: a^0.1 + (1 - a)^0.1 - 1. */
    const double half = 0.8660659830736148;  /* 2 * 0.5^0.1 - 1 = 2^0.9 - 1 */
    const double p3 = 0.851529245685031;     /* 0.3^0.1 + 0.7^0.1 - 1 */
    const double p2 = 0.8292726910637132;    /* 0.2^0.1 + 0.8^0.1 - 1 */
    const double expected[JOINTS * VERTICES] = {
        /* joint 0 */ 0.0, half, p3, p2, 0.0,
        /* joint 1 */ 0.0, half, p3, p3, 0.0,
        /* joint 2 */ 0.0, 0.0, 0.0, half, 0.0,
    };
    for (int q = 0; q < JOINTS * VERTICES; ++q) {
        if (fabs(L[q] - expected[q]) > L_TOL)
            print_error("L[%d] = %.17g, expected %.17g\n", q, L[q], expected[q]);
        assert_true(fabs(L[q] - expected[q]) <= L_TOL);
    }
}

static void test_localization_peaks_at_one_half(void **state)
{
    (void)state;
    enum { SAMPLES = 101 };
    double w[2 * SAMPLES], L[2 * SAMPLES];
    for (int i = 0; i < SAMPLES; ++i) {
        w[2 * i] = (double)i / (SAMPLES - 1);
        w[2 * i + 1] = 1.0 - w[2 * i];
    }
    ssk_cage_joint_localization(L, w, SAMPLES, 2, LOCALIZATION_S);
    assert_true(L[0] == 0.0 && L[SAMPLES - 1] == 0.0); /* rigid ends: exactly 0 */
    int peak = 0;
    for (int i = 0; i < SAMPLES; ++i) {
        assert_true(L[i] >= 0.0);
        assert_true(fabs(L[i] - L[SAMPLES + i]) <= L_TOL); /* two joints: one value */
        if (L[i] > L[peak]) peak = i;
    }
    assert_int_equal(peak, SAMPLES / 2);
    /* Increasing up to the middle, decreasing after. */
    for (int i = 1; i < SAMPLES; ++i)
        assert_true(i <= SAMPLES / 2 ? L[i] > L[i - 1] : L[i] < L[i - 1]);
}

/* ------------------------------------------------------------------------ */
/* Maximum-entropy coordinates (Eq. 11)                                      */
/* ------------------------------------------------------------------------ */

static void test_mec_cube_uniform(void **state)
{
    (void)state;
    const double uniform[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const double points[][3] = {{0.5, 0.5, 0.5}, {0.1, 0.2, 0.3}, {0.9, 0.05, 0.6},
                                {0.25, 0.75, 0.95}, {0.01, 0.01, 0.01}, {0.99, 0.5, 0.02}};
    double psi[8];
    for (size_t q = 0; q < sizeof points / sizeof points[0]; ++q) {
        const uint32_t it = check_mec(psi, uniform, CUBE, 8, points[q], CUBE_REPRO_TOL);
        print_message("cube, uniform prior, (%g, %g, %g): %u Newton iterations\n",
                      points[q][0], points[q][1], points[q][2], it);
        if (q == 0)
            for (int k = 0; k < 8; ++k) assert_true(fabs(psi[k] - 0.125) <= SYMMETRY_TOL);
    }
    /* On the unit cube with a uniform prior, MEC are the trilinear
     * coordinates (the product prior factorizes): check one point. */
    const double *x = points[1];
    check_mec(psi, uniform, CUBE, 8, x, CUBE_REPRO_TOL);
    for (int k = 0; k < 8; ++k) {
        const double *v = CUBE + 3 * k;
        double tri = 1.0;
        for (int a = 0; a < 3; ++a) tri *= v[a] > 0.5 ? x[a] : 1.0 - x[a];
        assert_true(fabs(psi[k] - tri) <= CUBE_REPRO_TOL);
    }
}

static void test_mec_prior_is_followed(void **state)
{
    (void)state;
    const double uniform[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const double prior[8] = {5.0, 0.2, 1.0, 3.0, 0.5, 2.0, 0.1, 4.0};
    const double points[][3] = {{0.5, 0.5, 0.5}, {0.3, 0.6, 0.2}, {0.8, 0.1, 0.9}};
    for (size_t q = 0; q < sizeof points / sizeof points[0]; ++q) {
        double psi_prior[8], psi_uniform[8];
        const uint32_t it = check_mec(psi_prior, prior, CUBE, 8, points[q], CUBE_REPRO_TOL);
        check_mec(psi_uniform, uniform, CUBE, 8, points[q], CUBE_REPRO_TOL);
        const double kl_prior = kl_divergence(psi_prior, prior, 8);
        const double kl_uniform = kl_divergence(psi_uniform, prior, 8);
        print_message("cube, prior, (%g, %g, %g): KL %.4g (uniform-prior solution: %.4g), "
                      "%u iterations\n",
                      points[q][0], points[q][1], points[q][2], kl_prior, kl_uniform, it);
        assert_true(kl_prior < kl_uniform);
    }
    /* The prior's scale does not matter (normalized). */
    double a[8], b[8], scaled[8];
    for (int k = 0; k < 8; ++k) scaled[k] = 1e6 * prior[k];
    check_mec(a, prior, CUBE, 8, points[1], CUBE_REPRO_TOL);
    check_mec(b, scaled, CUBE, 8, points[1], CUBE_REPRO_TOL);
    for (int k = 0; k < 8; ++k) assert_true(fabs(a[k] - b[k]) <= SUM_TOL);
}

static void test_mec_boundary_points(void **state)
{
    (void)state;
    const double uniform[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const double near = 1e-9;
    const double points[][3] = {
        {1.0, 1.0, 1.0},          /* a vertex */
        {0.0, 0.0, 0.0},          /* another */
        {0.5, 0.0, 0.0},          /* an edge */
        {0.3, 0.6, 1.0},          /* a face */
        {0.3, 0.6, 1.0 - near},   /* near a face */
        {near, 0.5, 0.5},         /* near another */
        {near, near, near},       /* near a vertex */
        {1.0 - near, 0.7, 0.0},   /* near an edge */
    };
    double psi[8];
    for (size_t q = 0; q < sizeof points / sizeof points[0]; ++q) {
        const uint32_t it = check_mec(psi, uniform, CUBE, 8, points[q], CUBE_REPRO_TOL);
        print_message("cube, boundary (%.10g, %.10g, %.10g): %u Newton iterations\n",
                      points[q][0], points[q][1], points[q][2], it);
    }
    /* At a vertex: that vertex's coordinate is 1. */
    check_mec(psi, uniform, CUBE, 8, points[0], CUBE_REPRO_TOL);
    assert_true(fabs(psi[7] - 1.0) <= CUBE_REPRO_TOL);
}

static void test_mec_outside_is_refused(void **state)
{
    (void)state;
    const double uniform[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    double psi[8];
    ssk_error err = {0};
    const double outside[][3] = {{1.5, 0.5, 0.5}, {-1e-6, 0.5, 0.5}, {2, 2, 2}};
    for (size_t q = 0; q < sizeof outside / sizeof outside[0]; ++q) {
        assert_int_equal(ssk_cage_max_entropy(psi, uniform, CUBE, 8, outside[q], &err),
                         SSK_ERROR_INVALID_ARGUMENT);
        assert_non_null(strstr(err.message, "outside the convex hull"));
    }
    /* Inside the bounding box, outside the hull: a tetrahedron. */
    const double tet[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    const double ones[4] = {1, 1, 1, 1};
    const double beyond[][3] = {{0.5, 0.5, 0.5}, {0.34, 0.34, 0.34}, {0.9, 0.9, 0.0}};
    for (size_t q = 0; q < sizeof beyond / sizeof beyond[0]; ++q) {
        uint32_t it = 0;
        assert_int_equal(ssk_cage_max_entropy_counted(psi, ones, tet, 4, beyond[q], &it, &err),
                         SSK_ERROR_INVALID_ARGUMENT);
        print_message("tetrahedron, outside (%g, %g, %g): refused after %u iterations: %s\n",
                      beyond[q][0], beyond[q][1], beyond[q][2], it, err.message);
        assert_non_null(strstr(err.message, "outside the convex hull"));
    }
    /* Just inside the tetrahedron's slanted face: solved. */
    const double inside[3] = {0.333, 0.333, 0.333};
    check_mec(psi, ones, tet, 4, inside, CUBE_REPRO_TOL);

    /* Zero-mass vertices: psi 0 there, and the hull is the positive-mass
     * vertices' (the cube without vertex 7: the corner near (1, 1, 1) is
     * cut off by the plane x + y + z = 2). */
    double prior[8] = {1, 1, 1, 1, 1, 1, 1, 0};
    const double x_in[3] = {0.4, 0.5, 0.6}, x_cut[3] = {0.9, 0.9, 0.9};
    check_mec(psi, prior, CUBE, 8, x_in, CUBE_REPRO_TOL);
    assert_true(psi[7] == 0.0);
    assert_int_equal(ssk_cage_max_entropy(psi, prior, CUBE, 8, x_cut, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "outside the convex hull"));

    /* Bad arguments, with a message. */
    const double center[3] = {0.5, 0.5, 0.5};
    double zero[8] = {0}, negative[8] = {1, 1, 1, -1, 1, 1, 1, 1};
    assert_int_equal(ssk_cage_max_entropy(psi, zero, CUBE, 8, center, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "no positive prior mass"));
    assert_int_equal(ssk_cage_max_entropy(psi, negative, CUBE, 8, center, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "prior mass 3"));
    assert_int_equal(ssk_cage_max_entropy(NULL, uniform, CUBE, 8, center, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    const double nan_point[3] = {NAN, 0.5, 0.5};
    assert_int_equal(ssk_cage_max_entropy(psi, uniform, CUBE, 8, nan_point, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
}

/* 80 points spread on the ellipsoid (ax, ay, az) (a Fibonacci spiral),
 * then 8 inside it. */
static void irregular_cage(double *v, uint64_t *rng, const double axes[3])
{
    const double golden = 3.14159265358979323846 * (3.0 - sqrt(5.0));
    for (uint32_t i = 0; i < SURFACE_POINTS; ++i) {
        const double z = 1.0 - 2.0 * (i + 0.5) / SURFACE_POINTS, r = sqrt(1.0 - z * z);
        const double a = golden * i;
        const double u[3] = {r * cos(a), r * sin(a), z};
        for (int c = 0; c < 3; ++c) v[3 * i + c] = axes[c] * u[c];
    }
    for (uint32_t i = SURFACE_POINTS; i < IRREGULAR_VERTICES; ++i)
        for (int c = 0; c < 3; ++c) v[3 * i + c] = axes[c] * (rand01(rng) - 0.5);
}

static double elapsed(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

static void irregular_cage_run(double prior_log_range)
{
    uint64_t rng = 21;
    const double axes[3] = {0.6, 1.3, 2.1};
    double cage[3 * IRREGULAR_VERTICES], prior[IRREGULAR_VERTICES], psi[IRREGULAR_VERTICES];
    irregular_cage(cage, &rng, axes);
    uint64_t total_iterations = 0;
    uint32_t max_iterations = 0;
    double worst_repro = 0.0, solve_time = 0.0;
    for (int q = 0; q < RANDOM_POINTS; ++q) {
        /* A point uniform in the shrunk ellipsoid (rejection sampling). */
        double u[3], len2;
        do {
            for (int c = 0; c < 3; ++c) u[c] = 2.0 * rand01(&rng) - 1.0;
            len2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        } while (len2 > 1.0);
        double x[3];
        for (int c = 0; c < 3; ++c) x[c] = INTERIOR_SCALE * axes[c] * u[c];
        for (int k = 0; k < IRREGULAR_VERTICES; ++k)
            prior[k] = exp(prior_log_range * (2.0 * rand01(&rng) - 1.0));
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        const uint32_t it = check_mec(psi, prior, cage, IRREGULAR_VERTICES, x,
                                      IRREGULAR_REPRO_TOL);
        solve_time += elapsed(&t0);
        double repro, sum_error, min_psi;
        mec_errors(psi, cage, IRREGULAR_VERTICES, x, &repro, &sum_error, &min_psi);
        worst_repro = fmax(worst_repro, repro);
        total_iterations += it;
        if (it > max_iterations) max_iterations = it;
    }
    print_message("irregular cage (%d vertices), %d random points, random priors (e^-%g to "
                  "e^%g): Newton iterations mean %.2f, max %u; worst |sum psi c - x| %.3g; "
                  "%.1f us per point (check included)\n",
                  IRREGULAR_VERTICES, RANDOM_POINTS, prior_log_range, prior_log_range,
                  (double)total_iterations / RANDOM_POINTS, max_iterations, worst_repro,
                  1e6 * solve_time / RANDOM_POINTS);
}

static void test_mec_irregular_cage(void **state)
{
    (void)state;
    irregular_cage_run(PRIOR_LOG_RANGE);
    /* Masses over 17 orders of magnitude (localized joint masses can be
     * that uneven): the capped Newton steps still converge. */
    irregular_cage_run(PRIOR_LOG_RANGE_WIDE);
}

/* ------------------------------------------------------------------------ */
/* The joints' coordinates (Eq. 10-12) and their refit (Eq. 13)              */
/* ------------------------------------------------------------------------ */

/* A bar along x from 0 to BAR_SEGMENTS: the cage, rings of 4 corners
 * (y, z = +-BAR_HALF) at x = 0, 1, ..., BAR_SEGMENTS; the mesh, rings of
 * MESH_RING points of radius MESH_RADIUS around the axis at MESH_RINGS
 * heights; bones [0, 1], [1, 2], [2, 3] blended over BLEND around the
 * joints at x = 1 and 2; the joints at x = 0.5 (in a rigid region: its
 * localized masses are 0), 1 and 2. */
#define BAR_SEGMENTS 3
#define BAR_HALF 0.5
#define BAR_RINGS (BAR_SEGMENTS + 1)
#define BAR_CAGE (4 * BAR_RINGS)
#define MESH_RING 8
#define MESH_RINGS 31
#define MESH_COUNT (MESH_RING * MESH_RINGS)
#define MESH_RADIUS 0.3
#define BLEND 0.3
#define BAR_JOINTS 3
#define JOINT_TOL 1e-10

static void bar_cage(double *cage)
{
    for (int r = 0; r < BAR_RINGS; ++r)
        for (int q = 0; q < 4; ++q) {
            double *v = cage + 3 * (4 * r + q);
            v[0] = r;
            v[1] = (q & 1) ? BAR_HALF : -BAR_HALF;
            v[2] = (q & 2) ? BAR_HALF : -BAR_HALF;
        }
}

/* The mesh point's cage coordinates: trilinear in its segment's box. */
static void bar_phi(double *phi_row, const double p[3])
{
    memset(phi_row, 0, BAR_CAGE * sizeof *phi_row);
    int s = (int)floor(p[0]);
    if (s >= BAR_SEGMENTS) s = BAR_SEGMENTS - 1;
    const double t[3] = {p[0] - s, (p[1] + BAR_HALF) / (2 * BAR_HALF),
                         (p[2] + BAR_HALF) / (2 * BAR_HALF)};
    for (int r = 0; r < 2; ++r)
        for (int q = 0; q < 4; ++q)
            phi_row[4 * (s + r) + q] = (r ? t[0] : 1 - t[0]) * ((q & 1) ? t[1] : 1 - t[1]) *
                                       ((q & 2) ? t[2] : 1 - t[2]);
}

static void test_joint_coordinates_bar(void **state)
{
    (void)state;
    double cage[3 * BAR_CAGE], mesh[3 * MESH_COUNT];
    bar_cage(cage);
    /* Mesh rings: evenly spaced in x, plus rings exactly at the joints. */
    const double joints[3 * BAR_JOINTS] = {0.5, 0, 0, 1.0, 0, 0, 2.0, 0, 0};
    for (int r = 0; r < MESH_RINGS; ++r)
        for (int q = 0; q < MESH_RING; ++q) {
            const double a = 2.0 * 3.14159265358979323846 * q / MESH_RING;
            double *p = mesh + 3 * (MESH_RING * r + q);
            p[0] = (double)BAR_SEGMENTS * r / (MESH_RINGS - 1);
            p[1] = MESH_RADIUS * cos(a);
            p[2] = MESH_RADIUS * sin(a);
        }
    double *phi = calloc((size_t)MESH_COUNT * BAR_CAGE, sizeof *phi);
    double *weights = calloc((size_t)MESH_COUNT * BAR_SEGMENTS, sizeof *weights);
    double *L = calloc((size_t)BAR_JOINTS * MESH_COUNT, sizeof *L);
    double *mvc = calloc((size_t)BAR_JOINTS * MESH_COUNT, sizeof *mvc);
    double *bone_L = calloc((size_t)BAR_SEGMENTS * MESH_COUNT, sizeof *bone_L);
    assert_non_null(phi);
    assert_non_null(weights);
    assert_non_null(L);
    assert_non_null(mvc);
    assert_non_null(bone_L);
    for (int i = 0; i < MESH_COUNT; ++i) {
        bar_phi(phi + (size_t)i * BAR_CAGE, mesh + 3 * i);
        /* Bones 0, 1, 2; across the joint at x = b (b = 1, 2), bone b's
         * weight ramps from 0 to 1 over [b - BLEND, b + BLEND]. */
        const double x = mesh[3 * i];
        double *w = weights + (size_t)i * BAR_SEGMENTS;
        int bone = (int)floor(x);
        if (bone >= BAR_SEGMENTS) bone = BAR_SEGMENTS - 1;
        w[bone] = 1.0;
        for (int b = 1; b < BAR_SEGMENTS; ++b) {
            const double t = (x - (b - BLEND)) / (2 * BLEND);
            if (t > 0.0 && t < 1.0) {
                w[b - 1] = 1.0 - t;
                w[b] = t;
                if (bone != b && bone != b - 1) w[bone] = 0.0;
            }
        }
    }
    /* L of the joint at x = b is that of bone b (the bone it starts);
     * the joint at 0.5 takes bone 0's. */
    ssk_cage_joint_localization(bone_L, weights, MESH_COUNT, BAR_SEGMENTS, LOCALIZATION_S);
    const int joint_bone[BAR_JOINTS] = {0, 1, 2};
    for (int j = 0; j < BAR_JOINTS; ++j)
        memcpy(L + (size_t)j * MESH_COUNT, bone_L + (size_t)joint_bone[j] * MESH_COUNT,
               MESH_COUNT * sizeof *L);
    /* The joints' coordinates w.r.t. the mesh (the stand-in for MVC): the
     * ring through the joint, evenly (it reproduces the ring's center). */
    for (int j = 0; j < BAR_JOINTS; ++j) {
        const int ring = (int)lround(joints[3 * j] * (MESH_RINGS - 1) / BAR_SEGMENTS);
        assert_true(fabs(mesh[3 * MESH_RING * ring] - joints[3 * j]) < 1e-12);
        for (int q = 0; q < MESH_RING; ++q)
            mvc[(size_t)j * MESH_COUNT + MESH_RING * ring + q] = 1.0 / MESH_RING;
    }
    double psi[BAR_JOINTS * BAR_CAGE];
    ssk_error err = {0};
    const ssk_status st = ssk_cage_joint_coordinates(psi, joints, BAR_JOINTS, mvc, L, MESH_COUNT,
                                                     phi, cage, BAR_CAGE, &err);
    if (st != SSK_OK) print_error("%s\n", err.message);
    assert_int_equal(st, SSK_OK);
    for (int j = 0; j < BAR_JOINTS; ++j) {
        double repro, sum_error, min_psi;
        mec_errors(psi + j * BAR_CAGE, cage, BAR_CAGE, joints + 3 * j, &repro, &sum_error,
                   &min_psi);
        print_message("bar, joint %d at x = %g: |Psi C - a| %.3g, |sum - 1| %.3g\n", j,
                      joints[3 * j], repro, sum_error);
        assert_true(repro <= JOINT_TOL);
        assert_true(sum_error <= SUM_TOL);
        assert_true(min_psi >= 0.0);
    }
    /* The joint at x = 1 is localized: its coordinates sit on the cage
     * rings around x = 1 (rings 0, 1, 2), none on ring 3. */
    for (int q = 0; q < 4; ++q) assert_true(psi[BAR_CAGE + 4 * 3 + q] == 0.0);

    /* Eq. 13: the cage stretched by 2 along x and shifted; the joints
     * follow (linear precision makes Psi affine-invariant). */
    double moved[3 * BAR_CAGE];
    for (int k = 0; k < BAR_CAGE; ++k) {
        moved[3 * k] = 2.0 * cage[3 * k] + 0.25;
        moved[3 * k + 1] = cage[3 * k + 1] - 1.0;
        moved[3 * k + 2] = cage[3 * k + 2];
    }
    for (int j = 0; j < BAR_JOINTS; ++j) {
        double a[3] = {0, 0, 0};
        for (int k = 0; k < BAR_CAGE; ++k)
            for (int c = 0; c < 3; ++c) a[c] += psi[j * BAR_CAGE + k] * moved[3 * k + c];
        assert_true(fabs(a[0] - (2.0 * joints[3 * j] + 0.25)) <= JOINT_TOL);
        assert_true(fabs(a[1] - (joints[3 * j + 1] - 1.0)) <= JOINT_TOL);
        assert_true(fabs(a[2] - joints[3 * j + 2]) <= JOINT_TOL);
    }

    /* A joint outside the cage: refused, naming the joint. */
    const double far_joints[3 * BAR_JOINTS] = {0.5, 0, 0, 1.0, 0, 0, 2.0, 5.0, 0};
    assert_int_equal(ssk_cage_joint_coordinates(psi, far_joints, BAR_JOINTS, mvc, L, MESH_COUNT,
                                                phi, cage, BAR_CAGE, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "joint 2"));
    free(phi);
    free(weights);
    free(L);
    free(mvc);
    free(bone_L);
}

/* A joint outside the hull of its localized masses but inside the cage
 * (a joint outside the skin: no skin around it): every cage vertex gets a
 * floor mass and the joint is reproduced; a joint outside the cage is
 * still refused. The unit cube; one mesh vertex near the corner (0, 0, 0)
 * whose cage coordinates weight the corners around it only. */
static void test_joint_outside_its_masses(void **state)
{
    (void)state;
    double cube[24];
    for (int k = 0; k < 8; ++k)
        for (int r = 0; r < 3; ++r) cube[3 * k + r] = (k >> r) & 1;
    double phi[8] = {0.7, 0.1, 0.1, 0.0, 0.1, 0.0, 0.0, 0.0}; /* around (0, 0, 0) */
    const double mvc[1] = {1.0}, L[1] = {1.0};
    const double inside[3] = {0.8, 0.8, 0.8}, outside[3] = {1.5, 0.5, 0.5};
    double psi[8];
    ssk_error err = {0};
    /* the masses alone cannot reach (0.8, 0.8, 0.8): MEC refuses it */
    assert_int_equal(ssk_cage_max_entropy(psi, phi, cube, 8, inside, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_joint_coordinates(psi, inside, 1, mvc, L, 1, phi, cube, 8, &err),
                     SSK_OK);
    double sum = 0.0, p[3] = {0, 0, 0};
    for (int k = 0; k < 8; ++k) {
        sum += psi[k];
        for (int r = 0; r < 3; ++r) p[r] += psi[k] * cube[3 * k + r];
    }
    assert_true(fabs(sum - 1.0) < 1e-10);
    for (int r = 0; r < 3; ++r) assert_true(fabs(p[r] - inside[r]) < 1e-9);
    assert_int_equal(ssk_cage_joint_coordinates(psi, outside, 1, mvc, L, 1, phi, cube, 8, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_localization_values),
        cmocka_unit_test(test_localization_peaks_at_one_half),
        cmocka_unit_test(test_mec_cube_uniform),
        cmocka_unit_test(test_mec_prior_is_followed),
        cmocka_unit_test(test_mec_boundary_points),
        cmocka_unit_test(test_mec_outside_is_refused),
        cmocka_unit_test(test_mec_irregular_cage),
        cmocka_unit_test(test_joint_coordinates_bar),
        cmocka_unit_test(test_joint_outside_its_masses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
