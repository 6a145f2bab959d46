/* import.c — Assimp file -> ssk_scene: one rig from every mesh with bones,
 * a copy of the node hierarchy and of the animation channels. The aiScene is
 * released before returning; the ssk_scene keeps no Assimp object.
 *
 * Conventions (see ssk_scene_import in springskin.h):
 * - post-processing is exactly aiProcess_Triangulate |
 *   aiProcess_JoinIdenticalVertices, so vertex order is Assimp's;
 * - rig space is the space of the root node's parent (G includes the root's
 *   own transform), G_static(n) composes mTransformation from the root;
 * - meshes without bones are skipped; faces that are not triangles after
 *   triangulation (points, lines) are dropped;
 * - rig bones = union of aiBone names over the meshes with bones, first seen
 *   first; a bone's node is the first node of that name in depth-first order;
 *   its parent is its nearest ancestor node that is a bone;
 * - rig space is the space of the armature node A (ssk_scene_import): the
 *   lowest common ancestor of the bone nodes, moved up past bone nodes and
 *   Assimp's FBX pivot nodes; the root's parent space when none is left;
 * - bind_b = inverse(G_static(A)) · G_static(mesh node) · inverse(offset) of
 *   the first mesh listing b;
 * - each mesh's object matrix is inverse(G_static(A)) · G_static of the
 *   first node (depth-first) referencing it (G_static(A)^-1 alone if no node
 *   references it);
 * - influences of bones that no node carries are dropped (Blender ignores a
 *   vertex group without a bone), counted per bone for the report;
 * - glTF and DirectX .x (Assimp's metadata SourceAsset_Format "glTF..." or
 *   "Direct3D XFile..."): the transform of a node that references a skinned
 *   mesh is ignored, so such a mesh's vertices live in the scene's root
 *   space: G_static(mesh node) is the identity above and the mesh has no
 *   node for sampling. glTF 2.0 requires it (3.7.3.3: only the joint
 *   transforms apply); in .x files the bones' offset matrices map root-space
 *   vertices to bone space (G(bone) · offset is the identity at the bind
 *   pose for every skinned mesh of assimp-testmodels, while their frames
 *   carry rotations and translations), as Direct3D's skinned meshes do.
 */
#include "model/scene.h"

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SSK_IMPORT_FLAGS (aiProcess_Triangulate | aiProcess_JoinIdenticalVertices)

/* Assimp's metadata key naming the importer, and the prefixes of the
 * importers whose skinned meshes ignore their node's transform: glTF
 * ("glTF Importer", "glTF2 Importer") and DirectX ("Direct3D XFile
 * Importer"). */
#define SSK_ASSIMP_FORMAT_KEY "SourceAsset_Format"
static const char *const skinned_root_space_formats[] = {"glTF", "Direct3D XFile"};

/* Assimp's FBX importer keeps pivots, offsets and pre/post rotations as extra
 * nodes named "<node>_$AssimpFbx$_<kind>" above the node they belong to. */
#define SSK_ASSIMP_FBX_PIVOT_TAG "_$AssimpFbx$_"

/* Fraction of the skeleton extent (diagonal of the bounding box of the bone
 * heads) used as the length of a leaf bone with no weighted vertex ahead of
 * its head; the same rule as ssk_rig_create's default tails. */
#define SSK_IMPORT_LEAF_FRACTION 0.1
/* A child head closer to the parent head than this fraction of the skeleton
 * extent would give a zero-length bone: the leaf rule is used instead. */
#define SSK_IMPORT_MIN_BONE_FRACTION 1e-6

/* Everything built during one import; released by import_ctx_free (the one
 * cleanup path). Pointers into the aiScene are valid until it is released. */
typedef struct import_ctx {
    const char *path;
    const struct aiScene *ai;
    ssk_scene *scene;
    const struct aiNode **ai_nodes; /* #nodes, pre-order */
    double *globals;                /* #nodes by 16, static G */
    double scene_to_rig[16];        /* inverse(G_static(armature node)) */
    bool skinned_nodes_ignored;     /* glTF, .x: skinned mesh node transforms */
    int32_t *node_bone;             /* #nodes: rig bone of the node, or -1 */
    int32_t *ai_mesh_node;          /* #aiMeshes: first node, or -1 */
    /* rig meshes */
    uint32_t mesh_count;
    uint32_t *mesh_ai;              /* #M: aiMesh index */
    uint32_t *mesh_bone_offsets;    /* #M + 1: into mesh_bone_map */
    int32_t *mesh_bone_map;         /* aiBone k of mesh m -> rig bone */
    float *object_matrices;         /* #M by 16 */
    float **positions;              /* #M arrays */
    float **normals;                /* #M arrays or NULL (source normals) */
    int32_t **triangles;
    int32_t **bone_indices;
    float **weights;
    ssk_mesh_desc *mesh_descs;
    /* rig bones */
    uint32_t bone_count;
    const char **bone_names;        /* into the aiScene */
    const struct aiBone **bone_first;   /* aiBone giving the bind matrix */
    uint32_t *bone_first_mesh;      /* rig mesh of bone_first */
    int32_t *parents;
    float *binds, *heads, *tails;
    uint32_t *weighted_counts;      /* vertices with weight > 0, all meshes */
    double *leaf_extents;           /* max projection on the bind Y axis */
} import_ctx;

static void import_ctx_free(import_ctx *c)
{
    for (uint32_t m = 0; m < c->mesh_count; ++m) {
        if (c->positions) free(c->positions[m]);
        if (c->normals) free(c->normals[m]);
        if (c->triangles) free(c->triangles[m]);
        if (c->bone_indices) free(c->bone_indices[m]);
        if (c->weights) free(c->weights[m]);
    }
    free(c->positions);
    free(c->normals);
    free(c->triangles);
    free(c->bone_indices);
    free(c->weights);
    free(c->mesh_descs);
    free(c->ai_nodes);
    free(c->globals);
    free(c->node_bone);
    free(c->ai_mesh_node);
    free(c->mesh_ai);
    free(c->mesh_bone_offsets);
    free(c->mesh_bone_map);
    free(c->object_matrices);
    free(c->bone_names);
    free(c->bone_first);
    free(c->bone_first_mesh);
    free(c->parents);
    free(c->binds);
    free(c->heads);
    free(c->tails);
    free(c->weighted_counts);
    free(c->leaf_extents);
    if (c->ai) aiReleaseImport(c->ai);
}

