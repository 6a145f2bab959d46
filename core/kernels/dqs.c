/*
 * dqs.c — dual quaternion skinning as Blender 3.4's Armature modifier with
 * Preserve Volume (Kavan et al., "Geometric Skinning with Approximate Dual
 * Quaternion Blending", TOG 2008), written from the behavior of Blender's
 * BLI math_rotation (mat4_to_dquat, add_weighted_dq_dq, normalize_dq,
 * mul_v3m3_dq) without the 4.0 pivot correction.
 *
 * Matrices here are row-major (r[row * 4 + col]); Blender's are column-major,
 * so Blender's "axis i" m[i] is our column i.
 */
#include "model/internal.h"
#include "kernels/simd.h"

#include <math.h>
#include <string.h>

/* Blender's is_orthonormal_m3 tolerance on dot products. */
#define SSK_ORTHONORMAL_EPSILON 1e-5f
/* Blender's mat4_to_dquat threshold on |scale - 1| of S · bind. */
#define SSK_DQ_SCALE_EPSILON 1e-4f

static float column_length(const float m[16], int c)
{
    return sqrtf(m[c] * m[c] + m[4 + c] * m[4 + c] + m[8 + c] * m[8 + c]);
}

static float column_dot(const float m[16], int a, int b)
{
    return m[a] * m[b] + m[4 + a] * m[4 + b] + m[8 + a] * m[8 + b];
}

static bool is_orthonormal3(const float m[16])
{
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < i; ++j)
            if (fabsf(column_dot(m, i, j)) > SSK_ORTHONORMAL_EPSILON) return false;
    }
    for (int i = 0; i < 3; ++i)
        if (fabsf(column_dot(m, i, i) - 1.0f) > SSK_ORTHONORMAL_EPSILON) return false;
    return true;
}

static float determinant3(const float m[16])
{
    return m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) +
           m[2] * (m[4] * m[9] - m[5] * m[8]);
}

/* Quaternion of the (normalized) 3x3 part of a row-major matrix, as
 * Blender's mat4_to_quat: columns normalized first. */
static void matrix_to_quat(float q[4], const float m[16])
{
    float a[3][3];
    for (int c = 0; c < 3; ++c) {
        float l = column_length(m, c);
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int r = 0; r < 3; ++r) a[c][r] = m[4 * r + c] * inv;
    }
    ssk_axes_to_quat(q, a);
}

/* Row-major rotation matrix of a unit quaternion (w, x, y, z). */
static void quat_to_matrix(float m[16], const float q[4])
{
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    ssk_mat4_identity(m);
    m[0] = (float)(1 - 2 * (y * y + z * z));
    m[1] = (float)(2 * (x * y - w * z));
    m[2] = (float)(2 * (x * z + w * y));
    m[4] = (float)(2 * (x * y + w * z));
    m[5] = (float)(1 - 2 * (x * x + z * z));
    m[6] = (float)(2 * (y * z - w * x));
    m[8] = (float)(2 * (x * z - w * y));
    m[9] = (float)(2 * (y * z + w * x));
    m[10] = (float)(1 - 2 * (x * x + y * y));
}

