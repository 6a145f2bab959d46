/* test_graph.c — the deformer graph document (core/graph/graph.c, Toothman 2020,
 * 6.1; format in docs/deformer-graph.md):
 * - every validation error is SSK_ERROR_GRAPH with a message naming the
 *   node and field at fault (JSON syntax errors: the byte offset);
 * - a valid graph parses to the expected fields (IRS joint influences
 *   expanded to #B x 2, bone masks) and round-trips through
 *   ssk_graph_to_json, whose output is canonical (defaults explicit,
 *   idempotent);
 * - the topological order respects every edge and breaks ties by file
 *   order; keyed radial amounts interpolate linearly and clamp;
 * - ssk_graph_from_method, ssk_graph_copy, ssk_graph_needs_binding;
 * - ssk_graph_load from a file and the shipped examples/graphs/ files
 *   against BCN_Epileptic.X's rig;
 * - spring nodes: every field parsed with non-default values (stiffness
 *   maps as #V rows, surface edits with offsets or a push, keys), the
 *   defaults of ssk_spring_params_default, each range/type error naming the
 *   node and field, round trip and deep copy of maps and edits (pointers
 *   re-pointed at the copy's arrays), ssk_graph_from_method(SPRING);
 * - `springskin bake --graph`: the LBS graph bakes exactly what --method lbs
 *   bakes; the IRS bulge graph bakes finite positions that differ from plain
 *   IRS. */
#include "testutil.h"

#include "graph/graph.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MODEL_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"
#define EXAMPLES_DIR SSK_SOURCE_DIR "/examples/graphs"
#define LIMB_BONES 3
#define PC2_HEADER_BYTES 32
/* Frames baked by the CLI tests (a short range keeps them fast). */
#define CLI_FRAMES "0:30"
#define CLI_FRAME_COUNT 31
/* The bulge graph's radial node must move some vertex by more than this
 * fraction of the model's bounding-box diagonal relative to plain IRS. */
#define BULGE_MIN_EFFECT_FRACTION 1e-3

/* ------------------------------------------------------------------------ */
/* Fixture: a 3-bone limb (bones "bone_0".."bone_2") and BCN_Epileptic.X.    */
/* ------------------------------------------------------------------------ */

typedef struct fixture {
    ssk_rig *limb;
    ssk_scene *scene;
    const ssk_rig *bcn;
    char *dir;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    fx->limb = tu_make_limb(8, 8, LIMB_BONES, 3.0f, 0.3f, 0.2f, 2);
    ssk_error err = {0};
    if (!fx->limb || ssk_scene_import(&fx->scene, MODEL_PATH, &err) != SSK_OK) {
        fprintf(stderr, "setup: %s\n", err.message);
        ssk_rig_destroy(fx->limb);
        free(fx);
        return -1;
    }
    fx->bcn = ssk_scene_rig(fx->scene);
    fx->dir = tu_temp_dir();
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char command[4096];
    snprintf(command, sizeof command, "rm -rf '%s'", fx->dir);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", fx->dir);
    free(fx->dir);
    ssk_scene_destroy(fx->scene);
    ssk_rig_destroy(fx->limb);
    free(fx);
    return 0;
}

/* Test documents are written with ' for " (no ' appears in them). */
static char *q(const char *text)
{
    char *s = strdup(text);
    assert_non_null(s);
    for (char *c = s; *c; ++c)
        if (*c == '\'') *c = '"';
    return s;
}

static ssk_status parse_q(ssk_graph **out, const char *text, const ssk_rig *rig,
                          ssk_error *err)
{
    char *json = q(text);
    ssk_status s = ssk_graph_parse(out, json, rig, err);
    free(json);
    return s;
}

static ssk_graph *parse_ok(const char *text, const ssk_rig *rig)
{
    ssk_graph *g = NULL;
    ssk_error err = {0};
    ssk_status s = parse_q(&g, text, rig, &err);
    if (s != SSK_OK) fail_msg("unexpected parse failure: %s", err.message);
    assert_non_null(g);
    return g;
}

/* Parses `text` (quotes as ') and expects SSK_ERROR_GRAPH with a message
 * containing each of the NULL-terminated substrings. */
static void expect_error_v(const ssk_rig *rig, const char *text, const char *const *parts)
{
    ssk_graph *g = (ssk_graph *)(uintptr_t)1;
    ssk_error err = {0};
    ssk_status s = parse_q(&g, text, rig, &err);
    if (s != SSK_ERROR_GRAPH)
        fail_msg("expected SSK_ERROR_GRAPH, got %s (%s) for %s", ssk_status_name(s),
                 err.message, text);
    assert_null(g);
    assert_int_equal(err.status, SSK_ERROR_GRAPH);
    for (const char *const *p = parts; *p; ++p)
        if (!strstr(err.message, *p))
            fail_msg("message \"%s\" lacks \"%s\" (document %s)", err.message, *p, text);
}
#define expect_error(rig, text, ...) \
    expect_error_v(rig, text, (const char *const[]){__VA_ARGS__, NULL})

/* A graph skeleton: NODES and EDGES are JSON array contents. */
#define DOC(nodes, edges) "{'version': 1, 'nodes': [" nodes "], 'edges': [" edges "]}"
#define SKIN_LBS "{'id': 'skin', 'type': 'skinning', 'method': 'lbs'}"
#define SKIN_IRS "{'id': 'skin', 'type': 'skinning', 'method': 'irs'}"
#define OUT "{'id': 'out', 'type': 'output'}"
#define SKIN_TO_OUT "{'from': 'skin', 'to': 'out'}"
#define BULGE "{'id': 'bulge', 'type': 'radial', 'bones': ['bone_1']}"
#define SKIN_RIGID "{'id': 'skin', 'type': 'skinning', 'method': 'rigid'}"
/* skin -> relax (a spring node with FIELDS, text after its type) -> out. */
#define SPRING_DOC(fields)                                                      \
    DOC(SKIN_RIGID ",{'id': 'relax', 'type': 'spring'" fields "}," OUT,         \
        "{'from': 'skin', 'to': 'relax'}, {'from': 'relax', 'to': 'out'}")
/* The documented spring defaults (springskin.h, ssk_spring_params). */
#define DEFAULT_DT (1.0f / 30.0f)
#define DEFAULT_DAMPING 0.1f
#define DEFAULT_MAX_ITERATIONS 100
#define DEFAULT_EDIT_GROW 4

/* ------------------------------------------------------------------------ */
/* Validation errors.                                                        */
/* ------------------------------------------------------------------------ */

static void test_json_syntax_errors(void **state)
{
    fixture *fx = *state;
    /* Byte 14 is the second comma: {"version": 1,, } */
    expect_error(fx->limb, "{'version': 1,, }", "JSON syntax error at byte 14", "line 1");
    /* The newline puts the stray ']' (byte 16) on line 2, column 1. */
    expect_error(fx->limb, "{'version': 1, \n]", "byte 16", "line 2, column 1");
    expect_error(fx->limb, "{'version': 1", "unexpected end", "byte 13");
    expect_error(fx->limb, "", "unexpected end", "byte 0");
    /* Text after the document: the 'x' follows the document and a space. */
    const char *valid = DOC(SKIN_LBS "," OUT, SKIN_TO_OUT);
    char at[32];
    snprintf(at, sizeof at, "byte %zu", strlen(valid) + 1);
    char *trailing = malloc(strlen(valid) + 3);
    assert_non_null(trailing);
    sprintf(trailing, "%s x", valid);
    expect_error(fx->limb, trailing, "JSON syntax error", at);
    free(trailing);
    /* Strict JSON: no trailing commas, no comments; NaN (which json-c
     * reads) is no finite number. */
    expect_error(fx->limb, "{'version': 1, 'nodes': [1,]}", "JSON syntax error", "byte 27");
    expect_error(fx->limb, "{'version': 1, /* c */ 'nodes': []}", "JSON syntax error",
                 "byte 15");
    expect_error(fx->limb,
                 DOC(SKIN_LBS ",{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], "
                              "'amount': NaN}," OUT,
                     ""),
                 "node 'r'", "field 'amount'", "finite");
}

static void test_document_errors(void **state)
{
    fixture *fx = *state;
    expect_error(fx->limb, "[1, 2]", "must be a JSON object", "array");
    expect_error(fx->limb, "{'version': 1, 'nodes': [], 'edges': [], 'name': 'x'}",
                 "unknown top-level field 'name'");
    expect_error(fx->limb, "{'nodes': [], 'edges': []}", "missing field 'version'");
    expect_error(fx->limb, "{'version': 2, 'nodes': [], 'edges': []}",
                 "unsupported version 2");
    expect_error(fx->limb, "{'version': '1', 'nodes': [], 'edges': []}",
                 "unsupported version \"1\"");
    expect_error(fx->limb, "{'version': 1, 'edges': []}", "missing field 'nodes'");
    expect_error(fx->limb, "{'version': 1, 'nodes': {}, 'edges': []}", "field 'nodes'",
                 "object");
    expect_error(fx->limb, "{'version': 1, 'nodes': [" SKIN_LBS "," OUT "]}",
                 "missing field 'edges'");
}

static void test_node_field_errors(void **state)
{
    fixture *fx = *state;
    const ssk_rig *rig = fx->limb;
    expect_error(rig, DOC("3," OUT, ""), "node #0", "expected an object", "int");
    expect_error(rig, DOC("{'type': 'output'}", ""), "node #0", "missing field 'id'");
    expect_error(rig, DOC("{'id': 7, 'type': 'output'}", ""), "node #0", "field 'id'", "int");
    expect_error(rig, DOC("{'id': '', 'type': 'output'}", ""), "node #0", "empty string");
    expect_error(rig, DOC(SKIN_LBS "," OUT ",{'id': 'skin', 'type': 'normals'}", SKIN_TO_OUT),
                 "node 'skin' (#2)", "duplicate id");
    expect_error(rig, DOC("{'id': 'x'}", ""), "node 'x'", "missing field 'type'");
    expect_error(rig, DOC("{'id': 'x', 'type': 'blend'}", ""), "node 'x'",
                 "unknown node type 'blend'");
    expect_error(rig, DOC("{'id': 'x', 'type': ['output']}", ""), "node 'x'", "field 'type'",
                 "array");
    /* Fields of another type or unknown everywhere. */
    expect_error(rig, DOC("{'id': 'o', 'type': 'output', 'amount': 1}", ""), "node 'o'",
                 "unknown field 'amount'", "output");
    expect_error(rig, DOC("{'id': 'n', 'type': 'normals', 'smooth': true}", ""), "node 'n'",
                 "unknown field 'smooth'");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'lbs', 'bones': []}",
                          ""),
                 "node 'skin'", "unknown field 'bones'");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], 'method': 'irs'}",
                          ""),
                 "node 'r'", "unknown field 'method'");
    /* Skinning: method. */
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning'}", ""), "node 'skin'",
                 "missing field 'method'");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'xyz'}", ""),
                 "node 'skin'", "unknown method 'xyz'", "lbs, dqs, rigid, irs or cor");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 1}", ""),
                 "node 'skin'", "field 'method'", "int");
    /* IRS fields on other methods. */
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'lbs', "
                          "'parent_influence': 0.5}",
                          ""),
                 "node 'skin'", "'parent_influence'", "irs", "'lbs'");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'rigid', "
                          "'length_adjust': false}",
                          ""),
                 "node 'skin'", "'length_adjust'", "'rigid'");
    /* IRS values. */
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', "
                          "'parent_influence': 0}",
                          ""),
                 "node 'skin'", "'parent_influence'", "(0, 1]");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', "
                          "'child_influence': 1.5}",
                          ""),
                 "node 'skin'", "'child_influence'", "(0, 1]");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', "
                          "'child_influence': '0.5'}",
                          ""),
                 "node 'skin'", "'child_influence'");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', "
                          "'length_adjust': 1}",
                          ""),
                 "node 'skin'", "'length_adjust'", "true or false", "int");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', "
                          "'joint_influences': {'bone_7': [0.5, 0.5]}}",
                          ""),
                 "node 'skin'", "'joint_influences'", "unknown bone 'bone_7'");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', "
                          "'joint_influences': {'bone_1': [0.5]}}",
                          ""),
                 "node 'skin'", "'joint_influences'", "bone 'bone_1'", "[parent, child]");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', "
                          "'joint_influences': {'bone_1': [0.5, 0]}}",
                          ""),
                 "node 'skin'", "bone 'bone_1'", "(0, 1]");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', "
                          "'joint_influences': [[0.5, 0.5]]}",
                          ""),
                 "node 'skin'", "'joint_influences'", "array");
    /* Radial. */
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial'}", ""), "node 'r'",
                 "missing field 'bones'");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': []}", ""), "node 'r'",
                 "field 'bones'", "empty array");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': 'bone_0'}", ""), "node 'r'",
                 "field 'bones'", "string");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0', 3]}", ""),
                 "node 'r'", "field 'bones'", "entry 1", "int");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['B_Spine2']}", ""),
                 "node 'r'", "field 'bones'", "unknown bone 'B_Spine2'");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0', 'bone_0']}", ""),
                 "node 'r'", "bone 'bone_0' is listed twice");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], "
                          "'profile': 'wobble'}",
                          ""),
                 "node 'r'", "field 'profile'", "unknown profile 'wobble'", "bulge");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], 'amount': '1'}",
                          ""),
                 "node 'r'", "field 'amount'", "string");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], 'amount': null}",
                          ""),
                 "node 'r'", "field 'amount'", "null");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], 'amount': 1e39}",
                          ""),
                 "node 'r'", "field 'amount'");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], "
                          "'keys': [[0, 0], [10, 1], [10, 2]]}",
                          ""),
                 "node 'r'", "field 'keys'", "key 2", "strictly increase");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], "
                          "'keys': [[5, 0], [2, 1]]}",
                          ""),
                 "node 'r'", "key 1", "strictly increase");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], "
                          "'keys': [[0, 0], [10]]}",
                          ""),
                 "node 'r'", "field 'keys'", "key 1", "[frame, value]");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], "
                          "'keys': [[0, 'a']]}",
                          ""),
                 "node 'r'", "key 0");
    expect_error(rig, DOC("{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], 'keys': {}}",
                          ""),
                 "node 'r'", "field 'keys'", "object");
}

