/*
 * test_attach.c — the attachment skinning kernels (Toothman 2020, 4.1 and
 * 5.1): ssk_attach_prepare, rigid, IRS (Eq. 14-18, Fig. 13) and radial
 * deformations, against analytic results. Bindings are made by hand for
 * limbs along +Y (quality.h: bone = floor(y), t = frac(y), s = (x, 0, z)).
 */
#include "testutil.h"
#include "quality.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI_D 3.14159265358979323846
/* Float32 tolerance for analytic comparisons on unit-sized geometry. */
#define TOL 2e-6
#define ANGLE_TOL 1e-5 /* radians */

static const float X_AXIS[3] = {1, 0, 0}, Y_AXIS[3] = {0, 1, 0}, Z_AXIS[3] = {0, 0, 1};
static const float ORIGIN[3] = {0, 0, 0};
static const float JOINT[3] = {0, 1, 0}; /* joint of the 2-bone limbs */

/* A 2-bone limb of length 2 (bones [0,1] and [1,2] on Y), few vertices. */
static ssk_rig *two_bone_limb(void) { return tu_make_limb(5, 6, 2, 2.0f, 0.2f, 0.5f, 2); }

static void identity_pose(float *skin, uint32_t nb)
{
    for (uint32_t b = 0; b < nb; ++b) tu_mat4_identity(skin + 16 * b);
}

static void prepare(ssk_attach_bone *dst, const ssk_rig *rig, const float *skin,
                    const float *influences)
{
    ssk_error err = {0};
    ssk_status st = ssk_attach_prepare(dst, rig, skin, influences, &err);
    if (st != SSK_OK) fail_msg("ssk_attach_prepare: %s", err.message);
}

static void xform(double out[3], const float m[16], const double p[3])
{
    for (int r = 0; r < 3; ++r)
        out[r] = m[4 * r] * p[0] + m[4 * r + 1] * p[1] + m[4 * r + 2] * p[2] + m[4 * r + 3];
}

static void assert_near3(const float *got, const double *want, double tol)
{
    for (int k = 0; k < 3; ++k)
        if (!(fabs(got[k] - want[k]) <= tol))
            fail_msg("got (%.7f, %.7f, %.7f), want (%.7f, %.7f, %.7f)", got[0], got[1], got[2],
                     want[0], want[1], want[2]);
}

/* The rig's rest positions and their limb binding. */
static q_binding rig_binding(const ssk_rig *rig, const float **pos, uint32_t *nv)
{
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    *pos = mv.positions;
    *nv = mv.vertex_count;
    return q_limb_binding(mv.positions, mv.vertex_count, ssk_rig_bone_count(rig), 1.0f);
}

/* ---------------------------------------------------------------------- */

static void test_prepare_bend(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    /* Parent turned by R0 about the origin, child bent 90 degrees about its
     * local Z at the joint: S1 = S0 · Rz(90°, J). */
    const float axis0[3] = {0.6f, 0.0f, 0.8f};
    float skin[32], bend[16];
    tu_mat4_rotation(skin, axis0, 0.7f, ORIGIN);
    skin[3] = 0.5f; /* and a translation */
    tu_mat4_rotation(bend, Z_AXIS, (float)(PI_D / 2), JOINT);
    tu_mat4_mul(skin + 16, skin, bend);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);

    assert_int_equal(ab[0].parent, -1);
    assert_int_equal(ab[1].parent, 0);
    assert_int_equal(ab[0].tail_child, 1);
    assert_int_equal(ab[1].tail_child, -1);
    assert_true(ab[0].influence[0] == 0.5f && ab[0].influence[1] == 0.5f);
    /* Heads and tails: S0·(0,0,0), S0·(0,1,0) (= S1·head of the child),
     * S1·(0,2,0). */
    double want[3], p[3] = {0, 0, 0};
    xform(want, skin, p);
    assert_near3(ab[0].head, want, TOL);
    p[1] = 1;
    xform(want, skin, p);
    assert_near3(ab[0].tail, want, TOL);
    assert_near3(ab[1].head, want, TOL);
    p[1] = 2;
    xform(want, skin + 16, p);
    assert_near3(ab[1].tail, want, TOL);
    /* Rotation of bone 0: angle 0.7 about axis0 -> (cos .35, sin .35 axis). */
    const double qw = cos(0.35), qs = sin(0.35);
    const double sign = ab[0].rotation[0] < 0 ? -1 : 1;
    assert_true(fabs(sign * ab[0].rotation[0] - qw) < TOL);
    assert_true(fabs(sign * ab[0].rotation[1] - qs * 0.6) < TOL);
    assert_true(fabs(sign * ab[0].rotation[2]) < TOL);
    assert_true(fabs(sign * ab[0].rotation[3] - qs * 0.8) < TOL);
    /* The joint: 90° about the parent's rotated Z axis, R0·(0,0,1). */
    double z_world[3];
    const double zl[3] = {0, 0, 1};
    float r0[16];
    tu_mat4_rotation(r0, axis0, 0.7f, ORIGIN);
    xform(z_world, r0, zl);
    assert_true(fabs(ab[1].head_joint[3] - PI_D / 2) < ANGLE_TOL);
    assert_near3(ab[1].head_joint, z_world, 1e-5);
    for (int k = 0; k < 4; ++k) assert_true(ab[0].tail_joint[k] == ab[1].head_joint[k]);
    /* No rotation: root head joint and leaf tail joint are angle 0 about X. */
    assert_true(ab[0].head_joint[3] == 0.0f && ab[0].head_joint[0] == 1.0f);
    assert_true(ab[1].tail_joint[3] == 0.0f && ab[1].tail_joint[0] == 1.0f);

    /* Given influences are stored as they are. */
    const float infl[4] = {0.3f, 1.0f, 1.0f, 0.25f};
    prepare(ab, rig, skin, infl);
    assert_true(ab[0].influence[0] == 0.3f && ab[0].influence[1] == 1.0f);
    assert_true(ab[1].influence[0] == 1.0f && ab[1].influence[1] == 0.25f);
    ssk_rig_destroy(rig);
}

