/* test_implicit_binding.c — implicit skinning's bind data in the binding
 * (issue #20, Deliver 1; core/bind/binding_io.c format version 3,
 * ssk_bind_params.compute_implicit):
 * - a binding made with compute_implicit, saved and loaded, holds the same
 *   fit bit for bit, saves to the same bytes, and an implicit deformer
 *   given it (made or loaded) deforms a bent limb to the same bits as one
 *   that fits the fields itself (the reference: no binding);
 * - the loaded data is what the deformer uses (a stored fit whose grids
 *   were zeroed, checksum fixed, changes the result), and only when its
 *   key matches: the same zeroed grids under another fit version or fit
 *   parameters give the fresh fit's bits again (a refit), and
 *   ssk_binding_cached with compute_implicit rebinds such a file;
 * - every value of the implicit section is checked on load: bad field
 *   indices, radii, grid values and gradients, grid matrices, coordinate
 *   offsets, neighbors and weights, rest normals, header counts and
 *   parameters, truncations, a flipped bit: SSK_ERROR_IO naming the
 *   problem, never a crash;
 * - a deformer given another rig's binding for an implicit node fails
 *   with SSK_ERROR_BINDING_MISMATCH;
 * - the CLI: `bind --implicit -o B`, then `bake --method implicit
 *   --binding B` writes the same bytes as a bake without a binding, and
 *   says it did not fit again; a binding without implicit data gets them
 *   added. The bakes' times are printed (not asserted). */
#include "testutil.h"

#include "bind/binding.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"

/* The limb of test_implicit_skin.c: 2 bones along +Y. */
#define RINGS 24u
#define SEGMENTS 16u
#define BONES 2u
#define LENGTH 2.0f
#define RADIUS 0.25f
#define BLEND 0.5f
#define INFLUENCES 4u
#define PI_D 3.14159265358979323846

/* The file layout of binding_io.c's header comment, version 3. */
#define V3_HEADER 84u
#define BYTES_PER_VERTEX 20u
#define FIELD_HEAD 76u
#define CHANNELS 4u
#define CHECKSUM 8u

static ssk_implicit_operators *ops;

static int setup(void **state)
{
    (void)state;
    ssk_error err = {0};
    if (ssk_implicit_operators_create(&ops, 0, &err) != SSK_OK) {
        fprintf(stderr, "operators: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ssk_implicit_operators_destroy(ops);
    return 0;
}

static ssk_rig *make_limb(void)
{
    return tu_make_limb(RINGS, SEGMENTS, BONES, LENGTH, RADIUS, BLEND, INFLUENCES);
}

/* The second bone bent 90 degrees about Z at the joint. */
static void bend(float skin[32])
{
    static const float Z[3] = {0, 0, 1}, J[3] = {0, 1, 0};
    tu_mat4_identity(skin);
    tu_mat4_rotation(skin + 16, Z, (float)(PI_D / 2), J);
}

/* The implicit deformer's output of the bent pose with `binding` (NULL:
 * none, the deformer fits the fields itself); malloc'ed #V by 3. */
static float *deform_implicit(const ssk_rig *rig, const ssk_binding *binding)
{
    ssk_deformer *d = NULL;
    ssk_error err = {0};
    ssk_deformer_desc desc = {.method = SSK_METHOD_IMPLICIT, .backend = SSK_BACKEND_CPU,
                              .binding = binding, .implicit_operators = ops};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK)
        fail_msg("implicit deformer: %s", err.message);
    const size_t nv = ssk_rig_vertex_count(rig);
    float *out = malloc(3 * nv * sizeof *out);
    assert_non_null(out);
    float skin[32];
    bend(skin);
    if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK)
        fail_msg("deform: %s", err.message);
    ssk_deformer_destroy(d);
    return out;
}

static ssk_binding *bind_implicit(const ssk_rig *rig)
{
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    params.compute_implicit = 1;
    ssk_binding *b = NULL;
    ssk_error err = {0};
    if (ssk_binding_create(&b, rig, &params, &err) != SSK_OK) fail_msg("bind: %s", err.message);
    return b;
}