static void test_edge_errors(void **state)
{
    fixture *fx = *state;
    const ssk_rig *rig = fx->limb;
    expect_error(rig, DOC(SKIN_LBS "," OUT, "['skin', 'out']"), "edge #0", "expected an object");
    expect_error(rig, DOC(SKIN_LBS "," OUT, "{'from': 'skin', 'to': 'out', 'weight': 1}"),
                 "edge #0", "unknown field 'weight'");
    expect_error(rig, DOC(SKIN_LBS "," OUT, "{'to': 'out'}"), "edge #0",
                 "missing field 'from'");
    expect_error(rig, DOC(SKIN_LBS "," OUT, "{'from': 'skin'}"), "edge #0",
                 "missing field 'to'");
    expect_error(rig, DOC(SKIN_LBS "," OUT, "{'from': 'skin', 'to': 2}"), "edge #0",
                 "field 'to'", "int");
    expect_error(rig, DOC(SKIN_LBS "," OUT, SKIN_TO_OUT ", {'from': 'ghost', 'to': 'out'}"),
                 "edge #1", "field 'from'", "unknown node 'ghost'");
    expect_error(rig, DOC(SKIN_LBS "," OUT, "{'from': 'skin', 'to': 'exit'}"), "edge #0",
                 "field 'to'", "unknown node 'exit'");
    expect_error(rig, DOC(SKIN_LBS "," OUT, "{'from': 'skin', 'to': 'out', 'input': 'colors'}"),
                 "edge #0", "'skin' -> 'out'", "unknown input 'colors'");
    /* The same input twice. */
    expect_error(rig,
                 DOC(SKIN_LBS "," OUT ",{'id': 'dq', 'type': 'skinning', 'method': 'dqs'}",
                     SKIN_TO_OUT ", {'from': 'dq', 'to': 'out', 'input': 'positions'}"),
                 "edge #1", "input 'positions' of node 'out' is already connected",
                 "from node 'skin'");
    /* Kinds: normals into positions and positions into normals. */
    expect_error(rig,
                 DOC(SKIN_LBS ",{'id': 'n', 'type': 'normals'}," OUT,
                     "{'from': 'skin', 'to': 'n'}, {'from': 'n', 'to': 'out'}"),
                 "edge #1", "node 'n' (normals) outputs normals",
                 "cannot feed the positions input of node 'out'");
    expect_error(rig, DOC(SKIN_LBS "," OUT, SKIN_TO_OUT ", {'from': 'skin', 'to': 'out', "
                                                        "'input': 'normals'}"),
                 "edge #1", "node 'skin' (skinning) outputs positions",
                 "cannot feed the normals input of node 'out'");
    /* Inputs a node does not have. */
    expect_error(rig,
                 DOC(SKIN_LBS "," BULGE ",{'id': 'n', 'type': 'normals'}," OUT,
                     "{'from': 'skin', 'to': 'bulge'}, {'from': 'bulge', 'to': 'out'},"
                     "{'from': 'skin', 'to': 'n'}, {'from': 'n', 'to': 'bulge', "
                     "'input': 'normals'}"),
                 "edge #3", "node 'bulge' (radial) has no input 'normals'");
    /* A skinning node takes no input; the output node gives none. */
    expect_error(rig,
                 DOC(SKIN_LBS "," OUT ",{'id': 'dq', 'type': 'skinning', 'method': 'dqs'}",
                     SKIN_TO_OUT ", {'from': 'dq', 'to': 'skin'}"),
                 "edge #1", "node 'skin' is a skinning node", "no incoming edge");
    expect_error(rig,
                 DOC(SKIN_LBS "," OUT "," BULGE,
                     SKIN_TO_OUT ", {'from': 'out', 'to': 'bulge'}"),
                 "edge #1", "node 'out' is the output node", "no output");
}

static void test_structure_errors(void **state)
{
    fixture *fx = *state;
    const ssk_rig *rig = fx->limb;
    expect_error(rig, DOC(SKIN_LBS, ""), "no output node");
    expect_error(rig, DOC(SKIN_LBS "," OUT ",{'id': 'out2', 'type': 'output'}",
                          SKIN_TO_OUT ", {'from': 'skin', 'to': 'out2'}"),
                 "node 'out2'", "second output node", "'out'");
    /* Missing required inputs. */
    expect_error(rig, DOC(SKIN_LBS "," OUT, ""), "node 'out' (output)",
                 "positions input is not connected");
    expect_error(rig, DOC(SKIN_LBS "," BULGE "," OUT, SKIN_TO_OUT),
                 "node 'bulge' (radial)", "positions input is not connected");
    expect_error(rig,
                 DOC(SKIN_LBS ",{'id': 'n', 'type': 'normals'}," OUT,
                     SKIN_TO_OUT ", {'from': 'n', 'to': 'out', 'input': 'normals'}"),
                 "node 'n' (normals)", "positions input is not connected");
    /* Cycles: two radial nodes feeding each other, and a self-loop. */
    expect_error(rig,
                 DOC(SKIN_LBS ",{'id': 'a', 'type': 'radial', 'bones': ['bone_0']},"
                              "{'id': 'b', 'type': 'radial', 'bones': ['bone_1']}," OUT,
                     SKIN_TO_OUT ", {'from': 'a', 'to': 'b'}, {'from': 'b', 'to': 'a'}"),
                 "node 'a' is on a cycle", "'a' -> 'b' -> 'a'");
    expect_error(rig,
                 DOC(SKIN_LBS "," OUT ",{'id': 'a', 'type': 'radial', 'bones': ['bone_0']}",
                     SKIN_TO_OUT ", {'from': 'a', 'to': 'a'}"),
                 "node 'a' is on a cycle", "'a' -> 'a'");
    /* A cycle behind a node that feeds the output: the walk starts at the
     * first unplaced node ('n', fed by the cycle) and names the cycle. */
    expect_error(rig,
                 DOC(SKIN_LBS ",{'id': 'n', 'type': 'normals'}," OUT
                              ",{'id': 'a', 'type': 'radial', 'bones': ['bone_0']},"
                              "{'id': 'b', 'type': 'radial', 'bones': ['bone_1']}",
                     SKIN_TO_OUT ", {'from': 'n', 'to': 'out', 'input': 'normals'},"
                                 "{'from': 'a', 'to': 'n'}, {'from': 'a', 'to': 'b'},"
                                 "{'from': 'b', 'to': 'a'}"),
                 "is on a cycle", "'a' -> 'b' -> 'a'");
    /* Nodes that do not reach the output. */
    expect_error(rig,
                 DOC(SKIN_LBS "," OUT ",{'id': 'n', 'type': 'normals'}",
                     SKIN_TO_OUT ", {'from': 'skin', 'to': 'n'}"),
                 "node 'n' does not reach the output node 'out'");
    expect_error(rig,
                 DOC(SKIN_LBS "," OUT ",{'id': 'dq', 'type': 'skinning', 'method': 'dqs'}",
                     SKIN_TO_OUT),
                 "node 'dq' does not reach the output");
}

/* ------------------------------------------------------------------------ */
/* Spring nodes: documents built at run time (maps have one entry per rig    */
/* vertex).                                                                  */
/* ------------------------------------------------------------------------ */

/* The surface map of the full spring document: (i % 5) / 4, exact floats. */
static double map_pattern(uint32_t i) { return (double)(i % 5) * 0.25; }
static double map_two(uint32_t i) { (void)i; return 2.0; }

/* "[v0, v1, ...]" of `count` values, entry `bad` (when < count) written as
 * `bad_text` instead. Caller frees. */
static char *number_list(uint32_t count, double (*value)(uint32_t), uint32_t bad,
                         const char *bad_text)
{
    size_t size = (size_t)count * 24 + strlen(bad_text) + 8, used = 0;
    char *text = malloc(size);
    assert_non_null(text);
    used += (size_t)snprintf(text, size, "[");
    for (uint32_t i = 0; i < count; ++i) {
        const char *sep = i ? ", " : "";
        if (i == bad)
            used += (size_t)snprintf(text + used, size - used, "%s%s", sep, bad_text);
        else
            used += (size_t)snprintf(text + used, size - used, "%s%g", sep, value(i));
    }
    snprintf(text + used, size - used, "]");
    return text;
}

/* SPRING_DOC with `fields` made at run time (quotes as '). Caller frees. */
static char *spring_doc(const char *fields)
{
    static const char head[] = "{'version': 1, 'nodes': [" SKIN_RIGID
                               ",{'id': 'relax', 'type': 'spring'";
    static const char tail[] = "}," OUT "], 'edges': [{'from': 'skin', 'to': 'relax'}, "
                               "{'from': 'relax', 'to': 'out'}]}";
    size_t size = sizeof head + strlen(fields) + sizeof tail;
    char *doc = malloc(size);
    assert_non_null(doc);
    snprintf(doc, size, "%s%s%s", head, fields, tail);
    return doc;
}

/* A spring node with every field away from its default: stiffness (torsion
 * 0), surface and bone maps, semi-implicit with damping, energy
 * convergence, frame-dependent mode, and two edits (offsets with keys, a
 * push with the edit defaults) on the last rig vertex. Caller frees. */
static char *full_spring_doc(uint32_t vertex_count)
{
    char *surface = number_list(vertex_count, map_pattern, UINT32_MAX, "");
    char *bone = number_list(vertex_count, map_two, UINT32_MAX, "");
    size_t size = strlen(surface) + strlen(bone) + 2048;
    char *fields = malloc(size);
    assert_non_null(fields);
    snprintf(fields, size,
             ", 'stiffness': {'surface': 2.5, 'length': 0.75, 'torsion': 0, 'bone': 1.25, "
             "'edit': 8}, 'stiffness_maps': {'bone': %s, 'surface': %s}, 'dt': 0.02, "
             "'integrator': 'semi_implicit', 'damping': 0.3, 'max_iterations': 200, "
             "'convergence': 'energy', 'threshold': 0.001, 'mode': 'frame_dependent', "
             "'edits': [{'kinematic': [5, 0, 17], 'offsets': [[0.1, 0, -0.2], [0, 0.05, 0], "
             "[0.001, 0.002, 0.003]], 'grow': 0, 'stiffness': 2.5, "
             "'keys': [[0, 0], [12.5, 1], [30, 0.25]]}, "
             "{'kinematic': [%u], 'push': -0.125}]",
             bone, surface, (unsigned)(vertex_count - 1));
    char *doc = spring_doc(fields);
    free(fields);
    free(bone);
    free(surface);
    return doc;
}

