/* test_preview.c — ssk_scene_preview and `springskin preview` on Assimp's
 * BCN_Epileptic.X, read back with libpng here:
 * - LBS | DQS at the frame where they differ most (found here, by deforming
 *   every frame): an RGB PNG of the requested size; in each panel the mesh
 *   is visible, whole (not touching the panel's edges), roughly centered and
 *   large; its silhouette has the aspect ratio of the deformed mesh seen
 *   from the front with the longest rest axis up, at the same scale in both
 *   panels; a dark label sits in the band at the top of each panel;
 * - the two panels differ (LBS vs DQS) while a control render LBS | LBS has
 *   two identical panels (so the difference comes from the methods);
 * - bad descriptions fail with the documented status and leave no file; an
 *   unwritable output fails with SSK_ERROR_IO and leaves no temporary file;
 * - the CLI: `--frame auto` picks the same frame as this test, writes the
 *   requested size; usage errors exit 2, runtime errors 1, no file left.
 * Tests that render skip (with the reason) only when ssk_gl_context_create
 * fails on this machine. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"
#define NO_ANIMATION_MODEL SSK_MODELS_DIR "/X/test_cube_text.x"
#define FPS 24.0
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

/* Image of the main render: two panels of 320 x 400. */
#define IMAGE_W 640u
#define IMAGE_H 400u
/* A pixel is background when every channel is within this of the
 * background color (read at the bottom-left corner). */
#define BACKGROUND_TOLERANCE 3
/* Label text: pixels with every channel below this. The mesh's darkest
 * shade is far lighter only in the label band, where no mesh is drawn. */
#define TEXT_DARK_MAX 100
/* The label band is documented as 8% of the height (at least 12 px): text
 * is looked for in the top LABEL_ROWS_FRACTION rows, the mesh below
 * MESH_ROWS_FRACTION. */
#define LABEL_ROWS_FRACTION 0.05
#define MESH_ROWS_FRACTION 0.08
/* Columns on each side of a panel boundary left out (the separator). */
#define SEPARATOR_SKIP 3u
/* A label needs at least this many dark pixels. */
#define MIN_LABEL_PIXELS 20u
/* The framed mesh fills at least this fraction of the panel's height or
 * width (the camera frames the union box with a small margin). */
#define MIN_FILL_FRACTION 0.6
/* Silhouette center within this fraction of the panel size of its center. */
#define CENTER_TOLERANCE 0.15
/* Silhouette aspect ratio and pixels-per-unit agree with the geometry
 * within this relative error (rasterization adds about a pixel per side). */
#define SHAPE_TOLERANCE 0.04
/* LBS vs DQS at the most different frame: at least this many pixels of the
 * mesh region differ between the panels. */
#define MIN_DIFFERING_PIXELS 50u
/* Topmost / rightmost vertex and silhouette pixels at the same fraction of
 * the silhouette's width / height, within this. */
#define LANDMARK_TOLERANCE 0.05
/* LBS | LBS (control): at most 1/CONTROL_NOISE_FRACTION_INV of the mesh
 * pixels differ between its panels; LBS | DQS differs in CONTROL_RATIO
 * times more pixels than the control. */
#define CONTROL_NOISE_FRACTION_INV 500u
#define CONTROL_RATIO 10u
/* A pixel "differs" when a channel differs by more than this. */
#define PIXEL_DIFF_TOLERANCE 8

/* ------------------------------------------------------------------------ */
/* Fixture                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct fixture {
    ssk_scene *scene;
    const ssk_rig *rig;
    uint32_t frame_count;
    int32_t diff_frame;    /* frame where max |LBS - DQS| is largest */
    double diff_distance;  /* that largest vertex distance */
    ssk_gl_context *gl;    /* NULL when no context could be created */
    char gl_message[SSK_ERROR_MESSAGE_SIZE];
    char *dir;
} fixture;

/* Deforms every frame with LBS and DQS (CPU) and keeps the frame where one
 * vertex moves farthest between the two. */
