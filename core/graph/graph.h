/*
 * Stage graph (core/graph/, above bind): the deformer-graph document
 * (graph.c; its spring node in graph_spring.c, its keyed values in
 * graph_keys.c), the deformer that compiles it to kernel calls on a
 * backend (deformer.c), the bake driver (bake.c) and ssk_scene_check
 * (check.c).
 *
 * graph.h — the parsed deformer graph (internal representation shared by
 * the document's files, which parse, validate and serialize it, and
 * deformer.c, which runs it), and the helpers the document's files share.
 */
#ifndef SSK_GRAPH_H
#define SSK_GRAPH_H

#include "model/internal.h"

typedef enum ssk_node_type {
    SSK_NODE_SKINNING = 0, /* source: positions out */
    SSK_NODE_RADIAL,       /* positions in, positions out */
    SSK_NODE_NORMALS,      /* positions in, normals out */
    SSK_NODE_OUTPUT,       /* positions in, optional normals in */
    SSK_NODE_SPRING,       /* positions in (the first stage), positions out */
    SSK_NODE_ARAP,         /* source: positions out (ARAP on scale vectors) */
    SSK_NODE_IMPLICIT,     /* positions in (the first stage), positions out
                              (implicit skinning, Vaillant 2015) */
    SSK_NODE_CAGE,         /* no edges: reshapes the rig of the nodes after it
                              (coupled cages and skeletons, Corda et al. 2020) */
    SSK_NODE_TYPE_COUNT
} ssk_node_type;

/* A surface edit of a spring node, owned by the node (the arrays of
 * `edit` point into the owned copies below). */
typedef struct ssk_graph_edit {
    ssk_spring_edit edit;
    uint32_t *kinematic;  /* edit.kinematic */
    float *offsets;       /* edit.offsets, or NULL */
    float *keys;          /* edit.keys, or NULL */
} ssk_graph_edit;

typedef struct ssk_graph_node {
    char *id;
    ssk_node_type type;
    /* SKINNING */
    ssk_method method;
    float *joint_influences; /* #B by 2 (p_i, c_i), IRS only, else NULL */
    ssk_attachment_mode attachment; /* RIGID, IRS; default WEIGHTS */
    int length_adjust;       /* IRS, default 0 */
    float parent_influence;  /* IRS: the node's default p_i, c_i (joint_influences */
    float child_influence;   /* rows equal to them are not listed by to_json) */
    /* RADIAL */
    uint8_t *bone_mask;      /* #B, 1 for selected bones */
    ssk_radial_profile profile;
    float amount;            /* used when key_count == 0 */
    float *keys;             /* key_count (frame, value) pairs, frames ascending */
    uint32_t key_count;
    /* SPRING: parameters with owned stiffness maps (#V floats each, or NULL;
     * spring.stiffness_maps points at them) and surface edits */
    ssk_spring_params spring;
    float *stiffness_maps[SSK_FORCE_COUNT];
    ssk_graph_edit *edits;
    uint32_t edit_count;
    /* ARAP */
    ssk_arap_params arap;
    /* IMPLICIT: parameters (implicit.joint_operators points at the owned
     * joint_operators, #B bytes, SSK_IMPLICIT_OPERATOR_COUNT for the
     * default operator; NULL when every joint takes the default) */
    ssk_implicit_params implicit;
    uint8_t *joint_operators;
    /* CAGE (graph_cage.c): the rest cage and its edit, owned, rig space */
    uint32_t cage_vertex_count;   /* c */
    uint32_t cage_triangle_count;
    float *cage_rest;             /* c by 3 */
    uint32_t *cage_triangles;     /* cage_triangle_count by 3 */
    float *cage_edited;           /* c by 3, the same topology */
    /* inputs: index of the node feeding them, -1 when not connected */
    int32_t input_positions;
    int32_t input_normals;
} ssk_graph_node;

struct ssk_graph {
    uint32_t node_count;
    ssk_graph_node *nodes;
    uint32_t *order;     /* #nodes, topological order (sources first) */
    int32_t output_node;
    uint32_t bone_count; /* of the rig it was validated against */
    uint32_t vertex_count; /* of that rig (spring maps and edit rows) */
    char **bone_names;   /* #B copies of the rig's bone names (to_json) */
};

/* The radial amount at `frame` (graph_keys.c): linear interpolation of the
 * keys, clamped outside them (a NaN frame gets the first key's value);
 * `amount` without keys; 0 for a NULL node. */
float ssk_graph_node_amount(const ssk_graph_node *node, double frame);

/* The deformer's rig, graph (its own copy) and the binding it was given
 * (NULL when it bound one itself or needs none): ssk_scene_bake's
 * desc->deformer (deformer.c). */
