"""Packet replication engine: multicast groups and clone sessions (P4Runtime PRE entries).

Replication order follows bmv2's simple PRE as programmed through PI: replicas are grouped by
instance (egress_rid) in order of first appearance, ports ascending within an instance.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CloneSession:
    session_id: int
    replicas: list[tuple[int, int]]
    class_of_service: int = 0
    packet_length_bytes: int = 0


@dataclass
class ReplicationEngine:
    groups: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    expanded: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    clones: dict[int, CloneSession] = field(default_factory=dict)

    def set_group(self, group_id: int, replicas: list[tuple[int, int]]) -> None:
        """Install or replace group ``group_id`` with (egress_port, instance) replicas."""
        self.groups[group_id] = list(replicas)
        self.expanded[group_id] = self.order(replicas)

    def delete_group(self, group_id: int) -> None:
        del self.groups[group_id]
        del self.expanded[group_id]

    @staticmethod
    def order(replicas: list[tuple[int, int]]) -> list[tuple[int, int]]:
        by_rid: dict[int, set[int]] = {}
        for port, rid in replicas:
            by_rid.setdefault(rid, set()).add(port)
        return [(port, rid) for rid, ports in by_rid.items() for port in sorted(ports)]

    def replicate(self, group_id: int) -> list[tuple[int, int]]:
        """(egress_port, egress_rid) copies for a group; an unknown group gives none."""
        return self.expanded.get(group_id, [])
