/* spatial.h - spatial algebra on plain arrays (RBDA ch. 2), inline, allocation-free.
 *
 * Spatial vectors [angular; linear]. A transform X from frame A to frame B is stored as (E, r):
 * E (3x3 row-major) takes A coordinates to B coordinates, r is B's origin in A coordinates,
 * X = [[E, 0], [-E rx, E]] (RBDA Eq. 2.24). Applied as a rotation plus a translation (RBDA
 * Table 2.5) instead of a dense 6x6 product:
 *     X v   = [E w; E (v_o - r x w)]              motion vector v = [w; v_o]
 *     X^T f = [E^T n + r x (E^T f_o); E^T f_o]    force vector f = [n; f_o]
 * 6x6 matrices are row-major double[36]. Outputs never alias inputs.
 */
#ifndef MBS_SPATIAL_H
#define MBS_SPATIAL_H

#include <math.h>
#include "mbs_core.h"
#include "mbs_inline.h"
#include "trig.h"

#define M6(A, k, l) (A)[6 * (k) + (l)]

/* out = X v (motion vector) */
static inline void X_motion(const double *E, const double *r, const double *v, double *out)
{
    double t0 = v[3] - (r[1] * v[2] - r[2] * v[1]);          /* v_o - r x w */
    double t1 = v[4] - (r[2] * v[0] - r[0] * v[2]);
    double t2 = v[5] - (r[0] * v[1] - r[1] * v[0]);
    int k;
    for (k = 0; k < 3; k++) {
        out[k] = E[3 * k] * v[0] + E[3 * k + 1] * v[1] + E[3 * k + 2] * v[2];
        out[3 + k] = E[3 * k] * t0 + E[3 * k + 1] * t1 + E[3 * k + 2] * t2;
    }
}

/* out += X^T f (force vector carried back to the parent) */
static inline void XT_force_add(const double *E, const double *r, const double *f, double *out)
{
    double g0 = E[0] * f[3] + E[3] * f[4] + E[6] * f[5];      /* E^T f_o */
    double g1 = E[1] * f[3] + E[4] * f[4] + E[7] * f[5];
    double g2 = E[2] * f[3] + E[5] * f[4] + E[8] * f[5];
    out[0] += E[0] * f[0] + E[3] * f[1] + E[6] * f[2] + (r[1] * g2 - r[2] * g1);
    out[1] += E[1] * f[0] + E[4] * f[1] + E[7] * f[2] + (r[2] * g0 - r[0] * g2);
    out[2] += E[2] * f[0] + E[5] * f[1] + E[8] * f[2] + (r[0] * g1 - r[1] * g0);
    out[3] += g0;
    out[4] += g1;
    out[5] += g2;
}

/* F[:, :n] = X^T F[:, :n] in place (F 6 x 6 row-major, n columns used): CRBA's F = Xup^T F */
static inline void XT_force_cols(const double *E, const double *r, double *F, int n)
{
    int k;
    for (k = 0; k < n; k++) {
        double f[6], o[6] = {0, 0, 0, 0, 0, 0};
        int l;
        for (l = 0; l < 6; l++) f[l] = M6(F, l, k);
        XT_force_add(E, r, f, o);
        for (l = 0; l < 6; l++) M6(F, l, k) = o[l];
    }
}

/* out (3x3 row-major) = E^T M E for the 3x3 block M of the 6x6 I at (ro, co): the block in
 * parent axes (RBDA Eq. 2.66). */
#define ROT_N(I, ro, co, E, n)                                                                   \
    do {                                                                                         \
        int a_, b_;                                                                              \
        for (a_ = 0; a_ < 3; a_++)                                                               \
            for (b_ = 0; b_ < 3; b_++)                                                           \
                (n)[3 * a_ + b_] = M6(I, (ro) + a_, (co)) * (E)[b_] + M6(I, (ro) + a_, (co) + 1) * (E)[3 + b_] + \
                                   M6(I, (ro) + a_, (co) + 2) * (E)[6 + b_];                     \
    } while (0)