static void test_spring_errors(void **state)
{
    fixture *fx = *state;
    const ssk_rig *rig = fx->limb;
    uint32_t nv = ssk_rig_vertex_count(rig);
    /* Where spring nodes sit in the graph. */
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'spring'}," OUT,
                          SKIN_TO_OUT),
                 "node 'skin'", "field 'method'", "'spring' is a node type",
                 "lbs, dqs, rigid, irs or cor");
    expect_error(rig, DOC(SKIN_RIGID ",{'id': 'relax', 'type': 'spring'}," OUT, SKIN_TO_OUT),
                 "node 'relax' (spring): its positions input is not connected");
    expect_error(rig,
                 DOC(SKIN_RIGID ",{'id': 'n', 'type': 'normals'},{'id': 'relax', 'type': "
                                "'spring'}," OUT,
                     "{'from': 'skin', 'to': 'n'}, {'from': 'n', 'to': 'relax'}, "
                     "{'from': 'relax', 'to': 'out'}"),
                 "edge #1", "node 'n' (normals) outputs normals",
                 "cannot feed the positions input of node 'relax'");
    expect_error(rig,
                 DOC(SKIN_RIGID ",{'id': 'n', 'type': 'normals'},{'id': 'relax', 'type': "
                                "'spring'}," OUT,
                     "{'from': 'skin', 'to': 'relax'}, {'from': 'relax', 'to': 'out'}, "
                     "{'from': 'skin', 'to': 'n'}, {'from': 'n', 'to': 'relax', "
                     "'input': 'normals'}"),
                 "edge #3", "node 'relax' (spring) has no input 'normals'");
    expect_error(rig, SPRING_DOC(", 'amount': 1"), "node 'relax'", "unknown field 'amount'",
                 "node type 'spring'");
    expect_error(rig, DOC(SKIN_LBS ",{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], "
                                   "'dt': 0.1}," OUT,
                          "{'from': 'skin', 'to': 'r'}, {'from': 'r', 'to': 'out'}"),
                 "node 'r'", "unknown field 'dt'");
    /* Solver. */
    expect_error(rig, SPRING_DOC(", 'solver': 'gauss_seidel'"), "node 'relax'", "field 'solver'",
                 "unknown value 'gauss_seidel'", "jacobi, chebyshev, multilevel, multigrid or auto");
    expect_error(rig, SPRING_DOC(", 'solver': 'multilevel', 'integrator': 'semi_implicit'"),
                 "node 'relax': field 'solver': 'multilevel' needs the explicit integrator");
    expect_error(rig, SPRING_DOC(", 'solver': 'chebyshev', 'convergence': 'energy'"),
                 "node 'relax': field 'solver': 'chebyshev' needs the explicit integrator",
                 "use 'jacobi'");
    expect_error(rig, SPRING_DOC(", 'solver': 'jacobi', 'chebyshev_rho': 0.9"),
                 "node 'relax': field 'chebyshev_rho': 0.9 applies to solvers 'chebyshev' and 'multilevel'");
    expect_error(rig, SPRING_DOC(", 'solver': 'chebyshev', 'chebyshev_rho': 0"),
                 "node 'relax': field 'chebyshev_rho': solver 'chebyshev' needs a number in "
                 "(0, 1)");
    /* Stiffness. */
    expect_error(rig, SPRING_DOC(", 'stiffness': 3"), "node 'relax'", "field 'stiffness'",
                 "expected an object", "int");
    expect_error(rig, SPRING_DOC(", 'stiffness': {'shear': 1}"), "node 'relax'",
                 "field 'stiffness'", "unknown force 'shear'",
                 "surface, length, torsion, bone, edit, detail or twist");
    expect_error(rig, SPRING_DOC(", 'stiffness': {'surface': -1}"),
                 "node 'relax': field 'stiffness.surface': expected a number >= 0, got -1");
    expect_error(rig, SPRING_DOC(", 'stiffness': {'edit': '5'}"), "node 'relax'",
                 "field 'stiffness.edit'", "got string");
    expect_error(rig, SPRING_DOC(", 'stiffness': {'bone': NaN}"), "node 'relax'",
                 "field 'stiffness.bone'", "got nan");
    expect_error(rig, SPRING_DOC(", 'stiffness': {'torsion': 1e39}"), "node 'relax'",
                 "field 'stiffness.torsion'", "got 1e+39");
    /* Stiffness maps: one number >= 0 per rig vertex. */
    expect_error(rig, SPRING_DOC(", 'stiffness_maps': []"), "node 'relax'",
                 "field 'stiffness_maps'", "expected an object", "array");
    expect_error(rig, SPRING_DOC(", 'stiffness_maps': {'surface': null}"), "node 'relax'",
                 "field 'stiffness_maps.surface'", "got null");
    char count_text[64];
    snprintf(count_text, sizeof count_text, "expected an array of %u numbers", (unsigned)nv);
    expect_error(rig, SPRING_DOC(", 'stiffness_maps': {'length': [1, 2]}"), "node 'relax'",
                 "field 'stiffness_maps.length'", count_text, "got 2 entries");
    char *list = number_list(nv, map_pattern, 3, "-0.5");
    char fields[256];
    char *big = malloc(strlen(list) + 64);
    assert_non_null(big);
    sprintf(big, ", 'stiffness_maps': {'torsion': %s}", list);
    char *doc = spring_doc(big);
    expect_error(rig, doc, "node 'relax'", "field 'stiffness_maps.torsion'", "entry 3",
                 "expected a number >= 0, got -0.5");
    free(doc);
    sprintf(big, ", 'stiffness_maps': {'shear': %s}", list);
    doc = spring_doc(big);
    expect_error(rig, doc, "node 'relax'", "field 'stiffness_maps'", "unknown force 'shear'");
    free(doc);
    free(big);
    free(list);
    list = number_list(nv + 1, map_pattern, UINT32_MAX, "");
    big = malloc(strlen(list) + 64);
    assert_non_null(big);
    sprintf(big, ", 'stiffness_maps': {'edit': %s}", list);
    doc = spring_doc(big);
    snprintf(fields, sizeof fields, "got %u entries", (unsigned)(nv + 1));
    expect_error(rig, doc, "field 'stiffness_maps.edit'", count_text, fields);
    free(doc);
    free(big);
    free(list);
    /* Scalars and names. */
    expect_error(rig, SPRING_DOC(", 'dt': 0"), "node 'relax'", "field 'dt'", "> 0", "got 0");
    expect_error(rig, SPRING_DOC(", 'dt': -0.01"), "node 'relax'", "field 'dt'", "got -0.01");
    expect_error(rig, SPRING_DOC(", 'dt': 'fast'"), "node 'relax'", "field 'dt'",
                 "got string");
    expect_error(rig, SPRING_DOC(", 'integrator': 'implicit'"), "node 'relax'",
                 "field 'integrator'", "unknown value 'implicit'", "explicit or semi_implicit");
    expect_error(rig, SPRING_DOC(", 'integrator': 1"), "node 'relax'", "field 'integrator'",
                 "expected a string", "int");
    expect_error(rig, SPRING_DOC(", 'damping': 1"), "node 'relax'", "field 'damping'",
                 "in [0, 1)", "got 1");
    expect_error(rig, SPRING_DOC(", 'damping': -0.1"), "node 'relax'", "field 'damping'",
                 "got -0.1");
    expect_error(rig, SPRING_DOC(", 'max_iterations': 0"), "node 'relax'",
                 "field 'max_iterations'", "an integer in [1, 100000]", "got 0");
    expect_error(rig, SPRING_DOC(", 'max_iterations': 100001"), "node 'relax'",
                 "field 'max_iterations'", "got 100001");
    expect_error(rig, SPRING_DOC(", 'max_iterations': 2.5"), "field 'max_iterations'",
                 "got 2.5");
    expect_error(rig, SPRING_DOC(", 'max_iterations': 50.0"), "field 'max_iterations'",
                 "an integer");
    expect_error(rig, SPRING_DOC(", 'max_iterations': 99999999999999999999"),
                 "field 'max_iterations'");
    expect_error(rig, SPRING_DOC(", 'convergence': 'residual'"), "node 'relax'",
                 "field 'convergence'", "unknown value 'residual'",
                 "displacement, force, energy, iterations or relative");
    expect_error(rig, SPRING_DOC(", 'threshold': -1"), "node 'relax'", "field 'threshold'",
                 ">= 0", "got -1");
    expect_error(rig, SPRING_DOC(", 'mode': 'realtime'"), "node 'relax'", "field 'mode'",
                 "unknown value 'realtime'", "frame_independent or frame_dependent");
    /* Surface edits. */
    expect_error(rig, SPRING_DOC(", 'edits': {}"), "node 'relax'", "field 'edits'",
                 "expected an array", "object");
    expect_error(rig, SPRING_DOC(", 'edits': [3]"), "node 'relax'", "field 'edits[0]'",
                 "expected an object", "int");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [0], 'push': 1, 'radius': 2}]"),
                 "node 'relax'", "field 'edits[0]'", "unknown field 'radius'");
    expect_error(rig, SPRING_DOC(", 'edits': [{'push': 1}]"), "node 'relax'",
                 "field 'edits[0]'", "missing field 'kinematic'");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [], 'push': 1}]"), "node 'relax'",
                 "field 'edits[0].kinematic'", "empty array");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': 4, 'push': 1}]"),
                 "field 'edits[0].kinematic'", "int");
    snprintf(fields, sizeof fields, ", 'edits': [{'kinematic': [0, %u], 'push': 1}]",
             (unsigned)nv);
    doc = spring_doc(fields);
    char got[64], range[64];
    snprintf(got, sizeof got, "got %u", (unsigned)nv);
    snprintf(range, sizeof range, "[0, %u]", (unsigned)(nv - 1));
    expect_error(rig, doc, "node 'relax'", "field 'edits[0].kinematic'", "entry 1", range, got);
    free(doc);
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [-1], 'push': 1}]"),
                 "field 'edits[0].kinematic'", "entry 0", "got -1");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [1.5], 'push': 1}]"),
                 "field 'edits[0].kinematic'", "entry 0", "got 1.5");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2, 3, 2], 'push': 1}]"),
                 "node 'relax'", "field 'edits[0].kinematic'", "entry 2",
                 "vertex row 2 is listed twice");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2]}]"), "node 'relax'",
                 "field 'edits[0]'", "neither 'offsets' nor 'push'");
    expect_error(rig,
                 SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 1, 'offsets': [[0, 0, 1]]}]"),
                 "node 'relax'", "field 'edits[0]'", "both 'offsets' and 'push'");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2, 3], 'offsets': [[0, 0, 1]]}]"),
                 "node 'relax'", "field 'edits[0].offsets'", "expected an array of 2 [x, y, z]",
                 "got 1 entries");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2], 'offsets': [[0, 1]]}]"),
                 "field 'edits[0].offsets'", "entry 0", "three finite numbers");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2], 'offsets': [[0, 1, 'z']]}]"),
                 "field 'edits[0].offsets'", "entry 0");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 'out'}]"),
                 "node 'relax'", "field 'edits[0].push'", "finite number", "got string");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 1, 'grow': -1}]"),
                 "node 'relax'", "field 'edits[0].grow'", "[0, 1000]", "got -1");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 1, 'grow': 1001}]"),
                 "field 'edits[0].grow'", "got 1001");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 1, 'stiffness': -2}]"),
                 "node 'relax'", "field 'edits[0].stiffness'", ">= 0", "got -2");
    expect_error(rig, SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 1, 'keys': 1}]"),
                 "node 'relax'", "field 'edits[0].keys'", "[frame, weight]", "int");
    expect_error(rig,
                 SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 1, "
                            "'keys': [[0, 0], [0, 1]]}]"),
                 "node 'relax'", "field 'edits[0].keys'", "key 1", "strictly increase");
    expect_error(rig,
                 SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 1, 'keys': [[0, -1]]}]"),
                 "node 'relax'", "field 'edits[0].keys'", "key 0", "weight >= 0");
    /* The second edit is named by its index. */
    expect_error(rig,
                 SPRING_DOC(", 'edits': [{'kinematic': [2], 'push': 1}, "
                            "{'kinematic': [3], 'push': 1, 'grow': 2.0}]"),
                 "node 'relax'", "field 'edits[1].grow'", "an integer");
}

