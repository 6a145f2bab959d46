/*
 * graph.c — the deformer graph document (Toothman 2020, 6.1): allocation,
 * parsing (json-c) with validation against a rig, canonical serialization
 * and copies. The spring node's fields are in graph_spring.c, key lists
 * and the keyed radial amount in graph_keys.c. The format is documented in
 * docs/deformer-graph.md; deformer.c runs the parsed graph.
 *
 * Toothman 2020, 6.1: "each node represents a deformation operation, and
 * the directed edges between them represent the execution order and
 * input/output mappings". Here a node has named inputs ("positions",
 * "normals") and one output whose kind follows from its type (skinning,
 * radial and spring nodes output positions, normals nodes output normals,
 * the output node outputs nothing); an edge connects a node's output to one
 * input of another node. Every node but a spring node in "frame_dependent"
 * mode is frame-independent: its result depends on the current pose (and,
 * for keyed radial amounts and surface-edit weights, the current frame
 * number), never on a previous frame's output (6.1).
 *
 * Spring nodes (Toothman 2020, 4.2, 5.2) carry the parameters of
 * ssk_spring_create: the document is checked for types and value ranges
 * (graph_spring.c), the stability of the explicit update is checked by
 * ssk_spring_create when a deformer is made (it depends on the mesh).
 */
#include "graph/graph.h"

#include <json-c/json.h>

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>

/* The document version this parser reads and ssk_graph_to_json writes. */
#define GRAPH_FORMAT_VERSION 1
/* Defaults of the optional node fields. */
#define DEFAULT_JOINT_INFLUENCE 0.5f
#define DEFAULT_LENGTH_ADJUST 0
#define DEFAULT_RADIAL_AMOUNT 1.0f
#define DEFAULT_RADIAL_PROFILE SSK_RADIAL_BULGE
/* Largest graph file ssk_graph_load reads (a graph is a few kilobytes). */
#define GRAPH_FILE_MAX_BYTES SSK_GRAPH_MAX_FILE_BYTES
/* Significant decimal digits that always round-trip a float (FLT_DECIMAL_DIG). */
#define FLOAT_ROUND_TRIP_DIGITS 9
/* Whole numbers below this magnitude are written in fixed notation. */
#define INTEGRAL_FIXED_LIMIT 1e15f

static const char *const node_type_names[SSK_NODE_TYPE_COUNT] = {
    "skinning", "radial", "normals", "output", "spring", "arap", "implicit", "cage"};

/* Input slots of a node, by name. */
typedef enum graph_input { INPUT_POSITIONS = 0, INPUT_NORMALS, INPUT_COUNT } graph_input;
static const char *const input_names[INPUT_COUNT] = {"positions", "normals"};

/* ------------------------------------------------------------------------ */
/* Allocation.                                                               */
/* ------------------------------------------------------------------------ */

static void node_free(ssk_graph_node *node)
{
    free(node->id);
    free(node->joint_influences);
    free(node->bone_mask);
    free(node->keys);
    free(node->joint_operators);
    free(node->cage_rest);
    free(node->cage_triangles);
    free(node->cage_edited);
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) free(node->stiffness_maps[f]);
    if (node->edits)
        for (uint32_t e = 0; e < node->edit_count; ++e) {
            free(node->edits[e].kinematic);
            free(node->edits[e].offsets);
            free(node->edits[e].keys);
        }
    free(node->edits);
}

void ssk_graph_destroy(ssk_graph *graph)
{
    if (!graph) return;
    if (graph->nodes)
        for (uint32_t i = 0; i < graph->node_count; ++i) node_free(&graph->nodes[i]);
    if (graph->bone_names)
        for (uint32_t b = 0; b < graph->bone_count; ++b) free(graph->bone_names[b]);
    free(graph->nodes);
    free(graph->order);
    free(graph->bone_names);
    free(graph);
}

/* An empty graph of `node_count` nodes (inputs unconnected, defaults set)
 * with the rig's bone names. NULL when out of memory. */
static ssk_graph *graph_alloc(const ssk_rig *rig, uint32_t node_count)
{
    ssk_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->node_count = node_count;
    g->output_node = -1;
    g->bone_count = rig->bone_count;
    g->vertex_count = rig->vertex_count;
    /* +1: a zero-node or zero-bone allocation is still a valid pointer. */
    g->nodes = calloc((size_t)node_count + 1, sizeof *g->nodes);
    g->order = calloc((size_t)node_count + 1, sizeof *g->order);
    g->bone_names = calloc((size_t)rig->bone_count + 1, sizeof *g->bone_names);
    if (!g->nodes || !g->order || !g->bone_names) {
        ssk_graph_destroy(g);
        return NULL;
    }
    for (uint32_t b = 0; b < rig->bone_count; ++b) {
        g->bone_names[b] = ssk_strdup(rig->bones[b].name ? rig->bones[b].name : "");
        if (!g->bone_names[b]) {
            ssk_graph_destroy(g);
            return NULL;
        }
    }
    for (uint32_t i = 0; i < node_count; ++i) {
        ssk_graph_node *n = &g->nodes[i];
        n->input_positions = -1;
        n->input_normals = -1;
        n->length_adjust = DEFAULT_LENGTH_ADJUST;
        n->parent_influence = DEFAULT_JOINT_INFLUENCE;
        n->child_influence = DEFAULT_JOINT_INFLUENCE;
        n->profile = DEFAULT_RADIAL_PROFILE;
        n->amount = DEFAULT_RADIAL_AMOUNT;
    }
    return g;
}

/* #B by 2 joint influences, every row (parent, child). */
static float *influences_alloc(uint32_t bone_count, float parent, float child)
{
    float *v = malloc(((size_t)bone_count * 2 + 1) * sizeof *v);
    if (!v) return NULL;
    for (uint32_t b = 0; b < bone_count; ++b) {
        v[2 * b] = parent;
        v[2 * b + 1] = child;
    }
    return v;
}

void *ssk_graph_memdup(const void *src, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p && bytes) memcpy(p, src, bytes);
    return p;
}

ssk_status ssk_graph_copy(ssk_graph **out, const ssk_graph *src, ssk_error *err)
{
    if (!out || !src)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_graph_copy: NULL argument");
    *out = NULL;
    ssk_graph *g = calloc(1, sizeof *g);
    if (!g) goto oom;
    g->node_count = src->node_count;
    g->output_node = src->output_node;
    g->bone_count = src->bone_count;
    g->vertex_count = src->vertex_count;
    g->nodes = calloc((size_t)src->node_count + 1, sizeof *g->nodes);
    g->order = ssk_graph_memdup(src->order, (size_t)src->node_count * sizeof *g->order);
    g->bone_names = calloc((size_t)src->bone_count + 1, sizeof *g->bone_names);
    if (!g->nodes || !g->order || !g->bone_names) goto oom;
    for (uint32_t b = 0; b < src->bone_count; ++b) {
        const char *name = src->bone_names ? src->bone_names[b] : NULL;
        g->bone_names[b] = ssk_strdup(name ? name : "");
        if (!g->bone_names[b]) goto oom;
    }
    size_t bones = src->bone_count;
    for (uint32_t i = 0; i < src->node_count; ++i) {
        const ssk_graph_node *s = &src->nodes[i];
        ssk_graph_node *d = &g->nodes[i];
        *d = *s;
        d->id = NULL;
        d->joint_influences = NULL;
        d->bone_mask = NULL;
        d->keys = NULL;
        for (int f = 0; f < SSK_FORCE_COUNT; ++f) {
            d->stiffness_maps[f] = NULL;
            d->spring.stiffness_maps[f] = NULL;
        }
        d->edits = NULL;
        d->edit_count = 0;
        d->id = ssk_strdup(s->id ? s->id : "");
        if (!d->id) goto oom;
        if (s->joint_influences &&
            !(d->joint_influences =
                  ssk_graph_memdup(s->joint_influences, bones * 2 * sizeof(float))))
            goto oom;
        if (s->bone_mask && !(d->bone_mask = ssk_graph_memdup(s->bone_mask, bones)))
            goto oom;
        if (s->keys &&
            !(d->keys = ssk_graph_memdup(s->keys, (size_t)s->key_count * 2 * sizeof(float))))
            goto oom;
        if (ssk_graph_spring_copy(d, s, src->vertex_count) != SSK_OK) goto oom;
        if (ssk_graph_implicit_copy(d, s, src->bone_count) != SSK_OK) goto oom;
        if (ssk_graph_cage_copy(d, s) != SSK_OK) goto oom;
    }
    *out = g;
    return ssk_error_ok(err);
oom:
    ssk_graph_destroy(g);
    return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory copying a deformer graph");
}

