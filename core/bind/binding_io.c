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
 * Both versions load. The file is written to "<path>.tmp-<pid>", flushed,
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
#define BIND_HEADER_SIZE 40
#define BIND_HEADER_SIZE_V2 60
/* Section bit of version 2: centers of rotation. */
#define BIND_SECTION_COR 1u
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
    return version == BIND_FILE_VERSION ? BIND_HEADER_SIZE : BIND_HEADER_SIZE_V2;
}

static size_t file_size_for(uint32_t version, uint32_t vertex_count, bool cor)
{
    return header_size(version) + (size_t)vertex_count * BIND_BYTES_PER_VERTEX +
           (cor ? cor_section_size(vertex_count) : 0) + BIND_CHECKSUM_SIZE;
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
    const uint32_t version = cor ? BIND_FILE_VERSION_COR : BIND_FILE_VERSION;
    size_t size = file_size_for(version, binding->vertex_count, cor);
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
    if (cor) {
        put_u32(buf + 40, BIND_SECTION_COR);
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
 * format version and *out_cor whether it has the CoR section. */
static ssk_status read_binding_file(unsigned char **out_buf, uint32_t *out_version, bool *out_cor,
                                    const char *path, const ssk_rig *rig, uint64_t rig_hash,
                                    ssk_error *err)
{
    *out_buf = NULL;
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return io_error(err, "cannot open binding", path, errno);
    ssk_status s = SSK_OK;
    unsigned char *buf = NULL;
    struct stat st;
    unsigned char header[BIND_HEADER_SIZE_V2];
    uint32_t version = 0;
    bool cor = false;
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
    if (version != BIND_FILE_VERSION && version != BIND_FILE_VERSION_COR) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "binding '%s' has format version %u; this build reads versions %u "
                          "and %u",
                          path, (unsigned)version, BIND_FILE_VERSION, BIND_FILE_VERSION_COR);
        goto done;
    }
    if (version == BIND_FILE_VERSION_COR) {
        if ((uint64_t)st.st_size < BIND_HEADER_SIZE_V2 + BIND_CHECKSUM_SIZE) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' is truncated: %lld bytes, shorter than the %d-byte "
                              "header (format version 2) and checksum",
                              path, (long long)st.st_size,
                              BIND_HEADER_SIZE_V2 + BIND_CHECKSUM_SIZE);
            goto done;
        }
        errno = 0;
        if (fread(header + BIND_HEADER_SIZE, 1, BIND_HEADER_SIZE_V2 - BIND_HEADER_SIZE, f) !=
            BIND_HEADER_SIZE_V2 - BIND_HEADER_SIZE) {
            s = io_error(err, "cannot read binding", path, ferror(f) ? errno : EIO);
            goto done;
        }
        const uint32_t sections = get_u32(header + 40);
        if (sections & ~BIND_SECTION_COR) {
            s = ssk_error_set(err, SSK_ERROR_IO,
                              "binding '%s' (format version 2) is corrupt: unknown sections "
                              "0x%x",
                              path, (unsigned)sections);
            goto done;
        }
        cor = (sections & BIND_SECTION_COR) != 0;
    }
    const size_t head = header_size(version);
    uint32_t nv = get_u32(header + 32);
    size_t expected = file_size_for(version, nv, cor);
    if ((uint64_t)st.st_size != (uint64_t)expected) {
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "binding '%s' is %s: %lld bytes where its header's %u vertices "
                          "need %zu (format version %u%s)",
                          path, (uint64_t)st.st_size < (uint64_t)expected ? "truncated" : "corrupt",
                          (long long)st.st_size, (unsigned)nv, expected, (unsigned)version,
                          cor ? ", with centers of rotation" : "");
        goto done;
    }
    if (rig) {
        /* another rig's binding is refused from its header's counts, before
         * anything is allocated or read (issue #19: a sparse file claiming
         * 400M vertices was read and allocated before its checksum failed);
         * the rig hash is compared after the checksum, so that a flipped
         * bit reads as corruption */
        const uint32_t nb = get_u32(header + 36);
        if (nv != rig->vertex_count || nb != rig->bone_count) {
            s = ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                              "binding '%s' was made for another rig (%u vertices, %u bones; "
                              "this rig: %u vertices, %u bones, hash %016llx)",
                              path, (unsigned)nv, (unsigned)nb, (unsigned)rig->vertex_count,
                              (unsigned)rig->bone_count, (unsigned long long)rig_hash);
            goto done;
        }
    }
    buf = malloc(expected);
    if (!buf) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                          "cannot allocate %zu bytes to read binding '%s'", expected, path);
        goto done;
    }
    memcpy(buf, header, head);
    size_t rest = expected - head;
    errno = 0;
    if (fread(buf + head, 1, rest, f) != rest) {
        s = ferror(f) ? io_error(err, "cannot read binding", path, errno)
                      : ssk_error_set(err, SSK_ERROR_IO,
                                      "binding '%s' is truncated (shrank while reading)", path);
        goto done;
    }
    if (XXH3_64bits(buf, expected - BIND_CHECKSUM_SIZE) !=
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
    return SSK_OK;
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
    bool cor = false;
    uint64_t rig_h = 0;
    if (rig) {
        ssk_status hs = ssk_rig_hash_checked(rig, &rig_h, err);
        if (hs != SSK_OK) return hs;
    }
    ssk_status s = read_binding_file(&buf, &version, &cor, path, rig, rig_h, err);
    if (s != SSK_OK) return s;

    uint64_t hash = get_u64(buf + 12);
    ssk_bind_params params;
    params.method = (ssk_bind_method)get_u32(buf + 20);
    params.smooth_iterations = get_u32(buf + 24);
    params.max_distance = get_f32(buf + 28);
    params.compute_cor = cor ? 1 : 0;
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
    }
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
            if (loaded->params.method == want.method &&
                loaded->params.smooth_iterations == want.smooth_iterations &&
                loaded->params.max_distance == want.max_distance && cor_ok) {
                *out = loaded;
                if (out_reused) *out_reused = 1;
                return ssk_error_ok(err);
            }
            ssk_binding_destroy(loaded);
        }
    }
    ssk_binding *b = NULL;
    s = ssk_binding_create(&b, rig, params, err);
    if (s != SSK_OK) return s;
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
