import sys

from mbsfmu.cli import main

sys.exit(main())
