/* fmu_instance.h - the FMU's instance core (fmu_instance.c), shared by the entry files of the FMI
 * standards (fmi2_functions.c): the instance with its state machine, the value table, logging,
 * parameters, the co-simulation step, the Model Exchange state and derivatives, FMU states and
 * their serialised form. The core includes no FMI header: the entry files translate their
 * standard's types and calls, and nothing else.
 *
 * Status codes are FMI's (fmi2Status and fmi3Status share them: OK, Warning, Discard, Error,
 * Fatal). Every function taking a function name `fn` uses it in its log messages, so a message
 * names the call the host made.
 */
#ifndef MBSFMU_FMU_INSTANCE_H
#define MBSFMU_FMU_INSTANCE_H

#include <stddef.h>

#include "fmu_model.h"
#include "mbs_core.h"

#ifdef FMI2_FUNCTION_PREFIX /* two source FMUs in one program (mbs_names.h) */
#define mbsfmu_instantiate MBS_PREFIXED(mbsfmu_instantiate)
#define mbsfmu_free MBS_PREFIXED(mbsfmu_free)
#define mbsfmu_live MBS_PREFIXED(mbsfmu_live)
#define mbsfmu_log MBS_PREFIXED(mbsfmu_log)
#define mbsfmu_allowed MBS_PREFIXED(mbsfmu_allowed)
#define mbsfmu_set_debug_logging MBS_PREFIXED(mbsfmu_set_debug_logging)
#define mbsfmu_setup_experiment MBS_PREFIXED(mbsfmu_setup_experiment)
#define mbsfmu_enter_initialization MBS_PREFIXED(mbsfmu_enter_initialization)
#define mbsfmu_exit_initialization MBS_PREFIXED(mbsfmu_exit_initialization)
#define mbsfmu_terminate MBS_PREFIXED(mbsfmu_terminate)
#define mbsfmu_reset MBS_PREFIXED(mbsfmu_reset)
#define mbsfmu_get_values MBS_PREFIXED(mbsfmu_get_values)
#define mbsfmu_set_values MBS_PREFIXED(mbsfmu_set_values)
#define mbsfmu_no_such_type MBS_PREFIXED(mbsfmu_no_such_type)
#define mbsfmu_do_step MBS_PREFIXED(mbsfmu_do_step)
#define mbsfmu_directional_derivative MBS_PREFIXED(mbsfmu_directional_derivative)
#define mbsfmu_time MBS_PREFIXED(mbsfmu_time)
#define mbsfmu_set_time MBS_PREFIXED(mbsfmu_set_time)
#define mbsfmu_set_states MBS_PREFIXED(mbsfmu_set_states)
#define mbsfmu_get_states MBS_PREFIXED(mbsfmu_get_states)
#define mbsfmu_get_derivatives MBS_PREFIXED(mbsfmu_get_derivatives)
#define mbsfmu_get_nominals MBS_PREFIXED(mbsfmu_get_nominals)
#define mbsfmu_get_event_indicators MBS_PREFIXED(mbsfmu_get_event_indicators)
#define mbsfmu_completed_integrator_step MBS_PREFIXED(mbsfmu_completed_integrator_step)
#define mbsfmu_enter_event_mode MBS_PREFIXED(mbsfmu_enter_event_mode)
#define mbsfmu_new_discrete_states MBS_PREFIXED(mbsfmu_new_discrete_states)
#define mbsfmu_enter_continuous_time_mode MBS_PREFIXED(mbsfmu_enter_continuous_time_mode)
#define mbsfmu_get_state MBS_PREFIXED(mbsfmu_get_state)
#define mbsfmu_set_state MBS_PREFIXED(mbsfmu_set_state)
#define mbsfmu_free_state MBS_PREFIXED(mbsfmu_free_state)
#define mbsfmu_serialized_size MBS_PREFIXED(mbsfmu_serialized_size)
#define mbsfmu_serialize MBS_PREFIXED(mbsfmu_serialize)
#define mbsfmu_deserialize MBS_PREFIXED(mbsfmu_deserialize)
#endif

enum { FMU_OK = 0, FMU_WARNING = 1, FMU_DISCARD = 2, FMU_ERROR = 3, FMU_FATAL = 4 };

