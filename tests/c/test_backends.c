/*
 * test_backends.c — the GL backend against the CPU backend on generated
 * rigs and on BCN_Epileptic.X (the spring deformer's solve included:
 * schemes, edits, frame-dependent mode, divergence); the host's GL context
 * left untouched; GL errors (shader compile failure, no EGL) reported as
 * statuses; AUTO's choice and fallback.
 */
#include "testutil.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/glew.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* CPU and GL agree within this fraction of the bounding-box diagonal. */
#define PARITY_TOL 1e-5
/* Unit normals agree within this absolute difference. */
#define NORMAL_TOL 1e-4

static ssk_gl_context *gl;
static char gl_unavailable[SSK_ERROR_MESSAGE_SIZE];

static const char *gl_renderer(void)
{
    static ssk_gl_info info;
    ssk_gl_context_info(gl, &info, NULL);
    return info.renderer;
}

static void need_gl(void)
{
    if (!gl) {
        print_message("GL test skipped: no GL context can be created: %s\n", gl_unavailable);
        skip();
    }
}

/* The implicit method's composition operators, built once for every
 * deformer of the file (they depend on nothing else). */
static ssk_implicit_operators *implicit_operators(void)
{
    static ssk_implicit_operators *ops;
    ssk_error err = {0};
    if (!ops && ssk_implicit_operators_create(&ops, 0, &err) != SSK_OK)
        fail_msg("%s", err.message);
    return ops;
}

/* `graph` with each spring node's "auto" solver replaced by
 * "multilevel", or NULL when it names none: the comparisons written for the
 * multilevel solver keep it ("auto" is the multigrid on both backends
 * since issue #36: test_spring_parity_multigrid). */
static ssk_graph *with_multilevel(const ssk_graph *graph, const ssk_rig *rig)
{
    static const char *const from = "\"solver\": \"auto\"", *const to = "\"solver\": \"multilevel\"";
    char *json = ssk_graph_to_json(graph);
    assert_non_null(json);
    if (!strstr(json, from)) {
        free(json);
        return NULL;
    }
    size_t count = 0;
    for (const char *at = strstr(json, from); at; at = strstr(at + 1, from)) ++count;
    const size_t size = strlen(json) + count * (strlen(to) - strlen(from)) + 1;
    char *out = malloc(size), *w = out;
    assert_non_null(out);
    const char *r = json;
    for (const char *at = strstr(r, from); at; at = strstr(r, from)) {
        memcpy(w, r, (size_t)(at - r));
        w += at - r;
        memcpy(w, to, strlen(to));
        w += strlen(to);
        r = at + strlen(from);
    }
    strcpy(w, r);
    free(json);
    ssk_graph *named = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&named, out, rig, &err) != SSK_OK) fail_msg("%s", err.message);
    free(out);
    return named;
}

/* The method's deformer on a backend (the spring method's graph with the
 * multilevel solver named: with_multilevel). */
static ssk_deformer *make(const ssk_rig *rig, ssk_method method, ssk_backend backend)
{
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = method, .backend = backend, .gl_context = gl,
                              .implicit_operators = implicit_operators()};
    ssk_error err = {0};
    ssk_graph *graph = NULL;
    if (method == SSK_METHOD_SPRING) {
        ssk_graph *auto_graph = NULL;
        if (ssk_graph_from_method(&auto_graph, method, rig, &err) != SSK_OK)
            fail_msg("%s", err.message);
        graph = with_multilevel(auto_graph, rig);
        ssk_graph_destroy(auto_graph);
        assert_non_null(graph);
        desc.graph = graph;
    }
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    ssk_graph_destroy(graph);
    return d;
}

/* Deforms with both backends and both methods, compares positions,
 * normals and the max-displacement reduction. */
static void compare_backends(const ssk_rig *rig, const float *skin, const float *objects,
                             const float *reference)
{
    uint32_t nv = ssk_rig_vertex_count(rig);
    size_t n = 3 * (size_t)nv;
    float *pc = malloc(n * sizeof(float)), *pg = malloc(n * sizeof(float));
    float *nc = malloc(n * sizeof(float)), *ng = malloc(n * sizeof(float));
    ssk_error err = {0};
    for (int m = 0; m < SSK_METHOD_COUNT; ++m) {
        ssk_deformer *c = make(rig, (ssk_method)m, SSK_BACKEND_CPU);
        ssk_deformer *g = make(rig, (ssk_method)m, SSK_BACKEND_GL);
        assert_int_equal(ssk_deformer_backend(g), SSK_BACKEND_GL);
        assert_int_equal(ssk_deformer_deform(c, pc, skin, objects, &err), SSK_OK);
        if (ssk_deformer_deform(g, pg, skin, objects, &err) != SSK_OK) fail_msg("%s", err.message);
        double diag = tu_bbox_diagonal(pc, nv);
        double diff = tu_max_abs_diff(pc, pg, n);
        if (!(diff <= PARITY_TOL * diag))
            fail_msg("%s positions: CPU/GL differ by %g (diagonal %g)",
                     ssk_method_name((ssk_method)m), diff, diag);
        /* The normal kernels compared on the same input: the CPU's normals of
         * the GL positions (positions may differ by an ulp on some GPUs, which
         * turns the normals of tiny triangles noticeably). */
        assert_int_equal(ssk_deformer_normals(c, nc, &err), SSK_OK);
        if (ssk_deformer_normals(g, ng, &err) != SSK_OK) fail_msg("%s", err.message);
        assert_int_equal(ssk_rig_normals(rig, nc, pg, &err), SSK_OK);
        diff = tu_max_abs_diff(nc, ng, n);
        if (!(diff <= NORMAL_TOL)) fail_msg("normals: CPU/GL differ by %g", diff);
        float mc = 0, mg = 0;
        assert_int_equal(ssk_deformer_max_displacement(c, &mc, reference, &err), SSK_OK);
        if (ssk_deformer_max_displacement(g, &mg, reference, &err) != SSK_OK)
            fail_msg("%s", err.message);
        assert_true(mc > 0.0f);
        if (!(fabs(mc - mg) <= PARITY_TOL * diag)) fail_msg("max displacement %g vs %g", mc, mg);
        ssk_deform_timing t;
        ssk_deformer_timing(g, &t);
        assert_true(t.compute_seconds > 0.0 && t.upload_seconds >= 0.0 && t.readback_seconds > 0.0);
        ssk_deformer_destroy(c);
        ssk_deformer_destroy(g);
    }
    free(pc);
    free(pg);
    free(nc);
    free(ng);
}

/* Every joint bent about Z by `bend` sin(phase + b) and twisted about Y by
 * `twist` cos(phase + 0.7 b). */
static void pose_chain_by(float *skin, uint32_t bones, float bone_length, float phase,
                          float bend_amount, float twist_amount)
{
    float global[16];
    tu_mat4_identity(global);
    for (uint32_t b = 0; b < bones; ++b) {
        const float head[3] = {0, bone_length * (float)b, 0};
        const float z[3] = {0, 0, 1}, y[3] = {0, 1, 0};
        float bend[16], twist[16], local[16];
        tu_mat4_rotation(bend, z, bend_amount * sinf(phase + (float)b), head);
        tu_mat4_rotation(twist, y, twist_amount * cosf(phase + 0.7f * (float)b), head);
        tu_mat4_mul(local, bend, twist);
        tu_mat4_mul(global, global, local);
        memcpy(skin + 16 * b, global, sizeof global);
    }
}

static void pose_chain(float *skin, uint32_t bones, float bone_length, float phase)
{
    pose_chain_by(skin, bones, bone_length, phase, 0.5f, 1.9f);
}

static void test_parity_generated_limb(void **state)
{
    (void)state;
    need_gl();
    ssk_rig *rig = tu_make_limb(120, 48, 6, 6.0f, 0.4f, 0.8f, 4);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    float skin[16 * 6];
    for (int k = 0; k < 3; ++k) {
        pose_chain(skin, 6, 1.0f, 0.9f * (float)k);
        compare_backends(rig, skin, NULL, mv.positions);
    }
    ssk_rig_destroy(rig);
}

/* Two meshes with object matrices (pre/post path), 3 influences (general
 * DQS path) and a scaled bone (Blender's scale-matrix path). */
