/* test_cli.c — the `springskin` executable (SSK_CLI_PATH) end to end on
 * Assimp's BCN_Epileptic.X, and ssk_scene_bake directly:
 * - info lists the meshes and the animation's frame count;
 * - bake writes one .pc2 sample per frame whose positions equal, bit for
 *   bit, ssk_scene_sample + ssk_deformer_deform computed here;
 * - bake --strict exits 1 when spring frames did not converge, naming them
 *   and keeping the output (issue #36);
 * - every kind of error exits with 1 (runtime) or 2 (usage), prints
 *   "springskin: error: ..." and leaves no file (nor temporary) behind;
 * - ssk_scene_bake validates before touching the disk, reports progress and
 *   statistics, and removes its output when a write fails mid-bake. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"
#define NO_ANIMATION_MODEL SSK_MODELS_DIR "/X/test_cube_text.x"
#define NO_SKELETON_MODEL SSK_MODELS_DIR "/OBJ/box.obj"
#define CLI_FPS 24.0
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
/* LBS and DQS of the same pose differ by volume-loss effects only: at most
 * this fraction of the model's bounding-box diagonal. */
#define LBS_DQS_MAX_GAP_FRACTION 0.1
#define ERROR_PREFIX "springskin: error: "

/* ------------------------------------------------------------------------ */
/* Shared fixture: the imported model and a scratch directory.              */
/* ------------------------------------------------------------------------ */

typedef struct fixture {
    ssk_scene *scene;
    const ssk_rig *rig;
    ssk_animation_info anim;
    uint32_t frame_count; /* floor(duration * 24) + 1, computed here */
    uint32_t vertex_count;
    char *dir;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    ssk_error err = {0};
    if (ssk_scene_import(&fx->scene, MODEL_PATH, &err) != SSK_OK) {
        fprintf(stderr, "cannot import %s: %s\n", MODEL_PATH, err.message);
        free(fx);
        return -1;
    }
    if (ssk_scene_animation(fx->scene, 0, &fx->anim, &err) != SSK_OK) {
        fprintf(stderr, "no animation in %s: %s\n", MODEL_PATH, err.message);
        ssk_scene_destroy(fx->scene);
        free(fx);
        return -1;
    }
    fx->rig = ssk_scene_rig(fx->scene);
    fx->frame_count = (uint32_t)floor(fx->anim.duration_seconds * CLI_FPS) + 1;
    fx->vertex_count = ssk_rig_vertex_count(fx->rig);
    fx->dir = tu_temp_dir();
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    tu_remove_tree(fx->dir);
    free(fx->dir);
    ssk_scene_destroy(fx->scene);
    free(fx);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Running the CLI: fork + execv, stdout and stderr captured to files.      */
/* ------------------------------------------------------------------------ */

/* argv: NULL-terminated arguments after the program name. The capture files
 * live in a directory of their own so output-directory checks stay exact. */
static tu_cli_result run_cli(const char *const *args)
{
    static const char capture_dir_name[] = "ssk-cli-capture";
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    char capture[512];
    snprintf(capture, sizeof capture, "%s/%s-%ld", base, capture_dir_name,
             (long)getpid());
    if (mkdir(capture, 0700) != 0) assert_int_equal(errno, EEXIST);
    tu_cli_result r = tu_run_cli(capture, args);
    rmdir(capture);
    return r;
}

/* ------------------------------------------------------------------------ */
/* .pc2 files, read with testutil's independent reader.                     */
/* ------------------------------------------------------------------------ */

/* tu_pc2_read of a cache that has vertices. */
static void pc2_read(tu_pc2_file *out, const char *path)
{
    tu_pc2_read(out, path);
    assert_true(out->points > 0);
}

static const float *pc2_sample(const tu_pc2_file *f, uint32_t s)
{
    return f->data + (size_t)s * (size_t)f->points * 3;
}

/* Positions of `frame` at 24 fps computed here with the library's pieces. */
static float *direct_positions(const fixture *fx, ssk_method method, uint32_t frame)
{
    uint32_t bones = ssk_rig_bone_count(fx->rig), meshes = ssk_rig_mesh_count(fx->rig);
    float *skin = malloc(sizeof(float) * 16 * bones);
    float *objects = malloc(sizeof(float) * 16 * meshes);
    float *pos = malloc(sizeof(float) * 3 * fx->vertex_count);
    assert_non_null(skin);
    assert_non_null(objects);
    assert_non_null(pos);
    ssk_error err = {0};
    assert_int_equal(ssk_scene_sample(fx->scene, 0, (double)frame / CLI_FPS, skin,
                                      objects, &err),
                     SSK_OK);
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = method, .backend = SSK_BACKEND_CPU};
    assert_int_equal(ssk_deformer_create(&d, fx->rig, &desc, &err), SSK_OK);
    assert_int_equal(ssk_deformer_deform(d, pos, skin, objects, &err), SSK_OK);
    ssk_deformer_destroy(d);
    free(skin);
    free(objects);
    return pos;
}

