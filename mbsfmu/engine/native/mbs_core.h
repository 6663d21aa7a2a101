/* mbs_core.h - the mbsfmu engine core in C99: one model, many instances, no global state.
 *
 * The numpy code in mbsfmu/dynamics (readable, the test oracle) and this core implement the same
 * equations: forward kinematics, RNEA (Featherstone, Rigid Body Dynamics Algorithms, Table 5.1),
 * CRBA (Table 6.2), ABA (Table 7.1), force elements, closed loops by Lagrange multipliers
 * (No's method, Eq. 24, Baumgarte and projection), RK4 and DOP853 integration, and the invariants of
 * MBS Momentum Testing and MBS Energy Testing. It depends on libc and libm only, allocates nothing after mbs_sim_init, and keeps
 * every byte of an instance in the block the caller gives it (an FMU gives memory from its host's
 * allocator; Python gives a numpy buffer).
 *
 * A model reaches the core as two constant tables, an int32 table and a float64 table, built in one
 * place (mbsfmu/native/tables.py) and either compiled into an FMU as generated constant arrays or
 * passed from Python. Their layout is private to the core (tables.py and model.c); both start with
 * a header carrying MBS_TABLES_VERSION and a hash of the model.
 *
 * Units SI; spatial vectors [angular; linear] (Featherstone); quaternions scalar first (w, x, y, z).
 * State x = [q (nq), qd (nv), W_in, W_diss]: W_in [J] work done by the inputs, W_diss [J] (<= 0)
 * work of the dampers, integrated with the motion (as mbsfmu.simulator).
 */
#ifndef MBS_CORE_H
#define MBS_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "mbs_names.h" /* FMI2_FUNCTION_PREFIX on the core's names (source FMUs) */

