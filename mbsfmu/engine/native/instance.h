/* instance.h - the inside of an mbs_sim (private to the core's .c files).
 *
 * One block of memory holds the struct, then copies of both model tables (the instance is
 * self-contained: the caller may free its tables after mbs_sim_init), then the parameters' derived
 * arrays and the work arrays. Pointers are rebuilt from the block's base by mbs_layout, so
 * mbs_sim_copy is a memcpy plus mbs_layout. Row 0 of every per-body array is the world.
 */
#ifndef MBS_INSTANCE_H
#define MBS_INSTANCE_H

#include <math.h>
#include "mbs_core.h"

#define MBS_MAGIC 0x6d62735f73696d31ULL /* "mbs_sim1" */
#define MBS_MSG 512
#define N_HEAD_I 16
#define N_HEAD_F 8
#define BODY_F 28
#define DOP_STAGES 13

/* element kinds (tables.py) */
enum { EL_JSPRING = 0, EL_ACT = 1, EL_QUAT = 2, EL_THRUSTER = 3, EL_WRENCH = 4, EL_SPRING = 5 };

struct mbs_sim {
    uint64_t magic;
    size_t size;                               /* bytes of the block */
    int N, nq, nv, nx, n_u, n_elem, n_loops, n_rows, has_forces;
    size_t n_ti, n_tf;
    uint64_t model_hash;

    /* ---- pointers into the block (mbs_layout) ---- */
    int32_t *ti;                               /* copy of the int32 table */
    double *tf;                                /* copy of the float64 table (parameters live here) */
    const int32_t *parent, *jtype, *iq, *nqj, *iv, *nvj, *wheel, *elem;
    const char *names;                         /* body names then joint names, NUL-separated */
    double *body_f;                            /* (N+1) x BODY_F: R_tree, p_tree, axis, mass, com, I_c */
    double *grav, *damping, *elem_f, *x_init;         /* x_init: the model's initial q, qd */
    double *S, *I;                             /* (N+1) x 36: motion subspace (nv columns used), spatial inertia */
    /* work: transforms and kinematics */
    double *E, *r;                             /* Xup_i = (E_i, r_i), (N+1) x 9 and x 3 */
    double *Rw, *pw;                           /* body axes in world (N+1) x 9, origins (N+1) x 3 */
    double *v, *c, *a, *pA, *f, *uu, *fext;    /* (N+1) x 6 */
    double *IA, *U, *Dinv, *Ic;                /* (N+1) x 36 */
    double *tau, *tau_u, *qdd_w;               /* (nv) */
    /* state, inputs, outputs */
    double *x, *u, *qdd_out, *lambda;          /* (nx), (n_u), (nv), (n_rows) */
    double *xs, *xn, *x0;                      /* (nx): stage state, new state, state at step start */
    double *K;                                 /* DOP_STAGES x nx (RK4 uses the first 4 rows) */
    double *kin_R, *kin_p, *kin_v;             /* outputs: world poses, velocities (N+1) x 9, 3, 6 */
    const int32_t *loop_i;                     /* n_loops x 5: kind, body a, body b, first row, rows */
    double *loop_f, *loop_scale;               /* n_loops x 33 (tables.py), the loops' length scale [m] */
    double *lw;                                /* loop work (mbs_loop_work doubles) */
    double *leaf;                              /* (N+1): 1 if no body has i as parent, else 0 */
    double *fk_need;                           /* (N+1): 1 if a force element acts on body i or a descendant */
    double *sing;                              /* (N+1): the parameter check's singular-pivot counts */
    double *rt_one;                            /* (N+1): 1 if R_tree_i is exactly the identity, else 0 */
    double *erot;                              /* (N+1): k if E_i is a rotation about axis k, else -1 (spatial.h) */
    double *eunit;                             /* (N+1): crba.c's structure of E_i: 9 + k if erot = k, else 3 kr + kc if
                                                * E_i's row kr and column kc are +-e_kc^T, +-e_kr exactly (a rotation
                                                * about an axis in a frame turned by quarter turns), else -1 */
    double *sax;                               /* (N+1): k if joint i's axis is +-e_k (revolute, prismatic), else -1 */
    int32_t *rev_ax;                           /* (N+1): 2 k + (erot = k) for a revolute joint about +-e_k, else -1
                                                * (model.c joint_structure; the ABA's steps, the joint transforms) */
    double *first_add;                         /* (N+1): 1 if no body of higher index has i's parent, else 0 */
    double *depth;                             /* (N+1): body i's depth, the root's 0 */
    double *sc;                                /* (N+1) x 3: a revolute joint's angle at its last direct sin and
                                                * cos, and those (kinematics.c); NAN: none yet */
    int32_t *by_depth;                         /* 2 (N+1): the bodies 1..N by depth, then index (aba.c's outward
                                                * passes), in [0, N); the rest the sort's work */

