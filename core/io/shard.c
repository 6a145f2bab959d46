/* shard.c — frame shards of a bake and their merge into one cache (issue
 * #23).
 *
 * A shard file ("<dir>/frames-<first>-<last>.ssks") holds frames
 * first..last of one bake:
 *
 *   the manifest, text, one "key value" line each, in this order:
 *     "SSKS 1 SpringSkin frame shard", version, rig_hash, animation_hash,
 *     binding_hash, graph_hash, topology_hash (16 hex digits each),
 *     backend, fps (%.17g: the double round-trips), animation,
 *     animation_frames, vertex_count, mesh_count, normals (0 or 1),
 *     first_frame, last_frame, data_bytes, data_hash (16 hex digits),
 *     then "end";
 *   the data (data_bytes, XXH3_64bits seed 0 = data_hash), little-endian:
 *     the mesh section, per mesh: uint32 name length, the name's bytes
 *       padded with zeros to a multiple of 4 (arrays stay aligned),
 *       uint32 #V, uint32 #F, uint32 has_uv, int32[#F*3] triangles,
 *       float32[#V*2] uv when has_uv, float32[16] rest placement
 *       (mesh object -> scene, row-major);
 *     per frame: float32[#V*3] positions (each mesh in its object space),
 *       float32[#V*3] normals when normals = 1, float32[#M*16] the meshes'
 *       object -> scene matrices of the frame.
 *
 * The writer writes "<path>.tmp-<pid>", patches the manifest's data_bytes
 * and data_hash (fixed width) at the end, fsyncs and renames, so a shard
 * that exists is complete. The merge reads the manifests, checks that the
 * shards are one bake and cover the range once, then streams frame by
 * frame into the .pc2 or .abc writer the bake itself uses, checking each
 * shard's checksum as it goes; the writer's temporary file is removed on
 * any error. Floats are stored as the host's bytes: little-endian hosts
 * only (SSK_ERROR_UNSUPPORTED elsewhere). */
#include "io/shard.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define SHARD_MAGIC_LINE "SSKS 1 SpringSkin frame shard"
#define SHARD_EXTENSION ".ssks"
#define SHARD_END_LINE "end"
/* The manifest is far smaller; a file whose first bytes hold no "end"
 * line within this is not a shard. */
#define SHARD_MANIFEST_MAX 4096
/* Bytes per read/write of a copy or checksum pass. */
#define SHARD_CHUNK_BYTES (1u << 20)
/* Missing frame ranges a gap error lists before "and N more". */
#define SHARD_LISTED_GAPS 8
/* Floats in a 4x4 matrix. */
#define SHARD_MAT4 16

static bool host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static ssk_status big_endian_error(ssk_error *err)
{
    return ssk_error_set(err, SSK_ERROR_UNSUPPORTED,
                         "shards: frame shards are written on little-endian hosts only");
}

/* Bytes of one frame record. */
static uint64_t frame_bytes(const ssk_shard_manifest *m)
{
    return ((uint64_t)m->vertex_count * 3u * (m->with_normals ? 2u : 1u) +
            (uint64_t)m->mesh_count * SHARD_MAT4) *
           sizeof(float);
}

ssk_status ssk_shard_path(char *dst, size_t size, const char *directory, int32_t first,
                          int32_t last, ssk_error *err)
{
    if (!dst || !directory || !directory[0])
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "shard: NULL or empty directory");
    if (first < 0 || last < first)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "shard: bad frames %d..%d",
                             (int)first, (int)last);
    const size_t len = strlen(directory);
    const bool slash = directory[len - 1] == '/';
    const int n = snprintf(dst, size, "%s%sframes-%010d-%010d" SHARD_EXTENSION, directory,
                           slash ? "" : "/", (int)first, (int)last);
    if (n < 0 || (size_t)n >= size)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "shard: path too long in '%s'",
                             directory);
    return ssk_error_ok(err);
}

/* ------------------------------------------------------------------------ */
/* The manifest.                                                             */
/* ------------------------------------------------------------------------ */

/* The manifest's text into dst[SHARD_MANIFEST_MAX]; its length. */
static int manifest_format(char *dst, const ssk_shard_manifest *m)
{
    return snprintf(dst, SHARD_MANIFEST_MAX,
                    SHARD_MAGIC_LINE "\n"
                    "version %s\n"
                    "rig_hash %016" PRIx64 "\n"
                    "animation_hash %016" PRIx64 "\n"
                    "binding_hash %016" PRIx64 "\n"
                    "graph_hash %016" PRIx64 "\n"
                    "topology_hash %016" PRIx64 "\n"
                    "backend %s\n"
                    "fps %.17g\n"
                    "animation %u\n"
                    "animation_frames %u\n"
                    "vertex_count %u\n"
                    "mesh_count %u\n"
                    "normals %d\n"
                    "first_frame %d\n"
                    "last_frame %d\n"
                    "data_bytes %016" PRIx64 "\n"
                    "data_hash %016" PRIx64 "\n" SHARD_END_LINE "\n",
                    m->version, m->rig_hash, m->animation_hash, m->binding_hash, m->graph_hash,
                    m->topology_hash, m->backend, m->fps, (unsigned)m->animation,
                    (unsigned)m->animation_frames, (unsigned)m->vertex_count,
                    (unsigned)m->mesh_count, m->with_normals ? 1 : 0, (int)m->first_frame,
                    (int)m->last_frame, m->data_bytes, m->data_hash);
}

