/* abc.c — streaming writer of Alembic caches (AbcCoreOgawa archives).
 *
 * Written from the project's format notes on Alembic 1.8.12 (AbcCoreOgawa
 * archive layout over the Ogawa container of ogawa.c); no Alembic code.
 *
 * Archive content, for mesh i named NAME (sanitized, unique):
 *   /NAME            Xform   .xform { .inherits, .ops, .vals,
 *                                      [isNotConstantIdentity], [.animChans] }
 *   /NAME/NAMEShape  PolyMesh .geom { .selfBnds, P, .faceIndices, .faceCounts,
 *                                      [uv], [N] }
 * - The Xform carries the mesh's object matrix (object -> rig space) as one
 *   matrix op (type 3, hint 0): .vals = the 16 channels of the matrix in
 *   Alembic's row-vector layout (Imath M44d x[i][j] = our M[j][i]),
 *   animated when the per-frame object matrices change.
 * - Topology is constant (one stored sample, flag "all samples identical"):
 *   .faceCounts all 3 and .faceIndices with each triangle (a, b, c) written
 *   (c, b, a): Alembic's front faces wind clockwise (RenderMan's rule; what
 *   Blender's and Maya's exporters write), ours counter-clockwise.
 * - P: float32[3] per vertex, mesh object space, one sample per frame;
 *   .selfBnds: float64[6] box (min xyz, max xyz) of P per frame.
 * - N (with_normals): float32[3] per vertex, geoScope=vtx (one normal per
 *   vertex, not per face corner), animated.
 * - uv (when given): float32[2] per face corner (geoScope=fvr, corners in
 *   .faceIndices order), constant; not indexed.
 * - Time sampling 1 is uniform: 1/fps seconds per sample, first sample at
 *   start_time; index 0 is Alembic's default identity sampling.
 * - Archive metadata: _ai_Application, _ai_DCC_FPS, _ai_DateWritten.
 * - Sample keys: MurmurHash3_x64_128 (seed 0) of the sample bytes, from
 *   Debian's libmurmurhash; h1 then h2, little-endian.
 * - Object and property hashes (the 32 bytes after each object-header block):
 *   SpookyHash V2 (spooky.c) composed as AbcCoreOgawa composes them (see
 *   "Object and property hashes" below; issue #19). Readers never verify
 *   them; abcdiff compares them to find what changed.
 *
 * Sample storage follows AbcCoreOgawa's rules: a sample whose key equals the
 * previous stored one is not written again; the property header records
 * the first and last changed sample (flag 0x800 when nothing ever changed),
 * and repeats between changes point at the previous data block.
 *
 * Streaming: samples are written as frames arrive; what the writer keeps
 * grows only by the child entries of the property groups (at most 16 bytes
 * per animated property per frame). Groups, headers and the archive's
 * metadata are written by finish, children before parents, the root last. */
#include "model/internal.h"
#include "io/ogawa.h"
#include "io/spooky.h"

#include <errno.h>
#include <math.h>
#include <murmurhash.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(float) == 4 && sizeof(double) == 8,
               "Alembic stores IEEE 754 binary32 and binary64");

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Sample arrays are hashed and written straight from the caller's memory. */
#define ABC_HOST_LITTLE_ENDIAN 1
#else
#define ABC_HOST_LITTLE_ENDIAN 0
#endif

/* Root group children (AbcCoreOgawa). */
#define ABC_FILE_VERSION 0        /* ALEMBIC_OGAWA_FILE_VERSION */
/* "Library version" of the root: the Alembic release whose layout this
 * follows (1.8.12 as major*10000 + minor*100 + patch); readers require
 * >= 9999. */
#define ABC_LIBRARY_VERSION 10812
#define ABC_KEY_SIZE 16
#define ABC_HASH_BYTES 32         /* properties hash + children hash */
#define ABC_MURMUR_SEED 0u

/* Property header info bits. */
#define ABC_INFO_TS_INDEX 0x100u
#define ABC_INFO_FIRST_LAST 0x200u
#define ABC_INFO_HOMOGENEOUS 0x400u
#define ABC_INFO_CONSTANT 0x800u
#define ABC_INFO_POD_SHIFT 4
#define ABC_INFO_HINT_SHIFT 2
#define ABC_INFO_EXTENT_SHIFT 12
#define ABC_INFO_METADATA_SHIFT 20
/* Size-hint thresholds: 1 byte up to 255, 2 bytes below 65536, else 4. */
#define ABC_HINT_1_MAX 255u
#define ABC_HINT_2_LIMIT 65536u

/* Xform matrix operation: (type kMatrixOperation = 3) << 4 | hint 0. */
#define ABC_XFORM_OP_MATRIX 0x30u
#define ABC_MATRIX_CHANNELS 16

/* Time sampling indices. */
#define ABC_TS_IDENTITY 0u
#define ABC_TS_FRAMES 1u

/* Room for "mesh_<u32>", a "_<u32>_<u32>" suffix and the NUL. */
#define ABC_NAME_EXTRA 64
#define ABC_SHAPE_SUFFIX "Shape"
/* Room for a ctime-style date ("Www Mmm dd hh:mm:ss yyyy"). */
#define ABC_DATE_SIZE 64
/* Room for the fps text (%.15g). */
#define ABC_FPS_SIZE 48
/* Significant digits of _ai_DCC_FPS: exact for every "nice" rate
 * (23.976, 29.97, 24) without binary noise. */
#define ABC_FPS_DIGITS 15

typedef enum abc_pod {
    POD_BOOL = 0,
    POD_UINT8 = 1,
    POD_UINT32 = 5,
    POD_INT32 = 6,
    POD_FLOAT32 = 10,
    POD_FLOAT64 = 11,
} abc_pod;

typedef enum abc_kind { KIND_COMPOUND = 0, KIND_SCALAR = 1, KIND_ARRAY = 2 } abc_kind;

/* The indexed metadata table (root child 5): entry k is index k + 1. */
typedef enum abc_md {
    MD_NONE = 0,
    MD_XFORM_OBJECT,
    MD_XFORM_SCHEMA,
    MD_MESH_OBJECT,
    MD_MESH_SCHEMA,
    MD_BOX,
    MD_P,
    MD_UV,
    MD_N,
    MD_COUNT
} abc_md;

static const char *const ABC_METADATA[MD_COUNT] = {
    [MD_NONE] = "",
    [MD_XFORM_OBJECT] = "schema=AbcGeom_Xform_v3;schemaObjTitle=AbcGeom_Xform_v3:.xform",
    [MD_XFORM_SCHEMA] = "schema=AbcGeom_Xform_v3",
    [MD_MESH_OBJECT] = "schema=AbcGeom_PolyMesh_v1;schemaBaseType=AbcGeom_GeomBase_v1;"
                       "schemaObjTitle=AbcGeom_PolyMesh_v1:.geom",
    [MD_MESH_SCHEMA] = "schema=AbcGeom_PolyMesh_v1;schemaBaseType=AbcGeom_GeomBase_v1",
    [MD_BOX] = "interpretation=box",
    [MD_P] = "geoScope=vtx;interpretation=point",
    [MD_UV] = "arrayExtent=1;geoScope=fvr;interpretation=vector;isGeomParam=true;"
              "podExtent=2;podName=float32_t",
    [MD_N] = "arrayExtent=1;geoScope=vtx;interpretation=normal;isGeomParam=true;"
             "podExtent=3;podName=float32_t",
};

