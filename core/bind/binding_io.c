/* binding_io.c — binding files (the rig hash they are keyed by is
 * model/rig_hash.c).
 *
 * Binding file (all little-endian), format version 1 (a binding without
 * centers of rotation):
 *   offset  0  char[8]   "SSKBIND1" (no NUL)
 *   offset  8  uint32    format version, 1
 *   offset 12  uint64    rig hash (ssk_rig_hash of the rig it was made for)
 *   offset 20  uint32    method (ssk_bind_method, resolved: 1, 2 or 3)
 *   offset 24  uint32    smoothing iterations
 *   offset 28  float32   max_distance
 *   offset 32  uint32    #V
 *   offset 36  uint32    #B
 *   offset 40  int32[#V]     bone of each vertex, in [0, #B)
 *              float32[#V]   t of each vertex, in [0, 1]
 *              float32[#V*3] scale vectors (rig space)
 *   then       uint64    XXH3_64bits (seed 0) of every byte before it
 * Size: 48 + 20 #V bytes exactly.
 * Format version 2 (written when the binding holds centers of rotation,
 * Le & Hodgins 2016): the same first 40 bytes with version 2, then
 *   offset 40  uint32    sections: bit 0 = centers of rotation follow
 *                        (other bits must be 0)
 *   offset 44  float32[4] CoR parameters sigma, epsilon, omega, cutoff
 *                        (zero without the section)
 *   offset 60  the per-vertex arrays of version 1
 *   with bit 0: float32[#V*3] centers of rotation (rig space)
 *              uint8[#V]     flags (0 or 1), zero-padded to 4 bytes
 *   then       uint64    checksum as above
 * Size: 68 + 20 #V (+ 12 #V + #V rounded up to 4 with the section) bytes.
 * Format version 3 (written when the binding holds implicit skinning's
 * bind data, Vaillant 2015, 4.4 and Eq. 4.6; issue #20): the header of
 * version 2 with version 3 and section bit 1 (= implicit data follow; it
 * must be set, bit 0 as in version 2), then the key and counts of the
 * implicit section:
 *   offset 60  uint32    fit algorithm version (SSK_IMPLICIT_FIT_VERSION
 *                        of the build that made it; another build's loads
 *                        but is not used: the deformer fits again)
 *   offset 64  uint32    fit parameter target_samples
 *   offset 68  float32   fit parameter cull_b
 *   offset 72  uint32    fit parameter resolution N (the grids' N^3)
 *   offset 76  uint32    F, the number of bone fields (<= #B)
 *   offset 80  uint32    E, the number of mean value coordinates
 *                        (<= 128 #V)
 *   offset 84  the per-vertex arrays of version 1, the CoR section (bit 0),
 *   then the implicit section:
 *              int32[#B]     each bone's field index, or -1
 *              F times, in ascending bone order:
 *                uint32      bone
 *                float32     remap radius r (rig units, > 0)
 *                uint32      HRBF centers used
 *                float32[16] grid_from_rest (row-major, last row 0 0 0 1)
 *                float32[N^3 * 4] f in [0, 1] and grad f (rest space) at
 *                            grid point (i, j, k), index (k N + j) N + i
 *              uint32[#V + 1] mean value coordinate row offsets (0 .. E)
 *              uint32[E]     their neighbors (< #V)
 *              float32[E]    their weights
 *              float32[#V*3] rest normals (rig space, unit or zero)
 *   then       uint64    checksum as above
 * Size: the version 2 size + 24 + 4 #B + F (76 + 16 N^3) + 4 (#V + 1) +
 * 8 E + 12 #V bytes. The 128^3 composition operators are rig-independent
 * and not stored (ssk_implicit_operators).
 * Format version 4 (written when the binding holds a cage binding,
 * Corda et al. 2020, 3-4.2; issue #21): the header of version 3 with
 * version 4 and section bit 2 (= a cage section follows; it must be set;
 * bits 0 and 1 as in version 3, the implicit key and counts zero without
 * bit 1), then the key and counts of the cage section:
 *   offset 84  uint64    cage key (ssk_cage_binding_key: the rest cage's
 *                        vertices and triangles, the localization exponent
 *                        and SSK_CAGE_BIND_VERSION)
 *   offset 92  uint32    c, the cage's vertex count (4 <= c <= #V, at most
 *                        BIND_CAGE_MAX_VERTICES)
 *   offset 96  uint32    flags: bit 0 = the joints' mvc_ji were mean value
 *                        coordinates of the rest mesh (else the stand-in,
 *                        bind/cage_bind.c); other bits 0
 *   offset 100 the per-vertex arrays of version 1, the CoR section (bit
 *   0), the implicit section (bit 1), then the cage section:
 *              float64[#V*c] Phi: every rest vertex's mean value
 *                            coordinates (rows sum to 1)
 *              float64[#B*c] Psi: every bone head's cage coordinates
 *                            (Eq. 10-12; rows sum to 1)
 *              uint32[c]     the cage updater's MaxVol rows (distinct,
 *                            < #V)
 *   then       uint64    checksum as above
 * Size: the version 3 size (without the implicit section's 24 header
 * bytes when it is absent: they stay in the header) + 16 + 8 c (#V + #B)
 * + 4 c bytes. The LU factors of the cage updater are not stored: they
 * are made again from Phi and the rows (under a millisecond for c = 88).
 * All four versions load. The file is written to "<path>.tmp-<pid>", flushed,
 * fsynced and renamed onto `path`; any failure removes the temporary file.
 * Loading checks, in order: the size of the header, the magic, the version,
 * the size the header implies, the checksum, then every field's range; any
 * failure is SSK_ERROR_IO naming the file and the problem. */
#include "bind/binding.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

_Static_assert(sizeof(float) == 4 && FLT_MANT_DIG == 24 && FLT_MAX_EXP == 128,
               "binding files store IEEE 754 binary32 floats");

