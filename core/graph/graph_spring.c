/*
 * graph_spring.c — the spring node of the deformer graph document
 * (graph.c; Toothman 2020, 4.2, 5.2): its parameters, stiffness maps and
 * surface edits, parsed (types and value ranges; the stability of the
 * explicit update is ssk_spring_create's check when a deformer is made),
 * written in canonical form, and copied.
 */
#include "graph/graph.h"

#include <json-c/json.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Surface-edit defaults (springskin.h, ssk_spring_edit): 4 rings of passive
 * vertices, ROI weight 1. The spring parameters' defaults come from
 * ssk_spring_params_default. */
#define DEFAULT_EDIT_GROW 4
#define DEFAULT_EDIT_STIFFNESS 1.0f
/* Ranges of the spring node's integer fields. */
#define SPRING_MAX_ITERATIONS_LIMIT 100000
#define EDIT_GROW_LIMIT 1000
/* Room for a field path in messages ("edits[12].stiffness"). */
#define FIELD_PATH_SIZE 64

/* Names of the spring deformer's enums in the document (springskin.h). */
static const char *const force_names[SSK_FORCE_COUNT] = {"surface", "length", "torsion", "bone",
                                                         "edit",    "detail", "twist"};
static const char *const integrator_names[SSK_SPRING_INTEGRATOR_COUNT] = {"explicit",
                                                                          "semi_implicit"};
static const char *const convergence_names[SSK_CONVERGE_COUNT] = {
    "displacement", "force", "energy", "iterations", "relative"};
static const char *const mode_names[SSK_SPRING_MODE_COUNT] = {"frame_independent",
                                                              "frame_dependent"};
/* The "solver" field: the plain update of Eq. 23 (chebyshev_rho 0,
 * multilevel 0), its Chebyshev acceleration (chebyshev_rho > 0), or the
 * multilevel correction (multilevel 1, with the Chebyshev blend unless
 * chebyshev_rho is 0). */
enum {
    SOLVER_JACOBI,
    SOLVER_CHEBYSHEV,
    SOLVER_MULTILEVEL,
    SOLVER_MULTIGRID,
    SOLVER_AUTO,
    SOLVER_COUNT
};
static const char *const solver_names[SOLVER_COUNT] = {"jacobi", "chebyshev", "multilevel",
                                                       "multigrid", "auto"};

/* ------------------------------------------------------------------------ */
/* Defaults and copies.                                                      */
/* ------------------------------------------------------------------------ */

void ssk_graph_spring_defaults(ssk_spring_params *p)
{
    ssk_spring_params_default(p);
    if (!(p->threshold > 0.0f)) p->threshold = 0.0f;
}

ssk_status ssk_graph_spring_copy(ssk_graph_node *d, const ssk_graph_node *s, uint32_t vertex_count)
{
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) {
        if (!s->stiffness_maps[f]) continue;
        d->stiffness_maps[f] =
            ssk_graph_memdup(s->stiffness_maps[f], (size_t)vertex_count * sizeof(float));
        if (!d->stiffness_maps[f]) return SSK_ERROR_OUT_OF_MEMORY;
        d->spring.stiffness_maps[f] = d->stiffness_maps[f];
    }
    if (!s->edits) return SSK_OK;
    d->edits = calloc((size_t)s->edit_count + 1, sizeof *d->edits);
    if (!d->edits) return SSK_ERROR_OUT_OF_MEMORY;
    d->edit_count = s->edit_count;
    for (uint32_t e = 0; e < s->edit_count; ++e) {
        const ssk_graph_edit *se = &s->edits[e];
        ssk_graph_edit *de = &d->edits[e];
        size_t count = se->edit.kinematic_count;
        de->edit = se->edit;
        de->kinematic = ssk_graph_memdup(se->kinematic, count * sizeof *de->kinematic);
        if (!de->kinematic) return SSK_ERROR_OUT_OF_MEMORY;
        if (se->offsets &&
            !(de->offsets = ssk_graph_memdup(se->offsets, count * 3 * sizeof(float))))
            return SSK_ERROR_OUT_OF_MEMORY;
        if (se->keys && !(de->keys = ssk_graph_memdup(se->keys, (size_t)se->edit.key_count *
                                                                    2 * sizeof(float))))
            return SSK_ERROR_OUT_OF_MEMORY;
        de->edit.kinematic = de->kinematic;
        de->edit.offsets = se->edit.offsets ? de->offsets : NULL;
        de->edit.keys = se->edit.keys ? de->keys : NULL;
    }
    return SSK_OK;
}

