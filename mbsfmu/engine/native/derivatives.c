/* derivatives.c - analytic derivatives of inverse and forward dynamics (Carpentier & Mansard,
 * "Analytical Derivatives of Rigid Body Dynamics Algorithms", RSS 2018).
 *
 * Citations: the paper's algorithm and equation numbers could not be checked against its text where
 * this was written, so its quantities are named instead of numbered (Psi_dot, Psi_ddot, B_i, the
 * ABA derivatives as -M^-1 times the RNEA ones); Pinocchio's computeRNEADerivatives
 * (rnea-derivatives.hxx, the authors' implementation) was the reference for the recursion, and
 * tests/engine/test_derivatives.py compares every result with it.
 *
 * RNEA derivatives (the paper's recursive derivative of RNEA, in world coordinates):
 * every quantity is a spatial vector in world axes at the world origin ("o" prefix, Pinocchio's
 * computeRNEADerivatives layout), so that a joint's motion moves all its subtree by one twist:
 *     oS_i = X_0i S_i, ov_i = ov_lambda + oS_i qd_i,
 *     oa_i = oa_lambda + oS_i qdd_i + ov_i x oS_i qd_i     (RBDA Table 5.1 in world axes, a_0 = -a_grav)
 *     of_i = oY_i oa_i + ov_i x* oY_i ov_i                  (Newton-Euler, RBDA Table 5.1)
 *     dV/dq_i = ov_lambda x oS_i,   dA/dq_i = oa_lambda x oS_i + ov_lambda x dV/dq_i,
 *     dA/dqd_i = ov_i x oS_i + dV/dq_i                      (the paper's Psi_dot, Psi_ddot)
 *     B_i = ov_i x* oY_i - oY_i ov_i x + (oY_i ov_i) xbar   (the paper's B_i, Coriolis-like,
 *                                                            with f xbar m = m x* f)
 * and a backward pass over composite quantities (Ycrb, B, f of the subtrees):
 *     dtau_j/dq_i  = oS_j^T (B_j dV/dq_i + Ycrb_j dA/dq_i)  ... for j a strict descendant of i
 *     dtau_i/dq_k  = oS_i^T dF/dq_k, dF/dq_k = B_k dV/dq_k + Ycrb_k dA/dq_k + oS_k x* F_k (k below i)
 * and likewise for qd; dtau/dqdd = M (CRBA's Ycrb_j oS_j, RBDA Table 6.2). The world inertias and
 * their composites are kept as (Io, mc, m) (RBDA Eq. 2.63; yvec, world_inertia), B_i's ov x* oY by
 * 3 x 3 blocks; on the ground's children dV/dq = ov_0 x oS = 0 and its terms are skipped.
 *
 * Tangent coordinates (mbsfmu/linear/tangent.py): a 1-DoF joint's q; for spherical and free joints
 * the right perturbation q (+) dq in body axes (free: origin moved by R dq[:3], rotation exp(dq[3:])
 * on the right), the axes of the rates qd. A perturbation dq_i then moves every body of i's subtree
 * by the world twist oS_i dq_i (to first order), which is what the paper's recursion differentiates;
 * Pinocchio's SE(3) exponential for free joints agrees with it at dq = 0.
 *
 * Forward dynamics (the paper's route for ABA): with qdd = FD(q, qd, tau),
 *     dqdd/dq = -M^-1 dtau/dq, dqdd/dqd = -M^-1 dtau/dqd, dqdd/dtau = M^-1,
 * the RNEA derivatives taken at that qdd. qdd itself is not an ABA pass: the recursion's velocity
 * part and composites give M and h = RNEA(q, qd, 0) first (velocity_pass, composite_pass), then
 * qdd = M^-1 (tau + passive - h) (RBDA Ch. 6: forward dynamics as inverse dynamics at qdd = 0 and a
 * solve with M) with the factor below, then the qdd-dependent quantities (acceleration_pass,
 * derivative_pass); it equals ABA's to rounding (test_qdd_equals_aba). qdd and the three matrices
 * come from M's sparse factor M = L^T D L (RBDA Sec. 6.5, L nonzero only along the ancestor paths,
 * no fill-in), the matrices by solving the right-hand sides dtau/dq, dtau/dqd and I in the
 * caller's arrays (ltdl, ltdl_solve3; of M^-1 only the upper triangle, then mirrored). Joint springs and dampers (forces.c
 * mbs_passive_forces, -k (q - q0) - d qd) are differentiated exactly (diagonal). External wrenches,
 * point springs, thrusters and body wrenches are not part of these functions (as in
 * mbs_forward_dynamics_tau); closed loops are refused. */