#define BIND_MAGIC "SSKBIND1"
#define BIND_MAGIC_SIZE 8
#define BIND_FILE_VERSION 1u
#define BIND_FILE_VERSION_COR 2u
#define BIND_FILE_VERSION_IMPLICIT 3u
#define BIND_FILE_VERSION_CAGE 4u
#define BIND_HEADER_SIZE 40
#define BIND_HEADER_SIZE_V2 60
#define BIND_HEADER_SIZE_V3 84
#define BIND_HEADER_SIZE_V4 100
/* Section bits of versions 2 and 3: centers of rotation, implicit data. */
#define BIND_SECTION_COR 1u
#define BIND_SECTION_IMPLICIT 2u
#define BIND_SECTION_CAGE 4u
/* A stored cage has at most this many vertices (a cage is coarse; the
 * bound keeps #V c below 2^48 before anything is allocated). */
#define BIND_CAGE_MAX_VERTICES 65536u
/* Cage section flag bits: the joints' mvc_ji were the mesh's. */
#define BIND_CAGE_FLAG_MESH_MVC 1u
/* A stored row of Phi or Psi sums to 1 within this times max(1, sum |x|). */
#define BIND_CAGE_ROW_SUM_TOLERANCE 1e-6
/* Bytes of a field's record before its grid: bone, r, centers, matrix. */
#define BIND_FIELD_HEAD_BYTES 76u
/* Channels of a grid point: f, grad f. */
#define BIND_FIELD_CHANNELS 4u
/* A stored rest normal is unit (|n|^2 within this of 1) or zero. */
#define BIND_UNIT_TOLERANCE 1e-3f
/* Bytes per vertex of the CoR section: center (12) and flag (1). */
#define BIND_COR_BYTES_PER_VERTEX 13
#define BIND_CHECKSUM_SIZE 8
/* Bytes per vertex: bone (4), t (4), scale vector (12). */
#define BIND_BYTES_PER_VERTEX 20

/* ------------------------------------------------------------------------ */
/* Little-endian encoding.                                                   */
/* ------------------------------------------------------------------------ */

static void put_u32(unsigned char *dst, uint32_t v)
{
    for (int k = 0; k < 4; ++k) dst[k] = (unsigned char)((v >> (8 * k)) & 0xffu);
}

static void put_u64(unsigned char *dst, uint64_t v)
{
    for (int k = 0; k < 8; ++k) dst[k] = (unsigned char)((v >> (8 * k)) & 0xffu);
}

static void put_f32(unsigned char *dst, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put_u32(dst, bits);
}

static uint32_t get_u32(const unsigned char *src)
{
    return (uint32_t)src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16) |
           ((uint32_t)src[3] << 24);
}

static uint64_t get_u64(const unsigned char *src)
{
    return (uint64_t)get_u32(src) | ((uint64_t)get_u32(src + 4) << 32);
}

