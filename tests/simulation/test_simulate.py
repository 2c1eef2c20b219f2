"""The flow-level simulation: plans reproduced, byte models, units, errors, the CLI."""

from __future__ import annotations

import json
import re

import pytest

from control_plane.cli.main import main
from control_plane.model.topologies import build_topology, command_seed, fattree, fig1
from control_plane.solver.solve import plan_for
from simulation import ina
from simulation.host_cost import DEFAULT_HOST_OVERHEAD_US
from simulation.profiles import BUILTIN, ProfileError, load_profile
from simulation.run import INA_SCHEMES, SCHEMES, SimulationError, simulate

MB = 97_500_000


@pytest.fixture(scope="module")
def fattree6():
    return build_topology("fattree:6")


@pytest.mark.parametrize("scheme", INA_SCHEMES)
@pytest.mark.parametrize("spec", ["fig1", "fattree:6"])
def test_a_paced_plan_runs_at_its_own_rate(spec, scheme, fattree6) -> None:
    """The plan's gradients, each segment paced to f x_s through every link, C(v) and B(s)
    of the model, take the plan's communication time: within 1%, at 100 Gbit/s."""
    topo = fattree6 if spec == "fattree:6" else fig1()
    plan = plan_for(topo, scheme, 0)
    r = simulate(topo, scheme, plan=plan, model_bytes=MB, link_gbps=100, results=False)
    assert r.plan_rate_bps == pytest.approx(plan.rate * r.unit_bps)
    assert r.comm_time_s == pytest.approx(r.plan_comm_time_s, rel=0.01)
    assert r.rate_per_worker_bps == pytest.approx(r.plan_rate_bps, rel=0.01)


def test_a_plan_faster_than_its_constraints_is_slowed_by_them() -> None:
    """The check can fail: senders paced 1.5x above fig1's InArt plan (bound by B(s) and
    C(v)) only get what the links, switches and PSs carry."""
    topo = fig1()
    r = simulate(topo, "inart", model_bytes=MB, link_gbps=10, pace=1.5, results=False)
    assert r.comm_time_s > 1.2 * r.plan_comm_time_s / 1.5


def test_switch_and_ps_capacities_constrain() -> None:
    """Without C(v) and B(s) in the model, fig1's ATP plan (bound by them) would run
    faster when paced above its rate; with them it runs at the plan's rate."""
    plan = plan_for(fig1(), "atp", 0)
    r = simulate(fig1(), "atp", plan=plan, model_bytes=MB, link_gbps=10, pace=3.0,
                 results=False)
    assert plan.evaluate().binding.split()[0] in ("switch", "ps")
    assert r.comm_time_s == pytest.approx(r.plan_comm_time_s, rel=0.01)


def test_ina_bytes_are_frames_and_aggregation_cuts_ps_ingress() -> None:
    topo = fig1()
    inart = simulate(topo, "inart", model_bytes=MB, link_gbps=10)
    lbmm = simulate(topo, "lbmm", model_bytes=MB, link_gbps=10)
    frames = ina.shard_frames(MB, 1.0)
    assert frames / MB == pytest.approx(ina.FRAME / ina.PAYLOAD, rel=1e-4)
    # lbmm: every worker's full gradient reaches the PSs
    assert sum(lbmm.ps_ingress_bytes.values()) == pytest.approx(6 * frames, rel=1e-4)
    assert sum(inart.ps_ingress_bytes.values()) < 0.5 * sum(lbmm.ps_ingress_bytes.values())
    assert inart.worker_bytes == pytest.approx(frames, rel=1e-4)


def test_ring_sends_its_byte_model_at_line_rate() -> None:
    """Ring: 2(n-1)/n of the gradient per worker in TCP frames (1.046x: 66 header bytes per
    1448) plus an ACK per two segments it receives (1.023x), and on fig1 (every link 10
    Gbit/s here, one ring hop per direction of v1-v2) at line rate."""
    r = simulate(fig1(), "ring", model_bytes=MB, link_gbps=10, latency_us=0, host_overhead_us=0)
    payload = 2 * 5 / 6 * MB
    assert r.worker_bytes / payload == pytest.approx(1 + 66 / 1448 + 33 / 1448, rel=1e-3)
    data = max(r.link_bytes.values())
    assert r.comm_time_s == pytest.approx(data * 8 / 10e9, rel=0.01)


