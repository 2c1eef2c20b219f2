"""Flow-level simulation of the same topologies, plans and schemes as the emulation, on SimGrid,
at real link speeds (Gbit/s) and cluster sizes no emulation on one machine reaches."""
