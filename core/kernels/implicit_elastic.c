/*
 * implicit_elastic.c — elastic (history-dependent) tracking of implicit
 * skinning (Vaillant 2015, 4.6.3, [VGB14]; issue #20), the implicit node's
 * "tracking": "elastic". Each frame starts from the previous frame's result
 * (the rest pose before the first frame, or when a frame does not follow
 * the previous one: the springs' frame-dependent rule), and the skeleton's
 * motion since then is cut into virtual frames of at most substep_angle of
 * bone rotation ("such that the maximal rotation angle of a bone is
 * smaller than ...", 4.6.3.1; the bones' heads moved linearly and their
 * rotations by slerp). Per virtual frame, the three stages of 4.6.3.1:
 * 1. each vertex moved by the change of its nearest bone's transform (the
 *    bone of its largest skin weight);
 * 2. Newton projections onto its rest iso-value (implicit.c's step, with
 *    its contact stop);
 * 3. relaxation of the energy of Eq. 4.9, E = sum_i sum_j w_ij |(x_i - x_j)
 *    - R_i (p_i - p_j)|^2, cotangent weights w_ij of the welded rest
 *    surface ([MDSB02], floored: obtuse angles make them negative), R_i the
 *    rotation of the vertex's skin-weight blend of its bones' transforms
 *    (the paper blends with dual quaternions and harmonic weights and notes
 *    that the choice has "only subtle effects"), each step restricted to
 *    the iso-surface's tangent plane (Eq. 4.10) and followed by one more
 *    projection.
 *
 * Stage 3 differs from the text in how its linear step is solved. The
 * paper takes one Jacobi iteration per projection and needs hundreds of
 * them per frame (Table 4.2: 170-600); it notes that "higher performance
 * may be achieved using the conjugate-gradient method". Measured here on
 * the 2-bone limb bent to 135 degrees and back over 19 frames, Jacobi
 * steps left the mesh 3.4e-2 / 6.2e-3 / 1.2e-3 of the diagonal from its
 * rest shape with 10 / 100 / 300 steps per virtual frame (a Chebyshev
 * blend of the steps spiked the skin). So each step is instead the exact
 * minimizer of E plus a weak pull toward the current positions,
 * (W (1 + lambda) - w) x = sum_j w_ij 1/2 (R_i + R_j)(p_i - p_j) + lambda
 * W_i x_i^cur (the normal equations of E: both terms of an edge carry R_i
 * and R_j), factorized once per rig with CHOLMOD (as the ARAP node) and
 * solved by back-substitution; the move is then taken in the tangent
 * plane and projected. Vertices outside every field keep their first
 * stage (pinned in the system).
 */
#include "kernels/implicit_internal.h"

#include "model/glm_bridge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cholmod.h>

/* Newton projections after moving to a virtual frame, before the
 * relaxation (each relaxation step is followed by one more). */
#define ELASTIC_PROJECTIONS 2u
/* At most this many virtual frames per frame. */
#define MAX_SUBSTEPS 256u
/* Cotangent weights below this (obtuse pairs of angles) are raised to it,
 * per unit of the mean positive weight: the system stays a weighted graph
 * Laplacian, positive definite with the pull. */
#define COTANGENT_FLOOR 1e-3f
/* lambda of the pull toward the current positions, per unit of W_i: small
 * enough that one solve moves the skin nearly all the way, large enough
 * that the system is well conditioned. */
#define ELASTIC_PULL 1e-3
/* The pull that pins a vertex outside every field to its first stage. */
#define ELASTIC_PIN 1e6

struct ssk_implicit_elastic {
    uint32_t unknown_count;  /* the welded representatives */
    uint32_t *unknown_of;    /* #V: a vertex's unknown (its representative's) */
    uint32_t *row_of;        /* unknowns: their vertex */
    float *rest;             /* #V by 3 rig-space rest positions */
    uint32_t *dominant;      /* #V: the bone of the largest skin weight, or UINT32_MAX */
    float *cot;              /* weld adjacency entries: w_ij */
    float *cot_sum;          /* #V: W_i = sum_j w_ij */
    double *pull;            /* unknowns: lambda_i W_i */
    float *rot;              /* #V by 9: R_i of the virtual frame (row-major) */
    float *bone_quat;        /* #B by 4: (x, y, z, w) of the virtual frame's bones */
    float *prev_x;           /* #V by 3: the previous frame's result */
    float *prev_skin;        /* #B by 16: its pose */
    float *target, *pose, *next_pose, *delta; /* #B by 16 each */
    bool has_prev;
    double prev_frame;
    cholmod_common common;
    int started;
    cholmod_factor *factor;
    cholmod_dense *rhs;      /* unknowns by 3 */
};