ssk_status ssk_dqs_prepare(ssk_dual_quat *dst, const float *skinning, const float *bind,
                           uint32_t bone_count, ssk_error *err)
{
    for (uint32_t b = 0; b < bone_count; ++b) {
        const float *S = skinning + 16 * (size_t)b;
        const float *base = bind + 16 * (size_t)b;
        ssk_dual_quat *dq = &dst[b];
        float base_rs[16], R[16];
        memset(dq, 0, sizeof *dq);
        ssk_mat4_mul(base_rs, S, base);
        float ds[3];
        for (int c = 0; c < 3; ++c) ds[c] = column_length(base_rs, c) - 1.0f;
        bool scaled = !is_orthonormal3(S) || determinant3(S) < 0.0f ||
                      ds[0] * ds[0] + ds[1] * ds[1] + ds[2] * ds[2] >
                          SSK_DQ_SCALE_EPSILON * SSK_DQ_SCALE_EPSILON;
        if (scaled) {
            float axes[3][3], base_quat[4], base_r[16], base_inv[16], base_r_inv[16];
            float sc[16], tmp[16];
            ssk_orthogonalize_keep_y(axes, base_rs);
            ssk_axes_to_quat(base_quat, axes);
            quat_to_matrix(base_r, base_quat);
            base_r[3] = base_rs[3];
            base_r[7] = base_rs[7];
            base_r[11] = base_rs[11];
            if (!ssk_mat4_invert(base_inv, base) || !ssk_mat4_invert(base_r_inv, base_r))
                return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                     "bind matrix of bone %u is singular", b);
            ssk_mat4_mul(R, base_r, base_inv);
            ssk_mat4_mul(sc, base_r_inv, base_rs);
            ssk_mat4_mul(tmp, base, sc);
            ssk_mat4_mul(tmp, tmp, base_inv);
            memcpy(dq->scale, tmp, 12 * sizeof(float));
            dq->scale_weight = 1.0f;
        } else {
            memcpy(R, S, sizeof R);
        }
        matrix_to_quat(dq->real, R);
        const float t[3] = {R[3], R[7], R[11]};
        const float *q = dq->real;
        dq->dual[0] = -0.5f * (t[0] * q[1] + t[1] * q[2] + t[2] * q[3]);
        dq->dual[1] = 0.5f * (t[0] * q[0] + t[1] * q[3] - t[2] * q[2]);
        dq->dual[2] = 0.5f * (-t[0] * q[3] + t[1] * q[0] + t[2] * q[1]);
        dq->dual[3] = 0.5f * (t[0] * q[2] - t[1] * q[1] + t[2] * q[0]);
        if (!ssk_floats_finite(dq->real, 8) || !ssk_floats_finite(dq->scale, 12))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "dual quaternion of bone %u is non-finite", b);
    }
    return ssk_error_ok(err);
}

/* The blend of one vertex's n influences (weights wv, dual quaternions bq;
 * zero weights allowed); always inlined so that a constant n unrolls the
 * influence loops and keeps every partial sum in registers. */
