/* fmu_instance.c - the FMU's instance core over the mbsfmu engine core (mbs_core.h), for every FMI
 * interface the entry files expose (fmi2_functions.c: FMI 2.0 Co-Simulation and Model Exchange).
 *
 * C99, no global state: every instance lives in memory from its host's allocator, so several
 * instances run in one process. The model (tables and variable map) comes from the generated
 * mbsfmu_model.c (fmu_model.h).
 *
 * Behaviour (FMI 2.0 sections 2.1, 3 and 4):
 * - states: instantiated -> initialization mode -> step mode (Co-Simulation) or event mode <->
 *   continuous-time mode (Model Exchange) -> terminated; reset goes back to instantiated. A call
 *   not allowed in the current state returns Error with a log message and changes nothing.
 * - a rejected argument (NULL pointer, unknown value reference, Real/Integer mix-up, non-finite or
 *   out-of-range value, a parameter after initialisation, an output) returns Error, logs the
 *   reason and leaves every variable as it was (the instance stays usable).
 * - parameters are applied at the end of initialisation (Error listing every problem, e.g. a
 *   negative mass or an inertia violating the triangle inequality); before that, outputs follow
 *   the parameters when they make a valid model.
 * - Co-Simulation: a step advances by the step with inputs held; a step the core cannot complete
 *   (non-finite state, step-size underflow, singular loop system) returns Discard with the reason
 *   logged and the state left at the start of the step.
 * - Model Exchange: the continuous states are x = [q, qd, W_in, W_diss] as the host sets them
 *   (I->xh); the core evaluates the dynamics at xh with its quaternions normalised, adds a
 *   norm-restoring term to their derivatives, and asks for a step event when the quaternions' norm
 *   or the loop constraints drift past a bound, where it projects the states back
 *   (host_state.c; docs/guides/fmu.md "Model Exchange").
 * - outputs are computed by the core at most once per state, and only when read.
 * - FMU state: a copy of the instance; serialised states carry a format version, the model hash
 *   and a checksum; a foreign, truncated or altered blob is refused with Error.
 * - an instance or FMU state pointer is checked by a magic number before use (a freed or foreign
 *   pointer is refused; states are also checked against the instance's list of live states).
 * - no allocation after instantiation on the calls a host makes per step (values, steps,
 *   derivatives, events, directional derivatives); FMU states allocate when first made.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fmu_instance.h"

#define INST_MAGIC 0x4d425346u        /* "MBSF" */
#define FREED_MAGIC 0xdeadf00du
#define STATE_MAGIC 0x4d425353u       /* "MBSS" */
#define BLOB_MAGIC "MBSFMUST"
#define BLOB_VERSION 3u
#define INT_MAX32 2147483647LL
#define MAX_SUBSTEPS 1e7              /* steps of h_max in one co-simulation step (a larger step is refused) */
#define MAX_STEP 1e9                  /* [s] largest communication step accepted */
/* a communication point further than TIME_EPS max(1, |t|) from the FMU's time t is refused: the
 * FMU takes the host's point at every step, so both sides' times differ only by the rounding of
 * one step's sum, fl(t + h) against the host's fl(t + h) or fl(n h): a few ulp (eps = 2^-52 relative,
 * absolute below |t| = 1 s); 1000 eps (2.2e-13 s at |t| <= 1 s) leaves a margin of 100 over that
 * and still catches a skipped, repeated or backward step of any size above it. */
#define TIME_EPS (1000.0 * 2.220446049250313e-16)
/* Model Exchange (host_state.c): K_NORM [1/s] the quaternions' norm-restoring rate (time constant
 * 1 / (2 K_NORM) = 50 ms; explicit Euler stays stable on it for steps below 1 / K_NORM = 0.1 s);
 * a step event projects the states when ||qh| - 1| > QUAT_DRIFT or max |Phi| / L > LOOP_DRIFT
 * (the accuracy the core's own projection after a step restores, with a margin: see
 * docs/guides/fmu.md for the drift measured under fmpy's CVode and Euler) */
#define K_NORM 10.0
#define QUAT_DRIFT 1e-6
#define LOOP_DRIFT 1e-6

static const char *const MODE_NAME[] = {"instantiated", "initialization mode", "step mode",
                                        "event mode",   "continuous-time mode", "terminated"};

typedef struct FmuState {
    uint32_t magic;
    Instance *owner;
    mbs_sim *sim;
    double *par, *xh;
    fmu_mode mode;
    int have_ref, params_dirty;
    double H0[3], E0, KE0, PE0, S0;
    long long n_discards, n_events;
} FmuState;

/* ---- logging ------------------------------------------------------------------------------ */

/* the LogCategories of the modelDescription (description.LOG_CATEGORIES) */
static const char *const LOG_CATEGORY[] = {"logStatusWarning", "logStatusDiscard", "logStatusError", "logStatusFatal",
                                           "logAll"};

static const char *status_category(int s)
{
    switch (s) {
    case FMU_OK: return "logAll";
    case FMU_WARNING: return "logStatusWarning";
    case FMU_DISCARD: return "logStatusDiscard";
    case FMU_ERROR: return "logStatusError";
    case FMU_FATAL: return "logStatusFatal";
    default: return "logAll";
    }
}

void mbsfmu_log(const Instance *I, int status, const char *fmt, ...)
{
    char msg[sizeof I->err + 512];
    va_list ap;
    if (!I || !I->host.log) return;
    if (status == FMU_OK && !I->logging_on) return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    I->host.log(I, status, status_category(status), msg);
}

Instance *mbsfmu_live(void *c)
{
    Instance *I = (Instance *)c;
    if (!I || I->magic != INST_MAGIC) return NULL;
    return I;
}

int mbsfmu_allowed(Instance *I, const char *fn, unsigned mask)
{
    if (mask & (1u << I->mode)) return 1;
    mbsfmu_log(I, FMU_ERROR, "%s: not allowed in %s (%s call sequence)", fn, MODE_NAME[I->mode], I->standard);
    return 0;
}

static void *alloc(Instance *I, size_t n, size_t size)
{
    return I->host.alloc(n ? n : 1, size ? size : 1);
}

/* ---- model set-up ------------------------------------------------------------------------- */

static int apply_param(Instance *I, const mbsfmu_var *v, double x)
{
    if (v->kind == MBSFMU_V_PARAM) return mbs_sim_set_param(I->sim, v->a, v->b, v->c, x);
    return MBS_OK;                      /* solver settings: applied by set_solver */
}

static void set_starts(Instance *I)
{
    const mbsfmu_model *m = I->m;
    for (size_t k = 0; k < m->n_vars; k++) {
        const mbsfmu_var *v = &m->vars[k];
        if (v->causality == 'p') {
            I->par[k] = v->start;
            apply_param(I, v, v->start);
        }
    }
    I->params_dirty = 1;
    I->params_bad = 0;
}

static double solver_setting(const Instance *I, int which)
{
    const mbsfmu_model *m = I->m;
    for (size_t k = 0; k < m->n_vars; k++)
        if (m->vars[k].kind == MBSFMU_V_SOLVER && m->vars[k].a == which) return I->par[k];
    return NAN;
}

static int apply_solver(Instance *I, char *err, size_t n_err)
{
    int method = (int)solver_setting(I, 0);
    return mbs_sim_set_solver(I->sim, method == 2 ? MBS_DOP853 : MBS_RK4, solver_setting(I, 1), solver_setting(I, 2),
                              solver_setting(I, 3), err, n_err);
}

/* apply the parameters if they changed; MBS_OK or MBS_ERROR with the problems in I->err */
static int apply_params(Instance *I)
{
    if (!I->params_dirty) return MBS_OK;
    I->err[0] = 0;
    if (mbs_sim_apply_params(I->sim, I->err, sizeof I->err) != MBS_OK) return MBS_ERROR;
    I->params_dirty = 0;
    I->params_bad = 0;
    return MBS_OK;
}

/* before initialisation outputs follow the parameters; a set that does not make a valid model is
 * logged once (the outputs keep the last valid model's values) */
static void apply_params_quietly(Instance *I)
{
    if (!I->params_dirty || I->params_bad) return;
    if (apply_params(I) != MBS_OK) {
        I->params_bad = 1;
        mbsfmu_log(I, FMU_WARNING, "these parameters do not make a valid model (outputs keep the previous values): %s",
              I->err);
    }
}


/* ---- instantiation ------------------------------------------------------------------------ */

static void free_state_memory(Instance *I, FmuState *S);

static void free_instance_memory(Instance *I)
{
    void (*fr)(void *) = I->host.free;
    if (I->sim) fr(I->sim);
    if (I->par) fr(I->par);
    if (I->src) fr(I->src);
    if (I->xh) fr(I->xh);
    if (I->dx) fr(I->dx);
    if (I->work) fr(I->work);
    if (I->vr3) fr(I->vr3);
    if (I->val3) fr(I->val3);
    if (I->jac_work) fr(I->jac_work);
    if (I->jac_A) fr(I->jac_A);
    if (I->jac_B) fr(I->jac_B);
    if (I->jac_x) fr(I->jac_x);
    if (I->jac_u) fr(I->jac_u);
    if (I->seed) fr(I->seed);
    if (I->name) fr(I->name);
    if (I->host_data) fr(I->host_data);
    if (I->states) fr(I->states);
    I->magic = FREED_MAGIC;
    fr(I);
}

