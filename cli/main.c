/* main.c — the `springskin` command-line tool.
 *
 *   springskin info FILE [--fps FPS] [--backend auto|cpu|gl]
 *   springskin check FILE [--fps FPS] [--animation N] [--frames N]
 *                   [--backend auto|cpu|gl] [--strict]
 *   springskin bake FILE (-o OUT | --shard DIR) [--method lbs|dqs|rigid|irs|spring|cor|implicit
 *                   | --graph G.json] [--binding B] [--fps FPS] [--frames A:B]
 *                   [--backend auto|cpu|gl] [--animation N] [--normals] [--strict]
 *   springskin merge DIR -o OUT [--frames A:B]
 *   springskin bake-many JOBS.json [--scheduler tcp://HOST:PORT] [...]
 *                   (runs `python3 -m springskin.distributed`, the Dask front)
 *   springskin preview FILE -o OUT.png [--frame N|auto] [--methods lbs,dqs]
 *                   [--size WxH] [--fps FPS] [--animation N] [--backend B]
 *   springskin gpuinfo [--backend auto|cpu|gl]
 *   springskin bind FILE [-o BINDING] [--report] [--method auto|direct|weights|planar]
 *                   [--smooth N] [--max-distance D] [--cor [--cor-sigma S]
 *                   [--cor-epsilon E] [--cor-omega W] [--cor-cutoff C]] [--implicit]
 *   springskin --help | --version | COMMAND --help
 *
 * Errors print "springskin: error: <message>" on stderr. Exit status: 0 on
 * success, 1 for runtime errors (unreadable or unsupported file, no skeleton,
 * no animation, bad frame range, unwritable output; `bake --strict`: spring
 * frames that did not converge, the output written and kept), 2 for usage
 * errors (unknown command or option, missing argument, malformed number or
 * name).
 * A failed bake leaves no output file (the library writes a temporary file
 * and renames it only on success). */
#include "springskin.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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
          "  check FILE [options]           what to look at before trusting a bake:\n"
          "                                 node transforms, seams, weights, bones,\n"
          "                                 and every method on a few frames\n"
          "  bake FILE -o OUT [options]     bake an animation to a .pc2 or .abc cache\n"
          "  bake FILE --shard DIR --frames A:B [options]\n"
          "                                 bake frames A..B as a shard of DIR (farms)\n"
          "  merge DIR -o OUT [--frames A:B]\n"
          "                                 merge a directory of shards into one cache\n"
          "  bake-many JOBS.json [--scheduler tcp://HOST:PORT]\n"
          "                                 bake many files in frame chunks on a Dask\n"
          "                                 cluster (the Python package springskin)\n"
          "  preview FILE -o OUT.png [options]\n"
          "                                 render a frame, one panel per method, to PNG\n"
          "  gpuinfo                        the headless GL context: platform, renderer,\n"
          "                                 compute limits, hardware or software\n"
          "  bind FILE [-o BINDING] [options]\n"
          "                                 attach every vertex to a bone (attachment\n"
          "                                 binding), optionally cached in BINDING\n"
          "\n"
          "Every command takes --backend auto|cpu|gl: auto uses GL on a hardware GPU\n"
          "and the CPU otherwise (software GL such as llvmpipe is slower than OpenMP).\n"
          "\n"
          "options:\n"
          "  -h, --help       show this help\n"
          "  -V, --version    show the version\n"
          "\n"
          "Run '" PROGRAM " COMMAND --help' for a command's options.\n"
          "Exit status: 0 on success, 1 on a runtime error (with --strict also: a\n"
          "check warning, spring frames of a bake that did not converge), 2 on a\n"
          "usage error.\n",
          f);
}

static void print_info_help(FILE *f)
{
    fputs("usage: " PROGRAM " info FILE [--fps FPS] [--backend auto|cpu|gl]\n"
          "\n"
          "Prints each skinned mesh (name, vertices, triangles), the skeleton\n"
          "(bones, bones that deform a vertex, most influences on one vertex)\n"
          "and each animation (duration in seconds, frame count at FPS).\n"
          "\n"
          "options:\n"
          "  --fps FPS        frames per second for frame counts, > 0 (default 24)\n"
          "  --backend B      also print the backend a bake would use: auto, cpu, gl\n"
          "  -h, --help       show this help\n",
          f);
}

static void print_gpuinfo_help(FILE *f)
{
    fputs("usage: " PROGRAM " gpuinfo [--backend auto|cpu|gl]\n"
          "\n"
          "Creates the core's headless OpenGL context (EGL device platform with a\n"
          "hardware device, then the surfaceless platform, then any EGL device) and\n"
          "prints the platform used, GL vendor, renderer and version, the compute\n"
          "limits, whether the renderer is hardware or software, and the backend\n"
          "that --backend resolves to.\n"
          "\n"
          "options:\n"
          "  --backend B      auto (default), cpu or gl\n"
          "  -h, --help       show this help\n",
          f);
}

static void print_bake_help(FILE *f)
{
    fputs("usage: " PROGRAM " bake FILE (-o OUT | --shard DIR) [--method lbs|dqs|rigid|\n"
          "                       irs|spring|cor|\n"
          "                       implicit | --graph G.json]\n"
          "                       [--binding B] [--fps FPS] [--frames A:B]\n"
          "                       [--backend auto|cpu|gl] [--animation N] [--normals]\n"
          "                       [--verbose]\n"
          "                       [--spring-solver auto|multigrid|multilevel|chebyshev|jacobi]\n"
          "                       [--cage C.obj --cage-edit E.obj] [--strict]\n"
          "\n"
          "Samples the animation at t = frame / FPS seconds for each frame, deforms\n"
          "every skinned mesh and streams the positions (meshes concatenated in\n"
          "file order, each in its own object space) to OUT.\n"
          "\n"
          "options:\n"
          "  -o, --output OUT   output file; the format comes from the extension:\n"
          "                     .pc2 (Blender's Mesh Cache modifier, 3ds Max) or\n"
          "                     .abc (Alembic: Blender, Maya, Houdini, renderers)\n"
          "  --method M         lbs: linear blend skinning (default)\n"
          "                     dqs: dual quaternion skinning (Blender's Preserve Volume)\n"
          "                     rigid: rigid attachment skinning (Toothman 2020, 4.1)\n"
          "                     irs: incremental rotation skinning (Toothman 2020, 4.1)\n"
          "                     spring: IRS relaxed by the spring deformer (Toothman\n"
          "                     2020, 4.2) with its default parameters\n"
          "                     cor: optimized centers of rotation (Le & Hodgins 2016);\n"
          "                     the centers come from --binding B when it has them\n"
          "                     (bind --cor), else they are computed first\n"
          "                     implicit: implicit skinning (Vaillant 2015): DQS, then\n"
          "                     the vertices tracked onto per-bone implicit surfaces,\n"
          "                     with contact surfaces at folds\n"
          "  --graph G.json     deform with a deformer graph instead of one method\n"
          "                     (skinning, radial, spring, arap, implicit, normals\n"
          "                     nodes, and a cage node: --cage/--cage-edit inline;\n"
          "                     docs/deformer-graph.md)\n"
          "  --binding B        attachment binding file for rigid, irs and radial nodes\n"
          "                     (and the centers of rotation of cor, the fields of\n"
          "                     implicit): loaded when B exists (it must be this rig's,\n"
          "                     e.g. from 'bind -o B'; for cor without centers, or\n"
          "                     implicit without this build's fields, they are added\n"
          "                     and B saved), else bound with the defaults and saved\n"
          "                     to B; without it the binding is computed for this bake\n"
          "                     only (implicit: its fields are fitted for this bake)\n"
          "  --fps FPS          frames per second, > 0 (default 24)\n"
          "  --frames A:B       inclusive frame range (default: the whole animation,\n"
          "                     frames 0 .. floor(duration * FPS))\n"
          "  --backend B        auto (default: GL on a hardware GPU, else cpu), cpu, gl\n"
          "  --animation N      animation index (default 0; see 'info')\n"
          "  --normals          .abc only: also write per-vertex normals (N) per frame\n"
          "  --verbose          print each frame's spring iterations and residual on\n"
          "                     stderr\n"
          "  --spring-solver S  with --method spring: auto (the default: multigrid, or\n"
          "                     multilevel for a spring with surface edits), multigrid (a\n"
          "                     multigrid correction over the whole surface: about as many\n"
          "                     passes on a dense character as on a light one),\n"
          "                     multilevel (Chebyshev plus a coarse correction over slabs\n"
          "                     of each bone), chebyshev (the plain update accelerated)\n"
          "                     or jacobi (the paper's plain update)\n"
          "  --strict           exit 1 when the springs did not converge within their\n"
          "                     iterations at some frame, naming the frames on stderr;\n"
          "                     OUT (or the shard) is still written and kept. Without\n"
          "                     it the summary names them and the exit status is 0\n"
          "  --shard DIR        write frames A..B (--frames) as a shard of DIR\n"
          "                     (DIR/frames-A-B.ssks, created atomically, with a\n"
          "                     manifest: rig, animation, binding and graph hashes, fps,\n"
          "                     frames, vertex count, normals) instead of -o; a valid\n"
          "                     shard of the same bake already there is kept. Run one\n"
          "                     command per frame range (a farm's tasks, any machine),\n"
          "                     then 'merge DIR -o OUT'. Frame-dependent graphs (springs\n"
          "                     in frame_dependent mode, elastic implicit tracking)\n"
          "                     are refused\n"
          "  --cage C --cage-edit E\n"
          "                     reshape the character with a cage (Corda et al. 2020):\n"
          "                     C the rest cage, E the same cage edited at rest (closed\n"
          "                     triangle meshes, OBJ or any format Assimp reads, in the\n"
          "                     file's scene root space); the rest mesh and the joints\n"
          "                     follow E and the animation plays on the reshaped rig\n"
          "                     (cor: centers of rotation moved by Eq. 14); not with a\n"
          "                     --graph that has a cage node. With --binding B, B is\n"
          "                     the original rig's (e.g. 'bind --cage C -o B') and\n"
          "                     keeps the cage binding: loaded when B holds C's, else\n"
          "                     bound and added to B; the reshaped rig's attachment\n"
          "                     binding is then made for this bake\n"
          "  -h, --help         show this help\n"
          "\n"
          "The .pc2 file starts at frame A with a sample rate of 1 (one sample per\n"
          "frame). The .abc file holds one Xform + PolyMesh per mesh (named after\n"
          "it), constant topology, UVs when the file has them, one sample per frame\n"
          "at A/FPS + i/FPS seconds. Progress is shown on stderr when it is a\n"
          "terminal; a summary line is printed on stdout (with spring nodes, their\n"
          "iterations and the frames that did not converge). On failure no output\n"
          "file is left behind.\n"
          "\n"
          "Exit status: 0 on success, 1 on a runtime error or, with --strict, when\n"
          "spring frames did not converge (the output is kept; a shard kept from an\n"
          "earlier run is not deformed again and counts as converged), 2 on a usage\n"
          "error.\n",
          f);
}

