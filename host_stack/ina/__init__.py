"""The INA data path on hosts: wire format, quantization, reliable paced transport, the PS
and its aggregation rules, and the `ina` sync scheme workers use."""
