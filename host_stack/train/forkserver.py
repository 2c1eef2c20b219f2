"""A fork server (zygote) for the hosts' Python processes: training workers share one torch.

Why: a training worker started on its own imports torch, the model code and scikit-learn
(~230 MB RSS, nearly all of it the same pages in every worker: fattree:6's 50 workers are
11 GB).  Forked from one process that imported them once (then ``gc.freeze()``, so the
collector never writes to the inherited objects), those pages stay shared copy-on-write and
PSS counts them once among all.  Nothing else is shared: each child runs the same module as
``python -m MODULE ARGV`` (``runpy``, as ``-m`` does) with its own environment, working
directory, stdout/stderr, session and exit status, inside its host's namespaces.

Fork safety: the server never runs a torch operation, so no OpenMP or intra-op thread pool
exists when it forks (forking with live pool threads deadlocks the child's first parallel
region); each child creates its own pools, with the thread count a fresh process would have.
Process groups, sockets and TCP stores (gloo) are made after the fork, by the child's module.

Protocol, one message per SOCK_SEQPACKET datagram on a socket pair whose other end is the
client's: ``{"preload": [modules]}`` imports them (answers ``{"ok": true}``);
``{"spawn": MODULE, "argv": [...], "env": {...}, "cwd": DIR, "ns_pid": PID}`` with the
child's stdout and stderr as SCM_RIGHTS file descriptors forks a child that joins PID's
namespaces (network, mount, UTS, IPC: those that differ from the server's; ``setns``) and
cgroup, and answers ``{"pid": N}``; when a child exits the server sends ``{"exited": N,
"status": S}`` (S as ``Popen.returncode``).  On EOF or SIGTERM it stops every child (SIGTERM,
SIGKILL after 5 s) and exits; a child dies with the server (``PR_SET_PDEATHSIG``), so a dead
server fails the job at once instead of leaving orphans whose exit statuses nobody reports.
``ForkServer`` is the client; its ``spawn`` returns a ``ForkedProcess`` used like a
``subprocess.Popen``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import random
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from control_plane.processes import exited_children, stop_process
from control_plane.repo import child_env

REPLY_TIMEOUT_S = 120.0  # a preload of torch on a loaded 2-core machine takes tens of seconds
MAX_MSG = 1 << 20
WORKER_MODULE = "host_stack.train.worker"
# what a training worker imports beyond its module (the digits data needs scikit-learn)
TORCH_PRELOAD = ("torch", "host_stack.train.models", "host_stack.train.data",
                 "host_stack.train.loop", "sklearn.datasets")
NAMESPACES = {"net": 0x40000000, "mnt": 0x00020000, "uts": 0x04000000, "ipc": 0x08000000}
PR_SET_PDEATHSIG = 1


class ForkServerError(RuntimeError):
    """The fork server failed, refused a request or did not answer; the message says how."""


def preload_for(module: str, argv: list[str]) -> list[str]:
    """The modules worth importing once in the server before forking ``module argv``: a
    training worker's own and its torch stack, unless it sends synthetic gradients (no
    torch); none for another module (importing one may run it)."""
    if module != WORKER_MODULE:
        return []
    model = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--model"), None)
    return [module] if model == "synthetic" else [module, *TORCH_PRELOAD]


def forked_module(cmd: list[str]) -> str | None:
    """The module of ``cmd`` if it is ``[this interpreter, "-m", MODULE, ...]`` for a module
    the server serves (the training worker), else None (start it the plain way)."""
    if len(cmd) >= 3 and cmd[0] == sys.executable and cmd[1] == "-m" and cmd[2] == WORKER_MODULE:
        return WORKER_MODULE
    return None


# -- the server process ---------------------------------------------------------------------------
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def join_namespaces(pid: int) -> list[str]:
    """Enter ``pid``'s namespaces that differ from ours (Python 3.11 has no ``os.setns``) and
    its cgroup (v2) if it differs; the names of what was joined.  The caller must be single
    threaded (a forked child is): the mount namespace refuses a multithreaded caller."""
    libc = _libc()
    joined = []
    for name, flag in NAMESPACES.items():
        target = f"/proc/{pid}/ns/{name}"
        try:
            if os.stat(target).st_ino == os.stat(f"/proc/self/ns/{name}").st_ino:
                continue
        except FileNotFoundError:  # a kernel without this namespace kind
            continue
        fd = os.open(target, os.O_RDONLY)
        try:
            if libc.setns(fd, flag) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns({target}): {os.strerror(err)}")
        finally:
            os.close(fd)
        joined.append(name)
    theirs = Path(f"/proc/{pid}/cgroup").read_text()
    if theirs != Path("/proc/self/cgroup").read_text() and theirs.startswith("0::"):
        cgroup = Path("/sys/fs/cgroup") / theirs.split("::", 1)[1].strip().lstrip("/")
        (cgroup / "cgroup.procs").write_text(str(os.getpid()))
        joined.append("cgroup")
    return joined


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter would exit with after ``sys.exit(code)``."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _child(server_pid: int, keep_closed: list[int], req: dict, fds: list[int]) -> None:
    """Become ``python -m MODULE ARGV`` inside the host: never returns."""
    rc = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in keep_closed:
            os.close(fd)
        os.setsid()  # its own session and group, as mnexec -d gives: killpg reaches it
        if _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 \
                or os.getppid() != server_pid:
            os._exit(1)  # the server is already gone
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in set(fds):
            if fd > 2:
                os.close(fd)
        if req.get("ns_pid"):
            join_namespaces(int(req["ns_pid"]))
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        random.seed()  # a fresh process's state, not the server's copy
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        sys.argv = [req["spawn"], *req["argv"]]
        # as under `python -m`: the module runs as __main__ only (runpy warns if it is loaded)
        sys.modules.pop(req["spawn"], None)
        try:
            runpy.run_module(req["spawn"], run_name="__main__", alter_sys=True)
            rc = 0
        except SystemExit as exc:
            rc = _exit_code(exc)
    except BaseException:  # noqa: BLE001 (a child must never return into the server's loop)
        traceback.print_exc()
        rc = 1
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(rc)


def _send(sock: socket.socket, obj: dict) -> None:
    sock.send(json.dumps(obj).encode())


def _preload(modules: list[str], done: set[str]) -> None:
    """Import what is new, then freeze: the children never write the inherited objects' GC
    headers (the pages stay shared)."""
    new = [m for m in modules if m not in done]
    for module in new:
        importlib.import_module(module)
        done.add(module)
    if new:
        gc.collect()
        gc.freeze()


def serve(fd: int) -> int:
    """The server's loop on socket ``fd``: preload, fork on request, report exits."""
    sock = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    stopping = False

    def on_term(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd hears it
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    children: set[int] = set()
    loaded: set[str] = set()
    me = os.getpid()
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)

    def reap() -> None:
        for pid, status in exited_children():
            children.discard(pid)
            with contextlib.suppress(OSError):
                _send(sock, {"exited": pid, "status": status})

    while not stopping:
        for key, _ in sel.select():
            if key.fileobj == wake_r:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
                reap()
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MSG, 2)
            except OSError:
                data, fds = b"", []
            if not data:
                stopping = True
                break
            try:
                req = json.loads(data)
                if "preload" in req:
                    _preload([str(m) for m in req["preload"]], loaded)
                    _send(sock, {"ok": True})
                    continue
                if len(fds) != 2 or not isinstance(req.get("argv"), list):
                    raise ValueError("expected 'spawn', 'argv', 'env', 'cwd' and two fds")
                pid = os.fork()
                if pid == 0:
                    _child(me, [sock.fileno(), wake_r, wake_w, sel.fileno()], req, fds)
                children.add(pid)
                _send(sock, {"pid": pid})
            except Exception as exc:  # noqa: BLE001 (a bad request must not stop the server)
                _send(sock, {"error": f"{type(exc).__name__}: {exc}"})
            finally:
                for f in fds:
                    os.close(f)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while children and time.monotonic() < deadline:
        reap()
        time.sleep(0.05)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    while children:
        pid, _ = os.waitpid(-1, 0)
        children.discard(pid)
    return 0


