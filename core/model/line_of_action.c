/*
 * line_of_action.c — line-of-action posing (Toothman 2020, 7.2): joints
 * near a baseline stroke b follow an offset stroke o. "Each selected joint
 * j is parameterized to t_j in [0, 1] such that b(t_j) is the closest point
 * on the stroke to j. The displacement d_j = j - b(t_j) is also saved ...
 * the difference in orientation R_j between the baseline and offset
 * strokes is F(o, t_j) x F(b, t_j)^-1 ... the final transformed position of
 * j is found as o(t_j) + (R_j x d_j)"; then "applying the changes
 * sequentially starting with the joint closest to the skeleton root"
 * (ssk_pose_from_strokes). Contract and the roll rule for straight
 * strokes: springskin.h.
 */
#include "model/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Replaces the N and B rows of `frame` (rows T, N, B) by the ones the
 * other stroke's binormal gives (springskin.h, ssk_pose_joints); leaves the
 * frame when that binormal is along T. */
static void borrow_roll(double frame[9], const double other_binormal[3])
{
    const double *t = frame;
    double b[3];
    const double a = dot3(other_binormal, t);
    for (int c = 0; c < 3; ++c) b[c] = other_binormal[c] - a * t[c];
    const double l = sqrt(dot3(b, b));
    if (!(l > SSK_TRANSPORT_OPPOSITE_EPSILON)) return;
    for (int c = 0; c < 3; ++c) frame[6 + c] = b[c] / l;
    /* N = B x T */
    double *n = frame + 3;
    const double *bb = frame + 6;
    n[0] = bb[1] * t[2] - bb[2] * t[1];
    n[1] = bb[2] * t[0] - bb[0] * t[2];
    n[2] = bb[0] * t[1] - bb[1] * t[0];
}

/* R d with R = F(o) F(b)^-1: d's coordinates in the baseline's frame
 * re-expressed in the offset's (frames as rows). */
static void rotate_between(double dst[3], const double fb[9], const double fo[9],
                           const double d[3], int both_straight)
{
    if (both_straight) {
        ssk_transport3(dst, d, fb, fo);
        return;
    }
    double local[3];
    for (int k = 0; k < 3; ++k) local[k] = dot3(fb + 3 * k, d);
    for (int c = 0; c < 3; ++c)
        dst[c] = local[0] * fo[c] + local[1] * fo[3 + c] + local[2] * fo[6 + c];
}

ssk_status ssk_pose_joints(double *dst, uint8_t *selected, const double *joints,
                           uint32_t joint_count, const ssk_stroke *baseline,
                           const ssk_stroke *offset, double radius, ssk_error *err)
{
    if (!dst || (!joints && joint_count) || !baseline || !offset)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "pose_joints: NULL argument");
    if (!(radius > 0.0) || !isfinite(radius))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "pose_joints: radius must be a finite number > 0, got %g", radius);
    for (size_t i = 0; i < 3 * (size_t)joint_count; ++i)
        if (!(fabs(joints[i]) <= SSK_MAX_MAGNITUDE))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "pose_joints: joint %zu has a coordinate %g that is not finite "
                                 "or beyond SSK_MAX_MAGNITUDE (1e15)",
                                 i / 3, joints[i]);
    const int straight_b = ssk_stroke_is_straight(baseline);
    const int straight_o = ssk_stroke_is_straight(offset);
    for (uint32_t j = 0; j < joint_count; ++j) {
        const double *p = joints + 3 * (size_t)j;
        double distance = 0.0;
        const double t = ssk_stroke_closest(baseline, p, &distance);
        const int pick = distance < radius;
        if (selected) selected[j] = (uint8_t)pick;
        if (!pick) {
            if (dst != joints) memcpy(dst + 3 * (size_t)j, p, 3 * sizeof *p);
            continue;
        }
        double b[3], o[3], d[3], fb[9], fo[9], rd[3];
        ssk_stroke_position(baseline, t, b);
        ssk_stroke_position(offset, t, o);
        ssk_stroke_frame(baseline, t, fb);
        ssk_stroke_frame(offset, t, fo);
        if (straight_b && !straight_o) borrow_roll(fb, fo + 6);
        if (straight_o && !straight_b) borrow_roll(fo, fb + 6);
        for (int c = 0; c < 3; ++c) d[c] = p[c] - b[c];
        rotate_between(rd, fb, fo, d, straight_b && straight_o);
        for (int c = 0; c < 3; ++c) dst[3 * (size_t)j + c] = o[c] + rd[c];
    }
    return ssk_error_ok(err);
}

/* Affine maps as 3 by 4 row-major doubles [R | t]. */
static void affine_apply(double dst[3], const double m[12], const double p[3])
{
    for (int r = 0; r < 3; ++r)
        dst[r] = m[4 * r] * p[0] + m[4 * r + 1] * p[1] + m[4 * r + 2] * p[2] + m[4 * r + 3];
}

/* dst = a b (dst may alias either). */
static void affine_mul(double dst[12], const double a[12], const double b[12])
{
    double out[12];
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 4; ++c) {
            double s = c == 3 ? a[4 * r + 3] : 0.0;
            for (int k = 0; k < 3; ++k) s += a[4 * r + k] * b[4 * k + c];
            out[4 * r + c] = s;
        }
    }
    memcpy(dst, out, sizeof out);
}

