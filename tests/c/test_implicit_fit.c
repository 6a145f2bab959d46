/* test_implicit_fit.c — the per-bone fields of implicit skinning (Vaillant
 * 2015, 4.4; issue #20; core/bind/implicit_fit.c, core/kernels/
 * implicit_field.c) and the mean value coordinates of its tangential
 * relaxation (Eq. 4.6; core/bind/implicit_mvc.c):
 * - on a generated 2-bone limb (a capped tube along +Y, tu_make_limb):
 *   two fields; f within ISO_TOL of 0.5 on each bone's sub-mesh away from
 *   the joint and the caps (the 0.5 iso-surface approximates the skin),
 *   within RIM_ISO_TOL at the caps' sharp rims; f > 0.5 on the
 *   bone's axis inside; f below FACE_TOL on the grid's box faces (the
 *   margin covers t_r's support); the gradient points inward (toward the
 *   bone, against the outward normal) and matches central differences of
 *   the evaluated f; outside the box f = 0 with a zero gradient;
 * - the fields' zero cells: the lookup that skips them gives the same
 *   bits as the plain one, in and past the box;
 * - the mean value coordinates: one row per vertex of the closed tube,
 *   summing to 1, reproducing every vertex within 1e-5 of the bounding
 *   box's diagonal from its neighbors projected onto its tangent plane;
 * - the same bits with 1 or 2 threads;
 * - BCN_Epileptic.X (3k vertices, 54 bones): everything finite, f in
 *   [0, 1], the fields' bones and bone_field agree, the coordinates as
 *   above, f below FACE_TOL on the boxes' faces, at least 75% of the
 *   vertices within 0.1 of 0.5 on their main bone's field; the fit's time printed
 *   (not asserted), and a generated 30k-vertex limb's of 50 bones;
 * - bad arguments refused with a message. */
#include "testutil.h"

#include "bind/implicit_bind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"

/* The limb: 2 bones of length 1 along +Y, radius 0.25. */
#define LIMB_RINGS 41u
#define LIMB_SEGMENTS 24u
#define LIMB_BONES 2u
#define LIMB_LENGTH 2.0f
#define LIMB_RADIUS 0.25f
#define LIMB_BLEND 0.2f
#define LIMB_INFLUENCES 2u
/* Vertices within this distance of the joint (y = 1) are left out of the
 * iso-value check (the closure region, culled by Eq. 4.2). */
#define JOINT_MARGIN 0.25f
/* |f(v) - 0.5| on the sub-mesh away from the joint: on the tube's side,
 * and within CAP_MARGIN of a free end, where the smooth field rounds the
 * caps' 90-degree rims (4.4: the field leaves out the details; each
 * vertex keeps its own iso-value at rest). */
#define ISO_TOL 0.05
#define CAP_MARGIN 0.25f
#define RIM_ISO_TOL 0.2
/* f on the grid's box faces. */
#define FACE_TOL 1e-2
/* Central differences of f against the interpolated gradient: step in
 * grid cells, and the error relative to the largest |grad f|. */
#define FD_STEP_CELLS 0.5
#define FD_TOL 0.15
/* Mean value coordinates: sum 1 and reproduction (relative to the
 * bounding box's diagonal), issue #20's bar. */
#define MVC_TOL 1e-5
/* BCN_Epileptic.X: at least this fraction of the vertices with a field
 * lie within BCN_ISO_TOL of 0.5 on it (joint regions, culled, do not). */
#define BCN_ISO_TOL 0.1
#define BCN_NEAR_ISO_FRACTION 0.75
/* f in [0, 1] up to float rounding. */
#define RANGE_TOL 1e-5

static ssk_rig *make_limb(void)
{
    return tu_make_limb(LIMB_RINGS, LIMB_SEGMENTS, LIMB_BONES, LIMB_LENGTH, LIMB_RADIUS,
                        LIMB_BLEND, LIMB_INFLUENCES);
}

static void fit_or_fail(ssk_implicit_fit *fit, const ssk_rig *rig,
                        const ssk_implicit_fit_params *params)
{
    ssk_error err = {0};
    const ssk_status st = ssk_implicit_fit_create(fit, rig, params, &err);
    if (st != SSK_OK) fprintf(stderr, "ssk_implicit_fit_create: %s\n", err.message);
    assert_int_equal(st, SSK_OK);
}

