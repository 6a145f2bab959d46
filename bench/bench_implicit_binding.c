/*
 * bench_implicit_binding.c — what storing implicit skinning's bind data in
 * the binding saves (issue #20, Deliver 1; ssk_bind_params.compute_implicit,
 * binding file format version 3).
 *
 * Rig: Assimp's BCN_Epileptic.X (3,014 vertices, 54 bones; --model PATH).
 * The composition operators are built once and given to every deformer
 * (they are rig-independent and not part of either column). Per repeat,
 * one after another in one process: an implicit deformer made without a
 * binding (it fits the fields: 4.4's HRBF fits and 32^3 grids, the mean
 * value coordinates), the binding made with compute_implicit (the fit
 * moved to bind time) and saved, that file loaded (checksum and every
 * value checked), and an implicit deformer made with the loaded binding
 * (the fit copied). Medians of --repeats after one untimed round.
 *
 * Usage: bench_implicit_binding [--repeats N] [--model PATH]
 * Prints a Markdown table: step, ms.
 */
#define _DEFAULT_SOURCE /* P_tmpdir */
#include "springskin.h"

#include "limb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_DEFAULT_REPEATS 5
#define BENCH_MODEL "/usr/share/assimp/models/X/BCN_Epileptic.X"

enum { STEP_CREATE_FIT, STEP_BIND, STEP_SAVE, STEP_LOAD, STEP_CREATE_LOADED, STEP_COUNT };
static const char *const step_names[STEP_COUNT] = {
    "implicit deformer, no binding (fits the fields)",
    "binding with compute_implicit (attachment + fit)",
    "binding saved (format version 3)",
    "binding loaded (checked)",
    "implicit deformer, loaded binding (fit copied)",
};

static void die(const char *what, const ssk_error *err)
{
    fprintf(stderr, "bench_implicit_binding: %s: %s\n", what, err->message);
    exit(1);
}

static void make_deformer(const ssk_rig *rig, const ssk_binding *binding,
                          const ssk_implicit_operators *ops)
{
    ssk_deformer *d = NULL;
    ssk_error err = {0};
    ssk_deformer_desc desc = {.method = SSK_METHOD_IMPLICIT, .backend = SSK_BACKEND_CPU,
                              .binding = binding, .implicit_operators = ops};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) die("deformer", &err);
    ssk_deformer_destroy(d);
}

int main(int argc, char **argv)
{
    int repeats = BENCH_DEFAULT_REPEATS;
    const char *model = BENCH_MODEL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
            if (repeats < 1) repeats = 1;
        } else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            model = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_implicit_binding [--repeats N] [--model PATH]\n");
            return 2;
        }
    }
    ssk_error err = {0};
    ssk_scene *scene = NULL;
    if (ssk_scene_import(&scene, model, &err) != SSK_OK) die(model, &err);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_implicit_operators *ops = NULL;
    if (ssk_implicit_operators_create(&ops, 0, &err) != SSK_OK) die("operators", &err);
    /* in $TMPDIR (else the C library's P_tmpdir) */
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_implicit_binding-%ld.bind", dir && *dir ? dir : P_tmpdir,
             (long)getpid());
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    params.compute_implicit = 1;

    double *ms = malloc((size_t)STEP_COUNT * (size_t)repeats * sizeof *ms);
    if (!ms) return 1;
    for (int r = -1; r < repeats; ++r) { /* r = -1: untimed */
        double t[STEP_COUNT + 1];
        t[0] = bench_now();
        make_deformer(rig, NULL, ops);
        t[1] = bench_now();
        ssk_binding *made = NULL, *loaded = NULL;
        if (ssk_binding_create(&made, rig, &params, &err) != SSK_OK) die("bind", &err);
        t[2] = bench_now();
        if (ssk_binding_save(made, path, &err) != SSK_OK) die("save", &err);
        t[3] = bench_now();
        if (ssk_binding_load(&loaded, path, rig, &err) != SSK_OK) die("load", &err);
        t[4] = bench_now();
        make_deformer(rig, loaded, ops);
        t[5] = bench_now();
        ssk_binding_destroy(made);
        ssk_binding_destroy(loaded);
        if (r < 0) continue;
        for (int s = 0; s < STEP_COUNT; ++s)
            ms[(size_t)s * repeats + r] = 1e3 * (t[s + 1] - t[s]);
    }
    remove(path);

    printf("%s: %u vertices, %u bones; implicit bind data, median of %d runs\n\n", model,
           (unsigned)ssk_rig_vertex_count(rig), (unsigned)ssk_rig_bone_count(rig), repeats);
    printf("| step | ms |\n|---|---:|\n");
    double median[STEP_COUNT];
    for (int s = 0; s < STEP_COUNT; ++s) {
        double *row = ms + (size_t)s * repeats;
        qsort(row, (size_t)repeats, sizeof *row, bench_compare_double);
        median[s] = row[repeats / 2];
        printf("| %s | %.1f |\n", step_names[s], median[s]);
    }
    printf("\nimplicit deformer creation: %.1f ms without a binding, %.1f ms from a loaded "
           "one (+ %.1f ms load): %.1f ms saved per deformer (%.1fx)\n",
           median[STEP_CREATE_FIT], median[STEP_CREATE_LOADED], median[STEP_LOAD],
           median[STEP_CREATE_FIT] - median[STEP_CREATE_LOADED] - median[STEP_LOAD],
           median[STEP_CREATE_FIT] / (median[STEP_CREATE_LOADED] + median[STEP_LOAD]));
    free(ms);
    ssk_implicit_operators_destroy(ops);
    ssk_scene_destroy(scene);
    return 0;
}