/* ------------------------------------------------------------------------ */
/* Parsing.                                                                  */
/* ------------------------------------------------------------------------ */

static const char *force_name_at(int i) { return force_names[i]; }
static const char *integrator_name_at(int i) { return integrator_names[i]; }
static const char *convergence_name_at(int i) { return convergence_names[i]; }
static const char *mode_name_at(int i) { return mode_names[i]; }
static const char *attachment_name_at(int i) { return ssk_attachment_mode_name((ssk_attachment_mode)i); }
static const char *solver_name_at(int i) { return solver_names[i]; }

/* Index of `name` in name_of(0 .. count - 1), or -1. */
int ssk_graph_find_name(const char *name, const char *(*name_of)(int), int count)
{
    for (int i = 0; i < count; ++i) {
        const char *n = name_of(i);
        if (n && strcmp(n, name) == 0) return i;
    }
    return -1;
}

/* The spring node's number fields: a finite float >= 0 (stiffnesses, map
 * values, the convergence threshold, ROI weights). `field` names it in
 * messages ("stiffness.surface", "edits[0].stiffness"). */
static ssk_status get_nonnegative(json_object *v, const char *id, const char *field, float *out,
                                  ssk_error *err)
{
    float x;
    if (!ssk_json_get_float(v, &x) || !(x >= 0.0f)) {
        char text[GRAPH_NUMBER_TEXT_SIZE];
        return GRAPH_ERROR("node '%s': field '%s': expected a number >= 0, got %s", id, field,
                           ssk_json_describe(v, text, sizeof text));
    }
    *out = x;
    return SSK_OK;
}

/* An integer in [lo, hi], written as a JSON integer (2.0 is not one). */
ssk_status ssk_graph_get_integer(json_object *v, const char *id, const char *field, int64_t lo,
                                 int64_t hi, int64_t *out, ssk_error *err)
{
    int64_t x = 0;
    bool ok = v && json_object_get_type(v) == json_type_int;
    if (ok) {
        x = json_object_get_int64(v); /* saturates beyond int64 */
        ok = x >= lo && x <= hi;
    }
    if (!ok) {
        char text[GRAPH_NUMBER_TEXT_SIZE];
        return GRAPH_ERROR("node '%s': field '%s': expected an integer in [%lld, %lld], got %s",
                           id, field, (long long)lo, (long long)hi,
                           ssk_json_describe(v, text, sizeof text));
    }
    *out = x;
    return SSK_OK;
}

/* An optional name field: *out unchanged when absent. */
ssk_status ssk_graph_get_name(json_object *obj, const char *id, const char *field,
                              const char *(*name_of)(int), int count, int *out, ssk_error *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, field, &v)) return SSK_OK;
    char list[GRAPH_NAME_LIST_SIZE];
    ssk_graph_name_list(list, sizeof list, name_of, count);
    if (!ssk_json_is_plain_string(v))
        return GRAPH_ERROR("node '%s': field '%s': expected a string (%s), got %s", id, field,
                           list, ssk_json_kind(v));
    int i = ssk_graph_find_name(json_object_get_string(v), name_of, count);
    if (i < 0)
        return GRAPH_ERROR("node '%s': field '%s': unknown value '%s' (expected %s)", id, field,
                           json_object_get_string(v), list);
    *out = i;
    return SSK_OK;
}

