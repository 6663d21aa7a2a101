/* integrate.c - the equations of motion of the state x = [q, qd, W_in, W_diss] and their
 * integration: fixed-step RK4 with ceil(dt / h_max) equal sub-steps and DOP853 with rtol, atol
 * and h_max, as mbsfmu/simulator.py (Simulator.rhs, step) and mbsfmu/integrators.py do. */
#include <string.h>
#include "instance.h"
#include "spatial.h"
#include "dop853_coef.h"

/* out[s: s + 4] = 1/2 q (x) (0, w): quaternion rate from body angular velocity w (spatial.quat_rate) */
static void quat_rate(const double *qt, const double *w, double *out)
{
    double w1 = qt[0], x1 = qt[1], y1 = qt[2], z1 = qt[3];
    out[0] = 0.5 * (w1 * 0.0 - x1 * w[0] - y1 * w[1] - z1 * w[2]);
    out[1] = 0.5 * (w1 * w[0] + x1 * 0.0 + y1 * w[2] - z1 * w[1]);
    out[2] = 0.5 * (w1 * w[1] - x1 * w[2] + y1 * 0.0 + z1 * w[0]);
    out[3] = 0.5 * (w1 * w[2] + x1 * w[1] - y1 * w[0] + z1 * 0.0);
}

/* out (nq) = dq/dt from qd (joints.config_rate): quaternion kinematics, the free joint's
 * position moving with R(quat) v; qd itself when nq = nv (no spherical or free joint: every
 * other joint has as many coordinates as rates, so q's and qd's layouts are the same) */
void mbs_config_rate(const mbs_sim *s, const double *q, const double *qd, double *out)
{
    int i, k;
    if (s->nq == s->nv) {
        memcpy(out, qd, sizeof(double) * (size_t)s->nv);
        return;
    }
    for (i = 1; i <= s->N; i++) {
        const double *qi = q + s->iq[i], *vi = qd + s->iv[i];
        double *o = out + s->iq[i];
        if (s->jtype[i] == MBS_SPHERICAL) {
            quat_rate(qi, vi, o);
        } else if (s->jtype[i] == MBS_FREE) {
            double R[9];
            quat_to_R(qi + 3, R);
            mat3_vec(R, vi, o);
            quat_rate(qi + 3, vi + 3, o + 3);
        } else {
            for (k = 0; k < s->nqj[i]; k++) o[k] = vi[k];
        }
    }
}

/* xdot = [dq/dt, qdd, P_in, P_diss] at x with inputs u (Simulator.rhs); x0: see mbs_rhs_near */
void mbs_rhs_near(mbs_sim *s, const double *x, const double *u, double *xdot, const double *x0)
{
    int nq = s->nq, nv = s->nv, j, e;
    const double *q = x, *qd = x + nq;
    double p_in = 0.0, p_damp = 0.0, acc;
    mbs_joint_transforms_near(s, q, x0);
    for (j = 0; j < nv; j++) s->tau_u[j] = 0.0;
    for (e = 0; e < s->n_elem; e++)                           /* actuators and wheel motors: tau_u = u */
        if (s->elem[4 * e] == EL_ACT) s->tau_u[s->elem[4 * e + 2]] = u[s->elem[4 * e + 1]];
    if (s->has_forces || s->n_loops)                          /* else the ABA takes no f_ext (NULL) */
        memset(s->fext, 0, sizeof(double) * 6 * (size_t)(s->N + 1));
    if (s->has_forces) {
        mbs_forward_kinematics(s, qd, NULL, 1, 0, s->fk_need);   /* the bodies the forces act on */
        mbs_body_wrenches(s, u, &p_in, &p_damp);
    }
    mbs_passive_forces(s, q, qd, s->tau);                     /* tau = tau_u + passive */
    for (j = 0; j < nv; j++) s->tau[j] = s->tau_u[j] + s->tau[j];
    if (s->n_loops) mbs_loop_qdd(s, q, qd, s->tau, xdot + nq);   /* loops closed (No's method, Eq. 24) */
    else mbs_aba_core(s, qd, s->tau, s->has_forces ? s->fext : NULL, xdot + nq);
    acc = 0.0;
    for (j = 0; j < nv; j++) acc += s->tau_u[j] * qd[j];      /* P_in += tau_u . qd */
    p_in += acc;
    acc = 0.0;
    for (j = 0; j < nv; j++) acc += s->damping[j] * (qd[j] * qd[j]);   /* P_diss -= d . qd^2 */
    p_damp -= acc;
    mbs_config_rate(s, q, qd, xdot);
    xdot[nq + nv] = p_in;
    xdot[nq + nv + 1] = p_damp;
    s->n_rhs++;
    s->kin_valid = 0;
}

