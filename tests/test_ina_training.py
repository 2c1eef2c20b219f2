"""End-to-end training through `inart train`: PS and worker OS processes on loopback."""

import json

import pytest

from control_plane.cli.main import build_parser, main
from host_stack.ina.jobplan import star_plan
from host_stack.train.launcher import train
from host_stack.train.reference import reference_training


def train_args(*argv):
    argv = ["train", *argv, "--quiet", "--deadline", "600"]
    return build_parser(argv).parse_args(argv)


def plan_file(tmp_path, workers, shares, **kw):
    path = tmp_path / "plan.json"
    star_plan(workers, shares, **kw).save(path)
    return str(path)


def test_training_converges_under_loss_duplication_and_reordering(tmp_path):
    args = train_args("--plan", plan_file(tmp_path, 2, [0.5, 0.5]), "--model", "mlp",
                      "--rounds", "40", "--batch", "32", "--lr", "0.1",
                      "--impair", "loss=0.05,dup=0.05,reorder=0.05")
    result = train(args)
    losses = [r["loss"] for r in result.rounds]
    accs = [w["accuracy"] for w in result.workers]
    assert len({w["params_sha256"] for w in result.workers}) == 1  # identical parameters
    assert sum(losses[-5:]) / 5 < 0.5 * losses[0]
    assert accs[0] > 0.8
    assert sum(r["retx"] for r in result.rounds) > 0
    ps_counters = result.ps_stats
    assert all(s["rounds_completed"] == 40 for s in ps_counters.values())
    assert sum(s.get("impair_dropped", 0) for s in ps_counters.values()) > 0
    print(f"lossy MLP: loss {losses[0]:.3f} -> {losses[-1]:.3f}, accuracy {accs[0]:.4f}")


@pytest.mark.slow
def test_cnn_4_workers_2_ps_matches_single_process_training(tmp_path):
    rounds, batch, lr = 100, 32, 0.05
    args = train_args("--plan", plan_file(tmp_path, 4, [0.5, 0.5]), "--model", "cnn",
                      "--rounds", str(rounds), "--batch", str(batch), "--lr", str(lr))
    result = train(args)
    ina = result.workers[0]["accuracy"]
    ref, _ = reference_training("cnn", 4, rounds, batch, lr, 0.9, seed=0)
    print(f"CNN digits, 4 workers x 2 PSs over INA: {ina * 100:.2f}%  "
          f"single process (batch {4 * batch}): {ref * 100:.2f}%")
    assert len({w["params_sha256"] for w in result.workers}) == 1
    assert abs(ina - ref) <= 0.01
    assert ref > 0.9


def test_cli_train_errors_are_clear(tmp_path, capsys):
    # bad input files are exit status 2, named by their flag (docs/cli.md)
    assert main(["train", "--plan", str(tmp_path / "nope.json"), "--quiet"]) == 2
    assert "--plan " in (err := capsys.readouterr().err) and "no such file" in err
    bad = tmp_path / "bad.json"
    doc = star_plan(2, [0.5, 0.5]).to_dict()
    doc["partition"]["s1"] = 0.9
    bad.write_text(json.dumps(doc))
    assert main(["train", "--plan", str(bad), "--quiet"]) == 2
    assert "partition" in capsys.readouterr().err


def test_cli_train_writes_json_and_csv(tmp_path, capsys):
    out_json, out_csv, png = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.png"
    rc = main(["train", "--plan", "star:2:1", "--model", "synthetic", "--values", "2000",
               "--rounds", "3", "--quiet", "--json", str(out_json), "--csv", str(out_csv),
               "--plot", str(png)])
    assert rc == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    report = json.loads(out_json.read_text())
    assert report["summary"]["rounds"] == 3 and report["summary"]["workers_agree"]
    assert out_csv.read_text().splitlines()[0].startswith("round,round_s,comm_s,rate_mbps")
    assert "Mbit/s" in capsys.readouterr().out


def test_launcher_stops_everything_and_reports_a_failing_worker(tmp_path):
    from host_stack.train.launcher import LaunchError

    args = train_args("--plan", "star:2:1", "--model", "synthetic", "--values", "640",
                      "--rounds", "2", "--impair", "loss=0.99", "--hello-timeout", "1")
    with pytest.raises(LaunchError, match=r"w\d: exited with status 3\n.*no HELLO reply"):
        train(args)
