/* test_abc.c — the Alembic writer (ssk_abc_writer) and .abc bakes.
 *
 * A small Ogawa/AbcCoreOgawa reader written here from the format notes
 * (sharing no code with core/io/abc.c or core/io/ogawa.c) reads back what the
 * writer produced: hierarchy and names, topology with its winding, every P
 * and N sample, bounds, uv, the Xform's matrix channels, sample storage
 * (constant properties, repeats), time sampling and archive metadata.
 * Also: MurmurHash3_x64_128 against SMHasher's verification value, errors,
 * non-finite frames rejected before anything is written, temporary file and
 * rename, a full disk (RLIMIT_FSIZE) leaving no file, and the writer's
 * memory staying flat over a 1M-vertex x 100-frame cache.
 * (The full independent reader of the bakes is tests/python/test_abc_reader.py.) */
#include "testutil.h"

#include "io/spooky.h"

#include <errno.h>
#include <math.h>
#include <murmurhash.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"
#define DATA_BIT 0x8000000000000000ull
#define EMPTY_DATA DATA_BIT
#define KEY_BYTES 16
#define HASH_BYTES 32
#define MAX_ITEMS 32

/* ------------------------------------------------------------------------ */
/* A compact reader.                                                         */
/* ------------------------------------------------------------------------ */

typedef struct rfile {
    unsigned char *b;
    size_t n;
} rfile;

static uint64_t rd_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

static uint32_t rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t rd_uint(const unsigned char *p, int width)
{
    return width == 1 ? p[0] : width == 2 ? (uint32_t)(p[0] | p[1] << 8) : rd_u32(p);
}

