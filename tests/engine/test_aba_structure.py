"""The C core's dynamics and kinematics with and without the joints' structure give the same numbers.

aba.c leaves out the products with the exact zeros and ones of a joint axis along a coordinate
axis (s->sax) and of a transform that rotates about one (s->erot), and the zeros of a rigid-body
inertia and of a joint's velocity (spatial.h: X_motion_ax, XT_force_add_ax, rotated_block_ax,
rigid_bias_force, crm_joint). The remaining terms are added in the same order, so the results
must equal the dense products' bit for bit (``Core.set_dense``), not merely to a tolerance: for
single calls, over whole RK4 runs, through the couplings' ABA solve (the Panda's mimic finger),
with external wrenches, for the mass matrix (crba.c) and for the forward kinematics and the momentum
and energy built on it.

The same holds for the hot passes' two compiled copies (mbs_inline.h: MBS_AVX_COPIES): the AVX copy,
run where the CPU has AVX, and the baseline (SSE2) copy give the same numbers bit for bit
(``Core.set_avx``).
"""

from __future__ import annotations

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.native.core import Core
from tests.support.paths import MODELS
from tests.support.robots import robots_dir

ROBOTS = {
    "UR5": "ur_description/urdf/ur5_robot.urdf",
    "Panda": "panda_description/urdf/panda.urdf",
    "G1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
}


def bundled_models() -> list:
    return sorted(p for p in MODELS.iterdir() if p.suffix in (".yaml", ".urdf"))


def robot(name: str):
    base = robots_dir()
    if base is None:
        pytest.skip("example-robot-data (the test extra) is not installed")
    return base / ROBOTS[name]


def pair(path):
    """(model, structured core, dense core) and how many joints the structured one uses."""
    model = mbsfmu.load_model(path)
    structured, dense = Core(model), Core(model)
    n = structured.set_dense(False)
    assert dense.set_dense(True) == 0
    return model, structured, dense, n