#include <string.h>
#include "derivatives.h"
#include "instance.h"
#include "spatial.h"

#define W_BODY (13 * 36 + 24)   /* doubles of work per body (layout in rnea_work) */

static int valid(const mbs_sim *s) { return s && s->magic == MBS_MAGIC; }

/* doubles of work for rnea_derivatives_core: per body oS, dVdq, dAdq, dAdv, dFdq, dFdv, dFda, dYtJ
 * (6 x 6 column blocks), Y, B (6 x 6) and ov, oa, of, sub (6 each); then the subtree marks
 * (N + 1 ints, in as many doubles) */
static size_t rnea_work(const mbs_sim *s) { return (size_t)(s->N + 1) * (W_BODY + 1); }

size_t mbs_derivatives_work(const mbs_sim *s)
{
    /* rnea_work, then for the forward-dynamics solve M's L^T D L factor (nv x nv) and lambda of the
     * DoFs (nv ints, in nv doubles); the right-hand sides are solved in the caller's matrices */
    if (!valid(s)) return 0;
    return rnea_work(s) + (size_t)s->nv * (size_t)s->nv + (size_t)s->nv;
}

/* out = X_0i m for the motion vector m in body axes: [R w; R v + p x (R w)] (RBDA Eq. 2.24 inverted) */
static inline void to_world(const double *R, const double *p, const double *m, double *out)
{
    double t[3];
    mat3_vec(R, m, out);
    mat3_vec(R, m + 3, t);
    cross3(p, out, out + 3);
    out[3] += t[0]; out[4] += t[1]; out[5] += t[2];
}

/* A[ro:ro+3, co:co+3] -= skew(x) (6 x 6 row-major A) */
static inline void add_neg_skew(const double *x, double *A, int ro, int co)
{
    M6(A, ro, co + 1) += x[2];
    M6(A, ro, co + 2) -= x[1];
    M6(A, ro + 1, co) -= x[2];
    M6(A, ro + 1, co + 2) += x[0];
    M6(A, ro + 2, co) += x[1];
    M6(A, ro + 2, co + 1) -= x[0];
}

/* out = Y x for a spatial inertia about the world origin kept as Y = (Io (3 x 3 row-major), mc (3), m):
 * Y = [[Io, mc x], [-(mc x), m 1]] (RBDA Eq. 2.63, c the centre of mass, Io = Ic + m cx cx^T), so
 * Y x = [Io w + mc x v; m v - mc x w] with x = [w; v]: 24 products instead of a dense 6 x 6's 36.
 * Subtree composites are sums of the 13 numbers (the inertia of rigidly joined bodies is the sum
 * of theirs, RBDA Sec. 2.13). */
static inline void yvec(const double *Y, const double *x, double *out)
{
    const double *Io = Y, *mc = Y + 9, m = Y[12];
    double t[3];
    cross3(mc, x + 3, t);
    out[0] = Io[0] * x[0] + Io[1] * x[1] + Io[2] * x[2] + t[0];
    out[1] = Io[3] * x[0] + Io[4] * x[1] + Io[5] * x[2] + t[1];
    out[2] = Io[6] * x[0] + Io[7] * x[1] + Io[8] * x[2] + t[2];
    cross3(mc, x, t);
    out[3] = m * x[3] - t[0];
    out[4] = m * x[4] - t[1];
    out[5] = m * x[5] - t[2];
}

/* Y (13 numbers, as yvec) = the body inertia I (6 x 6 about the body origin, body axes: [[Ib, m cb x],
 * [-(m cb x), m 1]]) in world axes about the world origin, for body axes R and origin p: with
 * a = R (m cb), mc = m p + a and the parallel-axis theorem (RBDA Eq. 2.63) through the centre of
 * mass, Io = R Ib R^T + (m p.p + 2 p.a) 1 - m p p^T - p a^T - a p^T (no division by m). */
