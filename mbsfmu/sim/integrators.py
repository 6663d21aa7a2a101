"""Time integration of x' = f(x): fixed-step classical RK4 (deterministic, for co-simulation and
HIL) and adaptive DOP853 (Hairer, Norsett & Wanner, via scipy) for accuracy: the numpy reference
of the C core's integrate.c, which implements the same methods (DOP853 as solve_ivp does it)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..engine.spatial import Array

Rhs = Callable[[Array], Array]


def rk4_step(f: Rhs, x: Array, h: float) -> Array:
    """One classical Runge-Kutta step of size h [s] (Hairer et al., Table II.1.2)."""
    k1 = f(x)
    k2 = f(x + 0.5 * h * k1)
    k3 = f(x + 0.5 * h * k2)
    k4 = f(x + h * k3)
    return x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


class IntegrationError(RuntimeError):
    """The adaptive integrator could not reach the end of the step."""


def dop853(
    f: Rhs, x: Array, dt: float, rtol: float, atol: float, h_max: float, first_step: float | None
) -> tuple[Array, int, float]:
    """Advance by dt [s] with DOP853; returns (x, number of f evaluations, last step size)."""
    # imported on first use: scipy.integrate costs ~0.2 s of start-up that other paths do not need
    from scipy.integrate import solve_ivp

    sol = solve_ivp(
        lambda _t, y: f(y),
        (0.0, dt),
        x,
        method="DOP853",
        rtol=rtol,
        atol=atol,
        max_step=h_max if h_max > 0 else np.inf,
        first_step=min(first_step, dt) if first_step else None,
    )
    if sol.status != 0:
        raise IntegrationError(sol.message)
    t = sol.t
    return sol.y[:, -1].copy(), int(sol.nfev), float(t[-1] - t[-2]) if len(t) > 1 else dt
