/*
 * test_spring_quality.c — what the spring deformer does to a bent and a
 * twisted limb, against LBS (Toothman 2020, 4.2.1, Fig. 19: springs
 * "avoid collapse and diffuse the twist across the mesh length"; for swing
 * rotations the result is "relatively consistent regardless of initial
 * skinning choice"), and that it behaves on a real character.
 *
 * The limb: tu_make_limb, 60 rings x 16 segments, length 2 (two bones of
 * length 1 along +Y, joint J = (0, 1, 0)), radius 0.25, weights blended
 * over half a bone length around the joint, K = 4; bound with
 * ssk_binding_create's defaults. The caps' center vertices have degree
 * 16 (= segments), every other vertex 6. The neighbor forces are means over
 * the one ring (k(i, j) = k / deg(i), core/kernels/spring.c), so the default
 * k_s 6, k_l 18, k_t 18 act on the degree-6 vertices (the whole joint
 * region) as 1, 3, 3 per edge did in the per-edge formulation: the
 * equilibrium measures below are those of that formulation to the 3
 * decimals printed (spring eq bend 90 / 135: section 0.958 / 0.912,
 * volume 0.971 / 0.935; twist 90 / 180: section 0.959 / 1.038, volume
 * 0.971 / 1.029); only the caps, far from the joint, see weaker pulls
 * from their 16 neighbors. Poses:
 * the child bent about Z through J by 90 and 135 degrees, or twisted about
 * Y by 90 and 180 degrees. First stage: rigid attachment skinning
 * (ssk_rigid_deform); LBS through an ssk_deformer on the CPU.
 *
 * Model: this file reproduces the paper's claims with the paper's model:
 * the binding's attachment points as anchors (ssk_spring_params.attachment
 * BINDING) and no detail force (k_d 0); the defaults (weights anchors,
 * the detail force, an IRS first stage) are measured on real characters
 * by bench/real_quality.py (tests/python/test_real_quality.py,
 * tests/blender/test_real_quality.py) and on this limb by
 * test_default_springs below.
 *
 * Spring runs, all with ssk_spring_params_default except where said:
 * - "spring 50": the defaults as they are (50 iterations at most);
 * - "spring eq": max_iterations 20000 ("iterations as needed"), so the
 *   default displacement threshold (AABB_min x 1e-4 = 5e-5) is met;
 * - "spring lbs": as "spring eq" from the LBS first stage, threshold 1e-6
 *   (and the rigid start again with 1e-6 for the comparison), Fig. 19b.
 *
 * Measures (quality.h): volume of the closed mesh over rest, both signed
 * (q_volume, the integral of the winding number: a skin that passes
 * through itself on the inner side of a bend counts the overlap twice)
 * and enclosed (q_enclosed_volume: the overlap counted once); the smallest
 * ring area over rest among the joint rings (rest |y - 1| <= 0.25); the
 * largest twist increment: the angle of each ring's first vertex about Y
 * relative to rest, differenced between consecutive rings (radians);
 * largest edge stretch.
 *
 * Claims checked (and where they do not hold, what does):
 * - the springs keep the smallest joint cross-section >= 90% of rest in
 *   every pose where LBS loses more than 20% of it (all four);
 * - volume within 5% of rest for the 90 degree bend and both twists, by
 *   both measures; at 135 degrees the claim does NOT hold: signed 0.935,
 *   enclosed 0.893 (LBS 0.932 / 0.866; rigid 0.985 / 0.885, its inner
 *   side passing through itself; DQS 0.998 / 0.957, bulging past the rest
 *   radius). It cannot hold for a skin that neither bulges nor passes
 *   through itself: the union of the two bones' tubes and the joint's ball
 *   is 0.940 of rest at 135 degrees (0.995 at 90; tube_union_ratio, a grid
 *   count), and no spring force pushes the skin past the rest radius (F_l
 *   keeps differences of |s|, not |s|). A default-stiffness sweep (k_s
 *   0-40, k_l 2-54, k_t 6-48, k_b 0-2; the largest diverge) reaches signed
 *   0.961 with k_s 1, k_t 24, k_b 0.5, but enclosed only 0.914: the gain
 *   is mostly more interpenetration, so the defaults were kept. Asserted: the springs keep
 *   more than LBS by both measures, enclosed >= 0.88 and <= the union;
 * - the twist spreads: the largest per-ring twist increment is below
 *   LBS's, both after 50 iterations and at equilibrium;
 * - rigid and LBS first stages converge to the same shape (within 1% of
 *   the bounding-box diagonal) in all four poses: measured 2.8e-6, 1.5e-6,
 *   9.6e-7 and 1.1e-4 (twist 180, where LBS starts from a section
 *   collapsed to 0.0002 of rest) of it;
 * - convergence: the claim "converges within 50 iterations with the
 *   defaults" does NOT hold from a rigid first stage: the explicit update
 *   with dt k bounded by stability moves a discontinuity of a tenth of
 *   the radius down to 5e-5 per iteration in 208 / 245 (bends 90 / 135)
 *   and 1842 / 3444 (twists 90 / 180: the skin turning about the bones is
 *   resisted by no force, a slow mode) iterations. What is asserted: every
 *   pose converges with more iterations, bends within 400 and twists
 *   within 6000; after the default 50 none has converged, the rigid tear
 *   is closed (largest edge stretch at most 30% of rigid's) and the joint
 *   section is above LBS's, but the bends are still 11-18% of the radius
 *   away from their equilibrium (the twists 57% and 128%).
 * - on BCN_Epileptic.X (open meshes: 374, 340 and 172 boundary edges, so
 *   no volume; no rings, so no cross-section) the collapse the joint
 *   section stands for on the limb is measured as the smallest
 *   |v_i - a'_i| / |s_i| (4.2: LBS "may collapse a vertex onto the
 *   skeleton"): LBS 0.37-0.65 at 5 of 8 frames, the springs 0.89-0.96
 *   there (frame 30: 0.890, the one below 0.9), never below LBS;
 * - on BCN_Epileptic.X, rigid and LBS first stages relaxed to a 1e-6
 *   threshold through deformer graphs: within 1% of the diagonal at 5 of
 *   8 frames (0 to 0.85%), NOT at frames 30, 40, 60 (2.4%, 1.4%, 1.2%: a
 *   few Head and Torso vertices settle in different local equilibria; a
 *   rigid fit of each mesh leaves the difference, so it is not a free
 *   rotation of a mesh about its bone); asserted: at least 5 frames
 *   within 1%, all within 3%;
 * - on BCN_Epileptic.X (assimp test models, 3 meshes, 54 bones), 8
 *   animation frames with the defaults: finite, no divergence, displacement
 *   from the rigid first stage below 10% of the bounding-box diagonal; no
 *   posed frame converges within the default 50 iterations, every frame
 *   converges with more (measured 201 to 811 iterations; asserted within
 *   3000).
 */
#include "testutil.h"
#include "limb.h" /* bench/limb.c: the benchmarks' 8-bone limb (test_multilevel_bench_limb) */
#include "quality.h"

#include "kernels/spring.h" /* the springs' own anchors (test_bcn_epileptic) */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI_D 3.14159265358979323846
#define RINGS 60u
#define SEGMENTS 16u
#define LENGTH 2.0f
#define RADIUS 0.25f
#define BLEND 0.5f
#define JOINT_HALF_WIDTH 0.25
#define EQ_ITERATIONS 20000u

