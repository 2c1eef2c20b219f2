"""The README and the user guide: short README that starts with the two commands, no talk of
the development process anywhere a user reads, links that resolve, and a CLI reference that
covers every parser.  `mkdocs build --strict` (./dev.sh test) checks the guide's own links."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from control_plane.cli.main import BENCHMARKS, COMMANDS
from control_plane.repo import REPO

# what a user must never read: the development process's sessions, issue numbers (also as
# "#16") and commits, and the papers by their seed-file numbers instead of their names
PROCESS_TALK = re.compile(r"session [0-9]|issue [0-9]+|(?:^|[\s(,])#[0-9]+\b"
                          r"|commit [0-9a-f]{7,40}\b|seed 00[0-9]", re.IGNORECASE)
SCANNED = ["README.md", "docs", "control_plane", "emulation", "simulation", "host_stack",
           "realhosts", "p4src", "examples"]
README_MAX_LINES = 200
PAGE_MAX_LINES = 400  # a guide page says what it is for, how to use it and its current figures


def process_talk(paths: list[Path]) -> list[str]:
    """``path:line: text`` of every line under ``paths`` (files or folders) that matches."""
    hits = []
    for root in paths:
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            try:
                text = path.read_text()
            except UnicodeDecodeError:  # images, compiled Tofino binaries
                continue
            base = REPO if path.is_relative_to(REPO) else (root if root.is_dir() else root.parent)
            name = path.relative_to(base).as_posix()
            hits += [f"{name}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
                     if PROCESS_TALK.search(line)]
    return hits


def test_no_sessions_or_issue_numbers_in_readme_docs_or_packages():
    assert process_talk([REPO / p for p in SCANNED]) == []


def test_the_scan_finds_process_talk(tmp_path):
    (tmp_path / "a.md").write_text("fine\nas measured in Session 4\n")
    (tmp_path / "b.py").write_text("# see issue 18\nx = 1  # seed 004\n# 16 bits\n")
    (tmp_path / "c.md").write_text("as in #16's run\nsince commit 96b5e23\n")
    (tmp_path / "d.png").write_bytes(b"\x89PNG\xff\xfe")
    hits = process_talk([tmp_path])
    assert [h.split(":")[:2] for h in hits] == [["a.md", "2"], ["b.py", "1"], ["b.py", "2"],
                                               ["c.md", "1"], ["c.md", "2"]], hits


def readme() -> str:
    return (REPO / "README.md").read_text()


def test_readme_is_short_and_starts_with_the_two_commands():
    text = readme()
    assert len(text.splitlines()) <= README_MAX_LINES
    first_block = re.search(r"```\w*\n(.*?)```", text, re.DOTALL)
    assert first_block, "README has no code block"
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands[:2] == ["./dev.sh demo", "./dev.sh test"]


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme())
    local = [link for link in links if "://" not in link]
    assert local, "README links into the guide"
    assert [link for link in local if not (REPO / link).exists()] == []


def test_guide_pages_are_short_and_history_is_in_the_changelog():
    long_pages = {p.name: n for p in sorted((REPO / "docs").rglob("*.md"))
                  if (n := len(p.read_text().splitlines())) > PAGE_MAX_LINES}
    assert long_pages == {}, f"pages over {PAGE_MAX_LINES} lines: {long_pages}"
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert re.search(r"^## \[Unreleased\]", changelog, re.MULTILINE)
    assert re.search(r"^## \[\d+\.\d+\.\d+\]", changelog, re.MULTILINE)


def test_every_guide_page_is_in_the_nav():
    config = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)

    def pages(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        items = nav.values() if isinstance(nav, dict) else nav
        return [p for item in items for p in pages(item)]

    in_nav = set(pages(config["nav"]))
    on_disk = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").glob("*.md")}
    assert on_disk <= in_nav
    assert "reference/cli.md" in in_nav


@pytest.fixture(scope="module")
def cli_reference() -> str:
    spec = importlib.util.spec_from_file_location(
        "cli_reference", REPO / "docs" / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.render()


def test_cli_reference_has_every_command_benchmark_and_subcommand(cli_reference):
    from host_stack.cli.experiment import EXPERIMENTS

    sections = dict(re.findall(r"^#+ `(inart[^`]*)`\n\n```text\n(.*?)```", cli_reference,
                               re.MULTILINE | re.DOTALL))
    wanted = (["inart"] + [f"inart {c}" for c in COMMANDS]
              + [f"inart bench {b}" for b in BENCHMARKS]
              + [f"inart experiment {e}" for e in EXPERIMENTS]
              + [f"inart ctl {c}" for c in ("topology", "submit", "event", "watch", "jobs")])
    for title in wanted:
        assert title in sections, title
        assert sections[title].startswith(f"usage: {title}"), (title, sections[title][:80])
    assert "--topology" in sections["inart plan"] and "--parts" in sections[
        "inart bench controller"]
