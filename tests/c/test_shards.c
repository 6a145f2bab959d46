/* test_shards.c — frame-sharded bakes and their merge (issue #23), through
 * the `springskin` executable on Assimp's BCN_Epileptic.X (3014 vertices,
 * 80 frames at 24 fps):
 * - `bake --shard DIR --frames A:B` for uneven frame ranges, given out of
 *   order, then `merge DIR -o OUT` gives the very bytes of a single
 *   `bake -o OUT`: .pc2 (LBS and springs) and .abc with normals once
 *   SOURCE_DATE_EPOCH fixes the date it records (checked in the file: the
 *   date of that epoch in UTC);
 * - merge errors (no shard, a gap naming the missing frames, an overlap
 *   naming both shards, shards of two bakes, a truncated shard, a damaged
 *   one, normals into .pc2) exit 1 with a message and leave no output nor
 *   temporary file;
 * - a frame-dependent graph refuses to shard; a rerun keeps a valid shard
 *   and bakes a damaged one again;
 * - ssk_scene_bake with one deformer for two shards (given in reverse
 *   order) merges into the bytes of a bake that makes its own; a deformer
 *   of another rig is refused. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"
#define EXIT_RUNTIME 1
#define ERROR_PREFIX "springskin: error: "
/* 2023-11-14 22:13:20 UTC, a Tuesday. */
#define EPOCH_TEXT "1700000000"
#define EPOCH_DATE "Tue Nov 14 22:13:20 2023"

static char *scratch;

static int setup(void **state)
{
    (void)state;
    scratch = tu_temp_dir();
    return scratch ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_remove_tree(scratch);
    free(scratch);
    return 0;
}

static tu_cli_result run_cli(const char *const *args)
{
    char capture[512];
    snprintf(capture, sizeof capture, "%s/capture", scratch);
    if (mkdir(capture, 0700) != 0) assert_int_equal(errno, EEXIST);
    tu_cli_result r = tu_run_cli(capture, args);
    rmdir(capture);
    return r;
}

/* Runs the CLI and requires exit 0. */
static void run_ok(const char *const *args)
{
    tu_cli_result r = run_cli(args);
    if (r.exit_code != 0) fail_msg("springskin %s %s: exit %d: %s", args[0], args[1], r.exit_code, r.err);
    tu_cli_result_free(&r);
}