/* A scalar or array property and its stored samples. */
typedef struct abc_prop {
    const char *name;
    abc_kind kind;
    abc_pod pod;
    uint8_t extent;
    abc_md metadata;
    uint32_t ts_index;
    bool present;            /* written in the .geom / .xform compound */
    uint32_t sample_count;   /* samples set, repeats included */
    uint32_t first_changed, last_changed;
    unsigned char prev_key[ABC_KEY_SIZE];
    uint64_t prev_entry;     /* data entry of the last stored sample */
    uint64_t prev_elements;
    bool scalar_like;        /* arrays: every sample had exactly 1 element */
    bool homogeneous;        /* every sample had the same element count */
    uint64_t *entries;       /* stored samples' data entries */
    uint32_t entry_count, entry_cap;
    /* Alembic's property hash (abc_hashes below): the last sample's key
     * folded with its dimensions, and the running fold over every sample */
    uint64_t digest[2];
    uint64_t hash[2];
} abc_prop;

enum { MP_BOUNDS, MP_P, MP_FACE_INDICES, MP_FACE_COUNTS, MP_UV, MP_N, MP_COUNT };
enum { XP_INHERITS, XP_OPS, XP_VALS, XP_NOT_IDENTITY, XP_ANIM_CHANS, XP_COUNT };

typedef struct abc_mesh {
    char *xform_name;
    char *mesh_name;
    uint32_t vertex_count, first_vertex;
    float rest_matrix[16];            /* open's object matrix, ours */
    double first_vals[ABC_MATRIX_CHANNELS];
    uint32_t animated_channels;       /* bit c: channel c changed */
    bool not_identity;                /* some sample is not the identity */
    abc_prop props[MP_COUNT];
    abc_prop xprops[XP_COUNT];
} abc_mesh;

struct ssk_abc_writer {
    ssk_ogawa file;
    uint32_t mesh_count, vertex_count;
    abc_mesh *meshes;
    double fps, start_time;
    bool with_normals;
    char *archive_metadata;   /* serialized key=value;... */
    uint32_t frame_count;
    bool failed;              /* a write failed: only abort/finish remain */
    unsigned char *scratch;   /* big-endian hosts: one encoded sample */
};

/* ------------------------------------------------------------------------ */
/* Little-endian encoding and a growable byte buffer.                        */
/* ------------------------------------------------------------------------ */

static void put_u32_le(unsigned char *dst, uint32_t v)
{
    for (int i = 0; i < 4; ++i) dst[i] = (unsigned char)((v >> (8 * i)) & 0xffu);
}

static void put_u64_le(unsigned char *dst, uint64_t v)
{
    for (int i = 0; i < 8; ++i) dst[i] = (unsigned char)((v >> (8 * i)) & 0xffu);
}

static void put_f32_le(unsigned char *dst, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put_u32_le(dst, bits);
}

static void put_f64_le(unsigned char *dst, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    put_u64_le(dst, bits);
}

typedef struct abc_bytes {
    unsigned char *data;
    size_t size, cap;
    bool oom;
} abc_bytes;

static unsigned char *bytes_grow(abc_bytes *b, size_t n)
{
    if (b->oom) return NULL;
    if (b->size + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->size + n) cap *= 2;
        unsigned char *p = realloc(b->data, cap);
        if (!p) {
            b->oom = true;
            return NULL;
        }
        b->data = p;
        b->cap = cap;
    }
    unsigned char *at = b->data + b->size;
    b->size += n;
    return at;
}

static void bytes_put(abc_bytes *b, const void *src, size_t n)
{
    unsigned char *p = bytes_grow(b, n);
    if (p && n) memcpy(p, src, n);
}

static void bytes_u8(abc_bytes *b, uint8_t v) { bytes_put(b, &v, 1); }

static void bytes_u32(abc_bytes *b, uint32_t v)
{
    unsigned char *p = bytes_grow(b, 4);
    if (p) put_u32_le(p, v);
}

static void bytes_f64(abc_bytes *b, double v)
{
    unsigned char *p = bytes_grow(b, 8);
    if (p) put_f64_le(p, v);
}

/* An unsigned value in the header's size-hint width (0: 1, 1: 2, 2: 4 bytes). */
static void bytes_hinted(abc_bytes *b, uint32_t v, uint32_t hint)
{
    if (hint == 0) {
        bytes_u8(b, (uint8_t)v);
    } else if (hint == 1) {
        unsigned char p[2] = {(unsigned char)(v & 0xffu), (unsigned char)((v >> 8) & 0xffu)};
        bytes_put(b, p, 2);
    } else {
        bytes_u32(b, v);
    }
}

static uint32_t size_hint(uint32_t largest)
{
    return largest <= ABC_HINT_1_MAX ? 0u : largest < ABC_HINT_2_LIMIT ? 1u : 2u;
}

/* ------------------------------------------------------------------------ */
/* Properties and samples.                                                   */
/* ------------------------------------------------------------------------ */

static void prop_init(abc_prop *p, const char *name, abc_kind kind, abc_pod pod,
                      uint8_t extent, abc_md metadata, uint32_t ts_index)
{
    memset(p, 0, sizeof *p);
    p->name = name;
    p->kind = kind;
    p->pod = pod;
    p->extent = extent;
    p->metadata = metadata;
    p->ts_index = ts_index;
    p->present = true;
    p->scalar_like = true;
    p->homogeneous = true;
}

static ssk_status push_entry(abc_prop *p, uint64_t entry, ssk_error *err)
{
    if (p->entry_count == p->entry_cap) {
        uint32_t cap = p->entry_cap ? 2 * p->entry_cap : 8;
        uint64_t *e = realloc(p->entries, (size_t)cap * sizeof *e);
        if (!e)
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                 "abc writer: cannot grow the sample table of '%s'", p->name);
        p->entries = e;
        p->entry_cap = cap;
    }
    p->entries[p->entry_count++] = entry;
    return SSK_OK;
}

/* MurmurHash3_x64_128, seed 0, of `size` bytes: h1 then h2, little-endian. */
static void sample_key(unsigned char key[ABC_KEY_SIZE], const void *bytes, size_t size)
{
    uint64_t h[2] = {0, 0};
    if (size) lmmh_x64_128(bytes, (unsigned int)size, ABC_MURMUR_SEED, h);
    put_u64_le(key, h[0]);
    put_u64_le(key + 8, h[1]);
}

/* ------------------------------------------------------------------------ */
/* Object and property hashes (issue #19): what AbcCoreOgawa's writer       */
/* computes (WriteUtil.cpp HashPropertyHeader and HashDimensions, ApwImpl,   */
/* SpwImpl, CpwImpl, OwData::writeHeaders and OwImpl; ../shared/reference/  */
/* alembic-ogawa-layout.md section 4), with SpookyHash V2 (spooky.c):        */
/* - a sample's digest is its key, for arrays hashed with its dimensions;   */
/* - a property folds its samples' digests (the first one, then ShortEnd),  */
/*   and its hash is Spooky(name, metadata, pod, extent, [0 for a scalar],  */
/*   time per cycle, stored times, fold);                                   */
/* - a compound: Spooky(its children's hashes, name, metadata);             */
/* - an object stores Spooky(its top compound's children's hashes) and      */
/*   Spooky(its child objects' hashes) (zeros without children), and passes */
/*   up the children state continued with the properties hash, its metadata */
/*   and its name. Readers never check them; abcdiff compares them.         */
/* ------------------------------------------------------------------------ */

