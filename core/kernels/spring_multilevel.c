/*
 * spring_multilevel.c — the multilevel correction of the spring solver
 * (issue #16; not in Toothman 2020, whose solver is the plain Jacobi
 * update of Eq. 23 and "has no sparse linear system solver", 4.2.3).
 *
 * Why. A plain pass moves each vertex by dt F_i / (1 + dt k_d): a local
 * smoother. What it cannot remove quickly is error that is smooth over a
 * bone: a ring section twisted or pushed out a little, a slab of the limb
 * shifted sideways. Such an error is resisted only by the weak anchoring
 * terms, while each vertex's step is limited by the stiff neighbor
 * springs, so the plain update needs O(rings^2) passes (a 100k-vertex limb
 * bent 135 degrees: 97 Chebyshev passes and still 2.5% of the radius from
 * its equilibrium).
 *
 * What. An additive two-grid (BPX-style) correction per pass over slabs of
 * each bone (spring.h "the multilevel correction"): for every coarse
 * unknown u (a hat node of a level of a bone, times one of five mode
 * shapes phi_u in the bone's posed frame) the restriction r_u = sum_i
 * phi_u(i) . F_i of the pass's force F_i = g_i / p_i (g the plain step,
 * p_i = dt / (1 + dt k_d,i) its per-vertex step size) and the correction
 * sum_u phi_u r_u / c_u, c_u = phi_u^T A phi_u the curvature of the forces
 * along the mode (A = -dF/dx). A mode's own springs cancel inside the
 * slab, so c_u is small where only weak terms resist it, and the step
 * along it is large: one pass moves a whole slab to where its forces
 * balance. Levels halve the slabs from the whole bone down to about
 * SSK_SPRING_ML_SLAB_VERTICES vertices per slab, so every wavelength
 * longer than a few rings has a level that corrects it.
 *
 * Curvatures. c_u is measured, not modelled: at rest (ssk_spring_create)
 * the solver's own plain pass is run at the rest positions displaced by a
 * small probe along the modes of every third node of one level and one
 * bone color at once (supports one slab apart; bones joined by a mesh
 * edge have different colors), and c_u = -phi_u . P^-1 (g(probe) - g(rest))
 * / amplitude. Probing at rest makes the result independent of which
 * frame is solved first (a sharded bake gets the same frames).
 *
 * The correction changes the path of the iteration, not its fixed point
 * (it is a linear map of the forces that vanishes with them), so the
 * equilibrium is the plain update's.
 */
#include "kernels/spring.h"

#include "kernels/attach_math.h"
#include "kernels/simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Whether row i takes part in the correction: a free vertex (the surface
 * edits' kinematic, passive and static vertices keep the plain pass, so a
 * static ring still isolates a region) on which some force acts. */
static inline bool takes_part(const ssk_spring_ml *ml, const uint8_t *roles, uint32_t i)
{
    return roles[i] == SSK_ROLE_FREE && !(ml->frozen && ml->frozen[i]);
}

/* The global hat nodes n[0] (k), n[1] (k + 1) of vertex i on level l of its
 * bone and their weights. */
static inline void hat(const ssk_spring_ml *ml, const ssk_spring *sp, uint32_t i, uint32_t l,
                       uint32_t n[2], float w[2])
{
    float f;
    const uint32_t k = ssk_spring_ml_slab(sp->t[i], l, &f);
    const uint32_t *of = ml->node_of + ssk_spring_ml_loc(ml, (uint32_t)sp->bones[i], l) + k;
    n[0] = of[0];
    n[1] = of[1];
    w[0] = 1.0f - f;
    w[1] = f;
}

/* Node of local node k of (bone b, level l). */
static inline uint32_t global_node(const ssk_spring_ml *ml, uint32_t b, uint32_t l, uint32_t k)
{
    return ml->node_of[ssk_spring_ml_loc(ml, b, l) + k];
}