static void print_preview_help(FILE *f)
{
    fputs("usage: " PROGRAM " preview FILE -o OUT.png [--frame N|auto] [--methods lbs,dqs]\n"
          "                          [--size WxH] [--fps FPS] [--animation N]\n"
          "                          [--backend auto|cpu|gl] [--focus BONE]\n"
          "                          [--focus-radius F] [--cage C --cage-edit E]\n"
          "\n"
          "Renders one frame of the animation offscreen (headless OpenGL, no window):\n"
          "every skinned mesh deformed by each method, side by side, one labelled\n"
          "panel per method, all seen by the same orthographic front camera (up is\n"
          "the longest axis of the animation's first frame), Lambert-shaded; writes\n"
          "an RGB PNG.\n"
          "\n"
          "options:\n"
          "  -o, --output OUT   output PNG file\n"
          "  --frame N|auto     frame to show, sampled at t = N / FPS (default 0);\n"
          "                     auto: the frame where the first two methods differ\n"
          "                     most (largest distance of one vertex between them)\n"
          "  --methods LIST     comma-separated methods, one panel each, 1 to 8\n"
          "                     (lbs, dqs, rigid, irs, spring, cor, implicit; default\n"
          "                     lbs,dqs);\n"
          "                     rigid, irs and spring may end in @binding: the\n"
          "                     paper's attachment (one bone per vertex) instead of\n"
          "                     one per skin weight bone, labelled \"(paper)\"\n"
          "  --size WxH         image size in pixels, each 16..8192 (default: 480\n"
          "                     wide per panel by 640 high)\n"
          "  --fps FPS          frames per second, > 0 (default 24)\n"
          "  --animation N      animation index (default 0; see 'info')\n"
          "  --focus BONE       frame a close-up of BONE's posed head joint\n"
          "  --focus-radius F   half-size of that close-up over the rest bounding-box\n"
          "                     diagonal (default 0.12)\n"
          "  --cage C --cage-edit E\n"
          "                   show the character reshaped by an edited cage (as bake)\n"
          "  -h, --help         show this help\n"
          "\n"
          "Needs an OpenGL 4.3 context through EGL (a GPU, or Mesa's llvmpipe).\n"
          "On failure no output file is left behind.\n",
          f);
}

