/*
 * internal.h — definitions shared by the core's source files; not installed.
 *
 * Stage model (core/model/, the lowest): the rig and its validation, the
 * welded topology, Assimp import and animation sampling (the scene),
 * matrix and rotation helpers, statuses and their messages. Depends on the
 * public header only; every other stage builds on it (docs/architecture.md;
 * tests/check_layers.py).
 */
#ifndef SSK_INTERNAL_H
#define SSK_INTERNAL_H

#include "springskin.h"
#include "model/parallel.h"

#include <stdbool.h>

#if defined(__GNUC__)
#define SSK_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SSK_PRINTF(fmt, args)
#endif

/* Sets err (if not NULL) to `status` and a printf-formatted message; returns
 * `status` so callers can `return ssk_error_set(...)`. */
ssk_status ssk_error_set(ssk_error *err, ssk_status status, const char *fmt, ...)
    SSK_PRINTF(3, 4);
/* Sets err to SSK_OK with an empty message; returns SSK_OK. */
ssk_status ssk_error_ok(ssk_error *err);

/* One mesh as stored in a rig (all arrays owned). */
typedef struct ssk_mesh {
    char *name;
    uint32_t vertex_count, triangle_count, influence_count, first_vertex;
    float *positions;            /* #V by 3 */
    int32_t *triangles;          /* #F by 3 */
    int32_t *bone_indices;       /* #V by K */
    float *weights;              /* #V by K, normalized */
    uint32_t *adjacency_offsets; /* #V + 1 */
    uint32_t *adjacency;
    uint32_t *vertex_triangle_offsets; /* #V + 1 */
    uint32_t *vertex_triangles;
    uint32_t *shading_triangle_offsets; /* #V + 1, welded (weld.c) */
    uint32_t *shading_triangles;        /* triangles shading each vertex */
    float object_matrix[16];     /* object -> rig */
} ssk_mesh;

/* Welded topology of a rig (weld.c); whole-rig vertex indices. */
typedef struct ssk_weld {
    float tolerance;               /* rig-space distance */
    uint32_t *point;               /* #V: representative of v's group */
    uint32_t member_count;         /* vertices with point[v] != v */
    uint32_t *members;             /* #member_count, ascending */
    uint32_t *member_meshes;       /* #member_count by 2: mesh of the member,
                                      mesh of its representative */
    uint32_t group_count;          /* groups of 2 or more vertices */
    uint32_t across_mesh_group_count;
    uint32_t hard_edge_pair_count; /* coincident pairs shaded apart */
    uint32_t *group_offsets;       /* #V + 1; non-empty for representatives */
    uint32_t *group_vertices;      /* each group ascending */
    uint32_t *adjacency_offsets;   /* #V + 1, welded adjacency */
    uint32_t *adjacency;           /* representatives */
} ssk_weld;

/* Builds rig->weld and every mesh's shading triangles from the rig's rest
 * positions, its meshes' adjacency and the descriptions' optional source
 * normals. Errors: SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_weld_build(ssk_rig *rig, const ssk_mesh_desc *meshes, ssk_error *err);
void ssk_weld_free(ssk_weld *weld);

/* Copies the representative's row onto every member row of a whole-rig
 * #V by 3 buffer of object-space positions (weld.c). objects (O_m(t)) and
 * post (its inverse), #M by 16, move a row between two meshes whose object
 * matrices differ at the frame; NULL objects: all meshes share one space. */
void ssk_weld_apply(const ssk_weld *weld, float *positions, const float *objects,
                    const float *post);

/* Breadth-first rings over the welded adjacency from `seeds` (surface_roi.c;
 * the regions of interest of 5.2 / 7.4): dist[v] = edge count from the
 * nearest seed for every vertex reached, the search stopping past ring
 * grow + 1; queue gets the reached vertices in order, and the count is
 * returned. dist (#V, all UINT32_MAX on entry) and queue (#V) are the
 * caller's; the caller resets dist over queue[0..count). A seed listed
 * twice stops the search: *duplicate is its index (else UINT32_MAX). */
uint32_t ssk_weld_rings(const ssk_weld *weld, const uint32_t *seeds, uint32_t seed_count,
                        uint32_t grow, uint32_t *dist, uint32_t *queue, uint32_t *duplicate);