static void test_prepare_twist_180_angle_pi(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Y_AXIS, (float)PI_D, JOINT);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    assert_true(fabs(ab[1].head_joint[3] - PI_D) < ANGLE_TOL);
    assert_true(fabs(fabs(ab[1].head_joint[1]) - 1.0) < TOL);
    ssk_rig_destroy(rig);
}

/* The tail child is the first child whose head is at the tail; a child
 * elsewhere is not one, and a leaf's tail is S·tail. */
static void test_prepare_tail_child_choice(void **state)
{
    (void)state;
    const int32_t parents[4] = {-1, 0, 0, 0};
    const float heads[12] = {0, 0, 0, 0.5f, 0.5f, 0, 0, 1, 0, 0, 1, 0};
    const float tails[12] = {0, 1, 0, 1.5f, 0.5f, 0, 0, 2, 0, 1, 1, 0};
    float bind[64];
    for (int b = 0; b < 4; ++b) tu_mat4_translation(bind + 16 * b, heads[3 * b], heads[3 * b + 1], 0);
    const float pos[3] = {0, 0.5f, 0};
    ssk_skeleton_desc sk = {4, NULL, parents, bind, heads, tails};
    ssk_mesh_desc md = {"p", 1, pos, 0, NULL, 0, NULL, NULL, NULL};
    ssk_rig *rig = NULL;
    assert_int_equal(ssk_rig_create(&rig, &sk, &md, 1, NULL), SSK_OK);
    float skin[64];
    identity_pose(skin, 4);
    tu_mat4_translation(skin + 32, 0, 0.5f, 0); /* bone 2 moved up: stretch */
    tu_mat4_translation(skin + 16, 3, 0, 0);
    ssk_attach_bone ab[4];
    prepare(ab, rig, skin, NULL);
    assert_int_equal(ab[0].tail_child, 2);
    const double want0[3] = {0, 1.5, 0}, want1[3] = {4.5, 0.5, 0};
    assert_near3(ab[0].tail, want0, TOL);
    assert_near3(ab[1].tail, want1, TOL);
    ssk_rig_destroy(rig);
}

