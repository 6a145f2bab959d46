/*
 * spring_rest.c — setting up the spring deformer (Toothman 2020, 4.2.3:
 * "an initialization step that involves recording edge lengths and scale
 * vector angles between adjacent vertices while the mesh is in bind pose";
 * 5.2: regions of interest of surface edits; 6.3: flattened CSR adjacency):
 * ssk_spring_params_default, ssk_spring_create, ssk_spring_destroy,
 * ssk_spring_roles, ssk_spring_bytes_per_vertex. The layout of what is
 * recorded is documented in spring.h; the solver is spring.c.
 *
 * Rest pose: the rest attachment bones are ssk_attach_prepare of identity
 * skinning matrices, a_i = p + t_i (c - p) on them, and v_i = a_i + s_i
 * (the rig-space rest position of the binding). Rest measures are taken
 * from the vertex records of these positions with spring.h's functions,
 * the same arithmetic as the solver's, so at rest every force is exactly 0.
 *
 * Stability (the header's check, explicit update v += dt F): a neighbor
 * force is the mean over the one ring (k(i, j) = k / deg(i), spring.c), a
 * Jacobi-preconditioned gradient whose curvature along the motion of one
 * vertex alone is at least k/3 (surface: the mean of e e^T has trace 1),
 * k (length) or k/3 (torsion), and gradient steps of size dt diverge when
 * dt times the largest curvature exceeds 2. So dt k c_f > 2 is certain to
 * diverge for those forces, and dt k > 2 for the per-vertex bone and edit
 * forces; dt k <= 1 is stable for one neighbor family alone; k
 * is the stiffness times the largest value of its map (for edits, the sum
 * over overlapping ROIs of stiffness times largest key weight). Passing the
 * check is necessary, not sufficient (the forces add up): the solver also
 * watches for divergence. The semi-implicit integrator is held to the
 * same bound.
 */
#include "kernels/spring.h"

#include "kernels/attach_math.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defaults of ssk_spring_params (header; 4.2.2 for dt, iterations and the
 * threshold). The stiffnesses are tuned on the 2-bone test limb
 * (tests/c/test_spring_quality.c, measured at equilibrium). Neighbor
 * forces are means over the one ring (spring.c), so on the limb's degree-6
 * vertices surface 6, length 18, torsion 18 act as 1, 3, 3 per edge:
 * surface 3, length 1, torsion 2, bone 1 (per edge) left the smallest
 * joint cross-section at 0.84 (90 degree bend) and 0.63 (135) of rest, the
 * outer side of the joint pulled in by the surface springs; these give
 * 0.96 and 0.91, and 0.96 / 1.04 for 90 / 180 degree twists. A weaker bone
 * spring lets the scale vectors fan out around the joint. dt k stays <= 0.6
 * for each neighbor family (stable alone up to 1, on any vertex degree). */
#define SSK_SPRING_DEFAULT_K_SURFACE 6.0f
#define SSK_SPRING_DEFAULT_K_LENGTH 18.0f
#define SSK_SPRING_DEFAULT_K_TORSION 18.0f
#define SSK_SPRING_DEFAULT_K_BONE 0.2f
#define SSK_SPRING_DEFAULT_K_EDIT 5.0f
#define SSK_SPRING_DEFAULT_K_DETAIL 200.0f
#define SSK_SPRING_DEFAULT_DT (1.0f / 30.0f)
#define SSK_SPRING_DEFAULT_DAMPING 0.1f
#define SSK_SPRING_DEFAULT_ITERATIONS 100u
#define SSK_SPRING_DEFAULT_CHEBYSHEV_RHO 0.99f
/* The blend of the multilevel solver's passes, better conditioned than the
 * plain ones. Passes to the threshold with rho 0 / 0.9 / 0.95 / 0.97 /
 * 0.99 after a warm-up of 10 plain passes (the one of the plain Chebyshev
 * solver): 8-bone limb of 100k vertices bent 135 degrees 43 / 30 / 25 / 25
 * / 37, of 10k twisted 180 degrees 84 / 48 / 40 / 65 / 62; all frames of
 * the Rigify body, the generated Rigify, the Mixamo-style body and
 * BCN_Epileptic.X (total, largest) with 0.95: 308 / 82, 243 / 39, 273 /
 * 58, 1840 / 49; 0.97: 283 / 72, 236 / 36, 259 / 49, 2010 / 46; 0.99: 287
 * / 58, 288 / 45, 260 / 41, 2080 / 39. With the multilevel warm-up
 * (SSK_SPRING_ML_CHEBYSHEV_WARMUP, 3), rho 0.93 / 0.95 / 0.96 / 0.97: the
 * 100k limb's animation / bend / twist 9 / 23 / 10, 9 / 20 / 11, 9 / 19 /
 * 11, 14 / 23 / 13; the 10k twist 37 / 32 / 34 / 36; BCN_Epileptic.X per
 * frame (mean, largest) 22.5 / 46, 22.2 / 44, 22.0 / 43, 21.7 / 41; the
 * Rigify body 26.9 / 75 with 0.95, 25.5 / 68 with 0.96. */
#define SSK_SPRING_DEFAULT_MULTILEVEL_RHO 0.96f
/* the solver picked for the backend (ssk_spring_params_resolve) */
#define SSK_SPRING_DEFAULT_MULTILEVEL SSK_SPRING_SOLVER_AUTO

static const char *const force_symbol[SSK_FORCE_COUNT] = {"k_s", "k_l", "k_t", "k_b",
                                                          "k_e", "k_d", "k_a"};
static const char *const force_name[SSK_FORCE_COUNT] = {"surface", "length", "torsion", "bone",
                                                        "edit",    "detail", "twist"};

