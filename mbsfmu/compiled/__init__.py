"""Compiled (numba) kernels: ABA, RNEA, CRBA, forward kinematics, the equations of motion and a
whole fixed-step RK4 run, on a model packed once into flat buffers.

The Python modules (``mbsfmu/dynamics``, ``kinematics``, ``simulator``) stay the readable
reference and the test oracle; these kernels follow them line for line (same algorithms, same
exact bias force, same force elements and state layout) and agree to round-off.

    from mbsfmu.compiled import compile_model
    cm = compile_model(model)                 # once per model (memoised): packs the arrays
    qdd = cm.aba(q, qd, tau)                  # RBDA Table 7.1, as dynamics.aba.aba(tree, ...)
    tau = cm.rnea(q, qd, qdd)                 # RBDA Table 5.1
    M = cm.crba(q)                            # RBDA Table 6.2
    x = cm.simulate(x0, h=1e-3, n=10_000, u=u)   # n RK4 steps in one call, x = [q, qd, W_in, W_diss]

Each call goes straight to its kernel with the model's preallocated work buffers (``out=``
avoids even the result allocation). Arguments of the wrong dtype or layout are converted once
and the call retried; sizes and finiteness are checked inside the kernel and reported as
InputError. The first use of a kernel compiles it (several seconds) or loads it from numba's
cache (``__pycache__`` beside this package, or NUMBA_CACHE_DIR).
"""
from __future__ import annotations

import importlib.util
import weakref

import numpy as np

from ..errors import InputError
from ..spatial import Array

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_FEXT = np.zeros((0, 6))      # f_ext not given (an empty array: numba types None slower)


def available() -> bool:
    """True when numba can be imported (the compiled backend can run)."""
    return importlib.util.find_spec("numba") is not None


def compile_model(model) -> CompiledModel:
    """The CompiledModel of a Model, built on first request and then reused."""
    cm = _CACHE.get(model)
    if cm is None:
        cm = _CACHE[model] = CompiledModel(model)
    return cm


