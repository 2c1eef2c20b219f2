"""The launchers' reader of a process's stdout: records, log lines, and nothing that crashes
the launcher (a user script prints what it likes)."""

import queue
import subprocess
import sys

from host_stack.train.launcher import JsonLineReader

LINES = ['{"event": "step", "loss": 1.5}', '{"loss": 2}', '[1, 2]', '3', 'plain text',
         '{"event": 7}']


def test_only_objects_with_an_event_are_records_everything_else_is_a_log_line():
    code = "import sys\nfor line in sys.argv[1:]: print(line)"
    proc = subprocess.Popen([sys.executable, "-c", code, *LINES], stdout=subprocess.PIPE,
                            text=True)
    out: queue.Queue = queue.Queue()
    reader = JsonLineReader("w1", proc, out)
    reader.start()
    reader.join(timeout=30)
    proc.wait(timeout=30)
    got = [out.get_nowait()[1] for _ in range(out.qsize())]
    assert got[0] == {"event": "step", "loss": 1.5}
    assert got[1:-1] == [{"event": "log", "line": line} for line in LINES[1:]]
    assert got[-1] == {"event": "eof"}
