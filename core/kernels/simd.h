/*
 * simd.h — 4-lane float vectors through the GCC/Clang vector extension
 * (SSE2 on x86-64, NEON on arm64, scalar code elsewhere), and the
 * target_clones attribute that builds AVX2 and AVX-512 variants of the hot
 * kernels with runtime dispatch.
 */
#ifndef SSK_SIMD_H
#define SSK_SIMD_H

#include <stdint.h>
#include <string.h>

typedef float ssk_v4 __attribute__((vector_size(16)));

static inline __attribute__((always_inline)) ssk_v4 ssk_v4_load(const float *p)
{
    ssk_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 8-lane vectors for kernels vectorized across vertices (two SSE registers
 * on the baseline target, one AVX register in the AVX2/AVX-512 clones). */
typedef float ssk_v8 __attribute__((vector_size(32)));
typedef int32_t ssk_i8 __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) ssk_v8 ssk_v8_load(const float *p)
{
    ssk_v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) void ssk_v8_store(float *p, ssk_v8 v) { memcpy(p, &v, sizeof v); }

static inline __attribute__((always_inline)) ssk_v8 ssk_v8_splat(float x) { return (ssk_v8){x, x, x, x, x, x, x, x}; }

/* Lane-wise mask ? a : b, mask lanes all ones or all zeros. */
static inline __attribute__((always_inline)) ssk_v8 ssk_v8_select(ssk_i8 mask, ssk_v8 a, ssk_v8 b)
{
    return (ssk_v8)(((ssk_i8)a & mask) | ((ssk_i8)b & ~mask));
}

/* In-place transpose of an 8 by 8 block held as 8 row vectors. */
static inline __attribute__((always_inline)) void ssk_v8_transpose8(ssk_v8 r[8])
{
    ssk_v8 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int i = 0; i < 4; ++i) {
        r[i] = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* 8 xyz triples (24 floats) to three lane vectors x, y, z, and back. */
static inline __attribute__((always_inline)) void ssk_v8_load_xyz(const float *p, ssk_v8 *x, ssk_v8 *y, ssk_v8 *z)
{
    const ssk_v8 a = ssk_v8_load(p), b = ssk_v8_load(p + 8), c = ssk_v8_load(p + 16);
    *x = __builtin_shufflevector(__builtin_shufflevector(a, b, 0, 3, 6, 9, 12, 15, 0, 0), c, 0, 1, 2, 3, 4, 5, 10, 13);
    *y = __builtin_shufflevector(__builtin_shufflevector(a, b, 1, 4, 7, 10, 13, 0, 0, 0), c, 0, 1, 2, 3, 4, 8, 11, 14);
    *z = __builtin_shufflevector(__builtin_shufflevector(a, b, 2, 5, 8, 11, 14, 0, 0, 0), c, 0, 1, 2, 3, 4, 9, 12, 15);
}

static inline __attribute__((always_inline)) void ssk_v8_store_xyz(float *p, ssk_v8 x, ssk_v8 y, ssk_v8 z)
{
    ssk_v8_store(p, __builtin_shufflevector(__builtin_shufflevector(x, y, 0, 8, 0, 1, 9, 0, 2, 10), z, 0, 1, 8, 3, 4, 9, 6, 7));
    ssk_v8_store(p + 8, __builtin_shufflevector(__builtin_shufflevector(x, y, 0, 3, 11, 0, 4, 12, 0, 5), z, 10, 1, 2, 11, 4, 5, 12, 7));
    ssk_v8_store(p + 16, __builtin_shufflevector(__builtin_shufflevector(x, y, 13, 0, 6, 14, 0, 7, 15, 0), z, 0, 13, 2, 3, 14, 5, 6, 15));
}

/* The skin weights of 8 vertices with 4 influences each (#8 by 4, row-major,
 * 32 floats) to 4 lane vectors: w[i] holds influence i of the 8 vertices. */
static inline __attribute__((always_inline)) void ssk_v8_load_weights4(ssk_v8 w[4], const float *weights)
{
    const ssk_v8 wa = ssk_v8_load(weights), wb = ssk_v8_load(weights + 8);
    const ssk_v8 wc = ssk_v8_load(weights + 16), wd = ssk_v8_load(weights + 24);
    const ssk_v8 lo01 = __builtin_shufflevector(wa, wb, 0, 4, 8, 12, 1, 5, 9, 13);
    const ssk_v8 lo23 = __builtin_shufflevector(wa, wb, 2, 6, 10, 14, 3, 7, 11, 15);
    const ssk_v8 hi01 = __builtin_shufflevector(wc, wd, 0, 4, 8, 12, 1, 5, 9, 13);
    const ssk_v8 hi23 = __builtin_shufflevector(wc, wd, 2, 6, 10, 14, 3, 7, 11, 15);
    w[0] = __builtin_shufflevector(lo01, hi01, 0, 1, 2, 3, 8, 9, 10, 11);
    w[1] = __builtin_shufflevector(lo01, hi01, 4, 5, 6, 7, 12, 13, 14, 15);
    w[2] = __builtin_shufflevector(lo23, hi23, 0, 1, 2, 3, 8, 9, 10, 11);
    w[3] = __builtin_shufflevector(lo23, hi23, 4, 5, 6, 7, 12, 13, 14, 15);
}

static inline __attribute__((always_inline)) ssk_v4 ssk_v4_splat(float x) { return (ssk_v4){x, x, x, x}; }

/* (sum a, sum b, sum c, sum d): the horizontal sums of four vectors. */
static inline __attribute__((always_inline)) ssk_v4 ssk_v4_sum4(ssk_v4 a, ssk_v4 b, ssk_v4 c, ssk_v4 d)
{
    ssk_v4 ab = __builtin_shufflevector(a, b, 0, 4, 1, 5) + __builtin_shufflevector(a, b, 2, 6, 3, 7);
    ssk_v4 cd = __builtin_shufflevector(c, d, 0, 4, 1, 5) + __builtin_shufflevector(c, d, 2, 6, 3, 7);
    return __builtin_shufflevector(ab, cd, 0, 1, 4, 5) + __builtin_shufflevector(ab, cd, 2, 3, 6, 7);
}

static inline __attribute__((always_inline)) float ssk_v4_dot(ssk_v4 a, ssk_v4 b)
{
    ssk_v4 p = a * b;
    ssk_v4 s = p + __builtin_shufflevector(p, p, 2, 3, 0, 1);
    return s[0] + s[1];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define SSK_TARGET_CLONES __attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))
#else
#define SSK_TARGET_CLONES
#endif

/* Vertices per inner block of the blocked kernels (within a chunk of
 * model/parallel.h). */
#define SSK_VERTEX_BLOCK 2048

#endif /* SSK_SIMD_H */
