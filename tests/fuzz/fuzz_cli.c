/* fuzz_cli.c — libFuzzer target of the command line's option parsing
 * (cli/main.c, compiled with main renamed ssk_cli_main; issue #19): the
 * input is split at newlines into at most FUZZ_CLI_MAX_ARGS arguments after
 * the program name. Inputs holding '/' are skipped and the process works
 * in an empty directory of its own, so no argument names an existing file:
 * every command stops at its options or at opening its input, and nothing
 * is written; `gpuinfo` (a GL context, no options to speak of) and
 * `bake-many` (it execs Python) are skipped.
 * The CLI's output goes to /dev/null. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_CLI_MAX_ARGS 16

int ssk_cli_main(int argc, char **argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char dir[] = "/tmp/ssk-fuzz-cli-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memchr(data, '/', size) || memchr(data, '\0', size)) return 0;
    /* gpuinfo makes a GL context: the driver's work, not option parsing */
    if (size >= 7 && memcmp(data, "gpuinfo", 7) == 0) return 0;
    /* bake-many replaces the process with Python's Dask front (issue #23) */
    if (size >= 9 && memcmp(data, "bake-many", 9) == 0) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[FUZZ_CLI_MAX_ARGS + 2] = {"springskin"};
    int argc = 1;
    for (char *p = text; argc <= FUZZ_CLI_MAX_ARGS;) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    /* the CLI's output to /dev/null, the fuzzer's own reports untouched */
    fflush(stdout);
    fflush(stderr);
    const int out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
    if (out < 0 || err < 0 || null < 0) abort();
    dup2(null, 1);
    dup2(null, 2);
    (void)ssk_cli_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    close(null);
    free(text);
    return 0;
}
