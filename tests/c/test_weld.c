/* test_weld.c — welded topology of rigs made from arrays (core/model/weld.c):
 * coincident vertices found within and across meshes, the welded adjacency,
 * shading across UV seams and hard edges kept where the source normals
 * differ, the tolerance, and a binding that treats a seam as one surface. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A unit square in z = 0 made of two triangles that do not share vertices
 * (0-1-2 and 3-4-5, where 3 = 2, 4 = 1 in position: a "seam" along the
 * diagonal), plus, as a second mesh, a triangle sharing the edge 1-2 of
 * the first mesh's square folded up by 90 degrees. One bone. */
static const float square[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, /* first triangle */
                               0, 1, 0, 1, 0, 0, 1, 1, 0}; /* second, seam copies */
static const int32_t square_triangles[] = {0, 1, 2, 3, 4, 5};
static const float fold[] = {1, 0, 0, 0, 1, 0, 1, 1, 1}; /* shares 1-2 */
static const int32_t fold_triangles[] = {0, 2, 1};

static ssk_rig *make_rig(const float *square_normals, float offset)
{
    static const int32_t parents[1] = {-1};
    float bind[16];
    tu_mat4_identity(bind);
    ssk_skeleton_desc sk = {1, NULL, parents, bind, NULL, NULL};
    int32_t idx6[6] = {0}, idx3[3] = {0};
    float w6[6] = {1, 1, 1, 1, 1, 1}, w3[3] = {1, 1, 1};
    float moved[18];
    memcpy(moved, square, sizeof moved);
    moved[9] += offset; /* vertex 3 off its twin by `offset` */
    ssk_mesh_desc meshes[2] = {
        {"square", 6, moved, 2, square_triangles, 1, idx6, w6, NULL, square_normals},
        {"fold", 3, fold, 1, fold_triangles, 1, idx3, w3, NULL, NULL},
    };
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&rig, &sk, meshes, 2, &err) != SSK_OK) fail_msg("%s", err.message);
    return rig;
}

static void test_groups_and_adjacency(void **state)
{
    (void)state;
    ssk_rig *rig = make_rig(NULL, 0.0f);
    ssk_weld_view w;
    ssk_error err = {0};
    assert_int_equal(ssk_rig_weld(rig, &w, &err), SSK_OK);
    /* Groups: {1, 4, 6} (corner (1,0,0)), {2, 3, 7} (corner (0,1,0)). */
    assert_int_equal(w.group_count, 2);
    assert_int_equal(w.member_count, 4);
    assert_int_equal(w.across_mesh_group_count, 2);
    static const uint32_t points[] = {0, 1, 2, 2, 1, 5, 1, 2, 8};
    assert_memory_equal(w.points, points, sizeof points);
    static const uint32_t members[] = {3, 4, 6, 7};
    assert_memory_equal(w.members, members, sizeof members);
    /* Welded neighbors of the diagonal's corner 1: 0, 2 (its own triangle),
     * 5 (through its copy 4), 8 (through its copy 6); every vertex of the
     * group has that list. */
    static const uint32_t corner1[] = {0, 2, 5, 8};
    for (uint32_t v = 0; v < 9; ++v) {
        if (w.points[v] != 1) continue;
        uint32_t n = w.adjacency_offsets[v + 1] - w.adjacency_offsets[v];
        assert_int_equal(n, 4);
        assert_memory_equal(w.adjacency + w.adjacency_offsets[v], corner1, sizeof corner1);
    }
    /* No list names a member. */
    for (uint32_t i = 0; i < w.adjacency_offsets[9]; ++i)
        assert_int_equal(w.points[w.adjacency[i]], w.adjacency[i]);
    ssk_rig_destroy(rig);
}

static void test_tolerance(void **state)
{
    (void)state;
    /* The diagonal is sqrt(3); 1e-5 of it welds, 1e-3 does not. */
    ssk_rig *near = make_rig(NULL, 1e-6f), *far = make_rig(NULL, 1e-3f);
    ssk_weld_view a, b;
    assert_int_equal(ssk_rig_weld(near, &a, NULL), SSK_OK);
    assert_int_equal(ssk_rig_weld(far, &b, NULL), SSK_OK);
    assert_true(fabsf(a.tolerance - (float)(SSK_WELD_RELATIVE_TOLERANCE * sqrt(3.0))) < 1e-9f);
    assert_int_equal(a.points[3], 2);
    assert_int_equal(b.points[3], 3); /* no longer coincident with 2 */
    assert_int_equal(b.points[7], 2); /* the fold's corner still is */
    ssk_rig_destroy(near);
    ssk_rig_destroy(far);
}