static void test_parity_multi_mesh_scaled(void **state)
{
    (void)state;
    need_gl();
    enum { NV = 500, B = 3 };
    float pos[3 * NV], w[3 * NV], bind[16 * B], obj0[16], obj1[16], rot[16];
    int32_t idx[3 * NV], parents[B] = {-1, 0, 1}, tri[3 * (NV - 2)];
    unsigned seed = 7u;
#define RND() ((seed = seed * 1664525u + 1013904223u), (float)(seed >> 8) / 16777216.0f)
    for (int v = 0; v < NV; ++v) {
        for (int k = 0; k < 3; ++k) {
            pos[3 * v + k] = 2 * RND() - 1;
            idx[3 * v + k] = (v + k) % B;
            w[3 * v + k] = RND();
        }
    }
    for (int f = 0; f < NV - 2; ++f) {
        tri[3 * f] = f;
        tri[3 * f + 1] = f + 1;
        tri[3 * f + 2] = f + 2;
    }
#undef RND
    for (int b = 0; b < B; ++b) tu_mat4_translation(bind + 16 * b, 0, 0.5f * (float)b, 0);
    const float axis[3] = {0.6f, 0.8f, 0};
    const float pivot[3] = {0.1f, 0.2f, 0.3f};
    tu_mat4_translation(obj0, 0.5f, 0, 0);
    tu_mat4_rotation(rot, axis, 0.4f, pivot);
    tu_mat4_mul(obj1, obj0, rot);
    ssk_skeleton_desc sk = {B, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md[2] = {{"a", NV, pos, NV - 2, tri, 3, idx, w, obj0},
                           {"b", NV, pos, NV - 2, tri, 3, idx, w, obj1}};
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &sk, md, 2, NULL), SSK_OK);
    float skin[16 * B], scale[16], objects[32], reference[6 * NV];
    const float z[3] = {0, 0, 1};
    tu_mat4_rotation(skin, z, 0.3f, pivot);
    tu_mat4_rotation(skin + 16, axis, 2.8f, pivot);
    tu_mat4_scale(scale, 1.5f, 0.75f, 1.0f, pivot);
    tu_mat4_rotation(rot, z, -1.0f, pivot);
    tu_mat4_mul(skin + 32, rot, scale);
    tu_mat4_translation(objects, 0.5f, 0.1f, 0);
    memcpy(objects + 16, obj1, sizeof obj1);
    memcpy(reference, pos, sizeof pos);
    memcpy(reference + 3 * NV, pos, sizeof pos);
    compare_backends(rig, skin, objects, reference);
    compare_backends(rig, skin, NULL, reference);
    ssk_rig_destroy(rig);
}

static void test_parity_bcn_epileptic(void **state)
{
    (void)state;
    need_gl();
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&scene, SSK_MODELS_DIR "/X/BCN_Epileptic.X", &err), SSK_OK);
    const ssk_rig *rig = ssk_scene_rig(scene);
    uint32_t nb = ssk_rig_bone_count(rig), nm = ssk_rig_mesh_count(rig);
    uint32_t nv = ssk_rig_vertex_count(rig);
    float *skin = malloc(16 * nb * sizeof(float)), *obj = malloc(16 * nm * sizeof(float));
    float *rest = malloc(3 * nv * sizeof(float));
    for (uint32_t m = 0; m < nm; ++m) {
        ssk_mesh_view mv;
        ssk_rig_mesh(rig, m, &mv, NULL);
        memcpy(rest + 3 * mv.first_vertex, mv.positions, 3 * mv.vertex_count * sizeof(float));
    }
    const int frames[] = {0, 17, 33, 50, 79};
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; ++i) {
        assert_int_equal(ssk_scene_sample(scene, 0, frames[i] / 24.0, skin, obj, &err), SSK_OK);
        compare_backends(rig, skin, obj, rest);
    }
    free(skin);
    free(obj);
    free(rest);
    ssk_scene_destroy(scene);
}

/* --- spring deformer: the GL solve against the CPU solve ------------------
 * The same graph on both backends from the same binding. With the fixed
 * iteration count ("iterations") both run the same passes whatever the
 * rounding; the GL kernels repeat the CPU's arithmetic operation by
 * operation (shaders/spring_*.comp) and take the CPU's own decisions
 * (ssk_spring_watch_pass) on the same reductions, so on llvmpipe the
 * positions are the CPU's bit for bit and the adaptive schemes stop at the
 * same pass. Poses are moderate or the passes few: where the solve is
 * ill-conditioned (the default spring on compare_backends' strongly
 * twisted 6-bone limb, pose 0: a one-ulp change of one skinning matrix
 * moves a vertex near the twisted joint by 8e-4 after 50 CPU passes and
 * 2e-2 after 80, a torsion mode growing ~1.3x per pass) only bit-identical
 * arithmetic agrees within PARITY_TOL. */

/* Spring energies agree within this relative difference plus
 * SPRING_ENERGY_FLOOR (model units^2 per unit stiffness): near an
 * equilibrium the energy is a sum of squares of small residuals, so on a
 * device whose division or square root rounds differently a position's
 * last bit moves it by far more than its own relative rounding. On
 * llvmpipe (bit-identical iterates) only the summation order differs: both
 * sum the same float terms in double precision, SPRING_EXACT_ENERGY_TOL. */
#define SPRING_ENERGY_TOL 1e-4
#define SPRING_ENERGY_FLOOR 1e-8
#define SPRING_EXACT_ENERGY_TOL 1e-12
/* Relative agreement of the residuals off the bitwise path (spring_compare). */
#define SPRING_RESIDUAL_REL 0.05
/* Off the bitwise path a diverging solve may stop at another pass on each
 * backend: its iterate grows without bound from rounding noise, which
 * differs there, and the watch's growth streak ends when it ends (on an
 * NVIDIA H200, Chebyshev: 56 passes on the CPU, 45 to 58 on GL as the
 * device's energy sums changed order). The reason and the kept iterate
 * (the last good one) are compared, not the pass. */

/* msg with the number after "iteration " replaced by "N" (the divergence
 * message without its pass), into out. */
static void without_iteration(char *out, size_t size, const char *msg)
{
    const char *at = strstr(msg, "iteration ");
    if (!at) {
        snprintf(out, size, "%s", msg);
        return;
    }
    at += strlen("iteration ");
    const char *rest = at;
    while (*rest >= '0' && *rest <= '9') ++rest;
    snprintf(out, size, "%.*sN%s", (int)(at - msg), msg, rest);
}

/* A rigid first stage relaxed by one spring node with the given extra JSON
 * members (may be ""). */
static ssk_graph *spring_graph(const ssk_rig *rig, const char *members)
{
    /* without a solver: the multilevel one where it applies, and without a
     * convergence the paper's displacement rule: the defaults these
     * comparisons were written for ("auto" is a different solver on each
     * backend, issue #36; the relative rule's parity is
     * test_spring_parity_schemes' "relative") */
    const bool named = strstr(members, "\"solver\"") || strstr(members, "energy") ||
                       strstr(members, "semi_implicit");
    const bool rule = strstr(members, "\"convergence\"") != NULL;
    char *with = NULL;
    if (!named || !rule) {
        const size_t n = strlen(members) + 96;
        with = malloc(n);
        assert_non_null(with);
        snprintf(with, n, "%s%s%s%s%s", members, members[0] && !named ? ", " : "",
                 named ? "" : "\"solver\": \"multilevel\"",
                 (members[0] || !named) && !rule ? ", " : "",
                 rule ? "" : "\"convergence\": \"displacement\"");
        members = with;
    }
    const size_t size = strlen(members) + 512;
    char *json = malloc(size);
    snprintf(json, size,
             "{\"version\": 1, \"nodes\": ["
             "{\"id\": \"skin\", \"type\": \"skinning\", \"method\": \"rigid\"},"
             "{\"id\": \"relax\", \"type\": \"spring\"%s%s},"
             "{\"id\": \"out\", \"type\": \"output\"}],"
             "\"edges\": [{\"from\": \"skin\", \"to\": \"relax\"},"
             "{\"from\": \"relax\", \"to\": \"out\"}]}",
             members[0] ? ", " : "", members);
    free(with);
    ssk_graph *g = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&g, json, rig, &err) != SSK_OK) fail_msg("graph: %s", err.message);
    free(json);
    return g;
}

typedef struct spring_pair {
    ssk_binding *binding;
    ssk_deformer *a, *b; /* CPU and GL (spring_pair_make), or two GL (env_pair_make) */
    float *pa, *pb;
    uint32_t nv;
    /* the spring repeats the CPU's arithmetic on llvmpipe bit for bit:
     * every solver but the multilevel one, whose restriction sums a slab's
     * rows in another order on each backend */
    int bitwise;
} spring_pair;

/* A pair's default binding and position buffers (its deformers: the
 * caller's). */
static spring_pair pair_begin(const ssk_rig *rig)
{
    spring_pair p = {0};
    p.nv = ssk_rig_vertex_count(rig);
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    ssk_error err = {0};
    if (ssk_binding_create(&p.binding, rig, &bp, &err) != SSK_OK) fail_msg("%s", err.message);
    p.pa = malloc(3 * (size_t)p.nv * sizeof(float));
    p.pb = malloc(3 * (size_t)p.nv * sizeof(float));
    return p;
}

