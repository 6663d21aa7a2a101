/* crba.c - joint-space inertia by the composite-rigid-body algorithm (RBDA Table 6.2), as
 * mbsfmu/dynamics/crba.py. M (nv x nv, row-major), symmetric positive definite.
 *
 * The products with Xup_i use its structure when E_i rotates about a coordinate axis (s->erot:
 * spatial.h "Structured products"), or about one in a frame turned by quarter turns (s->eunit: the
 * _pm products below), the terms with E's exact zeros and ones left out, the others
 * added in the same order): the same numbers as the dense formulas (mbs_sim_set_dense switches
 * them off; tests/engine/test_aba_structure.py compares the two bit for bit). A one-DoF joint's
 * column of F = Ic_i S_i goes up the chain as a 6-vector, each step's product inlined (the same
 * operations in the same order as XT_force_cols_k: 7-DoF arm 0.95 -> 0.85 us, G1 2.8 -> 2.3 us).
 * The composite inertias Ic_i are carried in compact form (m, h, Ibar: below), not as 6 x 6
 * matrices: the transform to the parent rotates h and Ibar's upper triangle and shifts them in
 * closed form (7-DoF arm 0.81 -> 0.57 us, G1 2.40 -> 1.72 us from Python with out=; M's last bits
 * changed, within N eps of the reference: tests/engine/test_mass_matrix_rounding.py). */
#include <string.h>
#include "instance.h"
#include "spatial.h"

/* Signed-permutation structure (s->eunit = 3 kr + kc): E's row kr is e_kc^T and its column kc is
 * e_kr, each times u = E[kr][kc] = +-1 (a joint rotating about e_kr in a frame turned by quarter
 * turns). The products below leave out the terms with those exact zeros and add the others in the
 * dense formulas' order; the terms with u are exact (u x = +-x), so for finite values they give
 * the dense numbers (tests/engine/test_aba_structure.py). kr = kc is erot's case with u = +-1. */
#define PM_LO(k) AX_LO(k)                                     /* the two indices other than k, ascending */
#define PM_HI(k) AX_HI(k)

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

/* Composite inertias in compact form (RBDA Sec. 2.13, Eqs. 2.62-2.63): a rigid-body inertia
 * I = [[Ibar, hx], [hx^T, m 1]] is held as its 13 numbers Ibar (3 x 3 about the body origin,
 * body axes, [kg m^2]), h = m c ([kg m]) and m ([kg]), at IC_IB, IC_H, IC_M of its 36-slot in
 * s->Ic; a sum of rigid-body inertias is one (RBDA Sec. 2.13), so every Ic_i is. Only Ibar's upper
 * triangle is summed; Ibar's lower triangle is mirrored from it when Ic_i is complete. */
#define IC_IB 0
#define IC_H 9
#define IC_M 12

/* the compact form of a body's inertia as model.c builds it, [[I_c + m C C^T, m C], [m C^T, m 1]],
 * C = skew(c): Ibar the top left block, h = m c read from m C (exactly: m (-c_k) = -(m c_k)) */
MBS_INLINE void compact_of(const double *I, double *Ic)
{
    int a, b;
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++) Ic[IC_IB + 3 * a + b] = M6(I, a, b);
    Ic[IC_H + 0] = M6(I, 2, 4);
    Ic[IC_H + 1] = M6(I, 0, 5);
    Ic[IC_H + 2] = M6(I, 1, 3);
    Ic[IC_M] = M6(I, 3, 3);
}

/* the full 6 x 6 of a compact inertia (multi-DoF joints' F = Ic S by IA_S) */
MBS_INLINE void compact_to_6x6(const double *Ic, double *I)
{
    const double *h = Ic + IC_H;
    double B[9];
    int a, b;
    B[0] = 0.0;   B[1] = -h[2]; B[2] = h[1];
    B[3] = h[2];  B[4] = 0.0;   B[5] = -h[0];
    B[6] = -h[1]; B[7] = h[0];  B[8] = 0.0;
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++) {
            M6(I, a, b) = Ic[IC_IB + 3 * a + b];
            M6(I, a, 3 + b) = B[3 * a + b];
            M6(I, 3 + b, a) = B[3 * a + b];
            M6(I, 3 + a, 3 + b) = a == b ? Ic[IC_M] : 0.0;
        }
}

