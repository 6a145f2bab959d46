/*
 * weld.c — welded topology: vertices of a rig that coincide at rest are one
 * surface point for everything that uses neighbors.
 *
 * Importers split a vertex wherever its UVs or normals differ (Assimp's
 * aiProcess_JoinIdenticalVertices keeps such copies apart), and characters
 * are often several meshes that share a border. Each copy is a vertex of its
 * own for skinning and for the output, but treated as an open boundary by
 * the methods that look at neighbors, the two sides of a seam relax apart.
 * At rig creation this file finds the coincident vertices and builds:
 *
 * - point[v]: the representative of v's group (its smallest whole-rig
 *   index); v is a "member" when point[v] != v. The backends copy the
 *   representative's output onto every member after each kernel that works
 *   from the binding or from neighbors (backend.h, ssk_kernel_welds), so
 *   coincident vertices come out of those methods at the same place, bit
 *   for bit; LBS and DQS follow the skin weights, as Blender does;
 * - the welded adjacency (whole-rig CSR): the neighbors of v are the
 *   representatives of the triangle-edge neighbors of every vertex of v's
 *   group, v's own representative excluded, sorted. Every vertex of a group
 *   has the same list, and no list names a member, so attachment smoothing
 *   and the springs see one surface across seams and mesh borders;
 * - per mesh, the shading triangles of v (vertex normals): the triangles
 *   around every vertex of v's group that lies in the same mesh and whose
 *   source normal is within SSK_WELD_HARD_EDGE_DEGREES of v's (all of
 *   them when the source gives no normals). A hard edge that the source
 *   marks with different normals stays hard; a UV seam shades smooth.
 *   Separate meshes keep their own normals, as separate objects shade.
 *
 * Coincident: within SSK_WELD_RELATIVE_TOLERANCE of the rig's rest
 * bounding-box diagonal in rig space (positions moved by their object
 * matrices), closed transitively (union-find). Found on a uniform grid of
 * that cell size: a pair closer than the tolerance lies in neighboring cells.
 */
#include "model/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct weld_cell {
    int64_t key[3];
    uint32_t vertex;
} weld_cell;

static int compare_cells(const void *pa, const void *pb)
{
    const weld_cell *a = pa, *b = pb;
    for (int k = 0; k < 3; ++k)
        if (a->key[k] != b->key[k]) return a->key[k] < b->key[k] ? -1 : 1;
    return a->vertex < b->vertex ? -1 : a->vertex > b->vertex;
}

static int compare_key(const int64_t key[3], const weld_cell *c)
{
    for (int k = 0; k < 3; ++k)
        if (key[k] != c->key[k]) return key[k] < c->key[k] ? -1 : 1;
    return 0;
}

/* First cell with key >= `key` in sorted cells[0..n). */
static size_t lower_bound(const weld_cell *cells, size_t n, const int64_t key[3])
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare_key(key, &cells[mid]) > 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static uint32_t find_root(uint32_t *parent, uint32_t v)
{
    while (parent[v] != v) {
        parent[v] = parent[parent[v]];
        v = parent[v];
    }
    return v;
}

/* The smaller root becomes the parent, so a root is its group's minimum. */
static void unite(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a < b) parent[b] = a;
    else if (b < a) parent[a] = b;
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts and removes duplicates; returns the new count. */
static uint32_t sort_unique(uint32_t *values, uint32_t n)
{
    if (n < 2) return n;
    qsort(values, n, sizeof *values, compare_u32);
    uint32_t w = 1;
    for (uint32_t i = 1; i < n; ++i)
        if (values[i] != values[w - 1]) values[w++] = values[i];
    return w;
}

void ssk_weld_free(ssk_weld *w)
{
    free(w->point);
    free(w->members);
    free(w->member_meshes);
    free(w->group_offsets);
    free(w->group_vertices);
    free(w->adjacency_offsets);
    free(w->adjacency);
    memset(w, 0, sizeof *w);
}

/* Rig-space rest positions of every vertex into dst (#V by 3). */
static void rig_positions(float *dst, const ssk_rig *rig)
{
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t v = 0; v < mesh->vertex_count; ++v)
            ssk_mat4_transform_point(dst + 3 * ((size_t)mesh->first_vertex + v),
                                     mesh->object_matrix, mesh->positions + 3 * (size_t)v);
    }
}

