/* model.c - the model tables (layout: mbsfmu/native/tables.py): their checks, an instance's
 * memory layout, and the parameters (mass properties, gravity, wheel inertia, joint springs) with
 * their validation as mbsfmu/model/validation.py and Model._check_moves_mass do it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "instance.h"
#include "spatial.h"
#if MBS_X86_64_AVX
#include <cpuid.h>
#endif

#define INERTIA_RTOL 1e-9    /* validation.INERTIA_RTOL: slack of the PSD and triangle checks */
#define SINGULAR_RTOL 1e-12  /* dynamics/singular.py SINGULAR_RTOL: a pivot below this x its M_jj is zero */

void mbs_fmt(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    if (!buf || n == 0) return;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

void mbs_append(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    size_t len;
    if (!buf || n == 0) return;
    len = strlen(buf);
    if (len + 1 >= n) return;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

/* number of doubles of the derived and work arrays */
static size_t n_work(int N, int nv, int nx, int n_u, int n_rows)
{
    size_t N1 = (size_t)N + 1;
    return 72 * N1 + 24 * N1 + 42 * N1 + 144 * N1 + 3 * (size_t)nv + (size_t)nx + (size_t)n_u + (size_t)nv +
           (size_t)n_rows + 3 * (size_t)nx + DOP_STAGES * (size_t)nx + 18 * N1 +
           mbs_loop_work(nv, n_rows) + 14 * N1;
}

/* every structural check of the tables; 0 and the reason in err if one fails */
static int check_tables(const int32_t *ti, size_t n_ti, const double *tf, size_t n_tf, char *err, size_t n_err)
{
    int N, nq, nv, n_elem, n_loops, i, e, nq_sum = 0, nv_sum = 0, names_off, names_len;
    if (!ti || !tf || n_ti < N_HEAD_I || n_tf < N_HEAD_F) {
        mbs_fmt(err, n_err, "model tables missing or too short (%lu int32, %lu float64 words)", (unsigned long)n_ti,
                (unsigned long)n_tf);
        return 0;
    }
    if (ti[0] != MBS_TABLES_VERSION || tf[0] != (double)MBS_TABLES_VERSION) {
        mbs_fmt(err, n_err, "model tables of version %d/%g, this core reads version %d: rebuild them", (int)ti[0], tf[0],
                MBS_TABLES_VERSION);
        return 0;
    }
    N = ti[5]; nq = ti[6]; nv = ti[7]; n_elem = ti[9]; n_loops = ti[10]; names_off = ti[13]; names_len = ti[14];
    if ((size_t)ti[1] != n_ti || (size_t)ti[2] != n_tf || tf[1] != (double)n_tf || N < 0 || nq < 0 || nv < 0 ||
        n_elem < 0 || ti[8] < 0 || ti[10] < 0 || ti[11] < 0 || N > 100000 || nv > 600000 ||
        tf[2] != (double)N || tf[3] != (double)nv || tf[4] != (double)n_elem ||
        tf[5] != (double)(uint32_t)ti[3] || tf[6] != (double)(uint32_t)ti[4] ||
        n_loops > 10000 || ti[11] > 50000 ||
        names_off != N_HEAD_I + 7 * (N + 1) + 4 * n_elem + 5 * n_loops || names_len < 0 ||
        (size_t)names_off + ((size_t)names_len + 3) / 4 != n_ti ||
        n_tf != (size_t)N_HEAD_F + BODY_F * ((size_t)N + 1) + 3 + (size_t)nv + 9 * (size_t)n_elem + (size_t)nq +
                    (size_t)nv + 1 + 33 * (size_t)n_loops) {
        mbs_fmt(err, n_err, "model tables are inconsistent (sizes or hash differ between header and content)");
        return 0;
    }
    for (i = 1; i <= N; i++) {
        const int32_t *row = ti + N_HEAD_I;
        int par = row[i], jt = row[(N + 1) + i], iq = row[2 * (N + 1) + i], nqi = row[3 * (N + 1) + i];
        int iv = row[4 * (N + 1) + i], nvi = row[5 * (N + 1) + i];
        static const int NQ[5] = {0, 1, 1, 4, 7}, NV[5] = {0, 1, 1, 3, 6};
        if (par < 0 || par >= i || jt < 0 || jt > 4 || nqi != NQ[jt] || nvi != NV[jt] || iq != nq_sum || iv != nv_sum) {
            mbs_fmt(err, n_err, "model tables: body %d has a bad parent, joint type or coordinate slice", i);
            return 0;
        }
        nq_sum += nqi;
        nv_sum += nvi;
    }
    if (nq_sum != nq || nv_sum != nv) {
        mbs_fmt(err, n_err, "model tables: joint sizes add up to nq = %d, nv = %d, header says %d, %d", nq_sum, nv_sum,
                nq, nv);
        return 0;
    }
    for (e = 0; e < n_elem; e++) {
        const int32_t *el = ti + N_HEAD_I + 7 * (N + 1) + 4 * e;
        int ok, n_u = ti[8];
        switch (el[0]) {
        case EL_JSPRING: ok = el[1] >= 0 && el[1] < nq && el[2] >= 0 && el[2] < nv && el[3] >= 1 && el[3] <= N; break;
        case EL_ACT: ok = el[1] >= 0 && el[1] < n_u && el[2] >= 0 && el[2] < nv; break;
        case EL_QUAT: ok = el[1] >= 0 && el[1] + 4 <= nq; break;
        case EL_THRUSTER: ok = el[1] >= 1 && el[1] <= N && el[3] >= 0 && el[3] < n_u; break;
        case EL_WRENCH: ok = el[1] >= 1 && el[1] <= N && el[3] >= 0 && el[3] + 6 <= n_u; break;
        case EL_SPRING: ok = el[1] >= 0 && el[1] <= N && el[2] >= 0 && el[2] <= N; break;
        default: ok = 0;
        }
        if (!ok) {
            mbs_fmt(err, n_err, "model tables: force element %d (kind %d) refers out of range", e, (int)el[0]);
            return 0;
        }
    }
    for (e = 0; e < n_loops; e++) {
        const int32_t *lp = ti + N_HEAD_I + 7 * (N + 1) + 4 * n_elem + 5 * e;
        const int32_t *nvj = ti + N_HEAD_I + 5 * (N + 1);    /* the body table's nv row */
        int rows = lp[0] == 4 ? 1 : (lp[0] == 0 || lp[0] == 3 ? 3 : 5);
        if (lp[0] < 0 || lp[0] > 4 || lp[1] < 0 || lp[1] > N || lp[2] < 0 || lp[2] > N || lp[3] < 0 ||
            lp[4] != rows || lp[3] + lp[4] > ti[11] ||
            (lp[0] == 4 && (lp[1] < 1 || lp[2] < 1 || nvj[lp[1]] != 1 || nvj[lp[2]] != 1))) {
            mbs_fmt(err, n_err, "model tables: loop %d is malformed", e);
            return 0;
        }
    }
    if (names_len > 0 && ((const char *)(ti + names_off))[names_len - 1] != '\0' && names_len % 4 == 0) {
        /* padded with NULs after the last name: the last byte is NUL whenever names exist */
        mbs_fmt(err, n_err, "model tables: names are not NUL-terminated");
        return 0;
    }
    return 1;
}

size_t mbs_sim_size(const int32_t *ti, size_t n_ti, const double *tf, size_t n_tf, char *err, size_t n_err)
{
    int N, nq, nv, n_u, n_rows;
    if (err && n_err) err[0] = '\0';
    if (!check_tables(ti, n_ti, tf, n_tf, err, n_err)) return 0;
    N = ti[5]; nq = ti[6]; nv = ti[7]; n_u = ti[8]; n_rows = ti[11];
    return align8(sizeof(mbs_sim)) + align8(n_ti * sizeof(int32_t)) + 3 * n_tf * sizeof(double) +
           n_work(N, nv, nq + nv + 2, n_u, n_rows) * sizeof(double);
}

/* 1 if this CPU runs AVX instructions and the OS saves their registers (Intel SDM vol. 1,
 * Sec. 14.3: CPUID.1:ECX.OSXSAVE[27] and .AVX[28], then XGETBV(0) bits 1 and 2, SSE and AVX
 * state); 0 elsewhere, and on other architectures. Asked once per process (CPUID may trap to a
 * hypervisor), and applied after every copy of an instance (mbs_layout), so a state restored on
 * another machine runs what that machine has. Threads asking at once store the same value. */
static int cpu_has_avx(void)
{
#if MBS_X86_64_AVX
    static volatile int known = -1;
    unsigned a, b, c, d, xcr0_lo, xcr0_hi;
    if (known >= 0) return known;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)) || !(c & (1u << 28))) {
        known = 0;
        return 0;
    }
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    (void)xcr0_hi;
    known = (xcr0_lo & 6u) == 6u;
    return known;
