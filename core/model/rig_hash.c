/* rig_hash.c — the hash of what a binding depends on (ssk_rig_hash): a
 * binding file is keyed by it, so binding an unchanged rig again reuses it.
 *
 * Rig hash (ssk_rig_hash): XXH3_64bits (seed 0) of this byte stream, every
 * value little-endian (int32/uint32/float32 as 4 bytes):
 *   "SSKRIG2\0", uint32 mesh count;
 *   per mesh: uint32 #V, uint32 #F, float32[#V*3] rest positions,
 *             float32[16] object matrix, int32[#F*3] triangles, uint32 K,
 *             int32[#V*K] bone indices, float32[#V*K] normalized weights;
 *   uint32[#V] welded surface point of each vertex (ssk_rig_weld, so a
 *             binding made before welding is never reused);
 *   uint32 #B; per bone: int32 parent, float32[16] bind matrix,
 *             float32[3] head, float32[3] tail.
 * Names are not hashed (renaming a bone does not change a binding). */
#include "model/internal.h"

#include <float.h>
#include <string.h>
#include <xxhash.h>

_Static_assert(sizeof(float) == 4 && FLT_MANT_DIG == 24 && FLT_MAX_EXP == 128,
               "the rig hash feeds IEEE 754 binary32 floats");

#define RIG_HASH_TAG "SSKRIG2"   /* with its NUL: 8 bytes */
#define RIG_HASH_TAG_SIZE 8
/* 4-byte words byte-swapped per XXH3 update on big-endian hosts. */
#define HASH_SWAP_WORDS 1024

static bool host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* Feeds `count` 4-byte words (int32, uint32 or float32) little-endian. */
static XXH_errorcode hash_words(XXH3_state_t *state, const void *words, size_t count)
{
    if (count == 0) return XXH_OK;
    if (host_is_little_endian()) return XXH3_64bits_update(state, words, count * 4);
    const unsigned char *src = words;
    unsigned char buf[HASH_SWAP_WORDS * 4];
    while (count > 0) {
        size_t n = count < HASH_SWAP_WORDS ? count : HASH_SWAP_WORDS;
        for (size_t i = 0; i < n; ++i)
            for (int k = 0; k < 4; ++k) buf[4 * i + k] = src[4 * i + 3 - k];
        if (XXH3_64bits_update(state, buf, n * 4) != XXH_OK) return XXH_ERROR;
        src += 4 * n;
        count -= n;
    }
    return XXH_OK;
}

static XXH_errorcode hash_u32(XXH3_state_t *state, uint32_t v) { return hash_words(state, &v, 1); }

/* The hash, or false when the hashing state cannot be allocated. */
static bool rig_hash(const ssk_rig *rig, uint64_t *out)
{
    XXH3_state_t *state = XXH3_createState();
    if (!state) return false;
    bool ok = XXH3_64bits_reset(state) == XXH_OK &&
              XXH3_64bits_update(state, RIG_HASH_TAG, RIG_HASH_TAG_SIZE) == XXH_OK &&
              hash_u32(state, rig->mesh_count) == XXH_OK;
    for (uint32_t m = 0; ok && m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        size_t nv = mesh->vertex_count, nk = nv * mesh->influence_count;
        ok = hash_u32(state, mesh->vertex_count) == XXH_OK &&
             hash_u32(state, mesh->triangle_count) == XXH_OK &&
             hash_words(state, mesh->positions, nv * 3) == XXH_OK &&
             hash_words(state, mesh->object_matrix, 16) == XXH_OK &&
             hash_words(state, mesh->triangles, (size_t)mesh->triangle_count * 3) == XXH_OK &&
             hash_u32(state, mesh->influence_count) == XXH_OK &&
             hash_words(state, mesh->bone_indices, nk) == XXH_OK &&
             hash_words(state, mesh->weights, nk) == XXH_OK;
    }
    ok = ok && hash_words(state, rig->weld.point, rig->vertex_count) == XXH_OK;
    ok = ok && hash_u32(state, rig->bone_count) == XXH_OK;
    for (uint32_t b = 0; ok && b < rig->bone_count; ++b) {
        const ssk_bone *bone = &rig->bones[b];
        ok = hash_words(state, &bone->parent, 1) == XXH_OK &&
             hash_words(state, bone->bind_matrix, 16) == XXH_OK &&
             hash_words(state, bone->head, 3) == XXH_OK &&
             hash_words(state, bone->tail, 3) == XXH_OK;
    }
    if (ok) *out = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return ok;
}

uint64_t ssk_rig_hash(const ssk_rig *rig)
{
    uint64_t h = 0;
    if (!rig || !rig_hash(rig, &h)) return 0;
    return h;
}

ssk_status ssk_rig_hash_checked(const ssk_rig *rig, uint64_t *out, ssk_error *err)
{
    if (!rig || !out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "rig hash: NULL %s",
                             rig ? "output" : "rig");
    if (!rig_hash(rig, out))
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "rig hash: cannot allocate the XXH3 state");
    return ssk_error_ok(err);
}

