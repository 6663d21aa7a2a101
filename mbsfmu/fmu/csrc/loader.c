/*
 * mbsfmu FMU loader: binaries/linux64/<modelIdentifier>.so of an mbsfmu FMU.
 *
 * pythonfmu's binary (shipped in the FMU as binaries/linux64/<modelIdentifier>.pythonfmu.so)
 * does not link libpython, so a host that does not run Python itself cannot load it without
 * LD_PRELOAD. This loader, compiled by `mbsfmu build-fmu` against the building Python's headers,
 * is the FMU's binary instead. On the first fmi2Instantiate it
 *   1. joins the Python that already runs in the host process (fmpy, ...) if its version
 *      matches, or else dlopen()s libpython (MBSFMU_LIBPYTHON, else libpython3.x.so.1.0 from the
 *      library search path) with RTLD_GLOBAL | RTLD_NODELETE and initialises it (isolated config:
 *      PYTHONPATH/PYTHONHOME of the host are ignored; program_name = MBSFMU_PYTHON, else
 *      python3.x on PATH, so that installation's prefix and site-packages are found). No path of
 *      the build machine is compiled in. Python is never finalised: numpy cannot be loaded twice
 *      into one process, and unloading and loading the FMU again must work;
 *   2. dlopen()s pythonfmu's real binary next to this file and forwards every fmi2 function.
 * It also does what pythonfmu's binary does not:
 *   - every call checks its component against the registry of live instances (a NULL, freed or
 *     foreign component gets fmi2Error and a message on stderr, never a memory access), its
 *     pointers, the FMI 2.0 call order (fmi2Error naming the state), value references and types
 *     of fmi2Get and fmi2Set, finite times and step sizes; fmi2Instantiate checks the instance
 *     name, GUID and that fmuResourceLocation is this FMU's resources folder;
 *   - FMU states are handed out wrapped and registered per instance (a foreign or freed state is
 *     refused); serialised states carry a header (tag, GUID, length, CRC-32) checked before
 *     Python sees the bytes;
 *   - a call during which the slave logged an error returns fmi2Error (the slave catches its
 *     exceptions: pythonfmu would answer fmi2Fatal; see mbsfmu/fmu/protocol.py);
 *   - fmi2SetReal/Integer/Boolean/String check the value references, types, causality,
 *     the initialisation phase (parameters are fixed after fmi2ExitInitializationMode),
 *     finiteness and the declared min/max, and return fmi2Error with a logged reason instead
 *     of passing bad values on (the variable keeps its value);
 *   - messages with a status other than fmi2OK always reach the host's logger (pythonfmu
 *     forwards nothing unless debug logging is on); fmi2OK messages follow
 *     fmi2SetDebugLogging / loggingOn.
 * Environment: MBSFMU_LIBPYTHON (path of a libpython of the FMU's minor version), MBSFMU_PYTHON
 * (the interpreter whose prefix and site-packages to use).
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- FMI 2.0 types (fmi2TypesPlatform.h, fmi2FunctionTypes.h) -------------------------- */
typedef void* fmi2Component;
typedef void* fmi2ComponentEnvironment;
typedef void* fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char* fmi2String;
typedef char fmi2Byte;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;
typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
typedef void* (*fmi2CallbackAllocateMemory)(size_t, size_t);
typedef void (*fmi2CallbackFreeMemory)(void*);
typedef void (*fmi2StepFinished)(fmi2ComponentEnvironment, fmi2Status);
typedef struct {   /* layout of fmi2CallbackFunctions, members not const so it can be filled */
    fmi2CallbackLogger logger;
    fmi2CallbackAllocateMemory allocateMemory;
    fmi2CallbackFreeMemory freeMemory;
    fmi2StepFinished stepFinished;
    fmi2ComponentEnvironment componentEnvironment;
} Callbacks;
#define fmi2True 1
#define EXPORT __attribute__((visibility("default")))

/* ---- build-time configuration ----------------------------------------------------------- */
typedef struct {
    char type;           /* 'R' Real, 'I' Integer, 'E' Enumeration */
    char causality;      /* 'p' parameter (fixed), 'i' input, 'o' output */
    double min, max;     /* NAN: none */
    const char* name;
} Variable;
/* defines MBSFMU_LIBPYTHON, MBSFMU_PYTHON_EXE, MBSFMU_PY_VERSION ("3.11"), MBSFMU_REAL_BINARY
   (file name next to this one), MBSFMU_GUID and MBSFMU_VARS[] (by value reference) */
#include "mbsfmu_loader_config.h"
#define N_VARS (sizeof(MBSFMU_VARS) / sizeof(MBSFMU_VARS[0]))

/* ---- the real binary's functions --------------------------------------------------------- */
typedef struct {
    fmi2Component (*Instantiate)(fmi2String, fmi2Type, fmi2String, fmi2String, const Callbacks*, fmi2Boolean, fmi2Boolean);
    void (*FreeInstance)(fmi2Component);
    fmi2Status (*SetupExperiment)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real);
    fmi2Status (*EnterInitializationMode)(fmi2Component);
    fmi2Status (*ExitInitializationMode)(fmi2Component);
    fmi2Status (*Terminate)(fmi2Component);
    fmi2Status (*Reset)(fmi2Component);
    fmi2Status (*GetReal)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Real*);
    fmi2Status (*GetInteger)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Integer*);
    fmi2Status (*GetBoolean)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Boolean*);
    fmi2Status (*GetString)(fmi2Component, const fmi2ValueReference*, size_t, fmi2String*);
    fmi2Status (*SetReal)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Real*);
    fmi2Status (*SetInteger)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Integer*);
    fmi2Status (*SetBoolean)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Boolean*);
    fmi2Status (*SetString)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2String*);
    fmi2Status (*GetFMUstate)(fmi2Component, fmi2FMUstate*);
    fmi2Status (*SetFMUstate)(fmi2Component, fmi2FMUstate);
    fmi2Status (*FreeFMUstate)(fmi2Component, fmi2FMUstate*);
    fmi2Status (*SerializedFMUstateSize)(fmi2Component, fmi2FMUstate, size_t*);
    fmi2Status (*SerializeFMUstate)(fmi2Component, fmi2FMUstate, fmi2Byte*, size_t);
    fmi2Status (*DeSerializeFMUstate)(fmi2Component, const fmi2Byte*, size_t, fmi2FMUstate*);
    fmi2Status (*GetDirectionalDerivative)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2ValueReference*,
                                           size_t, const fmi2Real*, fmi2Real*);
    fmi2Status (*SetRealInputDerivatives)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Integer*, const fmi2Real*);
    fmi2Status (*GetRealOutputDerivatives)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Integer*, fmi2Real*);
    fmi2Status (*DoStep)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);
    fmi2Status (*CancelStep)(fmi2Component);
    fmi2Status (*GetStatus)(fmi2Component, const fmi2StatusKind, fmi2Status*);
    fmi2Status (*GetRealStatus)(fmi2Component, const fmi2StatusKind, fmi2Real*);
    fmi2Status (*GetIntegerStatus)(fmi2Component, const fmi2StatusKind, fmi2Integer*);
    fmi2Status (*GetBooleanStatus)(fmi2Component, const fmi2StatusKind, fmi2Boolean*);
    fmi2Status (*GetStringStatus)(fmi2Component, const fmi2StatusKind, fmi2String*);
} Api;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static void* g_real = NULL;
static Api R;