void ssk_implicit_elastic_destroy(ssk_implicit_elastic *e)
{
    if (!e) return;
    if (e->started) {
        cholmod_free_factor(&e->factor, &e->common);
        cholmod_free_dense(&e->rhs, &e->common);
        cholmod_finish(&e->common);
    }
    free(e->unknown_of);
    free(e->row_of);
    free(e->rest);
    free(e->dominant);
    free(e->cot);
    free(e->cot_sum);
    free(e->pull);
    free(e->rot);
    free(e->bone_quat);
    free(e->prev_x);
    free(e->prev_skin);
    free(e->target);
    free(e->pose);
    free(e->next_pose);
    free(e->delta);
    free(e);
}

/* Adds w to the weight of edge (a, b) of the welded adjacency. */
static void add_cot(const ssk_weld *w, float *cot, uint32_t a, uint32_t b, float value)
{
    for (uint32_t k = w->adjacency_offsets[a]; k < w->adjacency_offsets[a + 1]; ++k)
        if (w->adjacency[k] == b) {
            cot[k] += value;
            return;
        }
}

/* Rest positions, dominant bones, the cotangent weights (floored at
 * COTANGENT_FLOOR of their positive mean) over the welded triangles. */
static void rest_data(ssk_implicit_elastic *e, const ssk_rig *rig)
{
    const ssk_weld *w = &rig->weld;
    const size_t nv = rig->vertex_count, nb = rig->bone_count;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t i = 0; i < mesh->vertex_count; ++i) {
            const uint32_t v = mesh->first_vertex + i;
            ssk_mat4_transform_point(e->rest + 3 * (size_t)v, mesh->object_matrix,
                                     mesh->positions + 3 * (size_t)i);
            uint32_t best = UINT32_MAX;
            float best_w = 0.0f;
            for (uint32_t k = 0; k < mesh->influence_count; ++k) {
                const size_t row = (size_t)i * mesh->influence_count + k;
                const int32_t b = mesh->bone_indices[row];
                if (b >= 0 && (uint32_t)b < nb && mesh->weights[row] > best_w) {
                    best_w = mesh->weights[row];
                    best = (uint32_t)b;
                }
            }
            e->dominant[v] = best;
        }
    }
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t f = 0; f < mesh->triangle_count; ++f) {
            uint32_t t[3];
            for (int c = 0; c < 3; ++c)
                t[c] = w->point[mesh->first_vertex + (uint32_t)mesh->triangles[3 * (size_t)f + c]];
            if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2]) continue;
            for (int c = 0; c < 3; ++c) {
                const uint32_t x = t[c], y = t[(c + 1) % 3], z = t[(c + 2) % 3];
                const float *px = e->rest + 3 * (size_t)x, *py = e->rest + 3 * (size_t)y,
                            *pz = e->rest + 3 * (size_t)z;
                const float e1[3] = {py[0] - px[0], py[1] - px[1], py[2] - px[2]};
                const float e2[3] = {pz[0] - px[0], pz[1] - px[1], pz[2] - px[2]};
                const float cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                                     e1[0] * e2[1] - e1[1] * e2[0]};
                const float area2 = sqrtf(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
                if (!(area2 > 0.0f)) continue;
                /* the angle at x is opposite edge (y, z) */
                const float cot = 0.5f * (e1[0] * e2[0] + e1[1] * e2[1] + e1[2] * e2[2]) / area2;
                add_cot(w, e->cot, y, z, cot);
                add_cot(w, e->cot, z, y, cot);
            }
        }
    }
    const size_t edges = w->adjacency_offsets[nv];
    double mean = 0.0;
    size_t positive = 0;
    for (size_t k = 0; k < edges; ++k)
        if (e->cot[k] > 0.0f) {
            mean += e->cot[k];
            positive++;
        }
    const float floor_w = positive ? (float)(COTANGENT_FLOOR * mean / (double)positive) : 1.0f;
    for (uint32_t v = 0; v < nv; ++v)
        for (uint32_t k = w->adjacency_offsets[v]; k < w->adjacency_offsets[v + 1]; ++k) {
            if (!(e->cot[k] > floor_w)) e->cot[k] = floor_w;
            e->cot_sum[v] += e->cot[k];
        }
}

