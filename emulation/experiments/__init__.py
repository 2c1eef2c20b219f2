"""The papers' experiments in emulation: InArt's emulation and testbed figures, the
head-to-head against collectives and several jobs at once."""