static float get_f32(const unsigned char *src)
{
    uint32_t bits = get_u32(src);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Size of the CoR section of #V vertices: centers, flags, padding. */
static size_t cor_section_size(uint32_t vertex_count)
{
    return 12 * (size_t)vertex_count + (((size_t)vertex_count + 3) & ~(size_t)3);
}

static size_t header_size(uint32_t version)
{
    return version == BIND_FILE_VERSION            ? BIND_HEADER_SIZE
           : version == BIND_FILE_VERSION_COR      ? BIND_HEADER_SIZE_V2
           : version == BIND_FILE_VERSION_IMPLICIT ? BIND_HEADER_SIZE_V3
                                                   : BIND_HEADER_SIZE_V4;
}

/* The implicit section's key and counts (header offsets 60-83). */
typedef struct implicit_dims {
    uint32_t fit_version;
    ssk_implicit_fit_params params;
    uint32_t field_count; /* F */
    uint32_t mvc_entries; /* E */
    /* the cage section's (version 4; cage_vertex_count 0 without it) */
    uint64_t cage_key;
    uint32_t cage_vertex_count; /* c */
    uint32_t cage_flags;
} implicit_dims;

/* Bytes of one field's record at resolution n. */
static uint64_t field_record_size(uint32_t n)
{
    return BIND_FIELD_HEAD_BYTES +
           4ull * BIND_FIELD_CHANNELS * (uint64_t)n * (uint64_t)n * (uint64_t)n;
}

/* Size of the implicit section (header fields excluded); the counts are
 * bounded by then (F <= #B, N <= 256, E <= 128 #V), so no overflow. */
static uint64_t implicit_section_size(uint32_t vertex_count, uint32_t bone_count,
                                      const implicit_dims *d)
{
    return 4ull * bone_count + (uint64_t)d->field_count * field_record_size(d->params.resolution) +
           4ull * ((uint64_t)vertex_count + 1) + 8ull * d->mvc_entries + 12ull * vertex_count;
}

/* Size of the cage section of c cage vertices (c <= BIND_CAGE_MAX_VERTICES:
 * no overflow). */
static uint64_t cage_section_size(uint32_t vertex_count, uint32_t bone_count, uint32_t c)
{
    return 8ull * c * ((uint64_t)vertex_count + bone_count) + 4ull * c;
}

static uint64_t file_size_for(uint32_t version, uint32_t vertex_count, uint32_t bone_count,
                              bool cor, const implicit_dims *implicit, uint32_t cage_c)
{
    return header_size(version) + (uint64_t)vertex_count * BIND_BYTES_PER_VERTEX +
           (cor ? cor_section_size(vertex_count) : 0) +
           (implicit ? implicit_section_size(vertex_count, bone_count, implicit) : 0) +
           (cage_c ? cage_section_size(vertex_count, bone_count, cage_c) : 0) +
           BIND_CHECKSUM_SIZE;
}

static void put_f64(unsigned char *dst, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    put_u64(dst, bits);
}

static double get_f64(const unsigned char *src)
{
    const uint64_t bits = get_u64(src);
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* The cage section of `b` (b->cage set) at p; returns its end. */
static unsigned char *put_cage(unsigned char *p, const ssk_binding *b)
{
    const ssk_cage_binding *cb = b->cage;
    const size_t c = cb->cage_vertex_count;
    for (size_t i = 0; i < (size_t)b->vertex_count * c; ++i, p += 8) put_f64(p, cb->phi[i]);
    for (size_t i = 0; i < (size_t)b->bone_count * c; ++i, p += 8) put_f64(p, cb->psi[i]);
    for (size_t k = 0; k < c; ++k, p += 4) put_u32(p, cb->up.rows[k]);
    return p;
}

/* The implicit section of `b` (b->implicit set) at p; returns its end. */
static unsigned char *put_implicit(unsigned char *p, const ssk_binding *b)
{
    const ssk_implicit_fit *fit = b->implicit;
    const size_t nv = b->vertex_count;
    for (uint32_t k = 0; k < b->bone_count; ++k, p += 4) put_u32(p, (uint32_t)fit->bone_field[k]);
    for (uint32_t f = 0; f < fit->field_count; ++f) {
        const ssk_implicit_field *field = &fit->fields[f];
        put_u32(p, field->bone);
        put_f32(p + 4, field->radius);
        put_u32(p + 8, field->sample_count);
        p += 12;
        for (int i = 0; i < 16; ++i, p += 4) put_f32(p, field->grid_from_rest[i]);
        const size_t n = field->resolution;
        for (size_t i = 0; i < n * n * n * BIND_FIELD_CHANNELS; ++i, p += 4)
            put_f32(p, field->samples[i]);
    }
    const uint32_t entries = fit->mvc_offsets[nv];
    for (size_t v = 0; v <= nv; ++v, p += 4) put_u32(p, fit->mvc_offsets[v]);
    for (uint32_t e = 0; e < entries; ++e, p += 4) put_u32(p, fit->mvc_neighbors[e]);
    for (uint32_t e = 0; e < entries; ++e, p += 4) put_f32(p, fit->mvc_weights[e]);
    for (size_t i = 0; i < 3 * nv; ++i, p += 4) put_f32(p, fit->rest_normals[i]);
    return p;
}

/* ------------------------------------------------------------------------ */
/* Save.                                                                     */
/* ------------------------------------------------------------------------ */

static ssk_status io_error(ssk_error *err, const char *what, const char *path, int saved_errno)
{
    return ssk_error_set(err, SSK_ERROR_IO, "%s '%s': %s", what, path,
                         saved_errno ? strerror(saved_errno) : "unknown error");
}

ssk_status ssk_binding_save(const ssk_binding *binding, const char *path, ssk_error *err)
{
    if (!binding || !path)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_binding_save: NULL %s",
                             binding ? "path" : "binding");
    if (!path[0])
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_binding_save: empty path");
    size_t nv = binding->vertex_count;
    const bool cor = binding->cor_centers && binding->cor_flags;
    implicit_dims dims = {0};
    if (binding->implicit) {
        dims.fit_version = binding->implicit_version;
        dims.params = binding->implicit_params;
        dims.field_count = binding->implicit->field_count;
        dims.mvc_entries = binding->implicit->mvc_offsets[nv];
    }
    const ssk_cage_binding *cage = binding->cage;
    if (cage && (cage->vertex_count != binding->vertex_count ||
                 cage->joint_count != binding->bone_count ||
                 cage->cage_vertex_count > BIND_CAGE_MAX_VERTICES))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_binding_save: the cage binding (%u vertices, %u joints, %u cage "
                             "vertices) does not fit the binding (%u vertices, %u bones, at most "
                             "%u cage vertices)",
                             cage->vertex_count, cage->joint_count, cage->cage_vertex_count,
                             binding->vertex_count, binding->bone_count, BIND_CAGE_MAX_VERTICES);
    const uint32_t cage_c = cage ? cage->cage_vertex_count : 0;
    const uint32_t version = cage                ? BIND_FILE_VERSION_CAGE
                             : binding->implicit ? BIND_FILE_VERSION_IMPLICIT
                             : cor               ? BIND_FILE_VERSION_COR
                                                 : BIND_FILE_VERSION;
    const uint64_t size64 = file_size_for(version, binding->vertex_count, binding->bone_count,
                                          cor, binding->implicit ? &dims : NULL, cage_c);
    if (size64 > SIZE_MAX)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "binding '%s' would be %llu bytes, more than this build addresses",
                             path, (unsigned long long)size64);
    const size_t size = (size_t)size64;
    unsigned char *buf = malloc(size);
    char *tmp = ssk_temp_path(path);
    if (!buf || !tmp) {
        free(buf);
        ssk_temp_path_free(tmp);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "cannot allocate %zu bytes to write binding '%s'", size, path);
    }
    memset(buf, 0, size);
    memcpy(buf, BIND_MAGIC, BIND_MAGIC_SIZE);
    put_u32(buf + 8, version);
    put_u64(buf + 12, binding->rig_hash);
    put_u32(buf + 20, (uint32_t)binding->params.method);
    put_u32(buf + 24, binding->params.smooth_iterations);
    put_f32(buf + 28, binding->params.max_distance);
    put_u32(buf + 32, binding->vertex_count);
    put_u32(buf + 36, binding->bone_count);
    if (version != BIND_FILE_VERSION)
        put_u32(buf + 40, (cor ? BIND_SECTION_COR : 0u) |
                              (binding->implicit ? BIND_SECTION_IMPLICIT : 0u) |
                              (cage ? BIND_SECTION_CAGE : 0u));
    if (cage) {
        put_u64(buf + 84, binding->cage_key);
        put_u32(buf + 92, cage_c);
        put_u32(buf + 96, cage->joints_from_mesh_mvc ? BIND_CAGE_FLAG_MESH_MVC : 0u);
    }
    if (binding->implicit) {
        put_u32(buf + 60, dims.fit_version);
        put_u32(buf + 64, dims.params.target_samples);
        put_f32(buf + 68, dims.params.cull_b);
        put_u32(buf + 72, dims.params.resolution);
        put_u32(buf + 76, dims.field_count);
        put_u32(buf + 80, dims.mvc_entries);
    }
    if (cor) {
        put_f32(buf + 44, binding->params.cor.sigma);
        put_f32(buf + 48, binding->params.cor.epsilon);
        put_f32(buf + 52, binding->params.cor.omega);
        put_f32(buf + 56, binding->params.cor.cutoff);
    }
    unsigned char *p = buf + header_size(version);
    for (size_t v = 0; v < nv; ++v, p += 4) put_u32(p, (uint32_t)binding->bones[v]);
    for (size_t v = 0; v < nv; ++v, p += 4) put_f32(p, binding->t[v]);
    for (size_t i = 0; i < 3 * nv; ++i, p += 4) put_f32(p, binding->scale_vectors[i]);
    if (cor) {
        for (size_t i = 0; i < 3 * nv; ++i, p += 4) put_f32(p, binding->cor_centers[i]);
        for (size_t v = 0; v < nv; ++v) p[v] = binding->cor_flags[v] ? 1 : 0;
        p += cor_section_size(binding->vertex_count) - 12 * nv; /* flags and padding */
    }
    if (binding->implicit) p = put_implicit(p, binding);
    if (cage) p = put_cage(p, binding);
    put_u64(p, XXH3_64bits(buf, (size_t)(p - buf)));

    ssk_status s = SSK_OK;
    errno = 0;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int e = errno;
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "cannot create binding '%s' (temporary file '%s'): %s", path, tmp,
                          e ? strerror(e) : "unknown error");
        free(buf);
        ssk_temp_path_free(tmp);
        return s;
    }
    errno = 0;
    if (fwrite(buf, 1, size, f) != size || fflush(f) != 0)
        s = io_error(err, "cannot write", tmp, errno);
    else if (fsync(fileno(f)) != 0)
        s = io_error(err, "cannot sync", tmp, errno);
    errno = 0;
    if (fclose(f) != 0 && s == SSK_OK) s = io_error(err, "cannot close", tmp, errno);
    if (s == SSK_OK) {
        errno = 0;
        if (rename(tmp, path) != 0) {
            int e = errno;
            s = ssk_error_set(err, SSK_ERROR_IO, "cannot rename '%s' to '%s': %s", tmp, path,
                              strerror(e));
        }
    }
    if (s != SSK_OK) remove(tmp);
    free(buf);
    ssk_temp_path_free(tmp);
    return s == SSK_OK ? ssk_error_ok(err) : s;
}

