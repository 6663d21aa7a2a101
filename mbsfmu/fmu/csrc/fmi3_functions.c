/* fmi3_functions.c - the FMI 3.0 entry points (Model Exchange and Co-Simulation, one binary) over
 * the instance core fmu_instance.c: each function checks the instance, translates FMI 3.0's types
 * and calls the core. An FMI 3.0 variable is a group of the core's FMI 2.0 scalars (fmu_model.h
 * mbsfmu_var3, mbsfmu/fmu/fmi3.py): an array is read and written as its elements in order, so
 * both versions share one value table and every number. Value reference 0 is the independent
 * variable time. Memory: calloc and free (FMI 3.0 has no memory callbacks); the calls a host makes
 * per step allocate nothing (the scratch of a call is the instance's vr3 and val3).
 *
 * Not provided (declared in the modelDescription, refused here with fmi3Error and a reason):
 * Scheduled Execution, clocks, configuration mode (no structural parameters), intermediate
 * updates and early return (mightReturnEarlyFromDoStep = false), event mode in Co-Simulation
 * (hasEventMode = false; eventModeUsed is accepted and never needed), output derivatives, the
 * variable types other than Float64 and Int32. */
#include <stdlib.h>
#include <string.h>

#include "fmi3Functions.h"
#include "fmu_instance.h"

#define CS_STANDARD "FMI 3.0 Co-Simulation"
#define ME_STANDARD "FMI 3.0 Model Exchange"

typedef struct {
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
} Host3;

static void fmi3_log(const Instance *I, int status, const char *category, const char *message)
{
    const Host3 *h = (const Host3 *)I->host_data;
    if (h && h->log) h->log(h->env, (fmi3Status)status, category, message);
}

static void *host_calloc(size_t n, size_t size) { return calloc(n, size); }
static void host_free(void *p) { free(p); }

#define GET_INSTANCE(c)                                                                         \
    Instance *I = mbsfmu_live(c);                                                              \
    if (!I) return fmi3Error

const char *fmi3GetVersion(void) { return fmi3Version; }

static fmi3Instance instantiate(const char *fn, fmi3String name, fmu_kind kind, fmi3String token, fmi3String resources,
                                fmi3Boolean loggingOn, fmi3InstanceEnvironment env, fmi3LogMessageCallback log)
{
    fmu_host host = {fmi3_log, host_calloc, host_free};
    Host3 h = {env, log};
    /* FMI 3.0 passes a resource path, not a URI: any path is accepted (the FMU needs no resources) */
    (void)resources;
    return mbsfmu_instantiate(fn, name, kind, kind == FMU_MODEL_EXCHANGE ? ME_STANDARD : CS_STANDARD, "fmi3", token,
                              NULL, &host, &h, sizeof h, loggingOn);
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String instanceName, fmi3String instantiationToken,
                                          fmi3String resourcePath, fmi3Boolean visible, fmi3Boolean loggingOn,
                                          fmi3InstanceEnvironment instanceEnvironment,
                                          fmi3LogMessageCallback logMessage)
{
    (void)visible;
    return instantiate("fmi3InstantiateModelExchange", instanceName, FMU_MODEL_EXCHANGE, instantiationToken,
                       resourcePath, loggingOn, instanceEnvironment, logMessage);
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String instanceName, fmi3String instantiationToken,
                                         fmi3String resourcePath, fmi3Boolean visible, fmi3Boolean loggingOn,
                                         fmi3Boolean eventModeUsed, fmi3Boolean earlyReturnAllowed,
                                         const fmi3ValueReference requiredIntermediateVariables[],
                                         size_t nRequiredIntermediateVariables,
                                         fmi3InstanceEnvironment instanceEnvironment,
                                         fmi3LogMessageCallback logMessage,
                                         fmi3IntermediateUpdateCallback intermediateUpdate)
{
    (void)visible;
    (void)eventModeUsed;       /* no events: event mode is never entered (hasEventMode = false) */
    (void)earlyReturnAllowed;  /* fmi3DoStep always completes its step */
    (void)requiredIntermediateVariables;
    (void)nRequiredIntermediateVariables;
    (void)intermediateUpdate;  /* providesIntermediateUpdate = false */
    return instantiate("fmi3InstantiateCoSimulation", instanceName, FMU_CO_SIMULATION, instantiationToken,
                       resourcePath, loggingOn, instanceEnvironment, logMessage);
}

