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
#include <structmember.h>
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

/* out (a new reference) if it is a writeable, aligned, C-contiguous float64 array of nd dimensions,
 * each n, whose memory overlaps none of the k inputs x[j] (n_x[j] doubles), else NULL with no
 * exception: the caller answers None, and the Python method checks out (an InputError says what is
 * wrong with it) or computes into new memory and copies (an input's memory: the core reads some
 * inputs after it starts writing its result, e.g. ABA's qd). Absent or None: a new array. */
static PyObject *result(PyObject *out, int nd, Py_ssize_t n, const double *const *x, const Py_ssize_t *n_x, int k) {
    if (!out || out == Py_None) return new_array(nd, n, n);
    if (!PyArray_Check(out)) return NULL;
    PyArrayObject *a = (PyArrayObject *)out;
    if (PyArray_TYPE(a) != NPY_DOUBLE || PyArray_NDIM(a) != nd || !PyArray_ISCARRAY(a)) return NULL;
    for (int d = 0; d < nd; d++)
        if (PyArray_DIM(a, d) != n) return NULL;
    const double *o = (const double *)PyArray_DATA(a);
    Py_ssize_t size = nd == 2 ? n * n : n;
    for (int j = 0; j < k; j++)
        if (o < x[j] + n_x[j] && x[j] < o + size) return NULL;
    Py_INCREF(out);
    return out;
}

/* fn(s, q, qd, b, NULL, result (nv,)) into out (NULL or None: a new array); None when not taken */
static PyObject *vec3_run(Calls *c, vec3_fn fn, PyObject *x0, PyObject *x1, PyObject *x2, PyObject *out) {
    if (PyThread_get_thread_ident() != c->thread) Py_RETURN_NONE;
    const double *x[3] = {vec(x0, c->nq), vec(x1, c->nv), vec(x2, c->nv)};
    if (!x[0] || !x[1] || !x[2]) Py_RETURN_NONE;
    const Py_ssize_t n_x[3] = {c->nq, c->nv, c->nv};
    PyObject *r = result(out, 1, c->nv, x, n_x, 3);
    if (!r) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (fn(c->s, x[0], x[1], x[2], NULL, DATA(r))) {
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    return r;
}

/* mbs_crba(s, q, M (nv, nv)) into out (NULL or None: a new array); None when not taken */
static PyObject *crba_run(Calls *c, PyObject *q_obj, PyObject *out) {
    if (PyThread_get_thread_ident() != c->thread) Py_RETURN_NONE;
    const double *q = vec(q_obj, c->nq);
    if (!q) Py_RETURN_NONE;
    PyObject *M = result(out, 2, c->nv, &q, &c->nq, 1);
    if (!M) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (c->crba(c->s, q, DATA(M))) {
        Py_DECREF(M);
        Py_RETURN_NONE;
    }
    return M;
}

/* (q, qd, b[, out]): out None or absent makes a new result */
static PyObject *Calls_forward_dynamics(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 && nargs != 4) Py_RETURN_NONE;
    return vec3_run(c, c->fd, args[0], args[1], args[2], nargs == 4 ? args[3] : NULL);
}

static PyObject *Calls_inverse_dynamics(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 && nargs != 4) Py_RETURN_NONE;
    return vec3_run(c, c->id, args[0], args[1], args[2], nargs == 4 ? args[3] : NULL);
}

static PyObject *Calls_mass_matrix(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1 && nargs != 2) Py_RETURN_NONE;
    return crba_run(c, args[0], nargs == 2 ? args[1] : NULL);
}

/* (q, qd, b) -> (A, B, M), three new (nv, nv) arrays the derivative function writes */
static PyObject *derivatives_run(Calls *c, int aba, PyObject *x0, PyObject *x1, PyObject *x2) {
    if (PyThread_get_thread_ident() != c->thread) Py_RETURN_NONE;
    const double *q = vec(x0, c->nq), *qd = vec(x1, c->nv), *b = vec(x2, c->nv);
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
    if (nargs != 3) Py_RETURN_NONE;
    return derivatives_run(c, 1, args[0], args[1], args[2]);
}

