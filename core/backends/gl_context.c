/*
 * gl_context.c — the headless OpenGL 4.3 context of the GL backend: EGL
 * platform selection, a thread that owns the context and runs every GL job,
 * and the cache of compiled programs.
 *
 * Platform order (first that gives a GL 4.3 core context wins):
 *   1. the EGL device platform with a hardware device (not
 *      EGL_MESA_device_software),
 *   2. the EGL surfaceless platform (Mesa; llvmpipe without a GPU),
 *   3. any EGL device.
 * The context is made current only on its own thread, with no surface
 * (EGL_KHR_surfaceless_context), so a host's current context on another
 * thread (Blender's GLX context) is never touched.
 */
#include "backends/gl.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SSK_GL_REQUIRED_MAJOR 4
#define SSK_GL_REQUIRED_MINOR 3
#define SSK_MAX_EGL_DEVICES 16
#define SSK_SHADER_DIR_ENV "SSK_SHADER_DIR"
#define SSK_GL_SPIN_ENV "SSK_GL_SPIN_US"
#define SSK_GL_HANDOFF_SPIN_NS 50000L      /* spin_until: a handoff's spin before blocking */
#define SSK_GL_HANDOFF_SPIN_MIN_CORES 4L   /* ... only with this many cores online */

typedef struct program_entry {
    char *key;
    GLuint program;
} program_entry;

struct ssk_gl_context {
    pthread_t thread;
    pthread_mutex_t mutex;        /* guards the job slot below */
    pthread_cond_t cond;
    pthread_mutex_t submit_mutex; /* serializes submitting threads */
    ssk_gl_job_fn job;
    void *job_user;
    bool job_pending, job_done, quit, started;
    long spin_ns; /* a handoff's wait spins this long before it blocks (spin_until) */

    EGLDisplay display;
    EGLContext context;
    bool terminate_display; /* only with EGL_KHR_display_reference */
    ssk_gl_info info;
    char *shader_dir;

    program_entry *programs;
    size_t program_count, program_capacity;

    ssk_status create_status; /* written by the thread before it signals */
    ssk_error create_err;
};

/* --- EGL ---------------------------------------------------------------- */

