/*
 * test_arap.c — ARAP on scale vectors (Toothman 2020, 4.1.1, Eq. 19-20;
 * core/kernels/arap.c): the rest pose and a rigid motion of the whole
 * skeleton are reproduced exactly (the system's solution is then R s,
 * independent of the pull toward rigid skinning); a 2-bone limb bent 90
 * degrees closes rigid skinning's tear (the largest edge stretch far below
 * rigid's with the same one-bone-per-vertex binding) but, as the
 * dissertation says, does not correct the joint's section (it collapses
 * like LBS's); the dissertation's Fig. 16 claim ("the bone parameters in
 * IRS can be tuned to produce deformations visually identical to ARAP" at
 * a 90 degree bend) measured: the IRS joint influence p_i = c_i that comes
 * closest, and how close; errors; the graph node on both backends.
 *
 * The limb: tu_make_limb, 60 rings x 16 segments, length 2, two bones,
 * radius 0.25, bound with the defaults.
 */
#include "testutil.h"
#include "quality.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI_D 3.14159265358979323846
#define RINGS 60u
#define SEGMENTS 16u
#define RADIUS 0.25f

typedef struct fixture {
    ssk_rig *rig;
    ssk_binding *binding;
    uint32_t nv;
} fixture;

static fixture limb(void)
{
    fixture f = {tu_make_limb(RINGS, SEGMENTS, 2, 2.0f, RADIUS, 0.5f, 4), NULL, 0};
    f.nv = ssk_rig_vertex_count(f.rig);
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    ssk_error err = {0};
    if (ssk_binding_create(&f.binding, f.rig, &bp, &err) != SSK_OK) fail_msg("%s", err.message);
    return f;
}

static void fixture_free(fixture *f)
{
    ssk_binding_destroy(f->binding);
    ssk_rig_destroy(f->rig);
}

static ssk_arap *make_arap(const fixture *f, float regularization)
{
    ssk_arap_params p;
    ssk_arap_params_default(&p);
    if (regularization > 0.0f) p.regularization = regularization;
    ssk_arap *a = NULL;
    ssk_error err = {0};
    if (ssk_arap_create(&a, f->rig, f->binding, &p, &err) != SSK_OK)
        fail_msg("ssk_arap_create: %s", err.message);
    return a;
}

static void arap_pose(ssk_arap *a, const fixture *f, const float *skin, float *out)
{
    ssk_attach_bone bones[2];
    ssk_error err = {0};
    if (ssk_attach_prepare(bones, f->rig, skin, NULL, &err) != SSK_OK)
        fail_msg("%s", err.message);
    if (ssk_arap_deform(a, out, bones, &err) != SSK_OK) fail_msg("%s", err.message);
}

/* Rest and a rigid motion of every bone: v' = M v exactly (to the solve's
 * precision), for any regularization. */
static void test_rest_and_rigid_motion(void **state)
{
    (void)state;
    fixture f = limb();
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(f.rig, 0, &mv, NULL), SSK_OK);
    const size_t n3 = 3 * (size_t)f.nv;
    float *out = malloc(n3 * sizeof(float)), *ref = malloc(n3 * sizeof(float));
    const float axis[3] = {0.36f, 0.48f, 0.8f}, pivot[3] = {0.3f, -0.2f, 0.1f};
    float skin[32];
    for (int r = 0; r < 2; ++r) {
        ssk_arap *a = make_arap(&f, r ? 0.5f : 0.0f);
        tu_mat4_identity(skin);
        tu_mat4_identity(skin + 16);
        arap_pose(a, &f, skin, out);
        const double diag = tu_bbox_diagonal(mv.positions, f.nv);
        assert_true(tu_max_abs_diff(out, mv.positions, n3) < 1e-5 * diag);
        tu_mat4_rotation(skin, axis, 1.1f, pivot);
        memcpy(skin + 16, skin, 16 * sizeof(float));
        arap_pose(a, &f, skin, out);
        for (uint32_t v = 0; v < f.nv; ++v) {
            const float *p = mv.positions + 3 * v;
            for (int k = 0; k < 3; ++k)
                ref[3 * v + k] = skin[4 * k] * p[0] + skin[4 * k + 1] * p[1] +
                                 skin[4 * k + 2] * p[2] + skin[4 * k + 3];
        }
        const double d = tu_max_abs_diff(out, ref, n3);
        if (!(d < 1e-5 * diag)) fail_msg("rigid motion: %g", d);
        ssk_arap_destroy(a);
    }
    free(out);
    free(ref);
    fixture_free(&f);
}

