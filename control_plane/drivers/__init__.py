"""How the controller talks to a switch: P4Runtime (bmv2, the embedded target, Stratum);
BF Runtime for Tofino later."""