enum { M_RIGID, M_LBS, M_DQS, M_SPRING50, M_SPRING_EQ, M_CHEB50, M_CHEB_EQ, M_COUNT };
static const char *const method_label[M_COUNT] = {"rigid",     "lbs",      "dqs",     "spring 50",
                                                  "spring eq", "cheby 50", "cheby eq"};
/* chebyshev_rho of the accelerated rows */
#define CHEB_RHO 0.99f
enum { P_REST, P_BEND90, P_BEND135, P_TWIST90, P_TWIST180, P_COUNT };
static const char *const pose_label[P_COUNT] = {"rest", "bend 90", "bend 135", "twist 90",
                                                "twist 180"};
enum { Q_VOLUME, Q_ENCLOSED, Q_SECTION, Q_TWIST, Q_STRETCH, Q_ITERATIONS, Q_CONVERGED, Q_COUNT };
static const char *const measure_label[Q_COUNT] = {"volume", "enclosed", "min section",
                                                   "max twist inc", "max stretch", "iterations",
                                                   "converged"};
/* grid of Z columns for q_enclosed_volume */
#define ENCLOSED_GRID 96u

static double table[M_COUNT][P_COUNT][Q_COUNT];
static double consistency[P_COUNT];  /* rigid vs LBS start, fraction of the diagonal */
static double eq_distance[P_COUNT]; /* spring 50 vs spring eq, fraction of the radius */
/* accelerated vs plain, both to the 1e-6 threshold, fraction of the diagonal */
static double cheb_distance[P_COUNT];
static double cheb50_distance[P_COUNT]; /* cheby 50 vs the 1e-6 equilibrium / radius */
static double plain50_distance[P_COUNT]; /* spring 50 vs the 1e-6 equilibrium / radius */

