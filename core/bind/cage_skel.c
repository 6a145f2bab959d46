/* cage_skel.c — the skeleton updater of coupled cages and skeletons (Corda
 * et al. 2020, 003_3bdce6713f645d88.txt, 4.2; issue #21): the joint
 * localization of Eq. 9, the maximum-entropy coordinates of Eq. 11
 * (Hormann and Sukumar 2008) and the joints' cage coordinates of Eq. 10-12.
 * See bind/cage.h. */
#include "bind/cage_skel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Maximum-entropy coordinates (ssk_cage_max_entropy). Every length is
 * measured in units of h, the bounding-box diagonal of the cage vertices
 * with positive mass (d_k = (c_k - x) / h), so the constants below are
 * relative to the cage's size. */

/* Convergence: |sum_k psi_k d_k| = |sum_k psi_k c_k - x| / h at most this. */
#define SSK_MEC_TOLERANCE 1e-13
/* Newton iterations at most (interior points take 3-10; a point on the
 * hull's boundary converges linearly, about a factor e per step, so
 * ln(1 / SSK_MEC_TOLERANCE) ~ 30 steps more). */
#define SSK_MEC_MAX_ITERATIONS 200
/* Armijo's sufficient-decrease constant of the backtracking line search. */
#define SSK_MEC_ARMIJO 1e-4
/* Step factor per backtracking try, and the tries at most (0.5^60 ~ 1e-18:
 * below that the step is lost in the roundoff of lambda). */
#define SSK_MEC_BACKTRACK 0.5
#define SSK_MEC_MAX_BACKTRACKS 60
/* Longest first step |delta| of lambda (in units of 1 / h; |d_k| <= 1, so every
 * exponent lambda . d_k moves by at most this many nats per step). Interior
 * points of the tests take steps up to ~30. */
#define SSK_MEC_MAX_STEP 64.0
/* Growth of that cap after a capped step taken whole. */
#define SSK_MEC_STEP_GROWTH 2.0
/* Ridge added to the 3 by 3 Hessian, relative to its trace, and its growth
 * per failed Cholesky factorization (at most SSK_MEC_RIDGE_TRIES tries). */
#define SSK_MEC_RIDGE 1e-14
#define SSK_MEC_RIDGE_GROWTH 100.0
#define SSK_MEC_RIDGE_TRIES 8
/* F's relative roundoff (a sum of up to c exponentials, then a log): a
 * predicted decrease |grad F . delta| below it cannot be checked on F. */
#define SSK_MEC_FLAT_DUAL 1e-13
/* Slack (in nats) of the duality certificate of an outside point:
 * F(lambda) < ln(min_k w_k) - this proves the point outside the hull. */
#define SSK_MEC_DUALITY_MARGIN 1e-9

/* ------------------------------------------------------------------------ */
/* Joint localization (Eq. 9)                                                */
/* ------------------------------------------------------------------------ */

