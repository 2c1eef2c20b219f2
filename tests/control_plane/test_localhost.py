"""Free ports, and naming the process that holds a taken one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from control_plane.localhost import free_ports, port_holder


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


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
