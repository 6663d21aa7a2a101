/* binding.c - the per-call face of the C core for Python: a CPython extension module (built by zig
 * like the core, build.py) whose objects run one core function per Python call with no argument
 * conversion, no staging copies and no ctypes marshalling: ``Calls`` (the Model's dynamics: forward
 * and inverse dynamics, mass matrix, ABA and RNEA derivatives, frame kinematics), ``Outputs`` and
 * ``Stepper`` (the Simulator's outputs, step and invariant values).
 *
 * Why (docs/performance.md, "Per-call cost from Python"): through ctypes, Model.forward_dynamics on
 * the 7-DoF arm took 2.76 us of which the C function 0.87 us: three argument copies into the
 * instance's staging buffers (0.25 us each), the foreign call beyond the C function (0.48 us), the
 * result copy and the Python layers between; passing an array's memory through ctypes costs more
 * than the copy (a.ctypes.data: 0.8 us). Here a call is METH_FASTCALL dispatch, for each argument a
 * look at the array's header (float64, its size, aligned and C-contiguous: the data are passed in
 * place), one new result array and the core function through its address: 0.2 us around it.
 *
 * The core's functions come as addresses from the loaded core library (core.py), so this module
 * depends on no core header and the same functions compute the same bits as through ctypes. Any
 * argument this fast path does not take (a list, another dtype or shape, a non-finite entry the
 * core rejects, a call from another thread than the one that owns the instance) makes a method
 * return None: the caller then takes the checked ctypes path, which converts, or raises the
 * InputError naming the argument. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <stdint.h>
#include <string.h>

typedef int (*vec3_fn)(void *s, const double *q, const double *qd, const double *b, const double *f_ext,
                       double *out); /* mbs_forward_dynamics_tau, mbs_inverse_dynamics_tau */
typedef int (*crba_fn)(void *s, const double *q, double *M);
typedef int (*deriv_fn)(void *s, const double *q, const double *qd, const double *b, double *work, double *A,
                        double *B, double *M); /* mbs_rnea_derivatives */
typedef int (*aba_deriv_fn)(void *s, const double *q, const double *qd, const double *tau, double *work,
                            double *qdd, double *A, double *B, double *Minv);
typedef int (*fk_fn)(void *s, const double *q, const double *qd, const double *qdd, double *R, double *p,
                     double *v, double *a);
typedef int (*outputs_fn)(void *s, const double *u, int n_b, const int32_t *bodies, int n_w, const int32_t *wheels,
                          double *out);

typedef struct {
    PyObject_HEAD
    PyObject *keep;   /* the Core and the work arrays whose memory the pointers below are in */
    PyObject *frames; /* {name: (body, R (3, 3), p (3,))} of the model's named frames */
    void *s;        /* the core instance (mbs_sim *) */
    unsigned long thread;
    Py_ssize_t nq, nv, N;
    vec3_fn fd, id;
    crba_fn crba;
    aba_deriv_fn aba_d;
    deriv_fn rnea_d;
    fk_fn fk;
    double *work, *qdd, *R, *p, *v, *a; /* derivatives work, ABA's qdd, kinematics (N+1 rows) */
} Calls;

/* The data of x if it is a float64 vector of n entries that the core can read in place, else NULL. */
static const double *vec(PyObject *x, Py_ssize_t n) {
    if (!PyArray_Check(x)) return NULL;
    PyArrayObject *a = (PyArrayObject *)x;
    if (PyArray_TYPE(a) != NPY_DOUBLE || PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != n || !PyArray_ISCARRAY_RO(a))
        return NULL;
    return (const double *)PyArray_DATA(a);
}

/* The data of x if it is a float64 array of n entries in C order that the core can read in place, else NULL. */
static const double *flat(PyObject *x, Py_ssize_t n) {
    if (!PyArray_Check(x)) return NULL;
    PyArrayObject *a = (PyArrayObject *)x;
    if (PyArray_TYPE(a) != NPY_DOUBLE || PyArray_SIZE(a) != n || !PyArray_ISCARRAY_RO(a)) return NULL;
    return (const double *)PyArray_DATA(a);
}

static PyObject *new_array(int nd, Py_ssize_t n0, Py_ssize_t n1) {
    npy_intp dims[2] = {n0, n1};
    return PyArray_SimpleNew(nd, dims, NPY_DOUBLE);
}

