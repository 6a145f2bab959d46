/*
 * bench_cor.c — skinning with optimized centers of rotation (Le & Hodgins
 * 2016): the precomputation of the centers of rotation on a generated
 * character-sized rig, on the CPU and on GL, and the per-frame cost of CoR
 * skinning against LBS on both backends.
 *
 * Precomputation rig ("star"): 10 limbs (tubes of 50 rings x 40 segments
 * plus two caps, radius 0.2-0.38, length 4-5.8), each a chain of 7 bones:
 * 20,020 vertices, 40,000 triangles, 70 bones (the paper's "man": 20,846
 * vertices, 41,616 triangles, 76 bones, 5.6 s on 8 cores). Skin weights
 * are smooth and blend over 60% of a bone around each joint, with the
 * joint planes tilted and waved around the limb so that no two vertices
 * share their weights (as painted or BBW weights): w_b = max(0, 1 - |u -
 * c_b| / 0.8)^2 normalized, u the vertex's coordinate along the chain in
 * bone lengths, shifted by 0.15 sin(a) + 0.05 cos(3a) at angle a around
 * the limb; c_b the bone centers. Timing: the whole ssk_cor_precompute
 * call (integration mesh, clusters, search; GL: the data, its upload, the
 * shader, the readback), median of --repeats runs (GL: the context is
 * made before timing).
 *
 * Runtime rig: the limb of bench/limb.h (a tube along +Y of 64 segments, 8
 * bones, about --vertices vertices) with 4 influence slots per vertex, the 4
 * nearest bones; their weights are hats of half-width 0.8 bone about the
 * bone centers (BENCH_LIMB_WEIGHTS_HAT), so one or two are non-zero (the
 * precomputation of this limb takes about a second; with bench_skinning's
 * weights, where all 4 are non-zero everywhere, it takes 20 s). The
 * per-frame cost of LBS and CoR does not depend on the weights' values:
 * every slot is blended. Its CoRs come from a binding made with
 * compute_cor before timing. The pose bends every joint and twists along
 * the chain (bench_limb_pose). ms/frame is the whole ssk_deformer_deform
 * call, warm, median.
 *
 * Usage: bench_cor [--vertices 100000] [--repeats N] [--backends cpu,gl]
 *                  [--skip-runtime] [--skip-precompute]
 */
#include "springskin.h"

#include "limb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STAR_LIMBS 10
#define STAR_BONES_PER_LIMB 7
#define STAR_RINGS 50
#define STAR_SEGMENTS 40
#define STAR_INFLUENCES 4
/* Half-width of a bone's weight hat, in bone lengths. */
#define STAR_HAT 0.8

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bench_compare_double);
    return v[n / 2];
}

