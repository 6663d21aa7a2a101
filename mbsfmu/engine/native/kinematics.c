/* kinematics.c - joint transforms and forward kinematics (mbsfmu/model/tree.py joint_transforms,
 * mbsfmu/kinematics.py forward_kinematics, line for line). */
#include "instance.h"
#include "spatial.h"

/* Xup_i = XJ(q_i) Xtree_i (RBDA Table 5.1) stored as E_i = R_rel^T, r_i = p_rel with
 * R_rel = R_tree RJ, p_rel = p_tree + R_tree pJ: body i's frame in its parent's. */

/* sin and cos of revolute joint i's angle; a0: the angle's value at the step's start (RK4's later
 * stages), or NULL. Without a0: mbs_sincos's, recorded with the angle in s->sc. With a0 and
 * |angle - a0| <= MBS_SINCOS_SUM_D (the stages move an angle by h/2 qd or h qd): mbs_sincos_sum from
 * mbs_sincos's sin and cos of a0, the record's when it holds a0, else computed and recorded. The
 * result depends on a0 and the angle only, not on what ran before. */
MBS_INLINE void joint_sincos(mbs_sim *s, int i, double angle, const double *a0, double *sn, double *cs)
{
    double *rec = s->sc + 3 * i, d;
    if (!a0) {
        mbs_sincos(angle, sn, cs);
        rec[0] = angle; rec[1] = *sn; rec[2] = *cs;
        return;
    }
    d = angle - *a0;
    if (!(fabs(d) <= MBS_SINCOS_SUM_D)) {
        mbs_sincos(angle, sn, cs);
        return;
    }
    if (rec[0] != *a0) {
        mbs_sincos(*a0, rec + 1, rec + 2);
        rec[0] = *a0;
    }
    mbs_sincos_sum(rec[1], rec[2], d, sn, cs);
}

/* a revolute joint about +-e_k (s->rev_ax = 2 k + ...): RJ from rot_axis_sc's nonzero terms, pJ = 0, and E the
 * products below less RJ's zeros and ones, term for term (the same numbers); a0: joint_sincos.
 * Writes only the entries that depend on the angle; r_i and E's others are mbs_joint_constants'. */
MBS_INLINE void revolute_axis_transform(mbs_sim *s, int i, double angle, const double *a0)
{
    const double *bf = s->body_f + BODY_F * i, *Rt = bf, *axis = bf + 12;
    double *E = s->E + 9 * i;
    int k = s->rev_ax[i] / 2, lo = k == 0 ? 1 : 0, hi = k == 2 ? 1 : 2, a;
    double sn, cs, c1, Klh = k == 1 ? axis[k] : -axis[k];     /* K[lo][hi] */
    double Rll, Rlh, Rhl;                                     /* RJ_ll = RJ_hh, RJ_lo,hi, RJ_hi,lo */
    joint_sincos(s, i, angle, a0, &sn, &cs);
    c1 = 1.0 - cs;
    Rll = 1.0 - c1;                                           /* 1 + c1 KK_ll, KK_ll = -1 */
    Rlh = sn * Klh;                                           /* s K_lo,hi */
    Rhl = sn * -Klh;                                          /* s K_hi,lo = -s K_lo,hi */
    if (s->rt_one[i] != 0.0) {                                /* E = RJ^T (row and column k: mbs_joint_constants) */
        E[4 * lo] = E[4 * hi] = Rll;
        E[3 * hi + lo] = Rlh;
        E[3 * lo + hi] = Rhl;
    } else {                                                  /* E = (R_tree RJ)^T (row k: mbs_joint_constants) */
        for (a = 0; a < 3; a++) {
            E[3 * lo + a] = Rt[3 * a + lo] * Rll + Rt[3 * a + hi] * Rhl;
            E[3 * hi + a] = Rt[3 * a + lo] * Rlh + Rt[3 * a + hi] * Rll;
        }
    }
}

void mbs_joint_constants(mbs_sim *s, int i)
{
    const double *Rt = s->body_f + BODY_F * i, *pt = Rt + 9;
    double *E = s->E + 9 * i, *r = s->r + 3 * i;
    int k = s->rev_ax[i] / 2, a;
    if (s->rev_ax[i] < 0) return;
    for (a = 0; a < 3; a++) r[a] = pt[a];                     /* pJ = 0 */
    if (s->rt_one[i] != 0.0) {
        for (a = 0; a < 9; a++) E[a] = 0.0;
        E[4 * k] = 1.0;
    } else {
        for (a = 0; a < 3; a++) E[3 * k + a] = Rt[3 * a + k];
    }
}

