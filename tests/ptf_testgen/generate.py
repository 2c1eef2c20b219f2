"""Generate the P4Testgen PTF tests of the v1model program (`make testgen`).

P4Testgen (p4lang/p4c, backends/p4tools/modules/testgen) executes p4src/v1model/inart.p4
symbolically and writes one PTF test per path it takes: an input packet, the table entries
that path needs and the packet that must come out (or none).  This runs it with a fixed seed,
the coverage-guided path selection and statement and table-entry coverage, and writes into
this directory:

- ``inart_v1model.py``: the generated tests, verbatim (they import ``base_test``, inart's harness);
- ``TESTGEN.json``: the generator's version, the command, the seed, the sha256 of the P4
  sources the tests were generated from (tests/test_ptf.py fails when they go stale), the
  number of tests, P4Testgen's own statement coverage and the statements it did not reach
  (unreached.json says why for each).

Usage: python tests/ptf_testgen/generate.py [--p4testgen /opt/p4/bin/p4testgen] [--seed N]
(`make testgen P4TESTGEN=...`).  P4Testgen needs one fix first: upstream/shift_width.p4.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

PROGRAM = "p4src/v1model/inart.p4"
TEST_NAME = "inart_v1model"  # the module name (not "inart": that is a package)
PORTS = "1:10"  # the PTF harness's switch ports (tests/ptf/run_ptf.py)
TIMEOUT_S = 3600
_COVERED = re.compile(r"Nodes covered: [0-9.]+ \((\d+)/(\d+)\)")
_NOT_COVERED = re.compile(r"^\s*(\S+?)\\(\d+): (.*)$")


def command(p4testgen: str, out: Path, seed: int, max_tests: int) -> list[str]:
    return [p4testgen, "--target", "bmv2", "--arch", "v1model", "--std", "p4-16",
            "--test-backend", "PTF", "--seed", str(seed), "--max-tests", str(max_tests),
            "--path-selection", "GREEDY_STATEMENT_SEARCH", "--stop-metric", "MAX_NODE_COVERAGE",
            "--track-coverage", "STATEMENTS", "--track-coverage", "TABLE_ENTRIES",
            "--port-ranges", PORTS, "--print-coverage", "--test-name", TEST_NAME,
            "--out-dir", str(out), PROGRAM]


def uncovered(log: str) -> list[dict[str, object]]:
    """The last "Not covered program nodes" list P4Testgen printed (after its last test)."""
    start = log.rfind("Not covered program nodes:")
    if start < 0:
        return []
    out = []
    for line in log[start:].splitlines()[1:]:
        m = _NOT_COVERED.match(line)
        if not m:
            break
        out.append({"file": str(Path(m.group(1)).resolve().relative_to(REPO))
                    if Path(m.group(1)).is_absolute() else m.group(1),
                    "line": int(m.group(2)), "node": " ".join(m.group(3).split())[:200]})
    return out


def generator_version(p4testgen: str) -> str:
    """p4c's version line: P4Testgen prints none of its own ("Version <null>"), the bmv2
    back end of the same build does."""
    beside = Path(shutil.which(p4testgen) or p4testgen).with_name("p4c-bm2-ss")
    if not beside.exists():
        return "p4c (version unknown: no p4c-bm2-ss beside p4testgen)"
    out = subprocess.run([str(beside), "--version"], capture_output=True, text=True, timeout=60)
    lines = (out.stdout + out.stderr).strip().splitlines()
    return "p4c " + (lines[-1].removeprefix("Version ") if lines else "(version unknown)")


def shift_bug(p4testgen: str) -> str | None:
    """Why this P4Testgen cannot generate inart.p4's tests: it stops on a shift by a narrower
    symbolic amount (upstream/shift_width.p4 says which fix it needs), or None."""
    with tempfile.TemporaryDirectory(prefix="inart-testgen-check-") as tmp:
        proc = subprocess.run([p4testgen, "--target", "bmv2", "--arch", "v1model",
                               "--test-backend", "STF", "--max-tests", "0", "--out-dir", tmp,
                               str(HERE / "upstream" / "shift_width.p4")],
                              capture_output=True, text=True, timeout=300)
    if proc.returncode == 0:
        return None
    return (f"{p4testgen} stops on a shift whose amount is narrower than its value "
            f"(P4Testgen's Z3 translator; inart.p4's bitmap check has one): build it with "
            f"the fix described in {HERE / 'upstream' / 'shift_width.p4'}")


def main(argv: list[str] | None = None) -> int:
    from control_plane.p4build import sources  # here: the ptf tool imports this file too

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--p4testgen", default="/opt/p4/bin/p4testgen")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-tests", type=int, default=0,
                    help="at most this many tests (default 0: every path P4Testgen finds; it "
                         "stops earlier at full statement coverage)")
    args = ap.parse_args(argv)
    if shutil.which(args.p4testgen) is None:
        print(f"generate: error: --p4testgen {args.p4testgen}: not found (build p4c with "
              f"P4Testgen, docs/switches.md)", file=sys.stderr)
        return 2
    problem = shift_bug(args.p4testgen)
    if problem:
        print(f"generate: error: {problem}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="inart-testgen-") as tmp:
        cmd = command(args.p4testgen, Path(tmp), args.seed, args.max_tests)
        print("generate:", " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            tail = "\n".join(line for line in log.splitlines() if not line.startswith("\t"))
            print(f"generate: error: p4testgen exited with status {proc.returncode}:\n"
                  f"{tail[-3000:]}", file=sys.stderr)
            return 1
        generated = Path(tmp) / f"{TEST_NAME}.py"
        # the header names the temporary output path: name the program instead
        text = generated.read_text().replace(f"{tmp}/{TEST_NAME}", PROGRAM, 1)
    tests = len(re.findall(r"^class Test\d+\(AbstractTest\)", text, re.M))
    covered = _COVERED.findall(log)
    (HERE / f"{TEST_NAME}.py").write_text(text)
    info = {
        "schema": "inart.testgen/1",
        "generator": f"p4testgen of {generator_version(args.p4testgen)}",
        "generator_changes": ["the shift-amount width fix (upstream/shift_width.p4)"],
        "command": ["p4testgen", *cmd[1:-3], "--out-dir", "OUT", PROGRAM],
        "seed": args.seed,
        "program": PROGRAM,
        "sources_sha256": sources.sources_sha256(),
        "tests": tests,
        # P4Testgen's statements: its IR's, the per-value code counted once per value
        "statements": int(covered[-1][1]) if covered else None,
        "covered": int(covered[-1][0]) if covered else None,
        "uncovered": uncovered(log),
    }
    (HERE / "TESTGEN.json").write_text(json.dumps(info, indent=1) + "\n")
    print(f"generate: {tests} tests, statements covered {info['covered']}/"
          f"{info['statements']}, {len(info['uncovered'])} not reached", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # run as a script from a checkout
    sys.exit(main())
