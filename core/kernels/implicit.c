/*
 * implicit.c — implicit skinning's composition and history-independent
 * tracking (Vaillant 2015, 4.5 and 4.6.2; issue #20); kernels/implicit.h
 * gives the interface, springskin.h the parameters.
 *
 * Composition tree (4.5). "We start by creating nodes that link pairs of
 * primitives with bulge-in-contact composition g_db. This forms the bottom
 * of the tree. Then all the other nodes are added on top using
 * gradient-based contact g_dc." Here the tree follows the skeleton: a
 * bone's subtree is its own field composed first with the subtrees of the
 * children whose joint is a bulge joint, then with the others (contact or
 * clean union); bones without a field pass their children's composition
 * up; the roots' subtrees are composed with the default operator. Each
 * internal node is g(f1, f2, d(alpha)) with alpha the angle between the
 * gradients of its two inputs (3.4.1) and grad g = dg/df1 grad f1 + dg/df2
 * grad f2 (d held constant, as the paper differentiates it).
 *
 * Per-vertex programs. The fields have compact support, and g(f, 0) = f
 * (Eq. 4.3), so at a point only the fields that reach it matter. Each
 * vertex evaluates the tree restricted to its candidate fields: the bones
 * it has a skin weight on, and their parents and children (a joint's two
 * sides); a composition node whose two subtrees both hold a candidate is
 * kept, a node with one such subtree passes it on. The restricted tree is
 * compiled once at creation into a short program (leaves and merges in
 * bottom-up order), so a field evaluation costs a few grid fetches
 * whatever the skeleton's size. Contacts between parts of the skin that
 * share no such bones (an arm against the torso) are therefore not
 * modelled.
 *
 * Tracking (4.6.2.1), per vertex, all vertices in parallel:
 * - Newton projection toward the vertex's rest iso-value, x <- x - sigma
 *   (f(x) - iso) grad f / |grad f|^2. The text's Eq. 4.5 reads "v - sigma
 *   (f - iso) (-grad f) / |grad f|^2", which moves a vertex that is too
 *   far inside (f > iso; f grows inward) further in: a sign lost in the
 *   extraction; Newton's step toward f = iso is the one used. Each step is
 *   capped at half the radius of the vertex's field (a guard where the
 *   gradient fades at the edge of a support).
 * - A vertex stops at contact when its gradient turns by more than the
 *   contact angle between two steps (55 degrees), or when |f - iso| grows
 *   again (the change of monotonicity of 4.6.2.1), and stays there.
 * - After every second projection, tangential relaxation (Eq. 4.6): v <-
 *   (1 - mu) v + mu sum_j Phi_j q_j, q_j the neighbors projected onto the
 *   plane through v normal to grad f, Phi_j the rest mean value
 *   coordinates, mu = max(0, 1 - (|f - iso| - 1)^4) (Eq. 4.7).
 * - At the end, the Laplacian smoothing of contact regions (Eq. 4.8):
 *   beta 1 at the vertices stopped at contact, 0 elsewhere, diffused over
 *   the welded mesh (each step the mean of a vertex and its neighbors),
 *   then v <- (1 - beta) v + beta (centroid of its neighbors).
 * Steps read the positions of the previous step (Jacobi), so the result
 * does not depend on the thread count.
 *
 * Speed (bench/bench_implicit.c), each shortcut exact, the GL twin
 * (shaders/kernels_implicit.comp) running the plain passes and agreeing
 * bit for bit on an IEEE device:
 * - the active set is the paper's ("only a small fraction of vertices
 *   have to be projected"): a vertex converged (|f - iso| <
 *   CONVERGED_EPSILON) or stopped at contact is not evaluated again;
 * - a projection step reads only its own vertex, so the steps between two
 *   relaxations run per vertex in one sweep, the relaxation (which reads
 *   the neighbors' positions of the previous sweep) first; positions
 *   alternate between two buffers instead of being copied back;
 * - a field's lookup in a cell whose 8 corners are all zero returns the
 *   +0 that the blend of zeros gives, without the fetches (zero cells,
 *   marked at creation);
 * - an operator lookup with the controller at 0 reads one slice of the
 *   grid (implicit_op.c);
 * - the report's residual is taken in parallel (per-chunk maxima), in the
 *   last relaxation's sweep where no smoothing follows.
 * Not done, as it would change the result: skipping the relaxation of a
 * converged vertex (mu = 1 - (1 - |f - iso|)^4 is about 4 |f - iso|, small
 * but not 0).
 */
#include "kernels/implicit_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A leaf entry of a vertex program (field index in `a`). */
#define PROGRAM_LEAF 0xFFu
/* At most this many candidate fields per vertex (programs then have at
 * most 2 x this - 1 entries). */
#define MAX_CANDIDATES 16u
#define MAX_ENTRIES (2u * MAX_CANDIDATES)
/* Program entries name tree nodes (fewer than 2 per field) in 16 bits. */
#define MAX_FIELDS (UINT16_MAX / 2u)
/* Skin weights at or below this do not make a bone a candidate. */
#define CANDIDATE_WEIGHT_EPSILON 1e-6f
/* A vertex is tracked when its rest iso-value is above this (some field
 * reaches it at rest). */
#define TRACK_ISO_EPSILON 1e-4f
/* A step is at most this fraction of the radius of the vertex's field. */
#define MAX_STEP_FRACTION 0.5f
/* |f - iso| below this: converged, the vertex stops moving (not a contact).
 * f's slope across the surface is about 1 / r (t_r' = 15 / (16 r)), so
 * this is about 1e-4 of the field's radius. */
#define CONVERGED_EPSILON 1e-4f
/* The change of monotonicity must exceed this to count (trilinear noise). */
#define MONOTONICITY_TOLERANCE 1e-4f
#define DEFAULT_ITERATIONS 20u
#define DEFAULT_SIGMA 0.35f
#define DEFAULT_CONTACT_ANGLE 55.0f
#define DEFAULT_SMOOTHING 3u
#define DEFAULT_DIFFUSION 3u
#define DEFAULT_BULGE 1.0f
#define DEFAULT_SUBSTEP_ANGLE 15.0f
#define DEFAULT_RELAXATION 3u

