/*
 * implicit.h — implicit skinning's run-time data (Vaillant 2015, chapter 4;
 * issue #20): the compactly supported field of each bone sampled into a
 * grid (4.4, 4.6.2.2: 32^3), the gradient-based composition operators
 * sampled into 3D grids over (f1, f2, d) (4.5, 4.5.1: 128^3), their
 * controllers d(alpha) (Fig. 4.6), and the per-vertex data of the tracking
 * (4.6.2: iso-values, mean value coordinates). Internal to the core.
 *
 * Who fills what:
 * - kernels/implicit_op.c: ssk_implicit_op_eval, the controllers.
 * - kernels/implicit_field.c: ssk_implicit_field_eval.
 * - bind/implicit_ops.c: ssk_implicit_op_build (bi-harmonic interpolation of
 *   4.5.1, Eq. 4.3-4.4).
 * - bind/implicit_fit.c: ssk_implicit_fit (reconstruction of 4.4: sub-meshes,
 *   Poisson-disk samples, culling Eq. 4.2, closure centers, the HRBF of
 *   Eq. 4.1, the remap t_r, the grids) and the mean value coordinates of the
 *   tangential relaxation (Eq. 4.6).
 * - kernels/implicit.c: composition tree and tracking (4.5, 4.6.2).
 *
 * Conventions (4.4): f in [0, 1], 0.5 the reference iso-surface, f > 0.5
 * inside, f < 0.5 outside, 0 outside the compact support.
 */
#ifndef SSK_KERNELS_IMPLICIT_H
#define SSK_KERNELS_IMPLICIT_H

#include "model/internal.h"

/* ------------------------------------------------------------------------ */
/* Composition operators (4.5, 4.5.1)                                        */
/* ------------------------------------------------------------------------ */

typedef enum ssk_implicit_op_kind {
    /* g_dc: clean union at d = 0, full contact at d = 1 (Fig. 4.7) */
    SSK_IMPLICIT_OP_CONTACT = 0,
    /* g_db: clean union at d = 0, full contact with maximal bulge at d = 1
     * (Fig. 4.8; the bulge profile's control points fixed by 4.5.1) */
    SSK_IMPLICIT_OP_BULGE = 1,
    SSK_IMPLICIT_OP_KIND_COUNT
} ssk_implicit_op_kind;

/* An operator g(f1, f2, d) sampled on a regular grid of N^3 points over
 * [0, 1]^3: values[(k N + j) N + i] = g(i / (N - 1), j / (N - 1),
 * k / (N - 1)). Owned arrays (bind/implicit_bind.h: ssk_implicit_op_free). */
typedef struct ssk_implicit_op {
    ssk_implicit_op_kind kind;
    uint32_t resolution; /* N >= 8 (the paper: 128) */
    float *values;       /* N^3 */
} ssk_implicit_op;

/* springskin.h's ssk_implicit_operators: both kinds at one resolution
 * (bind/implicit_ops.c makes and frees it). */
struct ssk_implicit_operators {
    ssk_implicit_op ops[SSK_IMPLICIT_OP_KIND_COUNT];
};

/* g(f1, f2, d) by trilinear interpolation of the grid (inputs clamped to
 * [0, 1]); dg_df1, dg_df2 (either may be NULL) get its partial derivatives
 * in f1 and f2 (the controller's d is taken as constant, as the paper's
 * gradient of a composition). */
float ssk_implicit_op_eval(const ssk_implicit_op *op, float f1, float f2, float d,
                           float *dg_df1, float *dg_df2);

/* The controllers of Fig. 4.6, alpha the angle between grad f1 and grad f2
 * in radians [0, pi], result in [0, 1], C1 in alpha:
 * - contact d_c: 0 up to pi/2 (a bend below 90 degrees needs no contact),
 *   rising to 1 (full contact) at pi.
 * - bulge d_b: rises from small angles ("the bulge starts at low bending
 *   angles", 4.5) to 1. */
float ssk_implicit_controller(ssk_implicit_op_kind kind, float alpha);

