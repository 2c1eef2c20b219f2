"""Finding the Tofino compiler: the SDE's bf-p4c, an installed open-source back end, or a p4c
build tree staged into a private driver directory (control_plane/p4build/tofino_compiler.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from control_plane.p4build import tofino_compiler as tc
from control_plane.p4build.sources import BuildError
from control_plane.repo import REPO


def _exe(path: Path, text: str = "#!/bin/sh\necho p4c 1.2.5.16\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    """A p4c source tree and a build tree configured from it, with the two binaries built
    (what `make p4c-barefoot bfas` leaves), the driver not set up for Tofino."""
    src, tree = tmp_path / "p4c", tmp_path / "p4c" / "build"
    driver = src / tc.SRC_DRIVER
    driver.mkdir(parents=True)
    (driver / "barefoot.py").write_text(
        "def f():\n    bfas = find_file('.', 'bfas')\n    self.add_command('assembler', bfas)\n")
    (driver / "p4c.tofino.cfg").write_text(
        "tofino_target = TofinoBackend('tofino', 'tna', argParser)\n"
        "psa_target = TofinoBackend('tofino', 'psa', argParser)\n"
        "config.target.append(psa_target)\n")
    for include, name in zip(tc.SRC_INCLUDES, ("core.p4", "tna.p4"), strict=True):
        (src / include).mkdir(parents=True, exist_ok=True)
        (src / include / name).write_text("// include\n")
    for rel in tc.SRC_SCRIPTS.values():
        _exe(src / rel)
    _exe(tree / tc.TREE_BACKEND)
    _exe(tree / tc.TREE_ASSEMBLER)
    _exe(tree / "p4c")
    (tree / "p4c_src").mkdir()
    (tree / "p4c_src" / "main.py").write_text("# p4c driver\n")
    (tree / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={src}\n")
    return src, tree


def test_a_build_tree_is_staged_as_the_tofino_driver_layout(tmp_path):
    src, tree = _trees(tmp_path)
    with tc.open_compiler(str(tree)) as found:
        staged = Path(found.driver).parent
        assert found.kind == tc.OPEN_SOURCE and found.driver.endswith("/p4c")
        assert tree not in Path(found.driver).parents  # the tree itself is not touched
        assert (staged / "p4c_src" / "main.py").exists()
        driver = (staged / "p4c_src" / "barefoot.py").read_text()
        assert "bfas = str(find_file('.', 'bfas'))" in driver
        cfg = (staged / "p4c_src" / "p4c.tofino.cfg").read_text()
        assert "tofino_target" in cfg and "psa_target" not in cfg
        assert {p.name for p in (staged / "p4include").iterdir()} == {"core.p4", "tna.p4"}
        assert (staged / "p4c-barefoot").resolve() == (tree / tc.TREE_BACKEND).resolve()
        assert (staged / "bfas").resolve() == (tree / tc.TREE_ASSEMBLER).resolve()
        assert os.access(staged / "p4c-gen-conf", os.X_OK)
    assert not staged.exists()  # staged for the `with` only
    assert not (tree / "p4c-barefoot").exists()


def test_the_tree_driver_names_the_tree_too(tmp_path):
    _, tree = _trees(tmp_path)
    with tc.open_compiler(str(tree / "p4c")) as found:
        assert found.kind == tc.OPEN_SOURCE and Path(found.driver).parent != tree


def test_a_tree_without_the_assembler_says_what_is_missing(tmp_path):
    _, tree = _trees(tmp_path)
    (tree / tc.TREE_ASSEMBLER).unlink()
    with pytest.raises(BuildError, match=r"bf-asm/bfas"), tc.open_compiler(str(tree)):
        pass


def test_a_tree_whose_driver_was_not_built_says_so(tmp_path):
    """configure makes build/p4c_src; the driver's package in it comes with the build."""
    _, tree = _trees(tmp_path)
    (tree / "p4c_src" / "main.py").unlink()
    with pytest.raises(BuildError, match=r"p4c_src/main\.py .*p4c_driver"), \
            tc.open_compiler(str(tree)):
        pass


