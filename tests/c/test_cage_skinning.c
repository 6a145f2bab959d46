/* test_cage_skinning.c — the skinning matrices of a skeleton whose rest
 * joints moved (Corda et al. 2020, 4.2 "Skeleton joints refitting";
 * issue #21; core/bind/cage_skinning.c, ssk_cage_skinning):
 * - (a) unmoved heads give the input matrices back, for random poses of
 *   small chains and trees and for BCN_Epileptic.X's animation frames;
 * - (b) a skeleton scaled by 1.5 about its root head: every posed new head
 *   is the root's posed head + 1.5 x (posed original head - root's), and
 *   every bone's linear part is unchanged;
 * - (c) rigid poses with random new heads: h'_b - h'_p = R_p (a'_b - a'_p);
 * - (d) a bone with an animated translation off its parent's frame keeps
 *   it: h'_b - h'_p - R_p (a'_b - a'_p) = h_b - h_p - R_p (a_b - a_p);
 *   the same identity on BCN_Epileptic.X's frames with moved heads;
 * - (e) parents with higher indices than their children: the same result
 *   as the index-ordered rig, bone for bone;
 * - LBS of a 2-bone limb whose lower bone was lengthened (rest vertices
 *   moved by their bones' head displacements) with the new matrices bends
 *   at the new joint; with the original matrices it does not.
 * Notation as in cage_skinning.c: S_b skinning, R_b its 3x3 part, a_b rest
 * heads, a'_b new rest heads, h_b = S_b a_b, h'_b = S'_b a'_b. */
#include "testutil.h"

#include "bind/cage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (a) unmoved heads: the input within this relative difference. */
#define IDENTITY_REL_TOL 1e-6
/* Posed-head identities with float matrices: this times the scene's extent
 * (float rounding of coordinates of that size, a few operations deep). */
#define HEAD_REL_TOL 1e-5
/* The LBS limb: vertex positions against the analytic bend. */
#define LIMB_TOL 1e-5
/* Random poses per rig shape. */
#define RANDOM_POSES 20
/* (b) the uniform scale about the root head. */
#define SKELETON_SCALE 1.5
/* (d) the animated translation's size (rig units; bones are ~1 long). */
#define EXTRA_TRANSLATION 0.4
/* Random new heads move by up to this in each coordinate. */
#define HEAD_JITTER 0.3
/* Random root translations up to this in each coordinate. */
#define ROOT_TRANSLATION 2.0
/* BCN_Epileptic.X: frames tried, and the head jitter as a fraction of the
 * rest heads' bounding-box diagonal. */
#define BCN_FRAMES 8
#define BCN_FPS 24.0
#define BCN_JITTER_FRACTION 0.05
#define MAX_BONES 8
#define PI_D 3.14159265358979323846

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

/* Deterministic uniform in [0, 1) (64-bit LCG, Knuth's MMIX constants). */
static double rand01(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) * (1.0 / 9007199254740992.0);
}

static double rand_sym(uint64_t *state, double half_width)
{
    return half_width * (2.0 * rand01(state) - 1.0);
}

static void rand_unit(float v[3], uint64_t *state)
{
    double x, y, z, n;
    do {
        x = rand_sym(state, 1.0);
        y = rand_sym(state, 1.0);
        z = rand_sym(state, 1.0);
        n = sqrt(x * x + y * y + z * z);
    } while (n < 0.1 || n > 1.0);
    v[0] = (float)(x / n);
    v[1] = (float)(y / n);
    v[2] = (float)(z / n);
}

/* p' = M p in double, M row-major 4x4 (float). */
static void transform(double out[3], const float *m, const double p[3])
{
    for (int r = 0; r < 3; ++r) {
        out[r] = (double)m[4 * r] * p[0] + (double)m[4 * r + 1] * p[1] +
                 (double)m[4 * r + 2] * p[2] + (double)m[4 * r + 3];
    }
}

