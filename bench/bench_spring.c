/*
 * bench_spring.c — per-frame time of the spring deformer on the CPU
 * (Toothman 2020, 4.2; Table 1 measures the same thing on a GPU).
 *
 * The limb of bench/limb.h (as bench_skinning's): a tube along +Y of
 * 64-vertex rings split into a chain of 8 bones, 4 skin weights per vertex
 * (used only by the default weight-guided binding here), posed with every
 * joint bent about Z and twisted about Y. Per frame: ssk_attach_prepare, the
 * rigid first stage (ssk_rigid_deform) and ssk_spring_solve with the default
 * parameters but a fixed iteration count (SSK_CONVERGE_ITERATIONS, 50 by
 * default), so every frame does the same work. The binding is made once
 * before timing; one untimed frame warms up; the median of the repeats is
 * reported.
 *
 * Usage: bench_spring [--sizes 10000,100000] [--repeats N] [--iterations N]
 *                     [--backend cpu|gl]
 *        bench_spring --files A.fbx,B.glb,...
 * Per size, in one run, the default spring model (ssk_spring_params_default:
 * anchors per skin weight influence, the detail force, short-edge
 * clusters) with each solver: jacobi (the plain update), chebyshev (its
 * blended passes read the previous iterate too) and multilevel (the
 * default: Chebyshev plus the coarse correction,
 * core/kernels/spring_multilevel.c), then "paper" (the binding's anchors,
 * no detail force, jacobi), the four interleaved within each repeat.
 * Prints a Markdown table: model, solver,
 * vertices, iterations, ms/frame, ms/iteration (solve only; the median and
 * the best repeat, the least disturbed by the machine's other work) and
 * their ratios to jacobi's of the same size, the first stage's ms, ssk_spring_create's
 * ms (the multilevel curvatures are probed there) and the solver's bytes
 * per vertex.
 *
 * Then the time to a converged frame as a user gets it: an ssk_deformer of
 * --method spring (IRS first stage, the default springs, the default
 * convergence test and iteration cap) on the CPU, or GL with --backend gl,
 * with each solver (a graph naming it), per pose of the limb: the
 * animation pose above, the middle joint (bone 4) bent 135 degrees, and
 * twisted 180 degrees; median and best ms per frame, iterations, converged.
 * Then the same in frame-dependent mode (Toothman 2020, 6.1: each frame
 * starts from the previous frame's equilibrium) over an animation of
 * consecutive frames, bench_limb_pose(0.3 + 0.05 f), f = 0 .. --repeats
 * (frame 0, from the first stage, untimed): median and best ms per frame,
 * the median iterations per frame (the largest in brackets), and whether
 * every frame converged.
 *
 * With --files (comma-separated paths Assimp reads): no timing, only the
 * spring state memory of real rigs (issue #16: at most 256 bytes per
 * vertex), a Markdown table of file, vertices, bones (deforming) and
 * ssk_spring_bytes_per_vertex with each solver of the default model and
 * the paper's, each file with its default binding.
 */
#include "springskin.h"

#include "limb.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parameters of model m: the defaults with the solver jacobi (0),
 * chebyshev (1) or multilevel (2), the paper's model (3: the binding's
 * anchors, no detail force, jacobi), or the defaults' CPU solver, the
 * multigrid (4). */
static void model_params(ssk_spring_params *params, int m)
{
    const int solver = m == 3 ? 0 : m;
    ssk_spring_params_default(params);
    if (m == 4) {
        ssk_spring_params_resolve(params, SSK_BACKEND_CPU);
        return;
    }
    params->chebyshev_rho = solver == 0   ? 0.0f
                            : solver == 1 ? SSK_SPRING_CHEBYSHEV_RHO_ALONE
                                          : params->chebyshev_rho;
    params->multilevel = solver == 2;
    if (m == 3) {
        params->attachment = SSK_ATTACHMENT_BINDING;
        params->stiffness[SSK_FORCE_DETAIL] = 0.0f;
    }
}

