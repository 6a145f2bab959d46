/* main.c — the `springskin` command-line tool.
 *
 *   springskin info FILE [--fps FPS]
 *   springskin bake FILE -o OUT [--method lbs|dqs] [--fps FPS] [--frames A:B]
 *                   [--backend auto|cpu] [--animation N]
 *   springskin --help | --version | COMMAND --help
 *
 * Errors print "springskin: error: <message>" on stderr. Exit status: 0 on
 * success, 1 for runtime errors (unreadable or unsupported file, no skeleton,
 * no animation, bad frame range, unwritable output), 2 for usage errors
 * (unknown command or option, missing argument, malformed number or name).
 * A failed bake leaves no output file (the library writes a temporary file
 * and renames it only on success). */
#include "springskin.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROGRAM "springskin"
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define DEFAULT_FPS 24.0
#define MS_PER_SECOND 1000.0
#define PERCENT 100u

/* Result of argument parsing: go on, or exit with this code. */
#define PARSE_CONTINUE (-1)

static void print_error(const char *fmt, ...)
{
    va_list ap;
    fputs(PROGRAM ": error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    fputs(PROGRAM ": error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (command)
        fprintf(stderr, "Try '" PROGRAM " %s --help'.\n", command);
    else
        fputs("Try '" PROGRAM " --help'.\n", stderr);
    return EXIT_USAGE;
}

static int runtime_error(const ssk_error *err, ssk_status status)
{
    print_error("%s", err->message[0] ? err->message : ssk_status_message(status));
    return EXIT_RUNTIME;
}

/* Flushes stdout and turns a failed write (e.g. a closed pipe, a full disk)
 * into a runtime error. */
static int finish_stdout(int code)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        print_error("cannot write to standard output: %s", strerror(errno));
        return code == 0 ? EXIT_RUNTIME : code;
    }
    return code;
}

/* ------------------------------------------------------------------------ */
/* Help texts.                                                               */
/* ------------------------------------------------------------------------ */

static void print_main_help(FILE *f)
{
    fputs("usage: " PROGRAM " [--help] [--version] COMMAND [ARGS]\n"
          "\n"
          "Skins rigged characters (any format Assimp reads: .fbx, .dae, .x,\n"
          ".gltf, ...) and bakes their animations to point caches.\n"
          "\n"
          "commands:\n"
          "  info FILE [--fps FPS]          meshes, bones and animations of FILE\n"
          "  bake FILE -o OUT [options]     bake an animation to a .pc2 point cache\n"
          "\n"
          "options:\n"
          "  -h, --help       show this help\n"
          "  -V, --version    show the version\n"
          "\n"
          "Run '" PROGRAM " COMMAND --help' for a command's options.\n"
          "Exit status: 0 on success, 1 on a runtime error, 2 on a usage error.\n",
          f);
}

static void print_info_help(FILE *f)
{
    fputs("usage: " PROGRAM " info FILE [--fps FPS]\n"
          "\n"
          "Prints each skinned mesh (name, vertices, triangles), the skeleton\n"
          "(bones, bones that deform a vertex, most influences on one vertex)\n"
          "and each animation (duration in seconds, frame count at FPS).\n"
          "\n"
          "options:\n"
          "  --fps FPS        frames per second for frame counts, > 0 (default 24)\n"
          "  -h, --help       show this help\n",
          f);
}

