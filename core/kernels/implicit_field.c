/*
 * implicit_field.c — evaluation of a bone's sampled field f_i = t_r(d_i)
 * (Vaillant 2015, 4.4 and 4.6.2.2; issue #20): trilinear interpolation of
 * the N^3 by 4 grid (f, grad f) that bind/implicit_fit.c samples at rest.
 *
 * A rest-space point p goes to grid coordinates g = grid_from_rest (p, 1);
 * outside [0, N - 1]^3 the field is 0 with a zero gradient (the grid's box
 * is wider than the support of t_r, bind/implicit_fit.c). Inside, the 8
 * corners of g's cell are blended with the usual trilinear weights, the
 * four channels alike: the gradient returned is the interpolation of the
 * sampled analytic gradients (smoother than the derivative of the
 * trilinear f, and the same thing as the cells shrink).
 */
#include "kernels/implicit_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>


float ssk_implicit_field_eval_cells(const ssk_implicit_field *field, const uint32_t *zero_cells,
                                    const float p[3], float grad[3])
{
    return ssk_implicit_field_lookup(field, zero_cells, p, grad);
}

float ssk_implicit_field_eval(const ssk_implicit_field *field, const float p[3], float grad[3])
{
    return ssk_implicit_field_eval_cells(field, NULL, p, grad);
}

size_t ssk_implicit_field_cell_words(const ssk_implicit_field *field)
{
    if (!field || field->resolution < 2) return 0;
    const size_t c = field->resolution - 1u;
    return (c * c * c + 31u) / 32u;
}

void ssk_implicit_field_zero_cells(const ssk_implicit_field *field, uint32_t *out)
{
    const size_t words = ssk_implicit_field_cell_words(field);
    if (!out || words == 0) return;
    memset(out, 0, words * sizeof *out);
    if (!field->samples) return;
    const uint32_t n = field->resolution, cn = n - 1u;
    const size_t sy = (size_t)n * SSK_IMPLICIT_FIELD_CHANNELS, sz = (size_t)n * sy;
    for (uint32_t k = 0; k < cn; ++k)
        for (uint32_t j = 0; j < cn; ++j)
            for (uint32_t i = 0; i < cn; ++i) {
                const float *base =
                    field->samples + k * sz + j * sy + (size_t)i * SSK_IMPLICIT_FIELD_CHANNELS;
                bool zero = true;
                for (int corner = 0; corner < 8 && zero; ++corner) {
                    const float *s = base + (size_t)(corner >> 2 & 1) * sz +
                                     (size_t)(corner >> 1 & 1) * sy +
                                     (size_t)(corner & 1) * SSK_IMPLICIT_FIELD_CHANNELS;
                    for (int ch = 0; ch < SSK_IMPLICIT_FIELD_CHANNELS; ++ch) zero = zero && s[ch] == 0.0f;
                }
                const uint32_t cell = (k * cn + j) * cn + i;
                if (zero) out[cell / 32u] |= 1u << (cell % 32u);
            }
}

void ssk_implicit_fit_free(ssk_implicit_fit *fit)
{
    if (!fit) return;
    if (fit->fields)
        for (uint32_t f = 0; f < fit->field_count; ++f) free(fit->fields[f].samples);
    free(fit->fields);
    free(fit->bone_field);
    free(fit->mvc_offsets);
    free(fit->mvc_neighbors);
    free(fit->mvc_weights);
    free(fit->rest_normals);
    memset(fit, 0, sizeof *fit);
}
