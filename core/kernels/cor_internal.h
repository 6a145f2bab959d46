/*
 * cor_internal.h — the integration mesh of the centers-of-rotation
 * precomputation (Le & Hodgins 2016, sec. 3.2), shared by the CPU search
 * (cor_precompute.c) and the GL integration (cor_gl.c); not installed.
 */
#ifndef SSK_COR_INTERNAL_H
#define SSK_COR_INTERNAL_H

#include "model/internal.h"

/* Deepest recursive bisection of one triangle. With epsilon >=
 * SSK_COR_MIN_EPSILON and weight distances <= sqrt 2, longest-edge
 * bisection needs fewer than 3 log2(sqrt 2 / 0.02) + 3 = 22 levels; the
 * cap only guards against non-finite input. */
#define SSK_COR_MAX_SUBDIVISION_DEPTH 32

/* Whole mesh, rig space. Vertex weights are sparse: the non-zero weights of
 * vertex v are w_values[w_offsets[v] .. w_offsets[v + 1]), bones
 * ascending, normalized to sum 1. Triangle t of the input is split into
 * leaves (the integration mesh): its bones B_t (the union of its corners'
 * bones, ascending) are tb_bones[tb_offsets[t] .. tb_offsets[t + 1]); its
 * leaves are leaf_offsets[t] .. leaf_offsets[t + 1] with, per leaf l,
 * leaf_geometry[4 l ..] = centroid (x, y, z) and area, and |B_t| weights
 * (the mean of the leaf's corner weights, over B_t) at
 * leaf_weights[leaf_weight_offsets[t] + (l - leaf_offsets[t]) |B_t| ..]. */
typedef struct ssk_cor_mesh {
    uint32_t vertex_count, triangle_count, bone_count;
    float *positions;            /* #V by 3 */
    int32_t *triangles;          /* #T by 3 */
    uint32_t *w_offsets;         /* #V + 1 */
    int32_t *w_bones;
    float *w_values;
    uint32_t *vt_offsets;        /* #V + 1, vertex -> triangles CSR */
    uint32_t *vt_triangles;
    uint32_t *tb_offsets;        /* #T + 1 */
    int32_t *tb_bones;
    uint64_t *leaf_offsets;      /* #T + 1 */
    float *leaf_geometry;        /* #L by 4 */
    uint64_t *leaf_weight_offsets; /* #T + 1 */
    float *leaf_weights;
    uint32_t renormalized;       /* vertices whose weights were rescaled */
} ssk_cor_mesh;

void ssk_cor_mesh_free(ssk_cor_mesh *m);

/* Eq. 4 per bone pair over cells of weight space (core/bind/cor_cells.c):
 * cells per unit of weight along each axis of a pair's square. */
#define SSK_COR_CELLS 64
typedef struct ssk_cor_cells ssk_cor_cells;
/* The cells of m's leaves (m has its leaves); keep_raw: also keep what
 * incremental updates need (raw moments, grid index). Errors:
 * OUT_OF_MEMORY. */
ssk_status ssk_cor_cells_build(ssk_cor_cells **out, const ssk_cor_mesh *m, int keep_raw,
                               ssk_error *err);
void ssk_cor_cells_destroy(ssk_cor_cells *c);
/* Occupied cells in all. */
uint64_t ssk_cor_cells_count(const ssk_cor_cells *c);
/* Eq. 4's sums for a vertex of kp bones (ascending) with weights w:
 * sum[0..3) = sum s a c, sum[3] = sum s a (s of Eq. 1 halved, a factor of
 * both); returns the cells visited. */
uint64_t ssk_cor_cells_integrate(double sum[4], const ssk_cor_cells *c, const int32_t *bones,
                                 const float *w, uint32_t kp, float sigma);

/* GL integration (cor_gl.c): for each vertex with at least two bones,
 * sums over every leaf of every triangle that holds two of its bones the
 * normalized similarity s times the leaf area and centroid. Writes
 * dst[4 v ..] = (sum s a c, sum s a), zero for the other vertices.
 * Errors: SSK_ERROR_GL*, SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cor_gl_integrate(float *dst, const ssk_cor_mesh *m, const ssk_cor_params *params,
                                ssk_gl_context *gl, ssk_error *err);

#endif /* SSK_COR_INTERNAL_H */
