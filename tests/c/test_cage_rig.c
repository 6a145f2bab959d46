/*
 * test_cage_rig.c — coupled cages as a user gets them (Corda et al. 2020;
 * issue #21): ssk_cage on BCN_Epileptic.X with a box cage around it,
 * through ssk_scene_bake and the command line.
 * - an unedited cage changes nothing: the bake is byte-identical to the
 *   bake without a cage, for LBS and DQS;
 * - an affine edit of the cage (a box cage's coordinates are trilinear, so
 *   any affine map of its corners moves every point by that map): the
 *   reshaped rig's rest positions and bone heads are the rest ones moved
 *   by the map, and at the rest pose the bake gives them;
 * - the cage updater fits the posed cage: with the reshaped rig at rest,
 *   ssk_cage_fit of its positions gives the edited cage back;
 * - the reverse cage deformer at the rest pose gives the posed edit back;
 * - a single-handle edit (one corner moved) keeps every frame finite;
 * - the command line's --cage / --cage-edit and their errors;
 * - the cage binding stored in the attachment binding (binding file
 *   version 4): a cage from a saved and loaded binding reshapes, fits and
 *   bakes bit for bit as a freshly bound one; another cage is bound again;
 *   a corrupt or truncated cage section is a clear SSK_ERROR_IO; the
 *   command line's bind --cage (kept when bind runs again with other
 *   parameters) and bake --binding --cage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "springskin.h"
#include "testutil.h"

#include <xxhash.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BCN SSK_MODELS_DIR "/X/BCN_Epileptic.X"
/* The box cage: the rest shape's bounding box (and the bone heads) grown
 * by this factor about its center. */
#define CAGE_GROWTH 1.08
#define AFFINE_TOLERANCE 1e-5 /* of the diagonal */

/* Writes the 8-corner box cage of `rig` (rig space = BCN's scene space)
 * mapped by x -> A x + t as OBJ; corners into `corners` (8 by 3). */
static void write_cage(const char *path, const ssk_rig *rig, const double A[9], const double t[3],
                       float corners[24])
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
        ssk_mesh_view mv;
        assert_int_equal(ssk_rig_mesh(rig, m, &mv, NULL), SSK_OK);
        for (uint32_t i = 0; i < mv.vertex_count; ++i)
            for (int r = 0; r < 3; ++r) {
                const float *p = mv.positions + 3 * i, *o = mv.object_matrix + 4 * r;
                const double x = o[0] * p[0] + o[1] * p[1] + o[2] * p[2] + o[3];
                lo[r] = fmin(lo[r], x);
                hi[r] = fmax(hi[r], x);
            }
    }
    ssk_bone_view bv;
    for (uint32_t b = 0; b < ssk_rig_bone_count(rig); ++b) {
        assert_int_equal(ssk_rig_bone(rig, b, &bv, NULL), SSK_OK);
        for (int r = 0; r < 3; ++r) {
            lo[r] = fmin(lo[r], bv.head[r]);
            hi[r] = fmax(hi[r], bv.head[r]);
        }
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int k = 0; k < 8; ++k) {
        double p[3];
        for (int r = 0; r < 3; ++r) {
            const double c = 0.5 * (lo[r] + hi[r]), h = 0.5 * (hi[r] - lo[r]) * CAGE_GROWTH;
            p[r] = c + (k >> r & 1 ? h : -h);
        }
        double q[3];
        for (int r = 0; r < 3; ++r) q[r] = A[3 * r] * p[0] + A[3 * r + 1] * p[1] + A[3 * r + 2] * p[2] + t[r];
        fprintf(f, "v %.9g %.9g %.9g\n", q[0], q[1], q[2]);
        for (int r = 0; r < 3; ++r) corners[3 * k + r] = (float)q[r];
    }
    fputs("f 1 5 7 3\nf 2 4 8 6\nf 1 2 6 5\nf 3 7 8 4\nf 1 3 4 2\nf 5 6 8 7\n", f);
    assert_int_equal(fclose(f), 0);
}