_Static_assert(V_TRACKED == SSK_IMPLICIT_FLAG_TRACKED, "implicit.h's tracked flag");
_Static_assert(PROGRAM_LEAF == SSK_IMPLICIT_PROGRAM_LEAF && MAX_ENTRIES == SSK_IMPLICIT_MAX_PROGRAM_ENTRIES,
               "implicit.h's program constants");

static const char *const operator_names[SSK_IMPLICIT_OPERATOR_COUNT] = {"contact", "bulge",
                                                                        "union"};
static const char *const tracking_names[SSK_IMPLICIT_TRACKING_COUNT] = {"independent",
                                                                        "elastic"};

const char *ssk_implicit_tracking_name(ssk_implicit_tracking tracking)
{
    return (unsigned)tracking < SSK_IMPLICIT_TRACKING_COUNT ? tracking_names[tracking] : NULL;
}

const char *ssk_implicit_operator_name(ssk_implicit_operator op)
{
    return (unsigned)op < SSK_IMPLICIT_OPERATOR_COUNT ? operator_names[op] : NULL;
}

void ssk_implicit_params_default(ssk_implicit_params *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->iterations = DEFAULT_ITERATIONS;
    out->sigma = DEFAULT_SIGMA;
    out->contact_angle = DEFAULT_CONTACT_ANGLE;
    out->smoothing_iterations = DEFAULT_SMOOTHING;
    out->diffusion_iterations = DEFAULT_DIFFUSION;
    out->bulge = DEFAULT_BULGE;
    out->default_operator = SSK_IMPLICIT_CONTACT;
    out->tracking = SSK_IMPLICIT_INDEPENDENT;
    out->substep_angle = DEFAULT_SUBSTEP_ANGLE;
    out->relaxation_iterations = DEFAULT_RELAXATION;
}


/* --- evaluation ------------------------------------------------------------ */

/* f and grad (posed rig space) of field `fi` at posed point p. */
static float leaf_eval(const ssk_implicit *im, uint32_t fi, const float p[3], float g[3])
{
    /* q = A p + t as columns, lane r of ((a0 p0 + a1 p1) + a2 p2) + t the
     * sum of row r in the same order as the scalar code (and the shader) */
    const float *cols = im->from_posed_columns + 16 * (size_t)fi;
    const ssk_v4 qv = ssk_v4_load(cols) * ssk_v4_splat(p[0]) +
                      ssk_v4_load(cols + 4) * ssk_v4_splat(p[1]) +
                      ssk_v4_load(cols + 8) * ssk_v4_splat(p[2]) + ssk_v4_load(cols + 12);
    const float q[3] = {qv[0], qv[1], qv[2]};
    float gr[3];
    const float f = ssk_implicit_field_lookup(&im->fit.fields[fi],
                                              im->zero_cells + im->zero_cell_offsets[fi], q, gr);
    /* f(p) = f_rest(A p): grad = A^T grad_rest, lane c = m[c] gr0 + m[4 + c]
     * gr1 + m[8 + c] gr2 (the rows of A; lane 3 unused) */
    const float *m = im->from_posed + 12 * (size_t)fi;
    const ssk_v4 gv = ssk_v4_load(m) * ssk_v4_splat(gr[0]) + ssk_v4_load(m + 4) * ssk_v4_splat(gr[1]) +
                      ssk_v4_load(m + 8) * ssk_v4_splat(gr[2]);
    g[0] = gv[0];
    g[1] = gv[1];
    g[2] = gv[2];
    return f;
}

static float merge_eval(const ssk_implicit *im, uint32_t node, const float a[4], const float b[4],
                        float out_g[3])
{
    const uint32_t op = im->nodes[node].op;
    if (a[0] <= 0.0f) {
        memcpy(out_g, b + 1, 3 * sizeof(float));
        return b[0];
    }
    if (b[0] <= 0.0f) {
        memcpy(out_g, a + 1, 3 * sizeof(float));
        return a[0];
    }
    const ssk_implicit_op *g = &im->ops[SSK_IMPLICIT_OP_CONTACT];
    float d = 0.0f;
    const float dot = a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    const float bend = im->node_bend[node];
    /* the contact controller is 0 up to a right angle: no angle to take
     * when the gradients are at most that far apart and the joint is not
     * bent more */
    const bool angle_needed = op == SSK_IMPLICIT_BULGE ||
                              (op == SSK_IMPLICIT_CONTACT &&
                               (dot < 0.0f || bend > (float)(SSK_IMPLICIT_PI / 2)));
    if (angle_needed) {
        const float na = sqrtf(a[1] * a[1] + a[2] * a[2] + a[3] * a[3]);
        const float nb = sqrtf(b[1] * b[1] + b[2] * b[2] + b[3] * b[3]);
        float alpha = 0.0f;
        if (na > GRADIENT_EPSILON && nb > GRADIENT_EPSILON) {
            float c = dot / (na * nb);
            c = c > 1.0f ? 1.0f : (c < -1.0f ? -1.0f : c);
            alpha = ssk_implicit_acos(c);
        }
        /* the joint's bend as a floor of alpha, where the gradients give
         * no direction (top of the file) */
        alpha = fmaxf(alpha, bend);
        if (op == SSK_IMPLICIT_CONTACT) d = ssk_implicit_controller(SSK_IMPLICIT_OP_CONTACT, alpha);
        else d = im->params.bulge * ssk_implicit_controller(SSK_IMPLICIT_OP_BULGE, alpha);
    }
    if (op == SSK_IMPLICIT_BULGE) {
        g = &im->ops[SSK_IMPLICIT_OP_BULGE];
    }
    float d1 = 0.0f, d2 = 0.0f;
    const float v = ssk_implicit_op_eval(g, a[0], b[0], d, &d1, &d2);
    for (int c = 0; c < 3; ++c) out_g[c] = d1 * a[1 + c] + d2 * b[1 + c];
    return v;
}

