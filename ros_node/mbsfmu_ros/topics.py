"""The node's topic names (docs/reference/ros-interface.md): one place for the node and for
whoever remaps them.

The constants are the names in the root namespace (``/joint_states``, ``/mbs/energy``: what a
recording holds and what a node without namespace publishes). The node itself creates every topic
by its relative name (``ros_name``: ``joint_states``, ``mbs/energy``), so ``__ns:=/robot1`` moves
them all under ``/robot1`` and two robots share a domain; ``/clock`` stays global, as in every
simulator (one time base per graph), and so does ``/diagnostics`` (the diagnostic_aggregator's
topic; the statuses carry the node's full name). No rclpy here. The state outputs' names and
types are ``mbsfmu.sim.messages``'s, shared with the MCAP recorder.
"""

from mbsfmu.sim.messages import (
    CENTROIDAL_MOMENTUM,
    CLOCK,
    COM,
    COM_VELOCITY,
    ENERGY,
    JOINT_STATES,
    MULTI_DOF_JOINT_STATES,
    ROBOT_DESCRIPTION,
    TF,
    TF_STATIC,
)

DIAGNOSTICS = "/diagnostics"
REAL_TIME_FACTOR = "/mbs/real_time_factor"
EFFORT_COMMANDS = "/mbs/effort_commands"
JOINT_COMMANDS = "/mbs/joint_commands"
JOINT_TRAJECTORY = "/joint_trajectory_controller/joint_trajectory"  # ros2_control's JTC names
FOLLOW_JOINT_TRAJECTORY = "/joint_trajectory_controller/follow_joint_trajectory"  # an action

OUTPUTS = (
    CLOCK,
    JOINT_STATES,
    MULTI_DOF_JOINT_STATES,
    CENTROIDAL_MOMENTUM,
    COM,
    COM_VELOCITY,
    ENERGY,
    DIAGNOSTICS,
    REAL_TIME_FACTOR,
    TF,
    TF_STATIC,
    ROBOT_DESCRIPTION,
)
INPUTS = (EFFORT_COMMANDS, JOINT_COMMANDS, JOINT_TRAJECTORY)
ALL = OUTPUTS + INPUTS

GLOBAL = (CLOCK, DIAGNOSTICS)  # the same for every namespace


def ros_name(topic: str) -> str:
    """The name the node creates ``topic`` with: relative to its namespace, but for ``GLOBAL``."""
    return topic if topic in GLOBAL else topic.lstrip("/")
