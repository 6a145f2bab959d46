/*
 * gl_backend.c — the OpenGL 4.3 compute backend: the rig lives on the
 * device in persistent shader storage buffers, uploaded once at creation;
 * per frame only the bone data is uploaded, each mesh is one compute
 * dispatch (shaders/lbs.comp or shaders/dqs.comp), and the whole-rig result
 * is read back with one glGetBufferSubData. Normals (face normals, then a
 * per-vertex gather) and the maximum displacement (a grid-stride loop, a
 * shared-memory reduction per work group and one atomicMax per group) run
 * on the device buffer of the last deform.
 *
 * Every GL call happens in a job run by ssk_gl_context_run on the context's
 * own thread; each entry point packs its inputs and outputs into a job
 * struct, runs it and returns the status the job left there.
 *
 * Device layout (all meshes concatenated in mesh order; the binding points
 * are those of shaders/skinning_lib.glsl):
 *   rest, deformed, normals, reference  float[3 #V]
 *   bone indices, weights              int/float[sum_m #V_m K_m], mesh m's
 *                                      first entry at weight_offset[m]
 *   bones                              LBS: #M #B row-major 4x4 (the frame's
 *                                      lbs_matrices); DQS: #B ssk_dual_quat
 *   pre/post                           DQS: #M pre then #M post 4x4
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
typedef enum gl_buffer {
    BUF_REST = 0,
    BUF_BONE_INDICES = 1,
    BUF_WEIGHTS = 2,
    BUF_BONES = 3,
    BUF_PRE_POST = 4,
    BUF_DEFORMED = 5,
    BUF_TRIANGLES = 6,
    BUF_FACE_NORMALS = 7,
    BUF_VT_OFFSETS = 8,
    BUF_VT_TRIANGLES = 9,
    BUF_NORMALS = 10,
    BUF_REFERENCE = 11,
    BUF_RESULT = 12,
    BUF_COUNT
} gl_buffer;

static const char *const buffer_names[BUF_COUNT] = {
    "rest positions", "bone indices", "weights", "bone data", "pre/post matrices",
    "deformed positions", "triangles", "face normals", "vertex-triangle offsets",
    "vertex triangles", "normals", "reference positions", "result"};

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
    PROG_DEFORM,
    PROG_FACE_NORMALS,
    PROG_VERTEX_NORMALS,
    PROG_MAX_DISPLACEMENT,
    PROG_COUNT
} gl_program;

typedef struct gl_mesh {
    uint32_t first_vertex, vertex_count;
    uint32_t influences;    /* K, or 0 when the rig has no bones */
    uint32_t weight_offset; /* first bone index / weight of the mesh */
} gl_mesh;

typedef struct gl_state {
    const ssk_rig *rig;
    ssk_method method;
    ssk_gl_context *gl;
    const ssk_gl_info *info;
    GLuint buffers[BUF_COUNT];
    GLuint programs[PROG_COUNT];
    GLuint local_size[PROG_COUNT]; /* queried GL_COMPUTE_WORK_GROUP_SIZE x */
    uint32_t max_groups;           /* GL_MAX_COMPUTE_WORK_GROUP_COUNT x */
    gl_mesh *meshes;
    uint32_t triangle_count;       /* whole rig */
    size_t bone_floats;            /* per frame upload of bone data */
    bool reference_allocated;
    bool deformed;
} gl_state;

/* Host copies of the rig in the device layout, built once for the upload. */
typedef struct gl_upload {
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
    ssk_deform_timing *timing;
    const float *reference;
    float *out_max;
    ssk_error *err;
    ssk_status status;
} gl_job;

static const char *deform_program_name(ssk_method method)
{
    return method == SSK_METHOD_DQS ? "dqs.comp" : "lbs.comp";
}

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

static void bind(const gl_state *s, gl_buffer b)
{
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, (GLuint)b, s->buffers[b]);
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

/* Reads `bytes` of buffer b into dst after the kernels that wrote it. */
static void read_back(const gl_state *s, gl_buffer b, void *dst, size_t bytes)
{
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[b]);
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
    glGetError(); /* nothing to report from a destructor */
}

