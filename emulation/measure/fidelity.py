"""Whether a run's numbers are the schemes' or the machine's: a fidelity verdict per scheme.

An emulation shares one machine between switches, hosts and whatever else runs there.  When
that machine is saturated, or a paced scheme does not send what its plan asks, a comparison
measures the CPU, not the schemes (fattree:6 with 50 CNN workers on 2 cores: InArt sent 0.37
of its plan with 46,463 resends while ring's kernel-paced TCP kept its pace, and the run still
ranked them).  So every run says, per scheme, its sending rate against the rate it was paced
at, its retransmissions and the machine's CPU during its run, and marks a scheme that sent
less than ``MIN_RATE_RATIO`` of its plan or ran on a saturated machine; a ranking that
includes a marked scheme is not printed as a result (``ranking_lines``).

On impaired links (``--loss``, ``--dup``, ``--reorder``: emulation/network/link_impair.py) a
scheme's transport sends less than its plan while it recovers what the links lost: that is the
scheme's own answer to the impairment, and the comparison is the one asked for, so there a
low rate ratio is noted, not marked; a run the machine bounded (below) still marks.

Bounded by the machine is judged by what the emulation's own processes suffered: how long
they waited on a run queue for a CPU each time they were scheduled in (schedstat, sampled by
emulation/measure/resources.py), marked at ``WAKE_WAIT_LIMIT_MS`` or more on average.  A busy
machine alone does not mark: the emulation's processes sleep between frames and get a CPU
soon after they wake, whatever keeps it busy otherwise.  On fig1 (inart and atp, 3 rounds,
0.25 Mbit/s per unit, this 2-core VM) they waited 0.14-0.15 ms a wake on an idle machine,
0.41-0.49 ms beside two CPU burners at nice 19 in a session of their own and 0.17-0.34 ms
beside two at nice 0, every CPU 100% busy in both, with communication times within 0.6% of
the idle run's and every plan sent; fattree:4 at 0.5 Mbit/s per unit, which the Python
switches cannot carry (0.16 of its plan sent), waited 4.25 ms a wake.  The
machine's busy fraction and saturated share stay in the line and the rows.  Where the kernel
keeps no schedstat, a run on a saturated machine (at least ``SATURATED_SHARE`` of its CPU
samples had every CPU >= ``resources.SATURATED`` busy) is marked instead, and the row's
``fidelity_basis`` says which judged it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_RATE_RATIO = 0.9  # achieved / plan rate below which a scheme did not run its plan
SATURATED_SHARE = 0.5  # share of a run's CPU samples at >= resources.SATURATED busy
# mean wait for a CPU per wake of the emulation's processes: a tenth of the INA transport's
# least retransmission timeout (20 ms), so waits below it delay a round, not time it out
WAKE_WAIT_LIMIT_MS = 2.0


@dataclass(frozen=True)
class Verdict:
    """One scheme's run: its figures and, when marked, why (empty: its own numbers)."""

    scheme: str
    rate_ratio: float | None  # achieved / paced rate (None: not paced, e.g. TCP collectives)
    retx: int  # INA resends, or TCP segments retransmitted
    cpu_busy: float  # the machine's busy fraction over the run
    saturated_share: float  # share of CPU samples with the machine saturated
    run_queue: float  # runnable tasks per CPU, mean over the samples
    reasons: tuple[str, ...]
    note: str = ""  # what the figures say that is no mark (a rate cut by impaired links)
    wake_wait_ms: float | None = None  # its processes' mean wait for a CPU per wake (None:
    # no schedstat, judged by the machine's saturation)

    @property
    def basis(self) -> str:
        """What judged whether the machine bounded the run."""
        return ("machine CPU (no schedstat)" if self.wake_wait_ms is None
                else "run-queue wait of the emulation's processes")

    @property
    def ok(self) -> bool:
        return not self.reasons

    def fields(self) -> dict:
        """What goes into a row of the JSON and CSV outputs."""
        return {"fidelity": "ok" if self.ok else "bounded by the machine",
                "fidelity_reasons": "; ".join(self.reasons), "fidelity_note": self.note,
                "fidelity_basis": self.basis, "cpu_wait_ms_per_wake": self.wake_wait_ms,
                "cpu_busy": self.cpu_busy, "cpu_saturated_share": self.saturated_share,
                "run_queue_per_cpu": self.run_queue}

    def line(self) -> str:
        rate = "not paced" if self.rate_ratio is None else f"sent {self.rate_ratio:.2f} of plan"
        waited = ("" if self.wake_wait_ms is None
                  else f"its processes waited {self.wake_wait_ms:.2f} ms a wake for a CPU, ")
        head = (f"fidelity {self.scheme}: {rate}, {self.retx} retx, {waited}machine "
                f"{self.cpu_busy:.0%} busy (saturated in {self.saturated_share:.0%} of "
                f"samples, run queue {self.run_queue:.1f}/CPU): ")
        note = f" ({self.note})" if self.note else ""
        return head + ("ok" if self.ok else "MARKED, " + "; ".join(self.reasons)) + note


def judge(scheme: str, rate_ratio: float | None, retx: int, cpu_busy: float,
          saturated_share: float, run_queue: float, impaired: bool = False,
          wake_wait_ms: float | None = None) -> Verdict:
    """The verdict on one scheme's run from its measured figures (``impaired``: its links
    dropped, duplicated or reordered frames on purpose; ``wake_wait_ms``: its processes' mean
    wait for a CPU per wake, None where unknown)."""
    reasons, note = [], ""
    if wake_wait_ms is not None:
        saturated = wake_wait_ms >= WAKE_WAIT_LIMIT_MS
        bound = (f"its processes waited {wake_wait_ms:.2f} ms a wake for a CPU "
                 f"(>= {WAKE_WAIT_LIMIT_MS:g} ms)")
    else:
        saturated = saturated_share >= SATURATED_SHARE
        bound = f"machine saturated in {saturated_share:.0%} of its samples"
    if rate_ratio is not None and (math.isnan(rate_ratio) or rate_ratio < MIN_RATE_RATIO):
        short = f"sent {rate_ratio:.2f} of its plan (< {MIN_RATE_RATIO:g})"
        if impaired and not saturated and not math.isnan(rate_ratio):
            note = f"{short} on impaired links: its recovery, the machine did not bound it"
        else:
            reasons.append(short)
    if saturated:
        reasons.append(bound)
    return Verdict(scheme, rate_ratio, int(retx), cpu_busy, saturated_share, run_queue,
                   tuple(reasons), note, wake_wait_ms)


def ranking_lines(verdicts: list[Verdict], ranked: list[str]) -> list[str]:
    """``ranked`` (lines that compare schemes) when every verdict is ok; otherwise one line
    saying the comparison is bounded by the machine, naming each marked scheme and why."""
    marked = [v for v in verdicts if not v.ok]
    if not marked:
        return ranked
    if not ranked:
        return []
    why = "; ".join(f"{v.scheme}: {', '.join(v.reasons)}" for v in marked)
    return [f"no ranking: the result is bounded by the machine, not the schemes ({why})"]
