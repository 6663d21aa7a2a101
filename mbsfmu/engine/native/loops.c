/* loops.c - closed kinematic loops by Lagrange multipliers, as mbsfmu/dynamics/loops.py does it:
 * cut-joint constraint rows Phi(q), A = dPhi/dq (mapped to qd), Phidot = A qd, gamma = -Adot qd;
 * No's method, Eq. 24: [[M, A^T], [A, 0]] [qdd; lambda] = [tau - C; gamma - 2 alpha Phidot - beta^2 Phi]
 * (Baumgarte) solved by the Schur complement with the minimum-norm lambda for redundant rows; and
 * the projection after a step (Gauss-Newton on Phi = 0 with M-weighted steps, then qd onto
 * A qd = 0). Row formulas: coincidence, dot and offset rows of loops.py's module docstring; a joint
 * coupling (kind 4, URDF mimic) is the one row q_f - a q_l - b with A = e_f - a e_l, gamma = 0. */
#include <string.h>
#include "instance.h"
#include "spatial.h"

#define RCOND 1e-10        /* loops.RCOND: eigenvalues of A M^-1 A^T below RCOND x the largest dropped */
#define NEWTON_RTOL 1e-14  /* loops.NEWTON_RTOL: projection target max |Phi| <= NEWTON_RTOL x L */
#define MAX_NEWTON 50

typedef struct { double P[3], E[9], w[3], v[3], al[3], acc[3]; double *Jw, *Jv; } side_t;

typedef struct {                                  /* views of the loop work area */
    double *Jwa, *Jva, *Jwb, *Jvb, *A, *Phi, *Phidot, *gamma, *g, *Mc, *L, *h, *zero, *MiAT, *Mih, *x, *dq, *qt;
    double *G, *V, *ev, *t1, *t2, *lam;
} work_t;

size_t mbs_loop_work(int nv, int m)
{
    size_t n = (size_t)nv, r = (size_t)m;
    if (m == 0) return 0;                                     /* no loops: none (the dense n x n arrays) */
    return 12 * n + r * n + 4 * r + 2 * n * n + 6 * n + n * r + 2 * n + 8 + 2 * r * r + 4 * r;
}

static work_t views(const mbs_sim *s)
{
    work_t w;
    size_t n = (size_t)s->nv, r = (size_t)s->n_rows;
    double *d = s->lw;
#define TAKE(p, k) do { w.p = d; d += (k); } while (0)
    TAKE(Jwa, 3 * n); TAKE(Jva, 3 * n); TAKE(Jwb, 3 * n); TAKE(Jvb, 3 * n);
    TAKE(A, r * n); TAKE(Phi, r); TAKE(Phidot, r); TAKE(gamma, r); TAKE(g, r);
    TAKE(Mc, n * n); TAKE(L, n * n); TAKE(h, n); TAKE(zero, n); TAKE(MiAT, n * r); TAKE(Mih, n); TAKE(x, n);
    TAKE(dq, n); TAKE(qt, 2 * n + 8); TAKE(G, r * r); TAKE(V, r * r); TAKE(ev, r); TAKE(t1, r); TAKE(t2, r); TAKE(lam, r);
#undef TAKE
    return w;
}

/* a cut-joint frame (body i, origin r, axes Ec in body coordinates) in world axes, with its
 * Jacobian rows (kinematics.point_jacobian) and, with rates, the qdd = 0 accelerations */
