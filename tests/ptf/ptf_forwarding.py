"""PTF: plain IPv4 forwarding (route_pair before route_dst) and drops of unknown traffic."""

from __future__ import annotations

from ina_base import PS1, PS2, SWITCH_MAC, WORKERS, InaTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw


def udp(src_mac, dst_mac, src_ip, dst_ip, ttl=64, payload=b"hello inart"):
    return (Ether(src=src_mac, dst=dst_mac) / IP(src=src_ip, dst=dst_ip, ttl=ttl, id=9)
            / UDP(sport=5000, dport=6000) / Raw(payload))


class RouteByDestination(InaTest):
    """route_dst forwards by destination, rewrites both MACs, decrements TTL."""

    def runTest(self):
        self.add_host_routes()
        w1 = WORKERS[0]
        self.send(w1.port, udp(w1.mac, SWITCH_MAC, w1.ip, PS1.ip))
        self.expect_exactly([(PS1.port, udp(SWITCH_MAC, PS1.mac, w1.ip, PS1.ip, ttl=63))])
        self.send(PS2.port, udp(PS2.mac, SWITCH_MAC, PS2.ip, w1.ip, ttl=5))
        self.expect_exactly([(w1.port, udp(SWITCH_MAC, w1.mac, PS2.ip, w1.ip, ttl=4))])
        self.assert_events()


class RoutePairBeforeDestination(InaTest):
    """A (src, dst) entry wins over the dst-only fallback; other sources still use it."""

    def runTest(self):
        self.add_host_routes()
        w1, w2 = WORKERS[0], WORKERS[1]
        detour_mac = "00:00:0a:0f:0f:0f"
        self.client.insert_table_entry(
            "InaIngress.route_pair", {"src_addr": w1.ip, "dst_addr": PS1.ip},
            "InaIngress.set_next_hop", {"port": PS2.port, "dst_mac": detour_mac,
                                     "src_mac": SWITCH_MAC})
        self.send(w1.port, udp(w1.mac, SWITCH_MAC, w1.ip, PS1.ip))
        self.expect_exactly([(PS2.port, udp(SWITCH_MAC, detour_mac, w1.ip, PS1.ip, ttl=63))])
        self.send(w2.port, udp(w2.mac, SWITCH_MAC, w2.ip, PS1.ip))
        self.expect_exactly([(PS1.port, udp(SWITCH_MAC, PS1.mac, w2.ip, PS1.ip, ttl=63))])
        self.assert_events()


class PrefixRoute(InaTest):
    """route_dst is longest-prefix: a /24 carries a whole subnet, a /32 overrides it."""

    def runTest(self):
        w1, w2 = WORKERS[0], WORKERS[1]
        self.client.insert_table_entry(
            "InaIngress.route_dst", {"dst_addr": "10.0.0.0/24"}, "InaIngress.set_next_hop",
            {"port": w1.port, "dst_mac": w1.mac, "src_mac": SWITCH_MAC})
        self.client.insert_table_entry(
            "InaIngress.route_dst", {"dst_addr": f"{w2.ip}/32"}, "InaIngress.set_next_hop",
            {"port": w2.port, "dst_mac": w2.mac, "src_mac": SWITCH_MAC})
        self.send(PS1.port, udp(PS1.mac, SWITCH_MAC, PS1.ip, "10.0.0.77"))
        self.expect_exactly([(w1.port, udp(SWITCH_MAC, w1.mac, PS1.ip, "10.0.0.77", ttl=63))])
        self.send(PS1.port, udp(PS1.mac, SWITCH_MAC, PS1.ip, w2.ip))
        self.expect_exactly([(w2.port, udp(SWITCH_MAC, w2.mac, PS1.ip, w2.ip, ttl=63))])
        self.assert_events()


class UnknownTrafficDropped(InaTest):
    """No route, non-IPv4, and expiring TTL are dropped, each under its own counter."""

    def runTest(self):
        self.add_host_routes()
        w1 = WORKERS[0]
        self.send(w1.port, udp(w1.mac, SWITCH_MAC, w1.ip, "192.168.7.7"))
        self.send(w1.port, udp(w1.mac, SWITCH_MAC, w1.ip, "192.168.7.8"))
        self.send(w1.port, Ether(src=w1.mac, dst=SWITCH_MAC, type=0x88B5) / Raw(b"x" * 50))
        self.send(w1.port, udp(w1.mac, SWITCH_MAC, w1.ip, PS1.ip, ttl=1))
        self.expect_nothing()
        self.assert_events(no_route_drop=2, not_ipv4_drop=1, ttl_expired_drop=1)
