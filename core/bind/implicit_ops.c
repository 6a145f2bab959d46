/*
 * implicit_ops.c — the composition operators of implicit skinning built by
 * bi-harmonic interpolation (Vaillant 2015, 4.5.1, Eq. 4.3-4.4; issue #20):
 * g(f1, f2, d) on an N^3 grid, one 2D slice (f1, f2) per d = k / (N - 1).
 *
 * Per slice, with h = 1 / (N - 1) and vertex (i, j) at (f1, f2) = (i h, j h):
 *
 * - Dirichlet values on the whole boundary, Eq. 4.3: g(f1, 0) = f1,
 *   g(0, f2) = f2, g(f1, 1) = g(1, f2) = 1 (consistent at the corners).
 * - Profile constraints, Eq. 4.4, "the grid vertices of the intersected
 *   grid cells with the shortest signed distance to the profile curve": a
 *   cell is intersected when a piece of the profile touches it (closed
 *   cell); each of its interior vertices v is fixed to
 *       g(v) = 0.5 + SSK_IMPLICIT_OP_PROFILE_SLOPE * s(v),
 *   s(v) the signed distance from v to the whole profile, positive on the
 *   inside (g > 0.5) side. The slope is 1: the union max(f1, f2) that the
 *   operators reduce to along the profile's outer part, and the boundary
 *   g(f1, 0) = f1 where the profile meets the axis at (0.5, 0), both rise
 *   with unit slope across the 0.5 iso-line. So g = 0.5 exactly on the
 *   curve up to the bi-linear error of the cell, and vertices that lie on
 *   the curve get 0.5 exactly. Vertices of the boundary keep Eq. 4.3.
 * - Delta^2 g = 0 elsewhere: the minimizer over the free vertices of
 *       E(g) = sum_v w_v (L g)_v^2,
 *   L the 5-point Laplacian (scaled by h^2, which does not change the
 *   minimizer), v over the interior vertices (w = 1) and over the vertices
 *   of the f1 = 0 and f2 = 0 axes (w = 1/2) whose Laplacian uses a mirror
 *   ghost row, g(i, -1) = g(i, 1) (resp. g(-1, j) = g(1, j)): the central
 *   difference of the normal derivative is zero there, the paper's "normal
 *   derivatives constrained to zero on the g(f1, 0) and g(0, f2) axes".
 *   Its normal equations L^T W L g = 0 are, row by row, the 13-point
 *   bi-Laplacian (20 / -8 / 2 / 1) with the ghost folded in (21 on the
 *   diagonal next to an axis; the weight 1/2 is what makes the two equal).
 *   On the f1 = 1 and f2 = 1 edges the paper gives Dirichlet values only:
 *   no Laplacian is taken there, which is the natural condition of E,
 *   Delta g = 0 on that edge (an antisymmetric ghost row: 19 on the
 *   diagonal), the "simply supported" second condition.
 *   After eliminating the Dirichlet values, L^T W L is symmetric positive
 *   definite (L restricted to the free columns has full column rank: its
 *   rows at the free vertices are the Dirichlet 5-point Laplacian).
 *
 * Profile curves (f in [0, 1], 0.5 the surface, f > 0.5 inside; the 0.5
 * iso-line of the union max(f1, f2) is the L-shaped line f2 = 0.5 for
 * f1 <= 0.5 and f1 = 0.5 for f2 <= 0.5, g < 0.5 in the square
 * [0, 0.5)^2 at the origin and g > 0.5 everywhere else):
 * - CONTACT (g_dc, Fig. 4.7): the segments (0, 0.5)-(0.5, 0.5) and
 *   (0.5, 0.5)-(0.5, 0) in every slice, plus the contact line from
 *   (0.5, 0.5) to (0.5 + d / sqrt 2, 0.5 + d / sqrt 2) along f1 = f2, a slit
 *   with g > 0.5 on both of its sides. That line has length d: it reaches
 *   the corner (1, 1) at d = 1 / sqrt 2 and is clipped to the box beyond
 *   (the text's formula, kept: d in [1 / sqrt 2, 1] is the same full
 *   contact). At the corner Eq. 4.3 says g = 1: the boundary wins, the
 *   contact line is constrained at interior vertices only, and g rises
 *   from 0.5 to 1 within the last cell there.
 * - BULGE (g_db, Fig. 4.8): the two outer curves are cubic B-splines (open
 *   uniform knots 0 0 0 0 1/2 1 1 1 1: the curve interpolates its end
 *   points) whose control points move linearly in d from the aligned
 *   position (x_i, 0.5) at d = 0 (the straight f2 = 0.5, i.e. the union)
 *   to the text's (0, 0.5), (0.15, 0.45), (0.39, 0.40), (0.44, 0.44),
 *   (0.5, 0.5) at d = 1; the second curve is the first with f1 and f2
 *   swapped; plus the contact line as for CONTACT. The control points'
 *   abscissae increase, so each curve is a graph f2 = y(f1) and lies on
 *   its side of the diagonal (every control point has f2 >= f1): the
 *   outside region (g < 0.5) is {f2 < y(f1)} on the f2 >= f1 side and its
 *   mirror; at d = 1 both curves reach (0.5, 0.5) tangent to the diagonal.
 *   The curves are evaluated as SSK_IMPLICIT_OP_SPLINE_SEGMENTS chords.
 *
 * Solver: the slices are independent. The system's pattern is the same in
 * every slice (every interior vertex is a row; a profile-constrained
 * vertex gets an identity row and column, its value moved to the
 * right-hand side), so one CHOLMOD analysis (METIS order, simplicial
 * LDL': no BLAS, no OpenMP threads of CHOLMOD's own) is made once. The
 * slices are cut into chains of SSK_IMPLICIT_OP_CHAIN_LENGTH consecutive
 * d (the thread pool runs the chains): a chain factorizes its first
 * slice, then brings the factor from slice to slice with CHOLMOD's row
 * deletions and additions (cholmod_rowdel / cholmod_rowadd, rank-2
 * updates) for the few vertices whose constraint changes with d, and
 * solves. N = 128 went from about 15 s (a factorization per slice) to
 * 1-2 s on 2 cores; against a fresh factorization of every slice the
 * stored floats differ by at most 6e-8 (N = 128, bulge). The chains
 * depend on N alone, so the grid is a pure function of (kind, N),
 * whatever the thread count. CHOLMOD: Debian libsuitesparse-dev, as
 * kernels/arap.c.
 */