/* Groups coincident vertices: w->point, tolerance. */
static bool find_groups(ssk_weld *w, const ssk_rig *rig, const float *p)
{
    const uint32_t nv = rig->vertex_count;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < (size_t)nv * 3; ++i) {
        lo[i % 3] = fmin(lo[i % 3], p[i]);
        hi[i % 3] = fmax(hi[i % 3], p[i]);
    }
    double diag = 0.0;
    for (int k = 0; k < 3; ++k) diag += (hi[k] - lo[k]) * (hi[k] - lo[k]);
    diag = nv ? sqrt(diag) : 0.0;
    double tol = SSK_WELD_RELATIVE_TOLERANCE * diag;
    w->tolerance = (float)tol;
    /* A degenerate rig (one point) welds exact copies only: cell size 1. */
    const double cell = tol > 0.0 ? tol : 1.0;

    for (uint32_t v = 0; v < nv; ++v) w->point[v] = v;
    weld_cell *cells = malloc(((size_t)nv + 1) * sizeof *cells);
    if (!cells) return false;
    for (uint32_t v = 0; v < nv; ++v) {
        for (int k = 0; k < 3; ++k)
            cells[v].key[k] = (int64_t)floor((p[3 * (size_t)v + k] - lo[k]) / cell);
        cells[v].vertex = v;
    }
    qsort(cells, nv, sizeof *cells, compare_cells);
    const double tol2 = tol * tol;
    /* Each pair is found from the vertex whose cell comes first in the sort
     * order: its own cell (z and z + 1), then the cells at dy = +1 and at
     * dx = +1, each a contiguous run of z - 1 .. z + 1 in sorted order. */
    static const int8_t runs[5][3] = {{0, 0, 0}, {0, 1, -1}, {1, -1, -1}, {1, 0, -1}, {1, 1, -1}};
    for (size_t i = 0; i < nv; ++i) {
        const weld_cell *c = &cells[i];
        const float *pi = p + 3 * (size_t)c->vertex;
        for (int r = 0; r < 5; ++r) {
            const int64_t first[3] = {c->key[0] + runs[r][0], c->key[1] + runs[r][1],
                                      c->key[2] + runs[r][2]};
            const int64_t last_z = c->key[2] + 1;
            for (size_t j = r == 0 ? i + 1 : lower_bound(cells, nv, first); j < nv; ++j) {
                const weld_cell *o = &cells[j];
                if (o->key[0] != first[0] || o->key[1] != first[1] || o->key[2] > last_z) break;
                const float *pu = p + 3 * (size_t)o->vertex;
                double d2 = 0.0;
                for (int k = 0; k < 3; ++k)
                    d2 += ((double)pu[k] - pi[k]) * ((double)pu[k] - pi[k]);
                if (d2 <= tol2) unite(w->point, c->vertex, o->vertex);
            }
        }
    }
    free(cells);
    for (uint32_t v = 0; v < nv; ++v) w->point[v] = find_root(w->point, v);
    return true;
}

/* Members, group CSR (vertices of each group, ascending, listed under its
 * representative; other vertices have empty ranges), counts. */
static bool list_groups(ssk_weld *w, const ssk_rig *rig, const uint32_t *mesh_of)
{
    const uint32_t nv = rig->vertex_count;
    w->group_offsets = calloc((size_t)nv + 1, sizeof *w->group_offsets);
    w->group_vertices = malloc(((size_t)nv + 1) * sizeof *w->group_vertices);
    if (!w->group_offsets || !w->group_vertices) return false;
    for (uint32_t v = 0; v < nv; ++v) {
        w->group_offsets[w->point[v] + 1]++;
        w->member_count += w->point[v] != v;
    }
    for (uint32_t v = 0; v < nv; ++v) w->group_offsets[v + 1] += w->group_offsets[v];
    w->members = malloc(((size_t)w->member_count + 1) * sizeof *w->members);
    w->member_meshes = malloc(((size_t)w->member_count * 2 + 1) * sizeof *w->member_meshes);
    uint32_t *fill = calloc((size_t)nv + 1, sizeof *fill);
    if (!w->members || !w->member_meshes || !fill) {
        free(fill);
        return false;
    }
    uint32_t nm = 0;
    for (uint32_t v = 0; v < nv; ++v) { /* ascending: members and groups sorted */
        uint32_t r = w->point[v];
        w->group_vertices[w->group_offsets[r] + fill[r]++] = v;
        if (r != v) {
            w->member_meshes[2 * (size_t)nm] = mesh_of[v];
            w->member_meshes[2 * (size_t)nm + 1] = mesh_of[r];
            w->members[nm++] = v;
        }
    }
    free(fill);
    for (uint32_t r = 0; r < nv; ++r) {
        uint32_t first = w->group_offsets[r], end = w->group_offsets[r + 1];
        if (end - first < 2) continue;
        w->group_count++;
        for (uint32_t i = first + 1; i < end; ++i)
            if (mesh_of[w->group_vertices[i]] != mesh_of[w->group_vertices[first]]) {
                w->across_mesh_group_count++;
                break;
            }
    }
    return true;
}

