"""v1model programs written as bmv2 JSON by hand, following p4c's conventions, for the
constructs the target's reach covers (header stacks, unions and union stacks, varbit fields,
const entries with bits outside their mask or prefix, error-typed keys, an action the P4Info
lists but the JSON omits, checksums over the payload, a table the P4Info lists but the JSON
omits beside tables in nested switches).

WHY by hand: CI has no p4c, and these documents name each construct exactly as bmv2's JSON
format does (bmv2's own tests ship hand-written JSON too).  Each program dispatches on the
last byte of the Ethernet destination ("op") to one case per construct and sends everything
to port 2, so one frame exercises one case; test_reach.py runs them on the embedded target and
test_differential.py beside bmv2, byte for byte.
"""

from __future__ import annotations

from typing import Any

from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2

STD_FIELDS = [
    ["ingress_port", 9, False], ["egress_spec", 9, False], ["egress_port", 9, False],
    ["instance_type", 32, False], ["packet_length", 32, False], ["enq_timestamp", 32, False],
    ["enq_qdepth", 19, False], ["deq_timedelta", 32, False], ["deq_qdepth", 19, False],
    ["ingress_global_timestamp", 48, False], ["egress_global_timestamp", 48, False],
    ["mcast_grp", 16, False], ["egress_rid", 16, False], ["checksum_error", 1, False],
    ["parser_error", 32, False], ["priority", 3, False], ["_padding", 3, False]]
ERRORS = [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2], ["StackOutOfBounds", 3],
          ["HeaderTooShort", 4], ["ParserTimeout", 5], ["ParserInvalidArgument", 6]]
ETH = [["dst", 48, False], ["src", 48, False], ["type", 16, False]]
IPV4 = [["version", 4, False], ["ihl", 4, False], ["diffserv", 8, False],
        ["total_len", 16, False], ["identification", 16, False], ["flags", 3, False],
        ["frag_offset", 13, False], ["ttl", 8, False], ["protocol", 8, False],
        ["hdr_checksum", 16, False], ["src_addr", 32, False], ["dst_addr", 32, False]]


def F(header: str, name: str) -> dict[str, Any]:
    return {"type": "field", "value": [header, name]}


def C(value: int) -> dict[str, Any]:
    return {"type": "hexstr", "value": hex(value)}


def E(op: str, left: Any, right: Any) -> dict[str, Any]:
    return {"type": "expression", "value": {"op": op, "left": left, "right": right}}


def H(name: str) -> dict[str, Any]:
    return {"type": "header", "value": name}


def STACK(name: str) -> dict[str, Any]:
    return {"type": "header_stack", "value": name}


def P(op: str, *params: Any) -> dict[str, Any]:
    """A primitive call; expression arguments are wrapped once more, as p4c does."""
    return {"op": op, "parameters": [
        {"type": "expression", "value": p} if p.get("type") == "expression" else p
        for p in params]}


