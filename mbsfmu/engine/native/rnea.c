/* rnea.c - inverse dynamics by the recursive Newton-Euler algorithm (RBDA Table 5.1), as
 * mbsfmu/dynamics/rnea.py: tau = M qdd + C qd + G - J^T f_ext. */
#include "instance.h"
#include "spatial.h"

void mbs_rnea_core(mbs_sim *s, const double *qd, const double *qdd, double *tau)
{
    int N = s->N, i, j, k, l;
    double *v = s->v, *a = s->a, *f = s->f;
    s->v_at_x = 0;
    for (k = 0; k < 6; k++) {
        v[k] = 0.0;
        a[k] = (k < 3) ? 0.0 : -s->grav[k - 3];               /* a_0 = -a_grav */
        f[k] = 0.0;
    }
    for (i = 1; i <= N; i++) {
        const double *E = s->E + 9 * i, *r = s->r + 3 * i, *S = s->S + 36 * i, *I = s->I + 36 * i;
        int n = s->nvj[i], lam = s->parent[i];
        double vJ[6] = {0, 0, 0, 0, 0, 0}, aJ[6] = {0, 0, 0, 0, 0, 0}, t6[6], Ia[6], b6[6];
        for (j = 0; j < n; j++)
            for (k = 0; k < 6; k++) {
                vJ[k] += M6(S, k, j) * qd[s->iv[i] + j];      /* vJ = S qd_i */
                aJ[k] += M6(S, k, j) * qdd[s->iv[i] + j];     /* S qdd_i */
            }
        X_motion(E, r, v + 6 * lam, v + 6 * i);               /* v_i = Xup_i v_lambda + vJ */
        for (k = 0; k < 6; k++) v[6 * i + k] += vJ[k];
        X_motion(E, r, a + 6 * lam, a + 6 * i);               /* a_i = Xup_i a_lambda + S qdd_i + v_i x vJ */
        crm_mul(v + 6 * i, vJ, t6);
        for (k = 0; k < 6; k++) a[6 * i + k] = a[6 * i + k] + aJ[k] + t6[k];
        for (k = 0; k < 6; k++) {                             /* f_i = I_i a_i + v_i x* I_i v_i - f_ext_i */
            double acc = 0.0;
            for (l = 0; l < 6; l++) acc += M6(I, k, l) * a[6 * i + l];
            Ia[k] = acc;
        }
        bias_force(I, v + 6 * i, b6);
        for (k = 0; k < 6; k++) f[6 * i + k] = Ia[k] + b6[k] - s->fext[6 * i + k];
    }
    for (i = N; i >= 1; i--) {
        const double *S = s->S + 36 * i;
        for (j = 0; j < s->nvj[i]; j++) {                     /* tau_i = S_i^T f_i */
            double acc = 0.0;
            for (k = 0; k < 6; k++) acc += M6(S, k, j) * f[6 * i + k];
            tau[s->iv[i] + j] = acc;
        }
        if (s->parent[i] > 0) XT_force_add(s->E + 9 * i, s->r + 3 * i, f + 6 * i, f + 6 * s->parent[i]);
    }
}