static void pose_matrices(float skin[32], int pose)
{
    static const float Y[3] = {0, 1, 0}, Z[3] = {0, 0, 1}, J[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    switch (pose) {
    case P_REST: tu_mat4_identity(skin + 16); break;
    case P_BEND90: tu_mat4_rotation(skin + 16, Z, (float)(PI_D / 2), J); break;
    case P_BEND135: tu_mat4_rotation(skin + 16, Z, (float)(3 * PI_D / 4), J); break;
    case P_TWIST90: tu_mat4_rotation(skin + 16, Y, (float)(PI_D / 2), J); break;
    default: tu_mat4_rotation(skin + 16, Y, (float)PI_D, J); break;
    }
}

static double point_distance(const float *a, const float *b)
{
    const double x = (double)a[0] - b[0], y = (double)a[1] - b[1], z = (double)a[2] - b[2];
    return sqrt(x * x + y * y + z * z);
}

static double wrap(double a)
{
    while (a > PI_D) a -= 2 * PI_D;
    while (a < -PI_D) a += 2 * PI_D;
    return a;
}

static void measure(double out[Q_COUNT], const ssk_mesh_view *mv, const float *def)
{
    const float *rest = mv->positions;
    out[Q_VOLUME] = q_volume(def, mv->triangles, mv->triangle_count) /
                    q_volume(rest, mv->triangles, mv->triangle_count);
    out[Q_ENCLOSED] =
        q_enclosed_volume(def, mv->triangles, mv->triangle_count, mv->vertex_count,
                          ENCLOSED_GRID) /
        q_volume(rest, mv->triangles, mv->triangle_count);
    double section = INFINITY, twist = 0.0, prev = 0.0;
    for (uint32_t r = 0; r < RINGS; ++r) {
        const uint32_t first = r * SEGMENTS;
        const float *p = def + 3 * first, *q = rest + 3 * first;
        const double a = wrap(atan2(p[2], p[0]) - atan2(q[2], q[0]));
        if (r > 0) twist = fmax(twist, fabs(wrap(a - prev)));
        prev = a;
        if (fabs(rest[3 * first + 1] - 1.0) > JOINT_HALF_WIDTH) continue;
        const double ratio = q_polygon_area(def + 3 * first, SEGMENTS) /
                             q_polygon_area(rest + 3 * first, SEGMENTS);
        section = fmin(section, ratio);
    }
    out[Q_SECTION] = section;
    out[Q_TWIST] = twist;
    out[Q_STRETCH] = q_max_edge_stretch(rest, def, mv->triangles, mv->triangle_count);
}

static ssk_spring *spring_rho(const ssk_rig *rig, const ssk_binding *b, uint32_t iterations,
                              float threshold, float rho)
{
    ssk_spring_params p;
    ssk_spring_params_default(&p);
    p.attachment = SSK_ATTACHMENT_BINDING; /* the paper's model (file comment) */
    p.stiffness[SSK_FORCE_DETAIL] = 0.0f;
    p.max_iterations = iterations ? iterations : 50; /* the paper's 50 */
    p.threshold = threshold;
    p.chebyshev_rho = rho;
    p.multilevel = 0; /* the paper's solver, or Chebyshev alone */
    p.convergence = SSK_CONVERGE_DISPLACEMENT; /* and its rule (4.2.2) */
    ssk_spring *sp = NULL;
    ssk_error err = {0};
    if (ssk_spring_create(&sp, rig, b, &p, NULL, 0, &err) != SSK_OK)
        fail_msg("ssk_spring_create: %s", err.message);
    return sp;
}

static ssk_spring *spring_with(const ssk_rig *rig, const ssk_binding *b, uint32_t iterations,
                               float threshold)
{
    return spring_rho(rig, b, iterations, threshold, 0.0f);
}

static ssk_spring_report solve(ssk_spring *sp, float *pos, const ssk_attach_bone *bones,
                               const float *skin)
{
    ssk_spring_report rep;
    ssk_error err = {0};
    if (ssk_spring_solve(sp, pos, bones, skin, 0, &rep, &err) != SSK_OK)
        fail_msg("ssk_spring_solve: %s", err.message);
    return rep;
}

static int group_setup(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(RINGS, SEGMENTS, 2, LENGTH, RADIUS, BLEND, 4);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    const uint32_t nv = mv.vertex_count;
    const size_t n3 = 3 * (size_t)nv;
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    ssk_binding *binding = NULL;
    ssk_error err = {0};
    if (ssk_binding_create(&binding, rig, &bp, &err) != SSK_OK)
        fail_msg("ssk_binding_create: %s", err.message);
    ssk_binding_view bv;
    assert_int_equal(ssk_binding_get(binding, &bv, NULL), SSK_OK);
    ssk_spring *s50 = spring_with(rig, binding, 0, 0.0f);
    ssk_spring *seq = spring_with(rig, binding, EQ_ITERATIONS, 0.0f);
    ssk_spring *sfine = spring_with(rig, binding, EQ_ITERATIONS, 1e-6f);
    ssk_spring *c50 = spring_rho(rig, binding, 0, 0.0f, CHEB_RHO);
    ssk_spring *ceq = spring_rho(rig, binding, EQ_ITERATIONS, 0.0f, CHEB_RHO);
    ssk_spring *cfine = spring_rho(rig, binding, EQ_ITERATIONS, 1e-6f, CHEB_RHO);
    float *c50pos = malloc(n3 * sizeof(float)), *cpos = malloc(n3 * sizeof(float));
    float *first = malloc(n3 * sizeof(float)), *def = malloc(n3 * sizeof(float));
    float *lbs = malloc(n3 * sizeof(float)), *eq = malloc(n3 * sizeof(float));
    float skin[32];
    ssk_attach_bone ab[2];
    for (int p = 0; p < P_COUNT; ++p) {
        pose_matrices(skin, p);
        if (ssk_attach_prepare(ab, rig, skin, NULL, &err) != SSK_OK)
            fail_msg("ssk_attach_prepare: %s", err.message);
        ssk_rigid_deform(first, nv, bv.bones, bv.t, bv.scale_vectors, ab);
        measure(table[M_RIGID][p], &mv, first);
        tu_deform(lbs, rig, SSK_METHOD_LBS, skin);
        measure(table[M_LBS][p], &mv, lbs);
        tu_deform(def, rig, SSK_METHOD_DQS, skin);
        measure(table[M_DQS][p], &mv, def);
        memcpy(def, first, n3 * sizeof(float));
        ssk_spring_report r = solve(s50, def, ab, skin);
        measure(table[M_SPRING50][p], &mv, def);
        table[M_SPRING50][p][Q_ITERATIONS] = r.iterations;
        table[M_SPRING50][p][Q_CONVERGED] = r.converged;
        memcpy(eq, first, n3 * sizeof(float));
        r = solve(seq, eq, ab, skin);
        measure(table[M_SPRING_EQ][p], &mv, eq);
        table[M_SPRING_EQ][p][Q_ITERATIONS] = r.iterations;
        table[M_SPRING_EQ][p][Q_CONVERGED] = r.converged;
        double worst = 0.0;
        for (uint32_t i = 0; i < nv; ++i) {
            worst = fmax(worst, point_distance(def + 3 * i, eq + 3 * i));
        }
        eq_distance[p] = worst / RADIUS;
        /* the same with the Chebyshev acceleration */
        memcpy(c50pos, first, n3 * sizeof(float));
        r = solve(c50, c50pos, ab, skin);
        measure(table[M_CHEB50][p], &mv, c50pos);
        table[M_CHEB50][p][Q_ITERATIONS] = r.iterations;
        table[M_CHEB50][p][Q_CONVERGED] = r.converged;
        memcpy(cpos, first, n3 * sizeof(float));
        r = solve(ceq, cpos, ab, skin);
        measure(table[M_CHEB_EQ][p], &mv, cpos);
        table[M_CHEB_EQ][p][Q_ITERATIONS] = r.iterations;
        table[M_CHEB_EQ][p][Q_CONVERGED] = r.converged;
        /* Fig. 19b: rigid and LBS first stages, run to a fine threshold */
        memcpy(eq, def, n3 * sizeof(float)); /* spring 50 */
        memcpy(def, first, n3 * sizeof(float));
        solve(sfine, def, ab, skin);
        solve(sfine, lbs, ab, skin);
        consistency[p] = tu_max_abs_diff(def, lbs, n3) / tu_bbox_diagonal(def, nv);
        memcpy(cpos, first, n3 * sizeof(float));
        solve(cfine, cpos, ab, skin);
        cheb_distance[p] = tu_max_abs_diff(def, cpos, n3) / tu_bbox_diagonal(def, nv);
        double w50 = 0.0, p50 = 0.0;
        for (uint32_t i = 0; i < nv; ++i) {
            w50 = fmax(w50, point_distance(c50pos + 3 * i, def + 3 * i));
            p50 = fmax(p50, point_distance(eq + 3 * i, def + 3 * i));
        }
        cheb50_distance[p] = w50 / RADIUS;
        plain50_distance[p] = p50 / RADIUS;
    }
    printf("\nSpring deformer quality, 2-bone limb %ux%u, r = %.2f (ratios to rest; twist in "
           "radians per ring)\n",
           RINGS, SEGMENTS, (double)RADIUS);
    printf("%-10s %-10s", "method", "pose");
    for (int q = 0; q < Q_COUNT; ++q) printf(" %13s", measure_label[q]);
    printf("\n");
    for (int m = 0; m < M_COUNT; ++m)
        for (int p = 0; p < P_COUNT; ++p) {
            printf("%-10s %-10s", method_label[m], pose_label[p]);
            for (int q = 0; q < Q_COUNT; ++q) {
                if (q >= Q_ITERATIONS && m < M_SPRING50)
                    printf(" %13s", "-");
                else
                    printf(" %13.4f", table[m][p][q]);
            }
            printf("\n");
        }
    printf("rigid vs LBS first stage after the springs (threshold 1e-6), max |difference| / "
           "diagonal:");
    for (int p = P_BEND90; p < P_COUNT; ++p) printf(" %s %.2e", pose_label[p], consistency[p]);
    printf("\nspring 50 vs spring eq, max |difference| / radius:");
    for (int p = P_BEND90; p < P_COUNT; ++p) printf(" %s %.3f", pose_label[p], eq_distance[p]);
    printf("\nChebyshev (rho %.2f) vs plain, both to 1e-6, max |difference| / diagonal:",
           (double)CHEB_RHO);
    for (int p = P_BEND90; p < P_COUNT; ++p) printf(" %s %.2e", pose_label[p], cheb_distance[p]);
    printf("\nafter 50 iterations, max distance to the 1e-6 equilibrium / radius, plain / "
           "Chebyshev:");
    for (int p = P_BEND90; p < P_COUNT; ++p)
        printf(" %s %.3f / %.3f", pose_label[p], plain50_distance[p], cheb50_distance[p]);
    printf("\n");
    fflush(stdout);
    free(first);
    free(def);
    free(lbs);
    free(eq);
    ssk_spring_destroy(s50);
    ssk_spring_destroy(seq);
    ssk_spring_destroy(sfine);
    ssk_spring_destroy(c50);
    ssk_spring_destroy(ceq);
    ssk_spring_destroy(cfine);
    free(c50pos);
    free(cpos);
    ssk_binding_destroy(binding);
    ssk_rig_destroy(rig);
    return 0;
}

/* At rest every method gives the rest mesh, and the springs stop at once. */
static void test_rest(void **state)
{
    (void)state;
    for (int m = 0; m < M_COUNT; ++m) {
        assert_true(fabs(table[m][P_REST][Q_VOLUME] - 1.0) < 1e-5);
        assert_true(fabs(table[m][P_REST][Q_SECTION] - 1.0) < 1e-5);
        assert_true(table[m][P_REST][Q_TWIST] < 1e-5);
    }
    assert_int_equal((int)table[M_SPRING50][P_REST][Q_ITERATIONS], 1);
    assert_true(table[M_SPRING50][P_REST][Q_CONVERGED]);
}

/* Where LBS loses more than 20% of the joint cross-section, the springs
 * keep at least 90% of it. */
static void test_springs_keep_cross_section(void **state)
{
    (void)state;
    for (int p = P_BEND90; p < P_COUNT; ++p) {
        assert_true(table[M_LBS][p][Q_SECTION] < 0.8); /* all four poses */
        if (!(table[M_SPRING_EQ][p][Q_SECTION] >= 0.9))
            fail_msg("%s: spring section %.3f", pose_label[p], table[M_SPRING_EQ][p][Q_SECTION]);
    }
}

/* The largest volume a skin can enclose at a bend without passing through
 * itself or moving farther than the rest radius from the skeleton: the
 * union of the two bones' tubes (radius RADIUS, flat ends) and the ball at
 * the joint, over the rest volume 2 pi r^2, counted on a grid of cell
 * RADIUS / 25 (the analytic reference for the 135-degree claim). */
static double tube_union_ratio(double bend)
{
    const double r = RADIUS, h = r / 25.0, c = cos(bend), sn = sin(bend);
    /* child direction: +Y rotated about Z by `bend` */
    const double dx = -sn, dy = c;
    uint64_t inside = 0;
    const int n = (int)(2.6 / h);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            for (int k = 0; k < (int)(2 * r / h); ++k) {
                const double x = -1.3 + (i + 0.5) * h, y = -0.3 + (j + 0.5) * h,
                             z = -r + (k + 0.5) * h;
                /* parent: the segment (0,0,0)-(0,1,0) */
                int in = y >= 0.0 && y <= 1.0 && x * x + z * z <= r * r;
                /* child: J + t (dx, dy, 0), t in [0, 1] */
                const double px = x, py = y - 1.0;
                const double t = px * dx + py * dy;
                const double qx = px - t * dx, qy = py - t * dy;
                in |= t >= 0.0 && t <= 1.0 && qx * qx + qy * qy + z * z <= r * r;
                in |= px * px + py * py + z * z <= r * r; /* the joint's ball */
                inside += (uint64_t)in;
            }
    return (double)inside * h * h * h / (2.0 * PI_D * r * r);
}

/* Volume, both measures (header): the signed volume the issue names and
 * the enclosed volume, which counts an interpenetrating inner side once. */
static void test_springs_keep_volume(void **state)
{
    (void)state;
    const int within5[3] = {P_BEND90, P_TWIST90, P_TWIST180};
    for (int k = 0; k < 3; ++k) {
        const double v = table[M_SPRING_EQ][within5[k]][Q_VOLUME];
        const double e = table[M_SPRING_EQ][within5[k]][Q_ENCLOSED];
        if (!(fabs(v - 1.0) <= 0.05 && fabs(e - 1.0) <= 0.05))
            fail_msg("%s: volume %.4f, enclosed %.4f", pose_label[within5[k]], v, e);
    }
    /* 135 degrees: the claim does not hold (signed 0.935, enclosed 0.893;
     * the header says why); asserted: the springs keep more than LBS by
     * both measures and lose at most 12% of the enclosed volume */
    const double v135 = table[M_SPRING_EQ][P_BEND135][Q_VOLUME];
    const double e135 = table[M_SPRING_EQ][P_BEND135][Q_ENCLOSED];
    assert_true(v135 >= table[M_LBS][P_BEND135][Q_VOLUME]);
    assert_true(e135 >= table[M_LBS][P_BEND135][Q_ENCLOSED]);
    assert_true(e135 >= 0.88);
    /* the reference: no skin that stays within the rest radius of the
     * bones and does not pass through itself keeps 95% at 135 degrees */
    const double u90 = tube_union_ratio(PI_D / 2), u135 = tube_union_ratio(3 * PI_D / 4);
    printf("union of the bones' tubes over rest: bend 90 %.3f, bend 135 %.3f\n", u90, u135);
    fflush(stdout);
    assert_true(fabs(tube_union_ratio(0.0) - 1.0) < 0.01); /* the grid counts right */
    assert_true(u135 < 0.95);
    assert_true(e135 <= u135 + 0.01);
    /* the enclosed measure agrees with the signed one where nothing
     * interpenetrates (the rest mesh: 1 within the grid's sampling) */
    for (int m = 0; m < M_COUNT; ++m) assert_true(fabs(table[m][P_REST][Q_ENCLOSED] - 1.0) < 1e-3);
}

/* The twist spreads along the limb instead of concentrating at the joint. */
static void test_twist_spreads(void **state)
{
    (void)state;
    for (int p = P_TWIST90; p <= P_TWIST180; ++p) {
        assert_true(table[M_SPRING50][p][Q_TWIST] < table[M_LBS][p][Q_TWIST]);
        assert_true(table[M_SPRING_EQ][p][Q_TWIST] < table[M_LBS][p][Q_TWIST]);
        assert_true(table[M_SPRING_EQ][p][Q_TWIST] < 0.1); /* under 6 degrees per ring */
    }
}

/* Fig. 19b: the equilibrium does not depend on the first stage (the
 * dissertation says so of swing rotations; it holds here for the twists
 * too). */
static void test_first_stage_independent(void **state)
{
    (void)state;
    for (int p = P_BEND90; p < P_COUNT; ++p)
        if (!(consistency[p] < 0.01))
            fail_msg("%s: %.4f of the diagonal", pose_label[p], consistency[p]);
}

/* Convergence with the default parameters (see the header comment: not
 * within 50 iterations). */
static void test_convergence(void **state)
{
    (void)state;
    for (int p = P_BEND90; p < P_COUNT; ++p) {
        assert_true(table[M_SPRING_EQ][p][Q_CONVERGED]);
        const double limit = p <= P_BEND135 ? 400 : 6000;
        if (!(table[M_SPRING_EQ][p][Q_ITERATIONS] <= limit))
            fail_msg("%s: %g iterations", pose_label[p], table[M_SPRING_EQ][p][Q_ITERATIONS]);
        assert_int_equal((int)table[M_SPRING50][p][Q_ITERATIONS], 50);
        assert_false(table[M_SPRING50][p][Q_CONVERGED]); /* the claim does not hold */
    }
    /* What the default 50 iterations give: the rigid tear closed (largest
     * edge stretch down to at most 30% of rigid's), and a joint at least
     * as full as LBS's */
    for (int p = P_BEND90; p < P_COUNT; ++p) {
        assert_true(table[M_SPRING50][p][Q_STRETCH] < 0.3 * table[M_RIGID][p][Q_STRETCH]);
        assert_true(table[M_SPRING50][p][Q_SECTION] > table[M_LBS][p][Q_SECTION]);
    }
}

/* Collapse onto the skeleton (Toothman 2020, 4.2: LBS "may collapse a
 * vertex onto the skeleton, |s_i| = 0"): the smallest |v_i - a'_i| / |s_i|
 * over the vertices, a'_i = head + t_i (tail - head) the posed attachment
 * point, s_i the bind scale vector; vertices with |s_i| below 1% of `diag`
 * (on the skeleton at rest) are skipped. pos: rig space. */
static double min_scale_ratio(const float *pos, const ssk_binding_view *bv,
                              const ssk_attach_bone *ab, uint32_t nv, double diag)
{
    double worst = INFINITY;
    for (uint32_t i = 0; i < nv; ++i) {
        const float *s = bv->scale_vectors + 3 * (size_t)i;
        const double rest = sqrt((double)s[0] * s[0] + (double)s[1] * s[1] + (double)s[2] * s[2]);
        if (rest < 0.01 * diag) continue;
        const ssk_attach_bone *b = &ab[bv->bones[i]];
        const double t = bv->t[i];
        double d2 = 0.0;
        for (int c = 0; c < 3; ++c) {
            const double a = b->head[c] + t * ((double)b->tail[c] - b->head[c]);
            d2 += (pos[3 * i + c] - a) * (pos[3 * i + c] - a);
        }
        worst = fmin(worst, sqrt(d2) / rest);
    }
    return worst;
}

/* Whole-rig object-space rows (ssk_deformer output with the rest object
 * matrices) to rig space, in place. */
static void object_to_rig(float *pos, const ssk_rig *rig)
{
    for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
        ssk_mesh_view mv;
        assert_int_equal(ssk_rig_mesh(rig, m, &mv, NULL), SSK_OK);
        const float *M = mv.object_matrix;
        for (uint32_t k = 0; k < mv.vertex_count; ++k) {
            float *p = pos + 3 * ((size_t)mv.first_vertex + k);
            const float x = p[0], y = p[1], z = p[2];
            for (int r = 0; r < 3; ++r)
                p[r] = M[4 * r] * x + M[4 * r + 1] * y + M[4 * r + 2] * z + M[4 * r + 3];
        }
    }
}

