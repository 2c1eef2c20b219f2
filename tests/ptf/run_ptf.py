"""Run the INA PTF suite against a switch target started from its command line, or against
a running Tofino (the model or a switch) reached over Stratum's P4Runtime or bf_switchd's
BF Runtime (--bfrt).

    sudo python tests/ptf/run_ptf.py [--target bmv2|embedded] [ptf test names ...]
    python tests/ptf/run_ptf.py --target tofino --switch ADDR --ports ports.yaml [tests ...]
    python tests/ptf/run_ptf.py --target tofino --bfrt --switch ADDR:50052 --ports ports.yaml

Creates a private network namespace with veth pairs sw<k> <-> h<k> (k = 1..NUM_PORTS),
starts the target inside it as

    <target> --no-p4 --device-id 0 -i 1@sw1 ... -i K@swK -- --grpc-server-addr 127.0.0.1:PORT

(bmv2 simple_switch_grpc's arguments; the embedded target accepts the same), runs the `ptf`
tool on the h<k> ends, and removes the namespace (and with it every veth) afterwards.  The
target defaults to $INART_PTF_TARGET or bmv2.  Needs root.  Exit status is ptf's.

With --target tofino nothing is started: the switch runs already (docs/tofino.md), the ports
file says which interface of this host is wired to each test port (`iface`) and which dev
port that is on the Tofino (`dev_port`); the tests push the TNA build and write their entries
with dev ports.  With --bfrt the tests talk BF Runtime (control_plane/drivers/bfrt/tables.py):
they push the program, bring the ports file's ports up (front-panel names resolved by the
switch) and write the same entries.  Without a switch address (--switch or
$INART_TOFINO_SWITCH), or with --bfrt but no SDE, the run is skipped with the reason, exit
status 77.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if (HERE.parent.parent / "emulation").is_dir():  # run as a script from a checkout
    sys.path.insert(0, str(HERE.parent.parent))  # (installed: the packages are importable)

from control_plane.drivers.bfrt.client import DEFAULT_PUSH_TIMEOUT_S  # noqa: E402
from control_plane.drivers.bfrt.sde import sde_missing  # noqa: E402
from control_plane.repo import PTF_TESTGEN  # noqa: E402
from emulation.targets import TARGETS, SwitchProcess, SwitchSpec, TargetError, get_target  # noqa: E402
from emulation.targets.embedded.coverage import ENV as COVERAGE_ENV  # noqa: E402
from host_stack.netns import Netns, NetnsError  # noqa: E402

NUM_PORTS = 10  # keep equal to ina_base.NUM_PORTS
# the hand-written suite, and P4Testgen's tests of the v1model program (make testgen)
SUITES = tuple(d for d in (HERE, PTF_TESTGEN) if d.is_dir())
GRPC = "127.0.0.1:9559"  # free by construction: the namespace is new
SKIPPED = 77  # exit status of a skipped run (automake's convention)


class HarnessError(RuntimeError):
    """The harness could not set up the network or the target; the message says why."""


def find_ptf() -> str | None:
    beside = Path(sys.executable).with_name("ptf")
    return str(beside) if beside.exists() else shutil.which("ptf")


def switch_spec(ports: int, extra: list[str]) -> SwitchSpec:
    """Port k on interface sw<k>, device 0, P4Runtime on GRPC inside the namespace."""
    return SwitchSpec(0, {k: f"sw{k}" for k in range(1, ports + 1)}, GRPC, extra=tuple(extra))


def run_suite(target: str, tests: list[str], extra_switch_args: list[str], ptf_args: list[str],
              workdir: Path, build_dir: Path | None = None,
              test_dirs: tuple[Path, ...] = SUITES, coverage: Path | None = None) -> int:
    """Run the suites of ``test_dirs`` in turn against one switch, up to the first that
    fails; its ptf status (0: every suite passed)."""
    if coverage is not None and target != "embedded":
        raise HarnessError(f"--coverage: P4 statement coverage is measured by the embedded "
                           f"target, not {target}")
    if os.geteuid() != 0:
        raise HarnessError("the PTF harness needs root (network namespaces, raw sockets)")
    ptf = find_ptf()
    if ptf is None:
        raise HarnessError("the 'ptf' tool is not installed (pip install ptf)")
    try:
        tgt = get_target(target)
    except TargetError as exc:
        raise HarnessError(str(exc)) from None
    reason = tgt.unavailable()
    if reason:
        raise HarnessError(f"target {target}: {reason}")
    spec = switch_spec(NUM_PORTS, extra_switch_args)
    try:
        with Netns(f"inart-ptf-{os.getpid()}") as ns:
            for k in range(1, NUM_PORTS + 1):
                ns.add_veth(f"sw{k}", f"h{k}")
            print(f"run_ptf: target {tgt.describe()}: {' '.join(tgt.command(spec))}", flush=True)
            if coverage is not None:  # the switch writes it when it stops
                os.environ[COVERAGE_ENV] = str(coverage.resolve())
            with SwitchProcess(tgt, spec, netns=ns.name, log=workdir / "switch.log") as switch:
                params = f"grpc_addr='{GRPC}';device_id=0"
                if build_dir is not None:
                    params += f";build_dir='{build_dir.resolve()}'"
                env = tgt.env()  # the suite's own modules (ina_base) from any test dir
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE),
                                                                  env.get("PYTHONPATH")]))
                rc = 0
                for test_dir in test_dirs:
                    print(f"run_ptf: suite {test_dir}", flush=True)
                    ptf_cmd = [*ns.exec_prefix(), ptf, "--test-dir", str(test_dir),
                               *[a for k in range(1, NUM_PORTS + 1)
                                 for a in ("-i", f"{k}@h{k}")],
                               "--test-params", params,
                               "--log-file", str(workdir / f"ptf-{test_dir.name}.log"),
                               *ptf_args, *tests]
                    rc = rc or subprocess.run(ptf_cmd, env=env, cwd=workdir,
                                              timeout=1800).returncode
                problem = switch.health()
                if problem:
                    print(f"run_ptf: target {problem}:{switch._tail()}")
                    rc = rc or 1
                return rc
    except (TargetError, NetnsError) as exc:
        raise HarnessError(str(exc)) from None
    finally:
        if coverage is not None:
            os.environ.pop(COVERAGE_ENV, None)


def tofino_skip_reason(switch: str | None, ports: Path | None, bfrt: bool = False
                       ) -> str | None:
    """Why a Tofino run cannot happen here, or None."""
    sde = os.environ.get("SDE_INSTALL")
    if not switch:
        where = f"$SDE_INSTALL={sde}" if sde else "no SDE ($SDE_INSTALL unset)"
        return (f"no Tofino switch or model to test ({where}): give --switch HOST:PORT "
                f"(Stratum's P4Runtime, or bf_switchd's BF Runtime with --bfrt) or set "
                f"$INART_TOFINO_SWITCH")
    stubs_missing = sde_missing() if bfrt else None
    if stubs_missing:
        return f"--bfrt needs the SDE's bfrt_grpc: {stubs_missing}"
    if ports is None:
        return "no ports file: give --ports ports.yaml (docs/tofino.md)"
    return None


def tofino_ptf_command(switch: str, ports: Path, device_id: int, tests: list[str],
                       ptf_args: list[str], workdir: Path, bfrt: bool = False,
                       push_timeout: float | None = None) -> list[str]:
    """The ptf command line for a running Tofino: test port k on the ports file's iface.
    Over BF Runtime (``bfrt``) the tests bring the ports up and resolve front-panel names
    themselves, and each test's program push may take ``push_timeout`` seconds; over
    P4Runtime every port needs its dev_port."""
    from control_plane.drivers.tofino.ports import load_ports

    spec = load_ports(ports)
    missing = [k for k in range(1, NUM_PORTS + 1)
               if k not in spec.ports or spec.ports[k].iface is None
               or (spec.ports[k].dev_port is None and not bfrt)]
    if missing:
        need = "'iface'" if bfrt else "'iface' and 'dev_port'"
        raise HarnessError(f"{ports}: the suite uses ports 1..{NUM_PORTS}; port(s) "
                           f"{', '.join(map(str, missing))} need {need}")
    ptf = find_ptf()
    if ptf is None:
        raise HarnessError("the 'ptf' tool is not installed (pip install ptf)")
    params = f"grpc_addr='{switch}';device_id={device_id};target='tofino';"
    if bfrt:
        params += f"driver='bfrt';ports_file='{ports.resolve()}'"
        if push_timeout is not None:
            params += f";push_timeout={push_timeout}"
    else:
        port_map = ",".join(f"{k}:{spec.ports[k].dev_port}" for k in range(1, NUM_PORTS + 1))
        params += f"port_map='{port_map}'"
    return [ptf, "--test-dir", str(HERE),
            *[a for k in range(1, NUM_PORTS + 1) for a in ("-i", f"{k}@{spec.ports[k].iface}")],
            "--test-params", params, "--log-file", str(workdir / "ptf.log"), *ptf_args, *tests]


def run_tofino(switch: str, ports: Path, device_id: int, tests: list[str],
               ptf_args: list[str], workdir: Path, bfrt: bool = False,
               push_timeout: float | None = None) -> int:
    cmd = tofino_ptf_command(switch, ports, device_id, tests, ptf_args, workdir, bfrt,
                             push_timeout)
    print(f"run_ptf: tofino at {switch}: {' '.join(cmd)}", flush=True)
    return subprocess.run(cmd, cwd=workdir, timeout=1800).returncode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The runner's options (also `inart ptf`'s)."""
    parser.add_argument("--target", default=os.environ.get("INART_PTF_TARGET", "bmv2"),
                        choices=[*sorted(TARGETS), "tofino"],
                        help="switch target (default: %(default)s)")
    parser.add_argument("--switch", default=os.environ.get("INART_TOFINO_SWITCH"),
                        help="tofino: HOST:PORT of the switch's P4Runtime (Stratum), or of "
                             "bf_switchd's BF Runtime with --bfrt (port 50052)")
    parser.add_argument("--bfrt", action="store_true",
                        help="tofino: drive bf_switchd over BF Runtime (the SDE's bfrt_grpc) "
                             "instead of Stratum's P4Runtime")
    parser.add_argument("--push-timeout", type=float, default=DEFAULT_PUSH_TIMEOUT_S,
                        help="tofino --bfrt: seconds each test's program push may take; the "
                             "Tofino model is far slower than a switch (default: %(default)s)")
    parser.add_argument("--ports", type=Path, default=os.environ.get("INART_TOFINO_PORTS"),
                        help="tofino: the ports file (iface and dev_port of ports 1..10)")
    parser.add_argument("--device-id", type=int, default=1,
                        help="tofino: P4Runtime device id (default: %(default)s)")
    parser.add_argument("--switch-arg", action="append", default=[],
                        help="extra target argument before '--' (repeatable), e.g. --log-console")
    parser.add_argument("--ptf-arg", action="append", default=[],
                        help="extra ptf argument (repeatable)")
    parser.add_argument("--keep-logs", type=Path, default=None,
                        help="directory for switch.log and ptf.log (default: a temp dir)")
    parser.add_argument("--build-dir", type=Path, default=None,
                        help="P4 build to test (bmv2 JSON, P4Info, build-info.json; "
                             "default: the committed p4src/build)")
    parser.add_argument("--test-dir", type=Path, action="append", default=None,
                        dest="test_dirs", metavar="DIR",
                        help="a directory of PTF tests to run, repeatable (default: both "
                             "suites: tests/ptf, the hand-written one, and tests/ptf_testgen, "
                             "the P4Testgen-generated one)")
    parser.add_argument("--coverage", type=Path, default=None, metavar="FILE",
                        help="embedded target: write the P4 program's statement coverage "
                             "to FILE (python -m emulation.targets.embedded.coverage FILE...)")
    parser.add_argument("tests", nargs="*", help="ptf test names (default: all)")