static inline void world_inertia(const double *R, const double *p, const double *I, double *Y)
{
    double m = M6(I, 3, 3), mcb[3], a[3], T[9], d;
    int k, l;
    mcb[0] = M6(I, 2, 4); mcb[1] = M6(I, 0, 5); mcb[2] = M6(I, 1, 3);
    mat3_vec(R, mcb, a);
    for (k = 0; k < 3; k++)                                   /* T = R Ib */
        for (l = 0; l < 3; l++)
            T[3 * k + l] = R[3 * k] * M6(I, 0, l) + R[3 * k + 1] * M6(I, 1, l) + R[3 * k + 2] * M6(I, 2, l);
    d = m * (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) + 2.0 * (p[0] * a[0] + p[1] * a[1] + p[2] * a[2]);
    for (k = 0; k < 3; k++)
        for (l = k; l < 3; l++) {                             /* Io = T R^T + ..., symmetric */
            double v = T[3 * k] * R[3 * l] + T[3 * k + 1] * R[3 * l + 1] + T[3 * k + 2] * R[3 * l + 2];
            v -= m * p[k] * p[l] + p[k] * a[l] + a[k] * p[l];
            if (k == l) v += d;
            Y[3 * k + l] = Y[3 * l + k] = v;
        }
    for (k = 0; k < 3; k++) Y[9 + k] = m * p[k] + a[k];
    Y[12] = m;
}

/* S = a x (3 x 3 row-major skew matrix) */
static inline void skew3(const double *a, double *S)
{
    S[0] = 0.0;   S[1] = -a[2]; S[2] = a[1];
    S[3] = a[2];  S[4] = 0.0;   S[5] = -a[0];
    S[6] = -a[1]; S[7] = a[0];  S[8] = 0.0;
}

/* The recursion in four passes, so that qdd may come out of the middle (mbs_aba_derivatives):
 * velocity_pass (outward: everything that does not depend on qdd), composite_pass (inward:
 * Ycrb, B, F of the subtrees at qdd = 0, M and the bias h = RNEA(q, qd, 0)), acceleration_pass
 * (outward: oa_i and dA/dq_i with qdd) and derivative_pass (inward: dF and the dtau entries).
 * Work per body (W_BODY doubles): oS, dVdq, dAdq, dAdv, dFdq, dFdv, dFda, dYtJ (6 x 6 column
 * blocks), Y, B (6 x 6), ov, oa, of, da (6 each), G (6). */
#define BLK(i, m) (w + (size_t)W_BODY * (i) + 36 * (m))
#define oS(i) BLK(i, 0)
#define dVdq(i) BLK(i, 1)
#define dAdq(i) BLK(i, 2)
#define dAdv(i) BLK(i, 3)
#define dFdq(i) BLK(i, 4)
#define dFdv(i) BLK(i, 5)
#define dFda(i) BLK(i, 6)
#define dYtJ(i) BLK(i, 7)
#define Y(i) BLK(i, 8)
#define B(i) BLK(i, 9)
#define ov(i) BLK(i, 10)
#define oa(i) (BLK(i, 10) + 6)
#define of(i) (BLK(i, 10) + 12)
#define da(i) (BLK(i, 10) + 18)
#define G(i) BLK(i, 11)

/* the subtree of i: mark[k] != 0 for k in it (parent[k] < k, so one sweep from i); called for
 * i = N, ..., 1 in turn after mark[] was zeroed (mark[k] = 0 for k < i from then on) */
static void subtree_marks(const mbs_sim *s, int i, int *mark)
{
    int k;
    mark[i] = 1;
    for (k = i + 1; k <= s->N; k++) mark[k] = mark[s->parent[k]];
}

/* outward, at qdd = 0: oS_i, ov_i, oa_i (velocity product and gravity only), oY_i, of_i, B_i,
 * dV/dq_i, dA/dqd_i; the transforms and s->Rw, s->pw must be current */