def test_latency_adds_per_hop_on_the_ring_chain() -> None:
    fast = simulate(fig1(), "ring", model_bytes=MB, link_gbps=10, latency_us=0)
    slow = simulate(fig1(), "ring", model_bytes=MB, link_gbps=10, latency_us=100)
    # 2(n-1) = 10 steps, the longest route w4 -> v1 -> v2 -> w5 has 3 hops
    assert slow.comm_time_s - fast.comm_time_s == pytest.approx(10 * 3 * 100e-6, rel=1e-6)


def test_units() -> None:
    topo = fig1()
    assert simulate(topo, "ring", model_bytes=MB, link_gbps=25).link_gbps == pytest.approx(25)
    emu = simulate(topo, "inart", model_bytes=MB, scale_mbps=0.5, results=False)
    assert emu.plan_rate_bps == pytest.approx(2.5 * 0.5e6)  # fig1 InArt 2.5 units
    default = simulate(topo, "ring", model_bytes=MB)
    assert default.link_gbps == pytest.approx(6)  # one unit is 1 Gbit/s


@pytest.mark.parametrize("kwargs, field", [
    ({"model_bytes": 0}, "model_bytes"), ({"link_gbps": -1}, "link_gbps"),
    ({"iterations": 0}, "iterations"), ({"latency_us": -1}, "latency_us"),
    ({"link_gbps": 10, "scale_mbps": 1}, "scale_mbps")])
def test_bad_arguments_name_the_field(kwargs, field) -> None:
    args = {"model_bytes": MB} | kwargs
    with pytest.raises(SimulationError, match=field):
        simulate(fig1(), "ring", **args)
    with pytest.raises(SimulationError, match="scheme"):
        simulate(fig1(), "torus", model_bytes=MB)


def test_profiles(tmp_path) -> None:
    assert BUILTIN["resnet50"].model_bytes / 2**20 == pytest.approx(97.5, abs=0.05)
    assert BUILTIN["vgg19"].model_bytes / 2**20 == pytest.approx(548.0, abs=0.05)
    assert load_profile("synthetic:1e6").model_bytes == 1_000_000
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"name": "mlp", "model_bytes": 4000, "compute_s": 0.01}))
    assert load_profile(str(f)).compute_s == 0.01
    assert load_profile(str(f), compute_s=0.5).compute_s == 0.5
    f.write_text(json.dumps({"model_bytes": -3}))
    with pytest.raises(ProfileError, match="model_bytes"):
        load_profile(str(f))
    with pytest.raises(ProfileError, match="synthetic"):
        load_profile("synthetic:x")


