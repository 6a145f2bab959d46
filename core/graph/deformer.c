/*
 * deformer.c — runs a deformer graph (Toothman 2020, 6.1) for a whole rig
 * on one backend. At creation the graph is compiled into a plan: one
 * kernel call per node, each writing a buffer that stays on the backend,
 * chained to the nodes that read it. Per frame the host prepares per-bone
 * data once (LBS matrices folded with each mesh's object matrices, DQS dual
 * quaternions, CoR bones, attachment bones per attachment node), uploads
 * it, runs the plan and reads back only the output the caller asks for.
 *
 * CoR skinning nodes (Le & Hodgins 2016) read the centers of rotation of
 * the binding; when the binding has none, or when no binding is given and
 * no attachment node needs one, the deformer computes them once at
 * creation (ssk_cor_precompute, default parameters, CPU) and keeps them.
 *
 * A cage node (Corda et al. 2020; graph_cage.c) is no plan step: at
 * creation the deformer binds its rest cage to the rig it is given
 * (ssk_cage_create: the binding's errors, e.g. a joint outside the cage,
 * are the deformer's) and, when the edited cage differs from it, runs
 * every node on the rig the edit describes (ssk_cage_reshape: rest mesh by
 * Eq. 7, joints by Eq. 13) with each frame's skinning matrices carried
 * over to it (ssk_cage_pose, 4.2) and, for CoR nodes, the centers of
 * rotation repositioned by Eq. 14 (ssk_cage_cor_centers: Lambda from the
 * caller's cor_centers, which are then the given rig's, or from
 * ssk_cor_precompute on it). An unedited cage leaves the rig, the matrices
 * and the centers as they are: the same bytes as the graph without it.
 */
#include "backends/backend.h"
#include "bind/binding.h"
#include "bind/implicit_bind.h"
#include "graph/graph.h"
#include "kernels/spring.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plan_step {
    uint32_t node;
    ssk_kernel_call call;
} plan_step;

struct ssk_deformer {
    const ssk_rig *rig;
    ssk_backend backend;          /* resolved, never AUTO */
    const ssk_backend_ops *ops;
    void *state;                  /* the backend's */
    ssk_gl_context *owned_gl;     /* created here when the caller gave none */
    ssk_graph *graph;             /* own copy */
    ssk_binding *owned_binding;   /* bound here when the caller gave none */
    const ssk_binding *binding_handle; /* the binding in use (owned or not) */
    ssk_binding_view binding;     /* valid when has_binding or has_cor */
    bool has_binding;             /* an attachment binding (bones, t, s) */
    bool has_cor;                 /* binding.cor_centers/cor_flags are set */
    float *own_cor_centers;       /* computed here when the binding has none */
    uint8_t *own_cor_flags;
    ssk_cage *cage;               /* the cage node's, when its edit changes the rig */
    ssk_rig *reshaped;            /* the rig that edit describes (then d->rig) */
    float *carried;               /* #B by 16: the frame's matrices carried to it */

    plan_step *steps;
    uint32_t step_count;
    int *node_buffer;             /* per node: its output buffer, or -1 */
    int output_positions;         /* buffer of the output node's positions */
    int output_normals;           /* buffer of its normals, or -1 */
    int scratch_normals;          /* for ssk_deformer_normals, -1 until used */
    ssk_attach_bone **attach;     /* per node: #B bones, NULL if not needed */
    ssk_spring **springs;         /* per node: its solver (spring nodes) */
    ssk_arap **araps;             /* per node: its solver (arap nodes) */
    ssk_implicit **implicits;     /* per node: its tracker (implicit nodes) */
    ssk_implicit_report *implicit_reports; /* per node: the last frame's */
    const ssk_implicit_operators *implicit_operators; /* the caller's or own */
    ssk_implicit_operators *own_implicit_operators;   /* built here when not given */
    ssk_spring_report *reports;   /* per node: the last solve's report */
    float *rest_distances;        /* #V, IRS length adjustment (Fig. 13) */
    float *weight_slots;          /* attachment per skin weight influence
                                     (ssk_attach_weight_slots), all meshes */
    size_t weight_slot_count;
    ssk_attach_bone *rest_attach; /* #B, the identity pose (weight_slots) */
    bool needs_lbs, needs_dqs, needs_cor;

    float *lbs_matrices;          /* #M by #B by 16 */
    float *bind;                  /* #B by 16, gathered once */
    ssk_dual_quat *dual_quats;    /* #B */
    ssk_cor_bone *cor_bones;      /* #B */
    float *pre, *post, *objects;  /* #M by 16 */
    uint8_t *mesh_identity;       /* #M */
    double frame;
    ssk_deform_timing timing;
    bool deformed;
};

/* Picks the backend: GL when asked for (or, for AUTO, when the context's
 * renderer is a hardware GPU), the CPU otherwise. */