static float rd_f32(const unsigned char *p)
{
    uint32_t u = rd_u32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double rd_f64(const unsigned char *p)
{
    uint64_t u = rd_u64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static void rfile_load(rfile *f, const char *path)
{
    f->b = tu_read_file(path, &f->n);
    assert_true(f->n >= 16);
    assert_memory_equal(f->b, "Ogawa", 5);
    assert_int_equal(f->b[5], 0xff); /* frozen */
    assert_int_equal(f->b[6], 0);    /* version 1, big-endian */
    assert_int_equal(f->b[7], 1);
}

/* Number of children of a group entry; *first points at the first entry. */
static size_t r_group(const rfile *f, uint64_t e, const unsigned char **first)
{
    assert_false(e & DATA_BIT);
    if (e == 0) return 0;
    assert_true(e > 8 && e + 8 <= f->n);
    uint64_t n = rd_u64(f->b + e);
    assert_true(n > 0 && e + 8 + 8 * n <= f->n);
    *first = f->b + e + 8;
    return (size_t)n;
}

static uint64_t r_child(const rfile *f, uint64_t group, size_t i)
{
    const unsigned char *c = NULL;
    size_t n = r_group(f, group, &c);
    assert_true(i < n);
    return rd_u64(c + 8 * i);
}

static const unsigned char *r_data(const rfile *f, uint64_t e, size_t *size)
{
    assert_true(e & DATA_BIT);
    if (e == EMPTY_DATA) {
        *size = 0;
        return f->b;
    }
    uint64_t off = e & ~DATA_BIT;
    assert_true(off + 8 <= f->n);
    uint64_t s = rd_u64(f->b + off);
    assert_true(off + 8 + s <= f->n);
    *size = (size_t)s;
    return f->b + off + 8;
}

static uint64_t r_root(const rfile *f, size_t i) { return r_child(f, rd_u64(f->b + 8), i); }

/* Indexed metadata string k (0: empty). */
static void r_metadata(const rfile *f, uint32_t k, char *out, size_t cap)
{
    size_t size;
    const unsigned char *p = r_data(f, r_root(f, 5), &size);
    out[0] = '\0';
    if (k == 0) return;
    size_t pos = 0;
    for (uint32_t i = 1; pos < size; ++i) {
        size_t len = p[pos];
        assert_true(pos + 1 + len <= size);
        if (i == k) {
            assert_true(len < cap);
            memcpy(out, p + pos + 1, len);
            out[len] = '\0';
            return;
        }
        pos += 1 + len;
    }
    fail_msg("metadata index %u beyond the table", k);
}

typedef struct robj {
    char name[128];
    uint32_t md;
    uint64_t group;
} robj;

/* Child objects of an object group (headers + 32 hash bytes). */
static size_t r_objects(const rfile *f, uint64_t object, robj *out)
{
    const unsigned char *c = NULL;
    size_t n = r_group(f, object, &c);
    assert_true(n >= 2);
    size_t size;
    const unsigned char *h = r_data(f, rd_u64(c + 8 * (n - 1)), &size);
    assert_true(size >= HASH_BYTES); /* the hashes: test_object_hashes_match_the_reference */
    size -= HASH_BYTES;
    size_t pos = 0, count = 0;
    while (pos < size) {
        assert_true(count < MAX_ITEMS);
        uint32_t len = rd_u32(h + pos);
        assert_true(len > 0 && len < sizeof out[count].name && pos + 4 + len + 1 <= size);
        memcpy(out[count].name, h + pos + 4, len);
        out[count].name[len] = '\0';
        out[count].md = h[pos + 4 + len];
        assert_true(out[count].md != 0xff); /* the writer indexes all */
        pos += 4 + len + 1;
        out[count].group = rd_u64(c + 8 * (count + 1));
        ++count;
    }
    assert_int_equal(count, n - 2);
    return count;
}

typedef struct rprop {
    char name[64];
    uint32_t info, kind, pod, extent, md, n, first, last, ts;
    uint64_t group;
} rprop;

/* Sub-properties of a compound property group. */
static size_t r_props(const rfile *f, uint64_t compound, rprop *out)
{
    const unsigned char *c = NULL;
    size_t n = r_group(f, compound, &c);
    assert_true(n >= 1);
    size_t size;
    const unsigned char *h = r_data(f, rd_u64(c + 8 * (n - 1)), &size);
    size_t pos = 0, count = 0;
    while (pos < size) {
        assert_true(count < MAX_ITEMS);
        rprop *p = &out[count];
        memset(p, 0, sizeof *p);
        p->info = rd_u32(h + pos);
        pos += 4;
        int width = 1 << ((p->info >> 2) & 3);
        p->kind = p->info & 3;
        p->md = (p->info >> 20) & 0xff;
        if (p->kind != 0) {
            p->pod = (p->info >> 4) & 0xf;
            p->extent = (p->info >> 12) & 0xff;
            p->n = rd_uint(h + pos, width);
            pos += (size_t)width;
            if (p->info & 0x200) {
                p->first = rd_uint(h + pos, width);
                p->last = rd_uint(h + pos + width, width);
                pos += 2 * (size_t)width;
            } else if (p->info & 0x800) {
                p->first = p->last = 0;
            } else {
                p->first = 1;
                p->last = p->n - 1;
            }
            if (p->info & 0x100) {
                p->ts = rd_uint(h + pos, width);
                pos += (size_t)width;
            }
        }
        uint32_t len = rd_uint(h + pos, width);
        pos += (size_t)width;
        assert_true(len > 0 && len < sizeof p->name && pos + len <= size);
        memcpy(p->name, h + pos, len);
        pos += len;
        assert_true(p->md != 0xff);
        p->group = rd_u64(c + 8 * count);
        ++count;
    }
    assert_int_equal(pos, size);
    assert_int_equal(count, n - 1);
    return count;
}

static const rprop *find_prop(const rprop *props, size_t n, const char *name)
{
    for (size_t i = 0; i < n; ++i)
        if (strcmp(props[i].name, name) == 0) return &props[i];
    return NULL;
}

/* Stored entry of sample i (first/last changed rule). */
static size_t stored_index(const rprop *p, uint32_t i)
{
    assert_true(i < p->n);
    if (p->first == 0 && p->last == 0) return 0;
    if (i < p->first) return 0;
    if (i >= p->last) return p->last - p->first + 1;
    return i - p->first + 1;
}

static size_t stored_count(const rfile *f, const rprop *p)
{
    const unsigned char *c = NULL;
    return r_group(f, p->group, &c) / (p->kind == 1 ? 1 : 2);
}

/* Payload of sample i (after its 16-byte key, which is checked). */
static const unsigned char *r_sample(const rfile *f, const rprop *p, uint32_t i, size_t *size)
{
    size_t j = stored_index(p, i);
    uint64_t e = r_child(f, p->group, p->kind == 1 ? j : 2 * j);
    if (p->kind != 1) assert_true(r_child(f, p->group, 2 * j + 1) == EMPTY_DATA);
    size_t s;
    const unsigned char *d = r_data(f, e, &s);
    if (s == 0) {
        *size = 0;
        return d;
    }
    assert_true(s >= KEY_BYTES);
    uint64_t h[2];
    lmmh_x64_128(d + KEY_BYTES, (unsigned)(s - KEY_BYTES), 0, h);
    assert_true(rd_u64(d) == h[0] && rd_u64(d + 8) == h[1]);
    *size = s - KEY_BYTES;
    return d + KEY_BYTES;
}

/* The .geom (or .xform) properties of an object. */
static size_t r_schema(const rfile *f, uint64_t object, const char *schema, rprop *out)
{
    rprop top[MAX_ITEMS];
    size_t n = r_props(f, r_child(f, object, 0), top);
    assert_int_equal(n, 1);
    assert_string_equal(top[0].name, schema);
    assert_int_equal(top[0].kind, 0);
    return r_props(f, top[0].group, out);
}

/* ------------------------------------------------------------------------ */
/* Helpers.                                                                  */
/* ------------------------------------------------------------------------ */

/* Two meshes: a quad (2 triangles, 4 vertices, with uv) and a triangle
 * (3 vertices). */
enum { QUAD_V = 4, TRI_V = 3, ALL_V = QUAD_V + TRI_V };
static const int32_t QUAD_TRIS[6] = {0, 1, 2, 0, 2, 3};
static const int32_t TRI_TRIS[3] = {0, 1, 2};
static const float QUAD_UV[8] = {0.0f, 0.0f, 1.0f, 0.0f, 1.0f, 1.0f, 0.0f, 1.0f};

static void frame_positions(float *p, uint32_t frame)
{
    for (uint32_t i = 0; i < ALL_V * 3; ++i)
        p[i] = (float)((double)i * 0.25 - 1.0 + (double)frame * 0.5 * ((i % 3) == 1));
}

static void frame_normals(float *n, uint32_t frame)
{
    for (uint32_t v = 0; v < ALL_V; ++v) {
        double a = 0.1 * v + 0.2 * frame;
        n[3 * v] = (float)cos(a);
        n[3 * v + 1] = (float)sin(a);
        n[3 * v + 2] = 0.0f;
    }
}

static ssk_abc_desc two_mesh_desc(ssk_abc_mesh_desc meshes[2], const char *name0,
                                  const char *name1, int with_normals)
{
    memset(meshes, 0, 2 * sizeof *meshes);
    meshes[0] = (ssk_abc_mesh_desc){name0, QUAD_V, 2, QUAD_TRIS, QUAD_UV, NULL};
    meshes[1] = (ssk_abc_mesh_desc){name1, TRI_V, 1, TRI_TRIS, NULL, NULL};
    ssk_abc_desc d = {0};
    d.meshes = meshes;
    d.mesh_count = 2;
    d.fps = 25.0;
    d.start_time = 0.4;
    d.with_normals = with_normals;
    d.application = "SpringSkin test";
    d.date_written = "Mon Jan  1 00:00:00 2024";
    return d;
}

/* ------------------------------------------------------------------------ */

static void test_murmur3_verification_value(void **state)
{
    (void)state;
    /* SMHasher's VerificationTest for MurmurHash3_x64_128: 0x6384BA69. */
    unsigned char key[256], hashes[256 * 16];
    for (int i = 0; i < 256; ++i) {
        key[i] = (unsigned char)i;
        uint64_t h[2];
        lmmh_x64_128(key, (unsigned)i, (uint32_t)(256 - i), h);
        for (int b = 0; b < 8; ++b) {
            hashes[16 * i + b] = (unsigned char)(h[0] >> (8 * b));
            hashes[16 * i + 8 + b] = (unsigned char)(h[1] >> (8 * b));
        }
    }
    uint64_t final[2];
    lmmh_x64_128(hashes, sizeof hashes, 0, final);
    assert_int_equal((uint32_t)(final[0] & 0xffffffffu), 0x6384BA69u);
}

/* SpookyHash V2 (core/io/spooky.c), the hash of Alembic's object and
 * property hashes, against the reference implementation (Alembic 1.8.12's
 * Util/SpookyV2, built outside the project): messages of bytes 7 i + 1
 * across the short path (< 192 bytes), the block path and the remainder
 * cases, whole with seeds (0, 0) and in 5-byte updates with seeds (1, 2);
 * ShortEnd of (1, 2, 3, 4). */
static void test_spooky_v2_matches_the_reference(void **state)
{
    (void)state;
    static const struct {
        size_t length;
        uint64_t whole[2], pieces[2];
    } expect[] = {
        {0, 0x232706fc6bf50919ULL, 0x8b72ee65b4e851c7ULL, 0xeec07ed910bce07aULL, 0xfce8383cffab081dULL},
        {1, 0x6501e36993585923ULL, 0x3cd3d69a2213e84aULL, 0x94127e16d897bb18ULL, 0xf50c42176dea9054ULL},
        {3, 0xc5ae2ee778ba3676ULL, 0x3e86a080b7e17a9bULL, 0xec817315960538afULL, 0xb11b03abdedb17daULL},
        {7, 0xfc24cb65815d29e5ULL, 0xce11e29e933a61faULL, 0x3387ec904d46a966ULL, 0xda13f68d52847d42ULL},
        {8, 0x16b10def360203f4ULL, 0xea0687ad795f1675ULL, 0x12684882a476738cULL, 0xfb5dcc677ac4f25cULL},
        {12, 0x78e9b9286f7c4e6bULL, 0xd707ef5899432630ULL, 0xccf72d4a405e5395ULL, 0xde02ceae3a027660ULL},
        {15, 0x480ad75fd9675975ULL, 0xb67450908e8691a5ULL, 0x960c642b1971afe6ULL, 0xd76751a0df4480cbULL},
        {16, 0xb1b757bde2844a4bULL, 0x9607a5de17f72ebfULL, 0x47bb76ede44777b4ULL, 0xee790e833f9f8d19ULL},
        {31, 0x1cf83775d46aac18ULL, 0x27623861fc1941e9ULL, 0xe44c8013cab92d5fULL, 0xd4186f25de2700f2ULL},
        {32, 0xd1b2ff13abedac64ULL, 0x4c0606215c3d4361ULL, 0x36310d9bfd4b6477ULL, 0x1aeddccd2d39d9d6ULL},
        {47, 0xf1a0d12c04ce1cd0ULL, 0x23eea350d9ad51b3ULL, 0x97dacd64e004d2b3ULL, 0x0db37beb16392855ULL},
        {100, 0x3714030509fabb66ULL, 0x1e5849a45bae065fULL, 0xf38ced2aae66c0b5ULL, 0x17b2a1754dcf6979ULL},
        {191, 0x8e4db7e09062e7a4ULL, 0x67c5dafb543b888dULL, 0x61684739eb3b267aULL, 0xc3d80f8ecdab9b7bULL},
        {192, 0xead9c0b538771b35ULL, 0x5f1a5e7523bb3281ULL, 0x1a1ab793faf5848dULL, 0xf201d1860a240965ULL},
        {193, 0xe33fc8dc36ad246aULL, 0x9d7f9c746ebcf4eeULL, 0x7892ab759a0b9e8bULL, 0x8cdae2fd391d41d4ULL},
        {287, 0x87b16aebbb763efeULL, 0x63b646433a8acad2ULL, 0x9e7f89a74b3474acULL, 0xeafa5727ae71f903ULL},
        {288, 0xe9b402e2694eb7d7ULL, 0xe327b45c6b48f37aULL, 0x8cf05811a6a4f030ULL, 0xdad3b8bff1b0fab4ULL},
        {500, 0x11f83f1a8c051f07ULL, 0x018236a72fee3801ULL, 0x86f1d5c41e3e41f0ULL, 0x31f3daacf10a25adULL},
        {1000, 0x94c1c8bbdd627b01ULL, 0x110b8b30a716f1d6ULL, 0x89687065f3c68039ULL, 0x32bb74454905b1d2ULL},
    };
    unsigned char msg[1000];
    for (size_t i = 0; i < sizeof msg; ++i) msg[i] = (unsigned char)(i * 7 + 1);
    for (size_t k = 0; k < sizeof expect / sizeof expect[0]; ++k) {
        const size_t n = expect[k].length;
        ssk_spooky h;
        ssk_spooky_init(&h, 0, 0);
        ssk_spooky_update(&h, msg, n);
        uint64_t a, b;
        ssk_spooky_final(&h, &a, &b);
        if (a != expect[k].whole[0] || b != expect[k].whole[1])
            fail_msg("length %zu: %016llx %016llx", n, (unsigned long long)a,
                     (unsigned long long)b);
        /* Final leaves the state: updating again goes on from it */
        ssk_spooky_init(&h, 1, 2);
        for (size_t off = 0; off < n; off += 5)
            ssk_spooky_update(&h, msg + off, n - off < 5 ? n - off : 5);
        ssk_spooky_final(&h, &a, &b);
        ssk_spooky_final(&h, &a, &b);
        if (a != expect[k].pieces[0] || b != expect[k].pieces[1])
            fail_msg("length %zu in pieces: %016llx %016llx", n, (unsigned long long)a,
                     (unsigned long long)b);
    }
    uint64_t w0 = 1, w1 = 2, w2 = 3, w3 = 4;
    ssk_spooky_short_end(&w0, &w1, &w2, &w3);
    assert_true(w0 == 0xd05bc6ce4c6b2efeULL && w1 == 0x8616ffe259af1463ULL);
}

/* The 32 hash bytes an object group stores (properties hash, children
 * hash) at the end of its last child. */
static const unsigned char *r_object_hashes(const rfile *f, uint64_t object)
{
    const unsigned char *c = NULL;
    size_t n = r_group(f, object, &c);
    size_t size;
    const unsigned char *h = r_data(f, rd_u64(c + 8 * (n - 1)), &size);
    assert_true(size >= HASH_BYTES);
    return h + size - HASH_BYTES;
}

/* Writes the two-mesh archive of test_round_trip, 4 frames with normals,
 * the first mesh's object matrix moving; `nudge`: one position of mesh 1
 * at frame 2 moved. */
static void write_hashed_archive(const char *path, int nudge)
{
    ssk_abc_mesh_desc md[2];
    ssk_abc_desc desc = two_mesh_desc(md, "a/b", NULL, 1);
    ssk_error err = {0};
    ssk_abc_writer *w = NULL;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_OK);
    for (uint32_t fr = 0; fr < 4; ++fr) {
        float pos[ALL_V * 3], nrm[ALL_V * 3], mats[2][16];
        frame_positions(pos, fr);
        frame_normals(nrm, fr);
        if (nudge && fr == 2) pos[3 * QUAD_V + 1] += 0.25f;
        for (int m = 0; m < 2; ++m) {
            memset(mats[m], 0, sizeof mats[m]);
            mats[m][0] = mats[m][5] = mats[m][10] = mats[m][15] = 1.0f;
        }
        mats[0][3] = 0.5f * (float)fr; /* row-major: translation x */
        assert_int_equal(ssk_abc_writer_write_frame(w, pos, nrm, &mats[0][0], &err), SSK_OK);
    }
    assert_int_equal(ssk_abc_writer_finish(w, &err), SSK_OK);
}

/* Object and property hashes (issue #19) against the reference library:
 * the expected bytes are those Alembic 1.8.12 stores when its own writer
 * writes the same content (the archive read with AbcCoreOgawa and copied
 * object by object, property by property and sample by sample through
 * Abc::OArchive, as its AbcConvert does; both read back with
 * IObject::getPropertiesHash / getChildrenHash). With them abcdiff tells
 * two caches apart (it compared all-zero hashes before and found no
 * difference between an LBS and a DQS bake). A moved position changes its
 * mesh's properties hash and its ancestors' children hashes only. */
static void test_object_hashes_match_the_reference(void **state)
{
    (void)state;
    /* top, Xform a_b, a_bShape, Xform mesh_1, mesh_1Shape: properties
     * hash (2 words), children hash (2 words), as the reference reports */
    static const uint64_t expect[5][4] = {
        {0x232706fc6bf50919ULL, 0x8b72ee65b4e851c7ULL, 0x1b82e9f64efeaec1ULL, 0x0191eba832ce6dbfULL},
        {0x75c7edb28e400fd4ULL, 0xc68d08d3327df39aULL, 0x82161926ce7a0aa0ULL, 0x769a0aeacc9aecdaULL},
        {0xe4c33bc335016dbcULL, 0xb3fcbb5769679c40ULL, 0x0000000000000000ULL, 0x0000000000000000ULL},
        {0x15837e8fba6da526ULL, 0xf651eee1c3124477ULL, 0xe0dd6976cc4b2d40ULL, 0xf4efbf27a8665187ULL},
        {0xdc7c643ed5230b0fULL, 0xe825d156a59b7345ULL, 0x0000000000000000ULL, 0x0000000000000000ULL}};
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "hashed.abc"), *nudged = tu_path_join(dir, "nudged.abc");
    write_hashed_archive(path, 0);
    write_hashed_archive(nudged, 1);
    rfile f, g;
    rfile_load(&f, path);
    rfile_load(&g, nudged);
    const rfile *files[2] = {&f, &g};
    const unsigned char *got[2][5];
    for (int k = 0; k < 2; ++k) {
        robj xforms[MAX_ITEMS], shape0[MAX_ITEMS], shape1[MAX_ITEMS];
        const uint64_t top = r_root(files[k], 2);
        assert_int_equal(r_objects(files[k], top, xforms), 2);
        r_objects(files[k], xforms[0].group, shape0);
        r_objects(files[k], xforms[1].group, shape1);
        got[k][0] = r_object_hashes(files[k], top);
        got[k][1] = r_object_hashes(files[k], xforms[0].group);
        got[k][2] = r_object_hashes(files[k], shape0[0].group);
        got[k][3] = r_object_hashes(files[k], xforms[1].group);
        got[k][4] = r_object_hashes(files[k], shape1[0].group);
    }
    for (int o = 0; o < 5; ++o) {
        for (int w = 0; w < 4; ++w)
            if (rd_u64(got[0][o] + 8 * w) != expect[o][w])
                fail_msg("object %d word %d: %016llx, the reference %016llx", o, w,
                         (unsigned long long)rd_u64(got[0][o] + 8 * w),
                         (unsigned long long)expect[o][w]);
    }
    /* the nudge: mesh_1Shape's properties, mesh_1's and the top's children */
    const bool props_differ[5] = {false, false, false, false, true};
    const bool children_differ[5] = {true, false, false, true, false};
    for (int o = 0; o < 5; ++o) {
        assert_int_equal(memcmp(got[0][o], got[1][o], 16) != 0, props_differ[o]);
        assert_int_equal(memcmp(got[0][o] + 16, got[1][o] + 16, 16) != 0, children_differ[o]);
    }
    /* a mesh has no children: zeros, as the reference writes */
    for (int i = 16; i < 32; ++i) assert_int_equal(got[0][2][i] | got[0][4][i], 0);
    free(f.b);
    free(g.b);
    tu_remove_tree(dir);
    free(path);
    free(nudged);
    free(dir);
}