/* ------------------------------------------------------------------------ */
/* Valid graphs.                                                             */
/* ------------------------------------------------------------------------ */

/* Non-default values everywhere; nodes listed out of topological order. */
static const char *const FULL_GRAPH =
    "{'version': 1, 'nodes': ["
    "{'id': 'out', 'type': 'output'},"
    "{'id': 'shade', 'type': 'normals'},"
    "{'id': 'belly', 'type': 'radial', 'bones': ['bone_2', 'bone_0'], 'profile': 'sine_in_out',"
    " 'amount': -0.25, 'keys': [[-2, 0.5], [10.5, 2], [40, -1]]},"
    "{'id': 'arm', 'type': 'radial', 'bones': ['bone_1']},"
    "{'id': 'skin', 'type': 'skinning', 'method': 'irs', 'parent_influence': 0.25,"
    " 'child_influence': 0.75, 'length_adjust': false,"
    " 'joint_influences': {'bone_1': [0.3, 0.7], 'bone_2': [1, 0.125]}}],"
    "'edges': [{'from': 'belly', 'to': 'out', 'input': 'positions'},"
    "{'from': 'arm', 'to': 'belly'}, {'from': 'skin', 'to': 'arm'},"
    "{'from': 'shade', 'to': 'out', 'input': 'normals'}, {'from': 'belly', 'to': 'shade'}]}";

static void assert_spring_params_equal(const ssk_spring_params *x, const ssk_spring_params *y)
{
    assert_memory_equal(x->stiffness, y->stiffness, sizeof x->stiffness);
    assert_true(x->dt == y->dt);
    assert_int_equal(x->integrator, y->integrator);
    assert_true(x->damping == y->damping);
    assert_int_equal(x->max_iterations, y->max_iterations);
    assert_int_equal(x->convergence, y->convergence);
    assert_true(x->threshold == y->threshold);
    assert_int_equal(x->mode, y->mode);
    assert_int_equal(x->attachment, y->attachment);
}

/* Spring nodes: parameters, maps (and the params' pointers at the node's
 * own arrays), edits (and their pointers at the edit's own arrays). */
static void assert_spring_nodes_equal(uint32_t vertex_count, const ssk_graph_node *x,
                                      const ssk_graph_node *y)
{
    assert_spring_params_equal(&x->spring, &y->spring);
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) {
        assert_ptr_equal(x->spring.stiffness_maps[f], x->stiffness_maps[f]);
        assert_ptr_equal(y->spring.stiffness_maps[f], y->stiffness_maps[f]);
        assert_int_equal(x->stiffness_maps[f] == NULL, y->stiffness_maps[f] == NULL);
        if (x->stiffness_maps[f])
            assert_memory_equal(x->stiffness_maps[f], y->stiffness_maps[f],
                                vertex_count * sizeof(float));
    }
    assert_int_equal(x->edit_count, y->edit_count);
    for (uint32_t e = 0; e < x->edit_count; ++e) {
        const ssk_graph_edit *a = &x->edits[e], *b = &y->edits[e];
        assert_ptr_equal(a->edit.kinematic, a->kinematic);
        assert_ptr_equal(b->edit.kinematic, b->kinematic);
        assert_ptr_equal(a->edit.offsets, a->offsets);
        assert_ptr_equal(b->edit.offsets, b->offsets);
        assert_int_equal(a->edit.kinematic_count, b->edit.kinematic_count);
        assert_memory_equal(a->kinematic, b->kinematic,
                            a->edit.kinematic_count * sizeof(uint32_t));
        assert_int_equal(a->offsets == NULL, b->offsets == NULL);
        if (a->offsets)
            assert_memory_equal(a->offsets, b->offsets,
                                a->edit.kinematic_count * 3 * sizeof(float));
        else
            assert_true(a->edit.push == b->edit.push);
        assert_int_equal(a->edit.grow, b->edit.grow);
        assert_true(a->edit.stiffness == b->edit.stiffness);
        assert_int_equal(a->edit.key_count, b->edit.key_count);
        if (a->edit.key_count) {
            assert_ptr_equal(a->edit.keys, a->keys);
            assert_ptr_equal(b->edit.keys, b->keys);
            assert_memory_equal(a->keys, b->keys, a->edit.key_count * 2 * sizeof(float));
        }
    }
}

static void assert_graphs_equal(const ssk_graph *a, const ssk_graph *b)
{
    assert_int_equal(a->node_count, b->node_count);
    assert_int_equal(a->output_node, b->output_node);
    assert_int_equal(a->bone_count, b->bone_count);
    assert_int_equal(a->vertex_count, b->vertex_count);
    for (uint32_t k = 0; k < a->bone_count; ++k)
        assert_string_equal(a->bone_names[k], b->bone_names[k]);
    for (uint32_t i = 0; i < a->node_count; ++i) {
        const ssk_graph_node *x = &a->nodes[i], *y = &b->nodes[i];
        assert_int_equal(a->order[i], b->order[i]);
        assert_string_equal(x->id, y->id);
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->input_positions, y->input_positions);
        assert_int_equal(x->input_normals, y->input_normals);
        if (x->type == SSK_NODE_SKINNING) {
            assert_int_equal(x->method, y->method);
            assert_int_equal(x->attachment, y->attachment);
            assert_int_equal(x->joint_influences == NULL, y->joint_influences == NULL);
            if (x->joint_influences) {
                assert_int_equal(x->length_adjust, y->length_adjust);
                assert_true(x->parent_influence == y->parent_influence);
                assert_true(x->child_influence == y->child_influence);
                assert_memory_equal(x->joint_influences, y->joint_influences,
                                    a->bone_count * 2 * sizeof(float));
            }
        }
        if (x->type == SSK_NODE_RADIAL) {
            assert_memory_equal(x->bone_mask, y->bone_mask, a->bone_count);
            assert_int_equal(x->profile, y->profile);
            assert_true(x->amount == y->amount);
            assert_int_equal(x->key_count, y->key_count);
            if (x->key_count)
                assert_memory_equal(x->keys, y->keys, x->key_count * 2 * sizeof(float));
        }
        if (x->type == SSK_NODE_SPRING) assert_spring_nodes_equal(a->vertex_count, x, y);
        if (x->type == SSK_NODE_IMPLICIT) {
            const ssk_implicit_params *p = &x->implicit, *q = &y->implicit;
            assert_int_equal(p->iterations, q->iterations);
            assert_true(p->sigma == q->sigma && p->contact_angle == q->contact_angle &&
                        p->bulge == q->bulge);
            assert_int_equal(p->smoothing_iterations, q->smoothing_iterations);
            assert_int_equal(p->diffusion_iterations, q->diffusion_iterations);
            assert_int_equal(p->default_operator, q->default_operator);
            assert_int_equal(!x->joint_operators, !y->joint_operators);
            if (x->joint_operators)
                assert_memory_equal(x->joint_operators, y->joint_operators, a->bone_count);
        }
    }
}

static void test_parse_fields(void **state)
{
    fixture *fx = *state;
    ssk_graph *g = parse_ok(FULL_GRAPH, fx->limb);
    assert_int_equal(g->node_count, 5);
    assert_int_equal(g->bone_count, LIMB_BONES);
    assert_int_equal(g->output_node, 0);
    const ssk_graph_node *out = &g->nodes[0], *shade = &g->nodes[1], *belly = &g->nodes[2],
                         *arm = &g->nodes[3], *skin = &g->nodes[4];
    assert_string_equal(skin->id, "skin");
    assert_int_equal(skin->type, SSK_NODE_SKINNING);
    assert_int_equal(skin->method, SSK_METHOD_IRS);
    assert_int_equal(skin->length_adjust, 0);
    assert_non_null(skin->joint_influences);
    /* Defaults (0.25, 0.75) for bone_0; overrides for bone_1 and bone_2. */
    const float expected_joints[LIMB_BONES * 2] = {0.25f, 0.75f, 0.3f, 0.7f, 1.0f, 0.125f};
    assert_memory_equal(skin->joint_influences, expected_joints, sizeof expected_joints);
    assert_int_equal(arm->type, SSK_NODE_RADIAL);
    const uint8_t arm_mask[LIMB_BONES] = {0, 1, 0}, belly_mask[LIMB_BONES] = {1, 0, 1};
    assert_memory_equal(arm->bone_mask, arm_mask, LIMB_BONES);
    assert_memory_equal(belly->bone_mask, belly_mask, LIMB_BONES);
    assert_int_equal(arm->profile, SSK_RADIAL_BULGE);
    assert_true(arm->amount == 1.0f);
    assert_int_equal(arm->key_count, 0);
    assert_int_equal(belly->profile, SSK_RADIAL_SINE_IN_OUT);
    assert_true(belly->amount == -0.25f);
    assert_int_equal(belly->key_count, 3);
    const float expected_keys[6] = {-2.0f, 0.5f, 10.5f, 2.0f, 40.0f, -1.0f};
    assert_memory_equal(belly->keys, expected_keys, sizeof expected_keys);
    /* Inputs by node index: skin=4 -> arm=3 -> belly=2 -> out=0, belly -> shade=1. */
    assert_int_equal(skin->input_positions, -1);
    assert_int_equal(arm->input_positions, 4);
    assert_int_equal(belly->input_positions, 3);
    assert_int_equal(shade->input_positions, 2);
    assert_int_equal(out->input_positions, 2);
    assert_int_equal(out->input_normals, 1);
    assert_int_equal(arm->input_normals, -1);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    ssk_graph_destroy(g);
}

/* "attachment" of rigid and irs skinning nodes and of spring nodes: weights
 * by default, "binding" for the paper's one bone per vertex; written by
 * to_json and read back; other methods and values are errors. */
static void test_attachment_field(void **state)
{
    fixture *fx = *state;
    const ssk_rig *rig = fx->limb;
    ssk_graph *g = parse_ok(DOC(SKIN_IRS "," OUT, SKIN_TO_OUT), rig);
    assert_int_equal(g->nodes[0].attachment, SSK_ATTACHMENT_WEIGHTS);
    char *json = ssk_graph_to_json(g);
    assert_non_null(strstr(json, "\"attachment\": \"weights\""));
    free(json);
    ssk_graph_destroy(g);
    g = parse_ok(DOC("{'id': 'skin', 'type': 'skinning', 'method': 'rigid', 'attachment': "
                     "'binding'},{'id': 'relax', 'type': 'spring', 'attachment': 'binding'},"
                     OUT,
                     "{'from': 'skin', 'to': 'relax'}, {'from': 'relax', 'to': 'out'}"),
                 rig);
    assert_int_equal(g->nodes[0].attachment, SSK_ATTACHMENT_BINDING);
    assert_int_equal(g->nodes[1].spring.attachment, SSK_ATTACHMENT_BINDING);
    json = ssk_graph_to_json(g);
    ssk_graph *back = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_graph_parse(&back, json, rig, &err), SSK_OK);
    assert_graphs_equal(g, back);
    free(json);
    ssk_graph_destroy(back);
    ssk_graph_destroy(g);
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'lbs', 'attachment': "
                          "'weights'}," OUT, SKIN_TO_OUT),
                 "node 'skin'", "field 'attachment' applies to rigid and irs skinning only",
                 "'lbs'");
    expect_error(rig, DOC("{'id': 'skin', 'type': 'skinning', 'method': 'irs', 'attachment': "
                          "'bones'}," OUT, SKIN_TO_OUT),
                 "node 'skin'", "field 'attachment'", "\"weights\" or \"binding\"",
                 "bones");
    expect_error(rig, SPRING_DOC(", 'attachment': 3"), "node 'relax'", "'attachment'");
}

