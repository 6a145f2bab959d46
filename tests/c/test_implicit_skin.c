/*
 * test_implicit_skin.c — implicit skinning as a user gets it (Vaillant
 * 2015, 4.4-4.6; issue #20): the `implicit` method and graph node on the
 * CPU and GL backends, judged by issue #20's acceptance on the tests'
 * generated 2-bone limb and on BCN_Epileptic.X:
 * - with the skeleton at rest the output is the rest mesh (within 1e-5 of
 *   the diagonal);
 * - bent 135 degrees: no self-intersection (the enclosed volume equals the
 *   signed volume within 0.5%), volume at least LBS's (enclosed volumes:
 *   LBS's signed volume counts its self-overlap twice), bulge (largest
 *   distance from the skeleton near the joint) below DQS's;
 * - twisted 180 degrees: smallest joint section at least 0.9 of rest;
 * - CPU and GL agree within 1e-5 of the diagonal;
 * - BCN_Epileptic.X: every frame finite and no tear (coincident vertices
 *   stay together), GL within 1e-5 of the diagonal of the CPU at every
 *   frame;
 * - timings: a frame on each backend (the first GL frame apart: it uploads
 *   the tracker and compiles the kernel);
 * - graph documents: the node's fields and their errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "springskin.h"
#include "testutil.h"
#include "quality.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PI_D 3.14159265358979323846
#define RINGS 80u
#define SEGMENTS 32u
#define LENGTH 2.0f
#define RADIUS 0.25f
#define BLEND 0.5f
/* Joint region: rest |y - 1| within half the weight blend zone. */
#define JOINT_HALF_WIDTH 0.25
/* Columns of q_enclosed_volume's grid. */
#define ENCLOSED_GRID 200u
/* Issue #20's bars. */
#define REST_TOLERANCE 1e-5      /* of the diagonal */
#define SELF_INTERSECTION 0.005  /* enclosed vs signed volume */
#define TWIST_SECTION 0.9
#define PARITY_TOLERANCE 1e-5    /* CPU vs GL, of the diagonal */

enum { P_REST, P_BEND90, P_BEND135, P_TWIST180, P_COUNT };
static const char *const pose_label[P_COUNT] = {"rest", "bend 90", "bend 135", "twist 180"};

