"""Everything that makes a plan: InArt, its baselines, the exact MILP, multi-job planning."""
