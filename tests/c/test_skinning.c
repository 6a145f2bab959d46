/*
 * test_skinning.c — LBS, DQS, normals and the max-displacement reduction
 * against analytic results, and the rig's weight normalization and rest
 * behavior. Every test body runs on both backends (CPU, GL); the GL cases
 * skip with a message only when no GL context can be created at all.
 */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define PI_F 3.14159265358979323846f
/* Float32 tolerance for analytic comparisons on unit-sized geometry. */
#define EXACT_TOL 2e-6
#define ANALYTIC_TOL 1e-5

static const float X_AXIS[3] = {1, 0, 0}, Y_AXIS[3] = {0, 1, 0}, Z_AXIS[3] = {0, 0, 1};
static const float ORIGIN[3] = {0, 0, 0};

/* Two bones along +Y with the joint at the origin: bone 0 below, bone 1
 * above; `n` vertices given, all weighted w0/w1. */
static ssk_rig *two_bone_rig(const float *pos, uint32_t n, float w0, float w1)
{
    int32_t parents[2] = {-1, 0};
    float bind[32];
    tu_mat4_translation(bind, 0, -1, 0);
    tu_mat4_identity(bind + 16);
    int32_t *idx = malloc(2 * n * sizeof(int32_t));
    float *w = malloc(2 * n * sizeof(float));
    for (uint32_t v = 0; v < n; ++v) {
        idx[2 * v] = 0;
        idx[2 * v + 1] = 1;
        w[2 * v] = w0;
        w[2 * v + 1] = w1;
    }
    ssk_skeleton_desc sk = {2, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md = {"m", n, pos, 0, NULL, 2, idx, w, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_rig_create(&rig, &sk, &md, 1, &err), SSK_OK);
    free(idx);
    free(w);
    return rig;
}

/* The backend a test body runs on (its cmocka state). */
typedef struct backend_case {
    ssk_backend backend;
    ssk_gl_context *gl;
} backend_case;

static backend_case cpu_case = {SSK_BACKEND_CPU, NULL};
static backend_case gl_case = {SSK_BACKEND_GL, NULL};
static char gl_unavailable[SSK_ERROR_MESSAGE_SIZE];

/* The backend of this test; skips GL tests when there is no GL at all. */
static const backend_case *backend_of(void **state)
{
    const backend_case *c = *state;
    if (c->backend == SSK_BACKEND_GL && !c->gl) {
        print_message("GL tests skipped: no GL context can be created: %s\n", gl_unavailable);
        skip();
    }
    return c;
}

static ssk_deformer *make_deformer(const backend_case *c, const ssk_rig *rig, ssk_method method)
{
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = method, .backend = c->backend, .gl_context = c->gl};
    ssk_error err = {0};
    ssk_status st = ssk_deformer_create(&d, rig, &desc, &err);
    if (st != SSK_OK) fail_msg("ssk_deformer_create: %s", err.message);
    assert_int_equal(ssk_deformer_backend(d), c->backend);
    return d;
}

static const backend_case *current; /* set by each test body via BACKEND() */
#define BACKEND() (current = backend_of(state))

static void deform(const ssk_rig *rig, ssk_method method, float *dst, const float *skin,
                   const float *objects)
{
    ssk_deformer *d = make_deformer(current, rig, method);
    ssk_error err = {0};
    ssk_status st = ssk_deformer_deform(d, dst, skin, objects, &err);
    if (st != SSK_OK) fail_msg("ssk_deformer_deform: %s", err.message);
    ssk_deformer_destroy(d);
}

/* Normals of the rig at rest through a deformer (one identity bone). */
static void rest_normals(const ssk_rig *rig, float *dst)
{
    uint32_t nb = ssk_rig_bone_count(rig);
    float *skin = calloc(16 * (nb + 1), sizeof(float));
    for (uint32_t b = 0; b < nb; ++b) tu_mat4_identity(skin + 16 * b);
    ssk_deformer *d = make_deformer(current, rig, SSK_METHOD_LBS);
    ssk_error err = {0};
    assert_int_equal(ssk_deformer_deform(d, NULL, skin, NULL, &err), SSK_OK);
    ssk_status st = ssk_deformer_normals(d, dst, &err);
    if (st != SSK_OK) fail_msg("ssk_deformer_normals: %s", err.message);
    ssk_deformer_destroy(d);
    free(skin);
}

