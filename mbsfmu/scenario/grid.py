"""The output time grid of a run: rows at t_k = k dt and at the duration T, and the limits on a
run's length (rows, integrator steps, a fixed grid for sampled controllers and co-simulation).
Used by the parser (spec.py) to check a scenario's times and by the runners (run.py, cosim)."""

from __future__ import annotations

import math

from ..errors import MbsError

MAX_ROWS = 10**8  # output rows (duration / dt): a CSV of more rows is beyond any use
MAX_INTERNAL_STEPS = 10**12  # integrator steps (duration / h_max): beyond any run's wall time


def output_grid(T: float, dt: float) -> tuple[int, bool]:
    """(n, even): a run of T [s] sampled every dt [s] has rows at t_k = k dt for k < n and t_n = T;
    ``even`` if dt divides T (to 1e-9 relative), else the last interval is shortened to
    T - (n - 1) dt. MbsError for a T or dt that is not a positive finite time or more than
    MAX_ROWS rows."""
    if not (isinstance(T, (int, float)) and math.isfinite(T) and T > 0):
        raise MbsError(f"duration must be a positive, finite time [s], got {T!r}")
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise MbsError(f"dt must be a positive, finite time [s], got {dt!r}")
    ratio = T / dt
    if not ratio <= MAX_ROWS:
        raise MbsError(
            f"duration {T:g} s / dt {dt:g} s = {ratio:.3g} output rows; at most {MAX_ROWS:.0e} "
            f"(raise dt or shorten the run)"
        )
    n = round(ratio)
    if n >= 1 and abs(ratio - n) <= 1e-9 * ratio:
        return n, True
    return math.ceil(ratio), False


def sample_times(T: float, dt: float) -> list[float]:
    """The output times t_0 = 0, dt, 2 dt, ..., T of a run (``output_grid``)."""
    n, _even = output_grid(T, dt)
    return [k * dt for k in range(n)] + [float(T)]


def check_run_length(T: float, dt: float, integrator: dict, controller: bool = False, cosim: bool = False) -> None:
    """MbsError if a run of T [s] cannot be made as asked: bad or too many rows (``output_grid``),
    more than MAX_INTERNAL_STEPS integrator steps of h_max, or a sampled controller or
    co-simulation (fixed grid k dt) whose dt does not divide T."""
    _n, even = output_grid(T, dt)
    h_max = integrator.get("h_max", 0.0)
    if h_max > 0 and not T / h_max <= MAX_INTERNAL_STEPS:
        raise MbsError(
            f"duration {T:g} s / integrator.h_max {h_max:g} s = {T / h_max:.3g} integrator steps; "
            f"at most {MAX_INTERNAL_STEPS:.0e} (raise h_max or shorten the run)"
        )
    if not even and (controller or cosim):
        what = "the sampled controller" if controller else "the co-simulation"
        raise MbsError(
            f"dt = {dt:g} s does not divide the duration {T:g} s: {what} runs on the fixed grid "
            f"t_k = k dt; choose a duration that is a multiple of dt"
        )
