/*
 * bench_skinning.c — per-frame LBS and DQS time on generated limbs.
 *
 * A limb is a tube along +Y split into a chain of bones; every vertex has 4
 * influences (the 4 nearest bone centers, weights falling off with distance
 * and normalized), as a production character would. The pose bends every
 * joint and twists along the chain. Timing is warm (one untimed frame first)
 * and the median of repeated frames; each frame re-prepares bone data, as a
 * bake does.
 *
 * Usage: bench_skinning [--sizes 10000,100000,1000000] [--repeats N]
 *                       [--backends cpu,gl]
 * Methods: LBS, DQS, rigid attachment and IRS (with the default binding,
 * made once before timing, and the default length adjustment).
 * Prints a Markdown table: vertices, backend, method, ms/frame (whole
 * ssk_deformer_deform call), M vertices/s, and the median upload, compute
 * and readback times that the backend reports (GL: bone data upload,
 * dispatch until finished, readback of positions).
 */
#include "springskin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_BONES 8
#define BENCH_INFLUENCES 4
#define BENCH_PI 3.14159265358979323846

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void rotation_about(float m[16], int axis, double angle, const float pivot[3])
{
    double c = cos(angle), s = sin(angle);
    double r[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    int a = (axis + 1) % 3, b = (axis + 2) % 3;
    r[a * 3 + a] = c;
    r[a * 3 + b] = -s;
    r[b * 3 + a] = s;
    r[b * 3 + b] = c;
    memset(m, 0, 16 * sizeof(float));
    m[15] = 1;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) m[i * 4 + j] = (float)r[i * 3 + j];
        m[i * 4 + 3] = (float)(pivot[i] - (r[i * 3] * pivot[0] + r[i * 3 + 1] * pivot[1] +
                                            r[i * 3 + 2] * pivot[2]));
    }
}

static void mul(float d[16], const float a[16], const float b[16])
{
    float r[16];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            float s = 0;
            for (int k = 0; k < 4; ++k) s += a[i * 4 + k] * b[k * 4 + j];
            r[i * 4 + j] = s;
        }
    memcpy(d, r, sizeof r);
}

/* Builds the limb rig with about `target` vertices. */
static ssk_rig *make_limb(uint32_t target)
{
    uint32_t segments = 64;
    uint32_t rings = target / segments;
    uint32_t nv = rings * segments;
    uint32_t nf = 2 * (rings - 1) * segments;
    float *pos = malloc(3 * (size_t)nv * sizeof(float));
    int32_t *tri = malloc(3 * (size_t)nf * sizeof(int32_t));
    int32_t *idx = malloc((size_t)nv * BENCH_INFLUENCES * sizeof(int32_t));
    float *w = malloc((size_t)nv * BENCH_INFLUENCES * sizeof(float));
    int32_t parents[BENCH_BONES];
    float bind[16 * BENCH_BONES];
    const float length = 8.0f, bone_length = length / BENCH_BONES;
    for (int b = 0; b < BENCH_BONES; ++b) {
        parents[b] = b - 1;
        memset(bind + 16 * b, 0, 16 * sizeof(float));
        bind[16 * b] = bind[16 * b + 5] = bind[16 * b + 10] = bind[16 * b + 15] = 1;
        bind[16 * b + 7] = bone_length * (float)b;
    }
    for (uint32_t r = 0; r < rings; ++r) {
        float y = length * (float)r / (float)(rings - 1);
        for (uint32_t s = 0; s < segments; ++s) {
            double a = 2 * BENCH_PI * s / segments;
            float *p = pos + 3 * ((size_t)r * segments + s);
            p[0] = (float)(0.5 * cos(a));
            p[1] = y;
            p[2] = (float)(0.5 * sin(a));
            /* 4 nearest bone centers, inverse-distance weights */
            int nearest = (int)floorf(y / bone_length);
            if (nearest >= BENCH_BONES) nearest = BENCH_BONES - 1;
            int first = nearest - 1;
            if (first < 0) first = 0;
            if (first + BENCH_INFLUENCES > BENCH_BONES) first = BENCH_BONES - BENCH_INFLUENCES;
            float sum = 0;
            size_t v = (size_t)r * segments + s;
            for (int i = 0; i < BENCH_INFLUENCES; ++i) {
                float center = bone_length * ((float)(first + i) + 0.5f);
                float d = fabsf(y - center) / bone_length;
                float wi = 1.0f / (0.05f + d * d * d * d);
                idx[v * BENCH_INFLUENCES + i] = first + i;
                w[v * BENCH_INFLUENCES + i] = wi;
                sum += wi;
            }
            for (int i = 0; i < BENCH_INFLUENCES; ++i) w[v * BENCH_INFLUENCES + i] /= sum;
        }
    }
    size_t f = 0;
    for (uint32_t r = 0; r + 1 < rings; ++r)
        for (uint32_t s = 0; s < segments; ++s) {
            int32_t a = (int32_t)(r * segments + s), b = (int32_t)(r * segments + (s + 1) % segments);
            int32_t c = a + (int32_t)segments, d = b + (int32_t)segments;
            int32_t *t = tri + 3 * f++;
            t[0] = a; t[1] = c; t[2] = b;
            t = tri + 3 * f++;
            t[0] = b; t[1] = c; t[2] = d;
        }
    ssk_skeleton_desc sk = {BENCH_BONES, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md = {"limb", nv, pos, nf, tri, BENCH_INFLUENCES, idx, w, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&rig, &sk, &md, 1, &err) != SSK_OK)
        fprintf(stderr, "bench_skinning: %s\n", err.message);
    free(pos);
    free(tri);
    free(idx);
    free(w);
    return rig;
}