static uint64_t get_u64_le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

static void hash_words(ssk_spooky *h, const uint64_t words[2])
{
    unsigned char b[16];
    put_u64_le(b, words[0]);
    put_u64_le(b + 8, words[1]);
    ssk_spooky_update(h, b, sizeof b);
}

/* One more sample of `p` with the digest in p->digest. */
static void prop_fold(abc_prop *p)
{
    if (p->sample_count == 0) {
        p->hash[0] = p->digest[0];
        p->hash[1] = p->digest[1];
        return;
    }
    uint64_t d0 = p->digest[0], d1 = p->digest[1];
    ssk_spooky_short_end(&p->hash[0], &p->hash[1], &d0, &d1);
}

/* p->digest for a sample of key `key` and `elements` elements. */
static void prop_digest(abc_prop *p, const unsigned char key[ABC_KEY_SIZE], uint64_t elements)
{
    p->digest[0] = get_u64_le(key);
    p->digest[1] = get_u64_le(key + 8);
    if (p->kind != KIND_ARRAY) return;
    unsigned char dims[8];
    put_u64_le(dims, elements); /* rank 1 */
    ssk_spooky h;
    ssk_spooky_init(&h, 0, 0);
    ssk_spooky_update(&h, dims, sizeof dims);
    hash_words(&h, p->digest);
    ssk_spooky_final(&h, &p->digest[0], &p->digest[1]);
}

/* The property's hash; `fps` and `start_time` give time sampling 1. */
static void prop_hash(uint64_t out[2], const abc_prop *p, const char *metadata, double fps,
                      double start_time)
{
    ssk_spooky h;
    ssk_spooky_init(&h, 0, 0);
    ssk_spooky_update(&h, p->name, strlen(p->name));
    ssk_spooky_update(&h, metadata, strlen(metadata));
    const uint8_t pod_extent[3] = {(uint8_t)p->pod, p->extent, 0};
    ssk_spooky_update(&h, pod_extent, p->kind == KIND_SCALAR ? 3 : 2);
    unsigned char times[8 + 4 + 8];
    put_f64_le(times, p->ts_index == ABC_TS_IDENTITY ? 1.0 : 1.0 / fps);
    put_u32_le(times + 8, 1); /* one stored time */
    put_f64_le(times + 12, p->ts_index == ABC_TS_IDENTITY ? 0.0 : start_time);
    ssk_spooky_update(&h, times, sizeof times);
    if (p->sample_count) hash_words(&h, p->hash);
    ssk_spooky_final(&h, &out[0], &out[1]);
}

/* A compound's hash over its present properties. */
static void compound_hash(uint64_t out[2], const abc_prop *props, size_t count,
                          const char *const *metadata_of, const char *name, const char *metadata,
                          double fps, double start_time)
{
    ssk_spooky h;
    ssk_spooky_init(&h, 0, 0);
    for (size_t i = 0; i < count; ++i) {
        if (!props[i].present) continue;
        uint64_t child[2];
        prop_hash(child, &props[i], metadata_of[props[i].metadata], fps, start_time);
        hash_words(&h, child);
    }
    ssk_spooky_update(&h, name, strlen(name));
    ssk_spooky_update(&h, metadata, strlen(metadata));
    ssk_spooky_final(&h, &out[0], &out[1]);
}

/* An object's 32 stored hash bytes (properties hash over the hashes of
 * its top compound's `schemas` children, children hash over `children`
 * object hashes) and, when `out` is given, its own hash for its parent. */
static void object_hashes(unsigned char stored[ABC_HASH_BYTES], uint64_t out[2],
                          const uint64_t (*schemas)[2], size_t schema_count,
                          const uint64_t (*children)[2], size_t child_count,
                          const char *metadata, const char *name)
{
    ssk_spooky data, h;
    ssk_spooky_init(&data, 0, 0);
    for (size_t i = 0; i < schema_count; ++i) hash_words(&data, schemas[i]);
    uint64_t props[2], kids[2] = {0, 0};
    ssk_spooky_final(&data, &props[0], &props[1]);
    ssk_spooky_init(&h, 0, 0);
    if (child_count) {
        for (size_t i = 0; i < child_count; ++i) hash_words(&h, children[i]);
        ssk_spooky_final(&h, &kids[0], &kids[1]);
    }
    put_u64_le(stored, props[0]);
    put_u64_le(stored + 8, props[1]);
    put_u64_le(stored + 16, kids[0]);
    put_u64_le(stored + 24, kids[1]);
    if (!out) return;
    hash_words(&h, props); /* Final leaves the state: it goes on */
    ssk_spooky_update(&h, metadata, strlen(metadata));
    ssk_spooky_update(&h, name, strlen(name));
    ssk_spooky_final(&h, &out[0], &out[1]);
}

/* Sets the next sample of `p`: `size` little-endian bytes holding `elements`
 * elements (extent-sized tuples; 1 for a scalar). Stores it only when its key
 * differs from the previous stored sample's (AbcCoreOgawa's rule); repeats
 * after the first change are back-filled as entries pointing at the previous
 * block when the next change arrives. */
static ssk_status prop_set(ssk_ogawa *file, abc_prop *p, const void *bytes, size_t size,
                           uint64_t elements, ssk_error *err)
{
    unsigned char key[ABC_KEY_SIZE];
    sample_key(key, bytes, size);
    bool changed = p->sample_count == 0 || memcmp(key, p->prev_key, sizeof key) != 0 ||
                   elements != p->prev_elements;
    if (changed) {
        ssk_status s;
        if (p->first_changed != 0)
            for (uint32_t i = p->last_changed + 1; i < p->sample_count; ++i)
                if ((s = push_entry(p, p->prev_entry, err)) != SSK_OK) return s;
        uint64_t entry = SSK_OGAWA_EMPTY_DATA; /* an empty array has no key */
        if (size) {
            ssk_ogawa_piece pieces[2] = {{key, sizeof key}, {bytes, size}};
            s = ssk_ogawa_write_data(file, pieces, 2, &entry, err);
            if (s != SSK_OK) return s;
        }
        if ((s = push_entry(p, entry, err)) != SSK_OK) return s;
        if (elements != 1) p->scalar_like = false;
        if (p->sample_count > 0 && elements != p->prev_elements) p->homogeneous = false;
        if (p->sample_count > 0 && p->first_changed == 0) p->first_changed = p->sample_count;
        p->last_changed = p->sample_count;
        memcpy(p->prev_key, key, sizeof key);
        p->prev_entry = entry;
        p->prev_elements = elements;
        prop_digest(p, key, elements);
    }
    prop_fold(p);
    p->sample_count++;
    return SSK_OK;
}

/* A constant property set once: it repeats its sample up to `count`
 * samples (AbcCoreOgawa's setFromPrevious), so every property of the
 * schema reports the same number of samples. */
static void prop_repeat_to(abc_prop *p, uint32_t count)
{
    if (p->sample_count > 0 && p->last_changed == 0)
        for (; p->sample_count < count; ++p->sample_count) prop_fold(p);
}

static bool prop_is_constant(const abc_prop *p)
{
    return p->first_changed == 0 && p->last_changed == 0;
}

