"""Replication order of the PRE, and the simple_switch_grpc-compatible command line."""

from __future__ import annotations

import pytest

from emulation.targets.embedded.__main__ import build_parsers, parse_interface
from emulation.targets.embedded.pre import ReplicationEngine


def test_replicas_grouped_by_instance_ports_ascending() -> None:
    pre = ReplicationEngine()
    pre.set_group(5, [(3, 1), (1, 2), (2, 1), (4, 2)])
    assert pre.replicate(5) == [(2, 1), (3, 1), (1, 2), (4, 2)]
    assert pre.replicate(6) == []
    pre.delete_group(5)
    assert pre.replicate(5) == []


def test_bmv2_style_arguments() -> None:
    main, target = build_parsers()
    args = main.parse_args(["--no-p4", "--device-id", "3", "-i", "1@veth0", "-i", "2@veth1",
                            "--log-level", "warn", "--thrift-port", "9090"])
    assert args.no_p4 and args.device_id == 3 and args.interface == [(1, "veth0"), (2, "veth1")]
    targs, _ = target.parse_known_args(["--grpc-server-addr", "127.0.0.1:50001",
                                        "--cpu-port", "255"])
    assert targs.grpc_server_addr == "127.0.0.1:50001"


@pytest.mark.parametrize("bad", ["veth0", "x@veth0", "1@", "@veth0"])
def test_bad_interface_spec_names_the_expected_form(bad: str) -> None:
    with pytest.raises(Exception, match="PORT@IFACE"):
        parse_interface(bad)


def test_p4runtime_listens_on_loopback_unless_told_otherwise() -> None:
    _, target = build_parsers()
    assert target.parse_known_args([])[0].grpc_server_addr == "127.0.0.1:9559"
    assert target.parse_known_args(["--grpc-server-addr", "0.0.0.0:9559"])[0] \
        .grpc_server_addr == "0.0.0.0:9559"
