/*
 * cage_mvc.c — 3D mean value coordinates of points with respect to a
 * closed triangle cage (issue #21; bind/cage.h: ssk_cage_mvc), written from
 * the published algorithm: T. Ju, S. Schaefer and J. Warren, "Mean value
 * coordinates for closed triangular meshes", ACM TOG 24(3) (SIGGRAPH
 * 2005), 561-566, section 3.3 and its pseudo-code (Figure 4), as Corda et
 * al. 2020 (003_3bdce6713f645d88.txt, section 3 and 5) use them.
 *
 * For a point x, with d_j = |p_j - x| and u_j = (p_j - x) / d_j for every
 * cage vertex p_j:
 * - d_j below MVC_VERTEX_EPSILON (relative to the cage's size): x is the
 *   cage vertex j, its row is the identity row e_j (the limit);
 * - per triangle (p_1, p_2, p_3), indices mod 3: theta_i is the angle at x
 *   between u_{i-1} and u_{i+1} (the arc of the spherical triangle
 *   opposite u_i) and h = (theta_1 + theta_2 + theta_3) / 2;
 *   pi - h near 0 and x in the triangle's plane: x lies on that triangle
 *   (the arcs of a point inside a planar triangle sum to 2 pi), and its row is the
 *   triangle's barycentric coordinates, w_i = sin(theta_i) d_{i-1} d_{i+1}
 *   (twice the area opposite p_i), normalized: the limit of the mean value
 *   coordinates on the cage surface, which the paper returns at once;
 * - else c_i = 2 sin(h) sin(h - theta_i) / (sin theta_{i+1} sin theta_{i-1}) - 1
 *   (the cosine of the spherical triangle's angle at u_i) and
 *   s_i = sign(det[u_1 u_2 u_3]) sqrt(1 - c_i^2) (its signed sine); |s_i|
 *   below MVC_IN_PLANE_EPSILON for some i: x is in the triangle's plane but
 *   outside it, the triangle's spherical projection has no area and the
 *   paper skips it (its contribution vanishes in the limit);
 * - else w_i = (theta_i - c_{i+1} theta_{i-1} - c_{i-1} theta_{i+1})
 *   / (d_i sin(theta_{i+1}) s_{i-1}) is added to vertex i's weight;
 * - the row is the weights over their total (rows sum to 1 up to
 *   rounding).
 *
 * Numerically safer or cheaper evaluations of the same quantities (not in
 * the paper's pseudo-code; the formulas are identities):
 * - theta = atan2(|u_a x u_b|, u_a . u_b) instead of 2 asin(|u_a - u_b| / 2):
 *   exact to rounding near pi too (x near an edge), where asin is not;
 * - sin(theta) as |u_a x u_b| (the cross product at hand);
 * - s_i from the spherical law of sines, det[u_1 u_2 u_3] = sin(theta_{i+1})
 *   sin(theta_{i-1}) sin(angle_i), instead of sqrt(1 - c_i^2), which loses
 *   half the digits when x nears the triangle's plane (c_i near +-1). Then
 *   d_i sin(theta_{i+1}) s_{i-1} = d_i det / sin(theta_i), and
 *   w_i = (theta_i - c_{i+1} theta_{i-1} - c_{i-1} theta_{i+1}) sin(theta_i)
 *   / (d_i det), with det the triple product of the unit vectors.
 * The skip test |s_i| < MVC_IN_PLANE_EPSILON is the paper's, on these s_i.
 *
 * Per point, theta, sin(theta) and the cross product of an edge's two
 * unit vectors are computed once per cage edge and shared by the edge's
 * two triangles (a closed cage: every edge has two), halving the atan2
 * calls; the edge's other triangle sees it reversed, u_b x u_a = -(u_a x
 * u_b) exactly (products commute, a - b = -(b - a) in IEEE arithmetic;
 * no FMA contraction on this build's baseline x86-64), and the dot product
 * is symmetric to the bit, so the rows are bit for bit those of a
 * per-triangle evaluation (with cage_up.c's MaxVol changes, bench_cage's
 * bind of the arm's fine cage went from 99 to 34 ms, one thread).
 *
 * Points are independent: a parallel loop over them (model/parallel.h),
 * each row written by one chunk only, so the result does not depend on the
 * thread count.
 */
#include "bind/cage.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A point closer than this to a cage vertex, relative to the cage's
 * bounding-box diagonal, is that vertex (its row: the identity row). */