/* ------------------------------------------------------------------------ */
/* Load.                                                                     */
/* ------------------------------------------------------------------------ */

/* Reads the whole file after checking its size against the header.
 * On success *out_buf (malloc'ed) holds the whole file, *out_version its
 * format version, *out_cor whether it has the CoR section and
 * *out_implicit whether it has the implicit one (then *dims its key and
 * counts, checked: parameters in range, F <= #B, E <= 128 #V). */
static ssk_status read_binding_file(unsigned char **out_buf, uint32_t *out_version, bool *out_cor,
                                    bool *out_implicit, implicit_dims *dims, const char *path,
                                    const ssk_rig *rig, uint64_t rig_hash, ssk_error *err)
{
    *out_buf = NULL;
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return io_error(err, "cannot open binding", path, errno);
    ssk_status s = SSK_OK;
    unsigned char *buf = NULL;
    struct stat st;
    unsigned char header[BIND_HEADER_SIZE_V4];
    uint32_t version = 0;
    bool cor = false, implicit = false;
    if (fstat(fileno(f), &st) != 0) {
        s = io_error(err, "cannot stat binding", path, errno);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        s = ssk_error_set(err, SSK_ERROR_IO, "binding '%s' is not a regular file", path);
        goto done;
    }
    if ((uint64_t)st.st_size < BIND_HEADER_SIZE + BIND_CHECKSUM_SIZE) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "binding '%s' is truncated: %lld bytes, shorter than the %d-byte "
                          "header and checksum",
                          path, (long long)st.st_size, BIND_HEADER_SIZE + BIND_CHECKSUM_SIZE);
        goto done;
    }
    errno = 0;
    if (fread(header, 1, BIND_HEADER_SIZE, f) != BIND_HEADER_SIZE) {
        s = io_error(err, "cannot read binding", path, ferror(f) ? errno : EIO);
        goto done;
    }
    if (memcmp(header, BIND_MAGIC, BIND_MAGIC_SIZE) != 0) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "'%s' is not a SpringSkin binding file (no \"" BIND_MAGIC
                          "\" magic)",
                          path);
        goto done;
    }
    version = get_u32(header + 8);
    if (version != BIND_FILE_VERSION && version != BIND_FILE_VERSION_COR &&
        version != BIND_FILE_VERSION_IMPLICIT && version != BIND_FILE_VERSION_CAGE) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "binding '%s' has format version %u; this build reads versions %u "
                          "to %u",
                          path, (unsigned)version, BIND_FILE_VERSION, BIND_FILE_VERSION_CAGE);
        goto done;
    }
    const size_t head = header_size(version);
    if (version != BIND_FILE_VERSION) {
        if ((uint64_t)st.st_size < head + BIND_CHECKSUM_SIZE) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is truncated: %lld bytes, shorter than the %zu-byte "
                              "header (format version %u) and checksum",
                              path, (long long)st.st_size, head + BIND_CHECKSUM_SIZE,
                              (unsigned)version);
            goto done;
        }
        errno = 0;
        if (fread(header + BIND_HEADER_SIZE, 1, head - BIND_HEADER_SIZE, f) !=
            head - BIND_HEADER_SIZE) {
            s = io_error(err, "cannot read binding", path, ferror(f) ? errno : EIO);
            goto done;
        }
        const uint32_t sections = get_u32(header + 40);
        const uint32_t known =
            version == BIND_FILE_VERSION_COR        ? BIND_SECTION_COR
            : version == BIND_FILE_VERSION_IMPLICIT ? BIND_SECTION_COR | BIND_SECTION_IMPLICIT
                                                    : BIND_SECTION_COR | BIND_SECTION_IMPLICIT |
                                                          BIND_SECTION_CAGE;
        if (sections & ~known) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' (format version %u) is corrupt: unknown sections "
                              "0x%x",
                              path, (unsigned)version, (unsigned)sections);
            goto done;
        }
        cor = (sections & BIND_SECTION_COR) != 0;
        implicit = (sections & BIND_SECTION_IMPLICIT) != 0;
        if (version == BIND_FILE_VERSION_IMPLICIT && !implicit) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' (format version 3) is corrupt: no implicit "
                              "section (sections 0x%x)",
                              path, (unsigned)sections);
            goto done;
        }
        if (version == BIND_FILE_VERSION_CAGE && !(sections & BIND_SECTION_CAGE)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' (format version 4) is corrupt: no cage section "
                              "(sections 0x%x)",
                              path, (unsigned)sections);
            goto done;
        }
    }
    uint32_t nv = get_u32(header + 32);
    const uint32_t nb = get_u32(header + 36);
    if (implicit) {
        dims->fit_version = get_u32(header + 60);
        dims->params.target_samples = get_u32(header + 64);
        dims->params.cull_b = get_f32(header + 68);
        dims->params.resolution = get_u32(header + 72);
        dims->field_count = get_u32(header + 76);
        dims->mvc_entries = get_u32(header + 80);
        ssk_error perr = {0};
        if (ssk_implicit_fit_params_check(&dims->params, &perr) != SSK_OK) {
            s = ssk_error_set(err, SSK_ERROR_IO, "binding '%s' is corrupt: %s", path,
                              perr.message);
            goto done;
        }
        if (dims->field_count > nb ||
            (uint64_t)dims->mvc_entries > (uint64_t)nv * SSK_IMPLICIT_MVC_MAX_VALENCE) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: its implicit section has %u fields "
                              "(at most one per bone, %u) and %u mean value coordinates (at "
                              "most %u per vertex, %u vertices)",
                              path, (unsigned)dims->field_count, (unsigned)nb,
                              (unsigned)dims->mvc_entries, SSK_IMPLICIT_MVC_MAX_VALENCE,
                              (unsigned)nv);
            goto done;
        }
    }
    if (version == BIND_FILE_VERSION_CAGE) {
        dims->cage_key = get_u64(header + 84);
        dims->cage_vertex_count = get_u32(header + 92);
        dims->cage_flags = get_u32(header + 96);
        const uint32_t c = dims->cage_vertex_count;
        if (c < 4 || c > nv || c > BIND_CAGE_MAX_VERTICES ||
            (dims->cage_flags & ~BIND_CAGE_FLAG_MESH_MVC)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: its cage section has %u cage vertices "
                              "(4 to min(#V = %u, %u)) and flags 0x%x (bit 0 only)",
                              path, (unsigned)c, (unsigned)nv, BIND_CAGE_MAX_VERTICES,
                              (unsigned)dims->cage_flags);
            goto done;
        }
    }
    const uint64_t expected = file_size_for(version, nv, nb, cor, implicit ? dims : NULL,
                                            dims->cage_vertex_count);
    if ((uint64_t)st.st_size != expected) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "binding '%s' is %s: %lld bytes where its header's %u vertices "
                          "need %llu (format version %u%s%s%s)",
                          path, (uint64_t)st.st_size < expected ? "truncated" : "corrupt",
                          (long long)st.st_size, (unsigned)nv, (unsigned long long)expected,
                          (unsigned)version, cor ? ", with centers of rotation" : "",
                          implicit ? ", with implicit data" : "",
                          dims->cage_vertex_count ? ", with a cage binding" : "");
        goto done;
    }
    if (rig) {
        /* another rig's binding is refused from its header's counts, before
         * anything is allocated or read (issue #19: a sparse file claiming
         * 400M vertices was read and allocated before its checksum failed);
         * the rig hash is compared after the checksum, so that a flipped
         * bit reads as corruption */
        if (nv != rig->vertex_count || nb != rig->bone_count) {
            s = ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                              "binding '%s' was made for another rig (%u vertices, %u bones; "
                              "this rig: %u vertices, %u bones, hash %016llx)",
                              path, (unsigned)nv, (unsigned)nb, (unsigned)rig->vertex_count,
                              (unsigned)rig->bone_count, (unsigned long long)rig_hash);
            goto done;
        }
    }
    buf = (size_t)expected == expected ? malloc((size_t)expected) : NULL;
    if (!buf) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                          "cannot allocate %llu bytes to read binding '%s'",
                          (unsigned long long)expected, path);
        goto done;
    }
    memcpy(buf, header, head);
    size_t rest = (size_t)expected - head;
    errno = 0;
    if (fread(buf + head, 1, rest, f) != rest) {
        s = ferror(f) ? io_error(err, "cannot read binding", path, errno)
                      : ssk_error_set(err, SSK_ERROR_IO,
                                      "binding '%s' is truncated (shrank while reading)", path);
        goto done;
    }
    if (XXH3_64bits(buf, (size_t)expected - BIND_CHECKSUM_SIZE) !=
        get_u64(buf + expected - BIND_CHECKSUM_SIZE)) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "binding '%s' is corrupt: checksum mismatch", path);
        goto done;
    }