static void test_prepare_errors(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    float skin[32];
    identity_pose(skin, 2);
    ssk_attach_bone ab[2];
    ssk_error err = {0};
    float infl[4] = {0.5f, 0.5f, 0.0f, 0.5f};
    assert_int_equal(ssk_attach_prepare(ab, rig, skin, infl, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "bone 1"));
    infl[2] = 0.5f;
    infl[1] = 1.5f;
    assert_int_equal(ssk_attach_prepare(ab, rig, skin, infl, &err), SSK_ERROR_INVALID_ARGUMENT);
    infl[1] = NAN;
    assert_int_equal(ssk_attach_prepare(ab, rig, skin, infl, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_attach_prepare(NULL, rig, skin, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_attach_prepare(ab, rig, NULL, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    skin[16 + 5] = INFINITY;
    assert_int_equal(ssk_attach_prepare(ab, rig, skin, NULL, &err), SSK_ERROR_NONFINITE);
    /* A bone scaled to zero has no rotation. */
    identity_pose(skin, 2);
    skin[16] = skin[21] = skin[26] = 0.0f;
    assert_int_equal(ssk_attach_prepare(ab, rig, skin, NULL, &err), SSK_ERROR_NONFINITE);
    assert_non_null(strstr(err.message, "bone 1"));
    ssk_rig_destroy(rig);
}

/* ---------------------------------------------------------------------- */

/* One bone moved rigidly: rigid and IRS (with and without length
 * adjustment) give exactly S·v (no joint rotates). */
static void test_one_bone_rigid_transform_is_exact(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(6, 8, 1, 1.0f, 0.2f, 0.5f, 2);
    const float *pos;
    uint32_t nv;
    q_binding bd = rig_binding(rig, &pos, &nv);
    const float axis[3] = {0.48f, 0.6f, 0.64f};
    float rot[16], tr[16], skin[16];
    tu_mat4_rotation(rot, axis, 1.1f, JOINT);
    tu_mat4_translation(tr, 0.5f, -2.0f, 3.0f);
    tu_mat4_mul(skin, tr, rot);
    ssk_attach_bone ab[1];
    prepare(ab, rig, skin, NULL);
    float *out = malloc(3 * nv * sizeof(float));
    for (int method = 0; method < 3; ++method) {
        if (method == 0) ssk_rigid_deform(out, nv, bd.bones, bd.t, bd.s, ab);
        else ssk_irs_deform(out, nv, bd.bones, bd.t, bd.s, ab, method == 2, NULL);
        for (uint32_t v = 0; v < nv; ++v) {
            double want[3], p[3] = {pos[3 * v], pos[3 * v + 1], pos[3 * v + 2]};
            xform(want, skin, p);
            assert_near3(out + 3 * v, want, 4 * TOL);
        }
    }
    free(out);
    q_binding_free(&bd);
    ssk_rig_destroy(rig);
}

/* At rest every kernel gives back the rest positions. */
static void test_rest_pose_is_identity(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(9, 8, 2, 2.0f, 0.2f, 0.5f, 2);
    const float *pos;
    uint32_t nv;
    q_binding bd = rig_binding(rig, &pos, &nv);
    float skin[32];
    identity_pose(skin, 2);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    float *out = malloc(3 * nv * sizeof(float));
    ssk_rigid_deform(out, nv, bd.bones, bd.t, bd.s, ab);
    assert_true(tu_max_abs_diff(out, pos, 3 * nv) < TOL);
    ssk_irs_deform(out, nv, bd.bones, bd.t, bd.s, ab, 1, NULL);
    assert_true(tu_max_abs_diff(out, pos, 3 * nv) < TOL);
    free(out);
    q_binding_free(&bd);
    ssk_rig_destroy(rig);
}

/* The child moved 0.5 along the bone axis: the parent stretches to 1.5 and
 * its attachment points scale along it (t kept); the child translates. */
static void test_bone_stretch_follows_child(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(9, 8, 2, 2.0f, 0.2f, 0.5f, 2);
    const float *pos;
    uint32_t nv;
    q_binding bd = rig_binding(rig, &pos, &nv);
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_translation(skin + 16, 0, 0.5f, 0);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    float *out = malloc(3 * nv * sizeof(float));
    for (int method = 0; method < 2; ++method) {
        if (method == 0) ssk_rigid_deform(out, nv, bd.bones, bd.t, bd.s, ab);
        else ssk_irs_deform(out, nv, bd.bones, bd.t, bd.s, ab, 1, NULL);
        for (uint32_t v = 0; v < nv; ++v) {
            const double t = bd.t[v];
            const double y = bd.bones[v] == 0 ? 1.5 * t : 1.5 + t;
            const double want[3] = {pos[3 * v], y, pos[3 * v + 2]};
            assert_near3(out + 3 * v, want, TOL);
        }
    }
    free(out);
    q_binding_free(&bd);
    ssk_rig_destroy(rig);
}

/* ---------------------------------------------------------------------- */

/* Distance of a point to the posed skeleton of a bend of `angle` about Z at
 * the joint: parent segment (0,0,0)-(0,1,0), child from J along
 * Rz(angle)(0,1,0). */
static double bend_skeleton_distance(const float *v, double angle)
{
    const double p[3] = {v[0], v[1], v[2]};
    const double a0[3] = {0, 0, 0}, j[3] = {0, 1, 0};
    const double c1[3] = {-sin(angle), 1 + cos(angle), 0};
    const double d0 = q_segment_distance(p, a0, j), d1 = q_segment_distance(p, j, c1);
    return d0 < d1 ? d0 : d1;
}

/* Ring of n scale vectors of radius r in the XZ plane. */
static void ring_vectors(float *s, int n, float r)
{
    for (int i = 0; i < n; ++i) {
        const double a = 2 * PI_D * (i + 0.25) / n;
        s[3 * i] = (float)(r * cos(a));
        s[3 * i + 1] = 0;
        s[3 * i + 2] = (float)(r * sin(a));
    }
}

/* 90° bend of the child about Z at the joint: the parent's ring at t = 1
 * turns by +45° toward the child, the child's ring at t = 0 turns back by
 * 45° from its rigid 90°: both land on J + Rz(45°) s. */
static void test_irs_bend_90_sides_meet_at_half_rotation(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    float skin[32], half[16];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z_AXIS, (float)(PI_D / 2), JOINT);
    tu_mat4_rotation(half, Z_AXIS, (float)(PI_D / 4), JOINT);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    enum { N = 16 };
    float s[2 * N * 3], t[2 * N], out[2 * N * 3], rigid[2 * N * 3];
    int32_t bones[2 * N];
    ring_vectors(s, N, 0.2f);
    memcpy(s + 3 * N, s, sizeof(float) * 3 * N);
    for (int i = 0; i < N; ++i) {
        bones[i] = 0;
        t[i] = 1.0f;
        bones[N + i] = 1;
        t[N + i] = 0.0f;
    }
    ssk_irs_deform(out, 2 * N, bones, t, s, ab, 0, NULL);
    for (int i = 0; i < N; ++i) {
        double want[3], p[3] = {s[3 * i], 1.0 + s[3 * i + 1], s[3 * i + 2]};
        xform(want, half, p);
        assert_near3(out + 3 * i, want, TOL);
        assert_near3(out + 3 * (N + i), want, TOL);
    }
    /* With length adjustment (Fig. 13) each vertex moves along its rotated
     * scale vector (from a' = J here), toward |s| from the skeleton: the
     * outer half (nearest skeleton point J, |s| away) stays, the inner
     * half moves out; both rings still meet. */
    float raw[2 * N * 3];
    memcpy(raw, out, sizeof raw);
    ssk_irs_deform(out, 2 * N, bones, t, s, ab, 1, NULL);
    int moved = 0;
    for (int i = 0; i < 2 * N; ++i) {
        const float *v = raw + 3 * i, *w = out + 3 * i;
        const double d_raw = bend_skeleton_distance(v, PI_D / 2);
        const double d_adj = bend_skeleton_distance(w, PI_D / 2);
        if (d_raw > 0.2 - 1e-6) {
            assert_true(tu_max_abs_diff(w, v, 3) < TOL);
            continue;
        }
        ++moved;
        /* moved along v - J, outward, closer to |s| than before */
        const double dv[3] = {v[0], v[1] - 1.0, v[2]}, dw[3] = {w[0] - v[0], w[1] - v[1], w[2] - v[2]};
        const double cx = dv[1] * dw[2] - dv[2] * dw[1], cy = dv[2] * dw[0] - dv[0] * dw[2],
                     cz = dv[0] * dw[1] - dv[1] * dw[0];
        assert_true(sqrt(cx * cx + cy * cy + cz * cz) < 1e-5);
        assert_true(dv[0] * dw[0] + dv[1] * dw[1] + dv[2] * dw[2] > 0.0);
        if (!(fabs(d_adj - 0.2) < 0.5 * fabs(d_raw - 0.2)))
            fail_msg("joint vertex %d: distance %g -> %g, want nearer 0.2", i, d_raw, d_adj);
    }
    assert_true(moved >= N / 2); /* the inner halves of both rings */
    assert_true(tu_max_abs_diff(out, out + 3 * N, 3 * N) < TOL);
    /* Rigid skinning leaves the two rings apart (the discontinuity). */
    ssk_rigid_deform(rigid, 2 * N, bones, t, s, ab);
    assert_true(tu_max_abs_diff(rigid, rigid + 3 * N, 3 * N) > 0.1);
    /* Near the joint: parent t = 0.75 (c_w = 0.5) turns by 22.5° about its
     * attachment point (0, 0.75, 0); child t = 0.25 (p_w = 0.5) by
     * 90° - 22.5° about (-0.25, 1, 0). */
    for (int i = 0; i < N; ++i) {
        t[i] = 0.75f;
        t[N + i] = 0.25f;
    }
    ssk_irs_deform(out, 2 * N, bones, t, s, ab, 0, NULL);
    float r1[16], r2[16];
    const float a0[3] = {0, 0.75f, 0}, a1[3] = {-0.25f, 1, 0};
    tu_mat4_rotation(r1, Z_AXIS, (float)(PI_D / 8), a0);
    tu_mat4_rotation(r2, Z_AXIS, (float)(3 * PI_D / 8), a1);
    for (int i = 0; i < N; ++i) {
        double want[3], p[3] = {s[3 * i], 0.75, s[3 * i + 2]};
        xform(want, r1, p);
        assert_near3(out + 3 * i, want, TOL);
        const double q[3] = {s[3 * i] - 0.25, 1.0, s[3 * i + 2]};
        xform(want, r2, q);
        assert_near3(out + 3 * (N + i), want, TOL);
    }
    ssk_rig_destroy(rig);
}

/* The same meeting in a general pose: the parent turned and moved, the
 * child bent 70° about its local X. Both joint rings land on
 * S0 · (J + Rx(35°) s): the relative rotation is taken in rig space. */
static void test_irs_general_pose_sides_meet(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    const float axis0[3] = {0.70710678f, 0.70710678f, 0.0f};
    float skin[32], bend[16], half[16], want_m[16];
    tu_mat4_rotation(skin, axis0, 0.6f, ORIGIN);
    skin[3] = -0.3f;
    skin[11] = 0.8f;
    tu_mat4_rotation(bend, X_AXIS, (float)(70 * PI_D / 180), JOINT);
    tu_mat4_mul(skin + 16, skin, bend);
    tu_mat4_rotation(half, X_AXIS, (float)(35 * PI_D / 180), JOINT);
    tu_mat4_mul(want_m, skin, half);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    enum { N = 12 };
    float s[2 * N * 3], t[2 * N], out[2 * N * 3];
    int32_t bones[2 * N];
    ring_vectors(s, N, 0.25f);
    memcpy(s + 3 * N, s, sizeof(float) * 3 * N);
    for (int i = 0; i < N; ++i) {
        bones[i] = 0;
        t[i] = 1.0f;
        bones[N + i] = 1;
        t[N + i] = 0.0f;
    }
    ssk_irs_deform(out, 2 * N, bones, t, s, ab, 0, NULL);
    for (int i = 0; i < N; ++i) {
        double want[3], p[3] = {s[3 * i], 1.0, s[3 * i + 2]};
        xform(want, want_m, p);
        assert_near3(out + 3 * i, want, 4 * TOL);
        assert_near3(out + 3 * (N + i), want, 4 * TOL);
    }
    ssk_rig_destroy(rig);
}

/* p_i = c_i = 0.5: vertices at mid-bone (t = 0.5) are rigid. */
static void test_irs_mid_bone_is_rigid(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z_AXIS, (float)(PI_D / 2), JOINT);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    enum { N = 16 };
    float s[2 * N * 3], t[2 * N], out[2 * N * 3], rigid[2 * N * 3];
    int32_t bones[2 * N];
    ring_vectors(s, N, 0.2f);
    memcpy(s + 3 * N, s, sizeof(float) * 3 * N);
    for (int i = 0; i < 2 * N; ++i) {
        bones[i] = i < N ? 0 : 1;
        t[i] = 0.5f;
    }
    ssk_rigid_deform(rigid, 2 * N, bones, t, s, ab);
    ssk_irs_deform(out, 2 * N, bones, t, s, ab, 0, NULL);
    assert_true(tu_max_abs_diff(out, rigid, 6 * N) < TOL);
    ssk_irs_deform(out, 2 * N, bones, t, s, ab, 1, NULL);
    assert_true(tu_max_abs_diff(out, rigid, 6 * N) < TOL);
    /* A bit off the middle, the child is not rigid any more. */
    for (int i = N; i < 2 * N; ++i) t[i] = 0.4f;
    ssk_rigid_deform(rigid, 2 * N, bones, t, s, ab);
    ssk_irs_deform(out, 2 * N, bones, t, s, ab, 0, NULL);
    assert_true(tu_max_abs_diff(out + 3 * N, rigid + 3 * N, 3 * N) > 0.01);
    ssk_rig_destroy(rig);
}

/* Angle of the posed scale vector about Z, for s = (r, 0, 0) in a bend
 * about Z (positions in the XY plane). */
static double angle_about_z(const float *v, double ax, double ay)
{
    return atan2(v[1] - ay, v[0] - ax);
}

/* Expected angle of an Eq. 17 blend of identity (weight pw) and Rot(phi)
 * (weight cw) about one axis, as a normalized quaternion blend. */
static double blend_angle(double pw, double cw, double phi)
{
    const double a = pw / (pw + cw), b = cw / (pw + cw);
    return 2 * atan2(b * sin(phi / 2), a + b * cos(phi / 2));
}

/* Eq. 14 weights at t = 0, 0.25, 0.5, 0.75, 1 through the turned angle of
 * s in a 90° bend: parent (p_i, c_i) = (0.5, 0.2), child (0.8, 1). */
static void test_irs_eq14_weights(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z_AXIS, (float)(PI_D / 2), JOINT);
    const float infl[4] = {0.5f, 0.2f, 0.8f, 1.0f};
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, infl);
    const float ts[5] = {0, 0.25f, 0.5f, 0.75f, 1};
    float s[30], t[10], out[30];
    int32_t bones[10];
    for (int i = 0; i < 10; ++i) {
        bones[i] = i < 5 ? 0 : 1;
        t[i] = ts[i % 5];
        s[3 * i] = 0.2f;
        s[3 * i + 1] = s[3 * i + 2] = 0;
    }
    ssk_irs_deform(out, 10, bones, t, s, ab, 0, NULL);
    const double q = PI_D / 4; /* half the joint's 90° */
    /* parent: p_w = 1, .5, 0, 0, 0 (its head joint is a root: no rotation,
     * but the weight still blends); c_w = 0, .0625, .375, .6875, 1. */
    const double parent_want[5] = {0, blend_angle(0.5, 0.0625, 0.0625 * q), 0.375 * q,
                                   0.6875 * q, q};
    /* child: p_w = 1, .6875, .375, .0625, 0; c_i = 1 -> c_w = 0. */
    const double child_pw[5] = {1, 0.6875, 0.375, 0.0625, 0};
    for (int i = 0; i < 5; ++i) {
        const double got = angle_about_z(out + 3 * i, 0, ts[i]);
        if (fabs(got - parent_want[i]) > ANGLE_TOL)
            fail_msg("parent t=%g: angle %.7f, want %.7f", ts[i], got, parent_want[i]);
        const double gotc = angle_about_z(out + 3 * (5 + i), -ts[i], 1);
        const double wantc = PI_D / 2 - child_pw[i] * q;
        if (fabs(gotc - wantc) > ANGLE_TOL)
            fail_msg("child t=%g: angle %.7f, want %.7f", ts[i], gotc, wantc);
    }
    ssk_rig_destroy(rig);
}

