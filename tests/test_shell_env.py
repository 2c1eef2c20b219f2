"""p4runtime-shell's private environment (control_plane/shell_env): where it lives, a clear
one-line error when pip cannot prepare it (and nothing half-made left behind), and an
interpreter given by INART_P4RUNTIME_SHELL_PYTHON used as it is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane import shell_env
from control_plane.repo import REPO, child_env


def test_the_environment_is_keyed_by_version_and_lives_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(shell_env.PYTHON_VAR, raising=False)
    folder = shell_env.env_dir()
    assert folder.parent == tmp_path / "inart"
    assert folder.name.startswith(f"p4runtime-shell-{shell_env.SHELL_VERSION}-py311-")
    assert shell_env.ready() is None
    folder.mkdir(parents=True)
    (folder / shell_env.READY).write_text("")  # marked ready, but its interpreter is gone
    assert shell_env.ready() is None
    monkeypatch.setattr(shell_env, "REQUIREMENTS", (*shell_env.REQUIREMENTS, "extra==1"))
    assert shell_env.env_dir() != folder  # other pins, another environment


def test_a_given_interpreter_is_used_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setenv(shell_env.PYTHON_VAR, sys.executable)
    assert shell_env.python() == Path(sys.executable) == shell_env.ready()
    monkeypatch.setenv(shell_env.PYTHON_VAR, str(tmp_path / "nope"))
    with pytest.raises(shell_env.ShellEnvError, match=shell_env.PYTHON_VAR):
        shell_env.python()


def test_pip_failing_is_one_clear_line_and_leaves_nothing(tmp_path):
    """No index: pip cannot find p4runtime-shell.  `inart shell` says what failed and what to
    do, and the half-made environment is gone (the next run starts afresh)."""
    env = child_env(XDG_CACHE_HOME=str(tmp_path), PIP_NO_INDEX="1")
    env.pop(shell_env.PYTHON_VAR, None)
    done = subprocess.run([sys.executable, "-m", "control_plane.cli", "shell", "--address",
                           "127.0.0.1:1", "--print-command"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("inart shell: error: pip install p4runtime-shell==0.0.6")
    assert shell_env.PYTHON_VAR in errors[0]
    assert "preparing p4runtime-shell" in done.stderr  # it said what it was doing
    left = [p.name for p in (tmp_path / "inart").iterdir() if not p.name.endswith(".lock")]
    assert left == []


def test_the_standalone_scripts_import_nothing_of_inart():
    """They run in the private environment, which has no inart (and must not load inart's
    P4Runtime stubs beside PyPI's, which register the same .proto files)."""
    for script in (shell_env.RUN_CODE, shell_env.BENCH_WRITER):
        text = script.read_text()
        assert not [line for line in text.splitlines()
                    if line.startswith(("from ", "import ")) and any(
                        pkg in line for pkg in ("control_plane", "emulation", "host_stack"))]
    usage = subprocess.run([sys.executable, "-I", str(shell_env.RUN_CODE)],
                           capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert usage.returncode == 2 and "usage: run_code.py" in usage.stderr


def test_print_command_names_the_private_interpreter(tmp_path):
    env = child_env(XDG_CACHE_HOME=str(tmp_path), **{shell_env.PYTHON_VAR: sys.executable})
    done = subprocess.run([sys.executable, "-m", "control_plane.cli", "shell", "--address",
                           "127.0.0.1:1", "--device-id", "4", "--print-command"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [sys.executable, "-I", "-m", "p4runtime_sh", "--grpc-addr",
                                   "127.0.0.1:1", "--device-id", "4", "--election-id", "0,2"]
    assert not (tmp_path / "inart").exists()  # a given interpreter: nothing prepared