/* the interface an instance was made for */
typedef enum { FMU_CO_SIMULATION = 0, FMU_MODEL_EXCHANGE = 1 } fmu_kind;

/* the state machine of FMI 2.0 (sections 3.2.3 and 4.2.4): co-simulation steps in S_STEP, model
 * exchange alternates between event mode (S_EVENT) and continuous-time mode (S_CONT) */
typedef enum { S_INSTANTIATED = 0, S_INIT, S_STEP, S_EVENT, S_CONT, S_TERMINATED } fmu_mode;
#define M_INST (1u << S_INSTANTIATED)
#define M_INIT (1u << S_INIT)
#define M_STEP (1u << S_STEP)
#define M_EVENT (1u << S_EVENT)
#define M_CONT (1u << S_CONT)
#define M_TERM (1u << S_TERMINATED)

typedef struct Instance Instance;

/* the host's services as the entry file adapts them: log (status, the category of the
 * modelDescription's LogCategories, the message, already formatted), memory */
typedef struct {
    void (*log)(const Instance *I, int status, const char *category, const char *message);
    void *(*alloc)(size_t n, size_t size);   /* zeroed memory, as calloc */
    void (*free)(void *p);
} fmu_host;

/* where a variable's value is read (fmu_instance.c sources()) */
typedef struct Source {
    int base;
    char type, param;                   /* the variable's type ('R', 'I') and 1 if a parameter */
    size_t off;
} Source;

struct FmuState;

struct Instance {
    uint32_t magic;
    fmu_kind kind;
    fmu_mode mode;
    const char *standard;       /* "FMI 2.0 Co-Simulation" ...: named in call-sequence errors */
    const char *api;            /* "fmi2", "fmi3": the prefix of the function names messages cite */
    fmu_host host;
    void *host_data;            /* the entry file's copy of its host callbacks (host_bytes at instantiation) */
    char *name;
    int logging_on;
    const mbsfmu_model *m;
    mbs_sim *sim;
    size_t sim_size;
    mbs_sizes sz;
    double *par;                /* (n_vars,) values of the parameters (other entries unused) */
    Source *src;                /* (n_vars,) where each variable's value lives */
    double *xh;                 /* (nx,) Model Exchange: the continuous states as the host set them */
    double *dx;                 /* (nx,) the derivatives of the states (der(...) variables) */
    double *work;               /* (n_u + nv) scratch of the directional derivative */
    unsigned *vr3;              /* (n3,) the FMI 3.0 entry file's scalar value references of one call */
    double *val3;               /* (n3,) and their values */
    size_t n3;                  /* 3 n_vars + 8 */
    /* Model Exchange of a tree (else NULL): the Jacobian of the state derivatives (state_jacobian.c),
     * allocated at instantiation, computed at most once per state, inputs and parameters */
    double *jac_work;           /* (mbs_state_jacobian_work) the core's work */
    double *jac_A, *jac_B;      /* (nx x nx), (nx x n_u): df/dx, df/du at jac_x, jac_u */
    double *jac_x, *jac_u;      /* (nx), (n_u): the state and inputs jac_A, jac_B are at */
    double *seed;               /* (nx + n_u): the seeds of one call by state and input */
    int jac_valid;              /* jac_A, jac_B hold the Jacobian at jac_x, jac_u with the current parameters */
    int jac_missing;            /* a tree whose Jacobian memory could not be allocated (the rest works) */
    int params_dirty;           /* a parameter changed since the last mbs_sim_apply_params */
    int params_bad;             /* the current parameters do not make a valid model (logged once) */
    int have_ref;
    double H0[3], E0, KE0, PE0, S0;   /* drift references, taken at the end of initialisation */
    long long n_discards, n_events;
    struct FmuState **states;   /* live FMU states made by this instance */
    size_t n_states, cap_states;
    char err[4096];
};

/* ---- instances --------------------------------------------------------------------------- */
/* A new instance of the model in fmu_model.h for `kind`, or NULL (reason logged through host,
 * with host_data as the entry file's callbacks). token: the modelDescription's guid
 * (instantiationToken); resource_location: NULL, empty or a URI. host_bytes of host_data are
 * copied into the instance (I->host_data). */
