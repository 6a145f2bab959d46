/* test_cage_rev.c — the reverse cage deformer CageRev (Corda et al. 2020,
 * 4.3, Eq. 15-19; issue #21; core/bind/cage_rev.c, ssk_cage_rev_solve):
 * - a capped tube limb (tu_make_limb: 9 rings of 8 vertices, 2 bones along
 *   +Y) in a 12-vertex box cage (three square rings, by hand, as
 *   test_cage_bind.c);
 * - the rest pose (identity skinning): dC = dC' ("C' and C match");
 * - bent poses (60 and 90 degrees at the joint, and one with the root
 *   rotated and moved too) and a random dC': the rest cage moved by dC,
 *   reshaped (ssk_cage_binding_reshape: rest rows and heads), skinned by
 *   LBS with ssk_cage_skinning's carried matrices and fitted by the cage
 *   updater (ssk_cage_up_solve) gives C' + dC' within 1e-5 of the
 *   diagonal (the paper: "the loop C' -> C -> S -> S' -> C' is exact");
 *   the same through the public path (ssk_cage_reshape, ssk_cage_pose,
 *   the CPU backend's LBS, ssk_cage_fit);
 * - DQS through the public path: an approximation, the miss a fraction
 *   of dC' (printed; first order, about 21% at a 75-degree bend);
 * - an 88-vertex cage (22 square rings) around a 6-bone limb bent at
 *   every joint: the loop, and the solve's time printed (the paper:
 *   CageRev 56 ms for Ely's 88-vertex cage);
 * - bad input refused: NULL, counts that differ, a non-finite dC'.
 * Notation as in cage_rev.c: C the rest cage, C' the posed one. */
#include "testutil.h"
#include "cage_fixture.h"

#include "bind/cage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bar of test_cage_bind.c: 9 rings of 8 vertices, 2 bones. */
#define BAR_RINGS 9
#define BAR_SEGMENTS 8
#define BAR_BONES 2
#define BAR_LENGTH 2.0f
#define BAR_RADIUS 0.5f
#define BAR_BLEND 0.5f
#define BAR_INFLUENCES 2
/* Its cage: 3 square rings of half-width CAGE_HALF from CAGE_Y0 to
 * BAR_LENGTH + CAGE_MARGIN. */
#define CAGE_RING_SIZE 4
#define CAGE_HALF 0.75
#define CAGE_MARGIN 0.25
#define BAR_CAGE_RINGS 3
/* The long limb: LONG_BONES bones of length 1, LONG_RINGS rings, in a
 * cage of LONG_CAGE_RINGS rings (88 vertices, Ely's count). */
#define LONG_BONES 6
#define LONG_LENGTH 6.0f
#define LONG_RINGS 64
#define LONG_CAGE_RINGS 22
#define LONG_BEND_DEG 25.0
#define MAX_CAGE_RINGS LONG_CAGE_RINGS
#define MAX_CAGE_VERTICES (MAX_CAGE_RINGS * CAGE_RING_SIZE)
#define MAX_CAGE_TRIANGLES (2 * CAGE_RING_SIZE * (MAX_CAGE_RINGS - 1) + 4)
#define MAX_BONES LONG_BONES
/* Issue #21: the loop within 1e-5 of the diagonal; the rest pose's dC
 * within this of dC' (the float skin weights sum to 1 within rounding). */
#define LOOP_TOL 1e-5
#define REST_TOL 1e-6
/* Random posed offsets: up to this in each coordinate (rig units; the
 * bar is 2 long). */
#define POSED_OFFSET 0.1
/* DQS (an approximation): an incremental dC' up to DQS_OFFSET per
 * coordinate is followed within DQS_FRACTION of its size. */
#define DQS_OFFSET 0.01
#define DQS_FRACTION 0.5
/* Timing repetitions of the 88-vertex solve. */
#define TIMING_RUNS 5
#define PI_D 3.14159265358979323846
#define DEG (PI_D / 180.0)

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

/* Deterministic uniform in [-h, h) (64-bit LCG, Knuth's MMIX constants). */
static double rand_sym(uint64_t *state, double h)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return h * (2.0 * ((double)(*state >> 11) * (1.0 / 9007199254740992.0)) - 1.0);
}