static void print_bind_help(FILE *f)
{
    fputs("usage: " PROGRAM " bind FILE [-o BINDING] [--report]\n"
          "                       [--method auto|direct|weights|planar] [--smooth N]\n"
          "                       [--max-distance D] [--cor [--cor-sigma S]\n"
          "                       [--cor-epsilon E] [--cor-omega W] [--cor-cutoff C]]\n"
          "                       [--implicit] [--cage C.obj]\n"
          "\n"
          "Attaches every vertex of the rig to one bone at a point along it (the\n"
          "attachment binding of the rigid and incremental-rotation deformers,\n"
          "Toothman 2020, ch. 3) and prints a summary line: vertices, bones, method,\n"
          "smoothing iterations and time. With --cor it also precomputes the centers\n"
          "of rotation of CoR skinning (Le & Hodgins 2016) and stores them in the\n"
          "binding, and prints a second line: vertices with a center, time. With\n"
          "--implicit it also fits implicit skinning's per-bone fields and tracking\n"
          "data (Vaillant 2015, 4.4) and stores them in the binding, for 'bake --method\n"
          "implicit --binding BINDING', and prints a line: fields, time.\n"
          "\n"
          "options:\n"
          "  -o, --output BINDING  binding file: reused when it holds a binding of this\n"
          "                        rig made with these options, else (re)bound and saved\n"
          "  --report              also print the binding's quality: mean and max scale\n"
          "                        vector length |s|, largest distance between the\n"
          "                        attachment points of two vertices sharing an edge, and\n"
          "                        the share of vertices attached to a bone other than\n"
          "                        their largest-weight bone\n"
          "  --method M            direct: nearest bone; weights: nearest of the bones at\n"
          "                        the joint of the largest skin weight; planar: planes\n"
          "                        at the joints divide the mesh; auto (default): weights\n"
          "                        when the rig has skin weights, else direct\n"
          "  --smooth N            smoothing and reprojection iterations, 0..1000\n"
          "                        (default 6)\n"
          "  --max-distance D      fail when a vertex ends farther than D (model units)\n"
          "                        from the bone it is attached to; 0 (default): no limit\n"
          "  --cor                 precompute and store the centers of rotation\n"
          "  --cor-sigma S         width of the similarity kernel (Eq. 1), 0.001..10\n"
          "                        (default 0.1)\n"
          "  --cor-epsilon E       subdivide integration edges until their weight\n"
          "                        distance is below E, 0.02..2 (default 0.1)\n"
          "  --cor-omega W         the paper's seed radius, (0, 2] (default 0.1):\n"
          "                        checked and stored, not used (every leaf counts)\n"
          "  --cor-cutoff C        the paper's search cutoff, (0, 0.01] (default\n"
          "                        1e-6): checked and stored, not used\n"
          "  --implicit            fit and store implicit skinning's fields (the 32^3\n"
          "                        grids of every bone's HRBF field, default fit\n"
          "                        parameters) and mean value coordinates\n"
          "  --cage C.obj          bind the rest cage C (closed triangle mesh, the file's\n"
          "                        scene root space, as 'bake --cage') and store its\n"
          "                        binding (mean value coordinates of every vertex, the\n"
          "                        joints' cage coordinates, the cage updater's rows;\n"
          "                        Corda et al. 2020) in BINDING, for 'bake --binding\n"
          "                        BINDING --cage C --cage-edit E'; reused when BINDING\n"
          "                        holds C's\n"
          "  -h, --help            show this help\n",
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

/* A flag (an option without a value) is a spec whose *value starts as
 * OPTION_FLAG_UNSET; parse_options sets it to OPTION_FLAG_SET when given. */
static const char OPTION_FLAG_UNSET[] = "(flag unset)";
static const char OPTION_FLAG_SET[] = "(flag set)";

/* Parses argv[first..argc) of `command`. Returns PARSE_CONTINUE, or 0 after
 * printing the help, or EXIT_USAGE after printing an error. Exactly one
 * positional argument (the input file) is required. */
/* As parse_options, for a command taking 1 to max_files input files
 * (files[], *file_count). */
static int parse_options_files(const char *command, int argc, char **argv, int first,
                               const option_spec *specs, size_t spec_count, const char **files,
                               int *file_count, int max_files, void (*help)(FILE *))
{
    bool options_done = false;
    *file_count = 0;
    for (int i = first; i < argc; ++i) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || arg[1] == '\0') {
            if (max_files == 0) return usage_error(command, "unexpected argument '%s'", arg);
            if (*file_count == max_files)
                return max_files == 1
                           ? usage_error(command, "unexpected argument '%s' (only one input file)",
                                         arg)
                           : usage_error(command, "unexpected argument '%s' (at most %d input "
                                                  "files)",
                                         arg, max_files);
            files[(*file_count)++] = arg;
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
        if (*spec->value == OPTION_FLAG_UNSET || *spec->value == OPTION_FLAG_SET) {
            if (inline_value) return usage_error(command, "option '%s' takes no value", arg);
            *spec->value = OPTION_FLAG_SET;
            continue;
        }
        if (inline_value) {
            *spec->value = inline_value;
        } else {
            if (i + 1 >= argc)
                return usage_error(command, "option '%s' needs a value", arg);
            *spec->value = argv[++i];
        }
    }
    if (max_files && *file_count == 0) return usage_error(command, "missing input FILE");
    return PARSE_CONTINUE;
}

static int parse_options(const char *command, int argc, char **argv, int first,
                         const option_spec *specs, size_t spec_count,
                         const char **positional, void (*help)(FILE *))
{
    const char *file = NULL;
    int count = 0;
    const int r = parse_options_files(command, argc, argv, first, specs, spec_count, &file,
                                      &count, positional ? 1 : 0, help);
    if (positional) *positional = file; /* NULL: the command takes no FILE */
    return r;
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

/* The rest shape's bounding box in rig space and in the file's scene root
 * space (where --cage files are given). */
static void print_bounding_boxes(const ssk_scene *scene)
{
    const ssk_rig *rig = ssk_scene_rig(scene);
    float to_scene[16];
    ssk_scene_rest_rig_matrix(scene, to_scene);
    double lo[2][3], hi[2][3];
    for (int s = 0; s < 2; ++s)
        for (int r = 0; r < 3; ++r) {
            lo[s][r] = INFINITY;
            hi[s][r] = -INFINITY;
        }
    for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
        ssk_mesh_view mv;
        if (ssk_rig_mesh(rig, m, &mv, NULL) != SSK_OK) continue;
        for (uint32_t i = 0; i < mv.vertex_count; ++i) {
            const float *p = mv.positions + 3 * (size_t)i;
            double q[3], w[3];
            for (int r = 0; r < 3; ++r)
                q[r] = (double)mv.object_matrix[4 * r] * p[0] + mv.object_matrix[4 * r + 1] * p[1] +
                       mv.object_matrix[4 * r + 2] * p[2] + mv.object_matrix[4 * r + 3];
            for (int r = 0; r < 3; ++r)
                w[r] = to_scene[4 * r] * q[0] + to_scene[4 * r + 1] * q[1] +
                       to_scene[4 * r + 2] * q[2] + to_scene[4 * r + 3];
            for (int r = 0; r < 3; ++r) {
                lo[0][r] = fmin(lo[0][r], q[r]);
                hi[0][r] = fmax(hi[0][r], q[r]);
                lo[1][r] = fmin(lo[1][r], w[r]);
                hi[1][r] = fmax(hi[1][r], w[r]);
            }
        }
    }
    static const char *const space[2] = {"rig space", "scene root space (--cage files)"};
    for (int s = 0; s < 2; ++s)
        if (lo[s][0] <= hi[s][0])
            printf("bounding box, %s: (%.6g, %.6g, %.6g) to (%.6g, %.6g, %.6g)\n", space[s],
                   lo[s][0], lo[s][1], lo[s][2], hi[s][0], hi[s][1], hi[s][2]);
}

static int command_info(int argc, char **argv)
{
    const char *fps_text = NULL, *path = NULL, *backend_text = NULL;
    const option_spec specs[] = {{"fps", 0, &fps_text}, {"backend", 0, &backend_text}};
    int r = parse_options("info", argc, argv, 2, specs, sizeof specs / sizeof specs[0],
                          &path, print_info_help);
    if (r != PARSE_CONTINUE) return r;
    double fps = DEFAULT_FPS;
    if (fps_text && !parse_fps(&fps, fps_text))
        return usage_error("info", "bad number for --fps: '%s' (expected a number > 0)",
                           fps_text);
    ssk_error err = {0};
    ssk_backend backend = SSK_BACKEND_AUTO;
    if (backend_text && ssk_backend_parse(&backend, backend_text, &err) != SSK_OK)
        return usage_error("info", "--backend: %s", err.message);

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
    for (uint32_t b = 0; b < ssk_rig_bone_count(rig); ++b) {
        int has_node = 1;
        uint32_t dropped = 0;
        ssk_bone_view bone;
        if (ssk_scene_bone_node(scene, b, &has_node, &dropped, &err) != SSK_OK ||
            ssk_rig_bone(rig, b, &bone, &err) != SSK_OK) {
            ssk_scene_destroy(scene);
            return runtime_error(&err, SSK_ERROR_INVALID_ARGUMENT);
        }
        if (!has_node)
            printf("  bone '%s' has no node: its influences on %u vertices were dropped "
                   "(Blender's rule)\n",
                   bone.name, (unsigned)dropped);
    }
    const char *armature = ssk_scene_armature_name(scene);
    if (armature) printf("rig space: armature node '%s'\n", armature);
    else printf("rig space: the file's root space\n");
    print_bounding_boxes(scene);
    ssk_weld_view weld;
    if (ssk_rig_weld(rig, &weld, &err) == SSK_OK)
        printf("welded: %u groups of coincident vertices (%u vertices joined, %u groups "
               "across meshes)\n",
               (unsigned)weld.group_count, (unsigned)weld.member_count,
               (unsigned)weld.across_mesh_group_count);
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
    if (backend_text) {
        /* The backend a bake would resolve to, on this rig. */
        ssk_deformer *deformer = NULL;
        ssk_deformer_desc ddesc = {.method = SSK_METHOD_LBS, .backend = backend};
        s = ssk_deformer_create(&deformer, rig, &ddesc, &err);
        if (s != SSK_OK) {
            ssk_scene_destroy(scene);
            return runtime_error(&err, s);
        }
        if (err.message[0]) fprintf(stderr, PROGRAM ": %s\n", err.message);
        printf("backend: %s (%s)\n", ssk_backend_name(ssk_deformer_backend(deformer)),
               ssk_deformer_device_name(deformer));
        ssk_deformer_destroy(deformer);
    }
    ssk_scene_destroy(scene);
    return finish_stdout(0);
}

/* ------------------------------------------------------------------------ */
/* gpuinfo                                                                   */
/* ------------------------------------------------------------------------ */

static int command_gpuinfo(int argc, char **argv)
{
    const char *backend_text = NULL;
    const option_spec specs[] = {{"backend", 0, &backend_text}};
    int r = parse_options("gpuinfo", argc, argv, 2, specs, sizeof specs / sizeof specs[0],
                          NULL, print_gpuinfo_help);
    if (r != PARSE_CONTINUE) return r;
    ssk_error err = {0};
    ssk_backend backend = SSK_BACKEND_AUTO;
    if (backend_text && ssk_backend_parse(&backend, backend_text, &err) != SSK_OK)
        return usage_error("gpuinfo", "--backend: %s", err.message);
    if (backend == SSK_BACKEND_CPU) {
        printf("backend: cpu (OpenMP)\n");
        return finish_stdout(0);
    }
    ssk_gl_context *gl = NULL;
    ssk_status s = ssk_gl_context_create(&gl, &err);
    if (s != SSK_OK) {
        if (backend == SSK_BACKEND_GL) return runtime_error(&err, s);
        fprintf(stderr, PROGRAM ": warning: %s\n", err.message);
        printf("backend: cpu (auto: no GL context)\n");
        return finish_stdout(0);
    }
    ssk_gl_info info;
    ssk_gl_context_info(gl, &info, &err);
    printf("EGL platform: %s\n", info.platform);
    printf("EGL device: %s\n", info.device);
    printf("GL vendor: %s\n", info.vendor);
    printf("GL renderer: %s\n", info.renderer);
    printf("GL version: %s\n", info.version);
    printf("GLSL version: %s\n", info.glsl_version);
    printf("renderer: %s\n", info.hardware ? "hardware" : "software");
    printf("compute: max work groups %d x %d x %d, max work group size %d x %d x %d, "
           "max invocations %d, shared memory %d bytes, max SSBO %lld bytes\n",
           info.max_work_group_count[0], info.max_work_group_count[1],
           info.max_work_group_count[2], info.max_work_group_size[0],
           info.max_work_group_size[1], info.max_work_group_size[2],
           info.max_work_group_invocations, info.max_shared_memory_bytes, info.max_ssbo_bytes);
    if (info.subgroup_size > 0)
        printf("subgroups: size %d, arithmetic %s (GL_KHR_shader_subgroup)\n", info.subgroup_size,
               info.subgroup_arithmetic ? "yes" : "no");
    else
        printf("subgroups: none (no GL_KHR_shader_subgroup)\n");
    ssk_backend chosen = backend == SSK_BACKEND_GL || info.hardware ? SSK_BACKEND_GL
                                                                   : SSK_BACKEND_CPU;
    printf("backend: %s%s\n", ssk_backend_name(chosen),
           backend == SSK_BACKEND_AUTO
               ? (info.hardware ? " (auto: hardware GPU)" : " (auto: software GL is slower than the CPU)")
               : "");
    ssk_gl_context_destroy(gl);
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

/* The progress line of a CoR precomputation (bind --cor on a terminal). */
static void cor_progress_to_terminal(void *user, uint32_t done, uint32_t total)
{
    progress_state *p = user;
    unsigned percent = total ? (unsigned)((uint64_t)done * PERCENT / total) : PERCENT;
    if (percent == p->last_percent && done != total) return;
    p->last_percent = percent;
    fprintf(stderr, "\rcenters of rotation: %u%%", percent);
    p->open_line = true;
    if (done == total) {
        fputc('\n', stderr);
        p->open_line = false;
    }
    fflush(stderr);
}

/* The graph of a bake (--graph G.json, or NULL: the bake uses `method`) and
 * its attachment binding (--binding B: loaded when B exists, else bound with
 * the default parameters and saved to B; NULL without --binding, and when
 * nothing in the graph needs one). Prints what it did with the binding. */
static ssk_status bake_graph_and_binding(const ssk_rig *rig, ssk_method method,
                                         const char *graph_path, const char *spring_solver,
                                         const char *binding_path, ssk_graph **graph,
                                         ssk_binding **binding, ssk_error *err)
{
    ssk_status s;
    if (spring_solver) {
        /* --method spring with another solver: its graph with "solver" */
        char json[512];
        snprintf(json, sizeof json,
                 "{\"version\": 1, \"nodes\": [{\"id\": \"skin\", \"type\": \"skinning\", "
                 "\"method\": \"irs\"}, {\"id\": \"relax\", \"type\": \"spring\", "
                 "\"solver\": \"%s\"}, {\"id\": \"out\", \"type\": \"output\"}], "
                 "\"edges\": [{\"from\": \"skin\", \"to\": \"relax\"}, "
                 "{\"from\": \"relax\", \"to\": \"out\"}]}",
                 spring_solver);
        s = ssk_graph_parse(graph, json, rig, err);
    } else {
        s = graph_path ? ssk_graph_load(graph, graph_path, rig, err)
                       : ssk_graph_from_method(graph, method, rig, err);
    }
    if (s != SSK_OK || !binding_path) return s;
    const int implicit = ssk_graph_needs_implicit(*graph);
    if (!ssk_graph_needs_binding(*graph) && !implicit) {
        fprintf(stderr, PROGRAM ": warning: --binding ignored: %s needs no attachment "
                        "binding\n",
                graph_path ? graph_path : ssk_method_name(method));
        return SSK_OK;
    }
    const int cor = ssk_graph_needs_cor(*graph);
    struct stat st;
    ssk_bind_params params;
    if (stat(binding_path, &st) == 0) {
        s = ssk_binding_load(binding, binding_path, rig, err);
        ssk_binding_view loaded;
        if (s == SSK_OK) s = ssk_binding_get(*binding, &loaded, err);
        const bool cor_ok = !cor || (s == SSK_OK && loaded.cor_centers);
        const bool implicit_ok = !implicit || (s == SSK_OK && loaded.implicit_current);
        if (s != SSK_OK || (cor_ok && implicit_ok)) {
            if (s == SSK_OK && implicit)
                printf("binding: loaded %s (implicit fields: %u, not fitted again)\n",
                       binding_path, (unsigned)loaded.implicit_field_count);
            else if (s == SSK_OK)
                printf("binding: loaded %s\n", binding_path);
            return s;
        }
        /* CoR needs centers the file lacks, or implicit fields this build
         * would make (another fit version or parameters): bind again with
         * the file's parameters plus those, and save */
        params = loaded.params;
        if (!cor_ok) {
            params.compute_cor = 1;
            ssk_cor_params_default(&params.cor);
        }
        if (!implicit_ok) {
            params.compute_implicit = 1;
            if (loaded.has_implicit)
                printf("binding: %s holds implicit fields of another fit version or "
                       "parameters: fitting them again\n",
                       binding_path);
        }
        ssk_binding_destroy(*binding);
        *binding = NULL;
    } else {
        ssk_bind_params_default(&params);
        params.compute_cor = cor;
        params.compute_implicit = implicit;
    }
    int reused = 0;
    s = ssk_binding_cached(binding, rig, &params, binding_path, &reused, err);
    if (s == SSK_OK) {
        ssk_binding_view view;
        if (ssk_binding_get(*binding, &view, err) == SSK_OK)
            printf("binding: bound %u vertices (%s%s%s) in %.3f s -> %s\n",
                   (unsigned)view.vertex_count, ssk_bind_method_name(view.params.method),
                   view.cor_centers ? ", centers of rotation" : "",
                   view.has_implicit ? ", implicit fields" : "", view.seconds, binding_path);
    }
    return s;
}

/* Seconds of CLOCK_MONOTONIC (differences only). */
static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --cage / --cage-edit (issue #21): both cages (edit NULL: the rest cage
 * only) read into the scene's rig space, the same topology checked, the
 * rest cage bound to the rig; with `binding` (the rig's, from
 * binding_path) the cage binding is taken from it when it holds this
 * cage's, else bound, stored in it and the binding saved to binding_path. */
static ssk_status cage_bind(ssk_cage **out, ssk_cage_mesh *cage, ssk_cage_mesh *edit,
                            const ssk_scene *scene, const char *cage_path,
                            const char *edit_path, ssk_binding *binding,
                            const char *binding_path, ssk_error *err)
{
    ssk_status s = ssk_cage_mesh_import(cage, cage_path, scene, err);
    if (s == SSK_OK && edit) s = ssk_cage_mesh_import(edit, edit_path, scene, err);
    if (s != SSK_OK) return s;
    if (edit && (edit->vertex_count != cage->vertex_count || edit->triangle_count != cage->triangle_count ||
        memcmp(edit->triangles, cage->triangles,
               3 * (size_t)cage->triangle_count * sizeof *cage->triangles) != 0))
    {
        err->status = SSK_ERROR_INVALID_ARGUMENT;
        snprintf(err->message, sizeof err->message,
                 "--cage-edit %s: %u vertices and %u triangles, not the topology of --cage %s "
                 "(%u vertices, %u triangles)",
                 edit_path, edit->vertex_count, edit->triangle_count, cage_path,
                 cage->vertex_count, cage->triangle_count);
        return err->status;
    }
    const double t0 = now_seconds();
    int reused = 0;
    s = ssk_cage_create_cached(out, ssk_scene_rig(scene), cage, binding, &reused, err);
    const double seconds = now_seconds() - t0; /* the save not included */
    if (s == SSK_OK && binding && !reused && binding_path)
        s = ssk_binding_save(binding, binding_path, err);
    if (s == SSK_OK && reused)
        printf("cage: %u vertices, binding loaded from %s (not bound again) in %.3f s\n",
               cage->vertex_count, binding_path, seconds);
    else if (s == SSK_OK)
        printf("cage: bound %u vertices to %u rig vertices in %.3f s%s%s\n", cage->vertex_count,
               ssk_rig_vertex_count(ssk_scene_rig(scene)), seconds,
               binding && binding_path ? " -> " : "", binding && binding_path ? binding_path : "");
    return s;
}

/* --verbose: one line per frame with its spring report. */
static void print_frame_report(void *user, int32_t frame, const ssk_spring_report *report)
{
    (void)user;
    fprintf(stderr, "frame %d: spring iterations %u, residual %g, energy %g, %s\n", (int)frame,
            (unsigned)report->iterations, (double)report->residual, report->energy,
            report->converged ? "converged" : "not converged");
}

/* bake --strict (issue #36): the spring frames that did not converge, on
 * stderr as an error, with what to change; the output stays. */
static void print_strict_unconverged(const ssk_bake_stats *stats, const char *output,
                                     const char *graph_path, const char *spring_solver)
{
    const uint32_t listed = stats->spring_frames_unconverged < SSK_BAKE_LISTED_FRAMES
                                ? stats->spring_frames_unconverged
                                : SSK_BAKE_LISTED_FRAMES;
    fprintf(stderr, PROGRAM ": error: springs not converged at %u of %u frame(s) within %u "
                    "iterations: frame(s)",
            (unsigned)stats->spring_frames_unconverged, (unsigned)stats->frame_count,
            (unsigned)stats->spring_iterations_max);
    for (uint32_t k = 0; k < listed; ++k)
        fprintf(stderr, "%s %d (residual %g)", k ? "," : "",
                (int)stats->spring_unconverged_frames[k],
                (double)stats->spring_unconverged_residuals[k]);
    if (stats->spring_frames_unconverged > listed)
        fprintf(stderr, " and %u more", (unsigned)(stats->spring_frames_unconverged - listed));
    fprintf(stderr, " (--strict); %s is written and kept\n", output);
    ssk_spring_params defaults;
    ssk_spring_params_default(&defaults);
    /* a solver slower than the default's multigrid (on the CPU) */
    const bool slower = spring_solver && strcmp(spring_solver, "auto") != 0 &&
                        strcmp(spring_solver, "multigrid") != 0;
    if (graph_path)
        fprintf(stderr, PROGRAM ": raise \"max_iterations\" of the spring node in %s (default "
                        "%u)\n",
                graph_path, (unsigned)defaults.max_iterations);
    else
        fprintf(stderr, PROGRAM ": --method spring runs at most %u iterations a frame: bake "
                        "--graph G.json (examples/graphs/spring.json) with a larger "
                        "\"max_iterations\" in its spring node%s%s%s\n",
                (unsigned)defaults.max_iterations,
                slower ? ", or drop --spring-solver " : "", slower ? spring_solver : "",
                slower ? " (the default, the multigrid on the CPU, converges in far fewer "
                         "iterations on a dense mesh)"
                       : "");
}

static int command_bake(int argc, char **argv)
{
    const char *path = NULL, *output = NULL, *method_text = NULL, *fps_text = NULL,
               *frames_text = NULL, *backend_text = NULL, *animation_text = NULL,
               *graph_path = NULL, *binding_path = NULL, *verbose = OPTION_FLAG_UNSET,
               *normals = OPTION_FLAG_UNSET, *spring_solver = NULL, *cage_path = NULL,
               *cage_edit_path = NULL, *shard_dir = NULL, *strict = OPTION_FLAG_UNSET;
    const option_spec specs[] = {
        {"output", 'o', &output},       {"method", 0, &method_text},
        {"fps", 0, &fps_text},          {"frames", 0, &frames_text},
        {"backend", 0, &backend_text},  {"animation", 0, &animation_text},
        {"graph", 0, &graph_path},      {"binding", 0, &binding_path},
        {"verbose", 0, &verbose},       {"normals", 0, &normals},
        {"spring-solver", 0, &spring_solver},
        {"cage", 0, &cage_path},        {"cage-edit", 0, &cage_edit_path},
        {"shard", 0, &shard_dir},       {"strict", 0, &strict},
    };
    int r = parse_options("bake", argc, argv, 2, specs, sizeof specs / sizeof specs[0],
                          &path, print_bake_help);
    if (r != PARSE_CONTINUE) return r;
    if (output && shard_dir)
        return usage_error("bake", "-o and --shard exclude each other (merge the shards into "
                                   "OUT with 'merge DIR -o OUT')");
    if (!output && !shard_dir) return usage_error("bake", "missing output: -o OUT or --shard DIR");
    if (output && !output[0]) return usage_error("bake", "empty output path");
    if (shard_dir && !shard_dir[0]) return usage_error("bake", "empty --shard directory");
    if (graph_path && method_text)
        return usage_error("bake", "--graph and --method exclude each other (the graph "
                                   "names its skinning method)");
    if (graph_path && !graph_path[0]) return usage_error("bake", "empty --graph path");
    if (binding_path && !binding_path[0]) return usage_error("bake", "empty --binding path");
    if (!cage_path != !cage_edit_path)
        return usage_error("bake", "--cage and --cage-edit go together (the rest cage and the "
                                   "edited one)");

    ssk_error err = {0};
    ssk_bake_desc desc = {0};
    desc.output_path = output;
    desc.shard_directory = shard_dir;
    desc.method = SSK_METHOD_LBS;
    desc.backend = SSK_BACKEND_AUTO;
    desc.fps = DEFAULT_FPS;
    desc.animation = 0;
    desc.first_frame = 0;
    desc.last_frame = -1;
    desc.with_normals = normals == OPTION_FLAG_SET;
    if (method_text && ssk_method_parse(&desc.method, method_text, &err) != SSK_OK)
        return usage_error("bake", "--method: %s", err.message);
    if (spring_solver) {
        if (strcmp(spring_solver, "multilevel") != 0 && strcmp(spring_solver, "chebyshev") != 0 &&
            strcmp(spring_solver, "jacobi") != 0 && strcmp(spring_solver, "multigrid") != 0 &&
            strcmp(spring_solver, "auto") != 0)
            return usage_error("bake", "bad value for --spring-solver: '%s' (expected auto, "
                                       "multigrid, multilevel, chebyshev or jacobi)",
                               spring_solver);
        if (graph_path || desc.method != SSK_METHOD_SPRING)
            return usage_error("bake", "--spring-solver goes with --method spring (a graph "
                                       "names its solver in its spring node's \"solver\")");
    }
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
    if (isatty(STDERR_FILENO) && verbose != OPTION_FLAG_SET) {
        desc.progress = progress_to_terminal;
        desc.progress_user = &progress;
    }
    if (verbose == OPTION_FLAG_SET) desc.frame_report = print_frame_report;

    ssk_scene *scene = NULL;
    ssk_status s = ssk_scene_import(&scene, path, &err);
    if (s != SSK_OK) return runtime_error(&err, s);
    ssk_cage_mesh cage = {0}, edit = {0};
    ssk_cage *bound_cage = NULL;
    if (cage_path) {
        /* with --binding, B is the original rig's and keeps the cage
         * binding; the reshaped rig's attachment binding is made for this
         * bake */
        ssk_binding *rig_binding = NULL;
        struct stat st;
        if (binding_path && stat(binding_path, &st) == 0) {
            s = ssk_binding_load(&rig_binding, binding_path, ssk_scene_rig(scene), &err);
        } else if (binding_path) {
            ssk_bind_params params;
            ssk_bind_params_default(&params);
            s = ssk_binding_create(&rig_binding, ssk_scene_rig(scene), &params, &err);
        }
        if (s == SSK_OK)
            s = cage_bind(&bound_cage, &cage, &edit, scene, cage_path, cage_edit_path,
                          rig_binding, binding_path, &err);
        ssk_binding_destroy(rig_binding);
        if (s != SSK_OK) {
            ssk_cage_destroy(bound_cage);
            ssk_cage_mesh_free(&cage);
            ssk_cage_mesh_free(&edit);
            ssk_scene_destroy(scene);
            return runtime_error(&err, s);
        }
        desc.cage = bound_cage;
        desc.cage_edit = edit.vertices;
    }
    ssk_graph *graph = NULL;
    ssk_binding *binding = NULL;
    s = bake_graph_and_binding(ssk_scene_rig(scene), desc.method, graph_path, spring_solver,
                               cage_path ? NULL : binding_path, &graph, &binding, &err);
    /* NULL: the method's own graph */
    desc.graph = graph_path || spring_solver ? graph : NULL;
    desc.binding = binding;
    ssk_bake_stats stats;
    if (s == SSK_OK) s = ssk_scene_bake(scene, &desc, &stats, &err);
    ssk_binding_destroy(binding);
    ssk_graph_destroy(graph);
    ssk_cage_destroy(bound_cage);
    ssk_cage_mesh_free(&cage);
    ssk_cage_mesh_free(&edit);
    ssk_scene_destroy(scene);
    if (progress.open_line) fputc('\n', stderr);
    if (s != SSK_OK) return runtime_error(&err, s);
    if (stats.warning[0]) fprintf(stderr, PROGRAM ": %s\n", stats.warning);

    char shard_path[PATH_MAX] = "";
    if (shard_dir &&
        ssk_shard_path(shard_path, sizeof shard_path, shard_dir, desc.first_frame,
                       desc.last_frame >= 0 ? desc.last_frame
                                            : desc.first_frame + (int32_t)stats.frame_count - 1,
                       &err) != SSK_OK)
        return runtime_error(&err, SSK_ERROR_INVALID_ARGUMENT);
    if (stats.shard_reused) {
        printf("kept %s: a complete shard of this bake (%u frames x %u vertices)\n", shard_path,
               (unsigned)stats.frame_count, (unsigned)stats.vertex_count);
        return finish_stdout(0);
    }
    if (shard_dir) output = shard_path;
    double per_frame = stats.frame_count ? stats.wall_seconds / stats.frame_count : 0.0;
    double deform_per_frame =
        stats.frame_count ? stats.deform_seconds / stats.frame_count : 0.0;
    printf("baked %u frames x %u vertices (%s, %s backend: %s) in %.3f s: "
           "%.2f ms/frame (deform %.2f ms/frame) -> %s\n",
           (unsigned)stats.frame_count, (unsigned)stats.vertex_count,
           graph_path ? graph_path : ssk_method_name(desc.method),
           ssk_backend_name(stats.backend), stats.device,
           stats.wall_seconds, per_frame * MS_PER_SECOND,
           deform_per_frame * MS_PER_SECOND, output);
    if (stats.spring_iterations || stats.spring_residual_max > 0.0f)
        printf("springs: %llu iterations (%.1f per frame, at most %u), largest final residual "
               "%g, %u frame(s) not converged\n",
               (unsigned long long)stats.spring_iterations,
               stats.frame_count ? (double)stats.spring_iterations / stats.frame_count : 0.0,
               (unsigned)stats.spring_iterations_max, (double)stats.spring_residual_max,
               (unsigned)stats.spring_frames_unconverged);
    if (stats.spring_frames_unconverged) {
        /* name them, with the residual each stopped at */
        printf("springs not converged at frame(s):");
        const uint32_t listed = stats.spring_frames_unconverged < SSK_BAKE_LISTED_FRAMES
                                    ? stats.spring_frames_unconverged
                                    : SSK_BAKE_LISTED_FRAMES;
        for (uint32_t k = 0; k < listed; ++k)
            printf("%s %d (residual %g)", k ? "," : "", (int)stats.spring_unconverged_frames[k],
                   (double)stats.spring_unconverged_residuals[k]);
        if (stats.spring_frames_unconverged > listed)
            printf(" and %u more", (unsigned)(stats.spring_frames_unconverged - listed));
        printf("\n");
    }
    if (strict != OPTION_FLAG_SET || !stats.spring_frames_unconverged) return finish_stdout(0);
    int code = finish_stdout(EXIT_RUNTIME);
    print_strict_unconverged(&stats, output, graph_path, spring_solver);
    return code;
}

/* ------------------------------------------------------------------------ */
/* preview                                                                   */
/* ------------------------------------------------------------------------ */

#define PREVIEW_MAX_METHODS 8
#define PREVIEW_MIN_SIZE 16
#define PREVIEW_MAX_SIZE 8192
#define PREVIEW_PANEL_WIDTH 480
#define PREVIEW_HEIGHT 640
/* --focus-radius default: a close-up of a joint, 0.12 of the diagonal. */
#define PREVIEW_FOCUS_RADIUS 0.12f

/* "lbs,dqs": 1..PREVIEW_MAX_METHODS names. Returns false after printing a
 * usage error into `message`. */
/* Comma-separated method names; with `attachments` a name may end in
 * "@binding" (the paper's attachment for rigid, irs, spring) or
 * "@weights". */
static bool parse_methods(ssk_method *out, uint32_t *count, const char *text,
                          char *message, size_t message_size,
                          ssk_attachment_mode *attachments)
{
    *count = 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[32];
        if (len == 0 || len >= sizeof name) {
            snprintf(message, message_size,
                     "bad value for --methods: '%s' (expected comma-separated "
                     "names: lbs, dqs)",
                     text);
            return false;
        }
        if (*count == PREVIEW_MAX_METHODS) {
            snprintf(message, message_size, "--methods: at most %d methods, got more",
                     PREVIEW_MAX_METHODS);
            return false;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        char *at = attachments ? strchr(name, '@') : NULL;
        if (attachments) attachments[*count] = SSK_ATTACHMENT_WEIGHTS;
        if (at) {
            *at = '\0';
            if (strcmp(at + 1, "binding") == 0) {
                attachments[*count] = SSK_ATTACHMENT_BINDING;
            } else if (strcmp(at + 1, "weights") != 0) {
                snprintf(message, message_size,
                         "--methods: unknown attachment '%s' in '%.*s' (expected @weights or "
                         "@binding)",
                         at + 1, (int)len, p);
                return false;
            }
        }
        ssk_error err = {0};
        if (ssk_method_parse(&out[*count], name, &err) != SSK_OK) {
            snprintf(message, message_size, "--methods: %s", err.message);
            return false;
        }
        ++*count;
        if (!comma) return true;
        p = comma + 1;
    }
}

/* "WxH", each in PREVIEW_MIN_SIZE..PREVIEW_MAX_SIZE. */
static bool parse_size(uint32_t *width, uint32_t *height, const char *text)
{
    const char *x = strchr(text, 'x');
    if (!x) return false;
    size_t len = (size_t)(x - text);
    char head[16];
    if (len == 0 || len >= sizeof head) return false;
    memcpy(head, text, len);
    head[len] = '\0';
    long long w, h;
    if (!parse_count(&w, head, PREVIEW_MAX_SIZE) || !parse_count(&h, x + 1, PREVIEW_MAX_SIZE))
        return false;
    if (w < PREVIEW_MIN_SIZE || h < PREVIEW_MIN_SIZE) return false;
    *width = (uint32_t)w;
    *height = (uint32_t)h;
    return true;
}

/* --frame auto: the frame of animation `desc->animation` at desc->fps where
 * methods[0] and methods[1] differ most, measured as the largest Euclidean
 * distance of one vertex between the two deformations (each mesh in its
 * object space); the first such frame on ties. Deforms on the CPU. */
static ssk_status most_different_frame(const ssk_scene *scene, const ssk_preview_desc *desc,
                                       int32_t *out_frame, double *out_distance,
                                       ssk_error *err)
{
    ssk_animation_info info;
    ssk_status s = ssk_scene_animation(scene, desc->animation, &info, err);
    if (s != SSK_OK) return s;
    uint32_t frames = ssk_animation_frame_count(&info, desc->fps);
    const ssk_rig *rig = ssk_scene_rig(scene);
    size_t bones = ssk_rig_bone_count(rig), meshes = ssk_rig_mesh_count(rig);
    size_t floats = (size_t)ssk_rig_vertex_count(rig) * 3;
    float *skinning = malloc((bones * 16 + 1) * sizeof(float));
    float *objects = malloc((meshes * 16 + 1) * sizeof(float));
    float *a = malloc((floats + 1) * sizeof(float));
    float *b = malloc((floats + 1) * sizeof(float));
    ssk_deformer *deformers[2] = {NULL, NULL};
    if (!skinning || !objects || !a || !b) {
        s = err->status = SSK_ERROR_OUT_OF_MEMORY;
        snprintf(err->message, sizeof err->message, "--frame auto: out of memory");
        goto done;
    }
    for (int k = 0; k < 2; ++k) {
        ssk_deformer_desc ddesc = {.method = desc->methods[k], .backend = SSK_BACKEND_CPU};
        s = ssk_deformer_create(&deformers[k], rig, &ddesc, err);
        if (s != SSK_OK) goto done;
    }
    *out_frame = 0;
    *out_distance = -1.0;
    for (uint32_t f = 0; f < frames && f <= INT32_MAX; ++f) {
        s = ssk_scene_sample(scene, desc->animation, (double)f / desc->fps, skinning,
                             objects, err);
        if (s == SSK_OK) s = ssk_deformer_deform(deformers[0], a, skinning, objects, err);
        if (s == SSK_OK) s = ssk_deformer_deform(deformers[1], b, skinning, objects, err);
        if (s != SSK_OK) goto done;
        double largest = 0.0;
        for (size_t i = 0; i < floats; i += 3) {
            double dx = (double)a[i] - b[i], dy = (double)a[i + 1] - b[i + 1],
                   dz = (double)a[i + 2] - b[i + 2];
            double d2 = dx * dx + dy * dy + dz * dz;
            if (d2 > largest) largest = d2;
        }
        if (sqrt(largest) > *out_distance) {
            *out_distance = sqrt(largest);
            *out_frame = (int32_t)f;
        }
    }
done:
    ssk_deformer_destroy(deformers[1]);
    ssk_deformer_destroy(deformers[0]);
    free(b);
    free(a);
    free(objects);
    free(skinning);
    return s;
}

static int command_preview(int argc, char **argv)
{
    const char *path = NULL, *output = NULL, *frame_text = NULL, *methods_text = NULL,
               *size_text = NULL, *fps_text = NULL, *animation_text = NULL,
               *backend_text = NULL, *focus = NULL, *focus_radius_text = NULL,
               *cage_path = NULL, *cage_edit_path = NULL;
    const option_spec specs[] = {
        {"cage", 0, &cage_path},       {"cage-edit", 0, &cage_edit_path},
        {"output", 'o', &output},      {"frame", 0, &frame_text},
        {"methods", 0, &methods_text}, {"size", 0, &size_text},
        {"fps", 0, &fps_text},         {"animation", 0, &animation_text},
        {"backend", 0, &backend_text}, {"focus", 0, &focus},
        {"focus-radius", 0, &focus_radius_text},
    };
    int r = parse_options("preview", argc, argv, 2, specs, sizeof specs / sizeof specs[0],
                          &path, print_preview_help);
    if (r != PARSE_CONTINUE) return r;
    if (!output) return usage_error("preview", "missing output: -o OUT.png");
    if (!output[0]) return usage_error("preview", "empty output path");
    if (!cage_path != !cage_edit_path)
        return usage_error("preview", "--cage and --cage-edit go together (the rest cage and "
                                      "the edited one)");

    ssk_method methods[PREVIEW_MAX_METHODS] = {SSK_METHOD_LBS, SSK_METHOD_DQS};
    ssk_attachment_mode attachments[PREVIEW_MAX_METHODS] = {SSK_ATTACHMENT_WEIGHTS};
    ssk_preview_desc desc = {0};
    desc.output_path = output;
    desc.methods = methods;
    desc.attachments = attachments;
    desc.focus_bone = focus;
    desc.focus_radius = PREVIEW_FOCUS_RADIUS;
    if (focus_radius_text) {
        char *end = NULL;
        const double r = strtod(focus_radius_text, &end);
        if (!end || *end || end == focus_radius_text || !(r > 0.0) || !(r <= 10.0))
            return usage_error("preview",
                               "bad number for --focus-radius: '%s' (expected a number in "
                               "(0, 10])",
                               focus_radius_text);
        desc.focus_radius = (float)r;
    }
    if (focus && !focus[0]) return usage_error("preview", "empty bone name for --focus");
    desc.method_count = 2;
    desc.fps = DEFAULT_FPS;
    ssk_error backend_err = {0};
    if (backend_text && ssk_backend_parse(&desc.backend, backend_text, &backend_err) != SSK_OK)
        return usage_error("preview", "--backend: %s", backend_err.message);
    char message[SSK_ERROR_MESSAGE_SIZE + 64];
    if (methods_text &&
        !parse_methods(methods, &desc.method_count, methods_text, message, sizeof message,
                       attachments))
        return usage_error("preview", "%s", message);
    desc.width = PREVIEW_PANEL_WIDTH * desc.method_count;
    desc.height = PREVIEW_HEIGHT;
    if (size_text && !parse_size(&desc.width, &desc.height, size_text))
        return usage_error("preview",
                           "bad value for --size: '%s' (expected WxH, two integers in "
                           "%d..%d)",
                           size_text, PREVIEW_MIN_SIZE, PREVIEW_MAX_SIZE);
    if (fps_text && !parse_fps(&desc.fps, fps_text))
        return usage_error("preview", "bad number for --fps: '%s' (expected a number > 0)",
                           fps_text);
    bool auto_frame = frame_text && strcmp(frame_text, "auto") == 0;
    if (auto_frame && desc.method_count < 2)
        return usage_error("preview", "--frame auto compares the first two methods; "
                                      "give at least two with --methods");
    if (frame_text && !auto_frame) {
        long long frame;
        if (!parse_count(&frame, frame_text, INT32_MAX))
            return usage_error("preview",
                               "bad value for --frame: '%s' (expected a non-negative "
                               "integer or 'auto')",
                               frame_text);
        desc.frame = (int32_t)frame;
    }
    if (animation_text) {
        long long index;
        if (!parse_count(&index, animation_text, UINT32_MAX))
            return usage_error("preview",
                               "bad number for --animation: '%s' (expected a "
                               "non-negative integer)",
                               animation_text);
        desc.animation = (uint32_t)index;
    }

    ssk_error err = {0};
    ssk_scene *scene = NULL;
    ssk_status s = ssk_scene_import(&scene, path, &err);
    if (s != SSK_OK) return runtime_error(&err, s);
    if (auto_frame) {
        double distance = 0.0;
        if (ssk_scene_animation_count(scene) == 0) {
            ssk_scene_destroy(scene);
            print_error("--frame auto: '%s' has no animation", path);
            return EXIT_RUNTIME;
        }
        s = most_different_frame(scene, &desc, &desc.frame, &distance, &err);
        if (s != SSK_OK) {
            ssk_scene_destroy(scene);
            return runtime_error(&err, s);
        }
        printf("frame auto: %d (largest %s-%s vertex distance %.6g)\n", (int)desc.frame,
               ssk_method_name(methods[0]), ssk_method_name(methods[1]), distance);
    }
    ssk_cage_mesh cage = {0}, edit = {0};
    ssk_cage *bound_cage = NULL;
    if (cage_path) {
        s = cage_bind(&bound_cage, &cage, &edit, scene, cage_path, cage_edit_path, NULL, NULL,
                      &err);
        desc.cage = bound_cage;
        desc.cage_edit = edit.vertices;
    }
    if (s == SSK_OK) s = ssk_scene_preview(scene, &desc, &err);
    ssk_cage_destroy(bound_cage);
    ssk_cage_mesh_free(&cage);
    ssk_cage_mesh_free(&edit);
    ssk_scene_destroy(scene);
    if (s != SSK_OK) return runtime_error(&err, s);
    printf("rendered frame %d (t = %.4f s), %u panel%s (", (int)desc.frame,
           (double)desc.frame / desc.fps, (unsigned)desc.method_count,
           desc.method_count == 1 ? "" : "s");
    for (uint32_t i = 0; i < desc.method_count; ++i)
        printf("%s%s%s", i ? ", " : "", ssk_method_name(methods[i]),
               attachments[i] == SSK_ATTACHMENT_BINDING ? "@binding" : "");
    printf("), %ux%u -> %s\n", (unsigned)desc.width, (unsigned)desc.height, output);
    return finish_stdout(0);
}

/* ------------------------------------------------------------------------ */
/* bind                                                                      */
/* ------------------------------------------------------------------------ */

static int command_bind(int argc, char **argv)
{
    const char *path = NULL, *output = NULL, *report = OPTION_FLAG_UNSET, *method_text = NULL,
               *smooth_text = NULL, *distance_text = NULL, *cor = OPTION_FLAG_UNSET,
               *cor_text[4] = {NULL, NULL, NULL, NULL}, *implicit = OPTION_FLAG_UNSET,
               *cage_path = NULL;
    const option_spec specs[] = {
        {"output", 'o', &output},      {"report", 0, &report},
        {"method", 0, &method_text},   {"smooth", 0, &smooth_text},
        {"max-distance", 0, &distance_text}, {"cor", 0, &cor},
        {"cor-sigma", 0, &cor_text[0]}, {"cor-epsilon", 0, &cor_text[1]},
        {"cor-omega", 0, &cor_text[2]}, {"cor-cutoff", 0, &cor_text[3]},
        {"implicit", 0, &implicit},    {"cage", 0, &cage_path},
    };
    int r = parse_options("bind", argc, argv, 2, specs, sizeof specs / sizeof specs[0], &path,
                          print_bind_help);
    if (r != PARSE_CONTINUE) return r;
    if (output && !output[0]) return usage_error("bind", "empty output path");
    ssk_error err = {0};
    ssk_bind_params params;
    ssk_bind_params_default(&params);
    if (method_text && ssk_bind_method_parse(&params.method, method_text, &err) != SSK_OK)
        return usage_error("bind", "--method: %s", err.message);
    if (smooth_text) {
        long long n;
        if (!parse_count(&n, smooth_text, UINT32_MAX))
            return usage_error("bind",
                               "bad number for --smooth: '%s' (expected a non-negative "
                               "integer)",
                               smooth_text);
        params.smooth_iterations = (uint32_t)n;
    }
    if (distance_text) {
        char *end = NULL;
        errno = 0;
        double d = strtod(distance_text, &end);
        if (end == distance_text || *end != '\0' || errno == ERANGE || !isfinite(d) ||
            !(d >= 0.0) || d > FLT_MAX)
            return usage_error("bind",
                               "bad number for --max-distance: '%s' (expected a number >= 0)",
                               distance_text);
        params.max_distance = (float)d;
    }
    params.compute_cor = cor == OPTION_FLAG_SET;
    params.compute_implicit = implicit == OPTION_FLAG_SET;
    static const char *const cor_names[4] = {"--cor-sigma", "--cor-epsilon", "--cor-omega",
                                             "--cor-cutoff"};
    float *cor_values[4] = {&params.cor.sigma, &params.cor.epsilon, &params.cor.omega,
                            &params.cor.cutoff};
    for (int i = 0; i < 4; ++i) {
        if (!cor_text[i]) continue;
        if (!params.compute_cor) return usage_error("bind", "%s needs --cor", cor_names[i]);
        char *end = NULL;
        errno = 0;
        double d = strtod(cor_text[i], &end);
        if (end == cor_text[i] || *end != '\0' || errno == ERANGE || !isfinite(d) ||
            fabs(d) > FLT_MAX)
            return usage_error("bind", "bad number for %s: '%s'", cor_names[i], cor_text[i]);
        *cor_values[i] = (float)d;
    }

    progress_state cor_progress = {UINT_MAX, false};
    if (params.compute_cor && isatty(STDERR_FILENO)) {
        params.cor.progress = cor_progress_to_terminal;
        params.cor.progress_user = &cor_progress;
    }
    ssk_scene *scene = NULL;
    ssk_status s = ssk_scene_import(&scene, path, &err);
    if (s != SSK_OK) return runtime_error(&err, s);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_binding *binding = NULL;
    int reused = 0;
    s = ssk_binding_cached(&binding, rig, &params, output, &reused, &err);
    if (s != SSK_OK) {
        ssk_scene_destroy(scene);
        /* the rig is valid, so an invalid argument is one of the options */
        if (s == SSK_ERROR_INVALID_ARGUMENT) return usage_error("bind", "%s", err.message);
        return runtime_error(&err, s);
    }
    if (cage_path) { /* its line is printed first */
        ssk_cage_mesh cage_mesh = {0};
        ssk_cage *cage = NULL;
        s = cage_bind(&cage, &cage_mesh, NULL, scene, cage_path, NULL, binding, output, &err);
        ssk_cage_destroy(cage);
        ssk_cage_mesh_free(&cage_mesh);
    }
    ssk_binding_view view;
    ssk_binding_report quality;
    if (s == SSK_OK) s = ssk_binding_get(binding, &view, &err);
    if (s == SSK_OK && report == OPTION_FLAG_SET)
        s = ssk_binding_report_compute(&quality, binding, rig, &err);
    /* The names of the bone pair the report names (the rig goes with the
     * scene below). */
    char pair_names[2][128] = {"", ""};
    for (int i = 0; s == SSK_OK && report == OPTION_FLAG_SET && i < 2; ++i) {
        ssk_bone_view bone;
        if (quality.unrelated_bones[i] >= 0 &&
            ssk_rig_bone(rig, (uint32_t)quality.unrelated_bones[i], &bone, NULL) == SSK_OK)
            snprintf(pair_names[i], sizeof pair_names[i], "%s", bone.name);
    }
    const bool has_cor = s == SSK_OK && view.cor_centers;
    uint32_t with_cor = 0;
    for (uint32_t v = 0; has_cor && v < view.vertex_count; ++v) with_cor += view.cor_flags[v] != 0;
    ssk_binding_destroy(binding);
    ssk_scene_destroy(scene);
    if (s != SSK_OK) return runtime_error(&err, s);

    if (reused)
        printf("reused %s (rig unchanged): %u vertices, %u bones, method %s, %u smoothing "
               "iterations; loaded in %.2f ms\n",
               output, (unsigned)view.vertex_count, (unsigned)view.bone_count,
               ssk_bind_method_name(view.params.method),
               (unsigned)view.params.smooth_iterations, view.seconds * MS_PER_SECOND);
    else
        printf("bound %u vertices to %u bones (method %s, %u smoothing iterations) in "
               "%.2f ms%s%s\n",
               (unsigned)view.vertex_count, (unsigned)view.bone_count,
               ssk_bind_method_name(view.params.method),
               (unsigned)view.params.smooth_iterations, view.seconds * MS_PER_SECOND,
               output ? " -> " : "", output ? output : "");
    if (has_cor) {
        const unsigned with = with_cor;
        if (reused)
            printf("centers of rotation: %u of %u vertices (sigma %g, epsilon %g, omega %g, "
                   "cutoff %g), reused\n",
                   with, (unsigned)view.vertex_count, (double)view.params.cor.sigma,
                   (double)view.params.cor.epsilon, (double)view.params.cor.omega,
                   (double)view.params.cor.cutoff);
        else
            printf("centers of rotation: %u of %u vertices (sigma %g, epsilon %g, omega %g, "
                   "cutoff %g) in %.2f ms\n",
                   with, (unsigned)view.vertex_count, (double)view.params.cor.sigma,
                   (double)view.params.cor.epsilon, (double)view.params.cor.omega,
                   (double)view.params.cor.cutoff, view.cor_seconds * MS_PER_SECOND);
    }
    if (view.has_implicit) {
        if (reused)
            printf("implicit fields: %u bones of %u, reused\n",
                   (unsigned)view.implicit_field_count, (unsigned)view.bone_count);
        else
            printf("implicit fields: %u bones of %u in %.2f ms\n",
                   (unsigned)view.implicit_field_count, (unsigned)view.bone_count,
                   view.implicit_seconds * MS_PER_SECOND);
    }
    if (report == OPTION_FLAG_SET) {
        printf("mean |s|: %.6g\n", quality.mean_scale_length);
        printf("max |s|: %.6g\n", quality.max_scale_length);
        printf("largest attachment gap: %.6g\n", quality.max_attachment_gap);
        printf("off-weight share: %.2f%%\n", quality.off_weight_share * PERCENT);
        /* Vertices likely to give artifacts to rigid, IRS and the springs. */
        printf("next to an unrelated bone: %u vertices",
               (unsigned)quality.unrelated_neighbor_vertices);
        if (quality.unrelated_bones[0] >= 0)
            printf(" (most between '%s' and '%s': %u)", pair_names[0], pair_names[1],
                   (unsigned)quality.unrelated_pair_vertices);
        printf("\n");
        printf("on a non-deforming or short bone: %u vertices\n",
               (unsigned)quality.weak_bone_vertices);
        printf("attached far from the weights' center: %u vertices\n",
               (unsigned)quality.far_from_weights_vertices);
    }
    return finish_stdout(0);
}

/* ------------------------------------------------------------------------ */
/* merge                                                                     */
/* ------------------------------------------------------------------------ */

static void print_merge_help(FILE *f)
{
    fputs("usage: " PROGRAM " merge DIR -o OUT [--frames A:B]\n"
          "\n"
          "Merges the shards of one bake ('bake FILE --shard DIR --frames A:B', one\n"
          "command per frame range, on any machine) into the cache a single bake\n"
          "writes, byte for byte (an .abc records the date it is written: set\n"
          "SOURCE_DATE_EPOCH to fix it). Checks first that the shards are one bake\n"
          "(same rig, animation, binding, graph, fps, backend, vertex count,\n"
          "normals) and cover the frames once, each shard complete; then streams\n"
          "them frame by frame. Prints a summary line.\n"
          "\n"
          "options:\n"
          "  -o, --output OUT   .pc2 or .abc (shards baked with --normals: .abc only)\n"
          "  --frames A:B       the frames to merge (default: the whole animation, as\n"
          "                     bake)\n"
          "  -h, --help         show this help\n"
          "\n"
          "Errors (exit 1, no output file): no shard, shards of two bakes, a gap (the\n"
          "missing frames are named), an overlap (the two shards are named), a\n"
          "truncated or damaged shard, an unwritable output.\n",
          f);
}

static int command_merge(int argc, char **argv)
{
    const char *dir = NULL, *output = NULL, *frames_text = NULL;
    const option_spec specs[] = {{"output", 'o', &output}, {"frames", 0, &frames_text}};
    int r = parse_options("merge", argc, argv, 2, specs, sizeof specs / sizeof specs[0], &dir,
                          print_merge_help);
    if (r != PARSE_CONTINUE) return r;
    if (!output) return usage_error("merge", "missing output: -o OUT");
    if (!output[0]) return usage_error("merge", "empty output path");
    int32_t first = 0, last = -1;
    if (frames_text && !parse_frames(&first, &last, frames_text))
        return usage_error("merge",
                           "bad value for --frames: '%s' (expected A:B, two non-negative "
                           "integers, first and last frame)",
                           frames_text);
    ssk_error err = {0};
    ssk_merge_stats stats;
    ssk_status s = ssk_shards_merge(dir, output, first, last, &stats, &err);
    if (s != SSK_OK) return runtime_error(&err, s);
    printf("merged %u shards: %u frames x %u vertices in %.3f s (%.1f MB/s read) -> %s\n",
           (unsigned)stats.shard_count, (unsigned)stats.frame_count,
           (unsigned)stats.vertex_count, stats.wall_seconds,
           stats.wall_seconds > 0.0 ? (double)stats.bytes_read / 1e6 / stats.wall_seconds : 0.0,
           output);
    return finish_stdout(0);
}

/* ------------------------------------------------------------------------ */
/* bake-many                                                                 */
/* ------------------------------------------------------------------------ */

/* Interpreter of `bake-many` (the build's SSK_CLI_PYTHON; SPRINGSKIN_PYTHON
 * overrides it). */
#ifdef SSK_CLI_PYTHON
#define BAKE_MANY_PYTHON SSK_CLI_PYTHON
#else
#define BAKE_MANY_PYTHON "python3"
#endif
#define BAKE_MANY_MODULE "springskin.distributed"

/* `bake-many` is Dask's (issue #23): the Python package's
 * springskin.distributed.main, run by replacing this process with
 * "python3 -m springskin.distributed ARGS" (the package must be
 * importable: installed, or PYTHONPATH=<build>/python). */
static int command_bake_many(int argc, char **argv)
{
    const char *python = getenv("SPRINGSKIN_PYTHON");
    if (!python || !python[0]) python = BAKE_MANY_PYTHON;
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) {
        print_error("bake-many: out of memory");
        return EXIT_RUNTIME;
    }
    args[0] = (char *)python;
    args[1] = "-m";
    args[2] = BAKE_MANY_MODULE;
    for (int i = 2; i < argc; ++i) args[i + 1] = argv[i];
    args[argc + 1] = NULL;
    fflush(stdout);
    execvp(python, args);
    print_error("bake-many: cannot run '%s -m " BAKE_MANY_MODULE "': %s (bake-many needs "
                "Python with the springskin package and python3-distributed; set "
                "SPRINGSKIN_PYTHON to choose the interpreter)",
                python, strerror(errno));
    free(args);
    return EXIT_RUNTIME;
}

/* ------------------------------------------------------------------------ */
/* check                                                                     */
/* ------------------------------------------------------------------------ */

/* Input files of one `check` call. */
#define CHECK_MAX_FILES 4096

static void print_check_help(FILE *f)
{
    fputs("usage: " PROGRAM " check FILE... [--fps FPS] [--animation N] [--frames N]\n"
          "                        [--backend auto|cpu|gl] [--strict]\n"
          "\n"
          "What to look at before trusting a bake of FILE: the armature node whose\n"
          "space skinning blends in, node scales and mesh nodes that move, seams\n"
          "welded and hard edges kept, vertices without weights, bones without a\n"
          "node or without vertices, influence counts; then every method (lbs, dqs,\n"
          "rigid, irs, spring, cor, implicit) run on N frames spread over the\n"
          "animation and judged against LBS (finite, bounding box within 1.5x,\n"
          "seams closed).\n"
          "One line per finding: LEVEL TOPIC: MESSAGE, LEVEL ok, warning or error;\n"
          "no timings, so two reports diff.\n"
          "\n"
          "options:\n"
          "  --fps FPS        frames per second, > 0 (default 24)\n"
          "  --animation N    which animation (default 0)\n"
          "  --frames N       frames each method runs on, 1..1000 (default 5)\n"
          "  --backend B      auto, cpu (default) or gl, for the methods\n"
          "  --strict         exit 1 on a warning too\n"
          "  -h, --help       show this help\n"
          "\n"
          "Several files are checked one after another, each in a process of its\n"
          "own: a file that crashes the importer (Assimp) is reported as an error\n"
          "and the others are still checked.\n"
          "\n"
          "Exit status: 0 when no finding is an error, 1 on an error finding (or a\n"
          "warning with --strict) or when a FILE cannot be imported, 2 on a usage\n"
          "error.\n",
          f);
}

/* One file's check report on stdout; the exit status of `check` for it. */
static int check_one(const char *path, const ssk_check_desc *desc, bool strict)
{
    ssk_error err = {0};
    ssk_scene *scene = NULL;
    ssk_status s = ssk_scene_import(&scene, path, &err);
    if (s != SSK_OK) {
        printf("file: %s\n%-8s import: %s\nsummary: 1 error(s), 0 warning(s)\n", path,
               ssk_check_level_name(SSK_CHECK_ERROR), err.message);
        return runtime_error(&err, s);
    }
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_check_report *report = NULL;
    s = ssk_scene_check(&report, scene, desc, &err);
    if (s != SSK_OK) {
        ssk_scene_destroy(scene);
        return runtime_error(&err, s);
    }
    printf("file: %s\n", path);
    printf("rig: %u mesh(es), %u vertices, %u bones, %u animation(s); methods on %u frame(s) "
           "at %g fps\n",
           (unsigned)ssk_rig_mesh_count(rig), (unsigned)ssk_rig_vertex_count(rig),
           (unsigned)ssk_rig_bone_count(rig), (unsigned)ssk_scene_animation_count(scene),
           (unsigned)report->frame_count, desc->fps);
    for (uint32_t i = 0; i < report->item_count; ++i) {
        const ssk_check_item *it = &report->items[i];
        printf("%-8s %s: %s\n", ssk_check_level_name(it->level), it->topic, it->message);
    }
    printf("summary: %u error(s), %u warning(s)\n", (unsigned)report->error_count,
           (unsigned)report->warning_count);
    int code = report->error_count || (strict && report->warning_count) ? EXIT_RUNTIME : 0;
    ssk_check_report_destroy(report);
    ssk_scene_destroy(scene);
    return finish_stdout(code);
}

/* check_one in a child process (issue #19): an importer crash (Assimp's
 * stack overflow on deep nesting, a segfault) is reported as that file's
 * error, and the other files are still checked. */
static int check_isolated(const char *path, const ssk_check_desc *desc, bool strict)
{
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) return check_one(path, desc, strict); /* no child: in this process */
    if (pid == 0) _exit(check_one(path, desc, strict));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return EXIT_RUNTIME;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    printf("file: %s\n", path);
    printf("%-8s import: the importer crashed (%s, signal %d) on this file; skipped\n",
           ssk_check_level_name(SSK_CHECK_ERROR), strsignal(sig), sig);
    printf("summary: 1 error(s), 0 warning(s)\n");
    print_error("%s: the importer crashed (%s)", path, strsignal(sig));
    return finish_stdout(EXIT_RUNTIME);
}

