/* invariants.c - the engine's own momentum and energy (mbsfmu/records.py engine_invariants):
 * each body's spatial momentum I_i v_i (RBDA Sec. 2.13) split into its angular momentum about
 * its CoM and its linear momentum, summed about the system CM (MBS Momentum Testing Eqs. 9-10); KE =
 * sum 1/2 v_i . I_i v_i (RBDA Sec. 2.13, MBS Energy Testing Eq. 1), O(N) from the momenta already formed (the
 * numpy reference keeps 1/2 qd^T M qd by CRBA, O(N d^2): the two formulas check each other to round-off);
 * PE = springs - sum m_i g . c_i (MBS Energy Testing Eq. 2).
 * H_scale: the magnitudes of the terms summed into H_sys (records.angular_momentum_scale); E_scale:
 * those of E = KE + PE, KE + springs + sum m_i |g| |c_i| (outputs.energy_scale). */
#include "instance.h"
#include "spatial.h"

/* needs mbs_joint_transforms(q) and mbs_forward_kinematics(qd) done on s */
MBS_INLINE void mbs_compute_invariants_body(mbs_sim *s, const double *q, const double *qd, mbs_invariants *out)
{
    int N = s->N, i, k;
    double m_tot = 0.0, mc[3] = {0, 0, 0}, Lsum[3] = {0, 0, 0}, Hrel[3] = {0, 0, 0}, prel[3] = {0, 0, 0};
    double mgc = 0.0, KE = 0.0, H_scale = 0.0, mc_abs = 0.0, springs;
    for (i = 1; i <= N; i++) {                                /* pass 1: mass, CM, P_sys, sum L_c */
        const double *I = s->I + 36 * i, *v = s->v + 6 * i, *R = s->Rw + 9 * i, *com = s->body_f + BODY_F * i + 16;
        double m = s->body_f[BODY_F * i + 15], h[6], g[3], t[3], L[3], *P = s->f + 6 * i, *c = P + 3;
        rigid_times(I, v, h, g);                              /* h = I_i v_i */
        for (k = 0; k < 6; k++) KE += v[k] * h[k];            /* v_i . I_i v_i */
        cross3(com, h + 3, t);                                /* about the CoM: h_w - com x h_lin */
        for (k = 0; k < 3; k++) t[k] = h[k] - t[k];
        mat3_vec(R, t, L);
        mat3_vec(R, h + 3, P);                                /* kept for pass 2 (s->f: work) */
        mat3_vec(R, com, c);
        for (k = 0; k < 3; k++) {
            c[k] += s->pw[3 * i + k];
            mc[k] += m * c[k];
            Lsum[k] += L[k];
            out->P_sys[k] = (i == 1 ? 0.0 : out->P_sys[k]) + P[k];
        }
        H_scale += sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2]);
        m_tot += m;
        mgc += m * (c[0] * s->grav[0] + c[1] * s->grav[1] + c[2] * s->grav[2]);
        mc_abs += m * sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    }
    if (N == 0) for (k = 0; k < 3; k++) out->P_sys[k] = 0.0;
    for (k = 0; k < 3; k++) {
        out->R[k] = mc[k] / m_tot;
        out->Rdot[k] = out->P_sys[k] / m_tot;
    }
    for (i = 1; i <= N; i++) {                                /* pass 2: CM-relative momenta */
        const double *P = s->f + 6 * i, *c = P + 3;           /* pass 1's P_i and c_i (world) */
        double m = s->body_f[BODY_F * i + 15], pr[3], d[3], x[3];
        for (k = 0; k < 3; k++) {
            pr[k] = P[k] - m * out->Rdot[k];
            d[k] = c[k] - out->R[k];
            prel[k] += pr[k];
        }
        cross3(d, pr, x);                                     /* (c_i - R) x p_rel_i */
        for (k = 0; k < 3; k++) Hrel[k] += x[k];
        H_scale += sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    }
    for (k = 0; k < 3; k++) {
        out->p_sys[k] = prel[k];
        out->H_sys[k] = Lsum[k] + Hrel[k];
    }
    out->H_scale = H_scale;
    (void)qd;                                                 /* the rates enter through v_i */
    out->KE = 0.5 * KE;
    springs = mbs_spring_energy(s, q);
    out->PE = springs - mgc;
    out->E_scale = out->KE + fabs(springs)
                 + mc_abs * sqrt(s->grav[0] * s->grav[0] + s->grav[1] * s->grav[1] + s->grav[2] * s->grav[2]);
}

MBS_AVX_COPIES(mbs_compute_invariants, (mbs_sim *s, const double *q, const double *qd, mbs_invariants *out),
               (s, q, qd, out))