def SET(dst: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    return P("assign", dst, value)


def OP_IS(k: int) -> dict[str, Any]:
    """The case selector: the last byte of the Ethernet destination equals ``k``."""
    return E("==", E("&", F("eth", "dst"), C(0xFF)), C(k))


class Program:
    """A v1model document under construction."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.doc: dict[str, Any] = {
            "header_types": [{"name": "scalars_0", "id": 0, "fields": []},
                             {"name": "standard_metadata", "id": 1, "fields": STD_FIELDS}],
            "headers": [], "header_stacks": [], "header_union_types": [], "header_unions": [],
            "header_union_stacks": [], "field_lists": [], "errors": ERRORS, "enums": [],
            "parsers": [], "parse_vsets": [], "deparsers": [], "meter_arrays": [],
            "counter_arrays": [], "register_arrays": [], "calculations": [], "learn_lists": [],
            "actions": [], "pipelines": [], "checksums": [], "force_arith": [],
            "extern_instances": [], "field_aliases": [], "program": f"{name}.p4",
            "__meta__": {"version": [2, 23], "compiler": "hand-written (tests/embedded)"}}
        self.header("scalars", "scalars_0", metadata=True)
        self.header("standard_metadata", "standard_metadata", metadata=True)
        self.htype("eth_t", ETH)
        self.header("eth", "eth_t")
        self.states: list[dict[str, Any]] = []
        self.nodes: dict[str, list[Any]] = {"ingress": [], "egress": []}

    def _add(self, section: str, name: str, **fields: Any) -> int:
        """Append an object with the next id of ``section`` (p4c numbers them in order)."""
        items = self.doc[section]
        items.append({"name": name, "id": len(items), **fields})
        return len(items) - 1

    def htype(self, name: str, fields: list[list[Any]], **extra: Any) -> None:
        self._add("header_types", name, fields=fields, **extra)

    def header(self, name: str, htype: str, metadata: bool = False) -> int:
        return self._add("headers", name, header_type=htype, metadata=metadata, pi_omit=True)

    def stack(self, name: str, htype: str, size: int) -> None:
        ids = [self.header(f"{name}[{i}]", htype) for i in range(size)]
        self._add("header_stacks", name, size=size, header_type=htype, header_ids=ids)

    def union_type(self, name: str, members: list[tuple[str, str]]) -> None:
        self._add("header_union_types", name, headers=[list(m) for m in members])

    def union(self, name: str, utype: str) -> int:
        ut = next(t for t in self.doc["header_union_types"] if t["name"] == utype)
        ids = [self.header(f"{name}.{member}", htype) for member, htype in ut["headers"]]
        return self._add("header_unions", name, union_type=utype, header_ids=ids)

    def union_stack(self, name: str, utype: str, size: int) -> None:
        ids = [self.union(f"{name}[{i}]", utype) for i in range(size)]
        self._add("header_union_stacks", name, size=size, union_type=utype,
                  header_union_ids=ids)

    def action(self, name: str, prims: list[dict[str, Any]],
               params: list[tuple[str, int]] = ()) -> int:
        actions = self.doc["actions"]
        actions.append({"name": name, "id": len(actions),
                        "runtime_data": [{"name": n, "bitwidth": w} for n, w in params],
                        "primitives": prims})
        return len(actions) - 1

    def state(self, name: str, ops: list[dict[str, Any]], key: list[dict[str, Any]] = (),
              cases: list[tuple[int | None, str | None]] = ((None, None),),
              key_bytes: int = 2) -> None:
        """A parse state; ``cases``: (value or None for default, next state or None); values
        are written ``key_bytes`` wide, as bmv2 requires."""
        transitions = [{"type": "default", "value": None, "mask": None, "next_state": nxt}
                       if value is None else
                       {"type": "hexstr", "value": f"0x{value:0{2 * key_bytes}x}", "mask": None,
                        "next_state": nxt}
                       for value, nxt in cases]
        self.states.append({"name": name, "id": len(self.states), "parser_ops": ops,
                            "transition_key": list(key), "transitions": transitions})

    def run(self, control: str, name: str, prims: list[dict[str, Any]], nxt: str | None
            ) -> None:
        """A node running straight-line primitives: p4c's keyless table with a const
        default action."""
        aid = self.action(f"act_{name}", prims)
        self.nodes[control].append({
            "name": name, "id": 0, "key": [], "match_type": "exact", "type": "simple",
            "max_size": 1, "with_counters": False, "support_timeout": False,
            "direct_meters": None, "action_ids": [aid], "actions": [f"act_{name}"],
            "base_default_next": nxt, "next_tables": {f"act_{name}": nxt},
            "default_entry": {"action_id": aid, "action_const": True, "action_data": [],
                              "action_entry_const": True}})

    def table(self, control: str, name: str, key: list[dict[str, Any]], actions: list[int],
              default: int, nxt: str | None, entries: list[dict[str, Any]] = (),
              match_type: str = "exact") -> None:
        names = [self.doc["actions"][a]["name"] for a in actions]
        self.nodes[control].append({
            "name": name, "id": 0, "key": key, "match_type": match_type, "type": "simple",
            "max_size": 64, "with_counters": False, "support_timeout": False,
            "direct_meters": None, "action_ids": actions, "actions": names,
            "base_default_next": nxt, "next_tables": dict.fromkeys(names, nxt),
            "default_entry": {"action_id": default, "action_const": False, "action_data": [],
                              "action_entry_const": False},
            **({"entries": list(entries)} if entries else {})})

    def cond(self, control: str, name: str, expr: dict[str, Any], yes: str | None,
             no: str | None) -> None:
        self.nodes[control].append({"name": name, "id": 0, "expression": expr,
                                    "true_next": yes, "false_next": no})

    def build(self, order: list[str], init: str | None) -> dict[str, Any]:
        """The document: the parser from ``state``s (the first is the start), the deparser
        emitting ``order``, ingress from ``init``."""
        doc = self.doc
        doc["parsers"] = [{"name": "parser", "id": 0, "init_state": self.states[0]["name"],
                           "parse_states": self.states}]
        doc["deparsers"] = [{"name": "deparser", "id": 0, "order": order, "primitives": []}]
        for i, control in enumerate(("ingress", "egress")):
            nodes = self.nodes[control]
            tables = [n for n in nodes if "key" in n]
            conds = [n for n in nodes if "expression" in n]
            for j, n in enumerate(tables):
                n["id"] = j
            for j, n in enumerate(conds):
                n["id"] = j
            doc["pipelines"].append({
                "name": control, "id": i,
                "init_table": init if control == "ingress" else None,
                "tables": tables, "action_profiles": [], "conditionals": conds})
        return doc


def common_tail(p: Program, first: str) -> None:
    """From node ``first``: to port 2, and a parser error shows in the EtherType."""
    p.run("ingress", first, [SET(F("standard_metadata", "egress_spec"), C(2))], "err?")
    p.cond("ingress", "err?", E("!=", F("standard_metadata", "parser_error"), C(0)),
           "show_err", None)
    p.run("ingress", "show_err", [SET(F("eth", "type"),
                                      F("standard_metadata", "parser_error"))], None)


def ops_chain(p: Program, cases: list[tuple[int, list[dict[str, Any]]]], after: str) -> str:
    """Conditionals ``op == k`` -> that case's primitives; every path ends at ``after``."""
    for i, (k, prims) in enumerate(cases):
        nxt = f"op{cases[i + 1][0]}?" if i + 1 < len(cases) else after
        p.cond("ingress", f"op{k}?", OP_IS(k), f"case{k}", nxt)
        p.run("ingress", f"case{k}", prims, after)
    return f"op{cases[0][0]}?"


def stacks() -> dict[str, Any]:
    """A stack of three (v, bos) tags after EtherType 0x9000, parsed with ``next`` until
    ``last.bos``; push/pop, a run-time index, last/size, copies between elements."""
    p = Program("stacks")
    p.htype("tag_t", [["v", 8, False], ["bos", 8, False]])
    p.stack("tags", "tag_t", 3)
    t = [f"tags[{i}]" for i in range(3)]
    p.state("start", [P("extract", {"type": "regular", "value": "eth"})],
            [F("eth", "type")], [(0x9000, "tag"), (None, None)])
    p.state("tag", [P("extract", {"type": "stack", "value": "tags"})],
            [{"type": "stack_field", "value": ["tags", "bos"]}], [(0, "tag"), (None, None)], 1)
    index = E("&", F("eth", "src"), C(0xFF))  # hdr.tags[eth.src[7:0]]
    element = {"type": "expression", "value": {"op": "dereference_header_stack",
                                               "left": STACK("tags"), "right": index}}
    dyn_v = {"type": "expression", "value": {"op": "access_field", "left": element,
                                             "right": 0}}
    last = {"type": "expression", "value": {"op": "last_stack_index", "left": None,
                                            "right": STACK("tags")}}
    size = {"type": "expression", "value": {"op": "size_stack", "left": None,
                                            "right": STACK("tags")}}
    cases = [
        (1, [P("push", STACK("tags"), C(1)), P("add_header", H(t[0])),
             SET(F(t[0], "v"), C(0xAA)), SET(F(t[0], "bos"), C(0))]),
        (2, [P("pop", STACK("tags"), C(1))]),
        (3, [SET(dyn_v, C(0x55))]),
        (4, [SET(F("eth", "src"), E("|", E("<<", last, C(8)), size))]),
        (5, [P("push", STACK("tags"), C(5))]),
        (6, [P("pop", STACK("tags"), C(2)), P("add_header", H(t[2]))]),
        (7, [P("assign_header", H(t[1]), H(t[0]))]),
        (8, [P("remove_header", H(t[0])), P("push", STACK("tags"), C(2))]),
        (9, [P("add_header", H(t[2])), SET(F("eth", "src"), E("b2d", None, {
            "type": "expression", "value": {"op": "==", "left": H(t[0]), "right": H(t[1])}}))]),
    ]
    init = ops_chain(p, cases, "port")
    common_tail(p, "port")
    return p.build(["eth", *t], init)


def unions() -> dict[str, Any]:
    """A union u {a; b} picked by EtherType 0xA/0xB, and a union stack of two {p; q} options
    (EtherType 0xC) chosen by lookahead, ended by ``bos``."""
    p = Program("unions")
    p.htype("a_t", [["x", 16, False]])
    p.htype("b_t", [["y", 8, False], ["z", 8, False]])
    p.htype("p_t", [["kind", 8, False], ["bos", 8, False]])
    p.htype("q_t", [["kind", 8, False], ["bos", 8, False], ["w", 16, False]])
    p.union_type("u_t", [("a", "a_t"), ("b", "b_t")])
    p.union_type("o_t", [("p", "p_t"), ("q", "q_t")])
    p.union("u", "u_t")
    p.union_stack("opts", "o_t", 2)
    p.state("start", [P("extract", {"type": "regular", "value": "eth"})], [F("eth", "type")],
            [(0xA, "pa"), (0xB, "pb"), (0xC, "opt"), (None, None)])
    p.state("pa", [P("extract", {"type": "regular", "value": "u.a"})])
    p.state("pb", [P("extract", {"type": "regular", "value": "u.b"})])
    p.state("opt", [], [{"type": "lookahead", "value": [0, 8]}],
            [(1, "opt_p"), (2, "opt_q"), (None, None)], 1)
    for m in ("p", "q"):
        p.state(f"opt_{m}", [P("extract", {"type": "union_stack", "value": ["opts", m]})],
                [{"type": "union_stack_field", "value": ["opts", m, "bos"]}],
                [(0, "opt"), (None, None)], 1)
    valid_u = {"type": "expression", "value": {"op": "valid_union", "left": None,
                                               "right": {"type": "header_union", "value": "u"}}}
    cases = [
        (1, [P("add_header", H("u.b")), SET(F("u.b", "y"), C(7)), SET(F("u.b", "z"), C(9))]),
        (2, [P("remove_header", H("u.a"))]),
        (3, [SET(F("eth", "src"), E("b2d", None, valid_u))]),
        (4, [P("add_header", H("u.a")), SET(F("u.a", "x"), C(0x1234))]),
        (5, [P("push", {"type": "header_union_stack", "value": "opts"}, C(1))]),
        (6, [P("add_header", H("opts[1].q")), SET(F("opts[1].q", "w"), C(0xBEEF))]),
        (7, [P("assign_union", {"type": "header_union", "value": "opts[0]"},
               {"type": "header_union", "value": "opts[1]"})]),
    ]
    init = ops_chain(p, cases, "port")
    common_tail(p, "port")
    return p.build(["eth", "u.a", "u.b", "opts[0].p", "opts[0].q", "opts[1].p", "opts[1].q"],
                   init)


def varbit() -> dict[str, Any]:
    """IPv4 with its options as a varbit field (extract_VL, length (ihl - 5) * 32 bits, at
    most 40 bytes), the header checksum over both, TTL decrement; op 1 strips the options."""
    p = Program("varbit")
    p.htype("ipv4_t", IPV4)
    p.htype("ipv4_options_t", [["options", "*"]], max_length=40)
    p.header("ipv4", "ipv4_t")
    p.header("ipv4_options", "ipv4_options_t")
    length = E("&", E("*", E("&", E("+", F("ipv4", "ihl"), C(0xB)), C(0xF)), C(32)),
               C(0xFFFFFFFF))
    p.state("start", [P("extract", {"type": "regular", "value": "eth"})], [F("eth", "type")],
            [(0x0800, "ipv4"), (None, None)])
    p.state("ipv4", [P("extract", {"type": "regular", "value": "ipv4"}),
                     {"op": "extract_VL", "parameters": [  # p4c wraps the length once more
                         {"type": "regular", "value": "ipv4_options"},
                         {"type": "expression", "value": length}]}])
    fields = [F("ipv4", f[0]) for f in IPV4 if f[0] != "hdr_checksum"]
    p.doc["calculations"].append({"name": "ipv4_csum", "id": 0, "algo": "csum16",
                                  "input": [*fields, F("ipv4_options", "options")]})
    valid = {"type": "expression", "value": {"op": "d2b", "left": None,
                                             "right": F("ipv4", "$valid$")}}
    p.doc["checksums"].append({"name": "cksum", "id": 0, "target": ["ipv4", "hdr_checksum"],
                               "type": "generic", "calculation": "ipv4_csum",
                               "verify": True, "update": True, "if_cond": valid})
    cases = [
        (1, [P("remove_header", H("ipv4_options")), SET(F("ipv4", "ihl"), C(5))]),
        (2, [SET(F("eth", "src"), F("standard_metadata", "checksum_error"))]),
    ]
    p.cond("ingress", "is_ipv4?", valid, "ttl", "port")
    p.run("ingress", "ttl", [SET(F("ipv4", "ttl"), E("&", E("+", F("ipv4", "ttl"), C(0xFF)),
                                                      C(0xFF)))], "op1?")
    ops_chain(p, cases, "port")
    common_tail(p, "port")
    return p.build(["eth", "ipv4", "ipv4_options"], "is_ipv4?")


TABLES_HEADER = [["a", 16, False], ["b", 32, False], ["c", 8, False], ["d", 8, False]]


def const_tables() -> dict[str, Any]:
    """Const entries whose values have bits outside the mask (ternary) or beyond the prefix
    (lpm), which bmv2 masks, and tables keyed on ``standard_metadata.parser_error`` (type
    error): one with const entries, one filled over P4Runtime (by error names)."""
    p = Program("const_tables")
    p.htype("h_t", TABLES_HEADER)
    p.header("h", "h_t")
    p.state("start", [P("extract", {"type": "regular", "value": "eth"})], [F("eth", "type")],
            [(0x88B5, "h"), (None, None)])
    p.state("h", [P("extract", {"type": "regular", "value": "h"})])
    noop = p.action("NoAction_0", [])
    set_c = p.action("set_c", [SET(F("h", "c"), {"type": "runtime_data", "value": 0})],
                     [("v", 8)])
    mark = p.action("mark", [SET(F("eth", "type"), {"type": "runtime_data", "value": 0})],
                    [("v", 16)])
    set_d = p.action("set_d", [SET(F("h", "d"), {"type": "runtime_data", "value": 0})],
                     [("v", 8)])

    def entry(keys: list[dict[str, Any]], action: int, data: str, prio: int
              ) -> dict[str, Any]:
        """A const entry; values are padded to whole bytes, as p4c writes them."""
        return {"match_key": keys, "action_entry": {"action_id": action,
                                                    "action_data": [data]},
                "priority": prio}

    tern = [entry([{"match_type": "ternary", "key": "0x12ff", "mask": "0xff00"}], set_c,
                  "0x01", 1),
            entry([{"match_type": "ternary", "key": "0x0034", "mask": "0x00f0"}], set_c,
                  "0x02", 2)]
    lpm = [entry([{"match_type": "lpm", "key": "0x0a0b0c0d", "prefix_length": 8}], set_d,
                 "0x03", 1),
           entry([{"match_type": "lpm", "key": "0x0b0cffff", "prefix_length": 16}], set_d,
                 "0x04", 2)]
    err = [entry([{"match_type": "exact", "key": "0x00000001"}], mark, "0xe001", 1),
           entry([{"match_type": "exact", "key": "0x00000000"}], mark, "0xe000", 2)]
    std_err = ["standard_metadata", "parser_error"]
    p.cond("ingress", "h?", {"type": "expression", "value": {
        "op": "d2b", "left": None, "right": F("h", "$valid$")}}, "t_tern", "t_err")
    p.table("ingress", "t_tern", [{"match_type": "ternary", "name": "h.a",
                                   "target": ["h", "a"], "mask": None}],
            [set_c, noop], noop, "t_lpm", tern, "ternary")
    p.table("ingress", "t_lpm", [{"match_type": "lpm", "name": "h.b", "target": ["h", "b"],
                                  "mask": None}], [set_d, noop], noop, "t_err", lpm, "lpm")
    p.table("ingress", "t_err", [{"match_type": "exact", "name": "parser_error",
                                  "target": std_err, "mask": None}],
            [mark, noop], noop, "t_err_rt", err)
    p.table("ingress", "t_err_rt", [{"match_type": "exact", "name": "parser_error",
                                     "target": std_err, "mask": None}],
            [set_d, noop], noop, "port")
    p.run("ingress", "port", [SET(F("standard_metadata", "egress_spec"), C(2))], None)
    return p.build(["eth", "h"], "h?")


def const_tables_p4info(doc: dict[str, Any]) -> p4info_pb2.P4Info:
    """P4Info of const_tables as p4c writes it for t_err_rt: the error key has bitwidth 0,
    and NoAction is listed though the JSON has no action of that name."""
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    actions = {a["name"]: a for a in doc["actions"]}
    for i, name in enumerate(["set_d", "NoAction"]):
        a = info.actions.add()
        a.preamble.id, a.preamble.name = 16800000 + i, name
        for j, rd in enumerate(actions.get(name, {}).get("runtime_data", [])):
            a.params.add(id=j + 1, name=rd["name"], bitwidth=rd["bitwidth"])
    t = info.tables.add()
    t.preamble.id, t.preamble.name, t.size = 33600000, "t_err_rt", 64
    t.match_fields.add(id=1, name="parser_error", bitwidth=0,
                       match_type=p4info_pb2.MatchField.EXACT)
    t.action_refs.add(id=16800000)
    t.action_refs.add(id=16800001)
    return info


def value_set() -> dict[str, Any]:
    """A parser value set on the EtherType: a member's frames get their 16-bit tag parsed,
    which ingress shows in the source address."""
    p = Program("value_set")
    p.htype("tag_t", [["x", 16, False]])
    p.header("tag", "tag_t")
    p.doc["parse_vsets"] = [{"name": "pvs", "id": 0, "compressed_bitwidth": 16}]
    p.state("start", [P("extract", {"type": "regular", "value": "eth"})], [F("eth", "type")])
    p.states[-1]["transitions"] = [
        {"type": "parse_vset", "value": "pvs", "mask": None, "next_state": "tag"},
        {"type": "parse_vset", "value": "pvs", "mask": "0x0fff", "next_state": "masked"},
        {"type": "default", "value": None, "mask": None, "next_state": None}]
    p.state("tag", [P("extract", {"type": "regular", "value": "tag"})])
    p.state("masked", [])
    p.cond("ingress", "tag?", {"type": "expression", "value": {
        "op": "d2b", "left": None, "right": F("tag", "$valid$")}}, "show", "port")
    p.run("ingress", "show", [SET(F("eth", "src"), F("tag", "x"))], "port")
    p.run("ingress", "port", [SET(F("standard_metadata", "egress_spec"), C(2))], None)
    return p.build(["eth", "tag"], "tag?")


def value_set_p4info() -> p4info_pb2.P4Info:
    """P4Info of value_set: the set, four members of one 16-bit field."""
    info = p4info_pb2.P4Info()
    vs = info.value_sets.add()
    vs.preamble.id, vs.preamble.name, vs.size = 56000000, "pvs", 4
    vs.match.add(id=1, name="eth.type", bitwidth=16, match_type=p4info_pb2.MatchField.EXACT)
    return info


def p4info(actions: list[tuple[str, list[tuple[str, int]]]],
           tables: list[tuple[str, list[tuple[str, int]], list[str]]]) -> p4info_pb2.P4Info:
    """A P4Info as p4c writes it for v1model: actions (name, params) and tables (name, exact
    match fields, action names), ids in p4c's ranges (0x01... actions, 0x02... tables)."""
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    ids = {}
    for i, (name, params) in enumerate(actions):
        a = info.actions.add()
        a.preamble.id, a.preamble.name = 0x01000001 + i, name
        a.preamble.alias = name.rsplit(".", 1)[-1]
        ids[name] = a.preamble.id
        for j, (pname, width) in enumerate(params):
            a.params.add(id=j + 1, name=pname, bitwidth=width)
    for i, (name, fields, acts) in enumerate(tables):
        t = info.tables.add()
        t.preamble.id, t.preamble.name, t.size = 0x02000001 + i, name, 1024
        t.preamble.alias = name.rsplit(".", 1)[-1]
        for j, (fname, width) in enumerate(fields):
            t.match_fields.add(id=j + 1, name=fname, bitwidth=width,
                               match_type=p4info_pb2.MatchField.EXACT)
        for act in acts:
            t.action_refs.add(id=ids[act])
    return info


TCP = [["srcPort", 16, False], ["dstPort", 16, False], ["seqNo", 32, False],
       ["ackNo", 32, False], ["dataOffset", 4, False], ["res", 4, False], ["flags", 8, False],
       ["window", 16, False], ["checksum", 16, False], ["urgentPtr", 16, False]]
UDP = [["srcPort", 16, False], ["dstPort", 16, False], ["length", 16, False],
       ["checksum", 16, False]]
IPV4_P4 = [["version", 4, False], ["ihl", 4, False], ["diffserv", 8, False],
           ["totalLen", 16, False], ["identification", 16, False], ["flags", 3, False],
           ["fragOffset", 13, False], ["ttl", 8, False], ["protocol", 8, False],
           ["hdrChecksum", 16, False], ["srcAddr", 32, False], ["dstAddr", 32, False]]


def valid(header: str) -> dict[str, Any]:
    return {"type": "expression", "value": {"op": "d2b", "left": None,
                                            "right": F(header, "$valid$")}}


def l4_checksum() -> dict[str, Any]:
    """A v1model program as p4c's bmv2 back end lays it out (names as p4c gives them): IPv4
    header checksum, TCP and UDP checksums over pseudo-header, header and payload (the calculation's
    last input is ``{"type": "payload", "value": null}``, which p4c writes for
    ``verify/update_checksum_with_payload``), verified in the parser and updated before the
    deparser; ``MyIngress.nat`` rewrites the destination address and port (``rewrite``) or
    changes the frame as p4c's checksum-l4-bmv2 sample does (``bump``)."""
    p = Program("l4_checksum")
    p.doc["header_types"][0]["fields"] = [["userMetadata.l4Len", 16, False]]
    for name, fields in (("ipv4_t", IPV4_P4), ("tcp_t", TCP), ("udp_t", UDP)):
        p.htype(name, fields)
    for name in ("ipv4", "tcp", "udp"):
        p.header(name, f"{name}_t")
    l4len = F("scalars", "userMetadata.l4Len")
    p.state("start", [P("extract", {"type": "regular", "value": "eth"})], [F("eth", "type")],
            [(0x0800, "ipv4"), (None, None)])
    p.state("ipv4", [P("extract", {"type": "regular", "value": "ipv4"}),
                     P("set", l4len, E("&", E("+", F("ipv4", "totalLen"), C(0xFFEC)),
                                         C(0xFFFF)))],
            [F("ipv4", "ihl"), F("ipv4", "protocol")], [(0x0506, "tcp"), (0x0511, "udp"),
                                                         (None, None)])
    p.state("tcp", [P("extract", {"type": "regular", "value": "tcp"})])
    p.state("udp", [P("extract", {"type": "regular", "value": "udp"})])
    pseudo = [F("ipv4", "srcAddr"), F("ipv4", "dstAddr"),
              {"type": "hexstr", "value": "0x00", "bitwidth": 8}, F("ipv4", "protocol"), l4len]
    payload = {"type": "payload", "value": None}
    inputs = {
        "ipv4": [F("ipv4", f[0]) for f in IPV4_P4 if f[0] != "hdrChecksum"],
        "tcp": [*pseudo, *(F("tcp", f[0]) for f in TCP if f[0] != "checksum"), payload],
        "udp": [*pseudo, *(F("udp", f[0]) for f in UDP if f[0] != "checksum"), payload]}
    target = {"ipv4": "hdrChecksum", "tcp": "checksum", "udp": "checksum"}
    for verify in (True, False):  # MyVerify's three, then MyCompute's three
        for header, fields in inputs.items():
            calc = f"calc_{len(p.doc['calculations'])}"
            p.doc["calculations"].append({"name": calc, "id": len(p.doc["calculations"]),
                                          "algo": "csum16", "input": fields})
            p.doc["checksums"].append({
                "name": f"cksum_{len(p.doc['checksums'])}", "id": len(p.doc["checksums"]),
                "target": [header, target[header]], "type": "generic", "calculation": calc,
                "verify": verify, "update": not verify, "if_cond": valid(header)})
    noop = p.action("NoAction", [])
    rewrite = p.action("MyIngress.rewrite", [
        SET(F("ipv4", "dstAddr"), {"type": "runtime_data", "value": 0}),
        SET(F("ipv4", "ttl"), E("&", E("+", F("ipv4", "ttl"), C(0xFF)), C(0xFF))),
        SET(F("tcp", "dstPort"), {"type": "runtime_data", "value": 1}),
        SET(F("udp", "dstPort"), {"type": "runtime_data", "value": 1})],
        [("addr", 32), ("port", 16)])

    def plus(header: str, name: str, k: int, width: int) -> dict[str, Any]:
        mask = (1 << width) - 1
        return SET(F(header, name), E("&", E("+", F(header, name), C(k & mask)), C(mask)))

    bump = p.action("MyIngress.bump", [
        plus("tcp", "srcPort", 1, 16), plus("udp", "srcPort", 1, 16), plus("ipv4", "ttl", -1, 8),
        plus("ipv4", "dstAddr", 4, 32)])
    p.cond("ingress", "node_2", E("==", F("standard_metadata", "checksum_error"), C(1)),
           "tbl_drop", "tbl_port")
    p.run("ingress", "tbl_drop", [P("mark_to_drop", H("standard_metadata"))], None)
    p.run("ingress", "tbl_port", [SET(F("standard_metadata", "egress_spec"), C(2))], "node_5")
    p.cond("ingress", "node_5", valid("ipv4"), "MyIngress.nat", None)
    p.table("ingress", "MyIngress.nat", [{"match_type": "exact", "name": "hdr.ipv4.dstAddr",
                                          "target": ["ipv4", "dstAddr"], "mask": None}],
            [rewrite, bump, noop], noop, None)
    return p.build(["eth", "ipv4", "tcp", "udp"], "node_2")


def l4_checksum_p4info() -> p4info_pb2.P4Info:
    return p4info([("NoAction", []), ("MyIngress.rewrite", [("addr", 32), ("port", 16)]),
                   ("MyIngress.bump", [])],
                  [("MyIngress.nat", [("hdr.ipv4.dstAddr", 32)],
                    ["MyIngress.rewrite", "MyIngress.bump", "NoAction"])])


IPV4_VB = [["version", 4, False], ["ihl", 4, False], ["diffserv", 8, False],
           ["totalLen", 16, False], ["identification", 16, False], ["flags", 3, False],
           ["fragOffset", 13, False], ["ttl", 8, False], ["protocol", 8, False],
           ["hdrChecksum", 16, False], ["srcAddr", 32, False], ["dstAddr", 32, False],
           ["options", "*"]]
TCP_VB = [["srcPort", 16, False], ["dstPort", 16, False], ["seqNo", 32, False],
          ["ackNo", 32, False], ["dataOffset", 4, False], ["res", 3, False], ["ecn", 3, False],
          ["ctrl", 6, False], ["window", 16, False], ["checksum", 16, False],
          ["urgentPtr", 16, False], ["options", "*"]]
UDP_S = [["srcPort", 16, False], ["dstPort", 16, False], ["length_", 16, False],
         ["checksum", 16, False]]


def checksum_l4_sample() -> dict[str, Any]:
    """p4c's testdata/p4_16_samples/checksum-l4-bmv2.p4 as p4c's bmv2 back end lays it out,
    but for its parser ``verify`` calls: IPv4 and TCP headers whose options are varbit fields
    extracted with lengths read by ``lookahead``, the IPv4 checksum over fields and options,
    TCP and UDP checksums over pseudo-header, header (TCP options too) and payload; const
    entries on destination port 80 add 1 to the source port, 4 to the destination address and
    -1 to the TTL.  Tested against the frames bmv2 gave for the sample's STF file."""
    p = Program("checksum-l4-bmv2")
    p.doc["header_types"][0]["fields"] = [["tmp", 4, False], ["tmp_0", 4, False],
                                          ["userMetadata.l4Len", 16, False]]
    p.htype("ipv4_t", IPV4_VB, max_length=60)
    p.htype("tcp_t", TCP_VB, max_length=60)
    p.htype("udp_t", UDP_S)
    for name in ("ipv4", "tcp", "udp"):
        p.header(name, f"{name}_t")
    l4len = F("scalars", "userMetadata.l4Len")

    def vl_len(tmp: str) -> dict[str, Any]:
        """(bit<32>)(8 * (4 * (bit<9>) tmp - 20)): the options' length in bits."""
        return E("&", E("*", E("&", E("+", E("*", F("scalars", tmp), C(4)), C(0x1EC)),
                                C(0x1FF)), C(8)), C(0xFFFFFFFF))

    p.state("start", [P("extract", {"type": "regular", "value": "eth"})], [F("eth", "type")],
            [(0x0800, "parse_ipv4"), (None, None)])
    p.state("parse_ipv4", [
        P("set", F("scalars", "tmp"), {"type": "lookahead", "value": [4, 4]}),
        {"op": "extract_VL", "parameters": [{"type": "regular", "value": "ipv4"},
                                             {"type": "expression", "value": vl_len("tmp")}]},
        P("set", l4len, E("&", E("-", F("ipv4", "totalLen"),
                                  E("&", E("*", F("ipv4", "ihl"), C(4)), C(0xFFFF))),
                           C(0xFFFF)))],
        [F("ipv4", "protocol")], [(6, "parse_tcp"), (17, "parse_udp"), (None, None)], 1)
    p.state("parse_tcp", [
        P("set", F("scalars", "tmp_0"), {"type": "lookahead", "value": [96, 4]}),
        {"op": "extract_VL", "parameters": [{"type": "regular", "value": "tcp"},
                                             {"type": "expression", "value": vl_len("tmp_0")}]}])
    p.state("parse_udp", [P("extract", {"type": "regular", "value": "udp"})])
    pseudo = [F("ipv4", "srcAddr"), F("ipv4", "dstAddr"),
              {"type": "hexstr", "value": "0x00", "bitwidth": 8}, F("ipv4", "protocol"), l4len]
    payload = {"type": "payload", "value": None}
    inputs = {
        "ipv4": [F("ipv4", f[0]) for f in IPV4_VB if f[0] != "hdrChecksum"],
        "tcp": [*pseudo, *(F("tcp", f[0]) for f in TCP_VB if f[0] != "checksum"), payload],
        "udp": [*pseudo, *(F("udp", f[0]) for f in UDP_S if f[0] != "checksum"), payload]}
    target = {"ipv4": "hdrChecksum", "tcp": "checksum", "udp": "checksum"}
    for verify in (True, False):
        for header, fields in inputs.items():
            calc = f"calc_{len(p.doc['calculations'])}"
            p.doc["calculations"].append({"name": calc, "id": len(p.doc["calculations"]),
                                          "algo": "csum16", "input": fields})
            p.doc["checksums"].append({
                "name": f"cksum_{len(p.doc['checksums'])}", "id": len(p.doc["checksums"]),
                "target": [header, target[header]], "type": "generic", "calculation": calc,
                "verify": verify, "update": not verify,
                "if_cond": valid(header) if header != "ipv4" else {"type": "bool", "value": True}})

    def plus(header: str, name: str, k: int, width: int) -> dict[str, Any]:
        mask = (1 << width) - 1
        return SET(F(header, name), E("&", E("+", F(header, name), C(k & mask)), C(mask)))

    common = [plus("ipv4", "ttl", -1, 8), plus("ipv4", "dstAddr", 4, 32)]
    noop = p.action("NoAction", [])
    foot = p.action("cIngress.foot", [plus("tcp", "srcPort", 1, 16), *common])
    foou = p.action("cIngress.foou", [plus("udp", "srcPort", 1, 16), *common])

    def port80(action: int) -> list[dict[str, Any]]:
        """The const entry ``(16w80) : action();``."""
        return [{"match_key": [{"match_type": "exact", "key": "0x0050"}],
                 "action_entry": {"action_id": action, "action_data": []}, "priority": 1}]

    p.cond("ingress", "node_2", valid("tcp"), "cIngress.guh", "node_4")
    p.table("ingress", "cIngress.guh", [{"match_type": "exact", "name": "hdr.tcp.dstPort",
                                         "target": ["tcp", "dstPort"], "mask": None}],
            [foot, noop], noop, "node_4", port80(foot))
    p.cond("ingress", "node_4", valid("udp"), "cIngress.huh", None)
    p.table("ingress", "cIngress.huh", [{"match_type": "exact", "name": "hdr.udp.dstPort",
                                         "target": ["udp", "dstPort"], "mask": None}],
            [foou, noop], noop, None, port80(foou))
    return p.build(["eth", "ipv4", "tcp", "udp"], "node_2")


def nested_switch() -> dict[str, Any]:
    """A v1model program as p4c's bmv2 back end lays it out: ``switch
    (classify.apply().action_run)`` whose set_port case applies ``inner`` in a nested switch
    (the nodes' ``next_tables`` per action), then ``if (limit <= 5) return;`` with ``limit =
    2`` and, after it, a switch on a third table ``removed``: p4c's mid end folds the branch and
    drops ``removed`` from the JSON, while the P4Info (nested_switch_p4info), written from the
    front end's program, lists it (as in p4c's gauntlet_nested_switch-bmv2 sample)."""
    p = Program("nested_switch")
    p.state("start", [P("extract", {"type": "regular", "value": "eth"})])
    noop = p.action("NoAction", [])
    set_port = p.action("MyIngress.set_port", [
        SET(F("standard_metadata", "egress_spec"), {"type": "runtime_data", "value": 0})],
        [("port", 9)])
    drop = p.action("MyIngress.drop", [P("mark_to_drop", H("standard_metadata"))])
    set_type = p.action("MyIngress.set_type", [
        SET(F("eth", "type"), {"type": "runtime_data", "value": 0})], [("type", 16)])
    p.table("ingress", "MyIngress.classify", [{"match_type": "exact", "name": "hdr.eth.dst",
                                               "target": ["eth", "dst"], "mask": None}],
            [set_port, drop], drop, None)
    p.table("ingress", "MyIngress.inner", [{"match_type": "exact", "name": "hdr.eth.src",
                                            "target": ["eth", "src"], "mask": None}],
            [set_type, noop], noop, None)
    p.run("ingress", "tbl_all_ones", [SET(F("eth", "dst"), C(0xFFFFFFFFFFFF))], None)
    classify, inner = p.nodes["ingress"][0], p.nodes["ingress"][1]
    classify["next_tables"]["MyIngress.set_port"] = "MyIngress.inner"
    inner["next_tables"]["MyIngress.set_type"] = "tbl_all_ones"
    return p.build(["eth"], "MyIngress.classify")


def nested_switch_p4info() -> p4info_pb2.P4Info:
    return p4info([("NoAction", []), ("MyIngress.set_port", [("port", 9)]),
                   ("MyIngress.drop", []), ("MyIngress.set_type", [("type", 16)])],
                  [("MyIngress.classify", [("hdr.eth.dst", 48)],
                    ["MyIngress.set_port", "MyIngress.drop"]),
                   ("MyIngress.inner", [("hdr.eth.src", 48)], ["MyIngress.set_type", "NoAction"]),
                   ("MyIngress.removed", [("hdr.eth.type", 16)],
                    ["MyIngress.set_type", "NoAction"])])


PROGRAMS = {"stacks": stacks, "unions": unions, "varbit": varbit,
            "const_tables": const_tables, "value_set": value_set}


def eth(op: int, etype: int, src: int = 0x020000000001) -> bytes:
    """An Ethernet header whose destination's last byte selects the program's case."""
    return (0x0A0000000000 | op).to_bytes(6, "big") + src.to_bytes(6, "big") + \
        etype.to_bytes(2, "big")


def tags(*values: int) -> bytes:
    """Stack tags (v, bos): bos set on the last one."""
    return b"".join(bytes([v, int(i == len(values) - 1)]) for i, v in enumerate(values))


def ipv4(options: bytes = b"", ttl: int = 64, ihl: int | None = None, good: bool = True
         ) -> bytes:
    """IPv4 header with ``options``, a correct checksum over both unless ``good`` is False."""
    hlen = 20 + len(options)
    ihl = hlen // 4 if ihl is None else ihl
    hdr = bytearray(20)
    hdr[0], hdr[8], hdr[9] = 0x40 | ihl, ttl, 17
    hdr[2:4] = (hlen + 8).to_bytes(2, "big")
    hdr[12:16], hdr[16:20] = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    data = bytes(hdr) + options
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    hdr[10:12] = ((~total & 0xFFFF) ^ (0 if good else 0x5A5A)).to_bytes(2, "big")
    return bytes(hdr) + options + b"udp-payl"


def frames(name: str) -> list[bytes]:
    """The frames each hand-written program is run with (all enter on port 1)."""
    if name == "stacks":
        out = [eth(op, 0x9000, src) + tags(*vs) + b"tail"
               for op in range(10) for vs in ((), (1,), (1, 2), (1, 2, 3))
               for src in ((0x0A0B0C0D0E00 + op % 3,) if op == 3 else (0x020000000001,))]
        out += [eth(0, 0x9000) + tags(1, 2, 3, 4), eth(1, 0x9000) + bytes([7, 0]),
                eth(4, 0x9000) + bytes([7, 0, 8, 0]), eth(0, 0x0800) + b"plain"]
        return out
    if name == "unions":
        a, b = b"\x12\x34", b"\x56\x78"
        opt = bytes([1, 0]) + bytes([2, 1, 0xAB, 0xCD])  # p (more follow), then q (last)
        out = [eth(op, t) + body + b"tail" for op in range(8)
               for t, body in ((0xA, a), (0xB, b), (0xC, opt), (0xC, bytes([2, 1, 9, 9])),
                               (0x1, b""))]
        out += [eth(0, 0xC) + bytes([1, 0, 1, 0, 1, 1]), eth(0, 0xC) + bytes([3]),
                eth(0, 0xA) + b"\x01"]
        return out
    if name == "varbit":
        out = [eth(op, 0x0800) + ipv4(bytes(range(n))) for op in range(3)
               for n in (0, 4, 8, 40)]
        out += [eth(0, 0x0800) + ipv4(bytes(8), good=False), eth(2, 0x0800) + ipv4(
            bytes(4), good=False), eth(0, 0x0800) + ipv4(ihl=4) + bytes(60),
                eth(0, 0x0800) + ipv4(ihl=15)[:30], eth(0, 0x0800) + ipv4(bytes(12))[:20]]
        return out
    if name == "value_set":  # empty set: no tag parsed; test_reach fills it over P4Runtime
        return [eth(0, t) + b"\x12\x34tail" for t in (0x0800, 0x1234, 0xF234, 0x88B5)]
    h = [(0x12AB, 0x0A000001), (0x1234, 0x0B0C0000), (0x0034, 0x0A0B0C0D), (0x0044, 7),
         (0x12FF, 0x0B0DFFFF)]
    return [eth(0, 0x88B5) + a.to_bytes(2, "big") + b.to_bytes(4, "big") + b"\x00\x00tail"
            for a, b in h] + [eth(0, 0x88B5) + b"\x12", eth(0, 0x0800) + b"plain"]


def compiled_frames(name: str) -> list[bytes]:
    """Frames for the p4c-compiled counterparts in tests/embedded/p4/ (reach_*.p4).  None
    reads a field of an invalid header: bmv2 returns whatever an earlier packet left there."""
    if name == "reach_stacks":
        out = [eth(op, 0x9000, 0x0A0B0C0D0E00 + (op % 3 if op != 4 or len(vs) > 1 else 0))
               + tags(*vs) + b"tail" for op in range(8) for vs in ((), (1,), (1, 2), (1, 2, 3))]
        return out + [eth(0, 0x9000) + tags(1, 2, 3, 4), eth(0, 0x9000) + b"\x07"]
    if name == "reach_unions":
        return [eth(op, t) + body + b"tail" for op in range(5)
                for t, body in ((0xA, b"\x12\x34"), (0xB, b"\x56\x78"), (0x1, b""))]
    return frames("varbit" if name == "reach_varbit" else "const_tables")