/* W (1 + lambda) - w over the representatives, upper triangle, factorized. */
static ssk_status factorize(ssk_implicit_elastic *e, const ssk_implicit *im, ssk_error *err)
{
    const ssk_weld *w = &im->rig->weld;
    const uint32_t n = e->unknown_count;
    size_t edges = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t v = e->row_of[i];
        edges += w->adjacency_offsets[v + 1] - w->adjacency_offsets[v];
    }
    cholmod_start(&e->common);
    e->started = 1;
    e->common.print = 0;
    cholmod_triplet *T = cholmod_allocate_triplet(n, n, (size_t)n + edges, 1, CHOLMOD_REAL,
                                                  &e->common);
    if (!T) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    int *ti = T->i, *tj = T->j;
    double *tx = T->x;
    size_t nz = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t v = e->row_of[i];
        const double wsum = e->cot_sum[v] > 0.0f ? (double)e->cot_sum[v] : 1.0;
        const double lambda = (im->flags[v] & V_TRACKED) ? ELASTIC_PULL : ELASTIC_PIN;
        e->pull[i] = lambda * wsum;
        ti[nz] = (int)i;
        tj[nz] = (int)i;
        tx[nz++] = (e->cot_sum[v] > 0.0f ? (double)e->cot_sum[v] : 0.0) + e->pull[i];
        for (uint32_t k = w->adjacency_offsets[v]; k < w->adjacency_offsets[v + 1]; ++k) {
            const uint32_t j = e->unknown_of[w->adjacency[k]];
            if (j <= i) continue; /* the upper triangle */
            ti[nz] = (int)i;
            tj[nz] = (int)j;
            tx[nz++] = -(double)e->cot[k];
        }
    }
    T->nnz = nz;
    cholmod_sparse *A = cholmod_triplet_to_sparse(T, nz, &e->common);
    cholmod_free_triplet(&T, &e->common);
    if (!A) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    e->factor = cholmod_analyze(A, &e->common);
    const int factored = e->factor && cholmod_factorize(A, e->factor, &e->common);
    cholmod_free_sparse(&A, &e->common);
    if (!factored || e->common.status != CHOLMOD_OK || e->factor->minor < n)
        return ssk_error_set(err, SSK_ERROR_BIND,
                             "implicit elastic tracking: the sparse Cholesky factorization of "
                             "%u unknowns failed (CHOLMOD status %d)",
                             n, e->common.status);
    e->rhs = cholmod_allocate_dense(n, 3, n, CHOLMOD_REAL, &e->common);
    if (!e->rhs) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    return SSK_OK;
}

ssk_status ssk_implicit_elastic_create(ssk_implicit *im, ssk_error *err)
{
    const ssk_rig *rig = im->rig;
    const ssk_weld *w = &rig->weld;
    const size_t nv = rig->vertex_count, nb = rig->bone_count;
    if (!w->adjacency_offsets || !w->point)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit elastic tracking: the rig has no welded adjacency");
    ssk_implicit_elastic *e = calloc(1, sizeof *e);
    if (!e) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    im->elastic = e; /* freed with the tracker on any failure */
    const size_t edges = w->adjacency_offsets[nv];
    const size_t pose = 16 * nb + 1;
    e->unknown_of = malloc((nv + 1) * sizeof *e->unknown_of);
    e->row_of = malloc((nv + 1) * sizeof *e->row_of);
    e->rest = malloc((3 * nv + 1) * sizeof *e->rest);
    e->dominant = malloc((nv + 1) * sizeof *e->dominant);
    e->cot = calloc(edges + 1, sizeof *e->cot);
    e->cot_sum = calloc(nv + 1, sizeof *e->cot_sum);
    e->pull = malloc((nv + 1) * sizeof *e->pull);
    e->rot = malloc((9 * nv + 1) * sizeof *e->rot);
    e->bone_quat = malloc((4 * nb + 1) * sizeof *e->bone_quat);
    e->prev_x = malloc((3 * nv + 1) * sizeof *e->prev_x);
    e->prev_skin = malloc(pose * sizeof *e->prev_skin);
    e->target = malloc(pose * sizeof *e->target);
    e->pose = malloc(pose * sizeof *e->pose);
    e->next_pose = malloc(pose * sizeof *e->next_pose);
    e->delta = malloc(pose * sizeof *e->delta);
    if (!e->unknown_of || !e->row_of || !e->rest || !e->dominant || !e->cot || !e->cot_sum ||
        !e->pull || !e->rot || !e->bone_quat || !e->prev_x || !e->prev_skin || !e->target ||
        !e->pose || !e->next_pose || !e->delta)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    uint32_t n = 0;
    for (uint32_t v = 0; v < nv; ++v)
        if (w->point[v] == v) {
            e->unknown_of[v] = n;
            e->row_of[n++] = v;
        }
    for (uint32_t v = 0; v < nv; ++v) e->unknown_of[v] = e->unknown_of[w->point[v]];
    e->unknown_count = n;
    rest_data(e, rig);
    return factorize(e, im, err);
}