/* out = R v, R the 3x3 part of row-major m. */
static void linear(double out[3], const float *m, const double v[3])
{
    for (int r = 0; r < 3; ++r) {
        out[r] = (double)m[4 * r] * v[0] + (double)m[4 * r + 1] * v[1] +
                 (double)m[4 * r + 2] * v[2];
    }
}

static void head_of(double out[3], const float *heads, uint32_t b)
{
    for (int k = 0; k < 3; ++k) out[k] = heads[3 * b + (uint32_t)k];
}

static double dist3(const double a[3], const double b[3])
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}

/* max_i |a_i - b_i| / max(1, max_i |b_i|) over #count matrices. */
static double matrices_rel_diff(const float *a, const float *b, uint32_t count)
{
    double worst = 0.0;
    for (uint32_t m = 0; m < count; ++m) {
        double diff = 0.0, size = 1.0;
        for (int i = 0; i < 16; ++i) {
            diff = fmax(diff, fabs((double)a[16 * m + (uint32_t)i] - b[16 * m + (uint32_t)i]));
            size = fmax(size, fabs((double)b[16 * m + (uint32_t)i]));
        }
        worst = fmax(worst, diff / size);
    }
    return worst;
}

/* The rig's rest heads (#B by 3). */
static void rest_heads(float *heads, const ssk_rig *rig)
{
    for (uint32_t b = 0; b < rig->bone_count; ++b) memcpy(heads + 3 * b, rig->bones[b].head, 12);
}

/* A rig of `nb` bones with these parents and rest heads (bind matrices:
 * translations to the heads) and one triangle weighted to bone 0. */
static ssk_rig *make_rig(uint32_t nb, const int32_t *parents, const float *heads)
{
    float bind[16 * MAX_BONES];
    assert_true(nb <= MAX_BONES);
    for (uint32_t b = 0; b < nb; ++b) {
        tu_mat4_translation(bind + 16 * b, heads[3 * b], heads[3 * b + 1], heads[3 * b + 2]);
    }
    const float pos[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    const int32_t tri[3] = {0, 1, 2}, idx[3] = {0, 0, 0};
    const float w[3] = {1, 1, 1};
    ssk_skeleton_desc sk = {nb, NULL, parents, bind, heads, NULL};
    ssk_mesh_desc md = {"tri", 3, pos, 1, tri, 1, idx, w, NULL, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&rig, &sk, &md, 1, &err) != SSK_OK) fail_msg("rig: %s", err.message);
    return rig;
}

/* order (#B) gets the bones parents first (the test's own sweep). */
static void topological_order(uint32_t *order, const ssk_rig *rig)
{
    bool done[MAX_BONES] = {false};
    uint32_t n = 0;
    while (n < rig->bone_count) {
        const uint32_t before = n;
        for (uint32_t b = 0; b < rig->bone_count; ++b) {
            const int32_t p = rig->bones[b].parent;
            if (!done[b] && (p < 0 || done[p])) {
                done[b] = true;
                order[n++] = b;
            }
        }
        assert_true(n > before);
    }
}

/* Forward kinematics in rest rig space: a root gets a random rotation about
 * its head and a random translation; a child S_b = S_p Rot_b (a random
 * rotation about its own rest head), so h_b - h_p = R_p (a_b - a_p). With
 * extra_bone >= 0 that bone gets S_b = T(extra) S_p Rot_b instead (its
 * head moved by `extra` off its parent's frame). */
static void random_pose(float *skin, const ssk_rig *rig, uint64_t *rng, int32_t extra_bone,
                        const float extra[3])
{
    uint32_t order[MAX_BONES];
    topological_order(order, rig);
    for (uint32_t i = 0; i < rig->bone_count; ++i) {
        const uint32_t b = order[i];
        float axis[3], rot[16], tmp[16];
        rand_unit(axis, rng);
        tu_mat4_rotation(rot, axis, (float)rand_sym(rng, PI_D), rig->bones[b].head);
        const int32_t p = rig->bones[b].parent;
        if (p < 0) {
            float tr[16];
            tu_mat4_translation(tr, (float)rand_sym(rng, ROOT_TRANSLATION),
                                (float)rand_sym(rng, ROOT_TRANSLATION),
                                (float)rand_sym(rng, ROOT_TRANSLATION));
            tu_mat4_mul(skin + 16 * b, tr, rot);
        } else {
            tu_mat4_mul(tmp, skin + 16 * (uint32_t)p, rot);
            if ((int32_t)b == extra_bone) {
                float tr[16];
                tu_mat4_translation(tr, extra[0], extra[1], extra[2]);
                tu_mat4_mul(skin + 16 * b, tr, tmp);
            } else {
                memcpy(skin + 16 * b, tmp, sizeof tmp);
            }
        }
    }
}