static ssk_status oom(import_ctx *c, ssk_error *err, const char *what)
{
    return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "'%s': out of memory (%s)", c->path,
                         what);
}

/* calloc that never asks for 0 bytes (so NULL always means failure). */
static void *xcalloc(size_t count, size_t size)
{
    return calloc(count ? count : 1, size ? size : 1);
}

static void aimat_to_double(double dst[16], const struct aiMatrix4x4 *m)
{
    /* aiMatrix4x4 rows are a1..a4, b1..b4, ...: row-major, column vectors. */
    const double v[16] = {m->a1, m->a2, m->a3, m->a4, m->b1, m->b2, m->b3, m->b4,
                          m->c1, m->c2, m->c3, m->c4, m->d1, m->d2, m->d3, m->d4};
    memcpy(dst, v, sizeof v);
}

static void to_float16(float dst[16], const double src[16])
{
    for (int i = 0; i < 16; ++i) dst[i] = (float)src[i];
}

/* Unit quaternion (w, x, y, z) of a rotation matrix given by its 3 columns
 * (Shepperd's method: the largest of w, x, y, z is computed first). */
static void quat_from_rotation(double q[4], const double r[9])
{
    /* r is row-major 3x3 */
    double tr = r[0] + r[4] + r[8];
    if (tr > 0.0) {
        double s = sqrt(tr + 1.0) * 2.0;
        q[0] = 0.25 * s;
        q[1] = (r[7] - r[5]) / s;
        q[2] = (r[2] - r[6]) / s;
        q[3] = (r[3] - r[1]) / s;
    } else if (r[0] > r[4] && r[0] > r[8]) {
        double s = sqrt(1.0 + r[0] - r[4] - r[8]) * 2.0;
        q[0] = (r[7] - r[5]) / s;
        q[1] = 0.25 * s;
        q[2] = (r[1] + r[3]) / s;
        q[3] = (r[2] + r[6]) / s;
    } else if (r[4] > r[8]) {
        double s = sqrt(1.0 + r[4] - r[0] - r[8]) * 2.0;
        q[0] = (r[2] - r[6]) / s;
        q[1] = (r[1] + r[3]) / s;
        q[2] = 0.25 * s;
        q[3] = (r[5] + r[7]) / s;
    } else {
        double s = sqrt(1.0 + r[8] - r[0] - r[4]) * 2.0;
        q[0] = (r[3] - r[1]) / s;
        q[1] = (r[2] + r[6]) / s;
        q[2] = (r[5] + r[7]) / s;
        q[3] = 0.25 * s;
    }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (n > 0.0 && isfinite(n)) {
        for (int k = 0; k < 4; ++k) q[k] /= n;
    } else {
        q[0] = 1.0;
        q[1] = q[2] = q[3] = 0.0;
    }
}

/* local = T · R · S as Assimp's aiMatrix4x4::Decompose does it: scales are
 * the column lengths, all negated when the determinant is negative. */
static void decompose(ssk_scene_node *n)
{
    const double *m = n->local;
    n->translation[0] = m[3];
    n->translation[1] = m[7];
    n->translation[2] = m[11];
    double det = m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) +
                 m[2] * (m[4] * m[9] - m[5] * m[8]);
    double r[9];
    for (int j = 0; j < 3; ++j) {
        double len = sqrt(m[j] * m[j] + m[4 + j] * m[4 + j] + m[8 + j] * m[8 + j]);
        if (det < 0.0) len = -len;
        n->scale[j] = len;
        for (int i = 0; i < 3; ++i) r[i * 3 + j] = len != 0.0 ? m[i * 4 + j] / len : 0.0;
    }
    quat_from_rotation(n->rotation, r);
}

/* ------------------------------------------------------------------------ */
/* Node hierarchy.                                                           */
/* ------------------------------------------------------------------------ */

typedef struct node_item {
    const struct aiNode *node;
    int32_t parent;
} node_item;

static ssk_status copy_nodes(import_ctx *c, ssk_error *err)
{
    ssk_scene *sc = c->scene;
    const struct aiNode *root = c->ai->mRootNode;
    if (!root) return ssk_error_ok(err);

    /* Pre-order with an explicit stack (deep files cannot blow the C stack). */
    size_t cap = 64, stack_cap = 64, stack_len = 0, count = 0;
    node_item *stack = malloc(stack_cap * sizeof *stack);
    c->ai_nodes = malloc(cap * sizeof *c->ai_nodes);
    sc->nodes = calloc(cap, sizeof *sc->nodes);
    if (!stack || !c->ai_nodes || !sc->nodes) {
        free(stack);
        return oom(c, err, "node hierarchy");
    }
    stack[stack_len++] = (node_item){root, -1};
    while (stack_len > 0) {
        node_item it = stack[--stack_len];
        if (count == UINT32_MAX / 2) {
            free(stack);
            return ssk_error_set(err, SSK_ERROR_IMPORT, "'%s': too many nodes", c->path);
        }
        if (count == cap) {
            size_t ncap = cap * 2;
            const struct aiNode **na = realloc(c->ai_nodes, ncap * sizeof *na);
            if (na) c->ai_nodes = na;
            ssk_scene_node *nn = na ? realloc(sc->nodes, ncap * sizeof *nn) : NULL;
            if (!na || !nn) {
                free(stack);
                return oom(c, err, "node hierarchy");
            }
            memset(nn + cap, 0, (ncap - cap) * sizeof *nn);
            sc->nodes = nn;
            cap = ncap;
        }
        uint32_t index = (uint32_t)count++;
        sc->node_count = index + 1; /* the name below is freed by the scene */
        ssk_scene_node *n = &sc->nodes[index];
        c->ai_nodes[index] = it.node;
        n->parent = it.parent;
        n->name = ssk_strdup(it.node->mName.data);
        if (!n->name) {
            free(stack);
            return oom(c, err, "node name");
        }
        aimat_to_double(n->local, &it.node->mTransformation);
        decompose(n);
        if (stack_len + it.node->mNumChildren > stack_cap) {
            size_t ncap = stack_cap;
            while (ncap < stack_len + it.node->mNumChildren) ncap *= 2;
            node_item *ns = realloc(stack, ncap * sizeof *ns);
            if (!ns) {
                free(stack);
                return oom(c, err, "node hierarchy");
            }
            stack = ns;
            stack_cap = ncap;
        }
        /* Children pushed in reverse so they are visited in file order. */
        for (unsigned k = it.node->mNumChildren; k-- > 0;)
            if (it.node->mChildren[k])
                stack[stack_len++] = (node_item){it.node->mChildren[k], (int32_t)index};
    }
    free(stack);

    c->globals = malloc((size_t)sc->node_count * 16 * sizeof(double));
    if (!c->globals) return oom(c, err, "node transforms");
    for (uint32_t i = 0; i < sc->node_count; ++i) {
        double *g = c->globals + 16 * (size_t)i;
        int32_t p = sc->nodes[i].parent;
        if (p >= 0) ssk_mat4d_mul(g, c->globals + 16 * (size_t)p, sc->nodes[i].local);
        else memcpy(g, sc->nodes[i].local, 16 * sizeof(double));
    }
    return ssk_error_ok(err);
}

