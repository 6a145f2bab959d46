/*
 * simd.h — 4-lane float vectors through the GCC/Clang vector extension
 * (SSE2 on x86-64, NEON on arm64, scalar code elsewhere), and the
 * target_clones attribute that builds AVX2 and AVX-512 variants of the hot
 * kernels with runtime dispatch.
 */
#ifndef SSK_SIMD_H
#define SSK_SIMD_H

#include <string.h>

typedef float ssk_v4 __attribute__((vector_size(16)));

static inline ssk_v4 ssk_v4_load(const float *p)
{
    ssk_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline ssk_v4 ssk_v4_splat(float x) { return (ssk_v4){x, x, x, x}; }

/* (sum a, sum b, sum c, sum d): the horizontal sums of four vectors. */
static inline ssk_v4 ssk_v4_sum4(ssk_v4 a, ssk_v4 b, ssk_v4 c, ssk_v4 d)
{
    ssk_v4 ab = __builtin_shufflevector(a, b, 0, 4, 1, 5) + __builtin_shufflevector(a, b, 2, 6, 3, 7);
    ssk_v4 cd = __builtin_shufflevector(c, d, 0, 4, 1, 5) + __builtin_shufflevector(c, d, 2, 6, 3, 7);
    return __builtin_shufflevector(ab, cd, 0, 1, 4, 5) + __builtin_shufflevector(ab, cd, 2, 3, 6, 7);
}

static inline float ssk_v4_dot(ssk_v4 a, ssk_v4 b)
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

/* Vertices per OpenMP work item of the blocked kernels. */
#define SSK_VERTEX_BLOCK 2048

#endif /* SSK_SIMD_H */