def test_cli_prints_every_scheme(tmp_path, capsys) -> None:
    out = tmp_path / "r.json"
    assert main(["simulate", "-t", "fig1", "-s", "all", "--link-gbps", "100",
                 "--compute-ms", "5", "--json", str(out), "--csv", str(tmp_path / "r.csv"),
                 "--plot", str(tmp_path / "r.png"), "--out", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    rows = [line.split() for line in text.splitlines() if line.startswith("fig1 ")]
    assert [r[2] for r in rows] == list(SCHEMES)
    data = json.loads(out.read_text())
    assert [r["scheme"] for r in data["results"]] == list(SCHEMES)
    assert all(r["iteration_time_s"] == pytest.approx(r["comm_time_s"] + 0.005)
               for r in data["results"])
    assert (tmp_path / "r.png").stat().st_size > 0
    assert (tmp_path / "r.csv").read_text().startswith("topology,")


def test_cli_plots_several_topologies_and_takes_a_plan(tmp_path, capsys) -> None:
    plan = plan_for(fig1(), "atp", 0)
    plan.save(tmp_path / "atp.json")
    out = ["--out", str(tmp_path / "out")]
    assert main(["simulate", "-t", "fig1", "-s", "atp", "--plan", str(tmp_path / "atp.json"),
                 "--link-gbps", "10", *out]) == 0
    assert json.loads((tmp_path / "out" / "simulate.json").read_text())["setup"]["plans"] == \
        [str(tmp_path / "atp.json")]
    assert main(["simulate", "-t", "fig1,fattree:4", "-s", "inart,ring", "--model",
                 "synthetic:1000000", "--plot", str(tmp_path / "w.png"), *out]) == 0
    assert (tmp_path / "w.png").stat().st_size > 0
    assert not (tmp_path / "out" / "simulate.png").exists()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "-t", "fig1", "-s", "ring,torus"])
    assert exit_.value.code == 2 and "unknown: torus" in capsys.readouterr().err



