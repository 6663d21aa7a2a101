/* derivatives.c - analytic derivatives of inverse and forward dynamics (Carpentier & Mansard,
 * "Analytical Derivatives of Rigid Body Dynamics Algorithms", RSS 2018).
 *
 * Citations: the paper's text (HAL hal-01790971) could not be read where this was written or checked
 * (issue 24), so its algorithm and equation numbers are not given and its quantities are named
 * instead; the names are Pinocchio's computeRNEADerivatives (rnea-derivatives.hxx, the authors'
 * implementation, the reference for the recursion: dVdq, dAdq, dAdv, doYcrb), and
 * tests/engine/test_derivatives.py compares every result with it.
 *
 * RNEA derivatives (the paper's recursive derivative of RNEA, in world coordinates):
 * every quantity is a spatial vector in world axes at the world origin ("o" prefix, Pinocchio's
 * computeRNEADerivatives layout), so that a joint's motion moves all its subtree by one twist:
 *     oS_i = X_0i S_i, ov_i = ov_lambda + oS_i qd_i,
 *     oa_i = oa_lambda + oS_i qdd_i + ov_i x oS_i qd_i     (RBDA Table 5.1 in world axes, a_0 = -a_grav)
 *     of_i = oY_i oa_i + ov_i x* oY_i ov_i                  (Newton-Euler, RBDA Table 5.1)
 *     dV/dq_i = ov_lambda x oS_i,   dA/dq_i = oa_lambda x oS_i + ov_lambda x dV/dq_i,
 *     dA/dqd_i = ov_i x oS_i + dV/dq_i      (Psi_dot = dV/dq, Psi_ddot = dA/dq: Pinocchio's psid, psidd)
 *     B_i = ov_i x* oY_i - oY_i ov_i x + (oY_i ov_i) xbar   (Pinocchio's doYcrb, Coriolis-like,
 *                                                            with f xbar m = m x* f)
 * and a backward pass over composite quantities (Ycrb, B, f of the subtrees):
 *     dtau_j/dq_i  = oS_j^T (B_j dV/dq_i + Ycrb_j dA/dq_i)  ... for j a strict descendant of i
 *     dtau_i/dq_k  = oS_i^T dF/dq_k, dF/dq_k = B_k dV/dq_k + Ycrb_k dA/dq_k + oS_k x* F_k (k below i)
 * and likewise for qd; dtau/dqdd = M (CRBA's Ycrb_j oS_j, RBDA Table 6.2). The world inertias and
 * their composites are kept as (Io, mc, m) (RBDA Eq. 2.63; yvec, world_inertia), B_i as its two
 * nonzero 3 x 3 blocks (coriolis_block: its right column is zero); on the ground's children
 * dV/dq = ov_0 x oS = 0 and its terms are skipped. The dot products of a multi-DoF joint's columns
 * (the free joint's six) run two at a time (dot6x2).
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
 * caller's arrays (ltdl, ltdl_solve3; of M^-1 only the upper triangle, then mirrored). Joint
 * springs and dampers (forces.c mbs_passive_forces, -k (q - q0) - d qd) are differentiated exactly
 * (diagonal). External wrenches, point springs, thrusters and body wrenches are not part of these
 * functions (as in mbs_forward_dynamics_tau); closed loops are refused. */
#include <string.h>
#include "derivatives.h"
#include "instance.h"
#include "spatial.h"

#define W_BODY (13 * 36 + 24)   /* doubles of work per body (layout in rnea_work) */

static int valid(const mbs_sim *s) { return s && s->magic == MBS_MAGIC; }

/* doubles of work for rnea_derivatives_core: per body oS, dVdq, dAdq, dAdv, dFdq, dFdv, dFda, dYtJ
 * (6 x 6 column blocks), Y (13), B (12, coriolis_block) and ov, oa, of, sub (6 each); then the
 * subtree marks (N + 1 ints, in as many doubles) */
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

/* Two doubles per operation for the dot products of a multi-DoF joint's columns (the free joint's
 * six): v2d is two doubles (the compilers' vector extension; SSE2 on the x86-64 baseline), with
 * IEEE operations element by element and no fused multiply-add (-ffp-contract=off), so dot6x2
 * rounds exactly as two dot6 (the same products summed in the same order). */
typedef double v2d __attribute__((vector_size(16)));

/* P[k] = (a[k], b[k]): the columns a, b of a joint interleaved component by component */
static inline void pair6(const double *a, const double *b, v2d *P)
{
    int k;
    for (k = 0; k < 6; k++) P[k] = (v2d){a[k], b[k]};
}

