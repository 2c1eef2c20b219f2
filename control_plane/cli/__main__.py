"""``python -m control_plane.cli``: the ``inart`` command without its console script."""

import sys

from control_plane.cli.main import main

sys.exit(main())