/* The bone's own translation relative to its parent:
 * out = h_b - h_p - R_p (a_b - a_p), heads (#B by 3) the rest heads the
 * skinning matrices (#B by 16) go with. */
static void own_translation(double out[3], const float *skin, const float *heads, uint32_t b,
                            uint32_t p)
{
    double ab[3], ap[3], hb[3], hp[3], rel[3], rp[3];
    head_of(ab, heads, b);
    head_of(ap, heads, p);
    transform(hb, skin + 16 * b, ab);
    transform(hp, skin + 16 * p, ap);
    for (int k = 0; k < 3; ++k) rel[k] = ab[k] - ap[k];
    linear(rp, skin + 16 * p, rel);
    for (int k = 0; k < 3; ++k) out[k] = hb[k] - hp[k] - rp[k];
}

/* Largest |(own translation under dst, new heads) - (under skin, rest
 * heads)| over the bones with a parent: 0 for a correct refit ((c), (d)). */
static double own_translation_change(const float *dst, const float *new_heads,
                                     const float *skin, const float *heads,
                                     const ssk_rig *rig)
{
    double worst = 0.0;
    for (uint32_t b = 0; b < rig->bone_count; ++b) {
        const int32_t p = rig->bones[b].parent;
        if (p < 0) continue;
        double now[3], before[3];
        own_translation(now, dst, new_heads, b, (uint32_t)p);
        own_translation(before, skin, heads, b, (uint32_t)p);
        worst = fmax(worst, dist3(now, before));
    }
    return worst;
}

/* Whether every bone's 3x3 part and bottom row are bit-for-bit the input's. */
static bool linear_parts_equal(const float *a, const float *b, uint32_t count)
{
    for (uint32_t m = 0; m < count; ++m) {
        for (int i = 0; i < 16; ++i) {
            if (i % 4 == 3 && i < 12) continue; /* translation */
            if (a[16 * m + (uint32_t)i] != b[16 * m + (uint32_t)i]) return false;
        }
    }
    return true;
}

/* The rig shapes: a 3-bone chain, a 4-bone chain, and a 4-bone tree
 * (bone 1 with two children); heads off the axes. */
typedef struct shape {
    uint32_t nb;
    int32_t parents[MAX_BONES];
    float heads[3 * MAX_BONES];
} shape;

static const shape SHAPES[] = {
    {3, {-1, 0, 1}, {0.1f, 0.2f, -0.3f, 0.3f, 1.2f, -0.2f, 0.2f, 2.1f, 0.1f}},
    {4, {-1, 0, 1, 2}, {0, 0, 0, 0, 1, 0, 0.5f, 1.8f, 0, 0.5f, 2.6f, 0.6f}},
    {4, {-1, 0, 1, 1}, {1, 1, 1, 1, 2, 1, 1.5f, 2.8f, 1, 0.4f, 2.9f, 1.2f}},
};
#define SHAPE_COUNT (sizeof SHAPES / sizeof SHAPES[0])

/* Extent of a skeleton for the tolerances: 1 + largest |coordinate|. */
static double extent_of(const float *heads, const float *skin, uint32_t nb)
{
    double e = 1.0;
    for (uint32_t i = 0; i < 3 * nb; ++i) e = fmax(e, 1.0 + fabs(heads[i]));
    for (uint32_t i = 0; i < 16 * nb; ++i) e = fmax(e, 1.0 + fabs(skin[i]));
    return e;
}

