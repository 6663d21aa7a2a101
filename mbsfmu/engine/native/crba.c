/* crba.c - joint-space inertia by the composite-rigid-body algorithm (RBDA Table 6.2), as
 * mbsfmu/dynamics/crba.py. M (nv x nv, row-major), symmetric positive definite. */
#include <string.h>
#include "instance.h"
#include "spatial.h"

void mbs_crba_core(mbs_sim *s, double *M)
{
    int N = s->N, nv = s->nv, i, j, a, b, k;
    double *Ic = s->Ic, F[36];
    memcpy(Ic, s->I, sizeof(double) * 36 * (size_t)(N + 1));  /* Ic_i = I_i */
    for (k = 0; k < nv * nv; k++) M[k] = 0.0;
    for (i = N; i >= 1; i--)                                  /* Ic_lambda += Xup_i^T Ic_i Xup_i */
        if (s->parent[i] > 0) XT_I_X_add(s->E + 9 * i, s->r + 3 * i, Ic + 36 * i, Ic + 36 * s->parent[i]);
    for (i = 1; i <= N; i++) {
        const double *S = s->S + 36 * i;
        int n = s->nvj[i], si = s->iv[i];
        for (a = 0; a < n; a++)                               /* F = Ic_i S_i */
            for (k = 0; k < 6; k++) {
                double acc = 0.0;
                int l;
                for (l = 0; l < 6; l++) acc += M6(Ic + 36 * i, k, l) * M6(S, l, a);
                M6(F, k, a) = acc;
            }
        for (a = 0; a < n; a++)                               /* M_ii = S_i^T F */
            for (b = 0; b < n; b++) {
                double acc = 0.0;
                for (k = 0; k < 6; k++) acc += M6(F, k, a) * M6(S, k, b);
                M[nv * (si + a) + si + b] = acc;
            }
        j = i;
        while (s->parent[j] > 0) {
            const double *Sj;
            int sj;
            XT_force_cols(s->E + 9 * j, s->r + 3 * j, F, n); /* F = Xup_j^T F */
            j = s->parent[j];
            Sj = s->S + 36 * j;
            sj = s->iv[j];
            for (a = 0; a < n; a++)                           /* M_ij = F^T S_j, M_ji = M_ij^T */
                for (b = 0; b < s->nvj[j]; b++) {
                    double acc = 0.0;
                    for (k = 0; k < 6; k++) acc += M6(F, k, a) * M6(Sj, k, b);
                    M[nv * (si + a) + sj + b] = acc;
                    M[nv * (sj + b) + si + a] = acc;
                }
        }
    }
}
