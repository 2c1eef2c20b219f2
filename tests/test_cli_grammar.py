"""The `inart` grammar (docs/cli.md) holds for every command, benchmark and experiment: one
option per concept with one syntax, `--json [PATH]` with one meaning, exit status 2 for bad
arguments or input files and 1 for a run that failed, old spellings parsed with a deprecation
line, progress without carriage returns in logs."""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.cli import args as cli_args
from control_plane.cli.main import BENCHMARKS, COMMANDS, load_register, main
from control_plane.localhost import free_port
from control_plane.repo import REPO, child_env

# old spelling -> the grammar's (each still parsed, with a deprecation line, for one release)
DEPRECATED = {"--schemes": "--scheme", "--plans": "--plan", "--topologies": "--topology",
              "--models": "--model", "--server": "--address", "--grpc": "--listen"}
TOPOLOGY_METAVARS = {"TOPOLOGY", "TOPOLOGY[,TOPOLOGY...]"}
SCHEME_METAVARS = {"SCHEME", "SCHEME[,SCHEME...]"}
CLIENT_COMMANDS = {"inart ctl", "inart shell"}  # where a client connects: --address


def _walk(title: str, parser: argparse.ArgumentParser):
    yield title, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _walk(f"{title} {name}", child)


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser a user reaches: commands, their subcommands, benchmarks, experiments."""
    from host_stack.cli.experiment import EXPERIMENTS

    found: dict[str, argparse.ArgumentParser] = {}
    for module, _ in COMMANDS.values():
        root = argparse.ArgumentParser(prog="inart")
        load_register(module)(root.add_subparsers())
        found.update((t, p) for t, p in _walk("inart", root) if t != "inart")
    for kind, registry in (("bench", BENCHMARKS), ("experiment", EXPERIMENTS)):
        for name, (module, _) in registry.items():
            parser = argparse.ArgumentParser(prog=f"inart {kind} {name}")
            importlib.import_module(module).configure(parser)
            found[f"inart {kind} {name}"] = parser
    return found


def _options(parser: argparse.ArgumentParser):
    """(option strings, action) of the options a user sees (deprecated aliases left out)."""
    for action in parser._actions:
        if action.option_strings and not getattr(action, "replacement", None):
            yield action.option_strings, action


def test_every_parser_is_walked(parsers):
    assert len(parsers) >= len(COMMANDS) + len(BENCHMARKS) + 5
    assert "inart ctl jobs" in parsers and "inart experiment head-to-head" in parsers


def test_no_command_takes_an_old_spelling_as_its_option(parsers):
    bad = [(title, opt) for title, p in parsers.items() for opts, _ in _options(p)
           for opt in opts if opt in DEPRECATED]
    assert not bad


def test_one_option_name_and_syntax_per_concept(parsers):
    problems = []
    for title, parser in parsers.items():
        for opts, action in _options(parser):
            where = f"{title} {'/'.join(opts)}"
            if "--topology" in opts or "-t" in opts:
                if opts != ["-t", "--topology"] or action.metavar not in TOPOLOGY_METAVARS:
                    problems.append(f"{where}: expected -t/--topology TOPOLOGY[,TOPOLOGY...]")
                if action.metavar == "TOPOLOGY[,TOPOLOGY...]" and \
                        action.type is not cli_args.topologies:
                    problems.append(f"{where}: a topology list not parsed by args.topologies")
            if "--scheme" in opts or "-s" in opts:
                if opts != ["-s", "--scheme"] or action.metavar not in SCHEME_METAVARS:
                    problems.append(f"{where}: expected -s/--scheme SCHEME[,SCHEME...]")
            if "--seeds" in opts and action.type is not cli_args.seed_list:
                problems.append(f"{where}: --seeds not parsed by args.seed_list")
            if "--seed" in opts and action.type is not int:
                problems.append(f"{where}: --seed is one integer")
            if "--json" in opts and (action.nargs != "?" or action.const != "-"
                                     or action.metavar != "PATH"):
                problems.append(f"{where}: expected --json [PATH]")
            if "--quiet" in opts and (opts != ["-q", "--quiet"] or action.nargs != 0):
                problems.append(f"{where}: expected -q/--quiet")
            if "--out" in opts and action.metavar != "DIR":
                problems.append(f"{where}: expected --out DIR")
            if "--csv" in opts and action.metavar != "PATH":
                problems.append(f"{where}: expected --csv PATH")
            if "--plot" in opts and (action.nargs != "?" or action.metavar != "PNG"):
                problems.append(f"{where}: expected --plot [PNG]")
            if "--listen" in opts and title.split()[:2] != ["inart", "bench"] and (
                    action.metavar != "HOST:PORT" or title in CLIENT_COMMANDS):
                problems.append(f"{where}: --listen HOST:PORT is where a server listens")
            if "--address" in opts and action.metavar != "HOST:PORT":
                problems.append(f"{where}: expected --address HOST:PORT")
            if "--model" in opts and action.choices is None and action.type is None \
                    and action.metavar is None:
                problems.append(f"{where}: --model must say (choices or checked type) which "
                                f"models it accepts")
    assert not problems, "\n".join(problems)


def _minimal_argv(parser: argparse.ArgumentParser) -> list[str]:
    """Values for a parser's required options and positionals, so one option can be parsed."""
    argv: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.required or not action.option_strings:
            value = str(next(iter(action.choices))) if action.choices else "1"
            if action.nargs in ("?", "*", argparse.REMAINDER):
                continue
            argv += ([action.option_strings[0]] if action.option_strings else []) + [value]
    return argv


