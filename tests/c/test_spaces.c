/* test_spaces.c — spaces and welded topology on imported files.
 *
 * A generated .x character: a tube along +Y (13 rings of 12 segments,
 * radius 0.4, height 3) in two meshes that share ring 6 (Lower: rings 0-6,
 * Upper: rings 6-12), each ring closed by a UV seam (the first vertex
 * repeated with u = 1, so Assimp keeps both copies), skinned to a chain of
 * three bones (heads at y = 0, 1, 2) that bends and twists over 2 s.
 *
 * The same character is written with other transforms W around its
 * skeleton (DirectX convention: the mesh's vertices and the bones' offset
 * matrices are in the root space of the bind pose, so they are written
 * moved by W too, and the frames holding the meshes are ignored; they
 * carry unrelated transforms here to show it):
 *   plain       W = identity;
 *   wrapped     W on a "World" frame around Armature and Body (scale 0.01,
 *               a rotation, a translation);
 *   fbx_like    W on the Armature frame: scale 100 and a -90 degree
 *               rotation about X, what Blender's FBX exporter writes;
 *   parented    the same W, the Body frame inside Armature;
 *   nonuniform  W on the Armature frame: scale (2, 1, 0.5) and a rotation.
 * Every method (LBS, DQS, rigid, IRS, spring, CoR), on both backends, must
 * give W applied to plain's positions (non-uniform: because skinning blends
 * in the armature's space, as Blender does; in world space DQS would
 * shear). Before rig space was the armature's, DQS and CoR came out about
 * 100 times too large on `fbx_like`.
 *
 * On the same files: coincident vertices (the seams and the shared ring)
 * come out of the binding- and neighbor-based methods at one place (0 on
 * the CPU, 1e-6 of the diagonal on GL), and LBS and DQS keep the copies
 * (same weights) together too. */
#include "testutil.h"
#include "model/internal.h" /* ssk_mat4_invert, ssk_mat4_transform_point */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RINGS 13
#define SEGMENTS 12
#define SHARED_RING 6
#define RADIUS 0.4
#define HEIGHT 3.0
#define BONES 3
/* Half-width of the weight blend around a joint (model units). */
#define BLEND 0.35
/* Positions of two node set-ups agree within this fraction of the
 * diagonal (float32 through different matrices, springs iterating). */
#define SPACE_TOL 1e-5
/* The springs iterate from a first stage that differs by rounding; their
 * torsion terms amplify it (docs/library.md, the spring deformer) and a convergence test
 * on the edge can take one more iteration: a looser bound, still far below
 * what a wrong space gives (whole diagonals). */
#define SPRING_SPACE_TOL 1e-3
/* GL's tolerance between coincident vertices, of the diagonal. */
#define GL_TEAR_TOL 1e-6
#define FPS 10.0
#define PI 3.14159265358979323846

static ssk_gl_context *gl;
static char gl_unavailable[SSK_ERROR_MESSAGE_SIZE];

typedef struct variant {
    const char *name;
    float world[16];      /* W, X row-vector order (rows: images of the axes,
                             then the translation) */
    int wrap;             /* W on a World frame around Armature and Body
                             (else on Armature) */
    int body_in_armature; /* the Body frame inside Armature */
} variant;

/* The frames that hold the meshes carry this, which the importer ignores
 * (X row-vector order: a turn about Y, a shift). */
#define BODY_X "0.0,0.0,-1.0,0.0,0.0,1.0,0.0,0.0,1.0,0.0,0.0,0.0,7.0,0.0,0.0,1.0"