/* First node (pre-order) named `name`, or -1. */
static int32_t find_node(const ssk_scene *sc, const char *name)
{
    for (uint32_t i = 0; i < sc->node_count; ++i)
        if (strcmp(sc->nodes[i].name, name) == 0) return (int32_t)i;
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Rig: meshes, bones, weights.                                              */
/* ------------------------------------------------------------------------ */

static int32_t find_bone(const import_ctx *c, const char *name)
{
    for (uint32_t b = 0; b < c->bone_count; ++b)
        if (strcmp(c->bone_names[b], name) == 0) return (int32_t)b;
    return -1;
}

/* Lists the meshes with bones, the rig bones (first seen first) and the
 * mesh-bone -> rig-bone map. */
static ssk_status collect_meshes_and_bones(import_ctx *c, ssk_error *err)
{
    const struct aiScene *ai = c->ai;
    uint32_t total_bones = 0;
    c->ai_mesh_node = xcalloc(ai->mNumMeshes, sizeof *c->ai_mesh_node);
    c->mesh_ai = xcalloc(ai->mNumMeshes, sizeof *c->mesh_ai);
    c->mesh_bone_offsets = xcalloc((size_t)ai->mNumMeshes + 1, sizeof *c->mesh_bone_offsets);
    if (!c->ai_mesh_node || !c->mesh_ai || !c->mesh_bone_offsets) return oom(c, err, "meshes");

    for (unsigned i = 0; i < ai->mNumMeshes; ++i) c->ai_mesh_node[i] = -1;
    for (uint32_t n = 0; n < c->scene->node_count; ++n) {
        const struct aiNode *node = c->ai_nodes[n];
        for (unsigned k = 0; k < node->mNumMeshes; ++k) {
            unsigned mi = node->mMeshes[k];
            if (mi < ai->mNumMeshes && c->ai_mesh_node[mi] < 0) c->ai_mesh_node[mi] = (int32_t)n;
        }
    }

    for (unsigned i = 0; i < ai->mNumMeshes; ++i) {
        const struct aiMesh *m = ai->mMeshes[i];
        if (!m || m->mNumBones == 0) continue; /* meshes without bones are skipped */
        if (total_bones > UINT32_MAX - m->mNumBones)
            return ssk_error_set(err, SSK_ERROR_IMPORT, "'%s': too many bones", c->path);
        c->mesh_ai[c->mesh_count] = i;
        total_bones += m->mNumBones;
        c->mesh_bone_offsets[++c->mesh_count] = total_bones;
    }
    if (c->mesh_count == 0)
        return ssk_error_set(err, SSK_ERROR_NO_SKELETON,
                             "'%s': no mesh has bones (%u mesh(es) in the file), nothing to skin",
                             c->path, ai->mNumMeshes);

    c->mesh_bone_map = xcalloc(total_bones, sizeof *c->mesh_bone_map);
    c->bone_names = xcalloc(total_bones, sizeof *c->bone_names);
    c->bone_first = xcalloc(total_bones, sizeof *c->bone_first);
    c->bone_first_mesh = xcalloc(total_bones, sizeof *c->bone_first_mesh);
    if (!c->mesh_bone_map || !c->bone_names || !c->bone_first || !c->bone_first_mesh)
        return oom(c, err, "bones");
    for (uint32_t m = 0; m < c->mesh_count; ++m) {
        const struct aiMesh *mesh = ai->mMeshes[c->mesh_ai[m]];
        for (unsigned k = 0; k < mesh->mNumBones; ++k) {
            const struct aiBone *bone = mesh->mBones[k];
            if (!bone)
                return ssk_error_set(err, SSK_ERROR_IMPORT, "'%s': mesh '%s' has a NULL bone %u",
                                     c->path, mesh->mName.data, k);
            int32_t b = find_bone(c, bone->mName.data);
            if (b < 0) {
                b = (int32_t)c->bone_count++;
                c->bone_names[b] = bone->mName.data;
                c->bone_first[b] = bone;
                c->bone_first_mesh[b] = m;
            }
            c->mesh_bone_map[c->mesh_bone_offsets[m] + k] = b;
        }
    }
    return ssk_error_ok(err);
}

/* Depth of every node (pre-order: parents first). */
static uint32_t node_depth(const ssk_scene *sc, int32_t n)
{
    uint32_t d = 0;
    for (int32_t a = sc->nodes[n].parent; a >= 0; a = sc->nodes[a].parent) ++d;
    return d;
}

/* The armature node (see the file comment): Blender blends skinning in its
 * armature object's space, and an importer makes that object from the node
 * above the bones. Sets scene->armature_node, scene->rig_to_scene and
 * c->scene_to_rig. Needs scene->bone_nodes and c->node_bone. */
static ssk_status find_armature(import_ctx *c, ssk_error *err)
{
    ssk_scene *sc = c->scene;
    int32_t a = -1;
    uint32_t depth_a = 0;
    for (uint32_t b = 0; b < c->bone_count; ++b) {
        int32_t n = sc->bone_nodes[b];
        if (n < 0) continue;
        if (a < 0) {
            a = n;
            depth_a = node_depth(sc, a);
            continue;
        }
        uint32_t depth_n = node_depth(sc, n);
        while (a != n && a >= 0 && n >= 0) {
            if (depth_a >= depth_n) a = sc->nodes[a].parent, --depth_a;
            else n = sc->nodes[n].parent, --depth_n;
        }
        if (a < 0 || n < 0) a = -1;
        if (a < 0) break; /* two roots: no common ancestor */
    }
    while (a >= 0 && (c->node_bone[a] >= 0 || strstr(sc->nodes[a].name, SSK_ASSIMP_FBX_PIVOT_TAG)))
        a = sc->nodes[a].parent;
    sc->armature_node = a;
    if (a < 0) {
        ssk_mat4d_identity(sc->rig_to_scene);
        ssk_mat4d_identity(c->scene_to_rig);
        return ssk_error_ok(err);
    }
    memcpy(sc->rig_to_scene, c->globals + 16 * (size_t)a, sizeof sc->rig_to_scene);
    if (!ssk_mat4d_invert(c->scene_to_rig, sc->rig_to_scene))
        return ssk_error_set(err, SSK_ERROR_IMPORT,
                             "'%s': the armature node '%s' has a singular transform", c->path,
                             sc->nodes[a].name);
    return ssk_error_ok(err);
}

/* Bind matrices, parents and per-bone nodes. */
static ssk_status build_bones(import_ctx *c, ssk_error *err)
{
    ssk_scene *sc = c->scene;
    uint32_t nb = c->bone_count;
    c->parents = xcalloc(nb, sizeof *c->parents);
    c->binds = xcalloc((size_t)nb * 16, sizeof *c->binds);
    c->heads = xcalloc((size_t)nb * 3, sizeof *c->heads);
    c->tails = xcalloc((size_t)nb * 3, sizeof *c->tails);
    c->weighted_counts = xcalloc(nb, sizeof *c->weighted_counts);
    c->leaf_extents = xcalloc(nb, sizeof *c->leaf_extents);
    c->node_bone = xcalloc(sc->node_count, sizeof *c->node_bone);
    sc->bone_nodes = xcalloc(nb, sizeof *sc->bone_nodes);
    if (!c->parents || !c->binds || !c->heads || !c->tails || !c->weighted_counts ||
        !c->leaf_extents || !c->node_bone || !sc->bone_nodes)
        return oom(c, err, "bones");

    for (uint32_t n = 0; n < sc->node_count; ++n) c->node_bone[n] = -1;
    for (uint32_t b = 0; b < nb; ++b) {
        int32_t node = find_node(sc, c->bone_names[b]);
        sc->bone_nodes[b] = node;
        if (node >= 0 && c->node_bone[node] < 0) c->node_bone[node] = (int32_t)b;
        if (node < 0) sc->nodeless_bone_count++;
    }
    if (sc->nodeless_bone_count) {
        sc->nodeless_dropped = xcalloc(nb, sizeof *sc->nodeless_dropped);
        if (!sc->nodeless_dropped) return oom(c, err, "bones");
    }
    ssk_status st = find_armature(c, err);
    if (st != SSK_OK) return st;
    for (uint32_t b = 0; b < nb; ++b) {
        int32_t parent = -1;
        int32_t node = sc->bone_nodes[b];
        if (node >= 0)
            for (int32_t a = sc->nodes[node].parent; a >= 0; a = sc->nodes[a].parent)
                if (c->node_bone[a] >= 0) {
                    parent = c->node_bone[a];
                    break;
                }
        c->parents[b] = parent;

        /* bind = G_static(mesh node) · inverse(offset) */
        uint32_t m = c->bone_first_mesh[b];
        double offset[16], inv_offset[16], bind[16], mesh_g[16];
        aimat_to_double(offset, &c->bone_first[b]->mOffsetMatrix);
        if (!ssk_mat4d_invert(inv_offset, offset))
            return ssk_error_set(err, SSK_ERROR_IMPORT,
                                 "'%s': bone '%s' of mesh '%s' has a singular offset matrix",
                                 c->path, c->bone_names[b],
                                 c->ai->mMeshes[c->mesh_ai[m]]->mName.data);
        int32_t mesh_node = c->skinned_nodes_ignored ? -1 : c->ai_mesh_node[c->mesh_ai[m]];
        if (mesh_node >= 0) memcpy(mesh_g, c->globals + 16 * (size_t)mesh_node, sizeof mesh_g);
        else ssk_mat4d_identity(mesh_g);
        ssk_mat4d_mul(mesh_g, c->scene_to_rig, mesh_g);
        ssk_mat4d_mul(bind, mesh_g, inv_offset);
        to_float16(c->binds + 16 * (size_t)b, bind);
        c->heads[3 * b] = (float)bind[3];
        c->heads[3 * b + 1] = (float)bind[7];
        c->heads[3 * b + 2] = (float)bind[11];
    }
    return ssk_error_ok(err);
}

/* Object matrix, positions, triangles and weights of rig mesh m. */
static ssk_status build_mesh(import_ctx *c, uint32_t m, ssk_error *err)
{
    const struct aiMesh *mesh = c->ai->mMeshes[c->mesh_ai[m]];
    const int32_t *bone_map = c->mesh_bone_map + c->mesh_bone_offsets[m];
    uint32_t nv = mesh->mNumVertices;
    ssk_mesh_desc *d = &c->mesh_descs[m];
    d->name = mesh->mName.length > 0 ? mesh->mName.data : NULL;
    d->vertex_count = nv;

    float *om = c->object_matrices + 16 * (size_t)m;
    int32_t node = c->skinned_nodes_ignored ? -1 : c->ai_mesh_node[c->mesh_ai[m]];
    double object[16];
    if (node >= 0) ssk_mat4d_mul(object, c->scene_to_rig, c->globals + 16 * (size_t)node);
    else memcpy(object, c->scene_to_rig, sizeof object);
    to_float16(om, object);
    d->object_matrix = om;

    c->positions[m] = xcalloc((size_t)nv * 3, sizeof(float));
    if (!c->positions[m]) return oom(c, err, "positions");
    if (nv > 0 && !mesh->mVertices)
        return ssk_error_set(err, SSK_ERROR_IMPORT, "'%s': mesh '%s' has no positions", c->path,
                             mesh->mName.data);
    for (uint32_t v = 0; v < nv; ++v) {
        float *p = c->positions[m] + 3 * (size_t)v;
        p[0] = (float)mesh->mVertices[v].x;
        p[1] = (float)mesh->mVertices[v].y;
        p[2] = (float)mesh->mVertices[v].z;
    }
    d->positions = c->positions[m];
    /* Source normals: only read by the weld to keep hard edges. */
    d->normals = NULL;
    if (mesh->mNormals && nv > 0) {
        c->normals[m] = malloc((size_t)nv * 3 * sizeof(float));
        if (!c->normals[m]) return oom(c, err, "normals");
        for (uint32_t v = 0; v < nv; ++v) {
            c->normals[m][3 * (size_t)v] = (float)mesh->mNormals[v].x;
            c->normals[m][3 * (size_t)v + 1] = (float)mesh->mNormals[v].y;
            c->normals[m][3 * (size_t)v + 2] = (float)mesh->mNormals[v].z;
        }
        d->normals = c->normals[m];
    }

    /* Triangles; points and lines left by aiProcess_Triangulate are dropped. */
    uint32_t nf = 0;
    for (unsigned f = 0; f < mesh->mNumFaces; ++f) nf += mesh->mFaces[f].mNumIndices == 3;
    c->triangles[m] = xcalloc((size_t)nf * 3, sizeof(int32_t));
    if (!c->triangles[m]) return oom(c, err, "triangles");
    nf = 0;
    for (unsigned f = 0; f < mesh->mNumFaces; ++f) {
        const struct aiFace *face = &mesh->mFaces[f];
        if (face->mNumIndices != 3) continue;
        for (int k = 0; k < 3; ++k) {
            /* Out-of-range indices are reported by ssk_rig_create. */
            unsigned idx = face->mIndices[k];
            c->triangles[m][3 * (size_t)nf + (size_t)k] =
                idx > (unsigned)INT32_MAX ? -1 : (int32_t)idx;
        }
        ++nf;
    }
    d->triangle_count = nf;
    d->triangles = c->triangles[m];

    /* First UV channel (u, v); a channel with a non-finite value is
     * dropped rather than failing the import (UVs are only passed on). */
    if (mesh->mTextureCoords[0] && mesh->mNumUVComponents[0] >= 2 && nv > 0) {
        float *uv = malloc((size_t)nv * 2 * sizeof(float));
        if (!uv) return oom(c, err, "texture coordinates");
        bool finite = true;
        for (uint32_t v = 0; v < nv; ++v) {
            uv[2 * (size_t)v] = (float)mesh->mTextureCoords[0][v].x;
            uv[2 * (size_t)v + 1] = (float)mesh->mTextureCoords[0][v].y;
            finite = finite && isfinite(uv[2 * (size_t)v]) && isfinite(uv[2 * (size_t)v + 1]);
        }
        if (finite) c->scene->mesh_uvs[m] = uv;
        else free(uv);
    }

    /* Influences per vertex, in mesh bone order (CSR by vertex). */
    ssk_status st = SSK_OK;
    uint32_t *offsets = xcalloc((size_t)nv + 1, sizeof *offsets);
    int32_t *entry_bone = NULL;
    float *entry_weight = NULL;
    uint32_t *cursor = NULL;
    if (!offsets) return oom(c, err, "weights");
    size_t total = 0;
    const int32_t *bone_nodes = c->scene->bone_nodes;
    for (unsigned k = 0; k < mesh->mNumBones; ++k) {
        const struct aiBone *bone = mesh->mBones[k];
        const bool nodeless = bone_nodes[bone_map[k]] < 0;
        for (unsigned w = 0; w < bone->mNumWeights; ++w) {
            unsigned v = bone->mWeights[w].mVertexId;
            if (nodeless && v < nv) {
                /* Dropped (Blender ignores a vertex group with no bone). */
                if (bone->mWeights[w].mWeight > 0.0f)
                    c->scene->nodeless_dropped[bone_map[k]]++;
                continue;
            }
            if (v >= nv) {
                st = ssk_error_set(err, SSK_ERROR_IMPORT,
                                   "'%s': mesh '%s', bone '%s': weight %u names vertex %u "
                                   "but the mesh has %u vertices",
                                   c->path, mesh->mName.data, bone->mName.data, w, v, nv);
                goto done;
            }
            if (offsets[v + 1] == UINT32_MAX) {
                st = ssk_error_set(err, SSK_ERROR_IMPORT, "'%s': too many weights", c->path);
                goto done;
            }
            offsets[v + 1]++;
            ++total;
        }
    }
    uint32_t max_count = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        if (offsets[v + 1] > max_count) max_count = offsets[v + 1];
        offsets[v + 1] += offsets[v];
    }
    entry_bone = xcalloc(total, sizeof *entry_bone);
    entry_weight = xcalloc(total, sizeof *entry_weight);
    cursor = xcalloc(nv, sizeof *cursor);
    if (!entry_bone || !entry_weight || !cursor) {
        st = oom(c, err, "weights");
        goto done;
    }
    memcpy(cursor, offsets, (size_t)nv * sizeof *cursor);
    for (unsigned k = 0; k < mesh->mNumBones; ++k) {
        const struct aiBone *bone = mesh->mBones[k];
        int32_t b = bone_map[k];
        if (bone_nodes[b] < 0) continue;
        for (unsigned w = 0; w < bone->mNumWeights; ++w) {
            unsigned v = bone->mWeights[w].mVertexId;
            float wt = (float)bone->mWeights[w].mWeight;
            entry_bone[cursor[v]] = b;
            entry_weight[cursor[v]++] = wt;
            if (wt > 0.0f) c->weighted_counts[b]++;
        }
    }

    /* More than SSK_MAX_INFLUENCES on a vertex: the smallest are dropped. */
    uint32_t K = max_count < SSK_MAX_INFLUENCES ? max_count : SSK_MAX_INFLUENCES;
    if (max_count > c->scene->source_max_influences) c->scene->source_max_influences = max_count;
    for (uint32_t v = 0; v < nv; ++v)
        c->scene->capped_vertex_count += offsets[v + 1] - offsets[v] > K;
    d->influence_count = K;
    if (K > 0) {
        c->bone_indices[m] = xcalloc((size_t)nv * K, sizeof(int32_t));
        c->weights[m] = xcalloc((size_t)nv * K, sizeof(float));
        if (!c->bone_indices[m] || !c->weights[m]) {
            st = oom(c, err, "weights");
            goto done;
        }
        for (uint32_t v = 0; v < nv; ++v) {
            uint32_t first = offsets[v], n = offsets[v + 1] - first;
            int32_t *oi = c->bone_indices[m] + (size_t)v * K;
            float *ow = c->weights[m] + (size_t)v * K;
            if (n > K) {
                /* Keep the K largest weights (earliest first on ties), in
                 * their original order: drop the smallest, latest first. */
                for (uint32_t drop = n - K; drop > 0; --drop) {
                    uint32_t worst = UINT32_MAX;
                    for (uint32_t e = first; e < first + n; ++e) {
                        if (entry_bone[e] < 0) continue; /* already dropped */
                        if (worst == UINT32_MAX || entry_weight[e] <= entry_weight[worst])
                            worst = e;
                    }
                    entry_bone[worst] = -1;
                }
            }
            uint32_t j = 0;
            for (uint32_t e = first; e < first + n; ++e) {
                if (entry_bone[e] < 0) continue;
                oi[j] = entry_bone[e];
                ow[j++] = entry_weight[e];
            }
            /* The rest stays index 0, weight 0 (calloc). */
        }
    }
    d->bone_indices = c->bone_indices[m];
    d->weights = c->weights[m];

done:
    free(offsets);
    free(entry_bone);
    free(entry_weight);
    free(cursor);
    return st == SSK_OK ? ssk_error_ok(err) : st;
}