static spring_pair spring_pair_make(const ssk_rig *rig, const ssk_graph *graph)
{
    ssk_graph *named = with_multilevel(graph, rig);
    if (named) graph = named;
    spring_pair p = pair_begin(rig);
    ssk_error err = {0};
    ssk_deformer_desc dc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU, .graph = graph,
                            .binding = p.binding};
    ssk_deformer_desc dg = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_GL, .gl_context = gl,
                            .graph = graph, .binding = p.binding};
    if (ssk_deformer_create(&p.a, rig, &dc, &err) != SSK_OK) fail_msg("%s", err.message);
    if (ssk_deformer_create(&p.b, rig, &dg, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(ssk_deformer_backend(p.b), SSK_BACKEND_GL);
    char *json = ssk_graph_to_json(graph);
    p.bitwise = !strstr(json, "\"solver\": \"multilevel\"");
    free(json);
    ssk_graph_destroy(named);
    return p;
}

static void spring_pair_free(spring_pair *p)
{
    ssk_deformer_destroy(p->a);
    ssk_deformer_destroy(p->b);
    ssk_binding_destroy(p->binding);
    free(p->pa);
    free(p->pb);
}

/* Frame `frame` deformed by both deformers of the pair into pa and pb:
 * their statuses and errors. */
static void deform_both(spring_pair *p, const float *skin, const float *objects, double frame,
                        ssk_status *sa, ssk_error *ea, ssk_status *sb, ssk_error *eb)
{
    ssk_deformer_set_frame(p->a, frame);
    ssk_deformer_set_frame(p->b, frame);
    *sa = ssk_deformer_deform(p->a, p->pa, skin, objects, ea);
    *sb = ssk_deformer_deform(p->b, p->pb, skin, objects, eb);
}

/* Frame `frame` on both backends: the same status (and divergence
 * message), positions within PARITY_TOL of the diagonal, the same
 * iteration count (or, off llvmpipe, one pass apart: below) and
 * convergence, energies within SPRING_ENERGY_TOL (on llvmpipe:
 * bit-identical positions).
 * Returns the GL report. */
static ssk_spring_report spring_compare(spring_pair *p, const float *skin, const float *objects,
                                        double frame, const char *what)
{
    ssk_error ec = {0}, eg = {0};
    ssk_status sc, sg;
    deform_both(p, skin, objects, frame, &sc, &ec, &sg, &eg);
    if (sc != SSK_OK && sc != SSK_ERROR_SPRING_DIVERGED) fail_msg("%s: CPU: %s", what, ec.message);
    if (sg != sc)
        fail_msg("%s: CPU %s (%s), GL %s (%s)", what, ssk_status_name(sc), ec.message,
                 ssk_status_name(sg), eg.message);
    /* llvmpipe rounds every operation as IEEE-754 requires (division and
     * square root included) and the kernels do the CPU's operations in its
     * order: the iterates are the CPU's bit for bit, and so are the
     * decisions. */
    const int exact = p->bitwise && strstr(gl_renderer(), "llvmpipe") != NULL;
    const bool diverged = sc == SSK_ERROR_SPRING_DIVERGED;
    if (sc != SSK_OK) {
        char mc[SSK_ERROR_MESSAGE_SIZE], mg[SSK_ERROR_MESSAGE_SIZE];
        without_iteration(mc, sizeof mc, ec.message);
        without_iteration(mg, sizeof mg, eg.message);
        if (exact || !diverged ? strcmp(ec.message, eg.message) != 0 : strcmp(mc, mg) != 0)
            fail_msg("%s: CPU '%s', GL '%s'", what, ec.message, eg.message);
    }
    const size_t n = 3 * (size_t)p->nv;
    for (size_t i = 0; i < n; ++i)
        if (!isfinite(p->pb[i])) fail_msg("%s: GL position %zu is not finite", what, i / 3);
    const double diag = tu_bbox_diagonal(p->pa, p->nv);
    const double diff = tu_max_abs_diff(p->pa, p->pb, n);
    ssk_spring_report rc, rg;
    ssk_deformer_spring_report(p->a, &rc);
    ssk_deformer_spring_report(p->b, &rg);
    print_message("%s: %u iterations (%s), max |CPU - GL| = %.3g (%.2g of the diagonal), "
                  "energy %.9g vs %.9g\n",
                  what, rg.iterations, rg.converged ? "converged" : "not converged", diff,
                  diff / diag, rc.energy, rg.energy);
    if (exact && diff != 0.0)
        fail_msg("%s: llvmpipe differs from the CPU by %g: the GL kernels no longer repeat "
                 "the CPU's arithmetic", what, diff);
    /* Elsewhere rounding may put a pass's largest step on the other side of
     * an adaptive scheme's threshold on one backend: that one stops a pass
     * earlier or later. The extra pass moves each vertex by at most its own
     * largest step, which the converged reports give (the residual): the
     * positions then agree within that, and the energies are those of
     * neighboring iterates (not compared). */
    const uint32_t gap = rc.iterations > rg.iterations ? rc.iterations - rg.iterations
                                                       : rg.iterations - rc.iterations;
    const bool one_pass = !exact && gap == 1 && rc.converged && rg.converged;
    const bool diverged_apart = !exact && diverged;
    const double slack = one_pass ? fmax(rc.residual, rg.residual) : 0.0;
    if (!(diff <= PARITY_TOL * diag + slack))
        fail_msg("%s: CPU/GL differ by %g (diagonal %g)", what, diff, diag);
    if ((gap != 0 && !one_pass && !diverged_apart) || rc.converged != rg.converged)
        fail_msg("%s: CPU %u iterations (converged %d), GL %u (converged %d)", what,
                 rc.iterations, rc.converged, rg.iterations, rg.converged);
    if (gap != 0) return rg;
    const double energy_tol = exact ? SPRING_EXACT_ENERGY_TOL * fabs(rc.energy)
                                    : SPRING_ENERGY_TOL * fabs(rc.energy) + SPRING_ENERGY_FLOOR;
    if (!(fabs(rc.energy - rg.energy) <= energy_tol))
        fail_msg("%s: energy CPU %.17g, GL %.17g", what, rc.energy, rg.energy);
    /* off llvmpipe's bitwise path the force scheme's residual, the largest
     * force near its threshold, is a difference of nearly equal terms: it
     * agrees relatively (SPRING_RESIDUAL_REL), not within a length. A
     * diverged solve's residual is the last pass's, of an iterate growing
     * without bound, where rounding differences grow with it (on an NVIDIA
     * H200: 42.0 against 26.8 after 56 Chebyshev passes, the kept iterates
     * within 1e-6 of the diagonal): compared only where the arithmetic is
     * the CPU's. */
    const double residual_tol =
        PARITY_TOL * diag + (exact ? 0.0 : SPRING_RESIDUAL_REL * fmax(rc.residual, rg.residual));
    if ((exact || sc == SSK_OK) && !(fabs(rc.residual - rg.residual) <= residual_tol))
        fail_msg("%s: residual CPU %g, GL %g", what, rc.residual, rg.residual);
    return rg;
}

/* 20 fixed iterations on the 6-bone limb (regular vertices of degree 6,
 * cap centers of degree 48), three poses. */
static void test_spring_parity_limb(void **state)
{
    (void)state;
    need_gl();
    ssk_rig *rig = tu_make_limb(120, 48, 6, 6.0f, 0.4f, 0.8f, 4);
    ssk_graph *g = spring_graph(rig, "\"convergence\": \"iterations\", \"max_iterations\": 20");
    spring_pair p = spring_pair_make(rig, g);
    float skin[16 * 6];
    for (int k = 0; k < 3; ++k) {
        pose_chain(skin, 6, 1.0f, 0.9f * (float)k);
        char what[64];
        snprintf(what, sizeof what, "limb pose %d", k);
        const ssk_spring_report r = spring_compare(&p, skin, NULL, 0.0, what);
        assert_int_equal(r.iterations, 20);
        /* the solve did move the first stage: compare with rigid alone */
        assert_true(r.energy > 0.0);
    }
    spring_pair_free(&p);
    ssk_graph_destroy(g);
    ssk_rig_destroy(rig);
}

/* The detail force and the short-edge clusters (core/kernels/spring.c): a
 * limb whose ring 21 lies 1e-4 below ring 22 (16 clusters of two), bent,
 * with the defaults: bit-identical on both backends. */
static void test_spring_parity_clusters(void **state)
{
    (void)state;
    need_gl();
    float ring_y[40];
    for (int r = 0; r < 40; ++r) ring_y[r] = 2.0f * (float)r / 39.0f;
    ring_y[21] = ring_y[22] - 1e-4f;
    ssk_rig *rig = tu_make_limb_rings(40, 16, 2, 2.0f, 0.25f, 0.5f, 4, ring_y);
    ssk_graph *g = spring_graph(rig, "");
    spring_pair p = spring_pair_make(rig, g);
    float skin[32];
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, z, 1.5707963f, joint);
    const ssk_spring_report r = spring_compare(&p, skin, NULL, 0.0, "limb with short edges");
    assert_true(r.energy > 0.0);
    /* the pairs stayed together on GL too (1e-4 apart at rest) */
    for (int s = 0; s < 16; ++s) {
        const float *a = p.pb + 3 * (21 * 16 + s), *b = p.pb + 3 * (22 * 16 + s);
        const float dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
        assert_true(sqrtf(dx * dx + dy * dy + dz * dz) < 2e-4f);
    }
    spring_pair_free(&p);
    ssk_graph_destroy(g);
    ssk_rig_destroy(rig);
}

