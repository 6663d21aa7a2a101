/* aba.c - forward dynamics by the articulated-body algorithm (RBDA Table 7.1), as
 * mbsfmu/dynamics/aba.py: qdd = M^-1 (tau - C qd - G + J^T f_ext). Multi-DoF joints use
 * U = IA S, D = S^T U, u = tau - S^T pA (RBDA Eqs. 7.43-7.45), D = L L^T by Cholesky.
 *
 * The products with S use its known structure (spatial.h S_mul, ST_mul, IA_S), so U = IA S is
 * three-term sums or columns of IA, never a dense 6 x 6 x n product; a joint axis along a
 * coordinate axis and a transform that rotates about one (s->sax, s->erot) leave out further
 * products with exact zeros and ones, giving the same numbers (spatial.h, "Structured products").
 * The articulated inertias are symmetric (I_i is; every update adds a symmetric matrix), so only
 * their upper triangles are computed (Ia, and Xup^T Ia Xup by XT_I_X_sym_k) and mirrored before
 * use; not a parent's IA when its joint is revolute along a coordinate axis, where the products
 * with it (IA_S_k, Ia's update) read its upper triangle only. A leaf body's IA is its I_i (read in
 * place, not copied); a parent's IA starts as its I_i in the first child's update (s->first_add),
 * not by a copy. A revolute joint about +-e_k, most joints of real robots, takes
 * the three passes' steps in functions compiled once per k (velocity_rev_ax, inward_rev_ax,
 * acceleration_rev_ax): the general steps' operations in the same order, without the dispatches on
 * the joint type and axis. These steps keep in local arrays what they compute and what they read
 * after a store: C lets a store through one double pointer change what any other points to, so
 * the compiler would otherwise store and read again v_i, a_i, U_i and the like, and read E_i, r_i
 * and pA_i anew after each store into the parent (in the passes' chains of parent and child, the
 * next step waited on those round trips; G1 5 % faster, the same numbers). */
#include <string.h>
#include "instance.h"
#include "spatial.h"

/* L (n x n, leading dimension 6, lower) with D = L L^T for a symmetric positive definite D
 * (Cholesky; Golub & Van Loan, Matrix Computations, Sec. 4.2), used by triangular solves in
 * place of aba.py's explicit D^-1; the diagonal holds 1 / L_jj. Non-finite for a singular D
 * (reported by the callers as a non-finite result). */
static void cholesky(const double *D, int n, double *L)
{
    int i, j, k;
    for (j = 0; j < n; j++) {
        double acc = D[6 * j + j];
        for (k = 0; k < j; k++) acc -= L[6 * j + k] * L[6 * j + k];
        L[6 * j + j] = acc > 0.0 ? 1.0 / sqrt(acc) : NAN;
        for (i = j + 1; i < n; i++) {
            acc = D[6 * i + j];
            for (k = 0; k < j; k++) acc -= L[6 * i + k] * L[6 * j + k];
            L[6 * i + j] = acc * L[6 * j + j];
        }
    }
}

/* x (n) = L^-1 b (forward substitution; L from cholesky, stride: x's element spacing) */
static inline void forward_sub(const double *L, int n, const double *b, int b_stride, double *x, int stride)
{
    int i, k;
    for (i = 0; i < n; i++) {
        double acc = b[b_stride * i];
        for (k = 0; k < i; k++) acc -= L[6 * i + k] * x[stride * k];
        x[stride * i] = acc * L[6 * i + i];
    }
}

/* x (n) = L^-T y in place (back substitution) */
static inline void back_sub(const double *L, int n, double *x)
{
    int i, k;
    for (i = n - 1; i >= 0; i--) {
        double acc = x[i];
        for (k = i + 1; k < n; k++) acc -= L[6 * k + i] * x[k];
        x[i] = acc * L[6 * i + i];
    }
}

/* the lower triangle of a symmetric 6 x 6 from its upper one */
static inline void mirror6(double *A)
{
    int k, l;
    for (k = 1; k < 6; k++)
        for (l = 0; l < k; l++) M6(A, k, l) = M6(A, l, k);
}

/* The outward steps (below) of body i whose revolute joint turns about +-e_k (s->sax = k), as
 * inward_rev_ax: v_i, c_i, pA_i, and then qdd_i, a_i. The joint's velocity S qd = w e_k and its
 * acceleration S qdd have one nonzero entry, so v_i + S qd, a' + S qdd and c_i = v_i x (w e_k) add
 * and multiply that entry only (the general step adds S's exact zeros): the same numbers but for
 * the sign of a zero. c_i's entries k and 3 + k are exact zeros. */