/* The "star" precomputation rig (see the top of the file). */
static ssk_rig *make_star(void)
{
    const uint32_t per_limb = STAR_RINGS * STAR_SEGMENTS + 2;
    const uint32_t tri_per_limb = 2 * (STAR_RINGS - 1) * STAR_SEGMENTS + 2 * STAR_SEGMENTS;
    const uint32_t nv = STAR_LIMBS * per_limb, nf = STAR_LIMBS * tri_per_limb;
    const uint32_t nb = STAR_LIMBS * STAR_BONES_PER_LIMB;
    float *pos = malloc(3 * (size_t)nv * sizeof(float));
    int32_t *tri = malloc(3 * (size_t)nf * sizeof(int32_t));
    int32_t *idx = calloc((size_t)nv * STAR_INFLUENCES, sizeof(int32_t));
    float *w = calloc((size_t)nv * STAR_INFLUENCES, sizeof(float));
    int32_t *parents = malloc(nb * sizeof(int32_t));
    float *bind = malloc(16 * (size_t)nb * sizeof(float));
    float *heads = malloc(3 * (size_t)nb * sizeof(float));
    float *tails = malloc(3 * (size_t)nb * sizeof(float));
    if (!pos || !tri || !idx || !w || !parents || !bind || !heads || !tails) return NULL;
    uint32_t f = 0;
    for (uint32_t l = 0; l < STAR_LIMBS; ++l) {
        /* limb frame: axis d in the XZ plane tilted up, origin near 0 */
        const double az = 2 * BENCH_PI * l / STAR_LIMBS, el = 0.3 * sin(3.0 * l);
        const double d[3] = {cos(el) * cos(az), sin(el), cos(el) * sin(az)};
        double e1[3] = {-sin(az), 0, cos(az)}; /* perpendicular, horizontal */
        double e2[3] = {d[1] * e1[2] - d[2] * e1[1], d[2] * e1[0] - d[0] * e1[2],
                        d[0] * e1[1] - d[1] * e1[0]};
        const double length = 4.0 + 0.2 * l, radius = 0.2 + 0.02 * l;
        const double bl = length / STAR_BONES_PER_LIMB, base = 0.5;
        for (uint32_t b = 0; b < STAR_BONES_PER_LIMB; ++b) {
            const uint32_t bone = l * STAR_BONES_PER_LIMB + b;
            parents[bone] = b == 0 ? -1 : (int32_t)bone - 1;
            bench_identity(bind + 16 * bone);
            for (int k = 0; k < 3; ++k) {
                heads[3 * bone + k] = (float)(d[k] * (base + bl * b));
                tails[3 * bone + k] = (float)(d[k] * (base + bl * (b + 1)));
                bind[16 * bone + 4 * k + 3] = heads[3 * bone + k];
            }
        }
        const uint32_t v0 = l * per_limb;
        for (uint32_t r = 0; r < STAR_RINGS; ++r)
            for (uint32_t s = 0; s < STAR_SEGMENTS; ++s) {
                const double y = length * r / (STAR_RINGS - 1), a = 2 * BENCH_PI * s / STAR_SEGMENTS;
                const uint32_t v = v0 + r * STAR_SEGMENTS + s;
                for (int k = 0; k < 3; ++k)
                    pos[3 * v + k] = (float)(d[k] * (base + y) +
                                             radius * (cos(a) * e1[k] + sin(a) * e2[k]));
            }
        const uint32_t cap0 = v0 + STAR_RINGS * STAR_SEGMENTS, cap1 = cap0 + 1;
        for (int k = 0; k < 3; ++k) {
            pos[3 * cap0 + k] = (float)(d[k] * base);
            pos[3 * cap1 + k] = (float)(d[k] * (base + length));
        }
        for (uint32_t r = 0; r + 1 < STAR_RINGS; ++r)
            for (uint32_t s = 0; s < STAR_SEGMENTS; ++s) {
                const int32_t a = (int32_t)(v0 + r * STAR_SEGMENTS + s);
                const int32_t b = (int32_t)(v0 + r * STAR_SEGMENTS + (s + 1) % STAR_SEGMENTS);
                const int32_t c = a + STAR_SEGMENTS, e = b + STAR_SEGMENTS;
                int32_t *t = tri + 3 * f++;
                t[0] = a, t[1] = c, t[2] = b;
                t = tri + 3 * f++;
                t[0] = b, t[1] = c, t[2] = e;
            }
        for (uint32_t s = 0; s < STAR_SEGMENTS; ++s) {
            int32_t *t = tri + 3 * f++;
            t[0] = (int32_t)cap0, t[1] = (int32_t)(v0 + s),
            t[2] = (int32_t)(v0 + (s + 1) % STAR_SEGMENTS);
            const uint32_t top = v0 + (STAR_RINGS - 1) * STAR_SEGMENTS;
            t = tri + 3 * f++;
            t[0] = (int32_t)cap1, t[1] = (int32_t)(top + (s + 1) % STAR_SEGMENTS),
            t[2] = (int32_t)(top + s);
        }
        /* weights: hats along the chain, tilted and waved joint planes */
        for (uint32_t v = v0; v < v0 + per_limb; ++v) {
            const double y = (pos[3 * v] * d[0] + pos[3 * v + 1] * d[1] + pos[3 * v + 2] * d[2]) -
                             base;
            const double px = pos[3 * v] * e1[0] + pos[3 * v + 1] * e1[1] + pos[3 * v + 2] * e1[2];
            const double pz = pos[3 * v] * e2[0] + pos[3 * v + 1] * e2[1] + pos[3 * v + 2] * e2[2];
            const double a = atan2(pz, px);
            const double u = y / bl + (v >= v0 + STAR_RINGS * STAR_SEGMENTS
                                           ? 0.0
                                           : 0.15 * sin(a) + 0.05 * cos(3 * a));
            double wb[STAR_BONES_PER_LIMB], sum = 0;
            for (uint32_t b = 0; b < STAR_BONES_PER_LIMB; ++b) {
                const double c = b + 0.5, h = 1.0 - fabs(u - c) / STAR_HAT;
                wb[b] = h > 0 ? h * h : 0;
                if (b == 0 && u < c) wb[b] = 1; /* the ends belong to the end bones */
                if (b + 1 == STAR_BONES_PER_LIMB && u > c) wb[b] = 1;
                sum += wb[b];
            }
            uint32_t slot = 0;
            for (uint32_t b = 0; b < STAR_BONES_PER_LIMB && slot < STAR_INFLUENCES; ++b)
                if (wb[b] > 0) {
                    idx[(size_t)v * STAR_INFLUENCES + slot] = (int32_t)(l * STAR_BONES_PER_LIMB + b);
                    w[(size_t)v * STAR_INFLUENCES + slot++] = (float)(wb[b] / sum);
                }
        }
    }
    ssk_skeleton_desc sk = {nb, NULL, parents, bind, heads, tails};
    ssk_mesh_desc md = {"star", nv, pos, nf, tri, STAR_INFLUENCES, idx, w, NULL};
    ssk_rig *rig = NULL;
    ssk_error err = {0};
    if (ssk_rig_create(&rig, &sk, &md, 1, &err) != SSK_OK)
        fprintf(stderr, "bench_cor: %s\n", err.message);
    free(pos);
    free(tri);
    free(idx);
    free(w);
    free(parents);
    free(bind);
    free(heads);
    free(tails);
    return rig;
}