static int command_check(int argc, char **argv)
{
    const char *fps_text = NULL, *backend_text = NULL, *animation_text = NULL,
               *frames_text = NULL, *strict = OPTION_FLAG_UNSET;
    const option_spec specs[] = {{"fps", 0, &fps_text},
                                 {"animation", 0, &animation_text},
                                 {"frames", 0, &frames_text},
                                 {"backend", 0, &backend_text},
                                 {"strict", 0, &strict}};
    const char *files[CHECK_MAX_FILES];
    int file_count = 0;
    int r = parse_options_files("check", argc, argv, 2, specs, sizeof specs / sizeof specs[0],
                                files, &file_count, CHECK_MAX_FILES, print_check_help);
    if (r != PARSE_CONTINUE) return r;
    ssk_check_desc desc;
    ssk_check_desc_default(&desc);
    if (fps_text && !parse_fps(&desc.fps, fps_text))
        return usage_error("check", "bad number for --fps: '%s' (expected a number > 0)",
                           fps_text);
    long long value = 0;
    if (animation_text) {
        if (!parse_count(&value, animation_text, UINT32_MAX))
            return usage_error("check", "bad --animation: '%s' (expected an index >= 0)",
                               animation_text);
        desc.animation = (uint32_t)value;
    }
    if (frames_text) {
        if (!parse_count(&value, frames_text, 1000) || value == 0)
            return usage_error("check", "bad --frames: '%s' (expected 1..1000)", frames_text);
        desc.frame_count = (uint32_t)value;
    }
    ssk_error err = {0};
    if (backend_text && ssk_backend_parse(&desc.backend, backend_text, &err) != SSK_OK)
        return usage_error("check", "--backend: %s", err.message);
    /* each file in a child process, one report after another; the worst
     * status wins */
    int code = 0;
    for (int i = 0; i < file_count; ++i) {
        if (i) printf("\n");
        const int c = check_isolated(files[i], &desc, strict == OPTION_FLAG_SET);
        if (c > code) code = c;
    }
    return code;
}

