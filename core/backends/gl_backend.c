/*
 * gl_backend.c — the OpenGL 4.3 compute backend: the rig (and the
 * attachment binding, when there is one) lives on the device in persistent
 * shader storage buffers, uploaded once at creation; per frame only
 * per-bone data is uploaded. Each kernel call of the deformer graph is one
 * compute dispatch per mesh (LBS, DQS) or over the whole rig (attachment
 * kernels, normals) writing a position buffer that stays on the device for
 * the next node; the output is read back with one glGetBufferSubData.
 * Normals are face normals, then a per-vertex gather; the maximum
 * displacement is a grid-stride loop, a shared-memory reduction per work
 * group and one atomicMax per group. A spring node (Toothman 2020, 4.2,
 * 6.3) runs its whole iteration on the device, reading back 32 bytes of
 * reductions per iteration for the CPU solver's own convergence and
 * divergence decisions (run_spring below; shaders/kernels_spring_*.comp); on an
 * IEEE device (llvmpipe) its iterates are the CPU solver's bit for bit.
 * An implicit node (Vaillant 2015, 4.6.2) tracks on the device too,
 * reading back only its 12-byte report (run_implicit below).
 *
 * Every GL call happens in a job run by ssk_gl_context_run on the context's
 * own thread; each entry point packs its inputs and outputs into a job
 * struct, runs it and returns the status the job left there.
 *
 * Device layout (all meshes concatenated in mesh order; the binding points
 * are those of shaders/kernels_skinning_lib.glsl):
 *   rest, reference, position buffers  float[3 #V] (position buffers are
 *                                      bound to the kernels' input/output
 *                                      binding points per call)
 *   bone indices, weights              int/float[sum_m #V_m K_m], mesh m's
 *                                      first entry at weight_offset[m]
 *   LBS bones, DQS bones               #M #B row-major 4x4 (the frame's
 *                                      lbs_matrices); #B ssk_dual_quat
 *   pre/post                           #M pre, #M post, #M object 4x4
 *   triangles                          uint[3 #F], whole-rig vertex rows
 *   face normals                       float[3 #F]
 *   vertex-triangle CSR                uint[#V + 1] offsets and uint[3 #F]
 *                                      whole-rig triangle indices
 *   result                             uint[1] (max displacement bits)
 *   per spring node (gl_spring, uploaded on its first solve, found by its
 *   ssk_spring pointer): vertex data uvec4[#V], CSR edges
 *   ssk_spring_edge[#E], t float[#V], roles and maps uint[], frame data
 *   vec4[#B (+ #V)], records vec4[2 #V], first stage and three rotating
 *   iterates, good iterate, velocities, previous output float[3 #V],
 *   differential transforms, scratch vec4[#V], partial reductions
 *   per implicit node (gl_implicit, uploaded on its first frame, found by
 *   its ssk_implicit pointer; shaders/kernels_implicit.comp): static uints
 *   (programs, MVC and adjacency CSR, node operators, field meta, flags),
 *   field grids vec4[sum N^3], static floats (operator grids,
 *   grid_from_rest, iso-values, step caps, MVC weights), frame floats
 *   (from_posed, joint bends), two rig-space position buffers float[3 #V],
 *   work uint[8 #V + 4]
 */
#include "backends/backend.h"
#include "backends/gl.h"
#include "backends/gl_profile.h"
#include "kernels/implicit.h"
#include "kernels/spring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The guaranteed minimum of GL_MAX_COMPUTE_WORK_GROUP_COUNT, used when the
 * context reports none. */
#define GL_MIN_MAX_GROUP_COUNT 65535
/* Size of a GL buffer whose contents are empty (a zero-sized buffer cannot
 * be bound as a shader storage block range). */
#define GL_EMPTY_BUFFER_BYTES 16
/* Work groups of the max-displacement reduction: enough to fill a large
 * GPU (#groups x 256 invocations), few enough that the per-group
 * shared-memory reduction and atomic stay a small part of the work. */
#define GL_REDUCTION_MAX_GROUPS 1024
/* Floats per row-major 4x4 matrix. */
#define MAT4_FLOATS 16
#define DUAL_QUAT_FLOATS (sizeof(ssk_dual_quat) / sizeof(float))

/* Buffers; each value is also the buffer's binding point (SSK_BINDING_* of
 * shaders/kernels_skinning_lib.glsl). */
typedef enum gl_binding {
    BIND_REST = 0,
    BIND_BONE_INDICES = 1,
    BIND_WEIGHTS = 2,
    BIND_BONES = 3,
    BIND_PRE_POST = 4,
    BIND_DEFORMED = 5, /* output of deformation kernels, input of normals */
    BIND_TRIANGLES = 6,
    BIND_FACE_NORMALS = 7,
    BIND_VT_OFFSETS = 8,
    BIND_VT_TRIANGLES = 9,
    BIND_NORMALS = 10,
    BIND_REFERENCE = 11,
    BIND_RESULT = 12,
    BIND_COR_CENTERS = 13, /* CoR: vec4 (center, flag) per vertex */
} gl_binding;

/* The backend's fixed buffers (position buffers are in gl_state.positions). */
typedef enum gl_buffer {
    BUF_REST = 0,
    BUF_BONE_INDICES,
    BUF_WEIGHTS,
    BUF_LBS_BONES,
    BUF_DQS_BONES,
    BUF_PRE_POST,
    BUF_TRIANGLES,
    BUF_FACE_NORMALS,
    BUF_VT_OFFSETS,
    BUF_VT_TRIANGLES,
    BUF_REFERENCE,
    BUF_RESULT,
    BUF_BIND_BONES,     /* binding: bone of each vertex */
    BUF_BIND_T,         /* binding: t of each vertex */
    BUF_BIND_S,         /* binding: scale vectors */
    BUF_ATTACH,         /* a node's ssk_attach_bone array of the frame */
    BUF_MASK,           /* a radial node's bone mask (uint per bone) */
    BUF_REST_DISTANCES, /* IRS length adjustment targets */
    BUF_COR_BONES,      /* CoR: #B ssk_cor_bone of the frame */
    BUF_COR_CENTERS,    /* CoR: vec4 (center in rig space, flag) per vertex */
    BUF_WELD_MEMBERS,   /* weld: uvec4 (member, representative, their meshes) */
    BUF_WEIGHT_SLOTS,   /* attachment per skin weight influence: slot records */
    BUF_REST_ATTACH,    /* its rest bones (the identity pose), length adjustment */
    BUF_COUNT
} gl_buffer;

static const char *const buffer_names[BUF_COUNT] = {
    "rest positions", "bone indices", "weights", "LBS bone matrices", "DQS bones",
    "pre/post matrices", "triangles", "face normals", "vertex-triangle offsets",
    "vertex triangles", "reference positions", "result", "binding bones", "binding t",
    "binding scale vectors", "attachment bones", "radial bone mask", "rest distances",
    "CoR bones", "centers of rotation", "weld members", "weight attachment slots", "weight attachment rest bones"};

/* Uniform locations (SSK_LOC_* of shaders/kernels_skinning_lib.glsl). */
enum gl_uniform {
    LOC_BASE = 0,
    LOC_COUNT = 1,
    LOC_STRIDE = 2, /* grid-stride kernels only */
    LOC_FIRST_VERTEX = 2,
    LOC_INFLUENCES = 3,
    LOC_WEIGHT_OFFSET = 4,
    LOC_MESH = 5,
    LOC_BONE_COUNT = 6,
    LOC_MESH_COUNT = 7,
    LOC_FLAGS = 8,
};
/* SSK_FLAG_PRE_POST of kernels_dqs.comp. */
#define FLAG_PRE_POST 1u

typedef enum gl_program {
    PROG_LBS,
    PROG_DQS,
    PROG_FACE_NORMALS,
    PROG_VERTEX_NORMALS,
    PROG_MAX_DISPLACEMENT,
    PROG_RIGID,
    PROG_IRS,
    PROG_RADIAL,
    PROG_SPRING_IN,
    PROG_SPRING_RECORDS,
    PROG_SPRING_STEP,
    PROG_SPRING_REDUCE,
    PROG_COR,
    PROG_SPRING_DETAIL,
    PROG_WELD,
    PROG_ATTACH_WEIGHTS,
    PROG_SPRING_ML,
    PROG_SPRING_ML_COARSE,
    PROG_IMPLICIT,
    PROG_SPRING_ML_RESTRICT,
    PROG_SPRING_ML_COARSE_WIDE,
    PROG_SPRING_ANCHORS,
    PROG_SPRING_ML_COARSE_SHARED,
    PROG_SPRING_ML_PROLONG,
    PROG_SPRING_STEP_WATCH,
    PROG_COUNT
} gl_program;

static const char *const program_files[PROG_COUNT] = {
    "kernels_lbs.comp", "kernels_dqs.comp", "kernels_face_normals.comp", "kernels_vertex_normals.comp",
    "backends_max_displacement.comp", "kernels_rigid.comp", "kernels_irs.comp", "kernels_radial.comp",
    "kernels_spring_in.comp", "kernels_spring_records.comp", "kernels_spring_step.comp", "kernels_spring_reduce.comp",
    "kernels_cor.comp", "kernels_spring_detail.comp", "model_weld.comp", "kernels_attach_weights.comp",
    "kernels_spring_multilevel.comp", "kernels_spring_ml_coarse.comp", "kernels_implicit.comp",
    "kernels_spring_ml_restrict.comp", "kernels_spring_ml_coarse_wide.comp",
    "kernels_spring_anchors.comp", "kernels_spring_ml_coarse_shared.comp",
    "kernels_spring_ml_prolong.comp", "kernels_spring_step_watch.comp"};
/* SSK_ML_COARSE_SHARED_NODES of kernels_spring_ml_coarse_shared.comp: the
 * local nodes whose floats (12 each) and loop integers its shared memory
 * holds; its level offsets are sized for SSK_SPRING_ML_MAX_LEVELS 8. */
#define SPRING_ML_COARSE_SHARED_NODES 584u
_Static_assert(SSK_SPRING_ML_MAX_LEVELS == 8,
               "SSK_SPRING_ML_MAX_LEVELS_GLSL of kernels_spring_ml_coarse_shared.comp");
/* COR_FLAG_SCALED of kernels_cor.comp: some bone has scale or shear this frame. */
#define FLAG_COR_SCALED 2u
#define COR_BONE_FLOATS (sizeof(ssk_cor_bone) / sizeof(float))

/* Binding points and uniforms of the attachment kernels
 * (shaders/kernels_attach_lib.glsl). */
enum gl_attach_binding {
    ATTACH_BONES_OF_VERTEX = 0,
    ATTACH_T = 1,
    ATTACH_S = 2,
    ATTACH_BONE_DATA = 3,
    ATTACH_PRE_POST = 4,
    ATTACH_OUTPUT = 5,
    ATTACH_EXTRA = 6,
    ATTACH_INPUT = 7,
    ATTACH_SLOTS = 0, /* weights attachment */
};
enum gl_attach_uniform {
    LOC_ATTACH_MESH = 5,
    LOC_ATTACH_MESH_COUNT = 7,
    LOC_ATTACH_FLAGS = 8,
    LOC_ATTACH_PROFILE = 9,
    LOC_ATTACH_AMOUNT = 10,
    LOC_ATTACH_SLOTS_PER_VERTEX = 3,
    LOC_ATTACH_FIRST_SLOT = 4,
};
#define FLAG_MESH_MATRICES 1u
#define FLAG_LENGTH_ADJUST 2u
#define FLAG_INCREMENTAL 4u
#define ATTACH_BONE_FLOATS (sizeof(ssk_attach_bone) / sizeof(float))

/* Binding points and uniforms of the spring kernels (shaders/kernels_spring_lib.glsl). */
enum gl_spring_binding {
    SPRING_IN_VERTEX = 0,
    SPRING_IN_INPUT = 1,
    SPRING_IN_OUTPUT = 2,
    SPRING_IN_MATRICES = 3,
    SPRING_IN_SCALARS = 4,
    SPRING_IN_FIRST = 5,
    SPRING_IN_RESULT = 6,
    SPRING_REC_ANCHOR = 1,
    SPRING_REC_POSITIONS = 3,
    SPRING_REC_RECORDS = 4,
    SPRING_STEP_VERTEX = 0,
    SPRING_STEP_EDGES = 1,
    SPRING_STEP_RECORDS = 2,
    SPRING_STEP_FRAME = 3,
    SPRING_STEP_SCALARS = 4,
    SPRING_STEP_NEXT = 5,
    SPRING_STEP_VELOCITY = 6,
    SPRING_STEP_SCRATCH = 7,
    SPRING_DET_VERTEX = 0,
    SPRING_DET_EDGES = 1,
    SPRING_DET_FIRST = 2,
    SPRING_DET_FRAME = 3,
    SPRING_DET_SCALARS = 4,
    SPRING_DET_RESULT = 5,
    SPRING_DET_CLUSTERS = 6,
    SPRING_DET_ANCHOR = 7,
    SPRING_RED_SCRATCH = 0,
    SPRING_RED_PARTIALS = 1,
    SPRING_RED_RESULT = 2,
    SPRING_ML_VERTEX = 0,
    SPRING_ML_U = 1,
    SPRING_ML_F = 2,
    SPRING_ML_W = 3,
    SPRING_ML_SCALARS = 4,
    SPRING_ML_NEXT = 5,
    SPRING_ML_RECORDS = 6,
    SPRING_ML_AUX = 7,
    SPRING_MLP_ANCHOR = 8,
    SPRING_MLP_PARTIALS = 9,
    SPRING_MLP_RESULT = 10,
    SPRING_MLP_COUNTER = 11,
    SPRING_WATCH = 12,          /* the watch on the device (kernels_spring_watch_lib.glsl) */
    SPRING_STEP_GOOD = 13,
    SPRING_STEP_GOOD_FROM = 14,
    SPRING_ANC_TERMS = 0,
    SPRING_ANC_BONES = 1,
    SPRING_ANC_ANCHOR = 2,
    SPRING_ANC_DIR = 3,
};
enum gl_spring_uniform {
    LOC_SPRING_IN_MODE = 3,
    LOC_SPRING_IN_MESH = 4,
    LOC_SPRING_IN_MESH_COUNT = 5,
    LOC_SPRING_IN_FLAGS = 6,
    LOC_SPRING_RED_PASS = 3,
    LOC_SPRING_RED_SLOT = 4,
    LOC_SPRING_FLAGS = 3,
    LOC_SPRING_K = 4, /* float[SSK_FORCE_COUNT] */
    LOC_SPRING_DT = 11,
    LOC_SPRING_KEEP = 12,
    LOC_SPRING_EPS_LEN = 13,
    LOC_SPRING_EPS_PAR = 14,
    LOC_SPRING_EDIT_FIRST = 15,
    LOC_SPRING_MAP_OFFSET = 16, /* uint[SSK_FORCE_COUNT] */
    LOC_SPRING_OMEGA = 23,
    LOC_SPRING_DETAIL_FIRST = 24,
    LOC_SPRING_TWIST_FIRST = 25,
    LOC_SPRING_DET_MODE = 3,
    LOC_SPRING_ANC_EPS_DIR = 3,
    LOC_SPRING_ML_MODE = 3,
    LOC_SPRING_ML_BONES = 4,
    LOC_SPRING_ML_NODES = 5,
    LOC_SPRING_ML_OMEGA = 6,
    LOC_SPRING_ML_THETA = 7,
    LOC_SPRING_ML_DT = 8,
    LOC_SPRING_ML_KD = 9,
    LOC_SPRING_ML_MAP = 10,
    LOC_SPRING_ML_TRUST = 11,
    LOC_SPRING_ML_MAX_LEVELS = 12,
    LOC_SPRING_ML_OFF = 13, /* uint[ML_OFF_COUNT] */
    LOC_SPRING_MLP_SLOT = 40,
    LOC_SPRING_MLP_EPS_LEN = 41,
    LOC_SPRING_ML_PROBE = 42,
    LOC_SPRING_WATCH = 43,
    LOC_SPRING_PASS = 44,
    LOC_SPRING_ML_SUMS = 46, /* uint[2] */
};
/* kernels_spring_multilevel.comp: modes and the offsets into its buffers
 * (SSK_ML_OFF_* of shaders/kernels_spring_lib.glsl). */
#define SPRING_ML_RESTRICT 0u
#define SPRING_ML_PROLONG 2u
enum {
    ML_OFF_T, ML_OFF_INV_RADIUS, ML_OFF_KINV, ML_OFF_CENTER, ML_OFF_RADIUS, ML_OFF_FRAME,
    ML_OFF_LOC_FIRST, ML_OFF_LEVELS, ML_OFF_L2G, ML_OFF_G2L, ML_OFF_G2L_LIST, ML_OFF_SLAB,
    ML_OFF_ROWS, ML_OFF_FROZEN, ML_OFF_FROZEN_WORDS, ML_OFF_SLAB_SUMS, ML_OFF_LOCAL,
    ML_OFF_NODE_MAP, ML_OFF_NODE_INFO, ML_OFF_BY_LEVEL, ML_OFF_ROW_KEY, ML_OFF_CHUNKS,
    ML_OFF_ROW_F, ML_OFF_COUNT
};
_Static_assert(LOC_SPRING_ML_OFF + ML_OFF_COUNT <= LOC_SPRING_MLP_SLOT,
               "kernels_spring_multilevel.comp's offsets run into the fused prolongation's "
               "uniforms");
_Static_assert(LOC_SPRING_K + SSK_FORCE_COUNT <= LOC_SPRING_DT &&
                   LOC_SPRING_MAP_OFFSET + SSK_FORCE_COUNT <= LOC_SPRING_OMEGA,
               "spring uniform arrays overlap (shaders/kernels_spring_lib.glsl)");
#define SPRING_IN_TO_RIG 0u
#define SPRING_IN_TO_OBJECT 1u
#define SPRING_IN_CONTINUE 2u
#define SPRING_FLAG_WRITE 1u
#define SPRING_FLAG_SEMI 2u
#define SPRING_FLAG_EDITS 4u
#define SPRING_FLAG_MAP0 8u
#define SPRING_FLAG_CHEBYSHEV 1024u
#define SPRING_FLAG_TWIST 2048u
#define SPRING_FLAG_STEP 4096u
#define SPRING_DET_DETAIL 0u
#define SPRING_DET_CLUSTER 1u
_Static_assert(SPRING_FLAG_MAP0 << SSK_FORCE_COUNT <= SPRING_FLAG_CHEBYSHEV,
               "the map flags run into SPRING_FLAG_CHEBYSHEV");
/* Vertices each invocation of the reduction's first pass takes at least
 * (grid stride): the work groups are then #V / (256 x 16), 25 for 100k
 * vertices. Every work group costs its shared-memory reduction, and on a
 * CPU device a group's barriers cost far more than its additions
 * (llvmpipe, 100k vertices: 46 ms per iteration with one vertex per
 * invocation, 391 groups; 8 ms with 64 groups). Software renderers only:
 * hardware GPUs take a vertex per invocation (spring_reduce). */
#define SPRING_REDUCE_ITEMS_PER_INVOCATION 16u
/* Roles packed per uint of the scalars buffer (one byte each). */
#define SPRING_ROLES_PER_WORD 4u
/* What kernels_spring_in.comp's TO_RIG pass leaves in result[0] when every
 * position is finite (atomicMin of the rows that are not). */
#define SPRING_ALL_FINITE 0xffffffffu

/* The spring reduction's result (SpringPartial of kernels_spring_reduce.comp, std430:
 * two doubles, two floats, two uints). */
typedef struct gl_spring_partial {
    double energy, kinetic;
    float max_disp2, max_force2;
    uint32_t bad, pad;
} gl_spring_partial;
_Static_assert(sizeof(gl_spring_partial) == 32, "SpringPartial is 32 bytes in std430");

/* Batches (run_spring): the iterates kept on the device are x_{k-2},
 * x_{k-1} and the passes of a batch, at most SPRING_BATCH_MAX, issued
 * before one read-back of their reductions. */
#define SPRING_RING 8u
#define SPRING_BATCH_MAX (SPRING_RING - 2u)
/* SSK_GL_SPRING_BATCH = 1 .. SPRING_BATCH_MAX overrides the most passes
 * a batch takes (hardware GPUs SPRING_BATCH_MAX, software renderers 1). */
#define SSK_GL_SPRING_BATCH_ENV "SSK_GL_SPRING_BATCH"
#define SSK_GL_SPRING_WATCH_ENV "SSK_GL_SPRING_WATCH"

/* Device buffers of one spring node (uploaded on its first solve). */
typedef enum gl_spring_buffer {
    SB_VERTEX = 0, /* uvec4 per vertex: CSR row, bone, rest bone angle */
    SB_EDGES,      /* ssk_spring_edge[#E] as they are */
    SB_ANCHOR,     /* #V anchors a' of the frame (vec4) */
    SB_SCALARS,    /* roles (4 per uint), then the stiffness maps */
    SB_FRAME,      /* #V anchor bone directions, #V detail targets, #V twist references,
                      then #V edit targets */
    SB_RECORDS,    /* 2 vec4 per vertex */
    SB_FIRST,      /* the first stage in rig space */
    SB_POS0,       /* the ring of SPRING_RING iterates (run_spring "Batches") */
    SB_POS_LAST = SB_POS0 + SPRING_RING - 1,
    SB_GOOD,       /* the kept lowest-energy iterate */
    SB_VELOCITY,   /* semi-implicit */
    SB_PREV,       /* frame-dependent: the previous output (rig space) */
    SB_DIFF,       /* frame-dependent: #B differential transforms */
    SB_SCRATCH,    /* vec4 per vertex from the step */
    SB_PARTIALS,   /* per-group reductions */
    SB_RESULT,     /* the reductions of a batch (a slot per pass) */
    SB_CLUSTERS,   /* the short-edge clusters' words (spring.h) */
    SB_ML_U,       /* multilevel: static integers (kernels_spring_multilevel.comp) */
    SB_ML_F,       /* multilevel: static floats, then the frame's node bases */
    SB_ML_W,       /* multilevel: work */
    SB_ANCHOR_TERMS, /* #V headers and the anchors' terms (kernels_spring_anchors.comp) */
    SB_FIRST_ROW,  /* the smallest row whose first stage is not finite */
    SB_COUNTER,    /* kernels_spring_ml_prolong.comp: groups done (0 between passes) */
    SB_WATCH,      /* the watch on the device: gl_spring_watch, then the weights */
    SB_WATCH_READ0, /* its copies read back after a chunk of passes (two in flight) */
    SB_WATCH_READ1,
    SB_COUNT
} gl_spring_buffer;