#define MVC_VERTEX_EPSILON 1e-12
/* The paper's single epsilon, split in two named ones:
 * - pi - h below MVC_ON_TRIANGLE_EPSILON and |det[u_1 u_2 u_3]| below
 *   MVC_IN_PLANE_EPSILON: the point is on the triangle (barycentric row).
 *   pi - h alone cannot tell: it shrinks like the square of the distance
 *   above the triangle's interior (1e-9 away: ~1e-18, below its rounding),
 *   and snapping there would miss linear precision by that distance; det
 *   shrinks like the distance itself, and the general formula is exact to
 *   rounding as soon as det is above its rounding (det scales the
 *   triangle's three weights alike: its relative error cancels in the
 *   normalization while the triangle's weights, ~1/distance, dominate).
 * - a signed sine |s_i| below MVC_IN_PLANE_EPSILON (|s_i| >= |det|): the
 *   point is in the triangle's plane, to rounding, outside it: skipped, as
 *   in the paper. */
#define MVC_ON_TRIANGLE_EPSILON 1e-12
#define MVC_IN_PLANE_EPSILON 1e-14
/* Twice a triangle's area below this, relative to the squared bounding-box
 * diagonal: a degenerate cage (refused). */
#define MVC_DEGENERATE_AREA 1e-14
/* Points per chunk of the parallel loop (a point costs about 200 flops per
 * cage triangle: 64 points of a 172-triangle cage are ~0.3 ms). */
#define MVC_GRAIN 64

static const double MVC_PI = 3.14159265358979323846264338327950288;

/* ------------------------------------------------------------------------ */
/* Small vector helpers                                                      */
/* ------------------------------------------------------------------------ */