static bool all_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (!isfinite(v[i])) return false;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Tests: help and info.                                                     */
/* ------------------------------------------------------------------------ */

static void test_help_and_version(void **state)
{
    (void)state;
    tu_cli_result r = run_cli((const char *[]){"--help", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "bake"));
    assert_non_null(strstr(r.out, "info"));
    tu_cli_result_free(&r);

    r = run_cli((const char *[]){"--version", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, SSK_VERSION_STRING));
    tu_cli_result_free(&r);

    r = run_cli((const char *[]){"bake", "--help", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "--frames"));
    assert_non_null(strstr(r.out, "--method"));
    tu_cli_result_free(&r);

    r = run_cli((const char *[]){"info", "--help", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "--fps"));
    tu_cli_result_free(&r);

    /* Usage errors: no command, unknown command, unknown option. */
    r = run_cli((const char *[]){NULL});
    assert_int_equal(r.exit_code, EXIT_USAGE);
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"frobnicate", NULL});
    assert_int_equal(r.exit_code, EXIT_USAGE);
    assert_non_null(strstr(r.err, ERROR_PREFIX));
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"info", MODEL_PATH, "--bogus", NULL});
    assert_int_equal(r.exit_code, EXIT_USAGE);
    assert_non_null(strstr(r.err, ERROR_PREFIX "unknown option '--bogus'"));
    tu_cli_result_free(&r);
}

static void test_info(void **state)
{
    fixture *fx = *state;
    tu_cli_result r = run_cli((const char *[]){"info", MODEL_PATH, NULL});
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.out, "Torso"));
    assert_non_null(strstr(r.out, "Head"));
    assert_non_null(strstr(r.out, "Legs"));
    char expect[128];
    /* Each mesh's vertex and triangle counts as the rig has them. */
    for (uint32_t m = 0; m < ssk_rig_mesh_count(fx->rig); ++m) {
        ssk_mesh_view v;
        assert_int_equal(ssk_rig_mesh(fx->rig, m, &v, NULL), SSK_OK);
        snprintf(expect, sizeof expect, "'%s': %u vertices, %u triangles", v.name,
                 (unsigned)v.vertex_count, (unsigned)v.triangle_count);
        assert_non_null(strstr(r.out, expect));
    }
    snprintf(expect, sizeof expect, "bones: %u (%u deforming)",
             (unsigned)ssk_rig_bone_count(fx->rig),
             (unsigned)ssk_rig_deforming_bone_count(fx->rig));
    assert_non_null(strstr(r.out, expect));
    snprintf(expect, sizeof expect, "%u frames", (unsigned)fx->frame_count);
    assert_non_null(strstr(r.out, expect));
    /* the rest shape's bounding boxes (issue #21: the space of --cage
     * files); BCN's rig space is its scene root space */
    const char *rig_box = strstr(r.out, "bounding box, rig space: ");
    const char *scene_box = strstr(r.out, "bounding box, scene root space (--cage files): ");
    assert_non_null(rig_box);
    assert_non_null(scene_box);
    double a[6], b[6];
    assert_int_equal(sscanf(strstr(rig_box, ": (") + 2, "(%lf, %lf, %lf) to (%lf, %lf, %lf)", &a[0],
                            &a[1], &a[2], &a[3], &a[4], &a[5]),
                     6);
    assert_int_equal(sscanf(strstr(scene_box, ": (") + 2, "(%lf, %lf, %lf) to (%lf, %lf, %lf)", &b[0],
                            &b[1], &b[2], &b[3], &b[4], &b[5]),
                     6);
    for (int k = 0; k < 6; ++k) assert_true(fabs(a[k] - b[k]) < 1e-5 && (k >= 3 || a[k] < a[k + 3]));
    tu_cli_result_free(&r);

    /* --fps changes the frame count. */
    r = run_cli((const char *[]){"info", MODEL_PATH, "--fps", "30", NULL});
    assert_int_equal(r.exit_code, 0);
    snprintf(expect, sizeof expect, "%u frames",
             (unsigned)floor(fx->anim.duration_seconds * 30.0) + 1);
    assert_non_null(strstr(r.out, expect));
    tu_cli_result_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Tests: bake.                                                              */
/* ------------------------------------------------------------------------ */

static void check_bake_summary(const tu_cli_result *r, const fixture *fx, uint32_t frames,
                               const char *method, const char *output)
{
    char expect[256];
    snprintf(expect, sizeof expect, "baked %u frames x %u vertices (%s, ", (unsigned)frames,
             (unsigned)fx->vertex_count, method);
    assert_non_null(strstr(r->out, expect));
    /* the backend and its device: "cpu backend: cpu (N threads)" or
     * "gl backend: <renderer>" */
    assert_true(strstr(r->out, "cpu backend: cpu (") || strstr(r->out, "gl backend: "));
    assert_non_null(strstr(r->out, "ms/frame"));
    assert_non_null(strstr(r->out, output));
    /* stderr is not a terminal here: no progress. */
    assert_string_equal(r->err, "");
}