static void test_one_bone_rigid_is_exact(void **state)
{
    BACKEND();
    float pos[] = {0.3f, 0.2f, -0.1f, 1, 2, 3, -0.5f, 0.0f, 0.7f};
    ssk_rig *rig = two_bone_rig(pos, 3, 1.0f, 0.0f);
    float rot[16], tr[16], skin[32], expect[9], out[9];
    const float axis[3] = {0.48f, 0.6f, 0.64f}; /* unit */
    tu_mat4_rotation(rot, axis, 1.1f, ORIGIN);
    tu_mat4_translation(tr, 0.5f, -2.0f, 3.0f);
    tu_mat4_mul(skin, tr, rot);
    tu_mat4_identity(skin + 16);
    for (int v = 0; v < 3; ++v)
        for (int r = 0; r < 3; ++r)
            expect[3 * v + r] = skin[4 * r] * pos[3 * v] + skin[4 * r + 1] * pos[3 * v + 1] +
                                skin[4 * r + 2] * pos[3 * v + 2] + skin[4 * r + 3];
    deform(rig, SSK_METHOD_LBS, out, skin, NULL);
    assert_true(tu_max_abs_diff(out, expect, 9) < EXACT_TOL);
    deform(rig, SSK_METHOD_DQS, out, skin, NULL);
    assert_true(tu_max_abs_diff(out, expect, 9) < ANALYTIC_TOL);
    ssk_rig_destroy(rig);
}

/* A ring of points of radius r at the joint, weighted 50/50. */
static void ring(float *pos, int n, float r)
{
    for (int i = 0; i < n; ++i) {
        float a = 2 * PI_F * (float)i / (float)n;
        pos[3 * i] = r * cosf(a);
        pos[3 * i + 1] = 0;
        pos[3 * i + 2] = r * sinf(a);
    }
}

static void test_bend_90_lbs_collapse_dqs_keeps_radius(void **state)
{
    BACKEND();
    enum { N = 16 };
    float pos[3 * N], out[3 * N], skin[32];
    ring(pos, N, 1.0f);
    ssk_rig *rig = two_bone_rig(pos, N, 0.5f, 0.5f);
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z_AXIS, PI_F / 2, ORIGIN);
    /* LBS: the average of p and R90 p: |p'| = |p| cos(45°) for the point in
     * the bend plane (x axis), unchanged on the bend axis (z axis). */
    deform(rig, SSK_METHOD_LBS, out, skin, NULL);
    for (int i = 0; i < N; ++i) {
        const float *p = pos + 3 * i;
        float rp[3] = {-p[1], p[0], p[2]};
        for (int k = 0; k < 3; ++k) assert_true(fabs(out[3 * i + k] - 0.5 * (p[k] + rp[k])) < EXACT_TOL);
    }
    assert_true(fabs(out[1] - 0.5) < EXACT_TOL && fabs(out[0] - 0.5) < EXACT_TOL); /* (1,0,0) -> (.5,.5,0) */
    /* DQS: the half rotation R45 p, distance to the joint kept. */
    deform(rig, SSK_METHOD_DQS, out, skin, NULL);
    float half[16];
    tu_mat4_rotation(half, Z_AXIS, PI_F / 4, ORIGIN);
    for (int i = 0; i < N; ++i) {
        for (int r = 0; r < 3; ++r) {
            float e = half[4 * r] * pos[3 * i] + half[4 * r + 1] * pos[3 * i + 1] + half[4 * r + 2] * pos[3 * i + 2];
            assert_true(fabs(out[3 * i + r] - e) < ANALYTIC_TOL);
        }
    }
    ssk_rig_destroy(rig);
}

