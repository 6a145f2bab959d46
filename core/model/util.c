/* util.c — the core's small utilities that are not math: the finiteness
 * check of float arrays (input validation), the monotonic clock (timings in
 * reports), and a strdup that reports allocation failure. */
#include "model/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool ssk_floats_finite(const float *values, size_t count)
{
    for (size_t i = 0; i < count; ++i)
        if (!isfinite(values[i])) return false;
    return true;
}

bool ssk_floats_bounded(const float *values, size_t count)
{
    for (size_t i = 0; i < count; ++i)
        if (!(fabsf(values[i]) <= SSK_MAX_MAGNITUDE)) return false; /* NaN fails too */
    return true;
}

double ssk_time_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *ssk_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