static void find_most_different_frame(fixture *fx)
{
    uint32_t bones = ssk_rig_bone_count(fx->rig), meshes = ssk_rig_mesh_count(fx->rig);
    size_t n = (size_t)ssk_rig_vertex_count(fx->rig) * 3;
    float *skin = malloc(((size_t)bones * 16 + 1) * sizeof(float));
    float *obj = malloc(((size_t)meshes * 16 + 1) * sizeof(float));
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    assert_true(skin && obj && a && b);
    ssk_deformer *lbs = NULL, *dqs = NULL;
    ssk_deformer_desc dl = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU};
    ssk_deformer_desc dd = {.method = SSK_METHOD_DQS, .backend = SSK_BACKEND_CPU};
    assert_int_equal(ssk_deformer_create(&lbs, fx->rig, &dl, NULL), SSK_OK);
    assert_int_equal(ssk_deformer_create(&dqs, fx->rig, &dd, NULL), SSK_OK);
    fx->diff_distance = -1.0;
    for (uint32_t f = 0; f < fx->frame_count; ++f) {
        assert_int_equal(ssk_scene_sample(fx->scene, 0, f / FPS, skin, obj, NULL), SSK_OK);
        assert_int_equal(ssk_deformer_deform(lbs, a, skin, obj, NULL), SSK_OK);
        assert_int_equal(ssk_deformer_deform(dqs, b, skin, obj, NULL), SSK_OK);
        double worst = 0.0;
        for (size_t i = 0; i < n; i += 3) {
            double d = hypot(hypot((double)a[i] - b[i], (double)a[i + 1] - b[i + 1]),
                             (double)a[i + 2] - b[i + 2]);
            if (d > worst) worst = d;
        }
        if (worst > fx->diff_distance) {
            fx->diff_distance = worst;
            fx->diff_frame = (int32_t)f;
        }
    }
    ssk_deformer_destroy(lbs);
    ssk_deformer_destroy(dqs);
    free(skin);
    free(obj);
    free(a);
    free(b);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    ssk_error err = {0};
    if (ssk_scene_import(&fx->scene, MODEL_PATH, &err) != SSK_OK) {
        fprintf(stderr, "cannot import %s: %s\n", MODEL_PATH, err.message);
        free(fx);
        return -1;
    }
    fx->rig = ssk_scene_rig(fx->scene);
    ssk_animation_info info;
    if (ssk_scene_animation(fx->scene, 0, &info, &err) != SSK_OK) {
        fprintf(stderr, "no animation in %s: %s\n", MODEL_PATH, err.message);
        ssk_scene_destroy(fx->scene);
        free(fx);
        return -1;
    }
    fx->frame_count = (uint32_t)floor(info.duration_seconds * FPS) + 1;
    find_most_different_frame(fx);
    if (ssk_gl_context_create(&fx->gl, &err) != SSK_OK) {
        fx->gl = NULL;
        snprintf(fx->gl_message, sizeof fx->gl_message, "%s", err.message);
    }
    fx->dir = tu_temp_dir();
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    ssk_gl_context_destroy(fx->gl);
    tu_remove_tree(fx->dir);
    free(fx->dir);
    ssk_scene_destroy(fx->scene);
    free(fx);
    return 0;
}

/* Skips the calling test when this machine has no GL context. */
#define REQUIRE_GL(fx)                                                          \
    do {                                                                        \
        if (!(fx)->gl) {                                                        \
            printf("SKIP: no OpenGL 4.3 context (ssk_gl_context_create "       \
                   "failed: %s)\n",                                             \
                   (fx)->gl_message);                                           \
            skip();                                                             \
        }                                                                       \
    } while (0)

/* A fresh empty directory under the fixture's; the caller frees it. */
static char *fresh_dir(const fixture *fx, const char *name)
{
    char *p = tu_path_join(fx->dir, name);
    assert_int_equal(mkdir(p, 0700), 0);
    return p;
}

/* ------------------------------------------------------------------------ */
/* PNG reading (libpng's simplified API) and pixel analysis                 */
/* ------------------------------------------------------------------------ */

typedef struct image {
    uint32_t width, height;
    unsigned char *rgb; /* top-down rows of width * 3 bytes */
} image;

/* Reads an 8-bit RGB PNG (fails the test on any other kind). */
static image read_png(const char *path)
{
    png_image png;
    memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    assert_true(png_image_begin_read_from_file(&png, path));
    assert_int_equal(png.format, PNG_FORMAT_RGB); /* color, no alpha, 8 bits */
    image img = {png.width, png.height, malloc(PNG_IMAGE_SIZE(png))};
    assert_non_null(img.rgb);
    assert_true(png_image_finish_read(&png, NULL, img.rgb, 0, NULL));
    return img;
}

static const unsigned char *pixel(const image *img, uint32_t x, uint32_t y)
{
    return img->rgb + ((size_t)y * img->width + x) * 3;
}

static bool near_color(const unsigned char *a, const unsigned char *b, int tolerance)
{
    for (int k = 0; k < 3; ++k)
        if (abs((int)a[k] - (int)b[k]) > tolerance) return false;
    return true;
}

static bool is_dark(const unsigned char *p)
{
    return p[0] < TEXT_DARK_MAX && p[1] < TEXT_DARK_MAX && p[2] < TEXT_DARK_MAX;
}

typedef struct panel_stats {
    uint32_t x0, x1;                  /* panel columns [x0, x1) */
    uint32_t left, right, top, bottom; /* mesh silhouette bbox, inclusive */
    uint32_t mesh_pixels;
    uint32_t label_pixels;            /* dark pixels in the label rows */
    double label_center_x;
} panel_stats;