static inline float dot3(const float a[3], const float b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* s~_i = (x_i - a'_i) / r_b (0 without a defined scale vector). */
static inline void scaled_offset(const ssk_spring_ml *ml, const ssk_spring *sp, uint32_t i,
                                 const float *x, float s[3])
{
    const float *a = sp->anchor + 4 * (size_t)i;
    const float r = a[3] > 0.0f ? ml->inv_radius[ml->slot[sp->bones[i]]] : 0.0f;
    for (int c = 0; c < 3; ++c) s[c] = r * (x[3 * (size_t)i + c] - a[c]);
}

/* The linear modes as 3 by 2 generators G (rows: output along u, v, w;
 * columns: input, the offset's u and v components relative to the node's
 * center): scaling, twist, tilt about v, tilt about u, and the two
 * ovalizations of a ring. */
static const float generators[SSK_SPRING_ML_MODES - 3][3][2] = {
    {{1.0f, 0.0f}, {0.0f, 1.0f}, {0.0f, 0.0f}},  /* scale */
    {{0.0f, -1.0f}, {1.0f, 0.0f}, {0.0f, 0.0f}}, /* twist about w */
    {{0.0f, 0.0f}, {0.0f, 0.0f}, {1.0f, 0.0f}},  /* tilt: w from u */
    {{0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 1.0f}},  /* tilt: w from v */
    {{1.0f, 0.0f}, {0.0f, -1.0f}, {0.0f, 0.0f}}, /* ovalize along u, v */
    {{0.0f, 1.0f}, {1.0f, 0.0f}, {0.0f, 0.0f}},  /* ovalize along the diagonals */
};

/* Mode m's shape of a node of posed basis F (row-major; columns u, v
 * across the node's axis, w along it) and center c (its rest mean offset
 * in u, v) at offset s~: m < 3 the translation F e_m; else F G (F^T s~ -
 * c) over the u, v components (an offset along the axis moves nothing). */
static inline void mode_shape(float phi[3], const float F[9], const float c[2], uint32_t m,
                              const float s[3])
{
    if (m < 3) {
        for (int k = 0; k < 3; ++k) phi[k] = F[3 * k + m];
        return;
    }
    const float su = F[0] * s[0] + F[3] * s[1] + F[6] * s[2] - c[0];
    const float sv = F[1] * s[0] + F[4] * s[1] + F[7] * s[2] - c[1];
    const float (*G)[2] = generators[m - 3];
    float o[3];
    for (int a = 0; a < 3; ++a) o[a] = G[a][0] * su + G[a][1] * sv;
    for (int k = 0; k < 3; ++k) phi[k] = F[3 * k] * o[0] + F[3 * k + 1] * o[1] + F[3 * k + 2] * o[2];
}

/* Adds the conflict a - b (both ways) to the per-node lists (cap entries). */
#define CONFLICT_CAP 64u
static void conflict(uint32_t *list, uint8_t *count, uint32_t a, uint32_t b)
{
    if (a == b) return;
    for (int side = 0; side < 2; ++side) {
        const uint32_t x = side ? b : a, y = side ? a : b;
        uint32_t *l = list + (size_t)x * CONFLICT_CAP;
        bool seen = false;
        for (uint32_t k = 0; k < count[x] && !seen; ++k) seen = l[k] == y;
        if (!seen && count[x] < CONFLICT_CAP) l[count[x]++] = y;
    }
}

ssk_spring_ml *ssk_spring_ml_create(const ssk_spring *sp, const float *rest,
                                    const ssk_attach_bone *rest_bones)
{
    const uint32_t nv = sp->vertex_count, nb = sp->bone_count;
    ssk_spring_ml *ml = calloc(1, sizeof *ml);
    if (!ml) return NULL;
    const size_t nbl = ((size_t)nb + 1) * SSK_SPRING_ML_MAX_LEVELS;
    const uint32_t ns = sp->slot_count;
    ml->slot = sp->bone_slot;
    ml->slot_count = ns;
    ml->bone_levels = calloc(ns + 1, 1);
    ml->bone_loc = calloc(ns + 1, sizeof(uint32_t));
    ml->inv_radius = calloc(ns + 1, sizeof(float));
    /* per (bone, level): the node of k = 0 and of k = 1 (k = 1 .. 2^l
     * consecutive); create time only */
    uint32_t *head_node = calloc(nbl, sizeof(uint32_t)), *node_first = calloc(nbl, sizeof(uint32_t));
    uint32_t *count = calloc(nb + 1, sizeof(uint32_t));
    double *radius = calloc(nb + 1, sizeof(double));
    uint32_t *defined = calloc(nb + 1, sizeof(uint32_t));
    uint32_t *list = NULL;
    uint8_t *list_count = NULL;
    if (!ml->bone_levels || !ml->bone_loc || !ml->inv_radius || !head_node || !node_first ||
        !count || !radius || !defined)
        goto fail;

    /* Vertices and mean rest distance from the axis per bone, mean rest
     * edge length. */
    double edge_sum = 0.0;
    for (uint32_t i = 0; i < nv; ++i) {
        const int32_t b = sp->bones[i];
        ++count[b];
        const float *a = sp->anchor + 4 * (size_t)i, *d = sp->vertex_dir + 4 * (size_t)i;
        if (a[3] > 0.0f) {
            const float *v = rest + 3 * (size_t)i;
            const float s[3] = {v[0] - a[0], v[1] - a[1], v[2] - a[2]};
            const float sd = dot3(s, d);
            const float p[3] = {s[0] - sd * d[0], s[1] - sd * d[1], s[2] - sd * d[2]};
            radius[b] += sqrtf(dot3(p, p));
            ++defined[b];
        }
        for (uint32_t e = sp->offsets[i]; e < sp->offsets[i + 1]; ++e)
            edge_sum += sp->edges[e].rest_length;
    }
    ml->probe = sp->edge_count > 0
                    ? SSK_SPRING_ML_PROBE_FRACTION * (float)(edge_sum / sp->edge_count)
                    : 0.0f;

    /* Levels and nodes: bones in order, so a parent (whose index is below
     * its children's in a rig) has its nodes before a child shares one. */
    for (uint32_t b = 0; b < nb; ++b) {
        uint32_t levels = count[b] > 0 ? 1 : 0;
        while (levels < SSK_SPRING_ML_MAX_LEVELS && count[b] >> levels >= SSK_SPRING_ML_SLAB_VERTICES) ++levels;
        if (!ml->slot[b]) continue; /* no vertex: no levels */
        ml->bone_levels[ml->slot[b]] = (uint8_t)levels;
        if (levels > ml->levels) ml->levels = levels;
        const double r = defined[b] ? radius[b] / defined[b] : 0.0;
        ml->inv_radius[ml->slot[b]] = r > 0.0 ? (float)(1.0 / r) : 0.0f;
    }
    uint32_t node = 0, local = 0;
    for (uint32_t b = 0; b < nb; ++b) {
        /* a child starting at its parent's rest tail shares its k = 0 node */
        const int32_t p = rest_bones[b].parent;
        bool joined = false;
        if (p >= 0 && (uint32_t)p < b) {
            const float *h = rest_bones[b].head, *t = rest_bones[p].tail, *ph = rest_bones[p].head;
            const float d[3] = {h[0] - t[0], h[1] - t[1], h[2] - t[2]};
            const float L[3] = {t[0] - ph[0], t[1] - ph[1], t[2] - ph[2]};
            joined = dot3(d, d) <= SSK_SPRING_ML_JOINT_FRACTION * SSK_SPRING_ML_JOINT_FRACTION *
                                       dot3(L, L);
        }
        if (!ml->slot[b]) continue;
        ml->bone_loc[ml->slot[b]] = local;
        for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, b); ++l) {
            const size_t bl = (size_t)b * SSK_SPRING_ML_MAX_LEVELS + l;
            if (joined && l < ssk_spring_ml_levels(ml, (uint32_t)p)) {
                const size_t pl = (size_t)p * SSK_SPRING_ML_MAX_LEVELS + l;
                head_node[bl] = node_first[pl] + (1u << l) - 1;
            } else {
                head_node[bl] = node++;
            }
            node_first[bl] = node;
            node += 1u << l;
            local += (1u << l) + 1;
        }
    }
    ml->node_count = node;
    ml->local_count = local;
    ml->node_of = malloc(((size_t)local + 1) * sizeof(uint32_t));
    ml->node_level = calloc((size_t)node + 1, 1);
    ml->node_color = calloc((size_t)node + 1, 1);
    list = malloc(((size_t)node + 1) * CONFLICT_CAP * sizeof(uint32_t));
    list_count = calloc((size_t)node + 1, 1);
    if (!ml->node_of || !ml->node_level || !ml->node_color || !list || !list_count) goto fail;
    for (uint32_t b = 0; b < nb; ++b)
        for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, b); ++l) {
            const size_t bl = (size_t)b * SSK_SPRING_ML_MAX_LEVELS + l;
            uint32_t *of = ml->node_of + ssk_spring_ml_loc(ml, b, l);
            of[0] = head_node[bl];
            for (uint32_t k = 1; k <= (1u << l); ++k) of[k] = node_first[bl] + k - 1;
        }
    for (uint32_t b = 0; b < nb; ++b)
        for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, b); ++l)
            for (uint32_t k = 0; k <= (1u << l); ++k)
                ml->node_level[global_node(ml, b, l, k)] = (uint8_t)l;

    /* Probing colors: nodes whose supports share a vertex or a mesh edge
     * conflict; greedy coloring in node order. */
    for (uint32_t i = 0; i < nv; ++i) {
        const uint32_t li = ssk_spring_ml_levels(ml, (uint32_t)sp->bones[i]);
        for (uint32_t l = 0; l < li; ++l) {
            uint32_t ni[2], nj[2];
            float w[2];
            hat(ml, sp, i, l, ni, w);
            conflict(list, list_count, ni[0], ni[1]);
            for (uint32_t e = sp->offsets[i]; e < sp->offsets[i + 1]; ++e) {
                const uint32_t j = sp->edges[e].neighbor;
                if (l >= ssk_spring_ml_levels(ml, sp->bones[j])) continue;
                hat(ml, sp, j, l, nj, w);
                if (nj[0] == ni[0] && nj[1] == ni[1]) continue;
                for (int x = 0; x < 2; ++x)
                    for (int y = 0; y < 2; ++y) conflict(list, list_count, ni[x], nj[y]);
            }
        }
    }
    for (uint32_t n = 0; n < node; ++n) {
        uint64_t used[4] = {0, 0, 0, 0};
        for (uint32_t k = 0; k < list_count[n]; ++k) {
            const uint32_t o = list[(size_t)n * CONFLICT_CAP + k];
            if (o < n) used[ml->node_color[o] / 64] |= 1ull << (ml->node_color[o] % 64);
        }
        uint32_t c = 0;
        while (c < 255 && (used[c / 64] >> (c % 64)) & 1u) ++c;
        ml->node_color[n] = (uint8_t)c;
        uint32_t *cc = &ml->color_count[ml->node_level[n]];
        if (c + 1 > *cc) *cc = c + 1;
    }

    /* vertices no force acts on (every stiffness times its map 0): the
     * correction leaves them, as the plain pass does */
    bool any_map = false;
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) any_map |= sp->maps[f] != NULL;
    if (any_map) {
        ml->frozen = calloc((size_t)nv + 8, 1);
        if (!ml->frozen) goto fail;
        for (uint32_t i = 0; i < nv; ++i) {
            float k = 0.0f;
            for (int f = 0; f < SSK_FORCE_COUNT; ++f)
                k += sp->params.stiffness[f] * (sp->maps[f] ? sp->maps[f][i] : 1.0f);
            ml->frozen[i] = !(k > 0.0f);
        }
    }
    /* the chunks of rows (parallel.h); their local nodes:
     * ssk_spring_ml_compact */
    ml->chunk_count = ssk_parallel_chunk_count(nv, SSK_PARALLEL_GRAIN);
    ml->theta = 1.0f;
    ml->scale = 1.0f;
    const size_t M = SSK_SPRING_ML_MOMENTS, U = SSK_SPRING_ML_MODES;
    ml->kinv = calloc((size_t)node * U * U + 1, sizeof(float));
    ml->node_basis = calloc((size_t)node * 9 + 1, sizeof(float));
    ml->node_center = calloc((size_t)node * 2 + 1, sizeof(float));
    ml->node_frame = calloc((size_t)node * 9 + 1, sizeof(float));
    ml->node_moment = calloc((size_t)node * M + 1, sizeof(float));
    if (!ml->kinv || !ml->node_basis || !ml->node_center || !ml->node_frame || !ml->node_moment)
        goto fail;
    /* rest bases: w the normalized sum of the node's bones' rest
     * directions, u and v across it */
    for (uint32_t b = 0; b < nb; ++b) {
        const float *h = rest_bones[b].head, *t = rest_bones[b].tail;
        float d[3] = {t[0] - h[0], t[1] - h[1], t[2] - h[2]};
        const float len = sqrtf(dot3(d, d));
        for (int c = 0; c < 3; ++c) d[c] = len > 0.0f ? d[c] / len : 0.0f;
        for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, b); ++l)
            for (uint32_t k = 0; k <= (1u << l); ++k) {
                float *B = ml->node_basis + 9 * (size_t)global_node(ml, b, l, k);
                for (int c = 0; c < 3; ++c) B[3 * c + 2] += d[c];
            }
    }
    for (uint32_t n = 0; n < node; ++n) {
        float *B = ml->node_basis + 9 * (size_t)n;
        float w[3] = {B[2], B[5], B[8]};
        float len = sqrtf(dot3(w, w));
        if (!(len > 0.0f)) {
            w[0] = 0.0f;
            w[1] = 1.0f;
            w[2] = 0.0f;
            len = 1.0f;
        }
        for (int c = 0; c < 3; ++c) w[c] /= len;
        /* u: the world axis least along w, made orthogonal */
        const float aw[3] = {fabsf(w[0]), fabsf(w[1]), fabsf(w[2])};
        const int least = aw[0] <= aw[1] && aw[0] <= aw[2] ? 0 : aw[1] <= aw[2] ? 1 : 2;
        float u[3] = {0.0f, 0.0f, 0.0f};
        u[least] = 1.0f;
        const float uw = dot3(u, w);
        for (int c = 0; c < 3; ++c) u[c] -= uw * w[c];
        const float ul = sqrtf(dot3(u, u));
        for (int c = 0; c < 3; ++c) u[c] /= ul;
        const float v[3] = {w[1] * u[2] - w[2] * u[1], w[2] * u[0] - w[0] * u[2],
                            w[0] * u[1] - w[1] * u[0]};
        for (int c = 0; c < 3; ++c) {
            B[3 * c] = u[c];
            B[3 * c + 1] = v[c];
            B[3 * c + 2] = w[c];
        }
    }
    /* centers: the hat-weighted mean rest offset across each node's axis */
    {
        float *wsum = calloc((size_t)node + 1, sizeof(float));
        if (!wsum) goto fail;
        for (uint32_t i = 0; i < nv; ++i) {
            const float *a = sp->anchor + 4 * (size_t)i;
            const float r = a[3] > 0.0f ? ml->inv_radius[ml->slot[sp->bones[i]]] : 0.0f;
            float st[3];
            for (int c = 0; c < 3; ++c) st[c] = r * (rest[3 * (size_t)i + c] - a[c]);
            for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, (uint32_t)sp->bones[i]); ++l) {
                uint32_t n[2];
                float w[2];
                hat(ml, sp, i, l, n, w);
                for (int h = 0; h < 2; ++h) {
                    const float *B = ml->node_basis + 9 * (size_t)n[h];
                    ml->node_center[2 * (size_t)n[h]] += w[h] * (B[0] * st[0] + B[3] * st[1] + B[6] * st[2]);
                    ml->node_center[2 * (size_t)n[h] + 1] += w[h] * (B[1] * st[0] + B[4] * st[1] + B[7] * st[2]);
                    wsum[n[h]] += w[h];
                }
            }
        }
        for (uint32_t n = 0; n < node; ++n)
            for (int c = 0; c < 2; ++c)
                ml->node_center[2 * (size_t)n + c] = wsum[n] > 0.0f ? ml->node_center[2 * (size_t)n + c] / wsum[n] : 0.0f;
        ml->node_weight = wsum;
        ml->node_radius = calloc((size_t)node + 1, sizeof(float));
        if (!ml->node_radius) goto fail;
        for (uint32_t b = 0; b < nb; ++b) {
            const float ir = ml->inv_radius[ml->slot[b]], r = ir > 0.0f ? 1.0f / ir : 0.0f;
            for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, b); ++l)
                for (uint32_t k = 0; k <= (1u << l); ++k) {
                    float *nr = &ml->node_radius[global_node(ml, b, l, k)];
                    *nr = r > *nr ? r : *nr;
                }
        }
    }
    free(head_node);
    free(node_first);
    free(count);
    free(radius);
    free(defined);
    free(list);
    free(list_count);
    return ml;
