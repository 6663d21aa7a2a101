/*
 * A portable FMI 2.0 Co-Simulation host in plain C (Linux, macOS, Windows), for the FMU tests
 * (both runtimes) and benchmarks/bench_fmu.py. It knows nothing about Python. Built with zig cc
 * or gcc against the FMI 2.0 headers (mbsfmu/fmu/csrc/fmi2), e.g.
 *
 *   python -m ziglang cc -target x86_64-windows-gnu -I<fmi2 headers> fmu_run.c -o fmu_run.exe
 *   gcc -I<fmi2 headers> fmu_run.c -o fmu_run -ldl
 *
 * Usage:
 *   fmu_run LIBRARY GUID RESOURCE_URI STEPS DT [options]
 *     --real VR,VR,...   Real outputs printed after every step (in this order)
 *     --int VR,VR,...    Integer outputs printed after every step
 *     --set VR=X         fmi2SetReal before initialisation, in every instance (repeatable)
 *     --param2 VR=X      fmi2SetReal before initialisation in the second instance only (repeatable)
 *     --instances N      1 or 2 instances in the same process, stepped alternately
 *     --loads N          load the library, run, free the instances and unload it N times (default 1)
 *     --tag              prefix every row with "load,instance,"
 *     --nan VR           after initialisation try fmi2SetReal(VR, NaN): must give fmi2Error
 *                        (prints "nan-status,<status>")
 *     --state            (one instance) after STEPS/2 steps: fmi2GetFMUstate, serialise,
 *                        deserialise; at the end set the deserialised state and repeat the
 *                        second half: every value must be bit-identical ("state: identical" on
 *                        stderr, exit 1 otherwise)
 *     --bench            print nothing per step; time the loop (doStep + reading every listed
 *                        output) and print "bench,<steps>,<wall seconds>,<CPU seconds>"
 *     --me euler|rk4 --nx NX
 *                        (one instance, no --state) Model Exchange instead of Co-Simulation: the
 *                        host integrates the FMU's NX continuous states with its own explicit Euler
 *                        or classic RK4 at step DT (fmi2SetTime, fmi2SetContinuousStates,
 *                        fmi2GetDerivatives per stage; fmi2CompletedIntegratorStep after every
 *                        step and the event iteration when the FMU asks for one)
 * Output: "t,reals...,ints..." per step and instance with %.17g values; logger messages and a
 * failed load's reason on stderr, and "allocations: <n> after initialisation" (the calls to the
 * host's allocateMemory callback made by the per-step calls: doStep or the Model Exchange loop,
 * and the fmi2GetReal/fmi2GetInteger of the outputs; --me also prints "instantiate <a>, " before
 * <n>, the calls made by fmi2Instantiate, above 0: the count sees the FMU's allocations). Exit code 0 on success, 1 on any unexpected
 * FMI status, 2 on bad arguments.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _WIN32
#include <windows.h>
#define LIB HMODULE
#define OPEN(p) LoadLibraryA(p)
#define SYM(l, n) ((void *)GetProcAddress(l, n))
#define CLOSED(l) (FreeLibrary(l) != 0)
static const char *load_error(void)
{
    static char msg[64];
    snprintf(msg, sizeof msg, "error %lu", (unsigned long)GetLastError());
    return msg;
}
static double now(void)
{
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
}
#else
#include <dlfcn.h>
#define LIB void *
#define OPEN(p) dlopen(p, RTLD_NOW | RTLD_LOCAL)
#define SYM(l, n) dlsym(l, n)
#define CLOSED(l) (dlclose(l) == 0)
static const char *load_error(void)
{
    const char *e = dlerror();
    return e ? e : "unknown error";
}
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
#endif

#include "fmi2Functions.h"

#define MAXV 256

/* the host's allocator, counting its calls (the FMU allocates only through it) */
static unsigned long n_allocations;
static void *counting_calloc(size_t n, size_t size)
{
    n_allocations++;
    return calloc(n, size);
}

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status, fmi2String category,
                   fmi2String message, ...)
{
    va_list ap;
    (void)env;
    va_start(ap, message);
    fprintf(stderr, "[%s] status %d %s: ", name ? name : "?", (int)status, category ? category : "");
    vfprintf(stderr, message, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        fmi2Status s_ = (call);                                                                       \
        if (s_ > fmi2Warning) {                                                                       \
            fprintf(stderr, "%s failed with status %d\n", #call, (int)s_);                            \
            return 1;                                                                                 \
        }                                                                                             \
    } while (0)

#define LOAD(name)                                                                                    \
    name##TYPE *name = (name##TYPE *)SYM(lib, #name);                                                 \
    if (!name) {                                                                                      \
        fprintf(stderr, "missing symbol %s\n", #name);                                                \
        return 1;                                                                                     \
    }

typedef struct {
    const char *path, *guid, *uri;
    int steps;
    double dt;
    fmi2ValueReference rvr[MAXV], ivr[MAXV], svr[MAXV], pvr[MAXV];
    double sval[MAXV], pval[MAXV];
    int nr, ni, ns, np, instances, loads, tag, nan_vr, state, bench, me, nx; /* me: 0 CS, 1 Euler, 4 RK4 */
} Options;

static int parse_list(const char *s, fmi2ValueReference *out)
{
    int n = 0;
    while (*s && n < MAXV) {
        char *end;
        out[n++] = (fmi2ValueReference)strtoul(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s) break;
    }
    return n;
}

static void print_row(const Options *o, int load, int k, double t, const fmi2Real *rv, const fmi2Integer *iv)
{
    if (o->tag) printf("%d,%d,", load, k);
    printf("%.17g", t);
    for (int j = 0; j < o->nr; j++) printf(",%.17g", rv[j]);
    for (int j = 0; j < o->ni; j++) printf(",%d", (int)iv[j]);
    printf("\n");
}

/* The event iteration of FMI 2.0 section 3.2.2 (event mode entered): fmi2NewDiscreteStates until
   no new discrete states are needed; re-read the continuous states if the FMU changed them. */
static int event_iteration(fmi2Component c, fmi2NewDiscreteStatesTYPE *fmi2NewDiscreteStates,
                           fmi2GetContinuousStatesTYPE *fmi2GetContinuousStates, fmi2Real *x, size_t nx)
{
    fmi2EventInfo info;
    do {
        CHECK(fmi2NewDiscreteStates(c, &info));
        if (info.terminateSimulation) {
            fprintf(stderr, "the FMU asked to terminate\n");
            return 1;
        }
    } while (info.newDiscreteStatesNeeded);
    if (info.valuesOfContinuousStatesChanged) CHECK(fmi2GetContinuousStates(c, x, nx));
    return 0;
}

/* Model Exchange: the host integrates x' = f(t, x) with explicit Euler (o->me == 1) or classic
   RK4 (o->me == 4) at step dt, x_{n+1} = x_n + dt sum_i b_i k_i with k_i = f(t_n + c_i dt,
   x_n + dt sum_j a_ij k_j) (RK4: c = 0, 1/2, 1/2, 1; b = 1/6, 1/3, 1/3, 1/6), then
   fmi2CompletedIntegratorStep and, when the FMU asks, an event (quaternion or loop projection). */
static int run_model_exchange(const Options *o, int load, LIB lib)
{
    LOAD(fmi2Instantiate); LOAD(fmi2FreeInstance); LOAD(fmi2SetupExperiment); LOAD(fmi2EnterInitializationMode);
    LOAD(fmi2ExitInitializationMode); LOAD(fmi2Terminate); LOAD(fmi2SetReal); LOAD(fmi2GetReal);
    LOAD(fmi2GetInteger); LOAD(fmi2NewDiscreteStates); LOAD(fmi2EnterContinuousTimeMode); LOAD(fmi2EnterEventMode);
    LOAD(fmi2CompletedIntegratorStep); LOAD(fmi2SetTime); LOAD(fmi2SetContinuousStates); LOAD(fmi2GetDerivatives);
    LOAD(fmi2GetContinuousStates);
    fmi2CallbackFunctions cb = {logger, counting_calloc, free, NULL, NULL};
    unsigned long a_instantiate = n_allocations;
    fmi2Component c = fmi2Instantiate("host", fmi2ModelExchange, o->guid, o->uri, &cb, fmi2False, fmi2False);
    a_instantiate = n_allocations - a_instantiate;
    if (!c) {
        fprintf(stderr, "fmi2Instantiate (Model Exchange) failed\n");
        return 1;
    }
    CHECK(fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0));
    if (o->ns) CHECK(fmi2SetReal(c, o->svr, o->ns, o->sval));
    CHECK(fmi2EnterInitializationMode(c));
    CHECK(fmi2ExitInitializationMode(c));
    static fmi2Real x[MAXV], xs[MAXV], k[4][MAXV];
    const size_t nx = (size_t)o->nx;
    CHECK(fmi2GetContinuousStates(c, x, nx));
    if (event_iteration(c, fmi2NewDiscreteStates, fmi2GetContinuousStates, x, nx)) return 1;
    CHECK(fmi2EnterContinuousTimeMode(c));
    static const double A[4] = {0.0, 0.5, 0.5, 1.0}, B[4] = {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6};
    const int stages = o->me;
    fmi2Real rv[MAXV];
    fmi2Integer iv[MAXV];
    unsigned long step_allocations = 0;
    for (int step = 0; step < o->steps; step++) {
        unsigned long a0 = n_allocations;
        const double t = step * o->dt, t_next = (step + 1) * o->dt;
        for (int s = 0; s < stages; s++) {
            for (size_t j = 0; j < nx; j++) xs[j] = s ? x[j] + A[s] * o->dt * k[s - 1][j] : x[j];
            CHECK(fmi2SetTime(c, s ? t + A[s] * o->dt : t));
            CHECK(fmi2SetContinuousStates(c, xs, nx));
            CHECK(fmi2GetDerivatives(c, k[s], nx));
        }
        for (size_t j = 0; j < nx; j++) {
            double dx = 0.0;
            for (int s = 0; s < stages; s++) dx += (stages == 1 ? 1.0 : B[s]) * k[s][j];
            x[j] += o->dt * dx;
        }
        CHECK(fmi2SetTime(c, t_next));
        CHECK(fmi2SetContinuousStates(c, x, nx));
        fmi2Boolean enter = fmi2False, terminate = fmi2False;
        CHECK(fmi2CompletedIntegratorStep(c, fmi2True, &enter, &terminate));
        if (terminate) {
            fprintf(stderr, "the FMU asked to terminate\n");
            return 1;
        }
        if (enter) {
            CHECK(fmi2EnterEventMode(c));
            if (event_iteration(c, fmi2NewDiscreteStates, fmi2GetContinuousStates, x, nx)) return 1;
            CHECK(fmi2EnterContinuousTimeMode(c));
        }
        CHECK(fmi2GetReal(c, o->rvr, o->nr, rv));
        if (o->ni) CHECK(fmi2GetInteger(c, o->ivr, o->ni, iv));
        step_allocations += n_allocations - a0;
        if (!o->bench) print_row(o, load, 0, t_next, rv, iv);
    }
    fprintf(stderr, "allocations: instantiate %lu, %lu after initialisation\n", a_instantiate, step_allocations);
    CHECK(fmi2Terminate(c));
    fmi2FreeInstance(c);
    if (!CLOSED(lib)) {
        fprintf(stderr, "unloading %s failed: %s\n", o->path, load_error());
        return 1;
    }
    return 0;
}

/* One load of the library: instantiate, initialise and step every instance, then (--state)
   restore the serialised state of instance 0 and repeat the second half. */
static int run_once(const Options *o, int load)
{
    LIB lib = OPEN(o->path);
    if (!lib) {
        fprintf(stderr, "cannot load %s: %s\n", o->path, load_error());
        return 1;
    }
    LOAD(fmi2GetVersion); LOAD(fmi2Instantiate); LOAD(fmi2FreeInstance); LOAD(fmi2SetupExperiment);
    LOAD(fmi2EnterInitializationMode); LOAD(fmi2ExitInitializationMode); LOAD(fmi2Terminate);
    LOAD(fmi2SetReal); LOAD(fmi2GetReal); LOAD(fmi2GetInteger); LOAD(fmi2DoStep); LOAD(fmi2GetFMUstate);
    LOAD(fmi2SetFMUstate); LOAD(fmi2FreeFMUstate); LOAD(fmi2SerializedFMUstateSize); LOAD(fmi2SerializeFMUstate);
    LOAD(fmi2DeSerializeFMUstate);
    if (strcmp(fmi2GetVersion(), "2.0") != 0) {
        fprintf(stderr, "fmi2GetVersion: %s\n", fmi2GetVersion());
        return 1;
    }
    if (o->me) return run_model_exchange(o, load, lib);
    fmi2CallbackFunctions cb = {logger, counting_calloc, free, NULL, NULL};
    fmi2Component c[2] = {NULL, NULL};
    const char *names[2] = {"host", "host_b"};
    for (int k = 0; k < o->instances; k++) {
        c[k] = fmi2Instantiate(names[k], fmi2CoSimulation, o->guid, o->uri, &cb, fmi2False, fmi2False);
        if (!c[k]) {
            fprintf(stderr, "fmi2Instantiate %s failed\n", names[k]);
            return 1;
        }
        CHECK(fmi2SetupExperiment(c[k], fmi2False, 0.0, 0.0, fmi2False, 0.0));
        if (o->ns) CHECK(fmi2SetReal(c[k], o->svr, o->ns, o->sval));
        if (k == 1 && o->np) CHECK(fmi2SetReal(c[k], o->pvr, o->np, o->pval));
        CHECK(fmi2EnterInitializationMode(c[k]));
        CHECK(fmi2ExitInitializationMode(c[k]));
        if (o->nan_vr >= 0) {
            fmi2ValueReference vr = (fmi2ValueReference)o->nan_vr;
            fmi2Real x = NAN;
            fmi2Status s = fmi2SetReal(c[k], &vr, 1, &x);
            printf("nan-status,%d\n", (int)s);
            if (s != fmi2Error) return 1;
        }
    }

    const int nr = o->nr, ni = o->ni, steps = o->steps;
    const double dt = o->dt;
    fmi2Real rv[MAXV];
    fmi2Integer iv[MAXV];
    int half = steps / 2, n_tail = steps - half;
    double *tail = o->state ? (double *)calloc((size_t)n_tail * (nr + ni + 1), sizeof(double)) : NULL;
    fmi2Byte *blob = NULL;
    size_t blob_n = 0;
    double t = 0.0, t0 = now();
    unsigned long step_allocations = 0;
    clock_t c0 = clock();
    for (int step = 0; step < steps; step++) {
        if (o->state && step == half) {
            fmi2FMUstate s = NULL;
            CHECK(fmi2GetFMUstate(c[0], &s));
            CHECK(fmi2SerializedFMUstateSize(c[0], s, &blob_n));
            blob = (fmi2Byte *)malloc(blob_n);
            CHECK(fmi2SerializeFMUstate(c[0], s, blob, blob_n));
            CHECK(fmi2FreeFMUstate(c[0], &s));
        }
        double t_next = (step + 1) * dt;
        for (int k = 0; k < o->instances; k++) {
            unsigned long a0 = n_allocations;
            CHECK(fmi2DoStep(c[k], t, dt, fmi2True));
            CHECK(fmi2GetReal(c[k], o->rvr, nr, rv));
            if (ni) CHECK(fmi2GetInteger(c[k], o->ivr, ni, iv));
            step_allocations += n_allocations - a0;
            if (o->state && step >= half) {
                double *row = tail + (size_t)(step - half) * (nr + ni + 1);
                row[0] = t_next;
                for (int j = 0; j < nr; j++) row[1 + j] = rv[j];
                for (int j = 0; j < ni; j++) row[1 + nr + j] = iv[j];
            }
            if (!o->bench) print_row(o, load, k, t_next, rv, iv);
        }
        t = t_next;
    }
    double wall = now() - t0, cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    if (o->bench) printf("bench,%d,%.9g,%.9g\n", steps, wall, cpu);
    fprintf(stderr, "allocations: %lu after initialisation\n", step_allocations);
    if (o->state) {
        fmi2FMUstate s = NULL;
        CHECK(fmi2DeSerializeFMUstate(c[0], blob, blob_n, &s));
        CHECK(fmi2SetFMUstate(c[0], s));
        CHECK(fmi2FreeFMUstate(c[0], &s));
        t = half * dt;
        for (int step = half; step < steps; step++) {
            CHECK(fmi2DoStep(c[0], t, dt, fmi2True));
            t = (step + 1) * dt;
            CHECK(fmi2GetReal(c[0], o->rvr, nr, rv));
            if (ni) CHECK(fmi2GetInteger(c[0], o->ivr, ni, iv));
            const double *row = tail + (size_t)(step - half) * (nr + ni + 1);
            int same = row[0] == t;
            for (int j = 0; j < nr; j++) same = same && (row[1 + j] == rv[j] || (isnan(row[1 + j]) && isnan(rv[j])));
            for (int j = 0; j < ni; j++) same = same && row[1 + nr + j] == (double)iv[j];
            if (!same) {
                fprintf(stderr, "state: step %d differs after restoring the serialised state\n", step);
                return 1;
            }
        }
        fprintf(stderr, "state: identical (%d steps repeated from a %lu-byte serialised state)\n", n_tail,
                (unsigned long)blob_n);
        free(blob);
        free(tail);
    }
    for (int k = 0; k < o->instances; k++) {
        CHECK(fmi2Terminate(c[k]));
        fmi2FreeInstance(c[k]);
    }
    if (!CLOSED(lib)) {
        fprintf(stderr, "unloading %s failed: %s\n", o->path, load_error());
        return 1;
    }
    return 0;
}

static int parse_setting(const char *s, fmi2ValueReference *vrs, double *vals, int *n)
{
    unsigned vr;
    double x;
    if (*n >= MAXV || sscanf(s, "%u=%lf", &vr, &x) != 2) return 0;
    vrs[*n] = vr;
    vals[(*n)++] = x;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s LIBRARY GUID RESOURCE_URI STEPS DT [--real VRS] [--int VRS] [--set VR=X]... "
                "[--param2 VR=X]... [--instances N] [--loads N] [--tag] [--nan VR] [--state] [--bench] [--me euler|rk4 --nx NX]\n", argv[0]);
        return 2;
    }
    static Options o;
    o.path = argv[1];
    o.guid = argv[2];
    o.uri = argv[3];
    o.steps = atoi(argv[4]);
    o.dt = atof(argv[5]);
    o.instances = o.loads = 1;
    o.nan_vr = -1;
    for (int a = 6; a < argc; a++) {
        const char *arg = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(arg, "--real") && val) {
            o.nr = parse_list(val, o.rvr);
            a++;
        } else if (!strcmp(arg, "--int") && val) {
            o.ni = parse_list(val, o.ivr);
            a++;
        } else if (!strcmp(arg, "--set") && val && parse_setting(val, o.svr, o.sval, &o.ns)) {
            a++;
        } else if (!strcmp(arg, "--param2") && val && parse_setting(val, o.pvr, o.pval, &o.np)) {
            a++;
        } else if (!strcmp(arg, "--instances") && val && (atoi(val) == 1 || atoi(val) == 2)) {
            o.instances = atoi(val);
            a++;
        } else if (!strcmp(arg, "--loads") && val && atoi(val) >= 1) {
            o.loads = atoi(val);
            a++;
        } else if (!strcmp(arg, "--nan") && val) {
            o.nan_vr = atoi(val);
            a++;
        } else if (!strcmp(arg, "--tag")) {
            o.tag = 1;
        } else if (!strcmp(arg, "--state")) {
            o.state = 1;
        } else if (!strcmp(arg, "--bench")) {
            o.bench = 1;
        } else if (!strcmp(arg, "--me") && val && (!strcmp(val, "euler") || !strcmp(val, "rk4"))) {
            o.me = strcmp(val, "euler") ? 4 : 1;
            a++;
        } else if (!strcmp(arg, "--nx") && val && atoi(val) >= 1 && atoi(val) <= MAXV) {
            o.nx = atoi(val);
            a++;
        } else {
            fprintf(stderr, "bad argument %s\n", arg);
            return 2;
        }
    }
    if (o.state && o.instances != 1) {
        fprintf(stderr, "--state needs one instance\n");
        return 2;
    }
    if (o.me && (o.state || o.instances != 1 || o.nan_vr >= 0 || !o.nx)) {
        fprintf(stderr, "--me needs --nx and runs one instance, without --state or --nan\n");
        return 2;
    }
    for (int load = 0; load < o.loads; load++)
        if (run_once(&o, load) != 0) return 1;
    return 0;
}
