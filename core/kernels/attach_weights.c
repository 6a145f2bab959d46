/*
 * attach_weights.c — attachment skinning with one attachment per skin
 * weight influence ("attachment": "weights" in a skinning node): rigid
 * attachment and incremental rotation skinning (Toothman 2020, 4.1,
 * Eq. 14-18) evaluated once per influence of the vertex and blended with
 * its skin weights. A departure from the paper, made for real characters
 * (issue #15, docs/real-characters.md):
 *
 * The paper attaches every vertex to ONE bone (the attachment binding,
 * bind.c) and moves it rigidly with that bone, plus the incremental
 * rotations near the bone's joints. On a 2-bone limb the attachments of
 * neighboring vertices lie on one chain and move continuously. On a real
 * rig the skin around the hips, shoulders, chest and neck is weighted to
 * bones that are not parent and child (thigh.L with thigh.R or the pelvis,
 * spine with the shoulder and breast bones, several short spine bones):
 * neighboring vertices end up attached to bones that move differently, so
 * every pose that moves those bones apart tears or folds the triangles
 * between them (spikes and dents; measured on the Rigify body: 1.9% of the
 * triangles turned more than 60 degrees from LBS's normal, edges stretched
 * 200x LBS's largest stretch). Smoothing the attachment points does not
 * remove a jump between two bones, it only moves it.
 *
 * Here a vertex x (rig space, rest) with influences (b_k, w_k) gets, for
 * every influence, the attachment on bone b_k alone:
 *   t_k = clamp((x - p_k) . (c_k - p_k) / |c_k - p_k|^2, 0, 1),
 *   a_k = p_k + t_k (c_k - p_k),  s_k = x - a_k        (ssk_attach_weight_slots)
 * and in a pose
 *   rigid:  v' = sum_k w_k (a'_k + R_k s_k),
 *   IRS:    v' = sum_k w_k (a'_k + Delta_k R_k s_k)    (Eq. 15-18 per k)
 * (weights normalized by their sum). For a bone that is not stretched
 * a'_k + R_k s_k = S_k x, so the rigid variant is exactly LBS.
 *
 * IRS's Eq. 14 weights p_w, c_w come from the skin weights, not from t:
 *   p_w = (w_P / (w_k + w_P)) / p_i,   c_w = (w_C / (w_k + w_C)) / (1 - c_i),
 * w_P (w_C) the vertex's weight on b_k's parent (tail child), 0 when it is
 * not an influence; p_i = c_i = 0.5 by default, so p_w = 2 w_P / (w_k + w_P).
 * Why: with u = w_C / (w_P + w_C) the share of the child at a joint, the
 * parent's term turns its scale vector by Delta_P = D^(c_w / 2) = D^u
 * (D = R_C R_P^-1) and the child's by Delta_C = D^(-p_w / 2) = D^(u - 1),
 * so both terms carry the SAME rotation D^u R_P: the blend never averages
 * two rotations that a bend or a twist pulls apart (LBS's collapse and
 * candy wrapper), and the rotation goes from R_P to R_C as the weights
 * do. Where the vertex has no weight on a neighbor bone the term is the
 * bone's rigid attachment. Eq. 14 in t makes the rotation change over half
 * of the bone's length; on a real rig's short bones (a 6 cm neck, Rigify's
 * spine.004-006, pelvis, shoulder) that is far steeper than the skin is
 * thick, and it folded the skin where the weights were still 1
 * (BCN_Epileptic.X: 0.39% of the triangles turned more than 60 degrees
 * from LBS with t, 0.09% with the weights; the 2-bone test limb: section
 * at a 180 degree twist 0.97 with t, 1.0 with the weights; volume at a
 * 135 degree bend 0.89 with t, 0.96 with the weights, LBS 0.93).
 * IRS with Fig. 13's length adjustment is allowed but not advised here: it
 * pushes the inner side of a bend out along each term's scale vector and
 * tears edges (largest stretch 5.1 at 135 degrees on the test limb, 2.7
 * without).
 *
 * Every term is continuous in x (the clamped projection onto one segment
 * is; p_w and c_w are continuous in the weights), so the result has no
 * tears wherever the weights have none, and where one weight is 1 the
 * vertex is the rigid attachment to that bone.
 *
 * A vertex whose weights sum to at most SSK_WEIGHT_EPSILON (no influence)
 * keeps the binding's attachment (bones, t, scale vectors) as one term of
 * weight 1, rigid, so unweighted skin still follows the skeleton.
 *
 * Layout (ssk_attach_weight_slots): per mesh, #V by K' slot records of 8
 * floats, K' = max(K, 1), K the mesh's influence count:
 *   (t, s_x, s_y, s_z, w, bone index as int bits, p_share, c_share),
 * w normalized by the vertex's weight sum, p_share = w_P / (w + w_P) and
 * c_share = w_C / (w + w_C) with w_P, w_C the vertex's weights on the
 * bone's parent and tail child (the bones' relations are those of the rest
 * pose, fixed for the rig), so that per frame p_w = p_share / p_i and
 * c_w = c_share / (1 - c_i) are one multiply each. The meshes' records are
 * concatenated in mesh order; a GPU backend uploads them as they are
 * (std430 vec4 pairs).
 *
 * Fig. 13's length adjustment, when asked, moves each term along its
 * rotated scale vector until its distance to the posed skeleton near b_k
 * is the rest distance of a_k + s_k to the rest skeleton near b_k
 * (rest_bones: the prepared identity pose), so the rest pose stays exact.
 *
 * Speed: 8 vertices at a time (lanes = vertices, as irs.c), each slot's 8
 * records loaded and transposed, the bone data gathered per lane; the
 * sines and cosines by polynomials (|phi| <= pi/2 here: the half angle of
 * the quarter-range polynomials of attach_math.h, doubled; the scalar
 * path for the last vertices of a block, ssk_am_irs_rotation_pc, takes
 * the quarter-range ones where they reach, equal to float rounding).
 */