/* Whether two files hold the same bytes. */
static bool same_bytes(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    unsigned char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    const bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* Bakes MODEL_PATH as one file and as shards of `ranges` (A:B texts), merges
 * them, and requires the same bytes. extra: NULL-terminated options. */
static void check_sharded_equals_single(const char *name, const char *ext,
                                        const char *const *ranges, int range_count,
                                        const char *const *extra)
{
    char single[512], merged[512], dir[512];
    snprintf(single, sizeof single, "%s/%s-single%s", scratch, name, ext);
    snprintf(merged, sizeof merged, "%s/%s-merged%s", scratch, name, ext);
    snprintf(dir, sizeof dir, "%s/%s.d", scratch, name);
    const char *args[TU_CLI_MAX_ARGS];
    int n = 0;
    args[n++] = "bake";
    args[n++] = MODEL_PATH;
    args[n++] = "-o";
    args[n++] = single;
    for (int i = 0; extra[i]; ++i) args[n++] = extra[i];
    args[n] = NULL;
    run_ok(args);
    for (int k = 0; k < range_count; ++k) {
        n = 0;
        args[n++] = "bake";
        args[n++] = MODEL_PATH;
        args[n++] = "--shard";
        args[n++] = dir;
        args[n++] = "--frames";
        args[n++] = ranges[k];
        for (int i = 0; extra[i]; ++i) args[n++] = extra[i];
        args[n] = NULL;
        run_ok(args);
    }
    assert_int_equal(tu_dir_entry_count(dir), range_count);
    tu_cli_result r = run_cli((const char *[]){"merge", dir, "-o", merged, NULL});
    if (r.exit_code != 0) fail_msg("merge: %s", r.err);
    assert_non_null(strstr(r.out, "merged"));
    tu_cli_result_free(&r);
    if (!same_bytes(single, merged)) fail_msg("%s: merged %s differs from the single bake", name, ext);
}

static void test_pc2_lbs_and_springs(void **state)
{
    (void)state;
    /* uneven chunks, baked out of order */
    static const char *const ranges[] = {"50:79", "0:0", "1:17", "18:49"};
    check_sharded_equals_single("lbs", ".pc2", ranges, 4, (const char *[]){"--method", "lbs", NULL});
    check_sharded_equals_single("spring", ".pc2", ranges, 4,
                                (const char *[]){"--method", "spring", NULL});
}

static void test_abc_with_source_date_epoch(void **state)
{
    (void)state;
    assert_int_equal(setenv("SOURCE_DATE_EPOCH", EPOCH_TEXT, 1), 0);
    static const char *const ranges[] = {"0:39", "40:79"};
    check_sharded_equals_single("dqs", ".abc", ranges, 2,
                                (const char *[]){"--method", "dqs", "--normals", NULL});
    char path[512];
    snprintf(path, sizeof path, "%s/dqs-merged.abc", scratch);
    size_t size = 0;
    unsigned char *bytes = tu_read_file(path, &size);
    assert_non_null(bytes);
    const char needle[] = "_ai_DateWritten=" EPOCH_DATE;
    bool found = false;
    for (size_t i = 0; !found && i + sizeof needle - 1 <= size; ++i)
        found = memcmp(bytes + i, needle, sizeof needle - 1) == 0;
    free(bytes);
    assert_true(found);

    /* a malformed value is refused (reproducible-builds: fail, do not guess) */
    assert_int_equal(setenv("SOURCE_DATE_EPOCH", "yesterday", 1), 0);
    snprintf(path, sizeof path, "%s/bad-epoch.abc", scratch);
    tu_cli_result r = run_cli((const char *[]){"bake", MODEL_PATH, "-o", path, NULL});
    assert_int_equal(r.exit_code, EXIT_RUNTIME);
    assert_non_null(strstr(r.err, "SOURCE_DATE_EPOCH"));
    tu_cli_result_free(&r);
    assert_false(tu_file_exists(path));
    unsetenv("SOURCE_DATE_EPOCH");
}

/* merge DIR -o OUT fails with exit 1, `message` in stderr, and leaves no
 * output (nor a temporary file: the directory holds only its shards). */
static void expect_merge_error(const char *dir, const char *out, const char *message)
{
    const int before = tu_dir_entry_count(scratch);
    tu_cli_result r = run_cli((const char *[]){"merge", dir, "-o", out, NULL});
    assert_int_equal(r.exit_code, EXIT_RUNTIME);
    assert_non_null(strstr(r.err, ERROR_PREFIX));
    if (!strstr(r.err, message)) fail_msg("expected '%s' in: %s", message, r.err);
    tu_cli_result_free(&r);
    assert_false(tu_file_exists(out));
    assert_int_equal(tu_dir_entry_count(scratch), before);
}

static void shard(const char *dir, const char *frames, const char *method)
{
    run_ok((const char *[]){"bake", MODEL_PATH, "--shard", dir, "--frames", frames, "--method",
                            method, NULL});
}

static void corrupt_byte(const char *path, long from_end)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -from_end, SEEK_END), 0);
    const int c = fgetc(f);
    assert_int_equal(fseek(f, -from_end, SEEK_END), 0);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

static void test_merge_errors(void **state)
{
    (void)state;
    char dir[512], out[512], path[512];
    snprintf(out, sizeof out, "%s/never.pc2", scratch);
    snprintf(dir, sizeof dir, "%s/empty.d", scratch);
    assert_int_equal(mkdir(dir, 0700), 0);
    expect_merge_error(dir, out, "no shard");

    /* a gap in the middle and one at the end: both named */
    snprintf(dir, sizeof dir, "%s/gap.d", scratch);
    shard(dir, "0:9", "lbs");
    shard(dir, "20:29", "lbs");
    expect_merge_error(dir, out, "60 frame(s) missing: 10..19, 30..79");
    /* the covered part merges */
    tu_cli_result r = run_cli((const char *[]){"merge", dir, "-o", out, "--frames", "20:29", NULL});
    assert_int_equal(r.exit_code, 0);
    tu_cli_result_free(&r);
    assert_true(tu_file_exists(out));
    assert_int_equal(remove(out), 0);

    /* an overlap */
    shard(dir, "5:19", "lbs");
    expect_merge_error(dir, out, "overlap");

    /* two bakes */
    snprintf(dir, sizeof dir, "%s/two.d", scratch);
    shard(dir, "0:39", "lbs");
    shard(dir, "40:79", "dqs");
    expect_merge_error(dir, out, "two different bakes (their graph_hash differs)");

    /* truncated, then damaged (same size, one byte changed) */
    snprintf(dir, sizeof dir, "%s/cut.d", scratch);
    shard(dir, "0:39", "lbs");
    shard(dir, "40:79", "lbs");
    snprintf(path, sizeof path, "%s/frames-0000000040-0000000079.ssks", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 7), 0);
    expect_merge_error(dir, out, "is truncated");
    /* a rerun of that range bakes it again (the shard is not valid) */
    r = run_cli((const char *[]){"bake", MODEL_PATH, "--shard", dir, "--frames", "40:79", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "baked 40 frames"));
    tu_cli_result_free(&r);
    /* and a valid one is kept */
    r = run_cli((const char *[]){"bake", MODEL_PATH, "--shard", dir, "--frames", "40:79", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "kept"));
    tu_cli_result_free(&r);
    corrupt_byte(path, 1000);
    expect_merge_error(dir, out, "does not match its checksum");

    /* normals have no place in .pc2 */
    snprintf(dir, sizeof dir, "%s/normals.d", scratch);
    run_ok((const char *[]){"bake", MODEL_PATH, "--shard", dir, "--normals", NULL});
    expect_merge_error(dir, out, "no place for them");
}

