/*
 * cage_fig5.h — the bar, cage, edits and bends of Corda et al. 2020's
 * Fig. 5 (003_3bdce6713f645d88.txt; issue #21), shared by the test
 * (test_cage_quality.c) and the tool that draws it for docs/library.md
 * (tests/tools/cage_fig5.c), so the picture shows the tested cases.
 * static inline: each includer compiles its own. Needs testutil.h and
 * cage_fixture.h first.
 */
#ifndef SSK_TEST_CAGE_FIG5_H
#define SSK_TEST_CAGE_FIG5_H

#include <math.h>
#include <string.h>

/* The bar (as test_cage_bind.c: an octagonal tube, since a square one has
 * the box cage's mirror planes through every vertex and leaves the cage
 * coordinates rank-deficient for the cage updater). */
#define BAR_RINGS 17
#define BAR_SEGMENTS 8
#define BAR_BONES 2
#define BAR_LENGTH 2.0f
#define BAR_RADIUS 0.5f
/* a blend region of a full bone length about the joint: 7 rings with
 * both bones' weights, so the joint's prior (Eq. 9-11) spans several rings
 * and its refit is not the joint ring's centroid by construction */
#define BAR_BLEND 1.0f
#define BAR_INFLUENCES 4
#define BAR_WIDTH (2.0 * BAR_RADIUS)
#define JOINT_BONE 1                      /* the bone whose head is the bent joint */
#define JOINT_Y (0.5 * BAR_LENGTH)        /* its rest height */
#define RING_HEIGHT_EPS 1e-5              /* a vertex at the joint's height, within */
/* The cage: CAGE_RINGS square rings of half-width CAGE_HALF at CAGE_Y[];
 * ring CAGE_MIDDLE at the joint's height is the edited one. */
#define CAGE_RINGS 3
#define CAGE_RING_SIZE 4
#define CAGE_MIDDLE 1
#define CAGE_VERTICES (CAGE_RINGS * CAGE_RING_SIZE)
#define CAGE_TRIANGLES (2 * CAGE_RING_SIZE * (CAGE_RINGS - 1) + 4)
#define CAGE_HALF 0.75f
static const float CAGE_Y[CAGE_RINGS] = {-0.25f, 1.0f, 2.25f};
/* The edits (Fig. 5). */
#define ISO_SCALE 1.5f
#define ANISO_SCALE_X 1.6f
#define ANISO_SCALE_Z 0.8f
#define HANDLE_VERTEX (CAGE_MIDDLE * CAGE_RING_SIZE) /* the middle ring's (+X, +Z) corner */
#define HANDLE_OUTWARD 0.6f
/* The whole cage scaled about the bar's base (the origin): isotropic, and
 * anisotropic (X, Y, Z). Unlike the middle ring's scalings, these move
 * the section at the joint along the bar, away from the rest joint. */
#define WHOLE_SCALE 1.5f
static const float WHOLE_STRETCH[3] = {1.4f, 1.5f, 0.8f};
/* The bends, degrees. */
static const double BEND_DEGREES[] = {45.0, 90.0, 135.0};
#define BEND_COUNT (sizeof BEND_DEGREES / sizeof BEND_DEGREES[0])
/* Issue #21: the refitted joint within 5% of the bar's width of the
 * section's center. */
#define CENTER_TOL (0.05 * BAR_WIDTH)
/* The single handle: the un-refitted joint off by more than CENTER_TOL and
 * by more than this factor times the refitted one. */
#define UNREFIT_FACTOR 4.0
#define TEST_PI 3.14159265358979323846

/* The cage around the bar (cage_fixture.h), as floats. */
static inline void bar_cage(float *v, uint32_t *t)
{
    double d[3 * CAGE_VERTICES];
    tu_tube_cage(d, t, CAGE_RINGS, CAGE_Y[0], CAGE_Y[CAGE_RINGS - 1], CAGE_HALF);
    for (int k = 0; k < 3 * CAGE_VERTICES; ++k) v[k] = (float)d[k];
}

