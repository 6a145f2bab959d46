/*
 * bench_cage.c — coupled cages and skeletons (Corda et al. 2020,
 * 003_3bdce6713f645d88.txt; issue #21): the paper's Table 1 figures on this
 * machine, on the limb of bench/limb.h.
 *
 * Rows (the paper's models beside them):
 * - the ~2k-vertex limb (bench_limb_create(2000): 1,984 vertices, the
 *   paper's Arm has 2,089 and 24 joints) with a coarse, a medium and a fine
 *   cage (CAGE_COARSE / MEDIUM / FINE: 8, 24 and 88 vertices; the paper's
 *   Arm cages have 28, 58 and 79 handles);
 * - the ~7.5k-vertex limb (bench_limb_create(7512): 7,488 vertices) with
 *   the fine 88-vertex cage (the paper's Ely: 7,512 vertices, 64 joints,
 *   an 88-vertex cage).
 * The limb has BENCH_LIMB_BONES (8) bones, fewer than the paper's 24 / 64
 * joints: the joint coordinates' cost scales with the joint count.
 *
 * The cages: tubes of CAGE rings of a regular polygon about the limb's
 * axis (inradius CAGE_INRADIUS, more than the limb's radius; corners at
 * half-step angles), from y = -CAGE_MARGIN to BENCH_LIMB_LENGTH +
 * CAGE_MARGIN (every bone head inside: bone 0's is at y = 0), capped with
 * a polygon fan at each end, triangles oriented outward as the limb's own.
 *
 * Timed, median over repeats (single-threaded by default, as the paper's
 * prototype: --threads):
 * - bind: ssk_cage_create, the paper's SkelUp and CageUp preprocess
 *   together (the public API binds in one call: the mesh's mean value
 *   coordinates Phi, the joints' coordinates Psi of Eq. 9-12, MaxVol and
 *   the LU factors of the cage updater), against the paper's SkelUp +
 *   CageUp preprocess columns;
 * - stored bind: the same cage from a binding file that holds its cage
 *   binding (format version 4, written once untimed: ssk_binding_create,
 *   ssk_cage_create_cached, ssk_binding_save): ssk_binding_load (the
 *   attachment binding, Phi, Psi, the MaxVol rows, every value checked)
 *   + ssk_cage_create_cached (Phi~ factorized again);
 * - reshape: ssk_cage_reshape of an edited cage (ring CAGE_RINGS / 2
 *   scaled by EDIT_SCALE in X and Z: Phi C', Psi C', the new rig); the
 *   paper has no column for it;
 * - Lambda: ssk_cage_bind_cor, Eq. 14's Lambda from the rig's centers of
 *   rotation (ssk_cor_precompute, not timed: the paper's CoR precompute
 *   is no column of its Table 1 either), and CoR update:
 *   ssk_cage_cor_centers after the reshape (Lambda C'), against the
 *   paper's CoR update column (<= 1 ms for these models);
 * - frame: ssk_cage_pose (the frame's skinning matrices carried over to
 *   the reshaped rig) + ssk_deformer_deform with LBS on the reshaped rig
 *   (the CPU backend), against the paper's LBS frame;
 * - fit: ssk_cage_fit of the deformed positions (CageUp's per-frame
 *   back-substitution); the paper reports it inside its frame.
 * Frames are posed with bench_limb_pose(0.1 (r + 1)) after one untimed
 * frame.
 *
 * The limb is an open tube (no caps): the cage binding's joints' mvc_ji
 * (Eq. 10, mean value coordinates with respect to the rest mesh) need a
 * closed, consistently oriented mesh; for an open one bind/cage_bind.c
 * uses its documented stand-in (inverse-square distance weights). The
 * public API does not say which was used; the program counts the limb's
 * boundary edges and prints the path that implies.
 *
 * Usage: bench_cage [--repeats N] [--bind-repeats N] [--threads N]
 * Prints a Markdown table.
 */
#define _DEFAULT_SOURCE /* mkstemp, P_tmpdir */
#include "springskin.h"

