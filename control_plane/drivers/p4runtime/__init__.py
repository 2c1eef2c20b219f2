"""The P4Runtime driver: how the controller talks to bmv2, the embedded target and (through
Stratum) Tofino.  ``values`` (canonical bytestrings, the error type), ``p4info`` (name lookups),
``entities`` (update builders) and ``client`` (one primary session with one device); their
public names are all importable from here."""

from control_plane.drivers.p4runtime.client import *  # noqa: F403
from control_plane.drivers.p4runtime.entities import *  # noqa: F403
from control_plane.drivers.p4runtime.p4info import *  # noqa: F403
from control_plane.drivers.p4runtime.values import *  # noqa: F403
