"""Loss, duplication and reordering on chosen links of an emulated network, each way.

Every frame leaving either end of an impaired link meets an nftables netdev egress chain on
that interface (``egress_rules``): dropped with ``loss`` percent, otherwise held back with
``reorder`` percent (stolen to a hold veth, sent again ``delay_ms`` later by
emulation/network/hold_line.py, so later frames overtake it), otherwise duplicated with ``dup``
percent.  Not tc netem: netem and the tc classifiers are missing from some kernels (this
machine's among them) and no qdisc that is left holds a frame for a fixed time; nftables
egress hooks (Linux >= 5.16) are there, and frames a switch sends through its raw socket pass
them like a host's.  Frames the rules let through again (a duplicate's copy, a held frame
sent back) carry ``MARK`` and pass the chain once without a second draw.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from control_plane.model.topology import Topology

MARK = 0x494E  # skb mark of frames already drawn (duplicates' copies, released held frames)
PARTS = 100000  # probabilities in parts per PARTS, as nftables' numgen draws them
HOLD_SUFFIX, PEER_SUFFIX = "h", "p"  # the hold veth of interface X: Xh (rules) -> Xp (line)
IFNAMSIZ = 15  # the kernel's longest interface name


class ImpairError(ValueError):
    """An impairment option or link outside what the emulation can impose."""


@dataclass(frozen=True)
class LinkImpairment:
    """Percentages per frame and direction on ``links`` (None: every link)."""

    loss: float = 0.0
    dup: float = 0.0
    reorder: float = 0.0
    delay_ms: float = 2.0  # how long a reordered frame is held back
    links: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        for name in ("loss", "dup", "reorder"):
            value = getattr(self, name)
            if not 0 <= value < 100:
                raise ImpairError(f"{name} {value}: expected a percentage 0 <= PCT < 100")
        if not 0 < self.delay_ms <= 1000:
            raise ImpairError(f"reorder delay {self.delay_ms} ms: expected 0 < MS <= 1000")

    @property
    def active(self) -> bool:
        return bool(self.loss or self.dup or self.reorder)

    def describe(self) -> str:
        """'loss 1%, reorder 5% (2 ms)' for logs and result files; 'none' when inactive."""
        parts = [f"loss {self.loss:g}%"] if self.loss else []
        parts += [f"dup {self.dup:g}%"] if self.dup else []
        parts += [f"reorder {self.reorder:g}% ({self.delay_ms:g} ms)"] if self.reorder else []
        return ", ".join(parts) or "none"

    def chosen(self, topology: Topology) -> set[frozenset[str]]:
        """The impaired links: the named ones (either direction), or every link."""
        every = {frozenset(ab) for ab in topology.links}
        if self.links is None:
            return every
        chosen = {frozenset(ab) for ab in self.links}
        unknown = sorted("-".join(sorted(ab)) for ab in chosen - every)
        if unknown:
            raise ImpairError(f"impaired links {', '.join(unknown)}: not links of "
                              f"{topology.name} (expected node pairs joined by a link, e.g. "
                              f"{'-'.join(sorted(next(iter(every))))})")
        return chosen


NO_IMPAIRMENT = LinkImpairment()


def hold_names(interface: str) -> tuple[str, str]:
    """The hold veth pair of ``interface``: the end the rules steal to, the end the line reads."""
    hold, peer = interface + HOLD_SUFFIX, interface + PEER_SUFFIX
    if len(peer) > IFNAMSIZ:
        raise ImpairError(f"interface {interface}: its hold veth name {peer!r} is longer "
                          f"than the kernel's {IFNAMSIZ} characters")
    return hold, peer


def egress_rules(table: str, interface: str, imp: LinkImpairment) -> str:
    """The nft script of ``interface``'s impaired egress (``nft -f``)."""
    def draw(pct: float) -> str:
        return f"numgen random mod {PARTS} lt {min(round(pct * PARTS / 100), PARTS - 1)}"

    rule = f"add rule netdev {table} eg"
    lines = [f"add table netdev {table}",
             f"add chain netdev {table} eg {{ type filter hook egress device \"{interface}\" "
             f"priority 0; }}"]
    if imp.dup or imp.reorder:
        lines.append(f"{rule} meta mark {MARK:#x} meta mark set 0 accept")
    if imp.loss:
        lines.append(f"{rule} {draw(imp.loss)} counter drop")
    if imp.reorder:
        lines.append(f"{rule} {draw(imp.reorder)} counter fwd to \"{hold_names(interface)[0]}\"")
    if imp.dup:
        lines.append(f"{rule} {draw(imp.dup)} counter meta mark set {MARK:#x} "
                     f"dup to \"{interface}\" meta mark set 0")
    return "\n".join(lines) + "\n"


