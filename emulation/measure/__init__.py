"""What an emulation measures: the InArt paper's metrics, the fidelity verdict and the
machine's cost (memory, CPU) of a run."""
