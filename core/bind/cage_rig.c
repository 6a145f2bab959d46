/*
 * cage_rig.c — the public face of coupled cages and skeletons (Corda et al.
 * 2020; issue #21): ssk_cage (springskin.h) wraps the cage binding of
 * bind/cage_bind.c, makes the rig an edited rest cage describes (its rest
 * mesh by Eq. 7, its joints by Eq. 13) and carries each frame's skinning
 * matrices over to it (4.2, bind/cage_skinning.c); the cage updater (4.1)
 * fits the posed cage to a deformed mesh.
 *
 * The reshaped rig keeps everything but its rest shape: meshes (names,
 * triangles, influences, weights, object matrices), bone names and
 * parents. Its bones' heads are Psi C' (Eq. 13); a tail is its child's new
 * head when the bone's rest tail was that child's rest head (a connected
 * chain stays connected), else its rest tail moved by the head's move; its
 * bind matrices keep their rest rotation and scale (4.2: "keeping its
 * rotational component unchanged") and move by the head's move. The
 * source files' own normals (hard edges) are not kept: shading welds by
 * position only in the reshaped rig.
 */
#include "bind/binding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows of Lambda per block (ssk_cage: lambda). */
#define CAGE_COR_BLOCK 8u

/* A rest tail counts as its child's rest head within this fraction of the
 * bone's length. */
#define CAGE_CONNECTED_FRACTION 1e-4f

struct ssk_cage {
    const ssk_rig *rig;
    ssk_cage_binding binding;
    float *heads;     /* #B by 3: the heads of the last reshape */
    double *edit;     /* c by 3: the rest cage of the last reshape (C') */
    bool unedited;    /* the last reshape's cage was the rest cage (or none yet) */
    float *positions; /* #V by 3: the last edited reshape's rest positions (Phi C'), or NULL */
    /* Eq. 14 (ssk_cage_bind_cor): NULL until bound. Lambda's rows (the cage
     * coordinates of each flagged vertex's center, in vertex order) in
     * blocks of CAGE_COR_BLOCK rows, each block c by CAGE_COR_BLOCK (k
     * major: the block's rows side by side, padded with zero rows), so
     * that an update streams Lambda once and adds a block's rows in SIMD
     * lanes (cage_cor_update) */
    float *lambda;
    uint32_t *lambda_vertex; /* flagged: the vertex of each row */
    uint32_t lambda_rows;    /* flagged */
    float *cor_centers; /* #V by 3: the rig's own centers (rig space) */
    uint8_t *cor_flags; /* #V */
};

ssk_status ssk_cage_create(ssk_cage **out, const ssk_rig *rig, const ssk_cage_mesh *cage,
                           ssk_error *err)
{
    return ssk_cage_create_cached(out, rig, cage, NULL, NULL, err);
}

