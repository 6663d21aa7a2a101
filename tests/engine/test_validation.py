"""The mass-property check over arrays (validation._mass_clean) passes only bodies the one-by-one
check (_check_mass, which writes every message) passes: near every threshold, for moving and
welded bodies, and with values that are no numbers."""

from __future__ import annotations

import numpy as np

from mbsfmu.engine.spec import validation
from mbsfmu.engine.spec.description import Body, Joint


def _body(k: int, mass, com, inertia) -> Body:
    return Body(name=f"b{k}", parent="world", joint=Joint(f"j{k}", "revolute"), mass=mass, com=com, inertia=inertia)


def _cases(rng) -> list[tuple]:
    """(mass, com, inertia): good ones and ones on either side of each threshold of _check_mass."""
    rtol = validation.INERTIA_RTOL
    out = []
    for _ in range(300):
        m = float(rng.choice([1.0, 0.0, -1e-3, 1e12, np.inf, np.nan, 1e200]))
        com = rng.normal(size=3) * float(rng.choice([1e-3, 1.0, 1e60, 1e160]))
        A = rng.normal(size=(3, 3))
        ev = np.sort(rng.uniform(0.1, 1.0, size=3))
        kind = rng.integers(6)
        if kind == 1:  # PSD edge: smallest moment -x rtol
            ev[0] = -float(rng.choice([0.3, 0.5, 0.9, 1.0, 1.1, 2.0])) * rtol * ev[2]
        elif kind == 2:  # triangle edge: I1 + I2 = I3 (1 + x rtol)
            ev[2] = (ev[0] + ev[1]) * (1 + float(rng.choice([0.3, 0.5, 0.9, 1.1, 2.0])) * rtol)
        Q, _ = np.linalg.qr(A)
        inertia = Q @ np.diag(ev) @ Q.T
        if kind == 3:  # asymmetry near the tolerance
            inertia[0, 1] += float(rng.choice([0.3, 0.6, 1.5, 3.0])) * rtol * np.abs(inertia).max()
        elif kind == 4:
            inertia[1, 2] = np.nan
        out.append((m, tuple(com), tuple(map(tuple, inertia))))
    return out


def test_mass_clean_passes_only_what_check_mass_passes(rng):
    cases = _cases(rng)
    bodies = [_body(k, *c) for k, c in enumerate(cases)]
    for welded in (set(), {b.name for b in bodies[::3]}):
        clean = validation._mass_clean(bodies, welded)
        found = [validation._check_mass(b, ("bodies", k), moving=b.name not in welded) for k, b in enumerate(bodies)]
        assert not any(clean[k] and found[k] for k in range(len(bodies)))
        # it passes the good ones, all but those within half a tolerance of a threshold
        assert clean.sum() >= 0.8 * sum(not f for f in found), (clean.sum(), sum(not f for f in found))
    # the model's check_spec finds the same problems as the one-by-one check
    spec_problems = [p for p in validation.check_spec(_spec(bodies)) if p.path[-1] in ("mass", "com", "inertia")]
    one_by_one = [p for k, b in enumerate(bodies) for p in validation._check_mass(b, ("bodies", k))]
    assert spec_problems == one_by_one


def test_mass_clean_leaves_values_that_are_no_numbers_to_check_mass():
    bodies = [_body(0, 1.0, (0.0, 0.0, 0.0), ((1.0, 0, 0), (0, 1.0, 0), (0, 0, 1.0))), _body(1, "x", (0, 0), 3)]
    assert validation._mass_clean(bodies, set()).tolist() == [False, False]
    assert validation._mass_clean([], set()).tolist() == []


def _spec(bodies):
    from mbsfmu.engine.spec.description import ModelSpec

    return ModelSpec(name="m", bodies=tuple(bodies))


def test_a_mass_property_whose_energy_overflows_is_refused_with_its_field(tmp_path, run_cli):
    """mass: 1e308 passed `info` and gave PE = inf in every row of the run (issue 37): refused now,
    each body's field named, in one round; the bound MASS_MAX itself is taken."""
    (tmp_path / "m.yaml").write_text(
        "version: 1\nbodies:\n"
        "  - {name: a, parent: world, joint: {type: revolute}, mass: 1.0e+308, com: [0, 0, 0.2],\n"
        "     inertia: {Ixx: 1, Iyy: 1, Izz: 1}}\n"
        "  - {name: b, parent: a, joint: {type: revolute}, mass: 1, inertia: {Ixx: 1.0e+200, Iyy: 1.0e+200, Izz: 1}}\n"
        "  - {name: c, parent: b, joint: {type: revolute}, mass: 1.0e+150,\n"
        "     inertia: {Ixx: 1.0e+150, Iyy: 1, Izz: 1.0e+150}}\n"
    )
    result = run_cli("info", tmp_path / "m.yaml")
    assert result.returncode == 2, result.stdout
    assert "2 problem(s)" in result.stderr
    assert f"m.yaml:3: bodies[0].mass: mass 1e+308 kg is beyond {validation.MASS_MAX:g} kg" in result.stderr
    assert "m.yaml:5: bodies[1].inertia: an entry 1e+200 kg m^2 is beyond" in result.stderr
    huge = [
        _body(k, m, (0.0, 0.0, 0.0), ((i, 0, 0), (0, i, 0), (0, 0, i)))
        for k, (m, i) in enumerate([(1e151, 1.0), (1.0, 1e151), (1e150, 1e150)])
    ]
    assert validation._mass_clean(huge, set()).tolist() == [False, False, True]