/* ---- one instance ------------------------------------------------------------------------ */
/* FMI 2.0 CS states (FMI 2.0.4 section 4.2.4) as far as the checks here need them */
typedef enum { PHASE_INSTANTIATED, PHASE_INIT_MODE, PHASE_STEPPING, PHASE_TERMINATED } Phase;

#define INSTANCE_MAGIC 0x4d425346u   /* "MBSF" */
#define STATE_MAGIC 0x4d425354u      /* "MBST" */

typedef struct State State;
typedef struct Instance Instance;

/* an FMU state handed to the host: pythonfmu's state (a Python object) with its owner, so a
   foreign, freed or other instance's state is refused instead of being used as a PyObject */
struct State {
    unsigned magic;
    Instance* owner;
    fmi2FMUstate inner;
    State* next;
};

struct Instance {
    unsigned magic;              /* INSTANCE_MAGIC while alive */
    Instance* next;              /* registry of live instances (g_instances) */
    fmi2Component inner;         /* pythonfmu's component */
    Callbacks cb;                /* given to pythonfmu: our logger, this instance as environment */
    fmi2CallbackLogger host_logger;
    fmi2ComponentEnvironment host_env;
    char* name;
    int logging_on;
    size_t n_categories;
    char** categories;
    Phase phase;
    int initialized;             /* fmi2ExitInitializationMode has succeeded (parameters fixed) */
    int fatal;                   /* pythonfmu returned fmi2Fatal: its instance is released (see FORWARD) */
    fmi2Status worst_logged;     /* worst status the slave logged during the current call */
    State* states;               /* FMU states of this instance not yet freed */
};

static Instance* g_instances = NULL;   /* guarded by g_lock */
static const char* status_category(fmi2Status s)
{
    switch (s) {
    case fmi2Warning: return "logStatusWarning";
    case fmi2Discard: return "logStatusDiscard";
    case fmi2Error: return "logStatusError";
    case fmi2Fatal: return "logStatusFatal";
    default: return "logAll";
    }
}

/* the host's logger treats the message as a printf format: pass a copy with '%' doubled */
static void host_log(fmi2CallbackLogger logger, fmi2ComponentEnvironment env, const char* name, fmi2Status status,
                     const char* category, const char* message)
{
    if (!logger) return;
    size_t n = strlen(message), extra = 0;
    for (size_t k = 0; k < n; k++) extra += message[k] == '%';
    char* copy = malloc(n + extra + 1);
    if (!copy) return;
    char* p = copy;
    for (size_t k = 0; k < n; k++) {
        *p++ = message[k];
        if (message[k] == '%') *p++ = '%';
    }
    *p = '\0';
    logger(env, name ? name : "", status, category ? category : status_category(status), copy);
    free(copy);
}

static void logf_(const Instance* I, fmi2Status status, const char* fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (I) host_log(I->host_logger, I->host_env, I->name, status, status_category(status), buf);
    else fprintf(stderr, "mbsfmu FMU: %s\n", buf);
}

static int category_enabled(const Instance* I, const char* category)
{
    if (!I->logging_on) return 0;
    if (I->n_categories == 0) return 1;
    for (size_t k = 0; k < I->n_categories; k++)
        if (category && strcmp(I->categories[k], category) == 0) return 1;
    return 0;
}

/* logger given to pythonfmu (whose debug logging is always on): note the worst status (the
   slave reports a failed call by logging it with status error: see call_status), filter, forward */
static void shim_logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status, fmi2String category,
                        fmi2String message, ...)
{
    Instance* I = env;
    if (!I || !message) return;
    if (status > I->worst_logged && status <= fmi2Fatal) I->worst_logged = status;
    if (status == fmi2OK && !category_enabled(I, category)) return;
    host_log(I->host_logger, I->host_env, name, status, category, message);
}

/* ---- loading Python and the real binary -------------------------------------------------- */
static int version_matches(const char* version)
{
    size_t n = strlen(MBSFMU_PY_VERSION);
    return version && strncmp(version, MBSFMU_PY_VERSION, n) == 0 && version[n] == '.';
}