fmi3Instance fmi3InstantiateScheduledExecution(fmi3String instanceName, fmi3String instantiationToken,
                                               fmi3String resourcePath, fmi3Boolean visible, fmi3Boolean loggingOn,
                                               fmi3InstanceEnvironment instanceEnvironment,
                                               fmi3LogMessageCallback logMessage, fmi3ClockUpdateCallback clockUpdate,
                                               fmi3LockPreemptionCallback lockPreemption,
                                               fmi3UnlockPreemptionCallback unlockPreemption)
{
    (void)instantiationToken; (void)resourcePath; (void)visible; (void)loggingOn;
    (void)clockUpdate; (void)lockPreemption; (void)unlockPreemption;
    if (logMessage)
        logMessage(instanceEnvironment, fmi3Error, "logStatusError",
                   "fmi3InstantiateScheduledExecution: this FMU provides Model Exchange and Co-Simulation only");
    (void)instanceName;
    return NULL;
}

void fmi3FreeInstance(fmi3Instance instance)
{
    Instance *I = mbsfmu_live(instance);
    if (I) mbsfmu_free(I);
}

fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean loggingOn, size_t nCategories,
                               const fmi3String categories[])
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_set_debug_logging(I, "fmi3SetDebugLogging", loggingOn, nCategories, categories);
}

fmi3Status fmi3EnterInitializationMode(fmi3Instance instance, fmi3Boolean toleranceDefined, fmi3Float64 tolerance,
                                       fmi3Float64 startTime, fmi3Boolean stopTimeDefined, fmi3Float64 stopTime)
{
    GET_INSTANCE(instance);
    const char *fn = "fmi3EnterInitializationMode";
    int rc = mbsfmu_setup_experiment(I, fn, toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime);
    if (rc != FMU_OK) return (fmi3Status)rc;
    return (fmi3Status)mbsfmu_enter_initialization(I, fn);
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance instance)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_exit_initialization(I, "fmi3ExitInitializationMode");
}

fmi3Status fmi3EnterEventMode(fmi3Instance instance)
{
    GET_INSTANCE(instance);
    if (I->kind != FMU_MODEL_EXCHANGE) {
        mbsfmu_log(I, FMU_ERROR, "fmi3EnterEventMode: this Co-Simulation FMU has no event mode (hasEventMode = false)");
        return fmi3Error;
    }
    return (fmi3Status)mbsfmu_enter_event_mode(I, "fmi3EnterEventMode");
}

fmi3Status fmi3Terminate(fmi3Instance instance)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_terminate(I, "fmi3Terminate");
}

fmi3Status fmi3Reset(fmi3Instance instance)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_reset(I, "fmi3Reset");
}

/* ---- values ------------------------------------------------------------------------------- */

/* the FMI 3.0 variable of value reference vr, or NULL (logged) */
static const mbsfmu_var3 *var3(Instance *I, const char *fn, fmi3ValueReference vr)
{
    if (vr >= I->m->n_vars3) {
        mbsfmu_log(I, FMU_ERROR, "%s: unknown value reference %u (this FMU has %lu variables)", fn, (unsigned)vr,
                   (unsigned long)I->m->n_vars3);
        return NULL;
    }
    return &I->m->vars3[vr];
}

/* the scalars of the variables vrs[] (kind 'R' or 'I') into I->vr3 from position at, their
 * count in *n; 0 (logged) for an unknown reference, a type mix-up, time, or too many */
static int expand(Instance *I, const char *fn, char kind, const fmi3ValueReference vrs[], size_t nvr, size_t at,
                  size_t *n)
{
    *n = 0;
    if (nvr && !vrs) {
        mbsfmu_log(I, FMU_ERROR, "%s: valueReferences is NULL with nValueReferences = %lu", fn, (unsigned long)nvr);
        return 0;
    }
    for (size_t k = 0; k < nvr; k++) {
        const mbsfmu_var3 *v = var3(I, fn, vrs[k]);
        if (!v) return 0;
        if (v->kind != kind) {
            mbsfmu_log(I, FMU_ERROR, "%s: %s (value reference %u) is %s", fn, v->name, (unsigned)vrs[k],
                       v->kind == 'T' ? "the independent variable time (read it with fmi3GetFloat64 alone, set it "
                                        "with fmi3SetTime or fmi3DoStep)"
                                      : (v->kind == 'R' ? "of type Float64" : "of type Int32"));
            return 0;
        }
        if (at + *n + v->n > I->n3) {
            mbsfmu_log(I, FMU_ERROR, "%s: more than %lu elements in one call", fn, (unsigned long)(I->n3 - at));
            return 0;
        }
        memcpy(I->vr3 + at + *n, v->scalars, v->n * sizeof(unsigned));
        *n += v->n;
    }
    return 1;
}

