/* bake.c — the main job: sample an animation frame by frame, deform the
 * whole rig and stream the positions to a point cache.
 *
 * Output formats by extension (case-insensitive); frame f is sampled at
 * t = f / fps seconds:
 * - ".pc2": start frame = the first baked frame, sample rate 1.0 (one
 *   sample per frame, in PC2's "frames between samples" sense).
 * - ".abc" (Alembic, core/io/abc.c): one Xform + PolyMesh per rig mesh, the
 *   Xform animated with the mesh node's object matrix of each frame (the
 *   positions are in that frame's object space), uniform time sampling of
 *   1/fps s starting at first / fps, the imported UVs, and with
 *   `with_normals` the deformer's normals of each frame.
 * Everything that can be checked is checked before the output is created,
 * so a bad request never touches the disk; a failure during the bake aborts
 * the writer, which removes its temporary file. */
#include "bind/cage.h"
#include "graph/graph.h"
#include "io/shard.h"
#include "model/internal.h"
#include "model/scene.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* PC2 sample rate written by the bake: one sample per frame. */
#define SSK_BAKE_PC2_SAMPLE_RATE 1.0f

typedef enum bake_format {
    BAKE_FORMAT_PC2,
    BAKE_FORMAT_ABC,
    BAKE_FORMAT_SHARD, /* ssk_bake_desc.shard_directory (issue #23) */
} bake_format;

/* Longest shard path (ssk_shard_path). */
#define BAKE_SHARD_PATH_MAX 4096

/* The extension of the last path component ("" when none), dot included. */
static const char *path_extension(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return (dot && dot != base) ? dot : "";
}

static ssk_status output_format(bake_format *out, const char *path,
                                ssk_error *err)
{
    const char *ext = path_extension(path);
    if (ssk_path_has_extension(path, ".pc2")) {
        *out = BAKE_FORMAT_PC2;
        return ssk_error_ok(err);
    }
    if (ssk_path_has_extension(path, ".abc")) {
        *out = BAKE_FORMAT_ABC;
        return ssk_error_ok(err);
    }
    if (!ext[0])
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "output '%s' has no extension; supported "
                             "formats: .pc2, .abc",
                             path);
    return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                         "output '%s': unknown format '%s'; supported "
                         "formats: .pc2, .abc",
                         path, ext);
}

/* The Alembic writer's description of the rig's meshes (names, topology,
 * UVs, rest placement: rig -> scene at rest times the object matrix), for
 * the .abc writer and the shards (whose merge opens the same writer).
 * *md and *world are malloc'ed (the caller frees both, also on error). */
static ssk_status mesh_descs(ssk_abc_mesh_desc **md, float **world, const ssk_scene *scene,
                             const ssk_rig *rig, ssk_error *err)
{
    uint32_t meshes = ssk_rig_mesh_count(rig);
    *md = calloc(meshes, sizeof **md);
    *world = malloc(((size_t)meshes * 16 + 1) * sizeof(float));
    if (!*md || !*world)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "bake: cannot allocate %u mesh descriptions", (unsigned)meshes);
    float rig_to_scene[16];
    for (int i = 0; i < 16; ++i) rig_to_scene[i] = (float)scene->rig_to_scene[i];
    for (uint32_t m = 0; m < meshes; ++m) {
        ssk_mesh_view v;
        ssk_status s = ssk_rig_mesh(rig, m, &v, err);
        if (s != SSK_OK) return s;
        (*md)[m].name = v.name;
        (*md)[m].vertex_count = v.vertex_count;
        (*md)[m].triangle_count = v.triangle_count;
        (*md)[m].triangles = v.triangles;
        (*md)[m].uvs = ssk_scene_mesh_uvs(scene, m);
        /* World placement (rig -> scene at rest) of the mesh's object. */
        ssk_mat4_mul(*world + 16 * (size_t)m, rig_to_scene, v.object_matrix);
        (*md)[m].object_matrix = *world + 16 * (size_t)m;
    }
    return ssk_error_ok(err);
}

/* Opens the Alembic writer for the rig's meshes; the first sample is at
 * first_frame / fps. */
