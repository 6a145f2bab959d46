/*
 * cage_fig5.c — draws Corda et al. 2020's Fig. 5 (003_3bdce6713f645d88.txt;
 * issue #21) as test_cage_quality.c tests it, for docs/library.md
 * (docs/images/cage-fig5-bar.png): the bar of cage_fig5.h after the
 * single-handle edit and the whole-cage isotropic and anisotropic
 * scalings (rows), bent 45, 90 and 135 degrees with LBS (column pairs),
 * each without the joint refit (the original joint and matrices on the
 * reshaped rest mesh) and with it (SkelUp, Eq. 13: ssk_cage_reshape's
 * heads and ssk_cage_pose's matrices). Seen along -Z (the bend plane),
 * orthographic, triangles painted far to near with Lambert shading; the
 * posed joint is a red dot, the center of the bar's section at the bend
 * (the posed ring that was at the joint's height) a blue ring.
 *
 * Usage: cage_fig5 OUT.png (written to a temporary name, then renamed).
 * Not a test: test_cage_quality asserts the distances drawn here.
 */
#include "testutil.h"
#include "cage_fixture.h"
#include "cage_fig5.h"

#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PANEL 170          /* pixels per panel side */
#define HEADER 34          /* the column labels' band */
#define ROW_TITLE 18       /* each row's title band */
#define MARGIN_FRACTION 0.9 /* of a panel the widest bar fills */
#define JOINT_RADIUS 4.0
#define CENTER_RADIUS 6.0
#define FONT_SIZE 11.0
#define SHADE_AMBIENT 0.3
#define SHADE_DIFFUSE 0.6

static const edit_kind ROWS[] = {EDIT_SINGLE_HANDLE, EDIT_WHOLE_ISOTROPIC, EDIT_WHOLE_ANISOTROPIC};
#define ROW_COUNT (sizeof ROWS / sizeof ROWS[0])
#define COLUMN_COUNT (2 * BEND_COUNT)

typedef struct panel {
    float *posed;     /* #V by 3, rig space */
    double joint[3];  /* the posed joint */
    double center[3]; /* the section's center */
} panel;

typedef struct tri_depth {
    float z;
    uint32_t t;
} tri_depth;

static int by_depth(const void *a, const void *b)
{
    const float x = ((const tri_depth *)a)->z, y = ((const tri_depth *)b)->z;
    return x < y ? -1 : x > y;
}

static void centroid(double c[3], const float *posed, const uint32_t *ring, uint32_t n)
{
    c[0] = c[1] = c[2] = 0.0;
    for (uint32_t i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) c[a] += posed[3 * (size_t)ring[i] + a] / n;
}

static void draw_panel(cairo_t *cr, const panel *p, const ssk_mesh_view *mv, double x0,
                       double y0, double scale)
{
    /* the panel's bounding-box center in the middle of the panel */
    float lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (uint32_t i = 0; i < mv->vertex_count; ++i)
        for (int a = 0; a < 2; ++a) {
            lo[a] = fminf(lo[a], p->posed[3 * i + a]);
            hi[a] = fmaxf(hi[a], p->posed[3 * i + a]);
        }
    const double cx = 0.5 * (lo[0] + hi[0]), cy = 0.5 * (lo[1] + hi[1]);
#define PX(x) (x0 + 0.5 * PANEL + ((x)-cx) * scale)
#define PY(y) (y0 + 0.5 * PANEL - ((y)-cy) * scale)
    tri_depth *order = malloc(mv->triangle_count * sizeof *order);
    for (uint32_t t = 0; t < mv->triangle_count; ++t) {
        const int32_t *f = mv->triangles + 3 * t;
        order[t].t = t;
        order[t].z = (p->posed[3 * f[0] + 2] + p->posed[3 * f[1] + 2] + p->posed[3 * f[2] + 2]) / 3;
    }
    qsort(order, mv->triangle_count, sizeof *order, by_depth);
    const double light[3] = {0.3 / 1.1576, 0.5 / 1.1576, 1.0 / 1.1576};
    for (uint32_t k = 0; k < mv->triangle_count; ++k) {
        const int32_t *f = mv->triangles + 3 * order[k].t;
        const float *a = p->posed + 3 * f[0], *b = p->posed + 3 * f[1], *c = p->posed + 3 * f[2];
        double e1[3], e2[3], n[3];
        for (int i = 0; i < 3; ++i) {
            e1[i] = b[i] - a[i];
            e2[i] = c[i] - a[i];
        }
        n[0] = e1[1] * e2[2] - e1[2] * e2[1];
        n[1] = e1[2] * e2[0] - e1[0] * e2[2];
        n[2] = e1[0] * e2[1] - e1[1] * e2[0];
        const double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(len > 0.0)) continue;
        const double shade =
            SHADE_AMBIENT +
            SHADE_DIFFUSE * fabs((n[0] * light[0] + n[1] * light[1] + n[2] * light[2]) / len);
        cairo_move_to(cr, PX(a[0]), PY(a[1]));
        cairo_line_to(cr, PX(b[0]), PY(b[1]));
        cairo_line_to(cr, PX(c[0]), PY(c[1]));
        cairo_close_path(cr);
        cairo_set_source_rgb(cr, 0.85 * shade, 0.8 * shade, 0.7 * shade);
        cairo_fill_preserve(cr);
        cairo_set_line_width(cr, 0.5);
        cairo_stroke(cr);
    }
    free(order);
    cairo_set_line_width(cr, 2.0);
    cairo_set_source_rgb(cr, 0.1, 0.3, 0.95);
    cairo_arc(cr, PX(p->center[0]), PY(p->center[1]), CENTER_RADIUS, 0, 2 * TEST_PI);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.9, 0.05, 0.05);
    cairo_arc(cr, PX(p->joint[0]), PY(p->joint[1]), JOINT_RADIUS, 0, 2 * TEST_PI);
    cairo_fill(cr);
