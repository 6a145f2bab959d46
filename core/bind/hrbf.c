/* hrbf.c — Hermite RBF fields (Vaillant 2015, 3.3 and 4.4, Eq. 4.1) and
 * the compact remap t_r (issue #20); see hrbf.h. */
#include "bind/hrbf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK (Debian liblapack): symmetric indefinite solve, Bunch-Kaufman. */
extern void dsysv_(const char *uplo, const int *n, const int *nrhs, double *a, const int *lda,
                   int *ipiv, double *b, const int *ldb, double *work, const int *lwork,
                   int *info);

/* For y = x - v, s = |y|: grad phi(|y|) = 3 s y and its Hessian
 * 3 (s I + y y^T / s) (0 at s = 0, its limit). */
static void kernel(const double y[3], double *phi, double g[3], double hess[9])
{
    const double s = sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
    if (phi) *phi = s * s * s;
    if (g)
        for (int a = 0; a < 3; ++a) g[a] = 3.0 * s * y[a];
    if (hess)
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                hess[3 * a + b] = s > 0.0 ? 3.0 * ((a == b ? s : 0.0) + y[a] * y[b] / s) : 0.0;
}

ssk_status ssk_hrbf_fit(ssk_hrbf *out, const double *points, const double *normals,
                        uint32_t count, ssk_error *err)
{
    if (!out || !points || !normals || count == 0)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_hrbf_fit: no Hermite data");
    memset(out, 0, sizeof *out);
    for (uint32_t k = 0; k < count; ++k) {
        const double *n = normals + 3 * (size_t)k;
        const double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!isfinite(len) || !(len > 0.0) || !isfinite(points[3 * k]) ||
            !isfinite(points[3 * k + 1]) || !isfinite(points[3 * k + 2]))
            return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                                 "ssk_hrbf_fit: Hermite point %u has a non-finite position or a "
                                 "zero normal",
                                 k);
    }
    const size_t m = count, n = 4 * m;
    if (n > (size_t)INT32_MAX / n)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "ssk_hrbf_fit: %u points: too many",
                             count);
    /* unknowns [lambda_1..m, beta_1..m]; rows: the values, then the
     * gradients with their sign changed, which makes the matrix symmetric:
     * [[Phi, G], [G^T, -H]] (grad phi is odd, its Hessian even) */
    double *a = malloc(n * n * sizeof(double)), *rhs = malloc(n * sizeof(double));
    int *ipiv = malloc(n * sizeof(int));
    double *work = NULL;
    ssk_status st = SSK_OK;
    if (!a || !rhs || !ipiv) goto oom;
    for (size_t j = 0; j < m; ++j)
        for (size_t k = 0; k < m; ++k) {
            double y[3], phi, g[3], h[9];
            for (int c = 0; c < 3; ++c) y[c] = points[3 * j + c] - points[3 * k + c];
            kernel(y, &phi, g, h);
            /* column-major: a[row + col n] */
            a[j + k * n] = phi;
            for (int c = 0; c < 3; ++c) {
                a[j + (m + 3 * k + c) * n] = g[c];  /* value row j, beta_k */
                a[(m + 3 * j + c) + k * n] = -g[c]; /* gradient row j (negated), lambda_k */
                for (int d = 0; d < 3; ++d)
                    a[(m + 3 * j + c) + (m + 3 * k + d) * n] = -h[3 * c + d];
            }
        }
    for (size_t j = 0; j < m; ++j) {
        rhs[j] = 0.0;
        const double *nj = normals + 3 * j;
        const double len = sqrt(nj[0] * nj[0] + nj[1] * nj[1] + nj[2] * nj[2]);
        for (int c = 0; c < 3; ++c) rhs[m + 3 * j + c] = -nj[c] / len;
    }
    const int N = (int)n, one = 1;
    int lwork = -1, info = 0;
    double query = 0.0;
    dsysv_("L", &N, &one, a, &N, ipiv, rhs, &N, &query, &lwork, &info);
    lwork = info == 0 && query >= 1.0 ? (int)query : N;
    work = malloc((size_t)lwork * sizeof(double));
    if (!work) goto oom;
    dsysv_("L", &N, &one, a, &N, ipiv, rhs, &N, work, &lwork, &info);
    if (info != 0) {
        st = ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                           "ssk_hrbf_fit: the Hermite system of %u points is singular (LAPACK "
                           "dsysv info %d: two equal points?)",
                           count, info);
        goto done;
    }
    out->count = count;
    out->centers = malloc(3 * m * sizeof(double));
    out->lambda = malloc(m * sizeof(double));
    out->beta = malloc(3 * m * sizeof(double));
    if (!out->centers || !out->lambda || !out->beta) goto oom;
    memcpy(out->centers, points, 3 * m * sizeof(double));
    memcpy(out->lambda, rhs, m * sizeof(double));
    memcpy(out->beta, rhs + m, 3 * m * sizeof(double));
    goto done;
oom:
    st = ssk_error_set(err, SSK_ERROR_OUT_OF_MEMORY, "ssk_hrbf_fit: out of memory");
done:
    free(a);
    free(rhs);
    free(ipiv);
    free(work);
    if (st != SSK_OK) ssk_hrbf_free(out);
    return st;
}

double ssk_hrbf_eval(const ssk_hrbf *h, const double x[3], double *grad)
{
    /* With y = x - v_k, s = |y|, u = beta_k . y: the term is
     * lambda s^3 + 3 s u, its gradient 3 (lambda s y + s beta_k + u y / s)
     * (kernel()'s grad phi and Hessian applied to beta_k, without forming
     * the Hessian: the grids of 4.4 evaluate this N^3 m times per bone). */
    double d = 0.0, g0 = 0.0, g1 = 0.0, g2 = 0.0;
    for (uint32_t k = 0; k < h->count; ++k) {
        const double *v = h->centers + 3 * (size_t)k, *b = h->beta + 3 * (size_t)k;
        const double y0 = x[0] - v[0], y1 = x[1] - v[1], y2 = x[2] - v[2];
        const double s = sqrt(y0 * y0 + y1 * y1 + y2 * y2), lam = h->lambda[k];
        const double u = b[0] * y0 + b[1] * y1 + b[2] * y2;
        d += s * (lam * s * s + 3.0 * u);
        if (grad && s > 0.0) {
            const double c = lam * s + u / s;
            g0 += c * y0 + s * b[0];
            g1 += c * y1 + s * b[1];
            g2 += c * y2 + s * b[2];
        }
    }
    if (grad) {
        grad[0] = 3.0 * g0;
        grad[1] = 3.0 * g1;
        grad[2] = 3.0 * g2;
    }
    return d;
}

void ssk_hrbf_free(ssk_hrbf *h)
{
    if (!h) return;
    free(h->centers);
    free(h->lambda);
    free(h->beta);
    memset(h, 0, sizeof *h);
}

double ssk_hrbf_remap(double x, double r, double *deriv)
{
    if (x <= -r || x >= r) {
        if (deriv) *deriv = 0.0;
        return x <= -r ? 1.0 : 0.0;
    }
    const double u = x / r, u2 = u * u;
    if (deriv) *deriv = (-15.0 / 16.0 * u2 * u2 + 15.0 / 8.0 * u2 - 15.0 / 16.0) / r;
    return -3.0 / 16.0 * u2 * u2 * u + 5.0 / 8.0 * u2 * u - 15.0 / 16.0 * u + 0.5;
}