    double t;
    int method;                                /* MBS_RK4 | MBS_DOP853 */
    double h_max, rtol, atol;
    int baumgarte, projection;
    double alpha, beta;
    long long n_steps, n_rhs;
    double h_last;
    int qdd_valid, inv_valid, kin_valid, params_dirty;   /* qdd_valid: qdd_out and K row 0 = f(x, u) are at x */
    int xf_at_x;                               /* E, r hold Xup at x's q (set by the lazy qdd, cleared by
                                                * every mbs_joint_transforms and state change) */
    int v_at_x;                                /* v holds the body velocities at x (set by the lazy qdd without
                                                * loops, cleared by every writer of v, E, r and state change) */
    int dense;                                 /* 1: the ABA's products without the joints' structure
                                                * (erot = sax = -1; mbs_sim_set_dense, a check) */
    int avx, no_avx;                           /* avx: the hot passes run their AVX copies (the same
                                                * arithmetic, the same bits): set by mbs_layout when the CPU
                                                * and OS have AVX, unless no_avx (mbs_sim_set_avx, a check) */
    mbs_invariants inv;
    mbs_kinematics kin;
    char msg[MBS_MSG];
};

/* 1 if the n entries of x are finite, else 0; inline here (not in model.c), so every module uses it
 * without calling into model.c, which calls loops.c (mbs_loop_work): the modules' calls form no cycle */
static inline int mbs_all_finite(const double *x, int n)
{
    int k;
    for (k = 0; k < n; k++)
        if (!isfinite(x[k])) return 0;
    return 1;
}

/* model.c */
void mbs_layout(mbs_sim *s);
void mbs_rebuild_inertia(mbs_sim *s);          /* I_i from mass, com, I_c; S_i from jtype, axis; leaf */
const char *mbs_body_name(const mbs_sim *s, int i);
const char *mbs_joint_name(const mbs_sim *s, int i);
void mbs_fmt(char *buf, size_t n, const char *fmt, ...);
void mbs_append(char *buf, size_t n, const char *fmt, ...);

/* kinematics.c */
/* the entries of body i's Xup that do not depend on q_i, for a revolute joint about +-e_k (s->sax):
 * r_i = p_tree and E_i's row k (and column k if R_tree = 1), which mbs_joint_transforms leaves as they
 * are; after every change of the joint structure (mbs_rebuild_inertia) */
void mbs_joint_constants(mbs_sim *s, int i);
void mbs_joint_transforms(mbs_sim *s, const double *q);
/* the same at q near q0 (RK4's later stages): the revolute joints' sin and cos by the angle-sum
 * formulas from q0's (kinematics.c); q0 = NULL: mbs_joint_transforms */
void mbs_joint_transforms_near(mbs_sim *s, const double *q, const double *q0);
/* mask: NULL for every body, or (N+1) flags: only bodies with mask[i] != 0 (a parent's flag is set
 * whenever a child's is) get R, p, v, a; the others keep stale values */
void mbs_forward_kinematics(mbs_sim *s, const double *qd, const double *qdd, int with_v, int with_a, const double *mask);
/* rnea.c, crba.c, aba.c (Xup from mbs_joint_transforms; f_ext in s->fext, for the ABA in fext: s->fext,
 * or NULL where no external force acts) */
void mbs_rnea_core(mbs_sim *s, const double *qd, const double *qdd, double *tau);
void mbs_crba_core(mbs_sim *s, double *M);
void mbs_aba_core(mbs_sim *s, const double *qd, const double *tau, const double *fext, double *qdd);
/* x (nv) = M(q)^-1 b with the articulated inertias of the last mbs_aba_core at this q (s->f: work) */
void mbs_aba_solve(mbs_sim *s, const double *b, double *x);
/* forces.c */
void mbs_passive_forces(const mbs_sim *s, const double *q, const double *qd, double *out);
void mbs_body_wrenches(mbs_sim *s, const double *u, double *p_in, double *p_damp);
double mbs_spring_energy(const mbs_sim *s, const double *q);
int mbs_spring_records(const mbs_sim *s, const double *q, double *out);
/* integrate.c */
void mbs_rhs(mbs_sim *s, const double *x, const double *u, double *xdot);
/* the same with the joint transforms from x0's angles (mbs_joint_transforms_near; x0 = NULL: mbs_rhs) */
void mbs_rhs_near(mbs_sim *s, const double *x, const double *u, double *xdot, const double *x0);
void mbs_config_rate(const mbs_sim *s, const double *q, const double *qd, double *out);
void mbs_normalise(const mbs_sim *s, double *x);
int mbs_quat_directions(const mbs_sim *s, const double *q, char *err, size_t n_err);
int mbs_rk4(mbs_sim *s, double dt);
int mbs_dop853(mbs_sim *s, double dt);
/* loops.c */
size_t mbs_loop_work(int nv, int m);
void mbs_sym_eigen(double *G, int m, double *V, double *ev);   /* symmetric m x m: G destroyed */
int mbs_loop_qdd(mbs_sim *s, const double *q, const double *qd, const double *tau, double *qdd);
void mbs_loop_project(mbs_sim *s, double *x);
/* max |Phi(q)| over the loops' rows / the loops' length scale L (loops.c) */
double mbs_loop_residual(mbs_sim *s, const double *q);
/* invariants.c */
void mbs_compute_invariants(mbs_sim *s, const double *q, const double *qd, mbs_invariants *out);
void mbs_compute_records(const mbs_sim *s, int n_b, const int32_t *bodies, int n_w, const int32_t *wheels,
                         double *out);

#endif
