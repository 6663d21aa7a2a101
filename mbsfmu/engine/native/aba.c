/* aba.c - forward dynamics by the articulated-body algorithm (RBDA Table 7.1), as
 * mbsfmu/dynamics/aba.py: qdd = M^-1 (tau - C qd - G + J^T f_ext). Multi-DoF joints use
 * U = IA S, D = S^T U, u = tau - S^T pA (RBDA Eqs. 7.43-7.45), D^-1 by Cholesky. */
#include <string.h>
#include "instance.h"
#include "spatial.h"

/* out = D^-1 (n x n, leading dimension 6) of a symmetric positive definite D by D = L L^T;
 * non-finite for a singular D (reported by the callers as a non-finite result). */
static void spd_inverse(const double *D, int n, double *out)
{
    double L[36];
    int i, j, k, c;
    for (j = 0; j < n; j++) {
        double acc = D[6 * j + j];
        for (k = 0; k < j; k++) acc -= L[6 * j + k] * L[6 * j + k];
        L[6 * j + j] = acc > 0.0 ? sqrt(acc) : NAN;
        for (i = j + 1; i < n; i++) {
            acc = D[6 * i + j];
            for (k = 0; k < j; k++) acc -= L[6 * i + k] * L[6 * j + k];
            L[6 * i + j] = acc / L[6 * j + j];
        }
    }
    for (c = 0; c < n; c++) {                                 /* L L^T x = e_c */
        for (i = 0; i < n; i++) {
            double acc = (i == c) ? 1.0 : 0.0;
            for (k = 0; k < i; k++) acc -= L[6 * i + k] * out[6 * k + c];
            out[6 * i + c] = acc / L[6 * i + i];
        }
        for (i = n - 1; i >= 0; i--) {
            double acc = out[6 * i + c];
            for (k = i + 1; k < n; k++) acc -= L[6 * k + i] * out[6 * k + c];
            out[6 * i + c] = acc / L[6 * i + i];
        }
    }
}