static const double IDENTITY[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, ZERO[3] = {0, 0, 0};
static const double STRETCH[9] = {1.3, 0, 0, 0.1, 0.9, 0, 0, 0, 1.2}, SHIFT[3] = {0.5, -1, 2};

static void bake(const ssk_scene *scene, const char *path, ssk_method method, ssk_cage *cage,
                 const float *edit, int32_t first, int32_t last)
{
    ssk_bake_desc d = {.output_path = path, .method = method, .backend = SSK_BACKEND_CPU,
                       .fps = 24.0, .first_frame = first, .last_frame = last, .cage = cage,
                       .cage_edit = edit};
    ssk_error err = {0};
    if (ssk_scene_bake(scene, &d, NULL, &err) != SSK_OK) fail_msg("bake: %s", err.message);
}

static void test_bcn_cage(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *rest_obj = tu_path_join(dir, "cage.obj"), *edit_obj = tu_path_join(dir, "edit.obj");
    char *a = tu_path_join(dir, "a.pc2"), *b = tu_path_join(dir, "b.pc2");
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    if (ssk_scene_import(&scene, BCN, &err) != SSK_OK) fail_msg("%s", err.message);
    const ssk_rig *rig = ssk_scene_rig(scene);
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    float rest_corners[24], edit_corners[24];
    write_cage(rest_obj, rig, IDENTITY, ZERO, rest_corners);
    write_cage(edit_obj, rig, STRETCH, SHIFT, edit_corners);
    ssk_cage_mesh cage;
    assert_int_equal(ssk_cage_mesh_import(&cage, rest_obj, scene, &err), SSK_OK);
    ssk_cage *bound = NULL;
    if (ssk_cage_create(&bound, rig, &cage, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(ssk_cage_vertex_count(bound), 8);

    /* unedited: byte-identical bakes */
    const ssk_method methods[2] = {SSK_METHOD_LBS, SSK_METHOD_DQS};
    for (int k = 0; k < 2; ++k) {
        bake(scene, a, methods[k], NULL, NULL, 0, -1);
        bake(scene, b, methods[k], bound, cage.vertices, 0, -1);
        size_t sa = 0, sb = 0;
        unsigned char *fa = tu_read_file(a, &sa), *fb = tu_read_file(b, &sb);
        assert_int_equal(sa, sb);
        assert_memory_equal(fa, fb, sa);
        free(fa);
        free(fb);
    }

    /* an affine edit: the rest shape and the heads moved by the map */
    ssk_rig *reshaped = NULL;
    ssk_cage_mesh edit;
    assert_int_equal(ssk_cage_mesh_import(&edit, edit_obj, scene, &err), SSK_OK);
    if (ssk_cage_reshape(&reshaped, bound, edit.vertices, &err) != SSK_OK)
        fail_msg("%s", err.message);
    double diag = 0.0, worst = 0.0;
    {
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int k = 0; k < 8; ++k)
            for (int r = 0; r < 3; ++r) {
                lo[r] = fminf(lo[r], rest_corners[3 * k + r]);
                hi[r] = fmaxf(hi[r], rest_corners[3 * k + r]);
            }
        for (int r = 0; r < 3; ++r) diag += (double)(hi[r] - lo[r]) * (hi[r] - lo[r]);
        diag = sqrt(diag);
    }
    for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
        ssk_mesh_view r0, r1;
        assert_int_equal(ssk_rig_mesh(rig, m, &r0, NULL), SSK_OK);
        assert_int_equal(ssk_rig_mesh(reshaped, m, &r1, NULL), SSK_OK);
        for (uint32_t i = 0; i < r0.vertex_count; ++i) {
            double p[3], q[3];
            for (int r = 0; r < 3; ++r) {
                const float *o0 = r0.object_matrix + 4 * r, *o1 = r1.object_matrix + 4 * r;
                const float *x0 = r0.positions + 3 * i, *x1 = r1.positions + 3 * i;
                p[r] = o0[0] * x0[0] + o0[1] * x0[1] + o0[2] * x0[2] + o0[3];
                q[r] = o1[0] * x1[0] + o1[1] * x1[1] + o1[2] * x1[2] + o1[3];
            }
            for (int r = 0; r < 3; ++r) {
                const double want = STRETCH[3 * r] * p[0] + STRETCH[3 * r + 1] * p[1] +
                                    STRETCH[3 * r + 2] * p[2] + SHIFT[r];
                worst = fmax(worst, fabs(q[r] - want));
            }
        }
    }
    double worst_head = 0.0;
    for (uint32_t j = 0; j < nb; ++j) {
        ssk_bone_view h0, h1;
        assert_int_equal(ssk_rig_bone(rig, j, &h0, NULL), SSK_OK);
        assert_int_equal(ssk_rig_bone(reshaped, j, &h1, NULL), SSK_OK);
        for (int r = 0; r < 3; ++r) {
            const double want = STRETCH[3 * r] * h0.head[0] + STRETCH[3 * r + 1] * h0.head[1] +
                                STRETCH[3 * r + 2] * h0.head[2] + SHIFT[r];
            worst_head = fmax(worst_head, fabs(h1.head[r] - want));
        }
    }
    printf("affine cage edit: rest positions within %.2e, heads within %.2e of the diagonal\n",
           worst / diag, worst_head / diag);
    assert_true(worst <= AFFINE_TOLERANCE * diag && worst_head <= AFFINE_TOLERANCE * diag);

    /* the cage updater at rest: the reshaped rest positions give the edited
     * cage back */
    float *rest = malloc(3 * (size_t)nv * sizeof(float)), fitted[24];
    float *identity = malloc(16 * (size_t)nb * sizeof(float));
    for (uint32_t j = 0; j < nb; ++j) tu_mat4_identity(identity + 16 * j);
    tu_deform(rest, reshaped, SSK_METHOD_LBS, identity);
    for (uint32_t m = 0; m < ssk_rig_mesh_count(reshaped); ++m) { /* object -> rig */
        ssk_mesh_view mv;
        assert_int_equal(ssk_rig_mesh(reshaped, m, &mv, NULL), SSK_OK);
        for (uint32_t i = 0; i < mv.vertex_count; ++i) {
            float *p = rest + 3 * ((size_t)mv.first_vertex + i), q[3];
            for (int r = 0; r < 3; ++r)
                q[r] = mv.object_matrix[4 * r] * p[0] + mv.object_matrix[4 * r + 1] * p[1] +
                       mv.object_matrix[4 * r + 2] * p[2] + mv.object_matrix[4 * r + 3];
            memcpy(p, q, sizeof q);
        }
    }
    assert_int_equal(ssk_cage_fit(fitted, bound, rest, &err), SSK_OK);
    double fit = 0.0;
    for (int k = 0; k < 24; ++k) fit = fmax(fit, fabs(fitted[k] - edit.vertices[k]));
    printf("cage updater at rest: the edited cage within %.2e of the diagonal\n", fit / diag);
    assert_true(fit <= AFFINE_TOLERANCE * diag);

    /* the reverse cage deformer through the public cage: at the rest pose
     * (identity rotations) a posed edit is the rest edit (4.3) */
    float offset[24], back[24];
    for (int k = 0; k < 24; ++k) offset[k] = (float)(0.01 * diag * sin(1.0 + k));
    assert_int_equal(ssk_cage_reverse(back, bound, identity, offset, &err), SSK_OK);
    for (int k = 0; k < 24; ++k) assert_true(fabsf(back[k] - offset[k]) <= 1e-6f * (float)diag);
    assert_int_equal(ssk_cage_reverse(NULL, bound, identity, offset, &err),
                     SSK_ERROR_INVALID_ARGUMENT);

    /* a single handle: one corner moved; every frame finite */
    float handle[24];
    memcpy(handle, cage.vertices, sizeof handle);
    handle[3 * 7 + 1] += (float)(0.2 * diag);
    bake(scene, b, SSK_METHOD_DQS, bound, handle, 0, -1);
    tu_pc2_file pc;
    tu_pc2_read(&pc, b);
    for (size_t i = 0; i < 3 * (size_t)pc.points * (size_t)pc.samples; ++i)
        assert_true(isfinite(pc.data[i]));
    free(pc.data);

    ssk_rig_destroy(reshaped);
    ssk_cage_mesh_free(&edit);
    ssk_cage_destroy(bound);
    ssk_cage_mesh_free(&cage);
    free(rest);
    free(identity);
    ssk_scene_destroy(scene);
    tu_remove_tree(dir);
    free(rest_obj);
    free(edit_obj);
    free(a);
    free(b);
    free(dir);
}

static void test_cli_cage(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *rest_obj = tu_path_join(dir, "cage.obj"), *edit_obj = tu_path_join(dir, "edit.obj");
    char *tet = tu_path_join(dir, "tet.obj"), *out = tu_path_join(dir, "out.pc2");
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&scene, BCN, &err), SSK_OK);
    float corners[24];
    write_cage(rest_obj, ssk_scene_rig(scene), IDENTITY, ZERO, corners);
    write_cage(edit_obj, ssk_scene_rig(scene), STRETCH, SHIFT, corners);
    ssk_scene_destroy(scene);
    const char *ok[] = {"bake", BCN, "-o", out, "--frames", "0:4", "--cage", rest_obj,
                        "--cage-edit", edit_obj, NULL};
    tu_cli_result r = tu_run_cli(dir, ok);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "cage: bound 8 vertices"));
    assert_true(tu_file_exists(out));
    tu_cli_result_free(&r);
    const char *alone[] = {"bake", BCN, "-o", out, "--cage", rest_obj, NULL};
    r = tu_run_cli(dir, alone);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err, "go together"));
    tu_cli_result_free(&r);
    FILE *f = fopen(tet, "w");
    fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n", f);
    fclose(f);
    const char *topology[] = {"bake", BCN, "-o", out, "--cage", rest_obj, "--cage-edit", tet,
                              NULL};
    r = tu_run_cli(dir, topology);
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.err, "not the topology"));
    tu_cli_result_free(&r);
    const char *outside[] = {"bake", BCN, "-o", out, "--cage", tet, "--cage-edit", tet, NULL};
    r = tu_run_cli(dir, outside);
    assert_int_equal(r.exit_code, 1);
    printf("a cage that does not enclose the character: %s", r.err);
    tu_cli_result_free(&r);
    tu_remove_tree(dir);
    free(rest_obj);
    free(edit_obj);
    free(tet);
    free(out);
    free(dir);
}