ssk_status ssk_pose_from_strokes(float *dst, uint8_t *selected, const ssk_rig *rig,
                                 const float *skinning, const ssk_stroke *baseline,
                                 const ssk_stroke *offset, double radius, ssk_error *err)
{
    if (!dst || !rig || !skinning || !baseline || !offset)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "pose_from_strokes: NULL argument");
    const uint32_t nb = rig->bone_count;
    if (!ssk_floats_bounded(skinning, 16 * (size_t)nb))
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "pose_from_strokes: a skinning matrix has a value that is not "
                             "finite or beyond SSK_MAX_MAGNITUDE");
    /* joints: heads (rows 0..B-1) then tails (B..2B-1), posed */
    double *joints = malloc(2 * 3 * ((size_t)nb + 1) * sizeof *joints);
    double *target = malloc(2 * 3 * ((size_t)nb + 1) * sizeof *target);
    double *delta = malloc(12 * ((size_t)nb + 1) * sizeof *delta);
    uint8_t *pick = malloc(2 * (size_t)nb + 1);
    uint32_t *depth = malloc(((size_t)nb + 1) * sizeof *depth);
    uint32_t *order = malloc(((size_t)nb + 1) * sizeof *order);
    ssk_status st = SSK_OK;
    if (!joints || !target || !delta || !pick || !depth || !order) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "pose_from_strokes: out of memory");
        goto done;
    }
    for (uint32_t b = 0; b < nb; ++b) {
        const ssk_bone *bone = &rig->bones[b];
        float h[3], t[3];
        ssk_mat4_transform_point(h, skinning + 16 * (size_t)b, bone->head);
        ssk_mat4_transform_point(t, skinning + 16 * (size_t)b, bone->tail);
        for (int c = 0; c < 3; ++c) {
            joints[3 * (size_t)b + c] = h[c];
            joints[3 * ((size_t)nb + b) + c] = t[c];
        }
    }
    st = ssk_pose_joints(target, pick, joints, 2 * nb, baseline, offset, radius, err);
    if (st != SSK_OK) goto done;
    /* root first: by depth (the rig has no parent cycles) */
    uint32_t max_depth = 0;
    for (uint32_t b = 0; b < nb; ++b) {
        uint32_t d = 0;
        for (int32_t p = rig->bones[b].parent; p >= 0; p = rig->bones[p].parent) ++d;
        depth[b] = d;
        max_depth = d > max_depth ? d : max_depth;
    }
    uint32_t n = 0;
    for (uint32_t d = 0; d <= max_depth && nb; ++d)
        for (uint32_t b = 0; b < nb; ++b)
            if (depth[b] == d) order[n++] = b;
    for (uint32_t k = 0; k < nb; ++k) {
        const uint32_t b = order[k];
        const ssk_bone *bone = &rig->bones[b];
        double *D = delta + 12 * (size_t)b;
        static const double identity[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
        memcpy(D, bone->parent >= 0 ? delta + 12 * (size_t)bone->parent : identity,
               sizeof identity);
        bool connected = false;
        if (bone->parent >= 0) {
            const ssk_bone *parent = &rig->bones[bone->parent];
            double gap2 = 0.0, len2 = 0.0;
            for (int c = 0; c < 3; ++c) {
                gap2 += ((double)bone->head[c] - parent->tail[c]) *
                        ((double)bone->head[c] - parent->tail[c]);
                len2 += ((double)parent->tail[c] - parent->head[c]) *
                        ((double)parent->tail[c] - parent->head[c]);
            }
            connected = gap2 <= SSK_BONE_CONNECTED_FRACTION * SSK_BONE_CONNECTED_FRACTION * len2;
        }
        double h[3], t[3];
        affine_apply(h, D, joints + 3 * (size_t)b);
        affine_apply(t, D, joints + 3 * ((size_t)nb + b));
        const uint8_t head_picked = pick[b], tail_picked = pick[nb + b];
        if (selected) selected[b] = (uint8_t)(head_picked | (tail_picked << 1));
        if (!connected && head_picked) {
            for (int c = 0; c < 3; ++c) {
                const double move = target[3 * (size_t)b + c] - h[c];
                D[4 * c + 3] += move;
                h[c] += move;
                t[c] += move;
            }
        }
        if (tail_picked) {
            double from[3], to[3];
            for (int c = 0; c < 3; ++c) {
                from[c] = t[c] - h[c];
                to[c] = target[3 * ((size_t)nb + b) + c] - h[c];
            }
            const double lf = sqrt(dot3(from, from)), lt = sqrt(dot3(to, to));
            if (lf > 0.0 && lt > 0.0) {
                for (int c = 0; c < 3; ++c) {
                    from[c] /= lf;
                    to[c] /= lt;
                }
                /* about the head: x -> h + R (x - h) */
                double rot[12];
                for (int col = 0; col < 3; ++col) {
                    double e[3] = {0, 0, 0}, re[3];
                    e[col] = 1.0;
                    ssk_transport3(re, e, from, to);
                    for (int r = 0; r < 3; ++r) rot[4 * r + col] = re[r];
                }
                for (int r = 0; r < 3; ++r)
                    rot[4 * r + 3] = h[r] - (rot[4 * r] * h[0] + rot[4 * r + 1] * h[1] +
                                             rot[4 * r + 2] * h[2]);
                affine_mul(D, rot, D);
            }
        }
    }
    for (uint32_t b = 0; b < nb; ++b) {
        const double *D = delta + 12 * (size_t)b;
        const float *s = skinning + 16 * (size_t)b;
        float out[16];
        for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 4; ++c) {
                if (r == 3) {
                    out[4 * r + c] = s[4 * r + c];
                    continue;
                }
                double v = 0.0;
                for (int k = 0; k < 3; ++k) v += D[4 * r + k] * s[4 * k + c];
                v += D[4 * r + 3] * s[12 + c];
                out[4 * r + c] = (float)v;
            }
        memcpy(dst + 16 * (size_t)b, out, sizeof out);
    }
done:
    free(joints), free(target), free(delta), free(pick), free(depth), free(order);
    return st;
}