static bool has_extension(const char *list, const char *name)
{
    if (!list) return false;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

static void append(char *dst, size_t size, const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(dst);
    if (len < size) snprintf(dst + len, size - len, fmt, a, b);
}

static const char *egl_error_name(EGLint e)
{
    switch (e) {
    case EGL_SUCCESS: return "EGL_SUCCESS";
    case EGL_NOT_INITIALIZED: return "EGL_NOT_INITIALIZED";
    case EGL_BAD_ACCESS: return "EGL_BAD_ACCESS";
    case EGL_BAD_ALLOC: return "EGL_BAD_ALLOC";
    case EGL_BAD_ATTRIBUTE: return "EGL_BAD_ATTRIBUTE";
    case EGL_BAD_CONFIG: return "EGL_BAD_CONFIG";
    case EGL_BAD_CONTEXT: return "EGL_BAD_CONTEXT";
    case EGL_BAD_DISPLAY: return "EGL_BAD_DISPLAY";
    case EGL_BAD_MATCH: return "EGL_BAD_MATCH";
    case EGL_BAD_PARAMETER: return "EGL_BAD_PARAMETER";
    default: return "EGL error";
    }
}

/* Tries to get a GL 4.3 core context on `display` and make it current; on
 * failure writes why to `why`. An eglInitialize without reference tracking
 * is not undone: EGL displays are per process and may be shared with the
 * host, whose contexts eglTerminate would break. */
static bool try_display(ssk_gl_context *ctx, EGLDisplay display, bool tracked, char *why,
                        size_t why_size)
{
    EGLint major = 0, minor = 0;
    if (display == EGL_NO_DISPLAY) {
        snprintf(why, why_size, "no display");
        return false;
    }
    if (!eglInitialize(display, &major, &minor)) {
        snprintf(why, why_size, "eglInitialize failed (%s)", egl_error_name(eglGetError()));
        return false;
    }
    const char *exts = eglQueryString(display, EGL_EXTENSIONS);
    if (!has_extension(exts, "EGL_KHR_surfaceless_context")) {
        snprintf(why, why_size, "no EGL_KHR_surfaceless_context");
        if (tracked) eglTerminate(display);
        return false;
    }
    if (!eglBindAPI(EGL_OPENGL_API)) {
        snprintf(why, why_size, "eglBindAPI(EGL_OPENGL_API) failed (%s)",
                 egl_error_name(eglGetError()));
        if (tracked) eglTerminate(display);
        return false;
    }
    EGLConfig config = (EGLConfig)0; /* EGL_NO_CONFIG_KHR */
    if (!has_extension(exts, "EGL_KHR_no_config_context")) {
        const EGLint config_attribs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
        EGLint count = 0;
        if (!eglChooseConfig(display, config_attribs, &config, 1, &count) || count < 1) {
            snprintf(why, why_size, "no EGL config for desktop OpenGL");
            if (tracked) eglTerminate(display);
            return false;
        }
    }
    const EGLint context_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, SSK_GL_REQUIRED_MAJOR,
                                      EGL_CONTEXT_MINOR_VERSION, SSK_GL_REQUIRED_MINOR,
                                      EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                      EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
    EGLContext context = eglCreateContext(display, config, EGL_NO_CONTEXT, context_attribs);
    if (context == EGL_NO_CONTEXT) {
        snprintf(why, why_size, "no OpenGL %d.%d core context (%s)", SSK_GL_REQUIRED_MAJOR,
                 SSK_GL_REQUIRED_MINOR, egl_error_name(eglGetError()));
        if (tracked) eglTerminate(display);
        return false;
    }
    if (!eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context)) {
        snprintf(why, why_size, "eglMakeCurrent failed (%s)", egl_error_name(eglGetError()));
        eglDestroyContext(display, context);
        if (tracked) eglTerminate(display);
        return false;
    }
    ctx->display = display;
    ctx->context = context;
    ctx->terminate_display = tracked;
    return true;
}

static bool device_is_software(PFNEGLQUERYDEVICESTRINGEXTPROC query_string, EGLDeviceEXT dev)
{
    const char *exts = query_string ? query_string(dev, EGL_EXTENSIONS) : NULL;
    return has_extension(exts, "EGL_MESA_device_software");
}

/* Loads GL entry points (GLEW) and checks the version and compute support. */
static bool load_gl(char *why, size_t why_size)
{
    glewExperimental = GL_TRUE;
    GLenum r = glewInit();
    /* Under EGL, GLEW 2.x reports that it found no GLX display after
     * loading every core entry point; that is expected. */
    if (r != GLEW_OK && r != GLEW_ERROR_NO_GLX_DISPLAY) {
        snprintf(why, why_size, "glewInit failed: %s", (const char *)glewGetErrorString(r));
        return false;
    }
    glGetError(); /* GLEW may leave GL_INVALID_ENUM from glGetString */
    GLint major = 0, minor = 0;
    glGetIntegerv(GL_MAJOR_VERSION, &major);
    glGetIntegerv(GL_MINOR_VERSION, &minor);
    if (major * 10 + minor < SSK_GL_REQUIRED_MAJOR * 10 + SSK_GL_REQUIRED_MINOR) {
        snprintf(why, why_size, "OpenGL %d.%d, need %d.%d", major, minor,
                 SSK_GL_REQUIRED_MAJOR, SSK_GL_REQUIRED_MINOR);
        return false;
    }
    if (!glDispatchCompute || !glBindBufferBase || !glMemoryBarrier || !glGetBufferSubData ||
        !glMapBufferRange || !glBufferSubData || !glCreateShader || !glGetIntegeri_v ||
        !glGetInteger64v || !glGenFramebuffers) {
        snprintf(why, why_size, "OpenGL entry points missing after glewInit");
        return false;
    }
    return true;
}

