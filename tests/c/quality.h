/*
 * quality.h — deformation quality measures and the straight-limb attachment
 * binding shared by test_attach.c and test_quality.c (static inline, so
 * every test that includes it compiles them itself). Double precision.
 */
#ifndef SSK_TEST_QUALITY_H
#define SSK_TEST_QUALITY_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "springskin.h"

/* A hand-made attachment binding of points of a limb along +Y whose bones
 * are the consecutive segments [b L, (b + 1) L] on the Y axis:
 * bone = floor(y / L) clamped to [0, bone_count), t = y / L - bone,
 * s = (x, 0, z). (The closest-point binding of Eq. 12 for such a limb.) */
typedef struct q_binding {
    uint32_t count;
    int32_t *bones;
    float *t;
    float *s;
} q_binding;

static inline q_binding q_limb_binding(const float *pos, uint32_t count, uint32_t bone_count,
                                       float bone_length)
{
    q_binding b = {count, malloc(count * sizeof(int32_t)), malloc(count * sizeof(float)),
                   malloc(3 * (size_t)count * sizeof(float))};
    for (uint32_t i = 0; i < count; ++i) {
        const double u = pos[3 * i + 1] / (double)bone_length;
        int32_t bone = (int32_t)floor(u);
        if (bone < 0) bone = 0;
        if (bone >= (int32_t)bone_count) bone = (int32_t)bone_count - 1;
        b.bones[i] = bone;
        b.t[i] = (float)(u - bone);
        b.s[3 * i] = pos[3 * i];
        b.s[3 * i + 1] = 0.0f;
        b.s[3 * i + 2] = pos[3 * i + 2];
    }
    return b;
}

static inline void q_binding_free(q_binding *b)
{
    free(b->bones);
    free(b->t);
    free(b->s);
}

/* Signed volume of a closed triangle mesh (divergence theorem:
 * sum over triangles of a . (b x c) / 6). */
static inline double q_volume(const float *pos, const int32_t *tri, uint32_t tri_count)
{
    double vol = 0.0;
    for (uint32_t f = 0; f < tri_count; ++f) {
        const float *a = pos + 3 * tri[3 * f], *b = pos + 3 * tri[3 * f + 1],
                    *c = pos + 3 * tri[3 * f + 2];
        const double cx = (double)b[1] * c[2] - (double)b[2] * c[1];
        const double cy = (double)b[2] * c[0] - (double)b[0] * c[2];
        const double cz = (double)b[0] * c[1] - (double)b[1] * c[0];
        vol += a[0] * cx + a[1] * cy + a[2] * cz;
    }
    return vol / 6.0;
}

/* Volume of the region a closed mesh encloses, self-overlap counted once:
 * the measure of the points whose winding number is not 0. The signed
 * volume above (the integral of the winding number) counts a region where
 * the skin passes through itself twice, so a bent limb whose inner side
 * interpenetrates looks fuller than it is. Columns parallel to Z on an
 * n x n grid over the bounding box (cell centers): each triangle that a
 * column crosses adds +1 or -1 (its normal's Z sign) to the winding number
 * above the crossing; the column's inside length is where the running sum
 * is not 0. Exact along Z, sampled in X and Y (error ~ 1/n of the
 * surface's projected outline). */