static void test_twist_180_lbs_candy_wrapper_dqs_keeps_radius(void **state)
{
    BACKEND();
    enum { N = 12 };
    float pos[3 * N], out[3 * N], skin[32];
    ring(pos, N, 0.8f);
    ssk_rig *rig = two_bone_rig(pos, N, 0.5f, 0.5f);
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Y_AXIS, PI_F, ORIGIN);
    deform(rig, SSK_METHOD_LBS, out, skin, NULL);
    for (int i = 0; i < 3 * N; ++i) assert_true(fabs(out[i]) < EXACT_TOL); /* collapse to the axis */
    deform(rig, SSK_METHOD_DQS, out, skin, NULL);
    float half[16];
    tu_mat4_rotation(half, Y_AXIS, PI_F / 2, ORIGIN);
    for (int i = 0; i < N; ++i) {
        float radius = sqrtf(out[3 * i] * out[3 * i] + out[3 * i + 2] * out[3 * i + 2]);
        assert_true(fabs(radius - 0.8) < ANALYTIC_TOL);
        assert_true(fabs(out[3 * i + 1]) < ANALYTIC_TOL);
        /* the quarter turn either way is the DQS result */
        float e = half[0] * pos[3 * i] + half[2] * pos[3 * i + 2];
        assert_true(fabs(fabs(out[3 * i]) - fabs(e)) < ANALYTIC_TOL);
    }
    ssk_rig_destroy(rig);
}

static void test_dqs_identical_transforms_equal_the_transform(void **state)
{
    BACKEND();
    enum { N = 10 };
    float pos[3 * N], out[3 * N], skin[32], rot[16], tr[16], expect[3 * N];
    for (int i = 0; i < 3 * N; ++i) pos[i] = (float)((i * 37) % 11) / 5.0f - 1.0f;
    ssk_rig *rig = two_bone_rig(pos, N, 0.3f, 0.7f);
    const float axis[3] = {0, 0.6f, 0.8f};
    tu_mat4_rotation(rot, axis, 2.5f, ORIGIN);
    tu_mat4_translation(tr, -1, 4, 0.25f);
    tu_mat4_mul(skin, tr, rot);
    memcpy(skin + 16, skin, 16 * sizeof(float));
    for (int v = 0; v < N; ++v)
        for (int r = 0; r < 3; ++r)
            expect[3 * v + r] = skin[4 * r] * pos[3 * v] + skin[4 * r + 1] * pos[3 * v + 1] +
                                skin[4 * r + 2] * pos[3 * v + 2] + skin[4 * r + 3];
    deform(rig, SSK_METHOD_DQS, out, skin, NULL);
    assert_true(tu_max_abs_diff(out, expect, 3 * N) < ANALYTIC_TOL);
    deform(rig, SSK_METHOD_LBS, out, skin, NULL);
    assert_true(tu_max_abs_diff(out, expect, 3 * N) < ANALYTIC_TOL);
    ssk_rig_destroy(rig);
}

static void test_weights_are_normalized(void **state)
{
    BACKEND();
    float pos[6] = {1, 0, 0, 0, 0, 1};
    ssk_rig *a = two_bone_rig(pos, 2, 2.0f, 6.0f);
    ssk_rig *b = two_bone_rig(pos, 2, 0.25f, 0.75f);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(a, 0, &mv, NULL), SSK_OK);
    assert_true(fabs(mv.weights[0] - 0.25) < 1e-7 && fabs(mv.weights[1] - 0.75) < 1e-7);
    float skin[32], oa[6], ob[6];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, X_AXIS, 1.0f, ORIGIN);
    for (int m = SSK_METHOD_LBS; m <= SSK_METHOD_DQS; ++m) { /* weight-based methods */
        deform(a, (ssk_method)m, oa, skin, NULL);
        deform(b, (ssk_method)m, ob, skin, NULL);
        assert_true(tu_max_abs_diff(oa, ob, 6) < EXACT_TOL);
        /* and the result really moved */
        assert_true(tu_max_abs_diff(oa, pos, 6) > 0.1);
    }
    ssk_rig_destroy(a);
    ssk_rig_destroy(b);
}

static void test_zero_weight_vertices_stay_at_rest(void **state)
{
    BACKEND();
    float pos[9] = {1, 2, 3, -1, 0.5f, 2, 0, 0, 0};
    ssk_rig *rig = two_bone_rig(pos, 3, 0.0f, 0.0f);
    float skin[32], out[9], objects[16];
    tu_mat4_translation(skin, 5, 5, 5);
    tu_mat4_rotation(skin + 16, Z_AXIS, 1.0f, ORIGIN);
    tu_mat4_translation(objects, 1, 2, 3);
    assert_int_equal(ssk_rig_max_influences(rig), 0);
    assert_int_equal(ssk_rig_deforming_bone_count(rig), 0);
    for (int m = SSK_METHOD_LBS; m <= SSK_METHOD_DQS; ++m) { /* weight-based methods */
        deform(rig, (ssk_method)m, out, skin, NULL);
        assert_memory_equal(out, pos, sizeof pos);
        deform(rig, (ssk_method)m, out, skin, objects);
        assert_memory_equal(out, pos, sizeof pos);
    }
    ssk_rig_destroy(rig);
}

