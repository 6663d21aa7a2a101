/* force_derivatives.h - the generalized force of the force elements and its analytic derivatives
 * (force_derivatives.c), for the forward dynamics' Jacobians with point spring-dampers, thrusters
 * and body wrenches, and for external wrenches f_ext. Matrices row-major; columns for the tangent coordinates dq of q (+) dq
 * (mbsfmu/linear/tangent.py), for qd and for u. work: mbs_force_derivatives_work(s) doubles from the
 * caller (the core allocates nothing). */
#ifndef MBS_FORCE_DERIVATIVES_H
#define MBS_FORCE_DERIVATIVES_H

#include "mbs_core.h"

size_t mbs_force_derivatives_work(const mbs_sim *s);
/* Q (nv,) [N m or N]: the force elements' generalized force at (q, qd) and inputs u (n_u,) (what
 * mbs_body_wrenches adds to the dynamics, joint actuators and joint springs not included), and
 * dQ_dq (nv x nv) [N m/rad, N/m, ...], dQ_dqd (nv x nv) [N m s/rad, ...], dQ_du (nv x n_u; any
 * non-NULL pointer when n_u = 0). MBS_ERROR with the reason in mbs_sim_message on NULL or
 * non-finite arguments or parameters not applied. */
int mbs_force_derivatives(mbs_sim *s, const double *q, const double *qd, const double *u, double *work, double *Q,
                          double *dQ_dq, double *dQ_dqd, double *dQ_du);
/* mbs_force_derivatives, and in dP (4 nv) the derivatives of the force elements' powers (forces.c
 * mbs_body_wrenches): dP_in/dq, dP_in/dqd of the inputs' forces' power P_in = F . V + T . w
 * (thrusters, body wrenches) [W/rad ..., W s/rad ...], then dP_damp/dq, dP_damp/dqd of the
 * spring-dampers' P_damp = -d ldot^2 (columns for dq and qd as above) */
int mbs_force_power_derivatives(mbs_sim *s, const double *q, const double *qd, const double *u, double *work,
                                double *Q, double *dQ_dq, double *dQ_dqd, double *dQ_du, double *dP);
/* Q (nv,) [N m or N] of the external wrenches f_ext ((N+1) x 6: [torque; force] in body axes about
 * each body origin, row 0 ignored, as mbs_forward_dynamics_tau's) at q, and dQ_dq (nv x nv). */
int mbs_wrench_derivatives(mbs_sim *s, const double *q, const double *f_ext, double *work, double *Q, double *dQ_dq);

#endif