void mbs_rhs(mbs_sim *s, const double *x, const double *u, double *xdot) { mbs_rhs_near(s, x, u, xdot, NULL); }

/* every quaternion of x divided by its norm (Simulator._normalise) */
void mbs_normalise(const mbs_sim *s, double *x)
{
    int e, k;
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_QUAT) {
            double *qt = x + s->elem[4 * e + 1];
            double n = sqrt(qt[0] * qt[0] + qt[1] * qt[1] + qt[2] * qt[2] + qt[3] * qt[3]);
            for (k = 0; k < 4; k++) qt[k] /= n;
        }
}

/* MBS_OK if every quaternion of q has a direction (|q|^2 positive and finite, and so 2 / |q|^2 of
 * quat_to_R, spatial.h), else MBS_ERROR with the reason in err */
int mbs_quat_directions(const mbs_sim *s, const double *q, char *err, size_t n_err)
{
    int e;
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_QUAT) {
            const double *qt = q + s->elem[4 * e + 1];
            double n2 = qt[0] * qt[0] + qt[1] * qt[1] + qt[2] * qt[2] + qt[3] * qt[3];
            if (!(n2 > 0.0) || !isfinite(n2) || !isfinite(1.0 / n2)) {
                mbs_fmt(err, n_err, "q[%d:%d] is a quaternion of norm %g: it has no direction (|q|^2 must be "
                        "positive and finite)", (int)s->elem[4 * e + 1], (int)s->elem[4 * e + 1] + 4, sqrt(n2));
                return MBS_ERROR;
            }
        }
    return MBS_OK;
}

/* the name of state entry k for messages ("q.<joint>[k]", "qd.<joint>", "W_in", "W_diss") */
static void state_name(const mbs_sim *s, int k, char *buf, size_t n)
{
    int i, part = k < s->nq ? 0 : k < s->nq + s->nv ? 1 : 2;
    int off = part == 0 ? k : k - s->nq;
    if (part == 2) {
        mbs_fmt(buf, n, "%s", k == s->nx - 2 ? "W_in" : "W_diss");
        return;
    }
    for (i = 1; i <= s->N; i++) {
        int st = part == 0 ? s->iq[i] : s->iv[i], sz = part == 0 ? s->nqj[i] : s->nvj[i];
        if (off >= st && off < st + sz) {
            if (sz > 1) mbs_fmt(buf, n, "%s.%s[%d]", part == 0 ? "q" : "qd", mbs_joint_name(s, i), off - st + 1);
            else mbs_fmt(buf, n, "%s.%s", part == 0 ? "q" : "qd", mbs_joint_name(s, i));
            return;
        }
    }
    mbs_fmt(buf, n, "x[%d]", k);
}

/* MBS_OK if x is finite, else MBS_DISCARD with the message naming up to 5 entries */
static int check_finite(mbs_sim *s, const double *x, double t)
{
    int k, bad = 0;
    char name[128];
    for (k = 0; k < s->nx; k++)
        if (!isfinite(x[k])) {
            if (bad == 0) mbs_fmt(s->msg, MBS_MSG, "non-finite state at t = %.9g s in ", t);
            if (bad < 5) {
                state_name(s, k, name, sizeof name);
                mbs_append(s->msg, MBS_MSG, "%s%s", bad ? ", " : "", name);
            }
            bad++;
        }
    if (bad > 5) mbs_append(s->msg, MBS_MSG, " and more");
    if (bad) mbs_append(s->msg, MBS_MSG, " (last good t = %.9g s)", s->t);
    return bad ? MBS_DISCARD : MBS_OK;
}

/* f(x, u) of the step's start state into K row 0, or nothing when the lazy outputs already put
 * it there at this state (mbs_sim_qdd: qdd_valid): the same function at the same x and u, so the
 * same bits. Counted as an evaluation either way (the statistics do not depend on what was read). */
static void first_stage(mbs_sim *s, const double *x)
{
    if (s->qdd_valid) s->n_rhs++;
    else mbs_rhs(s, x, s->u, s->K);
}

/* One classical Runge-Kutta step of h from x into xn (integrators.rk4_step, Hairer et al.
 * Table II.1.2), then the quaternions renormalised. first: x is the current state s->x (its
 * f may be cached in K row 0). The later stages take their joint angles' sin and cos from x's
 * (mbs_rhs_near). */
