/* force_derivatives.c - the generalized force Q(q, qd, u) of the force elements (forces.c
 * mbs_body_wrenches: point spring-dampers, thrusters, body wrenches) and its derivatives dQ/dq,
 * dQ/dqd, dQ/du, analytic. With them the forward dynamics M qdd + h(q, qd) = tau + Q (RBDA Ch. 6)
 * has dqdd/dq = -M^-1 (d(RNEA - passive)/dq - dQ/dq) and likewise for qd, dqdd/du = M^-1 (B + dQ/du)
 * (Carpentier & Mansard, RSS 2018, their route for ABA: dqdd/dx = -M^-1 dtau/dx at qdd = FD);
 * mbsfmu/linear/jacobians.py analytic_jacobians adds Minv dQ to derivatives.c's results.
 *
 * Generalized force (RBDA Table 5.1: RNEA's external force f_ext_i enters tau_j = S_j^T f_j of every
 * joint j on i's support; here in world axes): a force F and torque T (world axes) on body i at the
 * world point P are the world wrench f = [P x F + T; F] about the world origin, and the DoF k on
 * i's support (oS_k = [w_k; v_k], world axes at the world origin, derivatives.c) takes
 * Q_k = oS_k^T f = J_k . F + w_k . T with J_k = w_k x P + v_k (w_k . (P x F) = (w_k x P) . F), the
 * velocity of P per unit qd_k: the point Jacobian's column, Q = J^T F + W^T T (virtual work).
 *
 * Derivatives (tangent coordinates dq of mbsfmu/linear/tangent.py, as derivatives.c: dq_m moves
 * every body of m's subtree by the world twist oS_m dq_m to first order). A motion vector fixed in
 * a body that moves by the twist oS_m changes by oS_m x (RBDA Sec. 2.9, d/dt m = v x m), so for
 * m, k on the support of P's body, with m <= k meaning m's joint is k's or an ancestor of it:
 *     d oS_k/dq_m = oS_m x oS_k (m <= k; else 0),   dP/dq_m = J_m,
 *     dJ_k/dq_m = w_m x J_k (m <= k),  w_k x J_m (k < m)      (the two above; Jacobi identity),
 *     d w_k/dq_m = w_m x w_k (m <= k; else 0),
 * a direction fixed in body i (thruster, body-axes wrench) turns by w_m x for every m on i's
 * support, and the point velocity V = sum_k J_k qd_k has dV/dq_m = sum_k dJ_k/dq_m qd_k,
 * dV/dqd_k = J_k.
 *
 * Point spring-dampers (forces.c: tension T = k (l - l0) + d ldot, T e on point a, -T e on b, e the
 * unit vector a -> b): Q = -T g with g_k = dl/dq_k = e . D_k, D_k = J_k(P_b) - J_k(P_a), and
 * ldot = g . qd, so
 *     dQ/dq = -g dT/dq^T - T dg/dq,   dQ/dqd = -d g g^T,   dT/dq_m = k g_m + d dldot/dq_m,
 *     dg_k/dq_m = (D_k . D_m - g_k g_m) / l + e . (dJ_k(P_b)/dq_m - dJ_k(P_a)/dq_m),
 *     dldot/dq_m = (D_m - g_m e) . (V_b - V_a) / l + e . (dV_b/dq_m - dV_a/dq_m)
 * ((1 - e e^T) / l the derivative of d / |d|). A spring shorter than LENGTH_EPS has no direction
 * and no force (forces.c), so none of these either.
 *
 * External wrenches f_ext (mbs_wrench_derivatives; body axes at the body origins, as aba.c takes
 * them) are body-axes wrenches at P = p_i: the same terms with F = R_i f, T = R_i n turning. */
#include <string.h>
#include "force_derivatives.h"
#include "instance.h"
#include "spatial.h"

#define LENGTH_EPS 1e-12   /* [m] forces.c: a shorter spring has no direction, force zero */

static int valid(const mbs_sim *s) { return s && s->magic == MBS_MAGIC; }

/* work layout (doubles): oS (6 nv), Ja, Jb, D, dVa, dVb (3 nv each), g, dldot (nv each), then ints
 * (in as many doubles): dof body (nv), depth (N + 1), support of a, support of b, their union, the
 * flags of a's and b's supports (nv each) */