/* Rig-space rest positions, #V by 3 (the caller frees). */
static float *rest_positions(const ssk_rig *rig)
{
    float *rest = malloc(3 * (size_t)rig->vertex_count * sizeof(float));
    assert_non_null(rest);
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t v = 0; v < mesh->vertex_count; ++v)
            ssk_mat4_transform_point(rest + 3 * ((size_t)mesh->first_vertex + v),
                                     mesh->object_matrix, mesh->positions + 3 * (size_t)v);
    }
    return rest;
}

/* The limb's bone owning a vertex at height y (largest weight). */
static uint32_t limb_bone(float y)
{
    return y < LIMB_LENGTH / (float)LIMB_BONES ? 0u : 1u;
}

/* The largest f on the grid's outer layers (the box's faces). */
static double largest_on_faces(const ssk_implicit_field *field)
{
    const uint32_t n = field->resolution;
    double face_max = 0.0;
    for (uint32_t k = 0; k < n; ++k)
        for (uint32_t j = 0; j < n; ++j)
            for (uint32_t i = 0; i < n; ++i) {
                if (i != 0 && j != 0 && k != 0 && i != n - 1 && j != n - 1 && k != n - 1)
                    continue;
                face_max = fmax(face_max, field->samples[4 * (((size_t)k * n + j) * n + i)]);
            }
    return face_max;
}

