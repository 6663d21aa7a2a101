/* crba.c - joint-space inertia by the composite-rigid-body algorithm (RBDA Table 6.2), as
 * mbsfmu/dynamics/crba.py. M (nv x nv, row-major), symmetric positive definite.
 *
 * The products with Xup_i use its structure when E_i rotates about a coordinate axis (s->erot:
 * spatial.h "Structured products"), or about one in a frame turned by quarter turns (s->eunit: the
 * _pm products below), the terms with E's exact zeros and ones left out, the others
 * added in the same order): the same numbers as the dense formulas (mbs_sim_set_dense switches
 * them off; tests/engine/test_aba_structure.py compares the two bit for bit). A one-DoF joint's
 * column of F = Ic_i S_i goes up the chain as a 6-vector, each step's product inlined (the same
 * operations in the same order as XT_force_cols_k: 7-DoF arm 0.95 -> 0.85 us, G1 2.8 -> 2.3 us). */
#include <string.h>
#include "instance.h"
#include "spatial.h"

/* out += Xup^T I Xup (XT_I_X_add) with E's structure: its rotated blocks by rotated_block_ax */
MBS_INLINE void XT_I_X_add_ax(int k, const double *E, const double *r, const double *I, double *out)
{
    double A[9], B[9], C[9];
    rotated_block_ax(k, E, I, 0, 0, A);
    rotated_block_ax(k, E, I, 0, 3, B);
    rotated_block_ax(k, E, I, 3, 3, C);
    shifted_blocks_add(A, B, C, r, out);
}

/* Signed-permutation structure (s->eunit = 3 kr + kc): E's row kr is e_kc^T and its column kc is
 * e_kr, each times u = E[kr][kc] = +-1 (a joint rotating about e_kr in a frame turned by quarter
 * turns). The products below leave out the terms with those exact zeros and add the others in the
 * dense formulas' order; the terms with u are exact (u x = +-x), so for finite values they give
 * the dense numbers (tests/engine/test_aba_structure.py). kr = kc is erot's case with u = +-1. */
#define PM_LO(k) AX_LO(k)                                     /* the two indices other than k, ascending */
#define PM_HI(k) AX_HI(k)

/* out = E^T M E for the 3x3 block M of I at (ro, co) (rotated_block): n = M E, out = E^T n */
MBS_INLINE void rotated_block_pm(int kr, int kc, const double *E, const double *I, int ro, int co, double *out)
{
    double n[9], u = E[3 * kr + kc];
    int c1 = PM_LO(kr), c2 = PM_HI(kr), a, b;
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++)
            n[3 * a + b] = b == kc ? M6(I, ro + a, co + kr) * u
                                   : M6(I, ro + a, co + c1) * E[3 * c1 + b] + M6(I, ro + a, co + c2) * E[3 * c2 + b];
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++)
            out[3 * a + b] = a == kc ? u * n[3 * kr + b] : E[3 * c1 + a] * n[3 * c1 + b] + E[3 * c2 + a] * n[3 * c2 + b];
}

/* out += Xup^T I Xup (XT_I_X_add) with E's signed-permutation structure */
MBS_INLINE void XT_I_X_add_pm(int kr, int kc, const double *E, const double *r, const double *I, double *out)
{
    double A[9], B[9], C[9];
    rotated_block_pm(kr, kc, E, I, 0, 0, A);
    rotated_block_pm(kr, kc, E, I, 0, 3, B);
    rotated_block_pm(kr, kc, E, I, 3, 3, C);
    shifted_blocks_add(A, B, C, r, out);
}

/* out += X^T f (XT_force_add) with E's signed-permutation structure */
MBS_INLINE void XT_force_add_pm(int kr, int kc, const double *E, const double *r, const double *f, double *out)
{
    double g[3], n[3], u = E[3 * kr + kc];
    int c1 = PM_LO(kr), c2 = PM_HI(kr), b;
    for (b = 0; b < 3; b++) {
        g[b] = b == kc ? u * f[3 + kr] : E[3 * c1 + b] * f[3 + c1] + E[3 * c2 + b] * f[3 + c2];
        n[b] = b == kc ? u * f[kr] : E[3 * c1 + b] * f[c1] + E[3 * c2 + b] * f[c2];
    }
    force_shift_add(n, g, r, out);
}

