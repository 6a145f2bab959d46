/*
 * implicit_mvc.c — the welded rest surface of implicit skinning (Vaillant
 * 2015, 4.6.2.1; issue #20): its vertex normals and the mean value
 * coordinates of the tangential relaxation (Eq. 4.6, [HF06]); see
 * bind/implicit_bind.h.
 *
 * The welded surface: every triangle of every mesh with its corners mapped
 * to their weld representatives (rig->weld.point), in rig space (object
 * matrices applied), its winding reversed where a mesh's object matrix
 * mirrors (negative determinant), so that all triangles turn the same way
 * as their mesh did in object space. Triangles whose mapped corners
 * coincide (collapsed by the weld) are left out.
 *
 * Normals: each representative sums the cross products (twice the area
 * times the unit normal) of its welded triangles, in double, in triangle
 * order; normalized; members of a weld group copy their representative's.
 * Outward for counter-clockwise triangles (the import's convention).
 *
 * Mean value coordinates of representative v with normal n and a closed
 * manifold one-ring: the welded triangles around v, each turned to
 * (v, a, b), give the edges a -> b, which must form one cycle through
 * every neighbor once (else: a boundary or non-manifold vertex). The
 * neighbors p_j, projected onto the tangent plane through v, are 2D
 * points (x_j, y_j) = ((p_j - v) . e1, (p_j - v) . e2); with alpha_j the
 * signed angle at v from q_j to q_{j+1} and r_j = |q_j - v|,
 *   w_j = (tan(alpha_{j-1} / 2) + tan(alpha_j / 2)) / r_j,
 *   tan(alpha / 2) = (a x b) / (|a| |b| + a . b)  (a, b the two 2D vectors),
 *   Phi_j = w_j / sum_k w_k,
 * so that sum_j Phi_j q_j = v (the linear precision of mean value
 * coordinates, any simple polygon around v). Empty rows (no relaxation):
 * weld members, vertices of no triangle, a zero normal, boundary or
 * non-manifold one-rings, more than MVC_MAX_VALENCE neighbors, a neighbor
 * projecting onto v, v on a chord q_j q_{j+1} (alpha_j = pi), a projected
 * ring that does not wind once around v (the signed angles not summing to
 * +-2 pi), and weights whose reproduction of v misses by more than
 * MVC_RESIDUAL of the ring's size (never seen: a guard).
 */
#include "bind/implicit_bind.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One-rings larger than this get no coordinates (stack scratch per vertex;
 * a regular mesh has 6, a capped cylinder's pole its segment count). */
#define MVC_MAX_VALENCE SSK_IMPLICIT_MVC_MAX_VALENCE
/* |(sum of the signed angles) - 2 pi| accepted, radians. */
#define MVC_WINDING_TOLERANCE 1e-3
/* A neighbor closer than this fraction of the ring's largest radius to v
 * in the tangent plane, or an angle whose |a||b| + a.b is below this
 * fraction of |a||b| (alpha within ~1e-4 rad of pi): no coordinates. */
#define MVC_DEGENERATE_RATIO 1e-9
/* Largest |sum_j Phi_j (q_j - v)| accepted, relative to the ring's
 * largest radius (double arithmetic gives ~1e-15). */
#define MVC_RESIDUAL 1e-9

static const double MVC_TWO_PI = 6.283185307179586476925286766559;

static uint32_t weld_rep(const ssk_rig *rig, uint32_t v)
{
    return rig->weld.point ? rig->weld.point[v] : v;
}

static bool mirrors(const float m[16])
{
    const double det = (double)m[0] * ((double)m[5] * m[10] - (double)m[6] * m[9]) -
                       (double)m[1] * ((double)m[4] * m[10] - (double)m[6] * m[8]) +
                       (double)m[2] * ((double)m[4] * m[9] - (double)m[5] * m[8]);
    return det < 0.0;
}

/* Welded corners of triangle t of mesh `mesh` (whole-rig representatives,
 * winding fixed for a mirroring object matrix); false when two coincide. */