#include "bind/implicit_bind.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cholmod.h>

/* N's bounds (bind/implicit_bind.h) */
#define SSK_IMPLICIT_OP_MIN_RESOLUTION 8u
#define SSK_IMPLICIT_OP_MAX_RESOLUTION 512u
/* The iso-value of the surface (4.4) */
#define SSK_IMPLICIT_OP_ISO 0.5
/* g = iso + slope * signed distance at the profile's vertices (see above) */
#define SSK_IMPLICIT_OP_PROFILE_SLOPE 1.0
/* Chords per B-spline profile curve of the bulge operator */
#define SSK_IMPLICIT_OP_SPLINE_SEGMENTS 256
/* The bulge curve's control points at d = 1 (4.5.1) */
#define SSK_IMPLICIT_OP_BULGE_POINTS 5
static const double bulge_points[SSK_IMPLICIT_OP_BULGE_POINTS][2] = {
    {0.0, 0.5}, {0.15, 0.45}, {0.39, 0.40}, {0.44, 0.44}, {0.5, 0.5}};
/* Cubic B-spline, open uniform knots over [0, 1] for 5 control points */
#define SSK_IMPLICIT_OP_SPLINE_DEGREE 3
#define SSK_IMPLICIT_OP_SPLINE_KNOTS (SSK_IMPLICIT_OP_BULGE_POINTS + SSK_IMPLICIT_OP_SPLINE_DEGREE + 1)
static const double spline_knots[SSK_IMPLICIT_OP_SPLINE_KNOTS] = {0.0, 0.0, 0.0, 0.0, 0.5,
                                                                  1.0, 1.0, 1.0, 1.0};
/* Weight of the Laplacian of an axis vertex (mirror ghost) in E */
#define SSK_IMPLICIT_OP_AXIS_WEIGHT 0.5
/* Slices per chain: a chain factorizes its first slice and updates the
 * factor from slice to slice (fixed by N alone: the same arithmetic on
 * any thread count) */
#ifndef SSK_IMPLICIT_OP_CHAIN_LENGTH
#define SSK_IMPLICIT_OP_CHAIN_LENGTH 32u
#endif
/* Tolerance of the segment / cell test, in cells: a segment along a grid
 * line touches the cells on both of its sides */
#define SSK_IMPLICIT_OP_CELL_EPS 1e-9

/* ------------------------------------------------------------------------ */
/* Profile of one slice                                                      */
/* ------------------------------------------------------------------------ */

typedef struct op_segment {
    double a[2], b[2];
} op_segment;

typedef struct op_profile {
    ssk_implicit_op_kind kind;
    uint32_t count;
    op_segment *segments;
    /* BULGE: the curve f2 = y(f1) on the f2 >= f1 side, as
     * SSK_IMPLICIT_OP_SPLINE_SEGMENTS + 1 points of increasing f1 */
    double (*curve)[2];
} op_profile;

