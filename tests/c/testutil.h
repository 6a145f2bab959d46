/* testutil.h — generated rigs, small math, files, the CLI and a stand-in
 * for a full disk, for the C tests. */
#ifndef SSK_TESTUTIL_H
#define SSK_TESTUTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "springskin.h"

/* A capped cylinder ("limb") along +Y from y = 0 to y = length, radius
 * `radius`, `rings` rings of `segments` vertices, with a chain of
 * `bone_count` equal bones along +Y (bind matrices are translations).
 * Weights: each vertex is weighted to the bone containing it and its
 * neighbor across the closest joint with a smooth falloff over
 * `blend` (fraction of a bone length) around each joint, at most 2
 * influences, stored with K = influences (>= 2; extra slots zero).
 * Returns NULL (and fails the test) on error. */
ssk_rig *tu_make_limb(uint32_t rings, uint32_t segments, uint32_t bone_count,
                      float length, float radius, float blend,
                      uint32_t influences);
/* The same with ring r at height ring_y[r] (#rings values from 0 to
 * `length`, increasing; NULL: evenly spaced). */
ssk_rig *tu_make_limb_rings(uint32_t rings, uint32_t segments, uint32_t bone_count,
                            float length, float radius, float blend, uint32_t influences,
                            const float *ring_y);

/* Row-major 4x4: rotation of `angle` radians about unit `axis` through
 * `pivot`. */
void tu_mat4_rotation(float m[16], const float axis[3], float angle,
                      const float pivot[3]);
void tu_mat4_translation(float m[16], float x, float y, float z);
/* Scale about `pivot`. */
void tu_mat4_scale(float m[16], float sx, float sy, float sz,
                   const float pivot[3]);
void tu_mat4_mul(float dst[16], const float a[16], const float b[16]);
void tu_mat4_identity(float m[16]);

/* Largest |a[i] - b[i]|. */
double tu_max_abs_diff(const float *a, const float *b, size_t n);
/* Diagonal of the bounding box of #n by 3 points. */
double tu_bbox_diagonal(const float *points, size_t n);
/* One frame of `method` on the CPU backend: dst gets #V by 3 deformed
 * positions of the whole rig, skin the #B by 16 row-major skinning
 * matrices; fails the test on any error. */
void tu_deform(float *dst, const ssk_rig *rig, ssk_method method, const float *skin);

/* Makes a fresh temporary directory (mkdtemp); returns a static-lifetime
 * malloc'ed path the test frees. */
char *tu_temp_dir(void);

/* ------------------------------------------------------------------------ */
/* Files and directories.                                                   */
/* ------------------------------------------------------------------------ */

/* The functions that fail the test (cmocka assert) say so; tu_remove_tree
 * never does, so teardowns may call it. */

/* "dir/name", malloc'ed; the caller frees it. Fails the test when out of
 * memory. */
char *tu_path_join(const char *dir, const char *name);

/* "path.tmp-PID", malloc'ed: the temporary file the cache writers (.pc2,
 * .abc) write before renaming it to `path`. The caller frees it. */
char *tu_temp_name(const char *path);

/* Whether `path` exists (stat succeeds). */
bool tu_file_exists(const char *path);

/* Number of entries of `dir` other than "." and ".."; fails the test when
 * `dir` cannot be opened. */
int tu_dir_entry_count(const char *dir);

/* Removes `dir` and everything below it, best effort (errors ignored);
 * does not free `dir`. */
void tu_remove_tree(const char *dir);

/* The whole file `path`: a malloc'ed buffer of *size bytes (size may be
 * NULL) followed by one '\0', so a text file is also a C string. Fails
 * the test when the file cannot be opened or read. The caller frees it. */
unsigned char *tu_read_file(const char *path, size_t *size);

/* Writes `size` bytes to `path` (created or truncated); fails the test on
 * an error. */
void tu_write_file(const char *path, const unsigned char *bytes, size_t size);

/* Little-endian 32- and 64-bit words (binary file formats). */
uint32_t tu_get_le32(const unsigned char *p);
void tu_put_le32(unsigned char *p, uint32_t v);
void tu_put_le64(unsigned char *p, uint64_t v);

/* ------------------------------------------------------------------------ */
/* The `springskin` executable (SSK_CLI_PATH).                              */
/* ------------------------------------------------------------------------ */

typedef struct tu_cli_result {
    int exit_code; /* -1 when killed by a signal */
    char *out, *err; /* captured stdout and stderr, '\0'-terminated */
} tu_cli_result;

/* Runs SSK_CLI_PATH with `args` (NULL-terminated arguments after the
 * program name, at most TU_CLI_MAX_ARGS) in a child process (fork +
 * execv) and waits for it. Its stdout and stderr go to the files
 * capture_dir/stdout and capture_dir/stderr, which are read back and
 * removed. Fails the test when the process cannot be started or waited
 * for. Free the result with tu_cli_result_free. */
#define TU_CLI_MAX_ARGS 62
tu_cli_result tu_run_cli(const char *capture_dir, const char *const *args);
void tu_cli_result_free(tu_cli_result *r);

/* ------------------------------------------------------------------------ */
/* A full disk.                                                             */
/* ------------------------------------------------------------------------ */

/* RLIMIT_FSIZE stands in for a full disk: write(2) fails with EFBIG past
 * `limit` bytes of any file, for root too (a read-only directory would not
 * stop root); SIGXFSZ is ignored meanwhile so the process is not killed. */

typedef struct tu_file_size_limit {
    struct rlimit saved;        /* RLIMIT_FSIZE before */
    void (*saved_handler)(int); /* SIGXFSZ handler before */
} tu_file_size_limit;

/* Lowers the soft RLIMIT_FSIZE to `limit` bytes and ignores SIGXFSZ;
 * fails the test when the limit cannot be read or set. */
void tu_file_size_limit_begin(tu_file_size_limit *state, rlim_t limit);
/* Restores the limit and the handler saved by tu_file_size_limit_begin. */
void tu_file_size_limit_end(const tu_file_size_limit *state);

/* ------------------------------------------------------------------------ */
/* An independent .pc2 reader.                                              */
/* ------------------------------------------------------------------------ */

/* Explicit little-endian decoding, not the library's code. Header:
 * magic[12] "POINTCACHE2\0", int32 version, int32 points, float32 start
 * frame, float32 sample rate, int32 samples; then samples x points x 3
 * float32. */

#define TU_PC2_HEADER_BYTES 32

typedef struct tu_pc2_file {
    char magic[12];
    int32_t version, points, samples;
    float start_frame, sample_rate;
    float *data;    /* samples * points * 3, malloc'ed: the caller frees it */
    long file_size; /* bytes */
} tu_pc2_file;

/* Reads the whole file; fails the test when it cannot be read, when points
 * or samples is negative, when it is shorter than the header says, or when
 * anything follows the last sample. */
void tu_pc2_read(tu_pc2_file *out, const char *path);

#endif
