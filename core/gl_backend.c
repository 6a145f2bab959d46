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
 * group and one atomicMax per group.
 *
 * Every GL call happens in a job run by ssk_gl_context_run on the context's
 * own thread; each entry point packs its inputs and outputs into a job
 * struct, runs it and returns the status the job left there.
 *
 * Device layout (all meshes concatenated in mesh order; the binding points
 * are those of shaders/skinning_lib.glsl):
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
 */
#include "backend.h"
#include "gl.h"

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
 * shaders/skinning_lib.glsl). */
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
    BUF_COUNT
} gl_buffer;

static const char *const buffer_names[BUF_COUNT] = {
    "rest positions", "bone indices", "weights", "LBS bone matrices", "DQS bones",
    "pre/post matrices", "triangles", "face normals", "vertex-triangle offsets",
    "vertex triangles", "reference positions", "result", "binding bones", "binding t",
    "binding scale vectors", "attachment bones", "radial bone mask", "rest distances"};

/* Uniform locations (SSK_LOC_* of shaders/skinning_lib.glsl). */
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
/* SSK_FLAG_PRE_POST of dqs.comp. */
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
    PROG_COUNT
} gl_program;

static const char *const program_files[PROG_COUNT] = {
    "lbs.comp", "dqs.comp", "face_normals.comp", "vertex_normals.comp",
    "max_displacement.comp", "rigid.comp", "irs.comp", "radial.comp"};

/* Binding points and uniforms of the attachment kernels
 * (shaders/attach_lib.glsl). */
enum gl_attach_binding {
    ATTACH_BONES_OF_VERTEX = 0,
    ATTACH_T = 1,
    ATTACH_S = 2,
    ATTACH_BONE_DATA = 3,
    ATTACH_PRE_POST = 4,
    ATTACH_OUTPUT = 5,
    ATTACH_EXTRA = 6,
    ATTACH_INPUT = 7,
};
enum gl_attach_uniform {
    LOC_ATTACH_MESH = 5,
    LOC_ATTACH_MESH_COUNT = 7,
    LOC_ATTACH_FLAGS = 8,
    LOC_ATTACH_PROFILE = 9,
    LOC_ATTACH_AMOUNT = 10,
};
#define FLAG_MESH_MATRICES 1u
#define FLAG_LENGTH_ADJUST 2u
#define ATTACH_BONE_FLOATS (sizeof(ssk_attach_bone) / sizeof(float))

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
    int position_count;
    GLuint programs[PROG_COUNT];   /* compiled on first use */
    GLuint local_size[PROG_COUNT]; /* queried GL_COMPUTE_WORK_GROUP_SIZE x */
    uint32_t max_groups;           /* GL_MAX_COMPUTE_WORK_GROUP_COUNT x */
    gl_mesh *meshes;
    uint32_t triangle_count;       /* whole rig */
    bool reference_allocated;
    bool has_binding;
    const float *rest_distances;   /* host array uploaded to BUF_REST_DISTANCES */
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
static ssk_status buffer_allocate(gl_state *s, gl_buffer b, size_t bytes, const void *data,
                                  GLenum usage, ssk_error *err)
{
    if (s->info->max_ssbo_bytes > 0 && bytes > (unsigned long long)s->info->max_ssbo_bytes)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "GL buffer '%s' needs %zu bytes, more than the device's "
                             "GL_MAX_SHADER_STORAGE_BLOCK_SIZE (%lld bytes)",
                             buffer_names[b], bytes, s->info->max_ssbo_bytes);
    if (bytes / sizeof(float) > UINT32_MAX)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "GL buffer '%s' needs %zu bytes, more than 32-bit shader indices "
                             "can address", buffer_names[b], bytes);
    ssk_status st = ssk_gl_check("before allocating GL buffers", err);
    if (st != SSK_OK) return st;
    if (!s->buffers[b]) glGenBuffers(1, &s->buffers[b]);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[b]);
    if (bytes == 0) {
        data = NULL;
        bytes = GL_EMPTY_BUFFER_BYTES;
    }
    glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)bytes, data, usage);
    char what[96];
    snprintf(what, sizeof what, "allocating GL buffer '%s' (%zu bytes)", buffer_names[b], bytes);
    return ssk_gl_check(what, err);
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
    glGetError(); /* nothing to report from a destructor */
}

