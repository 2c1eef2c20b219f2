"""The only way from a Plan to a switch: addressing, the entries a plan needs on every
switch, the pipeline config per target, and installation through a driver.  Nothing here
knows about Mininet: the emulation calls it like any other user."""