static ssk_status create_on_thread(gl_state *s, const gl_upload *u, ssk_error *err)
{
    static const char *const program_files[PROG_COUNT] = {
        NULL, "face_normals.comp", "vertex_normals.comp", "max_displacement.comp"};
    for (int p = 0; p < PROG_COUNT; ++p) {
        const char *file = p == PROG_DEFORM ? deform_program_name(s->method) : program_files[p];
        ssk_status st = ssk_gl_compute_program(s->gl, file, &s->programs[p], err);
        if (st != SSK_OK) return st;
        GLint size[3] = {0, 0, 0};
        glGetProgramiv(s->programs[p], GL_COMPUTE_WORK_GROUP_SIZE, size);
        if (size[0] <= 0 || size[1] != 1 || size[2] != 1)
            return ssk_error_set(err, SSK_ERROR_GL_SHADER,
                                 "compute shader '%s' has work group size %dx%dx%d (expected "
                                 "N x 1 x 1)", file, size[0], size[1], size[2]);
        s->local_size[p] = (GLuint)size[0];
    }
    const ssk_rig *rig = s->rig;
    const size_t nv = rig->vertex_count, nm = rig->mesh_count;
    const size_t nf = s->triangle_count;
    const size_t pre_post_floats = s->method == SSK_METHOD_DQS ? 2 * nm * MAT4_FLOATS : 0;
    struct {
        gl_buffer b;
        size_t bytes;
        const void *data;
        GLenum usage;
    } const allocations[] = {
        {BUF_REST, 3 * nv * sizeof(float), u->rest, GL_STATIC_DRAW},
        {BUF_BONE_INDICES, u->weight_count * sizeof(int32_t), u->bone_indices, GL_STATIC_DRAW},
        {BUF_WEIGHTS, u->weight_count * sizeof(float), u->weights, GL_STATIC_DRAW},
        {BUF_BONES, s->bone_floats * sizeof(float), NULL, GL_DYNAMIC_DRAW},
        {BUF_PRE_POST, pre_post_floats * sizeof(float), NULL, GL_DYNAMIC_DRAW},
        {BUF_DEFORMED, 3 * nv * sizeof(float), NULL, GL_DYNAMIC_READ},
        {BUF_TRIANGLES, 3 * nf * sizeof(uint32_t), u->triangles, GL_STATIC_DRAW},
        {BUF_FACE_NORMALS, 3 * nf * sizeof(float), NULL, GL_DYNAMIC_COPY},
        {BUF_VT_OFFSETS, (nv + 1) * sizeof(uint32_t), u->vt_offsets, GL_STATIC_DRAW},
        {BUF_VT_TRIANGLES, 3 * nf * sizeof(uint32_t), u->vt_triangles, GL_STATIC_DRAW},
        {BUF_NORMALS, 3 * nv * sizeof(float), NULL, GL_DYNAMIC_READ},
        {BUF_RESULT, sizeof(GLuint), NULL, GL_DYNAMIC_READ},
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

static void job_deform(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    const ssk_rig *rig = s->rig;
    const ssk_frame_data *frame = job->frame;
    ssk_error *err = job->err;

    /* Upload: the frame's bone data only. */
    const double t0 = ssk_time_seconds();
    bool pre_post = false;
    if (s->bone_floats) {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_BONES]);
        const void *bones = s->method == SSK_METHOD_DQS ? (const void *)frame->dual_quats
                                                        : (const void *)frame->lbs_matrices;
        glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)(s->bone_floats * sizeof(float)),
                        bones);
        if (s->method == SSK_METHOD_DQS) {
            for (uint32_t m = 0; m < rig->mesh_count; ++m) pre_post |= !frame->mesh_identity[m];
            if (pre_post) {
                const size_t bytes = (size_t)rig->mesh_count * MAT4_FLOATS * sizeof(float);
                glBindBuffer(GL_SHADER_STORAGE_BUFFER, s->buffers[BUF_PRE_POST]);
                glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)bytes, frame->pre);
                glBufferSubData(GL_SHADER_STORAGE_BUFFER, (GLintptr)bytes, (GLsizeiptr)bytes,
                                frame->post);
            }
        }
    }
    job->status = ssk_gl_check("uploading bone data", err);
    if (job->status != SSK_OK) return;
    const double t1 = ssk_time_seconds();

    /* Compute: one dispatch (or chunk loop) per mesh. */
    glUseProgram(s->programs[PROG_DEFORM]);
    bind(s, BUF_REST);
    bind(s, BUF_BONE_INDICES);
    bind(s, BUF_WEIGHTS);
    bind(s, BUF_BONES);
    bind(s, BUF_DEFORMED);
    if (s->method == SSK_METHOD_DQS) {
        bind(s, BUF_PRE_POST);
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
        if (s->method == SSK_METHOD_DQS)
            glUniform1ui(LOC_FLAGS, pre_post && !frame->mesh_identity[m] ? FLAG_PRE_POST : 0u);
        dispatch(s, PROG_DEFORM, mesh->vertex_count);
    }
    /* Later kernels (normals, max displacement) read the result. */
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    glFinish();
    job->status = ssk_gl_check(s->method == SSK_METHOD_DQS ? "dqs.comp dispatch"
                                                           : "lbs.comp dispatch", err);
    if (job->status != SSK_OK) return;
    const double t2 = ssk_time_seconds();

    /* Readback: the whole rig at once. */
    if (job->dst) {
        read_back(s, BUF_DEFORMED, job->dst, 3 * (size_t)rig->vertex_count * sizeof(float));
        job->status = ssk_gl_check("reading back deformed positions", err);
        if (job->status != SSK_OK) return;
    }
    const double t3 = ssk_time_seconds();
    job->timing->upload_seconds = t1 - t0;
    job->timing->compute_seconds = t2 - t1;
    job->timing->readback_seconds = t3 - t2;
}