static void cross3(double out[3], const double a[3], const double b[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static double norm3(const double a[3])
{
    return sqrt(dot3(a, a));
}

/* ------------------------------------------------------------------------ */
/* One point                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct mvc_job {
    double *phi;
    const double *points;
    const double *cage;
    const uint32_t *tris;
    uint32_t c, t;
    /* the cage's undirected edges (e by 2 vertex indices, lower first) and
     * each triangle side's edge (3t: edge << 1 | 1 when the side runs from
     * the higher index to the lower); side i of triangle f joins corners
     * (i + 1) % 3 and (i + 2) % 3 */
    const uint32_t *edges;
    const uint32_t *side_edge;
    uint32_t e;
    double vertex_eps; /* MVC_VERTEX_EPSILON times the cage's size */
    /* per chunk: 1 out of memory, 2 a zero or non-finite total weight */
    uint8_t *chunk_status;
    uint32_t *chunk_bad_point; /* per chunk: the first bad point */
} mvc_job;

enum { MVC_CHUNK_OK = 0, MVC_CHUNK_NO_MEMORY = 1, MVC_CHUNK_BAD_WEIGHT = 2 };

/* Row phi (c values) of point x; d (c), u (c by 3) and per edge th, st
 * (e) and cr (e by 3) are scratch. Returns false when the total weight is
 * zero or not finite (a point far outside a non-convex cage can cancel;
 * never inside a valid cage). */
static bool mvc_point(double *phi, const double x[3], const mvc_job *j, double *d, double *u,
                      double *th, double *st, double *cr)
{
    const uint32_t c = j->c;
    memset(phi, 0, (size_t)c * sizeof *phi);
    uint32_t nearest = 0;
    for (uint32_t k = 0; k < c; ++k) {
        double v[3] = {j->cage[3 * k] - x[0], j->cage[3 * k + 1] - x[1], j->cage[3 * k + 2] - x[2]};
        d[k] = norm3(v);
        if (d[k] < d[nearest]) nearest = k;
        if (d[k] > 0.0)
            for (int a = 0; a < 3; ++a) u[3 * k + a] = v[a] / d[k];
    }
    if (d[nearest] < j->vertex_eps) { /* on a cage vertex: the identity row */
        phi[nearest] = 1.0;
        return true;
    }
    /* per edge (a, b): theta between u_a and u_b, its sine and u_a x u_b */
    for (uint32_t e = 0; e < j->e; ++e) {
        const double *ua = u + 3 * j->edges[2 * e], *ub = u + 3 * j->edges[2 * e + 1];
        cross3(cr + 3 * e, ua, ub);
        st[e] = norm3(cr + 3 * e);
        th[e] = atan2(st[e], dot3(ua, ub));
    }
    double total = 0.0;
    for (uint32_t f = 0; f < j->t; ++f) {
        const uint32_t *tri = j->tris + 3 * f;
        const double *uu[3] = {u + 3 * tri[0], u + 3 * tri[1], u + 3 * tri[2]};
        const double dd[3] = {d[tri[0]], d[tri[1]], d[tri[2]]};
        /* theta_i (between u_{i+1} and u_{i+2}) and its sine from the
         * cross and dot products (the edge's); u_1 x u_2 gives det */
        double theta[3], sin_theta[3];
        for (int i = 0; i < 3; ++i) {
            const uint32_t e = j->side_edge[3 * f + i] >> 1;
            sin_theta[i] = st[e];
            theta[i] = th[e];
        }
        const uint32_t e0 = j->side_edge[3 * f] >> 1;
        const double *c0 = cr + 3 * e0;
        const double cr0[3] = {c0[0], c0[1], c0[2]};
        const double det = j->side_edge[3 * f] & 1u ? -dot3(uu[0], cr0) : dot3(uu[0], cr0);
        const double h = 0.5 * (theta[0] + theta[1] + theta[2]);
        if (MVC_PI - h < MVC_ON_TRIANGLE_EPSILON && fabs(det) < MVC_IN_PLANE_EPSILON) {
            /* x on this triangle: its barycentric coordinates (the limit) */
            double w[3], sum = 0.0;
            for (int i = 0; i < 3; ++i) {
                w[i] = sin_theta[i] * dd[(i + 1) % 3] * dd[(i + 2) % 3];
                sum += w[i];
            }
            memset(phi, 0, (size_t)c * sizeof *phi);
            for (int i = 0; i < 3; ++i) phi[tri[i]] += w[i] / sum;
            return sum > 0.0 && isfinite(sum);
        }
        double cosang[3];
        const double sin_h = sin(h);
        bool skip = false;
        for (int i = 0; i < 3; ++i) {
            const int n = (i + 1) % 3, p = (i + 2) % 3;
            const double denom = sin_theta[n] * sin_theta[p];
            /* the paper's half-angle form: accurate where x nears the
             * plane of a triangle outside it (sin(h - theta_i) is then
             * small and computed to full relative precision; the law of
             * cosines, cos theta_i - cos theta_n cos theta_p, cancels
             * and was measured 10-100 times less accurate there) */
            cosang[i] = 2.0 * sin_h * sin(h - theta[i]) / denom - 1.0;
            const double sinang = det / denom; /* the paper's s_i */
            if (!(fabs(sinang) >= MVC_IN_PLANE_EPSILON)) skip = true; /* NaN too */
        }
        if (skip) continue; /* x in the plane, outside the triangle */
        for (int i = 0; i < 3; ++i) {
            const int n = (i + 1) % 3, p = (i + 2) % 3;
            const double w = (theta[i] - cosang[n] * theta[p] - cosang[p] * theta[n]) *
                             sin_theta[i] / (dd[i] * det);
            phi[tri[i]] += w;
            total += w;
        }
    }
    if (!(fabs(total) > DBL_MIN) || !isfinite(total)) return false;
    /* normalize by the total, summed in triangle order (thread-independent) */
    const double inv = 1.0 / total;
    for (uint32_t k = 0; k < c; ++k) phi[k] *= inv;
    return true;
}

static void mvc_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const mvc_job *j = ctx;
    double *scratch = malloc(((size_t)j->c * 4u + (size_t)j->e * 5u) * sizeof *scratch);
    if (!scratch) {
        j->chunk_status[chunk] = MVC_CHUNK_NO_MEMORY;
        return;
    }
    double *th = scratch + 4 * (size_t)j->c, *st = th + j->e, *cr = st + j->e;
    for (int64_t i = begin; i < end; ++i) {
        if (!mvc_point(j->phi + (size_t)i * j->c, j->points + 3 * i, j, scratch,
                       scratch + j->c, th, st, cr) &&
            j->chunk_status[chunk] == MVC_CHUNK_OK) {
            j->chunk_status[chunk] = MVC_CHUNK_BAD_WEIGHT;
            j->chunk_bad_point[chunk] = (uint32_t)i;
        }
    }
    free(scratch);
}

/* ------------------------------------------------------------------------ */
/* Cage validation                                                           */
/* ------------------------------------------------------------------------ */