/* (a . x, b . x) for P = pair6(a, b), summed as dot6 */
static inline v2d dot6x2(const v2d *P, const double *x)
{
    v2d acc = P[0] * x[0];
    acc += P[1] * x[1];
    acc += P[2] * x[2];
    acc += P[3] * x[3];
    acc += P[4] * x[4];
    acc += P[5] * x[5];
    return acc;
}

/* The paper's B_i = ov x* oY - oY ov x + h xbar (h = oY ov, f xbar m = m x* f) by 3 x 3 blocks. With
 * ov = [w; v], oY = [[Io, mc x], [-(mc x), m 1]] (yvec), ov x* = [[w x, v x], [0, w x]] and the
 * identities ax bx = b a^T - (a.b) 1 and ax bx - bx ax = (a x b)x (RBDA Sec. 2.9, 2.13),
 * C = ov x* oY = [[wx Io - vx mcx, wx mcx + m vx], [-wx mcx, m wx]] and B = C + C^T + h xbar
 * (oY symmetric, v x* = -(v x)^T), whose blocks are
 *     B11 = wx Io - Io wx - (mc v^T + v mc^T) + 2 (v.mc) 1 - h_a x,
 *     B12 = wx mcx - mcx wx + m vx - h_l x = (w x mc + m v - h_l)x = 0   (h_l = m v - mc x w),
 *     B21 = -wx mcx + mcx wx - m vx - h_l x = -2 h_l x,   B22 = m (wx + wx^T) = 0,
 * so B = [[B11, 0], [-2 h_l x, 0]] is kept as Bc = (B11 row-major, h_l): 12 numbers, summed over
 * subtrees like oY; B x reads the angular part of x only (coriolis_mul, coriolis_tmul). */
static inline void coriolis_block(const double *Y, const double *ov, const double *h, double *Bc)
{
    const double *Io = Y, *mc = Y + 9, *w = ov, *v = ov + 3;
    double vmc2 = 2.0 * (v[0] * mc[0] + v[1] * mc[1] + v[2] * mc[2]), W[9];
    int k, c;
    for (c = 0; c < 3; c++) {                                 /* W = wx Io, column by column */
        double col[3], t[3];
        col[0] = Io[c]; col[1] = Io[3 + c]; col[2] = Io[6 + c];
        cross3(w, col, t);
        W[c] = t[0]; W[3 + c] = t[1]; W[6 + c] = t[2];
    }
    for (k = 0; k < 3; k++)                                   /* wx Io - Io wx = W + W^T (Io = Io^T) */
        for (c = 0; c < 3; c++) Bc[3 * k + c] = W[3 * k + c] + W[3 * c + k] - (mc[k] * v[c] + v[k] * mc[c]);
    for (k = 0; k < 3; k++) Bc[4 * k] += vmc2;
    Bc[1] += h[2]; Bc[2] -= h[1];                             /* - h_a x */
    Bc[3] -= h[2]; Bc[5] += h[0];
    Bc[6] += h[1]; Bc[7] -= h[0];
    Bc[9] = h[3]; Bc[10] = h[4]; Bc[11] = h[5];
}

/* out = B x = [B11 x_a; -2 h_l x x_a] for Bc = coriolis_block */
static inline void coriolis_mul(const double *Bc, const double *x, double *out)
{
    double t[3];
    int k;
    mat3_vec(Bc, x, out);
    cross3(Bc + 9, x, t);
    for (k = 0; k < 3; k++) out[3 + k] = -2.0 * t[k];
}

/* out = B^T x = [B11^T x_a + 2 h_l x x_l; 0] for Bc = coriolis_block ((h_l x)^T = -h_l x) */
static inline void coriolis_tmul(const double *Bc, const double *x, double *out)
{
    double t[3];
    int k;
    cross3(Bc + 9, x + 3, t);
    for (k = 0; k < 3; k++) out[k] = Bc[k] * x[0] + Bc[3 + k] * x[1] + Bc[6 + k] * x[2] + 2.0 * t[k];
    out[3] = out[4] = out[5] = 0.0;
}