typedef enum edit_kind {
    EDIT_ISOTROPIC,
    EDIT_ANISOTROPIC,
    EDIT_SINGLE_HANDLE,
    EDIT_WHOLE_ISOTROPIC,
    EDIT_WHOLE_ANISOTROPIC,
    EDIT_COUNT
} edit_kind;
static const char *const EDIT_NAMES[EDIT_COUNT] = {
    "isotropic, middle ring (x1.5 X, Z)", "anisotropic, middle ring (x1.6 X, x0.8 Z)",
    "single handle (+0.6 out)", "isotropic, whole cage (x1.5)",
    "anisotropic, whole cage (x1.4 X, x1.5 Y, x0.8 Z)"};

/* edited (CAGE_VERTICES by 3) gets the rest cage with edit `kind`. */
static inline void edit_cage(float *edited, const float *rest, edit_kind kind)
{
    memcpy(edited, rest, 3 * CAGE_VERTICES * sizeof(float));
    float *ring = edited + 3 * CAGE_MIDDLE * CAGE_RING_SIZE;
    switch (kind) {
    case EDIT_ISOTROPIC:
        for (int s = 0; s < CAGE_RING_SIZE; ++s) {
            ring[3 * s] *= ISO_SCALE;
            ring[3 * s + 2] *= ISO_SCALE;
        }
        break;
    case EDIT_ANISOTROPIC:
        for (int s = 0; s < CAGE_RING_SIZE; ++s) {
            ring[3 * s] *= ANISO_SCALE_X;
            ring[3 * s + 2] *= ANISO_SCALE_Z;
        }
        break;
    case EDIT_WHOLE_ISOTROPIC:
        for (int k = 0; k < 3 * CAGE_VERTICES; ++k) edited[k] *= WHOLE_SCALE;
        break;
    case EDIT_WHOLE_ANISOTROPIC:
        for (int k = 0; k < 3 * CAGE_VERTICES; ++k) edited[k] *= WHOLE_STRETCH[k % 3];
        break;
    default: {
        /* outward: along the corner's direction from the bar's axis */
        float *p = edited + 3 * HANDLE_VERTEX;
        const float r = sqrtf(p[0] * p[0] + p[2] * p[2]);
        const float ux = p[0] / r, uz = p[2] / r;
        p[0] += HANDLE_OUTWARD * ux;
        p[2] += HANDLE_OUTWARD * uz;
        break;
    }
    }
}

/* The rig's skinning matrices for the bend: bone 0 at rest, the joint's
 * bone (and the chain above it) turned by `radians` about Z through its
 * rest head `head`. */
static inline void bend_pose(float *skin, const float head[3], double radians)
{
    static const float z_axis[3] = {0, 0, 1};
    for (uint32_t b = 0; b < BAR_BONES; ++b) {
        if (b < JOINT_BONE)
            tu_mat4_identity(skin + 16 * b);
        else
            tu_mat4_rotation(skin + 16 * b, z_axis, (float)radians, head);
    }
}

/* dst = the affine map m (row-major 4x4) applied to point p. */
static inline void transform_point(double dst[3], const float m[16], const float p[3])
{
    for (int r = 0; r < 3; ++r)
        dst[r] = (double)m[4 * r] * p[0] + (double)m[4 * r + 1] * p[1] +
                 (double)m[4 * r + 2] * p[2] + (double)m[4 * r + 3];
}

/* |joint - centroid of the posed vertices ring[0 .. n)| (posed: #V by 3). */
static inline double off_center(const double joint[3], const float *posed, const uint32_t *ring,
                         uint32_t n)
{
    double c[3] = {0, 0, 0};
    for (uint32_t i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) c[a] += posed[3 * (size_t)ring[i] + a] / n;
    return sqrt((joint[0] - c[0]) * (joint[0] - c[0]) + (joint[1] - c[1]) * (joint[1] - c[1]) +
                (joint[2] - c[2]) * (joint[2] - c[2]));
}

#endif
