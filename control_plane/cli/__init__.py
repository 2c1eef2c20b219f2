"""The `inart` command line: the dispatcher and the control plane's own commands."""