#else
    return 0;
#endif
}

/* set every pointer of s from the block's base (after init or a copy), and s->avx */
void mbs_layout(mbs_sim *s)
{
    char *base = (char *)s;
    double *d;
    size_t N1 = (size_t)s->N + 1;
    const int32_t *row;
    s->ti = (int32_t *)(base + align8(sizeof(mbs_sim)));
    s->tf = (double *)((char *)s->ti + align8(s->n_ti * sizeof(int32_t)));
    row = s->ti + N_HEAD_I;
    s->parent = row; s->jtype = row + N1; s->iq = row + 2 * N1; s->nqj = row + 3 * N1;
    s->iv = row + 4 * N1; s->nvj = row + 5 * N1; s->wheel = row + 6 * N1; s->elem = row + 7 * N1;
    s->names = (const char *)(s->ti + s->ti[13]);
    s->body_f = s->tf + N_HEAD_F;
    s->grav = s->body_f + BODY_F * N1;
    s->damping = s->grav + 3;
    s->elem_f = s->damping + s->nv;
    s->x_init = s->elem_f + 9 * s->n_elem;
    s->loop_scale = s->x_init + s->nq + s->nv;
    s->loop_f = s->loop_scale + 1;
    s->loop_i = s->elem + 4 * s->n_elem;
    d = s->tf + 3 * s->n_tf;                                  /* after the active, pending and backup tables */
#define TAKE(p, n) do { s->p = d; d += (n); } while (0)
    TAKE(S, 36 * N1); TAKE(I, 36 * N1);
    TAKE(E, 9 * N1); TAKE(r, 3 * N1); TAKE(Rw, 9 * N1); TAKE(pw, 3 * N1);
    TAKE(v, 6 * N1); TAKE(c, 6 * N1); TAKE(a, 6 * N1); TAKE(pA, 6 * N1); TAKE(f, 6 * N1); TAKE(uu, 6 * N1);
    TAKE(fext, 6 * N1);
    TAKE(IA, 36 * N1); TAKE(U, 36 * N1); TAKE(Dinv, 36 * N1); TAKE(Ic, 36 * N1);
    TAKE(tau, (size_t)s->nv); TAKE(tau_u, (size_t)s->nv); TAKE(qdd_w, (size_t)s->nv);
    TAKE(x, (size_t)s->nx); TAKE(u, (size_t)s->n_u); TAKE(qdd_out, (size_t)s->nv); TAKE(lambda, (size_t)s->n_rows);
    TAKE(xs, (size_t)s->nx); TAKE(xn, (size_t)s->nx); TAKE(x0, (size_t)s->nx);
    TAKE(K, DOP_STAGES * (size_t)s->nx);
    TAKE(kin_R, 9 * N1); TAKE(kin_p, 3 * N1); TAKE(kin_v, 6 * N1);
    TAKE(lw, mbs_loop_work(s->nv, s->n_rows));
    TAKE(leaf, N1); TAKE(fk_need, N1); TAKE(sing, N1); TAKE(rt_one, N1); TAKE(erot, N1); TAKE(eunit, N1); TAKE(sax, N1); TAKE(first_add, N1);
    TAKE(depth, N1); TAKE(sc, 3 * N1);
    s->rev_ax = (int32_t *)d;                                 /* N + 1 int32 in N + 1 doubles */
    d += N1;
    s->by_depth = (int32_t *)d;                               /* 2 (N+1) int32 in N + 1 doubles */
    d += N1;
#undef TAKE
    s->avx = !s->no_avx && cpu_has_avx();
    s->kin.R = s->kin_R;
    s->kin.p = s->kin_p;
    s->kin.v = s->kin_v;
}