static void test_round_trip(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "two.abc");
    char *tmp = tu_temp_name(path);
    ssk_abc_mesh_desc md[2];
    ssk_abc_desc desc = two_mesh_desc(md, "a/b", NULL, 1);
    enum { FRAMES = 4 };
    float pos[FRAMES][ALL_V * 3], nrm[FRAMES][ALL_V * 3];
    ssk_error err = {0};
    ssk_abc_writer *w = NULL;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_OK);
    assert_true(tu_file_exists(tmp));
    assert_false(tu_file_exists(path));
    for (uint32_t f = 0; f < FRAMES; ++f) {
        frame_positions(pos[f], f);
        frame_normals(nrm[f], f);
        assert_int_equal(ssk_abc_writer_write_frame(w, pos[f], nrm[f], NULL, &err), SSK_OK);
    }
    assert_false(tu_file_exists(path));
    assert_int_equal(ssk_abc_writer_finish(w, &err), SSK_OK);
    assert_true(tu_file_exists(path));
    assert_false(tu_file_exists(tmp));
    assert_int_equal(tu_dir_entry_count(dir), 1);

    rfile f;
    rfile_load(&f, path);
    size_t size;
    const unsigned char *d = r_data(&f, r_root(&f, 0), &size);
    assert_int_equal(size, 4);
    assert_int_equal(rd_u32(d), 0);
    d = r_data(&f, r_root(&f, 1), &size);
    assert_true(rd_u32(d) >= 9999);
    d = r_data(&f, r_root(&f, 3), &size);
    const char *md_expected = "_ai_Application=SpringSkin test;_ai_DCC_FPS=25;"
                              "_ai_DateWritten=Mon Jan  1 00:00:00 2024";
    assert_int_equal(size, strlen(md_expected));
    assert_memory_equal(d, md_expected, size);
    /* Time samplings: 0 identity, 1 uniform 1/25 from 0.4. */
    d = r_data(&f, r_root(&f, 4), &size);
    assert_int_equal(size, 2 * (4 + 8 + 4 + 8));
    assert_true(rd_f64(d + 4) == 1.0 && rd_u32(d + 12) == 1 && rd_f64(d + 16) == 0.0);
    assert_int_equal(rd_u32(d + 24), FRAMES);
    assert_true(rd_f64(d + 28) == 1.0 / 25.0);
    assert_int_equal(rd_u32(d + 36), 1);
    assert_true(rd_f64(d + 40) == 0.4);

    robj xforms[MAX_ITEMS], shapes[MAX_ITEMS];
    char mdtext[512];
    assert_int_equal(r_objects(&f, r_root(&f, 2), xforms), 2);
    assert_string_equal(xforms[0].name, "a_b"); /* '/' replaced */
    assert_string_equal(xforms[1].name, "mesh_1");
    r_metadata(&f, xforms[0].md, mdtext, sizeof mdtext);
    assert_non_null(strstr(mdtext, "schemaObjTitle=AbcGeom_Xform_v3:.xform"));
    assert_int_equal(r_child(&f, r_root(&f, 2), 0), 0); /* top object: no properties */

    const int32_t *tris[2] = {QUAD_TRIS, TRI_TRIS};
    const uint32_t nv[2] = {QUAD_V, TRI_V}, nf[2] = {2, 1}, first_v[2] = {0, QUAD_V};
    for (int m = 0; m < 2; ++m) {
        assert_int_equal(r_objects(&f, xforms[m].group, shapes), 1);
        char want[64];
        snprintf(want, sizeof want, "%sShape", xforms[m].name);
        assert_string_equal(shapes[0].name, want);
        r_metadata(&f, shapes[0].md, mdtext, sizeof mdtext);
        assert_string_equal(mdtext, "schema=AbcGeom_PolyMesh_v1;schemaBaseType=AbcGeom_GeomBase_v1;"
                                    "schemaObjTitle=AbcGeom_PolyMesh_v1:.geom");
        /* The mesh has no child: its header block is the 32 hash bytes. */
        robj none[MAX_ITEMS];
        assert_int_equal(r_objects(&f, shapes[0].group, none), 0);

        rprop g[MAX_ITEMS];
        size_t ng = r_schema(&f, shapes[0].group, ".geom", g);
        assert_int_equal(ng, m == 0 ? 6 : 5); /* uv only on the quad */
        assert_string_equal(g[0].name, ".selfBnds");
        assert_string_equal(g[1].name, "P");
        const rprop *P = find_prop(g, ng, "P"), *B = find_prop(g, ng, ".selfBnds");
        const rprop *FI = find_prop(g, ng, ".faceIndices"), *FC = find_prop(g, ng, ".faceCounts");
        const rprop *N = find_prop(g, ng, "N"), *UV = find_prop(g, ng, "uv");
        assert_non_null(N);
        assert_true(P->kind == 2 && P->pod == 10 && P->extent == 3 && P->ts == 1);
        assert_true(B->kind == 1 && B->pod == 11 && B->extent == 6);
        assert_int_equal(P->n, FRAMES);
        assert_int_equal(stored_count(&f, P), FRAMES);
        /* Topology: constant, one stored sample, clockwise winding. */
        assert_true(FI->info & 0x800);
        assert_int_equal(FI->n, FRAMES);
        assert_int_equal(stored_count(&f, FI), 1);
        d = r_sample(&f, FI, FRAMES - 1, &size);
        assert_int_equal(size, 12 * nf[m]);
        for (uint32_t t = 0; t < nf[m]; ++t)
            for (uint32_t k = 0; k < 3; ++k)
                assert_int_equal((int32_t)rd_u32(d + 4 * (3 * t + k)), tris[m][3 * t + 2 - k]);
        d = r_sample(&f, FC, 0, &size);
        assert_int_equal(size, 4 * nf[m]);
        for (uint32_t t = 0; t < nf[m]; ++t) assert_int_equal(rd_u32(d + 4 * t), 3);
        /* One triangle: .faceCounts has one element, "scalar-like" (3). */
        assert_int_equal(FC->kind, m == 1 ? 3 : 2);
        /* P, N and bounds of every frame. */
        for (uint32_t fr = 0; fr < FRAMES; ++fr) {
            const float *p = pos[fr] + 3 * first_v[m];
            d = r_sample(&f, P, fr, &size);
            assert_int_equal(size, 12 * nv[m]);
            for (uint32_t i = 0; i < 3 * nv[m]; ++i) assert_true(rd_f32(d + 4 * i) == p[i]);
            d = r_sample(&f, N, fr, &size);
            for (uint32_t i = 0; i < 3 * nv[m]; ++i)
                assert_true(rd_f32(d + 4 * i) == nrm[fr][3 * first_v[m] + i]);
            d = r_sample(&f, B, fr, &size);
            assert_int_equal(size, 48);
            for (int k = 0; k < 3; ++k) {
                double lo = INFINITY, hi = -INFINITY;
                for (uint32_t v = 0; v < nv[m]; ++v) {
                    lo = fmin(lo, p[3 * v + k]);
                    hi = fmax(hi, p[3 * v + k]);
                }
                assert_true(rd_f64(d + 8 * k) == lo);
                assert_true(rd_f64(d + 24 + 8 * k) == hi);
            }
        }
        if (m == 0) {
            assert_non_null(UV);
            r_metadata(&f, UV->md, mdtext, sizeof mdtext);
            assert_non_null(strstr(mdtext, "geoScope=fvr"));
            d = r_sample(&f, UV, 2, &size);
            assert_int_equal(size, 6 * 8);
            for (uint32_t c = 0; c < 6; ++c) {
                int32_t v = QUAD_TRIS[3 * (c / 3) + 2 - c % 3];
                assert_true(rd_f32(d + 8 * c) == QUAD_UV[2 * v]);
                assert_true(rd_f32(d + 8 * c + 4) == QUAD_UV[2 * v + 1]);
            }
        } else {
            assert_null(UV);
        }
        /* Identity Xform: a matrix op, constant, no isNotConstantIdentity. */
        rprop x[MAX_ITEMS];
        size_t nx = r_schema(&f, xforms[m].group, ".xform", x);
        const rprop *ops = find_prop(x, nx, ".ops"), *vals = find_prop(x, nx, ".vals");
        assert_non_null(ops);
        assert_non_null(vals);
        assert_null(find_prop(x, nx, "isNotConstantIdentity"));
        assert_null(find_prop(x, nx, ".animChans"));
        d = r_sample(&f, ops, 0, &size);
        assert_int_equal(size, 1);
        assert_int_equal(d[0], 0x30);
        assert_true(vals->info & 0x800);
        d = r_sample(&f, vals, 1, &size);
        assert_int_equal(size, 128);
        for (int c = 0; c < 16; ++c) assert_true(rd_f64(d + 8 * c) == (c % 5 == 0 ? 1.0 : 0.0));
    }
    free(f.b);
    free(tmp);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