static ssk_status open_abc(ssk_abc_writer **out, const ssk_scene *scene, const ssk_rig *rig,
                           const ssk_bake_desc *desc, int64_t first, ssk_error *err)
{
    ssk_abc_mesh_desc *md = NULL;
    float *world = NULL;
    ssk_status s = mesh_descs(&md, &world, scene, rig, err);
    if (s == SSK_OK) {
        ssk_abc_desc ad = {0};
        ad.meshes = md;
        ad.mesh_count = ssk_rig_mesh_count(rig);
        ad.fps = desc->fps;
        ad.start_time = (double)first / desc->fps;
        ad.with_normals = desc->with_normals;
        s = ssk_abc_writer_open(out, desc->output_path, &ad, err);
    }
    free(md);
    free(world);
    return s;
}

/* XXH3 of the skinning, object and rig -> scene matrices of every frame
 * 0 .. frame_count - 1 of the animation: shards with the same hash bake
 * the same poses. skinning, objects: scratch of #B and #M matrices. */
static ssk_status animation_hash(uint64_t *out, const ssk_scene *scene, uint32_t animation,
                                 double fps, uint32_t frame_count, const ssk_rig *rig,
                                 float *skinning, float *objects, ssk_error *err)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h || XXH3_64bits_reset(h) != XXH_OK) {
        XXH3_freeState(h);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "bake: cannot allocate a hash");
    }
    const size_t bones = ssk_rig_bone_count(rig), meshes = ssk_rig_mesh_count(rig);
    ssk_status s = SSK_OK;
    XXH3_64bits_update(h, &frame_count, sizeof frame_count);
    for (uint32_t f = 0; s == SSK_OK && f < frame_count; ++f) {
        const double t = (double)f / fps;
        float rig_to_scene[16];
        s = ssk_scene_sample(scene, animation, t, skinning, objects, err);
        if (s == SSK_OK) s = ssk_scene_rig_matrix(scene, animation, t, rig_to_scene, err);
        if (s != SSK_OK) break;
        XXH3_64bits_update(h, skinning, bones * 16 * sizeof(float));
        XXH3_64bits_update(h, objects, meshes * 16 * sizeof(float));
        XXH3_64bits_update(h, rig_to_scene, sizeof rig_to_scene);
    }
    *out = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return s;
}

/* XXH3 of a binding's data (bones, t, scale vectors, centers of rotation),
 * 0 for none. */
static ssk_status binding_hash(uint64_t *out, const ssk_binding *binding, ssk_error *err)
{
    *out = 0;
    if (!binding) return ssk_error_ok(err);
    ssk_binding_view v;
    ssk_status s = ssk_binding_get(binding, &v, err);
    if (s != SSK_OK) return s;
    XXH3_state_t *h = XXH3_createState();
    if (!h || XXH3_64bits_reset(h) != XXH_OK) {
        XXH3_freeState(h);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "bake: cannot allocate a hash");
    }
    const size_t n = v.vertex_count;
    XXH3_64bits_update(h, &v.rig_hash, sizeof v.rig_hash);
    XXH3_64bits_update(h, v.bones, n * sizeof *v.bones);
    XXH3_64bits_update(h, v.t, n * sizeof *v.t);
    XXH3_64bits_update(h, v.scale_vectors, 3 * n * sizeof *v.scale_vectors);
    if (v.cor_centers) {
        XXH3_64bits_update(h, v.cor_centers, 3 * n * sizeof *v.cor_centers);
        XXH3_64bits_update(h, v.cor_flags, n * sizeof *v.cor_flags);
    }
    *out = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return ssk_error_ok(err);
}

/* The identity of a sharded bake (ssk_shard_manifest) and its shard path;
 * refuses frame-dependent graphs. The graph is desc->graph or the
 * method's own. */