void ssk_cage_joint_localization(double *L, const double *weights, uint32_t count,
                                 uint32_t joint_count, double s)
{
    if (!L || !weights) return;
    for (uint32_t i = 0; i < count; ++i) {
        const double *w = weights + (size_t)i * joint_count;
        double total = 0.0;
        for (uint32_t j = 0; j < joint_count; ++j) total += w[j];
        for (uint32_t j = 0; j < joint_count; ++j) {
            /* sum_{k != j} w_ik as the row's total less w_ij (O(J) per
             * vertex, not O(J^2)); exact in rigid regions (w_ij = 0 or 1
             * with the rest 0), clamped at 0 against its roundoff. */
            const double others = fmax(total - w[j], 0.0);
            const double own = fmax(w[j], 0.0);
            const double value = -1.0 + pow(own, s) + pow(others, s);
            /* An unweighted vertex (-1 + 0 + 0) locates no joint; for rows
             * summing to 1, a^s + (1 - a)^s >= 1 (s <= 1), so the clamp
             * only removes roundoff there. */
            L[(size_t)j * count + i] = fmax(value, 0.0);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Maximum-entropy coordinates (Eq. 11; Hormann and Sukumar 2008)            */
/* ------------------------------------------------------------------------ */

/* The dual of Eq. 11 (Hormann and Sukumar 2008, Eq. 7-9): with the
 * normalized prior w and d_k = (c_k - x) / h,
 *   psi_k(lambda) = w_k exp(-lambda . d_k) / Z(lambda),
 *   F(lambda) = ln Z(lambda) = ln sum_k w_k exp(-lambda . d_k),
 * convex, grad F = -r with r = sum_k psi_k d_k (the linear-precision
 * residual) and Hessian the covariance of d under psi. Its minimizer makes
 * r = 0; psi is then the maximizer of Eq. 11 (strong duality). */
typedef struct mec_problem {
    const double *prior;  /* c masses (unnormalized) */
    const double *cage;   /* c by 3 */
    uint32_t c;
    double x[3];          /* the point */
    double h;             /* the length unit */
    double mass_sum;      /* sum of the prior */
} mec_problem;

static void mec_offset(const mec_problem *p, uint32_t k, double d[3])
{
    for (int a = 0; a < 3; ++a) d[a] = (p->cage[3 * (size_t)k + a] - p->x[a]) / p->h;
}

/* a_k = ln w_k - lambda . d_k for a vertex with positive mass. */
static double mec_exponent(const mec_problem *p, uint32_t k, const double lambda[3])
{
    double d[3];
    mec_offset(p, k, d);
    return log(p->prior[k] / p->mass_sum) -
           (lambda[0] * d[0] + lambda[1] * d[1] + lambda[2] * d[2]);
}

/* F(lambda), the exponents shifted by their max (no overflow, no underflow
 * of the largest term: Z >= 1 after the shift). */
static double mec_dual(const mec_problem *p, const double lambda[3])
{
    double amax = -INFINITY;
    for (uint32_t k = 0; k < p->c; ++k)
        if (p->prior[k] > 0.0) amax = fmax(amax, mec_exponent(p, k, lambda));
    double z = 0.0;
    for (uint32_t k = 0; k < p->c; ++k)
        if (p->prior[k] > 0.0) z += exp(mec_exponent(p, k, lambda) - amax);
    return amax + log(z);
}

/* F, psi (c; 0 at zero mass), r and the Hessian H (3 by 3) at lambda. H is
 * the centered sum sum_k psi_k (d_k - r)(d_k - r)^T, not sum psi d d^T -
 * r r^T: near the hull's boundary both terms nearly cancel. */
static double mec_evaluate(const mec_problem *p, const double lambda[3], double *psi,
                           double r[3], double H[9])
{
    double amax = -INFINITY;
    for (uint32_t k = 0; k < p->c; ++k) {
        psi[k] = 0.0;
        if (p->prior[k] > 0.0) {
            psi[k] = mec_exponent(p, k, lambda);
            amax = fmax(amax, psi[k]);
        }
    }
    double z = 0.0;
    for (uint32_t k = 0; k < p->c; ++k)
        if (p->prior[k] > 0.0) {
            psi[k] = exp(psi[k] - amax);
            z += psi[k];
        }
    r[0] = r[1] = r[2] = 0.0;
    for (uint32_t k = 0; k < p->c; ++k) {
        if (p->prior[k] <= 0.0) continue;
        psi[k] /= z;
        double d[3];
        mec_offset(p, k, d);
        for (int a = 0; a < 3; ++a) r[a] += psi[k] * d[a];
    }
    memset(H, 0, 9 * sizeof *H);
    for (uint32_t k = 0; k < p->c; ++k) {
        if (p->prior[k] <= 0.0) continue;
        double d[3];
        mec_offset(p, k, d);
        for (int a = 0; a < 3; ++a) d[a] -= r[a];
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) H[3 * a + b] += psi[k] * d[a] * d[b];
    }
    return amax + log(z);
}

/* Solves (H + mu I) delta = r by Cholesky, mu = SSK_MEC_RIDGE trace(H)
 * grown until the factorization succeeds (a flat set of positive-mass
 * vertices leaves H singular across it; r has no component there). */
static bool mec_newton_step(const double H[9], const double r[3], double delta[3])
{
    const double trace = H[0] + H[4] + H[8];
    if (!(trace > 0.0) || !isfinite(trace)) return false;
    double mu = SSK_MEC_RIDGE * trace;
    for (int attempt = 0; attempt < SSK_MEC_RIDGE_TRIES; ++attempt, mu *= SSK_MEC_RIDGE_GROWTH) {
        double l[9] = {0};
        bool ok = true;
        for (int i = 0; i < 3 && ok; ++i)
            for (int j = 0; j <= i; ++j) {
                double sum = H[3 * i + j] + (i == j ? mu : 0.0);
                for (int q = 0; q < j; ++q) sum -= l[3 * i + q] * l[3 * j + q];
                if (i == j) {
                    if (!(sum > 0.0)) {
                        ok = false;
                        break;
                    }
                    l[3 * i + i] = sqrt(sum);
                } else {
                    l[3 * i + j] = sum / l[3 * j + j];
                }
            }
        if (!ok) continue;
        double y[3];
        for (int i = 0; i < 3; ++i) {
            double sum = r[i];
            for (int q = 0; q < i; ++q) sum -= l[3 * i + q] * y[q];
            y[i] = sum / l[3 * i + i];
        }
        for (int i = 2; i >= 0; --i) {
            double sum = y[i];
            for (int q = i + 1; q < 3; ++q) sum -= l[3 * q + i] * delta[q];
            delta[i] = sum / l[3 * i + i];
        }
        return isfinite(delta[0]) && isfinite(delta[1]) && isfinite(delta[2]);
    }
    return false;
}

/* Whether u strictly separates the point from every positive-mass vertex:
 * u . d_k > SSK_MEC_TOLERANCE |u| for all of them (then the point lies
 * outside their convex hull by more than the tolerance). */
static bool mec_separates(const mec_problem *p, const double u[3])
{
    const double len = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    if (!(len > 0.0) || !isfinite(len)) return false;
    for (uint32_t k = 0; k < p->c; ++k) {
        if (p->prior[k] <= 0.0) continue;
        double d[3];
        mec_offset(p, k, d);
        if (!((u[0] * d[0] + u[1] * d[1] + u[2] * d[2]) > SSK_MEC_TOLERANCE * len)) return false;
    }
    return true;
}

static ssk_status mec_outside(ssk_error *err, const double x[3], const char *why)
{
    return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                         "ssk_cage_max_entropy: the point (%g, %g, %g) lies outside the convex "
                         "hull of the cage vertices with positive mass (%s): no coordinates "
                         "reproduce it",
                         x[0], x[1], x[2], why);
}

ssk_status ssk_cage_max_entropy_counted(double *psi, const double *prior,
                                        const double *cage_vertices, uint32_t c,
                                        const double point[3], uint32_t *iterations,
                                        ssk_error *err)
{
    if (iterations) *iterations = 0;
    if (!psi || !prior || !cage_vertices || !point || c == 0)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_max_entropy: NULL argument or no cage vertex");
    if (!isfinite(point[0]) || !isfinite(point[1]) || !isfinite(point[2]))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_max_entropy: non-finite point");
    mec_problem p = {.prior = prior, .cage = cage_vertices, .c = c,
                     .x = {point[0], point[1], point[2]}, .h = 1.0, .mass_sum = 0.0};
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double mass_min = INFINITY;
    for (uint32_t k = 0; k < c; ++k) {
        const double *v = cage_vertices + 3 * (size_t)k;
        if (!isfinite(prior[k]) || prior[k] < 0.0)
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "ssk_cage_max_entropy: prior mass %u is %g (masses are finite "
                                 "and >= 0)",
                                 k, prior[k]);
        if (!isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2]))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "ssk_cage_max_entropy: cage vertex %u is not finite", k);
        if (prior[k] > 0.0) {
            p.mass_sum += prior[k];
            mass_min = fmin(mass_min, prior[k]);
            for (int a = 0; a < 3; ++a) {
                lo[a] = fmin(lo[a], v[a]);
                hi[a] = fmax(hi[a], v[a]);
            }
        }
    }
    if (!(p.mass_sum > 0.0) || !isfinite(p.mass_sum))
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_max_entropy: no positive prior mass (or their sum "
                             "overflows)");
    const double diagonal = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) +
                                 (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                 (hi[2] - lo[2]) * (hi[2] - lo[2]));
    /* All positive-mass vertices at one place: the point is there (any psi
     * on them works, the prior is the closest) or nowhere in their hull. */
    if (!(diagonal > 0.0)) {
        if (point[0] != lo[0] || point[1] != lo[1] || point[2] != lo[2])
            return mec_outside(err, point, "they all coincide elsewhere");
        for (uint32_t k = 0; k < c; ++k) psi[k] = prior[k] / p.mass_sum;
        return ssk_error_ok(err);
    }
    p.h = diagonal;
    /* The quick test: outside the bounding box of the positive-mass
     * vertices (by more than the tolerance) is outside their hull. */
    for (int a = 0; a < 3; ++a)
        if (point[a] < lo[a] - SSK_MEC_TOLERANCE * diagonal ||
            point[a] > hi[a] + SSK_MEC_TOLERANCE * diagonal)
            return mec_outside(err, point, "outside their bounding box");
    /* ln of the smallest normalized mass: for a point in the hull,
     * min F = max over feasible psi of -KL(psi || w) >= ln min_k w_k
     * (KL(psi || w) <= sum psi_k ln(1 / w_k)); weak duality makes any lambda
     * with F(lambda) below it a proof that the point is outside. */
    const double duality_floor = log(mass_min / p.mass_sum) - SSK_MEC_DUALITY_MARGIN;

    /* Damped Newton on the dual, lambda in units of 1 / h:
     * - start: lambda = 0, psi = the prior (F = 0); the Hessian there is the
     *   prior's covariance of the cage, well conditioned for a cage that
     *   surrounds the point;
     * - scaling: d_k in units of h keeps lambda and the tolerances
     *   independent of the cage's size and position;
     * - damping: backtracking (Armijo) on F, which decreases monotonically;
     *   F is strictly convex and coercive for a point inside the hull, so
     *   the iteration converges from any start, quadratically at the end;
 *   the step is capped first (SSK_MEC_MAX_STEP, grown while capped steps
 *   are taken whole): a prior spanning many orders of magnitude makes H
 *   nearly singular far from the solution, and its raw Newton step is too
 *   long for any affordable backtracking; once F's decrease is below its
 *   roundoff, the full step is judged by the residual instead;
     * - near the hull's boundary lambda grows like ln(1 / tol) / distance
     *   and H degenerates across the boundary: the exponents are shifted by
     *   their max (no overflow), H is the centered covariance (no
     *   cancellation), a ridge relative to trace(H) keeps the 3 by 3
     *   Cholesky solvable, and the iteration cap leaves room for the linear
     *   convergence there (a point on a vertex or face converges to that
     *   vertex's or face's coordinates with |r| <= tol at finite lambda);
     * - outside the hull F is unbounded below and lambda diverges: each
     *   iterate is checked against the duality floor above and for lambda
     *   or r strictly separating the point from the vertices. */
    double lambda[3] = {0.0, 0.0, 0.0}, r[3], H[9];
    double F = mec_evaluate(&p, lambda, psi, r, H);
    double residual = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    double max_step = SSK_MEC_MAX_STEP;
    uint32_t it = 0;
    for (; it < SSK_MEC_MAX_ITERATIONS && !(residual <= SSK_MEC_TOLERANCE); ++it) {
        if (iterations) *iterations = it;
        if (F < duality_floor) return mec_outside(err, point, "the dual is unbounded below");
        if (mec_separates(&p, lambda) || mec_separates(&p, r))
            return mec_outside(err, point, "a plane separates them");
        double delta[3];
        if (!mec_newton_step(H, r, delta)) break;
        /* A nearly singular H (psi concentrated on a few vertices, e.g.
         * under a prior spanning many orders of magnitude) gives a huge
         * Newton step along its flat direction that no affordable number
         * of halvings brings back: the step is capped first. */
        const double step = sqrt(delta[0] * delta[0] + delta[1] * delta[1] + delta[2] * delta[2]);
        const bool capped = step > max_step;
        if (capped)
            for (int a = 0; a < 3; ++a) delta[a] *= max_step / step;
        /* grad F . delta = -r . delta < 0 (delta = (H + mu I)^-1 r). */
        const double slope = -(r[0] * delta[0] + r[1] * delta[1] + r[2] * delta[2]);
        if (!(slope < 0.0)) break;
        double t = 1.0, trial[3];
        bool accepted = false;
        if (-slope <= SSK_MEC_FLAT_DUAL * (1.0 + fabs(F))) {
            /* The predicted decrease is below F's roundoff (the last steps
             * of the quadratic convergence): Armijo cannot see it, so the
             * full step is judged by the residual (the gradient) instead. */
            for (int a = 0; a < 3; ++a) trial[a] = lambda[a] + delta[a];
            double r_trial[3], H_trial[9];
            const double F_trial = mec_evaluate(&p, trial, psi, r_trial, H_trial);
            const double res_trial = sqrt(r_trial[0] * r_trial[0] + r_trial[1] * r_trial[1] +
                                          r_trial[2] * r_trial[2]);
            if (!(res_trial < residual)) {
                mec_evaluate(&p, lambda, psi, r, H); /* psi back at lambda */
                break;
            }
            memcpy(lambda, trial, sizeof lambda);
            memcpy(r, r_trial, sizeof r_trial);
            memcpy(H, H_trial, sizeof H_trial);
            F = F_trial;
            residual = res_trial;
            continue;
        }
        for (int b = 0; b < SSK_MEC_MAX_BACKTRACKS; ++b, t *= SSK_MEC_BACKTRACK) {
            for (int a = 0; a < 3; ++a) trial[a] = lambda[a] + t * delta[a];
            const double f = mec_dual(&p, trial);
            if (f <= F + SSK_MEC_ARMIJO * t * slope) {
                accepted = true;
                break;
            }
        }
        if (!accepted) break;
        /* The cap grows while capped steps are taken whole (lambda on its
         * way to infinity, as outside the hull: geometric growth keeps
         * that detection fast) and falls back once one needs damping. */
        max_step = capped && t == 1.0 ? SSK_MEC_STEP_GROWTH * max_step : SSK_MEC_MAX_STEP;
        memcpy(lambda, trial, sizeof lambda);
        F = mec_evaluate(&p, lambda, psi, r, H);
        residual = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    }
    if (iterations) *iterations = it;
    if (residual <= SSK_MEC_TOLERANCE) return ssk_error_ok(err);
    if (F < duality_floor) return mec_outside(err, point, "the dual is unbounded below");
    if (mec_separates(&p, lambda) || mec_separates(&p, r))
        return mec_outside(err, point, "a plane separates them");
    return ssk_error_set(err, SSK_ERROR_BIND,
                         "ssk_cage_max_entropy: no convergence at the point (%g, %g, %g) after "
                         "%u Newton iterations: |sum psi_k c_k - x| = %g (tolerance %g, "
                         "relative to the cage's size %g)",
                         point[0], point[1], point[2], it, residual * p.h,
                         SSK_MEC_TOLERANCE * p.h, p.h);
}