/* The angle acos(c) in radians of c in [-1, 1] (the angle between two
 * gradients of a composition node), to about double precision rounded to
 * float: the libm's acosf(c) refined by one step in double, y = y0 + d +
 * d^3 / 6 with d = sin(y - y0) = sqrt(1 - c^2) cos y0 - c sin y0 (sin and
 * cos by their Taylor series). The result no longer depends on the libm's
 * last-ulp choices, and kernels_implicit.comp (ssk_im_acos) computes it
 * with the same operations, so that the CPU and GL tracking agree bit for
 * bit on an IEEE device. */
float ssk_implicit_acos(float c);

/* ------------------------------------------------------------------------ */
/* A bone's field (4.4)                                                      */
/* ------------------------------------------------------------------------ */

/* Grid resolution per axis of a bone's field (4.6.2.2: 32^3). */
#define SSK_IMPLICIT_FIELD_RESOLUTION 32

/* f_i = t_r(d_i) of one bone, sampled on an N^3 grid over a box in the
 * bone's frame at rest. Positions are rig space in the bind pose ("rest
 * space"); at a frame the deformer maps a point p back to rest space by
 * the inverse of the bone's skinning matrix (the field moves rigidly with
 * its bone) before ssk_implicit_field_eval, and maps the gradient forward.
 * Owned arrays (ssk_implicit_fit_free frees the fields it made). */
typedef struct ssk_implicit_field {
    uint32_t bone;         /* the rig's bone index */
    float radius;          /* r of t_r: the farthest HRBF center's (samples and
                              closure centers) distance to the bone segment */
    /* rest space -> grid coordinates: g = grid_from_rest * (p, 1),
     * row-major 4x4 (a rotation into the bone's frame, a translation and a
     * per-axis scale), so that the grid's points are g in {0 .. N-1}^3 */
    float grid_from_rest[16];
    uint32_t resolution;   /* N */
    /* N^3 by 4: f, then grad f (rest space) at grid point (i, j, k),
     * index (k N + j) N + i */
    float *samples;
    uint32_t sample_count; /* HRBF centers used (Poisson-disk samples after
                              culling, plus closure centers) */
} ssk_implicit_field;

/* f at rest-space point p by trilinear interpolation of the grid, 0 with a
 * zero gradient outside it; grad (3 floats, may be NULL) gets the
 * trilinear interpolation of the sampled gradients (rest space). */
float ssk_implicit_field_eval(const ssk_implicit_field *field, const float p[3], float grad[3]);

/* The four channels of a grid point: f, then grad f. */
#define SSK_IMPLICIT_FIELD_CHANNELS 4

/* ssk_implicit_field_eval with the field's zero cells (NULL: none), as
 * ssk_implicit_field_zero_cells marks them: the same result, without the
 * 8 corner fetches in a cell where the field and its gradient are 0 (past
 * the support of t_r, inside the grid's box). */
float ssk_implicit_field_eval_cells(const ssk_implicit_field *field, const uint32_t *zero_cells,
                                    const float p[3], float grad[3]);

/* The 32-bit words of a field's zero-cell bitmap: ((N - 1)^3 + 31) / 32
 * (0 for N < 2). */
size_t ssk_implicit_field_cell_words(const ssk_implicit_field *field);

/* Marks in out (ssk_implicit_field_cell_words words, caller-owned) the
 * cells (i, j, k) of the grid, bit (k (N - 1) + j) (N - 1) + i, whose 8
 * corners hold 0 in all four channels (either sign of zero). */
void ssk_implicit_field_zero_cells(const ssk_implicit_field *field, uint32_t *out);

/* ------------------------------------------------------------------------ */
/* The rig's implicit data (made at bind)                                    */
/* ------------------------------------------------------------------------ */

typedef struct ssk_implicit_fit_params {
    uint32_t target_samples;  /* Poisson-disk samples per bone, about (4.4: 50-100; default 64) */
    float cull_b;             /* b of Eq. 4.2 (default 0.05) */
    uint32_t resolution;      /* field grid N (default SSK_IMPLICIT_FIELD_RESOLUTION) */
} ssk_implicit_fit_params;

