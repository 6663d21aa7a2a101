"""The C engine core from Python (ctypes, no dependency): one ``Core`` per instance of a model.

    from mbsfmu.engine.native.core import Core
    core = Core(model)                      # tables built, instance initialised (microseconds)
    qdd = core.aba(q, qd, tau)              # RBDA Table 7.1, as dynamics.aba.aba(tree, ...)
    tau = core.rnea(q, qd, qdd)             # RBDA Table 5.1
    M = core.crba(q)                        # RBDA Table 6.2
    core.set_state(x); core.set_inputs(u); core.step(dt)     # RK4 or DOP853 (set_solver)
    core.x, core.invariants(), core.qdd()   # outputs, computed once per state when asked

Arguments: float64 arrays of the model's sizes (other array-likes are converted); sizes and
non-finite entries are reported as InputError with the Model's own messages. Results are new
arrays, or written into ``out``. The library is loaded on first use (``build.library``: built
at install time, or once into the per-user cache).

``Core.calls()``: the same functions through the CPython binding (binding.c, ``build.binding``),
for the Model's per-call dynamics: float64 arrays passed in place, one C call, None for anything
else (the caller then takes the checked path here). Without the binding (no numpy headers, a
failed build) a RuntimeWarning says why once and every call takes the ctypes path.
"""

from __future__ import annotations

import ctypes as C
import inspect
import os
import threading
import weakref
from functools import partial
from importlib import machinery, util

import numpy as np

from ...errors import InputError
from ..inputs import real_array
from . import build
from .tables import Tables

MBS_OK, MBS_DISCARD, MBS_ERROR = 0, 1, 2
RK4, DOP853 = 1, 2
P_GRAVITY, P_MASS, P_COM, P_INERTIA, P_WHEEL_IW, P_SPRING_K, P_SPRING_D = range(1, 8)
ERR = 2048  # bytes of the message buffers

_lib = None
_lock = threading.Lock()
P, D, I, SZ, LL = C.c_void_p, C.c_double, C.c_int, C.c_size_t, C.c_longlong


class Invariants_C(C.Structure):
    """mbs_invariants of mbs_core.h."""

    _fields_ = [
        ("p_sys", D * 3),
        ("P_sys", D * 3),
        ("H_sys", D * 3),
        ("R", D * 3),
        ("Rdot", D * 3),
        ("KE", D),
        ("PE", D),
        ("H_scale", D),
        ("E_scale", D),
    ]


class Sizes_C(C.Structure):
    """mbs_sizes of mbs_core.h."""

    _fields_ = [
        ("N", I),
        ("nq", I),
        ("nv", I),
        ("nx", I),
        ("n_u", I),
        ("n_loops", I),
        ("n_rows", I),
        ("model_hash", C.c_uint64),
    ]


SIGNATURES = {
    "mbs_sim_size": (SZ, [P, SZ, P, SZ, P, SZ]),
    "mbs_sim_init": (P, [P, SZ, P, SZ, P, SZ, P, SZ]),
    "mbs_sim_sizes": (Sizes_C, [P]),
    "mbs_sim_copy": (I, [P, P]),
    "mbs_sim_set_param": (I, [P, I, I, I, D]),
    "mbs_sim_get_param": (I, [P, I, I, I, P]),
    "mbs_sim_apply_params": (I, [P, P, SZ]),
    "mbs_sim_set_solver": (I, [P, I, D, D, D, P, SZ]),
    "mbs_sim_set_loops": (I, [P, I, I, D, D]),
    "mbs_sim_set_dense": (I, [P, I, P]),
    "mbs_sim_set_avx": (I, [P, I, P]),
    "mbs_sim_lambda": (P, [P]),
    "mbs_sim_time": (D, [P]),
    "mbs_sim_set_time": (None, [P, D]),
    "mbs_sim_x": (P, [P]),
    "mbs_sim_set_x": (I, [P, P, I, P, SZ]),
    "mbs_sim_u": (P, [P]),
    "mbs_sim_set_u": (I, [P, I, D]),
    "mbs_sim_set_inputs": (I, [P, P]),
    "mbs_sim_set_stats": (None, [P, LL, LL, D]),
    "mbs_sim_step": (I, [P, D]),
    "mbs_sim_message": (C.c_char_p, [P]),
    "mbs_sim_stats": (None, [P, P, P, P]),
    "mbs_sim_qdd": (P, [P]),
    "mbs_sim_invariants": (P, [P]),
    "mbs_sim_relative_poses": (I, [P, P]),
    "mbs_aba": (I, [P, P, P, P, P, P]),
    "mbs_rnea": (I, [P, P, P, P, P, P]),
    "mbs_crba": (I, [P, P, P]),
    "mbs_forward_dynamics": (I, [P, P, P, P, P, P]),
    "mbs_forward_dynamics_tau": (I, [P, P, P, P, P, P]),
    "mbs_inverse_dynamics_tau": (I, [P, P, P, P, P, P]),
    "mbs_sim_rhs": (I, [P, P, P, P]),
    "mbs_fk": (I, [P, P, P, P, P, P, P, P]),
    "mbs_invariants_at": (I, [P, P, P, P]),
    "mbs_records_at": (I, [P, P, P, I, P, I, P, P]),
    "mbs_sim_step_inputs": (I, [P, D, P, D]),
    "mbs_sim_outputs": (I, [P, P, I, P, I, P, P]),
    "mbs_format_values": (SZ, [P, SZ, C.c_char, P]),
    "mbs_sincos_values": (None, [P, SZ, P, P]),
    "mbs_sincos_sum_values": (None, [P, P, SZ, P, P]),
    "mbs_derivatives_work": (SZ, [P]),
    "mbs_rnea_derivatives": (I, [P, P, P, P, P, P, P, P]),
    "mbs_aba_derivatives": (I, [P, P, P, P, P, P, P, P, P]),
    "mbs_force_derivatives_work": (SZ, [P]),
    "mbs_force_derivatives": (I, [P, P, P, P, P, P, P, P, P]),
    "mbs_wrench_derivatives": (I, [P, P, P, P, P, P]),
    "mbs_state_jacobian_work": (SZ, [P]),
    "mbs_state_jacobian": (I, [P, P, P, D, P, P, P]),
    "mbs_rollout_work": (SZ, [P, I, P, I]),
    "mbs_rollout": (I, [P, I, P, I, P, SZ, P, SZ]),
}


