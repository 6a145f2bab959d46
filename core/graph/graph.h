/*
 * Stage graph (core/graph/, above bind): the deformer-graph document
 * (graph.c), the deformer that compiles it to kernel calls on a backend
 * (deformer.c), the bake driver (bake.c) and ssk_scene_check (check.c).
 *
 * graph.h — the parsed deformer graph (internal representation shared by
 * graph.c, which parses, validates and serializes it, and deformer.c,
 * which runs it).
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
    int length_adjust;       /* IRS, default 1 */
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

/* The radial amount at `frame`: linear interpolation of the keys, clamped
 * outside them; `amount` without keys. */
float ssk_graph_node_amount(const ssk_graph_node *node, double frame);

/* Deep copy (the deformer keeps its own). */
ssk_status ssk_graph_copy(ssk_graph **out, const ssk_graph *src, ssk_error *err);

#endif /* SSK_GRAPH_H */
