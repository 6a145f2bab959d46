/*
 * Stage preview (core/preview/, the highest): the offscreen renderer,
 * above the deformer that it runs once per method.
 *
 * preview.c — offscreen preview of an animation frame: every mesh of the
 * scene deformed by each requested method, rendered side by side with the
 * core's own headless GL context, labelled with cairo, written with libpng.
 *
 * Pipeline (ssk_scene_preview):
 * 1. validate the description, sample the animation at t = frame / fps;
 * 2. deform the animation's first frame with the first method (its bounding
 *    box orients the camera, see below); per method, deform on desc->backend (an ssk_deformer sharing the preview's context),
 *    move each mesh to rig space with its object matrix at the frame
 *    (O_m(t) · p) and compute area-weighted normals there (ssk_rig_normals
 *    on the rig-space positions: the true normals of the displayed surface,
 *    whatever the object matrices' scale or handedness);
 * 3. one GL job on the context thread: an FBO of width x height (RGBA8 color
 *    and DEPTH24 renderbuffers, 4x multisampled when the driver allows it,
 *    resolved into a single-sampled RGBA8 FBO), one viewport per panel, one
 *    VAO with the rig-space positions and normals of the panel and the
 *    triangles of all meshes (meshes without triangles are drawn as
 *    points), Lambert + ambient shading (preview.vert / preview.frag), then
 *    glReadPixels as GL_BGRA / GL_UNSIGNED_INT_8_8_8_8_REV, which is
 *    exactly cairo's native 32-bit pixel on any endianness; every GL object
 *    is deleted before the job returns;
 * 4. the rows are flipped (GL is bottom-up), cairo draws the labels (the
 *    method name in capitals, centered in a band at the top of each panel)
 *    and one-pixel separators between panels over the same buffer, and
 *    libpng writes an 8-bit RGB PNG to "<path>.tmp-<pid>", which is renamed
 *    onto the path; on any failure the temporary file is removed.
 *
 * Camera (the same for every panel): orthographic, axis-aligned with rig
 * space. "Up" is the longest axis of the bounding box of the rest pose,
 * taken as the animation's first frame (t = 0) deformed by the first
 * method, in rig space. Not the bind pose: files often store the bind pose
 * in another orientation than the animation's (BCN_Epileptic.X binds along
 * Z, upside down, and its animation stands along Y), while the first frame
 * is how the animation presents the character, and it does not depend on
 * the frame shown. Of the two other axes the shorter is the depth axis (a
 * standing character is thinner front to back than side to side) and the
 * longer one is "right", both in their positive direction; the camera
 * looks from right x up. This gives the usual front views: Y up with X
 * right looks from +Z (OpenGL / glTF / most .X and .fbx files), Z up with X
 * right looks from -Y (Blender's front view). The view frames the union of
 * the bounding boxes of all panels' deformed meshes at the frame shown (so
 * the panels are directly comparable pixel for pixel) with a margin, below
 * the label band, with the same scale in pixels per unit for every panel.
 */
#include "backends/gl.h"
#include "bind/cage.h"

#include <cairo.h>
#include <png.h>

#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Accepted image sizes (each of width and height), pixels. */
#define PREVIEW_MIN_SIZE 16u
#define PREVIEW_MAX_SIZE 8192u
/* Accepted number of panels (methods). */
#define PREVIEW_MAX_METHODS 8u

/* Multisampling of the render target when the driver allows it and the
 * image has at most MSAA_MAX_PIXELS pixels (beyond, the samples would cost
 * gigabytes on a software renderer, and the image is fine enough). */
#define PREVIEW_MSAA_SAMPLES 4
#define PREVIEW_MSAA_MAX_PIXELS (4096u * 4096u)

/* Label band at the top of every panel: this fraction of the image height,
 * clamped to [MIN, MAX] pixels and to half the height; the label's font
 * size is FONT_FRACTION of the band. */
#define PREVIEW_LABEL_BAND_FRACTION 0.08
#define PREVIEW_LABEL_BAND_MIN 12u
#define PREVIEW_LABEL_BAND_MAX 96u
#define PREVIEW_LABEL_FONT_FRACTION 0.6
#define PREVIEW_LABEL_FONT_FAMILY "sans-serif"
/* Separator between panels, pixels wide per this many image pixels (>= 1). */
#define PREVIEW_SEPARATOR_PER_PIXELS 800u

/* Empty space around the framed bounding box, fraction of its extent on
 * each side. */
#define PREVIEW_FRAME_MARGIN 0.06
/* Half extent used along an axis where the framed box is flat (a planar or
 * single-point mesh), as a fraction of the largest half extent, or in model
 * units when everything is a point. */
#define PREVIEW_FLAT_EXTENT_FRACTION 0.01
#define PREVIEW_POINT_HALF_EXTENT 1.0

/* Colors, linear 0..1 RGB (written as is to the 8-bit target). The mesh can
 * never reach the background: its brightest value is the material. */
#define PREVIEW_BACKGROUND_R 0.96f
#define PREVIEW_BACKGROUND_G 0.96f
#define PREVIEW_BACKGROUND_B 0.96f
#define PREVIEW_MATERIAL_R 0.70f
#define PREVIEW_MATERIAL_G 0.72f
#define PREVIEW_MATERIAL_B 0.76f
#define PREVIEW_AMBIENT 0.3f
#define PREVIEW_LABEL_GRAY 0.08
#define PREVIEW_SEPARATOR_GRAY 0.45
/* Key light direction in camera coordinates (right, up, toward camera):
 * from the upper left, in front. Normalized before use. */
#define PREVIEW_LIGHT_RIGHT (-0.45f)
#define PREVIEW_LIGHT_UP 0.55f
#define PREVIEW_LIGHT_TOWARD 0.75f