#define ROT_OUT(E, n, a, b) ((E)[a] * (n)[b] + (E)[3 + (a)] * (n)[3 + (b)] + (E)[6 + (a)] * (n)[6 + (b)])

static inline void rotated_block(const double *E, const double *I, int ro, int co, double *out)
{
    double n[9];
    ROT_N(I, ro, co, E, n);                                   /* n = M E, out = E^T n */
    out[0] = ROT_OUT(E, n, 0, 0); out[1] = ROT_OUT(E, n, 0, 1); out[2] = ROT_OUT(E, n, 0, 2);
    out[3] = ROT_OUT(E, n, 1, 0); out[4] = ROT_OUT(E, n, 1, 1); out[5] = ROT_OUT(E, n, 1, 2);
    out[6] = ROT_OUT(E, n, 2, 0); out[7] = ROT_OUT(E, n, 2, 1); out[8] = ROT_OUT(E, n, 2, 2);
}

/* out += the rotated blocks A', B', C' of an inertia shifted by r (RBDA Eq. 2.66 / Table 2.5):
 * [[A' - Z - Z^T - K rx, B' + K], [(B' + K)^T, C']], K = rx C', Z = B' rx; the one place each
 * product XT_I_X_add* (dense, and crba.c's structured ones) does it, in one order of operations */
MBS_INLINE void shifted_blocks_add(const double *A, const double *B, const double *C, const double *r, double *out)
{
    double K[9], G[9], Z[9], W[9];
    double r0 = r[0], r1 = r[1], r2 = r[2];
    int a, b;
    for (b = 0; b < 3; b++) {                                 /* K = rx C' (columns r x C'[:, b]) */
        K[0 + b] = r1 * C[6 + b] - r2 * C[3 + b];
        K[3 + b] = r2 * C[0 + b] - r0 * C[6 + b];
        K[6 + b] = r0 * C[3 + b] - r1 * C[0 + b];
    }
    for (a = 0; a < 9; a++) G[a] = B[a] + K[a];
    for (a = 0; a < 3; a++) {                                 /* Z = B' rx, W = K rx (rows x r) */
        Z[3 * a + 0] = B[3 * a + 1] * r2 - B[3 * a + 2] * r1;
        Z[3 * a + 1] = B[3 * a + 2] * r0 - B[3 * a + 0] * r2;
        Z[3 * a + 2] = B[3 * a + 0] * r1 - B[3 * a + 1] * r0;
        W[3 * a + 0] = K[3 * a + 1] * r2 - K[3 * a + 2] * r1;
        W[3 * a + 1] = K[3 * a + 2] * r0 - K[3 * a + 0] * r2;
        W[3 * a + 2] = K[3 * a + 0] * r1 - K[3 * a + 1] * r0;
    }
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++) {
            M6(out, a, b) += A[3 * a + b] - Z[3 * a + b] - Z[3 * b + a] - W[3 * a + b];
            M6(out, a, 3 + b) += G[3 * a + b];
            M6(out, 3 + b, a) += G[3 * a + b];
            M6(out, 3 + a, 3 + b) += C[3 * a + b];
        }
}

/* out += X^T I X for a symmetric spatial inertia I = [[A, B], [B^T, C]]: rotate the blocks to
 * parent axes, A' = E^T A E (B', C' alike), then shift by r (RBDA Eq. 2.66 / Table 2.5):
 * X^T I X = [[A' - Z - Z^T - K rx, B' + K], [(B' + K)^T, C']], K = rx C', Z = B' rx.
 * singular_pivots (model.c) uses this dense form; the ABA uses XT_I_X_sym_k below, which forms
 * each mirrored pair once and rounds differently in the last bits; the CRBA carries its composite
 * inertias in compact form (crba.c). */