static void precompute_bench(ssk_gl_context *gl, const ssk_backend *backends, int backend_count,
                             int repeats)
{
    ssk_rig *rig = make_star();
    if (!rig) exit(1);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_mesh_view mv;
    ssk_rig_mesh(rig, 0, &mv, NULL);
    float *centers = malloc(3 * (size_t)nv * sizeof(float)), *first = NULL;
    uint8_t *flags = malloc(nv);
    ssk_cor_params params;
    ssk_cor_params_default(&params);
    printf("Precomputation, %u vertices, %u triangles, %u bones (defaults: sigma %g, epsilon %g, "
           "omega %g, cutoff %g):\n\n",
           nv, mv.triangle_count, ssk_rig_bone_count(rig), (double)params.sigma,
           (double)params.epsilon, (double)params.omega, (double)params.cutoff);
    printf("| backend | seconds (median) | vertices with CoR | integration triangles | "
           "weight-space cells visited | max |CPU - this| / diagonal |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int b = 0; b < backend_count; ++b) {
        if (backends[b] == SSK_BACKEND_GL && !gl) continue;
        const int reps = repeats > 0 ? repeats : (backends[b] == SSK_BACKEND_GL ? 1 : 3);
        double *t = malloc((size_t)reps * sizeof(double));
        ssk_cor_stats stats = {0};
        for (int r = 0; r < reps; ++r) {
            ssk_error err = {0};
            if (ssk_cor_precompute(centers, flags, rig, &params, backends[b], gl, &stats, &err) !=
                SSK_OK) {
                fprintf(stderr, "bench_cor: %s\n", err.message);
                exit(1);
            }
            t[r] = stats.seconds;
        }
        double diff = 0.0;
        if (!first) {
            first = malloc(3 * (size_t)nv * sizeof(float));
            memcpy(first, centers, 3 * (size_t)nv * sizeof(float));
        } else {
            for (size_t i = 0; i < 3 * (size_t)nv; ++i)
                if (fabs((double)centers[i] - first[i]) > diff) diff = fabs((double)centers[i] - first[i]);
        }
        double lo[3] = {1e30, 1e30, 1e30}, hi[3] = {-1e30, -1e30, -1e30};
        for (uint32_t v = 0; v < nv; ++v)
            for (int k = 0; k < 3; ++k) {
                lo[k] = fmin(lo[k], mv.positions[3 * v + k]);
                hi[k] = fmax(hi[k], mv.positions[3 * v + k]);
            }
        const double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                 (hi[2] - lo[2]) * (hi[2] - lo[2]));
        char evaluations[32];
        snprintf(evaluations, sizeof evaluations, "%llu",
                 (unsigned long long)stats.evaluated_triangles);
        printf("| %s | %.3f | %u | %llu | %s | %.2g |\n", ssk_backend_name(backends[b]),
               median(t, reps), stats.cor_count, (unsigned long long)stats.integration_triangles,
               evaluations, diff / diag);
        fflush(stdout);
        free(t);
    }
    printf("\n");
    free(first);
    free(centers);
    free(flags);
    ssk_rig_destroy(rig);
}

