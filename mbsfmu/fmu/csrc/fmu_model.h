/* fmu_model.h - what the generated per-model file (mbsfmu_model.c, written by mbsfmu/native/fmu.py)
 * gives the FMU's instance core fmu_instance.c: the model's constant tables for the core, and the
 * variable map (value reference -> where the value lives), in value-reference order, exactly the
 * variables of mbsfmu/fmu/variables.py's variable_table. */
#ifndef MBSFMU_FMU_MODEL_H
#define MBSFMU_FMU_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "mbs_names.h" /* FMI2_FUNCTION_PREFIX on MBSFMU_MODEL and the tables (source FMUs) */

/* variable source kinds (variable_table's FmuVariable.source[0]) */
enum {
    MBSFMU_V_SOLVER = 1,   /* a: 0 method (Integer), 1 h_max [s], 2 rtol, 3 atol */
    MBSFMU_V_PARAM = 2,    /* a: MBS_P_* kind, b: index, c: component (mbs_sim_set_param); an
                              off-diagonal inertia entry sets one component, the core keeps I symmetric */
    MBSFMU_V_INPUT = 3,    /* a: input k */
    MBSFMU_V_X = 4,        /* a: state entry k */
    MBSFMU_V_QDD = 5,      /* a: qdd entry k */
    MBSFMU_V_INV = 6,      /* a: MBSFMU_INV_*, b: component */
    MBSFMU_V_ENERGY = 7,   /* a: 0 W_in, 1 W_diss [J] (the last two state entries) */
    MBSFMU_V_DRIFT = 8,    /* a: MBSFMU_DRIFT_* */
    MBSFMU_V_STAT = 9,     /* a: MBSFMU_STAT_* */
    MBSFMU_V_DER = 10      /* a: state entry k: its time derivative (Model Exchange, host_state.c) */
};
enum { MBSFMU_INV_P_SYS = 0, MBSFMU_INV_H_SYS, MBSFMU_INV_R, MBSFMU_INV_RDOT, MBSFMU_INV_KE, MBSFMU_INV_PE,
       MBSFMU_INV_E };
/* drift: |H - H0| and |H - H0| / max(S0, S) (S: the magnitude scale of H_sys, mbs_invariants.H_scale);
 * E - W_in - W_diss - E0 and its absolute value over max(KE0, KE, |PE - PE0|, |W_in|, |W_diss|)
 * (variables.py's drift outputs) */
enum { MBSFMU_DRIFT_H_ABS = 0, MBSFMU_DRIFT_H_REL, MBSFMU_DRIFT_E_ABS, MBSFMU_DRIFT_E_REL };
enum { MBSFMU_STAT_N_STEPS = 0, MBSFMU_STAT_N_RHS, MBSFMU_STAT_N_DISCARDS, MBSFMU_STAT_H_LAST };

typedef struct {
    const char *name;      /* the FMI variable name (for log messages) */
    char type;             /* 'R' Real, 'I' Integer */
    char causality;        /* 'p' parameter, 'i' input, 'o' output, 'l' local */
    int kind, a, b, c;     /* MBSFMU_V_* and its arguments */
    double start, min, max;  /* min/max: NAN = none */
} mbsfmu_var;

/* an FMI 3.0 variable (mbsfmu/fmu/fmi3.py): kind 'R' Float64, 'I' Int32 or 'T' the independent variable
 * time; its n elements are the FMI 2.0 scalar variables scalars[0..n) (value references of vars) */
typedef struct {
    const char *name;
    char kind;
    size_t n;
    const unsigned *scalars;
} mbsfmu_var3;

typedef struct {
    const char *guid, *identifier;
    const int32_t *ti;
    size_t n_ti;
    const double *tf;
    size_t n_tf;
    const mbsfmu_var *vars;
    size_t n_vars;
    const char *const *notes;  /* the model reader's remarks (Model.notes), logged at instantiation */
    size_t n_notes;
    const mbsfmu_var3 *vars3;  /* the FMI 3.0 variables, in value-reference order */
    size_t n_vars3;
} mbsfmu_model;

extern const mbsfmu_model MBSFMU_MODEL;

#endif