static void velocity_pass(mbs_sim *s, const double *qd, double *w)
{
    int N = s->N, i, k, b, c;
    memset(w, 0, sizeof(double) * (size_t)W_BODY);            /* ground row 0: ov_0 = 0, Ycrb_0 = 0 */
    for (k = 0; k < 3; k++) oa(0)[3 + k] = -s->grav[k];       /* oa_0 = -a_grav */
    for (i = 1; i <= N; i++) {
        int lam = s->parent[i], n = s->nvj[i];
        const double *R = s->Rw + 9 * i, *p = s->pw + 3 * i, *S = s->S + 36 * i;
        double vJ[6] = {0}, t6[6], h[6];
        for (b = 0; b < n; b++) {                             /* oS_i = X_0i S_i (column b at 6 b) */
            double col[6];
            for (k = 0; k < 6; k++) col[k] = M6(S, k, b);
            to_world(R, p, col, oS(i) + 6 * b);
            for (k = 0; k < 6; k++) vJ[k] += oS(i)[6 * b + k] * qd[s->iv[i] + b];
        }
        for (k = 0; k < 6; k++) ov(i)[k] = ov(lam)[k] + vJ[k];             /* ov_i = ov_lambda + oS qd_i */
        crm_mul(ov(i), vJ, t6);                                             /* oa_i = oa_lambda + ov_i x vJ */
        for (k = 0; k < 6; k++) oa(i)[k] = oa(lam)[k] + t6[k];             /*   (+ oS qdd_i: acceleration_pass) */
        world_inertia(R, p, s->I + 36 * i, Y(i));                           /* oY_i = X_i0^T I_i X_i0 */
        yvec(Y(i), ov(i), h);                                               /* h = oY ov */
        yvec(Y(i), oa(i), of(i));                                           /* of = oY oa + ov x* h */
        crf_mul(ov(i), h, t6);
        for (k = 0; k < 6; k++) of(i)[k] += t6[k];
        for (b = 0; b < n; b++) {                             /* Psi_dot; Psi_ddot's dA/dqd */
            const double *Sb = oS(i) + 6 * b;
            double *V = dVdq(i) + 6 * b, *Av = dAdv(i) + 6 * b;
            crm_mul(ov(lam), Sb, V);                          /* dV/dq = ov_lambda x oS */
            crm_mul(ov(i), Sb, Av);                           /* dA/dqd = ov_i x oS + dV/dq */
            for (k = 0; k < 6; k++) Av[k] += V[k];
        }
        {   /* C = ov x* Y by 3 x 3 blocks: ov x* = [[wx, vx], [0, wx]] (RBDA Sec. 2.9, w, v the
             * angular and linear parts of ov) times Y = [[Io, mcx], [-mcx, m 1]], with
             * ax bx = b a^T - (a.b) 1: C11 = wx Io - (mc v^T - (v.mc) 1), C12 = mc w^T - (w.mc) 1 + m vx,
             * C21 = -(mc w^T - (w.mc) 1), C22 = m wx */
            const double *Io = Y(i), *mc = Y(i) + 9, m = Y(i)[12], *w3 = ov(i), *v3 = ov(i) + 3;
            double vmc = v3[0] * mc[0] + v3[1] * mc[1] + v3[2] * mc[2];
            double wmc = w3[0] * mc[0] + w3[1] * mc[1] + w3[2] * mc[2];
            double Bv[9], Bw[9];
            skew3(v3, Bv);
            skew3(w3, Bw);
            for (c = 0; c < 3; c++) {
                double col[3], t[3];
                col[0] = Io[c]; col[1] = Io[3 + c]; col[2] = Io[6 + c];
                cross3(w3, col, t);
                for (k = 0; k < 3; k++) {
                    double wm = mc[k] * w3[c] - (k == c ? wmc : 0.0);
                    M6(B(i), k, c) = t[k] - (mc[k] * v3[c] - (k == c ? vmc : 0.0));
                    M6(B(i), k, 3 + c) = wm + m * Bv[3 * k + c];
                    M6(B(i), 3 + k, c) = -wm;
                    M6(B(i), 3 + k, 3 + c) = m * Bw[3 * k + c];
                }
            }
        }
        /* B = ov x* Y - Y ov x + h xbar = C + C^T + h xbar, since Y = Y^T and
         * v x* = -(v x)^T (RBDA Sec. 2.9); h xbar m = m x* h = [[-h_a x, -h_l x], [-h_l x, 0]] m */
        for (k = 0; k < 6; k++)
            for (c = 0; c < k; c++) {
                double t = M6(B(i), k, c) + M6(B(i), c, k);
                M6(B(i), k, c) = M6(B(i), c, k) = t;
            }
        for (k = 0; k < 6; k++) M6(B(i), k, k) *= 2.0;
        add_neg_skew(h, B(i), 0, 0);
        add_neg_skew(h + 3, B(i), 0, 3);
        add_neg_skew(h + 3, B(i), 3, 0);
    }
}

/* inward: the composites Ycrb_i, B_i and F_i (at qdd = 0) of i's subtree in place, dF/dqdd = Ycrb oS;
 * M (nv x nv, NULL to skip: M_ik = oS_i^T Ycrb_k oS_k, CRBA, RBDA Table 6.2) and
 * h = RNEA(q, qd, 0) = oS_i^T F_i (NULL to skip) */