/* A tube cage of `rings` square rings (corner s at 45 + 90 s degrees in
 * XZ, half-width CAGE_HALF) evenly from y0 to y1, capped; oriented as
 * tu_make_limb's mesh (closed, consistent). v: rings * 4 by 3; t: 2 * 4 *
 * (rings - 1) + 4 triangles. */
static void tube_cage(double *v, uint32_t *t, uint32_t rings, double y0, double y1)
{
    tu_tube_cage(v, t, rings, y0, y1, CAGE_HALF);
}

static uint32_t tube_triangles(uint32_t rings)
{
    return tu_tube_cage_triangles(rings);
}

/* A limb, its cage (rings square rings around it) and its binding. */
typedef struct limb {
    ssk_rig *rig;
    uint32_t c, nt;
    double cage[3 * MAX_CAGE_VERTICES];
    uint32_t tris[3 * MAX_CAGE_TRIANGLES];
    ssk_cage_binding cb;
} limb;

static void limb_make(limb *l, uint32_t rings, uint32_t bones, float length, uint32_t cage_rings)
{
    memset(l, 0, sizeof *l);
    l->rig = tu_make_limb(rings, BAR_SEGMENTS, bones, length, BAR_RADIUS, BAR_BLEND,
                          BAR_INFLUENCES);
    assert_non_null(l->rig);
    l->c = cage_rings * CAGE_RING_SIZE;
    l->nt = tube_triangles(cage_rings);
    tube_cage(l->cage, l->tris, cage_rings, -CAGE_MARGIN, (double)length + CAGE_MARGIN);
    ssk_error err = {0};
    if (ssk_cage_binding_create(&l->cb, l->rig, l->cage, l->c, l->tris, l->nt, &err) != SSK_OK)
        fail_msg("ssk_cage_binding_create: %s", err.message);
}

static void limb_free(limb *l)
{
    ssk_cage_binding_free(&l->cb);
    ssk_rig_destroy(l->rig);
}

/* The diagonal of the cage's bounding box. */
static double cage_diagonal(const double *v, uint32_t c)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t k = 0; k < c; ++k)
        for (int a = 0; a < 3; ++a) {
            lo[a] = fmin(lo[a], v[3 * k + (uint32_t)a]);
            hi[a] = fmax(hi[a], v[3 * k + (uint32_t)a]);
        }
    return sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                (hi[2] - lo[2]) * (hi[2] - lo[2]));
}

/* A chain pose: bone b rotated by angles[b] about axes[b] through its rest
 * head, composed down the chain (S_b = S_{b-1} Rot_b), the root's also
 * followed by `root_move`. skin: #B by 16. */
static void chain_pose(float *skin, const ssk_rig *rig, const double *angles,
                       const float (*axes)[3], const float root_move[3])
{
    for (uint32_t b = 0; b < rig->bone_count; ++b) {
        float rot[16];
        tu_mat4_rotation(rot, axes[b], (float)angles[b], rig->bones[b].head);
        const int32_t p = rig->bones[b].parent;
        if (p < 0) {
            float move[16];
            tu_mat4_translation(move, root_move[0], root_move[1], root_move[2]);
            tu_mat4_mul(skin + 16 * b, move, rot);
        } else {
            tu_mat4_mul(skin + 16 * b, skin + 16 * (uint32_t)p, rot);
        }
    }
}

/* The forward chain C -> S -> S' -> C' with LBS by hand (double): posed
 * (c by 3) = the cage updater's fit of the MaxVol rows of the rest shape
 * Phi rest_cage, its heads Psi rest_cage, skinned with ssk_cage_skinning's
 * carried matrices of `skin`. */