mbs_sim *mbs_sim_init(void *mem, size_t size, const int32_t *ti, size_t n_ti, const double *tf, size_t n_tf, char *err,
                      size_t n_err)
{
    mbs_sim *s = (mbs_sim *)mem;
    size_t need = mbs_sim_size(ti, n_ti, tf, n_tf, err, n_err);
    int i;
    if (need == 0) return NULL;
    if (!mem || size < need || ((uintptr_t)mem & 7u)) {
        mbs_fmt(err, n_err, "instance memory: %lu bytes given at %p, %lu bytes 8-byte aligned needed",
                (unsigned long)size, mem, (unsigned long)need);
        return NULL;
    }
    memset(mem, 0, need);
    s->magic = MBS_MAGIC;
    s->size = need;
    s->N = ti[5]; s->nq = ti[6]; s->nv = ti[7]; s->nx = s->nq + s->nv + 2; s->n_u = ti[8]; s->n_elem = ti[9];
    s->n_loops = ti[10]; s->n_rows = ti[11]; s->has_forces = ti[12];
    s->n_ti = n_ti; s->n_tf = n_tf;
    s->model_hash = (uint64_t)(uint32_t)ti[3] | ((uint64_t)(uint32_t)ti[4] << 32);
    mbs_layout(s);
    memcpy(s->ti, ti, n_ti * sizeof(int32_t));
    memcpy(s->tf, tf, n_tf * sizeof(double));
    memcpy(s->tf + n_tf, tf, n_tf * sizeof(double));          /* the parameters the host sets */
    mbs_layout(s);                                            /* again: the names' offset is in the table */
    for (i = 0; i <= s->N; i++) s->sc[3 * i] = NAN;         /* no angle's sin and cos yet */
    mbs_rebuild_inertia(s);
    (void)i;
    memcpy(s->x, s->x_init, sizeof(double) * (size_t)(s->nq + s->nv));   /* the model's initial state */
    s->method = MBS_RK4;
    s->h_max = 1e-3;
    s->rtol = 1e-10;
    s->atol = 1e-12;
    s->alpha = 10.0;
    s->beta = 10.0;
    s->baumgarte = s->projection = 1;
    return s;
}

/* the k-th name of the names blob (0-based; body names 0..N-1, joint names N..2N-1) */
static const char *name_at(const mbs_sim *s, int k)
{
    const char *p = s->names;
    int j;
    for (j = 0; j < k; j++) p += strlen(p) + 1;
    return p;
}

const char *mbs_body_name(const mbs_sim *s, int i)
{
    return (i < 1 || i > s->N) ? "world" : name_at(s, i - 1);
}