void ssk_spring_params_default(ssk_spring_params *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->stiffness[SSK_FORCE_SURFACE] = SSK_SPRING_DEFAULT_K_SURFACE;
    out->stiffness[SSK_FORCE_LENGTH] = SSK_SPRING_DEFAULT_K_LENGTH;
    out->stiffness[SSK_FORCE_TORSION] = SSK_SPRING_DEFAULT_K_TORSION;
    out->stiffness[SSK_FORCE_BONE] = SSK_SPRING_DEFAULT_K_BONE;
    out->stiffness[SSK_FORCE_EDIT] = SSK_SPRING_DEFAULT_K_EDIT;
    out->stiffness[SSK_FORCE_DETAIL] = SSK_SPRING_DEFAULT_K_DETAIL;
    out->dt = SSK_SPRING_DEFAULT_DT;
    out->integrator = SSK_SPRING_EXPLICIT;
    out->damping = SSK_SPRING_DEFAULT_DAMPING;
    out->max_iterations = SSK_SPRING_DEFAULT_ITERATIONS;
    out->chebyshev_rho = SSK_SPRING_DEFAULT_MULTILEVEL_RHO;
    out->multilevel = SSK_SPRING_DEFAULT_MULTILEVEL;
    out->convergence = SSK_CONVERGE_RELATIVE;
    out->threshold = 0.0f;
    out->mode = SSK_SPRING_FRAME_INDEPENDENT;
}

void ssk_spring_params_resolve(ssk_spring_params *p, ssk_backend backend)
{
    if (!p || p->multilevel != SSK_SPRING_SOLVER_AUTO) return;
    if (p->integrator != SSK_SPRING_EXPLICIT || p->convergence == SSK_CONVERGE_ENERGY) {
        /* neither coarse correction nor the blend applies: the plain update */
        p->multilevel = SSK_SPRING_MULTILEVEL_NONE;
        p->chebyshev_rho = 0.0f;
    } else {
        /* the surface multigrid on both backends (on GL its force passes
         * run on the device, the correction on the host: gl_backend.c "The
         * multigrid"). The corrected passes overshoot a few modes where a
         * pose leaves the rest linearization (spring_multigrid.c); a blend
         * tuned for a spectrum in [-rho, rho] amplifies them */
        (void)backend;
        p->multilevel = SSK_SPRING_MULTIGRID;
        p->chebyshev_rho = 0.0f;
    }
}

/* calloc that counts what the spring owns. */
static void *spring_alloc(ssk_spring *sp, size_t count, size_t size)
{
    if (count == 0) count = 1; /* a valid pointer even for empty arrays */
    void *p = calloc(count, size);
    if (p) sp->bytes += count * size;
    return p;
}

void ssk_spring_destroy(ssk_spring *sp)
{
    if (!sp) return;
    free(sp->offsets);
    free(sp->edges);
    free(sp->rest_bone_angle);
    free(sp->rest_scale_length);
    free(sp->bones);
    free(sp->t);
    free(sp->roles);
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) free(sp->maps[f]);
    free(sp->roi_stiffness);
    free(sp->roi_key_first);
    free(sp->roi_key_count);
    free(sp->roi_keys);
    free(sp->roi_member_first);
    free(sp->roi_member_count);
    free(sp->roi_member_vertex);
    free(sp->roi_member_role);
    free(sp->frame_roles);
    free(sp->edit_vertex);
    free(sp->edit_roi);
    free(sp->edit_vector);
    free(sp->edit_unique);
    free(sp->edit_target);
    for (int k = 0; k < 3; ++k) free(sp->pos[k]);
    free(sp->good);
    free(sp->rec);
    free(sp->velocity);
    free(sp->prev_output);
    free(sp->prev_skinning);
    free(sp->bone_inv);
    free(sp->anchor);
    free(sp->scale_defined);
    free(sp->vertex_dir);
    free(sp->rest_segment);
    free(sp->bone_slot);
    free(sp->detail);
    free(sp->chunk_results);
    ssk_spring_ml_destroy(sp->ml);
    ssk_spring_mg_destroy(sp->mg);
    free(sp->cluster_words);
    free(sp);
}

const uint8_t *ssk_spring_roles(const ssk_spring *sp) { return sp ? sp->roles : NULL; }

size_t ssk_spring_bytes_per_vertex(const ssk_spring *sp)
{
    if (!sp || sp->vertex_count == 0) return 0;
    return (sp->bytes + sp->vertex_count - 1) / sp->vertex_count;
}