/* Normals: a seam whose copies have the same source normal shades as one
 * surface; copies whose source normals differ (a hard edge) keep their own.
 * Separate meshes keep their own normals. */
static void test_normals(void **state)
{
    (void)state;
    /* The square bent along its diagonal: lift vertex 5 (corner (1,1)) so
     * the two triangles have different face normals. */
    static const float smooth_normals[18] = {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1};
    float hard_normals[18];
    memcpy(hard_normals, smooth_normals, sizeof hard_normals);
    hard_normals[3 * 3 + 0] = 1.0f; /* copy 3 of corner (0,1): another direction */
    hard_normals[3 * 3 + 2] = 0.0f;
    float positions[27];
    memcpy(positions, square, sizeof square);
    memcpy(positions + 18, fold, sizeof fold);
    positions[3 * 5 + 2] = 0.5f;
    float normals[27];

    ssk_rig *rig = make_rig(smooth_normals, 0.0f);
    assert_int_equal(ssk_rig_normals(rig, normals, positions, NULL), SSK_OK);
    /* Copies 1/4 and 2/3 share a normal: the sum over both triangles. */
    assert_memory_equal(normals + 3 * 1, normals + 3 * 4, 3 * sizeof(float));
    assert_memory_equal(normals + 3 * 2, normals + 3 * 3, 3 * sizeof(float));
    /* ... which differs from either face's own normal (vertex 0 has the
     * first triangle only, vertex 5 the second only). */
    assert_true(tu_max_abs_diff(normals + 3 * 1, normals + 3 * 0, 3) > 1e-3);
    assert_true(tu_max_abs_diff(normals + 3 * 1, normals + 3 * 5, 3) > 1e-3);
    /* The fold (another mesh) keeps its own normal at the shared corner. */
    assert_true(tu_max_abs_diff(normals + 3 * 6, normals + 3 * 1, 3) > 1e-3);
    ssk_weld_view w;
    assert_int_equal(ssk_rig_weld(rig, &w, NULL), SSK_OK);
    assert_int_equal(w.hard_edge_pair_count, 0);
    ssk_rig_destroy(rig);

    rig = make_rig(hard_normals, 0.0f);
    assert_int_equal(ssk_rig_normals(rig, normals, positions, NULL), SSK_OK);
    assert_int_equal(ssk_rig_weld(rig, &w, NULL), SSK_OK);
    assert_int_equal(w.hard_edge_pair_count, 1);
    /* 2 and 3 are a hard edge: 2 keeps the first face's normal (as vertex
     * 0), 3 the second's (as vertex 5); 1 and 4 still share. */
    assert_true(tu_max_abs_diff(normals + 3 * 2, normals + 3 * 0, 3) < 1e-6);
    assert_true(tu_max_abs_diff(normals + 3 * 3, normals + 3 * 5, 3) < 1e-6);
    assert_memory_equal(normals + 3 * 1, normals + 3 * 4, 3 * sizeof(float));
    ssk_rig_destroy(rig);
}

/* Attachment binding on the welded adjacency: the copies of a corner, in
 * one mesh and across meshes, get one bone and one t. */
static void test_binding_across_seam(void **state)
{
    (void)state;
    ssk_rig *rig = make_rig(NULL, 0.0f);
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    ssk_binding *binding = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_create(&binding, rig, &params, &err), SSK_OK);
    ssk_binding_view v;
    assert_int_equal(ssk_binding_get(binding, &v, &err), SSK_OK);
    ssk_weld_view w;
    assert_int_equal(ssk_rig_weld(rig, &w, NULL), SSK_OK);
    for (uint32_t i = 0; i < w.member_count; ++i) {
        uint32_t m = w.members[i], r = w.points[m];
        assert_int_equal(v.bones[m], v.bones[r]);
        assert_true(v.t[m] == v.t[r]);
    }
    ssk_binding_destroy(binding);
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_and_adjacency),
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test(test_normals),
        cmocka_unit_test(test_binding_across_seam),
    };
    return cmocka_run_group_tests_name("weld", tests, NULL, NULL);
}
