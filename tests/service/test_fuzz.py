"""1000 malformed or random requests: each gets INVALID_ARGUMENT or NOT_FOUND, the service
stays up and its state (network, jobs, plan versions, switch entries, event log) is exactly
what it was.  Then a storm on real switches: concurrent clients, event storms, abandoned
Watch streams and a restart mid-storm (no INTERNAL, no traceback, bounded memory, a
consistent state afterwards)."""

from __future__ import annotations

import json
import math
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import DecodeError

from control_plane.model.topologies import fig1
from control_plane.repo import REPO, child_env
from control_plane.service.client import Client
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.server import MAX_WATCHERS
from tests.service.conftest import FIG1_SWITCHES, Service

REQUESTS = 1000
ALLOWED = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND}
METHODS = {m.name: (getattr(pb, m.input_type.name), m.server_streaming)
           for m in pb.DESCRIPTOR.services_by_name["Controller"].methods}
FUZZED = ["RegisterTopology", "SubmitJob", "CancelJob", "GetPlan", "ReportEvent",
          "ReportProgress", "Watch"]
NODES = ["v1", "v2", "w1", "w6", "s1", "s2"]
WORKERS = [f"w{i}" for i in range(1, 7)]
BAD_IDS = ["", " w1", "w1\n", "x" * 65, "w\x00", "nope", "w99", "v9", "s3", "\u2028", "é" * 70]


def snapshot(svc: Service) -> tuple:
    c = svc.client
    state = c.topology()
    jobs = c.jobs(include_cancelled=True)
    plans = [c.plan(j.id, v).SerializeToString(deterministic=True)
             for j in jobs for v in range(1, j.active_version + 1)]
    installed = {sw: dict(items) for sw, items in svc.installer.state.items()}
    return (state.SerializeToString(deterministic=True),
            [j.SerializeToString(deterministic=True) for j in jobs], plans, installed,
            svc.installer.writes, svc.controller.store.event_count())


def bad_topology(rng: random.Random) -> str:
    topo = fig1().to_dict()
    choice = rng.randrange(10)
    if choice == 0:
        return "".join(rng.choice("{}[]\",:0123456789abc ") for _ in range(rng.randrange(1, 80)))
    if choice == 1:
        topo["nodes"][rng.randrange(4)]["capacity"] = -rng.uniform(0.1, 100)
    elif choice == 2:
        topo["links"][rng.randrange(len(topo["links"]))]["capacity"] = rng.choice(
            ["6", None, [], True, -1, "NaN"])
    elif choice == 3:
        topo["nodes"].append(dict(topo["nodes"][0]))  # duplicate id
    elif choice == 4:
        topo["nodes"][rng.randrange(len(topo["nodes"]))]["kind"] = rng.choice(["router", 7, ""])
    elif choice == 5:
        topo["links"].append({"src": "w1", "dst": "nowhere", "capacity": 1})
    elif choice == 6:
        topo = rng.choice([[], 5, "fig1", {"nodes": {}, "links": []}, {"nodes": []}])
    elif choice == 7:
        return "[" * 100000 + "]" * 100000  # nesting deeper than any parser allows
    elif choice == 8:
        topo["links"] = [lk for lk in topo["links"] if "s1" not in (lk["src"], lk["dst"])]
    else:
        topo["links"][0]["background"] = topo["links"][0]["capacity"] * 2
    return json.dumps(topo)


