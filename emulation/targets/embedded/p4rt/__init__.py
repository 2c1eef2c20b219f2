"""The embedded target's P4Runtime service, one module per responsibility.

``state`` (device, installed pipeline, arbitration), ``stream`` (StreamChannel), ``config``
(Set/GetForwardingPipelineConfig), ``values`` (P4Runtime bytestrings and addresses <-> the
engine's entries and cells), ``write`` and ``read`` (entities), ``status`` (errors as gRPC
statuses).  ``emulation.targets.embedded.p4runtime_server`` assembles them into the service.
"""