static void pose_matrices(float skin[32], int pose)
{
    static const float Y[3] = {0, 1, 0}, Z[3] = {0, 0, 1}, J[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    switch (pose) {
    case P_REST: tu_mat4_identity(skin + 16); break;
    case P_BEND90: tu_mat4_rotation(skin + 16, Z, (float)(PI_D / 2), J); break;
    case P_BEND135: tu_mat4_rotation(skin + 16, Z, (float)(3 * PI_D / 4), J); break;
    default: tu_mat4_rotation(skin + 16, Y, (float)PI_D, J); break;
    }
}

/* Distance of p to the posed skeleton: (0,0,0)-(0,1,0), then J to tail. */
static double skeleton_distance(const float *p, const double tail[3])
{
    const double v[3] = {p[0], p[1], p[2]}, o[3] = {0, 0, 0}, j[3] = {0, 1, 0};
    const double a = q_segment_distance(v, o, j), b = q_segment_distance(v, j, tail);
    return a < b ? a : b;
}

typedef struct measures {
    double volume, enclosed, section, bulge;
} measures;

static measures measure(const ssk_mesh_view *mv, const float *def, const float skin[32])
{
    measures m;
    const float *rest = mv->positions;
    const double v0 = q_volume(rest, mv->triangles, mv->triangle_count);
    m.volume = q_volume(def, mv->triangles, mv->triangle_count) / v0;
    m.enclosed = q_enclosed_volume(def, mv->triangles, mv->triangle_count, mv->vertex_count,
                                   ENCLOSED_GRID) / v0;
    m.section = INFINITY;
    for (uint32_t r = 0; r < RINGS; ++r) {
        const uint32_t first = r * SEGMENTS;
        if (fabs(rest[3 * first + 1] - 1.0) > JOINT_HALF_WIDTH) continue;
        const double ratio = q_polygon_area(def + 3 * first, SEGMENTS) /
                             q_polygon_area(rest + 3 * first, SEGMENTS);
        if (ratio < m.section) m.section = ratio;
    }
    double tail[3];
    for (int r = 0; r < 3; ++r) tail[r] = skin[16 + 4 * r + 1] * 2.0 + skin[16 + 4 * r + 3];
    m.bulge = 0.0;
    for (uint32_t v = 0; v < mv->vertex_count; ++v) {
        if (fabs(rest[3 * v + 1] - 1.0) > JOINT_HALF_WIDTH) continue;
        const double d = skeleton_distance(def + 3 * v, tail);
        if (d > m.bulge) m.bulge = d;
    }
    m.bulge /= RADIUS;
    return m;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The largest rig-space distance between a welded vertex and its group's
 * representative (object-space rows `pos`, each mesh's object matrix). */
static double weld_gap(const ssk_rig *rig, const float *pos)
{
    ssk_weld_view w;
    assert_int_equal(ssk_rig_weld(rig, &w, NULL), SSK_OK);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    float *rig_pos = malloc(3 * (size_t)nv * sizeof(float));
    for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
        ssk_mesh_view mv;
        assert_int_equal(ssk_rig_mesh(rig, m, &mv, NULL), SSK_OK);
        for (uint32_t i = 0; i < mv.vertex_count; ++i) {
            const float *p = pos + 3 * ((size_t)mv.first_vertex + i);
            float *q = rig_pos + 3 * ((size_t)mv.first_vertex + i);
            for (int r = 0; r < 3; ++r)
                q[r] = mv.object_matrix[4 * r] * p[0] + mv.object_matrix[4 * r + 1] * p[1] +
                       mv.object_matrix[4 * r + 2] * p[2] + mv.object_matrix[4 * r + 3];
        }
    }
    double gap = 0.0;
    for (uint32_t k = 0; k < w.member_count; ++k) {
        const uint32_t v = w.members[k], r = w.points[v];
        gap = fmax(gap, tu_max_abs_diff(rig_pos + 3 * (size_t)v, rig_pos + 3 * (size_t)r, 3));
    }
    free(rig_pos);
    return gap;
}

static ssk_gl_context *gl_context(void)
{
    ssk_gl_context *gl = NULL;
    ssk_error err = {0};
    if (ssk_gl_context_create(&gl, &err) != SSK_OK) {
        printf("no GL context (%s): GL cases skipped\n", err.message);
        return NULL;
    }
    return gl;
}

/* The operators, built once for the file's deformers; the first
 * deformer of test_limb_poses builds its own, as a user's would. */
static ssk_implicit_operators *shared_operators;

static ssk_deformer *implicit_deformer(const ssk_rig *rig, ssk_backend backend,
                                       ssk_gl_context *gl)
{
    ssk_deformer *d = NULL;
    ssk_error err = {0};
    ssk_deformer_desc desc = {.method = SSK_METHOD_IMPLICIT, .backend = backend,
                              .gl_context = gl, .implicit_operators = shared_operators};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK)
        fail_msg("implicit deformer (%s): %s", ssk_backend_name(backend), err.message);
    return d;
}

/* The limb's poses with every backend: the acceptance items above. */
static void test_limb_poses(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(RINGS, SEGMENTS, 2, LENGTH, RADIUS, BLEND, 4);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    const uint32_t nv = mv.vertex_count;
    const size_t n3 = 3 * (size_t)nv;
    const double diag = tu_bbox_diagonal(mv.positions, nv);
    ssk_gl_context *gl = gl_context();
    const double t0 = now();
    ssk_deformer *cpu = implicit_deformer(rig, SSK_BACKEND_CPU, NULL);
    printf("implicit deformer of %u vertices made in %.3f s\n", nv, now() - t0);
    ssk_error err = {0};
    const double t1 = now();
    if (ssk_implicit_operators_create(&shared_operators, 0, &err) != SSK_OK)
        fail_msg("%s", err.message);
    printf("the operators alone (128^3, both kinds) built in %.3f s\n", now() - t1);
    ssk_deformer *gld = gl ? implicit_deformer(rig, SSK_BACKEND_GL, gl) : NULL;
    float *a = malloc(n3 * sizeof(float)), *b = malloc(n3 * sizeof(float));
    float *lbs = malloc(n3 * sizeof(float)), *dqs = malloc(n3 * sizeof(float));
    float skin[32];
    printf("pose: volume, enclosed, section, bulge/r: implicit | LBS | DQS\n");
    for (int p = 0; p < P_COUNT; ++p) {
        pose_matrices(skin, p);
        const double tc = now();
        if (ssk_deformer_deform(cpu, a, skin, NULL, &err) != SSK_OK) fail_msg("%s", err.message);
        const double cpu_ms = 1e3 * (now() - tc);
        tu_deform(lbs, rig, SSK_METHOD_LBS, skin);
        tu_deform(dqs, rig, SSK_METHOD_DQS, skin);
        const measures mi = measure(&mv, a, skin), ml = measure(&mv, lbs, skin),
                       md = measure(&mv, dqs, skin);
        printf("  %-9s %.4f %.4f %.4f %.4f | %.4f %.4f %.4f %.4f | %.4f %.4f %.4f %.4f\n",
               pose_label[p], mi.volume, mi.enclosed, mi.section, mi.bulge, ml.volume,
               ml.enclosed, ml.section, ml.bulge, md.volume, md.enclosed, md.section, md.bulge);
        fflush(stdout);
        for (size_t i = 0; i < n3; ++i) assert_true(isfinite(a[i]));
        if (p == P_REST)
            assert_true(tu_max_abs_diff(a, mv.positions, n3) <= REST_TOLERANCE * diag);
        if (p == P_BEND135) {
            assert_true(fabs(mi.enclosed - mi.volume) <= SELF_INTERSECTION * mi.volume);
            /* volume as the enclosed volume: the signed volume counts the
             * region where LBS's inner sides pass through each other twice
             * (LBS 0.93 signed, 0.87 enclosed: issue #20's "Why") */
            assert_true(mi.enclosed >= ml.enclosed);
            assert_true(mi.bulge < md.bulge);
        }
        if (p == P_TWIST180) assert_true(mi.section >= TWIST_SECTION);
        if (gld) {
            /* the first GL frame uploads the tracker and compiles the
             * kernel: timed apart */
            const double tg = now();
            if (ssk_deformer_deform(gld, b, skin, NULL, &err) != SSK_OK)
                fail_msg("GL: %s", err.message);
            const double gl_ms = 1e3 * (now() - tg);
            const double dev = tu_max_abs_diff(a, b, n3) / diag;
            printf("    GL vs CPU: %.2e of the diagonal; a frame: CPU %.1f ms, GL %.1f ms%s\n", dev,
                   cpu_ms, gl_ms, p == 0 ? " (first GL frame: upload, compile)" : "");
            assert_true(dev <= PARITY_TOLERANCE);
        }
    }
    free(a);
    free(b);
    free(lbs);
    free(dqs);
    ssk_deformer_destroy(cpu);
    ssk_deformer_destroy(gld);
    ssk_gl_context_destroy(gl);
    ssk_rig_destroy(rig);
}

/* Elastic tracking (4.6.3, the node's "tracking": "elastic"), frame by
 * frame from rest to a 135 degree bend in 9 frames and back: at the bend
 * the acceptance items of the independent tracking (no self-intersection,
 * enclosed volume at least LBS's, bulge below DQS's); back at rest the
 * rest mesh again ("to guarantee the mesh always comes back to its
 * original shape when the skeleton returns to its rest pose", 4.6.1). */
#define ELASTIC_FRAMES 9
/* Of the diagonal, after the return: the skin slides a little along the
 * limb, a mode the energy of Eq. 4.9 hardly resists (measured 2.0e-3,
 * 2.5 mm at the far end of a 2 m limb) */
#define ELASTIC_REST_TOLERANCE 5e-3
static void test_elastic_bend_and_back(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(RINGS, SEGMENTS, 2, LENGTH, RADIUS, BLEND, 4);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    const uint32_t nv = mv.vertex_count;
    const size_t n3 = 3 * (size_t)nv;
    const double diag = tu_bbox_diagonal(mv.positions, nv);
    static const char doc[] =
        "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", \"method\": "
        "\"dqs\"}, {\"id\": \"imp\", \"type\": \"implicit\", \"tracking\": \"elastic\"}, "
        "{\"id\": \"out\", \"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": "
        "\"imp\"}, {\"from\": \"imp\", \"to\": \"out\"}]}";
    ssk_graph *g = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&g, doc, rig, &err) != SSK_OK) fail_msg("%s", err.message);
    ssk_deformer *d = NULL, *dg = NULL;
    ssk_deformer_desc desc = {.backend = SSK_BACKEND_CPU, .graph = g,
                              .implicit_operators = shared_operators};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    /* the same frames on GL (the elastic steps run on the host there) */
    ssk_gl_context *gl = gl_context();
    desc.backend = SSK_BACKEND_GL;
    desc.gl_context = gl;
    if (gl && ssk_deformer_create(&dg, rig, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    float *ag = malloc(n3 * sizeof(float));
    double gl_dev = 0.0;
    float *a = malloc(n3 * sizeof(float)), *lbs = malloc(n3 * sizeof(float));
    float *dqs = malloc(n3 * sizeof(float));
    float skin[32];
    static const float Z[3] = {0, 0, 1}, J[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    double seconds = 0.0;
    for (int f = 0; f <= 2 * ELASTIC_FRAMES; ++f) {
        const int k = f <= ELASTIC_FRAMES ? f : 2 * ELASTIC_FRAMES - f;
        tu_mat4_rotation(skin + 16, Z, (float)(3 * PI_D / 4) * k / ELASTIC_FRAMES, J);
        ssk_deformer_set_frame(d, f);
        const double t0 = now();
        if (ssk_deformer_deform(d, a, skin, NULL, &err) != SSK_OK) fail_msg("%s", err.message);
        seconds += now() - t0;
        for (size_t i = 0; i < n3; ++i) assert_true(isfinite(a[i]));
        if (dg) {
            ssk_deformer_set_frame(dg, f);
            if (ssk_deformer_deform(dg, ag, skin, NULL, &err) != SSK_OK) fail_msg("%s", err.message);
            gl_dev = fmax(gl_dev, tu_max_abs_diff(a, ag, n3) / diag);
        }
        if (f == ELASTIC_FRAMES) {
            tu_deform(lbs, rig, SSK_METHOD_LBS, skin);
            tu_deform(dqs, rig, SSK_METHOD_DQS, skin);
            const measures mi = measure(&mv, a, skin), ml = measure(&mv, lbs, skin),
                           md = measure(&mv, dqs, skin);
            printf("elastic, bend 135 after %d frames: volume %.4f enclosed %.4f section %.4f "
                   "bulge %.4f (LBS enclosed %.4f, DQS bulge %.4f)\n",
                   ELASTIC_FRAMES, mi.volume, mi.enclosed, mi.section, mi.bulge, ml.enclosed,
                   md.bulge);
            assert_true(fabs(mi.enclosed - mi.volume) <= SELF_INTERSECTION * mi.volume);
            assert_true(mi.enclosed >= ml.enclosed);
            assert_true(mi.bulge < md.bulge);
        }
    }
    const double back = tu_max_abs_diff(a, mv.positions, n3) / diag;
    printf("elastic: %d frames in %.3f s; back at rest: %.2e of the diagonal from the rest mesh\n",
           2 * ELASTIC_FRAMES + 1, seconds, back);
    assert_true(back <= ELASTIC_REST_TOLERANCE);
    if (dg) {
        printf("elastic on GL: largest deviation from the CPU %.2e of the diagonal\n", gl_dev);
        assert_true(gl_dev <= PARITY_TOLERANCE);
    }
    ssk_deformer_destroy(dg);
    ssk_gl_context_destroy(gl);
    free(ag);
    free(a);
    free(lbs);
    free(dqs);
    ssk_deformer_destroy(d);
    ssk_graph_destroy(g);
    ssk_rig_destroy(rig);
}

static int teardown(void **state)
{
    (void)state;
    ssk_implicit_operators_destroy(shared_operators);
    shared_operators = NULL;
    return 0;
}

/* BCN_Epileptic.X (3 meshes, 54 bones): every frame of its animation
 * finite, and no tear: welded (coincident) vertices keep one position. */
static void test_bcn_epileptic(void **state)
{
    (void)state;
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    if (ssk_scene_import(&scene, SSK_MODELS_DIR "/X/BCN_Epileptic.X", &err) != SSK_OK)
        fail_msg("import: %s", err.message);
    const ssk_rig *rig = ssk_scene_rig(scene);
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    const double t0 = now();
    ssk_deformer *d = implicit_deformer(rig, SSK_BACKEND_CPU, NULL);
    printf("BCN_Epileptic.X: %u vertices, %u bones: implicit deformer made in %.3f s\n", nv, nb,
           now() - t0);
    ssk_gl_context *gl = gl_context();
    ssk_deformer *gld = gl ? implicit_deformer(rig, SSK_BACKEND_GL, gl) : NULL;
    float *skin = malloc(16 * (size_t)nb * sizeof(float));
    float *out = malloc(3 * (size_t)nv * sizeof(float));
    float *gl_out = malloc(3 * (size_t)nv * sizeof(float));
    double diag = 0.0, gl_dev = 0.0, gl_total = 0.0;
    ssk_animation_info info;
    assert_int_equal(ssk_scene_animation(scene, 0, &info, NULL), SSK_OK);
    const uint32_t frames = ssk_animation_frame_count(&info, 24.0);
    double worst = 0.0, total = 0.0;
    for (uint32_t f = 0; f < frames; ++f) {
        if (ssk_scene_sample(scene, 0, f / 24.0, skin, NULL, &err) != SSK_OK)
            fail_msg("%s", err.message);
        const double t1 = now();
        if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK) fail_msg("%s", err.message);
        total += now() - t1;
        for (size_t i = 0; i < 3 * (size_t)nv; ++i) assert_true(isfinite(out[i]));
        worst = fmax(worst, weld_gap(rig, out));
        if (f == 0) diag = tu_bbox_diagonal(out, nv);
        if (gld) {
            const double t2 = now();
            if (ssk_deformer_deform(gld, gl_out, skin, NULL, &err) != SSK_OK)
                fail_msg("GL: %s", err.message);
            if (f > 0) gl_total += now() - t2; /* frame 0 uploads and compiles */
            gl_dev = fmax(gl_dev, tu_max_abs_diff(out, gl_out, 3 * (size_t)nv));
        }
    }
    printf("  %u frames, %.2f ms a frame, largest gap between welded vertices %.2e\n", frames,
           1e3 * total / frames, worst);
    assert_true(worst <= 1e-5);
    if (gld && frames > 1) {
        printf("  GL: %.2f ms a frame (frames 1..), largest deviation from the CPU %.2e of the "
               "diagonal\n", 1e3 * gl_total / (frames - 1), gl_dev / diag);
        assert_true(gl_dev <= PARITY_TOLERANCE * diag);
    }
    free(skin);
    free(out);
    free(gl_out);
    ssk_deformer_destroy(gld);
    ssk_gl_context_destroy(gl);
    ssk_deformer_destroy(d);
    ssk_scene_destroy(scene);
}

static void expect_graph_error(const ssk_rig *rig, const char *node_fields, const char *part)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", \"method\": "
             "\"dqs\"}, {\"id\": \"imp\", \"type\": \"implicit\"%s}, {\"id\": \"out\", \"type\": "
             "\"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": \"imp\"}, {\"from\": "
             "\"imp\", \"to\": \"out\"}]}",
             node_fields);
    ssk_graph *g = NULL;
    ssk_error err = {0};
    const ssk_status st = ssk_graph_parse(&g, json, rig, &err);
    if (!part) {
        if (st != SSK_OK) fail_msg("%s: %s", node_fields, err.message);
        char *text = ssk_graph_to_json(g);
        assert_non_null(text);
        ssk_graph *again = NULL;
        assert_int_equal(ssk_graph_parse(&again, text, rig, &err), SSK_OK);
        char *text2 = ssk_graph_to_json(again);
        assert_string_equal(text, text2); /* canonical: a round trip changes nothing */
        printf("%s\n", text);
        free(text);
        free(text2);
        ssk_graph_destroy(again);
        ssk_graph_destroy(g);
        return;
    }
    assert_int_equal(st, SSK_ERROR_GRAPH);
    if (!strstr(err.message, part)) fail_msg("'%s' not in: %s", part, err.message);
}

