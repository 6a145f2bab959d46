/* fuzz_rig.h — the small rig the fuzz targets parse against (issue #19):
 * a 3-bone chain along y ("bone_0".."bone_2") skinning a strip of quads,
 * built once per process. */
#ifndef SSK_FUZZ_RIG_H
#define SSK_FUZZ_RIG_H

#include "springskin.h"

#include <stdlib.h>

/* Strip of FUZZ_RINGS rings of 2 vertices, 3 bones of length 1. */
#define FUZZ_RINGS 7
#define FUZZ_BONES 3

static const ssk_rig *fuzz_rig(void)
{
    static ssk_rig *rig;
    if (rig) return rig;
    enum { NV = 2 * FUZZ_RINGS, NT = 2 * (FUZZ_RINGS - 1) };
    static float positions[3 * NV], weights[2 * NV], bind[16 * FUZZ_BONES],
        heads[3 * FUZZ_BONES], tails[3 * FUZZ_BONES];
    static int32_t triangles[3 * NT], bones[2 * NV], parents[FUZZ_BONES];
    static const char *names[FUZZ_BONES] = {"bone_0", "bone_1", "bone_2"};
    for (int r = 0; r < FUZZ_RINGS; ++r) {
        const float y = 3.0f * (float)r / (FUZZ_RINGS - 1);
        for (int k = 0; k < 2; ++k) {
            const int v = 2 * r + k;
            positions[3 * v] = k ? 0.2f : -0.2f;
            positions[3 * v + 1] = y;
            int b = (int)y;
            if (b > FUZZ_BONES - 1) b = FUZZ_BONES - 1;
            const float f = y - (float)b;
            bones[2 * v] = b;
            bones[2 * v + 1] = b + 1 < FUZZ_BONES ? b + 1 : b;
            weights[2 * v] = 1.0f - 0.5f * f;
            weights[2 * v + 1] = 0.5f * f;
        }
    }
    for (int r = 0; r + 1 < FUZZ_RINGS; ++r) {
        int32_t *t = triangles + 6 * r;
        const int32_t a = 2 * r, b = a + 1, c = a + 2, d = a + 3;
        t[0] = a, t[1] = b, t[2] = d, t[3] = a, t[4] = d, t[5] = c;
    }
    for (int b = 0; b < FUZZ_BONES; ++b) {
        parents[b] = b - 1;
        float *m = bind + 16 * b;
        m[0] = m[5] = m[10] = m[15] = 1.0f;
        m[7] = (float)b; /* row-major: translation in the last column */
        heads[3 * b + 1] = (float)b;
        tails[3 * b + 1] = (float)b + 1.0f;
    }
    ssk_skeleton_desc sk = {FUZZ_BONES, names, parents, bind, heads, tails};
    ssk_mesh_desc md = {"strip", NV, positions, NT, triangles, 2, bones, weights, NULL, NULL};
    if (ssk_rig_create(&rig, &sk, &md, 1, NULL) != SSK_OK) abort();
    return rig;
}

#endif