/* A copy of one-mesh `rig` with the first two weights of `count` vertices
 * weighting two bones (every `stride`-th of them) moved by 15% of their
 * difference, as a painter's stroke; with add_bone, each of them also
 * gains a bone it lacked (its first bone's parent, weight 0.2, in an empty
 * slot), as a stroke of a new bone's influence; their rows in rows[]. */
static ssk_rig *stroke_copy(const ssk_rig *rig, uint32_t count, uint32_t stride, uint32_t *rows,
                            int add_bone)
{
    const uint32_t nb = ssk_rig_bone_count(rig);
    int32_t *parents = malloc(nb * sizeof(int32_t));
    float *bind = malloc(16 * (size_t)nb * sizeof(float));
    float *heads = malloc(3 * (size_t)nb * sizeof(float)), *tails = malloc(3 * (size_t)nb * sizeof(float));
    for (uint32_t b = 0; b < nb; ++b) {
        ssk_bone_view bv;
        ssk_rig_bone(rig, b, &bv, NULL);
        parents[b] = bv.parent;
        memcpy(bind + 16 * (size_t)b, bv.bind_matrix, 16 * sizeof(float));
        memcpy(heads + 3 * (size_t)b, bv.head, 3 * sizeof(float));
        memcpy(tails + 3 * (size_t)b, bv.tail, 3 * sizeof(float));
    }
    ssk_mesh_view mv;
    ssk_rig_mesh(rig, 0, &mv, NULL);
    const uint32_t k = mv.influence_count;
    const size_t slots = (size_t)mv.vertex_count * k;
    int32_t *bones = malloc(slots * sizeof(int32_t));
    float *w = malloc(slots * sizeof(float));
    memcpy(bones, mv.bone_indices, slots * sizeof(int32_t));
    memcpy(w, mv.weights, slots * sizeof(float));
    uint32_t found = 0, seen = 0;
    for (uint32_t v = 0; v < mv.vertex_count && found < count && k >= 2; ++v) {
        float *x = w + (size_t)v * k;
        if (!(x[0] > 0.05f && x[1] > 0.05f) || seen++ % stride != 0) continue;
        if (add_bone) {
            int32_t *bx = bones + (size_t)v * k;
            const int32_t parent = parents[bx[0]];
            uint32_t empty = k, present = 0;
            for (uint32_t s = 0; s < k; ++s) {
                if (x[s] == 0.0f && empty == k) empty = s;
                if (x[s] != 0.0f && bx[s] == parent) present = 1;
            }
            if (parent < 0 || present || empty == k) continue;
            bx[empty] = parent;
            x[empty] = 0.2f;
        }
        const float d = 0.15f * (x[0] > x[1] ? x[0] - x[1] : x[1] - x[0]);
        x[0] += x[0] > x[1] ? -d : d;
        x[1] += x[0] > x[1] ? d : -d;
        rows[found++] = v;
    }
    ssk_skeleton_desc sk = {nb, NULL, parents, bind, heads, tails};
    ssk_mesh_desc md = {"stroke", mv.vertex_count, mv.positions, mv.triangle_count, mv.triangles,
                        k, bones, w, mv.object_matrix, NULL};
    ssk_rig *out = NULL;
    ssk_error err = {0};
    if (found < count || ssk_rig_create(&out, &sk, &md, 1, &err) != SSK_OK) out = NULL;
    free(parents);
    free(bind);
    free(heads);
    free(tails);
    free(bones);
    free(w);
    return out;
}

