/*
 * bench_write.c — cache writing throughput: the same bake written as .pc2
 * and as .abc (Alembic, with and without normals).
 *
 * A generated limb (a tube along +Y, 64 vertices per ring, a chain of 8
 * bones, 4 influences per vertex) is deformed with LBS on the CPU for every
 * frame of a bending/twisting animation; the frames are computed first and
 * kept in memory, so only the writers are timed: open, one write per frame,
 * finish (which flushes, fsyncs and renames). Each format is written
 * `repeats` times into DIR, in rounds that interleave the formats, and the
 * median is reported. On a tmpfs DIR (/dev/shm) fsync costs nothing and the
 * numbers are the writers' own CPU cost (encoding, hashing, copies).
 *
 * Usage: bench_write [--vertices N] [--frames F] [--repeats R] [--dir DIR]
 * (defaults 100000, 100, 3, $TMPDIR or /tmp).
 * Prints a Markdown table: format, file MB, median seconds, MB/s of file
 * written, and MB/s of positions (12 bytes per vertex per frame), the
 * throughput a bake sees.
 */
#include "springskin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BENCH_BONES 8
#define BENCH_INFLUENCES 4
#define BENCH_SEGMENTS 64
#define BENCH_PI 3.14159265358979323846
#define BENCH_MAX_REPEATS 15
#define BENCH_BYTES_PER_MB 1e6

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