/* ------------------------------------------------------------------------ */

/* SIGINT (Ctrl-C), SIGTERM (a farm's stop), SIGHUP and SIGXFSZ (the file
 * size limit) during a write: the temporary file goes (issue #19), then
 * the process dies of the signal as it would have, so the caller sees the
 * conventional status (128 + the signal number in a shell). */
static void on_fatal_signal(int sig)
{
    ssk_temp_files_remove();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_cleanup(void)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGXFSZ};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; ++i) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        struct sigaction old;
        /* a signal the parent ignores (nohup) stays ignored */
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(signals[i], &sa, NULL);
    }
}

int main(int argc, char **argv)
{
    install_signal_cleanup();
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
    if (strcmp(command, "preview") == 0) return command_preview(argc, argv);
    if (strcmp(command, "gpuinfo") == 0) return command_gpuinfo(argc, argv);
    if (strcmp(command, "bind") == 0) return command_bind(argc, argv);
    if (strcmp(command, "check") == 0) return command_check(argc, argv);
    if (strcmp(command, "merge") == 0) return command_merge(argc, argv);
    if (strcmp(command, "bake-many") == 0) return command_bake_many(argc, argv);
    if (command[0] == '-') return usage_error(NULL, "unknown option '%s'", command);
    return usage_error(NULL,
                       "unknown command '%s' (commands: info, check, bake, merge, bake-many, "
                       "preview, gpuinfo, bind)",
                       command);
}