/* Issue #18's scale table: the CPU precomputation of each rig file (the
 * bodies of bench/cor_bodies.py: one Rigify-like body and its
 * subdivisions) and of the 100k-vertex limb with 4 non-zero weights
 * everywhere (bench_skinning's inverse-distance weights), median of
 * `repeats`, and the growth exponent between the first and the last file. */
static void scale_bench(char *files, uint32_t vertices, int repeats, ssk_gl_context *gl)
{
    const int reps = repeats > 0 ? repeats : 3;
    ssk_cor_params params;
    ssk_cor_params_default(&params);
    printf("Precomputation at scale (median of %d; defaults):\n\n", reps);
    printf("| rig | vertices | triangles | bones | CPU seconds | update after 10 vertices' "
           "weights change: seconds (of the full) | the same, each gaining a bone | vertices "
           "with CoR | integration triangles | weight-space cells |%s\n",
           gl ? " GL seconds | max abs(GL - CPU) / diagonal |" : "");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", gl ? "---:|---:|" : "");
    double first_t = 0.0, last_t = 0.0, first_gl = 0.0, last_gl = 0.0;
    uint32_t first_v = 0, last_v = 0;
    int count = 0;
    for (int pass = 0; pass < 2; ++pass) {
        char *save = NULL;
        char *tok = pass == 0 && files ? strtok_r(files, ",", &save) : NULL;
        for (int one = pass; tok || one == 1; one = 0) {
            ssk_scene *scene = NULL;
            ssk_rig *owned = NULL;
            const ssk_rig *rig = NULL;
            const char *name = tok;
            ssk_error err = {0};
            if (pass == 0) {
                if (ssk_scene_import(&scene, tok, &err) != SSK_OK) {
                    fprintf(stderr, "bench_cor: %s: %s\n", tok, err.message);
                    exit(1);
                }
                rig = ssk_scene_rig(scene);
                const char *slash = strrchr(tok, '/');
                name = slash ? slash + 1 : tok;
            } else {
                owned = bench_limb_create(vertices, BENCH_LIMB_WEIGHTS_INVERSE_DISTANCE);
                rig = owned;
                name = "dense limb (4 weights everywhere)";
            }
            const uint32_t nv = ssk_rig_vertex_count(rig);
            uint32_t nt = 0;
            for (uint32_t m = 0; m < ssk_rig_mesh_count(rig); ++m) {
                ssk_mesh_view mv;
                ssk_rig_mesh(rig, m, &mv, NULL);
                nt += mv.triangle_count;
            }
            float *centers = malloc(3 * (size_t)nv * sizeof(float));
            uint8_t *flags = malloc(nv);
            double *t = malloc((size_t)reps * sizeof(double));
            ssk_cor_stats stats = {0};
            for (int r = 0; r < reps; ++r) {
                if (ssk_cor_precompute(centers, flags, rig, &params, SSK_BACKEND_CPU, NULL, &stats,
                                       &err) != SSK_OK) {
                    fprintf(stderr, "bench_cor: %s\n", err.message);
                    exit(1);
                }
                t[r] = stats.seconds;
            }
            const double sec = median(t, reps);
            /* an incremental update after a stroke on 10 vertices (one mesh
             * rigs), against the full precomputation above */
            char update[2][96] = {"", ""};
            for (int add = 0; add < 2; ++add) {
                uint32_t rows[10];
                ssk_rig *stroked =
                    ssk_rig_mesh_count(rig) == 1 ? stroke_copy(rig, 10, 97, rows, add) : NULL;
                if (stroked) {
                    ssk_cor_state *state = NULL;
                    ssk_cor_stats us;
                    double *ut = malloc((size_t)reps * sizeof(double));
                    for (int r = 0; r < reps; ++r) {
                        if (ssk_cor_state_create(&state, centers, flags, rig, &params, NULL,
                                                 &err) != SSK_OK ||
                            ssk_cor_state_update(state, centers, flags, stroked, rows, 10, &us,
                                                 &err) != SSK_OK) {
                            fprintf(stderr, "bench_cor: %s\n", err.message);
                            exit(1);
                        }
                        ut[r] = us.seconds;
                        ssk_cor_state_destroy(state);
                    }
                    const double u = median(ut, reps);
                    snprintf(update[add], sizeof update[add], "%.4f (%.1f%%)", u,
                             100.0 * u / sec);
                    free(ut);
                    ssk_rig_destroy(stroked);
                }
            }
            printf("| %s | %u | %u | %u | %.3f | %s | %s | %u | %llu | %u |", name, nv, nt,
                   ssk_rig_bone_count(rig), sec, update[0], update[1], stats.cor_count,
                   (unsigned long long)stats.integration_triangles, stats.cluster_count);
            double gl_sec = 0.0;
            if (gl) {
                /* the same precomputation with the vertices' sums on GL */
                float *gc = malloc(3 * (size_t)nv * sizeof(float));
                uint8_t *gf = malloc(nv);
                ssk_cor_stats gs;
                if (ssk_cor_precompute(centers, flags, rig, &params, SSK_BACKEND_CPU, NULL, NULL,
                                       &err) != SSK_OK)
                    exit(1);
                for (int r = 0; r < reps; ++r) {
                    if (ssk_cor_precompute(gc, gf, rig, &params, SSK_BACKEND_GL, gl, &gs, &err) !=
                        SSK_OK) {
                        fprintf(stderr, "bench_cor: GL: %s\n", err.message);
                        exit(1);
                    }
                    t[r] = gs.seconds;
                }
                gl_sec = median(t, reps);
                double lo[3] = {1e30, 1e30, 1e30}, hi[3] = {-1e30, -1e30, -1e30}, diff = 0.0;
                for (uint32_t v = 0; v < nv; ++v)
                    for (int k = 0; k < 3; ++k) {
                        const double c = centers[3 * (size_t)v + k];
                        lo[k] = fmin(lo[k], c);
                        hi[k] = fmax(hi[k], c);
                        diff = fmax(diff, fabs(c - gc[3 * (size_t)v + k]));
                    }
                const double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) +
                                         (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                         (hi[2] - lo[2]) * (hi[2] - lo[2]));
                printf(" %.3f | %.2g |", gl_sec, diff / diag);
                free(gc);
                free(gf);
            }
            printf("\n");
            fflush(stdout);
            if (pass == 0) {
                if (count++ == 0) {
                    first_t = sec;
                    first_gl = gl_sec;
                    first_v = nv;
                }
                last_t = sec;
                last_gl = gl_sec;
                last_v = nv;
            }
            free(centers);
            free(flags);
            free(t);
            ssk_rig_destroy(owned);
            ssk_scene_destroy(scene);
            if (pass == 1) break;
            tok = strtok_r(NULL, ",", &save);
        }
    }
    if (count > 1) {
        printf("\ngrowth exponent between %u and %u vertices: CPU %.2f (time ~ vertices^x)",
               first_v, last_v, log(last_t / first_t) / log((double)last_v / first_v));
        if (gl && first_gl > 0.0)
            printf(", GL %.2f", log(last_gl / first_gl) / log((double)last_v / first_v));
        printf("\n");
    }
    printf("\n");
}