/* The next line of text[*pos..] as "key value" with the expected key: the
 * value (NUL-terminated in place), or NULL. */
static char *manifest_value(char *text, size_t *pos, const char *key)
{
    char *line = text + *pos;
    char *nl = strchr(line, '\n');
    if (!nl) return NULL;
    *nl = '\0';
    *pos += (size_t)(nl - line) + 1;
    const size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || line[k] != ' ' || !line[k + 1]) return NULL;
    return line + k + 1;
}

static bool parse_u64(uint64_t *out, const char *v, int base)
{
    if (!v || !((v[0] >= '0' && v[0] <= '9') || (base == 16 && v[0] >= 'a' && v[0] <= 'f')))
        return false;
    char *end = NULL;
    errno = 0;
    const unsigned long long x = strtoull(v, &end, base);
    if (*end || errno) return false;
    *out = (uint64_t)x;
    return true;
}

static bool parse_u32(uint32_t *out, const char *v)
{
    uint64_t x;
    if (!parse_u64(&x, v, 10) || x > UINT32_MAX) return false;
    *out = (uint32_t)x;
    return true;
}

static bool parse_frame(int32_t *out, const char *v)
{
    uint64_t x;
    if (!parse_u64(&x, v, 10) || x > INT32_MAX) return false;
    *out = (int32_t)x;
    return true;
}

/* Parses the manifest at the start of `f`; *header_size: its bytes. */
static ssk_status manifest_parse(ssk_shard_manifest *m, size_t *header_size, FILE *f,
                                 const char *path, ssk_error *err)
{
    char text[SHARD_MANIFEST_MAX + 1];
    const size_t n = fread(text, 1, SHARD_MANIFEST_MAX, f);
    text[n] = '\0';
    char *end = strstr(text, "\n" SHARD_END_LINE "\n");
    if (strncmp(text, SHARD_MAGIC_LINE "\n", sizeof SHARD_MAGIC_LINE) != 0 || !end)
        return ssk_error_set(err, SSK_ERROR_IO, "'%s' is not a SpringSkin frame shard", path);
    *header_size = (size_t)(end - text) + sizeof SHARD_END_LINE + 1;
    end[1] = '\0';
    memset(m, 0, sizeof *m);
    size_t pos = sizeof SHARD_MAGIC_LINE;
    const char *bad = NULL;
    const char *v = manifest_value(text, &pos, "version");
    if (!v || strlen(v) >= sizeof m->version) bad = "version";
    else snprintf(m->version, sizeof m->version, "%s", v);
    static const char *const hash_keys[5] = {"rig_hash", "animation_hash", "binding_hash",
                                             "graph_hash", "topology_hash"};
    uint64_t *hashes[5] = {&m->rig_hash, &m->animation_hash, &m->binding_hash, &m->graph_hash,
                           &m->topology_hash};
    for (int i = 0; !bad && i < 5; ++i)
        if (!parse_u64(hashes[i], manifest_value(text, &pos, hash_keys[i]), 16))
            bad = hash_keys[i];
    if (!bad) {
        v = manifest_value(text, &pos, "backend");
        if (!v || strlen(v) >= sizeof m->backend) bad = "backend";
        else snprintf(m->backend, sizeof m->backend, "%s", v);
    }
    if (!bad) {
        v = manifest_value(text, &pos, "fps");
        char *e = NULL;
        m->fps = v ? strtod(v, &e) : 0.0;
        if (!v || *e || !(m->fps > 0.0)) bad = "fps";
    }
    uint32_t normals = 0;
    if (!bad && !parse_u32(&m->animation, manifest_value(text, &pos, "animation")))
        bad = "animation";
    if (!bad && !parse_u32(&m->animation_frames, manifest_value(text, &pos, "animation_frames")))
        bad = "animation_frames";
    if (!bad && !parse_u32(&m->vertex_count, manifest_value(text, &pos, "vertex_count")))
        bad = "vertex_count";
    if (!bad && !parse_u32(&m->mesh_count, manifest_value(text, &pos, "mesh_count")))
        bad = "mesh_count";
    if (!bad && (!parse_u32(&normals, manifest_value(text, &pos, "normals")) || normals > 1))
        bad = "normals";
    m->with_normals = (int)normals;
    if (!bad && !parse_frame(&m->first_frame, manifest_value(text, &pos, "first_frame")))
        bad = "first_frame";
    if (!bad && (!parse_frame(&m->last_frame, manifest_value(text, &pos, "last_frame")) ||
                 m->last_frame < m->first_frame))
        bad = "last_frame";
    if (!bad && !parse_u64(&m->data_bytes, manifest_value(text, &pos, "data_bytes"), 16))
        bad = "data_bytes";
    if (!bad && !parse_u64(&m->data_hash, manifest_value(text, &pos, "data_hash"), 16))
        bad = "data_hash";
    if (bad)
        return ssk_error_set(err, SSK_ERROR_IO, "shard '%s': malformed manifest (field %s)",
                             path, bad);
    const uint64_t frames = (uint64_t)(m->last_frame - m->first_frame) + 1u;
    if (m->vertex_count == 0 || m->mesh_count == 0 || m->data_bytes < frames * frame_bytes(m))
        return ssk_error_set(err, SSK_ERROR_IO,
                             "shard '%s': malformed manifest (%" PRIu64 " data bytes cannot "
                             "hold %" PRIu64 " frames of %u vertices)",
                             path, m->data_bytes, frames, (unsigned)m->vertex_count);
    return ssk_error_ok(err);
}

