"""The node's topic names (docs/reference/ros-interface.md): one place for the node and for
whoever remaps them.

All are absolute, so a namespace does not move them; a launch file or a test moves them with
remapping rules (``--ros-args -r /joint_states:=/robot1/joint_states``; ``tests/support/ros_sandbox.py``
does this to give each test run topics of its own). No rclpy here. The state outputs' names
and types are ``mbsfmu.sim.messages``'s, shared with the MCAP recorder.
"""

from mbsfmu.sim.messages import (
    CENTROIDAL_MOMENTUM,
    CLOCK,
    COM,
    COM_VELOCITY,
    ENERGY,
    JOINT_STATES,
    MULTI_DOF_JOINT_STATES,
    TF,
)

DIAGNOSTICS = "/diagnostics"
REAL_TIME_FACTOR = "/mbs/real_time_factor"
EFFORT_COMMANDS = "/mbs/effort_commands"
JOINT_COMMANDS = "/mbs/joint_commands"

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
)
INPUTS = (EFFORT_COMMANDS, JOINT_COMMANDS)
ALL = OUTPUTS + INPUTS
