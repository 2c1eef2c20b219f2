"""inart and p4runtime-shell installed into one environment, in either order, as a P4 user
would: `pip install inart-*.whl` and `pip install p4runtime-shell` into a fresh venv (torch
first, the local CPU build, so nothing pulls CUDA).

p4runtime-shell pins protobuf<3.21 and pulls PyPI's p4runtime (the top-level `p4` package),
so both orders end on protobuf 3.20.3 with that package beside inart: every inart command must
still work (its P4Runtime stubs live under its own import name and run on 3.20; its
dependency ranges admit 3.20), pip must report no conflict, and p4runtime-shell must still
work too.  `inart shell` itself runs p4runtime-shell from a private environment
(control_plane/shell_env), which `--help` must not prepare.

Both venvs are real and complete (no packages borrowed from the development venv), prepared
side by side; the wheel is the session's one build (tests/conftest.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from control_plane.localhost import free_ports
from tests.foreground import first_line

pytestmark = pytest.mark.slow

ORDERS = {"inart-first": ("inart", "p4runtime-shell"),
          "shell-first": ("p4runtime-shell", "inart")}
PIP_TIMEOUT_S = 1200


@dataclass(frozen=True)
class Venv:
    root: Path
    cwd: Path  # a directory of its own, outside the checkout
    pip_log: str

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    def env(self, **extra: str) -> dict[str, str]:
        """No PYTHONPATH: nothing may reach the checkout."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        return {**env, **extra}

    def run(self, *args: str, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.root / "bin" / "inart"), *args], cwd=self.cwd,
                              env=env or self.env(), capture_output=True, text=True,
                              timeout=timeout)

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([str(self.root / "bin" / "inart"), *args], cwd=self.cwd,
                                env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)


def _prepare(root: Path, steps: tuple[str, ...], wheel: Path) -> Venv:
    """A fresh venv: torch, then ``steps`` in order, each a plain `pip install`."""
    what = {"inart": str(wheel), "p4runtime-shell": "p4runtime-shell"}
    venv = root / "venv"
    log: list[str] = []
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    for requirement in ("torch==2.13.0", *(what[s] for s in steps)):
        done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install",
                               "--disable-pip-version-check", requirement],
                              capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
        log.append(f"$ pip install {requirement}\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
        assert done.returncode == 0, "\n".join(log)
    cwd = root / "work"
    cwd.mkdir()
    return Venv(venv, cwd, "\n".join(log))


@pytest.fixture(scope="module")
def venvs(tmp_path_factory, inart_wheel: Path) -> dict[str, Venv]:
    roots = {order: tmp_path_factory.mktemp(order) for order in ORDERS}
    with ThreadPoolExecutor(len(ORDERS)) as pool:  # pip downloads and unpacks overlap
        futures = {order: pool.submit(_prepare, roots[order], steps, inart_wheel)
                   for order, steps in ORDERS.items()}
        return {order: future.result() for order, future in futures.items()}


@pytest.mark.parametrize("order", ORDERS)
def test_every_command_works_beside_p4runtime_shell(venvs: dict[str, Venv], order: str,
                                                    tmp_path: Path) -> None:
    venv = venvs[order]
    assert "dependency conflicts" not in venv.pip_log, venv.pip_log
    check = subprocess.run([venv.python, "-m", "pip", "check"], capture_output=True,
                           text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    versions = subprocess.run(
        [venv.python, "-c", "from importlib.metadata import version as v; "
         "print(v('protobuf'), v('p4runtime'), v('p4runtime-shell'))"],
        capture_output=True, text=True, check=True).stdout.split()
    assert versions[:2] == ["3.20.3", "1.4.1"], versions  # p4runtime-shell's pins hold

    plan = venv.run("plan", "-t", "fig1")
    assert plan.returncode == 0, plan.stderr[-3000:]
    dry = venv.run("install", "--plan", "out/plan/inart.json", "--dry-run")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "route_dst" in dry.stdout and (venv.cwd / "out/install/dry-run.json").is_file()

    cache = tmp_path / "cache"  # --help must prepare nothing
    helped = venv.run("shell", "--help", env=venv.env(XDG_CACHE_HOME=str(cache)))
    assert helped.returncode == 0 and "--address" in helped.stdout, helped.stderr
    assert not cache.exists()

    # and p4runtime-shell in this environment still works: inart replaced none of its files
    shell = subprocess.run([venv.python, "-m", "p4runtime_sh", "--help"], cwd=venv.cwd,
                           env=venv.env(), capture_output=True, text=True, timeout=120)
    assert shell.returncode == 0 and "--grpc-addr" in shell.stdout, shell.stderr[-3000:]


def test_install_and_shell_on_p4runtime_shells_protobuf(venvs: dict[str, Venv]) -> None:
    """The P4Runtime stubs on protobuf 3.20 at both ends: the embedded target serves, `inart
    install` writes a plan, `inart shell` (its private environment) reads an entry back."""
    venv = venvs["inart-first"]
    if not (venv.cwd / "out/plan/inart.json").is_file():
        assert venv.run("plan", "-t", "fig1").returncode == 0
    ports = free_ports(2)
    switches = [venv.popen("switch", "--target", "embedded", "--listen", f"127.0.0.1:{port}",
                           "--device-id", str(i)) for i, port in enumerate(ports, 1)]
    try:
        for sw in switches:
            line = first_line(sw)
            assert "ready" in line, line
        done = venv.run("install", "--plan", "out/plan/inart.json",
                        *[f"--switch=v{i}=127.0.0.1:{port}" for i, port in enumerate(ports, 1)])
        assert done.returncode == 0, done.stderr[-3000:]
        assert "had none, pushed" in done.stdout
        read = venv.run("shell", "--address", f"127.0.0.1:{ports[0]}", "--device-id", "1",
                        "-c", 'print("entries", len(list(TableEntry("InaIngress.route_dst")'
                              '.read())))', timeout=600)
        assert read.returncode == 0, read.stderr[-3000:]
        assert read.stdout.splitlines()[-1] == "entries 8", read.stdout[-2000:]
    finally:
        for sw in switches:
            sw.terminate()
            sw.wait(timeout=30)


def test_the_controller_service_on_p4runtime_shells_protobuf(venvs: dict[str, Venv]) -> None:
    """`inart serve` and `inart ctl` (the service's own stubs, and MessageToDict, whose
    options protobuf renamed after 3.20) on protobuf 3.20."""
    venv = venvs["shell-first"]
    (port,) = free_ports(1)
    server = f"127.0.0.1:{port}"
    serve = venv.popen("serve", "--listen", server, "--insecure", "--switches", "memory")
    try:
        line = first_line(serve)
        assert "listening on" in line, line
        topo = venv.run("ctl", "topology", "fig1", "--address", server,
                        "--switch", "v1=127.0.0.1:1", "--switch", "v2=127.0.0.1:2")
        assert topo.returncode == 0, topo.stderr[-3000:]
        job = venv.run("ctl", "submit", "--address", server, "--model-size", "1e6", "--json")
        assert job.returncode == 0, job.stderr[-3000:]
        assert '"state": "JOB_STATE_RUNNING"' in job.stdout
        assert '"draining_version": 0' in job.stdout  # a default, printed as on protobuf 6
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(timeout=30)