/* The recursion in four passes, so that qdd may come out of the middle (mbs_aba_derivatives):
 * velocity_pass (outward: everything that does not depend on qdd), composite_pass (inward:
 * Ycrb, B, F of the subtrees at qdd = 0, M and the bias h = RNEA(q, qd, 0)), acceleration_pass
 * (outward: oa_i and dA/dq_i with qdd) and derivative_pass (inward: dF and the dtau entries).
 * Work per body (W_BODY doubles): oS, dVdq, dAdq, dAdv, dFdq, dFdv, dFda, dYtJ (6 x 6 column
 * blocks), Y (13: yvec), B (12: coriolis_block) in 36-double slots, ov, oa, of, da (6 each), G (6). */
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
    int N = s->N, i, k, b;
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
        coriolis_block(Y(i), ov(i), h, B(i));                /* the paper's B_i, its nonzero blocks */
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
            v2d PS[6];
            subtree_marks(s, i, mark);
            for (kb = i; kb <= N; kb++) {
                int nk = s->nvj[kb], vk = s->iv[kb];
                if (!mark[kb]) continue;
                for (b = 0; b + 1 < n; b += 2) {              /* two of i's DoFs at a time (dot6x2) */
                    pair6(oS(i) + 6 * b, oS(i) + 6 * b + 6, PS);
                    for (bb = 0; bb < nk; bb++) {
                        v2d m = dot6x2(PS, dFda(kb) + 6 * bb);
                        size_t r = (size_t)nv * (vi + b) + vk + bb, c = (size_t)nv * (vk + bb) + vi + b;
                        M[r] = M[c] = m[0];
                        M[r + nv] = M[c + 1] = m[1];
                    }
                }
                for (; b < n; b++)
                    for (bb = 0; bb < nk; bb++) {
                        double m = dot6(oS(i) + 6 * b, dFda(kb) + 6 * bb);
                        M[(size_t)nv * (vi + b) + vk + bb] = m;
                        M[(size_t)nv * (vk + bb) + vi + b] = m;
                    }
            }
        }
        for (k = 0; k < 13; k++) Y(lam)[k] += Y(i)[k];      /* composites: Ycrb, B, F of lambda's subtree */
        for (k = 0; k < 12; k++) B(lam)[k] += B(i)[k];
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
    v2d PS[3][6], PA[3][6], PV[3][6], PD[3][6];               /* oS, dA/dq, dV/dq, dA/dqd of i's DoF pairs */
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
                coriolis_mul(B(i), dVdq(i) + 6 * b, t6);
                for (k = 0; k < 6; k++) dFdq(i)[6 * b + k] += t6[k];
            }
            coriolis_tmul(B(i), Sb, dYtJ(i) + 6 * b);         /* (oS^T B)^T */
            coriolis_mul(B(i), Sb, dFdv(i) + 6 * b);          /* dF/dqd = B oS + Ycrb dA/dqd */
            yvec(Y(i), dAdv(i) + 6 * b, t6);
            for (k = 0; k < 6; k++) dFdv(i)[6 * b + k] += t6[k];
        }
        for (b = 0; b + 1 < n; b += 2) {                      /* the DoF pairs (b, b + 1), interleaved */
            int p = b / 2;
            pair6(oS(i) + 6 * b, oS(i) + 6 * b + 6, PS[p]);
            pair6(dAdq(i) + 6 * b, dAdq(i) + 6 * b + 6, PA[p]);
            pair6(dVdq(i) + 6 * b, dVdq(i) + 6 * b + 6, PV[p]);
            pair6(dAdv(i) + 6 * b, dAdv(i) + 6 * b + 6, PD[p]);
        }
        subtree_marks(s, i, mark);
        for (kb = i; kb <= N; kb++) {                         /* the subtree of i (i included) */
            int nk = s->nvj[kb], vk = s->iv[kb];
            if (!mark[kb]) continue;
            for (b = 0; b + 1 < n; b += 2) {                  /* two of i's DoFs at a time, as below */
                int p = b / 2;
                for (bb = 0; bb < nk; bb++) {
                    size_t r = ld * (vi + b) + vk + bb, c = ld * (vk + bb) + vi + b;
                    v2d t;
                    if (dtau_dq) {
                        t = dot6x2(PS[p], dFdq(kb) + 6 * bb);
                        dtau_dq[r] = t[0];
                        dtau_dq[r + ld] = t[1];
                    }
                    if (dtau_dqd) {
                        t = dot6x2(PS[p], dFdv(kb) + 6 * bb);
                        dtau_dqd[r] = t[0];
                        dtau_dqd[r + ld] = t[1];
                    }
                    if (kb == i) continue;
                    if (dtau_dq) {
                        t = dot6x2(PA[p], dFda(kb) + 6 * bb);
                        if (lam > 0) t += dot6x2(PV[p], dYtJ(kb) + 6 * bb);
                        dtau_dq[c] = t[0];
                        dtau_dq[c + 1] = t[1];
                    }
                    if (dtau_dqd) {
                        t = dot6x2(PD[p], dFda(kb) + 6 * bb) + dot6x2(PS[p], dYtJ(kb) + 6 * bb);
                        dtau_dqd[c] = t[0];
                        dtau_dqd[c + 1] = t[1];
                    }
                }
            }
            for (; b < n; b++)
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