static inline void XT_I_X_add(const double *E, const double *r, const double *I, double *out)
{
    double A[9], B[9], C[9];
    rotated_block(E, I, 0, 0, A);
    rotated_block(E, I, 0, 3, B);
    rotated_block(E, I, 3, 3, C);
    shifted_blocks_add(A, B, C, r, out);
}

/* Structured products. k (0, 1, 2) says that E is a rotation about coordinate axis k: row k and
 * column k of E are e_k exactly, but for the sign of a zero (a revolute joint about +-e_k, or a
 * prismatic or fixed joint, in a frame not turned or turned about e_k only: mbs_rebuild_inertia
 * sets s->erot). The products then leave out the terms that multiply one of E's exact zeros or ones
 * and add the others in the same order, so for finite values they give the same numbers as the
 * dense formulas (tests/engine/test_aba_structure.py compares them bit for bit). Each _ax product is
 * called with a constant k by its _k dispatcher (k = -1: the dense formula), so its indices fold at
 * compile time. */
#define AX_LO(k) ((k) == 0 ? 1 : 0)                           /* the two other axes, ascending */
#define AX_HI(k) ((k) == 2 ? 1 : 2)
#define MBS_AX_DISPATCH(k, call, dense)                                                          \
    switch (k) {                                                                               \
    case 0: call(0); break;                                                                    \
    case 1: call(1); break;                                                                    \
    case 2: call(2); break;                                                                    \
    default: dense; break;                                                                     \
    }

/* out = X v (X_motion) */
MBS_INLINE void X_motion_ax(int k, const double *E, const double *r, const double *v, double *out)
{
    double t[3];
    int lo = AX_LO(k), hi = AX_HI(k), a, j;
    t[0] = v[3] - (r[1] * v[2] - r[2] * v[1]);
    t[1] = v[4] - (r[2] * v[0] - r[0] * v[2]);
    t[2] = v[5] - (r[0] * v[1] - r[1] * v[0]);
    out[k] = v[k];
    out[3 + k] = t[k];
    for (j = 0; j < 2; j++) {
        a = j == 0 ? lo : hi;
        out[a] = E[3 * a + lo] * v[lo] + E[3 * a + hi] * v[hi];
        out[3 + a] = E[3 * a + lo] * t[lo] + E[3 * a + hi] * t[hi];
    }
}

/* out += [n + r x g; g]: the last step of X^T f for X = (E, r), with n = E^T f's moment part and
 * g = E^T f's force part (XT_force_add's order of operations) */
MBS_INLINE void force_shift_add(const double *n, const double *g, const double *r, double *out)
{
    out[0] += n[0] + (r[1] * g[2] - r[2] * g[1]);
    out[1] += n[1] + (r[2] * g[0] - r[0] * g[2]);
    out[2] += n[2] + (r[0] * g[1] - r[1] * g[0]);
    out[3] += g[0];
    out[4] += g[1];
    out[5] += g[2];
}

/* out += X^T f (XT_force_add) */
MBS_INLINE void XT_force_add_ax(int k, const double *E, const double *r, const double *f, double *out)
{
    double g[3], n[3];
    int lo = AX_LO(k), hi = AX_HI(k), b, j;
    g[k] = f[3 + k];
    n[k] = f[k];
    for (j = 0; j < 2; j++) {
        b = j == 0 ? lo : hi;
        g[b] = E[3 * lo + b] * f[3 + lo] + E[3 * hi + b] * f[3 + hi];
        n[b] = E[3 * lo + b] * f[lo] + E[3 * hi + b] * f[hi];
    }
    force_shift_add(n, g, r, out);
}

/* n = M E for the 3x3 block M of I at (ro, co) (ROT_N): column k is M's */
MBS_INLINE void rot_n_ax(int k, const double *E, const double *I, int ro, int co, double *n)
{
    int lo = AX_LO(k), hi = AX_HI(k), a, b, j;
    for (a = 0; a < 3; a++) {
        n[3 * a + k] = M6(I, ro + a, co + k);
        for (j = 0; j < 2; j++) {
            b = j == 0 ? lo : hi;
            n[3 * a + b] = M6(I, ro + a, co + lo) * E[3 * lo + b] + M6(I, ro + a, co + hi) * E[3 * hi + b];
        }
    }
}

