/*
 * test_deformer_graph.c — running deformer graphs (Toothman 2020, 6.1):
 * one test body per case on both backends (CPU, GL; GL skips only when no
 * context can be created). Results are compared with the kernels composed
 * by hand on the CPU, so the executor's chaining, buffer routing and frame
 * handling are what is tested.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI_F 3.14159265358979323846f
/* Same kernels on another backend or composed by hand: float rounding. */
#define TOL 2e-5

typedef struct backend_case {
    ssk_backend backend;
    ssk_gl_context *gl;
} backend_case;

static backend_case cpu_case = {SSK_BACKEND_CPU, NULL};
static backend_case gl_case = {SSK_BACKEND_GL, NULL};
static char gl_unavailable[SSK_ERROR_MESSAGE_SIZE];

static const backend_case *backend_of(void **state)
{
    const backend_case *c = *state;
    if (c->backend == SSK_BACKEND_GL && !c->gl) {
        print_message("GL case skipped: no GL context can be created: %s\n", gl_unavailable);
        skip();
    }
    return c;
}

/* A 3-bone limb and a bent, twisted pose. */
static ssk_rig *limb(void) { return tu_make_limb(36, 16, 3, 3.0f, 0.3f, 0.6f, 4); }

static void pose(float skin[48], float phase)
{
    const float z[3] = {0, 0, 1}, y[3] = {0, 1, 0};
    float global[16];
    tu_mat4_identity(global);
    for (int b = 0; b < 3; ++b) {
        const float head[3] = {0, (float)b, 0};
        float bend[16], twist[16], local[16];
        tu_mat4_rotation(bend, z, 0.6f * sinf(phase + (float)b), head);
        tu_mat4_rotation(twist, y, 0.8f * cosf(phase + (float)b), head);
        tu_mat4_mul(local, bend, twist);
        tu_mat4_mul(global, global, local);
        memcpy(skin + 16 * b, global, sizeof global);
    }
}

static ssk_graph *parse(const char *json, const ssk_rig *rig)
{
    ssk_graph *g = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&g, json, rig, &err) != SSK_OK) fail_msg("graph: %s", err.message);
    return g;
}

static ssk_deformer *make(const backend_case *c, const ssk_rig *rig, const ssk_graph *graph,
                          ssk_method method, const ssk_binding *binding)
{
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = method, .backend = c->backend, .gl_context = c->gl,
                              .graph = graph, .binding = binding};
    ssk_error err = {0};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) fail_msg("create: %s", err.message);
    assert_int_equal(ssk_deformer_backend(d), c->backend);
    return d;
}

static void deform(ssk_deformer *d, float *dst, const float *skin)
{
    ssk_error err = {0};
    if (ssk_deformer_deform(d, dst, skin, NULL, &err) != SSK_OK) fail_msg("deform: %s", err.message);
}

/* A graph of one LBS skinning node gives the plain LBS deformer's result;
 * a normals node routed to the output gives the normals of those
 * positions. */
static void test_lbs_normals_graph(void **state)
{
    const backend_case *c = backend_of(state);
    ssk_rig *rig = limb();
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_graph *g = parse("{\"version\": 1, \"nodes\": ["
                         "{\"id\": \"skin\", \"type\": \"skinning\", \"method\": \"lbs\"},"
                         "{\"id\": \"n\", \"type\": \"normals\"},"
                         "{\"id\": \"out\", \"type\": \"output\"}],"
                         "\"edges\": [{\"from\": \"skin\", \"to\": \"out\"},"
                         "{\"from\": \"skin\", \"to\": \"n\"},"
                         "{\"from\": \"n\", \"to\": \"out\", \"input\": \"normals\"}]}",
                         rig);
    float skin[48], *a = malloc(3 * nv * sizeof(float)), *b = malloc(3 * nv * sizeof(float));
    float *na = malloc(3 * nv * sizeof(float)), *nb = malloc(3 * nv * sizeof(float));
    pose(skin, 0.4f);
    ssk_deformer *dg = make(c, rig, g, SSK_METHOD_LBS, NULL);
    ssk_deformer *dm = make(c, rig, NULL, SSK_METHOD_LBS, NULL);
    deform(dg, a, skin);
    deform(dm, b, skin);
    assert_memory_equal(a, b, 3 * nv * sizeof(float));
    ssk_error err = {0};
    assert_int_equal(ssk_deformer_normals(dg, na, &err), SSK_OK);
    assert_int_equal(ssk_rig_normals(rig, nb, a, &err), SSK_OK);
    assert_true(tu_max_abs_diff(na, nb, 3 * nv) < 1e-5);
    ssk_deformer_destroy(dg);
    ssk_deformer_destroy(dm);
    ssk_graph_destroy(g);
    free(a);
    free(b);
    free(na);
    free(nb);
    ssk_rig_destroy(rig);
}