done:
    fclose(f);
    if (s != SSK_OK) {
        free(buf);
        return s;
    }
    *out_buf = buf;
    *out_version = version;
    *out_cor = cor;
    *out_implicit = implicit;
    return SSK_OK;
}

/* The implicit section at *pp of a binding of b->vertex_count and
 * b->bone_count (dims checked by read_binding_file), every value checked;
 * sets b->implicit (owned) and advances *pp. Errors: SSK_ERROR_IO naming
 * the first bad value, SSK_ERROR_OUT_OF_MEMORY. */
static ssk_status load_implicit(ssk_binding *b, const unsigned char **pp, const implicit_dims *d,
                                const char *path, ssk_error *err)
{
    const unsigned char *p = *pp;
    const uint32_t nv = b->vertex_count, nb = b->bone_count, nf = d->field_count;
    const uint32_t n = d->params.resolution;
    const size_t grid_floats = (size_t)n * n * n * BIND_FIELD_CHANNELS;
    const uint32_t max_centers = SSK_IMPLICIT_FIT_MAX_SAMPLE_FACTOR * d->params.target_samples +
                                 SSK_IMPLICIT_FIT_CLOSURE_CENTERS;
    ssk_implicit_fit *fit = calloc(1, sizeof *fit);
    ssk_status s = SSK_OK;
    if (!fit) goto oom;
    b->implicit = fit; /* freed with b on failure */
    fit->bone_field = malloc(((size_t)nb + 1) * sizeof *fit->bone_field);
    fit->fields = calloc((size_t)nf + 1, sizeof *fit->fields);
    fit->mvc_offsets = malloc(((size_t)nv + 1) * sizeof *fit->mvc_offsets);
    fit->mvc_neighbors = malloc(((size_t)d->mvc_entries + 1) * sizeof *fit->mvc_neighbors);
    fit->mvc_weights = malloc(((size_t)d->mvc_entries + 1) * sizeof *fit->mvc_weights);
    fit->rest_normals = malloc((3 * (size_t)nv + 1) * sizeof *fit->rest_normals);
    if (!fit->bone_field || !fit->fields || !fit->mvc_offsets || !fit->mvc_neighbors ||
        !fit->mvc_weights || !fit->rest_normals)
        goto oom;
    fit->field_count = nf;
    uint32_t with_field = 0;
    for (uint32_t k = 0; k < nb; ++k, p += 4) {
        const int32_t f = (int32_t)get_u32(p);
        if (f < -1 || f >= (int32_t)nf) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: bone %u has implicit field %d, out of "
                              "[-1, %u)",
                              path, (unsigned)k, (int)f, (unsigned)nf);
            goto fail;
        }
        with_field += f >= 0;
        fit->bone_field[k] = f;
    }
    if (with_field != nf) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "binding '%s' is corrupt: %u bones name an implicit field, the "
                          "section has %u",
                          path, (unsigned)with_field, (unsigned)nf);
        goto fail;
    }
    for (uint32_t f = 0; f < nf; ++f) {
        ssk_implicit_field *field = &fit->fields[f];
        field->bone = get_u32(p);
        field->radius = get_f32(p + 4);
        field->sample_count = get_u32(p + 8);
        field->resolution = n;
        p += 12;
        if (field->bone >= nb || fit->bone_field[field->bone] != (int32_t)f ||
            (f > 0 && field->bone <= fit->fields[f - 1].bone)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: implicit field %u has bone %u (fields "
                              "go in ascending bone order, each its bone's field)",
                              path, (unsigned)f, (unsigned)field->bone);
            goto fail;
        }
        if (!(field->radius > 0.0f && field->radius <= SSK_MAX_MAGNITUDE) ||
            field->sample_count < SSK_IMPLICIT_FIT_MIN_CENTERS ||
            field->sample_count > max_centers) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: implicit field %u has radius %g (> 0 "
                              "and finite) and %u centers (%u to %u)",
                              path, (unsigned)f, (double)field->radius,
                              (unsigned)field->sample_count, SSK_IMPLICIT_FIT_MIN_CENTERS,
                              (unsigned)max_centers);
            goto fail;
        }
        for (int i = 0; i < 16; ++i, p += 4) field->grid_from_rest[i] = get_f32(p);
        const float *m = field->grid_from_rest;
        if (!ssk_floats_bounded(m, 12) || m[12] != 0.0f || m[13] != 0.0f || m[14] != 0.0f ||
            m[15] != 1.0f) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: implicit field %u's grid matrix is not "
                              "finite or its last row is not 0 0 0 1",
                              path, (unsigned)f);
            goto fail;
        }
        field->samples = malloc(grid_floats * sizeof *field->samples);
        if (!field->samples) goto oom;
        for (size_t i = 0; i < grid_floats; ++i, p += 4) {
            const float x = get_f32(p);
            const bool value = i % BIND_FIELD_CHANNELS == 0;
            if (value ? !(x >= 0.0f && x <= 1.0f) : !(fabsf(x) <= SSK_MAX_MAGNITUDE)) {
                s = ssk_error_set(err, SSK_ERROR_IO,
                                  "binding '%s' is corrupt: implicit field %u grid point %zu "
                                  "has %s %g (%s)",
                                  path, (unsigned)f, i / BIND_FIELD_CHANNELS,
                                  value ? "value" : "gradient component", (double)x,
                                  value ? "f is in [0, 1]" : "finite, at most SSK_MAX_MAGNITUDE");
                goto fail;
            }
            field->samples[i] = x;
        }
    }
    for (uint32_t v = 0; v <= nv; ++v, p += 4) {
        const uint32_t o = get_u32(p);
        const uint32_t prev = v ? fit->mvc_offsets[v - 1] : 0;
        if ((v == 0 && o != 0) || o < prev || o - prev > SSK_IMPLICIT_MVC_MAX_VALENCE ||
            o > d->mvc_entries || (v == nv && o != d->mvc_entries)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: mean value coordinate offset %u of "
                              "vertex %u (offsets start at 0, grow by at most %u per vertex "
                              "and end at %u)",
                              path, (unsigned)o, (unsigned)v, SSK_IMPLICIT_MVC_MAX_VALENCE,
                              (unsigned)d->mvc_entries);
            goto fail;
        }
        fit->mvc_offsets[v] = o;
    }
    for (uint32_t e = 0; e < d->mvc_entries; ++e, p += 4) {
        fit->mvc_neighbors[e] = get_u32(p);
        if (fit->mvc_neighbors[e] >= nv) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: mean value coordinate %u has neighbor "
                              "%u, out of [0, %u)",
                              path, (unsigned)e, (unsigned)fit->mvc_neighbors[e], (unsigned)nv);
            goto fail;
        }
    }
    for (uint32_t e = 0; e < d->mvc_entries; ++e, p += 4) {
        fit->mvc_weights[e] = get_f32(p);
        if (!(fabsf(fit->mvc_weights[e]) <= SSK_MAX_MAGNITUDE)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: mean value coordinate %u has weight %g "
                              "(finite, at most SSK_MAX_MAGNITUDE)",
                              path, (unsigned)e, (double)fit->mvc_weights[e]);
            goto fail;
        }
    }
    for (uint32_t v = 0; v < nv; ++v) {
        float *nrm = fit->rest_normals + 3 * (size_t)v;
        for (int k = 0; k < 3; ++k, p += 4) nrm[k] = get_f32(p);
        const float len2 = nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2];
        const bool zero = nrm[0] == 0.0f && nrm[1] == 0.0f && nrm[2] == 0.0f;
        if (!zero && !(fabsf(len2 - 1.0f) <= BIND_UNIT_TOLERANCE)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: vertex %u has rest normal (%g, %g, %g) "
                              "(unit or zero)",
                              path, (unsigned)v, (double)nrm[0], (double)nrm[1], (double)nrm[2]);
            goto fail;
        }
    }
    b->implicit_params = d->params;
    b->implicit_version = d->fit_version;
    b->implicit_seconds = 0.0;
    *pp = p;
    return SSK_OK;
