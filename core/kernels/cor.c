/*
 * cor.c — skinning with optimized centers of rotation, the runtime part
 * (Le & Hodgins, "Real-time Skeletal Skinning with Optimized Centers of
 * Rotation", TOG 2016, sec. 3.3, Algorithm 1; also Eq. 6 of the 2019
 * skeleton/cage paper, which restates it), and the parameters of the
 * precomputation (core/bind/cor_precompute.c).
 *
 * Per vertex with weights w_i (sum W) of bones with rigid parts
 * [R_i t_i] (unit quaternions q_i) and CoR p* (rig space):
 *   q = w_1 q_1 (+) w_2 q_2 (+) ... , a (+) b = a + b if a . b >= 0, else
 *       a - b (line 5: the running sum decides each term's sign);
 *   R = rotation of q / |q| (line 6);
 *   c~ = sum_i w_i (R_i p* + t_i) / W, the LBS of the CoR (line 7);
 *   v' = R v + t, t = c~ - R p* (lines 8-9; Eq. 3b).
 * Line 7 of the paper blends the matrices, [R~ t~] = sum w [R_i t_i], and
 * applies the blend to p*; applying each rigid part to p* and blending the
 * points is the same sum, and lets a bone be stored as a quaternion and a
 * translation (8 floats: one transposed load per influence in the lane
 * kernel below).
 *
 * Scale and shear (sec. 3.3, "handled in two phases ... similar to DQS"):
 * each scaled bone's skinning matrix is split as ssk_dqs_prepare splits it,
 * S_i = [R_i t_i] · Sc_i; the scale matrices are blended linearly (with the
 * identity for the weight of unscaled bones) into M and applied to both the
 * vertex and its CoR (phase 1), then the rigid method above runs on the
 * scaled points (phase 2): v' = R (M v - M p*) + c~(M p*). With one bone
 * this is S_i v, and without scaled bones it is Algorithm 1.
 *
 * A vertex without CoR (flag 0: one influence, or a zero similarity
 * integral) is skinned by LBS with the skinning matrices (the paper's
 * Fig. 7 draws CoRs only for vertices with two or more weights).
 */
#include "model/internal.h"
#include "kernels/simd.h"

#include <math.h>
#include <string.h>

/* --- parameters --------------------------------------------------------- */

/* The paper's values (sec. 4): (epsilon, sigma, omega, cutoff) =
 * (0.1, 0.1, 0.1, 1e-6). */
#define COR_DEFAULT_SIGMA 0.1f
#define COR_DEFAULT_EPSILON 0.1f
#define COR_DEFAULT_OMEGA 0.1f
#define COR_DEFAULT_CUTOFF 1e-6f

void ssk_cor_params_default(ssk_cor_params *out)
{
    if (!out) return;
    out->sigma = COR_DEFAULT_SIGMA;
    out->epsilon = COR_DEFAULT_EPSILON;
    out->omega = COR_DEFAULT_OMEGA;
    out->cutoff = COR_DEFAULT_CUTOFF;
    out->progress = NULL;
    out->progress_user = NULL;
}

ssk_status ssk_cor_params_check(const ssk_cor_params *params, ssk_error *err)
{
    if (!params)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "centers of rotation: NULL parameters");
    if (!(params->sigma >= SSK_COR_MIN_SIGMA && params->sigma <= SSK_COR_MAX_SIGMA))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "centers of rotation: sigma %g out of range [%g, %g] (Eq. 1's "
                             "kernel width; the paper uses 0.1)",
                             (double)params->sigma, (double)SSK_COR_MIN_SIGMA,
                             (double)SSK_COR_MAX_SIGMA);
    if (!(params->epsilon >= SSK_COR_MIN_EPSILON && params->epsilon <= SSK_COR_MAX_EPSILON))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "centers of rotation: epsilon %g out of range [%g, %g] (the "
                             "subdivision threshold on an edge's weight distance; the paper "
                             "uses 0.1)",
                             (double)params->epsilon, (double)SSK_COR_MIN_EPSILON,
                             (double)SSK_COR_MAX_EPSILON);
    if (!(params->omega > 0.0f && params->omega <= SSK_COR_MAX_OMEGA))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "centers of rotation: omega %g out of range (0, %g] (the seed "
                             "search radius in weight space; the paper uses 0.1)",
                             (double)params->omega, (double)SSK_COR_MAX_OMEGA);
    if (!(params->cutoff > 0.0f && params->cutoff <= SSK_COR_MAX_CUTOFF))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "centers of rotation: cutoff %g out of range (0, %g] (the "
                             "similarity below which the search stops; the paper uses 1e-6)",
                             (double)params->cutoff, (double)SSK_COR_MAX_CUTOFF);
    return ssk_error_ok(err);
}

