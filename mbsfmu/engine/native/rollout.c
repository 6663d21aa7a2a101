/* rollout.c - batched rollouts (mbs_rollout.h): n_runs runs of one model, each stepped by the
 * instance API (mbs_sim_step_inputs, mbs_sim_outputs) on a copy of its template, split across
 * threads that each own one instance block of the caller's work memory (no shared mutable state
 * but the next-run counter). A run's numbers depend on its template and arguments only: the same
 * bits on 1 or 8 threads, and the same as a Simulator making the same calls one run at a time.
 *
 * Threads: POSIX threads where the platform has them; elsewhere (Windows: the FMU's targets, which do
 * not build this file) every run on the calling thread. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200112L
#endif
#include <string.h>
#include "instance.h"
#include "mbs_rollout.h"
#if !defined(_WIN32)
#include <pthread.h>
#define MBS_THREADS 1
#endif

#define MAX_THREADS 256

typedef struct {
    mbs_sim *const *templates;
    int n_templates;
    const mbs_rollout_args *a;
    int nx, nq, nv, n_u, n_head, n_row, full;   /* full: a chosen index is beyond the head (records) */
    int max_sel;
    size_t inst_bytes;                          /* per-thread instance block (8-byte multiple) */
    int next;                                   /* the next run to take (atomic) */
} job;

typedef struct {
    job *j;
    char *mem;                                  /* instance block, then the output row (n_row doubles) */
} worker;

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

static int next_run(job *j)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
#else
    return j->next++;                           /* single-threaded builds only (MBS_THREADS unset) */
#endif
}

static int stopped(const job *j)
{
    return j->a->stop && *j->a->stop;
}

static void fill_nan(double *p, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) p[k] = NAN;
}

/* row k of run r: the state and the chosen outputs of the instance's current state */
static void write_row(const job *j, mbs_sim *s, double *row, int r, int k)
{
    const mbs_rollout_args *a = j->a;
    size_t at = (size_t)r * (size_t)(a->n_steps + 1) + (size_t)k;
    int c;
    if (a->x_out) memcpy(a->x_out + at * (size_t)j->nx, s->x, sizeof(double) * (size_t)j->nx);
    if (!a->n_sel) return;
    if (j->full) {
        mbs_sim_outputs(s, NULL, a->n_b, a->bodies, a->n_w, a->wheels, row);   /* checked in mbs_rollout */
    } else {
        int nq = j->nq, nv = j->nv, m = nq + nv + j->n_u;
        memcpy(row, s->x, sizeof(double) * (size_t)(nq + nv));
        memcpy(row + nq + nv, s->u, sizeof(double) * (size_t)j->n_u);
        if (j->max_sel >= m) {                  /* qdd or the engine values: mbs_sim_outputs' head, its calls */
            const double *qdd = mbs_sim_qdd(s);
            const mbs_invariants *inv = mbs_sim_invariants(s);
            double *e = row + m + nv;
            memcpy(row + m, qdd, sizeof(double) * (size_t)nv);
            for (c = 0; c < 3; c++) {           /* rows.ENGINE_COLUMNS */
                e[c] = inv->p_sys[c]; e[3 + c] = inv->P_sys[c]; e[6 + c] = inv->H_sys[c];
                e[9 + c] = inv->R[c]; e[12 + c] = inv->Rdot[c];
            }
            e[15] = inv->KE; e[16] = inv->PE; e[17] = inv->KE + inv->PE;
            e[18] = s->x[nq + nv]; e[19] = s->x[nq + nv + 1];
        }
    }
    {
        double *y = a->y_out + at * (size_t)a->n_sel;
        for (c = 0; c < a->n_sel; c++) y[c] = row[a->sel[c]];
    }
}

/* the rows k0.. of run r as NaN (a run that failed at step k0 - 1 or did not start) */
static void nan_rows(const job *j, int r, int k0)
{
    const mbs_rollout_args *a = j->a;
    size_t rows = (size_t)(a->n_steps + 1 - k0), at = (size_t)r * (size_t)(a->n_steps + 1) + (size_t)k0;
    if (a->x_out) fill_nan(a->x_out + at * (size_t)j->nx, rows * (size_t)j->nx);
    if (a->n_sel) fill_nan(a->y_out + at * (size_t)a->n_sel, rows * (size_t)a->n_sel);
}

static void say(const job *j, int r, const char *text)
{
    const mbs_rollout_args *a = j->a;
    if (a->msgs && a->n_msg) mbs_fmt(a->msgs + (size_t)r * a->n_msg, a->n_msg, "%s", text);
}