/* Whether two fits of a rig of nv vertices and nb bones hold the same bits. */
static bool same_fit(const ssk_implicit_fit *a, const ssk_implicit_fit *b, uint32_t nv,
                     uint32_t nb)
{
    if (a->field_count != b->field_count ||
        memcmp(a->bone_field, b->bone_field, nb * sizeof *a->bone_field) != 0 ||
        memcmp(a->mvc_offsets, b->mvc_offsets, ((size_t)nv + 1) * sizeof *a->mvc_offsets) != 0 ||
        memcmp(a->rest_normals, b->rest_normals, 3 * (size_t)nv * sizeof(float)) != 0)
        return false;
    const uint32_t e = a->mvc_offsets[nv];
    if (memcmp(a->mvc_neighbors, b->mvc_neighbors, e * sizeof(uint32_t)) != 0 ||
        memcmp(a->mvc_weights, b->mvc_weights, e * sizeof(float)) != 0)
        return false;
    for (uint32_t f = 0; f < a->field_count; ++f) {
        const ssk_implicit_field *x = &a->fields[f], *y = &b->fields[f];
        const size_t n = x->resolution;
        if (x->bone != y->bone || memcmp(&x->radius, &y->radius, sizeof x->radius) != 0 ||
            x->resolution != y->resolution || x->sample_count != y->sample_count ||
            memcmp(x->grid_from_rest, y->grid_from_rest, sizeof x->grid_from_rest) != 0 ||
            memcmp(x->samples, y->samples, n * n * n * CHANNELS * sizeof(float)) != 0)
            return false;
    }
    return true;
}

static void putf(unsigned char *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    tu_put_le32(p, u);
}

/* Writes bytes to path with the checksum recomputed (so that the loader's
 * value checks, not the checksum, must catch what was changed). */
static void write_fixed(const char *path, unsigned char *bytes, size_t size)
{
    const uint64_t h = XXH3_64bits(bytes, size - CHECKSUM);
    tu_put_le64(bytes + size - CHECKSUM, h);
    tu_write_file(path, bytes, size);
}

static void expect_load_error(const char *path, const ssk_rig *rig, const char *text)
{
    ssk_binding *b = (ssk_binding *)&b; /* must be reset to NULL */
    ssk_error err = {0};
    assert_int_equal(ssk_binding_load(&b, path, rig, &err), SSK_ERROR_IO);
    assert_null(b);
    printf("expected load error: %s\n", err.message);
    if (!strstr(err.message, text)) fail_msg("'%s' does not contain '%s'", err.message, text);
}

/* Offsets of a version 3 file without CoRs (binding_io.c's layout). */
typedef struct layout {
    size_t section;    /* bone_field */
    size_t field0;     /* the first field's record */
    size_t grid_bytes; /* N^3 * 4 * 4 */
    size_t mvc;        /* mvc_offsets */
    size_t neighbors, weights, normals;
    uint32_t nv, nb, nf, n, entries;
} layout;

static layout layout_of(const unsigned char *bytes)
{
    layout l;
    assert_int_equal(tu_get_le32(bytes + 8), 3);
    l.nv = tu_get_le32(bytes + 32);
    l.nb = tu_get_le32(bytes + 36);
    l.n = tu_get_le32(bytes + 72);
    l.nf = tu_get_le32(bytes + 76);
    l.entries = tu_get_le32(bytes + 80);
    l.section = V3_HEADER + (size_t)BYTES_PER_VERTEX * l.nv;
    l.field0 = l.section + 4 * (size_t)l.nb;
    l.grid_bytes = (size_t)l.n * l.n * l.n * CHANNELS * 4;
    l.mvc = l.field0 + (size_t)l.nf * (FIELD_HEAD + l.grid_bytes);
    l.neighbors = l.mvc + 4 * ((size_t)l.nv + 1);
    l.weights = l.neighbors + 4 * (size_t)l.entries;
    l.normals = l.weights + 4 * (size_t)l.entries;
    return l;
}

/* Saved and loaded: the same fit, the same bytes again, the same deformer
 * output as a deformer that fits the fields itself. */
