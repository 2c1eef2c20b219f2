"""The engine's side channel over a gloo group: the scale every worker agrees on before a
float all-reduce, and the IEEE sum of a call INA cannot carry (NaN or inf in it)."""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist


class ControlGroup:
    """A gloo group that only the engine's thread calls, in all-reduce order."""

    def __init__(self, group: dist.ProcessGroup) -> None:
        self.group = group

    def agree_max(self, value: float) -> float:
        t = torch.tensor([value], dtype=torch.float64)
        opts = dist.AllreduceOptions()
        opts.reduceOp = dist.ReduceOp.MAX
        self.group.allreduce([t], opts).wait()
        return float(t[0])

    def exact_sum(self, values: np.ndarray) -> np.ndarray:
        t = torch.from_numpy(np.array(values, dtype=np.float32))
        self.group.allreduce([t]).wait()
        return t.numpy()