static ssk_status check_params(const ssk_spring_params *p, ssk_error *err)
{
    for (int f = 0; f < SSK_FORCE_COUNT; ++f)
        if (!(isfinite(p->stiffness[f]) && p->stiffness[f] >= 0.0f))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "spring parameters: %s stiffness %s = %g must be finite and >= 0",
                                 force_name[f], force_symbol[f], (double)p->stiffness[f]);
    if (!(isfinite(p->dt) && p->dt > 0.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: dt = %g must be finite and > 0", (double)p->dt);
    if ((unsigned)p->attachment >= SSK_ATTACHMENT_MODE_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: attachment %d out of range", (int)p->attachment);
    if ((unsigned)p->integrator >= SSK_SPRING_INTEGRATOR_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: integrator %d out of range", (int)p->integrator);
    if (!(isfinite(p->damping) && p->damping >= 0.0f && p->damping < 1.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: damping = %g must be in [0, 1)",
                             (double)p->damping);
    if (p->max_iterations < 1 || p->max_iterations > SSK_SPRING_MAX_ITERATIONS)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: max_iterations = %u must be in [1, %u]",
                             p->max_iterations, SSK_SPRING_MAX_ITERATIONS);
    if ((unsigned)p->convergence >= SSK_CONVERGE_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: convergence scheme %d out of range",
                             (int)p->convergence);
    if (!isfinite(p->threshold))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: threshold is not finite");
    if ((unsigned)p->mode >= SSK_SPRING_MODE_COUNT)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: mode %d out of range", (int)p->mode);
    if (!(isfinite(p->chebyshev_rho) && p->chebyshev_rho >= 0.0f && p->chebyshev_rho < 1.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: chebyshev_rho = %g must be in [0, 1)",
                             (double)p->chebyshev_rho);
    /* "auto" clears the blend where it does not apply (ssk_spring_params_resolve) */
    const bool automatic = p->multilevel == SSK_SPRING_SOLVER_AUTO;
    if (p->chebyshev_rho > 0.0f && p->integrator != SSK_SPRING_EXPLICIT && !automatic)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: chebyshev_rho = %g needs the explicit "
                             "integrator (the semi-implicit one has its own momentum): set "
                             "chebyshev_rho = 0, the plain update (the default is 0.99)",
                             (double)p->chebyshev_rho);
    if (p->chebyshev_rho > 0.0f && p->convergence == SSK_CONVERGE_ENERGY && !automatic)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: chebyshev_rho = %g cannot be used with the "
                             "energy convergence scheme (an accelerated iteration's energy is "
                             "not monotone): set chebyshev_rho = 0, the plain update (the "
                             "default is 0.99)",
                             (double)p->chebyshev_rho);
    if (p->multilevel > SSK_SPRING_SOLVER_AUTO)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: multilevel = %u must be 0, 1 (the per-bone "
                             "levels), 2 (the surface multigrid) or 3 (auto)",
                             p->multilevel);
    if (p->multilevel && p->integrator != SSK_SPRING_EXPLICIT && !automatic)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: multilevel = 1 needs the explicit integrator "
                             "(the semi-implicit one has its own momentum): set multilevel = 0 "
                             "and chebyshev_rho = 0, the plain update");
    if (p->multilevel && p->convergence == SSK_CONVERGE_ENERGY && !automatic)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "spring parameters: multilevel = 1 cannot be used with the energy "
                             "convergence scheme (a corrected iteration's energy is not "
                             "monotone): set multilevel = 0 and chebyshev_rho = 0, the plain "
                             "update");
    return SSK_OK;
}

static ssk_status check_edit(const ssk_spring_edit *e, uint32_t index, uint32_t nv,
                             ssk_error *err)
{
    if (e->kinematic_count > 0 && !e->kinematic)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "surface edit %u: %u kinematic vertices but a NULL list", index,
                             e->kinematic_count);
    for (uint32_t k = 0; k < e->kinematic_count; ++k) {
        if (e->kinematic[k] >= nv)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "surface edit %u: kinematic vertex %u (entry %u) is out of "
                                 "range (the rig has %u vertices)",
                                 index, e->kinematic[k], k, nv);
        if (e->offsets && !ssk_floats_finite(e->offsets + 3 * (size_t)k, 3))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "surface edit %u: offset of entry %u is not finite", index, k);
    }
    if (!e->offsets && !isfinite(e->push))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "surface edit %u: push is not finite", index);
    if (!(isfinite(e->stiffness) && e->stiffness >= 0.0f))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "surface edit %u: stiffness = %g must be finite and >= 0", index,
                             (double)e->stiffness);
    if (e->key_count > 0 && !e->keys)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "surface edit %u: %u keys but a NULL key array", index, e->key_count);
    for (uint32_t k = 0; k < e->key_count; ++k) {
        const float f = e->keys[2 * k], w = e->keys[2 * k + 1];
        if (!isfinite(f) || !(isfinite(w) && w >= 0.0f))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "surface edit %u: key %u (%g, %g) must have a finite frame and "
                                 "a finite weight >= 0",
                                 index, k, (double)f, (double)w);
        if (k > 0 && !(f > e->keys[2 * (k - 1)]))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "surface edit %u: key frames must increase (key %u at %g after "
                                 "%g)",
                                 index, k, (double)f, (double)e->keys[2 * (k - 1)]);
    }
    return SSK_OK;
}

static void set_role(uint8_t *roles, uint32_t v, uint8_t role)
{
    if (ssk_spring_role_rank(role) > ssk_spring_role_rank(roles[v])) roles[v] = role;
}

/* Regions of interest (5.2): multi-source breadth-first search over the
 * welded mesh edges (the springs' adjacency) from each edit's kinematic
 * set (ssk_weld_rings, shared with the strokes' regions of
 * ssk_rig_surface_roi); rings 1..grow passive, ring grow + 1 static.
 * Records each region's members and their roles (roi_member_*), and merges
 * them into `roles`. dist and queue are #V scratch, dist all UINT32_MAX on
 * entry and on return. */
static ssk_status build_regions(ssk_spring *sp, const ssk_weld *weld, const ssk_spring_edit *edits,
                                uint32_t edit_count, uint32_t *dist, uint32_t *queue,
                                ssk_error *err)
{
    size_t capacity = 0, used = 0;
    for (uint32_t r = 0; r < edit_count; ++r) {
        const ssk_spring_edit *e = &edits[r];
        ssk_status st = SSK_OK;
        uint32_t duplicate;
        const uint32_t tail =
            ssk_weld_rings(weld, e->kinematic, e->kinematic_count, e->grow, dist, queue,
                           &duplicate);
        if (duplicate != UINT32_MAX)
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "surface edit %u: vertex %u is listed twice", r,
                               e->kinematic[duplicate]);
        if (st == SSK_OK && used + tail > capacity) {
            size_t cap = capacity ? 2 * capacity : 1024;
            while (cap < used + tail) cap *= 2;
            uint32_t *mv = realloc(sp->roi_member_vertex, cap * sizeof *mv);
            if (mv) sp->roi_member_vertex = mv;
            uint8_t *mr = realloc(sp->roi_member_role, cap * sizeof *mr);
            if (mr) sp->roi_member_role = mr;
            if (!mv || !mr)
                st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
            else
                capacity = cap;
        }
        if (st == SSK_OK) {
            sp->roi_member_first[r] = (uint32_t)used;
            sp->roi_member_count[r] = tail;
            for (uint32_t k = 0; k < tail; ++k) {
                const uint32_t v = queue[k], d = dist[v];
                const uint8_t role = d == 0 ? SSK_ROLE_KINEMATIC
                                            : (d <= e->grow ? SSK_ROLE_PASSIVE : SSK_ROLE_STATIC);
                sp->roi_member_vertex[used + k] = v;
                sp->roi_member_role[used + k] = role;
                set_role(sp->roles, v, role);
            }
            used += tail;
        }
        for (uint32_t k = 0; k < tail; ++k) dist[queue[k]] = UINT32_MAX;
        if (st != SSK_OK) return st;
    }
    sp->bytes += capacity * (sizeof(uint32_t) + sizeof(uint8_t));
    return SSK_OK;
}

