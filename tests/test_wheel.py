"""inart as a user installs it: a wheel built by `python -m build`, installed into a fresh
venv, run from a directory of its own -- no checkout on any path.

The venv reuses the development venv's site-packages for the heavy dependencies (torch alone
is 700 MB) through a .pth line, which only appends that directory to sys.path: inart's own
packages, its P4 builds and PTF suite come from the wheel (checked), Mininet from the
development venv's link (./dev.sh), as they would from a venv of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from control_plane.localhost import free_ports
from emulation.network.mininet_net import mininet_available
from tests.foreground import first_line

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Installed:
    venv: Path
    cwd: Path  # a directory outside the checkout, where the commands run

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.venv / "bin" / "inart"), *args], cwd=self.cwd,
                              env=self.env(), capture_output=True, text=True, timeout=timeout)

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([str(self.venv / "bin" / "inart"), *args], cwd=self.cwd,
                                env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    @staticmethod
    def env() -> dict[str, str]:
        """No PYTHONPATH: nothing may reach the checkout."""
        return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory, inart_wheel: Path) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True, check=True).stdout
    Path(site.strip(), "inart-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index",
                          str(inart_wheel)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr[-3000:]
    cwd = root / "work"
    cwd.mkdir()
    yield Installed(venv, cwd)


def test_the_wheel_carries_its_code_extension_and_data(installed: Installed) -> None:
    probe = ("import control_plane, host_stack.ina._batchio as b\n"
             "from control_plane import repo\n"
             "print(control_plane.__file__, b.__file__, repo.CHECKOUT, repo.P4_BUILD,"
             " repo.PTF_SUITE, sep='\\n')")
    out = subprocess.run([str(installed.venv / "bin" / "python"), "-c", probe],
                         cwd=installed.cwd, env=installed.env(), capture_output=True, text=True,
                         check=True).stdout.split("\n")
    code, ext, checkout, p4, ptf = out[:5]
    venv = str(installed.venv.resolve())
    assert code.startswith(venv) and ext.startswith(venv) and ext.endswith(".so"), out
    assert checkout == "None" and p4.startswith(venv) and ptf.startswith(venv), out
    for name in ("inart.json", "inart.p4info.txtpb", "build-info.json",
                 "tna/pipe/tofino.bin", "tna/bfrt.json"):
        assert (Path(p4) / name).is_file(), name
    assert (Path(ptf) / "run_ptf.py").is_file()
    assert "--target" in installed.run("ptf", "--help").stdout


def test_the_wheel_claims_only_inarts_import_names(inart_wheel: Path) -> None:
    """No top-level `p4`: that is PyPI's p4runtime's, which p4runtime-shell installs; a wheel
    that also shipped it would overwrite, or be overwritten by, that package's files."""
    with zipfile.ZipFile(inart_wheel) as whl:
        names = whl.namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {
        "control_plane", "emulation", "host_stack", "inart", "realhosts", "simulation"}
    assert "inart/torch.py" in names  # the public API users import
    assert "control_plane/p4runtime_api/p4/v1/p4runtime_pb2.py" in names
    # the web view's page, script and style (package data, no CDN)
    for name in ("index.html", "app.js", "style.css"):
        assert f"control_plane/observe/static/{name}" in names, name


def test_plan_switch_and_install_from_the_wheel(installed: Installed) -> None:
    plan = installed.run("plan", "-t", "fig1")
    assert plan.returncode == 0, plan.stderr
    assert (installed.cwd / "out" / "plan" / "inart.json").is_file()
    ports = free_ports(2)
    switches = [installed.popen("switch", "--target", "embedded", "--listen",
                                f"127.0.0.1:{port}", "--device-id", str(i))
                for i, port in enumerate(ports, 1)]
    try:
        for sw in switches:
            line = first_line(sw)
            assert "ready" in line, line
        done = installed.run("install", "--plan", "out/plan/inart.json",
                             *[f"--switch=v{i}=127.0.0.1:{port}"
                               for i, port in enumerate(ports, 1)])
        assert done.returncode == 0, done.stderr
        assert "had none, pushed" in done.stdout
        assert (installed.cwd / "out" / "install" / "install.json").is_file()
    finally:
        for sw in switches:
            sw.terminate()
            sw.wait(timeout=30)


@pytest.mark.root
def test_emulate_fig1_from_the_wheel(installed: Installed) -> None:
    reason = mininet_available()
    if reason:
        pytest.skip(reason)
    started = time.monotonic()
    done = installed.run("emulate", "-t", "fig1", "--rounds", "1", "--values", "1500",
                         "--quiet", timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "True" in done.stdout and (installed.cwd / "out" / "emulate" / "emulate.json").is_file()
    print(f"emulate -t fig1 from the wheel: {time.monotonic() - started:.1f} s")


def test_sweep_from_the_wheel(installed: Installed) -> None:
    """Its own Ray head, whose workers import inart from the wheel (no checkout on any path)."""
    done = installed.run("sweep", "-t", "fig1", "-s", "atp,lbmm", "--cpus", "1", "--quiet",
                         "--out", "out/sweep/wheel")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 points (2 run, 0 failed)" in done.stdout
    assert (installed.cwd / "out" / "sweep" / "wheel" / "results.csv").is_file()