def register_request(rng: random.Random) -> pb.RegisterTopologyRequest:
    good = json.dumps(fig1().to_dict())
    req = pb.RegisterTopologyRequest(topology_json=good)
    for name, (addr, dev) in FIG1_SWITCHES.items():
        req.switches.add(name=name, address=addr, device_id=dev)
    choice = rng.randrange(6)
    if choice == 0:
        req.topology_json = bad_topology(rng)
    elif choice == 1:
        req.switches[rng.randrange(2)].address = rng.choice(
            ["", "host", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:70000", ":50", "[::1]x"])
    elif choice == 2:
        req.switches[rng.randrange(2)].name = rng.choice(BAD_IDS + ["w1", "s1"])
    elif choice == 3:
        del req.switches[rng.randrange(2)]
    elif choice == 4:
        req.switches.add(name="v1", address="127.0.0.1:1")
    else:
        req.topology_json = "x" * (17 << 20) if rng.random() < 0.05 else ""
    return req


def submit_request(rng: random.Random) -> pb.SubmitJobRequest:
    req = pb.SubmitJobRequest(workers=["w1", "w2"], pss=["s1"], model_size=1e6)
    choice = rng.randrange(7)
    if choice == 0:
        req.workers.append(rng.choice(BAD_IDS + ["s2", "v1"]))
    elif choice == 1:
        req.pss[:] = [rng.choice(BAD_IDS + ["w3", "v2"])]
    elif choice == 2:
        req.model_size = rng.choice([0.0, -1.0, math.nan, math.inf, -math.inf, 1e300])
    elif choice == 3:
        req.scheme = rng.choice(["best", "INART", "x" * 1000, "milp "])
    elif choice == 4:
        req.name = rng.choice(["\x07bell", "a" * 129, "tab\there", "a" * (1 << 20)])
    elif choice == 5:
        req.workers.extend(["w1"])  # listed twice
    else:
        req.workers.extend(f"w{i}" for i in range(5000))
    return req


def event_request(rng: random.Random) -> pb.ReportEventRequest:
    kind = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 99, -1])
    req = pb.ReportEventRequest(kind=kind)
    choice = rng.randrange(6)
    if kind in (1, 2, 3):
        if choice == 0:
            pass  # no link
        elif choice == 1:
            req.link.a, req.link.b = rng.choice(BAD_IDS), "v1"
        elif choice == 2:
            req.link.a, req.link.b = rng.choice([("w1", "w2"), ("s1", "v1"), ("w1", "v2")])
        elif choice == 3:
            req.link.a, req.link.b = "v1", "v2"
            req.node = rng.choice(NODES)
        elif choice == 4:
            req.link.a, req.link.b = "v1", "v2"
            req.value = rng.choice([-1.0, math.nan, math.inf, 6.5, 1e9] if kind == 3
                                   else [1.0, -2.0])
        else:
            req.link.a, req.link.b = "w1", rng.choice(BAD_IDS)
    elif kind in (4, 5, 6):
        if choice == 0:
            req.node = rng.choice(BAD_IDS)
        elif choice == 1:
            req.node = rng.choice(["w1", "v1"] if kind == 4 else ["w1", "s1"])
        elif choice == 2:
            req.node = "s1" if kind == 4 else "v1"
            req.link.a, req.link.b = "v1", "v2"
        elif choice == 3 and kind == 4:
            req.node, req.value = "s1", rng.choice([-0.5, 4.5, math.nan, math.inf])
        else:
            req.node, req.value = ("s1", -3.0) if kind == 4 else ("v1", 1.0)
    else:
        req.node = rng.choice(NODES)
    return req


def raw_garbage(rng: random.Random, cls: type) -> bytes:
    """Bytes that are no message of ``cls`` (checked): a bad wire type, an overlong varint, a
    length past the end, or a field of the wrong type."""
    tail = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
    choice = rng.randrange(3)
    if choice == 0:
        raw = bytes([rng.randrange(1, 16) << 3 | rng.choice([6, 7])]) + tail
    elif choice == 1:
        raw = b"\x08" + b"\xff" * 10 + b"\x01" + tail
    else:
        raw = b"\x0a" + bytes([0x80 | rng.randrange(1, 128), 0x7f]) + tail[:3]
    with pytest.raises(DecodeError):
        cls.FromString(raw)
    return raw


def wrong_type(cls: type) -> bytes:
    """Every field of ``cls`` sent as a length-delimited string (ids become defaults: 0)."""
    return b"".join(bytes([f.number << 3 | 2, 3]) + b"abc" for f in cls.DESCRIPTOR.fields
                    if f.number < 16)


def random_request(rng: random.Random, job_id: int) -> tuple[str, object]:
    """(method, request message or raw bytes) that the service must refuse."""
    method = rng.choice(FUZZED)
    cls, _ = METHODS[method]
    roll = rng.random()
    if roll < 0.15:
        return method, raw_garbage(rng, cls)
    if roll < 0.2 and method in ("CancelJob", "GetPlan", "ReportProgress"):
        return method, wrong_type(cls)
    if method == "RegisterTopology":
        return method, register_request(rng)
    if method == "SubmitJob":
        return method, submit_request(rng)
    if method == "ReportEvent":
        return method, event_request(rng)
    bad_job = rng.choice([0, job_id + rng.randrange(1, 1 << 40), (1 << 64) - 1])
    if method == "CancelJob":
        return method, pb.CancelJobRequest(job_id=bad_job)
    if method == "GetPlan":
        if rng.random() < 0.5:
            return method, pb.GetPlanRequest(job_id=job_id, version=rng.randrange(50, 1 << 32))
        return method, pb.GetPlanRequest(job_id=bad_job)
    if method == "Watch":
        return method, pb.WatchRequest(job_id=job_id + rng.randrange(1, 1 << 40))
    choice = rng.randrange(3)
    if choice == 0:
        return method, pb.ReportProgressRequest(job_id=bad_job, participant="w1", round=1)
    if choice == 1:
        return method, pb.ReportProgressRequest(job_id=job_id, participant=rng.choice(BAD_IDS),
                                                round=1)
    return method, pb.ReportProgressRequest(job_id=job_id, participant="w1",
                                            round=rng.randrange(1 << 63, 1 << 64))


