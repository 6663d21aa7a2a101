/* fmi2_slave.c - FMI 2.0 Co-Simulation wrapper over the mbsfmu engine core (mbs_core.h).
 *
 * C99, no global state: every instance lives in memory from its host's fmi2CallbackFunctions, so
 * several instances run in one process. The model (tables and variable map) comes from the
 * generated mbsfmu_model.c (fmu_model.h).
 *
 * Behaviour (FMI 2.0 Co-Simulation, sections 2.1 and 4):
 * - states: instantiated -> (fmi2EnterInitializationMode) initialization mode ->
 *   (fmi2ExitInitializationMode) step mode -> (fmi2Terminate) terminated; fmi2Reset goes back to
 *   instantiated. A call not allowed in the current state returns fmi2Error with a log message
 *   and changes nothing.
 * - a rejected argument (NULL pointer, unknown value reference, Real/Integer mix-up, non-finite or
 *   out-of-range value, a parameter after initialisation, an output) returns fmi2Error, logs the
 *   reason and leaves every variable as it was (the instance stays usable).
 * - parameters are applied at fmi2ExitInitializationMode (fmi2Error listing every problem, e.g. a
 *   negative mass or an inertia violating the triangle inequality); before that, outputs follow
 *   the parameters when they make a valid model.
 * - fmi2DoStep advances by the step with inputs held; a step the core cannot complete (non-finite
 *   state, step-size underflow, singular loop system) returns fmi2Discard with the reason logged and
 *   the state left at the start of the step.
 * - outputs are computed by the core at most once per state, and only when read.
 * - fmi2GetDirectionalDerivative: the Real outputs with respect to the Real inputs at the current
 *   state, exactly (the qdd outputs: M^-1 B du by the ABA, mbs_input_response; every other output 0,
 *   as the ModelStructure's Outputs dependencies say).
 * - FMU state: fmi2GetFMUstate copies the instance; serialised states carry a format version, the
 *   model hash and a checksum; a foreign, truncated or altered blob is refused with fmi2Error.
 * - a component or FMU state pointer is checked by a magic number before use (a freed or foreign
 *   pointer is refused; states are also checked against the instance's list of live states).
 */
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fmi2Functions.h"
#include "fmu_model.h"
#include "mbs_core.h"

#define INST_MAGIC 0x4d425346u        /* "MBSF" */
#define FREED_MAGIC 0xdeadf00du
#define STATE_MAGIC 0x4d425353u       /* "MBSS" */
#define BLOB_MAGIC "MBSFMUST"
#define BLOB_VERSION 2u
#define INT_MAX32 2147483647LL
#define MAX_SUBSTEPS 1e7              /* steps of h_max in one fmi2DoStep (a larger step is refused) */
#define MAX_STEP 1e9                  /* [s] largest communication step accepted */
/* a communication point further than TIME_EPS max(1, |t|) from the FMU's time t is refused: the
 * FMU takes the host's point at every step, so both sides' times differ only by the rounding of
 * one step's sum, fl(t + h) against the host's fl(t + h) or fl(n h): a few ulp (eps = 2^-52 relative,
 * absolute below |t| = 1 s); 1000 eps (2.2e-13 s at |t| <= 1 s) leaves a margin of 100 over that
 * and still catches a skipped, repeated or backward step of any size above it. */
#define TIME_EPS (1000.0 * 2.220446049250313e-16)
#define ERR_N 4096

typedef enum { S_INSTANTIATED = 0, S_INIT, S_STEP, S_TERMINATED } mode_t_;
static const char *const MODE_NAME[] = {"instantiated", "initialization mode", "step mode", "terminated"};

struct FmuState;

typedef struct {
    uint32_t magic;
    mode_t_ mode;
    fmi2CallbackFunctions cb;
    char *name;
    int logging_on;
    const mbsfmu_model *m;
    mbs_sim *sim;
    size_t sim_size;
    mbs_sizes sz;
    double *par;                /* (n_vars,) values of the parameters (other entries unused) */
    struct Source *src;         /* (n_vars,) where each variable's value lives (sources()) */
    int params_dirty;           /* a parameter changed since the last mbs_sim_apply_params */
    int params_bad;             /* the current parameters do not make a valid model (logged once) */
    int have_ref;
    double H0[3], E0, KE0, PE0, S0;   /* drift references, taken at fmi2ExitInitializationMode */
    long long n_discards;
    struct FmuState **states;   /* live FMU states made by this instance */
    size_t n_states, cap_states;
    char err[ERR_N];
} Instance;

/* where a variable's value is read: entry off of the state x, the inputs u or qdd (SRC_X, SRC_U,
 * SRC_QDD), the double at byte off of the invariants (SRC_INV), or value_of's cases (SRC_OTHER) */
enum { SRC_OTHER = 0, SRC_X, SRC_U, SRC_QDD, SRC_INV };
typedef struct Source {
    int base;
    char type, param;                   /* the variable's type ('R', 'I') and 1 if a parameter */
    size_t off;
} Source;

typedef struct FmuState {
    uint32_t magic;
    Instance *owner;
    mbs_sim *sim;
    double *par;
    mode_t_ mode;
    int have_ref, params_dirty;
    double H0[3], E0, KE0, PE0, S0;
    long long n_discards;
} FmuState;

/* ---- logging ------------------------------------------------------------------------------ */

/* the LogCategories of the modelDescription (description.LOG_CATEGORIES) */
static const char *const LOG_CATEGORY[] = {"logStatusWarning", "logStatusDiscard", "logStatusError", "logStatusFatal",
                                           "logAll"};