/* Uniform locations of preview.vert / preview.frag. */
#define PREVIEW_U_VIEW_PROJECTION 0
#define PREVIEW_U_TOWARD_CAMERA 4
#define PREVIEW_U_LIGHT 5
#define PREVIEW_U_MATERIAL 6
#define PREVIEW_U_AMBIENT 7
/* Vertex attribute locations. */
#define PREVIEW_A_POSITION 0
#define PREVIEW_A_NORMAL 1

/* ------------------------------------------------------------------------ */
/* Camera                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct preview_camera {
    float right[3], up[3], toward[3]; /* signed unit axes of rig space */
    float center[3];                  /* of the framed box, rig space */
    float half_depth;                 /* along `toward`, margin included */
    double units_per_pixel;           /* same for every panel */
    float light[3];                   /* unit, rig space */
} preview_camera;

typedef struct bbox {
    float lo[3], hi[3];
} bbox;

static void bbox_empty(bbox *b)
{
    for (int k = 0; k < 3; ++k) {
        b->lo[k] = FLT_MAX;
        b->hi[k] = -FLT_MAX;
    }
}

static void bbox_add(bbox *b, const float p[3])
{
    for (int k = 0; k < 3; ++k) {
        if (p[k] < b->lo[k]) b->lo[k] = p[k];
        if (p[k] > b->hi[k]) b->hi[k] = p[k];
    }
}

static bool bbox_finite(const bbox *b)
{
    for (int k = 0; k < 3; ++k)
        if (!isfinite(b->lo[k]) || !isfinite(b->hi[k]) || b->lo[k] > b->hi[k])
            return false;
    return true;
}

static float dot3(const float a[3], const float b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(float dst[3], const float a[3], const float b[3])
{
    float c[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                  a[0] * b[1] - a[1] * b[0]};
    memcpy(dst, c, sizeof c);
}

/* Chooses the axes from the reference (rest) box and frames `framed` (see
 * the file comment). panel_width: the narrowest panel; view_height: the
 * panel height below the label band. */
static void camera_build(preview_camera *cam, const bbox *reference, const bbox *framed,
                         uint32_t panel_width, uint32_t view_height)
{
    float rest_extent[3];
    for (int k = 0; k < 3; ++k) rest_extent[k] = reference->hi[k] - reference->lo[k];
    int up = 0;
    for (int k = 1; k < 3; ++k)
        if (rest_extent[k] > rest_extent[up]) up = k;
    /* Ties: up is the first longest axis; of the two others the depth is
     * the shorter, and on a tie the one with the higher index, so that
     * "right" is X whenever X is not up (Y up looks from +Z, Z up from -Y). */
    int a = (up + 1) % 3, b = (up + 2) % 3;
    int lower = a < b ? a : b, higher = a < b ? b : a;
    int depth = rest_extent[lower] < rest_extent[higher] ? lower : higher;
    int right = depth == lower ? higher : lower;
    memset(cam, 0, sizeof *cam);
    cam->right[right] = 1.0f;
    cam->up[up] = 1.0f;
    cross3(cam->toward, cam->right, cam->up);

    float half[3];
    for (int k = 0; k < 3; ++k) {
        cam->center[k] = 0.5f * (framed->lo[k] + framed->hi[k]);
        half[k] = 0.5f * (framed->hi[k] - framed->lo[k]);
    }
    float largest = fmaxf(half[0], fmaxf(half[1], half[2]));
    float floor_extent = largest > 0.0f
                             ? largest * (float)PREVIEW_FLAT_EXTENT_FRACTION
                             : (float)PREVIEW_POINT_HALF_EXTENT;
    float half_right = fmaxf(half[right], floor_extent);
    float half_up = fmaxf(half[up], floor_extent);
    float half_depth = fmaxf(half[depth], floor_extent);
    double scale = 1.0 + 2.0 * PREVIEW_FRAME_MARGIN;
    double per_x = 2.0 * half_right * scale / (double)panel_width;
    double per_y = 2.0 * half_up * scale / (double)view_height;
    cam->units_per_pixel = per_x > per_y ? per_x : per_y;
    cam->half_depth = (float)(half_depth * scale);

    float light[3];
    for (int k = 0; k < 3; ++k)
        light[k] = PREVIEW_LIGHT_RIGHT * cam->right[k] + PREVIEW_LIGHT_UP * cam->up[k] +
                   PREVIEW_LIGHT_TOWARD * cam->toward[k];
    float len = sqrtf(dot3(light, light));
    for (int k = 0; k < 3; ++k) cam->light[k] = light[k] / len;
}

/* Row-major view-projection of a viewport `width` x `height` pixels:
 * rig space -> clip space, orthographic, near plane toward the camera. */
static void camera_matrix(float m[16], const preview_camera *cam, uint32_t width,
                          uint32_t height)
{
    float half_x = (float)(cam->units_per_pixel * 0.5 * (double)width);
    float half_y = (float)(cam->units_per_pixel * 0.5 * (double)height);
    const float *rows[3] = {cam->right, cam->up, cam->toward};
    /* z: -1 at the near plane (toward the camera), +1 at the far one. */
    float scales[3] = {1.0f / half_x, 1.0f / half_y, -1.0f / cam->half_depth};
    for (int r = 0; r < 3; ++r) {
        for (int k = 0; k < 3; ++k) m[r * 4 + k] = rows[r][k] * scales[r];
        m[r * 4 + 3] = -dot3(rows[r], cam->center) * scales[r];
    }
    m[12] = m[13] = m[14] = 0.0f;
    m[15] = 1.0f;
}

/* ------------------------------------------------------------------------ */
/* GL job                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct point_range {
    uint32_t first, count;
} point_range;

typedef struct preview_job {
    ssk_gl_context *ctx;
    uint32_t width, height, panel_count, view_height;
    uint32_t vertex_count;
    const float *positions;  /* panel_count by #V by 3, rig space */
    const float *normals;    /* panel_count by #V by 3, rig space */
    const uint32_t *indices; /* index_count, whole-rig vertex rows */
    size_t index_count;
    const point_range *points; /* meshes without triangles */
    uint32_t point_range_count;
    const preview_camera *camera;
    uint32_t *pixels; /* out: width x height, cairo RGB24, bottom-up */
    ssk_error *err;
    ssk_status status;
} preview_job;

