/*
 * rig.c — the rig model: validation, copying, weight normalization, vertex
 * adjacency and vertex-to-triangle CSR, default bone segments.
 */
#include "model/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a refused value is (issue #19): NaN, inf, or finite but too large
 * for the kernels. */
#define HUGE_VALUE " (NaN, inf, or magnitude > 1e15: SSK_MAX_MAGNITUDE)"

/* Fraction of the skeleton extent used as the length of a leaf bone whose
 * tail is not given. */
#define SSK_LEAF_BONE_FRACTION 0.1f

static void mesh_free(ssk_mesh *m)
{
    free(m->name);
    free(m->positions);
    free(m->triangles);
    free(m->bone_indices);
    free(m->weights);
    free(m->adjacency_offsets);
    free(m->adjacency);
    free(m->vertex_triangle_offsets);
    free(m->vertex_triangles);
    free(m->shading_triangle_offsets);
    free(m->shading_triangles);
}

void ssk_rig_destroy(ssk_rig *rig)
{
    if (!rig) return;
    if (rig->bones)
        for (uint32_t b = 0; b < rig->bone_count; ++b) free(rig->bones[b].name);
    if (rig->meshes)
        for (uint32_t m = 0; m < rig->mesh_count; ++m) mesh_free(&rig->meshes[m]);
    free(rig->bones);
    free(rig->meshes);
    ssk_weld_free(&rig->weld);
    free(rig);
}

/* --- validation ---------------------------------------------------------- */

static ssk_status validate_skeleton(const ssk_skeleton_desc *sk, ssk_error *err)
{
    uint32_t nb = sk->bone_count;
    if (nb == 0) return SSK_OK;
    if (!sk->parents || !sk->bind_matrices)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "skeleton of %u bones needs parents and bind_matrices", nb);
    for (uint32_t b = 0; b < nb; ++b) {
        int32_t p = sk->parents[b];
        if (p < -1 || p >= (int32_t)nb)
            return ssk_error_set(err, SSK_ERROR_PARENT_INDEX,
                                 "bone %u has parent index %d, expected -1 or [0, %u)", b, p, nb);
        if (!ssk_floats_bounded(sk->bind_matrices + 16 * (size_t)b, 16))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "bind matrix of bone %u has a value out of range" HUGE_VALUE, b);
        if (sk->heads && !ssk_floats_bounded(sk->heads + 3 * (size_t)b, 3))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "head of bone %u is out of range" HUGE_VALUE, b);
        if (sk->tails && !ssk_floats_bounded(sk->tails + 3 * (size_t)b, 3))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "tail of bone %u is out of range" HUGE_VALUE, b);
    }
    /* Cycle detection: walk each chain to a root, coloring bones. */
    uint8_t *state = calloc(nb, 1); /* 0 unvisited, 1 on current walk, 2 done */
    if (!state) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    ssk_status st = SSK_OK;
    for (uint32_t b = 0; b < nb && st == SSK_OK; ++b) {
        int32_t c = (int32_t)b;
        while (c >= 0 && state[c] == 0) {
            state[c] = 1;
            c = sk->parents[c];
        }
        if (c >= 0 && state[c] == 1)
            st = ssk_error_set(err, SSK_ERROR_PARENT_CYCLE,
                               "bone parents form a cycle through bone %d", c);
        for (c = (int32_t)b; c >= 0 && state[c] == 1; c = sk->parents[c]) state[c] = 2;
    }
    free(state);
    return st;
}