#define DATA(o) ((double *)PyArray_DATA((PyArrayObject *)(o)))

static int owned(const Calls *c, Py_ssize_t nargs, Py_ssize_t want) {
    return nargs == want && PyThread_get_thread_ident() == c->thread;
}

/* (q, qd, b) -> fn(s, q, qd, b, NULL, result (nv,)) */
static PyObject *vec3_call(Calls *c, vec3_fn fn, PyObject *const *args, Py_ssize_t nargs) {
    if (!owned(c, nargs, 3)) Py_RETURN_NONE;
    const double *q = vec(args[0], c->nq), *qd = vec(args[1], c->nv), *b = vec(args[2], c->nv);
    if (!q || !qd || !b) Py_RETURN_NONE;
    PyObject *out = new_array(1, c->nv, 0);
    if (!out) return NULL;
    if (fn(c->s, q, qd, b, NULL, DATA(out))) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

static PyObject *Calls_forward_dynamics(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    return vec3_call(c, c->fd, args, nargs);
}

static PyObject *Calls_inverse_dynamics(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    return vec3_call(c, c->id, args, nargs);
}

static PyObject *Calls_mass_matrix(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    if (!owned(c, nargs, 1)) Py_RETURN_NONE;
    const double *q = vec(args[0], c->nq);
    if (!q) Py_RETURN_NONE;
    PyObject *M = new_array(2, c->nv, c->nv);
    if (!M) return NULL;
    if (c->crba(c->s, q, DATA(M))) {
        Py_DECREF(M);
        Py_RETURN_NONE;
    }
    return M;
}

/* (q, qd, b) -> (A, B, M), three new (nv, nv) arrays the derivative function writes */
static PyObject *derivatives_call(Calls *c, int aba, PyObject *const *args, Py_ssize_t nargs) {
    if (!owned(c, nargs, 3)) Py_RETURN_NONE;
    const double *q = vec(args[0], c->nq), *qd = vec(args[1], c->nv), *b = vec(args[2], c->nv);
    if (!q || !qd || !b) Py_RETURN_NONE;
    PyObject *A = new_array(2, c->nv, c->nv), *B = new_array(2, c->nv, c->nv), *M = new_array(2, c->nv, c->nv);
    if (!A || !B || !M) {
        Py_XDECREF(A), Py_XDECREF(B), Py_XDECREF(M);
        return NULL;
    }
    int failed = aba ? c->aba_d(c->s, q, qd, b, c->work, c->qdd, DATA(A), DATA(B), DATA(M))
                     : c->rnea_d(c->s, q, qd, b, c->work, DATA(A), DATA(B), DATA(M));
    if (failed) {
        Py_DECREF(A), Py_DECREF(B), Py_DECREF(M);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NNN)", A, B, M);
}

static PyObject *Calls_aba_derivatives(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    return derivatives_call(c, 1, args, nargs);
}

static PyObject *Calls_rnea_derivatives(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    return derivatives_call(c, 0, args, nargs);
}

/* y = A x (A 3x3 row-major), summed in numpy's matmul order for a 3-vector */
static void mul3(const double *A, const double *x, double *y) {
    for (int i = 0; i < 3; i++) y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}

static void cross3(const double *a, const double *b, double *c) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* frame(q, qd, qdd, name, what): one outward pass (mbs_fk), then of the named frame (Rf, pf) on body i
 * (kinematics.Kinematics' formulas): what 0: (R_i Rf, p_i + R_i pf); 1: (R_i w_i, R_i (v_o + w x pf));
 * 2: (R_i w'_i, R_i (a_o + w' x pf + w x (v_o + w x pf))) (RBDA Sec. 2.11: classical acceleration).
 * None for an unknown name (the caller's checked path names it). */
static PyObject *Calls_frame(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    if (!owned(c, nargs, 5)) Py_RETURN_NONE;
    long what = PyLong_AsLong(args[4]);
    if (what == -1 && PyErr_Occurred()) return NULL;
    PyObject *entry = PyDict_GetItemWithError(c->frames, args[3]);
    if (!entry) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) Py_RETURN_NONE;
    Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
    if (i == -1 && PyErr_Occurred()) return NULL;
    const double *q = vec(args[0], c->nq), *Rf = flat(PyTuple_GET_ITEM(entry, 1), 9);
    const double *pf = flat(PyTuple_GET_ITEM(entry, 2), 3);
    const double *qd = what >= 1 ? vec(args[1], c->nv) : NULL, *qdd = what == 2 ? vec(args[2], c->nv) : NULL;
    if (!q || !pf || !Rf || (what >= 1 && !qd) || (what == 2 && !qdd) || i < 0 || i > c->N) Py_RETURN_NONE;
    if (c->fk(c->s, q, qd, qdd, c->R, c->p, what >= 1 ? c->v : NULL, what == 2 ? c->a : NULL)) Py_RETURN_NONE;
    const double *R = c->R + 9 * i, *w = c->v + 6 * i, *vo = w + 3, *dw = c->a + 6 * i, *dvo = dw + 3;
    PyObject *first = new_array(what == 0 ? 2 : 1, 3, 3), *second = new_array(1, 3, 0);
    if (!first || !second) {
        Py_XDECREF(first), Py_XDECREF(second);
        return NULL;
    }
    double *o1 = DATA(first), *o2 = DATA(second), t[3], u[3], r[3];
    if (what == 0) {
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                o1[3 * j + k] = R[3 * j] * Rf[k] + R[3 * j + 1] * Rf[3 + k] + R[3 * j + 2] * Rf[6 + k];
        mul3(R, pf, t);
        for (int j = 0; j < 3; j++) o2[j] = c->p[3 * i + j] + t[j];
    } else if (what == 1) {
        mul3(R, w, o1);
        cross3(w, pf, t);
        for (int j = 0; j < 3; j++) t[j] = vo[j] + t[j];
        mul3(R, t, o2);
    } else {
        mul3(R, dw, o1);
        cross3(w, pf, t); /* w x r */
        for (int j = 0; j < 3; j++) t[j] = vo[j] + t[j];
        cross3(w, t, u);   /* w x (v_o + w x r) */
        cross3(dw, pf, r); /* w' x r */
        for (int j = 0; j < 3; j++) t[j] = dvo[j] + r[j] + u[j];
        mul3(R, t, o2);
    }
    return Py_BuildValue("(NN)", first, second);
}

static PyMethodDef Calls_methods[] = {
    {"forward_dynamics", (PyCFunction)(void (*)(void))Calls_forward_dynamics, METH_FASTCALL,
     "forward_dynamics(q, qd, tau) -> qdd (nv,), or None (then take the checked path)"},
    {"inverse_dynamics", (PyCFunction)(void (*)(void))Calls_inverse_dynamics, METH_FASTCALL,
     "inverse_dynamics(q, qd, qdd) -> tau (nv,), or None"},
    {"mass_matrix", (PyCFunction)(void (*)(void))Calls_mass_matrix, METH_FASTCALL,
     "mass_matrix(q) -> M (nv, nv), or None"},
    {"aba_derivatives", (PyCFunction)(void (*)(void))Calls_aba_derivatives, METH_FASTCALL,
     "aba_derivatives(q, qd, tau) -> (dqdd_dq, dqdd_dqd, Minv), or None"},
    {"rnea_derivatives", (PyCFunction)(void (*)(void))Calls_rnea_derivatives, METH_FASTCALL,
     "rnea_derivatives(q, qd, qdd) -> (dtau_dq, dtau_dqd, M), or None"},
    {"frame", (PyCFunction)(void (*)(void))Calls_frame, METH_FASTCALL,
     "frame(q, qd, qdd, name, what) -> pose (0), velocity (1) or acceleration (2) of a named frame, or None"},
    {NULL, NULL, 0, NULL},
};

static void Calls_dealloc(Calls *c) {
    Py_XDECREF(c->keep);
    Py_XDECREF(c->frames);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyTypeObject CallsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mbsfmu_binding.Calls",
    .tp_basicsize = sizeof(Calls),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One core instance's per-call functions (binding.c); made by bind()",
    .tp_methods = Calls_methods,
    .tp_dealloc = (destructor)Calls_dealloc,
};

/* bind(keep, frames, s, nq, nv, N, functions (6 addresses), buffers (6 addresses)) -> Calls owned by
 * this thread; the buffers: derivatives work, qdd (nv), R, p, v, a of N + 1 bodies */
static PyObject *bind(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *keep, *frames;
    unsigned long long s, f[6], b[6];
    Py_ssize_t nq, nv, N;
    if (!PyArg_ParseTuple(args, "OO!Knnn(KKKKKK)(KKKKKK)", &keep, &PyDict_Type, &frames, &s, &nq, &nv, &N, &f[0],
                          &f[1], &f[2], &f[3], &f[4], &f[5], &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]))
        return NULL;
    Calls *c = PyObject_New(Calls, &CallsType);
    if (!c) return NULL;
    Py_INCREF(keep);
    Py_INCREF(frames);
    c->keep = keep, c->frames = frames;
    c->s = (void *)(uintptr_t)s;
    c->thread = PyThread_get_thread_ident();
    c->nq = nq, c->nv = nv, c->N = N;
    c->fd = (vec3_fn)(uintptr_t)f[0], c->id = (vec3_fn)(uintptr_t)f[1], c->crba = (crba_fn)(uintptr_t)f[2];
    c->aba_d = (aba_deriv_fn)(uintptr_t)f[3], c->rnea_d = (deriv_fn)(uintptr_t)f[4], c->fk = (fk_fn)(uintptr_t)f[5];
    double **buf[6] = {&c->work, &c->qdd, &c->R, &c->p, &c->v, &c->a};
    for (int k = 0; k < 6; k++) *buf[k] = (double *)(uintptr_t)b[k];
    return (PyObject *)c;
}