/* Heads are the bind translations; tails per ssk_scene_import's rule. */
static void build_tails(import_ctx *c)
{
    const ssk_scene *sc = c->scene;
    uint32_t nb = c->bone_count;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t b = 0; b < nb; ++b)
        for (int k = 0; k < 3; ++k) {
            lo[k] = fmin(lo[k], c->heads[3 * b + k]);
            hi[k] = fmax(hi[k], c->heads[3 * b + k]);
        }
    double extent = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                         (hi[2] - lo[2]) * (hi[2] - lo[2]));
    if (!(extent > 0.0) || !isfinite(extent)) extent = 1.0;

    /* Unit bind Y axis of each bone and the farthest projection on it of the
     * bone's weighted vertices (rig space). */
    double *ydir = malloc((size_t)nb * 3 * sizeof(double));
    bool have_ydir = ydir != NULL;
    for (uint32_t b = 0; have_ydir && b < nb; ++b) {
        const float *bm = c->binds + 16 * (size_t)b;
        double y[3] = {bm[1], bm[5], bm[9]};
        double len = sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
        if (len > 0.0 && isfinite(len))
            for (int k = 0; k < 3; ++k) ydir[3 * b + k] = y[k] / len;
        else
            ydir[3 * b] = 0.0, ydir[3 * b + 1] = 1.0, ydir[3 * b + 2] = 0.0;
        c->leaf_extents[b] = 0.0;
    }
    for (uint32_t m = 0; have_ydir && m < c->mesh_count; ++m) {
        const struct aiMesh *mesh = c->ai->mMeshes[c->mesh_ai[m]];
        const int32_t *bone_map = c->mesh_bone_map + c->mesh_bone_offsets[m];
        const float *om = c->object_matrices + 16 * (size_t)m;
        for (unsigned k = 0; k < mesh->mNumBones; ++k) {
            const struct aiBone *bone = mesh->mBones[k];
            int32_t b = bone_map[k];
            const double *y = ydir + 3 * (size_t)b;
            const float *h = c->heads + 3 * (size_t)b;
            for (unsigned w = 0; w < bone->mNumWeights; ++w) {
                if (!(bone->mWeights[w].mWeight > 0.0f)) continue;
                float p[3];
                ssk_mat4_transform_point(p, om, c->positions[m] + 3 * (size_t)bone->mWeights[w].mVertexId);
                double proj = (p[0] - h[0]) * y[0] + (p[1] - h[1]) * y[1] + (p[2] - h[2]) * y[2];
                if (proj > c->leaf_extents[b]) c->leaf_extents[b] = proj;
            }
        }
    }

    for (uint32_t b = 0; b < nb; ++b) {
        const float *h = c->heads + 3 * (size_t)b;
        float *t = c->tails + 3 * (size_t)b;
        /* Child bone with the most weighted vertices; ties and all-zero go
         * to the first child in depth-first node order. */
        int32_t best = -1;
        for (uint32_t ch = 0; ch < nb; ++ch) {
            if (c->parents[ch] != (int32_t)b) continue;
            if (best < 0 || c->weighted_counts[ch] > c->weighted_counts[best] ||
                (c->weighted_counts[ch] == c->weighted_counts[best] &&
                 sc->bone_nodes[ch] < sc->bone_nodes[best]))
                best = (int32_t)ch;
        }
        if (best >= 0) {
            const float *ch = c->heads + 3 * (size_t)best;
            double d = sqrt((double)(ch[0] - h[0]) * (ch[0] - h[0]) +
                            (double)(ch[1] - h[1]) * (ch[1] - h[1]) +
                            (double)(ch[2] - h[2]) * (ch[2] - h[2]));
            if (d > SSK_IMPORT_MIN_BONE_FRACTION * extent) {
                memcpy(t, ch, 3 * sizeof(float));
                continue;
            }
        }
        double len = have_ydir ? c->leaf_extents[b] : 0.0;
        if (!(len > SSK_IMPORT_MIN_BONE_FRACTION * extent)) len = SSK_IMPORT_LEAF_FRACTION * extent;
        double y[3] = {0.0, 1.0, 0.0};
        if (have_ydir) memcpy(y, ydir + 3 * (size_t)b, sizeof y);
        for (int k = 0; k < 3; ++k) t[k] = (float)(h[k] + y[k] * len);
    }
    free(ydir);
}

