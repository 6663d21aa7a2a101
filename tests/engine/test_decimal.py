"""The core's double -> text conversion (decimal.c), which the trajectory and records writers use:
every value reads back to the same double (exact, no tolerance: the files must round-trip),
the text has repr's layout, it is the shortest (equal to repr, which is shortest by
construction) for nearly all values, and the cached powers of ten in the C source are the exact
roundings of 10^k recomputed here with rationals."""

import re
import struct
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from mbsfmu.engine.native import core

pytestmark = pytest.mark.skipif(not core.usable(), reason="the native core does not load here")

SOURCE = Path(core.__file__).with_name("decimal.c")


def _texts(values: np.ndarray) -> list[str]:
    return core.format_values(values, b";").decode("ascii").split(";")


def _digits(text: str) -> str:
    """The significant digits of a decimal text."""
    mantissa = text.lstrip("-").split("e")[0].replace(".", "")
    return mantissa.lstrip("0").rstrip("0") or "0"


def _random_doubles(n: int, seed: int) -> np.ndarray:
    """Doubles of every magnitude: uniform random bit patterns (finite ones), plus the values a
    simulation writes (moderate magnitudes, short decimals, integers)."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
    v = bits.view(np.float64)
    v = v[np.isfinite(v)]
    typical = np.concatenate(
        [
            rng.normal(0.0, 1.0, n // 4) * 10.0 ** rng.integers(-8, 9, n // 4),
            np.round(rng.uniform(-100, 100, n // 4) * 10.0 ** (d := rng.integers(0, 6, n // 4))) / 10.0**d,
            rng.integers(-(10**6), 10**6, n // 8).astype(float),
            np.arange(n // 8) * 1e-3,
        ]
    )
    return np.concatenate([v, typical])


SPECIAL = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.1,
    0.3,
    1e-4,
    1e-5,
    123456789012345.6,
    1e15,
    1e16,
    1e22,
    1e23,
    2.0**-1074,  # the smallest subnormal
    2.2250738585072014e-308,  # the smallest normal
    np.nextafter(2.2250738585072014e-308, 0.0),  # the largest subnormal
    1.7976931348623157e308,  # the largest double
    np.pi,
    -np.e,
    5e-324,
    9007199254740993.0,
    0.30000000000000004,
]


def test_special_values_have_reprs_text():
    for v in SPECIAL:
        (t,) = _texts(np.array([v]))
        assert float(t) == v and (np.signbit(float(t)) == np.signbit(v)), (v, t)
        assert len(_digits(t)) <= 17, (v, t)
    assert _texts(np.array([np.inf, -np.inf, np.nan])) == ["inf", "-inf", "nan"]
    assert _texts(np.array([1e22, 0.1, 0.3])) == ["1e+22", "0.1", "0.3"]
    assert _texts(np.array([1.0, 1e-05, 0.0001, 1e16, 1234.5])) == ["1.0", "1e-05", "0.0001", "1e+16", "1234.5"]


def test_every_value_reads_back_exactly_and_nearly_all_are_reprs_text():
    v = _random_doubles(200_000, seed=7)
    texts = _texts(v)
    assert len(texts) == v.size
    back = np.array([float(t) for t in texts])
    # exact: same bits (signed zeros included)
    assert np.array_equal(back.view(np.uint64), v.view(np.uint64))
    reprs = [repr(float(x)) for x in v]
    same = sum(t == r for t, r in zip(texts, reprs))
    # Grisu2 is shortest and closest in ~99.9 % of doubles (Loitsch 2010, Sec. 5); where it is
    # not, another decimal of at most 17 significant digits that reads back the same (checked above)
    assert same / v.size >= 0.995, same / v.size
    assert max(len(_digits(t)) for t in texts) <= 17


def test_the_cached_powers_of_ten_are_exact_roundings():
    """c_k = 10^k as f 2^e with 2^63 <= f < 2^64, f = 10^k / 2^e rounded to nearest."""
    rows = re.findall(r"\{0x([0-9A-F]{16})ULL, (-?\d+), (-?\d+)\}", SOURCE.read_text())
    assert len(rows) == (340 + 348) // 8 + 1
    ks = [int(k) for _, _, k in rows]
    assert ks == list(range(-348, 341, 8))
    for f_hex, e_text, k_text in rows:
        k, e = int(k_text), int(e_text)
        x = Fraction(10) ** k / Fraction(2) ** e
        f = round(x)  # exact rational rounding (ties never occur: 10^k / 2^e is not a half-integer here)
        assert 2**63 <= f < 2**64, k
        assert f == int(f_hex, 16), k


def test_separator_and_empty_input():
    assert core.format_values(np.array([]), b",") == b""
    assert core.format_values(np.array([1.5, -2.0]), b" ") == b"1.5 -2.0"
    # any float dtype and layout is converted to contiguous float64 first
    assert core.format_values(np.array([[1.0, 2.0]], dtype=np.float32)[:, ::-1].ravel()) == b"2.0,1.0"


def test_bit_patterns_near_powers_of_two_round_trip():
    """The boundary case of the rounding interval (m- closer than m+) at every exponent."""
    v = np.array([struct.unpack("<d", struct.pack("<Q", e << 52))[0] for e in range(1, 2047)])
    v = np.concatenate([v, np.nextafter(v, np.inf), np.nextafter(v, 0.0)])
    back = np.array([float(t) for t in _texts(v)])
    assert np.array_equal(back, v)