static ssk_status resolve_backend(ssk_deformer *d, const ssk_deformer_desc *desc,
                                  ssk_gl_context **out_gl, ssk_error *err)
{
    *out_gl = NULL;
    if (desc->backend == SSK_BACKEND_CPU) {
        d->backend = SSK_BACKEND_CPU;
        return SSK_OK;
    }
    ssk_gl_context *gl = desc->gl_context;
    if (!gl) {
        ssk_error gl_err = {0};
        ssk_status st = ssk_gl_context_create(&d->owned_gl, &gl_err);
        if (st != SSK_OK) {
            if (desc->backend == SSK_BACKEND_GL) {
                if (err) *err = gl_err;
                return st;
            }
            d->backend = SSK_BACKEND_CPU; /* AUTO: fall back with a warning */
            ssk_error_set(err, SSK_OK, "warning: GL backend unavailable, using the CPU: %s",
                          gl_err.message);
            return SSK_OK;
        }
        gl = d->owned_gl;
    }
    if (desc->backend == SSK_BACKEND_AUTO) {
        ssk_gl_info info;
        ssk_gl_context_info(gl, &info, NULL);
        if (!info.hardware) {
            /* software GL is slower than the CPU loop */
            d->backend = SSK_BACKEND_CPU;
            ssk_gl_context_destroy(d->owned_gl);
            d->owned_gl = NULL;
            return SSK_OK;
        }
    }
    d->backend = SSK_BACKEND_GL;
    *out_gl = gl;
    return SSK_OK;
}

/* 1 when a node needs an attachment binding (rigid, IRS, radial, spring). */
static bool graph_needs_attachment(const ssk_graph *g)
{
    for (uint32_t i = 0; i < g->node_count; ++i) {
        const ssk_graph_node *n = &g->nodes[i];
        if (n->type == SSK_NODE_RADIAL || n->type == SSK_NODE_SPRING ||
            n->type == SSK_NODE_ARAP)
            return true;
        if (n->type == SSK_NODE_SKINNING &&
            (n->method == SSK_METHOD_RIGID || n->method == SSK_METHOD_IRS))
            return true;
    }
    return false;
}

/* Uses the caller's binding (checked against the rig) or binds with the
 * default parameters (with CoRs when a node needs them), when the graph
 * needs an attachment binding (a given one is also kept for the implicit
 * nodes' bind data); copies the caller's centers of rotation
 * (desc->cor_centers) or computes them here when a CoR node needs them and
 * the binding has none. */
static ssk_status resolve_binding(ssk_deformer *d, const ssk_deformer_desc *desc,
                                  ssk_error *err)
{
    const bool attach = graph_needs_attachment(d->graph);
    const bool cor = ssk_graph_needs_cor(d->graph) != 0;
    /* an implicit node takes the binding's implicit data when it has them
     * (make_implicit), so a given binding is checked for it too */
    const bool implicit = ssk_graph_needs_implicit(d->graph) != 0 && desc->binding;
    if (!attach && !cor && !implicit) return SSK_OK;
    const ssk_binding *binding = desc->binding;
    if (!desc->cor_centers != !desc->cor_flags)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_desc: cor_centers and cor_flags go together (one is "
                             "NULL)");
    const bool given_cor = cor && desc->cor_centers;
    if (!binding && attach) {
        ssk_bind_params params;
        ssk_bind_params_default(&params);
        params.compute_cor = cor && !given_cor;
        ssk_status st = ssk_binding_create(&d->owned_binding, d->rig, &params, err);
        if (st != SSK_OK) return st;
        binding = d->owned_binding;
    }
    memset(&d->binding, 0, sizeof d->binding);
    d->binding.vertex_count = d->rig->vertex_count;
    d->binding.bone_count = d->rig->bone_count;
    if (binding) {
        d->binding_handle = binding;
        ssk_status st = ssk_binding_get(binding, &d->binding, err);
        if (st != SSK_OK) return st;
        if (d->binding.rig_hash != ssk_rig_hash(d->rig) ||
            d->binding.vertex_count != d->rig->vertex_count)
            return ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                                 "the binding was made for another rig (hash or vertex count "
                                 "differs); bind this rig again");
        d->has_binding = attach;
    }
    if (!attach) {
        /* a CoR-only graph: the backends get no attachment data */
        d->binding.bones = NULL;
        d->binding.t = NULL;
        d->binding.scale_vectors = NULL;
    }
    if (!cor) {
        d->binding.cor_centers = NULL;
        d->binding.cor_flags = NULL;
        return SSK_OK;
    }
    if (given_cor || !d->binding.cor_centers || !d->binding.cor_flags) {
        const size_t nv = d->rig->vertex_count ? d->rig->vertex_count : 1;
        d->own_cor_centers = malloc(3 * nv * sizeof(float));
        d->own_cor_flags = malloc(nv);
        if (!d->own_cor_centers || !d->own_cor_flags)
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    if (given_cor) {
        /* the caller's centers (an incremental update), copied */
        const uint32_t nv = d->rig->vertex_count;
        for (uint32_t v = 0; v < nv; ++v) {
            const float *c = desc->cor_centers + 3 * (size_t)v;
            const uint8_t flag = desc->cor_flags[v] ? 1 : 0;
            if (flag && !(isfinite(c[0]) && isfinite(c[1]) && isfinite(c[2])))
                return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                     "ssk_deformer_desc: cor_centers row %u is not finite", v);
            memcpy(d->own_cor_centers + 3 * (size_t)v, c, 3 * sizeof(float));
            d->own_cor_flags[v] = flag;
        }
        d->binding.cor_centers = d->own_cor_centers;
        d->binding.cor_flags = d->own_cor_flags;
    } else if (!d->binding.cor_centers || !d->binding.cor_flags) {
        ssk_cor_params params;
        ssk_cor_params_default(&params);
        ssk_status st = ssk_cor_precompute(d->own_cor_centers, d->own_cor_flags, d->rig, &params,
                                           SSK_BACKEND_CPU, NULL, NULL, err);
        if (st != SSK_OK) return st;
        d->binding.cor_centers = d->own_cor_centers;
        d->binding.cor_flags = d->own_cor_flags;
    }
    d->has_cor = true;
    return SSK_OK;
}