static int start_python(const Instance* I)
{
    int (*is_init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    const char* (*get_version)(void) = (const char* (*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (is_init && is_init()) {          /* a Python host (fmpy, ...): join its interpreter */
        if (get_version && !version_matches(get_version())) {
            logf_(I, fmi2Error, "this process runs Python %.20s, but the FMU was built with Python %s: load it "
                  "from a Python %s process or from a host that does not run Python", get_version(),
                  MBSFMU_PY_VERSION, MBSFMU_PY_VERSION);
            return 0;
        }
        return 1;
    }
    const char* lib = getenv("MBSFMU_LIBPYTHON");
    if (!lib || !*lib) lib = MBSFMU_LIBPYTHON;
    void* h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (!h) {
        logf_(I, fmi2Error, "cannot load the Python library %s (%s). This FMU needs a Python %s installation with "
              "numpy, scipy and PyYAML (documentation/externalDependencies.txt): set MBSFMU_LIBPYTHON to its "
              "libpython%s.so and MBSFMU_PYTHON to its interpreter", lib, dlerror(), MBSFMU_PY_VERSION,
              MBSFMU_PY_VERSION);
        return 0;
    }
    is_init = (int (*)(void))dlsym(h, "Py_IsInitialized");
    get_version = (const char* (*)(void))dlsym(h, "Py_GetVersion");
    void (*config_init)(PyConfig*) = (void (*)(PyConfig*))dlsym(h, "PyConfig_InitIsolatedConfig");
    PyStatus (*config_set)(PyConfig*, wchar_t**, const char*) =
        (PyStatus (*)(PyConfig*, wchar_t**, const char*))dlsym(h, "PyConfig_SetBytesString");
    PyStatus (*initialize)(const PyConfig*) = (PyStatus (*)(const PyConfig*))dlsym(h, "Py_InitializeFromConfig");
    void (*config_clear)(PyConfig*) = (void (*)(PyConfig*))dlsym(h, "PyConfig_Clear");
    int (*is_exception)(PyStatus) = (int (*)(PyStatus))dlsym(h, "PyStatus_Exception");
    PyThreadState* (*save_thread)(void) = (PyThreadState* (*)(void))dlsym(h, "PyEval_SaveThread");
    if (!is_init || !get_version || !config_init || !config_set || !initialize || !config_clear || !is_exception ||
        !save_thread) {
        logf_(I, fmi2Error, "%s is not a usable Python library (missing symbols)", lib);
        return 0;
    }
    if (!version_matches(get_version())) {
        logf_(I, fmi2Error, "%s is Python %.20s, the FMU was built with Python %s", lib, get_version(),
              MBSFMU_PY_VERSION);
        return 0;
    }
    if (is_init()) return 1;             /* loaded and started by another mbsfmu FMU */
    const char* exe = getenv("MBSFMU_PYTHON");
    if (!exe || !*exe) exe = MBSFMU_PYTHON_EXE;
    /* The PyPI ROS 2 wheels add a site hook that re-executes every Python process once with its
       library path set; an embedded interpreter cannot re-execute, and the FMU needs no ROS. */
    setenv("_ROS_WHEELS_BOOTSTRAP_COMPLETE", "1", 0);
    PyConfig config;
    config_init(&config);
    config.install_signal_handlers = 0;  /* leave the host's signal handlers alone */
    PyStatus st = config_set(&config, &config.program_name, exe);
    if (!is_exception(st)) st = initialize(&config);
    config_clear(&config);
    if (is_exception(st)) {
        logf_(I, fmi2Error, "cannot start Python (%s, program %s): %s%s%s", lib, exe, st.func ? st.func : "",
              st.func ? ": " : "", st.err_msg ? st.err_msg : "unknown error");
        return 0;
    }
    save_thread();                       /* release the GIL: pythonfmu takes it per call */
    return 1;
}

#define LOAD(fn)                                                                        \
    do {                                                                                \
        *(void**)(&R.fn) = dlsym(g_real, "fmi2" #fn);                                   \
        if (!R.fn) {                                                                    \
            logf_(I, fmi2Error, "%s has no function fmi2" #fn, path);                   \
            dlclose(g_real);                                                            \
            g_real = NULL;                                                              \
            return 0;                                                                   \
        }                                                                               \
    } while (0)

/* pythonfmu 0.7's binary destroys its interpreter-state holder (a namespace-scope
   std::shared_ptr) twice at process exit: the C++ static destructor (an exit handler) and then its
   library destructor (`finalizePythonInterpreter`: pyState = nullptr on the destroyed shared_ptr)
   releases the freed control block again. glibc's free-list pointers live in that freed block, so
   the write corrupts the heap: "corrupted double-linked list" / "free(): corrupted unsorted
   chunks", raised by whatever frees next (libgfortran's exit handler). Calling
   finalizePythonInterpreter ourselves from an exit handler registered after pythonfmu's (exit
   handlers run last-in first-out) empties the shared_ptr while it is alive; both later releases
   then find it empty. (It never finalises Python here: Python is always running before pythonfmu's
   state holder is made.) When this loader is unloaded first, the handler runs then, equally
   before pythonfmu's binary is closed by unload_real_binary. */
static void (*g_finalize_real)(void) = NULL;

static void release_pythonfmu_state(void)
{
    if (g_real && g_finalize_real) g_finalize_real();
    g_finalize_real = NULL;
}

static int load_real_binary(const Instance* I)
{
    Dl_info info;
    if (!dladdr((void*)&load_real_binary, &info) || !info.dli_fname) {
        logf_(I, fmi2Error, "cannot find the FMU's binary directory (dladdr failed)");
        return 0;
    }
    char path[4096];
    const char* slash = strrchr(info.dli_fname, '/');
    int dir_len = slash ? (int)(slash - info.dli_fname) : 1;
    snprintf(path, sizeof path, "%.*s/%s", dir_len, slash ? info.dli_fname : ".", MBSFMU_REAL_BINARY);
    g_real = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g_real) {
        logf_(I, fmi2Error, "cannot load pythonfmu's binary %s: %s", path, dlerror());
        return 0;
    }
    LOAD(Instantiate); LOAD(FreeInstance); LOAD(SetupExperiment); LOAD(EnterInitializationMode);
    LOAD(ExitInitializationMode); LOAD(Terminate); LOAD(Reset); LOAD(GetReal); LOAD(GetInteger); LOAD(GetBoolean);
    LOAD(GetString); LOAD(SetReal); LOAD(SetInteger); LOAD(SetBoolean); LOAD(SetString); LOAD(GetFMUstate);
    LOAD(SetFMUstate); LOAD(FreeFMUstate); LOAD(SerializedFMUstateSize); LOAD(SerializeFMUstate);
    LOAD(DeSerializeFMUstate); LOAD(GetDirectionalDerivative); LOAD(SetRealInputDerivatives);
    LOAD(GetRealOutputDerivatives); LOAD(DoStep); LOAD(CancelStep); LOAD(GetStatus); LOAD(GetRealStatus);
    LOAD(GetIntegerStatus); LOAD(GetBooleanStatus); LOAD(GetStringStatus);
    *(void**)(&g_finalize_real) = dlsym(g_real, "finalizePythonInterpreter");
    static int registered = 0;
    if (g_finalize_real && !registered) registered = atexit(release_pythonfmu_state) == 0;
    return 1;
}

static int ensure_loaded(const Instance* I)
{
    pthread_mutex_lock(&g_lock);
    int ok = g_real != NULL || (start_python(I) && load_real_binary(I));
    pthread_mutex_unlock(&g_lock);
    return ok;
}

__attribute__((destructor)) static void unload_real_binary(void)
{
    release_pythonfmu_state();
    if (g_real) dlclose(g_real);     /* Python itself stays loaded and initialised */
    g_real = NULL;
}

/* forward declaration: the path of a file: URI (below) */
static int uri_path(const char* uri, char* buf, size_t n);

/* The resources folder: the host's file: URI (file:///p, file://localhost/p, file:/p,
   percent-encoded) as a path, or when the host gives none, the FMU layout next to this binary
   (../../resources). 0 if the URI is not a local file: URI. */
static int resources_dir(const char* uri, char* path, size_t n)
{
    if (uri && *uri) return uri_path(uri, path, n);
    Dl_info info;
    if (!dladdr((void*)&resources_dir, &info) || !info.dli_fname) return 0;
    snprintf(path, n - 16, "%s", info.dli_fname);
    for (int k = 0; k < 3; k++) {                   /* <fmu>/binaries/linux64/<id>.so -> <fmu> */
        char* slash = strrchr(path, '/');
        if (!slash) return 0;
        *slash = '\0';
    }
    strcat(path, "/resources");
    return 1;
}

/* path as the "file://<path>" URI pythonfmu's binary reads (it only strips "file://" and decodes
   %20); malloc'ed */
static char* resources_uri(const char* path)
{
    size_t n = strlen(path), spaces = 0;
    for (size_t k = 0; k < n; k++) spaces += path[k] == ' ';
    char* out = malloc(n + 2 * spaces + 8);
    if (!out) return NULL;
    char* q = out + sprintf(out, "file://");
    for (size_t k = 0; k < n; k++) {
        if (path[k] == ' ') q += sprintf(q, "%%20");
        else *q++ = path[k];
    }
    *q = '\0';
    return out;
}

/* ---- value checks ------------------------------------------------------------------------ */
static const char* type_name(char t)
{
    return t == 'R' ? "Real" : t == 'I' ? "Integer" : t == 'E' ? "Enumeration" : t == 'B' ? "Boolean" : "String";
}

/* the declared range as text: "[0, 1]", ">= 0" or "<= 1" */
static void range_text(const Variable* v, char* buf, size_t n)
{
    if (!isnan(v->min) && !isnan(v->max)) snprintf(buf, n, "outside [%.17g, %.17g]", v->min, v->max);
    else if (!isnan(v->min)) snprintf(buf, n, "below the minimum %.17g", v->min);
    else snprintf(buf, n, "above the maximum %.17g", v->max);
}

/* vr and values of an fmi2Get / fmi2Set call: pointers, value references and types.
   type: the function's type ('R', 'I', 'B', 'S'); an Integer call also takes Enumerations */
static fmi2Status check_refs(const Instance* I, const char* fn, const fmi2ValueReference vr[], size_t nvr,
                             const void* values, char type)
{
    if (nvr == 0) return fmi2OK;
    if (!vr || !values) {
        logf_(I, fmi2Error, "%s: %s is NULL (nvr = %zu)", fn, !vr ? "the value reference array vr" : "the value array",
              nvr);
        return fmi2Error;
    }
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] >= N_VARS) {
            logf_(I, fmi2Error, "%s: value reference %u does not exist (the FMU has value references 0 to %u)", fn,
                  vr[k], (unsigned)N_VARS - 1);
            return fmi2Error;
        }
        const Variable* v = &MBSFMU_VARS[vr[k]];
        if (!(v->type == type || (type == 'I' && v->type == 'E'))) {
            logf_(I, fmi2Error, "%s: %s (value reference %u) is of type %s, not %s", fn, v->name, vr[k],
                  type_name(v->type), type_name(type));
            return fmi2Error;
        }
    }
    return fmi2OK;
}

/* fmi2Set*: causality, phase, finiteness and the declared min/max; rv or iv: the values */
static fmi2Status check_set(const Instance* I, const char* fn, const fmi2ValueReference vr[], size_t nvr, char type,
                            const fmi2Real* rv, const fmi2Integer* iv)
{
    if (check_refs(I, fn, vr, nvr, rv ? (const void*)rv : (const void*)iv, type) != fmi2OK) return fmi2Error;
    for (size_t k = 0; k < nvr; k++) {
        const Variable* v = &MBSFMU_VARS[vr[k]];
        if (v->causality == 'o') {
            logf_(I, fmi2Error, "%s: %s is an output and cannot be set", fn, v->name);
            return fmi2Error;
        }
        if (v->causality == 'p' && I->initialized) {
            logf_(I, fmi2Error, "%s: parameter %s is fixed: set it before fmi2ExitInitializationMode (or after "
                  "fmi2Reset)", fn, v->name);
            return fmi2Error;
        }
        if (I->phase == PHASE_TERMINATED) {
            logf_(I, fmi2Error, "%s: %s cannot be set after fmi2Terminate (fmi2Reset first)", fn, v->name);
            return fmi2Error;
        }
        double x = rv ? rv[k] : (double)iv[k];
        if (rv && !isfinite(x)) {
            logf_(I, fmi2Error, "%s: %s = %g rejected: values must be finite; %s keeps its previous value", fn,
                  v->name, x, v->name);
            return fmi2Error;
        }
        if ((!isnan(v->min) && x < v->min) || (!isnan(v->max) && x > v->max)) {
            char range[96];
            range_text(v, range, sizeof range);
            logf_(I, fmi2Error, "%s: %s = %.17g rejected: %s; %s keeps its previous value", fn, v->name, x, range,
                  v->name);
            return fmi2Error;
        }
    }
    return fmi2OK;
}

/* ---- instances and states: registry, phase ---------------------------------------------- */
/* the live instance c, or NULL (a freed, foreign or NULL component): found by address in the
   registry, so freed memory is never read */
static Instance* lookup(fmi2Component c)
{
    Instance* found = NULL;
    pthread_mutex_lock(&g_lock);
    for (Instance* I = g_instances; I; I = I->next)
        if ((void*)I == c) {
            found = I;
            break;
        }
    pthread_mutex_unlock(&g_lock);
    return found && found->magic == INSTANCE_MAGIC ? found : NULL;
}

static void refused(const char* fn, fmi2Component c)
{
    fprintf(stderr, "mbsfmu FMU: %s: %p is not a live instance of this FMU (NULL, freed or foreign): refused with "
            "fmi2Error\n", fn, c);
}

static State* find_state(const Instance* I, fmi2FMUstate s)
{
    for (State* S = I->states; S; S = S->next)
        if ((void*)S == s) return S;
    return NULL;
}

static void drop_state(Instance* I, State* S)
{
    for (State** p = &I->states; *p; p = &(*p)->next)
        if (*p == S) {
            *p = S->next;
            break;
        }
    if (!I->fatal && S->inner) R.FreeFMUstate(I->inner, &S->inner);
    S->magic = 0;
    free(S);
}

static const char* phase_name(Phase p)
{
    switch (p) {
    case PHASE_INSTANTIATED: return "instantiated (before fmi2EnterInitializationMode)";
    case PHASE_INIT_MODE: return "initialization mode";
    case PHASE_STEPPING: return "step mode";
    default: return "terminated (after fmi2Terminate)";
    }
}

/* the status of a forwarded call: pythonfmu's, made at least as severe as what the slave logged
   during the call (the slave reports a failed call by logging it with status error: pythonfmu
   itself knows only OK, Discard (do_step returned False) and Fatal (a Python exception)) */
static fmi2Status call_status(Instance* I, fmi2Status s)
{
    if (s == fmi2Fatal) {
        I->fatal = 1;
        return s;
    }
    fmi2Status logged = I->worst_logged >= fmi2Error ? fmi2Error : I->worst_logged;
    return logged > s ? logged : s;
}

#define INST(c)                                                                            \
    Instance* I = lookup(c);                                                               \
    if (!I) {                                                                              \
        refused(__func__, c);                                                              \
        return fmi2Error;                                                                  \
    }                                                                                      \
    if (!I->inner) return fmi2Error;                                                       \
    if (I->fatal) {                                                                        \
        logf_(I, fmi2Error, "%s: the instance had a fatal error; only fmi2FreeInstance is allowed", __func__); \
        return fmi2Error;                                                                  \
    }                                                                                      \
    I->worst_logged = fmi2OK

/* pythonfmu turns a Python exception into fmi2Fatal after releasing the instance's Python
   objects, and releases them again in fmi2FreeInstance (a double free that corrupts the
   interpreter). After fmi2Fatal the instance is therefore never used nor freed again. The slave
   catches its own exceptions, so Fatal means a defect, not bad input. */
#define FORWARD(call) return call_status(I, (call))

static int require_phase(Instance* I, const char* fn, unsigned allowed)
{
    if (allowed & (1u << I->phase)) return 1;
    logf_(I, fmi2Error, "%s is not allowed in %s", fn, phase_name(I->phase));
    return 0;
}
#define ALLOW(p) (1u << (p))

EXPORT const char* fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char* fmi2GetVersion(void) { return "2.0"; }

/* pythonfmu's binary imports the slave module by name at every fmi2Instantiate and takes the
   class from the module it gets. A host that unpacked this FMU before, ran it and deleted that
   folder (fmpy.simulate_fmu does) leaves the old module in sys.modules, pointing at files that are
   gone: pythonfmu then finds no class ("has no attribute ''") and the instance fails. Drop such a
   stale module so that it is imported again from this unpacking's resources. */
static void forget_stale_slave_module(const char* path)
{
    char file[4096], name[512] = "";
    snprintf(file, sizeof file, "%s/slavemodule.txt", path);
    FILE* f = fopen(file, "r");
    if (!f) return;
    if (!fgets(name, sizeof name, f)) name[0] = 0;
    fclose(f);
    name[strcspn(name, "\r\n")] = 0;
    PyGILState_STATE (*ensure)(void) = (PyGILState_STATE (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    void (*release)(PyGILState_STATE) = (void (*)(PyGILState_STATE))dlsym(RTLD_DEFAULT, "PyGILState_Release");
    PyObject* (*modules_of)(void) = (PyObject* (*)(void))dlsym(RTLD_DEFAULT, "PyImport_GetModuleDict");
    PyObject* (*get)(PyObject*, const char*) = (PyObject* (*)(PyObject*, const char*))dlsym(RTLD_DEFAULT,
                                                                                           "PyDict_GetItemString");
    int (*del)(PyObject*, const char*) = (int (*)(PyObject*, const char*))dlsym(RTLD_DEFAULT, "PyDict_DelItemString");
    PyObject* (*attr)(PyObject*, const char*) = (PyObject* (*)(PyObject*, const char*))dlsym(RTLD_DEFAULT,
                                                                                            "PyObject_GetAttrString");
    const char* (*utf8)(PyObject*) = (const char* (*)(PyObject*))dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8");
    void (*decref)(PyObject*) = (void (*)(PyObject*))dlsym(RTLD_DEFAULT, "Py_DecRef");
    void (*clear)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "PyErr_Clear");
    if (!name[0] || !ensure || !release || !modules_of || !get || !del || !attr || !utf8 || !decref || !clear) return;
    PyGILState_STATE gil = ensure();
    PyObject* modules = modules_of();
    PyObject* module = modules ? get(modules, name) : NULL;
    if (module) {
        PyObject* where = attr(module, "__file__");
        const char* text = where ? utf8(where) : NULL;
        if (text && access(text, F_OK) != 0) del(modules, name);
        if (where) decref(where);
    }
    clear();
    release(gil);
}

/* path of a file: URI (file:///p, file://localhost/p, file:/p; percent-decoded) into buf; 0 if
   the URI is not a file: URI or too long */
static int uri_path(const char* uri, char* buf, size_t n)
{
    if (!uri || strncmp(uri, "file:", 5) != 0) return 0;
    const char* p = uri + 5;
    if (strncmp(p, "//", 2) == 0) {
        p += 2;
        if (strncmp(p, "localhost", 9) == 0) p += 9;
        else if (*p != '/') return 0;          /* file://host/...: another machine */
    }
    size_t k = 0;
    for (; *p; p++) {
        unsigned hex;
        if (k + 1 >= n) return 0;
        if (p[0] == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2]) &&
            sscanf(p + 1, "%2x", &hex) == 1) {
            buf[k++] = (char)hex;
            p += 2;
        } else {
            buf[k++] = *p;
        }
    }
    buf[k] = '\0';
    while (k > 1 && buf[k - 1] == '/') buf[--k] = '\0';
    return k > 0;
}