/* --- per-bone data ------------------------------------------------------ */

ssk_status ssk_cor_prepare(ssk_cor_bone *dst, const float *skinning, const float *bind,
                           uint32_t bone_count, ssk_error *err)
{
    for (uint32_t b = 0; b < bone_count; ++b) {
        const float *S = skinning + 16 * (size_t)b;
        ssk_dual_quat dq;
        ssk_status st = ssk_dqs_prepare(&dq, S, bind + 16 * (size_t)b, 1, err);
        if (st != SSK_OK) {
            if (err) {
                char message[SSK_ERROR_MESSAGE_SIZE];
                memcpy(message, err->message, sizeof message);
                return ssk_error_set(err, st, "bone %u: %s", b, message);
            }
            return st;
        }
        ssk_cor_bone *o = &dst[b];
        memset(o, 0, sizeof *o);
        memcpy(o->rotation, dq.real, sizeof o->rotation);
        for (int r = 0; r < 3; ++r) memcpy(o->matrix + 4 * r, S + 4 * r, 4 * sizeof(float));
        if (dq.scale_weight == 0.0f) {
            /* Unscaled: the rigid part is S itself. */
            o->translation[0] = S[3];
            o->translation[1] = S[7];
            o->translation[2] = S[11];
        } else {
            /* The dual part is d = (0, t) q / 2 (ssk_dqs_prepare), so
             * (0, t) = 2 d conj(q) / |q|^2:
             * t = 2 (q_w d_v - d_w q_v - d_v x q_v) / |q|^2. */
            const double qw = dq.real[0], qx = dq.real[1], qy = dq.real[2], qz = dq.real[3];
            const double dw = dq.dual[0], dx = dq.dual[1], dy = dq.dual[2], dz = dq.dual[3];
            const double n2 = qw * qw + qx * qx + qy * qy + qz * qz;
            const double k = n2 > 0.0 ? 2.0 / n2 : 0.0;
            o->translation[0] = (float)(k * (qw * dx - dw * qx - (dy * qz - dz * qy)));
            o->translation[1] = (float)(k * (qw * dy - dw * qy - (dz * qx - dx * qz)));
            o->translation[2] = (float)(k * (qw * dz - dw * qz - (dx * qy - dy * qx)));
            memcpy(o->scale, dq.scale, sizeof o->scale);
            o->scale_weight = 1.0f;
        }
        if (!ssk_floats_finite(o->rotation, 8) || !ssk_floats_finite(o->matrix, 24))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "CoR data of bone %u is non-finite", b);
    }
    return ssk_error_ok(err);
}

/* --- kernels -------------------------------------------------------------- */

/* r = R(q) v / |q|^2 for an unnormalized quaternion q (w, x, y, z): the
 * rotation part of Blender's mul_v3m3_dq, as dqs.c (0 when q = 0). */