/* The BCN_Epileptic.X character (several meshes with object matrices). */
typedef struct bcn {
    ssk_scene *scene;
    const ssk_rig *rig;
    float *skin, *obj;
} bcn;

static bcn bcn_load(void)
{
    bcn b = {0};
    ssk_error err = {0};
    if (ssk_scene_import(&b.scene, SSK_MODELS_DIR "/X/BCN_Epileptic.X", &err) != SSK_OK)
        fail_msg("%s", err.message);
    b.rig = ssk_scene_rig(b.scene);
    b.skin = malloc(16 * ssk_rig_bone_count(b.rig) * sizeof(float));
    b.obj = malloc(16 * ssk_rig_mesh_count(b.rig) * sizeof(float));
    return b;
}

static void bcn_sample(bcn *b, int frame)
{
    ssk_error err = {0};
    if (ssk_scene_sample(b->scene, 0, frame / 24.0, b->skin, b->obj, &err) != SSK_OK)
        fail_msg("%s", err.message);
}

static void bcn_free(bcn *b)
{
    free(b->skin);
    free(b->obj);
    ssk_scene_destroy(b->scene);
}

static void test_spring_parity_bcn(void **state)
{
    (void)state;
    need_gl();
    bcn b = bcn_load();
    /* the anchors per skin weight (the default) and from the binding's
     * bone (the device computes both: kernels_spring_anchors.comp), the
     * latter also with the plain solver (bit for bit on llvmpipe) */
    static const char *const attachments[3] = {"weights", "binding", "binding"};
    static const char *const solvers[3] = {"multilevel", "multilevel", "jacobi"};
    for (int a = 0; a < 3; ++a) {
        char members[192];
        snprintf(members, sizeof members,
                 "\"convergence\": \"iterations\", \"max_iterations\": 20, \"attachment\": "
                 "\"%s\", \"solver\": \"%s\"",
                 attachments[a], solvers[a]);
        ssk_graph *g = spring_graph(b.rig, members);
        spring_pair p = spring_pair_make(b.rig, g);
        const int frames[] = {0, 33, 79};
        for (size_t i = 0; i < sizeof frames / sizeof frames[0]; ++i) {
            bcn_sample(&b, frames[i]);
            char what[64];
            snprintf(what, sizeof what, "BCN frame %d, anchors by %s, %s", frames[i],
                     attachments[a], solvers[a]);
            assert_int_equal(spring_compare(&p, b.skin, b.obj, frames[i], what).iterations, 20);
        }
        spring_pair_free(&p);
        ssk_graph_destroy(g);
    }
    bcn_free(&b);
}

/* The Chebyshev acceleration alone (solver "chebyshev", the bitwise
 * path): 30 fixed passes (10 plain, then 20 blended with x_{k-1}) on the
 * limb, and BCN to the default displacement threshold (the same stopping
 * pass on both); then the same with the multilevel correction (the
 * default solver, within PARITY_TOL). */
static void test_spring_parity_chebyshev(void **state)
{
    (void)state;
    need_gl();
    ssk_rig *rig = tu_make_limb(60, 16, 2, 2.0f, 0.25f, 0.5f, 4);
    /* multilevel twice: the GL programs of hardware GPUs ("wide") and of
     * software renderers ("narrow"), whichever this renderer is
     * (SSK_GL_SPRING_ML, core/backends/gl_backend.c ml_wide) */
    static const char *const solvers[3] = {"chebyshev", "multilevel", "multilevel"};
    static const char *const programs[3] = {NULL, "narrow", "wide"};
    for (int v = 0; v < 3; ++v) {
        char members[160], what[64];
        snprintf(members, sizeof members,
                 "\"convergence\": \"iterations\", \"max_iterations\": 30, "
                 "\"chebyshev_rho\": 0.99, \"solver\": \"%s\"",
                 solvers[v]);
        if (programs[v]) setenv("SSK_GL_SPRING_ML", programs[v], 1);
        ssk_graph *g = spring_graph(rig, members);
        spring_pair p = spring_pair_make(rig, g);
        unsetenv("SSK_GL_SPRING_ML");
        assert_int_equal(p.bitwise, v == 0);
        float skin[32];
        pose_chain(skin, 2, 1.0f, 1.2f);
        snprintf(what, sizeof what, "limb, %s%s%s", solvers[v], programs[v] ? ", GL " : "",
                 programs[v] ? programs[v] : "");
        assert_int_equal(spring_compare(&p, skin, NULL, 0.0, what).iterations, 30);
        spring_pair_free(&p);
        ssk_graph_destroy(g);
    }
    ssk_rig_destroy(rig);

    bcn b = bcn_load();
    for (int v = 0; v < 3; ++v) {
        char members[160], what[64];
        snprintf(members, sizeof members,
                 "\"max_iterations\": 400, \"chebyshev_rho\": 0.99, \"solver\": \"%s\"",
                 solvers[v]);
        if (programs[v]) setenv("SSK_GL_SPRING_ML", programs[v], 1);
        ssk_graph *g = spring_graph(b.rig, members);
        spring_pair p = spring_pair_make(b.rig, g);
        unsetenv("SSK_GL_SPRING_ML");
        bcn_sample(&b, 12);
        snprintf(what, sizeof what, "BCN frame 12, %s%s%s", solvers[v], programs[v] ? ", GL " : "",
                 programs[v] ? programs[v] : "");
        const ssk_spring_report r = spring_compare(&p, b.skin, b.obj, 12.0, what);
        assert_true(r.converged && r.iterations > SSK_SPRING_CHEBYSHEV_WARMUP);
        spring_pair_free(&p);
        ssk_graph_destroy(g);
    }
    bcn_free(&b);
}

/* The surface multigrid (the default solver, issue #36) under the relative
 * rule (the default): on GL the force passes run on the device and the
 * correction on the host (gl_backend.c "The multigrid"), so on llvmpipe
 * the passes, the stopping pass and the iterates are the CPU's bit for
 * bit. BCN_Epileptic.X at rest (one pass), mid-animation and at its
 * strongest pose; the twisted limb to the rule and for a fixed count; and
 * the default method's graph as it is ("auto", the multigrid on both
 * backends; its IRS first stage is not bitwise, so within PARITY_TOL). */