/* The property's group: per stored sample its data entry, and for arrays
 * the dimensions entry (EMPTY_DATA: rank-1 counts come from the data size). */
static ssk_status prop_write_group(ssk_ogawa *file, const abc_prop *p, uint64_t *group,
                                   ssk_error *err)
{
    size_t per = p->kind == KIND_ARRAY ? 2 : 1;
    size_t n = (size_t)p->entry_count * per;
    uint64_t *children = malloc((n + 1) * sizeof *children);
    if (!children)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "abc writer: cannot allocate the group of '%s'", p->name);
    for (size_t i = 0; i < p->entry_count; ++i) {
        children[per * i] = p->entries[i];
        if (per == 2) children[per * i + 1] = SSK_OGAWA_EMPTY_DATA;
    }
    ssk_status s = ssk_ogawa_write_group(file, children, n, group, err);
    free(children);
    return s;
}

/* Appends a scalar/array property header (AbcCoreOgawa WritePropertyInfo
 * layout, metadata by index). */
static void prop_header(abc_bytes *b, const abc_prop *p)
{
    uint32_t name_len = (uint32_t)strlen(p->name);
    uint32_t first = p->first_changed, last = p->last_changed, n = p->sample_count;
    bool constant = prop_is_constant(p);
    bool first_last = !constant && (first != 1 || last != n - 1);
    uint32_t largest = name_len;
    if (n > largest) largest = n;
    if (p->ts_index > largest) largest = p->ts_index;
    uint32_t hint = size_hint(largest);

    uint32_t info = (uint32_t)p->kind;
    if (p->kind == KIND_ARRAY && p->scalar_like) info |= 1u; /* 3: scalar-like array */
    info |= hint << ABC_INFO_HINT_SHIFT;
    info |= (uint32_t)p->pod << ABC_INFO_POD_SHIFT;
    if (p->ts_index != 0) info |= ABC_INFO_TS_INDEX;
    if (first_last) info |= ABC_INFO_FIRST_LAST;
    if (p->homogeneous) info |= ABC_INFO_HOMOGENEOUS;
    if (constant) info |= ABC_INFO_CONSTANT;
    info |= (uint32_t)p->extent << ABC_INFO_EXTENT_SHIFT;
    info |= (uint32_t)p->metadata << ABC_INFO_METADATA_SHIFT;
    bytes_u32(b, info);
    bytes_hinted(b, n, hint);
    if (first_last) {
        bytes_hinted(b, first, hint);
        bytes_hinted(b, last, hint);
    }
    if (p->ts_index != 0) bytes_hinted(b, p->ts_index, hint);
    bytes_hinted(b, name_len, hint);
    bytes_put(b, p->name, name_len);
}

/* Appends a compound property header (info, name; metadata by index). */
static void compound_header(abc_bytes *b, const char *name, abc_md metadata)
{
    uint32_t name_len = (uint32_t)strlen(name);
    uint32_t hint = size_hint(name_len);
    uint32_t info = (uint32_t)KIND_COMPOUND | hint << ABC_INFO_HINT_SHIFT |
                    (uint32_t)metadata << ABC_INFO_METADATA_SHIFT;
    bytes_u32(b, info);
    bytes_hinted(b, name_len, hint);
    bytes_put(b, name, name_len);
}

/* Appends a child object header: uint32 name length, name, metadata index. */
static void object_header(abc_bytes *b, const char *name, abc_md metadata)
{
    uint32_t name_len = (uint32_t)strlen(name);
    bytes_u32(b, name_len);
    bytes_put(b, name, name_len);
    bytes_u8(b, (uint8_t)metadata);
}

static ssk_status write_bytes_block(ssk_ogawa *file, const abc_bytes *b, uint64_t *entry,
                                    ssk_error *err)
{
    if (b->oom)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "abc writer: cannot allocate a header block");
    ssk_ogawa_piece piece = {b->data, b->size};
    return ssk_ogawa_write_data(file, &piece, 1, entry, err);
}

/* A compound property group: its sub-properties' groups, then their headers. */
static ssk_status write_compound(ssk_ogawa *file, abc_prop *props, size_t count,
                                 uint64_t *group, ssk_error *err)
{
    uint64_t children[MP_COUNT + XP_COUNT + 1];
    abc_bytes headers = {0};
    size_t n = 0;
    ssk_status s = SSK_OK;
    for (size_t i = 0; i < count && s == SSK_OK; ++i) {
        if (!props[i].present) continue;
        s = prop_write_group(file, &props[i], &children[n++], err);
        prop_header(&headers, &props[i]);
    }
    if (s == SSK_OK) s = write_bytes_block(file, &headers, &children[n++], err);
    if (s == SSK_OK) s = ssk_ogawa_write_group(file, children, n, group, err);
    free(headers.data);
    return s;
}