static void forward_lbs(double *posed, const limb *l, const float *skin, const double *rest_cage)
{
    const ssk_rig *rig = l->rig;
    const uint32_t nv = rig->vertex_count, nb = rig->bone_count, c = l->c;
    float *positions = malloc(12u * nv), heads[3 * MAX_BONES], carried[16 * MAX_BONES];
    double *rows = malloc(24u * c);
    assert_non_null(positions);
    assert_non_null(rows);
    ssk_cage_binding_reshape(&l->cb, rest_cage, positions, heads);
    ssk_cage_skinning(carried, rig, heads, skin);
    const ssk_mesh *mesh = &rig->meshes[0];
    assert_int_equal(rig->mesh_count, 1);
    for (uint32_t k = 0; k < c; ++k) {
        const uint32_t i = l->cb.up.rows[k];
        const float *m = positions + 3 * i;
        double acc[3] = {0, 0, 0};
        for (uint32_t q = 0; q < mesh->influence_count; ++q) {
            const int32_t b = mesh->bone_indices[i * mesh->influence_count + q];
            const double w = mesh->weights[i * mesh->influence_count + q];
            if (b < 0 || (uint32_t)b >= nb || !(w > 0.0)) continue;
            const float *s = carried + 16 * (uint32_t)b;
            for (int r = 0; r < 3; ++r)
                acc[r] += w * ((double)s[4 * r] * m[0] + (double)s[4 * r + 1] * m[1] +
                               (double)s[4 * r + 2] * m[2] + (double)s[4 * r + 3]);
        }
        memcpy(rows + 3 * k, acc, sizeof acc);
    }
    ssk_error err = {0};
    if (ssk_cage_up_solve(&l->cb.up, posed, rows, &err) != SSK_OK)
        fail_msg("ssk_cage_up_solve: %s", err.message);
    free(positions);
    free(rows);
}

static void rev_ok(double *dc, const limb *l, const float *skin, const double *dcp)
{
    ssk_error err = {0};
    if (ssk_cage_rev_solve(dc, &l->cb, l->rig, skin, dcp, &err) != SSK_OK)
        fail_msg("ssk_cage_rev_solve: %s", err.message);
}

/* The loop: C' moved by dC (CageRev of a random dC') equals C' + dC' within
 * LOOP_TOL of the diagonal; returns the worst relative difference. */
static double check_loop(const limb *l, const float *skin, uint64_t seed, const char *what)
{
    const uint32_t c = l->c;
    double *posed0 = malloc(24u * c), *posed1 = malloc(24u * c), *dcp = malloc(24u * c),
           *dc = malloc(24u * c), *moved = malloc(24u * c);
    assert_non_null(moved);
    for (uint32_t q = 0; q < 3 * c; ++q) dcp[q] = rand_sym(&seed, POSED_OFFSET);
    forward_lbs(posed0, l, skin, l->cage);
    rev_ok(dc, l, skin, dcp);
    for (uint32_t q = 0; q < 3 * c; ++q) moved[q] = l->cage[q] + dc[q];
    forward_lbs(posed1, l, skin, moved);
    double worst = 0.0, dc_size = 0.0;
    for (uint32_t q = 0; q < 3 * c; ++q) {
        worst = fmax(worst, fabs(posed1[q] - posed0[q] - dcp[q]));
        dc_size = fmax(dc_size, fabs(dc[q]));
    }
    const double rel = worst / cage_diagonal(posed0, c);
    printf("cage_rev loop (%s, c = %u): |C'(C + dC) - C' - dC'| = %.3g of the diagonal "
           "(max |dC| %.3g, max |dC'| <= %.3g)\n",
           what, c, rel, dc_size, POSED_OFFSET);
    assert_true(rel <= LOOP_TOL);
    free(posed0);
    free(posed1);
    free(dcp);
    free(dc);
    free(moved);
    return rel;
}

/* The bar cage's diagonal (at rest). */
static double cage_diagonal_of_bar(void)
{
    double v[3 * MAX_CAGE_VERTICES];
    uint32_t t[3 * MAX_CAGE_TRIANGLES];
    tube_cage(v, t, BAR_CAGE_RINGS, -CAGE_MARGIN, (double)BAR_LENGTH + CAGE_MARGIN);
    return cage_diagonal(v, BAR_CAGE_RINGS * CAGE_RING_SIZE);
}

/* ------------------------------------------------------------------------ */
/* The bar                                                                   */
/* ------------------------------------------------------------------------ */

