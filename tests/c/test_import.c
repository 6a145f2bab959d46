/* test_import.c — Assimp import and animation sampling (ssk_scene_*).
 *
 * Expected values come from an independent path: the test imports the same
 * file with the Assimp C API and the same post-processing flags, and
 * evaluates the skinning with Assimp's own math (aiDecomposeMatrix,
 * aiQuaternionInterpolate, aiMatrix4FromScalingQuaternionPosition,
 * aiMatrix4Inverse) by walking aiNode parents: Assimp's skinning matrix of
 * bone b in mesh m is inverse(G(m, t)) · G(b, t) · offset_m(b). The few hand
 * numbers (5126 triangles, 54 bones, 3.3 s) were read once with
 * `assimp info -r` on BCN_Epileptic.X. */
#include "testutil.h"

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BCN_PATH SSK_MODELS_DIR "/X/BCN_Epileptic.X"
#define REF_FLAGS (aiProcess_Triangulate | aiProcess_JoinIdenticalVertices)
/* Matrix agreement with the Assimp reference, relative to max(1, |M|max). */
#define MATRIX_TOLERANCE 1e-4
/* Weights agree up to float rounding of the normalization. */
#define WEIGHT_TOLERANCE 1e-5
/* Two poses "differ" when some skinning matrix element moves this much. */
#define POSE_CHANGE_MIN 1e-3

/* ------------------------------------------------------------------------ */
/* Reference evaluation straight from the aiScene.                           */
/* ------------------------------------------------------------------------ */

static void ref_from_ai(double d[16], const struct aiMatrix4x4 *m)
{
    const double v[16] = {m->a1, m->a2, m->a3, m->a4, m->b1, m->b2, m->b3, m->b4,
                          m->c1, m->c2, m->c3, m->c4, m->d1, m->d2, m->d3, m->d4};
    memcpy(d, v, sizeof v);
}

static void ref_to_ai(struct aiMatrix4x4 *m, const double d[16])
{
    m->a1 = (ai_real)d[0]; m->a2 = (ai_real)d[1]; m->a3 = (ai_real)d[2]; m->a4 = (ai_real)d[3];
    m->b1 = (ai_real)d[4]; m->b2 = (ai_real)d[5]; m->b3 = (ai_real)d[6]; m->b4 = (ai_real)d[7];
    m->c1 = (ai_real)d[8]; m->c2 = (ai_real)d[9]; m->c3 = (ai_real)d[10]; m->c4 = (ai_real)d[11];
    m->d1 = (ai_real)d[12]; m->d2 = (ai_real)d[13]; m->d3 = (ai_real)d[14]; m->d4 = (ai_real)d[15];
}

static void ref_identity(double d[16])
{
    for (int i = 0; i < 16; ++i) d[i] = (i % 5 == 0) ? 1.0 : 0.0;
}

static void ref_mul(double dst[16], const double a[16], const double b[16])
{
    double r[16];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            double s = 0;
            for (int k = 0; k < 4; ++k) s += a[i * 4 + k] * b[k * 4 + j];
            r[i * 4 + j] = s;
        }
    memcpy(dst, r, sizeof r);
}

static void ref_inverse(double dst[16], const double m[16])
{
    struct aiMatrix4x4 a;
    ref_to_ai(&a, m);
    aiMatrix4Inverse(&a);
    ref_from_ai(dst, &a);
}

static void ref_from_float(double d[16], const float *f)
{
    for (int i = 0; i < 16; ++i) d[i] = f[i];
}

static double ref_max_abs(const double *a, int n)
{
    double m = 0;
    for (int i = 0; i < n; ++i) m = fmax(m, fabs(a[i]));
    return m;
}

