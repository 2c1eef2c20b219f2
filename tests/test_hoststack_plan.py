import json

import pytest

from host_stack.ina.addresses import AddressError, AddressMap, loopback
from host_stack.ina.jobplan import PlanError, load_plan, parse_plan, star_plan


def test_star_plan_parses_with_ranks_and_defaults():
    plan = parse_plan(star_plan(4, [0.6, 0.4], job=7))
    assert plan.job == 7 and plan.workers == 4
    assert plan.worker_ids == ("w1", "w2", "w3", "w4") and plan.rank("w3") == 2
    assert plan.ps_ids == ("s1", "s2") and plan.shares["s1"] == 0.6
    assert plan.aggregate_at[("w1", "s1")] is None
    doc = star_plan(2, [1.0])
    del doc["job"]
    assert parse_plan(doc).job == 1


def test_chunk_ranges_are_contiguous_chunk_aligned_and_follow_shares():
    plan = parse_plan(star_plan(2, [0.6, 0.3, 0.1]))
    ranges = plan.chunk_ranges(n_values=32 * 100 - 5, n=32)
    assert ranges == {"s1": (0, 60), "s2": (60, 90), "s3": (90, 100)}
    odd = parse_plan(star_plan(2, [1 / 3, 1 / 3, 1 / 3])).chunk_ranges(10 * 32, 32)
    assert sorted(b - a for a, b in odd.values()) == [3, 3, 4]
    assert max(b for _, b in odd.values()) == 10


def test_explicit_ranks_and_rates():
    doc = star_plan(3, [0.5, 0.5], rate=2.0)
    doc["ranks"] = {"w1": 2, "w2": 0, "w3": 1}
    plan = parse_plan(doc)
    assert plan.worker_ids == ("w2", "w3", "w1")
    assert plan.ps_rate_bps("s1", 1e6) == pytest.approx(1e6)
    assert plan.ps_rate_bps("s1", None) is None


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.update(schema="inart.plan/0"), "schema"),
    (lambda d: d.update(job=70000), "job"),
    (lambda d: d.update(rate=-1), "rate"),
    (lambda d: d["partition"].update(s1=0.7), "partition"),
    (lambda d: d["partition"].update(v1=0.0), "partition"),
    (lambda d: d["flows"][0].update(ps="s9"), "flows[0].ps"),
    (lambda d: d["flows"][1].update(aggregate_at="w1"), "flows[1].aggregate_at"),
    (lambda d: d.update(ranks={"w1": 0, "w2": 0}), "ranks"),
    (lambda d: d["topology"]["nodes"].append({"id": "x"}), "topology.nodes"),
])
def test_bad_plans_name_the_field(mutate, field):
    doc = star_plan(2, [0.5, 0.5])
    mutate(doc)
    with pytest.raises(PlanError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_plan(doc)


def test_plan_file_errors(tmp_path):
    with pytest.raises(PlanError, match="plan file"):
        load_plan(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(PlanError, match="not JSON"):
        load_plan(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(star_plan(1, [1.0])))
    assert load_plan(good).workers == 1


def test_address_map_roundtrip_defaults_and_errors():
    amap = AddressMap.from_json('{"s1": "10.0.0.5", "w1": "10.0.0.1:5000"}', ps_ids=["s1"])
    assert amap["s1"] == ("10.0.0.5", 47000) and amap["w1"] == ("10.0.0.1", 5000)
    assert AddressMap.from_json(amap.to_json()).entries == amap.entries
    with pytest.raises(AddressError, match="w2"):
        amap.require(["s1", "w2"])
    with pytest.raises(AddressError, match="port"):
        AddressMap.from_json('{"s1": "h:99999"}')
    ports = {p for _, p in loopback(["a", "b", "c"]).entries.values()}
    assert len(ports) == 3


def test_reads_plans_the_control_plane_writes(tmp_path):
    """The loader accepts what control_plane.plan saves."""
    from control_plane.solve import solve
    from control_plane.topologies import build_topology

    plan = solve(build_topology("fig1"), scheme="inart", seed=0)
    plan.save(tmp_path / "fig1.json")
    job = load_plan(tmp_path / "fig1.json")
    assert job.worker_ids == ("w1", "w2", "w3", "w4", "w5", "w6")
    assert job.ps_ids == ("s1", "s2") and abs(sum(job.shares.values()) - 1) < 1e-9
    assert job.rate == pytest.approx(plan.rate)
    assert any(v is not None for v in job.aggregate_at.values())  # INA flows are kept
    ranges = job.chunk_ranges(9930, 32)
    assert ranges["s1"][0] == 0 and ranges["s2"][1] == 311
