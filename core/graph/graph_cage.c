/*
 * graph_cage.c — the deformer graph's cage node (coupled cages and
 * skeletons, Corda et al. 2020, 003_3bdce6713f645d88.txt, sections 3-4;
 * issue #21): its fields, parsed, checked, copied and written (graph.h).
 *
 * A cage node holds a closed triangle cage around the rig at rest and an
 * edited copy of it (the same topology), inline, in rig space: "vertices"
 * ([x, y, z] per cage vertex), "triangles" ([a, b, c] per triangle, the
 * rest cage's orientation) and "edited" (as many [x, y, z] as
 * "vertices"). It has no edges: it reshapes the rig every other node of
 * the graph runs on (the rest mesh by Eq. 7, the joints by Eq. 13, the
 * centers of rotation by Eq. 14; deformer.c), so it comes before every
 * skinning and ARAP node in the document (graph.c checks the order).
 */
#include "graph/graph.h"
#include "bind/cage.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The prefix of ssk_cage_check's messages, left out of the node's. */
#define CAGE_CHECK_PREFIX "ssk_cage_mvc: "

static const char *const fields[] = {"vertices", "triangles", "edited"};

bool ssk_graph_cage_field(const char *field)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i)
        if (strcmp(field, fields[i]) == 0) return true;
    return false;
}

/* The array of triples `field` of node `id`: *count entries (expected: the
 * count it must have, or 0 for any), each three finite floats (integers
 * in [0, bound) when `indices`). The values go to *out (malloc'ed, the
 * caller's also on failure). */
static ssk_status parse_triples(json_object *obj, const char *id, const char *field,
                                uint32_t expected, bool indices, uint32_t bound, void **out,
                                uint32_t *count, ssk_error *err)
{
    json_object *v = NULL;
    const char *what = indices ? "[a, b, c] vertex indices" : "[x, y, z] rig-space positions";
    if (!json_object_object_get_ex(obj, field, &v))
        return GRAPH_ERROR("node '%s': missing field '%s' (an array of %s)", id, field, what);
    if (!v || json_object_get_type(v) != json_type_array)
        return GRAPH_ERROR("node '%s': field '%s': expected an array of %s, got %s", id, field,
                           what, ssk_json_kind(v));
    const size_t n = json_object_array_length(v);
    if (expected && n != expected)
        return GRAPH_ERROR("node '%s': field '%s': expected %u entries (one per entry of "
                           "'vertices': an edited cage keeps the cage's topology), got %zu",
                           id, field, expected, n);
    if (n > UINT32_MAX / 3)
        return GRAPH_ERROR("node '%s': field '%s': too many entries (%zu)", id, field, n);
    *out = malloc((3 * n + 1) * (indices ? sizeof(uint32_t) : sizeof(float)));
    if (!*out) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; ++i) {
        json_object *e = json_object_array_get_idx(v, i);
        if (!e || json_object_get_type(e) != json_type_array || json_object_array_length(e) != 3)
            return GRAPH_ERROR("node '%s': field '%s': entry %zu: expected %s, got %s", id, field,
                               i, indices ? "[a, b, c]" : "[x, y, z]",
                               e && json_object_get_type(e) == json_type_array
                                   ? "an array of another length"
                                   : ssk_json_kind(e));
        for (size_t a = 0; a < 3; ++a) {
            json_object *x = json_object_array_get_idx(e, a);
            if (indices) {
                int64_t k = 0;
                char sub[GRAPH_NUMBER_TEXT_SIZE];
                snprintf(sub, sizeof sub, "%s[%zu]", field, i);
                ssk_status s = ssk_graph_get_integer(x, id, sub, 0, (int64_t)bound - 1, &k, err);
                if (s != SSK_OK) return s;
                ((uint32_t *)*out)[3 * i + a] = (uint32_t)k;
            } else if (!ssk_json_get_float(x, (float *)*out + 3 * i + a)) {
                char text[GRAPH_NUMBER_TEXT_SIZE];
                return GRAPH_ERROR("node '%s': field '%s': entry %zu: expected finite numbers, "
                                   "got %s",
                                   id, field, i, ssk_json_describe(x, text, sizeof text));
            }
        }
    }
    *count = (uint32_t)n;
    return SSK_OK;
}