static void test_round_trip(void **state)
{
    fixture *fx = *state;
    ssk_graph *g = parse_ok(FULL_GRAPH, fx->limb);
    char *json = ssk_graph_to_json(g);
    assert_non_null(json);
    ssk_graph *back = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&back, json, fx->limb, &err) != SSK_OK)
        fail_msg("canonical JSON does not parse: %s\n%s", err.message, json);
    assert_graphs_equal(g, back);
    /* Canonical: serializing the parsed-back graph gives the same text. */
    char *again = ssk_graph_to_json(back);
    assert_non_null(again);
    assert_string_equal(json, again);
    /* Only the overridden joints are listed, defaults are explicit. */
    assert_non_null(strstr(json, "\"bone_1\": [ 0.3, 0.7 ]"));
    assert_non_null(strstr(json, "\"bone_2\": [ 1.0, 0.125 ]"));
    assert_non_null(strstr(json, "\"joint_influences\": { \"bone_1\""));
    assert_non_null(strstr(json, "\"length_adjust\": false"));
    free(again);
    free(json);
    ssk_graph_destroy(back);
    ssk_graph_destroy(g);

    /* A minimal document: every default is written out. */
    g = parse_ok(DOC(SKIN_IRS "," BULGE "," OUT,
                     "{'from': 'skin', 'to': 'bulge'}, {'from': 'bulge', 'to': 'out'}"),
                 fx->limb);
    json = ssk_graph_to_json(g);
    assert_non_null(json);
    const char *expected_parts[] = {
        "\"version\": 1",           "\"parent_influence\": 0.5", "\"child_influence\": 0.5",
        "\"length_adjust\": false", "\"joint_influences\": { }", "\"profile\": \"bulge\"",
        "\"amount\": 1.0",          "\"keys\": [ ]",             "\"input\": \"positions\""};
    for (size_t i = 0; i < sizeof expected_parts / sizeof expected_parts[0]; ++i)
        if (!strstr(json, expected_parts[i]))
            fail_msg("canonical JSON lacks %s:\n%s", expected_parts[i], json);
    assert_int_equal(ssk_graph_parse(&back, json, fx->limb, &err), SSK_OK);
    assert_graphs_equal(g, back);
    free(json);
    ssk_graph_destroy(back);
    ssk_graph_destroy(g);
}

static void test_copy(void **state)
{
    fixture *fx = *state;
    ssk_graph *g = parse_ok(FULL_GRAPH, fx->limb), *c = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_graph_copy(&c, g, &err), SSK_OK);
    assert_graphs_equal(g, c);
    assert_ptr_not_equal(c->nodes, g->nodes);
    assert_ptr_not_equal(c->nodes[4].joint_influences, g->nodes[4].joint_influences);
    assert_ptr_not_equal(c->nodes[2].keys, g->nodes[2].keys);
    ssk_graph_destroy(g); /* the copy owns its own arrays */
    assert_true(ssk_graph_node_amount(&c->nodes[2], 100.0) == -1.0f);
    assert_string_equal(c->bone_names[1], "bone_1");
    ssk_graph_destroy(c);
    assert_int_equal(ssk_graph_copy(&c, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
}

static void test_spring_fields(void **state)
{
    fixture *fx = *state;
    uint32_t nv = ssk_rig_vertex_count(fx->limb);
    char *doc = full_spring_doc(nv);
    ssk_graph *g = parse_ok(doc, fx->limb);
    free(doc);
    assert_int_equal(g->vertex_count, nv);
    assert_int_equal(g->node_count, 3);
    const ssk_graph_node *relax = &g->nodes[1];
    assert_string_equal(relax->id, "relax");
    assert_int_equal(relax->type, SSK_NODE_SPRING);
    assert_int_equal(relax->input_positions, 0);
    assert_int_equal(g->nodes[2].input_positions, 1);
    const ssk_spring_params *p = &relax->spring;
    const float stiffness[SSK_FORCE_COUNT] = {2.5f, 0.75f, 0.0f, 1.25f, 8.0f, 200.0f};
    assert_memory_equal(p->stiffness, stiffness, sizeof stiffness);
    assert_true(p->dt == 0.02f);
    assert_int_equal(p->integrator, SSK_SPRING_SEMI_IMPLICIT);
    assert_true(p->damping == 0.3f);
    assert_int_equal(p->max_iterations, 200);
    assert_int_equal(p->convergence, SSK_CONVERGE_ENERGY);
    assert_true(p->threshold == 0.001f);
    assert_int_equal(p->mode, SSK_SPRING_FRAME_DEPENDENT);
    /* Maps: surface (i % 5) / 4, bone 2, the others absent (1). */
    assert_non_null(relax->stiffness_maps[SSK_FORCE_SURFACE]);
    assert_non_null(relax->stiffness_maps[SSK_FORCE_BONE]);
    assert_null(relax->stiffness_maps[SSK_FORCE_LENGTH]);
    assert_null(relax->stiffness_maps[SSK_FORCE_TORSION]);
    assert_null(relax->stiffness_maps[SSK_FORCE_EDIT]);
    for (int f = 0; f < SSK_FORCE_COUNT; ++f)
        assert_ptr_equal(p->stiffness_maps[f], relax->stiffness_maps[f]);
    for (uint32_t i = 0; i < nv; ++i) {
        assert_true(relax->stiffness_maps[SSK_FORCE_SURFACE][i] == (float)(i % 5) * 0.25f);
        assert_true(relax->stiffness_maps[SSK_FORCE_BONE][i] == 2.0f);
    }
    /* Edit 0: offsets, grow 0, weight 2.5, three keys. */
    assert_int_equal(relax->edit_count, 2);
    const ssk_spring_edit *e0 = &relax->edits[0].edit, *e1 = &relax->edits[1].edit;
    const uint32_t rows0[3] = {5, 0, 17};
    assert_int_equal(e0->kinematic_count, 3);
    assert_memory_equal(e0->kinematic, rows0, sizeof rows0);
    const float offsets0[9] = {0.1f, 0.0f, -0.2f, 0.0f, 0.05f, 0.0f, 0.001f, 0.002f, 0.003f};
    assert_non_null(e0->offsets);
    assert_memory_equal(e0->offsets, offsets0, sizeof offsets0);
    assert_int_equal(e0->grow, 0);
    assert_true(e0->stiffness == 2.5f);
    const float keys0[6] = {0.0f, 0.0f, 12.5f, 1.0f, 30.0f, 0.25f};
    assert_int_equal(e0->key_count, 3);
    assert_memory_equal(e0->keys, keys0, sizeof keys0);
    assert_ptr_equal(e0->kinematic, relax->edits[0].kinematic);
    assert_ptr_equal(e0->offsets, relax->edits[0].offsets);
    assert_ptr_equal(e0->keys, relax->edits[0].keys);
    /* Edit 1: a push on the last vertex, the edit defaults (grow 4, weight
     * 1, no keys). */
    assert_int_equal(e1->kinematic_count, 1);
    assert_int_equal(e1->kinematic[0], nv - 1);
    assert_null(e1->offsets);
    assert_true(e1->push == -0.125f);
    assert_int_equal(e1->grow, DEFAULT_EDIT_GROW);
    assert_true(e1->stiffness == 1.0f);
    assert_int_equal(e1->key_count, 0);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    ssk_graph_destroy(g);

    /* Omitted fields: ssk_spring_params_default, which has the documented
     * values; a partial stiffness object changes only what it names. */
    g = parse_ok(SPRING_DOC(", 'stiffness': {'torsion': 4}"), fx->limb);
    ssk_spring_params defaults;
    ssk_spring_params_default(&defaults);
    const float documented[SSK_FORCE_COUNT] = {6.0f, 18.0f, 18.0f, 0.2f, 5.0f, 200.0f};
    assert_memory_equal(defaults.stiffness, documented, sizeof documented);
    assert_float_equal(defaults.dt, DEFAULT_DT, 1e-9);
    assert_float_equal(defaults.damping, DEFAULT_DAMPING, 1e-9);
    assert_int_equal(defaults.max_iterations, DEFAULT_MAX_ITERATIONS);
    assert_int_equal(defaults.integrator, SSK_SPRING_EXPLICIT);
    assert_int_equal(defaults.convergence, SSK_CONVERGE_RELATIVE);
    assert_int_equal(defaults.mode, SSK_SPRING_FRAME_INDEPENDENT);
    relax = &g->nodes[1];
    const float partial[SSK_FORCE_COUNT] = {6.0f, 18.0f, 4.0f, 0.2f, 5.0f, 200.0f};
    assert_memory_equal(relax->spring.stiffness, partial, sizeof partial);
    defaults.stiffness[SSK_FORCE_TORSION] = 4.0f;
    assert_spring_params_equal(&relax->spring, &defaults);
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) {
        assert_null(relax->stiffness_maps[f]);
        assert_null(relax->spring.stiffness_maps[f]);
    }
    assert_int_equal(relax->edit_count, 0);
    ssk_graph_destroy(g);

    /* A spring node needs the binding even after LBS skinning. */
    g = parse_ok(DOC(SKIN_LBS ",{'id': 'relax', 'type': 'spring'}," OUT,
                     "{'from': 'skin', 'to': 'relax'}, {'from': 'relax', 'to': 'out'}"),
                 fx->limb);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    ssk_graph_destroy(g);

    /* Springs chain with each other and with radial nodes; every name of
     * each enum is accepted. */
    g = parse_ok(DOC(SKIN_LBS ",{'id': 'a', 'type': 'spring', 'integrator': 'explicit', "
                     "'convergence': 'force', 'mode': 'frame_independent'},"
                     "{'id': 'r', 'type': 'radial', 'bones': ['bone_0']},"
                     "{'id': 'b', 'type': 'spring', 'convergence': 'iterations', "
                     "'edits': [], 'stiffness_maps': {}}," OUT,
                     "{'from': 'skin', 'to': 'a'}, {'from': 'a', 'to': 'r'}, "
                     "{'from': 'r', 'to': 'b'}, {'from': 'b', 'to': 'out'}"),
                 fx->limb);
    assert_int_equal(g->nodes[1].spring.convergence, SSK_CONVERGE_FORCE);
    assert_int_equal(g->nodes[3].spring.convergence, SSK_CONVERGE_ITERATIONS);
    assert_int_equal(g->nodes[3].input_positions, 2);
    assert_int_equal(g->nodes[2].input_positions, 1);
    const uint32_t order[5] = {0, 1, 2, 3, 4};
    assert_memory_equal(g->order, order, sizeof order);
    ssk_graph_destroy(g);
}


/* "solver": the default is the multilevel correction with the Chebyshev
 * blend (chebyshev_rho 0.96) where it applies; "chebyshev" alone takes
 * 0.99 by default; the plain update (jacobi,
 * chebyshev_rho 0, no correction) with the semi-implicit integrator or
 * the energy scheme; a given chebyshev_rho sets the blend of the default
 * solver (0: the correction on plain passes); the canonical JSON writes
 * both fields. */