static const variant variants[] = {
    {"plain", {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 0, 0},
    /* 0.01 * rotation of 30 degrees about Z, translation (0.05, -0.01, 0.02)
     * (an offset of the model's size: positions are float32 in root space) */
    {"wrapped",
     {0.00866025f, 0.005f, 0, 0, -0.005f, 0.00866025f, 0, 0, 0, 0, 0.01f, 0, 0.05f, -0.01f, 0.02f,
      1},
     1, 0},
    /* 100 * rotation of -90 degrees about X, translation (1, 2, 3) */
    {"fbx_like", {100, 0, 0, 0, 0, 0, -100, 0, 0, 100, 0, 0, 1, 2, 3, 1}, 0, 0},
    {"parented", {100, 0, 0, 0, 0, 0, -100, 0, 0, 100, 0, 0, 1, 2, 3, 1}, 0, 1},
    /* diag(2, 1, 0.5) then a rotation of 90 degrees about Y */
    {"nonuniform", {0, 0, -2, 0, 0, 1, 0, 0, 0.5f, 0, 0, 0, 0.5f, 0, 0, 1}, 0, 0},
};
#define VARIANT_COUNT (sizeof variants / sizeof variants[0])

/* W as a row-major matrix acting on column vectors (the transpose). */
static void world_matrix(float dst[16], const variant *v)
{
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) dst[4 * i + j] = v->world[4 * j + i];
}

/* A row-major (column-vector) matrix in X's row-vector order. */
static void put_matrix(char *dst, size_t size, const float m[16])
{
    size_t len = 0;
    for (int k = 0; k < 16; ++k) {
        int i = k / 4, j = k % 4; /* X element k is the transpose's */
        len += (size_t)snprintf(dst + len, size - len, "%s%.9g%s", k ? "," : "", m[4 * j + i],
                                (m[4 * j + i] == (float)(int)m[4 * j + i]) ? ".0" : "");
    }
}

static const ssk_method methods[] = {SSK_METHOD_LBS,   SSK_METHOD_DQS,   SSK_METHOD_RIGID,
                                     SSK_METHOD_IRS,   SSK_METHOD_SPRING, SSK_METHOD_COR};
#define METHOD_COUNT (sizeof methods / sizeof methods[0])

/* --- the generated file --------------------------------------------------- */

typedef struct text {
    char *data;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->data = realloc(t->data, t->cap);
        assert_non_null(t->data);
    }
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* Weight of bone b at height y: a piecewise-linear partition of unity with
 * blends of half-width BLEND around the joints at y = 1 and y = 2. */
static double bone_weight(int b, double y)
{
    double w[BONES];
    double a = fmin(1.0, fmax(0.0, (y - (1.0 - BLEND)) / (2 * BLEND)));
    double c = fmin(1.0, fmax(0.0, (y - (2.0 - BLEND)) / (2 * BLEND)));
    w[0] = 1.0 - a;
    w[1] = a * (1.0 - c);
    w[2] = a * c;
    return w[b];
}

