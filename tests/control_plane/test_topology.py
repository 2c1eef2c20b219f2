import json
import time

import networkx as nx
import pytest

from control_plane.model.topologies import build_topology, fattree, fig1, irregular, leafspine
from control_plane.model.topology import Topology, TopologyError


def base():
    return {"nodes": [{"id": "v1", "kind": "switch", "capacity": 6},
                      {"id": "s1", "kind": "ps", "capacity": 4},
                      {"id": "w1", "kind": "worker"}],
            "links": [{"src": "w1", "dst": "v1", "capacity": 6},
                      {"src": "s1", "dst": "v1", "capacity": 6}]}


def test_fig1_matches_design():
    t = fig1()
    assert t.workers == [f"w{i}" for i in range(1, 7)] and t.pss == ["s1", "s2"]
    assert len(t.links) == 18 and all(lk.capacity == 6 for lk in t.links.values())
    assert t.tor("w4") == "v1" and t.tor("s2") == "v2"


@pytest.mark.parametrize("k,switches,hosts", [(4, 20, 16), (6, 45, 54), (8, 80, 128)])
def test_fattree_sizes(k, switches, hosts):
    t = fattree(k)
    assert len(t.switches) == switches
    assert len(t.workers) + len(t.pss) == hosts and len(t.pss) == 4


def test_fattree32_builds_in_seconds():
    # node ids were sorted on every access and reachability searched once per worker:
    # building fattree:32 (8188 workers) took minutes
    t0 = time.perf_counter()
    t = fattree(32)
    assert time.perf_counter() - t0 < 60
    assert len(t.workers) == 8188 and len(t.switches) == 1280
    ids = t.workers
    ids.append("x")
    assert t.workers[-1] == "w8188"  # a fresh list each time


@pytest.mark.parametrize("seed", range(6))
def test_irregular_graphs_are_seeded_connected_and_cyclic(seed):
    t = irregular(6, 9, ps=2, preset="heterogeneous", seed=seed)
    again = build_topology("irregular:6,9", ps=2, preset="heterogeneous", seed=seed)
    assert t.to_dict() == again.to_dict() and t.name == "irregular:6,9"
    fabric = t.graph.subgraph(t.switches)
    assert len(t.switches) == 6 and nx.is_connected(fabric) and nx.cycle_basis(fabric)
    assert len(t.workers) == 7 and len(t.pss) == 2
    with pytest.raises(TopologyError, match="switches=2 must be >= 3"):
        irregular(2, 9)


def test_fattree_ps_choice_is_seeded_and_presets_apply():
    a, b, c = fattree(4, seed=3), fattree(4, seed=3), fattree(4, seed=4)
    assert a.to_dict() == b.to_dict() and a.to_dict() != c.to_dict()
    het = fattree(4, preset="heterogeneous", seed=1)
    caps = {lk.capacity for lk in het.links.values()}
    assert len(caps) > 5 and all(10 <= cap <= 30 for cap in caps)
    assert all(het.links[(x, y)].capacity == het.links[(y, x)].capacity for x, y in het.links)
    assert {het.nodes[v].capacity for v in het.switches} == {9.0}


def test_leafspine_and_spec_parsing():
    t = leafspine(3, 2, 4, ps=2)
    assert len(t.switches) == 5 and len(t.workers) == 10
    assert build_topology("leafspine:3,2,4").to_dict() == t.to_dict()
    with pytest.raises(TopologyError, match="expected fig1"):
        build_topology("ring:4")
    with pytest.raises(TopologyError, match="k=5"):
        build_topology("fattree:5")


def test_file_roundtrip_json_and_yaml(tmp_path):
    t = fig1()
    for name in ("t.json", "t.yaml"):
        t.save(tmp_path / name)
        assert Topology.load(tmp_path / name).to_dict()["links"] == t.to_dict()["links"]


def test_one_direction_is_made_full_duplex():
    t = Topology.from_dict(base())
    assert ("v1", "w1") in t.links and t.links[("v1", "w1")].capacity == 6


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["nodes"].append({"id": "x", "kind": "router", "capacity": 1}), "unknown kind"),
    (lambda d: d["nodes"][0].update(capacity=-1), "negative"),
    (lambda d: d["nodes"][1].pop("capacity"), "missing 'capacity'"),
    (lambda d: d["nodes"].append({"id": "w1", "kind": "worker"}), "duplicate id"),
    (lambda d: d["links"].append({"src": "w1", "dst": "nope", "capacity": 1}), "'nope' does not"),
    (lambda d: d["links"].pop(), "cannot reach PS 's1'"),
    (lambda d: d["links"][0].update(capacity="fast"), "not a finite number"),
])
def test_bad_topologies_name_the_item(mutate, message):
    data = json.loads(json.dumps(base()))
    mutate(data)
    with pytest.raises(TopologyError, match=message):
        Topology.from_dict(data)