const ssk_rig *ssk_deformer_rig_internal(const ssk_deformer *d);
const ssk_graph *ssk_deformer_graph_internal(const ssk_deformer *d);
const ssk_binding *ssk_deformer_given_binding_internal(const ssk_deformer *d);

/* Deep copy (the deformer keeps its own). */
ssk_status ssk_graph_copy(ssk_graph **out, const ssk_graph *src, ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Shared by the document's files.                                           */
/* ------------------------------------------------------------------------ */

/* graph.c (allocation, parsing, canonical JSON, copies), graph_keys.c (key
 * lists) and graph_spring.c (the spring node) share what follows. JSON
 * values are json-c's, where a NULL json_object is JSON null: the reading
 * functions and ssk_graph_parse_keys take one. */
struct json_object;

/* Sets `err` (the ssk_error * in scope) to SSK_ERROR_GRAPH with a
 * printf-style message; evaluates to SSK_ERROR_GRAPH. */
#define GRAPH_ERROR(...) ssk_error_set(err, SSK_ERROR_GRAPH, __VA_ARGS__)
/* Room for the text of one number / one name list in messages. */
#define GRAPH_NUMBER_TEXT_SIZE 80
#define GRAPH_NAME_LIST_SIZE 160

/* Reading (graph.c). The JSON type of `o` for messages: "string", "null"... */
const char *ssk_json_kind(struct json_object *o);
/* Whether `o` is a JSON string without embedded NUL characters. */
bool ssk_json_is_plain_string(struct json_object *o);
/* A finite number that fits a float into *out; false (*out unchanged) for
 * anything else (non-numbers, NaN, infinities, |x| > FLT_MAX). */
bool ssk_json_get_float(struct json_object *o, float *out);
/* What a JSON value is, for messages: the number itself written into
 * text[size] and returned ("-1", "1e+39", "nan"), else its JSON type
 * ("string", "null"). */
const char *ssk_json_describe(struct json_object *o, char *text, size_t size);
/* The non-NULL names of name_of(0 .. count - 1) into dst[size] as "lbs, dqs,
 * rigid or irs" (messages; size GRAPH_NAME_LIST_SIZE, cut short when the
 * names do not fit). */
void ssk_graph_name_list(char *dst, size_t size, const char *(*name_of)(int), int count);

/* Writing (graph.c). A float as the shortest decimal that reads back as the
 * same float, with a decimal point or an exponent so that it reads as a real
 * number ("20.0", "0.1"); NULL when out of memory. */
struct json_object *ssk_json_new_float(float value);
/* Adds `value` to the object `obj` under `key` / to the end of `array`.
 * False when `value` is NULL (a failed constructor) or out of memory; the
 * value is released on failure, so a call always takes it. */
bool ssk_json_put(struct json_object *obj, const char *key, struct json_object *value);
bool ssk_json_push(struct json_object *array, struct json_object *value);

/* A malloc'ed copy of `bytes` bytes of `src` (graph.c); a 1-byte block for
 * 0 bytes, so NULL means out of memory. */
void *ssk_graph_memdup(const void *src, size_t bytes);

/* A key list `v` of node `id`'s field `field` (graph_keys.c): [[frame,
 * value], ...], frames strictly increasing, values finite (`weights`: also
 * >= 0; messages say "weight" instead of "value"). *keys gets key_count
 * (frame, value) pairs; it is set as soon as allocated and is the caller's
 * (freed with the node) on failure too. SSK_ERROR_GRAPH (a message naming
 * the node, the field and the key at fault), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_graph_parse_keys(struct json_object *v, const char *id, const char *field,
                                bool weights, float **keys, uint32_t *key_count, ssk_error *err);

/* Spring node (graph_spring.c). A spring node's parameters before its
 * fields: ssk_spring_params_default, with an automatic threshold written
 * as 0 (springskin.h: any value <= 0 means automatic; the document allows 0
 * only). */
void ssk_graph_spring_defaults(ssk_spring_params *p);
/* The fields of spring node `n` (id set) from its object `obj`, whose
 * field names parse_node has checked (Toothman 2020, 4.2, 5.2): the
 * defaults, then the fields given; stiffness maps and edit rows are
 * checked against g->vertex_count. Ranges only; stability is
 * ssk_spring_create's check. SSK_ERROR_GRAPH (a message naming the node
 * and field), SSK_ERROR_OUT_OF_MEMORY; on failure `n` owns what was parsed
 * (node_free frees it). */
ssk_status ssk_graph_parse_spring(ssk_graph *g, ssk_graph_node *n, struct json_object *obj,
                                  ssk_error *err);
/* Deep copy of a spring node's maps and edits into `d` (a shallow copy of
 * `s` whose map and edit pointers are cleared), re-pointing d->spring and
 * the edits at the copies; maps hold `vertex_count` floats.
 * SSK_ERROR_OUT_OF_MEMORY (no message), else SSK_OK; on failure `d` owns
 * what was copied so far. */
ssk_status ssk_graph_spring_copy(ssk_graph_node *d, const ssk_graph_node *s, uint32_t vertex_count);
/* Adds the spring node's fields to its object `o`, all written (defaults
 * included), in the order of docs/deformer-graph.md; false when out of
 * memory (`o` then holds part of them). */
bool ssk_graph_spring_to_json(const ssk_graph *g, const ssk_graph_node *n, struct json_object *o);

/* Shared readers (graph_spring.c). The index of `name` among name_of(0 ..
 * count - 1), -1 when absent. */
int ssk_graph_find_name(const char *name, const char *(*name_of)(int), int count);
/* An integer in [lo, hi], written as a JSON integer (2.0 is not one), of
 * node `id`'s field `field`. SSK_ERROR_GRAPH naming both. */
ssk_status ssk_graph_get_integer(struct json_object *v, const char *id, const char *field,
                                 int64_t lo, int64_t hi, int64_t *out, ssk_error *err);
/* An optional name field of `obj`: *out unchanged when absent. */
ssk_status ssk_graph_get_name(struct json_object *obj, const char *id, const char *field,
                              const char *(*name_of)(int), int count, int *out, ssk_error *err);
/* The index of the rig bone `name` (graph.c), -1 when absent. */
int32_t ssk_graph_find_bone(const ssk_graph *g, const char *name);

/* Implicit node (graph_implicit.c; Vaillant 2015, 4.5-4.6; issue #20).
 * Whether `field` is one of its fields. */
bool ssk_graph_implicit_field(const char *field);
/* The fields of implicit node `n` from `obj` (ssk_implicit_params_default,
 * then the fields given): "operator" (the default operator's name),
 * "operators" ({bone name: operator name}, the joint between the bone and
 * its parent), "iterations", "sigma", "contact_angle",
 * "smoothing_iterations", "diffusion_iterations", "bulge", "tracking"
 * ("independent" or "elastic"), "substep_angle", "relaxation_iterations".
 * SSK_ERROR_GRAPH (naming the node and field), SSK_ERROR_OUT_OF_MEMORY; on
 * failure `n` owns what was parsed. */
ssk_status ssk_graph_parse_implicit(ssk_graph *g, ssk_graph_node *n, struct json_object *obj,
                                    ssk_error *err);
/* Deep copy of the joint operators into `d` (a shallow copy of `s`).
 * SSK_ERROR_OUT_OF_MEMORY (no message) or SSK_OK. */
ssk_status ssk_graph_implicit_copy(ssk_graph_node *d, const ssk_graph_node *s,
                                   uint32_t bone_count);
/* Adds the node's fields to `o`, all written; false when out of memory. */
bool ssk_graph_implicit_to_json(const ssk_graph *g, const ssk_graph_node *n,
                                struct json_object *o);

/* Cage node (graph_cage.c; Corda et al. 2020; issue #21). Whether `field`
 * is one of its fields ("vertices", "triangles", "edited"). */
bool ssk_graph_cage_field(const char *field);
/* The fields of cage node `n` from `obj`, all required: "vertices" (c
 * [x, y, z], rig space), "triangles" ([a, b, c] indices below c) and
 * "edited" (c [x, y, z]); the rest cage checked closed, consistently
 * oriented and free of degenerate triangles (ssk_cage_check).
 * SSK_ERROR_GRAPH (naming the node and field), SSK_ERROR_OUT_OF_MEMORY; on
 * failure `n` owns what was parsed. */
ssk_status ssk_graph_parse_cage(ssk_graph *g, ssk_graph_node *n, struct json_object *obj,
                                ssk_error *err);
/* Deep copy of a cage node's arrays into `d` (a shallow copy of `s`;
 * nothing for other types). SSK_ERROR_OUT_OF_MEMORY (no message) or
 * SSK_OK; on failure `d` owns what was copied. */
ssk_status ssk_graph_cage_copy(ssk_graph_node *d, const ssk_graph_node *s);
/* Adds the node's fields to `o`; false when out of memory. */
bool ssk_graph_cage_to_json(const ssk_graph_node *n, struct json_object *o);
/* The graph's cage node, or NULL (graph.c; a graph has at most one). */
const ssk_graph_node *ssk_graph_cage_node(const ssk_graph *g);

#endif /* SSK_GRAPH_H */