static void put_mesh(text *t, const variant *v, const char *name, int first_ring, int last_ring)
{
    const int per_ring = SEGMENTS + 1, rings = last_ring - first_ring + 1;
    const int nv = rings * per_ring;
    float w[16];
    world_matrix(w, v);
    put(t, "        Frame %sFrame {\n", name);
    put(t, "            FrameTransformMatrix { " BODY_X ";; }\n");
    put(t, "            Mesh %s {\n                %d;\n", name, nv);
    for (int r = 0; r < rings; ++r)
        for (int s = 0; s < per_ring; ++s) {
            double a = 2.0 * PI * (s % SEGMENTS) / SEGMENTS;
            const float p[3] = {(float)(RADIUS * cos(a)),
                                (float)(HEIGHT * (first_ring + r) / (RINGS - 1)),
                                (float)(RADIUS * sin(a))};
            float q[3];
            ssk_mat4_transform_point(q, w, p);
            put(t, "                %.9g;%.9g;%.9g;%s\n", q[0], q[1], q[2],
                r == rings - 1 && s == per_ring - 1 ? ";" : ",");
        }
    const int nf = 2 * (rings - 1) * SEGMENTS;
    put(t, "                %d;\n", nf);
    int written = 0;
    for (int r = 0; r + 1 < rings; ++r)
        for (int s = 0; s < SEGMENTS; ++s) {
            int a = r * per_ring + s, b = a + 1, c = a + per_ring, d = c + 1;
            ++written;
            put(t, "                3;%d,%d,%d;,\n", a, c, b);
            ++written;
            put(t, "                3;%d,%d,%d;%s\n", b, c, d, written == nf ? ";" : ",");
        }
    put(t, "                MeshTextureCoords {\n                    %d;\n", nv);
    for (int r = 0; r < rings; ++r)
        for (int s = 0; s < per_ring; ++s)
            put(t, "                    %.6f;%.6f;%s\n", (double)s / SEGMENTS,
                (double)(first_ring + r) / (RINGS - 1),
                r == rings - 1 && s == per_ring - 1 ? ";" : ",");
    put(t, "                }\n");
    put(t, "                XSkinMeshHeader { 2; 2; %d; }\n", BONES);
    for (int b = 0; b < BONES; ++b) {
        int count = 0;
        for (int r = 0; r < rings; ++r)
            count += bone_weight(b, HEIGHT * (first_ring + r) / (RINGS - 1)) > 0.0 ? per_ring : 0;
        put(t, "                SkinWeights {\n                    \"Bone%d\";\n                    %d;\n",
            b, count);
        int k = 0;
        for (int r = 0; r < rings; ++r) {
            double w = bone_weight(b, HEIGHT * (first_ring + r) / (RINGS - 1));
            if (!(w > 0.0)) continue;
            for (int s = 0; s < per_ring; ++s, ++k)
                put(t, "%s%d%s", k ? "," : "                    ", r * per_ring + s,
                    k == count - 1 ? ";\n" : "");
        }
        k = 0;
        for (int r = 0; r < rings; ++r) {
            double w = bone_weight(b, HEIGHT * (first_ring + r) / (RINGS - 1));
            if (!(w > 0.0)) continue;
            for (int s = 0; s < per_ring; ++s, ++k)
                put(t, "%s%.9f%s", k ? "," : "                    ", w, k == count - 1 ? ";\n" : "");
        }
        /* offset: root space -> bone space, inverse(W T(0, b, 0)) */
        float bone[16], offset[16];
        char text_matrix[512];
        tu_mat4_translation(bone, 0.0f, (float)b, 0.0f);
        tu_mat4_mul(bone, w, bone);
        assert_true(ssk_mat4_invert(offset, bone));
        put_matrix(text_matrix, sizeof text_matrix, offset);
        put(t, "                    %s;;\n                }\n", text_matrix);
    }
    put(t, "            }\n        }\n");
}

static char *character_x(const variant *v)
{
    text t = {0};
    float w[16], id[16];
    char world[512], identity[512];
    world_matrix(w, v);
    tu_mat4_identity(id);
    put_matrix(world, sizeof world, w);
    put_matrix(identity, sizeof identity, id);
    put(&t, "xof 0303txt 0032\n\nAnimTicksPerSecond { 10; }\n");
    if (v->wrap) put(&t, "Frame World {\n FrameTransformMatrix { %s;; }\n", world);
    put(&t, "Frame Armature {\n    FrameTransformMatrix { %s;; }\n", v->wrap ? identity : world);
    put(&t, "    Frame Bone0 {\n        FrameTransformMatrix { %s;; }\n", identity);
    put(&t, "        Frame Bone1 {\n            FrameTransformMatrix { 1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,1.0,0.0,1.0;; }\n");
    put(&t, "            Frame Bone2 {\n                FrameTransformMatrix { 1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,1.0,0.0,1.0;; }\n");
    put(&t, "            }\n        }\n    }\n");
    if (!v->body_in_armature) put(&t, "}\n");
    put(&t, "Frame Body {\n    FrameTransformMatrix { " BODY_X ";; }\n");
    put_mesh(&t, v, "Lower", 0, SHARED_RING);
    put_mesh(&t, v, "Upper", SHARED_RING, RINGS - 1);
    put(&t, "}\n");
    if (v->body_in_armature) put(&t, "}\n");
    if (v->wrap) put(&t, "}\n");
    /* Bone1 bends about Z (0, 60, 100 degrees), Bone2 twists about Y
     * (0, 90, 170 degrees), Bone0 moves; quaternions (w, x, y, z). */
    put(&t, "AnimationSet Move {\n");
    put(&t, " Animation { { Bone0 }\n  AnimationKey { 2; 3; 0;3;0.0,0.0,0.0;;, 10;3;0.2,0.1,0.0;;, "
            "20;3;0.3,0.0,-0.2;;; }\n }\n");
    put(&t, " Animation { { Bone1 }\n  AnimationKey { 0; 3; 0;4;1.0,0.0,0.0,0.0;;, "
            "10;4;0.866025,0.0,0.0,0.5;;, 20;4;0.642788,0.0,0.0,0.766044;;; }\n"
            "  AnimationKey { 2; 1; 0;3;0.0,1.0,0.0;;; }\n }\n");
    put(&t, " Animation { { Bone2 }\n  AnimationKey { 0; 3; 0;4;1.0,0.0,0.0,0.0;;, "
            "10;4;0.707107,0.0,0.707107,0.0;;, 20;4;0.087156,0.0,0.996195,0.0;;; }\n"
            "  AnimationKey { 2; 1; 0;3;0.0,1.0,0.0;;; }\n }\n");
    put(&t, "}\n");
    return t.data;
}