static void test_spring_solver(void **state)
{
    fixture *fx = *state;
    static const struct {
        const char *fields;
        float rho;
        uint32_t multilevel;
        const char *written;
    } cases[] = {
        {", 'integrator': 'semi_implicit'", 0.0f, 0,
         "\"solver\": \"jacobi\", \"chebyshev_rho\": 0.0"},
        {", 'convergence': 'energy'", 0.0f, 0, "\"solver\": \"jacobi\""},
        {", 'solver': 'jacobi'", 0.0f, 0, "\"solver\": \"jacobi\""},
        {", 'solver': 'chebyshev', 'chebyshev_rho': 0.9", 0.9f, 0,
         "\"solver\": \"chebyshev\", \"chebyshev_rho\": 0.9"},
        {", 'solver': 'chebyshev'", 0.99f, 0, "\"solver\": \"chebyshev\", \"chebyshev_rho\": 0.99"},
        {", 'chebyshev_rho': 0.95", 0.95f, SSK_SPRING_SOLVER_AUTO,
         "\"solver\": \"auto\", \"chebyshev_rho\": 0.95"},
        {", 'chebyshev_rho': 0", 0.0f, SSK_SPRING_SOLVER_AUTO,
         "\"solver\": \"auto\", \"chebyshev_rho\": 0.0"},
        {"", 0.96f, SSK_SPRING_SOLVER_AUTO, "\"solver\": \"auto\", \"chebyshev_rho\": 0.96"},
        {", 'solver': 'auto'", 0.96f, SSK_SPRING_SOLVER_AUTO,
         "\"solver\": \"auto\", \"chebyshev_rho\": 0.96"},
        {", 'solver': 'multigrid'", 0.0f, SSK_SPRING_MULTIGRID,
         "\"solver\": \"multigrid\", \"chebyshev_rho\": 0.0"},
        {", 'solver': 'multilevel'", 0.96f, 1, "\"solver\": \"multilevel\", \"chebyshev_rho\": 0.96"},
        {", 'solver': 'multilevel', 'chebyshev_rho': 0.99", 0.99f, 1,
         "\"solver\": \"multilevel\", \"chebyshev_rho\": 0.99"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char doc[1024];
        snprintf(doc, sizeof doc,
                 "{'version': 1, 'nodes': [" SKIN_RIGID ",{'id': 'relax', 'type': 'spring'%s},"
                 OUT "], 'edges': [{'from': 'skin', 'to': 'relax'}, "
                 "{'from': 'relax', 'to': 'out'}]}",
                 cases[i].fields);
        ssk_graph *g = parse_ok(doc, fx->limb);
        if (g->nodes[1].spring.chebyshev_rho != cases[i].rho)
            fail_msg("%s: chebyshev_rho %g", cases[i].fields,
                     (double)g->nodes[1].spring.chebyshev_rho);
        if (g->nodes[1].spring.multilevel != cases[i].multilevel)
            fail_msg("%s: multilevel %u", cases[i].fields, g->nodes[1].spring.multilevel);
        char *json = ssk_graph_to_json(g);
        if (!strstr(json, cases[i].written))
            fail_msg("%s: the JSON lacks %s:\n%s", cases[i].fields, cases[i].written, json);
        ssk_graph *back = parse_ok(json, fx->limb);
        assert_graphs_equal(g, back);
        ssk_graph_destroy(back);
        free(json);
        ssk_graph_destroy(g);
    }
}

static void test_spring_round_trip(void **state)
{
    fixture *fx = *state;
    uint32_t nv = ssk_rig_vertex_count(fx->limb);
    char *doc = full_spring_doc(nv);
    ssk_graph *g = parse_ok(doc, fx->limb);
    free(doc);
    char *json = ssk_graph_to_json(g);
    assert_non_null(json);
    ssk_graph *back = NULL;
    ssk_error err = {0};
    if (ssk_graph_parse(&back, json, fx->limb, &err) != SSK_OK)
        fail_msg("canonical JSON does not parse: %s\n%s", err.message, json);
    assert_graphs_equal(g, back);
    char *again = ssk_graph_to_json(back);
    assert_non_null(again);
    assert_string_equal(json, again);
    const char *parts[] = {
        "\"stiffness\": { \"surface\": 2.5, \"length\": 0.75, \"torsion\": 0.0, \"bone\": 1.25, "
        "\"edit\": 8.0, \"detail\": 200.0, \"twist\": 0.0 }",
        "\"stiffness_maps\": { \"surface\": [ 0.0, 0.25, 0.5, 0.75, 1.0, 0.0,",
        "\"bone\": [ 2.0, 2.0,", "\"dt\": 0.02", "\"integrator\": \"semi_implicit\"",
        "\"damping\": 0.3", "\"max_iterations\": 200", "\"convergence\": \"energy\"",
        "\"threshold\": 0.001", "\"mode\": \"frame_dependent\"",
        "\"edits\": [ { \"kinematic\": [ 5, 0, 17 ], \"offsets\": [ [ 0.1, 0.0, -0.2 ], "
        "[ 0.0, 0.05, 0.0 ], [ 0.001, 0.002, 0.003 ] ], \"grow\": 0, \"stiffness\": 2.5, "
        "\"keys\": [ [ 0.0, 0.0 ], [ 12.5, 1.0 ], [ 30.0, 0.25 ] ] }",
        "\"push\": -0.125, \"grow\": 4, \"stiffness\": 1.0, \"keys\": [ ] }"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i)
        if (!strstr(json, parts[i])) fail_msg("canonical JSON lacks %s", parts[i]);
    /* Maps in force order (the document listed bone first). */
    assert_true(strstr(json, "\"surface\": [") < strstr(json, "\"bone\": ["));
    free(again);
    free(json);
    ssk_graph_destroy(back);
    ssk_graph_destroy(g);

    /* A minimal spring node: every default written out, empty maps and
     * edits included. */
    g = parse_ok(SPRING_DOC(""), fx->limb);
    json = ssk_graph_to_json(g);
    assert_non_null(json);
    const char *defaults[] = {
        "\"stiffness\": { \"surface\": 6.0, \"length\": 18.0, \"torsion\": 18.0, \"bone\": 0.2, "
        "\"edit\": 5.0, \"detail\": 200.0, \"twist\": 0.0 }",
        "\"stiffness_maps\": { }", "\"dt\": 0.0333333", "\"integrator\": \"explicit\"",
        "\"damping\": 0.1", "\"max_iterations\": 100", "\"convergence\": \"relative\"",
        "\"solver\": \"auto\", \"chebyshev_rho\": 0.96",
        "\"threshold\": 0.0", "\"mode\": \"frame_independent\"", "\"edits\": [ ]"};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; ++i)
        if (!strstr(json, defaults[i])) fail_msg("canonical JSON lacks %s:\n%s", defaults[i], json);
    assert_int_equal(ssk_graph_parse(&back, json, fx->limb, &err), SSK_OK);
    assert_graphs_equal(g, back);
    free(json);
    ssk_graph_destroy(back);
    ssk_graph_destroy(g);
}

static void test_spring_copy(void **state)
{
    fixture *fx = *state;
    uint32_t nv = ssk_rig_vertex_count(fx->limb);
    char *doc = full_spring_doc(nv);
    ssk_graph *g = parse_ok(doc, fx->limb), *c = NULL;
    free(doc);
    ssk_error err = {0};
    assert_int_equal(ssk_graph_copy(&c, g, &err), SSK_OK);
    assert_int_equal(c->vertex_count, nv);
    assert_graphs_equal(g, c);
    const ssk_graph_node *s = &g->nodes[1], *d = &c->nodes[1];
    assert_ptr_not_equal(d->stiffness_maps[SSK_FORCE_SURFACE],
                         s->stiffness_maps[SSK_FORCE_SURFACE]);
    assert_ptr_not_equal(d->stiffness_maps[SSK_FORCE_BONE], s->stiffness_maps[SSK_FORCE_BONE]);
    assert_ptr_not_equal(d->edits, s->edits);
    for (uint32_t e = 0; e < 2; ++e)
        assert_ptr_not_equal(d->edits[e].kinematic, s->edits[e].kinematic);
    assert_ptr_not_equal(d->edits[0].offsets, s->edits[0].offsets);
    assert_ptr_not_equal(d->edits[0].keys, s->edits[0].keys);
    ssk_graph_destroy(g); /* the copy owns its own arrays */
    assert_true(d->spring.stiffness_maps[SSK_FORCE_SURFACE][nv - 1] ==
                (float)((nv - 1) % 5) * 0.25f);
    assert_true(d->spring.stiffness_maps[SSK_FORCE_BONE][0] == 2.0f);
    assert_int_equal(d->edits[0].edit.kinematic[2], 17);
    assert_true(d->edits[0].edit.offsets[8] == 0.003f);
    assert_true(d->edits[0].edit.keys[4] == 30.0f);
    assert_int_equal(d->edits[1].edit.kinematic[0], nv - 1);
    /* A copy of the copy serializes as the copy does. */
    ssk_graph *c2 = NULL;
    assert_int_equal(ssk_graph_copy(&c2, c, &err), SSK_OK);
    char *j1 = ssk_graph_to_json(c), *j2 = ssk_graph_to_json(c2);
    assert_non_null(j1);
    assert_non_null(j2);
    assert_string_equal(j1, j2);
    free(j1);
    free(j2);
    ssk_graph_destroy(c2);
    ssk_graph_destroy(c);
}

/* Position of node `i` in the order. */
static uint32_t rank_of(const ssk_graph *g, uint32_t i)
{
    for (uint32_t k = 0; k < g->node_count; ++k)
        if (g->order[k] == i) return k;
    fail_msg("node %u missing from the order", (unsigned)i);
    return 0;
}

static void test_topological_order(void **state)
{
    fixture *fx = *state;
    ssk_graph *g = parse_ok(FULL_GRAPH, fx->limb);
    /* skin(4) -> arm(3) -> belly(2) -> shade(1) -> out(0), the only order. */
    const uint32_t expected[5] = {4, 3, 2, 1, 0};
    assert_memory_equal(g->order, expected, sizeof expected);
    for (uint32_t i = 0; i < g->node_count; ++i) {
        const ssk_graph_node *n = &g->nodes[i];
        if (n->input_positions >= 0) assert_true(rank_of(g, n->input_positions) < rank_of(g, i));
        if (n->input_normals >= 0) assert_true(rank_of(g, n->input_normals) < rank_of(g, i));
    }
    ssk_graph_destroy(g);

    /* Ties go by file order: after skin(2), both n(1) and r(3) are ready;
     * n comes first in the file. */
    g = parse_ok(DOC(OUT ",{'id': 'n', 'type': 'normals'}," SKIN_LBS
                     ",{'id': 'r', 'type': 'radial', 'bones': ['bone_0']}",
                     "{'from': 'r', 'to': 'out'}, {'from': 'skin', 'to': 'r'},"
                     "{'from': 'n', 'to': 'out', 'input': 'normals'},"
                     "{'from': 'skin', 'to': 'n'}"),
                 fx->limb);
    const uint32_t tie[4] = {2, 1, 3, 0};
    assert_memory_equal(g->order, tie, sizeof tie);
    ssk_graph_destroy(g);
}

static void test_amount_interpolation(void **state)
{
    fixture *fx = *state;
    ssk_graph *g = parse_ok(
        DOC(SKIN_LBS ",{'id': 'r', 'type': 'radial', 'bones': ['bone_0'], 'amount': 7,"
                     " 'keys': [[0, 0], [24, 1], [48, 0.5]]}," OUT,
            "{'from': 'skin', 'to': 'r'}, {'from': 'r', 'to': 'out'}"),
        fx->limb);
    const ssk_graph_node *r = &g->nodes[1];
    const double frames[] = {-5.0, 0.0, 6.0, 12.0, 24.0, 36.0, 45.0, 48.0, 100.0};
    /* By hand: 0 -> 1 over 0..24, 1 -> 0.5 over 24..48, clamped outside. */
    const float expected[] = {0.0f, 0.0f, 0.25f, 0.5f, 1.0f, 0.75f, 0.5625f, 0.5f, 0.5f};
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; ++i)
        assert_float_equal(ssk_graph_node_amount(r, frames[i]), expected[i], 1e-6);
    ssk_graph_destroy(g);

    /* Without keys: `amount` at every frame; one key: its value everywhere. */
    g = parse_ok(DOC(SKIN_LBS ",{'id': 'r', 'type': 'radial', 'bones': ['bone_0'],"
                              " 'amount': 0.8}," OUT,
                     "{'from': 'skin', 'to': 'r'}, {'from': 'r', 'to': 'out'}"),
                 fx->limb);
    assert_float_equal(ssk_graph_node_amount(&g->nodes[1], 0.0), 0.8, 1e-7);
    assert_float_equal(ssk_graph_node_amount(&g->nodes[1], 1234.5), 0.8, 1e-7);
    ssk_graph_destroy(g);
    g = parse_ok(DOC(SKIN_LBS ",{'id': 'r', 'type': 'radial', 'bones': ['bone_0'],"
                              " 'keys': [[10, 0.3]]}," OUT,
                     "{'from': 'skin', 'to': 'r'}, {'from': 'r', 'to': 'out'}"),
                 fx->limb);
    assert_float_equal(ssk_graph_node_amount(&g->nodes[1], 0.0), 0.3, 1e-7);
    assert_float_equal(ssk_graph_node_amount(&g->nodes[1], 10.0), 0.3, 1e-7);
    assert_float_equal(ssk_graph_node_amount(&g->nodes[1], 99.0), 0.3, 1e-7);
    ssk_graph_destroy(g);
}