static inline __attribute__((always_inline)) void
dqs_blend(float *restrict dst, int64_t v, float co[3], const float *restrict wv,
          const ssk_dual_quat *const *restrict bq, const uint32_t n, const float *pre,
          const float *post)
{
    {
        ssk_v4 q = {0, 0, 0, 0}, d = q, s0 = q, s1 = q, s2 = q;
        ssk_v4 real[SSK_MAX_INFLUENCES];
        float signed_w[SSK_MAX_INFLUENCES];
        float total = 0.0f, scale_weight = 0.0f;
        for (uint32_t i = 0; i < n; ++i) {
            const float wi = wv[i];
            const ssk_dual_quat *b = bq[i];
            real[i] = ssk_v4_load(b->real);
            /* add_weighted_dq_dq negates the weight when the bone's real
             * part points away from the running sum q_i = sum_{j<i} s_j r_j.
             * dot(q_i, r_i) = sum_{j<i} s_j dot(r_j, r_i): the pairwise dots
             * do not depend on the signs, which keeps the serial chain short
             * (same decisions as Blender up to rounding of a zero dot). */
            float dot = 0.0f;
            for (uint32_t j = 0; j < i; ++j) dot += signed_w[j] * ssk_v4_dot(real[j], real[i]);
            signed_w[i] = dot < 0.0f ? -wi : wi;
            total += wi;
            if (b->scale_weight != 0.0f) {
                const ssk_v4 pw = ssk_v4_splat(wi);
                s0 += pw * ssk_v4_load(b->scale);
                s1 += pw * ssk_v4_load(b->scale + 4);
                s2 += pw * ssk_v4_load(b->scale + 8);
                scale_weight += wi;
            }
        }
        for (uint32_t i = 0; i < n; ++i) {
            const ssk_v4 sw = ssk_v4_splat(signed_w[i]);
            q += sw * real[i];
            d += sw * ssk_v4_load(bq[i]->dual);
        }
        if (!(total > SSK_WEIGHT_EPSILON)) {
            dst[3 * v] = co[0];
            dst[3 * v + 1] = co[1];
            dst[3 * v + 2] = co[2];
            return;
        }
        if (pre) ssk_mat4_transform_point(co, pre, co);
        /* normalize_dq: divide by the total weight; fill the scale sum with
         * identity for the weight of unscaled bones. */
        const float inv_total = 1.0f / total;
        q *= ssk_v4_splat(inv_total);
        d *= ssk_v4_splat(inv_total);
        if (scale_weight != 0.0f) {
            const float add = total - scale_weight;
            s0[0] += add;
            s1[1] += add;
            s2[2] += add;
            const ssk_v4 p = {co[0], co[1], co[2], 1.0f};
            const ssk_v4 sc = ssk_v4_sum4(s0 * p, s1 * p, s2 * p, p) * ssk_v4_splat(inv_total);
            co[0] = sc[0];
            co[1] = sc[1];
            co[2] = sc[2];
        }
        /* mul_v3m3_dq: unnormalized rotation and translation, then / |q|^2. */
        const float qw = q[0], qx = q[1], qy = q[2], qz = q[3];
        const float t0 = d[0], t1 = d[1], t2 = d[2], t3 = d[3];
        float len2 = qw * qw + qx * qx + qy * qy + qz * qz;
        len2 = len2 > 0.0f ? 1.0f / len2 : len2;
        const float tx = 2.0f * (-t0 * qx + qw * t1 - t2 * qz + qy * t3);
        const float ty = 2.0f * (-t0 * qy + t1 * qz - qx * t3 + qw * t2);
        const float tz = 2.0f * (-t0 * qz + qx * t2 + qw * t3 - t1 * qy);
        const float x = co[0], y = co[1], z = co[2];
        float r[3];
        r[0] = (qw * qw + qx * qx - qy * qy - qz * qz) * x + 2.0f * (qx * qy - qw * qz) * y +
               2.0f * (qx * qz + qw * qy) * z;
        r[1] = 2.0f * (qx * qy + qw * qz) * x + (qw * qw + qy * qy - qx * qx - qz * qz) * y +
               2.0f * (qy * qz - qw * qx) * z;
        r[2] = 2.0f * (qx * qz - qw * qy) * x + 2.0f * (qy * qz + qw * qx) * y +
               (qw * qw + qz * qz - qx * qx - qy * qy) * z;
        r[0] = (r[0] + tx) * len2;
        r[1] = (r[1] + ty) * len2;
        r[2] = (r[2] + tz) * len2;
        if (post) ssk_mat4_transform_point(r, post, r);
        dst[3 * v] = r[0];
        dst[3 * v + 1] = r[1];
        dst[3 * v + 2] = r[2];
    }
}

/* One vertex of k influence slots. The influences of weight 0 (the padding
 * of vertices with fewer than k) add nothing to any sum: they are dropped
 * first, without branches, so the pairwise sign dots cost n^2 for the n
 * real influences, not k^2 (a body with automatic weights has k = 12 and
 * n = 3 on average); up to 4 take the unrolled blend, padded with weight 0. */
static inline __attribute__((always_inline)) void
dqs_vertex(float *restrict dst, const float *restrict positions, int64_t v,
           const int32_t *restrict bone_indices, const float *restrict weights, const uint32_t k,
           const ssk_dual_quat *restrict dual_quats, const float *pre, const float *post)
{
    float co[3] = {positions[3 * v], positions[3 * v + 1], positions[3 * v + 2]};
    const int32_t *idx = bone_indices + (size_t)v * k;
    const float *w = weights + (size_t)v * k;
    float wv[SSK_MAX_INFLUENCES + 4];
    const ssk_dual_quat *bq[SSK_MAX_INFLUENCES + 4];
    uint32_t n = 0;
    for (uint32_t i = 0; i < k; ++i) {
        wv[n] = w[i];
        bq[n] = &dual_quats[idx[i]];
        n += w[i] != 0.0f;
    }
    if (n <= 4) {
        for (uint32_t i = n; i < 4; ++i) {
            wv[i] = 0.0f;
            bq[i] = dual_quats;
        }
        dqs_blend(dst, v, co, wv, bq, 4, pre, post);
    } else {
        dqs_blend(dst, v, co, wv, bq, n, pre, post);
    }
}