/* is dir this FMU's resources folder? slavemodule.txt names a module whose file is there and
   mbsfmu_build.json carries this binary's GUID; else why (in why, for the log) */
static int is_own_resources(const char* dir, char* why, size_t n)
{
    char file[4200], name[256] = "";
    snprintf(file, sizeof file, "%s/slavemodule.txt", dir);
    FILE* f = fopen(file, "r");
    if (!f) {
        snprintf(why, n, "%s has no slavemodule.txt", dir);
        return 0;
    }
    if (!fgets(name, sizeof name, f)) name[0] = '\0';
    fclose(f);
    name[strcspn(name, "\r\n")] = '\0';
    int ok = name[0] != '\0';
    for (const char* c = name; *c; c++) ok = ok && (isalnum((unsigned char)*c) || *c == '_');
    if (!ok) {
        snprintf(why, n, "%s: slavemodule.txt does not name a Python module", dir);
        return 0;
    }
    snprintf(file, sizeof file, "%s/%s.py", dir, name);
    if (access(file, R_OK) != 0) {
        snprintf(why, n, "%s has no %s.py", dir, name);
        return 0;
    }
    snprintf(file, sizeof file, "%s/mbsfmu_build.json", dir);
    f = fopen(file, "r");
    char text[8192];
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[got] = '\0';
    if (!strstr(text, "\"guid\": \"" MBSFMU_GUID "\"")) {
        snprintf(why, n, "%s/mbsfmu_build.json is %s", dir, f ? "from another FMU (GUID differs)" : "missing");
        return 0;
    }
    return 1;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const Callbacks* functions, fmi2Boolean visible,
                                     fmi2Boolean loggingOn)
{
    if (!functions || !functions->logger) {
        fprintf(stderr, "mbsfmu FMU: fmi2Instantiate: no callback functions or no logger given: not instantiated\n");
        return NULL;
    }
    Instance* I = calloc(1, sizeof *I);
    if (!I) return NULL;
    I->name = strdup(instanceName ? instanceName : "");
    I->host_logger = functions->logger;
    I->host_env = functions->componentEnvironment;
    I->cb = *functions;
    if (!I->cb.allocateMemory || !I->cb.freeMemory) {    /* canNotUseMemoryManagementFunctions */
        I->cb.allocateMemory = calloc;
        I->cb.freeMemory = free;
    }
    I->cb.logger = shim_logger;
    I->cb.componentEnvironment = I;
    I->logging_on = loggingOn;
    char resources[4096], why[4400];
    if (!I->name) {
        /* out of memory */
    } else if (!instanceName) {
        logf_(I, fmi2Error, "fmi2Instantiate: instanceName is NULL");
    } else if (fmuType != fmi2CoSimulation) {
        logf_(I, fmi2Error, "fmi2Instantiate: this FMU supports Co-Simulation only");
    } else if (!fmuGUID || strcmp(fmuGUID, MBSFMU_GUID) != 0) {
        logf_(I, fmi2Error, "fmi2Instantiate: GUID %s does not match the FMU's %s (modelDescription.xml and binary "
              "from different builds)", fmuGUID ? fmuGUID : "NULL", MBSFMU_GUID);
    } else if (!resources_dir(fmuResourceLocation, resources, sizeof resources)) {
        logf_(I, fmi2Error, "fmi2Instantiate: fmuResourceLocation %s is not a file: URI of a local folder",
              fmuResourceLocation ? fmuResourceLocation : "NULL");
    } else if (!is_own_resources(resources, why, sizeof why)) {
        logf_(I, fmi2Error, "fmi2Instantiate: fmuResourceLocation %s is not this FMU's resources folder: %s",
              fmuResourceLocation ? fmuResourceLocation : "NULL", why);
    } else if (ensure_loaded(I)) {
        char* uri = resources_uri(resources);
        if (uri) {
            forget_stale_slave_module(resources);
            I->inner = R.Instantiate(I->name, fmuType, fmuGUID, uri, &I->cb, visible, fmi2True);
            free(uri);
        }
        if (I->inner) {
            I->magic = INSTANCE_MAGIC;
            I->phase = PHASE_INSTANTIATED;
            pthread_mutex_lock(&g_lock);
            I->next = g_instances;
            g_instances = I;
            pthread_mutex_unlock(&g_lock);
            return I;
        }
        logf_(I, fmi2Error, "fmi2Instantiate: the Python slave could not be created (see the messages above)");
    }
    free(I->name);
    free(I);
    return NULL;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    Instance* I = NULL;
    pthread_mutex_lock(&g_lock);
    for (Instance** p = &g_instances; *p; p = &(*p)->next)
        if ((void*)*p == c) {
            I = *p;
            *p = I->next;
            break;
        }
    pthread_mutex_unlock(&g_lock);
    if (!I) {
        if (c) refused("fmi2FreeInstance", c);
        return;
    }
    while (I->states) drop_state(I, I->states);
    if (I->inner && !I->fatal) R.FreeInstance(I->inner);
    for (size_t k = 0; k < I->n_categories; k++) free(I->categories[k]);
    free(I->categories);
    free(I->name);
    I->magic = 0;
    free(I);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                                      const fmi2String categories[])
{
    INST(c);
    if (nCategories > 0 && !categories) {
        logf_(I, fmi2Error, "fmi2SetDebugLogging: categories is NULL (nCategories = %zu)", nCategories);
        return fmi2Error;
    }
    for (size_t k = 0; k < I->n_categories; k++) free(I->categories[k]);
    free(I->categories);
    I->categories = NULL;
    I->n_categories = 0;
    I->logging_on = loggingOn;
    if (nCategories > 0) {
        I->categories = calloc(nCategories, sizeof(char*));
        if (!I->categories) return fmi2Error;
        for (size_t k = 0; k < nCategories; k++) I->categories[k] = strdup(categories[k] ? categories[k] : "");
        I->n_categories = nCategories;
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                                      fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    INST(c);
    if (!require_phase(I, "fmi2SetupExperiment", ALLOW(PHASE_INSTANTIATED))) return fmi2Error;
    if (!isfinite(startTime)) {
        logf_(I, fmi2Error, "fmi2SetupExperiment: startTime = %g: must be finite", startTime);
        return fmi2Error;
    }
    if (stopTimeDefined && !(isfinite(stopTime) && stopTime >= startTime)) {
        logf_(I, fmi2Error, "fmi2SetupExperiment: stopTime = %g: must be finite and >= startTime = %.17g", stopTime,
              startTime);
        return fmi2Error;
    }
    if (toleranceDefined && !(isfinite(tolerance) && tolerance > 0)) {
        logf_(I, fmi2Error, "fmi2SetupExperiment: tolerance = %g: must be finite and > 0", tolerance);
        return fmi2Error;
    }
    FORWARD(R.SetupExperiment(I->inner, toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime));
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    INST(c);
    if (!require_phase(I, "fmi2EnterInitializationMode", ALLOW(PHASE_INSTANTIATED))) return fmi2Error;
    fmi2Status s = call_status(I, R.EnterInitializationMode(I->inner));
    if (s <= fmi2Warning) I->phase = PHASE_INIT_MODE;
    return s;
}

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    INST(c);
    if (!require_phase(I, "fmi2ExitInitializationMode", ALLOW(PHASE_INIT_MODE))) return fmi2Error;
    fmi2Status s = call_status(I, R.ExitInitializationMode(I->inner));
    if (s <= fmi2Warning) {              /* on fmi2Error the instance stays in initialization mode */
        I->initialized = 1;
        I->phase = PHASE_STEPPING;
    }
    return s;
}

