/*
 * springskin.h — the whole public C API of the SpringSkin core.
 *
 * Conventions used by every function below
 * -----------------------------------------
 * - Matrices are float32[16], ROW-MAJOR, acting on column vectors:
 *   p' = M · [p, 1]; the translation is in elements 3, 7 and 11. This is the
 *   memory layout of a C-ordered numpy (4,4) array and of Blender's
 *   `Matrix` rows.
 * - Positions are float32 triples (x, y, z), in the units of the source file
 *   (Blender: meters). Arrays "#V by 3" are V contiguous triples.
 * - Buffers passed in are caller-owned and only read during the call unless a
 *   function says it keeps them. Destination buffers come first and are
 *   caller-allocated with the documented size.
 * - Every fallible function returns an `ssk_status` and, when `err` is not
 *   NULL, fills it with the same status and a readable message. Nothing in
 *   the core aborts or prints; there is no global state.
 *
 * Spaces
 * ------
 * - Mesh object space: where a mesh's rest positions live and where deformed
 *   positions are written.
 * - Rig space: the space of the skeleton (bind matrices, heads, tails) and of
 *   the skinning matrices. Each mesh has an object matrix (object -> rig
 *   space); blending happens in rig space, exactly as Blender's Armature
 *   modifier blends in armature space (its premat/postmat).
 *
 * Skinning matrix of bone b: S_b = G_b(pose) · inverse(bind_b), rig space.
 * A mesh m is deformed as  v' = inverse(O_m(t)) · blend_b(S_b) · O_m · v,
 * where O_m is the mesh's rest object matrix and O_m(t) its object matrix at
 * the frame (equal to O_m unless the caller passes per-frame object matrices).
 */
#ifndef SPRINGSKIN_H
#define SPRINGSKIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SSK_VERSION_MAJOR 0
#define SSK_VERSION_MINOR 1
#define SSK_VERSION_PATCH 0
#define SSK_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------------ */
/* Status codes: enum and message strings generated from one X-macro.        */
/* ------------------------------------------------------------------------ */

#define SSK_STATUS_LIST(X)                                                   \
    X(SSK_OK, "ok")                                                          \
    X(SSK_ERROR_INVALID_ARGUMENT, "invalid argument")                        \
    X(SSK_ERROR_OUT_OF_MEMORY, "out of memory")                              \
    X(SSK_ERROR_NONFINITE, "non-finite value (NaN or infinity)")             \
    X(SSK_ERROR_EMPTY_MESH, "empty mesh")                                    \
    X(SSK_ERROR_TRIANGLE_INDEX, "triangle index out of range")               \
    X(SSK_ERROR_BONE_INDEX, "bone index out of range")                       \
    X(SSK_ERROR_NEGATIVE_WEIGHT, "negative skin weight")                     \
    X(SSK_ERROR_PARENT_INDEX, "bone parent index out of range")              \
    X(SSK_ERROR_PARENT_CYCLE, "cycle in bone parents")                       \
    X(SSK_ERROR_IO, "file input/output error")                               \
    X(SSK_ERROR_IMPORT, "file could not be imported")                        \
    X(SSK_ERROR_NO_SKELETON, "no skeleton")                                  \
    X(SSK_ERROR_NO_ANIMATION, "no animation")                                \
    X(SSK_ERROR_FRAME_RANGE, "bad frame range")                              \
    X(SSK_ERROR_UNSUPPORTED, "unsupported")                                  \
    X(SSK_ERROR_GL_UNAVAILABLE, "no usable OpenGL 4.3 context (EGL)")         \
    X(SSK_ERROR_GL_SHADER, "GLSL shader compile or link failure")            \
    X(SSK_ERROR_GL, "OpenGL error")                                          \
    X(SSK_ERROR_BIND, "attachment binding failed")                           \
    X(SSK_ERROR_BINDING_MISMATCH, "binding does not match the rig")          \
    X(SSK_ERROR_GRAPH, "invalid deformer graph")                             \
    X(SSK_ERROR_SPRING_UNSTABLE, "spring parameters beyond the stability limit") \
    X(SSK_ERROR_SPRING_DIVERGED, "spring solver diverged")

typedef enum ssk_status {
#define SSK_STATUS_ENUM_(name, message) name,
    SSK_STATUS_LIST(SSK_STATUS_ENUM_)
#undef SSK_STATUS_ENUM_
    SSK_STATUS_COUNT
} ssk_status;

/* Upper bound of an error message, terminating NUL included. */
#define SSK_ERROR_MESSAGE_SIZE 512

/* Status plus a readable, specific message ("mesh 'Torso': vertex 12 ...").
 * Zero-initialize or pass NULL where the caller does not want the message. */
typedef struct ssk_error {
    ssk_status status;
    char message[SSK_ERROR_MESSAGE_SIZE];
} ssk_error;

/* Enumerator name of a status ("SSK_ERROR_BONE_INDEX"); "SSK_UNKNOWN" when
 * out of range. Static storage, never NULL. */
const char *ssk_status_name(ssk_status status);
/* Generic description of a status ("bone index out of range"). Static
 * storage, never NULL. */
const char *ssk_status_message(ssk_status status);
/* Library version, SSK_VERSION_STRING of the build. */
const char *ssk_version_string(void);

/* Interrupted writes (issue #19). Every file the core writes goes to
 * "<path>.tmp-<pid>" first and is renamed onto `path` when complete; the
 * core keeps the names of the temporary files being written (a second
 * process-wide resource, like the thread pool: up to
 * SSK_TEMP_FILES_TRACKED at once). ssk_temp_files_remove unlinks them: it
 * is async-signal-safe, for a host's handler of SIGINT, SIGTERM or
 * SIGXFSZ (the CLI installs one, then dies of the signal as usual).
 * Opening a new temporary file for `path` also removes the stale
 * "<path>.tmp-<pid>" files of processes that no longer exist. */
#define SSK_TEMP_FILES_TRACKED 64u
void ssk_temp_files_remove(void);

/* Progress of a long call: `done` work units out of `total` (a bake: frames;
 * a CoR precomputation: its phases and vertices). Called on the calling
 * thread only, `done` never decreasing, the last call with done == total. */
typedef void (*ssk_progress_fn)(void *user, uint32_t done, uint32_t total);

/* ------------------------------------------------------------------------ */
/* Threading of the CPU backend (issue #17).                                 */
/* ------------------------------------------------------------------------ */

/* The CPU kernels cut their rows into chunks whose sizes depend on the row
 * count only; the calling thread and a process-wide pool of workers (the
 * core's one process-wide resource, started on first use) claim them.
 * Every sum is taken per chunk, then in chunk order, so the results are
 * the same bits with any thread count and either waiting policy; a mesh
 * small enough for one chunk runs on the calling thread alone. Idle
 * workers spin at most spin_microseconds, then sleep on a condition
 * variable: no CPU time is taken from a host's own threads (Blender,
 * Maya) once a frame is done (core/model/parallel.c says why this is not
 * OpenMP). */
#define SSK_THREADING_DEFAULT_SPIN_MICROSECONDS 50u

typedef struct ssk_threading {
    /* threads a loop may use, the caller included; 0 (default): one per
     * CPU this process may run on (sched_getaffinity); at most 256 */
    uint32_t threads;
    /* how long an idle worker (and a caller waiting for a worker's last
     * chunk) spins before it sleeps, microseconds; default 50 (keeps the
     * workers awake between the passes of one spring solve), 0: sleep at
     * once; at most 1,000,000 */
    uint32_t spin_microseconds;
} ssk_threading;

/* The defaults: threads 0, spin SSK_THREADING_DEFAULT_SPIN_MICROSECONDS. */
void ssk_threading_default(ssk_threading *out);
/* Applies `threading` (the workers are stopped and start again on the next
 * parallel loop). Waits for a loop running on another thread to end.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, threads > 256, spin above
 * 1 s, called from inside a loop). */
ssk_status ssk_threading_set(const ssk_threading *threading, ssk_error *err);
/* The settings in use, with threads resolved to the actual count. */
void ssk_threading_get(ssk_threading *out);

/* ------------------------------------------------------------------------ */
/* Rig model: meshes, skeleton, skin weights.                                */
/* ------------------------------------------------------------------------ */

/* Total weight at or below which a vertex counts as unweighted and stays at
 * its rest position (the threshold of Blender's armature_deform). */
#define SSK_WEIGHT_EPSILON 1e-4f
/* Largest magnitude of an input value (issue #19): rig positions, bind,
 * skinning and object matrices, graph numbers, binding scale vectors and
 * centers of rotation. Squares of such values, summed and scaled by the
 * kernels, stay far from float32's 3.4e38. Larger finite values are
 * refused like non-finite ones (SSK_ERROR_NONFINITE, SSK_ERROR_GRAPH, or
 * a corrupt binding file), naming the value. */
#define SSK_MAX_MAGNITUDE 1e15f

typedef struct ssk_rig ssk_rig;

/* Skeleton of #B bones, all in rig space.
 * - names: #B NUL-terminated strings, or NULL for "bone_<i>". Copied.
 * - parents: #B int32, -1 for a root, else an index in [0, #B). Required.
 * - bind_matrices: #B by 16 row-major bone rest transforms (Blender's
 *   Bone.matrix_local / the inverse of Assimp's offset matrix). Required.
 * - heads, tails: #B by 3 bone segment ends (head -> tail). Either may be
 *   NULL: the head then defaults to the bind translation and the tail to the
 *   head plus the bind Y axis scaled by the distance to the nearest child
 *   head (or 1/10 of the skeleton extent for leaves). */
typedef struct ssk_skeleton_desc {
    uint32_t bone_count;
    const char *const *names;
    const int32_t *parents;
    const float *bind_matrices;
    const float *heads;
    const float *tails;
} ssk_skeleton_desc;

/* One mesh of a rig.
 * - name: copied; NULL gives "mesh_<i>".
 * - positions: #V by 3 float32 rest positions, mesh object space. Required,
 *   #V >= 1.
 * - triangles: #F by 3 int32 vertex indices in [0, #V). May be NULL with
 *   #F = 0 (a point cloud: no normals, no adjacency).
 * - influence_count: K, influences stored per vertex (0 allowed: the mesh
 *   stays at rest).
 * - bone_indices: #V by K int32 bone indices in [0, #B); a padding entry
 *   with weight exactly 0 may hold any index (-1 is customary) and is stored
 *   as bone 0 with weight 0.
 * - weights: #V by K float32 skin weights >= 0. Normalized to sum 1 per
 *   vertex at creation; a vertex whose sum is <= SSK_WEIGHT_EPSILON keeps
 *   all-zero weights and stays at rest.
 * - object_matrix: 16 floats, mesh object space -> rig space, or NULL for
 *   the identity.
 * - normals: #V by 3 float32 source vertex normals (object space, any
 *   length), or NULL. Read at creation only, to keep hard edges: coincident
 *   vertices of the mesh whose source normals differ by more than
 *   SSK_WELD_HARD_EDGE_DEGREES keep separate normals (see ssk_rig_weld). */
typedef struct ssk_mesh_desc {
    const char *name;
    uint32_t vertex_count;
    const float *positions;
    uint32_t triangle_count;
    const int32_t *triangles;
    uint32_t influence_count;
    const int32_t *bone_indices;
    const float *weights;
    const float *object_matrix;
    const float *normals;
} ssk_mesh_desc;

/* Creates a rig: validates, copies every array, normalizes weights, builds
 * vertex adjacency (CSR over triangle edges) and vertex-to-triangle CSR, and
 * welds coincident vertices (ssk_rig_weld).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL required pointer, zero bones
 * with weighted meshes, more than SSK_MAX_INFLUENCES), SSK_ERROR_EMPTY_MESH,
 * SSK_ERROR_NONFINITE (position, weight or matrix), SSK_ERROR_TRIANGLE_INDEX,
 * SSK_ERROR_BONE_INDEX, SSK_ERROR_NEGATIVE_WEIGHT, SSK_ERROR_PARENT_INDEX,
 * SSK_ERROR_PARENT_CYCLE, SSK_ERROR_OUT_OF_MEMORY. On error *out_rig is NULL.
 * The rig is immutable afterwards and may be shared by several deformers and
 * threads. Destroy with ssk_rig_destroy. */
#define SSK_MAX_INFLUENCES 64
ssk_status ssk_rig_create(ssk_rig **out_rig, const ssk_skeleton_desc *skeleton,
                          const ssk_mesh_desc *meshes, uint32_t mesh_count,
                          ssk_error *err);
/* NULL is allowed. */
void ssk_rig_destroy(ssk_rig *rig);

uint32_t ssk_rig_bone_count(const ssk_rig *rig);
uint32_t ssk_rig_mesh_count(const ssk_rig *rig);
/* Sum of #V over all meshes: the row count of whole-rig position buffers,
 * where meshes are concatenated in mesh order. */
uint32_t ssk_rig_vertex_count(const ssk_rig *rig);
/* Bones with a non-zero normalized weight on at least one vertex. */
uint32_t ssk_rig_deforming_bone_count(const ssk_rig *rig);
/* Largest number of non-zero influences on one vertex, over all meshes. */
uint32_t ssk_rig_max_influences(const ssk_rig *rig);
/* Index of the bone with this exact name, or -1. */
int32_t ssk_rig_find_bone(const ssk_rig *rig, const char *name);

/* Read-only view of a mesh; every pointer is owned by the rig and valid
 * until ssk_rig_destroy. */
typedef struct ssk_mesh_view {
    const char *name;
    uint32_t vertex_count;          /* #V */
    uint32_t triangle_count;        /* #F */
    uint32_t influence_count;       /* K */
    uint32_t first_vertex;          /* row of vertex 0 in whole-rig buffers */
    const float *positions;         /* #V by 3, object space */
    const int32_t *triangles;       /* #F by 3 */
    const int32_t *bone_indices;    /* #V by K */
    const float *weights;           /* #V by K, normalized (or all zero) */
    const uint32_t *adjacency_offsets; /* #V+1: neighbors of v are */
    const uint32_t *adjacency;         /* adjacency[offsets[v]..offsets[v+1]) */
    const uint32_t *vertex_triangle_offsets; /* #V+1, CSR as above */
    const uint32_t *vertex_triangles;        /* triangles around a vertex */
    const float *object_matrix;     /* 16, object -> rig space */
} ssk_mesh_view;

/* Welded topology. Vertices of a rig that coincide at rest (rig space,
 * within SSK_WELD_RELATIVE_TOLERANCE of the rest bounding-box diagonal, in
 * one mesh or across meshes, closed transitively) are one surface point:
 * - the methods that work from the binding or from neighbors (rigid, IRS,
 *   radial, spring, CoR) give them the same position: after each such
 *   kernel the backend copies the group's representative (its smallest
 *   whole-rig index) onto the others, on CPU and GL, so the largest
 *   distance between coincident vertices is 0 (within one mesh; between
 *   two meshes with different object matrices, the rounding of moving a
 *   float through rig space). LBS and DQS follow the skin weights alone,
 *   as Blender's Armature modifier does: copies that an importer made at a
 *   seam have the same weights and come out identical; coincident vertices
 *   that the file gives different weights separate as in Blender;
 * - whatever uses neighbors uses the welded adjacency (attachment smoothing
 *   and reprojection, spring rest data and forces, the CoR integration mesh);
 * - vertex normals sum the triangles around every coincident vertex of the
 *   same mesh, except across a hard edge: coincident vertices whose source
 *   normals (ssk_mesh_desc.normals) differ by more than
 *   SSK_WELD_HARD_EDGE_DEGREES keep their own. Separate meshes keep their
 *   own normals, as separate objects shade.
 * Vertex order and counts are unchanged. */
#define SSK_WELD_RELATIVE_TOLERANCE 1e-5
#define SSK_WELD_HARD_EDGE_DEGREES 1.0

/* Read-only view of a rig's weld; arrays owned by the rig, whole-rig vertex
 * indices. */
typedef struct ssk_weld_view {
    float tolerance;                 /* rig-space distance used */
    uint32_t group_count;            /* groups of 2 or more coincident vertices */
    uint32_t member_count;           /* vertices that are not their group's
                                        representative */
    uint32_t across_mesh_group_count;/* groups spanning 2 or more meshes */
    uint32_t hard_edge_pair_count;   /* coincident pairs of one mesh shaded
                                        apart (a hard edge of the source) */
    const uint32_t *points;          /* #V: representative of each vertex */
    const uint32_t *members;         /* #member_count, ascending */
    const uint32_t *adjacency_offsets; /* #V + 1: welded neighbors of v are */
    const uint32_t *adjacency;         /* adjacency[offsets[v]..offsets[v+1]),
                                          representatives, ascending */
} ssk_weld_view;

/* Errors: SSK_ERROR_INVALID_ARGUMENT (NULL). */
ssk_status ssk_rig_weld(const ssk_rig *rig, ssk_weld_view *out, ssk_error *err);

/* Errors: SSK_ERROR_INVALID_ARGUMENT when mesh >= mesh count. */
ssk_status ssk_rig_mesh(const ssk_rig *rig, uint32_t mesh, ssk_mesh_view *out,
                        ssk_error *err);

/* Read-only view of a bone (rig space); pointers owned by the rig. */
typedef struct ssk_bone_view {
    const char *name;
    int32_t parent;                 /* -1 for a root */
    const float *bind_matrix;       /* 16, row-major */
    const float *head;              /* 3 */
    const float *tail;              /* 3 */
} ssk_bone_view;

/* Errors: SSK_ERROR_INVALID_ARGUMENT when bone >= bone count. */
ssk_status ssk_rig_bone(const ssk_rig *rig, uint32_t bone, ssk_bone_view *out,
                        ssk_error *err);

/* Validates caller matrices: #count by 16 finite floats.
 * Errors: SSK_ERROR_NONFINITE naming `what` and the matrix index. */