/* ------------------------------------------------------------------------ */
/* The cage binding in binding files                                         */
/* ------------------------------------------------------------------------ */

#define CHECKSUM_BYTES 8
/* Another rest cage: the box grown by this factor about its center. */
#define OTHER_GROWTH 1.2

/* Writes the box cage grown by OTHER_GROWTH about its center (corners:
 * the rest box's) to path. */
static void write_other_cage(const char *path, const ssk_rig *rig, const float corners[24])
{
    double A[9] = {0}, t[3] = {0};
    float out[24];
    for (int r = 0; r < 3; ++r) {
        A[4 * r] = OTHER_GROWTH;
        double center = 0.0;
        for (int k = 0; k < 8; ++k) center += corners[3 * k + r] / 8.0;
        t[r] = (1.0 - OTHER_GROWTH) * center;
    }
    write_cage(path, rig, A, t, out);
}

/* Bakes frames 0-8 of `scene` with LBS, the cage edited, into path and
 * returns the file's bytes. */
static unsigned char *bake_bytes(const ssk_scene *scene, const char *path, ssk_cage *cage,
                                 const float *edit, size_t *size)
{
    bake(scene, path, SSK_METHOD_LBS, cage, edit, 0, 8);
    return tu_read_file(path, size);
}

/* The two rigs have bit-identical rest positions and bone heads. */
static void assert_rigs_equal(const ssk_rig *a, const ssk_rig *b)
{
    assert_int_equal(ssk_rig_mesh_count(a), ssk_rig_mesh_count(b));
    for (uint32_t m = 0; m < ssk_rig_mesh_count(a); ++m) {
        ssk_mesh_view ma, mb;
        assert_int_equal(ssk_rig_mesh(a, m, &ma, NULL), SSK_OK);
        assert_int_equal(ssk_rig_mesh(b, m, &mb, NULL), SSK_OK);
        assert_int_equal(ma.vertex_count, mb.vertex_count);
        assert_memory_equal(ma.positions, mb.positions, 3 * (size_t)ma.vertex_count * 4);
    }
    for (uint32_t k = 0; k < ssk_rig_bone_count(a); ++k) {
        ssk_bone_view ba, bb;
        assert_int_equal(ssk_rig_bone(a, k, &ba, NULL), SSK_OK);
        assert_int_equal(ssk_rig_bone(b, k, &bb, NULL), SSK_OK);
        assert_memory_equal(ba.head, bb.head, sizeof ba.head);
    }
}