/* An object's top compound holding one schema compound (`.geom`/`.xform`). */
static ssk_status write_top_compound(ssk_ogawa *file, uint64_t schema_group,
                                     const char *schema_name, abc_md schema_md,
                                     uint64_t *group, ssk_error *err)
{
    abc_bytes headers = {0};
    compound_header(&headers, schema_name, schema_md);
    uint64_t children[2] = {schema_group, 0};
    ssk_status s = write_bytes_block(file, &headers, &children[1], err);
    free(headers.data);
    if (s == SSK_OK) s = ssk_ogawa_write_group(file, children, 2, group, err);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Names and metadata.                                                       */
/* ------------------------------------------------------------------------ */

static bool name_taken(const char *name, const abc_mesh *earlier, uint32_t earlier_count)
{
    for (uint32_t k = 0; k < earlier_count; ++k)
        if (strcmp(earlier[k].xform_name, name) == 0) return true;
    return false;
}

/* Object names: the source name with '/' replaced by '_' ("mesh_<i>" when
 * empty), made unique among the top object's children by a "_<i>" suffix,
 * then "_<i>_<k>" for the first free k. */
static char *object_name(const char *source, uint32_t index, const abc_mesh *earlier,
                         uint32_t earlier_count)
{
    size_t n = source ? strlen(source) : 0;
    size_t size = n + ABC_NAME_EXTRA;
    char *name = malloc(size);
    if (!name) return NULL;
    if (n == 0) {
        snprintf(name, size, "mesh_%u", (unsigned)index);
        n = strlen(name);
    } else {
        for (size_t i = 0; i < n; ++i) name[i] = source[i] == '/' ? '_' : source[i];
        name[n] = '\0';
    }
    if (!name_taken(name, earlier, earlier_count)) return name;
    snprintf(name + n, size - n, "_%u", (unsigned)index);
    /* At most earlier_count names can be taken: k terminates. */
    for (uint32_t k = 1; name_taken(name, earlier, earlier_count); ++k)
        snprintf(name + n, size - n, "_%u_%u", (unsigned)index, (unsigned)k);
    return name;
}

static bool metadata_value_ok(const char *v)
{
    return strchr(v, ';') == NULL && strchr(v, '=') == NULL;
}

/* ctime-style date ("Www Mmm dd hh:mm:ss yyyy", day padded with a space),
 * as Alembic's archive info writes it; English names whatever the host's
 * locale (Blender sets LC_TIME). The local time now, or, when the
 * environment sets SOURCE_DATE_EPOCH (reproducible builds: a decimal count
 * of seconds since 1970-01-01 00:00:00 UTC), that time in UTC, so two bakes
 * of the same job give the same bytes (issue #23). The date is the only
 * time the archive records. Errors: SSK_ERROR_INVALID_ARGUMENT (a
 * SOURCE_DATE_EPOCH that is not such a number, as the specification asks). */
static ssk_status date_written(char out[ABC_DATE_SIZE], ssk_error *err)
{
    static const char *const days[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const char *epoch = getenv("SOURCE_DATE_EPOCH");
    time_t now = time(NULL);
    struct tm tm;
    bool ok;
    if (epoch) {
        char *end = NULL;
        errno = 0;
        const long long v = strtoll(epoch, &end, 10);
        if (epoch[0] < '0' || epoch[0] > '9' || *end || errno == ERANGE ||
            (long long)(time_t)v != v)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "abc writer: SOURCE_DATE_EPOCH='%s' is not a number of seconds "
                                 "since 1970-01-01 UTC",
                                 epoch);
        now = (time_t)v;
        ok = gmtime_r(&now, &tm) != NULL;
    } else {
        ok = now != (time_t)-1 && localtime_r(&now, &tm);
    }
    if (!ok || tm.tm_wday < 0 || tm.tm_wday > 6 || tm.tm_mon < 0 || tm.tm_mon > 11) {
        snprintf(out, ABC_DATE_SIZE, "unknown");
        return SSK_OK;
    }
    snprintf(out, ABC_DATE_SIZE, "%s %s %2d %02d:%02d:%02d %d", days[tm.tm_wday],
             months[tm.tm_mon], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             tm.tm_year + 1900);
    return SSK_OK;
}

/* ------------------------------------------------------------------------ */
/* Open.                                                                     */
/* ------------------------------------------------------------------------ */

static void writer_free(ssk_abc_writer *w)
{
    if (!w) return;
    for (uint32_t m = 0; w->meshes && m < w->mesh_count; ++m) {
        abc_mesh *mesh = &w->meshes[m];
        free(mesh->xform_name);
        free(mesh->mesh_name);
        for (int i = 0; i < MP_COUNT; ++i) free(mesh->props[i].entries);
        for (int i = 0; i < XP_COUNT; ++i) free(mesh->xprops[i].entries);
    }
    free(w->meshes);
    free(w->archive_metadata);
    free(w->scratch);
    free(w);
}

static ssk_status validate_desc(const ssk_abc_desc *desc, uint64_t *out_vertices,
                                uint32_t *out_max_vertices, ssk_error *err)
{
    if (desc->mesh_count == 0 || !desc->meshes)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "abc writer: no mesh to write");
    if (!isfinite(desc->fps) || !(desc->fps > 0.0))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "abc writer: fps must be finite and > 0, got %g", desc->fps);
    if (!isfinite(desc->start_time))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "abc writer: start time must be finite, got %g", desc->start_time);
    if (desc->application && !metadata_value_ok(desc->application))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "abc writer: application '%s' contains ';' or '='",
                             desc->application);
    if (desc->date_written && !metadata_value_ok(desc->date_written))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "abc writer: date '%s' contains ';' or '='", desc->date_written);
    uint64_t total = 0;
    uint32_t largest = 0;
    for (uint32_t m = 0; m < desc->mesh_count; ++m) {
        const ssk_abc_mesh_desc *d = &desc->meshes[m];
        const char *name = d->name ? d->name : "";
        uint32_t nv = d->vertex_count, nf = d->triangle_count;
        if (nv == 0)
            return ssk_error_set(err, SSK_ERROR_EMPTY_MESH,
                                 "abc writer: mesh %u ('%s') has no vertex", (unsigned)m, name);
        /* Samples are hashed with a 32-bit length: P, N are 12 #V bytes,
         * .faceIndices 12 #F, uv 24 #F. */
        if ((uint64_t)nv * 12 > UINT32_MAX || (uint64_t)nf * 24 > UINT32_MAX)
            return ssk_error_set(err, SSK_ERROR_UNSUPPORTED,
                                 "abc writer: mesh %u ('%s'): %u vertices / %u triangles "
                                 "exceed one 4 GiB sample",
                                 (unsigned)m, name, (unsigned)nv, (unsigned)nf);
        if (nf > 0 && !d->triangles)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "abc writer: mesh %u ('%s'): NULL triangles for %u triangles",
                                 (unsigned)m, name, (unsigned)nf);
        for (size_t i = 0; i < (size_t)nf * 3; ++i)
            if (d->triangles[i] < 0 || (uint32_t)d->triangles[i] >= nv)
                return ssk_error_set(err, SSK_ERROR_TRIANGLE_INDEX,
                                     "abc writer: mesh %u ('%s'): triangle %zu has vertex "
                                     "index %d outside [0, %u)",
                                     (unsigned)m, name, i / 3, (int)d->triangles[i],
                                     (unsigned)nv);
        if (d->uvs)
            for (size_t i = 0; i < (size_t)nv * 2; ++i)
                if (!isfinite(d->uvs[i]))
                    return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                         "abc writer: mesh %u ('%s'): uv of vertex %zu is %g",
                                         (unsigned)m, name, i / 2, (double)d->uvs[i]);
        if (d->object_matrix && !ssk_floats_finite(d->object_matrix, 16))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "abc writer: mesh %u ('%s'): non-finite object matrix",
                                 (unsigned)m, name);
        total += nv;
        if (nv > largest) largest = nv;
    }
    if (total > UINT32_MAX)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "abc writer: %llu vertices in all exceed 2^32 - 1",
                             (unsigned long long)total);
    *out_vertices = total;
    *out_max_vertices = largest;
    return SSK_OK;
}

static void mesh_props_init(abc_mesh *mesh, bool with_uv, bool with_normals)
{
    abc_prop *p = mesh->props;
    prop_init(&p[MP_BOUNDS], ".selfBnds", KIND_SCALAR, POD_FLOAT64, 6, MD_BOX, ABC_TS_FRAMES);
    prop_init(&p[MP_P], "P", KIND_ARRAY, POD_FLOAT32, 3, MD_P, ABC_TS_FRAMES);
    prop_init(&p[MP_FACE_INDICES], ".faceIndices", KIND_ARRAY, POD_INT32, 1, MD_NONE,
              ABC_TS_FRAMES);
    prop_init(&p[MP_FACE_COUNTS], ".faceCounts", KIND_ARRAY, POD_INT32, 1, MD_NONE,
              ABC_TS_FRAMES);
    prop_init(&p[MP_UV], "uv", KIND_ARRAY, POD_FLOAT32, 2, MD_UV, ABC_TS_FRAMES);
    prop_init(&p[MP_N], "N", KIND_ARRAY, POD_FLOAT32, 3, MD_N, ABC_TS_FRAMES);
    p[MP_UV].present = with_uv;
    p[MP_N].present = with_normals;
    abc_prop *x = mesh->xprops;
    prop_init(&x[XP_INHERITS], ".inherits", KIND_SCALAR, POD_BOOL, 1, MD_NONE, ABC_TS_FRAMES);
    prop_init(&x[XP_OPS], ".ops", KIND_SCALAR, POD_UINT8, 1, MD_NONE, ABC_TS_IDENTITY);
    prop_init(&x[XP_VALS], ".vals", KIND_SCALAR, POD_FLOAT64, ABC_MATRIX_CHANNELS, MD_NONE,
              ABC_TS_FRAMES);
    prop_init(&x[XP_NOT_IDENTITY], "isNotConstantIdentity", KIND_SCALAR, POD_BOOL, 1, MD_NONE,
              ABC_TS_IDENTITY);
    prop_init(&x[XP_ANIM_CHANS], ".animChans", KIND_ARRAY, POD_UINT32, 1, MD_NONE,
              ABC_TS_IDENTITY);
    /* Decided by finish, from the samples. */
    x[XP_NOT_IDENTITY].present = false;
    x[XP_ANIM_CHANS].present = false;
}