static ssk_kernel skinning_kernel(ssk_method method)
{
    switch (method) {
    case SSK_METHOD_DQS: return SSK_KERNEL_DQS;
    case SSK_METHOD_RIGID: return SSK_KERNEL_RIGID;
    case SSK_METHOD_IRS: return SSK_KERNEL_IRS;
    case SSK_METHOD_COR: return SSK_KERNEL_COR;
    default: return SSK_KERNEL_LBS;
    }
}

/* Each vertex's rest distance to the skeleton near its bone, the target of
 * IRS's length adjustment; computed once. */
static ssk_status rest_distances(ssk_deformer *d, ssk_error *err)
{
    if (d->rest_distances) return SSK_OK;
    const uint32_t nb = d->rig->bone_count;
    float *identity = malloc(((size_t)nb * 16 + 1) * sizeof(float));
    ssk_attach_bone *rest = malloc(((size_t)nb + 1) * sizeof(ssk_attach_bone));
    d->rest_distances = malloc(((size_t)d->rig->vertex_count + 1) * sizeof(float));
    ssk_status st = SSK_OK;
    if (!identity || !rest || !d->rest_distances) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    } else {
        for (uint32_t b = 0; b < nb; ++b) ssk_mat4_identity(identity + 16 * (size_t)b);
        st = ssk_attach_prepare(rest, d->rig, identity, NULL, err);
        if (st == SSK_OK)
            ssk_irs_rest_distances(d->rest_distances, d->binding.vertex_count, d->binding.bones,
                                   d->binding.t, d->binding.scale_vectors, rest);
    }
    free(identity);
    free(rest);
    return st;
}

/* Slot records of the attachment per skin weight influence
 * (ssk_attach_weight_slots) of every mesh, concatenated; computed once. */
static ssk_status weight_slots(ssk_deformer *d, ssk_error *err)
{
    if (d->weight_slots) return SSK_OK;
    const ssk_rig *rig = d->rig;
    const uint32_t nb = rig->bone_count;
    size_t count = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const uint32_t k = rig->meshes[m].influence_count;
        count += (size_t)rig->meshes[m].vertex_count * (k ? k : 1);
    }
    float *identity = malloc(((size_t)nb * 16 + 1) * sizeof(float));
    ssk_attach_bone *rest = malloc(((size_t)nb + 1) * sizeof(ssk_attach_bone));
    float *slots = malloc((SSK_ATTACH_SLOT_FLOATS * count + 1) * sizeof(float));
    ssk_status st = SSK_OK;
    if (!identity || !rest || !slots) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    } else {
        for (uint32_t b = 0; b < nb; ++b) ssk_mat4_identity(identity + 16 * (size_t)b);
        st = ssk_attach_prepare(rest, rig, identity, NULL, err);
        size_t slot = 0;
        for (uint32_t m = 0; st == SSK_OK && m < rig->mesh_count; ++m) {
            const ssk_mesh *mesh = &rig->meshes[m];
            const size_t v0 = mesh->first_vertex;
            ssk_attach_weight_slots(slots + SSK_ATTACH_SLOT_FLOATS * slot, mesh->positions,
                                    mesh->vertex_count, mesh->bone_indices, mesh->weights,
                                    mesh->influence_count, mesh->object_matrix,
                                    d->binding.bones + v0, d->binding.t + v0,
                                    d->binding.scale_vectors + 3 * v0, rest);
            const uint32_t k = mesh->influence_count;
            slot += (size_t)mesh->vertex_count * (k ? k : 1);
        }
    }
    free(identity);
    if (st == SSK_OK) {
        d->weight_slots = slots;
        d->weight_slot_count = count;
        d->rest_attach = rest;
    } else {
        free(slots);
        free(rest);
    }
    return st;
}

static ssk_status plan_steps(ssk_deformer *d, size_t nb, const uint32_t *last_read,
                             int *free_buffers, uint32_t *free_count, ssk_error *err);

/* An implicit node's tracker (Vaillant 2015, 4.4-4.6): the rig's fields
 * copied from the binding when it holds a fit this build would make
 * (ssk_binding_implicit_fit: the default fit parameters, the same fit
 * version; the binding's rig hash was checked by resolve_binding), else
 * fitted at rest; the two composition operators built; then the tracker
 * that takes them. */
static ssk_status make_implicit(ssk_deformer *d, ssk_implicit **out,
                                const ssk_implicit_params *params, ssk_error *err)
{
    if (!d->implicit_operators) {
        ssk_status st = ssk_implicit_operators_create(&d->own_implicit_operators, 0, err);
        if (st != SSK_OK) return st;
        d->implicit_operators = d->own_implicit_operators;
    }
    ssk_implicit_fit fit = {0};
    const ssk_implicit_fit *stored = ssk_binding_implicit_fit(d->binding_handle, NULL);
    ssk_status st = stored ? ssk_implicit_fit_copy(&fit, stored, d->rig->vertex_count,
                                                   d->rig->bone_count, err)
                           : ssk_implicit_fit_create(&fit, d->rig, NULL, err);
    if (st != SSK_OK) return st;
    return ssk_implicit_create(out, d->rig, &fit, d->implicit_operators, params, err);
}

