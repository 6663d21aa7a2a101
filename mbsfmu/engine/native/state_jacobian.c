/* state_jacobian.c - the Jacobian of the equations of motion a host's integrator sees (FMI Model
 * Exchange, host_state.c): A = df/dxh (nx x nx) and B = df/du (nx x n_u) of
 *     f(xh, u) = [qdot_h(q, qd), qdd(q, qd, u), P_in(q, qd, u), P_diss(q, qd)]
 * at the host's state xh = [q, qd, W_in, W_diss] (its quaternions of any norm), exactly: every
 * entry is a derivative of a closed form, not a difference quotient.
 *
 * Dynamics rows (qdd, P_in, P_diss): the equation of motion M qdd + h(q, qd) = tau_u + passive(q, qd)
 * + Q(q, qd, u) (RBDA Ch. 6; tau_u the actuators' and wheel motors' inputs, Q the force elements'
 * generalized force) gives, by Carpentier & Mansard (RSS 2018, their route for ABA: dqdd/dx =
 * -M^-1 dtau/dx at qdd = FD(q, qd, tau)),
 *     dqdd/dq = -M^-1 d(RNEA - passive)/dq + M^-1 dQ/dq,   dqdd/dqd likewise,
 *     dqdd/du = M^-1 (B_u + dQ/du)      (B_u: the actuator rows; as response.c's mbs_input_response)
 * with mbs_aba_derivatives (derivatives.c) at tau = tau_u + Q and mbs_force_power_derivatives
 * (force_derivatives.c). The powers (integrate.c mbs_rhs_near) P_in = tau_u . qd + P_in,el(q, qd, u),
 * P_diss = -sum_j d_j qd_j^2 + P_damp,el(q, qd) are differentiated term by term:
 *     dP_in/dqd = tau_u + dP_in,el/dqd,  dP_in/du = qd^T (B_u + dQ/du)  (P_in,el = Q_u . qd, virtual power),
 *     dP_diss/dqd_j = -2 d_j qd_j + dP_damp,el/dqd_j.
 * These derivatives are in the tangent coordinates dq of q (+) dq (mbsfmu/linear/tangent.py: a
 * spherical joint's quaternion turned by exp(dq) on the right, a free joint's origin moved by R dq[:3]);
 * the host's coordinates are the quaternion's four numbers. The dynamics are evaluated at
 * qn = qh / |qh| (host_state.c), and qn (+) dq = qh' / |qh'| to first order for
 *     dq = 2 vec(qn* (x) dqn) = (2 / |qh|^2) G(qh) dqh,   G(p) = [-p_v | p_w 1 - p_v x]  (3 x 4)
 * (qn (x) (1, dq/2) is the right (local) perturbation, d(qh/|qh|) = (1 - qn qn^T) dqh / |qh|, and
 * vec(qn* (x) qn) = 0 removes the radial part; J. Sola, "Quaternion kinematics for the error-state
 * Kalman filter", arXiv:1711.02508, its local perturbation q (x) Exp(dtheta) - named, not numbered,
 * as in derivatives.c), and for a free joint's origin dq[:3] = R(qn)^T dp. So a dynamics row g (in
 * tangent coordinates) becomes g T in the host's, T block diagonal over joints.
 *
 * Kinematic rows (mbs_config_rate and host_state.c): a 1-DoF joint's qdot = qd; a quaternion's
 *     qdot_h = 1/2 qh (x) (0, w) + k (1 - |qh|^2) qh
 * has d/dqh = 1/2 R_(0,w) + k (1 - |qh|^2) 1 - 2 k qh qh^T and d/dw = 1/2 L_qh[:, 1:4] (L_p r = p (x) r =
 * R_r p: the quaternion product's left and right matrices, Sola's [p]_L and [r]_R; the rate
 * 1/2 q (x) (0, w) of body-axes w is integrate.c's quat_rate); a free joint's origin rate R(qn) v has
 * d/dv = R(qn) and d/dqh = -R(qn) [v]x (2 / |qh|^2) G(qh) (R' = R exp(dq x): d(R v) = R (dq x v)).
 * Nothing depends on W_in, W_diss (zero columns).
 *
 * Trees only: derivatives.c refuses closed loops and couplings (MBS_ERROR with the reason), and a
 * joint spring on a multi-DoF joint. */