def call(channel: grpc.Channel, method: str, request: object) -> grpc.StatusCode:
    raw = request if isinstance(request, bytes) else request.SerializeToString()
    path = f"/inart.controller.v1.Controller/{method}"
    ident: Callable[[bytes], bytes] = lambda b: b  # noqa: E731
    try:
        if METHODS[method][1]:
            for _ in channel.unary_stream(path, ident, ident)(raw, timeout=30):
                pass
        else:
            channel.unary_unary(path, ident, ident)(raw, timeout=30)
    except grpc.RpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


def test_1000_malformed_requests_are_refused_and_change_nothing(service: Service) -> None:
    service.client.register_topology(fig1(), FIG1_SWITCHES)
    job = service.client.submit(["w1", "w2", "w3", "w4", "w5"], ["s1", "s2"], 1e6)
    before = snapshot(service)
    rng = random.Random(14)
    channel = grpc.insecure_channel(service.address, options=[
        ("grpc.max_send_message_length", 64 << 20)])
    codes: dict[str, int] = {}
    for i in range(REQUESTS):
        method, request = random_request(rng, job.id)
        code = call(channel, method, request)
        assert code in ALLOWED, f"request {i} to {method}: {code} for {request!r:.300}"
        codes[code.name] = codes.get(code.name, 0) + 1
    channel.close()
    assert set(codes) == {c.name for c in ALLOWED}  # both kinds were exercised
    assert snapshot(service) == before
    assert service.client.plan(job.id).version == 1  # still serving


# -- the storm: a real `inart serve` on embedded switches --------------------------------------

STORM_S = 6.0  # seconds of each half of the storm (before and after the restart)
BAD = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
RSS_GROWTH_MB = 64  # what the second half may add to the service's memory


