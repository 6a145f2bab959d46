/*
 * stroke_reduce.c — Ramer-Douglas-Peucker polyline reduction (Toothman
 * 2020, 7.1: "defining a line segment l between the first and last point
 * ... finding the farthest point p from the segment. Assuming that
 * Distance(p, l) is below a threshold epsilon, all of the interior points
 * between a and b can be discarded ... [else] repeat recursively on the two
 * line segments a and p, and p and b"). The recursion is an explicit stack
 * of index ranges, so a long stroke cannot overflow the C stack.
 */
#include "model/internal.h"

#include <stdlib.h>

/* Squared distance from p to the segment a-b (dimension 2 or 3). */
static double segment_distance2(const double *p, const double *a, const double *b, uint32_t dim)
{
    double ab2 = 0.0, ap_ab = 0.0;
    for (uint32_t c = 0; c < dim; ++c) {
        ab2 += (b[c] - a[c]) * (b[c] - a[c]);
        ap_ab += (p[c] - a[c]) * (b[c] - a[c]);
    }
    double u = ab2 > 0.0 ? ap_ab / ab2 : 0.0;
    u = u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
    double d2 = 0.0;
    for (uint32_t c = 0; c < dim; ++c) {
        const double d = p[c] - (a[c] + u * (b[c] - a[c]));
        d2 += d * d;
    }
    return d2;
}

uint32_t ssk_polyline_reduce(uint8_t *keep, const double *points, uint32_t point_count,
                             uint32_t dimension, double epsilon)
{
    if (!keep || !points || point_count < 1 || (dimension != 2 && dimension != 3)) return 0;
    for (uint32_t i = 0; i < point_count; ++i) keep[i] = 0;
    keep[0] = keep[point_count - 1] = 1;
    if (point_count <= 2) return point_count;
    /* ranges (first, last) still to split; at most one pending range per
     * kept point, so N entries suffice */
    uint32_t *stack = malloc(2 * (size_t)point_count * sizeof *stack);
    const double eps2 = epsilon * epsilon;
    uint32_t kept = 2;
    if (!stack) {
        /* no memory for the stack: keep everything (never worse than the
         * input) */
        for (uint32_t i = 0; i < point_count; ++i) keep[i] = 1;
        return point_count;
    }
    size_t top = 0;
    stack[top++] = 0;
    stack[top++] = point_count - 1;
    while (top) {
        const uint32_t last = stack[--top], first = stack[--top];
        if (last <= first + 1) continue;
        const double *a = points + (size_t)dimension * first;
        const double *b = points + (size_t)dimension * last;
        double worst = -1.0;
        uint32_t index = first;
        for (uint32_t i = first + 1; i < last; ++i) {
            const double d2 = segment_distance2(points + (size_t)dimension * i, a, b, dimension);
            if (d2 > worst) {
                worst = d2;
                index = i;
            }
        }
        if (!(worst > eps2)) continue;
        keep[index] = 1;
        ++kept;
        stack[top++] = first;
        stack[top++] = index;
        stack[top++] = index;
        stack[top++] = last;
    }
    free(stack);
    return kept;
}