oom:
    s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                      "cannot allocate the implicit data of binding '%s'", path);
fail:
    return s;
}

/* Checks a row of Phi or Psi (c values at p): finite, at most
 * SSK_MAX_MAGNITUDE, summing to 1 (BIND_CAGE_ROW_SUM_TOLERANCE); copies it
 * to dst. */
static bool cage_row_load(double *dst, const unsigned char *p, uint32_t c)
{
    double sum = 0.0, abs_sum = 0.0;
    for (uint32_t k = 0; k < c; ++k, p += 8) {
        const double x = get_f64(p);
        if (!(fabs(x) <= SSK_MAX_MAGNITUDE)) return false;
        dst[k] = x;
        sum += x;
        abs_sum += fabs(x);
    }
    return fabs(sum - 1.0) <= BIND_CAGE_ROW_SUM_TOLERANCE * fmax(1.0, abs_sum);
}

/* The cage section at *pp of a binding of b->vertex_count and
 * b->bone_count (c checked by read_binding_file: 4 <= c <= #V), every
 * value checked; sets b->cage (its stored form, owned) and b->cage_key,
 * advances *pp. Errors: SSK_ERROR_IO naming the first bad value,
 * SSK_ERROR_OUT_OF_MEMORY. */
static ssk_status load_cage(ssk_binding *b, const unsigned char **pp, const implicit_dims *d,
                            const char *path, ssk_error *err)
{
    const unsigned char *p = *pp;
    const uint32_t nv = b->vertex_count, nb = b->bone_count, c = d->cage_vertex_count;
    ssk_cage_binding *cb = calloc(1, sizeof *cb);
    uint8_t *taken = calloc((size_t)nv + 1, 1);
    ssk_status s = SSK_OK;
    if (!cb || !taken) goto oom;
    b->cage = cb; /* freed with b on failure */
    cb->vertex_count = nv;
    cb->joint_count = nb;
    cb->cage_vertex_count = c;
    cb->joints_from_mesh_mvc = (d->cage_flags & BIND_CAGE_FLAG_MESH_MVC) != 0;
    cb->phi = malloc(((size_t)nv * c + 1) * sizeof *cb->phi);
    cb->psi = malloc(((size_t)nb * c + 1) * sizeof *cb->psi);
    cb->up.c = c;
    cb->up.rows = malloc(((size_t)c + 1) * sizeof *cb->up.rows);
    if (!cb->phi || !cb->psi || !cb->up.rows) goto oom;
    for (uint32_t v = 0; v < nv; ++v, p += 8 * (size_t)c)
        if (!cage_row_load(cb->phi + (size_t)v * c, p, c)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: vertex %u's cage coordinates (Phi) are "
                              "not finite or do not sum to 1",
                              path, (unsigned)v);
            goto fail;
        }
    for (uint32_t j = 0; j < nb; ++j, p += 8 * (size_t)c)
        if (!cage_row_load(cb->psi + (size_t)j * c, p, c)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: bone %u's cage coordinates (Psi) are "
                              "not finite or do not sum to 1",
                              path, (unsigned)j);
            goto fail;
        }
    for (uint32_t k = 0; k < c; ++k, p += 4) {
        const uint32_t row = get_u32(p);
        if (row >= nv || taken[row]) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: cage updater row %u is vertex %u (rows "
                              "are distinct vertices below %u)",
                              path, (unsigned)k, (unsigned)row, (unsigned)nv);
            goto fail;
        }
        taken[row] = 1;
        cb->up.rows[k] = row;
    }
    b->cage_key = d->cage_key;
    b->cage_seconds = 0.0;
    free(taken);
    *pp = p;
    return SSK_OK;
