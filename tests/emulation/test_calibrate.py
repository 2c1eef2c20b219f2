"""`inart bench calibrate` without an emulation: the reductions and comparisons it prints, and a
saved head-to-head whose numbers are the simulation's own, which must calibrate exactly."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from control_plane.model.topologies import build_topology
from control_plane.repo import child_env
from control_plane.solver.solve import plan_for
from emulation.bench.calibrate import (
    HOST_OVERHEAD_US,
    emulated,
    link_errors,
    model_bytes,
    swapped_pairs,
)


def row(scheme: str, seed: int, comm_s: float, links: dict[str, int], rounds: int = 4) -> dict:
    return {"scheme": scheme, "seed": seed, "comm_s": comm_s, "rounds": rounds,
            "bytes_per_link": links}


def test_emulated_is_per_iteration_median_time_and_mean_bytes_over_seeds() -> None:
    rows = [row("ring", 0, 1.0, {"w1->v1": 400, "v1->w1": 80}),
            row("inart", 0, 2.0, {"w1->v1": 800, "v1->w1": 800}),
            row("ring", 1, 3.0, {"w1->v1": 800, "v1->w1": 0}, rounds=8),
            row("ring", 2, 1.5, {"w1->v1": 400, "v1->w1": 40})]
    out = emulated(rows)
    assert list(out) == ["ring", "inart"]
    assert out["ring"].comm_s == 1.5 and out["ring"].runs == 3 and out["ring"].seed == 0
    assert out["ring"].link_bytes == {"w1->v1": 100.0, "v1->w1": 10.0}
    assert out["inart"].link_bytes == {"w1->v1": 200.0, "v1->w1": 200.0}


def test_emulated_compares_the_exchange_where_runs_have_it() -> None:
    rows = [row("ring", 0, 1.0, {"w1->v1": 400}) | {"exchange_s": 0.6},
            row("ring", 1, 1.2, {"w1->v1": 400}) | {"exchange_s": 0.8},
            row("atp", 0, 2.0, {"w1->v1": 400}),  # an older run: its sync stands in
            row("lbmm", 0, 3.0, {"w1->v1": 400}) | {"exchange_s": None}]
    out = emulated(rows)
    assert out["ring"].comm_s == pytest.approx(0.7) and out["ring"].sync_s == pytest.approx(1.1)
    assert out["atp"].comm_s == out["atp"].sync_s == 2.0
    assert out["lbmm"].comm_s == 3.0


def test_emulated_refuses_a_run_without_bytes_per_link() -> None:
    old = row("atp", 1, 1.0, {})
    with pytest.raises(ValueError, match="atp seed 1: no 'bytes_per_link'"):
        emulated([old])


def test_link_errors_skip_idle_links_and_count_links_only_one_side_uses() -> None:
    emu = {"a->b": 1000.0, "b->a": 5.0, "c->d": 500.0, "d->c": 0.0}
    sim = {"a->b": 1100.0, "c->d": 450.0, "d->c": 300.0}
    assert link_errors(emu, sim) == {"a->b": pytest.approx(0.1), "c->d": pytest.approx(0.1),
                                     "d->c": 1.0}


def test_swapped_pairs_ignore_ties_within_the_tolerance() -> None:
    emu = {"inart": 1.00, "r-inart": 1.05, "lbmm": 2.0, "ring": 1.5}
    sim = {"inart": 1.06, "r-inart": 1.00, "lbmm": 1.9, "ring": 2.1}
    # inart/r-inart: 5% apart, a tie; ring/lbmm: the simulation swaps them
    assert swapped_pairs(emu, sim, 0.10) == [("ring", "lbmm")]
    assert swapped_pairs(emu, sim, 0.01) == [("inart", "r-inart"), ("ring", "lbmm")]


def test_model_bytes_is_the_mlps_fp32_gradient() -> None:
    assert model_bytes("mlp") == (64 * 128 + 128 + 128 * 128 + 128 + 128 * 10 + 10) * 4


def test_a_head_to_head_with_the_simulations_numbers_calibrates_exactly(tmp_path) -> None:
    """The command end to end on a saved JSON (``--from``): rows made from the simulation of
    the same configuration give ratio 1, no link error and the same order."""
    from simulation.run import simulate

    topo, size, rounds = build_topology("fattree:4"), model_bytes("mlp"), 5
    rows = []
    for scheme in ("inart", "lbmm", "ring", "tree"):
        plan = plan_for(topo, scheme, 0) if scheme in ("inart", "lbmm") else None
        # the emulation's destination routes (fattree:4 has several equal paths)
        res = simulate(topo, scheme, plan=plan, model_bytes=size, scale_mbps=0.5,
                       routing="dst", host_overhead_us=HOST_OVERHEAD_US)
        rows.append(row(scheme, 0, res.comm_time_s,
                        {k: round(v * rounds) for k, v in res.link_bytes.items()}, rounds))
    saved = tmp_path / "head_to_head.json"
    saved.write_text(json.dumps({"setup": {"topology": "fattree:4", "model": "mlp",
                                           "scale_mbps_per_unit": 0.5, "pace": 1.0},
                                 "runs": rows}))
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench", "calibrate",
                           "--from", str(saved), "--json", str(tmp_path / "cal.json")],
                          capture_output=True, text=True, timeout=600, env=child_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "calibrate.order[fattree:4]" in proc.stdout and "NOT MET" not in proc.stdout
    # the collectives' host time per message measured on the emulation's machine
    assert f"host overhead {HOST_OVERHEAD_US:g} us per message" in proc.stdout
    result = json.loads((tmp_path / "cal.json").read_text())
    assert result["ordering_agrees"] and result["emu_order"] == result["sim_order"]
    for s in result["schemes"]:
        assert s["comm_ratio"] == pytest.approx(1.0)
        assert s["link_err_max"] < 1e-3, s["scheme"]


def test_from_a_file_that_is_not_a_head_to_head_names_it(tmp_path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("[]")
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench", "calibrate",
                           "--from", str(bad)], capture_output=True, text=True, timeout=120,
                          env=child_env())
    assert proc.returncode != 0
    assert f"--from {bad}: not a head-to-head JSON" in proc.stderr


def test_a_tolerance_outside_0_1_is_refused_naming_it(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench", "calibrate",
                           "--from", str(tmp_path / "none.json"), "--tolerance", "2"],
                          capture_output=True, text=True, timeout=120, env=child_env())
    assert proc.returncode != 0 and "--tolerance 2.0: expected 0 < T < 1" in proc.stderr


def test_the_host_overhead_is_the_measured_one_unless_given(tmp_path) -> None:
    """The simulated collectives pay the measured host time per message; ``0`` is the ideal
    host, and a negative value is refused naming the flag."""
    from simulation.run import simulate

    topo, size = build_topology("fig1"), model_bytes("mlp")
    ideal = simulate(topo, "ring", model_bytes=size, scale_mbps=0.5, routing="dst",
                     host_overhead_us=0)
    saved = tmp_path / "head_to_head.json"
    saved.write_text(json.dumps({"setup": {"topology": "fig1", "model": "mlp",
                                           "scale_mbps_per_unit": 0.5, "pace": 1.0},
                                 "runs": [row("ring", 0, ideal.comm_time_s, {"w1->v1": 1})]}))
    sims = {}
    for flag in ([], ["--host-overhead-us", "0"]):
        out = tmp_path / f"cal{len(flag)}.json"
        proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench", "calibrate",
                               "--from", str(saved), "--json", str(out), *flag],
                              capture_output=True, text=True, timeout=300, env=child_env())
        assert proc.returncode == 0, proc.stderr[-2000:]
        result = json.loads(out.read_text())
        sims[len(flag)] = result["schemes"][0]["sim_comm_s"]
        assert result["setup"]["host_overhead_us"] == (0 if flag else HOST_OVERHEAD_US)
    assert sims[2] == pytest.approx(ideal.comm_time_s, rel=1e-9)
    assert sims[0] - sims[2] == pytest.approx(10 * HOST_OVERHEAD_US * 1e-6, rel=1e-6)
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench", "calibrate",
                           "--from", str(saved), "--host-overhead-us", "-1"],
                          capture_output=True, text=True, timeout=120, env=child_env())
    assert proc.returncode != 0 and "--host-overhead-us -1.0: expected >= 0" in proc.stderr