/* Whether the importer that read the file (Assimp's metadata) is one whose
 * skinned meshes ignore their node's transform. */
static bool skinned_meshes_in_root_space(const struct aiScene *ai)
{
    const struct aiMetadata *md = ai->mMetaData;
    for (unsigned i = 0; md && i < md->mNumProperties; ++i) {
        if (strcmp(md->mKeys[i].data, SSK_ASSIMP_FORMAT_KEY) != 0) continue;
        if (md->mValues[i].mType != AI_AISTRING || !md->mValues[i].mData) return false;
        const struct aiString *v = md->mValues[i].mData;
        for (size_t k = 0; k < sizeof skinned_root_space_formats / sizeof *skinned_root_space_formats;
             ++k)
            if (strncmp(v->data, skinned_root_space_formats[k],
                        strlen(skinned_root_space_formats[k])) == 0)
                return true;
        return false;
    }
    return false;
}

static ssk_status build_rig(import_ctx *c, ssk_error *err)
{
    c->skinned_nodes_ignored = skinned_meshes_in_root_space(c->ai);
    c->scene->skinned_nodes_ignored = c->skinned_nodes_ignored;
    ssk_status st = collect_meshes_and_bones(c, err);
    if (st != SSK_OK) return st;
    st = build_bones(c, err);
    if (st != SSK_OK) return st;

    uint32_t nm = c->mesh_count;
    c->object_matrices = xcalloc((size_t)nm * 16, sizeof(float));
    c->positions = xcalloc(nm, sizeof *c->positions);
    c->normals = xcalloc(nm, sizeof *c->normals);
    c->triangles = xcalloc(nm, sizeof *c->triangles);
    c->bone_indices = xcalloc(nm, sizeof *c->bone_indices);
    c->weights = xcalloc(nm, sizeof *c->weights);
    c->mesh_descs = xcalloc(nm, sizeof *c->mesh_descs);
    c->scene->mesh_nodes = xcalloc(nm, sizeof *c->scene->mesh_nodes);
    c->scene->mesh_uvs = xcalloc(nm, sizeof *c->scene->mesh_uvs);
    if (c->scene->mesh_uvs) c->scene->mesh_uv_count = nm;
    if (!c->object_matrices || !c->positions || !c->normals || !c->triangles || !c->bone_indices ||
        !c->weights || !c->mesh_descs || !c->scene->mesh_nodes || !c->scene->mesh_uvs)
        return oom(c, err, "meshes");
    for (uint32_t m = 0; m < nm; ++m) {
        c->scene->mesh_nodes[m] = c->skinned_nodes_ignored ? -1 : c->ai_mesh_node[c->mesh_ai[m]];
        st = build_mesh(c, m, err);
        if (st != SSK_OK) return st;
    }
    build_tails(c);

    ssk_skeleton_desc sk = {c->bone_count, c->bone_names, c->parents, c->binds, c->heads,
                            c->tails};
    ssk_error rig_err = {0};
    st = ssk_rig_create(&c->scene->rig, &sk, c->mesh_descs, nm, &rig_err);
    if (st != SSK_OK)
        return ssk_error_set(err, st, "'%s': %s", c->path, rig_err.message);

    /* Inverse binds of the matrices as the rig stores them (float). */
    uint32_t nb = c->bone_count;
    c->scene->inverse_binds = malloc((size_t)nb * 16 * sizeof(double));
    if (!c->scene->inverse_binds) return oom(c, err, "inverse bind matrices");
    for (uint32_t b = 0; b < nb; ++b) {
        double bind[16];
        for (int i = 0; i < 16; ++i) bind[i] = c->scene->rig->bones[b].bind_matrix[i];
        if (!ssk_mat4d_invert(c->scene->inverse_binds + 16 * (size_t)b, bind))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "'%s': bone '%s' has a singular bind matrix", c->path,
                                 c->bone_names[b]);
    }
    return ssk_error_ok(err);
}