/* Left edge of panel p of n over `width` pixels. */
static uint32_t panel_left(uint32_t p, uint32_t n, uint32_t width)
{
    return (uint32_t)((uint64_t)p * width / n);
}

static void make_renderbuffer(GLuint *out, GLsizei samples, GLenum format,
                              uint32_t width, uint32_t height)
{
    glGenRenderbuffers(1, out);
    glBindRenderbuffer(GL_RENDERBUFFER, *out);
    if (samples > 1)
        glRenderbufferStorageMultisample(GL_RENDERBUFFER, samples, format, (GLsizei)width,
                                         (GLsizei)height);
    else
        glRenderbufferStorage(GL_RENDERBUFFER, format, (GLsizei)width, (GLsizei)height);
}

static ssk_status framebuffer_complete(const char *what, ssk_error *err)
{
    GLenum state = glCheckFramebufferStatus(GL_FRAMEBUFFER);
    if (state != GL_FRAMEBUFFER_COMPLETE)
        return ssk_error_set(err, SSK_ERROR_GL,
                             "preview: %s framebuffer incomplete (status 0x%04x)", what,
                             (unsigned)state);
    return SSK_OK;
}

static ssk_status preview_render(preview_job *job)
{
    ssk_error *err = job->err;
    (void)ssk_gl_check("preview: earlier job", NULL); /* drain stale errors */
    GLuint program = 0;
    ssk_status s = ssk_gl_graphics_program(job->ctx, "preview.vert", "preview.frag",
                                           &program, err);
    if (s != SSK_OK) return s;

    GLint max_renderbuffer = 0, max_viewport[2] = {0, 0}, max_samples = 0;
    glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &max_renderbuffer);
    glGetIntegerv(GL_MAX_VIEWPORT_DIMS, max_viewport);
    glGetIntegerv(GL_MAX_SAMPLES, &max_samples);
    if ((GLint)job->width > max_renderbuffer || (GLint)job->height > max_renderbuffer ||
        (GLint)job->width > max_viewport[0] || (GLint)job->height > max_viewport[1])
        return ssk_error_set(err, SSK_ERROR_GL,
                             "preview: %ux%u exceeds this GL's limits (renderbuffer "
                             "%d, viewport %dx%d)",
                             (unsigned)job->width, (unsigned)job->height,
                             (int)max_renderbuffer, (int)max_viewport[0],
                             (int)max_viewport[1]);
    bool small = (uint64_t)job->width * job->height <= PREVIEW_MSAA_MAX_PIXELS;
    GLsizei samples = (max_samples < PREVIEW_MSAA_SAMPLES || !small) ? 0 : PREVIEW_MSAA_SAMPLES;

    /* render: [0] color, [1] depth; resolve: [2] color (samples > 1 only). */
    GLuint renderbuffers[3] = {0, 0, 0};
    GLuint framebuffers[2] = {0, 0};
    GLuint vao = 0, buffers[3] = {0, 0, 0}; /* positions, normals, indices */
    size_t floats = (size_t)job->vertex_count * 3;
    GLsizeiptr attribute_bytes = (GLsizeiptr)(floats * sizeof(float));

    make_renderbuffer(&renderbuffers[0], samples, GL_RGBA8, job->width, job->height);
    make_renderbuffer(&renderbuffers[1], samples, GL_DEPTH_COMPONENT24, job->width,
                      job->height);
    glGenFramebuffers(1, &framebuffers[0]);
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffers[0]);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER,
                              renderbuffers[0]);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER,
                              renderbuffers[1]);
    s = ssk_gl_check("preview: creating the render target", err);
    if (s == SSK_OK) s = framebuffer_complete("render", err);
    if (s != SSK_OK) goto done;

    glGenVertexArrays(1, &vao);
    glBindVertexArray(vao);
    glGenBuffers(3, buffers);
    glBindBuffer(GL_ARRAY_BUFFER, buffers[0]);
    glBufferData(GL_ARRAY_BUFFER, attribute_bytes, NULL, GL_STREAM_DRAW);
    glVertexAttribPointer(PREVIEW_A_POSITION, 3, GL_FLOAT, GL_FALSE, 0, NULL);
    glEnableVertexAttribArray(PREVIEW_A_POSITION);
    glBindBuffer(GL_ARRAY_BUFFER, buffers[1]);
    glBufferData(GL_ARRAY_BUFFER, attribute_bytes, NULL, GL_STREAM_DRAW);
    glVertexAttribPointer(PREVIEW_A_NORMAL, 3, GL_FLOAT, GL_FALSE, 0, NULL);
    glEnableVertexAttribArray(PREVIEW_A_NORMAL);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, buffers[2]);
    if (job->index_count)
        glBufferData(GL_ELEMENT_ARRAY_BUFFER,
                     (GLsizeiptr)(job->index_count * sizeof(uint32_t)), job->indices,
                     GL_STATIC_DRAW);
    s = ssk_gl_check("preview: creating the vertex buffers", err);
    if (s != SSK_OK) goto done;

    glUseProgram(program);
    glUniform3fv(PREVIEW_U_TOWARD_CAMERA, 1, job->camera->toward);
    glUniform3fv(PREVIEW_U_LIGHT, 1, job->camera->light);
    glUniform3f(PREVIEW_U_MATERIAL, PREVIEW_MATERIAL_R, PREVIEW_MATERIAL_G,
                PREVIEW_MATERIAL_B);
    glUniform1f(PREVIEW_U_AMBIENT, PREVIEW_AMBIENT);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LESS);
    glDisable(GL_CULL_FACE);
    glDisable(GL_SCISSOR_TEST);
    glDisable(GL_BLEND);
    if (samples > 1) glEnable(GL_MULTISAMPLE);
    glViewport(0, 0, (GLsizei)job->width, (GLsizei)job->height);
    glClearColor(PREVIEW_BACKGROUND_R, PREVIEW_BACKGROUND_G, PREVIEW_BACKGROUND_B, 1.0f);
    glClearDepth(1.0);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);

    for (uint32_t p = 0; p < job->panel_count; ++p) {
        uint32_t x0 = panel_left(p, job->panel_count, job->width);
        uint32_t x1 = panel_left(p + 1, job->panel_count, job->width);
        float matrix[16];
        camera_matrix(matrix, job->camera, x1 - x0, job->view_height);
        glUniformMatrix4fv(PREVIEW_U_VIEW_PROJECTION, 1, GL_TRUE, matrix);
        glViewport((GLint)x0, 0, (GLsizei)(x1 - x0), (GLsizei)job->view_height);
        glBindBuffer(GL_ARRAY_BUFFER, buffers[0]);
        glBufferSubData(GL_ARRAY_BUFFER, 0, attribute_bytes, job->positions + p * floats);
        glBindBuffer(GL_ARRAY_BUFFER, buffers[1]);
        glBufferSubData(GL_ARRAY_BUFFER, 0, attribute_bytes, job->normals + p * floats);
        if (job->index_count)
            glDrawElements(GL_TRIANGLES, (GLsizei)job->index_count, GL_UNSIGNED_INT, NULL);
        for (uint32_t r = 0; r < job->point_range_count; ++r)
            glDrawArrays(GL_POINTS, (GLint)job->points[r].first,
                         (GLsizei)job->points[r].count);
        s = ssk_gl_check("preview: drawing a panel", err);
        if (s != SSK_OK) goto done;
    }

    GLuint read_framebuffer = framebuffers[0];
    if (samples > 1) {
        make_renderbuffer(&renderbuffers[2], 0, GL_RGBA8, job->width, job->height);
        glGenFramebuffers(1, &framebuffers[1]);
        glBindFramebuffer(GL_FRAMEBUFFER, framebuffers[1]);
        glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER,
                                  renderbuffers[2]);
        s = ssk_gl_check("preview: creating the resolve target", err);
        if (s == SSK_OK) s = framebuffer_complete("resolve", err);
        if (s != SSK_OK) goto done;
        glBindFramebuffer(GL_READ_FRAMEBUFFER, framebuffers[0]);
        glBindFramebuffer(GL_DRAW_FRAMEBUFFER, framebuffers[1]);
        glBlitFramebuffer(0, 0, (GLint)job->width, (GLint)job->height, 0, 0,
                          (GLint)job->width, (GLint)job->height, GL_COLOR_BUFFER_BIT,
                          GL_NEAREST);
        read_framebuffer = framebuffers[1];
    }
    glBindFramebuffer(GL_READ_FRAMEBUFFER, read_framebuffer);
    glReadBuffer(GL_COLOR_ATTACHMENT0);
    glPixelStorei(GL_PACK_ALIGNMENT, 4);
    glReadPixels(0, 0, (GLsizei)job->width, (GLsizei)job->height, GL_BGRA,
                 GL_UNSIGNED_INT_8_8_8_8_REV, job->pixels);
    s = ssk_gl_check("preview: reading the image back", err);