static void test_frame_dependent_refuses(void **state)
{
    (void)state;
    char graph[512], dir[512];
    snprintf(graph, sizeof graph, "%s/dependent.json", scratch);
    snprintf(dir, sizeof dir, "%s/dependent.d", scratch);
    FILE *f = fopen(graph, "w");
    assert_non_null(f);
    fputs("{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", \"method\": "
          "\"irs\"}, {\"id\": \"relax\", \"type\": \"spring\", \"mode\": \"frame_dependent\"}, "
          "{\"id\": \"out\", \"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": "
          "\"relax\"}, {\"from\": \"relax\", \"to\": \"out\"}]}",
          f);
    fclose(f);
    tu_cli_result r = run_cli(
        (const char *[]){"bake", MODEL_PATH, "--shard", dir, "--frames", "0:9", "--graph", graph, NULL});
    assert_int_equal(r.exit_code, EXIT_RUNTIME);
    if (!strstr(r.err, "node 'relax' is frame-dependent")) fail_msg("stderr: %s", r.err);
    tu_cli_result_free(&r);
    assert_false(tu_file_exists(dir) && tu_dir_entry_count(dir) > 0);
}

/* ssk_scene_bake with one deformer for two shards (a Dask worker's
 * chunks) merges into the bytes of a bake that makes its own; a deformer
 * of another rig is refused. */
static void test_library_shards_with_one_deformer(void **state)
{
    (void)state;
    ssk_error err = {0};
    ssk_scene *scene = NULL, *other = NULL;
    assert_int_equal(ssk_scene_import(&scene, MODEL_PATH, &err), SSK_OK);
    assert_int_equal(ssk_scene_import(&other, MODEL_PATH, &err), SSK_OK);
    char single[512], merged[512], dir[512];
    snprintf(single, sizeof single, "%s/lib-single.pc2", scratch);
    snprintf(merged, sizeof merged, "%s/lib-merged.pc2", scratch);
    snprintf(dir, sizeof dir, "%s/lib.d", scratch);
    ssk_bake_desc desc = {0};
    desc.output_path = single;
    desc.method = SSK_METHOD_SPRING;
    desc.backend = SSK_BACKEND_CPU;
    desc.fps = 24.0;
    desc.first_frame = 0;
    desc.last_frame = -1;
    assert_int_equal(ssk_scene_bake(scene, &desc, NULL, &err), SSK_OK);

    ssk_deformer *d = NULL;
    ssk_deformer_desc dd = {.method = SSK_METHOD_SPRING, .backend = SSK_BACKEND_CPU};
    assert_int_equal(ssk_deformer_create(&d, ssk_scene_rig(scene), &dd, &err), SSK_OK);
    desc.output_path = NULL;
    desc.shard_directory = dir;
    desc.deformer = d;
    desc.method = SSK_METHOD_LBS; /* ignored: the deformer's */
    /* the second half first: the deformer's history must not matter */
    const int32_t ranges[2][2] = {{40, 79}, {0, 39}};
    for (int k = 0; k < 2; ++k) {
        desc.first_frame = ranges[k][0];
        desc.last_frame = ranges[k][1];
        ssk_bake_stats stats;
        assert_int_equal(ssk_scene_bake(scene, &desc, &stats, &err), SSK_OK);
        assert_int_equal(stats.frame_count, 40);
        assert_int_equal(stats.shard_reused, 0);
    }
    ssk_merge_stats ms;
    assert_int_equal(ssk_shards_merge(dir, merged, 0, -1, &ms, &err), SSK_OK);
    assert_int_equal(ms.shard_count, 2);
    assert_int_equal(ms.frame_count, 80);
    assert_true(same_bytes(single, merged));

    /* another scene's rig: refused, nothing written */
    desc.shard_directory = NULL;
    desc.output_path = merged;
    assert_int_equal(remove(merged), 0);
    assert_int_equal(ssk_scene_bake(other, &desc, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "another rig"));
    assert_false(tu_file_exists(merged));
    ssk_deformer_destroy(d);
    ssk_scene_destroy(other);
    ssk_scene_destroy(scene);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pc2_lbs_and_springs),
        cmocka_unit_test(test_abc_with_source_date_epoch),
        cmocka_unit_test(test_merge_errors),
        cmocka_unit_test(test_frame_dependent_refuses),
        cmocka_unit_test(test_library_shards_with_one_deformer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
