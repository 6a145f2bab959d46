/* anim.c — animation sampling of an imported scene: node local transforms at
 * a time (linear positions and scales, slerp rotations, clamped keys), their
 * composition from the root (G), skinning and object matrices. Also the small
 * scene accessors and the double-precision 4x4 helpers of scene.h. */
#include "model/scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Double-precision 4x4 helpers (row-major, column vectors).                 */
/* ------------------------------------------------------------------------ */

void ssk_mat4d_identity(double dst[16])
{
    for (int i = 0; i < 16; ++i) dst[i] = (i % 5 == 0) ? 1.0 : 0.0;
}

void ssk_mat4d_mul(double dst[16], const double a[16], const double b[16])
{
    double r[16];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            double s = 0.0;
            for (int k = 0; k < 4; ++k) s += a[i * 4 + k] * b[k * 4 + j];
            r[i * 4 + j] = s;
        }
    memcpy(dst, r, sizeof r);
}

bool ssk_mat4d_invert(double dst[16], const double m[16])
{
    /* Inverse by 2x2 sub-determinants (Laplace expansion along row pairs). */
    double s0 = m[0] * m[5] - m[4] * m[1];
    double s1 = m[0] * m[6] - m[4] * m[2];
    double s2 = m[0] * m[7] - m[4] * m[3];
    double s3 = m[1] * m[6] - m[5] * m[2];
    double s4 = m[1] * m[7] - m[5] * m[3];
    double s5 = m[2] * m[7] - m[6] * m[3];
    double c5 = m[10] * m[15] - m[14] * m[11];
    double c4 = m[9] * m[15] - m[13] * m[11];
    double c3 = m[9] * m[14] - m[13] * m[10];
    double c2 = m[8] * m[15] - m[12] * m[11];
    double c1 = m[8] * m[14] - m[12] * m[10];
    double c0 = m[8] * m[13] - m[12] * m[9];
    double det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
    if (!(fabs(det) > SSK_SINGULAR_EPSILON)) return false;
    double d = 1.0 / det, r[16];
    r[0] = (m[5] * c5 - m[6] * c4 + m[7] * c3) * d;
    r[1] = (-m[1] * c5 + m[2] * c4 - m[3] * c3) * d;
    r[2] = (m[13] * s5 - m[14] * s4 + m[15] * s3) * d;
    r[3] = (-m[9] * s5 + m[10] * s4 - m[11] * s3) * d;
    r[4] = (-m[4] * c5 + m[6] * c2 - m[7] * c1) * d;
    r[5] = (m[0] * c5 - m[2] * c2 + m[3] * c1) * d;
    r[6] = (-m[12] * s5 + m[14] * s2 - m[15] * s1) * d;
    r[7] = (m[8] * s5 - m[10] * s2 + m[11] * s1) * d;
    r[8] = (m[4] * c4 - m[5] * c2 + m[7] * c0) * d;
    r[9] = (-m[0] * c4 + m[1] * c2 - m[3] * c0) * d;
    r[10] = (m[12] * s4 - m[13] * s2 + m[15] * s0) * d;
    r[11] = (-m[8] * s4 + m[9] * s2 - m[11] * s0) * d;
    r[12] = (-m[4] * c3 + m[5] * c1 - m[6] * c0) * d;
    r[13] = (m[0] * c3 - m[1] * c1 + m[2] * c0) * d;
    r[14] = (-m[12] * s3 + m[13] * s1 - m[14] * s0) * d;
    r[15] = (m[8] * s3 - m[9] * s1 + m[10] * s0) * d;
    memcpy(dst, r, sizeof r);
    return true;
}

void ssk_mat4d_compose(double dst[16], const double t[3], const double q[4],
                       const double s[3])
{
    double w = q[0], x = q[1], y = q[2], z = q[3];
    double r[9] = {1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y),
                   2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x),
                   2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)};
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) dst[i * 4 + j] = r[i * 3 + j] * s[j];
        dst[i * 4 + 3] = t[i];
    }
    dst[12] = dst[13] = dst[14] = 0.0;
    dst[15] = 1.0;
}