/* SRC_X, SRC_U, SRC_QDD: entry off of the state x (the host's xh in Model Exchange), the inputs u
 * or qdd; SRC_INV: the double at byte off of the invariants; SRC_OTHER: value_of's cases */
enum { SRC_OTHER = 0, SRC_X, SRC_U, SRC_QDD, SRC_INV };

/* I->src: the Real inputs and outputs that are entries of x, u, qdd or the invariants (value_of's
 * first cases, read by get_values without its dispatch); parameters and the rest SRC_OTHER */
static void sources(Instance *I)
{
    static const size_t INV_AT[] = {offsetof(mbs_invariants, p_sys), offsetof(mbs_invariants, H_sys),
                                    offsetof(mbs_invariants, R), offsetof(mbs_invariants, Rdot),
                                    offsetof(mbs_invariants, KE), offsetof(mbs_invariants, PE)};
    for (size_t k = 0; k < I->m->n_vars; k++) {
        const mbsfmu_var *v = &I->m->vars[k];
        Source src = {SRC_OTHER, v->type, v->causality == 'p', 0};
        if (v->type == 'R' && v->causality != 'p') {
            switch (v->kind) {
            case MBSFMU_V_INPUT: src.base = SRC_U; src.off = (size_t)v->a; break;
            case MBSFMU_V_X: src.base = SRC_X; src.off = (size_t)v->a; break;
            case MBSFMU_V_QDD: src.base = SRC_QDD; src.off = (size_t)v->a; break;
            case MBSFMU_V_ENERGY: src.base = SRC_X; src.off = (size_t)(I->sz.nx - 2 + v->a); break;
            case MBSFMU_V_INV:
                if (v->a <= MBSFMU_INV_RDOT) {
                    src.base = SRC_INV;
                    src.off = INV_AT[v->a] + sizeof(double) * (size_t)v->b;
                } else if (v->a <= MBSFMU_INV_PE) {
                    src.base = SRC_INV;
                    src.off = INV_AT[v->a];
                }
                break;
            default: break;
            }
        }
        I->src[k] = src;
    }
}

/* the state x as the instance's interface holds it: the host's in Model Exchange, else the core's */
static const double *state_x(const Instance *I)
{
    return I->kind == FMU_MODEL_EXCHANGE ? I->xh : mbs_sim_x(I->sim);
}

Instance *mbsfmu_instantiate(const char *fn, const char *name, fmu_kind kind, const char *standard, const char *api,
                             const char *token,
                             const char *resource_location, const fmu_host *host, const void *host_data,
                             size_t host_bytes, int logging_on)
{
    const mbsfmu_model *m = &MBSFMU_MODEL;
    Instance tmp;
    /* a stack instance to log through until the real one exists */
    memset(&tmp, 0, sizeof tmp);
    tmp.host = *host;
    tmp.host_data = (void *)host_data;
    tmp.name = (char *)(name ? name : "mbsfmu");
    tmp.logging_on = logging_on;
    tmp.standard = standard;
    tmp.api = api;
    if (!name || !name[0]) {
        mbsfmu_log(&tmp, FMU_ERROR, "%s: instanceName is NULL or empty", fn);
        return NULL;
    }
    if (!token || strcmp(token, m->guid) != 0) {
        mbsfmu_log(&tmp, FMU_ERROR, "%s: GUID %s does not match this FMU's %s (a modelDescription.xml of another "
                   "build?)", fn, token ? token : "(NULL)", m->guid);
        return NULL;
    }
    if (resource_location && resource_location[0]) {
        /* the FMU needs no resources, but a location must be a URI (RFC 3986: scheme ":" ...) */
        const char *p = resource_location;
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
        while (ok && *p && *p != ':') {
            ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '+' ||
                 *p == '-' || *p == '.';
            p++;
        }
        if (!ok || *p != ':') {
            mbsfmu_log(&tmp, FMU_ERROR, "%s: fmuResourceLocation \"%.200s\" is not a URI (expected e.g. "
                       "file:///path/to/resources)", fn, resource_location);
            return NULL;
        }
    }
    char err[1024] = "";
    size_t sim_size = mbs_sim_size(m->ti, m->n_ti, m->tf, m->n_tf, err, sizeof err);
    if (!sim_size) {
        mbsfmu_log(&tmp, FMU_ERROR, "%s: the model tables are malformed: %s", fn, err);
        return NULL;
    }
    Instance *I = (Instance *)host->alloc(1, sizeof(Instance));
    if (!I) {
        mbsfmu_log(&tmp, FMU_ERROR, "%s: out of memory", fn);
        return NULL;
    }
    memset(I, 0, sizeof *I);
    I->host = *host;
    I->kind = kind;
    I->standard = standard;
    I->api = api;
    I->logging_on = logging_on;
    I->m = m;
    I->sim_size = sim_size;
    size_t n_name = strlen(name) + 1;
    I->name = (char *)alloc(I, n_name, 1);
    I->host_data = alloc(I, host_bytes, 1);
    I->sim = (mbs_sim *)alloc(I, sim_size, 1);
    I->par = (double *)alloc(I, m->n_vars, sizeof(double));
    I->src = (Source *)alloc(I, m->n_vars, sizeof(Source));
    if (!I->name || !I->host_data || !I->sim || !I->par || !I->src) {
        mbsfmu_log(&tmp, FMU_ERROR, "%s: out of memory (%lu bytes)", fn, (unsigned long)sim_size);
        free_instance_memory(I);
        return NULL;
    }
    memcpy(I->name, name, n_name);
    if (host_bytes) memcpy(I->host_data, host_data, host_bytes);
    if (!mbs_sim_init(I->sim, sim_size, m->ti, m->n_ti, m->tf, m->n_tf, err, sizeof err)) {
        mbsfmu_log(&tmp, FMU_ERROR, "%s: the model tables are malformed: %s", fn, err);
        free_instance_memory(I);
        return NULL;
    }
    I->sz = mbs_sim_sizes(I->sim);
    I->xh = (double *)alloc(I, (size_t)I->sz.nx, sizeof(double));
    I->dx = (double *)alloc(I, (size_t)I->sz.nx, sizeof(double));
    I->work = (double *)alloc(I, (size_t)(I->sz.n_u + I->sz.nv), sizeof(double));
    I->n3 = 3 * m->n_vars + 8;
    I->vr3 = (unsigned *)alloc(I, I->n3, sizeof(unsigned));
    I->val3 = (double *)alloc(I, I->n3, sizeof(double));
    if (!I->xh || !I->dx || !I->work || !I->vr3 || !I->val3) {
        mbsfmu_log(&tmp, FMU_ERROR, "%s: out of memory", fn);
        free_instance_memory(I);
        return NULL;
    }
    if (kind == FMU_MODEL_EXCHANGE && I->sz.n_loops == 0) {   /* the Jacobian's memory, once (a tree) */
        size_t nx = (size_t)I->sz.nx, nu = (size_t)I->sz.n_u;
        I->jac_work = (double *)alloc(I, mbs_state_jacobian_work(I->sim), sizeof(double));
        I->jac_A = (double *)alloc(I, nx * nx, sizeof(double));
        I->jac_B = (double *)alloc(I, nx * nu, sizeof(double));
        I->jac_x = (double *)alloc(I, nx, sizeof(double));
        I->jac_u = (double *)alloc(I, nu, sizeof(double));
        I->seed = (double *)alloc(I, nx + nu, sizeof(double));
        if (!I->jac_work || !I->jac_A || !I->jac_B || !I->jac_x || !I->jac_u || !I->seed) {
            /* the instance works without it: fmi2GetDirectionalDerivative then says why it cannot */
            double *held[] = {I->jac_work, I->jac_A, I->jac_B, I->jac_x, I->jac_u, I->seed};
            for (size_t k = 0; k < sizeof held / sizeof held[0]; k++)
                if (held[k]) host->free(held[k]);
            I->jac_work = I->jac_A = I->jac_B = I->jac_x = I->jac_u = I->seed = NULL;
            I->jac_missing = 1;
            mbsfmu_log(&tmp, FMU_WARNING, "%s: out of memory for the Jacobian of the state derivatives (%lu x %lu): "
                       "fmi2GetDirectionalDerivative with respect to the states will be refused", fn,
                       (unsigned long)nx, (unsigned long)(nx + nu));
        }
    }
    memcpy(I->xh, mbs_sim_x(I->sim), sizeof(double) * (size_t)I->sz.nx);
    sources(I);
    set_starts(I);
    I->mode = S_INSTANTIATED;
    I->magic = INST_MAGIC;
    mbsfmu_log(I, FMU_OK, "%s: %s (%s), %d bodies, nq = %d, nv = %d, %d inputs", fn, m->identifier, standard,
               I->sz.N, I->sz.nq, I->sz.nv, I->sz.n_u);
    for (size_t k = 0; k < m->n_notes; k++) mbsfmu_log(I, FMU_OK, "model note: %s", m->notes[k]);
    return I;
}

void mbsfmu_free(Instance *I)
{
    for (size_t k = 0; k < I->n_states; k++) free_state_memory(I, I->states[k]);
    I->n_states = 0;
    free_instance_memory(I);
}