/* The limb rig with about `target` vertices (whole rings of 64). */
static ssk_rig *make_limb(uint32_t target)
{
    uint32_t rings = target / BENCH_SEGMENTS;
    if (rings < 2) rings = 2;
    uint32_t nv = rings * BENCH_SEGMENTS;
    uint32_t nf = 2 * (rings - 1) * BENCH_SEGMENTS;
    float *pos = malloc(3 * (size_t)nv * sizeof(float));
    int32_t *tri = malloc(3 * (size_t)nf * sizeof(int32_t));
    int32_t *idx = malloc((size_t)nv * BENCH_INFLUENCES * sizeof(int32_t));
    float *w = malloc((size_t)nv * BENCH_INFLUENCES * sizeof(float));
    if (!pos || !tri || !idx || !w) {
        free(pos);
        free(tri);
        free(idx);
        free(w);
        return NULL;
    }
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
        for (uint32_t s = 0; s < BENCH_SEGMENTS; ++s) {
            double a = 2 * BENCH_PI * s / BENCH_SEGMENTS;
            size_t v = (size_t)r * BENCH_SEGMENTS + s;
            float *p = pos + 3 * v;
            p[0] = (float)(0.5 * cos(a));
            p[1] = y;
            p[2] = (float)(0.5 * sin(a));
            int nearest = (int)floorf(y / bone_length);
            if (nearest >= BENCH_BONES) nearest = BENCH_BONES - 1;
            int first = nearest - 1;
            if (first < 0) first = 0;
            if (first + BENCH_INFLUENCES > BENCH_BONES) first = BENCH_BONES - BENCH_INFLUENCES;
            float sum = 0;
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
        for (uint32_t s = 0; s < BENCH_SEGMENTS; ++s) {
            int32_t a = (int32_t)(r * BENCH_SEGMENTS + s);
            int32_t b = (int32_t)(r * BENCH_SEGMENTS + (s + 1) % BENCH_SEGMENTS);
            int32_t c = a + BENCH_SEGMENTS, d = b + BENCH_SEGMENTS;
            int32_t *t = tri + 3 * f++;
            t[0] = a;
            t[1] = c;
            t[2] = b;
            t = tri + 3 * f++;
            t[0] = b;
            t[1] = c;
            t[2] = d;
        }
    ssk_skeleton_desc sk = {BENCH_BONES, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md = {"limb", nv, pos, nf, tri, BENCH_INFLUENCES, idx, w, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&rig, &sk, &md, 1, &err) != SSK_OK)
        fprintf(stderr, "bench_write: %s\n", err.message);
    free(pos);
    free(tri);
    free(idx);
    free(w);
    return rig;
}

/* Skinning matrices: every joint bends about Z and twists about Y. */
static void pose(float *skin, double phase)
{
    float global[16 * BENCH_BONES];
    const float bone_length = 8.0f / BENCH_BONES;
    for (int b = 0; b < BENCH_BONES; ++b) {
        float head[3] = {0, bone_length * (float)b, 0}, bend[16], twist[16], local[16];
        rotation_about(bend, 2, 0.3 * sin(phase + b), head);
        rotation_about(twist, 1, 0.4 * cos(phase + 0.5 * b), head);
        mul(local, bend, twist);
        if (b == 0) memcpy(global, local, sizeof local);
        else mul(global + 16 * b, global + 16 * (b - 1), local);
        memcpy(skin + 16 * b, global + 16 * b, 16 * sizeof(float));
    }
}

typedef enum format { FORMAT_PC2, FORMAT_ABC, FORMAT_ABC_NORMALS, FORMAT_COUNT } format;
static const char *const FORMAT_NAMES[FORMAT_COUNT] = {".pc2", ".abc", ".abc + N"};

/* Writes every frame in `fmt`; returns the seconds, or -1 on error. */
static double write_cache(format fmt, const char *path, const ssk_rig *rig,
                          const float *frames, const float *normals, uint32_t frame_count)
{
    uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_error err = {0};
    ssk_status s = SSK_OK;
    double t0 = now();
    if (fmt == FORMAT_PC2) {
        ssk_pc2_writer *w = NULL;
        s = ssk_pc2_writer_open(&w, path, nv, 0.0f, 1.0f, &err);
        for (uint32_t f = 0; s == SSK_OK && f < frame_count; ++f)
            s = ssk_pc2_writer_write(w, frames + (size_t)f * nv * 3, &err);
        if (s == SSK_OK) s = ssk_pc2_writer_finish(w, &err);
        else ssk_pc2_writer_abort(w);
    } else {
        ssk_mesh_view v;
        s = ssk_rig_mesh(rig, 0, &v, &err);
        ssk_abc_mesh_desc md = {v.name, v.vertex_count, v.triangle_count, v.triangles, NULL,
                                v.object_matrix};
        ssk_abc_desc desc = {&md, 1, 24.0, 0.0, fmt == FORMAT_ABC_NORMALS, NULL, NULL};
        ssk_abc_writer *w = NULL;
        if (s == SSK_OK) s = ssk_abc_writer_open(&w, path, &desc, &err);
        for (uint32_t f = 0; s == SSK_OK && f < frame_count; ++f)
            s = ssk_abc_writer_write_frame(w, frames + (size_t)f * nv * 3,
                                           fmt == FORMAT_ABC_NORMALS
                                               ? normals + (size_t)f * nv * 3
                                               : NULL,
                                           NULL, &err);
        if (s == SSK_OK) s = ssk_abc_writer_finish(w, &err);
        else ssk_abc_writer_abort(w);
    }
    double t = now() - t0;
    if (s != SSK_OK) {
        fprintf(stderr, "bench_write: %s: %s\n", path, err.message);
        return -1.0;
    }
    return t;
}

int main(int argc, char **argv)
{
    uint32_t vertices = 100000, frame_count = 100;
    int repeats = 3;
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--vertices") == 0 && i + 1 < argc) {
            vertices = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
            frame_count = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: bench_write [--vertices N] [--frames F] [--repeats R] [--dir DIR]\n");
            return 2;
        }
    }
    if (vertices < 2 * BENCH_SEGMENTS || frame_count == 0 || repeats < 1 ||
        repeats > BENCH_MAX_REPEATS) {
        fprintf(stderr, "bench_write: vertices >= %d, frames >= 1, repeats 1..%d\n",
                2 * BENCH_SEGMENTS, BENCH_MAX_REPEATS);
        return 2;
    }
    ssk_rig *rig = make_limb(vertices);
    if (!rig) return 1;
    uint32_t nv = ssk_rig_vertex_count(rig);
    size_t frame_floats = (size_t)nv * 3;
    float *frames = malloc(frame_floats * frame_count * sizeof(float));
    float *normals = malloc(frame_floats * frame_count * sizeof(float));
    float skin[16 * BENCH_BONES];
    ssk_deformer *deformer = NULL;
    ssk_deformer_desc dd = {SSK_METHOD_LBS, SSK_BACKEND_CPU, NULL, NULL, NULL};
    ssk_error err = {0};
    if (!frames || !normals || ssk_deformer_create(&deformer, rig, &dd, &err) != SSK_OK) {
        fprintf(stderr, "bench_write: setup failed: %s\n", err.message);
        return 1;
    }
    for (uint32_t f = 0; f < frame_count; ++f) {
        pose(skin, 2 * BENCH_PI * f / frame_count);
        float *dst = frames + (size_t)f * frame_floats;
        if (ssk_deformer_deform(deformer, dst, skin, NULL, &err) != SSK_OK ||
            ssk_deformer_normals(deformer, normals + (size_t)f * frame_floats, &err) != SSK_OK) {
            fprintf(stderr, "bench_write: deform failed: %s\n", err.message);
            return 1;
        }
    }
    ssk_deformer_destroy(deformer);

    double positions_mb = (double)frame_floats * 4 * frame_count / BENCH_BYTES_PER_MB;
    printf("Cache writing: %u vertices x %u frames (LBS limb), positions %.1f MB, "
           "median of %d, into %s (finish includes fsync)\n\n",
           (unsigned)nv, (unsigned)frame_count, positions_mb, repeats, dir);
    printf("| format | file MB | seconds | file MB/s | positions MB/s |\n");
    printf("|---|---:|---:|---:|---:|\n");
    /* Rounds interleave the formats so that each sees the same disk and
     * machine load. */
    double times[FORMAT_COUNT][BENCH_MAX_REPEATS];
    double file_mb[FORMAT_COUNT] = {0};
    int status = 0;
    for (int r = 0; r < repeats && !status; ++r)
        for (int fmt = 0; fmt < FORMAT_COUNT && !status; ++fmt) {
            char path[4096];
            snprintf(path, sizeof path, "%s/bench_write_%ld%s", dir, (long)getpid(),
                     fmt == FORMAT_PC2 ? ".pc2" : ".abc");
            times[fmt][r] = write_cache((format)fmt, path, rig, frames, normals, frame_count);
            if (times[fmt][r] < 0) status = 1;
            struct stat st;
            if (stat(path, &st) == 0) file_mb[fmt] = (double)st.st_size / BENCH_BYTES_PER_MB;
            remove(path);
        }
    for (int fmt = 0; fmt < FORMAT_COUNT && !status; ++fmt) {
        qsort(times[fmt], (size_t)repeats, sizeof times[fmt][0], compare_double);
        double t = times[fmt][repeats / 2];
        printf("| %s | %.1f | %.3f | %.0f | %.0f |\n", FORMAT_NAMES[fmt], file_mb[fmt], t,
               file_mb[fmt] / t, positions_mb / t);
    }
    free(frames);
    free(normals);
    ssk_rig_destroy(rig);
    return status;
}