/* ------------------------------------------------------------------------ */
/* Animations.                                                               */
/* ------------------------------------------------------------------------ */

/* Stable insertion sort by time (keys are nearly always sorted: O(n)). */
#define SSK_SORT_KEYS_(type, keys, n)                                         \
    do {                                                                     \
        for (uint32_t i_ = 1; i_ < (n); ++i_) {                              \
            type k_ = (keys)[i_];                                            \
            uint32_t j_ = i_;                                                \
            while (j_ > 0 && (keys)[j_ - 1].time > k_.time) {                \
                (keys)[j_] = (keys)[j_ - 1];                                 \
                --j_;                                                        \
            }                                                                \
            (keys)[j_] = k_;                                                 \
        }                                                                    \
    } while (0)

static ssk_status copy_vec_keys(ssk_vec_key **out, uint32_t *out_count,
                                const struct aiVectorKey *src, unsigned n, const char *kind,
                                const import_ctx *c, const char *anim, const char *node,
                                ssk_error *err)
{
    *out_count = 0;
    *out = xcalloc(n, sizeof **out);
    if (!*out)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "'%s': out of memory (keys)", c->path);
    for (unsigned i = 0; i < n; ++i) {
        ssk_vec_key *k = &(*out)[i];
        k->time = src[i].mTime;
        k->value[0] = src[i].mValue.x;
        k->value[1] = src[i].mValue.y;
        k->value[2] = src[i].mValue.z;
        if (!isfinite(k->time) || !isfinite(k->value[0]) || !isfinite(k->value[1]) ||
            !isfinite(k->value[2]))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "'%s': animation '%s', node '%s': %s key %u is non-finite",
                                 c->path, anim, node, kind, i);
    }
    SSK_SORT_KEYS_(ssk_vec_key, *out, n);
    *out_count = n;
    return SSK_OK;
}

