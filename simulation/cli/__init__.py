"""The simulation's command: simulate."""