class Serve:
    """`inart serve` on a Unix socket (same address across restarts), stderr to a file."""

    def __init__(self, state: Path, socket: Path, log: Path) -> None:
        self.state, self.socket, self.log = state, socket, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        err = self.log.open("a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "control_plane.cli", "serve", "--listen",
             f"unix:{self.socket}", "--state", str(self.state), "--drain-seconds", "0.2",
             "--reconcile-interval", "1", "--p4-timeout", "2"],
            stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO, env=child_env())
        err.close()
        line = self.proc.stdout.readline()
        assert "listening on" in line, (line, self.log.read_text()[-2000:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            assert self.proc.wait(timeout=60) == 0
        self.proc = None

    def rss_mb(self) -> float:
        assert self.proc is not None
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(next(x for x in status.splitlines() if x.startswith("VmRSS:")).split()[1]) / 1024


class Storm:
    """Concurrent clients against one service address until ``stop``; every status seen."""

    def __init__(self, address: str, job_id: int) -> None:
        self.address, self.job_id = address, job_id
        self.stop = threading.Event()
        self.codes: dict[str, int] = {}
        self.bad: list[str] = []
        self.answers: dict[int, set[int]] = {}  # round -> versions answered for it
        self.lock = threading.Lock()

    def note(self, what: str, exc: grpc.RpcError | None) -> None:
        code = exc.code() if exc is not None else grpc.StatusCode.OK
        with self.lock:
            self.codes[code.name] = self.codes.get(code.name, 0) + 1
            if code in BAD:
                self.bad.append(f"{what}: {code.name}: {exc.details()}")  # type: ignore[union-attr]

    def call(self, what: str, fn: Callable[[], object]) -> object | None:
        try:
            out = fn()
        except grpc.RpcError as exc:
            self.note(what, exc)
            return None
        self.note(what, None)
        return out

    def events(self, seed: int) -> None:
        rng = random.Random(seed)
        with Client(self.address, timeout=30) as c:
            for _ in range(200):
                if self.stop.is_set():
                    return
                kind = rng.choice(["link-down", "link-up", "link-load", "ps-load"])
                if kind == "link-load":
                    self.call(kind, lambda: c.event(kind, link=("v1", "v2"),  # noqa: B023
                                                    value=rng.uniform(0, 5)))
                elif kind == "ps-load":
                    self.call(kind, lambda: c.event(kind, node="s1",  # noqa: B023
                                                    value=rng.uniform(0, 2)))
                else:
                    self.call(kind, lambda: c.event(kind, link=("w1", "v1")))  # noqa: B023

    def hosts(self) -> None:
        """w2..w6 report rounds in step, as training hosts do."""
        round_ = 0
        with Client(self.address, timeout=30) as c:
            while not self.stop.is_set() and round_ < 2000:
                for w in WORKERS[1:]:
                    v = self.call("progress", lambda: c.progress(self.job_id, w,  # noqa: B023
                                                                 round_))  # noqa: B023
                    if v is not None:
                        assert v.switch_round <= round_  # type: ignore[attr-defined]
                        with self.lock:
                            self.answers.setdefault(round_, set()).add(v.version)  # type: ignore[attr-defined]
                round_ += 1
                time.sleep(0.02)

    def readers(self) -> None:
        with Client(self.address, timeout=30) as c:
            for _ in range(2000):
                if self.stop.is_set():
                    return
                self.call("jobs", c.jobs)
                self.call("plan", lambda: c.plan(self.job_id))  # noqa: B023
                self.call("topology", c.topology)

    def watchers(self, seed: int) -> None:
        """Watch streams abandoned at once, after a message, or never read."""
        rng = random.Random(seed)
        with Client(self.address, timeout=30) as c:
            for _ in range(300):
                if self.stop.is_set():
                    return
                stream = c.watch(rng.choice([0, self.job_id]), since=rng.randrange(0, 50),
                                 timeout=2.0)  # a quiet moment must not hang the client
                try:
                    if rng.random() < 0.5:
                        next(iter(stream))
                    time.sleep(rng.choice([0, 0.002, 0.02]))
                except grpc.RpcError as exc:
                    self.note("watch", exc)
                stream.cancel()

    def garbage(self, seed: int) -> None:
        rng = random.Random(seed)
        channel = grpc.insecure_channel(self.address)
        try:
            for i in range(300):
                if self.stop.is_set():
                    return
                method, request = random_request(rng, self.job_id)
                code = call(channel, method, request)
                if code in BAD:
                    with self.lock:
                        self.bad.append(f"malformed request {i} to {method}: {code.name}")
        finally:
            channel.close()

    def run(self, seconds: float) -> None:
        self.stop.clear()
        threads = [threading.Thread(target=t, args=a, daemon=True) for t, a in (
            (self.events, (1,)), (self.events, (2,)), (self.hosts, ()), (self.readers, ()),
            (self.watchers, (3,)), (self.watchers, (4,)), (self.garbage, (5,)))]
        for t in threads:
            t.start()
        time.sleep(seconds)
        self.stop.set()
        for t in threads:
            t.join(timeout=60)
            assert not t.is_alive(), "a client hung"


def test_a_storm_on_real_switches_across_a_restart(tmp_path: Path) -> None:
    """Event storms, hosts reporting rounds, readers, abandoned Watch streams and malformed
    requests at once against `inart serve` on two embedded switches, restarted mid-storm:
    no INTERNAL or UNKNOWN status, no traceback, bounded memory, every round answered one
    version, and afterwards the switches hold exactly what the service wants."""
    from tests.service.helpers import fig1_switches

    serve = Serve(tmp_path / "state", tmp_path / "inart.sock", tmp_path / "serve.log")
    address = f"unix:{serve.socket}"
    with fig1_switches(tmp_path) as switches:
        serve.start()
        try:
            with Client(address, timeout=60) as c:
                c.register_topology(fig1(), {n: (s.spec.grpc, s.spec.device_id)
                                             for n, s in switches.items()})
                job = c.submit(model_size=1e6)
            storm = Storm(address, job.id)
            storm.run(STORM_S / 2)
            serve.stop()  # a restart mid-storm: clients see UNAVAILABLE meanwhile
            restart = threading.Thread(target=serve.start)
            restart.start()
            storm.run(STORM_S / 2)
            restart.join()
            rss = serve.rss_mb()
            storm.run(STORM_S)
            grown = serve.rss_mb() - rss
            with Client(address, timeout=60) as c:
                (after,) = c.jobs()
                assert after.active_version >= 1
                reconciled = c.reconcile()
                want = {s.name: s.entries for s in c.topology().switches}
                # every slot of an abandoned stream is free again
                streams = [c.watch(since=0) for _ in range(MAX_WATCHERS)]
                assert all(next(iter(s)).seq >= 1 for s in streams)
                for s in streams:
                    s.cancel()
        finally:
            serve.stop()
        held = {name: sw.count() for name, sw in switches.items()}
    log = serve.log.read_text()
    assert storm.bad == [], storm.bad[:5]
    assert "Traceback" not in log, log[-3000:]
    assert storm.codes.get("OK", 0) > 100 and "UNAVAILABLE" in storm.codes, storm.codes
    assert all(len(v) == 1 for v in storm.answers.values()), \
        {r: v for r, v in storm.answers.items() if len(v) > 1}
    assert grown < RSS_GROWTH_MB, f"the service grew {grown:.0f} MB in {STORM_S} s"
    assert all(s.reachable and not (s.inserted or s.modified or s.deleted or s.pipeline_pushed)
               for s in reconciled.switches), reconciled
    assert held == want