ssk_status ssk_cage_create_cached(ssk_cage **out, const ssk_rig *rig, const ssk_cage_mesh *cage,
                                  ssk_binding *binding, int *out_reused, ssk_error *err)
{
    if (out) *out = NULL;
    if (out_reused) *out_reused = 0;
    if (!out || !rig || !cage || !cage->vertices || !cage->triangles)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_create: NULL argument");
    if (binding && (binding->vertex_count != rig->vertex_count ||
                    binding->bone_count != rig->bone_count ||
                    binding->rig_hash != ssk_rig_hash(rig)))
        return ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                             "ssk_cage_create: the binding was made for another rig (%u "
                             "vertices, %u bones; this rig: %u, %u, or another hash)",
                             binding->vertex_count, binding->bone_count, rig->vertex_count,
                             rig->bone_count);
    if (!ssk_floats_bounded(cage->vertices, 3 * (size_t)cage->vertex_count))
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "cage: a vertex is not finite or beyond SSK_MAX_MAGNITUDE");
    ssk_cage *c = calloc(1, sizeof *c);
    double *vertices = malloc((3 * (size_t)cage->vertex_count + 1) * sizeof *vertices);
    if (!c || !vertices) {
        free(c);
        free(vertices);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < 3 * (size_t)cage->vertex_count; ++i) vertices[i] = cage->vertices[i];
    c->rig = rig;
    const uint64_t key = binding ? ssk_cage_binding_key(cage->vertices, cage->vertex_count,
                                                        cage->triangles, cage->triangle_count)
                                 : 0;
    const ssk_cage_binding *stored = binding ? binding->cage : NULL;
    ssk_status st;
    if (stored && binding->cage_key == key && stored->cage_vertex_count == cage->vertex_count &&
        stored->vertex_count == rig->vertex_count && stored->joint_count == rig->bone_count) {
        /* the binding's: Phi, Psi and the MaxVol rows as stored, Phi~
         * factorized again */
        st = ssk_cage_binding_copy(&c->binding, stored, vertices, cage->vertex_count,
                                   cage->triangles, cage->triangle_count, err);
        if (st == SSK_OK && out_reused) *out_reused = 1;
    } else {
        const double t0 = ssk_time_seconds();
        st = ssk_cage_binding_create(&c->binding, rig, vertices, cage->vertex_count,
                                     cage->triangles, cage->triangle_count, err);
        if (st == SSK_OK && binding) { /* stored in the binding, replacing any */
            ssk_cage_binding *keep = calloc(1, sizeof *keep);
            st = keep ? ssk_cage_binding_copy(keep, &c->binding, NULL, 0, NULL, 0, err)
                      : ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
            if (st == SSK_OK) {
                ssk_cage_binding_free(binding->cage);
                free(binding->cage);
                binding->cage = keep;
                binding->cage_key = key;
                binding->cage_seconds = ssk_time_seconds() - t0;
            } else {
                free(keep);
            }
        }
    }
    free(vertices);
    c->heads = malloc((3 * (size_t)rig->bone_count + 1) * sizeof *c->heads);
    c->edit = malloc((3 * (size_t)cage->vertex_count + 1) * sizeof *c->edit);
    c->unedited = true;
    if (st == SSK_OK && (!c->heads || !c->edit))
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    if (st != SSK_OK) {
        ssk_cage_destroy(c);
        return st;
    }
    for (uint32_t b = 0; b < rig->bone_count; ++b)
        memcpy(c->heads + 3 * (size_t)b, rig->bones[b].head, 3 * sizeof(float));
    memcpy(c->edit, c->binding.cage_rest, 3 * (size_t)cage->vertex_count * sizeof *c->edit);
    *out = c;
    return ssk_error_ok(err);
}

void ssk_cage_destroy(ssk_cage *cage)
{
    if (!cage) return;
    ssk_cage_binding_free(&cage->binding);
    free(cage->heads);
    free(cage->edit);
    free(cage->positions);
    free(cage->lambda);
    free(cage->lambda_vertex);
    free(cage->cor_centers);
    free(cage->cor_flags);
    free(cage);
}

uint32_t ssk_cage_vertex_count(const ssk_cage *cage)
{
    return cage ? cage->binding.cage_vertex_count : 0;
}

/* The new rig from the reshaped rest positions (rig space; NULL: the rig's
 * own, unchanged) and heads. */
