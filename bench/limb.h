/*
 * limb.h — the generated limb, its animation and the timing helpers shared
 * by the benchmarks (bench_skinning, bench_spring, bench_write, bench_bind,
 * bench_cor). Built into every bench program (CMakeLists.txt); the name
 * does not match bench/bench_*.c, so it is not a program of its own.
 *
 * The limb: a tube of radius BENCH_LIMB_RADIUS along +Y from y = 0 to
 * y = BENCH_LIMB_LENGTH (model units), made of rings of BENCH_LIMB_SEGMENTS
 * vertices (no caps), split into a chain of BENCH_LIMB_BONES equal bones
 * (bone b's head at y = b · length / bones; bind matrices are translations,
 * parents b - 1). Every vertex has BENCH_LIMB_INFLUENCES weight slots: the
 * 4 nearest bone centers (the bone containing the vertex's ring, the one
 * before it, and the following ones, clamped to the chain), with weights
 * chosen by bench_limb_weights and normalized to sum 1.
 */
#ifndef SSK_BENCH_LIMB_H
#define SSK_BENCH_LIMB_H

#include <stdint.h>

#include "springskin.h"

#define BENCH_PI 3.14159265358979323846
#define BENCH_LIMB_BONES 8
#define BENCH_LIMB_INFLUENCES 4
#define BENCH_LIMB_SEGMENTS 64
#define BENCH_LIMB_LENGTH 8.0f
#define BENCH_LIMB_RADIUS 0.5f

/* The limb's skin weights, before normalization; d = |y - c_b| / bone
 * length, the distance of the vertex's ring (y) from bone b's center c_b in
 * bone lengths. */
typedef enum bench_limb_weights {
    /* 1 / (0.05 + d^4): all 4 slots non-zero everywhere, as painted
     * production weights (bench_skinning, bench_spring, bench_write,
     * bench_bind). */
    BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE,
    /* max(0, 1 - d / BENCH_LIMB_HAT)^2, and 1 for the first bone below its
     * center and the last bone above its center: one or two slots non-zero,
     * which keeps the CoR precomputation of the limb short (bench_cor). */
    BENCH_LIMB_WEIGHTS_HAT
} bench_limb_weights;

/* Half-width of a bone's weight hat (BENCH_LIMB_WEIGHTS_HAT), in bone
 * lengths. */
#define BENCH_LIMB_HAT 0.8

/* Seconds of CLOCK_MONOTONIC (an arbitrary origin: differences only). */
double bench_now(void);

/* qsort comparator of doubles, ascending. */
int bench_compare_double(const void *a, const void *b);
/* qsort comparison of uint32_t. */
int bench_compare_u32(const void *a, const void *b);

/* Row-major 4x4 identity. */
void bench_identity(float m[16]);

/* The limb rig with about `target` vertices: floor(target / 64) rings of 64
 * (at least 2 rings), 2 · (rings - 1) · 64 triangles, one mesh named
 * "limb". Returns NULL after printing the reason to stderr (allocation or
 * ssk_rig_create failure); the caller destroys the rig. */
ssk_rig *bench_limb_create(uint32_t target, bench_limb_weights weights);

/* Skinning matrices (row-major 4x4, model space, BENCH_LIMB_BONES of them)
 * of the limb's animation at `phase` (radians): joint b bends about Z by
 * 0.3 sin(phase + b) and twists about Y by 0.4 cos(phase + b / 2) radians
 * about its rest head, composed down the chain. The bind matrices are
 * translations to the rest heads and the pose is built about those heads,
 * so global pose · inverse(bind) is the global pose itself. */
void bench_limb_pose(float skin[16 * BENCH_LIMB_BONES], double phase);

/* Rest pose except bone `bone` and its descendants turned by `angle`
 * radians about axis `axis` (0 X, 1 Y: a twist, 2 Z: a bend) through the
 * bone's head. */
void bench_limb_joint_pose(float skin[16 * BENCH_LIMB_BONES], int bone, int axis, double angle);

/* Median milliseconds per frame of a deformer made from `desc` on `rig`,
 * posed with bench_limb_pose(0.1 (r + 1)) for r = 0 .. repeats - 1 after
 * one untimed frame; *create_s (may be NULL) gets the seconds
 * ssk_deformer_create took. Prints the error and exits 1 on failure. */
double bench_limb_frame_ms(const ssk_rig *rig, const ssk_deformer_desc *desc, int repeats,
                           double *create_s);

#endif
