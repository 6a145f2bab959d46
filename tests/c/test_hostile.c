/* test_hostile.c — shared files that could hang or exhaust a machine
 * (issue #19), each made by the test the way the attack or the accident
 * made it:
 * - a deformer graph of 200,000 nodes is refused in under a second (the
 *   node lookup was quadratic), and the node limit has its own error; a
 *   graph at the limit parses;
 * - a 63 MB graph (under the 64 MB file cap) is refused in under 5 s by a
 *   child process whose peak memory stays under 256 MB (json-c built the
 *   whole tree first: 3.2 GB); deep nesting and oversized key lists are
 *   refused with their limits named;
 * - a sparse 4 GB binding file is refused from its header in under 0.1 s
 *   (it was read and allocated first), and a binding with a huge (finite)
 *   scale vector or center of rotation is refused naming the field;
 * - `springskin bake` stopped by SIGINT, SIGTERM or SIGXFSZ (a file size
 *   limit) dies of that signal and leaves neither the cache nor its
 *   temporary file; the next write to a path removes the temporary files
 *   of dead processes and keeps those of live ones;
 * - `springskin check` on a file that crashes Assimp (deep nesting: a
 *   stack overflow) reports it as that file's error and checks the others. */
/* wait4: the peak memory of one child */
#define _DEFAULT_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* The limb the graphs and bindings are made for. */
#define LIMB_BONES 3
/* Bars of issue #19's acceptance. */
#define HUGE_NODES 200000
#define HUGE_NODES_SECONDS 1.0
#define HUGE_GRAPH_BYTES (63u * 1024u * 1024u)
#define HUGE_GRAPH_SECONDS 5.0
#define HUGE_GRAPH_MAX_RSS_KB (256L * 1024L)
#define SPARSE_BINDING_VERTICES 200000000u /* 48 + 20 #V bytes: 4 GB */
#define SPARSE_BINDING_SECONDS 0.1
/* Binding file layout (core/bind/binding_io.c, format version 1). */
#define BIND_HEADER 40
#define BIND_CHECKSUM 8

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A growing text buffer. */
typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void put(text *t, const char *s)
{
    const size_t k = strlen(s);
    if (t->n + k + 1 > t->cap) {
        t->cap = 2 * (t->n + k + 1);
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
    memcpy(t->s + t->n, s, k + 1);
    t->n += k;
}

/* A chain: skinning -> `radials` radial nodes -> output. */
static char *chain_graph(uint32_t radials)
{
    text t = {0};
    char buf[256];
    put(&t, "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", \"method\": "
            "\"lbs\"}");
    for (uint32_t i = 0; i < radials; ++i) {
        snprintf(buf, sizeof buf,
                 ", {\"id\": \"r%u\", \"type\": \"radial\", \"bones\": [\"bone_1\"], "
                 "\"amount\": 0.01}",
                 i);
        put(&t, buf);
    }
    put(&t, ", {\"id\": \"out\", \"type\": \"output\"}], \"edges\": [");
    for (uint32_t i = 0; i <= radials; ++i) {
        char from[32], to[32];
        snprintf(from, sizeof from, i == 0 ? "skin" : "r%u", i - 1);
        snprintf(to, sizeof to, i == radials ? "out" : "r%u", i);
        snprintf(buf, sizeof buf, "%s{\"from\": \"%s\", \"to\": \"%s\"}", i ? ", " : "", from,
                 to);
        put(&t, buf);
    }
    put(&t, "]}");
    return t.s;
}

static void expect_graph_error(const char *json, const ssk_rig *rig, const char *part)
{
    ssk_graph *g = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_graph_parse(&g, json, rig, &err), SSK_ERROR_GRAPH);
    assert_null(g);
    if (!strstr(err.message, part)) fail_msg("'%s' not in: %s", part, err.message);
}

