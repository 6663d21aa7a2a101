/* fmi2_functions.c - the FMI 2.0 entry points (Co-Simulation and Model Exchange, one binary) over
 * the instance core fmu_instance.c: each function checks the component, translates FMI 2.0's types
 * and calls the core, and nothing else. The host's callbacks live in the instance (host_data);
 * the logger is FMI 2.0's printf-like one, so the message reaches it as its format with every '%'
 * doubled (hosts that do not format it, e.g. fmpy's Python logger, show it as is). */
#include <string.h>

#include "fmi2Functions.h"
#include "fmu_instance.h"

#define CS_STANDARD "FMI 2.0 Co-Simulation"
#define ME_STANDARD "FMI 2.0 Model Exchange"

static void fmi2_log(const Instance *I, int status, const char *category, const char *message)
{
    const fmi2CallbackFunctions *cb = (const fmi2CallbackFunctions *)I->host_data;
    char esc[2 * (sizeof I->err + 512)];
    size_t j = 0;
    if (!cb || !cb->logger) return;
    for (size_t k = 0; message[k] && j + 2 < sizeof esc; k++) {
        esc[j++] = message[k];
        if (message[k] == '%') esc[j++] = '%';
    }
    esc[j] = 0;
    cb->logger(cb->componentEnvironment, I->name ? I->name : "mbsfmu", (fmi2Status)status, category, esc);
}

#define GET_INSTANCE(c)                                                                         \
    Instance *I = mbsfmu_live(c);                                                              \
    if (!I) return fmi2Error

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                              fmi2Boolean visible, fmi2Boolean loggingOn)
{
    (void)visible;
    if (!functions || !functions->allocateMemory || !functions->freeMemory) {
        if (functions && functions->logger)
            functions->logger(functions->componentEnvironment, instanceName ? instanceName : "mbsfmu", fmi2Error,
                              "logStatusError",
                              "fmi2Instantiate: the callback functions allocateMemory and freeMemory are required");
        return NULL;
    }
    fmu_host host = {fmi2_log, functions->allocateMemory, functions->freeMemory};
    if (fmuType != fmi2CoSimulation && fmuType != fmi2ModelExchange) {
        Instance tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.host_data = (void *)functions;
        tmp.name = (char *)(instanceName ? instanceName : "mbsfmu");
        fmi2_log(&tmp, fmi2Error, "logStatusError",
                 "fmi2Instantiate: fmuType must be fmi2ModelExchange (0) or fmi2CoSimulation (1)");
        return NULL;
    }
    int me = fmuType == fmi2ModelExchange;
    return mbsfmu_instantiate("fmi2Instantiate", instanceName, me ? FMU_MODEL_EXCHANGE : FMU_CO_SIMULATION,
                              me ? ME_STANDARD : CS_STANDARD, "fmi2", fmuGUID, fmuResourceLocation, &host, functions,
                              sizeof *functions, loggingOn);
}

void fmi2FreeInstance(fmi2Component c)
{
    Instance *I = mbsfmu_live(c);
    if (I) mbsfmu_free(I);              /* NULL, freed or foreign: nothing to do, nothing touched */
}

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_set_debug_logging(I, "fmi2SetDebugLogging", loggingOn, nCategories, categories);
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_setup_experiment(I, "fmi2SetupExperiment", toleranceDefined, tolerance, startTime,
                                               stopTimeDefined, stopTime);
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_enter_initialization(I, "fmi2EnterInitializationMode");
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_exit_initialization(I, "fmi2ExitInitializationMode");
}

fmi2Status fmi2Terminate(fmi2Component c)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_terminate(I, "fmi2Terminate");
}

fmi2Status fmi2Reset(fmi2Component c)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_reset(I, "fmi2Reset");
}

/* ---- values ------------------------------------------------------------------------------- */

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_get_values(I, "fmi2GetReal", 'R', vr, nvr, value, NULL);
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Integer value[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_get_values(I, "fmi2GetInteger", 'I', vr, nvr, NULL, value);
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_set_values(I, "fmi2SetReal", 'R', vr, nvr, value, NULL);
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Integer value[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_set_values(I, "fmi2SetInteger", 'I', vr, nvr, NULL, value);
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Boolean value[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_no_such_type(I, "fmi2GetBoolean", vr, nvr, value);
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2String value[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_no_such_type(I, "fmi2GetString", vr, nvr, value);
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Boolean value[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_no_such_type(I, "fmi2SetBoolean", vr, nvr, value);
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2String value[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_no_such_type(I, "fmi2SetString", vr, nvr, value);
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[], size_t nUnknown,
                                        const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                        const fmi2Real dvKnown[], fmi2Real dvUnknown[])
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_directional_derivative(I, "fmi2GetDirectionalDerivative", vUnknown_ref, nUnknown,
                                                     vKnown_ref, nKnown, dvKnown, dvUnknown);
}

/* ---- FMU state ---------------------------------------------------------------------------- */

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *FMUstate)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_get_state(I, "fmi2GetFMUstate", FMUstate);
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_set_state(I, "fmi2SetFMUstate", FMUstate);
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *FMUstate)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_free_state(I, "fmi2FreeFMUstate", FMUstate);
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t *size)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_serialized_size(I, "fmi2SerializedFMUstateSize", FMUstate, size);
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[], size_t size)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_serialize(I, "fmi2SerializeFMUstate", FMUstate, serializedState, size);
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                   fmi2FMUstate *FMUstate)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_deserialize(I, "fmi2DeSerializeFMUstate", serializedState, size, FMUstate);
}

/* ---- Co-Simulation ------------------------------------------------------------------------ */

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize,
                      fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    GET_INSTANCE(c);
    (void)noSetFMUStatePriorToCurrentPoint;
    return (fmi2Status)mbsfmu_do_step(I, "fmi2DoStep", currentCommunicationPoint, communicationStepSize);
}

