"""Closed loops at an operating point: closed on the assembly branch of the model's initial state,
followed from it (mbsfmu/engine/dynamics/branches.py), checked against the four-bar's closed form;
the end of a branch refused with where and why; Newton from given guesses keeps their winding.

The four-bar (scenarios/models/fourbar.yaml): ground d = 0.7, crank a = 0.2, coupler b = 0.6,
rocker c = 0.5 m. Grashof: s + l = 0.2 + 0.7 = 0.9 <= p + q = 0.6 + 0.5 = 1.1 with the shortest link
(the crank) next to the ground: a crank-rocker. Its crank turns fully on each of the two assembly
branches and the branches never meet (the coupler and rocker are never collinear), so with q1
independent every crank angle closes on the file's branch. Driven by the rocker instead (q3
independent) the branch ends where crank and coupler are collinear: |O_A D| = b - a or b + a with
D the rocker tip, |O_A D|^2 = d^2 + c^2 + 2 d c cos q3, i.e. cos q3 = ((b -+ a)^2 - d^2 - c^2) / (2 d c):
q3 in [1.71414, 2.54735] rad on the upper branch.
"""

import json

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.dynamics.branches import BranchEndError
from mbsfmu.linear.statespace import linearize
from tests.support.paths import MODELS

FOURBAR = MODELS / "fourbar.yaml"
D, A, B, C = 0.7, 0.2, 0.6, 0.5  # [m] ground, crank, coupler, rocker (the file's header)
# [rad] the closed form and the engine's closure agree to the loop tolerance (|Phi| <= 1e-14 x 1.7 m)
# over lever arms >= 0.2 m and Phi_v's conditioning away from turning points: ~1e-12; 1e-10 with margin
ANGLE_ATOL = 1e-10


def closed_form(q1: float, sigma: float) -> tuple[float, float]:
    """(q2, q3) in (-pi, pi] closing the four-bar at crank angle q1 [rad]: the coupler's far end D
    on the circle of radius b about the crank tip P = a (cos q1, sin q1) and of radius c about
    O_B = (d, 0) (the law of cosines); sigma = +1 or -1 picks the intersection (the branch)."""
    P = A * np.array([np.cos(q1), np.sin(q1)])
    e = np.array([D, 0.0]) - P
    r = np.hypot(*e)
    phi = np.arctan2(e[1], e[0]) + sigma * np.arccos((B * B + r * r - C * C) / (2.0 * B * r))
    tip = P + B * np.array([np.cos(phi), np.sin(phi)])
    q3 = np.arctan2(tip[1], tip[0] - D)
    return float(np.angle(np.exp(1j * (phi - q1)))), float(q3)


def on_branch(q1_from: float, q1_to: float, sigma: float) -> tuple[float, float]:
    """(q2, q3) at q1_to continued from q1_from along the closed-form branch sigma: the closed
    form on a fine grid, unwrapped (angles continuous, no 2 pi jumps)."""
    grid = np.linspace(q1_from, q1_to, 2001)  # steps <= 3.2e-3 rad: angle changes << pi
    q23 = np.unwrap(np.array([closed_form(x, sigma) for x in grid]), axis=0)
    return float(q23[-1, 0]), float(q23[-1, 1])


@pytest.fixture(scope="module")
def fourbar():
    return mbsfmu.load_model(FOURBAR)


@pytest.fixture(scope="module")
def sigma(fourbar):
    """The file's branch: the closed-form intersection its assembled initial state lies on."""
    q, _ = fourbar.initial_state()
    found = [s for s in (1.0, -1.0) if np.allclose(closed_form(q[0], s), q[1:], rtol=0, atol=ANGLE_ATOL)]
    assert len(found) == 1, (q, closed_form(q[0], 1.0), closed_form(q[0], -1.0))
    return found[0]


