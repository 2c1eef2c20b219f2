"""The emulation's commands: demo, emulate, ptf, shell and switch."""