static const char *const spring_buffer_names[SB_COUNT] = {
    "spring vertices", "spring edges", "spring anchors", "spring roles and maps",
    "spring frame data", "spring records", "spring first stage", "spring iterate 0",
    "spring iterate 1", "spring iterate 2", "spring iterate 3", "spring iterate 4",
    "spring iterate 5", "spring iterate 6", "spring iterate 7", "spring good iterate", "spring velocities",
    "spring previous output", "spring differential transforms", "spring scratch",
    "spring partial reductions", "spring result", "spring clusters",
    "spring multilevel integers", "spring multilevel floats", "spring multilevel work",
    "spring anchor terms", "spring first-stage check", "spring group counter",
    "spring watch", "spring watch read-back 0", "spring watch read-back 1"};
_Static_assert(SPRING_RING == 8u && sizeof spring_buffer_names / sizeof spring_buffer_names[0] ==
                                        SB_COUNT,
               "a name per spring buffer (the ring's names list SPRING_RING iterates)");

/* SpringWatch of shaders/kernels_spring_watch_lib.glsl (std430; run_spring
 * "The watch on the device"): the watch's state between passes, its
 * outcome, the solve's constants and the passes' indirect group counts. */
typedef struct gl_spring_watch {
    double e_prev, epot_prev, good_energy, result_energy;
    float disp_prev;
    int32_t streak, has_good;
    uint32_t accel_start;
    float omega;
    uint32_t accelerated;
    float scale, ml_last, ml_best;
    uint32_t ml_growth, ml_stall;
    uint32_t done, iterations, result, energy_known, converged, diverged, why;
    float residual, residual_before;
    uint32_t save_pass;
    float threshold;
    uint32_t convergence;
    float theta;
    uint32_t divergence_window, ml_growth_window, ml_stall_window;
    float ml_jump2;
    double growth_tolerance;
    uint32_t args[12];
    uint32_t restart_table; /* the weights after a restart start at this entry */
} gl_spring_watch;
_Static_assert(sizeof(gl_spring_watch) == 208 && offsetof(gl_spring_watch, disp_prev) == 32 &&
                   offsetof(gl_spring_watch, done) == 76 &&
                   offsetof(gl_spring_watch, growth_tolerance) == 144 &&
                   offsetof(gl_spring_watch, args) == 152,
               "gl_spring_watch is SpringWatch of kernels_spring_watch_lib.glsl in std430");
/* its args: the first group count of each of a pass's dispatches */
enum { WATCH_ARGS_STEP = 0, WATCH_ARGS_RESTRICT = 3, WATCH_ARGS_COARSE = 6, WATCH_ARGS_PROLONG = 9 };
/* SSK_WATCH_* and SSK_WHY_* of kernels_spring_watch_lib.glsl */
enum { WATCH_ITERATIONS = 0, WATCH_DISPLACEMENT = 1, WATCH_FORCE = 2 };
enum { WATCH_WHY_NONFINITE = 1, WATCH_WHY_GREW = 2 };
/* The fewest passes of a chunk (spring_passes_device; software renderers'
 * batches of one still take one). */
#define WATCH_CHUNK_MIN 2u
/* One call's wait for a fence (watch_chunk_read waits again after it). */
#define WATCH_WAIT_NS 1000000000u
/* A read-back copy: the header, then the first stage's check word. */
#define WATCH_READ_BYTES (sizeof(gl_spring_watch) + sizeof(GLuint))

/* One spring node's device state, found by its ssk_spring pointer. The
 * frame-dependent history (previous output, skinning, frame) is the
 * backend's own, as the positions live on the device. */
typedef struct gl_spring {
    ssk_spring *sp;
    GLuint buffers[SB_COUNT];
    uint32_t role_words;          /* uints of the roles region */
    uint32_t map_offset[SSK_FORCE_COUNT];
    GLuint map_flags;             /* SPRING_FLAG_MAP0 << f for each map */
    bool base_roles_on_device;    /* the roles region holds sp->roles */
    uint32_t *roles_packed;       /* role_words, host scratch */
    float *prev_skinning;         /* #B by 16, frame-dependent */
    float *diff;                  /* #B by 16, frame-dependent */
    double prev_frame;
    int has_prev;
    GLuint ml_off[ML_OFF_COUNT];  /* multilevel: offsets into SB_ML_* (words) */
    uint32_t ml_chunks;           /* multilevel: restriction chunks (ML_OFF_CHUNKS pairs) */
    GLuint ml_chunk_off;          /* ... each local node's chunks (CSR, local + 1 in U) */
    bool watch_on;                /* this solve's passes run with the watch on the device */
    bool step_out;                /* the force pass writes its step (the multigrid) */
    uint32_t pass;                /* ... and the pass being issued */
    float *watch_table;           /* 2 x (max_iterations + 2) x 2 floats, host scratch */
    /* the report whose energy this frame's last step reads from
     * SB_RESULT's slot 0 (spring_energy_reads), or NULL */
    ssk_spring_report *energy_report;
} gl_spring;

/* Binding points, uniforms, modes and offsets of kernels_implicit.comp
 * (IM_* there). */
enum gl_implicit_binding {
    IM_STATIC_U = 0,
    IM_GRIDS = 1,
    IM_STATIC_F = 2,
    IM_FRAME = 3,
    IM_MATRICES = 4,
    IM_INPUT = 5,
    IM_OUTPUT = 6,
    IM_WORK = 7,
};
enum gl_implicit_uniform {
    LOC_IM_FIRST_VERTEX = 2,
    LOC_IM_MODE = 3,
    LOC_IM_MESH = 4,
    LOC_IM_MESH_COUNT = 5,
    LOC_IM_FLAGS = 6,
    LOC_IM_STEP = 7,
    LOC_IM_SIGMA = 8,
    LOC_IM_BULGE = 9,
    LOC_IM_COS_CONTACT = 10,
    LOC_IM_OP_RESOLUTION = 11, /* uint[SSK_IMPLICIT_OP_KIND_COUNT] */
    LOC_IM_BETA_FROM = 13,
    LOC_IM_BETA_TO = 14,
    LOC_IM_OFF = 15,           /* uint[IM_OFF_COUNT] */
};
enum gl_implicit_mode {
    IM_MODE_TO_RIG = 0,
    IM_MODE_PROJECT = 1,
    IM_MODE_RELAX = 2,
    IM_MODE_BETA_INIT = 3,
    IM_MODE_DIFFUSE = 4,
    IM_MODE_SMOOTH = 5,
    IM_MODE_REPORT = 6,
    IM_MODE_TO_OBJECT = 7,
};
#define IM_FLAG_MESH_MATRICES 1u
enum {
    IM_OFF_PROGRAM_OFFSETS, IM_OFF_PROGRAMS, IM_OFF_MVC_OFFSETS, IM_OFF_MVC_NEIGHBORS,
    IM_OFF_ADJ_OFFSETS, IM_OFF_ADJACENCY, IM_OFF_NODE_OPS, IM_OFF_FIELD_META,
    IM_OFF_VERTEX_FLAGS, IM_OFF_OP_CONTACT, IM_OFF_OP_BULGE, IM_OFF_GRID_FROM_REST, IM_OFF_ISO,
    IM_OFF_MAX_STEP, IM_OFF_MVC_WEIGHTS, IM_OFF_NODE_BEND, IM_OFF_FG, IM_OFF_PREV_ERROR,
    IM_OFF_FLAGS, IM_OFF_REPORT, IM_OFF_COUNT
};
_Static_assert(LOC_IM_OP_RESOLUTION + SSK_IMPLICIT_OP_KIND_COUNT <= LOC_IM_BETA_FROM,
               "kernels_implicit.comp's u_op_n runs into u_beta_from");
/* Words per vertex of the work buffer: f and grad (4), previous error,
 * flags, beta twice; then the report (tracked, contacts, residual bits). */
#define IM_WORK_WORDS_PER_VERTEX 8u
#define IM_WORK_FG 0u          /* x #V: first word of the f and grad rows */
#define IM_WORK_PREV_ERROR 4u
#define IM_WORK_FLAGS 5u
#define IM_WORK_BETA0 6u
#define IM_WORK_BETA1 7u
#define IM_REPORT_WORDS 4u
/* The report's words (IM_REPORT_* of kernels_implicit.comp). */
enum { IM_REPORT_TRACKED, IM_REPORT_CONTACTS, IM_REPORT_RESIDUAL };
/* Floats of a field's grid_from_rest rows 0-2 and of a from_posed entry. */
#define IM_ROWS_FLOATS 12u

/* Device buffers of one implicit node (uploaded on its first frame). */
typedef enum gl_implicit_buffer {
    IB_STATIC_U = 0, /* programs, MVC and adjacency CSR, node operators, field meta, flags */
    IB_GRIDS,        /* the fields' grids, vec4 per grid point */
    IB_STATIC_F,     /* operator grids, grid_from_rest, iso, step caps, MVC weights */
    IB_FRAME,        /* from_posed, node bends (per frame) */
    IB_POS0,         /* rig-space positions, ping-pong */
    IB_POS1,
    IB_WORK,         /* per-vertex state, beta, report */
    IB_COUNT
} gl_implicit_buffer;

static const char *const implicit_buffer_names[IB_COUNT] = {
    "implicit static integers", "implicit field grids", "implicit static floats",
    "implicit frame data", "implicit positions 0", "implicit positions 1", "implicit work"};

/* One implicit node's device state, found by its ssk_implicit pointer. */
typedef struct gl_implicit {
    ssk_implicit *im;
    GLuint buffers[IB_COUNT];
    GLuint off[IM_OFF_COUNT];    /* kernels_implicit.comp's u_off */
    GLuint op_resolution[SSK_IMPLICIT_OP_KIND_COUNT];
    uint32_t field_count, node_count;
    bool has_adjacency;          /* the rig's welded adjacency exists (smoothing) */
    float *frame;                /* host copy of IB_FRAME's contents */
} gl_implicit;

typedef struct gl_mesh {
    uint32_t first_vertex, vertex_count;
    uint32_t influences;    /* K, or 0 when the rig has no bones */
    uint32_t weight_offset; /* first bone index / weight of the mesh */
} gl_mesh;

typedef struct gl_state {
    const ssk_rig *rig;
    ssk_gl_context *gl;
    const ssk_gl_info *info;
    GLuint buffers[BUF_COUNT];
    GLuint *positions;             /* the deformer graph's buffers */
    GLuint readback;               /* job_read's buffer in host memory (0: none yet) */
    const void *readback_map;      /* ... persistently mapped */
    bool readback_plain;           /* software renderer, SSK_GL_READBACK=plain, or no GL 4.4 buffer storage */
    int position_count;
    GLuint programs[PROG_COUNT];   /* compiled on first use */
    GLuint local_size[PROG_COUNT]; /* queried GL_COMPUTE_WORK_GROUP_SIZE x */
    uint32_t max_groups;           /* GL_MAX_COMPUTE_WORK_GROUP_COUNT x */
    bool ml_wide;                  /* the spring solver's programs and work
                                      sizes for hardware GPUs (ml_wide) */
    uint32_t spring_batch;         /* most passes of a spring batch (spring_batch) */
    bool ml_shared;                /* wide coarse step in shared memory where it fits */
    bool ml_fused;                 /* wide passes end in kernels_spring_ml_prolong.comp */
    bool spring_watch;             /* fused multilevel passes take the watch on the device */
    uint32_t ml_probe;             /* SSK_GL_SPRING_PROBE (developers' timing), else 0 */
    gl_mesh *meshes;
    uint32_t triangle_count;       /* whole rig */
    bool reference_allocated;
    bool has_binding;
    bool has_cor;                  /* BUF_COR_CENTERS holds the binding's CoRs */
    bool cor_scaled;               /* a bone of the frame has scale or shear */
    const float *rest_distances;   /* host array uploaded to BUF_REST_DISTANCES */
    const float *weight_slots;     /* host array uploaded to BUF_WEIGHT_SLOTS */
    const ssk_attach_bone *rest_attach; /* host array uploaded to BUF_REST_ATTACH */
    gl_spring *springs;            /* spring nodes seen so far */
    int spring_count;
    struct gl_implicit *implicits; /* implicit nodes seen so far */
    int implicit_count;
    bool pre_post;                 /* some mesh has non-identity matrices */
    const ssk_frame_data *frame;   /* valid during a deform */
} gl_state;

/* Host copies of the rig in the device layout, built once for the upload. */
typedef struct gl_upload {
    const ssk_binding_view *binding; /* or NULL */
    float *rest;
    int32_t *bone_indices;
    float *weights;
    uint32_t *triangles, *vt_offsets, *vt_triangles;
    size_t shading_count; /* entries of vt_triangles */
    uint32_t *weld;       /* #members by 4 (shaders/model_weld.comp) */
    float *cor;                      /* #V vec4 (center, flag), or NULL */
    size_t weight_count;
} gl_upload;

/* One job on the GL thread: the inputs of the call, its outputs, and the
 * status it ended with. */
typedef struct gl_job {
    gl_state *s;
    const gl_upload *upload;
    float *dst;
    const ssk_frame_data *frame;
    const ssk_kernel_call *call;
    int buffer;
    const float *reference;
    float *out_max;
    ssk_error *err;
    ssk_status status;
} gl_job;

/* --- GL thread helpers --------------------------------------------------- */

/* (Re)allocates buffer `b` with `bytes` (at least GL_EMPTY_BUFFER_BYTES),
 * filled from `data` when not NULL. Errors: SSK_ERROR_OUT_OF_MEMORY when the
 * size exceeds GL_MAX_SHADER_STORAGE_BLOCK_SIZE or the driver reports
 * GL_OUT_OF_MEMORY, SSK_ERROR_GL otherwise. */
static ssk_status allocate_named(const gl_state *s, GLuint *buffer, const char *name,
                                 size_t bytes, const void *data, GLenum usage, ssk_error *err)
{
    if (s->info->max_ssbo_bytes > 0 && bytes > (unsigned long long)s->info->max_ssbo_bytes)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "GL buffer '%s' needs %zu bytes, more than the device's "
                             "GL_MAX_SHADER_STORAGE_BLOCK_SIZE (%lld bytes)",
                             name, bytes, s->info->max_ssbo_bytes);
    if (bytes / sizeof(float) > UINT32_MAX)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "GL buffer '%s' needs %zu bytes, more than 32-bit shader indices "
                             "can address", name, bytes);
    ssk_status st = ssk_gl_check("before allocating GL buffers", err);
    if (st != SSK_OK) return st;
    if (!*buffer) glGenBuffers(1, buffer);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, *buffer);
    if (bytes == 0) {
        data = NULL;
        bytes = GL_EMPTY_BUFFER_BYTES;
    }
    glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)bytes, data, usage);
    char what[96];
    snprintf(what, sizeof what, "allocating GL buffer '%s' (%zu bytes)", name, bytes);
    return ssk_gl_check(what, err);
}

static ssk_status buffer_allocate(gl_state *s, gl_buffer b, size_t bytes, const void *data,
                                  GLenum usage, ssk_error *err)
{
    return allocate_named(s, &s->buffers[b], buffer_names[b], bytes, data, usage, err);
}

static void bind(GLuint binding, GLuint buffer)
{
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, binding, buffer);
}

/* The program of `p`, compiled on first use (so a deformer compiles only
 * the kernels its graph runs). */
static ssk_status program(gl_state *s, gl_program p, ssk_error *err)
{
    if (s->programs[p]) return SSK_OK;
    ssk_status st = ssk_gl_compute_program(s->gl, program_files[p], &s->programs[p], err);
    if (st != SSK_OK) return st;
    GLint size[3] = {0, 0, 0};
    glGetProgramiv(s->programs[p], GL_COMPUTE_WORK_GROUP_SIZE, size);
    if (size[0] <= 0 || size[1] != 1 || size[2] != 1) {
        s->programs[p] = 0;
        return ssk_error_set(err, SSK_ERROR_GL_SHADER,
                             "compute shader '%s' has work group size %dx%dx%d (expected "
                             "N x 1 x 1)", program_files[p], size[0], size[1], size[2]);
    }
    s->local_size[p] = (GLuint)size[0];
    glUseProgram(s->programs[p]);
    return SSK_OK;
}

/* Dispatches `count` invocations of the bound program in chunks of at most
 * max_groups work groups, each chunk starting at item u_base. */
static void dispatch(const gl_state *s, gl_program p, uint32_t count)
{
    const uint64_t local = s->local_size[p];
    const uint64_t chunk = local * s->max_groups;
    for (uint64_t base = 0; base < count; base += chunk) {
        const uint64_t items = count - base < chunk ? count - base : chunk;
        glUniform1ui(LOC_BASE, (GLuint)base);
        glDispatchCompute((GLuint)((items + local - 1) / local), 1, 1);
    }
}

/* Dispatches a grid-stride kernel over `count` items: at most
 * GL_REDUCTION_MAX_GROUPS work groups, each invocation looping with stride
 * u_stride = the number of invocations dispatched. */
static void dispatch_strided(const gl_state *s, gl_program p, uint32_t count)
{
    const uint64_t local = s->local_size[p];
    uint64_t groups = (count + local - 1) / local;
    if (groups > GL_REDUCTION_MAX_GROUPS) groups = GL_REDUCTION_MAX_GROUPS;
    if (groups > s->max_groups) groups = s->max_groups;
    if (groups == 0) return;
    glUniform1ui(LOC_BASE, 0);
    glUniform1ui(LOC_STRIDE, (GLuint)(groups * local));
    glDispatchCompute((GLuint)groups, 1, 1);
}

/* Which programs run the spring solver's multilevel correction: on
 * hardware GPUs ("wide") RESTRICT a work group per slab
 * (kernels_spring_ml_restrict.comp) and the coarse step in 1024
 * invocations (kernels_spring_ml_coarse_wide.comp); on software renderers
 * ("narrow") an invocation per slab (kernels_spring_multilevel.comp) and 64
 * invocations (kernels_spring_ml_coarse.comp), since a work group's
 * barriers cost more there than the idle lanes (on llvmpipe at 10k
 * vertices the wide RESTRICT took 20-34 ms a pass against 0.6-1.7). On an
 * H200 at 100k vertices the wide programs took 36 and 178 us a pass
 * against 2500 and 660. SSK_GL_SPRING_ML = "wide" or "narrow" overrides
 * the choice (the tests run both on llvmpipe); "wide-global" is "wide"
 * with the coarse step's local nodes in W even where they fit in shared
 * memory (spring_coarse_program), and "wide-unfused" without the
 * fused prolongation (kernels_spring_ml_prolong.comp: its own prolongation,
 * reductions and records dispatches). */
#define SSK_GL_SPRING_ML_ENV "SSK_GL_SPRING_ML"
static bool ml_wide(const ssk_gl_info *info)
{
    const char *env = getenv(SSK_GL_SPRING_ML_ENV);
    if (env && (strcmp(env, "wide") == 0 || strcmp(env, "wide-global") == 0 ||
                strcmp(env, "wide-unfused") == 0))
        return true;
    if (env && strcmp(env, "narrow") == 0) return false;
    return info->hardware != 0;
}

/* The most passes of a spring solve issued before one read-back
 * (run_spring "Batches"): on hardware GPUs a read-back drains the queue,
 * and the GPU idles while the host reads and issues the next pass; on a
 * software renderer the draining costs little against a pass, and a pass
 * issued past the stopping pass is lost. */
static uint32_t spring_batch(const ssk_gl_info *info)
{
    const char *env = getenv(SSK_GL_SPRING_BATCH_ENV);
    if (env && *env) {
        char *end = NULL;
        const long n = strtol(env, &end, 10);
        if (end && *end == '\0' && n >= 1 && n <= (long)SPRING_BATCH_MAX) return (uint32_t)n;
    }
    return info->hardware ? SPRING_BATCH_MAX : 1u;
}

/* Reads `bytes` of a buffer into dst after the kernels that wrote it. */
static void read_back(GLuint buffer, void *dst, size_t bytes)
{
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, buffer);
    glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)bytes, dst);
}

/* --- jobs ---------------------------------------------------------------- */

static void job_destroy(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    for (int b = 0; b < BUF_COUNT; ++b)
        if (s->buffers[b]) glDeleteBuffers(1, &s->buffers[b]);
    memset(s->buffers, 0, sizeof s->buffers);
    if (s->position_count) glDeleteBuffers(s->position_count, s->positions);
    if (s->readback) {
        glBindBuffer(GL_COPY_WRITE_BUFFER, s->readback);
        glUnmapBuffer(GL_COPY_WRITE_BUFFER);
        glDeleteBuffers(1, &s->readback);
        s->readback = 0;
        s->readback_map = NULL;
    }
    for (int i = 0; i < s->spring_count; ++i) {
        glDeleteBuffers(SB_COUNT, s->springs[i].buffers);
        memset(s->springs[i].buffers, 0, sizeof s->springs[i].buffers);
    }
    for (int i = 0; i < s->implicit_count; ++i) {
        glDeleteBuffers(IB_COUNT, s->implicits[i].buffers);
        memset(s->implicits[i].buffers, 0, sizeof s->implicits[i].buffers);
    }
    glGetError(); /* nothing to report from a destructor */
}

