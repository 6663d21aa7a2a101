/* host_state.c - the equations of motion handed to a host's integrator (FMI Model Exchange).
 *
 * A host integrates x = [q, qd, W_in, W_diss] without knowing that q holds unit quaternions or
 * that loop constraints Phi(q) = 0 tie it. The host's state xh is kept as the host set it; the
 * dynamics are evaluated at x = xh with every quaternion divided by its norm, so every output is
 * the physics of a unit quaternion whatever the host's drift. The quaternion rows of the
 * derivative are
 *     d qh/dt = 1/2 qh (x) (0, w) + k (1 - |qh|^2) qh
 * The first term is |qh| times the unit quaternion's rate (integrate.c quat_rate, spatial.quat_rate),
 * so the exact flow keeps |qh|; the second (k [1/s]) pulls |qh| back to 1 along qh, which leaves the
 * rotation qh / |qh| unchanged (a norm-restoring term, as in Baumgarte stabilisation; d|qh|/dt
 * = k (1 - |qh|^2) |qh|, time constant 1 / (2 k) near |qh| = 1). Loops: the accelerations carry the
 * core's Baumgarte terms (loops.c, No's Eq. 24 with -2 alpha Phidot - beta^2 Phi), and
 * mbs_sim_host_project puts q back on Phi = 0 and qd on A qd = 0 when the host asks for an event.
 */
#include <string.h>
#include "instance.h"

/* |qt| of the quaternion at x + at */
static double quat_norm(const double *qt)
{
    return sqrt(qt[0] * qt[0] + qt[1] * qt[1] + qt[2] * qt[2] + qt[3] * qt[3]);
}

int mbs_sim_set_host_x(mbs_sim *s, const double *xh, char *err, size_t n_err)
{
    int k;
    if (!s || s->magic != MBS_MAGIC || !xh) return MBS_ERROR;
    for (k = 0; k < s->nx; k++)
        if (!isfinite(xh[k])) {
            mbs_fmt(err, n_err, "state entry %d is %g: the state must be finite", k, xh[k]);
            return MBS_ERROR;
        }
    if (mbs_quat_directions(s, xh, err, n_err) != MBS_OK) return MBS_ERROR;
    memcpy(s->xs, xh, sizeof(double) * (size_t)s->nx);
    mbs_normalise(s, s->xs);
    return mbs_sim_set_x(s, s->xs, 2, err, n_err);
}

int mbs_sim_host_derivatives(mbs_sim *s, const double *xh, double k_norm, double *xdot)
{
    int e, k;
    if (!s || s->magic != MBS_MAGIC || !xh || !xdot) return MBS_ERROR;
    if (s->params_dirty) {
        mbs_fmt(s->msg, MBS_MSG, "parameters were set but not applied (mbs_sim_apply_params)");
        return MBS_ERROR;
    }
    mbs_sim_qdd(s);                                           /* f(x, u) into K row 0, once per state */
    memcpy(xdot, s->K, sizeof(double) * (size_t)s->nx);
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_QUAT) {
            int at = s->elem[4 * e + 1];
            const double *qh = xh + at;
            double n = quat_norm(qh), restore = k_norm * (1.0 - n * n);
            for (k = 0; k < 4; k++) xdot[at + k] = n * xdot[at + k] + restore * qh[k];
        }
    return mbs_all_finite(xdot, s->nx) ? MBS_OK : MBS_DISCARD;
}

int mbs_sim_host_drift(mbs_sim *s, const double *xh, double *quat, double *loops)
{
    int e;
    double dq = 0.0;
    if (!s || s->magic != MBS_MAGIC || !xh) return MBS_ERROR;
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_QUAT) dq = fmax(dq, fabs(quat_norm(xh + s->elem[4 * e + 1]) - 1.0));
    if (quat) *quat = dq;
    if (loops) *loops = s->n_loops ? mbs_loop_residual(s, s->x) : 0.0;
    return MBS_OK;
}

int mbs_sim_host_project(mbs_sim *s, double *xh, char *err, size_t n_err)
{
    if (!s || s->magic != MBS_MAGIC || !xh) return MBS_ERROR;
    if (mbs_sim_set_host_x(s, xh, err, n_err) != MBS_OK) return MBS_ERROR;
    memcpy(xh, s->x, sizeof(double) * (size_t)s->nx);       /* the quaternions normalised */
    if (s->n_loops) {
        mbs_loop_project(s, xh);                              /* q onto Phi = 0, qd onto A qd = 0 */
        return mbs_sim_set_x(s, xh, 2, err, n_err);
    }
    return MBS_OK;
}