static ssk_status reshaped_rig(ssk_rig **out, const ssk_rig *rig, const float *positions,
                               const float *heads, ssk_error *err)
{
    const uint32_t nb = rig->bone_count, nm = rig->mesh_count;
    const char **names = malloc(((size_t)nb + 1) * sizeof *names);
    int32_t *parents = malloc(((size_t)nb + 1) * sizeof *parents);
    float *bind = malloc((16 * (size_t)nb + 1) * sizeof *bind);
    float *tails = malloc((3 * (size_t)nb + 1) * sizeof *tails);
    ssk_mesh_desc *md = calloc((size_t)nm + 1, sizeof *md);
    float *object_positions = malloc((3 * (size_t)rig->vertex_count + 1) * sizeof(float));
    ssk_status st = SSK_OK;
    if (!names || !parents || !bind || !tails || !md || !object_positions) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (uint32_t b = 0; b < nb; ++b) {
        const ssk_bone *bone = &rig->bones[b];
        names[b] = bone->name;
        parents[b] = bone->parent;
        memcpy(bind + 16 * (size_t)b, bone->bind_matrix, 16 * sizeof(float));
        /* the bind matrix moves with the head (its rotation and scale kept) */
        for (int r = 0; r < 3; ++r)
            bind[16 * (size_t)b + 4 * r + 3] += heads[3 * (size_t)b + r] - bone->head[r];
        float len2 = 0.0f;
        for (int k = 0; k < 3; ++k) {
            const float d = bone->tail[k] - bone->head[k];
            len2 += d * d;
            tails[3 * (size_t)b + k] = bone->tail[k] + heads[3 * (size_t)b + k] - bone->head[k];
        }
        /* a connected chain stays connected */
        for (uint32_t c = 0; c < nb; ++c) {
            if (rig->bones[c].parent != (int32_t)b) continue;
            float gap2 = 0.0f;
            for (int k = 0; k < 3; ++k) {
                const float d = rig->bones[c].head[k] - bone->tail[k];
                gap2 += d * d;
            }
            if (gap2 <= CAGE_CONNECTED_FRACTION * CAGE_CONNECTED_FRACTION * len2) {
                memcpy(tails + 3 * (size_t)b, heads + 3 * (size_t)c, 3 * sizeof(float));
                break;
            }
        }
    }
    for (uint32_t m = 0; m < nm; ++m) {
        const ssk_mesh *mesh = &rig->meshes[m];
        float inv[16];
        if (!ssk_mat4_invert(inv, mesh->object_matrix)) {
            st = ssk_error_set(err, SSK_ERROR_NONFINITE,
                               "cage: mesh '%s' has a singular object matrix", mesh->name);
            goto done;
        }
        float *p = object_positions + 3 * (size_t)mesh->first_vertex;
        if (!positions)
            memcpy(p, mesh->positions, 3 * (size_t)mesh->vertex_count * sizeof(float));
        else
            for (uint32_t i = 0; i < mesh->vertex_count; ++i)
                ssk_mat4_transform_point(p + 3 * (size_t)i, inv,
                                         positions + 3 * ((size_t)mesh->first_vertex + i));
        md[m] = (ssk_mesh_desc){.name = mesh->name,
                                .vertex_count = mesh->vertex_count,
                                .positions = p,
                                .triangle_count = mesh->triangle_count,
                                .triangles = mesh->triangles,
                                .influence_count = mesh->influence_count,
                                .bone_indices = mesh->bone_indices,
                                .weights = mesh->weights,
                                .object_matrix = mesh->object_matrix};
    }
    const ssk_skeleton_desc sk = {nb, names, parents, bind, heads, tails};
    st = ssk_rig_create(out, &sk, md, nm, err);
done:
    free(names);
    free(parents);
    free(bind);
    free(tails);
    free(md);
    free(object_positions);
    return st;
}

ssk_status ssk_cage_reshape(ssk_rig **out, ssk_cage *cage, const float *edited_vertices,
                            ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !cage || !edited_vertices)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_reshape: NULL argument");
    const uint32_t c = cage->binding.cage_vertex_count;
    if (!ssk_floats_bounded(edited_vertices, 3 * (size_t)c))
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "cage edit: a vertex is not finite or beyond SSK_MAX_MAGNITUDE");
    const ssk_rig *rig = cage->rig;
    double *edit = malloc((3 * (size_t)c + 1) * sizeof *edit);
    float *positions = malloc((3 * (size_t)rig->vertex_count + 1) * sizeof *positions);
    if (!edit || !positions) {
        free(edit);
        free(positions);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    bool unedited = true;
    for (size_t i = 0; i < 3 * (size_t)c; ++i) {
        edit[i] = edited_vertices[i];
        unedited = unedited && edit[i] == cage->binding.cage_rest[i];
    }
    if (unedited) {
        /* the rest cage: the rig's own rest shape, bit for bit (Phi C0
         * reproduces it only up to rounding) */
        for (uint32_t b = 0; b < rig->bone_count; ++b)
            memcpy(cage->heads + 3 * (size_t)b, rig->bones[b].head, 3 * sizeof(float));
    } else {
        ssk_cage_binding_reshape(&cage->binding, edit, positions, cage->heads);
    }
    ssk_status st = reshaped_rig(out, rig, unedited ? NULL : positions, cage->heads, err);
    if (st == SSK_OK) {
        memcpy(cage->edit, edit, 3 * (size_t)c * sizeof *edit);
        cage->unedited = unedited;
        if (!unedited) { /* kept: Eq. 14's centers of the vertices without one */
            free(cage->positions);
            cage->positions = positions;
            positions = NULL;
        }
    }
    free(edit);
    free(positions);
    return st;
}

