/*
 * A portable FMI 3.0 host in plain C (Linux, Windows) for the FMU tests, the FMI 3.0 sibling of
 * fmu_run.c: Co-Simulation (fmi3DoStep) or Model Exchange integrated by the host. It knows nothing
 * about Python. Built with zig cc against the FMI 3.0 headers (mbsfmu/fmu/csrc/fmi3), e.g.
 *
 *   python -m ziglang cc -target x86_64-linux-gnu.2.17 -rdynamic -I<fmi3 headers> fmu3_run.c -o fmu3_run -ldl
 *   python -m ziglang cc -target x86_64-windows-gnu -I<fmi3 headers> fmu3_run.c -o fmu3_run.exe
 *
 * Usage:
 *   fmu3_run LIBRARY TOKEN RESOURCE_PATH STEPS DT [options]
 *     --real VR,VR,...   Float64 variables printed after every step (in this order; arrays whole)
 *     --nvalues N        the number of values those variables hold together (arrays count their
 *                        elements; default: one per variable)
 *     --set VR=X[,X...]  fmi3SetFloat64 of a scalar or a whole array in initialisation mode
 *                        (repeatable)
 *     --me euler|rk4     Model Exchange instead of Co-Simulation: the host integrates the FMU's
 *                        continuous states (fmi3GetNumberOfContinuousStates of them) with its own
 *                        explicit Euler or classic RK4 at step DT (fmi3SetTime,
 *                        fmi3SetContinuousStates, fmi3GetContinuousStateDerivatives per stage;
 *                        fmi3CompletedIntegratorStep after every step and the event iteration,
 *                        fmi3UpdateDiscreteStates, when the FMU asks for one)
 * Output: "t,values..." per step with %.17g values; log messages on stderr, and
 * "allocations: instantiate <a>, <n> after initialisation": FMI 3.0 has no memory callbacks (the
 * FMU calls the C runtime's malloc/calloc/realloc), so the Linux build defines those three itself
 * (exported with -rdynamic, the dynamic linker binds the FMU's references to the executable's
 * definitions before libc's; they count and forward to glibc's __libc_* entry points): <a> counts
 * the calls made inside fmi3Instantiate* (above 0: the counting sees the FMU), <n> those made by
 * the per-step calls (doStep or the Model Exchange loop, and fmi3GetFloat64 of the outputs). The
 * Windows build cannot interpose the DLL's C runtime and prints "allocations: not measured".
 * Exit code 0 on success, 1 on any unexpected FMI status, 2 on bad arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <windows.h>
#define LIB HMODULE
#define OPEN(p) LoadLibraryA(p)
#define SYM(l, n) ((void *)GetProcAddress(l, n))
#define CLOSED(l) (FreeLibrary(l) != 0)
#define COUNTS_ALLOCATIONS 0
static unsigned long n_allocations;
#else
#include <dlfcn.h>
#define LIB void *
#define OPEN(p) dlopen(p, RTLD_NOW | RTLD_LOCAL)
#define SYM(l, n) dlsym(l, n)
#define CLOSED(l) (dlclose(l) == 0)
#define COUNTS_ALLOCATIONS 1
/* glibc's allocator under its own names; ours count every call and forward */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
static volatile unsigned long n_allocations;
void *malloc(size_t n)
{
    n_allocations++;
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size)
{
    n_allocations++;
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n)
{
    n_allocations++;
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
#endif

#include "fmi3Functions.h"

#define MAXV 1024

static void logger(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category, fmi3String message)
{
    (void)env;
    fprintf(stderr, "status %d %s: %s\n", (int)status, category ? category : "", message ? message : "");
}

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        fmi3Status s_ = (call);                                                                       \
        if (s_ > fmi3Warning) {                                                                       \
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
    const char *path, *token, *resources;
    int steps, nr, nvalues, ns, me; /* me: 0 Co-Simulation, 1 Euler, 4 RK4 */
    double dt;
    fmi3ValueReference rvr[MAXV], svr[MAXV];
    double sval[MAXV];
    int sfirst[MAXV + 1]; /* --set k: the values sval[sfirst[k]] .. sval[sfirst[k + 1] - 1] */
} Options;

static void print_row(double t, const fmi3Float64 *v, int n)
{
    printf("%.17g", t);
    for (int j = 0; j < n; j++) printf(",%.17g", v[j]);
    printf("\n");
}

/* The event iteration (FMI 3.0 section 3.2.5, event mode): fmi3UpdateDiscreteStates until no
   update is needed; re-read the continuous states if the FMU changed them. */
static int event_iteration(fmi3Instance c, fmi3UpdateDiscreteStatesTYPE *fmi3UpdateDiscreteStates,
                           fmi3GetContinuousStatesTYPE *fmi3GetContinuousStates, fmi3Float64 *x, size_t nx)
{
    fmi3Boolean again = fmi3True, terminate = fmi3False, nominals = fmi3False, changed = fmi3False, any = fmi3False;
    fmi3Boolean timed = fmi3False;
    fmi3Float64 t_next = 0.0;
    while (again) {
        CHECK(fmi3UpdateDiscreteStates(c, &again, &terminate, &nominals, &changed, &timed, &t_next));
        if (terminate) {
            fprintf(stderr, "the FMU asked to terminate\n");
            return 1;
        }
        any = any || changed;
    }
    if (any && nx) CHECK(fmi3GetContinuousStates(c, x, nx));
    return 0;
}

static int run(const Options *o)
{
    LIB lib = OPEN(o->path);
    if (!lib) {
        fprintf(stderr, "cannot load %s\n", o->path);
        return 1;
    }
    LOAD(fmi3GetVersion); LOAD(fmi3InstantiateCoSimulation); LOAD(fmi3InstantiateModelExchange);
    LOAD(fmi3FreeInstance); LOAD(fmi3EnterInitializationMode); LOAD(fmi3ExitInitializationMode);
    LOAD(fmi3Terminate); LOAD(fmi3SetFloat64); LOAD(fmi3GetFloat64); LOAD(fmi3DoStep);
    LOAD(fmi3UpdateDiscreteStates); LOAD(fmi3EnterContinuousTimeMode); LOAD(fmi3EnterEventMode);
    LOAD(fmi3CompletedIntegratorStep); LOAD(fmi3SetTime); LOAD(fmi3SetContinuousStates);
    LOAD(fmi3GetContinuousStateDerivatives); LOAD(fmi3GetContinuousStates); LOAD(fmi3GetNumberOfContinuousStates);
    if (strcmp(fmi3GetVersion(), "3.0") != 0) {
        fprintf(stderr, "fmi3GetVersion: %s\n", fmi3GetVersion());
        return 1;
    }
    unsigned long a0 = n_allocations;
    fmi3Instance c = o->me ? fmi3InstantiateModelExchange("host", o->token, o->resources, fmi3False, fmi3False, NULL,
                                                          logger)
                           : fmi3InstantiateCoSimulation("host", o->token, o->resources, fmi3False, fmi3False,
                                                         fmi3False, fmi3False, NULL, 0, NULL, logger, NULL);
    unsigned long at_instantiate = n_allocations - a0;
    if (!c) {
        fprintf(stderr, "fmi3Instantiate%s failed\n", o->me ? "ModelExchange" : "CoSimulation");
        return 1;
    }
    CHECK(fmi3EnterInitializationMode(c, fmi3False, 0.0, 0.0, fmi3False, 0.0));
    for (int j = 0; j < o->ns; j++)
        CHECK(fmi3SetFloat64(c, &o->svr[j], 1, &o->sval[o->sfirst[j]], (size_t)(o->sfirst[j + 1] - o->sfirst[j])));
    CHECK(fmi3ExitInitializationMode(c));

    static fmi3Float64 x[MAXV], xs[MAXV], k[4][MAXV], v[MAXV];
    size_t nx = 0;
    if (o->me) {
        CHECK(fmi3GetNumberOfContinuousStates(c, &nx));
        if (nx > MAXV) {
            fprintf(stderr, "%lu continuous states, at most %d\n", (unsigned long)nx, MAXV);
            return 1;
        }
        CHECK(fmi3GetContinuousStates(c, x, nx));
        if (event_iteration(c, fmi3UpdateDiscreteStates, fmi3GetContinuousStates, x, nx)) return 1;
        CHECK(fmi3EnterContinuousTimeMode(c));
    }
    static const double A[4] = {0.0, 0.5, 0.5, 1.0}, B[4] = {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6};
    const int stages = o->me;
    unsigned long step_allocations = 0;
    for (int step = 0; step < o->steps; step++) {
        unsigned long a1 = n_allocations;
        const double t = step * o->dt, t_next = (step + 1) * o->dt;
        if (!o->me) {
            fmi3Boolean event = fmi3False, terminate = fmi3False, early = fmi3False;
            fmi3Float64 t_last = 0.0;
            CHECK(fmi3DoStep(c, t, o->dt, fmi3True, &event, &terminate, &early, &t_last));
            if (terminate || early) {
                fprintf(stderr, "fmi3DoStep: terminate %d, early return %d\n", (int)terminate, (int)early);
                return 1;
            }
        } else {
            /* x_{n+1} = x_n + dt sum_i b_i k_i, k_i = f(t_n + c_i dt, x_n + dt a_i k_{i-1}) */
            for (int s = 0; s < stages; s++) {
                for (size_t j = 0; j < nx; j++) xs[j] = s ? x[j] + A[s] * o->dt * k[s - 1][j] : x[j];
                CHECK(fmi3SetTime(c, s ? t + A[s] * o->dt : t));
                CHECK(fmi3SetContinuousStates(c, xs, nx));
                CHECK(fmi3GetContinuousStateDerivatives(c, k[s], nx));
            }
            for (size_t j = 0; j < nx; j++) {
                double dx = 0.0;
                for (int s = 0; s < stages; s++) dx += (stages == 1 ? 1.0 : B[s]) * k[s][j];
                x[j] += o->dt * dx;
            }
            CHECK(fmi3SetTime(c, t_next));
            CHECK(fmi3SetContinuousStates(c, x, nx));
            fmi3Boolean enter = fmi3False, terminate = fmi3False;
            CHECK(fmi3CompletedIntegratorStep(c, fmi3True, &enter, &terminate));
            if (terminate) {
                fprintf(stderr, "the FMU asked to terminate\n");
                return 1;
            }
            if (enter) {
                CHECK(fmi3EnterEventMode(c));
                if (event_iteration(c, fmi3UpdateDiscreteStates, fmi3GetContinuousStates, x, nx)) return 1;
                CHECK(fmi3EnterContinuousTimeMode(c));
            }
        }
        CHECK(fmi3GetFloat64(c, o->rvr, (size_t)o->nr, v, (size_t)o->nvalues));
        step_allocations += n_allocations - a1;
        print_row(t_next, v, o->nvalues);
    }
    if (COUNTS_ALLOCATIONS)
        fprintf(stderr, "allocations: instantiate %lu, %lu after initialisation\n", at_instantiate, step_allocations);
    else
        fprintf(stderr, "allocations: not measured\n");
    CHECK(fmi3Terminate(c));
    fmi3FreeInstance(c);
    if (!CLOSED(lib)) {
        fprintf(stderr, "unloading %s failed\n", o->path);
        return 1;
    }
    return 0;
}

static int parse_list(const char *s, fmi3ValueReference *out)
{
    int n = 0;
    while (*s && n < MAXV) {
        char *end;
        out[n++] = (fmi3ValueReference)strtoul(s, &end, 10);
        if (end == s) return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* "VR=X[,X...]": one more --set, its values appended to sval */
static int parse_setting(const char *s, Options *o)
{
    char *end;
    unsigned long vr = strtoul(s, &end, 10);
    if (end == s || *end != '=') return 0;
    int n = o->sfirst[o->ns];
    s = end + 1;
    do {
        if (n >= MAXV) return 0;
        o->sval[n++] = strtod(s, &end);
        if (end == s || (*end && *end != ',')) return 0;
        s = *end ? end + 1 : end;
    } while (*end);
    o->svr[o->ns++] = (fmi3ValueReference)vr;
    o->sfirst[o->ns] = n;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s LIBRARY TOKEN RESOURCE_PATH STEPS DT [--real VRS] [--nvalues N] [--set VR=X]... "
                "[--me euler|rk4]\n", argv[0]);
        return 2;
    }
    static Options o;
    o.path = argv[1];
    o.token = argv[2];
    o.resources = argv[3];
    o.steps = atoi(argv[4]);
    o.dt = atof(argv[5]);
    o.nvalues = -1;
    for (int a = 6; a < argc; a++) {
        const char *arg = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(arg, "--real") && val && (o.nr = parse_list(val, o.rvr)) >= 0) {
            a++;
        } else if (!strcmp(arg, "--nvalues") && val && atoi(val) >= 0 && atoi(val) <= MAXV) {
            o.nvalues = atoi(val);
            a++;
        } else if (!strcmp(arg, "--set") && val && o.ns < MAXV && parse_setting(val, &o)) {
            a++;
        } else if (!strcmp(arg, "--me") && val && (!strcmp(val, "euler") || !strcmp(val, "rk4"))) {
            o.me = strcmp(val, "euler") ? 4 : 1;
            a++;
        } else {
            fprintf(stderr, "bad argument %s\n", arg);
            return 2;
        }
    }
    if (o.nvalues < 0) o.nvalues = o.nr;
    if (o.nr < 0 || o.nvalues < o.nr) {
        fprintf(stderr, "--nvalues %d is fewer than the %d variables of --real\n", o.nvalues, o.nr);
        return 2;
    }
    return run(&o) ? 1 : 0;
}