done:
    glDisable(GL_DEPTH_TEST);
    glUseProgram(0);
    glBindVertexArray(0);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glBindRenderbuffer(GL_RENDERBUFFER, 0);
    if (vao) glDeleteVertexArrays(1, &vao);
    glDeleteBuffers(3, buffers);
    glDeleteFramebuffers(2, framebuffers);
    glDeleteRenderbuffers(3, renderbuffers);
    if (s == SSK_OK) s = ssk_gl_check("preview: releasing GL objects", err);
    else (void)ssk_gl_check("preview: releasing GL objects", NULL);
    return s;
}

static void preview_job_run(void *user)
{
    preview_job *job = user;
    job->status = preview_render(job);
}

/* ------------------------------------------------------------------------ */
/* Labels (cairo)                                                            */
/* ------------------------------------------------------------------------ */

/* Label band height of an image `height` pixels high. */
static uint32_t label_band(uint32_t height)
{
    double band = floor((double)height * PREVIEW_LABEL_BAND_FRACTION + 0.5);
    if (band < PREVIEW_LABEL_BAND_MIN) band = PREVIEW_LABEL_BAND_MIN;
    if (band > PREVIEW_LABEL_BAND_MAX) band = PREVIEW_LABEL_BAND_MAX;
    if (band > height / 2) band = height / 2;
    return (uint32_t)band;
}

/* Reverses the row order of a width x height image in place. */
static ssk_status flip_rows(uint32_t *pixels, uint32_t width, uint32_t height,
                            ssk_error *err)
{
    size_t row_bytes = (size_t)width * sizeof(uint32_t);
    uint32_t *tmp = malloc(row_bytes);
    if (!tmp)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "preview: cannot allocate a %zu-byte row", row_bytes);
    for (uint32_t y = 0; y < height / 2; ++y) {
        uint32_t *a = pixels + (size_t)y * width;
        uint32_t *b = pixels + (size_t)(height - 1 - y) * width;
        memcpy(tmp, a, row_bytes);
        memcpy(a, b, row_bytes);
        memcpy(b, tmp, row_bytes);
    }
    free(tmp);
    return SSK_OK;
}

