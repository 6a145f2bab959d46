/*
 * limb.c — the benchmarks' generated limb and helpers (see limb.h).
 */
#include "limb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bench_compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int bench_compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void bench_identity(float m[16])
{
    memset(m, 0, 16 * sizeof(float));
    m[0] = m[5] = m[10] = m[15] = 1.0f;
}

/* Row-major 4x4: rotation of `angle` radians about coordinate axis `axis`
 * (0 = X, 1 = Y, 2 = Z) through `pivot`. */
static void rotation_about(float m[16], int axis, double angle, const float pivot[3])
{
    double c = cos(angle), s = sin(angle);
    double r[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    int a = (axis + 1) % 3, b = (axis + 2) % 3;
    r[a * 3 + a] = c;
    r[a * 3 + b] = -s;
    r[b * 3 + a] = s;
    r[b * 3 + b] = c;
    bench_identity(m);
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) m[i * 4 + j] = (float)r[i * 3 + j];
        m[i * 4 + 3] = (float)(pivot[i] - (r[i * 3] * pivot[0] + r[i * 3 + 1] * pivot[1] +
                                            r[i * 3 + 2] * pivot[2]));
    }
}

/* d = a · b (row-major 4x4; d may alias a or b). */
static void mul(float d[16], const float a[16], const float b[16])
{
    float r[16];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            float s = 0;
            for (int k = 0; k < 4; ++k) s += a[i * 4 + k] * b[k * 4 + j];
            r[i * 4 + j] = s;
        }
    memcpy(d, r, sizeof r);
}

/* Unnormalized weight of bone `b` (center `center`) for a ring at `y`. */
static float limb_weight(bench_limb_weights weights, int b, float y, float center,
                         float bone_length)
{
    if (weights == BENCH_LIMB_WEIGHTS_HAT) {
        const float h = 1.0f - fabsf(y - center) / (float)(BENCH_LIMB_HAT * bone_length);
        float wi = h > 0.0f ? h * h : 0.0f;
        /* the ends belong to the end bones */
        if ((b == 0 && y < center) || (b == BENCH_LIMB_BONES - 1 && y > center)) wi = 1.0f;
        return wi;
    }
    const float d = fabsf(y - center) / bone_length;
    return 1.0f / (0.05f + d * d * d * d);
}

ssk_rig *bench_limb_create(uint32_t target, bench_limb_weights weights)
{
    const uint32_t segments = BENCH_LIMB_SEGMENTS;
    uint32_t rings = target / segments;
    if (rings < 2) rings = 2;
    const uint32_t nv = rings * segments, nf = 2 * (rings - 1) * segments;
    float *pos = malloc(3 * (size_t)nv * sizeof(float));
    int32_t *tri = malloc(3 * (size_t)nf * sizeof(int32_t));
    int32_t *idx = malloc((size_t)nv * BENCH_LIMB_INFLUENCES * sizeof(int32_t));
    float *w = malloc((size_t)nv * BENCH_LIMB_INFLUENCES * sizeof(float));
    if (!pos || !tri || !idx || !w) {
        fprintf(stderr, "bench_limb_create: out of memory for %u vertices\n", nv);
        free(pos);
        free(tri);
        free(idx);
        free(w);
        return NULL;
    }
    int32_t parents[BENCH_LIMB_BONES];
    float bind[16 * BENCH_LIMB_BONES];
    const float bone_length = BENCH_LIMB_LENGTH / BENCH_LIMB_BONES;
    for (int b = 0; b < BENCH_LIMB_BONES; ++b) {
        parents[b] = b - 1;
        bench_identity(bind + 16 * b);
        bind[16 * b + 7] = bone_length * (float)b;
    }
    for (uint32_t r = 0; r < rings; ++r) {
        const float y = BENCH_LIMB_LENGTH * (float)r / (float)(rings - 1);
        /* the 4 nearest bone centers */
        int nearest = (int)floorf(y / bone_length);
        if (nearest >= BENCH_LIMB_BONES) nearest = BENCH_LIMB_BONES - 1;
        int first = nearest - 1;
        if (first < 0) first = 0;
        if (first + BENCH_LIMB_INFLUENCES > BENCH_LIMB_BONES)
            first = BENCH_LIMB_BONES - BENCH_LIMB_INFLUENCES;
        for (uint32_t s = 0; s < segments; ++s) {
            const double a = 2 * BENCH_PI * s / segments;
            const size_t v = (size_t)r * segments + s;
            pos[3 * v] = (float)(BENCH_LIMB_RADIUS * cos(a));
            pos[3 * v + 1] = y;
            pos[3 * v + 2] = (float)(BENCH_LIMB_RADIUS * sin(a));
            float sum = 0;
            for (int i = 0; i < BENCH_LIMB_INFLUENCES; ++i) {
                const int b = first + i;
                const float center = bone_length * ((float)b + 0.5f);
                const float wi = limb_weight(weights, b, y, center, bone_length);
                idx[v * BENCH_LIMB_INFLUENCES + i] = b;
                w[v * BENCH_LIMB_INFLUENCES + i] = wi;
                sum += wi;
            }
            for (int i = 0; i < BENCH_LIMB_INFLUENCES; ++i) w[v * BENCH_LIMB_INFLUENCES + i] /= sum;
        }
    }
    size_t f = 0;
    for (uint32_t r = 0; r + 1 < rings; ++r)
        for (uint32_t s = 0; s < segments; ++s) {
            const int32_t a = (int32_t)(r * segments + s);
            const int32_t b = (int32_t)(r * segments + (s + 1) % segments);
            const int32_t c = a + (int32_t)segments, d = b + (int32_t)segments;
            int32_t *t = tri + 3 * f++;
            t[0] = a;
            t[1] = c;
            t[2] = b;
            t = tri + 3 * f++;
            t[0] = b;
            t[1] = c;
            t[2] = d;
        }
    ssk_skeleton_desc sk = {BENCH_LIMB_BONES, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md = {"limb", nv, pos, nf, tri, BENCH_LIMB_INFLUENCES, idx, w, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&rig, &sk, &md, 1, &err) != SSK_OK)
        fprintf(stderr, "bench_limb_create: %s\n", err.message);
    free(pos);
    free(tri);
    free(idx);
    free(w);
    return rig;
}

