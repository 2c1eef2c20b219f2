"""BF Runtime table entries for what the deploy layer produces (table entries by P4Info names,
PRE multicast groups) and for bf_switchd's port tables.

Values go as the schema's field types say and as the SDE's own client sends them: integers
as big-endian byte streams of the field's full width (P4Runtime's canonical form drops
leading zeros; BF Runtime does not accept that), strings (one of the field's ``choices``,
e.g. ``$SPEED``) and booleans as such, and fields marked ``"repeated": true`` (the PRE
tables' lists of ports, nodes and L1 exclusion ids) as integer or boolean arrays.
``pb2`` is the SDE's ``bfruntime_pb2`` (control_plane/drivers/bfrt/sde.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType

from control_plane.drivers.bfrt.info import (
    SCALAR_WIDTHS,
    BfrtInfo,
    BfrtInfoError,
    Field,
    Table,
)
from control_plane.drivers.p4runtime.values import P4RuntimeError, Value, encode_value

PORT_TABLE = "$PORT"
PORT_STR_INFO = "$PORT_STR_INFO"
PRE_NODE = "$pre.node"
PRE_MGID = "$pre.mgid"


def full_width(value: Value, f: Field, what: str) -> bytes:
    """``value`` as ``f``'s full-width big-endian bytes."""
    try:
        raw = encode_value(value, f.width, what)
    except P4RuntimeError as exc:
        raise BfrtInfoError(str(exc)) from None
    return raw.rjust(f.nbytes, b"\0")


def _key(pb2: ModuleType, table: Table, name: str, value: Value):
    f = table.key(name)
    what = f"{table.name} key {name}"
    kf = pb2.KeyField(field_id=f.id)
    if f.match.lower() == "lpm":
        text = str(value)
        addr, slash, plen = text.partition("/")
        prefix = int(plen) if slash else f.width
        if not 0 <= prefix <= f.width:
            raise BfrtInfoError(f"{what}: prefix length {prefix}: expected 0..{f.width}")
        kf.lpm.value = full_width(addr, f, what)
        kf.lpm.prefix_len = prefix
    elif f.match.lower() in ("exact", ""):
        if f.kind == "string":
            kf.exact.value = str(value).encode()
        else:
            kf.exact.value = full_width(value, f, what)
    else:
        raise BfrtInfoError(f"{what}: match type {f.match} is not used by inart")
    return kf


def _element(value: object, f: Field, what: str) -> int:
    """One element of a repeated integer field, in range of its scalar type."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BfrtInfoError(f"{what}: element {value!r}: expected an integer ({f.kind})")
    if not 0 <= value < 1 << min(f.width or 32, 32):
        raise BfrtInfoError(f"{what}: element {value}: out of range for {f.kind}")
    return value


def _datum(pb2: ModuleType, f: Field, value: object, what: str):
    """A DataField as bf_switchd's schema says: repeated fields as lists, scalars by type."""
    df = pb2.DataField(field_id=f.id)
    if f.repeated:
        if not isinstance(value, (list, tuple)):
            raise BfrtInfoError(f"{what}: expected a list ({f.kind}, repeated), got "
                                f"{type(value).__name__}")
        if f.kind == "bool":
            df.bool_arr_val.SetInParent()  # an empty list is a value too
            df.bool_arr_val.val.extend(bool(v) for v in value)
        elif f.kind == "string":
            df.str_arr_val.SetInParent()
            df.str_arr_val.val.extend(str(v) for v in value)
        elif f.kind in SCALAR_WIDTHS or f.kind == "bytes":
            df.int_arr_val.SetInParent()
            df.int_arr_val.val.extend(_element(v, f, what) for v in value)
        else:
            raise BfrtInfoError(f"{what}: repeated {f.kind} fields are not used by inart")
    elif f.kind == "string":
        if f.choices and str(value) not in f.choices:
            raise BfrtInfoError(f"{what}: {value!r} is not one of {', '.join(f.choices)}")
        df.str_val = str(value)
    elif f.kind == "bool":
        df.bool_val = bool(value)
    elif f.kind in SCALAR_WIDTHS or f.kind == "bytes":
        df.stream = full_width(value, f, what)  # type: ignore[arg-type]
    else:
        raise BfrtInfoError(f"{what}: {f.kind} fields are not used by inart")
    return df


def table_entry(pb2: ModuleType, info: BfrtInfo, table: str, match: Mapping[str, Value],
                action: str | None, params: Mapping[str, object]):
    """A TableEntry: P4 tables take ``action`` + its params, fixed tables table data."""
    t = info.table(table)
    te = pb2.TableEntry(table_id=t.id)
    missing = set(t.keys) - set(match)
    if missing:
        raise BfrtInfoError(f"table {t.name}: key field(s) {', '.join(sorted(missing))} "
                            f"missing")
    te.key.fields.extend(_key(pb2, t, name, value) for name, value in match.items())
    if action is not None:
        action_id, fields = t.action(action)
        te.data.action_id = action_id
        for name, value in params.items():
            if name not in fields:
                raise BfrtInfoError(f"action {action}: no parameter '{name}' (has "
                                    f"{', '.join(fields)})")
            te.data.fields.append(_datum(pb2, fields[name], value, f"{action} {name}"))
        unset = set(fields) - set(params)
        if unset:
            raise BfrtInfoError(f"action {action}: parameter(s) {', '.join(sorted(unset))} "
                                f"missing")
    else:
        for name, value in params.items():
            te.data.fields.append(_datum(pb2, t.datum(name), value, f"{t.name} {name}"))
    return te


def multicast_entries(pb2: ModuleType, info: BfrtInfo, group_id: int,
                      replicas: list[tuple[int, int]]) -> list:
    """The PRE entries of one group: a ``$pre.node`` per replica (node id = replica id,
    unique per switch, as ``result_rewrite`` needs anyway), then the ``$pre.mgid`` that
    lists them.  Replicas are (dev port, replica id)."""
    nodes = [table_entry(pb2, info, PRE_NODE, {"$MULTICAST_NODE_ID": rid}, None,
                         {"$MULTICAST_RID": rid, "$MULTICAST_LAG_ID": [],
                          "$DEV_PORT": [port]})
             for port, rid in replicas]
    ids = [rid for _, rid in replicas]
    mgid = table_entry(pb2, info, PRE_MGID, {"$MGID": group_id}, None,
                       {"$MULTICAST_NODE_ID": ids,
                        "$MULTICAST_NODE_L1_XID_VALID": [False] * len(ids),
                        "$MULTICAST_NODE_L1_XID": [0] * len(ids)})
    return [*nodes, mgid]


def port_entry(pb2: ModuleType, info: BfrtInfo, dev_port: int, speed: str, fec: str,
               autoneg: str):
    """A ``$PORT`` entry that adds and enables one port (values as bf_switchd names them)."""
    return table_entry(pb2, info, PORT_TABLE, {"$DEV_PORT": dev_port}, None,
                       {"$SPEED": speed, "$FEC": fec, "$AUTO_NEGOTIATION": autoneg,
                        "$PORT_ENABLE": True})


def port_lookup_entry(pb2: ModuleType, info: BfrtInfo, front: str):
    """A ``$PORT_STR_INFO`` key to read: front-panel name (e.g. '1/0') -> ``$DEV_PORT``."""
    return table_entry(pb2, info, PORT_STR_INFO, {"$PORT_NAME": front}, None, {})