/* ------------------------------------------------------------------------ */
/* Key interpolation.                                                        */
/* ------------------------------------------------------------------------ */

/* Index of the last key with time <= t among n >= 2 keys sorted by time,
 * given keys[0].time < t < keys[n-1].time; the result i then satisfies
 * keys[i].time <= t < keys[i+1].time. */
#define SSK_KEY_SEARCH_(keys, n, t, out)                                      \
    do {                                                                     \
        uint32_t lo_ = 0, hi_ = (n) - 1; /* time[lo] <= t < time[hi] */      \
        while (hi_ - lo_ > 1) {                                              \
            uint32_t mid_ = lo_ + (hi_ - lo_) / 2;                           \
            if ((keys)[mid_].time <= (t)) lo_ = mid_;                        \
            else hi_ = mid_;                                                 \
        }                                                                    \
        (out) = lo_;                                                         \
    } while (0)

static void sample_vec(double out[3], const ssk_vec_key *keys, uint32_t n,
                       double t, const double fallback[3])
{
    if (n == 0) {
        memcpy(out, fallback, 3 * sizeof(double));
        return;
    }
    if (t <= keys[0].time) {
        memcpy(out, keys[0].value, 3 * sizeof(double));
        return;
    }
    if (t >= keys[n - 1].time) {
        memcpy(out, keys[n - 1].value, 3 * sizeof(double));
        return;
    }
    uint32_t i;
    SSK_KEY_SEARCH_(keys, n, t, i);
    /* keys[i].time <= t < keys[i+1].time, so the span is > 0. */
    double f = (t - keys[i].time) / (keys[i + 1].time - keys[i].time);
    for (int k = 0; k < 3; ++k)
        out[k] = keys[i].value[k] + f * (keys[i + 1].value[k] - keys[i].value[k]);
}

/* Shortest-path slerp of unit quaternions a, b (w, x, y, z); result unit. */
static void slerp(double out[4], const double a[4], const double b_in[4], double f)
{
    double b[4] = {b_in[0], b_in[1], b_in[2], b_in[3]};
    double c = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    if (c < 0.0) {
        c = -c;
        for (int k = 0; k < 4; ++k) b[k] = -b[k];
    }
    double wa, wb;
    if (c > 1.0 - SSK_SLERP_LINEAR_EPSILON) {
        wa = 1.0 - f;
        wb = f;
    } else {
        double angle = acos(c), s = sin(angle);
        wa = sin((1.0 - f) * angle) / s;
        wb = sin(f * angle) / s;
    }
    double n = 0.0;
    for (int k = 0; k < 4; ++k) {
        out[k] = wa * a[k] + wb * b[k];
        n += out[k] * out[k];
    }
    n = sqrt(n);
    for (int k = 0; k < 4; ++k) out[k] /= n;
}

static void sample_quat(double out[4], const ssk_quat_key *keys, uint32_t n,
                        double t, const double fallback[4])
{
    if (n == 0) {
        memcpy(out, fallback, 4 * sizeof(double));
        return;
    }
    if (t <= keys[0].time) {
        memcpy(out, keys[0].value, 4 * sizeof(double));
        return;
    }
    if (t >= keys[n - 1].time) {
        memcpy(out, keys[n - 1].value, 4 * sizeof(double));
        return;
    }
    uint32_t i;
    SSK_KEY_SEARCH_(keys, n, t, i);
    double f = (t - keys[i].time) / (keys[i + 1].time - keys[i].time);
    slerp(out, keys[i].value, keys[i + 1].value, f);
}

/* Local transform of `node` at t_ticks in animation `anim`. */
static void node_local(double dst[16], const ssk_scene *scene,
                       const ssk_scene_anim *anim, uint32_t node,
                       double t_ticks)
{
    const ssk_scene_node *nd = &scene->nodes[node];
    int32_t c = anim->node_channel[node];
    if (c < 0) {
        memcpy(dst, nd->local, 16 * sizeof(double));
        return;
    }
    const ssk_channel *ch = &anim->channels[c];
    double t[3], q[4], s[3];
    sample_vec(t, ch->positions, ch->position_count, t_ticks, nd->translation);
    sample_quat(q, ch->rotations, ch->rotation_count, t_ticks, nd->rotation);
    sample_vec(s, ch->scales, ch->scale_count, t_ticks, nd->scale);
    ssk_mat4d_compose(dst, t, q, s);
}