static int n_values_ok(Instance *I, const char *fn, size_t n, size_t nValues, const void *values)
{
    if (n != nValues) {
        mbsfmu_log(I, FMU_ERROR, "%s: nValues = %lu, the variables have %lu elements", fn, (unsigned long)nValues,
                   (unsigned long)n);
        return 0;
    }
    if (n && !values) {
        mbsfmu_log(I, FMU_ERROR, "%s: values is NULL with nValues = %lu", fn, (unsigned long)nValues);
        return 0;
    }
    return 1;
}

fmi3Status fmi3GetFloat64(fmi3Instance instance, const fmi3ValueReference valueReferences[], size_t nValueReferences,
                          fmi3Float64 values[], size_t nValues)
{
    GET_INSTANCE(instance);
    const char *fn = "fmi3GetFloat64";
    if (!mbsfmu_allowed(I, fn, M_INIT | M_STEP | M_EVENT | M_CONT | M_TERM)) return fmi3Error;
    size_t at = 0;
    if (nValueReferences && !valueReferences) {
        mbsfmu_log(I, FMU_ERROR, "%s: valueReferences is NULL with nValueReferences = %lu", fn,
                   (unsigned long)nValueReferences);
        return fmi3Error;
    }
    /* the sizes first: a call that fails writes nothing */
    for (size_t k = 0; k < nValueReferences; k++) {
        const mbsfmu_var3 *v = var3(I, fn, valueReferences[k]);
        if (!v) return fmi3Error;
        if (v->kind == 'I') {
            mbsfmu_log(I, FMU_ERROR, "%s: %s (value reference %u) is of type Int32", fn, v->name,
                       (unsigned)valueReferences[k]);
            return fmi3Error;
        }
        at += v->kind == 'T' ? 1 : v->n;
    }
    if (!n_values_ok(I, fn, at, nValues, values)) return fmi3Error;
    at = 0;
    for (size_t k = 0; k < nValueReferences; k++) {
        const mbsfmu_var3 *v = &I->m->vars3[valueReferences[k]];
        if (v->kind == 'T') {
            values[at++] = mbsfmu_time(I);
            continue;
        }
        int rc = mbsfmu_get_values(I, fn, 'R', v->scalars, v->n, values + at, NULL);
        if (rc != FMU_OK) return (fmi3Status)rc;
        at += v->n;
    }
    return fmi3OK;
}

fmi3Status fmi3GetInt32(fmi3Instance instance, const fmi3ValueReference valueReferences[], size_t nValueReferences,
                        fmi3Int32 values[], size_t nValues)
{
    GET_INSTANCE(instance);
    const char *fn = "fmi3GetInt32";
    size_t n = 0;
    if (!mbsfmu_allowed(I, fn, M_INIT | M_STEP | M_EVENT | M_CONT | M_TERM)) return fmi3Error;
    if (!expand(I, fn, 'I', valueReferences, nValueReferences, 0, &n)) return fmi3Error;
    if (!n_values_ok(I, fn, n, nValues, values)) return fmi3Error;
    return (fmi3Status)mbsfmu_get_values(I, fn, 'I', I->vr3, n, NULL, (int *)values);
}

fmi3Status fmi3SetFloat64(fmi3Instance instance, const fmi3ValueReference valueReferences[], size_t nValueReferences,
                          const fmi3Float64 values[], size_t nValues)
{
    GET_INSTANCE(instance);
    const char *fn = "fmi3SetFloat64";
    size_t n = 0;
    if (!expand(I, fn, 'R', valueReferences, nValueReferences, 0, &n)) return fmi3Error;
    if (!n_values_ok(I, fn, n, nValues, values)) return fmi3Error;
    return (fmi3Status)mbsfmu_set_values(I, fn, 'R', I->vr3, n, values, NULL);  /* all or nothing */
}