/* Short-edge clusters (spring.c "Short-edge clusters"): union-find over
 * the edges shorter than SSK_SPRING_CLUSTER_FRACTION of their vertex's
 * mean rest edge length, then sp->cluster_words (spring.h). */
static uint32_t cluster_root(uint32_t *parent, uint32_t v)
{
    while (parent[v] != v) {
        parent[v] = parent[parent[v]];
        v = parent[v];
    }
    return v;
}

static ssk_status build_clusters(ssk_spring *sp, ssk_error *err)
{
    const uint32_t nv = sp->vertex_count;
    uint32_t *parent = malloc(((size_t)nv + 1) * sizeof *parent);
    uint32_t *size = calloc((size_t)nv + 1, sizeof *size);
    if (!parent || !size) {
        free(parent);
        free(size);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; i < nv; ++i) parent[i] = i;
    for (uint32_t i = 0; i < nv; ++i) {
        const uint32_t first = sp->offsets[i], end = sp->offsets[i + 1];
        if (end == first) continue;
        double sum = 0.0;
        for (uint32_t e = first; e < end; ++e) sum += sp->edges[e].rest_length;
        const float limit = SSK_SPRING_CLUSTER_FRACTION * (float)(sum / (double)(end - first));
        for (uint32_t e = first; e < end; ++e) {
            if (!(sp->edges[e].rest_length < limit)) continue;
            const uint32_t a = cluster_root(parent, i);
            const uint32_t b = cluster_root(parent, sp->edges[e].neighbor);
            if (a != b) parent[a > b ? a : b] = a < b ? a : b; /* the smaller row is the root */
        }
    }
    /* member counts per root, then the words: the roots' blocks in root
     * order */
    uint64_t words = 0;
    uint32_t clusters = 0;
    for (uint32_t i = 0; i < nv; ++i) ++size[cluster_root(parent, i)];
    for (uint32_t i = 0; i < nv; ++i)
        if (parent[i] == i && size[i] > 1) {
            words += 1 + (uint64_t)size[i];
            ++clusters;
        }
    if (words > UINT32_MAX) {
        free(parent);
        free(size);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "spring: too many vertices");
    }
    sp->cluster_words = spring_alloc(sp, (size_t)words, sizeof(uint32_t));
    if (!sp->cluster_words) {
        free(parent);
        free(size);
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    uint32_t *w = sp->cluster_words, next = 0;
    /* size[root] becomes the root's block index (roots come first in their
     * cluster: the smallest row) */
    for (uint32_t i = 0; i < nv; ++i) parent[i] = cluster_root(parent, i);
    for (uint32_t i = 0; i < nv; ++i) {
        const uint32_t r = parent[i];
        if (size[r] <= 1 && r == i) continue;
        if (r == i) {
            const uint32_t n = size[i];
            w[next] = 0; /* filled as members arrive */
            size[i] = next;
            next += 1 + n;
        }
        const uint32_t block = size[r];
        w[block + 1 + w[block]++] = i;
    }
    sp->cluster_word_count = (uint32_t)words;
    sp->cluster_count = clusters;
    free(parent);
    free(size);
    return SSK_OK;
}

/* Largest value of a map (1 without one). */
static float map_max(const float *map, uint32_t nv)
{
    if (!map) return 1.0f;
    float m = 0.0f;
    for (uint32_t i = 0; i < nv; ++i) m = map[i] > m ? map[i] : m;
    return m;
}

