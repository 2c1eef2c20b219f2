# Developer tasks that need tools outside the Python environment.
#   make p4        rebuild p4src/build (bmv2 JSON, P4Info, build-info.json) with p4c
#   make p4-check  check that p4src/build matches the P4 sources (no p4c needed)
# P4C=/path/to/p4c overrides the compiler (default /opt/p4/bin/p4c); see README.md.
PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
P4C ?= /opt/p4/bin/p4c

.PHONY: p4 p4-check

p4:
	$(PYTHON) -m control_plane.p4_build --p4c $(P4C)

p4-check:
	$(PYTHON) -m control_plane.p4_build --check
