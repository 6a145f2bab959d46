/*
 * graph_implicit.c — the deformer graph's implicit node (implicit skinning,
 * Vaillant 2015, 4.5-4.6; issue #20): its fields, parsed, copied and
 * written (graph.h). The node takes the first stage's positions (DQS in
 * the paper, "dqs" in ssk_graph_from_method) and tracks them onto the
 * composed field; springskin.h ssk_implicit_params gives the parameters.
 */
#include "graph/graph.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static const char *const fields[] = {"operator",     "operators",
                                     "iterations",   "sigma",
                                     "contact_angle", "smoothing_iterations",
                                     "diffusion_iterations", "bulge",
                                     "tracking",     "substep_angle",
                                     "relaxation_iterations"};

bool ssk_graph_implicit_field(const char *field)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i)
        if (strcmp(field, fields[i]) == 0) return true;
    return false;
}

static const char *operator_name_at(int i)
{
    return ssk_implicit_operator_name((ssk_implicit_operator)i);
}

static const char *tracking_name_at(int i)
{
    return ssk_implicit_tracking_name((ssk_implicit_tracking)i);
}

/* A number in [lo, hi] (lo_open: lo excluded; hi_open: hi excluded). */
static ssk_status get_range(json_object *obj, const char *id, const char *field, float lo,
                            bool lo_open, float hi, bool hi_open, const char *meaning,
                            float *out, ssk_error *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, field, &v)) return SSK_OK;
    float x;
    if (!ssk_json_get_float(v, &x) || (lo_open ? !(x > lo) : !(x >= lo)) ||
        (hi_open ? !(x < hi) : !(x <= hi))) {
        char text[GRAPH_NUMBER_TEXT_SIZE];
        return GRAPH_ERROR("node '%s': field '%s': expected a number in %c%g, %g%c (%s), got %s",
                           id, field, lo_open ? '(' : '[', (double)lo, (double)hi,
                           hi_open ? ')' : ']', meaning, ssk_json_describe(v, text, sizeof text));
    }
    *out = x;
    return SSK_OK;
}

static ssk_status get_count(json_object *obj, const char *id, const char *field, int64_t lo,
                            uint32_t *out, ssk_error *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, field, &v)) return SSK_OK;
    int64_t x = 0;
    ssk_status s = ssk_graph_get_integer(v, id, field, lo, SSK_IMPLICIT_MAX_ITERATIONS, &x, err);
    if (s == SSK_OK) *out = (uint32_t)x;
    return s;
}

/* "operators": {bone name: operator name, ...}. */
static ssk_status parse_operators(ssk_graph *g, ssk_graph_node *n, json_object *v,
                                  ssk_error *err)
{
    const char *id = n->id;
    char list[GRAPH_NAME_LIST_SIZE];
    ssk_graph_name_list(list, sizeof list, operator_name_at, SSK_IMPLICIT_OPERATOR_COUNT);
    if (!v || json_object_get_type(v) != json_type_object)
        return GRAPH_ERROR("node '%s': field 'operators': expected an object {bone name: "
                           "operator} (operators %s), got %s",
                           id, list, ssk_json_kind(v));
    n->joint_operators = malloc((size_t)g->bone_count + 1);
    if (!n->joint_operators) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    memset(n->joint_operators, SSK_IMPLICIT_OPERATOR_COUNT, (size_t)g->bone_count + 1);
    json_object_object_foreach(v, bone, value)
    {
        const int32_t b = ssk_graph_find_bone(g, bone);
        if (b < 0)
            return GRAPH_ERROR("node '%s': field 'operators': no bone '%s' in the rig", id, bone);
        const int op = ssk_json_is_plain_string(value)
                           ? ssk_graph_find_name(json_object_get_string(value), operator_name_at,
                                                 SSK_IMPLICIT_OPERATOR_COUNT)
                           : -1;
        if (op < 0)
            return GRAPH_ERROR("node '%s': field 'operators.%s': expected %s, got %s", id, bone,
                               list,
                               ssk_json_is_plain_string(value) ? json_object_get_string(value)
                                                               : ssk_json_kind(value));
        n->joint_operators[b] = (uint8_t)op;
    }
    return SSK_OK;
}

