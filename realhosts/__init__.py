"""inart on real hosts and standalone switches: the inventory, the launchers (network
namespaces here, SSH elsewhere) and `inart run --inventory`."""
