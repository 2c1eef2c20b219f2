"""Execute RAT trees with torch.distributed p2p: reduce stage by stage up all trees at once,
then broadcast back down.  Each tree carries its own slice of the buffer, so the n trees'
roots and aggregators share the work (the paper's load balancing)."""

from __future__ import annotations

import torch

from host_stack.collectives.p2p import irecv, isend, wait
from host_stack.collectives.rat import Tree


def tree_all_reduce(tensor: torch.Tensor, trees: list[Tree], rank: int, timeout_s: float = 60.0,
                    tag_base: int = 0) -> torch.Tensor:
    """Sum ``tensor`` in place over all ranks of ``trees``; every rank passes the same trees."""
    if not tensor.is_contiguous():
        raise ValueError("tensor: expected a contiguous tensor (the trees split a flat view)")
    if not trees:
        raise ValueError("trees: expected at least one tree")
    slices = torch.tensor_split(tensor.view(-1), len(trees))
    nstages = max(len(t.stages) for t in trees)

    def tag(phase: int, stage: int, t: int) -> int:
        return tag_base + ((phase * nstages + stage) * len(trees) + t)

    for k in range(nstages):  # reduce
        sends, recvs = [], []
        for t, tree in enumerate(trees):
            for child, parent in tree.stages[k] if k < len(tree.stages) else ():
                if child == rank:
                    sends.append(isend(slices[t], parent, tag(0, k, t)))
                elif parent == rank:
                    buf = torch.empty_like(slices[t])
                    recvs.append((slices[t], buf, irecv(buf, child, tag(0, k, t))))
        for dst, buf, work in recvs:
            wait(work, timeout_s)
            dst.add_(buf)
        for work in sends:
            wait(work, timeout_s)
    for k in reversed(range(nstages)):  # broadcast
        works = []
        for t, tree in enumerate(trees):
            for child, parent in tree.stages[k] if k < len(tree.stages) else ():
                if parent == rank:
                    works.append(isend(slices[t], child, tag(1, k, t)))
                elif child == rank:
                    works.append(irecv(slices[t], parent, tag(1, k, t)))
        for work in works:
            wait(work, timeout_s)
    return tensor