/* The attachment of panel p (WEIGHTS, the default, without a list). */
static ssk_attachment_mode panel_attachment(const ssk_preview_desc *desc, uint32_t p)
{
    return desc->attachments ? desc->attachments[p] : SSK_ATTACHMENT_WEIGHTS;
}

/* Draws the panel labels and separators over the top-down image. */
static ssk_status draw_labels(uint32_t *pixels, uint32_t width, uint32_t height,
                              const ssk_preview_desc *desc, uint32_t count, uint32_t band,
                              ssk_error *err)
{
    int stride = cairo_format_stride_for_width(CAIRO_FORMAT_RGB24, (int)width);
    if (stride != (int)(width * sizeof(uint32_t)))
        return ssk_error_set(err, SSK_ERROR_UNSUPPORTED,
                             "preview: cairo wants a stride of %d bytes for %u pixels",
                             stride, (unsigned)width);
    cairo_surface_t *surface = cairo_image_surface_create_for_data(
        (unsigned char *)pixels, CAIRO_FORMAT_RGB24, (int)width, (int)height, stride);
    cairo_t *cr = cairo_create(surface);
    cairo_status_t cs = cairo_status(cr);
    if (cs == CAIRO_STATUS_SUCCESS) {
        cairo_select_font_face(cr, PREVIEW_LABEL_FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL,
                               CAIRO_FONT_WEIGHT_BOLD);
        cairo_set_font_size(cr, (double)band * PREVIEW_LABEL_FONT_FRACTION);
        cairo_set_source_rgb(cr, PREVIEW_LABEL_GRAY, PREVIEW_LABEL_GRAY,
                             PREVIEW_LABEL_GRAY);
        for (uint32_t p = 0; p < count; ++p) {
            const ssk_method method = desc->methods[p];
            const char *name = ssk_method_name(method);
            char label[32];
            size_t n = 0;
            for (; name[n] && n + 1 < sizeof label; ++n)
                label[n] = (name[n] >= 'a' && name[n] <= 'z') ? (char)(name[n] - 'a' + 'A')
                                                              : name[n];
            label[n] = '\0';
            if (panel_attachment(desc, p) == SSK_ATTACHMENT_BINDING &&
                (method == SSK_METHOD_RIGID || method == SSK_METHOD_IRS ||
                 method == SSK_METHOD_SPRING))
                snprintf(label + n, sizeof label - n, " (paper)");
            double x0 = panel_left(p, count, width), x1 = panel_left(p + 1, count, width);
            cairo_text_extents_t ext;
            cairo_text_extents(cr, label, &ext);
            cairo_move_to(cr, 0.5 * (x0 + x1) - (ext.x_bearing + 0.5 * ext.width),
                          0.5 * band - (ext.y_bearing + 0.5 * ext.height));
            cairo_show_text(cr, label);
        }
        uint32_t line = width / PREVIEW_SEPARATOR_PER_PIXELS + 1;
        cairo_set_source_rgb(cr, PREVIEW_SEPARATOR_GRAY, PREVIEW_SEPARATOR_GRAY,
                             PREVIEW_SEPARATOR_GRAY);
        for (uint32_t p = 1; p < count; ++p) {
            uint32_t x = panel_left(p, count, width);
            uint32_t left = x >= line / 2 ? x - line / 2 : 0;
            cairo_rectangle(cr, left, 0, line, height);
        }
        cairo_fill(cr);
        cs = cairo_status(cr);
    }
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    cairo_surface_destroy(surface);
    if (cs != CAIRO_STATUS_SUCCESS)
        return ssk_error_set(err, cs == CAIRO_STATUS_NO_MEMORY ? SSK_ERROR_OUT_OF_MEMORY
                                                                : SSK_ERROR_UNSUPPORTED,
                             "preview: cairo failed drawing the labels: %s",
                             cairo_status_to_string(cs));
    return SSK_OK;
}

/* ------------------------------------------------------------------------ */
/* PNG (libpng)                                                              */
/* ------------------------------------------------------------------------ */

typedef struct preview_png_failure {
    jmp_buf jump;
    char message[256];
} preview_png_failure;

static void preview_png_error(png_structp png, png_const_charp message)
{
    preview_png_failure *f = png_get_error_ptr(png);
    snprintf(f->message, sizeof f->message, "%s", message ? message : "libpng error");
    longjmp(f->jump, 1);
}

static void preview_png_warning(png_structp png, png_const_charp message)
{
    (void)png;
    (void)message; /* warnings are not errors; the core never prints */
}

/* Writes the top-down cairo RGB24 image as an 8-bit RGB PNG to `file`.
 * `failure` belongs to the caller: libpng's error handler writes its message
 * before the longjmp, so it must not be an automatic object of this function
 * (C11 7.13.2.1). */
static ssk_status preview_png_write(FILE *file, const char *name, const uint32_t *pixels,
                                  uint32_t width, uint32_t height, preview_png_failure *failure,
                                  ssk_error *err)
{
    failure->message[0] = '\0';
    unsigned char *row = malloc((size_t)width * 3);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, failure,
                                              preview_png_error, preview_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!row || !png || !info) {
        png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
        free(row);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "preview: cannot set up the PNG writer");
    }
    if (setjmp(failure->jump)) {
        png_destroy_write_struct(&png, &info);
        free(row);
        return ssk_error_set(err, SSK_ERROR_IO, "cannot write '%s': %s", name,
                             failure->message);
    }
    png_init_io(png, file);
    png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; ++y) {
        const uint32_t *src = pixels + (size_t)y * width;
        for (uint32_t x = 0; x < width; ++x) {
            row[3 * x + 0] = (unsigned char)((src[x] >> 16) & 0xffu);
            row[3 * x + 1] = (unsigned char)((src[x] >> 8) & 0xffu);
            row[3 * x + 2] = (unsigned char)(src[x] & 0xffu);
        }
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    return SSK_OK;
}