static bool renderer_is_software(const char *renderer)
{
    static const char *const software[] = {"llvmpipe", "softpipe", "SwiftShader",
                                           "Software Rasterizer", "swrast"};
    for (size_t i = 0; i < sizeof software / sizeof software[0]; ++i)
        if (strstr(renderer, software[i])) return true;
    return false;
}

static void fill_info(ssk_gl_info *info)
{
    const char *s;
#define COPY_GL_STRING(field, e)                                                  \
    s = (const char *)glGetString(e);                                             \
    snprintf(info->field, sizeof info->field, "%s", s ? s : "(unknown)");
    COPY_GL_STRING(vendor, GL_VENDOR)
    COPY_GL_STRING(renderer, GL_RENDERER)
    COPY_GL_STRING(version, GL_VERSION)
    COPY_GL_STRING(glsl_version, GL_SHADING_LANGUAGE_VERSION)
#undef COPY_GL_STRING
    for (GLuint i = 0; i < 3; ++i) {
        glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_COUNT, i, &info->max_work_group_count[i]);
        glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_SIZE, i, &info->max_work_group_size[i]);
    }
    glGetIntegerv(GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS, &info->max_work_group_invocations);
    glGetIntegerv(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE, &info->max_shared_memory_bytes);
    GLint64 ssbo = 0;
    glGetInteger64v(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &ssbo);
    info->max_ssbo_bytes = (long long)ssbo;
    info->hardware = !renderer_is_software(info->renderer);
    /* GL_KHR_shader_subgroup (the hardware spring kernels' sums use its
     * arithmetic where the driver offers it) */
    GLint extensions = 0;
    glGetIntegerv(GL_NUM_EXTENSIONS, &extensions);
    for (GLint i = 0; i < extensions; ++i) {
        const char *name = (const char *)glGetStringi(GL_EXTENSIONS, (GLuint)i);
        if (!name || strcmp(name, "GL_KHR_shader_subgroup") != 0) continue;
        GLint size = 0, features = 0;
        glGetIntegerv(GL_SUBGROUP_SIZE_KHR, &size);
        glGetIntegerv(GL_SUBGROUP_SUPPORTED_FEATURES_KHR, &features);
        info->subgroup_size = size;
        info->subgroup_arithmetic = (features & GL_SUBGROUP_FEATURE_ARITHMETIC_BIT_KHR) != 0;
    }
    glGetError();
}