/* A node whose output buffer may be handed to a later node once every
 * reader has run: the stateless kernels (implicit tracking is history
 * independent). Spring and ARAP nodes keep theirs
 * (frame-dependent springs continue from their previous output). */
static bool buffer_reusable(const ssk_graph_node *node)
{
    return node->type == SSK_NODE_SKINNING || node->type == SSK_NODE_RADIAL ||
           node->type == SSK_NODE_NORMALS || node->type == SSK_NODE_IMPLICIT;
}

/* One kernel call per node in topological order, each writing a buffer on
 * the backend. A buffer is given back once its last reader has run and
 * taken by the next node that needs one (issue #19: a chain of N nodes
 * holds 2 #V buffers, not N). */
static ssk_status build_plan(ssk_deformer *d, ssk_error *err)
{
    const ssk_graph *g = d->graph;
    const size_t nb = (size_t)d->rig->bone_count + 1;
    /* last_read[n]: the order index of the last node reading node n */
    uint32_t *last_read = calloc(g->node_count + 1, sizeof *last_read);
    int *free_buffers = malloc((g->node_count + 1) * sizeof *free_buffers);
    uint32_t free_count = 0;
    if (!last_read || !free_buffers) {
        free(last_read);
        free(free_buffers);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t k = 0; k < g->node_count; ++k) {
        const ssk_graph_node *node = &g->nodes[g->order[k]];
        if (node->input_positions >= 0) last_read[node->input_positions] = k;
        if (node->input_normals >= 0) last_read[node->input_normals] = k;
    }
    ssk_status st = plan_steps(d, nb, last_read, free_buffers, &free_count, err);
    free(last_read);
    free(free_buffers);
    return st;
}