size_t mbs_force_derivatives_work(const mbs_sim *s)
{
    if (!valid(s)) return 0;
    return 23 * (size_t)s->nv + 6 * (size_t)s->nv + (size_t)s->N + 1;
}

typedef struct {
    const double *oS;   /* (nv x 6) world twists per unit rate */
    const int *body;    /* body of each DoF */
    const int *depth;   /* depth of each body (world 0) */
} dofs;

/* m <= k: m's joint is k's or an ancestor of it (both on one support path) */
static int before(const dofs *d, int m, int k) { return d->depth[d->body[m]] <= d->depth[d->body[k]]; }

/* the DoFs of body i's support (the joints from i to the world) into list; their number */
static int support(const mbs_sim *s, int i, int *list)
{
    int n = 0, b;
    for (; i > 0; i = s->parent[i])
        for (b = 0; b < s->nvj[i]; b++) list[n++] = s->iv[i] + b;
    return n;
}

/* J (3 nv, the columns of list only) = w_k x P + v_k: the world velocity of the world point P per unit qd_k */
static void point_jacobian(const dofs *d, const double *P, const int *list, int n, double *J)
{
    int a, c;
    for (a = 0; a < n; a++) {
        int k = list[a];
        const double *S = d->oS + 6 * k;
        cross3(S, P, J + 3 * k);
        for (c = 0; c < 3; c++) J[3 * k + c] += S[3 + c];
    }
}

