/*
 * check.c — what a rigger runs on a file before trusting a bake
 * (ssk_scene_check, `springskin check`): the node transforms that matter,
 * the welded seams, weights, bones and influences as imported, then every
 * method run on a few frames and judged against LBS. Each finding is one
 * item with a level (ok, warning, error), a topic and a one-line message
 * whose numbers are rounded so that the report is stable enough to diff.
 */
#include "model/scene.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A scale counts as non-unit / non-uniform beyond this relative amount. */
#define SSK_CHECK_SCALE_EPSILON 1e-4
/* Matrix entries that differ by less than this (relative to 1) are equal. */
#define SSK_CHECK_MATRIX_EPSILON 1e-5
/* Skin weights of coincident vertices that differ by more than this are
 * different. */
#define SSK_CHECK_WEIGHT_EPSILON 1e-4
/* A method whose bounding box diagonal exceeds LBS's by this factor at a
 * frame has exploded (the conformance bound of the issue tracker). */
#define SSK_CHECK_BBOX_RATIO 1.5
/* Coincident vertices farther apart than this fraction of the diagonal
 * after deformation are torn. */
#define SSK_CHECK_TEAR_FRACTION 1e-6
/* At most this many names in one message. */
#define SSK_CHECK_MAX_NAMES 6

static const ssk_method check_methods[] = {SSK_METHOD_LBS,   SSK_METHOD_DQS,    SSK_METHOD_RIGID,
                                           SSK_METHOD_IRS,   SSK_METHOD_SPRING, SSK_METHOD_COR,
                                           SSK_METHOD_IMPLICIT};
#define CHECK_METHOD_COUNT (sizeof check_methods / sizeof check_methods[0])

void ssk_check_desc_default(ssk_check_desc *out)
{
    memset(out, 0, sizeof *out);
    out->fps = 24.0;
    out->animation = 0;
    out->frame_count = 5;
    out->backend = SSK_BACKEND_CPU;
}

void ssk_check_report_destroy(ssk_check_report *report)
{
    if (!report) return;
    free(report->items);
    free(report);
}

static bool add(ssk_check_report *r, ssk_check_level level, const char *topic, const char *fmt, ...)
    SSK_PRINTF(4, 5);

static bool add(ssk_check_report *r, ssk_check_level level, const char *topic, const char *fmt, ...)
{
    ssk_check_item *items = realloc(r->items, (r->item_count + 1) * sizeof *items);
    if (!items) return false;
    r->items = items;
    ssk_check_item *it = &items[r->item_count++];
    it->level = level;
    snprintf(it->topic, sizeof it->topic, "%s", topic);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->message, sizeof it->message, fmt, ap);
    va_end(ap);
    if (level == SSK_CHECK_ERROR) r->error_count++;
    if (level == SSK_CHECK_WARNING) r->warning_count++;
    return true;
}

/* Appends `name` to a list of at most SSK_CHECK_MAX_NAMES names in buf. */
static void list_name(char *buf, size_t size, uint32_t *listed, const char *fmt, ...)
    SSK_PRINTF(4, 5);

