"""The embedded P4 target: executes p4c's bmv2 JSON (v1model) in Python and serves P4Runtime.

Entry point: ``python -m emulation.targets.embedded`` (same arguments as simple_switch_grpc).
Modules: json_loader (layout), expressions/actions/headers/parser/codec/calculations/controls
(code generation), optimize (common subexpressions), tables, pre, pipeline (v1model packet
flow, the per-program fast path), p4info_map + p4runtime_server + p4rt/ (P4Runtime), stats
(drop reasons, served beside P4Runtime), ports + rawio (raw sockets, batched sends), bench
(``inart bench target``), launch (the Target for emulation.targets).  Clients use
control_plane.drivers.p4runtime.
"""