static void print_bake_help(FILE *f)
{
    fputs("usage: " PROGRAM " bake FILE -o OUT [--method lbs|dqs] [--fps FPS]\n"
          "                       [--frames A:B] [--backend auto|cpu] [--animation N]\n"
          "\n"
          "Samples the animation at t = frame / FPS seconds for each frame, deforms\n"
          "every skinned mesh and streams the positions (meshes concatenated in\n"
          "file order, each in its own object space) to OUT.\n"
          "\n"
          "options:\n"
          "  -o, --output OUT   output file; the format comes from the extension:\n"
          "                     .pc2 (Blender's Mesh Cache modifier, 3ds Max)\n"
          "  --method M         lbs: linear blend skinning (default)\n"
          "                     dqs: dual quaternion skinning (Blender's Preserve Volume)\n"
          "  --fps FPS          frames per second, > 0 (default 24)\n"
          "  --frames A:B       inclusive frame range (default: the whole animation,\n"
          "                     frames 0 .. floor(duration * FPS))\n"
          "  --backend B        auto (default) or cpu\n"
          "  --animation N      animation index (default 0; see 'info')\n"
          "  -h, --help         show this help\n"
          "\n"
          "The .pc2 file starts at frame A with a sample rate of 1 (one sample per\n"
          "frame). Progress is shown on stderr when it is a terminal; a summary line\n"
          "is printed on stdout. On failure no output file is left behind.\n",
          f);
}

/* ------------------------------------------------------------------------ */
/* Argument parsing: a small hand parser for "--name VALUE", "--name=VALUE", */
/* "-x VALUE", "-xVALUE", flags, "--" and positionals.                       */
/* ------------------------------------------------------------------------ */

typedef struct option_spec {
    const char *long_name; /* without "--" */
    char short_name;       /* 0 for none */
    const char **value;    /* where the value goes */
} option_spec;

/* Parses argv[first..argc) of `command`. Returns PARSE_CONTINUE, or 0 after
 * printing the help, or EXIT_USAGE after printing an error. Exactly one
 * positional argument (the input file) is required. */
static int parse_options(const char *command, int argc, char **argv, int first,
                         const option_spec *specs, size_t spec_count,
                         const char **positional, void (*help)(FILE *))
{
    bool options_done = false;
    *positional = NULL;
    for (int i = first; i < argc; ++i) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || arg[1] == '\0') {
            if (*positional)
                return usage_error(command, "unexpected argument '%s' (only one input file)", arg);
            *positional = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            help(stdout);
            return 0;
        }
        const option_spec *spec = NULL;
        const char *inline_value = NULL;
        if (arg[1] == '-') {
            const char *name = arg + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            for (size_t k = 0; k < spec_count; ++k)
                if (strlen(specs[k].long_name) == len &&
                    strncmp(specs[k].long_name, name, len) == 0)
                    spec = &specs[k];
            if (spec && eq) inline_value = eq + 1;
        } else {
            for (size_t k = 0; k < spec_count; ++k)
                if (specs[k].short_name && specs[k].short_name == arg[1])
                    spec = &specs[k];
            if (spec && arg[2]) inline_value = arg + 2;
        }
        if (!spec) return usage_error(command, "unknown option '%s'", arg);
        if (inline_value) {
            *spec->value = inline_value;
        } else {
            if (i + 1 >= argc)
                return usage_error(command, "option '%s' needs a value", arg);
            *spec->value = argv[++i];
        }
    }
    if (!*positional) return usage_error(command, "missing input FILE");
    return PARSE_CONTINUE;
}

static bool parse_fps(double *out, const char *text)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || !(v > 0.0))
        return false;
    *out = v;
    return true;
}

/* A non-negative decimal integer <= max. */
static bool parse_count(long long *out, const char *text, long long max)
{
    if (text[0] < '0' || text[0] > '9') return false; /* no sign, no space */
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*end != '\0' || errno == ERANGE || v > max) return false;
    *out = v;
    return true;
}

/* "A:B", two non-negative integers. */
static bool parse_frames(int32_t *first, int32_t *last, const char *text)
{
    const char *colon = strchr(text, ':');
    if (!colon) return false;
    size_t len = (size_t)(colon - text);
    char head[32];
    if (len == 0 || len >= sizeof head) return false;
    memcpy(head, text, len);
    head[len] = '\0';
    long long a, b;
    if (!parse_count(&a, head, INT32_MAX) || !parse_count(&b, colon + 1, INT32_MAX))
        return false;
    *first = (int32_t)a;
    *last = (int32_t)b;
    return true;
}