#include "kernels/attach_math.h"
#include "kernels/simd.h"

#include <string.h>

/* Floats of one slot record. */
#define SLOT_FLOATS SSK_ATTACH_SLOT_FLOATS

static inline int32_t slot_bone(const float *o)
{
    int32_t b;
    memcpy(&b, o + 5, sizeof b);
    return b;
}

typedef struct slots_job {
    float *dst;
    const float *positions, *weights, *object_matrix, *bind_t, *bind_s;
    const int32_t *bone_indices, *bind_bones;
    const ssk_attach_bone *rest_bones;
    uint32_t influence_count;
} slots_job;

static void slots_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const slots_job *jb = ctx;
    (void)chunk;
    float *restrict dst = jb->dst;
    const float *restrict positions = jb->positions, *restrict weights = jb->weights;
    const float *object_matrix = jb->object_matrix;
    const float *restrict bind_t = jb->bind_t, *restrict bind_s = jb->bind_s;
    const int32_t *restrict bone_indices = jb->bone_indices, *restrict bind_bones = jb->bind_bones;
    const ssk_attach_bone *restrict rest_bones = jb->rest_bones;
    const uint32_t k = jb->influence_count, kk = k ? k : 1;
    for (int64_t v = begin; v < end; ++v) {
        float x[3];
        ssk_mat4_transform_point(x, object_matrix, positions + 3 * v);
        float sum = 0.0f;
        for (uint32_t i = 0; i < k; ++i) sum += weights[(size_t)v * k + i];
        float *rec = dst + (size_t)SLOT_FLOATS * kk * (size_t)v;
        memset(rec, 0, (size_t)SLOT_FLOATS * kk * sizeof(float));
        if (!(sum > SSK_WEIGHT_EPSILON)) { /* the binding's attachment, weight 1 */
            const int32_t b = bind_bones[v];
            rec[0] = bind_t[v];
            memcpy(rec + 1, bind_s + 3 * v, 3 * sizeof(float));
            rec[4] = 1.0f;
            memcpy(rec + 5, &b, sizeof b);
            continue;
        }
        for (uint32_t i = 0; i < k; ++i) {
            const size_t slot = (size_t)v * k + i;
            const int32_t b = bone_indices[slot];
            const ssk_attach_bone *bone = &rest_bones[b];
            const float t = ssk_am_project_t(bone, x);
            float a[3];
            ssk_am_attachment(a, bone, t);
            float *o = rec + SLOT_FLOATS * i;
            const float w = weights[slot] / sum;
            float wp = 0.0f, wc = 0.0f;
            for (uint32_t j = 0; j < k; ++j) {
                const int32_t bj = bone_indices[(size_t)v * k + j];
                const float wj = weights[(size_t)v * k + j] / sum;
                wp += bj == bone->parent ? wj : 0.0f;
                wc += bj == bone->tail_child ? wj : 0.0f;
            }
            o[0] = t;
            o[1] = x[0] - a[0];
            o[2] = x[1] - a[1];
            o[3] = x[2] - a[2];
            o[4] = w;
            memcpy(o + 5, &b, sizeof b);
            o[6] = w + wp > 0.0f ? wp / (w + wp) : 0.0f;
            o[7] = w + wc > 0.0f ? wc / (w + wc) : 0.0f;
        }
    }
}