static void test_dqs_scaled_bone_uses_separate_scale_matrix(void **state)
{
    BACKEND();
    /* Bone 1: rotate 90° about Z after scaling x by 2 (about the joint at
     * the origin); bone 0 identity; weights 1/2 each. Blender's rule: the
     * scale matrices blend linearly with identity for the unscaled bone
     * (diag(1.5, 1, 1)), then the half rotation applies:
     * v' = R45 · diag(1.5, 1, 1) · v. */
    enum { N = 6 };
    float pos[3 * N] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0.5f, -0.5f, 0.25f, -1, 2, 0.5f, 0.3f, 0.3f, -0.3f};
    float out[3 * N], skin[32], rot[16], scale[16], half[16];
    ssk_rig *rig = two_bone_rig(pos, N, 0.5f, 0.5f);
    tu_mat4_identity(skin);
    tu_mat4_rotation(rot, Z_AXIS, PI_F / 2, ORIGIN);
    tu_mat4_scale(scale, 2, 1, 1, ORIGIN);
    tu_mat4_mul(skin + 16, rot, scale);
    tu_mat4_rotation(half, Z_AXIS, PI_F / 4, ORIGIN);
    deform(rig, SSK_METHOD_DQS, out, skin, NULL);
    for (int v = 0; v < N; ++v) {
        float s[3] = {1.5f * pos[3 * v], pos[3 * v + 1], pos[3 * v + 2]};
        for (int r = 0; r < 3; ++r) {
            float e = half[4 * r] * s[0] + half[4 * r + 1] * s[1] + half[4 * r + 2] * s[2];
            assert_true(fabs(out[3 * v + r] - e) < ANALYTIC_TOL);
        }
    }
    /* A single scaled bone reproduces its matrix exactly (scale then
     * rotation recombine). */
    ssk_rig *one = two_bone_rig(pos, N, 0.0f, 1.0f);
    deform(one, SSK_METHOD_DQS, out, skin, NULL);
    for (int v = 0; v < N; ++v)
        for (int r = 0; r < 3; ++r) {
            const float *m = skin + 16;
            float e = m[4 * r] * pos[3 * v] + m[4 * r + 1] * pos[3 * v + 1] + m[4 * r + 2] * pos[3 * v + 2] + m[4 * r + 3];
            assert_true(fabs(out[3 * v + r] - e) < ANALYTIC_TOL);
        }
    ssk_rig_destroy(one);
    ssk_rig_destroy(rig);
}

static void test_object_matrices_conjugate_the_skinning(void **state)
{
    BACKEND();
    /* Mesh object matrix O (object -> rig) at rest and O_t at the frame:
     * LBS gives inverse(O_t) · S · O · v for a single bone. */
    float pos[6] = {0.2f, 0.1f, 0.4f, -1, 0.5f, 0.25f};
    float obj[16], obj_t[16], rot[16], skin[16], inv_t[16];
    tu_mat4_rotation(rot, X_AXIS, 0.7f, ORIGIN);
    tu_mat4_translation(obj, 0, 1, 0);
    tu_mat4_mul(obj, obj, rot);
    tu_mat4_translation(obj_t, 2, 1, 0);
    tu_mat4_translation(inv_t, -2, -1, 0);
    tu_mat4_rotation(skin, Z_AXIS, 0.9f, Y_AXIS);
    int32_t parents[1] = {-1}, idx[2] = {0, 0};
    float bind[16], w[2] = {1, 1}, out[6], full[16];
    tu_mat4_identity(bind);
    ssk_skeleton_desc sk = {1, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md = {"m", 2, pos, 0, NULL, 1, idx, w, obj};
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &sk, &md, 1, NULL), SSK_OK);
    tu_mat4_mul(full, skin, obj);
    tu_mat4_mul(full, inv_t, full);
    float expect[6];
    for (int v = 0; v < 2; ++v)
        for (int r = 0; r < 3; ++r)
            expect[3 * v + r] = full[4 * r] * pos[3 * v] + full[4 * r + 1] * pos[3 * v + 1] + full[4 * r + 2] * pos[3 * v + 2] + full[4 * r + 3];
    for (int m = SSK_METHOD_LBS; m <= SSK_METHOD_DQS; ++m) { /* weight-based methods */
        deform(rig, (ssk_method)m, out, skin, obj_t);
        assert_true(tu_max_abs_diff(out, expect, 6) < ANALYTIC_TOL);
    }
    ssk_rig_destroy(rig);
}

