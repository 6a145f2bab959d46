/*
 * test_threads.c — the CPU backend's threading policy (issue #17,
 * core/model/parallel.c): the same bits with one thread and with several,
 * spinning or sleeping at once (the host setting); every chunk of a loop
 * runs exactly once; loops inside loops run inline; bad settings are
 * refused with a message.
 *
 * The reference of each comparison is the same computation on one thread
 * (ssk_threading_set threads = 1: every chunk on the caller, in order).
 */
#include "testutil.h"

#include "model/parallel.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 480 rings of 48: 23,040 vertices, 6 chunks of SSK_PARALLEL_GRAIN rows;
 * 4 bones, so the multilevel solver has several slab levels per bone. */
#define RINGS 480u
#define SEGMENTS 48u
#define BONES 4u

static void set_threads(uint32_t threads, uint32_t spin)
{
    ssk_threading t = {threads, spin};
    ssk_error err = {0};
    if (ssk_threading_set(&t, &err) != SSK_OK) fail_msg("threading: %s", err.message);
}

/* A bend of every joint plus a twist of the last bone, row-major. */
static void limb_pose(float *skin, const ssk_rig *rig, float amount)
{
    const float z[3] = {0.0f, 0.0f, 1.0f}, y[3] = {0.0f, 1.0f, 0.0f};
    float parent[16];
    tu_mat4_identity(parent);
    for (uint32_t b = 0; b < ssk_rig_bone_count(rig); ++b) {
        const float pivot[3] = {0.0f, 2.0f * (float)b / BONES, 0.0f};
        float local[16], world[16];
        tu_mat4_rotation(local, b + 1 == BONES ? y : z, b + 1 == BONES ? 2.5f * amount : amount,
                         pivot);
        tu_mat4_mul(world, parent, local);
        memcpy(skin + 16 * b, world, sizeof world);
        memcpy(parent, world, sizeof world);
    }
}

/* #V by 3 positions of `method` (a fresh CPU deformer: its spring, if
 * any, is made with the threading in force) at the pose. */
static float *deform_with(const ssk_rig *rig, ssk_method method, float amount)
{
    const uint32_t nv = ssk_rig_vertex_count(rig), nb = ssk_rig_bone_count(rig);
    float *skin = malloc(16 * (size_t)nb * sizeof(float));
    float *out = malloc(3 * (size_t)nv * sizeof(float));
    assert_non_null(skin);
    assert_non_null(out);
    limb_pose(skin, rig, amount);
    tu_deform(out, rig, method, skin);
    free(skin);
    return out;
}

/* LBS, DQS, IRS and the default springs (multilevel solver: per-chunk
 * restriction summed in chunk order, the probes, the power iteration)
 * give the same bits on 1, 2 and 4 threads, with and without spinning. */
static void test_same_bits_with_any_thread_count(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(RINGS, SEGMENTS, BONES, 2.0f, 0.25f, 0.3f, 4);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    assert_true(ssk_parallel_chunk_count(nv, SSK_PARALLEL_GRAIN) >= 4);
    static const ssk_method methods[] = {SSK_METHOD_LBS, SSK_METHOD_DQS, SSK_METHOD_IRS,
                                         SSK_METHOD_SPRING};
    static const uint32_t settings[][2] = {{2, 50}, {4, 0}, {3, 1000}};
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; ++m) {
        set_threads(1, 0);
        float *reference = deform_with(rig, methods[m], 0.9f);
        for (size_t s = 0; s < sizeof settings / sizeof settings[0]; ++s) {
            set_threads(settings[s][0], settings[s][1]);
            ssk_threading in_use;
            ssk_threading_get(&in_use);
            assert_int_equal(in_use.threads, settings[s][0]);
            float *out = deform_with(rig, methods[m], 0.9f);
            if (memcmp(out, reference, 3 * (size_t)nv * sizeof(float)) != 0)
                fail_msg("%s: %u threads, spin %u us: differs from 1 thread by %g",
                         ssk_method_name(methods[m]), settings[s][0], settings[s][1],
                         tu_max_abs_diff(out, reference, 3 * (size_t)nv));
            free(out);
        }
        free(reference);
    }
    set_threads(0, SSK_THREADING_DEFAULT_SPIN_MICROSECONDS);
    ssk_rig_destroy(rig);
}

/* The binding and the centers of rotation (bind-time loops: per-chunk
 * report sums, per-thread scratch of the CoR search) on 1 and 4 threads. */
