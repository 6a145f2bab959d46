/*
 * bench_implicit.c — implicit skinning (Vaillant 2015, chapter 4; issue
 * #20) against DQS, its first stage, on the limb of bench/limb.h.
 *
 * Per size: the composition operators' build (ssk_implicit_operators, once
 * per process: 4.5.1's two 128^3 grids), the bind of the implicit node
 * (deformer creation with the operators given: the fields' HRBF fits and
 * 32^3 grids of 4.4, the rest iso-values, mean value coordinates), then the
 * median time per frame (after one untimed frame) of DQS and of --method
 * implicit (DQS, then the tracking of 4.6.2) on each backend asked for,
 * posed with the animation of bench_limb_pose. The default size, 31,750
 * vertices, is the paper's Hand (Table 4.1: 15 fps on a GTX 680).
 *
 * Usage: bench_implicit [--sizes 31750] [--repeats N] [--backends cpu,gl]
 * Prints a Markdown table.
 */
#include "springskin.h"

#include "limb.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 8

static void die(const char *what, const ssk_error *err)
{
    fprintf(stderr, "bench_implicit: %s: %s\n", what, err->message);
    exit(1);
}

/* Median milliseconds per frame of `method` on `backend` (limb.h). */
static double frame_ms(const ssk_rig *rig, ssk_method method, ssk_backend backend,
                       const ssk_implicit_operators *ops, ssk_gl_context *gl, int repeats,
                       double *create_s)
{
    ssk_deformer_desc desc = {.method = method, .backend = backend, .gl_context = gl,
                              .implicit_operators = ops};
    return bench_limb_frame_ms(rig, &desc, repeats, create_s);
}

int main(int argc, char **argv)
{
    uint32_t sizes[MAX_SIZES] = {31750};
    int size_count = 1, repeats = 21;
    bool backends[SSK_BACKEND_COUNT] = {[SSK_BACKEND_CPU] = true};
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            size_count = 0;
            for (char *s = strtok(argv[++i], ","); s && size_count < MAX_SIZES; s = strtok(NULL, ","))
                sizes[size_count++] = (uint32_t)strtoul(s, NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
            if (repeats < 1) repeats = 1;
        } else if (strcmp(argv[i], "--backends") == 0 && i + 1 < argc) {
            memset(backends, 0, sizeof backends);
            for (char *s = strtok(argv[++i], ","); s; s = strtok(NULL, ",")) {
                ssk_backend b;
                ssk_error err = {0};
                if (ssk_backend_parse(&b, s, &err) != SSK_OK) die("--backends", &err);
                backends[b] = true;
            }
        } else {
            fprintf(stderr,
                    "usage: bench_implicit [--sizes 31750] [--repeats N] [--backends cpu,gl]\n");
            return 2;
        }
    }
    ssk_error err = {0};
    const double o0 = bench_now();
    ssk_implicit_operators *ops = NULL;
    if (ssk_implicit_operators_create(&ops, 0, &err) != SSK_OK) die("operators", &err);
    printf("composition operators (2 x %u^3, once per process): %.3f s\n\n",
           SSK_IMPLICIT_OPERATOR_RESOLUTION, bench_now() - o0);
    ssk_gl_context *gl = NULL;
    if (backends[SSK_BACKEND_GL] && ssk_gl_context_create(&gl, &err) != SSK_OK) {
        fprintf(stderr, "bench_implicit: no GL (%s): GL rows skipped\n", err.message);
        backends[SSK_BACKEND_GL] = false;
    }
    printf("| vertices | backend | bind s (fields, grids, iso, MVC) | DQS ms/frame | implicit "
           "ms/frame | implicit / DQS | fps |\n|---:|---|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < size_count; ++k) {
        ssk_rig *rig = bench_limb_create(sizes[k], BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
        if (!rig) return 1;
        for (int b = SSK_BACKEND_CPU; b < SSK_BACKEND_COUNT; ++b) {
            if (!backends[b]) continue;
            double bind_s = 0.0;
            const double dqs = frame_ms(rig, SSK_METHOD_DQS, (ssk_backend)b, ops, gl, repeats, NULL);
            const double imp =
                frame_ms(rig, SSK_METHOD_IMPLICIT, (ssk_backend)b, ops, gl, repeats, &bind_s);
            printf("| %u | %s | %.3f | %.3f | %.2f | %.0f | %.1f |\n", ssk_rig_vertex_count(rig),
                   ssk_backend_name((ssk_backend)b), bind_s, dqs, imp, imp / dqs, 1e3 / imp);
            fflush(stdout);
        }
        ssk_rig_destroy(rig);
    }
    ssk_gl_context_destroy(gl);
    ssk_implicit_operators_destroy(ops);
    return 0;
}
