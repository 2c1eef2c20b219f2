"""--result-group: the loopback RESULT group is checked before anything starts."""

import ipaddress

import pytest

from host_stack.ina import result_group
from host_stack.ina.addresses import AddressMap
from host_stack.ina.result_group import SCOPE, join, parse_group, pick_group

NODES = ["s1", "w1", "w2"]
LOCAL = AddressMap({"s1": ("127.0.0.1", 5000), "w1": ("127.0.0.1", 5001),
                    "w2": ("127.0.0.1", 5002)})


def test_a_picked_group_is_organisation_local_with_a_port_and_joinable():
    host, port = pick_group()
    assert ipaddress.IPv4Address(host) in SCOPE and port > 0
    join((host, port)).close()


def test_no_group_is_picked_where_loopback_multicast_fails(monkeypatch):
    """Where a join fails (no multicast on this loopback), the launcher gets None and the PSs
    send each worker its copy, as before."""
    def refuse(group):
        raise OSError(19, "No such device")

    monkeypatch.setattr(result_group, "join", refuse)
    assert result_group.pick_group() is None


def test_a_group_needs_a_multicast_address_and_a_port():
    assert parse_group("239.255.1.2:47100", LOCAL, NODES) == ("239.255.1.2", 47100)
    for bad in ("127.0.0.1:47100", "239.255.1.2", "example.org:1"):
        with pytest.raises(ValueError, match="--result-group .*: expected GROUP:PORT"):
            parse_group(bad, LOCAL, NODES)


def test_a_group_is_refused_where_a_node_is_off_loopback():
    off = AddressMap({**LOCAL.entries, "w2": ("10.0.0.2", 5002)})
    with pytest.raises(ValueError, match="only for jobs on loopback; w2 is not on 127"):
        parse_group("239.255.1.2:47100", off, NODES)