#include <string.h>
#include "derivatives.h"
#include "force_derivatives.h"
#include "instance.h"
#include "spatial.h"

/* work layout (doubles): derivatives.c's work, force_derivatives.c's work, then x (nx), tau_u, tau,
 * qdd, Q (nv each), dP (4 nv), dqdd_dq, dqdd_dqd, Minv, dQ_dq, dQ_dqd (nv x nv each), dQ_du (nv x n_u) */
size_t mbs_state_jacobian_work(const mbs_sim *s)
{
    size_t nv, nx;
    if (!s || s->magic != MBS_MAGIC) return 0;
    nv = (size_t)s->nv;
    nx = (size_t)s->nx;
    return mbs_derivatives_work(s) + mbs_force_derivatives_work(s) + nx + 8 * nv + 5 * nv * nv +
           nv * (size_t)s->n_u;
}

/* T = (2 / |qh|^2) G(qh) (3 x 4, row-major): dq of a host quaternion change dqh (header) */
static void tangent_map(const double *qh, double *T)
{
    double w = qh[0], x = qh[1], y = qh[2], z = qh[3], c = 2.0 / (w * w + x * x + y * y + z * z);
    T[0] = -c * x; T[1] = c * w;  T[2] = c * z;  T[3] = -c * y;
    T[4] = -c * y; T[5] = -c * z; T[6] = c * w;  T[7] = c * x;
    T[8] = -c * z; T[9] = c * y;  T[10] = -c * x; T[11] = c * w;
}

/* row[iq-columns] = g T: the derivative g (nv,) in tangent coordinates as columns of the host's q (nq,) */
static void to_host(const mbs_sim *s, const double *x, const double *xh, const double *g, double *row)
{
    int i, b, c;
    for (i = 1; i <= s->N; i++) {
        const double *gi = g + s->iv[i];
        double *r = row + s->iq[i], T[12], R[9];
        int jt = s->jtype[i];
        if (jt == MBS_SPHERICAL || jt == MBS_FREE) {
            int at = jt == MBS_FREE ? 3 : 0;                  /* the quaternion's first entry in q_i */
            tangent_map(xh + s->iq[i] + at, T);
            if (jt == MBS_FREE) {                             /* origin: dq[:3] = R^T dp */
                quat_to_R(x + s->iq[i] + 3, R);
                for (c = 0; c < 3; c++) r[c] = R[3 * c] * gi[0] + R[3 * c + 1] * gi[1] + R[3 * c + 2] * gi[2];
            }
            for (c = 0; c < 4; c++) {
                double acc = 0.0;
                for (b = 0; b < 3; b++) acc += gi[at + b] * T[4 * b + c];
                r[at + c] = acc;
            }
        } else {
            for (b = 0; b < s->nqj[i]; b++) r[b] = gi[b];
        }
    }
}