/* The unit quaternion (x, y, z, w: cglm's versor) of the rotation of
 * row-major m (its axes orthonormalized keeping Y, as Blender does). */
static void matrix_quat(versor q, const float m[16])
{
    float axes[3][3], wxyz[4];
    ssk_orthogonalize_keep_y(axes, m);
    ssk_axes_to_quat(wxyz, axes);
    q[0] = wxyz[1];
    q[1] = wxyz[2];
    q[2] = wxyz[3];
    q[3] = wxyz[0];
}

/* Virtual frame s in [0, 1] between poses a and b of bone `bone`: its head
 * moved linearly, its rotation by slerp ("the intermediate skeleton
 * configurations are linearly interpolated", 4.6.3.1; scale is not
 * interpolated: the skinning matrices of skeletal animation are rigid). */
static void pose_between(float out[16], const float a[16], const float b[16], const float head[3],
                         float s)
{
    versor qa, qb, q;
    matrix_quat(qa, a);
    matrix_quat(qb, b);
    glm_quat_slerp(qa, qb, s, q);
    CGLM_ALIGN_MAT mat4 r;
    glm_quat_mat4(q, r);
    ssk_glm_store(out, r);
    float ha[3], hb[3];
    ssk_mat4_transform_point(ha, a, head);
    ssk_mat4_transform_point(hb, b, head);
    for (int k = 0; k < 3; ++k) {
        const float h = ha[k] + s * (hb[k] - ha[k]);
        out[4 * k + 3] = h - (out[4 * k] * head[0] + out[4 * k + 1] * head[1] + out[4 * k + 2] * head[2]);
    }
}

/* Virtual frames from pose a to pose b: the largest bone rotation over
 * substep_angle, rounded up, at least 1. */
static uint32_t substep_count(const ssk_implicit *im, const float *a, const float *b)
{
    const float step = im->params.substep_angle * (float)(SSK_IMPLICIT_PI / 180.0);
    float largest = 0.0f;
    for (uint32_t k = 0; k < im->rig->bone_count; ++k) {
        versor qa, qb;
        matrix_quat(qa, a + 16 * (size_t)k);
        matrix_quat(qb, b + 16 * (size_t)k);
        float d = fabsf(glm_quat_dot(qa, qb));
        d = d > 1.0f ? 1.0f : d;
        const float angle = 2.0f * acosf(d);
        if (angle > largest) largest = angle;
    }
    const float n = ceilf(largest / step);
    return n < 1.0f ? 1u : n > (float)MAX_SUBSTEPS ? MAX_SUBSTEPS : (uint32_t)n;
}

/* Each vertex's R_i of Eq. 4.9 at the virtual frame: the blend (QLERP,
 * signs aligned with the vertex's dominant bone) of its bones' rotations
 * by its skin weights (4.6.3.1 blends with dual quaternions; the rotation
 * part of that blend is this). */