/* out[a][b] = (E^T n)[a][b] (ROT_OUT): row k is n's */
MBS_INLINE double rot_out_ax(int k, const double *E, const double *n, int a, int b)
{
    int lo = AX_LO(k), hi = AX_HI(k);
    return a == k ? n[3 * k + b] : E[3 * lo + a] * n[3 * lo + b] + E[3 * hi + a] * n[3 * hi + b];
}

/* out = E^T M E for the 3x3 block M of I at (ro, co) (rotated_block) */
MBS_INLINE void rotated_block_ax(int k, const double *E, const double *I, int ro, int co, double *out)
{
    double n[9];
    int a, b;
    rot_n_ax(k, E, I, ro, co, n);
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++) out[3 * a + b] = rot_out_ax(k, E, n, a, b);
}

/* the upper triangle of out = E^T M E for a symmetric 3x3 block M of I at (o, o); k = -1: dense */
MBS_INLINE void rotated_sym_block_ax(int k, const double *E, const double *I, int o, double *out)
{
    double n[9];
    int a, b;
    if (k < 0) ROT_N(I, o, o, E, n);
    else rot_n_ax(k, E, I, o, o, n);
    for (a = 0; a < 3; a++)
        for (b = a; b < 3; b++) out[3 * a + b] = k < 0 ? ROT_OUT(E, n, a, b) : rot_out_ax(k, E, n, a, b);
}

/* The upper triangle of out = base + X^T I X for a symmetric I (upper triangle and the lower
 * left block read; base may be out): XT_I_X_add's formulas with the symmetric blocks A', C' and
 * the symmetric top left A' - Z - Z^T - K rx formed once per mirrored pair (the ABA's articulated
 * inertias; aba.c mirrors them before use). k: as above; k = -1: dense rotations. */
MBS_INLINE void XT_I_X_sym_ax(int k, const double *E, const double *r, const double *I, const double *base, double *out)
{
    double A[9], B[9], C[9], K[9], Z[9], W[9];
    double r0 = r[0], r1 = r[1], r2 = r[2];
    int a, b;
    rotated_sym_block_ax(k, E, I, 0, A);
    if (k < 0) rotated_block(E, I, 0, 3, B);
    else rotated_block_ax(k, E, I, 0, 3, B);
    rotated_sym_block_ax(k, E, I, 3, C);
    C[3] = C[1]; C[6] = C[2]; C[7] = C[5];
    for (b = 0; b < 3; b++) {                                 /* K = rx C' */
        K[0 + b] = r1 * C[6 + b] - r2 * C[3 + b];
        K[3 + b] = r2 * C[0 + b] - r0 * C[6 + b];
        K[6 + b] = r0 * C[3 + b] - r1 * C[0 + b];
    }
    for (a = 0; a < 3; a++) {                                 /* Z = B' rx */
        Z[3 * a + 0] = B[3 * a + 1] * r2 - B[3 * a + 2] * r1;
        Z[3 * a + 1] = B[3 * a + 2] * r0 - B[3 * a + 0] * r2;
        Z[3 * a + 2] = B[3 * a + 0] * r1 - B[3 * a + 1] * r0;
    }
    W[0] = K[1] * r2 - K[2] * r1; W[1] = K[2] * r0 - K[0] * r2; W[2] = K[0] * r1 - K[1] * r0;   /* K rx, upper */
    W[4] = K[5] * r0 - K[3] * r2; W[5] = K[3] * r1 - K[4] * r0;
    W[8] = K[6] * r1 - K[7] * r0;
    for (a = 0; a < 3; a++) {
        for (b = a; b < 3; b++) {
            M6(out, a, b) = M6(base, a, b) + (A[3 * a + b] - Z[3 * a + b] - Z[3 * b + a] - W[3 * a + b]);
            M6(out, 3 + a, 3 + b) = M6(base, 3 + a, 3 + b) + C[3 * a + b];
        }
        for (b = 0; b < 3; b++) M6(out, a, 3 + b) = M6(base, a, 3 + b) + (B[3 * a + b] + K[3 * a + b]);
    }
}