static PyObject *Calls_rnea_derivatives(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) Py_RETURN_NONE;
    return derivatives_run(c, 0, args[0], args[1], args[2]);
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
static PyObject *frame_run(Calls *c, PyObject *q_obj, PyObject *qd_obj, PyObject *qdd_obj, PyObject *name, long what) {
    if (PyThread_get_thread_ident() != c->thread) Py_RETURN_NONE;
    PyObject *entry = PyDict_GetItemWithError(c->frames, name);
    if (!entry) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) Py_RETURN_NONE;
    Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
    if (i == -1 && PyErr_Occurred()) return NULL;
    const double *q = vec(q_obj, c->nq), *Rf = flat(PyTuple_GET_ITEM(entry, 1), 9);
    const double *pf = flat(PyTuple_GET_ITEM(entry, 2), 3);
    const double *qd = what >= 1 ? vec(qd_obj, c->nv) : NULL, *qdd = what == 2 ? vec(qdd_obj, c->nv) : NULL;
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

static PyObject *Calls_frame(Calls *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) Py_RETURN_NONE;
    long what = PyLong_AsLong(args[4]);
    if (what == -1 && PyErr_Occurred()) return NULL;
    return frame_run(c, args[0], args[1], args[2], args[3], what);
}

static PyMethodDef Calls_methods[] = {
    {"forward_dynamics", (PyCFunction)(void (*)(void))Calls_forward_dynamics, METH_FASTCALL,
     "forward_dynamics(q, qd, tau[, out]) -> qdd (nv,) (out where given), or None (then take the checked path)"},
    {"inverse_dynamics", (PyCFunction)(void (*)(void))Calls_inverse_dynamics, METH_FASTCALL,
     "inverse_dynamics(q, qd, qdd[, out]) -> tau (nv,), or None"},
    {"mass_matrix", (PyCFunction)(void (*)(void))Calls_mass_matrix, METH_FASTCALL,
     "mass_matrix(q[, out]) -> M (nv, nv), or None"},
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

/* ---- Method: a Model dynamics method's default case in one vectorcall ----------------------------
 * method(calls, fallback, name, params) -> a callable the Model keeps in its instance dict under
 * ``name`` (Model._bind_calls), in front of the Python method of the same name. A call in the case
 * the Calls object takes (float64 arrays of the model's sizes in place; backend "auto" or "native",
 * f_ext None, method "aba", out None or a usable array; positional or by keyword) runs the core
 * function here, with no Python frame, string compares or attribute look-ups between; every other
 * call (and a None from Calls) is passed on unchanged to ``fallback`` (the bound Python method,
 * which converts, computes otherwise or raises the InputError naming the argument). Its __doc__,
 * __name__ and __wrapped__ are the Python method's, so help() and inspect.signature document it.
 * params: the Python method's parameter names after self, checked against PARAMS (a changed
 * signature is a ValueError at binding time, not a call routed by the wrong position). */
enum { K_FD, K_ID, K_MM, K_AD, K_RD, K_FP, K_FV, K_FA, N_KINDS };
#define MAX_PARAMS 7

static const char *const KIND_NAMES[N_KINDS] = {"forward_dynamics", "inverse_dynamics", "mass_matrix",
                                                "aba_derivatives",  "rnea_derivatives", "frame_pose",
                                                "frame_velocity",   "frame_acceleration"};
static const char *const PARAMS[N_KINDS][MAX_PARAMS + 1] = {
    {"q", "qd", "tau", "f_ext", "method", "backend", "out", NULL},
    {"q", "qd", "qdd", "f_ext", "backend", "out", NULL},
    {"q", "backend", "out", NULL},
    {"q", "qd", "tau", "f_ext", NULL},
    {"q", "qd", "qdd", "f_ext", NULL},
    {"q", "frame", NULL},
    {"q", "qd", "frame", NULL},
    {"q", "qd", "qdd", "frame", NULL},
};
static const int REQUIRED[N_KINDS] = {3, 3, 1, 3, 3, 2, 3, 4}; /* the parameters without a default */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Calls *calls;
    PyObject *fallback; /* the bound Python method */
    PyObject *names;    /* the parameter names (interned), PARAMS[kind] */
    int kind;
} Method;

