/*
 * implicit_internal.h — what the two halves of implicit skinning's run
 * time share (Vaillant 2015, 4.5-4.6; issue #20): the tracker's structure
 * and its per-vertex passes, used by the history-independent tracking and
 * the composition (kernels/implicit.c) and by the elastic tracking
 * (kernels/implicit_elastic.c). Internal to the kernels.
 */
#ifndef SSK_KERNELS_IMPLICIT_INTERNAL_H
#define SSK_KERNELS_IMPLICIT_INTERNAL_H

#include "kernels/implicit.h"
#include "kernels/simd.h"

#include <stdbool.h>

/* Gradients shorter than this are none (outside every support). */
#define GRADIENT_EPSILON 1e-12f
/* Vertices per chunk of the parallel passes (each does tens of grid
 * fetches). */
#define TRACK_GRAIN 512
#define SSK_IMPLICIT_PI 3.14159265358979323846

/* Vertex flags. */
enum { V_TRACKED = 1, V_CONTACT = 2, V_DONE = 4 };

/* The elastic tracking's state (kernels/implicit_elastic.c). */
typedef struct ssk_implicit_elastic ssk_implicit_elastic;

/* A node of the composition tree: a leaf (field >= 0) or g_op(left, right). */
typedef struct tree_node {
    int32_t field;
    int32_t left, right;
    int32_t joint; /* a merge across a joint: the joint's child bone, else -1 */
    uint8_t op;    /* ssk_implicit_operator */
} tree_node;

/* One entry of a vertex program: a leaf (b == PROGRAM_LEAF, a the field)
 * or a merge (a the tree node, b and c the entries it composes). */
typedef struct program_entry {
    uint16_t a;
    uint8_t b, c;
} program_entry;

struct ssk_implicit {
    const ssk_rig *rig;
    ssk_implicit_fit fit;
    const ssk_implicit_op *ops; /* SSK_IMPLICIT_OP_KIND_COUNT, borrowed */
    ssk_implicit_params params; /* joint_operators not kept */
    float cos_contact;
    uint32_t *child_offsets;   /* #B + 1: the skeleton's children, CSR */
    uint32_t *children;        /* #B */
    uint32_t node_count;
    tree_node *nodes;
    int32_t root;
    uint32_t *program_offsets; /* #V + 1 */
    program_entry *programs;
    program_entry *all_program; /* every field (ssk_implicit_eval with UINT32_MAX) */
    uint32_t all_count;
    /* each field's zero cells (ssk_implicit_field_zero_cells): field f's
     * words from zero_cell_offsets[f] */
    size_t *zero_cell_offsets; /* #fields + 1 */
    uint32_t *zero_cells;
    float *iso;       /* #V */
    float *max_step;  /* #V */
    uint8_t *flags;   /* #V */
    /* per frame */
    float *from_posed; /* #fields by 12: rows of the inverse skinning matrix (posed -> rest) */
    float *from_posed_columns; /* #fields by 16: its 4 columns, 4 floats each (the 4th 0) */
    float *node_bend;  /* #nodes: the bend angle of a merge's joint (radians), else 0 */
    /* scratch of the tracking */
    float *next;       /* #V by 3 */
    float *fg;         /* #V by 4: f and grad at the last step's position */
    float *prev_error; /* #V */
    float *beta, *beta_next; /* #V */
    float *skin;       /* #B by 16: the last ssk_implicit_pose */
    float *residual_chunks; /* one per TRACK_GRAIN chunk: the report's residual */
    /* elastic tracking's state (kernels/implicit_elastic.c), made when
     * params.tracking is ELASTIC, else NULL */
    ssk_implicit_elastic *elastic;
};

typedef struct track_ctx {
    ssk_implicit *im;
    float *x;        /* #V by 3, the current positions */
    uint32_t step;   /* projection step index */
} track_ctx;

/* ssk_implicit_field_eval_cells's body, inline for the tracker's hot loop
 * (kernels/implicit.c). */