static void side(const mbs_sim *s, int i, const double *r, const double *Ec, int rates, side_t *o)
{
    const double *R = s->Rw + 9 * i, *p = s->pw + 3 * i;
    double Rr[3];
    int k, a, b, j;
    mat3_vec(R, r, Rr);
    for (k = 0; k < 3; k++) o->P[k] = p[k] + Rr[k];
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++) o->E[3 * a + b] = R[3 * a] * Ec[b] + R[3 * a + 1] * Ec[3 + b] + R[3 * a + 2] * Ec[6 + b];
    memset(o->Jw, 0, 3 * (size_t)s->nv * sizeof(double));
    memset(o->Jv, 0, 3 * (size_t)s->nv * sizeof(double));
    for (k = i; k > 0; k = s->parent[k]) {                    /* column of joint k: R_k S, shifted to P */
        const double *S = s->S + 36 * k, *Rk = s->Rw + 9 * k, *pk = s->pw + 3 * k;
        for (j = 0; j < s->nvj[k]; j++) {
            double sw[3], sv[3], w[3], vo[3], d[3], x[3];
            int col = s->iv[k] + j;
            for (a = 0; a < 3; a++) { sw[a] = M6(S, a, j); sv[a] = M6(S, 3 + a, j); }
            mat3_vec(Rk, sw, w);
            mat3_vec(Rk, sv, vo);
            for (a = 0; a < 3; a++) d[a] = o->P[a] - pk[a];
            cross3(d, w, x);
            for (a = 0; a < 3; a++) {
                o->Jw[a * s->nv + col] = w[a];
                o->Jv[a * s->nv + col] = vo[a] - x[a];
            }
        }
    }
    if (rates) {
        const double *v = s->v + 6 * i, *acc = s->a + 6 * i;
        double t[3], u[3], wr[3], x[3];
        mat3_vec(R, v, o->w);                                 /* omega, world */
        cross3(v, r, wr);                                     /* point velocity R (v_o + w x r) */
        for (k = 0; k < 3; k++) t[k] = v[3 + k] + wr[k];
        mat3_vec(R, t, o->v);
        mat3_vec(R, acc, o->al);
        cross3(acc, r, u);                                    /* a_P = R (dvo + dw x r + w x (vo + w x r)) */
        cross3(v, t, x);
        for (k = 0; k < 3; k++) u[k] = acc[3 + k] + u[k] + x[k];
        mat3_vec(R, u, o->acc);
    }
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* row k: Phi = u . w (u fixed in frame a, w in frame b) */
static void row_dot(const mbs_sim *s, work_t *W, int k, const double *u, const double *w, const side_t *a,
                    const side_t *b, int rates)
{
    double n[3], dw[3], t1[3], t2[3], t3[3], t4[3], dal[3];
    int j, c;
    cross3(u, w, n);
    for (j = 0; j < s->nv; j++) {
        double acc = 0.0;
        for (c = 0; c < 3; c++) acc += n[c] * (a->Jw[c * s->nv + j] - b->Jw[c * s->nv + j]);
        W->A[k * s->nv + j] = acc;
    }
    W->Phi[k] = dot3(u, w);
    if (!rates) return;
    for (c = 0; c < 3; c++) { dw[c] = a->w[c] - b->w[c]; dal[c] = a->al[c] - b->al[c]; }
    cross3(a->w, u, t1);                                      /* ndot = (w_a x u) x w + u x (w_b x w) */
    cross3(t1, w, t2);
    cross3(b->w, w, t3);
    cross3(u, t3, t4);
    for (c = 0; c < 3; c++) t2[c] += t4[c];
    W->Phidot[k] = dot3(n, dw);
    W->gamma[k] = -(dot3(t2, dw) + dot3(n, dal));
}

/* row k: Phi = t . (P_b - P_a) (t fixed in frame a) */
static void row_offset(const mbs_sim *s, work_t *W, int k, const double *t, const side_t *a, const side_t *b, int rates)
{
    double d[3], txd[3], tdot[3], tdd[3], x[3], dv[3], dacc[3];
    int j, c;
    for (c = 0; c < 3; c++) d[c] = b->P[c] - a->P[c];
    cross3(t, d, txd);
    for (j = 0; j < s->nv; j++) {
        double acc = 0.0, acc2 = 0.0;
        for (c = 0; c < 3; c++) {
            acc += t[c] * (b->Jv[c * s->nv + j] - a->Jv[c * s->nv + j]);
            acc2 += txd[c] * a->Jw[c * s->nv + j];
        }
        W->A[k * s->nv + j] = acc + acc2;
    }
    W->Phi[k] = dot3(t, d);
    if (!rates) return;
    cross3(a->w, t, tdot);
    cross3(a->al, t, tdd);                                    /* tddot0 = al_a x t + w_a x tdot */
    cross3(a->w, tdot, x);
    for (c = 0; c < 3; c++) {
        tdd[c] += x[c];
        dv[c] = b->v[c] - a->v[c];
        dacc[c] = b->acc[c] - a->acc[c];
    }
    W->Phidot[k] = dot3(t, dv) + dot3(txd, a->w);
    W->gamma[k] = -(dot3(tdd, d) + 2.0 * dot3(tdot, dv) + dot3(t, dacc));
}

