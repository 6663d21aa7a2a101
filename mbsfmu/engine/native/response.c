/* response.c - the response of the accelerations to the inputs, d(qdd)/du du (the FMU's
 * fmi2GetDirectionalDerivative of the qdd outputs with respect to its inputs).
 *
 * At a fixed state (q, qd) the equations of motion are affine in the inputs u (aba.c's
 * qdd = M^-1 (tau - C qd - G + J^T f_ext) with tau = B u + tau_passive(q, qd) and f_ext =
 * f_u(q) u + f_springs(q, qd): B the actuator and wheel-motor rows, f_u the thruster and wrench
 * forces on the bodies), so
 *     d(qdd)/du du = M(q)^-1 (B du + J^T f_u(q) du)
 * exactly, not a difference quotient. The ABA (Featherstone, Rigid Body Dynamics Algorithms,
 * Table 7.1) gives it at qd = 0 with gravity and the spring-dampers off: v_i = c_i = 0, pA_i =
 * -f_ext_i and a_0 = 0 leave only the terms of tau and f_ext. With closed loops the same forces go
 * through loops.c's constrained solve (No's method, Eq. 24) at qd = 0 without Baumgarte terms, where
 * the constraint right-hand side gamma(q, qd) vanishes: the derivative of the constrained qdd.
 * Work arrays (tau, fext, the ABA's) are overwritten; the lazy outputs of the state stay valid (the
 * loop multipliers are recomputed when next read). */
#include <string.h>
#include "instance.h"

#define SPRING_OFF (-1 - EL_SPRING)   /* a point spring's element kind while it is off (no kind of tables.py) */

int mbs_input_response(mbs_sim *s, const double *q, const double *du, double *dqdd)
{
    int nv, j, e, st;
    double grav[3], *zero, p_in, p_damp;
    if (!s || s->magic != MBS_MAGIC || !q || !du || !dqdd) return MBS_ERROR;
    if (s->params_dirty) {
        mbs_fmt(s->msg, MBS_MSG, "a parameter is set but not applied (mbs_sim_apply_params)");
        return MBS_ERROR;
    }
    if (!mbs_all_finite(q, s->nq) || !mbs_all_finite(du, s->n_u)) {
        mbs_fmt(s->msg, MBS_MSG, "q or du has non-finite entries");
        return MBS_ERROR;
    }
    nv = s->nv;
    zero = s->qdd_w;                                          /* qd = 0 */
    for (j = 0; j < nv; j++) zero[j] = 0.0;
    memcpy(grav, s->grav, sizeof grav);                       /* gravity and passive forces off */
    for (j = 0; j < 3; j++) s->grav[j] = 0.0;
    mbs_joint_transforms(s, q);
    for (j = 0; j < nv; j++) s->tau[j] = 0.0;                 /* B du: actuators and wheel motors */
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_ACT) s->tau[s->elem[4 * e + 2]] = du[s->elem[4 * e + 1]];
    memset(s->fext, 0, sizeof(double) * 6 * (size_t)(s->N + 1));
    if (s->has_forces) {                                      /* f_u du: thrusters and wrenches at q */
        int32_t *kind = (int32_t *)s->elem;                   /* the instance's own copy of the table */
        for (e = 0; e < s->n_elem; e++)                       /* point springs off for this call */
            if (kind[4 * e] == EL_SPRING) kind[4 * e] = SPRING_OFF;
        mbs_forward_kinematics(s, zero, NULL, 1, 0, s->fk_need);
        mbs_body_wrenches(s, du, &p_in, &p_damp);
        for (e = 0; e < s->n_elem; e++)
            if (kind[4 * e] == SPRING_OFF) kind[4 * e] = EL_SPRING;
    }
    st = 0;
    if (s->n_loops) {
        int baumgarte = s->baumgarte;
        s->baumgarte = 0;
        st = mbs_loop_qdd(s, q, zero, s->tau, dqdd);
        s->baumgarte = baumgarte;
        s->qdd_valid = 0;                                     /* s->lambda is this solve's: the state's again when read */
    } else {
        mbs_aba_core(s, zero, s->tau, s->fext, dqdd);
    }
    memcpy(s->grav, grav, sizeof grav);
    if (st || !mbs_all_finite(dqdd, nv)) {
        mbs_fmt(s->msg, MBS_MSG, "the joint-space inertia is singular at this configuration");
        return MBS_ERROR;
    }
    return MBS_OK;
}
