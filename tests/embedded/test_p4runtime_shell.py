"""p4runtime-shell (the project's P4Runtime client) connects to the target and inserts."""

from __future__ import annotations

import threading

from emulation.targets.embedded.bench import ipv4_udp
from emulation.targets.embedded.p4runtime_server import serve
from emulation.targets.embedded.pipeline import Switch
from tests.embedded.conftest import BUILD
from tests.embedded.test_p4runtime_server import free_port


def test_p4runtime_shell_sets_pipeline_and_inserts() -> None:
    import p4runtime_sh.shell as sh

    switch = Switch()
    address = f"127.0.0.1:{free_port()}"
    srv, _ = serve(switch, 0, address, threading.Lock())
    try:
        sh.setup(device_id=0, grpc_addr=address, election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(BUILD / "forward.p4info.txt"),
                                         str(BUILD / "forward.json")))
        try:
            te = sh.TableEntry("MyIngress.route")(action="MyIngress.forward")
            te.match["hdr.ipv4.dst_addr"] = "10.0.0.0/8"
            te.action["port"] = "3"
            te.action["dmac"] = "00:00:00:00:00:0b"
            te.insert()
            read = list(sh.TableEntry("MyIngress.route").read())
            assert len(read) == 1 and read[0].action["port"].value == b"\x03"
        finally:
            sh.teardown()
        out = switch.process(1, ipv4_udp(b"hi", 5000, dst=0x0A000001))
        assert [port for port, _ in out] == [3]
    finally:
        srv.stop(grace=None)
