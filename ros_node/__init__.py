"""ROS 2 face of mbsfmu: an rclpy node that runs the engine for a model file (docs/guides/ros2.md).

``ros_node.config``, ``ros_node.conversion``, ``ros_node.diagnostics`` and ``ros_node.pacing`` are
pure Python and import without ROS (message contents: ``mbsfmu.sim.messages``, shared with the
MCAP recorder); ``ros_node.node`` needs rclpy (a sourced ROS 2 installation, Jazzy or newer,
or the PyPI wheels of the ``ros`` extra: ``pip install "mbsfmu[ros]"``).
"""
