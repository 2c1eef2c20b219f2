"""inart's public Python API: what users import into their own scripts (``inart.torch``).
The implementation lives in the host_stack, control_plane, emulation and simulation packages."""
