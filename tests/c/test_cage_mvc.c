/* test_cage_mvc.c — coupled cages and skeletons (Corda et al. 2020;
 * issue #21), the cage side (core/bind/cage_mvc.c, core/bind/cage_up.c):
 * - 3D mean value coordinates (Ju, Schaefer and Warren 2005) on a unit
 *   cube (12 triangles), a stretched irregular octahedron, a box with a
 *   dented top (non-convex) and an 88-vertex capsule cage (the size of the
 *   paper's Ely, Table 1): rows of points inside sum to 1 and reproduce
 *   the point (linear precision); the cage's vertices get identity rows,
 *   points on faces and edges the barycentric limit, points 1e-9 off a
 *   face a finite row next to the on-face one; the same bits on 1 and 4
 *   threads; bad cages refused with a message;
 * - MaxVol rows: distinct, at least the volume of the greedy start
 *   (Gaussian elimination with partial pivoting, computed here), every
 *   |B_ij| <= 1 + tolerance (B = phi Phi~^{-1}, computed here);
 * - the cage updater (Eq. 8): mesh rows moved by an affine map give the
 *   cage moved by it (linear precision), and Phi~ C' reproduces the rows;
 * - timings (printed, not asserted): MVC of 7,500 points against the
 *   88-vertex cage, the updater's preprocess and one solve. */
#include "testutil.h"

#include "bind/cage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Issue #21's bars. */
#define SUM_TOL 1e-12        /* |sum_k phi_ik - 1| */
#define REPRODUCE_TOL 1e-10  /* |sum_k phi_ik c_k - p_i| (linear precision) */
#define LIMIT_TOL 1e-12      /* on the surface: against the barycentric row */
#define NEAR_FACE_OFFSET 1e-9
#define NEAR_FACE_TOL 1e-6   /* a row 1e-9 off a face against the on-face row */
#define CAGE_FIT_TOL 1e-9    /* the solved cage against the moved cage */
#define ROWS_FIT_TOL 1e-10   /* Phi~ C' against the moved rows */
/* cage_up.c's MAXVOL_TOLERANCE: every |B_ij| <= 1 + this. */
#define MAXVOL_TOL 1e-2
/* Inside points per cage for the precision tests. */
#define INSIDE_POINTS 300
/* The paper's Ely (Table 1): 7,512 vertices, 88 cage handles. */
#define TIMING_POINTS 7500
#define TIMING_SOLVES 2000
/* The capsule cage: rings by segments (8 by 11 = 88 vertices). */
#define CAPSULE_RINGS 8u
#define CAPSULE_SEGMENTS 11u

static const double PI = 3.14159265358979323846;

typedef struct cage {
    const char *name;
    uint32_t c, t;
    double v[3 * CAPSULE_RINGS * CAPSULE_SEGMENTS];
    uint32_t f[3 * (2 * CAPSULE_RINGS * CAPSULE_SEGMENTS)];
    bool convex;
} cage;