/* 1 if every loop is a joint coupling (kind 4): rows linear in q, no kinematics needed */
static int couplings_only(const mbs_sim *s)
{
    int l;
    for (l = 0; l < s->n_loops; l++)
        if (s->loop_i[5 * l] != 4) return 0;
    return 1;
}

/* Phi, A and (qd given) Phidot, gamma of every loop at (q, qd): one kinematics pass at qdd = 0
 * (none when every loop is a coupling); xf: E, r already hold Xup at q (not computed again) */
static void constraints(mbs_sim *s, work_t *W, const double *q, const double *qd, int xf)
{
    int rates = qd != NULL, l, c;
    if (!couplings_only(s)) {
        if (!xf) mbs_joint_transforms(s, q);
        memset(W->zero, 0, (size_t)s->nv * sizeof(double));
        mbs_forward_kinematics(s, rates ? qd : W->zero, W->zero, rates, rates, NULL);
    }
    for (l = 0; l < s->n_loops; l++) {
        const int32_t *li = s->loop_i + 5 * l;
        const double *lf = s->loop_f + 33 * l;
        side_t a, b;
        double na[3], nb[3], t1[3], t2[3], ca[3], cb[3];
        int k = li[3];
        if (li[0] == 4) {                                     /* coupling: Phi = q_f - a q_l - b */
            int f = s->iv[li[1]], ld = s->iv[li[2]], j;
            for (j = 0; j < s->nv; j++) W->A[k * s->nv + j] = 0.0;
            W->A[k * s->nv + f] = 1.0;
            W->A[k * s->nv + ld] = -lf[0];
            W->Phi[k] = q[s->iq[li[1]]] - lf[0] * q[s->iq[li[2]]] - lf[1];
            if (rates) {
                W->Phidot[k] = qd[f] - lf[0] * qd[ld];
                W->gamma[k] = 0.0;
            }
            continue;
        }
        a.Jw = W->Jwa; a.Jv = W->Jva; b.Jw = W->Jwb; b.Jv = W->Jvb;
        side(s, li[1], lf, lf + 6, rates, &a);
        side(s, li[2], lf + 3, lf + 15, rates, &b);
        mat3_vec(a.E, lf + 24, na);
        mat3_vec(b.E, lf + 24, nb);
        mat3_vec(a.E, lf + 27, t1);
        mat3_vec(a.E, lf + 30, t2);
        if (li[0] == 0 || li[0] == 1) {                       /* coincidence: Phi = P_a - P_b */
            for (c = 0; c < 3; c++) {
                int j;
                for (j = 0; j < s->nv; j++) W->A[(k + c) * s->nv + j] = a.Jv[c * s->nv + j] - b.Jv[c * s->nv + j];
                W->Phi[k + c] = a.P[c] - b.P[c];
                if (rates) {
                    W->Phidot[k + c] = a.v[c] - b.v[c];
                    W->gamma[k + c] = -(a.acc[c] - b.acc[c]);
                }
            }
            if (li[0] == 1) {
                row_dot(s, W, k + 3, t1, nb, &a, &b, rates);
                row_dot(s, W, k + 4, t2, nb, &a, &b, rates);
            }
        } else if (li[0] == 2) {                              /* prismatic */
            row_offset(s, W, k, t1, &a, &b, rates);
            row_offset(s, W, k + 1, t2, &a, &b, rates);
            for (c = 0; c < 3; c++) {                         /* dot(Ea[:, c], Eb[:, c + 1]) */
                int j;
                for (j = 0; j < 3; j++) { ca[j] = a.E[3 * j + c]; cb[j] = b.E[3 * j + (c + 1) % 3]; }
                row_dot(s, W, k + 2 + c, ca, cb, &a, &b, rates);
            }
        } else {                                              /* planar */
            row_offset(s, W, k, na, &a, &b, rates);
            row_dot(s, W, k + 1, t1, nb, &a, &b, rates);
            row_dot(s, W, k + 2, t2, nb, &a, &b, rates);
        }
    }
}