def test_hosts_do_not_forward():
    data = base()
    # s1 reachable from w1 only through another worker: not allowed
    data["nodes"].append({"id": "w2", "kind": "worker"})
    data["links"] = [{"src": "w1", "dst": "v1", "capacity": 6},
                     {"src": "v1", "dst": "w2", "capacity": 6},
                     {"src": "w2", "dst": "s1", "capacity": 6}]
    with pytest.raises(TopologyError, match="through switches"):
        Topology.from_dict(data)


def _write(tmp_path, text: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


FIG_YAML = """\
nodes:
  - {id: v1, kind: switch, capacity: 6}
  - {id: s1, kind: ps, capacity: 4}
  - {id: w1, kind: worker}
links:
  - {src: w1, dst: v1, capacity: 2}
  - {src: v1, dst: s1, capacity: 3}
"""


@pytest.mark.parametrize("old,new,message", [
    ("kind: worker}", "kind: worker", r"cluster\.yaml: not valid YAML \(line \d+, column \d+: "),
    ("capacity: 3}", "capacity: 3, bandwidth: 3}",
     r"cluster\.yaml: link v1->s1: unknown field 'bandwidth' \(expected src, dst, capacity"),
    ("links:", "speed: 2\nlinks:", r"cluster\.yaml: topology: unknown field 'speed'"),
    ("  - {id: w1, kind: worker}", "  - {id: w1, kind: worker}\n  - {id: v1, kind: switch}",
     r"cluster\.yaml: nodes\[3\]: duplicate id 'v1' \(nodes\[0\] has it already"),
    ("capacity: 2}", "capacity: 0}",
     r"cluster\.yaml: link w1->v1: 'capacity'=0 \(expected > 0"),
])
def test_topology_file_errors_name_file_field_and_expectation(tmp_path, old, new, message):
    assert Topology.load(_write(tmp_path, FIG_YAML)).workers == ["w1"]
    path = _write(tmp_path, FIG_YAML.replace(old, new, 1))
    with pytest.raises(TopologyError, match=message):
        build_topology(str(path))


def test_a_missing_topology_file_is_named(tmp_path):
    with pytest.raises(TopologyError, match=r"nope\.yaml: cannot read"):
        Topology.load(tmp_path / "nope.yaml")


@pytest.mark.parametrize("spec, options, field", [
    ("fattree:4", {"ps": 0}, "ps=0"), ("fattree:4", {"workers": 0}, "workers=0"),
    ("leafspine:2,2,3", {"ps": 0}, "ps=0"), ("fig1", {"ps": 2}, "fig1: ps given"),
    ("fig1", {"ps": 0}, "ps=0"), ("fig1", {"preset": "homogeneous"}, "preset given"),
    ("fattree:4", {"seed": -1}, "seed=-1")])
def test_options_a_spec_cannot_honour_are_errors(spec, options, field) -> None:
    """0 is not 'the default', and a given option is never ignored."""
    with pytest.raises(TopologyError, match=field):
        build_topology(spec, **options)


def test_a_topology_file_refuses_generator_options(tmp_path) -> None:
    path = tmp_path / "t.json"
    fig1().save(path)
    loaded = build_topology(str(path)).to_dict()
    assert (loaded["nodes"], loaded["links"]) == (fig1().to_dict()["nodes"],
                                                  fig1().to_dict()["links"])
    for options in ({"ps": 2}, {"workers": 3}, {"preset": "heterogeneous"}):
        with pytest.raises(TopologyError, match=f"{next(iter(options))} given, but a "
                                                f"topology file sets its own"):
            build_topology(str(path), **options)


def test_plan_cli_refuses_ps_0(capsys) -> None:
    from control_plane.cli.main import main

    assert main(["plan", "-t", "fattree:4", "--ps", "0"]) == 2
    assert "ps=0: expected an integer >= 1" in capsys.readouterr().err