/* Repeated samples: a constant mesh is stored once and flagged; a mesh
 * that holds still for a while, moves, holds again stores each change once
 * with its first/last changed samples; duplicate names become unique. */
static void test_sample_storage_rules(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "rules.abc");
    ssk_abc_mesh_desc md[2];
    ssk_abc_desc desc = two_mesh_desc(md, "same", "same", 0);
    ssk_abc_writer *w = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_OK);
    /* Quad (mesh 0): frames 0,1 = A; 2,3 = B; 4,5,6 = C.
     * Triangle (mesh 1): the same every frame. */
    enum { FRAMES = 7 };
    const uint32_t shape_of[FRAMES] = {0, 0, 1, 1, 2, 2, 2};
    float p[ALL_V * 3];
    for (uint32_t fr = 0; fr < FRAMES; ++fr) {
        frame_positions(p, 0);
        for (uint32_t i = 0; i < QUAD_V * 3; ++i) p[i] += (float)shape_of[fr];
        assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, NULL, &err), SSK_OK);
    }
    assert_int_equal(ssk_abc_writer_finish(w, &err), SSK_OK);

    rfile f;
    rfile_load(&f, path);
    robj xforms[MAX_ITEMS], shapes[MAX_ITEMS];
    assert_int_equal(r_objects(&f, r_root(&f, 2), xforms), 2);
    assert_string_equal(xforms[0].name, "same");
    assert_string_equal(xforms[1].name, "same_1");
    rprop g[MAX_ITEMS];
    size_t size;
    r_objects(&f, xforms[0].group, shapes);
    size_t ng = r_schema(&f, shapes[0].group, ".geom", g);
    const rprop *P = find_prop(g, ng, "P");
    assert_int_equal(P->n, FRAMES);
    /* A; then from the first change (2) to the last (4): B, B again (the
     * repeat at 3, back-filled when C arrives, pointing at B's block), C.
     * Frames 5, 6 repeat the last stored sample. */
    assert_int_equal(P->first, 2);
    assert_int_equal(P->last, 4);
    assert_int_equal(stored_count(&f, P), 4);
    assert_true(P->info & 0x200);
    assert_true(r_child(&f, P->group, 2) == r_child(&f, P->group, 4));
    assert_true(r_child(&f, P->group, 0) != r_child(&f, P->group, 2));
    assert_true(r_child(&f, P->group, 4) != r_child(&f, P->group, 6));
    for (uint32_t fr = 0; fr < FRAMES; ++fr) {
        const unsigned char *d = r_sample(&f, P, fr, &size);
        assert_true(rd_f32(d) == p[0] - 2.0f + (float)shape_of[fr]);
    }
    assert_null(find_prop(g, ng, "N"));
    r_objects(&f, xforms[1].group, shapes);
    ng = r_schema(&f, shapes[0].group, ".geom", g);
    P = find_prop(g, ng, "P");
    assert_true(P->info & 0x800);
    assert_int_equal(P->n, FRAMES);
    assert_int_equal(stored_count(&f, P), 1);
    /* The quad's P has 7 samples: time sampling 1 records 7. */
    const unsigned char *ts = r_data(&f, r_root(&f, 4), &size);
    assert_int_equal(rd_u32(ts + 24), FRAMES);
    free(f.b);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

