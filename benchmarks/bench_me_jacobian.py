"""Benchmark (not a test): what the Model Exchange FMU's exact Jacobian buys an implicit solver on
a stiff model. The native FMU of tests/data/stiff_chain.yaml (an 8-link spatial chain with stiff
joint spring-dampers, k = 2000 N m/rad, d = 2 N m s/rad, and a point spring-damper at the tip) is
integrated over --stop seconds by scipy.integrate.solve_ivp ("BDF" and "Radau"), driving the FMU
through fmpy's low-level FMU2Model: f = fmi2GetDerivatives, and either

- jac = the FMU's Jacobian, assembled from fmi2GetDirectionalDerivative (one call per state, unit
  seed, every derivative as unknown: state_jacobian.c), or
- no jac: scipy's own finite differences of f (scipy.integrate._ivp.common.num_jac).

Reported per solver and tolerance: scipy's nfev (right-hand sides of the steps and Newton
iterations only), the FMU's fmi2GetDerivatives calls in all (f calls: nfev plus scipy's difference
quotients, nx per finite-difference Jacobian), Jacobian evaluations (njev), LU factorisations (nlu),
the median wall time of --repeat runs (with and without interleaved, so that both see the same
machine load) and their ratio, and the accuracy: the largest error in q [rad] at 101 output points against a reference
from scipy's explicit DOP853 at rtol = atol = 1e-12 through the same FMU (no Jacobian involved).
The machine's load average is printed with the table.

    python benchmarks/bench_me_jacobian.py [--stop 2.0] [--repeat 5] [--rtol 1e-6 1e-9]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODEL = ROOT / "tests" / "data" / "stiff_chain.yaml"


class StateRefused(RuntimeError):
    """fmi2SetContinuousStates refused the solver's state (e.g. not finite)."""


class MeFmu:
    """The ME FMU in continuous-time mode, as f(t, x) and J(t, x) for solve_ivp."""

    def __init__(self, fmu: Path, folder: Path):
        from fmpy import read_model_description
        from fmpy.fmi2 import FMU2Model

        with zipfile.ZipFile(fmu) as z:
            z.extractall(folder)
        md = read_model_description(str(fmu))
        svs = md.modelVariables
        self.nx = md.numberOfContinuousStates
        self.der_vr = [d.variable.valueReference for d in md.derivatives]
        self.x_vr = [d.variable.derivative.valueReference for d in md.derivatives]
        self.fmu = FMU2Model(guid=md.guid, unzipDirectory=str(folder), modelIdentifier=md.modelExchange.modelIdentifier)
        self.fmu.instantiate()
        self.fmu.setupExperiment(startTime=0.0)
        self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()
        self.fmu.newDiscreteStates()
        self.fmu.enterContinuousTimeMode()
        del svs
        n = self.nx
        self._x, self._dx = (ctypes.c_double * n)(), (ctypes.c_double * n)()
        self._unknown = (ctypes.c_uint * n)(*self.der_vr)
        self._known = [(ctypes.c_uint * 1)(vr) for vr in self.x_vr]
        self._one = (ctypes.c_double * 1)(1.0)
        self._col = (ctypes.c_double * n)()
        lib = self.fmu.dll
        self._set = lib.fmi2SetContinuousStates
        self._get = lib.fmi2GetDerivatives
        self._dd = lib.fmi2GetDirectionalDerivative
        self._time = lib.fmi2SetTime
        self._c = self.fmu.component
        self.n_f = self.n_jac = 0

    def x0(self) -> np.ndarray:
        self.fmu.getContinuousStates(self._x, self.nx)
        return np.array(self._x[:])

    def _state(self, t: float, x: np.ndarray) -> None:
        self._time(self._c, ctypes.c_double(t))
        self._x[:] = x.tolist()
        if self._set(self._c, self._x, ctypes.c_size_t(self.nx)) != 0:
            bad = [k for k in range(self.nx) if not np.isfinite(x[k])]
            raise StateRefused(f"fmi2SetContinuousStates refused x at t = {t:.4g} s (non-finite entries {bad})")

    def f(self, t: float, x: np.ndarray) -> np.ndarray:
        self.n_f += 1
        self._state(t, x)
        assert self._get(self._c, self._dx, ctypes.c_size_t(self.nx)) == 0
        return np.array(self._dx[:])

    def jac(self, t: float, x: np.ndarray) -> np.ndarray:
        self.n_jac += 1
        self._state(t, x)
        J = np.empty((self.nx, self.nx))
        for j, known in enumerate(self._known):
            st = self._dd(
                self._c, self._unknown, ctypes.c_size_t(self.nx), known, ctypes.c_size_t(1), self._one, self._col
            )
            assert st == 0
            J[:, j] = self._col[:]
        return J