/* The welded adjacency (see the file comment). */
static bool build_adjacency(ssk_weld *w, const ssk_rig *rig, const uint32_t *mesh_of)
{
    const uint32_t nv = rig->vertex_count;
    w->adjacency_offsets = calloc((size_t)nv + 1, sizeof *w->adjacency_offsets);
    if (!w->adjacency_offsets) return false;
    /* Upper bound of a group's list: the sum of its vertices' degrees. */
    size_t bound = 0, scratch_size = 1;
    for (uint32_t r = 0; r < nv; ++r) {
        size_t group_bound = 0;
        for (uint32_t i = w->group_offsets[r]; i < w->group_offsets[r + 1]; ++i) {
            uint32_t v = w->group_vertices[i];
            const ssk_mesh *mesh = &rig->meshes[mesh_of[v]];
            uint32_t local = v - mesh->first_vertex;
            group_bound += mesh->adjacency_offsets[local + 1] - mesh->adjacency_offsets[local];
        }
        bound += group_bound * (w->group_offsets[r + 1] - w->group_offsets[r]);
        if (group_bound > scratch_size) scratch_size = group_bound;
    }
    if (bound > UINT32_MAX) return false;
    uint32_t *scratch = malloc(scratch_size * sizeof *scratch);
    w->adjacency = malloc((bound + 1) * sizeof *w->adjacency);
    if (!scratch || !w->adjacency) {
        free(scratch);
        return false;
    }
    /* Representatives in ascending order come before their members (a
     * representative is its group's smallest index), so a member copies its
     * representative's list. */
    uint32_t write = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        uint32_t r = w->point[v];
        uint32_t n = 0;
        if (r == v) {
            for (uint32_t i = w->group_offsets[r]; i < w->group_offsets[r + 1]; ++i) {
                uint32_t g = w->group_vertices[i];
                const ssk_mesh *mesh = &rig->meshes[mesh_of[g]];
                uint32_t local = g - mesh->first_vertex;
                for (uint32_t e = mesh->adjacency_offsets[local];
                     e < mesh->adjacency_offsets[local + 1]; ++e) {
                    uint32_t q = w->point[mesh->first_vertex + mesh->adjacency[e]];
                    if (q != r) scratch[n++] = q;
                }
            }
            n = sort_unique(scratch, n);
            memcpy(w->adjacency + write, scratch, (size_t)n * sizeof *scratch);
        } else {
            uint32_t first = w->adjacency_offsets[r];
            n = w->adjacency_offsets[r + 1] - first;
            memmove(w->adjacency + write, w->adjacency + first, (size_t)n * sizeof *scratch);
        }
        write += n;
        w->adjacency_offsets[v + 1] = write;
    }
    free(scratch);
    uint32_t *shrunk = realloc(w->adjacency, ((size_t)write + 1) * sizeof *shrunk);
    if (shrunk) w->adjacency = shrunk;
    return true;
}

static bool normals_agree(const float *a, const float *b)
{
    double dot = 0.0, la = 0.0, lb = 0.0;
    for (int k = 0; k < 3; ++k) {
        dot += (double)a[k] * b[k];
        la += (double)a[k] * a[k];
        lb += (double)b[k] * b[k];
    }
    if (!(la > 0.0) || !(lb > 0.0)) return true; /* no direction to keep apart */
    return dot >= cos(SSK_WELD_HARD_EDGE_DEGREES * 3.14159265358979323846 / 180.0) * sqrt(la * lb);
}