/* Fig. 13: at a 120° bend, rotated scale vectors near the joint end up
 * closer to the skeleton than |s|; length adjustment moves each vertex
 * along its rotated scale vector back to (nearly: two fixed-point steps)
 * |s| from the skeleton; given rest distances, the rest pose is exact. */
static void test_irs_length_adjust_restores_distance(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    const double angle = 120 * PI_D / 180;
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z_AXIS, (float)angle, JOINT);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    /* Outer side of the bend (+X on the parent, the child bends to -X). */
    const float r = 0.2f;
    float s[9] = {r, 0, 0, r, 0, 0, r * 0.8f, 0, r * 0.6f}, t[3] = {0.9f, 0.1f, 0.9f};
    int32_t bones[3] = {0, 1, 0};
    float raw[9], adj[9];
    ssk_irs_deform(raw, 3, bones, t, s, ab, 0, NULL);
    ssk_irs_deform(adj, 3, bones, t, s, ab, 1, NULL);
    for (int i = 0; i < 3; ++i) {
        const double d_raw = bend_skeleton_distance(raw + 3 * i, angle);
        const double d_adj = bend_skeleton_distance(adj + 3 * i, angle);
        if (!(d_raw < 0.9 * r)) fail_msg("vertex %d: raw distance %g not shrunk", i, d_raw);
        if (!(fabs(d_adj - r) < 0.05 * r))
            fail_msg("vertex %d: adjusted distance %g, want %g", i, d_adj, (double)r);
    }
    /* Vertex 0 (bone 0 at t = 0.9: a' = (0, 0.9, 0)) moved along raw - a'. */
    const double ux = raw[0], uy = raw[1] - 0.9, vx = adj[0] - raw[0], vy = adj[1] - raw[1];
    assert_true(fabs(ux * vy - uy * vx) < 1e-6 && ux * vx + uy * vy > 0);
    assert_true(fabs(raw[2]) < TOL && fabs(adj[2]) < TOL);
    /* Rest pose with rest distances: exact, even for a scale vector that
     * is longer than the distance to the skeleton (a smoothed binding). */
    float identity[32], rest_d[3], rest_out[9];
    tu_mat4_identity(identity);
    tu_mat4_identity(identity + 16);
    prepare(ab, rig, identity, NULL);
    s[1] = 0.05f; /* tilted along the bone: |s| > distance to the bone */
    ssk_irs_rest_distances(rest_d, 3, bones, t, s, ab);
    ssk_irs_deform(rest_out, 3, bones, t, s, ab, 1, rest_d);
    for (int i = 0; i < 3; ++i) {
        float a[3] = {0, bones[i] + t[i], 0};
        for (int c = 0; c < 3; ++c) assert_true(fabs(rest_out[3 * i + c] - (a[c] + s[3 * i + c])) < TOL);
    }
    ssk_rig_destroy(rig);
}