static void list_name(char *buf, size_t size, uint32_t *listed, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (*listed == SSK_CHECK_MAX_NAMES && len + 6 < size) strcat(buf, ", ...");
    if (*listed >= SSK_CHECK_MAX_NAMES) {
        ++*listed;
        return;
    }
    if (*listed && len + 2 < size) {
        strcat(buf, ", ");
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
    ++*listed;
}

/* Column lengths (scales) of a row-major matrix's 3x3 part. */
static void scales_of(double s[3], const double m[16])
{
    for (int c = 0; c < 3; ++c)
        s[c] = sqrt(m[c] * m[c] + m[4 + c] * m[4 + c] + m[8 + c] * m[8 + c]);
}

static bool nonuniform(const double s[3])
{
    double lo = fmin(s[0], fmin(s[1], s[2])), hi = fmax(s[0], fmax(s[1], s[2]));
    return hi - lo > SSK_CHECK_SCALE_EPSILON * hi;
}

/* Angle (degrees) and unit axis of the rotation of an orthogonal-up-to-
 * scale 3x3 part (axis (0, 0, 0) for no rotation; the angle of a half turn
 * has no sign). */
static double rotation_degrees(double axis[3], const double m[16], const double s[3])
{
    double r[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r[3 * i + j] = s[j] > 0.0 ? m[4 * i + j] / s[j] : 0.0;
    double c = fmax(-1.0, fmin(1.0, 0.5 * (r[0] + r[4] + r[8] - 1.0)));
    double a[3] = {r[7] - r[5], r[2] - r[6], r[3] - r[1]};
    double len = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    for (int k = 0; k < 3; ++k) axis[k] = len > SSK_CHECK_MATRIX_EPSILON ? a[k] / len : 0.0;
    return acos(c) * 180.0 / 3.14159265358979323846;
}

static ssk_status check_space(const ssk_scene *sc, ssk_check_report *r)
{
    bool ok = true;
    const int32_t a = sc->armature_node;
    if (a < 0) {
        ok = add(r, SSK_CHECK_OK, "space",
                 "rig space is the file's root space (no node above the bones)");
    } else {
        double s[3], axis[3];
        scales_of(s, sc->rig_to_scene);
        double deg = rotation_degrees(axis, sc->rig_to_scene, s);
        /* +0.0: no "-0" in the report */
        for (int k = 0; k < 3; ++k) axis[k] = round(axis[k] * 1000.0) / 1000.0 + 0.0;
        char scale[64];
        if (nonuniform(s)) snprintf(scale, sizeof scale, "non-uniform scale %.4g %.4g %.4g",
                                    s[0], s[1], s[2]);
        else snprintf(scale, sizeof scale, "scale %.4g", s[0]);
        ok = add(r, SSK_CHECK_OK, "space",
                 "rig space is armature node '%s' (%s, rotation %.1f deg about (%.3g, %.3g, "
                 "%.3g)): skinning blends there, as Blender does",
                 sc->nodes[a].name, scale, deg, axis[0], axis[1], axis[2]);
    }
    if (ok && sc->skinned_nodes_ignored)
        ok = add(r, SSK_CHECK_OK, "nodes",
                 "the transforms of the nodes holding skinned meshes are ignored, as this "
                 "format (glTF, DirectX .x) wants: the bones place the vertices, which live "
                 "in the file's root space");
    /* Non-uniform static scales on the nodes between the armature and the
     * bones: DQS and CoR then blend a scale matrix (Blender's rule). */
    char names[256] = "";
    uint32_t listed = 0;
    for (uint32_t b = 0; ok && b < sc->rig->bone_count; ++b) {
        for (int32_t n = sc->bone_nodes[b]; n >= 0 && n != a; n = sc->nodes[n].parent) {
            if (!nonuniform(sc->nodes[n].scale)) continue;
            list_name(names, sizeof names, &listed, "%s", sc->nodes[n].name);
            break;
        }
    }
    if (ok && listed)
        ok = add(r, SSK_CHECK_WARNING, "nodes",
                 "%u bone(s) have a non-uniform scale in their bind hierarchy (%s): DQS and CoR "
                 "blend it with a separate scale matrix (Blender's rule), which is not rigid",
                 listed, names);
    /* Meshes whose object matrix (object -> armature) scales non-uniformly:
     * the blend happens in the armature's space, as in Blender. */
    names[0] = '\0';
    listed = 0;
    for (uint32_t m = 0; ok && m < sc->rig->mesh_count; ++m) {
        double om[16], ms[3];
        for (int k = 0; k < 16; ++k) om[k] = sc->rig->meshes[m].object_matrix[k];
        scales_of(ms, om);
        if (nonuniform(ms))
            list_name(names, sizeof names, &listed, "%s: %.4g %.4g %.4g", sc->rig->meshes[m].name,
                      ms[0], ms[1], ms[2]);
    }
    if (ok && listed)
        ok = add(r, SSK_CHECK_OK, "nodes",
                 "%u mesh(es) scale non-uniformly relative to the armature (%s): skinning "
                 "blends in the armature's space, as Blender does",
                 listed, names);
    return ok ? SSK_OK : SSK_ERROR_OUT_OF_MEMORY;
}

/* Meshes whose object matrix (object -> rig) changes over the checked
 * frames: their node moves relative to the armature. */
static ssk_status check_mesh_motion(const ssk_scene *sc, const float *objects_rest,
                                   const float *objects, uint32_t frame_count,
                                   ssk_check_report *r)
{
    const ssk_rig *rig = sc->rig;
    char names[256] = "";
    uint32_t listed = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        bool moves = false;
        for (uint32_t f = 0; f < frame_count && !moves; ++f)
            for (int k = 0; k < 16 && !moves; ++k) {
                double x = objects[(f * rig->mesh_count + m) * 16 + k];
                double y = objects_rest[16 * m + k];
                moves = fabs(x - y) > SSK_CHECK_MATRIX_EPSILON * fmax(1.0, fabs(y));
            }
        if (moves) list_name(names, sizeof names, &listed, "%s", rig->meshes[m].name);
    }
    bool ok = true;
    if (listed)
        ok = add(r, SSK_CHECK_WARNING, "nodes",
                 "%u mesh node(s) move relative to the armature in the animation (%s): "
                 "positions follow the bones (Assimp's skinning matrices) and are written in "
                 "the mesh's object space at each frame",
                 listed, names);
    else
        ok = add(r, SSK_CHECK_OK, "nodes", "no mesh node moves relative to the armature");
    return ok ? SSK_OK : SSK_ERROR_OUT_OF_MEMORY;
}

/* Whether two vertices (whole-rig rows) have the same skin weights. */
static bool same_weights(const ssk_rig *rig, const uint32_t *mesh_of, uint32_t a, uint32_t b)
{
    const ssk_mesh *ma = &rig->meshes[mesh_of[a]], *mb = &rig->meshes[mesh_of[b]];
    const uint32_t la = a - ma->first_vertex, lb = b - mb->first_vertex;
    /* Every non-zero influence of one must be matched by the other. */
    for (int pass = 0; pass < 2; ++pass) {
        const ssk_mesh *m1 = pass ? mb : ma, *m2 = pass ? ma : mb;
        const uint32_t l1 = pass ? lb : la, l2 = pass ? la : lb;
        for (uint32_t i = 0; i < m1->influence_count; ++i) {
            float w1 = m1->weights[(size_t)l1 * m1->influence_count + i];
            if (w1 == 0.0f) continue;
            int32_t bone = m1->bone_indices[(size_t)l1 * m1->influence_count + i];
            float w2 = 0.0f;
            for (uint32_t j = 0; j < m2->influence_count; ++j)
                if (m2->bone_indices[(size_t)l2 * m2->influence_count + j] == bone)
                    w2 += m2->weights[(size_t)l2 * m2->influence_count + j];
            if (fabsf(w1 - w2) > SSK_CHECK_WEIGHT_EPSILON) return false;
        }
    }
    return true;
}

/* A copy: the same mesh, the same rest position and the same weights. */
static bool is_copy(const ssk_rig *rig, const uint32_t *mesh_of, uint32_t a, uint32_t b)
{
    if (mesh_of[a] != mesh_of[b]) return false;
    const ssk_mesh *m = &rig->meshes[mesh_of[a]];
    const float *pa = m->positions + 3 * (size_t)(a - m->first_vertex);
    const float *pb = m->positions + 3 * (size_t)(b - m->first_vertex);
    return pa[0] == pb[0] && pa[1] == pb[1] && pa[2] == pb[2] && same_weights(rig, mesh_of, a, b);
}

static ssk_status check_topology(const ssk_scene *sc, const uint32_t *mesh_of,
                                 ssk_check_report *r)
{
    const ssk_rig *rig = sc->rig;
    const ssk_weld *w = &rig->weld;
    bool ok = add(r, SSK_CHECK_OK, "seams",
                  "%u group(s) of coincident vertices welded (%u vertices joined to another, "
                  "%u group(s) across meshes); %u coincident pair(s) keep separate normals "
                  "(hard edges of the source)",
                  w->group_count, w->member_count, w->across_mesh_group_count,
                  w->hard_edge_pair_count);
    uint32_t differ = 0;
    for (uint32_t i = 0; i < w->member_count; ++i)
        differ += !same_weights(rig, mesh_of, w->members[i], w->point[w->members[i]]);
    if (ok && differ)
        ok = add(r, SSK_CHECK_WARNING, "seams",
                 "%u coincident vertex(es) have other skin weights than the vertex they are "
                 "welded to: LBS and DQS separate them there, as Blender's Armature modifier "
                 "does; the other methods keep them together",
                 differ);
    return ok ? SSK_OK : SSK_ERROR_OUT_OF_MEMORY;
}

static ssk_status check_weights_and_bones(const ssk_scene *sc, ssk_check_report *r)
{
    const ssk_rig *rig = sc->rig;
    bool ok = true;
    char names[256] = "";
    uint32_t listed = 0, total = 0;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        uint32_t none = 0;
        for (uint32_t v = 0; v < mesh->vertex_count; ++v) {
            bool any = false;
            for (uint32_t i = 0; i < mesh->influence_count && !any; ++i)
                any = mesh->weights[(size_t)v * mesh->influence_count + i] > 0.0f;
            none += !any;
        }
        if (none) list_name(names, sizeof names, &listed, "%s: %u", mesh->name, none);
        total += none;
    }
    if (total)
        ok = add(r, SSK_CHECK_WARNING, "weights",
                 "%u vertex(es) have no skin weight and stay at rest (%s)", total, names);
    else
        ok = add(r, SSK_CHECK_OK, "weights", "every vertex has skin weights");

    names[0] = '\0';
    listed = 0;
    uint32_t dropped_vertices = 0;
    for (uint32_t b = 0; ok && b < rig->bone_count; ++b) {
        if (sc->bone_nodes[b] >= 0) continue;
        uint32_t d = sc->nodeless_dropped ? sc->nodeless_dropped[b] : 0;
        dropped_vertices += d;
        list_name(names, sizeof names, &listed, "%s (%u vertices)", rig->bones[b].name, d);
    }
    if (ok && listed)
        ok = add(r, SSK_CHECK_WARNING, "bones",
                 "%u bone(s) have no node in the scene; their influences (on %u vertex "
                 "weight(s)) were dropped and the other weights renormalized, as Blender "
                 "ignores a vertex group without a bone: %s",
                 listed, dropped_vertices, names);

    names[0] = '\0';
    listed = 0;
    uint8_t *used = calloc((size_t)rig->bone_count + 1, 1);
    if (!used) return SSK_ERROR_OUT_OF_MEMORY;
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (size_t i = 0; i < (size_t)mesh->vertex_count * mesh->influence_count; ++i)
            if (mesh->weights[i] > 0.0f) used[mesh->bone_indices[i]] = 1;
    }
    for (uint32_t b = 0; b < rig->bone_count; ++b)
        if (!used[b] && sc->bone_nodes[b] >= 0)
            list_name(names, sizeof names, &listed, "%s", rig->bones[b].name);
    free(used);
    if (ok)
        ok = listed ? add(r, SSK_CHECK_OK, "bones",
                          "%u bone(s), %u deforming; %u with a node weight no vertex (%s)",
                          rig->bone_count, rig->deforming_bone_count, listed, names)
                    : add(r, SSK_CHECK_OK, "bones", "%u bone(s), %u deforming",
                          rig->bone_count, rig->deforming_bone_count);

    if (ok && sc->capped_vertex_count)
        ok = add(r, SSK_CHECK_WARNING, "influences",
                 "%u vertex(es) have more than %u influences (at most %u): the smallest were "
                 "dropped",
                 sc->capped_vertex_count, (unsigned)SSK_MAX_INFLUENCES,
                 sc->source_max_influences);
    else if (ok)
        ok = add(r, SSK_CHECK_OK, "influences",
                 "at most %u influence(s) per vertex (the kernels take %u; 4 or fewer rigid "
                 "bones take the vectorized DQS path)",
                 sc->source_max_influences, (unsigned)SSK_MAX_INFLUENCES);
    return ok ? SSK_OK : SSK_ERROR_OUT_OF_MEMORY;
}

