/* ogawa.c — append-only Ogawa container writer (layout in ogawa.h).
 *
 * Safety mirrors pc2.c: a temporary file next to the destination, renamed
 * only when complete; every failure removes it. The running offset is kept
 * here (no ftell), so block offsets are known without flushing. */
#include "io/ogawa.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OGAWA_MAGIC "Ogawa"
#define OGAWA_MAGIC_SIZE 5
#define OGAWA_FROZEN_OFFSET 5
#define OGAWA_FROZEN 0xffu
#define OGAWA_VERSION_HIGH 0u /* version 1, big-endian (the only BE field) */
#define OGAWA_VERSION_LOW 1u
#define OGAWA_ROOT_OFFSET 8
#define OGAWA_HEADER_SIZE 16
/* Child entries encoded per fwrite call when writing a group. */
#define OGAWA_GROUP_CHUNK 512
/* stdio buffer: small blocks (headers, bounds, keys) are coalesced; large
 * samples go straight to write(2). */
#define SSK_OGAWA_IO_BUFFER (1u << 20)

static void put_u64_le(unsigned char *dst, uint64_t v)
{
    for (int i = 0; i < 8; ++i) dst[i] = (unsigned char)((v >> (8 * i)) & 0xffu);
}

static void release(ssk_ogawa *o)
{
    free(o->path);
    ssk_temp_path_free(o->tmp_path);
    free(o->io_buffer);
    o->path = o->tmp_path = o->io_buffer = NULL;
}

void ssk_ogawa_discard(ssk_ogawa *o)
{
    if (!o) return;
    if (o->file) fclose(o->file);
    o->file = NULL;
    if (o->tmp_path) remove(o->tmp_path);
    release(o);
}

static ssk_status io_error(ssk_error *err, const char *what, const char *path, int saved_errno)
{
    return ssk_error_set(err, SSK_ERROR_IO, "%s '%s': %s", what, path,
                         saved_errno ? strerror(saved_errno) : "unknown error");
}

/* fwrite that marks the writer failed and reports errno on a short write. */
static ssk_status put_bytes(ssk_ogawa *o, const void *bytes, size_t size, ssk_error *err)
{
    if (size == 0) return SSK_OK;
    errno = 0;
    if (fwrite(bytes, 1, size, o->file) != size) {
        int e = errno;
        o->failed = true;
        return io_error(err, "cannot write", o->tmp_path, e);
    }
    o->offset += size;
    return SSK_OK;
}

static ssk_status check_usable(const ssk_ogawa *o, ssk_error *err)
{
    if (!o->file)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ogawa: writer not open");
    if (o->failed)
        return ssk_error_set(err, SSK_ERROR_IO, "cannot write '%s': an earlier write failed",
                             o->tmp_path);
    return SSK_OK;
}

ssk_status ssk_ogawa_open(ssk_ogawa *o, const char *path, ssk_error *err)
{
    memset(o, 0, sizeof *o);
    o->path = ssk_strdup(path);
    o->tmp_path = ssk_temp_path(path);
    o->io_buffer = malloc(SSK_OGAWA_IO_BUFFER);
    if (!o->path || !o->tmp_path || !o->io_buffer) {
        release(o);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "abc writer: cannot allocate the file buffers");
    }
    errno = 0;
    o->file = fopen(o->tmp_path, "wb");
    if (!o->file) {
        int e = errno;
        ssk_status s = ssk_error_set(err, SSK_ERROR_IO,
                                     "cannot create '%s' (temporary file '%s'): %s", path,
                                     o->tmp_path, e ? strerror(e) : "unknown error");
        release(o);
        return s;
    }
    setvbuf(o->file, o->io_buffer, _IOFBF, SSK_OGAWA_IO_BUFFER);
    unsigned char header[OGAWA_HEADER_SIZE];
    memcpy(header, OGAWA_MAGIC, OGAWA_MAGIC_SIZE);
    header[OGAWA_FROZEN_OFFSET] = 0; /* set by finish */
    header[6] = OGAWA_VERSION_HIGH;
    header[7] = OGAWA_VERSION_LOW;
    put_u64_le(header + OGAWA_ROOT_OFFSET, 0); /* patched by finish */
    ssk_status s = put_bytes(o, header, sizeof header, err);
    if (s != SSK_OK) ssk_ogawa_discard(o);
    return s == SSK_OK ? ssk_error_ok(err) : s;
}

