/*
 * cor_gl.c — the GL integration of the centers-of-rotation precomputation
 * (Le & Hodgins 2016, Eq. 1 and 4) over the integration mesh of
 * cor_precompute.c, by shaders/bind_cor_precompute.comp.
 *
 * Instead of the CPU's seeds and breadth-first search (a serial, branchy
 * walk that suits a GPU poorly), every vertex visits exactly the triangles
 * whose similarity to it can be non-zero: Eq. 1 has a term only for a pair
 * of bones that both the vertex and the triangle carry. The host builds an
 * index from each bone pair (j < k) to the triangles holding both, and
 * gives each vertex the lists of its own pairs, in the lexicographic order
 * of its (sorted) bones. A triangle sits in the lists of several of the
 * vertex's pairs; the shader sums it only from the list of the first of
 * them (the vertex's two smallest bones that the triangle holds), so each
 * triangle counts once. This is Eq. 4 over the whole integration mesh,
 * without the cutoff. Vertices with fewer than two bones, or no list, are
 * not dispatched.
 *
 * Device layout (4 shader storage blocks, within GL 4.3's guaranteed 8 per
 * compute shader): one uint array holding every index section, one float
 * array (vertex weights, leaf weights), the leaves' (centroid, area) as
 * vec4, and the output (sum s a c, sum s a) per dispatched vertex. The
 * sections' offsets are uniforms (see the shader).
 */
#include "kernels/cor_internal.h"
#include "backends/gl.h"

#include <stdlib.h>
#include <string.h>

/* Vertices per dispatch (short jobs on GPUs with a watchdog). */
#define COR_GL_BATCH 4096u

/* Uniform locations and binding points of bind_cor_precompute.comp. */
enum {
    LOC_BASE = 0,
    LOC_COUNT = 1,
    LOC_INV_SIGMA2 = 2,
    LOC_SECTIONS = 3, /* uint[SECTION_COUNT] */
};
enum { BIND_INDICES = 0, BIND_VALUES = 1, BIND_GEOMETRY = 2, BIND_SUMS = 3, BIND_COUNT = 4 };

/* Sections of the uint array (order of u_sections in the shader). */
enum {
    SEC_VERTICES = 0,   /* dispatched vertex ids */
    SEC_CAND_OFFSETS,   /* per dispatched vertex: its list entries */
    SEC_CAND_LISTS,     /* entries: (list id, pair code i << 16 | j) */
    SEC_W_OFFSETS,      /* #V + 1 */
    SEC_W_BONES,
    SEC_LIST_OFFSETS,
    SEC_LIST_TRIANGLES,
    SEC_TB_OFFSETS,     /* #T + 1 */
    SEC_TB_BONES,
    SEC_LEAF_OFFSETS,   /* #T + 1 */
    SEC_LEAF_WEIGHT_OFFSETS, /* #T + 1, into the float array */
    SEC_LEAF_WEIGHT_BASE,    /* one value: where leaf weights start in the float array */
    SECTION_COUNT
};

typedef struct pair_entry {
    uint64_t key; /* j * #B + k, j < k */
    uint32_t triangle;
} pair_entry;

static int compare_pairs(const void *a, const void *b)
{
    const pair_entry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->triangle > y->triangle) - (x->triangle < y->triangle);
}

