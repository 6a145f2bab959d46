/* test_pc2.c — the streaming .pc2 writer: exact round trip through an
 * independent reader, temporary-file-and-rename behavior, no file left on
 * abort or on any failure (non-finite sample, missing directory, rename onto
 * a directory, file-size limit standing in for a full disk). */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deterministic, varied sample values, including -0, a subnormal and large
 * magnitudes, so the round trip checks exact bits. */
static void fill_sample(float *dst, uint32_t points, uint32_t sample)
{
    for (uint32_t i = 0; i < points * 3; ++i)
        dst[i] = (float)((double)(i + 1) * 0.37 - (double)sample * 1.25) *
                 ((i % 2) ? -1.0f : 1.0f);
    if (points * 3 > 2) {
        dst[0] = -0.0f;
        dst[1] = 1e-40f; /* subnormal */
        dst[2] = 3.0e38f;
    }
}

/* ------------------------------------------------------------------------ */

static void test_round_trip_exact(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "cache.pc2");
    char *tmp = tu_temp_name(path);
    enum { POINTS = 7, SAMPLES = 4 };
    float written[SAMPLES][POINTS * 3];
    ssk_error err = {0};
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, POINTS, 12.0f, 1.0f, &err), SSK_OK);
    assert_non_null(w);
    /* While writing, only the temporary file exists. */
    assert_false(tu_file_exists(path));
    assert_true(tu_file_exists(tmp));
    for (uint32_t s = 0; s < SAMPLES; ++s) {
        fill_sample(written[s], POINTS, s);
        assert_int_equal(ssk_pc2_writer_write(w, written[s], &err), SSK_OK);
    }
    assert_false(tu_file_exists(path));
    assert_int_equal(ssk_pc2_writer_finish(w, &err), SSK_OK);
    assert_int_equal(err.status, SSK_OK);
    assert_true(tu_file_exists(path));
    assert_false(tu_file_exists(tmp));
    assert_int_equal(tu_dir_entry_count(dir), 1);

    tu_pc2_file f;
    tu_pc2_read(&f, path);
    assert_memory_equal(f.magic, "POINTCACHE2\0", 12);
    assert_int_equal(f.version, 1);
    assert_int_equal(f.points, POINTS);
    assert_int_equal(f.samples, SAMPLES);
    assert_true(f.start_frame == 12.0f);
    assert_true(f.sample_rate == 1.0f);
    assert_int_equal(f.file_size, TU_PC2_HEADER_BYTES + SAMPLES * POINTS * 12);
    /* Bit-exact, -0 and the subnormal included. */
    assert_memory_equal(f.data, written, sizeof written);
    free(f.data);
    free(tmp);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_zero_samples_and_other_header_values(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "empty.pc2");
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, -5.0f, 0.5f, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_finish(w, NULL), SSK_OK);
    tu_pc2_file f;
    tu_pc2_read(&f, path);
    assert_int_equal(f.points, 3);
    assert_int_equal(f.samples, 0);
    assert_true(f.start_frame == -5.0f);
    assert_true(f.sample_rate == 0.5f);
    assert_int_equal(f.file_size, TU_PC2_HEADER_BYTES);
    free(f.data);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_large_sample_spans_chunks(void **state)
{
    (void)state;
    /* More floats than one internal encoding chunk, and not a multiple. */
    enum { POINTS = 10007, SAMPLES = 3 };
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "big.pc2");
    float *values = malloc(sizeof(float) * POINTS * 3 * SAMPLES);
    assert_non_null(values);
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, POINTS, 0.0f, 1.0f, NULL), SSK_OK);
    for (uint32_t s = 0; s < SAMPLES; ++s) {
        fill_sample(values + (size_t)s * POINTS * 3, POINTS, s);
        assert_int_equal(ssk_pc2_writer_write(w, values + (size_t)s * POINTS * 3, NULL),
                         SSK_OK);
    }
    assert_int_equal(ssk_pc2_writer_finish(w, NULL), SSK_OK);
    tu_pc2_file f;
    tu_pc2_read(&f, path);
    assert_int_equal(f.samples, SAMPLES);
    assert_int_equal(f.points, POINTS);
    assert_memory_equal(f.data, values, sizeof(float) * POINTS * 3 * SAMPLES);
    free(f.data);
    free(values);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_abort_leaves_nothing(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "aborted.pc2");
    float sample[3 * 4];
    fill_sample(sample, 4, 0);
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, 4, 0.0f, 1.0f, NULL), SSK_OK);
    assert_int_equal(tu_dir_entry_count(dir), 1); /* the temporary file */
    assert_int_equal(ssk_pc2_writer_write(w, sample, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, sample, NULL), SSK_OK);
    ssk_pc2_writer_abort(w);
    assert_int_equal(tu_dir_entry_count(dir), 0);

    /* Abort right after open, and abort(NULL). */
    assert_int_equal(ssk_pc2_writer_open(&w, path, 4, 0.0f, 1.0f, NULL), SSK_OK);
    ssk_pc2_writer_abort(w);
    ssk_pc2_writer_abort(NULL);
    assert_int_equal(tu_dir_entry_count(dir), 0);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_abort_keeps_existing_file_and_finish_replaces_it(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "existing.pc2");
    FILE *old = fopen(path, "wb");
    assert_non_null(old);
    fputs("old contents", old);
    fclose(old);
    float sample[6];
    fill_sample(sample, 2, 1);

    /* Aborting leaves the previous file untouched. */
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, 2, 0.0f, 1.0f, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, sample, NULL), SSK_OK);
    ssk_pc2_writer_abort(w);
    char buf[32] = {0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(buf, 1, sizeof buf - 1, f), strlen("old contents"));
    fclose(f);
    assert_string_equal(buf, "old contents");
    assert_int_equal(tu_dir_entry_count(dir), 1);

    /* Finishing replaces it. */
    assert_int_equal(ssk_pc2_writer_open(&w, path, 2, 0.0f, 1.0f, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, sample, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_finish(w, NULL), SSK_OK);
    tu_pc2_file p;
    tu_pc2_read(&p, path);
    assert_int_equal(p.samples, 1);
    assert_memory_equal(p.data, sample, sizeof sample);
    assert_int_equal(tu_dir_entry_count(dir), 1);
    free(p.data);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_nonfinite_sample_rejected_and_not_written(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "nan.pc2");
    enum { POINTS = 5 };
    float good[POINTS * 3], bad[POINTS * 3];
    fill_sample(good, POINTS, 0);
    ssk_error err = {0};
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, POINTS, 0.0f, 1.0f, &err), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, good, &err), SSK_OK);

    memcpy(bad, good, sizeof bad);
    bad[3 * 3 + 1] = NAN;
    assert_int_equal(ssk_pc2_writer_write(w, bad, &err), SSK_ERROR_NONFINITE);
    assert_int_equal(err.status, SSK_ERROR_NONFINITE);
    assert_non_null(strstr(err.message, "point 3"));

    memcpy(bad, good, sizeof bad);
    bad[POINTS * 3 - 1] = -INFINITY;
    assert_int_equal(ssk_pc2_writer_write(w, bad, &err), SSK_ERROR_NONFINITE);

    /* The writer is still usable and the rejected samples were not written. */
    assert_int_equal(ssk_pc2_writer_write(w, good, &err), SSK_OK);
    assert_int_equal(ssk_pc2_writer_finish(w, &err), SSK_OK);
    tu_pc2_file f;
    tu_pc2_read(&f, path);
    assert_int_equal(f.samples, 2);
    assert_memory_equal(f.data, good, sizeof good);
    assert_memory_equal(f.data + POINTS * 3, good, sizeof good);
    free(f.data);

    /* A bake that aborts on such an error leaves nothing. */
    assert_int_equal(ssk_pc2_writer_open(&w, path, POINTS, 0.0f, 1.0f, &err), SSK_OK);
    bad[0] = NAN;
    assert_int_equal(ssk_pc2_writer_write(w, bad, &err), SSK_ERROR_NONFINITE);
    ssk_pc2_writer_abort(w);
    assert_int_equal(tu_dir_entry_count(dir), 1); /* the earlier nan.pc2 */
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_missing_directory_is_io_error(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "no-such-dir/x.pc2");
    ssk_error err = {0};
    ssk_pc2_writer *w = (ssk_pc2_writer *)&err; /* must be reset to NULL */
    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, 0.0f, 1.0f, &err), SSK_ERROR_IO);
    assert_null(w);
    assert_int_equal(err.status, SSK_ERROR_IO);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, strerror(ENOENT)));
    assert_int_equal(tu_dir_entry_count(dir), 0);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_invalid_arguments(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "x.pc2");
    ssk_error err = {0};
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(NULL, path, 3, 0.0f, 1.0f, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_open(&w, NULL, 3, 0.0f, 1.0f, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_open(&w, "", 3, 0.0f, 1.0f, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_open(&w, path, 0, 0.0f, 1.0f, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, NAN, 1.0f, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, 0.0f, 0.0f, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, 0.0f, INFINITY, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_null(w);
    assert_int_equal(tu_dir_entry_count(dir), 0);

    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, 0.0f, 1.0f, &err), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_write(NULL, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_finish(NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    ssk_pc2_writer_abort(w);
    assert_int_equal(tu_dir_entry_count(dir), 0);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_rename_failure_removes_temporary(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    /* The destination is a non-empty directory: rename() must fail. */
    char *path = tu_path_join(dir, "taken.pc2");
    assert_int_equal(mkdir(path, 0700), 0);
    char *inner = tu_path_join(path, "keep");
    FILE *k = fopen(inner, "wb");
    assert_non_null(k);
    fclose(k);
    float sample[3] = {1.0f, 2.0f, 3.0f};
    ssk_error err = {0};
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, 1, 0.0f, 1.0f, &err), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, sample, &err), SSK_OK);
    assert_int_equal(ssk_pc2_writer_finish(w, &err), SSK_ERROR_IO);
    assert_non_null(strstr(err.message, path));
    assert_int_equal(tu_dir_entry_count(dir), 1); /* only the directory */
    remove(inner);
    free(inner);
    rmdir(path);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

/* Writes under a file-size limit standing in for a full disk
 * (tu_file_size_limit_begin: EFBIG past `limit` bytes, for root too).
 * `points` per sample, `samples` samples. Returns the status of the first
 * failing call (write or finish). */
static ssk_status write_under_file_size_limit(const char *path, rlim_t limit,
                                              uint32_t points, uint32_t samples,
                                              bool *failed_in_write, ssk_error *err)
{
    float *sample = malloc(sizeof(float) * points * 3);
    assert_non_null(sample);
    fill_sample(sample, points, 0);
    ssk_pc2_writer *w = NULL;
    tu_file_size_limit saved;
    tu_file_size_limit_begin(&saved, limit);

    ssk_status s = ssk_pc2_writer_open(&w, path, points, 0.0f, 1.0f, err);
    *failed_in_write = false;
    for (uint32_t i = 0; s == SSK_OK && i < samples; ++i) {
        s = ssk_pc2_writer_write(w, sample, err);
        if (s != SSK_OK) *failed_in_write = true;
    }
    if (s == SSK_OK) {
        s = ssk_pc2_writer_finish(w, err);
    } else if (w) {
        /* Finish after a failed write must fail and clean up too. */
        ssk_error finish_err = {0};
        assert_int_equal(ssk_pc2_writer_finish(w, &finish_err), SSK_ERROR_IO);
    }

    tu_file_size_limit_end(&saved);
    free(sample);
    return s;
}

static void test_full_disk_removes_temporary(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "full.pc2");
    ssk_error err = {0};
    bool in_write = false;

    /* A sample larger than any stdio buffer: the failure shows in write. */
    ssk_status s = write_under_file_size_limit(path, 16384, 4000, 3, &in_write, &err);
    assert_int_equal(s, SSK_ERROR_IO);
    assert_true(in_write);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, strerror(EFBIG)));
    assert_int_equal(tu_dir_entry_count(dir), 0);

    /* A small sample stays buffered: the failure shows at finish (flush). */
    s = write_under_file_size_limit(path, TU_PC2_HEADER_BYTES + 4, 1, 1, &in_write, &err);
    assert_int_equal(s, SSK_ERROR_IO);
    assert_false(in_write);
    assert_non_null(strstr(err.message, path));
    assert_int_equal(tu_dir_entry_count(dir), 0);

    /* Control: the same small write with room succeeds. */
    s = write_under_file_size_limit(path, 1 << 20, 1, 1, &in_write, &err);
    assert_int_equal(s, SSK_OK);
    assert_int_equal(tu_dir_entry_count(dir), 1);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_exact),
        cmocka_unit_test(test_zero_samples_and_other_header_values),
        cmocka_unit_test(test_large_sample_spans_chunks),
        cmocka_unit_test(test_abort_leaves_nothing),
        cmocka_unit_test(test_abort_keeps_existing_file_and_finish_replaces_it),
        cmocka_unit_test(test_nonfinite_sample_rejected_and_not_written),
        cmocka_unit_test(test_missing_directory_is_io_error),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_rename_failure_removes_temporary),
        cmocka_unit_test(test_full_disk_removes_temporary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