/* More than 255 samples: header counts take 2 bytes (size hint 1). */
static void test_many_frames_widen_header_fields(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "long.abc");
    ssk_abc_mesh_desc md[2];
    ssk_abc_desc desc = two_mesh_desc(md, "q", "t", 0);
    enum { FRAMES = 300 };
    ssk_abc_writer *w = NULL;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, NULL), SSK_OK);
    float p[ALL_V * 3];
    for (uint32_t fr = 0; fr < FRAMES; ++fr) {
        frame_positions(p, fr);
        assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, NULL, NULL), SSK_OK);
    }
    assert_int_equal(ssk_abc_writer_finish(w, NULL), SSK_OK);
    rfile f;
    rfile_load(&f, path);
    robj xforms[MAX_ITEMS], shapes[MAX_ITEMS];
    r_objects(&f, r_root(&f, 2), xforms);
    r_objects(&f, xforms[1].group, shapes);
    rprop g[MAX_ITEMS];
    size_t size, ng = r_schema(&f, shapes[0].group, ".geom", g);
    const rprop *P = find_prop(g, ng, "P"), *FI = find_prop(g, ng, ".faceIndices");
    assert_int_equal((P->info >> 2) & 3, 1);
    assert_int_equal(P->n, FRAMES);
    assert_int_equal(FI->n, FRAMES);
    assert_int_equal(stored_count(&f, P), FRAMES);
    const unsigned char *d = r_sample(&f, P, 299, &size);
    frame_positions(p, 299);
    assert_true(rd_f32(d + 4) == p[3 * QUAD_V + 1]);
    free(f.b);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