static void test_spring_parity_multigrid(void **state)
{
    (void)state;
    need_gl();
    ssk_rig *rig = tu_make_limb(60, 16, 2, 2.0f, 0.25f, 0.5f, 4);
    static const char *const limb_cases[2] = {
        "\"solver\": \"multigrid\", \"convergence\": \"relative\"",
        "\"solver\": \"multigrid\", \"convergence\": \"iterations\", \"max_iterations\": 25"};
    for (int c = 0; c < 2; ++c) {
        ssk_graph *g = spring_graph(rig, limb_cases[c]);
        spring_pair p = spring_pair_make(rig, g);
        assert_true(p.bitwise);
        float skin[32];
        pose_chain(skin, 2, 1.0f, 1.2f);
        const ssk_spring_report r =
            spring_compare(&p, skin, NULL, 0.0, c ? "limb, multigrid, 25 passes" : "limb, multigrid");
        assert_true(r.converged && r.iterations > 1);
        spring_pair_free(&p);
        ssk_graph_destroy(g);
    }
    ssk_rig_destroy(rig);

    bcn b = bcn_load();
    ssk_graph *g = spring_graph(b.rig, "\"solver\": \"multigrid\", \"convergence\": \"relative\"");
    spring_pair p = spring_pair_make(b.rig, g);
    const int frames[] = {0, 33, 79};
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; ++i) {
        bcn_sample(&b, frames[i]);
        char what[64];
        snprintf(what, sizeof what, "BCN frame %d, multigrid", frames[i]);
        const ssk_spring_report r = spring_compare(&p, b.skin, b.obj, frames[i], what);
        assert_true(r.converged);
    }
    spring_pair_free(&p);
    ssk_graph_destroy(g);
    bcn_free(&b);

    /* the default: "auto" is the multigrid on both */
    ssk_rig *limb = tu_make_limb(60, 16, 2, 2.0f, 0.25f, 0.5f, 4);
    ssk_graph *dg = NULL;
    ssk_error err = {0};
    if (ssk_graph_from_method(&dg, SSK_METHOD_SPRING, limb, &err) != SSK_OK)
        fail_msg("%s", err.message);
    char *json = ssk_graph_to_json(dg);
    assert_non_null(strstr(json, "\"solver\": \"auto\""));
    free(json);
    spring_pair q = pair_begin(limb);
    ssk_deformer_desc dc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU, .graph = dg,
                            .binding = q.binding};
    ssk_deformer_desc dgl = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_GL,
                             .gl_context = gl, .graph = dg, .binding = q.binding};
    if (ssk_deformer_create(&q.a, limb, &dc, &err) != SSK_OK) fail_msg("%s", err.message);
    if (ssk_deformer_create(&q.b, limb, &dgl, &err) != SSK_OK) fail_msg("%s", err.message);
    q.bitwise = 0; /* its IRS first stage differs by up to an ulp on llvmpipe */
    float skin[32];
    pose_chain(skin, 2, 1.0f, 1.2f);
    const ssk_spring_report r = spring_compare(&q, skin, NULL, 0.0, "limb, the default graph");
    assert_true(r.converged);
    spring_pair_free(&q);
    ssk_graph_destroy(dg);
    ssk_rig_destroy(limb);
}

/* examples/graphs/spring_edit.json as it is (default displacement scheme,
 * a keyed surface edit: weight 0 at frame 0, so no edit at all there, then
 * partly and fully active), plus the same graph with a fixed count. */
static void test_spring_parity_edit_bcn(void **state)
{
    (void)state;
    need_gl();
    bcn b = bcn_load();
    ssk_graph *g = NULL;
    ssk_error err = {0};
    /* spring_edit.json with rigid skinning instead of its IRS first stage:
     * IRS itself differs from the CPU by up to an ulp on llvmpipe (its
     * sines and cosines), which the springs would carry into every
     * iterate; this test is about the spring kernels' arithmetic */
    size_t size = 0;
    char *text = (char *)tu_read_file(SSK_SOURCE_DIR "/examples/graphs/spring_edit.json", &size);
    assert_non_null(text);
    const char *irs = "\"method\": \"irs\"";
    char *at = strstr(text, irs);
    assert_non_null(at);
    char *json = malloc(size + 16);
    snprintf(json, size + 16, "%.*s\"method\": \"rigid\"%s", (int)(at - text), text,
             at + strlen(irs));
    if (ssk_graph_parse(&g, json, b.rig, &err) != SSK_OK) fail_msg("%s", err.message);
    free(text);
    free(json);
    spring_pair p = spring_pair_make(b.rig, g);
    const int frames[] = {0, 10, 20, 33};
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; ++i) {
        bcn_sample(&b, frames[i]);
        char what[64];
        snprintf(what, sizeof what, "BCN edit frame %d", frames[i]);
        spring_compare(&p, b.skin, b.obj, frames[i], what);
    }
    /* the edit moved its kinematic vertices on GL: with the pose of frame
     * 20, kinematic vertex 473 at frame 20 (weight 1) and at frame 40
     * (weight 0: no edit) are a good part of the 0.02 push apart */
    float *edited = malloc(3 * (size_t)p.nv * sizeof(float));
    bcn_sample(&b, 20);
    spring_compare(&p, b.skin, b.obj, 20.0, "BCN edit frame 20 again");
    memcpy(edited, p.pb, 3 * (size_t)p.nv * sizeof(float));
    spring_compare(&p, b.skin, b.obj, 40.0, "BCN edit frame 40 (weight 0), pose of 20");
    const float *a = edited + 3 * 473, *c = p.pb + 3 * 473;
    const double moved = sqrt((double)(a[0] - c[0]) * (a[0] - c[0]) +
                              (double)(a[1] - c[1]) * (a[1] - c[1]) +
                              (double)(a[2] - c[2]) * (a[2] - c[2]));
    print_message("edit: kinematic vertex 473 moved %g by the edit on GL\n", moved);
    assert_true(moved > 0.005);
    free(edited);
    spring_pair_free(&p);
    ssk_graph_destroy(g);
    bcn_free(&b);
}

/* Frame-dependent mode over 3 consecutive frames (each starting from the
 * previous output moved by the differential bone transforms), explicit and
 * semi-implicit (velocities carried over); then a frame that does not
 * follow starts from the first stage again. */
static void test_spring_parity_frame_dependent(void **state)
{
    (void)state;
    need_gl();
    ssk_rig *rig = tu_make_limb(60, 24, 4, 4.0f, 0.4f, 0.8f, 4);
    const char *variants[] = {
        "\"convergence\": \"iterations\", \"max_iterations\": 20, \"mode\": \"frame_dependent\"",
        "\"convergence\": \"iterations\", \"max_iterations\": 20, \"mode\": \"frame_dependent\", "
        "\"integrator\": \"semi_implicit\", \"damping\": 0.2"};
    ssk_graph *gi = spring_graph(rig, "\"convergence\": \"iterations\", \"max_iterations\": 20");
    spring_pair ind = spring_pair_make(rig, gi);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
        ssk_graph *g = spring_graph(rig, variants[v]);
        spring_pair p = spring_pair_make(rig, g);
        float skin[16 * 4];
        const double frames[] = {0, 1, 2, 5};
        for (int f = 0; f < 4; ++f) {
            pose_chain_by(skin, 4, 1.0f, 0.1f * (float)frames[f], 0.6f, 0.6f);
            char what[96];
            snprintf(what, sizeof what, "frame-dependent (%s) frame %g",
                     v ? "semi-implicit" : "explicit", frames[f]);
            spring_compare(&p, skin, NULL, frames[f], what);
            if (v == 0) {
                /* continuation changed the result (frames 1, 2), a restart
                 * did not (frames 0, 5): against the frame-independent GL
                 * solve of the same pose */
                spring_compare(&ind, skin, NULL, frames[f], "frame-independent");
                const double d = tu_max_abs_diff(p.pb, ind.pb, 3 * (size_t)p.nv);
                if (frames[f] == 1 || frames[f] == 2)
                    assert_true(d > 1e-4);
                else
                    assert_true(d == 0.0);
            }
        }
        spring_pair_free(&p);
        ssk_graph_destroy(g);
    }
    spring_pair_free(&ind);
    ssk_graph_destroy(gi);
    ssk_rig_destroy(rig);
}

/* The adaptive schemes on a bend of the 2-bone limb: displacement (the
 * default), force, energy (result x_{k-2}), semi-implicit with the
 * displacement scheme, and a stiffness map; the same iteration count on
 * both backends. */
static void test_spring_parity_schemes(void **state)
{
    (void)state;
    need_gl();
    ssk_rig *rig = tu_make_limb(40, 16, 2, 2.0f, 0.25f, 0.5f, 2);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    /* a surface-stiffness map: 0.5 on the first half of the rows, 2 after */
    size_t size = 64 + 8 * (size_t)nv, used = 0;
    char *map = malloc(size);
    used += (size_t)snprintf(map, size, "\"max_iterations\": 1000, \"stiffness_maps\": {\"surface\": [");
    for (uint32_t i = 0; i < nv; ++i)
        used += (size_t)snprintf(map + used, size - used, "%s%s", i ? "," : "",
                                 i < nv / 2 ? "0.5" : "2");
    snprintf(map + used, size - used, "]}");
    const char *variants[] = {"",
                              "\"max_iterations\": 400",
                              "\"max_iterations\": 400, \"convergence\": \"force\", "
                              "\"threshold\": 0.002",
                              "\"max_iterations\": 2000, \"convergence\": \"energy\", "
                              "\"integrator\": \"semi_implicit\", \"damping\": 0.05",
                              "\"max_iterations\": 100, \"integrator\": \"semi_implicit\", "
                              "\"convergence\": \"iterations\"",
                              map,
                              "\"max_iterations\": 400, \"stiffness\": {\"detail\": 0, "
                              "\"twist\": 0.2}, \"solver\": \"jacobi\"",
                              "\"max_iterations\": 2000, \"convergence\": \"relative\", "
                              "\"solver\": \"chebyshev\""};
    const char *names[] = {"default", "displacement", "force", "energy (semi-implicit)",
                           "semi-implicit", "stiffness map", "twist anchor", "relative"};
    float skin[32];
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, z, 1.5707963f, joint);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
        ssk_graph *g = spring_graph(rig, variants[v]);
        spring_pair p = spring_pair_make(rig, g);
        const ssk_spring_report r = spring_compare(&p, skin, NULL, 0.0, names[v]);
        assert_true(r.iterations > 1);
        /* the defaults' 50 passes do not settle this bend; the others meet
         * their scheme before their max_iterations */
        if (v > 0) assert_true(r.converged);
        spring_pair_free(&p);
        ssk_graph_destroy(g);
    }
    free(map);
    ssk_rig_destroy(rig);
}