/* Eight vertices with 4 influences each, all bones rigid and no pre/post
 * matrices: the same arithmetic as dqs_vertex with lanes = vertices. The
 * 8 floats (real, dual) of each influence are loaded per vertex and
 * transposed into lane vectors. The sign decisions use the pairwise dots
 * (see dqs_vertex). */
static inline __attribute__((always_inline)) void
dqs_rigid_lanes8(float *restrict dst, const float *restrict positions,
                 const int32_t *restrict bone_indices, const float *restrict weights,
                 const ssk_dual_quat *restrict dual_quats)
{
    ssk_v8 q[4][8]; /* q[i][c]: component c of influence i, lanes = vertices */
    for (int i = 0; i < 4; ++i) {
        for (int l = 0; l < 8; ++l) q[i][l] = ssk_v8_load(dual_quats[bone_indices[4 * l + i]].real);
        ssk_v8_transpose8(q[i]);
    }
    ssk_v8 w[4];
    ssk_v8_load_weights4(w, weights);
    const ssk_v8 zero = ssk_v8_splat(0.0f);
    const ssk_i8 sign_bit = (ssk_i8)ssk_v8_splat(-0.0f);
    ssk_v8 s[4];
    s[0] = w[0];
    for (int i = 1; i < 4; ++i) {
        ssk_v8 dot = zero;
        for (int j = 0; j < i; ++j)
            dot += s[j] * (q[j][0] * q[i][0] + q[j][1] * q[i][1] + q[j][2] * q[i][2] +
                           q[j][3] * q[i][3]);
        s[i] = (ssk_v8)((ssk_i8)w[i] ^ ((dot < zero) & sign_bit));
    }
    ssk_v8 qw = zero, qx = zero, qy = zero, qz = zero, t0 = zero, t1 = zero, t2 = zero,
           t3 = zero;
    for (int i = 0; i < 4; ++i) {
        qw += s[i] * q[i][0];
        qx += s[i] * q[i][1];
        qy += s[i] * q[i][2];
        qz += s[i] * q[i][3];
        t0 += s[i] * q[i][4];
        t1 += s[i] * q[i][5];
        t2 += s[i] * q[i][6];
        t3 += s[i] * q[i][7];
    }
    const ssk_v8 total = w[0] + w[1] + w[2] + w[3];
    const ssk_v8 eps = ssk_v8_splat(SSK_WEIGHT_EPSILON);
    const ssk_i8 weighted = total > eps;
    const ssk_v8 inv_total = ssk_v8_splat(1.0f) / ssk_v8_select(weighted, total, eps);
    qw *= inv_total;
    qx *= inv_total;
    qy *= inv_total;
    qz *= inv_total;
    t0 *= inv_total;
    t1 *= inv_total;
    t2 *= inv_total;
    t3 *= inv_total;
    const ssk_v8 qq = qw * qw + qx * qx + qy * qy + qz * qz;
    const ssk_v8 len2 = ssk_v8_splat(1.0f) / ssk_v8_select(qq > zero, qq, ssk_v8_splat(1.0f));
    const ssk_v8 two = ssk_v8_splat(2.0f);
    const ssk_v8 tx = two * (-t0 * qx + qw * t1 - t2 * qz + qy * t3);
    const ssk_v8 ty = two * (-t0 * qy + t1 * qz - qx * t3 + qw * t2);
    const ssk_v8 tz = two * (-t0 * qz + qx * t2 + qw * t3 - t1 * qy);
    ssk_v8 x, y, z;
    ssk_v8_load_xyz(positions, &x, &y, &z);
    const ssk_v8 ox = ((qw * qw + qx * qx - qy * qy - qz * qz) * x + two * (qx * qy - qw * qz) * y +
                       two * (qx * qz + qw * qy) * z + tx) * len2;
    const ssk_v8 oy = (two * (qx * qy + qw * qz) * x + (qw * qw + qy * qy - qx * qx - qz * qz) * y +
                       two * (qy * qz - qw * qx) * z + ty) * len2;
    const ssk_v8 oz = (two * (qx * qz - qw * qy) * x + two * (qy * qz + qw * qx) * y +
                       (qw * qw + qz * qz - qx * qx - qy * qy) * z + tz) * len2;
    ssk_v8_store_xyz(dst, ssk_v8_select(weighted, ox, x), ssk_v8_select(weighted, oy, y),
                     ssk_v8_select(weighted, oz, z));
}