static ssk_status validate_mesh(const ssk_mesh_desc *md, uint32_t mi, uint32_t nb,
                                ssk_error *err)
{
    char label[96];
    if (md->name)
        snprintf(label, sizeof label, "mesh '%.64s'", md->name);
    else
        snprintf(label, sizeof label, "mesh %u", mi);
    uint32_t nv = md->vertex_count, nf = md->triangle_count, k = md->influence_count;
    if (nv == 0 || !md->positions)
        return ssk_error_set(err, SSK_ERROR_EMPTY_MESH, "%s has no vertices", label);
    for (uint32_t v = 0; v < nv; ++v) {
        const float *p = md->positions + 3 * (size_t)v;
        if (!ssk_floats_bounded(p, 3))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "%s: vertex %u has a position out of range (%g, %g, %g)"
                                 HUGE_VALUE,
                                 label, v, p[0], p[1], p[2]);
    }
    if (nf > 0 && !md->triangles)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "%s: %u triangles but no triangle array", label, nf);
    for (size_t i = 0; i < 3 * (size_t)nf; ++i) {
        int32_t t = md->triangles[i];
        if (t < 0 || (uint32_t)t >= nv)
            return ssk_error_set(err, SSK_ERROR_TRIANGLE_INDEX,
                                 "%s: triangle %zu uses vertex %d, expected [0, %u)", label,
                                 i / 3, t, nv);
    }
    if (k > SSK_MAX_INFLUENCES)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "%s: %u influences per vertex, at most %d supported", label, k,
                             SSK_MAX_INFLUENCES);
    if (k > 0 && (!md->bone_indices || !md->weights))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "%s: %u influences but no bone_indices or weights", label, k);
    for (size_t i = 0; i < (size_t)nv * k; ++i) {
        int32_t b = md->bone_indices[i];
        float w = md->weights[i];
        if (!isfinite(w))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "%s: vertex %zu has a non-finite weight", label, i / k);
        if (w < 0.0f)
            return ssk_error_set(err, SSK_ERROR_NEGATIVE_WEIGHT,
                                 "%s: vertex %zu has negative weight %g for bone %d", label,
                                 i / k, w, b);
        if (b < 0 || (uint32_t)b >= nb) {
            if (w == 0.0f) continue; /* padding slot: index ignored, stored as 0 */
            return ssk_error_set(err, SSK_ERROR_BONE_INDEX,
                                 "%s: vertex %zu uses bone %d, expected [0, %u)", label, i / k,
                                 b, nb);
        }
    }
    if (md->object_matrix) {
        float inv[16];
        if (!ssk_floats_bounded(md->object_matrix, 16))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "%s: object matrix has a value out of range" HUGE_VALUE, label);
        if (!ssk_mat4_invert(inv, md->object_matrix))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "%s: object matrix is singular", label);
    }
    return SSK_OK;
}

/* --- construction -------------------------------------------------------- */

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* CSR of unique edge neighbors and of triangles around each vertex. */
static bool build_topology(ssk_mesh *m)
{
    uint32_t nv = m->vertex_count, nf = m->triangle_count;
    m->adjacency_offsets = calloc((size_t)nv + 1, sizeof(uint32_t));
    m->vertex_triangle_offsets = calloc((size_t)nv + 1, sizeof(uint32_t));
    uint32_t *fill = calloc((size_t)nv + 1, sizeof(uint32_t));
    uint32_t *raw = malloc((6 * (size_t)nf + 1) * sizeof(uint32_t));
    m->vertex_triangles = malloc((3 * (size_t)nf + 1) * sizeof(uint32_t));
    if (!m->adjacency_offsets || !m->vertex_triangle_offsets || !fill || !raw ||
        !m->vertex_triangles) {
        free(fill);
        free(raw);
        return false;
    }
    const int32_t *t = m->triangles;
    for (size_t i = 0; i < 3 * (size_t)nf; ++i) m->vertex_triangle_offsets[t[i] + 1]++;
    for (uint32_t v = 0; v < nv; ++v)
        m->vertex_triangle_offsets[v + 1] += m->vertex_triangle_offsets[v];
    for (uint32_t f = 0; f < nf; ++f)
        for (int c = 0; c < 3; ++c) {
            uint32_t v = (uint32_t)t[3 * f + c];
            m->vertex_triangles[m->vertex_triangle_offsets[v] + fill[v]++] = f;
        }
    /* Edge neighbors with duplicates: each triangle corner sees two others. */
    uint32_t *raw_off = m->adjacency_offsets; /* reuse as raw offsets first */
    for (uint32_t v = 0; v <= nv; ++v) raw_off[v] = 2 * m->vertex_triangle_offsets[v];
    memset(fill, 0, ((size_t)nv + 1) * sizeof(uint32_t));
    for (uint32_t f = 0; f < nf; ++f)
        for (int c = 0; c < 3; ++c) {
            uint32_t v = (uint32_t)t[3 * f + c];
            raw[raw_off[v] + fill[v]++] = (uint32_t)t[3 * f + (c + 1) % 3];
            raw[raw_off[v] + fill[v]++] = (uint32_t)t[3 * f + (c + 2) % 3];
        }
    /* Sort, dedupe and compact in place (write index never passes read). */
    uint32_t write = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        uint32_t begin = raw_off[v], end = raw_off[v + 1];
        qsort(raw + begin, end - begin, sizeof(uint32_t), compare_u32);
        raw_off[v] = write;
        for (uint32_t i = begin; i < end; ++i)
            if (i == begin || raw[i] != raw[i - 1]) {
                if (raw[i] != v) raw[write++] = raw[i];
            }
    }
    raw_off[nv] = write;
    free(fill);
    m->adjacency = realloc(raw, ((size_t)write + 1) * sizeof(uint32_t));
    if (!m->adjacency) m->adjacency = raw;
    return true;
}