/* ------------------------------------------------------------------------ */
/* Small queries.                                                            */
/* ------------------------------------------------------------------------ */

int ssk_graph_needs_binding(const ssk_graph *graph)
{
    if (!graph) return 0;
    for (uint32_t i = 0; i < graph->node_count; ++i) {
        const ssk_graph_node *n = &graph->nodes[i];
        if (n->type == SSK_NODE_RADIAL || n->type == SSK_NODE_SPRING ||
            n->type == SSK_NODE_ARAP)
            return 1;
        if (n->type == SSK_NODE_SKINNING &&
            (n->method == SSK_METHOD_RIGID || n->method == SSK_METHOD_IRS ||
             n->method == SSK_METHOD_COR))
            return 1;
    }
    return 0;
}

const ssk_graph_node *ssk_graph_cage_node(const ssk_graph *g)
{
    if (!g) return NULL;
    for (uint32_t i = 0; i < g->node_count; ++i)
        if (g->nodes[i].type == SSK_NODE_CAGE) return &g->nodes[i];
    return NULL;
}

const char *ssk_graph_frame_dependent_node(const ssk_graph *graph)
{
    if (!graph) return NULL;
    for (uint32_t i = 0; i < graph->node_count; ++i) {
        const ssk_graph_node *n = &graph->nodes[i];
        if ((n->type == SSK_NODE_SPRING && n->spring.mode == SSK_SPRING_FRAME_DEPENDENT) ||
            (n->type == SSK_NODE_IMPLICIT && n->implicit.tracking == SSK_IMPLICIT_ELASTIC))
            return n->id;
    }
    return NULL;
}

int ssk_graph_needs_cor(const ssk_graph *graph)
{
    if (!graph) return 0;
    for (uint32_t i = 0; i < graph->node_count; ++i)
        if (graph->nodes[i].type == SSK_NODE_SKINNING && graph->nodes[i].method == SSK_METHOD_COR)
            return 1;
    return 0;
}

int ssk_graph_needs_implicit(const ssk_graph *graph)
{
    if (!graph) return 0;
    for (uint32_t i = 0; i < graph->node_count; ++i)
        if (graph->nodes[i].type == SSK_NODE_IMPLICIT) return 1;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Parsing helpers.                                                          */
/* ------------------------------------------------------------------------ */

const char *ssk_json_kind(json_object *o)
{
    /* json-c represents JSON null as a NULL object. */
    return o ? json_type_to_name(json_object_get_type(o)) : "null";
}

static bool json_is_number(json_object *o)
{
    json_type t = json_object_get_type(o);
    return o && (t == json_type_int || t == json_type_double);
}

bool ssk_json_is_plain_string(json_object *o)
{
    return o && json_object_get_type(o) == json_type_string &&
           (size_t)json_object_get_string_len(o) == strlen(json_object_get_string(o));
}

bool ssk_json_get_float(json_object *o, float *out)
{
    if (!json_is_number(o)) return false;
    double v = json_object_get_double(o);
    /* issue #19: a huge finite value (a radial amount of 1e30) overflows
     * float32 in the kernels, so it is refused like a non-finite one */
    if (!isfinite(v) || fabs(v) > SSK_MAX_MAGNITUDE) return false;
    *out = (float)v;
    return true;
}

void ssk_graph_name_list(char *dst, size_t size, const char *(*name_of)(int), int count)
{
    dst[0] = '\0';
    size_t used = 0;
    int listed = 0, total = 0;
    for (int i = 0; i < count; ++i)
        if (name_of(i)) ++total;
    for (int i = 0; i < count; ++i) {
        const char *name = name_of(i);
        if (!name) continue;
        const char *sep = listed == 0 ? "" : (listed == total - 1 ? " or " : ", ");
        int w = snprintf(dst + used, size - used, "%s%s", sep, name);
        if (w < 0 || (size_t)w >= size - used) return;
        used += (size_t)w;
        ++listed;
    }
}

/* The methods of a skinning node: all but "spring" and "implicit", which
 * are methods of ssk_graph_from_method (a skinning node, then a spring or
 * implicit node) and node types of their own in documents. */
static const char *method_name_at(int i)
{
    return i == SSK_METHOD_SPRING || i == SSK_METHOD_IMPLICIT ? NULL
                                                              : ssk_method_name((ssk_method)i);
}
static const char *profile_name_at(int i) { return ssk_radial_profile_name((ssk_radial_profile)i); }
static const char *type_name_at(int i) { return node_type_names[i]; }

const char *ssk_json_describe(json_object *o, char *text, size_t size)
{
    if (!json_is_number(o)) return ssk_json_kind(o);
    const double v = json_object_get_double(o);
    if (isfinite(v) && fabs(v) > SSK_MAX_MAGNITUDE)
        snprintf(text, size, "%.*g (beyond SSK_MAX_MAGNITUDE, %g)", FLOAT_ROUND_TRIP_DIGITS, v,
                 (double)SSK_MAX_MAGNITUDE);
    else
        snprintf(text, size, "%.*g", FLOAT_ROUND_TRIP_DIGITS, v);
    return text;
}

static bool find_method(const char *name, ssk_method *out)
{
    for (int m = 0; m < SSK_METHOD_COUNT; ++m) {
        const char *n = method_name_at(m);
        if (n && strcasecmp(n, name) == 0) { /* any case: "IRS" as Blender spells it */
            *out = (ssk_method)m;
            return true;
        }
    }
    return false;
}

static bool find_attachment(const char *name, ssk_attachment_mode *out)
{
    for (int m = 0; m < SSK_ATTACHMENT_MODE_COUNT; ++m)
        if (strcmp(ssk_attachment_mode_name((ssk_attachment_mode)m), name) == 0) {
            *out = (ssk_attachment_mode)m;
            return true;
        }
    return false;
}

static bool find_profile(const char *name, ssk_radial_profile *out)
{
    for (int p = 0; p < SSK_RADIAL_PROFILE_COUNT; ++p) {
        const char *n = ssk_radial_profile_name((ssk_radial_profile)p);
        if (n && strcmp(n, name) == 0) {
            *out = (ssk_radial_profile)p;
            return true;
        }
    }
    return false;
}

int32_t ssk_graph_find_bone(const ssk_graph *g, const char *name)
{
    for (uint32_t b = 0; b < g->bone_count; ++b)
        if (strcmp(g->bone_names[b], name) == 0) return (int32_t)b;
    return -1;
}

/* Node ids -> node index while a document is parsed: open addressing over
 * XXH3 hashes of the ids (a power-of-two table at most half full), so a
 * document's ids and edges cost O(1) each (issue #19: a linear scan per
 * node and edge made a large document quadratic). */
typedef struct id_table {
    int32_t *slots; /* node index, -1 empty */
    uint32_t mask;
} id_table;

static bool id_table_init(id_table *t, uint32_t node_count)
{
    uint32_t size = 16;
    while (size < 2 * node_count) size *= 2;
    t->slots = malloc(size * sizeof *t->slots);
    if (!t->slots) return false;
    for (uint32_t i = 0; i < size; ++i) t->slots[i] = -1;
    t->mask = size - 1;
    return true;
}

/* The node with `id`, or -1; *at: its slot or the empty slot to insert at. */
static int32_t id_table_find(const id_table *t, const ssk_graph *g, const char *id,
                             uint32_t *at)
{
    uint32_t h = (uint32_t)XXH3_64bits(id, strlen(id)) & t->mask;
    while (t->slots[h] >= 0) {
        if (strcmp(g->nodes[t->slots[h]].id, id) == 0) break;
        h = (h + 1) & t->mask;
    }
    if (at) *at = h;
    return t->slots[h];
}

static int32_t find_node(const id_table *t, const ssk_graph *g, const char *id)
{
    return id_table_find(t, g, id, NULL);
}

/* Whether `field` is allowed on a node of this type (and method). */
static bool field_allowed(ssk_node_type type, bool irs, bool attach, const char *field)
{
    static const char *const common[] = {"id", "type"};
    static const char *const skinning[] = {"method"};
    static const char *const irs_only[] = {"parent_influence", "child_influence",
                                           "length_adjust", "joint_influences"};
    static const char *const radial[] = {"bones", "profile", "amount", "keys"};
    static const char *const spring[] = {"stiffness",   "stiffness_maps", "dt",
                                         "integrator",  "damping",        "max_iterations",
                                         "convergence", "threshold",      "mode",
                                         "solver",      "chebyshev_rho",  "attachment", "edits"};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; ++i)
        if (strcmp(field, common[i]) == 0) return true;
    if (type == SSK_NODE_SKINNING) {
        for (size_t i = 0; i < sizeof skinning / sizeof skinning[0]; ++i)
            if (strcmp(field, skinning[i]) == 0) return true;
        if (irs)
            for (size_t i = 0; i < sizeof irs_only / sizeof irs_only[0]; ++i)
                if (strcmp(field, irs_only[i]) == 0) return true;
        if (attach && strcmp(field, "attachment") == 0) return true;
    }
    if (type == SSK_NODE_RADIAL)
        for (size_t i = 0; i < sizeof radial / sizeof radial[0]; ++i)
            if (strcmp(field, radial[i]) == 0) return true;
    if (type == SSK_NODE_SPRING)
        for (size_t i = 0; i < sizeof spring / sizeof spring[0]; ++i)
            if (strcmp(field, spring[i]) == 0) return true;
    if (type == SSK_NODE_ARAP && strcmp(field, "regularization") == 0) return true;
    if (type == SSK_NODE_IMPLICIT) return ssk_graph_implicit_field(field);
    if (type == SSK_NODE_CAGE) return ssk_graph_cage_field(field);
    return false;
}

