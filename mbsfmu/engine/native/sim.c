/* sim.c - the instance API of mbs_core.h: lifecycle, solver settings, state and inputs, steps,
 * and the outputs computed at most once per state and only when asked (qdd, invariants, body
 * poses). Every entry checks its arguments and reports through a status and a message. */
#include <string.h>
#include "instance.h"
#include "spatial.h"

#define QUAT_TOL 1e-9   /* |q| - 1 of a quaternion accepted as unit (Simulator.set_configuration) */

static int valid(const mbs_sim *s) { return s && s->magic == MBS_MAGIC; }

static void invalidate(mbs_sim *s) { s->qdd_valid = s->inv_valid = s->kin_valid = s->xf_at_x = s->v_at_x = 0; }

mbs_sizes mbs_sim_sizes(const mbs_sim *s)
{
    mbs_sizes z;
    memset(&z, 0, sizeof z);
    if (!valid(s)) return z;
    z.N = s->N; z.nq = s->nq; z.nv = s->nv; z.nx = s->nx; z.n_u = s->n_u; z.n_loops = s->n_loops;
    z.n_rows = s->n_rows; z.model_hash = s->model_hash;
    return z;
}

int mbs_sim_copy(mbs_sim *dst, const mbs_sim *src)
{
    if (!dst || !valid(src) || dst == src) return dst == src && valid(src) ? MBS_OK : MBS_ERROR;
    if (dst->magic == MBS_MAGIC && dst->size != src->size) return MBS_ERROR;
    memcpy(dst, src, src->size);
    mbs_layout(dst);
    return MBS_OK;
}

int mbs_sim_set_solver(mbs_sim *s, int method, double h_max, double rtol, double atol, char *err, size_t n_err)
{
    if (!valid(s)) return MBS_ERROR;
    if (err && n_err) err[0] = '\0';
    if (method != MBS_RK4 && method != MBS_DOP853) {
        mbs_fmt(err, n_err, "unknown integrator %d (1: rk4, 2: dop853)", method);
        return MBS_ERROR;
    }
    if (!(isfinite(h_max) && (h_max > 0 || (method == MBS_DOP853 && h_max == 0)))) {
        mbs_fmt(err, n_err, "h_max must be a positive step [s] (0 = unlimited for dop853), got %g", h_max);
        return MBS_ERROR;
    }
    if (!(isfinite(rtol) && rtol > 0 && isfinite(atol) && atol > 0)) {
        mbs_fmt(err, n_err, "rtol and atol must be positive numbers, got %g and %g", rtol, atol);
        return MBS_ERROR;
    }
    s->method = method; s->h_max = h_max; s->rtol = rtol; s->atol = atol;
    return MBS_OK;
}

int mbs_sim_set_loops(mbs_sim *s, int baumgarte, int projection, double alpha, double beta)
{
    if (!valid(s) || !(isfinite(alpha) && alpha >= 0 && isfinite(beta) && beta >= 0)) return MBS_ERROR;
    s->baumgarte = baumgarte != 0; s->projection = projection != 0; s->alpha = alpha; s->beta = beta;
    invalidate(s);                                            /* the rhs (qdd, its cached f(x)) depends on them */
    return MBS_OK;
}

int mbs_sim_set_dense(mbs_sim *s, int dense, int *n_structured)
{
    int i, n = 0;
    if (!valid(s)) return MBS_ERROR;
    s->dense = dense != 0;
    mbs_rebuild_inertia(s);                                   /* erot, sax: the structure, or none */
    invalidate(s);
    for (i = 1; i <= s->N; i++) n += s->erot[i] >= 0.0 || s->sax[i] >= 0.0;
    if (n_structured) *n_structured = n;
    return MBS_OK;
}

int mbs_sim_set_avx(mbs_sim *s, int avx, int *on)
{
    if (!valid(s)) return MBS_ERROR;
    s->no_avx = avx == 0;
    mbs_layout(s);                                            /* s->avx: asks the CPU again */
    if (on) *on = s->avx;
    return MBS_OK;
}

double mbs_sim_time(const mbs_sim *s) { return valid(s) ? s->t : NAN; }

