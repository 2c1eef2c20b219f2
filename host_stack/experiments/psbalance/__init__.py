"""Network-aware parameter-server load balancing (Cai et al., ZTE Comm. 2023).

One worker and one PS per node.  loads (Alg. 1, closed form, Average, Elastic), slices
(Alg. 2), probe (forecast/probe throughput measurement), partition (the host stack's x_s
source), netlab (namespaces + veth + tc), node/cluster (the real run), experiment.
"""
