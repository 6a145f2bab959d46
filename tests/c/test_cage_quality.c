/*
 * test_cage_quality.c — Corda et al. 2020 (003_3bdce6713f645d88.txt), Fig. 5,
 * as a test (issue #21): a straight bar whose cage is edited at the elbow,
 * then bent there. With the joints refitted to the edited rest shape
 * (SkelUp, Eq. 13: ssk_cage_reshape, ssk_cage_pose) the bend stays centered
 * in the bar's cross-section; without (the original heads and skinning
 * matrices applied to the edited rest mesh) a one-sided edit pulls the
 * joint off the center of the section.
 *
 * The bar: tu_make_limb (BAR_RINGS rings of BAR_SEGMENTS vertices, capped:
 * closed), 2 bones along +Y, the joint at the middle ring, a blend region
 * around it, 4 influence slots. The cage: CAGE_RINGS square rings around
 * it, by hand (test_cage_bind.c's 12-vertex box cage), the middle ring at
 * the joint's height. Edits (cage_fig5.h), of the middle ring:
 * - isotropic: scaled by ISO_SCALE in X and Z about the bar's axis;
 * - anisotropic: ANISO_SCALE_X in X, ANISO_SCALE_Z in Z;
 * - single handle: one corner moved outward (away from the axis) by
 *   HANDLE_OUTWARD;
 * and of the whole cage about the bar's base (the origin):
 * - isotropic: WHOLE_SCALE;
 * - anisotropic: WHOLE_STRETCH in X, Y, Z.
 * Per edit: ssk_cage_reshape, then for each bend angle (about Z through the
 * joint) the ORIGINAL rig's skinning matrices, carried over with
 * ssk_cage_pose, deform the reshaped rig with LBS (an ssk_deformer). The
 * posed joint is the reshaped rig's bone 1 head moved by its carried
 * skinning matrix; the middle of the bar's cross-section at the bend is
 * the centroid of the posed ring of vertices that were at the joint's
 * height at rest. Asserted: the refitted joint within CENTER_TOL of the
 * centroid for every edit and angle; for the single handle and the
 * whole-cage scalings, the un-refitted joint (the original head moved by
 * the original skinning matrix, the reshaped rest mesh deformed by the
 * original matrices) outside CENTER_TOL and UNREFIT_FACTOR times farther
 * off than the refitted one. The middle ring's scalings are symmetric
 * about the bar's axis and keep the section at the joint's height, so they
 * leave both joints centered (to rounding); the one-sided edit pulls the
 * section sideways and the whole-cage scalings move it along the bar,
 * away from the joint left in place. Prints a table.
 */
#include "testutil.h"
#include "cage_fixture.h"
#include "cage_fig5.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_fig5_joint_stays_centered(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(BAR_RINGS, BAR_SEGMENTS, BAR_BONES, BAR_LENGTH, BAR_RADIUS,
                                BAR_BLEND, BAR_INFLUENCES);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    assert_int_equal(ssk_rig_mesh_count(rig), 1);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    /* the limb's object matrix is the identity: object space is rig space,
     * the deformer's positions are rig-space positions */
    float identity[16];
    tu_mat4_identity(identity);
    assert_memory_equal(mv.object_matrix, identity, sizeof identity);
    uint32_t ring[BAR_SEGMENTS + 1], ring_count = 0;
    for (uint32_t i = 0; i < nv; ++i)
        if (fabs(mv.positions[3 * i + 1] - JOINT_Y) <= RING_HEIGHT_EPS) {
            assert_true(ring_count < BAR_SEGMENTS);
            ring[ring_count++] = i;
        }
    assert_int_equal(ring_count, BAR_SEGMENTS);
    ssk_bone_view joint0;
    assert_int_equal(ssk_rig_bone(rig, JOINT_BONE, &joint0, NULL), SSK_OK);
    assert_true(fabs(joint0.head[1] - JOINT_Y) <= RING_HEIGHT_EPS);

    float cage_v[3 * CAGE_VERTICES], edited[3 * CAGE_VERTICES];
    uint32_t cage_t[3 * CAGE_TRIANGLES];
    bar_cage(cage_v, cage_t);
    const ssk_cage_mesh cage_mesh = {CAGE_VERTICES, CAGE_TRIANGLES, cage_v, cage_t};
    ssk_cage *cage = NULL;
    ssk_error err = {0};
    if (ssk_cage_create(&cage, rig, &cage_mesh, &err) != SSK_OK) fail_msg("%s", err.message);

    float *posed = malloc(3 * (size_t)nv * sizeof(float));
    float skin[16 * BAR_BONES], carried[16 * BAR_BONES];
    assert_non_null(posed);
    printf("\nCorda et al. 2020 Fig. 5: the bent joint against the center of the bar's section "
           "(bar width %.2f; %% of it)\n", BAR_WIDTH);
    printf("| cage edit | bend | refitted joint off center | un-refitted joint off center |\n"
           "|---|---:|---:|---:|\n");
    for (int e = 0; e < EDIT_COUNT; ++e) {
        edit_cage(edited, cage_v, (edit_kind)e);
        ssk_rig *reshaped = NULL;
        if (ssk_cage_reshape(&reshaped, cage, edited, &err) != SSK_OK) fail_msg("%s", err.message);
        ssk_bone_view joint1;
        assert_int_equal(ssk_rig_bone(reshaped, JOINT_BONE, &joint1, NULL), SSK_OK);
        for (size_t k = 0; k < BEND_COUNT; ++k) {
            bend_pose(skin, joint0.head, BEND_DEGREES[k] * TEST_PI / 180.0);
            /* refitted (SkelUp): the carried matrices on the reshaped rig */
            if (ssk_cage_pose(carried, cage, skin, &err) != SSK_OK) fail_msg("%s", err.message);
            tu_deform(posed, reshaped, SSK_METHOD_LBS, carried);
            double joint[3];
            transform_point(joint, carried + 16 * JOINT_BONE, joint1.head);
            const double refit = off_center(joint, posed, ring, ring_count);
            /* un-refitted: the original heads and matrices, the reshaped
             * rest mesh */
            tu_deform(posed, reshaped, SSK_METHOD_LBS, skin);
            transform_point(joint, skin + 16 * JOINT_BONE, joint0.head);
            const double fixed = off_center(joint, posed, ring, ring_count);
            printf("| %s | %.0f deg | %.2e (%.3f%%) | %.2e (%.3f%%) |\n", EDIT_NAMES[e],
                   BEND_DEGREES[k], refit, 100.0 * refit / BAR_WIDTH, fixed,
                   100.0 * fixed / BAR_WIDTH);
            assert_true(refit <= CENTER_TOL);
            if (e >= EDIT_SINGLE_HANDLE) {
                assert_true(fixed > CENTER_TOL);
                assert_true(fixed > UNREFIT_FACTOR * refit);
            }
        }
        ssk_rig_destroy(reshaped);
    }
    free(posed);
    ssk_cage_destroy(cage);
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fig5_joint_stays_centered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