/* Opens a shard, parses its manifest and checks the file's size; the file
 * is left positioned at the data. */
static ssk_status shard_open(FILE **out, ssk_shard_manifest *m, size_t *header_size,
                             const char *path, ssk_error *err)
{
    *out = NULL;
    if (!host_little_endian()) return big_endian_error(err);
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ssk_error_set(err, SSK_ERROR_IO, "cannot open shard '%s': %s", path,
                             strerror(errno));
    ssk_status s = manifest_parse(m, header_size, f, path, err);
    struct stat st;
    if (s == SSK_OK && fstat(fileno(f), &st) != 0)
        s = ssk_error_set(err, SSK_ERROR_IO, "cannot stat shard '%s': %s", path,
                          strerror(errno));
    if (s == SSK_OK && (uint64_t)st.st_size != *header_size + m->data_bytes)
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "shard '%s' (frames %d..%d) is truncated or damaged: %" PRIu64
                          " data bytes, its manifest says %" PRIu64,
                          path, (int)m->first_frame, (int)m->last_frame,
                          (uint64_t)st.st_size > *header_size
                              ? (uint64_t)st.st_size - *header_size
                              : 0u,
                          m->data_bytes);
    if (s == SSK_OK && fseek(f, (long)*header_size, SEEK_SET) != 0)
        s = ssk_error_set(err, SSK_ERROR_IO, "cannot read shard '%s'", path);
    if (s != SSK_OK) {
        fclose(f);
        return s;
    }
    *out = f;
    return ssk_error_ok(err);
}

ssk_status ssk_shard_read_manifest(ssk_shard_manifest *out, const char *path, ssk_error *err)
{
    if (!out || !path)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "shard: NULL %s",
                             out ? "path" : "manifest");
    FILE *f = NULL;
    size_t header = 0;
    ssk_status s = shard_open(&f, out, &header, path, err);
    if (f) fclose(f);
    return s;
}

int ssk_shard_same_bake(const ssk_shard_manifest *a, const ssk_shard_manifest *b,
                        const char **field)
{
    const char *f = NULL;
    if (strcmp(a->version, b->version) != 0) f = "version";
    else if (a->rig_hash != b->rig_hash) f = "rig_hash";
    else if (a->animation_hash != b->animation_hash) f = "animation_hash";
    else if (a->binding_hash != b->binding_hash) f = "binding_hash";
    else if (a->graph_hash != b->graph_hash) f = "graph_hash";
    else if (a->topology_hash != b->topology_hash) f = "topology_hash";
    else if (strcmp(a->backend, b->backend) != 0) f = "backend";
    else if (a->fps != b->fps) f = "fps";
    else if (a->animation != b->animation) f = "animation";
    else if (a->animation_frames != b->animation_frames) f = "animation_frames";
    else if (a->vertex_count != b->vertex_count) f = "vertex_count";
    else if (a->mesh_count != b->mesh_count) f = "mesh_count";
    else if (a->with_normals != b->with_normals) f = "normals";
    if (field) *field = f;
    return f == NULL;
}

/* Reads n bytes of `f` into dst and feeds them to the hash. */
static bool read_hashed(FILE *f, void *dst, size_t n, XXH3_state_t *h)
{
    return fread(dst, 1, n, f) == n && XXH3_64bits_update(h, dst, n) == XXH_OK;
}

/* Reads and hashes n bytes of `f` (through buf[SHARD_CHUNK_BYTES]). */
static bool skip_hashed(FILE *f, uint64_t n, unsigned char *buf, XXH3_state_t *h)
{
    while (n > 0) {
        const size_t k = n < SHARD_CHUNK_BYTES ? (size_t)n : SHARD_CHUNK_BYTES;
        if (!read_hashed(f, buf, k, h)) return false;
        n -= k;
    }
    return true;
}