#include "limb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The cages: rings of CAGE_*_SIDES corners. */
#define CAGE_COARSE_RINGS 2
#define CAGE_COARSE_SIDES 4   /* 8 vertices: a box */
#define CAGE_MEDIUM_RINGS 4
#define CAGE_MEDIUM_SIDES 6   /* 24 vertices */
#define CAGE_FINE_RINGS 11
#define CAGE_FINE_SIDES 8     /* 88 vertices */
#define CAGE_INRADIUS 0.75    /* model units; the limb's radius is BENCH_LIMB_RADIUS */
#define CAGE_MARGIN 0.25      /* beyond the limb's ends, model units */
#define EDIT_SCALE 1.2        /* the reshape's edit of the middle ring */
#define ARM_VERTICES 2000     /* bench_limb_create's target: the paper's Arm */
#define ELY_VERTICES 7512     /* the paper's Ely */
#define DEFAULT_REPEATS 51
#define DEFAULT_BIND_REPEATS 5

/* The paper's Table 1 (MacBook Pro early 2015, Intel i5, single-threaded
 * C++): SkelUp and CageUp preprocess, LBS frame, ms; its vertex, joint and
 * cage handle counts. */
typedef struct paper_row {
    const char *model;
    uint32_t vertices, joints, handles;
    double skel_up_ms, cage_up_ms, lbs_frame_ms;
} paper_row;

typedef struct bench_case {
    const char *name;
    uint32_t target_vertices, rings, sides;
    paper_row paper;
} bench_case;

static const bench_case CASES[] = {
    {"arm, coarse cage", ARM_VERTICES, CAGE_COARSE_RINGS, CAGE_COARSE_SIDES,
     {"Arm (coarse cage)", 2089, 24, 28, 401.0, 5.0, 0.88}},
    {"arm, medium cage", ARM_VERTICES, CAGE_MEDIUM_RINGS, CAGE_MEDIUM_SIDES,
     {"Arm (medium cage)", 2089, 24, 58, 417.0, 29.0, 1.61}},
    {"arm, fine cage", ARM_VERTICES, CAGE_FINE_RINGS, CAGE_FINE_SIDES,
     {"Arm (fine cage)", 2089, 24, 79, 439.0, 45.0, 2.22}},
    {"Ely-sized limb, fine cage", ELY_VERTICES, CAGE_FINE_RINGS, CAGE_FINE_SIDES,
     {"Ely", 7512, 64, 88, 3018.0, 75.0, 9.24}},
};
#define CASE_COUNT (sizeof CASES / sizeof CASES[0])

static void die(const char *what, const ssk_error *err)
{
    fprintf(stderr, "bench_cage: %s: %s\n", what, err->message);
    exit(1);
}

static void *checked_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "bench_cage: out of memory\n");
        exit(1);
    }
    return p;
}

/* The tube cage of `rings` rings of `sides` corners (see the file's
 * comment): out gets rings * sides vertices and 2 sides (rings - 1) +
 * 2 (sides - 2) triangles, malloc'ed (ssk_cage_mesh_free). */
static void tube_cage(ssk_cage_mesh *out, uint32_t rings, uint32_t sides)
{
    const uint32_t c = rings * sides, nt = 2 * sides * (rings - 1) + 2 * (sides - 2);
    out->vertex_count = c;
    out->triangle_count = nt;
    out->vertices = checked_malloc(3 * (size_t)c * sizeof(float));
    out->triangles = checked_malloc(3 * (size_t)nt * sizeof(uint32_t));
    const double circumradius = CAGE_INRADIUS / cos(BENCH_PI / sides);
    for (uint32_t r = 0; r < rings; ++r) {
        const double y = -CAGE_MARGIN + (BENCH_LIMB_LENGTH + 2.0 * CAGE_MARGIN) * r / (rings - 1);
        for (uint32_t s = 0; s < sides; ++s) {
            /* increasing angle, as the limb's rings (x = cos, z = sin) */
            const double a = 2.0 * BENCH_PI * (s + 0.5) / sides;
            float *p = out->vertices + 3 * ((size_t)r * sides + s);
            p[0] = (float)(circumradius * cos(a));
            p[1] = (float)y;
            p[2] = (float)(circumradius * sin(a));
        }
    }
    uint32_t *t = out->triangles;
    for (uint32_t r = 0; r + 1 < rings; ++r)
        for (uint32_t s = 0; s < sides; ++s) {
            /* the limb's side triangles (a, c, b), (b, c, d): outward */
            const uint32_t a = r * sides + s, b = r * sides + (s + 1) % sides;
            const uint32_t cc = a + sides, d = b + sides;
            *t++ = a, *t++ = cc, *t++ = b;
            *t++ = b, *t++ = cc, *t++ = d;
        }
    const uint32_t top = (rings - 1) * sides;
    for (uint32_t k = 1; k + 1 < sides; ++k) {
        *t++ = 0, *t++ = k, *t++ = k + 1;                  /* bottom: facing -Y */
        *t++ = top, *t++ = top + k + 1, *t++ = top + k;    /* top: facing +Y */
    }
}

