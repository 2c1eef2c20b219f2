"""A loaded v1model program and the simple_switch packet flow around it.

``Program`` compiles a bmv2 JSON document once (parser, deparser, actions, tables, conditionals,
checksums).  ``Switch.process(port, frame)`` runs one frame through parser -> ingress -> PRE ->
egress -> deparser exactly in simple_switch's order and returns the frames to transmit.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from emulation.targets.embedded import json_loader as jl
from emulation.targets.embedded.actions import (
    DROP_PORT,
    Action,
    PrimitiveCompiler,
    build_resources,
    compile_actions,
    exec_function,
)
from emulation.targets.embedded.codec import emit_expr
from emulation.targets.embedded.expressions import Namespace
from emulation.targets.embedded.json_loader import PipelineError
from emulation.targets.embedded.parser import compile_parser, error_names
from emulation.targets.embedded.pre import ReplicationEngine
from emulation.targets.embedded.tables import Table

log = logging.getLogger("inart.embedded")

# standard_metadata.instance_type values of simple_switch
NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
MAX_REENTRIES = 16  # resubmit/recirculate loops per frame, as a safety bound

# Every way a frame, or one copy of it, vanishes inside the target: the keys of Switch.drops
# (the port loop counts the last four).  Served by emulation/targets/embedded/stats.py.
DROP_REASONS = {
    "no_pipeline": "arrived before a pipeline was set",
    "ingress_drop": "the program dropped it in ingress (mark_to_drop: egress_spec = 511)",
    "egress_drop": "the program dropped a copy in egress (mark_to_drop)",
    "mcast_group_unknown": "multicast to a group id that has no group installed",
    "mcast_group_empty": "multicast to a group with no replicas",
    "clone_session_unknown": "cloned to a session that is not installed (the copy is lost)",
    "engine_error": "processing raised (an assert in the program, a fault in the engine)",
    "no_such_port": "sent to an egress port that no interface is attached to",
    "tx_error": "the interface refused the frame",
    "rx_error": "receiving on an interface failed",
    "rx_overflow": "the kernel dropped it: the port's receive buffer was full",
}

STD_FIELDS = ("ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
              "mcast_grp", "egress_rid", "parser_error", "checksum_error")

SUPPORTED_KEYS = {
    "program", "__meta__", "header_types", "headers", "header_stacks", "header_union_types",
    "header_unions", "header_union_stacks", "field_lists", "errors", "enums", "parsers",
    "parse_vsets", "deparsers", "meter_arrays", "counter_arrays", "register_arrays",
    "calculations", "learn_lists", "actions", "pipelines", "checksums", "force_arith",
    "extern_instances", "field_aliases",
}


class Conditional:
    """An if node of a control graph."""

    def __init__(self, cj: dict[str, Any], pc: PrimitiveCompiler, where: str) -> None:
        self.name = cj["name"]
        expr = pc.value(cj["expression"], where, None)
        self.cond = exec_function(f"def cond(S):\n    return {expr.src}", pc.ns, "cond", where)
        self.true_name, self.false_name = cj.get("true_next"), cj.get("false_next")
        self.true_node: Any = None
        self.false_node: Any = None

    def link(self, nodes: dict[str, Any]) -> None:
        self.true_node = nodes.get(self.true_name) if self.true_name else None
        self.false_node = nodes.get(self.false_name) if self.false_name else None

    def run(self, S: list[Any]) -> Any:
        return self.true_node if self.cond(S) else self.false_node


@dataclass
class Control:
    name: str
    init: Any
    tables: dict[str, Table] = field(default_factory=dict)

    def apply(self, S: list[Any]) -> None:
        node = self.init
        while node is not None:
            node = node.run(S)
        S[jl.EXIT] = False


class Program:
    """Everything compiled from one bmv2 JSON document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        for key in doc:
            if key not in SUPPORTED_KEYS:
                raise PipelineError(key, f"top-level attribute {key!r} is not supported")
        jl.reject_nonempty(doc, ("learn_lists", "extern_instances"))
        self.doc = doc
        self.layout = jl.build_layout(doc)
        self.ns = Namespace()
        self.res = build_resources(doc, self.layout, self.ns)
        self.pc = PrimitiveCompiler(self.layout, self.ns, self.res)
        self.actions: dict[int, Action] = compile_actions(doc, self.pc)
        self.parse = compile_parser(self.pc, doc)
        self.noerr = self.ns.values["NOERR"]
        self.error_names = error_names(self.layout.errors)
        self.deparse = self.compile_deparser(doc)
        self.controls: dict[str, Control] = {}
        for i, pj in enumerate(doc["pipelines"]):
            self.controls[pj["name"]] = self.compile_control(pj, f"pipelines[{i}]")
        for needed in ("ingress", "egress"):
            if needed not in self.controls:
                raise PipelineError("pipelines", f"v1model needs a pipeline named {needed!r}")
        self.tables = {t.name: t for c in self.controls.values() for t in c.tables.values()}
        self.verify_checksums, self.update_checksums = self.compile_checksums(doc)
        std = self.layout.headers.get("standard_metadata")
        if std is None:
            raise PipelineError("headers", "v1model needs a 'standard_metadata' instance")
        self.std = {f: self.std_slot(std, f) for f in STD_FIELDS}

    def std_slot(self, std: jl.HeaderInfo, name: str) -> int:
        """Slot of a standard metadata field, via aliases, or a private scratch slot."""
        if name in std.slots:
            return std.slots[name]
        for prefix in ("intrinsic_metadata", "standard_metadata", "queueing_metadata"):
            alias = self.layout.aliases.get(f"{prefix}.{name}")
            if alias is not None:
                return self.layout.field_slot(alias, f"field_aliases {prefix}.{name}")[0]
        self.layout.template.append(0)
        return len(self.layout.template) - 1

    def compile_deparser(self, doc: dict[str, Any]) -> Any:
        deps = doc["deparsers"]
        if len(deps) != 1:
            raise PipelineError("deparsers", f"expected exactly one deparser, found {len(deps)}")
        where = f"deparsers[0] {deps[0].get('name')!r}"
        if deps[0].get("primitives"):
            raise PipelineError(where, "statements other than emit in the deparser are not "
                                       "supported")
        src = ["def deparse(S):", "    out = []"]
        for name in deps[0].get("order", []):
            hdr = self.layout.header(name, where)
            src.append(f"    if S[{hdr.valid_slot}]: out.append({emit_expr(hdr, self.ns)})")
        src.append("    return out")
        return exec_function("\n".join(src), self.ns, "deparse", where)

    def compile_control(self, pj: dict[str, Any], where: str) -> Control:
        where = f"{where} {pj.get('name')!r}"
        if pj.get("action_profiles"):
            raise PipelineError(where, "action profiles are not supported")
        if pj.get("action_calls"):
            raise PipelineError(where, "action_calls are not supported")
        nodes: dict[str, Any] = {}
        tables: dict[str, Table] = {}
        for i, tj in enumerate(pj.get("tables", [])):
            t = Table(tj, self.layout, self.ns, self.actions,
                      f"{where} tables[{i}] {tj.get('name')!r}")
            nodes[t.name] = tables[t.name] = t
        for i, cj in enumerate(pj.get("conditionals", [])):
            nodes[cj["name"]] = Conditional(cj, self.pc,
                                            f"{where} conditionals[{i}] {cj.get('name')!r}")
        for node in nodes.values():
            node.link(nodes)
        init = pj.get("init_table")
        if init is not None and init not in nodes:
            raise PipelineError(where, f"unknown init_table {init!r}")
        return Control(pj["name"], nodes.get(init) if init else None, tables)

    def compile_checksums(self, doc: dict[str, Any]) -> tuple[Any, Any]:
        verify = ["def verify(S):", "    bad = 0"]
        update = ["def update(S):"]
        for i, cj in enumerate(doc.get("checksums", [])):
            where = f"checksums[{i}] {cj.get('name')!r}"
            slot, width, _ = self.layout.field_slot(cj["target"], where)
            calc = self.res.calculations.get(cj.get("calculation"))
            if calc is None:
                raise PipelineError(where, f"unknown calculation {cj.get('calculation')!r}")
            c = self.ns.bind("calc", calc)
            cond = "True"
            if cj.get("if_cond") is not None:
                cond = self.pc.value(cj["if_cond"], where, None).src
            mask = (1 << width) - 1
            if cj.get("verify", True):
                verify.append(f"    if ({cond}) and ({c}(S) & {mask}) != S[{slot}]: bad = 1")
            if cj.get("update", True):
                update.append(f"    if {cond}: S[{slot}] = {c}(S) & {mask}")
        verify.append("    return bad")
        update.append("    return None")
        return (exec_function("\n".join(verify), self.ns, "verify", "checksums"),
                exec_function("\n".join(update), self.ns, "update", "checksums"))