void mbs_sim_set_time(mbs_sim *s, double t)
{
    if (valid(s) && isfinite(t)) s->t = t;
}

const double *mbs_sim_x(const mbs_sim *s) { return valid(s) ? s->x : NULL; }

int mbs_sim_set_x(mbs_sim *s, const double *x, int assemble, char *err, size_t n_err)
{
    int e, k;
    (void)assemble;                                           /* loops: x is taken as given (the caller assembles) */
    if (!valid(s) || !x) return MBS_ERROR;
    if (err && n_err) err[0] = '\0';
    for (k = 0; k < s->nx; k++)
        if (!isfinite(x[k])) {
            mbs_fmt(err, n_err, "state entry %d is %g: the state must be finite", k, x[k]);
            return MBS_ERROR;
        }
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_QUAT) {
            const double *qt = x + s->elem[4 * e + 1];
            double n = sqrt(qt[0] * qt[0] + qt[1] * qt[1] + qt[2] * qt[2] + qt[3] * qt[3]);
            if (fabs(n - 1.0) > QUAT_TOL) {
                mbs_fmt(err, n_err, "q[%d:%d] is a quaternion of norm %.12g, must be 1", (int)s->elem[4 * e + 1],
                        (int)s->elem[4 * e + 1] + 4, n);
                return MBS_ERROR;
            }
        }
    memcpy(s->x, x, sizeof(double) * (size_t)s->nx);
    invalidate(s);
    return MBS_OK;
}

const double *mbs_sim_u(const mbs_sim *s) { return valid(s) ? s->u : NULL; }

int mbs_sim_set_u(mbs_sim *s, int k, double value)
{
    if (!valid(s) || k < 0 || k >= s->n_u || !isfinite(value)) return MBS_ERROR;
    if (s->u[k] != value) {
        s->u[k] = value;
        invalidate(s);
    }
    return MBS_OK;
}

int mbs_sim_set_inputs(mbs_sim *s, const double *u)
{
    if (!valid(s) || !u || !mbs_all_finite(u, s->n_u)) return MBS_ERROR;
    if (memcmp(s->u, u, sizeof(double) * (size_t)s->n_u) == 0) return MBS_OK;   /* unchanged: the outputs stay valid */
    memcpy(s->u, u, sizeof(double) * (size_t)s->n_u);
    invalidate(s);
    return MBS_OK;
}

void mbs_sim_set_stats(mbs_sim *s, long long n_steps, long long n_rhs, double h_last)
{
    if (!valid(s)) return;
    s->n_steps = n_steps;
    s->n_rhs = n_rhs;
    s->h_last = (isfinite(h_last) && h_last > 0) ? h_last : 0.0;
}

int mbs_sim_step(mbs_sim *s, double dt)
{
    int st;
    if (!valid(s)) return MBS_ERROR;
    s->msg[0] = '\0';
    if (!(isfinite(dt) && dt > 0)) {
        mbs_fmt(s->msg, MBS_MSG, "dt must be a positive, finite time step [s], got %g", dt);
        return MBS_ERROR;
    }
    if (s->params_dirty) {
        mbs_fmt(s->msg, MBS_MSG, "parameters were changed but not applied (mbs_sim_apply_params)");
        return MBS_ERROR;
    }
    st = s->method == MBS_RK4 ? mbs_rk4(s, dt) : mbs_dop853(s, dt);
    invalidate(s);
    if (st == MBS_OK) s->t += dt;
    return st;
}

const char *mbs_sim_message(const mbs_sim *s) { return valid(s) ? s->msg : "not an mbs_sim instance"; }

void mbs_sim_stats(const mbs_sim *s, long long *n_steps, long long *n_rhs, double *h_last)
{
    if (!valid(s)) return;
    if (n_steps) *n_steps = s->n_steps;
    if (n_rhs) *n_rhs = s->n_rhs;
    if (h_last) *h_last = s->h_last;
}