static const char *status_category(fmi2Status s)
{
    switch (s) {
    case fmi2OK: return "logAll";
    case fmi2Warning: return "logStatusWarning";
    case fmi2Discard: return "logStatusDiscard";
    case fmi2Error: return "logStatusError";
    case fmi2Fatal: return "logStatusFatal";
    default: return "logAll";
    }
}

static void logf_(Instance *I, fmi2Status status, const char *fmt, ...)
{
    char msg[ERR_N + 512];
    va_list ap;
    if (!I || !I->cb.logger) return;
    if (status == fmi2OK && !I->logging_on) return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* the message is the format (hosts that do not format, e.g. fmpy's Python logger, show it as
     * is), with every '%' doubled so that a name holding '%' cannot become a conversion */
    char esc[2 * sizeof msg];
    size_t j = 0;
    for (size_t k = 0; msg[k] && j + 2 < sizeof esc; k++) {
        esc[j++] = msg[k];
        if (msg[k] == '%') esc[j++] = '%';
    }
    esc[j] = 0;
    I->cb.logger(I->cb.componentEnvironment, I->name ? I->name : "mbsfmu", status, status_category(status), esc);
}

/* the component if it is a live instance, else NULL (a freed or foreign pointer, or NULL) */
static Instance *live(fmi2Component c)
{
    Instance *I = (Instance *)c;
    if (!I || I->magic != INST_MAGIC) return NULL;
    return I;
}

#define GET_INSTANCE(c, fn)                                                                    \
    Instance *I = live(c);                                                                    \
    if (!I) return fmi2Error;                                                                 \
    (void)fn

static int allowed(Instance *I, const char *fn, unsigned mask)
{
    if (mask & (1u << I->mode)) return 1;
    logf_(I, fmi2Error, "%s: not allowed in %s (FMI 2.0 Co-Simulation call sequence)", fn, MODE_NAME[I->mode]);
    return 0;
}
#define M_INST (1u << S_INSTANTIATED)
#define M_INIT (1u << S_INIT)
#define M_STEP (1u << S_STEP)
#define M_TERM (1u << S_TERMINATED)

static void *alloc(Instance *I, size_t n, size_t size)
{
    return I->cb.allocateMemory(n ? n : 1, size ? size : 1);
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
        logf_(I, fmi2Warning, "these parameters do not make a valid model (outputs keep the previous values): %s",
              I->err);
    }
}

/* ---- instantiation ------------------------------------------------------------------------ */

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

static void free_instance_memory(Instance *I)
{
    fmi2CallbackFreeMemory fr = I->cb.freeMemory;
    if (I->sim) fr(I->sim);
    if (I->par) fr(I->par);
    if (I->src) fr(I->src);
    if (I->name) fr(I->name);
    if (I->states) fr(I->states);
    I->magic = FREED_MAGIC;
    fr(I);
}

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

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                              fmi2Boolean visible, fmi2Boolean loggingOn)
{
    const mbsfmu_model *m = &MBSFMU_MODEL;
    Instance tmp;
    (void)visible;
    if (!functions || !functions->allocateMemory || !functions->freeMemory) {
        if (functions && functions->logger)
            functions->logger(functions->componentEnvironment, instanceName ? instanceName : "mbsfmu", fmi2Error,
                              "logStatusError",
                              "fmi2Instantiate: the callback functions allocateMemory and freeMemory are required");
        return NULL;
    }
    /* a stack instance to log through until the real one exists */
    memset(&tmp, 0, sizeof tmp);
    tmp.cb = *functions;
    tmp.name = (char *)(instanceName ? instanceName : "mbsfmu");
    tmp.logging_on = loggingOn;
    if (!instanceName || !instanceName[0]) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: instanceName is NULL or empty");
        return NULL;
    }
    if (fmuType != fmi2CoSimulation) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: this FMU supports Co-Simulation only (fmuType %d)", (int)fmuType);
        return NULL;
    }
    if (!fmuGUID || strcmp(fmuGUID, m->guid) != 0) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: GUID %s does not match this FMU's %s (a modelDescription.xml of "
              "another build?)", fmuGUID ? fmuGUID : "(NULL)", m->guid);
        return NULL;
    }
    if (fmuResourceLocation && fmuResourceLocation[0]) {
        /* the FMU needs no resources, but a location must be a URI (RFC 3986: scheme ":" ...) */
        const char *p = fmuResourceLocation;
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
        while (ok && *p && *p != ':') {
            ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '+' ||
                 *p == '-' || *p == '.';
            p++;
        }
        if (!ok || *p != ':') {
            logf_(&tmp, fmi2Error, "fmi2Instantiate: fmuResourceLocation \"%.200s\" is not a URI (expected e.g. "
                  "file:///path/to/resources)", fmuResourceLocation);
            return NULL;
        }
    }
    char err[1024] = "";
    size_t sim_size = mbs_sim_size(m->ti, m->n_ti, m->tf, m->n_tf, err, sizeof err);
    if (!sim_size) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: the model tables are malformed: %s", err);
        return NULL;
    }
    Instance *I = (Instance *)functions->allocateMemory(1, sizeof(Instance));
    if (!I) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: out of memory");
        return NULL;
    }
    memset(I, 0, sizeof *I);
    I->cb = *functions;
    I->logging_on = loggingOn;
    I->m = m;
    I->sim_size = sim_size;
    size_t n_name = strlen(instanceName) + 1;
    I->name = (char *)alloc(I, n_name, 1);
    I->sim = (mbs_sim *)alloc(I, sim_size, 1);
    I->par = (double *)alloc(I, m->n_vars, sizeof(double));
    I->src = (Source *)alloc(I, m->n_vars, sizeof(Source));
    if (!I->name || !I->sim || !I->par || !I->src) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: out of memory (%lu bytes)", (unsigned long)sim_size);
        free_instance_memory(I);
        return NULL;
    }
    memcpy(I->name, instanceName, n_name);
    if (!mbs_sim_init(I->sim, sim_size, m->ti, m->n_ti, m->tf, m->n_tf, err, sizeof err)) {
        logf_(&tmp, fmi2Error, "fmi2Instantiate: the model tables are malformed: %s", err);
        free_instance_memory(I);
        return NULL;
    }
    I->sz = mbs_sim_sizes(I->sim);
    sources(I);
    set_starts(I);
    I->mode = S_INSTANTIATED;
    I->magic = INST_MAGIC;
    logf_(I, fmi2OK, "fmi2Instantiate: %s, %d bodies, nq = %d, nv = %d, %d inputs", m->identifier, I->sz.N, I->sz.nq,
          I->sz.nv, I->sz.n_u);
    for (size_t k = 0; k < m->n_notes; k++) logf_(I, fmi2OK, "model note: %s", m->notes[k]);
    return I;
}