fmi3Status fmi3SetInt32(fmi3Instance instance, const fmi3ValueReference valueReferences[], size_t nValueReferences,
                        const fmi3Int32 values[], size_t nValues)
{
    GET_INSTANCE(instance);
    const char *fn = "fmi3SetInt32";
    size_t n = 0;
    if (!expand(I, fn, 'I', valueReferences, nValueReferences, 0, &n)) return fmi3Error;
    if (!n_values_ok(I, fn, n, nValues, values)) return fmi3Error;
    return (fmi3Status)mbsfmu_set_values(I, fn, 'I', I->vr3, n, NULL, (const int *)values);
}

/* a type this FMU has no variables of: every value reference is refused */
static fmi3Status no_such_type(fmi3Instance instance, const char *fn, const fmi3ValueReference vrs[], size_t nvr)
{
    GET_INSTANCE(instance);
    if (nvr == 0) return fmi3OK;
    if (!vrs) {
        mbsfmu_log(I, FMU_ERROR, "%s: valueReferences is NULL with nValueReferences = %lu", fn, (unsigned long)nvr);
        return fmi3Error;
    }
    const mbsfmu_var3 *v = var3(I, fn, vrs[0]);
    if (v)
        mbsfmu_log(I, FMU_ERROR, "%s: %s (value reference %u) is of type %s", fn, v->name, (unsigned)vrs[0],
                   v->kind == 'I' ? "Int32" : "Float64");
    return fmi3Error;
}

#define NO_GET(NAME, TYPE)                                                                                        \
    fmi3Status fmi3Get##NAME(fmi3Instance instance, const fmi3ValueReference valueReferences[],                   \
                             size_t nValueReferences, TYPE values[], size_t nValues)                              \
    {                                                                                                             \
        (void)values; (void)nValues;                                                                              \
        return no_such_type(instance, "fmi3Get" #NAME, valueReferences, nValueReferences);                      \
    }
#define NO_SET(NAME, TYPE)                                                                                        \
    fmi3Status fmi3Set##NAME(fmi3Instance instance, const fmi3ValueReference valueReferences[],                   \
                             size_t nValueReferences, const TYPE values[], size_t nValues)                        \
    {                                                                                                             \
        (void)values; (void)nValues;                                                                              \
        return no_such_type(instance, "fmi3Set" #NAME, valueReferences, nValueReferences);                      \
    }
NO_GET(Float32, fmi3Float32)
NO_GET(Int8, fmi3Int8)
NO_GET(UInt8, fmi3UInt8)
NO_GET(Int16, fmi3Int16)
NO_GET(UInt16, fmi3UInt16)
NO_GET(UInt32, fmi3UInt32)
NO_GET(Int64, fmi3Int64)
NO_GET(UInt64, fmi3UInt64)
NO_GET(Boolean, fmi3Boolean)
NO_GET(String, fmi3String)
NO_SET(Float32, fmi3Float32)
NO_SET(Int8, fmi3Int8)
NO_SET(UInt8, fmi3UInt8)
NO_SET(Int16, fmi3Int16)
NO_SET(UInt16, fmi3UInt16)
NO_SET(UInt32, fmi3UInt32)
NO_SET(Int64, fmi3Int64)
NO_SET(UInt64, fmi3UInt64)
NO_SET(Boolean, fmi3Boolean)
NO_SET(String, fmi3String)

fmi3Status fmi3GetBinary(fmi3Instance instance, const fmi3ValueReference valueReferences[], size_t nValueReferences,
                         size_t valueSizes[], fmi3Binary values[], size_t nValues)
{
    (void)valueSizes; (void)values; (void)nValues;
    return no_such_type(instance, "fmi3GetBinary", valueReferences, nValueReferences);
}

fmi3Status fmi3SetBinary(fmi3Instance instance, const fmi3ValueReference valueReferences[], size_t nValueReferences,
                         const size_t valueSizes[], const fmi3Binary values[], size_t nValues)
{
    (void)valueSizes; (void)values; (void)nValues;
    return no_such_type(instance, "fmi3SetBinary", valueReferences, nValueReferences);
}

fmi3Status fmi3GetClock(fmi3Instance instance, const fmi3ValueReference valueReferences[], size_t nValueReferences,
                        fmi3Clock values[])
{
    (void)values;
    return no_such_type(instance, "fmi3GetClock", valueReferences, nValueReferences);
}

fmi3Status fmi3SetClock(fmi3Instance instance, const fmi3ValueReference valueReferences[], size_t nValueReferences,
                        const fmi3Clock values[])
{
    (void)values;
    return no_such_type(instance, "fmi3SetClock", valueReferences, nValueReferences);
}

/* the functions of what this FMU does not have: fmi3Error with the reason */
static fmi3Status unsupported(fmi3Instance instance, const char *fn, const char *why)
{
    GET_INSTANCE(instance);
    mbsfmu_log(I, FMU_ERROR, "%s: %s", fn, why);
    return fmi3Error;
}

#define NO_CLOCKS "this FMU has no clocks"

fmi3Status fmi3GetIntervalDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                  size_t nValueReferences, fmi3Float64 intervals[], fmi3IntervalQualifier qualifiers[])
{
    (void)valueReferences; (void)nValueReferences; (void)intervals; (void)qualifiers;
    return unsupported(instance, "fmi3GetIntervalDecimal", NO_CLOCKS);
}