/* try_display, then the GL entry points; undoes the context on failure. */
static bool try_platform(ssk_gl_context *ctx, EGLDisplay display, bool tracked, char *why,
                         size_t why_size)
{
    if (!try_display(ctx, display, tracked, why, why_size)) return false;
    if (load_gl(why, why_size)) return true;
    eglMakeCurrent(ctx->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(ctx->display, ctx->context);
    if (ctx->terminate_display) eglTerminate(ctx->display);
    ctx->context = EGL_NO_CONTEXT;
    ctx->display = EGL_NO_DISPLAY;
    return false;
}

/* Runs on the context thread: picks a platform and makes the context
 * current. Fills ctx->create_status / create_err. */
static void create_on_thread(ssk_gl_context *ctx)
{
    char tried[SSK_ERROR_MESSAGE_SIZE] = "";
    char why[160];
    const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    if (!client) {
        ssk_error_set(&ctx->create_err, SSK_ERROR_GL_UNAVAILABLE,
                      "no EGL client extensions (is libEGL with a vendor library installed?)");
        ctx->create_status = SSK_ERROR_GL_UNAVAILABLE;
        return;
    }
    PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform_display =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    PFNEGLQUERYDEVICESEXTPROC query_devices =
        (PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
    PFNEGLQUERYDEVICESTRINGEXTPROC query_device_string =
        (PFNEGLQUERYDEVICESTRINGEXTPROC)eglGetProcAddress("eglQueryDeviceStringEXT");
    const bool tracked = has_extension(client, "EGL_KHR_display_reference");
    const EGLint display_attribs[] = {EGL_TRACK_REFERENCES_KHR, EGL_TRUE, EGL_NONE};
    const EGLint *attribs = tracked ? display_attribs : NULL;

    EGLDeviceEXT devices[SSK_MAX_EGL_DEVICES];
    EGLint device_count = 0;
    const bool can_devices = get_platform_display && query_devices &&
                             has_extension(client, "EGL_EXT_platform_device");
    if (can_devices && !query_devices(SSK_MAX_EGL_DEVICES, devices, &device_count))
        device_count = 0;

    bool ok = false;
    int chosen_device = -1;
    /* 1. hardware devices */
    for (EGLint i = 0; !ok && i < device_count; ++i) {
        if (device_is_software(query_device_string, devices[i])) continue;
        EGLDisplay d = get_platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], attribs);
        ok = try_platform(ctx, d, tracked, why, sizeof why);
        if (ok) {
            snprintf(ctx->info.platform, sizeof ctx->info.platform, "device (hardware)");
            chosen_device = i;
        } else {
            append(tried, sizeof tried, "%s%s; ", "hardware EGL device: ", why);
        }
    }
    if (!can_devices) append(tried, sizeof tried, "%s%s; ", "EGL device platform: ", "unsupported");
    else if (device_count == 0) append(tried, sizeof tried, "%s%s; ", "EGL device platform: ", "no devices");
    /* 2. surfaceless */
    if (!ok) {
        if (get_platform_display && has_extension(client, "EGL_MESA_platform_surfaceless")) {
            EGLDisplay d = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY,
                                                attribs);
            ok = try_platform(ctx, d, tracked, why, sizeof why);
            if (ok)
                snprintf(ctx->info.platform, sizeof ctx->info.platform, "surfaceless");
            else
                append(tried, sizeof tried, "%s%s; ", "surfaceless platform: ", why);
        } else {
            append(tried, sizeof tried, "%s%s; ", "surfaceless platform: ", "unsupported");
        }
    }
    /* 3. any device, software included */
    for (EGLint i = 0; !ok && i < device_count; ++i) {
        if (!device_is_software(query_device_string, devices[i])) continue; /* tried above */
        EGLDisplay d = get_platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], attribs);
        ok = try_platform(ctx, d, tracked, why, sizeof why);
        if (ok) {
            snprintf(ctx->info.platform, sizeof ctx->info.platform, "device");
            chosen_device = i;
        } else {
            append(tried, sizeof tried, "%s%s; ", "software EGL device: ", why);
        }
    }
    if (!ok) {
        size_t len = strlen(tried);
        if (len >= 2 && tried[len - 2] == ';') tried[len - 2] = '\0';
        ctx->create_status = ssk_error_set(&ctx->create_err, SSK_ERROR_GL_UNAVAILABLE,
                                           "no OpenGL %d.%d context: %s", SSK_GL_REQUIRED_MAJOR,
                                           SSK_GL_REQUIRED_MINOR, tried);
        return;
    }
    if (chosen_device >= 0 && query_device_string) {
        const char *node = has_extension(query_device_string(devices[chosen_device], EGL_EXTENSIONS),
                                         "EGL_EXT_device_drm")
                               ? query_device_string(devices[chosen_device], EGL_DRM_DEVICE_FILE_EXT)
                               : NULL;
        snprintf(ctx->info.device, sizeof ctx->info.device, "%s", node ? node : "EGL device");
    } else {
        snprintf(ctx->info.device, sizeof ctx->info.device, "%s", "default");
    }
    fill_info(&ctx->info);
    ctx->create_status = ssk_error_ok(&ctx->create_err);
}

