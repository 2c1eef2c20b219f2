"""`inart sweep`: grids of plans, simulations and emulations run in parallel on Ray (the local
cores through a head started for the sweep, or an existing cluster), results kept per point."""