/* ------------------------------------------------------------------------ */
/* (a) unmoved heads                                                         */
/* ------------------------------------------------------------------------ */

static void test_unmoved_heads_give_the_input(void **state)
{
    (void)state;
    uint64_t rng = 21;
    for (uint32_t s = 0; s < SHAPE_COUNT; ++s) {
        ssk_rig *rig = make_rig(SHAPES[s].nb, SHAPES[s].parents, SHAPES[s].heads);
        const uint32_t nb = SHAPES[s].nb;
        float skin[16 * MAX_BONES], dst[16 * MAX_BONES], heads[3 * MAX_BONES];
        rest_heads(heads, rig);
        for (int k = 0; k < RANDOM_POSES; ++k) {
            float extra[3];
            rand_unit(extra, &rng);
            for (int i = 0; i < 3; ++i) extra[i] *= (float)EXTRA_TRANSLATION;
            random_pose(skin, rig, &rng, k % 2 ? (int32_t)(nb - 1) : -1, extra);
            ssk_cage_skinning(dst, rig, heads, skin);
            assert_true(matrices_rel_diff(dst, skin, nb) <= IDENTITY_REL_TOL);
        }
        ssk_rig_destroy(rig);
    }
}

/* The imported character and its first animation. */
typedef struct bcn_fixture {
    ssk_scene *scene;
    const ssk_rig *rig;
    uint32_t frames;
} bcn_fixture;

static bcn_fixture bcn_open(void)
{
    bcn_fixture b = {0};
    ssk_error err = {0};
    if (ssk_scene_import(&b.scene, SSK_MODELS_DIR "/X/BCN_Epileptic.X", &err) != SSK_OK)
        fail_msg("import: %s", err.message);
    b.rig = ssk_scene_rig(b.scene);
    ssk_animation_info info;
    assert_int_equal(ssk_scene_animation(b.scene, 0, &info, NULL), SSK_OK);
    b.frames = ssk_animation_frame_count(&info, BCN_FPS);
    assert_true(b.frames >= BCN_FRAMES);
    return b;
}

/* (a) and (d) on a real character: unmoved heads give each frame's
 * matrices back; jittered heads keep every bone's linear part and its own
 * translation relative to its parent. */
static void test_bcn_epileptic(void **state)
{
    (void)state;
    bcn_fixture bf = bcn_open();
    const ssk_rig *rig = bf.rig;
    const uint32_t nb = rig->bone_count;
    ssk_error err = {0};
    float *skin = malloc(16 * (size_t)nb * sizeof(float));
    float *dst = malloc(16 * (size_t)nb * sizeof(float));
    float *heads = malloc(3 * (size_t)nb * sizeof(float));
    float *moved = malloc(3 * (size_t)nb * sizeof(float));
    assert_non_null(skin);
    assert_non_null(dst);
    assert_non_null(heads);
    assert_non_null(moved);
    rest_heads(heads, rig);
    uint32_t later_parents = 0;
    for (uint32_t b = 0; b < nb; ++b) later_parents += rig->bones[b].parent > (int32_t)b;
    const double diag = tu_bbox_diagonal(heads, nb);
    uint64_t rng = 2020;
    for (uint32_t i = 0; i < 3 * nb; ++i) {
        moved[i] = heads[i] + (float)rand_sym(&rng, BCN_JITTER_FRACTION * diag);
    }
    double worst_identity = 0.0, worst_own = 0.0, worst_extent = 1.0;
    for (uint32_t k = 0; k < BCN_FRAMES; ++k) {
        const uint32_t frame = k * (bf.frames / BCN_FRAMES);
        if (ssk_scene_sample(bf.scene, 0, frame / BCN_FPS, skin, NULL, &err) != SSK_OK)
            fail_msg("sample: %s", err.message);
        ssk_cage_skinning(dst, rig, heads, skin);
        worst_identity = fmax(worst_identity, matrices_rel_diff(dst, skin, nb));
        ssk_cage_skinning(dst, rig, moved, skin);
        assert_true(linear_parts_equal(dst, skin, nb));
        const double extent = extent_of(moved, skin, nb);
        worst_extent = fmax(worst_extent, extent);
        const double own = own_translation_change(dst, moved, skin, heads, rig);
        worst_own = fmax(worst_own, own / extent);
        assert_true(own <= HEAD_REL_TOL * extent);
    }
    printf("BCN_Epileptic.X (%u bones, %u with a parent of higher index, head diagonal %.4g): "
           "unmoved heads: max relative difference %.3g; heads jittered by %.0f%%: own "
           "translations kept to %.3g x extent (%.4g)\n",
           nb, later_parents, diag, worst_identity, 100.0 * BCN_JITTER_FRACTION, worst_own,
           worst_extent);
    assert_true(worst_identity <= IDENTITY_REL_TOL);
    free(skin);
    free(dst);
    free(heads);
    free(moved);
    ssk_scene_destroy(bf.scene);
}