/* The limb's boundary edges (an edge in one triangle only): 0 for a
 * closed mesh. */
static uint32_t boundary_edges(const ssk_rig *rig)
{
    uint32_t count = 0;
    for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
        ssk_mesh_view mv;
        ssk_error err = {0};
        if (ssk_rig_mesh(rig, m, &mv, &err) != SSK_OK) die("mesh", &err);
        /* per vertex, the directed edges leaving it: an undirected edge
         * seen once in all (u->v without v->u) is a boundary edge */
        for (uint32_t f = 0; f < mv.triangle_count; ++f)
            for (int e = 0; e < 3; ++e) {
                const int32_t u = mv.triangles[3 * f + e], v = mv.triangles[3 * f + (e + 1) % 3];
                int twin = 0;
                for (uint32_t k = mv.vertex_triangle_offsets[v];
                     k < mv.vertex_triangle_offsets[v + 1] && !twin; ++k) {
                    const int32_t *q = mv.triangles + 3 * (size_t)mv.vertex_triangles[k];
                    for (int i = 0; i < 3; ++i)
                        if (q[i] == v && q[(i + 1) % 3] == u) twin = 1;
                }
                count += !twin;
            }
    }
    return count;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(double), bench_compare_double);
    return t[n / 2];
}

typedef struct case_result {
    uint32_t vertices, cage_vertices, boundary;
    double bind_ms, stored_bind_ms, reshape_ms, frame_ms, pose_ms, fit_ms, lambda_ms, cor_update_ms;
} case_result;

