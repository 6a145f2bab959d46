/* fuzz_binding.c — libFuzzer target of the binding file loader
 * (ssk_binding_load, core/bind/binding_io.c; issue #19): any bytes as a
 * binding file, loaded for a small rig and for no rig; a loaded binding is
 * saved and loaded again. Implicit skinning's data a loaded binding of the
 * rig holds (format version 3, issue #20) go to a tracker as they are
 * (whatever their fit parameters: the loader's checks are what keeps the
 * tracker safe), posed at rest and bent, and tracked. The file lives in a
 * directory made once per process. */
#include "fuzz_rig.h"

#include "bind/binding.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[256], again_path[256];

static void paths(void)
{
    if (path[0]) return;
    char dir[] = "/tmp/ssk-fuzz-binding-XXXXXX";
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/input.bind", dir);
    snprintf(again_path, sizeof again_path, "%s/again.bind", dir);
}

/* The loaded implicit fit of the fuzz rig, tracked for two poses. */
static void track_implicit(const ssk_binding *b, const ssk_rig *rig)
{
    static ssk_implicit_operators *ops;
    ssk_error err = {0};
    /* small operators (8^3), built once per process */
    if (!ops && ssk_implicit_operators_create(&ops, 8, &err) != SSK_OK) abort();
    ssk_implicit_fit fit = {0};
    if (ssk_implicit_fit_copy(&fit, b->implicit, b->vertex_count, b->bone_count, &err) != SSK_OK)
        return;
    ssk_implicit_params params;
    ssk_implicit_params_default(&params);
    ssk_implicit *im = NULL;
    if (ssk_implicit_create(&im, rig, &fit, ops, &params, &err) != SSK_OK) return;
    float skin[16 * FUZZ_BONES], positions[3 * 2 * FUZZ_RINGS];
    for (int pose = 0; pose < 2; ++pose) {
        for (int k = 0; k < FUZZ_BONES; ++k) {
            float *m = skin + 16 * k;
            memset(m, 0, 16 * sizeof *m);
            m[0] = m[5] = m[10] = m[15] = 1.0f;
            if (pose && k == FUZZ_BONES - 1) { /* the last bone turned 90 degrees about z */
                m[0] = m[5] = 0.0f;
                m[1] = -1.0f;
                m[4] = 1.0f;
                m[3] = (float)k;  /* about its head (0, k, 0) */
                m[7] = (float)k;
            }
        }
        ssk_mesh_view mv;
        if (ssk_rig_mesh(rig, 0, &mv, NULL) != SSK_OK) abort();
        memcpy(positions, mv.positions, sizeof positions);
        if (ssk_implicit_pose(im, skin, &err) == SSK_OK)
            (void)ssk_implicit_track_frame(im, positions, (double)pose, NULL, &err);
    }
    ssk_implicit_destroy(im);
}

/* A loaded cage binding of 8 cage vertices with a box cage: reshaped and
 * fitted (corpus: tube_cage.bind's box). */
static void use_cage(const ssk_binding *b)
{
    enum { C = 8 };
    if (b->cage->cage_vertex_count != C) return;
    static const uint32_t tris[36] = {0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
                                      2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6};
    double box[3 * C], moved[3 * C], fitted[3 * C];
    for (int k = 0; k < C; ++k) {
        box[3 * k] = k & 1 ? 0.5 : -0.5;
        box[3 * k + 1] = k & 2 ? 3.5 : -0.5;
        box[3 * k + 2] = k & 4 ? 0.5 : -0.5;
        for (int a = 0; a < 3; ++a) moved[3 * k + a] = box[3 * k + a] * (a ? 1.0 : 1.5);
    }
    ssk_cage_binding full = {0};
    ssk_error err = {0};
    if (ssk_cage_binding_copy(&full, b->cage, box, C, tris, 12, &err) != SSK_OK) return;
    float *positions = malloc((3 * (size_t)full.vertex_count + 1) * sizeof *positions);
    float *heads = malloc((3 * (size_t)full.joint_count + 1) * sizeof *heads);
    double rows[3 * C];
    if (positions && heads) {
        ssk_cage_binding_reshape(&full, moved, positions, heads);
        for (int k = 0; k < C; ++k)
            for (int a = 0; a < 3; ++a)
                rows[3 * k + a] = positions[3 * (size_t)full.up.rows[k] + a];
        (void)ssk_cage_up_solve(&full.up, fitted, rows, &err);
    }
    free(positions);
    free(heads);
    ssk_cage_binding_free(&full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ssk_rig *rig = fuzz_rig();
    paths();
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    for (int with_rig = 0; with_rig < 2; ++with_rig) {
        ssk_binding *b = NULL;
        ssk_error err = {0};
        if (ssk_binding_load(&b, path, with_rig ? rig : NULL, &err) != SSK_OK) continue;
        ssk_binding *again = NULL;
        if (ssk_binding_save(b, again_path, &err) != SSK_OK ||
            ssk_binding_load(&again, again_path, NULL, &err) != SSK_OK)
            abort();
        ssk_binding_destroy(again);
        if (with_rig && b->implicit) track_implicit(b, rig);
        if (b->cage) use_cage(b);
        ssk_binding_destroy(b);
    }
    return 0;
}
