/* forces.c - joint spring-dampers and the force elements driven by the state and inputs
 * (mbsfmu/multibody.py passive_forces, mbsfmu/forces.py ForceElements.body_wrenches).
 *
 * A force F (world axes) at body point r (body axes) enters f_ext_i (body axes about the body
 * origin) as f = R_i^T F, n = r x f (RBDA Sec. 2.8). */
#include "instance.h"
#include "spatial.h"

#define LENGTH_EPS 1e-12   /* [m] forces.LENGTH_EPS: a shorter spring has no direction, force zero */

/* out = -d qd - k (q - q0): joint spring-dampers [N m or N] (Analytical Tests for MBSlib, systems 2, 3) */
void mbs_passive_forces(const mbs_sim *s, const double *q, const double *qd, double *out)
{
    int j, e;
    for (j = 0; j < s->nv; j++) out[j] = -s->damping[j] * qd[j];
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        if (el[0] == EL_JSPRING) {
            const double *num = s->elem_f + 9 * e;
            out[el[2]] -= num[0] * (q[el[1]] - num[1]);
        }
    }
}

/* out = R (v_o + w x rp): world velocity [m/s] of the body point rp (kinematics.point_velocity) */
static void point_velocity(const double *R, const double *v, const double *rp, double *out)
{
    double t[3];
    t[0] = v[3] + (v[1] * rp[2] - v[2] * rp[1]);
    t[1] = v[4] + (v[2] * rp[0] - v[0] * rp[2]);
    t[2] = v[5] + (v[0] * rp[1] - v[1] * rp[0]);
    mat3_vec(R, t, out);
}

/* f += [rp x fb; fb], fb = R^T F */
static void add_force(const double *R, double *f, const double *rp, const double *F)
{
    double fb[3], n[3];
    int k;
    mat3T_vec(R, F, fb);
    cross3(rp, fb, n);
    for (k = 0; k < 3; k++) {
        f[3 + k] += fb[k];
        f[k] += n[k];
    }
}

/* spring geometry: unit vector a -> b, length l [m], rate ldot [m/s] (forces._spring_geometry) */
static void spring_geometry(const mbs_sim *s, const int32_t *el, const double *num, double *e, double *l, double *ldot,
                            int with_rate)
{
    int ia = el[1], ib = el[2], k;
    const double *ra = num, *rb = num + 3;
    double Pa[3], Pb[3], Va[3] = {0, 0, 0}, Vb[3] = {0, 0, 0}, d[3];
    mat3_vec(s->Rw + 9 * ia, ra, Pa);
    mat3_vec(s->Rw + 9 * ib, rb, Pb);
    for (k = 0; k < 3; k++) d[k] = (s->pw[3 * ib + k] + Pb[k]) - (s->pw[3 * ia + k] + Pa[k]);
    if (with_rate && ia > 0) point_velocity(s->Rw + 9 * ia, s->v + 6 * ia, ra, Va);
    if (with_rate && ib > 0) point_velocity(s->Rw + 9 * ib, s->v + 6 * ib, rb, Vb);
    *l = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (*l < LENGTH_EPS) {
        e[0] = e[1] = e[2] = 0.0;
        *ldot = 0.0;
        return;
    }
    for (k = 0; k < 3; k++) e[k] = d[k] / *l;
    *ldot = with_rate ? e[0] * (Vb[0] - Va[0]) + e[1] * (Vb[1] - Va[1]) + e[2] * (Vb[2] - Va[2]) : 0.0;
}

/* s->fext from thrusters, body wrenches and spring-dampers at the poses and velocities of
 * mbs_forward_kinematics; p_in [W]: F . v_point + T . omega of the inputs; p_damp [W] (<= 0):
 * -d ldot^2 of the spring-dampers. Order: thrusters, wrenches, springs (tables.py). */