fail:
    free(head_node);
    free(node_first);
    free(count);
    free(radius);
    free(defined);
    free(list);
    free(list_count);
    ssk_spring_ml_destroy(ml);
    return NULL;
}

uint32_t ssk_spring_ml_row_slab(const ssk_spring_ml *ml, const ssk_spring *sp, uint32_t i)
{
    float up;
    const uint32_t b = (uint32_t)sp->bones[i];
    return ssk_spring_ml_levels(ml, b) ? ssk_spring_ml_finest(ml, b, sp->t[i], &up) : UINT32_MAX;
}

void ssk_spring_ml_kinv_full(const ssk_spring_ml *ml, float *dst)
{
    enum { U = SSK_SPRING_ML_MODES, S = SSK_SPRING_ML_KINV_FLOATS };
    for (uint32_t n = 0; n < ml->node_count; ++n)
        for (uint32_t a = 0; a < U; ++a)
            for (uint32_t c = 0; c < U; ++c)
                dst[((size_t)n * U + a) * U + c] = ml->kinv[(size_t)n * S + ssk_spring_ml_kinv_index(a, c)];
}

void ssk_spring_ml_watch_begin(ssk_spring_ml *ml, ssk_spring_ml_moves *m)
{
    ml->scale = 1.0f;
    m->last = m->best = INFINITY;
    m->growth = m->stall = 0;
}

void ssk_spring_ml_watch(ssk_spring_ml *ml, float md, ssk_spring_ml_moves *m)
{
    m->growth = md > m->last ? m->growth + 1 : 0;
    if (md < m->best) {
        m->best = md;
        m->stall = 0;
    } else {
        ++m->stall;
    }
    const float before = ml->scale;
    if (md > SSK_SPRING_ML_JUMP * SSK_SPRING_ML_JUMP * m->last)
        ml->scale *= 0.25f; /* a jump: at once */
    else if (m->growth >= SSK_SPRING_ML_GROWTH_WINDOW || m->stall >= SSK_SPRING_ML_STALL_WINDOW)
        ml->scale *= 0.5f;
    if (ml->scale != before) {
        /* the moves of the new scale are measured afresh */
        m->growth = m->stall = 0;
        m->best = INFINITY;
    }
    m->last = md;
}

size_t ssk_spring_ml_bytes(const ssk_spring_ml *ml, uint32_t bone_count, uint32_t vertex_count)
{
    /* the compact layout's arrays (ssk_spring_ml_compact) */
    const size_t nodes = ml->node_count, local = ml->local_count;
    const size_t per_slot = 1 + sizeof(uint32_t) + sizeof(float);
    const size_t per_node = sizeof(float) * (SSK_SPRING_ML_KINV_FLOATS + 9 + 2 + 1 + 9 +
                                             SSK_SPRING_ML_MOMENTS);
    const size_t partial = ml->partial == ml->local ? 0 : ml->chunk_offset[ml->chunk_count];
    (void)bone_count; /* the slot map is the spring's */
    return sizeof *ml + ((size_t)ml->slot_count + 1) * per_slot + nodes * per_node +
           local * (sizeof(uint32_t) + SSK_SPRING_ML_MOMENTS * sizeof(float)) +
           partial * SSK_SPRING_ML_MOMENTS * sizeof(float) +
           (size_t)ml->chunk_count * (2 * sizeof(uint32_t) + sizeof(float)) + sizeof(uint32_t) +
           (ml->frozen ? (size_t)vertex_count + 8 : 0);
}

void ssk_spring_ml_destroy(ssk_spring_ml *ml)
{
    if (!ml) return;
    free(ml->bone_levels);
    free(ml->bone_loc);
    free(ml->node_of);
    free(ml->node_level);
    free(ml->node_color);
    free(ml->inv_radius);
    free(ml->kinv);
    free(ml->node_basis);
    free(ml->node_center);
    free(ml->node_weight);
    free(ml->frozen);
    free(ml->node_radius);
    free(ml->node_frame);
    free(ml->node_moment);
    if (ml->partial != ml->local) free(ml->partial);
    free(ml->local);
    free(ml->chunk_key);
    free(ml->chunk_offset);
    free(ml->chunk_max);
    free(ml);
}

void ssk_spring_ml_frame(ssk_spring_ml *ml, const ssk_spring *sp, const ssk_attach_bone *bones)
{
    /* each node's rotation: the normalized, sign-aligned sum of the
     * rotations of the bones it belongs to (one, or a joint's bones);
     * accumulated in node_moment's first 4 floats */
    float *q = ml->node_moment;
    memset(q, 0, (size_t)ml->node_count * SSK_SPRING_ML_MOMENTS * sizeof(float));
    for (uint32_t b = 0; b < sp->bone_count; ++b)
        for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, b); ++l)
            for (uint32_t k = 0; k <= (1u << l); ++k) {
                float *acc = q + (size_t)global_node(ml, b, l, k) * SSK_SPRING_ML_MOMENTS;
                const float *r = bones[b].rotation;
                const float sgn = acc[0] * r[0] + acc[1] * r[1] + acc[2] * r[2] + acc[3] * r[3] < 0.0f
                                      ? -1.0f
                                      : 1.0f;
                for (int c = 0; c < 4; ++c) acc[c] += sgn * r[c];
            }
    static const float unit[3][3] = {{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 1.0f}};
    for (uint32_t n = 0; n < ml->node_count; ++n) {
        const float *acc = q + (size_t)n * SSK_SPRING_ML_MOMENTS;
        float r[4], col[3];
        const float len = sqrtf(acc[0] * acc[0] + acc[1] * acc[1] + acc[2] * acc[2] + acc[3] * acc[3]);
        for (int c = 0; c < 4; ++c) r[c] = len > 0.0f ? acc[c] / len : (c == 0 ? 1.0f : 0.0f);
        float E[9];
        for (int m = 0; m < 3; ++m) {
            ssk_am_rotate(col, r, unit[m]);
            for (int c = 0; c < 3; ++c) E[3 * c + m] = col[c];
        }
        const float *B = ml->node_basis + 9 * (size_t)n;
        float *F = ml->node_frame + 9 * (size_t)n;
        for (int c = 0; c < 3; ++c)
            for (int m = 0; m < 3; ++m)
                F[3 * c + m] = E[3 * c] * B[m] + E[3 * c + 1] * B[3 + m] + E[3 * c + 2] * B[6 + m];
    }
}