/* Writes the PNG under "<path>.tmp-<pid>" and renames it onto `path`; the
 * temporary file is removed on any failure. */
static ssk_status preview_png_save(const char *path, const uint32_t *pixels, uint32_t width,
                           uint32_t height, ssk_error *err)
{
    char *tmp = ssk_temp_path(path);
    if (!tmp)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "preview: cannot allocate a file name");
    errno = 0;
    FILE *file = fopen(tmp, "wb");
    if (!file) {
        int e = errno;
        ssk_status s = ssk_error_set(err, SSK_ERROR_IO,
                                     "cannot create '%s' (for '%s'): %s", tmp, path,
                                     e ? strerror(e) : "unknown error");
        ssk_temp_path_free(tmp);
        return s;
    }
    preview_png_failure failure;
    ssk_status s = preview_png_write(file, tmp, pixels, width, height, &failure, err);
    if (s == SSK_OK) {
        errno = 0;
        if (fflush(file) != 0 || ferror(file) || fsync(fileno(file)) != 0)
            s = ssk_error_set(err, SSK_ERROR_IO, "cannot write '%s': %s", tmp,
                              strerror(errno ? errno : EIO));
    }
    errno = 0;
    if (fclose(file) != 0 && s == SSK_OK)
        s = ssk_error_set(err, SSK_ERROR_IO, "cannot close '%s': %s", tmp,
                          strerror(errno ? errno : EIO));
    if (s == SSK_OK) {
        errno = 0;
        if (rename(tmp, path) != 0) {
            int e = errno;
            s = ssk_error_set(err, SSK_ERROR_IO, "cannot rename '%s' to '%s': %s", tmp,
                              path, strerror(e));
        }
    }
    if (s != SSK_OK) remove(tmp);
    ssk_temp_path_free(tmp);
    return s;
}

/* ------------------------------------------------------------------------ */
/* ssk_scene_preview                                                         */
/* ------------------------------------------------------------------------ */

static ssk_status validate_desc(const ssk_scene *scene, const ssk_preview_desc *desc,
                                ssk_animation_info *info, ssk_error *err)
{
    if (!scene || !desc || !desc->output_path || !desc->methods)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "preview: NULL %s",
                             !scene  ? "scene"
                             : !desc ? "description"
                             : !desc->output_path ? "output path"
                                                  : "method list");
    if (!desc->output_path[0])
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "preview: empty output path");
    if (desc->width < PREVIEW_MIN_SIZE || desc->width > PREVIEW_MAX_SIZE ||
        desc->height < PREVIEW_MIN_SIZE || desc->height > PREVIEW_MAX_SIZE)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "preview: image size %ux%u out of range (width and "
                             "height must be in %u..%u pixels)",
                             (unsigned)desc->width, (unsigned)desc->height,
                             PREVIEW_MIN_SIZE, PREVIEW_MAX_SIZE);
    if (desc->method_count < 1 || desc->method_count > PREVIEW_MAX_METHODS)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "preview: %u methods (expected 1..%u panels)",
                             (unsigned)desc->method_count, PREVIEW_MAX_METHODS);
    for (uint32_t i = 0; i < desc->method_count; ++i)
        if ((unsigned)desc->methods[i] >= (unsigned)SSK_METHOD_COUNT)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "preview: method %d (panel %u) out of range",
                                 (int)desc->methods[i], (unsigned)i);
    for (uint32_t i = 0; desc->attachments && i < desc->method_count; ++i)
        if ((unsigned)desc->attachments[i] >= (unsigned)SSK_ATTACHMENT_MODE_COUNT)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "preview: attachment %d of panel %u is out of range",
                                 (int)desc->attachments[i], (unsigned)i);
    if (!isfinite(desc->fps) || !(desc->fps > 0.0))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "preview: fps must be finite and > 0, got %g", desc->fps);
    if (ssk_scene_animation_count(scene) == 0)
        return ssk_error_set(err, SSK_ERROR_NO_ANIMATION,
                             "preview: the scene has no animation to show");
    ssk_status s = ssk_scene_animation(scene, desc->animation, info, err);
    if (s != SSK_OK) return s;
    uint32_t frames = ssk_animation_frame_count(info, desc->fps);
    if (desc->frame < 0 || (uint32_t)desc->frame >= frames)
        return ssk_error_set(err, SSK_ERROR_FRAME_RANGE,
                             "preview: frame %lld is not in animation %u ('%s', %.6g s "
                             "at %g fps): frames are 0..%lld",
                             (long long)desc->frame, (unsigned)desc->animation,
                             info->name ? info->name : "", info->duration_seconds,
                             desc->fps, (long long)frames - 1);
    return ssk_error_ok(err);
}

/* Deforms the whole rig by `method` with sampled skinning and object
 * matrices (`deformed`: #V by 3 scratch, object space) and writes rig-space
 * positions O_m(t) · p to `dst` (#V by 3), growing `box` with them. */
/* The paper's attachment for rigid, IRS and spring panels: a graph whose
 * nodes say "attachment": "binding" (NULL for every other case); for the
 * springs the paper's whole model, rigid skinning first and no detail
 * force. */