/* Skinning matrices of a pose: every joint bends about Z and twists about Y
 * by amounts that vary with `phase`. */
static void pose(float *skin, double phase)
{
    float global[16 * BENCH_BONES];
    const float bone_length = 8.0f / BENCH_BONES;
    for (int b = 0; b < BENCH_BONES; ++b) {
        float head[3] = {0, bone_length * (float)b, 0}, bend[16], twist[16], local[16];
        rotation_about(bend, 2, 0.3 * sin(phase + b), head);
        rotation_about(twist, 1, 0.4 * cos(phase + 0.5 * b), head);
        mul(local, bend, twist);
        if (b == 0)
            memcpy(global, local, sizeof local);
        else
            mul(global + 16 * b, global + 16 * (b - 1), local);
        /* skinning = global pose · inverse(bind); the bind is a translation
         * and the pose is built about the rest heads, so global is already
         * the skinning matrix. */
        memcpy(skin + 16 * b, global + 16 * b, 16 * sizeof(float));
    }
}

int main(int argc, char **argv)
{
    uint32_t sizes[8] = {10000, 100000, 1000000};
    int size_count = 3, repeats = 0;
    ssk_backend backends[2] = {SSK_BACKEND_CPU, SSK_BACKEND_GL};
    int backend_count = 1;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            size_count = 0;
            for (char *tok = strtok(argv[++i], ","); tok && size_count < 8; tok = strtok(NULL, ","))
                sizes[size_count++] = (uint32_t)strtoul(tok, NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--backends") == 0 && i + 1 < argc) {
            backend_count = 0;
            for (char *tok = strtok(argv[++i], ","); tok && backend_count < 2; tok = strtok(NULL, ","))
                if (ssk_backend_parse(&backends[backend_count], tok, NULL) == SSK_OK)
                    backend_count++;
        } else {
            fprintf(stderr, "usage: bench_skinning [--sizes N,N,...] [--repeats N] [--backends cpu,gl]\n");
            return 2;
        }
    }
    ssk_gl_context *gl = NULL;
    for (int b = 0; b < backend_count; ++b)
        if (backends[b] == SSK_BACKEND_GL) {
            ssk_error err = {0};
            if (ssk_gl_context_create(&gl, &err) != SSK_OK) {
                fprintf(stderr, "bench_skinning: GL backend skipped: %s\n", err.message);
            } else {
                ssk_gl_info info;
                ssk_gl_context_info(gl, &info, NULL);
                fprintf(stderr, "GL renderer: %s (%s), platform %s\n", info.renderer,
                        info.version, info.platform);
            }
        }
    printf("| vertices | backend | method | ms/frame (median) | M vertices/s | upload ms | compute ms | readback ms |\n");
    printf("|---:|---|---|---:|---:|---:|---:|---:|\n");
    for (int si = 0; si < size_count; ++si) {
        ssk_rig *rig = make_limb(sizes[si]);
        if (!rig) return 1;
        uint32_t nv = ssk_rig_vertex_count(rig);
        float *out = malloc(3 * (size_t)nv * sizeof(float));
        for (int bi = 0; bi < backend_count; ++bi) {
            if (backends[bi] == SSK_BACKEND_GL && !gl) continue;
            const int software_gl = backends[bi] == SSK_BACKEND_GL;
            int reps = repeats > 0 ? repeats
                                   : (nv >= 1000000 ? 31 : nv >= 100000 ? 101 : 301) /
                                         (software_gl ? 10 : 1) + 1;
            double *times = malloc((size_t)reps * 4 * sizeof(double));
            double median[SSK_METHOD_COUNT];
            for (int m = 0; m < SSK_METHOD_COUNT; ++m) {
                /* CoR: bench_cor (its centers would be computed here first,
                 * and this limb's 4 non-zero weights everywhere make that
                 * slow at 1M vertices) */
                if (m == SSK_METHOD_COR) continue;
                ssk_deformer *d = NULL;
                ssk_deformer_desc desc = {(ssk_method)m, backends[bi], gl};
                ssk_error err = {0};
                if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) {
                    fprintf(stderr, "bench_skinning: %s\n", err.message);
                    return 1;
                }
                float skin[16 * BENCH_BONES];
                pose(skin, 0.0);
                ssk_deformer_deform(d, out, skin, NULL, &err); /* warm-up */
                double *wall = times, *up = times + reps, *comp = times + 2 * reps,
                       *back = times + 3 * reps;
                for (int r = 0; r < reps; ++r) {
                    pose(skin, 0.1 * r);
                    double t0 = now();
                    if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK) {
                        fprintf(stderr, "bench_skinning: %s\n", err.message);
                        return 1;
                    }
                    wall[r] = now() - t0;
                    ssk_deform_timing t;
                    ssk_deformer_timing(d, &t);
                    up[r] = t.upload_seconds;
                    comp[r] = t.compute_seconds;
                    back[r] = t.readback_seconds;
                }
                for (int k = 0; k < 4; ++k)
                    qsort(times + k * reps, (size_t)reps, sizeof(double), compare_double);
                median[m] = wall[reps / 2];
                printf("| %u | %s | %s | %.3f | %.1f | %.3f | %.3f | %.3f |\n", nv,
                       ssk_backend_name(backends[bi]), ssk_method_name((ssk_method)m),
                       1e3 * median[m], nv / median[m] / 1e6, 1e3 * up[reps / 2],
                       1e3 * comp[reps / 2], 1e3 * back[reps / 2]);
                fflush(stdout);
                ssk_deformer_destroy(d);
            }
            fprintf(stderr, "%u vertices, %s: DQS / LBS = %.2f, rigid / LBS = %.2f, IRS / LBS = %.2f\n",
                    nv, ssk_backend_name(backends[bi]), median[SSK_METHOD_DQS] / median[SSK_METHOD_LBS],
                    median[SSK_METHOD_RIGID] / median[SSK_METHOD_LBS],
                    median[SSK_METHOD_IRS] / median[SSK_METHOD_LBS]);
            free(times);
        }
        free(out);
        ssk_rig_destroy(rig);
    }
    ssk_gl_context_destroy(gl);
    return 0;
}
