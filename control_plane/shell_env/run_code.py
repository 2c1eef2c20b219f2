"""Run Python code in p4runtime-shell's namespace (`inart shell -c / --script`).

Runs inside p4runtime-shell's private environment (control_plane/shell_env), as a script:
it imports nothing of inart.

    python -I run_code.py CODE_FILE DISPLAY_NAME -- P4RUNTIME_SHELL_ARGS...

p4runtime-shell builds its namespace inside its ``main`` and hands it to IPython; taking over
that hand-off gives the code exactly the interactive shell's names (TableEntry, CounterEntry,
p4info, ...), and the shell still tears its session down after it.  Exit status: the code's
(``sys.exit``), 1 if it raised, p4runtime-shell's own if it could not connect.
"""

from __future__ import annotations

import sys
import traceback


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[2] != "--":
        print("usage: run_code.py CODE_FILE DISPLAY_NAME -- P4RUNTIME_SHELL_ARGS...",
              file=sys.stderr)
        return 2
    code_file, filename, shell_args = argv[0], argv[1], argv[3:]
    with open(code_file) as f:
        code = f.read()
    import p4runtime_sh.shell as sh

    status = 0

    def execute(user_ns: dict, **_: object) -> None:
        nonlocal status
        try:
            exec(compile(code, filename, "exec"), user_ns)  # noqa: S102 (the user's script)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # the user's code failed: report it like Python would
            traceback.print_exc()
            status = 1

    sh.start_ipython, sys.argv = execute, ["p4runtime_sh", *shell_args]
    sh.main()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