void ssk_attach_weight_slots(float *restrict dst, const float *restrict positions,
                             uint32_t vertex_count, const int32_t *restrict bone_indices,
                             const float *restrict weights, uint32_t influence_count,
                             const float object_matrix[16], const int32_t *restrict bind_bones,
                             const float *restrict bind_t, const float *restrict bind_s,
                             const ssk_attach_bone *restrict rest_bones)
{
    slots_job j = {dst,          positions,  weights,    object_matrix,  bind_t,
                   bind_s,       bone_indices, bind_bones, rest_bones, influence_count};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, slots_chunk, &j);
}

/* One vertex: the blend of its slot terms (header comment). */
static inline __attribute__((always_inline)) void
weights_vertex(float out[3], const float *restrict rec, uint32_t k,
               const ssk_attach_bone *restrict bones_data, int incremental, int length_adjust_on,
               const ssk_attach_bone *restrict rest_bones)
{
    float acc[3] = {0.0f, 0.0f, 0.0f};
    for (uint32_t i = 0; i < k; ++i) {
        const float *o = rec + SLOT_FLOATS * i;
        const float w = o[4];
        if (!(w > 0.0f)) continue;
        const int32_t b = slot_bone(o);
        const ssk_attach_bone *bone = &bones_data[b];
        float q[4], a[3], r[3], p[3];
        if (incremental) {
            /* Eq. 15-17 with p_w, c_w from the weights (header comment) */
            ssk_am_irs_rotation_pc(q, bone, o[6] * bone->influence[2],
                                   o[7] * bone->influence[3]);
        } else {
            memcpy(q, bone->rotation, sizeof q);
        }
        ssk_am_attachment(a, bone, o[0]);
        ssk_am_rotate(r, q, o + 1);
        p[0] = a[0] + r[0];
        p[1] = a[1] + r[1];
        p[2] = a[2] + r[2];
        if (incremental && length_adjust_on) {
            float x[3];
            ssk_am_attachment(x, &rest_bones[b], o[0]);
            x[0] += o[1];
            x[1] += o[2];
            x[2] += o[3];
            ssk_am_length_adjust(p, r, ssk_am_skeleton_distance(x, rest_bones, b), bones_data, b);
        }
        acc[0] += w * p[0];
        acc[1] += w * p[1];
        acc[2] += w * p[2];
    }
    out[0] = acc[0];
    out[1] = acc[1];
    out[2] = acc[2];
}

typedef ssk_v8 v8;
typedef ssk_i8 i8;
#define V8(x) ssk_v8_splat(x)
#define SEL(m, a, b) ssk_v8_select((m), (a), (b))

/* Eight vertices v0 .. v0 + 7 (no length adjustment): weights_vertex on
 * lanes, the same operations in the same order. */