/* out = dJ_k/dq_m for k, m on the support of the point with Jacobian J (header) */
static void dJ(const dofs *d, const double *J, int k, int m, double *out)
{
    if (before(d, m, k)) cross3(d->oS + 6 * m, J + 3 * k, out);
    else cross3(d->oS + 6 * k, J + 3 * m, out);
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* the world point of body point r on body i */
static void world_point(const mbs_sim *s, int i, const double *r, double *P)
{
    int c;
    mat3_vec(s->Rw + 9 * i, r, P);
    for (c = 0; c < 3; c++) P[c] += s->pw[3 * i + c];
}

/* Q += J^T F + W^T T and dQ/dq for a force F and torque T (world) on body i at P (header); turning:
 * F and T are fixed in body i's axes (thrusters, body-axes wrenches), else in the world's. dP (NULL
 * to skip): dP_dq += qd^T dQ/dq and dP_dqd += Q, the derivatives of this force's power
 * P = F . V + T . w = Q . qd (virtual power, RBDA Sec. 2.7) */
static void wrench_terms(const mbs_sim *s, const dofs *d, int i, const double *P, const double *F, const double *T,
                         int turning, int *list, double *J, double *Q, double *dQ_dq, const double *qd, double *dP_dq,
                         double *dP_dqd)
{
    int n = support(s, i, list), a, b, nv = s->nv;
    point_jacobian(d, P, list, n, J);
    for (a = 0; a < n; a++) {
        int k = list[a];
        const double *wk = d->oS + 6 * k;
        double Qk = dot3(J + 3 * k, F) + dot3(wk, T);
        Q[k] += Qk;
        if (dP_dq) dP_dqd[k] += Qk;
        for (b = 0; b < n; b++) {
            int m = list[b];
            const double *wm = d->oS + 6 * m;
            double t[3], x = 0.0;
            dJ(d, J, k, m, t);                                /* dJ_k/dq_m . F */
            x += dot3(t, F);
            if (before(d, m, k)) {                            /* d w_k/dq_m . T */
                cross3(wm, wk, t);
                x += dot3(t, T);
            }
            if (turning) {                                    /* J_k . (w_m x F) + w_k . (w_m x T) */
                cross3(wm, F, t);
                x += dot3(J + 3 * k, t);
                cross3(wm, T, t);
                x += dot3(wk, t);
            }
            dQ_dq[(size_t)nv * k + m] += x;
            if (dP_dq) dP_dq[m] += qd[k] * x;
        }
    }
}

/* the point spring-damper of element e (header): Q, dQ/dq, dQ/dqd; dP (NULL to skip): the
 * derivatives of its damper's power P = -d ldot^2 (forces.c p_damp), dP/dq_m = -2 d ldot dldot/dq_m
 * into dP_dq, dP/dqd_m = -2 d ldot g_m into dP_dqd (ldot = g . qd) */
static void spring_terms(const mbs_sim *s, const dofs *d, const int32_t *el, const double *num, const double *qd,
                         double *w, int *la, int *lb, int *lu, int *on_a, int *on_b, double *Q, double *dQ_dq,
                         double *dQ_dqd, double *dP_dq, double *dP_dqd)
{
    int nv = s->nv, ia = el[1], ib = el[2], na, nb, nu = 0, a, b, c, j, m;
    const double k = num[6], dd = num[7], l0 = num[8];   /* dd: the header's damping d */
    double *Ja = w, *Jb = Ja + 3 * nv, *D = Jb + 3 * nv, *dVa = D + 3 * nv, *dVb = dVa + 3 * nv;
    double *g = dVb + 3 * nv, *dldot = g + nv;
    double Pa[3], Pb[3], Va[3] = {0, 0, 0}, Vb[3] = {0, 0, 0}, dv[3], e[3], l, ldot, T;
    world_point(s, ia, num, Pa);
    world_point(s, ib, num + 3, Pb);
    for (c = 0; c < 3; c++) e[c] = Pb[c] - Pa[c];
    l = sqrt(dot3(e, e));
    if (l < LENGTH_EPS) return;                               /* no direction, no force (forces.c) */
    for (c = 0; c < 3; c++) e[c] /= l;
    memset(w, 0, sizeof(double) * 17 * (size_t)nv);
    na = ia > 0 ? support(s, ia, la) : 0;
    nb = ib > 0 ? support(s, ib, lb) : 0;
    point_jacobian(d, Pa, la, na, Ja);
    point_jacobian(d, Pb, lb, nb, Jb);
    memset(on_a, 0, sizeof(int) * (size_t)nv);
    memset(on_b, 0, sizeof(int) * (size_t)nv);
    for (a = 0; a < na; a++) on_a[la[a]] = 1;
    for (b = 0; b < nb; b++) on_b[lb[b]] = 1;
    for (a = 0; a < na; a++) lu[nu++] = la[a];                /* the union of the supports */
    for (b = 0; b < nb; b++)
        if (!on_a[lb[b]]) lu[nu++] = lb[b];
    for (a = 0; a < na; a++)
        for (c = 0; c < 3; c++) Va[c] += Ja[3 * la[a] + c] * qd[la[a]];
    for (b = 0; b < nb; b++)
        for (c = 0; c < 3; c++) Vb[c] += Jb[3 * lb[b] + c] * qd[lb[b]];
    for (a = 0; a < na; a++)                                  /* dV/dq_m = sum_k dJ_k/dq_m qd_k */
        for (b = 0; b < na; b++) {
            dJ(d, Ja, la[b], la[a], dv);
            for (c = 0; c < 3; c++) dVa[3 * la[a] + c] += dv[c] * qd[la[b]];
        }
    for (a = 0; a < nb; a++)
        for (b = 0; b < nb; b++) {
            dJ(d, Jb, lb[b], lb[a], dv);
            for (c = 0; c < 3; c++) dVb[3 * lb[a] + c] += dv[c] * qd[lb[b]];
        }
    for (c = 0; c < 3; c++) dv[c] = Vb[c] - Va[c];
    ldot = dot3(e, dv);
    T = k * (l - l0) + dd * ldot;
    for (a = 0; a < nu; a++) {
        double Dm_dv;
        m = lu[a];
        for (c = 0; c < 3; c++) D[3 * m + c] = Jb[3 * m + c] - Ja[3 * m + c];
        g[m] = dot3(e, D + 3 * m);
        Dm_dv = dot3(D + 3 * m, dv);
        dldot[m] = (Dm_dv - g[m] * ldot) / l;
        for (c = 0; c < 3; c++) dldot[m] += e[c] * (dVb[3 * m + c] - dVa[3 * m + c]);
        if (dP_dq) {
            dP_dq[m] -= 2.0 * dd * ldot * dldot[m];
            dP_dqd[m] -= 2.0 * dd * ldot * g[m];
        }
    }
    for (a = 0; a < nu; a++) {
        j = lu[a];
        Q[j] -= T * g[j];
        for (b = 0; b < nu; b++) {
            double dg, ta[3] = {0, 0, 0}, tb[3] = {0, 0, 0}, dT;
            m = lu[b];
            if (on_a[j] && on_a[m]) dJ(d, Ja, j, m, ta);
            if (on_b[j] && on_b[m]) dJ(d, Jb, j, m, tb);
            for (c = 0; c < 3; c++) tb[c] -= ta[c];
            dg = (dot3(D + 3 * j, D + 3 * m) - g[j] * g[m]) / l + dot3(e, tb);
            dT = k * g[m] + dd * dldot[m];
            dQ_dq[(size_t)nv * j + m] -= g[j] * dT + T * dg;
            dQ_dqd[(size_t)nv * j + m] -= dd * g[j] * g[m];
        }
    }
}

/* the checks both entry points make (qd NULL: not an argument) */
static int check(mbs_sim *s, const double *q, const double *qd)
{
    if (!mbs_all_finite(q, s->nq)) { mbs_fmt(s->msg, MBS_MSG, "q has non-finite entries"); return MBS_ERROR; }
    if (qd && !mbs_all_finite(qd, s->nv)) { mbs_fmt(s->msg, MBS_MSG, "qd has non-finite entries"); return MBS_ERROR; }
    if (s->params_dirty) {
        mbs_fmt(s->msg, MBS_MSG, "parameters were changed but not applied (mbs_sim_apply_params)");
        return MBS_ERROR;
    }
    return MBS_OK;
}

/* the poses at q and the DoF table d in work (layout at mbs_force_derivatives_work); the ints
 * after it (la) for the callers' lists; Q, dQ_dq zeroed */
static int *setup(mbs_sim *s, const double *q, double *work, dofs *d, double *Q, double *dQ_dq)
{
    int nv = s->nv, i, b, c, *body, *depth;
    double *oS = work;
    body = (int *)(work + 23 * (size_t)nv);
    depth = body + nv;
    memset(Q, 0, sizeof(double) * (size_t)nv);
    memset(dQ_dq, 0, sizeof(double) * (size_t)nv * nv);
    mbs_joint_transforms(s, q);
    mbs_forward_kinematics(s, NULL, NULL, 0, 0, NULL);        /* R_i, p_i: X_0i */
    depth[0] = 0;
    for (i = 1; i <= s->N; i++) {                             /* oS_k = X_0i S_i: [R w; R v + p x (R w)] */
        const double *R = s->Rw + 9 * i, *p = s->pw + 3 * i;
        depth[i] = depth[s->parent[i]] + 1;
        for (b = 0; b < s->nvj[i]; b++) {
            int k = s->iv[i] + b;
            double m[6], t[3], *S = oS + 6 * k;
            for (c = 0; c < 6; c++) m[c] = M6(s->S + 36 * i, c, b);
            mat3_vec(R, m, S);
            mat3_vec(R, m + 3, t);
            cross3(p, S, S + 3);
            for (c = 0; c < 3; c++) S[3 + c] += t[c];
            body[k] = i;
        }
    }
    d->oS = oS;
    d->body = body;
    d->depth = depth;
    return depth + s->N + 1;
}

int mbs_wrench_derivatives(mbs_sim *s, const double *q, const double *f_ext, double *work, double *Q, double *dQ_dq)
{
    int i, c;
    int *la;
    dofs d;
    if (!valid(s)) return MBS_ERROR;
    if (!q || !f_ext || !work || !Q || !dQ_dq) {
        mbs_fmt(s->msg, MBS_MSG, "a NULL argument");
        return MBS_ERROR;
    }
    if (check(s, q, NULL)) return MBS_ERROR;
    if (!mbs_all_finite(f_ext + 6, 6 * s->N)) { mbs_fmt(s->msg, MBS_MSG, "f_ext has non-finite entries"); return MBS_ERROR; }
    la = setup(s, q, work, &d, Q, dQ_dq);
    for (i = 1; i <= s->N; i++) {                             /* [n; f] body axes at the origin: T = R n, F = R f at p */
        const double *R = s->Rw + 9 * i, *f = f_ext + 6 * i;
        double F[3], T[3];
        for (c = 0; c < 6 && f[c] == 0.0; c++) {}
        if (c == 6) continue;
        mat3_vec(R, f, T);
        mat3_vec(R, f + 3, F);
        wrench_terms(s, &d, i, s->pw + 3 * i, F, T, 1, la, work + 6 * (size_t)s->nv, Q, dQ_dq, NULL, NULL, NULL);
    }
    return MBS_OK;
}

/* mbs_force_derivatives and, with dP (4 nv doubles, NULL to skip), mbs_force_power_derivatives' dP */
static int force_derivatives(mbs_sim *s, const double *q, const double *qd, const double *u, double *work, double *Q,
                             double *dQ_dq, double *dQ_dqd, double *dQ_du, double *dP)
{
    int nv, nu, e, c, *la, *lb, *lu, *on_a, *on_b;
    double *oS, *w;
    dofs d;
    if (!valid(s)) return MBS_ERROR;
    if (!q || !qd || !u || !work || !Q || !dQ_dq || !dQ_dqd || !dQ_du) {
        mbs_fmt(s->msg, MBS_MSG, "a NULL argument");
        return MBS_ERROR;
    }
    if (check(s, q, qd)) return MBS_ERROR;
    if (!mbs_all_finite(u, s->n_u)) { mbs_fmt(s->msg, MBS_MSG, "u has non-finite entries"); return MBS_ERROR; }
    nv = s->nv;
    nu = s->n_u;
    oS = work;
    w = oS + 6 * (size_t)nv;
    la = setup(s, q, work, &d, Q, dQ_dq);
    lb = la + nv;
    lu = lb + nv;
    on_a = lu + nv;
    on_b = on_a + nv;
    memset(dQ_dqd, 0, sizeof(double) * (size_t)nv * nv);
    if (nu) memset(dQ_du, 0, sizeof(double) * (size_t)nv * nu);
    if (dP) memset(dP, 0, sizeof(double) * 4 * (size_t)nv);
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        const double *num = s->elem_f + 9 * e;
        if (el[0] == EL_THRUSTER || el[0] == EL_WRENCH) {
            int i = el[1], n, a, col, world = el[0] == EL_WRENCH && el[2];
            const double *R = s->Rw + 9 * i;
            double P[3], F[3] = {0, 0, 0}, T[3] = {0, 0, 0};
            if (i == 0) continue;
            world_point(s, i, num, P);
            if (el[0] == EL_THRUSTER) {                       /* F = R_i (u d) */
                double ud[3];
                for (c = 0; c < 3; c++) ud[c] = u[el[3]] * num[3 + c];
                mat3_vec(R, ud, F);
            } else if (world) {
                for (c = 0; c < 3; c++) { F[c] = u[el[3] + c]; T[c] = u[el[3] + 3 + c]; }
            } else {
                mat3_vec(R, u + el[3], F);
                mat3_vec(R, u + el[3] + 3, T);
            }
            wrench_terms(s, &d, i, P, F, T, !world, la, w, Q, dQ_dq, qd, dP, dP ? dP + nv : NULL);
            n = support(s, i, la);                            /* dQ/du: Q is linear in u (w holds J) */
            for (col = 0; col < (el[0] == EL_THRUSTER ? 1 : 6); col++) {
                double dir[3];
                if (el[0] == EL_THRUSTER) mat3_vec(R, num + 3, dir);
                else if (world) { dir[0] = dir[1] = dir[2] = 0.0; dir[col % 3] = 1.0; }
                else for (c = 0; c < 3; c++) dir[c] = R[3 * c + col % 3];
                for (a = 0; a < n; a++) {
                    int k = la[a];
                    const double *Jk = col < 3 ? w + 3 * k : oS + 6 * k;   /* force: J_k; torque: w_k */
                    dQ_du[(size_t)nu * k + el[3] + col] += dot3(Jk, dir);
                }
            }
        } else if (el[0] == EL_SPRING) {
            spring_terms(s, &d, el, num, qd, w, la, lb, lu, on_a, on_b, Q, dQ_dq, dQ_dqd, dP ? dP + 2 * nv : NULL,
                         dP ? dP + 3 * nv : NULL);
        }
    }
    return MBS_OK;
}

int mbs_force_derivatives(mbs_sim *s, const double *q, const double *qd, const double *u, double *work, double *Q,
                          double *dQ_dq, double *dQ_dqd, double *dQ_du)
{
    return force_derivatives(s, q, qd, u, work, Q, dQ_dq, dQ_dqd, dQ_du, NULL);
}

int mbs_force_power_derivatives(mbs_sim *s, const double *q, const double *qd, const double *u, double *work,
                                double *Q, double *dQ_dq, double *dQ_dqd, double *dQ_du, double *dP)
{
    if (valid(s) && !dP) {
        mbs_fmt(s->msg, MBS_MSG, "a NULL argument");
        return MBS_ERROR;
    }
    return force_derivatives(s, q, qd, u, work, Q, dQ_dq, dQ_dqd, dQ_du, dP);
}