static ssk_status create_on_thread(gl_state *s, const gl_upload *u, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    /* the fused prolongation binds 12 storage blocks (GL guarantees 8) */
    GLint blocks = 0;
    glGetIntegerv(GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS, &blocks);
    if (blocks < SPRING_MLP_COUNTER + 1) s->ml_fused = false;
    /* the wide restriction binds 9 (kernels_spring_watch_lib.glsl's too) */
    if (blocks < SPRING_ML_AUX + 2) s->ml_wide = s->ml_fused = false;
    /* the watch on the device adds a block (13) at binding 14 at most */
    GLint bindings = 0;
    glGetIntegerv(GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS, &bindings);
    if (!s->ml_fused || blocks < SPRING_WATCH + 1 || bindings < SPRING_STEP_GOOD_FROM + 1)
        s->spring_watch = false;
    const size_t nv = rig->vertex_count, nm = rig->mesh_count, nb = rig->bone_count;
    const size_t nf = s->triangle_count;
    struct {
        gl_buffer b;
        size_t bytes;
        const void *data;
        GLenum usage;
    } const allocations[] = {
        {BUF_REST, 3 * nv * sizeof(float), u->rest, GL_STATIC_DRAW},
        {BUF_BONE_INDICES, u->weight_count * sizeof(int32_t), u->bone_indices, GL_STATIC_DRAW},
        {BUF_WEIGHTS, u->weight_count * sizeof(float), u->weights, GL_STATIC_DRAW},
        {BUF_LBS_BONES, nm * nb * MAT4_FLOATS * sizeof(float), NULL, GL_DYNAMIC_DRAW},
        {BUF_DQS_BONES, nb * DUAL_QUAT_FLOATS * sizeof(float), NULL, GL_DYNAMIC_DRAW},
        {BUF_PRE_POST, 3 * nm * MAT4_FLOATS * sizeof(float), NULL, GL_DYNAMIC_DRAW},
        {BUF_TRIANGLES, 3 * nf * sizeof(uint32_t), u->triangles, GL_STATIC_DRAW},
        {BUF_FACE_NORMALS, 3 * nf * sizeof(float), NULL, GL_DYNAMIC_COPY},
        {BUF_VT_OFFSETS, (nv + 1) * sizeof(uint32_t), u->vt_offsets, GL_STATIC_DRAW},
        {BUF_VT_TRIANGLES, u->shading_count * sizeof(uint32_t), u->vt_triangles, GL_STATIC_DRAW},
        {BUF_RESULT, sizeof(GLuint), NULL, GL_DYNAMIC_READ},
        {BUF_BIND_BONES, u->binding ? nv * sizeof(int32_t) : 0,
         u->binding ? (const void *)u->binding->bones : NULL, GL_STATIC_DRAW},
        {BUF_BIND_T, u->binding ? nv * sizeof(float) : 0,
         u->binding ? (const void *)u->binding->t : NULL, GL_STATIC_DRAW},
        {BUF_BIND_S, u->binding ? 3 * nv * sizeof(float) : 0,
         u->binding ? (const void *)u->binding->scale_vectors : NULL, GL_STATIC_DRAW},
        {BUF_ATTACH, nb * sizeof(ssk_attach_bone), NULL, GL_DYNAMIC_DRAW},
        {BUF_MASK, nb * sizeof(GLuint), NULL, GL_DYNAMIC_DRAW},
        {BUF_COR_BONES, u->cor ? nb * sizeof(ssk_cor_bone) : 0, NULL, GL_DYNAMIC_DRAW},
        {BUF_COR_CENTERS, u->cor ? 4 * nv * sizeof(float) : 0, u->cor, GL_STATIC_DRAW},
        {BUF_WELD_MEMBERS, 4 * (size_t)rig->weld.member_count * sizeof(uint32_t), u->weld,
         GL_STATIC_DRAW},
    };
    for (size_t i = 0; i < sizeof allocations / sizeof allocations[0]; ++i) {
        ssk_status st = buffer_allocate(s, allocations[i].b, allocations[i].bytes,
                                        allocations[i].data, allocations[i].usage, err);
        if (st != SSK_OK) return st;
    }
    return SSK_OK;
}

static void job_create(void *user)
{
    gl_job *job = user;
    job->status = create_on_thread(job->s, job->upload, job->err);
}

static void job_buffer_create(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    const size_t bytes = 3 * (size_t)s->rig->vertex_count * sizeof(float);
    GLuint buffer = 0;
    glGenBuffers(1, &buffer);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, buffer);
    glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(bytes ? bytes : GL_EMPTY_BUFFER_BYTES),
                 NULL, GL_DYNAMIC_COPY);
    job->status = ssk_gl_check("allocating a GL position buffer", job->err);
    if (job->status != SSK_OK) {
        glDeleteBuffers(1, &buffer);
        return;
    }
    s->positions[s->position_count] = buffer;
    job->buffer = s->position_count++;
}

/* Uploads the frame's per-bone data: the only per-frame upload. */
static void job_frame_upload(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    const ssk_rig *rig = s->rig;
    const ssk_frame_data *frame = job->frame;
    const size_t nb = rig->bone_count, nm = rig->mesh_count;
    if (frame->lbs_matrices && nb) {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_LBS_BONES]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0,
                        (GLsizeiptr)(nm * nb * MAT4_FLOATS * sizeof(float)), frame->lbs_matrices);
    }
    if (frame->dual_quats && nb) {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_DQS_BONES]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0,
                        (GLsizeiptr)(nb * DUAL_QUAT_FLOATS * sizeof(float)), frame->dual_quats);
    }
    s->cor_scaled = false;
    if (frame->cor_bones && nb && s->has_cor) {
        for (size_t b = 0; b < nb; ++b) s->cor_scaled |= frame->cor_bones[b].scale_weight != 0.0f;
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_COR_BONES]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0,
                        (GLsizeiptr)(nb * COR_BONE_FLOATS * sizeof(float)), frame->cor_bones);
    }
    s->pre_post = false;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) s->pre_post |= !frame->mesh_identity[m];
    if (s->pre_post) {
        const size_t bytes = nm * MAT4_FLOATS * sizeof(float);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_PRE_POST]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)bytes, frame->pre);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, (GLintptr)bytes, (GLsizeiptr)bytes, frame->post);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, (GLintptr)(2 * bytes), (GLsizeiptr)bytes,
                        frame->objects);
    }
    job->status = ssk_gl_check("uploading bone data", job->err);
}

/* LBS or DQS of the rest positions into `output`, one dispatch per mesh. */
static ssk_status run_blend(gl_state *s, gl_program p, GLuint output, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    ssk_status st = program(s, p, err);
    if (st != SSK_OK) return st;
    glUseProgram(s->programs[p]);
    bind(BIND_REST, s->buffers[BUF_REST]);
    bind(BIND_BONE_INDICES, s->buffers[BUF_BONE_INDICES]);
    bind(BIND_WEIGHTS, s->buffers[BUF_WEIGHTS]);
    bind(BIND_BONES, s->buffers[p == PROG_DQS ? BUF_DQS_BONES : BUF_LBS_BONES]);
    bind(BIND_DEFORMED, output);
    if (p == PROG_DQS) {
        bind(BIND_PRE_POST, s->buffers[BUF_PRE_POST]);
        glUniform1ui(LOC_MESH_COUNT, rig->mesh_count);
    } else {
        glUniform1ui(LOC_BONE_COUNT, rig->bone_count);
    }
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const gl_mesh *mesh = &s->meshes[m];
        glUniform1ui(LOC_COUNT, mesh->vertex_count);
        glUniform1ui(LOC_FIRST_VERTEX, mesh->first_vertex);
        glUniform1ui(LOC_INFLUENCES, mesh->influences);
        glUniform1ui(LOC_WEIGHT_OFFSET, mesh->weight_offset);
        glUniform1ui(LOC_MESH, m);
        if (p == PROG_DQS)
            glUniform1ui(LOC_FLAGS, s->pre_post && !s->frame->mesh_identity[m] ? FLAG_PRE_POST : 0u);
        dispatch(s, p, mesh->vertex_count);
    }
    return SSK_OK;
}

/* CoR skinning (kernels_cor.comp) of the rest positions into `output`, one
 * dispatch per mesh, as run_blend's DQS. */
static ssk_status run_cor(gl_state *s, GLuint output, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    if (!s->has_cor || !s->frame->cor_bones)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "CoR kernel without centers of rotation");
    ssk_status st = program(s, PROG_COR, err);
    if (st != SSK_OK) return st;
    glUseProgram(s->programs[PROG_COR]);
    bind(BIND_REST, s->buffers[BUF_REST]);
    bind(BIND_BONE_INDICES, s->buffers[BUF_BONE_INDICES]);
    bind(BIND_WEIGHTS, s->buffers[BUF_WEIGHTS]);
    bind(BIND_BONES, s->buffers[BUF_COR_BONES]);
    bind(BIND_PRE_POST, s->buffers[BUF_PRE_POST]);
    bind(BIND_DEFORMED, output);
    bind(BIND_COR_CENTERS, s->buffers[BUF_COR_CENTERS]);
    glUniform1ui(LOC_MESH_COUNT, rig->mesh_count);
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const gl_mesh *mesh = &s->meshes[m];
        GLuint flags = s->pre_post && !s->frame->mesh_identity[m] ? FLAG_PRE_POST : 0u;
        if (s->cor_scaled) flags |= FLAG_COR_SCALED;
        glUniform1ui(LOC_COUNT, mesh->vertex_count);
        glUniform1ui(LOC_FIRST_VERTEX, mesh->first_vertex);
        glUniform1ui(LOC_INFLUENCES, mesh->influences);
        glUniform1ui(LOC_WEIGHT_OFFSET, mesh->weight_offset);
        glUniform1ui(LOC_MESH, m);
        glUniform1ui(LOC_FLAGS, flags);
        dispatch(s, PROG_COR, mesh->vertex_count);
    }
    return SSK_OK;
}

/* Area-weighted normals of `input` into `output`. */
static ssk_status run_normals(gl_state *s, GLuint input, GLuint output, ssk_error *err)
{
    ssk_status st = program(s, PROG_FACE_NORMALS, err);
    if (st == SSK_OK) st = program(s, PROG_VERTEX_NORMALS, err);
    if (st != SSK_OK) return st;
    if (s->triangle_count) {
        glUseProgram(s->programs[PROG_FACE_NORMALS]);
        bind(BIND_DEFORMED, input);
        bind(BIND_TRIANGLES, s->buffers[BUF_TRIANGLES]);
        bind(BIND_FACE_NORMALS, s->buffers[BUF_FACE_NORMALS]);
        glUniform1ui(LOC_COUNT, s->triangle_count);
        dispatch(s, PROG_FACE_NORMALS, s->triangle_count);
        glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    }
    glUseProgram(s->programs[PROG_VERTEX_NORMALS]);
    bind(BIND_FACE_NORMALS, s->buffers[BUF_FACE_NORMALS]);
    bind(BIND_VT_OFFSETS, s->buffers[BUF_VT_OFFSETS]);
    bind(BIND_VT_TRIANGLES, s->buffers[BUF_VT_TRIANGLES]);
    bind(BIND_NORMALS, output);
    glUniform1ui(LOC_COUNT, s->rig->vertex_count);
    dispatch(s, PROG_VERTEX_NORMALS, s->rig->vertex_count);
    return SSK_OK;
}

/* Rigid, IRS or radial over every mesh (one dispatch per mesh, for its
 * object matrices), rig space inside the kernel. */
static ssk_status run_attach(gl_state *s, gl_program p, const ssk_kernel_call *call, GLuint input,
                             GLuint output, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    if (!s->has_binding)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "attachment kernel without a binding");
    ssk_status st = program(s, p, err);
    if (st != SSK_OK) return st;
    const size_t nb = rig->bone_count;
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_ATTACH]);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)(nb * sizeof(ssk_attach_bone)),
                    call->attach_bones);
    if (p == PROG_RADIAL) {
        GLuint *mask = malloc((nb + 1) * sizeof(GLuint));
        if (!mask) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        for (size_t b = 0; b < nb; ++b) mask[b] = call->bone_mask[b] ? 1u : 0u;
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_MASK]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)(nb * sizeof(GLuint)), mask);
        free(mask);
    }
    const bool adjust = p == PROG_IRS && call->length_adjust && call->rest_distances;
    if (adjust && s->rest_distances != call->rest_distances) {
        st = buffer_allocate(s, BUF_REST_DISTANCES, (size_t)rig->vertex_count * sizeof(float),
                             call->rest_distances, GL_STATIC_DRAW, err);
        if (st != SSK_OK) return st;
        s->rest_distances = call->rest_distances;
    }
    glUseProgram(s->programs[p]);
    bind(ATTACH_BONES_OF_VERTEX, s->buffers[BUF_BIND_BONES]);
    bind(ATTACH_T, s->buffers[BUF_BIND_T]);
    bind(ATTACH_S, s->buffers[BUF_BIND_S]);
    bind(ATTACH_BONE_DATA, s->buffers[BUF_ATTACH]);
    bind(ATTACH_PRE_POST, s->buffers[BUF_PRE_POST]);
    bind(ATTACH_OUTPUT, output);
    if (p == PROG_RADIAL) {
        bind(ATTACH_EXTRA, s->buffers[BUF_MASK]);
        bind(ATTACH_INPUT, input);
        glUniform1ui(LOC_ATTACH_PROFILE, (GLuint)call->profile);
        glUniform1f(LOC_ATTACH_AMOUNT, call->amount);
    } else if (adjust) {
        bind(ATTACH_EXTRA, s->buffers[BUF_REST_DISTANCES]);
    }
    glUniform1ui(LOC_ATTACH_MESH_COUNT, rig->mesh_count);
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const gl_mesh *mesh = &s->meshes[m];
        GLuint flags = s->pre_post && !s->frame->mesh_identity[m] ? FLAG_MESH_MATRICES : 0u;
        if (adjust) flags |= FLAG_LENGTH_ADJUST;
        glUniform1ui(LOC_COUNT, mesh->vertex_count);
        glUniform1ui(LOC_FIRST_VERTEX, mesh->first_vertex);
        glUniform1ui(LOC_ATTACH_MESH, m);
        glUniform1ui(LOC_ATTACH_FLAGS, flags);
        dispatch(s, p, mesh->vertex_count);
    }
    return SSK_OK;
}

/* Rigid or IRS with the attachment per skin weight influence
 * (kernels_attach_weights.comp), one dispatch per mesh; the slot records
 * are uploaded on first use (they depend on the rig and the binding only). */
static ssk_status run_attach_weights(gl_state *s, const ssk_kernel_call *call, GLuint output,
                                     ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    ssk_status st = program(s, PROG_ATTACH_WEIGHTS, err);
    if (st != SSK_OK) return st;
    if (s->weight_slots != call->weight_slots) {
        st = buffer_allocate(s, BUF_WEIGHT_SLOTS,
                             call->weight_slot_count * SSK_ATTACH_SLOT_FLOATS * sizeof(float),
                             call->weight_slots, GL_STATIC_DRAW, err);
        if (st != SSK_OK) return st;
        s->weight_slots = call->weight_slots;
    }
    const size_t nb = rig->bone_count;
    const bool adjust = call->kernel == SSK_KERNEL_IRS && call->length_adjust && call->rest_bones;
    if (adjust && s->rest_attach != call->rest_bones) {
        st = buffer_allocate(s, BUF_REST_ATTACH, nb * sizeof(ssk_attach_bone), call->rest_bones,
                             GL_STATIC_DRAW, err);
        if (st != SSK_OK) return st;
        s->rest_attach = call->rest_bones;
    }
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_ATTACH]);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)(nb * sizeof(ssk_attach_bone)),
                    call->attach_bones);
    glUseProgram(s->programs[PROG_ATTACH_WEIGHTS]);
    bind(ATTACH_SLOTS, s->buffers[BUF_WEIGHT_SLOTS]);
    if (adjust) bind(ATTACH_EXTRA, s->buffers[BUF_REST_ATTACH]);
    bind(ATTACH_BONE_DATA, s->buffers[BUF_ATTACH]);
    bind(ATTACH_PRE_POST, s->buffers[BUF_PRE_POST]);
    bind(ATTACH_OUTPUT, output);
    glUniform1ui(LOC_ATTACH_MESH_COUNT, rig->mesh_count);
    GLuint first_slot = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const gl_mesh *mesh = &s->meshes[m];
        const uint32_t k = rig->meshes[m].influence_count ? rig->meshes[m].influence_count : 1;
        GLuint flags = s->pre_post && !s->frame->mesh_identity[m] ? FLAG_MESH_MATRICES : 0u;
        if (call->kernel == SSK_KERNEL_IRS) flags |= FLAG_INCREMENTAL;
        if (adjust) flags |= FLAG_LENGTH_ADJUST;
        glUniform1ui(LOC_COUNT, mesh->vertex_count);
        glUniform1ui(LOC_FIRST_VERTEX, mesh->first_vertex);
        glUniform1ui(LOC_ATTACH_SLOTS_PER_VERTEX, k);
        glUniform1ui(LOC_ATTACH_FIRST_SLOT, first_slot);
        glUniform1ui(LOC_ATTACH_MESH, m);
        glUniform1ui(LOC_ATTACH_FLAGS, flags);
        dispatch(s, PROG_ATTACH_WEIGHTS, mesh->vertex_count);
        first_slot += mesh->vertex_count * k;
    }
    return SSK_OK;
}

/* --- spring deformer (Toothman 2020, 4.2, 6.3) ---------------------------
 *
 * run_spring is ssk_spring_solve (core/kernels/spring.c) with the passes on the
 * device: the first stage is converted to rig space (kernels_spring_in.comp), each
 * iteration runs the records pre-pass (kernels_spring_records.comp), the force
 * pass (kernels_spring_step.comp, writing the next of three rotating iterate
 * buffers: Jacobi, double-buffered as 6.3) and the two-pass reduction
 * (kernels_spring_reduce.comp), and reads back only the 32-byte reduction; the
 * decisions (convergence, divergence, which iterate is the result, when to
 * keep a good iterate or zero the velocities) are the CPU solver's own
 * code (ssk_spring_watch_* of core/kernels/spring.h), taken on this thread from the
 * same reductions. The Chebyshev blend (chebyshev_rho) runs in the force
 * pass with the CPU's weight (ssk_spring_watch_omega) and the iterate
 * before the current one bound where the semi-implicit velocities would be
 * (the two exclude each other). The result is converted back to object
 * space into the node's output buffer; the positions are never read back
 * here.
 * Measured on llvmpipe (2 cores, 100k-vertex limb, fixed 50 iterations):
 * 8.5 ms per iteration (records 1.1, step 6.2, reduction and readback
 * 1.1), 440 ms per frame; the CPU solver takes 1.5 ms per iteration on
 * the same cores, so AUTO's choice of the CPU without a hardware GPU
 * holds for springs too. */

/* the most rows of a restriction chunk: SSK_LOCAL_SIZE, a row per
 * invocation (kernels_spring_ml_restrict.comp) */
#define SPRING_ML_CHUNK_ROWS 256u

/* The multilevel correction's device data (kernels_spring_multilevel.comp):
 * SB_ML_U, SB_ML_F (the node bases at its end are uploaded per solve) and
 * SB_ML_W, with their offsets in g->ml_off. */