static ssk_scene *import_variant(const char *dir, const variant *v)
{
    char name[64];
    snprintf(name, sizeof name, "%s.x", v->name);
    char *path = tu_path_join(dir, name);
    char *data = character_x(v);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, strlen(data), f), strlen(data));
    assert_int_equal(fclose(f), 0);
    free(data);
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    ssk_status st = ssk_scene_import(&scene, path, &err);
    if (st != SSK_OK) fail_msg("%s: %s", v->name, err.message);
    free(path);
    return scene;
}

/* --- running the methods --------------------------------------------------- */

static void deform(float *dst, const ssk_scene *scene, ssk_method method, ssk_backend backend,
                   double t)
{
    const ssk_rig *rig = ssk_scene_rig(scene);
    float skin[BONES * 16], objects[2 * 16];
    ssk_error err = {0};
    assert_int_equal(ssk_rig_bone_count(rig), BONES);
    assert_int_equal(ssk_scene_sample(scene, 0, t, skin, objects, &err), SSK_OK);
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = method, .backend = backend, .gl_context = gl};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) fail_msg("%s", err.message);
    ssk_status st = ssk_deformer_deform(d, dst, skin, objects, &err);
    if (st != SSK_OK) fail_msg("%s: %s", ssk_method_name(method), err.message);
    ssk_deformer_destroy(d);
}