static double ref_max_diff(const double *a, const double *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* First node named `name`, depth-first pre-order. */
static const struct aiNode *ref_find_node(const struct aiNode *n, const char *name)
{
    if (strcmp(n->mName.data, name) == 0) return n;
    for (unsigned i = 0; i < n->mNumChildren; ++i) {
        const struct aiNode *r = ref_find_node(n->mChildren[i], name);
        if (r) return r;
    }
    return NULL;
}

/* First node referencing mesh `mesh`, depth-first pre-order. */
static const struct aiNode *ref_mesh_node(const struct aiNode *n, unsigned mesh)
{
    for (unsigned k = 0; k < n->mNumMeshes; ++k)
        if (n->mMeshes[k] == mesh) return n;
    for (unsigned i = 0; i < n->mNumChildren; ++i) {
        const struct aiNode *r = ref_mesh_node(n->mChildren[i], mesh);
        if (r) return r;
    }
    return NULL;
}

static const struct aiNodeAnim *ref_channel(const struct aiAnimation *a, const char *name)
{
    if (!a) return NULL;
    for (unsigned k = 0; k < a->mNumChannels; ++k)
        if (strcmp(a->mChannels[k]->mNodeName.data, name) == 0) return a->mChannels[k];
    return NULL;
}

static struct aiVector3D ref_vec(const struct aiVectorKey *k, unsigned n, double t)
{
    if (t <= k[0].mTime) return k[0].mValue;
    if (t >= k[n - 1].mTime) return k[n - 1].mValue;
    unsigned i = 0;
    while (!(k[i + 1].mTime > t)) ++i;
    double f = (t - k[i].mTime) / (k[i + 1].mTime - k[i].mTime);
    struct aiVector3D r;
    r.x = (ai_real)(k[i].mValue.x + f * (k[i + 1].mValue.x - k[i].mValue.x));
    r.y = (ai_real)(k[i].mValue.y + f * (k[i + 1].mValue.y - k[i].mValue.y));
    r.z = (ai_real)(k[i].mValue.z + f * (k[i + 1].mValue.z - k[i].mValue.z));
    return r;
}

static struct aiQuaternion ref_quat(const struct aiQuatKey *k, unsigned n, double t)
{
    struct aiQuaternion a, b, r;
    if (t <= k[0].mTime || t >= k[n - 1].mTime) {
        r = t <= k[0].mTime ? k[0].mValue : k[n - 1].mValue;
        aiQuaternionNormalize(&r);
        return r;
    }
    unsigned i = 0;
    while (!(k[i + 1].mTime > t)) ++i;
    double f = (t - k[i].mTime) / (k[i + 1].mTime - k[i].mTime);
    a = k[i].mValue;
    b = k[i + 1].mValue;
    aiQuaternionNormalize(&a);
    aiQuaternionNormalize(&b);
    aiQuaternionInterpolate(&r, &a, &b, (float)f);
    aiQuaternionNormalize(&r);
    return r;
}

/* Local transform of `node` at `ticks` (anim NULL: static). */
static void ref_local(double out[16], const struct aiAnimation *anim, const struct aiNode *node,
                      double ticks)
{
    const struct aiNodeAnim *ch = ref_channel(anim, node->mName.data);
    if (!ch) {
        ref_from_ai(out, &node->mTransformation);
        return;
    }
    struct aiVector3D s, p;
    struct aiQuaternion q;
    aiDecomposeMatrix(&node->mTransformation, &s, &q, &p);
    if (ch->mNumPositionKeys) p = ref_vec(ch->mPositionKeys, ch->mNumPositionKeys, ticks);
    if (ch->mNumRotationKeys) q = ref_quat(ch->mRotationKeys, ch->mNumRotationKeys, ticks);
    if (ch->mNumScalingKeys) s = ref_vec(ch->mScalingKeys, ch->mNumScalingKeys, ticks);
    struct aiMatrix4x4 m;
    aiMatrix4FromScalingQuaternionPosition(&m, &s, &q, &p);
    ref_from_ai(out, &m);
}

/* G(node, t): locals multiplied up the aiNode parent chain. */
static void ref_global(double out[16], const struct aiAnimation *anim, const struct aiNode *node,
                       double ticks)
{
    ref_local(out, anim, node, ticks);
    for (const struct aiNode *p = node->mParent; p; p = p->mParent) {
        double l[16];
        ref_local(l, anim, p, ticks);
        ref_mul(out, l, out);
    }
}

static const struct aiScene *ref_import(const char *path)
{
    const struct aiScene *ai = aiImportFile(path, REF_FLAGS);
    if (!ai) fprintf(stderr, "reference import of %s failed: %s\n", path, aiGetErrorString());
    assert_non_null(ai);
    return ai;
}

static ssk_scene *import_ok(const char *path)
{
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    ssk_status st = ssk_scene_import(&scene, path, &err);
    if (st != SSK_OK) fprintf(stderr, "import %s: %s: %s\n", path, ssk_status_name(st), err.message);
    assert_int_equal(st, SSK_OK);
    assert_non_null(scene);
    return scene;
}

/* Whether Assimp's glTF or DirectX importer read the scene (its
 * metadata): their skinned meshes ignore their node's transform. */
static bool ref_skinned_in_root_space(const struct aiScene *ai)
{
    const struct aiMetadata *md = ai->mMetaData;
    for (unsigned i = 0; md && i < md->mNumProperties; ++i)
        if (strcmp(md->mKeys[i].data, "SourceAsset_Format") == 0 &&
            md->mValues[i].mType == AI_AISTRING) {
            const char *format = ((const struct aiString *)md->mValues[i].mData)->data;
            return strncmp(format, "glTF", 4) == 0 || strncmp(format, "Direct3D XFile", 14) == 0;
        }
    return false;
}

/* True when `node` carries a bone of some mesh of the scene. */
static bool ref_is_bone_node(const struct aiScene *ai, const struct aiNode *node)
{
    for (unsigned i = 0; i < ai->mNumMeshes; ++i)
        for (unsigned k = 0; k < ai->mMeshes[i]->mNumBones; ++k)
            if (strcmp(ai->mMeshes[i]->mBones[k]->mName.data, node->mName.data) == 0) return true;
    return false;
}

static bool ref_is_ancestor(const struct aiNode *a, const struct aiNode *n)
{
    for (; n; n = n->mParent)
        if (n == a) return true;
    return false;
}

/* The armature node as documented for ssk_scene_import: the lowest common
 * ancestor of the bones' nodes, moved up past bone nodes and Assimp's FBX
 * pivot nodes; NULL for the root's parent space. */
static const struct aiNode *ref_armature(const struct aiScene *ai)
{
    const struct aiNode *a = NULL;
    bool any = false;
    for (unsigned i = 0; i < ai->mNumMeshes; ++i)
        for (unsigned k = 0; k < ai->mMeshes[i]->mNumBones; ++k) {
            const struct aiNode *n = ref_find_node(ai->mRootNode, ai->mMeshes[i]->mBones[k]->mName.data);
            if (!n) continue;
            if (!any) a = n;
            any = true;
            while (a && !ref_is_ancestor(a, n)) a = a->mParent;
        }
    while (a && (ref_is_bone_node(ai, a) || strstr(a->mName.data, "_$AssimpFbx$_"))) a = a->mParent;
    return a;
}

/* The static object matrix the documented conventions give mesh i: the
 * mesh node's G (the identity for glTF and .x), in the armature's space. */
static void ref_object_matrix(double out[16], const struct aiScene *ai, unsigned i)
{
    double g[16], ga[16], inv_ga[16];
    const struct aiNode *mn = ref_skinned_in_root_space(ai) ? NULL : ref_mesh_node(ai->mRootNode, i);
    if (mn) ref_global(g, NULL, mn, 0.0);
    else ref_identity(g);
    const struct aiNode *armature = ref_armature(ai);
    if (armature) ref_global(ga, NULL, armature, 0.0);
    else ref_identity(ga);
    ref_inverse(inv_ga, ga);
    ref_mul(out, inv_ga, g);
}

/* Checks ssk_scene_sample at `t_seconds` against Assimp's formula for every
 * bone of every mesh with bones, and the object matrices against G(m, t). */
static void check_against_assimp(const ssk_scene *scene, const struct aiScene *ai,
                                 uint32_t animation, double t_seconds)
{
    const ssk_rig *rig = ssk_scene_rig(scene);
    uint32_t nb = ssk_rig_bone_count(rig), nm = ssk_rig_mesh_count(rig);
    float *skin = malloc((size_t)nb * 16 * sizeof(float));
    float *obj = malloc((size_t)nm * 16 * sizeof(float));
    assert_non_null(skin);
    assert_non_null(obj);
    ssk_error err = {0};
    assert_int_equal(ssk_scene_sample(scene, animation, t_seconds, skin, obj, &err), SSK_OK);
    assert_true(ssk_matrices_validate(skin, nb, "skinning", &err) == SSK_OK);

    const struct aiAnimation *anim = ai->mAnimations[animation];
    double tps = anim->mTicksPerSecond != 0.0 ? anim->mTicksPerSecond : 25.0;
    double ticks = t_seconds * tps;
    double worst = 0;
    uint32_t m = 0, nodeless = 0;
    /* Rig space: the armature node's space at t. */
    const struct aiNode *armature = ref_armature(ai);
    double ga[16], inv_ga[16], rig_matrix[16];
    float rig_matrix_f[16];
    if (armature) ref_global(ga, anim, armature, ticks);
    else ref_identity(ga);
    ref_inverse(inv_ga, ga);
    assert_int_equal(ssk_scene_rig_matrix(scene, animation, t_seconds, rig_matrix_f, &err), SSK_OK);
    ref_from_float(rig_matrix, rig_matrix_f);
    assert_true(ref_max_diff(ga, rig_matrix, 16) / fmax(1.0, ref_max_abs(ga, 16)) <=
                MATRIX_TOLERANCE);
    for (unsigned i = 0; i < ai->mNumMeshes; ++i) {
        const struct aiMesh *mesh = ai->mMeshes[i];
        if (mesh->mNumBones == 0) continue;
        assert_true(m < nm);
        ssk_mesh_view view;
        assert_int_equal(ssk_rig_mesh(rig, m, &view, &err), SSK_OK);
        /* glTF 2.0 and .x ignore the transform of a skinned mesh's node. */
        const struct aiNode *mn =
            ref_skinned_in_root_space(ai) ? NULL : ref_mesh_node(ai->mRootNode, i);
        double gm[16], inv_gm[16], o_t[16], inv_o_t[16], o_rest[16];
        if (mn) ref_global(gm, anim, mn, ticks);
        else ref_identity(gm);
        double expected_o[16];
        ref_mul(expected_o, inv_ga, gm);
        ref_from_float(o_t, obj + 16 * (size_t)m);
        double d = ref_max_diff(expected_o, o_t, 16) / fmax(1.0, ref_max_abs(expected_o, 16));
        if (d > MATRIX_TOLERANCE)
            fprintf(stderr, "mesh %s: object matrix differs by %g at t=%g\n", mesh->mName.data, d,
                    t_seconds);
        assert_true(d <= MATRIX_TOLERANCE);
        ref_inverse(inv_gm, gm);
        ref_inverse(inv_o_t, o_t);
        ref_from_float(o_rest, view.object_matrix);
        for (unsigned k = 0; k < mesh->mNumBones; ++k) {
            const struct aiBone *bone = mesh->mBones[k];
            const struct aiNode *bn = ref_find_node(ai->mRootNode, bone->mName.data);
            int32_t b = ssk_rig_find_bone(rig, bone->mName.data);
            assert_true(b >= 0);
            if (!bn) {
                /* No node carries this bone: its influences are dropped at
                 * import and its skinning matrix is the identity. */
                float id[16];
                tu_mat4_identity(id);
                assert_true(tu_max_abs_diff(skin + 16 * (size_t)b, id, 16) == 0.0);
                ++nodeless;
                continue;
            }
            double gb[16], off[16], expected[16], got[16];
            ref_global(gb, anim, bn, ticks);
            ref_from_ai(off, &bone->mOffsetMatrix);
            ref_mul(expected, inv_gm, gb);
            ref_mul(expected, expected, off);
            ref_from_float(got, skin + 16 * (size_t)b);
            ref_mul(got, inv_o_t, got);
            ref_mul(got, got, o_rest);
            d = ref_max_diff(expected, got, 16) / fmax(1.0, ref_max_abs(expected, 16));
            if (d > worst) worst = d;
            if (d > MATRIX_TOLERANCE)
                fprintf(stderr, "mesh %s bone %s: skinning differs from Assimp by %g at t=%g\n",
                        mesh->mName.data, bone->mName.data, d, t_seconds);
            assert_true(d <= MATRIX_TOLERANCE);
        }
        ++m;
    }
    assert_int_equal(m, nm);
    printf("    t = %8.4f s: skinning matches Assimp (worst relative diff %.2e)", t_seconds,
           worst);
    if (nodeless) printf("; %u bone(s) without a node, their influences dropped", nodeless);
    printf("\n");
    free(skin);
    free(obj);
}

/* ------------------------------------------------------------------------ */
/* BCN_Epileptic.X                                                           */
/* ------------------------------------------------------------------------ */

static void test_bcn_meshes(void **state)
{
    (void)state;
    const struct aiScene *ai = ref_import(BCN_PATH);
    ssk_scene *scene = import_ok(BCN_PATH);
    const ssk_rig *rig = ssk_scene_rig(scene);
    assert_non_null(rig);
    ssk_error err = {0};

    static const char *const names[] = {"Torso", "Head", "Legs"};
    assert_int_equal(ssk_rig_mesh_count(rig), 3);
    assert_int_equal(ai->mNumMeshes, 3);
    uint32_t total_v = 0, total_f = 0;
    for (uint32_t m = 0; m < 3; ++m) {
        const struct aiMesh *mesh = ai->mMeshes[m];
        ssk_mesh_view v;
        assert_int_equal(ssk_rig_mesh(rig, m, &v, &err), SSK_OK);
        assert_string_equal(v.name, names[m]);
        uint32_t tris = 0;
        for (unsigned f = 0; f < mesh->mNumFaces; ++f) tris += mesh->mFaces[f].mNumIndices == 3;
        assert_int_equal(v.vertex_count, mesh->mNumVertices);
        assert_int_equal(v.triangle_count, tris);
        assert_int_equal(v.first_vertex, total_v);
        total_v += v.vertex_count;
        total_f += v.triangle_count;
        /* Same vertex order and triangles as Assimp's. */
        for (uint32_t i = 0; i < v.vertex_count; ++i) {
            assert_true(v.positions[3 * i] == mesh->mVertices[i].x);
            assert_true(v.positions[3 * i + 1] == mesh->mVertices[i].y);
            assert_true(v.positions[3 * i + 2] == mesh->mVertices[i].z);
        }
        for (uint32_t f = 0; f < v.triangle_count; ++f)
            for (int k = 0; k < 3; ++k)
                assert_int_equal(v.triangles[3 * f + k], mesh->mFaces[f].mIndices[k]);
        /* Object matrix: static G of the mesh's node in the armature's
         * space (.x: the node is ignored). */
        double g[16], o[16];
        ref_object_matrix(g, ai, m);
        ref_from_float(o, v.object_matrix);
        assert_true(ref_max_diff(g, o, 16) <= MATRIX_TOLERANCE);
    }
    assert_int_equal(total_v, ssk_rig_vertex_count(rig));
    assert_true(total_v > 3000);
    assert_int_equal(total_f, 5126); /* `assimp info` */
    printf("    BCN_Epileptic: %u vertices, %u triangles\n", total_v, total_f);
    ssk_scene_destroy(scene);
    aiReleaseImport(ai);
}

static void test_bcn_weights(void **state)
{
    (void)state;
    const struct aiScene *ai = ref_import(BCN_PATH);
    ssk_scene *scene = import_ok(BCN_PATH);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_error err = {0};
    uint32_t max_k = 0;
    for (uint32_t m = 0; m < 3; ++m) {
        const struct aiMesh *mesh = ai->mMeshes[m];
        ssk_mesh_view v;
        assert_int_equal(ssk_rig_mesh(rig, m, &v, &err), SSK_OK);
        uint32_t nv = v.vertex_count;
        double *sum = calloc(nv, sizeof(double));
        uint32_t *count = calloc(nv, sizeof(uint32_t));
        assert_non_null(sum);
        assert_non_null(count);
        for (unsigned k = 0; k < mesh->mNumBones; ++k)
            for (unsigned w = 0; w < mesh->mBones[k]->mNumWeights; ++w) {
                sum[mesh->mBones[k]->mWeights[w].mVertexId] += mesh->mBones[k]->mWeights[w].mWeight;
                count[mesh->mBones[k]->mWeights[w].mVertexId]++;
            }
        uint32_t k_mesh = 0;
        for (uint32_t i = 0; i < nv; ++i)
            if (count[i] > k_mesh) k_mesh = count[i];
        if (k_mesh > max_k) max_k = k_mesh;
        assert_int_equal(v.influence_count, k_mesh);
        /* Slot j of vertex i holds, in mesh bone order, the j-th bone that
         * weights it, with the weight normalized by the vertex total. */
        uint32_t *slot = calloc(nv, sizeof(uint32_t));
        assert_non_null(slot);
        for (unsigned k = 0; k < mesh->mNumBones; ++k) {
            const struct aiBone *bone = mesh->mBones[k];
            int32_t b = ssk_rig_find_bone(rig, bone->mName.data);
            assert_true(b >= 0);
            for (unsigned w = 0; w < bone->mNumWeights; ++w) {
                unsigned i = bone->mWeights[w].mVertexId;
                uint32_t j = slot[i]++;
                assert_int_equal(v.bone_indices[(size_t)i * v.influence_count + j], b);
                double expected = bone->mWeights[w].mWeight / sum[i];
                assert_true(fabs(v.weights[(size_t)i * v.influence_count + j] - expected) <=
                            WEIGHT_TOLERANCE);
            }
        }
        for (uint32_t i = 0; i < nv; ++i)
            for (uint32_t j = slot[i]; j < v.influence_count; ++j) {
                assert_int_equal(v.bone_indices[(size_t)i * v.influence_count + j], 0);
                assert_true(v.weights[(size_t)i * v.influence_count + j] == 0.0f);
            }
        free(slot);
        free(sum);
        free(count);
    }
    printf("    max influences per vertex: %u\n", max_k);
    ssk_scene_destroy(scene);
    aiReleaseImport(ai);
}

static void test_bcn_skeleton(void **state)
{
    (void)state;
    const struct aiScene *ai = ref_import(BCN_PATH);
    ssk_scene *scene = import_ok(BCN_PATH);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_error err = {0};
    uint32_t nb = ssk_rig_bone_count(rig);
    assert_int_equal(nb, 54); /* `assimp info` */

    /* Bones = union of aiBone names, first seen first; bind from the first
     * mesh that lists the bone. */
    uint32_t seen = 0;
    for (unsigned i = 0; i < ai->mNumMeshes; ++i) {
        const struct aiMesh *mesh = ai->mMeshes[i];
        double gm[16];
        ref_object_matrix(gm, ai, i);
        for (unsigned k = 0; k < mesh->mNumBones; ++k) {
            const struct aiBone *bone = mesh->mBones[k];
            int32_t b = ssk_rig_find_bone(rig, bone->mName.data);
            assert_true(b >= 0);
            if ((uint32_t)b < seen) continue; /* listed by an earlier mesh */
            assert_int_equal(b, seen);
            ++seen;
            double off[16], expected[16], got[16];
            ref_from_ai(off, &bone->mOffsetMatrix);
            ref_inverse(off, off);
            ref_mul(expected, gm, off);
            ssk_bone_view bv;
            assert_int_equal(ssk_rig_bone(rig, (uint32_t)b, &bv, &err), SSK_OK);
            ref_from_float(got, bv.bind_matrix);
            assert_true(ref_max_diff(expected, got, 16) <= MATRIX_TOLERANCE);
        }
    }
    assert_int_equal(seen, nb);

    /* Parent = nearest ancestor node that is a bone; heads, tails. */
    for (uint32_t b = 0; b < nb; ++b) {
        ssk_bone_view bv;
        assert_int_equal(ssk_rig_bone(rig, b, &bv, &err), SSK_OK);
        assert_true(ssk_matrices_validate(bv.bind_matrix, 1, "bind", &err) == SSK_OK);
        const struct aiNode *n = ref_find_node(ai->mRootNode, bv.name);
        assert_non_null(n);
        int32_t parent = -1;
        for (const struct aiNode *a = n->mParent; a && parent < 0; a = a->mParent)
            parent = ssk_rig_find_bone(rig, a->mName.data);
        assert_int_equal(bv.parent, parent);
        assert_true(bv.head[0] == bv.bind_matrix[3] && bv.head[1] == bv.bind_matrix[7] &&
                    bv.head[2] == bv.bind_matrix[11]);
        double dt[3] = {bv.tail[0] - bv.head[0], bv.tail[1] - bv.head[1], bv.tail[2] - bv.head[2]};
        double len = sqrt(dt[0] * dt[0] + dt[1] * dt[1] + dt[2] * dt[2]);
        assert_true(isfinite(len) && len > 0.0);
        /* The tail is a child's head when the bone has children, else along
         * the bind Y axis. */
        bool has_child = false, tail_is_child_head = false;
        for (uint32_t c = 0; c < nb; ++c) {
            ssk_bone_view cv;
            assert_int_equal(ssk_rig_bone(rig, c, &cv, &err), SSK_OK);
            if (cv.parent != (int32_t)b) continue;
            has_child = true;
            if (memcmp(cv.head, bv.tail, 3 * sizeof(float)) == 0) tail_is_child_head = true;
        }
        if (has_child && tail_is_child_head) continue;
        double y[3] = {bv.bind_matrix[1], bv.bind_matrix[5], bv.bind_matrix[9]};
        double ly = sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
        double cosang = (dt[0] * y[0] + dt[1] * y[1] + dt[2] * y[2]) / (len * ly);
        assert_true(cosang > 1.0 - 1e-4);
    }
    ssk_scene_destroy(scene);
    aiReleaseImport(ai);
}

static void test_bcn_animation(void **state)
{
    (void)state;
    const struct aiScene *ai = ref_import(BCN_PATH);
    ssk_scene *scene = import_ok(BCN_PATH);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_error err = {0};
    assert_int_equal(ssk_scene_animation_count(scene), 1);
    ssk_animation_info info;
    assert_int_equal(ssk_scene_animation(scene, 0, &info, &err), SSK_OK);
    assert_string_equal(info.name, ai->mAnimations[0]->mName.data);
    assert_true(info.duration_seconds > 0.0);
    assert_true(info.ticks_per_second == ai->mAnimations[0]->mTicksPerSecond);
    assert_true(fabs(info.duration_seconds - 3.3) < 1e-9); /* 15840 ticks at 4800/s */
    assert_int_equal(info.channel_count, ai->mAnimations[0]->mNumChannels);
    assert_int_equal(ssk_animation_frame_count(&info, 24.0), 80); /* floor(79.2) + 1 */
    printf("    animation '%s': %.3f s, %.0f ticks/s, %u channels\n", info.name,
           info.duration_seconds, info.ticks_per_second, info.channel_count);

    uint32_t nb = ssk_rig_bone_count(rig), nm = ssk_rig_mesh_count(rig);
    float *s0 = malloc((size_t)nb * 16 * sizeof(float));
    float *s1 = malloc((size_t)nb * 16 * sizeof(float));
    float *o0 = malloc((size_t)nm * 16 * sizeof(float));
    assert_non_null(s0);
    assert_non_null(s1);
    assert_non_null(o0);
    assert_int_equal(ssk_scene_sample(scene, 0, 0.0, s0, o0, &err), SSK_OK);
    assert_int_equal(ssk_scene_sample(scene, 0, 0.5 * info.duration_seconds, s1, NULL, &err),
                     SSK_OK);
    assert_int_equal(ssk_matrices_validate(s0, nb, "skinning", &err), SSK_OK);
    assert_int_equal(ssk_matrices_validate(o0, nm, "object", &err), SSK_OK);
    assert_true(tu_max_abs_diff(s0, s1, (size_t)nb * 16) > POSE_CHANGE_MIN);
    free(s0);
    free(s1);
    free(o0);

    /* Exactly on a key of every animated rotation channel (key 50 of the
     * first channel with more than one rotation key), then at t = 0, between
     * two keys, before the first key and after the last (clamped). */
    const struct aiAnimation *anim = ai->mAnimations[0];
    const struct aiNodeAnim *multi = NULL;
    for (unsigned k = 0; k < anim->mNumChannels && !multi; ++k)
        if (anim->mChannels[k]->mNumRotationKeys > 51) multi = anim->mChannels[k];
    assert_non_null(multi);
    double tps = anim->mTicksPerSecond;
    double key_time = multi->mRotationKeys[50].mTime / tps;
    double between = 0.5 * (multi->mRotationKeys[10].mTime + multi->mRotationKeys[11].mTime) / tps;
    check_against_assimp(scene, ai, 0, key_time);
    check_against_assimp(scene, ai, 0, 0.0);
    check_against_assimp(scene, ai, 0, between);
    check_against_assimp(scene, ai, 0, -1.0);
    check_against_assimp(scene, ai, 0, info.duration_seconds + 1.0);
    ssk_scene_destroy(scene);
    aiReleaseImport(ai);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

static void expect_import_failure(const char *path, ssk_status a, ssk_status b)
{
    ssk_scene *scene = (ssk_scene *)&scene; /* must be reset to NULL */
    ssk_error err = {0};
    ssk_status st = ssk_scene_import(&scene, path, &err);
    printf("    %s -> %s: %s\n", path, ssk_status_name(st), err.message);
    assert_true(st == a || st == b);
    assert_int_equal(err.status, st);
    assert_true(strlen(err.message) > 0);
    assert_null(scene);
}

static char *write_temp(const char *dir, const char *name, const void *data, size_t size)
{
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    assert_non_null(path);
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void test_bad_files(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();

    /* Random bytes (fixed-seed xorshift), with and without a known extension. */
    unsigned char garbage[4096];
    uint32_t x = 0x9e3779b9u;
    for (size_t i = 0; i < sizeof garbage; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        garbage[i] = (unsigned char)x;
    }
    char *g1 = write_temp(dir, "garbage.bin", garbage, sizeof garbage);
    char *g2 = write_temp(dir, "garbage.x", garbage, sizeof garbage);
    char *g3 = write_temp(dir, "garbage.fbx", garbage, sizeof garbage);
    expect_import_failure(g1, SSK_ERROR_IMPORT, SSK_ERROR_NO_SKELETON);
    expect_import_failure(g2, SSK_ERROR_IMPORT, SSK_ERROR_NO_SKELETON);
    expect_import_failure(g3, SSK_ERROR_IMPORT, SSK_ERROR_NO_SKELETON);

    /* First 2000 bytes of BCN_Epileptic.X. */
    char head[2000];
    FILE *f = fopen(BCN_PATH, "rb");
    assert_non_null(f);
    assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    char *t = write_temp(dir, "truncated.X", head, sizeof head);
    expect_import_failure(t, SSK_ERROR_IMPORT, SSK_ERROR_NO_SKELETON);

    /* Empty file. */
    char *e = write_temp(dir, "empty.x", "", 0);
    expect_import_failure(e, SSK_ERROR_IMPORT, SSK_ERROR_NO_SKELETON);

    /* Missing file and a directory: SSK_ERROR_IO naming the path. */
    char *missing = malloc(strlen(dir) + 32);
    assert_non_null(missing);
    sprintf(missing, "%s/does-not-exist.x", dir);
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&scene, missing, &err), SSK_ERROR_IO);
    assert_non_null(strstr(err.message, missing));
    assert_null(scene);
    expect_import_failure(dir, SSK_ERROR_IO, SSK_ERROR_IO);

    unlink(g1);
    unlink(g2);
    unlink(g3);
    unlink(t);
    unlink(e);
    rmdir(dir);
    free(g1);
    free(g2);
    free(g3);
    free(t);
    free(e);
    free(missing);
    free(dir);
}

static void test_no_skeleton(void **state)
{
    (void)state;
    const char *path = SSK_MODELS_DIR "/X/test.x";
    /* Precondition from Assimp itself: meshes, none with bones. */
    const struct aiScene *ai = ref_import(path);
    assert_true(ai->mNumMeshes > 0);
    for (unsigned i = 0; i < ai->mNumMeshes; ++i) assert_int_equal(ai->mMeshes[i]->mNumBones, 0);
    aiReleaseImport(ai);

    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(&scene, path, &err), SSK_ERROR_NO_SKELETON);
    assert_int_equal(err.status, SSK_ERROR_NO_SKELETON);
    assert_non_null(strstr(err.message, path));
    assert_null(scene);
}

