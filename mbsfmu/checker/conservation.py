"""The conservation checks (what each bounds, on which scale, by default how tightly) and the
conservation report of a trajectory, with its summary table; a check that could not compute its
quantity fails, naming the cell (``culprit``)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import brief
from ..trajectory import Trajectory, read_run
from .quantities import EnergyTerms, MomentumTerms, energy_terms, eq1_KE, eq2_PE, eq9_p_sys, eq10_H_sys, momentum_terms
from .records import (
    ENERGY_PROCEDURES,
    MOMENTUM_BODY,
    MOMENTUM_PROCEDURES,
    Array,
    CheckError,
    as_trajectory,
    check_procedure,
    discover,
    field_columns,
    record,
    records_of,
    require_columns,
)


# ---- conservation report -------------------------------------------------------------------
@dataclass(frozen=True)
class CheckSpec:
    """One check: what it measures, its unit, the relative scale, the kind a bare number bounds."""

    quantity: str
    unit: str
    scale: str
    number_bounds: str  # "abs" or "rel": what ``name=1e-6`` bounds
    default: tuple[str, float]  # (kind, bound) when none is given


CHECKS: dict[str, CheckSpec] = {
    "p_sys_zero": CheckSpec(
        "|p_sys| (MBS Momentum Testing Eq. 9, must be 0)",
        "N s",
        "max over rows of sum_j m_j max(|rhatdot_j|, |v_j|), v_j the recorded velocity "
        "rhatdot_j was made from (rbardot_j, rdot_j; + |Rdot| for procedures 1, 3)",
        "abs",
        ("rel", 1e-9),
    ),
    "P_sys_constant": CheckSpec(
        "|P_sys - P_sys(t0)|, P_sys = M Rdot (g = 0 only)",
        "N s",
        "max over rows of sum_j m_j |rbardot_j|",
        "abs",
        ("rel", 1e-6),
    ),
    "H_sys_constant": CheckSpec(
        "|H_sys - H_sys(t0)| (MBS Momentum Testing Eq. 10, about the system CM)",
        "N m s",
        "max over rows of sum_j (|I_j omega_j| + m_j |rhat_j| |rhatdot_j| + the round-off "
        "terms m_j (|r_j| - |rhat_j|) |rhatdot_j| + m_j |rhat_j| (|v_j| - |rhatdot_j|) of the "
        "recorded r_j, v_j) + sum_k |h_k|",
        "abs",
        ("rel", 1e-6),
    ),
    "R_constant": CheckSpec(
        "max(|R - R(t0)|, T |Rdot|) (g = 0: Rdot = 0, R constant)",
        "m",
        "max over rows of the bodies' CoM radius of gyration sqrt(sum_j m_j |rhat_j|^2 / M)",
        "abs",
        ("abs", 1e-6),
    ),
    "R_parabolic": CheckSpec(
        "max(|R - fit|, T |Rdot - Rdot(t0) - g (t - t0)|), fit R0 + V0 t + g t^2 / 2",
        "m",
        "max over rows of the bodies' CoM radius of gyration sqrt(sum_j m_j |rhat_j|^2 / M)",
        "abs",
        ("abs", 1e-6),
    ),
    "energy_constant": CheckSpec(
        "|E - E(t0)|, E = KE + PE (MBS Energy Testing Eqs. 1, 2)",
        "J",
        "max over rows of KE + sum_s k_s x_s^2 / 2 + sum_i m_i |g| |rbar_i| (the magnitudes of the "
        "terms E sums: the springs' and bodies' gravity PE, not only the motion energy)",
        "abs",
        ("rel", 1e-6),
    ),
    "energy_balance": CheckSpec(
        "|B - B(t0)|, B = KE + PE - engine.W_in - engine.W_diss",
        "J",
        "max over rows of KE + sum_s k_s x_s^2 / 2 + sum_i m_i |g| |rbar_i| + |W_in| + |W_diss| "
        "(the magnitudes of the terms B sums)",
        "abs",
        ("rel", 1e-6),
    ),
    "KE_constant": CheckSpec(
        "|KE - KE(t0)| (MBS Energy Testing Eq. 1)", "J", "max over rows of KE", "abs", ("rel", 1e-6)
    ),
    "engine_agreement": CheckSpec(
        "checker vs engine.* columns, worst quantity",
        "(per quantity)",
        "per quantity, see 'quantities'",
        "rel",
        ("rel", 1e-9),
    ),
}
ENGINE_QUANTITIES = ("p_sys", "P_sys", "H_sys", "R", "Rdot", "KE", "PE", "E")


def parse_bound(name: str, value) -> tuple[str, float]:
    """(kind, bound) from a number (what the check's bare number bounds: abs, or rel for
    engine_agreement), a string "1e-6", "abs:1e-6" or "rel:1e-9", or None (the default)."""
    if name not in CHECKS:
        raise CheckError(f"unknown check {name!r}: expected one of {', '.join(CHECKS)}")
    spec = CHECKS[name]
    if value is None:
        return spec.default
    kind, text = spec.number_bounds, value
    if isinstance(value, str):
        text = value.strip()
        if ":" in text:
            kind, text = (s.strip() for s in text.split(":", 1))
            if kind not in ("abs", "rel"):
                raise CheckError(f"check {name}: bound kind {kind!r} must be 'abs' or 'rel' (e.g. rel:1e-9)")
    try:
        bound = float(text)
    except (TypeError, ValueError):
        raise CheckError(
            f"check {name}: bound {brief(value)} is not a number (e.g. {name}=1e-6 or {name}=rel:1e-9)"
        ) from None
    if not (math.isfinite(bound) and bound >= 0):
        raise CheckError(f"check {name}: bound {brief(value)} must be a finite number >= 0")
    return kind, bound


def drift_slope(t: Array, d: Array) -> Array:
    """Least-squares slope of d(t) = a + b t: b (d's trailing shape) [unit of d per s]; 0 for one row."""
    tc = t - t.mean()
    den = float(tc @ tc)
    if den == 0.0:
        return np.zeros(d.shape[1:])
    return np.tensordot(tc, d - d.mean(axis=0), axes=(0, 0)) / den


def norm(d: Array) -> Array:
    return np.linalg.norm(d, axis=-1) if d.ndim > 1 else np.abs(d)


def relative(abs_: float, scale: float) -> float:
    if scale > 0:
        return abs_ / scale
    return 0.0 if abs_ == 0 else math.inf


def drift(t: Array, d: Array) -> float:
    b = drift_slope(t, d)
    return float(np.linalg.norm(b)) if b.ndim else float(b)


class _Context:
    """Lazy momentum and energy of one trajectory by one procedure, with the report's scales."""

    def __init__(self, traj: Trajectory, procedure: int, energy_procedure: int):
        self.traj, self.N, self.N_E = traj, procedure, energy_procedure
        self.t = traj.time
        self.span = float(self.t[-1] - self.t[0])

    @cached_property
    def mt(self) -> MomentumTerms:
        return momentum_terms(self.traj, self.N, with_R=False)

    @cached_property
    def mR(self) -> tuple[Array, Array]:
        t = momentum_terms(self.traj, self.N, with_R=True)
        return t.R, t.Rdot

    @cached_property
    def p_sys(self) -> Array:
        return eq9_p_sys(self.mt.m, self.mt.rhatdot)

    @cached_property
    def H_sys(self) -> Array:
        t = self.mt
        return eq10_H_sys(t.m, t.I, t.omega, t.rhat, t.rhatdot, t.h)

    @cached_property
    def et(self) -> EnergyTerms:
        return energy_terms(self.traj, self.N_E)

    @cached_property
    def KE(self) -> Array:
        t = self.et
        return eq1_KE(t.m, t.I, t.omega, t.rbardot, t.h, t.Iw)

    @cached_property
    def PE(self) -> Array:
        t = self.et
        return eq2_PE(t.k, t.x, t.m, t.g, t.rbar)

    @cached_property
    def M(self) -> Array:
        return self.mt.m.sum(axis=1)

    @property
    def g(self) -> Array:
        require_columns(self.traj, field_columns("", "g"), "the gravity vector")
        return record(self.traj, "", "g")

    # scales (see CHECKS): the size S of the terms a check sums, so that its float64 round-off is
    # ~ N eps S for N terms (the bound of a conserved quantity is relative to S)
    @cached_property
    def recorded(self) -> tuple[Array, Array]:
        """(|r|, |v|) (T, N): the largest position and velocity magnitudes each body's rhat, rhatdot
        went through: the recorded r, rdot of the procedure (rbar for 2, from joint 1 for 4), and
        for the CM-centric procedures 1 and 3 |rhat| + |R|, |rhatdot| + |Rdot| when the R, Rdot
        columns exist (the records were made by subtracting them)."""
        body = MOMENTUM_BODY[self.N]
        r = norm(records_of(self.traj, discover(self.traj).bodies, body[2], (3,)))
        v = norm(records_of(self.traj, discover(self.traj).bodies, body[3], (3,)))
        if self.N in (1, 3) and not self.traj.missing(field_columns("", "R") + field_columns("", "Rdot")):
            r = r + norm(record(self.traj, "", "R"))[:, None]
            v = v + norm(record(self.traj, "", "Rdot"))[:, None]
        return r, v

    @cached_property
    def p_scale(self) -> float:
        """max_t sum_j m_j max(|rhatdot_j|, |v_j|): p_sys sums the bodies' momenta, each with the
        round-off of the velocity it was made from (in gravity |rbardot| >> |rhatdot|)."""
        v = np.maximum(norm(self.mt.rhatdot), self.recorded[1])
        return float(np.max(np.einsum("tn,tn->t", self.mt.m, v)))

    @cached_property
    def P_scale(self) -> float:
        rbardot = self.mt.rhatdot + self.mR[1][:, None]
        return float(np.max(np.einsum("tn,tn->t", self.mt.m, norm(rbardot))))

    @cached_property
    def H_scale(self) -> float:
        """max_t sum_j (|I_j omega_j| + m_j (|rhat_j| |rhatdot_j| + |r_j| |rhatdot_j| + |rhat_j| |v_j|))
        + sum_k |h_k|: the terms of Eq. 10 and the round-off carried into rhat x rhatdot by the
        subtractions rhat = r - R, rhatdot = v - Rdot (r, v: ``recorded``)."""
        t = self.mt
        r, v = self.recorded
        a, b = norm(t.rhat), norm(t.rhatdot)
        terms = (
            norm(np.einsum("tnij,tnj->tni", t.I, t.omega)).sum(axis=1)
            + np.einsum("tn,tn->t", t.m, a * b + np.maximum(r - a, 0) * b + a * np.maximum(v - b, 0))
            + norm(t.h).sum(axis=1)
        )
        return float(np.max(terms))

    @cached_property
    def L_scale(self) -> float:
        t = self.mt
        return float(np.max(np.sqrt(np.einsum("tn,tni,tni->t", t.m, t.rhat, t.rhat) / self.M)))

    @cached_property
    def E_terms(self) -> Array:
        """(T,) KE + sum_s |k_s| x_s^2 / 2 + sum_i m_i |g| |rbar_i| [J]: the magnitudes of the terms
        E = KE + PE sums (MBS Energy Testing Eqs. 1, 2; KE's terms are >= 0; |g . rbar_i| <=
        |g| |rbar_i|), so E's float64 round-off is ~ N eps E_terms however small the motion energy
        is (near equilibrium KE and PE - PE(t0) vanish while each spring and gravity term stays)."""
        t = self.et
        spring = 0.5 * np.einsum("ts,ts,ts->t", np.abs(t.k), t.x, t.x)
        gravity = np.einsum("tn,t,tn->t", t.m, norm(t.g), norm(t.rbar))
        return self.KE + spring + gravity

    @cached_property
    def E_scale(self) -> float:
        return float(np.max(self.E_terms))

    def engine(self, name: str) -> Array | None:
        cols = (
            [f"engine.{name}"]
            if name in ("KE", "PE", "E", "W_in", "W_diss")
            else [f"engine.{name}[{c}]" for c in (1, 2, 3)]
        )
        present = [c for c in cols if c in self.traj]
        if not present:
            return None
        require_columns(self.traj, cols, f"engine.{name}")
        return self.traj[cols[0]] if len(cols) == 1 else self.traj.stack(cols)


def _entry(ctx: _Context, name: str, d: Array, scale: float, **extra) -> dict:
    """max_abs, max_rel, drift_per_s of a deviation d (T,) or (T, 3) from its target."""
    series = norm(d)
    max_abs = float(np.max(series))
    return {
        "series_abs": series,
        "quantity": CHECKS[name].quantity,
        "unit": CHECKS[name].unit,
        "max_abs": max_abs,
        "scale": scale,
        "scale_is": CHECKS[name].scale,
        "max_rel": relative(max_abs, scale),
        "drift_per_s": drift(ctx.t, d),
        **extra,
    }


def _gravity_note(ctx: _Context, name: str) -> dict:
    if ctx.traj.missing(field_columns("", "g")):
        return {}
    g = ctx.g
    if np.any(g != 0):
        return {"note": f"g = {g[0].tolist()} m/s^2 is not zero: {name} holds only without external force"}
    return {}


def _check_p_sys_zero(ctx: _Context) -> dict:
    return _entry(ctx, "p_sys_zero", ctx.p_sys, ctx.p_scale)


def _check_P_sys_constant(ctx: _Context) -> dict:
    P = ctx.M[:, None] * ctx.mR[1]
    return _entry(ctx, "P_sys_constant", P - P[0], ctx.P_scale, **_gravity_note(ctx, "P_sys_constant"))


def _check_H_sys_constant(ctx: _Context) -> dict:
    return _entry(ctx, "H_sys_constant", ctx.H_sys - ctx.H_sys[0], ctx.H_scale)


def _check_R_constant(ctx: _Context) -> dict:
    R, Rdot = ctx.mR
    dR = R - R[0]
    R_abs, Rdot_abs = float(np.max(norm(dR))), float(np.max(norm(Rdot)))
    e = _entry(
        ctx,
        "R_constant",
        dR,
        ctx.L_scale,
        R_max_abs=R_abs,
        Rdot_max_abs=Rdot_abs,
        span_s=ctx.span,
        **_gravity_note(ctx, "R_constant"),
    )
    e["max_abs"] = max(R_abs, ctx.span * Rdot_abs)
    e["max_rel"] = relative(e["max_abs"], ctx.L_scale)
    e["series_abs"] = np.maximum(norm(dR), ctx.span * norm(Rdot))
    return e


def _check_R_parabolic(ctx: _Context) -> dict:
    R, Rdot = ctx.mR
    g = ctx.g
    if np.any(g != g[0]):
        k = int(np.flatnonzero(np.any(g != g[0], axis=1))[0])
        raise CheckError(f"{ctx.traj.source}: R_parabolic needs constant gravity, g changes at row {k + 1}")
    tau = ctx.t - ctx.t[0]
    A = np.column_stack((np.ones_like(tau), tau))
    coef = np.linalg.lstsq(A, R - 0.5 * np.outer(tau * tau, g[0]), rcond=None)[0]  # rows R0, V0
    eR = R - A @ coef - 0.5 * np.outer(tau * tau, g[0])
    eRdot = Rdot - Rdot[0] - np.outer(tau, g[0])
    R_abs, Rdot_abs = float(np.max(norm(eR))), float(np.max(norm(eRdot)))
    e = _entry(
        ctx,
        "R_parabolic",
        eRdot,
        ctx.L_scale,
        R_max_abs=R_abs,
        Rdot_max_abs=Rdot_abs,
        span_s=ctx.span,
        R0=coef[0].tolist(),
        V0=coef[1].tolist(),
        V0_minus_Rdot0=(coef[1] - Rdot[0]).tolist(),
        g=g[0].tolist(),
    )
    e["max_abs"] = max(R_abs, ctx.span * Rdot_abs)
    e["max_rel"] = relative(e["max_abs"], ctx.L_scale)
    e["series_abs"] = np.maximum(norm(eR), ctx.span * norm(eRdot))
    e["drift_is"] = "slope of Rdot - Rdot(t0) - g (t - t0): excess acceleration [m/s^2]"
    if np.all(g[0] == 0):
        e["note"] = "g = 0: the parabola is a straight line"
    return e


def _check_energy_constant(ctx: _Context) -> dict:
    E = ctx.KE + ctx.PE
    return _entry(ctx, "energy_constant", E - E[0], ctx.E_scale)


def _check_energy_balance(ctx: _Context) -> dict:
    require_columns(ctx.traj, ["engine.W_in", "engine.W_diss"], "energy_balance (work of inputs and dampers)")
    W_in, W_diss = ctx.traj["engine.W_in"], ctx.traj["engine.W_diss"]
    B = ctx.KE + ctx.PE - W_in - W_diss
    scale = max(ctx.E_scale, float(np.max(ctx.E_terms + np.abs(W_in) + np.abs(W_diss))))
    return _entry(ctx, "energy_balance", B - B[0], scale)


def _check_KE_constant(ctx: _Context) -> dict:
    return _entry(ctx, "KE_constant", ctx.KE - ctx.KE[0], float(np.max(ctx.KE)))


def _check_engine_agreement(ctx: _Context) -> dict:
    engine = {q: ctx.engine(q) for q in ENGINE_QUANTITIES}
    if all(v is None for v in engine.values()):
        raise CheckError(
            f"{ctx.traj.source}: engine_agreement needs engine columns, e.g. engine.p_sys[1..3], "
            f"engine.H_sys[1..3], engine.KE, engine.PE; none found"
        )
    quantities, series_rel = {}, {}
    for q, ref in engine.items():
        if ref is None:
            continue
        if q == "p_sys":  # p_sys ~ 0 by definition: compare on the scale of the momenta it sums
            mine, scale = ctx.p_sys, max(ctx.p_scale, ctx.P_scale)
        elif q == "P_sys":
            mine, scale = ctx.M[:, None] * ctx.mR[1], ctx.P_scale
        elif q == "H_sys":
            mine, scale = ctx.H_sys, ctx.H_scale
        elif q == "R":
            mine = ctx.mR[0]
            scale = float(max(np.max(norm(mine)), ctx.L_scale))
        elif q == "Rdot":
            mine, scale = ctx.mR[1], ctx.P_scale / float(np.min(ctx.M))
        elif q == "KE":
            mine, scale = ctx.KE, float(np.max(np.abs(ctx.KE)))
        elif q == "PE":
            mine, scale = ctx.PE, float(max(np.max(np.abs(ctx.PE)), ctx.E_scale))
        else:
            mine = ctx.KE + ctx.PE
            scale = float(max(np.max(np.abs(mine)), ctx.E_scale))
        d = mine - ref
        a = float(np.max(norm(d)))
        quantities[q] = {"max_abs": a, "scale": scale, "max_rel": relative(a, scale), "drift_per_s": drift(ctx.t, d)}
        series_rel[q] = norm(d) / scale if scale > 0 else np.where(norm(d) == 0, 0.0, np.inf)
    worst = max(quantities, key=lambda q: quantities[q]["max_rel"])
    w = quantities[worst]
    return {
        "series_rel": np.max(list(series_rel.values()), axis=0),
        "quantity": CHECKS["engine_agreement"].quantity,
        "unit": "(per quantity)",
        "worst": worst,
        "max_abs": w["max_abs"],
        "scale": w["scale"],
        "scale_is": "p_sys: max(sum_j m_j |rhatdot_j|, sum_j m_j |rbardot_j|); P_sys: sum_j m_j |rbardot_j|; "
        "H_sys: as H_sys_constant; R: max(|R|, radius of gyration); Rdot: P_sys scale / M; KE: max KE; "
        "PE, E: max(|value|, energy scale); maxima over rows",
        "max_rel": w["max_rel"],
        "drift_per_s": w["drift_per_s"],
        "quantities": quantities,
    }


CHECK_FUNCTIONS = {
    "p_sys_zero": _check_p_sys_zero,
    "P_sys_constant": _check_P_sys_constant,
    "H_sys_constant": _check_H_sys_constant,
    "R_constant": _check_R_constant,
    "R_parabolic": _check_R_parabolic,
    "energy_constant": _check_energy_constant,
    "energy_balance": _check_energy_balance,
    "KE_constant": _check_KE_constant,
    "engine_agreement": _check_engine_agreement,
}


def default_checks(traj) -> dict[str, None]:
    """engine_agreement (when the file has engine.* columns) and p_sys_zero, default bounds."""
    traj = as_trajectory(traj)
    has_engine = any(c.startswith("engine.") and c not in ("engine.W_in", "engine.W_diss") for c in traj.names)
    return {**({"engine_agreement": None} if has_engine else {}), "p_sys_zero": None}


def _not_computed(e: dict) -> str | None:
    """What a check could not compute, or None: its deviation, scale and drift must be finite
    numbers (an input cell that is NaN or inf, or so large that the products overflow float64,
    makes them NaN or inf; a check must then fail, never pass on what it could not compute).
    max_rel may be inf only where the scale is 0 (a real failure, not a missing number)."""
    parts = {"": e, **{f"{q} ": d for q, d in e.get("quantities", {}).items()}}
    for label, d in parts.items():
        for key in ("max_abs", "scale", "drift_per_s"):
            if key in d and not math.isfinite(d[key]):
                return f"{label or ''}{key} is {d[key]} (not computable)"
    return None


def culprit(traj: Trajectory) -> str:
    """The cell that makes the checker's quantities non-finite: the first NaN or inf cell (row by
    row) of the columns the checker reads, else the cell of largest magnitude (its products
    overflow), named by row, time and column."""
    names = [c for c in traj.names if c != "time" and not c.startswith(("q.", "qd.", "u."))]
    X = traj.stack(names)
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        k, j = bad[0]
        what = "is not a finite number"
    else:
        k, j = np.unravel_index(int(np.argmax(np.abs(X))), X.shape)
        what = "is too large: the sums and products of the records overflow float64"
    return f"row {k + 1} (t = {float(traj.time[k]):.6g} s), column {names[j]} = {float(X[k, j])!r} {what}"


def _json_safe(x):
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def conservation_report(
    traj,
    checks: Mapping[str, object] | Iterable[str] | None = None,
    procedure: int = 1,
    energy_procedure: int | None = None,
    series: dict | None = None,
) -> dict:
    """Run the named checks on a trajectory by MBS Momentum/Energy Testing Procedure ``procedure`` (momentum and
    energy; ``energy_procedure`` if given for the energy: the documents number the notations
    differently, e.g. inertial absolute records are momentum Procedure 2 but energy Procedure 1).

    checks: {name: bound} (bound a number, "abs:x", "rel:x" or None for the default; see
    ``parse_bound``), or an iterable of names (default bounds), or None (``default_checks``).
    Each entry: max_abs (max over rows of the deviation from the target: 0 for p_sys, the initial
    value for the constants, the fitted parabola for R), max_rel = max_abs / scale (scale_is says
    which), drift_per_s (least-squares slope of the deviation; the norm for vectors, signed for
    scalars), bound, bound_on ("max_abs" or "max_rel"), passed. Non-finite numbers become None
    (JSON null). Raises CheckError on an unknown check or procedure or missing columns.

    series: a dict to fill with {check name: (T,) the per-row value compared against the bound
    (the deviation's norm, divided by the scale when the bound is relative)}, for plots."""
    traj = as_trajectory(traj)
    N = check_procedure(procedure)
    N_E = N if energy_procedure is None else check_procedure(energy_procedure)
    if checks is None:
        checks = default_checks(traj)
    elif not isinstance(checks, Mapping):
        checks = {name: None for name in checks}
    bounds = {name: parse_bound(name, value) for name, value in checks.items()}
    if not bounds:
        raise CheckError("no checks given: expected at least one of " + ", ".join(CHECKS))
    sysm = discover(traj)
    ctx = _Context(traj, N, N_E)
    results = {}
    for name, (kind, bound) in bounds.items():
        with np.errstate(all="ignore"):  # overflow and NaN are found below and reported, never warned
            e = CHECK_FUNCTIONS[name](ctx)
        why = _not_computed(e)
        if why:
            e = {
                "quantity": CHECKS[name].quantity,
                "unit": CHECKS[name].unit,
                "max_abs": None,
                "scale": None,
                "max_rel": None,
                "drift_per_s": None,
                "not_computable": f"{why}: {culprit(traj)}",
            }
        value = e["max_abs"] if kind == "abs" else e["max_rel"]
        e.update(bound=bound, bound_on=f"max_{kind}", passed=bool(value is not None and value <= bound))
        per_row = e.pop("series_rel", None)
        per_row_abs = e.pop("series_abs", None)
        if series is not None:
            scale = e["scale"]
            if per_row_abs is None:  # engine_agreement: the worst relative difference per row
                series[name] = per_row if kind == "rel" else None
            else:
                series[name] = (
                    per_row_abs
                    if kind == "abs"
                    else (per_row_abs / scale if scale > 0 else np.where(per_row_abs == 0, 0.0, np.inf))
                )
        results[name] = e
    t = traj.time
    g = ctx.g if all(c in traj for c in field_columns("", "g")) else None
    report = {
        "file": traj.source,
        "procedure": N,
        "procedure_is": MOMENTUM_PROCEDURES[N],
        "energy_procedure": N_E,
        "energy_procedure_is": ENERGY_PROCEDURES[N_E],
        "rows": traj.n_rows,
        "t0": float(t[0]),
        "t1": float(t[-1]),
        "bodies": list(sysm.bodies),
        "wheels": list(sysm.wheels),
        "springs": list(sysm.springs),
        "g": None if g is None else g[0].tolist(),
        "checks": results,
        "passed": all(e["passed"] for e in results.values()),
    }
    if traj.notes:  # e.g. read_run: which rows of a stopped run's two files were checked
        report["notes"] = list(traj.notes)
    return _json_safe(report)


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3e}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def summary_table(report: dict, verdict: str = "overall") -> str:
    """The report as a fixed-width text table, one line per check, and the verdict of these
    checks (``verdict`` names it: a scenario's run calls it "conservation checks", since its
    references and final values are judged on lines of their own)."""
    r = report
    head = (
        f"{r['file']}: momentum procedure {r['procedure']} ({r['procedure_is']}), energy procedure "
        f"{r['energy_procedure']} ({r['energy_procedure_is']}); {r['rows']} rows, "
        f"t = {r['t0']:.6g} .. {r['t1']:.6g} s; {_count(len(r['bodies']), 'body', 'bodies')}"
        f"{' and ' + _count(len(r['wheels']), 'reaction wheel', 'reaction wheels') if r['wheels'] else ''}, "
        f"{_count(len(r['springs']), 'spring', 'springs')}; g = {r['g']}"
    )
    lines = [
        head,
        *(f"note: {note}" for note in r.get("notes", ())),
        f"{'check':<18} {'max_abs':>10} {'unit':<8} {'max_rel':>10} {'drift/s':>10}  {'bound':<18} result",
    ]
    for name, e in r["checks"].items():
        unit = "" if e["unit"].startswith("(") else e["unit"]
        worst = f" (worst: {e['worst']})" if "worst" in e else ""
        lines.append(
            f"{name:<18} {_fmt(e['max_abs']):>10} {unit:<8} {_fmt(e['max_rel']):>10} "
            f"{_fmt(e['drift_per_s']):>10}  {e['bound_on'][4:] + ' <= ' + format(e['bound'], '.3g'):<18} "
            f"{'PASS' if e['passed'] else 'FAIL'}{worst}"
        )
        for q, d in e.get("quantities", {}).items():
            lines.append(
                f"  {q:<16} {_fmt(d['max_abs']):>10} {'':<8} {_fmt(d['max_rel']):>10} {_fmt(d['drift_per_s']):>10}"
            )
        if "note" in e:
            lines.append(f"  note: {e['note']}")
        if "not_computable" in e:
            lines.append(f"  not computable: {e['not_computable']}")
    n_fail = sum(not e["passed"] for e in r["checks"].values())
    lines.append(f"{verdict}: {'FAIL' if n_fail else 'PASS'} ({len(r['checks'])} checks, {n_fail} failed)")
    return "\n".join(lines)


def run_check(
    path: str | os.PathLike,
    procedure: int = 1,
    checks: Mapping[str, object] | Iterable[str] | None = None,
    energy_procedure: int | None = None,
) -> tuple[dict, bool]:
    """Read a run folder or a trajectory file (``trajectory.read_run``: a run's trajectory.csv is
    joined with its records.csv) and run ``conservation_report``: (report, all checks passed)."""
    check_procedure(procedure)
    if energy_procedure is not None:
        check_procedure(energy_procedure)
    report = conservation_report(read_run(path), checks, procedure, energy_procedure)
    return report, report["passed"]
