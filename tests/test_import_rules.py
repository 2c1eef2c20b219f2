"""DESIGN.md section 1: dependencies point one way.  Checked on the source (every import
statement, also those inside functions), so a violation fails here before it ships."""

from __future__ import annotations

import ast
import sys

import pytest

from control_plane.repo import REPO


def imports_of(package: str) -> dict[str, set[str]]:
    """Module file (relative path) -> top-level-qualified names it imports."""
    out: dict[str, set[str]] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        out[path.relative_to(REPO).as_posix()] = names
    return out


def offenders(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{module} imports {name}" for module, names in imports_of(package).items()
            for name in sorted(names) if name.split(".")[0] in forbidden
            or any(name == f or name.startswith(f + ".") for f in forbidden)]


@pytest.mark.parametrize("package, forbidden", [
    ("control_plane", ("emulation", "host_stack", "mininet", "realhosts")),
    ("host_stack", ("emulation", "mininet", "realhosts")),
    # the emulation's cluster mode reaches servers through host_stack/remote, as real hosts do
    ("emulation", ("realhosts",)),
    ("emulation/targets", ("mininet", "emulation.network", "emulation.runs",
                           "emulation.measure", "emulation.experiments")),
    # real hosts and standalone switches: nothing of Mininet or of the emulated network
    ("realhosts", ("mininet", "emulation.network", "emulation.runs")),
    # the flow-level simulation: beside the emulation, nothing of it or of Mininet
    ("simulation", ("emulation", "mininet")),
])
def test_dependencies_point_one_way(package: str, forbidden: tuple[str, ...]) -> None:
    assert offenders(package, forbidden) == []


def test_the_rule_checker_sees_function_level_imports(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text("def f():\n    from emulation.network.mininet_net import Network\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert offenders("pkg", ("emulation",)) == ["pkg/m.py imports emulation.network.mininet_net"]


def test_one_wire_module() -> None:
    """The wire format lives in exactly one module (DESIGN.md section 1)."""
    defining = [p.relative_to(REPO).as_posix() for pkg in ("control_plane", "host_stack",
                                                           "emulation")
                for p in (REPO / pkg).rglob("*.py") if "GRAD_PORT =" in p.read_text()]
    assert defining == ["host_stack/ina/wire.py"]


def test_no_test_skips_because_an_import_failed() -> None:
    """A project module that cannot be imported must fail the suite, not skip a test away."""
    marker = "importorskip" + "("
    users = [p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("*.py")
             if marker in p.read_text()]
    assert users == []


def module_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Project module -> project modules it imports (at any depth in the file)."""
    modules = {".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p
               for pkg in packages for p in (REPO / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
            edges.update(t for t in targets if t in modules and t != name
                         and not name.startswith(t + "."))  # a package's own __init__
        graph[name] = edges
    return graph


def test_no_import_circles() -> None:
    """Modules import each other one way (a circle hides which one is the foundation)."""
    import networkx as nx

    graph = nx.DiGraph([(a, b) for a, bs in module_graph(
        ("control_plane", "host_stack", "emulation", "realhosts")).items() for b in bs])
    assert sorted(sorted(c) for c in nx.simple_cycles(graph)) == []