/* Runs a program at p: the value of its last entry (0 for an empty one). */
static float program_eval(const ssk_implicit *im, const program_entry *prog, uint32_t count,
                          const float p[3], float *vals, float g[3])
{
    if (count == 0) {
        g[0] = g[1] = g[2] = 0.0f;
        return 0.0f;
    }
    for (uint32_t e = 0; e < count; ++e) {
        float *out = vals + 4 * (size_t)e;
        if (prog[e].b == PROGRAM_LEAF)
            out[0] = leaf_eval(im, prog[e].a, p, out + 1);
        else
            out[0] = merge_eval(im, prog[e].a, vals + 4 * (size_t)prog[e].b,
                                vals + 4 * (size_t)prog[e].c, out + 1);
    }
    const float *last = vals + 4 * (size_t)(count - 1);
    memcpy(g, last + 1, 3 * sizeof(float));
    return last[0];
}

float ssk_implicit_vertex_eval(const ssk_implicit *im, uint32_t v, const float p[3], float g[3])
{
    float vals[4 * MAX_ENTRIES];
    const uint32_t b = im->program_offsets[v];
    return program_eval(im, im->programs + b, im->program_offsets[v + 1] - b, p, vals, g);
}

float ssk_implicit_eval(const ssk_implicit *im, const float p[3], uint32_t vertex, float grad[3])
{
    float g[3];
    if (!grad) grad = g;
    if (!im || !p) return 0.0f;
    if (vertex < im->rig->vertex_count) return ssk_implicit_vertex_eval(im, vertex, p, grad);
    float *vals = malloc((4 * (size_t)im->all_count + 4) * sizeof(float));
    if (!vals) return 0.0f;
    const float f = program_eval(im, im->all_program, im->all_count, p, vals, grad);
    free(vals);
    return f;
}

/* --- creation -------------------------------------------------------------- */

static int32_t add_node(ssk_implicit *im, int32_t field, int32_t left, int32_t right, uint8_t op,
                        int32_t joint)
{
    tree_node *n = &im->nodes[im->node_count];
    n->field = field;
    n->joint = joint;
    n->left = left;
    n->right = right;
    n->op = op;
    return (int32_t)im->node_count++;
}

static int32_t compose(ssk_implicit *im, int32_t acc, int32_t sub, uint8_t op, int32_t joint)
{
    if (sub < 0) return acc;
    if (acc < 0) return sub;
    return add_node(im, -1, acc, sub, op, joint);
}

/* Each field's zero cells (ssk_implicit_field_zero_cells), one array. */
static ssk_status build_zero_cells(ssk_implicit *im, ssk_error *err)
{
    const uint32_t nf = im->fit.field_count;
    im->zero_cell_offsets = malloc(((size_t)nf + 1) * sizeof *im->zero_cell_offsets);
    if (!im->zero_cell_offsets) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    size_t words = 0;
    for (uint32_t f = 0; f < nf; ++f) {
        im->zero_cell_offsets[f] = words;
        words += ssk_implicit_field_cell_words(&im->fit.fields[f]);
    }
    im->zero_cell_offsets[nf] = words;
    if (!(im->zero_cells = malloc((words + 1) * sizeof *im->zero_cells)))
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t f = 0; f < nf; ++f)
        ssk_implicit_field_zero_cells(&im->fit.fields[f], im->zero_cells + im->zero_cell_offsets[f]);
    return SSK_OK;
}

/* The skeleton's children as CSR (im->child_offsets, im->children). */
static ssk_status build_children(ssk_implicit *im, ssk_error *err)
{
    const ssk_rig *rig = im->rig;
    const uint32_t nb = rig->bone_count;
    im->child_offsets = calloc((size_t)nb + 2, sizeof *im->child_offsets);
    im->children = malloc(((size_t)nb + 1) * sizeof *im->children);
    uint32_t *cursor = malloc(((size_t)nb + 1) * sizeof *cursor);
    if (!im->child_offsets || !im->children || !cursor) {
        free(cursor);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t b = 0; b < nb; ++b)
        if (rig->bones[b].parent >= 0) im->child_offsets[rig->bones[b].parent + 1]++;
    for (uint32_t b = 0; b < nb; ++b) im->child_offsets[b + 1] += im->child_offsets[b];
    memcpy(cursor, im->child_offsets, (size_t)nb * sizeof *cursor);
    for (uint32_t b = 0; b < nb; ++b)
        if (rig->bones[b].parent >= 0) im->children[cursor[rig->bones[b].parent]++] = b;
    free(cursor);
    return SSK_OK;
}

/* The tree of 4.5 over the skeleton (see the top of the file). */
static ssk_status build_tree(ssk_implicit *im, const uint8_t *joint_ops, ssk_error *err)
{
    const ssk_rig *rig = im->rig;
    const uint32_t nb = rig->bone_count;
    int32_t *sub = malloc(((size_t)nb + 1) * sizeof *sub);
    uint32_t *order = malloc(((size_t)nb + 1) * sizeof *order);
    uint8_t *op_of = malloc((size_t)nb + 1);
    im->nodes = malloc((2 * (size_t)im->fit.field_count + 1) * sizeof *im->nodes);
    const uint32_t *child_offsets = im->child_offsets, *children = im->children;
    ssk_status st = SSK_OK;
    if (!sub || !order || !op_of || !im->nodes) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (uint32_t b = 0; b < nb; ++b) {
        const uint8_t o = joint_ops ? joint_ops[b] : SSK_IMPLICIT_OPERATOR_COUNT;
        op_of[b] = o < SSK_IMPLICIT_OPERATOR_COUNT ? o : (uint8_t)im->params.default_operator;
    }
    /* post-order: repeatedly take the bones whose children are done (the
     * rig was validated acyclic) */
    uint32_t count = 0;
    {
        uint32_t *pending = calloc((size_t)nb + 1, sizeof *pending);
        if (!pending) {
            st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        for (uint32_t b = 0; b < nb; ++b) pending[b] = child_offsets[b + 1] - child_offsets[b];
        for (uint32_t b = 0; b < nb; ++b)
            if (pending[b] == 0) order[count++] = b;
        for (uint32_t k = 0; k < count; ++k) {
            const int32_t p = rig->bones[order[k]].parent;
            if (p >= 0 && --pending[p] == 0) order[count++] = (uint32_t)p;
        }
        free(pending);
    }
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t b = order[k];
        const int32_t fi = im->fit.bone_field[b];
        int32_t acc = fi >= 0 ? add_node(im, fi, -1, -1, 0, -1) : -1;
        for (int pass = 0; pass < 2; ++pass)
            for (uint32_t c = child_offsets[b]; c < child_offsets[b + 1]; ++c) {
                const uint32_t ch = children[c];
                const bool bulge = op_of[ch] == SSK_IMPLICIT_BULGE;
                if ((pass == 0) != bulge) continue;
                acc = compose(im, acc, sub[ch], op_of[ch], (int32_t)ch);
            }
        sub[b] = acc;
    }
    im->root = -1;
    for (uint32_t b = 0; b < nb; ++b)
        if (rig->bones[b].parent < 0)
            im->root = compose(im, im->root, sub[b], (uint8_t)im->params.default_operator, -1);
done:
    free(sub);
    free(order);
    free(op_of);
    return st;
}

