/* testutil.c — generated rigs, small math, files, the CLI and a stand-in
 * for a full disk, for the C tests (see testutil.h). */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TU_PI 3.14159265358979323846f

void tu_mat4_identity(float m[16])
{
    memset(m, 0, 16 * sizeof(float));
    m[0] = m[5] = m[10] = m[15] = 1.0f;
}

void tu_mat4_mul(float dst[16], const float a[16], const float b[16])
{
    float r[16];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            double s = 0;
            for (int k = 0; k < 4; ++k) s += (double)a[i * 4 + k] * b[k * 4 + j];
            r[i * 4 + j] = (float)s;
        }
    memcpy(dst, r, sizeof r);
}

void tu_mat4_translation(float m[16], float x, float y, float z)
{
    tu_mat4_identity(m);
    m[3] = x;
    m[7] = y;
    m[11] = z;
}

void tu_mat4_rotation(float m[16], const float axis[3], float angle,
                      const float pivot[3])
{
    double x = axis[0], y = axis[1], z = axis[2];
    double c = cos(angle), s = sin(angle), t = 1.0 - c;
    double r[9] = {t * x * x + c,     t * x * y - s * z, t * x * z + s * y,
                   t * x * y + s * z, t * y * y + c,     t * y * z - s * x,
                   t * x * z - s * y, t * y * z + s * x, t * z * z + c};
    tu_mat4_identity(m);
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) m[i * 4 + j] = (float)r[i * 3 + j];
        /* translation = pivot - R pivot */
        m[i * 4 + 3] = (float)(pivot[i] - (r[i * 3] * pivot[0] + r[i * 3 + 1] * pivot[1] +
                                            r[i * 3 + 2] * pivot[2]));
    }
}

void tu_mat4_scale(float m[16], float sx, float sy, float sz, const float pivot[3])
{
    tu_mat4_identity(m);
    m[0] = sx;
    m[5] = sy;
    m[10] = sz;
    m[3] = pivot[0] - sx * pivot[0];
    m[7] = pivot[1] - sy * pivot[1];
    m[11] = pivot[2] - sz * pivot[2];
}

double tu_max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN propagates as the max */
    }
    return m;
}

void tu_deform(float *dst, const ssk_rig *rig, ssk_method method, const float *skin)
{
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = method, .backend = SSK_BACKEND_CPU};
    ssk_error err = {0};
    if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK)
        fail_msg("ssk_deformer_create: %s", err.message);
    if (ssk_deformer_deform(d, dst, skin, NULL, &err) != SSK_OK)
        fail_msg("ssk_deformer_deform: %s", err.message);
    ssk_deformer_destroy(d);
}

double tu_bbox_diagonal(const float *p, size_t n)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) {
            if (p[i * 3 + k] < lo[k]) lo[k] = p[i * 3 + k];
            if (p[i * 3 + k] > hi[k]) hi[k] = p[i * 3 + k];
        }
    return sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                (hi[2] - lo[2]) * (hi[2] - lo[2]));
}

static float smoothstep01(float x)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    return x * x * (3 - 2 * x);
}

ssk_rig *tu_make_limb(uint32_t rings, uint32_t segments, uint32_t bone_count,
                      float length, float radius, float blend, uint32_t influences)
{
    return tu_make_limb_rings(rings, segments, bone_count, length, radius, blend, influences,
                              NULL);
}