/* `check`: one line per finding, a stable report, the exit status. */
static void test_check(void **state)
{
    (void)state;
    /* anim_test.x: two bones without a node (warnings), nothing wrong. */
    const char *anim_test = SSK_MODELS_DIR "/X/anim_test.x";
    tu_cli_result r = run_cli((const char *[]){"check", anim_test, NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "warning  bones: 2 bone(s) have no node"));
    assert_non_null(strstr(r.out, "joint3 (484 vertices)"));
    assert_non_null(strstr(r.out, "warning  weights: 1 vertex(es) have no skin weight"));
    static const char *const methods[] = {"lbs", "dqs", "rigid", "irs", "spring", "cor"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; ++i) {
        char line[64];
        snprintf(line, sizeof line, " method %s: ", methods[i]);
        assert_non_null(strstr(r.out, line));
    }
    assert_non_null(strstr(r.out, "summary: 0 error(s)"));
    /* The same run again gives the same report (no timings in it). */
    tu_cli_result again = run_cli((const char *[]){"check", anim_test, NULL});
    assert_string_equal(again.out, r.out);
    tu_cli_result_free(&again);
    tu_cli_result_free(&r);

    /* --strict: the warnings make it exit 1. */
    r = run_cli((const char *[]){"check", anim_test, "--strict", "--frames", "2", NULL});
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.out, "methods on 2 frame(s)"));
    tu_cli_result_free(&r);

    /* huesitos.fbx: the armature node with Blender's 100x unit scale. */
    r = run_cli((const char *[]){"check", SSK_MODELS_DIR "/FBX/huesitos.fbx", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "ok       space: rig space is armature node 'Armature' (scale 100"));
    assert_non_null(strstr(r.out, "ok       method dqs: finite, bounding box within 1.00x"));
    tu_cli_result_free(&r);

    /* A file Assimp cannot read: exit 1; a bad option: exit 2. */
    r = run_cli((const char *[]){"check", "/nonexistent/file.fbx", NULL});
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.err, "springskin: error:"));
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"check", anim_test, "--frames", "0", NULL});
    assert_int_equal(r.exit_code, 2);
    tu_cli_result_free(&r);
}

static void test_bake_lbs_and_dqs(void **state)
{
    fixture *fx = *state;
    char *lbs_path = tu_path_join(fx->dir, "out_lbs.pc2");
    char *dqs_path = tu_path_join(fx->dir, "out_dqs.pc2");
    tu_cli_result r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", lbs_path,
                                            "--method", "lbs", "--backend", "cpu", NULL});
    assert_int_equal(r.exit_code, 0);
    check_bake_summary(&r, fx, fx->frame_count, "lbs", lbs_path);
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"bake", MODEL_PATH, "--output", dqs_path,
                                 "--method=dqs", "--backend=cpu", NULL});
    assert_int_equal(r.exit_code, 0);
    check_bake_summary(&r, fx, fx->frame_count, "dqs", dqs_path);
    tu_cli_result_free(&r);
    assert_int_equal(tu_dir_entry_count(fx->dir), 2); /* no temporary left */

    tu_pc2_file lbs, dqs;
    pc2_read(&lbs, lbs_path);
    pc2_read(&dqs, dqs_path);
    assert_memory_equal(lbs.magic, "POINTCACHE2\0", 12);
    assert_int_equal(lbs.version, 1);
    assert_int_equal(lbs.points, fx->vertex_count);
    assert_int_equal(lbs.samples, fx->frame_count);
    assert_true(lbs.start_frame == 0.0f);
    assert_true(lbs.sample_rate == 1.0f);
    assert_int_equal(dqs.points, fx->vertex_count);
    assert_int_equal(dqs.samples, fx->frame_count);
    size_t floats = (size_t)lbs.samples * lbs.points * 3;
    assert_true(all_finite(lbs.data, floats));
    assert_true(all_finite(dqs.data, floats));

    /* The animation moves the mesh. */
    uint32_t mid = fx->frame_count / 2, last = fx->frame_count - 1;
    size_t n = (size_t)fx->vertex_count * 3;
    assert_true(tu_max_abs_diff(pc2_sample(&lbs, 0), pc2_sample(&lbs, mid), n) > 0.0);
    assert_true(tu_max_abs_diff(pc2_sample(&dqs, 0), pc2_sample(&dqs, mid), n) > 0.0);

    /* LBS and DQS differ somewhere but stay close. */
    double diag = tu_bbox_diagonal(pc2_sample(&lbs, 0), fx->vertex_count);
    assert_true(diag > 0.0);
    double gap = tu_max_abs_diff(lbs.data, dqs.data, floats);
    assert_true(gap > 0.0);
    assert_true(gap < LBS_DQS_MAX_GAP_FRACTION * diag);

    /* Written samples equal sample + deform computed here, bit for bit. */
    const uint32_t frames[] = {0, mid, last};
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; ++i) {
        float *expect = direct_positions(fx, SSK_METHOD_LBS, frames[i]);
        assert_memory_equal(pc2_sample(&lbs, frames[i]), expect, n * sizeof(float));
        free(expect);
        expect = direct_positions(fx, SSK_METHOD_DQS, frames[i]);
        assert_memory_equal(pc2_sample(&dqs, frames[i]), expect, n * sizeof(float));
        free(expect);
    }
    free(lbs.data);
    free(dqs.data);
    remove(lbs_path);
    remove(dqs_path);
    free(lbs_path);
    free(dqs_path);
}

