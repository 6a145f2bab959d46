/* pc2.c — streaming writer of PC2 point caches (3ds Max / Blender's Mesh
 * Cache modifier).
 *
 * Layout (all little-endian):
 *   offset  0  char[12]  "POINTCACHE2\0"
 *   offset 12  int32     file version, 1
 *   offset 16  int32     number of points
 *   offset 20  float32   start frame
 *   offset 24  float32   sample rate (frames between samples; SpringSkin
 *                        writes one sample per frame, so 1.0)
 *   offset 28  int32     number of samples
 *   offset 32  samples × points × float32[3]
 *
 * Samples are encoded and written as they arrive through a fixed-size byte
 * buffer, so memory does not grow with the number of frames. The file is
 * written under "<path>.tmp-<pid>" in the destination's directory; finish
 * patches the sample count, flushes, fsyncs, closes and renames it onto
 * `path` (atomic on POSIX file systems), and every failure removes it. */
#include "model/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The encoder below copies float bits into uint32 and emits bytes in
 * little-endian order, so it is correct on any byte order; it does assume
 * IEEE 754 binary32 floats, which PC2 stores. */
_Static_assert(sizeof(float) == 4 && FLT_MANT_DIG == 24 && FLT_MAX_EXP == 128,
               "PC2 stores IEEE 754 binary32 floats");

#define PC2_MAGIC "POINTCACHE2"     /* with its NUL: 12 bytes */
#define PC2_MAGIC_SIZE 12
#define PC2_FILE_VERSION 1
#define PC2_HEADER_SIZE 32
#define PC2_SAMPLE_COUNT_OFFSET 28
/* Floats encoded per fwrite call (48 KiB of bytes). */
#define PC2_CHUNK_FLOATS 12288

struct ssk_pc2_writer {
    FILE *file;
    char *path;     /* final destination */
    char *tmp_path; /* "<path>.tmp-<pid>" */
    uint32_t point_count;
    uint32_t sample_count;
    bool failed;    /* a write failed: the file is incomplete */
    unsigned char chunk[PC2_CHUNK_FLOATS * 4];
};

static void put_u32_le(unsigned char *dst, uint32_t v)
{
    dst[0] = (unsigned char)(v & 0xffu);
    dst[1] = (unsigned char)((v >> 8) & 0xffu);
    dst[2] = (unsigned char)((v >> 16) & 0xffu);
    dst[3] = (unsigned char)((v >> 24) & 0xffu);
}

static void put_f32_le(unsigned char *dst, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put_u32_le(dst, bits);
}

static void writer_free(ssk_pc2_writer *w)
{
    free(w->path);
    ssk_temp_path_free(w->tmp_path);
    free(w);
}

/* Closes (if open) and removes the temporary file, frees the writer. */
static void writer_discard(ssk_pc2_writer *w)
{
    if (w->file) fclose(w->file);
    w->file = NULL;
    remove(w->tmp_path);
    writer_free(w);
}

/* Reports an I/O failure with errno's text; `saved_errno` is captured by the
 * caller right after the failing call. */
static ssk_status io_error(ssk_error *err, const char *what, const char *path,
                           int saved_errno)
{
    return ssk_error_set(err, SSK_ERROR_IO, "%s '%s': %s", what, path,
                         saved_errno ? strerror(saved_errno)
                                     : "unknown error");
}