/* ------------------------------------------------------------------------ */
/* (b) a uniformly scaled skeleton                                           */
/* ------------------------------------------------------------------------ */

static void test_scaled_skeleton(void **state)
{
    (void)state;
    uint64_t rng = 15;
    for (uint32_t s = 0; s < SHAPE_COUNT; ++s) {
        ssk_rig *rig = make_rig(SHAPES[s].nb, SHAPES[s].parents, SHAPES[s].heads);
        const uint32_t nb = SHAPES[s].nb;
        float skin[16 * MAX_BONES], dst[16 * MAX_BONES], heads[3 * MAX_BONES],
            scaled[3 * MAX_BONES];
        rest_heads(heads, rig);
        const uint32_t root = 0;
        assert_int_equal(rig->bones[root].parent, -1);
        for (uint32_t b = 0; b < nb; ++b) {
            for (uint32_t k = 0; k < 3; ++k) {
                scaled[3 * b + k] =
                    (float)(heads[3 * root + k] +
                            SKELETON_SCALE * ((double)heads[3 * b + k] - heads[3 * root + k]));
            }
        }
        for (int pose = 0; pose < RANDOM_POSES; ++pose) {
            random_pose(skin, rig, &rng, -1, NULL);
            ssk_cage_skinning(dst, rig, scaled, skin);
            assert_true(linear_parts_equal(dst, skin, nb));
            const double tol = HEAD_REL_TOL * extent_of(scaled, skin, nb);
            double a_root[3], h_root[3], h_root_new[3];
            head_of(a_root, heads, root);
            transform(h_root, skin + 16 * root, a_root);
            head_of(a_root, scaled, root);
            transform(h_root_new, dst + 16 * root, a_root);
            assert_true(dist3(h_root_new, h_root) <= tol);
            for (uint32_t b = 0; b < nb; ++b) {
                double a[3], h[3], a_new[3], h_new[3], expect[3];
                head_of(a, heads, b);
                head_of(a_new, scaled, b);
                transform(h, skin + 16 * b, a);
                transform(h_new, dst + 16 * b, a_new);
                for (int k = 0; k < 3; ++k) {
                    expect[k] = h_root_new[k] + SKELETON_SCALE * (h[k] - h_root_new[k]);
                }
                assert_true(dist3(h_new, expect) <= tol);
            }
        }
        ssk_rig_destroy(rig);
    }
}

/* ------------------------------------------------------------------------ */
/* (c) posed new heads follow their parents; (d) an animated translation    */
/* ------------------------------------------------------------------------ */

static void jitter_heads(float *moved, const float *heads, uint32_t nb, uint64_t *rng)
{
    for (uint32_t i = 0; i < 3 * nb; ++i) moved[i] = heads[i] + (float)rand_sym(rng, HEAD_JITTER);
}

/* Largest |h'_b - h'_p - R_p (a'_b - a'_p)| (own_translation under dst). */
static double parent_consistency(const float *dst, const float *moved, const ssk_rig *rig)
{
    double worst = 0.0;
    for (uint32_t b = 0; b < rig->bone_count; ++b) {
        const int32_t p = rig->bones[b].parent;
        if (p < 0) continue;
        double own[3];
        const double zero[3] = {0, 0, 0};
        own_translation(own, dst, moved, b, (uint32_t)p);
        worst = fmax(worst, dist3(own, zero));
    }
    return worst;
}