static void test_bake_frame_range_and_fps(void **state)
{
    fixture *fx = *state;
    char *full_path = tu_path_join(fx->dir, "full.pc2");
    char *part_path = tu_path_join(fx->dir, "part.pc2");
    tu_cli_result r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", full_path, NULL});
    assert_int_equal(r.exit_code, 0);
    check_bake_summary(&r, fx, fx->frame_count, "lbs", full_path); /* default lbs */
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", part_path, "--frames", "2:5",
                                 "--backend", "cpu", NULL});
    assert_int_equal(r.exit_code, 0);
    check_bake_summary(&r, fx, 4, "lbs", part_path);
    tu_cli_result_free(&r);

    tu_pc2_file full, part;
    pc2_read(&full, full_path);
    pc2_read(&part, part_path);
    assert_int_equal(part.samples, 4);
    assert_true(part.start_frame == 2.0f);
    assert_int_equal(part.points, fx->vertex_count);
    size_t n = (size_t)fx->vertex_count * 3;
    for (uint32_t s = 0; s < 4; ++s) {
        assert_memory_equal(pc2_sample(&part, s), pc2_sample(&full, 2 + s),
                            n * sizeof(float));
        float *expect = direct_positions(fx, SSK_METHOD_LBS, 2 + s);
        assert_memory_equal(pc2_sample(&part, s), expect, n * sizeof(float));
        free(expect);
    }
    free(full.data);
    free(part.data);

    /* The whole range given explicitly, and a single frame. */
    char range[64];
    snprintf(range, sizeof range, "0:%u", (unsigned)(fx->frame_count - 1));
    r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", part_path, "--frames", range,
                                 NULL});
    assert_int_equal(r.exit_code, 0);
    tu_cli_result_free(&r);
    pc2_read(&part, part_path);
    assert_int_equal(part.samples, fx->frame_count);
    free(part.data);
    snprintf(range, sizeof range, "%u:%u", (unsigned)(fx->frame_count - 1),
             (unsigned)(fx->frame_count - 1));
    r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", part_path, "--frames", range,
                                 NULL});
    assert_int_equal(r.exit_code, 0);
    tu_cli_result_free(&r);
    pc2_read(&part, part_path);
    assert_int_equal(part.samples, 1);
    assert_true(part.start_frame == (float)(fx->frame_count - 1));
    free(part.data);

    /* --fps 30: floor(duration * 30) + 1 samples. */
    r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", part_path, "--fps", "30",
                                 NULL});
    assert_int_equal(r.exit_code, 0);
    tu_cli_result_free(&r);
    pc2_read(&part, part_path);
    assert_int_equal(part.samples, (int32_t)floor(fx->anim.duration_seconds * 30.0) + 1);
    free(part.data);

    remove(full_path);
    remove(part_path);
    free(full_path);
    free(part_path);
}

/* Runs a failing command; checks the exit code, the error prefix, that
 * `must_mention` (if any) is in the message, and that the scratch directory
 * holds nothing new (no output, no temporary). */
static void expect_failure(const fixture *fx, const char *const *args, int code,
                           const char *must_mention)
{
    int before = tu_dir_entry_count(fx->dir);
    tu_cli_result r = run_cli(args);
    if (r.exit_code != code)
        fprintf(stderr, "args[0..]: %s %s ... exit %d, stderr: %s\n", args[0],
                args[1] ? args[1] : "", r.exit_code, r.err);
    assert_int_equal(r.exit_code, code);
    assert_int_equal(strncmp(r.err, ERROR_PREFIX, strlen(ERROR_PREFIX)), 0);
    if (must_mention) assert_non_null(strstr(r.err, must_mention));
    assert_string_equal(r.out, "");
    tu_cli_result_free(&r);
    assert_int_equal(tu_dir_entry_count(fx->dir), before);
}


/* The spring summary (issue #16): with the defaults every frame of
 * BCN_Epileptic.X meets the threshold, and the summary says 0 not
 * converged and names none; with the paper's plain update and 20
 * iterations many frames do not, and the summary names them with their
 * residuals (the first 8, then how many more). */