static inline __attribute__((always_inline)) void
weights_lanes8(float *restrict dst, int64_t v0, uint32_t k, const float *restrict slots,
               const ssk_attach_bone *restrict bones_data, const int incremental)
{
    v8 ax = V8(0.0f), ay = V8(0.0f), az = V8(0.0f);
    for (uint32_t i = 0; i < k; ++i) {
        v8 o[8];
        for (int l = 0; l < 8; ++l)
            o[l] = ssk_v8_load(slots + (size_t)SLOT_FLOATS * ((size_t)(v0 + l) * k + i));
        ssk_v8_transpose8(o); /* t, sx, sy, sz, w, bone, p_share, c_share */
        const v8 w = o[4];
        const i8 on = w > V8(0.0f);
        int32_t idx[8];
        i8 bone_bits;
        memcpy(&bone_bits, &o[5], sizeof bone_bits);
        int any = 0;
        for (int l = 0; l < 8; ++l) {
            idx[l] = on[l] ? bone_bits[l] : 0; /* an off lane reads bone 0, weight 0 */
            any |= on[l] != 0;
        }
        if (!any) continue;
        v8 c0[8], c1[8], c2[8];
        for (int l = 0; l < 8; ++l) c0[l] = ssk_v8_load((const float *)&bones_data[idx[l]]);
        ssk_v8_transpose8(c0); /* head xyz inv_len2, tail xyz _ */
        for (int l = 0; l < 8; ++l) c1[l] = ssk_v8_load((const float *)&bones_data[idx[l]] + 8);
        ssk_v8_transpose8(c1); /* rotation wxyz, head joint xyz angle */
        v8 q0 = c1[0], q1 = c1[1], q2 = c1[2], q3 = c1[3];
        if (incremental) {
            for (int l = 0; l < 8; ++l)
                c2[l] = ssk_v8_load((const float *)&bones_data[idx[l]] + 16);
            ssk_v8_transpose8(c2); /* tail joint xyz angle, influence p c 1/p 1/(1-c) */
            const v8 pw = o[6] * c2[6], cw = o[7] * c2[7];
            const v8 phi_p = V8(-0.25f) * pw * c1[7];
            const v8 phi_c = V8(0.25f) * cw * c2[3];
            /* sincos_half: the quarter polynomials at x / 2, doubled */
#define SIN_Q(x, x2) ((x) * (V8(1.0f) + (x2) * (V8(-1.0f / 6.0f) + (x2) * (V8(1.0f / 120.0f) + (x2) * (V8(-1.0f / 5040.0f) + (x2) * V8(1.0f / 362880.0f))))))
#define COS_Q(x2) (V8(1.0f) + (x2) * (V8(-0.5f) + (x2) * (V8(1.0f / 24.0f) + (x2) * (V8(-1.0f / 720.0f) + (x2) * (V8(1.0f / 40320.0f) + (x2) * V8(-1.0f / 3628800.0f))))))
            const v8 hp = V8(0.5f) * phi_p, hc = V8(0.5f) * phi_c;
            const v8 hp2 = hp * hp, hc2 = hc * hc;
            const v8 shp = SIN_Q(hp, hp2), chp = COS_Q(hp2), shc = SIN_Q(hc, hc2), chc = COS_Q(hc2);
#undef SIN_Q
#undef COS_Q
            const v8 sp = V8(2.0f) * shp * chp, cp = chp * chp - shp * shp;
            const v8 sc = V8(2.0f) * shc * chc, cc = chc * chc - shc * shc;
            const v8 qp0 = cp, qp1 = sp * c1[4], qp2 = sp * c1[5], qp3 = sp * c1[6];
            const v8 qc0 = cc, qc1 = sc * c2[0], qc2 = sc * c2[1], qc3 = sc * c2[2];
            const v8 wsum = pw + cw;
            const i8 some = wsum > V8(0.0f);
            const v8 alpha = SEL(some, pw / SEL(some, wsum, V8(1.0f)), V8(1.0f));
            const v8 dot = qp0 * qc0 + qp1 * qc1 + qp2 * qc2 + qp3 * qc3;
            const v8 beta = SEL(dot < V8(0.0f), alpha - V8(1.0f), V8(1.0f) - alpha);
            v8 d0 = alpha * qp0 + beta * qc0, d1 = alpha * qp1 + beta * qc1;
            v8 d2 = alpha * qp2 + beta * qc2, d3 = alpha * qp3 + beta * qc3;
            v8 n2 = d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3, inv;
            for (int l = 0; l < 8; ++l) inv[l] = 1.0f / sqrtf(n2[l]);
            d0 *= inv;
            d1 *= inv;
            d2 *= inv;
            d3 *= inv;
            /* Delta R_b (ssk_am_qmul) */
            q0 = d0 * c1[0] - d1 * c1[1] - d2 * c1[2] - d3 * c1[3];
            q1 = d0 * c1[1] + d1 * c1[0] + d2 * c1[3] - d3 * c1[2];
            q2 = d0 * c1[2] - d1 * c1[3] + d2 * c1[0] + d3 * c1[1];
            q3 = d0 * c1[3] + d1 * c1[2] - d2 * c1[1] + d3 * c1[0];
        }
        /* a' + q s (ssk_am_attachment, ssk_am_rotate) */
        const v8 sx = o[1], sy = o[2], sz = o[3], t = o[0];
        const v8 tx = V8(2.0f) * (q2 * sz - q3 * sy);
        const v8 ty = V8(2.0f) * (q3 * sx - q1 * sz);
        const v8 tz = V8(2.0f) * (q1 * sy - q2 * sx);
        const v8 rx = sx + q0 * tx + (q2 * tz - q3 * ty);
        const v8 ry = sy + q0 * ty + (q3 * tx - q1 * tz);
        const v8 rz = sz + q0 * tz + (q1 * ty - q2 * tx);
        const v8 px = c0[0] + t * (c0[4] - c0[0]) + rx;
        const v8 py = c0[1] + t * (c0[5] - c0[1]) + ry;
        const v8 pz = c0[2] + t * (c0[6] - c0[2]) + rz;
        const v8 wl = SEL(on, w, V8(0.0f));
        ax += wl * px;
        ay += wl * py;
        az += wl * pz;
    }
    ssk_v8_store_xyz(dst + 3 * v0, ax, ay, az);
}
#undef V8
#undef SEL

