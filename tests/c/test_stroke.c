/* test_stroke.c — strokes and sketch posing (Toothman 2020, ch. 7; issue
 * #22; core/model/stroke_reduce.c, stroke.c, line_of_action.c,
 * surface_roi.c): Ramer-Douglas-Peucker on polylines worked out by hand,
 * the composite Bezier through its knots with continuous tangents, on a
 * circle with arc-length t, orthonormal frames (Frenet, transported and
 * straight), closest points, line-of-action posing of a straight chain
 * onto a known arc (joints and a bone chain), and the region of interest
 * of a surface stroke against a breadth-first search written here. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI_D 3.14159265358979323846

static ssk_stroke *make_stroke(const double *points, uint32_t n, uint32_t dim, double epsilon)
{
    ssk_stroke_desc d = {n, dim, points, NULL, epsilon, 0.0};
    ssk_stroke *s = NULL;
    ssk_error err = {0};
    if (ssk_stroke_create(&s, &d, &err) != SSK_OK) fail_msg("%s", err.message);
    return s;
}

static void expect_kept(const uint8_t *keep, uint32_t n, const uint32_t *expected, uint32_t count)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (!keep[i]) continue;
        if (k >= count || expected[k] != i) fail_msg("point %u kept, not expected", i);
        ++k;
    }
    assert_int_equal(k, count);
}

/* RDP on polylines reduced by hand (distances in the comments). */
static void test_rdp_known(void **state)
{
    (void)state;
    /* 2D, epsilon 1: (4,3) is 3 from the chord (0,0)-(6,0); then on
     * (0,0)-(4,3), (3,0) is 1.8 away (farthest: (2,-0.5) is 1.6); (1,0.5)
     * and (2,-0.5) are 0.5 from (0,0)-(3,0); (5,0) is 0.83 from
     * (4,3)-(6,0). */
    const double p2[] = {0, 0, 1, 0.5, 2, -0.5, 3, 0, 4, 3, 5, 0, 6, 0};
    uint8_t keep[8];
    const uint32_t e2[] = {0, 3, 4, 6};
    assert_int_equal(ssk_polyline_reduce(keep, p2, 7, 2, 1.0), 4);
    expect_kept(keep, 7, e2, 4);
    /* 3D, epsilon 0.5: (2,0,0) is 1.633 from the chord to (2,2,2),
     * (2,2,0.1) 1.551; then (1,0,0.2) is 0.2 from (0,0,0)-(2,0,0) and
     * (2,2,0.1) 1.343 from (2,0,0)-(2,2,2). */
    const double p3[] = {0, 0, 0, 1, 0, 0.2, 2, 0, 0, 2, 2, 0.1, 2, 2, 2};
    const uint32_t e3[] = {0, 2, 3, 4};
    assert_int_equal(ssk_polyline_reduce(keep, p3, 5, 3, 0.5), 4);
    expect_kept(keep, 5, e3, 4);
    /* the distance is to the segment, not the line: (-3, 0.1) is 0.1 from
     * the line through (0,0) and (10,0) but 3 from the segment */
    const double ps[] = {0, 0, -3, 0.1, 10, 0};
    const uint32_t es[] = {0, 1, 2};
    assert_int_equal(ssk_polyline_reduce(keep, ps, 3, 2, 1.0), 3);
    expect_kept(keep, 3, es, 3);
    /* noise below epsilon: only the ends */
    double line[2 * 50];
    for (int i = 0; i < 50; ++i) {
        line[2 * i] = i;
        line[2 * i + 1] = 0.3 * sin(1.7 * i);
    }
    line[2 * 49 + 1] = 0.0; /* the chord is y = 0: every point within 0.3 */
    uint8_t keep50[50];
    const uint32_t ends[] = {0, 49};
    assert_int_equal(ssk_polyline_reduce(keep50, line, 50, 2, 0.31), 2);
    expect_kept(keep50, 50, ends, 2);
    /* through a stroke: the same knots, repeated points dropped first, and
     * the default 2D epsilon is 8 px */
    const double rep[] = {0, 0, 0, 0, 1, 0.5, 2, -0.5, 3, 0, 3, 0, 4, 3, 5, 0, 6, 0};
    ssk_stroke *s = make_stroke(rep, 9, 2, 1.0);
    assert_int_equal(ssk_stroke_knot_count(s), 4);
    const double want[] = {0, 0, 0, 3, 0, 0, 4, 3, 0, 6, 0, 0};
    for (int i = 0; i < 12; ++i) assert_true(ssk_stroke_knots(s)[i] == want[i]);
    ssk_stroke_destroy(s);
    s = make_stroke(p2, 7, 2, SSK_STROKE_EPSILON_AUTO);
    assert_true(ssk_stroke_epsilon(s) == SSK_STROKE_EPSILON_WINDOW_PX);
    assert_int_equal(ssk_stroke_knot_count(s), 2);
    ssk_stroke_destroy(s);
    s = make_stroke(p3, 5, 3, SSK_STROKE_EPSILON_AUTO);
    assert_true(fabs(ssk_stroke_epsilon(s) - SSK_STROKE_EPSILON_RELATIVE * sqrt(4 + 4 + 4)) <
                1e-15);
    ssk_stroke_destroy(s);
}