/* ------------------------------------------------------------------------ */
/* info                                                                      */
/* ------------------------------------------------------------------------ */

static int command_info(int argc, char **argv)
{
    const char *fps_text = NULL, *path = NULL;
    const option_spec specs[] = {{"fps", 0, &fps_text}};
    int r = parse_options("info", argc, argv, 2, specs, sizeof specs / sizeof specs[0],
                          &path, print_info_help);
    if (r != PARSE_CONTINUE) return r;
    double fps = DEFAULT_FPS;
    if (fps_text && !parse_fps(&fps, fps_text))
        return usage_error("info", "bad number for --fps: '%s' (expected a number > 0)",
                           fps_text);

    ssk_error err = {0};
    ssk_scene *scene = NULL;
    ssk_status s = ssk_scene_import(&scene, path, &err);
    if (s != SSK_OK) return runtime_error(&err, s);
    const ssk_rig *rig = ssk_scene_rig(scene);
    uint32_t mesh_count = ssk_rig_mesh_count(rig);
    uint64_t triangles = 0;

    printf("file: %s\n", path);
    printf("meshes: %u\n", (unsigned)mesh_count);
    for (uint32_t m = 0; m < mesh_count; ++m) {
        ssk_mesh_view view;
        s = ssk_rig_mesh(rig, m, &view, &err);
        if (s != SSK_OK) {
            ssk_scene_destroy(scene);
            return runtime_error(&err, s);
        }
        printf("  '%s': %u vertices, %u triangles\n", view.name,
               (unsigned)view.vertex_count, (unsigned)view.triangle_count);
        triangles += view.triangle_count;
    }
    printf("total: %u vertices, %llu triangles\n",
           (unsigned)ssk_rig_vertex_count(rig), (unsigned long long)triangles);
    printf("bones: %u (%u deforming), max influences per vertex: %u\n",
           (unsigned)ssk_rig_bone_count(rig),
           (unsigned)ssk_rig_deforming_bone_count(rig),
           (unsigned)ssk_rig_max_influences(rig));
    uint32_t anim_count = ssk_scene_animation_count(scene);
    printf("animations: %u (frame counts at %g fps)\n", (unsigned)anim_count, fps);
    for (uint32_t a = 0; a < anim_count; ++a) {
        ssk_animation_info info;
        s = ssk_scene_animation(scene, a, &info, &err);
        if (s != SSK_OK) {
            ssk_scene_destroy(scene);
            return runtime_error(&err, s);
        }
        printf("  [%u] '%s': %.3f s, %u frames, %u channels\n", (unsigned)a,
               info.name ? info.name : "", info.duration_seconds,
               (unsigned)ssk_animation_frame_count(&info, fps),
               (unsigned)info.channel_count);
    }
    ssk_scene_destroy(scene);
    return finish_stdout(0);
}

/* ------------------------------------------------------------------------ */
/* bake                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct progress_state {
    unsigned last_percent; /* last printed, or UINT_MAX before the first */
    bool open_line;        /* a progress line without its newline */
} progress_state;

static void progress_to_terminal(void *user, uint32_t done, uint32_t total)
{
    progress_state *p = user;
    unsigned percent = total ? (unsigned)((uint64_t)done * PERCENT / total) : PERCENT;
    if (percent == p->last_percent && done != total) return;
    p->last_percent = percent;
    fprintf(stderr, "\rbaking: frame %u/%u (%u%%)", (unsigned)done, (unsigned)total,
            percent);
    p->open_line = true;
    if (done == total) {
        fputc('\n', stderr);
        p->open_line = false;
    }
    fflush(stderr);
}