static ssk_status spring_ml_upload(gl_state *s, gl_spring *g, ssk_error *err)
{
    const ssk_spring *sp = g->sp;
    const ssk_spring_ml *ml = sp->ml;
    const size_t nv = sp->vertex_count, nb = sp->bone_count;
    const size_t nodes = ml->node_count, local = ml->local_count;
    GLuint *off = g->ml_off;
    size_t u = 0, f = 0, w = 0;
    off[ML_OFF_LOC_FIRST] = (GLuint)u, u += nb * SSK_SPRING_ML_MAX_LEVELS;
    off[ML_OFF_LEVELS] = (GLuint)u, u += nb;
    off[ML_OFF_L2G] = (GLuint)u, u += local;
    off[ML_OFF_G2L] = (GLuint)u, u += nodes + 1;
    off[ML_OFF_G2L_LIST] = (GLuint)u, u += local;
    off[ML_OFF_SLAB] = (GLuint)u, u += local + 1;
    off[ML_OFF_ROWS] = (GLuint)u, u += nv;
    /* the frozen flags and t per row are in ROW_KEY and ROW_F (below) */
    off[ML_OFF_FROZEN] = (GLuint)u;
    off[ML_OFF_FROZEN_WORDS] = 0;
    off[ML_OFF_NODE_INFO] = (GLuint)u, u += local;
    off[ML_OFF_BY_LEVEL] = (GLuint)u, u += SSK_SPRING_ML_MAX_LEVELS + 1 + local;
    off[ML_OFF_ROW_KEY] = (GLuint)u, u += nv;
    /* the restriction's chunks (below): at most one per slab plus one per
     * SPRING_ML_CHUNK_ROWS rows */
    const size_t max_chunks = local + nv / SPRING_ML_CHUNK_ROWS + 1;
    off[ML_OFF_CHUNKS] = (GLuint)u, u += 2 * max_chunks;
    g->ml_chunk_off = (GLuint)u, u += local + 1;
    off[ML_OFF_ROW_F] = (GLuint)f, f += 2 * nv;
    off[ML_OFF_T] = (GLuint)f;
    off[ML_OFF_INV_RADIUS] = (GLuint)f, f += nb;
    off[ML_OFF_KINV] = (GLuint)f, f += nodes * SSK_SPRING_ML_MODES * SSK_SPRING_ML_MODES;
    off[ML_OFF_CENTER] = (GLuint)f, f += 2 * nodes;
    off[ML_OFF_RADIUS] = (GLuint)f, f += nodes;
    off[ML_OFF_FRAME] = (GLuint)f, f += 9 * nodes;
    /* the slabs' sums by local node (narrow) or by chunk (wide) */
    off[ML_OFF_SLAB_SUMS] = (GLuint)w;
    w += 2 * SSK_SPRING_ML_MOMENTS * (local > max_chunks ? local : max_chunks);
    off[ML_OFF_LOCAL] = (GLuint)w, w += SSK_SPRING_ML_MOMENTS * local;
    off[ML_OFF_NODE_MAP] = (GLuint)w, w += SSK_SPRING_ML_MOMENTS * nodes;
    uint32_t *U = calloc(u + 1, sizeof *U);
    float *F = calloc(f + 1, sizeof *F);
    uint32_t *count = calloc(local + nodes + 2, sizeof *count);
    if (!U || !F || !count) {
        free(U);
        free(F);
        free(count);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t b = 0; b < nb; ++b) {
        U[off[ML_OFF_LEVELS] + b] = ssk_spring_ml_levels(ml, (uint32_t)b);
        F[off[ML_OFF_INV_RADIUS] + b] = ml->inv_radius[ml->slot[b]];
        for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, (uint32_t)b); ++l)
            U[off[ML_OFF_LOC_FIRST] + b * SSK_SPRING_ML_MAX_LEVELS + l] =
                ssk_spring_ml_loc(ml, (uint32_t)b, l);
    }
    /* per local node its k, level and bone's levels; the local nodes by
     * level (CSR, ascending): the coarse step's flat loops */
    uint32_t *info = U + off[ML_OFF_NODE_INFO], *by_level = U + off[ML_OFF_BY_LEVEL];
    uint32_t *level_list = by_level + SSK_SPRING_ML_MAX_LEVELS + 1;
    for (size_t b = 0; b < nb; ++b) {
        const uint32_t levels = ssk_spring_ml_levels(ml, (uint32_t)b);
        for (uint32_t l = 0; l < levels; ++l)
            for (uint32_t k = 0; k <= (1u << l); ++k) {
                info[ssk_spring_ml_loc(ml, (uint32_t)b, l) + k] = k | l << 16 | levels << 24;
                ++by_level[l + 1];
            }
    }
    for (uint32_t l = 0; l < SSK_SPRING_ML_MAX_LEVELS; ++l) by_level[l + 1] += by_level[l];
    /* per row: its slab or UINT32_MAX (no levels, frozen), its upper hat
     * weight and 1 / r_b (the CPU's ssk_spring_ml_finest) */
    for (size_t i = 0; i < nv; ++i) {
        const uint32_t b = (uint32_t)sp->bones[i];
        float up = 0.0f;
        const bool on = ssk_spring_ml_levels(ml, b) > 0 && !(ml->frozen && ml->frozen[i]);
        U[off[ML_OFF_ROW_KEY] + i] = on ? ssk_spring_ml_finest(ml, b, sp->t[i], &up) : UINT32_MAX;
        F[off[ML_OFF_ROW_F] + 2 * i] = up;
        F[off[ML_OFF_ROW_F] + 2 * i + 1] = ml->inv_radius[ml->slot[b]];
    }
    for (size_t lo = 0; lo < local; ++lo) {
        const uint32_t l = (info[lo] >> 16) & 0xffu;
        level_list[by_level[l] + count[l]++] = (uint32_t)lo;
    }
    memset(count, 0, (local + nodes + 2) * sizeof *count);
    uint32_t *l2g = U + off[ML_OFF_L2G];
    memcpy(l2g, ml->node_of, local * sizeof *l2g);
    /* global -> local (CSR, locals ascending) */
    uint32_t *g2l = U + off[ML_OFF_G2L], *g2l_list = U + off[ML_OFF_G2L_LIST];
    for (size_t k = 0; k < local; ++k) ++g2l[l2g[k] + 1];
    for (size_t n = 0; n < nodes; ++n) g2l[n + 1] += g2l[n];
    for (size_t k = 0; k < local; ++k) g2l_list[g2l[l2g[k]] + count[l2g[k]]++] = (uint32_t)k;
    /* rows by slab (CSR, rows ascending; the rows of bones without levels
     * in none) */
    uint32_t *slab = U + off[ML_OFF_SLAB], *rows = U + off[ML_OFF_ROWS], *fill = count + nodes;
    memset(count, 0, (local + nodes + 2) * sizeof *count);
    for (size_t i = 0; i < nv; ++i) {
        const uint32_t k = ssk_spring_ml_row_slab(ml, sp, (uint32_t)i);
        if (k != UINT32_MAX) ++slab[k + 1];
    }
    for (size_t k = 0; k < local; ++k) slab[k + 1] += slab[k];
    for (size_t i = 0; i < nv; ++i) {
        const uint32_t k = ssk_spring_ml_row_slab(ml, sp, (uint32_t)i);
        if (k != UINT32_MAX) rows[slab[k] + fill[k]++] = (uint32_t)i;
    }
    /* The restriction's chunks (kernels_spring_ml_restrict.comp, a work
     * group each): each slab's rows (the finest local nodes k < 2^l, in
     * order) cut into runs of at most SPRING_ML_CHUNK_ROWS, as [first,
     * end) into ROWS; each local node's chunks (CSR: a slab's are
     * consecutive, the other nodes have none). A work group per slab
     * waited on its largest slab: 4032 rows against 390 on average at the
     * bench limb's 100k vertices, 16 turns of its loop, 24 us a pass on an
     * H200. */
    uint32_t *chunk = U + off[ML_OFF_CHUNKS], *chunk_off = U + g->ml_chunk_off;
    g->ml_chunks = 0;
    for (size_t lo = 0; lo < local; ++lo) {
        chunk_off[lo] = g->ml_chunks;
        const uint32_t k = info[lo] & 0xffffu, l = (info[lo] >> 16) & 0xffu;
        if (!(l + 1 == info[lo] >> 24 && k < (1u << l))) continue;
        for (uint32_t a = slab[lo]; a < slab[lo + 1]; a += SPRING_ML_CHUNK_ROWS) {
            chunk[2 * g->ml_chunks] = a;
            chunk[2 * g->ml_chunks + 1] =
                slab[lo + 1] - a < SPRING_ML_CHUNK_ROWS ? slab[lo + 1] : a + SPRING_ML_CHUNK_ROWS;
            ++g->ml_chunks;
        }
    }
    chunk_off[local] = g->ml_chunks;
    ssk_spring_ml_kinv_full(ml, F + off[ML_OFF_KINV]);
    memcpy(F + off[ML_OFF_CENTER], ml->node_center, 2 * nodes * sizeof(float));
    memcpy(F + off[ML_OFF_RADIUS], ml->node_radius, nodes * sizeof(float));
    ssk_status st = allocate_named(s, &g->buffers[SB_ML_U], spring_buffer_names[SB_ML_U],
                                   u * sizeof *U, U, GL_STATIC_DRAW, err);
    if (st == SSK_OK)
        st = allocate_named(s, &g->buffers[SB_ML_F], spring_buffer_names[SB_ML_F],
                            f * sizeof *F, F, GL_DYNAMIC_DRAW, err);
    if (st == SSK_OK)
        st = allocate_named(s, &g->buffers[SB_ML_W], spring_buffer_names[SB_ML_W],
                            (w + 1) * sizeof(float), NULL, GL_DYNAMIC_COPY, err);
    free(U);
    free(F);
    free(count);
    return st;
}

/* The device state of spring `sp`, uploaded on first use (CSR, rest data,
 * roles and maps are constant for the spring's lifetime). */
/* SB_ANCHOR_TERMS (kernels_spring_anchors.comp): per vertex a header
 * (first term, end, its binding bone, kind | defined << 2), then the
 * terms (bone, w bits, t bits, 0) of ssk_spring_anchor_terms. */
static ssk_status spring_anchor_upload(gl_state *s, gl_spring *g, ssk_error *err)
{
    const ssk_spring *sp = g->sp;
    const uint32_t nv = sp->vertex_count;
    uint32_t k = 1;
    if (sp->weights_rig)
        for (uint32_t m = 0; m < sp->weights_rig->mesh_count; ++m)
            if (sp->weights_rig->meshes[m].influence_count > k)
                k = sp->weights_rig->meshes[m].influence_count;
    uint32_t *words = malloc(4 * ((size_t)nv + (size_t)nv * k) * sizeof(uint32_t) + 1);
    ssk_spring_anchor_term *terms = malloc(k * sizeof *terms);
    if (!words || !terms) {
        free(words);
        free(terms);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    uint32_t next = nv;
    for (uint32_t i = 0; i < nv; ++i) {
        uint32_t count = 0;
        const uint32_t kind = ssk_spring_anchor_terms(sp, i, terms, &count);
        uint32_t *h = words + 4 * (size_t)i;
        h[0] = next;
        h[1] = next + count;
        h[2] = (uint32_t)sp->bones[i];
        h[3] = kind | (sp->scale_defined[i] ? 4u : 0u);
        for (uint32_t j = 0; j < count; ++j, ++next) {
            uint32_t *e = words + 4 * (size_t)next;
            e[0] = (uint32_t)terms[j].bone;
            memcpy(&e[1], &terms[j].w, sizeof(float));
            memcpy(&e[2], &terms[j].t, sizeof(float));
            e[3] = 0;
        }
    }
    const ssk_status st = allocate_named(s, &g->buffers[SB_ANCHOR_TERMS],
                                         spring_buffer_names[SB_ANCHOR_TERMS],
                                         4 * (size_t)next * sizeof(uint32_t), words,
                                         GL_STATIC_DRAW, err);
    free(words);
    free(terms);
    return st;
}

static void spring_barrier(void);

/* The frame's anchors and bone directions on the device
 * (kernels_spring_anchors.comp) into SB_ANCHOR and SB_FRAME's first #V. */
static void spring_anchors(gl_state *s, gl_spring *g, const ssk_attach_bone *bones)
{
    const ssk_rig *rig = s->rig;
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_ATTACH]);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0,
                    (GLsizeiptr)(rig->bone_count * sizeof(ssk_attach_bone)), bones);
    glUseProgram(s->programs[PROG_SPRING_ANCHORS]);
    bind(SPRING_ANC_TERMS, g->buffers[SB_ANCHOR_TERMS]);
    bind(SPRING_ANC_BONES, s->buffers[BUF_ATTACH]);
    bind(SPRING_ANC_ANCHOR, g->buffers[SB_ANCHOR]);
    bind(SPRING_ANC_DIR, g->buffers[SB_FRAME]);
    glUniform1ui(LOC_COUNT, rig->vertex_count);
    glUniform1f(LOC_SPRING_ANC_EPS_DIR, SSK_SPRING_DIRECTION_EPSILON);
    dispatch(s, PROG_SPRING_ANCHORS, rig->vertex_count);
    spring_barrier();
}

static ssk_status spring_entry(gl_state *s, ssk_spring *sp, gl_spring **out, ssk_error *err)
{
    for (int i = 0; i < s->spring_count; ++i)
        if (s->springs[i].sp == sp) {
            *out = &s->springs[i];
            return SSK_OK;
        }
    if (sp->vertex_count != s->rig->vertex_count || sp->bone_count != s->rig->bone_count)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "GL backend: spring made for a rig of %u vertices and %u bones, "
                             "this rig has %u and %u", sp->vertex_count, sp->bone_count,
                             s->rig->vertex_count, s->rig->bone_count);
    gl_spring *list = realloc(s->springs, ((size_t)s->spring_count + 1) * sizeof *list);
    if (!list) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    s->springs = list;
    gl_spring *g = &s->springs[s->spring_count];
    memset(g, 0, sizeof *g);
    g->sp = sp;
    const size_t nv = sp->vertex_count, nb = sp->bone_count;
    const ssk_spring_params *p = &sp->params;
    const bool dependent = p->mode == SSK_SPRING_FRAME_DEPENDENT;
    g->role_words = (uint32_t)((nv + SPRING_ROLES_PER_WORD - 1) / SPRING_ROLES_PER_WORD);
    size_t scalar_words = g->role_words;
    for (int f = 0; f < SSK_FORCE_COUNT; ++f)
        if (sp->maps[f]) {
            g->map_offset[f] = (uint32_t)scalar_words;
            g->map_flags |= SPRING_FLAG_MAP0 << f;
            scalar_words += nv;
        }
    uint32_t *vertex = malloc(4 * nv * sizeof(uint32_t) + 1);
    uint32_t *scalars = malloc(scalar_words * sizeof(uint32_t) + 1);
    /* the clusters (kernels_spring_detail.comp): words [0, #V) each
     * vertex's block index or SSK_SPRING_NO_CLUSTER, then sp's blocks */
    uint32_t *clusters = malloc(((size_t)nv + sp->cluster_word_count) * sizeof(uint32_t) + 1);
    g->roles_packed = malloc(g->role_words * sizeof(uint32_t) + 1);
    const size_t watch_floats = 4 * ((size_t)p->max_iterations + 2); /* two tables */
    g->watch_table = malloc(watch_floats * sizeof(float));
    if (dependent) {
        g->prev_skinning = malloc(16 * nb * sizeof(float) + 1);
        g->diff = malloc(16 * nb * sizeof(float) + 1);
    }
    ++s->spring_count; /* owned by the state from here: gl_destroy frees it */
    ssk_status st = SSK_OK;
    if (!vertex || !scalars || !clusters || !g->roles_packed || !g->watch_table ||
        (dependent && (!g->prev_skinning || !g->diff)))
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    if (st == SSK_OK) {
        const uint32_t *w = sp->cluster_words;
        for (size_t i = 0; i < nv; ++i) clusters[i] = SSK_SPRING_NO_CLUSTER;
        memcpy(clusters + nv, w, (size_t)sp->cluster_word_count * sizeof(uint32_t));
        for (uint32_t block = 0; block < sp->cluster_word_count; block += 1 + w[block])
            for (uint32_t k = 1; k <= w[block]; ++k) clusters[w[block + k]] = (uint32_t)nv + block;
        for (size_t i = 0; i < nv; ++i) {
            uint32_t *row = vertex + 4 * i;
            row[0] = sp->offsets[i];
            row[1] = sp->offsets[i + 1];
            row[2] = (uint32_t)sp->bones[i];
            memcpy(&row[3], &sp->rest_bone_angle[i], sizeof row[3]);
        }
        memset(scalars, 0, g->role_words * sizeof(uint32_t));
        for (size_t i = 0; i < nv; ++i)
            scalars[i / SPRING_ROLES_PER_WORD] |= (uint32_t)sp->roles[i]
                                                  << (8u * (i % SPRING_ROLES_PER_WORD));
        for (int f = 0; f < SSK_FORCE_COUNT; ++f)
            if (sp->maps[f]) memcpy(scalars + g->map_offset[f], sp->maps[f], nv * sizeof(float));
        g->base_roles_on_device = true;
        const size_t pos_bytes = 3 * nv * sizeof(float);
        const GLuint zero_word = 0;
        struct {
            gl_spring_buffer b;
            size_t bytes;
            const void *data;
            GLenum usage;
        } const allocations[] = {
            {SB_VERTEX, 4 * nv * sizeof(uint32_t), vertex, GL_STATIC_DRAW},
            {SB_EDGES, (size_t)sp->edge_count * sizeof(ssk_spring_edge), sp->edges, GL_STATIC_DRAW},
            {SB_ANCHOR, 4 * nv * sizeof(float), NULL, GL_DYNAMIC_DRAW},
            {SB_SCALARS, scalar_words * sizeof(uint32_t), scalars, GL_DYNAMIC_DRAW},
            {SB_FRAME, 4 * (3 * nv + (sp->edit_target ? nv : 0)) * sizeof(float), NULL,
             GL_DYNAMIC_COPY},
            {SB_RECORDS, 8 * nv * sizeof(float), NULL, GL_DYNAMIC_COPY},
            {SB_FIRST, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_POS0 + 0, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_POS0 + 1, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_POS0 + 2, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_POS0 + 3, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_POS0 + 4, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_POS0 + 5, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_POS0 + 6, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_POS0 + 7, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_GOOD, pos_bytes, NULL, GL_DYNAMIC_COPY},
            {SB_VELOCITY, p->integrator == SSK_SPRING_SEMI_IMPLICIT ? pos_bytes : 0, NULL,
             GL_DYNAMIC_COPY},
            {SB_PREV, dependent ? pos_bytes : 0, NULL, GL_DYNAMIC_COPY},
            {SB_DIFF, dependent ? 16 * nb * sizeof(float) : 0, NULL, GL_DYNAMIC_DRAW},
            {SB_SCRATCH, 4 * nv * sizeof(float), NULL, GL_DYNAMIC_COPY},
            {SB_PARTIALS, GL_REDUCTION_MAX_GROUPS * sizeof(gl_spring_partial), NULL,
             GL_DYNAMIC_COPY},
            {SB_RESULT, SPRING_BATCH_MAX * sizeof(gl_spring_partial), NULL, GL_DYNAMIC_READ},
            {SB_FIRST_ROW, sizeof(GLuint), NULL, GL_DYNAMIC_READ},
            {SB_COUNTER, sizeof(GLuint), &zero_word, GL_DYNAMIC_COPY},
            {SB_WATCH, sizeof(gl_spring_watch) + watch_floats * sizeof(float), NULL,
             GL_DYNAMIC_COPY},
            {SB_WATCH_READ0, WATCH_READ_BYTES, NULL, GL_STREAM_READ},
            {SB_WATCH_READ1, WATCH_READ_BYTES, NULL, GL_STREAM_READ},
            {SB_CLUSTERS, ((size_t)nv + sp->cluster_word_count) * sizeof(uint32_t), clusters,
             GL_STATIC_DRAW},
        };
        for (size_t i = 0; st == SSK_OK && i < sizeof allocations / sizeof allocations[0]; ++i)
            st = allocate_named(s, &g->buffers[allocations[i].b],
                                spring_buffer_names[allocations[i].b], allocations[i].bytes,
                                allocations[i].data, allocations[i].usage, err);
        if (st == SSK_OK && sp->ml) st = spring_ml_upload(s, g, err);
        if (st == SSK_OK) st = spring_anchor_upload(s, g, err);
    }
    free(vertex);
    free(scalars);
    free(clusters);
    if (st != SSK_OK) {
        /* forget the entry (a later solve tries again from scratch) */
        glDeleteBuffers(SB_COUNT, g->buffers);
        free(g->roles_packed);
        free(g->watch_table);
        free(g->prev_skinning);
        free(g->diff);
        --s->spring_count;
        return st;
    }
    *out = g;
    return SSK_OK;
}

/* Shader writes visible to later dispatches and buffer copies/reads. */
static void spring_barrier(void)
{
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
}

static void copy_buffer(GLuint from, GLuint to, size_t bytes)
{
    glBindBuffer(GL_COPY_READ_BUFFER, from);
    glBindBuffer(GL_COPY_WRITE_BUFFER, to);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, (GLsizeiptr)bytes);
}

static void clear_buffer(GLuint buffer)
{
    const GLuint zero = 0;
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, buffer);
    glClearBufferData(GL_SHADER_STORAGE_BUFFER, GL_R32UI, GL_RED_INTEGER, GL_UNSIGNED_INT, &zero);
}

/* kernels_spring_in.comp: `mode` from `input` to `output` (per mesh for the
 * conversions, whole rig for CONTINUE with `matrices` = the differential
 * transforms). */
static void spring_in(gl_state *s, gl_spring *g, GLuint mode, GLuint input, GLuint output,
                      GLuint matrices)
{
    const ssk_rig *rig = s->rig;
    glUseProgram(s->programs[PROG_SPRING_IN]);
    bind(SPRING_IN_VERTEX, g->buffers[SB_VERTEX]);
    bind(SPRING_IN_INPUT, input);
    bind(SPRING_IN_OUTPUT, output);
    bind(SPRING_IN_MATRICES, matrices);
    bind(SPRING_IN_SCALARS, g->buffers[SB_SCALARS]);
    bind(SPRING_IN_FIRST, g->buffers[SB_FIRST]);
    bind(SPRING_IN_RESULT, g->buffers[SB_FIRST_ROW]);
    glUniform1ui(LOC_SPRING_IN_MODE, mode);
    glUniform1ui(LOC_SPRING_IN_MESH_COUNT, rig->mesh_count);
    if (mode == SPRING_IN_CONTINUE) {
        glUniform1ui(LOC_COUNT, rig->vertex_count);
        glUniform1ui(LOC_FIRST_VERTEX, 0);
        glUniform1ui(LOC_SPRING_IN_MESH, 0);
        glUniform1ui(LOC_SPRING_IN_FLAGS, 0);
        dispatch(s, PROG_SPRING_IN, rig->vertex_count);
    } else {
        for (uint32_t m = 0; m < rig->mesh_count; ++m) {
            const gl_mesh *mesh = &s->meshes[m];
            glUniform1ui(LOC_COUNT, mesh->vertex_count);
            glUniform1ui(LOC_FIRST_VERTEX, mesh->first_vertex);
            glUniform1ui(LOC_SPRING_IN_MESH, m);
            glUniform1ui(LOC_SPRING_IN_FLAGS,
                         s->pre_post && !s->frame->mesh_identity[m] ? FLAG_MESH_MATRICES : 0u);
            dispatch(s, PROG_SPRING_IN, mesh->vertex_count);
        }
    }
    spring_barrier();
}

/* The records of `positions` (kernels_spring_records.comp). */
static void spring_records(gl_state *s, gl_spring *g, GLuint positions)
{
    glUseProgram(s->programs[PROG_SPRING_RECORDS]);
    bind(SPRING_REC_ANCHOR, g->buffers[SB_ANCHOR]);
    bind(SPRING_REC_POSITIONS, positions);
    bind(SPRING_REC_RECORDS, g->buffers[SB_RECORDS]);
    glUniform1ui(LOC_COUNT, s->rig->vertex_count);
    glUniform1f(LOC_SPRING_EPS_LEN, g->sp->length_epsilon);
    dispatch(s, PROG_SPRING_RECORDS, s->rig->vertex_count);
    spring_barrier();
}

static GLuint ring_slot(const gl_spring *g, int64_t k);
static void spring_step_uniforms(gl_state *s, gl_spring *g);

/* The program of this solve's passes' force step: with the watch on the
 * device (kernels_spring_step_watch.comp), or plain
 * (kernels_spring_step.comp). */
static gl_program spring_step_program(const gl_spring *g)
{
    return g->watch_on ? PROG_SPRING_STEP_WATCH : PROG_SPRING_STEP;
}

/* The step's uniforms that hold for a whole solve, in the plain program
 * and, with the watch on the device, its passes' program. */
static void spring_step_setup(gl_state *s, gl_spring *g)
{
    glUseProgram(s->programs[PROG_SPRING_STEP]);
    spring_step_uniforms(s, g);
    const gl_program passes = spring_step_program(g);
    if (passes == PROG_SPRING_STEP) return;
    glUseProgram(s->programs[passes]);
    spring_step_uniforms(s, g);
    glUniform1ui(LOC_SPRING_WATCH, g->watch_on ? 1u : 0u);
    bind(SPRING_WATCH, g->buffers[SB_WATCH]);
}