MBS_INLINE void velocity_rev_ax(int k, int xk, mbs_sim *s, int i, const double *qd, const double *fext)
{
    double vi[6], vl[6], *ci = s->c + 6 * i, *pAi = s->pA + 6 * i;   /* vi, vl: see the file's comment */
    double w = s->body_f[BODY_F * i + 12 + k] * qd[s->iv[i]];
    int k1 = (k + 1) % 3, k2 = (k + 2) % 3, r;
    memcpy(vl, s->v + 6 * s->parent[i], sizeof vl);
    X_motion_k(xk, s->E + 9 * i, s->r + 3 * i, vl, vi);
    vi[k] += w;                                               /* v_i = Xup v_lambda + S qd */
    memcpy(s->v + 6 * i, vi, sizeof vi);
    ci[k] = ci[3 + k] = 0.0;                                  /* c_i = v_i x (w e_k) (crm_joint) */
    ci[k1] = vi[k2] * w;
    ci[k2] = -(vi[k1] * w);
    ci[3 + k1] = vi[3 + k2] * w;
    ci[3 + k2] = -(vi[3 + k1] * w);
    rigid_bias_force(s->I + 36 * i, vi, pAi);
    if (fext)
        for (r = 0; r < 6; r++) pAi[r] -= fext[6 * i + r];
}

MBS_INLINE void acceleration_rev_ax(int k, int xk, mbs_sim *s, int i, double *qdd)
{
    const double *Ui = s->U + 36 * i, *ci = s->c + 6 * i;
    double ap[6], al[6], acc = 0.0, qi;                       /* ap, al, qi: see the file's comment */
    int r;
    memcpy(al, s->a + 6 * s->parent[i], sizeof al);
    X_motion_k(xk, s->E + 9 * i, s->r + 3 * i, al, ap);
    for (r = 0; r < 6; r++)
        if (r != k && r != 3 + k) ap[r] += ci[r];             /* a' = Xup a_lambda + c_i */
    for (r = 0; r < 6; r++) acc += M6(Ui, r, 0) * ap[r];
    qi = s->Dinv[36 * i] * (s->uu[6 * i] - acc);
    ap[k] += s->body_f[BODY_F * i + 12 + k] * qi;             /* a_i = a' + S qdd_i */
    qdd[s->iv[i]] = qi;
    memcpy(s->a + 6 * i, ap, sizeof ap);
}

/* The inward step (below) of body i whose revolute joint turns about +-e_k (s->sax = k): the
 * same operations in the same order as the general step, with k and xk constants (each caller
 * passes them), so no product dispatches on them again. xk = k: X_i rotates about e_k too
 * (R_tree = 1 or a rotation about e_k, s->erot = k); xk = -1: any rotation (a frame turned about
 * another axis). */
MBS_INLINE void inward_rev_ax(int k, int xk, mbs_sim *s, int i, const double *tau, const double *IAi)
{
    double Ui[6], Li, ui, E[9], r3[3], Ia[36], pa[6], Iac[6], ci[6], pAi[6], sg = s->body_f[BODY_F * i + 12 + k];
    int lam = s->parent[i], r, l;                             /* U_i, L_i, u_i, and copies: the file's comment */
    for (r = 0; r < k; r++) Ui[r] = M6(IAi, r, k) * sg;       /* U = IA S (IA_S_k: upper triangle) */
    for (r = k; r < 6; r++) Ui[r] = M6(IAi, k, r) * sg;
    memcpy(pAi, s->pA + 6 * i, sizeof pAi);
    ui = tau[s->iv[i]] - sg * pAi[k];                         /* u = tau - S^T pA */
    Li = 1.0 / (sg * Ui[k]);                                  /* D = S^T U */
    for (r = 0; r < 6; r++) s->U[36 * i + 6 * r] = Ui[r];
    s->Dinv[36 * i] = Li;
    s->uu[6 * i] = ui;
    if (lam == 0) return;
    for (r = 0; r < 6; r++) {                                 /* Ia = IA - U U^T / D, upper triangle */
        double UDr = Ui[r] * Li;
        for (l = r; l < 6; l++) M6(Ia, r, l) = M6(IAi, r, l) - UDr * Ui[l];
    }
    mirror6(Ia);
    memcpy(ci, s->c + 6 * i, sizeof ci);
    memcpy(E, s->E + 9 * i, sizeof E);
    memcpy(r3, s->r + 3 * i, sizeof r3);
    for (r = 0; r < 6; r++) pa[r] = Ui[r] * (Li * ui);        /* U D^-1 u */
    mat6_vec_rev_ax(k, Ia, ci, Iac);                          /* pa = pA + Ia c + U D^-1 u */
    for (r = 0; r < 6; r++) pa[r] = pAi[r] + Iac[r] + pa[r];
    XT_I_X_sym_ax(xk, E, r3, Ia, s->first_add[i] != 0.0 ? s->I + 36 * lam : s->IA + 36 * lam, s->IA + 36 * lam);
    XT_force_add_k(xk, E, r3, pa, s->pA + 6 * lam);
}

