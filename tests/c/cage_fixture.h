/*
 * cage_fixture.h — the square-tube cage the cage tests put around the
 * generated limb (tests/c/testutil.h tu_make_limb, along +Y): `rings`
 * square rings of half-width `half` in XZ, evenly from y0 to y1, corner s
 * of a ring at angle 45 + 90 s degrees, closed by two triangles at each
 * end, oriented as tu_make_limb's mesh (closed, consistently oriented).
 * Shared by test_cage_bind.c, test_cage_quality.c and test_cage_rev.c
 * (static inline: each test compiles its own).
 */
#ifndef SSK_TEST_CAGE_FIXTURE_H
#define SSK_TEST_CAGE_FIXTURE_H

#include <stdint.h>
#include <string.h>

#define TU_CAGE_RING_SIZE 4u

/* Triangles of a tube cage of `rings` rings. */
static inline uint32_t tu_tube_cage_triangles(uint32_t rings)
{
    return 2 * TU_CAGE_RING_SIZE * (rings - 1) + 4;
}

/* v: rings * 4 by 3 positions; t: tu_tube_cage_triangles(rings) by 3. */
static inline void tu_tube_cage(double *v, uint32_t *t, uint32_t rings, double y0, double y1,
                                double half)
{
    static const double corner[TU_CAGE_RING_SIZE][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
    for (uint32_t r = 0; r < rings; ++r)
        for (uint32_t s = 0; s < TU_CAGE_RING_SIZE; ++s) {
            double *p = v + 3 * (r * TU_CAGE_RING_SIZE + s);
            p[0] = half * corner[s][0];
            p[1] = y0 + (y1 - y0) * (double)r / (double)(rings - 1);
            p[2] = half * corner[s][1];
        }
    uint32_t f = 0;
    for (uint32_t r = 0; r + 1 < rings; ++r)
        for (uint32_t s = 0; s < TU_CAGE_RING_SIZE; ++s) {
            const uint32_t a = r * TU_CAGE_RING_SIZE + s;
            const uint32_t b = r * TU_CAGE_RING_SIZE + (s + 1) % TU_CAGE_RING_SIZE;
            const uint32_t c = a + TU_CAGE_RING_SIZE, d = b + TU_CAGE_RING_SIZE;
            uint32_t *q = t + 3 * f++;
            q[0] = a, q[1] = c, q[2] = b;
            q = t + 3 * f++;
            q[0] = b, q[1] = c, q[2] = d;
        }
    const uint32_t top = (rings - 1) * TU_CAGE_RING_SIZE;
    const uint32_t caps[4][3] = {{0, 1, 2}, {0, 2, 3}, {top, top + 2, top + 1},
                                 {top, top + 3, top + 2}};
    memcpy(t + 3 * f, caps, sizeof caps);
}

#endif