static ssk_status create_on_thread(gl_state *s, const gl_upload *u, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
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
        {BUF_VT_TRIANGLES, 3 * nf * sizeof(uint32_t), u->vt_triangles, GL_STATIC_DRAW},
        {BUF_RESULT, sizeof(GLuint), NULL, GL_DYNAMIC_READ},
        {BUF_BIND_BONES, u->binding ? nv * sizeof(int32_t) : 0,
         u->binding ? (const void *)u->binding->bones : NULL, GL_STATIC_DRAW},
        {BUF_BIND_T, u->binding ? nv * sizeof(float) : 0,
         u->binding ? (const void *)u->binding->t : NULL, GL_STATIC_DRAW},
        {BUF_BIND_S, u->binding ? 3 * nv * sizeof(float) : 0,
         u->binding ? (const void *)u->binding->scale_vectors : NULL, GL_STATIC_DRAW},
        {BUF_ATTACH, nb * sizeof(ssk_attach_bone), NULL, GL_DYNAMIC_DRAW},
        {BUF_MASK, nb * sizeof(GLuint), NULL, GL_DYNAMIC_DRAW},
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
    case SSK_KERNEL_RIGID: st = run_attach(s, PROG_RIGID, call, 0, output, job->err); break;
    case SSK_KERNEL_IRS: st = run_attach(s, PROG_IRS, call, 0, output, job->err); break;
    case SSK_KERNEL_RADIAL: st = run_attach(s, PROG_RADIAL, call, input, output, job->err); break;
    default:
        st = ssk_error_set(job->err, SSK_ERROR_UNSUPPORTED,
                           "GL backend: kernel %d is not available on GL", (int)call->kernel);
        break;
    }
    if (st != SSK_OK) {
        job->status = st;
        return;
    }
    /* The next kernels (and readbacks) see the result; finishing here makes
     * the deformer's compute timing honest. */
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
    glFinish();
    job->status = ssk_gl_check("compute dispatch", job->err);
}

static void job_read(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    read_back(s->positions[job->buffer], job->dst, 3 * (size_t)s->rig->vertex_count * sizeof(float));
    job->status = ssk_gl_check("reading back a position buffer", job->err);
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
}

/* Builds the device layout of the rig on the host and the per-mesh table. */
static ssk_status upload_build(gl_upload *u, gl_state *s, ssk_error *err)
{
    const ssk_rig *rig = s->rig;
    size_t weight_count = 0, triangle_count = 0;
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
    }
    if (weight_count > UINT32_MAX || 3 * triangle_count > UINT32_MAX)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "rig too large for the GL backend's 32-bit indices");
    s->triangle_count = (uint32_t)triangle_count;
    u->weight_count = weight_count;
    const size_t nv = rig->vertex_count;
    u->rest = malloc(3 * nv * sizeof(float) + 1);
    u->bone_indices = malloc(weight_count * sizeof(int32_t) + 1);
    u->weights = malloc(weight_count * sizeof(float) + 1);
    u->triangles = malloc(3 * triangle_count * sizeof(uint32_t) + 1);
    u->vt_offsets = malloc((nv + 1) * sizeof(uint32_t));
    u->vt_triangles = malloc(3 * triangle_count * sizeof(uint32_t) + 1);
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
        for (size_t v = 0; v < nmv; ++v)
            u->vt_offsets[v0 + v] = first_vt + mesh->vertex_triangle_offsets[v];
        const uint32_t vt_count = mesh->vertex_triangle_offsets[nmv];
        for (uint32_t i = 0; i < vt_count; ++i)
            u->vt_triangles[first_vt + i] = mesh->vertex_triangles[i] + first_triangle;
        first_vt += vt_count;
        first_triangle += mesh->triangle_count;
    }
    u->vt_offsets[nv] = first_vt;
    return SSK_OK;
}

static void gl_destroy(void *state)
{
    gl_state *s = state;
    if (!s) return;
    gl_job job = {.s = s};
    ssk_gl_context_run(s->gl, job_destroy, &job);
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
    s->has_binding = binding != NULL;
    s->info = ssk_gl_context_info_ref(gl);
    s->max_groups = s->info->max_work_group_count[0] > 0
                        ? (uint32_t)s->info->max_work_group_count[0]
                        : GL_MIN_MAX_GROUP_COUNT;
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