fmi3Status fmi3GetIntervalFraction(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                   size_t nValueReferences, fmi3UInt64 counters[], fmi3UInt64 resolutions[],
                                   fmi3IntervalQualifier qualifiers[])
{
    (void)valueReferences; (void)nValueReferences; (void)counters; (void)resolutions; (void)qualifiers;
    return unsupported(instance, "fmi3GetIntervalFraction", NO_CLOCKS);
}

fmi3Status fmi3GetShiftDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                               size_t nValueReferences, fmi3Float64 shifts[])
{
    (void)valueReferences; (void)nValueReferences; (void)shifts;
    return unsupported(instance, "fmi3GetShiftDecimal", NO_CLOCKS);
}

fmi3Status fmi3GetShiftFraction(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                size_t nValueReferences, fmi3UInt64 counters[], fmi3UInt64 resolutions[])
{
    (void)valueReferences; (void)nValueReferences; (void)counters; (void)resolutions;
    return unsupported(instance, "fmi3GetShiftFraction", NO_CLOCKS);
}

fmi3Status fmi3SetIntervalDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                  size_t nValueReferences, const fmi3Float64 intervals[])
{
    (void)valueReferences; (void)nValueReferences; (void)intervals;
    return unsupported(instance, "fmi3SetIntervalDecimal", NO_CLOCKS);
}

fmi3Status fmi3SetIntervalFraction(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                   size_t nValueReferences, const fmi3UInt64 counters[],
                                   const fmi3UInt64 resolutions[])
{
    (void)valueReferences; (void)nValueReferences; (void)counters; (void)resolutions;
    return unsupported(instance, "fmi3SetIntervalFraction", NO_CLOCKS);
}

fmi3Status fmi3SetShiftDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                               size_t nValueReferences, const fmi3Float64 shifts[])
{
    (void)valueReferences; (void)nValueReferences; (void)shifts;
    return unsupported(instance, "fmi3SetShiftDecimal", NO_CLOCKS);
}

fmi3Status fmi3SetShiftFraction(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                size_t nValueReferences, const fmi3UInt64 counters[], const fmi3UInt64 resolutions[])
{
    (void)valueReferences; (void)nValueReferences; (void)counters; (void)resolutions;
    return unsupported(instance, "fmi3SetShiftFraction", NO_CLOCKS);
}

fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance instance)
{
    return unsupported(instance, "fmi3EvaluateDiscreteStates", "providesEvaluateDiscreteStates = false (no clocks)");
}

fmi3Status fmi3ActivateModelPartition(fmi3Instance instance, fmi3ValueReference clockReference,
                                      fmi3Float64 activationTime)
{
    (void)clockReference; (void)activationTime;
    return unsupported(instance, "fmi3ActivateModelPartition", "this FMU provides no Scheduled Execution");
}

fmi3Status fmi3EnterConfigurationMode(fmi3Instance instance)
{
    return unsupported(instance, "fmi3EnterConfigurationMode", "this FMU has no structural parameters");
}