# commands whose runs show progress bars (control_plane.cli.args.progress)
PROGRESS = {"inart plan", "inart simulate", "inart sweep", "inart emulate", "inart train",
            "inart run", "inart install", "inart uninstall", "inart bench solver",
            "inart bench collectives", "inart bench transport", "inart bench train",
            "inart bench controller", "inart bench calibrate"}


def test_every_command_with_progress_takes_quiet(parsers):
    showing = PROGRESS | {t for t in parsers if t.startswith("inart experiment ")}
    assert not [t for t in sorted(showing)
                if parsers[t]._option_string_actions.get("-q") is not
                parsers[t]._option_string_actions.get("--quiet") or
                "--quiet" not in parsers[t]._option_string_actions]


def test_json_means_the_same_everywhere(parsers, tmp_path):
    """--json alone (or -) prints; --json PATH writes PATH: parsed alike by every parser."""
    checked = 0
    for title, parser in parsers.items():
        if "--json" not in parser._option_string_actions:
            continue
        base = _minimal_argv(parser)
        assert parser.parse_args([*base, "--json"]).json == "-", title
        assert parser.parse_args([*base, "--json", "r.json"]).json == "r.json", title
        checked += 1
    assert checked >= 12


def test_topology_lists_are_comma_separated(parsers):
    many = [t for t, p in parsers.items() if getattr(
        p._option_string_actions.get("-t"), "metavar", None) == "TOPOLOGY[,TOPOLOGY...]"]
    assert {"inart simulate", "inart sweep"} <= set(many)
    for title in many:
        parser = parsers[title]
        got = parser.parse_args([*_minimal_argv(parser), "-t", "fig1,leafspine:2,2,4",
                                 "-t", "fattree:4"]).topology
        assert got == ["fig1", "leafspine:2,2,4", "fattree:4"], title


def test_seeds_spec_means_the_same_seeds_everywhere(parsers):
    with_seeds = [t for t, p in parsers.items() if "--seeds" in p._option_string_actions]
    assert {"inart sweep", "inart experiment head-to-head"} <= set(with_seeds)
    for title in with_seeds:
        parser = parsers[title]
        base = _minimal_argv(parser)
        assert parser.parse_args([*base, "--seeds", "3"]).seeds == [3], title
        assert parser.parse_args([*base, "--seeds", "0-2,5"]).seeds == [0, 1, 2, 5], title


def test_scheme_all_is_every_scheme_the_command_runs(parsers):
    from control_plane.solver.solve import SCHEMES as PLANNED
    from simulation.run import SCHEMES as SIMULATED

    assert parsers["inart plan"].parse_args(["-s", "all"]).scheme == list(PLANNED)
    assert parsers["inart simulate"].parse_args(["-s", "all"]).scheme == list(SIMULATED)
    assert parsers["inart simulate"].parse_args(["-s", "collectives"]).scheme == \
        ["ring", "tree", "rsgcm"]
    assert parsers["inart simulate"].parse_args(["-s", "ina"]).scheme == \
        ["inart", "r-inart", "atp", "lbmm"]


def _exit_status(argv: list[str], capsys) -> tuple[int, str]:
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    return status, capsys.readouterr().err


def test_a_bad_argument_exits_2_on_every_command(parsers, capsys):
    leaves = [t for t, p in parsers.items()
              if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]
    for title in leaves:
        argv = [*title.split()[1:], *_minimal_argv(parsers[title]), "--no-such-option"]
        status, err = _exit_status(argv, capsys)
        assert status == 2, argv
        assert "unrecognized arguments: --no-such-option" in err, argv


@pytest.mark.parametrize("argv", [
    ["plan", "-t", "fattre:4"],
    ["simulate", "-t", "fattre:4"],
    ["sweep", "-t", "fattre:4", "-s", "inart"],
    ["emulate", "-t", "fattre:4"],
    ["lab", "up", "-t", "fattre:4"],
    ["ctl", "topology", "fattre:4", "--address", "127.0.0.1:1"],
])
def test_a_bad_topology_exits_2_naming_it(argv, capsys):
    status, err = _exit_status(argv, capsys)
    assert status == 2 and "fattre:4" in err, err