/* Compiles the tree restricted to the fields marked in `candidate` (a
 * stamp array: candidate[f] == stamp) into prog; slot[] is node scratch.
 * Returns the entry count (at most cap; UINT32_MAX when it would exceed). */
static uint32_t compile(const ssk_implicit *im, const uint32_t *candidate, uint32_t stamp,
                        int32_t *slot, program_entry *prog, uint32_t cap)
{
    uint32_t count = 0;
    for (uint32_t n = 0; n < im->node_count; ++n) {
        const tree_node *t = &im->nodes[n];
        slot[n] = -1;
        if (t->field >= 0) {
            if (candidate[t->field] != stamp) continue;
            if (count >= cap) return UINT32_MAX;
            prog[count] = (program_entry){.a = (uint16_t)t->field, .b = PROGRAM_LEAF, .c = 0};
            slot[n] = (int32_t)count++;
            continue;
        }
        const int32_t l = slot[t->left], r = slot[t->right];
        if (l < 0 || r < 0) {
            slot[n] = l >= 0 ? l : r;
            continue;
        }
        if (count >= cap) return UINT32_MAX;
        prog[count] = (program_entry){.a = (uint16_t)n, .b = (uint8_t)l, .c = (uint8_t)r};
        slot[n] = (int32_t)count++;
    }
    return count;
}

/* Marks vertex v's candidate fields: the bones of its skin weights and
 * their parents and children. Returns how many. */
static uint32_t mark_candidates(const ssk_implicit *im, const ssk_mesh *mesh, uint32_t local,
                                const uint32_t *child_offsets, const uint32_t *children,
                                uint32_t *candidate, uint32_t stamp)
{
    const ssk_rig *rig = im->rig;
    uint32_t count = 0;
    for (uint32_t k = 0; k < mesh->influence_count; ++k) {
        const size_t row = (size_t)local * mesh->influence_count + k;
        if (!(mesh->weights[row] > CANDIDATE_WEIGHT_EPSILON)) continue;
        const int32_t b = mesh->bone_indices[row];
        if (b < 0 || (uint32_t)b >= rig->bone_count) continue;
        int32_t near[2] = {b, rig->bones[b].parent};
        for (int s = 0; s < 2; ++s) {
            if (near[s] < 0) continue;
            const int32_t f = im->fit.bone_field[near[s]];
            if (f >= 0 && candidate[f] != stamp) {
                candidate[f] = stamp;
                count++;
            }
        }
        for (uint32_t c = child_offsets[b]; c < child_offsets[b + 1]; ++c) {
            const int32_t f = im->fit.bone_field[children[c]];
            if (f >= 0 && candidate[f] != stamp) {
                candidate[f] = stamp;
                count++;
            }
        }
    }
    return count;
}

/* Per-vertex programs, every-field program, max steps. */
static ssk_status build_programs(ssk_implicit *im, ssk_error *err)
{
    const ssk_rig *rig = im->rig;
    const uint32_t nv = rig->vertex_count, nf = im->fit.field_count;
    uint32_t *candidate = calloc((size_t)nf + 1, sizeof *candidate);
    int32_t *slot = malloc(((size_t)im->node_count + 1) * sizeof *slot);
    const uint32_t *child_offsets = im->child_offsets, *children = im->children;
    im->program_offsets = malloc(((size_t)nv + 1) * sizeof *im->program_offsets);
    im->max_step = malloc(((size_t)nv + 1) * sizeof *im->max_step);
    im->all_program = malloc(((size_t)im->node_count + 1) * sizeof *im->all_program);
    size_t capacity = (size_t)nv * 4 + 16;
    im->programs = malloc(capacity * sizeof *im->programs);
    ssk_status st = SSK_OK;
    if (!candidate || !slot || !im->program_offsets || !im->max_step || !im->all_program ||
        !im->programs)
        goto oom;
    uint32_t stamp = 1;
    for (uint32_t f = 0; f < nf; ++f) candidate[f] = stamp;
    im->all_count = compile(im, candidate, stamp, slot, im->all_program, im->node_count + 1);
    size_t used = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t i = 0; i < mesh->vertex_count; ++i) {
            const uint32_t v = mesh->first_vertex + i;
            im->program_offsets[v] = (uint32_t)used;
            ++stamp;
            mark_candidates(im, mesh, i, child_offsets, children, candidate, stamp);
            if (used + MAX_ENTRIES > capacity) {
                capacity = 2 * capacity + MAX_ENTRIES;
                program_entry *grown = realloc(im->programs, capacity * sizeof *grown);
                if (!grown) goto oom;
                im->programs = grown;
            }
            uint32_t n = compile(im, candidate, stamp, slot, im->programs + used, MAX_ENTRIES);
            if (n == UINT32_MAX) n = 0; /* more candidates than a program holds: untracked */
            /* a loose vertex (in no triangle) keeps the first stage, which
             * follows its skin weights: untracked (issue #37) */
            if (mesh->triangle_count > 0 &&
                mesh->vertex_triangle_offsets[i + 1] == mesh->vertex_triangle_offsets[i])
                n = 0;
            used += n;
            /* the step cap: half the largest radius among its fields */
            float r = 0.0f;
            for (uint32_t e = 0; e < n; ++e) {
                const program_entry *pe = &im->programs[im->program_offsets[v] + e];
                if (pe->b == PROGRAM_LEAF && im->fit.fields[pe->a].radius > r)
                    r = im->fit.fields[pe->a].radius;
            }
            im->max_step[v] = MAX_STEP_FRACTION * r;
        }
    }
    im->program_offsets[nv] = (uint32_t)used;
    goto done;