/* ---- lazy outputs ------------------------------------------------------------------------ */
const double *mbs_sim_qdd(mbs_sim *s)
{
    if (!valid(s)) return NULL;
    if (!s->qdd_valid) {
        long long n_rhs = s->n_rhs;
        mbs_rhs(s, s->x, s->u, s->K);                         /* K row 0: the next step's first stage */
        s->n_rhs = n_rhs;                                     /* an output, not a step's evaluation */
        memcpy(s->qdd_out, s->K + s->nq, sizeof(double) * (size_t)s->nv);
        s->qdd_valid = 1;
        s->xf_at_x = 1;                                       /* E, r: Xup at this state's q */
        s->v_at_x = s->n_loops == 0;                          /* v: the ABA's, at this state's qd */
    }
    return s->qdd_out;
}

const mbs_invariants *mbs_sim_invariants(mbs_sim *s)
{
    if (!valid(s)) return NULL;
    if (!s->inv_valid) {                                      /* Xup of this state reused when the lazy qdd made it */
        if (!s->xf_at_x) {
            mbs_joint_transforms(s, s->x);
            s->xf_at_x = 1;
        }
        mbs_forward_kinematics(s, s->x + s->nq, NULL, !s->v_at_x, 0, NULL);   /* the lazy qdd's v: the same numbers */
        mbs_compute_invariants(s, s->x, s->x + s->nq, &s->inv);
        s->inv_valid = 1;
    }
    return &s->inv;
}

const double *mbs_sim_lambda(mbs_sim *s)
{
    if (!valid(s)) return NULL;
    mbs_sim_qdd(s);                                           /* the rhs at this state sets lambda */
    return s->lambda;
}

const mbs_kinematics *mbs_sim_kinematics(mbs_sim *s)
{
    if (!valid(s)) return NULL;
    if (!s->kin_valid) {
        mbs_fk(s, s->x, s->x + s->nq, NULL, s->kin_R, s->kin_p, s->kin_v, NULL);
        s->kin_valid = 1;
    }
    return &s->kin;
}

/* Shepperd's method (S. W. Shepperd, J. Guidance and Control 1(3), 1978) as
 * mbsfmu.engine.spatial.R_to_quat (the same operations in the same order, no fused multiply-adds:
 * equal bit for bit): the unit quaternion q (w, x, y, z), w >= 0, of the rotation matrix R
 * (row-major). */
static void quat_of_R(const double *R, double *q)
{
    double t = R[0] + R[4] + R[8], s;
    int i = 0, j, k, n;
    if (t > 0) {
        s = 2.0 * sqrt(1.0 + t);
        q[0] = 0.25 * s;
        q[1] = (R[7] - R[5]) / s;
        q[2] = (R[2] - R[6]) / s;
        q[3] = (R[3] - R[1]) / s;
    } else {
        if (R[4] > R[0]) i = 1;                               /* the first largest diagonal entry */
        if (R[8] > R[4 * i]) i = 2;
        j = (i + 1) % 3; k = (i + 2) % 3;
        s = 2.0 * sqrt(1.0 + R[4 * i] - R[4 * j] - R[4 * k]);
        q[0] = (R[3 * k + j] - R[3 * j + k]) / s;
        q[1 + i] = 0.25 * s;
        q[1 + j] = (R[3 * j + i] + R[3 * i + j]) / s;
        q[1 + k] = (R[3 * k + i] + R[3 * i + k]) / s;
    }
    if (q[0] < 0)
        for (n = 0; n < 4; n++) q[n] = -q[n];
}

int mbs_sim_relative_poses(mbs_sim *s, double *out)
{
    const mbs_kinematics *kin = mbs_sim_kinematics(s);
    const double *R, *p, *Rp, *pp;
    double E[9], d[3], q[4];
    int i, a, c;
    if (!kin || !out) return MBS_ERROR;
    for (i = 1; i <= s->N; i++, out += 7) {
        R = kin->R + 9 * i; p = kin->p + 3 * i;
        if (s->parent[i] == 0) {                              /* a root: its world pose */
            memcpy(E, R, sizeof E);
            memcpy(out, p, sizeof d);
        } else {                                              /* E = Rp^T R, r = Rp^T (p - pp) */
            Rp = kin->R + 9 * s->parent[i]; pp = kin->p + 3 * s->parent[i];
            for (a = 0; a < 3; a++) d[a] = p[a] - pp[a];
            for (a = 0; a < 3; a++) {
                for (c = 0; c < 3; c++) E[3 * a + c] = Rp[a] * R[c] + Rp[3 + a] * R[3 + c] + Rp[6 + a] * R[6 + c];
                out[a] = Rp[a] * d[0] + Rp[3 + a] * d[1] + Rp[6 + a] * d[2];
            }
        }
        quat_of_R(E, q);
        out[3] = q[1]; out[4] = q[2]; out[5] = q[3]; out[6] = q[0];
    }
    return MBS_OK;
}