static void test_bake_spring_summary(void **state)
{
    fixture *fx = *state;
    const char *bcn = SSK_MODELS_DIR "/X/BCN_Epileptic.X";
    char *out = tu_path_join(fx->dir, "spring.pc2");
    tu_cli_result r = run_cli((const char *[]){"bake", bcn, "-o", out, "--method", "spring",
                                            "--backend", "cpu", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, " 0 frame(s) not converged"));
    assert_null(strstr(r.out, "not converged at frame"));
    tu_cli_result_free(&r);
    char *graph = tu_path_join(fx->dir, "jacobi.json");
    FILE *g = fopen(graph, "wb");
    assert_non_null(g);
    fputs("{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", \"method\": "
          "\"irs\"}, {\"id\": \"relax\", \"type\": \"spring\", \"solver\": \"jacobi\", "
          "\"max_iterations\": 20}, {\"id\": \"out\", \"type\": \"output\"}], \"edges\": "
          "[{\"from\": \"skin\", \"to\": \"relax\"}, {\"from\": \"relax\", \"to\": \"out\"}]}",
          g);
    assert_int_equal(fclose(g), 0);
    r = run_cli((const char *[]){"bake", bcn, "-o", out, "--graph", graph, "--backend", "cpu",
                                 NULL});
    assert_int_equal(r.exit_code, 0);
    const char *named = strstr(r.out, "springs not converged at frame(s): ");
    assert_non_null(named);
    assert_non_null(strstr(named, " (residual "));
    assert_non_null(strstr(named, " more\n"));
    tu_cli_result_free(&r);
    /* --spring-solver: the paper's plain update for --method spring */
    r = run_cli((const char *[]){"bake", bcn, "-o", out, "--method", "spring", "--spring-solver",
                                 "jacobi", "--backend", "cpu", "--frames", "0:3", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "springs: "));
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"bake", bcn, "-o", out, "--method", "spring", "--spring-solver",
                                 "multilevel", "--backend", "cpu", "--frames", "0:3", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "0 frame(s) not converged"));
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"bake", bcn, "-o", out, "--method", "lbs", "--spring-solver",
                                 "jacobi", NULL});
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err, "--spring-solver goes with --method spring"));
    tu_cli_result_free(&r);
    /* issue #36's surface multigrid: the CPU backend, every frame converged */
    r = run_cli((const char *[]){"bake", bcn, "-o", out, "--method", "spring", "--spring-solver",
                                 "multigrid", "--backend", "cpu", "--frames", "20:23", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "0 frame(s) not converged"));
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"bake", bcn, "-o", out, "--method", "spring", "--spring-solver",
                                 "gauss_seidel", NULL});
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err, "expected auto, multigrid, multilevel, chebyshev or jacobi"));
    tu_cli_result_free(&r);
    remove(graph);
    remove(out);
    free(graph);
    free(out);
}

/* bake --strict (issue #36): springs stopped after 2 passes, far above a
 * threshold of 1e-9, on 4 posed frames: exit 1 naming the frames on stderr,
 * the cache written and kept, the stdout summary unchanged; without
 * --strict exit 0; converged bakes (LBS; the "iterations" test, which always
 * converges) exit 0 with --strict. */
static void test_bake_strict(void **state)
{
    fixture *fx = *state;
    char *out = tu_path_join(fx->dir, "strict.pc2");
    char *unconverged = tu_path_join(fx->dir, "two_passes.json");
    char *converged = tu_path_join(fx->dir, "two_passes_converged.json");
    static const char graph_head[] =
        "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", \"method\": "
        "\"irs\"}, {\"id\": \"relax\", \"type\": \"spring\", \"max_iterations\": 2, ";
    static const char graph_tail[] =
        "}, {\"id\": \"out\", \"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": "
        "\"relax\"}, {\"from\": \"relax\", \"to\": \"out\"}]}";
    char text[1024];
    snprintf(text, sizeof text, "%s\"threshold\": 1e-9%s", graph_head, graph_tail);
    tu_write_file(unconverged, (const unsigned char *)text, strlen(text));
    snprintf(text, sizeof text, "%s\"convergence\": \"iterations\"%s", graph_head, graph_tail);
    tu_write_file(converged, (const unsigned char *)text, strlen(text));

    tu_cli_result r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", out, "--graph",
                                            unconverged, "--frames", "20:23", "--backend", "cpu",
                                            "--strict", NULL});
    assert_int_equal(r.exit_code, EXIT_RUNTIME);
    assert_non_null(strstr(r.err, ERROR_PREFIX "springs not converged at 4 of 4 frame(s) within "
                                               "2 iterations: frame(s) 20 (residual "));
    assert_non_null(strstr(r.err, ", 23 (residual "));
    char kept[1024];
    snprintf(kept, sizeof kept, "%s is written and kept", out);
    assert_non_null(strstr(r.err, kept));
    assert_non_null(strstr(r.err, "\"max_iterations\""));
    tu_pc2_file pc2;
    pc2_read(&pc2, out);
    assert_int_equal(pc2.samples, 4);
    free(pc2.data);
    char *strict_out = strdup(strchr(r.out, '\n')); /* after the timed line */
    assert_non_null(strict_out);
    tu_cli_result_free(&r);

    r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", out, "--graph", unconverged,
                                 "--frames", "20:23", "--backend", "cpu", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_null(strstr(r.err, ERROR_PREFIX));
    assert_string_equal(strchr(r.out, '\n'), strict_out);
    assert_non_null(strstr(r.out, "springs not converged at frame(s): 20 (residual "));
    free(strict_out);
    tu_cli_result_free(&r);

    r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", out, "--graph", converged, "--frames",
                                 "20:23", "--backend", "cpu", "--strict", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, " 0 frame(s) not converged"));
    assert_null(strstr(r.err, ERROR_PREFIX));
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", out, "--method", "lbs", "--frames",
                                 "20:23", "--backend", "cpu", "--strict", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_null(strstr(r.err, ERROR_PREFIX));
    tu_cli_result_free(&r);
    remove(out);
    remove(unconverged);
    remove(converged);
    free(out);
    free(unconverged);
    free(converged);
}