/* any joint (joints.joint_pose, RBDA Table 4.1); a0: joint_sincos (a revolute joint's) */
static void joint_transform(mbs_sim *s, int i, const double *qi, const double *a0)
{
    const double *bf = s->body_f + BODY_F * i, *Rt = bf, *pt = bf + 9, *axis = bf + 12;
    double RJ[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, pJ[3] = {0, 0, 0};
    double *E = s->E + 9 * i, *r = s->r + 3 * i;
    int a, b;
    switch (s->jtype[i]) {
    case MBS_REVOLUTE: {
        double sn, cs;
        joint_sincos(s, i, qi[0], a0, &sn, &cs);
        rot_axis_sc(axis, sn, cs, RJ);
        break;
    }
    case MBS_PRISMATIC: pJ[0] = axis[0] * qi[0]; pJ[1] = axis[1] * qi[0]; pJ[2] = axis[2] * qi[0]; break;
    case MBS_SPHERICAL: quat_to_R(qi, RJ); break;
    case MBS_FREE: quat_to_R(qi + 3, RJ); pJ[0] = qi[0]; pJ[1] = qi[1]; pJ[2] = qi[2]; break;
    default: break;
    }
    if (s->rt_one[i] != 0.0) {                                /* R_tree = 1: the products below, without the zeros */
        for (a = 0; a < 3; a++) {
            for (b = 0; b < 3; b++) E[3 * b + a] = RJ[3 * a + b];
            r[a] = pt[a] + pJ[a];
        }
        return;
    }
    for (a = 0; a < 3; a++) {
        for (b = 0; b < 3; b++)                               /* E = (R_tree RJ)^T */
            E[3 * b + a] = Rt[3 * a] * RJ[b] + Rt[3 * a + 1] * RJ[3 + b] + Rt[3 * a + 2] * RJ[6 + b];
        r[a] = pt[a] + (Rt[3 * a] * pJ[0] + Rt[3 * a + 1] * pJ[1] + Rt[3 * a + 2] * pJ[2]);
    }
}

MBS_INLINE void mbs_joint_transforms_near_body(mbs_sim *s, const double *q, const double *q0)
{
    int i;
    s->xf_at_x = s->v_at_x = 0;                               /* the caller says when q is the state's */
    for (i = 1; i <= s->N; i++) {
        if (s->rev_ax[i] >= 0)
            revolute_axis_transform(s, i, q[s->iq[i]], q0 ? q0 + s->iq[i] : NULL);
        else
            joint_transform(s, i, q + s->iq[i], q0 ? q0 + s->iq[i] : NULL);
    }
}

MBS_AVX_COPIES(mbs_joint_transforms_near, (mbs_sim *s, const double *q, const double *q0), (s, q, q0))

void mbs_joint_transforms(mbs_sim *s, const double *q) { mbs_joint_transforms_near(s, q, NULL); }

/* R_i = R_lambda E_i^T, p_i = p_lambda + R_lambda r_i; k: E rotates about e_k (s->erot), its zeros
 * and one left out (the same numbers), -1: any rotation. k is a constant where called. */
MBS_INLINE void pose_ax(int k, const double *E, const double *r, const double *Rl, const double *pl, double *Ri,
                        double *pi)
{
    int lo = AX_LO(k), hi = AX_HI(k), a, l;
    for (a = 0; a < 3; a++) {
        if (k >= 0) {
            Ri[3 * a + k] = Rl[3 * a + k];
            Ri[3 * a + lo] = Rl[3 * a + lo] * E[3 * lo + lo] + Rl[3 * a + hi] * E[3 * lo + hi];
            Ri[3 * a + hi] = Rl[3 * a + lo] * E[3 * hi + lo] + Rl[3 * a + hi] * E[3 * hi + hi];
        } else {
            for (l = 0; l < 3; l++)
                Ri[3 * a + l] = Rl[3 * a] * E[3 * l] + Rl[3 * a + 1] * E[3 * l + 1] + Rl[3 * a + 2] * E[3 * l + 2];
        }
        pi[a] = pl[a] + (Rl[3 * a] * r[0] + Rl[3 * a + 1] * r[1] + Rl[3 * a + 2] * r[2]);
    }
}

/* Body poses (Rw_i, pw_i) in world axes and, with_v / with_a, spatial velocities v_i and
 * accelerations a_i (gravity not included) by one outward pass after mbs_joint_transforms:
 * R_i = R_lambda R_rel, p_i = p_lambda + R_lambda p_rel; v_i = Xup_i v_lambda + S qd_i;
 * a_i = Xup_i a_lambda + S qdd_i + v_i x vJ (RBDA Table 5.1). mask: see instance.h. */
MBS_INLINE void mbs_forward_kinematics_body(mbs_sim *s, const double *qd, const double *qdd, int with_v, int with_a,
                                             const double *mask)
{
    int i, k;
    double *R = s->Rw, *p = s->pw, *v = s->v, *a = s->a;
    for (k = 0; k < 9; k++) R[k] = (k % 4 == 0) ? 1.0 : 0.0;
    for (k = 0; k < 3; k++) p[k] = 0.0;
    for (k = 0; k < 6; k++) { v[k] = 0.0; a[k] = 0.0; }
    if (with_v) s->v_at_x = 0;
    for (i = 1; i <= s->N; i++) {
        int lam = s->parent[i], ek = (int)s->erot[i];
        const double *E = s->E + 9 * i, *r = s->r + 3 * i, *Rl = R + 9 * lam;
        double *Ri = R + 9 * i;
        if (mask && mask[i] == 0.0) continue;
#define CALL(K) pose_ax(K, E, r, Rl, p + 3 * lam, Ri, p + 3 * i)
        MBS_AX_DISPATCH(ek, CALL, pose_ax(-1, E, r, Rl, p + 3 * lam, Ri, p + 3 * i))
#undef CALL
        if (with_v) {
            double vJ[6], t6[6];
            const double *axis = s->body_f + BODY_F * i + 12;
            S_mul(s->jtype[i], axis, qd + s->iv[i], vJ);      /* vJ = S_i qd_i */
            X_motion_k(ek, E, r, v + 6 * lam, v + 6 * i);
            for (k = 0; k < 6; k++) v[6 * i + k] += vJ[k];
            if (with_a) {
                X_motion_k(ek, E, r, a + 6 * lam, a + 6 * i);
                S_mul(s->jtype[i], axis, qdd + s->iv[i], t6);
                for (k = 0; k < 6; k++) a[6 * i + k] += t6[k];
                crm_mul(v + 6 * i, vJ, t6);
                for (k = 0; k < 6; k++) a[6 * i + k] += t6[k];
            }
        }
    }
}

MBS_AVX_COPIES(mbs_forward_kinematics,
               (mbs_sim *s, const double *qd, const double *qdd, int with_v, int with_a, const double *mask),
               (s, qd, qdd, with_v, with_a, mask))
