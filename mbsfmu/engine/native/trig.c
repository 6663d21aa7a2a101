/* trig.c - the core's sin and cos (trig.h) over an array, for the tests that measure them. */
#include "mbs_core.h"
#include "trig.h"

void mbs_sincos_values(const double *x, size_t n, double *s, double *c)
{
    size_t k;
    for (k = 0; k < n; k++) mbs_sincos(x[k], s + k, c + k);
}
