"""What a drill promises and what it found: the drills and their promised outcomes, the named
errors a worker's stderr can end with, and one drill's result (its line and its JSON)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

# drill -> what it does (the CLI's help and docs/reliability.md say the same)
DRILLS: dict[str, str] = {
    "switch-restart": "an aggregating switch is killed (SIGKILL) mid-round and restarted "
                      "empty; the service reinstalls it, the transport recovers",
    "ps-kill": "a PS process is killed (SIGKILL) mid-round; every worker ends with "
               "PsUnreachable naming it",
    "worker-kill": "a worker process is killed (SIGKILL) mid-round; every other worker ends "
                   "with PsUnreachable",
    "link-flap": "a link the plan uses goes down and up again every few rounds, the service "
                 "not told; the transport recovers",
    "service-restart": "inart serve is killed (SIGKILL) mid-round and restarted on its state; "
                       "the hosts ride through it",
    "p4rt-silent": "an aggregating switch stops answering P4Runtime for a while but still "
                   "forwards; the service marks it unreachable, answers meanwhile and finds it "
                   "again",
}
# what inart promises under each drill's fault (docs/reliability.md)
PROMISES = {"switch-restart": "exact", "ps-kill": "named-error", "worker-kill": "named-error",
            "link-flap": "exact", "service-restart": "exact", "p4rt-silent": "exact"}
# a worker's transport error line (exit status 3) -> its named error
NAMED_ERRORS = (
    (re.compile(r"error: (?:worker rank \d+: )?PS (\S+) at .+? did not answer"),
     "PsUnreachable (PS {0})"),
    (re.compile(r"error: (?:worker rank \d+: )?no HELLO reply from PS (\S+)"),
     "PsUnreachable (PS {0})"),
    (re.compile(r"error: service \S+: (\w+) for job \d+: (\w+)"), "FollowError ({0}: {1})"),
)


def named_error(text: str) -> str | None:
    """The named error of a worker's stderr (None: none it knows)."""
    for pattern, name in NAMED_ERRORS:
        found = pattern.search(text)
        if found:
            return name.format(*found.groups())
    return None


class DrillError(RuntimeError):
    """A drill could not run (its network or service did not come up) or passed its
    deadline; the message says which."""


@dataclass
class DrillResult:
    drill: str
    seed: int
    outcome: str  # exact | named-error | failed
    recovery_s: float | None  # from the fault to the job's recovery (see the module doc)
    fault: str  # what was done, and in which round
    rounds: int  # rounds every worker completed
    round_s: float | None  # median round time before the fault
    error: str = ""  # the named error every surviving worker ended with
    detail: str = ""  # why it failed, or what else happened
    leftovers: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        """The outcome inart promises under this drill's fault, and nothing left behind."""
        return self.outcome == PROMISES[self.drill] and not self.leftovers

    def line(self) -> str:
        rec = "-" if self.recovery_s is None else f"{self.recovery_s:.2f}"
        base = "-" if self.round_s is None else f"{self.round_s:.2f}"
        out = (f"drill {self.drill}: {'ok' if self.ok else 'FAILED'}, outcome {self.outcome}, "
               f"recovery {rec} s (round {base} s), {self.fault}")
        if self.error:
            out += f"; error: {self.error}"
        if self.leftovers:
            out += f"; left behind: {', '.join(self.leftovers)}"
        if self.detail and not self.ok:
            out += f"; {self.detail}"
        return out

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}