static void test_graph_of_200k_nodes_is_refused_fast(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(20, 12, LIMB_BONES, 2.0f, 0.3f, 0.5f, 2);
    char *huge = chain_graph(HUGE_NODES);
    const double t0 = now();
    expect_graph_error(huge, rig, "");
    const double seconds = now() - t0;
    ssk_graph *g = NULL;
    ssk_error err = {0};
    ssk_graph_parse(&g, huge, rig, &err);
    printf("%u nodes (%zu bytes): refused in %.3f s: %s\n", HUGE_NODES + 2, strlen(huge),
           seconds, err.message);
    assert_true(seconds < HUGE_NODES_SECONDS);
    free(huge);
    /* the node limit: one node too many, then a graph at the limit */
    char *over = chain_graph(SSK_GRAPH_MAX_NODES - 1);
    expect_graph_error(over, rig, "SSK_GRAPH_MAX_NODES");
    free(over);
    char *at = chain_graph(SSK_GRAPH_MAX_NODES - 2);
    const double t1 = now();
    if (ssk_graph_parse(&g, at, rig, &err) != SSK_OK) fail_msg("%s", err.message);
    printf("%u nodes: parsed in %.4f s\n", SSK_GRAPH_MAX_NODES, now() - t1);
    ssk_graph_destroy(g);
    free(at);
    ssk_rig_destroy(rig);
}

/* A chain of nodes at the limit on a 100k-vertex limb: the deformer hands
 * each buffer on once its reader has run, so the chain holds a few #V
 * buffers, not one per node (a graph of 20,000 radial nodes took 958 MB on
 * BCN_Epileptic.X). Peak memory of a child that makes the deformer and
 * deforms once. */
#define CHAIN_MAX_RSS_KB (160L * 1024L)
static void test_node_chain_reuses_buffers(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ssk_rig *rig = tu_make_limb(1000, 100, LIMB_BONES, 2.0f, 0.3f, 0.5f, 2);
        char *json = chain_graph(SSK_GRAPH_MAX_NODES - 2);
        ssk_graph *g = NULL;
        ssk_error err = {0};
        if (ssk_graph_parse(&g, json, rig, &err) != SSK_OK) _exit(2);
        ssk_deformer *d = NULL;
        ssk_deformer_desc desc = {.backend = SSK_BACKEND_CPU, .graph = g};
        if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) _exit(3);
        float skin[16 * LIMB_BONES];
        for (int b = 0; b < LIMB_BONES; ++b) tu_mat4_identity(skin + 16 * b);
        float *out = malloc(3 * (size_t)ssk_rig_vertex_count(rig) * sizeof(float));
        if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK) _exit(4);
        _exit(0);
    }
    int status = 0;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    printf("%u-node chain on a 100,000-vertex limb: child peak %ld KB (one buffer per node: "
           "%ld KB more)\n",
           SSK_GRAPH_MAX_NODES, ru.ru_maxrss, (long)(SSK_GRAPH_MAX_NODES * 100000L * 12 / 1024));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(ru.ru_maxrss < CHAIN_MAX_RSS_KB);
}

static void test_huge_graph_is_refused_in_little_memory(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = tu_path_join(dir, "huge.json");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("{\"version\": 1, \"nodes\": [], \"edges\": [], \"x\": [", f);
    static const char chunk[] = "1.0, 2.0, 3.0, 4.0, ";
    for (size_t written = 0; written + sizeof chunk < HUGE_GRAPH_BYTES;
         written += sizeof chunk - 1)
        fputs(chunk, f);
    fputs("0]}", f);
    assert_int_equal(fclose(f), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    ssk_rig *rig = tu_make_limb(20, 12, LIMB_BONES, 2.0f, 0.3f, 0.5f, 2);
    /* in a child, so that its peak memory is its own */
    const double t0 = now();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ssk_graph *g = NULL;
        ssk_error err = {0};
        const ssk_status s = ssk_graph_load(&g, path, rig, &err);
        printf("child: %s: %s\n", ssk_status_name(s), err.message);
        fflush(stdout);
        _exit(s == SSK_ERROR_GRAPH && strstr(err.message, "too large") ? 0 : 1);
    }
    int status = 0;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    const double seconds = now() - t0;
    printf("%lld-byte graph: refused in %.2f s, child peak %ld KB\n", (long long)st.st_size,
           seconds, ru.ru_maxrss);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(seconds < HUGE_GRAPH_SECONDS);
    assert_true(ru.ru_maxrss < HUGE_GRAPH_MAX_RSS_KB);

    /* nesting past SSK_GRAPH_MAX_DEPTH, and a key list past SSK_GRAPH_MAX_KEYS */
    text deep = {0};
    put(&deep, "{\"version\": 1, \"nodes\": ");
    for (int i = 0; i < 10000; ++i) put(&deep, "[");
    expect_graph_error(deep.s, rig, "SSK_GRAPH_MAX_DEPTH");
    free(deep.s);
    text keys = {0};
    put(&keys, "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
               "\"method\": \"lbs\"}, {\"id\": \"r\", \"type\": \"radial\", \"bones\": "
               "[\"bone_1\"], \"keys\": [");
    char buf[64];
    for (uint32_t i = 0; i <= SSK_GRAPH_MAX_KEYS; ++i) {
        snprintf(buf, sizeof buf, "%s[%u, 0.5]", i ? ", " : "", i);
        put(&keys, buf);
    }
    put(&keys, "]}, {\"id\": \"out\", \"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", "
               "\"to\": \"r\"}, {\"from\": \"r\", \"to\": \"out\"}]}");
    expect_graph_error(keys.s, rig, "SSK_GRAPH_MAX_KEYS");
    free(keys.s);
    ssk_rig_destroy(rig);
    tu_remove_tree(dir);
    free(path);
    free(dir);
}


