"""p4runtime-shell, from its private environment (control_plane/shell_env), connects to the
embedded target, pushes a pipeline and inserts; the entry then forwards a packet."""

from __future__ import annotations

import subprocess
import threading

from control_plane.shell_env import python
from emulation.targets.embedded.bench import ipv4_udp
from emulation.targets.embedded.p4runtime_server import serve
from emulation.targets.embedded.pipeline import Switch
from tests.embedded.conftest import BUILD
from tests.embedded.test_p4runtime_server import free_port

SCRIPT = """
import sys
import p4runtime_sh.shell as sh
address, p4info, config = sys.argv[1:]
sh.setup(device_id=0, grpc_addr=address, election_id=(0, 1),
         config=sh.FwdPipeConfig(p4info, config))
try:
    te = sh.TableEntry("MyIngress.route")(action="MyIngress.forward")
    te.match["hdr.ipv4.dst_addr"] = "10.0.0.0/8"
    te.action["port"] = "3"
    te.action["dmac"] = "00:00:00:00:00:0b"
    te.insert()
    read = list(sh.TableEntry("MyIngress.route").read())
    print("read", len(read), read[0].action["port"].value.hex())
finally:
    sh.teardown()
"""


def test_p4runtime_shell_sets_pipeline_and_inserts() -> None:
    switch = Switch()
    address = f"127.0.0.1:{free_port()}"
    srv, _ = serve(switch, 0, address, threading.Lock())
    try:
        done = subprocess.run([str(python()), "-I", "-c", SCRIPT, address,
                               str(BUILD / "forward.p4info.txt"), str(BUILD / "forward.json")],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.splitlines()[-1].split() == ["read", "1", "03"]
        out = switch.process(1, ipv4_udp(b"hi", 5000, dst=0x0A000001))
        assert [port for port, _ in out] == [3]
    finally:
        srv.stop(grace=None)
