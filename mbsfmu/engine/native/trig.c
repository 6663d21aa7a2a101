/* trig.c - the core's sin and cos (trig.h) over arrays, for the tests that measure them. */
#include "mbs_core.h"
#include "trig.h"

void mbs_sincos_values(const double *x, size_t n, double *s, double *c)
{
    size_t k;
    for (k = 0; k < n; k++) mbs_sincos(x[k], s + k, c + k);
}

/* sin and cos of a0[k] + d[k] by mbs_sincos_sum from mbs_sincos(a0[k]) (|d[k]| <= MBS_SINCOS_SUM_D) */
void mbs_sincos_sum_values(const double *a0, const double *d, size_t n, double *s, double *c)
{
    size_t k;
    for (k = 0; k < n; k++) {
        double s0, c0;
        mbs_sincos(a0[k], &s0, &c0);
        mbs_sincos_sum(s0, c0, d[k], s + k, c + k);
    }
}
