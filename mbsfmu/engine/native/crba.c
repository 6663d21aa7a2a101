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
        const double *axis = s->body_f + BODY_F * i + 12;
        int n = s->nvj[i], si = s->iv[i], jt = s->jtype[i];
        double col[6], Sc[6];
        IA_S(jt, axis, Ic + 36 * i, F);                       /* F = Ic_i S_i (S's structure, spatial.h) */
        for (a = 0; a < n; a++) {                             /* M_ii = S_i^T F */
            for (k = 0; k < 6; k++) col[k] = M6(F, k, a);
            ST_mul(jt, axis, col, Sc);
            for (b = 0; b < n; b++) M[nv * (si + a) + si + b] = Sc[b];
        }
        j = i;
        while (s->parent[j] > 0) {
            const double *axj;
            int sj, jtj;
            XT_force_cols(s->E + 9 * j, s->r + 3 * j, F, n); /* F = Xup_j^T F */
            j = s->parent[j];
            axj = s->body_f + BODY_F * j + 12;
            sj = s->iv[j];
            jtj = s->jtype[j];
            for (a = 0; a < n; a++) {                         /* M_ij = F^T S_j, M_ji = M_ij^T */
                for (k = 0; k < 6; k++) col[k] = M6(F, k, a);
                ST_mul(jtj, axj, col, Sc);
                for (b = 0; b < s->nvj[j]; b++) {
                    M[nv * (si + a) + sj + b] = Sc[b];
                    M[nv * (sj + b) + si + a] = Sc[b];
                }
            }
        }
    }
}