/* Writes bytes with the checksum recomputed (the loader's value checks,
 * not the checksum, must catch the change) and expects its load to fail
 * with `text` in the message. */
static void expect_corrupt(const char *path, unsigned char *bytes, size_t size,
                           const ssk_rig *rig, const char *text)
{
    tu_put_le64(bytes + size - CHECKSUM_BYTES, XXH3_64bits(bytes, size - CHECKSUM_BYTES));
    tu_write_file(path, bytes, size);
    ssk_binding *b = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_load(&b, path, rig, &err), SSK_ERROR_IO);
    assert_null(b);
    printf("expected load error: %s\n", err.message);
    if (!strstr(err.message, text)) fail_msg("'%s' does not contain '%s'", err.message, text);
}

static void test_cage_binding_file(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *rest_obj = tu_path_join(dir, "cage.obj"), *edit_obj = tu_path_join(dir, "edit.obj");
    char *bfile = tu_path_join(dir, "b.sskbind"), *bad = tu_path_join(dir, "bad.sskbind");
    char *a = tu_path_join(dir, "a.pc2"), *b = tu_path_join(dir, "b.pc2");
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    if (ssk_scene_import(&scene, BCN, &err) != SSK_OK) fail_msg("%s", err.message);
    const ssk_rig *rig = ssk_scene_rig(scene);
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    float rest_corners[24], edit_corners[24];
    write_cage(rest_obj, rig, IDENTITY, ZERO, rest_corners);
    write_cage(edit_obj, rig, STRETCH, SHIFT, edit_corners);
    char *big_obj = tu_path_join(dir, "big.obj");
    write_other_cage(big_obj, rig, rest_corners);
    ssk_cage_mesh cage, other, big;
    assert_int_equal(ssk_cage_mesh_import(&cage, rest_obj, scene, &err), SSK_OK);
    assert_int_equal(ssk_cage_mesh_import(&other, edit_obj, scene, &err), SSK_OK);
    assert_int_equal(ssk_cage_mesh_import(&big, big_obj, scene, &err), SSK_OK);
    /* a single-handle edit: one corner moved (not affine) */
    float handle[24];
    memcpy(handle, cage.vertices, sizeof handle);
    handle[0] -= 0.2f * (rest_corners[3 * 7] - rest_corners[0]);
    handle[1] += 0.1f * (rest_corners[3 * 7 + 1] - rest_corners[1]);

    /* bound fresh, stored in an attachment binding, saved, loaded */
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    ssk_binding *binding = NULL, *loaded = NULL;
    if (ssk_binding_create(&binding, rig, &params, &err) != SSK_OK) fail_msg("%s", err.message);
    ssk_cage *fresh = NULL, *stored = NULL, *reloaded = NULL;
    int reused = -1;
    if (ssk_cage_create_cached(&stored, rig, &cage, binding, &reused, &err) != SSK_OK)
        fail_msg("%s", err.message);
    assert_int_equal(reused, 0);
    ssk_binding_view view;
    assert_int_equal(ssk_binding_get(binding, &view, &err), SSK_OK);
    assert_int_equal(view.has_cage, 1);
    assert_int_equal(view.cage_vertex_count, 8);
    assert_true(view.cage_seconds > 0.0);
    if (ssk_binding_save(binding, bfile, &err) != SSK_OK) fail_msg("%s", err.message);
    if (ssk_binding_load(&loaded, bfile, rig, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(ssk_binding_get(loaded, &view, &err), SSK_OK);
    assert_int_equal(view.has_cage, 1);
    assert_true(view.cage_seconds == 0.0);
    if (ssk_cage_create_cached(&reloaded, rig, &cage, loaded, &reused, &err) != SSK_OK)
        fail_msg("%s", err.message);
    assert_int_equal(reused, 1);
    if (ssk_cage_create(&fresh, rig, &cage, &err) != SSK_OK) fail_msg("%s", err.message);

    /* bit-identical reshapes (rest shape, heads), fits and bakes */
    const float *edits[2] = {handle, other.vertices};
    float *fit_a = malloc(24 * sizeof *fit_a), *fit_b = malloc(24 * sizeof *fit_b);
    for (int e = 0; e < 2; ++e) {
        ssk_rig *ra = NULL, *rb = NULL;
        assert_int_equal(ssk_cage_reshape(&ra, fresh, edits[e], &err), SSK_OK);
        assert_int_equal(ssk_cage_reshape(&rb, reloaded, edits[e], &err), SSK_OK);
        assert_rigs_equal(ra, rb);
        /* the cage updater: fitted to the reshaped rest positions (rig
         * space through the object matrices, as a bake's output) */
        float *pos = malloc(3 * (size_t)nv * sizeof *pos);
        for (uint32_t m = 0; m < ssk_rig_mesh_count(ra); ++m) {
            ssk_mesh_view mv;
            assert_int_equal(ssk_rig_mesh(ra, m, &mv, NULL), SSK_OK);
            for (uint32_t i = 0; i < mv.vertex_count; ++i)
                for (int r = 0; r < 3; ++r) {
                    const float *q = mv.positions + 3 * i, *o = mv.object_matrix + 4 * r;
                    pos[3 * ((size_t)mv.first_vertex + i) + r] =
                        o[0] * q[0] + o[1] * q[1] + o[2] * q[2] + o[3];
                }
        }
        assert_int_equal(ssk_cage_fit(fit_a, fresh, pos, &err), SSK_OK);
        assert_int_equal(ssk_cage_fit(fit_b, reloaded, pos, &err), SSK_OK);
        assert_memory_equal(fit_a, fit_b, 24 * sizeof *fit_a);
        free(pos);
        ssk_rig_destroy(ra);
        ssk_rig_destroy(rb);
        size_t sa = 0, sb = 0;
        unsigned char *fa = bake_bytes(scene, a, fresh, edits[e], &sa);
        unsigned char *fb = bake_bytes(scene, b, reloaded, edits[e], &sb);
        assert_int_equal(sa, sb);
        assert_memory_equal(fa, fb, sa);
        free(fa);
        free(fb);
    }
    free(fit_a);
    free(fit_b);

    /* another rest cage: bound again, replacing the stored one */
    ssk_cage *second = NULL;
    if (ssk_cage_create_cached(&second, rig, &big, loaded, &reused, &err) != SSK_OK)
        fail_msg("%s", err.message);
    assert_int_equal(reused, 0);
    assert_int_equal(ssk_binding_get(loaded, &view, &err), SSK_OK);
    assert_true(view.cage_seconds > 0.0);
    ssk_cage_destroy(second);
    assert_int_equal(ssk_cage_create_cached(&second, rig, &big, loaded, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_cage_destroy(second);

    /* corrupt or truncated cage sections (binding_io.c's version 4) */
    size_t size = 0;
    unsigned char *bytes = tu_read_file(bfile, &size);
    const uint32_t c = 8;
    assert_int_equal(bytes[8], 4);
    const size_t rows = size - CHECKSUM_BYTES - 4 * c;
    const size_t phi = rows - 8 * (size_t)c * (nv + nb), psi = phi + 8 * (size_t)c * nv;
    unsigned char *copy = malloc(size);
    tu_write_file(bad, bytes, size - 5);
    {
        ssk_binding *t = NULL;
        assert_int_equal(ssk_binding_load(&t, bad, rig, &err), SSK_ERROR_IO);
        assert_non_null(strstr(err.message, "truncated"));
        assert_non_null(strstr(err.message, "with a cage binding"));
    }
    memcpy(copy, bytes, size);
    copy[phi + 8 * 5 + 7] ^= 0x7f; /* vertex 0's Phi: a huge or NaN value */
    expect_corrupt(bad, copy, size, rig, "vertex 0's cage coordinates (Phi)");
    memcpy(copy, bytes, size);
    tu_put_le64(copy + psi + 8 * (size_t)c * 3, 0x3ff8000000000000ull); /* 1.5: sum != 1 */
    expect_corrupt(bad, copy, size, rig, "bone 3's cage coordinates (Psi)");
    memcpy(copy, bytes, size);
    memcpy(copy + rows + 4, copy + rows, 4); /* row 1 = row 0 */
    expect_corrupt(bad, copy, size, rig, "cage updater row 1");
    memcpy(copy, bytes, size);
    tu_put_le32(copy + rows + 8, nv); /* out of range */
    expect_corrupt(bad, copy, size, rig, "cage updater row 2");
    memcpy(copy, bytes, size);
    tu_put_le32(copy + 92, nv + 1); /* c > #V, before any allocation */
    expect_corrupt(bad, copy, size, rig, "cage section has");
    memcpy(copy, bytes, size);
    tu_put_le32(copy + 40, 0); /* version 4 without its section */
    expect_corrupt(bad, copy, size, rig, "no cage section");
    memcpy(copy, bytes, size);
    copy[phi + 100] ^= 1; /* the checksum catches the rest */
    tu_write_file(bad, copy, size);
    {
        ssk_binding *t = NULL;
        assert_int_equal(ssk_binding_load(&t, bad, rig, &err), SSK_ERROR_IO);
        assert_non_null(strstr(err.message, "checksum"));
    }
    free(copy);
    free(bytes);

    ssk_cage_destroy(fresh);
    ssk_cage_destroy(stored);
    ssk_cage_destroy(reloaded);
    ssk_binding_destroy(binding);
    ssk_binding_destroy(loaded);
    ssk_cage_mesh_free(&cage);
    ssk_cage_mesh_free(&other);
    ssk_cage_mesh_free(&big);
    ssk_scene_destroy(scene);
    free(big_obj);
    tu_remove_tree(dir);
    free(rest_obj);
    free(edit_obj);
    free(bfile);
    free(bad);
    free(a);
    free(b);
    free(dir);
}

/* bind --cage stores the cage binding; bake --binding --cage loads it and
 * bakes byte for byte as without it; another cage is bound again and added. */
static void test_cli_cage_binding(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *rest_obj = tu_path_join(dir, "cage.obj"), *edit_obj = tu_path_join(dir, "edit.obj");
    char *bfile = tu_path_join(dir, "b.sskbind"), *a = tu_path_join(dir, "a.pc2"),
         *b = tu_path_join(dir, "b.pc2");
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&scene, BCN, &err), SSK_OK);
    float corners[24], scratch[24];
    char *big_obj = tu_path_join(dir, "big.obj");
    write_cage(rest_obj, ssk_scene_rig(scene), IDENTITY, ZERO, corners);
    write_cage(edit_obj, ssk_scene_rig(scene), STRETCH, SHIFT, scratch);
    write_other_cage(big_obj, ssk_scene_rig(scene), corners);
    ssk_scene_destroy(scene);
    const char *bind[] = {"bind", BCN, "--cage", rest_obj, "-o", bfile, NULL};
    tu_cli_result r = tu_run_cli(dir, bind);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    printf("%s", r.out);
    assert_non_null(strstr(r.out, "cage: bound 8 vertices"));
    tu_cli_result_free(&r);
    r = tu_run_cli(dir, bind); /* again: everything reused */
    if (r.exit_code != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "binding loaded from"));
    tu_cli_result_free(&r);
    /* bound again with other parameters: the cage binding is kept */
    const char *smooth[] = {"bind", BCN, "--smooth", "3", "-o", bfile, NULL};
    r = tu_run_cli(dir, smooth);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "bound 3014 vertices"));
    tu_cli_result_free(&r);
    const char *smooth_cage[] = {"bind", BCN, "--smooth", "3", "--cage", rest_obj, "-o", bfile,
                                 NULL};
    r = tu_run_cli(dir, smooth_cage);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "binding loaded from"));
    assert_non_null(strstr(r.out, "reused"));
    tu_cli_result_free(&r);
    const char *with[] = {"bake", BCN, "-o", a, "--frames", "0:4", "--binding", bfile,
                          "--cage", rest_obj, "--cage-edit", edit_obj, NULL};
    r = tu_run_cli(dir, with);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    printf("%s", r.out);
    assert_non_null(strstr(r.out, "binding loaded from"));
    tu_cli_result_free(&r);
    const char *without[] = {"bake", BCN, "-o", b, "--frames", "0:4", "--cage", rest_obj,
                             "--cage-edit", edit_obj, NULL};
    r = tu_run_cli(dir, without);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    tu_cli_result_free(&r);
    size_t sa = 0, sb = 0;
    unsigned char *fa = tu_read_file(a, &sa), *fb = tu_read_file(b, &sb);
    assert_int_equal(sa, sb);
    assert_memory_equal(fa, fb, sa);
    free(fa);
    free(fb);
    /* another rest cage: bound and added to B, then loaded */
    const char *other[] = {"bake", BCN, "-o", a, "--frames", "0:1", "--binding", bfile,
                           "--cage", big_obj, "--cage-edit", big_obj, NULL};
    r = tu_run_cli(dir, other);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "cage: bound 8 vertices"));
    tu_cli_result_free(&r);
    r = tu_run_cli(dir, other);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "binding loaded from"));
    tu_cli_result_free(&r);
    /* a new B: made (attachment binding with the defaults) and the cage
     * binding added */
    char *fresh = tu_path_join(dir, "new.sskbind");
    const char *make[] = {"bake", BCN, "-o", a, "--frames", "0:1", "--binding", fresh,
                          "--cage", rest_obj, "--cage-edit", rest_obj, NULL};
    r = tu_run_cli(dir, make);
    if (r.exit_code != 0) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "cage: bound 8 vertices"));
    assert_true(tu_file_exists(fresh));
    tu_cli_result_free(&r);
    tu_remove_tree(dir);
    free(fresh);
    free(big_obj);
    free(rest_obj);
    free(edit_obj);
    free(bfile);
    free(a);
    free(b);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bcn_cage),
        cmocka_unit_test(test_cli_cage),
        cmocka_unit_test(test_cage_binding_file),
        cmocka_unit_test(test_cli_cage_binding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
