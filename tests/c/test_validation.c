/*
 * test_validation.c — every validation error of the rig model and the
 * deformer yields its status and a message that names the culprit.
 */
#include "testutil.h"

#include <math.h>
#include <string.h>

/* A valid 2-bone, 4-vertex, 2-triangle rig description tests then break. */
typedef struct fixture {
    int32_t parents[2];
    float bind[32];
    float pos[12];
    int32_t tri[6];
    int32_t idx[8];
    float w[8];
    ssk_skeleton_desc sk;
    ssk_mesh_desc md;
} fixture;

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->parents[0] = -1;
    f->parents[1] = 0;
    tu_mat4_identity(f->bind);
    tu_mat4_translation(f->bind + 16, 0, 1, 0);
    const float pos[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
    const int32_t tri[6] = {0, 1, 2, 0, 2, 3};
    memcpy(f->pos, pos, sizeof pos);
    memcpy(f->tri, tri, sizeof tri);
    for (int v = 0; v < 4; ++v) {
        f->idx[2 * v] = 0;
        f->idx[2 * v + 1] = 1;
        f->w[2 * v] = 0.5f;
        f->w[2 * v + 1] = 0.5f;
    }
    f->sk = (ssk_skeleton_desc){2, NULL, f->parents, f->bind, NULL, NULL};
    f->md = (ssk_mesh_desc){"quad", 4, f->pos, 2, f->tri, 2, f->idx, f->w, NULL};
}

static void expect_error(fixture *f, ssk_status status, const char *needle)
{
    ssk_rig *rig = (ssk_rig *)0x1; /* must be reset to NULL on failure */
    ssk_error err = {0};
    assert_int_equal(ssk_rig_create(&rig, &f->sk, &f->md, 1, &err), status);
    assert_null(rig);
    assert_int_equal(err.status, status);
    if (!strstr(err.message, needle)) fail_msg("message '%s' lacks '%s'", err.message, needle);
}

static void test_valid_fixture_creates(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &f.sk, &f.md, 1, NULL), SSK_OK);
    assert_non_null(rig);
    assert_int_equal(ssk_rig_vertex_count(rig), 4);
    assert_int_equal(ssk_rig_deforming_bone_count(rig), 2);
    assert_int_equal(ssk_rig_find_bone(rig, "bone_1"), 1);
    assert_int_equal(ssk_rig_find_bone(rig, "nope"), -1);
    ssk_rig_destroy(rig);
}

static void test_nonfinite_position(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.pos[7] = NAN;
    expect_error(&f, SSK_ERROR_NONFINITE, "vertex 2");
    f.pos[7] = INFINITY;
    expect_error(&f, SSK_ERROR_NONFINITE, "quad");
}

static void test_nonfinite_bind_matrix(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.bind[16 + 5] = NAN;
    expect_error(&f, SSK_ERROR_NONFINITE, "bone 1");
}

static void test_bone_index_out_of_range(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.idx[5] = 2;
    expect_error(&f, SSK_ERROR_BONE_INDEX, "bone 2");
    f.idx[5] = -1;
    expect_error(&f, SSK_ERROR_BONE_INDEX, "vertex 2");
    /* a padding slot with weight 0 may hold -1 */
    f.w[5] = 0.0f;
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &f.sk, &f.md, 1, NULL), SSK_OK);
    ssk_rig_destroy(rig);
}

static void test_negative_weight(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.w[3] = -0.25f;
    expect_error(&f, SSK_ERROR_NEGATIVE_WEIGHT, "vertex 1");
}

static void test_parent_cycle_and_range(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.parents[0] = 1; /* 0 -> 1 -> 0 */
    expect_error(&f, SSK_ERROR_PARENT_CYCLE, "cycle");
    f.parents[0] = 0; /* self parent */
    expect_error(&f, SSK_ERROR_PARENT_CYCLE, "bone 0");
    f.parents[0] = 7;
    expect_error(&f, SSK_ERROR_PARENT_INDEX, "bone 0");
}

static void test_empty_mesh(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.md.vertex_count = 0;
    expect_error(&f, SSK_ERROR_EMPTY_MESH, "quad");
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_rig_create(&rig, &f.sk, NULL, 0, &err), SSK_ERROR_EMPTY_MESH);
}

static void test_triangle_index_out_of_range(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.tri[4] = 4;
    expect_error(&f, SSK_ERROR_TRIANGLE_INDEX, "triangle 1");
    f.tri[4] = -3;
    expect_error(&f, SSK_ERROR_TRIANGLE_INDEX, "-3");
}

static void test_nonfinite_skinning_matrix_in_deform(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &f.sk, &f.md, 1, NULL), SSK_OK);
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = SSK_METHOD_DQS, .backend = SSK_BACKEND_AUTO};
    assert_int_equal(ssk_deformer_create(&d, rig, &desc, NULL), SSK_OK);
    assert_int_equal(ssk_deformer_backend(d), SSK_BACKEND_CPU);
    float skin[32], out[12];
    tu_mat4_identity(skin);
    tu_mat4_identity(skin + 16);
    skin[16 + 3] = INFINITY;
    ssk_error err = {0};
    assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_ERROR_NONFINITE);
    assert_non_null(strstr(err.message, "matrix 1"));
    ssk_deformer_destroy(d);
    ssk_rig_destroy(rig);
}

static void test_status_strings(void **state)
{
    (void)state;
    assert_string_equal(ssk_status_name(SSK_ERROR_PARENT_CYCLE), "SSK_ERROR_PARENT_CYCLE");
    assert_string_equal(ssk_status_message(SSK_OK), "ok");
    assert_string_equal(ssk_status_name((ssk_status)999), "SSK_UNKNOWN");
    for (int s = 0; s < SSK_STATUS_COUNT; ++s) assert_true(strlen(ssk_status_message((ssk_status)s)) > 0);
    ssk_method m;
    ssk_error err = {0};
    assert_int_equal(ssk_method_parse(&m, "dqs", NULL), SSK_OK);
    assert_int_equal(m, SSK_METHOD_DQS);
    assert_int_equal(ssk_method_parse(&m, "corr", &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "corr"));
    assert_int_equal(ssk_method_parse(&m, "cor", NULL), SSK_OK);
    assert_int_equal(m, SSK_METHOD_COR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_fixture_creates),
        cmocka_unit_test(test_nonfinite_position),
        cmocka_unit_test(test_nonfinite_bind_matrix),
        cmocka_unit_test(test_bone_index_out_of_range),
        cmocka_unit_test(test_negative_weight),
        cmocka_unit_test(test_parent_cycle_and_range),
        cmocka_unit_test(test_empty_mesh),
        cmocka_unit_test(test_triangle_index_out_of_range),
        cmocka_unit_test(test_nonfinite_skinning_matrix_in_deform),
        cmocka_unit_test(test_status_strings),
    };
    return cmocka_run_group_tests_name("validation", tests, NULL, NULL);
}