static int command_bake(int argc, char **argv)
{
    const char *path = NULL, *output = NULL, *method_text = NULL, *fps_text = NULL,
               *frames_text = NULL, *backend_text = NULL, *animation_text = NULL;
    const option_spec specs[] = {
        {"output", 'o', &output},       {"method", 0, &method_text},
        {"fps", 0, &fps_text},          {"frames", 0, &frames_text},
        {"backend", 0, &backend_text},  {"animation", 0, &animation_text},
    };
    int r = parse_options("bake", argc, argv, 2, specs, sizeof specs / sizeof specs[0],
                          &path, print_bake_help);
    if (r != PARSE_CONTINUE) return r;
    if (!output) return usage_error("bake", "missing output: -o OUT");
    if (!output[0]) return usage_error("bake", "empty output path");

    ssk_error err = {0};
    ssk_bake_desc desc = {0};
    desc.output_path = output;
    desc.method = SSK_METHOD_LBS;
    desc.backend = SSK_BACKEND_AUTO;
    desc.fps = DEFAULT_FPS;
    desc.animation = 0;
    desc.first_frame = 0;
    desc.last_frame = -1;
    if (method_text && ssk_method_parse(&desc.method, method_text, &err) != SSK_OK)
        return usage_error("bake", "--method: %s", err.message);
    if (backend_text && ssk_backend_parse(&desc.backend, backend_text, &err) != SSK_OK)
        return usage_error("bake", "--backend: %s", err.message);
    if (fps_text && !parse_fps(&desc.fps, fps_text))
        return usage_error("bake", "bad number for --fps: '%s' (expected a number > 0)",
                           fps_text);
    if (frames_text && !parse_frames(&desc.first_frame, &desc.last_frame, frames_text))
        return usage_error("bake",
                           "bad value for --frames: '%s' (expected A:B, two "
                           "non-negative integers, first and last frame)",
                           frames_text);
    if (animation_text) {
        long long index;
        if (!parse_count(&index, animation_text, UINT32_MAX))
            return usage_error("bake",
                               "bad number for --animation: '%s' (expected a "
                               "non-negative integer)",
                               animation_text);
        desc.animation = (uint32_t)index;
    }
    progress_state progress = {UINT_MAX, false};
    if (isatty(STDERR_FILENO)) {
        desc.progress = progress_to_terminal;
        desc.progress_user = &progress;
    }

    ssk_scene *scene = NULL;
    ssk_status s = ssk_scene_import(&scene, path, &err);
    if (s != SSK_OK) return runtime_error(&err, s);
    ssk_bake_stats stats;
    s = ssk_scene_bake(scene, &desc, &stats, &err);
    ssk_scene_destroy(scene);
    if (progress.open_line) fputc('\n', stderr);
    if (s != SSK_OK) return runtime_error(&err, s);

    double per_frame = stats.frame_count ? stats.wall_seconds / stats.frame_count : 0.0;
    double deform_per_frame =
        stats.frame_count ? stats.deform_seconds / stats.frame_count : 0.0;
    printf("baked %u frames x %u vertices (%s, %s backend) in %.3f s: "
           "%.2f ms/frame (deform %.2f ms/frame) -> %s\n",
           (unsigned)stats.frame_count, (unsigned)stats.vertex_count,
           ssk_method_name(desc.method), ssk_backend_name(stats.backend),
           stats.wall_seconds, per_frame * MS_PER_SECOND,
           deform_per_frame * MS_PER_SECOND, output);
    return finish_stdout(0);
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_main_help(stderr);
        return EXIT_USAGE;
    }
    const char *command = argv[1];
    if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0 ||
        strcmp(command, "help") == 0) {
        print_main_help(stdout);
        return finish_stdout(0);
    }
    if (strcmp(command, "--version") == 0 || strcmp(command, "-V") == 0) {
        printf(PROGRAM " %s\n", ssk_version_string());
        return finish_stdout(0);
    }
    if (strcmp(command, "info") == 0) return command_info(argc, argv);
    if (strcmp(command, "bake") == 0) return command_bake(argc, argv);
    if (command[0] == '-') return usage_error(NULL, "unknown option '%s'", command);
    return usage_error(NULL, "unknown command '%s' (commands: info, bake)", command);
}
