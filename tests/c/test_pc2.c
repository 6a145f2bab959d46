/* test_pc2.c — the streaming .pc2 writer: exact round trip through an
 * independent reader, temporary-file-and-rename behavior, no file left on
 * abort or on any failure (non-finite sample, missing directory, rename onto
 * a directory, file-size limit standing in for a full disk). */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Size of the PC2 header: magic[12], version, points, start, rate, samples. */
#define PC2_HEADER_BYTES 32

/* ------------------------------------------------------------------------ */
/* An independent PC2 reader (explicit little-endian decoding).             */
/* ------------------------------------------------------------------------ */

typedef struct pc2_file {
    char magic[12];
    int32_t version, points, samples;
    float start_frame, sample_rate;
    float *data; /* samples * points * 3 */
    long file_size;
} pc2_file;

static uint32_t le_u32(const unsigned char *b)
{
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
           ((uint32_t)b[3] << 24);
}

static float le_f32(const unsigned char *b)
{
    uint32_t u = le_u32(b);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Reads the whole file; fails the test on a malformed or inconsistent one. */
static void pc2_read(pc2_file *out, const char *path)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char h[PC2_HEADER_BYTES];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    memcpy(out->magic, h, 12);
    out->version = (int32_t)le_u32(h + 12);
    out->points = (int32_t)le_u32(h + 16);
    out->start_frame = le_f32(h + 20);
    out->sample_rate = le_f32(h + 24);
    out->samples = (int32_t)le_u32(h + 28);
    assert_true(out->points >= 0 && out->samples >= 0);
    size_t n = (size_t)out->samples * (size_t)out->points * 3;
    out->data = malloc(n * sizeof(float) + 1);
    assert_non_null(out->data);
    unsigned char b[4];
    for (size_t i = 0; i < n; ++i) {
        assert_int_equal(fread(b, 1, 4, f), 4);
        out->data[i] = le_f32(b);
    }
    assert_int_equal(fgetc(f), EOF); /* nothing after the last sample */
    out->file_size = ftell(f);
    fclose(f);
}

/* ------------------------------------------------------------------------ */
/* Directory helpers.                                                        */
/* ------------------------------------------------------------------------ */

/* Number of entries in `dir` other than "." and "..". */
static int dir_entry_count(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
    closedir(d);
    return n;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static char *join(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    assert_non_null(p);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static char *temp_name(const char *path)
{
    char *p = malloc(strlen(path) + 32);
    assert_non_null(p);
    sprintf(p, "%s.tmp-%ld", path, (long)getpid());
    return p;
}

/* Removes every regular file of `dir`, then `dir`. */
static void remove_dir(char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char *p = join(dir, e->d_name);
            if (remove(p) != 0) rmdir(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

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
    char *path = join(dir, "cache.pc2");
    char *tmp = temp_name(path);
    enum { POINTS = 7, SAMPLES = 4 };
    float written[SAMPLES][POINTS * 3];
    ssk_error err = {0};
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, POINTS, 12.0f, 1.0f, &err), SSK_OK);
    assert_non_null(w);
    /* While writing, only the temporary file exists. */
    assert_false(file_exists(path));
    assert_true(file_exists(tmp));
    for (uint32_t s = 0; s < SAMPLES; ++s) {
        fill_sample(written[s], POINTS, s);
        assert_int_equal(ssk_pc2_writer_write(w, written[s], &err), SSK_OK);
    }
    assert_false(file_exists(path));
    assert_int_equal(ssk_pc2_writer_finish(w, &err), SSK_OK);
    assert_int_equal(err.status, SSK_OK);
    assert_true(file_exists(path));
    assert_false(file_exists(tmp));
    assert_int_equal(dir_entry_count(dir), 1);

    pc2_file f;
    pc2_read(&f, path);
    assert_memory_equal(f.magic, "POINTCACHE2\0", 12);
    assert_int_equal(f.version, 1);
    assert_int_equal(f.points, POINTS);
    assert_int_equal(f.samples, SAMPLES);
    assert_true(f.start_frame == 12.0f);
    assert_true(f.sample_rate == 1.0f);
    assert_int_equal(f.file_size, PC2_HEADER_BYTES + SAMPLES * POINTS * 12);
    /* Bit-exact, -0 and the subnormal included. */
    assert_memory_equal(f.data, written, sizeof written);
    free(f.data);
    free(tmp);
    free(path);
    remove_dir(dir);
}

static void test_zero_samples_and_other_header_values(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = join(dir, "empty.pc2");
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, -5.0f, 0.5f, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_finish(w, NULL), SSK_OK);
    pc2_file f;
    pc2_read(&f, path);
    assert_int_equal(f.points, 3);
    assert_int_equal(f.samples, 0);
    assert_true(f.start_frame == -5.0f);
    assert_true(f.sample_rate == 0.5f);
    assert_int_equal(f.file_size, PC2_HEADER_BYTES);
    free(f.data);
    free(path);
    remove_dir(dir);
}

