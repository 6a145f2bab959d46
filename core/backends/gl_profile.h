/*
 * gl_profile.h — GPU timestamps around the phases of a GL solve, printed to
 * stderr when SSK_GL_PROFILE=1 (gl_profile.c). GL thread only.
 */
#ifndef SSK_GL_PROFILE_H
#define SSK_GL_PROFILE_H

#include <GL/glew.h>
#include <stdbool.h>
#include <stdint.h>

#define SSK_GL_PROFILE_ENV "SSK_GL_PROFILE"
#define SSK_GL_PROFILE_MAX_MARKS 1024
#define SSK_GL_PROFILE_MAX_PHASES 16

typedef struct ssk_gl_profile {
    bool enabled;
    uint32_t count, phase_count;
    const char *const *names;                  /* phase_count names; [0] is the start */
    GLuint queries[SSK_GL_PROFILE_MAX_MARKS];
    uint8_t phase[SSK_GL_PROFILE_MAX_MARKS];
    double host[SSK_GL_PROFILE_MAX_MARKS];     /* microseconds, CLOCK_MONOTONIC */
} ssk_gl_profile;

/* Starts a profile when SSK_GL_PROFILE is set (and marks phase 0, the
 * start); otherwise leaves p disabled. phase_names: phase_count static
 * strings, at most SSK_GL_PROFILE_MAX_PHASES. */
void ssk_gl_profile_begin(ssk_gl_profile *p, const char *const *phase_names,
                          uint32_t phase_count);
/* The end of `phase` (the GPU and host time since the previous mark is
 * charged to it). Marks past SSK_GL_PROFILE_MAX_MARKS are dropped. */
void ssk_gl_profile_mark(ssk_gl_profile *p, uint32_t phase);
/* Reads the queries, prints "label: GPU profile: NAME count x mean us
 * (host mean us) ..." to stderr, frees the queries, disables p. */
void ssk_gl_profile_report(ssk_gl_profile *p, const char *label);

#endif