static panel_stats analyse_panel(const image *img, uint32_t p, uint32_t panels)
{
    panel_stats st = {0};
    st.x0 = (uint32_t)((uint64_t)p * img->width / panels);
    st.x1 = (uint32_t)((uint64_t)(p + 1) * img->width / panels);
    st.left = UINT32_MAX;
    st.top = UINT32_MAX;
    const unsigned char *bg = pixel(img, 0, img->height - 1);
    uint32_t label_rows = (uint32_t)(img->height * LABEL_ROWS_FRACTION);
    uint32_t mesh_row0 = (uint32_t)ceil(img->height * MESH_ROWS_FRACTION);
    uint32_t xa = st.x0 + (p > 0 ? SEPARATOR_SKIP : 0);
    uint32_t xb = st.x1 - (p + 1 < panels ? SEPARATOR_SKIP : 0);
    double label_x_sum = 0.0;
    for (uint32_t y = 0; y < img->height; ++y) {
        for (uint32_t x = xa; x < xb; ++x) {
            const unsigned char *c = pixel(img, x, y);
            if (y < label_rows && is_dark(c)) {
                st.label_pixels++;
                label_x_sum += x;
            }
            if (y < mesh_row0 || near_color(c, bg, BACKGROUND_TOLERANCE)) continue;
            st.mesh_pixels++;
            if (x < st.left) st.left = x;
            if (x > st.right) st.right = x;
            if (y < st.top) st.top = y;
            if (y > st.bottom) st.bottom = y;
        }
    }
    st.label_center_x = st.label_pixels ? label_x_sum / st.label_pixels : -1.0;
    return st;
}

/* Pixels (x0a + i, y) and (x0b + i, y) that differ, over rows >= row0 and
 * columns i in [skip, width - skip). */
static uint32_t count_differing(const image *img, uint32_t x0a, uint32_t x0b,
                                uint32_t width, uint32_t row0, uint32_t row1)
{
    uint32_t n = 0;
    for (uint32_t y = row0; y < row1; ++y)
        for (uint32_t i = SEPARATOR_SKIP; i + SEPARATOR_SKIP < width; ++i)
            if (!near_color(pixel(img, x0a + i, y), pixel(img, x0b + i, y),
                            PIXEL_DIFF_TOLERANCE))
                ++n;
    return n;
}

/* ------------------------------------------------------------------------ */
/* Geometry computed here: rig-space deformed positions at a frame          */
/* ------------------------------------------------------------------------ */

static void transform_point(float dst[3], const float m[16], const float p[3])
{
    for (int r = 0; r < 3; ++r)
        dst[r] = m[4 * r] * p[0] + m[4 * r + 1] * p[1] + m[4 * r + 2] * p[2] + m[4 * r + 3];
}

/* Whole-rig positions (#V by 3) deformed by `method` at `frame`, in rig
 * space (each mesh moved by its object matrix of the frame); the caller
 * frees them. */
static float *rig_positions(const fixture *fx, int32_t frame, ssk_method method)
{
    uint32_t meshes = ssk_rig_mesh_count(fx->rig);
    size_t n = (size_t)ssk_rig_vertex_count(fx->rig) * 3;
    float *pos = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *skin = malloc(((size_t)ssk_rig_bone_count(fx->rig) * 16 + 1) * sizeof(float));
    float *obj = malloc(((size_t)meshes * 16 + 1) * sizeof(float));
    assert_true(pos && out && skin && obj);
    assert_int_equal(ssk_scene_sample(fx->scene, 0, frame / FPS, skin, obj, NULL), SSK_OK);
    ssk_deformer *d = NULL;
    ssk_deformer_desc dd = {.method = method, .backend = SSK_BACKEND_CPU};
    assert_int_equal(ssk_deformer_create(&d, fx->rig, &dd, NULL), SSK_OK);
    assert_int_equal(ssk_deformer_deform(d, pos, skin, obj, NULL), SSK_OK);
    ssk_deformer_destroy(d);
    for (uint32_t m = 0; m < meshes; ++m) {
        ssk_mesh_view v;
        assert_int_equal(ssk_rig_mesh(fx->rig, m, &v, NULL), SSK_OK);
        for (uint32_t i = 0; i < v.vertex_count; ++i) {
            size_t row = 3 * ((size_t)v.first_vertex + i);
            transform_point(out + row, obj + 16 * (size_t)m, pos + row);
        }
    }
    free(pos);
    free(skin);
    free(obj);
    return out;
}

/* Extent (max - min) along each rig axis of `pos` (#V by 3). */
static void extent_of(const float *pos, size_t vertices, double ext[3])
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < vertices; ++i)
        for (int k = 0; k < 3; ++k) {
            lo[k] = fmin(lo[k], pos[3 * i + k]);
            hi[k] = fmax(hi[k], pos[3 * i + k]);
        }
    for (int k = 0; k < 3; ++k) ext[k] = hi[k] - lo[k];
}