const char *mbs_sim_body_name(const mbs_sim *s, int i) { return valid(s) ? mbs_body_name(s, i) : "world"; }
const char *mbs_sim_joint_name(const mbs_sim *s, int i) { return valid(s) ? mbs_joint_name(s, i) : "world"; }

/* ---- algorithms at a given state ---------------------------------------------------------- */
/* checks q (finite; quaternions of any nonzero norm: the algorithms take the rotation of their
 * direction, quat_to_R), qd, b, f_ext */
static int check_args(mbs_sim *s, const double *q, const double *qd, const char *b_name, const double *b,
                      const double *f_ext)
{
    if (!q || !mbs_all_finite(q, s->nq)) { mbs_fmt(s->msg, MBS_MSG, "q has non-finite entries"); return MBS_ERROR; }
    if (s->nq != s->nv && mbs_quat_directions(s, q, s->msg, MBS_MSG) != MBS_OK) return MBS_ERROR;
    if (qd && !mbs_all_finite(qd, s->nv)) { mbs_fmt(s->msg, MBS_MSG, "qd has non-finite entries"); return MBS_ERROR; }
    if (b_name && (!b || !mbs_all_finite(b, s->nv))) {
        mbs_fmt(s->msg, MBS_MSG, "%s has non-finite entries", b_name);
        return MBS_ERROR;
    }
    if (f_ext) {
        if (!mbs_all_finite(f_ext + 6, 6 * s->N)) { mbs_fmt(s->msg, MBS_MSG, "f_ext has non-finite entries"); return MBS_ERROR; }
        memcpy(s->fext, f_ext, sizeof(double) * 6 * (size_t)(s->N + 1));
        memset(s->fext, 0, 6 * sizeof(double));
    } else {
        memset(s->fext, 0, sizeof(double) * 6 * (size_t)(s->N + 1));
    }
    if (s->params_dirty) {
        mbs_fmt(s->msg, MBS_MSG, "parameters were changed but not applied (mbs_sim_apply_params)");
        return MBS_ERROR;
    }
    return MBS_OK;
}

int mbs_aba(mbs_sim *s, const double *q, const double *qd, const double *tau, const double *f_ext, double *qdd)
{
    if (!valid(s) || !qd || !qdd || check_args(s, q, qd, "tau", tau, f_ext)) return MBS_ERROR;
    mbs_joint_transforms(s, q);
    mbs_aba_core(s, qd, tau, s->fext, qdd);
    return MBS_OK;
}

int mbs_rnea(mbs_sim *s, const double *q, const double *qd, const double *qdd, const double *f_ext, double *tau)
{
    if (!valid(s) || !qd || !tau || check_args(s, q, qd, "qdd", qdd, f_ext)) return MBS_ERROR;
    mbs_joint_transforms(s, q);
    mbs_rnea_core(s, qd, qdd, tau);
    return MBS_OK;
}

int mbs_crba(mbs_sim *s, const double *q, double *M)
{
    if (!valid(s) || !M || check_args(s, q, NULL, NULL, NULL, NULL)) return MBS_ERROR;
    mbs_joint_transforms(s, q);
    mbs_crba_core(s, M);
    return MBS_OK;
}

int mbs_forward_dynamics_tau(mbs_sim *s, const double *q, const double *qd, const double *tau, const double *f_ext,
                             double *qdd)
{
    int j;
    if (!valid(s) || !qd || !qdd || check_args(s, q, qd, "tau", tau, f_ext)) return MBS_ERROR;
    mbs_joint_transforms(s, q);
    mbs_passive_forces(s, q, qd, s->tau);                     /* tau + springs/dampers */
    for (j = 0; j < s->nv; j++) s->tau[j] = tau[j] + s->tau[j];
    mbs_aba_core(s, qd, s->tau, s->fext, qdd);
    return MBS_OK;
}

