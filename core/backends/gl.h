/*
 * gl.h — internal interface of the OpenGL side of the core: the context
 * thread, the program cache, and the shader sources. Everything declared
 * "GL thread" must only be called from a job run by ssk_gl_context_run.
 */
#ifndef SSK_GL_H
#define SSK_GL_H

#include "model/internal.h"

#include <GL/glew.h>

/* A job executed on the context's GL thread with the context current. */
typedef void (*ssk_gl_job_fn)(void *user);

/* Runs fn(user) on the GL thread and waits for it to finish. Jobs from
 * several threads are serialized. Any thread except the GL thread. */
void ssk_gl_context_run(ssk_gl_context *ctx, ssk_gl_job_fn fn, void *user);

/* The info gathered at creation (owned by the context). Any thread. */
const ssk_gl_info *ssk_gl_context_info_ref(const ssk_gl_context *ctx);

/* GL thread. The compute program built from shader file `name` (e.g.
 * "kernels_lbs.comp"), compiled and linked on first use and cached in the context
 * until it is destroyed. Errors: SSK_ERROR_GL_SHADER with the file name and
 * the GLSL info log, SSK_ERROR_IO when the source cannot be found. */
ssk_status ssk_gl_compute_program(ssk_gl_context *ctx, const char *name, GLuint *out_program,
                                  ssk_error *err);

/* GL thread. A graphics program from a vertex and a fragment shader file
 * (e.g. "preview.vert", "preview.frag"), cached like compute programs. */
ssk_status ssk_gl_graphics_program(ssk_gl_context *ctx, const char *vertex_name,
                                   const char *fragment_name, GLuint *out_program,
                                   ssk_error *err);

/* GL thread. SSK_ERROR_GL naming `what` and the glGetError code when an
 * error is pending (all pending errors are drained); SSK_OK otherwise. */
ssk_status ssk_gl_check(const char *what, ssk_error *err);

/* Shader sources (shaders.c). The text of shader file `name` with every
 * line `#include "x_lib.glsl"` replaced by that file's text (one level, no
 * recursion), from `directory` when not NULL, else from the copies embedded
 * at build time. *out_text is malloc'ed; the caller frees it.
 * Errors: SSK_ERROR_IO (unknown name, unreadable file), SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_shader_source(char **out_text, const char *name, const char *directory,
                             ssk_error *err);

/* Generated at build time from shaders/ (build/generated/ssk_shaders.c). */
typedef struct ssk_embedded_shader {
    const char *name;
    const char *source;
} ssk_embedded_shader;
extern const ssk_embedded_shader ssk_embedded_shaders[];
extern const size_t ssk_embedded_shader_count;

#endif /* SSK_GL_H */