static void test_saved_and_loaded_is_bit_identical(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "limb.bind"), *again = tu_path_join(dir, "again.bind");
    ssk_rig *rig = make_limb();
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = BONES;
    ssk_binding *made = bind_implicit(rig);
    ssk_binding_view view;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_get(made, &view, &err), SSK_OK);
    assert_true(view.has_implicit && view.implicit_current);
    assert_true(view.params.compute_implicit);
    assert_int_equal(view.implicit_field_count, BONES);
    assert_true(view.implicit_seconds > 0.0);
    printf("limb of %u vertices: implicit fit in the binding in %.3f s\n", nv,
           view.implicit_seconds);
    assert_int_equal(ssk_binding_save(made, path, &err), SSK_OK);

    ssk_binding *loaded = NULL;
    assert_int_equal(ssk_binding_load(&loaded, path, rig, &err), SSK_OK);
    assert_int_equal(ssk_binding_get(loaded, &view, &err), SSK_OK);
    assert_true(view.has_implicit && view.implicit_current && view.params.compute_implicit);
    assert_int_equal(view.implicit_field_count, BONES);
    assert_true(view.implicit_seconds == 0.0);
    assert_true(same_fit(made->implicit, loaded->implicit, nv, nb));
    /* its fit is an independent fit's, bit for bit */
    ssk_implicit_fit fresh = {0};
    assert_int_equal(ssk_implicit_fit_create(&fresh, rig, NULL, &err), SSK_OK);
    assert_true(same_fit(&fresh, loaded->implicit, nv, nb));
    ssk_implicit_fit_free(&fresh);

    /* saved again: the same bytes */
    assert_int_equal(ssk_binding_save(loaded, again, &err), SSK_OK);
    size_t s1, s2;
    unsigned char *b1 = tu_read_file(path, &s1), *b2 = tu_read_file(again, &s2);
    assert_int_equal(s1, s2);
    assert_memory_equal(b1, b2, s1);
    const layout l = layout_of(b1);
    assert_int_equal(s1, l.normals + 12 * (size_t)nv + CHECKSUM);
    free(b1);
    free(b2);

    float *reference = deform_implicit(rig, NULL);
    float *with_made = deform_implicit(rig, made);
    float *with_loaded = deform_implicit(rig, loaded);
    assert_memory_equal(reference, with_made, 3 * (size_t)nv * sizeof(float));
    assert_memory_equal(reference, with_loaded, 3 * (size_t)nv * sizeof(float));
    /* the limb did bend (not a rest pose on both sides) */
    ssk_mesh_view mv;
    assert_int_equal(ssk_rig_mesh(rig, 0, &mv, NULL), SSK_OK);
    assert_true(tu_max_abs_diff(reference, mv.positions, 3 * (size_t)nv) > 0.1);
    free(reference);
    free(with_made);
    free(with_loaded);

    ssk_binding_destroy(made);
    ssk_binding_destroy(loaded);
    ssk_rig_destroy(rig);
    tu_remove_tree(dir);
    free(path);
    free(again);
    free(dir);
}