fmi3Status fmi3ExitConfigurationMode(fmi3Instance instance)
{
    return unsupported(instance, "fmi3ExitConfigurationMode", "this FMU has no structural parameters");
}

fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance instance, fmi3ValueReference valueReference,
                                               size_t *nDependencies)
{
    (void)valueReference; (void)nDependencies;
    return unsupported(instance, "fmi3GetNumberOfVariableDependencies",
                       "the dependencies are those of the modelDescription's ModelStructure "
                       "(providesPerElementDependencies = false)");
}

fmi3Status fmi3GetVariableDependencies(fmi3Instance instance, fmi3ValueReference dependent,
                                       size_t elementIndicesOfDependent[], fmi3ValueReference independents[],
                                       size_t elementIndicesOfIndependents[], fmi3DependencyKind dependencyKinds[],
                                       size_t nDependencies)
{
    (void)dependent; (void)elementIndicesOfDependent; (void)independents; (void)elementIndicesOfIndependents;
    (void)dependencyKinds; (void)nDependencies;
    return unsupported(instance, "fmi3GetVariableDependencies",
                       "the dependencies are those of the modelDescription's ModelStructure "
                       "(providesPerElementDependencies = false)");
}

/* ---- derivatives of the outputs ------------------------------------------------------------ */

/* unknowns into I->vr3[0, nu), knowns into I->vr3[nu, nu + nk) */
static int expand_both(Instance *I, const char *fn, const fmi3ValueReference unknowns[], size_t nUnknowns,
                       const fmi3ValueReference knowns[], size_t nKnowns, size_t *nu, size_t *nk)
{
    return expand(I, fn, 'R', unknowns, nUnknowns, 0, nu) && expand(I, fn, 'R', knowns, nKnowns, *nu, nk);
}

fmi3Status fmi3GetDirectionalDerivative(fmi3Instance instance, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                        const fmi3ValueReference knowns[], size_t nKnowns, const fmi3Float64 seed[],
                                        size_t nSeed, fmi3Float64 sensitivity[], size_t nSensitivity)
{
    GET_INSTANCE(instance);
    const char *fn = "fmi3GetDirectionalDerivative";
    size_t nu = 0, nk = 0;
    if (!expand_both(I, fn, unknowns, nUnknowns, knowns, nKnowns, &nu, &nk)) return fmi3Error;
    if (nSeed != nk || nSensitivity != nu) {
        mbsfmu_log(I, FMU_ERROR, "%s: nSeed = %lu and nSensitivity = %lu, the knowns have %lu elements and the "
                   "unknowns %lu", fn, (unsigned long)nSeed, (unsigned long)nSensitivity, (unsigned long)nk,
                   (unsigned long)nu);
        return fmi3Error;
    }
    return (fmi3Status)mbsfmu_directional_derivative(I, fn, I->vr3, nu, I->vr3 + nu, nk, seed, sensitivity);
}

/* sensitivity (knowns) = J^T seed (unknowns), J = d(unknowns)/d(knowns): column j of J is the
 * directional derivative along known element j (the core's exact derivative), dotted with seed */
fmi3Status fmi3GetAdjointDerivative(fmi3Instance instance, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                    const fmi3ValueReference knowns[], size_t nKnowns, const fmi3Float64 seed[],
                                    size_t nSeed, fmi3Float64 sensitivity[], size_t nSensitivity)
{
    GET_INSTANCE(instance);
    const char *fn = "fmi3GetAdjointDerivative";
    size_t nu = 0, nk = 0;
    if (!expand_both(I, fn, unknowns, nUnknowns, knowns, nKnowns, &nu, &nk)) return fmi3Error;
    if (nSeed != nu || nSensitivity != nk) {
        mbsfmu_log(I, FMU_ERROR, "%s: nSeed = %lu and nSensitivity = %lu, the unknowns have %lu elements and the "
                   "knowns %lu", fn, (unsigned long)nSeed, (unsigned long)nSensitivity, (unsigned long)nu,
                   (unsigned long)nk);
        return fmi3Error;
    }
    if ((nu && (!seed || !sensitivity)) || (nk && !sensitivity)) {
        mbsfmu_log(I, FMU_ERROR, "%s: seed or sensitivity is NULL", fn);
        return fmi3Error;
    }
    double *e = I->val3, *col = I->val3 + nk;               /* nk + nu <= n3: expand checked it */
    for (size_t j = 0; j < nk; j++) e[j] = 0.0;
    for (size_t j = 0; j < nk; j++) {
        e[j] = 1.0;
        int rc = mbsfmu_directional_derivative(I, fn, I->vr3, nu, I->vr3 + nu, nk, e, col);
        e[j] = 0.0;
        if (rc != FMU_OK) return (fmi3Status)rc;
        double acc = 0.0;
        for (size_t i = 0; i < nu; i++) acc += seed[i] * col[i];
        sensitivity[j] = acc;
    }
    return fmi3OK;
}

