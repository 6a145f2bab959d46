/*
 * graph_keys.c — keyed values of the deformer graph document (graph.c):
 * key lists [[frame, value], ...] of radial amounts ("keys") and of
 * surface-edit weights ("edits[i].keys"), and the radial amount at a frame
 * (docs/deformer-graph.md). The spring deformer evaluates the surface-edit
 * weights itself (kernels/spring.c).
 */
#include "graph/graph.h"

#include <json-c/json.h>

#include <stdlib.h>

ssk_status ssk_graph_parse_keys(json_object *v, const char *id, const char *field, bool weights,
                                float **keys, uint32_t *key_count, ssk_error *err)
{
    const char *value_name = weights ? "weight" : "value";
    if (!v || json_object_get_type(v) != json_type_array)
        return GRAPH_ERROR("node '%s': field '%s': expected an array of [frame, %s], got %s", id,
                           field, value_name, ssk_json_kind(v));
    size_t count = json_object_array_length(v);
    if (count > SSK_GRAPH_MAX_KEYS)
        return GRAPH_ERROR("node '%s': field '%s': %zu keys, more than the limit of %u "
                           "(SSK_GRAPH_MAX_KEYS)",
                           id, field, count, SSK_GRAPH_MAX_KEYS);
    *keys = malloc((count * 2 + 1) * sizeof **keys);
    if (!*keys)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing node '%s'", id);
    float *k = *keys;
    for (size_t i = 0; i < count; ++i) {
        json_object *key = json_object_array_get_idx(v, i);
        float frame, value;
        if (!key || json_object_get_type(key) != json_type_array ||
            json_object_array_length(key) != 2 ||
            !ssk_json_get_float(json_object_array_get_idx(key, 0), &frame) ||
            !ssk_json_get_float(json_object_array_get_idx(key, 1), &value) ||
            (weights && !(value >= 0.0f)))
            return GRAPH_ERROR("node '%s': field '%s': key %zu: expected [frame, %s], %s", id,
                               field, i, value_name,
                               weights ? "a finite frame and a finite weight >= 0, each "
                                         "at most SSK_MAX_MAGNITUDE (1e15) in magnitude"
                                       : "two finite numbers, each at most SSK_MAX_MAGNITUDE "
                                         "(1e15) in magnitude");
        if (i > 0 && !(frame > k[2 * (i - 1)]))
            return GRAPH_ERROR("node '%s': field '%s': key %zu: frame %g does not come after "
                               "the previous key's frame %g (frames must strictly increase)",
                               id, field, i, (double)frame, (double)k[2 * (i - 1)]);
        k[2 * i] = frame;
        k[2 * i + 1] = value;
    }
    *key_count = (uint32_t)count;
    return SSK_OK;
}

float ssk_graph_node_amount(const ssk_graph_node *node, double frame)
{
    if (!node) return 0.0f;
    if (node->key_count == 0 || !node->keys) return node->amount;
    const float *k = node->keys;
    uint32_t last = node->key_count - 1;
    if (!(frame > k[0])) return k[1]; /* before the first key (and NaN) */
    if (frame >= k[2 * last]) return k[2 * last + 1];
    uint32_t i = 0;
    while (i + 1 < last && frame >= k[2 * (i + 1)]) ++i;
    double f0 = k[2 * i], v0 = k[2 * i + 1], f1 = k[2 * i + 2], v1 = k[2 * i + 3];
    double u = (frame - f0) / (f1 - f0); /* f1 > f0: frames strictly increase */
    return (float)(v0 + u * (v1 - v0));
}