/* outputs(fn, s, u, bodies, wheels, out): fn(s, u, n_b, bodies, n_w, wheels, out) as a bound
 * zero-argument call, for Simulator.outputs (mbs_sim_outputs; the arrays checked by the caller). */
typedef struct {
    PyObject_HEAD
    PyObject *keep;
    outputs_fn fn;
    void *s;
    const double *u;
    const int32_t *bodies, *wheels;
    int n_b, n_w;
    double *out;
} Outputs;

static PyObject *Outputs_call(Outputs *o, PyObject *args, PyObject *kw) {
    (void)args, (void)kw;
    if (o->fn(o->s, o->u, o->n_b, o->bodies, o->n_w, o->wheels, o->out)) Py_RETURN_NONE;
    PyObject *out = PyTuple_GET_ITEM(o->keep, 0);
    Py_INCREF(out);
    return out;
}

static void Outputs_dealloc(Outputs *o) {
    Py_XDECREF(o->keep);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyTypeObject OutputsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mbsfmu_binding.Outputs",
    .tp_basicsize = sizeof(Outputs),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "mbs_sim_outputs bound to its arrays: call() -> out, or None when the core fails",
    .tp_call = (ternaryfunc)Outputs_call,
    .tp_dealloc = (destructor)Outputs_dealloc,
};

