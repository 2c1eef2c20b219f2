"""BF Runtime entries built against the SDE's fixed-table schemas (their shape as
open-p4studio's bf_rt_port and bf_rt_pre JSON define them, tests/drivers/data/): list fields
are ``"repeated": true`` on a scalar type and go as arrays, scalars by their type and width,
strings among the field's choices; bad values are refused naming the table and field."""

from __future__ import annotations

import pytest

from control_plane.drivers.bfrt.entities import multicast_entries, port_entry, table_entry
from control_plane.drivers.bfrt.info import BfrtInfo, BfrtInfoError
from tests.drivers.bfrt_fake import FIXED, FIXED_JSON, PB2, check_entry

INFO = BfrtInfo.from_file(FIXED_JSON)


def test_repeated_fields_are_read_from_the_schema():
    node = INFO.table("$pre.node")
    assert node.datum("$MULTICAST_RID").repeated is False
    lag, ports = node.datum("$MULTICAST_LAG_ID"), node.datum("$DEV_PORT")
    assert (lag.kind, lag.width, lag.repeated) == ("uint8", 8, True)
    assert (ports.kind, ports.width, ports.repeated) == ("uint32", 32, True)
    valid = INFO.table("$pre.mgid").datum("$MULTICAST_NODE_L1_XID_VALID")
    assert (valid.kind, valid.repeated) == ("bool", True)
    assert "BF_SPEED_100G" in INFO.table("$PORT").datum("$SPEED").choices


def test_multicast_group_as_the_sde_schema_wants_it():
    """Nodes carry their ports and (empty) LAG ids as int arrays, the group its node ids and
    L1 exclusion ids as int arrays and their valid bits as a bool array; every entry passes
    the same checks as the fake bf_switchd's."""
    entries = multicast_entries(PB2, INFO, 5, [(16, 101), (24, 102)])
    node, mgid = entries[0], entries[-1]
    fields = {f.field_id: (f.WhichOneof("value"), f) for f in node.data.fields}
    assert fields[1][0] == "stream" and fields[1][1].stream == (101).to_bytes(2, "big")
    assert fields[2][0] == "int_arr_val" and list(fields[2][1].int_arr_val.val) == []
    assert fields[3][0] == "int_arr_val" and list(fields[3][1].int_arr_val.val) == [16]
    groups = {f.field_id: f for f in mgid.data.fields}
    assert list(groups[1].int_arr_val.val) == [101, 102]
    assert groups[2].WhichOneof("value") == "bool_arr_val"
    assert list(groups[2].bool_arr_val.val) == [False, False]
    assert list(groups[3].int_arr_val.val) == [0, 0]
    by_id = {t["id"]: t for t in FIXED.values()}
    for te in entries:
        check_entry(by_id[te.table_id], te, insert=True)


@pytest.mark.parametrize("field, value, message", [
    ("$MULTICAST_LAG_ID", [256], r"\$pre.node \$MULTICAST_LAG_ID: element 256: out of range "
                                 r"for uint8"),
    ("$DEV_PORT", 16, r"\$pre.node \$DEV_PORT: expected a list \(uint32, repeated\), got int"),
    ("$DEV_PORT", ["16"], r"\$pre.node \$DEV_PORT: element '16': expected an integer"),
])
def test_bad_list_values_are_named(field, value, message):
    data = {"$MULTICAST_RID": 1, "$MULTICAST_LAG_ID": [], "$DEV_PORT": [16], field: value}
    with pytest.raises(BfrtInfoError, match=message):
        table_entry(PB2, INFO, "$pre.node", {"$MULTICAST_NODE_ID": 1}, None, data)


def test_port_values_are_among_the_schemas_choices():
    te = port_entry(PB2, INFO, 128, "BF_SPEED_100G", "BF_FEC_TYP_REED_SOLOMON", "PM_AN_DEFAULT")
    check_entry(FIXED["$PORT"], te, insert=True)
    with pytest.raises(BfrtInfoError, match=r"\$PORT \$SPEED: 'BF_SPEED_7G' is not one of "
                                            r"BF_SPEED_NONE, .*BF_SPEED_100G"):
        port_entry(PB2, INFO, 128, "BF_SPEED_7G", "BF_FEC_TYP_NONE", "PM_AN_DEFAULT")


def test_entries_are_described_by_name():
    node = multicast_entries(PB2, INFO, 5, [(16, 101)])[0]
    assert INFO.describe(node) == "$pre.node($MULTICAST_NODE_ID=101)"
    lookup = table_entry(PB2, INFO, "$PORT_STR_INFO", {"$PORT_NAME": "1/0"}, None, {})
    assert INFO.describe(lookup) == "$PORT_STR_INFO($PORT_NAME=1/0)"
    assert INFO.describe(PB2.TableEntry(table_id=7)) == "table id 7"