/* Point of the clamped cubic B-spline at t in [0, 1] (de Boor). */
static void spline_point(const double ctrl[SSK_IMPLICIT_OP_BULGE_POINTS][2], double t,
                         double out[2])
{
    const int p = SSK_IMPLICIT_OP_SPLINE_DEGREE;
    int span = p; /* knot span [k_span, k_span+1) holding t */
    while (span < SSK_IMPLICIT_OP_BULGE_POINTS - 1 && t >= spline_knots[span + 1]) ++span;
    double pts[SSK_IMPLICIT_OP_SPLINE_DEGREE + 1][2];
    for (int r = 0; r <= p; ++r) {
        pts[r][0] = ctrl[span - p + r][0];
        pts[r][1] = ctrl[span - p + r][1];
    }
    for (int r = 1; r <= p; ++r) {
        for (int q = p; q >= r; --q) {
            const int i = span - p + q;
            const double den = spline_knots[i + p - r + 1] - spline_knots[i];
            const double alpha = den > 0.0 ? (t - spline_knots[i]) / den : 0.0;
            pts[q][0] = (1.0 - alpha) * pts[q - 1][0] + alpha * pts[q][0];
            pts[q][1] = (1.0 - alpha) * pts[q - 1][1] + alpha * pts[q][1];
        }
    }
    out[0] = pts[p][0];
    out[1] = pts[p][1];
}

/* The profile of slice d (see the file's comment). Returns false when out
 * of memory. */
static bool profile_make(op_profile *pr, ssk_implicit_op_kind kind, double d)
{
    const double iso = SSK_IMPLICIT_OP_ISO;
    const int m = SSK_IMPLICIT_OP_SPLINE_SEGMENTS;
    memset(pr, 0, sizeof *pr);
    pr->kind = kind;
    pr->segments = malloc((size_t)(2 * m + 1) * sizeof *pr->segments);
    if (!pr->segments) return false;
    if (kind == SSK_IMPLICIT_OP_CONTACT) {
        pr->segments[pr->count++] = (op_segment){{0.0, iso}, {iso, iso}};
        pr->segments[pr->count++] = (op_segment){{iso, iso}, {iso, 0.0}};
    } else {
        pr->curve = malloc((size_t)(m + 1) * sizeof *pr->curve);
        if (!pr->curve) return false;
        double ctrl[SSK_IMPLICIT_OP_BULGE_POINTS][2];
        for (int i = 0; i < SSK_IMPLICIT_OP_BULGE_POINTS; ++i) {
            ctrl[i][0] = bulge_points[i][0];
            ctrl[i][1] = (1.0 - d) * iso + d * bulge_points[i][1];
        }
        for (int s = 0; s <= m; ++s) spline_point(ctrl, (double)s / m, pr->curve[s]);
        /* the ends exactly */
        pr->curve[0][0] = ctrl[0][0];
        pr->curve[0][1] = ctrl[0][1];
        pr->curve[m][0] = ctrl[SSK_IMPLICIT_OP_BULGE_POINTS - 1][0];
        pr->curve[m][1] = ctrl[SSK_IMPLICIT_OP_BULGE_POINTS - 1][1];
        for (int s = 0; s < m; ++s) {
            const double *a = pr->curve[s], *b = pr->curve[s + 1];
            pr->segments[pr->count++] = (op_segment){{a[0], a[1]}, {b[0], b[1]}};
            pr->segments[pr->count++] = (op_segment){{a[1], a[0]}, {b[1], b[0]}};
        }
    }
    if (d > 0.0) {
        /* the contact line, length d along f1 = f2, clipped to the box */
        const double end = fmin(iso + d / sqrt(2.0), 1.0);
        pr->segments[pr->count++] = (op_segment){{iso, iso}, {end, end}};
    }
    return true;
}

static void profile_free(op_profile *pr)
{
    free(pr->segments);
    free(pr->curve);
}

/* Whether (x, y) is on the outside (g < 0.5) side of the profile's outer
 * curves. */
static bool profile_outside(const op_profile *pr, double x, double y)
{
    const double iso = SSK_IMPLICIT_OP_ISO;
    if (pr->kind == SSK_IMPLICIT_OP_CONTACT) return x < iso && y < iso;
    /* mirror onto the f2 >= f1 side, where the curve is f2 = y(f1) */
    const double a = fmin(x, y), b = fmax(x, y);
    if (a >= iso) return false;
    const int m = SSK_IMPLICIT_OP_SPLINE_SEGMENTS;
    int lo = 0, hi = m; /* curve[lo][0] <= a < curve[hi][0] */
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (pr->curve[mid][0] <= a)
            lo = mid;
        else
            hi = mid;
    }
    const double *p = pr->curve[lo], *q = pr->curve[hi];
    const double t = (a - p[0]) / (q[0] - p[0]);
    return b < p[1] + t * (q[1] - p[1]);
}

static double segment_distance(const op_segment *s, double x, double y)
{
    const double ex = s->b[0] - s->a[0], ey = s->b[1] - s->a[1];
    const double len2 = ex * ex + ey * ey;
    double t = len2 > 0.0 ? ((x - s->a[0]) * ex + (y - s->a[1]) * ey) / len2 : 0.0;
    t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
    return hypot(x - (s->a[0] + t * ex), y - (s->a[1] + t * ey));
}