/* BCN_Epileptic.X imported and bound with the default parameters, and the
 * frame count of its animation at 24 fps. */
typedef struct bcn_fixture {
    ssk_scene *scene;
    const ssk_rig *rig;
    ssk_binding *binding;
    uint32_t frames;
} bcn_fixture;

static bcn_fixture bcn_open(void)
{
    bcn_fixture b = {0};
    ssk_error err = {0};
    if (ssk_scene_import(&b.scene, SSK_MODELS_DIR "/X/BCN_Epileptic.X", &err) != SSK_OK)
        fail_msg("import: %s", err.message);
    b.rig = ssk_scene_rig(b.scene);
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    if (ssk_binding_create(&b.binding, b.rig, &bp, &err) != SSK_OK)
        fail_msg("bind: %s", err.message);
    ssk_animation_info info;
    assert_int_equal(ssk_scene_animation(b.scene, 0, &info, NULL), SSK_OK);
    b.frames = ssk_animation_frame_count(&info, 24.0);
    assert_true(b.frames >= 8);
    return b;
}

static void bcn_close(bcn_fixture *b)
{
    ssk_binding_destroy(b->binding);
    ssk_scene_destroy(b->scene);
}

/* A real character: BCN_Epileptic.X, frames of its animation. */
static void test_bcn_epileptic(void **state)
{
    (void)state;
    bcn_fixture bf = bcn_open();
    ssk_scene *scene = bf.scene;
    const ssk_rig *rig = bf.rig;
    ssk_binding *binding = bf.binding;
    const uint32_t frames = bf.frames;
    ssk_error err = {0};
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    const size_t n3 = 3 * (size_t)nv;
    ssk_binding_view bv;
    assert_int_equal(ssk_binding_get(binding, &bv, NULL), SSK_OK);
    ssk_spring *s50 = spring_with(rig, binding, 0, 0.0f);
    ssk_spring *slong = spring_with(rig, binding, 3000, 0.0f);
    float *skin = malloc(16 * (size_t)nb * sizeof(float));
    ssk_attach_bone *ab = malloc(nb * sizeof *ab);
    float *first = malloc(n3 * sizeof(float)), *pos = malloc(n3 * sizeof(float));
    printf("BCN_Epileptic.X (%u vertices, %u bones): frame, iterations / converged (defaults), "
           "max displacement from the first stage / diagonal, iterations with 3000 allowed\n",
           nv, nb);
    for (uint32_t k = 0; k < 8; ++k) {
        const uint32_t frame = k * (frames / 8);
        if (ssk_scene_sample(scene, 0, frame / 24.0, skin, NULL, &err) != SSK_OK)
            fail_msg("sample: %s", err.message);
        if (ssk_attach_prepare(ab, rig, skin, NULL, &err) != SSK_OK)
            fail_msg("prepare: %s", err.message);
        ssk_rigid_deform(first, nv, bv.bones, bv.t, bv.scale_vectors, ab);
        const double diag = tu_bbox_diagonal(first, nv);
        memcpy(pos, first, n3 * sizeof(float));
        const ssk_spring_report r = solve(s50, pos, ab, skin);
        double moved = 0.0;
        for (size_t i = 0; i < n3; ++i) assert_true(isfinite(pos[i]));
        for (uint32_t i = 0; i < nv; ++i) {
            moved = fmax(moved, point_distance(pos + 3 * i, first + 3 * i));
        }
        assert_true(moved < 0.1 * diag);
        assert_true(r.iterations <= 50);
        const double ratio50 = min_scale_ratio(pos, &bv, ab, nv, diag);
        memcpy(pos, first, n3 * sizeof(float));
        const ssk_spring_report rl = solve(slong, pos, ab, skin);
        assert_true(rl.converged);
        const double ratio_eq = min_scale_ratio(pos, &bv, ab, nv, diag);
        tu_deform(pos, rig, SSK_METHOD_LBS, skin);
        object_to_rig(pos, rig);
        const double ratio_lbs = min_scale_ratio(pos, &bv, ab, nv, diag);
        /* the defaults (--method spring: IRS first stage, detail force,
         * Chebyshev solver), issue #16: no collapse, ratio >= 0.8 */
        tu_deform(pos, rig, SSK_METHOD_IRS, skin);
        object_to_rig(pos, rig);
        const double ratio_irs = min_scale_ratio(pos, &bv, ab, nv, diag);
        tu_deform(pos, rig, SSK_METHOD_SPRING, skin);
        object_to_rig(pos, rig);
        const double ratio_def = min_scale_ratio(pos, &bv, ab, nv, diag);
        printf("    (IRS alone %.3f)\n", ratio_irs);
        printf("  frame %3u: %2u / %d, %.4f, %u; smallest |v - a'| / |s|: LBS %.3f, springs 50 "
               "%.3f, converged %.3f, defaults %.3f\n",
               frame, r.iterations, r.converged, moved / diag, rl.iterations, ratio_lbs, ratio50,
               ratio_eq, ratio_def);
        /* The defaults follow their IRS first stage (the detail force
         * keeps its shape): by this measure, against the binding's one
         * attachment point, IRS with the attachment per skin weight reaches
         * 0.51 at frame 40 and the default springs 0.49, so issue #16's
         * bar of 0.8 is NOT met by the defaults (the paper's model keeps
         * 0.91); asserted: never below LBS, and within 0.05 of IRS */
        assert_true(ratio_def >= ratio_lbs - 1e-6);
        assert_true(ratio_def >= ratio_irs - 0.05);
        /* the springs never collapse more than LBS; where LBS loses more
         * than 20% the springs keep at least 85% (measured 0.890-0.964) */
        assert_true(ratio_eq >= ratio_lbs - 1e-6 && ratio50 >= ratio_lbs - 1e-6);
        if (ratio_lbs < 0.8) assert_true(ratio_eq >= 0.85 && ratio50 >= 0.85);
    }
    /* Issue #16's collapse bar, smallest |v - a'| / |s| >= 0.8, on every
     * frame of the defaults (--method spring), with a' the anchor the
     * default springs use (spring.c "Anchors": the weighted mean of the
     * skin-weight bones' attachment points) and |s| its rest distance.
     * Measured: 0.801 at frame 64 at the default stop (0.804 solved to
     * 1e-6): the bar holds with little margin; IRS, the first stage,
     * 0.710. Against the binding's one attachment point (above) the same
     * skin reads 0.49, which the detail force inherits from IRS's 0.51.
     * Asserted: the springs never come closer to their anchors than IRS,
     * and meet the bar. (A one-sided collapse spring, k (0.9 |s0| - |s|)
     * along s, tried in session 7: 0.854 here at k 100, but on the Rigify
     * body's bent joints, where the weighted anchor itself falls inside
     * the bend, it pushed crease vertices at 0.29 of rest against the
     * detail force and frame 9 no longer converged within 100 passes;
     * not kept.) */
    ssk_deformer_desc dd = {.method = SSK_METHOD_SPRING, .backend = SSK_BACKEND_CPU,
                            .binding = binding};
    ssk_deformer *def = NULL;
    assert_int_equal(ssk_deformer_create(&def, rig, &dd, &err), SSK_OK);
    ssk_deformer_desc di = {.method = SSK_METHOD_IRS, .backend = SSK_BACKEND_CPU, .binding = binding};
    ssk_deformer *irs = NULL;
    assert_int_equal(ssk_deformer_create(&irs, rig, &di, &err), SSK_OK);
    ssk_spring_params dp;
    ssk_spring_params_default(&dp);
    dp.multilevel = 0; /* the anchors only */
    ssk_spring *anchors = NULL;
    assert_int_equal(ssk_spring_create(&anchors, rig, binding, &dp, NULL, 0, &err), SSK_OK);
    double worst_own = INFINITY, worst_irs = INFINITY, worst_binding = INFINITY;
    uint32_t frame_own = 0, frame_binding = 0;
    for (uint32_t frame = 0; frame < frames; ++frame) {
        if (ssk_scene_sample(scene, 0, frame / 24.0, skin, NULL, &err) != SSK_OK)
            fail_msg("sample: %s", err.message);
        assert_int_equal(ssk_attach_prepare(ab, rig, skin, NULL, &err), SSK_OK);
        ssk_spring_prepare_frame(anchors, ab, frame);
        for (int k = 0; k < 2; ++k) {
            assert_int_equal(ssk_deformer_deform(k ? irs : def, pos, skin, NULL, &err), SSK_OK);
            object_to_rig(pos, rig);
            const double diag = tu_bbox_diagonal(pos, nv);
            for (uint32_t i = 0; i < nv; ++i) {
                const double rest = anchors->rest_scale_length[i];
                if (!anchors->scale_defined[i] || rest < 0.01 * diag) continue;
                const double r =
                    point_distance(pos + 3 * i, anchors->anchor + 4 * (size_t)i) / rest;
                if (k) {
                    worst_irs = fmin(worst_irs, r);
                } else if (r < worst_own) {
                    worst_own = r;
                    frame_own = frame;
                }
            }
            if (k) continue;
            const double rb = min_scale_ratio(pos, &bv, ab, nv, diag);
            if (rb < worst_binding) {
                worst_binding = rb;
                frame_binding = frame;
            }
        }
    }
    printf("defaults, all %u frames: smallest |v - a'| / |s| against the springs' own anchor "
           "%.4f (frame %u; IRS %.4f; issue #16's bar 0.8), against the binding's attachment "
           "point %.3f (frame %u)\n",
           frames, worst_own, frame_own, worst_irs, worst_binding, frame_binding);
    fflush(stdout);
    assert_true(worst_own >= worst_irs);
    assert_true(worst_own >= 0.8);
    ssk_deformer_destroy(irs);
    ssk_spring_destroy(anchors);
    ssk_deformer_destroy(def);
    fflush(stdout);
    free(skin);
    free(ab);
    free(first);
    free(pos);
    ssk_spring_destroy(s50);
    ssk_spring_destroy(slong);
    bcn_close(&bf);
}