static ssk_status shard_identity(ssk_shard_manifest *m, char *path, const ssk_scene *scene,
                                 const ssk_rig *rig, const ssk_bake_desc *desc,
                                 uint32_t frame_count, int64_t first, int64_t last,
                                 float *skinning, float *objects, ssk_error *err)
{
    memset(m, 0, sizeof *m);
    ssk_graph *own = NULL;
    const ssk_graph *graph =
        desc->deformer ? ssk_deformer_graph_internal(desc->deformer) : desc->graph;
    ssk_status s = SSK_OK;
    if (!graph) {
        s = ssk_graph_from_method(&own, desc->method, rig, err);
        graph = own;
    }
    const char *node = s == SSK_OK ? ssk_graph_frame_dependent_node(graph) : NULL;
    if (node)
        s = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                          "bake: node '%s' is frame-dependent (each frame continues from the "
                          "previous one: a spring node in frame_dependent mode or implicit "
                          "elastic tracking), so its frames cannot be baked in shards; bake "
                          "it in one process, or make it frame-independent",
                          node);
    char *json = s == SSK_OK ? ssk_graph_to_json(graph) : NULL;
    if (s == SSK_OK && !json)
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "bake: cannot serialize the graph");
    if (json) m->graph_hash = XXH3_64bits(json, strlen(json));
    free(json);
    ssk_graph_destroy(own);
    if (s != SSK_OK) return s;
    snprintf(m->version, sizeof m->version, "%s", SSK_VERSION_STRING);
    m->rig_hash = ssk_rig_hash(rig);
    s = binding_hash(&m->binding_hash,
                     desc->deformer ? ssk_deformer_given_binding_internal(desc->deformer)
                                    : desc->binding,
                     err);
    if (s == SSK_OK)
        s = animation_hash(&m->animation_hash, scene, desc->animation, desc->fps, frame_count,
                           rig, skinning, objects, err);
    if (s != SSK_OK) return s;
    m->fps = desc->fps;
    m->animation = desc->animation;
    m->animation_frames = frame_count;
    m->vertex_count = ssk_rig_vertex_count(rig);
    m->mesh_count = ssk_rig_mesh_count(rig);
    m->with_normals = desc->with_normals != 0;
    m->first_frame = (int32_t)first;
    m->last_frame = (int32_t)last;
    s = ssk_shard_path(path, BAKE_SHARD_PATH_MAX, desc->shard_directory, (int32_t)first,
                       (int32_t)last, err);
    if (s != SSK_OK) return s;
    if (mkdir(desc->shard_directory, 0777) != 0 && errno != EEXIST)
        return ssk_error_set(err, SSK_ERROR_IO, "bake: cannot create the shard directory "
                                                "'%s': %s",
                             desc->shard_directory, strerror(errno));
    return ssk_error_ok(err);
}

/* Whether `path` holds a complete, valid shard with this identity and
 * these frames (a rerun keeps it). */
static bool shard_reusable(const char *path, const ssk_shard_manifest *want,
                           const ssk_abc_mesh_desc *md, uint32_t mesh_count)
{
    struct stat st;
    if (stat(path, &st) != 0) return false;
    ssk_shard_manifest have;
    unsigned char *section = NULL;
    size_t size = 0;
    ssk_shard_manifest full = *want;
    const bool ok = ssk_shard_topology(&section, &size, &full.topology_hash, md, mesh_count,
                                       NULL) == SSK_OK &&
                    ssk_shard_verify(&have, path, NULL) == SSK_OK &&
                    ssk_shard_same_bake(&have, &full, NULL) &&
                    have.first_frame == want->first_frame && have.last_frame == want->last_frame;
    free(section);
    return ok;
}