/* One probe's loops (probe_set, probe_read). */
typedef struct probe_job {
    const ssk_spring_ml *ml;
    const ssk_spring *sp;
    float *dst, *scratch;
    const float *x, *g, *g0;
    const uint8_t *roles;
    uint32_t level, mode, color;
} probe_job;

static void probe_set_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const probe_job *j = ctx;
    (void)chunk;
    const ssk_spring_ml *ml = j->ml;
    const ssk_spring *sp = j->sp;
    const uint8_t *roles = j->roles;
    const float *x = j->x;
    float *dst = j->dst;
    const uint32_t level = j->level, mode = j->mode, color = j->color;
    for (uint32_t i = (uint32_t)begin; i < (uint32_t)end; ++i) {
        if (!takes_part(ml, roles, i) || level >= ssk_spring_ml_levels(ml, (uint32_t)sp->bones[i])) continue;
        uint32_t n[2];
        float w[2], s[3], phi[3];
        hat(ml, sp, i, level, n, w);
        scaled_offset(ml, sp, i, x, s);
        for (int h = 0; h < 2; ++h) {
            if (ml->node_color[n[h]] != color) continue;
            mode_shape(phi, ml->node_frame + 9 * (size_t)n[h], ml->node_center + 2 * (size_t)n[h], mode, s);
            for (int c = 0; c < 3; ++c) dst[3 * (size_t)i + c] += ml->probe * w[h] * phi[c];
        }
    }
}

uint32_t ssk_spring_ml_probe_set(const ssk_spring_ml *ml, const ssk_spring *sp, float *dst,
                                 const float *x, const uint8_t *roles, uint32_t level,
                                 uint32_t mode, uint32_t color)
{
    const uint32_t nv = sp->vertex_count;
    uint32_t nodes = 0;
    for (uint32_t n = 0; n < ml->node_count; ++n)
        nodes += ml->node_level[n] == level && ml->node_color[n] == color;
    memcpy(dst, x, 3 * (size_t)nv * sizeof(float));
    if (nodes == 0) return 0;
    probe_job j = {ml, sp, dst, NULL, x, NULL, NULL, roles, level, mode, color};
    ssk_parallel_for(nv, SSK_PARALLEL_GRAIN, probe_set_chunk, &j);
    return nodes;
}

enum { PROBE_W = SSK_SPRING_ML_MODES + 1 };

static void probe_read_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    enum { U = SSK_SPRING_ML_MODES, W = PROBE_W };
    const probe_job *j = ctx;
    const ssk_spring_ml *ml = j->ml;
    const ssk_spring *sp = j->sp;
    const uint8_t *roles = j->roles;
    const float *g = j->g, *g0 = j->g0, *x = j->x;
    const uint32_t level = j->level, mode = j->mode, color = j->color;
    const size_t per_chunk = (size_t)ml->node_count * W;
    float *acc = j->scratch + (size_t)chunk * per_chunk;
    memset(acc, 0, per_chunk * sizeof(float));
    for (int64_t i = begin; i < end; ++i) {
        if (!takes_part(ml, roles, (uint32_t)i) || level >= ssk_spring_ml_levels(ml, (uint32_t)sp->bones[i]))
            continue;
        uint32_t n[2];
        float w[2], s[3], phi[3], psi[3];
        hat(ml, sp, (uint32_t)i, level, n, w);
        scaled_offset(ml, sp, (uint32_t)i, x, s);
        const float q = ssk_spring_step_inverse(sp, roles, (uint32_t)i);
        const float dg[3] = {g[3 * i] - g0[3 * i], g[3 * i + 1] - g0[3 * i + 1],
                             g[3 * i + 2] - g0[3 * i + 2]};
        for (int h = 0; h < 2; ++h) {
            if (ml->node_color[n[h]] != color) continue;
            const float *E = ml->node_frame + 9 * (size_t)n[h];
            const float *c = ml->node_center + 2 * (size_t)n[h];
            float *col = acc + (size_t)n[h] * W;
            /* row r of column `mode`: -phi_r . P^-1 dg / probe */
            for (uint32_t r = 0; r < U; ++r) {
                mode_shape(psi, E, c, r, s);
                col[r] += w[h] * (-q * dot3(psi, dg) / ml->probe);
            }
            mode_shape(phi, E, c, mode, s);
            col[U] += w[h] * w[h] * q * dot3(phi, phi);
        }
    }
}

void ssk_spring_ml_probe_read(const ssk_spring_ml *ml, const ssk_spring *sp, float *blocks,
                              float *own, float *scratch, const float *g, const float *g0,
                              const float *x, const uint8_t *roles, uint32_t level, uint32_t mode,
                              uint32_t color)
{
    enum { U = SSK_SPRING_ML_MODES, W = PROBE_W };
    probe_job j = {ml, sp, NULL, scratch, x, g, g0, roles, level, mode, color};
    ssk_parallel_for(sp->vertex_count, SSK_PARALLEL_GRAIN, probe_read_chunk, &j);
    /* the chunks' sums in chunk order */
    const size_t per_chunk = (size_t)ml->node_count * W;
    for (uint32_t n = 0; n < ml->node_count; ++n) {
        if (ml->node_level[n] != level || ml->node_color[n] != color) continue;
        for (uint32_t c = 0; c < ml->chunk_count; ++c) {
            const float *col = scratch + (size_t)c * per_chunk + (size_t)n * W;
            for (uint32_t r = 0; r < U; ++r) blocks[(size_t)n * U * U + r * U + mode] += col[r];
            own[(size_t)n * U + mode] += col[U];
        }
    }
}

/* Eigen-decomposition of a symmetric n by n matrix (cyclic Jacobi
 * rotations): a is destroyed, its diagonal the eigenvalues; v (row-major)
 * the eigenvectors as columns. */