static void composite_pass(mbs_sim *s, double *w, int *mark, double *M, double *h)
{
    int N = s->N, nv = s->nv, i, k, b, kb, bb;
    if (M) memset(M, 0, sizeof(double) * (size_t)nv * nv);
    memset(mark, 0, sizeof(int) * (size_t)(N + 1));
    for (i = N; i >= 1; i--) {
        int lam = s->parent[i], n = s->nvj[i], vi = s->iv[i];
        for (b = 0; b < n; b++) {
            yvec(Y(i), oS(i) + 6 * b, dFda(i) + 6 * b);      /* dF/dqdd = Ycrb oS */
            if (h) h[vi + b] = dot6(oS(i) + 6 * b, of(i));
        }
        if (M) {
            subtree_marks(s, i, mark);
            for (kb = i; kb <= N; kb++) {
                int nk = s->nvj[kb], vk = s->iv[kb];
                if (!mark[kb]) continue;
                for (b = 0; b < n; b++)
                    for (bb = 0; bb < nk; bb++) {
                        double m = dot6(oS(i) + 6 * b, dFda(kb) + 6 * bb);
                        M[(size_t)nv * (vi + b) + vk + bb] = m;
                        M[(size_t)nv * (vk + bb) + vi + b] = m;
                    }
            }
        }
        for (k = 0; k < 13; k++) Y(lam)[k] += Y(i)[k];      /* composites: Ycrb, B, F of lambda's subtree */
        for (k = 0; k < 36; k++) B(lam)[k] += B(i)[k];
        for (k = 0; k < 6; k++) of(lam)[k] += of(i)[k];
    }
}

/* outward: the accelerations' qdd part da_i = da_lambda + oS_i qdd_i (world axes), oa_i += da_i,
 * dA/dq_i = oa_lambda x oS + ov_lambda x dV/dq (Psi_ddot's dA/dq) */
static void acceleration_pass(mbs_sim *s, const double *qdd, double *w)
{
    int N = s->N, i, k, b;
    for (i = 1; i <= N; i++) {
        int lam = s->parent[i], n = s->nvj[i];
        double t6[6];
        for (k = 0; k < 6; k++) da(i)[k] = da(lam)[k];
        for (b = 0; b < n; b++)
            for (k = 0; k < 6; k++) da(i)[k] += oS(i)[6 * b + k] * qdd[s->iv[i] + b];
        for (k = 0; k < 6; k++) oa(i)[k] += da(i)[k];
        memset(G(i), 0, sizeof(double) * 6);
        for (b = 0; b < n; b++) {
            double *A = dAdq(i) + 6 * b;
            crm_mul(oa(lam), oS(i) + 6 * b, A);
            crm_mul(ov(lam), dVdq(i) + 6 * b, t6);
            for (k = 0; k < 6; k++) A[k] += t6[k];
        }
    }
}

/* inward: dtau/dq, dtau/dqd (nv x nv at leading dimension ld, either NULL to skip) of
 * tau = RNEA(q, qd, qdd) - passive(q, qd), after the three other passes at the same qdd */