/* ---- FMU state ---------------------------------------------------------------------------- */

fmi3Status fmi3GetFMUState(fmi3Instance instance, fmi3FMUState *FMUState)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_get_state(I, "fmi3GetFMUState", FMUState);
}

fmi3Status fmi3SetFMUState(fmi3Instance instance, fmi3FMUState FMUState)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_set_state(I, "fmi3SetFMUState", FMUState);
}

fmi3Status fmi3FreeFMUState(fmi3Instance instance, fmi3FMUState *FMUState)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_free_state(I, "fmi3FreeFMUState", FMUState);
}

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance instance, fmi3FMUState FMUState, size_t *size)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_serialized_size(I, "fmi3SerializedFMUStateSize", FMUState, size);
}

fmi3Status fmi3SerializeFMUState(fmi3Instance instance, fmi3FMUState FMUState, fmi3Byte serializedState[],
                                 size_t size)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_serialize(I, "fmi3SerializeFMUState", FMUState, (char *)serializedState, size);
}

fmi3Status fmi3DeserializeFMUState(fmi3Instance instance, const fmi3Byte serializedState[], size_t size,
                                   fmi3FMUState *FMUState)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_deserialize(I, "fmi3DeserializeFMUState", (const char *)serializedState, size,
                                          FMUState);
}

/* ---- Model Exchange ----------------------------------------------------------------------- */

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance instance, fmi3Boolean *discreteStatesNeedUpdate,
                                    fmi3Boolean *terminateSimulation, fmi3Boolean *nominalsOfContinuousStatesChanged,
                                    fmi3Boolean *valuesOfContinuousStatesChanged, fmi3Boolean *nextEventTimeDefined,
                                    fmi3Float64 *nextEventTime)
{
    GET_INSTANCE(instance);
    const char *fn = "fmi3UpdateDiscreteStates";
    int changed = 0, terminate = 0;
    if (!discreteStatesNeedUpdate || !terminateSimulation || !nominalsOfContinuousStatesChanged ||
        !valuesOfContinuousStatesChanged || !nextEventTimeDefined || !nextEventTime) {
        mbsfmu_log(I, FMU_ERROR, "%s: an output argument is NULL", fn);
        return fmi3Error;
    }
    if (I->kind != FMU_MODEL_EXCHANGE) {
        mbsfmu_log(I, FMU_ERROR, "%s: this Co-Simulation FMU has no event mode (hasEventMode = false)", fn);
        return fmi3Error;
    }
    fmi3Status rc = (fmi3Status)mbsfmu_new_discrete_states(I, fn, &changed, &terminate);
    if (rc != fmi3OK) return rc;
    *discreteStatesNeedUpdate = fmi3False;
    *terminateSimulation = terminate ? fmi3True : fmi3False;
    *nominalsOfContinuousStatesChanged = fmi3False;
    *valuesOfContinuousStatesChanged = changed ? fmi3True : fmi3False;
    *nextEventTimeDefined = fmi3False;   /* no time events */
    *nextEventTime = 0.0;
    return fmi3OK;
}

fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance instance)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_enter_continuous_time_mode(I, "fmi3EnterContinuousTimeMode");
}

fmi3Status fmi3CompletedIntegratorStep(fmi3Instance instance, fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi3Boolean *enterEventMode, fmi3Boolean *terminateSimulation)
{
    GET_INSTANCE(instance);
    int enter = 0, terminate = 0;
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!enterEventMode || !terminateSimulation) {
        mbsfmu_log(I, FMU_ERROR, "fmi3CompletedIntegratorStep: %s is NULL",
                   !enterEventMode ? "enterEventMode" : "terminateSimulation");
        return fmi3Error;
    }
    fmi3Status rc = (fmi3Status)mbsfmu_completed_integrator_step(I, "fmi3CompletedIntegratorStep", &enter, &terminate);
    if (rc != fmi3OK) return rc;
    *enterEventMode = enter ? fmi3True : fmi3False;
    *terminateSimulation = terminate ? fmi3True : fmi3False;
    return fmi3OK;
}

