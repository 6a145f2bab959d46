/*
 * test_bind.c — attachment binding (Toothman 2020, ch. 3), its file and the
 * `springskin bind` command:
 * - analytic cases on generated limbs and hand-made skeletons (DIRECT
 *   projection t = y / bone length and |s| = radius; PLANAR's Eq. 13 t on a
 *   straight chain and on a bend; WEIGHTS candidates; AUTO resolution;
 *   object matrices);
 * - smoothing closes attachment gaps (a bent limb, and the acceptance
 *   property on BCN_Epileptic.X);
 * - binding files: round trip, independent decoding of the header, cached
 *   reuse and rebinding, corrupt / truncated / foreign files;
 * - every SSK_ERROR_BIND case with its message, parameter errors;
 * - the CLI with --report and bad options.
 * Expected values are derived by hand here, never by the code under test.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define ERROR_PREFIX "springskin: error: "
/* float32 geometry computed in different orders agrees to about this. */
#define GEOM_TOL 1e-5
/* Binding file layout (documented in core/bind/binding_io.c). */
#define FILE_HEADER_BYTES 40
#define FILE_CHECKSUM_BYTES 8
#define FILE_BYTES_PER_VERTEX 20
/* A real character binds in a few milliseconds; this bound only catches a
 * pathological slowdown (e.g. under a debugger or sanitizer). */
#define BCN_MAX_BIND_SECONDS 0.5

/* The limb most tests use: 2 bones of length 1.5 along +Y (not 1, so that
 * t's denominator |c - p|^2 is tested), radius 0.3, rings every 0.375
 * (9 rings, so a ring lies exactly on the joint at y = 1.5). */
#define LIMB_RINGS 9
#define LIMB_SEGMENTS 12
#define LIMB_LENGTH 3.0f
#define LIMB_BONE 1.5
#define LIMB_RING_STEP 0.375
#define LIMB_RADIUS 0.3f

static ssk_rig *make_test_limb(void)
{
    return tu_make_limb(LIMB_RINGS, LIMB_SEGMENTS, 2, LIMB_LENGTH, LIMB_RADIUS, 0.4f, 2);
}

static ssk_binding *bind_or_fail(const ssk_rig *rig, ssk_bind_method method, uint32_t iterations)
{
    ssk_bind_params p;
    ssk_bind_params_default(&p);
    p.method = method;
    p.smooth_iterations = iterations;
    ssk_binding *b = NULL;
    ssk_error err = {0};
    ssk_status s = ssk_binding_create(&b, rig, &p, &err);
    if (s != SSK_OK) fprintf(stderr, "bind: %s\n", err.message);
    assert_int_equal(s, SSK_OK);
    assert_non_null(b);
    return b;
}

static ssk_binding_view view_of(const ssk_binding *b)
{
    ssk_binding_view v;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_get(b, &v, &err), SSK_OK);
    return v;
}

static ssk_binding_report report_of(const ssk_binding *b, const ssk_rig *rig)
{
    ssk_binding_report r;
    ssk_error err = {0};
    ssk_status s = ssk_binding_report_compute(&r, b, rig, &err);
    if (s != SSK_OK) fprintf(stderr, "report: %s\n", err.message);
    assert_int_equal(s, SSK_OK);
    return r;
}

static bool contains(const char *haystack, const char *needle)
{
    return strstr(haystack, needle) != NULL;
}

#define assert_message_contains(err, text)                                              \
    do {                                                                                \
        if (!contains((err).message, (text)))                                           \
            fprintf(stderr, "message '%s' lacks '%s'\n", (err).message, (text));        \
        assert_true(contains((err).message, (text)));                                   \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Editable copies of single-mesh rigs.                                      */
/* ------------------------------------------------------------------------ */

/* Arrays of a one-mesh rig with room for extra vertices, triangles and
 * bones; tests edit them and build a new rig. */
typedef struct rig_parts {
    uint32_t nb, nv, nf, k;
    int32_t *parents;
    float *bind, *heads, *tails;
    float *pos;
    int32_t *tri, *idx;
    float *w;
    float object[16];
    bool has_object;
} rig_parts;

static void parts_alloc(rig_parts *p, uint32_t nb, uint32_t nv, uint32_t nf, uint32_t k)
{
    memset(p, 0, sizeof *p);
    p->nb = nb;
    p->nv = nv;
    p->nf = nf;
    p->k = k;
    p->parents = calloc(nb + 1, sizeof *p->parents);
    p->bind = calloc(16 * (size_t)nb + 1, sizeof *p->bind);
    p->heads = calloc(3 * (size_t)nb + 1, sizeof *p->heads);
    p->tails = calloc(3 * (size_t)nb + 1, sizeof *p->tails);
    p->pos = calloc(3 * (size_t)nv + 1, sizeof *p->pos);
    p->tri = calloc(3 * (size_t)nf + 1, sizeof *p->tri);
    p->idx = calloc((size_t)nv * k + 1, sizeof *p->idx);
    p->w = calloc((size_t)nv * k + 1, sizeof *p->w);
    assert_true(p->parents && p->bind && p->heads && p->tails && p->pos && p->tri && p->idx &&
                p->w);
    for (uint32_t b = 0; b < nb; ++b) tu_mat4_identity(p->bind + 16 * b);
}

static void parts_free(rig_parts *p)
{
    free(p->parents);
    free(p->bind);
    free(p->heads);
    free(p->tails);
    free(p->pos);
    free(p->tri);
    free(p->idx);
    free(p->w);
}

/* Copies mesh 0 and the skeleton of `rig`, leaving room for `extra_*`
 * (zeroed, not counted until the caller raises nv / nf / nb). */
static void parts_from_rig(rig_parts *p, const ssk_rig *rig, uint32_t extra_vertices,
                           uint32_t extra_triangles, uint32_t extra_bones)
{
    ssk_mesh_view mv;
    ssk_error err = {0};
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, &err), SSK_OK);
    uint32_t nb = ssk_rig_bone_count(rig);
    parts_alloc(p, nb + extra_bones, mv.vertex_count + extra_vertices,
                mv.triangle_count + extra_triangles, mv.influence_count);
    p->nb = nb;
    p->nv = mv.vertex_count;
    p->nf = mv.triangle_count;
    for (uint32_t b = 0; b < nb; ++b) {
        ssk_bone_view bv;
        assert_int_equal(ssk_rig_bone(rig, b, &bv, &err), SSK_OK);
        p->parents[b] = bv.parent;
        memcpy(p->bind + 16 * b, bv.bind_matrix, 16 * sizeof(float));
        memcpy(p->heads + 3 * b, bv.head, 3 * sizeof(float));
        memcpy(p->tails + 3 * b, bv.tail, 3 * sizeof(float));
    }
    memcpy(p->pos, mv.positions, 3 * (size_t)mv.vertex_count * sizeof(float));
    memcpy(p->tri, mv.triangles, 3 * (size_t)mv.triangle_count * sizeof(int32_t));
    memcpy(p->idx, mv.bone_indices, (size_t)mv.vertex_count * mv.influence_count * sizeof(int32_t));
    memcpy(p->w, mv.weights, (size_t)mv.vertex_count * mv.influence_count * sizeof(float));
    memcpy(p->object, mv.object_matrix, sizeof p->object);
    p->has_object = true;
}