static void runtime_bench(ssk_gl_context *gl, const ssk_backend *backends, int backend_count,
                          uint32_t vertices, int repeats)
{
    ssk_rig *rig = bench_limb_create(vertices, BENCH_LIMB_WEIGHTS_HAT);
    if (!rig) exit(1);
    const uint32_t nv = ssk_rig_vertex_count(rig);
    ssk_bind_params bp;
    ssk_bind_params_default(&bp);
    bp.compute_cor = 1;
    ssk_binding *binding = NULL;
    ssk_error err = {0};
    if (ssk_binding_create(&binding, rig, &bp, &err) != SSK_OK) {
        fprintf(stderr, "bench_cor: %s\n", err.message);
        exit(1);
    }
    ssk_binding_view view;
    ssk_binding_get(binding, &view, NULL);
    printf("Runtime, limb of %u vertices, %d bones, %d influences (CoRs precomputed in %.2f s):\n\n",
           nv, BENCH_LIMB_BONES, BENCH_LIMB_INFLUENCES, view.cor_seconds);
    printf("| backend | LBS ms/frame | CoR ms/frame | CoR / LBS | DQS ms/frame |\n");
    printf("|---|---:|---:|---:|---:|\n");
    float *out = malloc(3 * (size_t)nv * sizeof(float));
    const ssk_method methods[3] = {SSK_METHOD_LBS, SSK_METHOD_COR, SSK_METHOD_DQS};
    for (int b = 0; b < backend_count; ++b) {
        if (backends[b] == SSK_BACKEND_GL && !gl) continue;
        const int reps = repeats > 0 ? repeats : (backends[b] == SSK_BACKEND_GL ? 31 : 201);
        double *t = malloc((size_t)reps * sizeof(double));
        double ms[3];
        for (int m = 0; m < 3; ++m) {
            ssk_deformer *d = NULL;
            ssk_deformer_desc desc = {.method = methods[m], .backend = backends[b],
                                      .gl_context = gl, .binding = binding};
            if (ssk_deformer_create(&d, rig, &desc, &err) != SSK_OK) {
                fprintf(stderr, "bench_cor: %s\n", err.message);
                exit(1);
            }
            float skin[16 * BENCH_LIMB_BONES];
            bench_limb_pose(skin, 0.0);
            ssk_deformer_deform(d, out, skin, NULL, &err); /* warm-up */
            for (int r = 0; r < reps; ++r) {
                bench_limb_pose(skin, 0.1 * r);
                const double t0 = bench_now();
                if (ssk_deformer_deform(d, out, skin, NULL, &err) != SSK_OK) {
                    fprintf(stderr, "bench_cor: %s\n", err.message);
                    exit(1);
                }
                t[r] = bench_now() - t0;
            }
            ms[m] = 1e3 * median(t, reps);
            ssk_deformer_destroy(d);
        }
        printf("| %s | %.3f | %.3f | %.2f | %.3f |\n", ssk_backend_name(backends[b]), ms[0], ms[1],
               ms[1] / ms[0], ms[2]);
        fflush(stdout);
        free(t);
    }
    free(out);
    ssk_binding_destroy(binding);
    ssk_rig_destroy(rig);
}

