"""Hardware presets: C(v) from each switch preset, the host presets, their sources printed by
`inart simulate --preset NAME --explain`, and the paper's preset giving today's cluster."""

from __future__ import annotations

import pytest

from control_plane.cli.main import main
from control_plane.model.topologies import build_topology
from simulation import ina
from simulation.hardware import HOSTS, SWITCHES, PresetError, parse, with_switches
from simulation.profiles import BUILTIN
from simulation.run import simulate, unit_bps

MB = BUILTIN["resnet50"].model_bytes


def test_paper_preset_is_the_homogeneous_cluster() -> None:
    """45% of a link: fattree:8's switches keep C(v) = 9 units of its 20-unit links, so the
    map's paper cells are today's clusters."""
    topo = build_topology("fattree:8")
    same = with_switches(topo, SWITCHES["paper"], unit_bps(topo, 100, None))
    assert {n.capacity for n in same.nodes.values() if n.kind == "switch"} == {9.0}
    assert {n.id: n.capacity for n in same.nodes.values() if n.kind != "switch"} == \
        {n.id: n.capacity for n in topo.nodes.values() if n.kind != "switch"}


def test_tofino_is_port_bound_at_100g_and_recirculation_bound_at_400g() -> None:
    """At 100 Gbit/s a 32-port Tofino aggregates what its ports bring; at 400 the harvest's
    recirculation port (one per pipe) is the bound, below the ports."""
    tofino = SWITCHES["tofino1"]
    assert tofino.capacity_bps(32, 100e9) == pytest.approx(32 * 100e9)
    at400 = tofino.capacity_bps(32, 400e9)
    f = {k: v.value for k, v in tofino.figures.items()}
    frame_bits = 8 * ina.FRAME * 64 * 4 / ina.PAYLOAD
    recirc_pps = 100e9 / (8 * (f["frame_bytes"] + f["recirc_header"]))
    assert at400 == pytest.approx(4 * recirc_pps * 16 * frame_bits)
    assert at400 < 32 * 400e9


@pytest.mark.parametrize("name", ["bmv2", "embedded"])
def test_software_switches_aggregate_their_measured_packet_rate(name: str) -> None:
    preset = SWITCHES[name]
    cap = preset.capacity_bps(8, 100e9)
    assert cap == pytest.approx(preset.figures["pps"].value * 8 * ina.FRAME)
    assert cap == preset.capacity_bps(4, 10e9)  # a process, not its ports


def test_a_slow_host_stack_paces_ina_below_its_plan() -> None:
    """inart-stack's senders: the plan's frames at the measured packets/s, not its rate."""
    topo = build_topology("fattree:4")
    pps = HOSTS["inart-stack"].ina_pps.value
    r = simulate(topo, "inart", model_bytes=MB // 100, link_gbps=100, sender_pps=pps,
                 results=False)
    frames = r.worker_bytes / ina.FRAME
    assert r.comm_time_s == pytest.approx(frames / pps, rel=0.02)
    assert r.comm_time_s > 20 * r.plan_comm_time_s


def test_parse_takes_one_of_each_and_names_the_accepted_ones() -> None:
    assert parse("tofino1,nccl") == (SWITCHES["tofino1"], HOSTS["nccl"])
    assert parse("gloo") == (None, HOSTS["gloo"])
    for bad in ("tofino2", "paper,bmv2", "nccl,gloo"):
        with pytest.raises(PresetError, match="tofino1.*nccl"):
            parse(bad)


def test_explain_prints_every_number_with_its_source(capsys) -> None:
    assert main(["simulate", "-t", "fattree:4", "--link-gbps", "100", "--preset",
                 "tofino1,nccl", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "build-info.json N=64" in out and "tuning.cc" in out and "recirculation" in out
    assert "fattree:4: C(v) = 400 Gbit/s" in out  # 4 ports at 100 Gbit/s
    assert main(["simulate", "--preset", "embedded", "--explain"]) == 0
    assert "inart bench target" in capsys.readouterr().out


def test_a_bad_preset_is_one_line_and_exit_2(capsys) -> None:
    assert main(["simulate", "-t", "fig1", "--preset", "tofino9"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "paper, tofino1, bmv2, embedded" in err


def test_cli_preset_sets_the_host_cost(tmp_path, capsys) -> None:
    """A host preset sets the collectives' per-message cost unless --host-overhead-us is
    given."""
    assert main(["simulate", "-t", "fig1", "-s", "ring", "--preset", "nccl", "--out",
                 str(tmp_path), "-q"]) == 0
    assert "host overhead 9.6 us" in capsys.readouterr().out
    assert main(["simulate", "-t", "fig1", "-s", "ring", "--preset", "nccl",
                 "--host-overhead-us", "0", "--out", str(tmp_path), "-q"]) == 0
    assert "host overhead 0 us" in capsys.readouterr().out
