/*
 * shaders.c — shader sources: the copies embedded at build time
 * (cmake/embed_shaders.cmake generates ssk_embedded_shaders) or the files of
 * a directory (SSK_SHADER_DIR, for shader development), with one level of
 * `#include "x_lib.glsl"` lines expanded.
 *
 * An include is a line that is exactly `#include "<name>"` (a trailing
 * carriage return is ignored); the whole line, its newline included, is
 * replaced by the text of <name> from the same source (directory or
 * embedded table), followed by a newline when that text does not end with
 * one. Included files may not include further files.
 */
#include "backends/gl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INCLUDE_PREFIX "#include \""
/* Read granularity of shader files. */
#define READ_CHUNK 4096

/* A growing malloc'ed byte string. */
typedef struct text_buffer {
    char *data;
    size_t length, capacity;
} text_buffer;

static bool text_append(text_buffer *t, const char *bytes, size_t n)
{
    if (t->length + n + 1 > t->capacity) {
        size_t capacity = t->capacity ? t->capacity : READ_CHUNK;
        while (t->length + n + 1 > capacity) capacity *= 2;
        char *data = realloc(t->data, capacity);
        if (!data) return false;
        t->data = data;
        t->capacity = capacity;
    }
    memcpy(t->data + t->length, bytes, n);
    t->length += n;
    t->data[t->length] = '\0';
    return true;
}

/* Whole file `directory/name` as a NUL-terminated malloc'ed string. */
static ssk_status read_shader_file(char **out, const char *name, const char *directory,
                                   const char *requested_by, ssk_error *err)
{
    *out = NULL;
    const size_t dir_length = strlen(directory);
    const bool slash = dir_length > 0 && directory[dir_length - 1] != '/';
    const size_t path_size = dir_length + (slash ? 1 : 0) + strlen(name) + 1;
    char *path = malloc(path_size);
    if (!path) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    snprintf(path, path_size, "%s%s%s", directory, slash ? "/" : "", name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        const int e = errno;
        ssk_status st = requested_by
                            ? ssk_error_set(err, SSK_ERROR_IO,
                                            "shader '%s': cannot open included file '%s': %s",
                                            requested_by, path, strerror(e))
                            : ssk_error_set(err, SSK_ERROR_IO, "cannot open shader '%s': %s",
                                            path, strerror(e));
        free(path);
        return st;
    }
    text_buffer t = {0};
    char chunk[READ_CHUNK];
    size_t n;
    bool ok = text_append(&t, "", 0);
    while (ok && (n = fread(chunk, 1, sizeof chunk, f)) > 0) ok = text_append(&t, chunk, n);
    const bool read_error = ferror(f) != 0;
    fclose(f);
    if (!ok) {
        free(t.data);
        free(path);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory reading shader '%s'",
                             name);
    }
    if (read_error) {
        free(t.data);
        ssk_status st = ssk_error_set(err, SSK_ERROR_IO, "cannot read shader '%s'", path);
        free(path);
        return st;
    }
    free(path);
    *out = t.data;
    return SSK_OK;
}

/* The embedded text of `name`, or NULL. */
static const char *embedded_source(const char *name)
{
    for (size_t i = 0; i < ssk_embedded_shader_count; ++i)
        if (strcmp(ssk_embedded_shaders[i].name, name) == 0) return ssk_embedded_shaders[i].source;
    return NULL;
}

/* The text of `name` from the directory or the embedded table, malloc'ed. */
static ssk_status load_source(char **out, const char *name, const char *directory,
                              const char *requested_by, ssk_error *err)
{
    if (directory) return read_shader_file(out, name, directory, requested_by, err);
    *out = NULL;
    const char *text = embedded_source(name);
    if (!text) {
        if (requested_by)
            return ssk_error_set(err, SSK_ERROR_IO,
                                 "shader '%s': included file '%s' is not an embedded shader",
                                 requested_by, name);
        return ssk_error_set(err, SSK_ERROR_IO, "no embedded shader named '%s' (%zu embedded)",
                             name, ssk_embedded_shader_count);
    }
    *out = ssk_strdup(text);
    if (!*out) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    return SSK_OK;
}

/* When line [line, line + length) (no newline) is an include line, returns
 * true with the included name in [*name, *name + *name_length). */
static bool parse_include(const char *line, size_t length, const char **name,
                          size_t *name_length)
{
    const size_t prefix = sizeof INCLUDE_PREFIX - 1;
    if (length > 0 && line[length - 1] == '\r') --length;
    if (length < prefix + 2 || memcmp(line, INCLUDE_PREFIX, prefix) != 0 ||
        line[length - 1] != '"')
        return false;
    *name = line + prefix;
    *name_length = length - prefix - 1;
    return memchr(*name, '"', *name_length) == NULL;
}

/* The first include line of `text`, or NULL. */
static const char *find_include(const char *text, const char **name, size_t *name_length)
{
    for (const char *line = text; *line;) {
        const char *newline = strchr(line, '\n');
        const size_t length = newline ? (size_t)(newline - line) : strlen(line);
        if (parse_include(line, length, name, name_length)) return line;
        if (!newline) break;
        line = newline + 1;
    }
    return NULL;
}

ssk_status ssk_shader_source(char **out_text, const char *name, const char *directory,
                             ssk_error *err)
{
    if (out_text) *out_text = NULL;
    if (!out_text || !name)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_shader_source: NULL argument");
    char *main_text = NULL;
    ssk_status st = load_source(&main_text, name, directory, NULL, err);
    if (st != SSK_OK) return st;

    text_buffer out = {0};
    bool ok = text_append(&out, "", 0);
    const char *line = main_text;
    while (ok && st == SSK_OK && *line) {
        const char *newline = strchr(line, '\n');
        const size_t length = newline ? (size_t)(newline - line) : strlen(line);
        const size_t with_newline = length + (newline ? 1 : 0);
        const char *include_name;
        size_t include_length;
        if (!parse_include(line, length, &include_name, &include_length)) {
            ok = text_append(&out, line, with_newline);
        } else {
            char *included_name = malloc(include_length + 1);
            char *included = NULL;
            if (!included_name) {
                ok = false;
                break;
            }
            memcpy(included_name, include_name, include_length);
            included_name[include_length] = '\0';
            st = load_source(&included, included_name, directory, name, err);
            const char *nested_name;
            size_t nested_length;
            if (st == SSK_OK && find_include(included, &nested_name, &nested_length)) {
                st = ssk_error_set(err, SSK_ERROR_IO,
                                   "shader '%s': included file '%s' includes '%.*s' (only one "
                                   "level of #include is supported)",
                                   name, included_name, (int)nested_length, nested_name);
            }
            if (st == SSK_OK) {
                const size_t n = strlen(included);
                ok = text_append(&out, included, n);
                if (ok && (n == 0 || included[n - 1] != '\n')) ok = text_append(&out, "\n", 1);
            }
            free(included);
            free(included_name);
        }
        line += with_newline;
    }
    free(main_text);
    if (st != SSK_OK || !ok) {
        free(out.data);
        return st != SSK_OK ? st
                            : ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                                            "out of memory expanding shader '%s'", name);
    }
    *out_text = out.data;
    return ssk_error_ok(err);
}
