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

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Decimal digits of a pid, sign and NUL, plus ".tmp-". */
#define SSK_TEMP_SUFFIX_SIZE 32

char *ssk_temp_path(const char *path)
{
    const size_t size = strlen(path) + SSK_TEMP_SUFFIX_SIZE;
    char *tmp = malloc(size);
    if (tmp) snprintf(tmp, size, "%s.tmp-%ld", path, (long)getpid());
    return tmp;
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