static bool is_irs_field(const char *field)
{
    return strcmp(field, "parent_influence") == 0 || strcmp(field, "child_influence") == 0 ||
           strcmp(field, "length_adjust") == 0 || strcmp(field, "joint_influences") == 0;
}

/* A joint influence p_i or c_i of Eq. 14: a number in (0, 1]. */
static bool valid_influence(json_object *o, float *out)
{
    float v;
    if (!ssk_json_get_float(o, &v) || !(v > 0.0f) || v > 1.0f) return false;
    *out = v;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Nodes.                                                                    */
/* ------------------------------------------------------------------------ */

static ssk_status parse_skinning(ssk_graph *g, ssk_graph_node *n, json_object *obj,
                                 ssk_error *err)
{
    const char *id = n->id;
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, "method", &v))
        return GRAPH_ERROR("node '%s': missing field 'method' (a skinning node needs one)", id);
    char list[GRAPH_NAME_LIST_SIZE];
    ssk_graph_name_list(list, sizeof list, method_name_at, SSK_METHOD_COUNT);
    if (!ssk_json_is_plain_string(v))
        return GRAPH_ERROR("node '%s': field 'method': expected a string (%s), got %s", id,
                           list, ssk_json_kind(v));
    static const ssk_method node_types[] = {SSK_METHOD_SPRING, SSK_METHOD_IMPLICIT};
    for (size_t k = 0; k < sizeof node_types / sizeof node_types[0]; ++k) {
        const char *type = ssk_method_name(node_types[k]);
        if (strcasecmp(json_object_get_string(v), type) == 0)
            return GRAPH_ERROR("node '%s': field 'method': '%s' is a node type, not a skinning "
                               "method (expected %s; add a node of type '%s' fed by this one)",
                               id, type, list, type);
    }
    if (!find_method(json_object_get_string(v), &n->method))
        return GRAPH_ERROR("node '%s': field 'method': unknown method '%s' (expected %s)", id,
                           json_object_get_string(v), list);
    if (json_object_object_get_ex(obj, "attachment", &v)) {
        const char *name = ssk_json_is_plain_string(v) ? json_object_get_string(v) : NULL;
        if (!name || !find_attachment(name, &n->attachment))
            return GRAPH_ERROR("node '%s': field 'attachment': expected \"weights\" or "
                               "\"binding\", got %s",
                               id, name ? name : ssk_json_kind(v));
    }
    if (n->method != SSK_METHOD_IRS) return SSK_OK;

    if (json_object_object_get_ex(obj, "parent_influence", &v) &&
        !valid_influence(v, &n->parent_influence))
        return GRAPH_ERROR("node '%s': field 'parent_influence': expected a number in (0, 1]",
                           id);
    if (json_object_object_get_ex(obj, "child_influence", &v) &&
        !valid_influence(v, &n->child_influence))
        return GRAPH_ERROR("node '%s': field 'child_influence': expected a number in (0, 1]",
                           id);
    if (json_object_object_get_ex(obj, "length_adjust", &v)) {
        if (!v || json_object_get_type(v) != json_type_boolean)
            return GRAPH_ERROR("node '%s': field 'length_adjust': expected true or false, "
                               "got %s",
                               id, ssk_json_kind(v));
        n->length_adjust = json_object_get_boolean(v) ? 1 : 0;
    }
    n->joint_influences = influences_alloc(g->bone_count, n->parent_influence,
                                           n->child_influence);
    if (!n->joint_influences)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing node '%s'",
                             id);
    if (json_object_object_get_ex(obj, "joint_influences", &v)) {
        if (!v || json_object_get_type(v) != json_type_object)
            return GRAPH_ERROR("node '%s': field 'joint_influences': expected an object "
                               "{bone name: [parent, child]}, got %s",
                               id, ssk_json_kind(v));
        json_object_object_foreach(v, bone_name, pair)
        {
            int32_t b = ssk_graph_find_bone(g, bone_name);
            if (b < 0)
                return GRAPH_ERROR("node '%s': field 'joint_influences': unknown bone '%s'", id,
                                   bone_name);
            float p, c;
            if (!pair || json_object_get_type(pair) != json_type_array ||
                json_object_array_length(pair) != 2 ||
                !valid_influence(json_object_array_get_idx(pair, 0), &p) ||
                !valid_influence(json_object_array_get_idx(pair, 1), &c))
                return GRAPH_ERROR("node '%s': field 'joint_influences': bone '%s': expected "
                                   "[parent, child], two numbers in (0, 1]",
                                   id, bone_name);
            n->joint_influences[2 * b] = p;
            n->joint_influences[2 * b + 1] = c;
        }
    }
    return SSK_OK;
}

/* An arap node's fields (springskin.h ssk_arap_params): "regularization",
 * a number > 0. */
static ssk_status parse_arap(ssk_graph_node *n, json_object *obj, ssk_error *err)
{
    const char *id = n->id;
    ssk_arap_params_default(&n->arap);
    json_object *v = NULL;
    char text[GRAPH_NUMBER_TEXT_SIZE];
    if (json_object_object_get_ex(obj, "regularization", &v) &&
        (!ssk_json_get_float(v, &n->arap.regularization) || !(n->arap.regularization > 0.0f)))
        return GRAPH_ERROR("node '%s': field 'regularization': expected a number > 0 (the pull "
                           "toward rigid skinning), got %s",
                           id, ssk_json_describe(v, text, sizeof text));
    return SSK_OK;
}

