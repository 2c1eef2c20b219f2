# Developer tasks that need tools outside the Python environment.
#   make p4        rebuild p4src/build: the bmv2 build of p4src/v1model (bmv2 JSON, P4Info,
#                  build-info.json) with p4c, and the Tofino build of p4src/tna
#                  (p4src/build/tna/) with p4c's Tofino back end
#   make p4-check  check that both builds match the P4 sources (no compiler needed)
#   make testgen   regenerate the P4Testgen PTF tests of the v1model program
#                  (tests/ptf_testgen/) with p4testgen (P4TESTGEN=/path/to/p4testgen)
#   make p4runtime-stubs  regenerate the P4Runtime API stubs (control_plane/p4runtime_api) with
#                  protoc and grpc_python_plugin
# P4C=/path/to/p4c and BF_P4C=/path/to/bf-p4c (the SDE's), or a p4c driver with p4c-barefoot
# beside it, or a p4c build tree with p4c-barefoot and bfas built, override the compilers
# (defaults: /opt/p4/bin/p4c; bf-p4c or p4c on PATH, in /opt/p4/bin or $SDE_INSTALL/bin);
# ARCH=v1model or ARCH=tna rebuilds one of them.  See README.md and docs/tofino.md.
PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
P4C ?= /opt/p4/bin/p4c
ARCH ?= all
BF_P4C ?=
P4TESTGEN ?= /opt/p4/bin/p4testgen

.PHONY: p4 p4-check testgen p4runtime-stubs

p4:
	$(PYTHON) -m control_plane.p4build --arch $(ARCH) --p4c $(P4C) $(if $(BF_P4C),--bf-p4c $(BF_P4C))

p4-check:
	$(PYTHON) -m control_plane.p4build --check

testgen:
	$(PYTHON) tests/ptf_testgen/generate.py --p4testgen $(P4TESTGEN)

p4runtime-stubs:
	$(PYTHON) -m control_plane.p4runtime_api.generate