oom:
    st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
done:
    free(candidate);
    free(slot);
    return st;
}

void ssk_implicit_destroy(ssk_implicit *im)
{
    if (!im) return;
    ssk_implicit_fit_free(&im->fit);
    free(im->nodes);
    free(im->child_offsets);
    free(im->children);
    free(im->program_offsets);
    free(im->programs);
    free(im->all_program);
    free(im->iso);
    free(im->max_step);
    free(im->flags);
    free(im->from_posed);
    free(im->from_posed_columns);
    free(im->node_bend);
    free(im->next);
    free(im->fg);
    free(im->prev_error);
    free(im->beta);
    free(im->beta_next);
    free(im->skin);
    free(im->residual_chunks);
    free(im->zero_cell_offsets);
    free(im->zero_cells);
    ssk_implicit_elastic_destroy(im->elastic);
    free(im);
}

static ssk_status check_params(const ssk_implicit_params *p, ssk_error *err)
{
    if (!(p->sigma > 0.0f && p->sigma <= 1.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit parameters: sigma = %g must be in (0, 1]", (double)p->sigma);
    if (!(p->contact_angle > 0.0f && p->contact_angle < 180.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit parameters: contact_angle = %g must be in (0, 180) degrees",
                             (double)p->contact_angle);
    if (!(p->bulge >= 0.0f && p->bulge <= 1.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit parameters: bulge = %g must be in [0, 1]", (double)p->bulge);
    if ((unsigned)p->default_operator >= SSK_IMPLICIT_OPERATOR_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit parameters: default_operator %d out of range",
                             (int)p->default_operator);
    if ((unsigned)p->tracking >= SSK_IMPLICIT_TRACKING_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit parameters: tracking %d out of range", (int)p->tracking);
    if (p->tracking == SSK_IMPLICIT_ELASTIC &&
        !(p->substep_angle > 0.0f && p->substep_angle <= 180.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit parameters: substep_angle = %g must be in (0, 180] degrees",
                             (double)p->substep_angle);
    if (p->relaxation_iterations > SSK_IMPLICIT_MAX_ITERATIONS ||
        p->iterations > SSK_IMPLICIT_MAX_ITERATIONS ||
        p->smoothing_iterations > SSK_IMPLICIT_MAX_ITERATIONS ||
        p->diffusion_iterations > SSK_IMPLICIT_MAX_ITERATIONS)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "implicit parameters: iteration counts must be at most %u",
                             SSK_IMPLICIT_MAX_ITERATIONS);
    return SSK_OK;
}


/* from_posed's columns (implicit_internal.h), after from_posed changed. */
static void set_columns(ssk_implicit *im)
{
    for (uint32_t f = 0; f < im->fit.field_count; ++f) {
        const float *m = im->from_posed + 12 * (size_t)f;
        float *c = im->from_posed_columns + 16 * (size_t)f;
        for (int col = 0; col < 4; ++col) {
            for (int r = 0; r < 3; ++r) c[4 * col + r] = m[4 * r + col];
            c[4 * col + 3] = 0.0f;
        }
    }
}

ssk_status ssk_implicit_create(ssk_implicit **out, const ssk_rig *rig, ssk_implicit_fit *fit,
                               const ssk_implicit_operators *ops,
                               const ssk_implicit_params *params, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !rig || !fit || !ops || !params)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_implicit_create: NULL argument");
    ssk_implicit *im = calloc(1, sizeof *im);
    if (!im) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    /* take the fit first, so that it is freed on any failure */
    im->fit = *fit;
    memset(fit, 0, sizeof *fit);
    im->ops = ops->ops;
    im->rig = rig;
    im->params = *params;
    im->params.joint_operators = NULL;
    ssk_status st = check_params(params, err);
    if (st != SSK_OK) goto fail;
    for (int k = 0; k < SSK_IMPLICIT_OP_KIND_COUNT; ++k)
        if (!im->ops[k].values || im->ops[k].resolution < 2) {
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "ssk_implicit_create: operator %d not built", k);
            goto fail;
        }
    if (im->fit.field_count > MAX_FIELDS) {
        st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                           "implicit skinning: %u fields, at most %u", im->fit.field_count,
                           (unsigned)MAX_FIELDS);
        goto fail;
    }
    im->cos_contact = cosf(params->contact_angle * (float)(SSK_IMPLICIT_PI / 180.0));
    const size_t nv = rig->vertex_count, nf = im->fit.field_count;
    im->iso = malloc((nv + 1) * sizeof *im->iso);
    im->flags = calloc(nv + 1, 1);
    im->from_posed = malloc((12 * nf + 1) * sizeof *im->from_posed);
    im->from_posed_columns = malloc((16 * nf + 1) * sizeof *im->from_posed_columns);
    im->next = malloc((3 * nv + 1) * sizeof *im->next);
    im->fg = malloc((4 * nv + 1) * sizeof *im->fg);
    im->prev_error = malloc((nv + 1) * sizeof *im->prev_error);
    im->beta = malloc((nv + 1) * sizeof *im->beta);
    im->beta_next = malloc((nv + 1) * sizeof *im->beta_next);
    im->skin = malloc((16 * (size_t)rig->bone_count + 1) * sizeof *im->skin);
    im->residual_chunks =
        malloc(((size_t)ssk_parallel_chunk_count((int64_t)nv, TRACK_GRAIN) + 1) * sizeof(float));
    if (!im->iso || !im->flags || !im->from_posed || !im->from_posed_columns || !im->next || !im->fg || !im->prev_error ||
        !im->beta || !im->beta_next || !im->skin || !im->residual_chunks) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    st = build_zero_cells(im, err);
    if (st == SSK_OK) st = build_children(im, err);
    if (st == SSK_OK) st = build_tree(im, params->joint_operators, err);
    if (st == SSK_OK) st = build_programs(im, err);
    if (st != SSK_OK) goto fail;
    if (!(im->node_bend = calloc((size_t)im->node_count + 1, sizeof *im->node_bend))) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    /* the rest pose: every skinning matrix the identity */
    for (size_t f = 0; f < nf; ++f) {
        float *m = im->from_posed + 12 * f;
        memset(m, 0, 12 * sizeof(float));
        m[0] = m[5] = m[10] = 1.0f;
    }
    set_columns(im);
    const ssk_weld *weld = &rig->weld;
    for (uint32_t mi = 0; mi < rig->mesh_count; ++mi) {
        const ssk_mesh *mesh = &rig->meshes[mi];
        for (uint32_t i = 0; i < mesh->vertex_count; ++i) {
            const uint32_t v = mesh->first_vertex + i;
            float p[3], g[3];
            ssk_mat4_transform_point(p, mesh->object_matrix, mesh->positions + 3 * (size_t)i);
            im->iso[v] = ssk_implicit_vertex_eval(im, v, p, g);
            const bool rep = !weld->point || weld->point[v] == v;
            if (rep && im->iso[v] > TRACK_ISO_EPSILON) im->flags[v] = V_TRACKED;
        }
    }
    for (uint32_t b = 0; b < rig->bone_count; ++b) ssk_mat4_identity(im->skin + 16 * (size_t)b);
    if (params->tracking == SSK_IMPLICIT_ELASTIC) {
        st = ssk_implicit_elastic_create(im, err);
        if (st != SSK_OK) goto fail;
    }
    *out = im;
    return ssk_error_ok(err);
fail:
    ssk_implicit_destroy(im);
    return st;
}

ssk_status ssk_implicit_pose(ssk_implicit *im, const float *skinning, ssk_error *err)
{
    if (!im || !skinning)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_implicit_pose: NULL argument");
    for (uint32_t f = 0; f < im->fit.field_count; ++f) {
        const uint32_t b = im->fit.fields[f].bone;
        float inv[16];
        if (!ssk_floats_finite(skinning + 16 * (size_t)b, 16) ||
            !ssk_mat4_invert(inv, skinning + 16 * (size_t)b) || !ssk_floats_finite(inv, 16))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "implicit skinning: the skinning matrix of bone %u is singular "
                                 "or not finite",
                                 b);
        memcpy(im->from_posed + 12 * (size_t)f, inv, 12 * sizeof(float));
    }
    set_columns(im);
    memcpy(im->skin, skinning, 16 * (size_t)im->rig->bone_count * sizeof(float));
    /* each joint's bend: the angle its child's rest axis u turned through
     * relative to its parent since rest, (S_p^-1 S_c) u against u (a twist
     * about the child's axis bends nothing) */
    const ssk_rig *rig = im->rig;
    for (uint32_t n = 0; n < im->node_count; ++n) {
        const int32_t c = im->nodes[n].joint;
        im->node_bend[n] = 0.0f;
        if (c < 0 || rig->bones[c].parent < 0) continue;
        const ssk_bone *bone = &rig->bones[c];
        float u[3], len = 0.0f;
        for (int k = 0; k < 3; ++k) {
            u[k] = bone->tail[k] - bone->head[k];
            len += u[k] * u[k];
        }
        len = sqrtf(len);
        float inv[16], rel[16];
        if (!(len > 0.0f) || !ssk_mat4_invert(inv, skinning + 16 * (size_t)bone->parent)) continue;
        ssk_mat4_mul(rel, inv, skinning + 16 * (size_t)c);
        float w[3], wl = 0.0f, dot = 0.0f;
        for (int r = 0; r < 3; ++r) {
            w[r] = rel[4 * r] * u[0] + rel[4 * r + 1] * u[1] + rel[4 * r + 2] * u[2];
            wl += w[r] * w[r];
            dot += w[r] * u[r];
        }
        wl = sqrtf(wl);
        if (!(wl > 0.0f)) continue;
        float cs = dot / (wl * len);
        cs = cs > 1.0f ? 1.0f : (cs < -1.0f ? -1.0f : cs);
        im->node_bend[n] = acosf(cs);
    }
    return ssk_error_ok(err);
}

/* --- tracking -------------------------------------------------------------- */


/* One Newton projection step of vertex v, step `step` of the frame, from x
 * to nx (3 floats each, may alias), with the contact and convergence
 * checks; fg gets f and grad at x. */
static inline void project_vertex(ssk_implicit *im, uint32_t v, uint32_t step, const float x[3],
                                  float nx[3])
{
    const float x0 = x[0], x1 = x[1], x2 = x[2];
    nx[0] = x0;
    nx[1] = x1;
    nx[2] = x2;
    const uint8_t fl = im->flags[v];
    if (!(fl & V_TRACKED) || (fl & (V_CONTACT | V_DONE))) return;
    float *fg = im->fg + 4 * (size_t)v;
    float g[3];
    const float p[3] = {x0, x1, x2};
    const float f = ssk_implicit_vertex_eval(im, v, p, g);
    const float g2 = g[0] * g[0] + g[1] * g[1] + g[2] * g[2];
    const float e = f - im->iso[v];
    if (step > 0) {
        /* contact: the gradient turned, or the error grew again */
        const float pg2 = fg[1] * fg[1] + fg[2] * fg[2] + fg[3] * fg[3];
        const float dot = g[0] * fg[1] + g[1] * fg[2] + g[2] * fg[3];
        const bool turned = g2 > GRADIENT_EPSILON && pg2 > GRADIENT_EPSILON &&
                            dot < im->cos_contact * sqrtf(g2 * pg2);
        const bool grew = fabsf(e) > im->prev_error[v] + MONOTONICITY_TOLERANCE;
        if (turned || grew) {
            im->flags[v] = fl | V_CONTACT;
            return;
        }
    }
    fg[0] = f;
    memcpy(fg + 1, g, 3 * sizeof(float));
    im->prev_error[v] = fabsf(e);
    if (fabsf(e) < CONVERGED_EPSILON) {
        im->flags[v] = fl | V_DONE;
        return;
    }
    if (!(g2 > GRADIENT_EPSILON)) return;
    float s = -im->params.sigma * e / g2;
    const float len = fabsf(s) * sqrtf(g2);
    if (len > im->max_step[v]) s *= im->max_step[v] / len;
    nx[0] = x0 + s * g[0];
    nx[1] = x1 + s * g[1];
    nx[2] = x2 + s * g[2];
}

/* One Newton projection step (writes next; fg at the step's start). */
void ssk_implicit_project_rows(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    (void)chunk;
    const track_ctx *c = ctx;
    for (int64_t vi = begin; vi < end; ++vi)
        project_vertex(c->im, (uint32_t)vi, c->step, c->x + 3 * (size_t)vi,
                       c->im->next + 3 * (size_t)vi);
}

/* Tangential relaxation (Eq. 4.6-4.7) of vertex v with the positions x
 * (#V by 3) into nx (3 floats, not in x). */
static inline void relax_vertex(const ssk_implicit *im, uint32_t v, const float *xs, float nx[3])
{
    const ssk_implicit_fit *fit = &im->fit;
    const float *x = xs + 3 * (size_t)v;
    memcpy(nx, x, 3 * sizeof(float));
    const uint8_t fl = im->flags[v];
    if (!(fl & V_TRACKED) || (fl & V_CONTACT)) return;
    const uint32_t b = fit->mvc_offsets[v], e = fit->mvc_offsets[v + 1];
    if (b == e) return;
    const float *fg = im->fg + 4 * (size_t)v;
    const float gl = sqrtf(fg[1] * fg[1] + fg[2] * fg[2] + fg[3] * fg[3]);
    if (!(gl > GRADIENT_EPSILON)) return;
    const float n[3] = {fg[1] / gl, fg[2] / gl, fg[3] / gl};
    const float dist = fabsf(fg[0] - im->iso[v]) - 1.0f;
    const float d2 = dist * dist;
    const float mu = fmaxf(0.0f, 1.0f - d2 * d2);
    if (mu <= 0.0f) return;
    float t[3] = {0.0f, 0.0f, 0.0f};
    for (uint32_t k = b; k < e; ++k) {
        const float *q = xs + 3 * (size_t)fit->mvc_neighbors[k];
        const float d[3] = {q[0] - x[0], q[1] - x[1], q[2] - x[2]};
        const float h = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
        const float w = fit->mvc_weights[k];
        for (int a = 0; a < 3; ++a) t[a] += w * (q[a] - h * n[a]);
    }
    for (int a = 0; a < 3; ++a) nx[a] = (1.0f - mu) * x[a] + mu * t[a];
}

/* One sweep of the fused tracking (ssk_implicit_track): per vertex, the
 * relaxation (when `relax`; it reads src, every vertex's positions after
 * the previous sweep), then projection steps first_step .. end_step - 1,
 * into dst; with `residual`, |f - iso| at the result of each tracked
 * vertex not at contact, the largest per chunk in residual[chunk]. */
typedef struct fused_ctx {
    ssk_implicit *im;
    const float *src;
    float *dst;
    uint32_t first_step, end_step;
    bool relax;
    float *residual; /* NULL, or one per chunk */
} fused_ctx;

static void fused_rows(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const fused_ctx *c = ctx;
    ssk_implicit *im = c->im;
    float worst = 0.0f;
    for (int64_t vi = begin; vi < end; ++vi) {
        const uint32_t v = (uint32_t)vi;
        float x[3];
        if (c->relax) {
            relax_vertex(im, v, c->src, x);
            /* a relaxed vertex moved along its iso-surface: the next
             * step's error is not comparable with this one's */
            im->prev_error[v] = INFINITY;
        } else {
            memcpy(x, c->src + 3 * (size_t)v, sizeof x);
        }
        for (uint32_t step = c->first_step; step < c->end_step; ++step)
            project_vertex(im, v, step, x, x);
        if (c->dst != c->src) memcpy(c->dst + 3 * (size_t)v, x, sizeof x);
        if (c->residual) {
            const uint8_t fl = im->flags[v];
            if (!(fl & V_TRACKED) || (fl & V_CONTACT)) continue;
            float g[3];
            const float e = fabsf(ssk_implicit_vertex_eval(im, v, x, g) - im->iso[v]);
            if (e > worst) worst = e;
        }
    }
    if (c->residual) c->residual[chunk] = worst;
}

/* One diffusion step of beta (beta -> beta_next). */
static void diffuse_rows(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    (void)chunk;
    const track_ctx *c = ctx;
    ssk_implicit *im = c->im;
    const ssk_weld *w = &im->rig->weld;
    for (int64_t vi = begin; vi < end; ++vi) {
        const uint32_t v = (uint32_t)vi;
        const uint32_t b = w->adjacency_offsets[v], e = w->adjacency_offsets[v + 1];
        float s = im->beta[v];
        for (uint32_t k = b; k < e; ++k) s += im->beta[w->adjacency[k]];
        im->beta_next[v] = s / (float)(1 + e - b);
    }
}

/* One Laplacian smoothing step of the contact regions (Eq. 4.8). */
static void smooth_rows(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    (void)chunk;
    const track_ctx *c = ctx;
    ssk_implicit *im = c->im;
    const ssk_weld *w = &im->rig->weld;
    for (int64_t vi = begin; vi < end; ++vi) {
        const uint32_t v = (uint32_t)vi;
        const float *x = c->x + 3 * (size_t)v;
        float *nx = im->next + 3 * (size_t)v;
        memcpy(nx, x, 3 * sizeof(float));
        const float beta = im->beta[v];
        const uint32_t b = w->adjacency_offsets[v], e = w->adjacency_offsets[v + 1];
        if (!(beta > 0.0f) || b == e || !(im->flags[v] & V_TRACKED)) continue;
        float m[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t k = b; k < e; ++k)
            for (int a = 0; a < 3; ++a) m[a] += c->x[3 * (size_t)w->adjacency[k] + a];
        const float inv = 1.0f / (float)(e - b);
        for (int a = 0; a < 3; ++a) nx[a] = (1.0f - beta) * x[a] + beta * m[a] * inv;
    }
}

/* The tracked and contact vertex counts of the frame's flags. */
static void count_flags(const ssk_implicit *im, uint32_t *tracked, uint32_t *contacts)
{
    uint32_t t = 0, c = 0;
    for (uint32_t v = 0; v < im->rig->vertex_count; ++v) {
        t += (im->flags[v] & V_TRACKED) != 0;
        c += (im->flags[v] & V_CONTACT) != 0;
    }
    *tracked = t;
    *contacts = c;
}

void ssk_implicit_take_next(ssk_implicit *im, float *x)
{
    memcpy(x, im->next, 3 * (size_t)im->rig->vertex_count * sizeof(float));
}

ssk_status ssk_implicit_track(ssk_implicit *im, float *positions, ssk_implicit_report *report,
                              ssk_error *err)
{
    if (!im || !positions)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_implicit_track: NULL argument");
    const uint32_t nv = im->rig->vertex_count;
    for (uint32_t v = 0; v < nv; ++v) {
        im->flags[v] &= V_TRACKED;
        im->prev_error[v] = INFINITY;
    }
    /* Fused sweeps, the same arithmetic as the passes one by one: a
     * projection step of a vertex reads only that vertex's position, f,
     * grad, error and flags, so the steps between two relaxations (which
     * read the neighbors) run per vertex in one sweep, the relaxation
     * first; positions alternate between `positions` and im->next. */
    fused_ctx fc = {.im = im, .src = positions, .dst = im->next};
    const uint32_t iterations = im->params.iterations;
    const bool smoothable = im->rig->weld.adjacency_offsets != NULL;
    uint32_t contacts = 0, tracked = 0;
    bool counted = false, residual_done = false;
    bool relax = false;
    for (uint32_t first = 0; first < iterations || relax;) {
        /* the projections up to the next odd step, the relaxation that
         * follows an odd step in the next sweep */
        uint32_t end = first;
        if (first < iterations) end = (first | 1u) + 1u < iterations ? (first | 1u) + 1u : iterations;
        fc.relax = relax;
        fc.first_step = first;
        fc.end_step = end;
        fc.residual = NULL;
        if (end == first) {
            /* the last sweep, a relaxation only: the flags are final, and
             * without a smoothing after it the report's residual is at
             * this sweep's result */
            count_flags(im, &tracked, &contacts);
            counted = true;
            if (report && !(contacts && smoothable)) fc.residual = im->residual_chunks;
        }
        ssk_parallel_for(nv, TRACK_GRAIN, fused_rows, &fc);
        residual_done = fc.residual != NULL;
        float *t = (float *)fc.src;
        fc.src = fc.dst;
        fc.dst = t;
        relax = end > first && (end - 1u) % 2u == 1u;
        first = end;
    }
    if (fc.src != positions) memcpy(positions, fc.src, 3 * (size_t)nv * sizeof(float));
    if (!counted) count_flags(im, &tracked, &contacts);
    /* the contact regions' weights, diffused, then the smoothing */
    track_ctx c = {.im = im, .x = positions, .step = iterations};
    if (contacts && smoothable) {
        for (uint32_t v = 0; v < nv; ++v) im->beta[v] = (im->flags[v] & V_CONTACT) ? 1.0f : 0.0f;
        for (uint32_t k = 0; k < im->params.diffusion_iterations; ++k) {
            ssk_parallel_for(nv, TRACK_GRAIN, diffuse_rows, &c);
            float *t = im->beta;
            im->beta = im->beta_next;
            im->beta_next = t;
        }
        for (uint32_t k = 0; k < im->params.smoothing_iterations; ++k) {
            ssk_parallel_for(nv, TRACK_GRAIN, smooth_rows, &c);
            ssk_implicit_take_next(im, positions);
        }
    }
    if (report) {
        if (!residual_done) {
            /* a sweep of no steps: the residual at the final positions */
            fused_ctx rc = {.im = im, .src = positions, .dst = positions,
                            .residual = im->residual_chunks};
            ssk_parallel_for(nv, TRACK_GRAIN, fused_rows, &rc);
        }
        /* the largest of the chunks' (order-free: the same for any thread
         * count) */
        float residual = 0.0f;
        const uint32_t chunks = ssk_parallel_chunk_count(nv, TRACK_GRAIN);
        for (uint32_t k = 0; k < chunks; ++k)
            if (im->residual_chunks[k] > residual) residual = im->residual_chunks[k];
        report->tracked = tracked;
        report->contacts = contacts;
        report->residual = residual;
    }
    return ssk_error_ok(err);
}

ssk_status ssk_implicit_track_frame(ssk_implicit *im, float *positions, double frame,
                                    ssk_implicit_report *report, ssk_error *err)
{
    if (!im || !positions)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_implicit_track_frame: NULL argument");
    if (im->elastic) return ssk_implicit_elastic_track(im, positions, frame, report, err);
    ssk_status st = ssk_implicit_track(im, positions, report, err);
    if (report) report->substeps = 1;
    return st;
}

/* --- views for device backends -------------------------------------------- */

void ssk_implicit_get_view(const ssk_implicit *im, ssk_implicit_view *out)
{
    if (!im || !out) return;
    const uint32_t nv = im->rig->vertex_count;
    *out = (ssk_implicit_view){
        .fit = &im->fit,
        .ops = im->ops,
        .params = &im->params,
        .cos_contact = im->cos_contact,
        .vertex_count = nv,
        .node_count = im->node_count,
        .program_offsets = im->program_offsets,
        .program_entry_count = im->program_offsets[nv],
        .iso = im->iso,
        .max_step = im->max_step,
        .flags = im->flags,
        .from_posed = im->from_posed,
        .node_bend = im->node_bend,
    };
}

void ssk_implicit_pack_programs(const ssk_implicit *im, uint32_t *out)
{
    if (!im || !out) return;
    const uint32_t count = im->program_offsets[im->rig->vertex_count];
    for (uint32_t e = 0; e < count; ++e) {
        const program_entry *pe = &im->programs[e];
        out[e] = (uint32_t)pe->a | (uint32_t)pe->b << SSK_IMPLICIT_PACK_B_SHIFT |
                 (uint32_t)pe->c << SSK_IMPLICIT_PACK_C_SHIFT;
    }
}

void ssk_implicit_node_ops(const ssk_implicit *im, uint32_t *out)
{
    if (!im || !out) return;
    for (uint32_t n = 0; n < im->node_count; ++n) out[n] = im->nodes[n].op;
}
