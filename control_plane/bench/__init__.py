"""The control plane's benchmarks (`inart bench solver`, `inart bench controller`)."""
