"""``python -m control_plane.shell_env``: prepare p4runtime-shell's private environment."""

import sys

from control_plane.shell_env import main

sys.exit(main())