fmi2Status fmi2CancelStep(fmi2Component c)
{
    GET_INSTANCE(c);
    mbsfmu_log(I, FMU_ERROR, "fmi2CancelStep: fmi2DoStep always completes before returning (no asynchronous steps)");
    return fmi2Error;
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[])
{
    GET_INSTANCE(c);
    (void)vr; (void)order; (void)value;
    if (nvr == 0) return fmi2OK;
    mbsfmu_log(I, FMU_ERROR, "fmi2SetRealInputDerivatives: not supported (canInterpolateInputs = false)");
    return fmi2Error;
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[])
{
    GET_INSTANCE(c);
    (void)vr; (void)order; (void)value;
    if (nvr == 0) return fmi2OK;
    mbsfmu_log(I, FMU_ERROR, "fmi2GetRealOutputDerivatives: not supported (maxOutputDerivativeOrder = 0)");
    return fmi2Error;
}

static fmi2Status status_query(fmi2Component c, const char *fn, const void *value)
{
    GET_INSTANCE(c);
    if (!value) {
        mbsfmu_log(I, FMU_ERROR, "%s: value is NULL", fn);
        return fmi2Error;
    }
    return fmi2OK;
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value)
{
    fmi2Status rc = status_query(c, "fmi2GetStatus", value);
    if (rc != fmi2OK) return rc;
    if (s != fmi2DoStepStatus) {
        mbsfmu_log(mbsfmu_live(c), FMU_DISCARD, "fmi2GetStatus: status kind %d is not available", (int)s);
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
        mbsfmu_log(mbsfmu_live(c), FMU_DISCARD, "fmi2GetRealStatus: status kind %d is not available", (int)s);
        return fmi2Discard;
    }
    *value = mbsfmu_time(mbsfmu_live(c));
    return fmi2OK;
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value)
{
    fmi2Status rc = status_query(c, "fmi2GetIntegerStatus", value);
    if (rc != fmi2OK) return rc;
    mbsfmu_log(mbsfmu_live(c), FMU_DISCARD, "fmi2GetIntegerStatus: status kind %d is not available", (int)s);
    return fmi2Discard;
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    fmi2Status rc = status_query(c, "fmi2GetBooleanStatus", value);
    if (rc != fmi2OK) return rc;
    if (s != fmi2Terminated) {
        mbsfmu_log(mbsfmu_live(c), FMU_DISCARD, "fmi2GetBooleanStatus: status kind %d is not available", (int)s);
        return fmi2Discard;
    }
    *value = fmi2False;                /* the FMU never asks to end the simulation */
    return fmi2OK;
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{
    fmi2Status rc = status_query(c, "fmi2GetStringStatus", value);
    if (rc != fmi2OK) return rc;
    mbsfmu_log(mbsfmu_live(c), FMU_DISCARD, "fmi2GetStringStatus: status kind %d is not available", (int)s);
    return fmi2Discard;
}

/* ---- Model Exchange ----------------------------------------------------------------------- */

fmi2Status fmi2EnterEventMode(fmi2Component c)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_enter_event_mode(I, "fmi2EnterEventMode");
}

fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *eventInfo)
{
    GET_INSTANCE(c);
    int changed = 0, terminate = 0;
    if (!eventInfo) {
        mbsfmu_log(I, FMU_ERROR, "fmi2NewDiscreteStates: fmi2eventInfo is NULL");
        return fmi2Error;
    }
    fmi2Status rc = (fmi2Status)mbsfmu_new_discrete_states(I, "fmi2NewDiscreteStates", &changed, &terminate);
    if (rc != fmi2OK) return rc;
    eventInfo->newDiscreteStatesNeeded = fmi2False;
    eventInfo->terminateSimulation = terminate ? fmi2True : fmi2False;
    eventInfo->nominalsOfContinuousStatesChanged = fmi2False;
    eventInfo->valuesOfContinuousStatesChanged = changed ? fmi2True : fmi2False;
    eventInfo->nextEventTimeDefined = fmi2False;   /* no time events */
    eventInfo->nextEventTime = 0.0;
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_enter_continuous_time_mode(I, "fmi2EnterContinuousTimeMode");
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi2Boolean *enterEventMode, fmi2Boolean *terminateSimulation)
{
    GET_INSTANCE(c);
    int enter = 0, terminate = 0;
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!enterEventMode || !terminateSimulation) {
        mbsfmu_log(I, FMU_ERROR, "fmi2CompletedIntegratorStep: %s is NULL",
                   !enterEventMode ? "enterEventMode" : "terminateSimulation");
        return fmi2Error;
    }
    fmi2Status rc = (fmi2Status)mbsfmu_completed_integrator_step(I, "fmi2CompletedIntegratorStep", &enter, &terminate);
    if (rc != fmi2OK) return rc;
    *enterEventMode = enter ? fmi2True : fmi2False;
    *terminateSimulation = terminate ? fmi2True : fmi2False;
    return fmi2OK;
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_set_time(I, "fmi2SetTime", time);
}

fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_set_states(I, "fmi2SetContinuousStates", x, nx);
}

fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives[], size_t nx)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_get_derivatives(I, "fmi2GetDerivatives", derivatives, nx);
}

fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real eventIndicators[], size_t ni)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_get_event_indicators(I, "fmi2GetEventIndicators", eventIndicators, ni);
}

fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_get_states(I, "fmi2GetContinuousStates", x, nx);
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x_nominal[], size_t nx)
{
    GET_INSTANCE(c);
    return (fmi2Status)mbsfmu_get_nominals(I, "fmi2GetNominalsOfContinuousStates", x_nominal, nx);
}