/* Mean column of the silhouette pixels in row y (or, with `column`, mean
 * row of those in column y), within the panel. */
static double mean_silhouette(const image *img, const panel_stats *st, uint32_t y,
                              bool column)
{
    const unsigned char *bg = pixel(img, 0, img->height - 1);
    double sum = 0.0;
    uint32_t n = 0;
    uint32_t lo = column ? st->top : st->left, hi = column ? st->bottom : st->right;
    for (uint32_t i = lo; i <= hi; ++i) {
        const unsigned char *c = column ? pixel(img, y, i) : pixel(img, i, y);
        if (!near_color(c, bg, BACKGROUND_TOLERANCE)) {
            sum += i;
            ++n;
        }
    }
    assert_true(n > 0);
    return sum / n;
}

/* The silhouette of panel `st` shows `pos` (#V by 3, rig space) from the
 * front with rig axis `up` up and `right` right: the same aspect ratio, and
 * the topmost and rightmost vertices where the silhouette has its topmost
 * row and rightmost column (so the image is neither rotated nor mirrored).
 * Returns the scale in pixels per model unit. */
static double check_silhouette(const image *img, const panel_stats *st, const float *pos,
                               size_t vertices, int right, int up)
{
    double ext[3];
    extent_of(pos, vertices, ext);
    double w = st->right - st->left + 1.0, h = st->bottom - st->top + 1.0;
    double expected = ext[right] / ext[up];
    if (fabs((w / h) / expected - 1.0) >= SHAPE_TOLERANCE)
        fprintf(stderr, "silhouette %gx%g px, aspect %g, geometry %g\n", w, h, w / h,
                expected);
    assert_true(fabs((w / h) / expected - 1.0) < SHAPE_TOLERANCE);

    size_t top = 0, rightmost = 0;
    double lo_r = INFINITY, lo_u = INFINITY;
    for (size_t i = 0; i < vertices; ++i) {
        if (pos[3 * i + up] > pos[3 * top + up]) top = i;
        if (pos[3 * i + right] > pos[3 * rightmost + right]) rightmost = i;
        lo_r = fmin(lo_r, pos[3 * i + right]);
        lo_u = fmin(lo_u, pos[3 * i + up]);
    }
    /* Fractions across the box: of the width from the left, of the height
     * from the top. */
    double top_geom = (pos[3 * top + right] - lo_r) / ext[right];
    double top_px = (mean_silhouette(img, st, st->top, false) + 0.5 - st->left) / w;
    double right_geom = 1.0 - (pos[3 * rightmost + up] - lo_u) / ext[up];
    double right_px = (mean_silhouette(img, st, st->right, true) + 0.5 - st->top) / h;
    if (fabs(top_px - top_geom) >= LANDMARK_TOLERANCE ||
        fabs(right_px - right_geom) >= LANDMARK_TOLERANCE)
        fprintf(stderr, "top %g (geometry %g), rightmost %g (geometry %g)\n", top_px,
                top_geom, right_px, right_geom);
    assert_true(fabs(top_px - top_geom) < LANDMARK_TOLERANCE);
    assert_true(fabs(right_px - right_geom) < LANDMARK_TOLERANCE);
    return h / ext[up];
}

/* ------------------------------------------------------------------------ */
/* Rendering through the API                                                */
/* ------------------------------------------------------------------------ */

static ssk_preview_desc make_desc(const fixture *fx, const char *path,
                                  const ssk_method *methods, uint32_t count)
{
    ssk_preview_desc d = {0};
    d.output_path = path;
    d.width = IMAGE_W;
    d.height = IMAGE_H;
    d.animation = 0;
    d.frame = fx->diff_frame;
    d.fps = FPS;
    d.methods = methods;
    d.method_count = count;
    d.gl_context = fx->gl;
    return d;
}