static inline __attribute__((always_inline)) void rotate_unnormalized(float r[3], const ssk_v4 q,
                                                                      const float v[3])
{
    const float qw = q[0], qx = q[1], qy = q[2], qz = q[3];
    float len2 = qw * qw + qx * qx + qy * qy + qz * qz;
    len2 = len2 > 0.0f ? 1.0f / len2 : len2;
    const float x = v[0], y = v[1], z = v[2];
    r[0] = ((qw * qw + qx * qx - qy * qy - qz * qz) * x + 2.0f * (qx * qy - qw * qz) * y +
            2.0f * (qx * qz + qw * qy) * z) * len2;
    r[1] = (2.0f * (qx * qy + qw * qz) * x + (qw * qw + qy * qy - qx * qx - qz * qz) * y +
            2.0f * (qy * qz - qw * qx) * z) * len2;
    r[2] = (2.0f * (qx * qz - qw * qy) * x + 2.0f * (qy * qz + qw * qx) * y +
            (qw * qw + qz * qz - qx * qx - qy * qy) * z) * len2;
}

/* v rotated by the unit quaternion q: t = 2 u x v, v' = v + w t + u x t
 * (u the vector part). */
static inline __attribute__((always_inline)) void rotate_unit(float r[3], const float q[4],
                                                              const float v[3])
{
    const float w = q[0], ux = q[1], uy = q[2], uz = q[3];
    const float tx = 2.0f * (uy * v[2] - uz * v[1]);
    const float ty = 2.0f * (uz * v[0] - ux * v[2]);
    const float tz = 2.0f * (ux * v[1] - uy * v[0]);
    r[0] = v[0] + w * tx + (uy * tz - uz * ty);
    r[1] = v[1] + w * ty + (uz * tx - ux * tz);
    r[2] = v[2] + w * tz + (ux * ty - uy * tx);
}

static inline __attribute__((always_inline)) void linear3(float r[3], const float m[16],
                                                          const float v[3])
{
    const float x = v[0], y = v[1], z = v[2];
    r[0] = m[0] * x + m[1] * y + m[2] * z;
    r[1] = m[4] * x + m[5] * y + m[6] * z;
    r[2] = m[8] * x + m[9] * y + m[10] * z;
}

static inline __attribute__((always_inline)) void normalize3(float v[3])
{
    const float l2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    const float inv = l2 > 0.0f ? 1.0f / sqrtf(l2) : 0.0f;
    v[0] *= inv;
    v[1] *= inv;
    v[2] *= inv;
}

/* One vertex, any case; always inlined so that a constant k unrolls the
 * influence loops. */