static void test_from_method(void **state)
{
    fixture *fx = *state;
    /* The skinning methods: one skinning node (spring below). */
    const int needs[SSK_METHOD_COUNT] = {[SSK_METHOD_LBS] = 0, [SSK_METHOD_DQS] = 0,
                                         [SSK_METHOD_RIGID] = 1, [SSK_METHOD_IRS] = 1,
                                         [SSK_METHOD_COR] = 1};
    const char *const names[SSK_METHOD_COUNT] = {"lbs", "dqs", "rigid", "irs",
                                                 [SSK_METHOD_COR] = "cor"};
    for (int m = 0; m < SSK_METHOD_COUNT; ++m) {
        if (m == SSK_METHOD_SPRING || m == SSK_METHOD_IMPLICIT) continue;
        ssk_graph *g = NULL;
        ssk_error err = {0};
        assert_int_equal(ssk_graph_from_method(&g, (ssk_method)m, fx->limb, &err), SSK_OK);
        assert_int_equal(g->node_count, 2);
        assert_int_equal(g->output_node, 1);
        assert_string_equal(g->nodes[0].id, "skin");
        assert_string_equal(g->nodes[1].id, "out");
        assert_int_equal(g->nodes[0].type, SSK_NODE_SKINNING);
        assert_int_equal(g->nodes[0].method, m);
        assert_int_equal(g->nodes[1].type, SSK_NODE_OUTPUT);
        assert_int_equal(g->nodes[1].input_positions, 0);
        assert_int_equal(g->nodes[1].input_normals, -1);
        assert_int_equal(g->order[0], 0);
        assert_int_equal(g->order[1], 1);
        assert_int_equal(ssk_graph_needs_binding(g), needs[m]);
        if (m == SSK_METHOD_IRS) {
            assert_non_null(g->nodes[0].joint_influences);
            for (uint32_t k = 0; k < LIMB_BONES * 2; ++k)
                assert_true(g->nodes[0].joint_influences[k] == 0.5f);
            assert_int_equal(g->nodes[0].length_adjust, 0); /* optional, off by default */
        } else {
            assert_null(g->nodes[0].joint_influences);
        }
        /* The same graph as the document a user would write. */
        char doc[256];
        snprintf(doc, sizeof doc,
                 DOC("{'id': 'skin', 'type': 'skinning', 'method': '%s'}," OUT, SKIN_TO_OUT),
                 names[m]);
        ssk_graph *parsed = parse_ok(doc, fx->limb);
        assert_graphs_equal(g, parsed);
        char *json = ssk_graph_to_json(g);
        assert_non_null(json);
        ssk_graph *back = NULL;
        assert_int_equal(ssk_graph_parse(&back, json, fx->limb, &err), SSK_OK);
        assert_graphs_equal(g, back);
        free(json);
        ssk_graph_destroy(back);
        ssk_graph_destroy(parsed);
        ssk_graph_destroy(g);
    }
    ssk_graph *g = NULL;
    ssk_error err = {0};
    /* Spring: IRS skinning "skin" (its defaults) -> spring "relax" (the
     * defaults, no maps, no edits) -> "out". */
    assert_int_equal(ssk_graph_from_method(&g, SSK_METHOD_SPRING, fx->limb, &err), SSK_OK);
    assert_int_equal(g->node_count, 3);
    assert_int_equal(g->output_node, 2);
    assert_int_equal(g->vertex_count, ssk_rig_vertex_count(fx->limb));
    assert_string_equal(g->nodes[0].id, "skin");
    assert_string_equal(g->nodes[1].id, "relax");
    assert_string_equal(g->nodes[2].id, "out");
    assert_int_equal(g->nodes[0].type, SSK_NODE_SKINNING);
    assert_int_equal(g->nodes[0].method, SSK_METHOD_IRS);
    assert_non_null(g->nodes[0].joint_influences);
    assert_int_equal(g->nodes[1].type, SSK_NODE_SPRING);
    assert_int_equal(g->nodes[2].type, SSK_NODE_OUTPUT);
    assert_int_equal(g->nodes[0].input_positions, -1);
    assert_int_equal(g->nodes[1].input_positions, 0);
    assert_int_equal(g->nodes[2].input_positions, 1);
    assert_int_equal(g->nodes[2].input_normals, -1);
    const uint32_t order[3] = {0, 1, 2};
    assert_memory_equal(g->order, order, sizeof order);
    const float stiffness[SSK_FORCE_COUNT] = {6.0f, 18.0f, 18.0f, 0.2f, 5.0f, 200.0f};
    assert_memory_equal(g->nodes[1].spring.stiffness, stiffness, sizeof stiffness);
    assert_int_equal(g->nodes[1].spring.max_iterations, DEFAULT_MAX_ITERATIONS);
    assert_int_equal(g->nodes[1].spring.mode, SSK_SPRING_FRAME_INDEPENDENT);
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) assert_null(g->nodes[1].spring.stiffness_maps[f]);
    assert_int_equal(g->nodes[1].edit_count, 0);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    ssk_graph *parsed = parse_ok(DOC(SKIN_IRS ",{'id': 'relax', 'type': 'spring'}," OUT,
                                     "{'from': 'skin', 'to': 'relax'}, "
                                     "{'from': 'relax', 'to': 'out'}"),
                                 fx->limb);
    assert_graphs_equal(g, parsed);
    ssk_graph_destroy(parsed);
    char *json = ssk_graph_to_json(g);
    assert_non_null(json);
    assert_int_equal(ssk_graph_parse(&parsed, json, fx->limb, &err), SSK_OK);
    assert_graphs_equal(g, parsed);
    free(json);
    ssk_graph_destroy(parsed);
    ssk_graph_destroy(g);
    g = NULL;

    /* Implicit: DQS skinning "skin" -> implicit "implicit" (the defaults,
     * every joint the contact operator) -> "out" (Vaillant 2015, 4.6.2.1). */
    assert_int_equal(ssk_graph_from_method(&g, SSK_METHOD_IMPLICIT, fx->limb, &err), SSK_OK);
    assert_int_equal(g->node_count, 3);
    assert_int_equal(g->nodes[0].method, SSK_METHOD_DQS);
    assert_int_equal(g->nodes[1].type, SSK_NODE_IMPLICIT);
    assert_string_equal(g->nodes[1].id, "implicit");
    assert_int_equal(g->nodes[1].input_positions, 0);
    assert_int_equal(g->nodes[2].input_positions, 1);
    assert_null(g->nodes[1].joint_operators);
    assert_int_equal(g->nodes[1].implicit.iterations, 20);
    assert_true(g->nodes[1].implicit.sigma == 0.35f && g->nodes[1].implicit.contact_angle == 55.0f);
    assert_int_equal(ssk_graph_needs_binding(g), 0);
    parsed = parse_ok(DOC("{'id': 'skin', 'type': 'skinning', 'method': 'dqs'},"
                          "{'id': 'implicit', 'type': 'implicit'}," OUT,
                          "{'from': 'skin', 'to': 'implicit'}, "
                          "{'from': 'implicit', 'to': 'out'}"),
                      fx->limb);
    assert_graphs_equal(g, parsed);
    ssk_graph_destroy(parsed);
    ssk_graph_destroy(g);
    g = NULL;

    assert_int_equal(ssk_graph_from_method(&g, SSK_METHOD_COUNT, fx->limb, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_null(g);
    assert_int_equal(ssk_graph_from_method(&g, SSK_METHOD_LBS, NULL, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_graph_needs_binding(NULL), 0);
    assert_null(ssk_graph_to_json(NULL));
    /* A radial node needs the binding even after LBS skinning. */
    g = parse_ok(DOC(SKIN_LBS "," BULGE "," OUT,
                     "{'from': 'skin', 'to': 'bulge'}, {'from': 'bulge', 'to': 'out'}"),
                 fx->limb);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    ssk_graph_destroy(g);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static void test_load(void **state)
{
    fixture *fx = *state;
    char path[1024];
    snprintf(path, sizeof path, "%s/g.json", fx->dir);
    char *doc = q(DOC(SKIN_LBS "," OUT, SKIN_TO_OUT));
    write_text(path, doc);
    free(doc);
    ssk_graph *g = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_graph_load(&g, path, fx->limb, &err), SSK_OK);
    assert_int_equal(g->node_count, 2);
    assert_int_equal(g->nodes[0].method, SSK_METHOD_LBS);
    ssk_graph_destroy(g);

    /* Errors name the file. */
    write_text(path, "{\"version\": 1, \"nodes\": [{\"id\": \"x\", \"type\": \"cloth\"}], "
                     "\"edges\": []}");
    g = (ssk_graph *)(uintptr_t)1;
    assert_int_equal(ssk_graph_load(&g, path, fx->limb, &err), SSK_ERROR_GRAPH);
    assert_null(g);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "unknown node type 'cloth'"));
    assert_non_null(
        strstr(err.message, "skinning, radial, normals, output, spring, arap, implicit or cage"));
    snprintf(path, sizeof path, "%s/missing.json", fx->dir);
    assert_int_equal(ssk_graph_load(&g, path, fx->limb, &err), SSK_ERROR_IO);
    assert_non_null(strstr(err.message, "missing.json"));
    assert_int_equal(ssk_graph_load(&g, fx->dir, fx->limb, &err), SSK_ERROR_IO);
    assert_int_equal(ssk_graph_parse(&g, NULL, fx->limb, &err), SSK_ERROR_INVALID_ARGUMENT);
}