static void test_lbs_dqs_panels(void **state)
{
    fixture *fx = *state;
    REQUIRE_GL(fx);
    /* The rest pose is documented as the animation's first frame deformed
     * by the first method. The chosen frame must really separate the
     * methods (a vertex moves by > 1% of the character's size). */
    size_t vertices = ssk_rig_vertex_count(fx->rig);
    double rest[3];
    float *first = rig_positions(fx, 0, SSK_METHOD_LBS);
    extent_of(first, vertices, rest);
    free(first);
    double tallest = fmax(rest[0], fmax(rest[1], rest[2]));
    assert_true(fx->diff_distance > 0.01 * tallest);

    char *dir = fresh_dir(fx, "panels");
    char *path = tu_path_join(dir, "lbs_dqs.png");
    const ssk_method methods[2] = {SSK_METHOD_LBS, SSK_METHOD_DQS};
    ssk_preview_desc desc = make_desc(fx, path, methods, 2);
    ssk_error err = {0};
    ssk_status s = ssk_scene_preview(fx->scene, &desc, &err);
    if (s != SSK_OK) fprintf(stderr, "preview failed: %s\n", err.message);
    assert_int_equal(s, SSK_OK);
    assert_int_equal(tu_dir_entry_count(dir), 1); /* no temporary left */

    image img = read_png(path);
    assert_int_equal(img.width, IMAGE_W);
    assert_int_equal(img.height, IMAGE_H);
    const unsigned char *bg = pixel(&img, 0, img.height - 1);
    /* A light background, the same in all four corners. */
    assert_true(bg[0] > 200 && bg[1] > 200 && bg[2] > 200);
    assert_true(near_color(pixel(&img, img.width - 1, img.height - 1), bg, 0));
    assert_true(near_color(pixel(&img, 0, 0), bg, 0));
    assert_true(near_color(pixel(&img, img.width - 1, 0), bg, 0));
    /* The separator: a darker column at the boundary, bottom row included. */
    assert_false(near_color(pixel(&img, img.width / 2, img.height - 1), bg,
                            BACKGROUND_TOLERANCE));

    /* Which rig axes the camera should use: up = longest rest axis, right =
     * the longer of the two others. For this file that is Y up, X right: it
     * stands along Y in its animation (its bind pose lies along Z). */
    int up = 0;
    for (int k = 1; k < 3; ++k)
        if (rest[k] > rest[up]) up = k;
    int a = (up + 1) % 3, b = (up + 2) % 3;
    int right = rest[a] < rest[b] ? b : a;
    assert_int_equal(up, 1);
    assert_int_equal(right, 0);

    double px_per_unit[2];
    panel_stats st[2];
    uint32_t mesh_row0 = (uint32_t)ceil(IMAGE_H * MESH_ROWS_FRACTION);
    for (uint32_t p = 0; p < 2; ++p) {
        st[p] = analyse_panel(&img, p, 2);
        const panel_stats *q = &st[p];
        uint32_t pw = q->x1 - q->x0;
        double view_h = IMAGE_H - mesh_row0;
        /* Visible, whole, centered, large. */
        assert_true(q->mesh_pixels > 0);
        assert_true(q->left > q->x0 + SEPARATOR_SKIP && q->right + SEPARATOR_SKIP + 1 < q->x1);
        assert_true(q->top > mesh_row0 && q->bottom + 1 < IMAGE_H);
        double w = q->right - q->left + 1.0, h = q->bottom - q->top + 1.0;
        assert_true(h > 0.1 * IMAGE_H);
        assert_true(fmax(h / view_h, w / pw) > MIN_FILL_FRACTION);
        double cx = 0.5 * (q->left + q->right), cy = 0.5 * (q->top + q->bottom);
        assert_true(fabs(cx - 0.5 * (q->x0 + q->x1)) < CENTER_TOLERANCE * pw);
        assert_true(fabs(cy - (mesh_row0 + 0.5 * view_h)) < CENTER_TOLERANCE * view_h);
        /* Front view, up axis up, not mirrored. */
        float *pos = rig_positions(fx, fx->diff_frame, methods[p]);
        px_per_unit[p] = check_silhouette(&img, q, pos, vertices, right, up);
        free(pos);
        /* A dark label, centered over the panel. */
        assert_true(q->label_pixels >= MIN_LABEL_PIXELS);
        assert_true(fabs(q->label_center_x - 0.5 * (q->x0 + q->x1)) < CENTER_TOLERANCE * pw);
    }
    /* Same camera: same pixels per unit in both panels. */
    assert_true(fabs(px_per_unit[0] / px_per_unit[1] - 1.0) < SHAPE_TOLERANCE);

    /* The panels differ in the mesh region, and the labels differ. */
    uint32_t pw = IMAGE_W / 2;
    uint32_t lbs_dqs = count_differing(&img, 0, pw, pw, mesh_row0, IMAGE_H);
    uint32_t label_rows = (uint32_t)(IMAGE_H * LABEL_ROWS_FRACTION);
    assert_true(count_differing(&img, 0, pw, pw, 0, label_rows) > 0);

    /* Control: LBS | LBS. Its labels are identical; its meshes differ only
     * by the rasterizer's sub-pixel snapping of the two viewports (a few
     * edge pixels), far fewer than LBS | DQS. */
    char *control_path = tu_path_join(dir, "lbs_lbs.png");
    const ssk_method same[2] = {SSK_METHOD_LBS, SSK_METHOD_LBS};
    desc = make_desc(fx, control_path, same, 2);
    assert_int_equal(ssk_scene_preview(fx->scene, &desc, &err), SSK_OK);
    image control = read_png(control_path);
    assert_int_equal(count_differing(&control, 0, pw, pw, 0, label_rows), 0);
    uint32_t lbs_lbs = count_differing(&control, 0, pw, pw, mesh_row0, IMAGE_H);
    assert_true(lbs_lbs * CONTROL_NOISE_FRACTION_INV <= st[0].mesh_pixels);
    assert_true(lbs_dqs >= MIN_DIFFERING_PIXELS);
    assert_true(lbs_dqs >= CONTROL_RATIO * (lbs_lbs + 1));

    free(control.rgb);
    free(img.rgb);
    free(control_path);
    free(path);
    free(dir);
}