/* Writes the constant samples of mesh m: topology, uv, .inherits, .ops. */
static ssk_status write_constant_samples(ssk_abc_writer *w, uint32_t m,
                                         const ssk_abc_mesh_desc *d, ssk_error *err)
{
    abc_mesh *mesh = &w->meshes[m];
    size_t corners = (size_t)d->triangle_count * 3;
    /* +1: never malloc(0). */
    unsigned char *indices = malloc(corners * 4 + 1);
    unsigned char *counts = malloc((size_t)d->triangle_count * 4 + 1);
    unsigned char *uvs = d->uvs ? malloc(corners * 8 + 1) : NULL;
    ssk_status s = SSK_OK;
    if (!indices || !counts || (d->uvs && !uvs)) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                          "abc writer: cannot allocate the topology of mesh '%s'",
                          mesh->xform_name);
        goto done;
    }
    for (size_t f = 0; f < d->triangle_count; ++f) {
        put_u32_le(counts + 4 * f, 3u);
        for (size_t k = 0; k < 3; ++k) {
            /* (a, b, c) -> (c, b, a): clockwise front faces. */
            int32_t v = d->triangles[3 * f + (2 - k)];
            put_u32_le(indices + 4 * (3 * f + k), (uint32_t)v);
            if (uvs) {
                put_f32_le(uvs + 8 * (3 * f + k), d->uvs[2 * (size_t)v]);
                put_f32_le(uvs + 8 * (3 * f + k) + 4, d->uvs[2 * (size_t)v + 1]);
            }
        }
    }
    s = prop_set(&w->file, &mesh->props[MP_FACE_INDICES], indices, corners * 4, corners, err);
    if (s == SSK_OK)
        s = prop_set(&w->file, &mesh->props[MP_FACE_COUNTS], counts,
                     (size_t)d->triangle_count * 4, d->triangle_count, err);
    if (s == SSK_OK && uvs)
        s = prop_set(&w->file, &mesh->props[MP_UV], uvs, corners * 8, corners, err);
    uint8_t inherits = 1, op = ABC_XFORM_OP_MATRIX;
    if (s == SSK_OK) s = prop_set(&w->file, &mesh->xprops[XP_INHERITS], &inherits, 1, 1, err);
    if (s == SSK_OK) s = prop_set(&w->file, &mesh->xprops[XP_OPS], &op, 1, 1, err);
done:
    free(indices);
    free(counts);
    free(uvs);
    return s;
}

ssk_status ssk_abc_writer_open(ssk_abc_writer **out, const char *path,
                               const ssk_abc_desc *desc, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !path || !desc)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "abc writer: NULL %s",
                             !out ? "output" : !path ? "path" : "description");
    if (!path[0])
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "abc writer: empty output path");
    uint64_t total = 0;
    uint32_t largest = 0;
    ssk_status s = validate_desc(desc, &total, &largest, err);
    if (s != SSK_OK) return s;

    ssk_abc_writer *w = calloc(1, sizeof *w);
    if (!w)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "abc writer: cannot allocate");
    w->mesh_count = desc->mesh_count;
    w->vertex_count = (uint32_t)total;
    w->fps = desc->fps;
    w->start_time = desc->start_time;
    w->with_normals = desc->with_normals != 0;
    w->meshes = calloc(desc->mesh_count, sizeof *w->meshes);
    if (!ABC_HOST_LITTLE_ENDIAN) w->scratch = malloc((size_t)largest * 12);
    if (!w->meshes || (!ABC_HOST_LITTLE_ENDIAN && !w->scratch)) {
        free(w->meshes);
        w->meshes = NULL;
        writer_free(w);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "abc writer: cannot allocate");
    }
    uint32_t first_vertex = 0;
    for (uint32_t m = 0; m < desc->mesh_count; ++m) {
        const ssk_abc_mesh_desc *d = &desc->meshes[m];
        abc_mesh *mesh = &w->meshes[m];
        mesh->vertex_count = d->vertex_count;
        mesh->first_vertex = first_vertex;
        first_vertex += d->vertex_count;
        if (d->object_matrix) memcpy(mesh->rest_matrix, d->object_matrix, sizeof mesh->rest_matrix);
        else ssk_mat4_identity(mesh->rest_matrix);
        mesh_props_init(mesh, d->uvs != NULL, w->with_normals);
        mesh->xform_name = object_name(d->name, m, w->meshes, m);
        if (mesh->xform_name) {
            size_t n = strlen(mesh->xform_name) + sizeof ABC_SHAPE_SUFFIX;
            mesh->mesh_name = malloc(n);
            if (mesh->mesh_name)
                snprintf(mesh->mesh_name, n, "%s%s", mesh->xform_name, ABC_SHAPE_SUFFIX);
        }
        if (!mesh->xform_name || !mesh->mesh_name) {
            w->mesh_count = m + 1;
            writer_free(w);
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                 "abc writer: cannot allocate mesh names");
        }
    }

    /* Archive metadata, keys in sorted order (_ai_Application < _ai_DCC_FPS
     * < _ai_DateWritten in byte order). */
    char date[ABC_DATE_SIZE], fps[ABC_FPS_SIZE];
    if (desc->date_written) {
        snprintf(date, sizeof date, "%s", desc->date_written);
    } else if ((s = date_written(date, err)) != SSK_OK) {
        writer_free(w);
        return s;
    }
    snprintf(fps, sizeof fps, "%.*g", ABC_FPS_DIGITS, desc->fps);
    const char *app = desc->application ? desc->application : "SpringSkin " SSK_VERSION_STRING;
    size_t md_size = strlen(app) + strlen(date) + strlen(fps) + 64;
    w->archive_metadata = malloc(md_size);
    if (!w->archive_metadata) {
        writer_free(w);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "abc writer: cannot allocate");
    }
    /* Alembic skips pairs with an empty value; fps is never empty. */
    snprintf(w->archive_metadata, md_size, "%s%s%s_ai_DCC_FPS=%s%s%s",
             app[0] ? "_ai_Application=" : "", app, app[0] ? ";" : "", fps,
             date[0] ? ";_ai_DateWritten=" : "", date);

    s = ssk_ogawa_open(&w->file, path, err);
    if (s != SSK_OK) {
        writer_free(w);
        return s;
    }
    for (uint32_t m = 0; m < w->mesh_count && s == SSK_OK; ++m)
        s = write_constant_samples(w, m, &desc->meshes[m], err);
    if (s != SSK_OK) {
        ssk_abc_writer_abort(w);
        return s;
    }
    *out = w;
    return ssk_error_ok(err);
}

/* ------------------------------------------------------------------------ */
/* Frames.                                                                   */
/* ------------------------------------------------------------------------ */

/* A float32 array sample as little-endian bytes: the caller's memory on
 * little-endian hosts, else encoded into the scratch buffer. */
