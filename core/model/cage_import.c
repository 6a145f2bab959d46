/*
 * cage_import.c — reading a cage for coupled cages and skeletons (Corda et
 * al. 2020; issue #21) from a file with Assimp (OBJ, or any format Assimp
 * reads): ssk_cage_mesh_import, springskin.h.
 *
 * Every mesh of the file is taken, its vertices through its node's global
 * matrix (the file's root space, which is the character's scene root
 * space: a cage exported next to a character lines up with it), then into
 * the rig space of `scene` by the inverse of its rig -> scene matrix.
 * Assimp's JoinIdenticalVertices keeps apart vertices that share a
 * position but not a normal or a texture coordinate (an OBJ exported with
 * normals has one per corner of a flat face), and a cage is one closed
 * surface: vertices with exactly the same position are merged here, in
 * order of first appearance.
 */
#include "model/scene.h"

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <stdlib.h>
#include <string.h>

/* Assimp post-processing of a cage: triangles, shared corners. */
#define CAGE_IMPORT_FLAGS (aiProcess_Triangulate | aiProcess_JoinIdenticalVertices)

void ssk_cage_mesh_free(ssk_cage_mesh *m)
{
    if (!m) return;
    free(m->vertices);
    free(m->triangles);
    memset(m, 0, sizeof *m);
}

/* The global matrix of `node` (row-major; aiMatrix4x4 is row-major too):
 * its transformation after its parents'. */
static void node_global(double out[16], const struct aiNode *node)
{
    double g[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    for (const struct aiNode *n = node; n; n = n->mParent) {
        const struct aiMatrix4x4 *t = &n->mTransformation;
        const double l[16] = {t->a1, t->a2, t->a3, t->a4, t->b1, t->b2, t->b3, t->b4,
                              t->c1, t->c2, t->c3, t->c4, t->d1, t->d2, t->d3, t->d4};
        double r[16];
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
                double s = 0.0;
                for (int k = 0; k < 4; ++k) s += l[4 * i + k] * g[4 * k + j];
                r[4 * i + j] = s;
            }
        memcpy(g, r, sizeof g);
    }
    memcpy(out, g, sizeof g);
}

/* The cage being gathered from the file's node tree (each mesh instance a
 * node holds counts). */
typedef struct cage_build {
    const struct aiScene *ai;
    double to_rig[16];
    float *vertices;      /* merged positions */
    uint32_t vertex_count;
    uint32_t *triangles;
    uint32_t triangle_count;
    size_t vertex_capacity, triangle_capacity;
} cage_build;

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

/* The merged index of position p (exact equality, first appearance). A
 * linear scan: cages have tens to a few thousand vertices. */
static int64_t merged_vertex(cage_build *b, const float p[3])
{
    for (uint32_t k = 0; k < b->vertex_count; ++k)
        if (memcmp(b->vertices + 3 * (size_t)k, p, 3 * sizeof(float)) == 0) return k;
    if (!grow((void **)&b->vertices, &b->vertex_capacity, (size_t)b->vertex_count + 1,
              3 * sizeof(float)))
        return -1;
    memcpy(b->vertices + 3 * (size_t)b->vertex_count, p, 3 * sizeof(float));
    return b->vertex_count++;
}

static ssk_status add_node(cage_build *b, const struct aiNode *node, ssk_error *err)
{
    double g[16], m[16];
    node_global(g, node);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            double s = 0.0;
            for (int k = 0; k < 4; ++k) s += b->to_rig[4 * i + k] * g[4 * k + j];
            m[4 * i + j] = s;
        }
    for (unsigned mi = 0; mi < node->mNumMeshes; ++mi) {
        const struct aiMesh *mesh = b->ai->mMeshes[node->mMeshes[mi]];
        int64_t *map = malloc(((size_t)mesh->mNumVertices + 1) * sizeof *map);
        if (!map) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        for (unsigned v = 0; v < mesh->mNumVertices; ++v) {
            const struct aiVector3D *q = &mesh->mVertices[v];
            float p[3];
            for (int r = 0; r < 3; ++r)
                p[r] = (float)(m[4 * r] * q->x + m[4 * r + 1] * q->y + m[4 * r + 2] * q->z +
                               m[4 * r + 3]);
            if (!ssk_floats_bounded(p, 3)) {
                free(map);
                return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                     "cage mesh '%s': vertex %u is not finite or beyond "
                                     "SSK_MAX_MAGNITUDE",
                                     mesh->mName.data, v);
            }
            map[v] = merged_vertex(b, p);
            if (map[v] < 0) {
                free(map);
                return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
            }
        }
        for (unsigned f = 0; f < mesh->mNumFaces; ++f) {
            const struct aiFace *face = &mesh->mFaces[f];
            if (face->mNumIndices != 3) continue; /* points and lines */
            if (!grow((void **)&b->triangles, &b->triangle_capacity,
                      (size_t)b->triangle_count + 1, 3 * sizeof(uint32_t))) {
                free(map);
                return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
            }
            for (int c = 0; c < 3; ++c)
                b->triangles[3 * (size_t)b->triangle_count + c] = (uint32_t)map[face->mIndices[c]];
            b->triangle_count++;
        }
        free(map);
    }
    for (unsigned c = 0; c < node->mNumChildren; ++c) {
        ssk_status st = add_node(b, node->mChildren[c], err);
        if (st != SSK_OK) return st;
    }
    return SSK_OK;
}

ssk_status ssk_cage_mesh_import(ssk_cage_mesh *out, const char *path, const ssk_scene *scene,
                                ssk_error *err)
{
    if (out) memset(out, 0, sizeof *out);
    if (!out || !path)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_mesh_import: NULL argument");
    cage_build b = {0};
    for (int i = 0; i < 16; ++i) b.to_rig[i] = i % 5 == 0 ? 1.0 : 0.0;
    if (scene) {
        float rs[16], inv[16];
        for (int i = 0; i < 16; ++i) rs[i] = (float)scene->rig_to_scene[i];
        if (!ssk_mat4_invert(inv, rs))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "cage '%s': the scene's rig space is singular", path);
        for (int i = 0; i < 16; ++i) b.to_rig[i] = inv[i];
    }
    b.ai = aiImportFile(path, CAGE_IMPORT_FLAGS);
    if (!b.ai || !b.ai->mRootNode) {
        const char *why = aiGetErrorString();
        if (b.ai) aiReleaseImport(b.ai);
        return ssk_error_set(err, SSK_ERROR_IMPORT, "cage '%s' could not be imported: %s", path,
                             why && *why ? why : "no scene");
    }
    ssk_status st = add_node(&b, b.ai->mRootNode, err);
    aiReleaseImport(b.ai);
    if (st == SSK_OK && (b.vertex_count < 4 || b.triangle_count < 4))
        st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                           "cage '%s': %u vertices and %u triangles, a closed cage needs at "
                           "least 4 of each",
                           path, b.vertex_count, b.triangle_count);
    if (st != SSK_OK) {
        free(b.vertices);
        free(b.triangles);
        return st;
    }
    out->vertices = b.vertices;
    out->vertex_count = b.vertex_count;
    out->triangles = b.triangles;
    out->triangle_count = b.triangle_count;
    return ssk_error_ok(err);
}