MBS_INLINE void X_motion_k(int k, const double *E, const double *r, const double *v, double *out)
{
#define CALL(K) X_motion_ax(K, E, r, v, out)
    MBS_AX_DISPATCH(k, CALL, X_motion(E, r, v, out))
#undef CALL
}

MBS_INLINE void XT_force_add_k(int k, const double *E, const double *r, const double *f, double *out)
{
#define CALL(K) XT_force_add_ax(K, E, r, f, out)
    MBS_AX_DISPATCH(k, CALL, XT_force_add(E, r, f, out))
#undef CALL
}

MBS_INLINE void XT_I_X_sym_k(int k, const double *E, const double *r, const double *I, const double *base, double *out)
{
#define CALL(K) XT_I_X_sym_ax(K, E, r, I, base, out)
    MBS_AX_DISPATCH(k, CALL, XT_I_X_sym_ax(-1, E, r, I, base, out))
#undef CALL
}

/* Products with a joint's motion subspace S (body axes; RBDA Table 4.1, joints.motion_subspace)
 * by its known structure instead of dense 6 x n products with zeros (RBDA Appendix A):
 * revolute S = [a; 0], prismatic S = [0; a], spherical S = [1; 0], free S = [[0, 1], [1, 0]]
 * (free qd = [v; w]). Each gives the same sums as the dense product, less the zero terms. */
static const int FREE_ROW[6] = {3, 4, 5, 0, 1, 2};           /* row of S's one in column b (free joint) */

/* out (6) = S x */
static inline void S_mul(int jt, const double *axis, const double *x, double *out)
{
    int k;
    for (k = 0; k < 6; k++) out[k] = 0.0;
    switch (jt) {
    case MBS_REVOLUTE: for (k = 0; k < 3; k++) out[k] = axis[k] * x[0]; break;
    case MBS_PRISMATIC: for (k = 0; k < 3; k++) out[3 + k] = axis[k] * x[0]; break;
    case MBS_SPHERICAL: for (k = 0; k < 3; k++) out[k] = x[k]; break;
    case MBS_FREE: for (k = 0; k < 6; k++) out[FREE_ROW[k]] = x[k]; break;
    default: break;
    }
}

/* out (n) = S^T f */
static inline void ST_mul(int jt, const double *axis, const double *f, double *out)
{
    int k;
    switch (jt) {
    case MBS_REVOLUTE: out[0] = axis[0] * f[0] + axis[1] * f[1] + axis[2] * f[2]; break;
    case MBS_PRISMATIC: out[0] = axis[0] * f[3] + axis[1] * f[4] + axis[2] * f[5]; break;
    case MBS_SPHERICAL: for (k = 0; k < 3; k++) out[k] = f[k]; break;
    case MBS_FREE: for (k = 0; k < 6; k++) out[k] = f[FREE_ROW[k]]; break;
    default: break;
    }
}

/* U (6 x n, leading dimension 6) = IA S */
static inline void IA_S(int jt, const double *axis, const double *IA, double *U)
{
    int k, b;
    switch (jt) {
    case MBS_REVOLUTE:
        for (k = 0; k < 6; k++) M6(U, k, 0) = M6(IA, k, 0) * axis[0] + M6(IA, k, 1) * axis[1] + M6(IA, k, 2) * axis[2];
        break;
    case MBS_PRISMATIC:
        for (k = 0; k < 6; k++) M6(U, k, 0) = M6(IA, k, 3) * axis[0] + M6(IA, k, 4) * axis[1] + M6(IA, k, 5) * axis[2];
        break;
    case MBS_SPHERICAL:
        for (k = 0; k < 6; k++)
            for (b = 0; b < 3; b++) M6(U, k, b) = M6(IA, k, b);
        break;
    case MBS_FREE:
        for (k = 0; k < 6; k++)
            for (b = 0; b < 6; b++) M6(U, k, b) = M6(IA, k, FREE_ROW[b]);
        break;
    default: break;
    }
}

