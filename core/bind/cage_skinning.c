/*
 * cage_skinning.c — the skinning matrices of a skeleton whose rest joints
 * were moved (Corda et al. 2020, 4.2 "Skeleton joints refitting",
 * 003_3bdce6713f645d88.txt; issue #21): each bone keeps the rotational
 * component of its skinning transformation and gets a translational
 * component recomputed from the new rest joints, "following the
 * hierarchical structure of the skeleton, updating first all roots, and
 * then processing children".
 *
 * Notation (rig space; row-major 4x4 matrices acting on column vectors):
 * S_b the frame's skinning matrix of bone b (rest rig space -> posed rig
 * space), R_b its 3x3 linear part, t_b its translation column; a_b the
 * original rest head (rig->bones[b].head), a'_b the new one; h_b = S_b a_b
 * the original posed head, h'_b the new posed head; p the parent of b.
 *
 * The recurrence of bind/cage.h,
 *   h'_root = S_root a'_root,
 *   h'_b    = h'_p + R_p (a'_b - a'_p) + (h_b - h_p - R_p (a_b - a_p)),
 * is evaluated through the displacements of the rest heads, e_b = a'_b -
 * a_b, and of the posed heads, d_b = h'_b - h_b. Subtracting h_b = h_p +
 * R_p (a_b - a_p) + (h_b - h_p - R_p (a_b - a_p)) from the recurrence
 * gives
 *   d_root = R_root e_root,
 *   d_b    = d_p + R_p (e_b - e_p),
 * so d_b is the sum of R_root e_root and of R_q (e_c - e_q) over the edges
 * q -> c of the path from the root down to b. The new matrix keeps R_b
 * and moves the translation so that S'_b a'_b = h'_b:
 *   t'_b = h'_b - R_b a'_b = t_b + d_b - R_b e_b.
 * Written this way, unmoved heads (e = 0) give d = 0 and t'_b = t_b
 * exactly, and no posed head is formed from differences of large numbers.
 *
 * Order: d_b is summed by walking from b up to its root (the same terms
 * as the root-first sweep; no scratch memory, and any index order of the
 * parents, including parents with higher indices than their children, is
 * handled). O(#B x depth) per frame. The rig's parents are acyclic
 * (ssk_rig_create refuses cycles); the walk is still bounded by #B steps.
 *
 * dst must not alias skinning: every bone reads its ancestors' matrices.
 * NULL arguments leave dst untouched (the prototype has no status).
 * Double precision throughout; results rounded to float once.
 */
#include "bind/cage.h"

/* Entries of a row-major 4x4 matrix. */
#define MAT4_SIZE 16
#define MAT4_ROW 4
/* Column of the translation in a row-major 4x4 matrix. */
#define MAT4_TRANSLATION_COLUMN 3

/* The rest head displacement e_b = a'_b - a_b (rig space), in double. */
static void head_displacement(double e[3], const ssk_rig *rig, const float *new_heads,
                              uint32_t b)
{
    for (int k = 0; k < 3; ++k) {
        e[k] = (double)new_heads[3 * (size_t)b + (size_t)k] - (double)rig->bones[b].head[k];
    }
}

/* acc += R v, R the 3x3 linear part of the row-major 4x4 matrix m. */
static void add_linear(double acc[3], const float *m, const double v[3])
{
    for (int r = 0; r < 3; ++r) {
        const float *row = m + MAT4_ROW * r;
        acc[r] += (double)row[0] * v[0] + (double)row[1] * v[1] + (double)row[2] * v[2];
    }
}

/* d (3, rig space) = h'_b - h_b, the posed head displacement of bone b:
 * the sum over the path from b's root down to b (see the file comment). */
static void posed_head_displacement(double d[3], const ssk_rig *rig, const float *new_heads,
                                    const float *skinning, uint32_t b)
{
    d[0] = d[1] = d[2] = 0.0;
    double e_child[3], e_parent[3], diff[3];
    head_displacement(e_child, rig, new_heads, b);
    uint32_t child = b;
    for (uint32_t step = 0; step < rig->bone_count; ++step) {
        const int32_t parent = rig->bones[child].parent;
        if (parent < 0 || (uint32_t)parent >= rig->bone_count) break;
        const uint32_t p = (uint32_t)parent;
        head_displacement(e_parent, rig, new_heads, p);
        for (int k = 0; k < 3; ++k) diff[k] = e_child[k] - e_parent[k];
        add_linear(d, skinning + MAT4_SIZE * (size_t)p, diff); /* R_p (e_b - e_p) */
        for (int k = 0; k < 3; ++k) e_child[k] = e_parent[k];
        child = p;
    }
    add_linear(d, skinning + MAT4_SIZE * (size_t)child, e_child); /* R_root e_root */
}

void ssk_cage_skinning(float *dst, const ssk_rig *rig, const float *new_heads,
                       const float *skinning)
{
    if (!dst || !rig || !new_heads || !skinning) return;
    for (uint32_t b = 0; b < rig->bone_count; ++b) {
        const float *s = skinning + MAT4_SIZE * (size_t)b;
        double d[3], e[3], r_e[3] = {0.0, 0.0, 0.0};
        posed_head_displacement(d, rig, new_heads, skinning, b);
        head_displacement(e, rig, new_heads, b);
        add_linear(r_e, s, e);
        float *out = dst + MAT4_SIZE * (size_t)b;
        for (int i = 0; i < MAT4_SIZE; ++i) out[i] = s[i];
        for (int r = 0; r < 3; ++r) {
            const int at = MAT4_ROW * r + MAT4_TRANSLATION_COLUMN;
            out[at] = (float)((double)s[at] + (d[r] - r_e[r])); /* t_b + d_b - R_b e_b */
        }
    }
}
