/*
 * stroke.c — input strokes (Toothman 2020, 7.1): the reduced points
 * (stroke_reduce.c) interpolated by a composite cubic Bezier curve, and the
 * queries at t in [0, 1] the posing and editing tasks use (position,
 * timestamp, Frenet frame, closest t). The curve, its parameter and the
 * frame rule are specified in springskin.h (ssk_stroke).
 *
 * The curve is the C2 cubic spline through the knots in the chord-length
 * parameter s (interval h_i = |P_{i+1} - P_i|): its derivatives m_i solve
 * the tridiagonal system of C2 continuity
 *   h_i m_{i-1} + 2 (h_{i-1} + h_i) m_i + h_{i-1} m_{i+1}
 *       = 3 (h_i d_{i-1} + h_{i-1} d_i),   d_i = (P_{i+1} - P_i) / h_i,
 * with the Bessel end tangents (the parabola through three end knots);
 * each interval is then the Bezier P_i, P_i + h_i m_i / 3,
 * P_{i+1} - h_i m_{i+1} / 3, P_{i+1}.
 */
#include "model/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S SSK_STROKE_ARC_SAMPLES
/* Newton steps of the closest-point refinement. */
#define CLOSEST_NEWTON_STEPS 12

struct ssk_stroke {
    uint32_t knot_count, segment_count, sample_count; /* K, K - 1, (K - 1) S + 1 */
    double *knots;   /* K by 3 */
    double *times;   /* K */
    double *control; /* K - 1 by 4 by 3 */
    double *arc;     /* sample_count: arc length at each sample */
    double *sample;  /* sample_count by 3: positions */
    double *tangent; /* sample_count by 3 */
    double *normal;  /* sample_count by 3: the frame rule's N */
    double length, epsilon;
    int straight;
};

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(double *dst, const double *a, const double *b)
{
    const double x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2],
                 z = a[0] * b[1] - a[1] * b[0];
    dst[0] = x;
    dst[1] = y;
    dst[2] = z;
}

static double normalize3(double *v)
{
    const double l = sqrt(dot3(v, v));
    if (l > 0.0)
        for (int c = 0; c < 3; ++c) v[c] /= l;
    return l;
}

/* Position, first and second derivative of segment `seg` at u in [0, 1]. */
static void bezier(const ssk_stroke *st, uint32_t seg, double u, double *p, double *d1, double *d2)
{
    const double *c = st->control + 12 * (size_t)seg;
    const double v = 1.0 - u;
    for (int k = 0; k < 3; ++k) {
        const double c0 = c[k], c1 = c[3 + k], c2 = c[6 + k], c3 = c[9 + k];
        if (p) p[k] = v * v * v * c0 + 3 * v * v * u * c1 + 3 * v * u * u * c2 + u * u * u * c3;
        if (d1) d1[k] = 3 * (v * v * (c1 - c0) + 2 * v * u * (c2 - c1) + u * u * (c3 - c2));
        if (d2) d2[k] = 6 * (v * (c2 - 2 * c1 + c0) + u * (c3 - 2 * c2 + c1));
    }
}

/* (segment, u) of sample g. */
static void sample_site(const ssk_stroke *st, uint32_t g, uint32_t *seg, double *u)
{
    uint32_t s = g / S;
    if (s >= st->segment_count) s = st->segment_count - 1;
    *seg = s;
    *u = (double)(g - s * S) / S;
}

/* (segment, u) of t, and the sample at or below it. */
static void locate(const ssk_stroke *st, double t, uint32_t *seg, double *u, uint32_t *below)
{
    if (!(t > 0.0)) t = 0.0;
    if (t > 1.0) t = 1.0;
    const double s = t * st->length;
    uint32_t lo = 0, hi = st->sample_count - 1; /* arc[lo] <= s <= arc[hi] */
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (st->arc[mid] <= s) lo = mid;
        else hi = mid;
    }
    const double span = st->arc[hi] - st->arc[lo];
    double frac = span > 0.0 ? (s - st->arc[lo]) / span : 0.0;
    frac = frac < 0.0 ? 0.0 : (frac > 1.0 ? 1.0 : frac);
    uint32_t sg = lo / S;
    if (sg >= st->segment_count) sg = st->segment_count - 1;
    *seg = sg;
    *u = ((double)(lo - sg * S) + frac) / S;
    if (*u > 1.0) *u = 1.0;
    *below = lo;
}