/* out = v x m (motion cross product, RBDA Eq. 2.31) */
static inline void crm_mul(const double *v, const double *m, double *out)
{
    out[0] = v[1] * m[2] - v[2] * m[1];
    out[1] = v[2] * m[0] - v[0] * m[2];
    out[2] = v[0] * m[1] - v[1] * m[0];
    out[3] = v[1] * m[5] - v[2] * m[4] + (v[4] * m[2] - v[5] * m[1]);
    out[4] = v[2] * m[3] - v[0] * m[5] + (v[5] * m[0] - v[3] * m[2]);
    out[5] = v[0] * m[4] - v[1] * m[3] + (v[3] * m[1] - v[4] * m[0]);
}

/* ST_mul and IA_S for a revolute or prismatic joint whose axis is +-e_j (j = sax, model.c;
 * j = -1: the general products): the terms with the axis' zeros skipped, the same numbers. */
static inline void ST_mul_k(int jt, int j, const double *axis, const double *f, double *out)
{
    if (j < 0) ST_mul(jt, axis, f, out);
    else out[0] = axis[j] * f[jt == MBS_PRISMATIC ? 3 + j : j];
}

static inline void IA_S_k(int jt, int j, const double *axis, const double *IA, double *U)
{
    int k, col = jt == MBS_PRISMATIC ? 3 + j : j;
    if (j < 0) {
        IA_S(jt, axis, IA, U);
        return;
    }
    for (k = 0; k < 6; k++) M6(U, k, 0) = M6(IA, k, col) * axis[j];
}

/* out = v x vJ for a joint velocity vJ = S qd with S's known zeros (crm_mul less the products
 * with them, the same numbers): revolute vJ = [w_J; 0], prismatic [0; v_J] */
static inline void crm_joint(int jt, const double *v, const double *m, double *out)
{
    if (jt == MBS_REVOLUTE) {
        out[0] = v[1] * m[2] - v[2] * m[1];
        out[1] = v[2] * m[0] - v[0] * m[2];
        out[2] = v[0] * m[1] - v[1] * m[0];
        out[3] = v[4] * m[2] - v[5] * m[1];
        out[4] = v[5] * m[0] - v[3] * m[2];
        out[5] = v[3] * m[1] - v[4] * m[0];
    } else if (jt == MBS_PRISMATIC) {
        out[0] = out[1] = out[2] = 0.0;
        out[3] = v[1] * m[5] - v[2] * m[4];
        out[4] = v[2] * m[3] - v[0] * m[5];
        out[5] = v[0] * m[4] - v[1] * m[3];
    } else {
        crm_mul(v, m, out);
    }
}

/* out = v x* f (force cross product, RBDA Sec. 2.9) */
static inline void crf_mul(const double *v, const double *f, double *out)
{
    out[0] = v[1] * f[2] - v[2] * f[1] + (v[4] * f[5] - v[5] * f[4]);
    out[1] = v[2] * f[0] - v[0] * f[2] + (v[5] * f[3] - v[3] * f[5]);
    out[2] = v[0] * f[1] - v[1] * f[0] + (v[3] * f[4] - v[4] * f[3]);
    out[3] = v[1] * f[5] - v[2] * f[4];
    out[4] = v[2] * f[3] - v[0] * f[5];
    out[5] = v[0] * f[4] - v[1] * f[3];
}

/* out = A x (6 x 6 row-major A) */
static inline void mat6_vec(const double *A, const double *x, double *out)
{
    int k, l;
    for (k = 0; k < 6; k++) {
        double acc = 0.0;
        for (l = 0; l < 6; l++) acc += M6(A, k, l) * x[l];
        out[k] = acc;
    }
}