static int is_none(PyObject *v) { return !v || v == Py_None; }

static int is_str(PyObject *v, const char *s) {
    return PyUnicode_CheckExact(v) && PyUnicode_CompareWithASCIIString(v, s) == 0;
}

/* backend absent, "auto" or "native": the cases in which the Python method tries the core first */
static int core_backend(PyObject *v) { return !v || is_str(v, "auto") || is_str(v, "native"); }

static Py_ssize_t param_index(const Method *m, PyObject *key) {
    Py_ssize_t n = PyTuple_GET_SIZE(m->names);
    for (Py_ssize_t j = 0; j < n; j++)
        if (PyTuple_GET_ITEM(m->names, j) == key) return j;
    for (Py_ssize_t j = 0; j < n; j++)
        if (PyUnicode_Compare(key, PyTuple_GET_ITEM(m->names, j)) == 0) return j;
    if (PyErr_Occurred()) PyErr_Clear();
    return -1;
}

static PyObject *Method_vectorcall(Method *m, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), n = PyTuple_GET_SIZE(m->names);
    PyObject *p[MAX_PARAMS] = {NULL}, *r = Py_None;
    Calls *c = m->calls;
    if (nargs > n) goto fallback;
    for (Py_ssize_t j = 0; j < nargs; j++) p[j] = args[j];
    if (kwnames) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
            Py_ssize_t j = param_index(m, PyTuple_GET_ITEM(kwnames, k));
            if (j < 0 || p[j]) goto fallback; /* unknown or repeated: the Python method's TypeError */
            p[j] = args[nargs + k];
        }
    }
    for (int j = 0; j < REQUIRED[m->kind]; j++)
        if (!p[j]) goto fallback;
    switch (m->kind) {
    case K_FD:
        if (!is_none(p[3]) || !(!p[4] || is_str(p[4], "aba")) || !core_backend(p[5])) goto fallback;
        r = vec3_run(c, c->fd, p[0], p[1], p[2], p[6]);
        break;
    case K_ID:
        if (!is_none(p[3]) || !core_backend(p[4])) goto fallback;
        r = vec3_run(c, c->id, p[0], p[1], p[2], p[5]);
        break;
    case K_MM:
        if (!core_backend(p[1])) goto fallback;
        r = crba_run(c, p[0], p[2]);
        break;
    case K_AD:
    case K_RD:
        if (!is_none(p[3])) goto fallback;
        r = derivatives_run(c, m->kind == K_AD, p[0], p[1], p[2]);
        break;
    case K_FP: r = frame_run(c, p[0], NULL, NULL, p[1], 0); break;
    case K_FV: r = frame_run(c, p[0], p[1], NULL, p[2], 1); break;
    case K_FA: r = frame_run(c, p[0], p[1], p[2], p[3], 2); break;
    }
    if (r != Py_None) return r; /* the result, or NULL with the exception set */
    Py_DECREF(r);
fallback:
    return PyObject_Vectorcall(m->fallback, args, nargsf, kwnames);
}

static int Method_traverse(Method *m, visitproc visit, void *arg) {
    Py_VISIT(m->calls);
    Py_VISIT(m->fallback);
    Py_VISIT(m->names);
    return 0;
}

static int Method_clear(Method *m) {
    Py_CLEAR(m->calls);
    Py_CLEAR(m->fallback);
    Py_CLEAR(m->names);
    return 0;
}

static void Method_dealloc(Method *m) {
    PyObject_GC_UnTrack(m);
    Method_clear(m);
    PyObject_GC_Del(m);
}