ssk_rig *tu_make_limb_rings(uint32_t rings, uint32_t segments, uint32_t bone_count,
                            float length, float radius, float blend, uint32_t influences,
                            const float *ring_y)
{
    if (influences < 2) influences = 2;
    uint32_t nv = rings * segments + 2;
    uint32_t nf = 2 * (rings - 1) * segments + 2 * segments;
    float *pos = calloc((size_t)nv * 3, sizeof(float));
    int32_t *tri = calloc((size_t)nf * 3, sizeof(int32_t));
    int32_t *idx = calloc((size_t)nv * influences, sizeof(int32_t));
    float *w = calloc((size_t)nv * influences, sizeof(float));
    int32_t *parents = calloc(bone_count, sizeof(int32_t));
    float *bind = calloc((size_t)bone_count * 16, sizeof(float));
    float *heads = calloc((size_t)bone_count * 3, sizeof(float));
    float *tails = calloc((size_t)bone_count * 3, sizeof(float));
    assert_non_null(pos);
    float bl = length / (float)bone_count;
    for (uint32_t b = 0; b < bone_count; ++b) {
        parents[b] = (int32_t)b - 1;
        tu_mat4_translation(bind + 16 * b, 0, bl * (float)b, 0);
        heads[3 * b + 1] = bl * (float)b;
        tails[3 * b + 1] = bl * (float)(b + 1);
    }
    for (uint32_t r = 0; r < rings; ++r) {
        float y = ring_y ? ring_y[r] : length * (float)r / (float)(rings - 1);
        for (uint32_t s = 0; s < segments; ++s) {
            float a = 2.0f * TU_PI * (float)s / (float)segments;
            float *p = pos + 3 * (r * segments + s);
            p[0] = radius * cosf(a);
            p[1] = y;
            p[2] = radius * sinf(a);
        }
    }
    uint32_t cap0 = rings * segments, cap1 = cap0 + 1;
    pos[3 * cap0 + 1] = 0;
    pos[3 * cap1 + 1] = length;
    uint32_t f = 0;
    for (uint32_t r = 0; r + 1 < rings; ++r)
        for (uint32_t s = 0; s < segments; ++s) {
            int32_t a = (int32_t)(r * segments + s), b = (int32_t)(r * segments + (s + 1) % segments);
            int32_t c = a + (int32_t)segments, d = b + (int32_t)segments;
            int32_t *t = tri + 3 * f++;
            t[0] = a; t[1] = c; t[2] = b;
            t = tri + 3 * f++;
            t[0] = b; t[1] = c; t[2] = d;
        }
    for (uint32_t s = 0; s < segments; ++s) {
        int32_t *t = tri + 3 * f++;
        t[0] = (int32_t)cap0; t[1] = (int32_t)s; t[2] = (int32_t)((s + 1) % segments);
        t = tri + 3 * f++;
        uint32_t top = (rings - 1) * segments;
        t[0] = (int32_t)cap1; t[1] = (int32_t)(top + (s + 1) % segments); t[2] = (int32_t)(top + s);
    }
    /* Weights: nearest joint j (between bone j-1 and j), falloff over blend. */
    float half = 0.5f * blend * bl;
    for (uint32_t v = 0; v < nv; ++v) {
        float y = pos[3 * v + 1];
        int32_t b = (int32_t)floorf(y / bl);
        if (b >= (int32_t)bone_count) b = (int32_t)bone_count - 1;
        if (b < 0) b = 0;
        float lo_joint = bl * (float)b, hi_joint = bl * (float)(b + 1);
        int32_t other = b;
        float wo = 0;
        if (b > 0 && y - lo_joint < half) {
            other = b - 1;
            /* at the joint wo = 0.5, at lo_joint + half wo = 0 */
            wo = 0.5f - 0.5f * smoothstep01((y - lo_joint) / half);
        } else if (b + 1 < (int32_t)bone_count && hi_joint - y < half) {
            other = b + 1;
            wo = 0.5f - 0.5f * smoothstep01((hi_joint - y) / half);
        }
        idx[v * influences] = b;
        w[v * influences] = 1.0f - wo;
        idx[v * influences + 1] = other;
        w[v * influences + 1] = wo;
    }
    ssk_skeleton_desc sk = {bone_count, NULL, parents, bind, heads, tails};
    ssk_mesh_desc md = {"limb", nv, pos, nf, tri, influences, idx, w, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    ssk_status st = ssk_rig_create(&rig, &sk, &md, 1, &err);
    if (st != SSK_OK) fprintf(stderr, "tu_make_limb: %s\n", err.message);
    assert_int_equal(st, SSK_OK);
    free(pos); free(tri); free(idx); free(w); free(parents); free(bind); free(heads); free(tails);
    return rig;
}

char *tu_temp_dir(void)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    char *path = malloc(strlen(base) + 32);
    assert_non_null(path);
    sprintf(path, "%s/ssk-test-XXXXXX", base);
    assert_non_null(mkdtemp(path));
    return path;
}

