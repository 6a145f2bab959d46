/*
 * assimp_dump FILE OUT.json
 *
 * Imports FILE with Assimp (exactly aiProcess_Triangulate |
 * aiProcess_JoinIdenticalVertices, SpringSkin's flags, so the vertex order
 * is the same) and writes the raw aiScene as JSON, uninterpreted, for the
 * independent numpy reference of tests/python/assimp_reference.py:
 *
 *   {"file": ..., "assimp_version": "M.m.r",
 *    "metadata": {key: value} (the scene's string metadata, e.g.
 *                 "SourceAsset_Format": "glTF2 Importer"),
 *    "nodes": [{"name", "parent" (index, -1 for the root; depth-first
 *               pre-order, so a parent comes before its children),
 *               "transform" (16 numbers, row-major a1..d4), "meshes"}],
 *    "meshes": [{"name", "vertices" [[x,y,z]...], "faces" [[i,j,k]...]
 *                (triangles only; points and lines dropped),
 *                "bones": [{"name", "offset" (16, row-major),
 *                           "weights" [[vertex, weight]...]}]}],
 *    "animations": [{"name", "duration", "ticks_per_second",
 *                    "channels": [{"node", "position_keys" [[t,x,y,z]...],
 *                                  "rotation_keys" [[t,w,x,y,z]...],
 *                                  "scaling_keys" [[t,x,y,z]...]}]}]}
 *
 * The file is written to OUT.json.tmp.<pid> and renamed. Errors print
 * "assimp_dump: error: ..." on stderr and exit with 1 (2 for usage).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <assimp/version.h>
#include <json-c/json.h>

#define DUMP_FLAGS (aiProcess_Triangulate | aiProcess_JoinIdenticalVertices)

static int fail(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "assimp_dump: error: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return 1;
}

/* Every add below goes through these; json-c returns NULL only when out
 * of memory, which aborts the dump (checked once at the end through
 * `oom`). */
static int oom;

static json_object *num(double v)
{
    json_object *o = json_object_new_double(v);
    if (!o)
        oom = 1;
    return o;
}

static json_object *str(const struct aiString *s)
{
    json_object *o = json_object_new_string_len(s->data, (int)s->length);
    if (!o)
        oom = 1;
    return o;
}

static json_object *arr(void)
{
    json_object *o = json_object_new_array();
    if (!o)
        oom = 1;
    return o;
}

static json_object *obj(void)
{
    json_object *o = json_object_new_object();
    if (!o)
        oom = 1;
    return o;
}

static void push(json_object *a, json_object *v)
{
    if (!a || !v || json_object_array_add(a, v) != 0)
        oom = 1;
}

static void put(json_object *o, const char *key, json_object *v)
{
    if (!o || !v || json_object_object_add(o, key, v) != 0)
        oom = 1;
}

static json_object *matrix(const struct aiMatrix4x4 *m)
{
    const ai_real v[16] = {m->a1, m->a2, m->a3, m->a4, m->b1, m->b2, m->b3, m->b4,
                           m->c1, m->c2, m->c3, m->c4, m->d1, m->d2, m->d3, m->d4};
    json_object *a = arr();
    for (int i = 0; i < 16; i++)
        push(a, num(v[i]));
    return a;
}

static json_object *vec3(double t, int with_time, const struct aiVector3D *v)
{
    json_object *a = arr();
    if (with_time)
        push(a, num(t));
    push(a, num(v->x));
    push(a, num(v->y));
    push(a, num(v->z));
    return a;
}

/* Depth-first pre-order: the node gets the next index, then its children. */
static void dump_nodes(const struct aiNode *node, int parent, json_object *out)
{
    int index = (int)json_object_array_length(out);
    json_object *n = obj();
    put(n, "name", str(&node->mName));
    put(n, "parent", json_object_new_int(parent));
    put(n, "transform", matrix(&node->mTransformation));
    json_object *meshes = arr();
    for (unsigned i = 0; i < node->mNumMeshes; i++)
        push(meshes, json_object_new_int((int)node->mMeshes[i]));
    put(n, "meshes", meshes);
    push(out, n);
    if (oom)
        return;
    for (unsigned i = 0; i < node->mNumChildren; i++)
        dump_nodes(node->mChildren[i], index, out);
}

static json_object *dump_mesh(const struct aiMesh *mesh)
{
    json_object *m = obj();
    put(m, "name", str(&mesh->mName));
    json_object *vertices = arr();
    for (unsigned i = 0; i < mesh->mNumVertices && !oom; i++)
        push(vertices, vec3(0.0, 0, &mesh->mVertices[i]));
    put(m, "vertices", vertices);
    json_object *faces = arr();
    for (unsigned i = 0; i < mesh->mNumFaces && !oom; i++) {
        const struct aiFace *f = &mesh->mFaces[i];
        if (f->mNumIndices != 3)
            continue;
        json_object *t = arr();
        for (int k = 0; k < 3; k++)
            push(t, json_object_new_int((int)f->mIndices[k]));
        push(faces, t);
    }
    put(m, "faces", faces);
    json_object *bones = arr();
    for (unsigned b = 0; b < mesh->mNumBones && !oom; b++) {
        const struct aiBone *bone = mesh->mBones[b];
        json_object *jb = obj();
        put(jb, "name", str(&bone->mName));
        put(jb, "offset", matrix(&bone->mOffsetMatrix));
        json_object *weights = arr();
        for (unsigned w = 0; w < bone->mNumWeights && !oom; w++) {
            json_object *pair = arr();
            push(pair, json_object_new_int((int)bone->mWeights[w].mVertexId));
            push(pair, num(bone->mWeights[w].mWeight));
            push(weights, pair);
        }
        put(jb, "weights", weights);
        push(bones, jb);
    }
    put(m, "bones", bones);
    return m;
}

