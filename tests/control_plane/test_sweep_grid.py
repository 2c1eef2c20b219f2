"""`inart sweep`'s grid: axes from flags or YAML, checked with errors that name the field."""

from __future__ import annotations

import sys

import pytest

from control_plane.cli.main import main
from control_plane.sweep.grid import (
    GridError,
    build_grid,
    load_grid_file,
    parse_link_gbps,
    parse_seeds,
)
from control_plane.sweep.kinds import KINDS
from control_plane.sweep.results import FAILED, OK, ResultLog, row_for, table


def test_seeds_ranges_and_lists() -> None:
    assert parse_seeds("0-2") == [0, 1, 2]
    assert parse_seeds("0,3,5") == [0, 3, 5]
    assert parse_seeds([1, "4-5"]) == [1, 4, 5]
    for bad in ("2-1", "x", "-1", "0,0", ""):
        with pytest.raises(GridError, match="seeds"):
            parse_seeds(bad)


def test_link_speeds() -> None:
    assert parse_link_gbps("10,100,topology") == [10.0, 100.0, None]
    for bad in ("0", "-5", "fast", "inf"):
        with pytest.raises(GridError, match="link_gbps.*Gbit/s > 0"):
            parse_link_gbps(bad)


def test_models_are_the_kinds_own() -> None:
    """plan and simulate take the simulation's model names; emulate has no model axis."""
    fields = {"kind": "plan", "topologies": "fig1", "schemes": "inart"}
    grid = build_grid({**fields, "models": "resnet50,synthetic:4096"}, KINDS)
    assert grid.models == ["resnet50", "synthetic:4096"]
    for bad in ("alexnet", "synthetic:0", "missing.json"):
        with pytest.raises(GridError, match=f"models: --model '{bad}'"):
            build_grid({**fields, "models": bad}, KINDS)
    with pytest.raises(GridError, match="models: not for kind emulate"):
        build_grid({**fields, "kind": "emulate", "models": "resnet50"}, KINDS)


def test_grid_points_and_keys() -> None:
    grid = build_grid({"kind": "plan", "topologies": "fig1,fattree:4", "schemes": "inart,atp",
                       "link_gbps": "10,100", "models": "resnet50", "seeds": "0-2"}, KINDS)
    points = grid.points()
    assert len(points) == 2 * 2 * 2 * 1 * 3
    assert len({p.key for p in points}) == len(points)
    assert points[0].key == "plan/fig1/inart/10G/resnet50/seed0"
    # "all" as `inart plan -s all` reads it: every scheme, the exact MILP only while small
    assert build_grid({"kind": "plan", "topologies": "fig1", "schemes": "all"},
                      KINDS).schemes == ["inart", "r-inart", "joint", "atp", "lbmm", "milp"]
    assert build_grid({"kind": "plan", "topologies": "fig1,fattree:8", "schemes": "all"},
                      KINDS).schemes == ["inart", "r-inart", "joint", "atp", "lbmm"]
    assert build_grid({"kind": "plan", "topologies": "fattree:8", "schemes": "inart,milp"},
                      KINDS).schemes == ["inart", "milp"]  # named: kept
    assert build_grid({"kind": "simulate", "topologies": "fig1", "schemes": "all"},
                      KINDS).schemes == list(KINDS["simulate"].schemes)
    assert build_grid({"kind": "simulate", "topologies": "fig1", "schemes": "collectives"},
                      KINDS).schemes == ["ring", "tree", "rsgcm"]


@pytest.mark.parametrize("fields, message", [
    ({"kind": "bake", "topologies": "fig1", "schemes": "inart"}, "kind: 'bake'"),
    ({"kind": "plan", "schemes": "inart"}, "topologies and schemes"),
    ({"kind": "plan", "topologies": "fig1", "schemes": "inart,ringo"}, "schemes: ringo"),
    ({"kind": "plan", "topologies": "fig1,fig1", "schemes": "inart"}, "topologies.*twice"),
    ({"kind": "emulate", "topologies": "fig1", "schemes": "inart", "link_gbps": "10"},
     "link_gbps: not for kind emulate"),
    ({"kind": "plan", "topologies": "fig1", "schemes": "inart", "settings": {"scale": 1}},
     "settings: scale: not for kind plan"),
])
def test_bad_grids_name_the_field(fields, message) -> None:
    with pytest.raises(GridError, match=message):
        build_grid(fields, KINDS)