def run(args: argparse.Namespace) -> int:
    """Run the suite as ``args`` say; ptf's exit status (77: skipped, 2: harness error)."""
    if args.target == "tofino":
        return _main_tofino(args)
    try:
        if args.keep_logs:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            return run_suite(args.target, args.tests, args.switch_arg, args.ptf_arg,
                             args.keep_logs.resolve(), args.build_dir,
                             _suites(args), args.coverage)
        with tempfile.TemporaryDirectory(prefix="inart-ptf-") as tmp:
            return run_suite(args.target, args.tests, args.switch_arg, args.ptf_arg, Path(tmp),
                             args.build_dir, _suites(args), args.coverage)
    except HarnessError as exc:
        print(f"run_ptf: error: {exc}", file=sys.stderr)
        return 2


def _suites(args: argparse.Namespace) -> tuple[Path, ...]:
    """The suites to run: those named; else, with test names, the suite of their modules;
    else both."""
    if args.test_dirs:
        dirs = tuple(args.test_dirs)
    elif args.tests:
        dirs = tuple(d for d in SUITES
                     if any((d / f"{name.split('.')[0]}.py").is_file() for name in args.tests))
    else:
        dirs = SUITES
    if args.tests and len(dirs) != 1:
        raise HarnessError(f"tests {' '.join(args.tests)}: name tests of one suite (modules "
                           f"in {' or '.join(str(d) for d in SUITES)}) or give its --test-dir")
    return dirs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def _main_tofino(args: argparse.Namespace) -> int:
    reason = tofino_skip_reason(args.switch, args.ports, args.bfrt)
    if reason:
        print(f"run_ptf: SKIPPED: {reason}")
        return SKIPPED
    try:
        if args.keep_logs:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            return run_tofino(args.switch, args.ports, args.device_id, args.tests,
                              args.ptf_arg, args.keep_logs.resolve(), args.bfrt,
                              args.push_timeout)
        with tempfile.TemporaryDirectory(prefix="inart-ptf-") as tmp:
            return run_tofino(args.switch, args.ports, args.device_id, args.tests,
                              args.ptf_arg, Path(tmp), args.bfrt, args.push_timeout)
    except (HarnessError, ValueError) as exc:
        print(f"run_ptf: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
