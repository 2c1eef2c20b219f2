"""The P4Runtime API's Python stubs, inart's own (README.md beside this file).

``from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2`` instead of PyPI's
``from p4.v1 import p4runtime_pb2``: under inart's import name, so that installing PyPI's
``p4runtime`` (which p4runtime-shell pulls) into the same environment neither replaces these
files nor shadows them.  The .proto file names inside stay the canonical ``p4/v1/...``.
"""
