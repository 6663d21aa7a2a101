"""Real robot descriptions: every URDF of the public ``example-robot-data`` package (BSD-3-Clause,
PyPI; arms, grippers, hands, quadrupeds, humanoids, drones) loads, or is refused for a reason the
physics gives; the dynamics equal Pinocchio's (test-only oracle) on each, fixed and floating, with
its mimic joints where Pinocchio supports them; lumped and mimic robots keep momentum and energy.

Tolerances. M and RNEA: 1e-12 relative to the largest entry: a tree of N <= 60 bodies sums ~N
terms per entry, ~N eps = 1e-14 relative, and Pinocchio's own round-off is the same. ABA: the
backward error |M (qdd - qdd_pin)| <= 1e-12 (|tau| + |h| + |M| |qdd|), since forward dynamics
amplifies round-off by cond(M) (1e8 for a hand's fingertips beside a 40 kg torso) and the
backward error is what both algorithms guarantee.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsfmu import ModelError
from mbsfmu.io.urdf import load_urdf, read_urdf
from mbsfmu.sim.simulator import Simulator

pin = pytest.importorskip("pinocchio")
from tests.support.pin_twin import UrdfTwin  # noqa: E402
from tests.support.robots import robots_dir  # noqa: E402

ROBOTS = robots_dir()
pytestmark = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed (test extra)")
ALL = sorted(str(p.relative_to(ROBOTS)) for p in ROBOTS.rglob("*.urdf")) if ROBOTS else []

# refused by default, each for a reason the physics or the file gives (message fragment, why)
REFUSED = {
    "ur_description/urdf/ur3.urdf": ("no <link> elements", "an include fragment, not a robot"),
    "alex_description/urdf/alex_psyonic_hands.urdf": (
        "unknown joint 'index_q1' (did you mean 'Left_index_q1'?)",
        "its <mimic> names a joint the file does not have",
    ),
    "romeo_description/urdf/romeo.urdf": (
        "joint 'LHand' moves no mass or inertia",
        "massless hand links on moving joints: a singular mass matrix",
    ),
    "romeo_description/urdf/romeo_laas_small.urdf": (
        "triangle inequality",
        "vendor inertias break I1 + I2 >= I3, and its grippers are massless",
    ),
    "romeo_description/urdf/romeo_small.urdf": ("triangle inequality", "vendor inertias break I1 + I2 >= I3"),
}
REPAIRABLE = {"romeo_description/urdf/romeo_small.urdf"}  # loads with repair_inertia
MIMIC = [r for r in ALL if r not in REFUSED and "<mimic" in (ROBOTS / r).read_text(errors="replace")]


def _state(model, rng):
    """A random state on the couplings (followers assembled from their leaders)."""
    q, qd = model.random_state(rng)
    return model.assemble(q, qd) if model.loops else (q, qd)


def test_the_robot_set_is_the_expected_one():
    assert len(ALL) >= 60 and set(REFUSED) <= set(ALL)
    assert len(MIMIC) >= 8  # panda, baxter, pr2, talos (mimic on fixed joints), tiago_pro, ...


@pytest.mark.parametrize("robot", ALL)
def test_every_robot_loads_or_is_refused_for_a_physical_reason(robot):
    path = ROBOTS / robot
    if robot not in REFUSED:
        model = load_urdf(path)
        links = {lk.name for lk in read_urdf(path).links} - {"world"}
        assert links <= set(model.frames)  # every URDF link is a named frame of the lumped model
        return
    fragment, _why = REFUSED[robot]
    with pytest.raises(ModelError) as err:
        load_urdf(path)
    assert fragment in str(err.value)
    if "triangle inequality" in fragment:
        assert "repair_inertia: true" in str(err.value) and "--repair-inertia" in str(err.value)
    if robot in REPAIRABLE:
        model = load_urdf(path, repair_inertia=True)
        assert model.notes and all("repaired (repair_inertia)" in n for n in model.notes if "inertia" in n)


def _compare(model, tw, rng, reduced: bool, n=3):
    """Worst relative M, RNEA and ABA backward error against Pinocchio over n random states;
    reduced: in the couplings' independent coordinates, else the spanning tree's."""
    worst = {"M": 0.0, "rnea": 0.0, "aba": 0.0}
    iu = tw.iu
    for _ in range(n):
        q, qd = _state(model, rng)
        pq, pv = tw.q(q), tw.v(qd[iu])
        M_pin = tw.M(pq)
        udd, tau_u = rng.normal(size=iu.size), rng.normal(size=iu.size)
        tau_pin = pin.rnea(tw.pm, tw.pd, pq, pv, tw.v(udd)).copy()[tw.perm]  # no damping in Pinocchio
        h_pin = pin.rnea(tw.pm, tw.pd, pq, pv, np.zeros(tw.pm.nv)).copy()[tw.perm]
        pf = model.passive_forces(q, qd)
        if reduced:
            part = model.loop_partition()
            from mbsfmu.engine.dynamics.closed_loops import reduction

            J, _ = reduction(model.loop_constraints(q).A[part.rows], None, part, model.nv)
            M = J.T @ model.mass_matrix(q) @ J
            rnea = model.constrained_inverse_dynamics(q, qd, udd) + J.T @ pf
            tau = np.zeros(model.nv)
            tau[iu] = tau_u
            qdd = model.constrained_forward_dynamics(q, qd, tau - pf)[0][iu]
        else:
            M = model.mass_matrix(q)
            rnea = model.inverse_dynamics(q, qd, udd) + pf
            qdd = model.forward_dynamics(q, qd, tau_u - pf)
        qdd_pin = np.linalg.solve(M_pin, tau_u - h_pin)
        scale = np.abs(tau_u).max() + np.abs(h_pin).max() + np.abs(M_pin).max() * np.abs(qdd_pin).max()
        worst["M"] = max(worst["M"], np.abs(M - M_pin).max() / np.abs(M_pin).max())
        worst["rnea"] = max(worst["rnea"], np.abs(rnea - tau_pin).max() / np.abs(tau_pin).max())
        worst["aba"] = max(worst["aba"], np.abs(M_pin @ (qdd - qdd_pin)).max() / scale)
    return worst


def _pin_loads(robot: str, floating: bool, mimic: bool) -> bool:
    args = (str(ROBOTS / robot), pin.JointModelFreeFlyer()) if floating else (str(ROBOTS / robot),)
    try:
        pin.buildModelFromUrdf(*args, mimic=mimic)
    except (RuntimeError, ValueError):
        return False
    return True


LOADED = [r for r in ALL if r not in REFUSED]


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("robot", LOADED)
def test_dynamics_equal_pinocchio(robot, floating, rng):
    """M, RNEA, ABA equal Pinocchio's on its own parse (with mimic=True for robots with mimic
    joints, in the independent coordinates), fixed base and free-flyer root."""
    path = ROBOTS / robot
    if floating and read_urdf(path).root == "world":
        pytest.skip("the root link is the world: nothing to float")
    model = load_urdf(path, floating_base=floating)
    if model.nv == 0:
        pytest.skip("nothing moves")
    # Pinocchio 4 reads a mimic joint only after its leader in its tree order (talos_full_v2 has
    # it the other way round): there the spanning tree is compared, the coupling separately
    mimic = bool(model.spec.couplings) and _pin_loads(robot, floating, True)
    tw = UrdfTwin(model, path, floating, mimic=mimic)
    worst = _compare(model, tw, rng, reduced=mimic)
    print(robot, "floating" if floating else "fixed", mimic, {k: f"{v:.2g}" for k, v in worst.items()})
    assert worst["M"] <= 1e-12 and worst["rnea"] <= 1e-12 and worst["aba"] <= 1e-12, worst


def test_lumping_keeps_the_physics_of_every_link():
    """A robot loaded link by link (it loads both ways) and lumped: the same M, and the same
    momentum, angular momentum and energy from the body records at the same state."""
    path = ROBOTS / "ur_description/urdf/ur5_robot.urdf"
    links, lumped = load_urdf(path, lump_fixed=False), load_urdf(path)
    assert lumped.N < links.N and lumped.nv == links.nv
    rng = np.random.default_rng(7)
    sims = [Simulator(m, "rk4", h_max=1e-3, backend="python") for m in (links, lumped)]
    for _ in range(3):
        q, qd = links.random_state(rng)
        assert np.abs(links.mass_matrix(q) - lumped.mass_matrix(q)).max() <= 1e-13 * np.abs(links.mass_matrix(q)).max()
        inv = []
        for sim in sims:
            sim.set_configuration(q, qd)
            inv.append(sim.invariants())
        for key in ("p_sys", "P_sys", "H_sys", "R", "KE", "PE"):
            a, b = np.asarray(getattr(inv[0], key)), np.asarray(getattr(inv[1], key))
            assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(a).max()), key


@pytest.mark.parametrize(
    "robot, floating",
    [("go1_description/urdf/go1.urdf", True), ("panda_description/urdf/panda.urdf", True)],
    ids=["go1-lumped", "panda-mimic"],
)
def test_momentum_and_energy_of_a_passive_run(robot, floating):
    """Floating, no gravity, no damping: linear and angular momentum stay; energy stays; the
    mimic coupling does no work and holds (native core, Lagrange multipliers, projection)."""
    model = load_urdf(ROBOTS / robot, floating_base=floating)
    from dataclasses import replace

    from mbsfmu.engine.model import Model

    spec = model.spec
    bodies = tuple(replace(b, joint=replace(b.joint, spring=None)) for b in spec.bodies)
    model = Model(replace(spec, bodies=bodies, gravity=(0.0, 0.0, 0.0)), source=model.source)
    rng = np.random.default_rng(3)
    q, qd = model.random_state(rng)
    sim = Simulator(model, "rk4", h_max=2e-4)
    sim.set_configuration(q, 0.5 * qd)
    inv0 = sim.invariants()
    for _ in range(50):
        sim.step(1e-3)
    inv = sim.invariants()
    P_scale = max(np.abs(inv0.P_sys).max(), 1e-3)
    assert np.abs(inv.P_sys - inv0.P_sys).max() <= 1e-10 * P_scale
    assert np.abs(inv.H_sys - inv0.H_sys).max() <= 1e-8 * max(np.abs(inv0.H_sys).max(), inv0.KE)
    assert abs(inv.E - inv0.E) <= 1e-6 * inv0.KE
    if model.loops:
        ld = model.loop_constraints(sim.q, sim.qd)
        assert np.abs(ld.Phi).max() <= 1e-12 and np.abs(ld.Phidot).max() <= 1e-10


@pytest.mark.parametrize("robot", MIMIC)
def test_export_of_a_mimic_robot_reads_back_to_the_same_couplings_and_dynamics(robot, tmp_path):
    """export-urdf writes each coupling as <mimic> and each lumped link as a link: the export
    loads to the same couplings, frames and mass matrix (same joint order: the exporter keeps it)."""
    from mbsfmu.io.urdf_export import write_urdf

    model = load_urdf(ROBOTS / robot)
    write_urdf(model, tmp_path / "x.urdf", limits=read_urdf(ROBOTS / robot).limits)
    back = load_urdf(tmp_path / "x.urdf")
    assert set(back.spec.couplings) == set(model.spec.couplings) and set(model.frames) <= set(back.frames)
    rng = np.random.default_rng(1)
    q, _ = _state(model, rng)
    qb = np.zeros(back.nq)
    for j in model.joint_names:
        if j in back.joint_index:
            qb[back.q_slice(j)] = q[model.q_slice(j)]
    order = np.concatenate(
        [np.arange(back.v_slice(j).start, back.v_slice(j).stop) for j in model.joint_names if j in back.joint_index]
    )
    M, Mb = model.mass_matrix(q), back.mass_matrix(qb)[np.ix_(order, order)]
    assert np.abs(M - Mb).max() <= 1e-12 * np.abs(M).max()


@pytest.mark.parametrize(
    "robot, rates",
    [
        (
            "panda_description/urdf/panda.urdf",
            {**{f"panda_joint{k}": 0.8 for k in range(1, 8)}, "panda_finger_joint1": 0.02},
        ),
        (
            "go1_description/urdf/go1.urdf",
            {f"{leg}_{j}_joint": 1.0 for leg in ("FL", "FR", "RL", "RR") for j in ("hip", "thigh", "calf")},
        ),
    ],
    ids=["panda-mimic", "go1-lumped"],
)
def test_checker_passes_a_floating_run_of_a_mimic_and_a_lumped_robot(robot, rates, tmp_path, capsys):
    """`mbsfmu run` with the independent checker's conservation checks on a free-floating robot in
    zero gravity (dampers on: energy_balance counts their work): p_sys = 0 and P_sys to round-off;
    H_sys and the energy balance to the integrator's error (RK4, h = 1e-4 s, 0.2 s; measured
    <= 4e-15 relative, bounds 1e-11 and 1e-10); the checker agrees with the engine on the lumped
    bodies' records (the mimic coupling is workless and internal: it changes neither)."""
    from mbsfmu.cli import main

    (tmp_path / "robot.yaml").write_text(
        f"version: 1\nurdf: {ROBOTS / robot}\nfloating_base: true\ngravity: [0, 0, 0]\n"
    )
    qd = ", ".join(f"{j}: {v}" for j, v in rates.items())
    (tmp_path / "run.yaml").write_text(
        "version: 1\nname: run\nmodel: robot.yaml\nduration: 0.2\ndt: 0.01\n"
        "integrator: {method: rk4, h_max: 1.0e-4}\noutputs: {plots: false}\n"  # matplotlib adds nothing here
        f"initial: {{qd: {{{qd}}}}}\n"
        "checks:\n  p_sys_zero: rel:1.0e-12\n  H_sys_constant: rel:1.0e-11\n  P_sys_constant: rel:1.0e-12\n"
        "  energy_balance: rel:1.0e-10\n  engine_agreement: rel:1.0e-12\n"
    )
    code = main(["run", str(tmp_path / "run.yaml"), "-o", str(tmp_path / "out"), "--no-progress"])
    out = capsys.readouterr().out
    print(out)
    assert code == 0, out