int mbsfmu_set_debug_logging(Instance *I, const char *fn, int on, size_t n, const char *const categories[])
{
    if (n > 0 && !categories) {
        mbsfmu_log(I, FMU_ERROR, "%s: categories is NULL with nCategories = %lu", fn, (unsigned long)n);
        return FMU_ERROR;
    }
    for (size_t k = 0; k < n; k++) {
        const char *cat = categories[k];
        int known = 0;
        for (size_t j = 0; cat && j < sizeof LOG_CATEGORY / sizeof LOG_CATEGORY[0]; j++)
            known |= strcmp(cat, LOG_CATEGORY[j]) == 0;
        if (!known) {
            mbsfmu_log(I, FMU_ERROR, "%s: unknown log category %s%s%s (the modelDescription's LogCategories: "
                       "logStatusWarning, logStatusDiscard, logStatusError, logStatusFatal, logAll)", fn,
                       cat ? "'" : "", cat ? cat : "NULL", cat ? "'" : "");
            return FMU_ERROR;
        }
    }
    I->logging_on = on;
    return FMU_OK;
}

/* ---- initialisation ----------------------------------------------------------------------- */

int mbsfmu_setup_experiment(Instance *I, const char *fn, int tolerance_defined, double tolerance, double start,
                            int stop_defined, double stop)
{
    if (!mbsfmu_allowed(I, fn, M_INST)) return FMU_ERROR;
    if (!isfinite(start) || (stop_defined && (!isfinite(stop) || stop < start))) {
        mbsfmu_log(I, FMU_ERROR, "%s: startTime %.17g / stopTime %.17g rejected: finite times with stopTime >= "
                   "startTime expected", fn, start, stop);
        return FMU_ERROR;
    }
    if (tolerance_defined && !(isfinite(tolerance) && tolerance > 0.0)) {
        mbsfmu_log(I, FMU_ERROR, "%s: tolerance %g rejected: a positive, finite relative tolerance expected", fn,
                   tolerance);
        return FMU_ERROR;
    }
    mbs_sim_set_time(I->sim, start);
    if (tolerance_defined && I->kind == FMU_CO_SIMULATION) {   /* the host's tolerance is solver.rtol */
        for (size_t k = 0; k < I->m->n_vars; k++) {
            const mbsfmu_var *v = &I->m->vars[k];
            if (v->kind == MBSFMU_V_SOLVER && v->a == 2) I->par[k] = tolerance;
        }
        if ((int)solver_setting(I, 0) == 2)
            mbsfmu_log(I, FMU_OK, "%s: tolerance %g used as solver.rtol of dop853", fn, tolerance);
        else
            mbsfmu_log(I, FMU_OK, "%s: tolerance %g stored as solver.rtol, not used by rk4 (fixed steps of "
                       "solver.h_max = %g s; solver.method = 2 selects the adaptive dop853, which uses it)", fn,
                       tolerance, solver_setting(I, 1));
    }
    return FMU_OK;
}

int mbsfmu_enter_initialization(Instance *I, const char *fn)
{
    if (!mbsfmu_allowed(I, fn, M_INST)) return FMU_ERROR;
    I->mode = S_INIT;
    return FMU_OK;
}

static void take_reference(Instance *I)
{
    const mbs_invariants *inv = mbs_sim_invariants(I->sim);
    memcpy(I->H0, inv->H_sys, sizeof I->H0);
    I->E0 = inv->KE + inv->PE;
    I->KE0 = inv->KE;
    I->PE0 = inv->PE;
    I->S0 = inv->H_scale;
    I->have_ref = 1;
}

int mbsfmu_exit_initialization(Instance *I, const char *fn)
{
    if (!mbsfmu_allowed(I, fn, M_INIT)) return FMU_ERROR;
    if (apply_params(I) != MBS_OK) {
        I->params_bad = 1;
        mbsfmu_log(I, FMU_ERROR, "%s: cannot initialise with these parameters: %s", fn, I->err);
        return FMU_ERROR;
    }
    I->err[0] = 0;
    if (I->kind == FMU_CO_SIMULATION && apply_solver(I, I->err, sizeof I->err) != MBS_OK) {
        mbsfmu_log(I, FMU_ERROR, "%s: cannot initialise with these solver settings: %s", fn, I->err);
        return FMU_ERROR;
    }
    take_reference(I);
    I->mode = I->kind == FMU_MODEL_EXCHANGE ? S_EVENT : S_STEP;
    return FMU_OK;
}

int mbsfmu_terminate(Instance *I, const char *fn)
{
    if (!mbsfmu_allowed(I, fn, M_STEP | M_EVENT | M_CONT)) return FMU_ERROR;
    I->mode = S_TERMINATED;
    return FMU_OK;
}

int mbsfmu_reset(Instance *I, const char *fn)
{
    char err[1024] = "";
    if (!mbs_sim_init(I->sim, I->sim_size, I->m->ti, I->m->n_ti, I->m->tf, I->m->n_tf, err, sizeof err)) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s", fn, err);
        return FMU_ERROR;
    }
    memcpy(I->xh, mbs_sim_x(I->sim), sizeof(double) * (size_t)I->sz.nx);
    set_starts(I);
    I->jac_valid = 0;
    I->have_ref = 0;
    I->n_discards = I->n_events = 0;
    I->mode = S_INSTANTIATED;
    return FMU_OK;
}

double mbsfmu_time(const Instance *I) { return mbs_sim_time(I->sim); }

/* ---- model exchange ------------------------------------------------------------------------ */

/* the host's states into the core (I->xh kept as given); Error with the reason logged */
static int take_states(Instance *I, const char *fn, const double x[])
{
    char err[512];
    if (mbs_sim_set_host_x(I->sim, x, err, sizeof err) != MBS_OK) {
        mbsfmu_log(I, FMU_ERROR, "%s: the states are refused (the instance keeps the previous ones): %s", fn, err);
        return FMU_ERROR;                  /* mbs_sim_set_host_x checks before it changes anything */
    }
    memcpy(I->xh, x, sizeof(double) * (size_t)I->sz.nx);
    return FMU_OK;
}

static int me_only(Instance *I, const char *fn)
{
    if (I->kind == FMU_MODEL_EXCHANGE) return 1;
    mbsfmu_log(I, FMU_ERROR, "%s: a Model Exchange function, and this instance was made for Co-Simulation", fn);
    return 0;
}

static int size_ok(Instance *I, const char *fn, const void *p, size_t n, size_t want, const char *what)
{
    if (n != want) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s %lu, this model has %lu", fn, what, (unsigned long)n, (unsigned long)want);
        return 0;
    }
    if (n && !p) {
        mbsfmu_log(I, FMU_ERROR, "%s: the array is NULL with %s %lu", fn, what, (unsigned long)n);
        return 0;
    }
    return 1;
}

int mbsfmu_set_time(Instance *I, const char *fn, double t)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_EVENT | M_CONT)) return FMU_ERROR;
    if (!isfinite(t)) {
        mbsfmu_log(I, FMU_ERROR, "%s: time %g rejected: must be finite", fn, t);
        return FMU_ERROR;
    }
    mbs_sim_set_time(I->sim, t);
    return FMU_OK;
}

int mbsfmu_set_states(Instance *I, const char *fn, const double x[], size_t nx)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_CONT)) return FMU_ERROR;
    if (!size_ok(I, fn, x, nx, (size_t)I->sz.nx, "nx")) return FMU_ERROR;
    return take_states(I, fn, x);
}

int mbsfmu_get_states(Instance *I, const char *fn, double x[], size_t nx)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_INIT | M_EVENT | M_CONT | M_TERM)) return FMU_ERROR;
    if (!size_ok(I, fn, x, nx, (size_t)I->sz.nx, "nx")) return FMU_ERROR;
    memcpy(x, I->xh, sizeof(double) * nx);
    return FMU_OK;
}

int mbsfmu_get_derivatives(Instance *I, const char *fn, double dx[], size_t nx)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_INIT | M_EVENT | M_CONT | M_TERM)) return FMU_ERROR;
    if (!size_ok(I, fn, dx, nx, (size_t)I->sz.nx, "nx")) return FMU_ERROR;
    apply_params_quietly(I);          /* initialization mode: the current parameters, as the outputs */
    int rc = mbs_sim_host_derivatives(I->sim, I->xh, K_NORM, dx);
    long long n_steps = 0, n_rhs = 0;
    double h_last = 0.0;
    mbs_sim_stats(I->sim, &n_steps, &n_rhs, &h_last);
    mbs_sim_set_stats(I->sim, n_steps, n_rhs + 1, h_last);   /* a host's evaluation */
    if (rc == MBS_ERROR) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s", fn, mbs_sim_message(I->sim));
        return FMU_ERROR;
    }
    if (rc != MBS_OK) {
        mbsfmu_log(I, FMU_DISCARD, "%s: the derivatives at t = %.17g s are not finite (the states are far outside "
                   "the model's range: reduce the host's step or tolerance)", fn, mbs_sim_time(I->sim));
        return FMU_DISCARD;
    }
    return FMU_OK;
}

int mbsfmu_get_nominals(Instance *I, const char *fn, double nominal[], size_t nx)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_INST | M_EVENT | M_CONT | M_TERM)) return FMU_ERROR;
    if (!size_ok(I, fn, nominal, nx, (size_t)I->sz.nx, "nx")) return FMU_ERROR;
    for (size_t k = 0; k < nx; k++) nominal[k] = 1.0;   /* SI units: angles, rates and energies of order 1 */
    return FMU_OK;
}

