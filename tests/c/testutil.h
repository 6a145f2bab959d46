/* testutil.h — generated rigs and small math for the C tests. */
#ifndef SSK_TESTUTIL_H
#define SSK_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "springskin.h"

/* A capped cylinder ("limb") along +Y from y = 0 to y = length, radius
 * `radius`, `rings` rings of `segments` vertices, with a chain of
 * `bone_count` equal bones along +Y (bind matrices are translations).
 * Weights: each vertex is weighted to the bone containing it and its
 * neighbor across the closest joint with a smooth falloff over
 * `blend` (fraction of a bone length) around each joint, at most 2
 * influences, stored with K = influences (>= 2; extra slots zero).
 * Returns NULL (and fails the test) on error. */
ssk_rig *tu_make_limb(uint32_t rings, uint32_t segments, uint32_t bone_count,
                      float length, float radius, float blend,
                      uint32_t influences);

/* Row-major 4x4: rotation of `angle` radians about unit `axis` through
 * `pivot`. */
void tu_mat4_rotation(float m[16], const float axis[3], float angle,
                      const float pivot[3]);
void tu_mat4_translation(float m[16], float x, float y, float z);
/* Scale about `pivot`. */
void tu_mat4_scale(float m[16], float sx, float sy, float sz,
                   const float pivot[3]);
void tu_mat4_mul(float dst[16], const float a[16], const float b[16]);
void tu_mat4_identity(float m[16]);

/* Largest |a[i] - b[i]|. */
double tu_max_abs_diff(const float *a, const float *b, size_t n);
/* Diagonal of the bounding box of #n by 3 points. */
double tu_bbox_diagonal(const float *points, size_t n);

/* Makes a fresh temporary directory (mkdtemp); returns a static-lifetime
 * malloc'ed path the test frees. */
char *tu_temp_dir(void);

#endif
