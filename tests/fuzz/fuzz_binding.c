/* fuzz_binding.c — libFuzzer target of the binding file loader
 * (ssk_binding_load, core/bind/binding_io.c; issue #19): any bytes as a
 * binding file, loaded for a small rig and for no rig; a loaded binding is
 * saved and loaded again. The file lives in a directory made once per
 * process. */
#include "fuzz_rig.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[256], again_path[256];

static void paths(void)
{
    if (path[0]) return;
    char dir[] = "/tmp/ssk-fuzz-binding-XXXXXX";
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/input.bind", dir);
    snprintf(again_path, sizeof again_path, "%s/again.bind", dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ssk_rig *rig = fuzz_rig();
    paths();
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    for (int with_rig = 0; with_rig < 2; ++with_rig) {
        ssk_binding *b = NULL;
        ssk_error err = {0};
        if (ssk_binding_load(&b, path, with_rig ? rig : NULL, &err) != SSK_OK) continue;
        ssk_binding *again = NULL;
        if (ssk_binding_save(b, again_path, &err) != SSK_OK ||
            ssk_binding_load(&again, again_path, NULL, &err) != SSK_OK)
            abort();
        ssk_binding_destroy(again);
        ssk_binding_destroy(b);
    }
    return 0;
}