static void free_state_memory(Instance *I, FmuState *S);

void fmi2FreeInstance(fmi2Component c)
{
    Instance *I = live(c);
    if (!I) return;                     /* NULL, freed or foreign: nothing to do, nothing touched */
    for (size_t k = 0; k < I->n_states; k++) free_state_memory(I, I->states[k]);
    I->n_states = 0;
    free_instance_memory(I);
}

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[])
{
    GET_INSTANCE(c, "fmi2SetDebugLogging");
    if (nCategories > 0 && !categories) {
        logf_(I, fmi2Error, "fmi2SetDebugLogging: categories is NULL with nCategories = %lu", (unsigned long)nCategories);
        return fmi2Error;
    }
    for (size_t k = 0; k < nCategories; k++) {
        const char *cat = categories[k];
        int known = 0;
        for (size_t j = 0; cat && j < sizeof LOG_CATEGORY / sizeof LOG_CATEGORY[0]; j++)
            known |= strcmp(cat, LOG_CATEGORY[j]) == 0;
        if (!known) {
            logf_(I, fmi2Error, "fmi2SetDebugLogging: unknown log category %s%s%s (the modelDescription's "
                  "LogCategories: logStatusWarning, logStatusDiscard, logStatusError, logStatusFatal, logAll)",
                  cat ? "'" : "", cat ? cat : "NULL", cat ? "'" : "");
            return fmi2Error;
        }
    }
    I->logging_on = loggingOn;
    return fmi2OK;
}

/* ---- initialisation ----------------------------------------------------------------------- */

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    GET_INSTANCE(c, "fmi2SetupExperiment");
    if (!allowed(I, "fmi2SetupExperiment", M_INST)) return fmi2Error;
    if (!isfinite(startTime) || (stopTimeDefined && (!isfinite(stopTime) || stopTime < startTime))) {
        logf_(I, fmi2Error, "fmi2SetupExperiment: startTime %.17g / stopTime %.17g rejected: finite times with "
              "stopTime >= startTime expected", startTime, stopTime);
        return fmi2Error;
    }
    if (toleranceDefined && !(isfinite(tolerance) && tolerance > 0.0)) {
        logf_(I, fmi2Error, "fmi2SetupExperiment: tolerance %g rejected: a positive, finite relative tolerance "
              "expected", tolerance);
        return fmi2Error;
    }
    mbs_sim_set_time(I->sim, startTime);
    if (toleranceDefined) {          /* the host's tolerance is solver.rtol (a later fmi2SetReal of it wins) */
        for (size_t k = 0; k < I->m->n_vars; k++) {
            const mbsfmu_var *v = &I->m->vars[k];
            if (v->kind == MBSFMU_V_SOLVER && v->a == 2) I->par[k] = tolerance;
        }
        if ((int)solver_setting(I, 0) == 2)
            logf_(I, fmi2OK, "fmi2SetupExperiment: tolerance %g used as solver.rtol of dop853", tolerance);
        else
            logf_(I, fmi2OK, "fmi2SetupExperiment: tolerance %g stored as solver.rtol, not used by rk4 (fixed steps "
                  "of solver.h_max = %g s; solver.method = 2 selects the adaptive dop853, which uses it)", tolerance,
                  solver_setting(I, 1));
    }
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    GET_INSTANCE(c, "fmi2EnterInitializationMode");
    if (!allowed(I, "fmi2EnterInitializationMode", M_INST)) return fmi2Error;
    I->mode = S_INIT;
    return fmi2OK;
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

fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    GET_INSTANCE(c, "fmi2ExitInitializationMode");
    if (!allowed(I, "fmi2ExitInitializationMode", M_INIT)) return fmi2Error;
    if (apply_params(I) != MBS_OK) {
        I->params_bad = 1;
        logf_(I, fmi2Error, "fmi2ExitInitializationMode: cannot initialise with these parameters: %s", I->err);
        return fmi2Error;
    }
    I->err[0] = 0;
    if (apply_solver(I, I->err, sizeof I->err) != MBS_OK) {
        logf_(I, fmi2Error, "fmi2ExitInitializationMode: cannot initialise with these solver settings: %s", I->err);
        return fmi2Error;
    }
    take_reference(I);
    I->mode = S_STEP;
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component c)
{
    GET_INSTANCE(c, "fmi2Terminate");
    if (!allowed(I, "fmi2Terminate", M_STEP)) return fmi2Error;
    I->mode = S_TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component c)
{
    GET_INSTANCE(c, "fmi2Reset");
    char err[1024] = "";
    if (!mbs_sim_init(I->sim, I->sim_size, I->m->ti, I->m->n_ti, I->m->tf, I->m->n_tf, err, sizeof err)) {
        logf_(I, fmi2Error, "fmi2Reset: %s", err);
        return fmi2Error;
    }
    set_starts(I);
    I->have_ref = 0;
    I->n_discards = 0;
    I->mode = S_INSTANTIATED;
    return fmi2OK;
}