/* t of (segment, u): the inverse of locate. */
static double parameter(const ssk_stroke *st, uint32_t seg, double u)
{
    double x = u * S;
    uint32_t k = (uint32_t)floor(x);
    if (k >= S) k = S - 1;
    const uint32_t g = seg * S + k;
    const double s = st->arc[g] + (x - k) * (st->arc[g + 1] - st->arc[g]);
    return st->length > 0.0 ? s / st->length : 0.0;
}

/* Unit tangent and curvature vector at (seg, u); returns the curvature. */
static double differential(const ssk_stroke *st, uint32_t seg, double u, double *p, double *tangent,
                           double *curvature)
{
    double d1[3], d2[3];
    bezier(st, seg, u, p, d1, d2);
    const double speed2 = dot3(d1, d1);
    memcpy(tangent, d1, sizeof d1);
    normalize3(tangent);
    const double along = dot3(d2, tangent);
    for (int k = 0; k < 3; ++k)
        curvature[k] = speed2 > 0.0 ? (d2[k] - along * tangent[k]) / speed2 : 0.0;
    return sqrt(dot3(curvature, curvature));
}

/* N made orthonormal to T. */
static void orthonormal_normal(double *n, const double *t)
{
    const double a = dot3(n, t);
    for (int k = 0; k < 3; ++k) n[k] -= a * t[k];
    normalize3(n);
}

/* The world axis least aligned with t, made perpendicular. */
static void fallback_normal(double *n, const double *t)
{
    int axis = 0;
    for (int k = 1; k < 3; ++k)
        if (fabs(t[k]) < fabs(t[axis])) axis = k;
    n[0] = n[1] = n[2] = 0.0;
    n[axis] = 1.0;
    orthonormal_normal(n, t);
}

void ssk_transport3(double dst[3], const double v[3], const double a[3], const double b[3])
{
    double c[3], cv[3];
    cross3(c, a, b);
    const double d = dot3(a, b);
    if (d < -1.0 + SSK_TRANSPORT_OPPOSITE_EPSILON) {
        /* opposite: a half turn about an axis k normal to a */
        double k[3];
        fallback_normal(k, a);
        const double kv = dot3(k, v);
        for (int i = 0; i < 3; ++i) dst[i] = 2.0 * kv * k[i] - v[i];
        return;
    }
    cross3(cv, c, v);
    const double cdv = dot3(c, v) / (1.0 + d);
    for (int i = 0; i < 3; ++i) dst[i] = d * v[i] + cv[i] + cdv * c[i];
}