static void release_on_thread(ssk_gl_context *ctx)
{
    for (size_t i = 0; i < ctx->program_count; ++i) {
        glDeleteProgram(ctx->programs[i].program);
        free(ctx->programs[i].key);
    }
    ctx->program_count = 0;
    eglMakeCurrent(ctx->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(ctx->display, ctx->context);
    eglReleaseThread();
    /* Without reference tracking a display is shared by everything in the
     * process (a host's contexts included), so it is left initialized. */
    if (ctx->terminate_display) eglTerminate(ctx->display);
}

/* A job's handoff (ssk_gl_context_run) wakes a blocked thread twice: the
 * GL thread for the job and the caller for its end. So on a hardware GPU
 * with cores to spare both sides first spin on the flag for
 * SSK_GL_HANDOFF_SPIN_NS (the GL thread after each job, the caller after
 * its submission), then block as before: a bounded wait, not OpenMP-like
 * spinning between frames, so a host such as Blender keeps its cores. On
 * an H200 machine (16 cores) an LBS frame of 960 vertices took 0.043 ms
 * against 0.074 ms blocking (3 handoffs: frame upload, step, read-back),
 * and 100k vertices 0.163 against 0.205 ms (bench_skinning --backends gl,
 * one run). On llvmpipe the spinning thread would take a core from the
 * renderer's own threads, so there it does not spin. SSK_GL_SPIN_US sets
 * the spin in microseconds (0: never), for measuring. */
static void spin_until(const bool *flag, long spin_ns)
{
    if (spin_ns <= 0) return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 1;; ++i) {
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE)) return;
        if ((i & 63u) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > spin_ns) return;
        }
    }
}

static void *thread_main(void *arg)
{
    ssk_gl_context *ctx = arg;
    create_on_thread(ctx);
    const char *spin = getenv(SSK_GL_SPIN_ENV);
    if (spin && *spin)
        ctx->spin_ns = 1000L * strtol(spin, NULL, 10);
    else if (ctx->info.hardware && sysconf(_SC_NPROCESSORS_ONLN) >= SSK_GL_HANDOFF_SPIN_MIN_CORES)
        ctx->spin_ns = SSK_GL_HANDOFF_SPIN_NS;
    pthread_mutex_lock(&ctx->mutex);
    ctx->started = true;
    pthread_cond_broadcast(&ctx->cond);
    bool failed = ctx->create_status != SSK_OK;
    pthread_mutex_unlock(&ctx->mutex);
    if (failed) {
        eglReleaseThread();
        return NULL;
    }
    for (;;) {
        spin_until(&ctx->job_pending, ctx->spin_ns);
        pthread_mutex_lock(&ctx->mutex);
        while (!ctx->job_pending && !ctx->quit) pthread_cond_wait(&ctx->cond, &ctx->mutex);
        if (ctx->job_pending) {
            ssk_gl_job_fn fn = ctx->job;
            void *user = ctx->job_user;
            pthread_mutex_unlock(&ctx->mutex);
            fn(user);
            pthread_mutex_lock(&ctx->mutex);
            __atomic_store_n(&ctx->job_pending, false, __ATOMIC_RELEASE);
            __atomic_store_n(&ctx->job_done, true, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&ctx->cond);
            pthread_mutex_unlock(&ctx->mutex);
            continue;
        }
        pthread_mutex_unlock(&ctx->mutex);
        break; /* quit */
    }
    release_on_thread(ctx);
    return NULL;
}

/* --- public -------------------------------------------------------------- */

static void context_free(ssk_gl_context *ctx)
{
    pthread_mutex_destroy(&ctx->mutex);
    pthread_mutex_destroy(&ctx->submit_mutex);
    pthread_cond_destroy(&ctx->cond);
    free(ctx->programs);
    free(ctx->shader_dir);
    free(ctx);
}