static case_result run_case(const bench_case *bc, int repeats, int bind_repeats)
{
    case_result res = {0};
    ssk_error err = {0};
    ssk_rig *rig = bench_limb_create(bc->target_vertices, BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
    if (!rig) exit(1);
    res.vertices = ssk_rig_vertex_count(rig);
    res.boundary = boundary_edges(rig);
    ssk_cage_mesh mesh = {0};
    tube_cage(&mesh, bc->rings, bc->sides);
    res.cage_vertices = mesh.vertex_count;
    const int n = repeats > bind_repeats ? repeats : bind_repeats;
    double *t = checked_malloc((size_t)n * sizeof(double));

    /* bind */
    ssk_cage *cage = NULL;
    for (int r = 0; r < bind_repeats; ++r) {
        ssk_cage_destroy(cage);
        cage = NULL;
        const double t0 = bench_now();
        if (ssk_cage_create(&cage, rig, &mesh, &err) != SSK_OK) die("ssk_cage_create", &err);
        t[r] = bench_now() - t0;
    }
    res.bind_ms = 1e3 * median(t, bind_repeats);

    /* stored bind: from a binding file holding the cage binding */
    {
        /* in $TMPDIR (else the C library's P_tmpdir) */
        const char *dir = getenv("TMPDIR");
        char path[4096];
        snprintf(path, sizeof path, "%s/bench_cage-XXXXXX", dir && *dir ? dir : P_tmpdir);
        const int fd = mkstemp(path);
        if (fd < 0) {
            fprintf(stderr, "bench_cage: cannot create a temporary file\n");
            exit(1);
        }
        close(fd);
        ssk_bind_params params;
        ssk_bind_params_default(&params);
        ssk_binding *stored = NULL;
        ssk_cage *made = NULL;
        int reused = 0;
        if (ssk_binding_create(&stored, rig, &params, &err) != SSK_OK ||
            ssk_cage_create_cached(&made, rig, &mesh, stored, &reused, &err) != SSK_OK ||
            ssk_binding_save(stored, path, &err) != SSK_OK)
            die("stored cage binding", &err);
        ssk_cage_destroy(made);
        ssk_binding_destroy(stored);
        for (int r = 0; r < bind_repeats; ++r) {
            const double t0 = bench_now();
            ssk_binding *loaded = NULL;
            if (ssk_binding_load(&loaded, path, rig, &err) != SSK_OK ||
                ssk_cage_create_cached(&made, rig, &mesh, loaded, &reused, &err) != SSK_OK)
                die("stored cage binding", &err);
            t[r] = bench_now() - t0;
            if (!reused) {
                fprintf(stderr, "bench_cage: the stored cage binding was not reused\n");
                exit(1);
            }
            ssk_cage_destroy(made);
            ssk_binding_destroy(loaded);
        }
        res.stored_bind_ms = 1e3 * median(t, bind_repeats);
        remove(path);
    }

    /* reshape: the middle ring scaled about the axis */
    float *edited = checked_malloc(3 * (size_t)mesh.vertex_count * sizeof(float));
    memcpy(edited, mesh.vertices, 3 * (size_t)mesh.vertex_count * sizeof(float));
    for (uint32_t s = 0; s < bc->sides; ++s) {
        float *p = edited + 3 * ((size_t)(bc->rings / 2) * bc->sides + s);
        p[0] *= (float)EDIT_SCALE;
        p[2] *= (float)EDIT_SCALE;
    }
    ssk_rig *reshaped = NULL;
    for (int r = 0; r < bind_repeats; ++r) {
        ssk_rig_destroy(reshaped);
        reshaped = NULL;
        const double t0 = bench_now();
        if (ssk_cage_reshape(&reshaped, cage, edited, &err) != SSK_OK)
            die("ssk_cage_reshape", &err);
        t[r] = bench_now() - t0;
    }
    res.reshape_ms = 1e3 * median(t, bind_repeats);

    /* Eq. 14: Lambda from the rig's centers, then Lambda C' */
    float *centers = checked_malloc(3 * (size_t)res.vertices * sizeof(float));
    uint8_t *flags = checked_malloc(res.vertices);
    ssk_cor_params cor_params;
    ssk_cor_params_default(&cor_params);
    if (ssk_cor_precompute(centers, flags, rig, &cor_params, SSK_BACKEND_CPU, NULL, NULL, &err) !=
        SSK_OK)
        die("ssk_cor_precompute", &err);
    for (int r = 0; r < bind_repeats; ++r) {
        const double t0 = bench_now();
        if (ssk_cage_bind_cor(cage, centers, flags, &err) != SSK_OK)
            die("ssk_cage_bind_cor", &err);
        t[r] = bench_now() - t0;
    }
    res.lambda_ms = 1e3 * median(t, bind_repeats);
    for (int r = 0; r < repeats; ++r) {
        const double t0 = bench_now();
        if (ssk_cage_cor_centers(centers, flags, cage, &err) != SSK_OK)
            die("ssk_cage_cor_centers", &err);
        t[r] = bench_now() - t0;
    }
    res.cor_update_ms = 1e3 * median(t, repeats);
    free(centers);
    free(flags);

    /* frames: pose + LBS, then the cage fit */
    ssk_deformer *d = NULL;
    const ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU};
    if (ssk_deformer_create(&d, reshaped, &desc, &err) != SSK_OK) die("deformer", &err);
    float *out = checked_malloc(3 * (size_t)res.vertices * sizeof(float));
    float *fitted = checked_malloc(3 * (size_t)mesh.vertex_count * sizeof(float));
    float skin[16 * BENCH_LIMB_BONES], carried[16 * BENCH_LIMB_BONES];
    double *tp = checked_malloc((size_t)n * sizeof(double));
    double *tf = checked_malloc((size_t)n * sizeof(double));
    for (int r = -1; r < repeats; ++r) {
        bench_limb_pose(skin, 0.1 * (r + 1));
        const double t0 = bench_now();
        if (ssk_cage_pose(carried, cage, skin, &err) != SSK_OK) die("ssk_cage_pose", &err);
        const double t1 = bench_now();
        if (ssk_deformer_deform(d, out, carried, NULL, &err) != SSK_OK) die("deform", &err);
        const double t2 = bench_now();
        /* the limb's object matrix is the identity: these are rig-space
         * positions, as ssk_cage_fit wants */
        if (ssk_cage_fit(fitted, cage, out, &err) != SSK_OK) die("ssk_cage_fit", &err);
        const double t3 = bench_now();
        if (r < 0) continue;
        t[r] = t2 - t0;
        tp[r] = t1 - t0;
        tf[r] = t3 - t2;
    }
    res.frame_ms = 1e3 * median(t, repeats);
    res.pose_ms = 1e3 * median(tp, repeats);
    res.fit_ms = 1e3 * median(tf, repeats);

    free(t);
    free(tp);
    free(tf);
    free(out);
    free(fitted);
    free(edited);
    ssk_deformer_destroy(d);
    ssk_rig_destroy(reshaped);
    ssk_cage_destroy(cage);
    ssk_cage_mesh_free(&mesh);
    ssk_rig_destroy(rig);
    return res;
}

