/* mat4.c — the few row-major 4x4 operations the core needs on the host side
 * (per-bone, per-frame work; the per-vertex kernels inline their own).
 * Identity, product and inverse are cglm's (single precision), through the
 * row-major <-> column-major bridge of model/glm_bridge.h. The importer's
 * double-precision matrices (ssk_mat4d_*, model/anim.c) stay hand-written:
 * cglm has no double type. */
#include "model/internal.h"
#include "model/glm_bridge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ssk_mat4_identity(float dst[16])
{
    CGLM_ALIGN_MAT mat4 m;
    glm_mat4_identity(m);
    ssk_glm_store(dst, m);
}

void ssk_mat4_mul(float dst[16], const float a[16], const float b[16])
{
    CGLM_ALIGN_MAT mat4 ga, gb, r;
    ssk_glm_load(ga, a);
    ssk_glm_load(gb, b);
    glm_mat4_mul(ga, gb, r);
    ssk_glm_store(dst, r);
}

bool ssk_mat4_invert(float dst[16], const float m[16])
{
    CGLM_ALIGN_MAT mat4 g, inv;
    ssk_glm_load(g, m);
    /* det(m) = det(m^T): the check does not depend on the layout. */
    if (!(fabs((double)glm_mat4_det(g)) > SSK_SINGULAR_EPSILON)) return false;
    glm_mat4_inv(g, inv);
    ssk_glm_store(dst, inv);
    return true;
}

/* Hand-written on purpose, not glm_mat4_mulv3: the GL shaders repeat this
 * exact order, ((m0 x + m1 y) + m2 z) + m3 per row (a `precise` result, so
 * no fused multiply-add; shaders/kernels_skinning_lib.glsl,
 * ssk_transform_point), so that GL and the CPU give bit-identical positions
 * on llvmpipe (test_backends). cglm's SIMD sums of scaled columns (with FMA
 * where the target has it) round differently. */
void ssk_mat4_transform_point(float dst[3], const float m[16], const float p[3])
{
    float x = p[0], y = p[1], z = p[2];
    dst[0] = m[0] * x + m[1] * y + m[2] * z + m[3];
    dst[1] = m[4] * x + m[5] * y + m[6] * z + m[7];
    dst[2] = m[8] * x + m[9] * y + m[10] * z + m[11];
}

/* Exact comparison with the identity (cglm 0.8 has no matrix comparison). */
bool ssk_mat4_is_identity(const float m[16])
{
    for (int i = 0; i < 16; ++i)
        if (m[i] != ((i % 5 == 0) ? 1.0f : 0.0f)) return false;
    return true;
}