/* on s->eunit: erot's products (9 + k: E[k][k] = 1), the signed permutation's (3 kr + kc), else the
 * dense ones (-1); each _ax, _pm with constant indices. One code, one switch: a second test on erot
 * in the column loop cost G1 4 % (2.65 -> 2.77 us). */
#define MBS_PM_DISPATCH(eu, ax, pm, dense)                                                   \
    switch (eu) {                                                                              \
    case 9: ax(0); break;                                                                      \
    case 10: ax(1); break;                                                                     \
    case 11: ax(2); break;                                                                     \
    case 0: pm(0, 0); break;                                                                   \
    case 1: pm(0, 1); break;                                                                   \
    case 2: pm(0, 2); break;                                                                   \
    case 3: pm(1, 0); break;                                                                   \
    case 4: pm(1, 1); break;                                                                   \
    case 5: pm(1, 2); break;                                                                   \
    case 6: pm(2, 0); break;                                                                   \
    case 7: pm(2, 1); break;                                                                   \
    case 8: pm(2, 2); break;                                                                   \
    default: dense; break;                                                                     \
    }

static void XT_I_X_add_k(int eu, const double *E, const double *r, const double *I, double *out)
{
#define AX(K) XT_I_X_add_ax(K, E, r, I, out)
#define PM(R, C) XT_I_X_add_pm(R, C, E, r, I, out)
    MBS_PM_DISPATCH(eu, AX, PM, XT_I_X_add(E, r, I, out))
#undef AX
#undef PM
}

MBS_INLINE void XT_force_add_km(int eu, const double *E, const double *r, const double *f, double *out)
{
#define AX(K) XT_force_add_ax(K, E, r, f, out)
#define PM(R, C) XT_force_add_pm(R, C, E, r, f, out)
    MBS_PM_DISPATCH(eu, AX, PM, XT_force_add(E, r, f, out))
#undef AX
#undef PM
}

/* F[:, :n] = Xup^T F[:, :n] in place (XT_force_cols) with E's structure (XT_force_add_km) */
static void XT_force_cols_k(int eu, const double *E, const double *r, double *F, int n)
{
    int c, l;
    for (c = 0; c < n; c++) {
        double f[6], o[6] = {0, 0, 0, 0, 0, 0};
        for (l = 0; l < 6; l++) f[l] = M6(F, l, c);
        XT_force_add_km(eu, E, r, f, o);
        for (l = 0; l < 6; l++) M6(F, l, c) = o[l];
    }
}

void mbs_crba_core(mbs_sim *s, double *M)
{
    int N = s->N, nv = s->nv, i, j, a, b, k;
    double *Ic = s->Ic, F[36];
    memcpy(Ic, s->I, sizeof(double) * 36 * (size_t)(N + 1));  /* Ic_i = I_i */
    for (k = 0; k < nv * nv; k++) M[k] = 0.0;
    for (i = N; i >= 1; i--)                                  /* Ic_lambda += Xup_i^T Ic_i Xup_i */
        if (s->parent[i] > 0)
            XT_I_X_add_k((int)s->eunit[i], s->E + 9 * i, s->r + 3 * i, Ic + 36 * i, Ic + 36 * s->parent[i]);
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
        if (n == 1) {                                         /* one column: carried as a 6-vector */
            double f[6], o[6];
            for (k = 0; k < 6; k++) f[k] = M6(F, k, 0);
            for (j = i; s->parent[j] > 0;) {
                for (k = 0; k < 6; k++) o[k] = 0.0;
                XT_force_add_km((int)s->eunit[j], s->E + 9 * j, s->r + 3 * j, f, o);   /* f = Xup_j^T f */
                j = s->parent[j];
                ST_mul(s->jtype[j], s->body_f + BODY_F * j + 12, o, Sc);
                for (b = 0; b < s->nvj[j]; b++) M[nv * si + s->iv[j] + b] = M[nv * (s->iv[j] + b) + si] = Sc[b];
                for (k = 0; k < 6; k++) f[k] = o[k];
            }
            continue;
        }
        j = i;
        while (s->parent[j] > 0) {
            const double *axj;
            int sj, jtj;
            XT_force_cols_k((int)s->eunit[j], s->E + 9 * j, s->r + 3 * j, F, n); /* F = Xup_j^T F */
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