static void test_posed_heads_follow_parents(void **state)
{
    (void)state;
    uint64_t rng = 77;
    for (uint32_t s = 0; s < SHAPE_COUNT; ++s) {
        ssk_rig *rig = make_rig(SHAPES[s].nb, SHAPES[s].parents, SHAPES[s].heads);
        const uint32_t nb = SHAPES[s].nb;
        float skin[16 * MAX_BONES], dst[16 * MAX_BONES], heads[3 * MAX_BONES],
            moved[3 * MAX_BONES];
        rest_heads(heads, rig);
        for (int pose = 0; pose < RANDOM_POSES; ++pose) {
            random_pose(skin, rig, &rng, -1, NULL);
            jitter_heads(moved, heads, nb, &rng);
            ssk_cage_skinning(dst, rig, moved, skin);
            assert_true(linear_parts_equal(dst, skin, nb));
            const double tol = HEAD_REL_TOL * extent_of(moved, skin, nb);
            assert_true(parent_consistency(dst, moved, rig) <= tol);
            /* A root's posed new head is S_root a'_root. */
            for (uint32_t b = 0; b < nb; ++b) {
                if (rig->bones[b].parent >= 0) continue;
                double a_new[3], expect[3], got[3];
                head_of(a_new, moved, b);
                transform(expect, skin + 16 * b, a_new);
                transform(got, dst + 16 * b, a_new);
                assert_true(dist3(got, expect) <= tol);
            }
        }
        ssk_rig_destroy(rig);
    }
}

static void test_animated_translation_is_kept(void **state)
{
    (void)state;
    uint64_t rng = 4242;
    for (uint32_t s = 0; s < SHAPE_COUNT; ++s) {
        ssk_rig *rig = make_rig(SHAPES[s].nb, SHAPES[s].parents, SHAPES[s].heads);
        const uint32_t nb = SHAPES[s].nb;
        float skin[16 * MAX_BONES], dst[16 * MAX_BONES], heads[3 * MAX_BONES],
            moved[3 * MAX_BONES];
        rest_heads(heads, rig);
        for (int pose = 0; pose < RANDOM_POSES; ++pose) {
            const uint32_t bone = 1 + (uint32_t)pose % (nb - 1);
            float extra[3];
            rand_unit(extra, &rng);
            for (int i = 0; i < 3; ++i) extra[i] *= (float)EXTRA_TRANSLATION;
            random_pose(skin, rig, &rng, (int32_t)bone, extra);
            jitter_heads(moved, heads, nb, &rng);
            ssk_cage_skinning(dst, rig, moved, skin);
            const double tol = HEAD_REL_TOL * extent_of(moved, skin, nb);
            double own[3];
            const double expect[3] = {extra[0], extra[1], extra[2]};
            own_translation(own, skin, heads, bone, (uint32_t)rig->bones[bone].parent);
            assert_true(dist3(own, expect) <= tol); /* the pose does move it */
            own_translation(own, dst, moved, bone, (uint32_t)rig->bones[bone].parent);
            assert_true(dist3(own, expect) <= tol);
            assert_true(own_translation_change(dst, moved, skin, heads, rig) <= tol);
            assert_true(linear_parts_equal(dst, skin, nb));
        }
        ssk_rig_destroy(rig);
    }
}

/* ------------------------------------------------------------------------ */
/* (e) parents with higher indices                                           */
/* ------------------------------------------------------------------------ */

/* Each shape with its bones in reverse index order (bone b of the shape is
 * bone nb - 1 - b of the reversed rig, so every parent has a higher index
 * than its children): the same matrices, bone for bone, as the shape. */