/* The three neighbor means at dt k = 1 together diverge (test_spring.c
 * test_divergence_detected; no detail force, whose preconditioner would
 * slow the steps): both backends stop at the same iteration with
 * the same message and keep the same last good iterate. */
static void spring_parity_divergence(const char *extra, const char *what)
{
    ssk_rig *rig = tu_make_limb(40, 16, 2, 2.0f, 0.25f, 0.5f, 2);
    char members[256];
    snprintf(members, sizeof members, "\"stiffness\": {\"surface\": 30, \"length\": 30, "
                                     "\"torsion\": 30, \"detail\": 0}, \"max_iterations\": 2000, "
                                     "\"convergence\": \"iterations\"%s", extra);
    ssk_graph *g = spring_graph(rig, members);
    spring_pair p = spring_pair_make(rig, g);
    float skin[32];
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, z, 1.5707963f, joint);
    ssk_error err = {0};
    assert_int_equal(ssk_deformer_deform(p.b, p.pb, skin, NULL, &err),
                     SSK_ERROR_SPRING_DIVERGED);
    print_message("GL: %s\n", err.message);
    const ssk_spring_report r = spring_compare(&p, skin, NULL, 0.0, what);
    assert_false(r.converged);
    assert_true(r.iterations < 2000);
    spring_pair_free(&p);
    ssk_graph_destroy(g);
    ssk_rig_destroy(rig);
}

/* Divergence on both, also when the Chebyshev acceleration first restarts
 * (the same restarts on both: the watch's own decisions). */
static void test_spring_parity_divergence(void **state)
{
    (void)state;
    need_gl();
    spring_parity_divergence(", \"solver\": \"jacobi\"", "divergence");
    spring_parity_divergence(", \"solver\": \"chebyshev\"", "divergence, Chebyshev");
}

/* Batches (core/backends/gl_backend.c run_spring "Batches"): a GL solve
 * that issues up to 6 passes before each read-back and replays the watch
 * keeps exactly the passes of the one-pass loop. Against the same solve
 * with batches of one (SSK_GL_SPRING_BATCH), on any device (the same
 * kernels on the same inputs): the same positions bit for bit, the same
 * status, iterations, convergence, residual and energy. Cases: the
 * default multilevel solver to the threshold (a stop inside a batch: the
 * passes after it lost), a fixed count, a Chebyshev run that restarts and
 * then diverges (a pass issued with a weight the replay changes: issued
 * again), the force scheme, frame-dependent frames, and BCN frames. */
static ssk_deformer *gl_with_env(const ssk_rig *rig, const ssk_graph *graph,
                                 const ssk_binding *binding, const char *name, const char *value)
{
    setenv(name, value, 1);
    ssk_deformer_desc d = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_GL, .gl_context = gl,
                           .graph = graph, .binding = binding};
    ssk_deformer *out = NULL;
    ssk_error err = {0};
    const ssk_status st = ssk_deformer_create(&out, rig, &d, &err);
    unsetenv(name);
    if (st != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(ssk_deformer_backend(out), SSK_BACKEND_GL);
    return out;
}

/* Two GL deformers of the same graph (a spring_pair: a, b), made with
 * environment variable `name` set to `value_a` and to `value_b`. */
static spring_pair env_pair_make(const ssk_rig *rig, const char *members, const char *name,
                                 const char *value_a, const char *value_b)
{
    spring_pair p = pair_begin(rig);
    ssk_graph *g = spring_graph(rig, members);
    p.a = gl_with_env(rig, g, p.binding, name, value_a);
    p.b = gl_with_env(rig, g, p.binding, name, value_b);
    ssk_graph_destroy(g);
    return p;
}

static spring_pair batch_pair_make(const ssk_rig *rig, const char *members)
{
    return env_pair_make(rig, members, "SSK_GL_SPRING_BATCH", "1", "6");
}

/* One frame on both GL deformers: the same status and message, the same
 * positions bit for bit, the same report; returns it. */
static ssk_spring_report batch_compare(spring_pair *p, const float *skin, const float *objects,
                                       double frame, const char *what)
{
    ssk_error e1 = {0}, e4 = {0};
    ssk_status s1, s4;
    deform_both(p, skin, objects, frame, &s1, &e1, &s4, &e4);
    if (s1 != s4 || (s1 != SSK_OK && strcmp(e1.message, e4.message) != 0))
        fail_msg("%s: first %s (%s), second %s (%s)", what, ssk_status_name(s1),
                 e1.message, ssk_status_name(s4), e4.message);
    if (s1 != SSK_OK && s1 != SSK_ERROR_SPRING_DIVERGED) fail_msg("%s: %s", what, e1.message);
    if (memcmp(p->pa, p->pb, 3 * (size_t)p->nv * sizeof(float)) != 0)
        fail_msg("%s: the positions differ by %g", what,
                 tu_max_abs_diff(p->pa, p->pb, 3 * (size_t)p->nv));
    ssk_spring_report r1, r4;
    ssk_deformer_spring_report(p->a, &r1);
    ssk_deformer_spring_report(p->b, &r4);
    print_message("%s: %u iterations (%s), residual %.6g, both the same\n", what,
                  r1.iterations, r1.converged ? "converged" : "not converged",
                  (double)r1.residual);
    assert_int_equal(r1.iterations, r4.iterations);
    assert_int_equal(r1.converged, r4.converged);
    assert_true(r1.residual == r4.residual);
    assert_true(r1.energy == r4.energy);
    return r1;
}

/* The 2-bone limb of the spring parity tests, its second bone bent by
 * `angle` radians about z at the joint (skin: 2 skinning matrices). */
static ssk_rig *bent_limb(float skin[32], float angle)
{
    ssk_rig *rig = tu_make_limb(40, 16, 2, 2.0f, 0.25f, 0.5f, 2);
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, z, angle, joint);
    return rig;
}

typedef spring_pair (*pair_maker)(const ssk_rig *rig, const char *members);

/* A spring node's members (JSON), a name, and whether it converges. */
typedef struct pair_case {
    const char *members, *what;
    bool converges;
} pair_case;

/* batch_compare of each case on a pair from `make`, one frame. */
static void pair_cases_compare(pair_maker make, const ssk_rig *rig, const float *skin,
                               const pair_case *cases, size_t count)
{
    for (size_t c = 0; c < count; ++c) {
        spring_pair p = make(rig, cases[c].members);
        const ssk_spring_report r = batch_compare(&p, skin, NULL, 0.0, cases[c].what);
        assert_int_equal(r.converged, cases[c].converges);
        spring_pair_free(&p);
    }
}

/* Three frame-dependent frames of the bent limb (each from the previous
 * result), then BCN frames `frames` (each converged), compared by
 * batch_compare on pairs from `make`; `prefix` names them. Frees rig. */
static void pair_frames_compare(pair_maker make, ssk_rig *rig, float skin[32], const int *frames,
                                size_t frame_count, const char *prefix)
{
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    char what[96];
    spring_pair f = make(rig, "\"mode\": \"frame_dependent\"");
    snprintf(what, sizeof what, "%sframe-dependent", prefix);
    for (int k = 0; k < 3; ++k) {
        tu_mat4_rotation(skin + 16, z, 0.5f + 0.3f * (float)k, joint);
        batch_compare(&f, skin, NULL, (double)k, what);
    }
    spring_pair_free(&f);
    ssk_rig_destroy(rig);

    bcn b = bcn_load();
    spring_pair q = make(b.rig, "");
    for (size_t i = 0; i < frame_count; ++i) {
        bcn_sample(&b, frames[i]);
        snprintf(what, sizeof what, "%sBCN frame %d", prefix, frames[i]);
        assert_true(batch_compare(&q, b.skin, b.obj, frames[i], what).converged);
    }
    spring_pair_free(&q);
    bcn_free(&b);
}