static ssk_status copy_quat_keys(ssk_quat_key **out, uint32_t *out_count,
                                 const struct aiQuatKey *src, unsigned n, const import_ctx *c,
                                 const char *anim, const char *node, ssk_error *err)
{
    *out_count = 0;
    *out = xcalloc(n, sizeof **out);
    if (!*out)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "'%s': out of memory (keys)", c->path);
    for (unsigned i = 0; i < n; ++i) {
        ssk_quat_key *k = &(*out)[i];
        k->time = src[i].mTime;
        k->value[0] = src[i].mValue.w;
        k->value[1] = src[i].mValue.x;
        k->value[2] = src[i].mValue.y;
        k->value[3] = src[i].mValue.z;
        double len = sqrt(k->value[0] * k->value[0] + k->value[1] * k->value[1] +
                          k->value[2] * k->value[2] + k->value[3] * k->value[3]);
        if (!isfinite(k->time) || !isfinite(len))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "'%s': animation '%s', node '%s': rotation key %u is non-finite",
                                 c->path, anim, node, i);
        if (!(len > 0.0))
            return ssk_error_set(err, SSK_ERROR_IMPORT,
                                 "'%s': animation '%s', node '%s': rotation key %u is a zero "
                                 "quaternion",
                                 c->path, anim, node, i);
        for (int j = 0; j < 4; ++j) k->value[j] /= len;
    }
    SSK_SORT_KEYS_(ssk_quat_key, *out, n);
    *out_count = n;
    return SSK_OK;
}