void ssk_scene_globals(double *dst, const ssk_scene *scene, const ssk_scene_anim *anim,
                       double t_ticks)
{
    /* Pre-order storage: a parent's G is ready before its children. */
    for (uint32_t i = 0; i < scene->node_count; ++i) {
        double *g = dst + 16 * (size_t)i;
        node_local(g, scene, anim, i, t_ticks);
        int32_t p = scene->nodes[i].parent;
        if (p >= 0) ssk_mat4d_mul(g, dst + 16 * (size_t)p, g);
    }
}

static void to_float(float dst[16], const double src[16])
{
    for (int i = 0; i < 16; ++i) dst[i] = (float)src[i];
}

/* ------------------------------------------------------------------------ */
/* Public API.                                                               */
/* ------------------------------------------------------------------------ */

const ssk_rig *ssk_scene_rig(const ssk_scene *scene)
{
    return scene ? scene->rig : NULL;
}

const char *ssk_scene_armature_name(const ssk_scene *scene)
{
    return scene && scene->armature_node >= 0 ? scene->nodes[scene->armature_node].name : NULL;
}

ssk_status ssk_scene_bone_node(const ssk_scene *scene, uint32_t bone, int *out_has_node,
                               uint32_t *out_dropped_vertices, ssk_error *err)
{
    if (!scene || !out_has_node || !out_dropped_vertices)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_scene_bone_node: NULL argument");
    if (bone >= scene->rig->bone_count)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_scene_bone_node: bone %u out of range [0, %u)", bone,
                             scene->rig->bone_count);
    *out_has_node = scene->bone_nodes[bone] >= 0;
    *out_dropped_vertices = scene->nodeless_dropped ? scene->nodeless_dropped[bone] : 0;
    return ssk_error_ok(err);
}

uint32_t ssk_scene_animation_count(const ssk_scene *scene)
{
    return scene ? scene->animation_count : 0;
}

ssk_status ssk_scene_animation(const ssk_scene *scene, uint32_t animation,
                               ssk_animation_info *out, ssk_error *err)
{
    if (!scene || !out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_scene_animation: %s is NULL", !scene ? "scene" : "out");
    if (animation >= scene->animation_count)
        return ssk_error_set(err, SSK_ERROR_NO_ANIMATION,
                             "animation %u out of range: the scene has %u animation(s)",
                             animation, scene->animation_count);
    const ssk_scene_anim *a = &scene->animations[animation];
    out->name = a->name;
    out->ticks_per_second = a->ticks_per_second;
    out->duration_seconds = a->duration_ticks / a->ticks_per_second;
    out->channel_count = a->file_channel_count;
    return ssk_error_ok(err);
}

uint32_t ssk_animation_frame_count(const ssk_animation_info *info, double fps)
{
    if (!info || !(fps > 0.0) || !isfinite(fps) || !isfinite(info->duration_seconds) ||
        !(info->duration_seconds >= 0.0))
        return 0;
    double last = floor(info->duration_seconds * fps + SSK_FRAME_COUNT_EPSILON);
    if (!(last < (double)UINT32_MAX)) return UINT32_MAX;
    return (uint32_t)last + 1u;
}

/* The arguments every sampling call checks: scene and destination not NULL,
 * the animation in range, a finite time. */
static ssk_status check_sample(const char *function, const ssk_scene *scene, const void *dst,
                               const char *dst_name, uint32_t animation, double time_seconds,
                               ssk_error *err)
{
    if (!scene || !dst)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", function,
                             !scene ? "scene" : dst_name);
    if (animation >= scene->animation_count)
        return ssk_error_set(err, SSK_ERROR_NO_ANIMATION,
                             "animation %u out of range: the scene has %u animation(s)",
                             animation, scene->animation_count);
    if (!isfinite(time_seconds))
        return ssk_error_set(err, SSK_ERROR_NONFINITE, "%s: time %g is not finite", function,
                             time_seconds);
    return SSK_OK;
}