def lib() -> C.CDLL:
    """The loaded core library (built first if needed: see build.library)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                handle = C.CDLL(str(build.library()))
                for name, (res, args) in SIGNATURES.items():
                    fn = getattr(handle, name)
                    fn.restype, fn.argtypes = res, args
                _lib = handle
    return _lib


class NoCalls:
    """The stand-in for ``Core.calls()`` where the binding is missing (and before a Model's core
    exists): every call answers None, so the caller takes the checked ctypes path."""

    def forward_dynamics(self, q, qd, tau, out=None):
        return None

    inverse_dynamics = forward_dynamics

    def aba_derivatives(self, q, qd, tau):
        return None

    rnea_derivatives = aba_derivatives

    def mass_matrix(self, q, out=None):
        return None

    def frame(self, q, qd, qdd, name, what):
        return None


NO_CALLS = NoCalls()
_binding = None  # the binding module once loaded; False when it cannot be


def binding():
    """The CPython binding module (binding.c; built at install time or once into the per-user
    cache, as the library), or None when it cannot be built or loaded: then one RuntimeWarning
    says why and the per-call functions go through ctypes (the same results, ~2 us more a call).
    MBSFMU_BINDING=0 in the environment: None without a warning (the ctypes path only)."""
    global _binding
    if _binding is None:
        with _lock:
            if _binding is None and os.environ.get("MBSFMU_BINDING") == "0":
                _binding = False
            if _binding is None:
                try:
                    path = build.binding()
                    loader = machinery.ExtensionFileLoader(build.BINDING, str(path))
                    spec = util.spec_from_file_location(build.BINDING, str(path), loader=loader)
                    module = util.module_from_spec(spec)
                    loader.exec_module(module)
                    _binding = module
                except (build.BuildError, ImportError, OSError) as e:
                    import warnings

                    warnings.warn(
                        f"mbsfmu: the CPython binding of the C core cannot be built or loaded ({e}); the "
                        "dynamics calls go through ctypes (the same results, slower per call)",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                    _binding = False
    return _binding or None


def _address(fn) -> int:
    return C.cast(fn, C.c_void_p).value


def available() -> bool:
    """True if the core library loads (or can be built); False with zig missing or a failed build."""
    try:
        lib()
        return True
    except (build.BuildError, OSError):
        return False


def format_values(values: np.ndarray, sep: bytes = b",") -> bytes:
    """values (1-D float64) as text separated by ``sep``: each the shortest decimal that reads back
    to the same double, in repr's layout ("1.0", "1e-05", "nan"; decimal.c); ~2.6x the speed of
    repr and join (178 vs 460 ns per value, quiet machine)."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    buf = np.empty(25 * v.size + 1, dtype=np.uint8)
    n = lib().mbs_format_values(v.ctypes.data, v.size, sep, buf.ctypes.data)
    return buf[:n].tobytes()


def sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin x, cos x (float64, elementwise) as the core computes them for joint angles (trig.h: one
    argument reduction, the same bits on every platform, within 1 ulp for |x| <= 823549 rad)."""
    v = np.ascontiguousarray(x, dtype=np.float64).ravel()
    s, c = np.empty_like(v), np.empty_like(v)
    lib().mbs_sincos_values(v.ctypes.data, v.size, s.ctypes.data, c.ctypes.data)
    return s.reshape(np.shape(x)), c.reshape(np.shape(x))


def sincos_sum(a0: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of a0 + d (float64, elementwise, |d| <= 1/16) as RK4's later stages compute a joint
    angle's from the step's start a0 (trig.h mbs_sincos_sum: the angle-sum formulas from sincos(a0))."""
    a = np.ascontiguousarray(a0, dtype=np.float64).ravel()
    dd = np.ascontiguousarray(np.broadcast_to(d, np.shape(a0)), dtype=np.float64).ravel()
    if np.any(~(np.abs(dd) <= 1.0 / 16.0)):
        raise InputError("sincos_sum: |d| must be <= 1/16")
    s, c = np.empty_like(a), np.empty_like(a)
    lib().mbs_sincos_sum_values(a.ctypes.data, dd.ctypes.data, a.size, s.ctypes.data, c.ctypes.data)
    return s.reshape(np.shape(a0)), c.reshape(np.shape(a0))


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