int main(int argc, char **argv)
{
    int repeats = DEFAULT_REPEATS, bind_repeats = DEFAULT_BIND_REPEATS;
    uint32_t threads = 1;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
            if (repeats < 1) repeats = 1;
        } else if (strcmp(argv[i], "--bind-repeats") == 0 && i + 1 < argc) {
            bind_repeats = atoi(argv[++i]);
            if (bind_repeats < 1) bind_repeats = 1;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: bench_cage [--repeats N] [--bind-repeats N] [--threads N "
                            "(0: one per CPU; default 1, as the paper)]\n");
            return 2;
        }
    }
    ssk_error err = {0};
    ssk_threading th;
    ssk_threading_get(&th);
    th.threads = threads;
    if (ssk_threading_set(&th, &err) != SSK_OK) die("--threads", &err);
    printf("coupled cages (Corda et al. 2020, Table 1): medians over %d frames, %d binds; "
           "threads %u (0: one per CPU); the limb has %d bones\n\n",
           repeats, bind_repeats, threads, BENCH_LIMB_BONES);

    case_result res[CASE_COUNT];
    for (size_t k = 0; k < CASE_COUNT; ++k) {
        res[k] = run_case(&CASES[k], repeats, bind_repeats);
        fprintf(stderr, "bench_cage: %s done\n", CASES[k].name);
    }

    printf("| case | vertices (paper) | cage (paper) | bind ms: MVC + SkelUp + CageUp | paper "
           "SkelUp + CageUp ms | ratio | stored bind ms | reshape ms | frame ms: pose + LBS | paper LBS frame "
           "ms | ratio | of which pose ms | cage fit ms | Lambda ms (Eq. 14) | CoR update ms "
           "(paper <= 1) |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < CASE_COUNT; ++k) {
        const paper_row *p = &CASES[k].paper;
        const double paper_bind = p->skel_up_ms + p->cage_up_ms;
        printf("| %s | %u (%u) | %u (%u) | %.2f | %.0f | %.3g | %.2f | %.3f | %.4f | %.2f | %.3g | "
               "%.4f | %.4f | %.2f | %.3f |\n",
               CASES[k].name, res[k].vertices, p->vertices, res[k].cage_vertices, p->handles,
               res[k].bind_ms, paper_bind, res[k].bind_ms / paper_bind, res[k].stored_bind_ms,
               res[k].reshape_ms,
               res[k].frame_ms, p->lbs_frame_ms, res[k].frame_ms / p->lbs_frame_ms,
               res[k].pose_ms, res[k].fit_ms, res[k].lambda_ms, res[k].cor_update_ms);
    }
    printf("\nratio: ours / the paper's (below 1: faster here). Joints' mvc_ji (Eq. 10): ");
    for (size_t k = 0; k < CASE_COUNT; ++k)
        printf("%s%s: %s limb (%u boundary edges)", k ? "; " : "", CASES[k].name,
               res[k].boundary ? "open, cage_bind.c's inverse-square stand-in for the"
                               : "mean value coordinates of the closed",
               res[k].boundary);
    printf(".\n");
    return 0;
}