/* "stiffness": {force name: k, ...}, the forces not listed keep theirs. */
static ssk_status parse_stiffness(ssk_graph_node *n, json_object *v, ssk_error *err)
{
    const char *id = n->id;
    char list[GRAPH_NAME_LIST_SIZE];
    ssk_graph_name_list(list, sizeof list, force_name_at, SSK_FORCE_COUNT);
    if (!v || json_object_get_type(v) != json_type_object)
        return GRAPH_ERROR("node '%s': field 'stiffness': expected an object {force: number} "
                           "(forces %s), got %s",
                           id, list, ssk_json_kind(v));
    json_object_object_foreach(v, force, value)
    {
        int f = ssk_graph_find_name(force, force_name_at, SSK_FORCE_COUNT);
        if (f < 0)
            return GRAPH_ERROR("node '%s': field 'stiffness': unknown force '%s' (expected %s)",
                               id, force, list);
        char field[GRAPH_NAME_LIST_SIZE];
        snprintf(field, sizeof field, "stiffness.%s", force);
        ssk_status s = get_nonnegative(value, id, field, &n->spring.stiffness[f], err);
        if (s != SSK_OK) return s;
    }
    return SSK_OK;
}

/* "stiffness_maps": {force name: [#V numbers >= 0], ...}. */
static ssk_status parse_stiffness_maps(ssk_graph *g, ssk_graph_node *n, json_object *v,
                                       ssk_error *err)
{
    const char *id = n->id;
    char list[GRAPH_NAME_LIST_SIZE];
    ssk_graph_name_list(list, sizeof list, force_name_at, SSK_FORCE_COUNT);
    if (!v || json_object_get_type(v) != json_type_object)
        return GRAPH_ERROR("node '%s': field 'stiffness_maps': expected an object {force: "
                           "[one number per vertex]} (forces %s), got %s",
                           id, list, ssk_json_kind(v));
    json_object_object_foreach(v, force, map)
    {
        int f = ssk_graph_find_name(force, force_name_at, SSK_FORCE_COUNT);
        if (f < 0)
            return GRAPH_ERROR("node '%s': field 'stiffness_maps': unknown force '%s' "
                               "(expected %s)",
                               id, force, list);
        if (!map || json_object_get_type(map) != json_type_array ||
            json_object_array_length(map) != g->vertex_count) {
            char got[GRAPH_NUMBER_TEXT_SIZE];
            if (map && json_object_get_type(map) == json_type_array)
                snprintf(got, sizeof got, "%zu entries", json_object_array_length(map));
            else
                snprintf(got, sizeof got, "%s", ssk_json_kind(map));
            return GRAPH_ERROR("node '%s': field 'stiffness_maps.%s': expected an array of %u "
                               "numbers >= 0 (one per vertex of the rig), got %s",
                               id, force, (unsigned)g->vertex_count, got);
        }
        free(n->stiffness_maps[f]); /* a repeated key: json-c keeps the last */
        n->stiffness_maps[f] = malloc(((size_t)g->vertex_count + 1) * sizeof(float));
        if (!n->stiffness_maps[f])
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing node '%s'",
                                 id);
        char field[GRAPH_NAME_LIST_SIZE];
        for (uint32_t i = 0; i < g->vertex_count; ++i) {
            json_object *value = json_object_array_get_idx(map, i);
            float x;
            if (!ssk_json_get_float(value, &x) || !(x >= 0.0f)) {
                snprintf(field, sizeof field, "stiffness_maps.%s", force);
                char text[GRAPH_NUMBER_TEXT_SIZE];
                return GRAPH_ERROR("node '%s': field '%s': entry %u: expected a number >= 0, "
                                   "got %s",
                                   id, field, (unsigned)i,
                                   ssk_json_describe(value, text, sizeof text));
            }
            n->stiffness_maps[f][i] = x;
        }
    }
    return SSK_OK;
}

