"""Running schemes on an emulated network: one emulation, the sweep's emulate kind and the
search for the largest scale the machine still carries."""
