/*
 * bench_spring.c — per-frame time of the spring deformer on the CPU
 * (Toothman 2020, 4.2; Table 1 measures the same thing on a GPU).
 *
 * The limb of bench_skinning.c: a tube along +Y of 64-vertex rings split
 * into a chain of 8 bones, 4 skin weights per vertex (used only by the
 * default weight-guided binding here), posed with every joint bent about Z
 * and twisted about Y. Per frame: ssk_attach_prepare, the rigid first stage
 * (ssk_rigid_deform) and ssk_spring_solve with the default parameters but
 * a fixed iteration count (SSK_CONVERGE_ITERATIONS, 50 by default), so
 * every frame does the same work. The binding is made once before timing;
 * one untimed frame warms up; the median of the repeats is reported.
 *
 * Usage: bench_spring [--sizes 10000,100000] [--repeats N] [--iterations N]
 * Prints a Markdown table: vertices, iterations, ms/frame, ms/iteration
 * (solve only), the first stage's ms, and the solver's bytes per vertex.
 */
#include "springskin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_BONES 8
#define BENCH_INFLUENCES 4
#define BENCH_SEGMENTS 64
#define BENCH_LENGTH 8.0f
#define BENCH_RADIUS 0.5f
#define BENCH_PI 3.14159265358979323846

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void rotation_about(float m[16], int axis, double angle, const float pivot[3])
{
    double c = cos(angle), s = sin(angle);
    double r[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    int a = (axis + 1) % 3, b = (axis + 2) % 3;
    r[a * 3 + a] = c;
    r[a * 3 + b] = -s;
    r[b * 3 + a] = s;
    r[b * 3 + b] = c;
    memset(m, 0, 16 * sizeof(float));
    m[15] = 1;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) m[i * 4 + j] = (float)r[i * 3 + j];
        m[i * 4 + 3] = (float)(pivot[i] - (r[i * 3] * pivot[0] + r[i * 3 + 1] * pivot[1] +
                                            r[i * 3 + 2] * pivot[2]));
    }
}

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

/* The limb of bench_skinning.c with about `target` vertices. */
static ssk_rig *make_limb(uint32_t target)
{
    const uint32_t segments = BENCH_SEGMENTS, rings = target / segments;
    const uint32_t nv = rings * segments, nf = 2 * (rings - 1) * segments;
    float *pos = malloc(3 * (size_t)nv * sizeof(float));
    int32_t *tri = malloc(3 * (size_t)nf * sizeof(int32_t));
    int32_t *idx = malloc((size_t)nv * BENCH_INFLUENCES * sizeof(int32_t));
    float *w = malloc((size_t)nv * BENCH_INFLUENCES * sizeof(float));
    int32_t parents[BENCH_BONES];
    float bind[16 * BENCH_BONES];
    const float bone_length = BENCH_LENGTH / BENCH_BONES;
    if (!pos || !tri || !idx || !w) return NULL;
    for (int b = 0; b < BENCH_BONES; ++b) {
        parents[b] = b - 1;
        memset(bind + 16 * b, 0, 16 * sizeof(float));
        bind[16 * b] = bind[16 * b + 5] = bind[16 * b + 10] = bind[16 * b + 15] = 1;
        bind[16 * b + 7] = bone_length * (float)b;
    }
    for (uint32_t r = 0; r < rings; ++r) {
        const float y = BENCH_LENGTH * (float)r / (float)(rings - 1);
        for (uint32_t s = 0; s < segments; ++s) {
            const double a = 2 * BENCH_PI * s / segments;
            const size_t v = (size_t)r * segments + s;
            pos[3 * v] = (float)(BENCH_RADIUS * cos(a));
            pos[3 * v + 1] = y;
            pos[3 * v + 2] = (float)(BENCH_RADIUS * sin(a));
            int nearest = (int)floorf(y / bone_length);
            if (nearest >= BENCH_BONES) nearest = BENCH_BONES - 1;
            int first = nearest - 1;
            if (first < 0) first = 0;
            if (first + BENCH_INFLUENCES > BENCH_BONES) first = BENCH_BONES - BENCH_INFLUENCES;
            float sum = 0;
            for (int i = 0; i < BENCH_INFLUENCES; ++i) {
                const float center = bone_length * ((float)(first + i) + 0.5f);
                const float d = fabsf(y - center) / bone_length;
                const float wi = 1.0f / (0.05f + d * d * d * d);
                idx[v * BENCH_INFLUENCES + i] = first + i;
                w[v * BENCH_INFLUENCES + i] = wi;
                sum += wi;
            }
            for (int i = 0; i < BENCH_INFLUENCES; ++i) w[v * BENCH_INFLUENCES + i] /= sum;
        }
    }
    size_t f = 0;
    for (uint32_t r = 0; r + 1 < rings; ++r)
        for (uint32_t s = 0; s < segments; ++s) {
            const int32_t a = (int32_t)(r * segments + s);
            const int32_t b = (int32_t)(r * segments + (s + 1) % segments);
            const int32_t c = a + (int32_t)segments, d = b + (int32_t)segments;
            int32_t *t = tri + 3 * f++;
            t[0] = a; t[1] = c; t[2] = b;
            t = tri + 3 * f++;
            t[0] = b; t[1] = c; t[2] = d;
        }
    ssk_skeleton_desc sk = {BENCH_BONES, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md = {"limb", nv, pos, nf, tri, BENCH_INFLUENCES, idx, w, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&rig, &sk, &md, 1, &err) != SSK_OK)
        fprintf(stderr, "bench_spring: %s\n", err.message);
    free(pos);
    free(tri);
    free(idx);
    free(w);
    return rig;
}

