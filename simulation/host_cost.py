"""The hosts' own time per collective message that the simulation charges by default.

A flow model's hosts are ideal; real ones hand every gloo message to the kernel and wake up
when one arrives, and a ring's 2(n-1) sequential steps pay that on its dependency chain.  At
scale it decides comparisons (fattree:16's ring: 2,038 steps), so the default is a measured
figure, never 0, and every result says which cost it assumed.
"""

from __future__ import annotations

# gloo's time per message, half the median ping-pong round trip between two network
# namespaces over a veth pair through the host stack's p2p calls: `inart bench
# message-overhead --round-trips 1000` (host_stack/collectives/bench_overhead.py) on the
# project's shared 2-core VM (AMD EPYC), 26 November 2026, three runs at load 7: 53.0, 46.7
# and 47.3 us (docs/simulation-calibration.md).  `--host-overhead-us 0` gives the network's
# time alone; a machine's own figure comes from the same bench.
DEFAULT_HOST_OVERHEAD_US = 47.0
SOURCE = ("gloo, `inart bench message-overhead`, 2-core VM, 26 Nov 2026")