void bench_limb_pose(float skin[16 * BENCH_LIMB_BONES], double phase)
{
    float global[16 * BENCH_LIMB_BONES];
    const float bone_length = BENCH_LIMB_LENGTH / BENCH_LIMB_BONES;
    for (int b = 0; b < BENCH_LIMB_BONES; ++b) {
        float head[3] = {0, bone_length * (float)b, 0}, bend[16], twist[16], local[16];
        rotation_about(bend, 2, 0.3 * sin(phase + b), head);
        rotation_about(twist, 1, 0.4 * cos(phase + 0.5 * b), head);
        mul(local, bend, twist);
        if (b == 0)
            memcpy(global, local, sizeof local);
        else
            mul(global + 16 * b, global + 16 * (b - 1), local);
        /* skinning = global pose · inverse(bind) = global (see limb.h) */
        memcpy(skin + 16 * b, global + 16 * b, 16 * sizeof(float));
    }
}

void bench_limb_joint_pose(float skin[16 * BENCH_LIMB_BONES], int bone, int axis, double angle)
{
    const float head[3] = {0, BENCH_LIMB_LENGTH / BENCH_LIMB_BONES * (float)bone, 0};
    float r[16];
    rotation_about(r, axis, angle, head);
    for (int b = 0; b < BENCH_LIMB_BONES; ++b) {
        if (b >= bone)
            memcpy(skin + 16 * b, r, sizeof r);
        else
            bench_identity(skin + 16 * b);
    }
}

double bench_limb_frame_ms(const ssk_rig *rig, const ssk_deformer_desc *desc, int repeats,
                           double *create_s)
{
    ssk_deformer *d = NULL;
    ssk_error err = {0};
    const double c0 = bench_now();
    if (ssk_deformer_create(&d, rig, desc, &err) != SSK_OK) {
        fprintf(stderr, "bench: deformer: %s\n", err.message);
        exit(1);
    }
    if (create_s) *create_s = bench_now() - c0;
    const uint32_t nv = ssk_rig_vertex_count(rig);
    float *out = malloc(3 * (size_t)nv * sizeof(float));
    double *t = malloc((size_t)repeats * sizeof(double));
    float skin[16 * BENCH_LIMB_BONES];
    for (int r = -1; r < repeats; ++r) {
        bench_limb_pose(skin, 0.1 * (r + 1));
        const double t0 = bench_now();
        if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK) {
            fprintf(stderr, "bench: deform: %s\n", err.message);
            exit(1);
        }
        if (r >= 0) t[r] = bench_now() - t0;
    }
    qsort(t, (size_t)repeats, sizeof(double), bench_compare_double);
    const double ms = 1e3 * t[repeats / 2];
    free(out);
    free(t);
    ssk_deformer_destroy(d);
    return ms;
}