static ssk_status plan_steps(ssk_deformer *d, size_t nb, const uint32_t *last_read,
                             int *free_buffers, uint32_t *free_count, ssk_error *err)
{
    const ssk_graph *g = d->graph;
    d->steps = calloc(g->node_count + 1, sizeof *d->steps);
    d->node_buffer = malloc((g->node_count + 1) * sizeof *d->node_buffer);
    d->attach = calloc(g->node_count + 1, sizeof *d->attach);
    d->springs = calloc(g->node_count + 1, sizeof *d->springs);
    d->araps = calloc(g->node_count + 1, sizeof *d->araps);
    d->implicits = calloc(g->node_count + 1, sizeof *d->implicits);
    d->implicit_reports = calloc(g->node_count + 1, sizeof *d->implicit_reports);
    d->reports = calloc(g->node_count + 1, sizeof *d->reports);
    if (!d->steps || !d->node_buffer || !d->attach || !d->springs || !d->araps ||
        !d->implicits || !d->implicit_reports || !d->reports)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < g->node_count; ++i) d->node_buffer[i] = -1;
    for (uint32_t k = 0; k < g->node_count; ++k) {
        const uint32_t n = g->order[k];
        const ssk_graph_node *node = &g->nodes[n];
        if (node->type == SSK_NODE_OUTPUT) {
            d->output_positions = d->node_buffer[node->input_positions];
            d->output_normals =
                node->input_normals >= 0 ? d->node_buffer[node->input_normals] : -1;
            continue;
        }
        if (node->type == SSK_NODE_CAGE) continue; /* applied at creation (apply_cage) */
        ssk_kernel_call call = {0};
        call.input = -1;
        switch (node->type) {
        case SSK_NODE_SKINNING:
            call.kernel = skinning_kernel(node->method);
            call.length_adjust = node->length_adjust;
            d->needs_lbs |= call.kernel == SSK_KERNEL_LBS;
            d->needs_dqs |= call.kernel == SSK_KERNEL_DQS;
            d->needs_cor |= call.kernel == SSK_KERNEL_COR;
            break;
        case SSK_NODE_RADIAL:
            call.kernel = SSK_KERNEL_RADIAL;
            call.input = d->node_buffer[node->input_positions];
            call.bone_mask = node->bone_mask;
            call.profile = node->profile;
            break;
        case SSK_NODE_NORMALS:
            call.kernel = SSK_KERNEL_NORMALS;
            call.input = d->node_buffer[node->input_positions];
            break;
        case SSK_NODE_SPRING: {
            call.kernel = SSK_KERNEL_SPRING;
            call.input = d->node_buffer[node->input_positions];
            const ssk_spring_edit *edits = NULL;
            ssk_spring_edit *list = NULL;
            if (node->edit_count) {
                list = malloc(node->edit_count * sizeof *list);
                if (!list) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
                for (uint32_t e = 0; e < node->edit_count; ++e) list[e] = node->edits[e].edit;
                edits = list;
            }
            /* ssk_spring_create resolves the "auto" solver (the same on
             * both backends; surface edits pick the per-bone levels) */
            ssk_status st = ssk_spring_create(&d->springs[n], d->rig, d->binding_handle,
                                              &node->spring, edits, node->edit_count, err);
            free(list);
            if (st != SSK_OK) {
                char message[SSK_ERROR_MESSAGE_SIZE];
                snprintf(message, sizeof message, "%s", err ? err->message : "");
                return ssk_error_set(err, st, "spring node '%s': %s", node->id, message);
            }
            call.spring = d->springs[n];
            call.report = &d->reports[n];
            break;
        }
        case SSK_NODE_ARAP: {
            call.kernel = SSK_KERNEL_ARAP;
            ssk_status st = ssk_arap_create(&d->araps[n], d->rig, d->binding_handle, &node->arap,
                                            err);
            if (st != SSK_OK) {
                char message[SSK_ERROR_MESSAGE_SIZE];
                snprintf(message, sizeof message, "%s", err ? err->message : "");
                return ssk_error_set(err, st, "arap node '%s': %s", node->id, message);
            }
            call.arap = d->araps[n];
            break;
        }
        case SSK_NODE_IMPLICIT: {
            call.kernel = SSK_KERNEL_IMPLICIT;
            call.input = d->node_buffer[node->input_positions];
            ssk_status st = make_implicit(d, &d->implicits[n], &node->implicit, err);
            if (st != SSK_OK) {
                char message[SSK_ERROR_MESSAGE_SIZE];
                snprintf(message, sizeof message, "%s", err ? err->message : "");
                return ssk_error_set(err, st, "implicit node '%s': %s", node->id, message);
            }
            call.implicit = d->implicits[n];
            call.implicit_report = &d->implicit_reports[n];
            break;
        }
        default:
            return ssk_error_set(err, SSK_ERROR_GRAPH, "node '%s': unknown type", node->id);
        }
        if (call.kernel == SSK_KERNEL_RIGID || call.kernel == SSK_KERNEL_IRS ||
            call.kernel == SSK_KERNEL_RADIAL || call.kernel == SSK_KERNEL_SPRING ||
            call.kernel == SSK_KERNEL_ARAP) {
            if (!(d->attach[n] = malloc(nb * sizeof(ssk_attach_bone))))
                return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
            call.attach_bones = d->attach[n];
        }
        const bool per_weight = node->type == SSK_NODE_SKINNING &&
                                (call.kernel == SSK_KERNEL_RIGID || call.kernel == SSK_KERNEL_IRS) &&
                                node->attachment == SSK_ATTACHMENT_WEIGHTS;
        if (per_weight) {
            ssk_status st = weight_slots(d, err);
            if (st != SSK_OK) return st;
            call.weight_slots = d->weight_slots;
            call.weight_slot_count = d->weight_slot_count;
            call.rest_bones = d->rest_attach;
        } else if (call.kernel == SSK_KERNEL_IRS && call.length_adjust) {
            ssk_status st = rest_distances(d, err);
            if (st != SSK_OK) return st;
            call.rest_distances = d->rest_distances;
        }
        if (*free_count > 0) {
            call.output = free_buffers[--*free_count];
        } else {
            ssk_status st = d->ops->buffer_create(d->state, &call.output, err);
            if (st != SSK_OK) return st;
        }
        d->node_buffer[n] = call.output;
        d->steps[d->step_count].node = n;
        d->steps[d->step_count++].call = call;
        /* inputs read for the last time: their buffers go back (after this
         * node's output was taken, so a node never writes its input) */
        const int32_t inputs[2] = {node->input_positions, node->input_normals};
        for (int i = 0; i < 2; ++i) {
            const int32_t src = inputs[i];
            if (src < 0 || last_read[src] != k || !buffer_reusable(&g->nodes[src])) continue;
            if (i == 1 && src == node->input_positions) continue; /* given back once */
            free_buffers[(*free_count)++] = d->node_buffer[src];
        }
    }
    return SSK_OK;
}

/* The graph's cage node (Corda et al. 2020): binds its rest cage to the
 * given rig (errors named after the node); when its edit changes the
 * cage, d->cage, d->reshaped (the rig the edit describes) and d->carried,
 * and for a CoR graph Eq. 14's centers in *centers, *flags (malloc'ed,
 * the caller's) set as local's cor_centers, cor_flags. */
static ssk_status apply_cage(ssk_deformer *d, const ssk_rig *rig, const ssk_deformer_desc *desc,
                             ssk_deformer_desc *local, float **centers, uint8_t **flags,
                             ssk_error *err)
{
    const ssk_graph_node *node = desc->graph ? ssk_graph_cage_node(desc->graph) : NULL;
    if (!node) return SSK_OK;
    const ssk_cage_mesh mesh = {.vertex_count = node->cage_vertex_count,
                                .triangle_count = node->cage_triangle_count,
                                .vertices = node->cage_rest,
                                .triangles = node->cage_triangles};
    ssk_status st = ssk_cage_create(&d->cage, rig, &mesh, err);
    if (st == SSK_OK && ssk_cage_is_rest(d->cage, node->cage_edited)) {
        ssk_cage_destroy(d->cage); /* bound (checked); the rig stays as it is */
        d->cage = NULL;
        return SSK_OK;
    }
    if (st == SSK_OK) st = ssk_cage_reshape(&d->reshaped, d->cage, node->cage_edited, err);
    if (st == SSK_OK && !(d->carried = malloc((16 * (size_t)rig->bone_count + 1) * sizeof(float))))
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    if (st == SSK_OK && ssk_graph_needs_cor(desc->graph)) {
        if (!desc->cor_centers != !desc->cor_flags)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "ssk_deformer_desc: cor_centers and cor_flags go together (one "
                                 "is NULL)");
        *centers = malloc((3 * (size_t)rig->vertex_count + 1) * sizeof **centers);
        *flags = malloc((size_t)rig->vertex_count + 1);
        if (!*centers || !*flags)
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        if (desc->cor_centers)
            st = ssk_cage_bind_cor(d->cage, desc->cor_centers, desc->cor_flags, err);
        if (st == SSK_OK) st = ssk_cage_cor_centers(*centers, *flags, d->cage, err);
        local->cor_centers = *centers;
        local->cor_flags = *flags;
    }
    if (st != SSK_OK && st != SSK_ERROR_OUT_OF_MEMORY && err) {
        char message[SSK_ERROR_MESSAGE_SIZE];
        snprintf(message, sizeof message, "%s", err->message);
        ssk_error_set(err, st, "cage node '%s': %s", node->id, message);
    }
    return st;
}

