/*
 * gl_profile.c — GPU timestamps around the phases of a GL solve, for
 * developers (SSK_GL_PROFILE=1 in the environment; off otherwise, and
 * then every call is a no-op costing one branch).
 *
 * A solve marks the end of each phase with ssk_gl_profile_mark(p, PHASE):
 * glQueryCounter(GL_TIMESTAMP) records when the GPU got there, and the
 * host's clock when the CPU got there (the CPU side shows where the host
 * waits, e.g. in a read-back). The interval between consecutive marks is
 * charged to the later mark's phase. ssk_gl_profile_report reads the
 * queries (once, at the end of the solve: no stall in between) and prints
 * per phase: the number of intervals and the mean GPU and CPU microseconds.
 */
#include "backends/gl_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double host_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

void ssk_gl_profile_begin(ssk_gl_profile *p, const char *const *phase_names,
                          uint32_t phase_count)
{
    memset(p, 0, sizeof *p);
    const char *env = getenv(SSK_GL_PROFILE_ENV);
    if (!env || !*env || strcmp(env, "0") == 0) return;
    if (phase_count > SSK_GL_PROFILE_MAX_PHASES) phase_count = SSK_GL_PROFILE_MAX_PHASES;
    p->enabled = true;
    p->names = phase_names;
    p->phase_count = phase_count;
    glGenQueries(SSK_GL_PROFILE_MAX_MARKS, p->queries);
    ssk_gl_profile_mark(p, 0);
}

void ssk_gl_profile_mark(ssk_gl_profile *p, uint32_t phase)
{
    if (!p->enabled || p->count >= SSK_GL_PROFILE_MAX_MARKS || phase >= p->phase_count) return;
    glQueryCounter(p->queries[p->count], GL_TIMESTAMP);
    p->phase[p->count] = (uint8_t)phase;
    p->host[p->count] = host_us();
    p->count++;
}

void ssk_gl_profile_report(ssk_gl_profile *p, const char *label)
{
    if (!p->enabled) return;
    double gpu[SSK_GL_PROFILE_MAX_PHASES] = {0}, cpu[SSK_GL_PROFILE_MAX_PHASES] = {0};
    uint32_t n[SSK_GL_PROFILE_MAX_PHASES] = {0};
    GLuint64 prev = 0;
    for (uint32_t i = 0; i < p->count; ++i) {
        GLuint64 t = 0;
        glGetQueryObjectui64v(p->queries[i], GL_QUERY_RESULT, &t);
        if (i > 0) {
            const uint32_t ph = p->phase[i];
            gpu[ph] += (double)(t - prev) * 1e-3;
            cpu[ph] += p->host[i] - p->host[i - 1];
            n[ph]++;
        }
        prev = t;
    }
    fprintf(stderr, "%s: GPU profile (%u marks%s):", label, p->count,
            p->count >= SSK_GL_PROFILE_MAX_MARKS ? ", truncated" : "");
    for (uint32_t ph = 1; ph < p->phase_count; ++ph)
        if (n[ph])
            fprintf(stderr, " %s %u x %.1f us (host %.1f us)", p->names[ph], n[ph],
                    gpu[ph] / n[ph], cpu[ph] / n[ph]);
    fprintf(stderr, "\n");
    glDeleteQueries(SSK_GL_PROFILE_MAX_MARKS, p->queries);
    p->enabled = false;
}
