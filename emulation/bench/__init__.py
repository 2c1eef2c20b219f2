"""`inart bench` runs that need an emulated network: memory, pacing and calibration."""
