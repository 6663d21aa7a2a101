"""The node's state messages, built once as CDR bytes and patched in place each cycle
(docs/performance.md, "ROS 2 node"): the serialised form of the rclpy messages
``ros_messages.ros_messages`` would build from the contents of ``mbsfmu.sim.messages.state_messages``,
with the same values, but without building dicts or message objects, and without rclpy's
Python -> C conversion and serialisation per cycle (rclpy's ``publish`` takes the bytes as they
are). Names, frame ids and the layout (``cdr.py``) are written once; each cycle writes the one
stamp into every header and the numbers, nothing else.

The values come from the same engine calls and index arrays as ``mbsfmu.sim.messages`` (joint
layout, ``Simulator.invariants``, ``Simulator.relative_poses``) and are copied unchanged (float64), so each
published message deserialises to the built one field for field, and its bytes are those
``rclpy.serialization.serialize_message`` gives for it but for padding
(tests/ros/test_state_messages.py). ``fill`` returns fresh ``bytes`` each cycle: refilling the
buffers next cycle never changes what was published. A world's robots (``robots.py``) have
one StateMessages each, without /clock and /tf; the world's one /tf of every robot is a
``TfMessage`` of several models (``world_node.py``).
"""

from __future__ import annotations

import struct

import numpy as np

from mbsfmu.sim import messages as ms

from . import ros_messages as rm
from . import topics as tp
from .cdr import ORIGIN, CdrLayout, CdrMessage

STAMP = struct.Struct("<iI")  # builtin_interfaces/Time in CDR_LE: int32 sec, uint32 nanosec


def _stamped(frame_id: str, n: int) -> tuple[CdrMessage, int, slice]:
    """A message {Header header; float64 x n} (geometry_msgs' PointStamped, Vector3Stamped,
    WrenchStamped: Point/Vector3 are 3 float64, Wrench two Vector3), its stamp offset and the f8
    slice of its numbers."""
    lay = CdrLayout()
    stamp = lay.header(frame_id)
    off = lay.float64(n)
    msg = lay.finish()
    return msg, stamp, msg.doubles(off, n)