static ssk_status copy_mesh(ssk_mesh *m, const ssk_mesh_desc *md, uint32_t mi, ssk_error *err)
{
    char fallback[32];
    snprintf(fallback, sizeof fallback, "mesh_%u", mi);
    uint32_t nv = md->vertex_count, nf = md->triangle_count, k = md->influence_count;
    m->vertex_count = nv;
    m->triangle_count = nf;
    m->influence_count = k;
    m->name = ssk_strdup(md->name ? md->name : fallback);
    m->positions = malloc(3 * (size_t)nv * sizeof(float));
    m->triangles = malloc((3 * (size_t)nf + 1) * sizeof(int32_t));
    m->bone_indices = calloc((size_t)nv * k + 1, sizeof(int32_t));
    m->weights = calloc((size_t)nv * k + 1, sizeof(float));
    if (!m->name || !m->positions || !m->triangles || !m->bone_indices || !m->weights)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory copying mesh %u", mi);
    memcpy(m->positions, md->positions, 3 * (size_t)nv * sizeof(float));
    if (nf) memcpy(m->triangles, md->triangles, 3 * (size_t)nf * sizeof(int32_t));
    if (md->object_matrix)
        memcpy(m->object_matrix, md->object_matrix, sizeof m->object_matrix);
    else
        ssk_mat4_identity(m->object_matrix);
    for (uint32_t v = 0; v < nv; ++v) {
        const float *w = md->weights + (size_t)v * k;
        double sum = 0.0;
        for (uint32_t i = 0; i < k; ++i) sum += w[i];
        bool weighted = sum > SSK_WEIGHT_EPSILON;
        for (uint32_t i = 0; i < k; ++i) {
            int32_t b = md->bone_indices[(size_t)v * k + i];
            bool keep = weighted && w[i] > 0.0f;
            m->bone_indices[(size_t)v * k + i] = keep ? b : 0;
            m->weights[(size_t)v * k + i] = keep ? (float)(w[i] / sum) : 0.0f;
        }
    }
    if (!build_topology(m))
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory building adjacency");
    return SSK_OK;
}

