/* test_cage_bind.c — a rig's cage binding and its rest reshape (coupled
 * cages and skeletons, Corda et al. 2020, sections 3, 4.1, 4.2; issue #21;
 * core/bind/cage_bind.c):
 * - a straight capped bar (tu_make_limb: 9 rings of 8 vertices, 2 bones
 *   along +Y, closed and consistently oriented) in a 12-vertex box cage
 *   (three square rings, by hand): the rest cage gives back the rest
 *   positions and heads; an affine cage edit moves both by the same map;
 *   isotropic, anisotropic and one-sided bulges of the cage's middle ring
 *   keep the middle joint at the centroid of the reshaped section at its
 *   height (Corda Fig. 5); a single-handle edit gives finite positions
 *   and moves the joints less than the handle; the same bits on 1 and 4
 *   threads;
 * - BCN_Epileptic.X (open meshes) in its enlarged bounding box (8
 *   vertices, 12 triangles): bound, joints_from_mesh_mvc reported, every
 *   joint reproduced by psi, timing printed;
 * - bad input refused: NULL, an open cage, a cage that misses a joint
 *   (named in the message). */
#include "testutil.h"
#include "cage_fixture.h"

#include "bind/cage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bar: BAR_RINGS rings of BAR_SEGMENTS vertices (an octagonal tube:
 * a square one has the box cage's mirror planes through every vertex and
 * leaves phi rank-deficient for the cage updater), radius BAR_RADIUS, from
 * y = 0 to BAR_LENGTH, 2 bones (the middle joint at BAR_LENGTH / 2, on
 * ring BAR_RINGS / 2). */
#define BAR_RINGS 9
#define BAR_SEGMENTS 8
#define BAR_BONES 2
#define BAR_LENGTH 2.0f
#define BAR_RADIUS 0.5f
#define BAR_BLEND 0.5f
#define BAR_WIDTH (2.0 * BAR_RADIUS)
/* The cage: 3 square rings of half-width CAGE_HALF at CAGE_Y[]. */
#define CAGE_RINGS 3
#define CAGE_RING_SIZE 4
#define CAGE_VERTICES (CAGE_RINGS * CAGE_RING_SIZE)
#define CAGE_TRIANGLES (2 * CAGE_RING_SIZE * (CAGE_RINGS - 1) + 4)
#define CAGE_HALF 0.75
static const double CAGE_Y[CAGE_RINGS] = {-0.25, 1.0, 2.25};
/* Issue #21: rest and affine reproduction within 1e-5 of the diagonal;
 * the joint within 5% of the bar's width of the section's centroid; a
 * real character's joints within 1e-6 of the diagonal. */
#define REPRO_TOL 1e-5
#define CENTER_TOL (0.05 * BAR_WIDTH)
#define BCN_JOINT_TOL 1e-6
/* The BCN box: the bounding box of the rest vertices and heads, each side
 * moved out by this fraction of its diagonal. */
#define BCN_BOX_MARGIN 0.05

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

/* The bar's cage (cage_fixture.h): CAGE_RINGS rings at CAGE_Y[]. */
static void bar_cage(double *v, uint32_t *t)
{
    tu_tube_cage(v, t, CAGE_RINGS, CAGE_Y[0], CAGE_Y[CAGE_RINGS - 1], CAGE_HALF);
}

static ssk_rig *make_bar(void)
{
    return tu_make_limb(BAR_RINGS, BAR_SEGMENTS, BAR_BONES, BAR_LENGTH, BAR_RADIUS, BAR_BLEND, 2);
}

/* rest (#V by 3, rig space) of the rig's vertices, as float. */
static void rest_positions(float *rest, const ssk_rig *rig)
{
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t i = 0; i < mesh->vertex_count; ++i)
            ssk_mat4_transform_point(rest + 3 * ((size_t)mesh->first_vertex + i),
                                     mesh->object_matrix, mesh->positions + 3 * (size_t)i);
    }
}

static void rest_heads(float *heads, const ssk_rig *rig)
{
    for (uint32_t b = 0; b < rig->bone_count; ++b) memcpy(heads + 3 * b, rig->bones[b].head, 12);
}

static void bind_ok(ssk_cage_binding *cb, const ssk_rig *rig, const double *v, uint32_t c,
                    const uint32_t *t, uint32_t nt)
{
    ssk_error err = {0};
    const ssk_status st = ssk_cage_binding_create(cb, rig, v, c, t, nt, &err);
    if (st != SSK_OK) fail_msg("ssk_cage_binding_create: %s", err.message);
}