/* Per-frame object matrices: a translation that moves in x and z animates
 * channels 12 and 14 (Alembic's row-vector layout) and marks the Xform
 * not constant identity. */
static void test_animated_object_matrix(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "xform.abc");
    ssk_abc_mesh_desc md[2];
    ssk_abc_desc desc = two_mesh_desc(md, "q", "t", 0);
    float rest[16];
    tu_mat4_translation(rest, 1.0f, 2.0f, 3.0f);
    md[1].object_matrix = rest;
    ssk_abc_writer *w = NULL;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, NULL), SSK_OK);
    float p[ALL_V * 3], mats[2][16];
    frame_positions(p, 0);
    for (int fr = 0; fr < 3; ++fr) {
        tu_mat4_translation(mats[0], 0.5f * (float)fr, 0.0f, -1.0f * (float)fr);
        memcpy(mats[1], rest, sizeof rest);
        assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, &mats[0][0], NULL), SSK_OK);
    }
    assert_int_equal(ssk_abc_writer_finish(w, NULL), SSK_OK);

    rfile f;
    rfile_load(&f, path);
    robj xforms[MAX_ITEMS];
    r_objects(&f, r_root(&f, 2), xforms);
    rprop x[MAX_ITEMS];
    size_t size, nx = r_schema(&f, xforms[0].group, ".xform", x);
    const rprop *vals = find_prop(x, nx, ".vals"), *chans = find_prop(x, nx, ".animChans");
    assert_non_null(find_prop(x, nx, "isNotConstantIdentity"));
    assert_non_null(chans);
    assert_int_equal(vals->n, 3);
    assert_false(vals->info & 0x800);
    for (uint32_t fr = 0; fr < 3; ++fr) {
        const unsigned char *d = r_sample(&f, vals, fr, &size);
        assert_true(rd_f64(d + 8 * 12) == 0.5 * fr);
        assert_true(rd_f64(d + 8 * 13) == 0.0);
        assert_true(rd_f64(d + 8 * 14) == -1.0 * fr);
        assert_true(rd_f64(d + 8 * 3) == 0.0 && rd_f64(d + 8 * 15) == 1.0);
    }
    const unsigned char *d = r_sample(&f, chans, 0, &size);
    assert_int_equal(size, 8);
    assert_int_equal(rd_u32(d), 12);
    assert_int_equal(rd_u32(d + 4), 14);
    /* The second mesh: constant, not identity (translation 1, 2, 3). */
    nx = r_schema(&f, xforms[1].group, ".xform", x);
    vals = find_prop(x, nx, ".vals");
    assert_true(vals->info & 0x800);
    assert_non_null(find_prop(x, nx, "isNotConstantIdentity"));
    assert_null(find_prop(x, nx, ".animChans"));
    d = r_sample(&f, vals, 2, &size);
    assert_true(rd_f64(d + 8 * 12) == 1.0 && rd_f64(d + 8 * 13) == 2.0 &&
                rd_f64(d + 8 * 14) == 3.0);
    free(f.b);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

/* A NaN in the LAST mesh of a frame is found before the first mesh's
 * samples are written: every mesh keeps exactly the good frames. */