static int edge_compare(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Closed and consistently oriented: every directed edge (a, b) occurs
 * exactly once, and so does its reverse (b, a). */
static ssk_status check_closed(const uint32_t *tris, uint32_t t, ssk_error *err)
{
    const size_t n = 3u * (size_t)t;
    uint64_t *edges = malloc(n * sizeof *edges);
    if (!edges) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_mvc: out of memory");
    for (uint32_t f = 0; f < t; ++f)
        for (int i = 0; i < 3; ++i)
            edges[3 * (size_t)f + i] =
                (uint64_t)tris[3 * f + i] << 32 | tris[3 * f + (i + 1) % 3];
    qsort(edges, n, sizeof *edges, edge_compare);
    ssk_status st = SSK_OK;
    for (size_t e = 0; e < n && st == SSK_OK; ++e) {
        const uint32_t a = (uint32_t)(edges[e] >> 32), b = (uint32_t)edges[e];
        if (e + 1 < n && edges[e + 1] == edges[e]) {
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "ssk_cage_mvc: edge %u -> %u used twice in the same direction "
                               "(non-manifold or inconsistently oriented cage)",
                               a, b);
            break;
        }
        const uint64_t reverse = (uint64_t)b << 32 | a;
        if (!bsearch(&reverse, edges, n, sizeof *edges, edge_compare))
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "ssk_cage_mvc: edge %u -> %u has no opposite edge "
                               "(the cage is not closed or not consistently oriented)",
                               a, b);
    }
    free(edges);
    return st;
}

/* Indices in range, no repeated corner, no zero-area triangle, finite
 * positions, closed and oriented. On success *size gets the bounding-box
 * diagonal. */
static ssk_status check_cage(const double *cage, uint32_t c, const uint32_t *tris, uint32_t t,
                             double *size, ssk_error *err)
{
    /* the smallest closed triangle mesh: a tetrahedron */
    if (c < 4 || t < 4)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_mvc: %u vertices and %u triangles cannot close a cage "
                             "(at least 4 of each)",
                             c, t);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t k = 0; k < c; ++k)
        for (int a = 0; a < 3; ++a) {
            const double v = cage[3 * k + a];
            if (!isfinite(v))
                return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                     "ssk_cage_mvc: cage vertex %u is not finite", k);
            lo[a] = fmin(lo[a], v);
            hi[a] = fmax(hi[a], v);
        }
    const double diag[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
    *size = norm3(diag);
    if (!(*size > 0.0))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_mvc: degenerate cage (all vertices coincide)");
    for (uint32_t f = 0; f < t; ++f) {
        const uint32_t *tri = tris + 3 * f;
        for (int i = 0; i < 3; ++i)
            if (tri[i] >= c)
                return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                     "ssk_cage_mvc: triangle %u: vertex index %u out of range "
                                     "(%u cage vertices)",
                                     f, tri[i], c);
        if (tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2])
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "ssk_cage_mvc: triangle %u repeats a vertex (%u %u %u)", f,
                                 tri[0], tri[1], tri[2]);
        double e1[3], e2[3], n[3];
        for (int a = 0; a < 3; ++a) {
            e1[a] = cage[3 * tri[1] + a] - cage[3 * tri[0] + a];
            e2[a] = cage[3 * tri[2] + a] - cage[3 * tri[0] + a];
        }
        cross3(n, e1, e2);
        if (norm3(n) < MVC_DEGENERATE_AREA * *size * *size)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "ssk_cage_mvc: degenerate cage: triangle %u (%u %u %u) has no "
                                 "area",
                                 f, tri[0], tri[1], tri[2]);
    }
    return check_closed(tris, t, err);
}

ssk_status ssk_cage_check(const double *cage_vertices, uint32_t cage_vertex_count,
                          const uint32_t *cage_triangles, uint32_t cage_triangle_count,
                          ssk_error *err)
{
    if (!cage_vertices || !cage_triangles)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_mvc: NULL cage");
    double size = 0.0;
    ssk_status st = check_cage(cage_vertices, cage_vertex_count, cage_triangles,
                               cage_triangle_count, &size, err);
    return st == SSK_OK ? ssk_error_ok(err) : st;
}

/* ------------------------------------------------------------------------ */
/* Edges                                                                     */
/* ------------------------------------------------------------------------ */

/* Sorts the triangle sides (index 3 f + i) by their undirected edge. */
typedef struct side_key {
    uint64_t edge; /* lower << 32 | higher */
    uint32_t side;
} side_key;

static int side_compare(const void *a, const void *b)
{
    const side_key *x = a, *y = b;
    return x->edge < y->edge ? -1 : x->edge > y->edge ? 1 : (x->side > y->side) - (x->side < y->side);
}

/* The undirected edges of a checked (closed) cage: *edges (e by 2, lower
 * index first, in sorted order) and side_edge (3t, see mvc_job), both
 * malloc'ed; false when out of memory. */
