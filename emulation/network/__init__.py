"""The emulated network's mechanics: Mininet hosts and P4 switch nodes, link impairments, host
pacing, CPU isolation and the claims that tell a live run's switches from a killed run's."""