SSK_TARGET_CLONES
static void dqs_block(float *restrict dst, const float *restrict positions, int64_t begin,
                      int64_t end, const int32_t *restrict bone_indices,
                      const float *restrict weights, uint32_t k,
                      const ssk_dual_quat *restrict dual_quats, const float *pre,
                      const float *post, bool rigid)
{
#define SSK_DQS_LOOP(K)                                                                 \
    for (int64_t v = begin; v < end; ++v)                                               \
        dqs_vertex(dst, positions, v, bone_indices, weights, K, dual_quats, pre, post);
    if (k == 4 && rigid) {
        int64_t v = begin;
        for (; v + 8 <= end; v += 8)
            dqs_rigid_lanes8(dst + 3 * v, positions + 3 * v, bone_indices + 4 * v,
                             weights + 4 * v, dual_quats);
        begin = v; /* the remaining vertices take the general path */
    } else if (k > 4 && rigid) {
        /* More slots than influences (automatic weights: k = 12, n = 3 on
         * average, the padding last): the lane kernel on each vertex's
         * first 4 slots (weight-0 slots add nothing), then again by the
         * general path the lanes with a nonzero weight past slot 4. */
        int64_t v = begin;
        for (; v + 8 <= end; v += 8) {
            int32_t ci[8 * 4];
            float cw[8 * 4];
            uint32_t over = 0; /* lanes with a nonzero weight past slot 4 */
            for (int l = 0; l < 8; ++l) {
                const int32_t *idx = bone_indices + (size_t)(v + l) * k;
                const float *w = weights + (size_t)(v + l) * k;
                memcpy(ci + 4 * l, idx, 4 * sizeof(int32_t));
                memcpy(cw + 4 * l, w, 4 * sizeof(float));
                uint32_t rest = 0;
                for (uint32_t i = 4; i < k; ++i) rest |= w[i] != 0.0f;
                over |= rest << l;
            }
            if (over != 0xffu)
                dqs_rigid_lanes8(dst + 3 * v, positions + 3 * v, ci, cw, dual_quats);
            for (int l = 0; l < 8; ++l) /* those lanes again, every influence */
                if (over >> l & 1u)
                    dqs_vertex(dst, positions, v + l, bone_indices, weights, k, dual_quats, pre,
                               post);
        }
        begin = v;
    }
    switch (k) {
    case 1: SSK_DQS_LOOP(1) break;
    case 2: SSK_DQS_LOOP(2) break;
    case 3: SSK_DQS_LOOP(3) break;
    case 4: SSK_DQS_LOOP(4) break;
    default: SSK_DQS_LOOP(k) break;
    }
#undef SSK_DQS_LOOP
}

typedef struct dqs_job {
    float *dst;
    const float *positions, *weights, *pre, *post;
    const int32_t *bone_indices;
    const ssk_dual_quat *dual_quats;
    uint32_t influence_count;
    bool rigid;
} dqs_job;

static void dqs_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const dqs_job *j = ctx;
    (void)chunk;
    dqs_block(j->dst, j->positions, begin, end, j->bone_indices, j->weights, j->influence_count,
              j->dual_quats, j->pre, j->post, j->rigid);
}

void ssk_dqs_deform(float *restrict dst, const float *restrict positions, uint32_t vertex_count,
                    const int32_t *restrict bone_indices, const float *restrict weights,
                    uint32_t influence_count, const ssk_dual_quat *restrict dual_quats,
                    uint32_t bone_count, const float *pre, const float *post)
{
    /* The lane kernel covers the common case: no scaled bone, no pre/post. */
    bool rigid = !pre && !post;
    for (uint32_t b = 0; rigid && b < bone_count; ++b) rigid = dual_quats[b].scale_weight == 0.0f;
    dqs_job j = {dst, positions, weights, pre, post, bone_indices, dual_quats, influence_count,
                 rigid};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, dqs_chunk, &j);
}