ssk_status ssk_shard_verify(ssk_shard_manifest *out, const char *path, ssk_error *err)
{
    FILE *f = NULL;
    size_t header = 0;
    ssk_status s = shard_open(&f, out, &header, path, err);
    if (s != SSK_OK) return s;
    unsigned char *buf = malloc(SHARD_CHUNK_BYTES);
    XXH3_state_t *h = XXH3_createState();
    if (!buf || !h || XXH3_64bits_reset(h) != XXH_OK)
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "shard: cannot allocate");
    else if (!skip_hashed(f, out->data_bytes, buf, h))
        s = ssk_error_set(err, SSK_ERROR_IO, "cannot read shard '%s'", path);
    else if (XXH3_64bits_digest(h) != out->data_hash)
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "shard '%s' is damaged: its data does not match its checksum", path);
    XXH3_freeState(h);
    free(buf);
    fclose(f);
    return s;
}

/* ------------------------------------------------------------------------ */
/* The mesh section.                                                         */
/* ------------------------------------------------------------------------ */

/* n rounded up to a multiple of 4. */
static size_t padded(size_t n) { return (n + 3u) & ~(size_t)3u; }

static void put_u32(unsigned char **p, uint32_t v)
{
    memcpy(*p, &v, 4);
    *p += 4;
}

static void put_bytes(unsigned char **p, const void *src, size_t n)
{
    if (n) memcpy(*p, src, n);
    *p += n;
}

ssk_status ssk_shard_topology(unsigned char **out, size_t *out_size, uint64_t *out_hash,
                              const ssk_abc_mesh_desc *meshes, uint32_t mesh_count,
                              ssk_error *err)
{
    static const float identity[SHARD_MAT4] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    size_t size = 0;
    for (uint32_t m = 0; m < mesh_count; ++m) {
        const ssk_abc_mesh_desc *d = &meshes[m];
        size += 16 + padded(d->name ? strlen(d->name) : 0) + (size_t)d->triangle_count * 12 +
                (d->uvs ? (size_t)d->vertex_count * 8 : 0) + SHARD_MAT4 * sizeof(float);
    }
    unsigned char *buf = malloc(size + 1);
    if (!buf)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "shard: cannot allocate the mesh section (%zu bytes)", size);
    unsigned char *p = buf;
    for (uint32_t m = 0; m < mesh_count; ++m) {
        const ssk_abc_mesh_desc *d = &meshes[m];
        const size_t name_len = d->name ? strlen(d->name) : 0;
        put_u32(&p, (uint32_t)name_len);
        put_bytes(&p, d->name, name_len);
        memset(p, 0, padded(name_len) - name_len);
        p += padded(name_len) - name_len;
        put_u32(&p, d->vertex_count);
        put_u32(&p, d->triangle_count);
        put_u32(&p, d->uvs ? 1u : 0u);
        put_bytes(&p, d->triangles, (size_t)d->triangle_count * 12);
        if (d->uvs) put_bytes(&p, d->uvs, (size_t)d->vertex_count * 8);
        put_bytes(&p, d->object_matrix ? d->object_matrix : identity, SHARD_MAT4 * sizeof(float));
    }
    *out = buf;
    *out_size = size;
    *out_hash = XXH3_64bits(buf, size);
    return ssk_error_ok(err);
}

/* The meshes of a mesh section (names, triangles, uv, matrices point into
 * `section`, which must outlive them): *out malloc'ed, mesh_count rows. */
static ssk_status topology_parse(ssk_abc_mesh_desc **out, char ***names,
                                 unsigned char *section, size_t size, uint32_t mesh_count,
                                 const char *path, ssk_error *err)
{
    ssk_abc_mesh_desc *md = calloc(mesh_count, sizeof *md);
    char **nm = calloc(mesh_count, sizeof *nm);
    if (!md || !nm) {
        free(md);
        free(nm);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "shard: cannot allocate");
    }
    size_t pos = 0;
    bool ok = true;
#define TAKE(dst, n)                                                                          \
    do {                                                                                      \
        if (!ok || (n) > size - pos) { ok = false; break; }                                   \
        (dst) = (void *)(section + pos);                                                      \
        pos += (n);                                                                           \
    } while (0)
    for (uint32_t m = 0; ok && m < mesh_count; ++m) {
        const unsigned char *w = NULL;
        uint32_t v[4];
        TAKE(w, 4);
        if (!ok) break;
        memcpy(&v[0], w, 4);
        const unsigned char *name = NULL;
        TAKE(name, padded((size_t)v[0]));
        if (!ok) break;
        nm[m] = malloc((size_t)v[0] + 1);
        if (!nm[m]) {
            ok = false;
            break;
        }
        memcpy(nm[m], name, v[0]);
        nm[m][v[0]] = '\0';
        md[m].name = nm[m];
        for (int k = 1; ok && k < 4; ++k) {
            TAKE(w, 4);
            if (ok) memcpy(&v[k], w, 4);
        }
        md[m].vertex_count = v[1];
        md[m].triangle_count = v[2];
        TAKE(md[m].triangles, (size_t)v[2] * 12);
        if (v[3]) TAKE(md[m].uvs, (size_t)v[1] * 8);
        TAKE(md[m].object_matrix, SHARD_MAT4 * sizeof(float));
    }
