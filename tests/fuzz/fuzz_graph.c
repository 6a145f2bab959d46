/* fuzz_graph.c — libFuzzer target of the deformer graph parser
 * (ssk_graph_parse, core/graph/graph.c; issue #19): any bytes, as a
 * NUL-terminated document, against a small rig; a parsed graph is written
 * back to JSON and parsed again (the canonical form must parse). */
#include "fuzz_rig.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ssk_rig *rig = fuzz_rig();
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    ssk_graph *g = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&g, text, rig, &err) == SSK_OK) {
        char *json = ssk_graph_to_json(g);
        ssk_graph *again = NULL;
        if (!json || ssk_graph_parse(&again, json, rig, &err) != SSK_OK) abort();
        ssk_graph_destroy(again);
        free(json);
        ssk_graph_destroy(g);
    }
    free(text);
    return 0;
}
