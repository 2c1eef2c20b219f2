"""`inart experiment crossover`: the map's cells agree with single `inart simulate` runs of
the same points, its grid is checked before anything runs, and its files are written."""

from __future__ import annotations

import csv
import json

import pytest

from control_plane.cli.main import main
from simulation.crossover.grid import GridError, load_grid, parse_slices

SCHEMES = ("inart", "atp", "ring", "tree", "rsgcm")


@pytest.fixture(scope="module")
def quick_map(tmp_path_factory) -> list[dict]:
    """The quick grid (k 4 and 6, host costs 0 and 47 us, paper and tofino1) on local Ray."""
    out = tmp_path_factory.mktemp("crossover")
    assert main(["experiment", "crossover", "--quick", "--cpus", "2", "-q",
                 "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.png")) == ["k-host-switchpaper.png",
                                                         "k-host-switchtofino1.png"]
    with open(out / "crossover.csv") as fh:
        return list(csv.DictReader(fh))


def _single(tmp_path, capsys, k: int, switch: str, host_us: str) -> dict[str, float]:
    """Each scheme's ms from one `inart simulate` run of a cell."""
    capsys.readouterr()
    assert main(["simulate", "-t", f"fattree:{k}", "--ps", "2", "--link-gbps", "100",
                 "-s", ",".join(SCHEMES), "--preset", switch, "--host-overhead-us", host_us,
                 "--out", str(tmp_path), "-q"]) == 0
    results = json.loads((tmp_path / "simulate.json").read_text())["results"]
    return {r["scheme"]: r["comm_time_s"] * 1e3 for r in results}


def test_the_map_agrees_with_single_runs(quick_map, tmp_path, capsys) -> None:
    assert len(quick_map) == 8
    checked = [(4, "paper", "0"), (4, "tofino1", "47"), (6, "tofino1", "47")]
    for k, switch, host in checked:
        cell = next(r for r in quick_map if r["k"] == str(k) and r["switch"] == switch
                    and r["host"] == host)
        single = _single(tmp_path, capsys, k, switch, host)
        for scheme in SCHEMES:
            assert float(cell[f"{scheme}_ms"]) == pytest.approx(single[scheme], rel=1e-6)
        best = min(single[s] for s in ("ring", "tree", "rsgcm"))
        assert float(cell["ina/best"]) == pytest.approx(
            min(single["inart"], single["atp"]) / best, rel=1e-3)


def test_the_map_moves_with_its_axes(quick_map) -> None:
    """Tofino's C(v) speeds InArt up over the paper's 45%; the hosts' cost slows the ring
    and leaves INA alone."""
    def cell(k: int, switch: str, host: str) -> dict:
        return next(r for r in quick_map if r["k"] == str(k) and r["switch"] == switch
                    and r["host"] == host)

    for k in (4, 6):
        assert float(cell(k, "tofino1", "0")["inart_ms"]) < float(cell(k, "paper", "0")["inart_ms"])
        assert float(cell(k, "paper", "47")["ring_ms"]) > float(cell(k, "paper", "0")["ring_ms"])
        assert cell(k, "paper", "47")["inart_ms"] == cell(k, "paper", "0")["inart_ms"]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("k", 5, "even fat-tree k"), ("switch", "tofino9", "tofino1"),
    ("host", "fast", "gloo"), ("ps", "scaled:x", "scaled:R"), ("model", "bert", "resnet50")])
def test_bad_grid_values_name_the_field(field, value, message) -> None:
    raw = {"name": "s", "k": [4], "link_gbps": [100], "ps": [2], "host": [0],
           "switch": ["paper"], "model": ["resnet50"], field: [value]}
    with pytest.raises(GridError, match=message):
        parse_slices([raw], "test")


def test_bad_grid_files_exit_2(tmp_path, capsys) -> None:
    bad = tmp_path / "grid.yaml"
    bad.write_text("slices:\n  - {name: a, k: [4], link_gbps: [100], ps: [2], host: [0], "
                   "switch: [paper], model: [resnet50], colour: red}\n")
    for grid in (str(bad), str(tmp_path / "missing.yaml"), "huge"):
        assert main(["experiment", "crossover", "--grid", grid, "--out", str(tmp_path)]) == 2
        assert "--grid" in capsys.readouterr().err or grid == str(bad)


def test_the_shipped_grids_parse() -> None:
    from pathlib import Path

    for name in ("quick", "small", "full"):
        assert load_grid(name)
    example = Path(__file__).resolve().parents[2] / "examples" / "crossover.yaml"
    assert load_grid(str(example))