class _Stamps:
    """The stamps (int32 sec, uint32 nanosec, little endian) of one CDR message's headers, at
    byte offsets ``offsets``."""

    def __init__(self, msg: CdrMessage, offsets):
        self.msg = msg
        self.offset = offsets[0] if len(offsets) == 1 else None
        self.sec = np.array([off // 4 for off in offsets], dtype=np.intp)
        self.nanosec = self.sec + 1

    def set(self, sec: int, nanosec: int) -> None:
        if self.offset is not None:  # one header: one pack, cheaper than numpy's indexing
            STAMP.pack_into(self.msg.buf, self.offset, sec, nanosec)
        else:
            self.msg.i4[self.sec] = sec
            self.msg.u4[self.nanosec] = nanosec


class StateMessages:
    """The state messages of one model, preallocated as CDR: ``fill`` returns topic -> serialised
    message (``bytes``) of the current state, as
    ``ros_messages(state_messages(...))`` with ``with_frame_prefix`` would, serialised."""

    def __init__(self, model, layout: ms.JointLayout, frame_id: str, frame_prefix: str, with_tf: bool):
        self.model, self.layout = model, layout
        self.frame = frame = frame_prefix + frame_id
        self.clock = ClockMessage()
        # sensor_msgs/JointState {Header header; string[] name; float64[] position, velocity, effort}
        lay = CdrLayout()
        stamp = lay.header(frame)
        lay.strings(layout.names)
        n = len(layout.names)
        offs = [lay.float64_sequence(n) for _ in range(3)]
        self.joint_state = lay.finish()
        self.js_stamp = _Stamps(self.joint_state, [stamp])
        self.position, self.velocity, self.effort = (self.joint_state.doubles(off, n) for off in offs)
        self.momentum, stamp_p, self.momentum_f8 = _stamped(frame, 6)  # force, torque
        self.com, stamp_c, self.com_f8 = _stamped(frame, 3)
        self.com_velocity, stamp_v, self.com_velocity_f8 = _stamped(frame, 3)
        # std_msgs/Float64MultiArray {MultiArrayLayout {MultiArrayDimension[] dim {string label;
        # uint32 size, stride}; uint32 data_offset}; float64[] data}
        lay = CdrLayout()
        n_e = len(ms.ENERGY_LABELS)
        lay.uint32(1)
        lay.string(ms.ENERGY_LAYOUT_LABEL)
        lay.uint32(n_e)
        lay.uint32(n_e)
        lay.uint32(0)
        off = lay.float64_sequence(n_e)
        self.energy = lay.finish()
        self.energy_f8 = self.energy.doubles(off, n_e)
        self.invariant_stamps = [
            _Stamps(self.momentum, [stamp_p]),
            _Stamps(self.com, [stamp_c]),
            _Stamps(self.com_velocity, [stamp_v]),
        ]
        self.tf = TfMessage([(model, frame_id, frame_prefix)]) if with_tf and rm.TFMessage is not None else None
        self.multi = MultiDofJointState(layout, frame) if layout.multi_names else None

    def fill(self, sim, ns: int, invariants: bool, with_clock: bool) -> dict:
        """topic -> serialised message of the simulator's current state stamped ns [ns]: /clock
        (``with_clock``), the joint states, and with ``invariants`` momentum, CM, energy and /tf
        (where tf2_msgs imports); a model with spherical or free joints also gets
        /mbs/multi_dof_joint_states. The
        ``fill_joint_states`` and ``fill_invariants`` parts in one dict."""
        out = self.fill_joint_states(sim, ns, with_clock)
        if invariants:
            out.update(self.fill_invariants(sim, ns))
        return out

    def fill_joint_states(self, sim, ns: int, with_clock: bool) -> dict:
        """The first part of ``fill``: /clock (``with_clock``), the joint states and the multi-DoF
        joint states, what a lock-step controller waits for (the node publishes them before it
        computes the rest, ``publishing.py``)."""
        lay = self.layout
        sec, nanosec = ms.ns_to_stamp(ns)
        q, qd = sim.q, sim.qd
        tau = sim.forces.joint_forces(sim.u)
        out = {}
        if with_clock:
            out[tp.CLOCK] = self.clock.fill(sec, nanosec)
        js = self.joint_state
        self.js_stamp.set(sec, nanosec)
        js.f8[self.position] = q[lay.q_index]
        js.f8[self.velocity] = qd[lay.v_index]
        js.f8[self.effort] = tau[lay.v_index]
        out[tp.JOINT_STATES] = js.data()
        if self.multi is not None:
            out[tp.MULTI_DOF_JOINT_STATES] = self.multi.fill(q, qd, tau, sec, nanosec)
        return out

    def fill_invariants(self, sim, ns: int) -> dict:
        """The second part of ``fill``: momentum, CM, CM velocity, energy and /tf (where tf2_msgs imports)."""
        sec, nanosec = ms.ns_to_stamp(ns)
        inv = sim.invariants()
        for s in self.invariant_stamps:
            s.set(sec, nanosec)
        f8 = self.momentum.f8
        f8[self.momentum_f8.start : self.momentum_f8.start + 3] = inv.P_sys
        f8[self.momentum_f8.start + 3 : self.momentum_f8.stop] = inv.H_sys
        self.com.f8[self.com_f8] = inv.R
        self.com_velocity.f8[self.com_velocity_f8] = inv.Rdot
        W_in, W_diss = sim.work
        self.energy.f8[self.energy_f8] = (inv.KE, inv.PE, inv.E, W_in, W_diss)
        out = {
            tp.CENTROIDAL_MOMENTUM: self.momentum.data(),
            tp.COM: self.com.data(),
            tp.COM_VELOCITY: self.com_velocity.data(),
            tp.ENERGY: self.energy.data(),
        }
        if self.tf is not None:
            out[tp.TF] = self.tf.fill([sim], sec, nanosec)
        return out


class MultiDofJointState:
    """sensor_msgs/MultiDOFJointState of the spherical and free joints preallocated as CDR, with
    the values ``ms.multi_dof_joint_state`` gives (q, qd, tau entries copied, zeros where a
    spherical joint has no translation, linear rate or force): ``fill`` writes the stamp and the
    three blocks (transforms, twists, wrenches) by one index assignment each."""

    def __init__(self, layout: ms.JointLayout, frame: str):
        # {Header header; string[] joint_names; geometry_msgs/Transform[] transforms {Vector3
        # translation; Quaternion rotation (x, y, z, w)}; Twist[] twist {Vector3 linear, angular};
        # Wrench[] wrench {Vector3 force, torque}}: each sequence a count and its float64 structs
        lay = CdrLayout()
        stamp = lay.header(frame)
        lay.strings(layout.multi_names)
        n = len(layout.multi_names)
        offs = []
        for width in (7, 6, 6):
            lay.uint32(n)
            offs.append(lay.float64(width * n))
        self.msg = lay.finish()
        self.padding = self.msg.padding
        self.stamp = _Stamps(self.msg, [stamp])
        dst: tuple[list[int], list[int], list[int]] = ([], [], [])  # f8 indices written from q, qd, tau
        src: tuple[list[int], list[int], list[int]] = ([], [], [])  # their q, qd, tau indices
        first = [(off - ORIGIN) // 8 for off in offs]
        for k, (iq, iv, free) in enumerate(zip(layout.multi_q, layout.multi_v, layout.multi_free)):
            t, w, f = first[0] + 7 * k, first[1] + 6 * k, first[2] + 6 * k
            if free:  # q = (x, y, z, qw, qx, qy, qz), qd = (v, omega), tau = (force, torque)
                pairs = (
                    zip(range(t, t + 7), (iq, iq + 1, iq + 2, iq + 4, iq + 5, iq + 6, iq + 3)),
                    zip(range(w, w + 6), range(iv, iv + 6)),
                    zip(range(f, f + 6), range(iv, iv + 6)),
                )
            else:  # q = (qw, qx, qy, qz), qd = omega, tau = torque; translation, linear, force zero
                pairs = (
                    zip(range(t + 3, t + 7), (iq + 1, iq + 2, iq + 3, iq)),
                    zip(range(w + 3, w + 6), range(iv, iv + 3)),
                    zip(range(f + 3, f + 6), range(iv, iv + 3)),
                )
            for d, sidx, pair in zip(dst, src, pairs):
                for a, b in pair:
                    d.append(a)
                    sidx.append(b)
        self.dst = tuple(np.array(d, dtype=np.intp) for d in dst)
        self.src = tuple(np.array(i, dtype=np.intp) for i in src)

    def fill(self, q, qd, tau, sec: int, nanosec: int) -> bytes:
        """The message for q (nq,), qd (nv,), tau (nv,), stamped (sec, nanosec)."""
        self.stamp.set(sec, nanosec)
        f8 = self.msg.f8
        for d, i, x in zip(self.dst, self.src, (q, qd, tau)):
            f8[d] = x[i]
        return self.msg.data()


class ClockMessage:
    """rosgraph_msgs/Clock {Time clock} preallocated as CDR (the node's /clock, a world's too):
    ``fill`` writes the stamp and returns the bytes."""

    def __init__(self):
        lay = CdrLayout()
        stamp = lay.time()
        self.msg = lay.finish()
        self.padding = self.msg.padding
        self.stamp = _Stamps(self.msg, [stamp])

    def fill(self, sec: int, nanosec: int) -> bytes:
        self.stamp.set(sec, nanosec)
        return self.msg.data()


class TfMessage:
    """tf2_msgs/TFMessage of the moving frames of one or more models (a world's robots share one
    /tf), preallocated as CDR: ``parts`` (model, frame_id, frame_prefix) in order, each model's
    transforms as ``ms.state_messages`` gives them with ``with_frame_prefix``; ``fill`` writes the
    stamp and every body's relative pose (``Simulator.relative_poses``, one core call) and returns the bytes."""

    def __init__(self, parts):
        # tf2_msgs/TFMessage {TransformStamped[] transforms {Header header; string child_frame_id;
        # Transform {Vector3 translation; Quaternion rotation (x, y, z, w)}}}
        lay = CdrLayout()
        frames = [ms.transform_frames(model) for model, _frame_id, _prefix in parts]
        lay.uint32(sum(len(f) for f in frames))
        stamps, firsts = [], []
        for (_model, frame_id, prefix), pairs in zip(parts, frames):
            first = []
            for parent, child in pairs:
                stamps.append(lay.header(prefix + frame_id if parent == ms.WORLD else prefix + parent))
                lay.string(prefix + child)
                first.append(lay.float64(7))
            firsts.append(first)
        self.msg = lay.finish()
        self.padding = self.msg.padding
        self.stamps = _Stamps(self.msg, stamps)
        # per part, the f8 indices of the 7 numbers (translation, quaternion) of every transform, (N, 7)
        self.f8 = [(np.array(first, dtype=np.intp).reshape(-1, 1) - ORIGIN) // 8 + np.arange(7) for first in firsts]

    def fill(self, sims, sec: int, nanosec: int) -> bytes:
        """The message for the current states of ``sims`` (one per part, in order), stamped (sec, nanosec)."""
        self.stamps.set(sec, nanosec)
        for index, sim in zip(self.f8, sims):
            self.msg.f8[index] = sim.relative_poses()
        return self.msg.data()