/* The spline's knot derivatives (file comment). m: K by 3. */
static bool spline_derivatives(double *m, const double *p, uint32_t k_count)
{
    const uint32_t n = k_count;
    /* h, lower, diag, upper: n each; d: n by 3 */
    double *h = malloc(7 * (size_t)n * sizeof *h);
    if (!h) return false;
    double *lower = h + n, *diag = h + 2 * (size_t)n, *upper = h + 3 * (size_t)n,
           *d = h + 4 * (size_t)n;
    for (uint32_t i = 0; i + 1 < n; ++i) {
        double e[3];
        for (int c = 0; c < 3; ++c) e[c] = p[3 * (i + 1) + c] - p[3 * i + c];
        h[i] = sqrt(dot3(e, e));
        for (int c = 0; c < 3; ++c) d[3 * i + c] = e[c] / h[i];
    }
    /* rows: lower[i] m_{i-1} + diag[i] m_i + upper[i] m_{i+1} = rhs_i */
    for (uint32_t i = 0; i < n; ++i) {
        lower[i] = upper[i] = 0.0;
        diag[i] = 1.0;
        double *r = m + 3 * i;
        if (n == 2) {
            memcpy(r, d, 3 * sizeof *d); /* a straight segment */
        } else if (i == 0) {
            const double w = h[0] + h[1];
            for (int c = 0; c < 3; ++c)
                r[c] = d[c] * (2 * h[0] + h[1]) / w - d[3 + c] * h[0] / w;
        } else if (i == n - 1) {
            const double a = h[n - 3], b = h[n - 2], w = a + b;
            for (int c = 0; c < 3; ++c)
                r[c] = d[3 * (n - 2) + c] * (2 * b + a) / w - d[3 * (n - 3) + c] * b / w;
        } else {
            lower[i] = h[i];
            diag[i] = 2 * (h[i - 1] + h[i]);
            upper[i] = h[i - 1];
            for (int c = 0; c < 3; ++c)
                r[c] = 3 * (h[i] * d[3 * (i - 1) + c] + h[i - 1] * d[3 * i + c]);
        }
    }
    /* Thomas algorithm (strictly diagonally dominant rows) */
    for (uint32_t i = 1; i < n; ++i) {
        const double f = lower[i] / diag[i - 1];
        diag[i] -= f * upper[i - 1];
        for (int c = 0; c < 3; ++c) m[3 * i + c] -= f * m[3 * (i - 1) + c];
    }
    for (uint32_t i = n; i-- > 0;) {
        for (int c = 0; c < 3; ++c) {
            double r = m[3 * i + c];
            if (i + 1 < n) r -= upper[i] * m[3 * (i + 1) + c];
            m[3 * i + c] = r / diag[i];
        }
    }
    free(h);
    return true;
}

void ssk_stroke_destroy(ssk_stroke *st)
{
    if (!st) return;
    free(st->knots);
    free(st->times);
    free(st->control);
    free(st->arc);
    free(st->sample);
    free(st->tangent);
    free(st->normal);
    free(st);
}

/* The frame rule's normal at every sample (springskin.h, ssk_stroke). */
static void sample_normals(ssk_stroke *st)
{
    const uint32_t G = st->sample_count;
    int32_t first = -1;
    for (uint32_t g = 0; g < G; ++g) {
        uint32_t seg;
        double u, k[3];
        sample_site(st, g, &seg, &u);
        const double kappa =
            differential(st, seg, u, st->sample + 3 * g, st->tangent + 3 * g, k);
        double *n = st->normal + 3 * g;
        if (kappa * st->length > SSK_STROKE_STRAIGHT_EPSILON) {
            for (int c = 0; c < 3; ++c) n[c] = k[c] / kappa;
            orthonormal_normal(n, st->tangent + 3 * g);
            if (first < 0) first = (int32_t)g;
        } else {
            n[0] = n[1] = n[2] = NAN; /* filled below */
        }
    }
    st->straight = first < 0;
    if (first < 0) {
        first = 0;
        fallback_normal(st->normal, st->tangent);
    }
    for (int32_t g = first - 1; g >= 0; --g) {
        ssk_transport3(st->normal + 3 * g, st->normal + 3 * (g + 1), st->tangent + 3 * (g + 1),
                  st->tangent + 3 * g);
        orthonormal_normal(st->normal + 3 * g, st->tangent + 3 * g);
    }
    for (uint32_t g = (uint32_t)first + 1; g < G; ++g) {
        if (!isnan(st->normal[3 * g])) continue;
        ssk_transport3(st->normal + 3 * g, st->normal + 3 * (g - 1), st->tangent + 3 * (g - 1),
                  st->tangent + 3 * g);
        orthonormal_normal(st->normal + 3 * g, st->tangent + 3 * g);
    }
}