/* bind_outputs(keep (out, ...), fn, s, u, n_b, bodies, n_w, wheels, out) */
static PyObject *bind_outputs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *keep;
    unsigned long long fn, s, u, bodies, wheels, out;
    int n_b, n_w;
    if (!PyArg_ParseTuple(args, "O!KKKiKiKK", &PyTuple_Type, &keep, &fn, &s, &u, &n_b, &bodies, &n_w, &wheels, &out))
        return NULL;
    if (PyTuple_GET_SIZE(keep) < 1) return PyErr_Format(PyExc_ValueError, "keep must start with the out array");
    Outputs *o = PyObject_New(Outputs, &OutputsType);
    if (!o) return NULL;
    Py_INCREF(keep);
    o->keep = keep;
    o->fn = (outputs_fn)(uintptr_t)fn;
    o->s = (void *)(uintptr_t)s;
    o->u = (const double *)(uintptr_t)u;
    o->n_b = n_b, o->n_w = n_w;
    o->bodies = (const int32_t *)(uintptr_t)bodies, o->wheels = (const int32_t *)(uintptr_t)wheels;
    o->out = (double *)(uintptr_t)out;
    return (PyObject *)o;
}

/* The Simulator's per-step calls: step(t, dt) -> mbs_sim_step_inputs(s, t, u, dt) (MBS_OK 0, MBS_DISCARD 1,
 * MBS_ERROR 2); invariant_values() -> a new (20,) array of rows.ENGINE_COLUMNS from the instance's
 * lazy invariants (mbs_sim_invariants: p_sys, P_sys, H_sys, R, Rdot, KE, PE, its first 17 doubles),
 * E = KE + PE and W_in, W_diss (x's last two), as mbs_sim_outputs writes them. */