/* Rig-space positions of whole-rig object-space rows. */
static void to_rig(float *dst, const ssk_rig *rig, const float *positions, const float *objects)
{
    for (uint32_t m = 0; m < rig->mesh_count; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        for (uint32_t v = 0; v < mesh->vertex_count; ++v) {
            size_t row = 3 * ((size_t)mesh->first_vertex + v);
            ssk_mat4_transform_point(dst + row, objects + 16 * (size_t)m, positions + row);
        }
    }
}

static double bbox_diagonal(const float *p, uint32_t nv)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < 3 * (size_t)nv; ++i) {
        lo[i % 3] = fmin(lo[i % 3], p[i]);
        hi[i % 3] = fmax(hi[i % 3], p[i]);
    }
    double d = 0.0;
    for (int k = 0; k < 3; ++k) d += (hi[k] - lo[k]) * (hi[k] - lo[k]);
    return sqrt(d);
}

/* Every method on the sampled frames, judged against LBS's bounding box. */
static ssk_status check_methods_run(const ssk_scene *sc, const ssk_check_desc *desc,
                                    const uint32_t *mesh_of, const float *skinning,
                                    const float *objects,
                                    uint32_t frame_count, const int64_t *frames,
                                    ssk_check_report *r, ssk_error *err)
{
    const ssk_rig *rig = sc->rig;
    const uint32_t nv = rig->vertex_count, nb = rig->bone_count, nm = rig->mesh_count;
    float *positions = malloc(((size_t)nv * 3 + 1) * sizeof(float));
    float *rigpos = malloc(((size_t)nv * 3 + 1) * sizeof(float));
    double *lbs_diag = malloc(((size_t)frame_count + 1) * sizeof(double));
    /* the implicit method's composition operators, built once here */
    ssk_implicit_operators *operators = NULL;
    ssk_status st = SSK_OK;
    if (!positions || !rigpos || !lbs_diag) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "check: out of memory");
        goto done;
    }
    for (size_t k = 0; k < CHECK_METHOD_COUNT; ++k) {
        const ssk_method method = check_methods[k];
        const char *name = ssk_method_name(method);
        char topic[32];
        snprintf(topic, sizeof topic, "method %s", name);
        ssk_deformer *d = NULL;
        ssk_deformer_desc dd = {.method = 0};
        dd.method = method;
        dd.backend = desc->backend;
        dd.gl_context = desc->gl_context;
        ssk_error derr = {0};
        if (method == SSK_METHOD_IMPLICIT && !operators) {
            ssk_status os = ssk_implicit_operators_create(&operators, 0, &derr);
            if (os == SSK_ERROR_OUT_OF_MEMORY) goto oom;
            if (os != SSK_OK) {
                if (!add(r, SSK_CHECK_ERROR, topic, "cannot run: %s", derr.message)) goto oom;
                continue;
            }
        }
        dd.implicit_operators = operators;
        ssk_status ds = ssk_deformer_create(&d, rig, &dd, &derr);
        if (ds != SSK_OK) {
            if (!add(r, SSK_CHECK_ERROR, topic, "cannot run: %s", derr.message)) goto oom;
            continue;
        }
        double worst_ratio = 0.0, worst_tear = 0.0;
        uint32_t unconverged = 0, diverged = 0, iterations_max = 0;
        bool finite = true;
        const char *failure = NULL;
        char failure_text[256] = "";
        for (uint32_t f = 0; f < frame_count && !failure; ++f) {
            const float *skin = skinning + (size_t)f * nb * 16;
            const float *obj = objects + (size_t)f * nm * 16;
            ssk_deformer_set_frame(d, (double)frames[f]);
            ds = ssk_deformer_deform(d, positions, skin, obj, &derr);
            if (ds == SSK_ERROR_SPRING_DIVERGED) {
                diverged++;
            } else if (ds != SSK_OK) {
                /* the message is cut to fit the item's line */
                snprintf(failure_text, sizeof failure_text, "frame %lld: %.200s",
                         (long long)frames[f], derr.message);
                failure = failure_text;
                break;
            }
            if (method == SSK_METHOD_SPRING) {
                ssk_spring_report rep;
                ssk_deformer_spring_report(d, &rep);
                unconverged += !rep.converged;
                if (rep.iterations > iterations_max) iterations_max = rep.iterations;
            }
            if (!ssk_floats_finite(positions, (size_t)nv * 3)) {
                finite = false;
                break;
            }
            to_rig(rigpos, rig, positions, obj);
            double diag = bbox_diagonal(rigpos, nv);
            if (method == SSK_METHOD_LBS) lbs_diag[f] = diag;
            double ratio = lbs_diag[f] > 0.0 ? diag / lbs_diag[f] : 1.0;
            if (ratio > worst_ratio) worst_ratio = ratio;
            const ssk_weld *w = &rig->weld;
            const bool follows_weights = method == SSK_METHOD_LBS || method == SSK_METHOD_DQS;
            for (uint32_t i = 0; i < w->member_count; ++i) {
                /* LBS and DQS follow the weights, as Blender does: only
                 * copies (one mesh, one rest position, the same weights)
                 * must stay together; the rest keep their rest offset or
                 * separate (reported under "seams"). */
                if (follows_weights && !is_copy(rig, mesh_of, w->members[i], w->point[w->members[i]]))
                    continue;
                const float *a = rigpos + 3 * (size_t)w->members[i];
                const float *b = rigpos + 3 * (size_t)w->point[w->members[i]];
                double dist = sqrt(((double)a[0] - b[0]) * ((double)a[0] - b[0]) +
                                   ((double)a[1] - b[1]) * ((double)a[1] - b[1]) +
                                   ((double)a[2] - b[2]) * ((double)a[2] - b[2]));
                double rel = lbs_diag[f] > 0.0 ? dist / lbs_diag[f] : 0.0;
                if (rel > worst_tear) worst_tear = rel;
            }
        }
        ssk_deformer_destroy(d);
        bool ok;
        if (failure) {
            ok = add(r, SSK_CHECK_ERROR, topic, "%s", failure);
        } else if (!finite) {
            ok = add(r, SSK_CHECK_ERROR, topic, "non-finite positions");
        } else if (worst_ratio > SSK_CHECK_BBOX_RATIO) {
            ok = add(r, SSK_CHECK_ERROR, topic,
                     "bounding box up to %.2fx LBS's over %u frame(s) (the bound is %.1fx)",
                     worst_ratio, frame_count, SSK_CHECK_BBOX_RATIO);
        } else if (worst_tear > SSK_CHECK_TEAR_FRACTION) {
            ok = add(r, SSK_CHECK_ERROR, topic,
                     "coincident vertices torn apart by up to %.2g of the diagonal", worst_tear);
        } else if (method == SSK_METHOD_SPRING && (unconverged || diverged)) {
            ok = add(r, SSK_CHECK_WARNING, topic,
                     "not converged at %u of %u frame(s) within %u iterations%s; bounding box "
                     "within %.2fx LBS's",
                     unconverged, frame_count, iterations_max,
                     diverged ? " (diverged: the last good iterate was kept)" : "",
                     worst_ratio);
        } else {
            ok = add(r, SSK_CHECK_OK, topic,
                     "finite, bounding box within %.2fx LBS's over %u frame(s), seams closed",
                     worst_ratio, frame_count);
        }
        if (!ok) goto oom;
    }
    goto done;