/* --files: the state memory per file and solver (see above). */
static int memory_table(char *files)
{
    static const char *const models[5] = {"jacobi", "chebyshev", "multilevel", "paper (jacobi)",
                                          "multigrid"};
    printf("| file | vertices | bones (deforming) | jacobi | chebyshev | multilevel | paper | "
           "multigrid |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (char *path = strtok(files, ","); path; path = strtok(NULL, ",")) {
        ssk_error err = {0};
        ssk_scene *scene = NULL;
        ssk_binding *binding = NULL;
        ssk_bind_params bind_params;
        ssk_bind_params_default(&bind_params);
        if (ssk_scene_import(&scene, path, &err) != SSK_OK ||
            ssk_binding_create(&binding, ssk_scene_rig(scene), &bind_params, &err) != SSK_OK) {
            fprintf(stderr, "bench_spring: %s\n", err.message);
            ssk_scene_destroy(scene);
            return 1;
        }
        const ssk_rig *rig = ssk_scene_rig(scene);
        const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        printf("| %s | %u | %u (%u) |", name, ssk_rig_vertex_count(rig), ssk_rig_bone_count(rig),
               ssk_rig_deforming_bone_count(rig));
        for (int m = 0; m < 5; ++m) {
            ssk_spring_params params;
            model_params(&params, m);
            ssk_spring *spring = NULL;
            if (ssk_spring_create(&spring, rig, binding, &params, NULL, 0, &err) != SSK_OK) {
                fprintf(stderr, "bench_spring: %s (%s)\n", err.message, models[m]);
                return 1;
            }
            printf(" %zu |", ssk_spring_bytes_per_vertex(spring));
            ssk_spring_destroy(spring);
        }
        printf("\n");
        fflush(stdout);
        ssk_binding_destroy(binding);
        ssk_scene_destroy(scene);
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t sizes[8] = {10000, 100000};
    int size_count = 2, repeats = 5;
    uint32_t iterations = 50;
    ssk_backend backend = SSK_BACKEND_CPU;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            size_count = 0;
            for (char *tok = strtok(argv[++i], ","); tok && size_count < 8; tok = strtok(NULL, ","))
                sizes[size_count++] = (uint32_t)strtoul(tok, NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            iterations = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--files") == 0 && i + 1 < argc) {
            return memory_table(argv[++i]);
        } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            const char *b = argv[++i];
            backend = strcmp(b, "gl") == 0 ? SSK_BACKEND_GL : SSK_BACKEND_CPU;
        } else {
            fprintf(stderr, "usage: bench_spring [--sizes N,N,...] [--repeats N] "
                            "[--iterations N] [--backend cpu|gl] | --files A,B,...\n");
            return 2;
        }
    }
    if (repeats < 1) repeats = 1;
    static const char *const solver_names[3] = {"jacobi", "chebyshev", "multilevel"};
    printf("| model | solver | vertices | iterations | ms/frame (median) | ms/iteration median / "
           "best | vs jacobi median / best | first stage ms | create ms | bytes/vertex |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    enum { MODELS = 4 }; /* jacobi, chebyshev, multilevel, paper */
    for (int si = 0; si < size_count; ++si) {
        ssk_rig *rig = bench_limb_create(sizes[si], BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
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
        ssk_spring *springs[MODELS];
        double create_ms[MODELS];
        for (int m = 0; m < MODELS; ++m) {
            ssk_spring_params params;
            model_params(&params, m);
            params.convergence = SSK_CONVERGE_ITERATIONS;
            params.max_iterations = iterations;
            const double c0 = bench_now();
            if (ssk_spring_create(&springs[m], rig, binding, &params, NULL, 0, &err) != SSK_OK) {
                fprintf(stderr, "bench_spring: %s\n", err.message);
                return 1;
            }
            create_ms[m] = 1e3 * (bench_now() - c0);
        }
        float *pos = malloc(3 * (size_t)nv * sizeof(float));
        ssk_attach_bone bones[BENCH_LIMB_BONES];
        float skin[16 * BENCH_LIMB_BONES];
        double *frame_t = malloc((size_t)MODELS * repeats * sizeof(double));
        double *solve_t = malloc((size_t)MODELS * repeats * sizeof(double));
        double *first_t = malloc((size_t)MODELS * repeats * sizeof(double));
        ssk_spring_report rep[MODELS];
        /* the models interleaved within each repeat, so a drift of the
         * machine's speed reaches them alike (r = -1: warm-up) */
        for (int r = -1; r < repeats; ++r)
            for (int m = 0; m < MODELS; ++m) {
                bench_limb_pose(skin, 0.1 * (r + 1));
                const double t0 = bench_now();
                if (ssk_attach_prepare(bones, rig, skin, NULL, &err) != SSK_OK) {
                    fprintf(stderr, "bench_spring: %s\n", err.message);
                    return 1;
                }
                ssk_rigid_deform(pos, nv, bv.bones, bv.t, bv.scale_vectors, bones);
                const double t1 = bench_now();
                const ssk_status st =
                    ssk_spring_solve(springs[m], pos, bones, skin, r + 1, &rep[m], &err);
                const double t2 = bench_now();
                if (st != SSK_OK) {
                    fprintf(stderr, "bench_spring: %s\n", err.message);
                    return 1;
                }
                if (r >= 0) {
                    frame_t[m * repeats + r] = t2 - t0;
                    solve_t[m * repeats + r] = t2 - t1;
                    first_t[m * repeats + r] = t1 - t0;
                }
            }
        double jacobi_per_iteration = 0.0, jacobi_best = 0.0;
        for (int m = 0; m < MODELS; ++m) {
            double *ft = frame_t + m * repeats, *st = solve_t + m * repeats,
                   *it = first_t + m * repeats;
            qsort(ft, (size_t)repeats, sizeof(double), bench_compare_double);
            qsort(st, (size_t)repeats, sizeof(double), bench_compare_double);
            qsort(it, (size_t)repeats, sizeof(double), bench_compare_double);
            /* the median, and the best (least disturbed) repeat */
            const double per_iteration = 1e3 * st[repeats / 2] / rep[m].iterations;
            const double best = 1e3 * st[0] / rep[m].iterations;
            if (m == 0) {
                jacobi_per_iteration = per_iteration;
                jacobi_best = best;
            }
            printf("| %s | %s | %u | %u | %.2f | %.3f / %.3f | %.2fx / %.2fx | %.2f | %.0f | %zu |\n",
                   m == 3 ? "paper" : "defaults", solver_names[m == 3 ? 0 : m], nv,
                   rep[m].iterations, 1e3 * ft[repeats / 2], per_iteration, best,
                   per_iteration / jacobi_per_iteration, best / jacobi_best, 1e3 * it[repeats / 2],
                   create_ms[m], ssk_spring_bytes_per_vertex(springs[m]));
            fflush(stdout);
            ssk_spring_destroy(springs[m]);
        }
        free(pos);
        free(frame_t);
        free(solve_t);
        free(first_t);
        ssk_binding_destroy(binding);
        ssk_rig_destroy(rig);
    }
    printf("\n| pose | vertices | solver | ms/frame median / best, --method spring, %s | "
           "iterations | converged | of which read-back, ms (median) |\n",
           backend == SSK_BACKEND_GL ? "GL" : "CPU");
    printf("|---|---:|---|---:|---:|---:|---:|\n");
    for (int si = 0; si < size_count; ++si) {
        ssk_rig *rig = bench_limb_create(sizes[si], BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
        if (!rig) return 1;
        const uint32_t nv = ssk_rig_vertex_count(rig);
        float *out = malloc(3 * (size_t)nv * sizeof(float));
        double *t = malloc((size_t)repeats * sizeof(double));
        /* the deformer's read-back of the result (ssk_deformer_timing) */
        double *rb = malloc((size_t)repeats * sizeof(double));
        if (!out || !t || !rb) return 1;
        for (int solver = 2; solver >= 0; --solver) {
            ssk_error err = {0};
            char json[512];
            snprintf(json, sizeof json,
                     "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
                     "\"method\": \"irs\"}, {\"id\": \"relax\", \"type\": \"spring\", "
                     "\"solver\": \"%s\"}, {\"id\": \"out\", \"type\": \"output\"}], "
                     "\"edges\": [{\"from\": \"skin\", \"to\": \"relax\"}, "
                     "{\"from\": \"relax\", \"to\": \"out\"}]}",
                     solver_names[solver]);
            ssk_graph *graph = NULL;
            if (ssk_graph_parse(&graph, json, rig, &err) != SSK_OK) {
                fprintf(stderr, "bench_spring: %s\n", err.message);
                return 1;
            }
            ssk_deformer_desc desc = {.method = SSK_METHOD_SPRING, .backend = backend,
                                      .graph = graph};
            ssk_deformer *d = NULL;
            if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) {
                fprintf(stderr, "bench_spring: %s\n", err.message);
                return 1;
            }
            float skin[16 * BENCH_LIMB_BONES];
            static const char *const pose_names[3] = {"animation", "bend 135", "twist 180"};
            for (int pose = 0; pose < 3; ++pose) {
                if (pose == 0)
                    bench_limb_pose(skin, 0.3);
                else
                    bench_limb_joint_pose(skin, 4, pose == 1 ? 2 : 1,
                                          pose == 1 ? 0.75 * BENCH_PI : BENCH_PI);
                ssk_spring_report rep = {0};
                for (int r = -1; r < repeats; ++r) {
                    const double t0 = bench_now();
                    if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK) {
                        fprintf(stderr, "bench_spring: %s\n", err.message);
                        return 1;
                    }
                    if (r >= 0) t[r] = bench_now() - t0;
                    ssk_deform_timing tm;
                    ssk_deformer_timing(d, &tm);
                    if (r >= 0) rb[r] = tm.readback_seconds;
                }
                ssk_deformer_spring_report(d, &rep);
                qsort(t, (size_t)repeats, sizeof(double), bench_compare_double);
                qsort(rb, (size_t)repeats, sizeof(double), bench_compare_double);
                printf("| %s | %u | %s | %.2f / %.2f | %u | %s | %.2f |\n", pose_names[pose], nv,
                       solver_names[solver], 1e3 * t[repeats / 2], 1e3 * t[0], rep.iterations,
                       rep.converged ? "yes" : "no", 1e3 * rb[repeats / 2]);
                fflush(stdout);
            }
            ssk_deformer_destroy(d);
            ssk_graph_destroy(graph);
            /* frame-dependent: an animation from each previous equilibrium */
            snprintf(json, sizeof json,
                     "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
                     "\"method\": \"irs\"}, {\"id\": \"relax\", \"type\": \"spring\", "
                     "\"solver\": \"%s\", \"mode\": \"frame_dependent\"}, {\"id\": \"out\", "
                     "\"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": "
                     "\"relax\"}, {\"from\": \"relax\", \"to\": \"out\"}]}",
                     solver_names[solver]);
            if (ssk_graph_parse(&graph, json, rig, &err) != SSK_OK) {
                fprintf(stderr, "bench_spring: %s\n", err.message);
                return 1;
            }
            desc.graph = graph;
            if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) {
                fprintf(stderr, "bench_spring: %s\n", err.message);
                return 1;
            }
            uint32_t *its = malloc((size_t)repeats * sizeof(uint32_t));
            bool all_converged = true;
            for (int f = 0; f <= repeats && its; ++f) {
                bench_limb_pose(skin, 0.3 + 0.05 * f);
                ssk_deformer_set_frame(d, (double)f);
                const double t0 = bench_now();
                if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK) {
                    fprintf(stderr, "bench_spring: %s\n", err.message);
                    return 1;
                }
                if (f == 0) continue;
                t[f - 1] = bench_now() - t0;
                ssk_deform_timing tm;
                ssk_deformer_timing(d, &tm);
                rb[f - 1] = tm.readback_seconds;
                ssk_spring_report rep = {0};
                ssk_deformer_spring_report(d, &rep);
                its[f - 1] = rep.iterations;
                all_converged = all_converged && rep.converged;
            }
            if (its) {
                qsort(t, (size_t)repeats, sizeof(double), bench_compare_double);
                qsort(its, (size_t)repeats, sizeof(uint32_t), bench_compare_u32);
                qsort(rb, (size_t)repeats, sizeof(double), bench_compare_double);
                printf("| animation, frame-dependent | %u | %s | %.2f / %.2f | %u (%u) | %s | %.2f |\n",
                       nv, solver_names[solver], 1e3 * t[repeats / 2], 1e3 * t[0],
                       its[repeats / 2], its[repeats - 1], all_converged ? "yes" : "no",
                       1e3 * rb[repeats / 2]);
                fflush(stdout);
            }
            free(its);
            ssk_deformer_destroy(d);
            ssk_graph_destroy(graph);
        }
        free(out);
        free(t);
        free(rb);
        ssk_rig_destroy(rig);
    }
    return 0;
}