/* One panel, the temporary context (gl_context NULL), an odd size, the
 * first frame, where the character's width (X) and depth (Z) differ most:
 * the silhouette is seen along the thinner axis. */
static void test_single_panel_own_context(void **state)
{
    fixture *fx = *state;
    REQUIRE_GL(fx);
    char *dir = fresh_dir(fx, "single");
    char *path = tu_path_join(dir, "dqs.png");
    const ssk_method methods[1] = {SSK_METHOD_DQS};
    ssk_preview_desc desc = make_desc(fx, path, methods, 1);
    desc.width = 241;
    desc.height = 323;
    desc.frame = 0;
    desc.gl_context = NULL;
    ssk_error err = {0};
    ssk_status s = ssk_scene_preview(fx->scene, &desc, &err);
    if (s != SSK_OK) fprintf(stderr, "preview failed: %s\n", err.message);
    assert_int_equal(s, SSK_OK);
    assert_int_equal(err.status, SSK_OK);
    image img = read_png(path);
    assert_int_equal(img.width, 241);
    assert_int_equal(img.height, 323);
    panel_stats st = analyse_panel(&img, 0, 1);
    assert_true(st.mesh_pixels > 0);
    assert_true(st.bottom - st.top + 1 > MIN_FILL_FRACTION * 323 * (1.0 - MESH_ROWS_FRACTION));
    double ext[3];
    float *pos = rig_positions(fx, 0, SSK_METHOD_DQS);
    extent_of(pos, ssk_rig_vertex_count(fx->rig), ext);
    assert_true(ext[2] < 0.7 * ext[0]); /* this frame tells X from Z */
    check_silhouette(&img, &st, pos, ssk_rig_vertex_count(fx->rig), 0, 1);
    free(pos);
    assert_int_equal(tu_dir_entry_count(dir), 1);
    free(img.rgb);
    free(path);
    free(dir);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

static void expect_error(const fixture *fx, const ssk_scene *scene,
                         const ssk_preview_desc *desc, ssk_status expected,
                         const char *dir, const char *fragment)
{
    ssk_error err = {0};
    assert_int_equal(ssk_scene_preview(scene, desc, &err), expected);
    assert_int_equal(err.status, expected);
    assert_true(err.message[0] != '\0');
    if (fragment && !strstr(err.message, fragment)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", err.message, fragment);
        fail();
    }
    assert_int_equal(tu_dir_entry_count(dir), 0);
    (void)fx;
}

static void test_bad_descriptions(void **state)
{
    fixture *fx = *state;
    char *dir = fresh_dir(fx, "bad");
    char *path = tu_path_join(dir, "out.png");
    const ssk_method methods[2] = {SSK_METHOD_LBS, SSK_METHOD_DQS};
    const ssk_method bad_method[1] = {(ssk_method)SSK_METHOD_COUNT};
    ssk_method nine[9];
    for (int i = 0; i < 9; ++i) nine[i] = SSK_METHOD_LBS;
    ssk_preview_desc good = make_desc(fx, path, methods, 2);
    ssk_preview_desc d;

    expect_error(fx, NULL, &good, SSK_ERROR_INVALID_ARGUMENT, dir, "scene");
    expect_error(fx, fx->scene, NULL, SSK_ERROR_INVALID_ARGUMENT, dir, NULL);
    d = good; d.output_path = NULL;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, "output");
    d = good; d.methods = NULL;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, NULL);
    d = good; d.width = 15;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, "15x400");
    d = good; d.height = 8193;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, "8192");
    d = good; d.width = 0; d.height = 0;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, NULL);
    d = good; d.method_count = 0;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, "methods");
    d = good; d.methods = nine; d.method_count = 9;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, "methods");
    d = good; d.methods = bad_method; d.method_count = 1;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, "method");
    d = good; d.fps = 0.0;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, "fps");
    d = good; d.fps = NAN;
    expect_error(fx, fx->scene, &d, SSK_ERROR_INVALID_ARGUMENT, dir, "fps");
    d = good; d.frame = -1;
    expect_error(fx, fx->scene, &d, SSK_ERROR_FRAME_RANGE, dir, "frame -1");
    d = good; d.frame = (int32_t)fx->frame_count; /* one past the last frame */
    char last[32];
    snprintf(last, sizeof last, "0..%u", (unsigned)(fx->frame_count - 1));
    expect_error(fx, fx->scene, &d, SSK_ERROR_FRAME_RANGE, dir, last);
    d = good; d.animation = 1;
    expect_error(fx, fx->scene, &d, SSK_ERROR_NO_ANIMATION, dir, NULL);

    ssk_scene *still = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&still, NO_ANIMATION_MODEL, &err), SSK_OK);
    d = good;
    d.frame = 0;
    expect_error(fx, still, &d, SSK_ERROR_NO_ANIMATION, dir, "animation");
    ssk_scene_destroy(still);
    free(path);
    free(dir);
}