int mbsfmu_get_event_indicators(Instance *I, const char *fn, double z[], size_t nz)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_INIT | M_EVENT | M_CONT | M_TERM)) return FMU_ERROR;
    (void)z;
    if (nz != 0) {
        mbsfmu_log(I, FMU_ERROR, "%s: ni %lu, this model has no event indicators (numberOfEventIndicators = 0)", fn,
                   (unsigned long)nz);
        return FMU_ERROR;
    }
    return FMU_OK;
}

int mbsfmu_completed_integrator_step(Instance *I, const char *fn, int *enter_event, int *terminate)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_CONT)) return FMU_ERROR;
    if (!enter_event || !terminate) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s is NULL", fn, !enter_event ? "enterEventMode" : "terminateSimulation");
        return FMU_ERROR;
    }
    double dq = 0.0, dl = 0.0;
    long long n_steps = 0, n_rhs = 0;
    double h_last = 0.0;
    mbs_sim_stats(I->sim, &n_steps, &n_rhs, &h_last);
    mbs_sim_set_stats(I->sim, n_steps + 1, n_rhs, h_last);
    mbs_sim_host_drift(I->sim, I->xh, &dq, &dl);
    *enter_event = dq > QUAT_DRIFT || dl > LOOP_DRIFT;
    *terminate = 0;
    return FMU_OK;
}

int mbsfmu_enter_event_mode(Instance *I, const char *fn)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_EVENT | M_CONT)) return FMU_ERROR;
    I->mode = S_EVENT;
    return FMU_OK;
}

int mbsfmu_new_discrete_states(Instance *I, const char *fn, int *states_changed, int *terminate)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_EVENT)) return FMU_ERROR;
    if (!states_changed || !terminate) {
        mbsfmu_log(I, FMU_ERROR, "%s: fmi2EventInfo is NULL", fn);
        return FMU_ERROR;
    }
    double dq = 0.0, dl = 0.0;
    mbs_sim_host_drift(I->sim, I->xh, &dq, &dl);
    *states_changed = 0;
    *terminate = 0;
    if (dq > QUAT_DRIFT || dl > LOOP_DRIFT) {   /* project: unit quaternions, Phi = 0, A qd = 0 */
        char err[512];
        if (mbs_sim_host_project(I->sim, I->xh, err, sizeof err) != MBS_OK) {
            mbsfmu_log(I, FMU_ERROR, "%s: cannot project the states: %s", fn, err);
            return FMU_ERROR;
        }
        I->n_events++;
        *states_changed = 1;
        mbsfmu_log(I, FMU_OK, "%s: states projected at t = %.17g s (quaternion norm drift %.3g, loop drift "
                   "%.3g of L)", fn, mbs_sim_time(I->sim), dq, dl);
    }
    return FMU_OK;
}

int mbsfmu_enter_continuous_time_mode(Instance *I, const char *fn)
{
    if (!me_only(I, fn) || !mbsfmu_allowed(I, fn, M_EVENT)) return FMU_ERROR;
    I->mode = S_CONT;
    return FMU_OK;
}
/* ---- values ------------------------------------------------------------------------------- */

static int vr_ok(Instance *I, const char *fn, const unsigned int vr[], size_t nvr, const void *value)
{
    if (nvr == 0) return 1;
    if (!vr || !value) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s is NULL with nvr = %lu", fn, !vr ? "vr" : "value", (unsigned long)nvr);
        return 0;
    }
    return 1;
}

static const mbsfmu_var *lookup(Instance *I, const char *fn, unsigned int vr, char type)
{
    if (vr >= I->m->n_vars) {
        mbsfmu_log(I, FMU_ERROR, "%s: unknown value reference %u (this FMU has %lu variables)", fn, (unsigned)vr,
              (unsigned long)I->m->n_vars);
        return NULL;
    }
    const mbsfmu_var *v = &I->m->vars[vr];
    if (v->type != type) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s (value reference %u) is of type %s", fn, v->name, (unsigned)vr,
              v->type == 'R' ? "Real" : "Integer");
        return NULL;
    }
    return v;
}

static double norm3(const double *a, const double *b)
{
    double d0 = a[0] - b[0], d1 = a[1] - b[1], d2 = a[2] - b[2];
    return sqrt(d0 * d0 + d1 * d1 + d2 * d2);
}

/* |residual| / scale: 0 for a zero residual, +inf when the scale is 0 and the residual is not
 * (variables.relative_drift) */
static double relative_drift(double residual, double scale)
{
    residual = fabs(residual);
    if (residual == 0.0) return 0.0;
    return scale > 0.0 ? residual / scale : INFINITY;
}

/* the engine's arrays one Get call reads, each fetched (and computed, if lazy) at its first use */
typedef struct {
    const double *x, *u, *qdd, *dx;
    const mbs_invariants *inv;
    int applied;                                              /* apply_params_quietly done */
} Fetched;

#define FETCH(f, field, call) ((f)->field ? (f)->field : ((f)->field = (call)))

/* the derivatives of the states at the current state (NULL if the core cannot compute them) */
static const double *state_derivatives(Instance *I)
{
    return mbs_sim_host_derivatives(I->sim, state_x(I), K_NORM, I->dx) == MBS_OK ? I->dx : NULL;
}

/* variable k's value */
static double value_of(Instance *I, size_t k, Fetched *f)
{
    const mbsfmu_var *v = &I->m->vars[k];
    mbs_sim *s = I->sim;
    if (v->causality == 'p') return I->par[k];
    if (!f->applied) {
        apply_params_quietly(I);
        f->applied = 1;
    }
    switch (v->kind) {
    case MBSFMU_V_INPUT: return FETCH(f, u, mbs_sim_u(s))[v->a];
    case MBSFMU_V_X: return FETCH(f, x, state_x(I))[v->a];
    case MBSFMU_V_QDD: return FETCH(f, qdd, mbs_sim_qdd(s))[v->a];
    case MBSFMU_V_ENERGY: return FETCH(f, x, state_x(I))[I->sz.nx - 2 + v->a];
    case MBSFMU_V_DER: {
        const double *dx = FETCH(f, dx, state_derivatives(I));
        return dx ? dx[v->a] : NAN;
    }
    case MBSFMU_V_INV: {
        const mbs_invariants *inv = FETCH(f, inv, mbs_sim_invariants(s));
        switch (v->a) {
        case MBSFMU_INV_P_SYS: return inv->p_sys[v->b];
        case MBSFMU_INV_H_SYS: return inv->H_sys[v->b];
        case MBSFMU_INV_R: return inv->R[v->b];
        case MBSFMU_INV_RDOT: return inv->Rdot[v->b];
        case MBSFMU_INV_KE: return inv->KE;
        case MBSFMU_INV_PE: return inv->PE;
        default: return inv->KE + inv->PE;
        }
    }
    case MBSFMU_V_DRIFT: {
        const mbs_invariants *inv = FETCH(f, inv, mbs_sim_invariants(s));
        const double *x = FETCH(f, x, state_x(I));
        const double *H0 = I->have_ref ? I->H0 : inv->H_sys;
        double E = inv->KE + inv->PE, E0 = I->have_ref ? I->E0 : E;
        double KE0 = I->have_ref ? I->KE0 : inv->KE, PE0 = I->have_ref ? I->PE0 : inv->PE;
        double S0 = I->have_ref ? I->S0 : inv->H_scale;
        double W_in = x[I->sz.nx - 2], W_diss = x[I->sz.nx - 1];
        double dH = norm3(inv->H_sys, H0);
        double dE = (E - W_in - W_diss) - E0;
        switch (v->a) {   /* variables.py's drift outputs; scales: mbsfmu/fmu/variables.py relative_drift */
        case MBSFMU_DRIFT_H_ABS: return dH;
        case MBSFMU_DRIFT_H_REL: return relative_drift(dH, fmax(S0, inv->H_scale));
        case MBSFMU_DRIFT_E_ABS: return dE;
        default: return relative_drift(dE, fmax(fmax(KE0, fabs(inv->PE - PE0)),
                                                inv->E_scale + fabs(W_in) + fabs(W_diss)));
        }
    }
    case MBSFMU_V_STAT: {
        long long n_steps = 0, n_rhs = 0;
        double h_last = 0.0;
        mbs_sim_stats(s, &n_steps, &n_rhs, &h_last);
        switch (v->a) {
        case MBSFMU_STAT_N_STEPS: return (double)(n_steps < INT_MAX32 ? n_steps : INT_MAX32);
        case MBSFMU_STAT_N_RHS: return (double)(n_rhs < INT_MAX32 ? n_rhs : INT_MAX32);
        case MBSFMU_STAT_N_DISCARDS: return (double)(I->n_discards < INT_MAX32 ? I->n_discards : INT_MAX32);
        default: return h_last;
        }
    }
    default: return NAN;
    }
}