static void rk4_step(mbs_sim *s, const double *x, double h, double *xn, int first)
{
    int n = s->nx, j;
    double *k1 = s->K, *k2 = s->K + n, *k3 = s->K + 2 * n, *k4 = s->K + 3 * n, *xs = s->xs;
    if (first) first_stage(s, x);
    else mbs_rhs(s, x, s->u, k1);
    for (j = 0; j < n; j++) xs[j] = x[j] + 0.5 * h * k1[j];
    mbs_rhs_near(s, xs, s->u, k2, x);
    for (j = 0; j < n; j++) xs[j] = x[j] + 0.5 * h * k2[j];
    mbs_rhs_near(s, xs, s->u, k3, x);
    for (j = 0; j < n; j++) xs[j] = x[j] + h * k3[j];
    mbs_rhs_near(s, xs, s->u, k4, x);
    for (j = 0; j < n; j++) xn[j] = x[j] + (h / 6.0) * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
    mbs_normalise(s, xn);
    if (s->n_loops && s->projection) mbs_loop_project(s, xn);
}

/* step(dt) with "rk4": n = ceil(dt / h_max - 1e-9) equal sub-steps (Simulator.step); the
 * state is left as before on a non-finite sub-step (MBS_DISCARD). */
int mbs_rk4(mbs_sim *s, double dt)
{
    double nd = ceil(dt / s->h_max - 1e-9), h;
    long long n = nd < 1.0 ? 1 : (long long)nd, k;
    int st;
    if (!(nd < 1e15)) {
        mbs_fmt(s->msg, MBS_MSG, "step dt = %g s needs too many sub-steps of h_max = %g s", dt, s->h_max);
        return MBS_ERROR;
    }
    h = dt / (double)n;
    memcpy(s->x0, s->x, sizeof(double) * (size_t)s->nx);
    for (k = 0; k < n; k++) {
        rk4_step(s, s->x0, h, s->xn, k == 0);
        st = check_finite(s, s->xn, s->t + h * (double)(k + 1));
        if (st != MBS_OK) return st;
        memcpy(s->x0, s->xn, sizeof(double) * (size_t)s->nx);
    }
    memcpy(s->x, s->x0, sizeof(double) * (size_t)s->nx);
    s->n_steps += n;
    s->h_last = h;
    return MBS_OK;
}

/* ---- DOP853, as scipy.integrate.solve_ivp(method="DOP853") over [0, dt] -------------------- */
#define SAFETY 0.9
#define MIN_FACTOR 0.2
#define MAX_FACTOR 10.0

static double rms_norm(const double *x, const double *scale, const double *sub, int n)
{
    double acc = 0.0;
    int j;
    for (j = 0; j < n; j++) {
        double y = (sub ? x[j] - sub[j] : x[j]) / scale[j];
        acc += y * y;
    }
    return sqrt(acc) / sqrt((double)n);
}

/* the first step (Hairer, Norsett & Wanner I, Sec. II.4; scipy's select_initial_step, order 7) */
static double initial_step(mbs_sim *s, const double *y0, const double *f0, double t_bound, double max_step)
{
    int n = s->nx, j;
    double *scale = s->xs, *y1 = s->xn, *f1 = s->K + n;
    double d0, d1, d2, h0, h1, r;
    for (j = 0; j < n; j++) scale[j] = s->atol + fabs(y0[j]) * s->rtol;
    d0 = rms_norm(y0, scale, NULL, n);
    d1 = rms_norm(f0, scale, NULL, n);
    h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    h0 = fmin(h0, t_bound);
    for (j = 0; j < n; j++) y1[j] = y0[j] + h0 * 1.0 * f0[j];
    mbs_rhs(s, y1, s->u, f1);
    d2 = rms_norm(f1, scale, f0, n) / h0;
    if (d1 <= 1e-15 && d2 <= 1e-15) h1 = fmax(1e-6, h0 * 1e-3);
    else h1 = pow(0.01 / fmax(d1, d2), 1.0 / 8.0);
    r = fmin(100 * h0, h1);
    r = fmin(r, t_bound);
    return fmin(r, max_step);
}

/* error norm of scipy's DOP853._estimate_error_norm: |h| e5^2 / sqrt((e5^2 + 0.01 e3^2) n) with
 * e5, e3 the 2-norms of K^T E5 / scale and K^T E3 / scale */