/* The paper's attachment as a panel (IRS@binding | IRS, labelled "IRS
 * (paper)") and a close-up (focus on B_Spine2, 0.25 of the diagonal): the
 * two panels differ (BCN_Epileptic.X's frame 33 tears with the paper's
 * attachment, bench/real_quality.py), a control IRS | IRS does not; the
 * close-up's mesh runs off the panel (it is larger than the whole-body
 * framing); a bone that does not exist and a radius <= 0 are errors. */
static void test_paper_attachment_and_focus(void **state)
{
    fixture *fx = *state;
    REQUIRE_GL(fx);
    char *dir = fresh_dir(fx, "focus");
    char *path = tu_path_join(dir, "irs.png"), *control = tu_path_join(dir, "control.png");
    const ssk_method methods[2] = {SSK_METHOD_IRS, SSK_METHOD_IRS};
    const ssk_attachment_mode paper[2] = {SSK_ATTACHMENT_BINDING, SSK_ATTACHMENT_WEIGHTS};
    ssk_preview_desc desc = make_desc(fx, path, methods, 2);
    desc.frame = 33;
    desc.attachments = paper;
    desc.focus_bone = "B_Spine2";
    desc.focus_radius = 0.25f;
    ssk_error err = {0};
    ssk_status s = ssk_scene_preview(fx->scene, &desc, &err);
    if (s != SSK_OK) fprintf(stderr, "preview failed: %s\n", err.message);
    assert_int_equal(s, SSK_OK);
    desc.output_path = control;
    desc.attachments = NULL;
    assert_int_equal(ssk_scene_preview(fx->scene, &desc, &err), SSK_OK);
    image img = read_png(path), ctl = read_png(control);
    const uint32_t half = IMAGE_W / 2, row0 = (uint32_t)(MESH_ROWS_FRACTION * IMAGE_H);
    const uint32_t differ = count_differing(&img, 0, half, half, row0, IMAGE_H);
    const uint32_t same = count_differing(&ctl, 0, half, half, row0, IMAGE_H);
    printf("IRS (paper) | IRS: %u pixels differ; IRS | IRS: %u\n", differ, same);
    assert_true(differ >= MIN_DIFFERING_PIXELS);
    assert_true(same * CONTROL_RATIO < differ);
    panel_stats st = analyse_panel(&img, 1, 2);
    assert_true(st.mesh_pixels > 0);
    assert_true(st.bottom + 2 >= IMAGE_H || st.left <= st.x0 + SEPARATOR_SKIP + 1 ||
                st.right + SEPARATOR_SKIP + 2 >= st.x1); /* runs off the panel */
    free(img.rgb);
    free(ctl.rgb);
    remove(path);
    remove(control);
    desc.output_path = path;
    desc.focus_bone = "no such bone";
    expect_error(fx, fx->scene, &desc, SSK_ERROR_INVALID_ARGUMENT, dir, "no such bone");
    desc.focus_bone = "B_Spine2";
    desc.focus_radius = 0.0f;
    expect_error(fx, fx->scene, &desc, SSK_ERROR_INVALID_ARGUMENT, dir, "focus radius");
    free(path);
    free(control);
    free(dir);
}

/* Write failures need a render first: missing directory, and a rename onto
 * an existing directory (the temporary file must be removed). */
static void test_write_errors_leave_nothing(void **state)
{
    fixture *fx = *state;
    REQUIRE_GL(fx);
    char *dir = fresh_dir(fx, "write");
    const ssk_method methods[1] = {SSK_METHOD_LBS};
    char *missing = tu_path_join(dir, "no/such/dir/out.png");
    ssk_preview_desc d = make_desc(fx, missing, methods, 1);
    d.width = d.height = 32;
    expect_error(fx, fx->scene, &d, SSK_ERROR_IO, dir, "no/such/dir");

    char *target = fresh_dir(fx, "write/occupied.png"); /* a directory */
    d.output_path = target;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_preview(fx->scene, &d, &err), SSK_ERROR_IO);
    assert_non_null(strstr(err.message, "rename"));
    assert_int_equal(tu_dir_entry_count(dir), 1);    /* only the directory */
    assert_int_equal(tu_dir_entry_count(target), 0); /* untouched */
    free(target);
    free(missing);
    free(dir);
}