/* A CPU deformer of the graph document `json` (binding b, or NULL to bind
 * with the defaults). */
static ssk_deformer *json_deformer(const ssk_rig *rig, const ssk_binding *b, const char *json)
{
    ssk_graph *g = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&g, json, rig, &err) != SSK_OK) fail_msg("graph: %s", err.message);
    ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU, .graph = g,
                              .binding = b};
    ssk_deformer *d = NULL;
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    ssk_graph_destroy(g);
    return d;
}

/* Fig. 19b on a real character: BCN_Epileptic.X relaxed from the rigid and
 * from the LBS first stage, each run as a user runs it (a deformer graph
 * "skinning -> spring -> output" on the CPU, object-space output; rigid
 * and springs with the paper's model: attachment "binding", no detail
 * force, which by design keeps each first stage's own detail, the plain
 * update), with
 * the threshold tightened to 1e-6 so both reach their equilibrium. */
static ssk_deformer *graph_deformer(const ssk_rig *rig, const ssk_binding *b, const char *method)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
             "\"method\": \"%s\"%s}, {\"id\": \"relax\", \"type\": \"spring\", "
             "\"max_iterations\": %u, \"threshold\": 1e-6, \"convergence\": \"displacement\", \"attachment\": \"binding\", "
             "\"stiffness\": {\"detail\": 0}, \"solver\": \"jacobi\"}, "
             "{\"id\": \"out\", \"type\": "
             "\"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": \"relax\"}, "
             "{\"from\": \"relax\", \"to\": \"out\"}]}",
             method, strcmp(method, "rigid") == 0 ? ", \"attachment\": \"binding\"" : "",
             EQ_ITERATIONS);
    return json_deformer(rig, b, json);
}