/* calls STEP(k, xk, ...) for body i's revolute joint about +-e_k, ka = s->rev_ax[i] = 2 k + (xk = k),
 * with constant k and xk = k (s->erot = k) or -1 */
#define REV_AX_DISPATCH(ka, STEP, ...)                                                           \
    switch (ka) {                                                                              \
    case 0: STEP(0, -1, __VA_ARGS__); break;                                                   \
    case 1: STEP(0, 0, __VA_ARGS__); break;                                                    \
    case 2: STEP(1, -1, __VA_ARGS__); break;                                                   \
    case 3: STEP(1, 1, __VA_ARGS__); break;                                                    \
    case 4: STEP(2, -1, __VA_ARGS__); break;                                                   \
    default: STEP(2, 2, __VA_ARGS__); break;                                                   \
    }

MBS_INLINE void mbs_aba_core_body(mbs_sim *s, const double *qd, const double *tau, const double *fext, double *qdd)
{
    int N = s->N, i, k, l;
    double *v = s->v, *c = s->c, *a = s->a, *pA = s->pA, *IA = s->IA, *U = s->U, *Lc = s->Dinv, *u = s->uu;
    s->v_at_x = 0;
    for (k = 0; k < 6; k++) v[k] = 0.0;
    for (i = 1; i <= N; i++) {                                /* outward: v_i, c_i, pA_i */
        double vJ[6];
        if (s->rev_ax[i] >= 0) {
            REV_AX_DISPATCH(s->rev_ax[i], velocity_rev_ax, s, i, qd, fext)
            continue;
        }
        S_mul(s->jtype[i], s->body_f + BODY_F * i + 12, qd + s->iv[i], vJ);
        X_motion_k((int)s->erot[i], s->E + 9 * i, s->r + 3 * i, v + 6 * s->parent[i], v + 6 * i);
        for (k = 0; k < 6; k++) v[6 * i + k] += vJ[k];
        if (s->dense) {                                       /* c_i = v_i x vJ, pA_i = v_i x* I_i v_i - f_ext_i */
            crm_mul(v + 6 * i, vJ, c + 6 * i);
            bias_force(s->I + 36 * i, v + 6 * i, pA + 6 * i);
        } else {                                              /* the same numbers, without S's and I's zeros */
            crm_joint(s->jtype[i], v + 6 * i, vJ, c + 6 * i);
            rigid_bias_force(s->I + 36 * i, v + 6 * i, pA + 6 * i);
        }
        if (fext)
            for (k = 0; k < 6; k++) pA[6 * i + k] -= fext[6 * i + k];
    }
    for (i = N; i >= 1; i--) {                                /* inward: U_i, D_i = L L^T, u_i; Ia, pa */
        const double *axis = s->body_f + BODY_F * i + 12;
        const double *IAi = s->leaf[i] != 0.0 ? s->I + 36 * i : IA + 36 * i;
        double *Ui = U + 36 * i, *Li = Lc + 36 * i, *ui = u + 6 * i, *ci = c + 6 * i;
        int n = s->nvj[i], lam = s->parent[i], jt = s->jtype[i], sj = (int)s->sax[i], ek = (int)s->erot[i], b, j;
        double Ia[36], pa[6], sp[6], Iac[6];
        if (s->rev_ax[i] >= 0) {                              /* revolute about a coordinate axis */
            REV_AX_DISPATCH(s->rev_ax[i], inward_rev_ax, s, i, tau, IAi)
            continue;
        }
        if (s->leaf[i] == 0.0) mirror6(IA + 36 * i);          /* the children wrote its upper triangle */
        IA_S_k(jt, sj, axis, IAi, Ui);                        /* U = IA S */
        ST_mul_k(jt, sj, axis, pA + 6 * i, sp);               /* u = tau - S^T pA */
        for (b = 0; b < n; b++) ui[b] = tau[s->iv[i] + b] - sp[b];
        if (n == 0) {                                         /* fixed joint: the body's inertia passes on whole */
            if (lam == 0) continue;
            memcpy(Ia, IAi, sizeof Ia);
            for (k = 0; k < 6; k++) pa[k] = 0.0;
        } else if (n == 1) {                                  /* D = S^T U a number: Li[0] = 1 / D */
            double d[6] = {0}, U0[6];                         /* d: room for any joint's S^T (a compiler */
            for (k = 0; k < 6; k++) U0[k] = M6(Ui, k, 0);     /* checking ST_mul's every branch sees it) */
            ST_mul_k(jt, sj, axis, U0, d);
            Li[0] = 1.0 / d[0];
            if (lam == 0) continue;
            for (k = 0; k < 6; k++) {                         /* Ia = IA - U U^T / D, upper triangle */
                double UDk = M6(Ui, k, 0) * Li[0];
                for (l = k; l < 6; l++) M6(Ia, k, l) = M6(IAi, k, l) - UDk * M6(Ui, l, 0);
            }
            mirror6(Ia);
            for (k = 0; k < 6; k++) pa[k] = M6(Ui, k, 0) * (Li[0] * ui[0]);   /* U D^-1 u */
        } else {
            double D[36], Y[36], z[6];
            for (b = 0; b < n; b++) {                         /* D = S^T U (column b: S^T U[:, b]) */
                double col[6], Ub[6];
                for (k = 0; k < 6; k++) Ub[k] = M6(Ui, k, b);
                ST_mul(jt, axis, Ub, col);
                for (j = 0; j < n; j++) D[6 * j + b] = col[j];
            }
            cholesky(D, n, Li);
            if (lam == 0) continue;
            for (k = 0; k < 6; k++) forward_sub(Li, n, Ui + 6 * k, 1, Y + k, 6);   /* Y = L^-1 U^T (n x 6) */
            forward_sub(Li, n, ui, 1, z, 1);                  /* z = L^-1 u */
            for (k = 0; k < 6; k++)                           /* Ia = IA - U D^-1 U^T = IA - Y^T Y */
                for (l = k; l < 6; l++) {
                    double acc = 0.0;
                    for (j = 0; j < n; j++) acc += Y[6 * j + k] * Y[6 * j + l];
                    M6(Ia, k, l) = M6(IAi, k, l) - acc;
                }
            mirror6(Ia);
            for (k = 0; k < 6; k++) {                         /* U D^-1 u = Y^T z */
                double acc = 0.0;
                for (j = 0; j < n; j++) acc += Y[6 * j + k] * z[j];
                pa[k] = acc;
            }
        }
        mat6_vec(Ia, ci, Iac);                                /* pa = pA + Ia c + U D^-1 u */
        for (k = 0; k < 6; k++) pa[k] = pA[6 * i + k] + Iac[k] + pa[k];
        XT_I_X_sym_k(ek, s->E + 9 * i, s->r + 3 * i, Ia, s->first_add[i] != 0.0 ? s->I + 36 * lam : IA + 36 * lam,
                     IA + 36 * lam);                          /* IA_lambda = I_lambda + the children's Xup^T Ia Xup */
        XT_force_add_k(ek, s->E + 9 * i, s->r + 3 * i, pa, pA + 6 * lam);  /* pA_lambda += Xup^T pa */
    }
    for (k = 0; k < 6; k++) a[k] = (k < 3) ? 0.0 : -s->grav[k - 3];   /* a_0 = -a_grav */
    const int32_t *by_depth = s->by_depth;
    for (int o = 0; o < N; o++) {                             /* outward: qdd_i, a_i, by depth (model.c) */
        i = by_depth[o];
        const double *axis = s->body_f + BODY_F * i + 12, *Ui = U + 36 * i, *Li = Lc + 36 * i, *ui = u + 6 * i;
        int n = s->nvj[i], jt = s->jtype[i], b;
        double ap[6], w[6], Sq[6];
        double *qi = qdd + s->iv[i];
        if (s->rev_ax[i] >= 0) {
            REV_AX_DISPATCH(s->rev_ax[i], acceleration_rev_ax, s, i, qdd)
            continue;
        }
        X_motion_k((int)s->erot[i], s->E + 9 * i, s->r + 3 * i, a + 6 * s->parent[i], ap);   /* a' = Xup a_lambda + c_i */
        for (k = 0; k < 6; k++) ap[k] += c[6 * i + k];
        for (b = 0; b < n; b++) {                             /* w = u - U^T a' */
            double acc = 0.0;
            for (k = 0; k < 6; k++) acc += M6(Ui, k, b) * ap[k];
            w[b] = ui[b] - acc;
        }
        if (n == 1) {
            qi[0] = Li[0] * w[0];                             /* qdd_i = D^-1 w */
        } else if (n > 1) {
            forward_sub(Li, n, w, 1, qi, 1);                  /* qdd_i = L^-T L^-1 w */
            back_sub(Li, n, qi);
        }
        S_mul(jt, axis, qi, Sq);                              /* a_i = a' + S qdd_i */
        for (k = 0; k < 6; k++) a[6 * i + k] = ap[k] + Sq[k];
    }
}

