/*
 * scene.h — the imported scene (core/model/import.c builds it, core/model/anim.c samples
 * it). Private to the core: the public API only sees the opaque ssk_scene.
 *
 * The scene keeps no Assimp object: it owns the rig, a copy of the node
 * hierarchy and copies of the animation channels, all in double precision
 * (row-major 4x4 matrices acting on column vectors, as everywhere in
 * SpringSkin; Assimp's aiMatrix4x4 has the same convention).
 */
#ifndef SSK_SCENE_H
#define SSK_SCENE_H

#include "model/internal.h"

/* Ticks per second assumed when a file stores 0 (Assimp's own default). */
#define SSK_DEFAULT_TICKS_PER_SECOND 25.0

/* ssk_animation_frame_count: floor(duration · fps + this) + 1, so a duration
 * within a ten-thousandth of a frame of a whole number of frames counts its
 * last frame: glTF stores times as float32, and 10 frames at 24 fps (0.41667
 * s) read back as 9.99999976 frames (issue #17: sampling the frame that
 * Blender keyed was refused). */
#define SSK_FRAME_COUNT_EPSILON 1e-4

/* Quaternion slerp falls back to normalized linear interpolation when the
 * cosine of the angle between the keys exceeds 1 - this (sin(angle) ~ 0). */
#define SSK_SLERP_LINEAR_EPSILON 1e-6

/* Node of the copied hierarchy. Nodes are stored in depth-first pre-order
 * (children in file order), so a node's parent always has a smaller index. */
typedef struct ssk_scene_node {
    char *name;
    int32_t parent;         /* node index, -1 for the root */
    double local[16];       /* static mTransformation, row-major */
    double translation[3];  /* decomposition local = T · R · S, used for */
    double rotation[4];     /* the kinds a channel has no key for; */
    double scale[3];        /* rotation is a unit quaternion (w, x, y, z) */
} ssk_scene_node;

typedef struct ssk_vec_key {
    double time;            /* ticks */
    double value[3];
} ssk_vec_key;

typedef struct ssk_quat_key {
    double time;            /* ticks */
    double value[4];        /* unit quaternion (w, x, y, z) */
} ssk_quat_key;

/* One node's channel; keys sorted by time (stable). */
typedef struct ssk_channel {
    uint32_t position_count, rotation_count, scale_count;
    ssk_vec_key *positions;
    ssk_quat_key *rotations;
    ssk_vec_key *scales;
} ssk_channel;

typedef struct ssk_scene_anim {
    char *name;                 /* "" when the file has none */
    double duration_ticks;
    double ticks_per_second;    /* > 0 (SSK_DEFAULT_TICKS_PER_SECOND if 0) */
    uint32_t file_channel_count;/* aiAnimation.mNumChannels */
    uint32_t channel_count;     /* channels matched to a node */
    ssk_channel *channels;      /* #channel_count */
    int32_t *node_channel;      /* #nodes: index in channels, or -1 */
} ssk_scene_anim;

struct ssk_scene {
    ssk_rig *rig;
    uint32_t node_count;
    ssk_scene_node *nodes;      /* #nodes, pre-order */
    int32_t *bone_nodes;        /* #B: node of each rig bone, or -1 */
    double *inverse_binds;      /* #B by 16: inverse of the rig's bind */
    int32_t *mesh_nodes;        /* #M: node of each rig mesh, or -1 */
    bool skinned_nodes_ignored; /* glTF, .x: skinned meshes' node transforms
                                   are ignored (import.c) */
    int32_t armature_node;      /* node whose space is rig space, or -1 for
                                   the root's parent space (import.c) */
    double rig_to_scene[16];    /* G_static(armature node): rig -> scene */
    uint32_t source_max_influences;  /* most influences on one vertex in the
                                        file (before SSK_MAX_INFLUENCES) */
    uint32_t capped_vertex_count;    /* vertices that lost their smallest
                                        influences to SSK_MAX_INFLUENCES */
    uint32_t nodeless_bone_count;    /* bones that no node carries */
    uint32_t *nodeless_dropped;      /* #B: vertices whose influence of the
                                        bone was dropped (0 for bones with a
                                        node); NULL when none */
    float **mesh_uvs;           /* #M: #V by 2 texture coordinates of the
                                   mesh's first UV channel (u, v), or NULL
                                   when it has none */
    uint32_t mesh_uv_count;     /* entries of mesh_uvs (#M once allocated) */
    uint32_t animation_count;
    ssk_scene_anim *animations;
};

/* Texture coordinates of rig mesh `mesh` (#V by 2, owned by the scene), or
 * NULL when the mesh has none or `mesh` is out of range (import.c). */
const float *ssk_scene_mesh_uvs(const ssk_scene *scene, uint32_t mesh);

/* Global transforms G(node, t) of every node at t_ticks of `anim`, #nodes
 * by 16 into dst (anim.c). */
void ssk_scene_globals(double *dst, const ssk_scene *scene, const ssk_scene_anim *anim,
                       double t_ticks);

/* --- double-precision helpers (anim.c) --------------------------------- */
void ssk_mat4d_identity(double dst[16]);
/* dst = a · b; dst may alias an input. */
void ssk_mat4d_mul(double dst[16], const double a[16], const double b[16]);
/* Returns false (dst untouched) when |det| <= SSK_SINGULAR_EPSILON. */
bool ssk_mat4d_invert(double dst[16], const double m[16]);
/* dst = T · R · S from a translation, a unit quaternion (w, x, y, z) and a
 * scale. */
void ssk_mat4d_compose(double dst[16], const double t[3], const double q[4],
                       const double s[3]);

#endif /* SSK_SCENE_H */