/* IRS (the binding's attachment, as the paper), then a keyed radial bulge
 * on the middle bone: equal to the IRS and radial kernels composed by hand (identity object matrices: rig space is
 * object space), the bulge following the keys over frames. */
static void test_irs_radial_chain_follows_keys(void **state)
{
    const backend_case *c = backend_of(state);
    ssk_rig *rig = limb();
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_binding *binding = NULL;
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    ssk_error err = {0};
    assert_int_equal(ssk_binding_create(&binding, rig, &params, &err), SSK_OK);
    ssk_binding_view bv;
    assert_int_equal(ssk_binding_get(binding, &bv, &err), SSK_OK);
    ssk_graph *g = parse("{\"version\": 1, \"nodes\": ["
                         "{\"id\": \"skin\", \"type\": \"skinning\", \"method\": \"irs\","
                         " \"length_adjust\": false, \"attachment\": \"binding\"},"
                         "{\"id\": \"bulge\", \"type\": \"radial\", \"bones\": [\"bone_1\"],"
                         " \"profile\": \"bulge\", \"keys\": [[0, 0.0], [10, 2.0]]},"
                         "{\"id\": \"out\", \"type\": \"output\"}],"
                         "\"edges\": [{\"from\": \"skin\", \"to\": \"bulge\"},"
                         "{\"from\": \"bulge\", \"to\": \"out\"}]}",
                         rig);
    ssk_deformer *d = make(c, rig, g, SSK_METHOD_LBS, binding);
    float skin[48], *out = malloc(3 * nv * sizeof(float)), *want = malloc(3 * nv * sizeof(float));
    ssk_attach_bone ab[3];
    uint8_t mask[3] = {0, 1, 0};
    pose(skin, 1.1f);
    assert_int_equal(ssk_attach_prepare(ab, rig, skin, NULL, &err), SSK_OK);
    const double frames[] = {0.0, 5.0, 10.0, 20.0};
    const float amounts[] = {0.0f, 1.0f, 2.0f, 2.0f}; /* keys interpolated, clamped */
    for (int k = 0; k < 4; ++k) {
        ssk_deformer_set_frame(d, frames[k]);
        deform(d, out, skin);
        ssk_irs_deform(want, nv, bv.bones, bv.t, bv.scale_vectors, ab, 0, NULL);
        ssk_radial_deform(want, want, nv, bv.bones, bv.t, ab, mask, SSK_RADIAL_BULGE, amounts[k]);
        double diff = tu_max_abs_diff(out, want, 3 * nv);
        if (!(diff < TOL)) fail_msg("frame %g: graph vs kernels differ by %g", frames[k], diff);
    }
    /* and the bulge did something: frame 10 differs from frame 0 */
    float *f0 = malloc(3 * nv * sizeof(float));
    ssk_deformer_set_frame(d, 0.0);
    deform(d, f0, skin);
    assert_true(tu_max_abs_diff(f0, out, 3 * nv) > 0.01);
    free(f0);
    ssk_deformer_destroy(d);
    ssk_graph_destroy(g);
    ssk_binding_destroy(binding);
    free(out);
    free(want);
    ssk_rig_destroy(rig);
}

/* The default attachment of rigid and irs nodes is one per skin weight
 * influence: the graph gives what ssk_attach_weight_slots and
 * ssk_attach_weights_deform give by hand; rigid with it is LBS (an
 * unstretched bone's a'_k + R_k s_k is S_k x), and at rest IRS is the
 * rest mesh. */