static void test_spring_batches(void **state)
{
    (void)state;
    need_gl();
    float skin[32];
    ssk_rig *rig = bent_limb(skin, 2.3561945f); /* 135 degrees */
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    const pair_case cases[] = {
        {"", "default (multilevel) to the threshold", true},
        {"\"convergence\": \"iterations\", \"max_iterations\": 23", "fixed count (its scheme: met)", true},
        {"\"solver\": \"chebyshev\", \"max_iterations\": 400", "chebyshev", true},
        {"\"max_iterations\": 400, \"convergence\": \"force\", \"threshold\": 0.002",
         "force scheme", true},
    };
    pair_cases_compare(batch_pair_make, rig, skin, cases, sizeof cases / sizeof cases[0]);
    /* divergence after Chebyshev restarts (spring_parity_divergence) */
    spring_pair d = batch_pair_make(
        rig, "\"stiffness\": {\"surface\": 30, \"length\": 30, \"torsion\": 30, \"detail\": 0}, "
             "\"max_iterations\": 2000, \"convergence\": \"iterations\", \"solver\": \"chebyshev\"");
    tu_mat4_rotation(skin + 16, z, 1.5707963f, joint);
    batch_compare(&d, skin, NULL, 0.0, "divergence, Chebyshev");
    spring_pair_free(&d);
    const int frames[] = {12, 40, 79};
    pair_frames_compare(batch_pair_make, rig, skin, frames, sizeof frames / sizeof frames[0], "");
}

/* The hardware GPUs' variants of a multilevel pass against each other:
 * the coarse step with its local nodes in shared memory
 * (kernels_spring_ml_coarse_shared.comp) and in the work buffer
 * (kernels_spring_ml_coarse_wide.comp, SSK_GL_SPRING_ML=wide-global); the
 * prolongation fused with the reductions and the next records
 * (kernels_spring_ml_prolong.comp) and as three dispatches
 * (SSK_GL_SPRING_ML=wide-unfused). The same operations in the same order
 * each time, so the same solve bit for bit, on the limb bent 135 degrees
 * and on BCN. */
static void test_spring_wide_variants(void **state)
{
    (void)state;
    need_gl();
    float skin[32];
    ssk_rig *rig = bent_limb(skin, 2.3561945f);
    static const char *const variants[2] = {"wide-global", "wide-unfused"};
    static const char *const names[2] = {"coarse step shared / global",
                                         "prolongation fused / three dispatches"};
    bcn b = bcn_load();
    bcn_sample(&b, 40);
    for (int v = 0; v < 2; ++v) {
        char what[96];
        spring_pair p = env_pair_make(rig, "", "SSK_GL_SPRING_ML", "wide", variants[v]);
        snprintf(what, sizeof what, "limb, %s", names[v]);
        assert_true(batch_compare(&p, skin, NULL, 0.0, what).converged);
        spring_pair_free(&p);
        spring_pair q = env_pair_make(b.rig, "", "SSK_GL_SPRING_ML", "wide", variants[v]);
        snprintf(what, sizeof what, "BCN frame 40, %s", names[v]);
        assert_true(batch_compare(&q, b.skin, b.obj, 40.0, what).converged);
        spring_pair_free(&q);
    }
    ssk_rig_destroy(rig);
    bcn_free(&b);
}

/* The watch on the device (core/backends/gl_backend.c "The watch on the
 * device": the fused multilevel pass decides on each pass on the GPU and
 * the host reads nothing back until the frame is done) against the host's
 * watch (SSK_GL_SPRING_WATCH=host), both with the hardware GPUs' kernels
 * (SSK_GL_SPRING_ML=wide, their default): the same passes, stopping pass,
 * result and report bit for bit, to the threshold, at a fixed count, by
 * the force scheme, through a divergence (its kept iterate), frame after
 * frame, and on BCN. */
static spring_pair watch_pair_make(const ssk_rig *rig, const char *members)
{
    setenv("SSK_GL_SPRING_ML", "wide", 1);
    spring_pair p = env_pair_make(rig, members, "SSK_GL_SPRING_WATCH", "host", "device");
    unsetenv("SSK_GL_SPRING_ML");
    return p;
}

static void test_spring_watch_on_device(void **state)
{
    (void)state;
    need_gl();
    float skin[32];
    ssk_rig *rig = bent_limb(skin, 2.3561945f); /* 135 degrees */
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    const pair_case cases[] = {
        {"", "watch on the device: default (multilevel) to the threshold", true},
        {"\"convergence\": \"iterations\", \"max_iterations\": 23",
         "watch on the device: fixed count", true},
        {"\"max_iterations\": 400, \"convergence\": \"force\", \"threshold\": 0.002",
         "watch on the device: force scheme", true},
        {"\"max_iterations\": 7", "watch on the device: the cap before the threshold", false},
    };
    pair_cases_compare(watch_pair_make, rig, skin, cases, sizeof cases / sizeof cases[0]);
    /* a diverging solve: the watch's streak, kept iterate and reason */
    spring_pair d = watch_pair_make(
        rig, "\"stiffness\": {\"surface\": 30, \"length\": 30, \"torsion\": 30, \"detail\": 0}, "
             "\"max_iterations\": 2000, \"convergence\": \"iterations\"");
    tu_mat4_rotation(skin + 16, z, 1.5707963f, joint);
    const ssk_spring_report rd = batch_compare(&d, skin, NULL, 0.0, "watch on the device: divergence");
    assert_false(rd.converged);
    spring_pair_free(&d);
    const int frames[] = {12, 40};
    pair_frames_compare(watch_pair_make, rig, skin, frames, sizeof frames / sizeof frames[0],
                        "watch on the device: ");
}

/* The staged read-back (hardware GPUs' default: a GPU copy into a buffer
 * in host memory, core/backends/gl_backend.c job_read) against
 * glGetBufferSubData (software renderers' default): the same positions and
 * reports (the energy
 * read after the frame's last step, spring_energy_reads) bit for bit,
 * frame after frame. */
static void test_readback_staged(void **state)
{
    (void)state;
    need_gl();
    float skin[32];
    ssk_rig *rig = bent_limb(skin, 1.2f);
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    spring_pair p = env_pair_make(rig, "", "SSK_GL_READBACK", "plain", "staged");
    for (int k = 0; k < 3; ++k) {
        tu_mat4_rotation(skin + 16, z, 0.4f + 0.5f * (float)k, joint);
        batch_compare(&p, skin, NULL, (double)k, "read-back plain / staged");
    }
    spring_pair_free(&p);
    ssk_rig_destroy(rig);
}

/* The host has its own context current on this thread with some state;
 * running the GL backend must leave both alone. */
static void test_host_context_untouched(void **state)
{
    (void)state;
    need_gl();
    PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    assert_non_null(get_display);
    EGLDisplay dpy = get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
    if (dpy == EGL_NO_DISPLAY || !eglInitialize(dpy, NULL, NULL)) {
        print_message("host-context test skipped: no surfaceless EGL display for the host\n");
        skip();
    }
    assert_true(eglBindAPI(EGL_OPENGL_API));
    const EGLint attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3,
                              EGL_CONTEXT_OPENGL_PROFILE_MASK,
                              EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
    EGLContext host = eglCreateContext(dpy, (EGLConfig)0, EGL_NO_CONTEXT, attribs);
    assert_true(host != EGL_NO_CONTEXT);
    assert_true(eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, host));
    GLenum r = glewInit();
    assert_true(r == GLEW_OK || r == GLEW_ERROR_NO_GLX_DISPLAY);
    glGetError();
    glClearColor(0.1f, 0.2f, 0.3f, 0.4f);
    glViewport(1, 2, 3, 4);
    GLuint buffer = 0;
    glGenBuffers(1, &buffer);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, buffer);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, buffer);
    glBindBuffer(GL_ARRAY_BUFFER, buffer);
    assert_int_equal(glGetError(), GL_NO_ERROR);

    /* the core, with a context of its own (not the shared test one) */
    ssk_rig *rig = tu_make_limb(20, 16, 2, 2.0f, 0.3f, 0.5f, 4);
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = SSK_METHOD_DQS, .backend = SSK_BACKEND_GL};
    ssk_error err = {0};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    float skin[32], *out = malloc(3 * ssk_rig_vertex_count(rig) * sizeof(float));
    tu_mat4_identity(skin);
    const float z[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    tu_mat4_rotation(skin + 16, z, 1.0f, joint);
    assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_OK);
    assert_int_equal(ssk_deformer_normals(d, out, &err), SSK_OK);
    ssk_deformer_destroy(d);
    ssk_rig_destroy(rig);
    free(out);

    assert_true(eglGetCurrentContext() == host);
    assert_true(eglGetCurrentDisplay() == dpy);
    GLfloat clear[4];
    GLint viewport[4], ssbo = 0, ssbo0 = 0, array = 0;
    glGetFloatv(GL_COLOR_CLEAR_VALUE, clear);
    glGetIntegerv(GL_VIEWPORT, viewport);
    glGetIntegerv(GL_SHADER_STORAGE_BUFFER_BINDING, &ssbo);
    glGetIntegeri_v(GL_SHADER_STORAGE_BUFFER_BINDING, 0, &ssbo0);
    glGetIntegerv(GL_ARRAY_BUFFER_BINDING, &array);
    assert_true(clear[0] == 0.1f && clear[1] == 0.2f && clear[2] == 0.3f && clear[3] == 0.4f);
    assert_true(viewport[0] == 1 && viewport[1] == 2 && viewport[2] == 3 && viewport[3] == 4);
    assert_int_equal(ssbo, (GLint)buffer);
    assert_int_equal(ssbo0, (GLint)buffer);
    assert_int_equal(array, (GLint)buffer);
    assert_int_equal(glGetError(), GL_NO_ERROR);
    glDeleteBuffers(1, &buffer);
    eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(dpy, host);
}