const char *mbs_joint_name(const mbs_sim *s, int i)
{
    return (i < 1 || i > s->N) ? "world" : name_at(s, s->N + i - 1);
}

/* 1 if the row-major R's row k and column k are e_k exactly: R rotates about e_k */
static int rotates_about(const double *R, int k)
{
    int j;
    for (j = 0; j < 3; j++)
        if (R[3 * k + j] != (j == k ? 1.0 : 0.0) || R[3 * j + k] != (j == k ? 1.0 : 0.0)) return 0;
    return 1;
}

/* 1 if the row-major R's row r and column c are +-e_c^T and +-e_r exactly (R[r][c] = +-1, the rest
 * of that row and column 0): R turns e_c into +-e_r, a signed permutation on that pair */
static int unit_at(const double *R, int r, int c)
{
    int j;
    if (fabs(R[3 * r + c]) != 1.0) return 0;
    for (j = 0; j < 3; j++)
        if ((j != c && R[3 * r + j] != 0.0) || (j != r && R[3 * j + c] != 0.0)) return 0;
    return 1;
}

/* rt_one_i (R_tree = 1 exactly: kinematics.c skips the product with it), and erot_i, sax_i, the
 * structure spatial.h's _k products use: sax = k when a revolute or prismatic joint's axis is +-e_k
 * exactly; erot = k when E_i = (R_tree RJ)^T is a rotation about e_k exactly: R_tree rotates about
 * e_k (R_tree = 1: about any axis) and so does RJ (a revolute joint about +-e_k, rot_axis_sc's zeros; a
 * prismatic or fixed joint, RJ = 1), so the products' row k and column k are e_k but for the sign
 * of a zero; -1 otherwise, and always when s->dense. eunit_i = 3 k + r0 when moreover (or instead)
 * R_tree's column k is +-e_r0 and its row r0 +-e_k (a frame turned by quarter turns, rpy +-pi/2:
 * spatial.cos_sin): then E_i's row k and column r0 are +-e_r0^T, +-e_k exactly; eunit = 9 + k where
 * erot = k (crba.c dispatches on this one code). */
static void joint_structure(mbs_sim *s, int i)
{
    const double *Rt = s->body_f + BODY_F * i, *axis = Rt + 12;
    int k, r0, jt = s->jtype[i];
    s->rt_one[i] = rotates_about(Rt, 0) && rotates_about(Rt, 1) && Rt[8] == 1.0;
    s->sax[i] = s->erot[i] = s->eunit[i] = -1.0;
    s->rev_ax[i] = -1;
    if (s->dense) return;
    if (jt == MBS_REVOLUTE || jt == MBS_PRISMATIC)
        for (k = 0; k < 3; k++)
            if (fabs(axis[k]) == 1.0 && axis[(k + 1) % 3] == 0.0 && axis[(k + 2) % 3] == 0.0) s->sax[i] = k;
    if (jt == MBS_REVOLUTE) {
        if (s->sax[i] >= 0.0 && rotates_about(Rt, (int)s->sax[i])) s->erot[i] = s->sax[i];
    } else if (jt == MBS_PRISMATIC || jt == MBS_FIXED) {        /* R_tree = 1: k = 2, as any would do */
        for (k = 0; k < 3; k++)
            if (rotates_about(Rt, k)) s->erot[i] = k;
    }
    if (jt == MBS_REVOLUTE && s->sax[i] >= 0.0) s->rev_ax[i] = 2 * (int)s->sax[i] + (s->erot[i] >= 0.0);
    for (k = 0; k < 3; k++)                                   /* RJ rotates about e_k (or is 1) */
        if ((jt == MBS_REVOLUTE && k == (int)s->sax[i]) || jt == MBS_PRISMATIC || jt == MBS_FIXED)
            for (r0 = 0; r0 < 3; r0++)
                if (unit_at(Rt, r0, k)) s->eunit[i] = 3 * k + r0;   /* E = (R_tree RJ)^T: unit at (k, r0) */
    if (s->erot[i] >= 0.0) s->eunit[i] = 9.0 + s->erot[i];   /* E[k][k] = 1: erot's products */
}

/* depth_i and by_depth: the bodies sorted by depth, then index (a counting sort, O(N)). Any order
 * with parents before children serves an outward pass; by depth, a body's neighbours in the order
 * are mostly on other branches, so the outward steps that wait on the parent's result (the ABA's
 * accelerations) overlap across branches instead of waiting in turn. */
static void depth_order(mbs_sim *s)
{
    int N = s->N, i, d, at = 0;
    int32_t *start = s->by_depth + N + 1;                     /* start[d]: where depth d + 1 begins */
    s->depth[0] = 0.0;
    for (i = 0; i <= N; i++) start[i] = 0;
    for (i = 1; i <= N; i++) {                                /* parent_i < i (check_tables) */
        s->depth[i] = s->depth[s->parent[i]] + 1.0;
        start[(int)s->depth[i] - 1]++;
    }
    for (d = 0; d < N; d++) {
        int n_d = start[d];
        start[d] = at;
        at += n_d;
    }
    for (i = 1; i <= N; i++) s->by_depth[start[(int)s->depth[i] - 1]++] = i;
    s->by_depth[N] = 0;
}