static void run_spaces(ssk_backend backend)
{
    char *dir = tu_temp_dir();
    ssk_scene *scenes[VARIANT_COUNT];
    for (size_t v = 0; v < VARIANT_COUNT; ++v) scenes[v] = import_variant(dir, &variants[v]);
    const ssk_rig *plain = ssk_scene_rig(scenes[0]);
    const uint32_t nv = ssk_rig_vertex_count(plain);
    assert_int_equal(nv, (SHARED_RING + 1 + RINGS - SHARED_RING) * (SEGMENTS + 1));
    float *expected = malloc(3 * (size_t)nv * sizeof(float));
    float *got = malloc(3 * (size_t)nv * sizeof(float));
    assert_non_null(expected);
    assert_non_null(got);
    float *plain_out = malloc(3 * (size_t)nv * sizeof(float));
    assert_non_null(plain_out);
    static const double times[] = {0.0, 1.0, 1.7};
    for (size_t m = 0; m < METHOD_COUNT; ++m)
        for (size_t k = 0; k < sizeof times / sizeof times[0]; ++k) {
            deform(plain_out, scenes[0], methods[m], backend, times[k]);
            for (size_t v = 1; v < VARIANT_COUNT; ++v) {
                /* W as Assimp's X reader gives it: Z flipped on both sides
                 * (left- to right-handed). The meshes' object space is the
                 * root space (.x ignores the frames of skinned meshes). */
                float w[16], flip[16], expected_w[16];
                world_matrix(w, &variants[v]);
                tu_mat4_identity(flip);
                flip[10] = -1.0f;
                tu_mat4_mul(expected_w, flip, w);
                tu_mat4_mul(expected_w, expected_w, flip);
                for (uint32_t i = 0; i < nv; ++i)
                    ssk_mat4_transform_point(expected + 3 * (size_t)i, expected_w,
                                             plain_out + 3 * (size_t)i);
                const double diag = tu_bbox_diagonal(expected, nv);
                assert_int_equal(ssk_rig_vertex_count(ssk_scene_rig(scenes[v])), nv);
                deform(got, scenes[v], methods[m], backend, times[k]);
                double d = tu_max_abs_diff(got, expected, 3 * (size_t)nv) / diag;
                if (!(d <= (methods[m] == SSK_METHOD_SPRING ? SPRING_SPACE_TOL : SPACE_TOL)))
                    fail_msg("%s on %s, %s at %.1f s: differs from W applied to 'plain' by "
                             "%.3g of the diagonal",
                             ssk_method_name(methods[m]), ssk_backend_name(backend),
                             variants[v].name, times[k], d);
            }
        }
    free(plain_out);
    for (size_t v = 0; v < VARIANT_COUNT; ++v) ssk_scene_destroy(scenes[v]);
    free(expected);
    free(got);
    tu_remove_tree(dir);
    free(dir);
}

static void test_spaces_cpu(void **state)
{
    (void)state;
    run_spaces(SSK_BACKEND_CPU);
}

static void test_spaces_gl(void **state)
{
    (void)state;
    if (!gl) {
        print_message("GL test skipped: no GL context can be created: %s\n", gl_unavailable);
        skip();
    }
    run_spaces(SSK_BACKEND_GL);
}

/* The armature node as rig space, and its matrix over time. */
static void test_armature_node(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    ssk_scene *fbx_like = import_variant(dir, &variants[2]);
    ssk_scene *plain = import_variant(dir, &variants[0]);
    assert_string_equal(ssk_scene_armature_name(fbx_like), "Armature");
    float rig_matrix[16];
    ssk_error err = {0};
    assert_int_equal(ssk_scene_rig_matrix(fbx_like, 0, 1.0, rig_matrix, &err), SSK_OK);
    /* X's row-vector matrix transposed, then Z flipped by Assimp's X reader
     * (left- to right-handed: diag(1, 1, -1) on both sides). */
    static const float expected[16] = {100, 0, 0, 1, 0, 0, -100, 2, 0, 100, 0, -3, 0, 0, 0, 1};
    if (!(tu_max_abs_diff(rig_matrix, expected, 16) < 1e-4))
        fail_msg("rig matrix %g %g %g %g / %g %g %g %g / %g %g %g %g", rig_matrix[0], rig_matrix[1],
                 rig_matrix[2], rig_matrix[3], rig_matrix[4], rig_matrix[5], rig_matrix[6],
                 rig_matrix[7], rig_matrix[8], rig_matrix[9], rig_matrix[10], rig_matrix[11]);
    /* The bind matrices in rig space are the same on both files: the
     * 100x scale is not in them. */
    const ssk_rig *a = ssk_scene_rig(fbx_like), *b = ssk_scene_rig(plain);
    for (uint32_t i = 0; i < BONES; ++i) {
        ssk_bone_view va, vb;
        assert_int_equal(ssk_rig_bone(a, i, &va, &err), SSK_OK);
        assert_int_equal(ssk_rig_bone(b, i, &vb, &err), SSK_OK);
        assert_true(tu_max_abs_diff(va.bind_matrix, vb.bind_matrix, 16) < 1e-5);
    }
    ssk_scene_destroy(fbx_like);
    ssk_scene_destroy(plain);
    tu_remove_tree(dir);
    free(dir);
}