/* eigenvalues ev and eigenvectors (columns of V) of the symmetric m x m G by cyclic Jacobi */
void mbs_sym_eigen(double *G, int m, double *V, double *ev)
{
    int sweep, p, q, k;
    for (p = 0; p < m * m; p++) V[p] = 0.0;
    for (p = 0; p < m; p++) V[p * m + p] = 1.0;
    for (sweep = 0; sweep < 100; sweep++) {
        double off = 0.0, diag = 0.0;
        for (p = 0; p < m; p++) {
            diag += G[p * m + p] * G[p * m + p];
            for (q = p + 1; q < m; q++) off += G[p * m + q] * G[p * m + q];
        }
        if (off <= 1e-32 * diag || off == 0.0) break;
        for (p = 0; p < m - 1; p++)
            for (q = p + 1; q < m; q++) {
                double apq = G[p * m + q], theta, t, c, sn;
                if (apq == 0.0) continue;
                theta = (G[q * m + q] - G[p * m + p]) / (2.0 * apq);
                t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                c = 1.0 / sqrt(t * t + 1.0);
                sn = t * c;
                for (k = 0; k < m; k++) {
                    double gkp = G[k * m + p], gkq = G[k * m + q];
                    G[k * m + p] = c * gkp - sn * gkq;
                    G[k * m + q] = sn * gkp + c * gkq;
                }
                for (k = 0; k < m; k++) {
                    double gpk = G[p * m + k], gqk = G[q * m + k];
                    G[p * m + k] = c * gpk - sn * gqk;
                    G[q * m + k] = sn * gpk + c * gqk;
                }
                for (k = 0; k < m; k++) {
                    double vkp = V[k * m + p], vkq = V[k * m + q];
                    V[k * m + p] = c * vkp - sn * vkq;
                    V[k * m + q] = sn * vkp + c * vkq;
                }
            }
    }
    for (p = 0; p < m; p++) ev[p] = G[p * m + p];
}

static void multipliers(const mbs_sim *s, work_t *W, const double *g, double *x, double *lam);

/* [[M, A^T], [A, 0]] [x; lam] = [h; g] (loops.kkt_solve): M = L L^T, G = A M^-1 A^T,
 * lam = G^+ (A M^-1 h - g), x = M^-1 (h - A^T lam); 1 if M is not positive definite */
static int kkt(const mbs_sim *s, work_t *W, const double *M, const double *h, const double *g, double *x, double *lam)
{
    int n = s->nv, m = s->n_rows, i, j, k;
    double *L = W->L;
    for (j = 0; j < n; j++) {
        double d = M[j * n + j];
        for (k = 0; k < j; k++) d -= L[j * n + k] * L[j * n + k];
        if (!(d > 0.0)) return 1;
        L[j * n + j] = sqrt(d);
        for (i = j + 1; i < n; i++) {
            double acc = M[i * n + j];
            for (k = 0; k < j; k++) acc -= L[i * n + k] * L[j * n + k];
            L[i * n + j] = acc / L[j * n + j];
        }
    }
    for (j = -1; j < m; j++) {                                /* M^-1 h (j = -1), M^-1 A^T columns */
        double *y = j < 0 ? W->Mih : W->x;
        for (i = 0; i < n; i++) {
            double acc = j < 0 ? h[i] : W->A[j * n + i];
            for (k = 0; k < i; k++) acc -= L[i * n + k] * y[k];
            y[i] = acc / L[i * n + i];
        }
        for (i = n - 1; i >= 0; i--) {
            double acc = y[i];
            for (k = i + 1; k < n; k++) acc -= L[k * n + i] * y[k];
            y[i] = acc / L[i * n + i];
        }
        if (j >= 0)
            for (i = 0; i < n; i++) W->MiAT[i * m + j] = W->x[i];
    }
    multipliers(s, W, g, x, lam);
    return 0;
}

/* kkt's end, from M^-1 h in W->Mih and M^-1 A^T in W->MiAT: G = A M^-1 A^T, its minimum-norm
 * inverse on the eigenvalues above RCOND x the largest, lam = G^+ (A M^-1 h - g),
 * x = M^-1 h - M^-1 A^T lam */
