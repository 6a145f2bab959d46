/*
 * attach.c — per-bone data of one pose for the attachment deformers (rigid,
 * IRS, radial): Toothman 2020 dissertation, ch. 4.1 (Eq. 14-18) and the
 * SCA 2017 poster "Attachment-Based Character Deformation", sec. 2.
 *
 * For every bone b, from its rig-space skinning matrix S_b (row-major):
 * - head p' = S_b p (the rest head p of the bone);
 * - tail c' = S_k p_k, the posed head of the bone's tail child k (its first
 *   child, in bone order, whose rest head lies at b's rest tail within
 *   SSK_ATTACH_JOINT_EPSILON of b's length), so a' = p' + t (c' - p')
 *   follows bone stretch and the joint exactly; without a tail child,
 *   c' = S_b c;
 * - rotation R_b: the Y-axis-preserving orthonormalization of S_b,
 *   taken as ssk_dqs_prepare does in the bone's own frame: the rotation Q
 *   of S_b · bind_b with its (bone) Y axis kept, times the inverse of the
 *   bind rotation B (the same orthonormalization of bind_b):
 *   R_b = Q B^-1. For a rigid S_b this is exactly its 3x3 part; under
 *   stretch along the bone the bone's Y direction is kept.
 * - head_joint: axis-angle of R_b R_parent^-1, the world-space (rig-space)
 *   rotation at the head joint that carries the parent's posed frame onto
 *   the bone's; tail_joint: R_k R_b^-1 of the tail joint. Both are the
 *   p_theta, p_x (c_theta, c_x) of Eq. 15-16. Because they are rig-space
 *   rotations, IRS applies them to the rig-space scale vector s' = R_b s
 *   (Eq. 18: v'' = a' + Delta s'). The head joint of a bone and the tail
 *   joint of its parent (when the bone is that parent's tail child) are the
 *   same computation, bit for bit, so both sides of a joint rotate about the
 *   same axis.
 *
 * Angles are in [0, pi] (the quaternion of the relative rotation is taken
 * with w >= 0); a rotation smaller than SSK_ATTACH_AXIS_EPSILON (sine of
 * the half angle) is stored as angle 0 about (1, 0, 0).
 */
#include "model/internal.h"

#include <math.h>
#include <string.h>

/* A child's rest head counts as its parent's tail joint when it is within
 * this fraction of the parent's length of the parent's rest tail. */
#define SSK_ATTACH_JOINT_EPSILON 1e-4f
/* |sin(angle / 2)| below which a joint rotation counts as none. */
#define SSK_ATTACH_AXIS_EPSILON 1e-7
/* Eq. 14's p_i and c_i when the caller gives none (Toothman 2020, 4.1:
 * "both default 0.5"). */
#define SSK_ATTACH_DEFAULT_INFLUENCE 0.5f
/* An orthonormalized axis with squared length below this is degenerate
 * (ssk_orthogonalize_keep_y returns unit or zero axes). */
#define SSK_ATTACH_MIN_AXIS_LENGTH2 0.25f

static bool axes_valid(const float axes[3][3])
{
    for (int i = 0; i < 3; ++i) {
        float l2 = axes[i][0] * axes[i][0] + axes[i][1] * axes[i][1] + axes[i][2] * axes[i][2];
        if (!(l2 >= SSK_ATTACH_MIN_AXIS_LENGTH2)) return false; /* NaN fails too */
    }
    return true;
}

/* Hamilton product a · conj(b) in double: the rotation "b undone, then a". */
static void quat_mul_conj(double r[4], const float a[4], const float b[4])
{
    const double aw = a[0], ax = a[1], ay = a[2], az = a[3];
    const double bw = b[0], bx = -(double)b[1], by = -(double)b[2], bz = -(double)b[3];
    r[0] = aw * bw - ax * bx - ay * by - az * bz;
    r[1] = aw * bx + ax * bw + ay * bz - az * by;
    r[2] = aw * by - ax * bz + ay * bw + az * bx;
    r[3] = aw * bz + ax * by - ay * bx + az * bw;
}

/* R_b = Q(S · bind) · B^-1 as a unit quaternion with w >= 0; false when the
 * 3x3 part of S · bind or of bind has no rotation (a zero axis). */
static bool bone_rotation(float q[4], const float S[16], const float bind[16])
{
    float sb[16], axes[3][3], q_pose[4], q_bind[4];
    ssk_mat4_mul(sb, S, bind);
    ssk_orthogonalize_keep_y(axes, sb);
    if (!axes_valid(axes)) return false;
    ssk_axes_to_quat(q_pose, axes);
    ssk_orthogonalize_keep_y(axes, bind);
    if (!axes_valid(axes)) return false;
    ssk_axes_to_quat(q_bind, axes);
    double r[4];
    quat_mul_conj(r, q_pose, q_bind);
    const double n = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
    const double sign = r[0] < 0.0 ? -1.0 : 1.0;
    for (int k = 0; k < 4; ++k) q[k] = (float)(sign * r[k] / n);
    return true;
}