static ssk_status parse_radial(ssk_graph *g, ssk_graph_node *n, json_object *obj,
                               ssk_error *err)
{
    const char *id = n->id;
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, "bones", &v))
        return GRAPH_ERROR("node '%s': missing field 'bones' (a radial node needs a non-empty "
                           "list of bone names)",
                           id);
    if (!v || json_object_get_type(v) != json_type_array || json_object_array_length(v) == 0)
        return GRAPH_ERROR("node '%s': field 'bones': expected a non-empty array of bone "
                           "names, got %s",
                           id,
                           v && json_object_get_type(v) == json_type_array ? "an empty array"
                                                                          : ssk_json_kind(v));
    n->bone_mask = calloc((size_t)g->bone_count + 1, 1);
    if (!n->bone_mask)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing node '%s'",
                             id);
    size_t count = json_object_array_length(v);
    for (size_t i = 0; i < count; ++i) {
        json_object *name = json_object_array_get_idx(v, i);
        if (!ssk_json_is_plain_string(name))
            return GRAPH_ERROR("node '%s': field 'bones': entry %zu: expected a bone name, "
                               "got %s",
                               id, i, ssk_json_kind(name));
        int32_t b = ssk_graph_find_bone(g, json_object_get_string(name));
        if (b < 0)
            return GRAPH_ERROR("node '%s': field 'bones': unknown bone '%s'", id,
                               json_object_get_string(name));
        if (n->bone_mask[b])
            return GRAPH_ERROR("node '%s': field 'bones': bone '%s' is listed twice", id,
                               json_object_get_string(name));
        n->bone_mask[b] = 1;
    }
    if (json_object_object_get_ex(obj, "profile", &v)) {
        char list[GRAPH_NAME_LIST_SIZE];
        ssk_graph_name_list(list, sizeof list, profile_name_at, SSK_RADIAL_PROFILE_COUNT);
        if (!ssk_json_is_plain_string(v))
            return GRAPH_ERROR("node '%s': field 'profile': expected a string (%s), got %s", id,
                               list, ssk_json_kind(v));
        if (!find_profile(json_object_get_string(v), &n->profile))
            return GRAPH_ERROR("node '%s': field 'profile': unknown profile '%s' (expected %s)",
                               id, json_object_get_string(v), list);
    }
    if (json_object_object_get_ex(obj, "amount", &v) && !ssk_json_get_float(v, &n->amount)) {
        char text[GRAPH_NUMBER_TEXT_SIZE];
        return GRAPH_ERROR("node '%s': field 'amount': expected a finite number, got %s", id,
                           ssk_json_describe(v, text, sizeof text));
    }
    if (json_object_object_get_ex(obj, "keys", &v))
        return ssk_graph_parse_keys(v, id, "keys", false, &n->keys, &n->key_count, err);
    return SSK_OK;
}

/* Node `index` of the document: id, type, unknown fields, then the type's
 * own fields. Ids of earlier nodes are set (for the duplicate check). */
static ssk_status parse_node(ssk_graph *g, id_table *ids, uint32_t index, json_object *obj,
                             ssk_error *err)
{
    ssk_graph_node *n = &g->nodes[index];
    if (!obj || json_object_get_type(obj) != json_type_object)
        return GRAPH_ERROR("node #%u: expected an object, got %s", (unsigned)index,
                           ssk_json_kind(obj));
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, "id", &v))
        return GRAPH_ERROR("node #%u: missing field 'id'", (unsigned)index);
    if (!ssk_json_is_plain_string(v) || json_object_get_string_len(v) == 0)
        return GRAPH_ERROR("node #%u: field 'id': expected a non-empty string, got %s",
                           (unsigned)index,
                           ssk_json_is_plain_string(v) ? "an empty string" : ssk_json_kind(v));
    const char *id = json_object_get_string(v);
    uint32_t at = 0;
    int32_t earlier = id_table_find(ids, g, id, &at);
    if (earlier >= 0)
        return GRAPH_ERROR("node '%s' (#%u): duplicate id (node #%d has it too)", id,
                           (unsigned)index, (int)earlier);
    n->id = ssk_strdup(id);
    if (!n->id)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing node '%s'",
                             id);
    ids->slots[at] = (int32_t)index;

    char types[GRAPH_NAME_LIST_SIZE];
    ssk_graph_name_list(types, sizeof types, type_name_at, SSK_NODE_TYPE_COUNT);
    if (!json_object_object_get_ex(obj, "type", &v))
        return GRAPH_ERROR("node '%s': missing field 'type' (%s)", id, types);
    if (!ssk_json_is_plain_string(v))
        return GRAPH_ERROR("node '%s': field 'type': expected a string (%s), got %s", id, types,
                           ssk_json_kind(v));
    int type = -1;
    for (int t = 0; t < SSK_NODE_TYPE_COUNT; ++t)
        if (strcmp(json_object_get_string(v), node_type_names[t]) == 0) type = t;
    if (type < 0)
        return GRAPH_ERROR("node '%s': field 'type': unknown node type '%s' (expected %s)", id,
                           json_object_get_string(v), types);
    n->type = (ssk_node_type)type;

    /* The method decides which skinning fields exist; an unknown method is
     * reported by parse_skinning, before fields that depend on it. */
    bool irs = false, attach = false;
    if (n->type == SSK_NODE_SKINNING && json_object_object_get_ex(obj, "method", &v) &&
        ssk_json_is_plain_string(v)) {
        irs = strcasecmp(json_object_get_string(v), ssk_method_name(SSK_METHOD_IRS)) == 0;
        attach = irs || strcasecmp(json_object_get_string(v), ssk_method_name(SSK_METHOD_RIGID)) == 0;
    }
    json_object_object_foreach(obj, field, value)
    {
        (void)value;
        if (field_allowed(n->type, irs, attach, field)) continue;
        if (n->type == SSK_NODE_SKINNING && strcmp(field, "attachment") == 0) {
            ssk_method m;
            if (json_object_object_get_ex(obj, "method", &v) && ssk_json_is_plain_string(v) &&
                find_method(json_object_get_string(v), &m))
                return GRAPH_ERROR("node '%s': field 'attachment' applies to rigid and irs "
                                   "skinning only, not '%s'",
                                   id, ssk_method_name(m));
            continue; /* parse_skinning reports the missing or unknown method */
        }
        if (n->type == SSK_NODE_SKINNING && is_irs_field(field)) {
            ssk_method m;
            bool known = json_object_object_get_ex(obj, "method", &v) &&
                         ssk_json_is_plain_string(v) && find_method(json_object_get_string(v), &m);
            if (known)
                return GRAPH_ERROR("node '%s': field '%s' applies to irs skinning only, not "
                                   "'%s'",
                                   id, field, ssk_method_name(m));
            continue; /* parse_skinning reports the missing or unknown method */
        }
        return GRAPH_ERROR("node '%s': unknown field '%s' for node type '%s'", id, field,
                           node_type_names[n->type]);
    }
    switch (n->type) {
    case SSK_NODE_SKINNING: return parse_skinning(g, n, obj, err);
    case SSK_NODE_RADIAL: return parse_radial(g, n, obj, err);
    case SSK_NODE_SPRING: return ssk_graph_parse_spring(g, n, obj, err);
    case SSK_NODE_ARAP: return parse_arap(n, obj, err);
    case SSK_NODE_IMPLICIT: return ssk_graph_parse_implicit(g, n, obj, err);
    case SSK_NODE_CAGE: return ssk_graph_parse_cage(g, n, obj, err);
    default: return SSK_OK;
    }
}

/* ------------------------------------------------------------------------ */
/* Edges and graph structure.                                                */
/* ------------------------------------------------------------------------ */