static void test_rest_pose_gives_the_offset_back(void **state)
{
    (void)state;
    limb l;
    limb_make(&l, BAR_RINGS, BAR_BONES, BAR_LENGTH, BAR_CAGE_RINGS);
    float skin[16 * BAR_BONES];
    for (uint32_t b = 0; b < BAR_BONES; ++b) tu_mat4_identity(skin + 16 * b);
    double dcp[3 * MAX_CAGE_VERTICES], dc[3 * MAX_CAGE_VERTICES];
    uint64_t seed = 21;
    for (uint32_t q = 0; q < 3 * l.c; ++q) dcp[q] = rand_sym(&seed, POSED_OFFSET);
    rev_ok(dc, &l, skin, dcp);
    double worst = 0.0;
    for (uint32_t q = 0; q < 3 * l.c; ++q) worst = fmax(worst, fabs(dc[q] - dcp[q]));
    printf("cage_rev rest pose: max |dC - dC'| = %.3g\n", worst);
    assert_true(worst <= REST_TOL * POSED_OFFSET);
    /* and a rigid motion of the whole bar: every bone the same rotation
     * and translation, so the cage moves rigidly and dC = R^T dC' */
    const float root_move[3] = {0.3f, -0.2f, 0.5f}, axis[3] = {0.48f, 0.6f, 0.64f};
    const float axes[BAR_BONES][3] = {{axis[0], axis[1], axis[2]}, {0, 0, 1}};
    const double angles[BAR_BONES] = {40.0 * DEG, 0.0};
    chain_pose(skin, l.rig, angles, axes, root_move);
    rev_ok(dc, &l, skin, dcp);
    worst = 0.0;
    for (uint32_t k = 0; k < l.c; ++k)
        for (int r = 0; r < 3; ++r) {
            double rt = 0.0; /* (R^T dC'_k)_r */
            for (int a = 0; a < 3; ++a) rt += (double)skin[4 * a + r] * dcp[3 * k + (uint32_t)a];
            worst = fmax(worst, fabs(dc[3 * k + (uint32_t)r] - rt));
        }
    printf("cage_rev rigid pose: max |dC - R^T dC'| = %.3g\n", worst);
    assert_true(worst <= REST_TOL * POSED_OFFSET);
    limb_free(&l);
}

static void test_bent_bar_loop_is_exact(void **state)
{
    (void)state;
    limb l;
    limb_make(&l, BAR_RINGS, BAR_BONES, BAR_LENGTH, BAR_CAGE_RINGS);
    const float axes[BAR_BONES][3] = {{0.48f, 0.6f, 0.64f}, {0, 0, 1}};
    const float still[3] = {0, 0, 0}, moved[3] = {0.4f, 0.1f, -0.3f};
    const struct {
        double root_deg, joint_deg;
        const float *root_move;
        const char *what;
    } poses[] = {{0.0, 60.0, still, "60 degrees"},
                 {0.0, 90.0, still, "90 degrees"},
                 {35.0, 90.0, moved, "90 degrees, root rotated 35 and moved"}};
    for (size_t p = 0; p < sizeof poses / sizeof poses[0]; ++p) {
        float skin[16 * BAR_BONES];
        const double angles[BAR_BONES] = {poses[p].root_deg * DEG, poses[p].joint_deg * DEG};
        chain_pose(skin, l.rig, angles, axes, poses[p].root_move);
        check_loop(&l, skin, 1000 + p, poses[p].what);
    }
    limb_free(&l);
}

/* The public path: ssk_cage_reshape's rig, ssk_cage_pose's matrices, the
 * CPU backend's `method` and ssk_cage_fit (all float) for a random dC' of
 * up to `offset` per coordinate; returns max |C'(C + dC) - C' - dC'|. */