static void test_normals_of_octahedron_are_radial(void **state)
{
    BACKEND();
    const float s = 1.7f;
    float pos[18] = {s, 0, 0, -s, 0, 0, 0, s, 0, 0, -s, 0, 0, 0, s, 0, 0, -s};
    /* 8 faces, counter-clockwise seen from outside */
    int32_t tri[24] = {0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4, 2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5};
    ssk_skeleton_desc sk = {0, NULL, NULL, NULL, NULL, NULL};
    ssk_mesh_desc md = {"octa", 6, pos, 8, tri, 0, NULL, NULL, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_rig_create(&rig, &sk, &md, 1, &err), SSK_OK);
    float n[18];
    rest_normals(rig, n);
    for (int v = 0; v < 6; ++v)
        for (int k = 0; k < 3; ++k) assert_true(fabs(n[3 * v + k] - pos[3 * v + k] / s) < EXACT_TOL);
    /* Adjacency: every vertex of an octahedron has 4 neighbors, never its
     * opposite vertex. */
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    for (int v = 0; v < 6; ++v) {
        assert_int_equal(mv.adjacency_offsets[v + 1] - mv.adjacency_offsets[v], 4);
        for (uint32_t i = mv.adjacency_offsets[v]; i < mv.adjacency_offsets[v + 1]; ++i)
            assert_int_not_equal(mv.adjacency[i], (uint32_t)(v ^ 1));
    }
    ssk_rig_destroy(rig);
}

static void test_normals_area_weighted(void **state)
{
    BACKEND();
    /* Vertex 0 shared by a big triangle in the z = 0 plane (normal +z, area
     * 2) and a small one in the x = 0 plane (normal +x, area 0.5): the
     * normal is (0.5, 0, 2) normalized. */
    float pos[15] = {0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0, 1};
    int32_t tri[6] = {0, 1, 2, 0, 3, 4};
    ssk_skeleton_desc sk = {0};
    ssk_mesh_desc md = {"pair", 5, pos, 2, tri, 0, NULL, NULL, NULL};
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &sk, &md, 1, NULL), SSK_OK);
    float n[15];
    rest_normals(rig, n);
    double l = sqrt(0.25 + 4.0);
    assert_true(fabs(n[0] - 0.5 / l) < EXACT_TOL);
    assert_true(fabs(n[1]) < EXACT_TOL);
    assert_true(fabs(n[2] - 2.0 / l) < EXACT_TOL);
    ssk_rig_destroy(rig);
}

static void test_limb_lbs_and_dqs_agree_at_rest_and_differ_when_bent(void **state)
{
    BACKEND();
    ssk_rig *rig = tu_make_limb(24, 16, 2, 2.0f, 0.25f, 0.5f, 4);
    uint32_t nv = ssk_rig_vertex_count(rig);
    float *a = malloc(3 * nv * sizeof(float)), *b = malloc(3 * nv * sizeof(float));
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_identity(skin + 16);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    deform(rig, SSK_METHOD_LBS, a, skin, NULL);
    deform(rig, SSK_METHOD_DQS, b, skin, NULL);
    assert_true(tu_max_abs_diff(a, mv.positions, 3 * nv) < EXACT_TOL);
    assert_true(tu_max_abs_diff(b, mv.positions, 3 * nv) < ANALYTIC_TOL);
    const float joint[3] = {0, 1, 0};
    tu_mat4_rotation(skin + 16, Z_AXIS, PI_F / 2, joint);
    deform(rig, SSK_METHOD_LBS, a, skin, NULL);
    deform(rig, SSK_METHOD_DQS, b, skin, NULL);
    assert_true(tu_max_abs_diff(a, b, 3 * nv) > 0.01);
    free(a);
    free(b);
    ssk_rig_destroy(rig);
}