static void test_weights_attachment_matches_kernels(void **state)
{
    const backend_case *c = backend_of(state);
    ssk_rig *rig = limb();
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_binding *binding = NULL;
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    assert_int_equal(ssk_binding_create(&binding, rig, &params, NULL), SSK_OK);
    ssk_binding_view bv;
    assert_int_equal(ssk_binding_get(binding, &bv, NULL), SSK_OK);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    float skin[48], *out = malloc(3 * nv * sizeof(float)), *want = malloc(3 * nv * sizeof(float));
    float *slots = malloc(SSK_ATTACH_SLOT_FLOATS * (size_t)nv * mv.influence_count * sizeof(float));
    ssk_attach_bone ab[3];
    ssk_error err = {0};
    for (int b = 0; b < 3; ++b) tu_mat4_identity(skin + 16 * b); /* rest */
    assert_int_equal(ssk_attach_prepare(ab, rig, skin, NULL, &err), SSK_OK);
    ssk_attach_weight_slots(slots, mv.positions, nv, mv.bone_indices, mv.weights,
                            mv.influence_count, mv.object_matrix, bv.bones, bv.t,
                            bv.scale_vectors, ab);
    ssk_attach_bone rest_ab[3];
    memcpy(rest_ab, ab, sizeof rest_ab);
    ssk_deformer *irs = make(c, rig, NULL, SSK_METHOD_IRS, binding);
    ssk_deformer *rigid = make(c, rig, NULL, SSK_METHOD_RIGID, binding);
    ssk_deformer *lbs = make(c, rig, NULL, SSK_METHOD_LBS, binding);
    ssk_graph *adjust_graph = parse("{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": "
                                    "\"skinning\", \"method\": \"irs\", \"length_adjust\": "
                                    "true}, {\"id\": \"out\", \"type\": \"output\"}], "
                                    "\"edges\": [{\"from\": \"skin\", \"to\": \"out\"}]}",
                                    rig);
    ssk_deformer *adjust = make(c, rig, adjust_graph, SSK_METHOD_LBS, binding);
    deform(irs, out, skin);
    if (!(tu_max_abs_diff(out, mv.positions, 3 * nv) < 1e-5))
        fail_msg("IRS at rest moves the mesh by %g", tu_max_abs_diff(out, mv.positions, 3 * nv));
    for (int k = 1; k < 4; ++k) {
        pose(skin, 0.6f * (float)k);
        assert_int_equal(ssk_attach_prepare(ab, rig, skin, NULL, &err), SSK_OK);
        deform(irs, out, skin);
        ssk_attach_weights_deform(want, nv, mv.influence_count, slots, ab, 1, 0, NULL);
        double diff = tu_max_abs_diff(out, want, 3 * nv);
        if (!(diff < TOL)) fail_msg("pose %d: IRS graph vs kernels differ by %g", k, diff);
        deform(rigid, out, skin);
        deform(lbs, want, skin);
        diff = tu_max_abs_diff(out, want, 3 * nv);
        if (!(diff < TOL)) fail_msg("pose %d: rigid (weights) vs LBS differ by %g", k, diff);
        deform(adjust, out, skin);
        ssk_attach_weights_deform(want, nv, mv.influence_count, slots, ab, 1, 1, rest_ab);
        diff = tu_max_abs_diff(out, want, 3 * nv);
        if (!(diff < TOL)) fail_msg("pose %d: IRS + length adjustment differs by %g", k, diff);
    }
    for (int b = 0; b < 3; ++b) tu_mat4_identity(skin + 16 * b);
    deform(adjust, out, skin);
    if (!(tu_max_abs_diff(out, mv.positions, 3 * nv) < 1e-5))
        fail_msg("IRS + length adjustment at rest moves the mesh by %g",
                 tu_max_abs_diff(out, mv.positions, 3 * nv));
    ssk_deformer_destroy(adjust);
    ssk_graph_destroy(adjust_graph);
    ssk_deformer_destroy(irs);
    ssk_deformer_destroy(rigid);
    ssk_deformer_destroy(lbs);
    ssk_binding_destroy(binding);
    free(out);
    free(want);
    free(slots);
    ssk_rig_destroy(rig);
}

/* --method rigid / irs are one-node graphs; with no binding given the
 * deformer binds with the defaults, the same as binding explicitly. */
