"""RSGCM: ring all-reduce schedules searched with MCTS on a device connection graph.

``space`` builds the actions (Algorithm 1) and the searching space, ``env`` simulates the data
distribution and the alpha-beta cost, ``mcts`` searches, ``baselines`` holds greedy, simulated
annealing and particle swarm over the same actions, ``classical`` the closed-form costs of
the classical schedules, and ``executor`` runs a found schedule with torch.distributed.
"""