static const void *float_bytes(ssk_abc_writer *w, const float *values, size_t count)
{
    if (ABC_HOST_LITTLE_ENDIAN) return values;
    for (size_t i = 0; i < count; ++i) put_f32_le(w->scratch + 4 * i, values[i]);
    return w->scratch;
}

static ssk_status check_finite(const float *values, size_t count, const char *what,
                               uint32_t frame, uint32_t stride, ssk_error *err)
{
    for (size_t i = 0; i < count; ++i)
        if (!isfinite(values[i]))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "abc writer: frame %u, %s %zu, component %zu is %g; nothing "
                                 "written",
                                 (unsigned)frame, what, i / stride, i % stride,
                                 (double)values[i]);
    return SSK_OK;
}

ssk_status ssk_abc_writer_write_frame(ssk_abc_writer *w, const float *positions,
                                      const float *normals, const float *object_matrices,
                                      ssk_error *err)
{
    if (!w || !positions)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "abc writer: NULL %s",
                             w ? "positions" : "writer");
    if (w->with_normals != (normals != NULL))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             w->with_normals ? "abc writer: normals required (opened with "
                                               "with_normals)"
                                             : "abc writer: normals given but the writer "
                                               "was opened without with_normals");
    if (w->failed)
        return ssk_error_set(err, SSK_ERROR_IO, "cannot write '%s': an earlier write failed",
                             w->file.tmp_path);
    if (w->frame_count == UINT32_MAX)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "abc writer: more than %u frames", (unsigned)UINT32_MAX);
    /* Everything is checked before the first byte of the frame is written. */
    size_t n = (size_t)w->vertex_count * 3;
    ssk_status s = check_finite(positions, n, "position of vertex", w->frame_count, 3, err);
    if (s == SSK_OK && normals)
        s = check_finite(normals, n, "normal of vertex", w->frame_count, 3, err);
    if (s == SSK_OK && object_matrices)
        s = check_finite(object_matrices, (size_t)w->mesh_count * 16, "object matrix",
                         w->frame_count, 16, err);
    if (s != SSK_OK) return s;

    for (uint32_t m = 0; m < w->mesh_count && s == SSK_OK; ++m) {
        abc_mesh *mesh = &w->meshes[m];
        size_t nv = mesh->vertex_count;
        const float *p = positions + 3 * (size_t)mesh->first_vertex;
        double box[6] = {p[0], p[1], p[2], p[0], p[1], p[2]};
        for (size_t i = 1; i < nv; ++i)
            for (int k = 0; k < 3; ++k) {
                double v = p[3 * i + (size_t)k];
                if (v < box[k]) box[k] = v;
                if (v > box[3 + k]) box[3 + k] = v;
            }
        unsigned char box_le[6 * 8];
        for (int k = 0; k < 6; ++k) put_f64_le(box_le + 8 * k, box[k]);
        s = prop_set(&w->file, &mesh->props[MP_BOUNDS], box_le, sizeof box_le, 1, err);
        if (s == SSK_OK)
            s = prop_set(&w->file, &mesh->props[MP_P], float_bytes(w, p, 3 * nv), 12 * nv, nv,
                         err);
        if (s == SSK_OK && normals)
            s = prop_set(&w->file, &mesh->props[MP_N],
                         float_bytes(w, normals + 3 * (size_t)mesh->first_vertex, 3 * nv),
                         12 * nv, nv, err);
        if (s != SSK_OK) break;

        /* The Xform's matrix channels: Alembic's x[i][j] is our M[j][i]. */
        const float *om = object_matrices ? object_matrices + 16 * (size_t)m : mesh->rest_matrix;
        double vals[ABC_MATRIX_CHANNELS];
        unsigned char vals_le[ABC_MATRIX_CHANNELS * 8];
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) vals[4 * i + j] = om[4 * j + i];
        if (w->frame_count == 0) memcpy(mesh->first_vals, vals, sizeof vals);
        for (int c = 0; c < ABC_MATRIX_CHANNELS; ++c) {
            if (vals[c] != mesh->first_vals[c]) mesh->animated_channels |= 1u << c;
            put_f64_le(vals_le + 8 * c, vals[c]);
        }
        if (!ssk_mat4_is_identity(om)) mesh->not_identity = true;
        s = prop_set(&w->file, &mesh->xprops[XP_VALS], vals_le, sizeof vals_le, 1, err);
    }
    if (s != SSK_OK) {
        /* Part of the frame may be in the file: it can no longer finish. */
        w->failed = true;
        return s;
    }
    w->frame_count++;
    return ssk_error_ok(err);
}

/* ------------------------------------------------------------------------ */
/* Finish: groups, headers and the archive's root.                           */
/* ------------------------------------------------------------------------ */

/* Samples of the per-archive properties decided at the end (written now). */
static ssk_status write_final_samples(ssk_abc_writer *w, abc_mesh *mesh, ssk_error *err)
{
    ssk_status s = SSK_OK;
    for (int i = 0; i < MP_COUNT; ++i) prop_repeat_to(&mesh->props[i], w->frame_count);
    prop_repeat_to(&mesh->xprops[XP_INHERITS], w->frame_count);
    if (mesh->not_identity) {
        uint8_t yes = 1;
        mesh->xprops[XP_NOT_IDENTITY].present = true;
        s = prop_set(&w->file, &mesh->xprops[XP_NOT_IDENTITY], &yes, 1, 1, err);
    }
    if (s == SSK_OK && mesh->animated_channels) {
        unsigned char chans[ABC_MATRIX_CHANNELS * 4];
        uint32_t count = 0;
        for (uint32_t c = 0; c < ABC_MATRIX_CHANNELS; ++c)
            if (mesh->animated_channels & (1u << c)) put_u32_le(chans + 4 * count++, c);
        mesh->xprops[XP_ANIM_CHANS].present = true;
        s = prop_set(&w->file, &mesh->xprops[XP_ANIM_CHANS], chans, 4 * (size_t)count, count,
                     err);
    }
    return s;
}

/* Xform object group: [top compound, PolyMesh object group, headers];
 * xform_hash: the Xform object's hash for the top object. */