oom:
    s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "cannot allocate the cage binding of '%s'",
                      path);
fail:
    if (cb && !b->cage) free(cb);
    free(taken);
    return s;
}

ssk_status ssk_binding_load(ssk_binding **out, const char *path, const ssk_rig *rig,
                            ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !path)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_binding_load: NULL %s",
                             out ? "path" : "output");
    double start = ssk_time_seconds();
    unsigned char *buf = NULL;
    uint32_t version = 0;
    bool cor = false, implicit = false;
    implicit_dims dims = {0};
    uint64_t rig_h = 0;
    if (rig) {
        ssk_status hs = ssk_rig_hash_checked(rig, &rig_h, err);
        if (hs != SSK_OK) return hs;
    }
    ssk_status s =
        read_binding_file(&buf, &version, &cor, &implicit, &dims, path, rig, rig_h, err);
    if (s != SSK_OK) return s;

    uint64_t hash = get_u64(buf + 12);
    ssk_bind_params params;
    params.method = (ssk_bind_method)get_u32(buf + 20);
    params.smooth_iterations = get_u32(buf + 24);
    params.max_distance = get_f32(buf + 28);
    params.compute_cor = cor ? 1 : 0;
    params.compute_implicit = implicit ? 1 : 0;
    ssk_cor_params_default(&params.cor);
    if (cor) {
        params.cor.sigma = get_f32(buf + 44);
        params.cor.epsilon = get_f32(buf + 48);
        params.cor.omega = get_f32(buf + 52);
        params.cor.cutoff = get_f32(buf + 56);
    }
    uint32_t nv = get_u32(buf + 32), nb = get_u32(buf + 36);
    ssk_binding *b = NULL;
    if (params.method != SSK_BIND_DIRECT && params.method != SSK_BIND_WEIGHTS &&
        params.method != SSK_BIND_PLANAR) {
        s = ssk_error_set(err, SSK_ERROR_IO, "binding '%s' is corrupt: method %u", path,
                          (unsigned)params.method);
        goto fail;
    }
    ssk_error perr = {0};
    if (ssk_bind_params_check(&params, &perr) != SSK_OK) {
        s = ssk_error_set(err, SSK_ERROR_IO, "binding '%s' is corrupt: %s", path,
                          perr.message);
        goto fail;
    }
    if (nv == 0 || nb == 0) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "binding '%s' is corrupt: %u vertices, %u bones (each must be >= 1)",
                          path, (unsigned)nv, (unsigned)nb);
        goto fail;
    }
    b = ssk_binding_alloc(nv, nb);
    if (!b) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                          "cannot allocate binding '%s' (%u vertices)", path, (unsigned)nv);
        goto fail;
    }
    const unsigned char *p = buf + header_size(version);
    for (uint32_t v = 0; v < nv; ++v, p += 4) {
        uint32_t bone = get_u32(p);
        if (bone >= nb) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: vertex %u has bone %d, out of [0, %u)",
                              path, (unsigned)v, (int)(int32_t)bone, (unsigned)nb);
            goto fail;
        }
        b->bones[v] = (int32_t)bone;
    }
    for (uint32_t v = 0; v < nv; ++v, p += 4) {
        float t = get_f32(p);
        if (!(t >= 0.0f && t <= 1.0f)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: vertex %u has t = %g, outside [0, 1]",
                              path, (unsigned)v, (double)t);
            goto fail;
        }
        b->t[v] = t;
    }
    for (size_t i = 0; i < 3 * (size_t)nv; ++i, p += 4) {
        float x = get_f32(p);
        if (!(fabsf(x) <= SSK_MAX_MAGNITUDE)) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is corrupt: vertex %zu has a %s scale vector "
                              "(component %g; at most %g, SSK_MAX_MAGNITUDE)",
                              path, i / 3, isfinite(x) ? "huge" : "non-finite", (double)x,
                              (double)SSK_MAX_MAGNITUDE);
            goto fail;
        }
        b->scale_vectors[i] = x;
    }
    if (cor) {
        if (!ssk_binding_alloc_cor(b)) {
            s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                              "cannot allocate the centers of rotation of binding '%s'", path);
            goto fail;
        }
        for (size_t i = 0; i < 3 * (size_t)nv; ++i, p += 4) {
            float x = get_f32(p);
            if (!(fabsf(x) <= SSK_MAX_MAGNITUDE)) {
                s = ssk_error_set(err, SSK_ERROR_IO,
                                  "binding '%s' is corrupt: vertex %zu has a %s center of "
                                  "rotation (component %g; at most %g, SSK_MAX_MAGNITUDE)",
                                  path, i / 3, isfinite(x) ? "huge" : "non-finite", (double)x,
                                  (double)SSK_MAX_MAGNITUDE);
                goto fail;
            }
            b->cor_centers[i] = x;
        }
        for (uint32_t v = 0; v < nv; ++v) {
            if (p[v] > 1) {
                s = ssk_error_set(err, SSK_ERROR_IO,
                                  "binding '%s' is corrupt: vertex %u has CoR flag %u (0 or 1)",
                                  path, (unsigned)v, (unsigned)p[v]);
                goto fail;
            }
            b->cor_flags[v] = p[v];
        }
        p += cor_section_size(nv) - 12 * (size_t)nv;
    }
    if (implicit && (s = load_implicit(b, &p, &dims, path, err)) != SSK_OK) goto fail;
    if (dims.cage_vertex_count && (s = load_cage(b, &p, &dims, path, err)) != SSK_OK) goto fail;
    b->rig_hash = hash;
    b->params = params;
    if (rig) {
        if (nv != rig->vertex_count || nb != rig->bone_count || hash != rig_h) {
            s = ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                              "binding '%s' was made for another rig (%u vertices, %u bones, "
                              "hash %016llx; this rig: %u vertices, %u bones, hash %016llx)",
                              path, (unsigned)nv, (unsigned)nb, (unsigned long long)hash,
                              (unsigned)rig->vertex_count, (unsigned)rig->bone_count,
                              (unsigned long long)rig_h);
            goto fail;
        }
    }
    free(buf);
    b->seconds = ssk_time_seconds() - start;
    *out = b;
    return ssk_error_ok(err);