def assert_same_dynamics(model, structured, dense, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(5):
        q, qd = model.random_state(rng)
        tau = rng.normal(size=model.nv)
        f_ext = rng.normal(size=(model.N + 1, 6))
        np.testing.assert_array_equal(structured.aba(q, qd, tau), dense.aba(q, qd, tau))
        np.testing.assert_array_equal(structured.aba(q, qd, tau, f_ext), dense.aba(q, qd, tau, f_ext))
        assert structured.crba(q).tobytes() == dense.crba(q).tobytes()  # crba.c's products; zeros' signs too
        qdd = rng.normal(size=model.nv)
        for got, want in zip(structured.kinematics(q, qd, qdd), dense.kinematics(q, qd, qdd)):
            np.testing.assert_array_equal(got, want)  # world poses, velocities, accelerations
        inv_s, inv_d = structured.invariants_at(q, qd), dense.invariants_at(q, qd)
        for name, _ in type(inv_s)._fields_:
            np.testing.assert_array_equal(np.asarray(getattr(inv_s, name)), np.asarray(getattr(inv_d, name)), name)


def assert_same_run(model, structured, dense, seed: int, steps: int = 100) -> None:
    q, qd = model.random_state(np.random.default_rng(seed))
    x0 = np.concatenate((q, qd, [0.0, 0.0]))
    for core in (structured, dense):
        core.set_solver("rk4", h_max=1e-3)
        core.set_state(x0)
        assert core.step(steps * 1e-3) == 0, core.message
    np.testing.assert_array_equal(structured.x, dense.x)
    assert np.all(np.isfinite(structured.x))


@pytest.mark.parametrize("name", list(ROBOTS))
def test_robots_use_the_structure_and_get_the_same_numbers(name):
    model, structured, dense, n = pair(robot(name))
    # every joint of these URDFs turns about a coordinate axis of its frame
    assert n >= model.nv - 2, f"{n} structured joints of {model.nv}"
    assert_same_dynamics(model, structured, dense, seed=1)
    assert_same_run(model, structured, dense, seed=2)


@pytest.mark.parametrize("path", bundled_models(), ids=lambda p: p.stem)
def test_bundled_models_get_the_same_numbers(path):
    model, structured, dense, _ = pair(path)
    assert_same_dynamics(model, structured, dense, seed=3)
    if model.nv <= 40:
        assert_same_run(model, structured, dense, seed=4, steps=50)


def write_tree(path, parts, stays):
    """A URDF tree at ``path`` (robot named after its stem): ``parts`` (kind, origin xyz, origin rpy,
    axis, inertial origin xyz, inertial rpy, inertia attributes) of joints j0, j1, ... and links l0,
    l1, ... of mass 1 + k, each link hung from the one before, or from that one's parent where
    ``stays(k)`` of the one before (branches); a limit on every joint but a fixed one."""
    links, joints, parent = ['<link name="base"/>'], [], "base"
    for k, (kind, xyz, rpy, axis, com_xyz, com_rpy, inertia) in enumerate(parts):
        links.append(
            f'<link name="l{k}"><inertial><origin xyz="{com_xyz}" rpy="{com_rpy}"/><mass value="{1 + k}"/>'
            f"<inertia {inertia}/></inertial></link>"
        )
        limit = '<limit lower="-1" upper="1" effort="10" velocity="1"/>' if kind != "fixed" else ""
        joints.append(
            f'<joint name="j{k}" type="{kind}"><parent link="{parent}"/><child link="l{k}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>'
        )
        parent = parent if stays(k) else f"l{k}"
    path.write_text(f'<robot name="{path.stem}">' + "".join(links + joints) + "</robot>")
    return path


def test_every_axis_sign_and_joint_kind(tmp_path):
    """Revolute joints about +-x, +-y, +-z with and without a turned joint frame, prismatic and fixed
    joints: each takes its structured products (or the dense ones where the frame is turned about
    another axis than the joint's; a frame turned about the joint's own axis, or a fixed or prismatic
    joint's frame turned about a coordinate axis, keeps the rotation about one axis)."""
    axes = ["1 0 0", "0 1 0", "0 0 1", "-1 0 0", "0 -1 0", "0 0 -1", "0 1 0", "0 0 1"]
    kinds = ["revolute", "revolute", "prismatic", "revolute", "revolute", "revolute", "fixed", "revolute"]
    rpys = ["0 0 0", "0.3 0 0", "0 0 0", "0 0 0", "0 0.2 0.1", "0 0 0", "0 0 0", "0 0 0"]
    axes += ["1 0 0", "0 0 -1", "0 1 0", "0 1 0", "0 -1 0"]  # turned about one axis: their own, any
    kinds += ["revolute", "revolute", "prismatic", "fixed", "revolute"]  # (the fixed joint is lumped into
    rpys += ["0.4 0 0", "0 0 -0.7", "0 0 0.3", "0 0.5 0", "0 -0.2 0"]  # the next: turned about y twice)
    inertia = 'ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.025"'
    parts = [
        (kind, "0.1 0 0.2", rpy, axis, f"0.02 {0.01 * k} 0.1", "0 0 0", inertia)
        for k, (axis, kind, rpy) in enumerate(zip(axes, kinds, rpys))
    ]
    path = write_tree(tmp_path / "axes.urdf", parts, lambda k: k % 3 == 0)  # links hang from one parent
    model, structured, dense, n = pair(path)
    assert n >= 5
    assert_same_dynamics(model, structured, dense, seed=5)
    assert_same_run(model, structured, dense, seed=6)


def test_frames_turned_by_quarter_turns(tmp_path):
    """Joints in frames turned by +-pi/2 (the Panda's rpy origins): E_i = (R_tree RJ)^T is a rotation
    about a coordinate axis composed with a signed permutation, whose exact zeros (spatial.cos_sin)
    crba.c's products leave out (s->eunit: compact_rotate_pm, XT_force_add_pm, each unit entry's place
    and sign); the mass matrix and everything else equal the dense products bit for bit."""
    h = "1.5707963267948966"
    rpys = [f"{h} 0 0", f"-{h} 0 0", f"0 {h} 0", f"0 0 -{h}", f"{h} 0 {h}", f"0 -{h} {h}", f"{h} {h} 0"]
    rpys += ["3.141592653589793 0 0", f"{h} 0 0", f"0 {h} 0"]
    axes = ["0 0 1", "0 0 -1", "1 0 0", "0 1 0", "0 0 1", "1 0 0", "0 -1 0", "0 1 0", "0 1 0", "0 0 1"]
    kinds = ["revolute"] * 8 + ["prismatic", "revolute"]
    inertia = 'ixx="0.02" ixy="0.001" ixz="0.003" iyy="0.03" iyz="0.002" izz="0.025"'
    parts = [
        (kind, "0.1 -0.05 0.2", rpy, axis, f"0.02 {0.01 * k} 0.1", "0.1 0.2 0.3", inertia)
        for k, (axis, kind, rpy) in enumerate(zip(axes, kinds, rpys))
    ]
    path = write_tree(tmp_path / "quarter.urdf", parts, lambda k: k == 4)  # a branch at l4
    model, structured, dense, _ = pair(path)
    assert_same_dynamics(model, structured, dense, seed=11)
    assert_same_run(model, structured, dense, seed=12)


def test_joint_offsets_with_zeros_in_every_position(tmp_path):
    """Joint offsets r with exact zeros in each of the 8 patterns (none, one, two, all three), in
    frames turned by quarter turns (s->eunit) and about the joint's axis (s->erot), inertias with
    exact zeros, and q = 0 (M then has exact zeros): the structured products give M bit for bit, the
    signs of its zeros included (tobytes), and the dense products' numbers everywhere else."""
    h = "1.5707963267948966"
    xyzs = ["0 0 0", "0.1 0 0", "0 -0.2 0", "0 0 0.3", "0.1 -0.2 0", "0.1 0 0.3", "0 -0.2 0.3", "0.1 -0.2 0.3"]
    rpys = [f"{h} 0 0", "0 0 0.4", f"0 -{h} 0", f"0 0 {h}", "0.3 0 0", f"-{h} 0 {h}", f"0 {h} 0", f"{h} 0 0"]
    axes = ["0 0 1", "0 0 1", "1 0 0", "0 1 0", "1 0 0", "0 0 -1", "0 -1 0", "0 1 0"]
    # inertias with exact zeros (a centre of mass on an axis, no products of inertia)
    inertia = 'ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.025"'
    parts = [
        ("revolute", xyz, rpy, axis, xyzs[(k + 3) % 8], "0 0 0", inertia)
        for k, (xyz, rpy, axis) in enumerate(zip(xyzs * 2, rpys + rpys[::-1], axes + axes[::-1]))
    ]
    path = write_tree(tmp_path / "offsets.urdf", parts, lambda k: k == 9)  # a branch at l9
    model, structured, dense, n = pair(path)
    assert n >= 10
    rng = np.random.default_rng(13)
    qs = [np.zeros(model.nq)] + [model.random_state(rng)[0] for _ in range(5)]  # q = 0: M's exact zeros
    for q in qs:
        assert structured.crba(q).tobytes() == dense.crba(q).tobytes()
    assert_same_dynamics(model, structured, dense, seed=14)
    assert_same_run(model, structured, dense, seed=15)


def test_dense_and_structured_switch_back_and_forth():
    model, structured, _, n = pair(robot("UR5"))
    assert structured.set_dense(True) == 0
    assert structured.set_dense(False) == n


def avx_pair(path):
    """(model, a core running the AVX copies, a core running the baseline ones)"""
    model = mbsfmu.load_model(path)
    avx, base = Core(model), Core(model)
    if not avx.set_avx(True):
        pytest.skip("this CPU has no AVX: only the baseline copies run here")
    assert base.set_avx(False) is False
    return model, avx, base


@pytest.mark.parametrize("name", list(ROBOTS))
def test_the_avx_copies_give_the_baseline_numbers_on_robots(name):
    model, avx, base = avx_pair(robot(name))
    assert_same_dynamics(model, avx, base, seed=7)
    assert_same_run(model, avx, base, seed=8)


@pytest.mark.parametrize("path", bundled_models(), ids=lambda p: p.stem)
def test_the_avx_copies_give_the_baseline_numbers_on_bundled_models(path):
    model, avx, base = avx_pair(path)
    assert_same_dynamics(model, avx, base, seed=9)
    if model.nv <= 40:
        assert_same_run(model, avx, base, seed=10, steps=50)


def test_the_copies_switch_back_and_forth():
    _, avx, base = avx_pair(robot("UR5"))
    assert avx.set_avx(False) is False
    assert base.set_avx(True) is True
