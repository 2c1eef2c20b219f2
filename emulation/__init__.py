"""inart emulation: Mininet networks of P4 switches, the embedded target, experiments."""
