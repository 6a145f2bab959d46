/*
 * bench_bind.c — attachment binding time (ssk_binding_create) on a real
 * character and a generated limb.
 *
 * Rigs: Assimp's BCN_Epileptic.X (Debian assimp-testmodels; 3 meshes,
 * 54 bones) imported with ssk_scene_import, and a generated limb of about
 * --vertices vertices (default 100000): a tube along +Y, 64 vertices per
 * ring, split into a chain of 8 bones, 4 influences per vertex (the 4
 * nearest bone centers, inverse-distance weights), as bench_skinning.c
 * builds it. Each of DIRECT, WEIGHTS and PLANAR is bound with 6 smoothing
 * iterations; one untimed binding first, then the median wall time of
 * --repeats bindings (whole ssk_binding_create call: checks, projections,
 * smoothing, rig hash).
 *
 * Usage: bench_bind [--vertices N] [--repeats N] [--model PATH]
 * Prints a Markdown table: rig, vertices, bones, method, ms.
 */
#include "springskin.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_BONES 8
#define BENCH_INFLUENCES 4
#define BENCH_SEGMENTS 64
#define BENCH_PI 3.14159265358979323846
#define BENCH_DEFAULT_VERTICES 100000u
#define BENCH_DEFAULT_REPEATS 7
#define BENCH_SMOOTH_ITERATIONS 6
#define BENCH_MODEL "/usr/share/assimp/models/X/BCN_Epileptic.X"

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

/* The limb of bench_skinning.c with about `target` vertices. */
static ssk_rig *make_limb(uint32_t target)
{
    uint32_t segments = BENCH_SEGMENTS;
    uint32_t rings = target / segments;
    if (rings < 2) rings = 2;
    uint32_t nv = rings * segments;
    uint32_t nf = 2 * (rings - 1) * segments;
    float *pos = malloc(3 * (size_t)nv * sizeof(float));
    int32_t *tri = malloc(3 * (size_t)nf * sizeof(int32_t));
    int32_t *idx = malloc((size_t)nv * BENCH_INFLUENCES * sizeof(int32_t));
    float *w = malloc((size_t)nv * BENCH_INFLUENCES * sizeof(float));
    if (!pos || !tri || !idx || !w) {
        free(pos);
        free(tri);
        free(idx);
        free(w);
        return NULL;
    }
    int32_t parents[BENCH_BONES];
    float bind[16 * BENCH_BONES];
    const float length = 8.0f, bone_length = length / BENCH_BONES;
    for (int b = 0; b < BENCH_BONES; ++b) {
        parents[b] = b - 1;
        memset(bind + 16 * b, 0, 16 * sizeof(float));
        bind[16 * b] = bind[16 * b + 5] = bind[16 * b + 10] = bind[16 * b + 15] = 1;
        bind[16 * b + 7] = bone_length * (float)b;
    }
    for (uint32_t r = 0; r < rings; ++r) {
        float y = length * (float)r / (float)(rings - 1);
        int nearest = (int)floorf(y / bone_length);
        if (nearest >= BENCH_BONES) nearest = BENCH_BONES - 1;
        int first = nearest - 1;
        if (first < 0) first = 0;
        if (first + BENCH_INFLUENCES > BENCH_BONES) first = BENCH_BONES - BENCH_INFLUENCES;
        for (uint32_t s = 0; s < segments; ++s) {
            double a = 2 * BENCH_PI * s / segments;
            size_t v = (size_t)r * segments + s;
            pos[3 * v] = (float)(0.5 * cos(a));
            pos[3 * v + 1] = y;
            pos[3 * v + 2] = (float)(0.5 * sin(a));
            float sum = 0;
            for (int i = 0; i < BENCH_INFLUENCES; ++i) {
                float center = bone_length * ((float)(first + i) + 0.5f);
                float d = fabsf(y - center) / bone_length;
                float wi = 1.0f / (0.05f + d * d * d * d);
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
            int32_t a = (int32_t)(r * segments + s);
            int32_t b = (int32_t)(r * segments + (s + 1) % segments);
            int32_t c = a + (int32_t)segments, d = b + (int32_t)segments;
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
        fprintf(stderr, "bench_bind: %s\n", err.message);
    free(pos);
    free(tri);
    free(idx);
    free(w);
    return rig;
}

/* Median wall milliseconds of `repeats` bindings after an untimed one; a
 * negative value after printing the error. */
static double time_binding(const ssk_rig *rig, ssk_bind_method method, int repeats)
{
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    params.method = method;
    params.smooth_iterations = BENCH_SMOOTH_ITERATIONS;
    double *ms = malloc((size_t)repeats * sizeof *ms);
    if (!ms) return -1.0;
    ssk_error err = {0};
    for (int i = -1; i < repeats; ++i) {
        ssk_binding *binding = NULL;
        double t0 = now();
        ssk_status s = ssk_binding_create(&binding, rig, &params, &err);
        double t1 = now();
        if (s != SSK_OK) {
            fprintf(stderr, "bench_bind: %s: %s\n", ssk_bind_method_name(method), err.message);
            free(ms);
            return -1.0;
        }
        ssk_binding_destroy(binding);
        if (i >= 0) ms[i] = (t1 - t0) * 1e3;
    }
    qsort(ms, (size_t)repeats, sizeof *ms, compare_double);
    double median = ms[repeats / 2];
    free(ms);
    return median;
}

static int bench_rig(const char *name, const ssk_rig *rig, int repeats)
{
    static const ssk_bind_method methods[] = {SSK_BIND_DIRECT, SSK_BIND_WEIGHTS,
                                              SSK_BIND_PLANAR};
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; ++m) {
        double ms = time_binding(rig, methods[m], repeats);
        if (ms < 0) return 1;
        printf("| %s | %u | %u | %s | %.2f |\n", name, (unsigned)ssk_rig_vertex_count(rig),
               (unsigned)ssk_rig_bone_count(rig), ssk_bind_method_name(methods[m]), ms);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long vertices = BENCH_DEFAULT_VERTICES;
    int repeats = BENCH_DEFAULT_REPEATS;
    const char *model = BENCH_MODEL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--vertices") == 0 && i + 1 < argc) {
            vertices = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            model = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_bind [--vertices N] [--repeats N] [--model PATH]\n");
            return 2;
        }
    }
    if (repeats < 1 || vertices < 2 * BENCH_SEGMENTS || vertices > 100000000ul) {
        fprintf(stderr, "bench_bind: --repeats must be >= 1 and --vertices in [%d, 1e8]\n",
                2 * BENCH_SEGMENTS);
        return 2;
    }
    printf("attachment binding, %d smoothing iterations, median of %d runs, %d threads\n\n",
           BENCH_SMOOTH_ITERATIONS, repeats, omp_get_max_threads());
    printf("| rig | vertices | bones | method | ms |\n");
    printf("|---|---:|---:|---|---:|\n");
    int rc = 0;
    ssk_error err = {0};
    ssk_scene *scene = NULL;
    if (ssk_scene_import(&scene, model, &err) != SSK_OK) {
        fprintf(stderr, "bench_bind: %s (skipping the model)\n", err.message);
        rc = 1;
    } else {
        const char *base = strrchr(model, '/');
        rc |= bench_rig(base ? base + 1 : model, ssk_scene_rig(scene), repeats);
        ssk_scene_destroy(scene);
    }
    ssk_rig *limb = make_limb((uint32_t)vertices);
    if (!limb) return 1;
    rc |= bench_rig("generated limb", limb, repeats);
    ssk_rig_destroy(limb);
    return rc;
}