static inline __attribute__((always_inline)) void
cor_vertex(float *restrict dst, float *restrict dst_normals, const float *restrict positions,
           const float *restrict normals, int64_t v, const int32_t *restrict bone_indices,
           const float *restrict weights, const uint32_t k, const float *restrict centers,
           const uint8_t *restrict flags, const ssk_cor_bone *restrict bones, const float *pre,
           const float *post)
{
    float co[3] = {positions[3 * v], positions[3 * v + 1], positions[3 * v + 2]};
    const int32_t *idx = bone_indices + (size_t)v * k;
    const float *w = weights + (size_t)v * k;
    float total = 0.0f;
    for (uint32_t i = 0; i < k; ++i) total += w[i];
    float n[3] = {0.0f, 0.0f, 0.0f};
    if (dst_normals) {
        n[0] = normals[3 * v];
        n[1] = normals[3 * v + 1];
        n[2] = normals[3 * v + 2];
    }
    if (!(total > SSK_WEIGHT_EPSILON)) {
        memcpy(dst + 3 * v, co, sizeof co);
        if (dst_normals) memcpy(dst_normals + 3 * v, n, sizeof n);
        return;
    }
    if (pre) {
        ssk_mat4_transform_point(co, pre, co);
        if (dst_normals) linear3(n, pre, n);
    }
    const float inv_total = 1.0f / total;
    float r[3];
    if (!flags[v]) {
        /* LBS with the skinning matrices, in lbs.c's order. */
        ssk_v4 r0 = {0, 0, 0, 0}, r1 = r0, r2 = r0;
        for (uint32_t i = 0; i < k; ++i) {
            const float *m = bones[idx[i]].matrix;
            const ssk_v4 wi = ssk_v4_splat(w[i]);
            r0 += wi * ssk_v4_load(m);
            r1 += wi * ssk_v4_load(m + 4);
            r2 += wi * ssk_v4_load(m + 8);
        }
        const ssk_v4 p = {co[0], co[1], co[2], 1.0f};
        const ssk_v4 out = ssk_v4_sum4(r0 * p, r1 * p, r2 * p, p) * ssk_v4_splat(inv_total);
        r[0] = out[0];
        r[1] = out[1];
        r[2] = out[2];
        if (dst_normals) {
            const float nx = n[0], ny = n[1], nz = n[2];
            n[0] = r0[0] * nx + r0[1] * ny + r0[2] * nz;
            n[1] = r1[0] * nx + r1[1] * ny + r1[2] * nz;
            n[2] = r2[0] * nx + r2[1] * ny + r2[2] * nz;
        }
    } else {
        /* Line 5: the running sum decides each term's sign. */
        ssk_v4 q = {0, 0, 0, 0}, s0 = q, s1 = q, s2 = q;
        float scale_weight = 0.0f;
        for (uint32_t i = 0; i < k; ++i) {
            const ssk_cor_bone *b = &bones[idx[i]];
            const ssk_v4 qi = ssk_v4_load(b->rotation);
            const float wi = w[i];
            const float si = ssk_v4_dot(q, qi) < 0.0f ? -wi : wi;
            q += ssk_v4_splat(si) * qi;
            if (b->scale_weight != 0.0f && wi != 0.0f) {
                const ssk_v4 pw = ssk_v4_splat(wi);
                s0 += pw * ssk_v4_load(b->scale);
                s1 += pw * ssk_v4_load(b->scale + 4);
                s2 += pw * ssk_v4_load(b->scale + 8);
                scale_weight += wi;
            }
        }
        float c[3] = {centers[3 * v], centers[3 * v + 1], centers[3 * v + 2]};
        if (scale_weight != 0.0f) {
            /* Phase 1: the blended scale on the vertex and on its CoR. */
            const float add = total - scale_weight;
            s0[0] += add;
            s1[1] += add;
            s2[2] += add;
            const ssk_v4 p = {co[0], co[1], co[2], 1.0f}, pc = {c[0], c[1], c[2], 1.0f};
            const ssk_v4 sp = ssk_v4_sum4(s0 * p, s1 * p, s2 * p, p) * ssk_v4_splat(inv_total);
            const ssk_v4 sc = ssk_v4_sum4(s0 * pc, s1 * pc, s2 * pc, pc) * ssk_v4_splat(inv_total);
            for (int a = 0; a < 3; ++a) {
                co[a] = sp[a];
                c[a] = sc[a];
            }
            if (dst_normals) {
                const float nx = n[0], ny = n[1], nz = n[2];
                n[0] = s0[0] * nx + s0[1] * ny + s0[2] * nz;
                n[1] = s1[0] * nx + s1[1] * ny + s1[2] * nz;
                n[2] = s2[0] * nx + s2[1] * ny + s2[2] * nz;
            }
        }
        /* Line 7: the LBS of the CoR, c~ = sum_i w_i (R_i c + t_i) / W. */
        float ct[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t i = 0; i < k; ++i) {
            const ssk_cor_bone *b = &bones[idx[i]];
            float rc[3];
            rotate_unit(rc, b->rotation, c);
            for (int a = 0; a < 3; ++a) ct[a] += w[i] * (rc[a] + b->translation[a]);
        }
        /* Lines 8-9: v' = R (v - c) + c~. */
        const float d[3] = {co[0] - c[0], co[1] - c[1], co[2] - c[2]};
        rotate_unnormalized(r, q, d);
        for (int a = 0; a < 3; ++a) r[a] += ct[a] * inv_total;
        if (dst_normals) {
            const float nn[3] = {n[0], n[1], n[2]};
            rotate_unnormalized(n, q, nn);
        }
    }
    if (post) {
        ssk_mat4_transform_point(r, post, r);
        if (dst_normals) linear3(n, post, n);
    }
    memcpy(dst + 3 * v, r, sizeof r);
    if (dst_normals) {
        normalize3(n);
        memcpy(dst_normals + 3 * v, n, sizeof n);
    }
}