static void test_graph_node(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(20, 12, 2, LENGTH, RADIUS, BLEND, 2);
    expect_graph_error(rig, "", NULL);
    expect_graph_error(rig,
                       ", \"operator\": \"union\", \"operators\": {\"bone_1\": \"bulge\"}, "
                       "\"iterations\": 30, \"sigma\": 0.5, \"contact_angle\": 40.0, \"bulge\": 0.5",
                       NULL);
    expect_graph_error(rig, ", \"operator\": \"max\"", "unknown value 'max'");
    expect_graph_error(rig, ", \"operators\": {\"nobone\": \"bulge\"}", "no bone 'nobone'");
    expect_graph_error(rig, ", \"operators\": {\"bone_1\": \"x\"}", "operators.bone_1");
    expect_graph_error(rig, ", \"sigma\": 0", "field 'sigma'");
    expect_graph_error(rig, ", \"contact_angle\": 180", "field 'contact_angle'");
    expect_graph_error(rig, ", \"iterations\": 100000", "field 'iterations'");
    expect_graph_error(rig, ", \"bulge\": 2", "field 'bulge'");
    expect_graph_error(rig, ", \"stiffness\": 2", "unknown field 'stiffness'");
    expect_graph_error(rig,
                       ", \"tracking\": \"elastic\", \"substep_angle\": 5.0, "
                       "\"relaxation_iterations\": 2",
                       NULL);
    expect_graph_error(rig, ", \"tracking\": \"history\"", "unknown value 'history'");
    expect_graph_error(rig, ", \"substep_angle\": 0", "field 'substep_angle'");
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_node),
        cmocka_unit_test(test_limb_poses),
        cmocka_unit_test(test_elastic_bend_and_back),
        cmocka_unit_test(test_bcn_epileptic),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