/* The step's solve-wide uniforms, in the program in use. */
static void spring_step_uniforms(gl_state *s, gl_spring *g)
{
    const ssk_spring *sp = g->sp;
    glUniform1ui(LOC_COUNT, s->rig->vertex_count);
    glUniform1fv(LOC_SPRING_K, SSK_FORCE_COUNT, sp->params.stiffness);
    glUniform1f(LOC_SPRING_DT, sp->params.dt);
    glUniform1f(LOC_SPRING_KEEP, 1.0f - sp->params.damping);
    glUniform1f(LOC_SPRING_EPS_LEN, sp->length_epsilon);
    glUniform1f(LOC_SPRING_EPS_PAR, SSK_SPRING_PARALLEL_EPSILON);
    glUniform1ui(LOC_SPRING_EDIT_FIRST, 3 * sp->vertex_count);
    glUniform1ui(LOC_SPRING_DETAIL_FIRST, sp->vertex_count);
    glUniform1ui(LOC_SPRING_TWIST_FIRST, 2 * sp->vertex_count);
    glUniform1uiv(LOC_SPRING_MAP_OFFSET, SSK_FORCE_COUNT, g->map_offset);
}

/* A dispatch of a pass with the watch on the device: its group count from
 * the watch buffer (bound as the indirect buffer), `at` of its args. */
static void dispatch_watched(GLuint at)
{
    glDispatchComputeIndirect((GLintptr)(offsetof(gl_spring_watch, args) + at * sizeof(GLuint)));
}

/* One force pass from the records into `next` (write) or the energy only;
 * prev (a write with Chebyshev weight omega != 1): x_{k-1}, bound in the
 * velocities' place (the explicit integrator has none). */
static void spring_step(gl_state *s, gl_spring *g, GLuint next, bool write, GLuint prev,
                        float omega)
{
    const ssk_spring *sp = g->sp;
    GLuint flags = g->map_flags;
    if (write) flags |= SPRING_FLAG_WRITE;
    if (sp->params.integrator == SSK_SPRING_SEMI_IMPLICIT) flags |= SPRING_FLAG_SEMI;
    if (sp->edit_target) flags |= SPRING_FLAG_EDITS;
    if (write && prev) flags |= SPRING_FLAG_CHEBYSHEV; /* the watch: weight 1 skips it */
    if (sp->params.stiffness[SSK_FORCE_TWIST] > 0.0f) flags |= SPRING_FLAG_TWIST;
    if (write && g->step_out) flags |= SPRING_FLAG_STEP;
    const gl_program program = spring_step_program(g);
    const bool wide = program != PROG_SPRING_STEP;
    glUseProgram(s->programs[program]);
    bind(SPRING_STEP_VERTEX, g->buffers[SB_VERTEX]);
    bind(SPRING_STEP_EDGES, g->buffers[SB_EDGES]);
    bind(SPRING_STEP_RECORDS, g->buffers[SB_RECORDS]);
    bind(SPRING_STEP_FRAME, g->buffers[SB_FRAME]);
    bind(SPRING_STEP_SCALARS, g->buffers[SB_SCALARS]);
    bind(SPRING_STEP_NEXT, next);
    bind(SPRING_STEP_VELOCITY, (flags & SPRING_FLAG_CHEBYSHEV) ? prev : g->buffers[SB_VELOCITY]);
    bind(SPRING_STEP_SCRATCH, g->buffers[SB_SCRATCH]);
    glUniform1ui(LOC_SPRING_FLAGS, flags);
    glUniform1f(LOC_SPRING_OMEGA, omega);
    if (wide) {
        /* a SAVE_GOOD of the last pass copies x_(k-3) in this step */
        bind(SPRING_STEP_GOOD, g->buffers[SB_GOOD]);
        bind(SPRING_STEP_GOOD_FROM, ring_slot(g, (int64_t)g->pass - 3));
    }
    if (g->watch_on) {
        glUniform1ui(LOC_SPRING_PASS, g->pass);
        glUniform1ui(LOC_BASE, 0);
        dispatch_watched(WATCH_ARGS_STEP);
    } else {
        dispatch(s, PROG_SPRING_STEP, s->rig->vertex_count);
    }
    spring_barrier();
}

/* kernels_spring_detail.comp: the detail targets of the first stage
 * (DETAIL) or the short-edge clusters' step on `result` (CLUSTER). */
static void spring_detail(gl_state *s, gl_spring *g, GLuint mode, GLuint result)
{
    glUseProgram(s->programs[PROG_SPRING_DETAIL]);
    bind(SPRING_DET_VERTEX, g->buffers[SB_VERTEX]);
    bind(SPRING_DET_EDGES, g->buffers[SB_EDGES]);
    bind(SPRING_DET_FIRST, g->buffers[SB_FIRST]);
    bind(SPRING_DET_FRAME, g->buffers[SB_FRAME]);
    bind(SPRING_DET_SCALARS, g->buffers[SB_SCALARS]);
    bind(SPRING_DET_RESULT, result ? result : g->buffers[SB_SCRATCH]);
    bind(SPRING_DET_CLUSTERS, g->buffers[SB_CLUSTERS]);
    bind(SPRING_DET_ANCHOR, g->buffers[SB_ANCHOR]);
    glUniform1ui(LOC_COUNT, s->rig->vertex_count);
    glUniform1ui(LOC_SPRING_DET_MODE, mode);
    glUniform1ui(LOC_SPRING_DETAIL_FIRST, s->rig->vertex_count);
    glUniform1ui(LOC_SPRING_TWIST_FIRST, 2 * s->rig->vertex_count);
    dispatch(s, PROG_SPRING_DETAIL, s->rig->vertex_count);
    spring_barrier();
}

/* The reductions of the last step (kernels_spring_reduce.comp) into
 * result slot `slot` (< SPRING_BATCH_MAX), on the device. */
static void spring_reduce_issue(gl_state *s, gl_spring *g, uint32_t slot)
{
    const uint32_t nv = s->rig->vertex_count;
    const GLuint local = s->local_size[PROG_SPRING_REDUCE];
    /* a vertex per invocation on hardware GPUs (25 work groups of 16 each
     * left most of an H200 idle: 60-100 us a pass at 100k vertices) */
    const uint64_t per_group =
        (uint64_t)local * (s->ml_wide ? 1u : SPRING_REDUCE_ITEMS_PER_INVOCATION);
    uint64_t groups = ((uint64_t)nv + per_group - 1) / per_group;
    if (groups > GL_REDUCTION_MAX_GROUPS) groups = GL_REDUCTION_MAX_GROUPS;
    if (groups > s->max_groups) groups = s->max_groups;
    if (groups == 0) groups = 1;
    glUseProgram(s->programs[PROG_SPRING_REDUCE]);
    bind(SPRING_RED_SCRATCH, g->buffers[SB_SCRATCH]);
    bind(SPRING_RED_PARTIALS, g->buffers[SB_PARTIALS]);
    bind(SPRING_RED_RESULT, g->buffers[SB_RESULT]);
    glUniform1ui(LOC_BASE, 0);
    glUniform1ui(LOC_SPRING_RED_PASS, 0);
    glUniform1ui(LOC_COUNT, nv);
    glUniform1ui(LOC_STRIDE, (GLuint)(groups * local));
    glDispatchCompute((GLuint)groups, 1, 1);
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    glUniform1ui(LOC_SPRING_RED_PASS, 1);
    glUniform1ui(LOC_SPRING_RED_SLOT, slot);
    glUniform1ui(LOC_COUNT, (GLuint)groups);
    glUniform1ui(LOC_STRIDE, local);
    glDispatchCompute(1, 1, 1);
    /* the next pass's step rewrites the scratch and partials */
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
}

/* Reads back result slots 0 .. n - 1 (n <= SPRING_BATCH_MAX) into out. */
static ssk_status spring_reduce_read(gl_spring *g, uint32_t n, ssk_spring_pass *out,
                                     ssk_error *err)
{
    gl_spring_partial r[SPRING_BATCH_MAX];
    read_back(g->buffers[SB_RESULT], r, n * sizeof r[0]);
    ssk_status st = ssk_gl_check("spring reduction", err);
    if (st != SSK_OK) return st;
    for (uint32_t i = 0; i < n; ++i) {
        out[i].energy = r[i].energy;
        out[i].kinetic = r[i].kinetic;
        out[i].max_disp2 = r[i].max_disp2;
        out[i].max_force2 = r[i].max_force2;
        out[i].bad = r[i].bad != 0;
        out[i].max_step2 = 0.0f; /* the multigrid's: the host's (spring_passes_multigrid) */
    }
    return SSK_OK;
}

/* The coarse step's program: one invocation per bone level for software
 * renderers; on hardware GPUs 1024 invocations, with the local nodes in
 * shared memory where they fit. */
static gl_program spring_coarse_program(const gl_state *s, const ssk_spring_ml *ml)
{
    if (!s->ml_wide) return PROG_SPRING_ML_COARSE;
    if (s->ml_shared && ml->local_count <= SPRING_ML_COARSE_SHARED_NODES)
        return PROG_SPRING_ML_COARSE_SHARED;
    return PROG_SPRING_ML_COARSE_WIDE;
}

/* The multilevel correction's uniforms for a solve and the frame's node
 * bases (ssk_spring_ml_frame on the host: a few floats per node). */
static void spring_ml_setup(gl_state *s, gl_spring *g, const ssk_attach_bone *bones)
{
    const ssk_spring *sp = g->sp;
    ssk_spring_ml *ml = sp->ml;
    ssk_spring_ml_frame(ml, sp, bones);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[SB_ML_F]);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, (GLintptr)(g->ml_off[ML_OFF_FRAME] * sizeof(float)),
                    (GLsizeiptr)(9 * (size_t)ml->node_count * sizeof(float)), ml->node_frame);
    const gl_program per_row[] = {PROG_SPRING_ML, PROG_SPRING_ML_RESTRICT};
    for (size_t i = 0; i < (s->ml_wide ? 2u : 1u); ++i) {
        glUseProgram(s->programs[per_row[i]]);
        glUniform1f(LOC_SPRING_ML_DT, sp->params.dt);
        glUniform1f(LOC_SPRING_ML_KD, sp->params.stiffness[SSK_FORCE_DETAIL]);
        glUniform1ui(LOC_SPRING_ML_MAP,
                     sp->maps[SSK_FORCE_DETAIL] ? g->map_offset[SSK_FORCE_DETAIL] + 1u : 0u);
        glUniform1ui(LOC_SPRING_ML_MAX_LEVELS, SSK_SPRING_ML_MAX_LEVELS);
        glUniform1uiv(LOC_SPRING_ML_OFF, ML_OFF_COUNT, g->ml_off);
    }
    if (s->ml_fused) {
        /* only its active uniforms (row_q is not used there) */
        glUseProgram(s->programs[PROG_SPRING_ML_PROLONG]);
        glUniform1ui(LOC_COUNT, sp->vertex_count);
        glUniform1ui(LOC_SPRING_ML_MAX_LEVELS, SSK_SPRING_ML_MAX_LEVELS);
        glUniform1uiv(LOC_SPRING_ML_OFF, ML_OFF_COUNT, g->ml_off);
        glUniform1f(LOC_SPRING_MLP_EPS_LEN, sp->length_epsilon);
    }
    if (s->ml_fused) {
        glUseProgram(s->programs[PROG_SPRING_ML_PROLONG]);
        glUniform1ui(LOC_SPRING_WATCH, g->watch_on ? 1u : 0u);
    }
    if (s->ml_wide) {
        glUseProgram(s->programs[PROG_SPRING_ML_RESTRICT]);
        glUniform1ui(LOC_SPRING_ML_PROBE, s->ml_probe);
        glUniform1ui(LOC_SPRING_WATCH, g->watch_on ? 1u : 0u);
    }
    const gl_program coarse = spring_coarse_program(s, ml);
    glUseProgram(s->programs[coarse]);
    glUniform1ui(LOC_SPRING_ML_PROBE, s->ml_probe);
    if (s->ml_wide) glUniform1ui(LOC_SPRING_WATCH, g->watch_on ? 1u : 0u);
    {
        /* where the coarse step finds the slabs' sums (slab_sum of
         * kernels_spring_ml_coarse_lib.glsl): the chunks' sums of the wide
         * restriction, with each local node's chunks at [1] */
        const GLuint sums[2] = {s->ml_wide ? 1u : 0u, s->ml_wide ? g->ml_chunk_off : 0u};
        glUniform1uiv(LOC_SPRING_ML_SUMS, 2, sums);
    }
    glUniform1ui(LOC_COUNT, ml->local_count);
    glUniform1ui(LOC_SPRING_ML_NODES, ml->node_count);
    glUniform1f(LOC_SPRING_ML_TRUST, SSK_SPRING_ML_TRUST);
    glUniform1ui(LOC_SPRING_ML_MAX_LEVELS, SSK_SPRING_ML_MAX_LEVELS);
    glUniform1uiv(LOC_SPRING_ML_OFF, ML_OFF_COUNT, g->ml_off);
}

/* Phases of a spring solve for SSK_GL_PROFILE (gl_profile.h). */
enum {
    SPRING_PROF_START, SPRING_PROF_ANCHORS, SPRING_PROF_FIRST, SPRING_PROF_SETUP,
    SPRING_PROF_RECORDS, SPRING_PROF_STEP, SPRING_PROF_RESTRICT, SPRING_PROF_COARSE,
    SPRING_PROF_PROLONG, SPRING_PROF_REDUCE, SPRING_PROF_READBACK, SPRING_PROF_FINISH,
    SPRING_PROF_COUNT
};
static const char *const spring_prof_names[SPRING_PROF_COUNT] = {
    "start", "anchors", "first-stage", "setup", "records", "step", "ml-restrict",
    "ml-coarse", "ml-prolong", "reduce", "readback", "finish"};

/* The multilevel correction of the pass that wrote `next` (blended with
 * x_{k-1} = prev at weight omega; the coarse steps scaled by theta x
 * scale, the solve's ml->scale when the pass was issued): restriction per slab (an invocation
 * each), the coarse step
 * in one work group, prolongation per vertex (kernels_spring_multilevel.comp);
 * the step's scratch then holds the corrected moves. With s->ml_fused the
 * prolongation also reduces the pass into result slot `slot` and writes
 * the records of `next`: returns true then. */
static bool spring_ml_correct(gl_state *s, gl_spring *g, GLuint next, GLuint prev, float omega,
                              float scale, uint32_t slot, ssk_gl_profile *prof)
{
    const ssk_spring_ml *ml = g->sp->ml;
    glUseProgram(s->programs[PROG_SPRING_ML]);
    bind(SPRING_ML_VERTEX, g->buffers[SB_VERTEX]);
    bind(SPRING_ML_U, g->buffers[SB_ML_U]);
    bind(SPRING_ML_F, g->buffers[SB_ML_F]);
    bind(SPRING_ML_W, g->buffers[SB_ML_W]);
    bind(SPRING_ML_SCALARS, g->buffers[SB_SCALARS]);
    bind(SPRING_ML_NEXT, next);
    bind(SPRING_ML_RECORDS, g->buffers[SB_RECORDS]);
    /* with the watch on the device the weight is read there: x_(k-1) bound */
    bind(SPRING_ML_AUX, omega != 1.0f || g->watch_on ? prev : next);
    glUniform1f(LOC_SPRING_ML_OMEGA, omega); /* RESTRICT and PROLONG */
    if (g->watch_on) {
        glUseProgram(s->programs[PROG_SPRING_ML_RESTRICT]);
        glUniform1ui(LOC_COUNT, g->ml_chunks);
        glUniform1ui(LOC_BASE, 0);
        dispatch_watched(WATCH_ARGS_RESTRICT);
    } else if (s->ml_wide) {
        /* a work group per chunk (kernels_spring_ml_restrict.comp) */
        const uint32_t chunks = g->ml_chunks;
        glUseProgram(s->programs[PROG_SPRING_ML_RESTRICT]);
        glUniform1f(LOC_SPRING_ML_OMEGA, omega);
        glUniform1ui(LOC_COUNT, chunks);
        for (uint32_t base = 0; base < chunks; base += s->max_groups) {
            const uint32_t groups = chunks - base < s->max_groups ? chunks - base : s->max_groups;
            glUniform1ui(LOC_BASE, base);
            glDispatchCompute(groups, 1, 1);
        }
    } else {
        glUniform1ui(LOC_COUNT, ml->local_count);
        glUniform1ui(LOC_SPRING_ML_MODE, SPRING_ML_RESTRICT);
        dispatch(s, PROG_SPRING_ML, ml->local_count);
    }
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    ssk_gl_profile_mark(prof, SPRING_PROF_RESTRICT);
    glUseProgram(s->programs[spring_coarse_program(s, ml)]);
    glUniform1f(LOC_SPRING_ML_THETA, ml->theta * scale);
    if (g->watch_on)
        dispatch_watched(WATCH_ARGS_COARSE);
    else
        glDispatchCompute(1, 1, 1);
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    ssk_gl_profile_mark(prof, SPRING_PROF_COARSE);
    bind(SPRING_ML_AUX, g->buffers[SB_SCRATCH]);
    if (s->ml_fused) {
        /* prolongation, reductions into result slot `slot` and the next
         * pass's records in one dispatch (kernels_spring_ml_prolong.comp) */
        const uint32_t nv = g->sp->vertex_count;
        const GLuint local = s->local_size[PROG_SPRING_ML_PROLONG];
        uint64_t groups = ((uint64_t)nv + local - 1) / local;
        if (groups > GL_REDUCTION_MAX_GROUPS) groups = GL_REDUCTION_MAX_GROUPS;
        if (groups > s->max_groups) groups = s->max_groups;
        if (groups == 0) groups = 1;
        glUseProgram(s->programs[PROG_SPRING_ML_PROLONG]);
        bind(SPRING_MLP_ANCHOR, g->buffers[SB_ANCHOR]);
        bind(SPRING_MLP_PARTIALS, g->buffers[SB_PARTIALS]);
        bind(SPRING_MLP_RESULT, g->buffers[SB_RESULT]);
        bind(SPRING_MLP_COUNTER, g->buffers[SB_COUNTER]);
        glUniform1f(LOC_SPRING_ML_OMEGA, omega);
        glUniform1ui(LOC_STRIDE, (GLuint)(groups * local));
        glUniform1ui(LOC_SPRING_MLP_SLOT, slot);
        if (g->watch_on) {
            glUniform1ui(LOC_SPRING_PASS, g->pass);
            dispatch_watched(WATCH_ARGS_PROLONG);
            /* its last group may have zeroed the next passes' group counts */
            glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT |
                            GL_COMMAND_BARRIER_BIT);
        } else {
            glDispatchCompute((GLuint)groups, 1, 1);
            spring_barrier();
        }
        ssk_gl_profile_mark(prof, SPRING_PROF_PROLONG);
        return true;
    }
    glUseProgram(s->programs[PROG_SPRING_ML]);
    glUniform1ui(LOC_SPRING_ML_MODE, SPRING_ML_PROLONG);
    glUniform1ui(LOC_COUNT, g->sp->vertex_count);
    dispatch(s, PROG_SPRING_ML, g->sp->vertex_count);
    spring_barrier();
    ssk_gl_profile_mark(prof, SPRING_PROF_PROLONG);
    return false;
}

/* --- Batches -------------------------------------------------------------
 * Pass k of a solve writes x_k into ring slot k mod SPRING_RING from
 * x_{k-1} and x_{k-2} (x_0 = the starting iterate, which every slot holds
 * at first, as x_{-1} too). The host issues a batch of up to
 * s->spring_batch passes, each with the Chebyshev weight and coarse-step
 * scale that the watch gives it when no pass of the batch changes them,
 * and each pass's reductions into its result slot; then reads the slots
 * back at once and replays the watch (ssk_spring_watch_*,
 * ssk_spring_ml_watch) pass by pass as the one-pass loop calls it. Its
 * actions are taken then: SAVE_GOOD copies x_{k-2}, still in the ring (a
 * batch writes at most SPRING_RING - 2 slots, so the two iterates before
 * it and its own survive it); DONE ends the solve, the passes issued after
 * it lost work whose iterates are never read; and when the replay gives a
 * pass another weight or scale than it ran with (an accelerated run
 * restarted, coarse steps halved), the batch ends before it and the next
 * batch issues it again with the replay's values (its x_{k-1} and x_{k-2}
 * are still in the ring). So every pass a solve keeps ran on the one-pass
 * loop's inputs, and the iterates, the stopping pass and the pick are the
 * same bit for bit. The semi-implicit integrator updates its velocities in
 * place, which a lost pass would spoil, and the energy scheme's stop
 * cannot be foreseen: both take batches of one pass.
 *
 * A batch's size: the passes that the last two residuals (the scheme's
 * measure) predict to the threshold if they keep decreasing geometrically,
 * rounded up, at least one and at most s->spring_batch; two for the
 * first batch (which gives the first two residuals), one while the
 * residuals do not decrease. */
static GLuint ring_slot(const gl_spring *g, int64_t k)
{
    const int64_t r = (int64_t)SPRING_RING;
    return g->buffers[SB_POS0 + (int)(((k % r) + r) % r)];
}

typedef struct spring_batch_run {
    ssk_spring_watch w;
    int64_t current;   /* the iterate that PICK_CURRENT names */
    uint32_t batches;  /* read-backs */
    uint32_t passes;   /* passes issued, lost ones included */
} spring_batch_run;

/* The scheme's measure of a pass (the watch's residual). */
static float spring_measure(const ssk_spring *sp, const ssk_spring_pass *r)
{
    return sqrtf(sp->params.convergence == SSK_CONVERGE_FORCE ? r->max_force2 : r->max_disp2);
}

static uint32_t spring_batch_size(const gl_state *s, const ssk_spring *sp, bool semi, uint32_t k,
                                  float last, float before)
{
    const ssk_spring_params *p = &sp->params;
    uint32_t n = s->spring_batch;
    if (semi || p->convergence == SSK_CONVERGE_ENERGY) {
        n = 1;
    } else if (p->convergence != SSK_CONVERGE_ITERATIONS) {
        if (k == 1) {
            if (n > 2) n = 2;
        } else if (!(before > 0.0f) || !(last < before) || !(last > sp->threshold)) {
            n = 1;
        } else {
            const double want = ceil(log((double)sp->threshold / last) / log((double)last / before));
            if (want < (double)n) n = want < 1.0 ? 1u : (uint32_t)want;
        }
    }
    const uint32_t left = p->max_iterations - k + 1u;
    return n < left ? n : left;
}