ssk_status ssk_deformer_create(ssk_deformer **out, const ssk_rig *rig,
                               const ssk_deformer_desc *desc, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !rig || !desc)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_create: NULL argument");
    if (!desc->graph && (unsigned)desc->method >= SSK_METHOD_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "method %d out of range",
                             (int)desc->method);
    if ((unsigned)desc->backend >= SSK_BACKEND_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "backend %d out of range",
                             (int)desc->backend);
    if (desc->graph && desc->graph->bone_count != rig->bone_count)
        return ssk_error_set(err, SSK_ERROR_GRAPH,
                             "the graph was validated against a rig of %u bones, this rig has %u",
                             desc->graph->bone_count, rig->bone_count);
    ssk_deformer *d = calloc(1, sizeof *d);
    if (!d) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    /* a cage node: the rig its edit describes, and Eq. 14's centers */
    ssk_deformer_desc local = *desc;
    float *cage_centers = NULL;
    uint8_t *cage_flags = NULL;
    ssk_status cst = apply_cage(d, rig, desc, &local, &cage_centers, &cage_flags, err);
    if (cst != SSK_OK) {
        free(cage_centers);
        free(cage_flags);
        ssk_deformer_destroy(d);
        return cst;
    }
    desc = &local;
    if (d->reshaped) rig = d->reshaped;
    d->rig = rig;
    d->output_positions = d->output_normals = d->scratch_normals = -1;
    const size_t nb = (size_t)rig->bone_count + 1, nm = rig->mesh_count;
    d->lbs_matrices = malloc(nm * nb * 16 * sizeof(float));
    d->bind = malloc(nb * 16 * sizeof(float));
    d->dual_quats = malloc(nb * sizeof(ssk_dual_quat));
    d->cor_bones = malloc(nb * sizeof(ssk_cor_bone));
    d->pre = malloc(nm * 16 * sizeof(float));
    d->post = malloc(nm * 16 * sizeof(float));
    d->objects = malloc(nm * 16 * sizeof(float));
    d->mesh_identity = malloc(nm);
    if (!d->lbs_matrices || !d->bind || !d->dual_quats || !d->cor_bones || !d->pre || !d->post ||
        !d->objects || !d->mesh_identity) {
        ssk_deformer_destroy(d);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t b = 0; b < rig->bone_count; ++b)
        memcpy(d->bind + 16 * (size_t)b, rig->bones[b].bind_matrix, 16 * sizeof(float));
    ssk_status st = desc->graph ? ssk_graph_copy(&d->graph, desc->graph, err)
                                : ssk_graph_from_method(&d->graph, desc->method, rig, err);
    d->implicit_operators = desc->implicit_operators;
    if (st == SSK_OK) st = resolve_binding(d, desc, err);
    free(cage_centers);
    free(cage_flags);
    if (st != SSK_OK) {
        ssk_deformer_destroy(d);
        return st;
    }
    ssk_error_ok(err);
    ssk_gl_context *gl = NULL;
    st = resolve_backend(d, desc, &gl, err);
    if (st == SSK_OK) {
        ssk_error warning = {0};
        if (err) warning = *err; /* keep an AUTO fallback warning */
        d->ops = d->backend == SSK_BACKEND_GL ? &ssk_gl_backend : &ssk_cpu_backend;
        st = d->ops->create(&d->state, rig, d->has_binding || d->has_cor ? &d->binding : NULL,
                            gl, err);
        if (st == SSK_OK) st = build_plan(d, err);
        if (st == SSK_OK && err) *err = warning;
    }
    if (st != SSK_OK) {
        ssk_deformer_destroy(d);
        return st;
    }
    *out = d;
    return SSK_OK;
}

void ssk_deformer_destroy(ssk_deformer *d)
{
    if (!d) return;
    if (d->ops && d->state) d->ops->destroy(d->state);
    ssk_gl_context_destroy(d->owned_gl);
    if (d->attach && d->graph)
        for (uint32_t i = 0; i < d->graph->node_count; ++i) free(d->attach[i]);
    if (d->springs && d->graph)
        for (uint32_t i = 0; i < d->graph->node_count; ++i) ssk_spring_destroy(d->springs[i]);
    if (d->araps && d->graph)
        for (uint32_t i = 0; i < d->graph->node_count; ++i) ssk_arap_destroy(d->araps[i]);
    free(d->araps);
    if (d->implicits && d->graph)
        for (uint32_t i = 0; i < d->graph->node_count; ++i) ssk_implicit_destroy(d->implicits[i]);
    free(d->implicits);
    free(d->implicit_reports);
    ssk_implicit_operators_destroy(d->own_implicit_operators);
    free(d->attach);
    free(d->springs);
    free(d->reports);
    free(d->rest_distances);
    free(d->weight_slots);
    free(d->rest_attach);
    free(d->steps);
    free(d->node_buffer);
    ssk_graph_destroy(d->graph);
    ssk_binding_destroy(d->owned_binding);
    ssk_cage_destroy(d->cage);
    ssk_rig_destroy(d->reshaped);
    free(d->carried);
    free(d->lbs_matrices);
    free(d->bind);
    free(d->dual_quats);
    free(d->cor_bones);
    free(d->own_cor_centers);
    free(d->own_cor_flags);
    free(d->pre);
    free(d->post);
    free(d->objects);
    free(d->mesh_identity);
    free(d);
}