def load_program(data: bytes | str) -> Program:
    """Compile a bmv2 JSON document; any defect becomes a PipelineError naming its place."""
    doc = jl.parse_json_bytes(data)
    try:
        return Program(doc)
    except PipelineError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise PipelineError("bmv2 JSON", f"malformed document ({type(exc).__name__}: {exc})") \
            from exc


class Switch:
    """One switch instance: a program, its PRE, and packet statistics.

    ``stats``: frames into (rx) and out of (tx) the pipeline; ``drops``: frames and copies
    that vanished, by DROP_REASONS key; ``errors``: frames that entered ingress flagged with a
    parser error (``parser_error.<name>``) or a failed checksum verification
    (``checksum_error``) -- the program decides their fate, as in simple_switch.
    """

    def __init__(self, program: Program | None = None) -> None:
        self.program = program
        self.pre = ReplicationEngine()
        self.stats: Counter[str] = Counter()
        self.drops: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()

    def snapshot(self) -> dict[str, Any]:
        """The statistics as a JSON-able document; every drop reason is present."""
        return {"pipeline": self.program is not None, "rx": self.stats["rx"],
                "tx": self.stats["tx"], "drops": {r: self.drops[r] for r in DROP_REASONS},
                "errors": dict(sorted(self.errors.items()))}

    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Run one received frame; returns (egress_port, frame) pairs. Never raises."""
        self.stats["rx"] += 1
        if self.program is None:
            self.drops["no_pipeline"] += 1
            return []
        out: list[tuple[int, bytes]] = []
        try:
            self.ingress(port, frame, out, None, 0)
        except Exception:  # a bad frame or an assert must not stop the switch
            self.drops["engine_error"] += 1
            log.debug("frame from port %d raised", port, exc_info=True)
            return []
        self.stats["tx"] += len(out)
        return out

    def fresh_state(self, port: int, frame: bytes, instance: int) -> list[Any]:
        prog = self.program
        assert prog is not None
        S = prog.layout.template[:]
        std = prog.std
        S[std["ingress_port"]] = port
        S[std["packet_length"]] = len(frame)
        S[std["instance_type"]] = instance
        S[jl.INGRESS_LEN] = len(frame)
        return S

    def parse_into(self, S: list[Any], frame: bytes) -> memoryview:
        prog = self.program
        assert prog is not None
        off, S[prog.std["parser_error"]] = prog.parse(S, frame)
        S[prog.std["checksum_error"]] = prog.verify_checksums(S)
        return memoryview(frame)[off:]

    def count_errors(self, S: list[Any]) -> None:
        """Count a received frame's parser error and checksum failure (not its clones')."""
        prog = self.program
        assert prog is not None
        err = S[prog.std["parser_error"]]
        if err != prog.noerr:
            self.errors[f"parser_error.{prog.error_names.get(err, err)}"] += 1
        if S[prog.std["checksum_error"]]:
            self.errors["checksum_error"] += 1

    def ingress(self, port: int, frame: bytes, out: list[tuple[int, bytes]],
                preserved: tuple[list[int], list[Any], int] | None, depth: int) -> None:
        prog = self.program
        assert prog is not None
        std = prog.std
        instance = preserved[2] if preserved else NORMAL
        S = self.fresh_state(port, frame, instance)
        if preserved:
            for slot, value in zip(preserved[0], preserved[1], strict=True):
                S[slot] = value
        payload = self.parse_into(S, frame)
        if S[std["parser_error"]] != prog.noerr or S[std["checksum_error"]]:
            self.count_errors(S)
        prog.controls["ingress"].apply(S)
        if S[jl.CLONE_SID]:
            self.clone_ingress(S, port, frame, out)
            S[jl.CLONE_SID] = S[jl.CLONE_FL] = 0
        if S[jl.RESUBMIT_FL] and depth < MAX_REENTRIES:
            slots = prog.res.field_lists.get(S[jl.RESUBMIT_FL] - 1, [])
            self.ingress(port, frame, out, (slots, [S[s] for s in slots], RESUBMIT), depth + 1)
            return
        mgid = S[std["mcast_grp"]]
        if mgid:
            copies = self.pre.replicate(mgid)
            if not copies:
                self.drops["mcast_group_empty" if mgid in self.pre.groups
                           else "mcast_group_unknown"] += 1
            for egress_port, rid in copies:
                C = S[:]
                C[std["egress_rid"]] = rid
                C[std["instance_type"]] = REPLICATION
                self.egress(C, egress_port, payload, out, depth)
            return
        egress_spec = S[std["egress_spec"]]
        if egress_spec == DROP_PORT:
            self.drops["ingress_drop"] += 1
            return
        S[std["instance_type"]] = NORMAL
        self.egress(S, egress_spec, payload, out, depth)

    def clone_ingress(self, S: list[Any], port: int, frame: bytes,
                      out: list[tuple[int, bytes]]) -> None:
        prog = self.program
        assert prog is not None
        session = self.pre.clones.get(S[jl.CLONE_SID])
        if session is None:
            self.drops["clone_session_unknown"] += 1
            return
        slots = prog.res.field_lists.get(S[jl.CLONE_FL], [])
        for egress_port, rid in session.replicas:
            C = self.fresh_state(port, frame, INGRESS_CLONE)
            payload = self.parse_into(C, frame)
            for s in slots:
                C[s] = S[s]
            C[prog.std["instance_type"]] = INGRESS_CLONE
            C[prog.std["egress_rid"]] = rid
            if session.packet_length_bytes:
                C[jl.TRUNCATE] = session.packet_length_bytes
            self.egress(C, egress_port, payload, out, MAX_REENTRIES)

    def egress(self, S: list[Any], port: int, payload: memoryview,
               out: list[tuple[int, bytes]], depth: int) -> None:
        prog = self.program
        assert prog is not None
        std = prog.std
        S[std["egress_port"]] = port
        S[std["egress_spec"]] = 0
        S[std["packet_length"]] = S[jl.INGRESS_LEN]
        prog.controls["egress"].apply(S)
        if S[jl.CLONE_SID]:
            session = self.pre.clones.get(S[jl.CLONE_SID])
            S[jl.CLONE_SID] = 0
            if session is None:
                self.drops["clone_session_unknown"] += 1
            else:
                slots = prog.res.field_lists.get(S[jl.CLONE_FL], [])
                for egress_port, rid in session.replicas:
                    C = self.reset_metadata(S)
                    for s in slots:
                        C[s] = S[s]
                    C[std["instance_type"]] = EGRESS_CLONE
                    C[std["egress_rid"]] = rid
                    self.egress(C, egress_port, payload, out, MAX_REENTRIES)
        if S[std["egress_spec"]] == DROP_PORT:
            self.drops["egress_drop"] += 1
            return
        prog.update_checksums(S)
        parts = prog.deparse(S)
        parts.append(payload)
        frame = b"".join(parts)
        if S[jl.TRUNCATE]:
            frame = frame[:S[jl.TRUNCATE]]
        if S[jl.RECIRC_FL] and depth < MAX_REENTRIES:
            slots = prog.res.field_lists.get(S[jl.RECIRC_FL] - 1, [])
            self.ingress(port, frame, out, (slots, [S[s] for s in slots], RECIRC), depth + 1)
            return
        out.append((port, frame))

    def reset_metadata(self, S: list[Any]) -> list[Any]:
        """Copy of S with every metadata header back at its initial values."""
        prog = self.program
        assert prog is not None
        C = S[:]
        for hdr in prog.layout.headers.values():
            if hdr.metadata:
                n = len(hdr.widths)
                C[hdr.first_slot:hdr.first_slot + n] = [0] * n
        C[jl.CLONE_SID] = C[jl.CLONE_FL] = C[jl.RESUBMIT_FL] = C[jl.RECIRC_FL] = 0
        return C