int mbs_inverse_dynamics_tau(mbs_sim *s, const double *q, const double *qd, const double *qdd, const double *f_ext,
                             double *tau)
{
    int j;
    if (!valid(s) || !qd || !tau || check_args(s, q, qd, "qdd", qdd, f_ext)) return MBS_ERROR;
    mbs_joint_transforms(s, q);
    mbs_rnea_core(s, qd, qdd, tau);
    mbs_passive_forces(s, q, qd, s->tau);                     /* RNEA - springs/dampers */
    for (j = 0; j < s->nv; j++) tau[j] -= s->tau[j];
    return MBS_OK;
}

int mbs_forward_dynamics(mbs_sim *s, const double *q, const double *qd, const double *u, const double *f_ext,
                         double *qdd)
{
    int j, e;
    double p_in, p_damp;
    if (!valid(s) || !qd || !qdd || !u || check_args(s, q, qd, NULL, NULL, f_ext)) return MBS_ERROR;
    if (!mbs_all_finite(u, s->n_u)) { mbs_fmt(s->msg, MBS_MSG, "u has non-finite entries"); return MBS_ERROR; }
    mbs_joint_transforms(s, q);
    for (j = 0; j < s->nv; j++) s->tau_u[j] = 0.0;
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_ACT) s->tau_u[s->elem[4 * e + 2]] = u[s->elem[4 * e + 1]];
    if (s->has_forces) {                                      /* force elements add to the given f_ext */
        mbs_forward_kinematics(s, qd, NULL, 1, 0, s->fk_need);
        mbs_body_wrenches(s, u, &p_in, &p_damp);
    }
    mbs_passive_forces(s, q, qd, s->tau);
    for (j = 0; j < s->nv; j++) s->tau[j] = s->tau_u[j] + s->tau[j];
    if (s->n_loops) return mbs_loop_qdd(s, q, qd, s->tau, qdd) ? MBS_ERROR : MBS_OK;
    mbs_aba_core(s, qd, s->tau, s->fext, qdd);
    return MBS_OK;
}

int mbs_sim_rhs(mbs_sim *s, const double *x, const double *u, double *xdot)
{
    if (!valid(s) || !x || !u || !xdot) return MBS_ERROR;
    if (!mbs_all_finite(x, s->nx) || !mbs_all_finite(u, s->n_u)) {
        mbs_fmt(s->msg, MBS_MSG, "x or u has non-finite entries");
        return MBS_ERROR;
    }
    if (s->params_dirty) return MBS_ERROR;
    mbs_rhs(s, x, u, xdot);
    return MBS_OK;
}

int mbs_fk(mbs_sim *s, const double *q, const double *qd, const double *qdd, double *R, double *p, double *v, double *a)
{
    size_t N1;
    if (!valid(s) || check_args(s, q, qd, qdd ? "qdd" : NULL, qdd, NULL)) return MBS_ERROR;
    N1 = (size_t)s->N + 1;
    mbs_joint_transforms(s, q);
    mbs_forward_kinematics(s, qd, qdd, qd != NULL, qd != NULL && qdd != NULL, NULL);
    if (R) memcpy(R, s->Rw, 9 * N1 * sizeof(double));
    if (p) memcpy(p, s->pw, 3 * N1 * sizeof(double));
    if (v) {
        if (qd) memcpy(v, s->v, 6 * N1 * sizeof(double));
        else memset(v, 0, 6 * N1 * sizeof(double));
    }
    if (a) {
        if (qd && qdd) memcpy(a, s->a, 6 * N1 * sizeof(double));
        else memset(a, 0, 6 * N1 * sizeof(double));
    }
    return MBS_OK;
}

int mbs_invariants_at(mbs_sim *s, const double *q, const double *qd, mbs_invariants *out)
{
    if (!valid(s) || !qd || !out || check_args(s, q, qd, NULL, NULL, NULL)) return MBS_ERROR;
    mbs_joint_transforms(s, q);
    mbs_forward_kinematics(s, qd, NULL, 1, 0, NULL);
    mbs_compute_invariants(s, q, qd, out);
    return MBS_OK;
}