static void test_bcn_first_stage_independent(void **state)
{
    (void)state;
    bcn_fixture bf = bcn_open();
    ssk_scene *scene = bf.scene;
    const ssk_rig *rig = bf.rig;
    const uint32_t frames = bf.frames;
    ssk_error err = {0};
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    const uint32_t nm = ssk_rig_mesh_count(rig);
    ssk_deformer *from_rigid = graph_deformer(rig, bf.binding, "rigid");
    ssk_deformer *from_lbs = graph_deformer(rig, bf.binding, "lbs");
    float *skin = malloc(16 * (size_t)nb * sizeof(float));
    float *objects = malloc(16 * (size_t)nm * sizeof(float));
    float *a = malloc(3 * (size_t)nv * sizeof(float)), *b = malloc(3 * (size_t)nv * sizeof(float));
    printf("BCN_Epileptic.X relaxed from rigid vs from LBS (threshold 1e-6): frame, max "
           "|difference| / diagonal, iterations rigid / LBS\n");
    uint32_t within = 0;
    double worst = 0.0;
    for (uint32_t k = 0; k < 8; ++k) {
        const uint32_t frame = k * (frames / 8);
        if (ssk_scene_sample(scene, 0, frame / 24.0, skin, objects, &err) != SSK_OK)
            fail_msg("sample: %s", err.message);
        ssk_spring_report ra, rb;
        assert_int_equal(ssk_deformer_deform(from_rigid, a, skin, objects, &err), SSK_OK);
        ssk_deformer_spring_report(from_rigid, &ra);
        assert_int_equal(ssk_deformer_deform(from_lbs, b, skin, objects, &err), SSK_OK);
        ssk_deformer_spring_report(from_lbs, &rb);
        assert_true(ra.converged && rb.converged);
        const double diag = tu_bbox_diagonal(a, nv);
        double d = 0.0;
        for (uint32_t i = 0; i < nv; ++i) d = fmax(d, point_distance(a + 3 * i, b + 3 * i));
        d /= diag;
        printf("  frame %3u: %.4f, %u / %u\n", frame, d, ra.iterations, rb.iterations);
        within += d <= 0.01;
        worst = fmax(worst, d);
    }
    fflush(stdout);
    /* Measured: 5 of the 8 frames within 1% of the diagonal, the others
     * 1.1% to 2.1% (see the header: different local equilibria); issue
     * #16's bar: every tested frame within 2.5% */
    assert_true(within >= 5);
    assert_true(worst <= 0.025);
    free(skin);
    free(objects);
    free(a);
    free(b);
    ssk_deformer_destroy(from_rigid);
    ssk_deformer_destroy(from_lbs);
    bcn_close(&bf);
}


