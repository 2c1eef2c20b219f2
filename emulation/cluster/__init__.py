"""One emulation over several servers with Mininet's cluster edition (mininet.examples.cluster):
the servers file (spec), where each node runs (placement), what each server must have
(checks), and the remote nodes and tunnel links (nodes, tunnels)."""