static void multipliers(const mbs_sim *s, work_t *W, const double *g, double *x, double *lam)
{
    int n = s->nv, m = s->n_rows, i, j, k;
    double emax = 0.0;
    if (m == 0) {
        memcpy(x, W->Mih, (size_t)n * sizeof(double));
        return;
    }
    for (i = 0; i < m; i++)                                   /* G = A M^-1 A^T */
        for (j = 0; j < m; j++) {
            double acc = 0.0;
            for (k = 0; k < n; k++) acc += W->A[i * n + k] * W->MiAT[k * m + j];
            W->G[i * m + j] = acc;
        }
    for (i = 0; i < m; i++)                                   /* symmetrised */
        for (j = i + 1; j < m; j++) {
            double a = 0.5 * (W->G[i * m + j] + W->G[j * m + i]);
            W->G[i * m + j] = W->G[j * m + i] = a;
        }
    mbs_sym_eigen(W->G, m, W->V, W->ev);
    for (i = 0; i < m; i++) emax = fmax(emax, W->ev[i]);
    for (i = 0; i < m; i++) {                                 /* r = A M^-1 h - g */
        double acc = 0.0;
        for (k = 0; k < n; k++) acc += W->A[i * n + k] * W->Mih[k];
        W->t1[i] = acc - g[i];
    }
    for (j = 0; j < m; j++) {                                 /* t2 = diag(1/ev) V^T r on the kept ones */
        double acc = 0.0;
        for (i = 0; i < m; i++) acc += W->V[i * m + j] * W->t1[i];
        W->t2[j] = (W->ev[j] > RCOND * emax) ? acc / W->ev[j] : 0.0;
    }
    for (i = 0; i < m; i++) {                                 /* lam = V t2 */
        double acc = 0.0;
        for (j = 0; j < m; j++) acc += W->V[i * m + j] * W->t2[j];
        lam[i] = acc;
    }
    for (i = 0; i < n; i++) {                                 /* x = M^-1 h - M^-1 A^T lam */
        double acc = 0.0;
        for (j = 0; j < m; j++) acc += W->MiAT[i * m + j] * lam[j];
        x[i] = W->Mih[i] - acc;
    }
}

/* qdd (nv) and s->lambda with the loops closed, tau (springs, dampers, inputs) and s->fext
 * acting (loops.loop_forward_dynamics with part = None); qdd NaN and 1 if M is singular. E, r
 * hold Xup at q (every caller computed them: mbs_rhs, mbs_forward_dynamics, mbs_input_response).
 * With joint couplings only (URDF mimic) the products M^-1 h and M^-1 A^T come from ABA: one
 * mbs_aba_core for M^-1 h (h = tau - C qd - G + J^T f_ext), then per row an mbs_aba_solve with
 * the same articulated inertias, in O(N) each instead of CRBA, RNEA and a dense Cholesky; the
 * same system (No's Eq. 24), solved as kkt does from there on (loops.py keeps the M form: the
 * tests compare the two). */
int mbs_loop_qdd(mbs_sim *s, const double *q, const double *qd, const double *tau, double *qdd)
{
    work_t W = views(s);
    double alpha = s->baumgarte ? s->alpha : 0.0, beta = s->baumgarte ? s->beta : 0.0;
    int i, j, st;
    constraints(s, &W, q, qd, 1);
    for (j = 0; j < s->n_rows; j++) W.g[j] = W.gamma[j] - 2.0 * alpha * W.Phidot[j] - beta * beta * W.Phi[j];
    if (couplings_only(s)) {                                  /* M^-1 h and M^-1 A^T by ABA, no M */
        mbs_aba_core(s, qd, tau, s->fext, W.Mih);             /* M^-1 (tau - C qd - G + J^T f_ext) */
        for (j = 0; j < s->n_rows; j++) {
            mbs_aba_solve(s, W.A + (size_t)j * (size_t)s->nv, W.x);
            for (i = 0; i < s->nv; i++) W.MiAT[i * s->n_rows + j] = W.x[i];
        }
        st = !mbs_all_finite(W.Mih, s->nv) || !mbs_all_finite(W.MiAT, s->nv * s->n_rows);
        if (!st) multipliers(s, &W, W.g, qdd, s->lambda);
        else
            for (j = 0; j < s->nv; j++) qdd[j] = NAN;
        return st;
    }
    mbs_crba_core(s, W.Mc);
    mbs_rnea_core(s, qd, W.zero, W.h);                        /* h = tau - RNEA(q, qd, 0, f_ext) */
    for (j = 0; j < s->nv; j++) W.h[j] = tau[j] - W.h[j];
    st = kkt(s, &W, W.Mc, W.h, W.g, qdd, s->lambda);
    if (st)
        for (j = 0; j < s->nv; j++) qdd[j] = NAN;
    return st;
}