/* The joint's smallest ring area over rest (rings within 0.25 of y = 1). */
static double min_section(const float *def, const ssk_mesh_view *mv)
{
    double section = INFINITY;
    for (uint32_t r = 0; r < RINGS; ++r) {
        const uint32_t first = r * SEGMENTS;
        if (fabs(mv->positions[3 * first + 1] - 1.0) > 0.25) continue;
        section = fmin(section, q_polygon_area(def + 3 * first, SEGMENTS) /
                                    q_polygon_area(mv->positions + 3 * first, SEGMENTS));
    }
    return section;
}

/* `method` ("rigid" or "irs", p = c = `influence` for IRS) with the
 * binding's attachment, one bone per vertex (the paper's), on the CPU. */
static void graph_deform(float *out, const fixture *f, const char *method, float influence,
                         const float *skin)
{
    char json[512], extra[96] = "";
    if (strcmp(method, "irs") == 0)
        snprintf(extra, sizeof extra, ", \"parent_influence\": %g, \"child_influence\": %g",
                 (double)influence, (double)influence);
    snprintf(json, sizeof json,
             "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
             "\"method\": \"%s\", \"attachment\": \"binding\"%s}, {\"id\": \"out\", "
             "\"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": \"out\"}]}",
             method, extra);
    ssk_graph *g = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&g, json, f->rig, &err) != SSK_OK) fail_msg("%s", err.message);
    ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU, .graph = g,
                              .binding = f->binding};
    ssk_deformer *d = NULL;
    if (ssk_deformer_create(&d, f->rig, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_OK);
    ssk_deformer_destroy(d);
    ssk_graph_destroy(g);
}

/* 90 degrees: ARAP closes rigid skinning's tear; Fig. 16 measured. */
static void test_bend_and_fig16(void **state)
{
    (void)state;
    fixture f = limb();
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(f.rig, 0, &mv, NULL), SSK_OK);
    const size_t n3 = 3 * (size_t)f.nv;
    float *arap = malloc(n3 * sizeof(float)), *other = malloc(n3 * sizeof(float));
    float skin[32];
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, z, (float)(PI_D / 2), joint);
    ssk_arap *a = make_arap(&f, 0.0f);
    arap_pose(a, &f, skin, arap);
    ssk_arap_destroy(a);
    const double s_arap = q_max_edge_stretch(mv.positions, arap, mv.triangles, mv.triangle_count);
    graph_deform(other, &f, "rigid", 0.0f, skin); /* the binding's one bone, as ARAP's R_i */
    const double s_rigid = q_max_edge_stretch(mv.positions, other, mv.triangles, mv.triangle_count);
    tu_deform(other, f.rig, SSK_METHOD_LBS, skin);
    const double sec_lbs = min_section(other, &mv), sec_arap = min_section(arap, &mv);
    printf("bend 90: largest edge stretch ARAP %.3f, rigid %.3f; smallest joint section ARAP "
           "%.3f, LBS %.3f\n",
           s_arap, s_rigid, sec_arap, sec_lbs);
    assert_true(s_arap < 0.5 * s_rigid);
    assert_true(sec_arap > sec_lbs);
    /* Fig. 16: IRS with joint influences p = c (graph parent_influence /
     * child_influence) against ARAP, largest vertex distance / radius */
    double best = INFINITY, best_p = 0.0;
    const float ps[] = {0.125f, 0.25f, 0.5f, 0.75f, 1.0f};
    printf("Fig. 16: IRS p = c against ARAP, max distance / radius:");
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; ++k) {
        graph_deform(other, &f, "irs", ps[k], skin);
        double dist = 0.0, mean = 0.0;
        for (uint32_t v = 0; v < f.nv; ++v) {
            const float *p = arap + 3 * v, *q = other + 3 * v;
            const double dx = (double)p[0] - q[0], dy = (double)p[1] - q[1],
                         dz = (double)p[2] - q[2];
            const double d = sqrt(dx * dx + dy * dy + dz * dz);
            dist = fmax(dist, d);
            mean += d / f.nv;
        }
        dist /= RADIUS;
        printf(" p %.3g: %.3f (mean %.3f)", (double)ps[k], dist, mean / RADIUS);
        if (dist < best) {
            best = dist;
            best_p = ps[k];
        }
    }
    printf("; closest p %.3g (%.3f of the radius)\n", best_p, best);
    fflush(stdout);
    /* What holds of the claim, measured: the closest IRS is p = c = 0.5
     * (the default), but it is not identical: the largest difference,
     * 0.46 of the radius, is the inner side of the bend, where ARAP on
     * scale vectors collapses like LBS (section 0.718 against 0.707: "ARAP
     * on scale vectors does not address length correction around joint
     * bends", 4.1.1) and IRS keeps the section (1.0) */
    assert_true(best_p == 0.5f);
    assert_true(fabs(sec_arap - sec_lbs) < 0.05);
    free(arap);
    free(other);
    fixture_free(&f);
}