/* The kind of a node's output: an input slot it may feed, or -1 (none). */
static int output_kind(ssk_node_type type)
{
    switch (type) {
    case SSK_NODE_SKINNING:
    case SSK_NODE_RADIAL:
    case SSK_NODE_SPRING:
    case SSK_NODE_ARAP:
    case SSK_NODE_IMPLICIT: return INPUT_POSITIONS;
    case SSK_NODE_NORMALS: return INPUT_NORMALS;
    default: return -1;
    }
}

static bool has_input(ssk_node_type type, graph_input input)
{
    switch (type) {
    case SSK_NODE_RADIAL:
    case SSK_NODE_NORMALS:
    case SSK_NODE_SPRING:
    case SSK_NODE_IMPLICIT: return input == INPUT_POSITIONS;
    case SSK_NODE_OUTPUT: return true;
    default: return false;
    }
}

static int32_t *input_slot(ssk_graph_node *n, graph_input input)
{
    return input == INPUT_POSITIONS ? &n->input_positions : &n->input_normals;
}

/* Reads the string field `name` of edge `index` into *out (NULL when absent
 * and optional). */
static ssk_status edge_string(json_object *edge, const char *name, bool required,
                              size_t index, const char **out, ssk_error *err)
{
    json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(edge, name, &v)) {
        if (!required) return SSK_OK;
        return GRAPH_ERROR("edge #%zu: missing field '%s'", index, name);
    }
    if (!ssk_json_is_plain_string(v))
        return GRAPH_ERROR("edge #%zu: field '%s': expected a string, got %s", index, name,
                           ssk_json_kind(v));
    *out = json_object_get_string(v);
    return SSK_OK;
}

static ssk_status parse_edge(ssk_graph *g, const id_table *ids, size_t index, json_object *edge,
                             ssk_error *err)
{
    if (!edge || json_object_get_type(edge) != json_type_object)
        return GRAPH_ERROR("edge #%zu: expected an object {\"from\", \"to\", \"input\"}, got %s",
                           index, ssk_json_kind(edge));
    json_object_object_foreach(edge, field, value)
    {
        (void)value;
        if (strcmp(field, "from") != 0 && strcmp(field, "to") != 0 &&
            strcmp(field, "input") != 0)
            return GRAPH_ERROR("edge #%zu: unknown field '%s' (expected from, to, input)", index,
                               field);
    }
    const char *from_id, *to_id, *input_name;
    ssk_status s = edge_string(edge, "from", true, index, &from_id, err);
    if (s == SSK_OK) s = edge_string(edge, "to", true, index, &to_id, err);
    if (s == SSK_OK) s = edge_string(edge, "input", false, index, &input_name, err);
    if (s != SSK_OK) return s;
    int32_t from = find_node(ids, g, from_id);
    int32_t to = find_node(ids, g, to_id);
    if (from < 0)
        return GRAPH_ERROR("edge #%zu: field 'from': unknown node '%s'", index, from_id);
    if (to < 0) return GRAPH_ERROR("edge #%zu: field 'to': unknown node '%s'", index, to_id);
    int input = INPUT_POSITIONS;
    if (input_name) {
        input = -1;
        for (int k = 0; k < INPUT_COUNT; ++k)
            if (strcmp(input_name, input_names[k]) == 0) input = k;
        if (input < 0)
            return GRAPH_ERROR("edge #%zu ('%s' -> '%s'): field 'input': unknown input '%s' "
                               "(expected positions or normals)",
                               index, from_id, to_id, input_name);
    }
    ssk_graph_node *src = &g->nodes[from], *dst = &g->nodes[to];
    if (src->type == SSK_NODE_CAGE || dst->type == SSK_NODE_CAGE)
        return GRAPH_ERROR("edge #%zu ('%s' -> '%s'): node '%s' is a cage node, which takes no "
                           "edge (it reshapes the rig of every node after it in 'nodes')",
                           index, from_id, to_id, src->type == SSK_NODE_CAGE ? from_id : to_id);
    if (dst->type == SSK_NODE_SKINNING)
        return GRAPH_ERROR("edge #%zu ('%s' -> '%s'): node '%s' is a skinning node, a source "
                           "that takes no incoming edge",
                           index, from_id, to_id, to_id);
    if (!has_input(dst->type, (graph_input)input))
        return GRAPH_ERROR("edge #%zu ('%s' -> '%s'): node '%s' (%s) has no input '%s'", index,
                           from_id, to_id, to_id, node_type_names[dst->type],
                           input_names[input]);
    int kind = output_kind(src->type);
    if (kind < 0)
        return GRAPH_ERROR("edge #%zu ('%s' -> '%s'): node '%s' is the output node and has no "
                           "output to connect",
                           index, from_id, to_id, from_id);
    if (kind != input)
        return GRAPH_ERROR("edge #%zu ('%s' -> '%s'): node '%s' (%s) outputs %s, which cannot "
                           "feed the %s input of node '%s'",
                           index, from_id, to_id, from_id, node_type_names[src->type],
                           input_names[kind], input_names[input], to_id);
    int32_t *slot = input_slot(dst, (graph_input)input);
    if (*slot >= 0)
        return GRAPH_ERROR("edge #%zu ('%s' -> '%s'): input '%s' of node '%s' is already "
                           "connected (from node '%s')",
                           index, from_id, to_id, input_names[input], to_id,
                           g->nodes[*slot].id);
    *slot = from;
    return SSK_OK;
}

/* The unplaced input of an unplaced node during Kahn's ordering (one
 * exists, or the node would be ready). */
static uint32_t unplaced_input(const ssk_graph_node *node, const uint8_t *placed)
{
    if (node->input_positions >= 0 && !placed[node->input_positions])
        return (uint32_t)node->input_positions;
    return (uint32_t)node->input_normals;
}

/* Called when no unplaced node is ready: walks inputs from an unplaced node
 * until a node repeats (that node lies on a cycle) and names the cycle. */
static ssk_status report_cycle(const ssk_graph *g, const uint8_t *placed, ssk_error *err)
{
    uint32_t n = g->node_count, walk = 0;
    while (placed[walk]) ++walk;
    uint8_t *seen = calloc((size_t)n + 1, 1);
    uint32_t *cycle = malloc(((size_t)n + 1) * sizeof *cycle);
    if (!seen || !cycle) {
        free(seen);
        free(cycle);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory ordering the graph");
    }
    while (!seen[walk]) {
        seen[walk] = 1;
        walk = unplaced_input(&g->nodes[walk], placed);
    }
    /* Inputs point against the edges: collect backwards, print reversed. */
    uint32_t length = 0, at = walk;
    do {
        cycle[length++] = at;
        at = unplaced_input(&g->nodes[at], placed);
    } while (at != walk && length < n);
    char path[SSK_ERROR_MESSAGE_SIZE];
    size_t used = 0;
    path[0] = '\0';
    for (uint32_t k = length + 1; k-- > 0;) {
        const char *id = g->nodes[cycle[k % length]].id;
        int w = snprintf(path + used, sizeof path - used, "%s'%s'", k == length ? "" : " -> ",
                         id);
        if (w < 0 || (size_t)w >= sizeof path - used) break;
        used += (size_t)w;
    }
    ssk_status s = GRAPH_ERROR("node '%s' is on a cycle: %s (edges must not loop back)",
                               g->nodes[walk].id, path);
    free(seen);
    free(cycle);
    return s;
}

/* Exactly one output; required inputs connected; Kahn's topological order
 * (the ready node that comes first in the document goes first); every node
 * reaches the output. */
