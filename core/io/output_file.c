/* output_file.c - the temporary name and the directory sync shared by every
 * file the core writes (.pc2, .abc, binding files, preview PNGs).
 *
 * Stage io (core/io/, above model): the streamed writers (.pc2 in pc2.c,
 * the Ogawa container in ogawa.c and Alembic on it in abc.c) and this
 * helper. Nothing here deforms: the writers take finished positions.
 *
 * Each writer writes "<path>.tmp-<pid>" in the destination's directory,
 * flushes it, renames it onto `path` and then syncs the directory, so a
 * failure or a crash never leaves a truncated file under `path`. */
#include "model/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Decimal digits of a pid, sign and NUL, plus ".tmp-". */
#define SSK_TEMP_SUFFIX_SIZE 32
/* Longest temporary path tracked for ssk_temp_files_remove (longer ones
 * are written as usual, without the signal-time cleanup). */
#define SSK_TEMP_TRACKED_PATH_MAX 4096

/* The temporary files being written: a name is copied in before its slot
 * is marked used and the mark cleared before the slot is reused, so a
 * signal handler reading the slots sees whole names only. The one
 * process-wide table of io (besides the thread pool in model/parallel.c):
 * a signal handler has no other way to reach them. */
static char tracked[SSK_TEMP_FILES_TRACKED][SSK_TEMP_TRACKED_PATH_MAX];
static volatile sig_atomic_t tracked_used[SSK_TEMP_FILES_TRACKED];
static pthread_mutex_t tracked_lock = PTHREAD_MUTEX_INITIALIZER;

static void track(const char *tmp)
{
    if (strlen(tmp) >= SSK_TEMP_TRACKED_PATH_MAX) return;
    pthread_mutex_lock(&tracked_lock);
    for (uint32_t i = 0; i < SSK_TEMP_FILES_TRACKED; ++i)
        if (!tracked_used[i]) {
            strcpy(tracked[i], tmp);
            tracked_used[i] = 1;
            break;
        }
    pthread_mutex_unlock(&tracked_lock);
}

static void untrack(const char *tmp)
{
    pthread_mutex_lock(&tracked_lock);
    for (uint32_t i = 0; i < SSK_TEMP_FILES_TRACKED; ++i)
        if (tracked_used[i] && strcmp(tracked[i], tmp) == 0) {
            tracked_used[i] = 0;
            break;
        }
    pthread_mutex_unlock(&tracked_lock);
}

void ssk_temp_files_remove(void)
{
    /* async-signal-safe: unlink only, no lock (a name is complete whenever
     * its slot is marked used) */
    for (uint32_t i = 0; i < SSK_TEMP_FILES_TRACKED; ++i)
        if (tracked_used[i]) unlink(tracked[i]);
}

/* Removes "<path>.tmp-<pid>" files whose process no longer exists (a bake
 * killed with kill -9 or by a power cut); files of live processes, and of
 * pids this user may not signal, are left alone. */
static void remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? ssk_strdup(path) : ssk_strdup(".");
    if (!dir) return;
    if (slash) dir[slash == path ? 1 : (size_t)(slash - path)] = '\0';
    DIR *d = opendir(dir);
    if (d) {
        const size_t base_len = strlen(base);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, base, base_len) != 0 ||
                strncmp(e->d_name + base_len, ".tmp-", 5) != 0)
                continue;
            const char *digits = e->d_name + base_len + 5;
            char *end = NULL;
            errno = 0;
            const long pid = strtol(digits, &end, 10);
            if (errno || end == digits || *end || pid <= 0 || pid == (long)getpid()) continue;
            if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
            const size_t size = strlen(dir) + strlen(e->d_name) + 2;
            char *stale = malloc(size);
            if (!stale) break;
            snprintf(stale, size, "%s/%s", dir, e->d_name);
            unlink(stale);
            free(stale);
        }
        closedir(d);
    }
    free(dir);
}

char *ssk_temp_path(const char *path)
{
    const size_t size = strlen(path) + SSK_TEMP_SUFFIX_SIZE;
    char *tmp = malloc(size);
    if (!tmp) return NULL;
    snprintf(tmp, size, "%s.tmp-%ld", path, (long)getpid());
    remove_stale(path);
    track(tmp);
    return tmp;
}

bool ssk_path_has_extension(const char *path, const char *ext)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base || strlen(dot) != strlen(ext)) return false;
    for (size_t i = 0; dot[i]; ++i) {
        char c = dot[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != ext[i]) return false;
    }
    return true;
}

void ssk_temp_path_free(char *tmp)
{
    if (!tmp) return;
    untrack(tmp);
    free(tmp);
}

void ssk_sync_parent_directory(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) {
        dir = ssk_strdup(".");
    } else {
        size_t len = (size_t)(slash - path);
        if (len == 0) len = 1; /* "/file" -> "/" */
        dir = malloc(len + 1);
        if (dir) {
            memcpy(dir, path, len);
            dir[len] = '\0';
        }
    }
    if (!dir) return;
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}