/* The stored fit is used when its key matches, and refitted otherwise. */
static void test_key_mismatch_refits(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *good = tu_path_join(dir, "good.bind"), *bad = tu_path_join(dir, "bad.bind");
    ssk_rig *rig = make_limb();
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_binding *made = bind_implicit(rig);
    ssk_error err = {0};
    assert_int_equal(ssk_binding_save(made, good, &err), SSK_OK);
    ssk_binding_destroy(made);
    size_t size;
    unsigned char *bytes = tu_read_file(good, &size);
    const layout l = layout_of(bytes);
    /* zero every field's grid: f = 0 and grad f = 0 (valid values) */
    for (uint32_t f = 0; f < l.nf; ++f)
        memset(bytes + l.field0 + (size_t)f * (FIELD_HEAD + l.grid_bytes) + FIELD_HEAD, 0,
               l.grid_bytes);
    float *reference = deform_implicit(rig, NULL);
    const size_t out_bytes = 3 * (size_t)nv * sizeof(float);

    /* current key: the zeroed grids are used, the result changes */
    write_fixed(bad, bytes, size);
    ssk_binding *b = NULL;
    ssk_binding_view view;
    assert_int_equal(ssk_binding_load(&b, bad, rig, &err), SSK_OK);
    assert_int_equal(ssk_binding_get(b, &view, &err), SSK_OK);
    assert_true(view.has_implicit && view.implicit_current);
    float *out = deform_implicit(rig, b);
    assert_true(memcmp(out, reference, out_bytes) != 0);
    free(out);
    ssk_binding_destroy(b);

    /* another fit version, or other fit parameters: refitted, the fresh
     * fit's bits */
    const struct {
        size_t offset;
        uint32_t value;
        const char *what;
    } keys[] = {{60, SSK_IMPLICIT_FIT_VERSION + 1, "fit version"},
                {64, 128, "target_samples"},
                {72, 16, "resolution"}};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; ++k) {
        unsigned char *copy = malloc(size);
        assert_non_null(copy);
        memcpy(copy, bytes, size);
        tu_put_le32(copy + keys[k].offset, keys[k].value);
        size_t copy_size = size;
        if (keys[k].offset == 72) {
            /* another resolution: the grids' size changes; write a file of
             * that size (grids of zeros) */
            const size_t grid = (size_t)16 * 16 * 16 * CHANNELS * 4;
            copy_size = size - (size_t)l.nf * (l.grid_bytes - grid);
            unsigned char *resized = calloc(copy_size, 1);
            assert_non_null(resized);
            size_t at = 0;
            memcpy(resized, copy, l.field0);
            at = l.field0;
            for (uint32_t f = 0; f < l.nf; ++f) {
                memcpy(resized + at, copy + l.field0 + (size_t)f * (FIELD_HEAD + l.grid_bytes),
                       FIELD_HEAD);
                at += FIELD_HEAD + grid;
            }
            memcpy(resized + at, copy + l.mvc, size - l.mvc);
            free(copy);
            copy = resized;
        }
        write_fixed(bad, copy, copy_size);
        free(copy);
        b = NULL;
        if (ssk_binding_load(&b, bad, rig, &err) != SSK_OK)
            fail_msg("%s changed: %s", keys[k].what, err.message);
        assert_int_equal(ssk_binding_get(b, &view, &err), SSK_OK);
        assert_true(view.has_implicit);
        assert_false(view.implicit_current);
        out = deform_implicit(rig, b);
        assert_memory_equal(out, reference, out_bytes);
        printf("%s changed: not used, refitted (the fresh fit's bits)\n", keys[k].what);
        free(out);
        ssk_binding_destroy(b);
    }

    /* the cache: the other version's file is bound again and rewritten;
     * the good file is reused */
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    params.compute_implicit = 1;
    int reused = -1;
    tu_put_le32(bytes + 60, SSK_IMPLICIT_FIT_VERSION + 1);
    write_fixed(bad, bytes, size);
    assert_int_equal(ssk_binding_cached(&b, rig, &params, bad, &reused, &err), SSK_OK);
    assert_int_equal(reused, 0);
    ssk_binding_destroy(b);
    assert_int_equal(ssk_binding_load(&b, bad, rig, &err), SSK_OK);
    assert_int_equal(ssk_binding_get(b, &view, &err), SSK_OK);
    assert_true(view.implicit_current);
    ssk_binding_destroy(b);
    size_t rewritten_size;
    unsigned char *rewritten = tu_read_file(bad, &rewritten_size);
    unsigned char *original = tu_read_file(good, &size);
    assert_int_equal(rewritten_size, size);
    assert_memory_equal(rewritten, original, size);
    free(rewritten);
    free(original);
    assert_int_equal(ssk_binding_cached(&b, rig, &params, good, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_destroy(b);
    /* without compute_implicit a file with implicit data is reused too */
    params.compute_implicit = 0;
    assert_int_equal(ssk_binding_cached(&b, rig, &params, good, &reused, &err), SSK_OK);
    assert_int_equal(reused, 1);
    ssk_binding_destroy(b);

    free(reference);
    free(bytes);
    ssk_rig_destroy(rig);
    tu_remove_tree(dir);
    free(good);
    free(bad);
    free(dir);
}

/* Every value of the implicit section is checked. */
static void test_corrupt_implicit_section(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *good = tu_path_join(dir, "good.bind"), *bad = tu_path_join(dir, "bad.bind");
    ssk_rig *rig = make_limb();
    ssk_binding *made = bind_implicit(rig);
    ssk_error err = {0};
    assert_int_equal(ssk_binding_save(made, good, &err), SSK_OK);
    ssk_binding_destroy(made);
    size_t size;
    unsigned char *bytes = tu_read_file(good, &size);
    const layout l = layout_of(bytes);
    assert_true(l.entries > 0);
    unsigned char *copy = malloc(size);
    assert_non_null(copy);
    const size_t grid0 = l.field0 + FIELD_HEAD;
    const float nan = NAN, inf = INFINITY;
    struct {
        size_t offset;
        int is_float;
        uint32_t u;
        float f;
        const char *text;
    } edits[] = {
        {l.section, 0, 7, 0, "implicit field 7"},
        {l.section, 0, (uint32_t)-1, 0, "1 bones name an implicit field"},
        {l.field0, 0, 5, 0, "implicit field 0 has bone 5"},
        {l.field0 + 4, 1, 0, nan, "radius"},
        {l.field0 + 4, 1, 0, -1.0f, "radius"},
        {l.field0 + 8, 0, 2, 0, "centers"},
        {l.field0 + 12, 1, 0, inf, "grid matrix"},
        {l.field0 + 12 + 60, 1, 0, 2.0f, "grid matrix"},
        {grid0, 1, 0, 1.5f, "grid point 0 has value"},
        {grid0 + 4 * 4 * 5, 1, 0, nan, "grid point 5 has value"},
        {grid0 + 4, 1, 0, inf, "gradient component"},
        {l.mvc, 0, 1, 0, "offset"},
        {l.mvc + 4, 0, 200, 0, "offset"},
        {l.mvc + 4 * (size_t)l.nv, 0, l.entries - 1, 0, "offset"},
        {l.neighbors, 0, l.nv, 0, "neighbor"},
        {l.weights, 1, 0, nan, "weight"},
        {l.normals, 1, 0, 3.0f, "rest normal"},
        {l.normals + 4, 1, 0, nan, "rest normal"},
        {76, 0, l.nb + 1, 0, "at most one per bone"},
        {80, 0, 129 * l.nv, 0, "mean value coordinates"},
        {72, 0, 300, 0, "resolution"},
        {64, 0, 3, 0, "target_samples"},
        {68, 1, 0, nan, "cull_b"},
        {76, 0, l.nf - 1, 0, "with implicit data"},
        {40, 0, 1, 0, "no implicit section"},
        {40, 0, 7, 0, "unknown sections"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; ++i) {
        memcpy(copy, bytes, size);
        if (edits[i].is_float)
            putf(copy + edits[i].offset, edits[i].f);
        else
            tu_put_le32(copy + edits[i].offset, edits[i].u);
        write_fixed(bad, copy, size);
        expect_load_error(bad, rig, edits[i].text);
        expect_load_error(bad, NULL, edits[i].text);
    }
    /* cut inside the header, the section, the grids, the coordinates */
    const size_t cuts[] = {70, l.section + 2, grid0 + 1000, l.mvc + 3, size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; ++i) {
        tu_write_file(bad, bytes, cuts[i]);
        expect_load_error(bad, rig, "truncated");
    }
    /* a flipped bit in a grid, checksum not fixed */
    memcpy(copy, bytes, size);
    copy[grid0 + 4096 + 1] ^= 0x20;
    tu_write_file(bad, copy, size);
    expect_load_error(bad, rig, "checksum");
    free(copy);
    free(bytes);
    ssk_rig_destroy(rig);
    tu_remove_tree(dir);
    free(good);
    free(bad);
    free(dir);
}

/* An implicit deformer given another rig's binding fails. */
static void test_another_rigs_binding_is_refused(void **state)
{
    (void)state;
    ssk_rig *rig = make_limb();
    ssk_rig *other = tu_make_limb(RINGS, SEGMENTS, BONES, LENGTH, 1.5f * RADIUS, BLEND,
                                  INFLUENCES);
    ssk_binding *b = bind_implicit(other);
    ssk_deformer *d = NULL;
    ssk_error err = {0};
    ssk_deformer_desc desc = {.method = SSK_METHOD_IMPLICIT, .backend = SSK_BACKEND_CPU,
                              .binding = b, .implicit_operators = ops};
    assert_int_equal(ssk_deformer_create(&d, rig, &desc, &err), SSK_ERROR_BINDING_MISMATCH);
    assert_null(d);
    printf("expected: %s\n", err.message);
    ssk_binding_destroy(b);
    ssk_rig_destroy(other);
    ssk_rig_destroy(rig);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void expect_same_file(const char *a, const char *b)
{
    size_t sa, sb;
    unsigned char *x = tu_read_file(a, &sa), *y = tu_read_file(b, &sb);
    assert_int_equal(sa, sb);
    assert_memory_equal(x, y, sa);
    free(x);
    free(y);
}

static tu_cli_result cli_ok(const char *dir, const char *const *args)
{
    tu_cli_result r = tu_run_cli(dir, args);
    if (r.exit_code != 0) fail_msg("%s: exit %d: %s", args[0], r.exit_code, r.err);
    return r;
}

/* bind --implicit, then bake --binding: the bytes of a bake without one. */
static void test_cli_bind_then_bake(void **state)
{
    (void)state;
    if (!tu_file_exists(MODEL_PATH)) skip();
    char *dir = tu_temp_dir();
    char *binding = tu_path_join(dir, "bcn.bind"), *plain = tu_path_join(dir, "plain.bind");
    char *ref = tu_path_join(dir, "ref.pc2"), *with = tu_path_join(dir, "with.pc2");
    char *added = tu_path_join(dir, "added.pc2");

    tu_cli_result r = cli_ok(dir, (const char *const[]){"bind", MODEL_PATH, "--implicit", "-o",
                                                         binding, NULL});
    printf("%s", r.out);
    assert_non_null(strstr(r.out, "implicit fields: "));
    tu_cli_result_free(&r);
    /* again: reused */
    r = cli_ok(dir, (const char *const[]){"bind", MODEL_PATH, "--implicit", "-o", binding, NULL});
    assert_non_null(strstr(r.out, "reused"));
    assert_non_null(strstr(r.out, "implicit fields: "));
    tu_cli_result_free(&r);

    double t0 = now();
    r = cli_ok(dir, (const char *const[]){"bake", MODEL_PATH, "-o", ref, "--method", "implicit",
                                          "--backend", "cpu", "--frames", "0:3", NULL});
    const double without = now() - t0;
    tu_cli_result_free(&r);
    t0 = now();
    r = cli_ok(dir, (const char *const[]){"bake", MODEL_PATH, "-o", with, "--method", "implicit",
                                          "--backend", "cpu", "--frames", "0:3", "--binding",
                                          binding, NULL});
    const double with_binding = now() - t0;
    printf("%s", r.out);
    assert_non_null(strstr(r.out, "not fitted again"));
    tu_cli_result_free(&r);
    expect_same_file(ref, with);
    printf("BCN_Epileptic.X, implicit, 4 frames, CPU: bake %.3f s without a binding, %.3f s "
           "with bind --implicit's (process wall time)\n",
           without, with_binding);

    /* a binding without implicit data gets them added, and saved */
    r = cli_ok(dir, (const char *const[]){"bind", MODEL_PATH, "-o", plain, NULL});
    tu_cli_result_free(&r);
    r = cli_ok(dir, (const char *const[]){"bake", MODEL_PATH, "-o", added, "--method", "implicit",
                                          "--backend", "cpu", "--frames", "0:3", "--binding",
                                          plain, NULL});
    printf("%s", r.out);
    assert_non_null(strstr(r.out, "implicit fields"));
    tu_cli_result_free(&r);
    expect_same_file(ref, added);
    ssk_binding *b = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_load(&b, plain, NULL, &err), SSK_OK);
    ssk_binding_view view;
    assert_int_equal(ssk_binding_get(b, &view, &err), SSK_OK);
    assert_true(view.has_implicit && view.implicit_current);
    ssk_binding_destroy(b);

    tu_remove_tree(dir);
    free(binding);
    free(plain);
    free(ref);
    free(with);
    free(added);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saved_and_loaded_is_bit_identical),
        cmocka_unit_test(test_key_mismatch_refits),
        cmocka_unit_test(test_corrupt_implicit_section),
        cmocka_unit_test(test_another_rigs_binding_is_refused),
        cmocka_unit_test(test_cli_bind_then_bake),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