def percent(flag: str):
    """An argparse type for ``flag``: a percentage 0 <= PCT < 100."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 <= value < 100:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: expected a percentage "
                                             f"0 <= PCT < 100")
        return value
    return parse


def delay_ms(text: str) -> float:
    """--reorder-delay: milliseconds, 0 < MS <= 1000."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1000:
        raise argparse.ArgumentTypeError(f"--reorder-delay {text!r}: expected milliseconds "
                                         f"0 < MS <= 1000")
    return value


def link_list(text: str) -> list[tuple[str, str]]:
    """--impair-links: 'A-B,C-D' -> [(A, B), (C, D)] (node ids may not contain '-')."""
    links = []
    for item in filter(None, text.split(",")):
        a, sep, b = item.partition("-")
        if not sep or not a or not b or "-" in b:
            raise argparse.ArgumentTypeError(f"--impair-links {item!r}: expected NODE-NODE")
        links.append((a, b))
    if not links:
        raise argparse.ArgumentTypeError("--impair-links: expected at least one NODE-NODE")
    return links


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--loss, --dup, --reorder, --reorder-delay, --impair-links."""
    parser.add_argument("--loss", type=percent("--loss"), default=0.0, metavar="PCT",
                        help="drop PCT%% of the frames each way on the impaired links")
    parser.add_argument("--dup", type=percent("--dup"), default=0.0, metavar="PCT",
                        help="send PCT%% of the frames twice, each way on the impaired links")
    parser.add_argument("--reorder", type=percent("--reorder"), default=0.0, metavar="PCT",
                        help="hold PCT%% of the frames back by --reorder-delay, each way on the "
                             "impaired links, so later ones overtake them")
    parser.add_argument("--reorder-delay", type=delay_ms, default=2.0, metavar="MS",
                        help="how long --reorder holds a frame (default 2 ms)")
    parser.add_argument("--impair-links", type=link_list, default=None, metavar="A-B,...",
                        help="the links --loss/--dup/--reorder act on, by their end nodes "
                             "(default: every link)")


def from_args(args: argparse.Namespace) -> LinkImpairment:
    """The impairment ``add_arguments`` parsed (defaults where a command lacks an option)."""
    links = getattr(args, "impair_links", None)
    return LinkImpairment(loss=getattr(args, "loss", 0.0), dup=getattr(args, "dup", 0.0),
                          reorder=getattr(args, "reorder", 0.0),
                          delay_ms=getattr(args, "reorder_delay", 2.0),
                          links=None if links is None else tuple(links))


def rule_counts(nft_json: str) -> dict[str, int]:
    """Frames dropped, held and duplicated so far, from ``nft -j list table`` of one
    interface's rules (their counters)."""
    counts = {"dropped": 0, "held": 0, "duplicated": 0}
    fate = {"drop": "dropped", "fwd": "held", "dup": "duplicated"}
    for item in json.loads(nft_json).get("nftables", []):
        exprs = item.get("rule", {}).get("expr", [])
        packets = [e["counter"]["packets"] for e in exprs if "counter" in e]
        kinds = [fate[k] for e in exprs for k in e if k in fate]
        if packets and kinds:
            counts[kinds[0]] += packets[0]
    return counts


def frames_since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """A run's row fields from the rules' counts at its start and end: frames_dropped, ..."""
    return {f"frames_{k}": n - before[k] for k, n in after.items()}
