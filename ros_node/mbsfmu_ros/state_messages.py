"""The node's state messages, built once and filled in place each cycle (docs/performance.md, "ROS 2
node"): the rclpy messages ``ros_messages.ros_messages`` would build from the contents of
``mbsfmu.sim.messages.state_messages``, with the same values, but without building dicts and message
objects per cycle. Names, frame ids and layouts are set once; each cycle sets the one stamp all
headers share, the numbers, and nothing else.

The values come from the same engine calls and index arrays as ``mbsfmu.sim.messages`` (joint
layout, ``Simulator.invariants``, ``transforms``) and are copied unchanged (float64), so each
published message equals the built one field for field (tests/ros/test_state_messages.py). The
messages are created with ``check_fields=False``: rclpy then skips its per-field type checks on
assignment, which every value here passes by construction (Python floats and ints, ``array('d')``).
rclpy's ``publish`` serialises the message before it returns, so refilling it next cycle is safe.
"""

from __future__ import annotations

from array import array

from builtin_interfaces.msg import Time
from geometry_msgs.msg import (
    Point,
    PointStamped,
    Quaternion,
    Transform,
    TransformStamped,
    Vector3,
    Vector3Stamped,
    Wrench,
    WrenchStamped,
)
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header, MultiArrayDimension, MultiArrayLayout

from mbsfmu.sim import messages as ms

from . import ros_messages as rm
from . import topics as tp


def _new(cls, **fields):
    """A message of cls with the per-field checks off where its generator has them."""
    try:
        return cls(check_fields=False, **fields)
    except (AssertionError, TypeError):  # a generator without check_fields: checked fields
        return cls(**fields)


def _set_xyz(v, values) -> None:
    v.x, v.y, v.z = float(values[0]), float(values[1]), float(values[2])


class StateMessages:
    """The state messages of one model, preallocated: ``fill`` returns topic -> message of the
    current state, as ``ros_messages(state_messages(...))`` with ``with_frame_prefix`` would."""

    def __init__(self, model, layout: ms.JointLayout, frame_id: str, frame_prefix: str, with_tf: bool):
        self.model, self.layout = model, layout
        self.time = _new(Time)  # the stamp of every header and of /clock

        def header(frame: str):
            return _new(Header, stamp=self.time, frame_id=frame_prefix + frame)

        self.clock = _new(Clock, clock=self.time)
        self.joint_state = _new(JointState, header=header(frame_id), name=list(layout.names))
        self.momentum = _new(
            WrenchStamped, header=header(frame_id), wrench=_new(Wrench, force=_new(Vector3), torque=_new(Vector3))
        )
        self.com = _new(PointStamped, header=header(frame_id), point=_new(Point))
        self.com_velocity = _new(Vector3Stamped, header=header(frame_id), vector=_new(Vector3))
        n = len(ms.ENERGY_LABELS)
        self.energy = _new(
            Float64MultiArray,
            layout=_new(
                MultiArrayLayout,
                dim=[_new(MultiArrayDimension, label=ms.ENERGY_LAYOUT_LABEL, size=n, stride=n)],
                data_offset=0,
            ),
        )
        self.tf = None
        self.translations, self.rotations = [], []  # of each transform in /tf, filled each cycle
        if with_tf and rm.TFMessage is not None:
            self.tf = _new(
                rm.TFMessage,
                transforms=[
                    _new(
                        TransformStamped,
                        header=header(frame_id if parent == ms.WORLD else parent),
                        child_frame_id=frame_prefix + child,
                        transform=_new(Transform, translation=_new(Vector3), rotation=_new(Quaternion)),
                    )
                    for parent, child in ms.transform_frames(model)
                ],
            )
            self.translations = [t.transform.translation for t in self.tf.transforms]
            self.rotations = [t.transform.rotation for t in self.tf.transforms]

    def fill(self, sim, ns: int, invariants: bool, with_clock: bool) -> dict:
        """topic -> message of the simulator's current state stamped ns [ns]: /clock (``with_clock``),
        the joint states, and with ``invariants`` momentum, CM, energy and /tf (where tf2_msgs
        imports); a model with spherical or free joints also gets /mbs/multi_dof_joint_states
        (built from its contents each cycle)."""
        lay = self.layout
        self.time.sec, self.time.nanosec = ms.ns_to_stamp(ns)
        q, qd = sim.q, sim.qd
        tau = sim.forces.joint_forces(sim.u)
        js = self.joint_state
        js.position = array("d", q[lay.q_index].tobytes())
        js.velocity = array("d", qd[lay.v_index].tobytes())
        js.effort = array("d", tau[lay.v_index].tobytes())
        out = {tp.CLOCK: self.clock} if with_clock else {}
        out[tp.JOINT_STATES] = js
        if lay.multi_names:
            out[tp.MULTI_DOF_JOINT_STATES] = rm.BUILDERS[tp.MULTI_DOF_JOINT_STATES](
                ms.multi_dof_joint_state(lay, q, qd, tau, ns, js.header.frame_id)
            )
        if not invariants:
            return out
        inv = sim.invariants()
        _set_xyz(self.momentum.wrench.force, inv.P_sys)
        _set_xyz(self.momentum.wrench.torque, inv.H_sys)
        _set_xyz(self.com.point, inv.R)
        _set_xyz(self.com_velocity.vector, inv.Rdot)
        W_in, W_diss = sim.work
        self.energy.data = array("d", (float(inv.KE), float(inv.PE), float(inv.E), float(W_in), float(W_diss)))
        out[tp.CENTROIDAL_MOMENTUM] = self.momentum
        out[tp.COM] = self.com
        out[tp.COM_VELOCITY] = self.com_velocity
        out[tp.ENERGY] = self.energy
        if self.tf is not None:
            xyz, quat = ms.relative_poses(self.model, *sim.body_poses())
            for v, rot, t, r in zip(self.translations, self.rotations, xyz.tolist(), quat.tolist()):
                v.x, v.y, v.z = t
                rot.x, rot.y, rot.z, rot.w = r
            out[tp.TF] = self.tf
        return out