static ssk_status check_structure(ssk_graph *g, ssk_error *err)
{
    uint32_t n = g->node_count;
    for (uint32_t i = 0; i < n; ++i) {
        if (g->nodes[i].type != SSK_NODE_OUTPUT) continue;
        if (g->output_node >= 0)
            return GRAPH_ERROR("node '%s': a second output node (node '%s' is one; a graph has "
                               "exactly one)",
                               g->nodes[i].id, g->nodes[g->output_node].id);
        g->output_node = (int32_t)i;
    }
    if (g->output_node < 0)
        return GRAPH_ERROR("no output node (a graph has exactly one node of type 'output')");
    /* a cage node (at most one) reshapes the rig the sources bind: it comes
     * before every skinning and arap node in the document */
    int32_t cage = -1;
    for (uint32_t i = 0; i < n; ++i) {
        const ssk_graph_node *node = &g->nodes[i];
        if (node->type == SSK_NODE_CAGE) {
            if (cage >= 0)
                return GRAPH_ERROR("node '%s': a second cage node (node '%s' is one; a graph "
                                   "has at most one)",
                                   node->id, g->nodes[cage].id);
            cage = (int32_t)i;
        }
    }
    for (uint32_t i = 0; cage >= 0 && i < (uint32_t)cage; ++i) {
        const ssk_graph_node *node = &g->nodes[i];
        if (node->type == SSK_NODE_SKINNING || node->type == SSK_NODE_ARAP)
            return GRAPH_ERROR("node '%s' (cage) comes after %s node '%s': a cage node reshapes "
                               "the rig (rest mesh, joints, centers of rotation) that skinning "
                               "runs on, so it comes before every skinning and arap node in "
                               "'nodes'",
                               g->nodes[cage].id, node_type_names[node->type], node->id);
    }
    for (uint32_t i = 0; i < n; ++i) {
        const ssk_graph_node *node = &g->nodes[i];
        if (node->type != SSK_NODE_SKINNING && node->type != SSK_NODE_ARAP &&
            node->type != SSK_NODE_CAGE && node->input_positions < 0)
            return GRAPH_ERROR("node '%s' (%s): its positions input is not connected",
                               node->id, node_type_names[node->type]);
    }

    uint8_t *placed = calloc((size_t)n + 1, 1);
    if (!placed)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory ordering the graph");
    for (uint32_t k = 0; k < n; ++k) {
        int32_t ready = -1;
        for (uint32_t i = 0; i < n && ready < 0; ++i) {
            const ssk_graph_node *node = &g->nodes[i];
            if (placed[i]) continue;
            if (node->input_positions >= 0 && !placed[node->input_positions]) continue;
            if (node->input_normals >= 0 && !placed[node->input_normals]) continue;
            ready = (int32_t)i;
        }
        if (ready < 0) {
            ssk_status s = report_cycle(g, placed, err);
            free(placed);
            return s;
        }
        placed[ready] = 1;
        g->order[k] = (uint32_t)ready;
    }
    free(placed);

    uint8_t *reaches = calloc((size_t)n + 1, 1);
    if (!reaches)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory checking the graph");
    reaches[g->output_node] = 1;
    for (uint32_t k = n; k-- > 0;) {
        const ssk_graph_node *node = &g->nodes[g->order[k]];
        if (!reaches[g->order[k]]) continue;
        if (node->input_positions >= 0) reaches[node->input_positions] = 1;
        if (node->input_normals >= 0) reaches[node->input_normals] = 1;
    }
    for (uint32_t i = 0; i < n; ++i)
        if (!reaches[i] && g->nodes[i].type != SSK_NODE_CAGE) {
            free(reaches);
            return GRAPH_ERROR("node '%s' does not reach the output node '%s' (its result "
                               "would be unused)",
                               g->nodes[i].id, g->nodes[g->output_node].id);
        }
    free(reaches);
    return SSK_OK;
}

/* ------------------------------------------------------------------------ */
/* Documents.                                                                */
/* ------------------------------------------------------------------------ */

/* Line and column (1-based) of byte `offset` of `text`. */
static void text_position(const char *text, size_t offset, size_t *line, size_t *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < offset && text[i]; ++i) {
        if (text[i] == '\n') {
            ++*line;
            *column = 1;
        } else {
            ++*column;
        }
    }
}

/* The budget scan (issue #19): json-c builds its whole tree, tens of bytes
 * per value, before any field is checked, so the text is first scanned
 * for its values (an upper bound: commas and opening brackets outside
 * strings, plus one) and its nesting, and refused past max_values or
 * SSK_GRAPH_MAX_DEPTH without allocating anything. A syntax error is left
 * to json-c, which reports its position. */
static ssk_status scan_budget(const char *text, size_t length, uint64_t max_values,
                              ssk_error *err)
{
    uint64_t values = 1;
    uint32_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < length; ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
        case '"': in_string = true; break;
        case ',': ++values; break;
        case '{':
        case '[':
            ++values;
            if (++depth > SSK_GRAPH_MAX_DEPTH) {
                size_t line, column;
                text_position(text, i, &line, &column);
                return GRAPH_ERROR("JSON nested more than %u deep at byte %zu (line %zu, column "
                                   "%zu) (SSK_GRAPH_MAX_DEPTH)",
                                   SSK_GRAPH_MAX_DEPTH, i, line, column);
            }
            break;
        case '}':
        case ']':
            if (depth) --depth;
            break;
        default: break;
        }
        if (values > max_values)
            return GRAPH_ERROR("graph document too large for this rig: more than %llu JSON "
                               "values (SSK_GRAPH_MAX_VALUES + SSK_GRAPH_VALUES_PER_VERTEX per "
                               "rig vertex); refused at byte %zu of %zu",
                               (unsigned long long)max_values, i, length);
    }
    return SSK_OK;
}

/* Parses JSON text into *out with json-c's strict mode (no trailing commas,
 * no comments, UTF-8 validated; json-c still reads single-quoted strings
 * and NaN/Infinity, which the field checks reject as non-finite), after
 * the budget scan. */
static ssk_status parse_json_text(json_object **out, const char *text, uint64_t max_values,
                                  ssk_error *err)
{
    *out = NULL;
    size_t length = strlen(text);
    if (length > INT_MAX)
        return GRAPH_ERROR("JSON document too large (%zu bytes)", length);
    ssk_status budget = scan_budget(text, length, max_values, err);
    if (budget != SSK_OK) return budget;
    json_tokener *tok = json_tokener_new_ex(SSK_GRAPH_MAX_DEPTH + 1);
    if (!tok) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing JSON");
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *root = json_tokener_parse_ex(tok, text, (int)length);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    size_t line, column;
    if (jerr == json_tokener_continue) {
        json_object_put(root);
        text_position(text, length, &line, &column);
        return GRAPH_ERROR("JSON syntax error at byte %zu (line %zu, column %zu): unexpected "
                           "end of the document",
                           length, line, column);
    }
    if (jerr != json_tokener_success) {
        json_object_put(root);
        /* json-c stops at the offending character. */
        size_t at = end;
        text_position(text, at, &line, &column);
        return GRAPH_ERROR("JSON syntax error at byte %zu (line %zu, column %zu): %s", at, line,
                           column, json_tokener_error_desc(jerr));
    }
    size_t rest = end;
    while (rest < length && strchr(" \t\r\n", text[rest])) ++rest;
    if (rest < length) {
        json_object_put(root);
        text_position(text, rest, &line, &column);
        return GRAPH_ERROR("JSON syntax error at byte %zu (line %zu, column %zu): text after "
                           "the end of the document",
                           rest, line, column);
    }
    *out = root;
    return SSK_OK;
}