static ssk_status check_stability(const ssk_spring *sp, const ssk_spring_edit *edits,
                                  uint32_t edit_count, ssk_error *err)
{
    const ssk_spring_params *p = &sp->params;
    const float dt = p->dt;
    const char *integrator = p->integrator == SSK_SPRING_EXPLICIT ? "explicit" : "semi-implicit";
    /* Neighbor forces are means over the one ring (k(i, j) = k / deg(i)):
     * moving one vertex alone already has curvature at least k times
     * SSK_SPRING_MIN_CURVATURE[f] (the trace argument in spring.h), so
     * dt k c_f > 2 is certain to diverge; dt k <= 1 is stable for one
     * family alone (the mean's Laplacian has eigenvalues <= 2). */
    static const ssk_spring_force neighbor_forces[3] = {SSK_FORCE_SURFACE, SSK_FORCE_LENGTH,
                                                         SSK_FORCE_TORSION};
    static const double curvature[3] = {SSK_SPRING_MIN_CURVATURE_SURFACE,
                                        SSK_SPRING_MIN_CURVATURE_LENGTH,
                                        SSK_SPRING_MIN_CURVATURE_TORSION};
    for (int n = 0; n < 3; ++n) {
        const ssk_spring_force f = neighbor_forces[n];
        const float mmax = map_max(sp->maps[f], sp->vertex_count);
        const double k = (double)p->stiffness[f] * mmax;
        if (dt * k * curvature[n] > SSK_SPRING_STABILITY_BOUND) {
            const double safe = 1.0 / dt / (mmax > 0 ? mmax : 1);
            return ssk_error_set(err, SSK_ERROR_SPRING_UNSTABLE,
                                 "%s = %g%s with dt = %.4g is beyond the %s stability limit "
                                 "(dt*k*%g <= 2; it is certain to diverge): stable for "
                                 "dt*k <= 1, use %s <= %.3g (or a smaller dt)",
                                 force_symbol[f], (double)p->stiffness[f],
                                 sp->maps[f] ? " (times its map, up to that value's maximum)" : "",
                                 (double)dt, integrator, curvature[n], force_symbol[f], safe);
        }
    }
    static const ssk_spring_force vertex_forces[2] = {SSK_FORCE_BONE, SSK_FORCE_TWIST};
    for (int n = 0; n < 2; ++n) {
        const ssk_spring_force f = vertex_forces[n];
        const float mmax = map_max(sp->maps[f], sp->vertex_count);
        const double k = (double)p->stiffness[f] * mmax;
        if (dt * k > SSK_SPRING_STABILITY_BOUND)
            return ssk_error_set(err, SSK_ERROR_SPRING_UNSTABLE,
                                 "%s = %g with dt = %.4g is beyond the %s stability limit "
                                 "dt*k <= 2 of a per-vertex force: use %s <= %.3g (or a "
                                 "smaller dt)",
                                 force_symbol[f], (double)p->stiffness[f], (double)dt,
                                 integrator, force_symbol[f],
                                 SSK_SPRING_STABILITY_BOUND / dt / (mmax > 0 ? mmax : 1));
    }
    /* Edits: per kinematic vertex, the sum over its ROIs of stiffness x
     * largest key weight, times k_e and the map. */
    if (edit_count == 0) return SSK_OK;
    double *total = calloc(sp->vertex_count, sizeof *total);
    if (!total) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    double worst = 0.0;
    uint32_t worst_vertex = 0;
    for (uint32_t r = 0; r < edit_count; ++r) {
        double wmax = edits[r].key_count ? 0.0 : 1.0;
        for (uint32_t k = 0; k < edits[r].key_count; ++k)
            wmax = edits[r].keys[2 * k + 1] > wmax ? edits[r].keys[2 * k + 1] : wmax;
        for (uint32_t k = 0; k < edits[r].kinematic_count; ++k) {
            const uint32_t v = edits[r].kinematic[k];
            const float *map = sp->maps[SSK_FORCE_EDIT];
            total[v] += (double)p->stiffness[SSK_FORCE_EDIT] * edits[r].stiffness * wmax *
                        (map ? map[v] : 1.0f);
            if (total[v] > worst) {
                worst = total[v];
                worst_vertex = v;
            }
        }
    }
    free(total);
    if (dt * worst > SSK_SPRING_STABILITY_BOUND)
        return ssk_error_set(err, SSK_ERROR_SPRING_UNSTABLE,
                             "surface edits: k_e = %g times the ROI stiffness (and key weight) "
                             "gives %g at vertex %u, with dt = %.4g beyond the %s stability "
                             "limit dt*k <= 2 of a per-vertex force: keep k_e x stiffness x "
                             "weight <= %.3g (summed over overlapping edits)",
                             (double)p->stiffness[SSK_FORCE_EDIT], worst, worst_vertex,
                             (double)dt, integrator, SSK_SPRING_STABILITY_BOUND / dt);
    return SSK_OK;
}

