/*
 * cor_gl.c — the GL side of the centers-of-rotation precomputation (Le &
 * Hodgins 2016, Eq. 1 and 4; issue #18): Eq. 4's sums per vertex over the
 * weight-space cells of core/bind/cor_cells.c, by
 * shaders/bind_cor_precompute.comp.
 *
 * The host builds the integration mesh and its cells (linear in the mesh,
 * as on the CPU) and groups the vertices by equal weights; the GPU does
 * the part that grows with vertices times cells: each representative
 * vertex sums, per pair of its bones, the second-order expansion of
 * Eq. 1's kernel over the pair's occupied cells (the formula and its error
 * bound: core/bind/cor_cells.c). The same cells as the CPU, in float, so
 * GL and CPU agree to float rounding (tests/c/test_cor.c).
 *
 * Device layout (4 shader storage blocks, within GL 4.3's guaranteed 8 per
 * compute shader): one uint array (each representative's entries, each
 * entry's pair, each pair's first field and padded cell count), one float
 * array (each entry's two weights), the cells' fields (every pair's block:
 * SSK_COR_FIELDS rows of `padded` floats), and the output (sum s a c,
 * sum s a) per representative.
 */
#include "kernels/cor_internal.h"
#include "backends/gl.h"

#include <stdlib.h>
#include <string.h>

/* Representatives per dispatch (short jobs on GPUs with a watchdog). */
#define COR_GL_BATCH 4096u

/* Uniform locations and binding points of bind_cor_precompute.comp. */
enum {
    LOC_BASE = 0,
    LOC_COUNT = 1,
    LOC_INV_SIGMA = 2,
    LOC_SECTIONS = 3, /* uint[SECTION_COUNT] */
};
enum { BIND_INDICES = 0, BIND_WEIGHTS = 1, BIND_FIELDS = 2, BIND_SUMS = 3, BIND_COUNT = 4 };

/* Sections of the uint array (order of u_sections in the shader). */
enum {
    SEC_ENTRY_OFFSETS = 0, /* #reps + 1: each representative's entries */
    SEC_ENTRY_PAIRS,       /* per entry: its pair */
    SEC_PAIR_FIRST,        /* per pair: its first float in the fields */
    SEC_PAIR_PADDED,       /* per pair: its cells, padded to 8 */
    SECTION_COUNT
};

typedef struct gl_cor_job {
    ssk_gl_context *gl;
    const uint32_t *indices;
    size_t index_count;
    const float *weights;
    size_t weight_count;
    const float *fields;
    size_t field_count;
    uint32_t sections[SECTION_COUNT];
    uint32_t reps;
    float inv_sigma;
    float *sums; /* reps by 4 */
    ssk_error *err;
    ssk_status status;
} gl_cor_job;

static void job_integrate(void *user)
{
    gl_cor_job *job = user;
    const ssk_gl_info *info = ssk_gl_context_info_ref(job->gl);
    GLuint program = 0;
    job->status = ssk_gl_compute_program(job->gl, "bind_cor_precompute.comp", &program, job->err);
    if (job->status != SSK_OK) return;
    const size_t bytes[BIND_COUNT] = {job->index_count * sizeof(uint32_t),
                                      job->weight_count * sizeof(float),
                                      job->field_count * sizeof(float),
                                      (size_t)job->reps * 4 * sizeof(float)};
    for (int b = 0; b < BIND_COUNT; ++b)
        if (info->max_ssbo_bytes > 0 && bytes[b] > (unsigned long long)info->max_ssbo_bytes) {
            job->status = ssk_error_set(job->err, SSK_ERROR_OUT_OF_MEMORY,
                                        "centers of rotation on GL: a buffer of %zu bytes "
                                        "exceeds GL_MAX_SHADER_STORAGE_BLOCK_SIZE (%lld)",
                                        bytes[b], info->max_ssbo_bytes);
            return;
        }
    const void *data[BIND_COUNT] = {job->indices, job->weights, job->fields, NULL};
    GLuint buffers[BIND_COUNT] = {0};
    glGenBuffers(BIND_COUNT, buffers);
    for (int b = 0; b < BIND_COUNT; ++b) {
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buffers[b]);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(bytes[b] ? bytes[b] : 16), data[b],
                     b == BIND_SUMS ? GL_DYNAMIC_READ : GL_STATIC_DRAW);
        glBindBufferBase(GL_SHADER_STORAGE_BUFFER, (GLuint)b, buffers[b]);
    }
    job->status = ssk_gl_check("allocating the centers-of-rotation buffers", job->err);
    if (job->status == SSK_OK) {
        glUseProgram(program);
        glUniform1ui(LOC_COUNT, job->reps);
        glUniform1f(LOC_INV_SIGMA, job->inv_sigma);
        glUniform1uiv(LOC_SECTIONS, SECTION_COUNT, job->sections);
        GLint local[3] = {0, 0, 0};
        glGetProgramiv(program, GL_COMPUTE_WORK_GROUP_SIZE, local);
        const uint32_t group = local[0] > 0 ? (uint32_t)local[0] : 1u;
        for (uint32_t base = 0; base < job->reps; base += COR_GL_BATCH) {
            const uint32_t n = job->reps - base < COR_GL_BATCH ? job->reps - base : COR_GL_BATCH;
            glUniform1ui(LOC_BASE, base);
            glDispatchCompute((n + group - 1) / group, 1, 1);
            glFinish();
        }
        glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, buffers[BIND_SUMS]);
        glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, (GLsizeiptr)bytes[BIND_SUMS], job->sums);
        job->status = ssk_gl_check("running bind_cor_precompute.comp", job->err);
    }
    glDeleteBuffers(BIND_COUNT, buffers);
    glGetError();
}