/* Shading triangles of every vertex of mesh m (see the file comment). */
static bool build_shading(ssk_weld *w, ssk_mesh *mesh, const float *source_normals)
{
    const uint32_t nv = mesh->vertex_count, base = mesh->first_vertex;
    const uint32_t *vto = mesh->vertex_triangle_offsets;
    mesh->shading_triangle_offsets = calloc((size_t)nv + 1, sizeof(uint32_t));
    if (!mesh->shading_triangle_offsets) return false;
    size_t bound = 0, scratch_size = 1;
    for (uint32_t v = 0; v < nv; ++v) {
        uint32_t r = w->point[base + v];
        size_t n = 0;
        for (uint32_t i = w->group_offsets[r]; i < w->group_offsets[r + 1]; ++i) {
            uint32_t g = w->group_vertices[i];
            if (g >= base && g < base + nv) n += vto[g - base + 1] - vto[g - base];
        }
        bound += n;
        if (n > scratch_size) scratch_size = n;
    }
    if (bound > UINT32_MAX) return false;
    mesh->shading_triangles = malloc((bound + 1) * sizeof(uint32_t));
    uint32_t *scratch = malloc(scratch_size * sizeof *scratch);
    if (!mesh->shading_triangles || !scratch) {
        free(scratch);
        return false;
    }
    uint32_t write = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        uint32_t r = w->point[base + v], n = 0;
        for (uint32_t i = w->group_offsets[r]; i < w->group_offsets[r + 1]; ++i) {
            uint32_t g = w->group_vertices[i];
            if (g < base || g >= base + nv) continue; /* another mesh */
            uint32_t u = g - base;
            if (u != v && source_normals) {
                if (!normals_agree(source_normals + 3 * (size_t)u, source_normals + 3 * (size_t)v)) {
                    if (u > v) w->hard_edge_pair_count++;
                    continue;
                }
            }
            for (uint32_t e = vto[u]; e < vto[u + 1]; ++e) scratch[n++] = mesh->vertex_triangles[e];
        }
        n = sort_unique(scratch, n);
        memcpy(mesh->shading_triangles + write, scratch, (size_t)n * sizeof *scratch);
        write += n;
        mesh->shading_triangle_offsets[v + 1] = write;
    }
    free(scratch);
    return true;
}

ssk_status ssk_weld_build(ssk_rig *rig, const ssk_mesh_desc *meshes, ssk_error *err)
{
    ssk_weld *w = &rig->weld;
    const uint32_t nv = rig->vertex_count;
    float *p = malloc(((size_t)nv * 3 + 1) * sizeof *p);
    uint32_t *mesh_of = malloc(((size_t)nv + 1) * sizeof *mesh_of);
    w->point = malloc(((size_t)nv + 1) * sizeof *w->point);
    bool ok = p && mesh_of && w->point;
    if (ok) {
        for (uint32_t m = 0; m < rig->mesh_count; ++m)
            for (uint32_t v = 0; v < rig->meshes[m].vertex_count; ++v)
                mesh_of[rig->meshes[m].first_vertex + v] = m;
        rig_positions(p, rig);
        ok = find_groups(w, rig, p) && list_groups(w, rig, mesh_of) &&
             build_adjacency(w, rig, mesh_of);
    }
    for (uint32_t m = 0; ok && m < rig->mesh_count; ++m)
        ok = build_shading(w, &rig->meshes[m], meshes[m].normals);
    free(p);
    free(mesh_of);
    if (!ok)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "out of memory welding the %u vertices of the rig", nv);
    return SSK_OK;
}

void ssk_weld_apply(const ssk_weld *w, float *positions, const float *objects, const float *post)
{
    const uint32_t *members = w->members, *point = w->point;
    for (uint32_t i = 0; i < w->member_count; ++i) {
        float *dst = positions + 3 * (size_t)members[i];
        const float *src = positions + 3 * (size_t)point[members[i]];
        const uint32_t mm = w->member_meshes[2 * (size_t)i], rm = w->member_meshes[2 * (size_t)i + 1];
        bool same = mm == rm || !objects;
        for (int k = 0; !same && k < 12; ++k)
            if (objects[16 * (size_t)mm + k] != objects[16 * (size_t)rm + k]) break;
            else same = k == 11;
        if (same) {
            dst[0] = src[0];
            dst[1] = src[1];
            dst[2] = src[2];
        } else { /* the other mesh's object space at the frame, through rig space */
            float rig[3];
            ssk_mat4_transform_point(rig, objects + 16 * (size_t)rm, src);
            ssk_mat4_transform_point(dst, post + 16 * (size_t)mm, rig);
        }
    }
}

ssk_status ssk_rig_weld(const ssk_rig *rig, ssk_weld_view *out, ssk_error *err)
{
    if (!rig || !out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_rig_weld: %s is NULL",
                             !rig ? "rig" : "out");
    const ssk_weld *w = &rig->weld;
    out->tolerance = w->tolerance;
    out->group_count = w->group_count;
    out->member_count = w->member_count;
    out->across_mesh_group_count = w->across_mesh_group_count;
    out->hard_edge_pair_count = w->hard_edge_pair_count;
    out->points = w->point;
    out->members = w->members;
    out->adjacency_offsets = w->adjacency_offsets;
    out->adjacency = w->adjacency;
    return ssk_error_ok(err);
}