static ssk_status parse_document(ssk_graph **out, json_object *root, const ssk_rig *rig,
                                 ssk_error *err)
{
    if (!root || json_object_get_type(root) != json_type_object)
        return GRAPH_ERROR("the document must be a JSON object {\"version\", \"nodes\", "
                           "\"edges\"}, got %s",
                           ssk_json_kind(root));
    json_object_object_foreach(root, field, value)
    {
        (void)value;
        if (strcmp(field, "version") != 0 && strcmp(field, "nodes") != 0 &&
            strcmp(field, "edges") != 0)
            return GRAPH_ERROR("unknown top-level field '%s' (expected version, nodes, edges)",
                               field);
    }
    json_object *version = NULL, *nodes = NULL, *edges = NULL;
    if (!json_object_object_get_ex(root, "version", &version))
        return GRAPH_ERROR("missing field 'version' (this library reads version %d)",
                           GRAPH_FORMAT_VERSION);
    if (!version || json_object_get_type(version) != json_type_int ||
        json_object_get_int64(version) != GRAPH_FORMAT_VERSION)
        return GRAPH_ERROR("field 'version': unsupported version %s (this library reads "
                           "version %d)",
                           version ? json_object_to_json_string(version) : "null",
                           GRAPH_FORMAT_VERSION);
    if (!json_object_object_get_ex(root, "nodes", &nodes))
        return GRAPH_ERROR("missing field 'nodes'");
    if (!nodes || json_object_get_type(nodes) != json_type_array)
        return GRAPH_ERROR("field 'nodes': expected an array of nodes, got %s",
                           ssk_json_kind(nodes));
    if (!json_object_object_get_ex(root, "edges", &edges))
        return GRAPH_ERROR("missing field 'edges'");
    if (!edges || json_object_get_type(edges) != json_type_array)
        return GRAPH_ERROR("field 'edges': expected an array of edges, got %s",
                           ssk_json_kind(edges));
    size_t node_count = json_object_array_length(nodes);
    if (node_count > SSK_GRAPH_MAX_NODES)
        return GRAPH_ERROR("field 'nodes': %zu nodes, more than the limit of %u "
                           "(SSK_GRAPH_MAX_NODES)",
                           node_count, SSK_GRAPH_MAX_NODES);
    size_t edge_count = json_object_array_length(edges);
    if (edge_count > 2 * node_count)
        return GRAPH_ERROR("field 'edges': %zu edges for %zu nodes (a node has at most two "
                           "inputs: at most %zu edges)",
                           edge_count, node_count, 2 * node_count);

    ssk_graph *g = graph_alloc(rig, (uint32_t)node_count);
    id_table ids = {0};
    if (!g || !id_table_init(&ids, (uint32_t)node_count)) {
        ssk_graph_destroy(g);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing a graph");
    }
    ssk_status s = SSK_OK;
    for (size_t i = 0; i < node_count && s == SSK_OK; ++i)
        s = parse_node(g, &ids, (uint32_t)i, json_object_array_get_idx(nodes, i), err);
    for (size_t e = 0; e < edge_count && s == SSK_OK; ++e)
        s = parse_edge(g, &ids, e, json_object_array_get_idx(edges, e), err);
    free(ids.slots);
    if (s == SSK_OK) s = check_structure(g, err);
    if (s != SSK_OK) {
        ssk_graph_destroy(g);
        return s;
    }
    *out = g;
    return ssk_error_ok(err);
}

ssk_status ssk_graph_parse(ssk_graph **out, const char *json, const ssk_rig *rig,
                           ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !json || !rig)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_graph_parse: NULL argument");
    json_object *root = NULL;
    const uint64_t max_values =
        SSK_GRAPH_MAX_VALUES + (uint64_t)SSK_GRAPH_VALUES_PER_VERTEX * rig->vertex_count;
    ssk_status s = parse_json_text(&root, json, max_values, err);
    if (s != SSK_OK) return s;
    s = parse_document(out, root, rig, err);
    json_object_put(root);
    return s;
}

ssk_status ssk_graph_load(ssk_graph **out, const char *path, const ssk_rig *rig,
                          ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !path || !rig)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_graph_load: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f)
        return ssk_error_set(err, SSK_ERROR_IO, "cannot open graph '%s': %s", path,
                             strerror(errno));
    size_t capacity = 4096, size = 0;
    char *text = malloc(capacity);
    ssk_status s = SSK_OK;
    while (text) {
        if (size + 1 >= capacity) {
            if (capacity >= GRAPH_FILE_MAX_BYTES) {
                s = ssk_error_set(err, SSK_ERROR_IO, "graph '%s' is larger than %u bytes", path,
                                  GRAPH_FILE_MAX_BYTES);
                break;
            }
            char *bigger = realloc(text, capacity * 2);
            if (!bigger) {
                free(text);
                text = NULL;
                break;
            }
            text = bigger;
            capacity *= 2;
        }
        size_t got = fread(text + size, 1, capacity - size - 1, f);
        size += got;
        if (got == 0) {
            if (ferror(f))
                s = ssk_error_set(err, SSK_ERROR_IO, "cannot read graph '%s': %s", path,
                                  strerror(errno));
            break;
        }
    }
    fclose(f);
    if (!text)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory reading graph '%s'",
                             path);
    if (s == SSK_OK) {
        text[size] = '\0';
        if (strlen(text) != size)
            s = GRAPH_ERROR("%s: JSON syntax error at byte %zu: NUL character", path,
                            strlen(text));
    }
    if (s == SSK_OK) {
        s = ssk_graph_parse(out, text, rig, err);
        if (s == SSK_ERROR_GRAPH && err) {
            char message[SSK_ERROR_MESSAGE_SIZE];
            snprintf(message, sizeof message, "%s", err->message);
            ssk_error_set(err, s, "%s: %s", path, message);
        }
    }
    free(text);
    return s;
}

ssk_status ssk_graph_from_method(ssk_graph **out, ssk_method method, const ssk_rig *rig,
                                 ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !rig)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_graph_from_method: NULL argument");
    if ((unsigned)method >= SSK_METHOD_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_graph_from_method: method %d out of range", (int)method);
    /* Spring: IRS (attachment per skin weight influence, the defaults of
     * an IRS node) as the first stage, then a spring node with
     * ssk_spring_params_default. The paper starts from rigid attachment
     * skinning (Toothman 2020, 4.2) and allows any skinning; the detail
     * force keeps the first stage's differential coordinates, so the first
     * stage must be smooth and untwisted where the springs should not
     * change it: from rigid or LBS the springs would keep their tears and
     * candy wrapper (issue #15, docs/real-characters.md). */
    bool spring = method == SSK_METHOD_SPRING;
    /* Implicit: DQS as the first stage, as the paper (Vaillant 2015,
     * 4.6.2.1: "Dual quaternions are used to compute an initial position
     * of the mesh vertices"), then an implicit node with the defaults. */
    bool implicit = method == SSK_METHOD_IMPLICIT;
    uint32_t node_count = spring || implicit ? 3 : 2;
    ssk_graph *g = graph_alloc(rig, node_count);
    if (!g) goto oom;
    ssk_graph_node *skin = &g->nodes[0], *output = &g->nodes[node_count - 1];
    skin->id = ssk_strdup("skin");
    output->id = ssk_strdup("out");
    if (!skin->id || !output->id) goto oom;
    skin->type = SSK_NODE_SKINNING;
    skin->method = spring ? SSK_METHOD_IRS : implicit ? SSK_METHOD_DQS : method;
    if (skin->method == SSK_METHOD_IRS &&
        !(skin->joint_influences = influences_alloc(g->bone_count, skin->parent_influence,
                                                    skin->child_influence)))
        goto oom;
    if (spring) {
        ssk_graph_node *relax = &g->nodes[1];
        relax->id = ssk_strdup("relax");
        if (!relax->id) goto oom;
        relax->type = SSK_NODE_SPRING;
        ssk_graph_spring_defaults(&relax->spring);
        relax->input_positions = 0;
    }
    if (implicit) {
        ssk_graph_node *track = &g->nodes[1];
        track->id = ssk_strdup("implicit");
        if (!track->id) goto oom;
        track->type = SSK_NODE_IMPLICIT;
        ssk_implicit_params_default(&track->implicit);
        track->input_positions = 0;
    }
    output->type = SSK_NODE_OUTPUT;
    output->input_positions = (int32_t)node_count - 2;
    for (uint32_t i = 0; i < node_count; ++i) g->order[i] = i;
    g->output_node = (int32_t)node_count - 1;
    *out = g;
    return ssk_error_ok(err);
oom:
    ssk_graph_destroy(g);
    return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory building a graph");
}

/* ------------------------------------------------------------------------ */
/* Canonical JSON.                                                           */
/* ------------------------------------------------------------------------ */