/* ------------------------------------------------------------------------ */
/* CLI                                                                       */
/* ------------------------------------------------------------------------ */

/* Runs the CLI (stdout and stderr captured in the fixture's directory) and
 * checks it fails with `code`, the error prefix and `fragment` on stderr,
 * leaving `dir` empty. */
static void expect_cli_failure(const fixture *fx, const char *const *args, int code,
                               const char *fragment, const char *dir)
{
    tu_cli_result r = tu_run_cli(fx->dir, args);
    if (r.exit_code != code || !strstr(r.err, fragment))
        fprintf(stderr, "exit %d, stderr: %s\n", r.exit_code, r.err);
    assert_int_equal(r.exit_code, code);
    assert_non_null(strstr(r.err, "springskin: error: "));
    assert_non_null(strstr(r.err, fragment));
    assert_int_equal(tu_dir_entry_count(dir), 0);
    tu_cli_result_free(&r);
}

static void test_cli_preview(void **state)
{
    fixture *fx = *state;
    char *dir = fresh_dir(fx, "cli");
    char *out = tu_path_join(dir, "preview.png");
    /* Usage errors (exit 2) need no GL. */
    expect_cli_failure(fx, (const char *[]){"preview", MODEL_PATH, NULL}, EXIT_USAGE,
                       "-o", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--size", "10x10",
                                        NULL},
                       EXIT_USAGE, "--size", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--size", "640",
                                        NULL},
                       EXIT_USAGE, "--size", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--methods",
                                        "lbs,foo", NULL},
                       EXIT_USAGE, "foo", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--methods",
                                        "lbs,,dqs", NULL},
                       EXIT_USAGE, "--methods", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--frame", "auto",
                                        "--methods", "dqs", NULL},
                       EXIT_USAGE, "two", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--frame", "-3",
                                        NULL},
                       EXIT_USAGE, "--frame", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--methods",
                                        "irs@bones", NULL},
                       EXIT_USAGE, "@binding", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--focus-radius",
                                        "0", NULL},
                       EXIT_USAGE, "--focus-radius", dir);
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--focus", "Nope",
                                        NULL},
                       EXIT_RUNTIME, "Nope", dir);
    /* Runtime error before rendering: a frame past the end. */
    expect_cli_failure(fx,
                       (const char *[]){"preview", MODEL_PATH, "-o", out, "--frame", "100000",
                                        NULL},
                       EXIT_RUNTIME, "frame 100000", dir);

    REQUIRE_GL(fx);
    tu_cli_result r = tu_run_cli(fx->dir, (const char *[]){"preview", MODEL_PATH, "-o", out,
                                                          "--frame", "auto", "--size",
                                                          "320x240", NULL});
    if (r.exit_code != 0) fprintf(stderr, "stderr: %s\n", r.err);
    assert_int_equal(r.exit_code, 0);
    char expected[64];
    snprintf(expected, sizeof expected, "frame auto: %d ", (int)fx->diff_frame);
    if (!strstr(r.out, expected)) fprintf(stderr, "stdout: %s\n", r.out);
    assert_non_null(strstr(r.out, expected));
    assert_non_null(strstr(r.out, "320x240"));
    tu_cli_result_free(&r);
    image img = read_png(out);
    assert_int_equal(img.width, 320);
    assert_int_equal(img.height, 240);
    for (uint32_t p = 0; p < 2; ++p) {
        panel_stats st = analyse_panel(&img, p, 2);
        assert_true(st.mesh_pixels > 0);
        assert_true(st.label_pixels > 0);
    }
    assert_int_equal(tu_dir_entry_count(dir), 1);
    free(img.rgb);
    /* the paper's attachment as a panel, and a close-up */
    r = tu_run_cli(fx->dir, (const char *[]){"preview", MODEL_PATH, "-o", out, "--frame", "33",
                                            "--methods", "irs@binding,irs", "--focus",
                                            "B_Spine2", "--size", "320x240", NULL});
    if (r.exit_code != 0) fprintf(stderr, "stderr: %s\n", r.err);
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "(irs@binding, irs)"));
    tu_cli_result_free(&r);
    assert_int_equal(tu_dir_entry_count(dir), 1);
    free(out);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lbs_dqs_panels),
        cmocka_unit_test(test_single_panel_own_context),
        cmocka_unit_test(test_paper_attachment_and_focus),
        cmocka_unit_test(test_bad_descriptions),
        cmocka_unit_test(test_write_errors_leave_nothing),
        cmocka_unit_test(test_cli_preview),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