def solve(me: MeFmu, method: str, stop: float, rtol: float, atol: float, exact: bool, t_eval):
    """(solve_ivp's result or None, wall time [s], f calls, the failure's reason or None)"""
    from scipy.integrate import solve_ivp

    me.n_f = me.n_jac = 0
    t0 = time.perf_counter()
    kw = {"jac": me.jac} if exact else {}
    try:
        r = solve_ivp(me.f, (0.0, stop), me.x0_, method=method, rtol=rtol, atol=atol, t_eval=t_eval, **kw)
    except StateRefused as e:
        return None, time.perf_counter() - t0, me.n_f, str(e)
    wall = time.perf_counter() - t0
    return r, wall, me.n_f, None if r.success else r.message


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rtol", type=float, nargs="+", default=[1e-6, 1e-9])
    ap.add_argument("--methods", nargs="+", default=["BDF", "Radau"])
    a = ap.parse_args(argv)
    from scipy.integrate import solve_ivp

    from mbsfmu.fmu.native import build_native_fmu

    with tempfile.TemporaryDirectory(prefix="bench_me_jacobian_") as tmp:
        tmp = Path(tmp)
        fmu = build_native_fmu(MODEL, tmp / "stiff_chain.fmu", platforms=("linux64",), progress=None)
        me = MeFmu(fmu, tmp / "x")
        me.x0_ = me.x0()
        nq = (me.nx - 2) // 2
        A = me.jac(0.0, me.x0_)
        lam = np.linalg.eigvals(A[: me.nx - 2, : me.nx - 2])
        t_eval = np.linspace(0.0, a.stop, 101)
        ref = solve_ivp(me.f, (0.0, a.stop), me.x0_, method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t_eval)
        assert ref.success
        print(
            f"model {MODEL.name}: nx = {me.nx}, eigenvalues of df/dx at x0: "
            f"max |lambda| = {np.abs(lam).max():.3g} 1/s, "
            f"slowest |lambda| = {np.abs(lam).min():.3g} 1/s"
        )
        print(f"reference: DOP853 rtol = atol = 1e-12, {ref.nfev} evaluations; t = 0..{a.stop} s, 101 output points")
        t_jac, t_fd = [], []
        for _ in range(20):  # one Jacobian each way at x0: the FMU's nx calls, nx + 1 difference quotients
            t0 = time.perf_counter()
            me.jac(0.0, me.x0_ + 1e-9)  # a new state: the FMU computes the Jacobian afresh
            t_jac.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            f0 = me.f(0.0, me.x0_)
            for j in range(me.nx):
                me.f(0.0, me.x0_ + 1e-6 * np.eye(me.nx)[j]) - f0
            t_fd.append(time.perf_counter() - t0)
        print(
            f"one Jacobian at x0 (median of 20): FMU {1e6 * statistics.median(t_jac):.0f} us "
            f"({me.nx} fmi2GetDirectionalDerivative calls), forward differences "
            f"{1e6 * statistics.median(t_fd):.0f} us ({me.nx + 1} fmi2GetDerivatives calls)"
        )
        print(f"load average {os.getloadavg()[0]:.2f} (1 min); median of {a.repeat} interleaved runs")
        print()
        print("| solver | rtol | Jacobian | nfev | f calls | njev | nlu | wall [s] | ratio | max error q [rad] |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for method in a.methods:
            for rtol in a.rtol:
                atol = rtol * 1e-2
                walls = {True: [], False: []}
                runs = {}
                for _ in range(a.repeat):
                    for exact in (True, False):
                        r, wall, n_f, failed = solve(me, method, a.stop, rtol, atol, exact, t_eval)
                        walls[exact].append(wall)
                        runs[exact] = (r, n_f, failed)
                med = {k: statistics.median(v) for k, v in walls.items()}
                for exact in (True, False):
                    r, n_f, failed = runs[exact]
                    name = "FMU (directional derivatives)" if exact else "scipy finite differences"
                    if failed:
                        print(
                            f"| {method} | {rtol:g} | {name} | failed after {n_f} f calls, {med[exact]:.3f} s: "
                            f"{failed} |"
                        )
                        continue
                    err = float(np.abs(r.y[:nq] - ref.y[:nq]).max())
                    ratio = f"{med[exact] / med[True]:.2f}"
                    print(
                        f"| {method} | {rtol:g} | {name} | {r.nfev} | {n_f} | {r.njev} | {r.nlu} | {med[exact]:.3f} | "
                        f"{ratio} | {err:.2e} |"
                    )
        me.fmu.terminate()
        me.fmu.freeInstance()


if __name__ == "__main__":
    main()
