/* derivatives.h - analytic derivatives of the dynamics (derivatives.c; Carpentier & Mansard,
 * RSS 2018), for trees. Matrices nv x nv row-major; columns for the tangent coordinates dq of
 * q (+) dq (mbsfmu/linear/tangent.py) and for qd. work: mbs_derivatives_work(s) doubles from the
 * caller (the core allocates nothing). MBS_ERROR with the reason in mbs_sim_message on closed
 * loops, a joint spring on a multi-DoF joint, non-finite arguments or a singular M. */
#ifndef MBS_DERIVATIVES_H
#define MBS_DERIVATIVES_H

#include "mbs_core.h"

size_t mbs_derivatives_work(const mbs_sim *s);
/* tau = RNEA(q, qd, qdd) - (joint springs and dampers), as mbs_inverse_dynamics_tau without f_ext:
 * dtau_dq [N m/rad ...], dtau_dqd [N m s/rad ...], M = dtau/dqdd (any of the three NULL: skipped) */
int mbs_rnea_derivatives(mbs_sim *s, const double *q, const double *qd, const double *qdd, double *work,
                         double *dtau_dq, double *dtau_dqd, double *M);
/* qdd = M^-1 (tau + joint springs and dampers - RNEA(q, qd, 0)) by M's L^T D L factor, equal to
 * mbs_forward_dynamics_tau's ABA without f_ext to rounding, and
 * dqdd_dq [1/s^2], dqdd_dqd [1/s], Minv = dqdd/dtau (three distinct arrays, not overlapping work) */
int mbs_aba_derivatives(mbs_sim *s, const double *q, const double *qd, const double *tau, double *work, double *qdd,
                        double *dqdd_dq, double *dqdd_dqd, double *Minv);

#endif