EXPORT fmi2Status fmi2Terminate(fmi2Component c)
{
    INST(c);
    if (!require_phase(I, "fmi2Terminate", ALLOW(PHASE_STEPPING))) return fmi2Error;
    fmi2Status s = call_status(I, R.Terminate(I->inner));
    if (s <= fmi2Warning) I->phase = PHASE_TERMINATED;
    return s;
}

EXPORT fmi2Status fmi2Reset(fmi2Component c)
{
    INST(c);
    fmi2Status s = call_status(I, R.Reset(I->inner));
    if (s <= fmi2Warning) {
        I->initialized = 0;
        I->phase = PHASE_INSTANTIATED;
    }
    return s;
}

#define GET(T, ty, fn, call)                                                                           \
    EXPORT fmi2Status fn(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, T value[])         \
    {                                                                                                   \
        INST(c);                                                                                        \
        if (check_refs(I, #fn, vr, nvr, value, ty) != fmi2OK) return fmi2Error;                         \
        if (nvr == 0) return fmi2OK;                                                                    \
        FORWARD(call(I->inner, vr, nvr, value));                                                        \
    }
GET(fmi2Real, 'R', fmi2GetReal, R.GetReal)
GET(fmi2Integer, 'I', fmi2GetInteger, R.GetInteger)
GET(fmi2Boolean, 'B', fmi2GetBoolean, R.GetBoolean)
GET(fmi2String, 'S', fmi2GetString, R.GetString)

EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[])
{
    INST(c);
    if (check_set(I, "fmi2SetReal", vr, nvr, 'R', value, NULL) != fmi2OK) return fmi2Error;
    if (nvr == 0) return fmi2OK;
    FORWARD(R.SetReal(I->inner, vr, nvr, value));
}

EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Integer value[])
{
    INST(c);
    if (check_set(I, "fmi2SetInteger", vr, nvr, 'I', NULL, value) != fmi2OK) return fmi2Error;
    if (nvr == 0) return fmi2OK;
    FORWARD(R.SetInteger(I->inner, vr, nvr, value));
}

EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Boolean value[])
{
    INST(c);
    return check_refs(I, "fmi2SetBoolean", vr, nvr, value, 'B');   /* no Boolean variables: OK only for nvr = 0 */
}

EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2String value[])
{
    INST(c);
    return check_refs(I, "fmi2SetString", vr, nvr, value, 'S');    /* no String variables: OK only for nvr = 0 */
}

/* ---- FMU state ---------------------------------------------------------------------------- */
/* A serialised state is "MBSFMU-FMUSTATE 2 <GUID> <payload length, 16 hex> <CRC-32 of the
   payload, 8 hex>\n" + the slave's JSON payload (slave.py writes it). The header is checked here,
   before Python sees the bytes, so a foreign, truncated or corrupted blob gets fmi2Error. */
#define STATE_TAG "MBSFMU-FMUSTATE 2 "
#define STATE_HEADER (sizeof(STATE_TAG) - 1 + 36 + 1 + 16 + 1 + 8 + 1)

static unsigned long crc32_of(const unsigned char* p, size_t n)
{
    unsigned long crc = 0xFFFFFFFFul;
    for (size_t k = 0; k < n; k++) {
        crc ^= p[k];
        for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (0xEDB88320ul & (0ul - (crc & 1ul)));
    }
    return crc ^ 0xFFFFFFFFul;
}