def test_grid_file(tmp_path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("kind: plan\ntopologies: [fig1]\nschemes: inart,lbmm\nseeds: 0-1\n"
                    "settings: {trials: 4}\n")
    grid = build_grid(load_grid_file(path), KINDS)
    assert (grid.schemes, grid.seeds, grid.settings) == (["inart", "lbmm"], [0, 1],
                                                         {"trials": 4})
    path.write_text("kind: plan\ntopology: fig1\n")
    with pytest.raises(GridError, match="unknown field.*topology"):
        load_grid_file(path)


def test_results_log_keeps_lines_before_a_cut_one(tmp_path) -> None:
    """A crash mid-write leaves a partial last line: every whole line before it counts, and
    a point's last line (a rerun after a failure) is the one that counts."""
    grid = build_grid({"kind": "plan", "topologies": "fig1", "schemes": "inart,atp"}, KINDS)
    a, b = grid.points()
    log = ResultLog(tmp_path)
    log.append(row_for(a, FAILED, error="worker died"))
    log.append(row_for(b, OK, {"rate_units": 2.0}))
    log.append(row_for(a, OK, {"rate_units": 2.5}))
    with log.path.open("a") as f:
        f.write('{"key": "plan/fig1/lbmm')
    assert log.done() == {a.key, b.key}
    assert log.latest()[a.key]["rate_units"] == 2.5
    assert "failed: worker died" in table([row_for(a, FAILED, error="worker died")])


def test_cli_errors_name_the_flag(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "-t", "fig1", "-s", "inart", "--seeds", "3-1", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert "argument --seeds: '3-1'" in capsys.readouterr().err
    assert main(["sweep", "--resume", str(tmp_path / "none")]) == 2
    assert "no grid.json" in capsys.readouterr().err
    assert main(["sweep", "-t", "fig1", "-s", "inart", "--set", "k_paths",
                 "--out", str(tmp_path)]) == 2
    assert "--set 'k_paths': expected KEY=VALUE" in capsys.readouterr().err
    assert main(["sweep", "-t", "fig1", "-s", "inart", "--cpus", "2", "--ray-address",
                 "10.0.0.1:6379"]) == 2
    assert "--cpus: a number >= 1, for the head started here" in capsys.readouterr().err


def test_an_address_without_a_head_fails_at_once(tmp_path, capsys) -> None:
    """Ray's client would retry it for minutes."""
    from control_plane.localhost import free_port

    port = free_port()
    argv = ["sweep", "-t", "fig1", "-s", "atp", "--quiet", "--out", str(tmp_path)]
    assert main([*argv, "--ray-address", f"127.0.0.1:{port}"]) == 2
    assert f"--ray-address 127.0.0.1:{port}: no Ray head answers there" in \
        capsys.readouterr().err
    assert main([*argv, "--ray-address", "headnode"]) == 2
    assert "expected HOST:PORT" in capsys.readouterr().err


def test_the_example_grid_file_and_flags_beside_it(tmp_path) -> None:
    from control_plane.cli.main import build_parser
    from control_plane.cli.sweep import grid_from_args
    from control_plane.repo import REPO

    example = REPO / "examples" / "sweep-grid.yaml"
    grid = build_grid(load_grid_file(example), KINDS)
    assert (grid.kind, len(grid.points()), grid.settings) == ("simulate", 32, {"iterations": 10})
    argv = ["sweep", "--grid", str(example), "-s", "inart,ring", "--seeds", "0-4",
            "--set", "latency_us=2", "--out", str(tmp_path)]
    grid, out = grid_from_args(build_parser(argv).parse_args(argv))
    assert (grid.schemes, grid.seeds, out) == (["inart", "ring"], [0, 1, 2, 3, 4], tmp_path)
    assert grid.topologies == ["fig1", "fattree:4"]
    assert grid.settings == {"iterations": 10, "latency_us": 2}


def test_without_ray_the_error_says_how_to_install_it(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what a missing package raises on import
    assert main(["sweep", "-t", "fig1", "-s", "atp", "--quiet", "--out", str(tmp_path)]) == 2
    assert "pip install 'inart[sweep]'" in capsys.readouterr().err


def test_kinds_take_the_schemes_their_runners_know() -> None:
    from control_plane.solver.solve import SCHEMES
    from simulation import run

    assert KINDS["plan"].schemes == SCHEMES
    assert KINDS["simulate"].schemes == run.SCHEMES
    assert KINDS["emulate"].schemes == run.INA_SCHEMES


def test_an_emulate_point_holds_the_machines_emulation_resource() -> None:
    """One emulation per machine is Ray's doing (the resource), not the network lock's alone:
    a point run under its sweep's lock does not take that lock again."""
    from simulation import run

    assert KINDS["emulate"].resources == {"emulation": 1.0}
    grid = build_grid({"kind": "emulate", "topologies": "fig1", "schemes": "all"}, KINDS)
    assert grid.schemes == list(run.INA_SCHEMES)