typedef struct ssk_implicit_fit {
    uint32_t field_count;
    ssk_implicit_field *fields; /* field_count, ascending bone */
    int32_t *bone_field;        /* #B: index into fields, -1 for a bone
                                   without one (no sub-mesh, too few samples,
                                   a singular fit, an open patch: bind/implicit_fit.c) */
    /* The tangential relaxation's mean value coordinates (Eq. 4.6, [HF06]):
     * whole-rig CSR over the welded representatives; for vertex v, rows
     * mvc_offsets[v] .. mvc_offsets[v + 1] list its one-ring neighbors in
     * order around it (representatives) and Phi_vj, summing to 1, with
     * v = sum_j Phi_vj q_vj at rest, q_vj the neighbor projected onto v's
     * tangent plane (normal: the rest vertex normal). Empty rows: members
     * of a weld group (they copy their representative), boundary and
     * non-manifold vertices (no relaxation). */
    uint32_t *mvc_offsets;      /* #V + 1 */
    uint32_t *mvc_neighbors;
    float *mvc_weights;
    /* Rest normals (rig space, unit; area-weighted over the welded
     * surface), #V by 3: the tangent planes of the coordinates above. */
    float *rest_normals;
} ssk_implicit_fit;

/* ------------------------------------------------------------------------ */
/* Composition and tracking (kernels/implicit.c; 4.5, 4.6.2)                 */
/* ------------------------------------------------------------------------ */

/* The tracker of a rig: its fields, the operators, the composition tree,
 * each vertex's rest iso-value and the per-frame state. Opaque. */
typedef struct ssk_implicit ssk_implicit;

/* What one frame's tracking did. */
typedef struct ssk_implicit_report {
    uint32_t tracked;   /* vertices inside some field's support (projected) */
    uint32_t substeps;  /* ELASTIC: virtual frames of this frame (else 1) */
    uint32_t contacts;  /* of those, stopped at a contact (4.6.2.1) */
    float residual;     /* the largest |f(v) - iso_v| of a tracked vertex that
                           did not stop at contact, after the last step */
} ssk_implicit_report;

/* Takes `fit` into a new tracker (on success and on failure it is the
 * tracker's, freed by it, and zeroed in the caller's struct); `ops` is
 * borrowed and must outlive the tracker. Builds the composition tree of 4.5 from the skeleton and
 * params->joint_operators (copied), and each vertex's rest iso-value
 * f(v) with every bone at rest.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, parameters out of range, named),
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_implicit_create(ssk_implicit **out, const ssk_rig *rig, ssk_implicit_fit *fit,
                               const ssk_implicit_operators *ops,
                               const ssk_implicit_params *params, ssk_error *err);
void ssk_implicit_destroy(ssk_implicit *im);

/* Frees what a fit owns and zeroes it (kernels/implicit_field.c; the
 * tracker frees the fit it took). NULL allowed. */
void ssk_implicit_fit_free(ssk_implicit_fit *fit);

/* Sets the pose: skinning, #B by 16 row-major rig-space skinning matrices
 * (rest -> posed). Errors: SSK_ERROR_NONFINITE (a singular or non-finite
 * matrix of a bone with a field). */
ssk_status ssk_implicit_pose(ssk_implicit *im, const float *skinning, ssk_error *err);

/* The composed field f at rig-space point p of the current pose (its
 * gradient into grad, 3 floats, may be NULL); vertex: the vertex whose
 * candidate fields are used (its skin-weight bones and their parents and
 * children; 4.5's tree restricted to them), or UINT32_MAX for every field. */
float ssk_implicit_eval(const ssk_implicit *im, const float p[3], uint32_t vertex,
                        float grad[3]);