ssk_status ssk_cage_pose(float *dst, const ssk_cage *cage, const float *skinning, ssk_error *err)
{
    if (!dst || !cage || (!skinning && cage->rig->bone_count))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_pose: NULL argument");
    ssk_cage_skinning(dst, cage->rig, cage->heads, skinning);
    if (!ssk_floats_finite(dst, 16 * (size_t)cage->rig->bone_count))
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "ssk_cage_pose: a skinning matrix is not finite");
    return ssk_error_ok(err);
}

ssk_status ssk_cage_fit(float *dst, const ssk_cage *cage, const float *positions, ssk_error *err)
{
    if (!dst || !cage || !positions)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_fit: NULL argument");
    const ssk_cage_up *up = &cage->binding.up;
    double *rows = malloc((3 * (size_t)up->c + 1) * sizeof *rows);
    double *out = malloc((3 * (size_t)up->c + 1) * sizeof *out);
    if (!rows || !out) {
        free(rows);
        free(out);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t k = 0; k < up->c; ++k)
        for (int a = 0; a < 3; ++a) rows[3 * (size_t)k + a] = positions[3 * (size_t)up->rows[k] + a];
    ssk_status st = ssk_cage_up_solve(up, out, rows, err);
    if (st == SSK_OK)
        for (size_t i = 0; i < 3 * (size_t)up->c; ++i) dst[i] = (float)out[i];
    free(rows);
    free(out);
    return st;
}