json_object *ssk_json_new_float(float value)
{
    char text[GRAPH_NUMBER_TEXT_SIZE];
    if (value == truncf(value) && fabsf(value) < INTEGRAL_FIXED_LIMIT) {
        /* Whole numbers as "20.0", never "2e+01". */
        snprintf(text, sizeof text, "%.1f", (double)value);
        for (char *c = text; *c; ++c)
            if (*c == ',') *c = '.';
        return json_object_new_double_s((double)value, text);
    }
    for (int digits = 1; digits <= FLOAT_ROUND_TRIP_DIGITS; ++digits) {
        snprintf(text, sizeof text, "%.*g", digits, (double)value);
        if (strtof(text, NULL) == value) break;
    }
    /* %g never groups digits; a locale decimal comma becomes a point. */
    for (char *c = text; *c; ++c)
        if (*c == ',') *c = '.';
    if (!strpbrk(text, ".eE")) strncat(text, ".0", sizeof text - strlen(text) - 1);
    return json_object_new_double_s((double)value, text);
}

bool ssk_json_put(json_object *obj, const char *key, json_object *value)
{
    if (!value) return false;
    if (json_object_object_add(obj, key, value) != 0) {
        json_object_put(value);
        return false;
    }
    return true;
}

bool ssk_json_push(json_object *array, json_object *value)
{
    if (!value) return false;
    if (json_object_array_add(array, value) != 0) {
        json_object_put(value);
        return false;
    }
    return true;
}

static json_object *node_to_json(const ssk_graph *g, const ssk_graph_node *n)
{
    json_object *o = json_object_new_object();
    if (!o) return NULL;
    bool ok = ssk_json_put(o, "id", json_object_new_string(n->id)) &&
              ssk_json_put(o, "type", json_object_new_string(node_type_names[n->type]));
    if (ok && n->type == SSK_NODE_SKINNING) {
        ok = ssk_json_put(o, "method", json_object_new_string(ssk_method_name(n->method)));
        if (ok && (n->method == SSK_METHOD_IRS || n->method == SSK_METHOD_RIGID))
            ok = ssk_json_put(o, "attachment",
                              json_object_new_string(ssk_attachment_mode_name(n->attachment)));
        if (ok && n->method == SSK_METHOD_IRS) {
            ok = ssk_json_put(o, "parent_influence", ssk_json_new_float(n->parent_influence)) &&
                 ssk_json_put(o, "child_influence", ssk_json_new_float(n->child_influence)) &&
                 ssk_json_put(o, "length_adjust", json_object_new_boolean(n->length_adjust != 0));
            json_object *joints = ok ? json_object_new_object() : NULL;
            ok = ssk_json_put(o, "joint_influences", joints);
            for (uint32_t b = 0; ok && n->joint_influences && b < g->bone_count; ++b) {
                float p = n->joint_influences[2 * b], c = n->joint_influences[2 * b + 1];
                if (p == n->parent_influence && c == n->child_influence) continue;
                json_object *pair = json_object_new_array();
                ok = ssk_json_put(joints, g->bone_names[b], pair) &&
                     ssk_json_push(pair, ssk_json_new_float(p)) &&
                     ssk_json_push(pair, ssk_json_new_float(c));
            }
        }
    }
    if (ok && n->type == SSK_NODE_RADIAL) {
        json_object *bones = json_object_new_array();
        ok = ssk_json_put(o, "bones", bones);
        for (uint32_t b = 0; ok && n->bone_mask && b < g->bone_count; ++b)
            if (n->bone_mask[b])
                ok = ssk_json_push(bones, json_object_new_string(g->bone_names[b]));
        ok = ok &&
             ssk_json_put(o, "profile",
                          json_object_new_string(ssk_radial_profile_name(n->profile))) &&
             ssk_json_put(o, "amount", ssk_json_new_float(n->amount));
        json_object *keys = ok ? json_object_new_array() : NULL;
        ok = ok && ssk_json_put(o, "keys", keys);
        for (uint32_t k = 0; ok && n->keys && k < n->key_count; ++k) {
            json_object *key = json_object_new_array();
            ok = ssk_json_push(keys, key) &&
                 ssk_json_push(key, ssk_json_new_float(n->keys[2 * k])) &&
                 ssk_json_push(key, ssk_json_new_float(n->keys[2 * k + 1]));
        }
    }
    if (ok && n->type == SSK_NODE_SPRING) ok = ssk_graph_spring_to_json(g, n, o);
    if (ok && n->type == SSK_NODE_ARAP)
        ok = ssk_json_put(o, "regularization", ssk_json_new_float(n->arap.regularization));
    if (ok && n->type == SSK_NODE_IMPLICIT) ok = ssk_graph_implicit_to_json(g, n, o);
    if (ok && n->type == SSK_NODE_CAGE) ok = ssk_graph_cage_to_json(n, o);
    if (!ok) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* A growing NUL-terminated text. */
typedef struct text_buffer {
    char *data;
    size_t length, capacity;
} text_buffer;

/* Appends `text`; false when out of memory. */
static bool append(text_buffer *b, const char *text)
{
    size_t n = strlen(text);
    if (b->length + n + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 1024;
        while (b->length + n + 1 > capacity) capacity *= 2;
        char *bigger = realloc(b->data, capacity);
        if (!bigger) return false;
        b->data = bigger;
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, text, n + 1);
    b->length += n;
    return true;
}

/* Appends one node or edge object on its own line (json-c's spaced
 * one-line form), releasing it. */
static bool append_item(text_buffer *b, json_object *item, bool first)
{
    if (!item) return false;
    const char *s = json_object_to_json_string_ext(
        item, JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    bool ok = s && append(b, first ? "\n    " : ",\n    ") && append(b, s);
    json_object_put(item);
    return ok;
}

static json_object *edge_object(const ssk_graph *g, int32_t from, uint32_t to,
                                graph_input input)
{
    json_object *e = json_object_new_object();
    if (!e) return NULL;
    if (!ssk_json_put(e, "from", json_object_new_string(g->nodes[from].id)) ||
        !ssk_json_put(e, "to", json_object_new_string(g->nodes[to].id)) ||
        !ssk_json_put(e, "input", json_object_new_string(input_names[input]))) {
        json_object_put(e);
        return NULL;
    }
    return e;
}

char *ssk_graph_to_json(const ssk_graph *graph)
{
    if (!graph) return NULL;
    /* One node or edge per line:
     * {
     *   "version": 1,
     *   "nodes": [
     *     { "id": ..., "type": ..., fields },
     *     ...
     *   ],
     *   "edges": [
     *     { "from": ..., "to": ..., "input": ... }
     *   ]
     * } */
    text_buffer b = {0};
    char version[GRAPH_NUMBER_TEXT_SIZE];
    snprintf(version, sizeof version, "{\n  \"version\": %d,\n  \"nodes\": [",
             GRAPH_FORMAT_VERSION);
    bool ok = append(&b, version);
    for (uint32_t i = 0; ok && i < graph->node_count; ++i)
        ok = append_item(&b, node_to_json(graph, &graph->nodes[i]), i == 0);
    ok = ok && append(&b, "\n  ],\n  \"edges\": [");
    /* Edges grouped by destination in node order, positions before normals. */
    bool first = true;
    for (uint32_t i = 0; ok && i < graph->node_count; ++i) {
        const ssk_graph_node *n = &graph->nodes[i];
        if (n->input_positions >= 0) {
            ok = append_item(&b, edge_object(graph, n->input_positions, i, INPUT_POSITIONS),
                             first);
            first = false;
        }
        if (ok && n->input_normals >= 0) {
            ok = append_item(&b, edge_object(graph, n->input_normals, i, INPUT_NORMALS), first);
            first = false;
        }
    }
    ok = ok && append(&b, "\n  ]\n}\n");
    if (!ok) {
        free(b.data);
        return NULL;
    }
    return b.data;
}