int mbsfmu_get_values(Instance *I, const char *fn, char type, const unsigned int vr[], size_t nvr, double *real,
                      int *integer)
{
    if (!mbsfmu_allowed(I, fn, M_INIT | M_STEP | M_EVENT | M_CONT | M_TERM)) return FMU_ERROR;
    if (!vr_ok(I, fn, vr, nvr, type == 'R' ? (const void *)real : (const void *)integer)) return FMU_ERROR;
    int need_apply = 0, need_qdd = 0, need_inv = 0;
    for (size_t k = 0; k < nvr; k++) {
        const Source *src = vr[k] < I->m->n_vars ? &I->src[vr[k]] : NULL;
        if (!src || src->type != type) {
            lookup(I, fn, vr[k], type);     /* says what is wrong */
            return FMU_ERROR;
        }
        need_apply |= !src->param;
        need_qdd |= src->base == SRC_QDD;
        need_inv |= src->base == SRC_INV;
    }
    Fetched f = {NULL, NULL, NULL, NULL, NULL, 0};
    if (type == 'R') {                  /* value_of's first cases without its dispatch: the same values */
        if (need_apply) {
            apply_params_quietly(I);
            f.applied = 1;
        }
        const double *base[4] = {NULL, FETCH(&f, x, state_x(I)), FETCH(&f, u, mbs_sim_u(I->sim)),
                                 need_qdd ? FETCH(&f, qdd, mbs_sim_qdd(I->sim)) : NULL};
        const char *inv = need_inv ? (const char *)FETCH(&f, inv, mbs_sim_invariants(I->sim)) : NULL;
        for (size_t k = 0; k < nvr; k++) {
            const Source *src = &I->src[vr[k]];
            if (src->base == SRC_INV)
                real[k] = *(const double *)(inv + src->off);
            else if (src->base != SRC_OTHER)
                real[k] = base[src->base][src->off];
            else
                real[k] = value_of(I, vr[k], &f);
        }
        return FMU_OK;
    }
    for (size_t k = 0; k < nvr; k++) integer[k] = (int)value_of(I, vr[k], &f);
    return FMU_OK;
}

/* why value x cannot be set to variable v now, or NULL */
static const char *set_problem(Instance *I, const mbsfmu_var *v, double x, char *buf, size_t n)
{
    if (v->causality == 'o' || v->causality == 'l') {
        snprintf(buf, n, "%s is %s and cannot be set", v->name, v->causality == 'o' ? "an output" : "a local variable");
    } else if (v->causality == 'p' && I->mode != S_INSTANTIATED && I->mode != S_INIT) {
        snprintf(buf, n, "parameter %s is fixed: set it before %sExitInitializationMode", v->name, I->api);
    } else if (v->causality == 'i' && I->mode == S_TERMINATED) {
        snprintf(buf, n, "input %s cannot be set after %sTerminate", v->name, I->api);
    } else if (!isfinite(x)) {
        snprintf(buf, n, "%s = %g rejected: values must be finite", v->name, x);
    } else if ((!isnan(v->min) && x < v->min) || (!isnan(v->max) && x > v->max)) {
        if (isnan(v->max))
            snprintf(buf, n, "%s = %.17g rejected: must be >= %.17g", v->name, x, v->min);
        else if (isnan(v->min))
            snprintf(buf, n, "%s = %.17g rejected: must be <= %.17g", v->name, x, v->max);
        else
            snprintf(buf, n, "%s = %.17g rejected: outside [%.17g, %.17g]", v->name, x, v->min, v->max);
    } else {
        return NULL;
    }
    return buf;
}

int mbsfmu_set_values(Instance *I, const char *fn, char type, const unsigned int vr[], size_t nvr, const double *real,
                      const int *integer)
{
    char buf[1024];
    if (!mbsfmu_allowed(I, fn, M_INST | M_INIT | M_STEP | M_EVENT | M_CONT)) return FMU_ERROR;
    if (!vr_ok(I, fn, vr, nvr, type == 'R' ? (const void *)real : (const void *)integer)) return FMU_ERROR;
    /* check everything first: a rejected call changes nothing */
    for (size_t k = 0; k < nvr; k++) {
        const mbsfmu_var *v = lookup(I, fn, vr[k], type);
        if (!v) return FMU_ERROR;
        double x = type == 'R' ? real[k] : (double)integer[k];
        const char *why = set_problem(I, v, x, buf, sizeof buf);
        if (why) {
            mbsfmu_log(I, FMU_ERROR, "%s: %s; %s keeps its previous value", fn, why, v->name);
            return FMU_ERROR;
        }
    }
    for (size_t k = 0; k < nvr; k++) {
        const mbsfmu_var *v = &I->m->vars[vr[k]];
        double x = type == 'R' ? real[k] : (double)integer[k];
        if (v->causality == 'i') {
            mbs_sim_set_u(I->sim, v->a, x);
        } else if (I->par[vr[k]] != x) {
            I->par[vr[k]] = x;
            apply_param(I, v, x);
            if (v->kind == MBSFMU_V_PARAM) {
                I->params_dirty = 1;
                I->params_bad = 0;
                I->jac_valid = 0;
            }
        }
    }
    return FMU_OK;
}

/* no Boolean or String variables: any value reference is unknown */
int mbsfmu_no_such_type(Instance *I, const char *fn, const unsigned int vr[], size_t nvr, const void *value)
{
    if (!vr_ok(I, fn, vr, nvr, value)) return FMU_ERROR;
    if (nvr == 0) return FMU_OK;
    if (vr[0] < I->m->n_vars)
        mbsfmu_log(I, FMU_ERROR, "%s: %s (value reference %u) is of type %s", fn, I->m->vars[vr[0]].name, (unsigned)vr[0],
              I->m->vars[vr[0]].type == 'R' ? "Real" : "Integer");
    else
        mbsfmu_log(I, FMU_ERROR, "%s: unknown value reference %u (this FMU has no Boolean or String variables)", fn,
              (unsigned)vr[0]);
    return FMU_ERROR;
}

/* ---- stepping ----------------------------------------------------------------------------- */

int mbsfmu_do_step(Instance *I, const char *fn, double t, double dt)
{
    if (!mbsfmu_allowed(I, fn, M_STEP)) return FMU_ERROR;
    if (!isfinite(t)) {
        mbsfmu_log(I, FMU_ERROR, "%s: currentCommunicationPoint %g rejected: must be finite", fn, t);
        return FMU_ERROR;
    }
    if (!isfinite(dt) || dt <= 0.0 || dt > MAX_STEP) {
        mbsfmu_log(I, FMU_ERROR, "%s: communicationStepSize %.17g s rejected: must be finite, > 0 and <= %g s", fn, dt,
              MAX_STEP);
        return FMU_ERROR;
    }
    double h_max = solver_setting(I, 1);
    if (h_max > 0.0 && dt / h_max > MAX_SUBSTEPS) {      /* rk4: ceil(dt / h_max) steps; dop853: at least */
        mbsfmu_log(I, FMU_ERROR, "%s: communicationStepSize %.17g s rejected: %.3g or more steps of solver.h_max "
              "= %.17g s (at most %g per communication step)", fn, dt, ceil(dt / h_max), h_max, MAX_SUBSTEPS);
        return FMU_ERROR;
    }
    double now = mbs_sim_time(I->sim);
    if (fabs(t - now) > TIME_EPS * fmax(1.0, fabs(now))) {
        mbsfmu_log(I, FMU_ERROR, "%s: communication point t = %.17g s rejected: the FMU's state is at t = %.17g s "
              "(difference %.3g s, more than round-off %.3g s); to go back, restore a state with %s",
              fn, t, now, t - now, TIME_EPS * fmax(1.0, fabs(now)),
              strcmp(I->api, "fmi3") == 0 ? "fmi3SetFMUState" : "fmi2SetFMUstate");
        return FMU_ERROR;
    }
    mbs_sim_set_time(I->sim, t);
    int rc = mbs_sim_step(I->sim, dt);
    if (rc != MBS_OK) {
        I->n_discards++;
        mbs_sim_set_time(I->sim, t);
        mbsfmu_log(I, FMU_DISCARD, "%s: step from t = %.17g s by %.17g s discarded: %s", fn, t, dt,
              mbs_sim_message(I->sim));
        return FMU_DISCARD;
    }
    return FMU_OK;
}


/* the Jacobian of the state derivatives at the host's state and the current inputs into I->jac_A,
 * I->jac_B (state_jacobian.c), unless they hold it already (the same xh and u bit for bit, the
 * parameters unchanged); FMU_OK, or Error / Discard with the reason logged */
static int state_jacobian(Instance *I, const char *fn)
{
    size_t nx = (size_t)I->sz.nx, nu = (size_t)I->sz.n_u;
    const double *u = mbs_sim_u(I->sim);
    if (I->jac_missing) {
        mbsfmu_log(I, FMU_ERROR, "%s: the derivatives with respect to the states are not available: the memory for "
                   "the Jacobian (%d x %d) could not be allocated at instantiation", fn, I->sz.nx, I->sz.nx + I->sz.n_u);
        return FMU_ERROR;
    }
    if (!I->jac_A) {
        mbsfmu_log(I, FMU_ERROR, "%s: the derivatives with respect to the states are not provided for this model "
                   "(providesDirectionalDerivative = \"false\" in ModelExchange): it has closed loops or joint "
                   "couplings, which the analytic derivatives do not cover", fn);
        return FMU_ERROR;
    }
    apply_params_quietly(I);          /* as the outputs: the current parameters if they make a valid model */
    if (I->jac_valid && !I->params_dirty && memcmp(I->jac_x, I->xh, nx * sizeof(double)) == 0 &&
        (nu == 0 || memcmp(I->jac_u, u, nu * sizeof(double)) == 0))
        return FMU_OK;
    I->jac_valid = 0;
    int rc = mbs_state_jacobian(I->sim, I->xh, u, K_NORM, I->jac_work, I->jac_A, nu ? I->jac_B : I->jac_work);
    if (rc != MBS_OK) {
        mbsfmu_log(I, rc == MBS_DISCARD ? FMU_DISCARD : FMU_ERROR, "%s: %s", fn, mbs_sim_message(I->sim));
        return rc == MBS_DISCARD ? FMU_DISCARD : FMU_ERROR;
    }
    memcpy(I->jac_x, I->xh, nx * sizeof(double));
    if (nu) memcpy(I->jac_u, u, nu * sizeof(double));
    I->jac_valid = 1;
    return FMU_OK;
}

