"""`inart train --fork-server`: workers forked from one torch-loaded process train exactly as
plain ones (same final parameters, bit for bit) over INA and over gloo's TCP (ring), and a
failing forked worker is reported with its exit status and stderr as a plain one is."""

import pytest

from control_plane.cli.main import build_parser
from host_stack.train.forkserver import ForkedProcess
from host_stack.train.launcher import Launcher, LaunchError, train


def train_args(*argv):
    argv = ["train", *argv, "--quiet", "--deadline", "300"]
    return build_parser(argv).parse_args(argv)


@pytest.mark.parametrize("sync", ["ina", "ring"])
def test_forked_workers_end_with_the_parameters_of_plain_ones(sync):
    job = ["--plan", "star:3:2", "--model", "cnn", "--rounds", "3", "--sync", sync]
    forked = train(train_args(*job, "--fork-server"))
    plain = train(train_args(*job))
    digests = {w["params_sha256"] for w in forked.workers}
    assert len(digests) == 1 and digests == {w["params_sha256"] for w in plain.workers}
    assert [r["loss"] for r in forked.rounds] == [r["loss"] for r in plain.rounds]


def test_the_workers_really_are_forked(tmp_path):
    args = train_args("--plan", "star:2:1", "--model", "synthetic", "--values", "640",
                      "--rounds", "2", "--fork-server")
    with Launcher(args, tmp_path) as launcher:
        result = launcher.run()
        kinds = {n: type(p).__name__ for n, p in launcher.procs.items()}
    assert kinds == {"s1": "Popen", "w1": ForkedProcess.__name__, "w2": ForkedProcess.__name__}
    assert len(result.workers) == 2


def test_a_failing_forked_worker_is_reported_with_its_status_and_stderr():
    args = train_args("--plan", "star:2:1", "--model", "synthetic", "--values", "640",
                      "--rounds", "2", "--impair", "loss=0.99", "--hello-timeout", "1",
                      "--fork-server")
    with pytest.raises(LaunchError, match=r"w\d: exited with status 3\n.*no HELLO reply"):
        train(args)