static bool welded_triangle(const ssk_rig *rig, const ssk_mesh *mesh, bool flip, uint32_t t,
                            uint32_t out[3])
{
    const int32_t *tri = mesh->triangles + 3 * (size_t)t;
    for (int c = 0; c < 3; ++c) out[c] = weld_rep(rig, mesh->first_vertex + (uint32_t)tri[c]);
    if (flip) {
        const uint32_t s = out[1];
        out[1] = out[2];
        out[2] = s;
    }
    return out[0] != out[1] && out[1] != out[2] && out[0] != out[2];
}

ssk_status ssk_implicit_rest_normals(const ssk_rig *rig, const float *rest, float *normals,
                                     ssk_error *err)
{
    if (!rig || !rest || !normals)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_implicit_rest_normals: NULL argument");
    const size_t nv = rig->vertex_count;
    double *acc = calloc(3 * nv + 1, sizeof(double));
    if (!acc)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "ssk_implicit_rest_normals: out of memory");
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const bool flip = mirrors(mesh->object_matrix);
        for (uint32_t t = 0; t < mesh->triangle_count; ++t) {
            uint32_t c[3];
            if (!welded_triangle(rig, mesh, flip, t, c)) continue;
            const float *a = rest + 3 * (size_t)c[0], *b = rest + 3 * (size_t)c[1],
                        *d = rest + 3 * (size_t)c[2];
            const double e1[3] = {(double)b[0] - a[0], (double)b[1] - a[1], (double)b[2] - a[2]};
            const double e2[3] = {(double)d[0] - a[0], (double)d[1] - a[1], (double)d[2] - a[2]};
            const double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                                 e1[0] * e2[1] - e1[1] * e2[0]};
            for (int k = 0; k < 3; ++k)
                for (int x = 0; x < 3; ++x) acc[3 * (size_t)c[k] + x] += n[x];
        }
    }
    for (size_t v = 0; v < nv; ++v) {
        const double *n = acc + 3 * (size_t)weld_rep(rig, (uint32_t)v);
        const double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        const double inv = len > 0.0 && isfinite(len) ? 1.0 / len : 0.0;
        for (int x = 0; x < 3; ++x) normals[3 * v + x] = (float)(n[x] * inv);
    }
    free(acc);
    return ssk_error_ok(err);
}

typedef struct mvc_job {
    const float *rest, *normals;
    const uint32_t *tri;          /* welded triangles, 3 each */
    const uint32_t *inc_offsets;  /* #V + 1: incident welded triangles */
    const uint32_t *inc;
    uint32_t *row_neighbors;      /* scratch rows at inc_offsets[v] */
    float *row_weights;
    uint32_t *row_length;         /* #V: 0 = empty row */
} mvc_job;

/* Orthonormal tangent basis (e1, e2) of unit n, with (e1, e2, n)
 * right-handed. */
static void tangent_basis(const double n[3], double e1[3], double e2[3])
{
    /* the world axis least aligned with n */
    const double ax = fabs(n[0]), ay = fabs(n[1]), az = fabs(n[2]);
    const double w[3] = {ax <= ay && ax <= az ? 1.0 : 0.0,
                         ay < ax && ay <= az ? 1.0 : 0.0, az < ax && az < ay ? 1.0 : 0.0};
    /* e1 = normalize(w x n), e2 = n x e1 */
    double t[3] = {w[1] * n[2] - w[2] * n[1], w[2] * n[0] - w[0] * n[2],
                   w[0] * n[1] - w[1] * n[0]};
    const double len = sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
    for (int x = 0; x < 3; ++x) e1[x] = t[x] / len;
    e2[0] = n[1] * e1[2] - n[2] * e1[1];
    e2[1] = n[2] * e1[0] - n[0] * e1[2];
    e2[2] = n[0] * e1[1] - n[1] * e1[0];
}

/* The coordinates of representative v into neighbors/weights (room for
 * its incident triangle count); returns the row length, 0 for none. */