static void test_binding_and_cor_same_bits(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(RINGS, SEGMENTS, BONES, 2.0f, 0.25f, 0.3f, 4);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    bp.compute_cor = 1;
    ssk_binding *b[2] = {NULL, NULL};
    ssk_binding_report report[2];
    for (int k = 0; k < 2; ++k) {
        set_threads(k ? 4 : 1, 50);
        ssk_error err = {0};
        if (ssk_binding_create(&b[k], rig, &bp, &err) != SSK_OK) fail_msg("bind: %s", err.message);
        if (ssk_binding_report_compute(&report[k], b[k], rig, &err) != SSK_OK)
            fail_msg("report: %s", err.message);
    }
    ssk_binding_view v[2];
    for (int k = 0; k < 2; ++k) assert_int_equal(ssk_binding_get(b[k], &v[k], NULL), SSK_OK);
    assert_memory_equal(v[0].bones, v[1].bones, nv * sizeof(int32_t));
    assert_memory_equal(v[0].t, v[1].t, nv * sizeof(float));
    assert_memory_equal(v[0].scale_vectors, v[1].scale_vectors, 3 * (size_t)nv * sizeof(float));
    assert_non_null(v[0].cor_centers);
    assert_memory_equal(v[0].cor_centers, v[1].cor_centers, 3 * (size_t)nv * sizeof(float));
    assert_memory_equal(v[0].cor_flags, v[1].cor_flags, nv);
    assert_true(report[0].mean_scale_length == report[1].mean_scale_length);
    assert_true(report[0].max_attachment_gap == report[1].max_attachment_gap);
    for (int k = 0; k < 2; ++k) ssk_binding_destroy(b[k]);
    set_threads(0, SSK_THREADING_DEFAULT_SPIN_MICROSECONDS);
    ssk_rig_destroy(rig);
}

/* Every chunk once, the right bounds; a loop inside a chunk runs inline. */
typedef struct count_job {
    atomic_int *hits;
    int64_t n, grain;
    atomic_int bad, inner;
} count_job;

static void inner_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    count_job *j = ctx;
    (void)chunk;
    atomic_fetch_add(&j->inner, (int)(end - begin));
}

static void count_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    count_job *j = ctx;
    const int64_t b = (int64_t)chunk * j->grain;
    if (begin != b || end != (b + j->grain < j->n ? b + j->grain : j->n))
        atomic_store(&j->bad, 1);
    atomic_fetch_add(&j->hits[chunk], 1);
    if (chunk == 0) ssk_parallel_for(100, 7, inner_chunk, j);
}

static void test_every_chunk_exactly_once(void **state)
{
    (void)state;
    static const uint32_t threads[] = {1, 2, 8};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; ++t) {
        set_threads(threads[t], t == 1 ? 0 : 50);
        for (int64_t n = 0; n < 3000; n += 997) {
            const int64_t grain = 13;
            const uint32_t chunks = ssk_parallel_chunk_count(n, grain);
            atomic_int *hits = calloc(chunks + 1, sizeof *hits);
            count_job j = {hits, n, grain, 0, 0};
            for (int rep = 0; rep < 50; ++rep) ssk_parallel_for(n, grain, count_chunk, &j);
            for (uint32_t c = 0; c < chunks; ++c) assert_int_equal(atomic_load(&hits[c]), 50);
            assert_int_equal(atomic_load(&j.bad), 0);
            assert_int_equal(atomic_load(&j.inner), chunks ? 50 * 100 : 0);
            free(hits);
        }
    }
    set_threads(0, SSK_THREADING_DEFAULT_SPIN_MICROSECONDS);
}

static void test_bad_settings_are_refused(void **state)
{
    (void)state;
    ssk_error err = {0};
    ssk_threading t;
    ssk_threading_default(&t);
    assert_int_equal(t.threads, 0);
    assert_int_equal(t.spin_microseconds, SSK_THREADING_DEFAULT_SPIN_MICROSECONDS);
    assert_int_equal(ssk_threading_set(NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    t.threads = 257;
    assert_int_equal(ssk_threading_set(&t, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "threads = 257"));
    t.threads = 2;
    t.spin_microseconds = 2000000;
    assert_int_equal(ssk_threading_set(&t, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "spin_microseconds = 2000000"));
    /* nothing changed */
    ssk_threading in_use;
    ssk_threading_get(&in_use);
    assert_int_equal(in_use.spin_microseconds, SSK_THREADING_DEFAULT_SPIN_MICROSECONDS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bits_with_any_thread_count),
        cmocka_unit_test(test_binding_and_cor_same_bits),
        cmocka_unit_test(test_every_chunk_exactly_once),
        cmocka_unit_test(test_bad_settings_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