ssk_status ssk_graph_parse_cage(ssk_graph *g, ssk_graph_node *n, json_object *obj,
                                ssk_error *err)
{
    (void)g;
    const char *id = n->id;
    void *rest = NULL, *tris = NULL, *edited = NULL;
    uint32_t c = 0, t = 0, ce = 0;
    ssk_status s = parse_triples(obj, id, "vertices", 0, false, 0, &rest, &c, err);
    n->cage_rest = rest;
    n->cage_vertex_count = c;
    if (s != SSK_OK) return s;
    if (c == 0) return GRAPH_ERROR("node '%s': field 'vertices': the cage has no vertex", id);
    s = parse_triples(obj, id, "triangles", 0, true, c, &tris, &t, err);
    n->cage_triangles = tris;
    n->cage_triangle_count = t;
    if (s != SSK_OK) return s;
    s = parse_triples(obj, id, "edited", c, false, 0, &edited, &ce, err);
    n->cage_edited = edited;
    if (s != SSK_OK) return s;
    /* closed, consistently oriented, no degenerate triangle (what the
     * cage binding's mean value coordinates need), in double as there */
    double *v = malloc((3 * (size_t)c + 1) * sizeof *v);
    if (!v) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < 3 * (size_t)c; ++i) v[i] = n->cage_rest[i];
    ssk_error check = {0};
    s = ssk_cage_check(v, c, n->cage_triangles, t, &check);
    free(v);
    if (s == SSK_ERROR_OUT_OF_MEMORY) return ssk_error_set(err, s, "out of memory");
    if (s != SSK_OK) {
        const char *m = check.message;
        if (strncmp(m, CAGE_CHECK_PREFIX, strlen(CAGE_CHECK_PREFIX)) == 0)
            m += strlen(CAGE_CHECK_PREFIX);
        return GRAPH_ERROR("node '%s': fields 'vertices', 'triangles': not a valid cage: %s", id,
                           m);
    }
    return SSK_OK;
}

ssk_status ssk_graph_cage_copy(ssk_graph_node *d, const ssk_graph_node *s)
{
    d->cage_rest = d->cage_edited = NULL;
    d->cage_triangles = NULL;
    if (s->type != SSK_NODE_CAGE) return SSK_OK;
    const size_t c = s->cage_vertex_count, t = s->cage_triangle_count;
    d->cage_rest = ssk_graph_memdup(s->cage_rest, 3 * c * sizeof(float));
    d->cage_edited = ssk_graph_memdup(s->cage_edited, 3 * c * sizeof(float));
    d->cage_triangles = ssk_graph_memdup(s->cage_triangles, 3 * t * sizeof(uint32_t));
    return d->cage_rest && d->cage_edited && d->cage_triangles ? SSK_OK : SSK_ERROR_OUT_OF_MEMORY;
}

static bool put_triples(json_object *o, const char *field, const float *values,
                        const uint32_t *indices, uint32_t count)
{
    json_object *array = json_object_new_array();
    bool ok = ssk_json_put(o, field, array);
    for (uint32_t i = 0; ok && i < count; ++i) {
        json_object *e = json_object_new_array();
        ok = ssk_json_push(array, e);
        for (size_t a = 0; ok && a < 3; ++a)
            ok = ssk_json_push(e, values ? ssk_json_new_float(values[3 * (size_t)i + a])
                                         : json_object_new_int64(indices[3 * (size_t)i + a]));
    }
    return ok;
}

bool ssk_graph_cage_to_json(const ssk_graph_node *n, json_object *o)
{
    return put_triples(o, "vertices", n->cage_rest, NULL, n->cage_vertex_count) &&
           put_triples(o, "triangles", NULL, n->cage_triangles, n->cage_triangle_count) &&
           put_triples(o, "edited", n->cage_edited, NULL, n->cage_vertex_count);
}