static void test_large_sample_spans_chunks(void **state)
{
    (void)state;
    /* More floats than one internal encoding chunk, and not a multiple. */
    enum { POINTS = 10007, SAMPLES = 3 };
    char *dir = tu_temp_dir();
    char *path = join(dir, "big.pc2");
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
    pc2_file f;
    pc2_read(&f, path);
    assert_int_equal(f.samples, SAMPLES);
    assert_int_equal(f.points, POINTS);
    assert_memory_equal(f.data, values, sizeof(float) * POINTS * 3 * SAMPLES);
    free(f.data);
    free(values);
    free(path);
    remove_dir(dir);
}

static void test_abort_leaves_nothing(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = join(dir, "aborted.pc2");
    float sample[3 * 4];
    fill_sample(sample, 4, 0);
    ssk_pc2_writer *w = NULL;
    assert_int_equal(ssk_pc2_writer_open(&w, path, 4, 0.0f, 1.0f, NULL), SSK_OK);
    assert_int_equal(dir_entry_count(dir), 1); /* the temporary file */
    assert_int_equal(ssk_pc2_writer_write(w, sample, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, sample, NULL), SSK_OK);
    ssk_pc2_writer_abort(w);
    assert_int_equal(dir_entry_count(dir), 0);

    /* Abort right after open, and abort(NULL). */
    assert_int_equal(ssk_pc2_writer_open(&w, path, 4, 0.0f, 1.0f, NULL), SSK_OK);
    ssk_pc2_writer_abort(w);
    ssk_pc2_writer_abort(NULL);
    assert_int_equal(dir_entry_count(dir), 0);
    free(path);
    remove_dir(dir);
}

static void test_abort_keeps_existing_file_and_finish_replaces_it(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = join(dir, "existing.pc2");
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
    assert_int_equal(dir_entry_count(dir), 1);

    /* Finishing replaces it. */
    assert_int_equal(ssk_pc2_writer_open(&w, path, 2, 0.0f, 1.0f, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, sample, NULL), SSK_OK);
    assert_int_equal(ssk_pc2_writer_finish(w, NULL), SSK_OK);
    pc2_file p;
    pc2_read(&p, path);
    assert_int_equal(p.samples, 1);
    assert_memory_equal(p.data, sample, sizeof sample);
    assert_int_equal(dir_entry_count(dir), 1);
    free(p.data);
    free(path);
    remove_dir(dir);
}

