"""The committed P4 builds (bmv2 and Tofino) and how to remake them (`make p4`)."""