static ssk_status copy_animations(import_ctx *c, ssk_error *err)
{
    ssk_scene *sc = c->scene;
    const struct aiScene *ai = c->ai;
    if (ai->mNumAnimations == 0) return SSK_OK;
    sc->animations = xcalloc(ai->mNumAnimations, sizeof *sc->animations);
    if (!sc->animations) return oom(c, err, "animations");
    for (unsigned a = 0; a < ai->mNumAnimations; ++a) {
        const struct aiAnimation *src = ai->mAnimations[a];
        ssk_scene_anim *dst = &sc->animations[a];
        sc->animation_count = a + 1; /* partially built: freed by the scene */
        dst->name = ssk_strdup(src ? src->mName.data : "");
        dst->node_channel = xcalloc(sc->node_count, sizeof *dst->node_channel);
        dst->channels = src ? xcalloc(src->mNumChannels, sizeof *dst->channels) : NULL;
        if (!dst->name || !dst->node_channel || (src && !dst->channels))
            return oom(c, err, "animations");
        for (uint32_t n = 0; n < sc->node_count; ++n) dst->node_channel[n] = -1;
        dst->ticks_per_second = SSK_DEFAULT_TICKS_PER_SECOND;
        if (!src) continue;
        if (src->mTicksPerSecond > 0.0 && isfinite(src->mTicksPerSecond))
            dst->ticks_per_second = src->mTicksPerSecond;
        if (!isfinite(src->mDuration))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "'%s': animation '%s' has a non-finite duration", c->path,
                                 dst->name);
        if (src->mDuration < 0.0)
            return ssk_error_set(err, SSK_ERROR_IMPORT,
                                 "'%s': animation '%s' has a negative duration %g", c->path,
                                 dst->name, src->mDuration);
        dst->duration_ticks = src->mDuration;
        dst->file_channel_count = src->mNumChannels;
        for (unsigned k = 0; k < src->mNumChannels; ++k) {
            const struct aiNodeAnim *ch = src->mChannels[k];
            if (!ch) continue;
            int32_t node = find_node(sc, ch->mNodeName.data);
            /* Channels naming no node are ignored; the first channel of a
             * node wins. */
            if (node < 0 || dst->node_channel[node] >= 0) continue;
            ssk_channel *out = &dst->channels[dst->channel_count++];
            const char *nn = ch->mNodeName.data;
            ssk_status st = copy_vec_keys(&out->positions, &out->position_count,
                                          ch->mPositionKeys, ch->mNumPositionKeys, "position",
                                          c, dst->name, nn, err);
            if (st == SSK_OK)
                st = copy_quat_keys(&out->rotations, &out->rotation_count, ch->mRotationKeys,
                                    ch->mNumRotationKeys, c, dst->name, nn, err);
            if (st == SSK_OK)
                st = copy_vec_keys(&out->scales, &out->scale_count, ch->mScalingKeys,
                                   ch->mNumScalingKeys, "scale", c, dst->name, nn, err);
            if (st != SSK_OK) return st;
            dst->node_channel[node] = (int32_t)(dst->channel_count - 1);
        }
    }
    return SSK_OK;
}

/* ------------------------------------------------------------------------ */
/* Public API.                                                               */
/* ------------------------------------------------------------------------ */

static ssk_status check_readable(const char *path, ssk_error *err)
{
    errno = 0;
    FILE *f = fopen(path, "rb");
    int e = errno;
    if (f) {
        /* fopen succeeds on a directory; the first read reports EISDIR. */
        errno = 0;
        (void)fgetc(f);
        e = ferror(f) ? errno : 0;
        fclose(f);
        if (e == 0) return SSK_OK;
    }
    char reason[128];
    if (e == 0 || strerror_r(e, reason, sizeof reason) != 0)
        snprintf(reason, sizeof reason, "error %d", e);
    return ssk_error_set(err, SSK_ERROR_IO, "cannot read '%s': %s", path, reason);
}

void ssk_scene_destroy(ssk_scene *scene)
{
    if (!scene) return;
    ssk_rig_destroy(scene->rig);
    for (uint32_t i = 0; i < scene->node_count; ++i) free(scene->nodes[i].name);
    free(scene->nodes);
    free(scene->bone_nodes);
    free(scene->inverse_binds);
    free(scene->mesh_nodes);
    free(scene->nodeless_dropped);
    for (uint32_t m = 0; m < scene->mesh_uv_count; ++m) free(scene->mesh_uvs[m]);
    free(scene->mesh_uvs);
    for (uint32_t a = 0; a < scene->animation_count; ++a) {
        ssk_scene_anim *an = &scene->animations[a];
        for (uint32_t k = 0; k < an->channel_count; ++k) {
            free(an->channels[k].positions);
            free(an->channels[k].rotations);
            free(an->channels[k].scales);
        }
        free(an->channels);
        free(an->node_channel);
        free(an->name);
    }
    free(scene->animations);
    free(scene);
}

ssk_status ssk_scene_import(ssk_scene **out_scene, const char *path, ssk_error *err)
{
    if (out_scene) *out_scene = NULL;
    if (!out_scene || !path)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_scene_import: %s is NULL",
                             !out_scene ? "out_scene" : "path");
    ssk_status st = check_readable(path, err);
    if (st != SSK_OK) return st;

    import_ctx c = {0};
    c.path = path;
    c.ai = aiImportFile(path, SSK_IMPORT_FLAGS);
    if (!c.ai) {
        const char *msg = aiGetErrorString();
        return ssk_error_set(err, SSK_ERROR_IMPORT, "Assimp could not import '%s': %s", path,
                             msg && *msg ? msg : "unknown error");
    }
    c.scene = calloc(1, sizeof *c.scene);
    if (!c.scene) st = oom(&c, err, "scene");
    if (st == SSK_OK) st = copy_nodes(&c, err);
    if (st == SSK_OK) st = build_rig(&c, err);
    if (st == SSK_OK) st = copy_animations(&c, err);
    import_ctx_free(&c); /* releases the aiScene too */
    if (st != SSK_OK) {
        ssk_scene_destroy(c.scene);
        return st;
    }
    *out_scene = c.scene;
    return ssk_error_ok(err);
}

const float *ssk_scene_mesh_uvs(const ssk_scene *scene, uint32_t mesh)
{
    if (!scene || mesh >= scene->mesh_uv_count) return NULL;
    return scene->mesh_uvs[mesh];
}
