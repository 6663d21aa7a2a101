/*
 * mbsfmu FMU loader: binaries/linux64/<modelIdentifier>.so of an mbsfmu FMU.
 *
 * pythonfmu's binary (shipped in the FMU as binaries/linux64/<modelIdentifier>.pythonfmu.so)
 * does not link libpython, so a host that does not run Python itself cannot load it without
 * LD_PRELOAD. This loader, compiled by `mbsfmu build-fmu` against the building Python's headers,
 * is the FMU's binary instead. On the first fmi2Instantiate it
 *   1. joins the Python that already runs in the host process (fmpy, ...) if its version
 *      matches, or else dlopen()s the libpython recorded at build time with RTLD_GLOBAL |
 *      RTLD_NODELETE and initialises it (isolated config: PYTHONPATH/PYTHONHOME of the host are
 *      ignored; program_name = the building interpreter, so its prefix, venv and site-packages
 *      are found). Python is never finalised: numpy cannot be loaded twice into one process, and
 *      unloading and loading the FMU again must work;
 *   2. dlopen()s pythonfmu's real binary next to this file and forwards every fmi2 function.
 * It also does what pythonfmu's binary does not:
 *   - fmi2SetReal/Integer/Boolean/String check the value references, types, causality,
 *     the initialisation phase (parameters are fixed after fmi2ExitInitializationMode),
 *     finiteness and the declared min/max, and return fmi2Error with a logged reason instead
 *     of passing bad values on (the variable keeps its value);
 *   - messages with a status other than fmi2OK always reach the host's logger (pythonfmu
 *     forwards nothing unless debug logging is on); fmi2OK messages follow
 *     fmi2SetDebugLogging / loggingOn.
 * Overrides for a machine other than the build machine: MBSFMU_LIBPYTHON (path of a libpython
 * of the same minor version), MBSFMU_PYTHON (the interpreter whose prefix and site-packages
 * to use).
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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
typedef struct {
    fmi2Component inner;         /* pythonfmu's component */
    Callbacks cb;                /* given to pythonfmu: our logger, this instance as environment */
    fmi2CallbackLogger host_logger;
    fmi2ComponentEnvironment host_env;
    char* name;
    int logging_on;
    size_t n_categories;
    char** categories;
    int initialized;             /* fmi2ExitInitializationMode has succeeded */
    int fatal;                   /* pythonfmu returned fmi2Fatal: its instance is released (see GUARD) */
} Instance;

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

/* logger given to pythonfmu (whose debug logging is always on): filter, then forward */
static void shim_logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status, fmi2String category,
                        fmi2String message, ...)
{
    const Instance* I = env;
    if (!I || !message) return;
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
        logf_(I, fmi2Error, "cannot load the Python library %s (%s). This FMU runs the Python it was built with "
              "(Python %s, %s) with numpy, scipy and PyYAML installed; install that Python at the same path, or set "
              "MBSFMU_LIBPYTHON to a libpython%s.so and MBSFMU_PYTHON to its interpreter", lib, dlerror(),
              MBSFMU_PY_VERSION, MBSFMU_PYTHON_EXE, MBSFMU_PY_VERSION);
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
    if (g_real) dlclose(g_real);     /* Python itself stays loaded and initialised */
    g_real = NULL;
}

/* The resources as the "file://<path>" URI pythonfmu's binary reads (it only strips "file://"
   and decodes %20): from the host's URI (file:///p, file://localhost/p, file:/p, percent-encoded),
   or, when the host gives none, the FMU layout next to this binary (../../resources). */
