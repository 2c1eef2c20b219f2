"""Collectives that INA is compared against, all on torch.distributed (gloo on CPU, NCCL on GPU).

- ``ring``: chunked, pipelined ring all-reduce (reduce-scatter + all-gather) over point-to-point.
- ``rat`` / ``tree``: RAT topology-aware reduce/broadcast trees (one per root) and their executor.
- ``rsgcm``: RSGCM's searched ring schedules (action space, MCTS, baselines, closed forms) and
  the executor that runs a found schedule.
- ``launch``: spawn W local processes with a gloo/NCCL process group; ``sync``/``train``: the
  ``GradientSync`` factory and the training launcher; ``bench``: ``inart bench collectives``.
"""