ssk_status ssk_graph_parse_implicit(ssk_graph *g, ssk_graph_node *n, json_object *obj,
                                    ssk_error *err)
{
    const char *id = n->id;
    ssk_implicit_params *p = &n->implicit;
    ssk_implicit_params_default(p);
    int op = (int)p->default_operator;
    ssk_status s = ssk_graph_get_name(obj, id, "operator", operator_name_at,
                                      SSK_IMPLICIT_OPERATOR_COUNT, &op, err);
    if (s != SSK_OK) return s;
    p->default_operator = (ssk_implicit_operator)op;
    json_object *v = NULL;
    if (json_object_object_get_ex(obj, "operators", &v) &&
        (s = parse_operators(g, n, v, err)) != SSK_OK)
        return s;
    p->joint_operators = n->joint_operators;
    if ((s = get_count(obj, id, "iterations", 0, &p->iterations, err)) != SSK_OK ||
        (s = get_count(obj, id, "smoothing_iterations", 0, &p->smoothing_iterations, err)) !=
            SSK_OK ||
        (s = get_count(obj, id, "diffusion_iterations", 0, &p->diffusion_iterations, err)) !=
            SSK_OK ||
        (s = get_range(obj, id, "sigma", 0.0f, true, 1.0f, false, "the Newton step fraction",
                       &p->sigma, err)) != SSK_OK ||
        (s = get_range(obj, id, "contact_angle", 0.0f, true, 180.0f, true, "degrees",
                       &p->contact_angle, err)) != SSK_OK ||
        (s = get_range(obj, id, "bulge", 0.0f, false, 1.0f, false, "the bulge operator's scale",
                       &p->bulge, err)) != SSK_OK ||
        (s = get_range(obj, id, "substep_angle", 0.0f, true, 180.0f, false,
                       "degrees of bone rotation per virtual frame", &p->substep_angle, err)) !=
            SSK_OK ||
        (s = get_count(obj, id, "relaxation_iterations", 0, &p->relaxation_iterations, err)) !=
            SSK_OK)
        return s;
    int tracking = (int)p->tracking;
    if ((s = ssk_graph_get_name(obj, id, "tracking", tracking_name_at, SSK_IMPLICIT_TRACKING_COUNT,
                                &tracking, err)) != SSK_OK)
        return s;
    p->tracking = (ssk_implicit_tracking)tracking;
    return SSK_OK;
}

ssk_status ssk_graph_implicit_copy(ssk_graph_node *d, const ssk_graph_node *s,
                                   uint32_t bone_count)
{
    d->joint_operators = NULL;
    d->implicit.joint_operators = NULL;
    if (!s->joint_operators) return SSK_OK;
    d->joint_operators = ssk_graph_memdup(s->joint_operators, (size_t)bone_count);
    if (!d->joint_operators) return SSK_ERROR_OUT_OF_MEMORY;
    d->implicit.joint_operators = d->joint_operators;
    return SSK_OK;
}

bool ssk_graph_implicit_to_json(const ssk_graph *g, const ssk_graph_node *n, json_object *o)
{
    const ssk_implicit_params *p = &n->implicit;
    bool ok = ssk_json_put(o, "operator",
                           json_object_new_string(ssk_implicit_operator_name(p->default_operator)));
    json_object *ops = ok ? json_object_new_object() : NULL;
    ok = ok && ssk_json_put(o, "operators", ops);
    for (uint32_t b = 0; ok && n->joint_operators && b < g->bone_count; ++b) {
        const uint8_t op = n->joint_operators[b];
        if (op >= SSK_IMPLICIT_OPERATOR_COUNT) continue;
        ok = ssk_json_put(ops, g->bone_names[b],
                          json_object_new_string(ssk_implicit_operator_name(op)));
    }
    return ok && ssk_json_put(o, "iterations", json_object_new_int64(p->iterations)) &&
           ssk_json_put(o, "sigma", ssk_json_new_float(p->sigma)) &&
           ssk_json_put(o, "contact_angle", ssk_json_new_float(p->contact_angle)) &&
           ssk_json_put(o, "smoothing_iterations",
                        json_object_new_int64(p->smoothing_iterations)) &&
           ssk_json_put(o, "diffusion_iterations",
                        json_object_new_int64(p->diffusion_iterations)) &&
           ssk_json_put(o, "bulge", ssk_json_new_float(p->bulge)) &&
           ssk_json_put(o, "tracking",
                        json_object_new_string(ssk_implicit_tracking_name(p->tracking))) &&
           ssk_json_put(o, "substep_angle", ssk_json_new_float(p->substep_angle)) &&
           ssk_json_put(o, "relaxation_iterations",
                        json_object_new_int64(p->relaxation_iterations));
}