/* Signed distance from (x, y) to the profile, positive inside. */
static double profile_signed_distance(const op_profile *pr, double x, double y)
{
    double dist = INFINITY;
    for (uint32_t s = 0; s < pr->count; ++s) dist = fmin(dist, segment_distance(pr->segments + s, x, y));
    return profile_outside(pr, x, y) ? -dist : dist;
}

/* Whether segment a-b (grid units) touches the closed square
 * [x0, x0 + 1] x [y0, y0 + 1] (Liang-Barsky clipping). */
static bool segment_touches_cell(const double a[2], const double b[2], double x0, double y0)
{
    const double eps = SSK_IMPLICIT_OP_CELL_EPS;
    const double lo[2] = {x0 - eps, y0 - eps}, hi[2] = {x0 + 1.0 + eps, y0 + 1.0 + eps};
    double t0 = 0.0, t1 = 1.0;
    for (int c = 0; c < 2; ++c) {
        const double e = b[c] - a[c];
        if (e == 0.0) {
            if (a[c] < lo[c] || a[c] > hi[c]) return false;
            continue;
        }
        double ta = (lo[c] - a[c]) / e, tb = (hi[c] - a[c]) / e;
        if (ta > tb) {
            const double tmp = ta;
            ta = tb;
            tb = tmp;
        }
        t0 = fmax(t0, ta);
        t1 = fmin(t1, tb);
        if (t0 > t1) return false;
    }
    return true;
}

/* Marks (fixed[v] = 1) the interior vertices of the cells the profile
 * touches and sets known[v] to their value. */
