/* shard.h — the frame-shard writer the bake uses (issue #23; the format and
 * the merge: shard.c; the public manifest and merge: springskin.h). */
#ifndef SSK_IO_SHARD_H
#define SSK_IO_SHARD_H

#include "model/internal.h"

typedef struct ssk_shard_writer ssk_shard_writer;

/* The mesh section of a shard (names, triangles, uv, rest placement of
 * each mesh, as the bake gives them to the Alembic writer), serialized
 * into a malloc'ed buffer (*out, *out_size) and its XXH3 hash.
 * Errors: SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_shard_topology(unsigned char **out, size_t *out_size, uint64_t *out_hash,
                              const ssk_abc_mesh_desc *meshes, uint32_t mesh_count,
                              ssk_error *err);

/* Creates "<path>.tmp-<pid>" and writes the manifest (the identity fields
 * of `manifest`, its first and last frame; topology_hash, data_bytes and
 * data_hash are computed) and the mesh section.
 * Errors: SSK_ERROR_INVALID_ARGUMENT, SSK_ERROR_UNSUPPORTED (a big-endian
 * host), SSK_ERROR_OUT_OF_MEMORY, SSK_ERROR_IO. */
ssk_status ssk_shard_writer_open(ssk_shard_writer **out, const char *path,
                                 const ssk_shard_manifest *manifest,
                                 const ssk_abc_mesh_desc *meshes, ssk_error *err);
/* One frame: positions #V by 3, normals #V by 3 (with_normals) or NULL,
 * object_matrices #M by 16 (rig mesh object -> scene at the frame).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (more frames than the range),
 * SSK_ERROR_IO. */
ssk_status ssk_shard_writer_write(ssk_shard_writer *w, const float *positions,
                                  const float *normals, const float *object_matrices,
                                  ssk_error *err);
/* Checks the frame count, writes the final manifest, flushes, fsyncs,
 * renames; frees the writer in every case (the temporary file is removed
 * on failure). Errors: SSK_ERROR_INVALID_ARGUMENT (frames missing),
 * SSK_ERROR_IO. */
ssk_status ssk_shard_writer_finish(ssk_shard_writer *w, ssk_error *err);
/* Removes the temporary file and frees the writer; NULL allowed. */
void ssk_shard_writer_abort(ssk_shard_writer *w);

/* 1 when the identity fields of a and b are equal; else 0 and the first
 * differing field's name into *field. */
int ssk_shard_same_bake(const ssk_shard_manifest *a, const ssk_shard_manifest *b,
                        const char **field);

/* Reads the whole shard and compares its data with the manifest's
 * checksum. Errors: as ssk_shard_read_manifest, SSK_ERROR_IO (checksum). */
ssk_status ssk_shard_verify(ssk_shard_manifest *out, const char *path, ssk_error *err);

#endif /* SSK_IO_SHARD_H */