/* The first stage's check (kernels_spring_in.comp TO_RIG), read back:
 * SSK_ERROR_NONFINITE naming the smallest row that is not finite. A solve
 * reads it with its first batch, whose passes are then dropped. */
static ssk_status spring_first_check(gl_spring *g, ssk_error *err)
{
    GLuint bad_row = 0;
    read_back(g->buffers[SB_FIRST_ROW], &bad_row, sizeof bad_row);
    ssk_status st = ssk_gl_check("spring first stage", err);
    if (st != SSK_OK) return st;
    if (bad_row != SPRING_ALL_FINITE)
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "spring solve: first-stage position of vertex %u is not finite",
                             bad_row);
    return SSK_OK;
}

/* The passes of a solve (see "Batches"): b->w the watch after them
 * (ssk_spring_watch_end called). */
static ssk_status spring_passes(gl_state *s, gl_spring *g, bool semi, spring_batch_run *b,
                                ssk_gl_profile *prof, ssk_error *err)
{
    ssk_spring *sp = g->sp;
    const ssk_spring_params *p = &sp->params;
    ssk_spring_ml *ml = sp->ml;
    const size_t bytes = 3 * (size_t)sp->vertex_count * sizeof(float);
    ssk_spring_ml_moves ml_moves;
    if (ml) ssk_spring_ml_watch_begin(ml, &ml_moves);
    float last = 0.0f, before = 0.0f;
    int64_t records_of = INT64_MIN; /* the iterate SB_RECORDS holds the records of */
    memset(b, 0, sizeof *b);
    ssk_spring_watch *w = &b->w;
    ssk_spring_watch_begin(w);
    uint32_t k = 1;
    float omega_k = p->max_iterations >= 1 ? ssk_spring_watch_omega(w, sp, 1) : 1.0f;
    bool done = false;
    while (!done && k <= p->max_iterations) {
        const uint32_t n = spring_batch_size(s, sp, semi, k, last, before);
        float omega[SPRING_BATCH_MAX], scale[SPRING_BATCH_MAX];
        ssk_spring_watch ahead = *w;
        for (uint32_t i = 0; i < n; ++i) {
            const int64_t j = (int64_t)k + i;
            omega[i] = i == 0 ? omega_k : ssk_spring_watch_omega(&ahead, sp, (uint32_t)j);
            scale[i] = ml ? ml->scale : 1.0f;
            const GLuint prev = ring_slot(g, j - 2), next = ring_slot(g, j);
            if (records_of != j - 1) spring_records(s, g, ring_slot(g, j - 1));
            ssk_gl_profile_mark(prof, SPRING_PROF_RECORDS);
            spring_step(s, g, next, true, omega[i] != 1.0f ? prev : 0, omega[i]);
            ssk_gl_profile_mark(prof, SPRING_PROF_STEP);
            const bool fused = ml && spring_ml_correct(s, g, next, prev, omega[i], scale[i], i, prof);
            if (!fused) spring_reduce_issue(s, g, i);
            records_of = fused ? j : j - 1;
            ssk_gl_profile_mark(prof, SPRING_PROF_REDUCE);
        }
        b->passes += n;
        b->batches++;
        ssk_spring_pass r[SPRING_BATCH_MAX];
        ssk_status st = spring_reduce_read(g, n, r, err);
        ssk_gl_profile_mark(prof, SPRING_PROF_READBACK);
        if (st == SSK_OK && b->batches == 1) st = spring_first_check(g, err);
        if (st != SSK_OK) return st;
        uint32_t i = 0;
        for (; i < n; ++i) {
            const uint32_t j = k + i;
            if (i > 0) {
                const float om = ssk_spring_watch_omega(w, sp, j);
                if (om != omega[i] || (ml && ml->scale != scale[i])) {
                    omega_k = om; /* pass j again, with the replay's values */
                    break;
                }
            }
            if (ml) ssk_spring_ml_watch(ml, r[i].max_disp2, &ml_moves);
            const unsigned act = ssk_spring_watch_pass(w, sp, j, &r[i]);
            if (act & SSK_SPRING_SAVE_GOOD)
                copy_buffer(ring_slot(g, (int64_t)j - 2), g->buffers[SB_GOOD], bytes);
            if ((act & SSK_SPRING_ZERO_VELOCITY) && semi) clear_buffer(g->buffers[SB_VELOCITY]);
            before = last;
            last = spring_measure(sp, &r[i]);
            if (act & SSK_SPRING_DONE) {
                done = true;
                b->current = (int64_t)j - 1;
                break;
            }
        }
        if (done) break;
        k += i;
        if (i == n && k <= p->max_iterations) omega_k = ssk_spring_watch_omega(w, sp, k);
    }
    if (b->batches == 0) {
        const ssk_status st = spring_first_check(g, err);
        if (st != SSK_OK) return st;
    }
    if (!done) b->current = p->max_iterations; /* x_max, CURRENT after the last rotation */
    ssk_spring_watch_end(w, sp);
    return SSK_OK;
}

/* --- The multigrid ---------------------------------------------------------
 * The surface multigrid solver (core/kernels/spring_multigrid.c) on GL:
 * each pass's force pass runs on the device (the one-ring sums, the bulk of
 * a pass) and writes its step g itself (SPRING_FLAG_STEP); the host reads
 * g back and runs the rest of the pass with the CPU solver's own code
 * (ssk_spring_mg_pass_finish: the coarse correction, the Anderson fit, the
 * move), then uploads x_k into the ring. The force pass is the CPU's bit
 * for bit on an IEEE device (kernels_spring_step.comp) and the rest is the
 * same code, so the passes, the stopping pass and the iterates are the
 * CPU's (test_backends compares them). Every pass reads back and uploads
 * #V by 3 floats and waits for the device: one pass a batch, the host's
 * watch. The coarse levels on the device are an open item (issue #36). */
static ssk_status spring_passes_multigrid(gl_state *s, gl_spring *g, const uint8_t *roles,
                                         spring_batch_run *b, ssk_gl_profile *prof,
                                         ssk_error *err)
{
    ssk_spring *sp = g->sp;
    const ssk_spring_params *p = &sp->params;
    const size_t bytes = 3 * (size_t)sp->vertex_count * sizeof(float);
    memset(b, 0, sizeof *b);
    ssk_spring_watch *w = &b->w;
    ssk_spring_watch_begin(w);
    ssk_spring_mg_solve_begin(sp->mg);
    /* the host's copies of x_{k-2}, x_{k-1}, x_k: the CPU solver's buffers
     * (x_0 also as x_{-1}, as in ssk_spring_solve) */
    float *px = sp->pos[0], *cx = sp->pos[1], *nx = sp->pos[2];
    read_back(ring_slot(g, 0), cx, bytes);
    memcpy(px, cx, bytes);
    memcpy(nx, cx, bytes);
    ssk_status st = ssk_gl_check("spring multigrid start", err);
    if (st != SSK_OK) return st;
    bool done = false;
    g->step_out = true;
    for (uint32_t k = 1; k <= p->max_iterations && !done; ++k) {
        const float omega = ssk_spring_watch_omega(w, sp, k);
        spring_records(s, g, ring_slot(g, (int64_t)k - 1));
        ssk_gl_profile_mark(prof, SPRING_PROF_RECORDS);
        spring_step(s, g, ring_slot(g, k), true, 0, 1.0f);
        ssk_gl_profile_mark(prof, SPRING_PROF_STEP);
        spring_reduce_issue(s, g, 0);
        ssk_spring_pass r;
        st = spring_reduce_read(g, 1, &r, err);
        if (st == SSK_OK && k == 1) st = spring_first_check(g, err);
        if (st != SSK_OK) break;
        read_back(ring_slot(g, k), sp->mg->b[0], bytes);
        ssk_gl_profile_mark(prof, SPRING_PROF_READBACK);
        const int bad_step = r.bad;
        r = ssk_spring_mg_pass_finish(sp, nx, cx, px, omega, roles, r);
        r.bad |= bad_step;
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, ring_slot(g, k));
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)bytes, nx);
        ssk_gl_profile_mark(prof, SPRING_PROF_COARSE);
        b->passes++;
        b->batches++;
        const unsigned act = ssk_spring_watch_pass(w, sp, k, &r);
        if (act & SSK_SPRING_SAVE_GOOD)
            copy_buffer(ring_slot(g, (int64_t)k - 2), g->buffers[SB_GOOD], bytes);
        if (act & SSK_SPRING_DONE) {
            done = true;
            b->current = (int64_t)k - 1;
            break;
        }
        float *old = px;
        px = cx;
        cx = nx;
        nx = old;
    }
    g->step_out = false;
    if (st != SSK_OK) return st;
    if (b->batches == 0) {
        st = spring_first_check(g, err);
        if (st != SSK_OK) return st;
    }
    if (!done) b->current = p->max_iterations;
    ssk_spring_watch_end(w, sp);
    return SSK_OK;
}

/* --- The watch on the device ---------------------------------------------
 * On hardware GPUs (the fused multilevel pass) a solve reads nothing back
 * until its frame is done: the watch's decisions after each pass
 * (ssk_spring_watch_pass, ssk_spring_watch_omega, ssk_spring_ml_watch) are
 * taken on the device by the pass's last work group
 * (kernels_spring_watch_lib.glsl), into the watch buffer (SB_WATCH), which
 * the next pass's kernels read their Chebyshev weight and coarse-step scale
 * from. A pass that stops the solve zeroes the group counts of the
 * indirect dispatches of all passes, so the passes issued after it do
 * nothing. The host issues chunks of passes, each ending in a copy of the
 * watch's header (and the first stage's check) and a fence, and keeps two
 * chunks in flight: while the GPU runs one, the host waits for and reads
 * the one before, which tells it how many passes to issue next (the batch
 * size rule of spring_batch_size from the residuals it read, at least
 * WATCH_CHUNK_MIN). So the GPU never waits for the host during a solve;
 * the passes issued after the stop cost only their empty dispatches.
 *
 * The weights come from the host's own recurrence (a table per solve) and
 * the rest is the host's code in GLSL with the same roundings, so the
 * passes, the stopping pass and the result are those of the host's watch
 * bit for bit (test_spring_watch_on_device compares them). The
 * semi-implicit integrator and the energy scheme keep the host's watch
 * (batches of one pass), as do the unfused and narrow programs. */
static bool spring_watch_on_device(const gl_state *s, const gl_spring *g, bool semi)
{
    const ssk_spring *sp = g->sp;
    if (!s->spring_watch || !s->ml_fused || !sp->ml || semi ||
        sp->params.convergence == SSK_CONVERGE_ENERGY ||
        sp->params.convergence == SSK_CONVERGE_RELATIVE)
        return false;
    const uint64_t local = s->local_size[PROG_SPRING_STEP];
    const uint64_t groups = ((uint64_t)sp->vertex_count + local - 1) / local;
    return groups <= s->max_groups && g->ml_chunks <= s->max_groups;
}

/* The header and the table of a solve's watch on the device. */
static void spring_watch_upload(const gl_state *s, gl_spring *g)
{
    const ssk_spring *sp = g->sp;
    const ssk_spring_params *p = &sp->params;
    const uint32_t nv = sp->vertex_count;
    float *tab = g->watch_table;
    const size_t entries = (size_t)p->max_iterations + 2;
    /* the weights of the j-th pass of the first run (entry j) and after a
     * restart (entry entries + j): the host's recurrence from a fresh
     * watch, and from one restarted at pass 1 (a restart leaves the watch
     * as fresh, shifted, but its warm-up may differ:
     * ssk_spring_watch_omega) */
    for (int run = 0; run < 2; ++run) {
        ssk_spring_watch w;
        ssk_spring_watch_begin(&w);
        w.accel_start = (uint32_t)run;
        float *t = tab + 2 * entries * (size_t)run;
        t[0] = 1.0f;
        t[1] = 0.0f;
        for (size_t j = 1; j < entries; ++j) {
            t[2 * j] = ssk_spring_watch_omega(&w, sp, (uint32_t)(j + (size_t)run));
            t[2 * j + 1] = w.omega != 1.0 ? 1.0f : 0.0f;
        }
    }
    gl_spring_watch h;
    memset(&h, 0, sizeof h);
    h.good_energy = INFINITY;
    h.omega = tab[2];
    h.accelerated = tab[3] != 0.0f;
    h.scale = 1.0f;
    h.ml_last = h.ml_best = INFINITY;
    h.threshold = sp->threshold;
    h.convergence = p->convergence == SSK_CONVERGE_FORCE          ? WATCH_FORCE
                    : p->convergence == SSK_CONVERGE_DISPLACEMENT ? WATCH_DISPLACEMENT
                                                                  : WATCH_ITERATIONS;
    h.theta = sp->ml->theta;
    h.divergence_window = SSK_SPRING_DIVERGENCE_WINDOW;
    h.ml_growth_window = SSK_SPRING_ML_GROWTH_WINDOW;
    h.ml_stall_window = SSK_SPRING_ML_STALL_WINDOW;
    h.ml_jump2 = SSK_SPRING_ML_JUMP * SSK_SPRING_ML_JUMP;
    h.growth_tolerance = SSK_SPRING_GROWTH_TOLERANCE;
    h.restart_table = (uint32_t)entries;
    const uint64_t step_local = s->local_size[PROG_SPRING_STEP];
    const uint64_t prolong_local = s->local_size[PROG_SPRING_ML_PROLONG];
    uint64_t prolong = ((uint64_t)nv + prolong_local - 1) / prolong_local;
    if (prolong > GL_REDUCTION_MAX_GROUPS) prolong = GL_REDUCTION_MAX_GROUPS;
    if (prolong > s->max_groups) prolong = s->max_groups;
    if (prolong == 0) prolong = 1;
    const uint32_t groups[4] = {(uint32_t)(((uint64_t)nv + step_local - 1) / step_local),
                                g->ml_chunks, 1u, (uint32_t)prolong};
    for (int d = 0; d < 4; ++d) {
        h.args[3 * d] = groups[d];
        h.args[3 * d + 1] = h.args[3 * d + 2] = 1u;
    }
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[SB_WATCH]);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, sizeof h, &h);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, sizeof h, (GLsizeiptr)(4 * entries * sizeof(float)),
                    tab);
}

/* A chunk of passes in flight: its last pass, the fence after its copy. */
typedef struct watch_chunk {
    uint32_t last;
    GLsync fence;
    GLuint read;
} watch_chunk;

/* Waits for a chunk's fence and reads its copy of the header. The wait
 * blocks (polling with timeout 0 measured no faster on an H200, and it
 * keeps a core busy). */
static ssk_status watch_chunk_read(watch_chunk *c, gl_spring_watch *h, GLuint *first_row,
                                   ssk_error *err)
{
    GLenum r = glClientWaitSync(c->fence, GL_SYNC_FLUSH_COMMANDS_BIT, WATCH_WAIT_NS);
    while (r == GL_TIMEOUT_EXPIRED) r = glClientWaitSync(c->fence, 0, WATCH_WAIT_NS);
    glDeleteSync(c->fence);
    c->fence = 0;
    if (r == GL_WAIT_FAILED)
        return ssk_error_set(err, SSK_ERROR_GL, "spring solve: waiting for the GPU failed");
    unsigned char bytes[WATCH_READ_BYTES];
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, c->read);
    glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)sizeof bytes, bytes);
    memcpy(h, bytes, sizeof *h);
    memcpy(first_row, bytes + sizeof *h, sizeof *first_row);
    return ssk_gl_check("spring watch", err);
}

/* The passes of a solve with the watch on the device: b->w as after
 * spring_passes (ssk_spring_watch_end called). */
static ssk_status spring_passes_device(gl_state *s, gl_spring *g, spring_batch_run *b,
                                       ssk_gl_profile *prof, ssk_error *err)
{
    ssk_spring *sp = g->sp;
    const ssk_spring_params *p = &sp->params;
    const size_t bytes = 3 * (size_t)sp->vertex_count * sizeof(float);
    memset(b, 0, sizeof *b);
    spring_watch_upload(s, g);
    glBindBuffer(GL_DISPATCH_INDIRECT_BUFFER, g->buffers[SB_WATCH]);
    spring_records(s, g, ring_slot(g, 0));
    watch_chunk q[2] = {{0}};
    int queued = 0, head = 0, reads = 0;
    uint32_t issued = 0, known = 0;
    float last = 0.0f, before = 0.0f;
    gl_spring_watch h;
    memset(&h, 0, sizeof h);
    ssk_status st = SSK_OK;
    for (;;) {
        while (queued < 2 && issued < p->max_iterations) {
            /* the passes that the residuals read predict from pass known +
             * 1 (spring_batch_size), less those already issued; but at
             * least WATCH_CHUNK_MIN, so that the GPU always has passes
             * queued while the host reads (passes after the stop cost
             * their empty dispatches, a few us each; a drained queue cost
             * the host's whole round trip) */
            uint32_t n = WATCH_CHUNK_MIN;
            if (known > 0) {
                const uint32_t want = spring_batch_size(s, sp, false, known + 1, last, before);
                if (want > issued - known + n) n = want - (issued - known);
            }
            if (n > s->spring_batch) n = s->spring_batch;
            if (n > p->max_iterations - issued) n = p->max_iterations - issued;
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t j = ++issued;
                g->pass = j;
                spring_step(s, g, ring_slot(g, j), true, ring_slot(g, (int64_t)j - 2), 1.0f);
                ssk_gl_profile_mark(prof, SPRING_PROF_STEP);
                spring_ml_correct(s, g, ring_slot(g, j), ring_slot(g, (int64_t)j - 2), 1.0f, 1.0f,
                                  0, prof);
                ssk_gl_profile_mark(prof, SPRING_PROF_REDUCE);
            }
            watch_chunk *c = &q[(head + queued) % 2];
            c->last = issued;
            c->read = g->buffers[SB_WATCH_READ0 + (reads + queued) % 2];
            glBindBuffer(GL_COPY_READ_BUFFER, g->buffers[SB_WATCH]);
            glBindBuffer(GL_COPY_WRITE_BUFFER, c->read);
            glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0,
                                sizeof(gl_spring_watch));
            glBindBuffer(GL_COPY_READ_BUFFER, g->buffers[SB_FIRST_ROW]);
            glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0,
                                sizeof(gl_spring_watch), sizeof(GLuint));
            c->fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
            glFlush();
            ++queued;
        }
        if (queued == 0) break; /* max_iterations passes issued and read */
        GLuint first_row = SPRING_ALL_FINITE;
        watch_chunk *c = &q[head];
        st = watch_chunk_read(c, &h, &first_row, err);
        head = (head + 1) % 2;
        --queued;
        ++reads;
        ++b->batches;
        ssk_gl_profile_mark(prof, SPRING_PROF_READBACK);
        if (st == SSK_OK && reads == 1 && first_row != SPRING_ALL_FINITE)
            st = ssk_error_set(err, SSK_ERROR_NONFINITE,
                               "spring solve: first-stage position of vertex %u is not finite",
                               first_row);
        if (st != SSK_OK || h.done) break;
        known = c->last;
        last = h.residual;
        before = h.residual_before;
    }
    for (int i = 0; i < 2; ++i)
        if (q[i].fence) glDeleteSync(q[i].fence);
    g->pass = 0;
    if (st == SSK_OK && reads == 0) st = spring_first_check(g, err); /* no pass ran */
    if (st != SSK_OK) return st;
    b->passes = issued;
    if (h.done && h.save_pass == h.iterations && h.save_pass >= 2)
        /* the SAVE_GOOD of the stopping pass: x_(k-2) is still in the ring
         * (the last chunk's copy came after a buffer-update barrier) */
        copy_buffer(ring_slot(g, (int64_t)h.iterations - 2), g->buffers[SB_GOOD], bytes);
    ssk_spring_watch *w = &b->w;
    ssk_spring_watch_begin(w);
    if (h.done) {
        w->iterations = h.iterations;
        w->result = (ssk_spring_pick)h.result;
        w->result_energy = h.result_energy;
        w->energy_known = (int)h.energy_known;
        w->converged = (int)h.converged;
        w->diverged = (int)h.diverged;
        w->why = h.why == WATCH_WHY_NONFINITE ? SSK_SPRING_WHY_NONFINITE
                 : h.why == WATCH_WHY_GREW    ? SSK_SPRING_WHY_GREW
                                              : NULL;
        b->current = (int64_t)h.iterations - 1;
    } else {
        b->current = p->max_iterations; /* x_max, CURRENT after the last rotation */
    }
    w->residual = h.residual;
    ssk_spring_watch_end(w, sp);
    return SSK_OK;
}

/* The spring node: ssk_spring_solve on the device (see above), input and
 * output in object space as the CPU backend's. */