static void derivative_pass(mbs_sim *s, const double *qdd, double *w, int *mark, double *dtau_dq,
                            double *dtau_dqd, size_t ld)
{
    int N = s->N, nv = s->nv, i, k, b, e, kb, bb;
    for (k = 0; k < nv; k++) {
        if (dtau_dq) memset(dtau_dq + ld * k, 0, sizeof(double) * (size_t)nv);
        if (dtau_dqd) memset(dtau_dqd + ld * k, 0, sizeof(double) * (size_t)nv);
    }
    memset(mark, 0, sizeof(int) * (size_t)(N + 1));
    for (i = N; i >= 1; i--) {
        int lam = s->parent[i], n = s->nvj[i], vi = s->iv[i];
        double F[6], t6[6];
        for (b = 0; b < n; b++) {
            const double *Sb = oS(i) + 6 * b;
            yvec(Y(i), dAdq(i) + 6 * b, dFdq(i) + 6 * b);   /* dF/dq = B dV/dq + Ycrb dA/dq */
            if (lam > 0) {                                    /* dV/dq = 0 on the ground's children */
                mat6_vec(B(i), dVdq(i) + 6 * b, t6);
                for (k = 0; k < 6; k++) dFdq(i)[6 * b + k] += t6[k];
            }
            mat6T_vec(B(i), Sb, dYtJ(i) + 6 * b);             /* (oS^T B)^T */
            mat6_vec(B(i), Sb, dFdv(i) + 6 * b);              /* dF/dqd = B oS + Ycrb dA/dqd */
            yvec(Y(i), dAdv(i) + 6 * b, t6);
            for (k = 0; k < 6; k++) dFdv(i)[6 * b + k] += t6[k];
        }
        subtree_marks(s, i, mark);
        for (kb = i; kb <= N; kb++) {                         /* the subtree of i (i included) */
            int nk = s->nvj[kb], vk = s->iv[kb];
            if (!mark[kb]) continue;
            for (b = 0; b < n; b++)
                for (bb = 0; bb < nk; bb++) {
                    const double *Sb = oS(i) + 6 * b;
                    if (dtau_dq) dtau_dq[ld * (vi + b) + vk + bb] = dot6(Sb, dFdq(kb) + 6 * bb);
                    if (dtau_dqd) dtau_dqd[ld * (vi + b) + vk + bb] = dot6(Sb, dFdv(kb) + 6 * bb);
                    if (kb == i) continue;                    /* rows of the descendants, column of i */
                    if (dtau_dq) {
                        double t = dot6(dFda(kb) + 6 * bb, dAdq(i) + 6 * b);
                        if (lam > 0) t += dot6(dYtJ(kb) + 6 * bb, dVdq(i) + 6 * b);
                        dtau_dq[ld * (vk + bb) + vi + b] = t;
                    }
                    if (dtau_dqd)
                        dtau_dqd[ld * (vk + bb) + vi + b] =
                            dot6(dFda(kb) + 6 * bb, dAdv(i) + 6 * b) + dot6(dYtJ(kb) + 6 * bb, Sb);
                }
        }
        /* F_i = sum over the subtree of oY_k oa_k + ov_k x* oY_k ov_k: composite_pass's part at
         * qdd = 0 plus sum_k oY_k da_k = Ycrb_i da_lambda + sum_{j in the subtree} Ycrb_j oS_j qdd_j
         * (da_k = da_lambda + the oS_j qdd_j of the path from i to k), the last sum G_i gathered inward */
        for (b = 0; b < n; b++)
            for (k = 0; k < 6; k++) G(i)[k] += dFda(i)[6 * b + k] * qdd[vi + b];
        yvec(Y(i), da(lam), F);
        for (k = 0; k < 6; k++) F[k] += of(i)[k] + G(i)[k];
        for (k = 0; k < 6; k++) G(lam)[k] += G(i)[k];
        for (b = 0; b < n; b++) {                             /* dF/dq += oS x* F_i (the subtree turns) */
            crf_mul(oS(i) + 6 * b, F, t6);
            for (k = 0; k < 6; k++) dFdq(i)[6 * b + k] += t6[k];
        }
    }
    for (e = 0; e < s->n_elem; e++) {                         /* tau = RNEA - passive: + k, + d on the diagonal */
        const int32_t *el = s->elem + 4 * e;
        if (el[0] == EL_JSPRING && dtau_dq) dtau_dq[ld * el[2] + el[2]] += s->elem_f[9 * e];
    }
    if (dtau_dqd)
        for (k = 0; k < nv; k++) dtau_dqd[ld * k + k] += s->damping[k];
}
#undef BLK
#undef oS
#undef dVdq
#undef dAdq
#undef dAdv
#undef dFdq
#undef dFdv
#undef dFda
#undef dYtJ
#undef Y
#undef B
#undef ov
#undef oa
#undef of
#undef da
#undef G

/* the subtree marks: (N + 1) ints after the body blocks */
#define MARKS(s, w) ((int *)((w) + (size_t)W_BODY * ((s)->N + 1)))

static int check(mbs_sim *s, const double *q, const double *qd, const char *b_name, const double *b, const double *work)
{
    int e;
    if (!q || !qd || !b || !work) { mbs_fmt(s->msg, MBS_MSG, "a NULL argument"); return MBS_ERROR; }
    if (s->n_loops > 0) {
        mbs_fmt(s->msg, MBS_MSG,
                "analytic derivatives are for trees: this model has closed loops (use "
                "mbsfmu.linear.jacobians.dynamics_jacobians, the partitioned coordinates)");
        return MBS_ERROR;
    }
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        int i;
        if (el[0] != EL_JSPRING) continue;
        for (i = 1; i <= s->N && !(s->iv[i] <= el[2] && el[2] < s->iv[i] + s->nvj[i]); i++) {}
        if (i > s->N || s->nvj[i] != 1) {
            mbs_fmt(s->msg, MBS_MSG, "joint spring on the multi-DoF joint %s: not differentiated", mbs_joint_name(s, i));
            return MBS_ERROR;
        }
    }
    if (!mbs_all_finite(q, s->nq)) { mbs_fmt(s->msg, MBS_MSG, "q has non-finite entries"); return MBS_ERROR; }
    if (!mbs_all_finite(qd, s->nv)) { mbs_fmt(s->msg, MBS_MSG, "qd has non-finite entries"); return MBS_ERROR; }
    if (!mbs_all_finite(b, s->nv)) { mbs_fmt(s->msg, MBS_MSG, "%s has non-finite entries", b_name); return MBS_ERROR; }
    if (s->params_dirty) {
        mbs_fmt(s->msg, MBS_MSG, "parameters were changed but not applied (mbs_sim_apply_params)");
        return MBS_ERROR;
    }
    memset(s->fext, 0, sizeof(double) * 6 * (size_t)(s->N + 1));
    return MBS_OK;
}