static void test_limb_fields(void **state)
{
    (void)state;
    ssk_rig *rig = make_limb();
    ssk_implicit_fit fit;
    fit_or_fail(&fit, rig, NULL);
    assert_int_equal(fit.field_count, LIMB_BONES);
    const float *rest = rig->meshes[0].positions; /* object = rig space here */
    const float joint = LIMB_LENGTH / (float)LIMB_BONES;
    double worst_iso = 0.0, worst_rim = 0.0, worst_fd = 0.0;
    for (uint32_t b = 0; b < LIMB_BONES; ++b) {
        assert_int_equal(fit.bone_field[b], (int32_t)b);
        const ssk_implicit_field *field = &fit.fields[b];
        assert_int_equal(field->bone, b);
        assert_int_equal(field->resolution, SSK_IMPLICIT_FIELD_RESOLUTION);
        assert_true(field->sample_count >= 4);
        /* r: about the tube's radius (the farthest sample's distance) */
        assert_true(field->radius > 0.9f * LIMB_RADIUS && field->radius < 1.5f * LIMB_RADIUS);
        const float lo = joint * (float)b, hi = lo + joint;
        /* iso-value and inward gradient on the sub-mesh */
        double gmax = 0.0;
        for (uint32_t v = 0; v < rig->vertex_count; ++v) {
            const float *p = rest + 3 * (size_t)v;
            if (limb_bone(p[1]) != b || fabsf(p[1] - joint) < JOINT_MARGIN) continue;
            float g[3];
            const float f = ssk_implicit_field_eval(field, p, g);
            const bool rim = p[1] < CAP_MARGIN || p[1] > LIMB_LENGTH - CAP_MARGIN;
            if (rim) {
                worst_rim = fmax(worst_rim, fabs(f - 0.5));
                assert_true(fabs(f - 0.5) < RIM_ISO_TOL);
            } else {
                worst_iso = fmax(worst_iso, fabs(f - 0.5));
                assert_true(fabs(f - 0.5) < ISO_TOL);
            }
            const float *n = fit.rest_normals + 3 * (size_t)v;
            assert_true(g[0] * n[0] + g[1] * n[1] + g[2] * n[2] < 0.0f);
            /* toward the closest point of the bone */
            const float cy = p[1] < lo ? lo : p[1] > hi ? hi : p[1];
            const float to_bone[3] = {-p[0], cy - p[1], -p[2]};
            if (fabsf(to_bone[0]) + fabsf(to_bone[1]) + fabsf(to_bone[2]) > 0.0f)
                assert_true(g[0] * to_bone[0] + g[1] * to_bone[1] + g[2] * to_bone[2] > 0.0f);
            gmax = fmax(gmax, sqrt((double)g[0] * g[0] + (double)g[1] * g[1] + (double)g[2] * g[2]));
        }
        /* inside on the axis */
        for (int s = 1; s < 10; ++s) {
            const float p[3] = {0.0f, lo + joint * (float)s / 10.0f, 0.0f};
            assert_true(ssk_implicit_field_eval(field, p, NULL) > 0.5f);
        }
        const double face_max = largest_on_faces(field);
        printf("bone %u: %u centers, r = %.4f, largest f on the box faces %.2e\n", b,
               field->sample_count, (double)field->radius, face_max);
        assert_true(face_max < FACE_TOL);
        /* central differences, at the vertices and halfway to the axis
         * and outward */
        float inv[16];
        assert_true(ssk_mat4_invert(inv, field->grid_from_rest));
        double cell = INFINITY; /* the smallest cell edge, rest space */
        for (int a = 0; a < 3; ++a) {
            const float *row = field->grid_from_rest + 4 * a;
            cell = fmin(cell, 1.0 / sqrt((double)row[0] * row[0] + (double)row[1] * row[1] +
                                         (double)row[2] * row[2]));
        }
        const float h = (float)(FD_STEP_CELLS * cell);
        for (uint32_t v = 0; v < rig->vertex_count; v += 7) {
            const float *pv = rest + 3 * (size_t)v;
            if (limb_bone(pv[1]) != b) continue;
            for (int shell = 0; shell < 3; ++shell) {
                const float scale = shell == 0 ? 1.0f : shell == 1 ? 0.5f : 1.3f;
                const float p[3] = {pv[0] * scale, pv[1], pv[2] * scale};
                float g[3];
                ssk_implicit_field_eval(field, p, g);
                for (int a = 0; a < 3; ++a) {
                    float pp[3] = {p[0], p[1], p[2]}, pm[3] = {p[0], p[1], p[2]};
                    pp[a] += h;
                    pm[a] -= h;
                    const double fd = ((double)ssk_implicit_field_eval(field, pp, NULL) -
                                       ssk_implicit_field_eval(field, pm, NULL)) /
                                      (2.0 * h);
                    worst_fd = fmax(worst_fd, fabs(fd - g[a]) / gmax);
                    assert_true(fabs(fd - g[a]) <= FD_TOL * gmax);
                }
            }
        }
        /* outside the box */
        const float far[3] = {100.0f, 0.0f, 0.0f};
        float g[3] = {1.0f, 1.0f, 1.0f};
        assert_true(ssk_implicit_field_eval(field, far, g) == 0.0f);
        assert_true(g[0] == 0.0f && g[1] == 0.0f && g[2] == 0.0f);
    }
    printf("limb: largest |f - 0.5| on the sub-meshes' sides %.4f, at the caps' rims %.4f; "
           "largest finite-difference error %.4f of max |grad f|\n",
           worst_iso, worst_rim, worst_fd);
    ssk_implicit_fit_free(&fit);
    ssk_rig_destroy(rig);
}

/* The zero cells (ssk_implicit_field_zero_cells) of the limb's fields:
 * some cells are marked (the box is wider than the support); at points
 * spread over every cell of the box and past it, the lookup with the
 * marks gives the same bits as the plain one (f and grad), and is 0 with
 * a zero gradient in the marked cells. */