static int q_cross_cmp(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static inline double q_enclosed_volume(const float *pos, const int32_t *tri, uint32_t tri_count,
                                       uint32_t vertex_count, uint32_t n)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < vertex_count; ++i)
        for (int c = 0; c < 3; ++c) {
            lo[c] = fmin(lo[c], pos[3 * i + c]);
            hi[c] = fmax(hi[c], pos[3 * i + c]);
        }
    const double hx = (hi[0] - lo[0]) / n, hy = (hi[1] - lo[1]) / n;
    double *hits = (double *)malloc(2 * sizeof(double) * (tri_count + 1));
    double total = 0.0;
    for (uint32_t gx = 0; gx < n; ++gx)
        for (uint32_t gy = 0; gy < n; ++gy) {
            const double px = lo[0] + (gx + 0.5) * hx, py = lo[1] + (gy + 0.5) * hy;
            uint32_t m = 0;
            for (uint32_t f = 0; f < tri_count; ++f) {
                const float *a = pos + 3 * tri[3 * f], *b = pos + 3 * tri[3 * f + 1],
                            *c = pos + 3 * tri[3 * f + 2];
                /* barycentric coordinates of (px, py) in the XY projection */
                const double d = ((double)b[0] - a[0]) * ((double)c[1] - a[1]) -
                                 ((double)c[0] - a[0]) * ((double)b[1] - a[1]);
                if (d == 0.0) continue;
                const double u = ((px - a[0]) * ((double)c[1] - a[1]) -
                                  ((double)c[0] - a[0]) * (py - a[1])) / d;
                const double v = (((double)b[0] - a[0]) * (py - a[1]) -
                                  (px - a[0]) * ((double)b[1] - a[1])) / d;
                if (u < 0.0 || v < 0.0 || u + v > 1.0) continue;
                hits[2 * m] = a[2] + u * ((double)b[2] - a[2]) + v * ((double)c[2] - a[2]);
                /* crossing a face whose normal points up (d > 0) leaves the
                 * inside going up: the winding number above drops */
                hits[2 * m + 1] = d > 0.0 ? -1.0 : 1.0;
                ++m;
            }
            qsort(hits, m, 2 * sizeof(double), q_cross_cmp);
            double w = 0.0, inside = 0.0;
            for (uint32_t k = 0; k < m; ++k) {
                if (k > 0 && w != 0.0) inside += hits[2 * k] - hits[2 * (k - 1)];
                w += hits[2 * k + 1];
            }
            total += inside;
        }
    free(hits);
    return total * hx * hy;
}

/* Vector area magnitude |sum_k p_k x p_{k+1}| / 2 of the closed polygon of
 * n consecutive points (translation invariant; for a planar polygon, its
 * area). */
static inline double q_polygon_area(const float *pts, uint32_t n)
{
    double ax = 0, ay = 0, az = 0;
    for (uint32_t k = 0; k < n; ++k) {
        const float *p = pts + 3 * k, *q = pts + 3 * ((k + 1) % n);
        ax += (double)p[1] * q[2] - (double)p[2] * q[1];
        ay += (double)p[2] * q[0] - (double)p[0] * q[2];
        az += (double)p[0] * q[1] - (double)p[1] * q[0];
    }
    return 0.5 * sqrt(ax * ax + ay * ay + az * az);
}

/* Largest |e'| / |e| over the triangle edges (rest -> deformed): the
 * stretch across a discontinuity. */
static inline double q_max_edge_stretch(const float *rest, const float *def, const int32_t *tri,
                                        uint32_t tri_count)
{
    double worst = 0.0;
    for (uint32_t f = 0; f < tri_count; ++f)
        for (int e = 0; e < 3; ++e) {
            const int32_t i = tri[3 * f + e], j = tri[3 * f + (e + 1) % 3];
            double r2 = 0, d2 = 0;
            for (int k = 0; k < 3; ++k) {
                const double r = (double)rest[3 * i + k] - rest[3 * j + k];
                const double d = (double)def[3 * i + k] - def[3 * j + k];
                r2 += r * r;
                d2 += d * d;
            }
            if (r2 > 0.0 && sqrt(d2 / r2) > worst) worst = sqrt(d2 / r2);
        }
    return worst;
}

/* Distance from point v to segment a -> b. */
static inline double q_segment_distance(const double v[3], const double a[3], const double b[3])
{
    double d[3], w[3], dd = 0, wd = 0;
    for (int k = 0; k < 3; ++k) {
        d[k] = b[k] - a[k];
        w[k] = v[k] - a[k];
        dd += d[k] * d[k];
        wd += w[k] * d[k];
    }
    double u = dd > 0 ? wd / dd : 0;
    u = u < 0 ? 0 : (u > 1 ? 1 : u);
    double r2 = 0;
    for (int k = 0; k < 3; ++k) {
        const double e = w[k] - u * d[k];
        r2 += e * e;
    }
    return sqrt(r2);
}

#endif /* SSK_TEST_QUALITY_H */
