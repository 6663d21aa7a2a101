"""Named poses as simulation_interfaces gives them (mbsfmu_ros.named_poses, pure): the SCARA's
bounds against closed forms of its link geometry, a floating base's pose against the pose its q
puts it at, the tags filter."""

import math

import numpy as np
import pytest

import mbsfmu
from mbsfmu_ros import named_poses as nps
from tests.support.paths import MODELS

TOL = dict(rtol=0, atol=1e-12)  # a few float64 roundings of O(1) m lengths


def test_scara_pose_is_its_base_and_bounds_its_points():
    """Fixed base: identity pose; box around joint 2 (1, 0), CoMs r_c1 = (0.5, 0.02), the tip at
    l1 + l2 R(q2) e_x and link 2's CoM at l1 + R(q2) (0.4, 0.05) (scara.yaml)."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    assert model.named_poses == ("stretched", "hanging", "folded")
    info = nps.pose_info(model, "folded")
    assert info.position == (0.0, 0.0, 0.0) and info.orientation == (0.0, 0.0, 0.0, 1.0)
    assert info.tags == ("scara",) and "q2 = 2.5" in info.description
    lower, upper = nps.pose_bounds(model, "stretched")
    np.testing.assert_allclose(lower, [0.0, 0.0, 0.0], **TOL)
    np.testing.assert_allclose(upper, [1.8, 0.05, 0.0], **TOL)
    c, s = math.cos(2.5), math.sin(2.5)
    tip = (1 + 0.8 * c, 0.8 * s)
    com2 = (1 + 0.4 * c - 0.05 * s, 0.4 * s + 0.05 * c)
    points = np.array([(0, 0), (1, 0), (0.5, 0.02), tip, com2, (1, 0)])  # origins, CoMs, frames elbow/tip
    lower, upper = nps.pose_bounds(model, "folded")
    np.testing.assert_allclose(lower[:2], points.min(axis=0), **TOL)
    np.testing.assert_allclose(upper[:2], points.max(axis=0), **TOL)


def test_floating_base_pose_and_bounds_relative_to_it(tmp_path):
    """A root body on a free joint: the pose is where q puts it (position, quaternion (x, y, z, w))
    and the bounds are relative to that position."""
    path = tmp_path / "box.yaml"
    path.write_text(
        "version: 1\nbodies:\n"
        "  - {name: base, parent: world, joint: {name: root, type: free}, mass: 1,\n"
        "     inertia: {Ixx: 1, Iyy: 1, Izz: 1}, frames: {nose: [0.5, 0, 0]}}\n"
        "named_poses:\n"
        f"  parked: {{root: [1.0, 2.0, 3.0, {math.cos(math.pi / 4)}, 0, 0, {math.sin(math.pi / 4)}]}}\n"
    )
    model = mbsfmu.load_model(path)
    info = nps.pose_info(model, "parked")
    np.testing.assert_allclose(info.position, [1.0, 2.0, 3.0], **TOL)
    np.testing.assert_allclose(info.orientation, [0, 0, math.sin(math.pi / 4), math.cos(math.pi / 4)], **TOL)
    lower, upper = nps.pose_bounds(model, "parked")  # the nose turned by 90 deg about z: along +y
    np.testing.assert_allclose(lower, [0.0, 0.0, 0.0], **TOL)
    np.testing.assert_allclose(upper, [0.0, 0.5, 0.0], **TOL)


@pytest.mark.parametrize(
    "wanted, all_of, hit",
    [([], False, True), (["arm"], False, True), (["hand", "arm"], False, True), (["hand", "arm"], True, False),
     (["arm7", "arm"], True, True), (["hand"], False, False)],
)  # fmt: skip
def test_tags_filter(wanted, all_of, hit):
    assert nps.matches(("arm7", "arm"), wanted, all_of) is hit


def test_a_placed_robot_pose_and_its_turned_box():
    """In a world a pose moves with its robot's placement (R_w, p_w): p = p_w + R_w p_r and
    q = q_w (x) q_r, checked against a 90 degree turn about z done by hand; the turned box holds
    the SCARA's turned points (a quarter turn is a signed permutation: the box is exactly theirs)."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    info = nps.pose_info(model, "folded")
    Rz = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    moved = nps.placed(info, "scara/folded", (Rz, np.array([2.0, 3.0, 0.5])))
    assert moved.name == "scara/folded" and moved.description == info.description
    np.testing.assert_allclose(moved.position, [2.0, 3.0, 0.5], **TOL)
    s = math.sqrt(0.5)
    np.testing.assert_allclose(moved.orientation, [0.0, 0.0, s, s], **TOL)
    assert nps.placed(info, "folded", None) == info
    lower, upper = nps.turned_box(Rz, *nps.pose_bounds(model, "stretched"))
    np.testing.assert_allclose(lower, [-0.05, 0.0, 0.0], **TOL)  # (x, y) -> (-y, x) of [0, 1.8] x [0, 0.05]
    np.testing.assert_allclose(upper, [0.0, 1.8, 0.0], **TOL)