void mbs_aba_core(mbs_sim *s, const double *qd, const double *tau, double *qdd)
{
    int N = s->N, i, j, k, l;
    double *v = s->v, *c = s->c, *a = s->a, *pA = s->pA, *IA = s->IA, *U = s->U, *Dinv = s->Dinv, *u = s->uu;
    for (k = 0; k < 6; k++) v[k] = 0.0;
    for (i = 1; i <= N; i++) {                                /* outward: v_i, c_i, IA_i = I_i, pA_i */
        const double *S = s->S + 36 * i;
        double vJ[6] = {0, 0, 0, 0, 0, 0};
        for (j = 0; j < s->nvj[i]; j++)
            for (k = 0; k < 6; k++) vJ[k] += M6(S, k, j) * qd[s->iv[i] + j];
        X_motion(s->E + 9 * i, s->r + 3 * i, v + 6 * s->parent[i], v + 6 * i);
        for (k = 0; k < 6; k++) v[6 * i + k] += vJ[k];
        crm_mul(v + 6 * i, vJ, c + 6 * i);                    /* c_i = v_i x vJ */
        memcpy(IA + 36 * i, s->I + 36 * i, sizeof(double) * 36);
        bias_force(s->I + 36 * i, v + 6 * i, pA + 6 * i);     /* pA_i = v_i x* I_i v_i - f_ext_i */
        for (k = 0; k < 6; k++) pA[6 * i + k] -= s->fext[6 * i + k];
    }
    for (i = N; i >= 1; i--) {                                /* inward: U_i, D_i^-1, u_i; Ia, pa */
        const double *S = s->S + 36 * i;
        double *IAi = IA + 36 * i, *Ui = U + 36 * i, *Di = Dinv + 36 * i, *ui = u + 6 * i;
        int n = s->nvj[i], lam = s->parent[i], b;
        double D[36];
        if (n == 1) {                                         /* 1-DoF: the same equations, D a number */
            double sv[6], d = 0.0, sp = 0.0, Di1, ui1;
            for (k = 0; k < 6; k++) sv[k] = M6(S, k, 0);
            for (k = 0; k < 6; k++) {
                double acc = 0.0;
                for (l = 0; l < 6; l++) acc += M6(IAi, k, l) * sv[l];
                M6(Ui, k, 0) = acc;
            }
            for (k = 0; k < 6; k++) {
                d += sv[k] * M6(Ui, k, 0);
                sp += sv[k] * pA[6 * i + k];
            }
            Di1 = 1.0 / d;
            ui1 = tau[s->iv[i]] - sp;
            Di[0] = Di1;
            ui[0] = ui1;
            if (lam > 0) {
                double Ia[36], pa[6], Uc[6], Du = Di1 * ui1;
                for (k = 0; k < 6; k++) {                     /* Ia = IA - U U^T / D */
                    double UDk = M6(Ui, k, 0) * Di1;
                    for (l = 0; l < 6; l++) M6(Ia, k, l) = M6(IAi, k, l) - UDk * M6(Ui, l, 0);
                }
                for (k = 0; k < 6; k++) {                     /* pa = pA + Ia c + U u / D */
                    double acc = 0.0;
                    for (l = 0; l < 6; l++) acc += M6(Ia, k, l) * c[6 * i + l];
                    Uc[k] = acc;
                }
                for (k = 0; k < 6; k++) pa[k] = pA[6 * i + k] + Uc[k] + M6(Ui, k, 0) * Du;
                XT_I_X_add(s->E + 9 * i, s->r + 3 * i, Ia, IA + 36 * lam);
                XT_force_add(s->E + 9 * i, s->r + 3 * i, pa, pA + 6 * lam);
            }
            continue;
        }
        for (k = 0; k < 6; k++)                               /* U = IA S */
            for (b = 0; b < n; b++) {
                double acc = 0.0;
                for (l = 0; l < 6; l++) acc += M6(IAi, k, l) * M6(S, l, b);
                M6(Ui, k, b) = acc;
            }
        for (j = 0; j < n; j++) {                             /* D = S^T U, u = tau - S^T pA */
            double acc = 0.0;
            for (b = 0; b < n; b++) {
                double d = 0.0;
                for (k = 0; k < 6; k++) d += M6(S, k, j) * M6(Ui, k, b);
                D[6 * j + b] = d;
            }
            for (k = 0; k < 6; k++) acc += M6(S, k, j) * pA[6 * i + k];
            ui[j] = tau[s->iv[i] + j] - acc;
        }
        if (n == 1) Di[0] = 1.0 / D[0];
        else if (n > 1) spd_inverse(D, n, Di);
        if (lam > 0) {
            double Ia[36], pa[6], UD[36], Du[6];
            for (k = 0; k < 6; k++)                           /* UD = U D^-1 */
                for (b = 0; b < n; b++) {
                    double acc = 0.0;
                    for (l = 0; l < n; l++) acc += M6(Ui, k, l) * Di[6 * l + b];
                    M6(UD, k, b) = acc;
                }
            for (k = 0; k < 6; k++)                           /* Ia = IA - U D^-1 U^T */
                for (l = 0; l < 6; l++) {
                    double acc = 0.0;
                    for (b = 0; b < n; b++) acc += M6(UD, k, b) * M6(Ui, l, b);
                    M6(Ia, k, l) = M6(IAi, k, l) - acc;
                }
            for (b = 0; b < n; b++) {                         /* D^-1 u */
                double acc = 0.0;
                for (l = 0; l < n; l++) acc += Di[6 * b + l] * ui[l];
                Du[b] = acc;
            }
            for (k = 0; k < 6; k++) {                         /* pa = pA + Ia c + U D^-1 u */
                double acc = 0.0, acc2 = 0.0;
                for (l = 0; l < 6; l++) acc += M6(Ia, k, l) * c[6 * i + l];
                for (b = 0; b < n; b++) acc2 += M6(Ui, k, b) * Du[b];
                pa[k] = pA[6 * i + k] + acc + acc2;
            }
            XT_I_X_add(s->E + 9 * i, s->r + 3 * i, Ia, IA + 36 * lam);   /* IA_lambda += Xup^T Ia Xup */
            XT_force_add(s->E + 9 * i, s->r + 3 * i, pa, pA + 6 * lam); /* pA_lambda += Xup^T pa */
        }
    }
    for (k = 0; k < 6; k++) a[k] = (k < 3) ? 0.0 : -s->grav[k - 3];   /* a_0 = -a_grav */
    for (i = 1; i <= N; i++) {                                /* outward: qdd_i, a_i */
        const double *S = s->S + 36 * i, *Ui = U + 36 * i, *Di = Dinv + 36 * i, *ui = u + 6 * i;
        int n = s->nvj[i], b;
        double ap[6], w[6];
        X_motion(s->E + 9 * i, s->r + 3 * i, a + 6 * s->parent[i], ap);   /* a' = Xup a_lambda + c_i */
        for (k = 0; k < 6; k++) ap[k] += c[6 * i + k];
        for (b = 0; b < n; b++) {                             /* w = u - U^T a' */
            double acc = 0.0;
            for (k = 0; k < 6; k++) acc += M6(Ui, k, b) * ap[k];
            w[b] = ui[b] - acc;
        }
        for (b = 0; b < n; b++) {                             /* qdd_i = D^-1 w */
            double acc = 0.0;
            for (l = 0; l < n; l++) acc += Di[6 * b + l] * w[l];
            qdd[s->iv[i] + b] = acc;
        }
        for (k = 0; k < 6; k++) {                             /* a_i = a' + S qdd_i */
            double acc = 0.0;
            for (b = 0; b < n; b++) acc += M6(S, k, b) * qdd[s->iv[i] + b];
            a[6 * i + k] = ap[k] + acc;
        }
    }
}