static char* resources_uri(const char* uri)
{
    char path[4096];
    size_t n = 0;
    if (uri && strncmp(uri, "file:", 5) == 0) {
        const char* p = uri + 5;
        if (strncmp(p, "//", 2) == 0) {
            p += 2;
            if (strncmp(p, "localhost", 9) == 0) p += 9;
        }
        for (; *p && n + 1 < sizeof path; p++) {
            unsigned hex;
            if (p[0] == '%' && p[1] && p[2] && sscanf(p + 1, "%2x", &hex) == 1) {
                path[n++] = (char)hex;
                p += 2;
            } else {
                path[n++] = *p;
            }
        }
    } else {
        Dl_info info;
        if (!dladdr((void*)&resources_uri, &info) || !info.dli_fname) return NULL;
        snprintf(path, sizeof path - 16, "%s", info.dli_fname);
        for (int k = 0; k < 3; k++) {                   /* <fmu>/binaries/linux64/<id>.so -> <fmu> */
            char* slash = strrchr(path, '/');
            if (!slash) return NULL;
            *slash = '\0';
        }
        n = strlen(path);
        strcpy(path + n, "/resources");
        n += strlen("/resources");
    }
    path[n < sizeof path ? n : sizeof path - 1] = '\0';
    while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
    size_t spaces = 0;
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

/* ---- value checks for fmi2Set* ----------------------------------------------------------- */
static const char* type_name(char t)
{
    return t == 'R' ? "Real" : t == 'I' ? "Integer" : t == 'E' ? "Enumeration" : t == 'B' ? "Boolean" : "String";
}

/* type: the fmi2Set function's type ('R', 'I', 'B', 'S'); values: real or integer values */
static fmi2Status check_set(const Instance* I, const char* fn, const fmi2ValueReference vr[], size_t nvr, char type,
                            const fmi2Real* rv, const fmi2Integer* iv)
{
    if (nvr > 0 && !vr) {
        logf_(I, fmi2Error, "%s: vr is NULL", fn);
        return fmi2Error;
    }
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] >= N_VARS) {
            logf_(I, fmi2Error, "%s: value reference %u does not exist (the FMU has %u variables)", fn, vr[k],
                  (unsigned)N_VARS);
            return fmi2Error;
        }
        const Variable* v = &MBSFMU_VARS[vr[k]];
        if (!(v->type == type || (type == 'I' && v->type == 'E'))) {
            logf_(I, fmi2Error, "%s: %s (value reference %u) is of type %s", fn, v->name, vr[k], type_name(v->type));
            return fmi2Error;
        }
        if (v->causality == 'o') {
            logf_(I, fmi2Error, "%s: %s is an output and cannot be set", fn, v->name);
            return fmi2Error;
        }
        if (v->causality == 'p' && I->initialized) {
            logf_(I, fmi2Error, "%s: parameter %s is fixed: set it before fmi2ExitInitializationMode (or after "
                  "fmi2Reset)", fn, v->name);
            return fmi2Error;
        }
        double x = rv ? rv[k] : (double)iv[k];
        if (rv && !isfinite(x)) {
            logf_(I, fmi2Error, "%s: %s = %g rejected: values must be finite; %s keeps its previous value", fn,
                  v->name, x, v->name);
            return fmi2Error;
        }
        if ((!isnan(v->min) && x < v->min) || (!isnan(v->max) && x > v->max)) {
            logf_(I, fmi2Error, "%s: %s = %.17g rejected: outside [%g, %g]; %s keeps its previous value", fn, v->name,
                  x, v->min, v->max, v->name);
            return fmi2Error;
        }
    }
    return fmi2OK;
}

/* ---- the FMI 2.0 Co-Simulation API ------------------------------------------------------- */
#define INST(c)                                                                            \
    Instance* I = (Instance*)(c);                                                          \
    if (!I || !I->inner) return fmi2Error;                                                 \
    if (I->fatal) {                                                                        \
        logf_(I, fmi2Error, "%s: the instance had a fatal error; only fmi2FreeInstance is allowed", __func__); \
        return fmi2Error;                                                                  \
    }

/* pythonfmu turns a Python exception into fmi2Fatal after releasing the instance's Python
   objects, and releases them again in fmi2FreeInstance (a double free that corrupts the
   interpreter). After fmi2Fatal the instance is therefore never used nor freed again. */
#define GUARD(call) return guard(I, (call))
static fmi2Status guard(Instance* I, fmi2Status s)
{
    if (s == fmi2Fatal) I->fatal = 1;
    return s;
}

EXPORT const char* fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char* fmi2GetVersion(void) { return "2.0"; }

/* pythonfmu's binary imports the slave module by name at every fmi2Instantiate and takes the
   class from the module it gets. A host that unpacked this FMU before, ran it and deleted that
   folder (fmpy.simulate_fmu does) leaves the old module in sys.modules, pointing at files that are
   gone: pythonfmu then finds no class ("has no attribute ''") and the instance fails. Drop such a
   stale module so that it is imported again from this unpacking's resources. */