/* ------------------------------------------------------------------------ */
/* Files and directories.                                                   */
/* ------------------------------------------------------------------------ */

char *tu_path_join(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    assert_non_null(p);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

char *tu_temp_name(const char *path)
{
    char *p = malloc(strlen(path) + 32);
    assert_non_null(p);
    sprintf(p, "%s.tmp-%ld", path, (long)getpid());
    return p;
}

bool tu_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int tu_dir_entry_count(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
    closedir(d);
    return n;
}

void tu_remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char *p = malloc(strlen(dir) + strlen(e->d_name) + 2);
            if (!p) break;
            sprintf(p, "%s/%s", dir, e->d_name);
            if (remove(p) != 0) tu_remove_tree(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

unsigned char *tu_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    if (size) *size = (size_t)n;
    return buf;
}

/* ------------------------------------------------------------------------ */
/* The `springskin` executable.                                             */
/* ------------------------------------------------------------------------ */

tu_cli_result tu_run_cli(const char *capture_dir, const char *const *args)
{
    char *out_path = tu_path_join(capture_dir, "stdout");
    char *err_path = tu_path_join(capture_dir, "stderr");
    const char *argv[TU_CLI_MAX_ARGS + 2];
    size_t argc = 0;
    argv[argc++] = SSK_CLI_PATH;
    for (size_t i = 0; args[i]; ++i) {
        assert_true(argc <= TU_CLI_MAX_ARGS);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0) _exit(127);
        dup2(fo, STDOUT_FILENO);
        dup2(fe, STDERR_FILENO);
        close(fo);
        close(fe);
        execv(SSK_CLI_PATH, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    tu_cli_result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = (char *)tu_read_file(out_path, NULL);
    r.err = (char *)tu_read_file(err_path, NULL);
    remove(out_path);
    remove(err_path);
    free(out_path);
    free(err_path);
    return r;
}

void tu_cli_result_free(tu_cli_result *r)
{
    free(r->out);
    free(r->err);
}

/* ------------------------------------------------------------------------ */
/* A full disk.                                                             */
/* ------------------------------------------------------------------------ */

void tu_file_size_limit_begin(tu_file_size_limit *state, rlim_t limit)
{
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &state->saved), 0);
    state->saved_handler = signal(SIGXFSZ, SIG_IGN);
    struct rlimit limited = state->saved;
    limited.rlim_cur = limit;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &limited), 0);
}

void tu_file_size_limit_end(const tu_file_size_limit *state)
{
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &state->saved), 0);
    signal(SIGXFSZ, state->saved_handler);
}

/* ------------------------------------------------------------------------ */
/* An independent .pc2 reader.                                              */
/* ------------------------------------------------------------------------ */

static uint32_t le_u32(const unsigned char *b)
{
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
           ((uint32_t)b[3] << 24);
}

static float le_f32(const unsigned char *b)
{
    uint32_t u = le_u32(b);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void tu_pc2_read(tu_pc2_file *out, const char *path)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char h[TU_PC2_HEADER_BYTES];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    memcpy(out->magic, h, 12);
    out->version = (int32_t)le_u32(h + 12);
    out->points = (int32_t)le_u32(h + 16);
    out->start_frame = le_f32(h + 20);
    out->sample_rate = le_f32(h + 24);
    out->samples = (int32_t)le_u32(h + 28);
    assert_true(out->points >= 0 && out->samples >= 0);
    size_t n = (size_t)out->samples * (size_t)out->points * 3;
    out->data = malloc(n * sizeof(float) + 1);
    assert_non_null(out->data);
    unsigned char b[4];
    for (size_t i = 0; i < n; ++i) {
        assert_int_equal(fread(b, 1, 4, f), 4);
        out->data[i] = le_f32(b);
    }
    assert_int_equal(fgetc(f), EOF); /* nothing after the last sample */
    out->file_size = ftell(f);
    fclose(f);
}

void tu_write_file(const char *path, const unsigned char *bytes, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (size) assert_int_equal(fwrite(bytes, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

uint32_t tu_get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

void tu_put_le32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; ++k) p[k] = (unsigned char)(v >> (8 * k));
}

void tu_put_le64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; ++k) p[k] = (unsigned char)(v >> (8 * k));
}