static double public_path_error(ssk_method method, double offset)
{
    limb l;
    limb_make(&l, BAR_RINGS, BAR_BONES, BAR_LENGTH, BAR_CAGE_RINGS);
    const uint32_t c = l.c, nv = l.rig->vertex_count;
    float fcage[3 * MAX_CAGE_VERTICES], edited[3 * MAX_CAGE_VERTICES];
    float fit0[3 * MAX_CAGE_VERTICES], fit1[3 * MAX_CAGE_VERTICES];
    for (uint32_t q = 0; q < 3 * c; ++q) fcage[q] = (float)l.cage[q];
    ssk_cage_mesh mesh = {c, l.nt, fcage, l.tris};
    ssk_cage *cage = NULL;
    ssk_error err = {0};
    if (ssk_cage_create(&cage, l.rig, &mesh, &err) != SSK_OK) fail_msg("%s", err.message);
    const float axes[BAR_BONES][3] = {{0.48f, 0.6f, 0.64f}, {0, 0, 1}}, root_move[3] = {0, 0, 0};
    const double angles[BAR_BONES] = {20.0 * DEG, 75.0 * DEG};
    float skin[16 * BAR_BONES], carried[16 * BAR_BONES];
    chain_pose(skin, l.rig, angles, axes, root_move);
    float *posed = malloc(12u * nv);
    assert_non_null(posed);
    /* C': the rest cage's rig */
    ssk_rig *rig0 = NULL;
    if (ssk_cage_reshape(&rig0, cage, fcage, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(ssk_cage_pose(carried, cage, skin, &err), SSK_OK);
    tu_deform(posed, rig0, method, carried);
    assert_int_equal(ssk_cage_fit(fit0, cage, posed, &err), SSK_OK);
    /* dC for a random dC', on rig0's skin (the rig whose rest cage is C) */
    double dcp[3 * MAX_CAGE_VERTICES], dc[3 * MAX_CAGE_VERTICES];
    uint64_t seed = 77;
    for (uint32_t q = 0; q < 3 * c; ++q) dcp[q] = rand_sym(&seed, offset);
    if (ssk_cage_rev_solve(dc, &l.cb, rig0, carried, dcp, &err) != SSK_OK)
        fail_msg("ssk_cage_rev_solve: %s", err.message);
    for (uint32_t q = 0; q < 3 * c; ++q) edited[q] = (float)(l.cage[q] + dc[q]);
    ssk_rig *rig1 = NULL;
    if (ssk_cage_reshape(&rig1, cage, edited, &err) != SSK_OK) fail_msg("%s", err.message);
    assert_int_equal(ssk_cage_pose(carried, cage, skin, &err), SSK_OK);
    tu_deform(posed, rig1, method, carried);
    assert_int_equal(ssk_cage_fit(fit1, cage, posed, &err), SSK_OK);
    double worst = 0.0;
    for (uint32_t q = 0; q < 3 * c; ++q) worst = fmax(worst, fabs((double)fit1[q] - fit0[q] - dcp[q]));
    ssk_rig_destroy(rig0);
    ssk_rig_destroy(rig1);
    ssk_cage_destroy(cage);
    free(posed);
    limb_free(&l);
    return worst;
}

static void test_bent_bar_public_path(void **state)
{
    (void)state;
    const double diag = cage_diagonal_of_bar();
    const double rel = public_path_error(SSK_METHOD_LBS, POSED_OFFSET) / diag;
    printf("cage_rev public path (LBS, float): |C'(C + dC) - C' - dC'| = %.3g of the diagonal\n",
           rel);
    assert_true(rel <= LOOP_TOL);
}

/* DQS: the LBS matrix is an approximation (bind/cage.h). The miss is
 * first order in dC' (measured: about 0.21 of max |dC'| at this 75-degree
 * bend, the same for dC' of 0.01 and 0.001); DQS_FRACTION bounds it
 * loosely, a guard against a gross error, not a precision claim. */
static void test_dqs_is_approximate(void **state)
{
    (void)state;
    const double err = public_path_error(SSK_METHOD_DQS, DQS_OFFSET);
    printf("cage_rev public path (DQS, max |dC'| <= %.3g): |C'(C + dC) - C' - dC'| = %.3g "
           "(%.3g of max |dC'|)\n",
           DQS_OFFSET, err, err / DQS_OFFSET);
    assert_true(err <= DQS_FRACTION * DQS_OFFSET);
}

/* ------------------------------------------------------------------------ */
/* 88 cage vertices                                                          */
/* ------------------------------------------------------------------------ */

static void test_long_limb_88_vertices(void **state)
{
    (void)state;
    limb *l = malloc(sizeof *l);
    assert_non_null(l);
    limb_make(l, LONG_RINGS, LONG_BONES, LONG_LENGTH, LONG_CAGE_RINGS);
    assert_int_equal(l->c, 88);
    float axes[LONG_BONES][3];
    double angles[LONG_BONES];
    for (uint32_t b = 0; b < LONG_BONES; ++b) {
        axes[b][0] = b % 2 ? 1.0f : 0.0f;
        axes[b][1] = 0.0f;
        axes[b][2] = b % 2 ? 0.0f : 1.0f;
        angles[b] = (b ? LONG_BEND_DEG : 10.0) * DEG;
    }
    const float root_move[3] = {0.2f, 0.0f, 0.1f};
    float skin[16 * LONG_BONES];
    chain_pose(skin, l->rig, angles, (const float(*)[3])axes, root_move);
    check_loop(l, skin, 88, "6-bone limb bent at every joint");
    /* timing of the solve alone */
    double dcp[3 * MAX_CAGE_VERTICES], dc[3 * MAX_CAGE_VERTICES];
    uint64_t seed = 5;
    for (uint32_t q = 0; q < 3 * l->c; ++q) dcp[q] = rand_sym(&seed, POSED_OFFSET);
    double best = INFINITY;
    for (int run = 0; run < TIMING_RUNS; ++run) {
        const double t0 = ssk_time_seconds();
        rev_ok(dc, l, skin, dcp);
        best = fmin(best, ssk_time_seconds() - t0);
    }
    printf("cage_rev timing: c = %u (a %u by %u system), %u bones, %u mesh vertices: "
           "%.3f ms (best of %d; the paper: 56 ms for Ely)\n",
           l->c, 3 * l->c, 3 * l->c, LONG_BONES, l->rig->vertex_count, best * 1e3, TIMING_RUNS);
    limb_free(l);
    free(l);
}

/* ------------------------------------------------------------------------ */
/* Bad input                                                                 */
/* ------------------------------------------------------------------------ */

static void test_bad_input_is_refused(void **state)
{
    (void)state;
    limb l;
    limb_make(&l, BAR_RINGS, BAR_BONES, BAR_LENGTH, BAR_CAGE_RINGS);
    float skin[16 * BAR_BONES];
    for (uint32_t b = 0; b < BAR_BONES; ++b) tu_mat4_identity(skin + 16 * b);
    double dcp[3 * MAX_CAGE_VERTICES] = {0}, dc[3 * MAX_CAGE_VERTICES];
    ssk_error err = {0};
    assert_int_equal(ssk_cage_rev_solve(NULL, &l.cb, l.rig, skin, dcp, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_rev_solve(dc, NULL, l.rig, skin, dcp, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_rev_solve(dc, &l.cb, l.rig, NULL, dcp, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_cage_rev_solve(dc, &l.cb, l.rig, skin, NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    /* a rig of another size */
    ssk_rig *other = tu_make_limb(BAR_RINGS + 1, BAR_SEGMENTS, BAR_BONES, BAR_LENGTH, BAR_RADIUS,
                                  BAR_BLEND, BAR_INFLUENCES);
    assert_int_equal(ssk_cage_rev_solve(dc, &l.cb, other, skin, dcp, &err),
                     SSK_ERROR_BINDING_MISMATCH);
    assert_non_null(strstr(err.message, "vertices"));
    ssk_rig_destroy(other);
    dcp[4] = NAN;
    assert_int_equal(ssk_cage_rev_solve(dc, &l.cb, l.rig, skin, dcp, &err), SSK_ERROR_NONFINITE);
    assert_non_null(strstr(err.message, "cage vertex 1"));
    dcp[4] = 0.0;
    skin[5] = INFINITY;
    assert_int_equal(ssk_cage_rev_solve(dc, &l.cb, l.rig, skin, dcp, &err), SSK_ERROR_NONFINITE);
    /* all rotations zero: the matrix is 0, singular */
    memset(skin, 0, sizeof skin);
    assert_int_equal(ssk_cage_rev_solve(dc, &l.cb, l.rig, skin, dcp, &err), SSK_ERROR_BIND);
    assert_non_null(strstr(err.message, "singular"));
    limb_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rest_pose_gives_the_offset_back),
        cmocka_unit_test(test_bent_bar_loop_is_exact),
        cmocka_unit_test(test_bent_bar_public_path),
        cmocka_unit_test(test_dqs_is_approximate),
        cmocka_unit_test(test_long_limb_88_vertices),
        cmocka_unit_test(test_bad_input_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