static bool cage_edges(uint32_t **edges, uint32_t **side_edge, uint32_t *e, const uint32_t *tris,
                       uint32_t t)
{
    const size_t n = 3u * (size_t)t;
    side_key *keys = malloc((n + 1) * sizeof *keys);
    *edges = malloc((2 * n + 1) * sizeof **edges);
    *side_edge = malloc((n + 1) * sizeof **side_edge);
    if (!keys || !*edges || !*side_edge) {
        free(keys);
        free(*edges);
        free(*side_edge);
        *edges = *side_edge = NULL;
        return false;
    }
    for (uint32_t f = 0; f < t; ++f)
        for (int i = 0; i < 3; ++i) {
            const uint32_t a = tris[3 * f + (i + 1) % 3], b = tris[3 * f + (i + 2) % 3];
            const uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
            keys[3 * f + i] = (side_key){(uint64_t)lo << 32 | hi, 3 * f + (uint32_t)i};
        }
    qsort(keys, n, sizeof *keys, side_compare);
    uint32_t count = 0;
    for (size_t k = 0; k < n; ++k) {
        if (k == 0 || keys[k].edge != keys[k - 1].edge) {
            (*edges)[2 * count] = (uint32_t)(keys[k].edge >> 32);
            (*edges)[2 * count + 1] = (uint32_t)keys[k].edge;
            ++count;
        }
        const uint32_t side = keys[k].side, f = side / 3, i = side % 3;
        const bool reversed = tris[3 * f + (i + 1) % 3] > tris[3 * f + (i + 2) % 3];
        (*side_edge)[side] = (count - 1) << 1 | (reversed ? 1u : 0u);
    }
    *e = count;
    free(keys);
    return true;
}

/* ------------------------------------------------------------------------ */
/* Entry point                                                               */
/* ------------------------------------------------------------------------ */

ssk_status ssk_cage_mvc(double *phi, const double *points, uint32_t count,
                        const double *cage_vertices, uint32_t cage_vertex_count,
                        const uint32_t *cage_triangles, uint32_t cage_triangle_count,
                        ssk_error *err)
{
    if (!cage_vertices || !cage_triangles || (count > 0 && (!phi || !points)))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_mvc: NULL %s",
                             !cage_vertices    ? "cage_vertices"
                             : !cage_triangles ? "cage_triangles"
                             : !phi            ? "phi"
                                               : "points");
    double size = 0.0;
    ssk_status st = check_cage(cage_vertices, cage_vertex_count, cage_triangles,
                               cage_triangle_count, &size, err);
    if (st != SSK_OK) return st;
    for (uint32_t i = 0; i < count; ++i)
        if (!isfinite(points[3 * i]) || !isfinite(points[3 * i + 1]) ||
            !isfinite(points[3 * i + 2]))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "ssk_cage_mvc: point %u is not finite", i);
    if (count == 0) return ssk_error_ok(err);

    const uint32_t chunks = ssk_parallel_chunk_count(count, MVC_GRAIN);
    uint8_t *chunk_status = calloc(chunks, sizeof *chunk_status);
    uint32_t *chunk_bad = calloc(chunks, sizeof *chunk_bad);
    uint32_t *edges = NULL, *side_edge = NULL, edge_count = 0;
    if (!chunk_status || !chunk_bad ||
        !cage_edges(&edges, &side_edge, &edge_count, cage_triangles, cage_triangle_count)) {
        free(chunk_status);
        free(chunk_bad);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_mvc: out of memory");
    }
    mvc_job j = {phi,
                 points,
                 cage_vertices,
                 cage_triangles,
                 cage_vertex_count,
                 cage_triangle_count,
                 edges,
                 side_edge,
                 edge_count,
                 MVC_VERTEX_EPSILON * size,
                 chunk_status,
                 chunk_bad};
    ssk_parallel_for(count, MVC_GRAIN, mvc_chunk, &j);
    st = ssk_error_ok(err);
    for (uint32_t k = 0; k < chunks; ++k) { /* the first failure, in chunk order */
        if (chunk_status[k] == MVC_CHUNK_NO_MEMORY) {
            st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_cage_mvc: out of memory");
            break;
        }
        if (chunk_status[k] == MVC_CHUNK_BAD_WEIGHT) {
            const uint32_t i = chunk_bad[k];
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "ssk_cage_mvc: point %u (%g %g %g): total weight zero or not "
                               "finite (far outside the cage?)",
                               i, points[3 * i], points[3 * i + 1], points[3 * i + 2]);
            break;
        }
    }
    free(chunk_status);
    free(chunk_bad);
    free(edges);
    free(side_edge);
    return st;
}