static double error_norm(const mbs_sim *s, double h, const double *scale)
{
    int n = s->nx, j, k;
    double e5 = 0.0, e3 = 0.0, denom;
    for (j = 0; j < n; j++) {
        double a5 = 0.0, a3 = 0.0;
        for (k = 0; k < DOP_STAGES; k++) {
            a5 += s->K[k * n + j] * DOP_E5[k];
            a3 += s->K[k * n + j] * DOP_E3[k];
        }
        a5 /= scale[j];
        a3 /= scale[j];
        e5 += a5 * a5;
        e3 += a3 * a3;
    }
    e5 = sqrt(e5);
    e5 = e5 * e5;
    e3 = sqrt(e3);
    e3 = e3 * e3;
    if (e5 == 0.0 && e3 == 0.0) return 0.0;
    denom = e5 + 0.01 * e3;
    return fabs(h) * e5 / sqrt(denom * n);
}

/* step(dt) with "dop853": scipy's RungeKutta._step_impl repeated to t = dt (first step the last
 * accepted one, min(h_last, dt), or chosen by initial_step), then the quaternions renormalised;
 * MBS_DISCARD with the state unchanged when the step size underflows. */
int mbs_dop853(mbs_sim *s, double dt)
{
    int n = s->nx, j, k, st;
    double *y = s->x0, *ynew = s->xn, *scale = s->xs, *K = s->K, *f = s->K;
    double t = 0.0, max_step = s->h_max > 0 ? s->h_max : INFINITY, h_abs, h = 0.0;
    const double exponent = -1.0 / 8.0;
    memcpy(y, s->x, sizeof(double) * (size_t)n);
    first_stage(s, y);                                        /* K[0] = f(y) */
    if (s->h_last > 0) h_abs = fmin(s->h_last, dt);
    else {
        h_abs = initial_step(s, y, f, dt, max_step);
    }
    while (t < dt) {
        double min_step = 10 * fabs(nextafter(t, INFINITY) - t), t_new, err;
        int accepted = 0, rejected = 0;
        if (h_abs > max_step) h_abs = max_step;
        else if (h_abs < min_step) h_abs = min_step;
        while (!accepted) {
            if (h_abs < min_step) {
                mbs_fmt(s->msg, MBS_MSG, "step from t = %.9g s by %.9g s failed: required step size is less "
                        "than spacing between numbers (at %.9g s into the step)", s->t, dt, t);
                return MBS_DISCARD;
            }
            h = h_abs;
            t_new = t + h;
            if (t_new - dt > 0) t_new = dt;
            h = t_new - t;
            h_abs = fabs(h);
            for (k = 1; k < 12; k++) {                        /* stages (rk_step) */
                for (j = 0; j < n; j++) {
                    double acc = 0.0;
                    int l;
                    for (l = 0; l < k; l++) acc += K[l * n + j] * DOP_A[k][l];
                    s->xs[j] = y[j] + acc * h;
                }
                mbs_rhs(s, s->xs, s->u, K + k * n);
            }
            for (j = 0; j < n; j++) {
                double acc = 0.0;
                for (k = 0; k < 12; k++) acc += K[k * n + j] * DOP_B[k];
                ynew[j] = y[j] + h * acc;
            }
            mbs_rhs(s, ynew, s->u, K + 12 * n);               /* f_new */
            for (j = 0; j < n; j++) scale[j] = s->atol + fmax(fabs(y[j]), fabs(ynew[j])) * s->rtol;
            err = error_norm(s, h, scale);
            if (err < 1) {
                double factor = err == 0 ? MAX_FACTOR : fmin(MAX_FACTOR, SAFETY * pow(err, exponent));
                if (rejected) factor = fmin(1, factor);
                h_abs *= factor;
                accepted = 1;
            } else {
                double fac = SAFETY * pow(err, exponent);
                h_abs *= (fac > MIN_FACTOR) ? fac : MIN_FACTOR;   /* max(MIN_FACTOR, nan) = MIN_FACTOR */
                rejected = 1;
            }
        }
        t = t_new;
        memcpy(y, ynew, sizeof(double) * (size_t)n);
        memcpy(f, K + 12 * n, sizeof(double) * (size_t)n);
    }
    mbs_normalise(s, y);
    if (s->n_loops && s->projection) mbs_loop_project(s, y);
    st = check_finite(s, y, s->t + dt);
    if (st != MBS_OK) return st;
    memcpy(s->x, y, sizeof(double) * (size_t)n);
    s->n_steps += 1;
    s->h_last = h;
    return MBS_OK;
}