/* One surface edit (5.2), `index` in the node's "edits". */
static ssk_status parse_edit(ssk_graph *g, ssk_graph_node *n, size_t index, json_object *obj,
                             uint8_t *listed, ssk_error *err)
{
    const char *id = n->id;
    ssk_graph_edit *e = &n->edits[index];
    char field[FIELD_PATH_SIZE / 2];
    snprintf(field, sizeof field, "edits[%zu]", index);
    if (!obj || json_object_get_type(obj) != json_type_object)
        return GRAPH_ERROR("node '%s': field '%s': expected an object {kinematic, offsets or "
                           "push, grow, stiffness, keys}, got %s",
                           id, field, ssk_json_kind(obj));
    json_object_object_foreach(obj, key, value)
    {
        (void)value;
        static const char *const known[] = {"kinematic", "offsets", "push",
                                            "grow",      "stiffness", "keys"};
        bool found = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i)
            if (strcmp(key, known[i]) == 0) found = true;
        if (!found)
            return GRAPH_ERROR("node '%s': field '%s': unknown field '%s' (expected kinematic, "
                               "offsets, push, grow, stiffness, keys)",
                               id, field, key);
    }
    e->edit.grow = DEFAULT_EDIT_GROW;
    e->edit.stiffness = DEFAULT_EDIT_STIFFNESS;

    /* kinematic: distinct whole-rig vertex rows. */
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, "kinematic", &v))
        return GRAPH_ERROR("node '%s': field '%s': missing field 'kinematic' (a non-empty array "
                           "of vertex rows)",
                           id, field);
    if (!v || json_object_get_type(v) != json_type_array || json_object_array_length(v) == 0)
        return GRAPH_ERROR("node '%s': field '%s.kinematic': expected a non-empty array of "
                           "vertex rows, got %s",
                           id, field,
                           v && json_object_get_type(v) == json_type_array ? "an empty array"
                                                                          : ssk_json_kind(v));
    size_t count = json_object_array_length(v);
    if (count > g->vertex_count)
        return GRAPH_ERROR("node '%s': field '%s.kinematic': %zu rows, more than the rig's %u "
                           "vertices",
                           id, field, count, (unsigned)g->vertex_count);
    e->kinematic = malloc((count + 1) * sizeof *e->kinematic);
    if (!e->kinematic)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing node '%s'", id);
    memset(listed, 0, g->vertex_count);
    for (size_t i = 0; i < count; ++i) {
        json_object *row = json_object_array_get_idx(v, i);
        int64_t r = row && json_object_get_type(row) == json_type_int
                        ? json_object_get_int64(row)
                        : -1;
        if (r < 0 || r >= (int64_t)g->vertex_count) {
            char text[GRAPH_NUMBER_TEXT_SIZE];
            return GRAPH_ERROR("node '%s': field '%s.kinematic': entry %zu: expected a vertex "
                               "row, an integer in [0, %u] (the rig has %u vertices), got %s",
                               id, field, i, (unsigned)g->vertex_count - 1,
                               (unsigned)g->vertex_count,
                               ssk_json_describe(row, text, sizeof text));
        }
        if (listed[r])
            return GRAPH_ERROR("node '%s': field '%s.kinematic': entry %zu: vertex row %lld is "
                               "listed twice",
                               id, field, i, (long long)r);
        listed[r] = 1;
        e->kinematic[i] = (uint32_t)r;
    }
    e->edit.kinematic = e->kinematic;
    e->edit.kinematic_count = (uint32_t)count;

    /* offsets or push, exactly one. */
    json_object *offsets = NULL, *push_value = NULL;
    bool has_offsets = json_object_object_get_ex(obj, "offsets", &offsets);
    bool has_push = json_object_object_get_ex(obj, "push", &push_value);
    if (has_offsets == has_push)
        return GRAPH_ERROR("node '%s': field '%s': %s (give exactly one: 'offsets', one [x, y, "
                           "z] per kinematic vertex, or 'push', a distance along the scale "
                           "vectors)",
                           id, field,
                           has_offsets ? "both 'offsets' and 'push'" : "neither 'offsets' nor "
                                                                      "'push'");
    if (has_offsets) {
        if (!offsets || json_object_get_type(offsets) != json_type_array ||
            json_object_array_length(offsets) != count) {
            char got[GRAPH_NUMBER_TEXT_SIZE];
            if (offsets && json_object_get_type(offsets) == json_type_array)
                snprintf(got, sizeof got, "%zu entries", json_object_array_length(offsets));
            else
                snprintf(got, sizeof got, "%s", ssk_json_kind(offsets));
            return GRAPH_ERROR("node '%s': field '%s.offsets': expected an array of %zu [x, y, "
                               "z] (one per kinematic vertex), got %s",
                               id, field, count, got);
        }
        e->offsets = malloc((count * 3 + 1) * sizeof *e->offsets);
        if (!e->offsets)
            return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing node '%s'",
                                 id);
        for (size_t i = 0; i < count; ++i) {
            json_object *xyz = json_object_array_get_idx(offsets, i);
            if (!xyz || json_object_get_type(xyz) != json_type_array ||
                json_object_array_length(xyz) != 3 ||
                !ssk_json_get_float(json_object_array_get_idx(xyz, 0), &e->offsets[3 * i]) ||
                !ssk_json_get_float(json_object_array_get_idx(xyz, 1), &e->offsets[3 * i + 1]) ||
                !ssk_json_get_float(json_object_array_get_idx(xyz, 2), &e->offsets[3 * i + 2]))
                return GRAPH_ERROR("node '%s': field '%s.offsets': entry %zu: expected [x, y, "
                                   "z], three finite numbers",
                                   id, field, i);
        }
        e->edit.offsets = e->offsets;
    } else if (!ssk_json_get_float(push_value, &e->edit.push)) {
        char text[GRAPH_NUMBER_TEXT_SIZE];
        return GRAPH_ERROR("node '%s': field '%s.push': expected a finite number, got %s", id,
                           field, ssk_json_describe(push_value, text, sizeof text));
    }

    ssk_status s = SSK_OK;
    if (json_object_object_get_ex(obj, "grow", &v)) {
        char name[FIELD_PATH_SIZE];
        snprintf(name, sizeof name, "%s.grow", field);
        int64_t grow = 0;
        s = ssk_graph_get_integer(v, id, name, 0, EDIT_GROW_LIMIT, &grow, err);
        if (s != SSK_OK) return s;
        e->edit.grow = (uint32_t)grow;
    }
    if (json_object_object_get_ex(obj, "stiffness", &v)) {
        char name[FIELD_PATH_SIZE];
        snprintf(name, sizeof name, "%s.stiffness", field);
        s = get_nonnegative(v, id, name, &e->edit.stiffness, err);
        if (s != SSK_OK) return s;
    }
    if (json_object_object_get_ex(obj, "keys", &v)) {
        char name[FIELD_PATH_SIZE];
        snprintf(name, sizeof name, "%s.keys", field);
        s = ssk_graph_parse_keys(v, id, name, true, &e->keys, &e->edit.key_count, err);
        if (s != SSK_OK) return s;
        e->edit.keys = e->edit.key_count ? e->keys : NULL;
    }
    return SSK_OK;
}