/* out = A c for a revolute joint's bias acceleration c = v x (S qd) with S = [+-e_k; 0] (crm_joint):
 * c's entries k and 3 + k are exact zeros, so their products are left out (mat6_vec's sums) */
MBS_INLINE void mat6_vec_rev_ax(int k, const double *A, const double *c, double *out)
{
    int r, l;
    for (r = 0; r < 6; r++) {
        double acc = 0.0;
        for (l = 0; l < 6; l++)
            if (l != k && l != 3 + k) acc += M6(A, r, l) * c[l];
        out[r] = acc;
    }
}

/* out = A^T x */
static inline void mat6T_vec(const double *A, const double *x, double *out)
{
    int k, l;
    for (k = 0; k < 6; k++) {
        double acc = 0.0;
        for (l = 0; l < 6; l++) acc += M6(A, l, k) * x[l];
        out[k] = acc;
    }
}

static inline double dot6(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

/* out = v x* h with h = I v, the angular part's v_o x h_o written v_o x g, g = I[3:, :3] w (below) */
MBS_INLINE void bias_from(const double *v, const double *h, const double *g, double *out)
{
    out[0] = (v[1] * h[2] - v[2] * h[1]) + (v[4] * g[2] - v[5] * g[1]);
    out[1] = (v[2] * h[0] - v[0] * h[2]) + (v[5] * g[0] - v[3] * g[2]);
    out[2] = (v[0] * h[1] - v[1] * h[0]) + (v[3] * g[1] - v[4] * g[0]);
    out[3] = v[1] * h[5] - v[2] * h[4];
    out[4] = v[2] * h[3] - v[0] * h[5];
    out[5] = v[0] * h[4] - v[1] * h[3];
}

/* out = v x* (I v), exact at speed as spatial.bias_force (RBDA Eq. 2.67): with h = I v the
 * linear velocity enters the angular part only through v_o x (I[3:, :3] w), since
 * v_o x (m v_o) = 0 exactly. */
static inline void bias_force(const double *I, const double *v, double *out)
{
    double h[6], g[3];
    int k;
    mat6_vec(I, v, h);
    for (k = 0; k < 3; k++) g[k] = M6(I, 3 + k, 0) * v[0] + M6(I, 3 + k, 1) * v[1] + M6(I, 3 + k, 2) * v[2];
    bias_from(v, h, g, out);
}

/* h = I v and g = I[3:, :3] w for a rigid-body inertia as model.c builds it,
 * [[I_c + m C C^T, m C], [m C^T, m 1]] with C = skew(c): the products with its exact zeros (C's
 * diagonal, the off-diagonal of m 1) skipped, the other terms summed in the same order, so the
 * same numbers as mat6_vec; rigid_bias_force: bias_force so. */
MBS_INLINE void rigid_times(const double *I, const double *v, double *h, double *g)
{
    h[0] = M6(I, 0, 0) * v[0] + M6(I, 0, 1) * v[1] + M6(I, 0, 2) * v[2] + M6(I, 0, 4) * v[4] + M6(I, 0, 5) * v[5];
    h[1] = M6(I, 1, 0) * v[0] + M6(I, 1, 1) * v[1] + M6(I, 1, 2) * v[2] + M6(I, 1, 3) * v[3] + M6(I, 1, 5) * v[5];
    h[2] = M6(I, 2, 0) * v[0] + M6(I, 2, 1) * v[1] + M6(I, 2, 2) * v[2] + M6(I, 2, 3) * v[3] + M6(I, 2, 4) * v[4];
    g[0] = M6(I, 3, 1) * v[1] + M6(I, 3, 2) * v[2];
    g[1] = M6(I, 4, 0) * v[0] + M6(I, 4, 2) * v[2];
    g[2] = M6(I, 5, 0) * v[0] + M6(I, 5, 1) * v[1];
    h[3] = g[0] + M6(I, 3, 3) * v[3];
    h[4] = g[1] + M6(I, 4, 4) * v[4];
    h[5] = g[2] + M6(I, 5, 5) * v[5];
}

MBS_INLINE void rigid_bias_force(const double *I, const double *v, double *out)
{
    double h[6], g[3];
    rigid_times(I, v, h, g);
    bias_from(v, h, g, out);
}

/* R (row-major) of the quaternion (w, x, y, z) of any nonzero norm: the rotation of q / |q|
 * (spatial.quat_to_R). The unit quaternion's R = I + 2 w [v]x + 2 [v]x^2, v = (x, y, z) (J. Sola,
 * "Quaternion kinematics for the error-state Kalman filter", arXiv:1711.02508, the rotation matrix
 * of a quaternion), is not homogeneous in q; at q / |q| it is I + s (w [v]x + [v]x^2) with
 * s = 2 / |q|^2, written out below. The configuration is the quaternion's direction (MuJoCo's
 * mj_kinematics normalises a ball or free joint's quaternion the same way): between RK4's stages
 * |q| != 1, and R stays orthonormal to rounding, as the compact composite inertias (crba.c) need. */
static inline void quat_to_R(const double *qt, double *R)
{
    double w = qt[0], x = qt[1], y = qt[2], z = qt[3], s = 2.0 / (w * w + x * x + y * y + z * z);
    R[0] = 1 - s * (y * y + z * z); R[1] = s * (x * y - w * z);     R[2] = s * (x * z + w * y);
    R[3] = s * (x * y + w * z);     R[4] = 1 - s * (x * x + z * z); R[5] = s * (y * z - w * x);
    R[6] = s * (x * z - w * y);     R[7] = s * (y * z + w * x);     R[8] = 1 - s * (x * x + y * y);
}

/* Rodrigues: R = I + sin(angle) K + (1 - cos(angle)) K K, K = skew(a) (spatial.rot_axis), from
 * s = sin(angle), c = cos(angle) */
static inline void rot_axis_sc(const double *a, double s, double c, double *R)
{
    double c1, K[9], KK[9];
    int i;
    c1 = 1.0 - c;
    K[0] = 0.0;   K[1] = -a[2]; K[2] = a[1];
    K[3] = a[2];  K[4] = 0.0;   K[5] = -a[0];
    K[6] = -a[1]; K[7] = a[0];  K[8] = 0.0;
    KK[0] = K[1] * K[3] + K[2] * K[6];                        /* KK = K K less the products with K's zero diagonal */
    KK[1] = K[2] * K[7];
    KK[2] = K[1] * K[5];
    KK[3] = K[5] * K[6];
    KK[4] = K[3] * K[1] + K[5] * K[7];
    KK[5] = K[3] * K[2];
    KK[6] = K[7] * K[3];
    KK[7] = K[6] * K[1];
    KK[8] = K[6] * K[2] + K[7] * K[5];
    for (i = 0; i < 9; i++) R[i] = (i % 4 == 0 ? 1.0 : 0.0) + s * K[i] + c1 * KK[i];
}

/* out = R x (3x3 row-major times 3-vector) and out = R^T x */
static inline void mat3_vec(const double *R, const double *x, double *out)
{
    out[0] = R[0] * x[0] + R[1] * x[1] + R[2] * x[2];
    out[1] = R[3] * x[0] + R[4] * x[1] + R[5] * x[2];
    out[2] = R[6] * x[0] + R[7] * x[1] + R[8] * x[2];
}

static inline void mat3T_vec(const double *R, const double *x, double *out)
{
    out[0] = R[0] * x[0] + R[3] * x[1] + R[6] * x[2];
    out[1] = R[1] * x[0] + R[4] * x[1] + R[7] * x[2];
    out[2] = R[2] * x[0] + R[5] * x[1] + R[8] * x[2];
}

static inline void cross3(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

#endif