ssk_status ssk_cor_gl_integrate(float *dst, const ssk_cor_mesh *m, const ssk_cor_cells *cells,
                                const uint32_t *reps, uint32_t rep_count, float sigma,
                                ssk_gl_context *gl, uint64_t *visited, ssk_error *err)
{
    memset(dst, 0, 4 * (size_t)rep_count * sizeof(float));
    *visited = 0;
    const uint32_t pair_count = ssk_cor_cells_pair_count(cells);
    /* each representative's entries: (pair, w_pj, w_pk) per pair of its
     * bones that some triangle holds */
    size_t entry_count = 0;
    for (uint32_t r = 0; r < rep_count; ++r) {
        const size_t k = m->w_offsets[reps[r] + 1] - m->w_offsets[reps[r]];
        entry_count += k * (k - (k > 0)) / 2;
    }
    size_t field_count = 0;
    for (uint32_t p = 0; p < pair_count; ++p) {
        uint64_t padded;
        ssk_cor_cells_pair_fields(cells, p, &padded);
        field_count += SSK_COR_FIELDS * (size_t)padded;
    }
    const size_t sizes[SECTION_COUNT] = {(size_t)rep_count + 1, entry_count, pair_count,
                                         pair_count};
    gl_cor_job job = {0};
    size_t total = 0;
    for (int s = 0; s < SECTION_COUNT; ++s) {
        job.sections[s] = (uint32_t)total;
        total += sizes[s];
    }
    if (total > UINT32_MAX || field_count > UINT32_MAX)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "centers of rotation on GL: %zu cell fields exceed 32-bit shader "
                             "indices",
                             field_count);
    uint32_t *idx = malloc((total + 1) * sizeof(uint32_t));
    float *weights = malloc((2 * entry_count + 1) * sizeof(float));
    float *fields = malloc((field_count + 1) * sizeof(float));
    float *sums = malloc(((size_t)rep_count * 4 + 1) * sizeof(float));
    ssk_status st = SSK_OK;
    if (!idx || !weights || !fields || !sums) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
        goto done;
    }
    {
        size_t f = 0;
        for (uint32_t p = 0; p < pair_count; ++p) {
            uint64_t padded;
            const float *block = ssk_cor_cells_pair_fields(cells, p, &padded);
            idx[job.sections[SEC_PAIR_FIRST] + p] = (uint32_t)f;
            idx[job.sections[SEC_PAIR_PADDED] + p] = (uint32_t)padded;
            memcpy(fields + f, block, SSK_COR_FIELDS * (size_t)padded * sizeof(float));
            f += SSK_COR_FIELDS * (size_t)padded;
        }
    }
    size_t e = 0;
    uint64_t cells_visited = 0;
    for (uint32_t r = 0; r < rep_count; ++r) {
        idx[job.sections[SEC_ENTRY_OFFSETS] + r] = (uint32_t)e;
        const uint32_t v = reps[r], e0 = m->w_offsets[v], kp = m->w_offsets[v + 1] - e0;
        const int32_t *bones = m->w_bones + e0;
        const float *w = m->w_values + e0;
        for (uint32_t a = 0; a < kp; ++a)
            for (uint32_t b = a + 1; b < kp; ++b) {
                if (!(w[a] > 0.0f && w[b] > 0.0f)) continue;
                const int64_t p = ssk_cor_cells_pair(cells, bones[a], bones[b]);
                if (p < 0) continue;
                idx[job.sections[SEC_ENTRY_PAIRS] + e] = (uint32_t)p;
                weights[2 * e] = w[a];
                weights[2 * e + 1] = w[b];
                cells_visited += idx[job.sections[SEC_PAIR_PADDED] + (uint32_t)p];
                ++e;
            }
    }
    idx[job.sections[SEC_ENTRY_OFFSETS] + rep_count] = (uint32_t)e;
    if (rep_count == 0) goto done;
    job.gl = gl;
    job.indices = idx;
    job.index_count = total;
    job.weights = weights;
    job.weight_count = 2 * e;
    job.fields = fields;
    job.field_count = field_count;
    job.reps = rep_count;
    job.inv_sigma = 1.0f / sigma;
    job.sums = sums;
    job.err = err;
    ssk_gl_context_run(gl, job_integrate, &job);
    st = job.status;
    if (st == SSK_OK) {
        memcpy(dst, sums, 4 * (size_t)rep_count * sizeof(float));
        *visited = cells_visited;
    }
done:
    free(idx);
    free(weights);
    free(fields);
    free(sums);
    return st;
}