static void default_segments(ssk_rig *rig, const ssk_skeleton_desc *sk)
{
    uint32_t nb = rig->bone_count;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t b = 0; b < nb; ++b) {
        ssk_bone *bone = &rig->bones[b];
        const float *m = bone->bind_matrix;
        if (sk->heads)
            memcpy(bone->head, sk->heads + 3 * (size_t)b, sizeof bone->head);
        else {
            bone->head[0] = m[3];
            bone->head[1] = m[7];
            bone->head[2] = m[11];
        }
        for (int k = 0; k < 3; ++k) {
            lo[k] = fminf(lo[k], bone->head[k]);
            hi[k] = fmaxf(hi[k], bone->head[k]);
        }
    }
    if (sk->tails) {
        for (uint32_t b = 0; b < nb; ++b)
            memcpy(rig->bones[b].tail, sk->tails + 3 * (size_t)b, sizeof rig->bones[b].tail);
        return;
    }
    float extent = sqrtf((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                         (hi[2] - lo[2]) * (hi[2] - lo[2]));
    if (!(extent > 0.0f)) extent = 1.0f;
    for (uint32_t b = 0; b < nb; ++b) {
        ssk_bone *bone = &rig->bones[b];
        float len = 0.0f;
        for (uint32_t c = 0; c < nb; ++c) {
            if (rig->bones[c].parent != (int32_t)b) continue;
            float d[3] = {rig->bones[c].head[0] - bone->head[0],
                          rig->bones[c].head[1] - bone->head[1],
                          rig->bones[c].head[2] - bone->head[2]};
            float l = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            if (l > 0.0f && (len == 0.0f || l < len)) len = l;
        }
        if (len == 0.0f) len = SSK_LEAF_BONE_FRACTION * extent;
        const float *m = bone->bind_matrix; /* Y axis = column 1 */
        float y[3] = {m[1], m[5], m[9]};
        float ly = sqrtf(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
        if (!(ly > 0.0f)) {
            y[0] = 0.0f; y[1] = 1.0f; y[2] = 0.0f; ly = 1.0f;
        }
        for (int k = 0; k < 3; ++k) bone->tail[k] = bone->head[k] + y[k] / ly * len;
    }
}

ssk_status ssk_rig_create(ssk_rig **out_rig, const ssk_skeleton_desc *skeleton,
                          const ssk_mesh_desc *meshes, uint32_t mesh_count, ssk_error *err)
{
    if (out_rig) *out_rig = NULL;
    if (!out_rig || !skeleton)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_rig_create: out_rig and skeleton must not be NULL");
    if (mesh_count == 0 || !meshes)
        return ssk_error_set(err, SSK_ERROR_EMPTY_MESH, "rig has no meshes");
    ssk_status st = validate_skeleton(skeleton, err);
    if (st != SSK_OK) return st;
    uint64_t total = 0;
    for (uint32_t m = 0; m < mesh_count; ++m) {
        st = validate_mesh(&meshes[m], m, skeleton->bone_count, err);
        if (st != SSK_OK) return st;
        total += meshes[m].vertex_count;
    }
    if (total > UINT32_MAX / 3)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "rig has %llu vertices, at most %u supported",
                             (unsigned long long)total, UINT32_MAX / 3);

    ssk_rig *rig = calloc(1, sizeof *rig);
    if (!rig) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    rig->bone_count = skeleton->bone_count;
    rig->mesh_count = mesh_count;
    rig->vertex_count = (uint32_t)total;
    rig->bones = calloc(rig->bone_count + 1, sizeof(ssk_bone));
    rig->meshes = calloc(mesh_count, sizeof(ssk_mesh));
    if (!rig->bones || !rig->meshes) {
        ssk_rig_destroy(rig);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t b = 0; b < rig->bone_count; ++b) {
        ssk_bone *bone = &rig->bones[b];
        char fallback[32];
        snprintf(fallback, sizeof fallback, "bone_%u", b);
        const char *name = skeleton->names && skeleton->names[b] ? skeleton->names[b] : fallback;
        bone->name = ssk_strdup(name);
        if (!bone->name) {
            ssk_rig_destroy(rig);
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        }
        bone->parent = skeleton->parents[b];
        memcpy(bone->bind_matrix, skeleton->bind_matrices + 16 * (size_t)b,
               sizeof bone->bind_matrix);
    }
    default_segments(rig, skeleton);

    uint32_t first = 0;
    uint8_t *deforming = calloc(rig->bone_count + 1, 1);
    if (!deforming) {
        ssk_rig_destroy(rig);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t m = 0; m < mesh_count; ++m) {
        ssk_mesh *mesh = &rig->meshes[m];
        mesh->first_vertex = first;
        first += meshes[m].vertex_count;
        st = copy_mesh(mesh, &meshes[m], m, err);
        if (st != SSK_OK) {
            free(deforming);
            ssk_rig_destroy(rig);
            return st;
        }
        uint32_t k = mesh->influence_count;
        for (uint32_t v = 0; v < mesh->vertex_count; ++v) {
            uint32_t nonzero = 0;
            for (uint32_t i = 0; i < k; ++i)
                if (mesh->weights[(size_t)v * k + i] > 0.0f) {
                    nonzero++;
                    deforming[mesh->bone_indices[(size_t)v * k + i]] = 1;
                }
            if (nonzero > rig->max_influences) rig->max_influences = nonzero;
        }
    }
    for (uint32_t b = 0; b < rig->bone_count; ++b) rig->deforming_bone_count += deforming[b];
    free(deforming);
    st = ssk_weld_build(rig, meshes, err);
    if (st != SSK_OK) {
        ssk_rig_destroy(rig);
        return st;
    }
    *out_rig = rig;
    return ssk_error_ok(err);
}