static ssk_status run_spring(gl_state *s, const ssk_kernel_call *call, GLuint input,
                             GLuint output, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    ssk_spring *sp = call->spring;
    const size_t nv = rig->vertex_count, nb = rig->bone_count;
    if (!sp || !input || (!call->attach_bones && nb > 0))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "GL spring kernel: no spring, input or bones");
    if (call->report) memset(call->report, 0, sizeof *call->report);
    /* the programs this state's solves can run (those of the hardware
     * GPUs' variants bind more storage blocks than GL guarantees) */
    const struct {
        gl_program p;
        bool used;
    } programs[] = {
        {PROG_SPRING_IN, true},
        {PROG_SPRING_RECORDS, true},
        {PROG_SPRING_STEP, true},
        {PROG_SPRING_REDUCE, true},
        {PROG_SPRING_DETAIL, true},
        {PROG_SPRING_ANCHORS, true},
        {PROG_SPRING_ML, true},
        {PROG_SPRING_ML_COARSE, !s->ml_wide},
        {PROG_SPRING_ML_RESTRICT, s->ml_wide},
        {PROG_SPRING_ML_COARSE_WIDE, s->ml_wide},
        {PROG_SPRING_ML_COARSE_SHARED, s->ml_wide && s->ml_shared},
        {PROG_SPRING_ML_PROLONG, s->ml_fused},
        {PROG_SPRING_STEP_WATCH, s->spring_watch},
    };
    for (size_t i = 0; i < sizeof programs / sizeof programs[0]; ++i) {
        if (!programs[i].used) continue;
        ssk_status st = program(s, programs[i].p, err);
        if (st != SSK_OK) return st;
    }
    gl_spring *g = NULL;
    ssk_status st = spring_entry(s, sp, &g, err);
    if (st != SSK_OK) return st;
    g->energy_report = NULL;
    const ssk_spring_params *p = &sp->params;
    const bool semi = p->integrator == SSK_SPRING_SEMI_IMPLICIT;
    const size_t bytes = 3 * nv * sizeof(float);
    ssk_gl_profile prof;
    ssk_gl_profile_begin(&prof, spring_prof_names, SPRING_PROF_COUNT);

    /* The frame: anchors and their bone directions on the device, edit
     * targets and roles on the host (ssk_spring_prepare_edits: the CPU
     * solver's own set-up). */
    if (nb > 0) spring_anchors(s, g, call->attach_bones);
    const uint8_t *roles = ssk_spring_prepare_edits(sp, call->attach_bones, call->frame);
    if (sp->edit_target) {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[SB_FRAME]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, (GLintptr)(12 * nv * sizeof(float)),
                        (GLsizeiptr)(4 * nv * sizeof(float)), sp->edit_target);
    }
    if (!(roles == sp->roles && g->base_roles_on_device)) {
        memset(g->roles_packed, 0, g->role_words * sizeof(uint32_t));
        for (size_t i = 0; i < nv; ++i)
            g->roles_packed[i / SPRING_ROLES_PER_WORD] |=
                (uint32_t)roles[i] << (8u * (i % SPRING_ROLES_PER_WORD));
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[SB_SCALARS]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0,
                        (GLsizeiptr)(g->role_words * sizeof(uint32_t)), g->roles_packed);
        g->base_roles_on_device = roles == sp->roles;
    }
    ssk_gl_profile_mark(&prof, SPRING_PROF_ANCHORS);

    /* The first stage in rig space, checked as ssk_spring_solve checks it:
     * the row is read back with the first batch (spring_first_check), not
     * on its own (a read-back waits for the GPU: 75 us at 100k vertices on
     * an H200). */
    const GLuint all_finite = SPRING_ALL_FINITE;
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[SB_FIRST_ROW]);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, sizeof all_finite, &all_finite);
    spring_in(s, g, SPRING_IN_TO_RIG, input, g->buffers[SB_FIRST], s->buffers[BUF_PRE_POST]);
    ssk_gl_profile_mark(&prof, SPRING_PROF_FIRST);

    /* The detail force's targets from the first stage. */
    spring_detail(s, g, SPRING_DET_DETAIL, 0);

    /* Starting iterate x_0, also as x_{-1} (a pass writes every vertex of
     * its slot, static ones too: no other slot is read before written). */
    GLuint x0 = ring_slot(g, 0);
    bool continued = false;
    if (ssk_spring_continues(p, g->has_prev, g->prev_frame, call->skinning, call->frame) &&
        ssk_spring_differential(g->diff, call->skinning, g->prev_skinning, (uint32_t)nb)) {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[SB_DIFF]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)(16 * nb * sizeof(float)),
                        g->diff);
        spring_in(s, g, SPRING_IN_CONTINUE, g->buffers[SB_PREV], x0, g->buffers[SB_DIFF]);
        continued = true;
    } else {
        copy_buffer(g->buffers[SB_FIRST], x0, bytes);
    }
    if (semi && !continued) clear_buffer(g->buffers[SB_VELOCITY]);
    copy_buffer(x0, ring_slot(g, -1), bytes);

    g->watch_on = !sp->mg && spring_watch_on_device(s, g, semi);
    spring_step_setup(s, g);
    if (sp->ml) spring_ml_setup(s, g, call->attach_bones);
    ssk_gl_profile_mark(&prof, SPRING_PROF_SETUP);
    spring_batch_run b;
    st = sp->mg       ? spring_passes_multigrid(s, g, roles, &b, &prof, err)
         : g->watch_on ? spring_passes_device(s, g, &b, &prof, err)
                       : spring_passes(s, g, semi, &b, &prof, err);
    /* the step's later uses (the result's energy) are the host's */
    g->watch_on = false;
    if (st != SSK_OK) return st;
    ssk_spring_watch w = b.w;
    const GLuint result =
        w.result == SSK_SPRING_PICK_PREVIOUS  ? ring_slot(g, (int64_t)w.iterations - 2)
        : w.result == SSK_SPRING_PICK_CURRENT ? ring_slot(g, b.current)
        : w.result == SSK_SPRING_PICK_NEXT    ? ring_slot(g, w.iterations)
        : w.result == SSK_SPRING_PICK_GOOD    ? g->buffers[SB_GOOD]
                                              : g->buffers[SB_FIRST];
    const GLuint nx = ring_slot(g, b.current + 1);
    if (!w.energy_known && call->report) {
        /* the result's energy (no pass measured it): its pass and
         * reduction now, read when the frame's last step has finished
         * (spring_energy_reads), not waited for here */
        spring_records(s, g, result);
        spring_step(s, g, nx, false, 0, 1.0f);
        spring_reduce_issue(s, g, 0);
        g->energy_report = call->report;
    }
    if (result != g->buffers[SB_FIRST] && sp->cluster_count > 0)
        spring_detail(s, g, SPRING_DET_CLUSTER, result);
    spring_in(s, g, SPRING_IN_TO_OBJECT, result, output, s->buffers[BUF_PRE_POST]);
    if (p->mode == SSK_SPRING_FRAME_DEPENDENT) {
        if (w.diverged || !call->skinning) {
            g->has_prev = 0;
        } else {
            copy_buffer(result, g->buffers[SB_PREV], bytes);
            memcpy(g->prev_skinning, call->skinning, 16 * nb * sizeof(float));
            g->prev_frame = call->frame;
            g->has_prev = 1;
        }
    }
    if (w.diverged && semi) clear_buffer(g->buffers[SB_VELOCITY]);
    ssk_gl_profile_mark(&prof, SPRING_PROF_FINISH);
    if (prof.enabled)
        fprintf(stderr, "spring solve: %u passes kept, %u issued in %u batches\n", w.iterations,
                b.passes, b.batches);
    ssk_gl_profile_report(&prof, "spring solve");
    st = ssk_gl_check("spring solve", err);
    if (st != SSK_OK) return st;
    return ssk_spring_watch_finish(&w, sp, call->report, err);
}

/* The ARAP node: solved on the CPU (ssk_arap_deform: CHOLMOD's
 * back-substitution), taken to object space on the host and uploaded
 * into `output`; the GL pipeline goes on from there. */
static ssk_status run_arap(gl_state *s, const ssk_kernel_call *call, GLuint output,
                           ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    const size_t nv = rig->vertex_count;
    float *host = malloc(3 * nv * sizeof(float) + 1);
    if (!host) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    ssk_status st = ssk_arap_deform(call->arap, host, call->attach_bones, err);
    if (st == SSK_OK) {
        for (uint32_t m = 0; m < rig->mesh_count; ++m) {
            if (s->frame->mesh_identity[m]) continue;
            const ssk_mesh *mesh = &rig->meshes[m];
            const float *post = s->frame->post + 16 * (size_t)m;
            for (uint32_t v = 0; v < mesh->vertex_count; ++v) {
                float *p = host + 3 * ((size_t)mesh->first_vertex + v);
                ssk_mat4_transform_point(p, post, p);
            }
        }
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, output);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)(3 * nv * sizeof(float)), host);
        st = ssk_gl_check("arap upload", err);
    }
    free(host);
    return st;
}

/* --- implicit skinning (Vaillant 2015, 4.5, 4.6.2; issue #20) ------------
 *
 * run_implicit is ssk_cpu_implicit_track with the passes on the device
 * (shaders/kernels_implicit.comp): the pose (from_posed, joint bends: a few
 * floats per field and node) is set on the host by ssk_implicit_pose and
 * uploaded, the first stage is taken to rig space, each projection step,
 * relaxation, diffusion and smoothing step is one whole-rig dispatch from
 * one rig-space buffer into the other, and the result goes back to object
 * space in `output`. Nothing is read back but the 12-byte report at the
 * end of the frame. The tracker's data (kernels/implicit.h's
 * ssk_implicit_view) is uploaded on the node's first frame into shader
 * storage buffers: the grids are read with the CPU's own trilinear
 * arithmetic (ssk_implicit_field_eval, ssk_implicit_op_eval), which needs
 * no sampler, no filtering and no texture unit per field (a rig has tens
 * of fields; GL guarantees 16 units), so textures would buy only their
 * cache. */

/* Copies n uint32 into u at *at, advancing it; returns the region's start. */
static GLuint im_put_u(uint32_t *u, size_t *at, const uint32_t *src, size_t n)
{
    const GLuint start = (GLuint)*at;
    if (src && n) memcpy(u + *at, src, n * sizeof *u);
    else if (n) memset(u + *at, 0, n * sizeof *u);
    *at += n;
    return start;
}

static GLuint im_put_f(float *f, size_t *at, const float *src, size_t n)
{
    const GLuint start = (GLuint)*at;
    if (src && n) memcpy(f + *at, src, n * sizeof *f);
    else if (n) memset(f + *at, 0, n * sizeof *f);
    *at += n;
    return start;
}

/* The static device data of tracker `im` (see above) into g's buffers. */
static ssk_status implicit_upload(gl_state *s, gl_implicit *g, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    ssk_implicit_view v;
    ssk_implicit_get_view(g->im, &v);
    const ssk_implicit_fit *fit = v.fit;
    const ssk_weld *weld = &rig->weld;
    const size_t nv = rig->vertex_count, nf = fit->field_count, nn = v.node_count;
    const size_t mvc = fit->mvc_offsets ? fit->mvc_offsets[nv] : 0;
    g->has_adjacency = weld->adjacency_offsets != NULL;
    const size_t adj = g->has_adjacency ? weld->adjacency_offsets[nv] : 0;
    size_t grid_points = 0;
    for (size_t f = 0; f < nf; ++f) {
        const size_t n = fit->fields[f].resolution;
        grid_points += n * n * n;
    }
    size_t op_points[SSK_IMPLICIT_OP_KIND_COUNT];
    for (int k = 0; k < SSK_IMPLICIT_OP_KIND_COUNT; ++k) {
        const size_t n = v.ops[k].resolution;
        op_points[k] = n * n * n;
        g->op_resolution[k] = (GLuint)n;
    }
    const size_t u_words = 3 * (nv + 1) + v.program_entry_count + mvc + adj + nn + 2 * nf + nv;
    const size_t f_words = op_points[0] + op_points[1] + IM_ROWS_FLOATS * nf + 2 * nv + mvc;
    if (u_words > UINT32_MAX || f_words > UINT32_MAX || 4 * grid_points > UINT32_MAX ||
        IM_WORK_WORDS_PER_VERTEX * nv + IM_REPORT_WORDS > UINT32_MAX)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "implicit node too large for the GL backend's 32-bit indices");
    uint32_t *u = malloc(u_words * sizeof *u + 1);
    float *f = malloc(f_words * sizeof *f + 1);
    float *grids = malloc(4 * grid_points * sizeof *grids + 1);
    g->frame = malloc((IM_ROWS_FLOATS * nf + nn + 1) * sizeof *g->frame);
    if (!u || !f || !grids || !g->frame) {
        free(u);
        free(f);
        free(grids);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    size_t at = 0;
    g->off[IM_OFF_PROGRAM_OFFSETS] = im_put_u(u, &at, v.program_offsets, nv + 1);
    g->off[IM_OFF_PROGRAMS] = (GLuint)at;
    ssk_implicit_pack_programs(g->im, u + at);
    at += v.program_entry_count;
    g->off[IM_OFF_MVC_OFFSETS] = im_put_u(u, &at, fit->mvc_offsets, nv + 1);
    g->off[IM_OFF_MVC_NEIGHBORS] = im_put_u(u, &at, fit->mvc_neighbors, mvc);
    g->off[IM_OFF_ADJ_OFFSETS] =
        im_put_u(u, &at, g->has_adjacency ? weld->adjacency_offsets : NULL, nv + 1);
    g->off[IM_OFF_ADJACENCY] = im_put_u(u, &at, g->has_adjacency ? weld->adjacency : NULL, adj);
    g->off[IM_OFF_NODE_OPS] = (GLuint)at;
    ssk_implicit_node_ops(g->im, u + at);
    at += nn;
    g->off[IM_OFF_FIELD_META] = (GLuint)at;
    size_t first = 0;
    for (size_t fi = 0; fi < nf; ++fi) {
        const ssk_implicit_field *field = &fit->fields[fi];
        const size_t n = field->resolution, points = n * n * n;
        u[at++] = (uint32_t)first;
        u[at++] = (uint32_t)n;
        memcpy(grids + 4 * first, field->samples, 4 * points * sizeof(float));
        first += points;
    }
    g->off[IM_OFF_VERTEX_FLAGS] = (GLuint)at;
    for (size_t i = 0; i < nv; ++i) u[at++] = v.flags[i] & SSK_IMPLICIT_FLAG_TRACKED;
    at = 0;
    g->off[IM_OFF_OP_CONTACT] = im_put_f(f, &at, v.ops[SSK_IMPLICIT_OP_CONTACT].values,
                                         op_points[SSK_IMPLICIT_OP_CONTACT]);
    g->off[IM_OFF_OP_BULGE] = im_put_f(f, &at, v.ops[SSK_IMPLICIT_OP_BULGE].values,
                                       op_points[SSK_IMPLICIT_OP_BULGE]);
    g->off[IM_OFF_GRID_FROM_REST] = (GLuint)at;
    for (size_t fi = 0; fi < nf; ++fi) im_put_f(f, &at, fit->fields[fi].grid_from_rest, IM_ROWS_FLOATS);
    g->off[IM_OFF_ISO] = im_put_f(f, &at, v.iso, nv);
    g->off[IM_OFF_MAX_STEP] = im_put_f(f, &at, v.max_step, nv);
    g->off[IM_OFF_MVC_WEIGHTS] = im_put_f(f, &at, fit->mvc_weights, mvc);
    g->off[IM_OFF_NODE_BEND] = (GLuint)(IM_ROWS_FLOATS * nf);
    g->off[IM_OFF_FG] = (GLuint)(IM_WORK_FG * nv);
    g->off[IM_OFF_PREV_ERROR] = (GLuint)(IM_WORK_PREV_ERROR * nv);
    g->off[IM_OFF_FLAGS] = (GLuint)(IM_WORK_FLAGS * nv);
    g->off[IM_OFF_REPORT] = (GLuint)(IM_WORK_WORDS_PER_VERTEX * nv);
    g->field_count = (uint32_t)nf;
    g->node_count = (uint32_t)nn;
    struct {
        gl_implicit_buffer b;
        size_t bytes;
        const void *data;
        GLenum usage;
    } const allocations[] = {
        {IB_STATIC_U, u_words * sizeof(uint32_t), u, GL_STATIC_DRAW},
        {IB_GRIDS, 4 * grid_points * sizeof(float), grids, GL_STATIC_DRAW},
        {IB_STATIC_F, f_words * sizeof(float), f, GL_STATIC_DRAW},
        {IB_FRAME, (IM_ROWS_FLOATS * nf + nn) * sizeof(float), NULL, GL_DYNAMIC_DRAW},
        {IB_POS0, 3 * nv * sizeof(float), NULL, GL_DYNAMIC_COPY},
        {IB_POS1, 3 * nv * sizeof(float), NULL, GL_DYNAMIC_COPY},
        {IB_WORK, (IM_WORK_WORDS_PER_VERTEX * nv + IM_REPORT_WORDS) * sizeof(uint32_t), NULL,
         GL_DYNAMIC_COPY},
    };
    ssk_status st = SSK_OK;
    for (size_t i = 0; st == SSK_OK && i < sizeof allocations / sizeof allocations[0]; ++i)
        st = allocate_named(s, &g->buffers[allocations[i].b], implicit_buffer_names[allocations[i].b],
                            allocations[i].bytes, allocations[i].data, allocations[i].usage, err);
    free(u);
    free(f);
    free(grids);
    return st;
}

/* The device state of tracker `im`, uploaded on first use. */
static ssk_status implicit_entry(gl_state *s, ssk_implicit *im, gl_implicit **out, ssk_error *err)
{
    for (int i = 0; i < s->implicit_count; ++i)
        if (s->implicits[i].im == im) {
            *out = &s->implicits[i];
            return SSK_OK;
        }
    gl_implicit *list = realloc(s->implicits, ((size_t)s->implicit_count + 1) * sizeof *list);
    if (!list) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    s->implicits = list;
    gl_implicit *g = &s->implicits[s->implicit_count];
    memset(g, 0, sizeof *g);
    g->im = im;
    ssk_status st = implicit_upload(s, g, err);
    if (st != SSK_OK) {
        glDeleteBuffers(IB_COUNT, g->buffers);
        free(g->frame);
        glGetError();
        return st;
    }
    ++s->implicit_count;
    *out = g;
    return SSK_OK;
}

/* One whole-rig pass of kernels_implicit.comp from `from` into `to`. */
static void implicit_pass(gl_state *s, GLuint mode, GLuint from, GLuint to)
{
    bind(IM_INPUT, from);
    bind(IM_OUTPUT, to);
    glUniform1ui(LOC_IM_MODE, mode);
    glUniform1ui(LOC_COUNT, s->rig->vertex_count);
    glUniform1ui(LOC_IM_FIRST_VERTEX, 0);
    dispatch(s, PROG_IMPLICIT, s->rig->vertex_count);
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
}

/* The per-mesh conversions (TO_RIG: object -> rig, TO_OBJECT: rig -> object). */
static void implicit_convert(gl_state *s, GLuint mode, GLuint from, GLuint to)
{
    const ssk_rig *rig = s->rig;
    bind(IM_INPUT, from);
    bind(IM_OUTPUT, to);
    glUniform1ui(LOC_IM_MODE, mode);
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const gl_mesh *mesh = &s->meshes[m];
        glUniform1ui(LOC_COUNT, mesh->vertex_count);
        glUniform1ui(LOC_IM_FIRST_VERTEX, mesh->first_vertex);
        glUniform1ui(LOC_IM_MESH, m);
        glUniform1ui(LOC_IM_FLAGS,
                     s->pre_post && !s->frame->mesh_identity[m] ? IM_FLAG_MESH_MATRICES : 0u);
        dispatch(s, PROG_IMPLICIT, mesh->vertex_count);
    }
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
}

static void swap_buffers(GLuint *a, GLuint *b)
{
    const GLuint t = *a;
    *a = *b;
    *b = t;
}

/* The implicit node: ssk_cpu_implicit_track on the device (see above),
 * input and output object-space position buffers. */
/* The elastic tracking (4.6.3; its linear steps are sparse solves with
 * CHOLMOD on the host): the first stage read back, tracked on the CPU
 * (ssk_cpu_implicit_track, the CPU backend's code) and uploaded into
 * `output`; the GL pipeline goes on from there. */
static ssk_status run_implicit_host(gl_state *s, const ssk_kernel_call *call, GLuint input,
                                    GLuint output, ssk_error *err)
{
    const size_t bytes = 3 * (size_t)s->rig->vertex_count * sizeof(float);
    float *host = malloc(bytes + 1);
    if (!host) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, input);
    glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)bytes, host);
    ssk_status st = ssk_gl_check("implicit readback", err);
    if (st == SSK_OK) st = ssk_cpu_implicit_track(s->rig, s->frame, call, host, err);
    if (st == SSK_OK) {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, output);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)bytes, host);
        st = ssk_gl_check("implicit upload", err);
    }
    free(host);
    return st;
}