/* The 8-lane DQS path (4 influences, rigid bones) against the general
 * per-vertex path (the same weights stored with a 5th, empty slot), with
 * large random rotations so that antipodal flips occur. */
static void test_dqs_lane_path_equals_general_path(void **state)
{
    BACKEND();
    enum { N = 203, B = 6 };
    float pos[3 * N], w4[4 * N], w5[5 * N], skin[16 * B], bind[16 * B];
    int32_t i4[4 * N], i5[5 * N], parents[B];
    unsigned seed = 12345u;
#define RND() ((seed = seed * 1103515245u + 12345u), (float)((seed >> 8) & 0xffff) / 65535.0f)
    for (int v = 0; v < N; ++v) {
        for (int k = 0; k < 3; ++k) pos[3 * v + k] = 2 * RND() - 1;
        for (int i = 0; i < 5; ++i) {
            int32_t b = (int32_t)(RND() * (B - 0.01f));
            float w = (v % 17 == 0) ? 0.0f : RND(); /* some unweighted vertices */
            if (i < 4) {
                i4[4 * v + i] = b;
                w4[4 * v + i] = w;
            }
            i5[5 * v + i] = i < 4 ? b : 0;
            w5[5 * v + i] = i < 4 ? w : 0.0f;
        }
    }
    for (int b = 0; b < B; ++b) {
        parents[b] = b - 1;
        tu_mat4_translation(bind + 16 * b, 0, (float)b, 0);
        float axis[3] = {RND() - 0.5f, RND() - 0.5f, RND() - 0.5f};
        float l = sqrtf(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
        for (int k = 0; k < 3; ++k) axis[k] /= l;
        const float pivot[3] = {RND(), RND(), RND()};
        tu_mat4_rotation(skin + 16 * b, axis, 6.0f * RND() - 3.0f, pivot);
    }
#undef RND
    ssk_skeleton_desc sk = {B, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc m4 = {"k4", N, pos, 0, NULL, 4, i4, w4, NULL};
    ssk_mesh_desc m5 = {"k5", N, pos, 0, NULL, 5, i5, w5, NULL};
    ssk_rig *r4 = NULL, *r5 = NULL;
    assert_int_equal(ssk_rig_create(&r4, &sk, &m4, 1, NULL), SSK_OK);
    assert_int_equal(ssk_rig_create(&r5, &sk, &m5, 1, NULL), SSK_OK);
    float o4[3 * N], o5[3 * N];
    deform(r4, SSK_METHOD_DQS, o4, skin, NULL);
    deform(r5, SSK_METHOD_DQS, o5, skin, NULL);
    assert_true(tu_max_abs_diff(o4, o5, 3 * N) < ANALYTIC_TOL);
    for (int v = 0; v < N; v += 17) /* unweighted vertices stay at rest */
        for (int k = 0; k < 3; ++k) assert_true(o4[3 * v + k] == pos[3 * v + k]);
    ssk_rig_destroy(r4);
    ssk_rig_destroy(r5);
}

/* Max-displacement reduction: a rigid translation by (3, 4, 0) moves every
 * vertex by exactly 5; a rotation by angle a about the Y axis moves a
 * vertex at distance r from the axis by 2 r sin(a / 2), largest for the
 * largest r. */
static void test_max_displacement_reduction(void **state)
{
    BACKEND();
    ssk_rig *rig = tu_make_limb(40, 24, 2, 2.0f, 0.3f, 0.5f, 4);
    uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    float skin[32], out_max = -1.0f;
    ssk_error err = {0};
    tu_mat4_translation(skin, 3, 4, 0);
    tu_mat4_translation(skin + 16, 3, 4, 0);
    ssk_deformer *d = make_deformer(current, rig, SSK_METHOD_LBS);
    assert_int_equal(ssk_deformer_max_displacement(d, &out_max, mv.positions, &err),
                     SSK_ERROR_INVALID_ARGUMENT); /* no deform yet */
    assert_int_equal(ssk_deformer_deform(d, NULL, skin, NULL, &err), SSK_OK);
    assert_int_equal(ssk_deformer_max_displacement(d, &out_max, mv.positions, &err), SSK_OK);
    assert_true(fabs(out_max - 5.0) < 1e-5);
    const float angle = 1.2f;
    tu_mat4_rotation(skin, Y_AXIS, angle, ORIGIN);
    tu_mat4_rotation(skin + 16, Y_AXIS, angle, ORIGIN);
    float *out = malloc(3 * nv * sizeof(float));
    assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_OK);
    assert_int_equal(ssk_deformer_max_displacement(d, &out_max, mv.positions, &err), SSK_OK);
    assert_true(fabs(out_max - 2.0 * 0.3 * sin(angle / 2)) < 1e-5);
    /* against the deformed positions themselves: zero */
    assert_int_equal(ssk_deformer_max_displacement(d, &out_max, out, &err), SSK_OK);
    assert_true(out_max == 0.0f);
    free(out);
    ssk_deformer_destroy(d);
    ssk_rig_destroy(rig);
}

int main(void)
{
    ssk_error err = {0};
    if (ssk_gl_context_create(&gl_case.gl, &err) != SSK_OK)
        snprintf(gl_unavailable, sizeof gl_unavailable, "%s", err.message);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_max_displacement_reduction, &cpu_case),
        cmocka_unit_test_prestate(test_max_displacement_reduction, &gl_case),
        cmocka_unit_test_prestate(test_one_bone_rigid_is_exact, &cpu_case),
        cmocka_unit_test_prestate(test_one_bone_rigid_is_exact, &gl_case),
        cmocka_unit_test_prestate(test_bend_90_lbs_collapse_dqs_keeps_radius, &cpu_case),
        cmocka_unit_test_prestate(test_bend_90_lbs_collapse_dqs_keeps_radius, &gl_case),
        cmocka_unit_test_prestate(test_twist_180_lbs_candy_wrapper_dqs_keeps_radius, &cpu_case),
        cmocka_unit_test_prestate(test_twist_180_lbs_candy_wrapper_dqs_keeps_radius, &gl_case),
        cmocka_unit_test_prestate(test_dqs_identical_transforms_equal_the_transform, &cpu_case),
        cmocka_unit_test_prestate(test_dqs_identical_transforms_equal_the_transform, &gl_case),
        cmocka_unit_test_prestate(test_weights_are_normalized, &cpu_case),
        cmocka_unit_test_prestate(test_weights_are_normalized, &gl_case),
        cmocka_unit_test_prestate(test_zero_weight_vertices_stay_at_rest, &cpu_case),
        cmocka_unit_test_prestate(test_zero_weight_vertices_stay_at_rest, &gl_case),
        cmocka_unit_test_prestate(test_dqs_scaled_bone_uses_separate_scale_matrix, &cpu_case),
        cmocka_unit_test_prestate(test_dqs_scaled_bone_uses_separate_scale_matrix, &gl_case),
        cmocka_unit_test_prestate(test_object_matrices_conjugate_the_skinning, &cpu_case),
        cmocka_unit_test_prestate(test_object_matrices_conjugate_the_skinning, &gl_case),
        cmocka_unit_test_prestate(test_normals_of_octahedron_are_radial, &cpu_case),
        cmocka_unit_test_prestate(test_normals_of_octahedron_are_radial, &gl_case),
        cmocka_unit_test_prestate(test_normals_area_weighted, &cpu_case),
        cmocka_unit_test_prestate(test_normals_area_weighted, &gl_case),
        cmocka_unit_test_prestate(test_limb_lbs_and_dqs_agree_at_rest_and_differ_when_bent, &cpu_case),
        cmocka_unit_test_prestate(test_limb_lbs_and_dqs_agree_at_rest_and_differ_when_bent, &gl_case),
        cmocka_unit_test_prestate(test_dqs_lane_path_equals_general_path, &cpu_case),
        cmocka_unit_test_prestate(test_dqs_lane_path_equals_general_path, &gl_case),
    };
    int failed = cmocka_run_group_tests_name("skinning (cpu, gl)", tests, NULL, NULL);
    ssk_gl_context_destroy(gl_case.gl);
    return failed;
}