/* The defaults (`--method spring`: IRS first stage, weights anchors, the
 * detail force; core/kernels/spring.c) on the limb, each pose run as a user
 * runs it (an ssk_deformer on the CPU) with the default 50 iterations and
 * to a 1e-6 threshold (its equilibrium: a few float ulps of the unit-size
 * positions; 1e-7 is below them), against LBS and IRS alone.
 * Asserted (issue #16's bars where they apply): the default threshold
 * met within the default cap; after exactly 50 iterations no vertex more
 * than 1% of the radius from the equilibrium; the joint section at least
 * 0.9 of rest and at least LBS's; the volume (signed and enclosed) at
 * least LBS's; the twist increments below LBS's; the equilibrium
 * reached. */
static ssk_deformer *defaults_deformer(const ssk_rig *rig, const char *spring_fields)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
             "\"method\": \"irs\"}, {\"id\": \"relax\", \"type\": \"spring\"%s}, "
             "{\"id\": \"out\", \"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", "
             "\"to\": \"relax\"}, {\"from\": \"relax\", \"to\": \"out\"}]}",
             spring_fields);
    return json_deformer(rig, NULL, json);
}

static void test_default_springs(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(RINGS, SEGMENTS, 2, LENGTH, RADIUS, BLEND, 4);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    const uint32_t nv = mv.vertex_count;
    const size_t n3 = 3 * (size_t)nv;
    ssk_deformer *ddef = defaults_deformer(rig, "");
    ssk_deformer *d50 =
        defaults_deformer(rig, ", \"max_iterations\": 50, \"convergence\": \"iterations\"");
    ssk_deformer *deq = defaults_deformer(rig, ", \"max_iterations\": 20000, \"threshold\": 1e-6, \"convergence\": \"displacement\"");
    float *a = malloc(n3 * sizeof(float)), *b = malloc(n3 * sizeof(float));
    float *c = malloc(n3 * sizeof(float));
    float skin[32];
    ssk_error err = {0};
    printf("defaults (IRS + springs): pose, iterations / converged with the defaults, to 1e-6; "
           "then after exactly 50 iterations and at 1e-6: section, "
           "volume, enclosed, largest twist step: springs 50 | equilibrium | IRS | LBS; "
           "distance 50 -> equilibrium / radius\n");
    for (int p = P_BEND90; p < P_COUNT; ++p) {
        pose_matrices(skin, p);
        ssk_spring_report r50, req;
        assert_int_equal(ssk_deformer_deform(ddef, a, skin, NULL, &err), SSK_OK);
        ssk_deformer_spring_report(ddef, &r50);
        assert_true(r50.converged); /* within the default cap */
        assert_int_equal(ssk_deformer_deform(d50, a, skin, NULL, &err), SSK_OK);
        assert_int_equal(ssk_deformer_deform(deq, b, skin, NULL, &err), SSK_OK);
        ssk_deformer_spring_report(deq, &req);
        double q50[Q_COUNT], qeq[Q_COUNT], qirs[Q_COUNT];
        measure(q50, &mv, a);
        measure(qeq, &mv, b);
        tu_deform(c, rig, SSK_METHOD_IRS, skin);
        measure(qirs, &mv, c);
        const double *ql = table[M_LBS][p];
        double dist = 0.0;
        for (uint32_t i = 0; i < nv; ++i) dist = fmax(dist, point_distance(a + 3 * i, b + 3 * i));
        dist /= RADIUS;
        char twist[64] = "-"; /* the ring angle means nothing in a bend */
        if (p >= P_TWIST90)
            snprintf(twist, sizeof twist, "%.3f %.3f %.3f %.3f", q50[Q_TWIST], qeq[Q_TWIST],
                     qirs[Q_TWIST], ql[Q_TWIST]);
        printf("  %-9s %2u/%d %5u; section %.3f %.3f %.3f %.3f; volume %.3f %.3f %.3f %.3f; "
               "enclosed %.3f %.3f %.3f %.3f; twist %s; %.4f\n",
               pose_label[p], r50.iterations, r50.converged, req.iterations, q50[Q_SECTION],
               qeq[Q_SECTION], qirs[Q_SECTION], ql[Q_SECTION], q50[Q_VOLUME], qeq[Q_VOLUME],
               qirs[Q_VOLUME], ql[Q_VOLUME], q50[Q_ENCLOSED], qeq[Q_ENCLOSED], qirs[Q_ENCLOSED],
               ql[Q_ENCLOSED], twist, dist);
        fflush(stdout);
        assert_true(req.converged);
        for (int k = 0; k < 2; ++k) {
            const double *q = k ? qeq : q50;
            assert_true(q[Q_SECTION] >= 0.9);
            assert_true(q[Q_SECTION] >= ql[Q_SECTION]);
            assert_true(q[Q_VOLUME] >= ql[Q_VOLUME] - 1e-3);
            assert_true(q[Q_ENCLOSED] >= ql[Q_ENCLOSED] - 1e-3);
            /* issue #16, decision 3: at 135 degrees at least 0.95 of the
             * union of the bones' tubes (0.940 of rest; measured 0.918);
             * the twists keep the volume within 5% */
            if (p == P_BEND135) assert_true(q[Q_ENCLOSED] >= 0.95 * tube_union_ratio(3 * PI_D / 4));
            if (p == P_TWIST180) {
                assert_true(q[Q_SECTION] >= 0.95);
                assert_true(q[Q_TWIST] < ql[Q_TWIST] / 3.0); /* decision 2 */
                assert_true(fabs(q[Q_VOLUME] - 1.0) <= 0.05 && fabs(q[Q_ENCLOSED] - 1.0) <= 0.05);
            }
        }
        if (p >= P_TWIST90) {
            assert_true(q50[Q_TWIST] < ql[Q_TWIST]);
            /* issue #16: the twist does not reach the far ends: the far 20%
             * of each bone keeps its first stage's twist within 5 degrees
             * (the ring angle about Y of the result against IRS's) */
            double far = 0.0;
            for (uint32_t r = 0; r < RINGS; ++r) {
                const float y = mv.positions[3 * r * SEGMENTS + 1];
                if (y > 0.2f && y < 1.8f) continue;
                const float *pa = a + 3 * r * SEGMENTS, *pc = c + 3 * r * SEGMENTS;
                far = fmax(far, fabs(wrap(atan2(pa[2], pa[0]) - atan2(pc[2], pc[0]))));
            }
            printf("    far 20%% of each bone: largest twist against IRS %.2f degrees\n",
                   far * 180.0 / PI_D);
            assert_true(far * 180.0 / PI_D < 5.0);
        }
        assert_true(dist <= 0.01); /* issue #16: at most 1% of the radius after 50 */
    }
    free(a);
    free(b);
    free(c);
    ssk_deformer_destroy(ddef);
    ssk_deformer_destroy(d50);
    ssk_deformer_destroy(deq);
    ssk_rig_destroy(rig);
}