static void test_examples(void **state)
{
    fixture *fx = *state;
    ssk_error err = {0};
    ssk_graph *g = NULL;
    /* lbs.json is the --method lbs graph. */
    assert_int_equal(ssk_graph_load(&g, EXAMPLES_DIR "/lbs.json", fx->bcn, &err), SSK_OK);
    ssk_graph *m = NULL;
    assert_int_equal(ssk_graph_from_method(&m, SSK_METHOD_LBS, fx->bcn, &err), SSK_OK);
    assert_graphs_equal(g, m);
    assert_int_equal(ssk_graph_needs_binding(g), 0);
    ssk_graph_destroy(m);
    ssk_graph_destroy(g);

    /* irs.json: knee and forearm influences, normals. */
    if (ssk_graph_load(&g, EXAMPLES_DIR "/irs.json", fx->bcn, &err) != SSK_OK)
        fail_msg("%s", err.message);
    int32_t knee = ssk_rig_find_bone(fx->bcn, "B_Knee_Left");
    int32_t spine = ssk_rig_find_bone(fx->bcn, "B_Spine2");
    assert_true(knee >= 0 && spine >= 0);
    assert_int_equal(g->nodes[0].method, SSK_METHOD_IRS);
    assert_true(g->nodes[0].joint_influences[2 * knee] == 0.3f);
    assert_true(g->nodes[0].joint_influences[2 * knee + 1] == 0.7f);
    assert_true(g->nodes[0].joint_influences[2 * spine] == 0.5f);
    assert_true(g->nodes[g->output_node].input_normals >= 0);
    ssk_graph_destroy(g);

    /* irs_bulge.json: IRS, a keyed radial bulge on B_Spine2 and B_Spine3,
     * normals of the bulged mesh. */
    if (ssk_graph_load(&g, EXAMPLES_DIR "/irs_bulge.json", fx->bcn, &err) != SSK_OK)
        fail_msg("%s", err.message);
    int32_t spine3 = ssk_rig_find_bone(fx->bcn, "B_Spine3");
    assert_true(spine3 >= 0);
    const ssk_graph_node *out = &g->nodes[g->output_node];
    assert_true(out->input_positions >= 0 && out->input_normals >= 0);
    const ssk_graph_node *radial = &g->nodes[out->input_positions];
    assert_int_equal(radial->type, SSK_NODE_RADIAL);
    uint32_t selected = 0;
    for (uint32_t b = 0; b < g->bone_count; ++b) selected += radial->bone_mask[b];
    assert_int_equal(selected, 2);
    assert_int_equal(radial->bone_mask[spine], 1);
    assert_int_equal(radial->bone_mask[spine3], 1);
    assert_true(radial->key_count >= 2);
    assert_int_equal(g->nodes[out->input_normals].input_positions, out->input_positions);
    assert_int_equal(g->nodes[radial->input_positions].method, SSK_METHOD_IRS);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    /* Canonical JSON of a real rig round-trips too. */
    char *json = ssk_graph_to_json(g);
    assert_non_null(json);
    ssk_graph *back = NULL;
    assert_int_equal(ssk_graph_parse(&back, json, fx->bcn, &err), SSK_OK);
    assert_graphs_equal(g, back);
    free(json);
    ssk_graph_destroy(back);
    ssk_graph_destroy(g);

    /* spring.json is the --method spring graph. */
    if (ssk_graph_load(&g, EXAMPLES_DIR "/spring.json", fx->bcn, &err) != SSK_OK)
        fail_msg("%s", err.message);
    assert_int_equal(ssk_graph_from_method(&m, SSK_METHOD_SPRING, fx->bcn, &err), SSK_OK);
    assert_graphs_equal(g, m);
    ssk_graph_destroy(m);
    ssk_graph_destroy(g);

    /* spring_edit.json: IRS -> spring with a keyed push edit on belly
     * rows of the Torso mesh (the first mesh) -> normals. */
    if (ssk_graph_load(&g, EXAMPLES_DIR "/spring_edit.json", fx->bcn, &err) != SSK_OK)
        fail_msg("%s", err.message);
    ssk_mesh_view torso;
    assert_int_equal(ssk_rig_mesh(fx->bcn, 0, &torso, &err), SSK_OK);
    assert_string_equal(torso.name, "Torso");
    assert_int_equal(g->vertex_count, ssk_rig_vertex_count(fx->bcn));
    out = &g->nodes[g->output_node];
    assert_true(out->input_positions >= 0 && out->input_normals >= 0);
    const ssk_graph_node *relax = &g->nodes[out->input_positions];
    assert_int_equal(relax->type, SSK_NODE_SPRING);
    assert_int_equal(g->nodes[relax->input_positions].method, SSK_METHOD_IRS);
    assert_int_equal(g->nodes[out->input_normals].input_positions, out->input_positions);
    assert_int_equal(relax->edit_count, 1);
    const ssk_spring_edit *edit = &relax->edits[0].edit;
    assert_int_equal(edit->kinematic_count, 8);
    for (uint32_t k = 0; k < edit->kinematic_count; ++k)
        assert_true(edit->kinematic[k] >= torso.first_vertex &&
                    edit->kinematic[k] < torso.first_vertex + torso.vertex_count);
    assert_null(edit->offsets);
    assert_true(edit->push > 0.0f);
    /* Keys over the animation's frames 0..79: 0 at both ends, 1 at 20. */
    assert_int_equal(edit->key_count, 5);
    assert_true(edit->keys[0] == 0.0f && edit->keys[1] == 0.0f);
    assert_true(edit->keys[2] == 20.0f && edit->keys[3] == 1.0f);
    assert_true(edit->keys[8] == 79.0f && edit->keys[9] == 0.0f);
    assert_int_equal(ssk_graph_needs_binding(g), 1);
    json = ssk_graph_to_json(g);
    assert_non_null(json);
    assert_int_equal(ssk_graph_parse(&back, json, fx->bcn, &err), SSK_OK);
    assert_graphs_equal(g, back);
    free(json);
    ssk_graph_destroy(back);
    ssk_graph_destroy(g);
    /* Its rows are the rig's: the limb has fewer vertices. */
    assert_int_equal(ssk_graph_load(&g, EXAMPLES_DIR "/spring_edit.json", fx->limb, &err),
                     SSK_ERROR_GRAPH);
    assert_non_null(strstr(err.message, "field 'edits[0].kinematic'"));

    /* Bone names are the rig's: the limb has no B_Spine2. */
    assert_int_equal(ssk_graph_load(&g, EXAMPLES_DIR "/irs_bulge.json", fx->limb, &err),
                     SSK_ERROR_GRAPH);
    assert_non_null(strstr(err.message, "unknown bone 'B_Spine2'"));
}

/* ------------------------------------------------------------------------ */
/* The CLI: bake --graph.                                                    */
/* ------------------------------------------------------------------------ */

/* Runs the CLI with `args` (NULL-terminated, argv[0] excluded), stdout and
 * stderr to /dev/null; returns the exit status. */
static int run_cli(const char *const *args)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *argv[32];
        size_t n = 0;
        argv[n++] = SSK_CLI_PATH;
        for (const char *const *a = args; *a && n + 1 < sizeof argv / sizeof argv[0]; ++a)
            argv[n++] = *a;
        argv[n] = NULL;
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        execv(SSK_CLI_PATH, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* The positions of a .pc2 file: frames x vertices x 3 floats. */
static float *read_pc2(const char *path, uint32_t *vertices, uint32_t *samples)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char header[PC2_HEADER_BYTES];
    assert_int_equal(fread(header, 1, sizeof header, f), sizeof header);
    assert_memory_equal(header, "POINTCACHE2", 12);
    memcpy(vertices, header + 16, 4); /* little-endian hosts (x86, arm) */
    memcpy(samples, header + 28, 4);
    size_t count = (size_t)*vertices * *samples * 3;
    float *data = malloc(count * sizeof *data + 1);
    assert_non_null(data);
    assert_int_equal(fread(data, sizeof *data, count, f), count);
    fclose(f);
    return data;
}

static void test_cli_bake_graph(void **state)
{
    fixture *fx = *state;
    char lbs_method[1024], lbs_graph[1024], irs[1024], bulge[1024];
    snprintf(lbs_method, sizeof lbs_method, "%s/lbs_method.pc2", fx->dir);
    snprintf(lbs_graph, sizeof lbs_graph, "%s/lbs_graph.pc2", fx->dir);
    snprintf(irs, sizeof irs, "%s/irs.pc2", fx->dir);
    snprintf(bulge, sizeof bulge, "%s/bulge.pc2", fx->dir);
    const char *a1[] = {"bake", MODEL_PATH, "-o", lbs_method, "--method", "lbs",
                        "--frames", CLI_FRAMES, "--backend", "cpu", NULL};
    const char *a2[] = {"bake", MODEL_PATH, "-o", lbs_graph, "--graph",
                        EXAMPLES_DIR "/lbs.json", "--frames", CLI_FRAMES, "--backend", "cpu",
                        NULL};
    const char *a3[] = {"bake", MODEL_PATH, "-o", irs, "--method", "irs",
                        "--frames", CLI_FRAMES, "--backend", "cpu", NULL};
    const char *a4[] = {"bake", MODEL_PATH, "-o", bulge, "--graph",
                        EXAMPLES_DIR "/irs_bulge.json", "--frames", CLI_FRAMES, "--backend",
                        "cpu", NULL};
    assert_int_equal(run_cli(a1), 0);
    assert_int_equal(run_cli(a2), 0);
    assert_int_equal(run_cli(a3), 0);
    assert_int_equal(run_cli(a4), 0);
    uint32_t v[4], s[4];
    float *p_lbs_method = read_pc2(lbs_method, &v[0], &s[0]);
    float *p_lbs_graph = read_pc2(lbs_graph, &v[1], &s[1]);
    float *p_irs = read_pc2(irs, &v[2], &s[2]);
    float *p_bulge = read_pc2(bulge, &v[3], &s[3]);
    uint32_t rig_vertices = ssk_rig_vertex_count(fx->bcn);
    for (int k = 0; k < 4; ++k) {
        assert_int_equal(v[k], rig_vertices);
        assert_int_equal(s[k], CLI_FRAME_COUNT);
    }
    size_t floats = (size_t)rig_vertices * CLI_FRAME_COUNT * 3;
    /* The LBS graph is exactly --method lbs. */
    assert_memory_equal(p_lbs_method, p_lbs_graph, floats * sizeof(float));
    /* The bulge graph is finite and moves the spine off plain IRS (its
     * amount is 0 at frame 0, 1.5 at frame 20). */
    for (size_t i = 0; i < floats; ++i) assert_true(isfinite(p_bulge[i]));
    double diagonal = tu_bbox_diagonal(p_irs, rig_vertices);
    size_t frame20 = (size_t)20 * rig_vertices * 3;
    double at20 = tu_max_abs_diff(p_irs + frame20, p_bulge + frame20, (size_t)rig_vertices * 3);
    double at0 = tu_max_abs_diff(p_irs, p_bulge, (size_t)rig_vertices * 3);
    assert_true(at20 > BULGE_MIN_EFFECT_FRACTION * diagonal);
    assert_true(at0 < 1e-6 * diagonal);
    free(p_bulge);
    free(p_lbs_graph);
    free(p_lbs_method);

    /* --binding: bound and saved when the file is missing, loaded after;
     * the same positions as binding inside the bake. */
    char binding[1024], irs_bound[1024];
    snprintf(binding, sizeof binding, "%s/bcn.bind", fx->dir);
    snprintf(irs_bound, sizeof irs_bound, "%s/irs_bound.pc2", fx->dir);
    const char *a7[] = {"bake", MODEL_PATH, "-o", irs_bound, "--method", "irs", "--binding",
                        binding, "--frames", CLI_FRAMES, "--backend", "cpu", NULL};
    struct stat st;
    assert_int_equal(stat(binding, &st), -1);
    assert_int_equal(run_cli(a7), 0);
    assert_int_equal(stat(binding, &st), 0);
    assert_int_equal(run_cli(a7), 0);
    float *p_irs_bound = read_pc2(irs_bound, &v[0], &s[0]);
    assert_int_equal(s[0], CLI_FRAME_COUNT);
    assert_memory_equal(p_irs_bound, p_irs, floats * sizeof(float));
    free(p_irs_bound);

    /* Graph errors are runtime errors (exit 1) and leave no file; a graph
     * and a method at once is a usage error. */
    char bad[1024], out[1024];
    snprintf(bad, sizeof bad, "%s/bad.json", fx->dir);
    snprintf(out, sizeof out, "%s/bad.pc2", fx->dir);
    write_text(bad, "{\"version\": 1, \"nodes\": [], \"edges\": []}");
    const char *a5[] = {"bake", MODEL_PATH, "-o", out, "--graph", bad, NULL};
    assert_int_equal(run_cli(a5), 1);
    assert_int_equal(stat(out, &st), -1);
    const char *a6[] = {"bake", MODEL_PATH, "-o", out, "--graph", EXAMPLES_DIR "/lbs.json",
                        "--method", "dqs", NULL};
    assert_int_equal(run_cli(a6), 2);
    free(p_irs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_syntax_errors),
        cmocka_unit_test(test_attachment_field),
        cmocka_unit_test(test_document_errors),
        cmocka_unit_test(test_node_field_errors),
        cmocka_unit_test(test_edge_errors),
        cmocka_unit_test(test_structure_errors),
        cmocka_unit_test(test_spring_errors),
        cmocka_unit_test(test_parse_fields),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_spring_fields),
        cmocka_unit_test(test_spring_round_trip),
        cmocka_unit_test(test_spring_solver),
        cmocka_unit_test(test_spring_copy),
        cmocka_unit_test(test_topological_order),
        cmocka_unit_test(test_amount_interpolation),
        cmocka_unit_test(test_from_method),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_cli_bake_graph),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