fmi3Status fmi3SetTime(fmi3Instance instance, fmi3Float64 time)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_set_time(I, "fmi3SetTime", time);
}

fmi3Status fmi3SetContinuousStates(fmi3Instance instance, const fmi3Float64 continuousStates[],
                                   size_t nContinuousStates)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_set_states(I, "fmi3SetContinuousStates", continuousStates, nContinuousStates);
}

fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance instance, fmi3Float64 derivatives[],
                                             size_t nContinuousStates)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_get_derivatives(I, "fmi3GetContinuousStateDerivatives", derivatives,
                                              nContinuousStates);
}

fmi3Status fmi3GetEventIndicators(fmi3Instance instance, fmi3Float64 eventIndicators[], size_t nEventIndicators)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_get_event_indicators(I, "fmi3GetEventIndicators", eventIndicators, nEventIndicators);
}

fmi3Status fmi3GetContinuousStates(fmi3Instance instance, fmi3Float64 continuousStates[], size_t nContinuousStates)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_get_states(I, "fmi3GetContinuousStates", continuousStates, nContinuousStates);
}

fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance instance, fmi3Float64 nominals[], size_t nContinuousStates)
{
    GET_INSTANCE(instance);
    return (fmi3Status)mbsfmu_get_nominals(I, "fmi3GetNominalsOfContinuousStates", nominals, nContinuousStates);
}

fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance instance, size_t *nEventIndicators)
{
    GET_INSTANCE(instance);
    if (!nEventIndicators) {
        mbsfmu_log(I, FMU_ERROR, "fmi3GetNumberOfEventIndicators: nEventIndicators is NULL");
        return fmi3Error;
    }
    *nEventIndicators = 0;
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance instance, size_t *nContinuousStates)
{
    GET_INSTANCE(instance);
    if (!nContinuousStates) {
        mbsfmu_log(I, FMU_ERROR, "fmi3GetNumberOfContinuousStates: nContinuousStates is NULL");
        return fmi3Error;
    }
    *nContinuousStates = I->kind == FMU_MODEL_EXCHANGE ? (size_t)I->sz.nx : 0;
    return fmi3OK;
}

/* ---- Co-Simulation ------------------------------------------------------------------------ */

fmi3Status fmi3EnterStepMode(fmi3Instance instance)
{
    return unsupported(instance, "fmi3EnterStepMode",
                       "this Co-Simulation FMU has no event mode (hasEventMode = false): it is in step mode from "
                       "fmi3ExitInitializationMode on");
}

fmi3Status fmi3GetOutputDerivatives(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                    size_t nValueReferences, const fmi3Int32 orders[], fmi3Float64 values[],
                                    size_t nValues)
{
    (void)valueReferences; (void)orders; (void)values; (void)nValues;
    if (nValueReferences == 0) {
        GET_INSTANCE(instance);
        (void)I;
        return fmi3OK;
    }
    return unsupported(instance, "fmi3GetOutputDerivatives", "not provided (maxOutputDerivativeOrder = 0)");
}

fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 currentCommunicationPoint,
                      fmi3Float64 communicationStepSize, fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                      fmi3Boolean *eventHandlingNeeded, fmi3Boolean *terminateSimulation, fmi3Boolean *earlyReturn,
                      fmi3Float64 *lastSuccessfulTime)
{
    GET_INSTANCE(instance);
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!eventHandlingNeeded || !terminateSimulation || !earlyReturn || !lastSuccessfulTime) {
        mbsfmu_log(I, FMU_ERROR, "fmi3DoStep: an output argument is NULL");
        return fmi3Error;
    }
    fmi3Status rc = (fmi3Status)mbsfmu_do_step(I, "fmi3DoStep", currentCommunicationPoint, communicationStepSize);
    *eventHandlingNeeded = fmi3False;
    *terminateSimulation = fmi3False;
    *earlyReturn = fmi3False;
    *lastSuccessfulTime = mbsfmu_time(I);
    return rc;
}