static ssk_status run_implicit(gl_state *s, const ssk_kernel_call *call, GLuint input,
                               GLuint output, ssk_error *err)
{
    if (call->implicit) {
        ssk_implicit_view view;
        ssk_implicit_get_view(call->implicit, &view);
        if (view.params->tracking == SSK_IMPLICIT_ELASTIC)
            return run_implicit_host(s, call, input, output, err);
    }
    if (!call->implicit || !call->skinning || !input)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "GL implicit kernel: no tracker, skinning or input");
    ssk_status st = ssk_implicit_pose(call->implicit, call->skinning, err);
    if (st != SSK_OK) return st;
    gl_implicit *g = NULL;
    st = implicit_entry(s, call->implicit, &g, err);
    if (st == SSK_OK) st = program(s, PROG_IMPLICIT, err);
    if (st != SSK_OK) return st;
    ssk_implicit_view v;
    ssk_implicit_get_view(call->implicit, &v);
    const ssk_implicit_params *p = v.params;
    const size_t nv = s->rig->vertex_count;
    /* the frame: from_posed rows and the joints' bends */
    memcpy(g->frame, v.from_posed, IM_ROWS_FLOATS * (size_t)g->field_count * sizeof(float));
    memcpy(g->frame + IM_ROWS_FLOATS * (size_t)g->field_count, v.node_bend,
           (size_t)g->node_count * sizeof(float));
    const size_t frame_bytes = (IM_ROWS_FLOATS * (size_t)g->field_count + g->node_count) * sizeof(float);
    if (frame_bytes) {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[IB_FRAME]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)frame_bytes, g->frame);
    }
    const GLuint zero[IM_REPORT_WORDS] = {0};
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[IB_WORK]);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER,
                    (GLintptr)((size_t)g->off[IM_OFF_REPORT] * sizeof(GLuint)), sizeof zero, zero);
    st = ssk_gl_check("implicit frame upload", err);
    if (st != SSK_OK) return st;
    glUseProgram(s->programs[PROG_IMPLICIT]);
    bind(IM_STATIC_U, g->buffers[IB_STATIC_U]);
    bind(IM_GRIDS, g->buffers[IB_GRIDS]);
    bind(IM_STATIC_F, g->buffers[IB_STATIC_F]);
    bind(IM_FRAME, g->buffers[IB_FRAME]);
    bind(IM_MATRICES, s->buffers[BUF_PRE_POST]);
    bind(IM_WORK, g->buffers[IB_WORK]);
    glUniform1uiv(LOC_IM_OFF, IM_OFF_COUNT, g->off);
    glUniform1uiv(LOC_IM_OP_RESOLUTION, SSK_IMPLICIT_OP_KIND_COUNT, g->op_resolution);
    glUniform1ui(LOC_IM_MESH_COUNT, s->rig->mesh_count);
    glUniform1ui(LOC_IM_FLAGS, 0);
    glUniform1f(LOC_IM_SIGMA, p->sigma);
    glUniform1f(LOC_IM_BULGE, p->bulge);
    glUniform1f(LOC_IM_COS_CONTACT, v.cos_contact);
    GLuint cur = g->buffers[IB_POS0], other = g->buffers[IB_POS1];
    implicit_convert(s, IM_MODE_TO_RIG, input, cur);
    glUniform1ui(LOC_IM_FLAGS, 0);
    for (uint32_t it = 0; it < p->iterations; ++it) {
        glUniform1ui(LOC_IM_STEP, it);
        implicit_pass(s, IM_MODE_PROJECT, cur, other);
        swap_buffers(&cur, &other);
        if (it % 2 == 1) {
            implicit_pass(s, IM_MODE_RELAX, cur, other);
            swap_buffers(&cur, &other);
        }
    }
    /* the contact regions' weights, diffused, then the smoothing (with no
     * contact beta stays 0 and the smoothing copies: the CPU's skip) */
    if (g->has_adjacency && (p->diffusion_iterations || p->smoothing_iterations)) {
        GLuint beta = (GLuint)(IM_WORK_BETA0 * nv), beta_next = (GLuint)(IM_WORK_BETA1 * nv);
        glUniform1ui(LOC_IM_BETA_FROM, beta);
        implicit_pass(s, IM_MODE_BETA_INIT, cur, other);
        for (uint32_t k = 0; k < p->diffusion_iterations; ++k) {
            glUniform1ui(LOC_IM_BETA_FROM, beta);
            glUniform1ui(LOC_IM_BETA_TO, beta_next);
            implicit_pass(s, IM_MODE_DIFFUSE, cur, other);
            const GLuint t = beta;
            beta = beta_next;
            beta_next = t;
        }
        glUniform1ui(LOC_IM_BETA_FROM, beta);
        for (uint32_t k = 0; k < p->smoothing_iterations; ++k) {
            implicit_pass(s, IM_MODE_SMOOTH, cur, other);
            swap_buffers(&cur, &other);
        }
    }
    if (call->implicit_report) implicit_pass(s, IM_MODE_REPORT, cur, other);
    implicit_convert(s, IM_MODE_TO_OBJECT, cur, output);
    st = ssk_gl_check("implicit tracking", err);
    if (st != SSK_OK || !call->implicit_report) return st;
    GLuint report[IM_REPORT_WORDS];
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, g->buffers[IB_WORK]);
    glGetBufferSubData(GL_SHADER_STORAGE_BUFFER,
                       (GLintptr)((size_t)g->off[IM_OFF_REPORT] * sizeof(GLuint)), sizeof report,
                       report);
    st = ssk_gl_check("implicit report", err);
    if (st != SSK_OK) return st;
    call->implicit_report->tracked = report[IM_REPORT_TRACKED];
    call->implicit_report->contacts = report[IM_REPORT_CONTACTS];
    memcpy(&call->implicit_report->residual, &report[IM_REPORT_RESIDUAL], sizeof(float));
    return SSK_OK;
}

/* The energies that run_spring left on the device (gl_spring.energy_report):
 * read into their reports when `read` (the frame's last step has
 * finished, so the reads wait for nothing: a frame waits for the GPU once,
 * not once more per spring node), else dropped (a frame that failed). */
static ssk_status spring_energy_reads(gl_state *s, bool read, ssk_error *err)
{
    ssk_status st = SSK_OK;
    for (int i = 0; i < s->spring_count; ++i) {
        gl_spring *g = &s->springs[i];
        if (!g->energy_report) continue;
        ssk_spring_pass r;
        if (read && st == SSK_OK) {
            st = spring_reduce_read(g, 1, &r, err);
            if (st == SSK_OK) g->energy_report->energy = r.energy;
        }
        g->energy_report = NULL;
    }
    return st;
}

/* Welds a position buffer in place (shaders/model_weld.comp, core/model/weld.c). */
static ssk_status run_weld(gl_state *s, GLuint positions, ssk_error *err)
{
    ssk_status st = program(s, PROG_WELD, err);
    if (st != SSK_OK) return st;
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    glUseProgram(s->programs[PROG_WELD]);
    bind(BIND_DEFORMED, positions);
    bind(BIND_PRE_POST, s->buffers[BUF_PRE_POST]);
    bind(BIND_TRIANGLES, s->buffers[BUF_WELD_MEMBERS]); /* SSK_BINDING_WELD_MEMBERS */
    glUniform1ui(LOC_COUNT, s->rig->weld.member_count);
    glUniform1ui(LOC_MESH_COUNT, s->rig->mesh_count);
    glUniform1ui(LOC_FLAGS, s->pre_post ? FLAG_PRE_POST : 0u);
    dispatch(s, PROG_WELD, s->rig->weld.member_count);
    return SSK_OK;
}

static void job_run(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    const ssk_kernel_call *call = job->call;
    const GLuint output = s->positions[call->output];
    const GLuint input = call->input >= 0 ? s->positions[call->input] : 0;
    ssk_status st;
    switch (call->kernel) {
    case SSK_KERNEL_LBS: st = run_blend(s, PROG_LBS, output, job->err); break;
    case SSK_KERNEL_DQS: st = run_blend(s, PROG_DQS, output, job->err); break;
    case SSK_KERNEL_NORMALS: st = run_normals(s, input, output, job->err); break;
    case SSK_KERNEL_RIGID:
    case SSK_KERNEL_IRS:
        if (call->weight_slots)
            st = run_attach_weights(s, call, output, job->err);
        else
            st = run_attach(s, call->kernel == SSK_KERNEL_IRS ? PROG_IRS : PROG_RIGID, call, 0,
                            output, job->err);
        break;
    case SSK_KERNEL_RADIAL: st = run_attach(s, PROG_RADIAL, call, input, output, job->err); break;
    case SSK_KERNEL_SPRING: st = run_spring(s, call, input, output, job->err); break;
    case SSK_KERNEL_ARAP: st = run_arap(s, call, output, job->err); break;
    case SSK_KERNEL_IMPLICIT: st = run_implicit(s, call, input, output, job->err); break;
    case SSK_KERNEL_COR: st = run_cor(s, output, job->err); break;
    default:
        st = ssk_error_set(job->err, SSK_ERROR_UNSUPPORTED,
                           "GL backend: kernel %d is not available on GL", (int)call->kernel);
        break;
    }
    /* a diverged spring wrote its last good iterate: an output as any */
    if (st != SSK_OK && st != SSK_ERROR_SPRING_DIVERGED) {
        spring_energy_reads(s, false, NULL);
        job->status = st;
        return;
    }
    if (ssk_kernel_welds(call->kernel) && s->rig->weld.member_count) {
        ssk_status ws = run_weld(s, output, job->err);
        if (ws != SSK_OK) {
            job->status = ws;
            return;
        }
    }
    /* The next kernels (and readbacks) see the result; finishing after a
     * deform's last step makes the deformer's compute timing honest. (A
     * glFinish after every step left the GPU idle while the host went on
     * to the next step: 0 to 0.1 ms of a 100k-vertex spring frame on an
     * H200, within that machine's noise.) */
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
    ssk_status energy = SSK_OK;
    if (!call->defer_finish) {
        glFinish();
        energy = spring_energy_reads(s, true, job->err);
    }
    job->status = ssk_gl_check("compute dispatch", job->err);
    if (job->status == SSK_OK) job->status = energy;
    if (job->status == SSK_OK) job->status = st;
}

/* job_read's buffer in host memory, persistently mapped for reading (GL
 * 4.4 buffer storage): false when there is none (glGetBufferSubData then). */
static bool readback_buffer(gl_state *s, size_t bytes)
{
    if (s->readback) return true;
    if (s->readback_plain || !glBufferStorage || !glMapBufferRange) return false;
    const GLbitfield map = GL_MAP_READ_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT;
    glGenBuffers(1, &s->readback);
    glBindBuffer(GL_COPY_WRITE_BUFFER, s->readback);
    glBufferStorage(GL_COPY_WRITE_BUFFER, (GLsizeiptr)bytes, NULL, map | GL_CLIENT_STORAGE_BIT);
    s->readback_map = glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, (GLsizeiptr)bytes, map);
    if (!s->readback_map || glGetError() != GL_NO_ERROR) {
        glDeleteBuffers(1, &s->readback);
        s->readback = 0;
        s->readback_map = NULL;
        s->readback_plain = true;
        return false;
    }
    return true;
}

/* A position buffer into host memory: on hardware GPUs a GPU copy into a
 * buffer in host memory that the host copies out once a fence says the
 * copy is done (staged), on software renderers (or with
 * SSK_GL_READBACK=plain, or without GL 4.4 buffer storage)
 * glGetBufferSubData. On an H200 the deformer's read-back of 100k
 * vertices (1.2 MB, ssk_deformer_timing) took 0.14-0.17 ms staged and
 * 0.30-0.34 ms plain in the same runs (bench/gl_spring_variants.sh); on
 * llvmpipe, where the GPU copy is one more memcpy, 0.31-0.35 ms staged
 * and 0.14-0.17 plain (bench_spring --backend gl, 100k).
 * test_readback_staged checks the two against each other bit for bit. */
static void job_read(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    const size_t bytes = 3 * (size_t)s->rig->vertex_count * sizeof(float);
    if (!readback_buffer(s, bytes)) {
        read_back(s->positions[job->buffer], job->dst, bytes);
        job->status = ssk_gl_check("reading back a position buffer", job->err);
        return;
    }
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
    glBindBuffer(GL_COPY_READ_BUFFER, s->positions[job->buffer]);
    glBindBuffer(GL_COPY_WRITE_BUFFER, s->readback);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, (GLsizeiptr)bytes);
    GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    GLenum r = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, WATCH_WAIT_NS);
    while (r == GL_TIMEOUT_EXPIRED) r = glClientWaitSync(fence, 0, WATCH_WAIT_NS);
    glDeleteSync(fence);
    job->status = ssk_gl_check("reading back a position buffer", job->err);
    if (job->status == SSK_OK && r == GL_WAIT_FAILED)
        job->status = ssk_error_set(job->err, SSK_ERROR_GL,
                                    "reading back a position buffer: waiting for the GPU failed");
    if (job->status == SSK_OK) memcpy(job->dst, s->readback_map, bytes);
}

static void job_max_displacement(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    const size_t bytes = 3 * (size_t)s->rig->vertex_count * sizeof(float);
    job->status = program(s, PROG_MAX_DISPLACEMENT, job->err);
    if (job->status != SSK_OK) return;
    if (!s->reference_allocated) {
        job->status = buffer_allocate(s, BUF_REFERENCE, bytes, job->reference, GL_STREAM_DRAW,
                                      job->err);
        if (job->status != SSK_OK) return;
        s->reference_allocated = true;
    } else {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_REFERENCE]);
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)bytes, job->reference);
    }
    const GLuint zero = 0; /* the bits of +0.0f */
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_RESULT]);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, sizeof zero, &zero);
    glUseProgram(s->programs[PROG_MAX_DISPLACEMENT]);
    bind(BIND_DEFORMED, s->positions[job->buffer]);
    bind(BIND_REFERENCE, s->buffers[BUF_REFERENCE]);
    bind(BIND_RESULT, s->buffers[BUF_RESULT]);
    glUniform1ui(LOC_COUNT, s->rig->vertex_count);
    dispatch_strided(s, PROG_MAX_DISPLACEMENT, s->rig->vertex_count);
    GLuint bits = 0;
    read_back(s->buffers[BUF_RESULT], &bits, sizeof bits);
    job->status = ssk_gl_check("max displacement", job->err);
    if (job->status != SSK_OK) return;
    memcpy(job->out_max, &bits, sizeof *job->out_max);
}

/* --- host side ----------------------------------------------------------- */

static void upload_free(gl_upload *u)
{
    free(u->rest);
    free(u->bone_indices);
    free(u->weights);
    free(u->triangles);
    free(u->vt_offsets);
    free(u->vt_triangles);
    free(u->cor);
    free(u->weld);
}

/* Builds the device layout of the rig on the host and the per-mesh table. */
static ssk_status upload_build(gl_upload *u, gl_state *s, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    size_t weight_count = 0, triangle_count = 0, shading_count = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        if (weight_count > UINT32_MAX || triangle_count > UINT32_MAX)
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                 "rig too large for the GL backend's 32-bit indices");
        s->meshes[m].first_vertex = mesh->first_vertex;
        s->meshes[m].vertex_count = mesh->vertex_count;
        s->meshes[m].influences = rig->bone_count ? mesh->influence_count : 0;
        s->meshes[m].weight_offset = (uint32_t)weight_count;
        weight_count += (size_t)mesh->vertex_count * mesh->influence_count;
        triangle_count += mesh->triangle_count;
        shading_count += mesh->shading_triangle_offsets[mesh->vertex_count];
    }
    if (weight_count > UINT32_MAX || 3 * triangle_count > UINT32_MAX || shading_count > UINT32_MAX)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "rig too large for the GL backend's 32-bit indices");
    s->triangle_count = (uint32_t)triangle_count;
    u->weight_count = weight_count;
    u->shading_count = shading_count;
    const size_t nv = rig->vertex_count;
    u->rest = malloc(3 * nv * sizeof(float) + 1);
    u->bone_indices = malloc(weight_count * sizeof(int32_t) + 1);
    u->weights = malloc(weight_count * sizeof(float) + 1);
    u->triangles = malloc(3 * triangle_count * sizeof(uint32_t) + 1);
    u->vt_offsets = malloc((nv + 1) * sizeof(uint32_t));
    u->vt_triangles = malloc(shading_count * sizeof(uint32_t) + 1);
    if (!u->rest || !u->bone_indices || !u->weights || !u->triangles || !u->vt_offsets ||
        !u->vt_triangles)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    uint32_t first_triangle = 0, first_vt = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const size_t v0 = mesh->first_vertex, nmv = mesh->vertex_count;
        const size_t entries = nmv * mesh->influence_count;
        memcpy(u->rest + 3 * v0, mesh->positions, 3 * nmv * sizeof(float));
        memcpy(u->bone_indices + s->meshes[m].weight_offset, mesh->bone_indices,
               entries * sizeof(int32_t));
        memcpy(u->weights + s->meshes[m].weight_offset, mesh->weights, entries * sizeof(float));
        for (size_t i = 0; i < 3 * (size_t)mesh->triangle_count; ++i)
            u->triangles[3 * (size_t)first_triangle + i] =
                (uint32_t)mesh->triangles[i] + (uint32_t)v0;
        /* Welded shading triangles (weld.c), as the CPU's normals. */
        for (size_t v = 0; v < nmv; ++v)
            u->vt_offsets[v0 + v] = first_vt + mesh->shading_triangle_offsets[v];
        const uint32_t vt_count = mesh->shading_triangle_offsets[nmv];
        for (uint32_t i = 0; i < vt_count; ++i)
            u->vt_triangles[first_vt + i] = mesh->shading_triangles[i] + first_triangle;
        first_vt += vt_count;
        first_triangle += mesh->triangle_count;
    }
    u->vt_offsets[nv] = first_vt;
    if (u->binding && u->binding->cor_centers && u->binding->cor_flags) {
        u->cor = malloc(4 * nv * sizeof(float) + 1);
        if (!u->cor) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        for (size_t v = 0; v < nv; ++v) {
            memcpy(u->cor + 4 * v, u->binding->cor_centers + 3 * v, 3 * sizeof(float));
            u->cor[4 * v + 3] = u->binding->cor_flags[v] ? 1.0f : 0.0f;
        }
    }
    const ssk_weld *weld = &rig->weld;
    u->weld = malloc(4 * (size_t)weld->member_count * sizeof(uint32_t) + 1);
    if (!u->weld) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < weld->member_count; ++i) {
        u->weld[4 * i] = weld->members[i];
        u->weld[4 * i + 1] = weld->point[weld->members[i]];
        u->weld[4 * i + 2] = weld->member_meshes[2 * i];
        u->weld[4 * i + 3] = weld->member_meshes[2 * i + 1];
    }
    return SSK_OK;
}

static void gl_destroy(void *state)
{
    gl_state *s = state;
    if (!s) return;
    gl_job job = {.s = s};
    ssk_gl_context_run(s->gl, job_destroy, &job);
    for (int i = 0; i < s->spring_count; ++i) {
        free(s->springs[i].roles_packed);
        free(s->springs[i].watch_table);
        free(s->springs[i].prev_skinning);
        free(s->springs[i].diff);
    }
    free(s->springs);
    for (int i = 0; i < s->implicit_count; ++i) free(s->implicits[i].frame);
    free(s->implicits);
    free(s->positions);
    free(s->meshes);
    free(s);
}

static ssk_status gl_create(void **out_state, const ssk_rig *rig, const ssk_binding_view *binding,
                            ssk_gl_context *gl, ssk_error *err)
{
    *out_state = NULL;
    if (!gl)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "GL backend: no GL context");
    gl_state *s = calloc(1, sizeof *s);
    if (!s) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    s->rig = rig;
    s->gl = gl;
    s->has_binding = binding && binding->bones;
    s->has_cor = binding && binding->cor_centers && binding->cor_flags;
    s->info = ssk_gl_context_info_ref(gl);
    s->max_groups = s->info->max_work_group_count[0] > 0
                        ? (uint32_t)s->info->max_work_group_count[0]
                        : GL_MIN_MAX_GROUP_COUNT;
    s->ml_wide = ml_wide(s->info);
    s->spring_batch = spring_batch(s->info);
    {
        const char *env = getenv(SSK_GL_SPRING_ML_ENV);
        s->ml_shared = !(env && strcmp(env, "wide-global") == 0);
        /* create_on_thread checks the storage blocks */
        s->ml_fused = s->ml_wide && !(env && strcmp(env, "wide-unfused") == 0);
        /* SSK_GL_SPRING_WATCH=host keeps the watch on the host (run_spring
         * "The watch on the device") */
        const char *watch = getenv(SSK_GL_SPRING_WATCH_ENV);
        s->spring_watch = !(watch && strcmp(watch, "host") == 0);
        /* the read-back (job_read): staged on hardware GPUs, plain on
         * software renderers; SSK_GL_READBACK = plain | staged picks one */
        const char *readback = getenv("SSK_GL_READBACK");
        s->readback_plain = readback ? strcmp(readback, "plain") == 0 : !s->info->hardware;
        /* SSK_GL_SPRING_PROBE = 1 .. 5 ends the coarse step after that
         * phase, 6 skips the restriction's rows: wrong results, for timing
         * the phases with SSK_GL_PROFILE (kernels_spring_ml_coarse_lib.glsl) */
        const char *probe = getenv("SSK_GL_SPRING_PROBE");
        s->ml_probe = probe ? (uint32_t)strtoul(probe, NULL, 10) : 0u;
    }
    s->meshes = calloc(rig->mesh_count ? rig->mesh_count : 1, sizeof *s->meshes);
    if (!s->meshes) {
        free(s);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    gl_upload upload = {0};
    upload.binding = binding;
    ssk_status st = upload_build(&upload, s, err);
    if (st == SSK_OK) {
        gl_job job = {.s = s, .upload = &upload, .err = err};
        ssk_gl_context_run(gl, job_create, &job);
        st = job.status;
    }
    upload_free(&upload);
    if (st != SSK_OK) {
        gl_destroy(s);
        return st;
    }
    *out_state = s;
    return ssk_error_ok(err);
}

static ssk_status gl_buffer_create(void *state, int *out_id, ssk_error *err)
{
    gl_state *s = state;
    GLuint *p = realloc(s->positions, ((size_t)s->position_count + 1) * sizeof *p);
    if (!p) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    s->positions = p;
    gl_job job = {.s = s, .err = err};
    ssk_gl_context_run(s->gl, job_buffer_create, &job);
    if (job.status != SSK_OK) return job.status;
    *out_id = job.buffer;
    return SSK_OK;
}

static ssk_status gl_frame_upload(void *state, const ssk_frame_data *frame, ssk_error *err)
{
    gl_state *s = state;
    s->frame = frame;
    gl_job job = {.s = s, .frame = frame, .err = err};
    ssk_gl_context_run(s->gl, job_frame_upload, &job);
    return job.status;
}

static ssk_status gl_run(void *state, const ssk_kernel_call *call, ssk_error *err)
{
    gl_state *s = state;
    gl_job job = {.s = s, .call = call, .err = err};
    ssk_gl_context_run(s->gl, job_run, &job);
    return job.status;
}

static ssk_status gl_read(void *state, int id, float *dst, ssk_error *err)
{
    gl_state *s = state;
    gl_job job = {.s = s, .buffer = id, .dst = dst, .err = err};
    ssk_gl_context_run(s->gl, job_read, &job);
    return job.status;
}

static ssk_status gl_max_displacement(void *state, int id, const float *reference, float *out,
                                      ssk_error *err)
{
    gl_state *s = state;
    gl_job job = {.s = s, .buffer = id, .reference = reference, .out_max = out, .err = err};
    ssk_gl_context_run(s->gl, job_max_displacement, &job);
    return job.status;
}

static const char *gl_device_name(void *state)
{
    return ((gl_state *)state)->info->renderer;
}

const ssk_backend_ops ssk_gl_backend = {
    .name = "gl",
    .create = gl_create,
    .destroy = gl_destroy,
    .buffer_create = gl_buffer_create,
    .frame_upload = gl_frame_upload,
    .run = gl_run,
    .alias = NULL,
    .read = gl_read,
    .max_displacement = gl_max_displacement,
    .device_name = gl_device_name,
};