static ssk_status write_mesh_objects(ssk_abc_writer *w, abc_mesh *mesh, uint64_t *xform_group,
                                     uint64_t xform_hash[2], ssk_error *err)
{
    ssk_ogawa *f = &w->file;
    uint64_t geom_hash[2], xform_schema_hash[2], mesh_hash[2];
    unsigned char mesh_hashes[ABC_HASH_BYTES], xform_hashes[ABC_HASH_BYTES];
    compound_hash(geom_hash, mesh->props, MP_COUNT, ABC_METADATA, ".geom",
                  ABC_METADATA[MD_MESH_SCHEMA], w->fps, w->start_time);
    object_hashes(mesh_hashes, mesh_hash, (const uint64_t(*)[2])geom_hash, 1, NULL, 0,
                  ABC_METADATA[MD_MESH_OBJECT], mesh->mesh_name);
    compound_hash(xform_schema_hash, mesh->xprops, XP_COUNT, ABC_METADATA, ".xform",
                  ABC_METADATA[MD_XFORM_SCHEMA], w->fps, w->start_time);
    object_hashes(xform_hashes, xform_hash, (const uint64_t(*)[2])xform_schema_hash, 1,
                  (const uint64_t(*)[2])mesh_hash, 1, ABC_METADATA[MD_XFORM_OBJECT],
                  mesh->xform_name);
    uint64_t geom = 0, mesh_props = 0, mesh_children[2] = {0, 0}, xform = 0, xform_props = 0,
             xform_children[3] = {0, 0, 0};
    ssk_status s = write_compound(f, mesh->props, MP_COUNT, &geom, err);
    if (s == SSK_OK) s = write_top_compound(f, geom, ".geom", MD_MESH_SCHEMA, &mesh_props, err);
    /* The PolyMesh has no child: its header block is the 32 hash bytes. */
    ssk_ogawa_piece hashes = {mesh_hashes, sizeof mesh_hashes};
    mesh_children[0] = mesh_props;
    if (s == SSK_OK) s = ssk_ogawa_write_data(f, &hashes, 1, &mesh_children[1], err);
    if (s == SSK_OK) s = ssk_ogawa_write_group(f, mesh_children, 2, &xform_children[1], err);

    if (s == SSK_OK) s = write_compound(f, mesh->xprops, XP_COUNT, &xform, err);
    if (s == SSK_OK)
        s = write_top_compound(f, xform, ".xform", MD_XFORM_SCHEMA, &xform_props, err);
    xform_children[0] = xform_props;
    if (s == SSK_OK) {
        abc_bytes headers = {0};
        object_header(&headers, mesh->mesh_name, MD_MESH_OBJECT);
        bytes_put(&headers, xform_hashes, sizeof xform_hashes);
        s = write_bytes_block(f, &headers, &xform_children[2], err);
        free(headers.data);
    }
    if (s == SSK_OK) s = ssk_ogawa_write_group(f, xform_children, 3, xform_group, err);
    return s;
}

/* The largest sample count of the properties using time sampling `ts`; a
 * constant property counts 1 (AbcCoreOgawa's rule). */
static uint32_t max_samples(const ssk_abc_writer *w, uint32_t ts)
{
    uint32_t best = 0;
    for (uint32_t m = 0; m < w->mesh_count; ++m) {
        const abc_mesh *mesh = &w->meshes[m];
        const abc_prop *lists[2] = {mesh->props, mesh->xprops};
        const int counts[2] = {MP_COUNT, XP_COUNT};
        for (int l = 0; l < 2; ++l)
            for (int i = 0; i < counts[l]; ++i) {
                const abc_prop *p = &lists[l][i];
                if (!p->present || p->ts_index != ts) continue;
                uint32_t n = prop_is_constant(p) ? 1u : p->sample_count;
                if (n > best) best = n;
            }
    }
    return best;
}

ssk_status ssk_abc_writer_finish(ssk_abc_writer *w, ssk_error *err)
{
    if (!w)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "abc writer: NULL writer");
    ssk_status s = SSK_OK;
    if (w->failed)
        s = ssk_error_set(err, SSK_ERROR_IO, "cannot finish '%s': an earlier write failed",
                          w->file.tmp_path);
    else if (w->frame_count == 0)
        s = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                          "abc writer: no frame written to '%s'", w->file.path);
    for (uint32_t m = 0; m < w->mesh_count && s == SSK_OK; ++m)
        s = write_final_samples(w, &w->meshes[m], err);

    /* Top object: [no properties, one Xform per mesh, headers + hashes]. */
    uint64_t *top = s == SSK_OK ? malloc(((size_t)w->mesh_count + 2) * sizeof *top) : NULL;
    if (s == SSK_OK && !top)
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "abc writer: cannot allocate");
    uint64_t(*xform_hashes)[2] =
        s == SSK_OK ? malloc(((size_t)w->mesh_count + 1) * sizeof *xform_hashes) : NULL;
    if (s == SSK_OK && !xform_hashes)
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "abc writer: cannot allocate");
    abc_bytes headers = {0};
    if (s == SSK_OK) top[0] = SSK_OGAWA_EMPTY_GROUP;
    for (uint32_t m = 0; m < w->mesh_count && s == SSK_OK; ++m) {
        s = write_mesh_objects(w, &w->meshes[m], &top[1 + m], xform_hashes[m], err);
        object_header(&headers, w->meshes[m].xform_name, MD_XFORM_OBJECT);
    }
    uint64_t root[6];
    if (s == SSK_OK) {
        /* the top object: no properties, the Xforms as children */
        unsigned char top_hashes[ABC_HASH_BYTES];
        object_hashes(top_hashes, NULL, NULL, 0, (const uint64_t(*)[2])xform_hashes,
                      w->mesh_count, "", "");
        bytes_put(&headers, top_hashes, sizeof top_hashes);
        s = write_bytes_block(&w->file, &headers, &top[1 + w->mesh_count], err);
    }
    free(xform_hashes);
    if (s == SSK_OK) s = ssk_ogawa_write_group(&w->file, top, (size_t)w->mesh_count + 2, &root[2], err);
    free(top);
    free(headers.data);

    /* Root: file version, library version, top object, archive metadata,
     * time samplings, indexed metadata. */
    if (s == SSK_OK) {
        unsigned char v0[4], v1[4];
        put_u32_le(v0, (uint32_t)ABC_FILE_VERSION);
        put_u32_le(v1, (uint32_t)ABC_LIBRARY_VERSION);
        ssk_ogawa_piece p0 = {v0, 4}, p1 = {v1, 4};
        ssk_ogawa_piece md = {w->archive_metadata, strlen(w->archive_metadata)};
        s = ssk_ogawa_write_data(&w->file, &p0, 1, &root[0], err);
        if (s == SSK_OK) s = ssk_ogawa_write_data(&w->file, &p1, 1, &root[1], err);
        if (s == SSK_OK) s = ssk_ogawa_write_data(&w->file, &md, 1, &root[3], err);
    }
    if (s == SSK_OK) {
        abc_bytes ts = {0};
        /* 0: identity sampling (1 s per cycle, one time 0). */
        bytes_u32(&ts, max_samples(w, ABC_TS_IDENTITY));
        bytes_f64(&ts, 1.0);
        bytes_u32(&ts, 1);
        bytes_f64(&ts, 0.0);
        /* 1: uniform, 1/fps per sample, first at start_time. */
        bytes_u32(&ts, max_samples(w, ABC_TS_FRAMES));
        bytes_f64(&ts, 1.0 / w->fps);
        bytes_u32(&ts, 1);
        bytes_f64(&ts, w->start_time);
        s = write_bytes_block(&w->file, &ts, &root[4], err);
        free(ts.data);
    }
    if (s == SSK_OK) {
        abc_bytes table = {0};
        for (int i = MD_NONE + 1; i < MD_COUNT; ++i) {
            size_t len = strlen(ABC_METADATA[i]);
            bytes_u8(&table, (uint8_t)len); /* every entry < 256 bytes */
            bytes_put(&table, ABC_METADATA[i], len);
        }
        s = write_bytes_block(&w->file, &table, &root[5], err);
        free(table.data);
    }
    uint64_t root_group = 0;
    if (s == SSK_OK) s = ssk_ogawa_write_group(&w->file, root, 6, &root_group, err);
    if (s == SSK_OK) {
        s = ssk_ogawa_finish(&w->file, root_group, err); /* releases the file */
    } else {
        ssk_ogawa_discard(&w->file);
    }
    writer_free(w);
    return s;
}

void ssk_abc_writer_abort(ssk_abc_writer *w)
{
    if (!w) return;
    ssk_ogawa_discard(&w->file);
    writer_free(w);
}