ssk_status ssk_scene_bake(const ssk_scene *scene, const ssk_bake_desc *desc,
                          ssk_bake_stats *out_stats, ssk_error *err)
{
    double wall_start = ssk_time_seconds();
    if (out_stats) memset(out_stats, 0, sizeof *out_stats);
    if (!scene || !desc || (!desc->output_path && !desc->shard_directory))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "bake: NULL %s",
                             !scene ? "scene" : !desc ? "description"
                                                      : "output path");
    if (!isfinite(desc->fps) || !(desc->fps > 0.0))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "bake: fps must be finite and > 0, got %g",
                             desc->fps);
    if ((unsigned)desc->method >= (unsigned)SSK_METHOD_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "bake: method %d out of range", (int)desc->method);
    if ((unsigned)desc->backend >= (unsigned)SSK_BACKEND_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "bake: backend %d out of range", (int)desc->backend);
    bake_format format = BAKE_FORMAT_SHARD;
    ssk_status s = desc->shard_directory ? SSK_OK : output_format(&format, desc->output_path, err);
    if (s != SSK_OK) return s;
    if (desc->shard_directory && !desc->shard_directory[0])
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "bake: empty shard directory");
    if (desc->with_normals && format == BAKE_FORMAT_PC2)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "bake: output '%s' cannot hold normals; with_normals needs "
                             "an .abc output",
                             desc->output_path);

    if (ssk_scene_animation_count(scene) == 0)
        return ssk_error_set(err, SSK_ERROR_NO_ANIMATION,
                             "bake: the scene has no animation to bake");
    ssk_animation_info info;
    s = ssk_scene_animation(scene, desc->animation, &info, err);
    if (s != SSK_OK) return s;
    uint32_t frame_count = ssk_animation_frame_count(&info, desc->fps);
    if (frame_count == 0)
        return ssk_error_set(err, SSK_ERROR_FRAME_RANGE,
                             "bake: animation %u has no frame at %g fps",
                             (unsigned)desc->animation, desc->fps);
    int64_t first = desc->first_frame, last = desc->last_frame;
    if (first == 0 && last == -1) last = (int64_t)frame_count - 1;
    if (first < 0 || first > last || last > (int64_t)frame_count - 1)
        return ssk_error_set(err, SSK_ERROR_FRAME_RANGE,
                             "bake: frames %lld..%lld are not a valid range of "
                             "animation %u ('%s', %.6g s at %g fps): frames "
                             "must satisfy 0 <= first <= last <= %u",
                             (long long)desc->first_frame,
                             (long long)desc->last_frame,
                             (unsigned)desc->animation,
                             info.name ? info.name : "", info.duration_seconds,
                             desc->fps, (unsigned)(frame_count - 1));
    uint32_t baked = (uint32_t)(last - first + 1);

    const ssk_rig *rig = ssk_scene_rig(scene);
    if (!rig)
        return ssk_error_set(err, SSK_ERROR_NO_SKELETON, "bake: scene has no rig");
    if (!desc->cage != !desc->cage_edit)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "bake: cage and cage_edit go together (one is NULL)");
    if (desc->cage && ssk_graph_cage_node(desc->graph))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "bake: a cage (--cage) and a graph with a cage node ('%s'): give "
                             "one of them",
                             ssk_graph_cage_node(desc->graph)->id);
    if (desc->deformer && (desc->cage || ssk_deformer_rig_internal(desc->deformer) != rig))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "bake: the deformer given %s",
                             desc->cage ? "cannot bake with a cage (the cage reshapes the rig)"
                                        : "was made for another rig than the scene's");

    uint32_t bones = ssk_rig_bone_count(rig);
    uint32_t meshes = ssk_rig_mesh_count(rig);
    uint32_t vertices = ssk_rig_vertex_count(rig);
    if (vertices == 0)
        return ssk_error_set(err, SSK_ERROR_EMPTY_MESH,
                             "bake: the rig has no vertex to write");
    /* a cage edit: the rig it describes (Corda et al. 2020, 4.2), with the
     * same meshes, bones and counts; each frame's skinning matrices carried
     * over to it */
    ssk_rig *reshaped = NULL;
    float *cor_centers = NULL;
    uint8_t *cor_flags = NULL;
    if (desc->cage) {
        /* CoR nodes: the centers repositioned by Eq. 14 (as a graph's cage
         * node does; they take the place of a binding's) */
        s = ssk_cage_reshape_with_centers(
            &reshaped, &cor_centers, &cor_flags, desc->cage, desc->cage_edit,
            desc->graph ? ssk_graph_needs_cor(desc->graph) : desc->method == SSK_METHOD_COR, err);
        if (s != SSK_OK) return s;
        rig = reshaped;
    }

    /* +1: never malloc(0). */
    float *skinning = malloc(((size_t)bones * 16 + 1) * sizeof(float));
    float *carried = desc->cage ? malloc(((size_t)bones * 16 + 1) * sizeof(float)) : NULL;
    float *objects = malloc(((size_t)meshes * 16 + 1) * sizeof(float));
    float *positions = malloc((size_t)vertices * 3 * sizeof(float));
    float *normals = desc->with_normals ? malloc((size_t)vertices * 3 * sizeof(float)) : NULL;
    ssk_deformer *deformer = NULL;
    ssk_pc2_writer *writer = NULL;
    ssk_abc_writer *abc = NULL;
    ssk_shard_writer *shard = NULL;
    ssk_abc_mesh_desc *md = NULL;
    float *world = NULL;
    ssk_shard_manifest manifest;
    char shard_path[BAKE_SHARD_PATH_MAX];
    if (!skinning || !objects || !positions || (desc->with_normals && !normals) ||
        (desc->cage && !carried)) {
        s = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                          "bake: cannot allocate buffers for %u bones, %u "
                          "meshes, %u vertices",
                          (unsigned)bones, (unsigned)meshes, (unsigned)vertices);
        goto done;
    }
    ssk_deformer_desc ddesc = {.method = desc->method, .backend = desc->backend,
                               .gl_context = desc->gl_context, .graph = desc->graph,
                               .binding = desc->binding,
                               .cor_centers = cor_centers,
                               .cor_flags = cor_flags,
                               .implicit_operators = desc->implicit_operators};
    if (desc->deformer) {
        deformer = desc->deformer;
        s = ssk_error_ok(err);
    } else {
        s = ssk_deformer_create(&deformer, rig, &ddesc, err);
    }
    free(cor_centers);
    free(cor_flags);
    cor_centers = NULL;
    cor_flags = NULL;
    if (s != SSK_OK) goto done;
    /* An AUTO fallback leaves SSK_OK with a warning in the message. */
    char warning[SSK_ERROR_MESSAGE_SIZE] = "";
    if (err) snprintf(warning, sizeof warning, "%s", err->message);

    if (format == BAKE_FORMAT_SHARD) {
        s = shard_identity(&manifest, shard_path, scene, rig, desc, frame_count, first, last,
                           skinning, objects, err);
        if (s == SSK_OK) s = mesh_descs(&md, &world, scene, rig, err);
        if (s != SSK_OK) goto done;
        snprintf(manifest.backend, sizeof manifest.backend, "%s",
                 ssk_backend_name(ssk_deformer_backend(deformer)));
        if (shard_reusable(shard_path, &manifest, md, meshes)) {
            if (out_stats) {
                out_stats->frame_count = baked;
                out_stats->vertex_count = vertices;
                out_stats->backend = ssk_deformer_backend(deformer);
                snprintf(out_stats->device, sizeof out_stats->device, "%s",
                         ssk_deformer_device_name(deformer));
                out_stats->shard_reused = 1;
                for (uint32_t k = 0; k < SSK_BAKE_LISTED_FRAMES; ++k)
                    out_stats->spring_unconverged_frames[k] = -1;
                out_stats->wall_seconds = ssk_time_seconds() - wall_start;
            }
            s = ssk_error_ok(err);
            goto done;
        }
    }
    switch (format) {
    case BAKE_FORMAT_SHARD:
        s = ssk_shard_writer_open(&shard, shard_path, &manifest, md, err);
        break;
    case BAKE_FORMAT_PC2:
        s = ssk_pc2_writer_open(&writer, desc->output_path, vertices,
                                (float)first, SSK_BAKE_PC2_SAMPLE_RATE, err);
        break;
    case BAKE_FORMAT_ABC:
        s = open_abc(&abc, scene, rig, desc, first, err);
        break;
    }
    if (s != SSK_OK) goto done;

    double deform_seconds = 0.0;
    uint64_t spring_iterations = 0;
    uint32_t spring_iterations_max = 0, unconverged = 0;
    int32_t listed_frames[SSK_BAKE_LISTED_FRAMES];
    float listed_residuals[SSK_BAKE_LISTED_FRAMES];
    float residual_max = 0.0f;
    bool has_spring = false;
    for (uint32_t i = 0; i < baked; ++i) {
        int64_t frame = first + (int64_t)i;
        double t = (double)frame / desc->fps;
        s = ssk_scene_sample(scene, desc->animation, t, skinning, objects, err);
        if (s != SSK_OK) goto done;
        if (desc->cage) {
            s = ssk_cage_pose(carried, desc->cage, skinning, err);
            if (s != SSK_OK) goto done;
        }
        double t0 = ssk_time_seconds();
        ssk_deformer_set_frame(deformer, (double)frame);
        s = ssk_deformer_deform(deformer, positions, desc->cage ? carried : skinning, objects,
                                err);
        deform_seconds += ssk_time_seconds() - t0;
        if (s != SSK_OK) goto done;
        ssk_spring_report report;
        ssk_deformer_spring_report(deformer, &report);
        if (report.iterations || report.converged) { /* the graph has a spring node */
            has_spring = true;
            spring_iterations += report.iterations;
            if (report.iterations > spring_iterations_max) spring_iterations_max = report.iterations;
            if (report.residual > residual_max) residual_max = report.residual;
            if (!report.converged && unconverged < SSK_BAKE_LISTED_FRAMES) {
                listed_frames[unconverged] = (int32_t)frame;
                listed_residuals[unconverged] = report.residual;
            }
            unconverged += !report.converged;
        }
        if (desc->frame_report) desc->frame_report(desc->frame_report_user, (int32_t)frame, &report);
        if (normals) {
            s = ssk_deformer_normals(deformer, normals, err);
            if (s != SSK_OK) goto done;
        }
        if (abc || shard) {
            /* Xforms are world matrices: rig -> scene at the frame. */
            float rig_to_scene[16];
            s = ssk_scene_rig_matrix(scene, desc->animation, t, rig_to_scene, err);
            if (s != SSK_OK) goto done;
            for (uint32_t m = 0; m < meshes; ++m)
                ssk_mat4_mul(objects + 16 * (size_t)m, rig_to_scene, objects + 16 * (size_t)m);
        }
        s = writer  ? ssk_pc2_writer_write(writer, positions, err)
            : shard ? ssk_shard_writer_write(shard, positions, normals, objects, err)
                    : ssk_abc_writer_write_frame(abc, positions, normals, objects, err);
        if (s != SSK_OK) goto done;
        if (desc->progress) desc->progress(desc->progress_user, i + 1, baked);
    }
    s = writer  ? ssk_pc2_writer_finish(writer, err)
        : shard ? ssk_shard_writer_finish(shard, err)
                : ssk_abc_writer_finish(abc, err);
    writer = NULL; /* finish frees it in every case */
    abc = NULL;
    shard = NULL;
    if (s != SSK_OK) goto done;

    if (out_stats) {
        out_stats->frame_count = baked;
        out_stats->vertex_count = vertices;
        out_stats->deform_seconds = deform_seconds;
        out_stats->backend = ssk_deformer_backend(deformer);
        snprintf(out_stats->device, sizeof out_stats->device, "%s",
                 ssk_deformer_device_name(deformer));
        snprintf(out_stats->warning, sizeof out_stats->warning, "%s", warning);
        out_stats->spring_iterations = spring_iterations;
        out_stats->spring_iterations_max = spring_iterations_max;
        out_stats->spring_residual_max = residual_max;
        out_stats->spring_frames_unconverged = has_spring ? unconverged : 0;
        for (uint32_t k = 0; k < SSK_BAKE_LISTED_FRAMES; ++k) {
            const bool listed = has_spring && k < unconverged;
            out_stats->spring_unconverged_frames[k] = listed ? listed_frames[k] : -1;
            out_stats->spring_unconverged_residuals[k] = listed ? listed_residuals[k] : 0.0f;
        }
        out_stats->wall_seconds = ssk_time_seconds() - wall_start;
    }
    s = ssk_error_ok(err);

done:
    free(carried);
    free(cor_centers);
    free(cor_flags);
    ssk_rig_destroy(reshaped);
    ssk_pc2_writer_abort(writer);
    ssk_abc_writer_abort(abc);
    ssk_shard_writer_abort(shard);
    free(md);
    free(world);
    if (deformer && deformer != desc->deformer) ssk_deformer_destroy(deformer);
    free(normals);
    free(positions);
    free(objects);
    free(skinning);
    return s;
}