ssk_backend ssk_deformer_backend(const ssk_deformer *d) { return d->backend; }

const ssk_rig *ssk_deformer_rig_internal(const ssk_deformer *d) { return d->rig; }

const ssk_graph *ssk_deformer_graph_internal(const ssk_deformer *d) { return d->graph; }

const ssk_binding *ssk_deformer_given_binding_internal(const ssk_deformer *d)
{
    return d->owned_binding ? NULL : d->binding_handle;
}

const char *ssk_deformer_device_name(const ssk_deformer *d)
{
    return d->ops->device_name(d->state);
}

void ssk_deformer_timing(const ssk_deformer *d, ssk_deform_timing *out) { *out = d->timing; }

void ssk_deformer_set_frame(ssk_deformer *d, double frame) { d->frame = frame; }

void ssk_deformer_spring_report(const ssk_deformer *d, ssk_spring_report *out)
{
    memset(out, 0, sizeof *out);
    bool any = false;
    out->converged = 1;
    for (uint32_t i = 0; i < d->step_count; ++i) {
        if (d->steps[i].call.kernel != SSK_KERNEL_SPRING) continue;
        const ssk_spring_report *r = &d->reports[d->steps[i].node];
        any = true;
        out->iterations += r->iterations;
        if (r->residual > out->residual) out->residual = r->residual;
        out->energy += r->energy;
        out->converged &= r->converged;
    }
    if (!any) out->converged = 0;
}

ssk_status ssk_deformer_spring_unsettled(const ssk_deformer *d, float *dst, uint32_t count,
                                        ssk_error *err)
{
    if (!d || !dst)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_spring_unsettled: NULL argument");
    if (count != d->rig->vertex_count)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_spring_unsettled: %u values for a rig of %u vertices",
                             count, d->rig->vertex_count);
    memset(dst, 0, (size_t)count * sizeof(float));
    for (uint32_t i = 0; i < d->step_count; ++i) {
        if (d->steps[i].call.kernel != SSK_KERNEL_SPRING) continue;
        if (d->backend != SSK_BACKEND_CPU)
            return ssk_error_set(err, SSK_ERROR_UNSUPPORTED,
                                 "the springs' per-vertex settling is kept by the CPU backend "
                                 "only (the GL iterates stay on the device)");
        const ssk_spring *sp = d->steps[i].call.spring;
        if (sp) ssk_spring_unsettled(sp, &d->reports[d->steps[i].node], dst);
    }
    return ssk_error_ok(err);
}

/* Host-side per-frame data: per mesh pre/post/object matrices, and what
 * the plan's kernels read. */
static ssk_status prepare_frame(ssk_deformer *d, const float *skinning,
                                const float *object_matrices, ssk_error *err)
{
    const ssk_rig *rig = d->rig;
    const uint32_t nb = rig->bone_count;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const float *frame_object = object_matrices ? object_matrices + 16 * (size_t)m
                                                    : mesh->object_matrix;
        float *pre = d->pre + 16 * (size_t)m, *post = d->post + 16 * (size_t)m;
        if (!ssk_mat4_invert(post, frame_object))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "object matrix of mesh '%s' is singular", mesh->name);
        memcpy(pre, mesh->object_matrix, 16 * sizeof(float));
        memcpy(d->objects + 16 * (size_t)m, frame_object, 16 * sizeof(float));
        d->mesh_identity[m] = ssk_mat4_is_identity(pre) && ssk_mat4_is_identity(frame_object);
        if (!d->needs_lbs) continue;
        /* v' = post · S_b · pre · v folded into one matrix per bone. */
        float *mats = d->lbs_matrices + (size_t)m * nb * 16;
        for (uint32_t b = 0; b < nb; ++b) {
            float *dm = mats + 16 * (size_t)b;
            const float *s = skinning + 16 * (size_t)b;
            if (d->mesh_identity[m]) {
                memcpy(dm, s, 16 * sizeof(float));
            } else {
                ssk_mat4_mul(dm, s, pre);
                ssk_mat4_mul(dm, post, dm);
            }
        }
    }
    if (d->needs_dqs && nb) {
        ssk_status st = ssk_dqs_prepare(d->dual_quats, skinning, d->bind, nb, err);
        if (st != SSK_OK) return st;
    }
    if (d->needs_cor && nb) {
        ssk_status st = ssk_cor_prepare(d->cor_bones, skinning, d->bind, nb, err);
        if (st != SSK_OK) return st;
    }
    for (uint32_t i = 0; i < d->step_count; ++i) {
        plan_step *step = &d->steps[i];
        const ssk_graph_node *node = &d->graph->nodes[step->node];
        if (step->call.attach_bones) {
            ssk_status st = ssk_attach_prepare(d->attach[step->node], rig, skinning,
                                               node->joint_influences, err);
            if (st != SSK_OK) return st;
        }
        if (step->call.kernel == SSK_KERNEL_RADIAL)
            step->call.amount = ssk_graph_node_amount(node, d->frame);
        if (step->call.kernel == SSK_KERNEL_IMPLICIT) {
            step->call.skinning = skinning;
            step->call.frame = d->frame;
        }
        if (step->call.kernel == SSK_KERNEL_SPRING) {
            step->call.skinning = skinning;
            step->call.frame = d->frame;
        }
    }
    return SSK_OK;
}