ssk_status ssk_gl_context_create(ssk_gl_context **out, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_gl_context_create: NULL out");
    ssk_gl_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    ctx->display = EGL_NO_DISPLAY;
    ctx->context = EGL_NO_CONTEXT;
    pthread_mutex_init(&ctx->mutex, NULL);
    pthread_mutex_init(&ctx->submit_mutex, NULL);
    pthread_cond_init(&ctx->cond, NULL);
    const char *dir = getenv(SSK_SHADER_DIR_ENV);
    if (dir && *dir && !(ctx->shader_dir = ssk_strdup(dir))) {
        context_free(ctx);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    if (pthread_create(&ctx->thread, NULL, thread_main, ctx) != 0) {
        context_free(ctx);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "cannot start the GL thread");
    }
    pthread_mutex_lock(&ctx->mutex);
    while (!ctx->started) pthread_cond_wait(&ctx->cond, &ctx->mutex);
    pthread_mutex_unlock(&ctx->mutex);
    if (ctx->create_status != SSK_OK) {
        pthread_join(ctx->thread, NULL);
        ssk_status st = ctx->create_status;
        if (err) *err = ctx->create_err;
        context_free(ctx);
        return st;
    }
    *out = ctx;
    return ssk_error_ok(err);
}

void ssk_gl_context_destroy(ssk_gl_context *ctx)
{
    if (!ctx) return;
    pthread_mutex_lock(&ctx->submit_mutex);
    pthread_mutex_lock(&ctx->mutex);
    ctx->quit = true;
    pthread_cond_broadcast(&ctx->cond);
    pthread_mutex_unlock(&ctx->mutex);
    pthread_join(ctx->thread, NULL);
    pthread_mutex_unlock(&ctx->submit_mutex);
    context_free(ctx);
}

ssk_status ssk_gl_context_info(const ssk_gl_context *ctx, ssk_gl_info *out, ssk_error *err)
{
    if (!ctx || !out)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_gl_context_info: NULL argument");
    *out = ctx->info;
    return ssk_error_ok(err);
}

const ssk_gl_info *ssk_gl_context_info_ref(const ssk_gl_context *ctx) { return &ctx->info; }

void ssk_gl_context_run(ssk_gl_context *ctx, ssk_gl_job_fn fn, void *user)
{
    if (pthread_equal(pthread_self(), ctx->thread)) { /* already on the GL thread */
        fn(user);
        return;
    }
    pthread_mutex_lock(&ctx->submit_mutex);
    pthread_mutex_lock(&ctx->mutex);
    ctx->job = fn;
    ctx->job_user = user;
    __atomic_store_n(&ctx->job_done, false, __ATOMIC_RELEASE);
    __atomic_store_n(&ctx->job_pending, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&ctx->cond);
    if (ctx->spin_ns > 0) {
        pthread_mutex_unlock(&ctx->mutex);
        spin_until(&ctx->job_done, ctx->spin_ns);
        pthread_mutex_lock(&ctx->mutex);
    }
    while (!ctx->job_done) pthread_cond_wait(&ctx->cond, &ctx->mutex);
    pthread_mutex_unlock(&ctx->mutex);
    pthread_mutex_unlock(&ctx->submit_mutex);
}

/* --- programs (GL thread) ------------------------------------------------ */

ssk_status ssk_gl_check(const char *what, ssk_error *err)
{
    GLenum first = glGetError(), e = first;
    while (e != GL_NO_ERROR) e = glGetError(); /* drain */
    if (first == GL_NO_ERROR) return SSK_OK;
    if (first == GL_OUT_OF_MEMORY)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "%s: GL_OUT_OF_MEMORY", what);
    return ssk_error_set(err, SSK_ERROR_GL, "%s: OpenGL error 0x%04x", what, (unsigned)first);
}