static void run_one(const job *j, worker *w, int r)
{
    const mbs_rollout_args *a = j->a;
    mbs_sim *s = (mbs_sim *)w->mem;
    double *row = (double *)(w->mem + j->inst_bytes);
    const mbs_sim *tpl = j->templates[j->n_templates == 1 ? 0 : r];
    int k, st = MBS_OK;
    char err[MBS_MSG];
    s->magic = 0;                               /* the block may hold another template's copy */
    mbs_sim_copy(s, tpl);
    a->n_done[r] = 0;
    if (a->x0 && mbs_sim_set_x(s, a->x0 + (size_t)r * (size_t)j->nx, 2, err, sizeof err)) {
        a->status[r] = MBS_ERROR;
        say(j, r, err);
        nan_rows(j, r, 0);
        return;
    }
    if (a->t) s->t = a->t[0];
    for (k = 0; k <= a->n_steps; k++) {
        if (a->u) {
            int ks = k < a->n_steps ? k : a->n_steps - 1;
            const double *uk = a->u + ((size_t)(a->u_per_run ? r : 0) * (size_t)a->n_steps + (size_t)ks) * (size_t)j->n_u;
            if (mbs_sim_set_inputs(s, uk)) {
                st = MBS_ERROR;
                mbs_fmt(err, sizeof err, "the inputs of step %d are not finite", ks);
                say(j, r, err);
                break;
            }
        }
        write_row(j, s, row, r, k);
        if (k == a->n_steps) break;
        if (stopped(j)) {
            st = MBS_ROLLOUT_STOPPED;
            say(j, r, "stopped");
            k++;
            break;
        }
        st = a->t ? mbs_sim_step_inputs(s, a->t[k], NULL, a->t[k + 1] - a->t[k]) : mbs_sim_step(s, a->dt);
        if (st != MBS_OK) {
            say(j, r, s->msg);
            k++;
            break;
        }
        a->n_done[r] = k + 1;
    }
    if (k <= a->n_steps && st != MBS_OK) nan_rows(j, r, k);
    a->status[r] = st;
    if (a->stats) {
        a->stats[2 * (size_t)r] = s->n_steps;
        a->stats[2 * (size_t)r + 1] = s->n_rhs;
    }
}

static void *work_loop(void *arg)
{
    worker *w = (worker *)arg;
    job *j = w->j;
    int r;
    while ((r = next_run(j)) < j->a->n_runs) {
        if (stopped(j)) {
            j->a->status[r] = MBS_ROLLOUT_NOT_RUN;
            j->a->n_done[r] = 0;
            say(j, r, "not run: stopped before it began");
            nan_rows(j, r, 0);
            continue;
        }
        run_one(j, w, r);
    }
    return NULL;
}

