"""`inart experiment crossover --emulate / --from`: the map's emulable cells, emulated and
simulated side by side.  From saved head-to-heads (no root): the side-by-side row is the map's
reading (best INA over best collective) of each side's times and says whether both sides put
the point on the same side of the crossover; bad options fail in one line before any run.
With root and Mininet: fig1 emulated for a few rounds."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from control_plane.cli.main import main
from emulation.bench.calibrate import calibrate, load_head_to_head
from simulation.crossover.table import side_by_side, side_line

DOCS = Path(__file__).resolve().parents[2] / "docs" / "calibration"
FATTREE4 = DOCS / "fattree4-exchange" / "head_to_head.json"
FIG1 = DOCS / "fig1" / "head_to_head.json"


def test_the_saved_fattree4_run_side_by_side() -> None:
    setup, rows = load_head_to_head(FATTREE4)
    exchange = {r["scheme"]: r["exchange_s"] for r in rows}
    row = side_by_side(calibrate(setup, rows, 0.1, None, 47.0))
    assert (row["topology"], row["k"], row["workers"], row["ps_count"]) == ("fattree:4", 4, 12, 4)
    assert row["link_mbps"] == pytest.approx(2.0)  # 20 units at 0.1 Mbit/s per unit
    assert row["switch"] == "paper"  # the fat-tree's own C(v): 9 of a 20-unit link
    assert row["host_us"] == 47.0 and row["model"] == "mlp"
    # the emulated side is the saved exchange times, read as the map reads a cell
    assert row["emu_rsgcm_ms"] == pytest.approx(exchange["rsgcm"] * 1e3, rel=1e-6)
    assert row["emu_best_collective"] == "rsgcm" == row["emu_winner"]
    assert row["emu_ina/best"] == pytest.approx(exchange["inart"] / exchange["rsgcm"], rel=1e-3)
    assert row["emu_atp/best"] == pytest.approx(exchange["atp"] / exchange["rsgcm"], rel=1e-3)
    # the model has the ring fastest (the emulated ring stalls on the loaded machine), and
    # INA behind it on both sides
    assert row["sim_best_collective"] == "ring"
    assert row["sim_ina/best"] == pytest.approx(row["sim_inart_ms"] / row["sim_ring_ms"], rel=1e-3)
    assert row["sim_ina/best"] > 1 and row["emu_ina/best"] > 1 and row["same_side"] is True
    assert "same side of the crossover" in side_line(row)


def _result(emu: dict[str, float], sim: dict[str, float]) -> dict:
    return {"setup": {"topology": "fig1", "scale_mbps_per_unit": 0.5, "host_overhead_us": 40.0,
                      "model": "mlp", "model_bytes": 104488, "rounds": 8},
            "schemes": [{"scheme": s, "emu_comm_s": emu[s], "sim_comm_s": sim[s], "seed": 0}
                        for s in emu]}


def test_sides_that_disagree_about_the_crossover_are_marked() -> None:
    row = side_by_side(_result({"inart": 0.9, "atp": 1.2, "ring": 1.0, "tree": 1.1},
                               {"inart": 1.05, "atp": 1.3, "ring": 1.0, "tree": 0.95}))
    assert row["emu_winner"] == "inart" and row["emu_ina/best"] == pytest.approx(0.9)
    assert row["sim_winner"] == "tree" and row["sim_ina/best"] == pytest.approx(1.05 / 0.95,
                                                                               rel=1e-3)
    assert row["same_side"] is False
    assert "NOT on the same side" in side_line(row)
    assert row["switch"] == "topology (1 x link)"  # fig1's switches: no preset's C(v)
    assert "sim_rsgcm_ms" not in row  # a scheme not run is left empty, not made up


def test_a_point_without_a_collective_is_refused() -> None:
    with pytest.raises(ValueError, match="one of ring, tree, rsgcm"):
        side_by_side(_result({"inart": 1.0, "atp": 1.2}, {"inart": 1.0, "atp": 1.2}))


def test_from_saved_runs_writes_one_row_and_line_per_point(tmp_path, capsys) -> None:
    assert main(["experiment", "crossover", "--from", str(FATTREE4), "--from", str(FIG1),
                 "--out", str(tmp_path), "-q"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("crossover.calibration[fattree:4, 2 Mbit/s links, C(v) paper") == 2
    with open(tmp_path / "calibration.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["topology"] for r in rows] == ["fattree:4", "fig1"]
    assert all(r["same_side"] == "True" for r in rows)
    doc = json.loads((tmp_path / "calibration.json").read_text())
    assert doc["summary"]["points"] == 2 and len(doc["calibrations"]) == 2


@pytest.mark.parametrize(("argv", "flag"), [
    (["--emulate", "--from", str(FIG1)], "--from"),
    (["-t", "fig1"], "-t/--topology: only with --emulate"),
    (["--rounds", "4"], "--rounds: only with --emulate"),
    (["--from", str(FIG1), "--grid", "full"], "--grid: not with"),
    (["--from", str(FIG1), "--scale", "0.5"], "--scale: not with --from"),
    (["--from", str(DOCS / "fig1-rsgcm" / "head_to_head.json")], "one of inart, atp"),
    (["--from", "missing.json"], "--from missing.json"),
    (["--emulate", "--rounds", "1"], "--rounds 1: expected >= 2"),
    (["--emulate", "-s", "ring,tree"], "-s/--scheme: expected one of inart, atp"),
    (["--emulate", "-t", "fattre:4"], "fattre:4"),
])
def test_bad_calibration_options_fail_in_one_line_naming_the_flag(argv, flag, tmp_path,
                                                                    capsys) -> None:
    try:
        status = main(["experiment", "crossover", *argv, "--out", str(tmp_path)])
    except SystemExit as exc:  # argparse's own checks
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and flag in err, err
    assert not (tmp_path / "calibration.csv").exists()


@pytest.mark.root
@pytest.mark.usefixtures("needs_mininet_and_program")
def test_fig1_emulated_and_simulated_side_by_side(tmp_path, capsys) -> None:
    """fig1 at 0.5 Mbit/s per unit, ATP and the ring, 4 rounds: ATP's plan takes 2.5x the
    ring's time in the model (1.27 s against 0.50 s), far from the crossover, so both sides
    must put it on the collective's side."""
    assert main(["experiment", "crossover", "--emulate", "--quick", "--out", str(tmp_path),
                 "-q"]) == 0
    assert "crossover.calibration[fig1, 3 Mbit/s links" in capsys.readouterr().out
    with open(tmp_path / "calibration.csv") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["host_source"] == "measured now on this machine"
    assert float(row["emu_atp_ms"]) > float(row["emu_ring_ms"]) > 0
    assert float(row["emu_ina/best"]) > 1 and row["same_side"] == "True"
    assert (tmp_path / "emulation-fig1" / "head_to_head.json").is_file()
