import json

import pytest

from control_plane.model.plan import PlanError
from host_stack.ina.addresses import AddressError, AddressMap, loopback
from host_stack.ina.jobplan import job_plan, load_plan, parse_plan, star_plan


def star_doc(workers, shares, **kw):
    return json.loads(json.dumps(star_plan(workers, shares, **kw).to_dict()))


def test_star_plan_parses_with_ranks_and_defaults():
    plan = parse_plan(star_doc(4, [0.6, 0.4], job=7))
    assert plan.job == 7 and plan.workers == 4
    assert plan.worker_ids == ("w1", "w2", "w3", "w4") and plan.rank("w3") == 2
    assert plan.ps_ids == ("s1", "s2") and plan.shares["s1"] == 0.6
    assert plan.aggregate_at[("w1", "s1")] is None
    doc = star_doc(2, [1.0])
    del doc["job"]
    assert parse_plan(doc).job == 1


def test_star_plan_is_a_valid_plan_at_the_rate_its_capacities_allow():
    """4 workers, 2 equal PSs, unit capacities: each PS takes 4 x 0.5 f, so f = 0.5."""
    plan = star_plan(4, [0.5, 0.5])
    assert plan.rate == pytest.approx(0.5)
    assert plan.evaluate().binding in ("ps s1", "link v1->s1")
    assert star_plan(4, [0.5, 0.5], capacity=10.0).rate == pytest.approx(5.0)
    assert parse_plan(star_doc(4, [0.5, 0.5])).rate == pytest.approx(0.5)


def test_chunk_ranges_are_contiguous_chunk_aligned_and_follow_shares():
    plan = job_plan(star_plan(2, [0.6, 0.3, 0.1]))
    ranges = plan.chunk_ranges(n_values=32 * 100 - 5, n=32)
    assert ranges == {"s1": (0, 60), "s2": (60, 90), "s3": (90, 100)}
    odd = job_plan(star_plan(2, [1 / 3, 1 / 3, 1 / 3])).chunk_ranges(10 * 32, 32)
    assert sorted(b - a for a, b in odd.values()) == [3, 3, 4]
    assert max(b for _, b in odd.values()) == 10


def test_ranks_follow_the_natural_order_of_ids_unless_the_plan_gives_them():
    plan = job_plan(star_plan(12, [1.0]))
    assert plan.worker_ids[:3] == ("w1", "w2", "w3") and plan.rank("w10") == 9
    doc = star_doc(3, [0.5, 0.5])
    doc["ranks"] = {"w1": 2, "w2": 0, "w3": 1}
    assert parse_plan(doc).worker_ids == ("w2", "w3", "w1")
    with pytest.raises(PlanError, match="worker 'w9': not in the plan"):
        parse_plan(doc).rank("w9")


def test_pacing_follows_the_plans_rate():
    plan = job_plan(star_plan(3, [0.5, 0.5]))  # f = 1 / (3 x 0.5)
    assert plan.ps_rate_bps("s1", 1e6) == pytest.approx(1e6 / 3)
    assert plan.ps_rate_bps("s1", None) is None


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.update(schema="inart.plan/0"), "'schema'"),
    (lambda d: d.update(job=70000), "'job'=70000: expected an integer 0..65535"),
    (lambda d: d.update(job="1"), "'job'"),
    (lambda d: d.update(rate=-1), "'rate'=-1: expected a finite number >= 0"),
    (lambda d: d.update(rate=float("nan")), "'rate'=nan"),
    (lambda d: d.update(rate=99), r"'rate'=99: its loads allow at most 1 \(binding: "),
    (lambda d: d["partition"].update(s1=0.7), "'partition'"),
    (lambda d: d["partition"].update(v1=0.0), "'partition'"),
    (lambda d: d["flows"][0].update(ps="s9"), r"flows\[0\].*'ps' 's9'"),
    (lambda d: d["flows"][1].update(aggregate_at="w1"), r"flows\[1\].*'aggregate_at'"),
    (lambda d: d.update(ranks={"w1": 0, "w2": 0}), "'ranks'"),
    (lambda d: d["topology"]["nodes"].append({"id": "x"}), "'topology'.*node 'x'"),
])
def test_bad_plans_name_the_field(mutate, field):
    doc = star_doc(2, [0.5, 0.5])
    mutate(doc)
    with pytest.raises(PlanError, match=field):
        parse_plan(doc)


def fig1_doc(scheme):
    from control_plane.model.topologies import fig1
    from control_plane.solver.solve import solve

    return solve(fig1(), scheme=scheme, seed=0).to_dict()


def test_a_rate_above_what_the_topology_allows_is_refused_by_name(tmp_path):
    """`"rate": 99` on fig1 (optimum 2.5) used to reach the pacing unchecked."""
    (tmp_path / "plan.json").write_text(json.dumps(dict(fig1_doc("inart"), rate=99)))
    with pytest.raises(PlanError, match=r"'rate'=99: its loads allow at most 2.5 \(binding"):
        load_plan(tmp_path / "plan.json")


def test_a_path_over_a_missing_link_is_refused_by_name(tmp_path):
    """w1 hangs off v1 only: the lbmm plan's direct flow w1 -> s1 rerouted over w1 -> v2."""
    doc = fig1_doc("lbmm")
    i = next(i for i, f in enumerate(doc["flows"]) if (f["worker"], f["ps"]) == ("w1", "s1"))
    doc["flows"][i]["path"] = ["w1", "v2", "s1"]
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    with pytest.raises(PlanError, match=rf"flows\[{i}\] \(w1->s1\) 'path': no link w1->v2 in "
                                        r"the topology \(links from w1: w1->v1\)"):
        load_plan(tmp_path / "plan.json")


def test_plan_file_errors(tmp_path):
    with pytest.raises(PlanError, match="plan file"):
        load_plan(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(PlanError, match="not JSON"):
        load_plan(bad)
    good = tmp_path / "good.json"
    star_plan(1, [1.0]).save(good)
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
    """The loader accepts what control_plane.model.plan saves."""
    from control_plane.model.topologies import build_topology
    from control_plane.solver.solve import solve

    plan = solve(build_topology("fig1"), scheme="inart", seed=0)
    plan.save(tmp_path / "fig1.json")
    job = load_plan(tmp_path / "fig1.json")
    assert job.worker_ids == ("w1", "w2", "w3", "w4", "w5", "w6")
    assert job.ps_ids == ("s1", "s2") and abs(sum(job.shares.values()) - 1) < 1e-9
    assert job.rate == pytest.approx(plan.rate)
    assert any(v is not None for v in job.aggregate_at.values())  # INA flows are kept
    ranges = job.chunk_ranges(9930, 32)
    assert ranges["s1"][0] == 0 and ranges["s2"][1] == 311
