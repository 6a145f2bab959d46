/*
 * hrbf.h — Hermite radial basis function fields (Vaillant 2015, 3.3 and
 * 4.4, Eq. 4.1; issue #20, implicit skinning): the distance field of a
 * bone's part of the skin, interpolating Hermite data (points and outward
 * normals), and the compact remap t_r of 4.4. Internal to the core.
 */
#ifndef SSK_HRBF_H
#define SSK_HRBF_H

#include "model/internal.h"

/* d(x) = sum_k lambda_k phi(|x - v_k|) + beta_k . grad phi(|x - v_k|),
 * phi(s) = s^3 (Eq. 4.1): negative inside, zero on the Hermite points,
 * gradient the prescribed normal there. Centers, coefficients in double
 * (the fit's conditioning needs it; the grids of 4.5 store float). */
typedef struct ssk_hrbf {
    uint32_t count;     /* m centers */
    double *centers;    /* m by 3, the Hermite points */
    double *lambda;     /* m */
    double *beta;       /* m by 3 */
} ssk_hrbf;

/* Fits the 4m coefficients so that d(points[k]) = 0 and grad d(points[k]) =
 * normals[k] (unit, outward), k < count. The system is symmetric once the
 * gradient rows change sign, and indefinite: LAPACK's dsysv
 * (Bunch-Kaufman), half LU's work and storage, Cholesky not applying.
 * - out: zeroed on entry, owned by the caller (ssk_hrbf_free).
 * - points, normals: count by 3, any one space (the field lives there).
 * Errors: SSK_ERROR_INVALID_ARGUMENT (NULL, count 0, a non-finite or
 * zero-length normal, two equal points: a singular system, named),
 * SSK_ERROR_OUT_OF_MEMORY. */
ssk_status ssk_hrbf_fit(ssk_hrbf *out, const double *points, const double *normals,
                        uint32_t count, ssk_error *err);
/* d(x); with grad, also its gradient (3 doubles). */
double ssk_hrbf_eval(const ssk_hrbf *h, const double x[3], double *grad);
void ssk_hrbf_free(ssk_hrbf *h);

/* The remap t_r of 4.4: 1 below -r, 0 above r, else
 * -3/16 (x/r)^5 + 5/8 (x/r)^3 - 15/16 (x/r) + 1/2 (C2: t_r(-r) = 1,
 * t_r(0) = 1/2, t_r(r) = 0, first and second derivatives 0 at +-r); with
 * deriv, also dt_r/dx. r > 0. */
double ssk_hrbf_remap(double x, double r, double *deriv);

#endif