ssk_status ssk_scene_sample(const ssk_scene *scene, uint32_t animation,
                            double time_seconds, float *dst_skinning,
                            float *dst_object_matrices, ssk_error *err)
{
    ssk_status st = check_sample("ssk_scene_sample", scene, dst_skinning, "dst_skinning",
                                 animation, time_seconds, err);
    if (st != SSK_OK) return st;

    const ssk_scene_anim *anim = &scene->animations[animation];
    double *globals = NULL;
    if (scene->node_count > 0) {
        globals = malloc((size_t)scene->node_count * 16 * sizeof(double));
        if (!globals)
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                 "ssk_scene_sample: %u node transforms", scene->node_count);
    }
    ssk_scene_globals(globals, scene, anim, time_seconds * anim->ticks_per_second);

    /* Rig space is the armature node's space at the frame. */
    double scene_to_rig[16];
    ssk_mat4d_identity(scene_to_rig);
    if (scene->armature_node >= 0 &&
        !ssk_mat4d_invert(scene_to_rig, globals + 16 * (size_t)scene->armature_node)) {
        st = ssk_error_set(err, SSK_ERROR_NONFINITE,
                           "ssk_scene_sample: the armature node '%s' is singular at %g s",
                           scene->nodes[scene->armature_node].name, time_seconds);
        free(globals);
        return st;
    }
    uint32_t bone_count = scene->rig->bone_count;
    for (uint32_t b = 0; b < bone_count; ++b) {
        double s[16];
        int32_t node = scene->bone_nodes[b];
        if (node >= 0) {
            ssk_mat4d_mul(s, globals + 16 * (size_t)node, scene->inverse_binds + 16 * (size_t)b);
            ssk_mat4d_mul(s, scene_to_rig, s);
        } else {
            ssk_mat4d_identity(s); /* a bone without a node stays at its bind */
        }
        to_float(dst_skinning + 16 * (size_t)b, s);
    }
    if (dst_object_matrices) {
        for (uint32_t m = 0; m < scene->rig->mesh_count; ++m) {
            int32_t node = scene->mesh_nodes[m];
            double o[16];
            if (node >= 0) ssk_mat4d_mul(o, scene_to_rig, globals + 16 * (size_t)node);
            else memcpy(o, scene_to_rig, sizeof o);
            to_float(dst_object_matrices + 16 * (size_t)m, o);
        }
    }
    free(globals);
    return ssk_error_ok(err);
}

ssk_status ssk_scene_rig_matrix(const ssk_scene *scene, uint32_t animation, double time_seconds,
                                float dst[16], ssk_error *err)
{
    ssk_status st = check_sample("ssk_scene_rig_matrix", scene, dst, "dst", animation,
                                 time_seconds, err);
    if (st != SSK_OK) return st;
    if (scene->armature_node < 0) {
        ssk_mat4_identity(dst);
        return ssk_error_ok(err);
    }
    /* G of the armature node: its chain of ancestors only. */
    const ssk_scene_anim *anim = &scene->animations[animation];
    double t_ticks = time_seconds * anim->ticks_per_second, g[16], local[16];
    ssk_mat4d_identity(g);
    for (int32_t n = scene->armature_node; n >= 0; n = scene->nodes[n].parent) {
        node_local(local, scene, anim, (uint32_t)n, t_ticks);
        ssk_mat4d_mul(g, local, g);
    }
    to_float(dst, g);
    return ssk_error_ok(err);
}

void ssk_scene_rest_rig_matrix(const ssk_scene *scene, float dst[16])
{
    if (!dst) return;
    if (!scene) {
        ssk_mat4_identity(dst);
        return;
    }
    to_float(dst, scene->rig_to_scene);
}