static void expect_binding_error(const char *path, const ssk_rig *rig, ssk_status status,
                                 const char *part)
{
    ssk_binding *b = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_load(&b, path, rig, &err), status);
    assert_null(b);
    if (!strstr(err.message, part)) fail_msg("'%s' not in: %s", part, err.message);
    printf("%s\n", err.message);
}

static void test_hostile_bindings(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *sparse = tu_path_join(dir, "sparse.bind"), *good = tu_path_join(dir, "good.bind"),
         *bad = tu_path_join(dir, "bad.bind");
    ssk_rig *rig = tu_make_limb(20, 12, LIMB_BONES, 2.0f, 0.3f, 0.5f, 2);
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    ssk_binding *b = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_binding_create(&b, rig, &params, &err), SSK_OK);
    assert_int_equal(ssk_binding_save(b, good, &err), SSK_OK);

    /* a sparse file of 4 GB whose header claims 200M vertices */
    size_t size = 0;
    unsigned char *bytes = tu_read_file(good, &size);
    tu_put_le32(bytes + 32, SPARSE_BINDING_VERTICES);
    int fd = open(sparse, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, BIND_HEADER), BIND_HEADER);
    const off_t sparse_size = (off_t)BIND_HEADER + 20 * (off_t)SPARSE_BINDING_VERTICES +
                              BIND_CHECKSUM;
    assert_int_equal(ftruncate(fd, sparse_size), 0);
    close(fd);
    const double t0 = now();
    expect_binding_error(sparse, rig, SSK_ERROR_BINDING_MISMATCH, "another rig");
    const double seconds = now() - t0;
    printf("%lld-byte sparse binding: refused in %.4f s\n", (long long)sparse_size, seconds);
    assert_true(seconds < SPARSE_BINDING_SECONDS);
    free(bytes);

    /* a huge finite scale vector, and a huge center of rotation, with a
     * valid checksum */
    bytes = tu_read_file(good, &size);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    const size_t scale0 = BIND_HEADER + 8 * (size_t)nv; /* after the bones and t */
    const float huge = 3e38f;
    memcpy(bytes + scale0 + 4 * 7, &huge, 4);
    tu_put_le64(bytes + size - BIND_CHECKSUM, XXH3_64bits(bytes, size - BIND_CHECKSUM));
    FILE *f = fopen(bad, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
    expect_binding_error(bad, rig, SSK_ERROR_IO, "huge scale vector");
    free(bytes);
    ssk_binding_destroy(b);

    params.compute_cor = 1;
    assert_int_equal(ssk_binding_create(&b, rig, &params, &err), SSK_OK);
    assert_int_equal(ssk_binding_save(b, good, &err), SSK_OK);
    bytes = tu_read_file(good, &size);
    const size_t centers0 = 60 + 20 * (size_t)nv; /* version 2: after the scale vectors */
    memcpy(bytes + centers0 + 4 * 4, &huge, 4);
    tu_put_le64(bytes + size - BIND_CHECKSUM, XXH3_64bits(bytes, size - BIND_CHECKSUM));
    f = fopen(bad, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
    expect_binding_error(bad, rig, SSK_ERROR_IO, "huge center of rotation");
    free(bytes);
    ssk_binding_destroy(b);
    ssk_rig_destroy(rig);
    tu_remove_tree(dir);
    free(sparse);
    free(good);
    free(bad);
    free(dir);
}

/* Huge finite values (issue #19): a radial amount of 1e30, a 3e38 skinning
 * matrix and a 3e38 rest position are refused (they baked to ~1e38 or
 * inf/NaN with exit 0), each naming SSK_MAX_MAGNITUDE. */
static void test_huge_values_are_refused(void **state)
{
    (void)state;
    ssk_rig *rig = tu_make_limb(20, 12, LIMB_BONES, 2.0f, 0.3f, 0.5f, 2);
    expect_graph_error("{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": "
                       "\"skinning\", \"method\": \"lbs\"}, {\"id\": \"r\", \"type\": "
                       "\"radial\", \"bones\": [\"bone_1\"], \"amount\": 1e30}, {\"id\": "
                       "\"out\", \"type\": \"output\"}], \"edges\": [{\"from\": \"skin\", "
                       "\"to\": \"r\"}, {\"from\": \"r\", \"to\": \"out\"}]}",
                       rig, "beyond SSK_MAX_MAGNITUDE");
    ssk_deformer *d = NULL;
    ssk_deformer_desc desc = {.method = SSK_METHOD_LBS, .backend = SSK_BACKEND_CPU};
    ssk_error err = {0};
    assert_int_equal(ssk_deformer_create(&d, rig, &desc, &err), SSK_OK);
    float skin[16 * LIMB_BONES];
    for (int b = 0; b < LIMB_BONES; ++b) tu_mat4_identity(skin + 16 * b);
    skin[16 + 3] = 3e38f;
    float *out = malloc(3 * (size_t)ssk_rig_vertex_count(rig) * sizeof(float));
    assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_ERROR_NONFINITE);
    assert_non_null(strstr(err.message, "SSK_MAX_MAGNITUDE"));
    printf("%s\n", err.message);
    skin[16 + 3] = 1e6f; /* large, but fine */
    assert_int_equal(ssk_deformer_deform(d, out, skin, NULL, &err), SSK_OK);
    ssk_deformer_destroy(d);
    free(out);
    /* a rest position */
    ssk_mesh_view mv;
    ssk_rig_mesh(rig, 0, &mv, NULL);
    float *positions = malloc(3 * (size_t)mv.vertex_count * sizeof(float));
    memcpy(positions, mv.positions, 3 * (size_t)mv.vertex_count * sizeof(float));
    positions[3 * 5 + 1] = 3e38f;
    int32_t parents[LIMB_BONES];
    float bind[16 * LIMB_BONES];
    for (int b = 0; b < LIMB_BONES; ++b) {
        ssk_bone_view bv;
        ssk_rig_bone(rig, (uint32_t)b, &bv, NULL);
        parents[b] = bv.parent;
        memcpy(bind + 16 * b, bv.bind_matrix, sizeof(float) * 16);
    }
    ssk_skeleton_desc sk = {LIMB_BONES, NULL, parents, bind, NULL, NULL};
    ssk_mesh_desc md = {"huge", mv.vertex_count, positions, mv.triangle_count, mv.triangles,
                        mv.influence_count, mv.bone_indices, mv.weights, NULL, NULL};
    ssk_rig *bad = NULL;
    assert_int_equal(ssk_rig_create(&bad, &sk, &md, 1, &err), SSK_ERROR_NONFINITE);
    assert_null(bad);
    assert_non_null(strstr(err.message, "vertex 5"));
    assert_non_null(strstr(err.message, "SSK_MAX_MAGNITUDE"));
    printf("%s\n", err.message);
    free(positions);
    ssk_rig_destroy(rig);
}

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"
/* A bake long enough to be interrupted: springs at 480 frames per second
 * (1,600 frames of BCN_Epileptic.X, seconds of work). */
