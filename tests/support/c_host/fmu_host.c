/*
 * A minimal FMI 2.0 Co-Simulation host in plain C, for the FMU integration tests: it knows
 * nothing about Python. Compiled by tests/fmu/test_importers.py against the FMI headers fmpy ships:
 *
 *   gcc -I<fmpy>/c-code fmu_host.c -o fmu_host -ldl
 *
 * Usage:
 *   fmu_host DIR IDENTIFIER GUID STEPS DT [options]
 *     DIR          the extracted FMU (binaries/linux64/IDENTIFIER.so, resources/)
 *     --out VR     print output VR (a Real value reference) after every step (repeatable)
 *     --in VR=X    set Real VR to X before initialisation, in every instance (repeatable)
 *     --param2 VR=X  set Real VR to X in the second instance only (with --instances 2)
 *     --instances N  1 or 2 instances in the same process, stepped alternately
 *     --loads N    load the library, run, free and dlclose it N times (default 1)
 *     --nan VR     after initialisation try fmi2SetReal(VR, NaN): must give fmi2Error
 * Output: one line per step and instance: "load,instance,t,v1,v2,..." with %.17g values;
 * logger messages go to stderr. Exit code 0 on success, 1 on any unexpected FMI status.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"

#define MAX_VARS 64

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status, fmi2String category,
                   fmi2String message, ...)
{
    (void)env;
    va_list ap;
    va_start(ap, message);
    fprintf(stderr, "[%s] status %d %s: ", name ? name : "?", (int)status, category ? category : "");
    vfprintf(stderr, message, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        fmi2Status s_ = (call);                                                            \
        if (s_ > fmi2Warning) {                                                            \
            fprintf(stderr, "%s failed with status %d\n", #call, (int)s_);                 \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

#define LOAD(name)                                                                         \
    name = (name##TYPE*)dlsym(lib, #name);                                                 \
    if (!name) { fprintf(stderr, "missing symbol %s\n", #name); return 1; }

static int run_once(int load, const char* dir, const char* ident, const char* guid, int steps, double dt,
                    int n_out, const fmi2ValueReference* out, int n_in, const fmi2ValueReference* in_vr,
                    const fmi2Real* in_val, int n_p2, const fmi2ValueReference* p2_vr, const fmi2Real* p2_val,
                    int instances, int nan_vr)
{
    char path[4096], uri[4096];
    snprintf(path, sizeof path, "%s/binaries/linux64/%s.so", dir, ident);
    snprintf(uri, sizeof uri, "file://%s/resources", dir);
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    fmi2InstantiateTYPE* fmi2Instantiate;
    fmi2FreeInstanceTYPE* fmi2FreeInstance;
    fmi2SetupExperimentTYPE* fmi2SetupExperiment;
    fmi2EnterInitializationModeTYPE* fmi2EnterInitializationMode;
    fmi2ExitInitializationModeTYPE* fmi2ExitInitializationMode;
    fmi2TerminateTYPE* fmi2Terminate;
    fmi2SetRealTYPE* fmi2SetReal;
    fmi2GetRealTYPE* fmi2GetReal;
    fmi2DoStepTYPE* fmi2DoStep;
    fmi2GetVersionTYPE* fmi2GetVersion;
    LOAD(fmi2Instantiate); LOAD(fmi2FreeInstance); LOAD(fmi2SetupExperiment); LOAD(fmi2EnterInitializationMode);
    LOAD(fmi2ExitInitializationMode); LOAD(fmi2Terminate); LOAD(fmi2SetReal); LOAD(fmi2GetReal); LOAD(fmi2DoStep);
    LOAD(fmi2GetVersion);
    if (strcmp(fmi2GetVersion(), "2.0") != 0) {
        fprintf(stderr, "fmi2GetVersion: %s\n", fmi2GetVersion());
        return 1;
    }
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c[2] = {NULL, NULL};
    const char* names[2] = {"host_a", "host_b"};
    for (int k = 0; k < instances; k++) {
        c[k] = fmi2Instantiate(names[k], fmi2CoSimulation, guid, uri, &cb, fmi2False, fmi2False);
        if (!c[k]) {
            fprintf(stderr, "fmi2Instantiate %s failed\n", names[k]);
            return 1;
        }
        CHECK(fmi2SetupExperiment(c[k], fmi2False, 0.0, 0.0, fmi2False, 0.0));
        if (n_in) CHECK(fmi2SetReal(c[k], in_vr, n_in, in_val));
        if (k == 1 && n_p2) CHECK(fmi2SetReal(c[k], p2_vr, n_p2, p2_val));
        CHECK(fmi2EnterInitializationMode(c[k]));
        CHECK(fmi2ExitInitializationMode(c[k]));
        if (nan_vr >= 0) {
            fmi2ValueReference vr = (fmi2ValueReference)nan_vr;
            fmi2Real x = NAN;
            fmi2Status s = fmi2SetReal(c[k], &vr, 1, &x);
            printf("nan-status,%d\n", (int)s);
            if (s != fmi2Error) return 1;
        }
    }
    fmi2Real v[MAX_VARS];
    double t = 0.0;
    for (int step = 0; step < steps; step++) {
        for (int k = 0; k < instances; k++) {
            CHECK(fmi2DoStep(c[k], t, dt, fmi2True));
            CHECK(fmi2GetReal(c[k], out, n_out, v));
            printf("%d,%d,%.17g", load, k, t + dt);
            for (int j = 0; j < n_out; j++) printf(",%.17g", v[j]);
            printf("\n");
        }
        t += dt;
    }
    for (int k = 0; k < instances; k++) {
        CHECK(fmi2Terminate(c[k]));
        fmi2FreeInstance(c[k]);
    }
    if (dlclose(lib) != 0) {
        fprintf(stderr, "dlclose: %s\n", dlerror());
        return 1;
    }
    return 0;
}

int main(int argc, char** argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s DIR IDENTIFIER GUID STEPS DT [--out VR]... [--in VR=X]... [--param2 VR=X]... "
                "[--instances N] [--loads N] [--nan VR]\n", argv[0]);
        return 2;
    }
    const char* dir = argv[1];
    const char* ident = argv[2];
    const char* guid = argv[3];
    int steps = atoi(argv[4]);
    double dt = atof(argv[5]);
    fmi2ValueReference out[MAX_VARS], in_vr[MAX_VARS], p2_vr[MAX_VARS];
    fmi2Real in_val[MAX_VARS], p2_val[MAX_VARS];
    int n_out = 0, n_in = 0, n_p2 = 0, instances = 1, loads = 1, nan_vr = -1;
    for (int a = 6; a + 1 < argc; a += 2) {
        unsigned vr;
        double x;
        if (!strcmp(argv[a], "--out") && n_out < MAX_VARS) {
            out[n_out++] = (fmi2ValueReference)strtoul(argv[a + 1], NULL, 10);
        } else if (!strcmp(argv[a], "--in") && n_in < MAX_VARS && sscanf(argv[a + 1], "%u=%lf", &vr, &x) == 2) {
            in_vr[n_in] = vr;
            in_val[n_in++] = x;
        } else if (!strcmp(argv[a], "--param2") && n_p2 < MAX_VARS && sscanf(argv[a + 1], "%u=%lf", &vr, &x) == 2) {
            p2_vr[n_p2] = vr;
            p2_val[n_p2++] = x;
        } else if (!strcmp(argv[a], "--instances")) {
            instances = atoi(argv[a + 1]) == 2 ? 2 : 1;
        } else if (!strcmp(argv[a], "--loads")) {
            loads = atoi(argv[a + 1]);
        } else if (!strcmp(argv[a], "--nan")) {
            nan_vr = atoi(argv[a + 1]);
        } else {
            fprintf(stderr, "bad argument %s %s\n", argv[a], argv[a + 1]);
            return 2;
        }
    }
    for (int load = 0; load < loads; load++) {
        if (run_once(load, dir, ident, guid, steps, dt, n_out, out, n_in, in_vr, in_val, n_p2, p2_vr, p2_val,
                     instances, nan_vr) != 0)
            return 1;
    }
    return 0;
}