static void test_bake_errors(void **state)
{
    fixture *fx = *state;
    char *out = tu_path_join(fx->dir, "never.pc2");
    char *garbage = tu_path_join(fx->dir, "garbage.x");
    FILE *g = fopen(garbage, "wb");
    assert_non_null(g);
    for (int i = 0; i < 4096; ++i) fputc((i * 7919 + 13) & 0xff, g);
    fclose(g);
    char *missing = tu_path_join(fx->dir, "missing.x");
    char last_frame[32];
    snprintf(last_frame, sizeof last_frame, "%u", (unsigned)(fx->frame_count - 1));

    /* Runtime errors: exit 1. */
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--frames", "5:2",
                                        NULL},
                   EXIT_RUNTIME, last_frame);
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--frames",
                                        "0:100000", NULL},
                   EXIT_RUNTIME, last_frame);
    expect_failure(fx, (const char *[]){"bake", missing, "-o", out, NULL}, EXIT_RUNTIME,
                   "missing.x");
    expect_failure(fx, (const char *[]){"bake", garbage, "-o", out, NULL}, EXIT_RUNTIME,
                   NULL);
    expect_failure(fx, (const char *[]){"info", garbage, NULL}, EXIT_RUNTIME, NULL);
    expect_failure(fx, (const char *[]){"info", missing, NULL}, EXIT_RUNTIME, NULL);
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o",
                                        "/nonexistent-dir/x.pc2", NULL},
                   EXIT_RUNTIME, "/nonexistent-dir/x.pc2");
    assert_false(tu_file_exists("/nonexistent-dir"));
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "--animation", "7", "-o", out,
                                        NULL},
                   EXIT_RUNTIME, NULL);
    expect_failure(fx, (const char *[]){"bake", NO_SKELETON_MODEL, "-o", out, NULL},
                   EXIT_RUNTIME, "box.obj");
    expect_failure(fx, (const char *[]){"bake", NO_ANIMATION_MODEL, "-o", out, NULL},
                   EXIT_RUNTIME, "no animation");
    char *abc = tu_path_join(fx->dir, "out.abc");
    char *txt = tu_path_join(fx->dir, "out.txt");
    /* Normals need an Alembic output. */
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--normals", NULL},
                   EXIT_RUNTIME, ".abc");
    /* A failed Alembic bake leaves no file. */
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "--animation", "7", "-o", abc,
                                        NULL},
                   EXIT_RUNTIME, NULL);
    assert_false(tu_file_exists(abc));
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", txt, NULL},
                   EXIT_RUNTIME, ".pc2");

    /* Usage errors: exit 2. */
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--method", "foo",
                                        NULL},
                   EXIT_USAGE, "foo");
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--backend", "gpu",
                                        NULL},
                   EXIT_USAGE, NULL);
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--fps", "abc",
                                        NULL},
                   EXIT_USAGE, "abc");
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--fps", "0", NULL},
                   EXIT_USAGE, NULL);
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--fps", "nan",
                                        NULL},
                   EXIT_USAGE, NULL);
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--frames", "a:b",
                                        NULL},
                   EXIT_USAGE, NULL);
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--frames", "3",
                                        NULL},
                   EXIT_USAGE, NULL);
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--frames", "-1:3",
                                        NULL},
                   EXIT_USAGE, NULL);
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", out, "--bogus", NULL},
                   EXIT_USAGE, "--bogus");
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, NULL}, EXIT_USAGE, "-o");
    expect_failure(fx, (const char *[]){"bake", MODEL_PATH, "-o", NULL}, EXIT_USAGE, NULL);
    expect_failure(fx, (const char *[]){"bake", "-o", out, NULL}, EXIT_USAGE, NULL);
    expect_failure(fx, (const char *[]){"info", MODEL_PATH, "--fps", "-3", NULL},
                   EXIT_USAGE, NULL);
    assert_false(tu_file_exists(out));

    remove(garbage);
    free(garbage);
    free(missing);
    free(abc);
    free(txt);
    free(out);
}

