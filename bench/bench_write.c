/*
 * bench_write.c — cache writing throughput: the same bake written as .pc2
 * and as .abc (Alembic, with and without normals).
 *
 * A generated limb (a tube along +Y, 64 vertices per ring, a chain of 8
 * bones, 4 influences per vertex; bench/limb.h) is deformed with LBS on the
 * CPU for every frame of a bending/twisting animation; the frames are
 * computed first and kept in memory, so only the writers are timed: open,
 * one write per frame, finish (which flushes, fsyncs and renames). Each
 * format is written `repeats` times into DIR, in rounds that interleave the
 * formats, and the median is reported. On a tmpfs DIR (/dev/shm) fsync costs
 * nothing and the numbers are the writers' own CPU cost (encoding, hashing,
 * copies).
 *
 * Usage: bench_write [--vertices N] [--frames F] [--repeats R] [--dir DIR]
 * (defaults 100000, 100, 3, $TMPDIR or /tmp).
 * Prints a Markdown table: format, file MB, median seconds, MB/s of file
 * written, and MB/s of positions (12 bytes per vertex per frame), the
 * throughput a bake sees.
 */
#include "springskin.h"

#include "limb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BENCH_MAX_REPEATS 15
#define BENCH_BYTES_PER_MB 1e6

typedef enum format { FORMAT_PC2, FORMAT_ABC, FORMAT_ABC_NORMALS, FORMAT_COUNT } format;
static const char *const FORMAT_NAMES[FORMAT_COUNT] = {".pc2", ".abc", ".abc + N"};

/* Writes every frame in `fmt`; returns the seconds, or -1 on error. */
static double write_cache(format fmt, const char *path, const ssk_rig *rig,
                          const float *frames, const float *normals, uint32_t frame_count)
{
    uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_error err = {0};
    ssk_status s = SSK_OK;
    double t0 = bench_now();
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
    double t = bench_now() - t0;
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
    if (vertices < 2 * BENCH_LIMB_SEGMENTS || frame_count == 0 || repeats < 1 ||
        repeats > BENCH_MAX_REPEATS) {
        fprintf(stderr, "bench_write: vertices >= %d, frames >= 1, repeats 1..%d\n",
                2 * BENCH_LIMB_SEGMENTS, BENCH_MAX_REPEATS);
        return 2;
    }
    ssk_rig *rig = bench_limb_create(vertices, BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
    if (!rig) return 1;
    uint32_t nv = ssk_rig_vertex_count(rig);
    size_t frame_floats = (size_t)nv * 3;
    float *frames = malloc(frame_floats * frame_count * sizeof(float));
    float *normals = malloc(frame_floats * frame_count * sizeof(float));
    float skin[16 * BENCH_LIMB_BONES];
    ssk_deformer *deformer = NULL;
    ssk_deformer_desc dd = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU};
    ssk_error err = {0};
    if (!frames || !normals || ssk_deformer_create(&deformer, rig, &dd, &err) != SSK_OK) {
        fprintf(stderr, "bench_write: setup failed: %s\n", err.message);
        return 1;
    }
    for (uint32_t f = 0; f < frame_count; ++f) {
        bench_limb_pose(skin, 2 * BENCH_PI * f / frame_count);
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
        qsort(times[fmt], (size_t)repeats, sizeof times[fmt][0], bench_compare_double);
        double t = times[fmt][repeats / 2];
        printf("| %s | %.1f | %.3f | %.0f | %.0f |\n", FORMAT_NAMES[fmt], file_mb[fmt], t,
               file_mb[fmt] / t, positions_mb / t);
    }
    free(frames);
    free(normals);
    ssk_rig_destroy(rig);
    return status;
}
