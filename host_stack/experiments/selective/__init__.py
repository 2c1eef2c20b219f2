"""Selective reduce (seed paper 002): progress- and bandwidth-aware partial synchronisation.

grouping (ring cost, BAG, partial-reduce groups), waiting (online CDF, BPAWR), controller
(the decision loop shared by the simulator and the real run), simulator, experiment, real.
"""