/* q (+) dv on each joint's manifold (joints.integrate): quaternions compose with exp(dv) */
static void integrate_q(const mbs_sim *s, const double *q, const double *dv, double *out)
{
    int i, k;
    for (i = 1; i <= s->N; i++) {
        const double *qi = q + s->iq[i], *vi = dv + s->iv[i];
        double *o = out + s->iq[i];
        if (s->jtype[i] == MBS_SPHERICAL || s->jtype[i] == MBS_FREE) {
            const double *qt = s->jtype[i] == MBS_FREE ? qi + 3 : qi, *phi = s->jtype[i] == MBS_FREE ? vi + 3 : vi;
            double *ot = s->jtype[i] == MBS_FREE ? o + 3 : o, e[4], angle = sqrt(dot3(phi, phi));
            if (s->jtype[i] == MBS_FREE) {
                double R[9], d[3];
                quat_to_R(qt, R);
                mat3_vec(R, vi, d);
                for (k = 0; k < 3; k++) o[k] = qi[k] + d[k];
            }
            if (angle < 1e-12) {
                double n = sqrt(1.0 + 0.25 * angle * angle);
                e[0] = 1.0 / n;
                for (k = 0; k < 3; k++) e[1 + k] = 0.5 * phi[k] / n;
            } else {
                double sh;
                mbs_sincos(0.5 * angle, &sh, &e[0]);
                for (k = 0; k < 3; k++) e[1 + k] = sh * (phi[k] / angle);
            }
            ot[0] = qt[0] * e[0] - qt[1] * e[1] - qt[2] * e[2] - qt[3] * e[3];   /* q (x) e */
            ot[1] = qt[0] * e[1] + qt[1] * e[0] + qt[2] * e[3] - qt[3] * e[2];
            ot[2] = qt[0] * e[2] - qt[1] * e[3] + qt[2] * e[0] + qt[3] * e[1];
            ot[3] = qt[0] * e[3] + qt[1] * e[2] - qt[2] * e[1] + qt[3] * e[0];
        } else {
            for (k = 0; k < s->nqj[i]; k++) o[k] = qi[k] + vi[k];
        }
    }
}

/* x's q onto Phi = 0 and qd onto A qd = 0 (loops.project, part = None) */
void mbs_loop_project(mbs_sim *s, double *x)
{
    work_t W = views(s);
    double *q = x, *qd = x + s->nq, best = INFINITY, tol = NEWTON_RTOL * s->loop_scale[0];
    int it, j, k;
    if (!mbs_all_finite(x, s->nq + s->nv)) return;            /* reported by the finiteness check */
    mbs_joint_transforms(s, q);
    mbs_crba_core(s, W.Mc);
    memset(W.h, 0, (size_t)s->nv * sizeof(double));
    for (it = 0; it < MAX_NEWTON; it++) {
        double r = 0.0;
        constraints(s, &W, q, NULL, 0);
        for (k = 0; k < s->n_rows; k++) r = fmax(r, fabs(W.Phi[k]));
        if (r <= tol || r >= 0.5 * best) break;
        best = r;
        for (k = 0; k < s->n_rows; k++) W.g[k] = -W.Phi[k];
        if (kkt(s, &W, W.Mc, W.h, W.g, W.dq, W.lam)) return;
        integrate_q(s, q, W.dq, W.qt);
        memcpy(q, W.qt, (size_t)s->nq * sizeof(double));
    }
    constraints(s, &W, q, NULL, 0);
    for (k = 0; k < s->n_rows; k++) {                         /* g = -(A qd) */
        double acc = 0.0;
        for (j = 0; j < s->nv; j++) acc += W.A[k * s->nv + j] * qd[j];
        W.g[k] = -acc;
    }
    if (kkt(s, &W, W.Mc, W.h, W.g, W.dq, W.lam)) return;
    for (j = 0; j < s->nv; j++) qd[j] += W.dq[j];
}

/* max |Phi(q)| over the rows / the loops' length scale L (the drift a host's integrator leaves) */
double mbs_loop_residual(mbs_sim *s, const double *q)
{
    work_t W = views(s);
    double r = 0.0;
    int k;
    if (!s->n_loops) return 0.0;
    constraints(s, &W, q, NULL, 0);
    s->xf_at_x = s->v_at_x = 0;                               /* E, r, v now hold this call's kinematics */
    for (k = 0; k < s->n_rows; k++) r = fmax(r, fabs(W.Phi[k]));
    return r / s->loop_scale[0];
}