/* FMI 2.0 sections 2.1.9 and 3.2.2: dvUnknown = (d unknowns / d knowns) dvKnown at the current state
 * and inputs, the seeds combined linearly (a known given twice: its seeds add).
 * - Co-Simulation (and Model Exchange without a state among the knowns or a derivative among the
 *   unknowns): the Real outputs (the ModelStructure Outputs; in initialization mode its
 *   InitialUnknowns, the same variables) with respect to the Real inputs. Only the qdd outputs depend
 *   on the inputs at a communication point: d(qdd)/du du = M^-1 (B du + J^T f_u du), exactly
 *   (mbs_input_response); every other output is a function of the state, which the inputs change
 *   only through a step (derivative 0).
 * - Model Exchange of a tree (providesDirectionalDerivative = "true"): also the continuous states
 *   (q, qd, W_in, W_diss) as knowns and the state derivatives der(...) as unknowns, from the exact
 *   Jacobian of f(x, u) (mbs_state_jacobian; computed once per state, inputs and parameters, in
 *   memory allocated at instantiation): der(x) and the qdd outputs (the rows of qd's derivatives),
 *   the q, qd, W_in, W_diss outputs (the states: identity). The other outputs (invariants, drift,
 *   statistics) with respect to a state are refused (Error naming the variable); with respect to
 *   the inputs they are 0, as in Co-Simulation. Models with closed loops or couplings: the states
 *   as knowns are refused (Error with the reason).
 * Parameters are knowns only in initialization mode; derivatives with respect to them are not
 * provided (Error naming the parameter). */
int mbsfmu_directional_derivative(Instance *I, const char *fn, const unsigned int vUnknown_ref[], size_t nUnknown,
                                  const unsigned int vKnown_ref[], size_t nKnown, const double dvKnown[],
                                  double dvUnknown[])
{
    if (!mbsfmu_allowed(I, fn, M_INIT | M_STEP | M_EVENT | M_CONT | M_TERM)) return FMU_ERROR;
    const char *null = nUnknown && !vUnknown_ref ? "vUnknown_ref" : nUnknown && !dvUnknown ? "dvUnknown" :
                       nKnown && !vKnown_ref ? "vKnown_ref" : nKnown && !dvKnown ? "dvKnown" : NULL;
    if (null) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s is NULL (nUnknown = %lu, nKnown = %lu)", fn, null, (unsigned long)nUnknown,
              (unsigned long)nKnown);
        return FMU_ERROR;
    }
    int me = I->kind == FMU_MODEL_EXCHANGE;
    int need_qdd = 0, need_der = 0, need_state = 0;
    for (size_t k = 0; k < nUnknown; k++) {
        const mbsfmu_var *v = lookup(I, fn, vUnknown_ref[k], 'R');
        if (!v) return FMU_ERROR;
        int der = me && v->kind == MBSFMU_V_DER;
        if (v->causality != 'o' && !der) {
            mbsfmu_log(I, FMU_ERROR, "%s: unknown %s (value reference %u) is not an output (the unknowns are the Real "
                  "outputs of the ModelStructure%s)", fn, v->name, (unsigned)vUnknown_ref[k],
                  me ? " and the state derivatives" : "");
            return FMU_ERROR;
        }
        need_qdd |= v->kind == MBSFMU_V_QDD;
        need_der |= der;
    }
    for (size_t k = 0; k < nKnown; k++) {
        const mbsfmu_var *v = lookup(I, fn, vKnown_ref[k], 'R');
        if (!v) return FMU_ERROR;
        int state = me && (v->kind == MBSFMU_V_X || v->kind == MBSFMU_V_ENERGY);
        if (v->causality != 'i' && !state) {
            mbsfmu_log(I, FMU_ERROR, "%s: known %s (value reference %u) is %s (the knowns are the Real inputs%s)", fn,
                  v->name, (unsigned)vKnown_ref[k], v->causality == 'p' ? "a parameter: derivatives with respect "
                  "to parameters are not provided" : v->causality == 'l' ? "a local variable" : "an output",
                  me ? " and the continuous states" : "");
            return FMU_ERROR;
        }
        if (!isfinite(dvKnown[k])) {
            mbsfmu_log(I, FMU_ERROR, "%s: dvKnown[%lu] = %g for %s rejected: seeds must be finite", fn, (unsigned long)k,
                  dvKnown[k], v->name);
            return FMU_ERROR;
        }
        need_state |= state;
    }
    if (need_state)                                  /* the outputs the Jacobian does not cover */
        for (size_t k = 0; k < nUnknown; k++) {
            const mbsfmu_var *v = &I->m->vars[vUnknown_ref[k]];
            if (v->kind != MBSFMU_V_DER && v->kind != MBSFMU_V_QDD && v->kind != MBSFMU_V_X &&
                v->kind != MBSFMU_V_ENERGY) {
                mbsfmu_log(I, FMU_ERROR, "%s: the derivative of output %s (value reference %u) with respect to the "
                      "states is not provided (only the state derivatives, qdd and the states themselves are)", fn,
                      v->name, (unsigned)vUnknown_ref[k]);
                return FMU_ERROR;
            }
        }
    if (nKnown == 0 || (!need_qdd && !need_der && !need_state)) {
        for (size_t k = 0; k < nUnknown; k++) dvUnknown[k] = 0.0;
        return FMU_OK;
    }
    int n_u = I->sz.n_u, nx = I->sz.nx, nq = I->sz.nq;
    if (need_der || need_state) {                    /* Model Exchange: J = [A B] times the seeds */
        int rc = state_jacobian(I, fn);
        if (rc != FMU_OK) return rc;
        double *dx = I->seed, *du = dx + nx;         /* allocated at instantiation */
        for (int j = 0; j < nx + n_u; j++) dx[j] = 0.0;
        for (size_t k = 0; k < nKnown; k++) {
            const mbsfmu_var *v = &I->m->vars[vKnown_ref[k]];
            int at = v->kind == MBSFMU_V_INPUT ? nx + v->a : v->kind == MBSFMU_V_X ? v->a : nx - 2 + v->a;
            dx[at] += dvKnown[k];
        }
        for (size_t k = 0; k < nUnknown; k++) {
            const mbsfmu_var *v = &I->m->vars[vUnknown_ref[k]];
            int row = v->kind == MBSFMU_V_DER ? v->a : v->kind == MBSFMU_V_QDD ? nq + v->a : -1;
            double acc = 0.0;
            if (row >= 0) {
                const double *a = I->jac_A + (size_t)nx * (size_t)row, *b = I->jac_B + (size_t)n_u * (size_t)row;
                for (int j = 0; j < nx; j++) acc += a[j] * dx[j];
                for (int j = 0; j < n_u; j++) acc += b[j] * du[j];
            } else if (v->kind == MBSFMU_V_X) {
                acc = dx[v->a];                      /* the output is the state */
            } else if (v->kind == MBSFMU_V_ENERGY) {
                acc = dx[nx - 2 + v->a];
            }
            dvUnknown[k] = acc;
        }
        return FMU_OK;
    }
    double *du = I->work, *dqdd = du + n_u;             /* allocated at instantiation */
    for (int j = 0; j < n_u; j++) du[j] = 0.0;
    for (size_t k = 0; k < nKnown; k++) du[I->m->vars[vKnown_ref[k]].a] += dvKnown[k];   /* a known twice: seeds add */
    apply_params_quietly(I);          /* as the outputs: the current parameters if they make a valid model */
    if (mbs_input_response(I->sim, mbs_sim_x(I->sim), du, dqdd) != MBS_OK) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s", fn, mbs_sim_message(I->sim));
        return FMU_ERROR;
    }
    for (size_t k = 0; k < nUnknown; k++) {
        const mbsfmu_var *v = &I->m->vars[vUnknown_ref[k]];
        dvUnknown[k] = v->kind == MBSFMU_V_QDD ? dqdd[v->a] : 0.0;
    }
    return FMU_OK;
}

/* ---- FMU state ---------------------------------------------------------------------------- */

static void free_state_memory(Instance *I, FmuState *S)
{
    S->magic = FREED_MAGIC;
    if (S->sim) I->host.free(S->sim);
    if (S->par) I->host.free(S->par);
    if (S->xh) I->host.free(S->xh);
    I->host.free(S);
}

/* index of S in I's live states, or -1 (S is not dereferenced unless it is found) */
static long find_state(const Instance *I, const void *S)
{
    for (size_t k = 0; k < I->n_states; k++)
        if ((const void *)I->states[k] == S) return (long)k;
    return -1;
}

