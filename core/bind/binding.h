/*
 * Stage bind (core/bind/, above backends, whose GL precomputation it may
 * call): what is computed once per rig — the attachment binding (bind.c),
 * binding files (binding_io.c), centers of rotation
 * (cor_precompute.c), spring rest data (spring_rest.c), implicit
 * skinning's fields (implicit_fit.c, implicit_mvc.c).
 *
 * binding.h — the attachment binding's storage, shared by bind.c (the
 * binding algorithms) and binding_io.c (binding files); not
 * installed.
 */
#ifndef SSK_BINDING_H
#define SSK_BINDING_H

#include "bind/cage.h"
#include "bind/implicit_bind.h"
#include "model/internal.h"

/* Largest accepted ssk_bind_params.smooth_iterations: more is never useful
 * (the dissertation uses fewer than 10) and is rejected as a likely mistake. */
#define SSK_BIND_MAX_SMOOTH_ITERATIONS 1000u

struct ssk_binding {
    uint32_t vertex_count;  /* #V of the rig */
    uint32_t bone_count;    /* #B */
    int32_t *bones;         /* #V */
    float *t;               /* #V */
    float *scale_vectors;   /* #V by 3, rig space */
    uint64_t rig_hash;      /* ssk_rig_hash of the rig */
    ssk_bind_params params; /* method resolved (never AUTO) */
    double seconds;         /* binding (or, for a loaded one, loading) time */
    /* Centers of rotation (params.compute_cor), else NULL: #V by 3 rig
     * space and #V flags; the time taken to compute them (0 when loaded). */
    float *cor_centers;
    uint8_t *cor_flags;
    double cor_seconds;
    /* Implicit skinning's bind data (params.compute_implicit, Vaillant
     * 2015, 4.4 and Eq. 4.6), else NULL: the fit (owned, a rig of #V and
     * #B above), its parameters, the version of the fit algorithm that
     * made it (SSK_IMPLICIT_FIT_VERSION when made here; a loaded file's
     * may be older) and the time it took (0 when loaded). */
    ssk_implicit_fit *implicit;
    ssk_implicit_fit_params implicit_params;
    uint32_t implicit_version;
    double implicit_seconds;
    /* A cage binding (coupled cages and skeletons, Corda et al. 2020;
     * issue #21), else NULL: its stored form (ssk_cage_binding_copy with
     * no cage: phi, psi, the MaxVol rows), owned, a rig of #V and #B
     * above; cage_key = ssk_cage_binding_key of the rest cage it was made
     * for; the time ssk_cage_binding_create took (0 when loaded). */
    ssk_cage_binding *cage;
    uint64_t cage_key;
    double cage_seconds;
};

/* The binding's implicit fit when it holds one that an implicit deformer
 * of this build would make: made with `want` (NULL: the defaults,
 * ssk_implicit_fit_params_default, what the deformer uses) by fit version
 * SSK_IMPLICIT_FIT_VERSION; else NULL (the deformer fits again). Borrowed. */
const ssk_implicit_fit *ssk_binding_implicit_fit(const ssk_binding *binding,
                                                 const ssk_implicit_fit_params *want);

/* Allocates a binding with zeroed arrays for #V vertices and #B bones;
 * NULL when out of memory. Free with ssk_binding_destroy. */
ssk_binding *ssk_binding_alloc(uint32_t vertex_count, uint32_t bone_count);

/* Allocates the binding's CoR arrays (cor_centers, cor_flags) for its #V.
 * Returns false when out of memory (the binding is then unchanged). */
bool ssk_binding_alloc_cor(ssk_binding *binding);

/* The method ssk_binding_create uses for `method` on `rig`: AUTO becomes
 * WEIGHTS when the rig has a non-zero skin weight, else DIRECT; the others
 * are returned as they are. */
ssk_bind_method ssk_bind_resolve_method(const ssk_rig *rig, ssk_bind_method method);

/* Checks ssk_bind_params ranges (method, finite max_distance >= 0,
 * smooth_iterations <= SSK_BIND_MAX_SMOOTH_ITERATIONS, and with
 * compute_cor the CoR parameters, ssk_cor_params_check).
 * Errors: SSK_ERROR_INVALID_ARGUMENT naming the field. */
ssk_status ssk_bind_params_check(const ssk_bind_params *params, ssk_error *err);

#endif /* SSK_BINDING_H */