ssk_status ssk_graph_parse_spring(ssk_graph *g, ssk_graph_node *n, json_object *obj, ssk_error *err)
{
    const char *id = n->id;
    ssk_graph_spring_defaults(&n->spring);
    json_object *v = NULL;
    ssk_status s = SSK_OK;
    if (json_object_object_get_ex(obj, "stiffness", &v) &&
        (s = parse_stiffness(n, v, err)) != SSK_OK)
        return s;
    if (json_object_object_get_ex(obj, "stiffness_maps", &v) &&
        (s = parse_stiffness_maps(g, n, v, err)) != SSK_OK)
        return s;
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) n->spring.stiffness_maps[f] = n->stiffness_maps[f];
    char text[GRAPH_NUMBER_TEXT_SIZE];
    if (json_object_object_get_ex(obj, "dt", &v) &&
        (!ssk_json_get_float(v, &n->spring.dt) || !(n->spring.dt > 0.0f)))
        return GRAPH_ERROR("node '%s': field 'dt': expected a number > 0 (the time step), got "
                           "%s",
                           id, ssk_json_describe(v, text, sizeof text));
    int name = (int)n->spring.integrator;
    if ((s = ssk_graph_get_name(obj, id, "integrator", integrator_name_at, SSK_SPRING_INTEGRATOR_COUNT,
                      &name, err)) != SSK_OK)
        return s;
    n->spring.integrator = (ssk_spring_integrator)name;
    if (json_object_object_get_ex(obj, "damping", &v) &&
        (!ssk_json_get_float(v, &n->spring.damping) || !(n->spring.damping >= 0.0f) ||
         !(n->spring.damping < 1.0f)))
        return GRAPH_ERROR("node '%s': field 'damping': expected a number in [0, 1), got %s", id,
                           ssk_json_describe(v, text, sizeof text));
    if (json_object_object_get_ex(obj, "max_iterations", &v)) {
        int64_t iterations = 0;
        if ((s = ssk_graph_get_integer(v, id, "max_iterations", 1, SPRING_MAX_ITERATIONS_LIMIT,
                             &iterations, err)) != SSK_OK)
            return s;
        n->spring.max_iterations = (uint32_t)iterations;
    }
    name = (int)n->spring.convergence;
    if ((s = ssk_graph_get_name(obj, id, "convergence", convergence_name_at, SSK_CONVERGE_COUNT, &name,
                      err)) != SSK_OK)
        return s;
    n->spring.convergence = (ssk_spring_convergence)name;
    if (json_object_object_get_ex(obj, "threshold", &v) &&
        (s = get_nonnegative(v, id, "threshold", &n->spring.threshold, err)) != SSK_OK)
        return s;
    name = (int)n->spring.mode;
    if ((s = ssk_graph_get_name(obj, id, "mode", mode_name_at, SSK_SPRING_MODE_COUNT, &name, err)) !=
        SSK_OK)
        return s;
    n->spring.mode = (ssk_spring_mode)name;
    name = (int)n->spring.attachment;
    if ((s = ssk_graph_get_name(obj, id, "attachment", attachment_name_at, SSK_ATTACHMENT_MODE_COUNT,
                      &name, err)) != SSK_OK)
        return s;
    n->spring.attachment = (ssk_attachment_mode)name;
    const bool has_rho = json_object_object_get_ex(obj, "chebyshev_rho", &v);
    if (has_rho &&
        (!ssk_json_get_float(v, &n->spring.chebyshev_rho) || !(n->spring.chebyshev_rho >= 0.0f) ||
         !(n->spring.chebyshev_rho < 1.0f)))
        return GRAPH_ERROR("node '%s': field 'chebyshev_rho': expected a number in [0, 1) (0: "
                           "no acceleration), got %s",
                           id, ssk_json_describe(v, text, sizeof text));
    /* "solver": jacobi is chebyshev_rho 0 and no multilevel correction;
     * chebyshev takes chebyshev_rho (default 0.99); multilevel adds the
     * correction to either (chebyshev_rho default 0.96, 0 allowed);
     * multigrid is the surface multigrid. auto, or no solver: the
     * multigrid (multilevel, chebyshev_rho as given, for a spring with
     * surface edits; ssk_spring_params_resolve) where they apply (the
     * explicit integrator and a scheme other than energy), the plain
     * update elsewhere. */
    name = -1;
    if ((s = ssk_graph_get_name(obj, id, "solver", solver_name_at, SOLVER_COUNT, &name, err)) != SSK_OK)
        return s;
    const bool applies =
        n->spring.integrator == SSK_SPRING_EXPLICIT && n->spring.convergence != SSK_CONVERGE_ENERGY;
    if (name == SOLVER_JACOBI) {
        if (has_rho && n->spring.chebyshev_rho > 0.0f)
            return GRAPH_ERROR("node '%s': field 'chebyshev_rho': %g applies to solvers "
                               "'chebyshev' and 'multilevel', not 'jacobi'",
                               id, (double)n->spring.chebyshev_rho);
        n->spring.chebyshev_rho = 0.0f;
        n->spring.multilevel = 0;
    } else if (name == SOLVER_CHEBYSHEV) {
        if (has_rho && !(n->spring.chebyshev_rho > 0.0f))
            return GRAPH_ERROR("node '%s': field 'chebyshev_rho': solver 'chebyshev' needs a "
                               "number in (0, 1), got 0",
                               id);
        if (!has_rho) n->spring.chebyshev_rho = SSK_SPRING_CHEBYSHEV_RHO_ALONE;
        n->spring.multilevel = 0;
    } else if (name == SOLVER_MULTILEVEL) {
        n->spring.multilevel = SSK_SPRING_MULTILEVEL_BONES;
    } else if (name == SOLVER_MULTIGRID) {
        n->spring.multilevel = SSK_SPRING_MULTIGRID;
        /* the corrected passes overshoot a few modes where a pose leaves the
         * rest linearization (spring_multigrid.c); a blend tuned for a
         * spectrum in [-rho, rho] amplifies them */
        if (!has_rho) n->spring.chebyshev_rho = 0.0f;
    } else if (applies) {
        n->spring.multilevel = SSK_SPRING_SOLVER_AUTO;
    }
    if ((name == SOLVER_MULTILEVEL || name == SOLVER_MULTIGRID || name == SOLVER_CHEBYSHEV) &&
        !applies)
        return GRAPH_ERROR("node '%s': field 'solver': '%s' needs the explicit integrator and a "
                           "convergence other than 'energy' (its iterates' energy is not "
                           "monotone); use 'jacobi'",
                           id, solver_names[name]); else if (!applies) {
        if (!has_rho) n->spring.chebyshev_rho = 0.0f;
        n->spring.multilevel = 0;
    }

    if (!json_object_object_get_ex(obj, "edits", &v)) return SSK_OK;
    if (!v || json_object_get_type(v) != json_type_array)
        return GRAPH_ERROR("node '%s': field 'edits': expected an array of surface edits, got "
                           "%s",
                           id, ssk_json_kind(v));
    size_t count = json_object_array_length(v);
    if (count > UINT32_MAX) return GRAPH_ERROR("node '%s': field 'edits': too many edits", id);
    n->edits = calloc(count + 1, sizeof *n->edits);
    uint8_t *listed = malloc((size_t)g->vertex_count + 1);
    if (!n->edits || !listed) {
        free(listed);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory parsing node '%s'", id);
    }
    n->edit_count = (uint32_t)count; /* node_free frees what was parsed */
    for (size_t e = 0; e < count && s == SSK_OK; ++e)
        s = parse_edit(g, n, e, json_object_array_get_idx(v, e), listed, err);
    free(listed);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Canonical JSON.                                                           */