static double dist3f(const float *a, const float *b)
{
    return sqrt((double)(a[0] - b[0]) * (a[0] - b[0]) + (double)(a[1] - b[1]) * (a[1] - b[1]) +
                (double)(a[2] - b[2]) * (a[2] - b[2]));
}

/* ------------------------------------------------------------------------ */
/* The bar                                                                   */
/* ------------------------------------------------------------------------ */

static void test_rest_cage_gives_the_rest(void **state)
{
    (void)state;
    ssk_rig *rig = make_bar();
    double v[3 * CAGE_VERTICES];
    uint32_t t[3 * CAGE_TRIANGLES];
    bar_cage(v, t);
    ssk_cage_binding cb;
    bind_ok(&cb, rig, v, CAGE_VERTICES, t, CAGE_TRIANGLES);
    assert_int_equal(cb.joints_from_mesh_mvc, 1); /* the limb is closed */
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    float *rest = malloc(12u * nv), *out = malloc(12u * nv), heads[3 * BAR_BONES],
          out_heads[3 * BAR_BONES];
    rest_positions(rest, rig);
    rest_heads(heads, rig);
    ssk_cage_binding_reshape(&cb, v, out, out_heads);
    const double diag = tu_bbox_diagonal(rest, nv);
    const double dp = tu_max_abs_diff(out, rest, 3u * nv), dh = tu_max_abs_diff(out_heads, heads, 3u * nb);
    printf("bar (%u vertices, %u bones), rest cage: |Phi C0 - M| %.2e, |Psi C0 - A| %.2e "
           "(diagonal %.3f)\n", nv, nb, dp, dh, diag);
    assert_true(dp <= REPRO_TOL * diag);
    assert_true(dh <= REPRO_TOL * diag);
    for (uint32_t b = 0; b < nb; ++b) { /* rows of psi sum to 1 */
        double sum = 0.0;
        for (uint32_t k = 0; k < cb.cage_vertex_count; ++k) sum += cb.psi[b * cb.cage_vertex_count + k];
        assert_true(fabs(sum - 1.0) <= 1e-12);
    }
    ssk_cage_binding_free(&cb);
    free(rest);
    free(out);
    ssk_rig_destroy(rig);
}

static void test_affine_cage_edit_is_followed(void **state)
{
    (void)state;
    ssk_rig *rig = make_bar();
    double v[3 * CAGE_VERTICES], edited[3 * CAGE_VERTICES];
    uint32_t t[3 * CAGE_TRIANGLES];
    bar_cage(v, t);
    ssk_cage_binding cb;
    bind_ok(&cb, rig, v, CAGE_VERTICES, t, CAGE_TRIANGLES);
    const double scale[3] = {1.5, 1.0, 0.8}, shift[3] = {0.3, -0.7, 1.1};
    for (int k = 0; k < 3 * CAGE_VERTICES; ++k) edited[k] = scale[k % 3] * v[k] + shift[k % 3];
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    float *rest = malloc(12u * nv), *out = malloc(12u * nv), heads[3 * BAR_BONES],
          out_heads[3 * BAR_BONES];
    rest_positions(rest, rig);
    rest_heads(heads, rig);
    for (uint32_t k = 0; k < 3 * nv; ++k) rest[k] = (float)(scale[k % 3] * rest[k] + shift[k % 3]);
    for (uint32_t k = 0; k < 3 * nb; ++k) heads[k] = (float)(scale[k % 3] * heads[k] + shift[k % 3]);
    ssk_cage_binding_reshape(&cb, edited, out, out_heads);
    const double diag = tu_bbox_diagonal(rest, nv);
    const double dp = tu_max_abs_diff(out, rest, 3u * nv), dh = tu_max_abs_diff(out_heads, heads, 3u * nb);
    printf("bar, affine cage edit: |Phi C' - T M| %.2e, |Psi C' - T A| %.2e\n", dp, dh);
    assert_true(dp <= REPRO_TOL * diag);
    assert_true(dh <= REPRO_TOL * diag);
    ssk_cage_binding_free(&cb);
    free(rest);
    free(out);
    ssk_rig_destroy(rig);
}

/* The centroid of the reshaped ring `ring` of the bar (its vertices are
 * ring * BAR_SEGMENTS ...), and its X and Z extents. */