/* Eight vertices with 4 influences each, no scaled bone, no pre/post
 * matrices and no normals: the same method with lanes = vertices. The
 * first 8 floats of each influence's bone (quaternion, translation) are
 * loaded per vertex and transposed into lane vectors; a vertex without CoR
 * takes its own position as center, for which the formula is its LBS
 * (v - c = 0, c~ = sum w (R_i v + t_i) / W = sum w S_i v / W for rigid
 * bones), so no lane branches. */
static inline __attribute__((always_inline)) void
cor_rigid_lanes8(float *restrict dst, const float *restrict positions,
                 const int32_t *restrict bone_indices, const float *restrict weights,
                 const float *restrict centers, const uint8_t *restrict flags,
                 const ssk_cor_bone *restrict bones)
{
    ssk_v8 b[4][8]; /* b[i][c]: component c of influence i (q w x y z, t x y z) */
    for (int i = 0; i < 4; ++i) {
        for (int l = 0; l < 8; ++l) b[i][l] = ssk_v8_load(bones[bone_indices[4 * l + i]].rotation);
        ssk_v8_transpose8(b[i]);
    }
    ssk_v8 w[4];
    ssk_v8_load_weights4(w, weights);
    const ssk_v8 zero = ssk_v8_splat(0.0f);
    const ssk_i8 sign_bit = (ssk_i8)ssk_v8_splat(-0.0f);
    /* Line 5, the running sum. */
    ssk_v8 qw = w[0] * b[0][0], qx = w[0] * b[0][1], qy = w[0] * b[0][2], qz = w[0] * b[0][3];
    for (int i = 1; i < 4; ++i) {
        const ssk_v8 dot = qw * b[i][0] + qx * b[i][1] + qy * b[i][2] + qz * b[i][3];
        const ssk_v8 s = (ssk_v8)((ssk_i8)w[i] ^ ((dot < zero) & sign_bit));
        qw += s * b[i][0];
        qx += s * b[i][1];
        qy += s * b[i][2];
        qz += s * b[i][3];
    }
    const ssk_v8 total = w[0] + w[1] + w[2] + w[3];
    const ssk_v8 eps = ssk_v8_splat(SSK_WEIGHT_EPSILON);
    const ssk_i8 weighted = total > eps;
    const ssk_v8 inv_total = ssk_v8_splat(1.0f) / ssk_v8_select(weighted, total, eps);
    ssk_v8 x, y, z, cx, cy, cz;
    ssk_v8_load_xyz(positions, &x, &y, &z);
    ssk_v8_load_xyz(centers, &cx, &cy, &cz);
    const ssk_i8 has = {flags[0] ? -1 : 0, flags[1] ? -1 : 0, flags[2] ? -1 : 0,
                        flags[3] ? -1 : 0, flags[4] ? -1 : 0, flags[5] ? -1 : 0,
                        flags[6] ? -1 : 0, flags[7] ? -1 : 0};
    cx = ssk_v8_select(has, cx, x);
    cy = ssk_v8_select(has, cy, y);
    cz = ssk_v8_select(has, cz, z);
    /* Line 7: sum_i w_i (R_i c + t_i). */
    const ssk_v8 two = ssk_v8_splat(2.0f);
    ssk_v8 px = zero, py = zero, pz = zero;
    for (int i = 0; i < 4; ++i) {
        const ssk_v8 uw = b[i][0], ux = b[i][1], uy = b[i][2], uz = b[i][3];
        const ssk_v8 tx = two * (uy * cz - uz * cy);
        const ssk_v8 ty = two * (uz * cx - ux * cz);
        const ssk_v8 tz = two * (ux * cy - uy * cx);
        px += w[i] * (cx + uw * tx + (uy * tz - uz * ty) + b[i][4]);
        py += w[i] * (cy + uw * ty + (uz * tx - ux * tz) + b[i][5]);
        pz += w[i] * (cz + uw * tz + (ux * ty - uy * tx) + b[i][6]);
    }
    /* Lines 8-9: R (v - c) / |q|^2 + c~. */
    const ssk_v8 dx = x - cx, dy = y - cy, dz = z - cz;
    const ssk_v8 qq = qw * qw + qx * qx + qy * qy + qz * qz;
    const ssk_v8 len2 = ssk_v8_splat(1.0f) / ssk_v8_select(qq > zero, qq, ssk_v8_splat(1.0f));
    const ssk_v8 ox = ((qw * qw + qx * qx - qy * qy - qz * qz) * dx + two * (qx * qy - qw * qz) * dy +
                       two * (qx * qz + qw * qy) * dz) * len2 + px * inv_total;
    const ssk_v8 oy = (two * (qx * qy + qw * qz) * dx + (qw * qw + qy * qy - qx * qx - qz * qz) * dy +
                       two * (qy * qz - qw * qx) * dz) * len2 + py * inv_total;
    const ssk_v8 oz = (two * (qx * qz - qw * qy) * dx + two * (qy * qz + qw * qx) * dy +
                       (qw * qw + qz * qz - qx * qx - qy * qy) * dz) * len2 + pz * inv_total;
    ssk_v8_store_xyz(dst, ssk_v8_select(weighted, ox, x), ssk_v8_select(weighted, oy, y),
                     ssk_v8_select(weighted, oz, z));
}

