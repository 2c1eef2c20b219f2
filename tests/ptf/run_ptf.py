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
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NUM_PORTS = 10  # keep equal to ina_base.NUM_PORTS
GRPC_PORT = 9559  # free by construction: the namespace is new
BMV2_DEFAULT = "/opt/p4/bin/simple_switch_grpc"
STARTUP_TIMEOUT_S = 30.0


class HarnessError(RuntimeError):
    """The harness could not set up the network or the target; the message says why."""


def find_bmv2() -> str | None:
    """simple_switch_grpc from $SIMPLE_SWITCH_GRPC, /opt/p4/bin, or PATH."""
    for cand in (os.environ.get("SIMPLE_SWITCH_GRPC"), BMV2_DEFAULT,
                 shutil.which("simple_switch_grpc")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def find_ptf() -> str | None:
    beside = Path(sys.executable).with_name("ptf")
    return str(beside) if beside.exists() else shutil.which("ptf")


def target_prefix(target: str) -> list[str]:
    """The executable part of a target's command line."""
    if target == "bmv2":
        exe = find_bmv2()
        if exe is None:
            raise HarnessError("simple_switch_grpc not found (set SIMPLE_SWITCH_GRPC or "
                               f"install it as {BMV2_DEFAULT}; see README.md)")
        return [exe]
    if target == "embedded":
        return [sys.executable, "-m", "emulation.embedded"]
    raise HarnessError(f"unknown target '{target}': expected bmv2 or embedded")


def target_command(target: str, ports: int, grpc_port: int, extra: list[str]) -> list[str]:
    ifaces = [arg for k in range(1, ports + 1) for arg in ("-i", f"{k}@sw{k}")]
    return [*target_prefix(target), "--no-p4", "--device-id", "0", *ifaces, *extra, "--",
            "--grpc-server-addr", f"127.0.0.1:{grpc_port}"]


def target_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    lib = Path(BMV2_DEFAULT).parent.parent / "lib"
    if lib.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(lib),
                                                               env.get("LD_LIBRARY_PATH")]))
    return env


def _run(cmd: list[str], timeout: float = 30.0) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise HarnessError(f"'{' '.join(cmd)}' failed: {proc.stderr.strip()}")


class Namespace:
    """A network namespace holding veth pairs sw<k> <-> h<k>; deleted on exit."""

    def __init__(self, ports: int):
        self.name = f"inart-ptf-{os.getpid()}"
        self.ports = ports

    def __enter__(self) -> Namespace:
        _run(["ip", "netns", "add", self.name])
        try:
            ns = ["ip", "netns", "exec", self.name]
            # no IPv6 on the veths: the kernel would send router solicitations into the switch
            _run([*ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                  "net.ipv6.conf.default.disable_ipv6=1"])
            _run(["ip", "-n", self.name, "link", "set", "lo", "up"])
            for k in range(1, self.ports + 1):
                _run(["ip", "-n", self.name, "link", "add", f"sw{k}", "type", "veth",
                      "peer", "name", f"h{k}"])
                for dev in (f"sw{k}", f"h{k}"):
                    _run(["ip", "-n", self.name, "link", "set", dev, "up"])
        except BaseException:
            self.__exit__()
            raise
        return self

    def exec_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def __exit__(self, *exc) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)


def wait_for_grpc(ns: Namespace, switch: subprocess.Popen, port: int, log: Path) -> None:
    probe = ("import socket,sys\ns=socket.socket()\ns.settimeout(0.5)\n"
             f"sys.exit(s.connect_ex(('127.0.0.1',{port})))")
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if switch.poll() is not None:
            raise HarnessError(f"target exited with {switch.returncode} during start-up:\n"
                               f"{_tail(log)}")
        if subprocess.run([*ns.exec_prefix(), sys.executable, "-c", probe],
                          capture_output=True, timeout=10).returncode == 0:
            return
        time.sleep(0.2)
    raise HarnessError(f"target did not open gRPC port {port} within {STARTUP_TIMEOUT_S:.0f} s:"
                       f"\n{_tail(log)}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def run_suite(target: str, tests: list[str], extra_switch_args: list[str], ptf_args: list[str],
              workdir: Path, build_dir: Path | None = None) -> int:
    if os.geteuid() != 0:
        raise HarnessError("the PTF harness needs root (network namespaces, raw sockets)")
    ptf = find_ptf()
    if ptf is None:
        raise HarnessError("the 'ptf' tool is not installed (pip install ptf)")
    cmd = target_command(target, NUM_PORTS, GRPC_PORT, extra_switch_args)
    switch_log = workdir / "switch.log"
    with Namespace(NUM_PORTS) as ns, open(switch_log, "w") as log:
        print(f"run_ptf: target {target}: {' '.join(cmd)}", flush=True)
        switch = subprocess.Popen([*ns.exec_prefix(), *cmd], stdout=log,
                                  stderr=subprocess.STDOUT, env=target_env(), cwd=REPO)
        try:
            wait_for_grpc(ns, switch, GRPC_PORT, switch_log)
            params = f"grpc_addr='127.0.0.1:{GRPC_PORT}';device_id=0"
            if build_dir is not None:
                params += f";build_dir='{build_dir.resolve()}'"
            ptf_cmd = [*ns.exec_prefix(), ptf, "--test-dir", str(HERE),
                       *[a for k in range(1, NUM_PORTS + 1) for a in ("-i", f"{k}@h{k}")],
                       "--test-params", params, "--log-file", str(workdir / "ptf.log"),
                       *ptf_args, *tests]
            rc = subprocess.run(ptf_cmd, env=target_env(), cwd=workdir, timeout=1800).returncode
            if switch.poll() is not None:
                print(f"run_ptf: target died (exit {switch.returncode}):\n{_tail(switch_log)}")
                rc = rc or 1
            return rc
        finally:
            stop(switch)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default=os.environ.get("INART_PTF_TARGET", "bmv2"),
                        choices=["bmv2", "embedded"], help="switch target (default: %(default)s)")
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