ssk_status ssk_matrices_validate(const float *matrices, uint32_t count,
                                 const char *what, ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Kernels: pure functions over caller-owned arrays (CPU, all cores).        */
/* ------------------------------------------------------------------------ */

/* Linear blend skinning (Magnenat-Thalmann et al. 1988; Blender's
 * armature_deform without Preserve Volume):
 *   v' = v + sum_i w_i (M_{j_i} v - v) / sum_i w_i,   v' = v if sum <= eps.
 * - dst: #V by 3 output (may not alias positions).
 * - positions: #V by 3 input, in the space of the matrices.
 * - bone_indices, weights: #V by K, indices in [0, #B) (not checked here:
 *   the rig validated them).
 * - matrices: #B by 16 row-major skinning matrices.
 * parallel over vertices (ssk_threading). */
void ssk_lbs_deform(float *dst, const float *positions, uint32_t vertex_count,
                    const int32_t *bone_indices, const float *weights,
                    uint32_t influence_count, const float *matrices,
                    uint32_t bone_count);

/* A bone's dual quaternion in Blender's layout (BLI DualQuat): real part
 * (w, x, y, z), dual part (w, x, y, z), a row-major 3x4 scale/shear matrix
 * applied before the rigid part, and its weight (0 when the bone carries no
 * scale). 24 floats, so arrays of it are 16-byte aligned. */
typedef struct ssk_dual_quat {
    float real[4];
    float dual[4];
    float scale[12];
    float scale_weight;
    float pad_[3];
} ssk_dual_quat;

/* Converts skinning matrices to dual quaternions as Blender 3.4's
 * mat4_to_dquat(basemat = bind matrix, mat = skinning matrix) does: when the
 * skinning matrix is not orthonormal, has a negative determinant, or its
 * composition with the bind matrix has scale different from 1 by more than
 * 1e-4, the rotation is taken from the Y-axis-preserving orthogonalization of
 * S·bind and the rest goes to the scale matrix bind·Sc·inverse(bind).
 * - dst: #B dual quaternions.
 * - skinning, bind: #B by 16 row-major, rig space.
 * Errors: SSK_ERROR_NONFINITE when a bind matrix is singular. */
ssk_status ssk_dqs_prepare(ssk_dual_quat *dst, const float *skinning,
                           const float *bind, uint32_t bone_count,
                           ssk_error *err);

/* Dual quaternion skinning (Kavan et al. 2008) as Blender 3.4's Armature
 * modifier with Preserve Volume: per vertex, bone dual quaternions are summed
 * with weight w_i, negated when the bone's real part points away from the
 * running sum (dot < 0); scale matrices of scaled bones are summed with
 * positive weights and the remainder filled with identity; the sum is
 * divided by the total weight, then applied as scale, then rotation and
 * translation divided by |real|^2 (BLI mul_v3m3_dq). Vertices with total
 * weight <= SSK_WEIGHT_EPSILON stay at rest.
 * - pre, post: 16 floats or NULL (identity): v' = post · dqs(pre · v).
 * Other arguments as ssk_lbs_deform. parallel over vertices (ssk_threading). */
void ssk_dqs_deform(float *dst, const float *positions, uint32_t vertex_count,
                    const int32_t *bone_indices, const float *weights,
                    uint32_t influence_count, const ssk_dual_quat *dual_quats,
                    uint32_t bone_count, const float *pre, const float *post);

/* Area-weighted vertex normals: each triangle's unnormalized face normal
 * (cross product, twice its area) is added to its three vertices, then each
 * sum is normalized; a vertex with no triangle, or a zero sum, gets (0,0,0).
 * - dst: #V by 3 unit normals.
 * - positions: #V by 3.
 * - triangles: #F by 3 (indices already validated).
 * - vertex_triangle_offsets, vertex_triangles: the vertex-to-triangle CSR of
 *   ssk_mesh_view (lets the kernel gather per vertex, in parallel). */
void ssk_normals_compute(float *dst, const float *positions,
                         uint32_t vertex_count, const int32_t *triangles,
                         const uint32_t *vertex_triangle_offsets,
                         const uint32_t *vertex_triangles);

/* Skinning methods (a deformer's one-node graph, or a skinning node's). */
typedef enum ssk_method {
    SSK_METHOD_LBS = 0,   /* linear blend skinning */
    SSK_METHOD_DQS = 1,   /* dual quaternion skinning (Blender Preserve Volume) */
    SSK_METHOD_RIGID = 2, /* rigid attachment skinning (Toothman 2020, 4.1) */
    SSK_METHOD_IRS = 3,   /* incremental rotation skinning (Toothman 2020, 4.1) */
    SSK_METHOD_SPRING = 4, /* rigid attachment, then the spring deformer with
                              its defaults (Toothman 2020, 4.2) */
    SSK_METHOD_COR = 5,   /* optimized centers of rotation (Le & Hodgins
                             2016, Algorithm 1; CoRs from the binding) */
    SSK_METHOD_IMPLICIT = 6, /* DQS, then implicit skinning's tracking
                                (Vaillant 2015, 4.6.2) */
    SSK_METHOD_COUNT
} ssk_method;

/* The linear part of a frame's LBS or DQS skinning, applied to vectors:
 * offsets d added to the rest positions before skinning (shape keys,
 * correctives, the modifiers a Blender stack runs before its Armature
 * modifier). Skinning is affine per vertex, so skinning p + d gives the
 * skinned p plus this function's d':
 *   LBS: d' = post3 (sum_i w_i S3_{j_i}) pre3 d
 *   DQS: d' = post3 (len2 R A) pre3 d
 * with S3 the 3x3 parts of the skinning matrices, w the rig's normalized
 * weights, R, A, len2 the vertex's blended rotation, scale matrix and
 * 1/|q|^2 of ssk_dqs_deform (Kavan et al. 2008; Blender's mul_v3m3_dq
 * without the translation), pre3 = the 3x3 part of the mesh's rest object
 * matrix, post3 = that of the inverse of this frame's. Exact: the same
 * kernels as the deform, on translation-free matrices.
 * - dst: N by 3 float32 (may not alias vectors).
 * - rows: N whole-rig vertex rows, any order, repeats allowed.
 * - vectors: N by 3 float32, each row's mesh object space (as the rest
 *   positions), model units.
 * - skinning: #B by 16 row-major rig space (as ssk_deformer_deform).
 * - object_matrices: #M by 16 this frame's object -> rig matrices, or NULL
 *   for the rest ones.
 * - method: SSK_METHOD_LBS or SSK_METHOD_DQS.
 * A vertex without weight (sum <= SSK_WEIGHT_EPSILON) keeps its vector, as
 * it keeps its position. Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, another
 * method, a row >= #V), SSK_ERROR_NONFINITE (a vector, a singular object
 * matrix), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_rig_skin_vectors(float *dst, const ssk_rig *rig, const uint32_t *rows,
                                uint32_t row_count, const float *vectors,
                                const float *skinning, const float *object_matrices,
                                ssk_method method, ssk_error *err);

/* Where rigid and IRS skinning take each vertex's attachment (the
 * "attachment" field of a rigid or irs skinning node):
 * - WEIGHTS (default): one attachment per skin weight influence, each
 *   deformed by the method and blended with the skin weights
 *   (ssk_attach_weights_deform; a departure from the paper for real
 *   characters, core/kernels/attach_weights.c); vertices without skin
 *   weight (and every vertex of a rig without weights) fall back to the
 *   binding;
 * - BINDING: the attachment binding's one bone per vertex (Toothman 2020,
 *   ch. 3 and 4.1, as the paper does). */
typedef enum ssk_attachment_mode {
    SSK_ATTACHMENT_WEIGHTS = 0,
    SSK_ATTACHMENT_BINDING = 1,
    SSK_ATTACHMENT_MODE_COUNT
} ssk_attachment_mode;

/* ------------------------------------------------------------------------ */
/* Skinning with optimized centers of rotation (Le & Hodgins 2016).          */
/* ------------------------------------------------------------------------ */

/* Every weighted vertex p gets a center of rotation (CoR) p*, computed once
 * from the rest pose and the skin weights (Eq. 3c, discretized as Eq. 4):
 * the similarity-weighted mean of the surface,
 *   p* = sum_t s(w_p, w_t) c_t a_t / sum_t s(w_p, w_t) a_t,
 * over the triangles t of the integration mesh (the rig's triangles, each
 * bisected until the l2 weight distance of every edge is below epsilon),
 * c_t the centroid, a_t the area and w_t the mean of the corner weights of
 * t, with the similarity of Eq. 1
 *   s(w_p, w_v) = sum_{j != k} w_pj w_pk w_vj w_vk
 *                 exp(-(w_pj w_vk - w_pk w_vj)^2 / sigma^2).
 * At runtime (Algorithm 1) the vertex turns by R, the quaternion linear
 * blend (QLERP) of its bones' rotations, about its CoR moved by LBS:
 *   v' = R v + t,  t = R~ p* + t~ - R p*,  [R~ t~] = sum_i w_i [R_i t_i].
 * A vertex whose similarity integral is zero (one influence, or no
 * triangle sharing two of its bones) has no CoR and is skinned by LBS,
 * which is exact for one bone. CoRs live in rig space. */

/* Parameters of the precomputation; ssk_cor_params_default gives the
 * paper's (sigma, epsilon, omega, cutoff) = (0.1, 0.1, 0.1, 1e-6) (sec. 4).
 * - sigma: width of Eq. 1's kernel, in [SSK_COR_MIN_SIGMA,
 *   SSK_COR_MAX_SIGMA].
 * - epsilon: integration mesh subdivision threshold on the l2 weight
 *   distance of an edge's ends, in [SSK_COR_MIN_EPSILON, SSK_COR_MAX_EPSILON]
 *   (the maximum exceeds sqrt 2, the largest distance of two normalized
 *   weight vectors: no subdivision).
 * - omega, cutoff: the seed radius in weight space (l2) and the similarity
 *   cutoff of the paper's breadth-first search, in (0, SSK_COR_MAX_OMEGA]
 *   and (0, SSK_COR_MAX_CUTOFF]. Checked, stored in bindings, and no longer
 *   used: since issue #18 Eq. 4 is summed over every leaf through cells of
 *   weight space (core/bind/cor_cells.c), on the CPU or (the vertices'
 *   sums) on GL; neither searches. */
typedef struct ssk_cor_params {
    float sigma;
    float epsilon;
    float omega;
    float cutoff;
    /* progress of the precomputation (issue #18), or NULL: SSK_COR_PROGRESS
     * units in all (the leaves 10%, the cells 10%, the vertices 80%); not
     * stored in bindings */
    ssk_progress_fn progress;
    void *progress_user;
} ssk_cor_params;

/* Work units of ssk_cor_params.progress. */
#define SSK_COR_PROGRESS 1000u

#define SSK_COR_MIN_SIGMA 1e-3f
#define SSK_COR_MAX_SIGMA 10.0f
#define SSK_COR_MIN_EPSILON 0.02f
#define SSK_COR_MAX_EPSILON 2.0f
#define SSK_COR_MAX_OMEGA 2.0f
#define SSK_COR_MAX_CUTOFF 0.01f

/* The defaults above. */
void ssk_cor_params_default(ssk_cor_params *out);
/* Errors: SSK_ERROR_INVALID_ARGUMENT naming the parameter, its value and
 * its range (NaN included). */
ssk_status ssk_cor_params_check(const ssk_cor_params *params, ssk_error *err);

/* What a precomputation did. */
typedef struct ssk_cor_stats {
    uint32_t vertex_count;           /* #V */
    uint32_t cor_count;              /* vertices given a CoR (flag 1) */
    uint32_t cluster_count;          /* occupied weight-space cells (CPU, core/bind/cor_cells.c) */
    uint32_t renormalized_count;     /* vertices whose weights were rescaled */
    uint64_t integration_triangles;  /* triangles of the subdivided mesh */
    uint64_t evaluated_triangles;    /* weight-space cells visited (representatives) */
    double seconds;                  /* wall time of the call */
} ssk_cor_stats;

/* Centers of rotation of one triangle mesh on the CPU (all cores): Eq. 1
 * and Eq. 4 over the subdivided integration mesh (sec. 3.2), every leaf
 * counted, summed per bone pair over cells of weight space (issue #18,
 * core/bind/cor_cells.c: within 1e-4 of the diagonal of the exact sum,
 * linear in the mesh: 0.5 s for 56k vertices of a Rigify body).
 * - dst_centers: #V by 3, the CoR of each vertex in the space of
 *   `positions`; a vertex without CoR gets its own position (Algorithm 1
 *   then reduces to LBS for it).
 * - dst_flags: #V bytes, 1 with a CoR, 0 without.
 * - positions: #V by 3; triangles: #F by 3 indices in [0, #V) (#F >= 1).
 * - bone_indices, weights: #V by K, indices in [0, #B), weights >= 0;
 *   repeated indices of a vertex are summed. A vertex whose weights do not
 *   sum to 1 (within SSK_COR_WEIGHT_SUM_TOLERANCE) is normalized and the
 *   call returns SSK_OK with a warning in err->message ("warning: ...");
 *   a vertex with total weight <= SSK_WEIGHT_EPSILON has no CoR.
 * - stats: may be NULL.
 * A loose vertex (in no triangle) gets its center from its weights like
 * any other (Eq. 4 integrates over the whole mesh).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, parameters out of range),
 * SSK_ERROR_TRIANGLE_INDEX,
 * SSK_ERROR_BONE_INDEX, SSK_ERROR_NEGATIVE_WEIGHT, SSK_ERROR_NONFINITE,
 * SSK_ERROR_OUT_OF_MEMORY. */
#define SSK_COR_WEIGHT_SUM_TOLERANCE 1e-3f
ssk_status ssk_cor_compute(float *dst_centers, uint8_t *dst_flags, const float *positions,
                           uint32_t vertex_count, const int32_t *triangles,
                           uint32_t triangle_count, const int32_t *bone_indices,
                           const float *weights, uint32_t influence_count, uint32_t bone_count,
                           const ssk_cor_params *params, ssk_cor_stats *stats, ssk_error *err);

/* A bone's data for CoR skinning at one pose (36 floats), rig space:
 * - rotation, translation: the bone's rigid part [R_b t_b] as a unit
 *   quaternion (w, x, y, z), QLERP's input (Algorithm 1, line 2), and t_b
 *   (x, y, z, 0); LBS of the CoR (line 7) is sum_i w_i (R_i p* + t_i);
 * - matrix: rows 0-2 of the skinning matrix S_b (LBS of vertices without
 *   CoR);
 * - scale, scale_weight: for a bone with scale or shear (decided and split
 *   as ssk_dqs_prepare does: S_b = [R_b t_b] · Sc_b), rows 0-2 of Sc_b and
 *   1; zero and 0 otherwise (then [R_b t_b] = S_b). */
typedef struct ssk_cor_bone {
    float rotation[4];
    float translation[4];
    float matrix[12];
    float scale[12];
    float scale_weight;
    float pad_[3];
} ssk_cor_bone;

/* Fills #B ssk_cor_bone from rig-space skinning matrices and bind matrices
 * (#B by 16 each). Errors: SSK_ERROR_NONFINITE (a singular bind matrix). */
ssk_status ssk_cor_prepare(ssk_cor_bone *dst, const float *skinning, const float *bind,
                           uint32_t bone_count, ssk_error *err);

/* CoR skinning (Le & Hodgins 2016, Algorithm 1), per vertex with weights
 * w_i (sum W) of bones b_i:
 * - W <= SSK_WEIGHT_EPSILON: the vertex stays at rest;
 * - flag 0 (no CoR): LBS with the skinning matrices (in rig space);
 * - else q = sum_i s_i w_i q_i, s_i = -1 when q_i points away from the
 *   running sum of the earlier terms (the paper's operator, line 5: the
 *   antipodality resolved per vertex), R = rotation of q / |q|; phase 1
 *   (sec. 3.3, scale and shear): M = (sum over scaled bones of w_i Sc_i +
 *   (W - their weight) I) / W, x = M v, c = M p* (x = v, c = p* without
 *   scaled bones); phase 2: v' = R (x - c) + c~, c~ = sum_i w_i (R_i c +
 *   t_i) / W, the LBS of the CoR (so t = c~ - R c, Eq. 3b).
 * - dst: #V by 3 (may not alias positions); positions: #V by 3.
 * - dst_normals, normals: #V by 3 or both NULL: normals turned by R (by the
 *   blended matrix's 3x3 part for flag 0), renormalized; pre/post apply to
 *   them as directions.
 * - centers, flags: #V by 3 CoRs in rig space and #V flags (a binding's
 *   cor_centers and cor_flags for these rows).
 * - bone_indices, weights: #V by K as ssk_lbs_deform; bones: #B.
 * - pre, post: 16 floats or NULL (identity): v' = post · cor(pre · v).
 * parallel over vertices (ssk_threading); 8 vertices per lane vector for 4
 * influences without scaled bones, pre/post or normals. */
void ssk_cor_deform(float *dst, float *dst_normals, const float *positions,
                    const float *normals, uint32_t vertex_count, const int32_t *bone_indices,
                    const float *weights, uint32_t influence_count, const float *centers,
                    const uint8_t *flags, const ssk_cor_bone *bones, uint32_t bone_count,
                    const float *pre, const float *post);

/* ------------------------------------------------------------------------ */
/* Attachment binding (Toothman 2020, ch. 3; Toothman & Neff 2017).          */
/* ------------------------------------------------------------------------ */

/* Each vertex i is attached to one bone b_i (segment head p -> tail c, rig
 * space) at t_i in [0, 1]: attachment point a_i = p + t_i (c - p), scale
 * vector s_i = v_i - a_i (v_i in rig space: object matrix times the rest
 * position). */

typedef enum ssk_bind_method {
    /* Weight-guided when the rig has skin weights, else direct. */
    SSK_BIND_AUTO = 0,
    /* Direct projection onto the nearest bone segment (Eq. 12; the paper's
     * denominator |c - p| is a typo for |c - p|^2, which makes t the
     * parameter of the closest point). */
    SSK_BIND_DIRECT = 1,
    /* Projection onto the bones at the joint of the largest skin weight:
     * that bone, its parent and its siblings (ch. 3.2). */
    SSK_BIND_WEIGHTS = 2,
    /* Planar dividers at joints (Eq. 13): a plane through each joint whose
     * normal is the sum of the unit directions of the bones meeting there
     * (so the half-vector and the cross product of the two bones lie in
     * it); a vertex belongs to a bone whose head and tail planes enclose
     * it, t = d_p / (d_p + d_c) from its distances to the two planes. */
    SSK_BIND_PLANAR = 3,
    SSK_BIND_METHOD_COUNT
} ssk_bind_method;

typedef struct ssk_bind_params {
    ssk_bind_method method;     /* default SSK_BIND_AUTO */
    /* Alternations of Laplacian smoothing of the attachment points over
     * mesh adjacency and reprojection onto the skeleton (ch. 3.2);
     * default 6, 0 disables, at most 1000. */
    uint32_t smooth_iterations;
    /* A vertex farther than this from its chosen bone (the segment) is a
     * binding error (model units); 0 (default) means no limit. */
    float max_distance;
    /* Non-zero: also precompute the centers of rotation of CoR skinning
     * (ssk_cor_compute over the whole rig in rig space, on the CPU) with
     * `cor` and store them in the binding; default 0 (`cor` is then
     * ignored, not checked). */
    int compute_cor;
    ssk_cor_params cor;         /* default ssk_cor_params_default */
    /* Non-zero: also precompute what an implicit skinning node makes at
     * bind (Vaillant 2015, 4.4 and Eq. 4.6; issue #20): every bone's HRBF
     * field sampled into its grid (32^3 values and gradients, the box, the
     * remap radius r) and the tangential relaxation's mean value
     * coordinates and rest normals, with the default fit parameters, on
     * the CPU, and store them in the binding (file format version 3), so
     * that an implicit deformer given the binding does not fit them
     * again; default 0. The 128^3 composition operators are not rig data
     * and stay out (ssk_implicit_operators). */
    int compute_implicit;
} ssk_bind_params;

/* The defaults above. */
void ssk_bind_params_default(ssk_bind_params *out);
/* "auto", "direct", "weights", "planar"; NULL when out of range. */
const char *ssk_bind_method_name(ssk_bind_method method);
/* Parses a binding method name in any case. SSK_ERROR_INVALID_ARGUMENT
 * lists the accepted names. */
ssk_status ssk_bind_method_parse(ssk_bind_method *out, const char *name, ssk_error *err);

typedef struct ssk_binding ssk_binding;

/* Binds every vertex of the rig. A loose vertex (in no triangle) is bound
 * by its own projection (no neighbors to smooth with); the deformers keep
 * it where its skin weights put it (rigid and IRS with the default
 * attachment, the spring's first stage, implicit's DQS: issue #37).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, params out of range),
 * SSK_ERROR_BIND naming the culprit: a rig without bones, a zero-length bone
 * that carries skin weight, a degenerate triangle (repeated vertex or zero
 * area), a vertex farther than max_distance from its chosen bone;
 * SSK_ERROR_OUT_OF_MEMORY.
 * Destroy with ssk_binding_destroy. */
ssk_status ssk_binding_create(ssk_binding **out, const ssk_rig *rig,
                              const ssk_bind_params *params, ssk_error *err);
void ssk_binding_destroy(ssk_binding *binding);

/* Read-only view; arrays owned by the binding. Rows are whole-rig vertex
 * rows (meshes concatenated). */
typedef struct ssk_binding_view {
    uint32_t vertex_count;     /* #V of the whole rig */
    uint32_t bone_count;       /* #B */
    const int32_t *bones;      /* #V attached bone b_i */
    const float *t;            /* #V parameter t_i in [0, 1] */
    const float *scale_vectors; /* #V by 3 s_i at bind, rig space */
    uint64_t rig_hash;         /* ssk_rig_hash of the rig it was made for */
    ssk_bind_params params;    /* as used (method resolved, never AUTO) */
    double seconds;            /* time taken to bind (CoRs and implicit data included) */
    /* Centers of rotation (params.compute_cor), else NULL: #V by 3 rig
     * space (a vertex without CoR holds its own rest position, rig space)
     * and #V flags (1: has a CoR); time taken to compute them. */
    const float *cor_centers;
    const uint8_t *cor_flags;
    double cor_seconds;
    /* Implicit skinning's bind data (params.compute_implicit): whether the
     * binding holds it (1), its number of bone fields, the time its fit
     * took (0 when loaded), and whether an implicit deformer will use it
     * (1: made with the fit parameters and fit algorithm of this build;
     * 0: the deformer fits again). */
    int has_implicit;
    uint32_t implicit_field_count;
    double implicit_seconds;
    int implicit_current;
    /* A cage binding (ssk_cage_create_cached, `bind --cage`): whether the
     * binding holds one (1), its cage's vertex count c, and the time
     * binding it took (0 when loaded). */
    int has_cage;
    uint32_t cage_vertex_count;
    double cage_seconds;
} ssk_binding_view;

ssk_status ssk_binding_get(const ssk_binding *binding, ssk_binding_view *out, ssk_error *err);

/* Binding quality (Toothman 2020, Fig. 7-9): scale vector lengths, the
 * largest distance between the attachment points of two neighbors (on the
 * welded adjacency, ssk_rig_weld: across UV seams and shared mesh borders
 * too), and the share of vertices attached to a bone other than their
 * largest-weight bone (0 for vertices without weights). */
typedef struct ssk_binding_report {
    double mean_scale_length;   /* mean |s_i|, model units */
    double max_scale_length;    /* max |s_i| */
    double max_attachment_gap;  /* max over edges (i, j) of |a_i - a_j| */
    double off_weight_share;    /* in [0, 1] */
    /* Vertices likely to give artifacts to the attachment methods (rigid,
     * IRS, springs), so that a rigger sees them before baking:
     * - unrelated_neighbor_vertices: vertices with a neighbor attached to a
     *   bone that is neither theirs nor its parent or child (IRS blends
     *   rotations only across a joint: the two sides move apart, a spike);
     *   unrelated_bones: the bone pair (indices, lower first) most of them
     *   sit between, -1 when none; unrelated_pair_vertices: how many;
     * - weak_bone_vertices: vertices attached to a bone that weights no
     *   vertex or is shorter than SSK_BIND_SHORT_BONE_FRACTION of the
     *   skeleton size (the diagonal of every head and tail);
     * - far_from_weights_vertices: vertices whose attachment point is
     *   farther from the weights' center (sum_b w_b times the vertex's
     *   projection on bone b's segment) than the vertex is from its
     *   attachment point (|a - c| > |s|). */
    uint32_t unrelated_neighbor_vertices;
    int32_t unrelated_bones[2];
    uint32_t unrelated_pair_vertices;
    uint32_t weak_bone_vertices;
    uint32_t far_from_weights_vertices;
} ssk_binding_report;

/* Bones shorter than this fraction of the skeleton size count as short in
 * ssk_binding_report.weak_bone_vertices. */
#define SSK_BIND_SHORT_BONE_FRACTION 0.02

/* Errors: SSK_ERROR_BINDING_MISMATCH when the binding is not the rig's. */
ssk_status ssk_binding_report_compute(ssk_binding_report *out, const ssk_binding *binding,
                                      const ssk_rig *rig, ssk_error *err);

/* 64-bit hash (XXH3) of what a binding depends on: rest positions, object
 * matrices, triangles, skin weights and the skeleton (parents, bind
 * matrices, heads, tails). */
uint64_t ssk_rig_hash(const ssk_rig *rig);

/* Binary binding file ("SSKBIND1", little-endian; documented in
 * core/bind/binding_io.c; the hash: core/model/rig_hash.c): the rig hash, the parameters, and per vertex the bone,
 * t and scale vector; format version 1 without centers of rotation,
 * version 2 with them (and their parameters), version 3 with implicit
 * skinning's bind data (params.compute_implicit: its fit parameters and
 * fit algorithm version, the bone fields' grids, the mean value
 * coordinates, the rest normals), version 4 with a cage binding
 * (ssk_cage_create_cached: keyed by the rest cage; Phi, Psi, the MaxVol
 * rows); all four load. Written to a temporary name and renamed.
 * Errors: SSK_ERROR_IO. */
ssk_status ssk_binding_save(const ssk_binding *binding, const char *path, ssk_error *err);
/* Loads a binding; with `rig` not NULL its hash must match.
 * Errors: SSK_ERROR_IO (missing, unreadable, truncated, not a binding
 * file), SSK_ERROR_BINDING_MISMATCH (made for another rig). */
ssk_status ssk_binding_load(ssk_binding **out, const char *path, const ssk_rig *rig,
                            ssk_error *err);
/* Loads `path` when it holds a binding of this rig made with these
 * parameters (*out_reused = 1; with compute_cor the file must hold CoRs
 * made with the same ssk_cor_params, without it CoRs in the file are kept;
 * with compute_implicit the file must hold implicit data that this build
 * uses, ssk_binding_view.implicit_current, without it such data is kept);
 * otherwise binds and saves to `path` (*out_reused = 0), keeping the
 * file's cage binding, if any (it does not depend on the parameters). `path` may be
 * NULL (always binds, saves nothing). */
ssk_status ssk_binding_cached(ssk_binding **out, const ssk_rig *rig,
                              const ssk_bind_params *params, const char *path,
                              int *out_reused, ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Attachment skinning kernels (rigid, IRS, radial), CPU.                    */
/* ------------------------------------------------------------------------ */

/* Per-bone data of one pose for the attachment deformers, rig space (from
 * the skinning matrices by ssk_attach_prepare; 32 floats):
 * - head, tail: posed joints p' = S_b p and c' (the tail child's posed head
 *   when the bone has a child whose head is at its tail, so bone stretch
 *   follows the child; else S_b c);
 * - rotation: unit quaternion (w, x, y, z) of R_b, the rotation of S_b
 *   (the Y-axis-preserving orthonormalization, as DQS);
 * - head_joint, tail_joint: axis (x, y, z) and angle (w, radians, in
 *   [0, pi]) of the relative rotation at the bone's head joint,
 *   R_b R_parent^-1 (zero for a root), and at its tail joint,
 *   R_child R_b^-1 (zero without a tail child) (Eq. 15-16: p_theta, p_x);
 * - influence: p_i, c_i of Eq. 14 (default 0.5), 1 / p_i, and
 *   1 / (1 - c_i) (0 when c_i = 1: no child influence);
 * - head[3]: 1 / |c' - p'|^2 (0 for a zero-length bone), the projection
 *   factor of nearest-point queries on the bone; tail[3] unused;
 * - parent, tail_child: bone indices or -1. */
typedef struct ssk_attach_bone {
    float head[4];
    float tail[4];
    float rotation[4];
    float head_joint[4];
    float tail_joint[4];
    float influence[4];
    int32_t parent, tail_child, pad_[2];
    float pad2_[4];
} ssk_attach_bone;

/* Fills #B ssk_attach_bone from rig-space skinning matrices (#B by 16).
 * joint_influences: #B by 2 (p_i, c_i) in (0, 1], or NULL for 0.5.
 * Errors: SSK_ERROR_NONFINITE, SSK_ERROR_INVALID_ARGUMENT (influence out
 * of range). */
ssk_status ssk_attach_prepare(ssk_attach_bone *dst, const ssk_rig *rig,
                              const float *skinning, const float *joint_influences,
                              ssk_error *err);

/* Rigid attachment skinning (Toothman 2020, 4.1, first stage):
 * a' = p' + t (c' - p'), v' = a' + R_b s.
 * - dst: #V by 3 rig-space positions; bones, t, scale_vectors: #V (from the
 *   binding); bones_data: #B prepared bones. parallel over vertices (ssk_threading). */
void ssk_rigid_deform(float *dst, uint32_t vertex_count, const int32_t *bones,
                      const float *t, const float *scale_vectors,
                      const ssk_attach_bone *bones_data);

/* Incremental rotation skinning (Toothman 2020, Eq. 14-18): the rigid
 * result, with each scale vector further rotated about its attachment point
 * by Delta: -p_w/2 of the head joint's rotation near the head, +c_w/2 of
 * the tail joint's near the tail, blended (normalized quaternion blend of
 * Eq. 17's weights) where both apply. With length_adjust (Fig. 13) the
 * vertex then moves along its rotated scale vector until its distance to
 * the posed skeleton (bone, parent, tail child) is its rest distance
 * (rest_distances, #V from ssk_irs_rest_distances, or NULL for |s|); see
 * core/kernels/irs.c for why this reading of the figure. Other arguments as
 * ssk_rigid_deform. */
void ssk_irs_deform(float *dst, uint32_t vertex_count, const int32_t *bones, const float *t,
                    const float *scale_vectors, const ssk_attach_bone *bones_data,
                    int length_adjust, const float *rest_distances);

/* Rest distances for ssk_irs_deform: dst[i] = distance from the bind
 * position a_i + s_i to the nearest point of the rest segments of its bone,
 * the bone's parent and tail child (rest_bones: ssk_attach_prepare of the
 * identity pose). Model units; #V floats. */
void ssk_irs_rest_distances(float *dst, uint32_t vertex_count, const int32_t *bones,
                            const float *t, const float *scale_vectors,
                            const ssk_attach_bone *rest_bones);

/* Attachment per skin weight influence (core/kernels/attach_weights.c; a
 * departure from Toothman 2020's one attachment per vertex, made for real
 * characters, issue #15): the rest data of one mesh. For vertex v and
 * influence slot i (bone b = bone_indices[v K + i]) with rig-space rest
 * position x = object_matrix · positions[v]:
 *   t = clamp((x - p_b) . (c_b - p_b) / |c_b - p_b|^2, 0, 1),
 *   record = (t, x - a_b(t), w / sum of w, b as int32 bits, p_share, c_share)
 * (a_b(t) = p_b + t (c_b - p_b); p_share = w_P / (w + w_P), c_share =
 * w_C / (w + w_C), w_P and w_C the vertex's weights on b's parent and tail
 * child in the rest pose, 0 when they are not influences). A vertex whose
 * weights sum to at most SSK_WEIGHT_EPSILON gets one record of weight 1
 * from the binding (bind_bones, bind_t, bind_s: the mesh's rows; shares 0),
 * the rest zero.
 * - dst: #V by K' by SSK_ATTACH_SLOT_FLOATS floats, K' = max(K, 1),
 *   caller-owned;
 * - positions: #V by 3 object-space rest positions of the mesh;
 *   bone_indices, weights: #V by K (the mesh's, every index < #B);
 *   object_matrix: the mesh's object -> rig matrix (row-major);
 *   rest_bones: #B from ssk_attach_prepare of the identity pose.
 * parallel over vertices (ssk_threading); model units. */
#define SSK_ATTACH_SLOT_FLOATS 8
void ssk_attach_weight_slots(float *dst, const float *positions, uint32_t vertex_count,
                             const int32_t *bone_indices, const float *weights,
                             uint32_t influence_count, const float object_matrix[16],
                             const int32_t *bind_bones, const float *bind_t,
                             const float *bind_s, const ssk_attach_bone *rest_bones);

/* Rigid attachment (incremental = 0) or IRS (incremental = 1, Eq. 15-18,
 * with Fig. 13's length adjustment when length_adjust) per skin weight
 * influence, blended with the weights:
 *   v' = sum_i w_i (a'_b(t_i) + Delta_i R_b s_i)
 * (Delta = identity for rigid). Eq. 14's p_w, c_w of term i come from the
 * weights: p_w = p_share / p_i, c_w = c_share / (1 - c_i), so the terms at
 * a joint share one rotation (core/kernels/attach_weights.c). With
 * length_adjust (and rest_bones, #B from ssk_attach_prepare of the
 * identity pose; NULL turns it off) each term moves along its rotated
 * scale vector to the rest distance of a_i + s_i to the rest skeleton near
 * its bone.
 * - dst: #V by 3 rig-space positions (caller-owned);
 * - influence_count: the mesh's K (records per vertex: max(K, 1));
 *   slots: from ssk_attach_weight_slots;
 * - bones_data: #B prepared bones of the pose.
 * parallel over vertices (ssk_threading). */
void ssk_attach_weights_deform(float *dst, uint32_t vertex_count, uint32_t influence_count,
                               const float *slots, const ssk_attach_bone *bones_data,
                               int incremental, int length_adjust,
                               const ssk_attach_bone *rest_bones);

/* Radial profile f(t) of Toothman 2020, 5.1 (Fig. 22). The scale vector of
 * a vertex on a selected bone becomes (1 + amount (f(t) - 1)) times as long
 * for BULGE, (1 + amount f(t)) for the easing profiles. */
typedef enum ssk_radial_profile {
    SSK_RADIAL_BULGE = 0,   /* -(0.5 - t)^2 + 1.25, 1 at the ends, 1.25 mid */
    SSK_RADIAL_LINEAR,      /* t */
    SSK_RADIAL_QUAD_IN,     /* t^2 */
    SSK_RADIAL_QUAD_OUT,    /* 1 - (1 - t)^2 */
    SSK_RADIAL_CUBIC_IN,    /* t^3 */
    SSK_RADIAL_CUBIC_OUT,   /* 1 - (1 - t)^3 */
    SSK_RADIAL_QUARTIC_IN,  /* t^4 */
    SSK_RADIAL_QUARTIC_OUT, /* 1 - (1 - t)^4 */
    SSK_RADIAL_SINE_IN_OUT, /* (1 - cos(pi t)) / 2 */
    SSK_RADIAL_PROFILE_COUNT
} ssk_radial_profile;

/* "bulge", "linear", "quad_in", "quad_out", "cubic_in", "cubic_out",
 * "quartic_in", "quartic_out", "sine_in_out"; NULL when out of range. */
const char *ssk_radial_profile_name(ssk_radial_profile profile);
ssk_status ssk_radial_profile_parse(ssk_radial_profile *out, const char *name, ssk_error *err);
/* f(t) of the profile, t clamped to [0, 1]. */
float ssk_radial_profile_eval(ssk_radial_profile profile, float t);

/* Radial deformation (Toothman 2020, 5.1) of already skinned rig-space
 * positions: for a vertex whose bone is selected (bone_mask[b] != 0), with
 * posed attachment point a' = p' + t (c' - p'):
 * v' = a' + m (v - a'), m as ssk_radial_profile; others unchanged.
 * dst may equal src. bone_mask: #B bytes. */
void ssk_radial_deform(float *dst, const float *src, uint32_t vertex_count,
                       const int32_t *bones, const float *t,
                       const ssk_attach_bone *bones_data, const uint8_t *bone_mask,
                       ssk_radial_profile profile, float amount);

/* ------------------------------------------------------------------------ */
/* Spring deformer (Toothman 2020, 4.2, 5.2, 6.1-6.4; MIG 2019).             */
/* ------------------------------------------------------------------------ */

/* The spring deformer relaxes a first-stage skinned mesh (IRS with the
 * attachment per skin weight influence in --method spring and
 * ssk_graph_from_method; rigid attachment in the paper) toward an equilibrium of spring forces between neighboring
 * vertices and the skeleton (Eq. 21-22), iterating the update of Eq. 23.
 * All quantities are in rig space and model units; the attachment points
 * a'_i = p' + t_i (c' - p') come from the binding and the posed bones, and
 * s_i = v_i - a'_i. Forces, each a sum over the one-ring neighbors j of i
 * (Eq. 21) or a per-vertex term, all expressed as displacements (model
 * units) so that a stiffness k means the same on any mesh size. The
 * neighbor stiffness of Eq. 21 is k(i, j) = k / deg(i): each neighbor sum
 * below is a mean over the one ring, so a stiffness means the same at a
 * pole of 30 triangles as at a regular vertex, and the explicit update is
 * stable for dt k <= 1 whatever the mesh:
 *   F_s (surface): k_s (|v_j - v_i| - L0_ij) (v_j - v_i) / |v_j - v_i|
 *   F_l (length):  -k_l ((|s_i| - |s_j|) - (|s_i| - |s_j|)_bind) s_i / |s_i|
 *   F_t (torsion): k_t |s_i| (theta_ij - theta0_ij) d_ij, theta the angle
 *                  between s_i and s_j, d_ij the unit direction of s_j's
 *                  component orthogonal to s_i (toward j); the paper's
 *                  torque-to-linear conversion m = |F_t| / |s_i| applied to
 *                  the arc |s_i| theta (see core/kernels/spring.c)
 *   F_b (bone):    k_b |s_i| (phi_i - phi0_i) d_i, phi the angle between
 *                  s_i and the bone c' - p', d_i the unit direction of the
 *                  bone's component orthogonal to s_i
 *   F_e (edit):    sum over ROIs of k_e w(frame) (target_i - v_i) for the
 *                  ROI's kinematic vertices, target_i = a'_i + R_b (s_i +
 *                  offset_i): the edit follows the skeleton (5.2).
 *   F_a (twist):   -k_a psi_i |s_i| (beta_i x u_perp), psi_i the signed angle
 *                  about the vertex's bone direction beta_i from the first
 *                  stage's scale vector f_i - a'_i to s_i (both projected
 *                  orthogonal to beta_i), u_perp the unit scale vector's
 *                  projection (issue #16's twist anchor; not in the paper)
 *   F_d (detail):  k_d ((mean_j v_j - v_i) - (mean_j f_j - f_i)), f the
 *                  first stage: keeps the first stage's differential
 *                  coordinates (the one-ring Laplacian of Laplacian surface
 *                  editing, Sorkine et al. 2004, which the dissertation
 *                  reviews in 2.2.2), so the springs move the skin by a
 *                  smooth correction and cannot fold or crumple it; none
 *                  on the kinematic and passive vertices of an active
 *                  surface edit, which take the edit's shape (not in
 *                  the paper: issue #15, core/kernels/spring.c "The detail
 *                  force"). Its own term is taken implicitly per vertex:
 *                  each step is divided by 1 + dt k_d(i), which makes it
 *                  stable at any k_d.
 * Each stiffness may be scaled per vertex by a map. After the solve, the
 * vertices of a short-edge cluster (edges shorter than
 * SSK_SPRING_CLUSTER_FRACTION of their vertex's mean rest edge length:
 * the near-duplicate vertices of metaball and scan meshes) all take the
 * cluster's mean correction v - f, so its tiny triangles keep the first
 * stage's shape (core/kernels/spring.c "Short-edge clusters"). */

typedef enum ssk_spring_force {
    /* Defaults tuned on the 2-bone test limb (tests/c/test_spring_quality.c):
     * weak surface and bone springs, stiff length and torsion springs keep
     * the joint's cross-section at equilibrium >= 0.9 of rest at 90/135
     * degree bends and 90/180 degree twists (per edge 3, 1, 2, i.e. means
     * 18, 6, 12 on degree-6 vertices, with k_b 1 left 0.63 at 135). With
     * dt = 1/30 the neighbor means are stable alone up to k = 30 (dt k <= 1)
     * on any vertex degree; the defaults use dt k <= 0.6. */
    SSK_FORCE_SURFACE = 0, /* F_s, default k 6 */
    SSK_FORCE_LENGTH,      /* F_l, default k 18 */
    SSK_FORCE_TORSION,     /* F_t, default k 18 */
    SSK_FORCE_BONE,        /* F_b, default k 0.2 */
    SSK_FORCE_EDIT,        /* F_e, default k 5 (multiplies each ROI's own) */
    /* F_d, default k 200 (with dt = 1/30 every step is divided by 7.7);
     * k 0 is the paper's model. Chosen on the four rigs of
     * docs/real-characters.md with an IRS first stage: a larger k_d keeps
     * more of the first stage (fewer folds, IRS's volume), a smaller one
     * lets the springs thicken the bent joints more. k 10 / 25 / 60 at
     * equilibrium: turned triangles 0.16 / 0.13 / 0.11% on
     * BCN_Epileptic.X, twist section 0.75 / 0.86 / 0.95 on the
     * Mixamo-style body; k 120 / 150 / 200 / 300 with the default solver
     * (converged): the generated Rigify body's smallest volume 0.985 /
     * 0.986 / 0.988 / 0.990 (LBS 0.985, IRS 0.992), its knee thickness
     * 0.826 / 0.823 / 0.820 / 0.817 (LBS 0.739, IRS 0.808) */
    SSK_FORCE_DETAIL,
    /* F_a, the twist anchor (issue #16, not in the paper), default k 0:
     * the torsion spring about the vertex's bone direction between its
     * scale vector and the first stage's, which makes a twist spread over
     * about sqrt(k_t / k_a) rings and stop. With the defaults the detail
     * force already keeps the first stage's twist where the springs should
     * not move it (the limb's far 20% of each bone within 0.01 degrees of
     * IRS at 180 degrees), and k_a > 0 there only pulls the twisted ring
     * in (the Mixamo-style body's twist section 0.86 -> 0.71 at k_a 30,
     * measured with k_d 25); it is for the paper's model
     * (rigid first stage, no detail force), where nothing else resists a
     * free turn of the skin about the bone. Per-vertex force: stable for
     * dt k_a <= 1, refused above 2 */
    SSK_FORCE_TWIST,
    SSK_FORCE_COUNT
} ssk_spring_force;

typedef enum ssk_spring_integrator {
    SSK_SPRING_EXPLICIT = 0,      /* v += dt F (Eq. 23), the default */
    SSK_SPRING_SEMI_IMPLICIT = 1, /* u = (1 - damping)(u + dt F); v += dt u */
    SSK_SPRING_INTEGRATOR_COUNT
} ssk_spring_integrator;

typedef enum ssk_spring_convergence {
    /* largest per-vertex displacement of an iteration below threshold
     * (default AABB_min x 1e-4): the paper's rule (4.2.2); on a dense mesh
     * it means a smaller fraction of an edge (issue #36) */
    SSK_CONVERGE_DISPLACEMENT = 0,
    SSK_CONVERGE_FORCE,      /* largest |F_net| below threshold */
    SSK_CONVERGE_ENERGY,     /* total spring energy stops decreasing: a
                                local minimum (the positions of the minimum
                                are kept) */
    SSK_CONVERGE_ITERATIONS, /* always max_iterations */
    /* the estimated distance to the equilibrium below threshold times the
     * mean rest edge length (issue #36): the same on a mesh of any
     * density. Pass k's largest move m_k and the mean contraction q of the
     * last 5 moves estimate the distance left as m_k q / (1 - q) (a
     * geometric series of the remaining moves), an estimate that shrinks
     * by at most q a pass (core/kernels/spring.c "Convergence"); threshold
     * <= 0 picks SSK_SPRING_RELATIVE_TOLERANCE. The default. */
    SSK_CONVERGE_RELATIVE,
    SSK_CONVERGE_COUNT
} ssk_spring_convergence;

typedef enum ssk_spring_mode {
    /* each frame starts from the first stage (any frame order) */
    SSK_SPRING_FRAME_INDEPENDENT = 0,
    /* each frame starts from the previous frame's output moved by the
     * differential bone transforms S_b(n) S_b(n-1)^-1 of each vertex's
     * attached bone (6.1); the first frame, or a frame that does not follow
     * the previous one, starts from the first stage */
    SSK_SPRING_FRAME_DEPENDENT = 1,
    SSK_SPRING_MODE_COUNT
} ssk_spring_mode;

/* ssk_spring_params.multilevel: which coarse correction a pass adds. */
enum {
    SSK_SPRING_MULTILEVEL_NONE = 0,  /* the plain (or Chebyshev) passes only */
    SSK_SPRING_MULTILEVEL_BONES = 1, /* per-bone slabs (core/kernels/spring_multilevel.c) */
    /* a smoothed-aggregation multigrid of the forces' linearization at
     * rest over the welded surface (issue #36, core/kernels/spring_multigrid.c):
     * its pass count grows little with the mesh density. On GL the force
     * passes run on the device and the correction on the host
     * (core/backends/gl_backend.c "The multigrid") */
    SSK_SPRING_MULTIGRID = 2,
    /* the default: the multigrid (chebyshev_rho unused) on both backends, the
     * per-bone levels (blended with chebyshev_rho) for a spring with surface
     * edits; ssk_spring_create resolves it (ssk_spring_params_resolve) */
    SSK_SPRING_SOLVER_AUTO = 3
};

typedef struct ssk_spring_params {
    float stiffness[SSK_FORCE_COUNT];
    /* optional #V per-vertex multipliers of each stiffness (whole-rig rows,
     * borrowed, copied at creation), NULL for 1 */
    const float *stiffness_maps[SSK_FORCE_COUNT];
    float dt;                          /* default 1/30 */
    ssk_spring_integrator integrator;
    float damping;                     /* semi-implicit, in [0, 1), default 0.1 */
    /* default 100 (the paper: 50): with the defaults every frame of
     * BCN_Epileptic.X (at most 42), the Rigify bodies of
     * docs/real-characters.md (79, 43) and the test limb's poses (32)
     * meets the threshold, not the Mixamo-style body's frame 6 (195;
     * issue #16) */
    uint32_t max_iterations;
    ssk_spring_convergence convergence;
    /* model units; <= 0: AABB_min x 1e-4. With SSK_CONVERGE_RELATIVE: a
     * fraction of the mean rest edge length; <= 0:
     * SSK_SPRING_RELATIVE_TOLERANCE */
    float threshold;
    ssk_spring_mode mode;
    /* Chebyshev semi-iterative acceleration of the explicit update (not in
     * the paper: Golub & Varga 1961, as used for position-based dynamics by
     * Wang 2015): after SSK_SPRING_CHEBYSHEV_WARMUP plain iterations each
     * iterate becomes x_{k+1} = w_k (x^_{k+1} - x_{k-1}) + x_{k-1}, x^ the
     * Eq. 23 update of x_k (with the multilevel correction below when on),
     * w = 2 / (2 - rho^2) then 4 / (4 - rho^2 w), rho this estimate of the
     * iteration's spectral radius. It changes the path, not the
     * equilibrium (F = 0 is its only fixed point). In [0, 1): 0 is no
     * blend (the graph's "solver": "jacobi" without the correction); the
     * default 0.96 suits the multilevel passes (better conditioned: on the
     * 100k-vertex limb bent 135 degrees 19 passes to the threshold against
     * 23 with 0.93 or 0.97; core/bind/spring_rest.c), which start blending
     * after SSK_SPRING_ML_CHEBYSHEV_WARMUP passes; SSK_SPRING_CHEBYSHEV_RHO_ALONE
     * (0.99) suits the plain
     * passes ("chebyshev": 2-4x fewer passes on a limb, 1.3x on
     * BCN_Epileptic.X; core/kernels/spring.c). Explicit integrator and the
     * displacement, force or iterations schemes only (the energy of an
     * accelerated iteration is not monotone): set 0 for the others. */
    float chebyshev_rho;
    /* The coarse correction (SSK_SPRING_MULTILEVEL_NONE ...
     * SSK_SPRING_SOLVER_AUTO, the default: the surface multigrid on the
     * CPU without surface edits, issue #36). The per-bone multilevel correction (issue #16; not
     * in the paper, whose solver is the plain update;
     * core/kernels/spring_multilevel.c): 1 adds to every pass a coarse step over slabs of each bone, levels
     * halving the bone down to about 256 vertices a slab, whose unknowns
     * are per-slab translations and ring maps (scaling, twist, tilt,
     * ovalization) with curvatures probed once at rest in
     * ssk_spring_create; it removes the error that is smooth along a bone,
     * which the plain pass needs O(rings^2) passes for. The fixed point is
     * the plain update's. Measured (bench/bench_spring.c, 100k-vertex limb,
     * bend 135 degrees, --method spring): 37 passes to the threshold where
     * Chebyshev alone needs 97 and stops 2.5% of the radius from the
     * equilibrium. 0: the plain or Chebyshev passes only. Explicit
     * integrator and the displacement, force or iterations schemes only
     * (set 0 for the others). */
    uint32_t multilevel;
    /* Where the scale vectors s = v - a' of the length, torsion and bone
     * springs start (ssk_attachment_mode): WEIGHTS (default) anchors each
     * vertex at the weighted mean of its attachments on its skin-weight
     * bones, a' = sum_k w_k a'_k(t_k), with the bone direction the
     * normalized weighted mean of those bones' directions (a departure from
     * the paper for real characters, core/kernels/spring.c "Anchors");
     * BINDING uses the attachment binding's one bone per vertex (Toothman
     * 2020, 4.2). A rig without skin weights always uses the binding. */
    ssk_attachment_mode attachment;
} ssk_spring_params;

/* Plain (Eq. 23) passes before the Chebyshev acceleration starts, and
 * again after each restart (core/kernels/spring.c): the first passes close the
 * first stage's discontinuities, whose large nonlinear steps the blend
 * would amplify. After a restart it must be at least
 * SSK_SPRING_DIVERGENCE_WINDOW, so that those plain passes can decide
 * divergence. */
#define SSK_SPRING_CHEBYSHEV_WARMUP 10u
/* The first warm-up of a multilevel solve (params.multilevel; a restart's
 * is SSK_SPRING_CHEBYSHEV_WARMUP): its coarse steps close the first
 * stage's discontinuities within a few passes, and the blend's speed-up
 * then starts sooner. Passes to the default threshold, CPU, the defaults
 * before (chebyshev_rho 0.97, warm-up 10) -> now (0.96, 3):
 * build/bench/bench_spring --sizes 100000,10000 (8-bone limb; animation /
 * bend 135 / twist 180 / frame-dependent): 100k 15 / 25 / 10 / 17 -> 9 /
 * 19 / 11 / 16, 10k 15 / 26 / 36 / 15 -> 14 / 20 / 34 / 15 (at 2k the
 * frame-dependent frames take 19 instead of 10); springskin bake
 * --method spring, per frame mean / largest: BCN_Epileptic.X 25.1 / 46 ->
 * 22.0 / 43, the Rigify body exported to FBX 28.3 / 72 -> 25.5 / 68;
 * test_spring_quality's 2-bone limb, bends 90 / 135 and twists 90 / 180:
 * 17 / 20 / 21 / 22 -> 13 / 15 / 15 / 17. */
#define SSK_SPRING_ML_CHEBYSHEV_WARMUP 3u

/* chebyshev_rho of the Chebyshev solver alone (the graph's "solver":
 * "chebyshev" without chebyshev_rho); the defaults' 0.96 is the
 * multilevel solver's. */
#define SSK_SPRING_CHEBYSHEV_RHO_ALONE 0.99f

/* The relative scheme's default tolerance: the estimated distance to the
 * equilibrium at most this fraction of the mean rest edge length (issue
 * #36 asks for 0.5% of the local edge; the estimate assumes the last
 * passes' contraction holds, so it keeps a margin) */
#define SSK_SPRING_RELATIVE_TOLERANCE 1e-3f

/* The defaults above. */
void ssk_spring_params_default(ssk_spring_params *out);


/* A surface edit (5.2): a region of interest grown from its kinematic
 * vertices: `grow` rings of passive vertices (breadth-first over mesh
 * edges, default 4) and one outer ring of static vertices, which keep their
 * first-stage positions. */
typedef struct ssk_spring_edit {
    const uint32_t *kinematic;   /* whole-rig vertex rows */
    uint32_t kinematic_count;
    /* kinematic_count by 3 bind-space (rig space at rest) displacements of
     * the kinematic vertices, or NULL to push each along its bind scale
     * vector direction by `push` model units */
    const float *offsets;
    float push;
    uint32_t grow;
    float stiffness;             /* this ROI's weight, default 1 */
    /* key_count (frame, weight) pairs, frames increasing: the edit's weight
     * at a frame (linear, clamped); none: weight 1 */
    const float *keys;
    uint32_t key_count;
} ssk_spring_edit;

/* Role of a vertex in the surface edits. */
enum { SSK_ROLE_FREE = 0, SSK_ROLE_KINEMATIC = 1, SSK_ROLE_PASSIVE = 2, SSK_ROLE_STATIC = 3 };

typedef struct ssk_spring ssk_spring;

/* Records the rest data from the binding (per edge: rest length, rest
 * difference of scale-vector lengths, rest angle between the scale vectors;
 * per vertex: rest angle between s_i and its bone), builds the surface
 * edits' regions, and checks the parameters. `rig` is borrowed and must
 * outlive the spring (with the attachment per skin weight influence its
 * rest positions and skin weights are read for the anchors every frame).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, a parameter out of range, an
 * edit vertex out of range, a non-finite map value),
 * SSK_ERROR_SPRING_UNSTABLE (a stiffness certain to diverge with the
 * explicit update: dt k c > 2, c = 1/3 for the surface and torsion means,
 * 1 for the length mean and the per-vertex bone and edit forces; the
 * message gives the stable range dt k <= 1), SSK_ERROR_BINDING_MISMATCH,
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_spring_create(ssk_spring **out, const ssk_rig *rig, const ssk_binding *binding,
                             const ssk_spring_params *params, const ssk_spring_edit *edits,
                             uint32_t edit_count, ssk_error *err);
void ssk_spring_destroy(ssk_spring *spring);

/* What one solve did. */
typedef struct ssk_spring_report {
    uint32_t iterations; /* performed */
    float residual;      /* the convergence measure after the last iteration */
    double energy;       /* total spring energy of the result (before the
                            short-edge clusters take their mean correction) */
    int converged;       /* the convergence scheme was met */
} ssk_spring_report;

/* Solves one frame on the CPU (the spring owns the solver's buffers: one
 * solve at a time per spring). positions: #V by 3 rig-space first-stage
 * positions in (also the f of the detail force and of the short-edge
 * clusters), the relaxed positions out. bones: #B posed attachment bones
 * (ssk_attach_prepare). skinning: #B by 16 rig-space skinning matrices of
 * the frame (frame-dependent mode), frame: the frame number (edit keys and
 * frame-dependent continuity).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_NONFINITE (a
 * non-finite first-stage position; nothing is changed),
 * SSK_ERROR_SPRING_DIVERGED when the iteration produced non-finite
 * values or its energy (with its largest step) grew over
 * SSK_SPRING_DIVERGENCE_WINDOW iterations in a row: positions then hold
 * the last good iterate and the report says how far it got. */
#define SSK_SPRING_DIVERGENCE_WINDOW 5
ssk_status ssk_spring_solve(ssk_spring *spring, float *positions, const ssk_attach_bone *bones,
                            const float *skinning, double frame, ssk_spring_report *report,
                            ssk_error *err);

/* Read-only views for backends: per-vertex roles (#V bytes), spring state
 * memory in bytes per vertex (rest data, CSR, buffers). */
const uint8_t *ssk_spring_roles(const ssk_spring *spring);
size_t ssk_spring_bytes_per_vertex(const ssk_spring *spring);

/* ------------------------------------------------------------------------ */
/* ARAP on scale vectors (Toothman 2020, 4.1.1, Eq. 19-20).                  */
/* ------------------------------------------------------------------------ */

/* The dissertation's global-solve comparison for IRS: the posed scale
 * vectors s'_i minimize sum_ij w_ij |(s'_i - s'_j) - 1/2 (R_i + R_j)(s_i -
 * s_j)|^2 (Eq. 19: the as-rigid-as-possible energy of Sorkine and Alexa
 * 2007 with the positions replaced by scale vectors), R_i the posed
 * rotation of vertex i's binding bone ("the rotation transform of the bone
 * to which each vertex is attached"), s_i its bind scale vector, and
 * v'_i = a'_i + s'_i on the posed attachment point. w_ij = 1 over the
 * welded mesh edges (the uniform graph Laplacian; the dissertation's
 * cotangent weights are not used). The Laplacian alone is singular (a
 * constant added to every s' changes nothing), so a weak pull toward
 * rigid skinning, lambda |s'_i - R_i s_i|^2, makes the system L + lambda I
 * (Eq. 20: L S' = b) positive definite: it is factorized once (CHOLMOD's
 * sparse Cholesky, SuiteSparse) and each frame is three back-substitutions
 * on the CPU. Coincident (welded) vertices are one unknown. */
typedef struct ssk_arap ssk_arap;

typedef struct ssk_arap_params {
    /* lambda > 0, per unit of the uniform Laplacian's diagonal (the vertex
     * degree): default 1e-3 */
    float regularization;
} ssk_arap_params;

void ssk_arap_params_default(ssk_arap_params *out);

/* Records the rest data (the binding's bones, t and scale vectors; the
 * welded adjacency of `rig`) and factorizes L + lambda I.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, regularization not finite and
 * > 0), SSK_ERROR_BINDING_MISMATCH, SSK_ERROR_OUT_OF_MEMORY, SSK_ERROR_BIND
 * (the factorization failed, with CHOLMOD's status). */
ssk_status ssk_arap_create(ssk_arap **out, const ssk_rig *rig, const ssk_binding *binding,
                           const ssk_arap_params *params, ssk_error *err);
void ssk_arap_destroy(ssk_arap *arap);

/* One frame: dst #V by 3 rig-space positions (caller-owned), bones #B
 * posed attachment bones (ssk_attach_prepare). Not thread-safe per object
 * (it owns the right-hand side). Errors: SSK_ERROR_INVALID_ARGUMENT (NULL),
 * SSK_ERROR_NONFINITE (a bone's rotation), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_arap_deform(ssk_arap *arap, float *dst, const ssk_attach_bone *bones,
                           ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Implicit skinning (Vaillant 2015, chapter 4; issue #20).                  */
/* ------------------------------------------------------------------------ */

/* Each bone's part of the skin is approximated at bind by the 0.5
 * iso-surface of a compactly supported field f_i = t_r(d_i), d_i an HRBF
 * (4.4, Eq. 4.1); the fields move rigidly with their bones and are
 * composed into one field f by gradient-based operators in a binary tree
 * (4.5); each frame the first stage's positions (DQS in the paper) march
 * along grad f back to the value f had at the vertex at rest (Newton
 * projection, Eq. 4.5), stopping at contact, with tangential relaxation
 * (Eq. 4.6-4.7) and a Laplacian smoothing of the contact regions (Eq. 4.8):
 * the history-independent tracking of 4.6.2. */

/* The composition operator at a joint (4.5). */
typedef enum ssk_implicit_operator {
    SSK_IMPLICIT_CONTACT = 0, /* g_dc: clean union, contact beyond 90 degrees (default) */
    SSK_IMPLICIT_BULGE = 1,   /* g_db: bulge-in-contact (fingers) */
    SSK_IMPLICIT_UNION = 2,   /* the clean union alone (g_dc with d = 0) */
    SSK_IMPLICIT_OPERATOR_COUNT
} ssk_implicit_operator;

/* Name of an operator ("contact", "bulge", "union"), NULL when out of range. */
const char *ssk_implicit_operator_name(ssk_implicit_operator op);

/* How a frame's vertices find the implicit skin. */
typedef enum ssk_implicit_tracking {
    /* 4.6.2 (implicit skinning [VBG13]): every frame from its first stage
     * (DQS), so frames are independent of each other (any order, sharded
     * bakes) */
    SSK_IMPLICIT_INDEPENDENT = 0,
    /* 4.6.3 (elastic implicit skinning [VGB14]): every frame from the
     * previous result (the rest pose before the first), through virtual
     * frames of at most substep_angle of bone rotation: each vertex moved
     * by its own bone's change, projected, then relaxed by Jacobi steps of
     * the ARAP-like energy of Eq. 4.9 (cotangent weights, rotations of the
     * skin weights' blend) in the iso-surface's tangent plane (Eq. 4.10),
     * each followed by a projection. Depends on the order of the frames. */
    SSK_IMPLICIT_ELASTIC = 1,
    SSK_IMPLICIT_TRACKING_COUNT
} ssk_implicit_tracking;

/* Name of a tracking ("independent", "elastic"), NULL when out of range. */
const char *ssk_implicit_tracking_name(ssk_implicit_tracking tracking);

typedef struct ssk_implicit_params {
    /* Newton projection steps per frame (Eq. 4.5), with a tangential
     * relaxation after every second one (4.6.2.1); default 20 */
    uint32_t iterations;
    /* sigma of Eq. 4.5 (step fraction), (0, 1]; the paper: 0.35 */
    float sigma;
    /* a vertex stops at contact when its gradient turns by more than this
     * between two steps (degrees, (0, 180)); the paper: 55 */
    float contact_angle;
    /* Laplacian smoothing steps of the contact regions (Eq. 4.8) and the
     * diffusion steps of their weights beta; default 3 and 3 */
    uint32_t smoothing_iterations;
    uint32_t diffusion_iterations;
    /* scale of the bulge operator's controller d_b, [0, 1]; default 1 */
    float bulge;
    /* SSK_IMPLICIT_INDEPENDENT (default) or SSK_IMPLICIT_ELASTIC */
    ssk_implicit_tracking tracking;
    /* ELASTIC: the largest bone rotation of one virtual frame (degrees,
     * (0, 180]; default 15: the paper's Table 4.2 uses 0.05 and 0.5 rad),
     * and the relaxation steps per virtual frame (default 3; each a sparse
     * solve of Eq. 4.9's linear step and a projection, where the paper
     * takes single Jacobi iterations: kernels/implicit_elastic.c) */
    float substep_angle;
    uint32_t relaxation_iterations;
    /* the operator at every joint without an entry below */
    ssk_implicit_operator default_operator;
    /* #B or NULL: joint_operators[b] is the operator of the joint between
     * bone b and its parent (a value >= SSK_IMPLICIT_OPERATOR_COUNT means
     * default_operator); borrowed for the call that takes the params */
    const uint8_t *joint_operators;
} ssk_implicit_params;

/* The composition operators of 4.5 (contact g_dc and bulge g_db), each a
 * grid over (f1, f2, d) solved by bi-harmonic interpolation (4.5.1). They
 * depend on nothing but the resolution, so a host that makes several
 * implicit deformers (a Blender session, a batch) builds them once and
 * passes them in ssk_deformer_desc.implicit_operators. Opaque, read-only
 * once made: one object may serve deformers on several threads. */
typedef struct ssk_implicit_operators ssk_implicit_operators;

/* The paper's operator grid resolution per axis (4.6.2.2: 128^3). */
#define SSK_IMPLICIT_OPERATOR_RESOLUTION 128u

/* Builds both operators at `resolution` per axis (8 .. 512; 0 for
 * SSK_IMPLICIT_OPERATOR_RESOLUTION): about 2 s on one core at 128, 0.3 s
 * at 64; 2 x resolution^3 floats. Errors: SSK_ERROR_INVALID_ARGUMENT,
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_implicit_operators_create(ssk_implicit_operators **out, uint32_t resolution,
                                         ssk_error *err);
void ssk_implicit_operators_destroy(ssk_implicit_operators *ops);

/* The largest iteration count of any kind an implicit node accepts. */
#define SSK_IMPLICIT_MAX_ITERATIONS 1000u

void ssk_implicit_params_default(ssk_implicit_params *out);

/* ------------------------------------------------------------------------ */
/* Deformer graph (Toothman 2020, 6.1).                                      */
/* ------------------------------------------------------------------------ */

/* A deformer graph: nodes (deformation operations) and edges (which node's
 * output feeds which input), as the JSON document described in
 * docs/deformer-graph.md:
 *   {"version": 1,
 *    "nodes": [{"id": "skin", "type": "skinning", "method": "irs", ...},
 *              {"id": "out", "type": "output"}],
 *    "edges": [{"from": "skin", "to": "out"}]}
 * Node types: "skinning" (a source; "method": lbs|dqs|rigid|irs|cor, IRS
 * "parent_influence", "child_influence", "length_adjust"), "radial"
 * (positions in; "bones", "profile", "amount", "keys"), "normals"
 * (positions in, normals out), "output" (positions in, optional normals
 * in), "spring", "arap", "implicit", and "cage" (no edges; "vertices",
 * "triangles", "edited": a closed rest cage and its edit, rig space; it
 * reshapes the rig every node runs on, Corda et al. 2020, and comes before
 * every skinning and arap node). Validation: exactly one output; acyclic;
 * every input connected once to an output of the right kind; every node
 * but a cage node reaches the output; at most one cage node, closed and
 * consistently oriented, its edit of the same size; no unknown type,
 * parameter or bone name. */
typedef struct ssk_graph ssk_graph;

/* Limits of a graph document (issue #19), enforced before and while it
 * is parsed, so that a hostile or broken file is rejected fast and within
 * a small multiple of its size in memory:
 * - at most SSK_GRAPH_MAX_NODES nodes (and twice as many edges: a node has
 *   at most two inputs); the deformer keeps one #V buffer per node;
 * - at most SSK_GRAPH_MAX_KEYS keys in each key list;
 * - at most SSK_GRAPH_MAX_VALUES + SSK_GRAPH_VALUES_PER_VERTEX #V JSON
 *   values (numbers, strings, arrays, objects ...), counted by a scan of
 *   the text before json-c builds its tree (stiffness maps and surface
 *   edits hold per-vertex arrays), and nesting at most SSK_GRAPH_MAX_DEPTH
 *   deep;
 * - files at most SSK_GRAPH_MAX_FILE_BYTES (ssk_graph_load). */
#define SSK_GRAPH_MAX_NODES 256u
#define SSK_GRAPH_MAX_KEYS 65536u
#define SSK_GRAPH_MAX_VALUES (1u << 20)
#define SSK_GRAPH_VALUES_PER_VERTEX 8u
#define SSK_GRAPH_MAX_DEPTH 32u
#define SSK_GRAPH_MAX_FILE_BYTES (64u * 1024u * 1024u)

/* Parses and validates a graph against `rig` (bone names).
 * Errors: SSK_ERROR_GRAPH with the JSON position or the node and field at
 * fault, or the limit exceeded; SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_graph_parse(ssk_graph **out, const char *json, const ssk_rig *rig,
                           ssk_error *err);
/* Reads and parses a graph file. Errors: as ssk_graph_parse, SSK_ERROR_IO. */
ssk_status ssk_graph_load(ssk_graph **out, const char *path, const ssk_rig *rig,
                          ssk_error *err);
/* The one-node graph of a skinning method (the --method shorthands). */
ssk_status ssk_graph_from_method(ssk_graph **out, ssk_method method, const ssk_rig *rig,
                                 ssk_error *err);
void ssk_graph_destroy(ssk_graph *graph);
/* Canonical JSON of the graph (malloc'ed, caller frees). */
char *ssk_graph_to_json(const ssk_graph *graph);
/* 1 when a node of the graph needs an attachment binding (rigid, IRS,
 * radial, spring) or the centers of rotation a binding stores (CoR). */
int ssk_graph_needs_binding(const ssk_graph *graph);
/* 1 when a skinning node of the graph uses CoR skinning (its binding should
 * be made with compute_cor). */
int ssk_graph_needs_cor(const ssk_graph *graph);
/* 1 when the graph has an implicit node (a binding given to its deformer
 * should be made with compute_implicit, else the deformer fits the fields
 * itself). */
int ssk_graph_needs_implicit(const ssk_graph *graph);

/* ------------------------------------------------------------------------ */
/* Headless OpenGL context (the GL backend's device).                        */
/* ------------------------------------------------------------------------ */

/* An EGL context (OpenGL 4.3+ core profile, no window) living on a thread
 * that the context owns: every GL call of the core runs on that thread, so a
 * host's current context (Blender's) is never touched. Platforms are tried
 * in order: the EGL device platform with a hardware device, the surfaceless
 * platform (Mesa; llvmpipe without a GPU), then any EGL device. GLEW loads
 * the entry points (GLEW_ERROR_NO_GLX_DISPLAY from glewInit under EGL is
 * accepted, then the compute entry points are checked).
 * Shaders are embedded in the library at build time; when the environment
 * variable SSK_SHADER_DIR is set at creation, they are read from that
 * directory instead (for shader development). */
typedef struct ssk_gl_context ssk_gl_context;

/* Creates the context and its thread.
 * Errors: SSK_ERROR_GL_UNAVAILABLE (no EGL display, no GL 4.3 core context,
 * missing entry points; the message says which platforms were tried and
 * why they failed), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_gl_context_create(ssk_gl_context **out, ssk_error *err);
/* Joins the thread and releases every GL object; NULL allowed. Every
 * deformer using the context must be destroyed first. */
void ssk_gl_context_destroy(ssk_gl_context *ctx);

/* What ssk_gl_context_info reports (strings NUL-terminated, truncated to
 * their arrays). */
typedef struct ssk_gl_info {
    char platform[64];   /* "device (hardware)", "surfaceless", "device" */
    char device[128];    /* EGL device extensions/DRM node when known */
    char vendor[128];    /* GL_VENDOR */
    char renderer[256];  /* GL_RENDERER */
    char version[256];   /* GL_VERSION */
    char glsl_version[64];
    int hardware;        /* 0 for software renderers (llvmpipe, softpipe, ...) */
    int max_work_group_count[3];
    int max_work_group_size[3];
    int max_work_group_invocations;
    int max_shared_memory_bytes;
    long long max_ssbo_bytes;
    int subgroup_size;        /* GL_KHR_shader_subgroup's size, 0 without it */
    int subgroup_arithmetic;  /* 1 when its arithmetic operations are supported */
} ssk_gl_info;

/* Errors: SSK_ERROR_INVALID_ARGUMENT (NULL). */
ssk_status ssk_gl_context_info(const ssk_gl_context *ctx, ssk_gl_info *out,
                               ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Deformer: a method on a backend, for a whole rig.                         */
/* ------------------------------------------------------------------------ */


typedef enum ssk_backend {
    SSK_BACKEND_AUTO = 0, /* GL on a hardware GPU, else the CPU */
    SSK_BACKEND_CPU = 1,  /* every core (ssk_threading) */
    SSK_BACKEND_GL = 2,   /* OpenGL 4.3 compute shaders, headless EGL */
    SSK_BACKEND_COUNT
} ssk_backend;

/* "lbs", "dqs", "rigid", "irs", "spring", "cor"; NULL when out of range. */
const char *ssk_method_name(ssk_method method);
/* Parses a method name in any case ("lbs", "LBS" as Blender's enums spell
 * it: issue #17). SSK_ERROR_INVALID_ARGUMENT lists the accepted names. */
ssk_status ssk_method_parse(ssk_method *out, const char *name, ssk_error *err);
/* "auto", "cpu", "gl"; NULL when out of range. */
const char *ssk_backend_name(ssk_backend backend);
/* "weights", "binding" (ssk_attachment_mode); NULL when out of range. */
const char *ssk_attachment_mode_name(ssk_attachment_mode mode);

/* Replaces multilevel = SSK_SPRING_SOLVER_AUTO in *p (in place) with the
 * solver it stands for on `backend`: SSK_SPRING_MULTIGRID with
 * chebyshev_rho 0 on both backends (on GL the force passes run on the
 * device and the multigrid's correction on the host), the plain update
 * (both 0) with the semi-implicit integrator or the energy scheme, where
 * neither applies. Other values, and NULL, are left alone.
 * ssk_spring_create resolves it, and picks the per-bone levels
 * (SSK_SPRING_MULTILEVEL_BONES, chebyshev_rho kept) instead of the
 * multigrid when given surface edits (the multigrid's rest model leaves
 * the handles' rows out: on a sheet pulled by handles it stalls far from
 * the equilibrium, issue #36). */
void ssk_spring_params_resolve(ssk_spring_params *p, ssk_backend backend);
/* Parses a backend name in any case. SSK_ERROR_INVALID_ARGUMENT lists the
 * accepted names. */
ssk_status ssk_backend_parse(ssk_backend *out, const char *name, ssk_error *err);

/* Centers of rotation of a whole rig (Le & Hodgins 2016, Eq. 1 and 4): the
 * meshes' triangles in rig space (object matrices applied) form one
 * integration mesh, so a vertex's CoR integrates every mesh with similar
 * weights (the paper's models with several components); meshes without
 * triangles only receive CoRs.
 * - dst_centers: ssk_rig_vertex_count(rig) by 3, rig space (a vertex
 *   without CoR gets its own rest position in rig space); dst_flags: as
 *   many bytes, 1 with a CoR.
 * - backend: CPU: ssk_cor_compute's sums over cells of weight space
 *   (linear in the mesh); GL: the same cells built on the CPU, each
 *   vertex's sums over them in a compute shader
 *   (shaders/bind_cor_precompute.comp; equal to the CPU's within float
 *   rounding, also linear); AUTO: GL on a hardware GPU, else the CPU.
 * - gl: the context for GL/AUTO (borrowed), or NULL to create one for the
 *   call. stats: may be NULL.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, parameters out of range),
 * SSK_ERROR_OUT_OF_MEMORY, the
 * GL context and shader errors. */
ssk_status ssk_cor_precompute(float *dst_centers, uint8_t *dst_flags, const ssk_rig *rig,
                              const ssk_cor_params *params, ssk_backend backend,
                              ssk_gl_context *gl, ssk_cor_stats *stats, ssk_error *err);

/* A CoR precomputation kept for incremental updates (issue #18): when a
 * rigger edits the weights of a few vertices, only the leaves around them
 * are made again, and every other vertex's Eq. 4 sums change by the
 * differences of the changed weight-space cells alone. Memory: the
 * integration mesh, the cells' raw moments (about 200 bytes a cell) and 32
 * bytes a vertex. CPU only. */
typedef struct ssk_cor_state ssk_cor_state;

/* As ssk_cor_precompute on the CPU (the same centers, within 1e-5 of the
 * diagonal: the same sums in another order), keeping what an update needs.
 * Errors: as ssk_cor_precompute. *out is NULL on error. */
ssk_status ssk_cor_state_create(ssk_cor_state **out, float *dst_centers, uint8_t *dst_flags,
                                const ssk_rig *rig, const ssk_cor_params *params,
                                ssk_cor_stats *stats, ssk_error *err);
/* The skin weights of `count` whole-rig rows changed: `rig` is the rig with
 * the new weights (the same vertices, triangles and bones as the state's).
 * Updates dst_centers and dst_flags (#V, those of the last create or
 * update) in place. A row may gain or lose bones: its triangles' bone
 * sets are made again, with any new bone pairs (cost: a copy of the
 * weights and the triangles' bone sets, O(#V + #T), on top). stats:
 * cor_count = centers recomputed, cluster_count = cells changed, seconds.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, another rig's size, a row out
 * of range), SSK_ERROR_OUT_OF_MEMORY (the state is then unusable: destroy
 * it). */
ssk_status ssk_cor_state_update(ssk_cor_state *state, float *dst_centers, uint8_t *dst_flags,
                                const ssk_rig *rig, const uint32_t *rows, uint32_t count,
                                ssk_cor_stats *stats, ssk_error *err);
/* NULL allowed. */
void ssk_cor_state_destroy(ssk_cor_state *state);

typedef struct ssk_deformer ssk_deformer;

typedef struct ssk_deformer_desc {
    ssk_method method;
    ssk_backend backend;
    /* GL backend (and AUTO): the context to use, borrowed, must outlive the
     * deformer; NULL lets the deformer create and own one. */
    ssk_gl_context *gl_context;
    /* The deformer graph to run (borrowed; copied at creation), or NULL
     * for the one-node graph of `method`. */
    const ssk_graph *graph;
    /* The attachment binding for rigid/IRS/radial nodes (borrowed, must
     * outlive the deformer; it must be the rig's), or NULL to bind with
     * the default parameters when the graph needs one. CoR skinning nodes
     * take the binding's centers of rotation; when it has none (or there
     * is no binding and no other node needs one) the deformer computes
     * them at creation with ssk_cor_params_default on the CPU. */
    const ssk_binding *binding;
    /* Centers of rotation for CoR skinning nodes, or NULL (both): #V by 3
     * rig-space centers and #V flags (1: the vertex has a center), as
     * ssk_cor_compute, ssk_cor_precompute or ssk_cor_state_update write
     * them for this rig. Borrowed during ssk_deformer_create only (copied);
     * they take the place of the binding's centers, so a CoR graph can
     * follow an incremental update (issue #18) without binding again.
     * With a graph whose cage node edits the cage, they are the given
     * rig's centers, which the cage node repositions by Eq. 14
     * (ssk_cage_bind_cor); without them it repositions ssk_cor_precompute's.
     * Errors: SSK_ERROR_INVALID_ARGUMENT when only one is given or a
     * flagged center is not finite. */
    const float *cor_centers;
    const uint8_t *cor_flags;
    /* Implicit nodes: the composition operators (borrowed, must outlive
     * the deformer), or NULL to build them at creation (about 2 s). */
    const ssk_implicit_operators *implicit_operators;
} ssk_deformer_desc;

/* Creates a deformer for `rig`, which is borrowed and must outlive it.
 * GL: uploads the rig once (positions, weights, triangles, CSR) into
 * persistent shader storage buffers; per frame only per-bone data is
 * uploaded. AUTO takes GL when the context's renderer is a hardware GPU and
 * the CPU otherwise; when GL cannot be had, AUTO falls back to the CPU and
 * sets `err` to SSK_OK with a warning in err->message (status SSK_OK).
 * A graph with a cage node whose edit changes the cage: the deformer binds
 * the cage to `rig` (ssk_cage_create), runs every node on the rig the edit
 * describes (ssk_cage_reshape) and carries each frame's skinning matrices
 * of `rig` over to it (ssk_cage_pose), CoR nodes with Eq. 14's centers; a
 * binding given must be that reshaped rig's. An unedited cage node is
 * bound (checked) and changes nothing.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, method/backend out of range;
 * a cage node's cage that does not enclose the joints, named after the
 * node), SSK_ERROR_OUT_OF_MEMORY, and for GL the context and shader errors
 * (SSK_ERROR_GL_UNAVAILABLE, SSK_ERROR_GL_SHADER with the GLSL log,
 * SSK_ERROR_GL). */
ssk_status ssk_deformer_create(ssk_deformer **out, const ssk_rig *rig,
                               const ssk_deformer_desc *desc, ssk_error *err);
void ssk_deformer_destroy(ssk_deformer *deformer);
/* The backend actually used (never AUTO). */
ssk_backend ssk_deformer_backend(const ssk_deformer *deformer);
/* Sets the frame (in frames, fractional allowed) at which animated node
 * parameters (radial and surface-edit "keys") are evaluated by the next
 * deform, and that frame-dependent springs use to continue from the
 * previous frame; default 0. */
void ssk_deformer_set_frame(ssk_deformer *deformer, double frame);

/* The spring nodes of the last deform, summed: iterations (total), the
 * largest residual, the total energy, converged only if all converged.
 * Zero when the graph has no spring node. */
void ssk_deformer_spring_report(const ssk_deformer *deformer, ssk_spring_report *out);

/* Which vertices the last deform's springs left unsettled (issue #36): dst
 * (#V floats, the whole rig's rows; caller-owned, count = #V) gets each
 * vertex's estimated distance to the spring equilibrium over the
 * convergence tolerance: its move in the solve's last pass over that
 * pass's largest move, times the solve's residual over its threshold
 * (ssk_spring_report; the largest over the spring nodes). 1 or more: the
 * vertex did not settle; a converged solve leaves every vertex below 1. 0
 * everywhere before a deform or without a spring node. Errors:
 * SSK_ERROR_INVALID_ARGUMENT (NULL, count), SSK_ERROR_UNSUPPORTED on the
 * GL backend (its iterates stay on the device). */
ssk_status ssk_deformer_spring_unsettled(const ssk_deformer *deformer, float *dst,
                                         uint32_t count, ssk_error *err);
/* "cpu (N threads)" or the GL renderer string; owned by the
 * deformer. */
const char *ssk_deformer_device_name(const ssk_deformer *deformer);

/* Deforms every mesh of the rig for one pose.
 * - dst_positions: ssk_rig_vertex_count(rig) by 3, meshes concatenated in
 *   mesh order, each in its own object space; or NULL to keep the result on
 *   the backend (GL: no readback) for ssk_deformer_normals and
 *   ssk_deformer_max_displacement.
 * - skinning_matrices: #B by 16 row-major, rig space.
 * - object_matrices: #M by 16 object -> rig matrices of the meshes at this
 *   frame, or NULL to use each mesh's rest object matrix.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_NONFINITE (a matrix
 * with NaN/Inf, or a singular object matrix), SSK_ERROR_SPRING_DIVERGED (a
 * spring node diverged: it keeps its last good iterate, the graph still
 * runs to the end and dst_positions is written before the status is
 * returned). */
ssk_status ssk_deformer_deform(ssk_deformer *deformer, float *dst_positions,
                               const float *skinning_matrices,
                               const float *object_matrices, ssk_error *err);

/* Area-weighted vertex normals of the positions of the last
 * ssk_deformer_deform, computed on the deformer's backend (GL: from the
 * device buffer, face normals then a gather per vertex; CPU: from the
 * dst_positions array given to the last deform, which must still hold
 * them, or the deformer's own buffer when that was NULL).
 * - dst_normals: ssk_rig_vertex_count(rig) by 3, unit length, object space.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, or no deform yet), SSK_ERROR_GL. */
ssk_status ssk_deformer_normals(ssk_deformer *deformer, float *dst_normals,
                                ssk_error *err);

/* Largest per-vertex displacement max_v |p_v - r_v| (Euclidean, model
 * units) between the positions of the last ssk_deformer_deform (as for
 * ssk_deformer_normals) and `reference` (ssk_rig_vertex_count(rig) by 3),
 * reduced on the deformer's backend; the convergence measure of the
 * iterative deformers.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, or no deform yet), SSK_ERROR_GL. */
ssk_status ssk_deformer_max_displacement(ssk_deformer *deformer, float *out_max,
                                         const float *reference, ssk_error *err);

/* Per-frame timing of the last ssk_deformer_deform, in seconds: upload of
 * per-bone data, the kernels, and readback (CPU: upload and readback 0). */
typedef struct ssk_deform_timing {
    double upload_seconds;
    double compute_seconds;
    double readback_seconds;
} ssk_deform_timing;
void ssk_deformer_timing(const ssk_deformer *deformer, ssk_deform_timing *out);

/* Area-weighted vertex normals of whole-rig positions (as written by
 * ssk_deformer_deform), on the CPU: dst_normals and positions are
 * ssk_rig_vertex_count(rig) by 3. */
ssk_status ssk_rig_normals(const ssk_rig *rig, float *dst_normals,
                           const float *positions, ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Import (Assimp) and animation.                                            */
/* ------------------------------------------------------------------------ */

typedef struct ssk_scene ssk_scene;

/* Imports a rigged file through Assimp with exactly
 * aiProcess_Triangulate | aiProcess_JoinIdenticalVertices, so vertex order is
 * Assimp's. Every mesh with bones joins one rig (bones matched by name);
 * meshes without bones are skipped. Rig space is the space of the armature
 * node A, as Blender blends skinning in its armature object's space: the
 * lowest common ancestor of the bones' nodes, moved up while it is a bone's
 * node or one of Assimp's FBX pivot nodes ("<name>_$AssimpFbx$_<kind>"); the
 * file's root-parent space when none is left. So a unit scale or an axis
 * rotation on the armature node (Blender's FBX exporter writes both) is not
 * part of any skinning matrix, and a non-uniform scale above the armature
 * does not shear what DQS blends. Each mesh's object matrix is
 * G(A)^-1 · G(mesh node) (static global transforms G); the bind matrix of a
 * bone is G(A)^-1 · G(mesh node) · inverse(offset) of the first mesh that
 * lists it. Influences of a bone that no node is named after are dropped
 * (Blender ignores a vertex group without a bone) and the remaining weights
 * renormalized (ssk_scene_bone_node counts them). In glTF and DirectX .x
 * files the transform of a node that references a skinned mesh is ignored,
 * as glTF 2.0 requires (only joint transforms apply) and as .x offsets
 * assume (they map root-space vertices to bone space): such a mesh's object
 * space is the scene's root space. A mesh referenced by several nodes uses
 * the first in
 * depth-first order (identity if none); faces that are not triangles after
 * triangulation (points, lines) are dropped. A bone's parent is its nearest
 * ancestor node that is a bone; its head is the bind translation, its tail
 * the head of the child bone weighting the most vertices (else the first
 * child), or for a leaf the head plus the bind Y axis times the farthest
 * projection of its weighted vertices on it (1/10 of the skeleton extent if
 * none). Influences per vertex keep Assimp's mesh bone order, padded with
 * (0, 0); beyond SSK_MAX_INFLUENCES the smallest weights are dropped. The
 * first UV channel of each mesh (u, v per vertex) is kept for Alembic
 * output (dropped when it holds a non-finite value).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_IO (unreadable),
 * SSK_ERROR_IMPORT (Assimp's message: garbage, truncated, unsupported; or
 * inconsistent data such as a singular offset matrix), SSK_ERROR_NO_SKELETON
 * (no mesh has bones), SSK_ERROR_NONFINITE (a key; a singular bind matrix),
 * SSK_ERROR_OUT_OF_MEMORY, and the rig validation errors (message prefixed
 * with the path). Destroy with ssk_scene_destroy. */
ssk_status ssk_scene_import(ssk_scene **out_scene, const char *path,
                            ssk_error *err);

/* A cage for coupled cages and skeletons (Corda et al. 2020; issue #21): a
 * closed triangle mesh in rig space. Owned arrays (ssk_cage_mesh_free). */
typedef struct ssk_cage_mesh {
    uint32_t vertex_count;   /* c */
    uint32_t triangle_count;
    float *vertices;         /* c by 3, rig space */
    uint32_t *triangles;     /* triangle_count by 3 */
} ssk_cage_mesh;

/* Reads a cage from `path` with Assimp (OBJ, or any format it reads):
 * every mesh of the file through its node's global matrix (the file's
 * root space, the scene root space of the character the cage was made
 * for), then into the rig space of `scene` (NULL: the file's root space is
 * rig space); vertices at exactly the same position are merged (a cage is
 * one closed surface; OBJ files repeat a corner per normal).
 * - out: zeroed on entry, the caller's (ssk_cage_mesh_free).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, fewer than 4 vertices or
 * triangles), SSK_ERROR_IMPORT (Assimp's message), SSK_ERROR_NONFINITE,
 * SSK_ERROR_OUT_OF_MEMORY. Whether it is closed and consistently oriented
 * is the cage binding's check. */
ssk_status ssk_cage_mesh_import(ssk_cage_mesh *out, const char *path, const ssk_scene *scene,
                                ssk_error *err);
void ssk_cage_mesh_free(ssk_cage_mesh *mesh);

/* A cage bound to a rig at rest (Corda et al. 2020, 3-4.2; issue #21):
 * every rest vertex's 3D mean value coordinates Phi with respect to the
 * cage (Ju et al. 2005; M = Phi C, Eq. 7), every bone head's coordinates
 * Psi (Eq. 9-12: the skin weights' joint localization, s = 0.1, then
 * maximum-entropy coordinates, Hormann and Sukumar 2008) and the cage
 * updater's MaxVol rows and LU factors (4.1, Eq. 8). Opaque; the rig is
 * borrowed and must outlive it. */
typedef struct ssk_cage ssk_cage;

/* Binds `cage` (closed, consistently oriented, rig space; borrowed during
 * the call) to `rig`.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, an open or inconsistently
 * oriented cage, a bone head outside it: named), SSK_ERROR_NONFINITE,
 * SSK_ERROR_BIND (the cage updater's system is singular),
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_create(ssk_cage **out, const ssk_rig *rig, const ssk_cage_mesh *cage,
                           ssk_error *err);
/* ssk_cage_create that keeps its binding in `binding` (the attachment
 * binding of `rig`, ssk_binding_create or ssk_binding_load; NULL: plain
 * ssk_cage_create): when the binding holds a cage binding made for this
 * rest cage (its key: the cage's vertices and triangles, the localization
 * exponent and the version of the cage binding's algorithms; binding file
 * format version 4, core/bind/binding_io.c), Phi, Psi and the MaxVol rows
 * are taken from it and only Phi~ is factorized again (*out_reused = 1;
 * the cage behaves bit for bit as a freshly bound one); otherwise the cage
 * is bound and its binding stored in `binding`, replacing any other
 * cage's (*out_reused = 0; save the binding with ssk_binding_save to keep
 * it). out_reused may be NULL.
 * Errors: those of ssk_cage_create, SSK_ERROR_BINDING_MISMATCH (the
 * binding is another rig's). */
ssk_status ssk_cage_create_cached(ssk_cage **out, const ssk_rig *rig, const ssk_cage_mesh *cage,
                                  ssk_binding *binding, int *out_reused, ssk_error *err);
void ssk_cage_destroy(ssk_cage *cage);
/* c, the cage's vertex count (0 for NULL). */
uint32_t ssk_cage_vertex_count(const ssk_cage *cage);

/* The rig an edited rest cage describes: edited_vertices (c by 3, rig
 * space, the cage's topology) gives the rest positions Phi C' (Eq. 7) and
 * the bone heads Psi C' (Eq. 13); bind matrices keep their rest rotation
 * with the new heads, a connected chain stays connected, meshes, weights
 * and names are the rig's. *out is a new rig (ssk_rig_destroy). The heads
 * are also kept in the cage for ssk_cage_pose. The rest cage itself gives
 * the rig's rest shape back (within rounding: Phi reproduces it).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_NONFINITE, the rig
 * creation errors, SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_reshape(ssk_rig **out, ssk_cage *cage, const float *edited_vertices,
                            ssk_error *err);

/* dst (#B by 16, caller-owned, not `skinning`) gets the skinning matrices
 * of the last ssk_cage_reshape's rig for a frame whose skinning matrices
 * of the original rig are `skinning` (#B by 16, rig space): rotations kept,
 * translations recomputed down the hierarchy from the new heads (4.2).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_NONFINITE. */
ssk_status ssk_cage_pose(float *dst, const ssk_cage *cage, const float *skinning, ssk_error *err);

/* dst (c by 3, caller-owned) gets the posed cage C' fitted to deformed
 * positions (#V by 3, rig space) of the rig: Phi~ C' = M~' at the MaxVol
 * vertices (4.1, Eq. 8, back-substitution).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_NONFINITE. */
ssk_status ssk_cage_fit(float *dst, const ssk_cage *cage, const float *positions, ssk_error *err);

/* The reverse cage deformer (4.3, Eq. 19): rest_offset (c by 3,
 * caller-owned) gets the offset dC of the rest cage that moves the posed
 * cage by posed_offset (c by 3, rig space: an edit dC' a user makes on the
 * cage in a pose) through the reshape, the carried skinning, LBS and the
 * cage updater; skinning (#B by 16) is the pose's (the original rig's or
 * ssk_cage_pose's: they have the same rotations, which alone enter). Exact
 * for LBS; for the other methods an approximation (the LBS system is
 * used: test_cage_rev measures the posed cage off by about 21% of dC' with
 * DQS at a 75-degree bend). Errors: SSK_ERROR_INVALID_ARGUMENT (NULL),
 * SSK_ERROR_NONFINITE, SSK_ERROR_BIND (a singular system),
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_reverse(float *rest_offset, const ssk_cage *cage, const float *skinning,
                            const float *posed_offset, ssk_error *err);

/* Centers of rotation repositioning (Corda et al. 2020, Eq. 14: CoRs =
 * Lambda C): binds the rig's own centers of rotation (centers: #V by 3,
 * rig space; flags: #V, 1 with a center; as ssk_cor_precompute or a
 * binding's ssk_binding_view writes them for the cage's rig, borrowed
 * during the call) to the cage: Lambda (a row of c per vertex with a
 * center, kept in the cage) gets each center's mean value coordinates
 * with respect to the rest cage (the paper's Lambda = Phi_CoRs Phi would
 * express the center through the mesh rows of Eq. 5; the center's own
 * coordinates reproduce it as exactly: core/bind/cage_rig.c says where
 * they differ); a vertex without a center keeps its own rest position as
 * center, the reshape's Phi C'. Precomputed once, replacing any earlier.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, a center the cage's mean
 * value coordinates cannot take), SSK_ERROR_NONFINITE (a flagged center),
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_cage_bind_cor(ssk_cage *cage, const float *centers, const uint8_t *flags,
                             ssk_error *err);
/* dst_centers (#V by 3, rig space) and dst_flags (#V), caller-owned, get
 * the centers of rotation of the last ssk_cage_reshape's rig by Eq. 14,
 * Lambda C' (C' that reshape's edited rest cage; the rest cage, or no
 * reshape yet, gives the bound centers bit for bit). Without
 * ssk_cage_bind_cor first, binds the rig's centers from
 * ssk_cor_precompute (ssk_cor_params_default, CPU) once.
 * Errors: those of ssk_cor_precompute and ssk_cage_bind_cor,
 * SSK_ERROR_NONFINITE. */
ssk_status ssk_cage_cor_centers(float *dst_centers, uint8_t *dst_flags, ssk_cage *cage,
                                ssk_error *err);
/* 1 when edited_vertices (c by 3) are the cage's rest vertices exactly
 * (an edit that changes nothing), else 0 (also for NULL). */
int ssk_cage_is_rest(const ssk_cage *cage, const float *edited_vertices);
void ssk_scene_destroy(ssk_scene *scene);

/* The scene's rig, owned by the scene. */
const ssk_rig *ssk_scene_rig(const ssk_scene *scene);

/* Name of the armature node whose space is rig space (ssk_scene_import),
 * owned by the scene; NULL when rig space is the file's root-parent space or
 * scene is NULL. */
const char *ssk_scene_armature_name(const ssk_scene *scene);

/* Whether a node of the scene carries rig bone `bone` (*out_has_node 1 or 0), and
 * how many vertices lost an influence of that bone at import because none
 * does (*out_dropped_vertices, 0 for a bone with a node).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, bone out of range). */
ssk_status ssk_scene_bone_node(const ssk_scene *scene, uint32_t bone, int *out_has_node,
                               uint32_t *out_dropped_vertices, ssk_error *err);

uint32_t ssk_scene_animation_count(const ssk_scene *scene);

typedef struct ssk_animation_info {
    const char *name;        /* owned by the scene */
    double duration_seconds; /* duration in ticks / ticks per second */
    double ticks_per_second; /* Assimp's value, 25 when the file has none */
    uint32_t channel_count;  /* the file's node channels (those naming no
                                node are ignored; first per node wins) */
} ssk_animation_info;

/* Errors: SSK_ERROR_NO_ANIMATION when animation >= count. */
ssk_status ssk_scene_animation(const ssk_scene *scene, uint32_t animation,
                               ssk_animation_info *out, ssk_error *err);

/* Frames at `fps` in the animation: floor(duration · fps + 1e-4) + 1 (the
 * epsilon absorbs the float32 rounding of glTF's and Assimp's times). 0
 * when info is NULL or fps is not a finite positive number; saturates at
 * UINT32_MAX. */
uint32_t ssk_animation_frame_count(const ssk_animation_info *info, double fps);

/* Samples animation `animation` at `time_seconds`: node local transforms from
 * channels (positions and scales linearly interpolated, rotations by
 * normalized-quaternion slerp, keys in ticks, clamped outside the key range)
 * or the node's static transform, composed from the root (G). With A the
 * armature node (rig space, see ssk_scene_import), writes
 * - dst_skinning: #B by 16, S_b = G(A, t)^-1 · G(b, t) · inverse(bind_b), rig
 *   space at t from rig space at rest;
 * - dst_object_matrices: #M by 16, G(A, t)^-1 · G(mesh node, t) (object ->
 *   rig space at t), or NULL to skip.
 * With these, ssk_deformer_deform gives exactly Assimp's skinning matrix
 * inverse(G(m, t)) · G(b, t) · offset_m(b) for each mesh m for LBS, and DQS
 * blends in the armature's space as Blender does. A channel kind with no key
 * takes the node's static T, R or S; a bone that no node is named after gets
 * the identity (its influences were dropped at import); t is clamped,
 * pre/post states are ignored.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL scene or dst_skinning),
 * SSK_ERROR_NO_ANIMATION, SSK_ERROR_NONFINITE (time; an armature node that
 * is singular at t), SSK_ERROR_OUT_OF_MEMORY (a #nodes scratch buffer). */
ssk_status ssk_scene_sample(const ssk_scene *scene, uint32_t animation,
                            double time_seconds, float *dst_skinning,
                            float *dst_object_matrices, ssk_error *err);

/* Rig space -> scene space (the file's world, the root node's parent space)
 * at `time_seconds`: G(armature node, t), the identity when the rig has no
 * armature node. dst: 16 floats, row-major. Multiply the object matrices of
 * ssk_scene_sample by it for the meshes' world matrices (the Alembic Xforms).
 * Errors: SSK_ERROR_INVALID_ARGUMENT, SSK_ERROR_NO_ANIMATION,
 * SSK_ERROR_NONFINITE (time). */
ssk_status ssk_scene_rig_matrix(const ssk_scene *scene, uint32_t animation,
                                double time_seconds, float dst[16], ssk_error *err);

/* Rig space -> the file's scene root space at rest (the nodes' static
 * transforms, no animation): the space cage files (ssk_cage_mesh_import)
 * and `springskin info`'s scene bounding box are in. dst: 16 floats,
 * row-major; the identity for a NULL scene or a rig without an armature
 * node. */
void ssk_scene_rest_rig_matrix(const ssk_scene *scene, float dst[16]);

/* ------------------------------------------------------------------------ */
/* Check: what a rigger runs on a file before trusting a bake.               */
/* ------------------------------------------------------------------------ */

typedef enum ssk_check_level {
    SSK_CHECK_OK = 0,
    SSK_CHECK_WARNING,
    SSK_CHECK_ERROR
} ssk_check_level;

/* "ok", "warning", "error"; NULL out of range. */
const char *ssk_check_level_name(ssk_check_level level);

typedef struct ssk_check_item {
    ssk_check_level level;
    char topic[32];     /* "space", "nodes", "seams", "weights", "bones",
                           "influences", "method <name>" */
    char message[512];  /* one line, numbers rounded so reports diff well */
} ssk_check_item;

typedef struct ssk_check_report {
    uint32_t item_count, warning_count, error_count;
    uint32_t frame_count;   /* frames the methods ran on */
    ssk_check_item *items;  /* #item_count, in the order above */
} ssk_check_report;

typedef struct ssk_check_desc {
    double fps;                 /* frames per second (default 24) */
    uint32_t animation;         /* which animation (default 0) */
    uint32_t frame_count;       /* frames to run each method on, spread evenly
                                   over the animation, first and last
                                   included (default 5) */
    ssk_backend backend;        /* for the methods (default CPU) */
    ssk_gl_context *gl_context; /* borrowed, or NULL */
} ssk_check_desc;

void ssk_check_desc_default(ssk_check_desc *out);

/* Checks an imported scene and reports, one item each:
 * - space: the armature node (rig space) with its scale and rotation;
 *   whether the format ignores the nodes of skinned meshes (glTF, .x);
 * - nodes: bones with a non-uniform scale in their bind hierarchy (warning:
 *   DQS and CoR blend a scale matrix), meshes that scale non-uniformly
 *   relative to the armature, mesh nodes that move relative to the
 *   armature over the checked frames (warning);
 * - seams: welded coincident vertices (ssk_rig_weld) and hard edges kept;
 *   coincident vertices with other weights than their representative
 *   (warning);
 * - weights: vertices without weights (warning: they stay at rest);
 * - bones: bones without a node, their influences dropped (warning, names
 *   and vertex counts), bones that weight no vertex (names);
 * - influences: vertices past SSK_MAX_INFLUENCES (warning);
 * - method lbs, dqs, rigid, irs, spring, cor: each run on the frames; error
 *   when it fails, gives a non-finite position, a bounding box over 1.5x
 *   LBS's at a frame, or coincident vertices farther apart than 1e-6 of the
 *   diagonal (for LBS and DQS, which follow the weights: copies, i.e.
 *   vertices of one mesh with one rest position and the same weights);
 *   warning when the springs do not converge or diverge.
 * *out: owned by the caller, ssk_check_report_destroy. A finding is never
 * a failure of the call. Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, fps <= 0,
 * frame_count 0), SSK_ERROR_NO_ANIMATION (animation out of range),
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_scene_check(ssk_check_report **out, const ssk_scene *scene,
                           const ssk_check_desc *desc, ssk_error *err);
/* NULL allowed. */
void ssk_check_report_destroy(ssk_check_report *report);

/* ------------------------------------------------------------------------ */
/* Point cache (.pc2) writer.                                                */
/* ------------------------------------------------------------------------ */

/* Streaming writer of the PC2 point cache (3ds Max / Blender Mesh Cache):
 * header "POINTCACHE2\0", int32 version 1, int32 #points, float32 start frame,
 * float32 sample rate, int32 #samples; then per sample #points float32
 * triples; little-endian. The file is written under "<path>.tmp-<pid>" and
 * renamed onto `path` by ssk_pc2_writer_finish; ssk_pc2_writer_abort (or a
 * failed finish) removes it, so no truncated cache is ever left. */
typedef struct ssk_pc2_writer ssk_pc2_writer;

/* Errors: SSK_ERROR_INVALID_ARGUMENT, SSK_ERROR_IO (cannot create). */
ssk_status ssk_pc2_writer_open(ssk_pc2_writer **out, const char *path,
                               uint32_t point_count, float start_frame,
                               float sample_rate, ssk_error *err);
/* positions: #points by 3. Errors: SSK_ERROR_NONFINITE (nothing written),
 * SSK_ERROR_IO (disk full...). */
ssk_status ssk_pc2_writer_write(ssk_pc2_writer *writer, const float *positions,
                                ssk_error *err);
/* Patches the sample count, flushes, closes, renames. Frees the writer in
 * every case. Errors: SSK_ERROR_IO (the temporary file is then removed). */
ssk_status ssk_pc2_writer_finish(ssk_pc2_writer *writer, ssk_error *err);
/* Closes and removes the temporary file; frees the writer. NULL allowed. */
void ssk_pc2_writer_abort(ssk_pc2_writer *writer);

/* ------------------------------------------------------------------------ */
/* Alembic cache (.abc) writer.                                              */
/* ------------------------------------------------------------------------ */

/* Streaming writer of an Alembic archive (Ogawa container, AbcCoreOgawa
 * layout, little-endian; written by the core itself, layout documented in
 * core/io/abc.c and core/io/ogawa.h). Per mesh i: an Xform "/NAME" carrying the
 * mesh's object matrix, holding a PolyMesh "/NAME/NAMEShape" with constant
 * topology (triangles, stored with Alembic's clockwise winding), animated P
 * and .selfBnds per frame, optional animated per-vertex normals N and
 * constant per-corner uv; a uniform time sampling (1/fps s per sample,
 * first at start_time); archive metadata _ai_Application, _ai_DCC_FPS,
 * _ai_DateWritten. Sample keys are MurmurHash3_x64_128 (seed 0); object and
 * property hashes are written as zeros. Samples are written as frames
 * arrive (memory does not grow with the frame count beyond 16 bytes per
 * animated property per frame); the file is written under
 * "<path>.tmp-<pid>" and renamed onto `path` by ssk_abc_writer_finish;
 * ssk_abc_writer_abort (or any failure of finish) removes it. */
typedef struct ssk_abc_writer ssk_abc_writer;

/* One mesh of the archive; arrays are read during ssk_abc_writer_open only.
 * - name: object name, NULL or "" for "mesh_<i>"; '/' becomes '_' and a
 *   name already used gets "_<i>".
 * - vertex_count: #V >= 1, rows of this mesh in the whole-rig arrays given
 *   to write_frame (meshes concatenated in order).
 * - triangles: #F by 3 int32 vertex indices in [0, #V), counter-clockwise
 *   front faces (SpringSkin's rule); NULL allowed with #F = 0.
 * - uvs: #V by 2 float32 texture coordinates per vertex, or NULL (no uv).
 * - object_matrix: 16 floats, row-major, mesh object space -> rig space, the
 *   Xform's transform when write_frame gets no matrices; NULL: identity. */
typedef struct ssk_abc_mesh_desc {
    const char *name;
    uint32_t vertex_count;
    uint32_t triangle_count;
    const int32_t *triangles;
    const float *uvs;
    const float *object_matrix;
} ssk_abc_mesh_desc;

typedef struct ssk_abc_desc {
    const ssk_abc_mesh_desc *meshes; /* #M >= 1 */
    uint32_t mesh_count;
    double fps;               /* samples per second, finite, > 0 */
    double start_time;        /* seconds of the first sample, finite */
    int with_normals;         /* non-zero: write N; write_frame then needs
                                 normals */
    const char *application;  /* _ai_Application; NULL: "SpringSkin <version>" */
    const char *date_written; /* _ai_DateWritten; NULL: local time now,
                                 "Www Mmm dd hh:mm:ss yyyy", or the time
                                 SOURCE_DATE_EPOCH (seconds since 1970, the
                                 reproducible-builds variable) names, in
                                 UTC, when the environment sets it: the
                                 only date or time the archive records */
} ssk_abc_desc;

/* Validates the description, creates the temporary file and writes the
 * constant samples (topology, uv).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, empty path, no mesh, fps or
 * start time out of range, ';' or '=' in a metadata value, a
 * SOURCE_DATE_EPOCH that is not a non-negative decimal integer),
 * SSK_ERROR_EMPTY_MESH (#V = 0), SSK_ERROR_TRIANGLE_INDEX,
 * SSK_ERROR_NONFINITE (uv, object matrix), SSK_ERROR_UNSUPPORTED (a sample
 * over 4 GiB), SSK_ERROR_OUT_OF_MEMORY, SSK_ERROR_IO (cannot create or
 * write). On error *out is NULL and nothing is left on disk. */
ssk_status ssk_abc_writer_open(ssk_abc_writer **out, const char *path,
                               const ssk_abc_desc *desc, ssk_error *err);
/* Appends one frame.
 * - positions: whole-rig #V by 3 float32 (sum of the meshes' #V), each mesh
 *   in its own object space, model units.
 * - normals: #V by 3 unit normals (object space) when opened with
 *   with_normals, else NULL.
 * - object_matrices: #M by 16 row-major object -> rig matrices of this
 *   frame, or NULL for the meshes' object_matrix.
 * Everything is checked before anything is written: SSK_ERROR_NONFINITE
 * (a NaN/Inf position, normal or matrix; the writer stays usable),
 * SSK_ERROR_INVALID_ARGUMENT (NULL, normals given or missing against
 * with_normals), SSK_ERROR_IO (disk full...: the writer can then only be
 * aborted or finished, which fails). */
ssk_status ssk_abc_writer_write_frame(ssk_abc_writer *writer, const float *positions,
                                      const float *normals, const float *object_matrices,
                                      ssk_error *err);
/* Writes the hierarchy, headers, time sampling and metadata, flushes,
 * fsyncs, closes and renames. Frees the writer in every case.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (no frame written), SSK_ERROR_IO (an
 * earlier or final write failed), SSK_ERROR_OUT_OF_MEMORY; the temporary
 * file is then removed. */
ssk_status ssk_abc_writer_finish(ssk_abc_writer *writer, ssk_error *err);
/* Closes and removes the temporary file; frees the writer. NULL allowed. */
void ssk_abc_writer_abort(ssk_abc_writer *writer);

/* ------------------------------------------------------------------------ */
/* Bake: the main job.                                                       */
/* ------------------------------------------------------------------------ */

typedef struct ssk_bake_desc {
    const char *output_path;  /* format from the extension (any case):
                                 ".pc2" or ".abc" (Alembic) */
    ssk_method method;
    ssk_backend backend;
    double fps;               /* > 0; 24 is the CLI default */
    uint32_t animation;       /* index, 0 = first */
    int32_t first_frame;      /* inclusive */
    int32_t last_frame;       /* inclusive; first_frame = 0, last_frame = -1
                                 means the whole animation:
                                 0 .. floor(duration · fps) */
    ssk_progress_fn progress; /* may be NULL */
    void *progress_user;
    ssk_gl_context *gl_context; /* GL/AUTO: borrowed context, or NULL */
    const ssk_graph *graph;     /* deformer graph, or NULL for `method` */
    const ssk_binding *binding; /* attachment binding, or NULL (bound with
                                   defaults when the graph needs one) */
    /* Called after each frame with its spring report (may be NULL). */
    void (*frame_report)(void *user, int32_t frame, const ssk_spring_report *report);
    void *frame_report_user;
    /* Non-zero: also write per-vertex normals of each frame
     * (ssk_deformer_normals: area-weighted, object space) as Alembic N;
     * .abc only (SSK_ERROR_INVALID_ARGUMENT for .pc2, which has no place
     * for them). */
    int with_normals;
    /* Coupled cage (Corda et al. 2020; issue #21): a cage bound to the
     * scene's rig and its edited rest vertices (c by 3, rig space), both or
     * neither. The bake deforms the rig the edit describes
     * (ssk_cage_reshape: rest shape, joints) with each frame's skinning
     * matrices carried over to it (ssk_cage_pose), and CoR skinning nodes
     * take the centers of rotation repositioned by Eq. 14
     * (ssk_cage_cor_centers, in place of a binding's). The cage is updated
     * by the bake (its heads, its Lambda); a binding given must be the
     * reshaped rig's. A graph with a cage node and a cage here:
     * SSK_ERROR_INVALID_ARGUMENT (give one of them). */
    ssk_cage *cage;
    const float *cage_edit;
    /* Implicit nodes' composition operators (borrowed), or NULL to build
     * them for this bake (ssk_deformer_desc.implicit_operators). */
    const ssk_implicit_operators *implicit_operators;
    /* Frame shard (issue #23): non-NULL writes frames first..last to
     * "<shard_directory>/frames-<first>-<last>.ssks" (ssk_shard_path; the
     * directory is created when missing) instead of output_path, which
     * may then be NULL. with_normals is allowed (either cache can be
     * merged from it, .abc only when it has normals). A shard of the same
     * bake and frames already there, complete and valid, is kept
     * (ssk_bake_stats.shard_reused) instead of baked again. Frame-dependent
     * graphs (a spring node in frame_dependent mode, an implicit node
     * with elastic tracking) are refused: each frame continues from the
     * previous one. */
    const char *shard_directory;
    /* A deformer to bake with (borrowed; not used by another thread during
     * the bake), or NULL to create one for this bake. Made for the scene's
     * rig (ssk_scene_rig; SSK_ERROR_INVALID_ARGUMENT otherwise, and with a
     * cage); method, graph, binding, backend, gl_context and
     * implicit_operators are then the deformer's (those fields are
     * ignored). Reusing one deformer for the frame ranges of one bake
     * (issue #23: a Dask worker's chunks) saves its creation (the spring
     * solver's setup: seconds at 100k vertices); frame-independent graphs
     * give the same bytes as with a new deformer. */
    ssk_deformer *deformer;
} ssk_bake_desc;

/* Unconverged spring frames a bake's stats name (ssk_bake_stats). */
#define SSK_BAKE_LISTED_FRAMES 8
typedef struct ssk_bake_stats {
    uint32_t frame_count;
    uint32_t vertex_count;    /* whole rig */
    double wall_seconds;      /* everything: sampling, deform, write */
    double deform_seconds;    /* the deformer alone */
    ssk_backend backend;      /* the backend used */
    char device[256];         /* its device: "cpu (N threads)" or the
                                 GL renderer */
    char warning[SSK_ERROR_MESSAGE_SIZE]; /* e.g. AUTO fell back to the CPU */
    /* spring nodes, over all frames (0 without one) */
    uint64_t spring_iterations;      /* total */
    uint32_t spring_iterations_max;  /* most in one frame */
    float spring_residual_max;       /* largest final residual of a frame */
    uint32_t spring_frames_unconverged;
    /* the first SSK_BAKE_LISTED_FRAMES unconverged frames (of
     * spring_frames_unconverged) and their final residuals */
    int32_t spring_unconverged_frames[SSK_BAKE_LISTED_FRAMES];
    float spring_unconverged_residuals[SSK_BAKE_LISTED_FRAMES];
    /* shard_directory: 1 when a complete, valid shard of this bake was
     * already there and kept (nothing was deformed), else 0 */
    int shard_reused;
} ssk_bake_stats;

/* Samples the animation at t = frame / fps for each frame, deforms every mesh
 * and streams the positions (meshes concatenated in mesh order) to the
 * output. .pc2: start frame = first frame, sample rate 1. .abc: one
 * Xform + PolyMesh per rig mesh (named after it, the Xform animated with the
 * mesh node's object matrix at each frame), constant topology, uv when the
 * imported mesh has texture coordinates (first channel), time sampling
 * 1/fps s per sample starting at first_frame / fps, _ai_DCC_FPS = fps.
 * On any error no output file is left behind.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, fps <= 0, unknown extension,
 * with_normals for .pc2, shard_directory with a frame-dependent graph),
 * SSK_ERROR_NO_ANIMATION, SSK_ERROR_FRAME_RANGE (first > last, negative, or
 * beyond the animation's last frame), SSK_ERROR_IO. */
ssk_status ssk_scene_bake(const ssk_scene *scene, const ssk_bake_desc *desc,
                          ssk_bake_stats *out_stats, ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Frame shards and their merge (issue #23).                                 */
/* ------------------------------------------------------------------------ */

/* A bake split by frame ranges (ssk_bake_desc.shard_directory: one process
 * per range, on any machine) and merged into the cache a single bake
 * writes, byte for byte. A shard file ("SSKS", core/io/shard.c) is a text
 * manifest, then binary little-endian float32 data: the meshes (names,
 * triangles, uv, rest placement) once, then per frame the positions, the
 * normals when baked with them and the meshes' object matrices. It is
 * written to a temporary name and renamed, so a shard that exists is
 * complete (a truncated or altered one is refused by its size and
 * checksum).
 *
 * The manifest: what makes two shards parts of one bake (the identity
 * fields) and what this one holds. */
#define SSK_SHARD_VERSION_SIZE 32
#define SSK_SHARD_BACKEND_SIZE 8
typedef struct ssk_shard_manifest {
    /* identity: equal in every shard of one bake */
    char version[SSK_SHARD_VERSION_SIZE]; /* SpringSkin version that baked it */
    uint64_t rig_hash;       /* ssk_rig_hash of the rig baked (the reshaped
                                one under a cage edit) */
    uint64_t animation_hash; /* XXH3 of the skinning, object and rig
                                matrices of every frame of the animation at
                                fps: the same poses */
    uint64_t binding_hash;   /* XXH3 of the binding given (bones, t, scale
                                vectors, centers of rotation); 0: none given
                                (the bake bound with the defaults) */
    uint64_t graph_hash;     /* XXH3 of ssk_graph_to_json of the graph baked
                                (a method's own graph for a method) */
    uint64_t topology_hash;  /* XXH3 of the mesh section (names, triangles,
                                uv, rest placement) */
    char backend[SSK_SHARD_BACKEND_SIZE]; /* "cpu" or "gl": the backend used */
    double fps;
    uint32_t animation;        /* index */
    uint32_t animation_frames; /* frames of the whole animation at fps */
    uint32_t vertex_count;     /* whole rig */
    uint32_t mesh_count;
    int with_normals;          /* 1: normals per frame */
    /* this shard */
    int32_t first_frame, last_frame; /* inclusive */
    uint64_t data_bytes;       /* bytes after the manifest */
    uint64_t data_hash;        /* XXH3 of those bytes */
} ssk_shard_manifest;

/* "<directory>/frames-<first>-<last>.ssks", frames zero-padded to 10
 * digits, into dst[size]. Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, empty
 * directory, negative frames, does not fit). */
ssk_status ssk_shard_path(char *dst, size_t size, const char *directory, int32_t first,
                          int32_t last, ssk_error *err);

/* Reads the manifest of a shard file and checks that the file is as long
 * as it says (the checksum is checked by the merge).
 * Errors: SSK_ERROR_IO (missing, unreadable, not a shard, a malformed
 * manifest, truncated: the message says which). */
ssk_status ssk_shard_read_manifest(ssk_shard_manifest *out, const char *path, ssk_error *err);

typedef struct ssk_merge_stats {
    uint32_t shard_count;   /* shards read */
    uint32_t frame_count;   /* frames written */
    uint32_t vertex_count;
    uint64_t bytes_read;    /* shard bytes read */
    double wall_seconds;
} ssk_merge_stats;

/* Merges the shards of one bake in `directory` (every "*.ssks" file; the
 * temporary files of shards being written are ignored) into output_path
 * (.pc2 or .abc, as ssk_scene_bake), frames first..last; first = 0,
 * last = -1: the whole animation (0 .. animation_frames - 1). Everything
 * that can be checked is checked before the output is created: the shards
 * belong to one bake (identity fields equal), cover the range without a
 * gap (the message names the missing frames) or an overlap (it names the
 * two shards), each is complete. Frames are then streamed shard by shard
 * (memory: one frame) into the writer, which writes a temporary file and
 * renames it; each shard's checksum is verified as it is read, and a
 * mismatch aborts the writer: on any error no output file is left.
 * The output is the bytes ssk_scene_bake writes for the same bake (the
 * .abc's date aside: set SOURCE_DATE_EPOCH for both).
 * out_stats may be NULL.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, unknown extension, normals
 * into .pc2 or .abc without normals asked... see the message, two bakes,
 * overlap), SSK_ERROR_FRAME_RANGE (gap, range outside the animation),
 * SSK_ERROR_IO (no shard, unreadable, truncated, checksum, write). */
ssk_status ssk_shards_merge(const char *directory, const char *output_path, int32_t first,
                            int32_t last, ssk_merge_stats *out_stats, ssk_error *err);

/* The id of the first node that makes a graph frame-dependent (a spring
 * node in SSK_SPRING_FRAME_DEPENDENT mode, an implicit node with
 * SSK_IMPLICIT_ELASTIC tracking: each frame continues from the previous
 * one, so its frames cannot be baked apart), or NULL (frames independent;
 * NULL graph). Borrowed from the graph. */
const char *ssk_graph_frame_dependent_node(const ssk_graph *graph);

/* ------------------------------------------------------------------------ */
/* Preview: offscreen render of deformed meshes to PNG.                      */
/* ------------------------------------------------------------------------ */

typedef struct ssk_preview_desc {
    const char *output_path;   /* PNG, written to a temporary name + renamed */
    uint32_t width, height;    /* whole image in pixels (panels side by side) */
    uint32_t animation;        /* index, 0 = first */
    int32_t frame;             /* frame to show, >= 0 */
    double fps;                /* > 0: the frame's time is frame / fps */
    const ssk_method *methods; /* one labelled panel per method, left to right */
    uint32_t method_count;     /* 1 .. 8 */
    ssk_gl_context *gl_context; /* borrowed; NULL creates one for the call */
    ssk_backend backend;       /* where to deform (AUTO: as ssk_deformer) */
    /* per panel (method_count entries) or NULL: the attachment of rigid,
     * irs and spring panels (ssk_attachment_mode; WEIGHTS is the method's
     * default, BINDING the paper's, labelled "(paper)"); ignored for the
     * other methods */
    const ssk_attachment_mode *attachments;
    /* NULL: frame every panel whole; else a bone name: frame a cube of
     * half-side focus_radius x the rest bounding-box diagonal around the
     * bone's posed head (a close-up of one joint) */
    const char *focus_bone;
    float focus_radius;        /* > 0 with focus_bone (e.g. 0.12) */
    /* a cage and its edited rest vertices, both or neither (as in
     * ssk_bake_desc): every panel shows the reshaped rig (CoR panels with
     * the centers of Eq. 14) */
    ssk_cage *cage;
    const float *cage_edit;
} ssk_preview_desc;

/* Renders every mesh of the scene, deformed by each method at the frame,
 * with the core's own headless GL context: Lambert shading of the
 * area-weighted vertex normals, the same camera for every panel (framing the
 * union of the panels' bounding boxes, looking at the front with the
 * longest axis of the rest pose up, the rest pose being the animation's
 * first frame deformed by the first method), the method's name as the
 * panel label;
 * written as an RGB PNG with libpng.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, sizes out of 16..8192, no
 * method), SSK_ERROR_NO_ANIMATION, SSK_ERROR_FRAME_RANGE, the GL context and
 * shader errors, SSK_ERROR_IO (PNG write; no file is left behind). */
ssk_status ssk_scene_preview(const ssk_scene *scene, const ssk_preview_desc *desc,
                             ssk_error *err);

/* ------------------------------------------------------------------------ */
/* Strokes and sketch posing (Toothman 2020, ch. 7; issue #22).              */
/* ------------------------------------------------------------------------ */

/* A stroke (7.1): the points of an input device reduced by Ramer-Douglas-
 * Peucker and interpolated by a composite cubic Bezier curve.
 * - Numbers are float64 (a stroke is small; its queries feed rotations),
 *   in the input's units and space (window pixels, or rig/world space).
 *   2D points get z = 0.
 * - Reduction (core/model/stroke_reduce.c): consecutive repeated points are
 *   dropped, then RDP keeps the first and last point and, recursively, the
 *   point farthest from the segment (not the infinite line) between two
 *   kept points when that distance is > epsilon.
 * - Curve (core/model/stroke.c): the C2 interpolating cubic spline through
 *   the kept points (knots), chord-length parameterized, with Bessel ends
 *   (the end tangent is that of the parabola through the first, resp.
 *   last, three knots), written as one cubic Bezier per knot
 *   interval: tangents match at the joins (C1, and curvature too, C2, as
 *   7.1 asks: "curvature at the end of one segment coincides with the
 *   next"). The tangent at knot i is the spline's derivative m_i: control
 *   points P_i + h_i m_i / 3 and P_{i+1} - h_i m_{i+1} / 3, h_i = |P_{i+1} -
 *   P_i|. Two knots give a straight segment.
 * - Parameter t in [0, 1]: the fraction of arc length, the arc length
 *   measured over SSK_STROKE_ARC_SAMPLES chords per Bezier segment and t
 *   linear in the Bezier parameter between them (so position and closest
 *   are exact inverses). Out-of-range t is clamped.
 * - Timestamps: linear in the Bezier parameter between the knots' times
 *   (the input times of the kept points); without times, the input point
 *   index (0 .. N-1) stands for the time.
 * - Frame: rows tangent T, normal N, binormal B = T x N (right-handed,
 *   orthonormal). The Frenet frame where the curvature times the stroke's
 *   length exceeds SSK_STROKE_STRAIGHT_EPSILON; elsewhere (straight parts)
 *   N is parallel-transported (rotation-minimizing: the smallest rotation
 *   taking one tangent to the next, sample by sample) from the nearest
 *   curved sample before, or, before the first curved sample, back from
 *   it. A stroke with no curved sample at all (a straight line) takes N
 *   from the world axis least aligned with its tangent, made perpendicular
 *   (ssk_stroke_is_straight says so). Note that Frenet normals flip at an
 *   inflection of a planar S curve (the curvature changes side). */
typedef struct ssk_stroke ssk_stroke;

/* Pass as ssk_stroke_desc.epsilon for the defaults of 7.1:
 * SSK_STROKE_EPSILON_WINDOW_PX for 2D (window) strokes, and
 * SSK_STROKE_EPSILON_RELATIVE of the bounding size for 3D strokes. */
#define SSK_STROKE_EPSILON_AUTO (-1.0)
#define SSK_STROKE_EPSILON_WINDOW_PX 8.0
#define SSK_STROKE_EPSILON_RELATIVE 0.01
/* Chords per Bezier segment measuring arc length (and closest's search). */
#define SSK_STROKE_ARC_SAMPLES 64
/* Curvature x stroke length below which a sample counts as straight. */
#define SSK_STROKE_STRAIGHT_EPSILON 1e-6
/* Consecutive points closer than this fraction of the stroke's bounding
 * diagonal are one point. */
#define SSK_STROKE_REPEAT_EPSILON 1e-12

typedef struct ssk_stroke_desc {
    uint32_t point_count;   /* N >= 2 (at least 2 distinct points) */
    uint32_t dimension;     /* 2 or 3 */
    const double *points;   /* N by dimension, finite */
    const double *times;    /* N timestamps (any units, finite), or NULL */
    /* RDP tolerance in the points' units, >= 0 (0 keeps every point that
     * is not exactly on the segment between its kept neighbors), or
     * SSK_STROKE_EPSILON_AUTO */
    double epsilon;
    /* 3D with SSK_STROKE_EPSILON_AUTO: the scene's bounding size (e.g. the
     * rest bounding-box diagonal); 0: the stroke's own bounding diagonal */
    double scene_size;
} ssk_stroke_desc;

/* Reduces (RDP) and builds the curve. Errors: SSK_ERROR_INVALID_ARGUMENT
 * (NULL, N < 2, dimension not 2 or 3, epsilon negative other than AUTO,
 * scene_size negative, fewer than 2 distinct points), SSK_ERROR_NONFINITE
 * (a point or time not finite or beyond SSK_MAX_MAGNITUDE),
 * SSK_ERROR_OUT_OF_MEMORY. Destroy with ssk_stroke_destroy. */
ssk_status ssk_stroke_create(ssk_stroke **out, const ssk_stroke_desc *desc, ssk_error *err);
void ssk_stroke_destroy(ssk_stroke *stroke); /* NULL allowed */

/* RDP alone (7.1), as the stroke uses it: writes to `keep` (N bytes) 1 for
 * the kept points; returns how many. points: N by dimension (2 or 3);
 * epsilon >= 0 in their units. No repeated-point removal. Returns 0 on NULL
 * or N < 1; never fails otherwise (an explicit stack, no recursion). */
uint32_t ssk_polyline_reduce(uint8_t *keep, const double *points, uint32_t point_count,
                             uint32_t dimension, double epsilon);

/* The kept points: K and K by 3 (owned by the stroke); the epsilon used. */
uint32_t ssk_stroke_knot_count(const ssk_stroke *stroke);
const double *ssk_stroke_knots(const ssk_stroke *stroke);
double ssk_stroke_epsilon(const ssk_stroke *stroke);
/* Arc length (the sum of the chords measured, as t). */
double ssk_stroke_length(const ssk_stroke *stroke);
/* 1 when no sample of the curve is curved (see the frame rule). */
int ssk_stroke_is_straight(const ssk_stroke *stroke);
/* Queries at t in [0, 1] (clamped; NaN is taken as 0): position (3),
 * timestamp, frame (3 by 3, rows T, N, B). A NULL stroke gives NaN. */
void ssk_stroke_position(const ssk_stroke *stroke, double t, double dst[3]);
double ssk_stroke_time(const ssk_stroke *stroke, double t);
void ssk_stroke_frame(const ssk_stroke *stroke, double t, double dst[9]);
/* t of the curve point closest to `point` (3), and that distance when
 * `distance` is not NULL: the nearest of the arc samples, refined by
 * Newton steps on the Bezier parameter within its neighboring chords.
 * NaN for a NULL stroke or point. */
double ssk_stroke_closest(const ssk_stroke *stroke, const double point[3], double *distance);

/* Line-of-action posing of joints (7.2). For each joint j whose distance
 * to the baseline curve is < radius: t_j = ssk_stroke_closest(baseline,
 * j), d_j = j - b(t_j), R_j = F(o, t_j) F(b, t_j)^-1 (frames as
 * ssk_stroke_frame), and the posed joint is o(t_j) + R_j d_j; other joints
 * are copied unchanged. Frames of a straight stroke are ambiguous about
 * the roll, so when exactly one of the two strokes is straight
 * (ssk_stroke_is_straight) its N and B are taken from the other's B made
 * perpendicular to its own T (a drawing plane shared by both strokes then
 * gives the in-plane rotation); when both are straight R_j is the
 * smallest rotation taking T(b, t_j) to T(o, t_j).
 * - dst: J by 3, may be `joints`; selected: J bytes (1: posed) or NULL;
 *   joints: J by 3, in the strokes' space; radius > 0, the strokes' units.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, radius not > 0),
 * SSK_ERROR_NONFINITE (a joint). */
ssk_status ssk_pose_joints(double *dst, uint8_t *selected, const double *joints,
                           uint32_t joint_count, const ssk_stroke *baseline,
                           const ssk_stroke *offset, double radius, ssk_error *err);

/* A bone's head counts as connected to its parent's tail when their rest
 * distance is at most this fraction of the parent's length. */
#define SSK_BONE_CONNECTED_FRACTION 1e-4
/* Line-of-action posing of a skeleton (7.2): the joints are every bone's
 * posed head and tail (S_b head_b, S_b tail_b, rig space), posed by
 * ssk_pose_joints; then, root first (each parent before its children,
 * children following their parents' change as in a hierarchy), a bone
 * whose head is not connected to its parent's tail (roots included) and
 * whose head was selected is translated to its head's target, and a bone
 * whose tail was selected is rotated about its (new) head by the smallest
 * rotation taking its direction to the tail's target; connected bones only
 * rotate. Bones with nothing selected follow their parent. Bone lengths
 * are kept, so targets are followed in direction, not distance.
 * - dst: #B by 16 row-major posed skinning matrices (rig space); may be
 *   `skinning`. skinning: #B by 16 of the pose to start from (identity:
 *   the rest pose). Strokes in rig space.
 * - selected: #B bytes or NULL: bit 0 head selected, bit 1 tail selected.
 * Errors: as ssk_pose_joints, SSK_ERROR_NONFINITE (a matrix). */
ssk_status ssk_pose_from_strokes(float *dst, uint8_t *selected, const ssk_rig *rig,
                                 const float *skinning, const ssk_stroke *baseline,
                                 const ssk_stroke *offset, double radius, ssk_error *err);

/* Points on the surface (7.4): the stroke stays attached through
 * whole-rig triangle rows (the meshes' triangles concatenated in mesh
 * order) and barycentric coordinates. dst: N by 3 float64 = sum_k
 * bary_k x_k over the triangle's corners, with x the rig-space rest
 * positions when `positions` is NULL, else `positions` (#V by 3 whole-rig
 * rows, any one space: the result is in it). Errors:
 * SSK_ERROR_INVALID_ARGUMENT (NULL), SSK_ERROR_TRIANGLE_INDEX (a row out of
 * range), SSK_ERROR_NONFINITE (a barycentric coordinate). */
ssk_status ssk_rig_surface_points(double *dst, const ssk_rig *rig, const uint32_t *triangles,
                                  const double *barycentric, uint32_t count,
                                  const float *positions, ssk_error *err);

/* A stroke's region of interest (7.4, 5.2): the vertices of the listed
 * triangles (whole-rig rows, repeats allowed) are kinematic; a
 * breadth-first search over the welded mesh edges (ssk_rig_weld) marks
 * rings 1..grow passive and ring grow + 1 static, as the spring node
 * builds its edits' regions (core/bind/spring_rest.c shares the search).
 * Coincident (welded) vertices take their group's role; the kinematic
 * set's distinct representatives (ascending) are the rows a spring edit
 * lists. roles: #V bytes (SSK_ROLE_*). kinematic: #V rows capacity or
 * NULL; *kinematic_count gets the count (may be NULL).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, no triangle, grow >
 * SSK_ROI_GROW_LIMIT), SSK_ERROR_TRIANGLE_INDEX, SSK_ERROR_OUT_OF_MEMORY. */
#define SSK_ROI_GROW_LIMIT 1000
ssk_status ssk_rig_surface_roi(uint8_t *roles, uint32_t *kinematic, uint32_t *kinematic_count,
                               const ssk_rig *rig, const uint32_t *triangles,
                               uint32_t triangle_count, uint32_t grow, ssk_error *err);

/* The parabolic bulge along a stroke (5.1 Eq. 24 with -(0.5 - t)^2 + 1.25,
 * placed by the stroke's parameter as 7.4 says): each kinematic vertex v
 * gets the bind-space offset amount x 4 t_v (1 - t_v) x s_v, with s_v its
 * bind scale vector (ssk_binding_view) and t_v = ssk_stroke_closest of its
 * rig-space rest position, so |s_v| grows by the factor 1 + amount x 4t(1 -
 * t): 1 at both ends of the stroke, 1 + amount in the middle (amount 0.25
 * is the paper's formula). The spring node's edit target is a'_v + R (s_v
 * + offset_v): the edit is stored on the scale vector and follows the
 * skeleton (docs/deformer-graph.md, Surface edits).
 * - dst: count by 3 float32 offsets (the edit's "offsets");
 *   kinematic: count whole-rig rows; stroke: rig space, at rest.
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, a row out of range),
 * SSK_ERROR_BINDING_MISMATCH, SSK_ERROR_NONFINITE (amount). */
ssk_status ssk_stroke_bulge_offsets(float *dst, const ssk_rig *rig, const ssk_binding *binding,
                                    const ssk_stroke *stroke, const uint32_t *kinematic,
                                    uint32_t count, double amount, ssk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SPRINGSKIN_H */
