"""How the controller talks to a switch: P4Runtime (bmv2, the embedded target, Stratum on a
Tofino), BF Runtime (bf_switchd on a Tofino, through the user's SDE), and what Tofino needs
beside them (``tofino``: the ports file and Stratum's pipeline packing)."""
