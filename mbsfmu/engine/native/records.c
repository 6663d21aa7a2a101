/* records.c - the body records of the independent checker's file (mbsfmu/sim/outputs.py
 * body_record_values, the numpy reference, same order): per rigid body the mass, its inertia
 * about the CoM in world and body-1 axes (I = R I_c R^T, I_b1 = C1^T I C1) and the CoM's position
 * and velocity in the four notations of MBS Momentum Testing Figs. 1-2 (rbar = p + R c, rbardot =
 * R (v_o + w x c), RBDA Sec. 2.11; from the system CM R, from joint 1 eta1, in world or body-1
 * axes); per wheel h = R_i I_c,i w_i (rotor axes to world) and h_b1, Iw = g . I_c g; then C1
 * (row-major), R, Rdot, eta1, etadot1 and g. */
#include "instance.h"
#include "spatial.h"

static void com_state(const mbs_sim *s, int i, double *rbar, double *rbardot)
{
    const double *R = s->Rw + 9 * i, *v = s->v + 6 * i, *c = s->body_f + BODY_F * i + 16;
    double t[3], u[3];
    int k;
    mat3_vec(R, c, t);
    cross3(v, c, u);                                          /* w x c */
    for (k = 0; k < 3; k++) {
        rbar[k] = s->pw[3 * i + k] + t[k];
        u[k] += v[3 + k];                                     /* v_o + w x c */
    }
    mat3_vec(R, u, rbardot);
}

static void put_sym(const double *A, double *out)             /* xx, yy, zz, xy, xz, yz */
{
    out[0] = A[0]; out[1] = A[4]; out[2] = A[8]; out[3] = A[1]; out[4] = A[2]; out[5] = A[5];
}

/* r = rbar - ref, rdot = rbardot - refdot, then both in body-1 axes (C1^T r, C1^T rdot) */
static void from_point(const double *C1, const double *rbar, const double *rbardot, const double *ref,
                       const double *refdot, double *out)
{
    int k;
    for (k = 0; k < 3; k++) {
        out[k] = rbar[k] - ref[k];
        out[3 + k] = rbardot[k] - refdot[k];
    }
    mat3T_vec(C1, out, out + 6);
    mat3T_vec(C1, out + 3, out + 9);
}

/* needs mbs_joint_transforms(q) and mbs_forward_kinematics(qd) done on s */
void mbs_compute_records(const mbs_sim *s, int n_b, const int32_t *bodies, int n_w, const int32_t *wheels,
                         double *out)
{
    const double *C1 = s->Rw + 9, *v1 = s->v + 6;
    double M = 0.0, R[3] = {0, 0, 0}, Rdot[3] = {0, 0, 0}, eta1[3], etadot1[3];
    int b, i, k, l;
    for (b = 0; b < n_b; b++) {                               /* system CM and its velocity */
        double m = s->body_f[BODY_F * bodies[b] + 15], rbar[3], rbardot[3];
        com_state(s, bodies[b], rbar, rbardot);
        M += m;
        for (k = 0; k < 3; k++) {
            R[k] += m * rbar[k];
            Rdot[k] += m * rbardot[k];
        }
    }
    for (k = 0; k < 3; k++) {
        R[k] /= M;
        Rdot[k] /= M;
        eta1[k] = s->pw[3 + k];
    }
    mat3_vec(C1, v1 + 3, etadot1);                            /* velocity of body 1's origin */
    for (b = 0; b < n_b; b++) {
        const double *Ri = s->Rw + 9 * bodies[b], *Ic = s->body_f + BODY_F * bodies[b] + 19;
        double rbar[3], rbardot[3], w[3], RI[9], Iw[9], CI[9], Ib1[9];
        i = bodies[b];
        com_state(s, i, rbar, rbardot);
        mat3_vec(Ri, s->v + 6 * i, w);
        for (k = 0; k < 3; k++)
            for (l = 0; l < 3; l++) RI[3 * k + l] = Ri[3 * k] * Ic[l] + Ri[3 * k + 1] * Ic[3 + l] + Ri[3 * k + 2] * Ic[6 + l];
        for (k = 0; k < 3; k++)                               /* I = R I_c R^T */
            for (l = 0; l < 3; l++) Iw[3 * k + l] = RI[3 * k] * Ri[3 * l] + RI[3 * k + 1] * Ri[3 * l + 1] + RI[3 * k + 2] * Ri[3 * l + 2];
        for (k = 0; k < 3; k++)                               /* C1^T I */
            for (l = 0; l < 3; l++) CI[3 * k + l] = C1[k] * Iw[l] + C1[3 + k] * Iw[3 + l] + C1[6 + k] * Iw[6 + l];
        for (k = 0; k < 3; k++)                               /* I_b1 = C1^T I C1 */
            for (l = 0; l < 3; l++) Ib1[3 * k + l] = CI[3 * k] * C1[l] + CI[3 * k + 1] * C1[3 + l] + CI[3 * k + 2] * C1[6 + l];
        out[0] = s->body_f[BODY_F * i + 15];
        put_sym(Iw, out + 1);
        put_sym(Ib1, out + 7);
        for (k = 0; k < 3; k++) {                             /* VEC3's order: omega, omega_b1, r_abs, rdot_abs */
            out[13 + k] = w[k];
            out[19 + k] = rbar[k];
            out[22 + k] = rbardot[k];
        }
        mat3T_vec(C1, w, out + 16);
        from_point(C1, rbar, rbardot, R, Rdot, out + 25);     /* r_cm, rdot_cm, r_cm_b1, rdot_cm_b1 */
        from_point(C1, rbar, rbardot, eta1, etadot1, out + 37); /* r_j1, rdot_j1, r_j1_b1, rdot_j1_b1 */
        out += 49;                                            /* 1 + 6 + 6 + 12 x 3 */
    }
    for (b = 0; b < n_w; b++) {
        const double *Ri = s->Rw + 9 * wheels[b], *Ic = s->body_f + BODY_F * wheels[b] + 19;
        const double *g = s->body_f + BODY_F * wheels[b] + 12, *w = s->v + 6 * wheels[b];
        double Lw[3], h[3], hb[3], Ig[3];
        mat3_vec(Ic, w, Lw);                                  /* rotor axes */
        mat3_vec(Ri, Lw, h);
        mat3T_vec(C1, h, hb);
        for (k = 0; k < 3; k++) {
            out[2 * k] = h[k];
            out[2 * k + 1] = hb[k];
        }
        mat3_vec(Ic, g, Ig);
        out[6] = g[0] * Ig[0] + g[1] * Ig[1] + g[2] * Ig[2];
        out += 7;
    }
    for (k = 0; k < 9; k++) out[k] = C1[k];
    for (k = 0; k < 3; k++) {
        out[9 + k] = R[k];
        out[12 + k] = Rdot[k];
        out[15 + k] = eta1[k];
        out[18 + k] = etadot1[k];
        out[21 + k] = s->grav[k];
    }
}
