/*
 * test_cage_import.c — reading a cage (ssk_cage_mesh_import; issue #21):
 * a box written as OBJ with a normal per face corner comes back as one
 * closed surface of 8 vertices and 12 triangles (corners merged), in the
 * file's root space without a scene; a node transform of a glTF-free
 * format is not needed for OBJ, so the scene's rig space is checked on
 * BCN_Epileptic.X (its rig -> scene matrix inverted); garbage and tiny
 * files are refused with a message.
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

/* A box [-1, 2] x [0, 3] x [-0.5, 0.5] with outward quads and a normal per
 * face, so every corner is written once per face it belongs to. */
static void write_box(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    static const float lo[3] = {-1.0f, 0.0f, -0.5f}, hi[3] = {2.0f, 3.0f, 0.5f};
    for (int k = 0; k < 8; ++k)
        fprintf(f, "v %g %g %g\n", (double)(k & 1 ? hi[0] : lo[0]),
                (double)(k & 2 ? hi[1] : lo[1]), (double)(k & 4 ? hi[2] : lo[2]));
    fputs("vn -1 0 0\nvn 1 0 0\nvn 0 -1 0\nvn 0 1 0\nvn 0 0 -1\nvn 0 0 1\n", f);
    /* faces (1-based), counter-clockwise seen from outside */
    fputs("f 1//1 5//1 7//1 3//1\n"
          "f 2//2 4//2 8//2 6//2\n"
          "f 1//3 2//3 6//3 5//3\n"
          "f 3//4 7//4 8//4 4//4\n"
          "f 1//5 3//5 4//5 2//5\n"
          "f 5//6 6//6 8//6 7//6\n",
          f);
    assert_int_equal(fclose(f), 0);
}

static void test_box_obj(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "cage.obj");
    write_box(path);
    ssk_cage_mesh m;
    ssk_error err = {0};
    if (ssk_cage_mesh_import(&m, path, NULL, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(m.vertex_count, 8);
    assert_int_equal(m.triangle_count, 12);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t v = 0; v < m.vertex_count; ++v)
        for (int c = 0; c < 3; ++c) {
            lo[c] = fmin(lo[c], m.vertices[3 * v + c]);
            hi[c] = fmax(hi[c], m.vertices[3 * v + c]);
        }
    assert_true(lo[0] == -1.0 && hi[0] == 2.0 && lo[1] == 0.0 && hi[1] == 3.0 &&
                lo[2] == -0.5 && hi[2] == 0.5);
    /* every directed edge once, its reverse once: closed and consistently
     * oriented */
    for (uint32_t t = 0; t < m.triangle_count; ++t)
        for (int e = 0; e < 3; ++e) {
            const uint32_t a = m.triangles[3 * t + e], b = m.triangles[3 * t + (e + 1) % 3];
            int same = 0, reverse = 0;
            for (uint32_t u = 0; u < m.triangle_count; ++u)
                for (int g = 0; g < 3; ++g) {
                    const uint32_t c = m.triangles[3 * u + g], d = m.triangles[3 * u + (g + 1) % 3];
                    same += c == a && d == b;
                    reverse += c == b && d == a;
                }
            assert_int_equal(same, 1);
            assert_int_equal(reverse, 1);
        }
    ssk_cage_mesh_free(&m);
    ssk_cage_mesh_free(NULL);
    /* a scene's rig space: BCN_Epileptic.X's rig -> scene matrix inverted */
    ssk_scene *scene = NULL;
    if (ssk_scene_import(&scene, SSK_MODELS_DIR "/X/BCN_Epileptic.X", &err) != SSK_OK)
        fail_msg("%s", err.message);
    ssk_cage_mesh r;
    assert_int_equal(ssk_cage_mesh_import(&r, path, scene, &err), SSK_OK);
    assert_int_equal(r.vertex_count, 8);
    ssk_cage_mesh_free(&r);
    ssk_scene_destroy(scene);
    /* errors */
    FILE *f = fopen(path, "w");
    fputs("this is not a mesh\n", f);
    fclose(f);
    assert_int_not_equal(ssk_cage_mesh_import(&m, path, NULL, &err), SSK_OK);
    printf("garbage: %s\n", err.message);
    f = fopen(path, "w");
    fputs("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", f);
    fclose(f);
    assert_int_equal(ssk_cage_mesh_import(&m, path, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "closed cage"));
    assert_int_equal(ssk_cage_mesh_import(NULL, path, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    tu_remove_tree(dir);
    free(path);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_obj),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