#undef TAKE
    if (!ok || pos != size) {
        for (uint32_t m = 0; m < mesh_count; ++m) free(nm[m]);
        free(nm);
        free(md);
        return ssk_error_set(err, SSK_ERROR_IO, "shard '%s': malformed mesh section", path);
    }
    *out = md;
    *names = nm;
    return ssk_error_ok(err);
}

/* ------------------------------------------------------------------------ */
/* Writer.                                                                   */
/* ------------------------------------------------------------------------ */

struct ssk_shard_writer {
    FILE *file;
    char *path;
    char *tmp_path;
    ssk_shard_manifest manifest;
    size_t header_size;
    uint32_t frames_written;
    XXH3_state_t *hash;
    bool failed;
};

static void writer_free(ssk_shard_writer *w)
{
    if (!w) return;
    if (w->file) fclose(w->file);
    if (w->tmp_path) remove(w->tmp_path);
    ssk_temp_path_free(w->tmp_path);
    free(w->path);
    XXH3_freeState(w->hash);
    free(w);
}

void ssk_shard_writer_abort(ssk_shard_writer *w) { writer_free(w); }

/* Writes n bytes and feeds them to the data hash. */
static void write_hashed(ssk_shard_writer *w, const void *src, size_t n)
{
    if (w->failed || n == 0) return;
    if (fwrite(src, 1, n, w->file) != n || XXH3_64bits_update(w->hash, src, n) != XXH_OK)
        w->failed = true;
    w->manifest.data_bytes += n;
}

ssk_status ssk_shard_writer_open(ssk_shard_writer **out, const char *path,
                                 const ssk_shard_manifest *manifest,
                                 const ssk_abc_mesh_desc *meshes, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !path || !manifest || !meshes)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "shard writer: NULL argument");
    if (!host_little_endian()) return big_endian_error(err);
    ssk_shard_writer *w = calloc(1, sizeof *w);
    if (!w) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "shard writer: cannot allocate");
    w->manifest = *manifest;
    w->manifest.data_bytes = 0;
    w->manifest.data_hash = 0;
    w->path = ssk_strdup(path);
    w->tmp_path = w->path ? ssk_temp_path(path) : NULL;
    w->hash = XXH3_createState();
    unsigned char *section = NULL;
    size_t section_size = 0;
    ssk_status s = SSK_OK;
    if (!w->path || !w->tmp_path || !w->hash || XXH3_64bits_reset(w->hash) != XXH_OK)
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "shard writer: cannot allocate");
    if (s == SSK_OK)
        s = ssk_shard_topology(&section, &section_size, &w->manifest.topology_hash, meshes,
                               manifest->mesh_count, err);
    if (s == SSK_OK) {
        errno = 0;
        w->file = fopen(w->tmp_path, "wb");
        if (!w->file)
            s = ssk_error_set(err, SSK_ERROR_IO, "cannot create shard '%s' (temporary file "
                                                 "'%s'): %s",
                              path, w->tmp_path, strerror(errno));
    }
    if (s == SSK_OK) {
        char text[SHARD_MANIFEST_MAX];
        const int n = manifest_format(text, &w->manifest);
        w->header_size = (size_t)n;
        if (n <= 0 || n >= SHARD_MANIFEST_MAX || fwrite(text, 1, (size_t)n, w->file) != (size_t)n)
            s = ssk_error_set(err, SSK_ERROR_IO, "cannot write shard '%s'", path);
    }
    if (s == SSK_OK) {
        write_hashed(w, section, section_size);
        if (w->failed) s = ssk_error_set(err, SSK_ERROR_IO, "cannot write shard '%s'", path);
    }
    free(section);
    if (s != SSK_OK) {
        writer_free(w);
        return s;
    }
    *out = w;
    return ssk_error_ok(err);
}

ssk_status ssk_shard_writer_write(ssk_shard_writer *w, const float *positions,
                                  const float *normals, const float *object_matrices,
                                  ssk_error *err)
{
    if (!w || !positions || !object_matrices || (w->manifest.with_normals && !normals))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "shard writer: NULL argument");
    const ssk_shard_manifest *m = &w->manifest;
    if ((int64_t)w->frames_written > (int64_t)m->last_frame - m->first_frame)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "shard writer: frames %d..%d are written already",
                             (int)m->first_frame, (int)m->last_frame);
    const size_t v3 = (size_t)m->vertex_count * 3 * sizeof(float);
    write_hashed(w, positions, v3);
    if (m->with_normals) write_hashed(w, normals, v3);
    write_hashed(w, object_matrices, (size_t)m->mesh_count * SHARD_MAT4 * sizeof(float));
    if (w->failed)
        return ssk_error_set(err, SSK_ERROR_IO, "cannot write shard '%s': %s", w->path,
                             strerror(errno));
    ++w->frames_written;
    return ssk_error_ok(err);
}

