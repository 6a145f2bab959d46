/*
 * cage_skel.h — diagnostics of the skeleton updater of bind/cage.h (Corda
 * et al. 2020, 4.2; issue #21) for the tests: the maximum-entropy solve
 * with its Newton iteration count. Internal to the core; the interface
 * proper is bind/cage.h.
 */
#ifndef SSK_BIND_CAGE_SKEL_H
#define SSK_BIND_CAGE_SKEL_H

#include "bind/cage.h"

/* ssk_cage_max_entropy (bind/cage.h, Eq. 11) that also reports the number
 * of Newton iterations it took (iterations may be NULL; on an error it
 * gets the iterations done before the error). Same arguments, results and
 * errors. */
ssk_status ssk_cage_max_entropy_counted(double *psi, const double *prior,
                                        const double *cage_vertices, uint32_t c,
                                        const double point[3], uint32_t *iterations,
                                        ssk_error *err);

#endif /* SSK_BIND_CAGE_SKEL_H */