def test_bench_prints_labelled_figures(tmp_path, capsys) -> None:
    out = tmp_path / "b.json"
    assert main(["bench", "simulate", "-k", "4", "--scheme", "atp,ring", "--json",
                 str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [
        "simulate.wall[fattree:4", "simulate.sim/plan[fattree:4", "simulate.wall[fattree:4",
        "simulate.peak_rss[fattree:4]"]
    figures = json.loads(out.read_text())["figures"]
    assert {f["name"]: f.get("met") for f in figures}["simulate.sim/plan[fattree:4 atp]"]
    assert all({"name", "value", "unit"} <= set(f) for f in figures)
    walls = [f for f in figures if f["name"].startswith("simulate.wall")]
    assert all(f["user_s"] >= 0 and f["sys_s"] >= 0 for f in walls)
    assert all("user_s=" in line and "sys_s=" in line for line in lines
               if line.startswith("simulate.wall"))


def test_bench_says_how_a_collective_ran(tmp_path, capsys, monkeypatch) -> None:
    """The tree in phases (simulation/phases.py) is an approximation: the wall figure says so."""
    from simulation import run as run_module

    monkeypatch.setattr(run_module, "TREE_PHASES_ABOVE", 0)
    assert main(["bench", "simulate", "-k", "4", "--scheme", "tree"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("simulate.wall[fattree:4 tree]")
    assert line.endswith("note=rank by rank in phases")


def test_a_plan_for_another_cluster_is_refused(tmp_path, capsys) -> None:
    plan = plan_for(build_topology("fattree:4"), "atp", 0)
    plan.save(tmp_path / "atp.json")
    assert main(["simulate", "-t", "fig1", "-s", "atp", "--plan",
                 str(tmp_path / "atp.json")]) == 2
    err = capsys.readouterr().err
    assert "--plan" in err and "its workers and PSs differ" in err
    assert "0/1" not in err  # refused before the first simulation
    assert main(["simulate", "-t", "fig1", "--model", "resnet5"]) == 2
    assert "--model" in capsys.readouterr().err


def test_host_overhead_adds_once_per_message_on_each_collectives_chain() -> None:
    """Ring: 2(n-1) steps, each one message after another; tree: one per stage.  RSGCM's gloo
    ring all-reduces pay it twice a message (the sender reacting to the notice, the receiver
    waking up), but with two segments in flight it hides behind the next one's transfer on
    the links, so the whole costs far less than two a message in a row.  INA schemes send
    paced datagrams and pay none."""
    from host_stack.collectives.p2p import gloo_ring_segments
    from simulation.collectives import rsgcm_schedule
    from simulation.gloo_rings import ELEMENT

    topo, o = build_topology("fattree:4"), 250.0
    base = {"model_bytes": MB, "link_gbps": 10, "latency_us": 0, "routing": "dst"}
    diff = {s: simulate(topo, s, host_overhead_us=o, **base).comm_time_s
            - simulate(topo, s, host_overhead_us=0, **base).comm_time_s
            for s in ("ring", "tree", "rsgcm", "atp")}
    assert diff["ring"] == pytest.approx(2 * (12 - 1) * o * 1e-6, rel=1e-6)
    assert diff["tree"] == pytest.approx(
        len(simulate(topo, "tree", **base).stages) * o * 1e-6, rel=1e-6)
    steps, nblocks, _ = rsgcm_schedule(12, 0)
    block = -(-MB // nblocks // ELEMENT) * ELEMENT
    chain = sum(max(2 * len(gloo_ring_segments(block, ELEMENT, len(r), 0)[0])
                    for r, _ in step if len(r) > 1) for step in steps)
    assert 2 * o * 1e-6 <= diff["rsgcm"] < chain * o * 1e-6 / 10
    assert diff["atp"] == 0


def test_host_overhead_must_be_a_number_at_least_0() -> None:
    with pytest.raises(SimulationError, match="host_overhead_us"):
        simulate(fig1(), "ring", model_bytes=MB, host_overhead_us=-1)


def test_the_default_host_cost_is_gloos_measured_one(capsys) -> None:
    """Collectives pay gloo's measured time per message unless told otherwise (the ring's
    2(n-1) steps on its chain), and the printed result says which cost it assumed."""
    topo = build_topology("fattree:4")
    base = {"model_bytes": 1_000_000, "link_gbps": 10, "latency_us": 0}
    default = simulate(topo, "ring", **base)
    ideal = simulate(topo, "ring", host_overhead_us=0, **base)
    assert DEFAULT_HOST_OVERHEAD_US > 0 and default.host_overhead_us == DEFAULT_HOST_OVERHEAD_US
    assert default.comm_time_s - ideal.comm_time_s == pytest.approx(
        2 * (12 - 1) * DEFAULT_HOST_OVERHEAD_US * 1e-6, rel=1e-6)
    assert main(["simulate", "-t", "fig1", "-s", "ring", "--model", "synthetic:100000"]) == 0
    out = capsys.readouterr().out
    assert f"host overhead {DEFAULT_HOST_OVERHEAD_US:g} us per collective message (gloo" in out
    assert main(["simulate", "-t", "fig1", "-s", "ring", "--model", "synthetic:100000",
                 "--host-overhead-us", "0"]) == 0
    assert "host overhead 0 us per collective message\n" in capsys.readouterr().out


@pytest.mark.parametrize("seed", [0, 3])
def test_plan_and_simulate_build_one_cluster(tmp_path, capsys, seed) -> None:
    """`inart plan --json` then `inart simulate --plan` (the documented workflow) and
    `inart simulate` solving its own plan run on one cluster for one --seed: the same PSs
    in the same places, the same InArt time."""
    plan_file = tmp_path / "inart.json"
    assert main(["plan", "-t", "fattree:4", "--scheme", "inart", "--seed", str(seed),
                 "--json", str(plan_file), "--out", str(tmp_path / "out")]) == 0
    given, solved = tmp_path / "given.json", tmp_path / "solved.json"
    common = ["simulate", "-t", "fattree:4", "--seed", str(seed), "--model", "synthetic:1000000"]
    assert main([*common, "-s", "inart,ring", "--plan", str(plan_file),
                 "--json", str(given)]) == 0
    assert main([*common, "-s", "inart", "--json", str(solved)]) == 0
    planned = json.loads(plan_file.read_text())["topology"]
    built = build_topology("fattree:4", seed=command_seed(seed)).to_dict()
    assert (planned["nodes"], planned["links"]) == (built["nodes"], built["links"])
    times = [json.loads(f.read_text())["results"][0]["comm_time_s"] for f in (given, solved)]
    assert times[0] == pytest.approx(times[1], rel=1e-9)
    capsys.readouterr()


def test_the_seed_places_the_pss_for_every_command() -> None:
    """One seed meaning: the builders and the spec builder draw the same cluster for a seed,
    a command's --seed maps to it in one place, and another seed moves the PSs."""
    def ps_places(t):
        return sorted(lk.dst for lk in t.links.values() if lk.src in t.pss)

    for seed in range(3):
        assert fattree(4, seed=seed).to_dict() == \
            build_topology("fattree:4", seed=seed).to_dict()
    assert ps_places(build_topology("fattree:4", seed=command_seed(0))) == \
        ps_places(build_topology("fattree:4")) == ps_places(fattree(4))
    assert ps_places(build_topology("fattree:4", seed=command_seed(0))) != \
        ps_places(build_topology("fattree:4", seed=command_seed(3)))
    with pytest.raises(ValueError, match="seed=-1"):
        command_seed(-1)


def test_ina_latency_is_the_dependency_chain() -> None:
    """An INA chain is a worker's flow to its switch, the switch's stream on to the PS and
    the result back down the PS's tree: its hops, not the longest segment's, times the hop
    latency (fattree:4 InArt: 6 hops of gradients where the longest segment has 5)."""
    topo = build_topology("fattree:4")
    plan = plan_for(topo, "inart", 0)
    streams = {(st.switch, st.ps): len(st.path) - 1 for st in plan.streams}
    up = {(f.worker, f.ps): len(f.path) - 1
          + (streams[(f.aggregate_at, f.ps)] if f.aggregate_at else 0) for f in plan.flows}
    longest_segment = max(len(t) - 1 for t in [f.path for f in plan.flows]
                          + [st.path for st in plan.streams])
    assert max(up.values()) == 6 and longest_segment == 5

    def dist(src: str, dst: str) -> int:  # hops of the shortest way through switches
        seen, frontier, hops = {src}, [src], 0
        while dst not in seen:
            hops += 1
            frontier = [nb for n in frontier if n == src or topo.nodes[n].kind == "switch"
                        for nb in topo.graph[n] if nb not in seen]
            seen.update(frontier)
        return hops

    down = max(hops + dist(ps, w) for (w, ps), hops in up.items())
    for results, hops in ((False, max(up.values())), (True, down)):
        args = {"plan": plan, "model_bytes": 1_000_000, "link_gbps": 20, "results": results}
        slow = simulate(topo, "inart", latency_us=100, **args)
        fast = simulate(topo, "inart", latency_us=0, **args)
        assert slow.comm_time_s - fast.comm_time_s == pytest.approx(hops * 100e-6, rel=1e-9)
    assert down > 6


def test_a_fattree_too_big_for_the_machine_is_refused_before_it_is_built(
        monkeypatch, capsys) -> None:
    """fattree:200 (2,000,000 hosts) is refused at once, naming the estimate and the flag
    that overrides it; a run that fits goes on, and --force runs one that does not."""
    import time

    from simulation import size

    monkeypatch.setattr(size, "available_bytes", lambda: 8e9)
    t0 = time.perf_counter()
    assert main(["simulate", "-t", "fig1,fattree:200", "-s", "ring"]) == 2
    assert time.perf_counter() - t0 < 5
    assert re.search(r"--topology fig1,fattree:200: fattree:200: 2,000,000 hosts, 50,000 "
                     r"switches.*estimated [\d.]+ GB at the peak.*--force",
                     capsys.readouterr().err)
    est = size.check_specs(["fattree:16"], ["ring", "tree"], limit_bytes=64e9)[0]
    assert (est.hosts, est.switches, est.links) == (1024, 320, 3072) and est.scheme == "tree"
    assert len(build_topology("fattree:16").links) == 2 * est.links
    monkeypatch.setattr(size, "available_bytes", lambda: 1.0)
    assert main(["simulate", "-t", "fattree:4", "-s", "ring", "--model",
                 "synthetic:100000"]) == 2
    assert "fattree:4: 16 hosts" in capsys.readouterr().err
    assert main(["simulate", "-t", "fattree:4", "-s", "ring", "--model", "synthetic:100000",
                 "--force"]) == 0
    capsys.readouterr()