static int parse_hex(const char* p, int digits, unsigned long long* out)
{
    unsigned long long v = 0;
    for (int k = 0; k < digits; k++) {
        int c = (unsigned char)p[k], d = isdigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (d < 0) return 0;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return 1;
}

/* why the blob is not a state of this FMU, or NULL */
static const char* check_blob(const fmi2Byte* bytes, size_t size)
{
    const char* b = bytes;
    unsigned long long len, crc;
    if (size < STATE_HEADER || memcmp(b, STATE_TAG, sizeof(STATE_TAG) - 1) != 0)
        return "not an mbsfmu FMU state (wrong header: foreign or corrupted bytes)";
    const char* g = b + sizeof(STATE_TAG) - 1;
    if (memcmp(g, MBSFMU_GUID, 36) != 0 || g[36] != ' ') return "a state of another FMU (GUID differs)";
    if (!parse_hex(g + 37, 16, &len) || g[53] != ' ' || !parse_hex(g + 54, 8, &crc) || g[62] != '\n')
        return "corrupted header";
    if (len != size - STATE_HEADER) return "truncated or extended: the length does not match the header";
    if (crc32_of((const unsigned char*)b + STATE_HEADER, (size_t)len) != crc)
        return "corrupted: the CRC-32 of the payload does not match";
    return NULL;
}

static State* new_state(Instance* I, fmi2FMUstate inner)
{
    State* S = calloc(1, sizeof *S);
    if (!S) {
        R.FreeFMUstate(I->inner, &inner);
        logf_(I, fmi2Error, "out of memory for an FMU state");
        return NULL;
    }
    S->magic = STATE_MAGIC;
    S->owner = I;
    S->inner = inner;
    S->next = I->states;
    I->states = S;
    return S;
}

static State* own_state(Instance* I, const char* fn, fmi2FMUstate s)
{
    State* S = s ? find_state(I, s) : NULL;
    if (!S || S->magic != STATE_MAGIC || !S->inner) {
        logf_(I, fmi2Error, "%s: %p is not an FMU state of this instance (NULL, freed, foreign or another "
              "instance's)", fn, s);
        return NULL;
    }
    return S;
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* state)
{
    INST(c);
    if (!state) {
        logf_(I, fmi2Error, "fmi2GetFMUstate: state is NULL");
        return fmi2Error;
    }
    fmi2FMUstate inner = NULL;
    fmi2Status s = call_status(I, R.GetFMUstate(I->inner, &inner));
    if (s > fmi2Warning || !inner) return s > fmi2Warning ? s : fmi2Error;
    State* S = *state ? find_state(I, *state) : NULL;     /* an existing state is updated in place */
    if (S) {
        R.FreeFMUstate(I->inner, &S->inner);
        S->inner = inner;
        return s;
    }
    S = new_state(I, inner);
    if (!S) return fmi2Error;
    *state = S;
    return s;
}

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{
    INST(c);
    State* S = own_state(I, "fmi2SetFMUstate", state);
    if (!S) return fmi2Error;
    if (I->phase == PHASE_TERMINATED) {
        logf_(I, fmi2Error, "fmi2SetFMUstate is not allowed after fmi2Terminate (fmi2Reset first)");
        return fmi2Error;
    }
    fmi2Status s = call_status(I, R.SetFMUstate(I->inner, S->inner));
    return s;
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* state)
{
    INST(c);
    if (!state || !*state) return fmi2OK;
    State* S = own_state(I, "fmi2FreeFMUstate", *state);
    if (!S) return fmi2Error;
    drop_state(I, S);
    *state = NULL;
    return fmi2OK;
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t* size)
{
    INST(c);
    if (!size) {
        logf_(I, fmi2Error, "fmi2SerializedFMUstateSize: size is NULL");
        return fmi2Error;
    }
    State* S = own_state(I, "fmi2SerializedFMUstateSize", state);
    if (!S) return fmi2Error;
    FORWARD(R.SerializedFMUstateSize(I->inner, S->inner, size));
}

EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size)
{
    INST(c);
    State* S = own_state(I, "fmi2SerializeFMUstate", state);
    if (!S) return fmi2Error;
    size_t need = 0;
    fmi2Status s = call_status(I, R.SerializedFMUstateSize(I->inner, S->inner, &need));
    if (s > fmi2Warning) return s;
    if (!bytes || size < need) {
        logf_(I, fmi2Error, "fmi2SerializeFMUstate: %s (the state needs %zu bytes, fmi2SerializedFMUstateSize)",
              !bytes ? "bytes is NULL" : "the buffer is too small", need);
        return fmi2Error;
    }
    I->worst_logged = fmi2OK;
    FORWARD(R.SerializeFMUstate(I->inner, S->inner, bytes, need));
}

EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size, fmi2FMUstate* state)
{
    INST(c);
    if (!bytes || !state) {
        logf_(I, fmi2Error, "fmi2DeSerializeFMUstate: %s is NULL", !bytes ? "bytes" : "state");
        return fmi2Error;
    }
    const char* why = check_blob(bytes, size);
    if (why) {
        logf_(I, fmi2Error, "fmi2DeSerializeFMUstate: %zu bytes refused: %s", size, why);
        return fmi2Error;
    }
    fmi2FMUstate inner = NULL;
    fmi2Status s = call_status(I, R.DeSerializeFMUstate(I->inner, bytes, size, &inner));
    if (s > fmi2Warning || !inner) return s > fmi2Warning ? s : fmi2Error;
    State* S = new_state(I, inner);
    if (!S) return fmi2Error;
    *state = S;
    return s;
}

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[], size_t nUnknown,
                                               const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                               const fmi2Real dvKnown[], fmi2Real dvUnknown[])
{
    INST(c);
    (void)vUnknown_ref; (void)nUnknown; (void)vKnown_ref; (void)nKnown; (void)dvKnown; (void)dvUnknown;
    logf_(I, fmi2Error, "fmi2GetDirectionalDerivative: not provided (providesDirectionalDerivative is false)");
    return fmi2Error;
}

EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                              const fmi2Integer order[], const fmi2Real value[])
{
    INST(c);
    (void)vr; (void)nvr; (void)order; (void)value;
    logf_(I, fmi2Error, "fmi2SetRealInputDerivatives: not provided (canInterpolateInputs is false)");
    return fmi2Error;
}

EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                               const fmi2Integer order[], fmi2Real value[])
{
    INST(c);
    (void)vr; (void)nvr; (void)order; (void)value;
    logf_(I, fmi2Error, "fmi2GetRealOutputDerivatives: not provided (maxOutputDerivativeOrder is 0)");
    return fmi2Error;
}

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize,
                             fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    INST(c);
    if (!require_phase(I, "fmi2DoStep", ALLOW(PHASE_STEPPING))) return fmi2Error;
    if (!isfinite(currentCommunicationPoint) || !isfinite(communicationStepSize) || communicationStepSize <= 0 ||
        !isfinite(currentCommunicationPoint + communicationStepSize)) {
        logf_(I, fmi2Error, "fmi2DoStep(t = %g, dt = %g): t must be finite and dt finite and > 0",
              currentCommunicationPoint, communicationStepSize);
        return fmi2Error;
    }
    FORWARD(R.DoStep(I->inner, currentCommunicationPoint, communicationStepSize, noSetFMUStatePriorToCurrentPoint));
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c)
{
    INST(c);
    logf_(I, fmi2Error, "fmi2CancelStep: fmi2DoStep never returns fmi2Pending (canRunAsynchronuously is false)");
    return fmi2Error;
}

#define STATUS(T, fn, call)                                                                             \
    EXPORT fmi2Status fn(fmi2Component c, const fmi2StatusKind s, T* value)                             \
    {                                                                                                   \
        INST(c);                                                                                        \
        if (!value) {                                                                                   \
            logf_(I, fmi2Error, #fn ": value is NULL");                                                 \
            return fmi2Error;                                                                           \
        }                                                                                               \
        FORWARD(call(I->inner, s, value));                                                              \
    }
STATUS(fmi2Status, fmi2GetStatus, R.GetStatus)
STATUS(fmi2Real, fmi2GetRealStatus, R.GetRealStatus)
STATUS(fmi2Integer, fmi2GetIntegerStatus, R.GetIntegerStatus)
STATUS(fmi2Boolean, fmi2GetBooleanStatus, R.GetBooleanStatus)
STATUS(fmi2String, fmi2GetStringStatus, R.GetStringStatus)