ssk_status ssk_spring_create(ssk_spring **out, const ssk_rig *rig, const ssk_binding *binding,
                             const ssk_spring_params *params, const ssk_spring_edit *edits,
                             uint32_t edit_count, ssk_error *err)
{
    if (out) *out = NULL;
    if (!out || !rig || !binding || !params || (edit_count > 0 && !edits))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_spring_create: NULL argument");
    ssk_binding_view bv;
    ssk_status st = ssk_binding_get(binding, &bv, err);
    if (st != SSK_OK) return st;
    const uint32_t nv = rig->vertex_count, nb = rig->bone_count;
    if (bv.vertex_count != nv || bv.bone_count != nb || bv.rig_hash != ssk_rig_hash(rig))
        return ssk_error_set(err, SSK_ERROR_BINDING_MISMATCH,
                             "spring: the binding (%u vertices, %u bones) was not made for this "
                             "rig (%u vertices, %u bones)",
                             bv.vertex_count, bv.bone_count, nv, nb);
    /* the fields as given, then the solver "auto" stands for (which may
     * clear chebyshev_rho) */
    if ((st = check_params(params, err)) != SSK_OK) return st;
    ssk_spring_params resolved = *params;
    /* surface edits: the per-bone levels (the multigrid's rest model leaves
     * the handles' rows out, and on a sheet pulled by handles it stalls
     * far from the equilibrium with moves at the rounding: issue #36) */
    if (resolved.multilevel == SSK_SPRING_SOLVER_AUTO && edit_count > 0 &&
        resolved.integrator == SSK_SPRING_EXPLICIT && resolved.convergence != SSK_CONVERGE_ENERGY)
        resolved.multilevel = SSK_SPRING_MULTILEVEL_BONES;
    ssk_spring_params_resolve(&resolved, SSK_BACKEND_CPU);
    params = &resolved;
    for (int f = 0; f < SSK_FORCE_COUNT; ++f) {
        const float *map = params->stiffness_maps[f];
        if (!map) continue;
        for (uint32_t i = 0; i < nv; ++i)
            if (!(isfinite(map[i]) && map[i] >= 0.0f))
                return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                     "spring parameters: %s stiffness map value %g at vertex %u "
                                     "must be finite and >= 0",
                                     force_name[f], (double)map[i], i);
    }
    for (uint32_t r = 0; r < edit_count; ++r)
        if ((st = check_edit(&edits[r], r, nv, err)) != SSK_OK) return st;

    ssk_spring *sp = calloc(1, sizeof *sp);
    if (!sp) return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
    sp->vertex_count = nv;
    sp->bone_count = nb;
    sp->params = *params;
    uint32_t *dist = NULL, *queue = NULL;
    float *identity = NULL;
    ssk_attach_bone *rest_bones = NULL;

    /* CSR over the whole rig: the welded adjacency (weld.c), so a UV seam
     * or a border shared by two meshes is no open boundary for the springs. */
    const ssk_weld *weld = &rig->weld;
    uint32_t ne = weld->adjacency_offsets[nv];
    sp->edge_count = ne;
    sp->offsets = spring_alloc(sp, (size_t)nv + 1, sizeof(uint32_t));
    /* padded by the largest degree: the solver's lanes read past the end
     * of the last rows (masked) */
    uint32_t max_deg = 0;
    for (uint32_t v = 0; v < nv; ++v) {
        const uint32_t d = weld->adjacency_offsets[v + 1] - weld->adjacency_offsets[v];
        max_deg = d > max_deg ? d : max_deg;
    }
    sp->edges = spring_alloc(sp, (size_t)ne + max_deg, sizeof(ssk_spring_edge));
    sp->rest_bone_angle = spring_alloc(sp, nv, sizeof(float));
    sp->rest_scale_length = spring_alloc(sp, nv, sizeof(float));
    sp->bones = spring_alloc(sp, nv, sizeof(int32_t));
    sp->t = spring_alloc(sp, nv, sizeof(float));
    sp->roles = spring_alloc(sp, nv, sizeof(uint8_t));
    for (int k = 0; k < 3; ++k) sp->pos[k] = spring_alloc(sp, 3 * (size_t)nv, sizeof(float));
    sp->good = spring_alloc(sp, 3 * (size_t)nv, sizeof(float));
    sp->rec = spring_alloc(sp, 8 * (size_t)nv, sizeof(float));
    sp->anchor = spring_alloc(sp, 4 * (size_t)nv, sizeof(float));
    sp->vertex_dir = spring_alloc(sp, 4 * (size_t)nv, sizeof(float));
    sp->scale_defined = spring_alloc(sp, nv, sizeof(uint8_t));
    sp->detail = spring_alloc(sp, 4 * (size_t)nv, sizeof(float));
    sp->chunk_results =
        spring_alloc(sp, (size_t)ssk_parallel_chunk_count(nv, SSK_PARALLEL_GRAIN) + 1,
                     sizeof(ssk_spring_pass));
    /* Anchors from the skin weights (spring.c "Anchors") when asked and
     * the rig has skin weights; else from the binding. */
    const bool per_weight =
        params->attachment == SSK_ATTACHMENT_WEIGHTS && ssk_rig_deforming_bone_count(rig) > 0;
    /* the slots of the bones that some vertex has (spring.h bone_slot) */
    sp->bone_slot = spring_alloc(sp, nb, sizeof(uint32_t));
    if (sp->bone_slot) {
        for (uint32_t i = 0; i < nv; ++i) sp->bone_slot[bv.bones[i]] = 1;
        for (uint32_t m = 0; per_weight && m < rig->mesh_count; ++m) {
            const ssk_mesh *mesh = &rig->meshes[m];
            const size_t n = (size_t)mesh->vertex_count * mesh->influence_count;
            for (size_t k = 0; k < n; ++k)
                if (mesh->weights[k] > 0.0f) sp->bone_slot[mesh->bone_indices[k]] = 1;
        }
        sp->slot_count = 1;
        for (uint32_t b = 0; b < nb; ++b)
            sp->bone_slot[b] = sp->bone_slot[b] ? sp->slot_count++ : 0;
    }
    if (per_weight) {
        sp->weights_rig = rig;
        sp->rest_segment = spring_alloc(sp, 8 * (size_t)sp->slot_count, sizeof(float));
    }
    if (params->integrator == SSK_SPRING_SEMI_IMPLICIT)
        sp->velocity = spring_alloc(sp, 3 * (size_t)nv, sizeof(float));
    if (params->mode == SSK_SPRING_FRAME_DEPENDENT) {
        sp->prev_output = spring_alloc(sp, 3 * (size_t)nv, sizeof(float));
        sp->prev_skinning = spring_alloc(sp, 16 * (size_t)nb, sizeof(float));
        sp->bone_inv = spring_alloc(sp, 16 * (size_t)nb, sizeof(float));
    }
    bool ok = sp->offsets && sp->edges && sp->rest_bone_angle && sp->rest_scale_length &&
              sp->bones && sp->t && sp->roles && sp->pos[0] && sp->pos[1] && sp->pos[2] &&
              sp->good && sp->rec && sp->anchor &&
              sp->scale_defined && sp->detail && sp->chunk_results &&
              sp->vertex_dir && sp->bone_slot && (!per_weight || sp->rest_segment) &&
              (params->integrator != SSK_SPRING_SEMI_IMPLICIT || sp->velocity) &&
              (params->mode != SSK_SPRING_FRAME_DEPENDENT ||
               (sp->prev_output && sp->prev_skinning && sp->bone_inv));
    for (int f = 0; f < SSK_FORCE_COUNT && ok; ++f) {
        sp->params.stiffness_maps[f] = NULL;
        if (!params->stiffness_maps[f]) continue;
        sp->maps[f] = spring_alloc(sp, nv, sizeof(float));
        if (!sp->maps[f]) ok = false;
        else {
            memcpy(sp->maps[f], params->stiffness_maps[f], (size_t)nv * sizeof(float));
            sp->params.stiffness_maps[f] = sp->maps[f];
        }
    }
    /* scratch, not kept */
    identity = malloc(((size_t)nb + 1) * 16 * sizeof(float));
    rest_bones = malloc(((size_t)nb + 1) * sizeof *rest_bones);
    if (!ok || !identity || !rest_bones) {
        st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    {
        uint32_t e = 0, D = 0;
        for (uint32_t v = 0; v < nv; ++v) {
            const uint32_t b = weld->adjacency_offsets[v], end = weld->adjacency_offsets[v + 1];
            sp->offsets[v] = e;
            if (end - b > D) D = end - b;
            for (uint32_t n = b; n < end; ++n) sp->edges[e++].neighbor = weld->adjacency[n];
        }
        sp->offsets[nv] = e;
        sp->max_degree = D;
        /* loose vertices (in no triangle: no spring reaches them) keep the
         * first stage, which follows their skin weights (issue #37) */
        for (uint32_t v = 0; v < nv; ++v)
            if (sp->offsets[v + 1] == sp->offsets[v]) set_role(sp->roles, v, SSK_ROLE_STATIC);
    }

    /* Rest pose: the rest bones (identity skinning); rest positions and
     * anchors below. */
    for (uint32_t b = 0; b < nb; ++b) ssk_mat4_identity(identity + 16 * (size_t)b);
    if (nb > 0 && (st = ssk_attach_prepare(rest_bones, rig, identity, NULL, err)) != SSK_OK)
        goto fail;
    float *rest_pos = sp->pos[0]; /* scratch until the first solve */
    for (uint32_t i = 0; i < nv; ++i) {
        sp->bones[i] = bv.bones[i];
        sp->t[i] = bv.t[i];
    }
    if (per_weight) {
        /* the rig's rest positions; the rest bones of the anchors */
        for (uint32_t b = 0; b < nb; ++b) {
            float *seg = sp->rest_segment + 8 * (size_t)sp->bone_slot[b];
            if (seg == sp->rest_segment) continue; /* slot 0 stays 0 */
            memcpy(seg, rest_bones[b].head, 4 * sizeof(float));
            memcpy(seg + 4, rest_bones[b].tail, 4 * sizeof(float));
        }
        for (uint32_t m = 0; m < rig->mesh_count; ++m) {
            const ssk_mesh *mesh = &rig->meshes[m];
            const size_t v0 = mesh->first_vertex;
            for (uint32_t v = 0; v < mesh->vertex_count; ++v)
                ssk_mat4_transform_point(rest_pos + 3 * (v0 + v), mesh->object_matrix,
                                         mesh->positions + 3 * (size_t)v);
        }
    } else {
        /* the binding's v = a + s on the rest bones */
        for (uint32_t i = 0; i < nv; ++i) {
            float a[3];
            ssk_am_attachment(a, &rest_bones[bv.bones[i]], bv.t[i]);
            for (int k = 0; k < 3; ++k)
                rest_pos[3 * (size_t)i + k] = a[k] + bv.scale_vectors[3 * (size_t)i + k];
        }
    }
    float lo[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, hi[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
    for (uint32_t i = 0; i < nv; ++i)
        for (int k = 0; k < 3; ++k) {
            const float x = rest_pos[3 * (size_t)i + k];
            lo[k] = x < lo[k] ? x : lo[k];
            hi[k] = x > hi[k] ? x : hi[k];
        }
    {
        double diag2 = 0.0;
        float smallest = FLT_MAX, largest = 0.0f;
        for (int k = 0; k < 3; ++k) {
            const float side = hi[k] - lo[k];
            diag2 += (double)side * side;
            if (side > 0.0f && side < smallest) smallest = side;
            if (side > largest) largest = side;
        }
        /* A flat rig (a side of 0) uses its smallest non-zero side; a
         * single point, 1 model unit. */
        sp->aabb_min = largest > 0.0f ? smallest : 1.0f;
        sp->length_epsilon = SSK_SPRING_LENGTH_EPSILON * (float)sqrt(diag2);
        sp->threshold = params->threshold > 0.0f
                            ? params->threshold
                            : sp->aabb_min * SSK_SPRING_THRESHOLD_FRACTION;

    }
    /* Which rest scale vectors have a direction (spring.h `anchor`), then
     * the rest records with the flags. */
    memset(sp->scale_defined, 1, nv);
    ssk_spring_anchors(sp, rest_bones);
    for (uint32_t i = 0; i < nv; ++i) {
        const float *a = sp->anchor + 4 * (size_t)i, *x = rest_pos + 3 * (size_t)i;
        const float d[3] = {x[0] - a[0], x[1] - a[1], x[2] - a[2]};
        sp->scale_defined[i] = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) > sp->length_epsilon;
    }
    ssk_spring_anchors(sp, rest_bones);
    for (uint32_t i = 0; i < nv; ++i)
        ssk_spring_record(sp->rec + 8 * (size_t)i, rest_pos + 3 * (size_t)i,
                          sp->anchor + 4 * (size_t)i, sp->length_epsilon);
    for (uint32_t i = 0; i < nv; ++i) {
        const float *ri = sp->rec + 8 * (size_t)i;
        sp->rest_scale_length[i] = ri[3];
        sp->rest_bone_angle[i] = ssk_spring_angle(ri + 4, sp->vertex_dir + 4 * (size_t)i);
        for (uint32_t e = sp->offsets[i]; e < sp->offsets[i + 1]; ++e) {
            ssk_spring_edge *edge = &sp->edges[e];
            const float *rj = sp->rec + 8 * (size_t)edge->neighbor;
            edge->rest_length = ssk_spring_edge_length(ri, rj);
            edge->rest_length_diff = ri[3] - rj[3];
            edge->rest_angle = ssk_spring_angle(ri + 4, rj + 4);
        }
    }
    if ((st = build_clusters(sp, err)) != SSK_OK) goto fail;
    if (params->convergence == SSK_CONVERGE_RELATIVE) {
        /* a fraction of the mean rest edge length (directed edges: each
         * undirected one twice, the same mean) */
        double sum = 0.0;
        for (uint32_t e = 0; e < sp->edge_count; ++e) sum += sp->edges[e].rest_length;
        const float mean =
            sp->edge_count && sum > 0.0 ? (float)(sum / sp->edge_count) : sp->aabb_min;
        sp->threshold =
            (params->threshold > 0.0f ? params->threshold : SSK_SPRING_RELATIVE_TOLERANCE) * mean;
        /* rounding noise: ulps of the largest rest coordinate */
        float largest = 0.0f;
        for (size_t k = 0; k < 3 * (size_t)nv; ++k)
            largest = fabsf(rest_pos[k]) > largest ? fabsf(rest_pos[k]) : largest;
        sp->negligible = SSK_SPRING_RELATIVE_NEGLIGIBLE_ULPS * FLT_EPSILON * largest;
    }

    /* Surface edits. */
    if (edit_count > 0) {
        uint32_t entries = 0, keys = 0;
        for (uint32_t r = 0; r < edit_count; ++r) {
            entries += edits[r].kinematic_count;
            keys += edits[r].key_count;
        }
        sp->roi_count = edit_count;
        sp->edit_entry_count = entries;
        sp->roi_stiffness = spring_alloc(sp, edit_count, sizeof(float));
        sp->roi_key_first = spring_alloc(sp, edit_count, sizeof(uint32_t));
        sp->roi_key_count = spring_alloc(sp, edit_count, sizeof(uint32_t));
        sp->roi_member_first = spring_alloc(sp, edit_count, sizeof(uint32_t));
        sp->roi_member_count = spring_alloc(sp, edit_count, sizeof(uint32_t));
        sp->frame_roles = spring_alloc(sp, nv, sizeof(uint8_t));
        sp->roi_keys = spring_alloc(sp, 2 * (size_t)keys, sizeof(float));
        sp->edit_vertex = spring_alloc(sp, entries, sizeof(uint32_t));
        sp->edit_roi = spring_alloc(sp, entries, sizeof(uint32_t));
        sp->edit_vector = spring_alloc(sp, 3 * (size_t)entries, sizeof(float));
        sp->edit_target = spring_alloc(sp, 4 * (size_t)nv, sizeof(float));
        dist = malloc((size_t)nv * sizeof *dist);
        queue = malloc((size_t)nv * sizeof *queue);
        if (!sp->roi_stiffness || !sp->roi_key_first || !sp->roi_key_count || !sp->roi_keys ||
            !sp->roi_member_first || !sp->roi_member_count || !sp->frame_roles ||
            !sp->edit_vertex || !sp->edit_roi || !sp->edit_vector || !sp->edit_target || !dist ||
            !queue) {
            st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
            goto fail;
        }
        uint32_t n = 0, key = 0;
        for (uint32_t r = 0; r < edit_count; ++r) {
            const ssk_spring_edit *e = &edits[r];
            sp->roi_stiffness[r] = e->stiffness;
            sp->roi_key_first[r] = key;
            sp->roi_key_count[r] = e->key_count;
            if (e->key_count)
                memcpy(sp->roi_keys + 2 * (size_t)key, e->keys,
                       2 * (size_t)e->key_count * sizeof(float));
            key += e->key_count;
            for (uint32_t k = 0; k < e->kinematic_count; ++k, ++n) {
                const uint32_t v = e->kinematic[k];
                const float *s = bv.scale_vectors + 3 * (size_t)v;
                float off[3] = {0.0f, 0.0f, 0.0f};
                if (e->offsets) {
                    memcpy(off, e->offsets + 3 * (size_t)k, sizeof off);
                } else {
                    /* push along the bind scale vector; none when |s| ~ 0 */
                    const float l = sqrtf(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
                    if (l > sp->length_epsilon)
                        for (int c = 0; c < 3; ++c) off[c] = e->push * s[c] / l;
                }
                sp->edit_vertex[n] = v;
                sp->edit_roi[n] = r;
                for (int c = 0; c < 3; ++c) sp->edit_vector[3 * (size_t)n + c] = s[c] + off[c];
            }
        }
        for (uint32_t i = 0; i < nv; ++i) dist[i] = UINT32_MAX;
        if ((st = build_regions(sp, weld, edits, edit_count, dist, queue, err)) != SSK_OK)
            goto fail;
        uint32_t unique = 0;
        for (uint32_t i = 0; i < nv; ++i) unique += sp->roles[i] == SSK_ROLE_KINEMATIC;
        sp->edit_unique = spring_alloc(sp, unique, sizeof(uint32_t));
        if (!sp->edit_unique) {
            st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "out of memory");
            goto fail;
        }
        for (uint32_t i = 0; i < nv; ++i)
            if (sp->roles[i] == SSK_ROLE_KINEMATIC) sp->edit_unique[sp->edit_unique_count++] = i;
    }

    if ((st = check_stability(sp, edits, edit_count, err)) != SSK_OK) goto fail;
    /* the multilevel correction's curvatures, probed at rest (rest_pos is
     * still the rest positions: sp->pos[0] is scratch until the first
     * solve, and the probe keeps its own buffers) */
    if (params->multilevel == SSK_SPRING_MULTILEVEL_BONES &&
        (st = ssk_spring_multilevel_probe(sp, rest_pos, rest_bones, err)) != SSK_OK)
        goto fail;
    if (params->multilevel == SSK_SPRING_MULTIGRID &&
        (st = ssk_spring_multigrid_probe(sp, rest_pos, rest_bones, err)) != SSK_OK)
        goto fail;
    free(dist);
    free(queue);
    free(identity);
    free(rest_bones);
    *out = sp;
    return ssk_error_ok(err);
fail:
    free(dist);
    free(queue);
    free(identity);
    free(rest_bones);
    ssk_spring_destroy(sp);
    return st;
}