/* the kinematic rows of joint i into A (nx x nx): d(qdot_h)/dqh and d(qdot_h)/dqd (header) */
static void kinematic_rows(const mbs_sim *s, int i, const double *x, const double *xh, double k_norm, double *A)
{
    int nq = s->nq, nx = s->nx, iq = s->iq[i], iv = nq + s->iv[i], jt = s->jtype[i], r, c, b;
    size_t ld = (size_t)nx;
    if (jt == MBS_SPHERICAL || jt == MBS_FREE) {
        int at = jt == MBS_FREE ? 3 : 0;
        const double *qh = xh + iq + at, *w = xh + iv + at;
        double n2 = qh[0] * qh[0] + qh[1] * qh[1] + qh[2] * qh[2] + qh[3] * qh[3];
        /* 1/2 R_(0,w) and 1/2 L_qh (columns 1..3) */
        const double Rw[16] = {0.0,   -w[0], -w[1], -w[2],
                               w[0],  0.0,   w[2],  -w[1],
                               w[1],  -w[2], 0.0,   w[0],
                               w[2],  w[1],  -w[0], 0.0};
        const double Lq[12] = {-qh[1], -qh[2], -qh[3],
                               qh[0],  -qh[3], qh[2],
                               qh[3],  qh[0],  -qh[1],
                               -qh[2], qh[1],  qh[0]};
        for (r = 0; r < 4; r++) {
            double *row = A + ld * (size_t)(iq + at + r);
            for (c = 0; c < 4; c++)
                row[iq + at + c] = 0.5 * Rw[4 * r + c] - 2.0 * k_norm * qh[r] * qh[c] +
                                   (r == c ? k_norm * (1.0 - n2) : 0.0);
            for (c = 0; c < 3; c++) row[iv + at + c] = 0.5 * Lq[3 * r + c];
        }
        if (jt == MBS_FREE) {                                 /* origin rows: R v */
            const double *v = xh + iv;
            double R[9], T[12], RV[9];
            quat_to_R(x + iq + 3, R);
            tangent_map(qh, T);
            for (r = 0; r < 3; r++) {                         /* RV = -R [v]x */
                RV[3 * r] = -(R[3 * r + 1] * v[2] - R[3 * r + 2] * v[1]);
                RV[3 * r + 1] = -(R[3 * r + 2] * v[0] - R[3 * r] * v[2]);
                RV[3 * r + 2] = -(R[3 * r] * v[1] - R[3 * r + 1] * v[0]);
            }
            for (r = 0; r < 3; r++) {
                double *row = A + ld * (size_t)(iq + r);
                for (c = 0; c < 3; c++) row[iv + c] = R[3 * r + c];
                for (c = 0; c < 4; c++) {
                    double acc = 0.0;
                    for (b = 0; b < 3; b++) acc += RV[3 * r + b] * T[4 * b + c];
                    row[iq + 3 + c] = acc;
                }
            }
        }
    } else {
        for (b = 0; b < s->nqj[i]; b++) A[ld * (size_t)(iq + b) + iv + b] = 1.0;
    }
}

/* Y += Minv X for X (nv x n, row-major) */
static void add_minv_times(const double *Minv, const double *X, int nv, int n, double *Y)
{
    int r, k, c;
    for (r = 0; r < nv; r++)
        for (k = 0; k < nv; k++) {
            double m = Minv[(size_t)nv * r + k];
            if (m == 0.0) continue;
            for (c = 0; c < n; c++) Y[(size_t)n * r + c] += m * X[(size_t)n * k + c];
        }
}

