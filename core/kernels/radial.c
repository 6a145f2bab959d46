/*
 * radial.c — radial deformations (Toothman 2020 dissertation, 5.1, Eq. 24,
 * Fig. 22): with the vertex written as v = a + |s| (unit direction), a
 * surface effect multiplies the scale vector length |s| by a value derived
 * from the vertex's parameter t along its bone. The dissertation's example
 * is the parabolic bulge -(0.5 - t)^2 + 1.25 (1 at both ends, 1.25 at the
 * middle); Fig. 22 uses the easing functions of web animation (linear,
 * cubicIn, quarticOut, ...). Here the effect is applied to already skinned
 * rig-space positions about the posed attachment point
 * a' = p' + t (c' - p'):
 *   v' = a' + m (v - a'),
 *   m = 1 + amount (f(t) - 1)  for the bulge (amount 0: none, 1: the paper's),
 *   m = 1 + amount f(t)        for the easing profiles (f(0) = 0: no change
 *                               at the bone's head, growing to 1 + amount).
 */
#include "kernels/attach_math.h"

#include <string.h>

#define SSK_PI_F 3.14159265358979323846f

static const char *const profile_names[SSK_RADIAL_PROFILE_COUNT] = {
    "bulge",      "linear",   "quad_in",     "quad_out",   "cubic_in",
    "cubic_out",  "quartic_in", "quartic_out", "sine_in_out"};

const char *ssk_radial_profile_name(ssk_radial_profile profile)
{
    return (unsigned)profile < SSK_RADIAL_PROFILE_COUNT ? profile_names[profile] : NULL;
}

ssk_status ssk_radial_profile_parse(ssk_radial_profile *out, const char *name, ssk_error *err)
{
    if (!out || !name)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_radial_profile_parse: NULL argument");
    for (int p = 0; p < SSK_RADIAL_PROFILE_COUNT; ++p)
        if (strcmp(name, profile_names[p]) == 0) {
            *out = (ssk_radial_profile)p;
            return ssk_error_ok(err);
        }
    return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                         "unknown radial profile '%s' (expected bulge, linear, quad_in, "
                         "quad_out, cubic_in, cubic_out, quartic_in, quartic_out or sine_in_out)",
                         name);
}

/* f(t), t already in [0, 1]; an unknown profile gives 0 (no change for the
 * easing form). */
static inline __attribute__((always_inline)) float profile_eval(ssk_radial_profile profile,
                                                                float t)
{
    const float u = 1.0f - t;
    switch (profile) {
    case SSK_RADIAL_BULGE: return -(0.5f - t) * (0.5f - t) + 1.25f;
    case SSK_RADIAL_LINEAR: return t;
    case SSK_RADIAL_QUAD_IN: return t * t;
    case SSK_RADIAL_QUAD_OUT: return 1.0f - u * u;
    case SSK_RADIAL_CUBIC_IN: return t * t * t;
    case SSK_RADIAL_CUBIC_OUT: return 1.0f - u * u * u;
    case SSK_RADIAL_QUARTIC_IN: return (t * t) * (t * t);
    case SSK_RADIAL_QUARTIC_OUT: return 1.0f - (u * u) * (u * u);
    case SSK_RADIAL_SINE_IN_OUT: return 0.5f * (1.0f - cosf(SSK_PI_F * t));
    default: return 0.0f;
    }
}

static inline __attribute__((always_inline)) float clamp_t(float t)
{
    return t > 0.0f ? (t < 1.0f ? t : 1.0f) : 0.0f; /* NaN -> 0 */
}

float ssk_radial_profile_eval(ssk_radial_profile profile, float t)
{
    return profile_eval(profile, clamp_t(t));
}

typedef struct radial_job {
    float *dst;
    const float *src, *t;
    const int32_t *bones;
    const ssk_attach_bone *bones_data;
    const uint8_t *bone_mask;
    ssk_radial_profile profile;
    float amount, offset;
} radial_job;

static void radial_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const radial_job *j = ctx;
    (void)chunk;
    float *dst = j->dst;
    const float *src = j->src, *restrict t = j->t;
    const int32_t *restrict bones = j->bones;
    const ssk_attach_bone *restrict bones_data = j->bones_data;
    const uint8_t *restrict bone_mask = j->bone_mask;
    const ssk_radial_profile profile = j->profile;
    const float amount = j->amount, offset = j->offset;
    for (int64_t v = begin; v < end; ++v) {
        const int32_t b = bones[v];
        const float tv = clamp_t(t[v]);
        const float m = offset + amount * profile_eval(profile, tv);
        const float x = src[3 * v], y = src[3 * v + 1], z = src[3 * v + 2];
        float a[3];
        ssk_am_attachment(a, &bones_data[b], tv);
        /* Unselected bones and m == 1 keep the input bit for bit. */
        const int apply = bone_mask[b] != 0 && m != 1.0f;
        dst[3 * v] = apply ? a[0] + m * (x - a[0]) : x;
        dst[3 * v + 1] = apply ? a[1] + m * (y - a[1]) : y;
        dst[3 * v + 2] = apply ? a[2] + m * (z - a[2]) : z;
    }
}

void ssk_radial_deform(float *dst, const float *src, uint32_t vertex_count,
                       const int32_t *restrict bones, const float *restrict t,
                       const ssk_attach_bone *restrict bones_data,
                       const uint8_t *restrict bone_mask, ssk_radial_profile profile,
                       float amount)
{
    /* m = offset + amount f(t): the bulge's f is taken relative to 1. */
    const float offset = profile == SSK_RADIAL_BULGE ? 1.0f - amount : 1.0f;
    radial_job j = {dst, src, t, bones, bones_data, bone_mask, profile, amount, offset};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, radial_chunk, &j);
}
