"""The software switches a user can run alone or inside an emulation, behind one interface.

``get_target(name)`` gives a ``Target`` (base.py): ``embedded`` (our Python target, runs
anywhere) or ``bmv2`` (``simple_switch_grpc``, where installed).  A new target subclasses
``Target`` and is added to ``TARGETS``; the emulation, the PTF runner, the benches and
`inart switch` then offer it.
"""

from __future__ import annotations

from emulation.targets.base import SwitchProcess, SwitchSpec, Target, TargetError
from emulation.targets.bmv2 import Bmv2Target
from emulation.targets.embedded.launch import EmbeddedTarget

TARGETS: dict[str, type[Target]] = {"embedded": EmbeddedTarget, "bmv2": Bmv2Target}


def get_target(name: str) -> Target:
    """The target called ``name``; TargetError naming the known ones otherwise."""
    cls = TARGETS.get(name)
    if cls is None:
        raise TargetError(f"target '{name}': expected one of {', '.join(TARGETS)}")
    return cls()


__all__ = ["TARGETS", "SwitchProcess", "SwitchSpec", "Target", "TargetError", "get_target"]