SSK_TARGET_CLONES
static void cor_block(float *restrict dst, float *restrict dst_normals,
                      const float *restrict positions, const float *restrict normals,
                      int64_t begin, int64_t end, const int32_t *restrict bone_indices,
                      const float *restrict weights, uint32_t k, const float *restrict centers,
                      const uint8_t *restrict flags, const ssk_cor_bone *restrict bones,
                      const float *pre, const float *post, bool lanes)
{
#define SSK_COR_LOOP(K)                                                                   \
    for (int64_t v = begin; v < end; ++v)                                                 \
        cor_vertex(dst, dst_normals, positions, normals, v, bone_indices, weights, K, centers, \
                   flags, bones, pre, post);
    if (k == 4 && lanes) {
        int64_t v = begin;
        for (; v + 8 <= end; v += 8)
            cor_rigid_lanes8(dst + 3 * v, positions + 3 * v, bone_indices + 4 * v,
                             weights + 4 * v, centers + 3 * v, flags + v, bones);
        begin = v; /* the remaining vertices take the general path */
    }
    switch (k) {
    case 1: SSK_COR_LOOP(1) break;
    case 2: SSK_COR_LOOP(2) break;
    case 3: SSK_COR_LOOP(3) break;
    case 4: SSK_COR_LOOP(4) break;
    default: SSK_COR_LOOP(k) break;
    }
#undef SSK_COR_LOOP
}

typedef struct cor_job {
    float *dst, *dst_normals;
    const float *positions, *normals, *weights, *centers, *pre, *post;
    const uint8_t *flags;
    const int32_t *bone_indices;
    const ssk_cor_bone *bones;
    uint32_t influence_count;
    bool lanes;
} cor_job;

static void cor_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const cor_job *j = ctx;
    (void)chunk;
    cor_block(j->dst, j->dst_normals, j->positions, j->normals, begin, end, j->bone_indices,
              j->weights, j->influence_count, j->centers, j->flags, j->bones, j->pre, j->post,
              j->lanes);
}

void ssk_cor_deform(float *restrict dst, float *restrict dst_normals,
                    const float *restrict positions, const float *restrict normals,
                    uint32_t vertex_count, const int32_t *restrict bone_indices,
                    const float *restrict weights, uint32_t influence_count,
                    const float *restrict centers, const uint8_t *restrict flags,
                    const ssk_cor_bone *restrict bones, uint32_t bone_count, const float *pre,
                    const float *post)
{
    if (!dst_normals || !normals) dst_normals = NULL, normals = NULL;
    bool lanes = !pre && !post && !dst_normals;
    for (uint32_t b = 0; lanes && b < bone_count; ++b) lanes = bones[b].scale_weight == 0.0f;
    cor_job j = {dst,   dst_normals, positions,      normals, weights, centers, pre, post,
                 flags, bone_indices, bones, influence_count, lanes};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, cor_chunk, &j);
}