static json_object *dump_channel(const struct aiNodeAnim *ch)
{
    json_object *c = obj();
    put(c, "node", str(&ch->mNodeName));
    json_object *pos = arr();
    for (unsigned k = 0; k < ch->mNumPositionKeys && !oom; k++)
        push(pos, vec3(ch->mPositionKeys[k].mTime, 1, &ch->mPositionKeys[k].mValue));
    put(c, "position_keys", pos);
    json_object *rot = arr();
    for (unsigned k = 0; k < ch->mNumRotationKeys && !oom; k++) {
        const struct aiQuatKey *q = &ch->mRotationKeys[k];
        json_object *a = arr();
        push(a, num(q->mTime));
        push(a, num(q->mValue.w));
        push(a, num(q->mValue.x));
        push(a, num(q->mValue.y));
        push(a, num(q->mValue.z));
        push(rot, a);
    }
    put(c, "rotation_keys", rot);
    json_object *scl = arr();
    for (unsigned k = 0; k < ch->mNumScalingKeys && !oom; k++)
        push(scl, vec3(ch->mScalingKeys[k].mTime, 1, &ch->mScalingKeys[k].mValue));
    put(c, "scaling_keys", scl);
    return c;
}

static json_object *dump_animation(const struct aiAnimation *anim)
{
    json_object *a = obj();
    put(a, "name", str(&anim->mName));
    put(a, "duration", num(anim->mDuration));
    put(a, "ticks_per_second", num(anim->mTicksPerSecond));
    json_object *channels = arr();
    for (unsigned i = 0; i < anim->mNumChannels && !oom; i++)
        push(channels, dump_channel(anim->mChannels[i]));
    put(a, "channels", channels);
    return a;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: assimp_dump FILE OUT.json\n");
        return 2;
    }
    const char *path = argv[1], *out_path = argv[2];
    const struct aiScene *scene = aiImportFile(path, DUMP_FLAGS);
    if (!scene)
        return fail("cannot import %s: %s", path, aiGetErrorString());
    if (!scene->mRootNode) {
        aiReleaseImport(scene);
        return fail("%s: %s", path, "the scene has no root node");
    }

    json_object *root = obj();
    put(root, "file", json_object_new_string(path));
    char version[64];
    snprintf(version, sizeof version, "%u.%u.%u", aiGetVersionMajor(), aiGetVersionMinor(),
             aiGetVersionRevision());
    put(root, "assimp_version", json_object_new_string(version));
    json_object *metadata = obj();
    const struct aiMetadata *md = scene->mMetaData;
    for (unsigned i = 0; md && i < md->mNumProperties && !oom; i++)
        if (md->mValues[i].mType == AI_AISTRING && md->mValues[i].mData)
            put(metadata, md->mKeys[i].data,
                json_object_new_string(((const struct aiString *)md->mValues[i].mData)->data));
    put(root, "metadata", metadata);
    json_object *nodes = arr();
    if (!oom)
        dump_nodes(scene->mRootNode, -1, nodes);
    put(root, "nodes", nodes);
    json_object *meshes = arr();
    for (unsigned i = 0; i < scene->mNumMeshes && !oom; i++)
        push(meshes, dump_mesh(scene->mMeshes[i]));
    put(root, "meshes", meshes);
    json_object *animations = arr();
    for (unsigned i = 0; i < scene->mNumAnimations && !oom; i++)
        push(animations, dump_animation(scene->mAnimations[i]));
    put(root, "animations", animations);
    aiReleaseImport(scene);
    if (oom) {
        json_object_put(root);
        return fail("%s: %s", path, "out of memory while building the JSON document");
    }

    size_t n = strlen(out_path) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        json_object_put(root);
        return fail("%s: %s", out_path, "out of memory");
    }
    snprintf(tmp, n, "%s.tmp.%ld", out_path, (long)getpid());
    /* Doubles keep their full precision (json-c prints %.17g). */
    json_c_set_serialization_double_format("%.17g", JSON_C_OPTION_GLOBAL);
    int rc = 0;
    if (json_object_to_file_ext(tmp, root, JSON_C_TO_STRING_PLAIN) != 0) {
        rc = fail("cannot write %s: %s", tmp, json_util_get_last_err());
        unlink(tmp);
    } else if (rename(tmp, out_path) != 0) {
        rc = fail("cannot rename to %s: %s", out_path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    json_object_put(root);
    return rc;
}
