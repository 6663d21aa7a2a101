/* mbs_rollout.h - batched rollouts of one model in the core: many runs in one call, split across
 * threads (rollout.c). Part of the host library for Python only (build.HOST_SOURCES), not of the FMU.
 *
 * A run r starts from a copy of its template instance (templates[r], or templates[0] for every run:
 * its parameters, solver, loop settings, inputs, time and statistics) and takes n_steps steps of
 * mbs_sim_step_inputs, exactly the calls a Simulator makes for step(dt) (dt given) or advance_to(t[k+1])
 * (t given): the same states bit for bit, whatever the number of threads (each thread steps its own
 * copy; no run reads another's memory). Before each step, and after the last, the run's state and
 * chosen outputs are written at row k of its arrays.
 */
#ifndef MBS_ROLLOUT_H
#define MBS_ROLLOUT_H

#include "mbs_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* per-run status beyond MBS_OK, MBS_DISCARD (a step failed: message), MBS_ERROR (bad initial state or inputs) */
enum { MBS_ROLLOUT_STOPPED = 3, MBS_ROLLOUT_NOT_RUN = 4 };

typedef struct {
    int n_runs, n_steps;
    double dt;              /* [s] > 0, every step's; used when t is NULL (s->t advances by dt) */
    const double *t;        /* (n_steps + 1) times [s], strictly increasing: step k from t[k] by t[k+1] - t[k]
                             * (Simulator.advance_to), or NULL */
    const double *x0;       /* (n_runs, nx) initial states (mbs_sim_set_x, assemble = 2), or NULL: the template's */
    const double *u;        /* inputs held over step k: (n_steps, n_u) shared (u_per_run 0) or (n_runs, n_steps,
                             * n_u) (u_per_run 1); the last row's outputs use step n_steps - 1's; NULL: the template's */
    int u_per_run;
    int n_sel;              /* outputs chosen: indices into the row of mbs_sim_outputs(bodies, wheels) */
    const int32_t *sel;
    int n_b, n_w;           /* the bodies and wheels of that row (only read when a chosen index is beyond the
                             * first nq + 2 nv + n_u + 20 entries: q, qd, u, qdd, the engine values) */
    const int32_t *bodies, *wheels;
    double *x_out;          /* (n_runs, n_steps + 1, nx) or NULL; rows after a failure NaN */
    double *y_out;          /* (n_runs, n_steps + 1, n_sel) or NULL (n_sel 0); rows after a failure NaN */
    int32_t *status;        /* (n_runs): MBS_OK, MBS_DISCARD, MBS_ERROR, MBS_ROLLOUT_STOPPED, MBS_ROLLOUT_NOT_RUN */
    int32_t *n_done;        /* (n_runs): steps completed (rows written: n_done + 1, 0 if the run did not start) */
    long long *stats;       /* (n_runs, 2): internal steps and rhs evaluations at the end, or NULL */
    char *msgs;             /* (n_runs, n_msg): the reason of a failed run (NUL-terminated), or NULL */
    size_t n_msg;
    volatile const int *stop;   /* NULL, or a flag another thread sets nonzero to stop: every run then ends
                                 * after its current step (MBS_ROLLOUT_STOPPED), runs not begun MBS_ROLLOUT_NOT_RUN */
} mbs_rollout_args;

/* Bytes of work memory mbs_rollout needs for n_threads threads with these templates and outputs. */
size_t mbs_rollout_work(mbs_sim *const *templates, int n_templates, const mbs_rollout_args *a, int n_threads);
/* Run the rollouts of a on n_threads threads (>= 1; the calling thread is one of them). templates:
 * one (every run) or n_runs instances of one model (e.g. N parameter sets), left unchanged. work:
 * mbs_rollout_work bytes, 8-byte aligned. MBS_ERROR with the reason in err when the arguments are
 * wrong (sizes, a template of another model, t not increasing, an output index out of range), before
 * any run; else MBS_OK, each run's outcome in a->status (one run's failure never stops the others). */
int mbs_rollout(mbs_sim *const *templates, int n_templates, const mbs_rollout_args *a, int n_threads, void *work,
                size_t n_work, char *err, size_t n_err);

#ifdef __cplusplus
}
#endif
#endif /* MBS_ROLLOUT_H */