static void test_zero_cells(void **state)
{
    (void)state;
    ssk_rig *rig = make_limb();
    ssk_implicit_fit fit;
    fit_or_fail(&fit, rig, NULL);
    for (uint32_t b = 0; b < fit.field_count; ++b) {
        const ssk_implicit_field *field = &fit.fields[b];
        const uint32_t n = field->resolution, cn = n - 1u;
        const size_t words = ssk_implicit_field_cell_words(field);
        assert_int_equal(words, ((size_t)cn * cn * cn + 31u) / 32u);
        uint32_t *cells = malloc(words * sizeof *cells);
        assert_non_null(cells);
        ssk_implicit_field_zero_cells(field, cells);
        float inv[16];
        assert_true(ssk_mat4_invert(inv, field->grid_from_rest));
        uint32_t marked = 0, compared = 0;
        /* 2 points per cell along a diagonal, and a layer past the box */
        for (int k = -1; k <= (int)cn; ++k)
            for (int j = -1; j <= (int)cn; ++j)
                for (int i = -1; i <= (int)cn; ++i)
                    for (int s = 0; s < 2; ++s) {
                        const float frac = s == 0 ? 0.25f : 0.7f;
                        const float g[3] = {(float)i + frac, (float)j + frac, (float)k + frac};
                        float p[3];
                        ssk_mat4_transform_point(p, inv, g);
                        float ga[3], gb[3];
                        const float fa = ssk_implicit_field_eval(field, p, ga);
                        const float fb = ssk_implicit_field_eval_cells(field, cells, p, gb);
                        assert_memory_equal(&fa, &fb, sizeof fa);
                        assert_memory_equal(ga, gb, sizeof ga);
                        ++compared;
                        const bool inside = i >= 0 && j >= 0 && k >= 0 && i < (int)cn &&
                                            j < (int)cn && k < (int)cn;
                        if (!inside || s != 0) continue;
                        const uint32_t cell = ((uint32_t)k * cn + (uint32_t)j) * cn + (uint32_t)i;
                        if (!(cells[cell / 32u] >> (cell % 32u) & 1u)) continue;
                        ++marked;
                        assert_true(fa == 0.0f && ga[0] == 0.0f && ga[1] == 0.0f && ga[2] == 0.0f);
                    }
        printf("field %u: %u of %u cells zero; %u points, the same bits with the marks\n", b,
               marked, cn * cn * cn, compared);
        assert_true(marked > 0 && marked < cn * cn * cn);
        free(cells);
    }
    ssk_implicit_fit_free(&fit);
    ssk_rig_destroy(rig);
}

/* Checks every non-empty row of fit's coordinates: sum 1, neighbors in
 * the welded adjacency, v reproduced within MVC_TOL * diagonal. Returns
 * the number of non-empty rows. */
static uint32_t check_mvc(const ssk_rig *rig, const ssk_implicit_fit *fit, const float *rest)
{
    const double diag = tu_bbox_diagonal(rest, rig->vertex_count);
    uint32_t rows = 0;
    double worst = 0.0;
    for (uint32_t v = 0; v < rig->vertex_count; ++v) {
        const uint32_t b = fit->mvc_offsets[v], e = fit->mvc_offsets[v + 1];
        if (b == e) continue;
        ++rows;
        assert_int_equal(rig->weld.point[v], v);
        assert_true(e - b >= 3);
        const float *n = fit->rest_normals + 3 * (size_t)v, *pv = rest + 3 * (size_t)v;
        double sum = 0.0, x[3] = {0.0, 0.0, 0.0};
        for (uint32_t i = b; i < e; ++i) {
            const uint32_t q = fit->mvc_neighbors[i];
            bool adjacent = false;
            for (uint32_t a = rig->weld.adjacency_offsets[v];
                 a < rig->weld.adjacency_offsets[v + 1]; ++a)
                adjacent |= rig->weld.adjacency[a] == q;
            assert_true(adjacent);
            const float *p = rest + 3 * (size_t)q;
            const double d[3] = {(double)p[0] - pv[0], (double)p[1] - pv[1], (double)p[2] - pv[2]};
            const double dn = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
            const double w = fit->mvc_weights[i];
            assert_true(isfinite(w));
            sum += w;
            for (int a = 0; a < 3; ++a) x[a] += w * ((double)p[a] - dn * n[a]);
        }
        assert_true(fabs(sum - 1.0) <= MVC_TOL);
        const double r = sqrt((x[0] - pv[0]) * (x[0] - pv[0]) + (x[1] - pv[1]) * (x[1] - pv[1]) +
                              (x[2] - pv[2]) * (x[2] - pv[2]));
        worst = fmax(worst, r / diag);
        assert_true(r <= MVC_TOL * diag);
    }
    printf("mean value coordinates: %u rows of %u vertices, largest reproduction error %.2e of "
           "the diagonal\n",
           rows, rig->vertex_count, worst);
    return rows;
}