static void test_nonfinite_rejected_before_writing(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "nan.abc");
    ssk_abc_mesh_desc md[2];
    ssk_abc_desc desc = two_mesh_desc(md, "q", "t", 1);
    ssk_abc_writer *w = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_OK);
    float p[ALL_V * 3], n[ALL_V * 3], bad[ALL_V * 3], mats[32];
    frame_positions(p, 0);
    frame_normals(n, 0);
    assert_int_equal(ssk_abc_writer_write_frame(w, p, n, NULL, &err), SSK_OK);

    frame_positions(bad, 1);
    bad[ALL_V * 3 - 2] = NAN;
    assert_int_equal(ssk_abc_writer_write_frame(w, bad, n, NULL, &err), SSK_ERROR_NONFINITE);
    assert_non_null(strstr(err.message, "vertex 6"));
    frame_positions(bad, 1);
    frame_normals(bad, 1);
    bad[ALL_V * 3 - 1] = INFINITY;
    frame_positions(p, 1);
    assert_int_equal(ssk_abc_writer_write_frame(w, p, bad, NULL, &err), SSK_ERROR_NONFINITE);
    for (int i = 0; i < 32; ++i) mats[i] = (i % 5 == 0);
    mats[16 + 3] = NAN;
    assert_int_equal(ssk_abc_writer_write_frame(w, p, n, mats, &err), SSK_ERROR_NONFINITE);
    assert_non_null(strstr(err.message, "object matrix 1"));
    /* Still usable. */
    assert_int_equal(ssk_abc_writer_write_frame(w, p, n, NULL, &err), SSK_OK);
    assert_int_equal(ssk_abc_writer_finish(w, &err), SSK_OK);

    rfile f;
    rfile_load(&f, path);
    robj xforms[MAX_ITEMS], shapes[MAX_ITEMS];
    r_objects(&f, r_root(&f, 2), xforms);
    for (int m = 0; m < 2; ++m) {
        r_objects(&f, xforms[m].group, shapes);
        rprop g[MAX_ITEMS];
        size_t size, ng = r_schema(&f, shapes[0].group, ".geom", g);
        const rprop *P = find_prop(g, ng, "P"), *N = find_prop(g, ng, "N");
        const rprop *B = find_prop(g, ng, ".selfBnds");
        assert_int_equal(P->n, 2);
        assert_int_equal(N->n, 2);
        assert_int_equal(B->n, 2);
        assert_int_equal(stored_count(&f, P), 2);
        const unsigned char *d = r_sample(&f, P, 1, &size);
        assert_true(rd_f32(d + 4) == p[3 * (m ? QUAD_V : 0) + 1]);
    }
    free(f.b);
    /* Aborting after a rejected frame leaves no file. */
    char *path2 = tu_path_join(dir, "nan2.abc");
    assert_int_equal(ssk_abc_writer_open(&w, path2, &desc, &err), SSK_OK);
    assert_int_equal(ssk_abc_writer_write_frame(w, bad, n, NULL, &err), SSK_ERROR_NONFINITE);
    ssk_abc_writer_abort(w);
    assert_false(tu_file_exists(path2));
    assert_int_equal(tu_dir_entry_count(dir), 1);
    free(path2);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_invalid_arguments_leave_nothing(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "x.abc");
    ssk_abc_mesh_desc md[2];
    ssk_abc_desc desc = two_mesh_desc(md, "q", "t", 0);
    ssk_error err = {0};
    ssk_abc_writer *w = (ssk_abc_writer *)&err; /* must be reset to NULL */
    assert_int_equal(ssk_abc_writer_open(NULL, path, &desc, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_abc_writer_open(&w, NULL, &desc, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(w);
    assert_int_equal(ssk_abc_writer_open(&w, path, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_abc_writer_open(&w, "", &desc, &err), SSK_ERROR_INVALID_ARGUMENT);

    ssk_abc_desc d = desc;
    d.mesh_count = 0;
    assert_int_equal(ssk_abc_writer_open(&w, path, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    d = desc;
    d.fps = 0.0;
    assert_int_equal(ssk_abc_writer_open(&w, path, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    d.fps = NAN;
    assert_int_equal(ssk_abc_writer_open(&w, path, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    d = desc;
    d.start_time = INFINITY;
    assert_int_equal(ssk_abc_writer_open(&w, path, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    d = desc;
    d.application = "a=b";
    assert_int_equal(ssk_abc_writer_open(&w, path, &d, &err), SSK_ERROR_INVALID_ARGUMENT);
    d = desc;
    d.date_written = "x;y";
    assert_int_equal(ssk_abc_writer_open(&w, path, &d, &err), SSK_ERROR_INVALID_ARGUMENT);

    md[1].vertex_count = 0;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_ERROR_EMPTY_MESH);
    md[1].vertex_count = TRI_V;
    const int32_t bad_tri[3] = {0, 1, 3};
    md[1].triangles = bad_tri;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_ERROR_TRIANGLE_INDEX);
    assert_non_null(strstr(err.message, "index 3"));
    md[1].triangles = NULL;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_ERROR_INVALID_ARGUMENT);
    md[1].triangles = TRI_TRIS;
    float uv[8];
    memcpy(uv, QUAD_UV, sizeof uv);
    uv[5] = NAN;
    md[0].uvs = uv;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_ERROR_NONFINITE);
    md[0].uvs = QUAD_UV;
    float nan_matrix[16] = {NAN};
    md[0].object_matrix = nan_matrix;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_ERROR_NONFINITE);
    md[0].object_matrix = NULL;
    assert_null(w);
    assert_int_equal(tu_dir_entry_count(dir), 0);

    /* Normals against with_normals, NULL arguments; finish without a frame
     * fails and removes the file. */
    float p[ALL_V * 3], n[ALL_V * 3];
    frame_positions(p, 0);
    frame_normals(n, 0);
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_OK);
    assert_int_equal(ssk_abc_writer_write_frame(w, p, n, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_abc_writer_write_frame(w, NULL, NULL, NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_abc_writer_write_frame(NULL, p, NULL, NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_abc_writer_finish(w, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "no frame"));
    assert_int_equal(tu_dir_entry_count(dir), 0);
    desc.with_normals = 1;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_OK);
    assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    ssk_abc_writer_abort(w);
    ssk_abc_writer_abort(NULL);
    assert_int_equal(ssk_abc_writer_finish(NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tu_dir_entry_count(dir), 0);

    /* A missing directory. */
    char *missing = tu_path_join(dir, "no-such-dir/x.abc");
    assert_int_equal(ssk_abc_writer_open(&w, missing, &desc, &err), SSK_ERROR_IO);
    assert_non_null(strstr(err.message, strerror(ENOENT)));
    assert_null(w);
    free(missing);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

static void test_abort_keeps_existing_file_and_finish_replaces_it(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "old.abc");
    FILE *old = fopen(path, "wb");
    assert_non_null(old);
    fputs("old contents", old);
    fclose(old);
    ssk_abc_mesh_desc md[2];
    ssk_abc_desc desc = two_mesh_desc(md, "q", "t", 0);
    float p[ALL_V * 3];
    frame_positions(p, 0);
    ssk_abc_writer *w = NULL;
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, NULL), SSK_OK);
    assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, NULL, NULL), SSK_OK);
    ssk_abc_writer_abort(w);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, (off_t)strlen("old contents"));
    assert_int_equal(tu_dir_entry_count(dir), 1);
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, NULL), SSK_OK);
    assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, NULL, NULL), SSK_OK);
    assert_int_equal(ssk_abc_writer_finish(w, NULL), SSK_OK);
    rfile f;
    rfile_load(&f, path); /* a complete archive now */
    free(f.b);
    assert_int_equal(tu_dir_entry_count(dir), 1);

    /* Rename onto a non-empty directory fails: the temporary is removed. */
    char *taken = tu_path_join(dir, "taken.abc");
    assert_int_equal(mkdir(taken, 0700), 0);
    char *inner = tu_path_join(taken, "keep");
    FILE *k = fopen(inner, "wb");
    assert_non_null(k);
    fclose(k);
    ssk_error err = {0};
    assert_int_equal(ssk_abc_writer_open(&w, taken, &desc, &err), SSK_OK);
    assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, NULL, &err), SSK_OK);
    assert_int_equal(ssk_abc_writer_finish(w, &err), SSK_ERROR_IO);
    assert_non_null(strstr(err.message, taken));
    assert_int_equal(tu_dir_entry_count(dir), 2); /* old.abc and the directory */
    remove(inner);
    rmdir(taken);
    free(inner);
    free(taken);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

/* RLIMIT_FSIZE stands in for a full disk (tu_file_size_limit_begin: EFBIG
 * past the limit, for root too). `points` vertices in one mesh, `frames` frames.
 * Returns the first failing status; *in_write tells where it failed. */
static ssk_status write_under_limit(const char *path, rlim_t limit, uint32_t points,
                                    uint32_t frames, bool *in_write, ssk_error *err)
{
    float *p = malloc(sizeof(float) * points * 3);
    assert_non_null(p);
    for (uint32_t i = 0; i < points * 3; ++i) p[i] = (float)i;
    ssk_abc_mesh_desc m = {"m", points, 0, NULL, NULL, NULL};
    ssk_abc_desc desc = {&m, 1, 24.0, 0.0, 0, NULL, NULL};
    tu_file_size_limit saved;
    tu_file_size_limit_begin(&saved, limit);

    ssk_abc_writer *w = NULL;
    ssk_status s = ssk_abc_writer_open(&w, path, &desc, err);
    *in_write = false;
    for (uint32_t f = 0; s == SSK_OK && f < frames; ++f) {
        p[0] = (float)f; /* every frame differs: all are written */
        s = ssk_abc_writer_write_frame(w, p, NULL, NULL, err);
        if (s != SSK_OK) *in_write = true;
    }
    if (s == SSK_OK) {
        s = ssk_abc_writer_finish(w, err);
    } else if (w) {
        ssk_error finish_err = {0};
        /* A frame after the failure is refused; finish fails and cleans up. */
        assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, NULL, &finish_err),
                         SSK_ERROR_IO);
        assert_int_equal(ssk_abc_writer_finish(w, &finish_err), SSK_ERROR_IO);
    }
    tu_file_size_limit_end(&saved);
    free(p);
    return s;
}

static void test_full_disk_leaves_no_file(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "full.abc");
    ssk_error err = {0};
    bool in_write = false;
    /* Samples larger than the stdio buffer (1 MiB): the failure shows in
     * write_frame. */
    ssk_status s = write_under_limit(path, 2u << 20, 200000, 3, &in_write, &err);
    assert_int_equal(s, SSK_ERROR_IO);
    assert_true(in_write);
    assert_non_null(strstr(err.message, strerror(EFBIG)));
    assert_int_equal(tu_dir_entry_count(dir), 0);
    /* Small samples stay buffered: the failure shows at finish. */
    s = write_under_limit(path, 200, 10, 2, &in_write, &err);
    assert_int_equal(s, SSK_ERROR_IO);
    assert_false(in_write);
    assert_non_null(strstr(err.message, path));
    assert_int_equal(tu_dir_entry_count(dir), 0);
    /* Control: the same with room succeeds. */
    s = write_under_limit(path, 1u << 20, 10, 2, &in_write, &err);
    assert_int_equal(s, SSK_OK);
    assert_int_equal(tu_dir_entry_count(dir), 1);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