ssk_status ssk_cage_max_entropy(double *psi, const double *prior, const double *cage_vertices,
                                uint32_t c, const double point[3], ssk_error *err)
{
    return ssk_cage_max_entropy_counted(psi, prior, cage_vertices, c, point, NULL, err);
}

/* ------------------------------------------------------------------------ */
/* The joints' cage coordinates (Eq. 10-12)                                   */
/* ------------------------------------------------------------------------ */

/* masses (c) = sum_i coef_i phi_i, coef_i = mvc_ji (L_ji if L is given),
 * negative entries clamped to 0; returns whether one is positive. */
static bool joint_masses(double *masses, const double *mvc_row, const double *L_row,
                         uint32_t count, const double *phi, uint32_t c)
{
    memset(masses, 0, c * sizeof *masses);
    for (uint32_t i = 0; i < count; ++i) {
        const double coef = L_row ? mvc_row[i] * L_row[i] : mvc_row[i];
        if (coef == 0.0) continue;
        const double *row = phi + (size_t)i * c;
        for (uint32_t k = 0; k < c; ++k) masses[k] += coef * row[k];
    }
    bool positive = false;
    for (uint32_t k = 0; k < c; ++k) {
        /* MVC may be negative (a concave mesh), so may the sums: MEC takes
         * masses >= 0. NaN is left for MEC to refuse. */
        if (masses[k] < 0.0) masses[k] = 0.0;
        if (masses[k] > 0.0) positive = true;
    }
    return positive;
}