ssk_status ssk_ogawa_write_data(ssk_ogawa *o, const ssk_ogawa_piece *pieces, size_t count,
                                uint64_t *entry, ssk_error *err)
{
    ssk_status s = check_usable(o, err);
    if (s != SSK_OK) return s;
    uint64_t size = 0;
    for (size_t i = 0; i < count; ++i) size += pieces[i].size;
    if (size == 0) {
        *entry = SSK_OGAWA_EMPTY_DATA;
        return SSK_OK;
    }
    if (o->offset >= SSK_OGAWA_DATA_BIT)
        return ssk_error_set(err, SSK_ERROR_IO, "'%s': archive larger than 2^63 bytes",
                             o->tmp_path);
    uint64_t at = o->offset;
    unsigned char size_le[8];
    put_u64_le(size_le, size);
    s = put_bytes(o, size_le, sizeof size_le, err);
    for (size_t i = 0; s == SSK_OK && i < count; ++i)
        s = put_bytes(o, pieces[i].bytes, pieces[i].size, err);
    if (s != SSK_OK) return s;
    *entry = at | SSK_OGAWA_DATA_BIT;
    return SSK_OK;
}

ssk_status ssk_ogawa_write_group(ssk_ogawa *o, const uint64_t *children, size_t count,
                                 uint64_t *entry, ssk_error *err)
{
    ssk_status s = check_usable(o, err);
    if (s != SSK_OK) return s;
    if (count == 0) {
        *entry = SSK_OGAWA_EMPTY_GROUP;
        return SSK_OK;
    }
    uint64_t at = o->offset;
    unsigned char chunk[OGAWA_GROUP_CHUNK * 8];
    put_u64_le(chunk, (uint64_t)count);
    s = put_bytes(o, chunk, 8, err);
    for (size_t start = 0; s == SSK_OK && start < count; start += OGAWA_GROUP_CHUNK) {
        size_t m = count - start < OGAWA_GROUP_CHUNK ? count - start : OGAWA_GROUP_CHUNK;
        for (size_t i = 0; i < m; ++i) put_u64_le(chunk + 8 * i, children[start + i]);
        s = put_bytes(o, chunk, 8 * m, err);
    }
    if (s != SSK_OK) return s;
    *entry = at;
    return SSK_OK;
}

ssk_status ssk_ogawa_finish(ssk_ogawa *o, uint64_t root, ssk_error *err)
{
    ssk_status s = check_usable(o, err);
    if (s != SSK_OK) {
        ssk_ogawa_discard(o);
        return s;
    }
    unsigned char root_le[8];
    put_u64_le(root_le, root);
    unsigned char frozen = OGAWA_FROZEN;
    errno = 0;
    /* Everything else is on its way to disk before the file claims to be
     * complete: flush, then the root offset, then the frozen byte. */
    if (fflush(o->file) != 0 || fseek(o->file, OGAWA_ROOT_OFFSET, SEEK_SET) != 0 ||
        fwrite(root_le, 1, sizeof root_le, o->file) != sizeof root_le ||
        fseek(o->file, OGAWA_FROZEN_OFFSET, SEEK_SET) != 0 ||
        fwrite(&frozen, 1, 1, o->file) != 1) {
        s = io_error(err, "cannot write", o->tmp_path, errno);
    } else if (fflush(o->file) != 0) {
        s = io_error(err, "cannot write", o->tmp_path, errno);
    } else if (fsync(fileno(o->file)) != 0) {
        s = io_error(err, "cannot sync", o->tmp_path, errno);
    }
    if (s != SSK_OK) {
        ssk_ogawa_discard(o);
        return s;
    }
    FILE *f = o->file;
    o->file = NULL;
    errno = 0;
    if (fclose(f) != 0) {
        s = io_error(err, "cannot close", o->tmp_path, errno);
        ssk_ogawa_discard(o);
        return s;
    }
    errno = 0;
    if (rename(o->tmp_path, o->path) != 0) {
        int e = errno;
        s = ssk_error_set(err, SSK_ERROR_IO, "cannot rename '%s' to '%s': %s", o->tmp_path,
                          o->path, strerror(e));
        ssk_ogawa_discard(o);
        return s;
    }
    ssk_sync_parent_directory(o->path);
    release(o);
    return ssk_error_ok(err);
}