/* nonzero (and the message) unless n_b >= 1 bodies and n_w >= 0 wheels, every index in 1..N */
static int check_bodies(mbs_sim *s, const char *what, int n_b, const int32_t *bodies, int n_w, const int32_t *wheels)
{
    int b;
    if (n_b < 1 || n_w < 0 || !bodies || (n_w && !wheels)) return 1;
    for (b = 0; b < n_b + n_w; b++) {
        int i = b < n_b ? bodies[b] : wheels[b - n_b];
        if (i < 1 || i > s->N) {
            mbs_fmt(s->msg, MBS_MSG, "%s: body index %d out of 1..%d", what, i, s->N);
            return 1;
        }
    }
    return 0;
}

int mbs_records_at(mbs_sim *s, const double *q, const double *qd, int n_b, const int32_t *bodies, int n_w,
                   const int32_t *wheels, double *out)
{
    if (!valid(s) || !qd || !out || check_args(s, q, qd, NULL, NULL, NULL) ||
        check_bodies(s, "records", n_b, bodies, n_w, wheels))
        return MBS_ERROR;
    mbs_joint_transforms(s, q);
    mbs_forward_kinematics(s, qd, NULL, 1, 0, NULL);
    mbs_compute_records(s, n_b, bodies, n_w, wheels, out);
    return MBS_OK;
}

/* ---- every output at once (Simulator.outputs) ---------------------------------------------- */
int mbs_sim_step_inputs(mbs_sim *s, double t, const double *u, double dt)
{
    if (!valid(s)) return MBS_ERROR;
    if (u && mbs_sim_set_inputs(s, u)) {
        mbs_fmt(s->msg, MBS_MSG, "inputs must be finite");
        return MBS_ERROR;
    }
    s->t = t;
    return mbs_sim_step(s, dt);
}

int mbs_sim_outputs(mbs_sim *s, const double *u, int n_b, const int32_t *bodies, int n_w, const int32_t *wheels,
                    double *out)
{
    int nq, nv, k;
    const double *qdd, *x;
    const mbs_invariants *inv;
    if (!valid(s) || !out || check_bodies(s, "outputs", n_b, bodies, n_w, wheels)) return MBS_ERROR;
    if (u && mbs_sim_set_inputs(s, u)) {
        mbs_fmt(s->msg, MBS_MSG, "inputs must be finite");
        return MBS_ERROR;
    }
    if (s->params_dirty) {
        mbs_fmt(s->msg, MBS_MSG, "parameters were changed but not applied (mbs_sim_apply_params)");
        return MBS_ERROR;
    }
    nq = s->nq; nv = s->nv; x = s->x;
    qdd = mbs_sim_qdd(s);                                     /* Xup at this state's q (xf_at_x) */
    inv = mbs_sim_invariants(s);
    memcpy(out, x, sizeof(double) * (size_t)(nq + nv));
    out += nq + nv;
    memcpy(out, s->u, sizeof(double) * (size_t)s->n_u);
    out += s->n_u;
    memcpy(out, qdd, sizeof(double) * (size_t)nv);
    out += nv;
    for (k = 0; k < 3; k++) {                                 /* rows.ENGINE_COLUMNS */
        out[k] = inv->p_sys[k]; out[3 + k] = inv->P_sys[k]; out[6 + k] = inv->H_sys[k];
        out[9 + k] = inv->R[k]; out[12 + k] = inv->Rdot[k];
    }
    out[15] = inv->KE; out[16] = inv->PE; out[17] = inv->KE + inv->PE;
    out[18] = x[nq + nv]; out[19] = x[nq + nv + 1];
    out += 20;
    if (!s->xf_at_x) {
        mbs_joint_transforms(s, x);
        s->xf_at_x = 1;
    }
    mbs_forward_kinematics(s, x + nq, NULL, 1, 0, NULL);      /* every body: the records need all */
    mbs_compute_records(s, n_b, bodies, n_w, wheels, out);
    out += 49 * n_b + 7 * n_w + 24;
    mbs_spring_records(s, x, out);
    return MBS_OK;
}
