"""p4runtime-shell writing a switch's entries as its users do, for `inart bench controller`.

Runs inside p4runtime-shell's private environment (control_plane/shell_env), as a script: it
imports nothing of inart.  One process serves the whole benchmark, so its start (Python,
IPython, p4runtime-shell's imports) is paid once and is not in any figure: each request is
one JSON line on standard input, each answer one JSON line on standard output.

Request: {"address", "device_id", "election_id": [high, low],
          "groups": [[group_id, [[port, rid], ...]], ...],
          "entries": [{"table", "action", "match": [[name, value]], "params": [[name, value]]}]}
Answer:  {"write": seconds of the inserts, "total": seconds of the session, setup to
          teardown} or {"error": "..."}.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback


def write(sh, req: dict) -> dict:  # noqa: ANN001 (p4runtime_sh.shell)
    """One insert (one Write RPC) per group and entry, between setup and teardown."""
    start = time.perf_counter()
    sh.setup(device_id=req["device_id"], grpc_addr=req["address"],
             election_id=tuple(req["election_id"]), verbose=False)
    try:
        writing = time.perf_counter()
        for group_id, replicas in req["groups"]:
            mg = sh.MulticastGroupEntry(group_id)
            for port, rid in replicas:
                mg.add(port, rid)
            mg.insert()
        for entry in req["entries"]:
            te = sh.TableEntry(entry["table"])(action=entry["action"])
            for name, value in entry["match"]:
                te.match[name] = value
            for name, value in entry["params"]:
                te.action[name] = value
            te.insert()
        written = time.perf_counter() - writing
    finally:
        sh.teardown()
    return {"write": written, "total": time.perf_counter() - start}


def main() -> int:
    # answers go to the original standard output; anything p4runtime-shell prints, to stderr
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import p4runtime_sh.shell as sh

    for line in sys.stdin:
        try:
            answer = write(sh, json.loads(line))
        except (Exception, SystemExit) as exc:  # p4runtime-shell calls sys.exit on errors
            traceback.print_exc()
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
