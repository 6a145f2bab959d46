/*
 * bench_skinning.c — per-frame LBS and DQS time on generated limbs.
 *
 * A limb is a tube along +Y split into a chain of bones; every vertex has 4
 * influences (the 4 nearest bone centers, weights falling off with distance
 * and normalized), as a production character would (bench/limb.h). The pose
 * bends every joint and twists along the chain. Timing is warm (one untimed
 * frame first) and the median of repeated frames; each frame re-prepares
 * bone data, as a bake does.
 *
 * Usage: bench_skinning [--sizes 10000,100000,1000000] [--repeats N]
 *                       [--backends cpu,gl]
 * Methods: LBS, DQS, rigid attachment and IRS (with the default binding,
 * made once before timing, and the default length adjustment).
 * Prints a Markdown table: vertices, backend, method, ms/frame (whole
 * ssk_deformer_deform call), M vertices/s, and the median upload, compute
 * and readback times that the backend reports (GL: bone data upload,
 * dispatch until finished, readback of positions).
 */
#include "springskin.h"

#include "limb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    uint32_t sizes[8] = {10000, 100000, 1000000};
    int size_count = 3, repeats = 0;
    ssk_backend backends[2] = {SSK_BACKEND_CPU, SSK_BACKEND_GL};
    int backend_count = 1;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            size_count = 0;
            for (char *tok = strtok(argv[++i], ","); tok && size_count < 8; tok = strtok(NULL, ","))
                sizes[size_count++] = (uint32_t)strtoul(tok, NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--backends") == 0 && i + 1 < argc) {
            backend_count = 0;
            for (char *tok = strtok(argv[++i], ","); tok && backend_count < 2; tok = strtok(NULL, ","))
                if (ssk_backend_parse(&backends[backend_count], tok, NULL) == SSK_OK)
                    backend_count++;
        } else {
            fprintf(stderr, "usage: bench_skinning [--sizes N,N,...] [--repeats N] [--backends cpu,gl]\n");
            return 2;
        }
    }
    ssk_gl_context *gl = NULL;
    for (int b = 0; b < backend_count; ++b)
        if (backends[b] == SSK_BACKEND_GL) {
            ssk_error err = {0};
            if (ssk_gl_context_create(&gl, &err) != SSK_OK) {
                fprintf(stderr, "bench_skinning: GL backend skipped: %s\n", err.message);
            } else {
                ssk_gl_info info;
                ssk_gl_context_info(gl, &info, NULL);
                fprintf(stderr, "GL renderer: %s (%s), platform %s\n", info.renderer,
                        info.version, info.platform);
            }
        }
    printf("| vertices | backend | method | ms/frame (median) | M vertices/s | upload ms | compute ms | readback ms |\n");
    printf("|---:|---|---|---:|---:|---:|---:|---:|\n");
    for (int si = 0; si < size_count; ++si) {
        ssk_rig *rig = bench_limb_create(sizes[si], BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
        if (!rig) return 1;
        uint32_t nv = ssk_rig_vertex_count(rig);
        float *out = malloc(3 * (size_t)nv * sizeof(float));
        for (int bi = 0; bi < backend_count; ++bi) {
            if (backends[bi] == SSK_BACKEND_GL && !gl) continue;
            const int software_gl = backends[bi] == SSK_BACKEND_GL;
            int reps = repeats > 0 ? repeats
                                   : (nv >= 1000000 ? 31 : nv >= 100000 ? 101 : 301) /
                                         (software_gl ? 10 : 1) + 1;
            double *times = malloc((size_t)reps * 4 * sizeof(double));
            double median[SSK_METHOD_COUNT];
            for (int m = 0; m < SSK_METHOD_COUNT; ++m) {
                /* CoR: bench_cor (its centers would be computed here first,
                 * and this limb's 4 non-zero weights everywhere make that
                 * slow at 1M vertices) */
                if (m == SSK_METHOD_COR) continue;
                ssk_deformer *d = NULL;
                ssk_deformer_desc desc = {.method = (ssk_method)m, .backend = backends[bi],
                                          .gl_context = gl};
                ssk_error err = {0};
                if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) {
                    fprintf(stderr, "bench_skinning: %s\n", err.message);
                    return 1;
                }
                float skin[16 * BENCH_LIMB_BONES];
                bench_limb_pose(skin, 0.0);
                ssk_deformer_deform(d, out, skin, NULL, &err); /* warm-up */
                double *wall = times, *up = times + reps, *comp = times + 2 * reps,
                       *back = times + 3 * reps;
                for (int r = 0; r < reps; ++r) {
                    bench_limb_pose(skin, 0.1 * r);
                    double t0 = bench_now();
                    if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK) {
                        fprintf(stderr, "bench_skinning: %s\n", err.message);
                        return 1;
                    }
                    wall[r] = bench_now() - t0;
                    ssk_deform_timing t;
                    ssk_deformer_timing(d, &t);
                    up[r] = t.upload_seconds;
                    comp[r] = t.compute_seconds;
                    back[r] = t.readback_seconds;
                }
                for (int k = 0; k < 4; ++k)
                    qsort(times + k * reps, (size_t)reps, sizeof(double), bench_compare_double);
                median[m] = wall[reps / 2];
                printf("| %u | %s | %s | %.3f | %.1f | %.3f | %.3f | %.3f |\n", nv,
                       ssk_backend_name(backends[bi]), ssk_method_name((ssk_method)m),
                       1e3 * median[m], nv / median[m] / 1e6, 1e3 * up[reps / 2],
                       1e3 * comp[reps / 2], 1e3 * back[reps / 2]);
                fflush(stdout);
                ssk_deformer_destroy(d);
            }
            fprintf(stderr, "%u vertices, %s: DQS / LBS = %.2f, rigid / LBS = %.2f, IRS / LBS = %.2f\n",
                    nv, ssk_backend_name(backends[bi]), median[SSK_METHOD_DQS] / median[SSK_METHOD_LBS],
                    median[SSK_METHOD_RIGID] / median[SSK_METHOD_LBS],
                    median[SSK_METHOD_IRS] / median[SSK_METHOD_LBS]);
            free(times);
        }
        free(out);
        ssk_rig_destroy(rig);
    }
    ssk_gl_context_destroy(gl);
    return 0;
}