static void test_stroke_errors(void **state)
{
    (void)state;
    ssk_stroke *s = (ssk_stroke *)1;
    ssk_error err = {0};
    const double same[] = {1, 1, 1, 1};
    ssk_stroke_desc d = {2, 2, same, NULL, 0.0, 0.0};
    assert_int_equal(ssk_stroke_create(&s, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(s);
    const double bad[] = {0, 0, NAN, 1};
    d.points = bad;
    assert_int_equal(ssk_stroke_create(&s, &d, &err), SSK_ERROR_NONFINITE);
    const double ok[] = {0, 0, 1, 1};
    d.points = ok;
    const double huge[] = {0, 0, 1e300, 1};
    d.points = huge;
    assert_int_equal(ssk_stroke_create(&s, &d, &err), SSK_ERROR_NONFINITE);
    assert_non_null(strstr(err.message, "point 1"));
    d.points = ok;
    d.dimension = 4;
    assert_int_equal(ssk_stroke_create(&s, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    d.dimension = 2;
    d.epsilon = -0.5;
    assert_int_equal(ssk_stroke_create(&s, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    d.epsilon = 0.0;
    d.point_count = 1;
    assert_int_equal(ssk_stroke_create(&s, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    ssk_stroke_destroy(NULL);
    double x[3];
    ssk_stroke_position(NULL, 0.5, x);
    assert_true(isnan(x[0]));
    assert_true(isnan(ssk_stroke_closest(NULL, x, NULL)));
}

static double dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void check_orthonormal(const double f[9])
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            const double want = i == j ? 1.0 : 0.0;
            if (fabs(dot(f + 3 * i, f + 3 * j) - want) > 1e-6)
                fail_msg("rows %d, %d: dot %.9g", i, j, dot(f + 3 * i, f + 3 * j));
        }
    /* right-handed: B = T x N */
    const double *t = f, *n = f + 3, *b = f + 6;
    const double c[3] = {t[1] * n[2] - t[2] * n[1], t[2] * n[0] - t[0] * n[2],
                         t[0] * n[1] - t[1] * n[0]};
    for (int k = 0; k < 3; ++k) assert_true(fabs(c[k] - b[k]) < 1e-6);
}

/* An uneven zigzag in 3D: the curve passes through every knot, and the
 * unit tangent and the normal are continuous across the joins. */
static void test_bezier_knots_tangents(void **state)
{
    (void)state;
    const double p[] = {0, 0, 0, 1, 2, 0.5, 3, 2.5, -1, 4, 0, 1, 7, 1, 2, 8, 4, 0};
    ssk_stroke *s = make_stroke(p, 6, 3, 0.0);
    assert_int_equal(ssk_stroke_knot_count(s), 6);
    const double *k = ssk_stroke_knots(s);
    for (int i = 0; i < 6; ++i) {
        double dist = 1.0, at[3];
        const double t = ssk_stroke_closest(s, k + 3 * i, &dist);
        assert_true(dist < 1e-9);
        ssk_stroke_position(s, t, at);
        for (int c = 0; c < 3; ++c) assert_true(fabs(at[c] - k[3 * i + c]) < 1e-9);
        if (i == 0) assert_true(t == 0.0);
        if (i == 5) assert_true(t == 1.0);
        if (i == 0 || i == 5) continue;
        /* across the join: tangents and normals (curvature, C2) agree */
        const double h = 1e-7;
        double a[9], b[9];
        ssk_stroke_frame(s, t - h, a);
        ssk_stroke_frame(s, t + h, b);
        for (int c = 0; c < 6; ++c)
            if (fabs(a[c] - b[c]) > 1e-4) fail_msg("knot %d: frame row %d jumps", i, c / 3);
    }
    /* continuity as a whole: no step of 1e-4 in t turns T by more than a
     * bound on the curvature times the step */
    double prev[9];
    ssk_stroke_frame(s, 0.0, prev);
    for (int i = 1; i <= 10000; ++i) {
        double f[9];
        ssk_stroke_frame(s, i / 10000.0, f);
        check_orthonormal(f);
        double d2 = 0.0;
        for (int c = 0; c < 3; ++c) d2 += (f[c] - prev[c]) * (f[c] - prev[c]);
        assert_true(sqrt(d2) < 0.05);
        memcpy(prev, f, sizeof f);
    }
    ssk_stroke_destroy(s);
}

/* 200 points on a quarter circle: the curve stays on the circle, t is the
 * fraction of arc length, the Frenet normal points to the center, B = +z,
 * and closest finds points off the curve. */
static void test_circle(void **state)
{
    (void)state;
    const double r = 2.0, quarter = PI_D / 2;
    double p[3 * 200];
    for (int i = 0; i < 200; ++i) {
        const double a = quarter * i / 199.0;
        p[3 * i] = r * cos(a);
        p[3 * i + 1] = r * sin(a);
        p[3 * i + 2] = 0.0;
    }
    ssk_stroke *s = make_stroke(p, 200, 3, 0.0);
    assert_true(fabs(ssk_stroke_length(s) - r * quarter) < 1e-6 * r);
    assert_false(ssk_stroke_is_straight(s));
    for (int i = 0; i <= 1000; ++i) {
        const double t = i / 1000.0, a = quarter * t;
        double x[3], f[9];
        ssk_stroke_position(s, t, x);
        assert_true(fabs(x[0] - r * cos(a)) < 1e-6 && fabs(x[1] - r * sin(a)) < 1e-6);
        ssk_stroke_frame(s, t, f);
        check_orthonormal(f);
        assert_true(fabs(f[0] + sin(a)) < 1e-5 && fabs(f[1] - cos(a)) < 1e-5); /* T */
        assert_true(fabs(f[3] + cos(a)) < 1e-4 && fabs(f[4] + sin(a)) < 1e-4); /* N inward */
        assert_true(fabs(f[8] - 1.0) < 1e-6);                                   /* B = +z */
        const double off[3] = {1.5 * r * cos(a), 1.5 * r * sin(a), 0.3};
        double dist;
        assert_true(fabs(ssk_stroke_closest(s, off, &dist) - t) < 1e-6);
        assert_true(fabs(dist - hypot(0.5 * r, 0.3)) < 1e-6);
    }
    ssk_stroke_destroy(s);
}

/* Straight strokes and straight parts: frames stay orthonormal; a straight
 * line's normal is the world axis least along it; a straight lead-in
 * takes its normal from the first curved sample by transport; timestamps
 * interpolate. */
static void test_frames_straight(void **state)
{
    (void)state;
    const double line[] = {0, 0, 0, 1, 1, 0.02, 2, 2, 0.04};
    const double times[] = {10, 11, 14};
    ssk_stroke_desc d = {3, 3, line, times, 0.0, 0.0};
    ssk_stroke *s = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_stroke_create(&s, &d, &err), SSK_OK);
    assert_int_equal(ssk_stroke_knot_count(s), 2); /* collinear: the ends */
    assert_true(ssk_stroke_is_straight(s));
    double f[9];
    ssk_stroke_frame(s, 0.3, f);
    check_orthonormal(f);
    assert_true(fabs(f[3]) < 0.05 && fabs(f[4]) < 0.05); /* N ~ z, least along T */
    assert_true(fabs(ssk_stroke_time(s, 0.25) - 11.0) < 1e-12);
    ssk_stroke_destroy(s);
    /* a straight run then a bend in the plane z = 0 */
    double p[3 * 40];
    for (int i = 0; i < 40; ++i) {
        const double a = i < 20 ? 0.0 : (i - 19) * 0.08;
        p[3 * i] = i < 20 ? i * 0.1 : 1.9 + sin(a);
        p[3 * i + 1] = i < 20 ? 0.0 : 1.0 - cos(a);
        p[3 * i + 2] = 0.0;
    }
    s = make_stroke(p, 40, 3, 0.0);
    assert_false(ssk_stroke_is_straight(s));
    for (int i = 0; i <= 200; ++i) {
        ssk_stroke_frame(s, i / 200.0, f);
        check_orthonormal(f);
        assert_true(fabs(f[8]) > 1.0 - 1e-6); /* B along z: a planar stroke */
    }
    ssk_stroke_destroy(s);
}

/* The arc of length L starting at the origin along +x and bending toward
 * +y: radius R = 2L / pi (a quarter turn), center (0, R, 0). */
#define CHAIN_LENGTH 1.5
static void arc_point(double out[3], double s)
{
    const double R = 2.0 * CHAIN_LENGTH / PI_D, a = s / R;
    out[0] = R * sin(a);
    out[1] = R - R * cos(a);
    out[2] = 0.0;
}

static void make_line_and_arc(ssk_stroke **baseline, ssk_stroke **offset)
{
    enum { N = 300 };
    double b[3 * N], o[3 * N];
    for (int i = 0; i < N; ++i) {
        const double s = CHAIN_LENGTH * i / (N - 1.0);
        b[3 * i] = s;
        b[3 * i + 1] = b[3 * i + 2] = 0.0;
        arc_point(o + 3 * i, s);
    }
    *baseline = make_stroke(b, N, 3, 0.0);
    *offset = make_stroke(o, N, 3, 0.0);
}

/* 7.2 on a straight chain: joints on the baseline land on the arc at their
 * arc length; joints beside it (inside the radius) keep their distance,
 * rotated with the arc (the straight baseline borrows the arc's plane);
 * a joint outside the radius is unchanged. */
static void test_pose_joints_arc(void **state)
{
    (void)state;
    ssk_stroke *b, *o;
    make_line_and_arc(&b, &o);
    const double L = CHAIN_LENGTH, R = 2.0 * L / PI_D, side = 0.05 * L;
    enum { J = 33 };
    double joints[3 * J], posed[3 * J];
    uint8_t sel[J];
    for (int j = 0; j < 11; ++j) {
        const double x = L * j / 10.0;
        const double row[9] = {x, 0, 0, x, side, 0, x, -side, 0};
        memcpy(joints + 9 * j, row, sizeof row);
    }
    const double far[3 * 3] = {0.5 * L, 0.5 * L, 0, 2 * L, 0, 0, 0.3 * L, 0, 0.4 * L};
    ssk_error err = {0};
    assert_int_equal(ssk_pose_joints(posed, sel, joints, J, b, o, 0.1 * L, &err), SSK_OK);
    const double c[3] = {0, R, 0};
    for (int j = 0; j < 11; ++j) {
        const double x = L * j / 10.0;
        for (int k = 0; k < 3; ++k) {
            const double *q = posed + 9 * j + 3 * k;
            assert_int_equal(sel[3 * j + k], 1);
            const double radial = hypot(q[0] - c[0], q[1] - c[1]);
            /* +side is toward the center */
            const double want_r = k == 0 ? R : (k == 1 ? R - side : R + side);
            if (fabs(radial - want_r) > 1e-4 * L)
                fail_msg("joint %d.%d: %.9g from the center, want %.9g", j, k, radial, want_r);
            assert_true(fabs(q[2]) < 1e-9);
            if (k == 0) {
                double want[3];
                arc_point(want, x);
                for (int d = 0; d < 3; ++d) assert_true(fabs(q[d] - want[d]) < 1e-4 * L);
            }
        }
    }
    double fposed[9];
    uint8_t fsel[3];
    assert_int_equal(ssk_pose_joints(fposed, fsel, far, 3, b, o, 0.1 * L, &err), SSK_OK);
    for (int j = 0; j < 3; ++j) {
        assert_int_equal(fsel[j], 0);
        assert_memory_equal(fposed + 3 * j, far + 3 * j, 3 * sizeof(double));
    }
    assert_int_equal(ssk_pose_joints(fposed, NULL, far, 3, b, o, 0.0, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    ssk_stroke_destroy(b);
    ssk_stroke_destroy(o);
}

/* 7.2 on a rig: a 10-bone chain along +y (tu_make_limb) posed onto a
 * quarter arc in the plane z = 0: each bone keeps its length and points at
 * its tail's target, heads stay on the parent tails (connected), so every
 * joint lies within the chord error of the arc. */
static void test_pose_from_strokes_chain(void **state)
{
    (void)state;
    enum { B = 10 };
    const double L = CHAIN_LENGTH, R = 2.0 * L / PI_D;
    ssk_rig *rig = tu_make_limb(21, 8, B, (float)L, 0.1f, 0.1f, 2);
    /* the chain is along +y: strokes rotated x -> y (the arc bends to -x) */
    enum { N = 300 };
    double bp[3 * N], op[3 * N];
    for (int i = 0; i < N; ++i) {
        const double s = L * i / (N - 1.0);
        double a[3];
        arc_point(a, s);
        bp[3 * i] = 0.0, bp[3 * i + 1] = s, bp[3 * i + 2] = 0.0;
        op[3 * i] = -a[1], op[3 * i + 1] = a[0], op[3 * i + 2] = 0.0;
    }
    ssk_stroke *b = make_stroke(bp, N, 3, 0.0), *o = make_stroke(op, N, 3, 0.0);
    float skin[16 * B], posed[16 * B];
    for (int k = 0; k < B; ++k) tu_mat4_identity(skin + 16 * k);
    uint8_t sel[B];
    ssk_error err = {0};
    assert_int_equal(ssk_pose_from_strokes(posed, sel, rig, skin, b, o, 0.05 * L, &err), SSK_OK);
    const double c[3] = {-R, 0, 0};
    double prev_tail[3] = {0, 0, 0};
    for (int k = 0; k < B; ++k) {
        ssk_bone_view v;
        assert_int_equal(ssk_rig_bone(rig, (uint32_t)k, &v, &err), SSK_OK);
        assert_int_equal(sel[k], 3);
        float h[3], t[3];
        const float *m = posed + 16 * k;
        for (int r = 0; r < 3; ++r) {
            h[r] = m[4 * r] * v.head[0] + m[4 * r + 1] * v.head[1] + m[4 * r + 2] * v.head[2] + m[4 * r + 3];
            t[r] = m[4 * r] * v.tail[0] + m[4 * r + 1] * v.tail[1] + m[4 * r + 2] * v.tail[2] + m[4 * r + 3];
        }
        for (int r = 0; r < 3; ++r) assert_true(fabs(h[r] - prev_tail[r]) < 1e-5);
        const double len = hypot(hypot(t[0] - h[0], t[1] - h[1]), t[2] - h[2]);
        assert_true(fabs(len - L / B) < 1e-5);
        /* chord error: a bone of arc length L/B spanning angle a reaches
         * L/B - 2R sin(a/2) past its chord, accumulated along the chain */
        const double a = L / B / R, chord_gap = L / B - 2 * R * sin(a / 2);
        const double radial = hypot(t[0] - c[0], t[1] - c[1]);
        if (fabs(radial - R) > (k + 1) * chord_gap + 1e-5)
            fail_msg("bone %d tail %.9g from the center, R %.9g", k, radial, R);
        for (int r = 0; r < 3; ++r) prev_tail[r] = t[r];
        /* the last row stays (0, 0, 0, 1) */
        assert_true(m[12] == 0 && m[13] == 0 && m[14] == 0 && m[15] == 1);
    }
    /* the tip turned a quarter: its bone points along -x */
    const float *m = posed + 16 * (B - 1);
    assert_true(m[1] < -0.97); /* the bone's y axis maps to about -x */
    ssk_stroke_destroy(b);
    ssk_stroke_destroy(o);
    ssk_rig_destroy(rig);
}

/* The region of a surface stroke on the limb, against a breadth-first
 * search over the triangles' edges written here (the limb has no
 * coincident vertices, so the welded adjacency is the plain one). */
static void test_surface_roi_bfs(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(30, 12, 2, 2.0f, 0.2f, 0.1f, 2);
    ssk_mesh_view mv;
    ssk_error err = {0};
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, &err), SSK_OK);
    const uint32_t nv = mv.vertex_count;
    const uint32_t tris[] = {100, 101, 113, 125, 125, 126};
    const uint32_t n_tris = sizeof tris / sizeof tris[0];
    for (uint32_t grow = 0; grow <= 6; grow += 2) {
        uint8_t *roles = malloc(nv);
        uint32_t *kin = malloc(nv * sizeof *kin), kin_count = 0;
        assert_int_equal(ssk_rig_surface_roi(roles, kin, &kin_count, rig, tris, n_tris, grow, &err),
                         SSK_OK);
        /* reference: BFS over edges from the triangle list */
        int *dist = malloc(nv * sizeof *dist);
        uint32_t *queue = malloc(nv * sizeof *queue), head = 0, tail = 0;
        for (uint32_t v = 0; v < nv; ++v) dist[v] = -1;
        for (uint32_t i = 0; i < n_tris; ++i)
            for (int k = 0; k < 3; ++k) {
                const uint32_t v = (uint32_t)mv.triangles[3 * tris[i] + k];
                if (dist[v] < 0) dist[v] = 0, queue[tail++] = v;
            }
        while (head < tail) {
            const uint32_t v = queue[head++];
            for (uint32_t f = 0; f < mv.triangle_count; ++f) {
                const int32_t *t = mv.triangles + 3 * f;
                if (t[0] != (int32_t)v && t[1] != (int32_t)v && t[2] != (int32_t)v) continue;
                for (int k = 0; k < 3; ++k)
                    if (dist[t[k]] < 0) dist[t[k]] = dist[v] + 1, queue[tail++] = (uint32_t)t[k];
            }
        }
        uint32_t want_kin = 0;
        for (uint32_t v = 0; v < nv; ++v) {
            const int d = dist[v];
            const uint8_t want = d < 0 || d > (int)grow + 1 ? SSK_ROLE_FREE
                                 : d == 0                  ? SSK_ROLE_KINEMATIC
                                 : d <= (int)grow          ? SSK_ROLE_PASSIVE
                                                           : SSK_ROLE_STATIC;
            if (roles[v] != want) fail_msg("grow %u vertex %u: role %u, want %u", grow, v, roles[v], want);
            if (d == 0) assert_int_equal(kin[want_kin++], v);
        }
        assert_int_equal(kin_count, want_kin);
        free(roles), free(kin), free(dist), free(queue);
    }
    uint8_t roles[1];
    const uint32_t bad[] = {1000000};
    assert_int_equal(ssk_rig_surface_roi(roles, NULL, NULL, rig, bad, 1, 4, &err),
                     SSK_ERROR_TRIANGLE_INDEX);
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rdp_known),
        cmocka_unit_test(test_stroke_errors),
        cmocka_unit_test(test_bezier_knots_tangents),
        cmocka_unit_test(test_circle),
        cmocka_unit_test(test_frames_straight),
        cmocka_unit_test(test_pose_joints_arc),
        cmocka_unit_test(test_pose_from_strokes_chain),
        cmocka_unit_test(test_surface_roi_bfs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
