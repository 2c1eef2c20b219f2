"""The BF Runtime driver: bf_switchd's own gRPC API (port 50052) on a Tofino switch or the
Tofino model, through the ``bfrt_grpc`` package of the user's SDE (found through
``$SDE_INSTALL``; never vendored here).  ``sde`` finds that package, ``info`` reads bfrt.json,
``entities`` builds BF Runtime table entries from the deploy layer's entries, ``client`` holds
one session, ``install`` pushes the program, brings ports up and installs a plan."""