static void test_method_shorthands_bind_by_default(void **state)
{
    const backend_case *c = backend_of(state);
    ssk_rig *rig = limb();
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_binding *binding = NULL;
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    assert_int_equal(ssk_binding_create(&binding, rig, &params, NULL), SSK_OK);
    float skin[48], *a = malloc(3 * nv * sizeof(float)), *b = malloc(3 * nv * sizeof(float));
    pose(skin, 2.0f);
    for (ssk_method m = SSK_METHOD_RIGID; m <= SSK_METHOD_IRS; ++m) {
        ssk_deformer *implicit = make(c, rig, NULL, m, NULL);
        ssk_deformer *explicit_ = make(c, rig, NULL, m, binding);
        deform(implicit, a, skin);
        deform(explicit_, b, skin);
        assert_memory_equal(a, b, 3 * nv * sizeof(float));
        ssk_deformer_destroy(implicit);
        ssk_deformer_destroy(explicit_);
    }
    ssk_binding_destroy(binding);
    free(a);
    free(b);
    ssk_rig_destroy(rig);
}

/* IRS through the deformer: at rest every vertex stays where it is (the
 * length adjustment targets rest distances); under a 90-degree twist the
 * joint ring keeps its radius (no candy wrapper). */
static void test_irs_rest_exact_and_twist_keeps_radius(void **state)
{
    const backend_case *c = backend_of(state);
    ssk_rig *rig = tu_make_limb(41, 24, 2, 2.0f, 0.25f, 0.5f, 4);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    ssk_deformer *d = make(c, rig, NULL, SSK_METHOD_IRS, NULL);
    float skin[32], *out = malloc(3 * nv * sizeof(float));
    tu_mat4_identity(skin);
    tu_mat4_identity(skin + 16);
    deform(d, out, skin);
    assert_true(tu_max_abs_diff(out, mv.positions, 3 * nv) < TOL);
    const float y[3] = {0, 1, 0}, joint[3] = {0, 1, 0};
    tu_mat4_rotation(skin + 16, y, PI_F, joint); /* 180-degree twist */
    deform(d, out, skin);
    /* the ring at the joint: vertices 20 * 24 .. + 24 (y = 1) */
    for (uint32_t k = 0; k < 24; ++k) {
        const float *p = out + 3 * (20 * 24 + k);
        const double r = sqrt((double)p[0] * p[0] + (double)p[2] * p[2]);
        if (!(r > 0.9 * 0.25)) fail_msg("joint ring vertex %u: radius %g", k, r);
    }
    ssk_deformer_destroy(d);
    free(out);
    ssk_rig_destroy(rig);
}

/* A spring node whose every stiffness is zero exerts no force: its output
 * is its input, the rigid first stage, exactly (equal values; the node's
 * first pass moves nothing and meets the displacement threshold), on both
 * backends. */
