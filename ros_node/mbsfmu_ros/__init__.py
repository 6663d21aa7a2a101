"""ROS 2 face of mbsfmu: an rclpy node that runs the engine for a model file (docs/guides/ros2.md).

``mbsfmu_ros.config``, ``mbsfmu_ros.conversion``, ``mbsfmu_ros.diagnostics``, ``mbsfmu_ros.pacing``,
``mbsfmu_ros.joint_state_reader`` (JointState CDR bytes, for a client) and ``mbsfmu_ros.world``
(world files) are pure Python and import without ROS (message contents:
``mbsfmu.sim.messages``, shared with the MCAP recorder); ``mbsfmu_ros.node`` needs rclpy (a sourced
ROS 2 installation, Jazzy or newer, or the PyPI wheels of the ``ros`` extra: ``pip install "mbsfmu[ros]"``).
"""