int mbs_rnea_derivatives(mbs_sim *s, const double *q, const double *qd, const double *qdd, double *work,
                         double *dtau_dq, double *dtau_dqd, double *M)
{
    if (!valid(s) || check(s, q, qd, "qdd", qdd, work)) return MBS_ERROR;
    mbs_joint_transforms(s, q);
    mbs_forward_kinematics(s, NULL, NULL, 0, 0, NULL);        /* R_i, p_i: X_0i */
    velocity_pass(s, qd, work);
    composite_pass(s, work, MARKS(s, work), M, NULL);
    acceleration_pass(s, qdd, work);
    derivative_pass(s, qdd, work, MARKS(s, work), dtau_dq, dtau_dqd, (size_t)s->nv);
    return MBS_OK;
}

/* lambda of the DoF tree (RBDA Sec. 6.5: a multi-DoF joint as a chain of 1-DoF joints): lam[k] the
 * parent DoF of DoF k, -1 at the root; lam[k] < k (tree order) */
static void dof_parents(const mbs_sim *s, int *lam)
{
    int i, b;
    for (i = 1; i <= s->N; i++) {
        int p = s->parent[i];
        while (p > 0 && s->nvj[p] == 0) p = s->parent[p];   /* the nearest ancestor with DoFs */
        for (b = 0; b < s->nvj[i]; b++)
            lam[s->iv[i] + b] = b > 0 ? s->iv[i] + b - 1 : (p > 0 ? s->iv[p] + s->nvj[p] - 1 : -1);
    }
}

/* M = L^T D L in place (RBDA Sec. 6.5, the L^T D L factorisation): L unit lower triangular in the strict
 * lower triangle of H, D on its diagonal; L_ki != 0 only for i an ancestor DoF of k, so the loops
 * walk lambda and never touch the zeros that branches induce. 0 if a pivot is not positive. */
static int ltdl(double *H, int n, const int *lam)
{
    int k, i, j;
    size_t nn = (size_t)n;
    for (k = n - 1; k >= 0; k--) {
        double Hkk = H[nn * k + k];
        if (!(Hkk > 0.0)) return 0;
        for (i = lam[k]; i >= 0; i = lam[i]) {
            double a = H[nn * k + i] / Hkk;
            for (j = i; j >= 0; j = lam[j]) H[nn * i + j] -= H[nn * k + j] * a;
            H[nn * k + i] = a;
        }
    }
    return 1;
}

/* y[c] -= l x[c] for c0 <= c < n (rows of the right-hand sides; y and x distinct rows) */
static inline void sub_scaled(double *restrict y, const double *restrict x, double l, int c0, int n)
{
    int c;
    for (c = c0; c < n; c++) y[c] -= l * x[c];
}

/* x[c] *= r for c0 <= c < n */
static inline void scale(double *restrict x, double r, int c0, int n)
{
    int c;
    for (c = c0; c < n; c++) x[c] *= r;
}

/* [A, B, Mi] = [-M^-1 A, -M^-1 B, M^-1] in place from A = dtau/dq, B = dtau/dqd (n x n, row-major) and
 * Mi = I (written here), with the factor of ltdl: M^-1 = L^-1 D^-1 L^-T (RBDA Sec. 6.5, its back-
 * and forward substitutions on the rows). A and B are solved in the caller's arrays, row by row
 * along all n columns; of Mi only the upper triangle (columns c >= i of row i) is computed and then
 * mirrored (M^-1 is symmetric): Y = L^-T I is upper triangular (L^-T is, as L_ij != 0 only for j < i),
 * so the rows that L^T y = b subtracts (i > j) are zero left of column i; D^-1 keeps that, and
 * L x = z for the columns c >= i of row i reads rows j < i at c > j only. This skips more than half
 * of Mi's multiply-subtracts (on Solo12, nv 18: 1,830 of 3,890). */