static uint32_t mvc_vertex(const mvc_job *j, uint32_t v, uint32_t *neighbors, float *weights)
{
    const uint32_t begin = j->inc_offsets[v], n = j->inc_offsets[v + 1] - begin;
    if (n < 3 || n > MVC_MAX_VALENCE) return 0;
    const float *nf = j->normals + 3 * (size_t)v;
    const double nrm[3] = {nf[0], nf[1], nf[2]};
    if (!(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2] > 0.5)) return 0;
    /* edges a -> b of the triangles (v, a, b) */
    uint32_t from[MVC_MAX_VALENCE], to[MVC_MAX_VALENCE];
    for (uint32_t e = 0; e < n; ++e) {
        const uint32_t *t = j->tri + 3 * (size_t)j->inc[begin + e];
        const int at = t[0] == v ? 0 : t[1] == v ? 1 : 2;
        from[e] = t[(at + 1) % 3];
        to[e] = t[(at + 2) % 3];
    }
    /* one cycle through every neighbor once: each start unique, and
     * following next from the smallest neighbor comes back after n steps */
    for (uint32_t e = 0; e < n; ++e)
        for (uint32_t f = e + 1; f < n; ++f)
            if (from[e] == from[f] || to[e] == to[f]) return 0;
    uint32_t start = 0;
    for (uint32_t e = 1; e < n; ++e)
        if (from[e] < from[start]) start = e;
    uint32_t cur = start;
    for (uint32_t step = 0; step < n; ++step) {
        neighbors[step] = from[cur];
        uint32_t next = n;
        for (uint32_t f = 0; f < n; ++f)
            if (from[f] == to[cur]) {
                next = f;
                break;
            }
        if (next == n) return 0; /* open: a boundary */
        if (next == start && step + 1 < n) return 0; /* several cycles */
        cur = next;
    }
    if (cur != start) return 0;
    /* 2D projections onto the tangent plane */
    double e1[3], e2[3], q[MVC_MAX_VALENCE][2], r[MVC_MAX_VALENCE];
    tangent_basis(nrm, e1, e2);
    const float *pv = j->rest + 3 * (size_t)v;
    double rmax = 0.0;
    for (uint32_t k = 0; k < n; ++k) {
        const float *p = j->rest + 3 * (size_t)neighbors[k];
        const double d[3] = {(double)p[0] - pv[0], (double)p[1] - pv[1], (double)p[2] - pv[2]};
        q[k][0] = d[0] * e1[0] + d[1] * e1[1] + d[2] * e1[2];
        q[k][1] = d[0] * e2[0] + d[1] * e2[1] + d[2] * e2[2];
        r[k] = sqrt(q[k][0] * q[k][0] + q[k][1] * q[k][1]);
        if (r[k] > rmax) rmax = r[k];
    }
    if (!(rmax > 0.0) || !isfinite(rmax)) return 0;
    for (uint32_t k = 0; k < n; ++k)
        if (r[k] <= MVC_DEGENERATE_RATIO * rmax) return 0;
    /* tan(alpha_k / 2), alpha_k from q_k to q_{k+1}; the winding */
    double half_tan[MVC_MAX_VALENCE], winding = 0.0;
    for (uint32_t k = 0; k < n; ++k) {
        const double *a = q[k], *b = q[(k + 1) % n];
        const double cross = a[0] * b[1] - a[1] * b[0], dot = a[0] * b[0] + a[1] * b[1];
        const double rr = r[k] * r[(k + 1) % n];
        if (rr + dot <= MVC_DEGENERATE_RATIO * rr) return 0;
        half_tan[k] = cross / (rr + dot);
        winding += atan2(cross, dot);
    }
    if (fabs(fabs(winding) - MVC_TWO_PI) > MVC_WINDING_TOLERANCE) return 0;
    double w[MVC_MAX_VALENCE], sum = 0.0;
    for (uint32_t k = 0; k < n; ++k) {
        w[k] = (half_tan[(k + n - 1) % n] + half_tan[k]) / r[k];
        sum += w[k];
    }
    if (!isfinite(sum) || sum == 0.0) return 0;
    double res[2] = {0.0, 0.0};
    for (uint32_t k = 0; k < n; ++k) {
        w[k] /= sum;
        res[0] += w[k] * q[k][0];
        res[1] += w[k] * q[k][1];
    }
    if (!(sqrt(res[0] * res[0] + res[1] * res[1]) <= MVC_RESIDUAL * rmax)) return 0;
    for (uint32_t k = 0; k < n; ++k) weights[k] = (float)w[k];
    return n;
}