ssk_status ssk_shard_writer_finish(ssk_shard_writer *w, ssk_error *err)
{
    if (!w) return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "shard writer: NULL");
    ssk_shard_manifest *m = &w->manifest;
    ssk_status s = SSK_OK;
    if ((int64_t)w->frames_written != (int64_t)m->last_frame - m->first_frame + 1)
        s = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                          "shard writer: %u of the frames %d..%d written",
                          (unsigned)w->frames_written, (int)m->first_frame, (int)m->last_frame);
    if (s == SSK_OK && !w->failed) {
        m->data_hash = XXH3_64bits_digest(w->hash);
        char text[SHARD_MANIFEST_MAX];
        const int n = manifest_format(text, m);
        /* the fixed-width fields keep the manifest's length */
        if ((size_t)n != w->header_size || fseek(w->file, 0, SEEK_SET) != 0 ||
            fwrite(text, 1, (size_t)n, w->file) != (size_t)n)
            w->failed = true;
    }
    if (s == SSK_OK && !w->failed &&
        (fflush(w->file) != 0 || fsync(fileno(w->file)) != 0 || fclose(w->file) != 0)) {
        w->file = NULL;
        w->failed = true;
    }
    if (s == SSK_OK && !w->failed) {
        w->file = NULL;
        if (rename(w->tmp_path, w->path) != 0) w->failed = true;
    }
    if (s == SSK_OK && w->failed)
        s = ssk_error_set(err, SSK_ERROR_IO, "cannot write shard '%s': %s", w->path,
                          strerror(errno));
    if (s == SSK_OK) {
        ssk_sync_parent_directory(w->path);
        ssk_temp_path_free(w->tmp_path);
        w->tmp_path = NULL; /* renamed: nothing to remove */
    }
    writer_free(w);
    return s == SSK_OK ? ssk_error_ok(err) : s;
}

/* ------------------------------------------------------------------------ */
/* Merge.                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct shard_entry {
    char *path;
    ssk_shard_manifest m;
    size_t header_size;
} shard_entry;

static int entry_compare(const void *a, const void *b)
{
    const shard_entry *x = a, *y = b;
    if (x->m.first_frame != y->m.first_frame) return x->m.first_frame < y->m.first_frame ? -1 : 1;
    if (x->m.last_frame != y->m.last_frame) return x->m.last_frame < y->m.last_frame ? -1 : 1;
    return strcmp(x->path, y->path);
}

static bool has_suffix(const char *s, const char *suffix)
{
    const size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Every "*.ssks" of the directory with its manifest. */
static ssk_status list_shards(shard_entry **out, uint32_t *count, const char *dir,
                              ssk_error *err)
{
    *out = NULL;
    *count = 0;
    errno = 0;
    DIR *d = opendir(dir);
    if (!d)
        return ssk_error_set(err, SSK_ERROR_IO, "merge: cannot open the shard directory '%s': %s",
                             dir, strerror(errno));
    shard_entry *list = NULL;
    uint32_t n = 0, cap = 0;
    ssk_status s = SSK_OK;
    struct dirent *e;
    while (s == SSK_OK && (e = readdir(d)) != NULL) {
        if (!has_suffix(e->d_name, SHARD_EXTENSION)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            shard_entry *grown = realloc(list, cap * sizeof *list);
            if (!grown) {
                s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "merge: cannot allocate");
                break;
            }
            list = grown;
        }
        const size_t size = strlen(dir) + strlen(e->d_name) + 2;
        list[n].path = malloc(size);
        if (!list[n].path) {
            s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "merge: cannot allocate");
            break;
        }
        snprintf(list[n].path, size, "%s/%s", dir, e->d_name);
        ++n;
        FILE *f = NULL;
        s = shard_open(&f, &list[n - 1].m, &list[n - 1].header_size, list[n - 1].path, err);
        if (f) fclose(f);
    }
    closedir(d);
    *out = list;
    *count = n;
    if (s == SSK_OK && n == 0)
        s = ssk_error_set(err, SSK_ERROR_IO, "merge: no shard (*" SHARD_EXTENSION ") in '%s'",
                          dir);
    if (s == SSK_OK) qsort(list, n, sizeof *list, entry_compare);
    return s;
}

/* Appends "a..b" (or "a") to the gap list text. */
static void gap_append(char *dst, size_t size, int64_t a, int64_t b)
{
    const size_t len = strlen(dst);
    if (a == b) snprintf(dst + len, size - len, "%s%lld", len ? ", " : "", (long long)a);
    else snprintf(dst + len, size - len, "%s%lld..%lld", len ? ", " : "", (long long)a,
                  (long long)b);
}

/* Checks that the shards meeting [first, last] cover it once; sets
 * *from, *to: the index range of those shards. */