ssk_status ssk_deformer_deform(ssk_deformer *d, float *dst_positions,
                               const float *skinning_matrices, const float *object_matrices,
                               ssk_error *err)
{
    if (!d || (!skinning_matrices && d->rig->bone_count))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_deform: NULL argument");
    const ssk_rig *rig = d->rig;
    ssk_status st = ssk_matrices_validate(skinning_matrices, rig->bone_count, "skinning matrices",
                                          err);
    if (st != SSK_OK) return st;
    if (object_matrices) {
        st = ssk_matrices_validate(object_matrices, rig->mesh_count, "object matrices", err);
        if (st != SSK_OK) return st;
    }
    if (d->cage) {
        /* a cage node's edit: the matrices carried over to the reshaped rig */
        st = ssk_cage_pose(d->carried, d->cage, skinning_matrices, err);
        if (st != SSK_OK) return st;
        skinning_matrices = d->carried;
    }
    const double t0 = ssk_time_seconds();
    st = prepare_frame(d, skinning_matrices, object_matrices, err);
    if (st != SSK_OK) return st;
    const ssk_frame_data frame = {.lbs_matrices = d->needs_lbs ? d->lbs_matrices : NULL,
                                  .dual_quats = d->needs_dqs ? d->dual_quats : NULL,
                                  .cor_bones = d->needs_cor ? d->cor_bones : NULL,
                                  .pre = d->pre,
                                  .post = d->post,
                                  .objects = d->objects,
                                  .mesh_identity = d->mesh_identity};
    st = d->ops->frame_upload(d->state, &frame, err);
    if (st != SSK_OK) return st;
    const double t1 = ssk_time_seconds();
    /* A backend that can write straight into caller memory does so for
     * the output (no readback copy). */
    const bool aliased = dst_positions && d->ops->alias &&
                         d->ops->alias(d->state, d->output_positions, dst_positions);
    if (!aliased && d->ops->alias) d->ops->alias(d->state, d->output_positions, NULL);
    /* A diverged spring keeps its last good iterate: run on, report at the
     * end. */
    ssk_error diverged = {0};
    for (uint32_t i = 0; i < d->step_count; ++i) {
        /* the GPU runs the steps back to back; the last one finishes, so
         * compute_seconds holds them all */
        d->steps[i].call.defer_finish = i + 1 < d->step_count;
        st = d->ops->run(d->state, &d->steps[i].call, err);
        if (st == SSK_ERROR_SPRING_DIVERGED && err) diverged = *err;
        if (st == SSK_ERROR_SPRING_DIVERGED) diverged.status = st;
        else if (st != SSK_OK) return st;
    }
    const double t2 = ssk_time_seconds();
    if (dst_positions && !aliased) {
        st = d->ops->read(d->state, d->output_positions, dst_positions, err);
        if (st != SSK_OK) return st;
    }
    if (diverged.status != SSK_OK) {
        d->deformed = true;
        if (err) *err = diverged;
        return SSK_ERROR_SPRING_DIVERGED;
    }
    const double t3 = ssk_time_seconds();
    d->timing.upload_seconds = t1 - t0;
    d->timing.compute_seconds = t2 - t1;
    d->timing.readback_seconds = t3 - t2;
    d->deformed = true;
    return ssk_error_ok(err);
}

ssk_status ssk_deformer_normals(ssk_deformer *d, float *dst_normals, ssk_error *err)
{
    if (!d || !dst_normals)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_deformer_normals: NULL argument");
    if (!d->deformed)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_normals: no ssk_deformer_deform yet");
    if (d->output_normals >= 0) return d->ops->read(d->state, d->output_normals, dst_normals, err);
    if (d->scratch_normals < 0) {
        ssk_status st = d->ops->buffer_create(d->state, &d->scratch_normals, err);
        if (st != SSK_OK) return st;
    }
    ssk_kernel_call call = {0};
    call.kernel = SSK_KERNEL_NORMALS;
    call.input = d->output_positions;
    call.output = d->scratch_normals;
    ssk_status st = d->ops->run(d->state, &call, err);
    if (st != SSK_OK) return st;
    return d->ops->read(d->state, d->scratch_normals, dst_normals, err);
}

ssk_status ssk_deformer_max_displacement(ssk_deformer *d, float *out_max, const float *reference,
                                         ssk_error *err)
{
    if (!d || !out_max || !reference)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_max_displacement: NULL argument");
    if (!d->deformed)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_deformer_max_displacement: no ssk_deformer_deform yet");
    return d->ops->max_displacement(d->state, d->output_positions, reference, out_max, err);
}