static FmuState *new_state(Instance *I)
{
    if (I->n_states == I->cap_states) {
        size_t cap = I->cap_states ? 2 * I->cap_states : 8;
        FmuState **grown = (FmuState **)alloc(I, cap, sizeof(FmuState *));
        if (!grown) return NULL;
        if (I->n_states) memcpy(grown, I->states, I->n_states * sizeof(FmuState *));
        if (I->states) I->host.free(I->states);
        I->states = grown;
        I->cap_states = cap;
    }
    FmuState *S = (FmuState *)alloc(I, 1, sizeof(FmuState));
    if (!S) return NULL;
    memset(S, 0, sizeof *S);
    S->sim = (mbs_sim *)alloc(I, I->sim_size, 1);
    S->par = (double *)alloc(I, I->m->n_vars, sizeof(double));
    S->xh = (double *)alloc(I, (size_t)I->sz.nx, sizeof(double));
    if (!S->sim || !S->par || !S->xh) {
        free_state_memory(I, S);
        return NULL;
    }
    char err[256];
    if (!mbs_sim_init(S->sim, I->sim_size, I->m->ti, I->m->n_ti, I->m->tf, I->m->n_tf, err, sizeof err)) {
        free_state_memory(I, S);
        return NULL;
    }
    S->magic = STATE_MAGIC;
    S->owner = I;
    I->states[I->n_states++] = S;
    return S;
}

static void save_into(Instance *I, FmuState *S)
{
    mbs_sim_copy(S->sim, I->sim);
    memcpy(S->par, I->par, I->m->n_vars * sizeof(double));
    S->mode = I->mode;
    S->have_ref = I->have_ref;
    S->params_dirty = I->params_dirty;
    memcpy(S->H0, I->H0, sizeof S->H0);
    S->E0 = I->E0;
    S->KE0 = I->KE0;
    S->PE0 = I->PE0;
    S->S0 = I->S0;
    S->n_discards = I->n_discards;
    S->n_events = I->n_events;
    memcpy(S->xh, I->xh, (size_t)I->sz.nx * sizeof(double));
}

int mbsfmu_get_state(Instance *I, const char *fn, void **FMUstate)
{
    if (!FMUstate) {
        mbsfmu_log(I, FMU_ERROR, "%s: FMUstate is NULL", fn);
        return FMU_ERROR;
    }
    FmuState *S;
    if (*FMUstate) {                   /* overwrite a state the host already has */
        if (find_state(I, *FMUstate) < 0) {
            mbsfmu_log(I, FMU_ERROR, "%s: *FMUstate is not NULL and not a live state of this instance", fn);
            return FMU_ERROR;
        }
        S = (FmuState *)*FMUstate;
    } else {
        S = new_state(I);
        if (!S) {
            mbsfmu_log(I, FMU_ERROR, "%s: out of memory", fn);
            return FMU_ERROR;
        }
    }
    save_into(I, S);
    *FMUstate = S;
    return FMU_OK;
}

int mbsfmu_set_state(Instance *I, const char *fn, void *FMUstate)
{
    if (!mbsfmu_allowed(I, fn, M_INST | M_INIT | M_STEP | M_EVENT | M_CONT | M_TERM)) return FMU_ERROR;
    if (!FMUstate || find_state(I, FMUstate) < 0 || ((FmuState *)FMUstate)->magic != STATE_MAGIC) {
        mbsfmu_log(I, FMU_ERROR, "%s: not a live FMU state of this instance (NULL, freed, or made by "
              "another instance or FMU)", fn);
        return FMU_ERROR;
    }
    FmuState *S = (FmuState *)FMUstate;
    mbs_sim_copy(I->sim, S->sim);
    memcpy(I->par, S->par, I->m->n_vars * sizeof(double));
    I->jac_valid = 0;                 /* the state's parameters may differ */
    I->mode = S->mode;
    I->have_ref = S->have_ref;
    I->params_dirty = S->params_dirty;
    I->params_bad = 0;
    memcpy(I->H0, S->H0, sizeof I->H0);
    I->E0 = S->E0;
    I->KE0 = S->KE0;
    I->PE0 = S->PE0;
    I->S0 = S->S0;
    I->n_discards = S->n_discards;
    I->n_events = S->n_events;
    memcpy(I->xh, S->xh, (size_t)I->sz.nx * sizeof(double));
    return FMU_OK;
}

/* FreeFMUstate's work; the FMU's own calls come here, never through the exported name, which
 * a host's dynamic linker may bind to another FMU's function of the same name (interposition) */
static int free_fmu_state(Instance *I, const char *fn, void **FMUstate)
{
    if (!FMUstate) {
        mbsfmu_log(I, FMU_ERROR, "%s: FMUstate is NULL", fn);
        return FMU_ERROR;
    }
    if (!*FMUstate) return FMU_OK;     /* FMI 2.0: freeing a NULL state does nothing */
    long k = find_state(I, *FMUstate);
    if (k < 0) {
        mbsfmu_log(I, FMU_ERROR, "%s: not a live FMU state of this instance (already freed?)", fn);
        return FMU_ERROR;
    }
    free_state_memory(I, I->states[k]);
    I->states[k] = I->states[--I->n_states];
    *FMUstate = NULL;
    return FMU_OK;
}

int mbsfmu_free_state(Instance *I, const char *fn, void **FMUstate) { return free_fmu_state(I, fn, FMUstate); }

/* serialised state, little-endian as the machine (every target of this FMU is):
 *   "MBSFMUST" | u32 version | u32 total bytes | u64 model hash | u32 nx | u32 n_u | u32 n_vars
 *   | u32 mode | u32 have_ref | u32 params_dirty | u32 kind | f64 t | f64 H0[3] | f64 E0, KE0, PE0, S0
 *   | i64 n_discards | i64 n_events | i64 n_steps | i64 n_rhs | f64 h_last | f64 x[nx] | f64 u[n_u]
 *   | f64 par[n_vars] | f64 xh[nx] | u64 checksum
 * checksum: FNV-1a 64 over every byte before it. */
#define BLOB_HEAD (8 + 4 + 4 + 8 + 4 * 7 + 8 + 24 + 8 + 24 + 8 + 8 + 8 + 8 + 8)

static size_t blob_size(const Instance *I)
{
    return BLOB_HEAD + 8 * (2 * (size_t)I->sz.nx + (size_t)I->sz.n_u + I->m->n_vars) + 8;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < n; k++) {
        h ^= p[k];
        h *= 1099511628211ull;
    }
    return h;
}

typedef struct { unsigned char *p; } wcur;
static void put(wcur *w, const void *v, size_t n) { memcpy(w->p, v, n); w->p += n; }
static void put_u32(wcur *w, uint32_t v) { put(w, &v, 4); }
static void put_i64(wcur *w, long long v) { int64_t x = v; put(w, &x, 8); }
static void put_f64(wcur *w, double v) { put(w, &v, 8); }

typedef struct { const unsigned char *p; } rcur;
static void get(rcur *r, void *v, size_t n) { memcpy(v, r->p, n); r->p += n; }
static uint32_t get_u32(rcur *r) { uint32_t v; get(r, &v, 4); return v; }
static long long get_i64(rcur *r) { int64_t v; get(r, &v, 8); return (long long)v; }
static double get_f64(rcur *r) { double v; get(r, &v, 8); return v; }

int mbsfmu_serialized_size(Instance *I, const char *fn, void *FMUstate, size_t *size)
{
    if (!size || !FMUstate || find_state(I, FMUstate) < 0) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s", fn, !size ? "size is NULL" :
              "not a live FMU state of this instance");
        return FMU_ERROR;
    }
    *size = blob_size(I);
    return FMU_OK;
}

int mbsfmu_serialize(Instance *I, const char *fn, void *FMUstate, char *serializedState, size_t size)
{
    if (!FMUstate || find_state(I, FMUstate) < 0) {
        mbsfmu_log(I, FMU_ERROR, "%s: not a live FMU state of this instance", fn);
        return FMU_ERROR;
    }
    size_t n = blob_size(I);
    if (!serializedState || size < n) {
        mbsfmu_log(I, FMU_ERROR, "%s: the buffer is %s (%lu bytes needed, see "
              "SerializedFMUstateSize)", fn, serializedState ? "too small" : "NULL", (unsigned long)n);
        return FMU_ERROR;
    }
    const FmuState *S = (const FmuState *)FMUstate;
    mbs_sizes sz = mbs_sim_sizes(S->sim);
    long long n_steps = 0, n_rhs = 0;
    double h_last = 0.0;
    mbs_sim_stats(S->sim, &n_steps, &n_rhs, &h_last);
    wcur w = {(unsigned char *)serializedState};
    put(&w, BLOB_MAGIC, 8);
    put_u32(&w, BLOB_VERSION);
    put_u32(&w, (uint32_t)n);
    put(&w, &sz.model_hash, 8);
    put_u32(&w, (uint32_t)sz.nx);
    put_u32(&w, (uint32_t)sz.n_u);
    put_u32(&w, (uint32_t)I->m->n_vars);
    put_u32(&w, (uint32_t)S->mode);
    put_u32(&w, (uint32_t)S->have_ref);
    put_u32(&w, (uint32_t)S->params_dirty);
    put_u32(&w, (uint32_t)I->kind);
    put_f64(&w, mbs_sim_time(S->sim));
    for (int k = 0; k < 3; k++) put_f64(&w, S->H0[k]);
    put_f64(&w, S->E0);
    put_f64(&w, S->KE0);
    put_f64(&w, S->PE0);
    put_f64(&w, S->S0);
    put_i64(&w, S->n_discards);
    put_i64(&w, S->n_events);
    put_i64(&w, n_steps);
    put_i64(&w, n_rhs);
    put_f64(&w, h_last);
    put(&w, mbs_sim_x(S->sim), 8 * (size_t)sz.nx);
    put(&w, mbs_sim_u(S->sim), 8 * (size_t)sz.n_u);
    put(&w, S->par, 8 * I->m->n_vars);
    put(&w, S->xh, 8 * (size_t)sz.nx);
    uint64_t h = fnv1a((const unsigned char *)serializedState, n - 8);
    put(&w, &h, 8);
    return FMU_OK;
}