/* ------------------------------------------------------------------------ */
/* Tests: ssk_scene_bake directly.                                           */
/* ------------------------------------------------------------------------ */

typedef struct progress_log {
    uint32_t calls, last_done, total;
    bool ordered;
} progress_log;

static void record_progress(void *user, uint32_t done, uint32_t total)
{
    progress_log *p = user;
    if (done != p->last_done + 1) p->ordered = false;
    p->last_done = done;
    p->total = total;
    p->calls++;
}

static ssk_bake_desc bake_desc(const char *output)
{
    ssk_bake_desc d;
    memset(&d, 0, sizeof d);
    d.output_path = output;
    d.method = SSK_METHOD_LBS;
    d.backend = SSK_BACKEND_AUTO;
    d.fps = CLI_FPS;
    d.first_frame = 0;
    d.last_frame = -1;
    return d;
}

static void test_library_bake_progress_and_stats(void **state)
{
    fixture *fx = *state;
    char *out = tu_path_join(fx->dir, "lib.pc2");
    ssk_bake_desc d = bake_desc(out);
    d.method = SSK_METHOD_DQS;
    d.first_frame = 1;
    d.last_frame = 6;
    progress_log log = {0, 0, 0, true};
    d.progress = record_progress;
    d.progress_user = &log;
    ssk_bake_stats stats;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_OK);
    assert_int_equal(log.calls, 6);
    assert_int_equal(log.total, 6);
    assert_int_equal(log.last_done, 6);
    assert_true(log.ordered);
    assert_int_equal(stats.frame_count, 6);
    assert_int_equal(stats.vertex_count, fx->vertex_count);
    assert_int_equal(stats.backend, SSK_BACKEND_CPU);
    assert_true(stats.deform_seconds >= 0.0);
    assert_true(stats.wall_seconds >= stats.deform_seconds);

    tu_pc2_file f;
    pc2_read(&f, out);
    assert_int_equal(f.samples, 6);
    assert_true(f.start_frame == 1.0f);
    float *expect = direct_positions(fx, SSK_METHOD_DQS, 4);
    assert_memory_equal(pc2_sample(&f, 3), expect,
                        sizeof(float) * 3 * (size_t)fx->vertex_count);
    free(expect);
    free(f.data);
    remove(out);
    free(out);
}