static void test_limb_mvc(void **state)
{
    (void)state;
    ssk_rig *rig = make_limb();
    ssk_implicit_fit fit;
    fit_or_fail(&fit, rig, NULL);
    /* a closed tube: every vertex has a closed manifold one-ring */
    assert_int_equal(check_mvc(rig, &fit, rig->meshes[0].positions), rig->vertex_count);
    /* rest normals: unit, outward (away from the axis on the side) */
    for (uint32_t v = 0; v < rig->vertex_count; ++v) {
        const float *n = fit.rest_normals + 3 * (size_t)v, *p = rig->meshes[0].positions + 3 * v;
        assert_true(fabs(sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) - 1.0) < 1e-5);
        assert_true(n[0] * p[0] + n[2] * p[2] >= 0.0f);
    }
    ssk_implicit_fit_free(&fit);
    ssk_rig_destroy(rig);
}

static void fit_with_threads(ssk_implicit_fit *fit, const ssk_rig *rig, uint32_t threads)
{
    ssk_threading t;
    ssk_threading_default(&t);
    t.threads = threads;
    assert_int_equal(ssk_threading_set(&t, NULL), SSK_OK);
    fit_or_fail(fit, rig, NULL);
}

static void test_thread_count_independent(void **state)
{
    (void)state;
    ssk_rig *rig = make_limb();
    ssk_implicit_fit one, two;
    fit_with_threads(&one, rig, 1);
    fit_with_threads(&two, rig, 2);
    ssk_threading t;
    ssk_threading_default(&t);
    assert_int_equal(ssk_threading_set(&t, NULL), SSK_OK);
    assert_int_equal(one.field_count, two.field_count);
    for (uint32_t f = 0; f < one.field_count; ++f) {
        const size_t n = one.fields[f].resolution;
        assert_memory_equal(one.fields[f].samples, two.fields[f].samples, n * n * n * 4 * sizeof(float));
        assert_memory_equal(one.fields[f].grid_from_rest, two.fields[f].grid_from_rest,
                            sizeof one.fields[f].grid_from_rest);
    }
    const uint32_t rows = one.mvc_offsets[rig->vertex_count];
    assert_int_equal(rows, two.mvc_offsets[rig->vertex_count]);
    assert_memory_equal(one.mvc_weights, two.mvc_weights, rows * sizeof(float));
    ssk_implicit_fit_free(&one);
    ssk_implicit_fit_free(&two);
    ssk_rig_destroy(rig);
}

static void test_bcn_epileptic(void **state)
{
    (void)state;
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&scene, MODEL_PATH, &err), SSK_OK);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_implicit_fit fit;
    const double t0 = ssk_time_seconds();
    fit_or_fail(&fit, rig, NULL);
    const double seconds = ssk_time_seconds() - t0;
    double face_max = 0.0;
    for (uint32_t b = 0; b < rig->bone_count; ++b) {
        const int32_t f = fit.bone_field[b];
        assert_true(f >= -1 && f < (int32_t)fit.field_count);
        if (f >= 0) assert_int_equal(fit.fields[f].bone, b);
    }
    for (uint32_t f = 0; f < fit.field_count; ++f) {
        const ssk_implicit_field *field = &fit.fields[f];
        if (f > 0) assert_true(field->bone > fit.fields[f - 1].bone);
        assert_true(field->sample_count >= 4);
        assert_true(isfinite(field->radius) && field->radius > 0.0f);
        assert_true(ssk_floats_finite(field->grid_from_rest, 16));
        const size_t n = field->resolution, count = n * n * n;
        assert_true(ssk_floats_finite(field->samples, 4 * count));
        for (size_t i = 0; i < count; ++i) {
            const float v = field->samples[4 * i];
            assert_true(v >= -RANGE_TOL && v <= 1.0 + RANGE_TOL);
        }
        face_max = fmax(face_max, largest_on_faces(field));
    }
    assert_true(ssk_floats_finite(fit.rest_normals, 3 * (size_t)rig->vertex_count));
    /* the skin's main bones get fields: at least a third of the bones */
    assert_true(fit.field_count >= rig->bone_count / 3);
    float *rest = rest_positions(rig);
    /* each representative on its main bone's field: near the 0.5
     * iso-surface for most (the field leaves out details, 4.4) */
    uint32_t on_field = 0, near_iso = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const uint32_t k = mesh->influence_count;
        for (uint32_t v = 0; v < mesh->vertex_count; ++v) {
            const uint32_t row = mesh->first_vertex + v;
            int32_t best = -1;
            float best_w = 0.0f;
            for (uint32_t i = 0; i < k; ++i)
                if (mesh->weights[(size_t)v * k + i] > best_w) {
                    best_w = mesh->weights[(size_t)v * k + i];
                    best = mesh->bone_indices[(size_t)v * k + i];
                }
            if (rig->weld.point[row] != row || best < 0 || fit.bone_field[best] < 0) continue;
            const float f =
                ssk_implicit_field_eval(&fit.fields[fit.bone_field[best]], rest + 3 * (size_t)row, NULL);
            ++on_field;
            near_iso += fabs(f - 0.5) < BCN_ISO_TOL;
        }
    }
    printf("BCN_Epileptic.X: %u of %u representatives within %.2f of 0.5 on their bone's field\n",
           near_iso, on_field, BCN_ISO_TOL);
    assert_true(near_iso >= BCN_NEAR_ISO_FRACTION * on_field);
    const uint32_t rows = check_mvc(rig, &fit, rest);
    assert_true(rows > 0);
    /* most vertices lie on the field of their main bone near 0.5 */
    printf("BCN_Epileptic.X: %u vertices, %u bones, %u fields, fit %.3f s (%u threads); largest f "
           "on the box faces %.2e\n",
           rig->vertex_count, rig->bone_count, fit.field_count, seconds, ssk_parallel_threads(),
           face_max);
    assert_true(face_max < FACE_TOL);
    free(rest);
    ssk_implicit_fit_free(&fit);
    ssk_scene_destroy(scene);
}