static void vertex_rotations(ssk_implicit *im, const float *pose)
{
    const ssk_rig *rig = im->rig;
    for (uint32_t b = 0; b < rig->bone_count; ++b) matrix_quat(im->elastic->bone_quat + 4 * (size_t)b, pose + 16 * (size_t)b);
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t i = 0; i < mesh->vertex_count; ++i) {
            const uint32_t v = mesh->first_vertex + i;
            float *r = im->elastic->rot + 9 * (size_t)v;
            const uint32_t dom = im->elastic->dominant[v];
            if (dom == UINT32_MAX) {
                memset(r, 0, 9 * sizeof(float));
                r[0] = r[4] = r[8] = 1.0f;
                continue;
            }
            const float *qd = im->elastic->bone_quat + 4 * (size_t)dom;
            versor q = {0.0f, 0.0f, 0.0f, 0.0f};
            for (uint32_t k = 0; k < mesh->influence_count; ++k) {
                const size_t row = (size_t)i * mesh->influence_count + k;
                const int32_t b = mesh->bone_indices[row];
                const float wt = mesh->weights[row];
                if (b < 0 || (uint32_t)b >= rig->bone_count || !(wt > 0.0f)) continue;
                const float *qb = im->elastic->bone_quat + 4 * (size_t)b;
                const float sign =
                    qb[0] * qd[0] + qb[1] * qd[1] + qb[2] * qd[2] + qb[3] * qd[3] < 0.0f ? -1.0f : 1.0f;
                for (int c = 0; c < 4; ++c) q[c] += sign * wt * qb[c];
            }
            glm_quat_normalize(q);
            CGLM_ALIGN_MAT mat4 rm;
            glm_quat_mat4(q, rm);
            for (int row = 0; row < 3; ++row)
                for (int col = 0; col < 3; ++col) r[3 * row + col] = rm[col][row];
        }
    }
}

/* One relaxation step of stage 3: the minimizer of E plus the pull (the
 * top of the file), its move taken in each tracked vertex's tangent plane
 * (normal: grad f of the last projection, Eq. 4.10). */
static ssk_status relax(ssk_implicit *im, float *positions, ssk_error *err)
{
    ssk_implicit_elastic *e = im->elastic;
    const ssk_weld *w = &im->rig->weld;
    const uint32_t n = e->unknown_count;
    double *b = e->rhs->x;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t v = e->row_of[i];
        const float *ri = e->rot + 9 * (size_t)v, *pi = e->rest + 3 * (size_t)v;
        const float *x = positions + 3 * (size_t)v;
        double acc[3] = {0.0, 0.0, 0.0};
        for (uint32_t k = w->adjacency_offsets[v]; k < w->adjacency_offsets[v + 1]; ++k) {
            const uint32_t j = w->adjacency[k];
            const float *rj = e->rot + 9 * (size_t)j, *pj = e->rest + 3 * (size_t)j;
            const float d[3] = {pi[0] - pj[0], pi[1] - pj[1], pi[2] - pj[2]};
            for (int a = 0; a < 3; ++a)
                acc[a] += (double)e->cot[k] * 0.5 *
                          ((double)(ri[3 * a] + rj[3 * a]) * d[0] +
                           (double)(ri[3 * a + 1] + rj[3 * a + 1]) * d[1] +
                           (double)(ri[3 * a + 2] + rj[3 * a + 2]) * d[2]);
        }
        for (int a = 0; a < 3; ++a) b[(size_t)a * n + i] = acc[a] + e->pull[i] * x[a];
    }
    cholmod_dense *xs = cholmod_solve(CHOLMOD_A, e->factor, e->rhs, &e->common);
    if (!xs) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "implicit elastic: the solve failed");
    const double *sol = xs->x;
    bool finite = true;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t v = e->row_of[i];
        if (!(im->flags[v] & V_TRACKED)) continue;
        float *x = positions + 3 * (size_t)v;
        float delta[3];
        for (int a = 0; a < 3; ++a) delta[a] = (float)(sol[(size_t)a * n + i] - (double)x[a]);
        const float *fg = im->fg + 4 * (size_t)v;
        const float g2 = fg[1] * fg[1] + fg[2] * fg[2] + fg[3] * fg[3];
        if (g2 > GRADIENT_EPSILON) {
            const float h = (delta[0] * fg[1] + delta[1] * fg[2] + delta[2] * fg[3]) / g2;
            for (int a = 0; a < 3; ++a) delta[a] -= h * fg[1 + a];
        }
        for (int a = 0; a < 3; ++a) {
            x[a] += delta[a];
            finite = finite && isfinite(x[a]);
        }
    }
    cholmod_free_dense(&xs, &e->common);
    if (!finite)
        return ssk_error_set(err, SSK_ERROR_NONFINITE, "implicit elastic: a non-finite position");
    (void)w;
    return SSK_OK;
}

/* Newton projections of the tracked vertices (implicit.c's step). */
static void project(ssk_implicit *im, track_ctx *c)
{
    ssk_parallel_for(im->rig->vertex_count, TRACK_GRAIN, ssk_implicit_project_rows, c);
    ssk_implicit_take_next(im, c->x);
    c->step++;
}