static void ring_centroid(double centroid[3], double extent[2], const float *pos, uint32_t ring)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    centroid[0] = centroid[1] = centroid[2] = 0.0;
    for (uint32_t s = 0; s < BAR_SEGMENTS; ++s)
        for (int a = 0; a < 3; ++a) {
            const double x = pos[3 * (ring * BAR_SEGMENTS + s) + a];
            centroid[a] += x / BAR_SEGMENTS;
            lo[a] = fmin(lo[a], x);
            hi[a] = fmax(hi[a], x);
        }
    extent[0] = hi[0] - lo[0];
    extent[1] = hi[2] - lo[2];
}

static void test_bulges_keep_the_joint_centered(void **state)
{
    (void)state;
    ssk_rig *rig = make_bar();
    double v[3 * CAGE_VERTICES], edited[3 * CAGE_VERTICES];
    uint32_t t[3 * CAGE_TRIANGLES];
    bar_cage(v, t);
    ssk_cage_binding cb;
    bind_ok(&cb, rig, v, CAGE_VERTICES, t, CAGE_TRIANGLES);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    float *out = malloc(12u * nv), heads[3 * BAR_BONES];
    /* the middle cage ring (index 1): x' = sx x + dx on the +X side (or
     * both sides), z' = sz z */
    const struct {
        const char *name;
        double sx, sz, dx;
        int one_sided;
    } edits[] = {
        {"isotropic bulge (x1.5 in X and Z)", 1.5, 1.5, 0.0, 0},
        {"anisotropic bulge (x1.6 in X, x0.8 in Z)", 1.6, 0.8, 0.0, 0},
        {"one-sided bulge (+X corners +0.5 in X)", 1.0, 1.0, 0.5, 1},
        {"one-sided anisotropic (+X corners x1.8 +0.2, x0.7 in Z)", 1.8, 0.7, 0.2, 1},
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; ++e) {
        memcpy(edited, v, sizeof v);
        for (int s = 0; s < CAGE_RING_SIZE; ++s) {
            double *p = edited + 3 * (CAGE_RING_SIZE + s);
            if (edits[e].one_sided && p[0] < 0.0) continue;
            p[0] = edits[e].sx * p[0] + edits[e].dx;
            p[2] = edits[e].sz * p[2];
        }
        ssk_cage_binding_reshape(&cb, edited, out, heads);
        double centroid[3], extent[2];
        ring_centroid(centroid, extent, out, BAR_RINGS / 2);
        const float cf[3] = {(float)centroid[0], (float)centroid[1], (float)centroid[2]};
        const float *rest_head = rig->bones[1].head;
        const double off = dist3f(heads + 3, cf), off_fixed = dist3f(rest_head, cf);
        printf("bar, %s: middle joint %.2e from the section's centroid (%.4f %.4f %.4f; "
               "section %.3f by %.3f), the unmoved joint %.4f\n",
               edits[e].name, off, centroid[0], centroid[1], centroid[2], extent[0], extent[1],
               off_fixed);
        assert_true(off <= CENTER_TOL);
    }
    ssk_cage_binding_free(&cb);
    free(out);
    ssk_rig_destroy(rig);
}

static void test_single_handle(void **state)
{
    (void)state;
    ssk_rig *rig = make_bar();
    double v[3 * CAGE_VERTICES], edited[3 * CAGE_VERTICES];
    uint32_t t[3 * CAGE_TRIANGLES];
    bar_cage(v, t);
    ssk_cage_binding cb;
    bind_ok(&cb, rig, v, CAGE_VERTICES, t, CAGE_TRIANGLES);
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    float *out = malloc(12u * nv), heads[3 * BAR_BONES], rest[3 * BAR_BONES];
    rest_heads(rest, rig);
    const double move[3] = {0.6, 0.25, -0.4};
    const double handle = sqrt(move[0] * move[0] + move[1] * move[1] + move[2] * move[2]);
    for (int h = 0; h < CAGE_VERTICES; ++h) {
        memcpy(edited, v, sizeof v);
        for (int a = 0; a < 3; ++a) edited[3 * h + a] += move[a];
        ssk_cage_binding_reshape(&cb, edited, out, heads);
        assert_true(ssk_floats_finite(out, 3u * nv));
        assert_true(ssk_floats_finite(heads, 3u * nb));
        double worst = 0.0;
        for (uint32_t b = 0; b < nb; ++b) worst = fmax(worst, dist3f(heads + 3 * b, rest + 3 * b));
        if (h == CAGE_RING_SIZE)
            printf("bar, cage vertex %d moved by %.3f: joints move at most %.4f\n", h, handle,
                   worst);
        assert_true(worst < handle);
    }
    ssk_cage_binding_free(&cb);
    free(out);
    ssk_rig_destroy(rig);
}