/* The fit's time on a generated 30k-vertex limb of 50 bones (issue #20's
 * target: a 30k-vertex character under about 1.5 s on 2 cores); printed,
 * not asserted. */
#define LARGE_RINGS 1000u
#define LARGE_SEGMENTS 30u
#define LARGE_BONES 50u
#define LARGE_LENGTH 50.0f
#define LARGE_RADIUS 0.4f

static void test_large_limb_timing(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(LARGE_RINGS, LARGE_SEGMENTS, LARGE_BONES, LARGE_LENGTH,
                                LARGE_RADIUS, LIMB_BLEND, LIMB_INFLUENCES);
    ssk_implicit_fit fit;
    const double t0 = ssk_time_seconds();
    fit_or_fail(&fit, rig, NULL);
    const double seconds = ssk_time_seconds() - t0;
    assert_int_equal(fit.field_count, LARGE_BONES);
    printf("limb of %u vertices, %u bones: %u fields, fit %.3f s (%u threads)\n",
           rig->vertex_count, rig->bone_count, fit.field_count, seconds, ssk_parallel_threads());
    ssk_implicit_fit_free(&fit);
    ssk_rig_destroy(rig);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    ssk_rig *rig = make_limb();
    ssk_implicit_fit fit;
    ssk_error err = {0};
    assert_int_equal(ssk_implicit_fit_create(NULL, rig, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_true(strlen(err.message) > 0);
    assert_int_equal(ssk_implicit_fit_create(&fit, NULL, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(fit.fields);
    ssk_implicit_fit_params bad[5];
    for (int i = 0; i < 5; ++i) ssk_implicit_fit_params_default(&bad[i]);
    bad[0].target_samples = 0;
    bad[1].cull_b = 0.5f;
    bad[2].cull_b = NAN;
    bad[3].resolution = 1;
    bad[4].resolution = 100000;
    for (int i = 0; i < 5; ++i) {
        err.message[0] = '\0';
        assert_int_equal(ssk_implicit_fit_create(&fit, rig, &bad[i], &err),
                         SSK_ERROR_INVALID_ARGUMENT);
        assert_true(strlen(err.message) > 0);
        assert_null(fit.fields);
        assert_null(fit.bone_field);
    }
    ssk_implicit_fit_free(NULL);
    assert_true(ssk_implicit_field_eval(NULL, (const float[3]){0, 0, 0}, NULL) == 0.0f);
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limb_fields),
        cmocka_unit_test(test_zero_cells),
        cmocka_unit_test(test_limb_mvc),
        cmocka_unit_test(test_thread_count_independent),
        cmocka_unit_test(test_bcn_epileptic),
        cmocka_unit_test(test_large_limb_timing),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