class Core:
    """One instance of the C core for a Model: its own parameters, state, inputs and work memory
    (mbs_core.h). Not thread-safe: one thread per Core (several Cores run in parallel)."""

    def __init__(self, model, tables: Tables | None = None):
        L = lib()
        self._model = weakref.ref(model)  # weak: model_core's cache must not keep its key alive
        tb = tables or Tables(model)
        self.tables = tb
        err = C.create_string_buffer(ERR)
        size = L.mbs_sim_size(_ptr(tb.ti), tb.ti.size, _ptr(tb.tf), tb.tf.size, err, ERR)
        if size == 0:
            raise InputError(f"model {model.source}: {err.value.decode(errors='replace')}")
        self._mem = np.zeros(size // 8 + 1)  # 8-byte aligned, owned here
        self._s = L.mbs_sim_init(
            _ptr(self._mem), self._mem.nbytes, _ptr(tb.ti), tb.ti.size, _ptr(tb.tf), tb.tf.size, err, ERR
        )
        if not self._s:
            raise InputError(f"model {model.source}: {err.value.decode(errors='replace')}")
        z = L.mbs_sim_sizes(self._s)
        self.N, self.nq, self.nv, self.nx, self.n_u = z.N, z.nq, z.nv, z.nx, z.n_u
        self.model_hash = int(z.model_hash)
        self.input_names = tb.input_names
        self._L, self._err = L, err
        self._x = np.ctypeslib.as_array(C.cast(L.mbs_sim_x(self._s), C.POINTER(D)), (self.nx,))
        self._u = np.ctypeslib.as_array(C.cast(L.mbs_sim_u(self._s), C.POINTER(D)), (max(self.n_u, 1),))[: self.n_u]
        # staging buffers with fixed addresses: arguments are copied in, results read out
        self._q, self._v1, self._v2, self._out = (
            np.zeros(self.nq),
            np.zeros(self.nv),
            np.zeros(self.nv),
            np.zeros(self.nv),
        )
        self._xin, self._uin = np.zeros(self.nx), np.zeros(max(self.n_u, 1))
        self._fx = np.zeros((self.N + 1, 6))
        self._pq, self._p1, self._p2, self._po = map(_ptr, (self._q, self._v1, self._v2, self._out))
        self._pxin, self._puin, self._pfx = _ptr(self._xin), _ptr(self._uin), _ptr(self._fx)
        self._M, self._xout = np.zeros((self.nv, self.nv)), np.zeros(self.nx)
        self._pM, self._pxout = _ptr(self._M), _ptr(self._xout)
        N1 = self.N + 1
        self._kin = (np.zeros((N1, 3, 3)), np.zeros((N1, 3)), np.zeros((N1, 6)), np.zeros((N1, 6)))
        self._pkin = tuple(_ptr(k) for k in self._kin)
        self._stat = (C.c_longlong(), C.c_longlong(), C.c_double())
        self._stat_p = tuple(C.addressof(v) for v in self._stat)
        self._fd, self._fd_tau, self._id_tau = L.mbs_aba, L.mbs_forward_dynamics_tau, L.mbs_inverse_dynamics_tau
        self._rnea = L.mbs_rnea
        self._rnea_d, self._aba_d, self._dbufs = L.mbs_rnea_derivatives, L.mbs_aba_derivatives, None
        self._fbufs = None
        self._step_inputs, self._outputs = L.mbs_sim_step_inputs, L.mbs_sim_outputs
        self.u_in = self._uin[: self.n_u]  # the inputs step_inputs passes (fixed address)
        self._inv_view = (None, None)  # (address, array) of invariant_view, made at its first call
        self._poses = None  # relative_poses' array, made at its first call
        self._x_view = self._x.view()
        self._x_view.flags.writeable = False

    def calls(self, frames: dict | None = None):
        """This instance's per-call functions through the CPython binding (binding.c:
        forward_dynamics, inverse_dynamics, mass_matrix, aba_derivatives, rnea_derivatives, and
        frame(q, qd, qdd, name, what) of ``frames``: {name: (body, R (3, 3), p (3,)) float64}),
        owned by the calling thread (from another thread they answer None); NO_CALLS without the
        binding. The results are those of the methods here (the same C functions)."""
        mod = binding()
        if mod is None:
            return NO_CALLS
        L = self._L
        work, arrays, _pw, _pa = self._derivative_buffers()
        fns = (
            L.mbs_forward_dynamics_tau,
            L.mbs_inverse_dynamics_tau,
            L.mbs_crba,
            L.mbs_aba_derivatives,
            L.mbs_rnea_derivatives,
            L.mbs_fk,
        )
        bufs = (work, arrays[0], *self._kin)
        return mod.bind(
            (self, bufs),
            dict(frames or {}),
            self._s,
            self.nq,
            self.nv,
            self.N,
            tuple(map(_address, fns)),
            tuple(map(_ptr, bufs)),
        )

    @property
    def handle(self) -> int:
        """The address of the core instance (an mbs_sim *), for C functions taking instances
        (rollout.c); valid while this Core lives."""
        return self._s

    @property
    def model(self):
        """The Model this instance was built from."""
        return self._model()

    @property
    def nbytes(self) -> int:
        """Bytes of the instance's memory block (mbs_sim_size: linear in the number of bodies, plus
        the n x n loop work of models with closed loops)."""
        return self._mem.nbytes

    # ---- arguments --------------------------------------------------------------------------
    def _load(self, buf: np.ndarray, name: str, x, n: int) -> None:
        """buf[:] = x, a vector of n numbers (InputError with the Model's message otherwise)."""
        if type(x) is np.ndarray and x.shape == (n,) and x.dtype.kind != "c":
            buf[:] = x
        else:
            buf[:] = self.model.checked_vector(name, x, n)

    def _f_ext(self, f_ext, whole: bool) -> int | None:
        """Pointer to the (N+1, 6) wrench table, or None. whole: f_ext is (N+1, 6) with row 0 the
        world (the dynamics.* convention), else the Model's (N, 6) or {body: (6,)}."""
        if f_ext is None:
            return None
        if whole:
            arr = real_array("f_ext", f_ext)
            if arr.shape != (self.N + 1, 6):
                raise InputError(f"f_ext has shape {arr.shape}, expected ({self.N + 1}, 6) (row 0 the world)")
            self._fx[:] = arr
        else:
            self._fx[:] = self.model.external_forces(f_ext)
        return self._pfx

    def _fail(self, third: str | None = None) -> None:
        """InputError for a failed call: the Model's message for the staged argument at fault
        (q, qd and ``third``: tau or qdd), else the core's message."""
        self.model.checked_vector("q", self._q, self.nq)
        self.model.checked_vector("qd", self._v1, self.nv)
        if third:
            self.model.checked_vector(third, self._v2, self.nv)
        raise InputError(self._L.mbs_sim_message(self._s).decode(errors="replace"))

    def _result(self, out):
        if out is None:
            return self._out.copy()
        out[:] = self._out
        return out

    # ---- algorithms at a given state --------------------------------------------------------
    def aba(self, q, qd, tau, f_ext=None, out=None) -> np.ndarray:
        """qdd (nv,) = ABA(q, qd, tau, f_ext) (no springs/dampers added); f_ext (N+1, 6), row 0 ignored."""
        return self._call(self._fd, q, qd, "tau", tau, self._f_ext(f_ext, True), out)

    def _stage(self, q, qd, name: str, b) -> None:
        """q, qd and the vector ``b`` (named ``name`` in messages) copied into the fixed argument
        buffers; conversions and checks only for what is not already a float array of its shape."""
        nq, nv = self.nq, self.nv
        if type(q) is np.ndarray and q.shape == (nq,) and q.dtype.kind != "c":
            self._q[:] = q
        else:
            self._q[:] = self.model.checked_vector("q", q, nq)
        if type(qd) is np.ndarray and qd.shape == (nv,) and qd.dtype.kind != "c":
            self._v1[:] = qd
        else:
            self._v1[:] = self.model.checked_vector("qd", qd, nv)
        if type(b) is np.ndarray and b.shape == (nv,) and b.dtype.kind != "c":
            self._v2[:] = b
        else:
            self._v2[:] = self.model.checked_vector(name, b, nv)

    def _call(self, fn, q, qd, name: str, b, pf, out) -> np.ndarray:
        """fn(s, q, qd, b, f_ext, result) on the staged arguments (the per-call path: three copies
        into fixed buffers, one foreign call; conversions and messages only when needed)."""
        self._stage(q, qd, name, b)
        if fn(self._s, self._pq, self._p1, self._p2, pf, self._po):
            self._fail(name)
        if out is None:
            return self._out.copy()
        out[:] = self._out
        return out

    def rnea(self, q, qd, qdd, f_ext=None, out=None) -> np.ndarray:
        """tau (nv,) = RNEA(q, qd, qdd, f_ext) (no springs/dampers); f_ext (N+1, 6), row 0 ignored."""
        return self._call(self._rnea, q, qd, "qdd", qdd, self._f_ext(f_ext, True), out)

    def crba(self, q, out=None) -> np.ndarray:
        """M(q) (nv, nv) by CRBA."""
        self._load(self._q, "q", q, self.nq)
        if self._L.mbs_crba(self._s, self._pq, self._pM):
            self.model.checked_vector("q", self._q, self.nq)
            raise InputError(self.message)
        if out is None:
            return self._M.copy()
        out[...] = self._M
        return out

    mass_matrix = crba

    def _derivatives_call(self, fn, q, qd, name: str, b, n_out: int):
        """fn(s, q, qd, b, work, *outs) into fixed buffers (derivatives.c), copies returned: the
        first n_out of qdd (nv,) and three (nv, nv) matrices."""
        bufs = self._derivative_buffers()
        self._stage(q, qd, name, b)
        _work, arrays, pw, pa = bufs
        if n_out == 4:
            failed = fn(self._s, self._pq, self._p1, self._p2, pw, pa[0], pa[1], pa[2], pa[3])
        else:
            failed = fn(self._s, self._pq, self._p1, self._p2, pw, pa[1], pa[2], pa[3])
        if failed:
            self._fail(name)
        qdd, A, B, M = arrays
        if n_out == 4:
            return qdd.copy(), A.copy(), B.copy(), M.copy()
        return A.copy(), B.copy(), M.copy()

    def _derivative_buffers(self):
        """(work, (qdd, A, B, M), pointers) of derivatives.c, made on first use."""
        if self._dbufs is None:
            nv = self.nv
            work = np.zeros(self._L.mbs_derivatives_work(self._s))
            arrays = (np.zeros(nv), np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv)))
            self._dbufs = (work, arrays, _ptr(work), tuple(map(_ptr, arrays)))
        return self._dbufs

    def rnea_derivatives(self, q, qd, qdd) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dtau_dq, dtau_dqd, M) (nv, nv) of Model.inverse_dynamics without f_ext (derivatives.c)."""
        return self._derivatives_call(self._rnea_d, q, qd, "qdd", qdd, 3)

    def aba_derivatives(self, q, qd, tau) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(qdd (nv,), dqdd_dq, dqdd_dqd, Minv (nv, nv)) of Model.forward_dynamics without f_ext."""
        return self._derivatives_call(self._aba_d, q, qd, "tau", tau, 4)

    def _force_buffers(self):
        """(work, (Q, dQ_dq, dQ_dqd, dQ_du), pointers) of force_derivatives.c, made on first use."""
        if self._fbufs is None:
            nv = self.nv
            work = np.zeros(self._L.mbs_force_derivatives_work(self._s))
            arrays = (np.zeros(nv), np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, max(self.n_u, 1))))
            self._fbufs = (work, arrays, _ptr(work), tuple(map(_ptr, arrays)))
        return self._fbufs

    def force_derivatives(self, q, qd, u) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(Q (nv,), dQ_dq, dQ_dqd (nv, nv), dQ_du (nv, n_u)): the generalized force of the force
        elements (point spring-dampers, thrusters, body wrenches) at (q, qd) and inputs u (n_u,) and
        its derivatives (force_derivatives.c; columns as aba_derivatives')."""
        _work, arrays, pw, pa = self._force_buffers()
        self._load(self._q, "q", q, self.nq)
        self._load(self._v1, "qd", qd, self.nv)
        self._load(self._uin[: self.n_u], "u", u, self.n_u)
        if self._L.mbs_force_derivatives(self._s, self._pq, self._p1, self._puin, pw, *pa):
            self._fail()
        Q, dq, dqd, du = arrays
        return Q.copy(), dq.copy(), dqd.copy(), du[:, : self.n_u].copy()

    def wrench_derivatives(self, q, f_ext) -> tuple[np.ndarray, np.ndarray]:
        """(Q (nv,), dQ_dq (nv, nv)): the generalized force of the external wrenches f_ext (the
        Model's (N, 6) or {body: (6,)}, body axes at the body origins, as forward_dynamics') at q and
        its derivative (force_derivatives.c)."""
        _work, arrays, pw, pa = self._force_buffers()
        self._load(self._q, "q", q, self.nq)
        if self._L.mbs_wrench_derivatives(self._s, self._pq, self._f_ext(f_ext, False), pw, pa[0], pa[1]):
            raise InputError(self.message)
        return arrays[0].copy(), arrays[1].copy()

    def state_jacobian(self, xh, u, k_norm: float) -> tuple[np.ndarray, np.ndarray]:
        """(A (nx, nx), B (nx, n_u)): the exact Jacobian of the Model Exchange right-hand side
        f(xh, u) (mbs_sim_host_derivatives with k_norm [1/s]) at the host state xh (nx,), its
        quaternions of any nonzero norm, and inputs u (n_u,) (state_jacobian.c). InputError with
        the core's reason where it does not apply (closed loops, couplings)."""
        x = np.ascontiguousarray(xh, dtype=float).reshape(self.nx).copy()
        uu = np.ascontiguousarray(u, dtype=float).reshape(self.n_u).copy() if self.n_u else np.zeros(1)
        work = np.zeros(self._L.mbs_state_jacobian_work(self._s))
        A, B = np.zeros((self.nx, self.nx)), np.zeros((self.nx, max(self.n_u, 1)))
        if self._L.mbs_state_jacobian(self._s, _ptr(x), _ptr(uu), float(k_norm), _ptr(work), _ptr(A), _ptr(B)):
            raise InputError(self.message)
        return A, B[:, : self.n_u].copy()

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None) -> np.ndarray:
        """qdd (nv,) under actuator forces tau, joint springs/dampers, gravity and f_ext, as
        Model.forward_dynamics (f_ext (N, 6) or {body: (6,)})."""
        return self._call(self._fd_tau, q, qd, "tau", tau, None if f_ext is None else self._f_ext(f_ext, False), out)

    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None) -> np.ndarray:
        """tau (nv,) producing qdd with springs/dampers and f_ext acting, as Model.inverse_dynamics."""
        return self._call(self._id_tau, q, qd, "qdd", qdd, None if f_ext is None else self._f_ext(f_ext, False), out)

    def rhs(self, x, u) -> np.ndarray:
        """dx/dt (nx,) at x with inputs u (n_u,): the equations the integrators use."""
        self._load(self._xin, "x", x, self.nx)
        u = self.model.checked_vector("u", u, self.n_u)
        self._uin[: self.n_u] = u
        if self._L.mbs_sim_rhs(self._s, self._pxin, self._puin, self._pxout):
            self.model.checked_vector("x", self._xin, self.nx)
            raise InputError(self.message)
        return self._xout.copy()

    def kinematics(self, q, qd=None, qdd=None):
        """(R (N+1, 3, 3), p (N+1, 3), v (N+1, 6), a (N+1, 6)) by one outward pass (zeros for v
        without qd, for a without qd and qdd)."""
        self._load(self._q, "q", q, self.nq)
        pv = pa = None
        if qd is not None:
            self._load(self._v1, "qd", qd, self.nv)
            pv = self._p1
            if qdd is not None:
                self._load(self._v2, "qdd", qdd, self.nv)
                pa = self._p2
        if self._L.mbs_fk(self._s, self._pq, pv, pa, *self._pkin):
            self._fail()
        return tuple(k.copy() for k in self._kin)

    def invariants_at(self, q, qd) -> Invariants_C:
        """p_sys, P_sys, H_sys, R, Rdot, KE, PE at (q, qd) (records.engine_invariants)."""
        self._load(self._q, "q", q, self.nq)
        self._load(self._v1, "qd", qd, self.nv)
        out = Invariants_C()
        if self._L.mbs_invariants_at(self._s, self._pq, self._p1, C.addressof(out)):
            self._fail()
        return out

    def records_at(self, q, qd, bodies: np.ndarray, wheels: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The body records at (q, qd) into ``out`` (sim/outputs.py body_record_values: 49 per
        body of ``bodies``, 7 per wheel rotor of ``wheels`` (int32 body indices), 24 system values)."""
        self._load(self._q, "q", q, self.nq)
        self._load(self._v1, "qd", qd, self.nv)
        n = 49 * bodies.size + 7 * wheels.size + 24
        if out.size != n or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise InputError(f"records: out must be a contiguous float64 array of {n}")
        if any(a.dtype != np.int32 or not a.flags.c_contiguous for a in (bodies, wheels)):
            raise InputError("records: bodies and wheels must be contiguous int32 arrays of body indices")
        if self._L.mbs_records_at(
            self._s, self._pq, self._p1, bodies.size, _ptr(bodies), wheels.size, _ptr(wheels), _ptr(out)
        ):
            self._fail()
        return out

    # ---- parameters ---------------------------------------------------------------------------
    def set_param(self, kind: int, index: int, comp: int, value: float) -> None:
        """Set one parameter (mbs_core.h MBS_P_*); apply_params validates and takes them all."""
        if self._L.mbs_sim_set_param(self._s, kind, index, comp, float(value)):
            raise InputError(f"no parameter of kind {kind} for body {index}, component {comp}")

    def get_param(self, kind: int, index: int, comp: int = 0) -> float:
        v = C.c_double()
        if self._L.mbs_sim_get_param(self._s, kind, index, comp, C.addressof(v)):
            raise InputError(f"no parameter of kind {kind} for body {index}, component {comp}")
        return v.value

    def apply_params(self) -> None:
        """Validate every parameter and rebuild the inertias; InputError listing every problem
        (the parameters then stay as they were)."""
        if self._L.mbs_sim_apply_params(self._s, self._err, ERR):
            raise InputError(
                f"model {self.model.source}: parameters rejected: {self._err.value.decode(errors='replace')}"
            )

    # ---- simulation ---------------------------------------------------------------------------
    def set_solver(self, method: str = "rk4", h_max: float = 1e-3, rtol: float = 1e-10, atol: float = 1e-12) -> None:
        code = {"rk4": RK4, "dop853": DOP853}.get(method)
        if code is None:
            raise InputError(f"unknown integrator {method!r}: expected 'rk4' or 'dop853'")
        if self._L.mbs_sim_set_solver(self._s, code, float(h_max), float(rtol), float(atol), self._err, ERR):
            raise InputError(self._err.value.decode(errors="replace"))

    def set_loops(self, baumgarte: bool, projection: bool, alpha: float, beta: float) -> None:
        """Closed loops: Baumgarte terms (alpha, beta) [1/s] in the dynamics, projection after each
        step (as Simulator's loop_stabilisation)."""
        if self._L.mbs_sim_set_loops(self._s, int(bool(baumgarte)), int(bool(projection)), float(alpha), float(beta)):
            raise InputError(f"baumgarte (alpha, beta) must be finite and >= 0 [1/s], got ({alpha}, {beta})")

    def set_dense(self, dense: bool) -> int:
        """dense: the forward dynamics and kinematics without the products that leave out the exact
        zeros of a joint axis along a coordinate axis and of a transform rotating about one (aba.c,
        kinematics.c; the same numbers by construction, and this is how that is checked); False (the
        default): with them. Returns the number of joints whose products then use that structure."""
        n = C.c_int(0)
        if self._L.mbs_sim_set_dense(self._s, int(bool(dense)), C.byref(n)):
            raise InputError("set_dense: the instance is not valid")
        return n.value

    def set_avx(self, avx: bool) -> bool:
        """avx (the default): the hot passes (ABA, joint transforms, kinematics, invariants) run their
        AVX copies where the CPU and OS have AVX; False: their baseline (SSE2) copies. Both do the
        same operations in the same order (the same numbers; this is how that is checked). Returns
        whether the AVX copies now run."""
        on = C.c_int(0)
        if self._L.mbs_sim_set_avx(self._s, int(bool(avx)), C.byref(on)):
            raise InputError("set_avx: the instance is not valid")
        return bool(on.value)

    def loop_lambda(self) -> np.ndarray:
        """The loops' multipliers (rows of loops.py) at the current state and inputs."""
        m = self.tables.sizes["n_rows"]
        p = self._L.mbs_sim_lambda(self._s)
        return np.ctypeslib.as_array(C.cast(p, C.POINTER(D)), (m,)).copy() if m else np.zeros(0)

    @property
    def x(self) -> np.ndarray:
        """The state [q, qd, W_in, W_diss] (a copy)."""
        return self._x.copy()

    @property
    def t(self) -> float:
        return self._L.mbs_sim_time(self._s)

    @t.setter
    def t(self, value: float) -> None:
        self._L.mbs_sim_set_time(self._s, float(value))

    @property
    def x_view(self) -> np.ndarray:
        """The state [q, qd, W_in, W_diss] in the instance's memory (read-only, changes with it)."""
        return self._x_view

    def set_state(self, x, assemble: int = 1) -> None:
        """x (nx,): finite, unit quaternions (InputError otherwise); with loops assembled
        (assemble = 1), checked (0) or taken as given (2), as mbs_sim_set_x."""
        self._load(self._xin, "x", x, self.nx)
        if self._L.mbs_sim_set_x(self._s, self._pxin, int(assemble), self._err, ERR):
            raise InputError(self._err.value.decode(errors="replace"))

    def step_inputs(self, t: float, dt: float) -> int:
        """Set the time t [s] and the inputs ``u_in``, then step(dt), in one call (MBS_ERROR, nothing
        changed, if an input is not finite)."""
        return self._step_inputs(self._s, t, self._puin, dt)

    def outputs(self, bodies: np.ndarray, wheels: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Every output at the current state and inputs ``u_in`` into ``out`` (mbs_sim_outputs: q,
        qd, u, qdd, the 20 engine values, the body records of ``records_at`` for ``bodies`` and
        ``wheels``, then k and x per spring); ``out``: a contiguous float64 array of that size."""
        n = self.n_outputs(bodies.size, wheels.size)
        if out.size != n or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise InputError(f"outputs: out must be a contiguous float64 array of {n}")
        if any(a.dtype != np.int32 or not a.flags.c_contiguous for a in (bodies, wheels)):
            raise InputError("outputs: bodies and wheels must be contiguous int32 arrays of body indices")
        if self._outputs(self._s, self._puin, bodies.size, _ptr(bodies), wheels.size, _ptr(wheels), _ptr(out)):
            raise InputError(self.message)
        return out

    def outputs_call(self, bodies: np.ndarray, wheels: np.ndarray, out: np.ndarray):
        """``outputs(bodies, wheels, out)`` as a function of no arguments, its arguments checked
        once (for a caller that reads every output at every step); InputError when it fails."""
        self.outputs(bodies, wheels, out)  # checks the arguments (and that the call works)
        mod = binding()
        if mod is not None:  # the same C call without ctypes' argument conversion (binding.c)
            fast = mod.bind_outputs(
                (out, bodies, wheels, self),
                _address(self._outputs),
                self._s,
                self._puin,
                bodies.size,
                _ptr(bodies),
                wheels.size,
                _ptr(wheels),
                _ptr(out),
            )

            def outputs() -> np.ndarray:
                got = fast()
                if got is None:
                    raise InputError(self.message)
                return got

            return outputs
        call = partial(
            self._outputs, self._s, self._puin, bodies.size, _ptr(bodies), wheels.size, _ptr(wheels), _ptr(out)
        )

        def outputs() -> np.ndarray:
            if call():
                raise InputError(self.message)
            return out

        outputs.keep = (bodies, wheels, out)  # the arrays whose addresses the call holds
        return outputs

    def n_outputs(self, n_bodies: int, n_wheels: int) -> int:
        """The size of ``outputs`` for n_bodies rigid bodies and n_wheels wheel rotors."""
        springs = self.tables.sizes["n_springs"]
        return self.nq + 2 * self.nv + self.n_u + 20 + 49 * n_bodies + 7 * n_wheels + 24 + 2 * springs

    def set_inputs(self, u) -> None:
        """u (n_u,) held over the following steps."""
        self._load(self._uin[: self.n_u], "u", u, self.n_u)
        if self._L.mbs_sim_set_inputs(self._s, self._puin):
            raise InputError("inputs must be finite")

    @property
    def u(self) -> np.ndarray:
        return self._u.copy()

    def step(self, dt: float) -> int:
        """Advance by dt [s]; MBS_OK, or MBS_DISCARD / MBS_ERROR with ``message`` (state unchanged)."""
        return self._L.mbs_sim_step(self._s, dt)

    @property
    def message(self) -> str:
        return self._L.mbs_sim_message(self._s).decode(errors="replace")

    def stats(self) -> tuple[int, int, float]:
        """(internal steps, rhs evaluations, last internal step [s])."""
        self._L.mbs_sim_stats(self._s, *self._stat_p)
        return self._stat[0].value, self._stat[1].value, self._stat[2].value

    def set_stats(self, n_steps: int, n_rhs: int, h_last: float) -> None:
        self._L.mbs_sim_set_stats(self._s, int(n_steps), int(n_rhs), float(h_last))

    def qdd(self) -> np.ndarray:
        """qdd (nv,) at the current state and inputs (computed once per state)."""
        p = self._L.mbs_sim_qdd(self._s)
        return np.ctypeslib.as_array(C.cast(p, C.POINTER(D)), (self.nv,)).copy() if self.nv else np.zeros(0)

    def stepper(self):
        """The Simulator's per-step calls of this instance: ``step(t, dt)`` (``step_inputs``'s code)
        and ``invariant_values()`` (a new (20,) array: p_sys, P_sys, H_sys, R, Rdot, KE, PE, E = KE + PE,
        W_in, W_diss of the current state, as ``outputs`` writes them), through the binding
        (binding.c), else through ctypes (CtypesStepper: the same numbers)."""
        mod = binding()
        if mod is None:
            return CtypesStepper(self)
        L = self._L
        return mod.bind_stepper(
            self,
            self._s,
            self._puin,
            L.mbs_sim_x(self._s),
            self.nx,
            _address(L.mbs_sim_step_inputs),
            _address(L.mbs_sim_invariants),
        )

    def invariant_view(self) -> np.ndarray:
        """The invariants of the current state (computed once per state) as a read-only (19,) view of
        the instance's mbs_invariants: p_sys, P_sys, H_sys, R, Rdot (3 each), KE, PE, H_scale, E_scale;
        its values are those of this call's state (call again after a step)."""
        p = self._L.mbs_sim_invariants(self._s)  # the same address every time (the instance's)
        if self._inv_view[0] != p:
            view = np.ctypeslib.as_array(C.cast(p, C.POINTER(D)), (C.sizeof(Invariants_C) // 8,))
            view.flags.writeable = False
            self._inv_view = (p, view)
        return self._inv_view[1]

    def relative_poses(self) -> np.ndarray:
        """(N, 7) every body's translation [m] and quaternion (x, y, z, w) relative to its parent
        at the current state (mbs_sim_relative_poses: ``kinematics.RelativePoses`` bit for bit),
        written into one array per instance: its values are those of this call's state."""
        if self._poses is None:
            self._poses = np.zeros((self.N, 7))
            self._poses_call = partial(self._L.mbs_sim_relative_poses, self._s, _ptr(self._poses))
        if self._poses_call():
            raise InputError("relative_poses: the core instance is not valid")
        return self._poses

    def invariants(self) -> Invariants_C:
        """The invariants of the current state (computed once per state)."""
        p = self._L.mbs_sim_invariants(self._s)
        out = Invariants_C()
        C.memmove(C.addressof(out), p, C.sizeof(Invariants_C))
        return out

    def copy_from(self, other: Core) -> None:
        """This instance becomes a copy of ``other`` (same model): state, inputs, parameters."""
        if other.model_hash != self.model_hash or other._mem.nbytes != self._mem.nbytes:
            raise InputError("copy_from: the instances are of different models")
        if self._L.mbs_sim_copy(self._s, other._s):
            raise InputError("copy_from failed")


class CtypesStepper:
    """``Core.stepper()`` where the binding is missing: the same calls through ctypes."""

    def __init__(self, core: Core):
        self.core = core
        self.step = core.step_inputs

    def invariant_values(self) -> np.ndarray:
        v = self.core.invariant_view()
        out = np.empty(20)
        out[:17] = v[:17]
        out[17] = out[15] + out[16]
        out[18:] = self.core.x_view[-2:]
        return out


def bound_methods(calls, owner, names) -> dict:
    """{name: a callable running ``owner.name``'s default case in C, in front of it} for calls =
    Core.calls() (binding.c's ``Method``: the arguments parsed, positional or by keyword, and the
    core function run in one vectorcall; any other case is passed on to the Python method, bound to
    owner); {} without the binding. Each Python method's parameters must be the ones binding.c
    routes (ValueError otherwise)."""
    mod = binding()
    if mod is None or calls is NO_CALLS:
        return {}
    out = {}
    for name in names:
        fallback = getattr(type(owner), name).__get__(owner, type(owner))
        out[name] = mod.method(calls, fallback, name, tuple(inspect.signature(fallback).parameters))
    return out


_MODEL_CORES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_usable: bool | None = None


def model_core(model) -> Core:
    """The Core a Model's own algorithms run on (Model.forward_dynamics etc.): one per model and
    thread, the spanning tree only (loops are the caller's business), built on first use. The
    first thread's core is also kept on the model (``model._native_core``)."""
    hit = model.__dict__.get("_native_core")
    if hit is not None and hit[0] == threading.get_ident():
        return hit[1]
    per_thread = _MODEL_CORES.get(model)
    if per_thread is None:
        per_thread = _MODEL_CORES.setdefault(model, threading.local())
    core = getattr(per_thread, "core", None)
    if core is None:
        core = per_thread.core = Core(model, Tables(model, tree_only=True))
        if hit is None:
            model.__dict__["_native_core"] = (threading.get_ident(), core)
    return core


def usable() -> bool:
    """available(), asked once per process; a warning says why when the core cannot be used."""
    global _usable
    if _usable is not None:
        return _usable
    if _usable is None:
        try:
            lib()
            _usable = True
        except (build.BuildError, OSError) as e:
            import warnings

            warnings.warn(
                f"mbsfmu: the C core cannot be loaded or built ({e}); using the numpy reference (slower)",
                RuntimeWarning,
                stacklevel=3,
            )
            _usable = False
    return _usable


def value_formatter():
    """``format_values`` where the core loads here, else None (the writers then use repr)."""
    return format_values if usable() else None