/* ---- values ------------------------------------------------------------------------------- */

static int vr_ok(Instance *I, const char *fn, const fmi2ValueReference vr[], size_t nvr, const void *value)
{
    if (nvr == 0) return 1;
    if (!vr || !value) {
        logf_(I, fmi2Error, "%s: %s is NULL with nvr = %lu", fn, !vr ? "vr" : "value", (unsigned long)nvr);
        return 0;
    }
    return 1;
}

static const mbsfmu_var *lookup(Instance *I, const char *fn, fmi2ValueReference vr, char type)
{
    if (vr >= I->m->n_vars) {
        logf_(I, fmi2Error, "%s: unknown value reference %u (this FMU has %lu variables)", fn, (unsigned)vr,
              (unsigned long)I->m->n_vars);
        return NULL;
    }
    const mbsfmu_var *v = &I->m->vars[vr];
    if (v->type != type) {
        logf_(I, fmi2Error, "%s: %s (value reference %u) is of type %s", fn, v->name, (unsigned)vr,
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

/* the engine's arrays one fmi2Get call reads, each fetched (and computed, if lazy) at its first use */
typedef struct {
    const double *x, *u, *qdd;
    const mbs_invariants *inv;
    int applied;                                              /* apply_params_quietly done */
} Fetched;

#define FETCH(f, field, call) ((f)->field ? (f)->field : ((f)->field = (call)))

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
    case MBSFMU_V_X: return FETCH(f, x, mbs_sim_x(s))[v->a];
    case MBSFMU_V_QDD: return FETCH(f, qdd, mbs_sim_qdd(s))[v->a];
    case MBSFMU_V_ENERGY: return FETCH(f, x, mbs_sim_x(s))[I->sz.nx - 2 + v->a];
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
        const double *x = FETCH(f, x, mbs_sim_x(s));
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

static fmi2Status get_values(fmi2Component c, const char *fn, char type, const fmi2ValueReference vr[], size_t nvr,
                             fmi2Real *real, fmi2Integer *integer)
{
    GET_INSTANCE(c, fn);
    if (!allowed(I, fn, M_INIT | M_STEP | M_TERM)) return fmi2Error;
    if (!vr_ok(I, fn, vr, nvr, type == 'R' ? (const void *)real : (const void *)integer)) return fmi2Error;
    int need_apply = 0, need_qdd = 0, need_inv = 0;
    for (size_t k = 0; k < nvr; k++) {
        const Source *src = vr[k] < I->m->n_vars ? &I->src[vr[k]] : NULL;
        if (!src || src->type != type) {
            lookup(I, fn, vr[k], type);     /* says what is wrong */
            return fmi2Error;
        }
        need_apply |= !src->param;
        need_qdd |= src->base == SRC_QDD;
        need_inv |= src->base == SRC_INV;
    }
    Fetched f = {NULL, NULL, NULL, NULL, 0};
    if (type == 'R') {                  /* value_of's first cases without its dispatch: the same values */
        if (need_apply) {
            apply_params_quietly(I);
            f.applied = 1;
        }
        const double *base[4] = {NULL, FETCH(&f, x, mbs_sim_x(I->sim)), FETCH(&f, u, mbs_sim_u(I->sim)),
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
        return fmi2OK;
    }
    for (size_t k = 0; k < nvr; k++) integer[k] = (fmi2Integer)value_of(I, vr[k], &f);
    return fmi2OK;
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[])
{
    return get_values(c, "fmi2GetReal", 'R', vr, nvr, value, NULL);
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Integer value[])
{
    return get_values(c, "fmi2GetInteger", 'I', vr, nvr, NULL, value);
}

/* why value x cannot be set to variable v now, or NULL */
static const char *set_problem(Instance *I, const mbsfmu_var *v, double x, char *buf, size_t n)
{
    if (v->causality == 'o') {
        snprintf(buf, n, "%s is an output and cannot be set", v->name);
    } else if (v->causality == 'p' && I->mode != S_INSTANTIATED && I->mode != S_INIT) {
        snprintf(buf, n, "parameter %s is fixed: set it before fmi2ExitInitializationMode", v->name);
    } else if (v->causality == 'i' && I->mode == S_TERMINATED) {
        snprintf(buf, n, "input %s cannot be set after fmi2Terminate", v->name);
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

static fmi2Status set_values(fmi2Component c, const char *fn, char type, const fmi2ValueReference vr[], size_t nvr,
                             const fmi2Real *real, const fmi2Integer *integer)
{
    GET_INSTANCE(c, fn);
    char buf[1024];
    if (!allowed(I, fn, M_INST | M_INIT | M_STEP)) return fmi2Error;
    if (!vr_ok(I, fn, vr, nvr, type == 'R' ? (const void *)real : (const void *)integer)) return fmi2Error;
    /* check everything first: a rejected call changes nothing */
    for (size_t k = 0; k < nvr; k++) {
        const mbsfmu_var *v = lookup(I, fn, vr[k], type);
        if (!v) return fmi2Error;
        double x = type == 'R' ? real[k] : (double)integer[k];
        const char *why = set_problem(I, v, x, buf, sizeof buf);
        if (why) {
            logf_(I, fmi2Error, "%s: %s; %s keeps its previous value", fn, why, v->name);
            return fmi2Error;
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
            }
        }
    }
    return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[])
{
    return set_values(c, "fmi2SetReal", 'R', vr, nvr, value, NULL);
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Integer value[])
{
    return set_values(c, "fmi2SetInteger", 'I', vr, nvr, NULL, value);
}

/* no Boolean or String variables: any value reference is unknown */
static fmi2Status no_such_type(fmi2Component c, const char *fn, const fmi2ValueReference vr[], size_t nvr,
                               const void *value)
{
    GET_INSTANCE(c, fn);
    if (!vr_ok(I, fn, vr, nvr, value)) return fmi2Error;
    if (nvr == 0) return fmi2OK;
    if (vr[0] < I->m->n_vars)
        logf_(I, fmi2Error, "%s: %s (value reference %u) is of type %s", fn, I->m->vars[vr[0]].name, (unsigned)vr[0],
              I->m->vars[vr[0]].type == 'R' ? "Real" : "Integer");
    else
        logf_(I, fmi2Error, "%s: unknown value reference %u (this FMU has no Boolean or String variables)", fn,
              (unsigned)vr[0]);
    return fmi2Error;
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Boolean value[])
{
    return no_such_type(c, "fmi2GetBoolean", vr, nvr, value);
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2String value[])
{
    return no_such_type(c, "fmi2GetString", vr, nvr, value);
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Boolean value[])
{
    return no_such_type(c, "fmi2SetBoolean", vr, nvr, value);
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2String value[])
{
    return no_such_type(c, "fmi2SetString", vr, nvr, value);
}

/* ---- stepping ----------------------------------------------------------------------------- */

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize,
                      fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    GET_INSTANCE(c, "fmi2DoStep");
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!allowed(I, "fmi2DoStep", M_STEP)) return fmi2Error;
    double t = currentCommunicationPoint, dt = communicationStepSize;
    if (!isfinite(t)) {
        logf_(I, fmi2Error, "fmi2DoStep: currentCommunicationPoint %g rejected: must be finite", t);
        return fmi2Error;
    }
    if (!isfinite(dt) || dt <= 0.0 || dt > MAX_STEP) {
        logf_(I, fmi2Error, "fmi2DoStep: communicationStepSize %.17g s rejected: must be finite, > 0 and <= %g s", dt,
              MAX_STEP);
        return fmi2Error;
    }
    double h_max = solver_setting(I, 1);
    if (h_max > 0.0 && dt / h_max > MAX_SUBSTEPS) {      /* rk4: ceil(dt / h_max) steps; dop853: at least */
        logf_(I, fmi2Error, "fmi2DoStep: communicationStepSize %.17g s rejected: %.3g or more steps of solver.h_max "
              "= %.17g s (at most %g per communication step)", dt, ceil(dt / h_max), h_max, MAX_SUBSTEPS);
        return fmi2Error;
    }
    double now = mbs_sim_time(I->sim);
    if (fabs(t - now) > TIME_EPS * fmax(1.0, fabs(now))) {
        logf_(I, fmi2Error, "fmi2DoStep: communication point t = %.17g s rejected: the FMU's state is at t = %.17g s "
              "(difference %.3g s, more than round-off %.3g s); to go back, restore a state with fmi2SetFMUstate",
              t, now, t - now, TIME_EPS * fmax(1.0, fabs(now)));
        return fmi2Error;
    }
    mbs_sim_set_time(I->sim, t);
    int rc = mbs_sim_step(I->sim, dt);
    if (rc != MBS_OK) {
        I->n_discards++;
        mbs_sim_set_time(I->sim, t);
        logf_(I, fmi2Discard, "fmi2DoStep: step from t = %.17g s by %.17g s discarded: %s", t, dt,
              mbs_sim_message(I->sim));
        return fmi2Discard;
    }
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component c)
{
    GET_INSTANCE(c, "fmi2CancelStep");
    logf_(I, fmi2Error, "fmi2CancelStep: fmi2DoStep always completes before returning (no asynchronous steps)");
    return fmi2Error;
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[])
{
    GET_INSTANCE(c, "fmi2SetRealInputDerivatives");
    (void)vr; (void)order; (void)value;
    if (nvr == 0) return fmi2OK;
    logf_(I, fmi2Error, "fmi2SetRealInputDerivatives: not supported (canInterpolateInputs = false)");
    return fmi2Error;
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[])
{
    GET_INSTANCE(c, "fmi2GetRealOutputDerivatives");
    (void)vr; (void)order; (void)value;
    if (nvr == 0) return fmi2OK;
    logf_(I, fmi2Error, "fmi2GetRealOutputDerivatives: not supported (maxOutputDerivativeOrder = 0)");
    return fmi2Error;
}

/* FMI 2.0 section 2.1.9: dvUnknown = (d h / d v_known) dvKnown, in this Co-Simulation FMU the
 * Real outputs (the ModelStructure Outputs; in initialization mode its InitialUnknowns, the same
 * variables) with respect to the Real inputs, at the current state and inputs. Only the qdd outputs
 * depend on the inputs at a communication point: d(qdd)/du du = M^-1 (B du + J^T f_u du), exactly
 * (mbs_input_response); every other output is a function of the state, which the inputs change only
 * through a step (derivative 0). Parameters are knowns only in initialization mode; derivatives with
 * respect to them are not provided (fmi2Error naming the parameter). */
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[], size_t nUnknown,
                                        const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                        const fmi2Real dvKnown[], fmi2Real dvUnknown[])
{
    const char *fn = "fmi2GetDirectionalDerivative";
    GET_INSTANCE(c, "fmi2GetDirectionalDerivative");
    if (!allowed(I, fn, M_INIT | M_STEP | M_TERM)) return fmi2Error;
    const char *null = nUnknown && !vUnknown_ref ? "vUnknown_ref" : nUnknown && !dvUnknown ? "dvUnknown" :
                       nKnown && !vKnown_ref ? "vKnown_ref" : nKnown && !dvKnown ? "dvKnown" : NULL;
    if (null) {
        logf_(I, fmi2Error, "%s: %s is NULL (nUnknown = %lu, nKnown = %lu)", fn, null, (unsigned long)nUnknown,
              (unsigned long)nKnown);
        return fmi2Error;
    }
    int need_qdd = 0;
    for (size_t k = 0; k < nUnknown; k++) {
        const mbsfmu_var *v = lookup(I, fn, vUnknown_ref[k], 'R');
        if (!v) return fmi2Error;
        if (v->causality != 'o') {
            logf_(I, fmi2Error, "%s: unknown %s (value reference %u) is not an output (the unknowns are the Real "
                  "outputs of the ModelStructure)", fn, v->name, (unsigned)vUnknown_ref[k]);
            return fmi2Error;
        }
        need_qdd |= v->kind == MBSFMU_V_QDD;
    }
    for (size_t k = 0; k < nKnown; k++) {
        const mbsfmu_var *v = lookup(I, fn, vKnown_ref[k], 'R');
        if (!v) return fmi2Error;
        if (v->causality != 'i') {
            logf_(I, fmi2Error, "%s: known %s (value reference %u) is %s (the knowns are the Real inputs)", fn,
                  v->name, (unsigned)vKnown_ref[k], v->causality == 'p' ? "a parameter: derivatives with respect "
                  "to parameters are not provided" : "an output");
            return fmi2Error;
        }
        if (!isfinite(dvKnown[k])) {
            logf_(I, fmi2Error, "%s: dvKnown[%lu] = %g for %s rejected: seeds must be finite", fn, (unsigned long)k,
                  dvKnown[k], v->name);
            return fmi2Error;
        }
    }
    if (!need_qdd || nKnown == 0) {
        for (size_t k = 0; k < nUnknown; k++) dvUnknown[k] = 0.0;
        return fmi2OK;
    }
    int n_u = I->sz.n_u, nv = I->sz.nv;
    double *du = (double *)alloc(I, (size_t)(n_u + nv), sizeof(double)), *dqdd = du + n_u;
    if (!du) {
        logf_(I, fmi2Error, "%s: out of memory", fn);
        return fmi2Error;
    }
    for (int j = 0; j < n_u; j++) du[j] = 0.0;
    for (size_t k = 0; k < nKnown; k++) du[I->m->vars[vKnown_ref[k]].a] += dvKnown[k];   /* a known twice: seeds add */
    apply_params_quietly(I);          /* as the outputs: the current parameters if they make a valid model */
    if (mbs_input_response(I->sim, mbs_sim_x(I->sim), du, dqdd) != MBS_OK) {
        logf_(I, fmi2Error, "%s: %s", fn, mbs_sim_message(I->sim));
        I->cb.freeMemory(du);
        return fmi2Error;
    }
    for (size_t k = 0; k < nUnknown; k++) {
        const mbsfmu_var *v = &I->m->vars[vUnknown_ref[k]];
        dvUnknown[k] = v->kind == MBSFMU_V_QDD ? dqdd[v->a] : 0.0;
    }
    I->cb.freeMemory(du);
    return fmi2OK;
}

static fmi2Status status_query(fmi2Component c, const char *fn, const void *value)
{
    GET_INSTANCE(c, fn);
    if (!value) {
        logf_(I, fmi2Error, "%s: value is NULL", fn);
        return fmi2Error;
    }
    return fmi2OK;
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value)
{
    fmi2Status rc = status_query(c, "fmi2GetStatus", value);
    if (rc != fmi2OK) return rc;
    if (s != fmi2DoStepStatus) {
        logf_(live(c), fmi2Discard, "fmi2GetStatus: status kind %d is not available", (int)s);
        return fmi2Discard;
    }
    *value = fmi2OK;                   /* fmi2DoStep is synchronous: the last step is complete */
    return fmi2OK;
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value)
{
    fmi2Status rc = status_query(c, "fmi2GetRealStatus", value);
    if (rc != fmi2OK) return rc;
    if (s != fmi2LastSuccessfulTime) {
        logf_(live(c), fmi2Discard, "fmi2GetRealStatus: status kind %d is not available", (int)s);
        return fmi2Discard;
    }
    *value = mbs_sim_time(live(c)->sim);
    return fmi2OK;
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value)
{
    fmi2Status rc = status_query(c, "fmi2GetIntegerStatus", value);
    if (rc != fmi2OK) return rc;
    logf_(live(c), fmi2Discard, "fmi2GetIntegerStatus: status kind %d is not available", (int)s);
    return fmi2Discard;
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    fmi2Status rc = status_query(c, "fmi2GetBooleanStatus", value);
    if (rc != fmi2OK) return rc;
    if (s != fmi2Terminated) {
        logf_(live(c), fmi2Discard, "fmi2GetBooleanStatus: status kind %d is not available", (int)s);
        return fmi2Discard;
    }
    *value = fmi2False;                /* the FMU never asks to end the simulation */
    return fmi2OK;
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{
    fmi2Status rc = status_query(c, "fmi2GetStringStatus", value);
    if (rc != fmi2OK) return rc;
    logf_(live(c), fmi2Discard, "fmi2GetStringStatus: status kind %d is not available", (int)s);
    return fmi2Discard;
}

/* ---- FMU state ---------------------------------------------------------------------------- */

static void free_state_memory(Instance *I, FmuState *S)
{
    S->magic = FREED_MAGIC;
    if (S->sim) I->cb.freeMemory(S->sim);
    if (S->par) I->cb.freeMemory(S->par);
    I->cb.freeMemory(S);
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
        if (I->states) I->cb.freeMemory(I->states);
        I->states = grown;
        I->cap_states = cap;
    }
    FmuState *S = (FmuState *)alloc(I, 1, sizeof(FmuState));
    if (!S) return NULL;
    memset(S, 0, sizeof *S);
    S->sim = (mbs_sim *)alloc(I, I->sim_size, 1);
    S->par = (double *)alloc(I, I->m->n_vars, sizeof(double));
    if (!S->sim || !S->par) {
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
}

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *FMUstate)
{
    GET_INSTANCE(c, "fmi2GetFMUstate");
    if (!FMUstate) {
        logf_(I, fmi2Error, "fmi2GetFMUstate: FMUstate is NULL");
        return fmi2Error;
    }
    FmuState *S;
    if (*FMUstate) {                   /* overwrite a state the host already has */
        if (find_state(I, *FMUstate) < 0) {
            logf_(I, fmi2Error, "fmi2GetFMUstate: *FMUstate is not NULL and not a live state of this instance");
            return fmi2Error;
        }
        S = (FmuState *)*FMUstate;
    } else {
        S = new_state(I);
        if (!S) {
            logf_(I, fmi2Error, "fmi2GetFMUstate: out of memory");
            return fmi2Error;
        }
    }
    save_into(I, S);
    *FMUstate = S;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate)
{
    GET_INSTANCE(c, "fmi2SetFMUstate");
    if (!allowed(I, "fmi2SetFMUstate", M_INST | M_INIT | M_STEP | M_TERM)) return fmi2Error;
    if (!FMUstate || find_state(I, FMUstate) < 0 || ((FmuState *)FMUstate)->magic != STATE_MAGIC) {
        logf_(I, fmi2Error, "fmi2SetFMUstate: not a live FMU state of this instance (NULL, freed, or made by "
              "another instance or FMU)");
        return fmi2Error;
    }
    FmuState *S = (FmuState *)FMUstate;
    mbs_sim_copy(I->sim, S->sim);
    memcpy(I->par, S->par, I->m->n_vars * sizeof(double));
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
    return fmi2OK;
}

/* fmi2FreeFMUstate's work; the FMU's own calls come here, never through the exported name, which
 * a host's dynamic linker may bind to another FMU's function of the same name (interposition) */
static fmi2Status free_fmu_state(Instance *I, fmi2FMUstate *FMUstate)
{
    if (!FMUstate) {
        logf_(I, fmi2Error, "fmi2FreeFMUstate: FMUstate is NULL");
        return fmi2Error;
    }
    if (!*FMUstate) return fmi2OK;     /* FMI 2.0: freeing a NULL state does nothing */
    long k = find_state(I, *FMUstate);
    if (k < 0) {
        logf_(I, fmi2Error, "fmi2FreeFMUstate: not a live FMU state of this instance (already freed?)");
        return fmi2Error;
    }
    free_state_memory(I, I->states[k]);
    I->states[k] = I->states[--I->n_states];
    *FMUstate = NULL;
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *FMUstate)
{
    GET_INSTANCE(c, "fmi2FreeFMUstate");
    return free_fmu_state(I, FMUstate);
}

/* serialised state, little-endian as the machine (every target of this FMU is):
 *   "MBSFMUST" | u32 version | u32 total bytes | u64 model hash | u32 nx | u32 n_u | u32 n_vars
 *   | u32 mode | u32 have_ref | u32 params_dirty | f64 t | f64 H0[3] | f64 E0, KE0, PE0, S0 | i64 n_discards
 *   | i64 n_steps | i64 n_rhs | f64 h_last | f64 x[nx] | f64 u[n_u] | f64 par[n_vars] | u64 checksum
 * checksum: FNV-1a 64 over every byte before it. */
#define BLOB_HEAD (8 + 4 + 4 + 8 + 4 * 6 + 8 + 24 + 8 + 24 + 8 + 8 + 8 + 8)

static size_t blob_size(const Instance *I)
{
    return BLOB_HEAD + 8 * ((size_t)I->sz.nx + (size_t)I->sz.n_u + I->m->n_vars) + 8;
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

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t *size)
{
    GET_INSTANCE(c, "fmi2SerializedFMUstateSize");
    if (!size || !FMUstate || find_state(I, FMUstate) < 0) {
        logf_(I, fmi2Error, "fmi2SerializedFMUstateSize: %s", !size ? "size is NULL" :
              "not a live FMU state of this instance");
        return fmi2Error;
    }
    *size = blob_size(I);
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[], size_t size)
{
    GET_INSTANCE(c, "fmi2SerializeFMUstate");
    if (!FMUstate || find_state(I, FMUstate) < 0) {
        logf_(I, fmi2Error, "fmi2SerializeFMUstate: not a live FMU state of this instance");
        return fmi2Error;
    }
    size_t n = blob_size(I);
    if (!serializedState || size < n) {
        logf_(I, fmi2Error, "fmi2SerializeFMUstate: the buffer is %s (%lu bytes needed, see "
              "fmi2SerializedFMUstateSize)", serializedState ? "too small" : "NULL", (unsigned long)n);
        return fmi2Error;
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
    put_f64(&w, mbs_sim_time(S->sim));
    for (int k = 0; k < 3; k++) put_f64(&w, S->H0[k]);
    put_f64(&w, S->E0);
    put_f64(&w, S->KE0);
    put_f64(&w, S->PE0);
    put_f64(&w, S->S0);
    put_i64(&w, S->n_discards);
    put_i64(&w, n_steps);
    put_i64(&w, n_rhs);
    put_f64(&w, h_last);
    put(&w, mbs_sim_x(S->sim), 8 * (size_t)sz.nx);
    put(&w, mbs_sim_u(S->sim), 8 * (size_t)sz.n_u);
    put(&w, S->par, 8 * I->m->n_vars);
    uint64_t h = fnv1a((const unsigned char *)serializedState, n - 8);
    put(&w, &h, 8);
    return fmi2OK;
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                   fmi2FMUstate *FMUstate)
{
    GET_INSTANCE(c, "fmi2DeSerializeFMUstate");
    const char *fn = "fmi2DeSerializeFMUstate";
    size_t n = blob_size(I);
    if (!serializedState || !FMUstate) {
        logf_(I, fmi2Error, "%s: %s is NULL", fn, !serializedState ? "serializedState" : "FMUstate");
        return fmi2Error;
    }
    if (*FMUstate && find_state(I, *FMUstate) < 0) {
        logf_(I, fmi2Error, "%s: *FMUstate is not NULL and not a live state of this instance", fn);
        return fmi2Error;
    }
    const unsigned char *b = (const unsigned char *)serializedState;
    if (size < 16 || memcmp(b, BLOB_MAGIC, 8) != 0) {
        logf_(I, fmi2Error, "%s: not an mbsfmu FMU state (%lu bytes, no mbsfmu header)", fn, (unsigned long)size);
        return fmi2Error;
    }
    rcur r = {b + 8};
    uint32_t version = get_u32(&r), total = get_u32(&r);
    if (version != BLOB_VERSION) {
        logf_(I, fmi2Error, "%s: state format version %u, this FMU reads version %u", fn, version, BLOB_VERSION);
        return fmi2Error;
    }
    if (size != n || total != n) {
        logf_(I, fmi2Error, "%s: %lu bytes given, header says %u, this model's state has %lu bytes (truncated or "
              "another model's state)", fn, (unsigned long)size, total, (unsigned long)n);
        return fmi2Error;
    }
    uint64_t hash, check;
    get(&r, &hash, 8);
    memcpy(&check, b + n - 8, 8);
    if (hash != I->sz.model_hash) {
        logf_(I, fmi2Error, "%s: the state is of another model (model hash %016llx, this FMU's %016llx)", fn,
              (unsigned long long)hash, (unsigned long long)I->sz.model_hash);
        return fmi2Error;
    }
    if (check != fnv1a(b, n - 8)) {
        logf_(I, fmi2Error, "%s: checksum mismatch (the state was altered or damaged)", fn);
        return fmi2Error;
    }
    uint32_t nx = get_u32(&r), n_u = get_u32(&r), n_vars = get_u32(&r);
    uint32_t mode = get_u32(&r), have_ref = get_u32(&r), params_dirty = get_u32(&r);
    if (nx != (uint32_t)I->sz.nx || n_u != (uint32_t)I->sz.n_u || n_vars != (uint32_t)I->m->n_vars ||
        mode > S_TERMINATED || have_ref > 1 || params_dirty > 1) {
        logf_(I, fmi2Error, "%s: the state's sizes or flags do not fit this model", fn);
        return fmi2Error;
    }
    double t = get_f64(&r), H0[3], E0, KE0, PE0, S0;
    for (int k = 0; k < 3; k++) H0[k] = get_f64(&r);
    E0 = get_f64(&r);
    KE0 = get_f64(&r);
    PE0 = get_f64(&r);
    S0 = get_f64(&r);
    long long n_discards = get_i64(&r), n_steps = get_i64(&r), n_rhs = get_i64(&r);
    double h_last = get_f64(&r);
    const unsigned char *px = r.p, *pu = px + 8 * (size_t)nx, *pp = pu + 8 * (size_t)n_u;
    /* build the state in a scratch FMU state, so a failure leaves *FMUstate untouched */
    FmuState *S = new_state(I);
    if (!S) {
        logf_(I, fmi2Error, "%s: out of memory", fn);
        return fmi2Error;
    }
    char err[1024] = "", why[1024 + 128] = "";   /* why: err behind a short prefix */
    int ok = isfinite(t) && n_discards >= 0 && n_steps >= 0 && n_rhs >= 0;
    if (!ok) snprintf(why, sizeof why, "non-finite time or negative counters");
    memcpy(S->par, pp, 8 * (size_t)n_vars);
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
        double *xs = (double *)alloc(I, nx ? nx : 1, sizeof(double));
        if (!xs) {
            snprintf(why, sizeof why, "out of memory");
            ok = 0;
        } else {
            memcpy(xs, px, 8 * (size_t)nx);
            if (mbs_sim_set_x(S->sim, xs, 2, err, sizeof err) != MBS_OK) {
                snprintf(why, sizeof why, "its state vector is invalid: %s", err);
                ok = 0;
            }
            I->cb.freeMemory(xs);
        }
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
        fmi2FMUstate tmp = S;
        free_fmu_state(I, &tmp);
        logf_(I, fmi2Error, "%s: the state is refused: %s", fn, why);
        return fmi2Error;
    }
    mbs_sim_set_time(S->sim, t);
    mbs_sim_set_stats(S->sim, n_steps, n_rhs, h_last);
    S->mode = (mode_t_)mode;
    S->have_ref = (int)have_ref;
    S->params_dirty = (int)params_dirty;
    memcpy(S->H0, H0, sizeof H0);
    S->E0 = E0;
    S->KE0 = KE0;
    S->PE0 = PE0;
    S->S0 = S0;
    S->n_discards = n_discards;
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
        fmi2FMUstate tmp = S;
        free_fmu_state(I, &tmp);
    } else {
        *FMUstate = S;
    }
    return fmi2OK;
}