/* ------------------------------------------------------------------------ */
/* Cages and points                                                          */
/* ------------------------------------------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) /* xorshift64*, in [0, 1) */
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (double)((g_rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static double signed_volume(const cage *cg)
{
    double vol = 0.0;
    for (uint32_t f = 0; f < cg->t; ++f) {
        const double *a = cg->v + 3 * cg->f[3 * f], *b = cg->v + 3 * cg->f[3 * f + 1],
                     *c = cg->v + 3 * cg->f[3 * f + 2];
        vol += a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
               a[2] * (b[0] * c[1] - b[1] * c[0]);
    }
    return vol / 6.0;
}

/* Vertex x + 2 y + 4 z at (x, y, z), x, y, z in {0, 1}; outward. */
static const uint32_t CUBE_TRIS[36] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                       2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};

static void make_cube(cage *cg)
{
    memset(cg, 0, sizeof *cg);
    cg->name = "cube";
    cg->c = 8;
    cg->t = 12;
    cg->convex = true;
    for (uint32_t k = 0; k < 8; ++k) {
        cg->v[3 * k] = k & 1u;
        cg->v[3 * k + 1] = (k >> 1) & 1u;
        cg->v[3 * k + 2] = (k >> 2) & 1u;
    }
    memcpy(cg->f, CUBE_TRIS, sizeof CUBE_TRIS);
}

/* The cube with its top face (z = 1) replaced by four triangles around
 * vertex 8, pushed down to (0.5, 0.5, DENT_Z): not convex. */
#define DENT_Z 0.7
static void make_dented_box(cage *cg)
{
    make_cube(cg);
    cg->name = "dented box";
    cg->convex = false;
    cg->c = 9;
    cg->v[24] = 0.5;
    cg->v[25] = 0.5;
    cg->v[26] = DENT_Z;
    const uint32_t top[12] = {4, 5, 8, 5, 7, 8, 7, 6, 8, 6, 4, 8};
    /* the cube's triangles but its two top ones (6 and 7 of CUBE_TRIS: 4 5 7, 4 7 6) */
    uint32_t t = 0;
    for (uint32_t f = 0; f < 12; ++f)
        if (f != 2 && f != 3) memcpy(cg->f + 3 * t++, CUBE_TRIS + 3 * f, 3 * sizeof(uint32_t));
    memcpy(cg->f + 3 * t, top, sizeof top);
    cg->t = t + 4;
}

/* The dent's height at (x, y): its four triangles are planes. */
static double dent_height(double x, double y)
{
    return DENT_Z + 2.0 * (1.0 - DENT_Z) * fmax(fabs(x - 0.5), fabs(y - 0.5));
}

/* An octahedron with unequal, off-center axes. */
static void make_octahedron(cage *cg)
{
    memset(cg, 0, sizeof *cg);
    cg->name = "stretched octahedron";
    cg->c = 6;
    cg->convex = true;
    /* +x, -x, +y, -y, +z, -z */
    const double v[18] = {1.7, 0.1, 0.05, -0.9, -0.1, 0.1,  0.2, 1.3,  0.1,
                          0.0, -0.6, -0.1, 0.1, 0.2,  2.2, -0.1, 0.0, -0.8};
    memcpy(cg->v, v, sizeof v);
    uint32_t t = 0;
    for (uint32_t o = 0; o < 8; ++o) {
        const uint32_t x = (o & 1u) ? 1u : 0u, y = (o & 2u) ? 3u : 2u, z = (o & 4u) ? 5u : 4u;
        const bool odd = ((o & 1u) + ((o >> 1) & 1u) + ((o >> 2) & 1u)) & 1u;
        cg->f[3 * t] = x;
        cg->f[3 * t + 1] = odd ? z : y;
        cg->f[3 * t + 2] = odd ? y : z;
        ++t;
    }
    cg->t = t;
}

static const double CAPSULE_RADII[CAPSULE_RINGS] = {0.3, 0.5, 0.55, 0.4, 0.35, 0.5, 0.45, 0.25};
#define CAPSULE_LENGTH 2.0

static double capsule_ring_y(uint32_t k)
{
    return CAPSULE_LENGTH * k / (CAPSULE_RINGS - 1);
}

/* A surface of revolution about +Y (radii CAPSULE_RADII), its two end
 * polygons closed by fans: 88 vertices, 172 triangles, not convex. */
static void make_capsule(cage *cg)
{
    memset(cg, 0, sizeof *cg);
    cg->name = "88-vertex capsule";
    const uint32_t R = CAPSULE_RINGS, S = CAPSULE_SEGMENTS;
    cg->c = R * S;
    for (uint32_t k = 0; k < R; ++k)
        for (uint32_t s = 0; s < S; ++s) {
            const double a = 2.0 * PI * s / S;
            double *p = cg->v + 3 * (k * S + s);
            p[0] = CAPSULE_RADII[k] * cos(a);
            p[1] = capsule_ring_y(k);
            p[2] = CAPSULE_RADII[k] * sin(a);
        }
    uint32_t t = 0;
#define TRI(a, b, c) (cg->f[3 * t] = (a), cg->f[3 * t + 1] = (b), cg->f[3 * t + 2] = (c), ++t)
    for (uint32_t k = 0; k + 1 < R; ++k)
        for (uint32_t s = 0; s < S; ++s) {
            const uint32_t a = k * S + s, b = k * S + (s + 1) % S, c = (k + 1) * S + (s + 1) % S,
                           d = (k + 1) * S + s;
            TRI(a, b, c);
            TRI(a, c, d);
        }
    for (uint32_t s = 1; s + 1 < S; ++s) {
        TRI(0u, s + 1, s);
        TRI((R - 1) * S, (R - 1) * S + s, (R - 1) * S + s + 1);
    }
#undef TRI
    cg->t = t;
    if (signed_volume(cg) < 0.0) /* make it outward */
        for (uint32_t f = 0; f < t; ++f) {
            const uint32_t tmp = cg->f[3 * f + 1];
            cg->f[3 * f + 1] = cg->f[3 * f + 2];
            cg->f[3 * f + 2] = tmp;
        }
}

/* n points strictly inside the cage (p: n by 3). */
static void inside_points(double *p, uint32_t n, const cage *cg)
{
    if (cg->convex) { /* random convex combinations, pulled toward the centroid */
        double centroid[3] = {0, 0, 0};
        for (uint32_t k = 0; k < cg->c; ++k)
            for (int a = 0; a < 3; ++a) centroid[a] += cg->v[3 * k + a] / cg->c;
        for (uint32_t i = 0; i < n; ++i) {
            double w[64], sum = 0.0, q[3] = {0, 0, 0};
            for (uint32_t k = 0; k < cg->c; ++k) sum += (w[k] = pow(rnd(), 3.0));
            for (uint32_t k = 0; k < cg->c; ++k)
                for (int a = 0; a < 3; ++a) q[a] += w[k] / sum * cg->v[3 * k + a];
            for (int a = 0; a < 3; ++a) p[3 * i + a] = centroid[a] + 0.95 * (q[a] - centroid[a]);
        }
    } else if (cg->c == 9) { /* the dented box: under the dent */
        for (uint32_t i = 0; i < n; ++i) {
            const double x = 0.02 + 0.96 * rnd(), y = 0.02 + 0.96 * rnd();
            p[3 * i] = x;
            p[3 * i + 1] = y;
            p[3 * i + 2] = 0.02 + (dent_height(x, y) - 0.04) * rnd();
        }
    } else { /* the capsule: inside the inscribed radius of each band */
        const double margin = 0.02, shrink = 0.97 * cos(PI / CAPSULE_SEGMENTS);
        for (uint32_t i = 0; i < n; ++i) {
            const double y = margin + (CAPSULE_LENGTH - 2.0 * margin) * rnd();
            uint32_t k = (uint32_t)(y / capsule_ring_y(1));
            if (k >= CAPSULE_RINGS - 1) k = CAPSULE_RINGS - 2;
            const double rmax = shrink * fmin(CAPSULE_RADII[k], CAPSULE_RADII[k + 1]);
            const double r = rmax * sqrt(rnd()), a = 2.0 * PI * rnd();
            p[3 * i] = r * cos(a);
            p[3 * i + 1] = y;
            p[3 * i + 2] = r * sin(a);
        }
    }
}

/* Largest |row sum - 1| and |phi C - p| over n rows. */
static void row_errors(const double *phi, const double *p, uint32_t n, const cage *cg,
                       double *sum_error, double *reproduce_error)
{
    *sum_error = *reproduce_error = 0.0;
    for (uint32_t i = 0; i < n; ++i) {
        double sum = 0.0, q[3] = {0, 0, 0};
        for (uint32_t k = 0; k < cg->c; ++k) {
            const double w = phi[(size_t)i * cg->c + k];
            sum += w;
            for (int a = 0; a < 3; ++a) q[a] += w * cg->v[3 * k + a];
        }
        *sum_error = fmax(*sum_error, fabs(sum - 1.0));
        for (int a = 0; a < 3; ++a)
            *reproduce_error = fmax(*reproduce_error, fabs(q[a] - p[3 * i + a]));
    }
}

static void mvc_ok(double *phi, const double *p, uint32_t n, const cage *cg)
{
    ssk_error err = {0};
    const ssk_status st = ssk_cage_mvc(phi, p, n, cg->v, cg->c, cg->f, cg->t, &err);
    if (st != SSK_OK) fprintf(stderr, "%s: %s\n", cg->name, err.message);
    assert_int_equal(st, SSK_OK);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void make_cage(cage *cg, int which)
{
    switch (which) {
    case 0: make_cube(cg); break;
    case 1: make_octahedron(cg); break;
    case 2: make_dented_box(cg); break;
    default: make_capsule(cg); break;
    }
}
#define CAGE_KINDS 4

/* ------------------------------------------------------------------------ */
/* Mean value coordinates                                                    */
/* ------------------------------------------------------------------------ */

static void test_cages_are_outward(void **state)
{
    (void)state;
    static cage cg;
    for (int which = 0; which < CAGE_KINDS; ++which) {
        make_cage(&cg, which);
        assert_true(signed_volume(&cg) > 0.0);
        assert_int_equal(cg.t, 2 * cg.c - 4); /* closed genus 0 */
    }
}

static void test_inside_points_partition_and_reproduce(void **state)
{
    (void)state;
    static cage cg;
    static double p[3 * INSIDE_POINTS], phi[INSIDE_POINTS * CAPSULE_RINGS * CAPSULE_SEGMENTS];
    for (int which = 0; which < CAGE_KINDS; ++which) {
        make_cage(&cg, which);
        inside_points(p, INSIDE_POINTS, &cg);
        mvc_ok(phi, p, INSIDE_POINTS, &cg);
        double se, re, lowest = 0.0;
        row_errors(phi, p, INSIDE_POINTS, &cg, &se, &re);
        for (size_t k = 0; k < (size_t)INSIDE_POINTS * cg.c; ++k) lowest = fmin(lowest, phi[k]);
        printf("%s (%u vertices, %u triangles): |sum - 1| %.2e, |phi C - p| %.2e, lowest %.3g\n",
               cg.name, cg.c, cg.t, se, re, lowest);
        assert_true(se <= SUM_TOL);
        assert_true(re <= REPRODUCE_TOL);
        /* positive inside a convex cage (Floater, Kos and Reimers 2005) */
        if (cg.convex) assert_true(lowest >= -1e-15);
    }
}

static void test_cage_vertices_get_identity_rows(void **state)
{
    (void)state;
    static cage cg;
    static double phi[CAPSULE_RINGS * CAPSULE_SEGMENTS * CAPSULE_RINGS * CAPSULE_SEGMENTS];
    for (int which = 0; which < CAGE_KINDS; ++which) {
        make_cage(&cg, which);
        mvc_ok(phi, cg.v, cg.c, &cg);
        for (uint32_t i = 0; i < cg.c; ++i)
            for (uint32_t k = 0; k < cg.c; ++k)
                assert_true(phi[(size_t)i * cg.c + k] == (i == k ? 1.0 : 0.0));
    }
}

/* Points on faces (random barycentric), on edges (midway and at 1/3) of
 * every triangle: the row is the barycentric one. */
static void test_surface_points_get_barycentric_rows(void **state)
{
    (void)state;
    static cage cg;
    double phi[CAPSULE_RINGS * CAPSULE_SEGMENTS];
    for (int which = 0; which < CAGE_KINDS; ++which) {
        make_cage(&cg, which);
        double worst = 0.0;
        for (uint32_t f = 0; f < cg.t; ++f) {
            const uint32_t *tri = cg.f + 3 * f;
            double bary[4][3];
            const double r0 = 0.1 + 0.8 * rnd(), r1 = (1.0 - r0) * (0.1 + 0.8 * rnd());
            const double fb[4][3] = {{r0, r1, 1.0 - r0 - r1},
                                     {1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0},
                                     {0.5, 0.5, 0.0},
                                     {0.0, 1.0 / 3.0, 2.0 / 3.0}};
            memcpy(bary, fb, sizeof fb);
            for (int s = 0; s < 4; ++s) {
                double p[3] = {0, 0, 0};
                for (int i = 0; i < 3; ++i)
                    for (int a = 0; a < 3; ++a) p[a] += bary[s][i] * cg.v[3 * tri[i] + a];
                mvc_ok(phi, p, 1, &cg);
                double want[CAPSULE_RINGS * CAPSULE_SEGMENTS] = {0};
                for (int i = 0; i < 3; ++i) want[tri[i]] += bary[s][i];
                /* a point on an edge of coplanar neighbors may be read
                 * from either triangle: the same edge interpolation */
                for (uint32_t k = 0; k < cg.c; ++k) worst = fmax(worst, fabs(phi[k] - want[k]));
            }
        }
        printf("%s: surface points against barycentric rows: %.2e\n", cg.name, worst);
        assert_true(worst <= LIMIT_TOL);
    }
}

/* Points NEAR_FACE_OFFSET inside from a face's interior: finite rows that
 * reproduce the point and match the on-face row; farther offsets print the
 * approach. */
static void test_points_near_a_face(void **state)
{
    (void)state;
    static cage cg;
    double on[CAPSULE_RINGS * CAPSULE_SEGMENTS], near[CAPSULE_RINGS * CAPSULE_SEGMENTS];
    for (int which = 0; which < CAGE_KINDS; ++which) {
        make_cage(&cg, which);
        double worst = 0.0, worst_reproduce = 0.0;
        for (uint32_t f = 0; f < cg.t; ++f) {
            const uint32_t *tri = cg.f + 3 * f;
            const double *a = cg.v + 3 * tri[0], *b = cg.v + 3 * tri[1], *c = cg.v + 3 * tri[2];
            double n[3], e1[3], e2[3], p[3], q[3];
            for (int k = 0; k < 3; ++k) {
                e1[k] = b[k] - a[k];
                e2[k] = c[k] - a[k];
                p[k] = (0.3 * a[k] + 0.45 * b[k] + 0.25 * c[k]);
            }
            n[0] = e1[1] * e2[2] - e1[2] * e2[1];
            n[1] = e1[2] * e2[0] - e1[0] * e2[2];
            n[2] = e1[0] * e2[1] - e1[1] * e2[0];
            const double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            mvc_ok(on, p, 1, &cg);
            for (int k = 0; k < 3; ++k) q[k] = p[k] - NEAR_FACE_OFFSET * n[k] / len; /* inward */
            mvc_ok(near, q, 1, &cg);
            double se, re;
            row_errors(near, q, 1, &cg, &se, &re);
            worst_reproduce = fmax(worst_reproduce, re);
            for (uint32_t k = 0; k < cg.c; ++k) {
                assert_true(isfinite(near[k]));
                worst = fmax(worst, fabs(near[k] - on[k]));
            }
            assert_true(se <= SUM_TOL);
        }
        printf("%s: 1e-9 off a face: largest change from the on-face row %.2e, |phi C - p| "
               "%.2e\n",
               cg.name, worst, worst_reproduce);
        assert_true(worst <= NEAR_FACE_TOL);
        assert_true(worst_reproduce <= REPRODUCE_TOL);
    }
    /* the approach toward one face of the capsule: continuous */
    make_capsule(&cg);
    const uint32_t *tri = cg.f + 3 * 20;
    const double *a = cg.v + 3 * tri[0], *b = cg.v + 3 * tri[1], *c = cg.v + 3 * tri[2];
    double p[3], centroid[3] = {0, 0, 0};
    for (uint32_t k = 0; k < cg.c; ++k)
        for (int ax = 0; ax < 3; ++ax) centroid[ax] += cg.v[3 * k + ax] / cg.c;
    for (int ax = 0; ax < 3; ++ax) p[ax] = (a[ax] + b[ax] + c[ax]) / 3.0;
    mvc_ok(on, p, 1, &cg);
    printf("capsule, toward a face's centroid:");
    double previous = INFINITY;
    for (int e = 2; e <= 14; e += 2) {
        const double t = pow(10.0, -e);
        double q[3];
        for (int ax = 0; ax < 3; ++ax) q[ax] = p[ax] + t * (centroid[ax] - p[ax]);
        mvc_ok(near, q, 1, &cg);
        double diff = 0.0, se, re;
        for (uint32_t k = 0; k < cg.c; ++k) diff = fmax(diff, fabs(near[k] - on[k]));
        row_errors(near, q, 1, &cg, &se, &re);
        printf(" 1e-%d: %.1e (reproduce %.1e)", e, diff, re);
        assert_true(re <= REPRODUCE_TOL);
        assert_true(diff <= fmax(previous, 1e-12) * 1.5); /* shrinks toward the face */
        previous = diff;
    }
    printf("\n");
    /* near the cube's edges and vertices (non-coplanar faces meet): 1e-9
     * inside along the bisector, against the edge's lerp / the vertex */
    make_cube(&cg);
    const double edge_points[4][3] = {{0.3, 0.0, 0.0}, {1.0, 0.7, 1.0}, {0.0, 0.5, 1.0},
                                      {1.0, 1.0, 0.25}};
    double worst = 0.0, worst_reproduce = 0.0;
    for (int e = 0; e < 4; ++e) {
        double q[3];
        for (int ax = 0; ax < 3; ++ax) /* toward the center on the two fixed axes */
            q[ax] = edge_points[e][ax] + (edge_points[e][ax] == 0.0   ? NEAR_FACE_OFFSET
                                          : edge_points[e][ax] == 1.0 ? -NEAR_FACE_OFFSET
                                                                      : 0.0);
        mvc_ok(on, edge_points[e], 1, &cg);
        mvc_ok(near, q, 1, &cg);
        double se, re;
        row_errors(near, q, 1, &cg, &se, &re);
        worst_reproduce = fmax(worst_reproduce, re);
        for (uint32_t k = 0; k < cg.c; ++k) worst = fmax(worst, fabs(near[k] - on[k]));
    }
    for (uint32_t v = 0; v < cg.c; ++v) { /* near each vertex */
        double q[3];
        for (int ax = 0; ax < 3; ++ax)
            q[ax] = cg.v[3 * v + ax] + (cg.v[3 * v + ax] == 0.0 ? 1.0 : -1.0) * NEAR_FACE_OFFSET;
        mvc_ok(near, q, 1, &cg);
        double se, re;
        row_errors(near, q, 1, &cg, &se, &re);
        worst_reproduce = fmax(worst_reproduce, re);
        for (uint32_t k = 0; k < cg.c; ++k)
            worst = fmax(worst, fabs(near[k] - (k == v ? 1.0 : 0.0)));
    }
    printf("cube, 1e-9 inside from edges and vertices: largest change %.2e, |phi C - p| %.2e\n",
           worst, worst_reproduce);
    assert_true(worst <= NEAR_FACE_TOL);
    assert_true(worst_reproduce <= REPRODUCE_TOL);
}

static void test_same_bits_on_any_thread_count(void **state)
{
    (void)state;
    static cage cg;
    enum { N = 2000 };
    static double p[3 * N], one[N * CAPSULE_RINGS * CAPSULE_SEGMENTS],
        four[N * CAPSULE_RINGS * CAPSULE_SEGMENTS];
    make_capsule(&cg);
    inside_points(p, N, &cg);
    ssk_threading saved, t;
    ssk_threading_get(&saved);
    t = saved;
    t.threads = 1;
    assert_int_equal(ssk_threading_set(&t, NULL), SSK_OK);
    mvc_ok(one, p, N, &cg);
    t.threads = 4;
    assert_int_equal(ssk_threading_set(&t, NULL), SSK_OK);
    mvc_ok(four, p, N, &cg);
    saved.threads = 0;
    assert_int_equal(ssk_threading_set(&saved, NULL), SSK_OK);
    assert_memory_equal(one, four, sizeof(double) * N * cg.c);
}

static void test_bad_cages_are_refused(void **state)
{
    (void)state;
    static cage cg;
    ssk_error err = {0};
    double phi[9], p[3] = {0.5, 0.5, 0.5};
    make_cube(&cg);
    assert_int_equal(ssk_cage_mvc(phi, p, 1, NULL, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "NULL"));
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, cg.c, NULL, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_mvc(NULL, p, 1, cg.v, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_mvc(phi, NULL, 1, cg.v, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    /* an index out of range */
    cg.f[7] = 8;
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "out of range"));
    assert_non_null(strstr(err.message, "triangle 2"));
    /* a repeated corner */
    make_cube(&cg);
    cg.f[4] = cg.f[3];
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "repeats"));
    /* a hole: the last triangle left out */
    make_cube(&cg);
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, cg.c, cg.f, cg.t - 1, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "not closed"));
    /* one triangle turned the other way */
    make_cube(&cg);
    const uint32_t tmp = cg.f[1];
    cg.f[1] = cg.f[2];
    cg.f[2] = tmp;
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    /* a zero-area triangle: a vertex moved onto its neighbors' line */
    make_cube(&cg);
    cg.v[3 * 3] = 0.5; /* vertex 3 midway between vertices 0 and 1: triangle 0 3 1 flat */
    cg.v[3 * 3 + 1] = 0.0;
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "degenerate"));
    /* a non-finite vertex or point */
    make_cube(&cg);
    cg.v[5] = NAN;
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    make_cube(&cg);
    p[1] = INFINITY;
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, cg.c, cg.f, cg.t, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "point 0"));
    /* too few triangles to close */
    assert_int_equal(ssk_cage_mvc(phi, p, 1, cg.v, 3, cg.f, 1, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------------ */
/* MaxVol and the cage updater                                               */
/* ------------------------------------------------------------------------ */

/* log |det| of the n by n row-major a (overwritten) by Gaussian elimination
 * with partial pivoting; -INFINITY when singular. */
static double log_abs_det(double *a, uint32_t n)
{
    double logdet = 0.0;
    for (uint32_t k = 0; k < n; ++k) {
        uint32_t p = k;
        for (uint32_t i = k + 1; i < n; ++i)
            if (fabs(a[(size_t)i * n + k]) > fabs(a[(size_t)p * n + k])) p = i;
        if (a[(size_t)p * n + k] == 0.0) return -INFINITY;
        if (p != k)
            for (uint32_t j = 0; j < n; ++j) {
                const double t = a[(size_t)k * n + j];
                a[(size_t)k * n + j] = a[(size_t)p * n + j];
                a[(size_t)p * n + j] = t;
            }
        const double piv = a[(size_t)k * n + k];
        logdet += log(fabs(piv));
        for (uint32_t i = k + 1; i < n; ++i) {
            const double f = a[(size_t)i * n + k] / piv;
            for (uint32_t j = k; j < n; ++j) a[(size_t)i * n + j] -= f * a[(size_t)k * n + j];
        }
    }
    return logdet;
}

/* The greedy start: the pivot rows of Gaussian elimination with partial
 * pivoting on the m by c matrix phi (row interchanges tracked). */
static void greedy_rows(uint32_t *rows, const double *phi, uint32_t m, uint32_t c)
{
    double *a = malloc(sizeof(double) * m * c);
    uint32_t *perm = malloc(sizeof(uint32_t) * m);
    assert_non_null(a);
    assert_non_null(perm);
    memcpy(a, phi, sizeof(double) * m * c);
    for (uint32_t i = 0; i < m; ++i) perm[i] = i;
    for (uint32_t k = 0; k < c; ++k) {
        uint32_t p = k;
        for (uint32_t i = k + 1; i < m; ++i)
            if (fabs(a[(size_t)i * c + k]) > fabs(a[(size_t)p * c + k])) p = i;
        for (uint32_t j = 0; j < c; ++j) {
            const double t = a[(size_t)k * c + j];
            a[(size_t)k * c + j] = a[(size_t)p * c + j];
            a[(size_t)p * c + j] = t;
        }
        const uint32_t t = perm[k];
        perm[k] = perm[p];
        perm[p] = t;
        for (uint32_t i = k + 1; i < m; ++i) {
            const double f = a[(size_t)i * c + k] / a[(size_t)k * c + k];
            for (uint32_t j = k; j < c; ++j) a[(size_t)i * c + j] -= f * a[(size_t)k * c + j];
        }
    }
    memcpy(rows, perm, sizeof(uint32_t) * c);
    free(a);
    free(perm);
}

static double rows_log_det(const double *phi, uint32_t c, const uint32_t *rows)
{
    double *a = malloc(sizeof(double) * c * c);
    assert_non_null(a);
    for (uint32_t j = 0; j < c; ++j) memcpy(a + (size_t)j * c, phi + (size_t)rows[j] * c, sizeof(double) * c);
    const double d = log_abs_det(a, c);
    free(a);
    return d;
}

/* Largest |B_ij|, B = phi A~^{-1}: solves A~^T x = phi_i^T per row with
 * Gauss-Jordan on [A~^T | phi^T] (here, independent of the library). */
static double largest_b(const double *phi, uint32_t m, uint32_t c, const uint32_t *rows)
{
    const uint32_t w = c + m;
    double *g = malloc(sizeof(double) * c * w);
    assert_non_null(g);
    for (uint32_t r = 0; r < c; ++r) { /* row r of [A~^T | phi^T] */
        for (uint32_t j = 0; j < c; ++j) g[(size_t)r * w + j] = phi[(size_t)rows[j] * c + r];
        for (uint32_t i = 0; i < m; ++i) g[(size_t)r * w + c + i] = phi[(size_t)i * c + r];
    }
    for (uint32_t k = 0; k < c; ++k) {
        uint32_t p = k;
        for (uint32_t i = k + 1; i < c; ++i)
            if (fabs(g[(size_t)i * w + k]) > fabs(g[(size_t)p * w + k])) p = i;
        for (uint32_t j = 0; j < w; ++j) {
            const double t = g[(size_t)k * w + j];
            g[(size_t)k * w + j] = g[(size_t)p * w + j];
            g[(size_t)p * w + j] = t;
        }
        const double piv = g[(size_t)k * w + k];
        for (uint32_t j = 0; j < w; ++j) g[(size_t)k * w + j] /= piv;
        for (uint32_t i = 0; i < c; ++i) {
            if (i == k) continue;
            const double f = g[(size_t)i * w + k];
            if (f != 0.0)
                for (uint32_t j = 0; j < w; ++j) g[(size_t)i * w + j] -= f * g[(size_t)k * w + j];
        }
    }
    double big = 0.0;
    for (uint32_t r = 0; r < c; ++r)
        for (uint32_t i = 0; i < m; ++i) big = fmax(big, fabs(g[(size_t)r * w + c + i]));
    free(g);
    return big;
}

#define MAXVOL_POINTS 400

static void test_maxvol(void **state)
{
    (void)state;
    static cage cg;
    static double p[3 * MAXVOL_POINTS], phi[MAXVOL_POINTS * CAPSULE_RINGS * CAPSULE_SEGMENTS];
    uint32_t rows[CAPSULE_RINGS * CAPSULE_SEGMENTS], greedy[CAPSULE_RINGS * CAPSULE_SEGMENTS];
    for (int which = 0; which < CAGE_KINDS; ++which) {
        make_cage(&cg, which);
        inside_points(p, MAXVOL_POINTS, &cg);
        mvc_ok(phi, p, MAXVOL_POINTS, &cg);
        ssk_error err = {0};
        const ssk_status st = ssk_cage_maxvol(rows, phi, MAXVOL_POINTS, cg.c, &err);
        if (st != SSK_OK) fprintf(stderr, "%s\n", err.message);
        assert_int_equal(st, SSK_OK);
        for (uint32_t j = 0; j < cg.c; ++j) {
            assert_true(rows[j] < MAXVOL_POINTS);
            for (uint32_t k = 0; k < j; ++k) assert_true(rows[j] != rows[k]);
        }
        greedy_rows(greedy, phi, MAXVOL_POINTS, cg.c);
        const double ld = rows_log_det(phi, cg.c, rows), lg = rows_log_det(phi, cg.c, greedy);
        const double big = largest_b(phi, MAXVOL_POINTS, cg.c, rows);
        printf("%s: MaxVol log|det| %.4f (greedy start %.4f), largest |B_ij| %.6f\n", cg.name, ld,
               lg, big);
        assert_true(ld >= lg - 1e-9);
        assert_true(big <= 1.0 + MAXVOL_TOL + 1e-9);
    }
    /* refused: NULL, c = 0, count < c, rank below c */
    ssk_error err = {0};
    assert_int_equal(ssk_cage_maxvol(NULL, phi, 10, 2, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_maxvol(rows, phi, 10, 0, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_maxvol(rows, phi, 3, 4, &err), SSK_ERROR_INVALID_ARGUMENT);
    double flat[20 * 4];
    for (uint32_t i = 0; i < 20; ++i) { /* column 3 = column 0 + column 1 */
        flat[4 * i] = rnd();
        flat[4 * i + 1] = rnd();
        flat[4 * i + 2] = rnd();
        flat[4 * i + 3] = flat[4 * i] + flat[4 * i + 1];
    }
    assert_int_equal(ssk_cage_maxvol(rows, flat, 20, 4, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "rank"));
}

/* An affine map x -> A x + t. */
static const double AFFINE_A[9] = {1.1, 0.2, -0.3, -0.1, 0.9, 0.25, 0.15, -0.2, 1.3};
static const double AFFINE_T[3] = {0.4, -1.2, 2.5};

static void affine(double out[3], const double x[3])
{
    for (int r = 0; r < 3; ++r)
        out[r] = AFFINE_A[3 * r] * x[0] + AFFINE_A[3 * r + 1] * x[1] + AFFINE_A[3 * r + 2] * x[2] +
                 AFFINE_T[r];
}

static void test_cage_up_follows_an_affine_map(void **state)
{
    (void)state;
    static cage cg;
    static double p[3 * MAXVOL_POINTS], phi[MAXVOL_POINTS * CAPSULE_RINGS * CAPSULE_SEGMENTS];
    double posed[3 * CAPSULE_RINGS * CAPSULE_SEGMENTS], solved[3 * CAPSULE_RINGS * CAPSULE_SEGMENTS];
    for (int which = 0; which < CAGE_KINDS; ++which) {
        make_cage(&cg, which);
        inside_points(p, MAXVOL_POINTS, &cg);
        mvc_ok(phi, p, MAXVOL_POINTS, &cg);
        ssk_cage_up up;
        ssk_error err = {0};
        assert_int_equal(ssk_cage_up_create(&up, phi, MAXVOL_POINTS, cg.c, &err), SSK_OK);
        assert_int_equal(up.c, cg.c);
        for (uint32_t j = 0; j < cg.c; ++j) affine(posed + 3 * j, p + 3 * up.rows[j]);
        assert_int_equal(ssk_cage_up_solve(&up, solved, posed, &err), SSK_OK);
        double cage_error = 0.0, rows_error = 0.0;
        for (uint32_t k = 0; k < cg.c; ++k) {
            double want[3];
            affine(want, cg.v + 3 * k);
            for (int a = 0; a < 3; ++a) cage_error = fmax(cage_error, fabs(solved[3 * k + a] - want[a]));
        }
        for (uint32_t j = 0; j < cg.c; ++j) {
            double q[3] = {0, 0, 0};
            for (uint32_t k = 0; k < cg.c; ++k)
                for (int a = 0; a < 3; ++a) q[a] += phi[(size_t)up.rows[j] * cg.c + k] * solved[3 * k + a];
            for (int a = 0; a < 3; ++a) rows_error = fmax(rows_error, fabs(q[a] - posed[3 * j + a]));
        }
        printf("%s: CageUp cage error %.2e, Phi~ C' - M~' %.2e\n", cg.name, cage_error, rows_error);
        assert_true(cage_error <= CAGE_FIT_TOL);
        assert_true(rows_error <= ROWS_FIT_TOL);
        /* refused: NULL, non-finite rows */
        assert_int_equal(ssk_cage_up_solve(&up, NULL, posed, &err), SSK_ERROR_INVALID_ARGUMENT);
        posed[4] = NAN;
        assert_int_equal(ssk_cage_up_solve(&up, solved, posed, &err), SSK_ERROR_NONFINITE);
        ssk_cage_up_free(&up);
        assert_null(up.rows);
        ssk_cage_up_free(&up); /* twice: harmless */
    }
    ssk_cage_up up;
    ssk_error err = {0};
    assert_int_equal(ssk_cage_up_create(&up, NULL, 10, 4, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(up.rows);
    ssk_cage_up_free(NULL);
}

/* Timings (printed): the paper's Ely has 7,512 vertices and 88 handles
 * (Table 1: CageUp preprocess 75 ms, a MacBook Pro 2015 i5). */
static void test_timings(void **state)
{
    (void)state;
    static cage cg;
    const uint32_t n = TIMING_POINTS;
    double *p = malloc(sizeof(double) * 3 * n);
    double *phi = malloc(sizeof(double) * n * CAPSULE_RINGS * CAPSULE_SEGMENTS);
    assert_non_null(p);
    assert_non_null(phi);
    make_capsule(&cg);
    inside_points(p, n, &cg);
    ssk_threading th;
    ssk_threading_get(&th);
    double t0 = now_seconds();
    mvc_ok(phi, p, n, &cg);
    const double t_mvc = now_seconds() - t0;
    double se, re;
    row_errors(phi, p, n, &cg, &se, &re);
    printf("timing points: |sum - 1| %.2e, |phi C - p| %.2e\n", se, re);
    assert_true(se <= SUM_TOL);
    assert_true(re <= REPRODUCE_TOL);
    ssk_cage_up up;
    t0 = now_seconds();
    assert_int_equal(ssk_cage_up_create(&up, phi, n, cg.c, NULL), SSK_OK);
    const double t_create = now_seconds() - t0;
    double posed[3 * CAPSULE_RINGS * CAPSULE_SEGMENTS], solved[3 * CAPSULE_RINGS * CAPSULE_SEGMENTS];
    for (uint32_t j = 0; j < cg.c; ++j) affine(posed + 3 * j, p + 3 * up.rows[j]);
    t0 = now_seconds();
    for (int s = 0; s < TIMING_SOLVES; ++s)
        assert_int_equal(ssk_cage_up_solve(&up, solved, posed, NULL), SSK_OK);
    const double t_solve = (now_seconds() - t0) / TIMING_SOLVES;
    printf("timings (%u threads): MVC of %u points, %u-vertex %u-triangle cage: %.1f ms; CageUp "
           "preprocess (MaxVol + LU): %.1f ms; one solve: %.1f us\n",
           th.threads, n, cg.c, cg.t, 1e3 * t_mvc, 1e3 * t_create, 1e6 * t_solve);
    ssk_cage_up_free(&up);
    free(p);
    free(phi);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cages_are_outward),
        cmocka_unit_test(test_inside_points_partition_and_reproduce),
        cmocka_unit_test(test_cage_vertices_get_identity_rows),
        cmocka_unit_test(test_surface_points_get_barycentric_rows),
        cmocka_unit_test(test_points_near_a_face),
        cmocka_unit_test(test_same_bits_on_any_thread_count),
        cmocka_unit_test(test_bad_cages_are_refused),
        cmocka_unit_test(test_maxvol),
        cmocka_unit_test(test_cage_up_follows_an_affine_map),
        cmocka_unit_test(test_timings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
