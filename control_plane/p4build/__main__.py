"""``python -m control_plane.p4build`` (``make p4``): rebuild or check both committed builds."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from control_plane.p4build import tna, v1model
from control_plane.p4build.sources import BuildError


def _run(arch: str, args: argparse.Namespace) -> str:
    """Check or rebuild one program; the line to print."""
    if arch == "tna":
        if args.check:
            tna.check_fresh()
            return f"{tna.TNA_BUILD_REL} is up to date"
        if args.tna_source:
            if not args.tna_out:
                raise BuildError("--tna-source needs --tna-out (a trial build never replaces "
                                 f"{tna.TNA_BUILD_REL})")
            info = tna.compile_program(args.bf_p4c, Path(args.tna_out), Path(args.tna_source))
            return (f"built {args.tna_source} into {args.tna_out} with "
                    f"{info['compiler_kind']} {info['compiler_version']} (N={info['N']}, "
                    f"{info['stages']} stages; resources.txt there)")
        info = tna.compile_program(args.bf_p4c)
        return (f"built {tna.TNA_BUILD_REL} with {info['compiler_kind']} "
                f"{info['compiler_version']} "
                f"(N={info['N']}, {info['stages']} stages, sources sha256 "
                f"{info['sources_sha256'][:12]}...)")
    if args.check:
        v1model.check_fresh()
        return "p4src/build (v1model) is up to date"
    info = v1model.compile_program(args.p4c)
    return (f"built p4src/build with {info['p4c_version']} (N={info['N']}, "
            f"sources sha256 {info['sources_sha256'][:12]}...)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rebuild (or check) p4src/build: the bmv2 "
                                                 "build of p4src/v1model and the Tofino build "
                                                 "of p4src/tna.")
    parser.add_argument("--arch", choices=("v1model", "tna", "all"), default="all",
                        help="which program (default: %(default)s)")
    parser.add_argument("--p4c", default=os.environ.get("P4C", v1model.DEFAULT_P4C),
                        help="p4c executable (default: $P4C or %(default)s)")
    parser.add_argument("--bf-p4c", default=os.environ.get("BF_P4C"),
                        help="the Tofino compiler: the SDE's bf-p4c, p4c's driver with "
                             "p4c-barefoot beside it, or a p4c build tree with p4c-barefoot "
                             "and bfas built (default: $BF_P4C, else bf-p4c or p4c on PATH, "
                             "in /opt/p4/bin or in $SDE_INSTALL/bin)")
    parser.add_argument("--tna-source", help="compile this TNA program instead (a layout on "
                                             "trial), into --tna-out")
    parser.add_argument("--tna-out", help="directory for the --tna-source build")
    parser.add_argument("--check", action="store_true",
                        help="only check that the committed build matches the sources")
    args = parser.parse_args(argv)
    arches = ("v1model", "tna") if args.arch == "all" else (args.arch,)
    status = 0
    for arch in arches:
        try:
            print(_run(arch, args))
        except BuildError as exc:
            print(f"error: {arch}: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
