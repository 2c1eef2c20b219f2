"""The crossover map: where in-network aggregation beats the collectives (simulated)."""