oom:
    st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "check: out of memory");
done:
    ssk_implicit_operators_destroy(operators);
    free(positions);
    free(rigpos);
    free(lbs_diag);
    return st;
}

ssk_status ssk_scene_check(ssk_check_report **out, const ssk_scene *scene,
                           const ssk_check_desc *desc, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !scene || !desc)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_scene_check: NULL argument");
    if (!isfinite(desc->fps) || !(desc->fps > 0.0))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "check: fps must be finite and > 0, got %g", desc->fps);
    if (desc->frame_count == 0)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "check: frame_count must be >= 1");
    const ssk_rig *rig = scene->rig;
    const uint32_t nb = rig->bone_count, nm = rig->mesh_count, nv = rig->vertex_count;
    ssk_check_report *r = calloc(1, sizeof *r);
    uint32_t *mesh_of = malloc(((size_t)nv + 1) * sizeof *mesh_of);
    int64_t *frames = malloc(((size_t)desc->frame_count + 1) * sizeof *frames);
    float *skinning = malloc(((size_t)desc->frame_count * nb * 16 + 1) * sizeof(float));
    float *objects = malloc(((size_t)desc->frame_count * nm * 16 + 1) * sizeof(float));
    float *objects_rest = malloc(((size_t)nm * 16 + 1) * sizeof(float));
    ssk_status st = SSK_OK;
    if (!r || !mesh_of || !frames || !skinning || !objects || !objects_rest) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "check: out of memory");
        goto done;
    }
    for (uint32_t m = 0; m < nm; ++m) {
        for (uint32_t v = 0; v < rig->meshes[m].vertex_count; ++v)
            mesh_of[rig->meshes[m].first_vertex + v] = m;
        memcpy(objects_rest + 16 * (size_t)m, rig->meshes[m].object_matrix, 16 * sizeof(float));
    }

    /* Frames: evenly spread over the animation (first and last included),
     * or the rest pose when the file has no animation. */
    uint32_t frame_count = desc->frame_count;
    if (scene->animation_count == 0) {
        frame_count = 1;
        frames[0] = 0;
        for (uint32_t b = 0; b < nb; ++b) ssk_mat4_identity(skinning + 16 * (size_t)b);
        memcpy(objects, objects_rest, (size_t)nm * 16 * sizeof(float));
    } else {
        ssk_animation_info info;
        st = ssk_scene_animation(scene, desc->animation, &info, err);
        if (st != SSK_OK) goto done;
        uint32_t total = ssk_animation_frame_count(&info, desc->fps);
        if (frame_count > total) frame_count = total;
        for (uint32_t f = 0; f < frame_count; ++f) {
            frames[f] = frame_count > 1 ? (int64_t)((double)f * (total - 1) / (frame_count - 1) + 0.5)
                                        : 0;
            st = ssk_scene_sample(scene, desc->animation, (double)frames[f] / desc->fps,
                                  skinning + (size_t)f * nb * 16, objects + (size_t)f * nm * 16,
                                  err);
            if (st != SSK_OK) goto done;
        }
    }
    st = check_space(scene, r);
    if (st == SSK_OK) st = check_mesh_motion(scene, objects_rest, objects, frame_count, r);
    if (st == SSK_OK) st = check_topology(scene, mesh_of, r);
    if (st == SSK_OK) st = check_weights_and_bones(scene, r);
    if (st != SSK_OK) {
        st = ssk_error_set(err, st, "check: out of memory");
        goto done;
    }
    st = check_methods_run(scene, desc, mesh_of, skinning, objects, frame_count, frames, r, err);
    r->frame_count = frame_count;
done:
    free(mesh_of);
    free(frames);
    free(skinning);
    free(objects);
    free(objects_rest);
    if (st != SSK_OK) {
        ssk_check_report_destroy(r);
        return st;
    }
    *out = r;
    return ssk_error_ok(err);
}

const char *ssk_check_level_name(ssk_check_level level)
{
    switch (level) {
    case SSK_CHECK_OK: return "ok";
    case SSK_CHECK_WARNING: return "warning";
    case SSK_CHECK_ERROR: return "error";
    }
    return NULL;
}
