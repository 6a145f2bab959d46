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
 * - the command line's --cage / --cage-edit and their errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "springskin.h"
#include "testutil.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bcn_cage),
        cmocka_unit_test(test_cli_cage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
