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
 *   (t, s_x, s_y, s_z, w, bone index as int bits, rest distance, 0),
 * w normalized by the vertex's weight sum, the rest distance (IRS's length
 * adjustment target) of x to the skeleton near the bone. The meshes'
 * records are concatenated in mesh order; a GPU backend uploads them as
 * they are (std430 vec4 pairs).
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

void ssk_attach_weight_slots(float *restrict dst, const float *restrict positions,
                             uint32_t vertex_count, const int32_t *restrict bone_indices,
                             const float *restrict weights, uint32_t influence_count,
                             const float object_matrix[16], const int32_t *restrict bind_bones,
                             const float *restrict bind_t, const float *restrict bind_s,
                             const ssk_attach_bone *restrict rest_bones)
{
    const int64_t nv = vertex_count;
    const uint32_t k = influence_count, kk = k ? k : 1;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; ++v) {
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
            rec[6] = ssk_am_skeleton_distance(x, rest_bones, b);
            continue;
        }
        for (uint32_t i = 0; i < k; ++i) {
            const size_t slot = (size_t)v * k + i;
            const int32_t b = bone_indices[slot];
            const ssk_attach_bone *bone = &rest_bones[b];
            const float d[3] = {bone->tail[0] - bone->head[0], bone->tail[1] - bone->head[1],
                                bone->tail[2] - bone->head[2]};
            const float proj = (x[0] - bone->head[0]) * d[0] + (x[1] - bone->head[1]) * d[1] +
                               (x[2] - bone->head[2]) * d[2];
            const float t = ssk_am_clamp01(proj * bone->head[3]);
            float a[3];
            ssk_am_attachment(a, bone, t);
            float *o = rec + SLOT_FLOATS * i;
            o[0] = t;
            o[1] = x[0] - a[0];
            o[2] = x[1] - a[1];
            o[3] = x[2] - a[2];
            o[4] = weights[slot] / sum;
            memcpy(o + 5, &b, sizeof b);
            o[6] = ssk_am_skeleton_distance(x, rest_bones, b);
        }
    }
}

/* One vertex: the blend of its slot terms (header comment). */
static inline __attribute__((always_inline)) void
weights_vertex(float out[3], const float *restrict rec, uint32_t k,
               const ssk_attach_bone *restrict bones_data, int incremental, int length_adjust_on)
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
            /* Eq. 14's p_w and c_w from the weights of the joint's other
             * bone (header comment). */
            float wp = 0.0f, wc = 0.0f;
            for (uint32_t j = 0; j < k; ++j) {
                const int32_t bj = slot_bone(rec + SLOT_FLOATS * j);
                const float wj = rec[SLOT_FLOATS * j + 4];
                wp += bj == bone->parent ? wj : 0.0f;
                wc += bj == bone->tail_child ? wj : 0.0f;
            }
            const float pw = wp / (w + wp) * bone->influence[2];
            const float cw = wc / (w + wc) * bone->influence[3];
            ssk_am_irs_rotation_pc(q, bone, pw, cw);
        } else {
            memcpy(q, bone->rotation, sizeof q);
        }
        ssk_am_attachment(a, bone, o[0]);
        ssk_am_rotate(r, q, o + 1);
        p[0] = a[0] + r[0];
        p[1] = a[1] + r[1];
        p[2] = a[2] + r[2];
        if (incremental && length_adjust_on) ssk_am_length_adjust(p, r, o[6], bones_data, b);
        acc[0] += w * p[0];
        acc[1] += w * p[1];
        acc[2] += w * p[2];
    }
    out[0] = acc[0];
    out[1] = acc[1];
    out[2] = acc[2];
}

SSK_TARGET_CLONES
static void weights_block(float *restrict dst, int64_t begin, int64_t end, uint32_t k,
                          const float *restrict slots, const ssk_attach_bone *restrict bones_data,
                          int incremental, int length_adjust_on)
{
    for (int64_t v = begin; v < end; ++v)
        weights_vertex(dst + 3 * v, slots + (size_t)SLOT_FLOATS * k * (size_t)v, k, bones_data,
                       incremental, length_adjust_on);
}

void ssk_attach_weights_deform(float *restrict dst, uint32_t vertex_count,
                               uint32_t influence_count, const float *restrict slots,
                               const ssk_attach_bone *restrict bones_data, int incremental,
                               int length_adjust)
{
    const int64_t nv = vertex_count;
    const uint32_t k = influence_count ? influence_count : 1;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nv; b += SSK_VERTEX_BLOCK) {
        const int64_t e = b + SSK_VERTEX_BLOCK < nv ? b + SSK_VERTEX_BLOCK : nv;
        weights_block(dst, b, e, k, slots, bones_data, incremental, length_adjust);
    }
}