static void test_invalid_arguments(void **state)
{
    (void)state;
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    assert_int_equal(ssk_scene_import(NULL, BCN_PATH, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_scene_import(&scene, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_scene_import(&scene, NULL, NULL), SSK_ERROR_INVALID_ARGUMENT);
    assert_null(ssk_scene_rig(NULL));
    assert_int_equal(ssk_scene_animation_count(NULL), 0);
    ssk_scene_destroy(NULL);

    scene = import_ok(BCN_PATH);
    uint32_t nb = ssk_rig_bone_count(ssk_scene_rig(scene));
    float *skin = malloc((size_t)nb * 16 * sizeof(float));
    assert_non_null(skin);
    ssk_animation_info info;
    assert_int_equal(ssk_scene_animation(NULL, 0, &info, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_scene_animation(scene, 0, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_scene_animation(scene, 1, &info, &err), SSK_ERROR_NO_ANIMATION);
    assert_true(strlen(err.message) > 0);
    assert_int_equal(ssk_scene_sample(NULL, 0, 0.0, skin, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_scene_sample(scene, 0, 0.0, NULL, NULL, &err), SSK_ERROR_INVALID_ARGUMENT);
    assert_int_equal(ssk_scene_sample(scene, 1, 0.0, skin, NULL, &err), SSK_ERROR_NO_ANIMATION);
    assert_int_equal(ssk_scene_sample(scene, UINT32_MAX, 0.0, skin, NULL, &err),
                     SSK_ERROR_NO_ANIMATION);
    assert_int_equal(ssk_scene_sample(scene, 0, NAN, skin, NULL, &err), SSK_ERROR_NONFINITE);
    assert_int_equal(ssk_scene_sample(scene, 0, INFINITY, skin, NULL, &err), SSK_ERROR_NONFINITE);
    assert_int_equal(ssk_scene_sample(scene, 0, -INFINITY, skin, NULL, NULL), SSK_ERROR_NONFINITE);
    free(skin);
    ssk_scene_destroy(scene);
}

static void test_frame_count(void **state)
{
    (void)state;
    ssk_animation_info info = {"a", 1.0, 25.0, 1};
    assert_int_equal(ssk_animation_frame_count(&info, 24.0), 25);
    info.duration_seconds = 0.0;
    assert_int_equal(ssk_animation_frame_count(&info, 24.0), 1);
    info.duration_seconds = 0.5;
    assert_int_equal(ssk_animation_frame_count(&info, 3.0), 2); /* floor(1.5) + 1 */
    /* 0.29 * 100 = 28.999999999999996 in binary: the epsilon counts frame 29. */
    info.duration_seconds = 0.29;
    assert_true(info.duration_seconds * 100.0 < 29.0);
    assert_int_equal(ssk_animation_frame_count(&info, 100.0), 30);
    info.duration_seconds = 0.2899;
    assert_int_equal(ssk_animation_frame_count(&info, 100.0), 29);
    assert_int_equal(ssk_animation_frame_count(&info, 0.0), 0);
    assert_int_equal(ssk_animation_frame_count(&info, -24.0), 0);
    assert_int_equal(ssk_animation_frame_count(&info, NAN), 0);
    assert_int_equal(ssk_animation_frame_count(NULL, 24.0), 0);
}

/* ------------------------------------------------------------------------ */
/* A small hand-written .x file: two bones, a skinned quad, an unskinned     */
/* triangle; Bone0 turns 0 -> 160 -> 200 degrees about Z, so slerp passes    */
/* through 180 degrees at t = 1.5 s; positions differ at both ends (clamps). */
/* (Assimp's X reader rebuilds quaternions from matrices, so the hemisphere  */
/* of the keys is its own; opposite-hemisphere keys are checked on           */
/* Testwuson.X in test_other_files.)                                          */
/* ------------------------------------------------------------------------ */

static const char synthetic_x[] =
    "xof 0303txt 0032\n"
    "\n"
    "AnimTicksPerSecond {\n"
    "    10;\n"
    "}\n"
    "Frame Root {\n"
    "    FrameTransformMatrix {\n"
    "        1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.5,0.0,0.0,1.0;;\n"
    "    }\n"
    "    Frame Bone0 {\n"
    "        FrameTransformMatrix {\n"
    "            2.0,0.0,0.0,0.0,0.0,2.0,0.0,0.0,0.0,0.0,2.0,0.0,0.0,1.0,0.0,1.0;;\n"
    "        }\n"
    "        Frame Bone1 {\n"
    "            FrameTransformMatrix {\n"
    "                1.0,0.0,0.0,0.0,0.0,0.866025,0.5,0.0,0.0,-0.5,0.866025,0.0,0.0,1.0,0.0,1.0;;\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    Frame Skinned {\n"
    "        FrameTransformMatrix {\n"
    "            1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,1.0,1.0;;\n"
    "        }\n"
    "        Mesh Quad {\n"
    "            4;\n"
    "            0.0;0.0;0.0;,\n"
    "            1.0;0.0;0.0;,\n"
    "            1.0;3.0;0.0;,\n"
    "            0.0;3.0;0.0;;\n"
    "            2;\n"
    "            3;0,1,2;,\n"
    "            3;0,2,3;;\n"
    "            XSkinMeshHeader {\n"
    "                2;\n"
    "                2;\n"
    "                2;\n"
    "            }\n"
    "            SkinWeights {\n"
    "                \"Bone0\";\n"
    "                4;\n"
    "                0,1,2,3;\n"
    "                1.0,1.0,0.5,0.5;\n"
    "                0.5,0.0,0.0,0.0,0.0,0.5,0.0,0.0,0.0,0.0,0.5,0.0,-0.25,-0.5,-0.5,1.0;;\n"
    "            }\n"
    "            SkinWeights {\n"
    "                \"Bone1\";\n"
    "                2;\n"
    "                2,3;\n"
    "                0.5,0.5;\n"
    "                1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,-0.5,-3.0,-1.0,1.0;;\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    Frame Static {\n"
    "        FrameTransformMatrix {\n"
    "            1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0;;\n"
    "        }\n"
    "        Mesh Tri {\n"
    "            3;\n"
    "            0.0;0.0;0.0;,\n"
    "            1.0;0.0;0.0;,\n"
    "            0.0;1.0;0.0;;\n"
    "            1;\n"
    "            3;0,1,2;;\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n"
    "AnimationSet Swing {\n"
    "    Animation {\n"
    "        { Bone0 }\n"
    "        AnimationKey {\n"
    "            0;\n"
    "            3;\n"
    "            0;4;1.0,0.0,0.0,0.0;;,\n"
    "            10;4;0.173648,0.0,0.0,0.984808;;,\n"
    "            20;4;0.173648,0.0,0.0,-0.984808;;;\n"
    "        }\n"
    "        AnimationKey {\n"
    "            2;\n"
    "            2;\n"
    "            0;3;0.0,1.0,0.0;;,\n"
    "            20;3;1.0,2.0,0.0;;;\n"
    "        }\n"
    "    }\n"
    "    Animation {\n"
    "        { Bone1 }\n"
    "        AnimationKey {\n"
    "            2;\n"
    "            2;\n"
    "            0;3;0.0,1.0,0.0;;,\n"
    "            20;3;0.0,1.5,0.5;;;\n"
    "        }\n"
    "    }\n"
    "    Animation {\n"
    "        { Skinned }\n"
    "        AnimationKey {\n"
    "            2;\n"
    "            2;\n"
    "            0;3;0.0,0.0,1.0;;,\n"
    "            20;3;0.0,1.0,1.0;;;\n"
    "        }\n"
    "    }\n"
    "}\n";

static void test_synthetic_x(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = write_temp(dir, "synthetic.x", synthetic_x, sizeof synthetic_x - 1);
    const struct aiScene *ai = ref_import(path);
    ssk_scene *scene = import_ok(path);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_error err = {0};
    /* The unskinned triangle is skipped. */
    assert_int_equal(ai->mNumMeshes, 2);
    assert_int_equal(ssk_rig_mesh_count(rig), 1);
    assert_int_equal(ssk_rig_vertex_count(rig), 4);
    assert_int_equal(ssk_rig_bone_count(rig), 2);
    assert_int_equal(ssk_rig_find_bone(rig, "Bone0"), 0);
    assert_int_equal(ssk_rig_find_bone(rig, "Bone1"), 1);
    ssk_bone_view b0, b1;
    assert_int_equal(ssk_rig_bone(rig, 0, &b0, &err), SSK_OK);
    assert_int_equal(ssk_rig_bone(rig, 1, &b1, &err), SSK_OK);
    assert_int_equal(b0.parent, -1);
    assert_int_equal(b1.parent, 0);
    assert_memory_equal(b0.tail, b1.head, 3 * sizeof(float));

    ssk_animation_info info;
    assert_int_equal(ssk_scene_animation(scene, 0, &info, &err), SSK_OK);
    assert_true(info.ticks_per_second == 10.0);
    assert_true(fabs(info.duration_seconds - 2.0) < 1e-12);
    assert_int_equal(ssk_animation_frame_count(&info, 24.0), 49);

    static const double times[] = {0.0, 0.5, 1.0, 1.25, 1.5, 1.9, 2.0, -1.0, 3.0};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; ++i)
        check_against_assimp(scene, ai, 0, times[i]);

    /* By hand: at 1.5 s Bone0 is half-way from 160 to 200 degrees, i.e. 180
     * degrees about Z, with its static scale 2 (no scale animation), so the
     * 3x3 part of G(Bone0) = S_0 · bind_0 is diag(-2, -2, 2). */
    float skin[2 * 16], g[16];
    assert_int_equal(ssk_scene_sample(scene, 0, 1.5, skin, NULL, &err), SSK_OK);
    tu_mat4_mul(g, skin, b0.bind_matrix);
    static const float expected3[9] = {-2, 0, 0, 0, -2, 0, 0, 0, 2};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            assert_true(fabsf(g[r * 4 + c] - expected3[r * 3 + c]) < 1e-5f);

    aiReleaseImport(ai);
    ssk_scene_destroy(scene);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

/* A generated .x file whose vertex 0 is weighted by more bones than
 * SSK_MAX_INFLUENCES (weight k + 1 for bone k): the import keeps the
 * SSK_MAX_INFLUENCES largest, in mesh bone order. */
#define MANY_BONES (SSK_MAX_INFLUENCES + 6)

static void test_influence_cap(void **state)
{
    (void)state;
    char *dir = tu_temp_dir();
    char *path = malloc(strlen(dir) + 16);
    assert_non_null(path);
    sprintf(path, "%s/many.x", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    static const char *const identity =
        "1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0;;";
    fprintf(f, "xof 0303txt 0032\n\nFrame Root {\n FrameTransformMatrix { %s }\n", identity);
    for (int b = 0; b < MANY_BONES; ++b)
        fprintf(f, " Frame B%d {\n  FrameTransformMatrix { %s }\n }\n", b, identity);
    fprintf(f, " Frame M {\n  FrameTransformMatrix { %s }\n  Mesh Tri {\n   3;\n"
               "   0.0;0.0;0.0;,\n   1.0;0.0;0.0;,\n   0.0;1.0;0.0;;\n   1;\n   3;0,1,2;;\n"
               "   XSkinMeshHeader {\n    %d;\n    %d;\n    %d;\n   }\n",
            identity, MANY_BONES, MANY_BONES, MANY_BONES);
    for (int b = 0; b < MANY_BONES; ++b) {
        if (b == 0)
            fprintf(f, "   SkinWeights {\n    \"B0\";\n    3;\n    0,1,2;\n    1.0,1.0,1.0;\n");
        else
            fprintf(f, "   SkinWeights {\n    \"B%d\";\n    1;\n    0;\n    %d.0;\n", b, b + 1);
        fprintf(f, "    %s\n   }\n", identity);
    }
    fprintf(f, "  }\n }\n}\n");
    assert_int_equal(fclose(f), 0);

    const struct aiScene *ai = ref_import(path);
    assert_int_equal(ai->mNumMeshes, 1);
    assert_int_equal(ai->mMeshes[0]->mNumBones, MANY_BONES);
    aiReleaseImport(ai);

    ssk_scene *scene = import_ok(path);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_error err = {0};
    ssk_mesh_view v;
    assert_int_equal(ssk_rig_bone_count(rig), MANY_BONES);
    assert_int_equal(ssk_rig_mesh(rig, 0, &v, &err), SSK_OK);
    assert_int_equal(v.influence_count, SSK_MAX_INFLUENCES);
    /* Kept: bones MANY_BONES - SSK_MAX_INFLUENCES .. MANY_BONES - 1. */
    double total = 0;
    for (int b = MANY_BONES - SSK_MAX_INFLUENCES; b < MANY_BONES; ++b) total += b + 1;
    for (uint32_t j = 0; j < SSK_MAX_INFLUENCES; ++j) {
        int32_t b = v.bone_indices[j];
        char name[16];
        snprintf(name, sizeof name, "B%u", (unsigned)(MANY_BONES - SSK_MAX_INFLUENCES + j));
        assert_int_equal(b, ssk_rig_find_bone(rig, name));
        double expected = (double)(MANY_BONES - SSK_MAX_INFLUENCES + j + 1) / total;
        assert_true(fabs(v.weights[j] - expected) <= WEIGHT_TOLERANCE);
    }
    /* Vertices 1 and 2: bone B0 alone, the rest padded with (0, 0). */
    for (uint32_t i = 1; i < 3; ++i) {
        assert_int_equal(v.bone_indices[i * v.influence_count], ssk_rig_find_bone(rig, "B0"));
        assert_true(v.weights[i * v.influence_count] == 1.0f);
        for (uint32_t j = 1; j < v.influence_count; ++j) {
            assert_int_equal(v.bone_indices[i * v.influence_count + j], 0);
            assert_true(v.weights[i * v.influence_count + j] == 0.0f);
        }
    }
    ssk_scene_destroy(scene);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

/* ------------------------------------------------------------------------ */
/* Other rigged files of assimp-testmodels: import or fail cleanly.          */
/* ------------------------------------------------------------------------ */

static void probe_file(const char *relative)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", SSK_MODELS_DIR, relative);
    ssk_scene *scene = NULL;
    ssk_error err = {0};
    ssk_status st = ssk_scene_import(&scene, path, &err);
    if (st != SSK_OK) {
        printf("    %s: %s: %s\n", relative, ssk_status_name(st), err.message);
        assert_true(st == SSK_ERROR_IMPORT || st == SSK_ERROR_NO_SKELETON ||
                    st == SSK_ERROR_NONFINITE || st == SSK_ERROR_UNSUPPORTED);
        assert_true(strlen(err.message) > 0);
        assert_null(scene);
        return;
    }
    const ssk_rig *rig = ssk_scene_rig(scene);
    printf("    %s: %u mesh(es), %u vertices, %u bones (%u deforming), %u max influences\n",
           relative, ssk_rig_mesh_count(rig), ssk_rig_vertex_count(rig), ssk_rig_bone_count(rig),
           ssk_rig_deforming_bone_count(rig), ssk_rig_max_influences(rig));
    for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
        ssk_mesh_view v;
        assert_int_equal(ssk_rig_mesh(rig, m, &v, &err), SSK_OK);
        printf("      mesh '%s': %u vertices, %u triangles, K = %u\n", v.name, v.vertex_count,
               v.triangle_count, v.influence_count);
    }
    for (uint32_t b = 0; b < ssk_rig_bone_count(rig); ++b) {
        ssk_bone_view bv;
        assert_int_equal(ssk_rig_bone(rig, b, &bv, &err), SSK_OK);
        assert_true(ssk_matrices_validate(bv.bind_matrix, 1, "bind", &err) == SSK_OK);
    }
    const struct aiScene *ai = ref_import(path);
    uint32_t na = ssk_scene_animation_count(scene);
    assert_int_equal(na, ai->mNumAnimations);
    for (uint32_t a = 0; a < na; ++a) {
        ssk_animation_info info;
        assert_int_equal(ssk_scene_animation(scene, a, &info, &err), SSK_OK);
        printf("      animation %u '%s': %.3f s at %.0f ticks/s, %u channels, %u frames at 24 "
               "fps\n",
               a, info.name, info.duration_seconds, info.ticks_per_second, info.channel_count,
               ssk_animation_frame_count(&info, 24.0));
        assert_true(info.duration_seconds >= 0.0);
        double d = info.duration_seconds;
        check_against_assimp(scene, ai, a, 0.0);
        check_against_assimp(scene, ai, a, 0.37 * d);
        check_against_assimp(scene, ai, a, d);
        /* Half-way between the first consecutive rotation keys in opposite
         * hemispheres (dot < 0), where only the shortest path is right. */
        const struct aiAnimation *anim = ai->mAnimations[a];
        double tps = anim->mTicksPerSecond != 0.0 ? anim->mTicksPerSecond : 25.0;
        bool found = false;
        for (unsigned c = 0; c < anim->mNumChannels && !found; ++c) {
            const struct aiNodeAnim *ch = anim->mChannels[c];
            for (unsigned k = 0; k + 1 < ch->mNumRotationKeys && !found; ++k) {
                struct aiQuaternion p = ch->mRotationKeys[k].mValue,
                                    q = ch->mRotationKeys[k + 1].mValue;
                if (p.w * q.w + p.x * q.x + p.y * q.y + p.z * q.z >= 0) continue;
                found = true;
                printf("      '%s': rotation keys %u, %u in opposite hemispheres\n",
                       ch->mNodeName.data, k, k + 1);
                check_against_assimp(
                    scene, ai, a,
                    0.5 * (ch->mRotationKeys[k].mTime + ch->mRotationKeys[k + 1].mTime) / tps);
            }
        }
    }
    if (na == 0) {
        float *skin = malloc((size_t)ssk_rig_bone_count(rig) * 16 * sizeof(float));
        assert_non_null(skin);
        assert_int_equal(ssk_scene_sample(scene, 0, 0.0, skin, NULL, &err),
                         SSK_ERROR_NO_ANIMATION);
        free(skin);
    }
    aiReleaseImport(ai);
    ssk_scene_destroy(scene);
}

/* X/anim_test.x weights its mesh to joint3 and joint4, which no node
 * carries: as Blender ignores a vertex group without a bone, their
 * influences are dropped and the rest renormalized (a vertex weighted to
 * them alone stays at rest). */
static void test_bones_without_node(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/X/anim_test.x", SSK_MODELS_DIR);
    ssk_scene *scene = import_ok(path);
    const ssk_rig *rig = ssk_scene_rig(scene);
    ssk_error err = {0};
    int32_t j3 = ssk_rig_find_bone(rig, "joint3"), j4 = ssk_rig_find_bone(rig, "joint4");
    assert_true(j3 >= 0 && j4 >= 0);
    int has_node = 1;
    uint32_t dropped = 0;
    assert_int_equal(ssk_scene_bone_node(scene, (uint32_t)j3, &has_node, &dropped, &err), SSK_OK);
    assert_int_equal(has_node, 0);
    assert_int_equal(dropped, 484);
    assert_int_equal(ssk_scene_bone_node(scene, 0, &has_node, &dropped, &err), SSK_OK);
    assert_int_equal(has_node, 1);
    assert_int_equal(dropped, 0);
    assert_int_equal(ssk_scene_bone_node(scene, 99, &has_node, &dropped, &err),
                     SSK_ERROR_INVALID_ARGUMENT);
    ssk_mesh_view v;
    assert_int_equal(ssk_rig_mesh(rig, 0, &v, &err), SSK_OK);
    uint32_t at_rest = 0;
    for (uint32_t i = 0; i < v.vertex_count; ++i) {
        float sum = 0.0f;
        for (uint32_t k = 0; k < v.influence_count; ++k) {
            float w = v.weights[(size_t)i * v.influence_count + k];
            int32_t b = v.bone_indices[(size_t)i * v.influence_count + k];
            if (w > 0.0f) assert_true(b != j3 && b != j4);
            sum += w;
        }
        if (sum == 0.0f) at_rest++;
        else assert_true(fabsf(sum - 1.0f) < 1e-5f);
    }
    assert_int_equal(at_rest, 1);
    assert_int_equal(ssk_rig_deforming_bone_count(rig), 2);
    ssk_scene_destroy(scene);
}

static void test_other_files(void **state)
{
    (void)state;
    probe_file("FBX/huesitos.fbx");
    probe_file("FBX/animation_with_skeleton.fbx");
    probe_file("glTF2/simple_skin/simple_skin.gltf");
    probe_file("X/anim_test.x");
    probe_file("X/Testwuson.X");
    probe_file("X/test_cube_text.x"); /* one bone, no animation */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bcn_meshes),
        cmocka_unit_test(test_bcn_weights),
        cmocka_unit_test(test_bcn_skeleton),
        cmocka_unit_test(test_bcn_animation),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_no_skeleton),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_frame_count),
        cmocka_unit_test(test_synthetic_x),
        cmocka_unit_test(test_influence_cap),
        cmocka_unit_test(test_bones_without_node),
        cmocka_unit_test(test_other_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