ssk_status ssk_stroke_create(ssk_stroke **out, const ssk_stroke_desc *desc, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !desc || !desc->points)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "stroke: NULL argument");
    const uint32_t n = desc->point_count, dim = desc->dimension;
    if (dim != 2 && dim != 3)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "stroke: dimension must be 2 or 3, got %u", dim);
    if (n < 2)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "stroke: at least 2 points are needed, got %u", n);
    /* finite and within SSK_MAX_MAGNITUDE (squares stay far from overflow) */
    for (size_t i = 0; i < (size_t)n * dim; ++i)
        if (!(fabs(desc->points[i]) <= SSK_MAX_MAGNITUDE))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "stroke: point %zu has a coordinate %g that is not finite or "
                                 "beyond SSK_MAX_MAGNITUDE (1e15)",
                                 i / dim, desc->points[i]);
    if (desc->times)
        for (uint32_t i = 0; i < n; ++i)
            if (!(fabs(desc->times[i]) <= SSK_MAX_MAGNITUDE))
                return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                     "stroke: timestamp %u (%g) is not finite or beyond "
                                     "SSK_MAX_MAGNITUDE (1e15)",
                                     i, desc->times[i]);
    const double eps_in = desc->epsilon;
    if (!(eps_in >= 0.0 || eps_in == SSK_STROKE_EPSILON_AUTO) || !isfinite(eps_in))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "stroke: epsilon must be >= 0 (or SSK_STROKE_EPSILON_AUTO), got %g",
                             eps_in);
    if (!(desc->scene_size >= 0.0 && desc->scene_size <= SSK_MAX_MAGNITUDE))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "stroke: scene_size must be >= 0, got %g", desc->scene_size);

    /* bounding diagonal, then repeated points dropped */
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t c = 0; c < dim; ++c) {
            const double x = desc->points[(size_t)i * dim + c];
            lo[c] = i == 0 || x < lo[c] ? x : lo[c];
            hi[c] = i == 0 || x > hi[c] ? x : hi[c];
        }
    double diag2 = 0.0;
    for (int c = 0; c < 3; ++c) diag2 += (hi[c] - lo[c]) * (hi[c] - lo[c]);
    const double diag = sqrt(diag2), repeat = SSK_STROKE_REPEAT_EPSILON * diag;
    double *pts = malloc(3 * (size_t)n * sizeof *pts);
    double *tms = malloc((size_t)n * sizeof *tms);
    uint8_t *keep = malloc(n);
    ssk_stroke *st = calloc(1, sizeof *st);
    if (!pts || !tms || !keep || !st) {
        free(pts), free(tms), free(keep), free(st);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "stroke: out of memory");
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; ++i) {
        double p[3] = {0, 0, 0};
        for (uint32_t c = 0; c < dim; ++c) p[c] = desc->points[(size_t)i * dim + c];
        if (m > 0) {
            double e2 = 0.0;
            for (int c = 0; c < 3; ++c) e2 += (p[c] - pts[3 * (m - 1) + c]) * (p[c] - pts[3 * (m - 1) + c]);
            if (!(sqrt(e2) > repeat)) continue;
        }
        memcpy(pts + 3 * (size_t)m, p, sizeof p);
        tms[m] = desc->times ? desc->times[i] : (double)i;
        ++m;
    }
    ssk_status status = SSK_OK;
    if (m < 2) {
        status = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "stroke: at least 2 distinct points are needed (all %u points "
                               "coincide)",
                               n);
        goto fail;
    }
    st->epsilon = eps_in != SSK_STROKE_EPSILON_AUTO
                      ? eps_in
                      : (dim == 2 ? SSK_STROKE_EPSILON_WINDOW_PX
                                  : SSK_STROKE_EPSILON_RELATIVE *
                                        (desc->scene_size > 0.0 ? desc->scene_size : diag));
    const uint32_t k_count = ssk_polyline_reduce(keep, pts, m, 3, st->epsilon);
    st->knot_count = k_count;
    st->segment_count = k_count - 1;
    st->sample_count = st->segment_count * S + 1;
    st->knots = malloc(3 * (size_t)k_count * sizeof *st->knots);
    st->times = malloc((size_t)k_count * sizeof *st->times);
    st->control = malloc(12 * (size_t)st->segment_count * sizeof *st->control);
    st->arc = malloc((size_t)st->sample_count * sizeof *st->arc);
    st->sample = malloc(3 * (size_t)st->sample_count * sizeof *st->sample);
    st->tangent = malloc(3 * (size_t)st->sample_count * sizeof *st->tangent);
    st->normal = malloc(3 * (size_t)st->sample_count * sizeof *st->normal);
    double *deriv = malloc(3 * (size_t)k_count * sizeof *deriv);
    if (!st->knots || !st->times || !st->control || !st->arc || !st->sample || !st->tangent ||
        !st->normal || !deriv) {
        free(deriv);
        status = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "stroke: out of memory");
        goto fail;
    }
    for (uint32_t i = 0, k = 0; i < m; ++i) {
        if (!keep[i]) continue;
        memcpy(st->knots + 3 * (size_t)k, pts + 3 * (size_t)i, 3 * sizeof(double));
        st->times[k++] = tms[i];
    }
    if (!spline_derivatives(deriv, st->knots, k_count)) {
        free(deriv);
        status = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "stroke: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < st->segment_count; ++i) {
        const double *p0 = st->knots + 3 * i, *p1 = p0 + 3;
        double e[3];
        for (int c = 0; c < 3; ++c) e[c] = p1[c] - p0[c];
        const double h = sqrt(dot3(e, e));
        double *c4 = st->control + 12 * (size_t)i;
        for (int c = 0; c < 3; ++c) {
            c4[c] = p0[c];
            c4[3 + c] = p0[c] + h * deriv[3 * i + c] / 3.0;
            c4[6 + c] = p1[c] - h * deriv[3 * (i + 1) + c] / 3.0;
            c4[9 + c] = p1[c];
        }
    }
    free(deriv);
    /* arc length over the samples' chords */
    st->arc[0] = 0.0;
    double prev[3];
    bezier(st, 0, 0.0, prev, NULL, NULL);
    for (uint32_t g = 1; g < st->sample_count; ++g) {
        uint32_t seg;
        double u, p[3], e[3];
        sample_site(st, g, &seg, &u);
        if (g == st->sample_count - 1) u = 1.0;
        bezier(st, seg, u, p, NULL, NULL);
        for (int c = 0; c < 3; ++c) e[c] = p[c] - prev[c];
        st->arc[g] = st->arc[g - 1] + sqrt(dot3(e, e));
        memcpy(prev, p, sizeof p);
    }
    st->length = st->arc[st->sample_count - 1];
    sample_normals(st);
    free(pts), free(tms), free(keep);
    *out = st;
    return ssk_error_ok(err);
