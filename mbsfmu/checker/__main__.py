"""``python -m mbsfmu.checker TRAJECTORY.csv ...``: the same as ``mbsfmu check``."""

import sys

from .command import main

sys.exit(main())