typedef struct ssk_bone {
    char *name;
    int32_t parent;
    float bind_matrix[16];
    float head[3], tail[3];
} ssk_bone;

struct ssk_rig {
    uint32_t bone_count, mesh_count, vertex_count;
    uint32_t deforming_bone_count, max_influences;
    ssk_bone *bones;
    ssk_mesh *meshes;
    ssk_weld weld;
};

/* --- small row-major 4x4 helpers (mat4.c) ------------------------------ */
/* All take/return row-major float[16]; dst may alias an input. Identity,
 * product and inverse are cglm's in single precision (model/glm_bridge.h
 * converts to and from its column-major mat4); transform_point is
 * hand-written to match the shaders' operation order. */
void ssk_mat4_identity(float dst[16]);
void ssk_mat4_mul(float dst[16], const float a[16], const float b[16]);
/* Returns false (dst untouched) when |det| is below SSK_SINGULAR_EPSILON. */
bool ssk_mat4_invert(float dst[16], const float m[16]);
void ssk_mat4_transform_point(float dst[3], const float m[16], const float p[3]);
bool ssk_mat4_is_identity(const float m[16]);

/* --- rotations (rotation.c) --------------------------------------------- */
/* Orthonormal frame of the 3x3 part of row-major m that keeps the direction
 * of its Y axis (column 1), as Blender's orthogonalize_m4(m, 1); the axes
 * are returned as axes[axis][component]. A zero Y column gives zero axes. */
void ssk_orthogonalize_keep_y(float axes[3][3], const float m[16]);
/* Unit quaternion (w, x, y, z) of the rotation whose unit axes (columns)
 * are axes[0..2] (Shepperd's method, in double; hand-written on purpose,
 * see rotation.c). */
void ssk_axes_to_quat(float q[4], const float axes[3][3]);

/* v rotated by the smallest rotation taking unit a to unit b (Rodrigues;
 * opposite vectors: a half turn about an axis normal to a). dst may be v.
 * In double (stroke.c). */
#define SSK_TRANSPORT_OPPOSITE_EPSILON 1e-12
void ssk_transport3(double dst[3], const double v[3], const double a[3], const double b[3]);

/* Determinant magnitude below which a matrix counts as singular. */
#define SSK_SINGULAR_EPSILON 1e-20

/* ssk_rig_hash with a status (rig_hash.c).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_OUT_OF_MEMORY (the
 * XXH3 state). */
ssk_status ssk_rig_hash_checked(const ssk_rig *rig, uint64_t *out, ssk_error *err);

/* --- utilities (util.c) ------------------------------------------------- */
/* Whether all `count` values are finite (no NaN, no infinity). */
bool ssk_floats_finite(const float *values, size_t count);
/* Finite and at most SSK_MAX_MAGNITUDE in magnitude (inputs: issue #19). */
bool ssk_floats_bounded(const float *values, size_t count);
/* Wall clock in seconds (monotonic). */
double ssk_time_seconds(void);
/* Strdup that returns NULL on allocation failure. */
char *ssk_strdup(const char *s);

/* Output files (output_file.c): every file the core writes goes to
 * ssk_temp_path(path) ("<path>.tmp-<pid>", malloc'd; NULL when out of
 * memory; stale temporary files of dead processes for `path` are removed
 * and the new name is tracked for ssk_temp_files_remove), is flushed,
 * renamed onto `path` (or removed), then released with
 * ssk_temp_path_free(tmp) (untracked and freed; NULL allowed);
 * ssk_sync_parent_directory(path) fsyncs the directory holding `path`
 * (best effort: failures are ignored, some file systems refuse it). */
char *ssk_temp_path(const char *path);
/* Whether the last path component of `path` ends in `ext` (".pc2": a dot
 * and lowercase ASCII), compared without case ("X.PC2" has ".pc2"); a
 * name that is only the extension (".pc2") has none. */
bool ssk_path_has_extension(const char *path, const char *ext);
void ssk_temp_path_free(char *tmp);
void ssk_sync_parent_directory(const char *path);

#endif /* SSK_INTERNAL_H */
