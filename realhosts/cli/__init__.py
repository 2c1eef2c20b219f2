"""The real-host commands: run and lab."""