@pytest.mark.parametrize("q1", [1.0, 2.0, 3.14159, -3.0, 0.3 + 2 * np.pi])
def test_operating_point_stays_on_the_initial_branch(run_cli, tmp_path, fourbar, sigma, q1):
    """`--at q.q1=X` closes the loop on the file's branch with angles continuous from the initial
    state (the defect: q1 = 1 closed on the mirror branch wound by -2 pi; 2.0 and 3.14159 refused)."""
    out = tmp_path / "x.json"
    r = run_cli("linearize", FOURBAR, "--at", f"q.q1={q1!r}", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "loops closed on the assembly branch of the initial state, followed from it (q.q1 = 0.3)" in r.stdout
    q0 = np.array(json.loads(out.read_text())["q0"], dtype=float)
    q_init = fourbar.initial_state()[0]
    np.testing.assert_allclose(q0[1:], on_branch(q_init[0], q1, sigma), rtol=0, atol=ANGLE_ATOL)


def test_eigenvalues_equal_those_at_the_closed_form_point(fourbar, sigma):
    """The repro: q1 = 1.0 on the file's branch, reached by continuation and by Newton from the
    closed-form point, gives the same A (the file's branch: eigenvalues 6.20 and -19.48 1/s, not
    the mirror branch's -3.56 and 11.65)."""
    q_init = fourbar.initial_state()[0]
    lin = linearize(fourbar, [1.0, *q_init[1:]])
    ref = linearize(fourbar, [1.0, *on_branch(q_init[0], 1.0, sigma)], assembly="guess")
    np.testing.assert_allclose(lin.q0, ref.q0, rtol=0, atol=ANGLE_ATOL)
    # A's entries O(100) 1/s^2 from the same point to ~1e-12 rad: ~1e-9 relative with margin
    np.testing.assert_allclose(lin.A, ref.A, rtol=1e-9, atol=1e-9)
    ev = np.sort(lin.eigenvalues().real)
    np.testing.assert_allclose(ev, [-19.48, 6.20], rtol=0, atol=5e-3)  # the values the defect reports


def test_equilibrium_search_stays_on_the_initial_branch(fourbar, sigma):
    """--equilibrium moves the crank by Newton steps of up to a quarter turn: the dependent
    coordinates follow the branch along each (main closed the loop on the mirror branch, wound)."""
    lin = linearize(fourbar, [1.0, *fourbar.initial_state()[0][1:]], equilibrium=True)
    assert lin.equilibrium and np.max(np.abs(lin.qdd0)) <= 1e-9
    q1, q2, q3 = lin.q0
    assert abs(q2 - q3) < 2 * np.pi  # no winding between them
    np.testing.assert_allclose(
        np.angle(np.exp(1j * np.array([q2, q3]))), closed_form(q1, sigma), rtol=0, atol=ANGLE_ATOL
    )
    q2_ref, q3_ref = on_branch(fourbar.initial_state()[0][0], q1, sigma)
    np.testing.assert_allclose([q2, q3], [q2_ref, q3_ref], rtol=0, atol=ANGLE_ATOL)


def test_guesses_choose_the_branch_and_keep_their_winding(run_cli, tmp_path, fourbar, sigma):
    """Dependent coordinates given in --at are Newton's guesses at the point: they choose the
    branch (here the mirror one, said so), and the angles come back within pi of them."""
    out = tmp_path / "x.json"
    r = run_cli("linearize", FOURBAR, "--at", "q.q1=1.0,q.q2=1.0,q.q3=1.8", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "loops closed by Newton from the given q.q2, q.q3" in r.stdout
    q0 = np.array(json.loads(out.read_text())["q0"], dtype=float)
    assert np.all(np.abs(q0[1:] - [1.0, 1.8]) <= np.pi), q0  # main: -8.41, -8.58 (wound by -2 pi)
    np.testing.assert_allclose(np.angle(np.exp(1j * q0[1:])), closed_form(1.0, -sigma), rtol=0, atol=ANGLE_ATOL)


@pytest.mark.parametrize("q3, end", [(2.6, 2.5473476208955885), (1.0, 1.714143895700262)])
def test_beyond_the_end_of_the_branch_is_refused(run_cli, tmp_path, q3, end):
    """The four-bar driven by its rocker (q3 independent): past the rocker's swing (module
    docstring) the branch ends at a turning point: exit 2, the point and the reason named."""
    rocker = tmp_path / "fourbar_rocker.yaml"
    rocker.write_text(FOURBAR.read_text().replace("independent: [q1]", "independent: [q3]"))
    r = run_cli("linearize", rocker, "--at", f"q.q3={q3}", "-o", tmp_path / "x.json")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "the initial state's assembly branch" in r.stderr and "through q3 = 1.8 ends at q3 = " in r.stderr
    assert f"of the way to q3 = {q3:g})" in r.stderr and "a turning point" in r.stderr
    assert not (tmp_path / "x.json").exists()
    model = mbsfmu.load_model(rocker)
    with pytest.raises(BranchEndError) as e:
        linearize(model, [0.0, 0.0, q3])
    # it stops where steps of MIN_STEP = 1e-9 rad past the last point fail: within a few of them
    # of the fold (measured 3.7e-10 and 2.9e-10 rad), and crank and coupler are collinear there
    assert abs(e.value.q[2] - end) < 1e-8, e.value.q
    assert abs(np.sin(e.value.q[1])) < 1e-4, e.value.q  # q2 = 0 or pi; ~sqrt(distance) off (measured 4e-5)
    # inside the swing it closes, on the branch followed from the file's q3 = 1.8
    lin = linearize(model, [0.0, 0.0, 0.5 * (1.714143895700262 + 2.5473476208955885)])
    assert lin.state_names == ("q.q3", "qd.q3")