#ifdef __cplusplus
extern "C" {
#endif

#define MBS_TABLES_VERSION 1

/* status codes: MBS_OK, or a reason the caller reports (text in the err buffer or mbs_sim_message) */
enum { MBS_OK = 0, MBS_DISCARD = 1, MBS_ERROR = 2 };

/* joint types: the codes of mbsfmu/joints.py */
enum { MBS_FIXED = 0, MBS_REVOLUTE = 1, MBS_PRISMATIC = 2, MBS_SPHERICAL = 3, MBS_FREE = 4 };

/* integrators */
enum { MBS_RK4 = 1, MBS_DOP853 = 2 };

/* parameter kinds for mbs_sim_set_param (index: body 1..N in tree order, the rotor body of a
 * wheel, or the joint's body; comp: component) */
enum {
    MBS_P_GRAVITY = 1,   /* comp 0..2 [m/s^2] world axes */
    MBS_P_MASS = 2,      /* body [kg] */
    MBS_P_COM = 3,       /* body, comp 0..2 [m] body axes */
    MBS_P_INERTIA = 4,   /* body, comp 0..5 = xx, yy, zz, xy, xz, yz about the CoM, body axes [kg m^2] */
    MBS_P_WHEEL_IW = 5,  /* rotor body of a wheel: spin inertia I_w [kg m^2] */
    MBS_P_SPRING_K = 6,  /* joint's body: stiffness [N m/rad or N/m] */
    MBS_P_SPRING_D = 7   /* joint's body: damping [N m s/rad or N s/m] */
};

typedef struct mbs_sim mbs_sim;          /* one instance: model copy, parameters, state, work buffers */

typedef struct {
    int N, nq, nv, nx, n_u, n_loops, n_rows;     /* bodies, sizes, inputs, loops, constraint rows */
    uint64_t model_hash;                          /* from the tables' header */
} mbs_sizes;

typedef struct {
    double p_sys[3];   /* sum m_i rhatdot_i, MBS Momentum Testing Eq. 9 (~0) [N s], world axes */
    double P_sys[3];   /* total linear momentum M_tot Rdot [N s] */
    double H_sys[3];   /* angular momentum about the system CM incl. wheels, MBS Momentum Testing Eq. 10 [N m s] */
    double R[3];       /* system CM [m] */
    double Rdot[3];    /* system CM velocity [m/s] */
    double KE, PE;     /* MBS Energy Testing Eqs. 1-2 [J] (PE: joint springs, point springs, gravity) */
    double H_scale;    /* magnitude scale of H_sys [N m s]: sum over bodies of |L_c,i| + |(c_i - R) x p_rel,i|,
                        * the terms H_sys sums (records.angular_momentum_scale); drift.H_sys divides by it */
    double E_scale;    /* magnitude scale of E = KE + PE [J]: KE + the springs' energy + sum m_i |g| |c_i|, the
                        * terms E sums (outputs.energy_scale); drift.E_balance divides by it (+ |W_in| + |W_diss|) */
} mbs_invariants;

/* ---- instances -------------------------------------------------------------------------- */
/* Bytes an instance of this model needs, 0 if the tables are malformed (reason in err). */
size_t mbs_sim_size(const int32_t *ti, size_t n_ti, const double *tf, size_t n_tf, char *err, size_t n_err);
/* Build an instance in mem (mbs_sim_size bytes, 8-byte aligned); NULL with the reason in err on
 * malformed tables. The state is the model's initial state (its file's initial q, qd), inputs
 * zero, t = 0. The instance copies the tables: the caller may free them afterwards. */
mbs_sim *mbs_sim_init(void *mem, size_t size, const int32_t *ti, size_t n_ti, const double *tf, size_t n_tf,
                      char *err, size_t n_err);
mbs_sizes mbs_sim_sizes(const mbs_sim *s);
/* Copy an instance into another block of the same size (FMU get/set state). */
int mbs_sim_copy(mbs_sim *dst, const mbs_sim *src);

/* ---- parameters (before the first step; mbs_sim_apply_params validates and recomputes) -------- */
int mbs_sim_set_param(mbs_sim *s, int kind, int index, int comp, double value);
int mbs_sim_get_param(const mbs_sim *s, int kind, int index, int comp, double *value);
/* Validate every parameter (mass >= 0, inertia positive semi-definite and triangle inequality,
 * every joint moves mass, finite values) and rebuild the spatial inertias; MBS_ERROR with every
 * problem listed in err ("body link1: negative mass -1 kg; ..."): the instance then keeps working
 * with the last good parameters, and mbs_sim_get_param still returns the values that were set.
 * mbs_sim_step and the algorithms refuse (MBS_ERROR) while a set parameter is not applied. */
int mbs_sim_apply_params(mbs_sim *s, char *err, size_t n_err);
/* Solver settings: method MBS_RK4 | MBS_DOP853, h_max [s] (rk4: > 0; dop853: 0 = unlimited),
 * rtol, atol (> 0). Loop settings: stabilisation flags and Baumgarte (alpha, beta) [1/s]. */
int mbs_sim_set_solver(mbs_sim *s, int method, double h_max, double rtol, double atol, char *err, size_t n_err);
int mbs_sim_set_loops(mbs_sim *s, int baumgarte, int projection, double alpha, double beta);
/* dense = 1: the forward dynamics and kinematics without the products that leave out the exact
 * zeros of a joint axis along a coordinate axis and of a transform rotating about one (the same
 * numbers by construction; this checks it), 0: with them (the default). n_structured (may be
 * NULL): the number of joints whose products then use that structure. */
int mbs_sim_set_dense(mbs_sim *s, int dense, int *n_structured);
/* avx = 0: the hot passes (ABA, joint transforms, kinematics, invariants) run their baseline copies;
 * 1 (the default): their AVX copies where the CPU and OS have AVX (the same operations in the same
 * order, so the same numbers; this checks it). on (may be NULL): 1 if the AVX copies now run. */
int mbs_sim_set_avx(mbs_sim *s, int avx, int *on);

/* ---- state and inputs ---------------------------------------------------------------------- */
double mbs_sim_time(const mbs_sim *s);
void mbs_sim_set_time(mbs_sim *s, double t);
const double *mbs_sim_x(const mbs_sim *s);                       /* (nx,) */
/* Set x (nx,); MBS_ERROR if non-finite or a quaternion is not unit (reason in err). With loops the
 * configuration is assembled (assemble = 1) or checked (0); assemble = 2 takes x as given (only the
 * finiteness and unit-quaternion checks: restoring a saved state bit for bit). */
int mbs_sim_set_x(mbs_sim *s, const double *x, int assemble, char *err, size_t n_err);
const double *mbs_sim_u(const mbs_sim *s);                       /* (n_u,) */
int mbs_sim_set_u(mbs_sim *s, int k, double value);              /* MBS_ERROR if non-finite or k out of range */

/* ---- stepping ------------------------------------------------------------------------------ */
/* Advance by dt [s] > 0 with inputs held (zero-order hold). MBS_OK; MBS_DISCARD when the step
 * cannot be completed (non-finite state, DOP853 step size underflow, singular loop system): the
 * state is left as before the call and the reason is in mbs_sim_message. */
int mbs_sim_step(mbs_sim *s, double dt);
const char *mbs_sim_message(const mbs_sim *s);
/* statistics: internal steps, right-hand-side evaluations, last internal step [s] */
void mbs_sim_stats(const mbs_sim *s, long long *n_steps, long long *n_rhs, double *h_last);

/* ---- outputs, computed at most once per state and only when asked ------------------------- */
const double *mbs_sim_qdd(mbs_sim *s);                           /* (nv,) at the current x and u */
const mbs_invariants *mbs_sim_invariants(mbs_sim *s);
const double *mbs_sim_lambda(mbs_sim *s);                        /* (n_rows,) loop multipliers */

/* ---- algorithms at a given state (no springs/dampers/inputs added unless said) ---------------- */
/* q: a spherical or free joint's quaternion of any nonzero norm stands for its direction (the joint
 * rotates by that of q / |q|, spatial.h quat_to_R); MBS_ERROR if q is not finite or a quaternion's
 * |q|^2 is not positive and finite. */
/* qdd = ABA(q, qd, tau, f_ext); f_ext (N+1)*6 body wrenches [N m; N], body axes about the body
 * origin, row 0 ignored, or NULL. */
int mbs_aba(mbs_sim *s, const double *q, const double *qd, const double *tau, const double *f_ext, double *qdd);
/* tau = RNEA(q, qd, qdd, f_ext) */
int mbs_rnea(mbs_sim *s, const double *q, const double *qd, const double *qdd, const double *f_ext, double *tau);
/* M (nv*nv, row-major) = CRBA(q) */
int mbs_crba(mbs_sim *s, const double *q, double *M);
/* qdd under inputs u (n_u,), joint springs/dampers, force elements, gravity and f_ext: the
 * equations of motion the simulator integrates (loops closed when the model has loops). */
int mbs_forward_dynamics(mbs_sim *s, const double *q, const double *qd, const double *u, const double *f_ext,
                         double *qdd);

/* ---- additions (native-core): body outputs, names, the Model's dynamics, the rhs ----------- */
/* Poses and velocities of every body at the current state (computed once per state, when asked):
 * R (N+1)*9 body axes as columns in world axes (row-major), p (N+1)*3 body origins [m] world,
 * v (N+1)*6 spatial velocities [rad/s; m/s], body axes at the body origin; row 0 the world. */
typedef struct { const double *R, *p, *v; } mbs_kinematics;
const mbs_kinematics *mbs_sim_kinematics(mbs_sim *s);
/* Every body's pose relative to its parent body at the current state (mbsfmu.engine.kinematics.
 * RelativePoses, bit for bit; a root's: its world pose): out (N*7) per body the translation
 * Rp^T (p - pp) [m] and the quaternion (x, y, z, w) of Rp^T R (ROS's order). */
int mbs_sim_relative_poses(mbs_sim *s, double *out);
/* Names from the tables: body i (1..N, tree order, wheel rotors named after their wheel) and its
 * joint; "world" for 0 or out of range. */
const char *mbs_sim_body_name(const mbs_sim *s, int i);
const char *mbs_sim_joint_name(const mbs_sim *s, int i);
/* Model.forward_dynamics / inverse_dynamics: ABA / RNEA with the joint springs and dampers added
 * to tau (tau (nv,) actuator forces), f_ext as in mbs_aba (NULL: none). */
int mbs_forward_dynamics_tau(mbs_sim *s, const double *q, const double *qd, const double *tau, const double *f_ext,
                             double *qdd);
int mbs_inverse_dynamics_tau(mbs_sim *s, const double *q, const double *qd, const double *qdd, const double *f_ext,
                             double *tau);
/* xdot (nx,) = f(x, u): the right-hand side the integrators use (u (n_u,)) */
int mbs_sim_rhs(mbs_sim *s, const double *x, const double *u, double *xdot);
/* Forward kinematics at (q, qd, qdd) into caller arrays (any of qd, qdd, R, p, v, a NULL to skip):
 * R (N+1)*9, p (N+1)*3, v and a (N+1)*6 (a: spatial acceleration without gravity). */
int mbs_fk(mbs_sim *s, const double *q, const double *qd, const double *qdd, double *R, double *p, double *v, double *a);
/* The invariants at a given (q, qd) (mbs_sim_invariants is the lazy one of the current state). */
int mbs_invariants_at(mbs_sim *s, const double *q, const double *qd, mbs_invariants *out);
/* The body records at (q, qd) (mbsfmu/sim/outputs.py body_record_values: 49 per body of bodies
 * (n_b,), 7 per wheel rotor of wheels (n_w,), then 24 system values) into out. */
int mbs_records_at(mbs_sim *s, const double *q, const double *qd, int n_b, const int32_t *bodies, int n_w,
                   const int32_t *wheels, double *out);
/* All inputs at once (u (n_u,)); MBS_ERROR (nothing changed) if one is not finite. */
int mbs_sim_set_inputs(mbs_sim *s, const double *u);
/* Set the time t [s] and the inputs u (n_u,), then mbs_sim_step(dt): one call per step (MBS_ERROR
 * with nothing changed if an input is not finite; u NULL: inputs kept). */
int mbs_sim_step_inputs(mbs_sim *s, double t, const double *u, double dt);
/* Every output at the current state and inputs u (n_u,; NULL: those set) in one array
 * (Simulator.outputs, same order; MBS_ERROR if an input is not finite):
 * q (nq), qd (nv), u (n_u), qdd (nv), the 20 engine values (p_sys, P_sys, H_sys, R, Rdot, KE, PE,
 * E = KE + PE, W_in, W_diss), the body records of mbs_records_at, then k and x per spring (joint
 * springs, then point springs). Trees and loops alike (qdd with the loops closed). */
int mbs_sim_outputs(mbs_sim *s, const double *u, int n_b, const int32_t *bodies, int n_w, const int32_t *wheels,
                    double *out);
/* Restore the statistics (a state restored from outside: FMU state, Simulator.set_state); h_last
 * is also DOP853's next first step (0: chosen afresh). */
void mbs_sim_set_stats(mbs_sim *s, long long n_steps, long long n_rhs, double h_last);
/* The accelerations' response to an input change du (n_u,) at configuration q: dqdd (nv,) =
 * d(qdd)/du du = M(q)^-1 (B du + J^T f_u du), loops closed (exact: qdd is affine in u; response.c).
 * MBS_ERROR (reason in mbs_sim_message) where M or the loop system is singular. */
int mbs_input_response(mbs_sim *s, const double *q, const double *du, double *dqdd);

/* ---- the state as a host's integrator holds it (FMI Model Exchange; host_state.c) ------------ */
/* Take the host's state xh (nx,): the instance's x is xh with every quaternion divided by its
 * norm; MBS_ERROR (reason in err, the instance unchanged) if xh is not finite or a quaternion has
 * norm 0. */
int mbs_sim_set_host_x(mbs_sim *s, const double *xh, char *err, size_t n_err);
/* xdot (nx,) of the host's state xh (set by mbs_sim_set_host_x): f(x, u) at the normalised x (the
 * lazy rhs of mbs_sim_qdd: computed once per state), each quaternion's rows as
 * 1/2 qh (x) (0, w) + k_norm (1 - |qh|^2) qh (k_norm [1/s]); not counted in n_rhs. MBS_DISCARD
 * if xdot is not finite, MBS_ERROR with parameters not applied. */
int mbs_sim_host_derivatives(mbs_sim *s, const double *xh, double k_norm, double *xdot);
/* the host state's drift: quat = max over quaternions of ||qh| - 1|, loops = max |Phi| / L at the
 * instance's configuration (0 without loops; L: the loops' length scale [m]) */
int mbs_sim_host_drift(mbs_sim *s, const double *xh, double *quat, double *loops);
/* xh's quaternions normalised, its q put on Phi = 0 and qd on A qd = 0 (the projection after an RK4
 * step, loops.c), in place; the instance takes it as its state */
int mbs_sim_host_project(mbs_sim *s, double *xh, char *err, size_t n_err);

/* The Jacobian of mbs_sim_host_derivatives' f(xh, u) (state_jacobian.c), exactly, for trees:
 * A (nx x nx, row-major) = df/dxh in the host's coordinates (a quaternion's four numbers), B (nx x
 * n_u, row-major; any non-NULL pointer when n_u = 0) = df/du, at the host state xh (nx,) and inputs
 * u (n_u,) (the instance's state is not used: any xh with unit-able quaternions), k_norm [1/s] as
 * mbs_sim_host_derivatives'. work: mbs_state_jacobian_work(s) doubles from the caller (the core
 * allocates nothing). MBS_ERROR with the reason in mbs_sim_message for closed loops or couplings, a
 * joint spring on a multi-DoF joint, non-finite arguments, parameters not applied or a singular M;
 * MBS_DISCARD if an entry is not finite. Overwrites the core's work arrays, not the state's lazy outputs. */
size_t mbs_state_jacobian_work(const mbs_sim *s);
int mbs_state_jacobian(mbs_sim *s, const double *xh, const double *u, double k_norm, double *work, double *A,
                       double *B);

/* ---- numbers as text (decimal.c) ---------------------------------------------------------- */
/* v as the shortest decimal text that reads back to v, in Python's repr layout ("1.0", "1e-05",
 * "inf", "nan"), into out (>= 25 bytes, NUL-terminated); returns its length. */
int mbs_shortest(double v, char *out);
/* v[0..n) so, separated by sep, into out (>= 25 n bytes, not terminated); returns the length. */
size_t mbs_format_values(const double *v, size_t n, char sep, char *out);

/* ---- sin and cos (trig.c) ----------------------------------------------------------------- */
/* s[k], c[k] = sin x[k], cos x[k] as the core computes them (trig.h: the same bits on every
 * platform, within 1 ulp for |x| <= 823549) */
void mbs_sincos_values(const double *x, size_t n, double *s, double *c);
/* s, c (n) = sin and cos of a0 + d by the angle-sum formulas from a0's (trig.h mbs_sincos_sum; |d| <= 1/16) */
void mbs_sincos_sum_values(const double *a0, const double *d, size_t n, double *s, double *c);

#ifdef __cplusplus
}
#endif
#endif /* MBS_CORE_H */
