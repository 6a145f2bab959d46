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

/* Incremental updates (cells built with keep_raw): the pair of bones j < k
 * (-1: none); the slot of the cell holding (u_j, u_k) in pair p, made when
 * empty (-1: out of memory); its 24 raw moments; adding sign times a leaf's
 * moments; rebuilding pair p's fields from its raw moments; the fields of n
 * changed cells as differences (new cells, minus the old ones: 2 n cells,
 * padded); and a vertex's sums over such fields (times nothing: the caller
 * multiplies by w_j w_k). */
int64_t ssk_cor_cells_pair(const ssk_cor_cells *c, int32_t j, int32_t k);
/* The pair of bones j < k, added (without cells, at index pair_count) when
 * new; -1: out of memory. Existing pairs keep their indices. */
int64_t ssk_cor_cells_add_pair(ssk_cor_cells *c, int32_t j, int32_t k);
int64_t ssk_cor_cells_slot(ssk_cor_cells *c, uint32_t p, double uj, double uk);
double *ssk_cor_cells_raw(ssk_cor_cells *c, uint32_t p, uint64_t slot);
void ssk_cor_moments_add(double *mo, double uj, double uk, const float geo[4], double sign);
ssk_status ssk_cor_cells_refresh(ssk_cor_cells *c, uint32_t p, ssk_error *err);
float *ssk_cor_delta_fields(const double *old_raw, const double *new_raw, uint32_t n,
                            uint64_t *out_padded);
void ssk_cor_fields_sums(double num[3], double *den, const float *fields, uint64_t padded,
                         double qj, double qk, float sigma);
#define SSK_COR_MOMENTS 24
uint32_t ssk_cor_cells_pair_count(const ssk_cor_cells *c);
void ssk_cor_cells_pair_bones(const ssk_cor_cells *c, uint32_t p, int32_t *j, int32_t *k);

/* Fields per cell of a pair's block (cor_cells.c's F_* order, which
 * shaders/bind_cor_precompute.comp repeats); pair p's block: SSK_COR_FIELDS
 * rows of *padded floats (padded: a multiple of 8, 0 for an empty pair). */
#define SSK_COR_FIELDS 24
const float *ssk_cor_cells_pair_fields(const ssk_cor_cells *c, uint32_t p, uint64_t *padded);

/* GL (cor_gl.c): Eq. 4's sums of the rep_count vertices `reps` (of m, each
 * with two or more bones) over the cells, as ssk_cor_cells_integrate on
 * the GPU: dst[4 r ..] = (sum s a c, sum s a); *visited = cells visited.
 * Errors: SSK_ERROR_GL*, SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cor_gl_integrate(float *dst, const ssk_cor_mesh *m, const ssk_cor_cells *cells,
                                const uint32_t *reps, uint32_t rep_count, float sigma,
                                ssk_gl_context *gl, uint64_t *visited, ssk_error *err);

#endif /* SSK_COR_INTERNAL_H */