/* the job's sizes; nonzero with the reason in err for wrong arguments */
static int prepare(job *j, mbs_sim *const *templates, int n_templates, const mbs_rollout_args *a, char *err,
                   size_t n_err)
{
    int r, c, k;
    mbs_sizes z;
    size_t inst = 0;
    memset(j, 0, sizeof *j);
    if (!templates || !a || n_templates < 1) {
        mbs_fmt(err, n_err, "no template instance or arguments");
        return 1;
    }
    if (a->n_runs < 0 || a->n_steps < 0 || (n_templates != 1 && n_templates != a->n_runs)) {
        mbs_fmt(err, n_err, "%d template(s) for %d runs of %d steps: give one template, or one per run",
                n_templates, a->n_runs, a->n_steps);
        return 1;
    }
    z = mbs_sim_sizes(templates[0]);
    if (z.nx == 0) {
        mbs_fmt(err, n_err, "template 0 is not an mbs_sim instance");
        return 1;
    }
    for (r = 0; r < n_templates; r++) {
        mbs_sizes zr = mbs_sim_sizes(templates[r]);
        if (zr.nx != z.nx || zr.n_u != z.n_u || zr.nq != z.nq || zr.N != z.N) {
            mbs_fmt(err, n_err, "template %d is of another model (nx %d, n_u %d; template 0: nx %d, n_u %d)", r,
                    zr.nx, zr.n_u, z.nx, z.n_u);
            return 1;
        }
        if (templates[r]->params_dirty) {
            mbs_fmt(err, n_err, "template %d: parameters were changed but not applied (mbs_sim_apply_params)", r);
            return 1;
        }
        if (templates[r]->size > inst) inst = templates[r]->size;
    }
    if (a->t) {
        for (k = 0; k < a->n_steps; k++)
            if (!(isfinite(a->t[k]) && isfinite(a->t[k + 1]) && a->t[k + 1] > a->t[k])) {
                mbs_fmt(err, n_err, "times t[%d] = %g, t[%d] = %g: must be finite and increasing", k, a->t[k],
                        k + 1, a->t[k + 1]);
                return 1;
            }
    } else if (a->n_steps > 0 && !(isfinite(a->dt) && a->dt > 0)) {
        mbs_fmt(err, n_err, "dt must be a positive, finite time step [s], got %g", a->dt);
        return 1;
    }
    if (a->u && a->n_steps < 1) {
        mbs_fmt(err, n_err, "inputs given for a rollout of no steps");
        return 1;
    }
    if (!a->status || !a->n_done || (a->n_sel && (!a->sel || !a->y_out)) || a->n_sel < 0) {
        mbs_fmt(err, n_err, "status, n_done (and sel, y_out for chosen outputs) must be given");
        return 1;
    }
    j->templates = templates;
    j->n_templates = n_templates;
    j->a = a;
    j->nx = z.nx; j->nq = z.nq; j->nv = z.nv; j->n_u = z.n_u;
    j->n_head = z.nq + 2 * z.nv + z.n_u + 20;
    j->max_sel = -1;
    for (c = 0; c < a->n_sel; c++)
        if (a->sel[c] > j->max_sel) j->max_sel = a->sel[c];
    j->full = j->max_sel >= j->n_head;
    j->n_row = j->n_head;
    if (j->full) {
        int n_spring = 0, e;
        const mbs_sim *s = templates[0];
        if (a->n_b < 1 || a->n_w < 0 || !a->bodies || (a->n_w && !a->wheels)) {
            mbs_fmt(err, n_err, "an output beyond the engine values needs the bodies (n_b >= 1) of the records");
            return 1;
        }
        for (c = 0; c < a->n_b + a->n_w; c++) {
            int i = c < a->n_b ? a->bodies[c] : a->wheels[c - a->n_b];
            if (i < 1 || i > z.N) {
                mbs_fmt(err, n_err, "records: body index %d out of 1..%d", i, z.N);
                return 1;
            }
        }
        for (e = 0; e < s->n_elem; e++) n_spring += s->elem[4 * e] == EL_JSPRING || s->elem[4 * e] == EL_SPRING;
        j->n_row = j->n_head + 49 * a->n_b + 7 * a->n_w + 24 + 2 * n_spring;
    }
    for (c = 0; c < a->n_sel; c++)
        if (a->sel[c] < 0 || a->sel[c] >= j->n_row) {
            mbs_fmt(err, n_err, "output index %d (chosen output %d) out of 0..%d", a->sel[c], c, j->n_row - 1);
            return 1;
        }
    j->inst_bytes = align8(inst);
    return 0;
}

size_t mbs_rollout_work(mbs_sim *const *templates, int n_templates, const mbs_rollout_args *a, int n_threads)
{
    job j;
    char err[8];
    if (n_threads < 1 || n_threads > MAX_THREADS || prepare(&j, templates, n_templates, a, err, sizeof err)) return 0;
    return (size_t)n_threads * (j.inst_bytes + sizeof(double) * (size_t)j.n_row);
}

int mbs_rollout(mbs_sim *const *templates, int n_templates, const mbs_rollout_args *a, int n_threads, void *work,
                size_t n_work, char *err, size_t n_err)
{
    job j;
    worker w[MAX_THREADS];
    size_t per;
    int k, started = 0;
    if (err && n_err) err[0] = '\0';
    if (n_threads < 1 || n_threads > MAX_THREADS) {
        mbs_fmt(err, n_err, "threads must be 1..%d, got %d", MAX_THREADS, n_threads);
        return MBS_ERROR;
    }
    if (prepare(&j, templates, n_templates, a, err, n_err)) return MBS_ERROR;
    per = j.inst_bytes + sizeof(double) * (size_t)j.n_row;
    if (!work || ((uintptr_t)work & 7) || n_work < (size_t)n_threads * per) {
        mbs_fmt(err, n_err, "work memory: %zu bytes, 8-byte aligned, needed (mbs_rollout_work)", (size_t)n_threads * per);
        return MBS_ERROR;
    }
    if (n_threads > a->n_runs) n_threads = a->n_runs > 0 ? a->n_runs : 1;
    for (k = 0; k < n_threads; k++) {
        w[k].j = &j;
        w[k].mem = (char *)work + (size_t)k * per;
    }
#ifdef MBS_THREADS
    {
        pthread_t tid[MAX_THREADS];
        for (k = 1; k < n_threads; k++) {
            if (pthread_create(&tid[k], NULL, work_loop, &w[k]) != 0) break;   /* fewer threads: the same runs */
            started = k;
        }
        work_loop(&w[0]);
        for (k = 1; k <= started; k++) pthread_join(tid[k], NULL);
    }
#else
    (void)started;
    work_loop(&w[0]);
#endif
    return MBS_OK;
}