/* leaf_i (no children) and fk_need_i (the poses the force elements use) from the tree; S_i from
 * the joint type and axis (joints.motion_subspace, RBDA Table 4.1), with rt_one_i, erot_i, sax_i;
 * I_i from mass, com, I_c (spatial.spatial_inertia, RBDA Eq. 2.63): [[I_c + m C C^T, m C], [m C^T, m 1]], C = skew(c) */
void mbs_rebuild_inertia(mbs_sim *s)
{
    int i, k, l;
    for (i = 0; i <= s->N; i++) s->leaf[i] = 1.0;           /* 1: no body has i as parent */
    for (i = s->N; i >= 1; i--) {                             /* first_add: the first child inward passes reach */
        s->first_add[i] = s->leaf[s->parent[i]];
        s->leaf[s->parent[i]] = 0.0;
    }
    depth_order(s);
    s->rev_ax[0] = -1;                                        /* the world: no joint */
    for (i = 0; i <= s->N; i++) s->fk_need[i] = 0.0;        /* 1: a force element acts on i or below it */
    for (k = 0; k < s->n_elem; k++) {
        const int32_t *el = s->elem + 4 * k;
        if (el[0] == EL_THRUSTER || el[0] == EL_WRENCH) s->fk_need[el[1]] = 1.0;
        if (el[0] == EL_SPRING) s->fk_need[el[1]] = s->fk_need[el[2]] = 1.0;
    }
    for (i = s->N; i >= 1; i--)
        if (s->fk_need[i] != 0.0) s->fk_need[s->parent[i]] = 1.0;
    for (i = 0; i <= s->N; i++) {
        const double *bf = s->body_f + BODY_F * i, *axis = bf + 12, *c = bf + 16, *Icm = bf + 19;
        double m = bf[15], *S = s->S + 36 * i, *I = s->I + 36 * i, C[9], CCt[9];
        memset(S, 0, 36 * sizeof(double));
        memset(I, 0, 36 * sizeof(double));
        if (i == 0) continue;
        switch (s->jtype[i]) {
        case MBS_REVOLUTE: for (k = 0; k < 3; k++) M6(S, k, 0) = axis[k]; break;
        case MBS_PRISMATIC: for (k = 0; k < 3; k++) M6(S, 3 + k, 0) = axis[k]; break;
        case MBS_SPHERICAL: for (k = 0; k < 3; k++) M6(S, k, k) = 1.0; break;
        case MBS_FREE: for (k = 0; k < 3; k++) { M6(S, 3 + k, k) = 1.0; M6(S, k, 3 + k) = 1.0; } break;
        default: break;
        }
        joint_structure(s, i);
        mbs_joint_constants(s, i);
        C[0] = 0.0;   C[1] = -c[2]; C[2] = c[1];
        C[3] = c[2];  C[4] = 0.0;   C[5] = -c[0];
        C[6] = -c[1]; C[7] = c[0];  C[8] = 0.0;
        for (k = 0; k < 3; k++)
            for (l = 0; l < 3; l++) CCt[3 * k + l] = C[3 * k] * C[3 * l] + C[3 * k + 1] * C[3 * l + 1] + C[3 * k + 2] * C[3 * l + 2];
        for (k = 0; k < 3; k++)
            for (l = 0; l < 3; l++) {
                M6(I, k, l) = Icm[3 * k + l] + m * CCt[3 * k + l];
                M6(I, k, 3 + l) = m * C[3 * k + l];
                M6(I, 3 + k, l) = m * C[3 * l + k];
                M6(I, 3 + k, 3 + l) = k == l ? m : 0.0;
            }
    }
}

/* ---- parameters ---------------------------------------------------------------------------- */
static int jspring_of(const mbs_sim *s, int body)
{
    int e;
    for (e = 0; e < s->n_elem; e++)
        if (s->elem[4 * e] == EL_JSPRING && s->elem[4 * e + 3] == body) return e;
    return -1;
}

