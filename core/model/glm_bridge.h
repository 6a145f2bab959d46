/* glm_bridge.h — the one place where SpringSkin's matrix convention meets
 * cglm's.
 *
 * SpringSkin: row-major float[16] acting on column vectors, m[row * 4 + col].
 * cglm: column-major mat4 acting on column vectors, m[col][row]. The same
 * 16 floats read as a cglm mat4 are the transpose, so every load and store
 * between the two transposes, here and nowhere else. mat4 is 16-byte
 * aligned (CGLM_ALIGN_MAT): callers declare their mat4 locals with it.
 * Element-wise copies, no pointer casts between float[16] and mat4. */
#ifndef SSK_MODEL_GLM_BRIDGE_H
#define SSK_MODEL_GLM_BRIDGE_H

#include <cglm/cglm.h>

/* dst = the row-major src as a cglm mat4. */
static inline void ssk_glm_load(mat4 dst, const float src[16])
{
    for (int row = 0; row < 4; ++row)
        for (int col = 0; col < 4; ++col) dst[col][row] = src[row * 4 + col];
}

/* dst = the cglm mat4 src as a row-major array. */
static inline void ssk_glm_store(float dst[16], mat4 src)
{
    for (int row = 0; row < 4; ++row)
        for (int col = 0; col < 4; ++col) dst[row * 4 + col] = src[col][row];
}

#endif
