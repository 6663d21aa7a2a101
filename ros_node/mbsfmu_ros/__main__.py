"""``python -m mbsfmu_ros MODEL.yaml [--ros-args ...]``: run the mbsfmu ROS 2 node."""

import sys

try:
    from .node import main
except ImportError as e:  # rclpy or a message package is missing
    sys.exit(
        f"mbsfmu ros: error: {e}; install the ROS 2 wheels (pip install \"mbsfmu[ros]\") or source a "
        f"ROS 2 installation (Jazzy or newer)"
    )

sys.exit(main())