static void test_same_bits_on_any_thread_count(void **state)
{
    (void)state;
    ssk_rig *rig = make_bar();
    double v[3 * CAGE_VERTICES];
    uint32_t t[3 * CAGE_TRIANGLES];
    bar_cage(v, t);
    ssk_threading saved, th;
    ssk_threading_get(&saved);
    th = saved;
    th.threads = 1;
    assert_int_equal(ssk_threading_set(&th, NULL), SSK_OK);
    ssk_cage_binding one, four;
    bind_ok(&one, rig, v, CAGE_VERTICES, t, CAGE_TRIANGLES);
    th.threads = 4;
    assert_int_equal(ssk_threading_set(&th, NULL), SSK_OK);
    bind_ok(&four, rig, v, CAGE_VERTICES, t, CAGE_TRIANGLES);
    saved.threads = 0;
    assert_int_equal(ssk_threading_set(&saved, NULL), SSK_OK);
    assert_memory_equal(one.phi, four.phi, sizeof(double) * one.vertex_count * one.cage_vertex_count);
    assert_memory_equal(one.psi, four.psi, sizeof(double) * one.joint_count * one.cage_vertex_count);
    assert_memory_equal(one.up.rows, four.up.rows, sizeof(uint32_t) * one.cage_vertex_count);
    ssk_cage_binding_free(&one);
    ssk_cage_binding_free(&four);
    ssk_rig_destroy(rig);
}

/* ------------------------------------------------------------------------ */
/* A real character                                                          */
/* ------------------------------------------------------------------------ */

/* The box [lo, hi] as a closed cage (8 vertices, 12 outward triangles). */
static void box_cage(double v[24], uint32_t t[36], const double lo[3], const double hi[3])
{
    for (int k = 0; k < 8; ++k) {
        v[3 * k] = (k & 1) ? hi[0] : lo[0];
        v[3 * k + 1] = (k & 2) ? hi[1] : lo[1];
        v[3 * k + 2] = (k & 4) ? hi[2] : lo[2];
    }
    static const uint32_t faces[36] = {0, 2, 3, 0, 3, 1, /* z = lo */
                                       4, 5, 7, 4, 7, 6, /* z = hi */
                                       0, 1, 5, 0, 5, 4, /* y = lo */
                                       2, 6, 7, 2, 7, 3, /* y = hi */
                                       0, 4, 6, 0, 6, 2, /* x = lo */
                                       1, 3, 7, 1, 7, 5 /* x = hi */};
    memcpy(t, faces, sizeof faces);
}