/* ---------------------------------------------------------------------- */

static void test_radial_profiles(void **state)
{
    (void)state;
    /* f at t = 0, 0.25, 0.5, 1, from the formulas in the header. */
    const double want[SSK_RADIAL_PROFILE_COUNT][4] = {
        {1.0, 1.1875, 1.25, 1.0},           /* bulge -(0.5 - t)^2 + 1.25 */
        {0.0, 0.25, 0.5, 1.0},              /* linear */
        {0.0, 0.0625, 0.25, 1.0},           /* quad_in */
        {0.0, 0.4375, 0.75, 1.0},           /* quad_out */
        {0.0, 0.015625, 0.125, 1.0},        /* cubic_in */
        {0.0, 0.578125, 0.875, 1.0},        /* cubic_out */
        {0.0, 0.00390625, 0.0625, 1.0},     /* quartic_in */
        {0.0, 0.68359375, 0.9375, 1.0},     /* quartic_out */
        {0.0, 0.14644660940672624, 0.5, 1.0}, /* sine_in_out */
    };
    const float ts[4] = {0, 0.25f, 0.5f, 1};
    const char *names[SSK_RADIAL_PROFILE_COUNT] = {"bulge",     "linear",     "quad_in",
                                                   "quad_out",  "cubic_in",   "cubic_out",
                                                   "quartic_in", "quartic_out", "sine_in_out"};
    for (int p = 0; p < SSK_RADIAL_PROFILE_COUNT; ++p) {
        for (int i = 0; i < 4; ++i) {
            const double got = ssk_radial_profile_eval((ssk_radial_profile)p, ts[i]);
            if (fabs(got - want[p][i]) > 1e-6)
                fail_msg("%s(%g) = %.8f, want %.8f", names[p], ts[i], got, want[p][i]);
        }
        /* t is clamped. */
        assert_true(ssk_radial_profile_eval((ssk_radial_profile)p, -1.0f) == (float)want[p][0]);
        assert_true(ssk_radial_profile_eval((ssk_radial_profile)p, 2.0f) == (float)want[p][3]);
        assert_string_equal(ssk_radial_profile_name((ssk_radial_profile)p), names[p]);
        ssk_radial_profile parsed = SSK_RADIAL_PROFILE_COUNT;
        assert_int_equal(ssk_radial_profile_parse(&parsed, names[p], NULL), SSK_OK);
        assert_int_equal(parsed, p);
    }
    assert_null(ssk_radial_profile_name(SSK_RADIAL_PROFILE_COUNT));
    ssk_error err = {0};
    ssk_radial_profile parsed;
    assert_int_equal(ssk_radial_profile_parse(&parsed, "Bulge", &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "'Bulge'"));
    assert_non_null(strstr(err.message, "quartic_out"));
    assert_int_equal(ssk_radial_profile_parse(&parsed, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
}

/* Points on a straight 2-bone limb at rest, ring radius r at t = 0, 0.5, 1
 * on bone 0 and t = 0.5 on bone 1. */
static void radial_points(float *pos, int32_t *bones, float *t, float r)
{
    const float ts[4] = {0.0f, 0.5f, 1.0f, 0.5f};
    for (int i = 0; i < 4; ++i) {
        bones[i] = i < 3 ? 0 : 1;
        t[i] = ts[i];
        pos[3 * i] = r;
        pos[3 * i + 1] = (float)bones[i] + ts[i];
        pos[3 * i + 2] = 0;
    }
}

static void test_radial_bulge_straight_bone(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    float skin[32];
    identity_pose(skin, 2);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    float pos[12], out[12], t[4];
    int32_t bones[4];
    radial_points(pos, bones, t, 0.2f);
    uint8_t mask[2] = {1, 0};
    ssk_radial_deform(out, pos, 4, bones, t, ab, mask, SSK_RADIAL_BULGE, 1.0f);
    assert_true(out[0] == pos[0] && out[1] == pos[1]);  /* t = 0: x 1 */
    assert_true(fabs(out[3] - 0.25) < 1e-7);            /* t = 0.5: x 1.25 */
    assert_true(out[4] == pos[4] && out[5] == 0.0f);
    assert_true(fabs(out[6] - 0.2) < 1e-7);             /* t = 1: x 1 */
    assert_memory_equal(out + 9, pos + 9, 3 * sizeof(float)); /* bone 1 unselected */
    /* amount 0: unchanged bit for bit; amount 0.5: 1 + 0.5 (1.25 - 1). */
    ssk_radial_deform(out, pos, 4, bones, t, ab, mask, SSK_RADIAL_BULGE, 0.0f);
    assert_memory_equal(out, pos, sizeof pos);
    ssk_radial_deform(out, pos, 4, bones, t, ab, mask, SSK_RADIAL_BULGE, 0.5f);
    assert_true(fabs(out[3] - 0.2 * 1.125) < 1e-7);
    /* Easing: m = 1 + amount f(t); linear at t = 1, amount 0.5: 1.5. */
    ssk_radial_deform(out, pos, 4, bones, t, ab, mask, SSK_RADIAL_LINEAR, 0.5f);
    assert_true(out[0] == pos[0]);
    assert_true(fabs(out[3] - 0.2 * 1.25) < 1e-7);
    assert_true(fabs(out[6] - 0.2 * 1.5) < 1e-7);
    /* Nothing selected: unchanged. */
    const uint8_t none[2] = {0, 0};
    ssk_radial_deform(out, pos, 4, bones, t, ab, none, SSK_RADIAL_CUBIC_OUT, 2.0f);
    assert_memory_equal(out, pos, sizeof pos);
    /* dst == src gives what separate buffers give. */
    float sep[12], inplace[12];
    mask[1] = 1;
    ssk_radial_deform(sep, pos, 4, bones, t, ab, mask, SSK_RADIAL_QUARTIC_OUT, 0.7f);
    memcpy(inplace, pos, sizeof pos);
    ssk_radial_deform(inplace, inplace, 4, bones, t, ab, mask, SSK_RADIAL_QUARTIC_OUT, 0.7f);
    assert_memory_equal(inplace, sep, sizeof sep);
    assert_true(fabs(sep[9] - 0.2 * (1 + 0.7 * 0.9375)) < 1e-6);
    ssk_rig_destroy(rig);
}

/* On a posed bone the scale is taken about the posed attachment point: a
 * rigid result on the bent child, bulged at t = 0.5, is 1.25 |s| from
 * a' = (-0.5, 1, 0). */
static void test_radial_about_posed_attachment(void **state)
{
    (void)state;
    ssk_rig *rig = two_bone_limb();
    float skin[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z_AXIS, (float)(PI_D / 2), JOINT);
    ssk_attach_bone ab[2];
    prepare(ab, rig, skin, NULL);
    float s[6] = {0.2f, 0, 0, 0, 0, 0.2f}, t[2] = {0.5f, 0.5f}, out[6];
    int32_t bones[2] = {1, 1};
    ssk_rigid_deform(out, 2, bones, t, s, ab);
    const uint8_t mask[2] = {0, 1};
    ssk_radial_deform(out, out, 2, bones, t, ab, mask, SSK_RADIAL_BULGE, 1.0f);
    const double want0[3] = {-0.5, 1.25, 0}, want1[3] = {-0.5, 1, 0.25};
    assert_near3(out, want0, TOL);
    assert_near3(out + 3, want1, TOL);
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prepare_bend),
        cmocka_unit_test(test_prepare_twist_180_angle_pi),
        cmocka_unit_test(test_prepare_tail_child_choice),
        cmocka_unit_test(test_prepare_errors),
        cmocka_unit_test(test_one_bone_rigid_transform_is_exact),
        cmocka_unit_test(test_rest_pose_is_identity),
        cmocka_unit_test(test_bone_stretch_follows_child),
        cmocka_unit_test(test_irs_bend_90_sides_meet_at_half_rotation),
        cmocka_unit_test(test_irs_general_pose_sides_meet),
        cmocka_unit_test(test_irs_mid_bone_is_rigid),
        cmocka_unit_test(test_irs_eq14_weights),
        cmocka_unit_test(test_irs_length_adjust_restores_distance),
        cmocka_unit_test(test_radial_profiles),
        cmocka_unit_test(test_radial_bulge_straight_bone),
        cmocka_unit_test(test_radial_about_posed_attachment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
