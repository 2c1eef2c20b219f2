"""Free ports, and naming the process that holds a taken one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from control_plane.localhost import SERVICE_PORT, free_ports, port_holder


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_free_ports_never_hand_out_the_services_default_port(monkeypatch) -> None:
    """The kernel may offer 50070 like any ephemeral port; an emulation's switch there would
    make a later `inart serve` fail, so it is skipped (a fake kernel offers it first)."""
    import control_plane.localhost as localhost

    offered = iter([SERVICE_PORT, 41001, SERVICE_PORT + 1])

    class Kernel:
        def bind(self, _address) -> None:
            self.port = next(offered)

        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", self.port)

        def close(self) -> None:
            pass

    monkeypatch.setattr(localhost.socket, "socket", Kernel)
    assert free_ports(2) == [41001, SERVICE_PORT + 1]


def test_port_holder_names_the_pid_and_command_line() -> None:
    with socket.socket() as mine:
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        assert port_holder(mine.getsockname()[1]).startswith(f"pid {os.getpid()} (")
    # another process: its pid and its own command line
    child = subprocess.Popen([sys.executable, "-c", "import socket,sys,time\n"
                              "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
                              "print(s.getsockname()[1], flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        held = port_holder(port)
        assert f"pid {child.pid} (" in held and "s.listen()" in held, held
    finally:
        child.kill()
        child.wait()
    assert "no listener found" in port_holder(port)