/* P += Xup^T Ic Xup for Xup = (E, r) (RBDA Table 2.8's rigid-body inertia transform, taken
 * backwards), from g = E^T h and the upper triangle of Ibar_E = E^T Ibar E (below):
 *     m' = m,  h' = g + m r,  Ibar' = Ibar_E - rx h'x - gx rx,
 * whose entries, with ax bx = b a^T - (a.b) 1 and s = g + h':
 *     Ibar'_ab = Ibar_E_ab - (h'_a r_b + r_a g_b) (a != b),  Ibar'_aa = Ibar_E_aa + sum_{b != a} r_b s_b.
 * The one place each product (dense and structured) does the shift, in one order of operations. */
MBS_INLINE void compact_shift_add(const double *IbE, const double *g, double m, const double *r, double *P)
{
    double hp[3], rs[3];
    int k;
    for (k = 0; k < 3; k++) {
        hp[k] = g[k] + m * r[k];
        rs[k] = r[k] * (g[k] + hp[k]);
    }
    P[IC_IB + 0] += IbE[0] + (rs[1] + rs[2]);
    P[IC_IB + 4] += IbE[4] + (rs[0] + rs[2]);
    P[IC_IB + 8] += IbE[8] + (rs[0] + rs[1]);
    P[IC_IB + 1] += IbE[1] - (hp[0] * r[1] + r[0] * g[1]);
    P[IC_IB + 2] += IbE[2] - (hp[0] * r[2] + r[0] * g[2]);
    P[IC_IB + 5] += IbE[5] - (hp[1] * r[2] + r[1] * g[2]);
    for (k = 0; k < 3; k++) P[IC_H + k] += hp[k];
    P[IC_M] += m;
}

/* g = E^T h and the upper triangle of out = E^T Ib E (n = Ib E, out = E^T n: ROT_N, ROT_OUT's
 * order), dense */
MBS_INLINE void compact_rotate(const double *E, const double *Ib, const double *h, double *out, double *g)
{
    double n[9];
    int a, b;
    for (b = 0; b < 3; b++) g[b] = E[b] * h[0] + E[3 + b] * h[1] + E[6 + b] * h[2];
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++) n[3 * a + b] = Ib[3 * a] * E[b] + Ib[3 * a + 1] * E[3 + b] + Ib[3 * a + 2] * E[6 + b];
    for (a = 0; a < 3; a++)
        for (b = a; b < 3; b++) out[3 * a + b] = ROT_OUT(E, n, a, b);
}

/* the same for E a rotation about e_k (rot_n_ax, rot_out_ax's terms, spatial.h) */
MBS_INLINE void compact_rotate_ax(int k, const double *E, const double *Ib, const double *h, double *out, double *g)
{
    double n[9];
    int lo = AX_LO(k), hi = AX_HI(k), a, b, j;
    g[k] = h[k];
    for (j = 0; j < 2; j++) {
        b = j == 0 ? lo : hi;
        g[b] = E[3 * lo + b] * h[lo] + E[3 * hi + b] * h[hi];
    }
    for (a = 0; a < 3; a++) {
        n[3 * a + k] = Ib[3 * a + k];
        for (j = 0; j < 2; j++) {
            b = j == 0 ? lo : hi;
            n[3 * a + b] = Ib[3 * a + lo] * E[3 * lo + b] + Ib[3 * a + hi] * E[3 * hi + b];
        }
    }
    for (a = 0; a < 3; a++)
        for (b = a; b < 3; b++)
            out[3 * a + b] = a == k ? n[3 * k + b] : E[3 * lo + a] * n[3 * lo + b] + E[3 * hi + a] * n[3 * hi + b];
}

/* the same for E's signed-permutation structure (eunit = 3 kr + kc, u = E[kr][kc], above) */
MBS_INLINE void compact_rotate_pm(int kr, int kc, const double *E, const double *Ib, const double *h, double *out,
                                  double *g)
{
    double n[9], u = E[3 * kr + kc];
    int c1 = PM_LO(kr), c2 = PM_HI(kr), a, b;
    for (b = 0; b < 3; b++) g[b] = b == kc ? u * h[kr] : E[3 * c1 + b] * h[c1] + E[3 * c2 + b] * h[c2];
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++)
            n[3 * a + b] = b == kc ? Ib[3 * a + kr] * u : Ib[3 * a + c1] * E[3 * c1 + b] + Ib[3 * a + c2] * E[3 * c2 + b];
    for (a = 0; a < 3; a++)
        for (b = a; b < 3; b++)
            out[3 * a + b] = a == kc ? u * n[3 * kr + b] : E[3 * c1 + a] * n[3 * c1 + b] + E[3 * c2 + a] * n[3 * c2 + b];
}

