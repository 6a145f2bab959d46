/*
 * bench_arap.c — ARAP on scale vectors (Toothman 2020, 4.1.1, Eq. 19-20;
 * core/kernels/arap.c) against IRS and the springs (issue #16: "timed
 * against IRS and the springs"), on the CPU.
 *
 * The limb of bench/limb.h, bound once with the defaults. Per size: the
 * time to create the ARAP solver (rest data and CHOLMOD's sparse Cholesky
 * factorization, once per rig), then the median time per frame (after one
 * untimed frame) of ssk_deformer graphs on the CPU, each posed with the
 * animation of bench_limb_pose: an "arap" node; IRS (--method irs); the
 * default springs (--method spring: IRS then the spring node).
 *
 * Usage: bench_arap [--sizes 10000,100000] [--repeats N]
 * Prints a Markdown table.
 */
#include "springskin.h"

#include "limb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double frame_ms(const ssk_rig *rig, const ssk_binding *binding, const ssk_graph *graph,
                       ssk_method method, int repeats)
{
    ssk_deformer_desc desc = {.method = method, .backend = SSK_BACKEND_CPU, .graph = graph,
                              .binding = binding};
    return bench_limb_frame_ms(rig, &desc, repeats, NULL);
}

int main(int argc, char **argv)
{
    uint32_t sizes[8] = {10000, 100000};
    int size_count = 2, repeats = 5;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            size_count = 0;
            for (char *tok = strtok(argv[++i], ","); tok && size_count < 8; tok = strtok(NULL, ","))
                sizes[size_count++] = (uint32_t)strtoul(tok, NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_arap [--sizes N,N,...] [--repeats N]\n");
            return 2;
        }
    }
    if (repeats < 1) repeats = 1;
    printf("| vertices | ARAP factorization ms | ARAP ms/frame | IRS ms/frame | springs "
           "(--method spring) ms/frame |\n");
    printf("|---:|---:|---:|---:|---:|\n");
    for (int si = 0; si < size_count; ++si) {
        ssk_rig *rig = bench_limb_create(sizes[si], BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
        if (!rig) return 1;
        ssk_error err = {0};
        ssk_binding *binding = NULL;
        ssk_bind_params bp;
        ssk_bind_params_default(&bp);
        if (ssk_binding_create(&binding, rig, &bp, &err) != SSK_OK) {
            fprintf(stderr, "bench_arap: %s\n", err.message);
            return 1;
        }
        ssk_arap_params ap;
        ssk_arap_params_default(&ap);
        ssk_arap *arap = NULL;
        const double t0 = bench_now();
        if (ssk_arap_create(&arap, rig, binding, &ap, &err) != SSK_OK) {
            fprintf(stderr, "bench_arap: %s\n", err.message);
            return 1;
        }
        const double factor_ms = 1e3 * (bench_now() - t0);
        ssk_arap_destroy(arap);
        ssk_graph *g = NULL;
        const char *json = "{\"version\": 1, \"nodes\": [{\"id\": \"a\", \"type\": \"arap\"}, "
                           "{\"id\": \"out\", \"type\": \"output\"}], \"edges\": "
                           "[{\"from\": \"a\", \"to\": \"out\"}]}";
        if (ssk_graph_parse(&g, json, rig, &err) != SSK_OK) {
            fprintf(stderr, "bench_arap: %s\n", err.message);
            return 1;
        }
        const double arap_ms = frame_ms(rig, binding, g, SSK_METHOD_LBS, repeats);
        const double irs_ms = frame_ms(rig, binding, NULL, SSK_METHOD_IRS, repeats);
        const double spring_ms = frame_ms(rig, binding, NULL, SSK_METHOD_SPRING, repeats);
        printf("| %u | %.1f | %.2f | %.2f | %.2f |\n", ssk_rig_vertex_count(rig), factor_ms,
               arap_ms, irs_ms, spring_ms);
        fflush(stdout);
        ssk_graph_destroy(g);
        ssk_binding_destroy(binding);
        ssk_rig_destroy(rig);
    }
    return 0;
}
