/*
 * A portable FMI 2.0 Co-Simulation host in plain C (Linux, macOS, Windows), for the native FMU's
 * tests and benchmarks/bench_fmu.py. It knows nothing about Python. Built with zig cc, e.g.
 *
 *   python -m ziglang cc -target x86_64-windows-gnu -I<fmi2 headers> fmu_run.c -o fmu_run.exe
 *
 * Usage:
 *   fmu_run LIBRARY GUID RESOURCE_URI STEPS DT [options]
 *     --real VR,VR,...   Real outputs printed after every step (in this order)
 *     --int VR,VR,...    Integer outputs printed after every step
 *     --set VR=X         fmi2SetReal before initialisation (repeatable)
 *     --state            after STEPS/2 steps: fmi2GetFMUstate, serialise, deserialise; at the end
 *                        set the deserialised state and repeat the second half: every value must
 *                        be bit-identical ("state: identical" on stderr, exit 1 otherwise)
 *     --bench            print nothing per step; time the loop (doStep + reading every listed
 *                        output) and print "bench,<steps>,<wall seconds>,<CPU seconds>"
 * Output: "t,reals...,ints..." per step with %.17g values; logger messages on stderr.
 * Exit code 0 on success, 1 on any unexpected FMI status.
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
#define CLOSE(l) FreeLibrary(l)
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
#define CLOSE(l) dlclose(l)
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
#endif

#include "fmi2Functions.h"

#define MAXV 256

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

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s LIBRARY GUID RESOURCE_URI STEPS DT [--real VRS] [--int VRS] [--set VR=X]... "
                "[--state] [--bench]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *guid = argv[2], *uri = argv[3];
    int steps = atoi(argv[4]);
    double dt = atof(argv[5]);
    fmi2ValueReference rvr[MAXV], ivr[MAXV], svr[MAXV];
    double sval[MAXV];
    int nr = 0, ni = 0, ns = 0, state = 0, bench = 0;
    for (int a = 6; a < argc; a++) {
        unsigned vr;
        double x;
        if (!strcmp(argv[a], "--real") && a + 1 < argc) {
            nr = parse_list(argv[++a], rvr);
        } else if (!strcmp(argv[a], "--int") && a + 1 < argc) {
            ni = parse_list(argv[++a], ivr);
        } else if (!strcmp(argv[a], "--set") && a + 1 < argc && ns < MAXV &&
                   sscanf(argv[a + 1], "%u=%lf", &vr, &x) == 2) {
            svr[ns] = vr;
            sval[ns++] = x;
            a++;
        } else if (!strcmp(argv[a], "--state")) {
            state = 1;
        } else if (!strcmp(argv[a], "--bench")) {
            bench = 1;
        } else {
            fprintf(stderr, "bad argument %s\n", argv[a]);
            return 2;
        }
    }
    LIB lib = OPEN(path);
    if (!lib) {
        fprintf(stderr, "cannot load %s\n", path);
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
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c = fmi2Instantiate("host", fmi2CoSimulation, guid, uri, &cb, fmi2False, fmi2False);
    if (!c) {
        fprintf(stderr, "fmi2Instantiate failed\n");
        return 1;
    }
    CHECK(fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0));
    if (ns) CHECK(fmi2SetReal(c, svr, ns, sval));
    CHECK(fmi2EnterInitializationMode(c));
    CHECK(fmi2ExitInitializationMode(c));

    fmi2Real rv[MAXV];
    fmi2Integer iv[MAXV];
    int half = steps / 2, n_tail = steps - half;
    double *tail = state ? (double *)calloc((size_t)n_tail * (nr + ni + 1), sizeof(double)) : NULL;
    fmi2Byte *blob = NULL;
    size_t blob_n = 0;
    double t = 0.0, t0 = now();
    clock_t c0 = clock();
    for (int k = 0; k < steps; k++) {
        if (state && k == half) {
            fmi2FMUstate s = NULL;
            CHECK(fmi2GetFMUstate(c, &s));
            CHECK(fmi2SerializedFMUstateSize(c, s, &blob_n));
            blob = (fmi2Byte *)malloc(blob_n);
            CHECK(fmi2SerializeFMUstate(c, s, blob, blob_n));
            CHECK(fmi2FreeFMUstate(c, &s));
        }
        CHECK(fmi2DoStep(c, t, dt, fmi2True));
        t = (k + 1) * dt;
        CHECK(fmi2GetReal(c, rvr, nr, rv));
        if (ni) CHECK(fmi2GetInteger(c, ivr, ni, iv));
        if (state && k >= half) {
            double *row = tail + (size_t)(k - half) * (nr + ni + 1);
            row[0] = t;
            for (int j = 0; j < nr; j++) row[1 + j] = rv[j];
            for (int j = 0; j < ni; j++) row[1 + nr + j] = iv[j];
        }
        if (!bench) {
            printf("%.17g", t);
            for (int j = 0; j < nr; j++) printf(",%.17g", rv[j]);
            for (int j = 0; j < ni; j++) printf(",%d", (int)iv[j]);
            printf("\n");
        }
    }
    double wall = now() - t0, cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    if (bench) printf("bench,%d,%.9g,%.9g\n", steps, wall, cpu);
    if (state) {
        fmi2FMUstate s = NULL;
        CHECK(fmi2DeSerializeFMUstate(c, blob, blob_n, &s));
        CHECK(fmi2SetFMUstate(c, s));
        CHECK(fmi2FreeFMUstate(c, &s));
        t = half * dt;
        for (int k = half; k < steps; k++) {
            CHECK(fmi2DoStep(c, t, dt, fmi2True));
            t = (k + 1) * dt;
            CHECK(fmi2GetReal(c, rvr, nr, rv));
            if (ni) CHECK(fmi2GetInteger(c, ivr, ni, iv));
            const double *row = tail + (size_t)(k - half) * (nr + ni + 1);
            int same = row[0] == t;
            for (int j = 0; j < nr; j++) same = same && (row[1 + j] == rv[j] || (isnan(row[1 + j]) && isnan(rv[j])));
            for (int j = 0; j < ni; j++) same = same && row[1 + nr + j] == (double)iv[j];
            if (!same) {
                fprintf(stderr, "state: step %d differs after restoring the serialised state\n", k);
                return 1;
            }
        }
        fprintf(stderr, "state: identical (%d steps repeated from a %lu-byte serialised state)\n", n_tail,
                (unsigned long)blob_n);
        free(blob);
        free(tail);
    }
    CHECK(fmi2Terminate(c));
    fmi2FreeInstance(c);
    CLOSE(lib);
    return 0;
}