/* P += Xup^T Ic Xup (compact_shift_add) with E's structure by eunit (MBS_PM_DISPATCH) */
static void compact_XT_I_X_add_k(int eu, const double *E, const double *r, const double *Ic, double *P)
{
    double IbE[9], g[3];
#define AX(K) compact_rotate_ax(K, E, Ic + IC_IB, Ic + IC_H, IbE, g)
#define PM(R, C) compact_rotate_pm(R, C, E, Ic + IC_IB, Ic + IC_H, IbE, g)
    MBS_PM_DISPATCH(eu, AX, PM, compact_rotate(E, Ic + IC_IB, Ic + IC_H, IbE, g))
#undef AX
#undef PM
    compact_shift_add(IbE, g, Ic[IC_M], r, P);
}

/* f = Ic S for a one-DoF joint with axis a (RBDA Eq. 2.63): revolute S = [a; 0] gives
 * [Ibar a; a x h], prismatic S = [0; a] gives [h x a; m a] */
MBS_INLINE void compact_times_S(int jt, const double *axis, const double *Ic, double *f)
{
    const double *Ib = Ic + IC_IB, *h = Ic + IC_H;
    int k;
    if (jt == MBS_PRISMATIC) {
        f[0] = h[1] * axis[2] - h[2] * axis[1];
        f[1] = h[2] * axis[0] - h[0] * axis[2];
        f[2] = h[0] * axis[1] - h[1] * axis[0];
        for (k = 0; k < 3; k++) f[3 + k] = Ic[IC_M] * axis[k];
        return;
    }
    for (k = 0; k < 3; k++) f[k] = Ib[3 * k] * axis[0] + Ib[3 * k + 1] * axis[1] + Ib[3 * k + 2] * axis[2];
    f[3] = axis[1] * h[2] - axis[2] * h[1];
    f[4] = axis[2] * h[0] - axis[0] * h[2];
    f[5] = axis[0] * h[1] - axis[1] * h[0];
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
    double *Ic = s->Ic, F[36], I6[36];
    for (i = 1; i <= N; i++) compact_of(s->I + 36 * i, Ic + 36 * i);   /* Ic_i = I_i */
    for (k = 0; k < nv * nv; k++) M[k] = 0.0;
    for (i = N; i >= 1; i--) {                                /* Ic_lambda += Xup_i^T Ic_i Xup_i */
        double *Ib = Ic + 36 * i + IC_IB;
        Ib[3] = Ib[1]; Ib[6] = Ib[2]; Ib[7] = Ib[5];          /* Ic_i complete: its lower triangle */
        if (s->parent[i] > 0)
            compact_XT_I_X_add_k((int)s->eunit[i], s->E + 9 * i, s->r + 3 * i, Ic + 36 * i, Ic + 36 * s->parent[i]);
    }
    for (i = 1; i <= N; i++) {
        const double *axis = s->body_f + BODY_F * i + 12;
        int n = s->nvj[i], si = s->iv[i], jt = s->jtype[i];
        double col[6], Sc[6];
        if (n == 1) {                                         /* one column: carried as a 6-vector */
            double f[6], o[6];
            compact_times_S(jt, axis, Ic + 36 * i, f);        /* f = Ic_i S_i, M_ii = S_i^T f (ST_mul) */
            a = jt == MBS_PRISMATIC ? 3 : 0;
            M[nv * si + si] = axis[0] * f[a] + axis[1] * f[a + 1] + axis[2] * f[a + 2];
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
        if (n == 0) continue;
        compact_to_6x6(Ic + 36 * i, I6);
        IA_S(jt, axis, I6, F);                                /* F = Ic_i S_i (S's structure, spatial.h) */
        for (a = 0; a < n; a++) {                             /* M_ii = S_i^T F */
            for (k = 0; k < 6; k++) col[k] = M6(F, k, a);
            ST_mul(jt, axis, col, Sc);
            for (b = 0; b < n; b++) M[nv * (si + a) + si + b] = Sc[b];
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