static ssk_rig *parts_make(const rig_parts *p, const char *mesh_name)
{
    ssk_skeleton_desc sk = {p->nb, NULL, p->parents, p->bind, p->heads, p->tails};
    ssk_mesh_desc md = {mesh_name, p->nv, p->pos, p->nf, p->nf ? p->tri : NULL, p->k,
                        p->k ? p->idx : NULL, p->k ? p->w : NULL,
                        p->has_object ? p->object : NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    ssk_status s = ssk_rig_create(&rig, &sk, &md, 1, &err);
    if (s != SSK_OK) fprintf(stderr, "parts_make: %s\n", err.message);
    assert_int_equal(s, SSK_OK);
    return rig;
}

static void set_bone(rig_parts *p, uint32_t b, int32_t parent, float hx, float hy, float hz,
                     float tx, float ty, float tz)
{
    p->parents[b] = parent;
    tu_mat4_translation(p->bind + 16 * b, hx, hy, hz);
    p->heads[3 * b] = hx, p->heads[3 * b + 1] = hy, p->heads[3 * b + 2] = hz;
    p->tails[3 * b] = tx, p->tails[3 * b + 1] = ty, p->tails[3 * b + 2] = tz;
}

static void set_vertex(rig_parts *p, uint32_t v, float x, float y, float z)
{
    p->pos[3 * v] = x, p->pos[3 * v + 1] = y, p->pos[3 * v + 2] = z;
}

static void set_triangle(rig_parts *p, uint32_t f, int32_t a, int32_t b, int32_t c)
{
    p->tri[3 * f] = a, p->tri[3 * f + 1] = b, p->tri[3 * f + 2] = c;
}

/* ------------------------------------------------------------------------ */
/* Parameters and names.                                                     */
/* ------------------------------------------------------------------------ */

static void test_params_names_and_argument_errors(void **state)
{
    (void)state;
    ssk_bind_params p;
    memset(&p, 0xff, sizeof p);
    ssk_bind_params_default(&p);
    assert_int_equal(p.method, SSK_BIND_AUTO);
    assert_int_equal(p.smooth_iterations, 6);
    assert_true(p.max_distance == 0.0f);

    const char *names[] = {"auto", "direct", "weights", "planar"};
    for (int m = 0; m < SSK_BIND_METHOD_COUNT; ++m) {
        assert_string_equal(ssk_bind_method_name((ssk_bind_method)m), names[m]);
        ssk_bind_method parsed = SSK_BIND_METHOD_COUNT;
        assert_int_equal(ssk_bind_method_parse(&parsed, names[m], NULL), SSK_OK);
        assert_int_equal(parsed, m);
    }
    assert_null(ssk_bind_method_name(SSK_BIND_METHOD_COUNT));
    ssk_error err = {0};
    ssk_bind_method parsed;
    /* any case (issue #17: Blender's enums are upper case) */
    assert_int_equal(ssk_bind_method_parse(&parsed, "Direct", &err), SSK_OK);
    assert_int_equal(parsed, SSK_BIND_DIRECT);
    assert_int_equal(ssk_bind_method_parse(&parsed, "Directly", &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_message_contains(err, "'Directly'");
    assert_message_contains(err, "planar");

    ssk_rig *rig = make_test_limb();
    ssk_binding *b = (ssk_binding *)&err; /* must be reset to NULL on error */
    ssk_bind_params bad;
    ssk_bind_params_default(&bad);
    bad.method = SSK_BIND_METHOD_COUNT;
    assert_int_equal(ssk_binding_create(&b, rig, &bad, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(b);
    assert_message_contains(err, "method");
    ssk_bind_params_default(&bad);
    bad.max_distance = -1.0f;
    assert_int_equal(ssk_binding_create(&b, rig, &bad, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_message_contains(err, "max_distance");
    bad.max_distance = NAN;
    assert_int_equal(ssk_binding_create(&b, rig, &bad, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_message_contains(err, "max_distance");
    ssk_bind_params_default(&bad);
    bad.smooth_iterations = 1001;
    assert_int_equal(ssk_binding_create(&b, rig, &bad, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_message_contains(err, "1001");
    bad.smooth_iterations = 1000; /* the largest accepted */
    assert_int_equal(ssk_binding_create(&b, rig, &bad, &err), SSK_OK);
    ssk_binding_destroy(b);

    ssk_bind_params_default(&p);
    assert_int_equal(ssk_binding_create(NULL, rig, &p, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_binding_create(&b, NULL, &p, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_binding_create(&b, rig, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_binding_get(NULL, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    ssk_binding_destroy(NULL);
    ssk_rig_destroy(rig);
}

/* ------------------------------------------------------------------------ */
/* Analytic cases.                                                           */
/* ------------------------------------------------------------------------ */

/* Ring r of the limb lies at y = r * LIMB_LENGTH / (LIMB_RINGS - 1). */
static void test_direct_on_limb_is_the_analytic_projection(void **state)
{
    (void)state;
    ssk_rig *rig = make_test_limb();
    ssk_binding *b = bind_or_fail(rig, SSK_BIND_DIRECT, 0);
    ssk_binding_view v = view_of(b);
    assert_int_equal(v.vertex_count, LIMB_RINGS * LIMB_SEGMENTS + 2);
    assert_int_equal(v.bone_count, 2);
    assert_int_equal(v.params.method, SSK_BIND_DIRECT);
    assert_int_equal(v.params.smooth_iterations, 0);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    for (uint32_t r = 0; r < LIMB_RINGS; ++r) {
        double y = LIMB_RING_STEP * r;
        /* bone 0 spans y in [0, 1.5]; the joint ring (y = 1.5) ties between
         * bone 0 at t = 1 and bone 1 at t = 0: the lowest index wins. */
        int32_t bone = y <= LIMB_BONE ? 0 : 1;
        double t = bone == 0 ? y / LIMB_BONE : (y - LIMB_BONE) / LIMB_BONE;
        for (uint32_t s = 0; s < LIMB_SEGMENTS; ++s) {
            uint32_t i = r * LIMB_SEGMENTS + s;
            assert_int_equal(v.bones[i], bone);
            assert_true(fabs(v.t[i] - t) < GEOM_TOL);
            const float *sv = v.scale_vectors + 3 * i;
            /* s = v - a = (x, 0, z) of the ring vertex, |s| = radius */
            assert_true(fabs(sv[0] - mv.positions[3 * i]) < GEOM_TOL);
            assert_true(fabs(sv[1]) < GEOM_TOL);
            assert_true(fabs(sv[2] - mv.positions[3 * i + 2]) < GEOM_TOL);
            double len = sqrt(sv[0] * sv[0] + sv[1] * sv[1] + sv[2] * sv[2]);
            assert_true(fabs(len - LIMB_RADIUS) < GEOM_TOL);
        }
    }
    /* caps: (0, 0, 0) on bone 0 at t = 0, (0, 3, 0) on bone 1 at t = 1, s = 0 */
    uint32_t cap0 = LIMB_RINGS * LIMB_SEGMENTS, cap1 = cap0 + 1;
    assert_int_equal(v.bones[cap0], 0);
    assert_true(fabs(v.t[cap0]) < GEOM_TOL);
    assert_int_equal(v.bones[cap1], 1);
    assert_true(fabs(v.t[cap1] - 1.0) < GEOM_TOL);
    for (int k = 0; k < 3; ++k) {
        assert_true(fabs(v.scale_vectors[3 * cap0 + k]) < GEOM_TOL);
        assert_true(fabs(v.scale_vectors[3 * cap1 + k]) < GEOM_TOL);
    }
    ssk_binding_report rep = report_of(b, rig);
    /* 108 ring vertices at the radius, 2 caps at 0 */
    double mean = LIMB_RADIUS * (LIMB_RINGS * LIMB_SEGMENTS) / (double)(LIMB_RINGS * LIMB_SEGMENTS + 2);
    assert_true(fabs(rep.mean_scale_length - mean) < GEOM_TOL);
    assert_true(fabs(rep.max_scale_length - LIMB_RADIUS) < GEOM_TOL);
    /* adjacent rings are 0.375 apart along the axis; caps join ring 0 / 8 */
    assert_true(fabs(rep.max_attachment_gap - LIMB_RING_STEP) < GEOM_TOL);
    /* A parent and its child, both long and weighted: no artifact risk
     * from unrelated neighbors or weak bones. */
    assert_int_equal(rep.unrelated_neighbor_vertices, 0);
    assert_int_equal(rep.unrelated_bones[0], -1);
    assert_int_equal(rep.unrelated_pair_vertices, 0);
    assert_int_equal(rep.weak_bone_vertices, 0);
    ssk_binding_destroy(b);
    ssk_rig_destroy(rig);
}

/* The same rig-space geometry, the mesh stored shifted by -T with object
 * matrix +T, binds identically: positions go through the object matrix. */
static void test_object_matrix_places_vertices_in_rig_space(void **state)
{
    (void)state;
    ssk_rig *rig = make_test_limb();
    rig_parts p;
    parts_from_rig(&p, rig, 0, 0, 0);
    const float shift[3] = {5.0f, -3.0f, 2.0f};
    for (uint32_t i = 0; i < p.nv; ++i)
        for (int k = 0; k < 3; ++k) p.pos[3 * i + k] -= shift[k];
    tu_mat4_translation(p.object, shift[0], shift[1], shift[2]);
    ssk_rig *moved = parts_make(&p, "limb");
    ssk_binding *a = bind_or_fail(rig, SSK_BIND_DIRECT, 2);
    ssk_binding *b = bind_or_fail(moved, SSK_BIND_DIRECT, 2);
    ssk_binding_view va = view_of(a), vb = view_of(b);
    for (uint32_t i = 0; i < va.vertex_count; ++i) {
        assert_int_equal(va.bones[i], vb.bones[i]);
        assert_true(fabs(va.t[i] - vb.t[i]) < GEOM_TOL);
    }
    assert_true(tu_max_abs_diff(va.scale_vectors, vb.scale_vectors, 3 * (size_t)va.vertex_count) <
                GEOM_TOL);
    assert_true(va.rig_hash != vb.rig_hash); /* the stored arrays differ */
    ssk_binding_destroy(a);
    ssk_binding_destroy(b);
    ssk_rig_destroy(moved);
    parts_free(&p);
    ssk_rig_destroy(rig);
}

/* On a straight chain the joint planes are perpendicular to the bones, so
 * Eq. 13's t = d_p / (d_p + d_c) equals the projection parameter. */
static void test_planar_on_straight_chain_equals_projection(void **state)
{
    (void)state;
    ssk_rig *rig = make_test_limb();
    ssk_binding *planar = bind_or_fail(rig, SSK_BIND_PLANAR, 0);
    ssk_binding_view v = view_of(planar);
    assert_int_equal(v.params.method, SSK_BIND_PLANAR);
    for (uint32_t r = 0; r < LIMB_RINGS; ++r) {
        double y = LIMB_RING_STEP * r;
        int32_t bone = y <= LIMB_BONE ? 0 : 1;
        double t = bone == 0 ? y / LIMB_BONE : (y - LIMB_BONE) / LIMB_BONE;
        for (uint32_t s = 0; s < LIMB_SEGMENTS; ++s) {
            uint32_t i = r * LIMB_SEGMENTS + s;
            assert_int_equal(v.bones[i], bone);
            assert_true(fabs(v.t[i] - t) < GEOM_TOL);
        }
    }
    ssk_binding_destroy(planar);
    ssk_rig_destroy(rig);
}

/* An L-shaped skeleton: bone 0 (0,0,0) -> (0,1,0), bone 1 (0,1,0) -> (1,1,0).
 * The joint plane at (0,1,0) has normal (1,1,0)/sqrt(2). The vertex
 * (-0.3, 1.1, 0) lies above bone 0's head plane (y = 0) by d_p = 1.1 and
 * below the joint plane by d_c = ((0,1,0) - v) . n = (0.3 - 0.1)/sqrt(2);
 * it is behind bone 1's head plane (the same plane), so PLANAR attaches it
 * to bone 0 at t = 1.1 / (1.1 + 0.2/sqrt(2)). DIRECT finds both bones at
 * distance |(-0.3, 0.1)| and keeps bone 0 at t = 1 (clamped). */
static void test_planar_on_a_bend_uses_equation_13(void **state)
{
    (void)state;
    rig_parts p;
    parts_alloc(&p, 2, 4, 2, 0);
    set_bone(&p, 0, -1, 0, 0, 0, 0, 1, 0);
    set_bone(&p, 1, 0, 0, 1, 0, 1, 1, 0);
    set_vertex(&p, 0, -0.3f, 1.1f, 0.0f);
    set_vertex(&p, 1, 0.2f, 0.5f, 0.3f);
    set_vertex(&p, 2, 0.6f, 1.3f, -0.2f);
    set_vertex(&p, 3, 0.8f, 0.9f, 0.4f);
    set_triangle(&p, 0, 0, 1, 2);
    set_triangle(&p, 1, 1, 3, 2);
    ssk_rig *rig = parts_make(&p, "bend");

    ssk_binding *planar = bind_or_fail(rig, SSK_BIND_PLANAR, 0);
    ssk_binding_view v = view_of(planar);
    double expected_t = 1.1 / (1.1 + 0.2 / sqrt(2.0));
    assert_int_equal(v.bones[0], 0);
    assert_true(fabs(v.t[0] - expected_t) < GEOM_TOL);
    /* s = v - (0, t, 0) */
    assert_true(fabs(v.scale_vectors[0] - (-0.3)) < GEOM_TOL);
    assert_true(fabs(v.scale_vectors[1] - (1.1 - expected_t)) < GEOM_TOL);
    assert_true(fabs(v.scale_vectors[2]) < GEOM_TOL);
    /* (0.6, 1.3, -0.2): in front of the joint plane (d_p = (0.6 + 0.3)/sqrt(2)
     * for bone 1) and behind it for bone 0; bone 1 has no tail child so its
     * tail plane is x = 1: d_c = 0.4, t = d_p / (d_p + d_c). */
    double dp = 0.9 / sqrt(2.0), dc = 0.4;
    assert_int_equal(v.bones[2], 1);
    assert_true(fabs(v.t[2] - dp / (dp + dc)) < GEOM_TOL);

    ssk_binding *direct = bind_or_fail(rig, SSK_BIND_DIRECT, 0);
    ssk_binding_view d = view_of(direct);
    assert_int_equal(d.bones[0], 0);
    assert_true(fabs(d.t[0] - 1.0) < GEOM_TOL);
    /* AUTO on a rig without weights is DIRECT */
    ssk_binding *autob = bind_or_fail(rig, SSK_BIND_AUTO, 0);
    ssk_binding_view a = view_of(autob);
    assert_int_equal(a.params.method, SSK_BIND_DIRECT);
    for (uint32_t i = 0; i < 4; ++i) {
        assert_int_equal(a.bones[i], d.bones[i]);
        assert_true(a.t[i] == d.t[i]);
    }
    ssk_binding_destroy(autob);
    ssk_binding_destroy(direct);
    ssk_binding_destroy(planar);
    ssk_rig_destroy(rig);
    parts_free(&p);
}

/* PLANAR at a joint with two children: each child gets its own head plane
 * from (parent, that child). Parent 0: (0,0,0) -> (0,1,0); child 1 goes
 * +X, child 2 goes -X from (0,1,0). The vertex (0.5, 1.2, 0.1) is in front
 * of child 1's plane (normal (1,1,0)/sqrt(2): d_p = 0.7/sqrt(2)) and behind
 * child 2's (normal (-1,1,0)/sqrt(2): -0.3/sqrt(2) < 0), so it belongs to
 * bone 1 with tail plane x = 1: t = d_p / (d_p + 0.5). Bone 0's tail plane
 * is the joint plane of its first child (bone 1), normal (1,1,0)/sqrt(2). */
static void test_planar_siblings_get_their_own_planes(void **state)
{
    (void)state;
    rig_parts p;
    parts_alloc(&p, 3, 3, 1, 0);
    set_bone(&p, 0, -1, 0, 0, 0, 0, 1, 0);
    set_bone(&p, 1, 0, 0, 1, 0, 1, 1, 0);
    set_bone(&p, 2, 0, 0, 1, 0, -1, 1, 0);
    set_vertex(&p, 0, 0.5f, 1.2f, 0.1f);
    set_vertex(&p, 1, -0.5f, 1.2f, 0.1f);
    set_vertex(&p, 2, 0.0f, 0.4f, 0.3f);
    set_triangle(&p, 0, 0, 1, 2);
    ssk_rig *rig = parts_make(&p, "fork");
    ssk_binding *b = bind_or_fail(rig, SSK_BIND_PLANAR, 0);
    ssk_binding_view v = view_of(b);
    double dp = 0.7 / sqrt(2.0);
    assert_int_equal(v.bones[0], 1);
    assert_true(fabs(v.t[0] - dp / (dp + 0.5)) < GEOM_TOL);
    /* the mirror image goes to bone 2 with the same t */
    assert_int_equal(v.bones[1], 2);
    assert_true(fabs(v.t[1] - dp / (dp + 0.5)) < GEOM_TOL);
    /* (0, 0.4, 0.3) is below the joint planes: bone 0 with d_p = 0.4 and
     * d_c = ((0,1,0) - v) . (1,1,0)/sqrt(2) = 0.6/sqrt(2) */
    assert_int_equal(v.bones[2], 0);
    assert_true(fabs(v.t[2] - 0.4 / (0.4 + 0.6 / sqrt(2.0))) < GEOM_TOL);
    /* The report names the risk: vertices 0 and 1 share an edge but sit on
     * sibling bones (neither is the other's parent); vertex 2 on the root
     * only has children's vertices as neighbors. No bone carries weight
     * (this rig has none): all three vertices are on non-deforming bones,
     * and none has a weights' center to be far from. */
    ssk_binding_report rep = report_of(b, rig);
    assert_int_equal(rep.unrelated_neighbor_vertices, 2);
    assert_int_equal(rep.unrelated_bones[0], 1);
    assert_int_equal(rep.unrelated_bones[1], 2);
    assert_int_equal(rep.unrelated_pair_vertices, 2);
    assert_int_equal(rep.weak_bone_vertices, 3);
    assert_int_equal(rep.far_from_weights_vertices, 0);
    ssk_binding_destroy(b);
    ssk_rig_destroy(rig);
    parts_free(&p);
}

/* Skeleton: 0 root (0,0,0)->(0,1,0); 1 child of 0 (0,1,0)->(0,2,0); 2 child
 * of 0 (0,1,0)->(1,1,0) (sibling of 1); 3 child of 1 (0,2,0)->(0,3,0);
 * 4 a second root (3,0,0)->(3,1,0). Vertices 0-3 carry weight on bone 1
 * only, so WEIGHTS may attach them to {1, its parent 0, its sibling 2};
 * vertex 4 has no weight (every bone). */
static ssk_rig *make_weights_rig(rig_parts *p)
{
    parts_alloc(p, 5, 5, 3, 1);
    set_bone(p, 0, -1, 0, 0, 0, 0, 1, 0);
    set_bone(p, 1, 0, 0, 1, 0, 0, 2, 0);
    set_bone(p, 2, 0, 0, 1, 0, 1, 1, 0);
    set_bone(p, 3, 1, 0, 2, 0, 0, 3, 0);
    set_bone(p, 4, -1, 3, 0, 0, 3, 1, 0);
    set_vertex(p, 0, 0.0f, 2.9f, 0.1f);  /* next to bone 3 */
    set_vertex(p, 1, 3.0f, 0.5f, 0.1f);  /* next to bone 4 */
    set_vertex(p, 2, 0.5f, 2.5f, 0.3f);
    set_vertex(p, 3, 2.2f, 1.5f, -0.2f);
    set_vertex(p, 4, 0.1f, 2.95f, 0.0f); /* unweighted, next to bone 3 */
    set_triangle(p, 0, 0, 1, 2);
    set_triangle(p, 1, 1, 3, 2);
    set_triangle(p, 2, 0, 2, 4);
    for (uint32_t v = 0; v < 4; ++v) {
        p->idx[v] = 1;
        p->w[v] = 1.0f;
    }
    p->idx[4] = -1; /* padding: weight 0 */
    p->w[4] = 0.0f;
    return parts_make(p, "weights");
}

static void test_weights_respects_candidates(void **state)
{
    (void)state;
    rig_parts p;
    ssk_rig *rig = make_weights_rig(&p);
    for (uint32_t it = 0; it <= 6; it += 6) {
        ssk_binding *b = bind_or_fail(rig, SSK_BIND_WEIGHTS, it);
        ssk_binding_view v = view_of(b);
        assert_int_equal(v.params.method, SSK_BIND_WEIGHTS);
        for (uint32_t i = 0; i < 4; ++i)
            assert_true(v.bones[i] == 0 || v.bones[i] == 1 || v.bones[i] == 2);
        if (it == 0) {
            /* (0, 2.9, 0.1): the closest of {0, 1, 2} is bone 1's tail */
            assert_int_equal(v.bones[0], 1);
            assert_true(fabs(v.t[0] - 1.0) < GEOM_TOL);
            /* (3, 0.5, 0.1): bone 2's tail (1,1,0) at sqrt(4 + 0.25 + 0.01),
             * bone 0 at sqrt(9 + 0.01), bone 1's head at sqrt(9 + 0.25 + 0.01) */
            assert_int_equal(v.bones[1], 2);
            assert_true(fabs(v.t[1] - 1.0) < GEOM_TOL);
            /* unweighted: DIRECT over every bone: bone 3 at t = 0.95 */
            assert_int_equal(v.bones[4], 3);
            assert_true(fabs(v.t[4] - 0.95) < GEOM_TOL);
            /* (0.5, 2.5, 0.3): bone 1's tail, d^2 = 0.59 (bone 2: 2.34);
             * (2.2, 1.5, -0.2): bone 2's tail, d^2 = 1.73 (bone 1: 4.88) */
            assert_int_equal(v.bones[2], 1);
            assert_int_equal(v.bones[3], 2);
            assert_true(fabs(report_of(b, rig).off_weight_share - 2.0 / 5.0) < 1e-12);
        }
        /* the report counts vertices 0-3 off when not on bone 1; vertex 4
         * (no weight) never counts */
        ssk_binding_report rep = report_of(b, rig);
        uint32_t off = 0;
        for (uint32_t i = 0; i < 4; ++i) off += v.bones[i] != 1;
        assert_true(fabs(rep.off_weight_share - off / 5.0) < 1e-12);
        ssk_binding_destroy(b);
    }
    /* DIRECT, unrestricted, takes bones 3 and 4: the restriction matters.
     * (0.5, 2.5, 0.3) is nearer bone 3 (d^2 = 0.34), (2.2, 1.5, -0.2) bone
     * 4's tail (d^2 = 0.93): four of the five vertices are off-weight */
    ssk_binding *d = bind_or_fail(rig, SSK_BIND_DIRECT, 0);
    ssk_binding_view dv = view_of(d);
    const int32_t direct_bones[5] = {3, 4, 3, 4, 3};
    assert_memory_equal(dv.bones, direct_bones, sizeof direct_bones);
    ssk_binding_report rep = report_of(d, rig);
    assert_true(fabs(rep.off_weight_share - 4.0 / 5.0) < 1e-12);
    ssk_binding_destroy(d);
    /* AUTO on a weighted rig resolves to WEIGHTS */
    ssk_binding *a = bind_or_fail(rig, SSK_BIND_AUTO, 0);
    assert_int_equal(view_of(a).params.method, SSK_BIND_WEIGHTS);
    assert_int_equal(view_of(a).bones[1], 2);
    ssk_binding_destroy(a);
    ssk_rig_destroy(rig);
    parts_free(&p);
}

/* ------------------------------------------------------------------------ */
/* Smoothing.                                                                */
/* ------------------------------------------------------------------------ */

/* A limb of two unit bones, its mesh and bone 1 bent by 90 degrees about
 * the joint (0,1,0), progressively over y in [0.75, 1.5]: direct projection
 * leaves gaps on the inner side of the bend. */
static ssk_rig *make_bent_limb(rig_parts *p)
{
    ssk_rig *straight = tu_make_limb(17, 16, 2, 2.0f, LIMB_RADIUS, 0.4f, 2);
    parts_from_rig(p, straight, 0, 0, 0);
    ssk_rig_destroy(straight);
    const float axis[3] = {0, 0, 1}, joint[3] = {0, 1, 0};
    const double start = 0.75, end = 1.5, quarter = acos(-1.0) / 2;
    for (uint32_t i = 0; i < p->nv; ++i) {
        float *x = p->pos + 3 * i;
        double y = x[1];
        if (y <= start) continue;
        double f = y >= end ? 1.0 : (y - start) / (end - start);
        float m[16];
        tu_mat4_rotation(m, axis, (float)(-quarter * f), joint);
        float r[3];
        for (int k = 0; k < 3; ++k)
            r[k] = m[4 * k] * x[0] + m[4 * k + 1] * x[1] + m[4 * k + 2] * x[2] + m[4 * k + 3];
        memcpy(x, r, sizeof r);
    }
    /* bone 1 now points along +X */
    p->tails[3] = 1.0f, p->tails[4] = 1.0f, p->tails[5] = 0.0f;
    return parts_make(p, "bent");
}

static void test_smoothing_reduces_the_largest_gap(void **state)
{
    (void)state;
    rig_parts p;
    ssk_rig *rig = make_bent_limb(&p);
    ssk_binding *raw = bind_or_fail(rig, SSK_BIND_DIRECT, 0);
    ssk_binding *smooth = bind_or_fail(rig, SSK_BIND_DIRECT, 6);
    ssk_binding_report r0 = report_of(raw, rig), r6 = report_of(smooth, rig);
    printf("bent limb, direct: largest attachment gap %.4f without smoothing, %.4f with 6 "
           "iterations (mean |s| %.4f -> %.4f)\n",
           r0.max_attachment_gap, r6.max_attachment_gap, r0.mean_scale_length,
           r6.mean_scale_length);
    assert_true(r6.max_attachment_gap < r0.max_attachment_gap);
    /* smoothing never shortens scale vectors below the nearest bone */
    assert_true(r6.mean_scale_length >= r0.mean_scale_length - GEOM_TOL);
    ssk_binding_destroy(raw);
    ssk_binding_destroy(smooth);
    ssk_rig_destroy(rig);
    parts_free(&p);
}

/* Checks the invariants of a binding of `rig`: bone in range, t in [0, 1],
 * s = v - a with a recomputed from the bone's head and tail. */
static void check_binding_invariants(const ssk_binding *b, const ssk_rig *rig)
{
    ssk_binding_view v = view_of(b);
    assert_int_equal(v.vertex_count, ssk_rig_vertex_count(rig));
    assert_int_equal(v.bone_count, ssk_rig_bone_count(rig));
    assert_true(v.rig_hash == ssk_rig_hash(rig));
    for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
        ssk_mesh_view mv;
        assert_int_equal(ssk_rig_mesh(rig, m, &mv, NULL), SSK_OK);
        for (uint32_t i = 0; i < mv.vertex_count; ++i) {
            uint32_t row = mv.first_vertex + i;
            assert_true(v.bones[row] >= 0 && (uint32_t)v.bones[row] < v.bone_count);
            assert_true(v.t[row] >= 0.0f && v.t[row] <= 1.0f);
            ssk_bone_view bv;
            assert_int_equal(ssk_rig_bone(rig, (uint32_t)v.bones[row], &bv, NULL), SSK_OK);
            const float *o = mv.object_matrix, *x = mv.positions + 3 * i;
            for (int k = 0; k < 3; ++k) {
                double rig_x = (double)o[4 * k] * x[0] + (double)o[4 * k + 1] * x[1] +
                               (double)o[4 * k + 2] * x[2] + o[4 * k + 3];
                double a = bv.head[k] + v.t[row] * ((double)bv.tail[k] - bv.head[k]);
                assert_true(fabs(rig_x - a - v.scale_vectors[3 * row + k]) < 1e-4);
            }
        }
    }
}

/* A point cloud (no triangles, no adjacency): smoothing has no neighbors to
 * average, each point keeps its attachment, which is the direct one. */
static void test_point_cloud_keeps_its_projection(void **state)
{
    (void)state;
    rig_parts p;
    parts_alloc(&p, 2, 3, 0, 0);
    set_bone(&p, 0, -1, 0, 0, 0, 0, 2, 0);
    set_bone(&p, 1, 0, 0, 2, 0, 2, 2, 0);
    set_vertex(&p, 0, 0.5f, 0.5f, 0.0f);  /* bone 0, t = 0.25 */
    set_vertex(&p, 1, 1.5f, 2.5f, 0.0f);  /* bone 1, t = 0.75 */
    set_vertex(&p, 2, -1.0f, 3.0f, 0.0f); /* both ends at sqrt(2): bone 0, t = 1 */
    ssk_rig *rig = parts_make(&p, "cloud");
    ssk_binding *b = bind_or_fail(rig, SSK_BIND_AUTO, 6);
    ssk_binding_view v = view_of(b);
    const int32_t bones[3] = {0, 1, 0};
    const double ts[3] = {0.25, 0.75, 1.0};
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(v.bones[i], bones[i]);
        assert_true(fabs(v.t[i] - ts[i]) < GEOM_TOL);
    }
    assert_true(report_of(b, rig).max_attachment_gap == 0.0); /* no edges */
    ssk_binding_destroy(b);
    ssk_rig_destroy(rig);
    parts_free(&p);
}

/* The acceptance property (Toothman 2020, Fig. 7): on a real character,
 * binding with 6 smoothing iterations leaves a smaller largest attachment
 * gap than direct projection without smoothing. */
static void test_bcn_smoothing_closes_gaps(void **state)
{
    (void)state;
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    ssk_status s = ssk_scene_import(&scene, MODEL_PATH, &err);
    if (s != SSK_OK) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(s, SSK_OK);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_bind_params defaults;
    ssk_bind_params_default(&defaults);
    ssk_binding *smooth = NULL;
    assert_int_equal(ssk_binding_create(&smooth, rig, &defaults, &err), SSK_OK);
    ssk_binding *direct0 = bind_or_fail(rig, SSK_BIND_DIRECT, 0);
    ssk_binding *direct6 = bind_or_fail(rig, SSK_BIND_DIRECT, 6);
    ssk_binding_report rs = report_of(smooth, rig), r0 = report_of(direct0, rig),
                       r6 = report_of(direct6, rig);
    ssk_binding_view vs = view_of(smooth);
    printf("BCN_Epileptic (%u vertices, %u bones): largest attachment gap: direct without "
           "smoothing %.4f, direct with 6 iterations %.4f, default (%s, 6 iterations) %.4f; "
           "default binding took %.2f ms\n",
           vs.vertex_count, vs.bone_count, r0.max_attachment_gap, r6.max_attachment_gap,
           ssk_bind_method_name(vs.params.method), rs.max_attachment_gap, vs.seconds * 1e3);
    assert_int_equal(vs.params.method, SSK_BIND_WEIGHTS);
    assert_true(rs.max_attachment_gap < r0.max_attachment_gap);
    assert_true(r6.max_attachment_gap < r0.max_attachment_gap);
    assert_true(vs.seconds < BCN_MAX_BIND_SECONDS);
    check_binding_invariants(smooth, rig);
    check_binding_invariants(direct0, rig);
    ssk_binding *planar = bind_or_fail(rig, SSK_BIND_PLANAR, 6);
    check_binding_invariants(planar, rig);
    ssk_binding_destroy(planar);
    ssk_binding_destroy(direct6);
    ssk_binding_destroy(direct0);
    ssk_binding_destroy(smooth);
    ssk_scene_destroy(scene);
}

/* ------------------------------------------------------------------------ */
/* Errors.                                                                   */
/* ------------------------------------------------------------------------ */

static void expect_bind_error(const ssk_rig *rig, const ssk_bind_params *params,
                              const char *text1, const char *text2)
{
    ssk_binding *b = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_create(&b, rig, params, &err), SSK_ERROR_BIND);
    assert_null(b);
    printf("expected error: %s\n", err.message);
    assert_message_contains(err, text1);
    if (text2) assert_message_contains(err, text2);
}

static void test_bind_errors_name_the_culprit(void **state)
{
    (void)state;
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    char text[64];

    /* a rig without bones */
    rig_parts none;
    parts_alloc(&none, 0, 3, 1, 0);
    set_vertex(&none, 1, 1, 0, 0);
    set_vertex(&none, 2, 0, 1, 0);
    set_triangle(&none, 0, 0, 1, 2);
    ssk_rig *rig = parts_make(&none, "boneless");
    expect_bind_error(rig, &params, "no bones", NULL);
    ssk_rig_destroy(rig);
    parts_free(&none);

    ssk_rig *limb = make_test_limb();
    rig_parts p;

    /* a zero-length bone that carries weight */
    parts_from_rig(&p, limb, 0, 0, 0);
    memcpy(p.tails + 3, p.heads + 3, 3 * sizeof(float));
    rig = parts_make(&p, "limb");
    expect_bind_error(rig, &params, "bone 'bone_1'", "zero length");
    ssk_rig_destroy(rig);
    parts_free(&p);

    /* a zero-length bone without weight is no error and never chosen, even
     * where it sits exactly on a vertex */
    parts_from_rig(&p, limb, 0, 0, 1);
    p.nb = 3;
    set_bone(&p, 2, 0, p.pos[0], p.pos[1], p.pos[2], p.pos[0], p.pos[1], p.pos[2]);
    rig = parts_make(&p, "limb");
    for (int m = SSK_BIND_DIRECT; m <= SSK_BIND_PLANAR; ++m) {
        ssk_binding *b = bind_or_fail(rig, (ssk_bind_method)m, 6);
        ssk_binding_view v = view_of(b);
        for (uint32_t i = 0; i < v.vertex_count; ++i) assert_true(v.bones[i] != 2);
        ssk_binding_destroy(b);
    }
    ssk_rig_destroy(rig);
    parts_free(&p);

    /* a triangle that repeats a vertex */
    parts_from_rig(&p, limb, 0, 0, 0);
    p.tri[3 * 5 + 1] = p.tri[3 * 5];
    rig = parts_make(&p, "limb");
    expect_bind_error(rig, &params, "mesh 'limb' triangle 5", "repeats a vertex");
    ssk_rig_destroy(rig);
    parts_free(&p);

    /* a zero-area triangle: vertex 0 of rings 0, 1, 2 (angle 0) are
     * collinear, (0.3, 0, 0), (0.3, 0.375, 0), (0.3, 0.75, 0) */
    parts_from_rig(&p, limb, 0, 1, 0);
    set_triangle(&p, p.nf, 0, LIMB_SEGMENTS, 2 * LIMB_SEGMENTS);
    snprintf(text, sizeof text, "mesh 'limb' triangle %u", (unsigned)p.nf);
    p.nf += 1;
    rig = parts_make(&p, "limb");
    expect_bind_error(rig, &params, text, "area");
    ssk_rig_destroy(rig);
    parts_free(&p);

    /* a loose vertex (in no triangle; issue #37): bound by its own
     * projection, onto the bone of its weight */
    parts_from_rig(&p, limb, 1, 0, 0);
    set_vertex(&p, p.nv, 0.1f, 0.5f, 0.1f);
    p.idx[p.k * p.nv] = 0;
    p.w[p.k * p.nv] = 1.0f;
    const uint32_t loose = p.nv;
    p.nv += 1;
    rig = parts_make(&p, "limb");
    {
        ssk_binding *b = NULL;
        ssk_error e = {0};
        if (ssk_binding_create(&b, rig, &params, &e) != SSK_OK)
            fail_msg("a loose vertex: %s", e.message);
        ssk_binding_view bv;
        assert_int_equal(ssk_binding_get(b, &bv, NULL), SSK_OK);
        assert_int_equal(bv.bones[loose], 0);
        assert_true(isfinite(bv.t[loose]));
        ssk_binding_destroy(b);
    }
    ssk_rig_destroy(rig);
    parts_free(&p);

    /* max_distance: without smoothing every ring vertex is LIMB_RADIUS from
     * its attachment point; the first row, vertex 0, fails first */
    params.method = SSK_BIND_DIRECT;
    params.smooth_iterations = 0;
    params.max_distance = 0.9f * LIMB_RADIUS;
    expect_bind_error(limb, &params, "mesh 'limb' vertex 0 ", "max_distance");
    params.max_distance = 1.1f * LIMB_RADIUS;
    ssk_binding *b = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_create(&b, limb, &params, &err), SSK_OK);
    assert_true(view_of(b).params.max_distance == 1.1f * LIMB_RADIUS);
    ssk_binding_destroy(b);
    /* with smoothing the limb's end rings are pulled inward (|s| grows past
     * 1.1 radius) but stay LIMB_RADIUS from their bone: the limit is the
     * distance to the chosen bone, not |s| */
    params.smooth_iterations = 6;
    assert_int_equal(ssk_binding_create(&b, limb, &params, &err), SSK_OK);
    assert_true(report_of(b, limb).max_scale_length > 1.1 * LIMB_RADIUS);
    ssk_binding_destroy(b);
    params.max_distance = 0.9f * LIMB_RADIUS;
    expect_bind_error(limb, &params, "mesh 'limb' vertex 0 ", "max_distance");
    ssk_rig_destroy(limb);
}

/* ------------------------------------------------------------------------ */
/* Files.                                                                    */
/* ------------------------------------------------------------------------ */


static void assert_bindings_equal(const ssk_binding *a, const ssk_binding *b)
{
    ssk_binding_view va = view_of(a), vb = view_of(b);
    assert_int_equal(va.vertex_count, vb.vertex_count);
    assert_int_equal(va.bone_count, vb.bone_count);
    assert_true(va.rig_hash == vb.rig_hash);
    assert_int_equal(va.params.method, vb.params.method);
    assert_int_equal(va.params.smooth_iterations, vb.params.smooth_iterations);
    assert_true(va.params.max_distance == vb.params.max_distance);
    assert_memory_equal(va.bones, vb.bones, va.vertex_count * sizeof(int32_t));
    assert_memory_equal(va.t, vb.t, va.vertex_count * sizeof(float));
    assert_memory_equal(va.scale_vectors, vb.scale_vectors, 3 * va.vertex_count * sizeof(float));
}

static void test_save_load_round_trip(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "limb.bind");
    ssk_rig *rig = make_test_limb();
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    params.method = SSK_BIND_PLANAR;
    params.smooth_iterations = 3;
    params.max_distance = 2.5f;
    ssk_binding *b = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_create(&b, rig, &params, &err), SSK_OK);
    assert_int_equal(ssk_binding_save(b, path, &err), SSK_OK);
    assert_int_equal(tu_dir_entry_count(dir), 1); /* no temporary left */

    /* the header, decoded independently */
    ssk_binding_view v = view_of(b);
    size_t size;
    unsigned char *bytes = tu_read_file(path, &size);
    assert_int_equal(size, FILE_HEADER_BYTES + FILE_BYTES_PER_VERTEX * (size_t)v.vertex_count +
                               FILE_CHECKSUM_BYTES);
    assert_memory_equal(bytes, "SSKBIND1", 8);
    assert_int_equal(tu_get_le32(bytes + 8), 1);
    uint64_t hash = tu_get_le32(bytes + 12) | ((uint64_t)tu_get_le32(bytes + 16) << 32);
    assert_true(hash == ssk_rig_hash(rig));
    assert_int_equal(tu_get_le32(bytes + 20), SSK_BIND_PLANAR);
    assert_int_equal(tu_get_le32(bytes + 24), 3);
    uint32_t distance_bits;
    float distance = 2.5f;
    memcpy(&distance_bits, &distance, 4);
    assert_int_equal(tu_get_le32(bytes + 28), distance_bits);
    assert_int_equal(tu_get_le32(bytes + 32), v.vertex_count);
    assert_int_equal(tu_get_le32(bytes + 36), 2);
    for (uint32_t i = 0; i < v.vertex_count; ++i)
        assert_int_equal((int32_t)tu_get_le32(bytes + FILE_HEADER_BYTES + 4 * i), v.bones[i]);
    free(bytes);

    ssk_binding *loaded = NULL;
    assert_int_equal(ssk_binding_load(&loaded, path, rig, &err), SSK_OK);
    assert_bindings_equal(b, loaded);
    ssk_binding_destroy(loaded);
    /* without a rig there is no hash check */
    assert_int_equal(ssk_binding_load(&loaded, path, NULL, &err), SSK_OK);
    assert_bindings_equal(b, loaded);
    ssk_binding_destroy(loaded);

    /* saving into a missing directory fails with SSK_ERROR_IO */
    char *bad = tu_path_join(dir, "missing/limb.bind");
    assert_int_equal(ssk_binding_save(b, bad, &err), SSK_ERROR_IO);
    assert_message_contains(err, "missing/limb.bind");
    free(bad);
    assert_int_equal(ssk_binding_save(b, "", &err), SSK_ERROR_INVALID_ARGUMENT);

    ssk_binding_destroy(b);
    ssk_rig_destroy(rig);
    tu_remove_tree(dir);
    free(path);
    free(dir);
}

static void test_cached_reuses_and_rebinds(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "limb.bind");
    ssk_rig *rig = make_test_limb();
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    ssk_error err = {0};
    ssk_binding *first = NULL, *second = NULL;
    int reused = -1;
    assert_int_equal(ssk_binding_cached(&first, rig, &params, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    assert_int_equal(tu_dir_entry_count(dir), 1);
    assert_int_equal(ssk_binding_cached(&second, rig, &params, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    assert_bindings_equal(first, second);
    ssk_binding_destroy(second);

    /* AUTO resolves to WEIGHTS on this weighted rig: an explicit WEIGHTS
     * request is the same binding */
    params.method = SSK_BIND_WEIGHTS;
    assert_int_equal(ssk_binding_cached(&second, rig, &params, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_destroy(second);
    /* other parameters rebind and overwrite */
    params.smooth_iterations = 2;
    assert_int_equal(ssk_binding_cached(&second, rig, &params, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    assert_int_equal(view_of(second).params.smooth_iterations, 2);
    ssk_binding_destroy(second);
    assert_int_equal(ssk_binding_cached(&second, rig, &params, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_destroy(second);
    params.method = SSK_BIND_DIRECT;
    assert_int_equal(ssk_binding_cached(&second, rig, &params, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    ssk_binding_destroy(second);

    /* one skin weight changed: another rig, rebound */
    rig_parts p;
    parts_from_rig(&p, rig, 0, 0, 0);
    uint32_t v = 4 * LIMB_SEGMENTS; /* ring 4 (y = 1.5, the joint): 0.5 / 0.5 */
    assert_true(p.w[p.k * v + 1] > 0.0f);
    p.w[p.k * v] *= 0.5f;
    ssk_rig *changed = parts_make(&p, "limb");
    assert_true(ssk_rig_hash(changed) != ssk_rig_hash(rig));
    assert_int_equal(ssk_binding_cached(&second, changed, &params, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    assert_true(view_of(second).rig_hash == ssk_rig_hash(changed));
    ssk_binding_destroy(second);
    assert_int_equal(ssk_binding_cached(&second, changed, &params, path, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_destroy(second);
    assert_int_equal(tu_dir_entry_count(dir), 1);

    /* the hash is a pure function of the rig: an identical copy matches */
    rig_parts q;
    parts_from_rig(&q, rig, 0, 0, 0);
    ssk_rig *copy = parts_make(&q, "renamed"); /* names are not hashed */
    assert_true(ssk_rig_hash(copy) == ssk_rig_hash(rig));
    ssk_rig_destroy(copy);
    parts_free(&q);

    /* no path: binds, saves nothing */
    assert_int_equal(ssk_binding_cached(&second, rig, &params, NULL, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    ssk_binding_destroy(second);

    ssk_binding_destroy(first);
    ssk_rig_destroy(changed);
    parts_free(&p);
    ssk_rig_destroy(rig);
    tu_remove_tree(dir);
    free(path);
    free(dir);
}

static void expect_load_error(const char *path, const ssk_rig *rig, ssk_status status,
                              const char *text)
{
    ssk_binding *b = (ssk_binding *)&status; /* must be reset to NULL */
    ssk_error err = {0};
    assert_int_equal(ssk_binding_load(&b, path, rig, &err), status);
    assert_null(b);
    printf("expected load error: %s\n", err.message);
    assert_message_contains(err, text);
}

static void test_corrupt_truncated_and_foreign_files(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *good = tu_path_join(dir, "good.bind"), *bad = tu_path_join(dir, "bad.bind");
    ssk_rig *rig = make_test_limb();
    ssk_binding *b = bind_or_fail(rig, SSK_BIND_AUTO, 6);
    ssk_error err = {0};
    assert_int_equal(ssk_binding_save(b, good, &err), SSK_OK);
    size_t size;
    unsigned char *bytes = tu_read_file(good, &size);

    expect_load_error(bad, rig, SSK_ERROR_IO, "bad.bind"); /* missing */
    const size_t cuts[] = {0, 10, FILE_HEADER_BYTES + FILE_CHECKSUM_BYTES - 1,
                           FILE_HEADER_BYTES + 7, size / 2, size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; ++i) {
        tu_write_file(bad, bytes, cuts[i]);
        expect_load_error(bad, rig, SSK_ERROR_IO, "truncated");
    }
    /* one byte too many */
    unsigned char *longer = malloc(size + 1);
    assert_non_null(longer);
    memcpy(longer, bytes, size);
    longer[size] = 0;
    tu_write_file(bad, longer, size + 1);
    expect_load_error(bad, rig, SSK_ERROR_IO, "bad.bind");
    free(longer);
    /* a flipped bit in the payload, in the header hash, in the checksum */
    const size_t flips[] = {FILE_HEADER_BYTES + 4 * 7, 13, size - 1};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; ++i) {
        bytes[flips[i]] ^= 0x10;
        tu_write_file(bad, bytes, size);
        expect_load_error(bad, rig, SSK_ERROR_IO, "checksum");
        bytes[flips[i]] ^= 0x10;
    }
    /* another magic, another version */
    bytes[0] = 'X';
    tu_write_file(bad, bytes, size);
    expect_load_error(bad, rig, SSK_ERROR_IO, "not a SpringSkin binding");
    bytes[0] = 'S';
    bytes[8] = 2;
    tu_write_file(bad, bytes, size);
    expect_load_error(bad, rig, SSK_ERROR_IO, "version 2");
    bytes[8] = 1;
    /* text garbage of the right size */
    unsigned char *garbage = malloc(size);
    assert_non_null(garbage);
    for (size_t i = 0; i < size; ++i) garbage[i] = (unsigned char)('a' + i % 26);
    tu_write_file(bad, garbage, size);
    expect_load_error(bad, rig, SSK_ERROR_IO, "not a SpringSkin binding");
    free(garbage);
    /* a directory */
    expect_load_error(dir, rig, SSK_ERROR_IO, dir);

    /* the cache repairs a corrupt file by rebinding */
    tu_write_file(bad, bytes, size / 2);
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    ssk_binding *c = NULL;
    int reused = -1;
    assert_int_equal(ssk_binding_cached(&c, rig, &params, bad, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    assert_bindings_equal(b, c);
    ssk_binding_destroy(c);
    assert_int_equal(ssk_binding_cached(&c, rig, &params, bad, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_destroy(c);

    /* a binding of another rig: same counts (another radius), and other
     * counts (a longer limb) */
    ssk_rig *other = tu_make_limb(LIMB_RINGS, LIMB_SEGMENTS, 2, LIMB_LENGTH, 0.5f, 0.4f, 2);
    expect_load_error(good, other, SSK_ERROR_BINDING_MISMATCH, "another rig");
    ssk_binding_report rep;
    assert_int_equal(ssk_binding_report_compute(&rep, b, other, &err),
                     SSK_ERROR_BINDING_MISMATCH);
    ssk_rig_destroy(other);
    other = tu_make_limb(LIMB_RINGS + 1, LIMB_SEGMENTS, 3, LIMB_LENGTH, LIMB_RADIUS, 0.4f, 2);
    expect_load_error(good, other, SSK_ERROR_BINDING_MISMATCH, "another rig");
    assert_int_equal(ssk_binding_report_compute(&rep, b, other, &err),
                     SSK_ERROR_BINDING_MISMATCH);
    ssk_rig_destroy(other);

    free(bytes);
    ssk_binding_destroy(b);
    ssk_rig_destroy(rig);
    tu_remove_tree(dir);
    free(good);
    free(bad);
    free(dir);
}

/* ------------------------------------------------------------------------ */
/* CLI.                                                                      */
/* ------------------------------------------------------------------------ */

/* The number after `label` in `text`. */
static double number_after(const char *text, const char *label)
{
    const char *p = strstr(text, label);
    if (!p) fprintf(stderr, "'%s' not in output:\n%s\n", label, text);
    assert_non_null(p);
    char *end = NULL;
    double v = strtod(p + strlen(label), &end);
    assert_true(end != p + strlen(label));
    return v;
}

static void test_cli_bind_report_and_cache(void **state)
{
    (void)state;
    char *capture = tu_temp_dir();
    char *dir = tu_temp_dir();
    char *out = tu_path_join(dir, "bcn.bind");

    tu_cli_result r = tu_run_cli(capture, (const char *const[]){"bind", MODEL_PATH, "--report", NULL});
    if (r.exit_code != 0) fprintf(stderr, "%s", r.err);
    assert_int_equal(r.exit_code, 0);
    printf("%s", r.out);
    assert_true(contains(r.out, "bound 3014 vertices to 54 bones (method weights, 6 smoothing"));
    /* the four numbers agree with the library's report of the default binding */
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&scene, MODEL_PATH, &err), SSK_OK);
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    ssk_binding *b = NULL;
    assert_int_equal(ssk_binding_create(&b, ssk_scene_rig(scene), &params, &err), SSK_OK);
    ssk_binding_report rep = report_of(b, ssk_scene_rig(scene));
    const double rel = 1e-5; /* printed with 6 significant digits */
    assert_true(fabs(number_after(r.out, "mean |s|:") - rep.mean_scale_length) <=
                rel * rep.mean_scale_length);
    assert_true(fabs(number_after(r.out, "max |s|:") - rep.max_scale_length) <=
                rel * rep.max_scale_length);
    assert_true(fabs(number_after(r.out, "largest attachment gap:") - rep.max_attachment_gap) <=
                rel * rep.max_attachment_gap);
    assert_true(fabs(number_after(r.out, "off-weight share:") - 100 * rep.off_weight_share) <=
                0.006);
    assert_true(contains(r.out, "%\n"));
    assert_true(number_after(r.out, "next to an unrelated bone:") ==
                (double)rep.unrelated_neighbor_vertices);
    assert_true(number_after(r.out, "on a non-deforming or short bone:") ==
                (double)rep.weak_bone_vertices);
    assert_true(number_after(r.out, "attached far from the weights' center:") ==
                (double)rep.far_from_weights_vertices);
    tu_cli_result_free(&r);

    /* -o: bound, then reused; a different option rebinds */
    r = tu_run_cli(capture, (const char *const[]){"bind", MODEL_PATH, "-o", out, NULL});
    assert_int_equal(r.exit_code, 0);
    assert_true(contains(r.out, "bound 3014 vertices"));
    assert_true(contains(r.out, out));
    tu_cli_result_free(&r);
    ssk_binding *loaded = NULL;
    assert_int_equal(ssk_binding_load(&loaded, out, ssk_scene_rig(scene), &err), SSK_OK);
    assert_bindings_equal(b, loaded);
    ssk_binding_destroy(loaded);
    r = tu_run_cli(capture, (const char *const[]){"bind", MODEL_PATH, "-o", out, NULL});
    assert_int_equal(r.exit_code, 0);
    char expected[512];
    snprintf(expected, sizeof expected, "reused %s (rig unchanged)", out);
    assert_true(contains(r.out, expected));
    tu_cli_result_free(&r);
    r = tu_run_cli(capture, (const char *const[]){"bind", MODEL_PATH, "-o", out, "--method",
                                               "planar", "--smooth=2", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_true(contains(r.out, "bound 3014 vertices to 54 bones (method planar, 2 smoothing"));
    tu_cli_result_free(&r);
    assert_int_equal(tu_dir_entry_count(dir), 1);

    ssk_binding_destroy(b);
    ssk_scene_destroy(scene);
    tu_remove_tree(dir);
    tu_remove_tree(capture);
    free(out);
    free(dir);
    free(capture);
}

static void test_cli_bind_errors(void **state)
{
    (void)state;
    char *capture = tu_temp_dir();
    struct {
        const char *args[8];
        int code;
        const char *text;
    } cases[] = {
        {{"bind", NULL}, EXIT_USAGE, "missing input FILE"},
        {{"bind", MODEL_PATH, "--method", "nearest", NULL}, EXIT_USAGE, "'nearest'"},
        {{"bind", MODEL_PATH, "--smooth", "-1", NULL}, EXIT_USAGE, "--smooth"},
        {{"bind", MODEL_PATH, "--smooth", "six", NULL}, EXIT_USAGE, "--smooth"},
        {{"bind", MODEL_PATH, "--smooth", "1001", NULL}, EXIT_USAGE, "1001"},
        {{"bind", MODEL_PATH, "--max-distance", "nan", NULL}, EXIT_USAGE, "--max-distance"},
        {{"bind", MODEL_PATH, "--max-distance", "-0.5", NULL}, EXIT_USAGE, "--max-distance"},
        {{"bind", MODEL_PATH, "--report=yes", NULL}, EXIT_USAGE, "takes no value"},
        {{"bind", MODEL_PATH, "--frames", "0:1", NULL}, EXIT_USAGE, "unknown option"},
        {{"bind", MODEL_PATH, "-o", "", NULL}, EXIT_USAGE, "empty output"},
        {{"bind", MODEL_PATH, "--max-distance", "0.01", NULL}, EXIT_RUNTIME, "max_distance"},
        {{"bind", SSK_MODELS_DIR "/no/such/file.x", NULL}, EXIT_RUNTIME, "file.x"},
        {{"bind", MODEL_PATH, "-o", "/nonexistent-dir/x.bind", NULL}, EXIT_RUNTIME,
         "/nonexistent-dir/x.bind"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        tu_cli_result r = tu_run_cli(capture, cases[i].args);
        if (r.exit_code != cases[i].code || !contains(r.err, cases[i].text))
            fprintf(stderr, "case %zu: exit %d, stderr: %s\n", i, r.exit_code, r.err);
        assert_int_equal(r.exit_code, cases[i].code);
        assert_true(strncmp(r.err, ERROR_PREFIX, strlen(ERROR_PREFIX)) == 0);
        assert_true(contains(r.err, cases[i].text));
        assert_string_equal(r.out, "");
        tu_cli_result_free(&r);
    }
    tu_cli_result r = tu_run_cli(capture, (const char *const[]){"bind", "--help", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_true(contains(r.out, "--max-distance"));
    tu_cli_result_free(&r);
    r = tu_run_cli(capture, (const char *const[]){"--help", NULL});
    assert_true(contains(r.out, "bind FILE"));
    tu_cli_result_free(&r);
    tu_remove_tree(capture);
    free(capture);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params_names_and_argument_errors),
        cmocka_unit_test(test_direct_on_limb_is_the_analytic_projection),
        cmocka_unit_test(test_object_matrix_places_vertices_in_rig_space),
        cmocka_unit_test(test_planar_on_straight_chain_equals_projection),
        cmocka_unit_test(test_planar_on_a_bend_uses_equation_13),
        cmocka_unit_test(test_planar_siblings_get_their_own_planes),
        cmocka_unit_test(test_weights_respects_candidates),
        cmocka_unit_test(test_smoothing_reduces_the_largest_gap),
        cmocka_unit_test(test_point_cloud_keeps_its_projection),
        cmocka_unit_test(test_bcn_smoothing_closes_gaps),
        cmocka_unit_test(test_bind_errors_name_the_culprit),
        cmocka_unit_test(test_save_load_round_trip),
        cmocka_unit_test(test_cached_reuses_and_rebinds),
        cmocka_unit_test(test_corrupt_truncated_and_foreign_files),
        cmocka_unit_test(test_cli_bind_report_and_cache),
        cmocka_unit_test(test_cli_bind_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