MBS_AVX_COPIES(mbs_aba_core, (mbs_sim *s, const double *qd, const double *tau, const double *fext, double *qdd),
               (s, qd, tau, fext, qdd))

/* x (nv) = M(q)^-1 b: the articulated-body algorithm (RBDA Table 7.1) at qd = 0 with no gravity
 * and no external force, where v = c = 0 and the bias forces start at pA = 0, so its
 * tau - C qd - G + J^T f_ext is b and its qdd is M^-1 b (RBDA Sec. 7.3: ABA evaluates M^-1 tau
 * for a configuration; the articulated inertias depend on q only). IA, U and D = L L^T are those
 * the last mbs_aba_core left at this q (Xup in E, r), so only the force passes remain: inward
 * u = b - S^T pA, pA_lambda += Xup^T (pA + U D^-1 u); outward a' = Xup a_lambda,
 * qdd = D^-1 (u - U^T a'), a = a' + S qdd. s->f holds pA, then a (a body's pA is spent
 * before its a is written); x holds u, then qdd. b and x must not alias. */
void mbs_aba_solve(mbs_sim *s, const double *b, double *x)
{
    int N = s->N, i, k;
    double *f = s->f, *Lc = s->Dinv, *U = s->U;
    memset(f, 0, sizeof(double) * 6 * (size_t)(N + 1));
    for (i = N; i >= 1; i--) {                                /* inward: u_i, pA_lambda */
        const double *axis = s->body_f + BODY_F * i + 12, *Ui = U + 36 * i, *Li = Lc + 36 * i, *pAi = f + 6 * i;
        int n = s->nvj[i], lam = s->parent[i], jt = s->jtype[i], j;
        double *ui = x + s->iv[i], pa[6], sp[6];
        ST_mul_k(jt, (int)s->sax[i], axis, pAi, sp);
        for (j = 0; j < n; j++) ui[j] = b[s->iv[i] + j] - sp[j];
        if (lam == 0) continue;
        if (n == 1) {
            double t = Li[0] * ui[0];
            for (k = 0; k < 6; k++) pa[k] = pAi[k] + M6(Ui, k, 0) * t;
        } else if (n > 1) {                                   /* U D^-1 u = U L^-T L^-1 u */
            double z[6];
            forward_sub(Li, n, ui, 1, z, 1);
            back_sub(Li, n, z);
            for (k = 0; k < 6; k++) {
                double acc = 0.0;
                for (j = 0; j < n; j++) acc += M6(Ui, k, j) * z[j];
                pa[k] = pAi[k] + acc;
            }
        } else {
            for (k = 0; k < 6; k++) pa[k] = pAi[k];
        }
        XT_force_add_k((int)s->erot[i], s->E + 9 * i, s->r + 3 * i, pa, f + 6 * lam);
    }
    for (k = 0; k < 6; k++) f[k] = 0.0;                       /* a_0 = 0 (no gravity) */
    const int32_t *by_depth = s->by_depth;
    for (int o = 0; o < N; o++) {                             /* outward: qdd_i, a_i, by depth (model.c) */
        i = by_depth[o];
        const double *axis = s->body_f + BODY_F * i + 12, *Ui = U + 36 * i, *Li = Lc + 36 * i;
        int n = s->nvj[i], jt = s->jtype[i], j;
        double ap[6], Sq[6], *qi = x + s->iv[i];
        X_motion_k((int)s->erot[i], s->E + 9 * i, s->r + 3 * i, f + 6 * s->parent[i], ap);
        for (j = 0; j < n; j++) {                             /* w = u - U^T a' */
            double acc = 0.0;
            for (k = 0; k < 6; k++) acc += M6(Ui, k, j) * ap[k];
            qi[j] = qi[j] - acc;
        }
        if (n == 1) {
            qi[0] = Li[0] * qi[0];
        } else if (n > 1) {
            double w[6];
            for (j = 0; j < n; j++) w[j] = qi[j];
            forward_sub(Li, n, w, 1, qi, 1);
            back_sub(Li, n, qi);
        }
        S_mul(jt, axis, qi, Sq);
        for (k = 0; k < 6; k++) f[6 * i + k] = ap[k] + Sq[k];
    }
}