fail:
    free(buf);
    ssk_binding_destroy(b);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Cache.                                                                    */
/* ------------------------------------------------------------------------ */

ssk_status ssk_binding_cached(ssk_binding **out, const ssk_rig *rig,
                              const ssk_bind_params *params, const char *path,
                              int *out_reused, ssk_error *err)
{
    if (out) *out = NULL;
    if (out_reused) *out_reused = 0;
    if (!out || !rig || !params)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_binding_cached: NULL %s",
                             !out ? "output" : (!rig ? "rig" : "parameters"));
    ssk_status s = ssk_bind_params_check(params, err);
    if (s != SSK_OK) return s;
    ssk_cage_binding *kept_cage = NULL;
    uint64_t kept_cage_key = 0;
    if (path) {
        ssk_bind_params want = *params;
        want.method = ssk_bind_resolve_method(rig, params->method);
        ssk_binding *loaded = NULL;
        ssk_error load_err = {0};
        if (ssk_binding_load(&loaded, path, rig, &load_err) == SSK_OK) {
            /* with compute_cor the file must hold CoRs of the same
             * parameters; without it, CoRs in the file do no harm */
            const ssk_cor_params *a = &loaded->params.cor, *c = &want.cor;
            const bool cor_ok = !want.compute_cor ||
                                (loaded->cor_centers && a->sigma == c->sigma &&
                                 a->epsilon == c->epsilon && a->omega == c->omega &&
                                 a->cutoff == c->cutoff);
            /* with compute_implicit the file's implicit data must be what
             * this build's deformer would fit (ssk_binding_implicit_fit) */
            const bool implicit_ok =
                !want.compute_implicit || ssk_binding_implicit_fit(loaded, NULL) != NULL;
            if (loaded->params.method == want.method &&
                loaded->params.smooth_iterations == want.smooth_iterations &&
                loaded->params.max_distance == want.max_distance && cor_ok && implicit_ok) {
                *out = loaded;
                if (out_reused) *out_reused = 1;
                return ssk_error_ok(err);
            }
            /* bound again below; the cage binding does not depend on the
             * parameters and is kept (the file was this rig's) */
            kept_cage = loaded->cage;
            kept_cage_key = loaded->cage_key;
            loaded->cage = NULL;
            ssk_binding_destroy(loaded);
        }
    }
    ssk_binding *b = NULL;
    s = ssk_binding_create(&b, rig, params, err);
    if (s != SSK_OK) {
        ssk_cage_binding_free(kept_cage);
        free(kept_cage);
        return s;
    }
    b->cage = kept_cage;
    b->cage_key = kept_cage_key;
    if (path) {
        s = ssk_binding_save(b, path, err);
        if (s != SSK_OK) {
            ssk_binding_destroy(b);
            return s;
        }
    }
    *out = b;
    return ssk_error_ok(err);
}