Instance *mbsfmu_instantiate(const char *fn, const char *name, fmu_kind kind, const char *standard, const char *api,
                             const char *token,
                             const char *resource_location, const fmu_host *host, const void *host_data,
                             size_t host_bytes, int logging_on);
void mbsfmu_free(Instance *I);
/* the instance if c is a live one, else NULL (a freed or foreign pointer, or NULL) */
Instance *mbsfmu_live(void *c);
void mbsfmu_log(const Instance *I, int status, const char *fmt, ...);
/* 1 if the current mode is in mask, else 0 with the call-sequence error logged */
int mbsfmu_allowed(Instance *I, const char *fn, unsigned mask);
int mbsfmu_set_debug_logging(Instance *I, const char *fn, int on, size_t n, const char *const categories[]);
int mbsfmu_setup_experiment(Instance *I, const char *fn, int tolerance_defined, double tolerance, double start,
                            int stop_defined, double stop);
int mbsfmu_enter_initialization(Instance *I, const char *fn);
int mbsfmu_exit_initialization(Instance *I, const char *fn);
int mbsfmu_terminate(Instance *I, const char *fn);
int mbsfmu_reset(Instance *I, const char *fn);

/* ---- values (type 'R' Real, 'I' Integer) -------------------------------------------------- */
int mbsfmu_get_values(Instance *I, const char *fn, char type, const unsigned int vr[], size_t nvr, double *real,
                      int *integer);
int mbsfmu_set_values(Instance *I, const char *fn, char type, const unsigned int vr[], size_t nvr, const double *real,
                      const int *integer);
/* a type this FMU has no variables of (Boolean, String): every value reference is refused */
int mbsfmu_no_such_type(Instance *I, const char *fn, const unsigned int vr[], size_t nvr, const void *value);
/* dvUnknown = d(unknowns)/d(knowns) dvKnown at the current state (fmu_instance.c says which) */
int mbsfmu_directional_derivative(Instance *I, const char *fn, const unsigned int unknown[], size_t n_unknown,
                                  const unsigned int known[], size_t n_known, const double dv_known[],
                                  double dv_unknown[]);

/* ---- co-simulation ------------------------------------------------------------------------- */
int mbsfmu_do_step(Instance *I, const char *fn, double t, double dt);
double mbsfmu_time(const Instance *I);

/* ---- model exchange ------------------------------------------------------------------------ */
int mbsfmu_set_time(Instance *I, const char *fn, double t);
int mbsfmu_set_states(Instance *I, const char *fn, const double x[], size_t nx);
int mbsfmu_get_states(Instance *I, const char *fn, double x[], size_t nx);
int mbsfmu_get_derivatives(Instance *I, const char *fn, double dx[], size_t nx);
int mbsfmu_get_nominals(Instance *I, const char *fn, double nominal[], size_t nx);
int mbsfmu_get_event_indicators(Instance *I, const char *fn, double z[], size_t nz);
/* enter_event: 1 if the host must enter event mode now (the states drifted: see fmu_instance.c) */
int mbsfmu_completed_integrator_step(Instance *I, const char *fn, int *enter_event, int *terminate);
int mbsfmu_enter_event_mode(Instance *I, const char *fn);
/* states_changed: 1 if the event projected the states (the host reads them again) */
int mbsfmu_new_discrete_states(Instance *I, const char *fn, int *states_changed, int *terminate);
int mbsfmu_enter_continuous_time_mode(Instance *I, const char *fn);

/* ---- FMU states ---------------------------------------------------------------------------- */
int mbsfmu_get_state(Instance *I, const char *fn, void **state);
int mbsfmu_set_state(Instance *I, const char *fn, void *state);
int mbsfmu_free_state(Instance *I, const char *fn, void **state);
int mbsfmu_serialized_size(Instance *I, const char *fn, void *state, size_t *size);
int mbsfmu_serialize(Instance *I, const char *fn, void *state, char *out, size_t size);
int mbsfmu_deserialize(Instance *I, const char *fn, const char *in, size_t size, void **state);

#endif