ssk_status ssk_pc2_writer_open(ssk_pc2_writer **out, const char *path,
                               uint32_t point_count, float start_frame,
                               float sample_rate, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !path)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "pc2 writer: NULL %s", out ? "path" : "output");
    if (!path[0])
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "pc2 writer: empty output path");
    if (point_count == 0 || point_count > (uint32_t)INT32_MAX)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "pc2 writer: point count %u out of range [1, %d]",
                             (unsigned)point_count, INT32_MAX);
    if (!isfinite(start_frame) || !isfinite(sample_rate) || !(sample_rate > 0.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "pc2 writer: start frame %g must be finite and "
                             "sample rate %g finite and > 0",
                             (double)start_frame, (double)sample_rate);

    ssk_pc2_writer *w = calloc(1, sizeof *w);
    if (!w)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "pc2 writer: cannot allocate the writer");
    w->path = ssk_strdup(path);
    w->tmp_path = ssk_temp_path(path);
    if (!w->path || !w->tmp_path) {
        writer_free(w);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "pc2 writer: cannot allocate the path");
    }
    w->point_count = point_count;

    errno = 0;
    w->file = fopen(w->tmp_path, "wb");
    if (!w->file) {
        int e = errno;
        ssk_status s = ssk_error_set(
            err, SSK_ERROR_IO, "cannot create '%s' (temporary file '%s'): %s",
            path, w->tmp_path, e ? strerror(e) : "unknown error");
        writer_free(w);
        return s;
    }

    unsigned char header[PC2_HEADER_SIZE];
    memset(header, 0, sizeof header);
    memcpy(header, PC2_MAGIC, PC2_MAGIC_SIZE); /* copies the NUL too */
    put_u32_le(header + 12, (uint32_t)PC2_FILE_VERSION);
    put_u32_le(header + 16, point_count);
    put_f32_le(header + 20, start_frame);
    put_f32_le(header + 24, sample_rate);
    put_u32_le(header + PC2_SAMPLE_COUNT_OFFSET, 0u); /* patched by finish */
    errno = 0;
    if (fwrite(header, 1, sizeof header, w->file) != sizeof header) {
        int e = errno;
        ssk_status s = io_error(err, "cannot write", w->tmp_path, e);
        writer_discard(w);
        return s;
    }
    *out = w;
    return ssk_error_ok(err);
}

ssk_status ssk_pc2_writer_write(ssk_pc2_writer *w, const float *positions,
                                ssk_error *err)
{
    if (!w || !positions)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "pc2 writer: NULL %s", w ? "positions" : "writer");
    if (w->failed)
        return ssk_error_set(err, SSK_ERROR_IO,
                             "cannot write '%s': an earlier write failed",
                             w->tmp_path);
    if (w->sample_count >= (uint32_t)INT32_MAX)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "pc2 writer: more than %d samples", INT32_MAX);
    size_t count = (size_t)w->point_count * 3;
    for (size_t i = 0; i < count; ++i)
        if (!isfinite(positions[i]))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "pc2 writer: sample %u, point %zu, "
                                 "coordinate %zu is %g; nothing written",
                                 (unsigned)w->sample_count, i / 3, i % 3,
                                 (double)positions[i]);
    for (size_t start = 0; start < count; start += PC2_CHUNK_FLOATS) {
        size_t m = count - start;
        if (m > PC2_CHUNK_FLOATS) m = PC2_CHUNK_FLOATS;
        for (size_t i = 0; i < m; ++i) put_f32_le(w->chunk + 4 * i, positions[start + i]);
        errno = 0;
        if (fwrite(w->chunk, 4, m, w->file) != m) {
            int e = errno;
            w->failed = true;
            return io_error(err, "cannot write", w->tmp_path, e);
        }
    }
    w->sample_count++;
    return ssk_error_ok(err);
}

ssk_status ssk_pc2_writer_finish(ssk_pc2_writer *w, ssk_error *err)
{
    if (!w)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "pc2 writer: NULL writer");
    ssk_status s = SSK_OK;
    if (w->failed) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "cannot finish '%s': an earlier write failed",
                          w->tmp_path);
        writer_discard(w);
        return s;
    }
    unsigned char count_le[4];
    put_u32_le(count_le, w->sample_count);
    errno = 0;
    if (fseek(w->file, PC2_SAMPLE_COUNT_OFFSET, SEEK_SET) != 0 ||
        fwrite(count_le, 1, sizeof count_le, w->file) != sizeof count_le) {
        s = io_error(err, "cannot write", w->tmp_path, errno);
    } else if (fflush(w->file) != 0) {
        s = io_error(err, "cannot write", w->tmp_path, errno);
    } else if (fsync(fileno(w->file)) != 0) {
        s = io_error(err, "cannot sync", w->tmp_path, errno);
    }
    if (s != SSK_OK) {
        writer_discard(w);
        return s;
    }
    FILE *f = w->file;
    w->file = NULL;
    errno = 0;
    if (fclose(f) != 0) {
        s = io_error(err, "cannot close", w->tmp_path, errno);
        writer_discard(w);
        return s;
    }
    errno = 0;
    if (rename(w->tmp_path, w->path) != 0) {
        int e = errno;
        s = ssk_error_set(err, SSK_ERROR_IO, "cannot rename '%s' to '%s': %s",
                          w->tmp_path, w->path, strerror(e));
        writer_discard(w);
        return s;
    }
    ssk_sync_parent_directory(w->path);
    writer_free(w);
    return ssk_error_ok(err);
}

void ssk_pc2_writer_abort(ssk_pc2_writer *w)
{
    if (w) writer_discard(w);
}