/* The multilevel correction (issue #16, core/kernels/spring_multilevel.c)
 * on a dense 2-bone limb (240 rings of 48: 11520 vertices, 4 slab levels
 * a bone), bent 135 and twisted 180 degrees: its fixed point is the plain
 * update's (the Chebyshev solver to 1e-6 lands within 1e-3 of the radius
 * of the multilevel one to 1e-6); with the defaults it meets the
 * threshold within the cap in fewer passes than Chebyshev alone, and after
 * exactly 50 passes it is within 1% of the radius of the equilibrium where
 * Chebyshev alone is farther. */
#define DENSE_RINGS 240u
#define DENSE_SEGMENTS 48u
static void test_multilevel_dense_limb(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(DENSE_RINGS, DENSE_SEGMENTS, 2, LENGTH, RADIUS, BLEND, 4);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    const size_t n3 = 3 * (size_t)nv;
    static const char *const fields[6] = {
        "", /* the defaults: multilevel */
        ", \"solver\": \"chebyshev\"",
        ", \"max_iterations\": 50, \"convergence\": \"iterations\"",
        ", \"max_iterations\": 50, \"convergence\": \"iterations\", \"solver\": \"chebyshev\"",
        ", \"max_iterations\": 20000, \"threshold\": 1e-6, \"convergence\": \"displacement\"",
        ", \"max_iterations\": 20000, \"threshold\": 1e-6, \"convergence\": \"displacement\", \"solver\": \"chebyshev\""};
    ssk_deformer *d[6];
    float *x[6];
    for (int k = 0; k < 6; ++k) {
        d[k] = defaults_deformer(rig, fields[k]);
        x[k] = malloc(n3 * sizeof(float));
    }
    static const int poses[2] = {P_BEND135, P_TWIST180};
    printf("dense limb (%u vertices): pose, iterations to the default threshold multilevel / "
           "chebyshev, distance after 50 passes to the equilibrium / radius multilevel / "
           "chebyshev, equilibria apart / radius, iterations to 1e-6 multilevel / chebyshev\n",
           nv);
    for (int pi = 0; pi < 2; ++pi) {
        float skin[32];
        pose_matrices(skin, poses[pi]);
        ssk_spring_report r[6];
        ssk_error err = {0};
        for (int k = 0; k < 6; ++k) {
            if (ssk_deformer_deform(d[k], x[k], skin, NULL, &err) != SSK_OK)
                fail_msg("%s: %s", fields[k], err.message);
            ssk_deformer_spring_report(d[k], &r[k]);
        }
        double dist_ml = 0.0, dist_cheb = 0.0, apart = 0.0;
        for (uint32_t i = 0; i < nv; ++i) {
            dist_ml = fmax(dist_ml, point_distance(x[2] + 3 * i, x[4] + 3 * i));
            dist_cheb = fmax(dist_cheb, point_distance(x[3] + 3 * i, x[4] + 3 * i));
            apart = fmax(apart, point_distance(x[4] + 3 * i, x[5] + 3 * i));
        }
        printf("  %-9s %u / %u; %.4f / %.4f; %.5f; %u / %u\n", pose_label[poses[pi]],
               r[0].iterations, r[1].iterations, dist_ml / RADIUS, dist_cheb / RADIUS,
               apart / RADIUS, r[4].iterations, r[5].iterations);
        fflush(stdout);
        assert_true(r[0].converged);
        assert_true(r[0].iterations < r[1].iterations || !r[1].converged);
        assert_true(r[4].converged);
        assert_true(apart <= 1e-3 * RADIUS);
        assert_true(dist_ml <= 0.01 * RADIUS);
        assert_true(dist_ml < dist_cheb);
    }
    for (int k = 0; k < 6; ++k) {
        ssk_deformer_destroy(d[k]);
        free(x[k]);
    }
    ssk_rig_destroy(rig);
}

/* The benchmarks' 8-bone limb (bench/limb.c, 9,984 vertices: 156 rings
 * of 64, inverse-distance weights over 4 bones) in bench_spring's three
 * poses (the animation at phase 0.3, the middle joint bent 135 degrees
 * about Z, twisted 180 degrees about Y), IRS and the default springs
 * (the multilevel solver): each meets the default threshold within the
 * default cap (issue #16). Without the stall rule
 * (SSK_SPRING_ML_STALL_WINDOW) the twist oscillated at the full coarse
 * step, its largest move neither growing nor decaying: all 100 passes,
 * the last still moving 0.085 against a threshold of 1e-4 (measured; 36
 * passes with the rule). Each result is within 1%
 * of the radius of the multilevel solve to 1e-5 (the equilibrium; the
 * limb is 8 long, so 1e-6 is at the positions' float ulps). */
#define BENCH_LIMB_TARGET 10000u
static void test_multilevel_bench_limb(void **state)
{
    (void)state;
    ssk_rig *rig = bench_limb_create(BENCH_LIMB_TARGET, BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
    assert_non_null(rig);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_deformer *d = defaults_deformer(rig, "");
    ssk_deformer *deq = defaults_deformer(rig, ", \"max_iterations\": 5000, \"threshold\": 1e-5, \"convergence\": \"displacement\"");
    float *x = malloc(3 * (size_t)nv * sizeof(float)), *xeq = malloc(3 * (size_t)nv * sizeof(float));
    assert_non_null(x);
    assert_non_null(xeq);
    static const char *const names[3] = {"animation", "bend 135", "twist 180"};
    printf("bench limb (%u vertices), defaults: pose, iterations / converged, iterations to "
           "1e-5, distance to that equilibrium / radius\n",
           nv);
    for (int pose = 0; pose < 3; ++pose) {
        float skin[16 * BENCH_LIMB_BONES];
        if (pose == 0)
            bench_limb_pose(skin, 0.3);
        else
            bench_limb_joint_pose(skin, BENCH_LIMB_BONES / 2, pose == 1 ? 2 : 1,
                                  pose == 1 ? 0.75 * PI_D : PI_D);
        ssk_error err = {0};
        ssk_spring_report r, req;
        assert_int_equal(ssk_deformer_deform(d, x, skin, NULL, &err), SSK_OK);
        ssk_deformer_spring_report(d, &r);
        assert_int_equal(ssk_deformer_deform(deq, xeq, skin, NULL, &err), SSK_OK);
        ssk_deformer_spring_report(deq, &req);
        double dist = 0.0;
        for (uint32_t i = 0; i < nv; ++i) dist = fmax(dist, point_distance(x + 3 * i, xeq + 3 * i));
        printf("  %-9s %u / %u; %u; %.4f\n", names[pose], r.iterations, r.converged,
               req.iterations, dist / BENCH_LIMB_RADIUS);
        fflush(stdout);
        assert_true(r.converged);
        assert_true(req.converged);
        assert_true(dist <= 0.01 * BENCH_LIMB_RADIUS);
    }
    free(x);
    free(xeq);
    ssk_deformer_destroy(d);
    ssk_deformer_destroy(deq);
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rest),
        cmocka_unit_test(test_springs_keep_cross_section),
        cmocka_unit_test(test_springs_keep_volume),
        cmocka_unit_test(test_twist_spreads),
        cmocka_unit_test(test_first_stage_independent),
        cmocka_unit_test(test_convergence),
        cmocka_unit_test(test_default_springs),
        cmocka_unit_test(test_multilevel_dense_limb),
        cmocka_unit_test(test_multilevel_bench_limb),
        cmocka_unit_test(test_bcn_epileptic),
        cmocka_unit_test(test_bcn_first_stage_independent),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
