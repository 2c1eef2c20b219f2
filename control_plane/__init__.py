"""inart control plane: topologies, solvers (InArt and baselines), plans, P4Runtime installation."""