fail:
    free(pts), free(tms), free(keep);
    ssk_stroke_destroy(st);
    return status;
}

uint32_t ssk_stroke_knot_count(const ssk_stroke *st) { return st ? st->knot_count : 0; }
const double *ssk_stroke_knots(const ssk_stroke *st) { return st ? st->knots : NULL; }
double ssk_stroke_epsilon(const ssk_stroke *st) { return st ? st->epsilon : 0.0; }
double ssk_stroke_length(const ssk_stroke *st) { return st ? st->length : 0.0; }
int ssk_stroke_is_straight(const ssk_stroke *st) { return st ? st->straight : 1; }

void ssk_stroke_position(const ssk_stroke *st, double t, double dst[3])
{
    if (!st || !dst) {
        if (dst) dst[0] = dst[1] = dst[2] = NAN;
        return;
    }
    uint32_t seg, below;
    double u;
    locate(st, t, &seg, &u, &below);
    bezier(st, seg, u, dst, NULL, NULL);
}

double ssk_stroke_time(const ssk_stroke *st, double t)
{
    if (!st) return NAN;
    uint32_t seg, below;
    double u;
    locate(st, t, &seg, &u, &below);
    return st->times[seg] + u * (st->times[seg + 1] - st->times[seg]);
}

void ssk_stroke_frame(const ssk_stroke *st, double t, double dst[9])
{
    if (!st || !dst) {
        for (int k = 0; dst && k < 9; ++k) dst[k] = NAN;
        return;
    }
    uint32_t seg, below;
    double u, p[3], k[3];
    locate(st, t, &seg, &u, &below);
    double *tan = dst, *n = dst + 3, *b = dst + 6;
    const double kappa = differential(st, seg, u, p, tan, k);
    if (kappa * st->length > SSK_STROKE_STRAIGHT_EPSILON) {
        for (int c = 0; c < 3; ++c) n[c] = k[c] / kappa;
    } else {
        ssk_transport3(n, st->normal + 3 * below, st->tangent + 3 * below, tan);
    }
    orthonormal_normal(n, tan);
    cross3(b, tan, n);
}