#define LONG_BAKE_FPS "480"
/* RLIMIT_FSIZE for the SIGXFSZ case: a few of BCN's 36 KB frames. */
#define SMALL_FILE_LIMIT (200 * 1024)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Runs the CLI's long spring bake into `out` in a child and interrupts it
 * with `sig` (SIGXFSZ: from the kernel, at the file size limit); returns
 * the child's wait status and its temporary file's name in tmp. */
static int interrupted_bake(const char *out, int sig, char *tmp, size_t tmp_size)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (sig == SIGXFSZ) {
            struct rlimit rl = {SMALL_FILE_LIMIT, SMALL_FILE_LIMIT};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(SSK_CLI_PATH, SSK_CLI_PATH, "bake", MODEL_PATH, "-o", out, "--method", "spring",
              "--fps", LONG_BAKE_FPS, (char *)NULL);
        _exit(127);
    }
    snprintf(tmp, tmp_size, "%s.tmp-%ld", out, (long)pid);
    if (sig != SIGXFSZ) {
        const double t0 = now();
        while (!exists(tmp) && now() - t0 < 30.0) sleep_ms(1);
        assert_true(exists(tmp));
        sleep_ms(100); /* mid-bake: frames being written */
        assert_int_equal(kill(pid, sig), 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void test_interrupted_bakes_leave_no_temporary_file(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *out = tu_path_join(dir, "cache.pc2");
    const int signals[] = {SIGINT, SIGTERM, SIGXFSZ};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; ++i) {
        char tmp[4096];
        const int status = interrupted_bake(out, signals[i], tmp, sizeof tmp);
        printf("%s: %s, temporary file %s, cache %s\n", strsignal(signals[i]),
               WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited",
               exists(tmp) ? "left" : "removed", exists(out) ? "written" : "absent");
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), signals[i]);
        assert_false(exists(tmp));
        assert_false(exists(out));
    }
    /* stale temporary files: one of a dead process, one of a live one */
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0) _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    char stale[4096], live[4096];
    snprintf(stale, sizeof stale, "%s.tmp-%ld", out, (long)dead);
    snprintf(live, sizeof live, "%s.tmp-%ld", out, (long)getppid());
    FILE *f = fopen(stale, "wb");
    assert_non_null(f);
    fclose(f);
    f = fopen(live, "wb");
    assert_non_null(f);
    fclose(f);
    ssk_pc2_writer *w = NULL;
    ssk_error err = {0};
    const float p[3] = {1.0f, 2.0f, 3.0f};
    assert_int_equal(ssk_pc2_writer_open(&w, out, 1, 0.0f, 1.0f, &err), SSK_OK);
    assert_int_equal(ssk_pc2_writer_write(w, p, &err), SSK_OK);
    assert_int_equal(ssk_pc2_writer_finish(w, &err), SSK_OK);
    assert_false(exists(stale));
    assert_true(exists(live));
    assert_true(exists(out));
    tu_remove_tree(dir);
    free(out);
    free(dir);
}

