"""Compile the embedded target's P4 test programs with p4c (bmv2 backend, v1model).

Outputs (committed, since CI has no p4c): build/NAME.json, build/NAME.p4info.txt and
build/SOURCES.sha256 with the hash of each source; tests fail when a source changed and was not
rebuilt.  Usage: python tests/embedded/p4/build.py [--p4c /opt/p4/bin/p4c]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"


def source_hashes() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(HERE.glob("*.p4"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--p4c", default="/opt/p4/bin/p4c")
    args = ap.parse_args()
    BUILD.mkdir(exist_ok=True)
    for src in sorted(HERE.glob("*.p4")):
        cmd = [args.p4c, "--target", "bmv2", "--arch", "v1model", "--std", "p4-16",
               "--Wdisable=deprecated", "-o", str(BUILD),
               "--p4runtime-files", str(BUILD / f"{src.stem}.p4info.txt"), str(src)]
        print(" ".join(cmd))
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0 or "warning" in res.stderr.lower():
            print(res.stdout, res.stderr, file=sys.stderr)
            if res.returncode != 0:
                return res.returncode
    for leftover in BUILD.glob("*.p4i"):  # preprocessed sources: not outputs we keep
        leftover.unlink()
    (BUILD / "SOURCES.sha256").write_text(
        "".join(f"{h}  {name}\n" for name, h in source_hashes().items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