static void test_errors(void **state)
{
    (void)state;
    fixture f = limb();
    ssk_arap_params p;
    ssk_arap_params_default(&p);
    assert_true(p.regularization == 1e-3f);
    ssk_arap *a = (ssk_arap *)&a;
    ssk_error err = {0};
    p.regularization = 0.0f;
    assert_int_equal(ssk_arap_create(&a, f.rig, f.binding, &p, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(a);
    assert_non_null(strstr(err.message, "regularization = 0 must be finite and > 0"));
    p.regularization = NAN;
    assert_int_equal(ssk_arap_create(&a, f.rig, f.binding, &p, &err), SSK_ERROR_INVALID_ARGUMENT);
    ssk_arap_params_default(&p);
    assert_int_equal(ssk_arap_create(NULL, f.rig, f.binding, &p, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    fixture g = {tu_make_limb(10, 8, 2, 2.0f, 0.25f, 0.5f, 2), NULL, 0};
    assert_int_equal(ssk_arap_create(&a, g.rig, f.binding, &p, &err),
                     SSK_ERROR_BINDING_MISMATCH);
    ssk_rig_destroy(g.rig);
    a = make_arap(&f, 0.0f);
    float out[3];
    assert_int_equal(ssk_arap_deform(a, out, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    ssk_arap_destroy(a);
    ssk_arap_destroy(NULL);
    fixture_free(&f);
}

/* The graph's arap node on both backends (the GL backend solves on the
 * CPU and uploads): the same positions; the graph round-trips. */
static void test_graph_node_both_backends(void **state)
{
    (void)state;
    fixture f = limb();
    const char *json = "{\"version\": 1, \"nodes\": [{\"id\": \"a\", \"type\": \"arap\", "
                       "\"regularization\": 0.01}, {\"id\": \"out\", \"type\": \"output\"}], "
                       "\"edges\": [{\"from\": \"a\", \"to\": \"out\"}]}";
    ssk_graph *g = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&g, json, f.rig, &err) != SSK_OK) fail_msg("%s", err.message);
    char *text = ssk_graph_to_json(g);
    assert_non_null(strstr(text, "\"type\": \"arap\", \"regularization\": 0.01"));
    free(text);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    float skin[32];
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, z, 1.2f, joint);
    const size_t n3 = 3 * (size_t)f.nv;
    float *cpu = malloc(n3 * sizeof(float)), *gl = malloc(n3 * sizeof(float));
    ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU, .graph = g,
                              .binding = f.binding};
    ssk_deformer *d = NULL;
    if (ssk_deformer_create(&d, f.rig, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(ssk_deformer_deform(d, cpu, skin, NULL, &err), SSK_OK);
    ssk_deformer_destroy(d);
    desc.backend = SSK_BACKEND_GL;
    if (ssk_deformer_create(&d, f.rig, &desc, &err) == SSK_OK) {
        assert_int_equal(ssk_deformer_deform(d, gl, skin, NULL, &err), SSK_OK);
        assert_memory_equal(cpu, gl, n3 * sizeof(float));
        ssk_deformer_destroy(d);
    } else {
        print_message("no GL here (%s): CPU only\n", err.message);
    }
    /* a bad regularization is a graph error */
    ssk_graph *bad = NULL;
    const char *zero = "{\"version\": 1, \"nodes\": [{\"id\": \"a\", \"type\": \"arap\", "
                       "\"regularization\": 0}, {\"id\": \"out\", \"type\": \"output\"}], "
                       "\"edges\": [{\"from\": \"a\", \"to\": \"out\"}]}";
    assert_int_equal(ssk_graph_parse(&bad, zero, f.rig, &err), SSK_ERROR_GRAPH);
    assert_non_null(strstr(err.message, "node 'a': field 'regularization': expected a number > 0"));
    free(cpu);
    free(gl);
    ssk_graph_destroy(g);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rest_and_rigid_motion),
        cmocka_unit_test(test_bend_and_fig16),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_graph_node_both_backends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