static void profile_constrain(const op_profile *pr, uint32_t n, uint8_t *fixed, double *known)
{
    const double scale = (double)(n - 1), h = 1.0 / scale;
    for (uint32_t s = 0; s < pr->count; ++s) {
        const op_segment *seg = pr->segments + s;
        const double a[2] = {seg->a[0] * scale, seg->a[1] * scale};
        const double b[2] = {seg->b[0] * scale, seg->b[1] * scale};
        const double eps = SSK_IMPLICIT_OP_CELL_EPS;
        const long cmax = (long)n - 2;
        long x0 = (long)floor(fmin(a[0], b[0]) - eps), x1 = (long)floor(fmax(a[0], b[0]) + eps);
        long y0 = (long)floor(fmin(a[1], b[1]) - eps), y1 = (long)floor(fmax(a[1], b[1]) + eps);
        x0 = x0 < 0 ? 0 : x0;
        y0 = y0 < 0 ? 0 : y0;
        x1 = x1 > cmax ? cmax : x1;
        y1 = y1 > cmax ? cmax : y1;
        for (long cy = y0; cy <= y1; ++cy) {
            for (long cx = x0; cx <= x1; ++cx) {
                if (!segment_touches_cell(a, b, (double)cx, (double)cy)) continue;
                for (uint32_t corner = 0; corner < 4; ++corner) {
                    const uint32_t i = (uint32_t)cx + (corner & 1u), j = (uint32_t)cy + (corner >> 1);
                    if (i == 0 || j == 0 || i == n - 1 || j == n - 1) continue; /* Eq. 4.3 */
                    const size_t v = (size_t)j * n + i;
                    if (fixed[v]) continue;
                    fixed[v] = 1;
                    known[v] = SSK_IMPLICIT_OP_ISO +
                               SSK_IMPLICIT_OP_PROFILE_SLOPE *
                                   profile_signed_distance(pr, i * h, j * h);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The bi-harmonic system                                                    */
/* ------------------------------------------------------------------------ */

/* One Laplacian row of E: up to 5 vertices (grid index) and coefficients. */
typedef struct op_stencil {
    uint32_t count;
    uint32_t vertex[5];
    double coef[5];
    double weight;
} op_stencil;

/* The rows of L in E, in a fixed order: interior vertices, then the f2 = 0
 * axis, then the f1 = 0 axis (mirror ghosts). */
static uint32_t stencil_count(uint32_t n) { return (n - 2) * (n - 2) + 2 * (n - 2); }

static void stencil_get(uint32_t n, uint32_t r, op_stencil *st)
{
    const uint32_t m = n - 2;
    st->count = 0;
    if (r < m * m) {
        const uint32_t i = 1 + r % m, j = 1 + r / m;
        const size_t v = (size_t)j * n + i;
        st->weight = 1.0;
        st->vertex[0] = (uint32_t)v;
        st->coef[0] = -4.0;
        st->vertex[1] = (uint32_t)(v - 1);
        st->vertex[2] = (uint32_t)(v + 1);
        st->vertex[3] = (uint32_t)(v - n);
        st->vertex[4] = (uint32_t)(v + n);
        st->coef[1] = st->coef[2] = st->coef[3] = st->coef[4] = 1.0;
        st->count = 5;
        return;
    }
    r -= m * m;
    st->weight = SSK_IMPLICIT_OP_AXIS_WEIGHT;
    const uint32_t t = 1 + r % m;
    const bool f2_axis = r < m;
    /* axis vertex, its two neighbors along the axis, its neighbor inside
     * (coefficient 2: itself and the mirror ghost) */
    const uint32_t v = f2_axis ? t : t * n, along = f2_axis ? 1u : n, inward = f2_axis ? n : 1u;
    st->vertex[0] = v;
    st->coef[0] = -4.0;
    st->vertex[1] = v - along;
    st->vertex[2] = v + along;
    st->coef[1] = st->coef[2] = 1.0;
    st->vertex[3] = v + inward;
    st->coef[3] = 2.0;
    st->count = 4;
}

/* Unknown of grid vertex (i, j), or -1 on the boundary. */
static inline int32_t unknown_of(uint32_t n, uint32_t v)
{
    const uint32_t i = v % n, j = v / n;
    if (i == 0 || j == 0 || i == n - 1 || j == n - 1) return -1;
    return (int32_t)((j - 1) * (n - 2) + (i - 1));
}

/* Entries the triplet form of one slice holds (upper triangle, with
 * repeats that CHOLMOD sums): per row of L the pairs of its interior
 * vertices, plus one diagonal entry per unknown for the identity rows. */
static size_t triplet_capacity(uint32_t n)
{
    return (size_t)stencil_count(n) * 15u + (size_t)(n - 2) * (n - 2);
}

/* A (upper) for the slice whose fixed vertices are `fixed` (NULL: none,
 * the pattern). The pattern never depends on `fixed`. */
static cholmod_sparse *system_matrix(uint32_t n, const uint8_t *fixed, cholmod_common *cc)
{
    const size_t unknowns = (size_t)(n - 2) * (n - 2);
    cholmod_triplet *T = cholmod_allocate_triplet(unknowns, unknowns, triplet_capacity(n), 1,
                                                  CHOLMOD_REAL, cc);
    if (!T) return NULL;
    int *ti = T->i, *tj = T->j;
    double *tx = T->x;
    size_t nz = 0;
    const uint32_t rows = stencil_count(n);
    op_stencil st;
    for (uint32_t r = 0; r < rows; ++r) {
        stencil_get(n, r, &st);
        for (uint32_t p = 0; p < st.count; ++p) {
            const int32_t up = unknown_of(n, st.vertex[p]);
            if (up < 0) continue;
            for (uint32_t q = 0; q < st.count; ++q) {
                const int32_t uq = unknown_of(n, st.vertex[q]);
                if (uq < up) continue; /* the upper triangle; uq < 0 is the boundary */
                const bool zero = fixed && (fixed[st.vertex[p]] || fixed[st.vertex[q]]);
                ti[nz] = up;
                tj[nz] = uq;
                tx[nz++] = zero ? 0.0 : st.weight * st.coef[p] * st.coef[q];
            }
        }
    }
    for (uint32_t j = 1; j + 1 < n; ++j) {
        for (uint32_t i = 1; i + 1 < n; ++i) {
            const uint32_t v = j * n + i;
            const int32_t u = unknown_of(n, v);
            ti[nz] = u;
            tj[nz] = u;
            tx[nz++] = fixed && fixed[v] ? 1.0 : 0.0;
        }
    }
    T->nnz = nz;
    cholmod_sparse *A = cholmod_triplet_to_sparse(T, nz, cc);
    cholmod_free_triplet(&T, cc);
    return A;
}

/* ------------------------------------------------------------------------ */
/* Slices in parallel                                                        */
/* ------------------------------------------------------------------------ */

typedef struct op_slot {
    int started;
    cholmod_common common;
    cholmod_factor *factor; /* a copy of the shared analysis */
    uint8_t *fixed;         /* N^2 */
    uint8_t *prev_fixed;    /* N^2: the fixed set the factor holds */
    double *known;          /* N^2 */
    double *lg;             /* rows of L: w_v (L known)_v */
} op_slot;

typedef struct op_job {
    ssk_implicit_op *op;
    const cholmod_factor *analysis;
    cholmod_sparse *full;   /* K with every interior vertex free, both triangles */
    uint32_t chain_length;  /* slices per chain */
    op_slot *slots;
    uint32_t slot_count;
    atomic_int failure; /* 0, or a ssk_status */
    atomic_int cholmod_status;
} op_job;

static void slot_release(op_slot *s)
{
    if (s->started) {
        cholmod_free_factor(&s->factor, &s->common);
        cholmod_finish(&s->common);
    }
    free(s->fixed);
    free(s->prev_fixed);
    free(s->known);
    free(s->lg);
    memset(s, 0, sizeof *s);
}

static bool slot_prepare(op_slot *s, const cholmod_factor *analysis, uint32_t n)
{
    if (s->started) return true;
    cholmod_start(&s->common);
    s->started = 1;
    s->common.print = 0;
    s->common.error_handler = NULL;
    s->common.supernodal = CHOLMOD_SIMPLICIAL;
    s->factor = cholmod_copy_factor((cholmod_factor *)analysis, &s->common);
    s->fixed = malloc((size_t)n * n * sizeof *s->fixed);
    s->prev_fixed = malloc((size_t)n * n * sizeof *s->prev_fixed);
    s->known = malloc((size_t)n * n * sizeof *s->known);
    s->lg = malloc((size_t)stencil_count(n) * sizeof *s->lg);
    return s->factor && s->fixed && s->prev_fixed && s->known && s->lg;
}

/* Brings the slot's factor from the fixed set prev_fixed to fixed: a
 * newly fixed vertex's row and column become the identity's
 * (cholmod_rowdel), a newly freed one gets K's column restricted to the
 * rows free at that moment (cholmod_rowadd); deletions first. Indices in
 * the factor's permuted order. */
static bool factor_update(op_job *job, op_slot *s)
{
    const uint32_t n = job->op->resolution;
    const int *perm = s->factor->Perm;
    const size_t unknowns = (size_t)(n - 2) * (n - 2);
    int *pinv = malloc(unknowns * sizeof *pinv);
    cholmod_sparse *R = cholmod_allocate_sparse(unknowns, 1, 13, 1, 1, 0, CHOLMOD_REAL, &s->common);
    bool ok = pinv && R;
    for (size_t k = 0; ok && k < unknowns; ++k) pinv[perm[k]] = (int)k;
    for (int pass = 0; ok && pass < 2; ++pass) {
        for (uint32_t j = 1; ok && j + 1 < n; ++j) {
            for (uint32_t i = 1; ok && i + 1 < n; ++i) {
                const uint32_t v = j * n + i;
                if (s->fixed[v] == s->prev_fixed[v] || (pass == 0) != (s->fixed[v] != 0)) continue;
                const int32_t u = unknown_of(n, v);
                if (pass == 0) {
                    ok = cholmod_rowdel((size_t)pinv[u], NULL, s->factor, &s->common) != 0;
                    s->prev_fixed[v] = 1;
                    continue;
                }
                /* K's column u at the rows free now (u itself included) */
                const int *cp = job->full->p, *ci = job->full->i;
                const double *cx = job->full->x;
                int *ri = R->i, *rp = R->p;
                double *rx = R->x;
                size_t nz = 0;
                s->prev_fixed[v] = 0;
                for (int q = cp[u]; q < cp[u + 1]; ++q) {
                    const int w = ci[q];
                    const uint32_t vw = (uint32_t)(w / (int)(n - 2) + 1) * n + (uint32_t)(w % (int)(n - 2)) + 1;
                    if (s->prev_fixed[vw]) continue;
                    ri[nz] = pinv[w];
                    rx[nz++] = cx[q];
                }
                rp[0] = 0;
                rp[1] = (int)nz;
                R->sorted = 0;
                ok = cholmod_rowadd((size_t)pinv[u], R, s->factor, &s->common) != 0;
            }
        }
    }
    cholmod_free_sparse(&R, &s->common);
    free(pinv);
    return ok && s->common.status == CHOLMOD_OK;
}

/* Solves slice k into op->values: `first` factorizes the slice's system
 * from scratch, else the factor of the previous slice is updated. */
static ssk_status solve_slice(op_job *job, op_slot *s, uint32_t k, bool first)
{
    ssk_implicit_op *op = job->op;
    const uint32_t n = op->resolution;
    const double h = 1.0 / (double)(n - 1);
    const double d = (double)k * h;
    const size_t nn = (size_t)n * n;

    /* Dirichlet values: Eq. 4.3 on the boundary, the profile inside */
    memset(s->fixed, 0, nn);
    for (size_t v = 0; v < nn; ++v) s->known[v] = 0.0;
    for (uint32_t t = 0; t < n; ++t) {
        const double f = t * h;
        s->known[t] = f;                              /* g(f1, 0) = f1 */
        s->known[(size_t)t * n] = f;                  /* g(0, f2) = f2 */
        s->known[(size_t)(n - 1) * n + t] = 1.0;      /* g(f1, 1) = 1 */
        s->known[(size_t)t * n + (n - 1)] = 1.0;      /* g(1, f2) = 1 */
    }
    s->known[0] = 0.0;
    op_profile pr;
    if (!profile_make(&pr, op->kind, d)) {
        profile_free(&pr);
        return SSK_ERROR_OUT_OF_MEMORY;
    }
    profile_constrain(&pr, n, s->fixed, s->known);
    profile_free(&pr);

    /* A (first slice of a chain) and b = -L_F^T W L known (free rows),
     * the value (fixed rows) */
    cholmod_sparse *A = first ? system_matrix(n, s->fixed, &s->common) : NULL;
    const size_t unknowns = (size_t)(n - 2) * (n - 2);
    cholmod_dense *b = cholmod_zeros(unknowns, 1, CHOLMOD_REAL, &s->common);
    if ((first && !A) || !b) {
        cholmod_free_sparse(&A, &s->common);
        cholmod_free_dense(&b, &s->common);
        return SSK_ERROR_OUT_OF_MEMORY;
    }
    const uint32_t rows = stencil_count(n);
    op_stencil st;
    for (uint32_t r = 0; r < rows; ++r) {
        stencil_get(n, r, &st);
        double acc = 0.0;
        for (uint32_t p = 0; p < st.count; ++p) {
            const uint32_t v = st.vertex[p];
            if (unknown_of(n, v) < 0 || s->fixed[v]) acc += st.coef[p] * s->known[v];
        }
        s->lg[r] = st.weight * acc;
    }
    double *bx = b->x;
    for (uint32_t r = 0; r < rows; ++r) {
        stencil_get(n, r, &st);
        for (uint32_t p = 0; p < st.count; ++p) {
            const uint32_t v = st.vertex[p];
            const int32_t u = unknown_of(n, v);
            if (u >= 0 && !s->fixed[v]) bx[u] -= st.coef[p] * s->lg[r];
        }
    }
    for (uint32_t j = 1; j + 1 < n; ++j)
        for (uint32_t i = 1; i + 1 < n; ++i)
            if (s->fixed[j * n + i]) bx[unknown_of(n, j * n + i)] = s->known[j * n + i];

    int factored;
    if (first) {
        /* a fresh copy of the analysis: the updates change the pattern */
        cholmod_free_factor(&s->factor, &s->common);
        s->factor = cholmod_copy_factor((cholmod_factor *)job->analysis, &s->common);
        factored = s->factor && cholmod_factorize(A, s->factor, &s->common);
        cholmod_free_sparse(&A, &s->common);
    } else {
        factored = factor_update(job, s);
    }
    memcpy(s->prev_fixed, s->fixed, nn);
    if (!factored || s->common.status != CHOLMOD_OK || !s->factor ||
        s->factor->minor < unknowns) {
        atomic_store(&job->cholmod_status, s->common.status);
        cholmod_free_dense(&b, &s->common);
        return s->common.status == CHOLMOD_OUT_OF_MEMORY ? SSK_ERROR_OUT_OF_MEMORY : SSK_ERROR_BIND;
    }
    cholmod_dense *x = cholmod_solve(CHOLMOD_A, s->factor, b, &s->common);
    cholmod_free_dense(&b, &s->common);
    if (!x) return SSK_ERROR_OUT_OF_MEMORY;
    const double *xx = x->x;
    float *out = op->values + (size_t)k * nn;
    for (uint32_t j = 0; j < n; ++j) {
        for (uint32_t i = 0; i < n; ++i) {
            const size_t v = (size_t)j * n + i;
            const int32_t u = unknown_of(n, v);
            out[v] = (float)(u < 0 || s->fixed[v] ? s->known[v] : xx[u]);
        }
    }
    cholmod_free_dense(&x, &s->common);
    return SSK_OK;
}

static void slice_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    op_job *job = ctx;
    (void)chunk;
    const uint32_t slot = ssk_parallel_slot();
    if (slot >= job->slot_count) { /* cannot happen: slots sized before the loop */
        atomic_store(&job->failure, SSK_ERROR_BIND);
        return;
    }
    op_slot *s = job->slots + slot;
    const uint32_t n = job->op->resolution;
    for (int64_t chain = begin; chain < end; ++chain) {
      const uint32_t k0 = (uint32_t)chain * job->chain_length;
      const uint32_t k1 = k0 + job->chain_length < n ? k0 + job->chain_length : n;
      for (uint32_t k = k0; k < k1; ++k) {
        if (atomic_load_explicit(&job->failure, memory_order_relaxed)) return;
        ssk_status st = slot_prepare(s, job->analysis, n) ? solve_slice(job, s, k, k == k0)
                                                          : SSK_ERROR_OUT_OF_MEMORY;
        if (st != SSK_OK) {
            int expected = 0;
            atomic_compare_exchange_strong(&job->failure, &expected, (int)st);
            return;
        }
      }
    }
}

ssk_status ssk_implicit_op_build(ssk_implicit_op *out, ssk_implicit_op_kind kind,
                                 uint32_t resolution, ssk_error *err)
{
    if (!out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_implicit_op_build: NULL out");
    memset(out, 0, sizeof *out);
    if (kind != SSK_IMPLICIT_OP_CONTACT && kind != SSK_IMPLICIT_OP_BULGE)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_implicit_op_build: unknown operator kind %d", (int)kind);
    if (resolution < SSK_IMPLICIT_OP_MIN_RESOLUTION || resolution > SSK_IMPLICIT_OP_MAX_RESOLUTION)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_implicit_op_build: resolution %u outside [%u, %u]", resolution,
                             SSK_IMPLICIT_OP_MIN_RESOLUTION, SSK_IMPLICIT_OP_MAX_RESOLUTION);
    const uint32_t n = resolution;
    out->kind = kind;
    out->resolution = n;
    out->values = malloc((size_t)n * n * n * sizeof *out->values);
    if (!out->values) {
        memset(out, 0, sizeof *out);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_implicit_op_build: out of memory");
    }

    /* one analysis of the common pattern */
    cholmod_common cc;
    cholmod_start(&cc);
    cc.print = 0;
    cc.error_handler = NULL;
    cc.supernodal = CHOLMOD_SIMPLICIAL;
    cc.nmethods = 1;
    cc.method[0].ordering = CHOLMOD_METIS;
    cholmod_sparse *pattern = system_matrix(n, NULL, &cc);
    cholmod_factor *analysis = pattern ? cholmod_analyze(pattern, &cc) : NULL;
    cholmod_sparse *full = pattern ? cholmod_copy(pattern, 0, 1, &cc) : NULL;
    cholmod_free_sparse(&pattern, &cc);
    if (!full) cholmod_free_factor(&analysis, &cc);
    ssk_status status = SSK_OK;
    int chol = CHOLMOD_OK;
    const uint32_t chains = (n + SSK_IMPLICIT_OP_CHAIN_LENGTH - 1) / SSK_IMPLICIT_OP_CHAIN_LENGTH;
    op_job job = {.op = out, .analysis = analysis, .full = full,
                  .chain_length = SSK_IMPLICIT_OP_CHAIN_LENGTH};
    atomic_init(&job.failure, 0);
    atomic_init(&job.cholmod_status, CHOLMOD_OK);
    if (!analysis) {
        status = cc.status == CHOLMOD_OUT_OF_MEMORY || cc.status == CHOLMOD_OK
                     ? SSK_ERROR_OUT_OF_MEMORY
                     : SSK_ERROR_BIND;
        chol = cc.status;
    } else {
        job.slot_count = ssk_parallel_threads();
        job.slots = calloc(job.slot_count, sizeof *job.slots);
        if (!job.slots) {
            status = SSK_ERROR_OUT_OF_MEMORY;
        } else {
            ssk_parallel_for(chains, 1, slice_chunk, &job);
            status = (ssk_status)atomic_load(&job.failure);
            chol = atomic_load(&job.cholmod_status);
            for (uint32_t t = 0; t < job.slot_count; ++t) slot_release(job.slots + t);
            free(job.slots);
        }
    }
    cholmod_free_factor(&analysis, &cc);
    cholmod_free_sparse(&full, &cc);
    cholmod_finish(&cc);
    if (status != SSK_OK) {
        ssk_implicit_op_free(out);
        if (status == SSK_ERROR_OUT_OF_MEMORY)
            return ssk_error_set(err, status, "ssk_implicit_op_build: out of memory");
        return ssk_error_set(err, status,
                             "ssk_implicit_op_build: the bi-harmonic system of %u^2 vertices "
                             "could not be factorized (CHOLMOD status %d)",
                             n, chol);
    }
    return ssk_error_ok(err);
}

void ssk_implicit_op_free(ssk_implicit_op *op)
{
    if (!op) return;
    free(op->values);
    memset(op, 0, sizeof *op);
}

ssk_status ssk_implicit_operators_create(ssk_implicit_operators **out, uint32_t resolution,
                                         ssk_error *err)
{
    if (out) *out = NULL;
    if (!out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_implicit_operators_create: NULL argument");
    if (resolution == 0) resolution = SSK_IMPLICIT_OPERATOR_RESOLUTION;
    ssk_implicit_operators *ops = calloc(1, sizeof *ops);
    if (!ops) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < SSK_IMPLICIT_OP_KIND_COUNT; ++k) {
        ssk_status st = ssk_implicit_op_build(&ops->ops[k], (ssk_implicit_op_kind)k, resolution, err);
        if (st != SSK_OK) {
            ssk_implicit_operators_destroy(ops);
            return st;
        }
    }
    *out = ops;
    return ssk_error_ok(err);
}

void ssk_implicit_operators_destroy(ssk_implicit_operators *ops)
{
    if (!ops) return;
    for (int k = 0; k < SSK_IMPLICIT_OP_KIND_COUNT; ++k) ssk_implicit_op_free(&ops->ops[k]);
    free(ops);
}