int mbsfmu_deserialize(Instance *I, const char *fn, const char *serializedState, size_t size, void **FMUstate)
{
    size_t n = blob_size(I);
    if (!serializedState || !FMUstate) {
        mbsfmu_log(I, FMU_ERROR, "%s: %s is NULL", fn, !serializedState ? "serializedState" : "FMUstate");
        return FMU_ERROR;
    }
    if (*FMUstate && find_state(I, *FMUstate) < 0) {
        mbsfmu_log(I, FMU_ERROR, "%s: *FMUstate is not NULL and not a live state of this instance", fn);
        return FMU_ERROR;
    }
    const unsigned char *b = (const unsigned char *)serializedState;
    if (size < 16 || memcmp(b, BLOB_MAGIC, 8) != 0) {
        mbsfmu_log(I, FMU_ERROR, "%s: not an mbsfmu FMU state (%lu bytes, no mbsfmu header)", fn, (unsigned long)size);
        return FMU_ERROR;
    }
    rcur r = {b + 8};
    uint32_t version = get_u32(&r), total = get_u32(&r);
    if (version != BLOB_VERSION) {
        mbsfmu_log(I, FMU_ERROR, "%s: state format version %u, this FMU reads version %u", fn, version, BLOB_VERSION);
        return FMU_ERROR;
    }
    if (size != n || total != n) {
        mbsfmu_log(I, FMU_ERROR, "%s: %lu bytes given, header says %u, this model's state has %lu bytes (truncated or "
              "another model's state)", fn, (unsigned long)size, total, (unsigned long)n);
        return FMU_ERROR;
    }
    uint64_t hash, check;
    get(&r, &hash, 8);
    memcpy(&check, b + n - 8, 8);
    if (hash != I->sz.model_hash) {
        mbsfmu_log(I, FMU_ERROR, "%s: the state is of another model (model hash %016llx, this FMU's %016llx)", fn,
              (unsigned long long)hash, (unsigned long long)I->sz.model_hash);
        return FMU_ERROR;
    }
    if (check != fnv1a(b, n - 8)) {
        mbsfmu_log(I, FMU_ERROR, "%s: checksum mismatch (the state was altered or damaged)", fn);
        return FMU_ERROR;
    }
    uint32_t nx = get_u32(&r), n_u = get_u32(&r), n_vars = get_u32(&r);
    uint32_t mode = get_u32(&r), have_ref = get_u32(&r), params_dirty = get_u32(&r), kind = get_u32(&r);
    if (nx != (uint32_t)I->sz.nx || n_u != (uint32_t)I->sz.n_u || n_vars != (uint32_t)I->m->n_vars ||
        mode > S_TERMINATED || have_ref > 1 || params_dirty > 1) {
        mbsfmu_log(I, FMU_ERROR, "%s: the state's sizes or flags do not fit this model", fn);
        return FMU_ERROR;
    }
    if (kind != (uint32_t)I->kind) {
        mbsfmu_log(I, FMU_ERROR, "%s: the state was made by a %s instance, this one is %s", fn,
                   kind == FMU_MODEL_EXCHANGE ? "Model Exchange" : "Co-Simulation",
                   I->kind == FMU_MODEL_EXCHANGE ? "Model Exchange" : "Co-Simulation");
        return FMU_ERROR;
    }
    double t = get_f64(&r), H0[3], E0, KE0, PE0, S0;
    for (int k = 0; k < 3; k++) H0[k] = get_f64(&r);
    E0 = get_f64(&r);
    KE0 = get_f64(&r);
    PE0 = get_f64(&r);
    S0 = get_f64(&r);
    long long n_discards = get_i64(&r), n_events = get_i64(&r), n_steps = get_i64(&r), n_rhs = get_i64(&r);
    double h_last = get_f64(&r);
    const unsigned char *px = r.p, *pu = px + 8 * (size_t)nx, *pp = pu + 8 * (size_t)n_u;
    const unsigned char *ph = pp + 8 * (size_t)n_vars;
    /* build the state in a scratch FMU state, so a failure leaves *FMUstate untouched */
    FmuState *S = new_state(I);
    if (!S) {
        mbsfmu_log(I, FMU_ERROR, "%s: out of memory", fn);
        return FMU_ERROR;
    }
    char err[1024] = "", why[1024 + 128] = "";   /* why: err behind a short prefix */
    int ok = isfinite(t) && n_discards >= 0 && n_events >= 0 && n_steps >= 0 && n_rhs >= 0;
    if (!ok) snprintf(why, sizeof why, "non-finite time or negative counters");
    memcpy(S->par, pp, 8 * (size_t)n_vars);
    memcpy(S->xh, ph, 8 * (size_t)nx);
    for (size_t k = 0; ok && k < nx; k++)
        if (!isfinite(S->xh[k])) {
            snprintf(why, sizeof why, "its host state entry %lu is not finite", (unsigned long)k);
            ok = 0;
        }
    for (size_t k = 0; ok && k < I->m->n_vars; k++) {
        const mbsfmu_var *v = &I->m->vars[k];
        if (v->causality != 'p') continue;
        double x = S->par[k];
        if (!isfinite(x) || (!isnan(v->min) && x < v->min) || (!isnan(v->max) && x > v->max)) {
            snprintf(why, sizeof why, "parameter %s = %.17g out of range", v->name, x);
            ok = 0;
        } else if (v->kind == MBSFMU_V_PARAM) {
            mbs_sim_set_param(S->sim, v->a, v->b, v->c, x);
        }
    }
    if (ok && mbs_sim_apply_params(S->sim, err, sizeof err) != MBS_OK) {
        snprintf(why, sizeof why, "its parameters do not make a valid model: %s", err);
        ok = 0;
    }
    if (ok) {
        /* the solver of the state's parameters, applied through a scratch instance view */
        int method = 1;
        double h = NAN, rtol = NAN, atol = NAN;
        for (size_t k = 0; k < I->m->n_vars; k++) {
            const mbsfmu_var *v = &I->m->vars[k];
            if (v->kind != MBSFMU_V_SOLVER) continue;
            if (v->a == 0) method = (int)S->par[k];
            if (v->a == 1) h = S->par[k];
            if (v->a == 2) rtol = S->par[k];
            if (v->a == 3) atol = S->par[k];
        }
        if (mode == S_STEP || mode == S_TERMINATED) {
            if (mbs_sim_set_solver(S->sim, method == 2 ? MBS_DOP853 : MBS_RK4, h, rtol, atol, err, sizeof err) !=
                MBS_OK) {
                snprintf(why, sizeof why, "its solver settings are invalid: %s", err);
                ok = 0;
            }
        }
    }
    if (ok) {
        double *xs = S->xh;                      /* scratch: the state's xh is read again below */
        memcpy(xs, px, 8 * (size_t)nx);
        if (mbs_sim_set_x(S->sim, xs, 2, err, sizeof err) != MBS_OK) {
            snprintf(why, sizeof why, "its state vector is invalid: %s", err);
            ok = 0;
        }
        memcpy(S->xh, ph, 8 * (size_t)nx);
    }
    for (uint32_t k = 0; ok && k < n_u; k++) {
        double u;
        memcpy(&u, pu + 8 * (size_t)k, 8);
        if (mbs_sim_set_u(S->sim, (int)k, u) != MBS_OK) {
            snprintf(why, sizeof why, "input %u = %g is invalid", k, u);
            ok = 0;
        }
    }
    if (!ok) {
        void *tmp = S;
        free_fmu_state(I, fn, &tmp);
        mbsfmu_log(I, FMU_ERROR, "%s: the state is refused: %s", fn, why);
        return FMU_ERROR;
    }
    mbs_sim_set_time(S->sim, t);
    mbs_sim_set_stats(S->sim, n_steps, n_rhs, h_last);
    S->mode = (fmu_mode)mode;
    S->have_ref = (int)have_ref;
    S->params_dirty = (int)params_dirty;
    memcpy(S->H0, H0, sizeof H0);
    S->E0 = E0;
    S->KE0 = KE0;
    S->PE0 = PE0;
    S->S0 = S0;
    S->n_discards = n_discards;
    S->n_events = n_events;
    if (*FMUstate) {                   /* the host's state object takes the new content */
        FmuState *D = (FmuState *)*FMUstate;
        mbs_sim_copy(D->sim, S->sim);
        memcpy(D->par, S->par, I->m->n_vars * sizeof(double));
        D->mode = S->mode;
        D->have_ref = S->have_ref;
        D->params_dirty = S->params_dirty;
        memcpy(D->H0, S->H0, sizeof D->H0);
        D->E0 = S->E0;
        D->KE0 = S->KE0;
        D->PE0 = S->PE0;
        D->S0 = S->S0;
        D->n_discards = S->n_discards;
        D->n_events = S->n_events;
        memcpy(D->xh, S->xh, 8 * (size_t)nx);
        void *tmp = S;
        free_fmu_state(I, fn, &tmp);
    } else {
        *FMUstate = S;
    }
    return FMU_OK;
}