static inline float ssk_implicit_field_lookup(const ssk_implicit_field *field,
                                              const uint32_t *zero_cells, const float p[3],
                                              float grad[3])
{
    if (grad) grad[0] = grad[1] = grad[2] = 0.0f;
    if (!field || !field->samples || field->resolution < 2 || !p) return 0.0f;
    const uint32_t n = field->resolution;
    const float top = (float)(n - 1);
    const float *m = field->grid_from_rest;
    float g[3];
    for (int a = 0; a < 3; ++a) {
        g[a] = m[4 * a] * p[0] + m[4 * a + 1] * p[1] + m[4 * a + 2] * p[2] + m[4 * a + 3];
        /* also rejects NaN */
        if (!(g[a] >= 0.0f && g[a] <= top)) return 0.0f;
    }
    uint32_t c[3];
    float t[3];
    for (int a = 0; a < 3; ++a) {
        uint32_t i = (uint32_t)g[a];
        if (i > n - 2) i = n - 2; /* g = N - 1: the last cell, t = 1 */
        c[a] = i;
        t[a] = g[a] - (float)i;
    }
    /* a cell whose corners are all zero: every w s is a zero, their sum
     * +0 in every channel, as below */
    if (zero_cells) {
        const uint32_t cell = (c[2] * (n - 1) + c[1]) * (n - 1) + c[0];
        if (zero_cells[cell / 32u] >> (cell % 32u) & 1u) return 0.0f;
    }
    const size_t sx = SSK_IMPLICIT_FIELD_CHANNELS, sy = (size_t)n * sx, sz = (size_t)n * sy;
    const float *base = field->samples + c[2] * sz + c[1] * sy + c[0] * sx;
    /* the four channels of a corner in one vector, the corners added in
     * order: per channel the scalar sum of w * s, operation by operation
     * (the GL twin, shaders/kernels_implicit.comp, agrees bit for bit) */
    const float wx[2] = {1.0f - t[0], t[0]}, wy[2] = {1.0f - t[1], t[1]},
                wz[2] = {1.0f - t[2], t[2]};
    ssk_v4 acc = ssk_v4_splat(0.0f);
    for (int corner = 0; corner < 8; ++corner) {
        const int dx = corner & 1, dy = (corner >> 1) & 1, dz = (corner >> 2) & 1;
        const float w = wx[dx] * wy[dy] * wz[dz];
        acc += ssk_v4_splat(w) *
               ssk_v4_load(base + (size_t)dz * sz + (size_t)dy * sy + (size_t)dx * sx);
    }
    if (grad)
        for (int a = 0; a < 3; ++a) grad[a] = acc[1 + a];
    return acc[0];
}

/* The composed field at p with vertex v's program (implicit.c). */
float ssk_implicit_vertex_eval(const ssk_implicit *im, uint32_t v, const float p[3], float g[3]);

/* One Newton projection step of rows [begin, end) of ctx (a track_ctx)
 * into im->next, with the contact and convergence checks (implicit.c). */
void ssk_implicit_project_rows(void *ctx, int64_t begin, int64_t end, uint32_t chunk);

/* x <- im->next, #V by 3 (implicit.c). */
void ssk_implicit_take_next(ssk_implicit *im, float *x);

/* The elastic state of `im` (its rig, its fields' tracked flags set), or
 * an error; freed by ssk_implicit_elastic_destroy (NULL allowed). */
ssk_status ssk_implicit_elastic_create(ssk_implicit *im, ssk_error *err);
void ssk_implicit_elastic_destroy(ssk_implicit_elastic *e);

/* One elastic frame (implicit.h ssk_implicit_track_frame). */
ssk_status ssk_implicit_elastic_track(ssk_implicit *im, float *positions, double frame,
                                      ssk_implicit_report *report, ssk_error *err);

#endif /* SSK_KERNELS_IMPLICIT_INTERNAL_H */