/* ------------------------------------------------------------------------ */

/* An array of `count` floats. */
static json_object *float_array(const float *values, size_t count)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < count; ++i)
        if (!ssk_json_push(a, ssk_json_new_float(values[i]))) {
            json_object_put(a);
            return NULL;
        }
    return a;
}

/* An array of `count` [a, b] (key_count keys) or [x, y, z] (offsets) rows. */
static json_object *float_rows(const float *values, size_t count, size_t width)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < count; ++i)
        if (!ssk_json_push(a, float_array(values + i * width, width))) {
            json_object_put(a);
            return NULL;
        }
    return a;
}

static json_object *edit_to_json(const ssk_graph_edit *e)
{
    json_object *o = json_object_new_object();
    json_object *rows = json_object_new_array();
    bool ok = o && ssk_json_put(o, "kinematic", rows);
    if (!ok) json_object_put(rows);
    for (uint32_t i = 0; ok && i < e->edit.kinematic_count; ++i)
        ok = ssk_json_push(rows, json_object_new_int64(e->edit.kinematic[i]));
    if (ok && e->edit.offsets)
        ok = ssk_json_put(o, "offsets", float_rows(e->edit.offsets, e->edit.kinematic_count, 3));
    else if (ok)
        ok = ssk_json_put(o, "push", ssk_json_new_float(e->edit.push));
    ok = ok && ssk_json_put(o, "grow", json_object_new_int64(e->edit.grow)) &&
         ssk_json_put(o, "stiffness", ssk_json_new_float(e->edit.stiffness)) &&
         ssk_json_put(o, "keys", float_rows(e->edit.keys, e->edit.keys ? e->edit.key_count : 0, 2));
    if (!ok) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

bool ssk_graph_spring_to_json(const ssk_graph *g, const ssk_graph_node *n, json_object *o)
{
    const ssk_spring_params *p = &n->spring;
    json_object *stiffness = json_object_new_object();
    bool ok = ssk_json_put(o, "stiffness", stiffness);
    for (int f = 0; ok && f < SSK_FORCE_COUNT; ++f)
        ok = ssk_json_put(stiffness, force_names[f], ssk_json_new_float(p->stiffness[f]));
    json_object *maps = ok ? json_object_new_object() : NULL;
    ok = ok && ssk_json_put(o, "stiffness_maps", maps);
    for (int f = 0; ok && f < SSK_FORCE_COUNT; ++f)
        if (p->stiffness_maps[f])
            ok = ssk_json_put(maps, force_names[f],
                              float_array(p->stiffness_maps[f], g->vertex_count));
    ok = ok && ssk_json_put(o, "dt", ssk_json_new_float(p->dt)) &&
         ssk_json_put(o, "integrator", json_object_new_string(integrator_names[p->integrator])) &&
         ssk_json_put(o, "damping", ssk_json_new_float(p->damping)) &&
         ssk_json_put(o, "max_iterations", json_object_new_int64(p->max_iterations)) &&
         ssk_json_put(o, "convergence",
                      json_object_new_string(convergence_names[p->convergence])) &&
         ssk_json_put(o, "threshold", ssk_json_new_float(p->threshold)) &&
         ssk_json_put(o, "mode", json_object_new_string(mode_names[p->mode])) &&
         ssk_json_put(o, "solver", json_object_new_string(
                                       solver_names[p->multilevel == SSK_SPRING_SOLVER_AUTO ? SOLVER_AUTO
                                                    : p->multilevel == SSK_SPRING_MULTIGRID ? SOLVER_MULTIGRID
                                                    : p->multilevel           ? SOLVER_MULTILEVEL
                                                    : p->chebyshev_rho > 0.0f ? SOLVER_CHEBYSHEV
                                                                              : SOLVER_JACOBI])) &&
         ssk_json_put(o, "chebyshev_rho", ssk_json_new_float(p->chebyshev_rho)) &&
         ssk_json_put(o, "attachment",
                      json_object_new_string(ssk_attachment_mode_name(p->attachment)));
    json_object *edits = ok ? json_object_new_array() : NULL;
    ok = ok && ssk_json_put(o, "edits", edits);
    for (uint32_t e = 0; ok && n->edits && e < n->edit_count; ++e)
        ok = ssk_json_push(edits, edit_to_json(&n->edits[e]));
    return ok;
}