static void test_library_bake_validates_before_touching_disk(void **state)
{
    fixture *fx = *state;
    char *out = tu_path_join(fx->dir, "bad.pc2");
    char *abc = tu_path_join(fx->dir, "bad.abc");
    char *obj = tu_path_join(fx->dir, "bad.obj");
    char *noext = tu_path_join(fx->dir, "noext");
    ssk_error err = {0};
    ssk_bake_stats stats;
    int before = tu_dir_entry_count(fx->dir);
    char last_frame[32];
    snprintf(last_frame, sizeof last_frame, "%u", (unsigned)(fx->frame_count - 1));

    ssk_bake_desc d = bake_desc(out);
    d.fps = 0.0;
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);
    d.fps = -24.0;
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);
    d.fps = NAN;
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);
    d.fps = INFINITY;
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);

    d = bake_desc(out);
    d.with_normals = 1; /* .pc2 has no place for normals */
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, ".abc"));
    d = bake_desc(abc);
    d.fps = 0.0;
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);
    d = bake_desc(obj);
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, ".pc2"));
    d = bake_desc(noext);
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);

    d = bake_desc(out);
    d.animation = 3;
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_NO_ANIMATION);
    d = bake_desc(out);
    d.method = SSK_METHOD_COUNT;
    assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);

    const int32_t bad_ranges[][2] = {
        {5, 2}, {3, 2}, {-1, 3}, {0, (int32_t)fx->frame_count}, {3, -1}, {0, -2},
        {(int32_t)fx->frame_count, (int32_t)fx->frame_count},
    };
    for (size_t i = 0; i < sizeof bad_ranges / sizeof bad_ranges[0]; ++i) {
        d = bake_desc(out);
        d.first_frame = bad_ranges[i][0];
        d.last_frame = bad_ranges[i][1];
        assert_int_equal(ssk_scene_bake(fx->scene, &d, &stats, &err), SSK_ERROR_FRAME_RANGE);
        assert_int_equal(err.status, SSK_ERROR_FRAME_RANGE);
        assert_non_null(strstr(err.message, last_frame));
    }
    assert_int_equal(ssk_scene_bake(NULL, &d, &stats, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_scene_bake(fx->scene, NULL, &stats, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tu_dir_entry_count(fx->dir), before);

    /* The first and the last valid frame are accepted. */
    d = bake_desc(out);
    d.first_frame = 0;
    d.last_frame = (int32_t)fx->frame_count - 1;
    assert_int_equal(ssk_scene_bake(fx->scene, &d, NULL, &err), SSK_OK);
    assert_true(tu_file_exists(out));
    remove(out);
    free(out);
    free(abc);
    free(obj);
    free(noext);
}

static void test_library_bake_write_failure_leaves_nothing(void **state)
{
    fixture *fx = *state;
    char *out = tu_path_join(fx->dir, "full.pc2");
    int before = tu_dir_entry_count(fx->dir);
    /* Room for the header and about one frame: the write of a later frame
     * fails as on a full disk (RLIMIT_FSIZE, EFBIG; works as root too). */
    tu_file_size_limit saved;
    tu_file_size_limit_begin(&saved,
                             TU_PC2_HEADER_BYTES + (rlim_t)fx->vertex_count * 12 + 100);
    ssk_bake_desc d = bake_desc(out);
    ssk_error err = {0};
    ssk_status s = ssk_scene_bake(fx->scene, &d, NULL, &err);
    tu_file_size_limit_end(&saved);
    assert_int_equal(s, SSK_ERROR_IO);
    assert_non_null(strstr(err.message, out));
    assert_int_equal(tu_dir_entry_count(fx->dir), before);
    free(out);
}

/* The GL backend bakes the same cache as the CPU (within 1e-5 of the
 * bounding-box diagonal), its summary names the renderer, and gpuinfo
 * reports the context. Skipped only when no GL context can be created. */
static void test_bake_gl_backend_and_gpuinfo(void **state)
{
    fixture *fx = *state;
    ssk_gl_context *gl = NULL;
    ssk_error err = {0};
    if (ssk_gl_context_create(&gl, &err) != SSK_OK) {
        tu_cli_result r = run_cli((const char *[]){"gpuinfo", "--backend", "gl", NULL});
        assert_int_equal(r.exit_code, 1);
        assert_non_null(strstr(r.err, "springskin: error:"));
        tu_cli_result_free(&r);
        print_message("GL part skipped: no GL context can be created: %s\n", err.message);
        skip();
    }
    ssk_gl_info info;
    ssk_gl_context_info(gl, &info, NULL);
    ssk_gl_context_destroy(gl);
    tu_cli_result r = run_cli((const char *[]){"gpuinfo", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "EGL platform: "));
    assert_non_null(strstr(r.out, info.renderer));
    assert_non_null(strstr(r.out, info.hardware ? "renderer: hardware" : "renderer: software"));
    assert_non_null(strstr(r.out, "max invocations"));
    assert_non_null(strstr(r.out, info.hardware ? "backend: gl" : "backend: cpu"));
    tu_cli_result_free(&r);
    r = run_cli((const char *[]){"gpuinfo", "extra", NULL});
    assert_int_equal(r.exit_code, 2);
    tu_cli_result_free(&r);

    char *gl_path = tu_path_join(fx->dir, "gl.pc2"), *cpu_path = tu_path_join(fx->dir, "cpu.pc2");
    const char *methods[] = {"lbs", "dqs"};
    for (int m = 0; m < 2; ++m) {
        r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", gl_path, "--method", methods[m],
                                     "--backend", "gl", NULL});
        assert_int_equal(r.exit_code, 0);
        assert_non_null(strstr(r.out, "gl backend: "));
        assert_non_null(strstr(r.out, info.renderer));
        tu_cli_result_free(&r);
        r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", cpu_path, "--method", methods[m],
                                     "--backend", "cpu", NULL});
        assert_int_equal(r.exit_code, 0);
        tu_cli_result_free(&r);
        tu_pc2_file g, c;
        pc2_read(&g, gl_path);
        pc2_read(&c, cpu_path);
        assert_int_equal(g.samples, c.samples);
        assert_int_equal(g.points, c.points);
        size_t floats = (size_t)c.samples * c.points * 3;
        double diag = tu_bbox_diagonal(c.data, (size_t)c.samples * c.points);
        assert_true(tu_max_abs_diff(g.data, c.data, floats) <= 1e-5 * diag);
        free(g.data);
        free(c.data);
    }
    remove(gl_path);
    remove(cpu_path);
    free(gl_path);
    free(cpu_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_bake_lbs_and_dqs),
        cmocka_unit_test(test_bake_gl_backend_and_gpuinfo),
        cmocka_unit_test(test_bake_frame_range_and_fps),
        cmocka_unit_test(test_bake_spring_summary),
        cmocka_unit_test(test_bake_strict),
        cmocka_unit_test(test_bake_errors),
        cmocka_unit_test(test_library_bake_progress_and_stats),
        cmocka_unit_test(test_library_bake_validates_before_touching_disk),
        cmocka_unit_test(test_library_bake_write_failure_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
