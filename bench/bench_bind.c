/*
 * bench_bind.c — attachment binding time (ssk_binding_create) on a real
 * character and a generated limb.
 *
 * Rigs: Assimp's BCN_Epileptic.X (Debian assimp-testmodels; 3 meshes,
 * 54 bones) imported with ssk_scene_import, and a generated limb of about
 * --vertices vertices (default 100000): a tube along +Y, 64 vertices per
 * ring, split into a chain of 8 bones, 4 influences per vertex (the 4
 * nearest bone centers, inverse-distance weights), made by bench/limb.c.
 * Each of DIRECT, WEIGHTS and PLANAR is bound with 6 smoothing
 * iterations; one untimed binding first, then the median wall time of
 * --repeats bindings (whole ssk_binding_create call: checks, projections,
 * smoothing, rig hash).
 *
 * Usage: bench_bind [--vertices N] [--repeats N] [--model PATH]
 * Prints a Markdown table: rig, vertices, bones, method, ms.
 */
#include "springskin.h"

#include "limb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_DEFAULT_VERTICES 100000u
#define BENCH_DEFAULT_REPEATS 7
#define BENCH_SMOOTH_ITERATIONS 6
#define BENCH_MODEL "/usr/share/assimp/models/X/BCN_Epileptic.X"

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
        double t0 = bench_now();
        ssk_status s = ssk_binding_create(&binding, rig, &params, &err);
        double t1 = bench_now();
        if (s != SSK_OK) {
            fprintf(stderr, "bench_bind: %s: %s\n", ssk_bind_method_name(method), err.message);
            free(ms);
            return -1.0;
        }
        ssk_binding_destroy(binding);
        if (i >= 0) ms[i] = (t1 - t0) * 1e3;
    }
    qsort(ms, (size_t)repeats, sizeof *ms, bench_compare_double);
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
    if (repeats < 1 || vertices < 2 * BENCH_LIMB_SEGMENTS || vertices > 100000000ul) {
        fprintf(stderr, "bench_bind: --repeats must be >= 1 and --vertices in [%d, 1e8]\n",
                2 * BENCH_LIMB_SEGMENTS);
        return 2;
    }
    ssk_threading threading;
    ssk_threading_get(&threading);
    printf("attachment binding, %d smoothing iterations, median of %d runs, %u threads\n\n",
           BENCH_SMOOTH_ITERATIONS, repeats, threading.threads);
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
    ssk_rig *limb = bench_limb_create((uint32_t)vertices, BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
    if (!limb) return 1;
    rc |= bench_rig("generated limb", limb, repeats);
    ssk_rig_destroy(limb);
    return rc;
}
