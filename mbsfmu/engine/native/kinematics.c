/* kinematics.c - joint transforms and forward kinematics (mbsfmu/model/tree.py joint_transforms,
 * mbsfmu/kinematics.py forward_kinematics, line for line). */
#include "instance.h"
#include "spatial.h"

/* Xup_i = XJ(q_i) Xtree_i (RBDA Table 5.1) stored as E_i = R_rel^T, r_i = p_rel with
 * R_rel = R_tree RJ, p_rel = p_tree + R_tree pJ: body i's frame in its parent's. */

/* a revolute joint about +-e_k (s->sax = k): RJ from rot_axis' nonzero terms, pJ = 0, and E the
 * products below less RJ's zeros and ones, term for term (the same numbers) */
static void revolute_axis_transform(mbs_sim *s, int i, double angle)
{
    const double *bf = s->body_f + BODY_F * i, *Rt = bf, *pt = bf + 9, *axis = bf + 12;
    double *E = s->E + 9 * i, *r = s->r + 3 * i;
    int k = (int)s->sax[i], lo = k == 0 ? 1 : 0, hi = k == 2 ? 1 : 2, a;
    double sn, cs, c1, Klh = k == 1 ? axis[k] : -axis[k];     /* K[lo][hi] */
    double Rll, Rlh, Rhl;                                     /* RJ_ll = RJ_hh, RJ_lo,hi, RJ_hi,lo */
    mbs_sincos(angle, &sn, &cs);
    c1 = 1.0 - cs;
    Rll = 1.0 - c1;                                           /* 1 + c1 KK_ll, KK_ll = -1 */
    Rlh = sn * Klh;                                           /* s K_lo,hi */
    Rhl = sn * -Klh;                                          /* s K_hi,lo = -s K_lo,hi */
    for (a = 0; a < 3; a++) r[a] = pt[a];
    if (s->rt_one[i] != 0.0) {                                /* E = RJ^T */
        for (a = 0; a < 9; a++) E[a] = 0.0;
        E[4 * k] = 1.0;
        E[4 * lo] = E[4 * hi] = Rll;
        E[3 * hi + lo] = Rlh;
        E[3 * lo + hi] = Rhl;
    } else {                                                  /* E = (R_tree RJ)^T */
        for (a = 0; a < 3; a++) {
            E[3 * k + a] = Rt[3 * a + k];
            E[3 * lo + a] = Rt[3 * a + lo] * Rll + Rt[3 * a + hi] * Rhl;
            E[3 * hi + a] = Rt[3 * a + lo] * Rlh + Rt[3 * a + hi] * Rll;
        }
    }
}

/* any joint (joints.joint_pose, RBDA Table 4.1) */
static void joint_transform(mbs_sim *s, int i, const double *qi)
{
    const double *bf = s->body_f + BODY_F * i, *Rt = bf, *pt = bf + 9, *axis = bf + 12;
    double RJ[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, pJ[3] = {0, 0, 0};
    double *E = s->E + 9 * i, *r = s->r + 3 * i;
    int a, b;
    switch (s->jtype[i]) {
    case MBS_REVOLUTE: rot_axis(axis, qi[0], RJ); break;
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

void mbs_joint_transforms(mbs_sim *s, const double *q)
{
    int i;
    s->xf_at_x = 0;                                           /* the caller says when q is the state's */
    for (i = 1; i <= s->N; i++) {
        if (s->jtype[i] == MBS_REVOLUTE && s->sax[i] >= 0.0) revolute_axis_transform(s, i, q[s->iq[i]]);
        else joint_transform(s, i, q + s->iq[i]);
    }
}

/* Body poses (Rw_i, pw_i) in world axes and, with_v / with_a, spatial velocities v_i and
 * accelerations a_i (gravity not included) by one outward pass after mbs_joint_transforms:
 * R_i = R_lambda R_rel, p_i = p_lambda + R_lambda p_rel; v_i = Xup_i v_lambda + S qd_i;
 * a_i = Xup_i a_lambda + S qdd_i + v_i x vJ (RBDA Table 5.1). mask: see instance.h. */
void mbs_forward_kinematics(mbs_sim *s, const double *qd, const double *qdd, int with_v, int with_a, const double *mask)
{
    int i, k, l;
    double *R = s->Rw, *p = s->pw, *v = s->v, *a = s->a;
    for (k = 0; k < 9; k++) R[k] = (k % 4 == 0) ? 1.0 : 0.0;
    for (k = 0; k < 3; k++) p[k] = 0.0;
    for (k = 0; k < 6; k++) { v[k] = 0.0; a[k] = 0.0; }
    for (i = 1; i <= s->N; i++) {
        int lam = s->parent[i], ek = (int)s->erot[i];
        const double *E = s->E + 9 * i, *r = s->r + 3 * i, *Rl = R + 9 * lam;
        double *Ri = R + 9 * i;
        if (mask && mask[i] == 0.0) continue;
        for (k = 0; k < 3; k++) {
            if (ek >= 0) {                                    /* E rotates about e_ek: its zeros and one left out */
                int lo = ek == 0 ? 1 : 0, hi = ek == 2 ? 1 : 2;
                Ri[3 * k + ek] = Rl[3 * k + ek];
                Ri[3 * k + lo] = Rl[3 * k + lo] * E[3 * lo + lo] + Rl[3 * k + hi] * E[3 * lo + hi];
                Ri[3 * k + hi] = Rl[3 * k + lo] * E[3 * hi + lo] + Rl[3 * k + hi] * E[3 * hi + hi];
            } else {
                for (l = 0; l < 3; l++)                       /* R_i = R_lambda E_i^T */
                    Ri[3 * k + l] = Rl[3 * k] * E[3 * l] + Rl[3 * k + 1] * E[3 * l + 1] + Rl[3 * k + 2] * E[3 * l + 2];
            }
            p[3 * i + k] = p[3 * lam + k] + (Rl[3 * k] * r[0] + Rl[3 * k + 1] * r[1] + Rl[3 * k + 2] * r[2]);
        }
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