static void job_normals(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    if (s->triangle_count) {
        glUseProgram(s->programs[PROG_FACE_NORMALS]);
        bind(s, BUF_DEFORMED);
        bind(s, BUF_TRIANGLES);
        bind(s, BUF_FACE_NORMALS);
        glUniform1ui(LOC_COUNT, s->triangle_count);
        dispatch(s, PROG_FACE_NORMALS, s->triangle_count);
        glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    }
    glUseProgram(s->programs[PROG_VERTEX_NORMALS]);
    bind(s, BUF_FACE_NORMALS);
    bind(s, BUF_VT_OFFSETS);
    bind(s, BUF_VT_TRIANGLES);
    bind(s, BUF_NORMALS);
    glUniform1ui(LOC_COUNT, s->rig->vertex_count);
    dispatch(s, PROG_VERTEX_NORMALS, s->rig->vertex_count);
    read_back(s, BUF_NORMALS, job->dst, 3 * (size_t)s->rig->vertex_count * sizeof(float));
    job->status = ssk_gl_check("vertex normals", job->err);
}

static void job_max_displacement(void *user)
{
    gl_job *job = user;
    gl_state *s = job->s;
    const size_t bytes = 3 * (size_t)s->rig->vertex_count * sizeof(float);
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
    bind(s, BUF_DEFORMED);
    bind(s, BUF_REFERENCE);
    bind(s, BUF_RESULT);
    glUniform1ui(LOC_COUNT, s->rig->vertex_count);
    dispatch_strided(s, PROG_MAX_DISPLACEMENT, s->rig->vertex_count);
    GLuint bits = 0;
    read_back(s, BUF_RESULT, &bits, sizeof bits);
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
    free(s->meshes);
    free(s);
}

static ssk_status gl_create(void **out_state, const ssk_rig *rig, ssk_method method,
                            ssk_gl_context *gl, ssk_error *err)
{
    *out_state = NULL;
    if (!gl)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "GL backend: no GL context");
    gl_state *s = calloc(1, sizeof *s);
    if (!s) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    s->rig = rig;
    s->method = method;
    s->gl = gl;
    s->info = ssk_gl_context_info_ref(gl);
    s->max_groups = s->info->max_work_group_count[0] > 0
                        ? (uint32_t)s->info->max_work_group_count[0]
                        : GL_MIN_MAX_GROUP_COUNT;
    const size_t nb = rig->bone_count;
    s->bone_floats = method == SSK_METHOD_DQS ? nb * DUAL_QUAT_FLOATS
                                              : (size_t)rig->mesh_count * nb * MAT4_FLOATS;
    s->meshes = calloc(rig->mesh_count ? rig->mesh_count : 1, sizeof *s->meshes);
    if (!s->meshes) {
        free(s);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    gl_upload upload = {0};
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

static ssk_status gl_deform(void *state, float *dst, const ssk_frame_data *frame,
                            ssk_deform_timing *timing, ssk_error *err)
{
    gl_state *s = state;
    ssk_deform_timing scratch;
    gl_job job = {.s = s, .dst = dst, .frame = frame, .timing = timing ? timing : &scratch,
                  .err = err};
    ssk_gl_context_run(s->gl, job_deform, &job);
    if (job.status != SSK_OK) return job.status;
    s->deformed = true;
    return ssk_error_ok(err);
}

static ssk_status gl_normals(void *state, float *dst, ssk_error *err)
{
    gl_state *s = state;
    if (!s->deformed)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "GL normals: no deform yet");
    gl_job job = {.s = s, .dst = dst, .err = err};
    ssk_gl_context_run(s->gl, job_normals, &job);
    return job.status == SSK_OK ? ssk_error_ok(err) : job.status;
}

static ssk_status gl_max_displacement(void *state, float *out, const float *reference,
                                      ssk_error *err)
{
    gl_state *s = state;
    if (!s->deformed)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "GL max displacement: no deform yet");
    gl_job job = {.s = s, .reference = reference, .out_max = out, .err = err};
    ssk_gl_context_run(s->gl, job_max_displacement, &job);
    return job.status == SSK_OK ? ssk_error_ok(err) : job.status;
}

static const char *gl_device_name(void *state)
{
    return ((gl_state *)state)->info->renderer;
}

const ssk_backend_ops ssk_gl_backend = {
    "gl", gl_create, gl_destroy, gl_deform, gl_normals, gl_max_displacement, gl_device_name,
};