int main(int argc, char **argv)
{
    uint32_t vertices = 100000;
    int repeats = 0, skip_runtime = 0, skip_precompute = 0, scale = 0;
    char *files = NULL;
    ssk_backend backends[2] = {SSK_BACKEND_CPU, SSK_BACKEND_GL};
    int backend_count = 2;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--vertices") == 0 && i + 1 < argc) {
            vertices = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--backends") == 0 && i + 1 < argc) {
            backend_count = 0;
            for (char *tok = strtok(argv[++i], ","); tok && backend_count < 2; tok = strtok(NULL, ","))
                if (ssk_backend_parse(&backends[backend_count], tok, NULL) == SSK_OK)
                    backend_count++;
        } else if (strcmp(argv[i], "--skip-runtime") == 0) {
            skip_runtime = 1;
        } else if (strcmp(argv[i], "--skip-precompute") == 0) {
            skip_precompute = 1;
        } else if (strcmp(argv[i], "--scale") == 0) {
            scale = 1;
        } else if (strcmp(argv[i], "--files") == 0 && i + 1 < argc) {
            files = argv[++i];
            scale = 1;
        } else {
            fprintf(stderr, "usage: bench_cor [--vertices N] [--repeats N] [--backends cpu,gl] "
                            "[--skip-runtime] [--skip-precompute] [--scale] "
                            "[--files A.fbx,B.fbx,...]\n");
            return 2;
        }
    }
    ssk_gl_context *gl = NULL;
    for (int b = 0; b < backend_count; ++b)
        if (backends[b] == SSK_BACKEND_GL) {
            ssk_error err = {0};
            if (ssk_gl_context_create(&gl, &err) != SSK_OK) {
                fprintf(stderr, "bench_cor: GL skipped: %s\n", err.message);
            } else {
                ssk_gl_info info;
                ssk_gl_context_info(gl, &info, NULL);
                fprintf(stderr, "GL renderer: %s (%s)\n", info.renderer, info.version);
            }
        }
    if (scale) {
        scale_bench(files, vertices, repeats, gl);
        ssk_gl_context_destroy(gl);
        return 0;
    }
    if (!skip_precompute) precompute_bench(gl, backends, backend_count, repeats);
    if (!skip_runtime) runtime_bench(gl, backends, backend_count, vertices, repeats);
    ssk_gl_context_destroy(gl);
    return 0;
}
