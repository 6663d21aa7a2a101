"""``python -m mbsfmu_ros MODEL.yaml [--ros-args ...]``: run the mbsfmu ROS 2 node;
``python -m mbsfmu_ros env``: the shell line a client needs (``client_env.py``)."""

import sys

if sys.argv[1:] == ["env"]:
    from .client_env import main as env_main

    sys.exit(env_main())

try:
    from .node import main
except ImportError as e:  # rclpy or a message package is missing
    sys.exit(
        f"mbsfmu ros: error: {e}; install the ROS 2 wheels (pip install \"mbsfmu[ros]\") or source a "
        f"ROS 2 installation (Jazzy or newer)"
    )

sys.exit(main())
