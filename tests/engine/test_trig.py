"""The core's own sin and cos (trig.h), which make the FMU's linux64 and win64 binaries agree bit
for bit (tests/fmu/test_native.py's wine test), measured against mpmath at 50 significant digits:
within 1 ulp of the exact value (in fact < 0.75 ulp; the C libraries promise about the same) on
joint-angle ranges, near multiples of pi/2 (the argument reduction's cancellation), for tiny
angles, and the C library beyond |x| = 823549 rad and for non-finite x."""

from __future__ import annotations

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.native import core as native

mpmath = pytest.importorskip("mpmath")  # the test extra's oracle (also SymPy's dependency)

pytestmark = pytest.mark.skipif(not native.available(), reason="C core not built (zig missing)")

X_MAX = 823549.0  # trig.h TRIG_X_MAX: |n| < 2^19 quarter turns


def ulp_errors(x: np.ndarray, got: np.ndarray, f) -> np.ndarray:
    """|got - f(x)| in units in the last place of the exact f(x) (mpmath, 50 digits)."""
    out = np.empty(x.size)
    with mpmath.workdps(50):
        for j, (xj, gj) in enumerate(zip(x.tolist(), got.tolist())):
            exact = f(mpmath.mpf(xj))
            ulp = np.spacing(abs(float(exact))) if exact != 0 else np.spacing(0.0)
            out[j] = float(abs(mpmath.mpf(gj) - exact)) / ulp
    return out


def near_quarter_turns(n_max: int) -> np.ndarray:
    """the doubles nearest to k pi/2 (rounded from 50 digits) and their neighbours, 0 < |k| <= n_max"""
    with mpmath.workdps(50):
        k = [*range(1, 3000), *np.unique(np.geomspace(3000, n_max, 300).astype(np.int64)).tolist()]
        base = np.array([float(mpmath.mpf(kk) * mpmath.pi / 2) for kk in k])
    return np.concatenate([base, -base, np.nextafter(base, np.inf), np.nextafter(base, 0.0)])


SAMPLES = {
    "[-pi/4, pi/4]": lambda rng: rng.uniform(-np.pi / 4, np.pi / 4, 4000),
    "[-10, 10]": lambda rng: rng.uniform(-10.0, 10.0, 4000),
    "[-1e3, 1e3]": lambda rng: rng.uniform(-1e3, 1e3, 3000),
    "up to 823549": lambda rng: rng.uniform(-X_MAX, X_MAX, 3000),
    "near k pi/2": lambda rng: near_quarter_turns(524287),
    "tiny": lambda rng: np.concatenate([10.0 ** -rng.uniform(4, 300, 1000), [5e-324, 1e-310, 7.4e-9, 7.5e-9]]),
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_sin_and_cos_within_one_ulp(name):
    x = SAMPLES[name](np.random.default_rng(7))
    s, c = native.sincos(x)
    err_s, err_c = ulp_errors(x, s, mpmath.sin), ulp_errors(x, c, mpmath.cos)
    assert err_s.max() <= 1.0, (name, x[err_s.argmax()], err_s.max())
    assert err_c.max() <= 1.0, (name, x[err_c.argmax()], err_c.max())


def test_exact_values_signs_and_quadrant_symmetry():
    s, c = native.sincos(np.array([0.0, -0.0, 1e-20, -1e-20]))
    assert s.tolist() == [0.0, -0.0, 1e-20, -1e-20] and c.tolist() == [1.0] * 4
    assert np.signbit(s[1]) and not np.signbit(s[0])
    x = np.random.default_rng(3).uniform(-100.0, 100.0, 5000)
    s, c = native.sincos(x)
    sn, cn = native.sincos(-x)
    np.testing.assert_array_equal(sn, -s)  # odd and even, exactly (one reduction, mirrored)
    np.testing.assert_array_equal(cn, c)
    assert np.all(np.abs(s) <= 1.0) and np.all(np.abs(c) <= 1.0)


def test_beyond_the_range_and_non_finite_use_the_c_library():
    x = np.array([X_MAX * 1.0000001, -1e7, 1e300, np.inf, -np.inf, np.nan])
    s, c = native.sincos(x)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(s[:3], np.sin(x[:3]), rtol=0, atol=2e-16)
        np.testing.assert_allclose(c[:3], np.cos(x[:3]), rtol=0, atol=2e-16)
    assert np.isnan(s[3:]).all() and np.isnan(c[3:]).all()


def test_the_angle_sum_from_a_step_s_start_is_within_one_ulp_of_one():
    """RK4's later stages take a joint angle's sin and cos from the step's start a0 by the angle-sum
    formulas (trig.h mbs_sincos_sum, |d| <= 1/16): within 2^-52 absolute (1 ulp of 1; the entries of a
    rotation matrix are at most 1) of the exact sin and cos of a0 + d, on joint-angle ranges, near
    multiples of pi/2, at d = +-1/16 and for tiny d; |d| > 1/16 is refused."""
    rng = np.random.default_rng(7)
    a0 = np.concatenate(
        [rng.uniform(-10.0, 10.0, 3000), np.pi / 2 * rng.integers(-6, 7, 500) + rng.normal(0, 1e-3, 500)]
    )
    d = rng.uniform(-1 / 16, 1 / 16, a0.size)
    d[:50], d[50:100], d[100:150] = 1 / 16, -1 / 16, rng.uniform(-1e-9, 1e-9, 50)
    s, c = native.sincos_sum(a0, d)
    err = np.empty((2, a0.size))
    with mpmath.workdps(50):
        for j, (aj, dj) in enumerate(zip(a0.tolist(), d.tolist())):
            x = mpmath.mpf(aj) + mpmath.mpf(dj)
            err[0, j] = float(abs(mpmath.mpf(float(s[j])) - mpmath.sin(x)))
            err[1, j] = float(abs(mpmath.mpf(float(c[j])) - mpmath.cos(x)))
    assert err.max() <= 2.0**-52, err.max() / 2.0**-52
    with pytest.raises(mbsfmu.InputError, match="1/16"):
        native.sincos_sum(np.zeros(2), np.array([0.0, 0.07]))