/* A shader that does not compile gives SSK_ERROR_GL_SHADER with the file
 * name and GLSL's log, through SSK_SHADER_DIR. */
static void test_shader_compile_error_is_reported(void **state)
{
    (void)state;
    need_gl();
    char *dir = tu_temp_dir();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s/* %s/ && printf '#version 430 core\\nvoid main() { this is not glsl; }\\n' > %s/kernels_lbs.comp",
             SSK_SOURCE_SHADERS_DIR, dir, dir);
    assert_int_equal(system(cmd), 0);
    setenv("SSK_SHADER_DIR", dir, 1);
    ssk_gl_context *ctx = NULL;
    ssk_error err = {0};
    ssk_status st = ssk_gl_context_create(&ctx, &err);
    unsetenv("SSK_SHADER_DIR");
    assert_int_equal(st, SSK_OK);
    ssk_rig *rig = tu_make_limb(10, 8, 2, 2.0f, 0.3f, 0.5f, 2);
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_GL, .gl_context = ctx};
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_identity(skin + 16);
    st = ssk_deformer_create(&d, rig, &desc, &err);
    if (st == SSK_OK) { /* programs may be built lazily, at the first frame */
        float *out = malloc(3 * ssk_rig_vertex_count(rig) * sizeof(float));
        st = ssk_deformer_deform(d, out, skin, NULL, &err);
        free(out);
        ssk_deformer_destroy(d);
    }
    assert_int_equal(st, SSK_ERROR_GL_SHADER);
    if (!strstr(err.message, "kernels_lbs.comp")) fail_msg("message lacks the file: %s", err.message);
    print_message("reported: %s\n", err.message);
    /* DQS, whose shader is intact, still works on the same context */
    desc.method = SSK_METHOD_DQS;
    assert_int_equal(ssk_deformer_create(&d, rig, &desc, &err), SSK_OK);
    float *out = malloc(3 * ssk_rig_vertex_count(rig) * sizeof(float));
    assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_OK);
    free(out);
    ssk_deformer_destroy(d);
    ssk_rig_destroy(rig);
    ssk_gl_context_destroy(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

/* AUTO takes GL only on a hardware renderer. */
static void test_auto_choice(void **state)
{
    (void)state;
    need_gl();
    ssk_gl_info info;
    assert_int_equal(ssk_gl_context_info(gl, &info, NULL), SSK_OK);
    print_message("GL: %s | %s | %s | platform %s | hardware %d\n", info.vendor, info.renderer,
                  info.version, info.platform, info.hardware);
    assert_true(strlen(info.renderer) > 0 && info.max_work_group_count[0] >= 65535);
    assert_true(info.max_work_group_invocations >= 1024);
    ssk_rig *rig = tu_make_limb(10, 8, 2, 2.0f, 0.3f, 0.5f, 2);
    ssk_deformer *d = make(rig, SSK_METHOD_LBS, SSK_BACKEND_AUTO);
    assert_int_equal(ssk_deformer_backend(d), info.hardware ? SSK_BACKEND_GL : SSK_BACKEND_CPU);
    ssk_deformer_destroy(d);
    ssk_rig_destroy(rig);
}

/* The child side of test_no_egl_falls_back (a fresh process, started with
 * no EGL vendor library): exit code 0 when everything behaved. */
static int no_egl_child(void)
{
    ssk_gl_context *ctx = NULL;
    ssk_error err = {0};
    ssk_status st = ssk_gl_context_create(&ctx, &err);
    printf("child: %s: %s\n", ssk_status_name(st), err.message);
    if (st != SSK_ERROR_GL_UNAVAILABLE || !strstr(err.message, "OpenGL")) return 10;
    ssk_rig *rig = tu_make_limb(10, 8, 2, 2.0f, 0.3f, 0.5f, 2);
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_GL};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_ERROR_GL_UNAVAILABLE) return 11;
    desc.backend = SSK_BACKEND_AUTO;
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) return 12;
    printf("child: AUTO: %s\n", err.message);
    if (ssk_deformer_backend(d) != SSK_BACKEND_CPU || !strstr(err.message, "warning")) return 13;
    ssk_deformer_destroy(d);
    ssk_rig_destroy(rig);
    return 0;
}

/* Without any EGL vendor library (glvnd finds none), GL is unavailable:
 * a clear status, and AUTO falls back to the CPU with a warning. Runs this
 * test program again as a fresh process so that glvnd reads the
 * environment before loading any vendor. */
static void test_no_egl_falls_back(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent/vendor.json", 1);
        setenv("__EGL_VENDOR_LIBRARY_DIRS", "/nonexistent", 1);
        execl("/proc/self/exe", "test_backends", "--no-egl-child", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The child side of test_old_gl_is_reported: Mesa limited to GL 3.3. */
static int old_gl_child(void)
{
    ssk_gl_context *ctx = NULL;
    ssk_error err = {0};
    ssk_status st = ssk_gl_context_create(&ctx, &err);
    printf("child: %s: %s\n", ssk_status_name(st), err.message);
    if (st == SSK_OK) {
        ssk_gl_context_destroy(ctx);
        return 20;
    }
    return st == SSK_ERROR_GL_UNAVAILABLE && strstr(err.message, "4.3") ? 0 : 21;
}

/* A driver that offers only OpenGL 3.3 (Mesa's MESA_GL_VERSION_OVERRIDE)
 * gives SSK_ERROR_GL_UNAVAILABLE naming the version needed. */
static void test_old_gl_is_reported(void **state)
{
    (void)state;
    need_gl();
    if (!strstr(gl_renderer(), "llvmpipe")) {
        print_message("skipped: the version override is Mesa's (renderer is not llvmpipe)\n");
        skip();
    }
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("MESA_GL_VERSION_OVERRIDE", "3.3", 1);
        execl("/proc/self/exe", "test_backends", "--old-gl-child", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--no-egl-child") == 0) return no_egl_child();
    if (argc > 1 && strcmp(argv[1], "--old-gl-child") == 0) return old_gl_child();
    ssk_error err = {0};
    if (ssk_gl_context_create(&gl, &err) != SSK_OK)
        snprintf(gl_unavailable, sizeof gl_unavailable, "%s", err.message);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity_generated_limb),
        cmocka_unit_test(test_parity_multi_mesh_scaled),
        cmocka_unit_test(test_parity_bcn_epileptic),
        cmocka_unit_test(test_spring_parity_limb),
        cmocka_unit_test(test_spring_parity_bcn),
        cmocka_unit_test(test_spring_parity_chebyshev),
        cmocka_unit_test(test_spring_parity_multigrid),
        cmocka_unit_test(test_spring_parity_clusters),
        cmocka_unit_test(test_spring_parity_edit_bcn),
        cmocka_unit_test(test_spring_parity_frame_dependent),
        cmocka_unit_test(test_spring_parity_schemes),
        cmocka_unit_test(test_spring_parity_divergence),
        cmocka_unit_test(test_spring_batches),
        cmocka_unit_test(test_spring_wide_variants),
        cmocka_unit_test(test_spring_watch_on_device),
        cmocka_unit_test(test_readback_staged),
        cmocka_unit_test(test_host_context_untouched),
        cmocka_unit_test(test_shader_compile_error_is_reported),
        cmocka_unit_test(test_auto_choice),
        cmocka_unit_test(test_no_egl_falls_back),
        cmocka_unit_test(test_old_gl_is_reported),
    };
    int failed = cmocka_run_group_tests_name("backends", tests, NULL, NULL);
    ssk_gl_context_destroy(gl);
    return failed;
}
