"""Campaign statistics against closed forms: the Wilson score interval computed by hand, the
pass rate's counts (failed vs errored), percentiles split by outcome against numpy."""

import math

import numpy as np
import pytest

from mbsfmu.campaign.statistics import pass_rate, pass_rate_text, statistics, wilson_interval


def test_wilson_interval_against_values_worked_by_hand():
    # k = 8 of n = 10, z = 1.96: p = 0.8, z^2 = 3.8416; centre = (0.8 + 0.19208) / 1.38416 = 0.716738;
    # half = 1.96 sqrt(0.016 + 0.0096040) / 1.38416 = 1.96 * 0.1600125 / 1.38416 = 0.226581
    lo, hi = wilson_interval(8, 10, 1.96)
    assert (lo, hi) == pytest.approx((0.716738 - 0.226581, 0.716738 + 0.226581), rel=0, abs=2e-6)
    # k = 0 of n = 10: lo = 0, hi = z^2/n / (1 + z^2/n) = 0.38416 / 1.38416 = 0.277540 (the rule-of-three's
    # cousin; the normal approximation would give the empty interval [0, 0])
    assert wilson_interval(0, 10, 1.96) == pytest.approx((0.0, 0.38416 / 1.38416), rel=0, abs=1e-12)
    # k = n: symmetric to k = 0
    assert wilson_interval(10, 10, 1.96) == pytest.approx((1 - 0.38416 / 1.38416, 1.0), rel=0, abs=1e-12)
    # large n: tends to the normal approximation p -+ z sqrt(p(1-p)/n)
    lo, hi = wilson_interval(50_000, 100_000, 1.96)
    assert (lo, hi) == pytest.approx(
        (0.5 - 1.96 * math.sqrt(0.25 / 1e5), 0.5 + 1.96 * math.sqrt(0.25 / 1e5)), rel=0, abs=1e-6
    )


def test_wilson_interval_covers_at_its_level():
    # the interval's coverage over the binomial distribution itself (exact sum, no sampling): close to 95 %
    from scipy import stats as sps

    n, p = 200, 0.9
    k = np.arange(n + 1)
    inside = np.array([lo <= p <= hi for lo, hi in (wilson_interval(int(i), n) for i in k)])
    coverage = sps.binom.pmf(k, n, p)[inside].sum()
    assert 0.93 <= coverage <= 0.97, coverage


def test_wilson_interval_rejects_bad_counts():
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson_interval(3, 2)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_pass_rate_counts_failed_and_errored_apart():
    rows = [{"run": i, "passed": True, "error": ""} for i in range(7)]
    rows += [{"run": 7, "passed": False, "error": "", "failed_checks": "check e"}]
    rows += [{"run": 8, "passed": False, "error": "Timeout: the run took more than 1 s"}]
    rows += [{"run": 9, "passed": False, "error": "KilledWorker: ..."}]
    r = pass_rate(rows)
    assert (r["n"], r["passed"], r["failed"], r["errored"]) == (10, 7, 1, 2)
    assert (r["lo"], r["hi"]) == wilson_interval(7, 10) and r["rate"] == 0.7
    assert r["confidence"] == pytest.approx(0.95, rel=0, abs=1e-12)
    assert "passed 7 of 10 runs: 70.0 %" in pass_rate_text(r) and "1 failed, 2 errored" in pass_rate_text(r)


def test_percentiles_split_by_outcome_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=500)
    passed = x < 1.5
    rows = [{"run": i, "v": float(v), "passed": bool(ok)} for i, (v, ok) in enumerate(zip(x, passed))]
    by = {e["outcome"]: e for e in statistics(rows, ["v"])}
    for outcome, ref in (("all", x), ("passed", x[passed]), ("failed", x[~passed])):
        e = by[outcome]
        assert e["n"] == ref.size
        got = [e[k] for k in ("p0.135", "p5", "p50", "p95", "p99.865")]
        assert got == pytest.approx(np.percentile(ref, [0.135, 5, 50, 95, 99.865]).tolist(), rel=0, abs=1e-15)
    assert by["passed"]["max"] < 1.5 <= by["failed"]["min"]


def test_three_sigma_percentiles_of_a_large_normal_sample():
    # 0.135 % and 99.865 % are the one-sided 3-sigma tails: 1 - Phi(3) = 0.00134990
    assert 0.5 * math.erfc(3 / math.sqrt(2)) == pytest.approx(0.00135, rel=0, abs=1e-6)
    x = np.random.default_rng(8).normal(2.0, 0.5, size=400_000)
    e = statistics([{"v": float(v), "passed": True} for v in x], ["v"])[0]
    assert (e["p0.135"], e["p99.865"]) == pytest.approx((2.0 - 1.5, 2.0 + 1.5), rel=0, abs=0.02)