/* --- welded topology ------------------------------------------------------- */

/* Largest distance between a coincident vertex and its representative,
 * over the members whose representative lies in the same mesh (same object
 * space) and, separately, in another mesh; positions of one frame. */
static void tear(const ssk_rig *rig, const float *p, bool copies_only, double *within,
                 double *across)
{
    ssk_weld_view w;
    ssk_error err = {0};
    assert_int_equal(ssk_rig_weld(rig, &w, &err), SSK_OK);
    ssk_mesh_view lower;
    assert_int_equal(ssk_rig_mesh(rig, 0, &lower, &err), SSK_OK);
    *within = *across = 0.0;
    for (uint32_t i = 0; i < w.member_count; ++i) {
        uint32_t v = w.members[i], r = w.points[v];
        bool same_mesh = (v < lower.vertex_count) == (r < lower.vertex_count);
        if (copies_only && !same_mesh) continue;
        double d = 0.0;
        for (int k = 0; k < 3; ++k)
            d += ((double)p[3 * v + k] - p[3 * r + k]) * ((double)p[3 * v + k] - p[3 * r + k]);
        d = sqrt(d);
        double *dst = same_mesh ? within : across;
        if (d > *dst) *dst = d;
    }
}

static void run_weld(ssk_backend backend)
{
    char *dir = tu_temp_dir();
    ssk_scene *scene = import_variant(dir, &variants[2]); /* fbx_like */
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_weld_view w;
    ssk_error err = {0};
    assert_int_equal(ssk_rig_weld(rig, &w, &err), SSK_OK);
    /* A seam pair on each ring but the shared one (12 groups of 2), and on
     * the shared ring 11 groups of 2 across the meshes plus one group of 4
     * (its seam vertex in both meshes). */
    assert_int_equal(w.across_mesh_group_count, SEGMENTS);
    assert_int_equal(w.group_count, RINGS + SEGMENTS - 1);
    assert_int_equal(w.member_count, (RINGS - 1) + (SEGMENTS - 1) + 3);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    float *p = malloc(3 * (size_t)nv * sizeof(float));
    assert_non_null(p);
    for (size_t m = 0; m < METHOD_COUNT; ++m) {
        deform(p, scene, methods[m], backend, 1.7);
        double within, across, diag = tu_bbox_diagonal(p, nv);
        bool weights_only = methods[m] == SSK_METHOD_LBS || methods[m] == SSK_METHOD_DQS;
        tear(rig, p, weights_only, &within, &across);
        double limit = backend == SSK_BACKEND_CPU ? 0.0 : GL_TEAR_TOL * diag;
        if (within > limit || across > limit)
            fail_msg("%s on %s: coincident vertices %.3g (one mesh) / %.3g (two meshes) apart",
                     ssk_method_name(methods[m]), ssk_backend_name(backend), within, across);
    }
    free(p);
    ssk_scene_destroy(scene);
    tu_remove_tree(dir);
    free(dir);
}

static void test_weld_cpu(void **state)
{
    (void)state;
    run_weld(SSK_BACKEND_CPU);
}

static void test_weld_gl(void **state)
{
    (void)state;
    if (!gl) {
        print_message("GL test skipped: no GL context can be created: %s\n", gl_unavailable);
        skip();
    }
    run_weld(SSK_BACKEND_GL);
}

int main(void)
{
    ssk_error err = {0};
    if (ssk_gl_context_create(&gl, &err) != SSK_OK)
        snprintf(gl_unavailable, sizeof gl_unavailable, "%s", err.message);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_armature_node),
        cmocka_unit_test(test_spaces_cpu),
        cmocka_unit_test(test_spaces_gl),
        cmocka_unit_test(test_weld_cpu),
        cmocka_unit_test(test_weld_gl),
    };
    int failed = cmocka_run_group_tests_name("spaces", tests, NULL, NULL);
    ssk_gl_context_destroy(gl);
    return failed;
}