ssk_status ssk_implicit_elastic_track(ssk_implicit *im, float *positions, double frame,
                                      ssk_implicit_report *report, ssk_error *err)
{
    ssk_implicit_elastic *e = im->elastic;
    const ssk_rig *rig = im->rig;
    const uint32_t nv = rig->vertex_count, nb = rig->bone_count;
    const size_t pose_bytes = 16 * (size_t)nb * sizeof(float);
    /* the target pose (the last ssk_implicit_pose) and where the frame starts */
    memcpy(e->target, im->skin, pose_bytes);
    const bool continues = e->has_prev && frame == e->prev_frame + 1.0;
    if (!continues)
        for (uint32_t b = 0; b < nb; ++b) ssk_mat4_identity(e->prev_skin + 16 * (size_t)b);
    const float *start = continues ? e->prev_x : e->rest;
    for (uint32_t v = 0; v < nv; ++v)
        if (im->flags[v] & V_TRACKED)
            memcpy(positions + 3 * (size_t)v, start + 3 * (size_t)v, 3 * sizeof(float));
    const uint32_t substeps = substep_count(im, e->prev_skin, e->target);
    memcpy(e->pose, e->prev_skin, pose_bytes);
    ssk_status st = SSK_OK;
    track_ctx c = {.im = im, .x = positions, .step = 0};
    for (uint32_t k = 1; k <= substeps && st == SSK_OK; ++k) {
        /* stage 1: each vertex follows its own bone's change */
        for (uint32_t b = 0; b < nb; ++b) {
            float *np = e->next_pose + 16 * (size_t)b, inv[16];
            if (k == substeps)
                memcpy(np, e->target + 16 * (size_t)b, 16 * sizeof(float));
            else
                pose_between(np, e->prev_skin + 16 * (size_t)b, e->target + 16 * (size_t)b,
                             rig->bones[b].head, (float)k / (float)substeps);
            if (!ssk_mat4_invert(inv, e->pose + 16 * (size_t)b)) {
                st = ssk_error_set(err, SSK_ERROR_NONFINITE,
                                   "implicit elastic tracking: bone %u's pose is singular", b);
                break;
            }
            ssk_mat4_mul(e->delta + 16 * (size_t)b, np, inv);
        }
        if (st != SSK_OK) break;
        memcpy(e->pose, e->next_pose, pose_bytes);
        for (uint32_t v = 0; v < nv; ++v) {
            if (!(im->flags[v] & V_TRACKED) || e->dominant[v] == UINT32_MAX) continue;
            float *x = positions + 3 * (size_t)v;
            ssk_mat4_transform_point(x, e->delta + 16 * (size_t)e->dominant[v], x);
        }
        st = ssk_implicit_pose(im, e->pose, err);
        if (st != SSK_OK) break;
        vertex_rotations(im, e->pose);
        /* stages 2 and 3 */
        for (uint32_t v = 0; v < nv; ++v) {
            im->flags[v] &= V_TRACKED;
            im->prev_error[v] = INFINITY;
        }
        c.step = 0;
        for (uint32_t p = 0; p < ELASTIC_PROJECTIONS; ++p) project(im, &c);
        for (uint32_t r = 0; r < im->params.relaxation_iterations && st == SSK_OK; ++r) {
            st = relax(im, positions, err);
            for (uint32_t v = 0; v < nv; ++v) {
                im->flags[v] &= (uint8_t)~V_DONE; /* moved: projected again */
                im->prev_error[v] = INFINITY;
            }
            project(im, &c);
        }
    }
    if (st != SSK_OK) {
        e->has_prev = false;
        return st;
    }
    memcpy(e->prev_x, positions, 3 * (size_t)nv * sizeof(float));
    memcpy(e->prev_skin, e->target, pose_bytes);
    e->has_prev = true;
    e->prev_frame = frame;
    if (report) {
        uint32_t tracked = 0, contacts = 0;
        float residual = 0.0f;
        for (uint32_t v = 0; v < nv; ++v) {
            const uint8_t fl = im->flags[v];
            if (!(fl & V_TRACKED)) continue;
            tracked++;
            if (fl & V_CONTACT) {
                contacts++;
                continue;
            }
            float g[3];
            const float err_v =
                fabsf(ssk_implicit_vertex_eval(im, v, positions + 3 * (size_t)v, g) - im->iso[v]);
            if (err_v > residual) residual = err_v;
        }
        report->tracked = tracked;
        report->contacts = contacts;
        report->residual = residual;
        report->substeps = substeps;
    }
    return ssk_error_ok(err);
}
