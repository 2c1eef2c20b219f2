"""A loaded v1model program and the simple_switch packet flow around it.

``Program`` compiles a bmv2 JSON document once: parser, checksums, deparser, actions, and each
control (ingress, egress) into ONE Python function whose control graph is nested code, tables
looked up in place (see controls.py).  ``Switch.process(port, frame)`` runs a frame through
parser -> ingress -> PRE -> egress -> deparser exactly in simple_switch's order and returns the
frames to transmit.

WHY a generated fast path: most frames are unicast with no clone, resubmit, recirculation or
truncation; for them ``Program.fast`` is one generated function (parse, verify, ingress,
egress, update, deparse inlined) that hands the frame to the general path below as soon as
one of those rare things is requested, at the exact point it is requested.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from emulation.targets.embedded import json_loader as jl
from emulation.targets.embedded.actions import (
    DROP_PORT,
    Action,
    PrimitiveCompiler,
    build_resources,
    compile_actions,
    compile_source,
)
from emulation.targets.embedded.codec import emit_expr, vl_emit_expr
from emulation.targets.embedded.controls import compile_control, exec_source
from emulation.targets.embedded.expressions import HRef, Namespace
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

Frames = list[tuple[int, bytes]]


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
        # a checksum over the payload reads the unparsed bytes, kept in a slot after parsing
        self.keeps_payload = any(c.payload for c in self.res.calculations.values())
        self.pc = PrimitiveCompiler(self.layout, self.ns, self.res)
        self.actions: dict[int, Action] = compile_actions(doc, self.pc)
        self.parse = compile_parser(self.pc, doc)
        self.noerr = self.ns.values["NOERR"]
        self.error_names = error_names(self.layout.errors)
        std = self.layout.headers.get("standard_metadata")
        if std is None:
            raise PipelineError("headers", "v1model needs a 'standard_metadata' instance")
        self.std = {f: self.std_slot(std, f) for f in STD_FIELDS}
        self.deparse_src = self.deparser_source(doc)
        self.verify_src, self.update_src = self.checksum_sources(doc)
        env = exec_source("\n".join(
            ["def deparse(S):", "    out = []", *self.deparse_src, "    return out",
             "def verify_checksums(S):", "    bad = 0", *self.verify_src, "    return bad",
             "def update_checksums(S):", *self.update_src, "    return None"]),
            self.ns, "deparser and checksums")
        self.deparse: Callable[[list[Any]], list[bytes]] = env["deparse"]
        self.verify_checksums: Callable[[list[Any]], int] = env["verify_checksums"]
        self.update_checksums: Callable[[list[Any]], None] = env["update_checksums"]
        self.controls: dict[str, Callable[[list[Any]], Any]] = {}
        self.tables: dict[str, Table] = {}
        for i, pj in enumerate(doc["pipelines"]):
            where = f"pipelines[{i}] {pj.get('name')!r}"
            tables = {}
            for j, tj in enumerate(pj.get("tables", [])):
                tables[tj["name"]] = Table(tj, self.layout, self.actions,
                                           f"{where} tables[{j}] {tj.get('name')!r}")
            self.tables.update(tables)
            self.controls[pj["name"]] = compile_control(self.pc, pj, tables, where)
        self.empty = {pj["name"] for pj in doc["pipelines"] if pj.get("init_table") is None}
        for needed in ("ingress", "egress"):
            if needed not in self.controls:
                raise PipelineError("pipelines", f"v1model needs a pipeline named {needed!r}")

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

    def deparser_source(self, doc: dict[str, Any]) -> list[str]:
        """Lines appending each valid header's bytes to ``out``, in the deparser's order."""
        deps = doc["deparsers"]
        if len(deps) != 1:
            raise PipelineError("deparsers", f"expected exactly one deparser, found {len(deps)}")
        where = f"deparsers[0] {deps[0].get('name')!r}"
        if deps[0].get("primitives"):
            raise PipelineError(where, "statements other than emit in the deparser are not "
                                       "supported")
        lines = []
        for name in deps[0].get("order", []):
            h = HRef.of(self.layout.header(name, where))
            if h.metadata:
                continue
            emit = vl_emit_expr(h.htype, h.first) if h.htype.vl_index is not None \
                else emit_expr(h.htype, h.first, self.ns)
            lines.append(f"    if S[{h.base}]: out.append({emit})")
        return lines

    def checksum_sources(self, doc: dict[str, Any]) -> tuple[list[str], list[str]]:
        """Lines of verify (setting ``bad``) and update, one per checksum of the JSON."""
        verify, update = [], []
        for i, cj in enumerate(doc.get("checksums", [])):
            where = f"checksums[{i}] {cj.get('name')!r}"
            slot, width, _ = self.layout.field_slot(cj["target"], where)
            calc = self.res.calculations.get(cj.get("calculation"))
            if calc is None:
                raise PipelineError(where, f"unknown calculation {cj.get('calculation')!r}")
            value = calc.inline or f"{self.ns.bind('calc', calc.fn)}(S)"
            cond = "True"
            if cj.get("if_cond") is not None:
                cond = self.pc.value(cj["if_cond"], where, None).src
            mask = (1 << width) - 1
            if cj.get("verify", True):
                verify.append(f"    if ({cond}) and ({value} & {mask}) != S[{slot}]: bad = 1")
            if cj.get("update", True):
                update.append(f"    if {cond}: S[{slot}] = {value} & {mask}")
        return verify, update

    def fast_source(self) -> str:
        """``fast(port, buf, out)``: one unicast frame through the whole pipeline, appending
        what it sends to ``out``; the general path (``after_ingress``/``resume_egress``)
        takes over when something rare happens."""
        std = self.std
        j = jl
        rare_ingress = [f"S[{j.CLONE_SID}]", f"S[{j.RESUBMIT_FL}]", f"S[{std['mcast_grp']}]"]
        lines = [
            "def fast(port, buf, out):",
            "    S = TEMPLATE[:]",
            "    n = len(buf)",
            f"    S[{std['ingress_port']}] = port",
            f"    S[{std['packet_length']}] = S[{j.INGRESS_LEN}] = n",
            "    off, err = parse(S, buf)",
            *([f"    S[{j.PAYLOAD}] = buf[off:]"] if self.keeps_payload else []),
            f"    S[{std['parser_error']}] = err",
            "    bad = 0",
            *self.verify_src,
            f"    S[{std['checksum_error']}] = bad",
            "    if bad or err != NOERR: count_errors(S)",
            *([] if "ingress" in self.empty else ["    ingress(S)"]),
            f"    if {' or '.join(rare_ingress)}:",
            "        return after_ingress(S, port, buf, off, out, 0)",
            f"    es = S[{std['egress_spec']}]",
            f"    if es == {DROP_PORT}:",
            "        drops['ingress_drop'] += 1",
            "        return",
            f"    S[{std['instance_type']}] = {NORMAL}",
            f"    S[{std['egress_port']}] = es",
            f"    S[{std['egress_spec']}] = 0",
            f"    S[{std['packet_length']}] = n",
            *([] if "egress" in self.empty else ["    egress(S)"]),
            f"    if S[{j.CLONE_SID}] or S[{std['egress_spec']}] == {DROP_PORT} "
            f"or S[{j.RECIRC_FL}] or S[{j.TRUNCATE}]:",
            "        return resume_egress(S, es, buf, off, out)",
            *self.update_src,
            "    parts = []",
            *(ln.replace("out.append", "parts.append") for ln in self.deparse_src),
            "    parts.append(buf[off:])",
            "    out.append((es, b''.join(parts)))",
        ]
        return "\n".join(lines)


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
        self.pre = ReplicationEngine()
        self.stats: Counter[str] = Counter()
        self.drops: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.fast: Callable[[int, bytes, Frames], None] | None = None
        self._program: Program | None = None
        self.program = program

    @property
    def program(self) -> Program | None:
        return self._program

    @program.setter
    def program(self, program: Program | None) -> None:
        """Install a program and link its fast path to this switch's PRE and counters."""
        self._program = program
        self.fast = None
        if program is None:
            return
        env = dict(program.ns.values)
        env.update(TEMPLATE=program.layout.template, parse=program.parse,
                   ingress=program.controls["ingress"], egress=program.controls["egress"],
                   count_errors=self.count_errors, drops=self.drops,
                   after_ingress=self.after_ingress, resume_egress=self.resume_egress)
        exec(compile_source(program.fast_source(), "fast path"), env)  # noqa: S102
        self.fast = env["fast"]

    def snapshot(self) -> dict[str, Any]:
        """The statistics as a JSON-able document; every drop reason is present."""
        return {"pipeline": self._program is not None, "rx": self.stats["rx"],
                "tx": self.stats["tx"], "drops": {r: self.drops[r] for r in DROP_REASONS},
                "errors": dict(sorted(self.errors.items()))}

    def process(self, port: int, frame: bytes) -> Frames:
        """Run one received frame; returns (egress_port, frame) pairs. Never raises."""
        return self.process_batch([(port, frame)])

    def process_batch(self, frames: list[tuple[int, bytes]]) -> Frames:
        """Run received frames in order; returns every frame to send, in order."""
        self.stats["rx"] += len(frames)
        fast = self.fast
        if fast is None:
            self.drops["no_pipeline"] += len(frames)
            return []
        out: Frames = []
        for port, frame in frames:
            done = len(out)
            try:
                fast(port, frame, out)
            except Exception:  # a bad frame or an assert must not stop the switch
                del out[done:]  # nothing of a frame that raised is sent
                self.drops["engine_error"] += 1
                log.debug("frame from port %d raised", port, exc_info=True)
        self.stats["tx"] += len(out)
        return out

    def fresh_state(self, port: int, frame: bytes, instance: int) -> list[Any]:
        prog = self._program
        assert prog is not None
        S = prog.layout.template[:]
        std = prog.std
        S[std["ingress_port"]] = port
        S[std["packet_length"]] = len(frame)
        S[std["instance_type"]] = instance
        S[jl.INGRESS_LEN] = len(frame)
        return S

    def parse_into(self, S: list[Any], frame: bytes) -> int:
        """Parse and verify checksums; the payload's offset."""
        prog = self._program
        assert prog is not None
        off, S[prog.std["parser_error"]] = prog.parse(S, frame)
        if prog.keeps_payload:
            S[jl.PAYLOAD] = frame[off:]
        S[prog.std["checksum_error"]] = prog.verify_checksums(S)
        return off

    def count_errors(self, S: list[Any]) -> None:
        """Count a received frame's parser error and checksum failure (not its clones')."""
        prog = self._program
        assert prog is not None
        err = S[prog.std["parser_error"]]
        if err != prog.noerr:
            self.errors[f"parser_error.{prog.error_names.get(err, err)}"] += 1
        if S[prog.std["checksum_error"]]:
            self.errors["checksum_error"] += 1

    def resume_egress(self, S: list[Any], port: int, frame: bytes, off: int, out: Frames
                      ) -> None:
        """Where the fast path hands a frame over after egress (clone, drop, recirculate,
        truncate)."""
        self.after_egress(S, port, memoryview(frame)[off:], out, 0)

    def ingress(self, port: int, frame: bytes, out: Frames,
                preserved: tuple[list[int], list[Any], int] | None, depth: int) -> None:
        """A resubmitted or recirculated frame (``preserved``: field list slots, values and
        instance type) through parser and ingress."""
        prog = self._program
        assert prog is not None
        instance = preserved[2] if preserved else NORMAL
        S = self.fresh_state(port, frame, instance)
        if preserved:
            for slot, value in zip(preserved[0], preserved[1], strict=True):
                S[slot] = value
        off = self.parse_into(S, frame)
        prog.controls["ingress"](S)
        self.after_ingress(S, port, frame, off, out, depth)

    def after_ingress(self, S: list[Any], port: int, frame: bytes, off: int, out: Frames,
                      depth: int) -> None:
        """Clone, resubmit, multicast or unicast after the ingress control, as simple_switch's
        ingress thread does."""
        prog = self._program
        assert prog is not None
        std = prog.std
        payload = memoryview(frame)[off:]
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

    def clone_ingress(self, S: list[Any], port: int, frame: bytes, out: Frames) -> None:
        prog = self._program
        assert prog is not None
        session = self.pre.clones.get(S[jl.CLONE_SID])
        if session is None:
            self.drops["clone_session_unknown"] += 1
            return
        slots = prog.res.field_lists.get(S[jl.CLONE_FL], [])
        for egress_port, rid in session.replicas:
            C = self.fresh_state(port, frame, INGRESS_CLONE)
            payload = memoryview(frame)[self.parse_into(C, frame):]
            for s in slots:
                C[s] = S[s]
            C[prog.std["instance_type"]] = INGRESS_CLONE
            C[prog.std["egress_rid"]] = rid
            if session.packet_length_bytes:
                C[jl.TRUNCATE] = session.packet_length_bytes
            self.egress(C, egress_port, payload, out, MAX_REENTRIES)

    def egress(self, S: list[Any], port: int, payload: memoryview, out: Frames,
               depth: int) -> None:
        prog = self._program
        assert prog is not None
        std = prog.std
        S[std["egress_port"]] = port
        S[std["egress_spec"]] = 0
        S[std["packet_length"]] = S[jl.INGRESS_LEN]
        prog.controls["egress"](S)
        self.after_egress(S, port, payload, out, depth)

    def after_egress(self, S: list[Any], port: int, payload: memoryview, out: Frames,
                     depth: int) -> None:
        """Egress clone, drop, deparse, truncate and recirculate, as simple_switch's egress
        thread does."""
        prog = self._program
        assert prog is not None
        std = prog.std
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
        prog = self._program
        assert prog is not None
        C = S[:]
        for hdr in prog.layout.headers.values():
            if hdr.metadata:  # fields, and the length of a varbit one
                n = hdr.htype.span - 1
                C[hdr.first_slot:hdr.first_slot + n] = [0] * n
        C[jl.CLONE_SID] = C[jl.CLONE_FL] = C[jl.RESUBMIT_FL] = C[jl.RECIRC_FL] = 0
        return C