static void test_spring_zero_stiffness_is_first_stage(void **state)
{
    const backend_case *c = backend_of(state);
    ssk_rig *rig = limb();
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_binding *binding = NULL;
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    assert_int_equal(ssk_binding_create(&binding, rig, &params, NULL), SSK_OK);
    ssk_graph *spring = parse("{\"version\": 1, \"nodes\": ["
                              "{\"id\": \"skin\", \"type\": \"skinning\", \"method\": \"rigid\"},"
                              "{\"id\": \"relax\", \"type\": \"spring\", \"stiffness\": "
                              "{\"surface\": 0, \"length\": 0, \"torsion\": 0, \"bone\": 0,"
                              " \"edit\": 0}},"
                              "{\"id\": \"out\", \"type\": \"output\"}],"
                              "\"edges\": [{\"from\": \"skin\", \"to\": \"relax\"},"
                              "{\"from\": \"relax\", \"to\": \"out\"}]}",
                              rig);
    ssk_deformer *ds = make(c, rig, spring, SSK_METHOD_LBS, binding);
    ssk_deformer *dr = make(c, rig, NULL, SSK_METHOD_RIGID, binding);
    float skin[48], *a = malloc(3 * nv * sizeof(float)), *b = malloc(3 * nv * sizeof(float));
    for (int k = 0; k < 3; ++k) {
        pose(skin, 0.7f * (float)k);
        deform(ds, a, skin);
        deform(dr, b, skin);
        for (uint32_t i = 0; i < 3 * nv; ++i)
            if (!(a[i] == b[i])) fail_msg("pose %d, row %u: spring %.9g, rigid %.9g", k, i / 3, a[i], b[i]);
        ssk_spring_report r;
        ssk_deformer_spring_report(ds, &r);
        assert_int_equal(r.iterations, 1);
        assert_true(r.converged);
        assert_true(r.residual == 0.0f && r.energy == 0.0);
        /* nothing moved: nothing unsettled (the CPU keeps the per-vertex
         * settling; GL says it does not) */
        float *u = malloc(nv * sizeof(float));
        ssk_error err = {0};
        assert_int_equal(ssk_deformer_spring_unsettled(ds, u, nv - 1, &err),
                         SSK_ERROR_INVALID_ARGUMENT);
        assert_int_equal(ssk_deformer_spring_unsettled(ds, NULL, nv, &err),
                         SSK_ERROR_INVALID_ARGUMENT);
        const ssk_status st = ssk_deformer_spring_unsettled(ds, u, nv, &err);
        if (ssk_deformer_backend(ds) == SSK_BACKEND_GL) {
            assert_int_equal(st, SSK_ERROR_UNSUPPORTED);
        } else {
            assert_int_equal(st, SSK_OK);
            for (uint32_t i = 0; i < nv; ++i) assert_true(u[i] == 0.0f);
        }
        free(u);
    }
    ssk_deformer_destroy(ds);
    ssk_deformer_destroy(dr);
    ssk_graph_destroy(spring);
    ssk_binding_destroy(binding);
    free(a);
    free(b);
    ssk_rig_destroy(rig);
}

/* A binding made for another rig, or a graph validated against another
 * skeleton, is refused with its status. */
static void test_mismatched_binding_and_graph(void **state)
{
    const backend_case *c = backend_of(state);
    ssk_rig *rig = limb();
    ssk_rig *other = tu_make_limb(20, 16, 2, 2.0f, 0.3f, 0.6f, 4);
    ssk_binding *binding = NULL;
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    assert_int_equal(ssk_binding_create(&binding, other, &params, NULL), SSK_OK);
    ssk_deformer *d = NULL;
    ssk_error err = {0};
    ssk_deformer_desc desc = {.method = SSK_METHOD_IRS, .backend = c->backend, .gl_context = c->gl,
                              .binding = binding};
    assert_int_equal(ssk_deformer_create(&d, rig, &desc, &err), SSK_ERROR_BINDING_MISMATCH);
    assert_null(d);
    ssk_graph *g = parse("{\"version\": 1, \"nodes\": ["
                         "{\"id\": \"skin\", \"type\": \"skinning\", \"method\": \"lbs\"},"
                         "{\"id\": \"out\", \"type\": \"output\"}],"
                         "\"edges\": [{\"from\": \"skin\", \"to\": \"out\"}]}",
                         other);
    desc.graph = g;
    desc.binding = NULL;
    assert_int_equal(ssk_deformer_create(&d, rig, &desc, &err), SSK_ERROR_GRAPH);
    assert_non_null(strstr(err.message, "bones"));
    ssk_graph_destroy(g);
    ssk_binding_destroy(binding);
    ssk_rig_destroy(other);
    ssk_rig_destroy(rig);
}

int main(void)
{
    ssk_error err = {0};
    if (ssk_gl_context_create(&gl_case.gl, &err) != SSK_OK)
        snprintf(gl_unavailable, sizeof gl_unavailable, "%s", err.message);
#define BOTH(f) cmocka_unit_test_prestate(f, &cpu_case), cmocka_unit_test_prestate(f, &gl_case)
    const struct CMUnitTest tests[] = {
        BOTH(test_lbs_normals_graph),
        BOTH(test_irs_radial_chain_follows_keys),
        BOTH(test_weights_attachment_matches_kernels),
        BOTH(test_method_shorthands_bind_by_default),
        BOTH(test_irs_rest_exact_and_twist_keeps_radius),
        BOTH(test_mismatched_binding_and_graph),
        BOTH(test_spring_zero_stiffness_is_first_stage),
    };
#undef BOTH
    int failed = cmocka_run_group_tests_name("deformer graph (cpu, gl)", tests, NULL, NULL);
    ssk_gl_context_destroy(gl_case.gl);
    return failed;
}
