"""inart host stack: INA wire protocol, transport, PS and worker processes, collectives."""