static void test_reversed_indices(void **state)
{
    (void)state;
    uint64_t rng = 9;
    for (uint32_t s = 0; s < SHAPE_COUNT; ++s) {
        const uint32_t nb = SHAPES[s].nb;
        int32_t parents[MAX_BONES];
        float rheads[3 * MAX_BONES];
        for (uint32_t b = 0; b < nb; ++b) {
            const uint32_t r = nb - 1 - b;
            parents[r] = SHAPES[s].parents[b] < 0 ? -1 : (int32_t)(nb - 1) - SHAPES[s].parents[b];
            memcpy(rheads + 3 * r, SHAPES[s].heads + 3 * b, 12);
        }
        ssk_rig *rig = make_rig(nb, SHAPES[s].parents, SHAPES[s].heads);
        ssk_rig *rev = make_rig(nb, parents, rheads);
        for (uint32_t b = 0; b + 1 < nb; ++b) assert_true(rev->bones[b].parent > (int32_t)b);
        float skin[16 * MAX_BONES], rskin[16 * MAX_BONES], dst[16 * MAX_BONES],
            rdst[16 * MAX_BONES], heads[3 * MAX_BONES], moved[3 * MAX_BONES],
            rmoved[3 * MAX_BONES];
        rest_heads(heads, rig);
        for (int pose = 0; pose < RANDOM_POSES; ++pose) {
            float extra[3];
            rand_unit(extra, &rng);
            for (int i = 0; i < 3; ++i) extra[i] *= (float)EXTRA_TRANSLATION;
            random_pose(skin, rig, &rng, pose % 2 ? 1 : -1, extra);
            jitter_heads(moved, heads, nb, &rng);
            for (uint32_t b = 0; b < nb; ++b) {
                memcpy(rskin + 16 * (nb - 1 - b), skin + 16 * b, 16 * sizeof(float));
                memcpy(rmoved + 3 * (nb - 1 - b), moved + 3 * b, 3 * sizeof(float));
            }
            ssk_cage_skinning(dst, rig, moved, skin);
            ssk_cage_skinning(rdst, rev, rmoved, rskin);
            for (uint32_t b = 0; b < nb; ++b) {
                assert_true(matrices_rel_diff(rdst + 16 * (nb - 1 - b), dst + 16 * b, 1) <=
                            IDENTITY_REL_TOL);
            }
            if (pose % 2 == 0) {
                const double tol = HEAD_REL_TOL * extent_of(rmoved, rskin, nb);
                assert_true(parent_consistency(rdst, rmoved, rev) <= tol);
            }
        }
        ssk_rig_destroy(rig);
        ssk_rig_destroy(rev);
    }
}

/* ------------------------------------------------------------------------ */
/* LBS of a reshaped, bent limb                                              */
/* ------------------------------------------------------------------------ */

/* A 2-bone limb along +Y (joint at y = 1) whose lower bone's head moves to
 * y = 1 + LIMB_STRETCH: rest vertices move by sum_k w_k e_{j_k} (the head
 * displacements of their bones: rigid parts by their bone's). Bone 1 bends
 * by 90 degrees about Z at the original joint. With ssk_cage_skinning's
 * matrices, LBS keeps bone 0's rigid part at rest and turns bone 1's about
 * the new joint (0, 1 + LIMB_STRETCH, 0), which stays on the unposed upper
 * bone; the original matrices turn it about the old joint instead (off by
 * LIMB_STRETCH sqrt(2) at the tip). */
#define LIMB_RINGS 21
#define LIMB_SEGMENTS 12
#define LIMB_LENGTH 2.0f
#define LIMB_RADIUS 0.25f
#define LIMB_BLEND 0.2f
#define LIMB_STRETCH 0.3
#define RIGID_WEIGHT 0.999999f

