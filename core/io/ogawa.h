/*
 * ogawa.h — append-only writer of the Ogawa container, the file layer under
 * Alembic's AbcCoreOgawa archives (core/io/abc.c). Private to the core.
 *
 * Layout (written from the project's format notes on Alembic 1.8.12's
 * lib/Alembic/Ogawa, no Alembic code; little-endian except the version):
 *   offset 0   "Ogawa"                 magic, 5 bytes, no NUL
 *   offset 5   uint8                   frozen: 0x00 while writing, 0xff when
 *                                      the file is complete
 *   offset 6   uint16 big-endian       format version, 1
 *   offset 8   uint64                  absolute offset of the root group
 * then blocks, each at an absolute offset:
 *   data block:  uint64 size, `size` bytes
 *   group:       uint64 N, N uint64 child entries; an entry with the top bit
 *                set is a data block at (entry & ~top bit), else a group;
 *                SSK_OGAWA_EMPTY_DATA is a data block of size 0 and
 *                SSK_OGAWA_EMPTY_GROUP a group with no child.
 * Blocks are appended in the order they are produced (data as samples
 * arrive, groups when their children are known, the root last); readers only
 * follow offsets. No alignment, no padding.
 *
 * The file is written under "<path>.tmp-<pid>" in the destination's
 * directory; ssk_ogawa_finish patches the root offset and the frozen byte,
 * flushes, fsyncs, closes and renames it onto `path`; every failure (and
 * ssk_ogawa_discard) removes it, so no partial archive is ever left.
 */
#ifndef SSK_OGAWA_H
#define SSK_OGAWA_H

#include "model/internal.h"

#include <stdio.h>

/* Child entry of a group with no children (no block is written for it). */
#define SSK_OGAWA_EMPTY_GROUP UINT64_C(0)
/* Top bit of a child entry: the child is a data block. */
#define SSK_OGAWA_DATA_BIT UINT64_C(0x8000000000000000)
/* Child entry of a data block of size 0 (no block is written for it). */
#define SSK_OGAWA_EMPTY_DATA SSK_OGAWA_DATA_BIT

typedef struct ssk_ogawa {
    FILE *file;
    char *path;          /* final destination */
    char *tmp_path;      /* "<path>.tmp-<pid>" */
    char *io_buffer;     /* stdio buffer (SSK_OGAWA_IO_BUFFER bytes) */
    uint64_t offset;     /* bytes written so far: offset of the next block */
    bool failed;         /* a write failed: the file is incomplete */
} ssk_ogawa;

/* One contiguous piece of a data block (already little-endian bytes). */
typedef struct ssk_ogawa_piece {
    const void *bytes;
    size_t size;
} ssk_ogawa_piece;

/* Creates the temporary file and writes the 16-byte header (not frozen,
 * root 0). Errors: SSK_ERROR_OUT_OF_MEMORY, SSK_ERROR_IO (cannot create or write);
 * on error nothing is left on disk and `o` needs no discard. */
ssk_status ssk_ogawa_open(ssk_ogawa *o, const char *path, ssk_error *err);

/* Appends one data block made of `count` pieces (their sizes summed) and
 * sets *entry to its child entry (offset | SSK_OGAWA_DATA_BIT), or to
 * SSK_OGAWA_EMPTY_DATA without writing when the total size is 0.
 * Errors: SSK_ERROR_IO (the writer is then failed). */
ssk_status ssk_ogawa_write_data(ssk_ogawa *o, const ssk_ogawa_piece *pieces, size_t count,
                                uint64_t *entry, ssk_error *err);

/* Appends a group of `count` child entries and sets *entry to its offset,
 * or to SSK_OGAWA_EMPTY_GROUP without writing when count is 0.
 * Errors: SSK_ERROR_IO. */
ssk_status ssk_ogawa_write_group(ssk_ogawa *o, const uint64_t *children, size_t count,
                                 uint64_t *entry, ssk_error *err);

/* Patches the root group offset (a group entry from ssk_ogawa_write_group)
 * and the frozen byte, flushes, fsyncs, closes and renames the temporary
 * file onto the destination. On error the temporary file is removed.
 * In every case `o` is released. Errors: SSK_ERROR_IO. */
ssk_status ssk_ogawa_finish(ssk_ogawa *o, uint64_t root, ssk_error *err);

/* Closes and removes the temporary file, releases `o`. Safe on a zeroed
 * or already released struct. */
void ssk_ogawa_discard(ssk_ogawa *o);

#endif /* SSK_OGAWA_H */