/* History-independent tracking of one frame (4.6.2): positions, #V by 3
 * rig-space positions of the first stage (DQS in the paper), replaced by
 * the result (caller-owned); the pose of the last ssk_implicit_pose. Weld
 * members are left to the caller (ssk_weld_apply). report may be NULL.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_implicit_track(ssk_implicit *im, float *positions, ssk_implicit_report *report,
                              ssk_error *err);

/* One frame as the tracker's params->tracking says (springskin.h
 * ssk_implicit_tracking): INDEPENDENT is ssk_implicit_track; ELASTIC
 * continues from the previous result when `frame` is the previous frame +
 * 1 (as the springs' frame-dependent mode), else from the rest pose, in
 * virtual frames from the previous pose to the last ssk_implicit_pose;
 * vertices outside every field take positions' first stage. positions: #V
 * by 3 rig space, the first stage in, the result out.
 * Errors: as ssk_implicit_track, SSK_ERROR_NONFINITE (a singular
 * skinning matrix). */
ssk_status ssk_implicit_track_frame(ssk_implicit *im, float *positions, double frame,
                                    ssk_implicit_report *report, ssk_error *err);

/* ------------------------------------------------------------------------ */
/* The tracker's arrays, for a device backend (gl_backend.c)                  */
/* ------------------------------------------------------------------------ */

/* Bit of ssk_implicit_view.flags: the vertex is tracked (a welded
 * representative whose rest iso-value is above the tracking threshold). */
#define SSK_IMPLICIT_FLAG_TRACKED 1u
/* A packed program entry (ssk_implicit_pack_programs): a leaf when
 * b == SSK_IMPLICIT_PROGRAM_LEAF (field index a), else a merge of tree node
 * a composing the entries b and c (earlier entries of the same program). */
#define SSK_IMPLICIT_PROGRAM_LEAF 0xFFu
#define SSK_IMPLICIT_PACK_B_SHIFT 16u
#define SSK_IMPLICIT_PACK_C_SHIFT 24u
#define SSK_IMPLICIT_PACK_A_MASK 0xFFFFu
/* At most this many entries per vertex program. */
#define SSK_IMPLICIT_MAX_PROGRAM_ENTRIES 32u

/* Read-only views of a tracker's internal arrays (borrowed, valid while the
 * tracker lives; from_posed and node_bend change with ssk_implicit_pose).
 * Spaces: rig space (posed or rest) as in ssk_implicit_track. */
typedef struct ssk_implicit_view {
    const ssk_implicit_fit *fit;      /* fields (grids), MVC CSR, rest normals */
    const ssk_implicit_op *ops;       /* SSK_IMPLICIT_OP_KIND_COUNT operator grids */
    const ssk_implicit_params *params; /* iterations, sigma, bulge...; joint_operators NULL */
    float cos_contact;                /* cos(params->contact_angle) */
    uint32_t vertex_count;            /* #V of the rig */
    uint32_t node_count;              /* composition tree nodes */
    const uint32_t *program_offsets;  /* #V + 1 into the packed programs */
    uint32_t program_entry_count;     /* program_offsets[#V] */
    const float *iso;                 /* #V rest iso-values */
    const float *max_step;            /* #V step caps (rig-space length) */
    const uint8_t *flags;             /* #V; only SSK_IMPLICIT_FLAG_TRACKED is static */
    const float *from_posed;          /* #fields by 12: rows 0-2 of the inverse skinning
                                         matrix (posed -> rest) of the last pose */
    const float *node_bend;           /* #nodes: joint bend (radians) of the last pose */
} ssk_implicit_view;

/* Fills *out (both non-NULL). */
void ssk_implicit_get_view(const ssk_implicit *im, ssk_implicit_view *out);

/* The per-vertex programs packed one uint32 per entry: a | b << 16 | c << 24
 * (SSK_IMPLICIT_PACK_*); out holds view.program_entry_count entries. */
void ssk_implicit_pack_programs(const ssk_implicit *im, uint32_t *out);

/* The operator of each tree node (ssk_implicit_operator), out #nodes. */
void ssk_implicit_node_ops(const ssk_implicit *im, uint32_t *out);

#endif /* SSK_KERNELS_IMPLICIT_H */