static void ltdl_solve3(const double *H, int n, const int *lam, double *A, double *B, double *Mi)
{
    int i, j, c;
    size_t nn = (size_t)n;
    memset(Mi, 0, sizeof(double) * nn * nn);
    for (i = 0; i < n; i++) Mi[nn * i + i] = 1.0;
    for (i = n - 1; i >= 0; i--)                              /* L^T y = b: b_j -= L_ij b_i, j ancestors of i */
        for (j = lam[i]; j >= 0; j = lam[j]) {
            double l = H[nn * i + j];
            sub_scaled(A + nn * j, A + nn * i, l, 0, n);
            sub_scaled(B + nn * j, B + nn * i, l, 0, n);
            sub_scaled(Mi + nn * j, Mi + nn * i, l, i, n);
        }
    for (i = 0; i < n; i++) {                                 /* z = D^-1 y (and the minus sign of -M^-1) */
        double r = 1.0 / H[nn * i + i], mr = -r;
        scale(A + nn * i, mr, 0, n);
        scale(B + nn * i, mr, 0, n);
        scale(Mi + nn * i, r, i, n);
    }
    for (i = 0; i < n; i++)                                   /* L x = z: x_i -= L_ij x_j, j ancestors of i */
        for (j = lam[i]; j >= 0; j = lam[j]) {
            double l = H[nn * i + j];
            sub_scaled(A + nn * i, A + nn * j, l, 0, n);
            sub_scaled(B + nn * i, B + nn * j, l, 0, n);
            sub_scaled(Mi + nn * i, Mi + nn * j, l, i, n);
        }
    for (i = 1; i < n; i++)                                   /* the lower triangle by symmetry */
        for (c = 0; c < i; c++) Mi[nn * i + c] = Mi[nn * c + i];
}

/* x = M^-1 x in place (one right-hand side) with the factor of ltdl, as ltdl_solve3 */
static void ltdl_solve1(const double *H, int n, const int *lam, double *x)
{
    int i, j;
    size_t nn = (size_t)n;
    for (i = n - 1; i >= 0; i--)                              /* L^T y = b */
        for (j = lam[i]; j >= 0; j = lam[j]) x[j] -= H[nn * i + j] * x[i];
    for (i = 0; i < n; i++) x[i] *= 1.0 / H[nn * i + i];     /* z = D^-1 y */
    for (i = 0; i < n; i++)                                   /* L x = z */
        for (j = lam[i]; j >= 0; j = lam[j]) x[i] -= H[nn * i + j] * x[j];
}

int mbs_aba_derivatives(mbs_sim *s, const double *q, const double *qd, const double *tau, double *work, double *qdd,
                        double *dqdd_dq, double *dqdd_dqd, double *Minv)
{
    int nv, j, *lam;
    double *H;
    if (!valid(s) || !qdd || !dqdd_dq || !dqdd_dqd || !Minv || check(s, q, qd, "tau", tau, work)) return MBS_ERROR;
    nv = s->nv;
    H = work + rnea_work(s);
    lam = (int *)(H + (size_t)nv * nv);
    mbs_joint_transforms(s, q);
    mbs_forward_kinematics(s, NULL, NULL, 0, 0, NULL);        /* R_i, p_i: X_0i */
    /* qdd = M^-1 (tau + passive - h), h = RNEA(q, qd, 0) (RBDA Ch. 6, the equation of motion the ABA
     * solves), with M's factor, which the derivatives need anyway: no separate ABA pass */
    velocity_pass(s, qd, work);
    composite_pass(s, work, MARKS(s, work), H, qdd);         /* M, qdd = h */
    mbs_passive_forces(s, q, qd, s->tau);
    for (j = 0; j < nv; j++) qdd[j] = tau[j] + s->tau[j] - qdd[j];
    dof_parents(s, lam);
    if (!ltdl(H, nv, lam)) {
        mbs_fmt(s->msg, MBS_MSG, "the mass matrix is not positive definite at this configuration");
        return MBS_ERROR;
    }
    ltdl_solve1(H, nv, lam, qdd);
    if (!mbs_all_finite(qdd, nv)) {
        mbs_fmt(s->msg, MBS_MSG, "the mass matrix is singular at this configuration");
        return MBS_ERROR;
    }
    acceleration_pass(s, qdd, work);
    derivative_pass(s, qdd, work, MARKS(s, work), dqdd_dq, dqdd_dqd, (size_t)nv);   /* dtau/dq, dtau/dqd */
    ltdl_solve3(H, nv, lam, dqdd_dq, dqdd_dqd, Minv);         /* dqdd/dq = -M^-1 dtau/dq, ..., M^-1 */
    return MBS_OK;
}