static ssk_status compile_shader(ssk_gl_context *ctx, GLenum type, const char *name,
                                 GLuint *out, ssk_error *err)
{
    char *text = NULL;
    ssk_status st = ssk_shader_source(&text, name, ctx->shader_dir, err);
    if (st != SSK_OK) return st;
    GLuint shader = glCreateShader(type);
    const GLchar *src = text;
    glShaderSource(shader, 1, &src, NULL);
    glCompileShader(shader);
    free(text);
    GLint ok = GL_FALSE;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[SSK_ERROR_MESSAGE_SIZE - 64] = "";
        glGetShaderInfoLog(shader, sizeof log, NULL, log);
        glDeleteShader(shader);
        return ssk_error_set(err, SSK_ERROR_GL_SHADER, "shader '%s' failed to compile: %s", name,
                             log);
    }
    *out = shader;
    return SSK_OK;
}

static ssk_status link_program(const char *key, const GLuint *shaders, int count, GLuint *out,
                               ssk_error *err)
{
    GLuint program = glCreateProgram();
    for (int i = 0; i < count; ++i) glAttachShader(program, shaders[i]);
    glLinkProgram(program);
    for (int i = 0; i < count; ++i) {
        glDetachShader(program, shaders[i]);
        glDeleteShader(shaders[i]);
    }
    GLint ok = GL_FALSE;
    glGetProgramiv(program, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[SSK_ERROR_MESSAGE_SIZE - 64] = "";
        glGetProgramInfoLog(program, sizeof log, NULL, log);
        glDeleteProgram(program);
        return ssk_error_set(err, SSK_ERROR_GL_SHADER, "program '%s' failed to link: %s", key,
                             log);
    }
    *out = program;
    return SSK_OK;
}

static bool cache_find(ssk_gl_context *ctx, const char *key, GLuint *out)
{
    for (size_t i = 0; i < ctx->program_count; ++i)
        if (strcmp(ctx->programs[i].key, key) == 0) {
            *out = ctx->programs[i].program;
            return true;
        }
    return false;
}

static ssk_status cache_add(ssk_gl_context *ctx, const char *key, GLuint program, ssk_error *err)
{
    if (ctx->program_count == ctx->program_capacity) {
        size_t cap = ctx->program_capacity ? 2 * ctx->program_capacity : 8;
        program_entry *p = realloc(ctx->programs, cap * sizeof *p);
        if (!p) {
            glDeleteProgram(program);
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        }
        ctx->programs = p;
        ctx->program_capacity = cap;
    }
    char *k = ssk_strdup(key);
    if (!k) {
        glDeleteProgram(program);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    ctx->programs[ctx->program_count].key = k;
    ctx->programs[ctx->program_count++].program = program;
    return SSK_OK;
}

ssk_status ssk_gl_compute_program(ssk_gl_context *ctx, const char *name, GLuint *out_program,
                                  ssk_error *err)
{
    if (cache_find(ctx, name, out_program)) return SSK_OK;
    GLuint shader = 0, program = 0;
    ssk_status st = compile_shader(ctx, GL_COMPUTE_SHADER, name, &shader, err);
    if (st != SSK_OK) return st;
    st = link_program(name, &shader, 1, &program, err);
    if (st != SSK_OK) return st;
    st = cache_add(ctx, name, program, err);
    if (st == SSK_OK) *out_program = program;
    return st;
}

ssk_status ssk_gl_graphics_program(ssk_gl_context *ctx, const char *vertex_name,
                                   const char *fragment_name, GLuint *out_program, ssk_error *err)
{
    char key[256];
    snprintf(key, sizeof key, "%s|%s", vertex_name, fragment_name);
    if (cache_find(ctx, key, out_program)) return SSK_OK;
    GLuint shaders[2] = {0, 0}, program = 0;
    ssk_status st = compile_shader(ctx, GL_VERTEX_SHADER, vertex_name, &shaders[0], err);
    if (st != SSK_OK) return st;
    st = compile_shader(ctx, GL_FRAGMENT_SHADER, fragment_name, &shaders[1], err);
    if (st != SSK_OK) {
        glDeleteShader(shaders[0]);
        return st;
    }
    st = link_program(key, shaders, 2, &program, err);
    if (st != SSK_OK) return st;
    st = cache_add(ctx, key, program, err);
    if (st == SSK_OK) *out_program = program;
    return st;
}