SSK_TARGET_CLONES
static void weights_block(float *restrict dst, int64_t begin, int64_t end, uint32_t k,
                          const float *restrict slots, const ssk_attach_bone *restrict bones_data,
                          int incremental, int length_adjust_on,
                          const ssk_attach_bone *restrict rest_bones)
{
    int64_t v = begin;
    if (!length_adjust_on) {
        if (incremental)
            for (; v + 8 <= end; v += 8) weights_lanes8(dst, v, k, slots, bones_data, 1);
        else
            for (; v + 8 <= end; v += 8) weights_lanes8(dst, v, k, slots, bones_data, 0);
    }
    for (; v < end; ++v)
        weights_vertex(dst + 3 * v, slots + (size_t)SLOT_FLOATS * k * (size_t)v, k, bones_data,
                       incremental, length_adjust_on, rest_bones);
}

typedef struct weights_job {
    float *dst;
    const float *slots;
    const ssk_attach_bone *bones_data, *rest_bones;
    uint32_t k;
    int incremental, length_adjust;
} weights_job;

static void weights_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const weights_job *j = ctx;
    (void)chunk;
    weights_block(j->dst, begin, end, j->k, j->slots, j->bones_data, j->incremental,
                  j->length_adjust, j->rest_bones);
}

void ssk_attach_weights_deform(float *restrict dst, uint32_t vertex_count,
                               uint32_t influence_count, const float *restrict slots,
                               const ssk_attach_bone *restrict bones_data, int incremental,
                               int length_adjust, const ssk_attach_bone *restrict rest_bones)
{
    const uint32_t k = influence_count ? influence_count : 1;
    if (!rest_bones) length_adjust = 0; /* documented: needs the rest bones */
    weights_job j = {dst, slots, bones_data, rest_bones, k, incremental, length_adjust};
    ssk_parallel_for(vertex_count, SSK_PARALLEL_GRAIN, weights_chunk, &j);
}
