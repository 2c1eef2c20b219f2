"""`inart shell --address`: p4runtime-shell on a switch started alone with `inart switch`, run
without a terminal (-c / --script), reading a table and a counter of the program it runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from control_plane.localhost import free_port
from control_plane.repo import REPO, child_env
from emulation.cli.shell import Endpoint, election_id, endpoint, shell_args, shell_command
from emulation.targets import get_target
from tests.foreground import inart_foreground

INSERT = """
te = TableEntry("InaIngress.route_dst")(action="InaIngress.set_next_hop")
te.match["dst_addr"] = "10.0.0.7/32"
te.action["port"] = "3"
te.action["dst_mac"] = "00:00:00:00:00:07"
te.action["src_mac"] = "00:00:00:00:00:01"
te.insert()
"""
READ = """
import ipaddress
entries = list(TableEntry("InaIngress.route_dst").read())
print("route_dst entries:", len(entries),
      ipaddress.ip_address(entries[0].match["dst_addr"].lpm.value))
events = list(CounterEntry("InaIngress.events").read())
print("events cells:", len(events), "packets:", sum(c.packet_count for c in events))
"""


def shell(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", "shell", *args],
                          input=stdin, capture_output=True, text=True, cwd=REPO,
                          env=child_env(), timeout=120)


def test_shell_attaches_to_a_standalone_switch_by_address(tmp_path) -> None:
    reason = get_target("embedded").unavailable()
    if reason:
        pytest.skip(reason)
    grpc = f"127.0.0.1:{free_port()}"
    with inart_foreground("switch", "--listen", grpc, "--device-id", "3") as line:
        assert "ready" in line, line
        bare = shell("--address", grpc, "--device-id", "3", "-c", "print(1)")
        assert bare.returncode == 2
        assert "runs no P4 program yet" in bare.stderr and "--push" in bare.stderr

        pushed = shell("--address", grpc, "--device-id", "3", "--push", "-c", INSERT)
        assert pushed.returncode == 0, pushed.stderr

        script = tmp_path / "read.py"
        script.write_text(READ)
        read = shell("--address", grpc, "--device-id", "3", "--script", str(script))
        assert read.returncode == 0, read.stderr
        assert "route_dst entries: 1" in read.stdout and " 10.0.0.7\n" in read.stdout
        assert "events cells: 16 packets: 0" in read.stdout

        piped = shell("--address", grpc, "--device-id", "3", "--script", "-", stdin=READ)
        assert "route_dst entries: 1" in piped.stdout, piped.stderr

        failing = shell("--address", grpc, "--device-id", "3", "-c", "TableEntry('nope')")
        assert failing.returncode == 1 and "nope" in failing.stderr

        wrong_device = shell("--address", grpc, "--device-id", "4", "-c", "print(1)")
        assert wrong_device.returncode == 2 and "inart shell: error:" in wrong_device.stderr


def test_shell_endpoint_names_the_bad_field() -> None:
    assert endpoint(None, "10.0.0.1:9559", None) == Endpoint("10.0.0.1:9559", 0)
    assert endpoint(None, "h:1", 7) == Endpoint("h:1", 7)
    for args, field in (((None, "nohost", None), "--address 'nohost': expected HOST:PORT"),
                        ((None, "h:70000", None), "port 1-65535"),
                        (("v1", "h:1", None), "not both"),
                        ((None, None, None), "or --address HOST:PORT"),
                        ((None, "h:1", -1), "--device-id -1")):
        with pytest.raises(ValueError, match=field):
            endpoint(*args)
    assert election_id("0,2") == (0, 2) and election_id("5") == (0, 5)
    with pytest.raises(ValueError, match="--election-id 'a,b'"):
        election_id("a,b")
    args = shell_args(Endpoint("h:1", 2), "0,2")
    assert args[args.index("--grpc-addr") + 1] == "h:1" and "--config" not in args
    cmd = shell_command("/env/bin/python", args)
    assert cmd[:4] == ["/env/bin/python", "-I", "-m", "p4runtime_sh"] and cmd[4:] == args