class CompiledModel:
    """A Model packed into one flat buffer with its work arrays (the Data), and the compiled
    algorithms on it. Every call recomputes what it reads, so all users of a model (several
    Simulators, FMU instances) share one CompiledModel; the kernels hold the GIL, so threads
    take turns. Results are returned in new arrays, or written into ``out``."""

    def __init__(self, model):
        from .kernels import entry
        from .layout import Packed
        self._model = weakref.ref(model)     # weak: _CACHE's value must not keep its key alive
        self.packed = Packed(model)
        self._buf = self.packed.buf
        s = self.packed.sizes
        self.N, self.nq, self.nv, self.nx, self.n_u = s["N"], s["nq"], s["nv"], s["nx"], s["n_u"]
        self.input_names = self.packed.input_names
        self._entry = entry
        self._aba = self._rnea = self._crba = self._fk = self._rhs = self._run = None

    @property
    def model(self):
        """The Model this was compiled from."""
        return self._model()

    # ---- dynamics -----------------------------------------------------------------------
    def aba(self, q: Array, qd: Array, tau: Array, f_ext: Array | None = None, out: Array | None = None) -> Array:
        """qdd (nv,) = M^-1 (tau - C qd - G + J^T f_ext) by ABA, as ``dynamics.aba.aba(tree, ...)``:
        tau (nv,) joint forces [N m or N] (no springs/dampers added); f_ext (N+1, 6) wrench per
        body [N m; N], body axes about the body origin, row 0 ignored; out (nv,) to write into."""
        return self._recursion("aba", q, qd, "tau", tau, _NO_FEXT if f_ext is None else f_ext, False, out)

    def forward_dynamics(self, q: Array, qd: Array, tau: Array, f_ext=None, out: Array | None = None) -> Array:
        """qdd (nv,) under actuator forces tau, joint springs/dampers, gravity and f_ext, as
        ``Model.forward_dynamics`` (f_ext (N, 6) or {body: (6,)})."""
        fx = _NO_FEXT if f_ext is None else self.model._fext(f_ext)
        return self._recursion("aba", q, qd, "tau", tau, fx, True, out)

    def rnea(self, q: Array, qd: Array, qdd: Array, f_ext: Array | None = None, out: Array | None = None) -> Array:
        """tau (nv,) = M qdd + C qd + G - J^T f_ext by RNEA, as ``dynamics.rnea.rnea(tree, ...)``
        (f_ext (N+1, 6), row 0 ignored)."""
        return self._recursion("rnea", q, qd, "qdd", qdd, _NO_FEXT if f_ext is None else f_ext, False, out)

    def inverse_dynamics(self, q: Array, qd: Array, qdd: Array, f_ext=None, out: Array | None = None) -> Array:
        """tau (nv,) actuator forces producing qdd with springs/dampers and f_ext acting, as
        ``Model.inverse_dynamics`` (f_ext (N, 6) or {body: (6,)})."""
        fx = _NO_FEXT if f_ext is None else self.model._fext(f_ext)
        return self._recursion("rnea", q, qd, "qdd", qdd, fx, True, out)

    def _recursion(self, name: str, q: Array, qd: Array, b_name: str, b: Array, fx: Array, passive: bool,
                   out: Array | None) -> Array:
        """The ABA or RNEA kernel on (q, qd, b = tau or qdd, f_ext), with the model's springs and
        dampers when ``passive``; the (nv,) result in ``out`` (new if None)."""
        res = np.empty(self.nv) if out is None else out
        k = getattr(self, "_" + name) or self._load(name)
        try:
            st = k(self._buf, q, qd, b, fx, passive, res)
        except TypeError:
            q, qd, b, fx, res = self._convert(("q", q), ("qd", qd), (b_name, b), ("f_ext", fx), ("out", res))
            st = k(self._buf, q, qd, b, fx, passive, res)
        if st:
            self._raise(st, ("q", q), ("qd", qd), (b_name, b), ("f_ext", fx), ("passive", None), ("out", res))
        return res

    def crba(self, q: Array, out: Array | None = None) -> Array:
        """M(q): (nv, nv) joint-space inertia by CRBA, as ``dynamics.crba.crba(tree, q)``."""
        M = np.empty((self.nv, self.nv)) if out is None else out
        k = self._crba or self._load("crba")
        try:
            st = k(self._buf, q, M)
        except TypeError:
            q, M = self._convert(("q", q), ("out", M))
            st = k(self._buf, q, M)
        if st:
            self._raise(st, ("q", q), ("out", M))
        return M

    mass_matrix = crba

    # ---- kinematics ---------------------------------------------------------------------
    def forward_kinematics(self, q: Array, qd: Array | None = None, qdd: Array | None = None):
        """kinematics.Kinematics (copies): poses, spatial velocities, accelerations of every body,
        as ``kinematics.forward_kinematics(tree, q, qd, qdd)``."""
        from ..kinematics import Kinematics
        empty = np.zeros(0)
        qd_, qdd_ = (empty if qd is None else qd), (empty if qdd is None or qd is None else qdd)
        k = self._fk or self._load("fk")
        try:
            st = k(self._buf, q, qd_, qdd_)
        except TypeError:
            q, qd_, qdd_ = self._convert(("q", q), ("qd", qd_), ("qdd", qdd_))
            st = k(self._buf, q, qd_, qdd_)
        if st:
            self._raise(st, ("q", q), ("qd", qd_), ("qdd", qdd_))
        from .layout import W_A, W_E, W_P, W_R, W_V, W_XR
        W6, W33, W3 = self.packed["W6"], self.packed["W33"], self.packed["W3"]
        v = W6[W_V].copy() if qd is not None else np.zeros((self.N + 1, 6))
        a = W6[W_A].copy() if qd is not None and qdd is not None else np.zeros((self.N + 1, 6))
        E, r = W33[W_E], W3[W_XR]
        Xup = np.zeros((self.N + 1, 6, 6))
        Xup[:, :3, :3] = E
        Xup[:, 3:, 3:] = E
        rx = np.zeros((self.N + 1, 3, 3))
        rx[:, 0, 1], rx[:, 0, 2], rx[:, 1, 2] = -r[:, 2], r[:, 1], -r[:, 0]
        rx[:, 1, 0], rx[:, 2, 0], rx[:, 2, 1] = r[:, 2], -r[:, 1], r[:, 0]
        Xup[:, 3:, :3] = -E @ rx
        Xup[0] = np.eye(6)
        return Kinematics(R=W33[W_R].copy(), p=W3[W_P].copy(), v=v, a=a, Xup=Xup)

    # ---- equations of motion and RK4 runs -----------------------------------------------
    def rhs(self, x: Array, u: Array, out: Array | None = None) -> Array:
        """dx/dt (nx,) of the Simulator's state x = [q, qd, W_in, W_diss] with inputs u (n_u,)."""
        xdot = np.empty(self.nx) if out is None else out
        k = self._rhs or self._load("rhs")
        try:
            st = k(self._buf, x, u, xdot)
        except TypeError:
            x, u, xdot = self._convert(("x", x), ("u", u), ("out", xdot))
            st = k(self._buf, x, u, xdot)
        if st:
            self._raise(st, ("x", x), ("u", u), ("out", xdot))
        return xdot

    def run(self, x: Array, h: float, n: int, U: Array, X_out: Array | None = None, stride: int = 1) -> int:
        """n RK4 steps of h [s] from x (nx,) in place, quaternions renormalised after each step;
        U (1, n_u) held or (n, n_u) per step; X_out (rows, nx) records x every ``stride`` steps
        (row 0: the start). Returns n, or the index of the step that made the state non-finite
        (x then holds that state). x, U and X_out must be C-contiguous float64."""
        k = self._run or self._load("run")
        Xo = self._no_rec if X_out is None else X_out
        st = k(self._buf, x, U, float(h), int(n), Xo, int(stride))
        if st < 0:
            self._raise(-st, ("x", x), ("U", U), ("h", h), ("n", n), ("X_out", Xo))
        return st

    _no_rec = np.zeros((0, 0))

    def simulate(self, x0: Array, h: float, n: int, u: Array | None = None, record_every: int = 0):
        """Run n RK4 steps of h [s] from x0 (nx,) (not modified). u: None (zero inputs), (n_u,)
        held, or (n, n_u) one row per step. Returns x (nx,) at the end, or with record_every > 0
        (x, X) with X ((n // record_every) + 1, nx) the states every record_every steps.
        SimulationError if the state becomes non-finite."""
        if not (isinstance(n, (int, np.integer)) and n >= 0):
            raise InputError(f"n must be a number of steps >= 0, got {n!r}")
        if not (np.isfinite(h) and h > 0):
            raise InputError(f"h must be a positive, finite step [s], got {h!r}")
        x = np.array(self._convert(("x0", x0))[0], dtype=float)
        U = np.zeros((1, self.n_u)) if u is None else np.ascontiguousarray(u, dtype=float)
        if U.ndim == 1:
            U = U.reshape(1, -1)
        if U.ndim != 2 or U.shape[1] != self.n_u or U.shape[0] not in (1, n):
            raise InputError(f"u has shape {np.shape(u)}: expected ({self.n_u},) held or ({n}, {self.n_u}) per step "
                             f"(inputs: {', '.join(self.input_names) or 'none'})")
        X = np.empty((n // record_every + 1, self.nx)) if record_every else None
        done = self.run(x, h, n, U, X, record_every or 1)
        if done < n:
            from ..simulator import SimulationError
            bad = np.flatnonzero(~np.isfinite(x))
            raise SimulationError(f"non-finite state after step {done + 1} (t = {(done + 1) * h:.9g} s) in state "
                                  f"entries {bad[:5].tolist()}")
        return (x, X) if record_every else x

    # ---- helpers ------------------------------------------------------------------------
    def _load(self, name: str):
        disp = self._entry(name)
        setattr(self, "_" + name, disp)
        return disp

    def _convert(self, *named):
        """The arguments as C-contiguous float64 arrays (outputs must already be), with the
        dimensions the kernels take; InputError naming the first that is not."""
        out = []
        for name, x in named:
            ndim = 2 if name in ("f_ext", "U", "X_out") else 1
            if name == "out":
                if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.flags.c_contiguous):
                    raise InputError(f"out must be a C-contiguous float64 array, got {type(x).__name__} "
                                     f"{getattr(x, 'dtype', '')} {getattr(x, 'shape', '')}")
                out.append(x)
                continue
            try:
                arr = np.ascontiguousarray(x, dtype=np.float64)
            except (TypeError, ValueError) as e:
                raise InputError(f"{name} must be an array of numbers ({e})") from None
            if arr.ndim != ndim:
                raise InputError(f"{name} has shape {arr.shape}: expected a {ndim}-D array")
            out.append(arr)
        return out

    def _raise(self, status: int, *named):
        """InputError for a kernel status (kernels.BAD_SIZE / NOT_FINITE + argument index)."""
        from .kernels import BAD_SIZE, NOT_FINITE
        k = status - NOT_FINITE if status >= NOT_FINITE else status - BAD_SIZE
        name, x = named[k]
        sizes = {"q": self.nq, "qd": self.nv, "qdd": self.nv, "tau": self.nv, "x": self.nx, "u": self.n_u}
        if name in sizes:
            self.model._vec(name, x, sizes[name])        # raises the model's own message
        if name == "f_ext":
            raise InputError(f"f_ext has shape {np.shape(x)}, expected ({self.N + 1}, 6) (row 0 the world) "
                             "with finite entries")
        raise InputError(f"{name} has shape {np.shape(x)} or non-finite entries; model {self.model.source}: "
                         f"nq = {self.nq}, nv = {self.nv}, nx = {self.nx}, {self.n_u} inputs")