int mbs_state_jacobian(mbs_sim *s, const double *xh, const double *u, double k_norm, double *work, double *A,
                       double *B)
{
    int nq, nv, nx, nu, e, j, k, a;
    double *x, *tau_u, *tau, *qdd, *Q, *dP, *dqdd_dq, *dqdd_dqd, *Minv, *dQ_dq, *dQ_dqd, *dQ_du, *dw, *fw;
    const double *q, *qd;
    size_t nn;
    if (!s || s->magic != MBS_MAGIC) return MBS_ERROR;
    if (!xh || !u || !work || !A || !B) {
        mbs_fmt(s->msg, MBS_MSG, "a NULL argument");
        return MBS_ERROR;
    }
    if (s->n_loops > 0) {
        mbs_fmt(s->msg, MBS_MSG, "the Jacobian of the state derivatives is for trees: this model has %d closed "
                "loop(s) or coupling(s), which the analytic derivatives (derivatives.c) do not cover", s->n_loops);
        return MBS_ERROR;
    }
    if (s->params_dirty) {
        mbs_fmt(s->msg, MBS_MSG, "parameters were set but not applied (mbs_sim_apply_params)");
        return MBS_ERROR;
    }
    nq = s->nq; nv = s->nv; nx = s->nx; nu = s->n_u;
    nn = (size_t)nv * (size_t)nv;
    if (!mbs_all_finite(xh, nx)) { mbs_fmt(s->msg, MBS_MSG, "the state has non-finite entries"); return MBS_ERROR; }
    if (!mbs_all_finite(u, nu)) { mbs_fmt(s->msg, MBS_MSG, "the inputs have non-finite entries"); return MBS_ERROR; }
    if (mbs_quat_directions(s, xh, s->msg, MBS_MSG) != MBS_OK) return MBS_ERROR;
    dw = work;
    fw = dw + mbs_derivatives_work(s);
    x = fw + mbs_force_derivatives_work(s);
    tau_u = x + nx; tau = tau_u + nv; qdd = tau + nv; Q = qdd + nv; dP = Q + nv;
    dqdd_dq = dP + 4 * nv; dqdd_dqd = dqdd_dq + nn; Minv = dqdd_dqd + nn; dQ_dq = Minv + nn; dQ_dqd = dQ_dq + nn;
    dQ_du = dQ_dqd + nn;
    memcpy(x, xh, sizeof(double) * (size_t)nx);               /* the dynamics at qn = qh / |qh| (host_state.c) */
    mbs_normalise(s, x);
    q = x;
    qd = x + nq;
    for (j = 0; j < nv; j++) tau_u[j] = 0.0;                  /* actuators and wheel motors: tau_u = B_u u */
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_ACT) tau_u[s->elem[4 * e + 2]] = u[s->elem[4 * e + 1]];
    if (mbs_force_power_derivatives(s, q, qd, u, fw, Q, dQ_dq, dQ_dqd, dQ_du, dP) != MBS_OK) return MBS_ERROR;
    for (j = 0; j < nv; j++) tau[j] = tau_u[j] + Q[j];
    if (mbs_aba_derivatives(s, q, qd, tau, dw, qdd, dqdd_dq, dqdd_dqd, Minv) != MBS_OK) return MBS_ERROR;
    if (s->has_forces) {                                      /* + M^-1 dQ/dq, M^-1 dQ/dqd */
        add_minv_times(Minv, dQ_dq, nv, nv, dqdd_dq);
        add_minv_times(Minv, dQ_dqd, nv, nv, dqdd_dqd);
    }
    memset(A, 0, sizeof(double) * (size_t)nx * (size_t)nx);
    if (nu) memset(B, 0, sizeof(double) * (size_t)nx * (size_t)nu);
    for (k = 1; k <= s->N; k++) kinematic_rows(s, k, x, xh, k_norm, A);
    for (j = 0; j < nv; j++) {                                /* qdd rows */
        double *row = A + (size_t)nx * (size_t)(nq + j);
        to_host(s, x, xh, dqdd_dq + (size_t)nv * j, row);
        memcpy(row + nq, dqdd_dqd + (size_t)nv * j, sizeof(double) * (size_t)nv);
    }
    {                                                         /* P_in and P_diss rows */
        double *r_in = A + (size_t)nx * (size_t)(nq + nv), *r_diss = r_in + nx;
        to_host(s, x, xh, dP, r_in);
        to_host(s, x, xh, dP + 2 * nv, r_diss);
        for (j = 0; j < nv; j++) {
            r_in[nq + j] = tau_u[j] + dP[nv + j];
            r_diss[nq + j] = -2.0 * s->damping[j] * qd[j] + dP[3 * nv + j];
        }
    }
    if (nu) {                                                 /* B: M^-1 (B_u + dQ/du), qd^T (B_u + dQ/du) */
        double *b_in = B + (size_t)nu * (size_t)(nq + nv);
        for (e = 0; e < s->n_elem; e++)
            if (s->elem[4 * e] == EL_ACT) {
                a = s->elem[4 * e + 1];
                j = s->elem[4 * e + 2];
                for (k = 0; k < nv; k++) B[(size_t)nu * (size_t)(nq + k) + a] += Minv[(size_t)nv * k + j];
                b_in[a] += qd[j];
            }
        if (s->has_forces) {
            add_minv_times(Minv, dQ_du, nv, nu, B + (size_t)nu * (size_t)nq);
            for (k = 0; k < nv; k++)
                for (a = 0; a < nu; a++) b_in[a] += qd[k] * dQ_du[(size_t)nu * k + a];
        }
    }
    if (!mbs_all_finite(A, nx * nx) || !mbs_all_finite(B, nx * nu)) {
        mbs_fmt(s->msg, MBS_MSG, "the Jacobian has non-finite entries at this state");
        return MBS_DISCARD;
    }
    return MBS_OK;
}