static void mvc_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const mvc_job *j = ctx;
    (void)chunk;
    for (int64_t v = begin; v < end; ++v) {
        const uint32_t off = j->inc_offsets[v];
        j->row_length[v] = mvc_vertex(j, (uint32_t)v, j->row_neighbors + off,
                                      j->row_weights + off);
    }
}

ssk_status ssk_implicit_mvc_build(ssk_implicit_fit *fit, const ssk_rig *rig, const float *rest,
                                  ssk_error *err)
{
    if (!fit || !rig || !rest || !fit->rest_normals)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_implicit_mvc_build: NULL argument or no rest normals");
    const size_t nv = rig->vertex_count;
    size_t nt = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) nt += rig->meshes[m].triangle_count;
    ssk_status st = SSK_OK;
    uint32_t *tri = malloc((3 * nt + 1) * sizeof *tri);
    uint32_t *inc_offsets = calloc(nv + 1, sizeof *inc_offsets);
    uint32_t *inc = NULL, *fill = NULL, *row_neighbors = NULL, *row_length = NULL;
    float *row_weights = NULL;
    if (!tri || !inc_offsets) goto oom;
    /* welded triangles; collapsed ones get corner UINT32_MAX and no place */
    size_t t_all = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        const bool flip = mirrors(mesh->object_matrix);
        for (uint32_t t = 0; t < mesh->triangle_count; ++t, ++t_all) {
            uint32_t *c = tri + 3 * t_all;
            if (!welded_triangle(rig, mesh, flip, t, c)) {
                c[0] = UINT32_MAX;
                continue;
            }
            for (int k = 0; k < 3; ++k) ++inc_offsets[c[k] + 1];
        }
    }
    for (size_t v = 0; v < nv; ++v) inc_offsets[v + 1] += inc_offsets[v];
    const size_t total = inc_offsets[nv];
    inc = malloc((total + 1) * sizeof *inc);
    fill = malloc((nv + 1) * sizeof *fill);
    row_neighbors = malloc((total + 1) * sizeof *row_neighbors);
    row_weights = malloc((total + 1) * sizeof *row_weights);
    row_length = calloc(nv + 1, sizeof *row_length);
    if (!inc || !fill || !row_neighbors || !row_weights || !row_length) goto oom;
    memcpy(fill, inc_offsets, nv * sizeof *fill);
    for (size_t t = 0; t < nt; ++t) {
        const uint32_t *c = tri + 3 * t;
        if (c[0] == UINT32_MAX) continue;
        for (int k = 0; k < 3; ++k) inc[fill[c[k]]++] = (uint32_t)t;
    }
    mvc_job job = {rest, fit->rest_normals, tri, inc_offsets, inc,
                   row_neighbors, row_weights, row_length};
    ssk_parallel_for((int64_t)nv, SSK_PARALLEL_GRAIN, mvc_chunk, &job);
    /* weld members have no incident welded triangle: empty rows already */
    fit->mvc_offsets = malloc((nv + 1) * sizeof *fit->mvc_offsets);
    if (!fit->mvc_offsets) goto oom;
    fit->mvc_offsets[0] = 0;
    for (size_t v = 0; v < nv; ++v) fit->mvc_offsets[v + 1] = fit->mvc_offsets[v] + row_length[v];
    const size_t rows = fit->mvc_offsets[nv];
    fit->mvc_neighbors = malloc((rows + 1) * sizeof *fit->mvc_neighbors);
    fit->mvc_weights = malloc((rows + 1) * sizeof *fit->mvc_weights);
    if (!fit->mvc_neighbors || !fit->mvc_weights) goto oom;
    for (size_t v = 0; v < nv; ++v) {
        memcpy(fit->mvc_neighbors + fit->mvc_offsets[v], row_neighbors + inc_offsets[v],
               row_length[v] * sizeof *row_neighbors);
        memcpy(fit->mvc_weights + fit->mvc_offsets[v], row_weights + inc_offsets[v],
               row_length[v] * sizeof *row_weights);
    }
    st = ssk_error_ok(err);
    goto done;
oom:
    st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_implicit_mvc_build: out of memory");
done:
    free(tri);
    free(inc_offsets);
    free(inc);
    free(fill);
    free(row_neighbors);
    free(row_weights);
    free(row_length);
    return st;
}