# -- the client -----------------------------------------------------------------------------------
class ForkServer:
    """The server process, started on first use; ``close`` stops it and every child.

    Thread-safe: a reader thread takes every message; ``spawn`` waits for its answer, exit
    notices go to ``ForkedProcess.poll``/``wait`` (a resource monitor polls from its thread).
    """

    def __init__(self, stderr: Path | None = None) -> None:
        self.stderr = stderr
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.exited: dict[int, int] = {}
        self.cond = threading.Condition()
        self.replies: list[dict] = []
        self.dead: str | None = None  # why the server is gone (None: running or not started)
        self.request_lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        err = open(self.stderr, "a") if self.stderr else None  # noqa: SIM115 (the child's)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "host_stack.train.forkserver", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], env=child_env(PYTHONUNBUFFERED="1"),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                start_new_session=True)
        finally:
            theirs.close()
            if err is not None:
                err.close()
        self.sock, self.dead = ours, None
        threading.Thread(target=self._read, args=(ours, self.proc), name="fork-server",
                         daemon=True).start()

    def _read(self, sock: socket.socket, proc: subprocess.Popen) -> None:
        while True:
            try:
                data = sock.recv(MAX_MSG)
            except OSError:
                data = b""
            if not data:
                break
            msg = json.loads(data)
            with self.cond:
                if "exited" in msg:
                    self.exited[int(msg["exited"])] = int(msg["status"])
                else:
                    self.replies.append(msg)
                self.cond.notify_all()
        status = proc.wait()
        with self.cond:
            if self.proc is not proc:  # closed on purpose
                return
            self.dead = (f"fork server (pid {proc.pid}) exited with status {status}"
                         + (f" (log {self.stderr})" if self.stderr else ""))
            self.cond.notify_all()

    def _request(self, msg: dict, fds: list[int] | None = None) -> dict:
        with self.request_lock:
            if self.proc is None:
                self._start()
            if self.dead is not None:  # its children died with it: the job cannot go on
                raise ForkServerError(self.dead)
            assert self.sock is not None
            try:
                socket.send_fds(self.sock, [json.dumps(msg).encode()], fds or [])
            except OSError as exc:
                raise ForkServerError(f"fork server: request failed: {exc}") from None
            deadline = time.monotonic() + REPLY_TIMEOUT_S
            with self.cond:
                while not self.replies:
                    if self.dead is not None:
                        raise ForkServerError(self.dead)
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise ForkServerError(f"fork server (pid {self.proc.pid}) did not "
                                              f"answer within {REPLY_TIMEOUT_S:.0f} s")
                    self.cond.wait(left)
                reply = self.replies.pop(0)
        if "error" in reply:
            raise ForkServerError(f"fork server: {reply['error']}")
        return reply

    def spawn(self, module: str, argv: list[str], env: dict[str, str], ns_pid: int | None,
              stdout: int | None = None, stderr: object = None,
              text: bool = False) -> ForkedProcess:
        """``python -m module argv`` forked inside ``ns_pid``'s namespaces (None: ours).

        ``stdout``: ``subprocess.PIPE`` (readable as ``.stdout``) or None (the server's, i.e.
        /dev/null); ``stderr``: a file object, ``subprocess.STDOUT`` or None (the server's log).
        """
        self._request({"preload": preload_for(module, argv)})
        if stdout == subprocess.PIPE:
            read_end, out_fd = os.pipe()
        else:
            read_end, out_fd = None, os.open(os.devnull, os.O_WRONLY)
        try:
            if stderr == subprocess.STDOUT:
                err_fd = os.dup(out_fd)
            elif stderr is None:
                err_fd = os.open(self.stderr or os.devnull, os.O_WRONLY | os.O_APPEND
                                 | os.O_CREAT, 0o644)
            else:
                err_fd = os.dup(stderr.fileno())
            try:
                reply = self._request({"spawn": module, "argv": [str(a) for a in argv],
                                       "env": env, "cwd": os.getcwd(), "ns_pid": ns_pid},
                                      [out_fd, err_fd])
            finally:
                os.close(err_fd)
        except BaseException:
            if read_end is not None:
                os.close(read_end)
            raise
        finally:
            os.close(out_fd)
        pipe = None
        if read_end is not None:
            pipe = os.fdopen(read_end, "r" if text else "rb")
        return ForkedProcess(int(reply["pid"]), self, pipe)

    def status(self, pid: int, timeout: float | None) -> int | None:
        """``pid``'s exit status once the server reported it, waiting up to ``timeout`` s (None:
        forever); None if still running.  ForkServerError if the server died first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            while pid not in self.exited:
                if self.dead is not None:
                    raise ForkServerError(f"{self.dead} before reporting the exit status of "
                                          f"its child {pid}")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self.cond.wait(left)
            return self.exited[pid]

    def close(self) -> None:
        """EOF to the server: it stops every child, waits for them, exits."""
        if self.proc is None:
            return

        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
        proc, sock = self.proc, self.sock
        with self.cond:
            self.proc, self.sock = None, None
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            stop_process(proc)
        if sock is not None:
            sock.close()


class ForkedProcess:
    """A process the server forked, with the part of ``Popen``'s interface the hosts' runners
    use (poll, wait, send_signal, terminate, kill, pid, stdout, returncode)."""

    def __init__(self, pid: int, server: ForkServer, stdout) -> None:
        self.pid = pid
        self.server = server
        self.stdout = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self.server.status(self.pid, 0)
            except ForkServerError:
                if Path(f"/proc/{self.pid}").exists():
                    return None  # dying with the server
                raise
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.server.status(self.pid, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m host_stack.train.forkserver SOCKET_FD (started by "
              "ForkServer)", file=sys.stderr)
        return 2
    return serve(int(args[0]))


if __name__ == "__main__":
    sys.exit(main())