/* Every joint bends about Z and twists about Y by amounts varying with
 * `phase` (bench_skinning.c's pose). */
static void pose(float *skin, double phase)
{
    float global[16 * BENCH_BONES];
    const float bone_length = BENCH_LENGTH / BENCH_BONES;
    for (int b = 0; b < BENCH_BONES; ++b) {
        float head[3] = {0, bone_length * (float)b, 0}, bend[16], twist[16], local[16];
        rotation_about(bend, 2, 0.3 * sin(phase + b), head);
        rotation_about(twist, 1, 0.4 * cos(phase + 0.5 * b), head);
        mul(local, bend, twist);
        if (b == 0)
            memcpy(global, local, sizeof local);
        else
            mul(global + 16 * b, global + 16 * (b - 1), local);
        memcpy(skin + 16 * b, global + 16 * b, 16 * sizeof(float));
    }
}

int main(int argc, char **argv)
{
    uint32_t sizes[8] = {10000, 100000};
    int size_count = 2, repeats = 5;
    uint32_t iterations = 50;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            size_count = 0;
            for (char *tok = strtok(argv[++i], ","); tok && size_count < 8; tok = strtok(NULL, ","))
                sizes[size_count++] = (uint32_t)strtoul(tok, NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            iterations = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: bench_spring [--sizes N,N,...] [--repeats N] "
                            "[--iterations N]\n");
            return 2;
        }
    }
    if (repeats < 1) repeats = 1;
    printf("| vertices | iterations | ms/frame (median) | ms/iteration | first stage ms | "
           "bytes/vertex |\n");
    printf("|---:|---:|---:|---:|---:|---:|\n");
    for (int si = 0; si < size_count; ++si) {
        ssk_rig *rig = make_limb(sizes[si]);
        if (!rig) return 1;
        const uint32_t nv = ssk_rig_vertex_count(rig);
        ssk_error err = {0};
        ssk_binding *binding = NULL;
        ssk_bind_params bind_params;
        ssk_bind_params_default(&bind_params);
        if (ssk_binding_create(&binding, rig, &bind_params, &err) != SSK_OK) {
            fprintf(stderr, "bench_spring: %s\n", err.message);
            return 1;
        }
        ssk_binding_view bv;
        ssk_binding_get(binding, &bv, NULL);
        ssk_spring_params params;
        ssk_spring_params_default(&params);
        params.convergence = SSK_CONVERGE_ITERATIONS;
        params.max_iterations = iterations;
        ssk_spring *spring = NULL;
        if (ssk_spring_create(&spring, rig, binding, &params, NULL, 0, &err) != SSK_OK) {
            fprintf(stderr, "bench_spring: %s\n", err.message);
            return 1;
        }
        float *pos = malloc(3 * (size_t)nv * sizeof(float));
        ssk_attach_bone bones[BENCH_BONES];
        float skin[16 * BENCH_BONES];
        double *frame_t = malloc((size_t)repeats * sizeof(double));
        double *solve_t = malloc((size_t)repeats * sizeof(double));
        double *first_t = malloc((size_t)repeats * sizeof(double));
        ssk_spring_report rep = {0};
        for (int r = -1; r < repeats; ++r) { /* r = -1: warm-up */
            pose(skin, 0.1 * (r + 1));
            const double t0 = now();
            if (ssk_attach_prepare(bones, rig, skin, NULL, &err) != SSK_OK) {
                fprintf(stderr, "bench_spring: %s\n", err.message);
                return 1;
            }
            ssk_rigid_deform(pos, nv, bv.bones, bv.t, bv.scale_vectors, bones);
            const double t1 = now();
            const ssk_status st = ssk_spring_solve(spring, pos, bones, skin, r + 1, &rep, &err);
            const double t2 = now();
            if (st != SSK_OK) {
                fprintf(stderr, "bench_spring: %s\n", err.message);
                return 1;
            }
            if (r >= 0) {
                frame_t[r] = t2 - t0;
                solve_t[r] = t2 - t1;
                first_t[r] = t1 - t0;
            }
        }
        qsort(frame_t, (size_t)repeats, sizeof(double), compare_double);
        qsort(solve_t, (size_t)repeats, sizeof(double), compare_double);
        qsort(first_t, (size_t)repeats, sizeof(double), compare_double);
        printf("| %u | %u | %.2f | %.3f | %.2f | %zu |\n", nv, rep.iterations,
               1e3 * frame_t[repeats / 2], 1e3 * solve_t[repeats / 2] / rep.iterations,
               1e3 * first_t[repeats / 2], ssk_spring_bytes_per_vertex(spring));
        fflush(stdout);
        free(pos);
        free(frame_t);
        free(solve_t);
        free(first_t);
        ssk_spring_destroy(spring);
        ssk_binding_destroy(binding);
        ssk_rig_destroy(rig);
    }
    return 0;
}
