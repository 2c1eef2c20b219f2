"""Selective reduce: progress- and bandwidth-aware partial model synchronisation (its paper).

grouping (ring cost, BAG, partial-reduce groups), waiting (online CDF, BPAWR), controller
(the decision loop shared by the simulator and the real run), simulator, experiment, real.
"""