/* The floor mass of a joint outside the hull of its localized masses, per
 * unit of their largest (ssk_cage_joint_coordinates). */
#define JOINT_MASS_FLOOR 1e-6

ssk_status ssk_cage_joint_coordinates(double *psi, const double *joints, uint32_t joint_count,
                                      const double *mvc, const double *L, uint32_t count,
                                      const double *phi, const double *cage_vertices, uint32_t c,
                                      ssk_error *err)
{
    if (!psi || !joints || !mvc || !L || !phi || !cage_vertices || count == 0 || c == 0)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "ssk_cage_joint_coordinates: NULL argument, no mesh vertex or no "
                             "cage vertex");
    double *masses = malloc(c * sizeof *masses);
    if (!masses)
        return ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY,
                             "ssk_cage_joint_coordinates: out of memory");
    ssk_status st = ssk_error_ok(err);
    for (uint32_t j = 0; j < joint_count && st == SSK_OK; ++j) {
        const double *mvc_row = mvc + (size_t)j * count;
        /* Eq. 10: the localized masses sum_i (mvc_ji L_ji) phi_i. A joint
         * whose localized masses are all 0 (its L row 0 where its MVC are
         * positive, e.g. a joint with no blended vertex around it) falls
         * back to the unlocalized sum sum_i mvc_ji phi_i: the joint's own
         * coordinates through the mesh, a valid prior. */
        if (!joint_masses(masses, mvc_row, L + (size_t)j * count, count, phi, c) &&
            !joint_masses(masses, mvc_row, NULL, count, phi, c)) {
            st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                               "ssk_cage_joint_coordinates: joint %u: no positive mass, "
                               "localized or not",
                               j);
            break;
        }
        /* Eq. 11: the masses projected to the joint's barycentric
         * coordinates (rows of Psi, Eq. 12). */
        ssk_error inner;
        st = ssk_cage_max_entropy(psi + (size_t)j * c, masses, cage_vertices, c,
                                  joints + 3 * (size_t)j, &inner);
        if (st == SSK_ERROR_INVALID_ARGUMENT) {
            /* The joint lies outside the hull of the cage vertices its
             * masses reach (a joint outside the skin, as a metarig's face
             * and finger joints in a body without them: no skin around it
             * to localize). Not in the paper: every cage vertex gets a
             * floor mass, JOINT_MASS_FLOOR of the largest, so the hull is
             * the whole cage's; the result stays as close to the localized
             * masses as reproducing the joint allows (Eq. 11 minimizes the
             * divergence from them). */
            double largest = 0.0;
            for (uint32_t k = 0; k < c; ++k) largest = fmax(largest, masses[k]);
            for (uint32_t k = 0; k < c; ++k) masses[k] += JOINT_MASS_FLOOR * largest;
            st = ssk_cage_max_entropy(psi + (size_t)j * c, masses, cage_vertices, c,
                                      joints + 3 * (size_t)j, &inner);
        }
        if (st != SSK_OK)
            ssk_error_set(err, st, "ssk_cage_joint_coordinates: joint %u: %s", j, inner.message);
    }
    free(masses);
    return st;
}