/* --- accessors ----------------------------------------------------------- */

uint32_t ssk_rig_bone_count(const ssk_rig *rig) { return rig ? rig->bone_count : 0; }
uint32_t ssk_rig_mesh_count(const ssk_rig *rig) { return rig ? rig->mesh_count : 0; }
uint32_t ssk_rig_vertex_count(const ssk_rig *rig) { return rig ? rig->vertex_count : 0; }
uint32_t ssk_rig_deforming_bone_count(const ssk_rig *rig)
{
    return rig ? rig->deforming_bone_count : 0;
}
uint32_t ssk_rig_max_influences(const ssk_rig *rig) { return rig ? rig->max_influences : 0; }

int32_t ssk_rig_find_bone(const ssk_rig *rig, const char *name)
{
    if (!rig || !name) return -1;
    for (uint32_t b = 0; b < rig->bone_count; ++b)
        if (strcmp(rig->bones[b].name, name) == 0) return (int32_t)b;
    return -1;
}

ssk_status ssk_rig_mesh(const ssk_rig *rig, uint32_t mesh, ssk_mesh_view *out, ssk_error *err)
{
    if (!rig || !out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_rig_mesh: NULL argument");
    if (mesh >= rig->mesh_count)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "mesh %u out of range [0, %u)",
                             mesh, rig->mesh_count);
    const ssk_mesh *m = &rig->meshes[mesh];
    out->name = m->name;
    out->vertex_count = m->vertex_count;
    out->triangle_count = m->triangle_count;
    out->influence_count = m->influence_count;
    out->first_vertex = m->first_vertex;
    out->positions = m->positions;
    out->triangles = m->triangles;
    out->bone_indices = m->bone_indices;
    out->weights = m->weights;
    out->adjacency_offsets = m->adjacency_offsets;
    out->adjacency = m->adjacency;
    out->vertex_triangle_offsets = m->vertex_triangle_offsets;
    out->vertex_triangles = m->vertex_triangles;
    out->object_matrix = m->object_matrix;
    return ssk_error_ok(err);
}

ssk_status ssk_rig_bone(const ssk_rig *rig, uint32_t bone, ssk_bone_view *out, ssk_error *err)
{
    if (!rig || !out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_rig_bone: NULL argument");
    if (bone >= rig->bone_count)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "bone %u out of range [0, %u)",
                             bone, rig->bone_count);
    const ssk_bone *b = &rig->bones[bone];
    out->name = b->name;
    out->parent = b->parent;
    out->bind_matrix = b->bind_matrix;
    out->head = b->head;
    out->tail = b->tail;
    return ssk_error_ok(err);
}

ssk_status ssk_matrices_validate(const float *matrices, uint32_t count, const char *what,
                                 ssk_error *err)
{
    if (!matrices && count)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "%s: NULL matrix array",
                             what ? what : "matrices");
    for (uint32_t i = 0; i < count; ++i)
        if (!ssk_floats_bounded(matrices + 16 * (size_t)i, 16))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "%s: matrix %u has a value out of range" HUGE_VALUE,
                                 what ? what : "matrices", i);
    return ssk_error_ok(err);
}