def test_a_directory_that_is_no_build_tree_is_refused(tmp_path):
    with pytest.raises(BuildError, match="not a p4c build tree"), tc.open_compiler(str(tmp_path)):
        pass


def test_kinds_of_installed_drivers(tmp_path):
    sde = _exe(tmp_path / "sde" / "bin" / "bf-p4c")
    oss = _exe(tmp_path / "oss" / "bin" / "p4c")
    _exe(tmp_path / "oss" / "bin" / "p4c-barefoot")
    bmv2_only = _exe(tmp_path / "bmv2" / "bin" / "p4c")
    assert tc.kind_of(str(sde)) == tc.SDE
    assert tc.kind_of(str(oss)) == tc.OPEN_SOURCE
    with pytest.raises(BuildError, match="neither bf-p4c nor p4c with p4c-barefoot"):
        tc.kind_of(str(bmv2_only))
    with tc.open_compiler(str(sde)) as found:
        assert found == tc.TofinoCompiler(str(sde), tc.SDE)


def test_the_sde_install_is_searched(tmp_path, monkeypatch):
    sde = _exe(tmp_path / "sde" / "bin" / "bf-p4c")
    monkeypatch.setattr(tc, "DEFAULT_PREFIX", tmp_path / "none")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("SDE_INSTALL", str(tmp_path / "sde"))
    with tc.open_compiler() as found:
        assert found == tc.TofinoCompiler(str(sde), tc.SDE)
    monkeypatch.delenv("SDE_INSTALL")
    with pytest.raises(BuildError, match="BF_P4C=/path/to/p4c/build"), tc.open_compiler():
        pass


P4C_SRC = Path(os.environ.get("INART_P4C_SRC", "/opt/p4/src/p4c"))


@pytest.mark.skipif(not (P4C_SRC / "build" / "p4c_src" / "main.py").is_file()
                    or not (P4C_SRC / tc.SRC_DRIVER).is_dir(),
                    reason=f"no p4c source tree with a built driver (p4c_driver) at "
                           f"{P4C_SRC} ($INART_P4C_SRC)")
def test_the_staged_layout_drives_p4cs_own_tofino_driver(tmp_path):
    """p4c's real driver, staged from a real source tree (stand-ins for the two binaries, which
    take hours to build), loads the Tofino configuration and composes the preprocessor,
    p4c-barefoot and bfas commands (`-###` prints them and runs nothing)."""
    tree = tmp_path / "build"
    shutil.copytree(P4C_SRC / "build" / "p4c_src", tree / "p4c_src")
    shutil.copy2(P4C_SRC / "build" / "p4c", tree / "p4c")
    (tree / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={P4C_SRC}\n")
    _exe(tree / tc.TREE_BACKEND, "#!/bin/sh\nexit 0\n")
    _exe(tree / tc.TREE_ASSEMBLER, "#!/bin/sh\nexit 0\n")
    out = tmp_path / "out"
    with tc.open_compiler(str(tree)) as found:
        staged = Path(found.driver).parent
        proc = subprocess.run([found.driver, "--target", "tofino", "--arch", "tna", "-###",
                               "-g", "-o", str(out), "--bf-rt-schema", str(out / "bfrt.json"),
                               str(REPO / "p4src" / "tna" / "inart.p4")],
                              capture_output=True, text=True, timeout=120)
    # its last step, the summary logs (mau.resources.log, metrics.json), is composed, but in a
    # dry run p4c's barefoot.py has no 'pipe_name' for the pipe and returns 1 after it
    assert proc.stdout.strip(), f"no output (status {proc.returncode}): {proc.stderr}"
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last.startswith(f"{staged}/p4c-build-logs "), proc.stdout
    assert proc.returncode in (0, 1), proc.stderr
    assert f"{staged}/p4c-barefoot --nocpp" in proc.stdout
    assert f"{staged}/bfas " in proc.stdout and f"-I {staged}/p4include" in proc.stdout