typedef struct gl_cor_job {
    ssk_gl_context *gl;
    const uint32_t *indices;
    size_t index_count;
    const float *values;
    size_t value_count;
    const float *geometry;
    size_t leaf_count;
    uint32_t sections[SECTION_COUNT];
    uint32_t candidates;
    float inv_sigma2;
    float *sums; /* candidates by 4 */
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
                                      job->value_count * sizeof(float),
                                      job->leaf_count * 4 * sizeof(float),
                                      (size_t)job->candidates * 4 * sizeof(float)};
    for (int b = 0; b < BIND_COUNT; ++b)
        if (info->max_ssbo_bytes > 0 && bytes[b] > (unsigned long long)info->max_ssbo_bytes) {
            job->status = ssk_error_set(job->err, SSK_ERROR_OUT_OF_MEMORY,
                                        "centers of rotation on GL: a buffer of %zu bytes "
                                        "exceeds GL_MAX_SHADER_STORAGE_BLOCK_SIZE (%lld)",
                                        bytes[b], info->max_ssbo_bytes);
            return;
        }
    const void *data[BIND_COUNT] = {job->indices, job->values, job->geometry, NULL};
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
        glUniform1ui(LOC_COUNT, job->candidates);
        glUniform1f(LOC_INV_SIGMA2, job->inv_sigma2);
        glUniform1uiv(LOC_SECTIONS, SECTION_COUNT, job->sections);
        GLint local[3] = {0, 0, 0};
        glGetProgramiv(program, GL_COMPUTE_WORK_GROUP_SIZE, local);
        const uint32_t group = local[0] > 0 ? (uint32_t)local[0] : 1u;
        for (uint32_t base = 0; base < job->candidates; base += COR_GL_BATCH) {
            const uint32_t n = job->candidates - base < COR_GL_BATCH ? job->candidates - base
                                                                      : COR_GL_BATCH;
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

ssk_status ssk_cor_gl_integrate(float *dst, const ssk_cor_mesh *m, const ssk_cor_params *params,
                                ssk_gl_context *gl, ssk_error *err)
{
    const uint32_t nv = m->vertex_count, nt = m->triangle_count;
    const uint64_t nb = m->bone_count;
    memset(dst, 0, 4 * (size_t)nv * sizeof(float));
    /* bone pair -> triangles */
    size_t entry_count = 0;
    for (uint32_t t = 0; t < nt; ++t) {
        const size_t n = m->tb_offsets[t + 1] - m->tb_offsets[t];
        entry_count += n * (n > 0 ? n - 1 : 0) / 2;
    }
    pair_entry *entries = malloc((entry_count + 1) * sizeof *entries);
    if (!entries) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
    size_t e = 0;
    for (uint32_t t = 0; t < nt; ++t) {
        const int32_t *tb = m->tb_bones + m->tb_offsets[t];
        const uint32_t n = m->tb_offsets[t + 1] - m->tb_offsets[t];
        for (uint32_t a = 0; a < n; ++a)
            for (uint32_t b = a + 1; b < n; ++b)
                entries[e++] = (pair_entry){(uint64_t)tb[a] * nb + (uint64_t)tb[b], t};
    }
    qsort(entries, entry_count, sizeof *entries, compare_pairs);
    size_t list_count = 0;
    for (size_t i = 0; i < entry_count; ++i)
        if (i == 0 || entries[i].key != entries[i - 1].key) ++list_count;
    uint64_t *keys = malloc((list_count + 1) * sizeof(uint64_t));
    uint32_t *vertices = malloc(((size_t)nv + 1) * sizeof(uint32_t));
    uint32_t *cand_offsets = malloc(((size_t)nv + 2) * sizeof(uint32_t));
    size_t cand_capacity = 1024, cand_count = 0;
    uint32_t *cand = malloc(cand_capacity * 2 * sizeof(uint32_t));
    ssk_status st = SSK_OK;
    if (!keys || !vertices || !cand_offsets || !cand) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
        goto done;
    }
    /* list l: its key and (below) its triangles */
    {
        size_t l = 0;
        for (size_t i = 0; i < entry_count; ++i)
            if (i == 0 || entries[i].key != entries[i - 1].key) keys[l++] = entries[i].key;
    }
    /* the vertices to dispatch and their lists, in pair order */
    uint32_t candidates = 0;
    cand_offsets[0] = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        const uint32_t e0 = m->w_offsets[v], kp = m->w_offsets[v + 1] - e0;
        const size_t before = cand_count;
        for (uint32_t i = 0; i < kp; ++i)
            for (uint32_t j = i + 1; j < kp; ++j) {
                const uint64_t key = (uint64_t)m->w_bones[e0 + i] * nb + (uint64_t)m->w_bones[e0 + j];
                size_t lo = 0, hi = list_count;
                while (lo < hi) {
                    const size_t mid = lo + (hi - lo) / 2;
                    if (keys[mid] < key) lo = mid + 1;
                    else hi = mid;
                }
                if (lo == list_count || keys[lo] != key) continue;
                if (cand_count == cand_capacity) {
                    uint32_t *grown = realloc(cand, cand_capacity * 4 * sizeof(uint32_t));
                    if (!grown) {
                        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                           "centers of rotation: out of memory");
                        goto done;
                    }
                    cand = grown;
                    cand_capacity *= 2;
                }
                cand[2 * cand_count] = (uint32_t)lo;
                cand[2 * cand_count + 1] = (i << 16) | j;
                ++cand_count;
            }
        if (cand_count > before) {
            vertices[candidates++] = v;
            cand_offsets[candidates] = (uint32_t)cand_count;
        }
    }
    if (candidates == 0) goto done;
    /* the uint array */
    {
        const size_t leaf_count = m->leaf_offsets[nt];
        const size_t tb_count = m->tb_offsets[nt], w_count = m->w_offsets[nv];
        if (leaf_count > UINT32_MAX || m->leaf_weight_offsets[nt] + w_count > UINT32_MAX) {
            st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                               "centers of rotation on GL: %zu integration triangles exceed "
                               "32-bit shader indices (raise epsilon)",
                               leaf_count);
            goto done;
        }
        const size_t sizes[SECTION_COUNT] = {
            candidates, (size_t)candidates + 1, 2 * cand_count, (size_t)nv + 1, w_count,
            list_count + 1, entry_count, (size_t)nt + 1, tb_count, (size_t)nt + 1,
            (size_t)nt + 1, 1};
        gl_cor_job job = {0};
        size_t total = 0;
        for (int s = 0; s < SECTION_COUNT; ++s) {
            job.sections[s] = (uint32_t)total;
            total += sizes[s];
        }
        if (total > UINT32_MAX) {
            st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                               "centers of rotation on GL: index data exceeds 32-bit indices");
            goto done;
        }
        uint32_t *idx = malloc(total * sizeof(uint32_t));
        float *values = malloc((w_count + m->leaf_weight_offsets[nt] + 1) * sizeof(float));
        if (!idx || !values) {
            free(idx);
            free(values);
            st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
            goto done;
        }
        uint32_t *p = idx;
        memcpy(p + job.sections[SEC_VERTICES], vertices, candidates * sizeof(uint32_t));
        memcpy(p + job.sections[SEC_CAND_OFFSETS], cand_offsets,
               ((size_t)candidates + 1) * sizeof(uint32_t));
        memcpy(p + job.sections[SEC_CAND_LISTS], cand, 2 * cand_count * sizeof(uint32_t));
        memcpy(p + job.sections[SEC_W_OFFSETS], m->w_offsets, ((size_t)nv + 1) * sizeof(uint32_t));
        for (size_t i = 0; i < w_count; ++i) p[job.sections[SEC_W_BONES] + i] = (uint32_t)m->w_bones[i];
        {
            size_t l = 0;
            for (size_t i = 0; i < entry_count; ++i) {
                if (i == 0 || entries[i].key != entries[i - 1].key)
                    p[job.sections[SEC_LIST_OFFSETS] + l++] = (uint32_t)i;
                p[job.sections[SEC_LIST_TRIANGLES] + i] = entries[i].triangle;
            }
            p[job.sections[SEC_LIST_OFFSETS] + l] = (uint32_t)entry_count;
        }
        memcpy(p + job.sections[SEC_TB_OFFSETS], m->tb_offsets, ((size_t)nt + 1) * sizeof(uint32_t));
        for (size_t i = 0; i < tb_count; ++i) p[job.sections[SEC_TB_BONES] + i] = (uint32_t)m->tb_bones[i];
        for (uint32_t t = 0; t <= nt; ++t) {
            p[job.sections[SEC_LEAF_OFFSETS] + t] = (uint32_t)m->leaf_offsets[t];
            p[job.sections[SEC_LEAF_WEIGHT_OFFSETS] + t] = (uint32_t)m->leaf_weight_offsets[t];
        }
        p[job.sections[SEC_LEAF_WEIGHT_BASE]] = (uint32_t)w_count;
        memcpy(values, m->w_values, w_count * sizeof(float));
        memcpy(values + w_count, m->leaf_weights, m->leaf_weight_offsets[nt] * sizeof(float));
        float *sums = malloc(((size_t)candidates * 4 + 1) * sizeof(float));
        if (!sums) {
            free(idx);
            free(values);
            st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "centers of rotation: out of memory");
            goto done;
        }
        job.gl = gl;
        job.indices = idx;
        job.index_count = total;
        job.values = values;
        job.value_count = w_count + m->leaf_weight_offsets[nt];
        job.geometry = m->leaf_geometry;
        job.leaf_count = leaf_count;
        job.candidates = candidates;
        job.inv_sigma2 = 1.0f / (params->sigma * params->sigma);
        job.sums = sums;
        job.err = err;
        ssk_gl_context_run(gl, job_integrate, &job);
        st = job.status;
        if (st == SSK_OK)
            for (uint32_t c = 0; c < candidates; ++c)
                memcpy(dst + 4 * (size_t)vertices[c], sums + 4 * (size_t)c, 4 * sizeof(float));
        free(sums);
        free(idx);
        free(values);
    }
done:
    free(entries);
    free(keys);
    free(vertices);
    free(cand_offsets);
    free(cand);
    return st;
}