/* the double a parameter lives in, NULL if (kind, index, comp) names none */
static double *param_slot(mbs_sim *s, int kind, int index, int comp)
{
    static const int SYM[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
    int body_ok = index >= 1 && index <= s->N, e;
    switch (kind) {
    case MBS_P_GRAVITY: return (comp >= 0 && comp < 3) ? s->grav + comp : NULL;
    case MBS_P_MASS: return body_ok && !s->wheel[index] ? s->body_f + BODY_F * index + 15 : NULL;
    case MBS_P_COM: return body_ok && !s->wheel[index] && comp >= 0 && comp < 3 ? s->body_f + BODY_F * index + 16 + comp : NULL;
    case MBS_P_INERTIA:
        return body_ok && !s->wheel[index] && comp >= 0 && comp < 6 ?
               s->body_f + BODY_F * index + 19 + 3 * SYM[comp][0] + SYM[comp][1] : NULL;
    case MBS_P_SPRING_K:
        e = body_ok ? jspring_of(s, index) : -1;
        return e >= 0 ? s->elem_f + 9 * e : NULL;
    case MBS_P_SPRING_D:
        e = body_ok ? jspring_of(s, index) : -1;
        return e >= 0 ? s->damping + s->iv[index] : NULL;
    default: return NULL;
    }
}

int mbs_sim_set_param(mbs_sim *s, int kind, int index, int comp, double value)
{
    double *p;
    if (!s) return MBS_ERROR;
    if (kind == MBS_P_WHEEL_IW) {                             /* rotor I_c = I_w g g^T */
        const double *g;
        double *Icm;
        int k, l;
        if (index < 1 || index > s->N || !s->wheel[index]) return MBS_ERROR;
        g = s->body_f + BODY_F * index + 12 + s->n_tf;     /* the pending copy */
        Icm = s->body_f + BODY_F * index + 19 + s->n_tf;
        for (k = 0; k < 3; k++)
            for (l = 0; l < 3; l++) Icm[3 * k + l] = value * (g[k] * g[l]);
        s->params_dirty = 1;
        return MBS_OK;
    }
    p = param_slot(s, kind, index, comp);
    if (!p) return MBS_ERROR;
    p += s->n_tf;                                             /* the pending copy */
    *p = value;
    if (kind == MBS_P_INERTIA && comp >= 3) {                 /* the symmetric partner */
        static const int SYM[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
        s->body_f[s->n_tf + BODY_F * index + 19 + 3 * SYM[comp][1] + SYM[comp][0]] = value;
    }
    s->params_dirty = 1;
    return MBS_OK;
}

int mbs_sim_get_param(const mbs_sim *s, int kind, int index, int comp, double *value)
{
    const double *p;
    if (!s || !value) return MBS_ERROR;
    if (kind == MBS_P_WHEEL_IW) {                             /* I_w = g^T I_c g */
        const double *g, *Icm;
        double acc = 0.0;
        int k, l;
        if (index < 1 || index > s->N || !s->wheel[index]) return MBS_ERROR;
        g = s->body_f + BODY_F * index + 12 + s->n_tf;     /* the pending copy */
        Icm = s->body_f + BODY_F * index + 19 + s->n_tf;
        for (k = 0; k < 3; k++)
            for (l = 0; l < 3; l++) acc += g[k] * Icm[3 * k + l] * g[l];
        *value = acc;
        return MBS_OK;
    }
    p = param_slot((mbs_sim *)s, kind, index, comp);
    if (!p) return MBS_ERROR;
    *value = p[s->n_tf];
    return MBS_OK;
}

/* eigenvalues (ascending) of a symmetric 3x3 by cyclic Jacobi rotations */
static void sym3_eigenvalues(const double *A, double *ev)
{
    double a[9];
    int sweep, p, q, k;
    memcpy(a, A, sizeof a);
    for (sweep = 0; sweep < 50; sweep++) {
        double off = a[1] * a[1] + a[2] * a[2] + a[5] * a[5];
        if (off == 0.0) break;
        for (p = 0; p < 2; p++)
            for (q = p + 1; q < 3; q++) {
                double apq = a[3 * p + q], theta, t, c, sn;
                if (apq == 0.0) continue;
                theta = (a[3 * q + q] - a[3 * p + p]) / (2.0 * apq);
                t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                c = 1.0 / sqrt(t * t + 1.0);
                sn = t * c;
                for (k = 0; k < 3; k++) {                     /* A = J^T A J */
                    double akp = a[3 * k + p], akq = a[3 * k + q];
                    a[3 * k + p] = c * akp - sn * akq;
                    a[3 * k + q] = sn * akp + c * akq;
                }
                for (k = 0; k < 3; k++) {
                    double apk = a[3 * p + k], aqk = a[3 * q + k];
                    a[3 * p + k] = c * apk - sn * aqk;
                    a[3 * q + k] = sn * apk + c * aqk;
                }
            }
    }
    ev[0] = a[0]; ev[1] = a[4]; ev[2] = a[8];
    for (p = 0; p < 2; p++)
        for (q = 0; q < 2 - p; q++)
            if (ev[q] > ev[q + 1]) { double t = ev[q]; ev[q] = ev[q + 1]; ev[q + 1] = t; }
}

static void problem(char *err, size_t n_err, int *count, const char *fmt, const char *name, double a, double b, double c)
{
    if (*count) mbs_append(err, n_err, "; ");
    mbs_append(err, n_err, fmt, name, a, b, c);
    (*count)++;
}

/* a pseudo-random configuration (angles, offsets in [-1, 1), unit quaternions) from seed */
static void random_q(const mbs_sim *s, unsigned long long seed, double *q)
{
    int i, k;
    for (k = 0; k < s->nq; k++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        q[k] = (double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    }
    for (i = 1; i <= s->N; i++) {
        double *qt = NULL, n;
        if (s->jtype[i] == MBS_SPHERICAL) qt = q + s->iq[i];
        if (s->jtype[i] == MBS_FREE) qt = q + s->iq[i] + 3;
        if (!qt) continue;
        n = sqrt(qt[0] * qt[0] + qt[1] * qt[1] + qt[2] * qt[2] + qt[3] * qt[3]);
        if (n < 1e-3) { qt[0] = 1.0; qt[1] = qt[2] = qt[3] = 0.0; n = 1.0; }
        for (k = 0; k < 4; k++) qt[k] /= n;
    }
}

/* adds 1 to sing[i] for each joint i whose pivot D_i of M(q)'s block LDL^T, eliminating leaves
 * first, is singular: dynamics/singular.py steps 1-2 (the numpy reference; RBDA Tables 6.2 and
 * 7.1 without bias terms, Sec. 6.5), O(N) time and no n x n memory. Tolerance per joint
 * SINGULAR_RTOL trace(M_ii), M_ii = S_i^T Ic_i S_i (its own block: D_i is formed from i's subtree
 * only, so its round-off is ~ eps trace(M_ii)); D_i^+ over the eigen-directions above it. A
 * composite inertia that is not finite marks every joint (M overflows). */
static void singular_pivots(mbs_sim *s, const double *q, double *sing)
{
    int N = s->N, i, j, k, l, b;
    double *Ic = s->Ic, *IA = s->IA, *U = s->U;
    mbs_joint_transforms(s, q);
    memcpy(Ic, s->I, sizeof(double) * 36 * (size_t)(N + 1));
    memcpy(IA, s->I, sizeof(double) * 36 * (size_t)(N + 1));
    for (i = N; i >= 1; i--)                                  /* Ic_lambda += Xup^T Ic_i Xup */
        if (s->parent[i] > 0) XT_I_X_add(s->E + 9 * i, s->r + 3 * i, Ic + 36 * i, Ic + 36 * s->parent[i]);
    if (!mbs_all_finite(Ic, 36 * (size_t)(N + 1))) {
        for (i = 1; i <= N; i++) sing[i] += 1.0;
        return;
    }
    for (i = N; i >= 1; i--) {
        const double *axis = s->body_f + BODY_F * i + 12;
        int n = s->nvj[i], jt = s->jtype[i], lam = s->parent[i];
        double D[36], V[36], ev[6], Dp[36], Mii[36], col[6], Uc[6], tol = 0.0, *Ui = U + 36 * i, Ia[36];
        if (n == 0) {
            if (lam > 0) XT_I_X_add(s->E + 9 * i, s->r + 3 * i, IA + 36 * i, IA + 36 * lam);
            continue;
        }
        IA_S(jt, axis, Ic + 36 * i, Ui);                      /* M_ii = S^T Ic S: its trace scales the tolerance */
        for (b = 0; b < n; b++) {
            for (k = 0; k < 6; k++) Uc[k] = M6(Ui, k, b);
            ST_mul(jt, axis, Uc, col);
            tol += col[b];
        }
        tol = SINGULAR_RTOL * (tol > 1e-300 ? tol : 1e-300);
        IA_S(jt, axis, IA + 36 * i, Ui);                      /* U = IA S, D = S^T U */
        for (b = 0; b < n; b++) {
            for (k = 0; k < 6; k++) Uc[k] = M6(Ui, k, b);
            ST_mul(jt, axis, Uc, col);
            for (j = 0; j < n; j++) D[n * j + b] = col[j];
        }
        for (j = 0; j < n; j++)                               /* symmetric part, as singular.py */
            for (b = 0; b < n; b++) Mii[n * j + b] = 0.5 * (D[n * j + b] + D[n * b + j]);
        mbs_sym_eigen(Mii, n, V, ev);
        for (k = 0; k < n * n; k++) Dp[k] = 0.0;
        for (j = 0; j < n; j++) {                             /* D^+ over the directions above tol */
            if (!(ev[j] > tol)) {
                sing[i] += 1.0;
                continue;
            }
            for (k = 0; k < n; k++)
                for (b = 0; b < n; b++) Dp[n * k + b] += V[n * k + j] * V[n * b + j] / ev[j];
        }
        if (lam == 0) continue;
        for (k = 0; k < 6; k++)                               /* Ia = IA - U D^+ U^T */
            for (l = 0; l < 6; l++) {
                double acc = 0.0;
                for (j = 0; j < n; j++)
                    for (b = 0; b < n; b++) acc += M6(Ui, k, j) * Dp[n * j + b] * M6(Ui, l, b);
                M6(Ia, k, l) = M6(IA + 36 * i, k, l) - acc;
            }
        XT_I_X_add(s->E + 9 * i, s->r + 3 * i, Ia, IA + 36 * lam);
    }
}

int mbs_sim_apply_params(mbs_sim *s, char *err, size_t n_err)
{
    int i, e, k, count = 0;
    if (!s) return MBS_ERROR;
    if (err && n_err) err[0] = '\0';
    memcpy(s->tf + 2 * s->n_tf, s->tf, s->n_tf * sizeof(double));          /* backup = active */
    memcpy(s->tf, s->tf + s->n_tf, s->n_tf * sizeof(double));              /* active = pending */
    if (!mbs_all_finite(s->grav, 3))
        problem(err, n_err, &count, "%sgravity [%g, %g, %g] is not finite", "", s->grav[0], s->grav[1], s->grav[2]);
    for (i = 1; i <= s->N; i++) {
        const double *bf = s->body_f + BODY_F * i, *c = bf + 16, *Icm = bf + 19;
        const char *name = mbs_body_name(s, i);
        double m = bf[15], scale = 0.0, ev[3];
        if (s->wheel[i]) {
            const double *g = bf + 12;
            double Iw = 0.0;
            int a, b;
            for (a = 0; a < 3; a++)
                for (b = 0; b < 3; b++) Iw += g[a] * Icm[3 * a + b] * g[b];
            if (!(isfinite(Iw) && Iw > 0))
                problem(err, n_err, &count, "wheel %s: spin inertia must be positive [kg m^2], got %g", name, Iw, 0, 0);
            continue;
        }
        if (!isfinite(m)) problem(err, n_err, &count, "body %s: mass %g is not finite", name, m, 0, 0);
        else if (m < 0) problem(err, n_err, &count, "body %s: negative mass %g kg", name, m, 0, 0);
        if (!mbs_all_finite(c, 3)) {
            problem(err, n_err, &count, "body %s: com [%g, %g, %g] is not finite", name, c[0], c[1], c[2]);
        } else if (isfinite(m)) {
            double cm = fmax(fabs(c[0]), fmax(fabs(c[1]), fabs(c[2])));
            if (!isfinite(m * cm * cm))
                problem(err, n_err, &count, "body %s: mass %g kg with com of size %g m overflows m |c|^2", name, m, cm, 0);
        }
        if (!mbs_all_finite(Icm, 9)) {
            problem(err, n_err, &count, "body %s: inertia (diagonal %g, %g, %g) is not finite", name, Icm[0], Icm[4], Icm[8]);
            continue;
        }
        for (k = 0; k < 9; k++) scale = fmax(scale, fabs(Icm[k]));
        scale = fmax(scale, 1e-300);
        sym3_eigenvalues(Icm, ev);
        if (ev[0] < -INERTIA_RTOL * scale)
            problem(err, n_err, &count, "body %s: inertia is not positive semi-definite (principal moments %g, %g, %g)",
                    name, ev[0], ev[1], ev[2]);
        else if (ev[0] + ev[1] < ev[2] - INERTIA_RTOL * scale)
            problem(err, n_err, &count, "body %s: principal moments violate the triangle inequality I1 + I2 >= I3 "
                    "(%.6g + %.6g < %.6g): no rigid body has them", name, ev[0], ev[1], ev[2]);
    }
    for (e = 0; e < s->n_elem; e++) {
        const int32_t *el = s->elem + 4 * e;
        if (el[0] == EL_JSPRING) {
            double kk = s->elem_f[9 * e], d = s->damping[el[2]];
            if (!(isfinite(kk) && kk >= 0))
                problem(err, n_err, &count, "joint %s: spring stiffness must be finite and >= 0, got %g",
                        mbs_joint_name(s, el[3]), kk, 0, 0);
            if (!(isfinite(d) && d >= 0))
                problem(err, n_err, &count, "joint %s: damping must be finite and >= 0, got %g",
                        mbs_joint_name(s, el[3]), d, 0, 0);
        }
    }
    if (count == 0) {                                         /* every joint moves mass (Model._check_moves_mass) */
        double *sing = s->sing, *qr = s->xs;                  /* per joint: configurations where it is singular */
        int found = 0;
        mbs_rebuild_inertia(s);
        for (i = 0; i <= s->N; i++) sing[i] = 0.0;
        random_q(s, 12345u, qr);
        singular_pivots(s, qr, sing);
        for (i = 1; i <= s->N; i++) found |= sing[i] > 0.0;
        if (found) {                                          /* structural: singular at a second one too */
            for (i = 1; i <= s->N; i++) sing[i] = sing[i] > 0.0 ? 1.0 : 0.0;
            random_q(s, 54321u, qr);
            singular_pivots(s, qr, sing);
        }
        for (i = 1; i <= s->N && found; i++) {
            int hit = sing[i] > 1.0;
            if (hit) {
                if (count) mbs_append(err, n_err, "; ");
                mbs_append(err, n_err, "%s %s moves no mass or inertia%s (body %s and its subtree, alone or with "
                           "the joints above it), so the mass matrix is singular: give the moved bodies mass or "
                           "inertia, or make the joint fixed", s->wheel[i] ? "wheel" : "joint", mbs_joint_name(s, i),
                           s->nvj[i] > 1 ? " in some direction" : "", mbs_body_name(s, i));
                count++;
            }
        }
    }
    if (count) {                                              /* the last good parameters stay active */
        memcpy(s->tf, s->tf + 2 * s->n_tf, s->n_tf * sizeof(double));
        mbs_rebuild_inertia(s);
        s->params_dirty = 0;
        return MBS_ERROR;
    }
    mbs_rebuild_inertia(s);
    s->params_dirty = 0;
    s->qdd_valid = s->inv_valid = s->kin_valid = 0;
    return MBS_OK;
}