/* __doc__, __name__, __qualname__ and __wrapped__: the Python method's (help, inspect.signature) */
static PyObject *Method_attr(Method *m, void *name) { return PyObject_GetAttrString(m->fallback, (const char *)name); }

static PyGetSetDef Method_getset[] = {
    {"__doc__", (getter)Method_attr, NULL, NULL, "__doc__"},
    {"__name__", (getter)Method_attr, NULL, NULL, "__name__"},
    {"__qualname__", (getter)Method_attr, NULL, NULL, "__qualname__"},
    {"__self__", (getter)Method_attr, NULL, NULL, "__self__"},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef Method_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(Method, fallback), READONLY, "the Python method this runs the default case of"},
    {NULL, 0, 0, 0, NULL},
};

/* __get__ -> itself: kept in an instance dict it is never bound; the slot makes inspect and pydoc
 * document it as a routine (signature and docstring), as the method it stands in front of */
static PyObject *Method_get(PyObject *m, PyObject *obj, PyObject *type) {
    (void)obj, (void)type;
    Py_INCREF(m);
    return m;
}

static PyObject *Method_repr(Method *m) { return PyUnicode_FromFormat("<binding.c Method of %R>", m->fallback); }

static PyTypeObject MethodType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mbsfmu_binding.Method",
    .tp_basicsize = sizeof(Method),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Method, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)Method_traverse,
    .tp_clear = (inquiry)Method_clear,
    .tp_dealloc = (destructor)Method_dealloc,
    .tp_getset = Method_getset,
    .tp_members = Method_members,
    .tp_repr = (reprfunc)Method_repr,
    .tp_descr_get = Method_get,
};

/* method(calls, fallback, name, params) -> Method (see above) */
static PyObject *method(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *calls, *fallback, *params;
    const char *name;
    if (!PyArg_ParseTuple(args, "O!OsO!", &CallsType, &calls, &fallback, &name, &PyTuple_Type, &params)) return NULL;
    int kind = 0;
    while (kind < N_KINDS && strcmp(KIND_NAMES[kind], name) != 0) kind++;
    if (kind == N_KINDS) return PyErr_Format(PyExc_ValueError, "binding.c has no Method for %s", name);
    Py_ssize_t n = 0;
    while (PARAMS[kind][n]) n++;
    PyObject *names = PyTuple_New(n);
    if (!names) return NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *s = PyUnicode_InternFromString(PARAMS[kind][j]);
        if (!s) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, j, s);
    }
    int same = PyObject_RichCompareBool(names, params, Py_EQ);
    if (same != 1) {
        if (same == 0)
            PyErr_Format(PyExc_ValueError, "binding.c's Method for %s takes the parameters %R, the method has %R", name,
                         names, params);
        Py_DECREF(names);
        return NULL;
    }
    Method *m = PyObject_GC_New(Method, &MethodType);
    if (!m) {
        Py_DECREF(names);
        return NULL;
    }
    m->vectorcall = (vectorcallfunc)Method_vectorcall;
    Py_INCREF(calls);
    Py_INCREF(fallback);
    m->calls = (Calls *)calls, m->fallback = fallback, m->names = names, m->kind = kind;
    PyObject_GC_Track(m);
    return (PyObject *)m;
}

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
    {"method", method, METH_VARARGS, "method(calls, fallback, name, params) -> Method (a Model method's default case)"},
    {"bind_outputs", bind_outputs, METH_VARARGS, "bind_outputs(keep, fn, s, u, n_b, bodies, n_w, wheels, out)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mbsfmu_binding", NULL, -1, module_methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_mbsfmu_binding(void) {
    import_array();
    if (PyType_Ready(&CallsType) < 0 || PyType_Ready(&MethodType) < 0 || PyType_Ready(&OutputsType) < 0 ||
        PyType_Ready(&StepperType) < 0)
        return NULL;
    return PyModule_Create(&module);
}