void mbs_body_wrenches(mbs_sim *s, const double *u, double *p_in, double *p_damp)
{
    int e, k;
    *p_in = 0.0;
    *p_damp = 0.0;
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        const double *num = s->elem_f + 9 * e;
        if (el[0] == EL_THRUSTER) {                           /* F = R_i (u d) at the point r */
            int i = el[1];
            double ud[3], F[3], V[3];
            for (k = 0; k < 3; k++) ud[k] = u[el[3]] * num[3 + k];
            mat3_vec(s->Rw + 9 * i, ud, F);
            add_force(s->Rw + 9 * i, s->fext + 6 * i, num, F);
            point_velocity(s->Rw + 9 * i, s->v + 6 * i, num, V);
            *p_in += F[0] * V[0] + F[1] * V[1] + F[2] * V[2];
        } else if (el[0] == EL_WRENCH) {                      /* F at r and torque T, world or body axes */
            int i = el[1];
            const double *Ri = s->Rw + 9 * i;
            double F[3], T[3], V[3], W[3], Tb[3];
            if (el[2]) {
                for (k = 0; k < 3; k++) { F[k] = u[el[3] + k]; T[k] = u[el[3] + 3 + k]; }
            } else {
                mat3_vec(Ri, u + el[3], F);
                mat3_vec(Ri, u + el[3] + 3, T);
            }
            add_force(Ri, s->fext + 6 * i, num, F);
            mat3T_vec(Ri, T, Tb);                             /* f_i[:3] += R_i^T T */
            for (k = 0; k < 3; k++) s->fext[6 * i + k] += Tb[k];
            point_velocity(Ri, s->v + 6 * i, num, V);
            mat3_vec(Ri, s->v + 6 * i, W);                    /* omega, world axes */
            *p_in += (F[0] * V[0] + F[1] * V[1] + F[2] * V[2]) + (T[0] * W[0] + T[1] * W[1] + T[2] * W[2]);
        }
    }
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        const double *num = s->elem_f + 9 * e;
        if (el[0] == EL_SPRING) {                             /* tension T = k (l - l0) + d ldot */
            double ev[3], l, ldot, T, F[3];
            spring_geometry(s, el, num, ev, &l, &ldot, 1);
            T = num[6] * (l - num[8]) + num[7] * ldot;
            if (el[1] > 0) {
                for (k = 0; k < 3; k++) F[k] = T * ev[k];
                add_force(s->Rw + 9 * el[1], s->fext + 6 * el[1], num, F);
            }
            if (el[2] > 0) {
                for (k = 0; k < 3; k++) F[k] = -T * ev[k];
                add_force(s->Rw + 9 * el[2], s->fext + 6 * el[2], num + 3, F);
            }
            *p_damp -= num[7] * ldot * ldot;
        }
    }
}

/* PE of joint springs and point springs [J] (MBS Energy Testing Eq. 2, first term), poses from
 * mbs_forward_kinematics */
double mbs_spring_energy(const mbs_sim *s, const double *q)
{
    double pe = 0.0;
    int e;
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        const double *num = s->elem_f + 9 * e;
        if (el[0] == EL_JSPRING) {
            double x = q[el[1]] - num[1];
            pe += 0.5 * num[0] * x * x;
        }
    }
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        const double *num = s->elem_f + 9 * e;
        if (el[0] == EL_SPRING) {
            double ev[3], l, ldot, x;
            spring_geometry(s, el, num, ev, &l, &ldot, 0);
            x = l - num[8];
            pe += 0.5 * num[6] * x * x;
        }
    }
    return pe;
}

/* spring records (Simulator.spring_records order: joint springs, then point springs): k and the
 * deflection x = q - q0 or l - l0 [m or rad], 2 per spring, into out; poses from
 * mbs_forward_kinematics. Returns the number of values written. */
int mbs_spring_records(const mbs_sim *s, const double *q, double *out)
{
    int e, n = 0;
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        const double *num = s->elem_f + 9 * e;
        if (el[0] == EL_JSPRING) {
            out[n++] = num[0];
            out[n++] = q[el[1]] - num[1];
        }
    }
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        const double *num = s->elem_f + 9 * e;
        if (el[0] == EL_SPRING) {
            double ev[3], l, ldot;
            spring_geometry(s, el, num, ev, &l, &ldot, 0);
            out[n++] = num[6];
            out[n++] = l - num[8];
        }
    }
    return n;
}