static void test_nonfinite_sample_rejected_and_not_written(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = join(dir, "nan.pc2");
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
    pc2_file f;
    pc2_read(&f, path);
    assert_int_equal(f.samples, 2);
    assert_memory_equal(f.data, good, sizeof good);
    assert_memory_equal(f.data + POINTS * 3, good, sizeof good);
    free(f.data);

    /* A bake that aborts on such an error leaves nothing. */
    assert_int_equal(ssk_pc2_writer_open(&w, path, POINTS, 0.0f, 1.0f, &err), SSK_OK);
    bad[0] = NAN;
    assert_int_equal(ssk_pc2_writer_write(w, bad, &err), SSK_ERROR_NONFINITE);
    ssk_pc2_writer_abort(w);
    assert_int_equal(dir_entry_count(dir), 1); /* the earlier nan.pc2 */
    free(path);
    remove_dir(dir);
}

static void test_missing_directory_is_io_error(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = join(dir, "no-such-dir/x.pc2");
    ssk_error err = {0};
    ssk_pc2_writer *w = (ssk_pc2_writer *)&err; /* must be reset to NULL */
    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, 0.0f, 1.0f, &err), SSK_ERROR_IO);
    assert_null(w);
    assert_int_equal(err.status, SSK_ERROR_IO);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, strerror(ENOENT)));
    assert_int_equal(dir_entry_count(dir), 0);
    free(path);
    remove_dir(dir);
}

static void test_invalid_arguments(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = join(dir, "x.pc2");
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
    assert_int_equal(dir_entry_count(dir), 0);

    assert_int_equal(ssk_pc2_writer_open(&w, path, 3, 0.0f, 1.0f, &err), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_write(NULL, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_pc2_writer_finish(NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    ssk_pc2_writer_abort(w);
    assert_int_equal(dir_entry_count(dir), 0);
    free(path);
    remove_dir(dir);
}

static void test_rename_failure_removes_temporary(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    /* The destination is a non-empty directory: rename() must fail. */
    char *path = join(dir, "taken.pc2");
    assert_int_equal(mkdir(path, 0700), 0);
    char *inner = join(path, "keep");
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
    assert_int_equal(dir_entry_count(dir), 1); /* only the directory */
    remove(inner);
    free(inner);
    rmdir(path);
    free(path);
    remove_dir(dir);
}

/* Stands in for a full disk: RLIMIT_FSIZE makes write(2) fail with EFBIG
 * past the limit, for root too (a read-only directory would not stop root).
 * `limit` bytes are allowed; `points` per sample, `samples` samples. Returns
 * the status of the first failing call (write or finish). */
static ssk_status write_under_file_size_limit(const char *path, rlim_t limit,
                                              uint32_t points, uint32_t samples,
                                              bool *failed_in_write, ssk_error *err)
{
    float *sample = malloc(sizeof(float) * points * 3);
    assert_non_null(sample);
    fill_sample(sample, points, 0);
    ssk_pc2_writer *w = NULL;
    struct rlimit saved, limited;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    limited = saved;
    limited.rlim_cur = limit;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &limited), 0);

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

    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, old_handler);
    free(sample);
    return s;
}

static void test_full_disk_removes_temporary(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = join(dir, "full.pc2");
    ssk_error err = {0};
    bool in_write = false;

    /* A sample larger than any stdio buffer: the failure shows in write. */
    ssk_status s = write_under_file_size_limit(path, 16384, 4000, 3, &in_write, &err);
    assert_int_equal(s, SSK_ERROR_IO);
    assert_true(in_write);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, strerror(EFBIG)));
    assert_int_equal(dir_entry_count(dir), 0);

    /* A small sample stays buffered: the failure shows at finish (flush). */
    s = write_under_file_size_limit(path, PC2_HEADER_BYTES + 4, 1, 1, &in_write, &err);
    assert_int_equal(s, SSK_ERROR_IO);
    assert_false(in_write);
    assert_non_null(strstr(err.message, path));
    assert_int_equal(dir_entry_count(dir), 0);

    /* Control: the same small write with room succeeds. */
    s = write_under_file_size_limit(path, 1 << 20, 1, 1, &in_write, &err);
    assert_int_equal(s, SSK_OK);
    assert_int_equal(dir_entry_count(dir), 1);
    free(path);
    remove_dir(dir);
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