static void test_bcn_epileptic(void **state)
{
    (void)state;
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    if (ssk_scene_import(&scene, SSK_MODELS_DIR "/X/BCN_Epileptic.X", &err) != SSK_OK)
        fail_msg("import: %s", err.message);
    const ssk_rig *rig = ssk_scene_rig(scene);
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    float *rest = malloc(12u * nv), *heads = malloc(12u * nb), *out_heads = malloc(12u * nb);
    rest_positions(rest, rig);
    rest_heads(heads, rig);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < nv + nb; ++i) {
        const float *p = i < nv ? rest + 3 * i : heads + 3 * (i - nv);
        for (int a = 0; a < 3; ++a) {
            lo[a] = fmin(lo[a], p[a]);
            hi[a] = fmax(hi[a], p[a]);
        }
    }
    const double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                             (hi[2] - lo[2]) * (hi[2] - lo[2]));
    for (int a = 0; a < 3; ++a) {
        lo[a] -= BCN_BOX_MARGIN * diag;
        hi[a] += BCN_BOX_MARGIN * diag;
    }
    double v[24];
    uint32_t t[36];
    box_cage(v, t, lo, hi);
    ssk_cage_binding cb;
    ssk_threading th;
    ssk_threading_get(&th);
    const double t0 = ssk_time_seconds();
    bind_ok(&cb, rig, v, 8, t, 12);
    const double t_bind = ssk_time_seconds() - t0;
    float *out = malloc(12u * nv);
    const double t1 = ssk_time_seconds();
    ssk_cage_binding_reshape(&cb, v, out, out_heads);
    const double t_reshape = ssk_time_seconds() - t1;
    const double dh = tu_max_abs_diff(out_heads, heads, 3u * nb);
    const double dp = tu_max_abs_diff(out, rest, 3u * nv);
    double worst_joint = 0.0; /* psi A reproduced in double */
    for (uint32_t b = 0; b < nb; ++b) {
        double p[3] = {0, 0, 0}, sum = 0.0;
        for (uint32_t k = 0; k < 8; ++k) {
            sum += cb.psi[8 * b + k];
            for (int a = 0; a < 3; ++a) p[a] += cb.psi[8 * b + k] * v[3 * k + a];
        }
        for (int a = 0; a < 3; ++a) worst_joint = fmax(worst_joint, fabs(p[a] - heads[3 * b + a]));
        assert_true(fabs(sum - 1.0) <= 1e-12);
    }
    printf("BCN_Epileptic.X (%u vertices, %u bones, %u threads), 8-vertex box cage: bound in "
           "%.1f ms, joints_from_mesh_mvc %d; |Psi C0 - A| %.2e (float heads %.2e), "
           "|Phi C0 - M| %.2e (diagonal %.1f); reshape %.2f ms\n",
           nv, nb, th.threads, 1e3 * t_bind, cb.joints_from_mesh_mvc, worst_joint, dh, dp, diag,
           1e3 * t_reshape);
    assert_true(worst_joint <= BCN_JOINT_TOL * diag);
    assert_true(dh <= BCN_JOINT_TOL * diag);
    assert_true(dp <= REPRO_TOL * diag);
    ssk_cage_binding_free(&cb);
    free(rest);
    free(heads);
    free(out_heads);
    free(out);
    ssk_scene_destroy(scene);
}

/* ------------------------------------------------------------------------ */
/* Bad input                                                                 */
/* ------------------------------------------------------------------------ */

static void test_bad_input_is_refused(void **state)
{
    (void)state;
    ssk_rig *rig = make_bar();
    double v[3 * CAGE_VERTICES];
    uint32_t t[3 * CAGE_TRIANGLES];
    bar_cage(v, t);
    ssk_cage_binding cb;
    ssk_error err = {0};
    assert_int_equal(ssk_cage_binding_create(NULL, rig, v, CAGE_VERTICES, t, CAGE_TRIANGLES, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_binding_create(&cb, NULL, v, CAGE_VERTICES, t, CAGE_TRIANGLES, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "rig"));
    assert_int_equal(ssk_cage_binding_create(&cb, rig, NULL, CAGE_VERTICES, t, CAGE_TRIANGLES, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_binding_create(&cb, rig, v, CAGE_VERTICES, NULL, CAGE_TRIANGLES, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    /* an open cage (the last triangle dropped) */
    assert_int_equal(ssk_cage_binding_create(&cb, rig, v, CAGE_VERTICES, t, CAGE_TRIANGLES - 1, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    printf("open cage: %s\n", err.message);
    assert_non_null(strstr(err.message, "closed"));
    assert_null(cb.phi);
    /* a cage whose bottom ring is above bone 0's head (y = 0) */
    double high[3 * CAGE_VERTICES];
    memcpy(high, v, sizeof v);
    for (int s = 0; s < CAGE_RING_SIZE; ++s) high[3 * s + 1] = 0.1;
    assert_int_equal(ssk_cage_binding_create(&cb, rig, high, CAGE_VERTICES, t, CAGE_TRIANGLES, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    printf("joint outside the cage: %s\n", err.message);
    assert_non_null(strstr(err.message, "bone 0"));
    assert_non_null(strstr(err.message, "outside"));
    assert_null(cb.phi);
    assert_null(cb.psi);
    ssk_cage_binding_free(&cb); /* zeroed: harmless */
    ssk_cage_binding_free(NULL);
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rest_cage_gives_the_rest),
        cmocka_unit_test(test_affine_cage_edit_is_followed),
        cmocka_unit_test(test_bulges_keep_the_joint_centered),
        cmocka_unit_test(test_single_handle),
        cmocka_unit_test(test_same_bits_on_any_thread_count),
        cmocka_unit_test(test_bcn_epileptic),
        cmocka_unit_test(test_bad_input_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