#undef PX
#undef PY
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.png\n", argv[0]);
        return 2;
    }
    ssk_rig *rig = tu_make_limb(BAR_RINGS, BAR_SEGMENTS, BAR_BONES, BAR_LENGTH, BAR_RADIUS,
                                BAR_BLEND, BAR_INFLUENCES);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_mesh_view mv;
    ssk_error err = {0};
    if (!rig || ssk_rig_mesh(rig, 0, &mv, &err) != SSK_OK) return 1;
    uint32_t ring[BAR_SEGMENTS], ring_count = 0;
    for (uint32_t i = 0; i < nv && ring_count < BAR_SEGMENTS; ++i)
        if (fabs(mv.positions[3 * i + 1] - JOINT_Y) <= RING_HEIGHT_EPS) ring[ring_count++] = i;
    ssk_bone_view joint0;
    ssk_rig_bone(rig, JOINT_BONE, &joint0, NULL);
    float cage_v[3 * CAGE_VERTICES], edited[3 * CAGE_VERTICES];
    uint32_t cage_t[3 * CAGE_TRIANGLES];
    bar_cage(cage_v, cage_t);
    const ssk_cage_mesh cage_mesh = {CAGE_VERTICES, CAGE_TRIANGLES, cage_v, cage_t};
    ssk_cage *cage = NULL;
    if (ssk_cage_create(&cage, rig, &cage_mesh, &err) != SSK_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    panel panels[ROW_COUNT][COLUMN_COUNT];
    float skin[16 * BAR_BONES], carried[16 * BAR_BONES];
    double extent = 0.0;
    for (size_t r = 0; r < ROW_COUNT; ++r) {
        edit_cage(edited, cage_v, ROWS[r]);
        ssk_rig *reshaped = NULL;
        if (ssk_cage_reshape(&reshaped, cage, edited, &err) != SSK_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        ssk_bone_view joint1;
        ssk_rig_bone(reshaped, JOINT_BONE, &joint1, NULL);
        for (size_t k = 0; k < BEND_COUNT; ++k) {
            bend_pose(skin, joint0.head, BEND_DEGREES[k] * TEST_PI / 180.0);
            if (ssk_cage_pose(carried, cage, skin, &err) != SSK_OK) return 1;
            for (int refit = 0; refit < 2; ++refit) {
                panel *p = &panels[r][2 * k + refit];
                p->posed = malloc(3 * (size_t)nv * sizeof *p->posed);
                tu_deform(p->posed, reshaped, SSK_METHOD_LBS, refit ? carried : skin);
                transform_point(p->joint, (refit ? carried : skin) + 16 * JOINT_BONE,
                                refit ? joint1.head : joint0.head);
                centroid(p->center, p->posed, ring, ring_count);
                float lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
                for (uint32_t i = 0; i < nv; ++i)
                    for (int a = 0; a < 2; ++a) {
                        lo[a] = fminf(lo[a], p->posed[3 * i + a]);
                        hi[a] = fmaxf(hi[a], p->posed[3 * i + a]);
                    }
                extent = fmax(extent, fmax(hi[0] - lo[0], hi[1] - lo[1]));
            }
        }
        ssk_rig_destroy(reshaped);
    }
    const double scale = MARGIN_FRACTION * PANEL / extent;
    const int width = (int)(COLUMN_COUNT * PANEL), height = (int)(HEADER + ROW_COUNT * (ROW_TITLE + PANEL));
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, FONT_SIZE);
    cairo_set_source_rgb(cr, 0, 0, 0);
    for (size_t c = 0; c < COLUMN_COUNT; ++c) {
        char label[64];
        snprintf(label, sizeof label, "%.0f deg, %s", BEND_DEGREES[c / 2],
                 c % 2 ? "joint refitted" : "joint left");
        cairo_move_to(cr, (double)c * PANEL + 8, HEADER - 10);
        cairo_show_text(cr, label);
    }
    for (size_t r = 0; r < ROW_COUNT; ++r) {
        const double y0 = HEADER + (double)r * (ROW_TITLE + PANEL);
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_move_to(cr, 8, y0 + ROW_TITLE - 5);
        cairo_show_text(cr, EDIT_NAMES[ROWS[r]]);
        for (size_t c = 0; c < COLUMN_COUNT; ++c) {
            draw_panel(cr, &panels[r][c], &mv, (double)c * PANEL, y0 + ROW_TITLE, scale);
            free(panels[r][c].posed);
        }
    }
    cairo_surface_flush(surface);
    char *tmp = tu_temp_name(argv[1]);
    cairo_status_t cs = cairo_surface_write_to_png(surface, tmp);
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
    ssk_cage_destroy(cage);
    ssk_rig_destroy(rig);
    if (cs != CAIRO_STATUS_SUCCESS || rename(tmp, argv[1]) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", argv[1], cairo_status_to_string(cs));
        remove(tmp);
        free(tmp);
        return 1;
    }
    free(tmp);
    printf("wrote %s (%dx%d)\n", argv[1], width, height);
    return 0;
}