static ssk_status check_coverage(const shard_entry *list, uint32_t n, int64_t first,
                                 int64_t last, uint32_t *from, uint32_t *to, const char *dir,
                                 ssk_error *err)
{
    char gaps[SSK_ERROR_MESSAGE_SIZE / 2] = "";
    uint32_t gap_count = 0;
    uint64_t missing = 0;
    int64_t next = first; /* first frame not yet covered */
    *from = n;
    *to = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const ssk_shard_manifest *m = &list[i].m;
        if (m->last_frame < first || m->first_frame > last) continue;
        if (*from == n) *from = i;
        *to = i + 1;
        if (m->first_frame < next)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "merge: shards '%s' (frames %d..%d) and '%s' (frames %d..%d) "
                                 "overlap: remove one of them",
                                 list[i - 1].path, (int)list[i - 1].m.first_frame,
                                 (int)list[i - 1].m.last_frame, list[i].path,
                                 (int)m->first_frame, (int)m->last_frame);
        if (m->first_frame > next) {
            if (gap_count++ < SHARD_LISTED_GAPS) gap_append(gaps, sizeof gaps, next, m->first_frame - 1);
            missing += (uint64_t)(m->first_frame - next);
        }
        next = (int64_t)m->last_frame + 1;
    }
    if (next <= last) {
        if (gap_count++ < SHARD_LISTED_GAPS) gap_append(gaps, sizeof gaps, next, last);
        missing += (uint64_t)(last - next + 1);
    }
    if (gap_count)
        return ssk_error_set(err, SSK_ERROR_FRAME_RANGE,
                             "merge: the shards in '%s' do not cover frames %lld..%lld: %llu "
                             "frame(s) missing: %s%s",
                             dir, (long long)first, (long long)last, (unsigned long long)missing,
                             gaps, gap_count > SHARD_LISTED_GAPS ? " and more" : "");
    return ssk_error_ok(err);
}

/* The output writer: one of the two. */
typedef struct merge_writer {
    ssk_pc2_writer *pc2;
    ssk_abc_writer *abc;
} merge_writer;

/* Streams one shard's frames in [first, last] into the writer, hashing all
 * of its data; buf holds one frame record (at least SHARD_CHUNK_BYTES). */
static ssk_status merge_one(merge_writer *w, const shard_entry *e, int64_t first, int64_t last,
                            unsigned char *buf, XXH3_state_t *h, uint64_t *bytes_read,
                            uint32_t *frames_written, ssk_error *err)
{
    FILE *f = NULL;
    ssk_shard_manifest m;
    size_t header = 0;
    ssk_status s = shard_open(&f, &m, &header, e->path, err);
    if (s != SSK_OK) return s;
    const uint64_t record = frame_bytes(&m);
    const uint32_t frames = (uint32_t)(m.last_frame - m.first_frame) + 1u;
    const uint64_t section = m.data_bytes - (uint64_t)frames * record;
    if (XXH3_64bits_reset(h) != XXH_OK || !skip_hashed(f, section, buf, h))
        s = ssk_error_set(err, SSK_ERROR_IO, "merge: cannot read shard '%s'", e->path);
    const size_t v3 = (size_t)m.vertex_count * 3;
    for (uint32_t i = 0; s == SSK_OK && i < frames; ++i) {
        if (!read_hashed(f, buf, (size_t)record, h)) {
            s = ssk_error_set(err, SSK_ERROR_IO, "merge: cannot read shard '%s'", e->path);
            break;
        }
        const int64_t frame = (int64_t)m.first_frame + i;
        if (frame < first || frame > last) continue;
        const float *p = (const float *)buf;
        const float *normals = m.with_normals ? p + v3 : NULL;
        const float *matrices = p + v3 * (m.with_normals ? 2 : 1);
        s = w->pc2 ? ssk_pc2_writer_write(w->pc2, p, err)
                   : ssk_abc_writer_write_frame(w->abc, p, normals, matrices, err);
        *frames_written += s == SSK_OK;
    }
    if (s == SSK_OK && XXH3_64bits_digest(h) != m.data_hash)
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "merge: shard '%s' is damaged: its data does not match its checksum",
                          e->path);
    *bytes_read += header + m.data_bytes;
    fclose(f);
    return s;
}

/* The mesh descriptions of a shard's mesh section (for the .abc writer). */
static ssk_status read_meshes(ssk_abc_mesh_desc **md, char ***names, unsigned char **section,
                              const shard_entry *e, ssk_error *err)
{
    FILE *f = NULL;
    ssk_shard_manifest m;
    size_t header = 0;
    ssk_status s = shard_open(&f, &m, &header, e->path, err);
    if (s != SSK_OK) return s;
    const uint64_t size =
        m.data_bytes - ((uint64_t)(m.last_frame - m.first_frame) + 1u) * frame_bytes(&m);
    *section = malloc((size_t)size + 1);
    if (!*section) s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "merge: cannot allocate");
    else if (fread(*section, 1, (size_t)size, f) != (size_t)size)
        s = ssk_error_set(err, SSK_ERROR_IO, "merge: cannot read shard '%s'", e->path);
    else if (XXH3_64bits(*section, (size_t)size) != m.topology_hash)
        s = ssk_error_set(err, SSK_ERROR_IO,
                          "merge: shard '%s' is damaged: its mesh section does not match its "
                          "checksum",
                          e->path);
    fclose(f);
    if (s == SSK_OK) s = topology_parse(md, names, *section, (size_t)size, m.mesh_count, e->path, err);
    return s;
}