ssk_status ssk_cage_reverse(float *rest_offset, const ssk_cage *cage, const float *skinning,
                            const float *posed_offset, ssk_error *err)
{
    if (!rest_offset || !cage || !posed_offset || (!skinning && cage->rig->bone_count))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_reverse: NULL argument");
    const size_t n = 3 * (size_t)cage->binding.cage_vertex_count;
    double *in = calloc(n + 1, sizeof *in), *out = malloc((n + 1) * sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n; ++i) in[i] = posed_offset[i];
    /* the rotations are the original rig's and the reshaped rig's alike
     * (ssk_cage_pose keeps them), and so are its weights and parents */
    ssk_status st = ssk_cage_rev_solve(out, &cage->binding, cage->rig, skinning, in, err);
    if (st == SSK_OK)
        for (size_t i = 0; i < n; ++i) rest_offset[i] = (float)out[i];
    free(in);
    free(out);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Centers of rotation (Eq. 14)                                              */
/* ------------------------------------------------------------------------ */

/* The paper: "CoRs = Phi_CoRs M ... we can precompute the matrix Lambda :=
 * Phi_CoRs Phi when computing the centers of rotation, and reposition them
 * at run time using CoRs = Lambda C (Eq. 14)". Here Lambda's row for a
 * vertex with a center is the center's own mean value coordinates with
 * respect to the rest cage (ssk_cage_mvc), not Phi_CoRs Phi: the centers
 * are points, and any row that reproduces the center from the rest cage
 * serves (the paper's assumption is the same: it keeps Eq. 5's area terms
 * of the rest mesh). Both rows reproduce the center exactly at rest and
 * move it by the map for an affine cage edit (the two are then equal);
 * they differ for a non-affine edit, where both differ from centers
 * recomputed on the reshaped mesh (test_cage_cor measures by how much).
 * Phi_CoRs Phi would take Eq. 4's integration with a c-vector per cell
 * (cor_precompute.c sums cells of weight space, not mesh rows). A vertex
 * without a center (flag 0) has its own rest position as center
 * (ssk_cor_precompute), so its center follows it: Phi C', the reshape's
 * rest position, which Lambda need not hold. */
ssk_status ssk_cage_bind_cor(ssk_cage *cage, const float *centers, const uint8_t *flags,
                             ssk_error *err)
{
    if (!cage || (cage->rig->vertex_count && (!centers || !flags)))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_cage_bind_cor: NULL argument");
    const ssk_cage_binding *cb = &cage->binding;
    const uint32_t nv = cage->rig->vertex_count, c = cb->cage_vertex_count;
    for (uint32_t v = 0; v < nv; ++v)
        if (flags[v] && !ssk_floats_bounded(centers + 3 * (size_t)v, 3))
            return ssk_error_set(err, SSK_ERROR_NONFINITE,
                                 "ssk_cage_bind_cor: center %u is not finite or beyond "
                                 "SSK_MAX_MAGNITUDE",
                                 v);
    uint32_t flagged = 0;
    for (uint32_t v = 0; v < nv; ++v) flagged += flags[v] != 0;
    double *points = malloc((3 * (size_t)flagged + 1) * sizeof *points);
    double *lambda = malloc(((size_t)flagged * c + 1) * sizeof *lambda);
    float *own = malloc((3 * (size_t)nv + 1) * sizeof *own);
    uint8_t *own_flags = malloc((size_t)nv + 1);
    float *blocks = NULL;
    uint32_t *rows = NULL;
    ssk_status st = SSK_OK;
    if (!lambda || !points || !own || !own_flags) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (uint32_t v = 0, k = 0; v < nv; ++v) {
        if (!flags[v]) continue;
        for (int a = 0; a < 3; ++a) points[3 * (size_t)k + a] = centers[3 * (size_t)v + a];
        ++k;
    }
    st = ssk_cage_mvc(lambda, points, flagged, cb->cage_rest, c, cb->cage_triangles,
                      cb->cage_triangle_count, err);
    if (st != SSK_OK) goto done;
    for (uint32_t v = 0; v < nv; ++v) own_flags[v] = flags[v] ? 1 : 0;
    memcpy(own, centers, 3 * (size_t)nv * sizeof *own);
    blocks = malloc(((size_t)(flagged + CAGE_COR_BLOCK - 1) / CAGE_COR_BLOCK * c * CAGE_COR_BLOCK +
                     1) * sizeof *blocks);
    rows = malloc(((size_t)flagged + 1) * sizeof *rows);
    if (!blocks || !rows) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (uint32_t r0 = 0; r0 < flagged; r0 += CAGE_COR_BLOCK) {
        float *blk = blocks + (size_t)r0 * c;
        for (uint32_t k = 0; k < c; ++k)
            for (uint32_t i = 0; i < CAGE_COR_BLOCK; ++i)
                blk[(size_t)k * CAGE_COR_BLOCK + i] =
                    r0 + i < flagged ? (float)lambda[(size_t)(r0 + i) * c + k] : 0.0f;
    }
    for (uint32_t v = 0, k = 0; v < nv; ++v)
        if (flags[v]) rows[k++] = v;
    free(cage->lambda);
    free(cage->lambda_vertex);
    free(cage->cor_centers);
    free(cage->cor_flags);
    cage->lambda = blocks;
    cage->lambda_vertex = rows;
    cage->lambda_rows = flagged;
    cage->cor_centers = own;
    cage->cor_flags = own_flags;
    blocks = NULL;
    rows = NULL;
    own = NULL;
    own_flags = NULL;
    st = ssk_error_ok(err);
done:
    free(lambda);
    free(blocks);
    free(rows);
    free(points);
    free(own);
    free(own_flags);
    return st;
}

/* Eq. 14's centers Lambda C' of the flagged vertices into dst (#V by 3),
 * C' the last reshape's cage: per block of CAGE_COR_BLOCK rows, each row's
 * sum over the cage vertices in their order, in float (Lambda's entries,
 * the rows of mean value coordinates, are stored in float), the block's
 * rows in the lanes of SIMD vectors (the loop over i), Lambda read once.
 * On this 2-core machine (bench_cage, one thread, 7.5k centers, an
 * 88-vertex cage): 0.47 ms a row at a time in double from a double Lambda,
 * 0.19 ms so (back-to-back runs). */
static void cage_cor_update(float *dst, const ssk_cage *cage)
{
    const uint32_t c = cage->binding.cage_vertex_count, n = cage->lambda_rows;
    for (uint32_t r0 = 0; r0 < n; r0 += CAGE_COR_BLOCK) {
        const float *blk = cage->lambda + (size_t)r0 * c;
        float acc[3][CAGE_COR_BLOCK] = {{0.0f}};
        for (uint32_t k = 0; k < c; ++k) {
            const double *q = cage->edit + 3 * (size_t)k;
            const float q0 = (float)q[0], q1 = (float)q[1], q2 = (float)q[2];
            const float *l = blk + (size_t)k * CAGE_COR_BLOCK;
            for (uint32_t i = 0; i < CAGE_COR_BLOCK; ++i) {
                acc[0][i] += l[i] * q0;
                acc[1][i] += l[i] * q1;
                acc[2][i] += l[i] * q2;
            }
        }
        for (uint32_t i = 0; i < CAGE_COR_BLOCK && r0 + i < n; ++i)
            for (int a = 0; a < 3; ++a)
                dst[3 * (size_t)cage->lambda_vertex[r0 + i] + a] = acc[a][i];
    }
}

ssk_status ssk_cage_cor_centers(float *dst_centers, uint8_t *dst_flags, ssk_cage *cage,
                                ssk_error *err)
{
    if (!cage || (cage->rig->vertex_count && (!dst_centers || !dst_flags)))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_cor_centers: NULL argument");
    const ssk_rig *rig = cage->rig;
    const uint32_t nv = rig->vertex_count;
    if (!cage->lambda) {
        /* the rig's own centers, computed once, as a deformer computes them */
        float *centers = malloc((3 * (size_t)nv + 1) * sizeof *centers);
        uint8_t *flags = malloc((size_t)nv + 1);
        ssk_cor_params params;
        ssk_cor_params_default(&params);
        ssk_status st = centers && flags
                            ? ssk_cor_precompute(centers, flags, rig, &params, SSK_BACKEND_CPU,
                                                 NULL, NULL, err)
                            : ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        if (st == SSK_OK) st = ssk_cage_bind_cor(cage, centers, flags, err);
        free(centers);
        free(flags);
        if (st != SSK_OK) return st;
    }
    memcpy(dst_flags, cage->cor_flags, nv);
    if (cage->unedited) {
        /* the rest cage: the rig's own centers, bit for bit */
        memcpy(dst_centers, cage->cor_centers, 3 * (size_t)nv * sizeof *dst_centers);
        return ssk_error_ok(err);
    }
    for (uint32_t v = 0; v < nv; ++v)
        if (!cage->cor_flags[v])
            memcpy(dst_centers + 3 * (size_t)v, cage->positions + 3 * (size_t)v,
                   3 * sizeof *dst_centers);
    cage_cor_update(dst_centers, cage);
    if (!ssk_floats_finite(dst_centers, 3 * (size_t)nv))
        return ssk_error_set(err, SSK_ERROR_NONFINITE,
                             "ssk_cage_cor_centers: a center is not finite");
    return ssk_error_ok(err);
}

int ssk_cage_is_rest(const ssk_cage *cage, const float *edited_vertices)
{
    if (!cage || !edited_vertices) return 0;
    for (size_t i = 0; i < 3 * (size_t)cage->binding.cage_vertex_count; ++i)
        if ((double)edited_vertices[i] != cage->binding.cage_rest[i]) return 0;
    return 1;
}

ssk_status ssk_cage_reshape_with_centers(ssk_rig **out_rig, float **out_centers,
                                         uint8_t **out_flags, ssk_cage *cage,
                                         const float *edited_vertices, bool with_centers,
                                         ssk_error *err)
{
    *out_rig = NULL;
    *out_centers = NULL;
    *out_flags = NULL;
    ssk_rig *rig = NULL;
    ssk_status s = ssk_cage_reshape(&rig, cage, edited_vertices, err);
    if (s != SSK_OK || !with_centers) {
        *out_rig = rig;
        return s;
    }
    const size_t nv = ssk_rig_vertex_count(rig);
    float *centers = malloc((3 * nv + 1) * sizeof *centers);
    uint8_t *flags = malloc(nv + 1);
    s = centers && flags ? ssk_cage_cor_centers(centers, flags, cage, err)
                         : ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    if (s != SSK_OK) {
        free(centers);
        free(flags);
        ssk_rig_destroy(rig);
        return s;
    }
    *out_rig = rig;
    *out_centers = centers;
    *out_flags = flags;
    return SSK_OK;
}