typedef int (*step_fn)(void *s, double t, const double *u, double dt);
typedef const double *(*invariants_fn)(void *s);

typedef struct {
    PyObject_HEAD
    PyObject *keep;
    void *s;
    const double *u, *x; /* the inputs step passes; the state (nx = n_x entries) */
    Py_ssize_t n_x;
    step_fn step;
    invariants_fn invariants;
} Stepper;

static PyObject *Stepper_step(Stepper *o, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "step(t, dt) takes 2 arguments");
    double t = PyFloat_AsDouble(args[0]), dt = PyFloat_AsDouble(args[1]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(o->step(o->s, t, o->u, dt));
}

static PyObject *Stepper_invariant_values(Stepper *o, PyObject *unused) {
    (void)unused;
    const double *inv = o->invariants(o->s);
    if (!inv) return PyErr_Format(PyExc_RuntimeError, "the core instance is not valid");
    PyObject *out = new_array(1, 20, 0);
    if (!out) return NULL;
    double *v = DATA(out);
    memcpy(v, inv, 17 * sizeof(double));
    v[17] = inv[15] + inv[16];
    v[18] = o->x[o->n_x - 2];
    v[19] = o->x[o->n_x - 1];
    return out;
}

static PyMethodDef Stepper_methods[] = {
    {"step", (PyCFunction)(void (*)(void))Stepper_step, METH_FASTCALL,
     "step(t, dt) -> mbs_sim_step_inputs' code (0 ok, 1 discard, 2 error)"},
    {"invariant_values", (PyCFunction)Stepper_invariant_values, METH_NOARGS,
     "invariant_values() -> (20,) p_sys, P_sys, H_sys, R, Rdot, KE, PE, E, W_in, W_diss"},
    {NULL, NULL, 0, NULL},
};

static void Stepper_dealloc(Stepper *o) {
    Py_XDECREF(o->keep);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyTypeObject StepperType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mbsfmu_binding.Stepper",
    .tp_basicsize = sizeof(Stepper),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A core instance's step and invariant values for the Simulator (binding.c)",
    .tp_methods = Stepper_methods,
    .tp_dealloc = (destructor)Stepper_dealloc,
};

/* bind_stepper(keep, s, u, x, n_x, step, invariants) */
static PyObject *bind_stepper(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *keep;
    unsigned long long s, u, x, step, inv;
    Py_ssize_t n_x;
    if (!PyArg_ParseTuple(args, "OKKKnKK", &keep, &s, &u, &x, &n_x, &step, &inv)) return NULL;
    if (n_x < 2) return PyErr_Format(PyExc_ValueError, "the state has W_in and W_diss: n_x >= 2");
    Stepper *o = PyObject_New(Stepper, &StepperType);
    if (!o) return NULL;
    Py_INCREF(keep);
    o->keep = keep;
    o->s = (void *)(uintptr_t)s;
    o->u = (const double *)(uintptr_t)u, o->x = (const double *)(uintptr_t)x;
    o->n_x = n_x;
    o->step = (step_fn)(uintptr_t)step, o->invariants = (invariants_fn)(uintptr_t)inv;
    return (PyObject *)o;
}

static PyMethodDef module_methods[] = {
    {"bind_stepper", bind_stepper, METH_VARARGS, "bind_stepper(keep, s, u, x, n_x, step, invariants) -> Stepper"},
    {"bind", bind, METH_VARARGS, "bind(keep, frames, s, nq, nv, N, functions, buffers) -> Calls"},
    {"bind_outputs", bind_outputs, METH_VARARGS, "bind_outputs(keep, fn, s, u, n_b, bodies, n_w, wheels, out)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mbsfmu_binding", NULL, -1, module_methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_mbsfmu_binding(void) {
    import_array();
    if (PyType_Ready(&CallsType) < 0 || PyType_Ready(&OutputsType) < 0 || PyType_Ready(&StepperType) < 0)
        return NULL;
    return PyModule_Create(&module);
}