static void forget_stale_slave_module(const char* resources)
{
    const char* path = strncmp(resources, "file://", 7) == 0 ? resources + 7 : resources;
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

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const Callbacks* functions, fmi2Boolean visible,
                                     fmi2Boolean loggingOn)
{
    Instance* I = calloc(1, sizeof *I);
    if (!I) return NULL;
    I->name = strdup(instanceName ? instanceName : "");
    if (functions) {
        I->host_logger = functions->logger;
        I->host_env = functions->componentEnvironment;
        I->cb = *functions;
    }
    I->cb.logger = shim_logger;
    I->cb.componentEnvironment = I;
    I->logging_on = loggingOn;
    if (fmuType != fmi2CoSimulation) {
        logf_(I, fmi2Error, "fmi2Instantiate: this FMU supports Co-Simulation only");
    } else if (fmuGUID && strcmp(fmuGUID, MBSFMU_GUID) != 0) {
        logf_(I, fmi2Error, "fmi2Instantiate: GUID %s does not match the FMU's %s (modelDescription.xml and binary "
              "from different builds)", fmuGUID, MBSFMU_GUID);
    } else if (ensure_loaded(I)) {
        char* resources = resources_uri(fmuResourceLocation);
        if (!resources) {
            logf_(I, fmi2Error, "fmi2Instantiate: cannot find the FMU's resources (fmuResourceLocation %s)",
                  fmuResourceLocation ? fmuResourceLocation : "NULL");
        } else {
            forget_stale_slave_module(resources);
            I->inner = R.Instantiate(instanceName, fmuType, fmuGUID, resources, &I->cb, visible, fmi2True);
            free(resources);
            if (I->inner) return I;
        }
    }
    free(I->name);
    free(I);
    return NULL;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    Instance* I = (Instance*)c;
    if (!I) return;
    if (I->inner && !I->fatal) R.FreeInstance(I->inner);
    for (size_t k = 0; k < I->n_categories; k++) free(I->categories[k]);
    free(I->categories);
    free(I->name);
    free(I);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                                      const fmi2String categories[])
{
    INST(c);
    for (size_t k = 0; k < I->n_categories; k++) free(I->categories[k]);
    free(I->categories);
    I->categories = NULL;
    I->n_categories = 0;
    I->logging_on = loggingOn;
    if (nCategories > 0 && categories) {
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
    GUARD(R.SetupExperiment(I->inner, toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime));
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { INST(c); GUARD(R.EnterInitializationMode(I->inner)); }

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    INST(c);
    fmi2Status s = guard(I, R.ExitInitializationMode(I->inner));
    if (s <= fmi2Warning) I->initialized = 1;
    return s;
}

EXPORT fmi2Status fmi2Terminate(fmi2Component c) { INST(c); GUARD(R.Terminate(I->inner)); }

EXPORT fmi2Status fmi2Reset(fmi2Component c)
{
    INST(c);
    fmi2Status s = guard(I, R.Reset(I->inner));
    if (s <= fmi2Warning) I->initialized = 0;
    return s;
}

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[])
{ INST(c); GUARD(R.GetReal(I->inner, vr, nvr, value)); }
EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Integer value[])
{ INST(c); GUARD(R.GetInteger(I->inner, vr, nvr, value)); }
EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Boolean value[])
{ INST(c); GUARD(R.GetBoolean(I->inner, vr, nvr, value)); }
EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2String value[])
{ INST(c); GUARD(R.GetString(I->inner, vr, nvr, value)); }

EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[])
{
    INST(c);
    if (nvr > 0 && !value) return fmi2Error;
    if (check_set(I, "fmi2SetReal", vr, nvr, 'R', value, NULL) != fmi2OK) return fmi2Error;
    GUARD(R.SetReal(I->inner, vr, nvr, value));
}

EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Integer value[])
{
    INST(c);
    if (nvr > 0 && !value) return fmi2Error;
    if (check_set(I, "fmi2SetInteger", vr, nvr, 'I', NULL, value) != fmi2OK) return fmi2Error;
    GUARD(R.SetInteger(I->inner, vr, nvr, value));
}

EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Boolean value[])
{
    INST(c);
    static const fmi2Integer none = 0;
    (void)value;
    if (check_set(I, "fmi2SetBoolean", vr, nvr, 'B', NULL, &none) != fmi2OK) return fmi2Error;
    return nvr == 0 ? fmi2OK : fmi2Error;
}

EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2String value[])
{
    INST(c);
    static const fmi2Integer none = 0;
    (void)value;
    if (check_set(I, "fmi2SetString", vr, nvr, 'S', NULL, &none) != fmi2OK) return fmi2Error;
    return nvr == 0 ? fmi2OK : fmi2Error;
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* state) { INST(c); GUARD(R.GetFMUstate(I->inner, state)); }

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{
    INST(c);
    GUARD(R.SetFMUstate(I->inner, state));
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* state)
{
    INST(c);
    GUARD(R.FreeFMUstate(I->inner, state));
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t* size)
{ INST(c); GUARD(R.SerializedFMUstateSize(I->inner, state, size)); }
EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size)
{ INST(c); GUARD(R.SerializeFMUstate(I->inner, state, bytes, size)); }
EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size, fmi2FMUstate* state)
{ INST(c); GUARD(R.DeSerializeFMUstate(I->inner, bytes, size, state)); }

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[], size_t nUnknown,
                                               const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                               const fmi2Real dvKnown[], fmi2Real dvUnknown[])
{ INST(c); GUARD(R.GetDirectionalDerivative(I->inner, vUnknown_ref, nUnknown, vKnown_ref, nKnown, dvKnown, dvUnknown)); }
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                              const fmi2Integer order[], const fmi2Real value[])
{ INST(c); GUARD(R.SetRealInputDerivatives(I->inner, vr, nvr, order, value)); }
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                               const fmi2Integer order[], fmi2Real value[])
{ INST(c); GUARD(R.GetRealOutputDerivatives(I->inner, vr, nvr, order, value)); }

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize,
                             fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    INST(c);
    GUARD(R.DoStep(I->inner, currentCommunicationPoint, communicationStepSize, noSetFMUStatePriorToCurrentPoint));
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { INST(c); GUARD(R.CancelStep(I->inner)); }
EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status* value)
{ INST(c); GUARD(R.GetStatus(I->inner, s, value)); }
EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real* value)
{ INST(c); GUARD(R.GetRealStatus(I->inner, s, value)); }
EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer* value)
{ INST(c); GUARD(R.GetIntegerStatus(I->inner, s, value)); }
EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean* value)
{ INST(c); GUARD(R.GetBooleanStatus(I->inner, s, value)); }
EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String* value)
{ INST(c); GUARD(R.GetStringStatus(I->inner, s, value)); }