ssk_status ssk_shards_merge(const char *directory, const char *output_path, int32_t first,
                            int32_t last, ssk_merge_stats *out_stats, ssk_error *err)
{
    const double t0 = ssk_time_seconds();
    if (out_stats) memset(out_stats, 0, sizeof *out_stats);
    if (!directory || !output_path || !directory[0] || !output_path[0])
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "merge: NULL or empty %s",
                             !directory || !directory[0] ? "shard directory" : "output path");
    const bool pc2 = ssk_path_has_extension(output_path, ".pc2");
    if (!pc2 && !ssk_path_has_extension(output_path, ".abc"))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "merge: output '%s': unknown format; supported formats: .pc2, .abc",
                             output_path);
    shard_entry *list = NULL;
    uint32_t n = 0;
    ssk_status s = list_shards(&list, &n, directory, err);
    const char *field = NULL;
    for (uint32_t i = 1; s == SSK_OK && i < n; ++i)
        if (!ssk_shard_same_bake(&list[0].m, &list[i].m, &field))
            s = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                              "merge: '%s' and '%s' are shards of two different bakes (their "
                              "%s differs); give each bake a directory of its own",
                              list[0].path, list[i].path, field);
    int64_t a = first, b = last;
    const ssk_shard_manifest *m0 = s == SSK_OK ? &list[0].m : NULL;
    if (s == SSK_OK) {
        if (a == 0 && b == -1) b = (int64_t)m0->animation_frames - 1;
        if (a < 0 || a > b || b >= (int64_t)m0->animation_frames)
            s = ssk_error_set(err, SSK_ERROR_FRAME_RANGE,
                              "merge: frames %d..%d are not a valid range of the baked "
                              "animation (0 <= first <= last <= %u)",
                              (int)first, (int)last, (unsigned)m0->animation_frames - 1u);
    }
    if (s == SSK_OK && pc2 && m0->with_normals)
        s = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                          "merge: the shards hold normals and '%s' (.pc2) has no place for "
                          "them: merge into an .abc",
                          output_path);
    uint32_t from = 0, to = 0;
    if (s == SSK_OK) s = check_coverage(list, n, a, b, &from, &to, directory, err);

    merge_writer w = {0};
    ssk_abc_mesh_desc *md = NULL;
    char **names = NULL;
    unsigned char *section = NULL;
    unsigned char *buf = NULL;
    XXH3_state_t *h = NULL;
    if (s == SSK_OK) {
        const uint64_t record = frame_bytes(m0);
        buf = malloc(record > SHARD_CHUNK_BYTES ? (size_t)record : SHARD_CHUNK_BYTES);
        h = XXH3_createState();
        if (!buf || !h) s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "merge: cannot allocate");
    }
    if (s == SSK_OK && pc2) {
        s = ssk_pc2_writer_open(&w.pc2, output_path, m0->vertex_count, (float)a, 1.0f, err);
    } else if (s == SSK_OK) {
        s = read_meshes(&md, &names, &section, &list[from], err);
        if (s == SSK_OK) {
            ssk_abc_desc ad = {0};
            ad.meshes = md;
            ad.mesh_count = m0->mesh_count;
            ad.fps = m0->fps;
            ad.start_time = (double)a / m0->fps;
            ad.with_normals = m0->with_normals;
            s = ssk_abc_writer_open(&w.abc, output_path, &ad, err);
        }
    }
    uint64_t bytes_read = 0;
    uint32_t frames_written = 0;
    for (uint32_t i = from; s == SSK_OK && i < to; ++i)
        s = merge_one(&w, &list[i], a, b, buf, h, &bytes_read, &frames_written, err);
    if (s == SSK_OK) {
        s = w.pc2 ? ssk_pc2_writer_finish(w.pc2, err) : ssk_abc_writer_finish(w.abc, err);
        w.pc2 = NULL;
        w.abc = NULL;
    }
    ssk_pc2_writer_abort(w.pc2);
    ssk_abc_writer_abort(w.abc);
    if (s == SSK_OK && out_stats) {
        out_stats->shard_count = to - from;
        out_stats->frame_count = frames_written;
        out_stats->vertex_count = m0->vertex_count;
        out_stats->bytes_read = bytes_read;
        out_stats->wall_seconds = ssk_time_seconds() - t0;
    }
    for (uint32_t i = 0; names && md && i < list[from].m.mesh_count; ++i) free(names[i]);
    free(names);
    free(md);
    free(section);
    free(buf);
    XXH3_freeState(h);
    for (uint32_t i = 0; i < n; ++i) free(list[i].path);
    free(list);
    return s == SSK_OK ? ssk_error_ok(err) : s;
}