/* Peak resident set (KiB on Linux). */
static long peak_rss_kib(void)
{
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

/* 1M vertices x 100 frames = 1.2 GB of P: the writer streams it, so the
 * peak resident set grows by far less than the data. */
static void test_bounded_memory_1m_vertices_100_frames(void **state)
{
    (void)state;
    enum { POINTS = 1000000, FRAMES = 100 };
    const long limit_kib = 200 * 1024; /* 200 MiB, 1/6 of the data */
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "big.abc");
    float *p = malloc(sizeof(float) * POINTS * 3);
    assert_non_null(p);
    for (size_t i = 0; i < (size_t)POINTS * 3; ++i) p[i] = (float)(i % 1000) * 0.001f;
    int32_t *tris = malloc(sizeof(int32_t) * 3 * (POINTS - 2));
    assert_non_null(tris);
    for (int32_t t = 0; t < POINTS - 2; ++t) {
        tris[3 * t] = t;
        tris[3 * t + 1] = t + 1;
        tris[3 * t + 2] = t + 2;
    }
    ssk_abc_mesh_desc m = {"big", POINTS, POINTS - 2, tris, NULL, NULL};
    ssk_abc_desc desc = {&m, 1, 24.0, 0.0, 0, NULL, NULL};
    long before = peak_rss_kib();
    ssk_abc_writer *w = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_abc_writer_open(&w, path, &desc, &err), SSK_OK);
    for (uint32_t f = 0; f < FRAMES; ++f) {
        p[3 * (f * 9973u % POINTS)] += 1.0f; /* a different sample each frame */
        assert_int_equal(ssk_abc_writer_write_frame(w, p, NULL, NULL, &err), SSK_OK);
    }
    assert_int_equal(ssk_abc_writer_finish(w, &err), SSK_OK);
    long after = peak_rss_kib();
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    /* Every frame is in the file. */
    assert_true(st.st_size > (off_t)FRAMES * POINTS * 12);
    print_message("abc 1M x 100: file %.0f MB, peak RSS %ld -> %ld KiB (+%ld KiB)\n",
                  (double)st.st_size / 1e6, before, after, after - before);
    assert_true(after - before < limit_kib);
    free(tris);
    free(p);
    free(path);
    tu_remove_tree(dir);
    free(dir);
}

/* ssk_scene_bake to .abc: the P samples equal the .pc2 of the same bake;
 * with_normals is refused for .pc2 before any file exists. */
static void test_bake_abc_matches_pc2(void **state)
{
    (void)state;
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&scene, MODEL_PATH, &err), SSK_OK);
    char *dir = tu_temp_dir();
    char *abc = tu_path_join(dir, "bake.ABC"), *pc2 = tu_path_join(dir, "bake.pc2");
    ssk_bake_desc d = {0};
    d.output_path = pc2;
    d.method = SSK_METHOD_LBS;
    d.backend = SSK_BACKEND_CPU;
    d.fps = 24.0;
    d.first_frame = 3;
    d.last_frame = 9;
    d.with_normals = 1;
    assert_int_equal(ssk_scene_bake(scene, &d, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tu_dir_entry_count(dir), 0);
    d.with_normals = 0;
    ssk_bake_stats stats;
    assert_int_equal(ssk_scene_bake(scene, &d, &stats, &err), SSK_OK);
    d.output_path = abc; /* extension in any case */
    d.with_normals = 1;
    assert_int_equal(ssk_scene_bake(scene, &d, &stats, &err), SSK_OK);
    assert_int_equal(stats.frame_count, 7);

    rfile pf;
    rfile_load(&pf, abc);
    FILE *fp = fopen(pc2, "rb");
    assert_non_null(fp);
    unsigned char h[32];
    assert_int_equal(fread(h, 1, 32, fp), 32);
    uint32_t points = rd_u32(h + 16);
    float *cache = malloc((size_t)points * 12 * 7);
    assert_non_null(cache);
    assert_int_equal(fread(cache, 12, (size_t)points * 7, fp), (size_t)points * 7);
    fclose(fp);

    robj xforms[MAX_ITEMS], shapes[MAX_ITEMS];
    size_t nm = r_objects(&pf, r_root(&pf, 2), xforms);
    const ssk_rig *rig = ssk_scene_rig(scene);
    assert_int_equal(nm, ssk_rig_mesh_count(rig));
    uint32_t row = 0;
    for (size_t m = 0; m < nm; ++m) {
        ssk_mesh_view v;
        assert_int_equal(ssk_rig_mesh(rig, (uint32_t)m, &v, &err), SSK_OK);
        assert_string_equal(xforms[m].name, v.name);
        r_objects(&pf, xforms[m].group, shapes);
        rprop g[MAX_ITEMS];
        size_t size, ng = r_schema(&pf, shapes[0].group, ".geom", g);
        const rprop *P = find_prop(g, ng, "P");
        assert_non_null(find_prop(g, ng, "N"));
        assert_non_null(find_prop(g, ng, "uv"));
        assert_int_equal(P->n, 7);
        for (uint32_t fr = 0; fr < 7; ++fr) {
            const unsigned char *s = r_sample(&pf, P, fr, &size);
            assert_int_equal(size, 12 * v.vertex_count);
            assert_memory_equal(s, cache + ((size_t)fr * points + row) * 3, size);
        }
        row += v.vertex_count;
    }
    assert_int_equal(row, points);
    size_t size;
    const unsigned char *ts = r_data(&pf, r_root(&pf, 4), &size);
    assert_true(rd_f64(ts + 40) == 3.0 / 24.0);
    /* issue #19: a DQS bake of the same frames has other hashes (abcdiff
     * tells them apart through them); the same LBS bake again the same */
    char *dqs = tu_path_join(dir, "dqs.abc"), *again = tu_path_join(dir, "again.abc");
    d.output_path = dqs;
    d.method = SSK_METHOD_DQS;
    assert_int_equal(ssk_scene_bake(scene, &d, &stats, &err), SSK_OK);
    d.output_path = again;
    d.method = SSK_METHOD_LBS;
    assert_int_equal(ssk_scene_bake(scene, &d, &stats, &err), SSK_OK);
    rfile qf, af;
    rfile_load(&qf, dqs);
    rfile_load(&af, again);
    const unsigned char *top = r_object_hashes(&pf, r_root(&pf, 2));
    assert_memory_not_equal(top, r_object_hashes(&qf, r_root(&qf, 2)), HASH_BYTES);
    assert_memory_equal(top, r_object_hashes(&af, r_root(&af, 2)), HASH_BYTES);
    free(qf.b);
    free(af.b);
    free(dqs);
    free(again);
    free(cache);
    free(pf.b);
    free(abc);
    free(pc2);
    tu_remove_tree(dir);
    free(dir);
    ssk_scene_destroy(scene);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_murmur3_verification_value),
        cmocka_unit_test(test_spooky_v2_matches_the_reference),
        cmocka_unit_test(test_object_hashes_match_the_reference),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_sample_storage_rules),
        cmocka_unit_test(test_many_frames_widen_header_fields),
        cmocka_unit_test(test_animated_object_matrix),
        cmocka_unit_test(test_nonfinite_rejected_before_writing),
        cmocka_unit_test(test_invalid_arguments_leave_nothing),
        cmocka_unit_test(test_abort_keeps_existing_file_and_finish_replaces_it),
        cmocka_unit_test(test_full_disk_leaves_no_file),
        cmocka_unit_test(test_bounded_memory_1m_vertices_100_frames),
        cmocka_unit_test(test_bake_abc_matches_pc2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