static void symmetric_eigen(double *a, double *v, int n)
{
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) v[r * n + c] = r == c;
    for (int sweep = 0; sweep < 50; ++sweep) {
        double off = 0.0;
        for (int p = 0; p < n; ++p)
            for (int q = p + 1; q < n; ++q) off += a[p * n + q] * a[p * n + q];
        if (off < 1e-24) break;
        for (int p = 0; p < n; ++p)
            for (int q = p + 1; q < n; ++q) {
                const double apq = a[p * n + q];
                if (fabs(apq) < 1e-300) continue;
                const double theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                const double t = (theta >= 0.0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < n; ++k) { /* columns p, q */
                    const double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; ++k) { /* rows p, q */
                    const double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for (int k = 0; k < n; ++k) {
                    const double vkp = v[k * n + p], vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
    }
}

void ssk_spring_ml_invert(ssk_spring_ml *ml, const float *blocks, const float *own,
                          const float *weight)
{
    enum { M = SSK_SPRING_ML_MODES };
    for (uint32_t n = 0; n < ml->node_count; ++n) {
        const float *K = blocks + (size_t)n * M * M, *o = own + (size_t)n * M;
        float *out = ml->kinv + (size_t)n * M * M;
        memset(out, 0, (size_t)M * M * sizeof(float));
        /* a node of a few vertices corrects nothing the plain pass would
         * not, and its probe is noise */
        if (weight[n] < SSK_SPRING_ML_NODE_WEIGHT) continue;
        float largest = 0.0f;
        for (int r = 0; r < M; ++r) largest = o[r] > largest ? o[r] : largest;
        int keep[M], m = 0;
        for (int r = 0; r < M; ++r)
            if (o[r] > SSK_SPRING_ML_MODE_EPSILON * largest) keep[m++] = r;
        if (m == 0) continue;
        /* the symmetric part, scaled by the plain curvature sums: A =
         * D^-1/2 K D^-1/2; its eigenvalues floored at the floor (a mode
         * combination moves at most 1 / floor times the plain step) */
        double A[M * M], V[M * M], d[M];
        for (int r = 0; r < m; ++r) {
            d[r] = 1.0 / sqrt((double)o[keep[r]]);
            for (int c = 0; c < m; ++c)
                A[r * m + c] = 0.5 * ((double)K[keep[r] * M + keep[c]] + K[keep[c] * M + keep[r]]);
        }
        for (int r = 0; r < m; ++r)
            for (int c = 0; c < m; ++c) A[r * m + c] *= d[r] * d[c];
        symmetric_eigen(A, V, m);
        double inv[M];
        for (int k = 0; k < m; ++k) {
            const double e = A[k * m + k];
            inv[k] = 1.0 / (e > SSK_SPRING_ML_CURVATURE_FLOOR ? e : SSK_SPRING_ML_CURVATURE_FLOOR);
        }
        for (int r = 0; r < m; ++r)
            for (int c = 0; c < m; ++c) {
                double x = 0.0;
                for (int k = 0; k < m; ++k) x += V[r * m + k] * inv[k] * V[c * m + k];
                out[keep[r] * M + keep[c]] = (float)(x * d[r] * d[c]);
            }
    }
}

/* Whether node n's inverse block (create time layout) is not zero. */
static bool node_active(const ssk_spring_ml *ml, uint32_t n)
{
    enum { U = SSK_SPRING_ML_MODES };
    const float *K = ml->kinv + (size_t)n * U * U;
    for (int k = 0; k < U * U; ++k)
        if (K[k] != 0.0f) return true;
    return false;
}

/* The finest local nodes each chunk of rows reaches (parallel.h), and
 * where its sums go. */
static bool build_chunks(ssk_spring_ml *ml, const ssk_spring *sp)
{
    const uint32_t nv = sp->vertex_count, chunks = ml->chunk_count;
    ml->chunk_key = calloc((size_t)chunks + 1, sizeof(uint32_t));
    ml->chunk_offset = calloc((size_t)chunks + 1, sizeof(uint32_t));
    ml->chunk_max = calloc((size_t)chunks + 1, sizeof(float));
    if (!ml->chunk_key || !ml->chunk_offset || !ml->chunk_max) return false;
    if (chunks == 1) { /* one chunk sums straight into `local` */
        ml->chunk_offset[1] = ml->local_count;
        ml->partial = ml->local;
        return true;
    }
    for (uint32_t c = 0; c < chunks; ++c) {
        uint32_t lo = UINT32_MAX, hi = 0;
        const uint32_t end = (c + 1) * SSK_PARALLEL_GRAIN < nv ? (c + 1) * SSK_PARALLEL_GRAIN : nv;
        for (uint32_t i = c * SSK_PARALLEL_GRAIN; i < end; ++i) {
            const int32_t b = sp->bones[i];
            if (ssk_spring_ml_levels(ml, (uint32_t)b) == 0) continue;
            float up;
            const uint32_t k = ssk_spring_ml_finest(ml, (uint32_t)b, sp->t[i], &up);
            lo = k < lo ? k : lo;
            hi = k + 1 > hi ? k + 1 : hi; /* the slab's upper node */
        }
        ml->chunk_key[c] = lo == UINT32_MAX ? 0 : lo;
        ml->chunk_offset[c + 1] = ml->chunk_offset[c] + (lo == UINT32_MAX ? 0 : hi - lo + 1);
    }
    ml->partial = calloc((size_t)ml->chunk_offset[chunks] * SSK_SPRING_ML_MOMENTS + 1, sizeof(float));
    return ml->partial != NULL;
}

bool ssk_spring_ml_compact(ssk_spring_ml *ml, const ssk_spring *sp)
{
    enum { U = SSK_SPRING_ML_MODES, S = SSK_SPRING_ML_KINV_FLOATS, M = SSK_SPRING_ML_MOMENTS };
    const uint32_t nb = sp->bone_count, nodes = ml->node_count;
    /* slot of each active node; the zero node after them where a live
     * bone has a local node of an inactive one */
    uint32_t *slot = malloc(((size_t)nodes + 1) * sizeof(uint32_t));
    uint8_t *levels = calloc((size_t)sp->slot_count + 1, 1);
    uint32_t *loc = calloc((size_t)sp->slot_count + 1, sizeof(uint32_t));
    if (!slot || !levels || !loc) goto fail;
    uint32_t active = 0, local = 0;
    for (uint32_t n = 0; n < nodes; ++n) slot[n] = node_active(ml, n) ? active++ : UINT32_MAX;
    bool zero = false;
    for (uint32_t b = 0; b < nb; ++b) {
        bool live = false, inactive = false;
        for (uint32_t l = 0; l < ssk_spring_ml_levels(ml, b); ++l)
            for (uint32_t k = 0; k <= (1u << l); ++k) {
                const bool on = slot[global_node(ml, b, l, k)] != UINT32_MAX;
                live |= on;
                inactive |= !on;
            }
        if (!live) continue;
        const uint32_t sb = ml->slot[b];
        levels[sb] = ml->bone_levels[sb];
        loc[sb] = local;
        local += (1u << levels[sb]) - 1u + levels[sb]; /* sum over levels of 2^l + 1 */
        zero |= inactive;
    }
    const uint32_t count = active + (zero ? 1u : 0u);
    uint32_t *node_of = malloc(((size_t)local + 1) * sizeof(uint32_t));
    float *kinv = calloc((size_t)count * S + 1, sizeof(float));
    float *basis = calloc((size_t)count * 9 + 1, sizeof(float));
    float *center = calloc((size_t)count * 2 + 1, sizeof(float));
    float *radius = calloc((size_t)count + 1, sizeof(float));
    float *frame = calloc((size_t)count * 9 + 1, sizeof(float));
    float *moment = calloc((size_t)count * M + 1, sizeof(float));
    float *loc_moments = calloc((size_t)local * M + 1, sizeof(float));
    if (!node_of || !kinv || !basis || !center || !radius || !frame || !moment || !loc_moments) {
        free(node_of);
        free(kinv);
        free(basis);
        free(center);
        free(radius);
        free(frame);
        free(moment);
        free(loc_moments);
        goto fail;
    }
    for (uint32_t b = 0; b < nb; ++b)
        for (uint32_t l = 0; l < levels[ml->slot[b]]; ++l)
            for (uint32_t k = 0; k <= (1u << l); ++k) {
                const uint32_t s = slot[global_node(ml, b, l, k)];
                node_of[loc[ml->slot[b]] + (1u << l) - 1u + l + k] = s != UINT32_MAX ? s : active;
            }
    for (uint32_t n = 0; n < nodes; ++n) {
        const uint32_t s = slot[n];
        if (s == UINT32_MAX) continue;
        for (uint32_t a = 0; a < U; ++a)
            for (uint32_t c = a; c < U; ++c)
                kinv[(size_t)s * S + ssk_spring_ml_kinv_index(a, c)] = ml->kinv[((size_t)n * U + a) * U + c];
        memcpy(basis + 9 * (size_t)s, ml->node_basis + 9 * (size_t)n, 9 * sizeof(float));
        memcpy(frame + 9 * (size_t)s, ml->node_frame + 9 * (size_t)n, 9 * sizeof(float));
        memcpy(center + 2 * (size_t)s, ml->node_center + 2 * (size_t)n, 2 * sizeof(float));
        radius[s] = ml->node_radius[n];
    }
    free(ml->node_of);
    free(ml->kinv);
    free(ml->node_basis);
    free(ml->node_center);
    free(ml->node_radius);
    free(ml->node_frame);
    free(ml->node_moment);
    free(ml->bone_levels);
    free(ml->bone_loc);
    free(ml->node_level);
    free(ml->node_color);
    free(ml->node_weight);
    ml->node_level = ml->node_color = NULL;
    ml->node_weight = NULL;
    ml->node_of = node_of;
    ml->kinv = kinv;
    ml->node_basis = basis;
    ml->node_center = center;
    ml->node_radius = radius;
    ml->node_frame = frame;
    ml->node_moment = moment;
    ml->local = loc_moments;
    ml->bone_levels = levels;
    ml->bone_loc = loc;
    ml->node_count = count;
    ml->local_count = local;
    free(slot);
    return build_chunks(ml, sp);
fail:
    free(slot);
    free(levels);
    free(loc);
    return false;
}

/* --- the per-iteration passes: 8 consecutive rows at once when they lie
 * in one slab (the common case: a mesh is stored ring by ring or patch by
 * patch), one row at a time otherwise ------------------------------- */

typedef ssk_v8 v8;
#define V8(x) ssk_v8_splat(x)

typedef struct pass_view {
    const float *restrict next, *restrict cur, *restrict prev, *restrict anchor,
        *restrict t, *restrict inv_radius, *restrict detail_map, *restrict maps;
    const ssk_spring_ml *ml;
    float *restrict out;
    float *restrict rec; /* records of out (the next pass's pre-pass), or NULL */
    const int32_t *restrict bones;
    const uint8_t *restrict levels, *restrict roles, *restrict frozen;
    const uint32_t *restrict offsets, *restrict slot;
    float q_plain, q_free, dt, kd, omega, eps_len;
} pass_view;

/* Local finest node k of row i (the key of its slab) and the upper
 * node's weight; its bone has levels (row_on). */
static inline __attribute__((always_inline)) uint32_t row_key(const pass_view *v, int64_t i,
                                                              float *up)
{
    return ssk_spring_ml_finest(v->ml, (uint32_t)v->bones[i], v->t[i], up);
}

/* Whether row i takes part (takes_part) and its bone has levels. */
static inline __attribute__((always_inline)) bool row_on(const pass_view *v, int64_t i)
{
    return v->roles[i] == SSK_ROLE_FREE && !(v->frozen && v->frozen[i]) &&
           v->levels[v->slot[v->bones[i]]] > 0;
}

/* 1 / p_i (inv_step), 0 for a row that takes no part (takes_part). */
static inline __attribute__((always_inline)) float row_q(const pass_view *v, int64_t i)
{
    if (v->roles[i] != SSK_ROLE_FREE || (v->frozen && v->frozen[i])) return 0.0f;
    if (v->offsets[i + 1] <= v->offsets[i]) return v->q_plain;
    return v->detail_map ? (1.0f + v->dt * v->kd * v->detail_map[i]) / v->dt : v->q_free;
}

/* s~ of row i (scaled_offset). */
static inline __attribute__((always_inline)) void row_offset(const pass_view *v, int64_t i,
                                                             float s[3])
{
    const float *a = v->anchor + 4 * i;
    const float r = a[3] > 0.0f ? v->inv_radius[v->slot[v->bones[i]]] : 0.0f;
    for (int c = 0; c < 3; ++c) s[c] = r * (v->cur[3 * i + c] - a[c]);
}

/* The 8 rows' anchors as lane vectors (a 4 by 8 transpose). */
static inline __attribute__((always_inline)) void lanes_anchor(const pass_view *v, int64_t i0,
                                                               v8 a[4])
{
    ssk_v8_load_weights4(a, v->anchor + 4 * i0);
}

/* The 8 rows' s~ as lane vectors, rows of the one bone of slot s
 * (block_uniform). */
static inline __attribute__((always_inline)) void lanes_offset(const pass_view *v, int64_t i0,
                                                               const v8 a[4], uint32_t s,
                                                               v8 *s0, v8 *s1, v8 *s2)
{
    v8 cx, cy, cz;
    ssk_v8_load_xyz(v->cur + 3 * i0, &cx, &cy, &cz);
    const v8 r = ssk_v8_select(a[3] > V8(0.0f), V8(v->inv_radius[s]), V8(0.0f));
    *s0 = r * (cx - a[0]);
    *s1 = r * (cy - a[1]);
    *s2 = r * (cz - a[2]);
}

/* The 8 rows i0 .. i0 + 7 when they share one bone and one slab and are
 * all free: their key, their bone's slot, upper weights and (q not NULL, then also all with
 * edges) 1 / p, in vector arithmetic: BLOCK_ON; BLOCK_OFF when they are
 * all free rows of one bone without levels (no correction); BLOCK_ROWS
 * otherwise (the caller goes row by row). The prolongation needs no p, so
 * no CSR read. */
enum { BLOCK_ROWS, BLOCK_ON, BLOCK_OFF };
static inline __attribute__((always_inline)) int block_uniform(const pass_view *v, int64_t i0,
                                                               uint32_t *key, v8 *up, v8 *q,
                                                               uint32_t *slot)
{
    uint64_t roles8;
    memcpy(&roles8, v->roles + i0, sizeof roles8);
    if (roles8 != 0) return BLOCK_ROWS; /* SSK_ROLE_FREE is 0 */
    if (v->frozen) {
        uint64_t frozen8;
        memcpy(&frozen8, v->frozen + i0, sizeof frozen8);
        if (frozen8 != 0) return BLOCK_ROWS;
    }
    ssk_i8 b;
    memcpy(&b, v->bones + i0, sizeof b);
    const ssk_i8 b0 = (ssk_i8){b[0], b[0], b[0], b[0], b[0], b[0], b[0], b[0]};
    const ssk_i8 same = b == b0;
    for (int l = 0; l < 8; ++l)
        if (!same[l]) return BLOCK_ROWS;
    if (q) {
        ssk_i8 o0, o1;
        memcpy(&o0, v->offsets + i0, sizeof o0);
        memcpy(&o1, v->offsets + i0 + 1, sizeof o1);
        const ssk_i8 edges = o1 > o0; /* offsets < 2^31 */
        for (int l = 0; l < 8; ++l)
            if (!edges[l]) return BLOCK_ROWS;
    }
    const uint32_t sb = v->slot[b[0]], levels = v->levels[sb];
    if (levels == 0) return BLOCK_OFF;
    const uint32_t l = levels - 1u;
    const float segments = (float)(1u << l);
    v8 t = ssk_v8_load(v->t + i0);
    t = ssk_v8_select(t < V8(0.0f), V8(0.0f), t);
    t = ssk_v8_select(t > V8(1.0f), V8(1.0f), t);
    const v8 u = t * V8(segments);
    ssk_i8 k = __builtin_convertvector(u, ssk_i8);
    const int32_t last = (int32_t)(1u << l) - 1;
    const ssk_i8 lastv = (ssk_i8){last, last, last, last, last, last, last, last};
    const ssk_i8 over = k > lastv;
    k = (k & ~over) | (lastv & over);
    for (int j = 1; j < 8; ++j)
        if (k[j] != k[0]) return BLOCK_ROWS;
    *up = u - V8((float)k[0]);
    *slot = sb;
    *key = ssk_spring_ml_loc_slot(v->ml, sb, l) + (uint32_t)k[0];
    if (!q) return BLOCK_ON;
    if (v->detail_map) {
        const v8 map = ssk_v8_load(v->detail_map + i0);
        *q = (V8(1.0f) + V8(v->dt * v->kd) * map) / V8(v->dt);
    } else {
        *q = V8(v->q_free);
    }
    return BLOCK_ON;
}

enum { MOM = SSK_SPRING_ML_MOMENTS };

/* Restriction of rows [begin, end) into acc: local node k's 12 sums at
 * acc + (k - base) 12 (a chunk's part of ml->partial). */
SSK_TARGET_CLONES
static void restrict_range(const pass_view *v, float *restrict acc, uint32_t base, int64_t begin,
                           int64_t end)
{
    v8 sum[MOM], up_sum[MOM];
    for (int c = 0; c < MOM; ++c) sum[c] = up_sum[c] = V8(0.0f);
    uint32_t key = UINT32_MAX;
#define FLUSH()                                                                                    \
    do {                                                                                           \
        if (key != UINT32_MAX) {                                                                   \
            float *m_ = acc + (size_t)(key - base) * MOM;                                          \
            for (int c = 0; c < MOM; ++c) {                                                        \
                float a_ = 0.0f, u_ = 0.0f;                                                        \
                for (int l = 0; l < 8; ++l) {                                                      \
                    a_ += sum[c][l];                                                               \
                    u_ += up_sum[c][l];                                                            \
                }                                                                                  \
                m_[c] += a_ - u_;                                                                  \
                m_[MOM + c] += u_;                                                                 \
                sum[c] = up_sum[c] = V8(0.0f);                                                     \
            }                                                                                      \
        }                                                                                          \
    } while (0)
    int64_t i = begin;
    for (; i + 8 <= end; i += 8) {
        uint32_t k8, slot;
        v8 up, q;
        const int block = block_uniform(v, i, &k8, &up, &q, &slot);
        if (block == BLOCK_OFF) { /* no part: a run ends (the same sums as slabs of their own) */
            FLUSH();
            key = UINT32_MAX;
            continue;
        }
        if (block == BLOCK_ON) {
            if (k8 != key) {
                FLUSH();
                key = k8;
            }
            v8 s0, s1, s2, nx, ny, nz, cx, cy, cz, a[4];
            lanes_anchor(v, i, a);
            lanes_offset(v, i, a, slot, &s0, &s1, &s2);
            ssk_v8_load_xyz(v->next + 3 * i, &nx, &ny, &nz);
            ssk_v8_load_xyz(v->cur + 3 * i, &cx, &cy, &cz);
            const v8 f0 = q * (nx - cx), f1 = q * (ny - cy), f2 = q * (nz - cz);
            const v8 m[MOM] = {f0,      f1,      f2,      f0 * s0, f0 * s1, f0 * s2,
                               f1 * s0, f1 * s1, f1 * s2, f2 * s0, f2 * s1, f2 * s2};
            for (int c = 0; c < MOM; ++c) {
                sum[c] += m[c];
                up_sum[c] += up * m[c];
            }
            continue;
        }
        uint32_t keys[8];
        float ups[8], qs[8];
        bool on[8];
        for (int l = 0; l < 8; ++l) {
            on[l] = row_on(v, i + l); /* the others add nothing */
            keys[l] = on[l] ? row_key(v, i + l, &ups[l]) : 0;
            qs[l] = row_q(v, i + l);
        }
        for (int l = 0; l < 8; ++l) { /* rows of several slabs: one at a time */
            if (!on[l]) continue;
            float s[3], f[3];
            row_offset(v, i + l, s);
            for (int c = 0; c < 3; ++c)
                f[c] = qs[l] * (v->next[3 * (i + l) + c] - v->cur[3 * (i + l) + c]);
            float *m = acc + (size_t)(keys[l] - base) * MOM;
            const float w[2] = {1.0f - ups[l], ups[l]};
            for (int h = 0; h < 2; ++h)
                for (int c = 0; c < 3; ++c) {
                    m[h * MOM + c] += w[h] * f[c];
                    for (int e = 0; e < 3; ++e) m[h * MOM + 3 + 3 * c + e] += w[h] * f[c] * s[e];
                }
        }
    }
    FLUSH();
#undef FLUSH
    for (; i < end; ++i) {
        if (!row_on(v, i)) continue;
        float s[3], f[3], up;
        const uint32_t k = row_key(v, i, &up);
        const float q = row_q(v, i);
        row_offset(v, i, s);
        for (int c = 0; c < 3; ++c) f[c] = q * (v->next[3 * i + c] - v->cur[3 * i + c]);
        float *m = acc + (size_t)(k - base) * MOM;
        const float w[2] = {1.0f - up, up};
        for (int h = 0; h < 2; ++h)
            for (int c = 0; c < 3; ++c) {
                m[h * MOM + c] += w[h] * f[c];
                for (int e = 0; e < 3; ++e) m[h * MOM + 3 + 3 * c + e] += w[h] * f[c] * s[e];
            }
    }
}

/* Prolongation of row i (scalar): out = blend(next + correction). */
static inline __attribute__((always_inline)) float prolong_row(const pass_view *v, int64_t i)
{
    float y[3];
    for (int c = 0; c < 3; ++c) y[c] = v->next[3 * i + c];
    if (row_on(v, i)) {
        float s[3], up;
        const uint32_t k = row_key(v, i, &up);
        row_offset(v, i, s);
        const float *m = v->maps + (size_t)k * MOM;
        for (int c = 0; c < 3; ++c) {
            const float v0 = m[c] + m[3 + 3 * c] * s[0] + m[4 + 3 * c] * s[1] + m[5 + 3 * c] * s[2];
            const float v1 = m[MOM + c] + m[MOM + 3 + 3 * c] * s[0] + m[MOM + 4 + 3 * c] * s[1] +
                             m[MOM + 5 + 3 * c] * s[2];
            y[c] += (1.0f - up) * v0 + up * v1;
        }
    }
    if (v->prev)
        for (int c = 0; c < 3; ++c) y[c] = v->omega * (y[c] - v->prev[3 * i + c]) + v->prev[3 * i + c];
    float d2 = 0.0f;
    for (int c = 0; c < 3; ++c) {
        v->out[3 * i + c] = y[c];
        const float d = y[c] - v->cur[3 * i + c];
        d2 += d * d;
    }
    if (v->rec) ssk_spring_record(v->rec + 8 * i, y, v->anchor + 4 * i, v->eps_len);
    return d2;
}

/* Prolongation of rows [begin, end); returns the largest squared move
 * (NaN-propagating: a non-finite move makes it NaN or infinite). */
SSK_TARGET_CLONES
static float prolong_range(const pass_view *v, int64_t begin, int64_t end)
{
    v8 md = V8(0.0f);
    float md1 = 0.0f;
    int64_t i = begin;
    for (; i + 8 <= end; i += 8) {
        uint32_t key, slot;
        v8 up;
        const int block = block_uniform(v, i, &key, &up, NULL, &slot);
        if (block == BLOCK_ROWS) {
            for (int l = 0; l < 8; ++l) {
                const float d2 = prolong_row(v, i + l);
                md1 = !(d2 <= md1) ? d2 : md1;
            }
            continue;
        }
        v8 y[3], c3[3], a[4];
        lanes_anchor(v, i, a);
        ssk_v8_load_xyz(v->next + 3 * i, &y[0], &y[1], &y[2]);
        ssk_v8_load_xyz(v->cur + 3 * i, &c3[0], &c3[1], &c3[2]);
        if (block == BLOCK_ON) {
            v8 s0, s1, s2;
            lanes_offset(v, i, a, slot, &s0, &s1, &s2);
            const v8 lo = V8(1.0f) - up;
            const float *m = v->maps + (size_t)key * MOM;
            for (int c = 0; c < 3; ++c) {
                const v8 v0 = V8(m[c]) + V8(m[3 + 3 * c]) * s0 + V8(m[4 + 3 * c]) * s1 + V8(m[5 + 3 * c]) * s2;
                const v8 v1 = V8(m[MOM + c]) + V8(m[MOM + 3 + 3 * c]) * s0 + V8(m[MOM + 4 + 3 * c]) * s1 +
                              V8(m[MOM + 5 + 3 * c]) * s2;
                y[c] += lo * v0 + up * v1;
            }
        }
        if (v->prev) {
            v8 p[3];
            ssk_v8_load_xyz(v->prev + 3 * i, &p[0], &p[1], &p[2]);
            const v8 om = V8(v->omega);
            for (int c = 0; c < 3; ++c) y[c] = om * (y[c] - p[c]) + p[c];
        }
        ssk_v8_store_xyz(v->out + 3 * i, y[0], y[1], y[2]);
        if (v->rec) { /* records_lanes8 of core/kernels/spring.c, fused */
            const v8 aw = a[3];
            const v8 sx = y[0] - a[0], sy = y[1] - a[1], sz = y[2] - a[2];
            const v8 l2 = sx * sx + sy * sy + sz * sz;
            v8 len;
            for (int l = 0; l < 8; ++l) len[l] = sqrtf(l2[l]);
            const ssk_i8 ok = (len > V8(v->eps_len)) & (aw > V8(0.0f));
            const v8 inv = ssk_v8_select(ok, V8(1.0f) / ssk_v8_select(ok, len, V8(1.0f)), V8(0.0f));
            v8 r[8] = {y[0], y[1], y[2], len, sx * inv, sy * inv, sz * inv, V8(0.0f)};
            ssk_v8_transpose8(r);
            for (int k = 0; k < 8; ++k) ssk_v8_store(v->rec + 8 * (i + k), r[k]);
        }
        const v8 d0 = y[0] - c3[0], d1 = y[1] - c3[1], d2 = y[2] - c3[2];
        const v8 dd = d0 * d0 + d1 * d1 + d2 * d2;
        /* !(dd <= md): NaN wins */
        md = ssk_v8_select(~(dd <= md), dd, md);
    }
    for (; i < end; ++i) {
        const float d2 = prolong_row(v, i);
        md1 = !(d2 <= md1) ? d2 : md1;
    }
    for (int l = 0; l < 8; ++l) md1 = !(md[l] <= md1) ? md[l] : md1;
    return md1;
}

/* The restriction of one chunk into its part of ml->partial. */
static void restrict_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const pass_view *v = ctx;
    const ssk_spring_ml *ml = v->ml;
    float *acc = ml->partial + (size_t)ml->chunk_offset[chunk] * MOM;
    memset(acc, 0,
           (size_t)(ml->chunk_offset[chunk + 1] - ml->chunk_offset[chunk]) * MOM * sizeof(float));
    restrict_range(v, acc, ml->chunk_key[chunk], begin, end);
}

static void prolong_chunk(void *ctx, int64_t begin, int64_t end, uint32_t chunk)
{
    const pass_view *v = ctx;
    v->ml->chunk_max[chunk] = prolong_range(v, begin, end);
}

/* The correction of one iteration (spring.h): restriction to the finest
 * local nodes, to the coarser levels within each bone (hat_l,k =
 * hat_l+1,2k + (hat_l+1,2k-1 + hat_l+1,2k+1) / 2), onto the global nodes,
 * the coarse step per node, and back. */
float ssk_spring_ml_correct(ssk_spring_ml *ml, const ssk_spring *sp, float *next,
                            const float *cur, const float *prev, float omega,
                            const uint8_t *roles, float *rec, bool restricted)
{
    enum { M = SSK_SPRING_ML_MOMENTS, U = SSK_SPRING_ML_MODES };
    const int64_t nv = sp->vertex_count;
    const size_t nl = (size_t)ml->local_count * M;
    pass_view v = {
        .next = next,
        .cur = cur,
        .prev = prev && omega != 1.0f ? prev : NULL,
        .anchor = sp->anchor,
        .t = sp->t,
        .inv_radius = ml->inv_radius,
        .slot = ml->slot,
        .detail_map = sp->maps[SSK_FORCE_DETAIL],
        .maps = ml->local,
        .ml = ml,
        .out = next,
        .rec = rec,
        .eps_len = sp->length_epsilon,
        .bones = sp->bones,
        .levels = ml->bone_levels,
        .roles = roles,
        .frozen = ml->frozen,
        .offsets = sp->offsets,
        .dt = sp->params.dt,
        .kd = sp->params.stiffness[SSK_FORCE_DETAIL],
        .omega = omega,
    };
    v.q_plain = 1.0f / v.dt;
    v.q_free = (1.0f + v.dt * v.kd) / v.dt;
    /* moments (sum w f, sum w f s~^T) at each bone's finest level, per
     * chunk of rows (restrict_range), then summed in chunk order */
    if (!restricted) ssk_parallel_for(nv, SSK_PARALLEL_GRAIN, restrict_chunk, &v);
    float *loc = ml->local;
    if (ml->partial != loc) { /* one chunk sums into loc itself (0 + x is x) */
        memset(loc, 0, nl * sizeof(float));
        for (uint32_t c = 0; c < ml->chunk_count; ++c) {
            const float *part = ml->partial + (size_t)ml->chunk_offset[c] * M;
            float *dst = loc + (size_t)ml->chunk_key[c] * M;
            const size_t count = (size_t)(ml->chunk_offset[c + 1] - ml->chunk_offset[c]) * M;
            for (size_t u = 0; u < count; ++u) dst[u] += part[u];
        }
    }
    /* to the coarser levels, then onto the nodes */
    memset(ml->node_moment, 0, (size_t)ml->node_count * M * sizeof(float));
    for (uint32_t b = 0; b < sp->bone_count; ++b) {
        const uint32_t levels = ssk_spring_ml_levels(ml, b);
        for (int32_t l = (int32_t)levels - 2; l >= 0; --l) {
            const float *fine = loc + (size_t)ssk_spring_ml_loc(ml, b, (uint32_t)l + 1) * M;
            float *coarse = loc + (size_t)ssk_spring_ml_loc(ml, b, (uint32_t)l) * M;
            const uint32_t kn = 1u << l, fn = 2 * kn;
            for (uint32_t k = 0; k <= kn; ++k)
                for (int c = 0; c < M; ++c) {
                    float x = fine[(size_t)(2 * k) * M + c];
                    if (k > 0) x += 0.5f * fine[(size_t)(2 * k - 1) * M + c];
                    if (2 * k + 1 <= fn) x += 0.5f * fine[(size_t)(2 * k + 1) * M + c];
                    coarse[(size_t)k * M + c] = x;
                }
        }
        for (uint32_t l = 0; l < levels; ++l) {
            const float *m = loc + (size_t)ssk_spring_ml_loc(ml, b, l) * M;
            for (uint32_t k = 0; k <= (1u << l); ++k) {
                float *g = ml->node_moment + (size_t)global_node(ml, b, l, k) * M;
                for (int c = 0; c < M; ++c) g[c] += m[(size_t)k * M + c];
            }
        }
    }
    /* per node: r = (F^T sum f, the generators' sums of (F^T f)(F^T s~ - c)
     * over u, v), delta = theta K^-1 r, map = (translation, 3 by 3) with
     * the center folded into the translation, written over the moments */
    uint8_t kidx[U][U]; /* K's entries in its upper triangle */
    for (uint32_t a = 0; a < U; ++a)
        for (uint32_t c = 0; c < U; ++c) kidx[a][c] = (uint8_t)ssk_spring_ml_kinv_index(a, c);
    for (uint32_t n = 0; n < ml->node_count; ++n) {
        const float *F = ml->node_frame + 9 * (size_t)n, *g = ml->node_moment + (size_t)n * M;
        const float *cn = ml->node_center + 2 * (size_t)n;
        float r[U], d[U], P[3][2], MF[9];
        for (int a = 0; a < 3; ++a) r[a] = F[a] * g[0] + F[3 + a] * g[1] + F[6 + a] * g[2];
        /* moment matrix Mw[c][e] = g[3 + 3c + e]; P = F^T Mw F (u, v columns) - (F^T sum f) c^T */
        for (int c = 0; c < 3; ++c)
            for (int b = 0; b < 2; ++b)
                MF[3 * c + b] = g[3 + 3 * c] * F[b] + g[4 + 3 * c] * F[3 + b] + g[5 + 3 * c] * F[6 + b];
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 2; ++b)
                P[a][b] = F[a] * MF[b] + F[3 + a] * MF[3 + b] + F[6 + a] * MF[6 + b] - r[a] * cn[b];
        for (int j = 3; j < U; ++j) {
            float x = 0.0f;
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 2; ++b) x += generators[j - 3][a][b] * P[a][b];
            r[j] = x;
        }
        const float *K = ml->kinv + (size_t)n * SSK_SPRING_ML_KINV_FLOATS;
        for (int a = 0; a < U; ++a) {
            float x = 0.0f;
            for (int c = 0; c < U; ++c) x += K[kidx[a][c]] * r[c];
            d[a] = ml->theta * ml->scale * x;
        }
        /* trust region: a node moves at most SSK_SPRING_ML_TRUST times its
         * radius per pass (the probed curvatures are the rest pose's: far
         * from it, as in a first stage's folds, a small one would send a
         * slab away) */
        float d2 = 0.0f;
        for (int a = 0; a < U; ++a) d2 += d[a] * d[a];
        const float cap = SSK_SPRING_ML_TRUST * ml->node_radius[n];
        if (d2 > cap * cap) {
            const float f = cap / sqrtf(d2);
            for (int a = 0; a < U; ++a) d[a] *= f;
        }
        /* L = sum_j d_j G_j (3 by 2, node basis); displacement
         * F (t + L (F^T s~ - c)_uv) = F (t - L c) + (F L F_uv^T) s~ */
        float L[3][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}};
        for (int j = 3; j < U; ++j)
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 2; ++b) L[a][b] += d[j] * generators[j - 3][a][b];
        float t[3];
        for (int a = 0; a < 3; ++a) t[a] = d[a] - (L[a][0] * cn[0] + L[a][1] * cn[1]);
        float *map = ml->node_moment + (size_t)n * M; /* g is read no more */
        for (int c = 0; c < 3; ++c) map[c] = F[3 * c] * t[0] + F[3 * c + 1] * t[1] + F[3 * c + 2] * t[2];
        for (int c = 0; c < 3; ++c)
            for (int e = 0; e < 3; ++e) {
                float x = 0.0f;
                for (int a = 0; a < 3; ++a)
                    x += F[3 * c + a] * (L[a][0] * F[3 * e] + L[a][1] * F[3 * e + 1]);
                map[3 + 3 * c + e] = x;
            }
    }
    /* back onto each bone's finest level */
    for (uint32_t b = 0; b < sp->bone_count; ++b) {
        const uint32_t levels = ssk_spring_ml_levels(ml, b);
        for (uint32_t l = 0; l < levels; ++l) {
            float *m = loc + (size_t)ssk_spring_ml_loc(ml, b, l) * M;
            for (uint32_t k = 0; k <= (1u << l); ++k)
                memcpy(m + (size_t)k * M, ml->node_moment + (size_t)global_node(ml, b, l, k) * M,
                       M * sizeof(float));
        }
        for (uint32_t l = 0; l + 1 < levels; ++l) {
            const float *coarse = loc + (size_t)ssk_spring_ml_loc(ml, b, l) * M;
            float *fine = loc + (size_t)ssk_spring_ml_loc(ml, b, l + 1) * M;
            const uint32_t kn = 1u << l, fn = 2 * kn;
            for (uint32_t k = 0; k <= kn; ++k)
                for (int c = 0; c < M; ++c) {
                    const float x = coarse[(size_t)k * M + c];
                    fine[(size_t)(2 * k) * M + c] += x;
                    if (k > 0) fine[(size_t)(2 * k - 1) * M + c] += 0.5f * x;
                    if (2 * k + 1 <= fn) fine[(size_t)(2 * k + 1) * M + c] += 0.5f * x;
                }
        }
    }
    /* prolongation, blend, largest move */
    ssk_parallel_for(nv, SSK_PARALLEL_GRAIN, prolong_chunk, &v);
    float md = 0.0f;
    for (uint32_t c = 0; c < ml->chunk_count; ++c) {
        const float m = ml->chunk_max[c];
        md = !(m <= md) ? (m == m ? m : INFINITY) : md;
    }
    const int bad = !(md < INFINITY);
    return bad ? NAN : md;
}
