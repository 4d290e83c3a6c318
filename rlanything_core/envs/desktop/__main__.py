"""``python -m rlanything_core.envs.desktop run-task ...`` (see :mod:`.cli`)."""

import sys

from rlanything_core.envs.desktop.cli import main

sys.exit(main())
