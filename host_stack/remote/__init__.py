"""The hosts a job's processes run on, below both real hosts and the emulation's cluster mode:
a network namespace here or a machine reached over SSH."""