/* Minimizes |B(u) - p| over u in [u0, u1] of one segment; returns the
 * distance squared and the best u. */
static double refine(const ssk_stroke *st, uint32_t seg, double u0, double u1, const double *p,
                     double *best_u)
{
    double best = INFINITY;
    const double starts[3] = {u0, u1, 0.5 * (u0 + u1)};
    for (int s = 0; s < 3; ++s) {
        double u = starts[s];
        for (int it = 0; it < (s == 2 ? CLOSEST_NEWTON_STEPS : 0); ++it) {
            double q[3], d1[3], d2[3], r[3];
            bezier(st, seg, u, q, d1, d2);
            for (int c = 0; c < 3; ++c) r[c] = q[c] - p[c];
            const double f = dot3(r, d1), df = dot3(d1, d1) + dot3(r, d2);
            if (!(df > 0.0)) break;
            u -= f / df;
            u = u < u0 ? u0 : (u > u1 ? u1 : u);
        }
        double q[3], r[3];
        bezier(st, seg, u, q, NULL, NULL);
        for (int c = 0; c < 3; ++c) r[c] = q[c] - p[c];
        const double d2 = dot3(r, r);
        if (d2 < best) {
            best = d2;
            *best_u = u;
        }
    }
    return best;
}

double ssk_stroke_closest(const ssk_stroke *st, const double point[3], double *distance)
{
    if (!st || !point) {
        if (distance) *distance = NAN;
        return NAN;
    }
    uint32_t nearest = 0;
    double best = INFINITY;
    for (uint32_t g = 0; g < st->sample_count; ++g) {
        double r[3];
        for (int c = 0; c < 3; ++c) r[c] = st->sample[3 * g + c] - point[c];
        const double d2 = dot3(r, r);
        if (d2 < best) {
            best = d2;
            nearest = g;
        }
    }
    uint32_t best_seg;
    double best_u;
    sample_site(st, nearest, &best_seg, &best_u);
    if (nearest == st->sample_count - 1) best_u = 1.0;
    /* the chords on either side of the nearest sample */
    for (int side = -1; side <= 0; ++side) {
        const int64_t g0 = (int64_t)nearest + side;
        if (g0 < 0 || g0 + 1 >= (int64_t)st->sample_count) continue;
        uint32_t seg;
        double u0;
        sample_site(st, (uint32_t)g0, &seg, &u0);
        const double u1 = u0 + 1.0 / S;
        double u = u0;
        const double d2 = refine(st, seg, u0, u1 > 1.0 ? 1.0 : u1, point, &u);
        if (d2 < best) {
            best = d2;
            best_seg = seg;
            best_u = u;
        }
    }
    if (distance) *distance = sqrt(best);
    return parameter(st, best_seg, best_u);
}
