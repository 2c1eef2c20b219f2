"""Run the INA PTF suite against a switch target started from its command line.

    sudo python tests/ptf/run_ptf.py [--target bmv2|embedded] [ptf test names ...]

Creates a private network namespace with veth pairs sw<k> <-> h<k> (k = 1..NUM_PORTS),
starts the target inside it as

    <target> --no-p4 --device-id 0 -i 1@sw1 ... -i K@swK -- --grpc-server-addr 127.0.0.1:PORT

(bmv2 simple_switch_grpc's arguments; the embedded target accepts the same), runs the `ptf`
tool on the h<k> ends, and removes the namespace (and with it every veth) afterwards.  The
target defaults to $INART_PTF_TARGET or bmv2.  Needs root.  Exit status is ptf's.
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
sys.path.insert(0, str(HERE.parent.parent))  # run as a script: the repository's packages

from emulation.targets import TARGETS, SwitchProcess, SwitchSpec, TargetError, get_target  # noqa: E402
from host_stack.netns import Netns, NetnsError  # noqa: E402

NUM_PORTS = 10  # keep equal to ina_base.NUM_PORTS
GRPC = "127.0.0.1:9559"  # free by construction: the namespace is new


class HarnessError(RuntimeError):
    """The harness could not set up the network or the target; the message says why."""


def find_ptf() -> str | None:
    beside = Path(sys.executable).with_name("ptf")
    return str(beside) if beside.exists() else shutil.which("ptf")


def switch_spec(ports: int, extra: list[str]) -> SwitchSpec:
    """Port k on interface sw<k>, device 0, P4Runtime on GRPC inside the namespace."""
    return SwitchSpec(0, {k: f"sw{k}" for k in range(1, ports + 1)}, GRPC, extra=tuple(extra))


def run_suite(target: str, tests: list[str], extra_switch_args: list[str], ptf_args: list[str],
              workdir: Path, build_dir: Path | None = None) -> int:
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
            with SwitchProcess(tgt, spec, netns=ns.name, log=workdir / "switch.log") as switch:
                params = f"grpc_addr='{GRPC}';device_id=0"
                if build_dir is not None:
                    params += f";build_dir='{build_dir.resolve()}'"
                ptf_cmd = [*ns.exec_prefix(), ptf, "--test-dir", str(HERE),
                           *[a for k in range(1, NUM_PORTS + 1) for a in ("-i", f"{k}@h{k}")],
                           "--test-params", params, "--log-file", str(workdir / "ptf.log"),
                           *ptf_args, *tests]
                rc = subprocess.run(ptf_cmd, env=tgt.env(), cwd=workdir,
                                    timeout=1800).returncode
                problem = switch.health()
                if problem:
                    print(f"run_ptf: target {problem}:{switch._tail()}")
                    rc = rc or 1
                return rc
    except (TargetError, NetnsError) as exc:
        raise HarnessError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default=os.environ.get("INART_PTF_TARGET", "bmv2"),
                        choices=sorted(TARGETS), help="switch target (default: %(default)s)")
    parser.add_argument("--switch-arg", action="append", default=[],
                        help="extra target argument before '--' (repeatable), e.g. --log-console")
    parser.add_argument("--ptf-arg", action="append", default=[],
                        help="extra ptf argument (repeatable)")
    parser.add_argument("--keep-logs", type=Path, default=None,
                        help="directory for switch.log and ptf.log (default: a temp dir)")
    parser.add_argument("--build-dir", type=Path, default=None,
                        help="P4 build to test (bmv2 JSON, P4Info, build-info.json; "
                             "default: the committed p4src/build)")
    parser.add_argument("tests", nargs="*", help="ptf test names (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.keep_logs:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            return run_suite(args.target, args.tests, args.switch_arg, args.ptf_arg,
                             args.keep_logs.resolve(), args.build_dir)
        with tempfile.TemporaryDirectory(prefix="inart-ptf-") as tmp:
            return run_suite(args.target, args.tests, args.switch_arg, args.ptf_arg, Path(tmp),
                             args.build_dir)
    except HarnessError as exc:
        print(f"run_ptf: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
