"""What a process forked by the fork server sees (tests/test_forkserver.py runs it as a
module): its network namespace, session, arguments, environment; exits with argv[1]."""

import json
import os
import sys

if __name__ == "__main__":
    print(json.dumps({"netns": os.stat("/proc/self/ns/net").st_ino, "pid": os.getpid(),
                      "sid": os.getsid(0), "argv": sys.argv[1:], "cwd": os.getcwd(),
                      "probe": os.environ.get("PROBE"), "torch": "torch" in sys.modules}),
          flush=True)
    print("probe stderr line", file=sys.stderr, flush=True)
    if len(sys.argv) > 2 and sys.argv[2] == "wait":
        sys.stdin.read()  # /dev/null: returns at once
        import time
        time.sleep(float(sys.argv[3]))
    sys.exit(int(sys.argv[1]))