static ssk_status paper_graph(ssk_graph **out, const ssk_rig *rig, ssk_method method,
                              ssk_attachment_mode attachment, ssk_error *err)
{
    *out = NULL;
    if (attachment != SSK_ATTACHMENT_BINDING ||
        !(method == SSK_METHOD_RIGID || method == SSK_METHOD_IRS || method == SSK_METHOD_SPRING))
        return SSK_OK;
    char json[512];
    if (method == SSK_METHOD_SPRING)
        snprintf(json, sizeof json,
                 "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
                 "\"method\": \"rigid\", \"attachment\": \"binding\"}, {\"id\": \"relax\", "
                 "\"type\": \"spring\", \"attachment\": \"binding\", \"stiffness\": "
                 "{\"detail\": 0}}, {\"id\": \"out\", "
                 "\"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": "
                 "\"relax\"}, {\"from\": \"relax\", \"to\": \"out\"}]}");
    else
        snprintf(json, sizeof json,
                 "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
                 "\"method\": \"%s\", \"attachment\": \"binding\"}, {\"id\": \"out\", "
                 "\"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", \"to\": "
                 "\"out\"}]}",
                 ssk_method_name(method));
    return ssk_graph_parse(out, json, rig, err);
}

static ssk_status deform_to_rig(const ssk_rig *rig, ssk_method method,
                                ssk_attachment_mode attachment, ssk_backend backend,
                                ssk_gl_context *gl, const float *skinning,
                                const float *objects, const float *cor_centers,
                                const uint8_t *cor_flags, float *deformed, float *dst, bbox *box,
                                ssk_error *err)
{
    ssk_deformer *deformer = NULL;
    ssk_graph *graph = NULL;
    ssk_status s = paper_graph(&graph, rig, method, attachment, err);
    if (s != SSK_OK) return s;
    const bool cor = method == SSK_METHOD_COR && cor_centers;
    ssk_deformer_desc ddesc = {.method = method, .backend = backend, .gl_context = gl,
                               .graph = graph, .cor_centers = cor ? cor_centers : NULL,
                               .cor_flags = cor ? cor_flags : NULL};
    s = ssk_deformer_create(&deformer, rig, &ddesc, err);
    ssk_graph_destroy(graph);
    if (s != SSK_OK) return s;
    s = ssk_deformer_deform(deformer, deformed, skinning, objects, err);
    ssk_deformer_destroy(deformer);
    if (s != SSK_OK) return s;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t v = 0; v < mesh->vertex_count; ++v) {
            size_t row = 3 * ((size_t)mesh->first_vertex + v);
            ssk_mat4_transform_point(dst + row, objects + 16 * (size_t)m, deformed + row);
            bbox_add(box, dst + row);
        }
    }
    return SSK_OK;
}

/* Triangles of every mesh as whole-rig rows, and the meshes drawn as
 * points. Both arrays are malloc'ed (+1: never malloc(0)). */
static ssk_status build_topology(const ssk_rig *rig, uint32_t **out_indices,
                                 size_t *out_index_count, point_range **out_points,
                                 uint32_t *out_point_count, ssk_error *err)
{
    size_t triangles = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m)
        triangles += rig->meshes[m].triangle_count;
    uint32_t *indices = malloc((triangles * 3 + 1) * sizeof(uint32_t));
    point_range *points = malloc(((size_t)rig->mesh_count + 1) * sizeof(point_range));
    if (!indices || !points) {
        free(indices);
        free(points);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "preview: cannot allocate %zu triangles", triangles);
    }
    size_t k = 0;
    uint32_t point_count = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        if (mesh->triangle_count == 0) {
            points[point_count].first = mesh->first_vertex;
            points[point_count].count = mesh->vertex_count;
            ++point_count;
            continue;
        }
        for (size_t i = 0; i < (size_t)mesh->triangle_count * 3; ++i)
            indices[k++] = mesh->first_vertex + (uint32_t)mesh->triangles[i];
    }
    *out_indices = indices;
    *out_index_count = k;
    *out_points = points;
    *out_point_count = point_count;
    return SSK_OK;
}

/* The frame's skinning matrices for the panels: the sampled ones, or with
 * a cage edit those carried over to the reshaped rig (ssk_cage_pose). */
static ssk_status carry(float *dst, const ssk_preview_desc *desc, const float *skinning,
                        uint32_t bones, ssk_error *err)
{
    if (desc->cage) return ssk_cage_pose(dst, desc->cage, skinning, err);
    memcpy(dst, skinning, 16 * (size_t)bones * sizeof(float));
    return SSK_OK;
}