@pytest.mark.parametrize("argv", [
    ["install", "--plan", "missing.json", "--dry-run"],
    ["train", "--plan", "missing.json", "--rounds", "1"],
    ["simulate", "--plan", "missing.json"],
])
def test_a_missing_plan_file_exits_2_naming_the_flag(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, err = _exit_status(argv, capsys)
    assert status == 2, err
    assert "missing.json" in err and "Errno" not in err, err


def test_a_failed_run_exits_1(capsys):
    """A client that finds no server started and failed: 1, one line that says why."""
    address = f"127.0.0.1:{free_port()}"
    status, err = _exit_status(["ctl", "jobs", "--address", address, "--timeout", "2"], capsys)
    assert status == 1
    assert f"no `inart serve` answers at {address}: nothing listens there" in err
    assert "UNAVAILABLE" not in err and "failed to connect" not in err


# -- the defects: each refused before any long work, in one line naming the flag --------------


def run_cli(*argv: str, cwd: Path | None = None, timeout: float = 120,
            env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *argv],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=env or child_env())


def test_simulate_refuses_a_bad_link_speed_before_solving(tmp_path):
    proc = run_cli("simulate", "--link-gbps", "-1", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--link-gbps" in proc.stderr and "expected a number > 0" in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "out").exists()  # nothing solved or written


def test_simulate_names_a_missing_plan_file(tmp_path):
    proc = run_cli("simulate", "--plan", "missing.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "inart simulate: error: --plan missing.json: no such file (expected an `inart plan` "
        "file)")


def test_simulate_refuses_a_plan_its_schemes_do_not_run(tmp_path):
    assert run_cli("plan", "-t", "fig1", "-s", "inart", "--out", str(tmp_path)).returncode == 0
    proc = run_cli("simulate", "-s", "atp", "--plan", str(tmp_path / "inart.json"),
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert "--plan" in proc.stderr and "'inart'" in proc.stderr and "-s atp" in proc.stderr


def test_sweep_checks_its_topologies_before_starting(tmp_path):
    proc = run_cli("sweep", "-t", "fig1,fattre:4", "-s", "inart", cwd=tmp_path, timeout=30)
    assert proc.returncode == 2
    assert "fattre:4" in proc.stderr and "sweep of" not in proc.stderr  # no Ray, no point
    assert not (tmp_path / "out").exists()


def test_simulate_writes_under_out_simulate(tmp_path):
    proc = run_cli("simulate", "-t", "fig1", "-s", "inart,ring", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "out" / "simulate" / "simulate.json").read_text())
    assert [r["scheme"] for r in data["results"]] == ["inart", "ring"]
    assert (tmp_path / "out" / "simulate" / "simulate.csv").is_file()


def test_a_new_plan_run_leaves_no_stale_files_of_the_last_one(tmp_path):
    out = tmp_path / "plans"
    assert run_cli("plan", "-t", "fig1", "-s", "r-inart,atp", "--out", str(out)).returncode == 0
    (out / "notes.txt").write_text("a user's own file stays")
    assert run_cli("plan", "-t", "fattree:4", "-s", "inart", "--out", str(out)).returncode == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == \
        ["inart.json", "notes.txt", "plan.csv"]


def test_progress_in_a_log_has_no_carriage_return_and_quiet_silences_it(tmp_path):
    proc = run_cli("plan", "-t", "fig1", "-s", "inart,atp", "--out", str(tmp_path))
    assert proc.returncode == 0 and "solving" in proc.stderr
    assert "\r" not in proc.stderr
    quiet = run_cli("plan", "-t", "fig1", "-s", "inart,atp", "--out", str(tmp_path), "-q")
    assert quiet.returncode == 0 and "solving" not in quiet.stderr


def test_progress_lines_in_a_log(capsys):
    bar = cli_args.progress(range(3), desc="steps", file=sys.stderr)
    assert list(bar) == [0, 1, 2]
    err = capsys.readouterr().err
    assert "\r" not in err and "steps" in err and "3/3" in err


def test_quiet_silences_every_bar_of_the_command(capsys):
    """-q reaches bars made deep inside a run (launchers, benches), not only the command's."""
    def run(args: argparse.Namespace) -> int:
        list(cli_args.progress(range(3), desc="deep"))
        return 0

    assert cli_args.call(run, argparse.Namespace(quiet=True)) == 0
    assert "deep" not in capsys.readouterr().err
    assert cli_args.call(run, argparse.Namespace(quiet=False)) == 0
    assert "deep" in capsys.readouterr().err


@pytest.mark.parametrize("argv, accepted", [
    (["simulate", "--model", "cnn"], "resnet50, vgg19, lstm"),
    (["train", "--plan", "star:2:1", "--model", "resnet50"], "'cnn', 'mlp'"),
    (["emulate", "--model", "resnet50"], "'cnn', 'mlp'"),
])
def test_a_model_a_command_cannot_run_is_refused_naming_those_it_can(argv, accepted, capsys):
    status, err = _exit_status(argv, capsys)
    assert status == 2 and "--model" in err and accepted in err, err


def test_json_dash_prints_only_json_on_stdout(tmp_path):
    proc = run_cli("plan", "-t", "fig1", "-s", "inart", "--out", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["scheme"] == "inart"  # the table went to stderr
    assert "inart" in proc.stderr


def test_old_spellings_still_parse_with_one_deprecation_line(parsers, capsys):
    cases = [("inart simulate", ["--schemes", "inart,ring"], "scheme", ["inart", "ring"]),
             ("inart simulate", ["-t", "fig1", "fattree:4"], "topology", ["fig1", "fattree:4"]),
             ("inart ctl jobs", ["--server", "h:1"], "address", "h:1"),
             ("inart switch", ["--grpc", "h:2"], "listen", "h:2"),
             ("inart bench simulate", ["--plans", "a.json"], "plan", [Path("a.json")]),
             ("inart bench pacing", ["--topologies", "fig1,fattree:4"], "topology",
              ["fig1", "fattree:4"]),
             ("inart bench collectives", ["--schemes", "ring", "tree"], "scheme",
              ["ring", "tree"]),
             ("inart experiment ps-balance", ["--models", "alexnet", "mobilenet"], "model",
              ["alexnet", "mobilenet"])]
    for title, argv, dest, value in cases:
        parser = parsers[title]
        assert getattr(parser.parse_args([*_minimal_argv(parser), *argv]), dest) == value, title
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("inart: ") and "deprecated" in err[0], title


def test_every_old_spelling_is_hidden_and_documented(parsers):
    page = (REPO / "docs" / "cli.md").read_text()
    aliases = {(old, new) for p in parsers.values()
               for old, new in cli_args.deprecated(p).items()}
    assert set(DEPRECATED.items()) <= aliases
    for old, new in aliases:
        assert f"`{old}" in page and new in page, old
    assert not any(old in p.format_help() for p in parsers.values()
                   for old in cli_args.deprecated(p))


def test_an_experiment_says_what_a_bare_seed_count_now_means(tmp_path, capsys):
    assert main(["experiment", "selective", "--quick", "--seeds", "3", "--out",
                 str(tmp_path)]) == 0
    assert "--seeds 3 is the one seed 3" in capsys.readouterr().err
    with open(tmp_path / "runs.csv") as f:
        assert {row["seed"] for row in csv.DictReader(f)} == {"3"}


def test_version_from_the_package_metadata(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"inart {version('inart')}"


def _complete(line: str, tmp_path: Path) -> list[str]:
    out = tmp_path / "completions"
    env = child_env(_ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
                    _ARGCOMPLETE_STDOUT_FILENAME=str(out))
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli"], env=env,
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return out.read_text().replace("\x0b", "\n").split()


def test_shell_completion_of_commands_and_their_options(tmp_path):
    assert "PYTHON_ARGCOMPLETE_OK" in (REPO / "control_plane/cli/main.py").read_text()[:1024]
    assert _complete("inart sim", tmp_path) == ["simulate"]
    assert set(_complete("inart s", tmp_path)) >= {"shell", "switch", "serve", "sweep"}
    assert _complete("inart simulate --sch", tmp_path) == ["--scheme"]  # not --schemes


def test_the_grammar_page_lists_every_concept():
    page = (REPO / "docs" / "cli.md").read_text()
    for option in ("-t/--topology", "-s/--scheme", "--seeds", "--plan", "--json [PATH]",
                   "--listen", "--address", "--model", "--out DIR", "-q/--quiet", "--csv",
                   "--plot", "register-python-argcomplete inart", "--metrics ADDRESS",
                   "--web HOST:PORT"):
        assert option in page, option
    for old, new in DEPRECATED.items():
        assert old in page and new in page, old


def test_split_topologies_keeps_leafspine_numbers():
    assert cli_args.split_topologies("fig1,leafspine:2,2,4,irregular:5,8,fattree:4") == \
        ["fig1", "leafspine:2,2,4", "irregular:5,8", "fattree:4"]
    assert cli_args.parse_seed_spec("0-2,5") == [0, 1, 2, 5]
    with pytest.raises(ValueError, match="'2-1'"):
        cli_args.parse_seed_spec("2-1")