static void test_lbs_limb_bends_at_the_new_joint(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(LIMB_RINGS, LIMB_SEGMENTS, 2, LIMB_LENGTH, LIMB_RADIUS,
                                LIMB_BLEND, 2);
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    const uint32_t nv = mv.vertex_count, K = mv.influence_count;
    float heads[6], new_heads[6];
    rest_heads(heads, rig);
    memcpy(new_heads, heads, sizeof heads);
    new_heads[4] = (float)(heads[4] + LIMB_STRETCH);
    const float joint[3] = {heads[3], heads[4], heads[5]};
    const float z_axis[3] = {0, 0, 1};
    float skin[32], dst[32];
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, z_axis, (float)(PI_D / 2), joint);
    ssk_cage_skinning(dst, rig, new_heads, skin);

    /* The posed new joint: on the unposed upper bone, at the new rest joint. */
    double a_new[3], h_new[3], h_parent[3];
    head_of(a_new, new_heads, 1);
    transform(h_new, dst + 16, a_new);
    transform(h_parent, dst, a_new);
    assert_true(dist3(h_new, a_new) <= LIMB_TOL);
    assert_true(dist3(h_new, h_parent) <= LIMB_TOL);

    float *moved = malloc(3 * (size_t)nv * sizeof(float));
    float *out = malloc(3 * (size_t)nv * sizeof(float));
    float *naive = malloc(3 * (size_t)nv * sizeof(float));
    assert_non_null(moved);
    assert_non_null(out);
    assert_non_null(naive);
    for (uint32_t v = 0; v < nv; ++v) {
        for (uint32_t k = 0; k < 3; ++k) {
            double p = mv.positions[3 * v + k];
            for (uint32_t i = 0; i < K; ++i) {
                const uint32_t b = (uint32_t)mv.bone_indices[K * v + i];
                p += (double)mv.weights[K * v + i] * ((double)new_heads[3 * b + k] - heads[3 * b + k]);
            }
            moved[3 * v + k] = (float)p;
        }
    }
    ssk_lbs_deform(out, moved, nv, mv.bone_indices, mv.weights, K, dst, 2);
    ssk_lbs_deform(naive, moved, nv, mv.bone_indices, mv.weights, K, skin, 2);
    uint32_t rigid[2] = {0, 0};
    double worst = 0.0, naive_tip = 0.0;
    for (uint32_t v = 0; v < nv; ++v) {
        uint32_t bone = 2;
        for (uint32_t i = 0; i < K; ++i) {
            if (mv.weights[K * v + i] >= RIGID_WEIGHT) bone = (uint32_t)mv.bone_indices[K * v + i];
        }
        if (bone > 1) continue;
        ++rigid[bone];
        /* Expected: bone 0 at rest; bone 1 turned by 90 degrees about Z
         * through the new joint: (x, y) -> (j_x - (y - j_y), j_y + (x - j_x)). */
        const double x = moved[3 * v], y = moved[3 * v + 1], z = moved[3 * v + 2];
        double expect[3] = {x, y, z};
        if (bone == 1) {
            expect[0] = a_new[0] - (y - a_new[1]);
            expect[1] = a_new[1] + (x - a_new[0]);
        }
        const double got[3] = {out[3 * v], out[3 * v + 1], out[3 * v + 2]};
        const double old[3] = {naive[3 * v], naive[3 * v + 1], naive[3 * v + 2]};
        worst = fmax(worst, dist3(got, expect));
        if (bone == 1) naive_tip = fmax(naive_tip, dist3(old, expect));
    }
    printf("limb (%u vertices, %u and %u rigid): bent at the new joint to %.3g; the original "
           "matrices miss by up to %.3g\n",
           nv, rigid[0], rigid[1], worst, naive_tip);
    assert_true(rigid[0] > 0 && rigid[1] > 0);
    assert_true(worst <= LIMB_TOL);
    assert_true(naive_tip >= LIMB_STRETCH);
    free(moved);
    free(out);
    free(naive);
    ssk_rig_destroy(rig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unmoved_heads_give_the_input),
        cmocka_unit_test(test_bcn_epileptic),
        cmocka_unit_test(test_scaled_skeleton),
        cmocka_unit_test(test_posed_heads_follow_parents),
        cmocka_unit_test(test_animated_translation_is_kept),
        cmocka_unit_test(test_reversed_indices),
        cmocka_unit_test(test_lbs_limb_bends_at_the_new_joint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