ssk_status ssk_scene_preview(const ssk_scene *scene, const ssk_preview_desc *desc,
                             ssk_error *err)
{
    ssk_animation_info info;
    ssk_status s = validate_desc(scene, desc, &info, err);
    if (s != SSK_OK) return s;
    const ssk_rig *rig = ssk_scene_rig(scene);
    if (!rig)
        return ssk_error_set(err, SSK_ERROR_NO_SKELETON, "preview: scene has no rig");
    uint32_t panels = desc->method_count;
    uint32_t bones = rig->bone_count, meshes = rig->mesh_count;
    int32_t focus = -1;
    if (desc->focus_bone) {
        for (uint32_t b = 0; b < bones && focus < 0; ++b)
            if (rig->bones[b].name && strcmp(rig->bones[b].name, desc->focus_bone) == 0)
                focus = (int32_t)b;
        if (focus < 0)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "preview: no bone named '%s' to focus on", desc->focus_bone);
        if (!(desc->focus_radius > 0.0f) || !isfinite(desc->focus_radius))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "preview: focus radius %g must be finite and > 0",
                                 (double)desc->focus_radius);
    }
    uint32_t vertices = rig->vertex_count;
    if (vertices == 0)
        return ssk_error_set(err, SSK_ERROR_EMPTY_MESH, "preview: the rig has no vertex");
    size_t floats = (size_t)vertices * 3;
    if (!desc->cage != !desc->cage_edit)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "preview: cage and cage_edit go together (one is NULL)");
    /* a cage edit: every panel shows the rig it describes, each frame's
     * skinning carried over (as ssk_scene_bake) */
    ssk_rig *reshaped = NULL;
    float *cor_centers = NULL;
    uint8_t *cor_flags = NULL;
    if (desc->cage) {
        /* CoR panels: the centers repositioned by Eq. 14 */
        bool cor = false;
        for (uint32_t p = 0; p < panels; ++p) cor |= desc->methods[p] == SSK_METHOD_COR;
        s = ssk_cage_reshape_with_centers(&reshaped, &cor_centers, &cor_flags, desc->cage,
                                          desc->cage_edit, cor, err);
        if (s != SSK_OK) return s;
        rig = reshaped;
    }
    float *carried = malloc(((size_t)bones * 16 + 1) * sizeof(float));

    /* +1: never malloc(0). */
    float *skinning = malloc(((size_t)bones * 16 + 1) * sizeof(float));
    float *objects = malloc(((size_t)meshes * 16 + 1) * sizeof(float));
    float *deformed = malloc(floats * sizeof(float));
    float *positions = malloc(floats * panels * sizeof(float));
    float *normals = malloc(floats * panels * sizeof(float));
    uint32_t *pixels = malloc((size_t)desc->width * desc->height * sizeof(uint32_t));
    uint32_t *indices = NULL;
    point_range *points = NULL;
    ssk_gl_context *own_context = NULL;
    if (!skinning || !objects || !deformed || !positions || !normals || !pixels || !carried) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                          "preview: cannot allocate buffers for %u vertices, %u "
                          "panels and a %ux%u image",
                          (unsigned)vertices, (unsigned)panels, (unsigned)desc->width,
                          (unsigned)desc->height);
        goto done;
    }
    ssk_gl_context *ctx = desc->gl_context;
    if (!ctx) {
        s = ssk_gl_context_create(&own_context, err);
        if (s != SSK_OK) goto done;
        ctx = own_context;
    }
    /* The reference pose for the camera axes: the animation's first frame,
     * deformed by the first method (panel 0's buffer as scratch). */
    bbox reference;
    bbox_empty(&reference);
    s = ssk_scene_sample(scene, desc->animation, 0.0, skinning, objects, err);
    if (s == SSK_OK) s = carry(carried, desc, skinning, bones, err);
    if (s == SSK_OK)
        s = deform_to_rig(rig, desc->methods[0], panel_attachment(desc, 0), desc->backend,
                          ctx, carried, objects, cor_centers, cor_flags, deformed, positions,
                          &reference, err);
    if (s != SSK_OK) goto done;

    double t = (double)desc->frame / desc->fps;
    s = ssk_scene_sample(scene, desc->animation, t, skinning, objects, err);
    if (s == SSK_OK) s = carry(carried, desc, skinning, bones, err);
    if (s != SSK_OK) goto done;
    bbox framed;
    bbox_empty(&framed);
    for (uint32_t p = 0; p < panels; ++p) {
        float *dst = positions + p * floats;
        s = deform_to_rig(rig, desc->methods[p], panel_attachment(desc, p), desc->backend,
                          ctx, carried, objects, cor_centers, cor_flags, deformed, dst, &framed, err);
        if (s == SSK_OK) s = ssk_rig_normals(rig, normals + p * floats, dst, err);
        if (s != SSK_OK) goto done;
    }
    if (!bbox_finite(&framed) || !bbox_finite(&reference)) {
        s = ssk_error_set(err, SSK_ERROR_NONFINITE,
                          "preview: deformed positions of frame %d are not finite",
                          (int)desc->frame);
        goto done;
    }
    if (focus >= 0) { /* a cube around the focused bone's posed head */
        float head[3];
        ssk_mat4_transform_point(head, carried + 16 * (size_t)focus, rig->bones[focus].head);
        float diag2 = 0.0f;
        for (int k = 0; k < 3; ++k)
            diag2 += (reference.hi[k] - reference.lo[k]) * (reference.hi[k] - reference.lo[k]);
        const float r = desc->focus_radius * sqrtf(diag2);
        for (int k = 0; k < 3; ++k) {
            framed.lo[k] = head[k] - r;
            framed.hi[k] = head[k] + r;
        }
    }
    uint32_t band = label_band(desc->height);
    uint32_t view_height = desc->height - band;
    uint32_t narrowest = desc->width / panels;
    if (narrowest == 0) narrowest = 1;
    preview_camera camera;
    camera_build(&camera, &reference, &framed, narrowest, view_height);

    size_t index_count = 0;
    uint32_t point_count = 0;
    s = build_topology(rig, &indices, &index_count, &points, &point_count, err);
    if (s != SSK_OK) goto done;

    preview_job job = {
        .ctx = ctx,
        .width = desc->width,
        .height = desc->height,
        .panel_count = panels,
        .view_height = view_height,
        .vertex_count = vertices,
        .positions = positions,
        .normals = normals,
        .indices = indices,
        .index_count = index_count,
        .points = points,
        .point_range_count = point_count,
        .camera = &camera,
        .pixels = pixels,
        .err = err,
        .status = SSK_ERROR_GL,
    };
    ssk_gl_context_run(ctx, preview_job_run, &job);
    s = job.status;
    if (s != SSK_OK) goto done;

    s = flip_rows(pixels, desc->width, desc->height, err);
    if (s != SSK_OK) goto done;
    s = draw_labels(pixels, desc->width, desc->height, desc, panels, band, err);
    if (s != SSK_OK) goto done;
    s = preview_png_save(desc->output_path, pixels, desc->width, desc->height, err);
    if (s == SSK_OK) s = ssk_error_ok(err);

done:
    ssk_gl_context_destroy(own_context);
    free(points);
    free(indices);
    free(pixels);
    free(normals);
    free(positions);
    free(deformed);
    free(objects);
    free(skinning);
    free(carried);
    free(cor_centers);
    free(cor_flags);
    ssk_rig_destroy(reshaped);
    return s;
}
