"""Tofino: the ports file (plan port -> front-panel port, speed, FEC, auto-negotiation), the
pipeline config Stratum's Tofino target takes over P4Runtime, and where the TNA build is.
The BF Runtime driver (bf_switchd's own gRPC API) is control_plane/drivers/bfrt/."""