static void test_check_goes_on_after_an_importer_crash(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *deep = tu_path_join(dir, "deep.x");
    FILE *f = fopen(deep, "w");
    assert_non_null(f);
    fputs("xof 0303txt 0032\n", f);
    for (int i = 0; i < 200000; ++i) fputs("Frame a {\n", f);
    for (int i = 0; i < 200000; ++i) fputs("}\n", f);
    assert_int_equal(fclose(f), 0);
    /* in the sanitizer build, the crash must stay a crash (ASan would turn
     * the stack overflow into its own report and exit status 1) */
    const char *asan = getenv("ASAN_OPTIONS");
    char *saved = asan ? strdup(asan) : NULL;
    char options[512];
    snprintf(options, sizeof options, "%s%shandle_segv=0", asan ? asan : "", asan ? ":" : "");
    setenv("ASAN_OPTIONS", options, 1);
    tu_cli_result r = tu_run_cli(dir, (const char *[]){"check", deep, MODEL_PATH, "--frames",
                                                       "1", NULL});
    if (saved) {
        setenv("ASAN_OPTIONS", saved, 1);
        free(saved);
    } else {
        unsetenv("ASAN_OPTIONS");
    }
    printf("exit %d\n%s", r.exit_code, r.out);
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.out, "the importer crashed"));
    assert_non_null(strstr(r.out, "file: " MODEL_PATH));
    assert_non_null(strstr(r.out, "method cor"));
    tu_cli_result_free(&r);
    tu_remove_tree(dir);
    free(deep);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_of_200k_nodes_is_refused_fast),
        cmocka_unit_test(test_node_chain_reuses_buffers),
        cmocka_unit_test(test_huge_graph_is_refused_in_little_memory),
        cmocka_unit_test(test_hostile_bindings),
        cmocka_unit_test(test_huge_values_are_refused),
        cmocka_unit_test(test_interrupted_bakes_leave_no_temporary_file),
        cmocka_unit_test(test_check_goes_on_after_an_importer_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