/* Axis (x, y, z) and angle (w, in [0, pi]) of the rotation q_to q_from^-1. */
static void joint_axis_angle(float out[4], const float q_to[4], const float q_from[4])
{
    double r[4];
    quat_mul_conj(r, q_to, q_from);
    if (r[0] < 0.0)
        for (int k = 0; k < 4; ++k) r[k] = -r[k];
    const double s = sqrt(r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
    if (s > SSK_ATTACH_AXIS_EPSILON) {
        out[0] = (float)(r[1] / s);
        out[1] = (float)(r[2] / s);
        out[2] = (float)(r[3] / s);
        out[3] = (float)(2.0 * atan2(s, r[0]));
    } else {
        out[0] = 1.0f;
        out[1] = out[2] = out[3] = 0.0f; /* as set_no_rotation */
    }
}

/* Angle 0 about (1, 0, 0): no joint rotation. */
static void set_no_rotation(float out[4])
{
    out[0] = 1.0f;
    out[1] = out[2] = out[3] = 0.0f;
}

ssk_status ssk_attach_prepare(ssk_attach_bone *dst, const ssk_rig *rig, const float *skinning,
                              const float *joint_influences, ssk_error *err)
{
    if (!dst || !rig || (!skinning && rig->bone_count > 0))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_attach_prepare: NULL argument");
    const uint32_t nb = rig->bone_count;
    ssk_status st = ssk_matrices_validate(skinning, nb, "skinning matrix", err);
    if (st != SSK_OK) return st;
    if (joint_influences) {
        for (uint32_t b = 0; b < nb; ++b) {
            const float pi = joint_influences[2 * b], ci = joint_influences[2 * b + 1];
            if (!(pi > 0.0f && pi <= 1.0f && ci > 0.0f && ci <= 1.0f))
                return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                     "joint influences of bone %u ('%s') are (%g, %g); p_i and "
                                     "c_i must be in (0, 1]",
                                     b, rig->bones[b].name, (double)pi, (double)ci);
        }
    }

    /* Pass 1: posed head, rotation, parent, influences. */
    for (uint32_t b = 0; b < nb; ++b) {
        const ssk_bone *bone = &rig->bones[b];
        const float *S = skinning + 16 * (size_t)b;
        ssk_attach_bone *o = &dst[b];
        memset(o, 0, sizeof *o);
        ssk_mat4_transform_point(o->head, S, bone->head);
        if (!bone_rotation(o->rotation, S, bone->bind_matrix))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "bone %u ('%s'): the 3x3 part of its skinning matrix times its "
                                 "bind matrix is singular, it has no rotation",
                                 b, bone->name);
        o->parent = bone->parent;
        o->tail_child = -1;
        o->influence[0] = joint_influences ? joint_influences[2 * b] : SSK_ATTACH_DEFAULT_INFLUENCE;
        o->influence[1] =
            joint_influences ? joint_influences[2 * b + 1] : SSK_ATTACH_DEFAULT_INFLUENCE;
    }
    /* Pass 2: tail child = the first child (bone order) whose rest head is
     * at the rest tail. */
    for (uint32_t c = 0; c < nb; ++c) {
        const int32_t p = rig->bones[c].parent;
        if (p < 0 || dst[p].tail_child >= 0) continue;
        const ssk_bone *pb = &rig->bones[p];
        float len2 = 0.0f, gap2 = 0.0f;
        for (int k = 0; k < 3; ++k) {
            const float l = pb->tail[k] - pb->head[k], g = rig->bones[c].head[k] - pb->tail[k];
            len2 += l * l;
            gap2 += g * g;
        }
        if (gap2 <= SSK_ATTACH_JOINT_EPSILON * SSK_ATTACH_JOINT_EPSILON * len2)
            dst[p].tail_child = (int32_t)c;
    }
    /* Pass 3: posed tail and the joint rotations. */
    for (uint32_t b = 0; b < nb; ++b) {
        ssk_attach_bone *o = &dst[b];
        if (o->tail_child >= 0) {
            memcpy(o->tail, dst[o->tail_child].head, 3 * sizeof(float));
            joint_axis_angle(o->tail_joint, dst[o->tail_child].rotation, o->rotation);
        } else {
            ssk_mat4_transform_point(o->tail, skinning + 16 * (size_t)b, rig->bones[b].tail);
            set_no_rotation(o->tail_joint);
        }
        if (o->parent >= 0)
            joint_axis_angle(o->head_joint, o->rotation, dst[o->parent].rotation);
        else
            set_no_rotation(o->head_joint);
        /* Factors the per-vertex kernels multiply by instead of dividing. */
        float len2 = 0.0f;
        for (int k = 0; k < 3; ++k) len2 += (o->tail[k] - o->head[k]) * (o->tail[k] - o->head[k]);
        o->head[3] = len2 > 0.0f ? 1.0f / len2 : 0.0f;
        o->influence[2] = 1.0f / o->influence[0];
        o->influence[3] = o->influence[1] < 1.0f ? 1.0f / (1.0f - o->influence[1]) : 0.0f;
        if (!ssk_floats_finite(o->head, 24))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "bone %u ('%s'): posed joints or rotations are non-finite "
                                 "(skinning matrix too large)",
                                 b, rig->bones[b].name);
    }
    return ssk_error_ok(err);
}
