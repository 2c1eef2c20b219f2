"""What a PS does with a completed chunk sum, and what its RESULT payload means.

RESULT payload meaning (DESIGN.md section 3 leaves it to the host stack):
- ``OptimizerApply`` (training): the N updated float32 parameters of the chunk, IEEE-754 bits
  in network byte order, carried as the N 32-bit words.  Workers load them directly, so no
  worker runs an optimizer and all workers hold bit-identical parameters.
- ``SumApply`` (transport tests and benchmarks): the N int32 sums, wrapped to 32 bits.
The last chunk of a shard is padded with zeros; the padding's parameters stay 0.
"""

from __future__ import annotations

import numpy as np

from host_stack.ina.quantize import Quantizer
from host_stack.train.sync import MomentumSGD


class OptimizerApply:
    """Average the dequantized sum over the workers and step MomentumSGD on that chunk."""

    def __init__(self, params: np.ndarray, n: int, quantizer: Quantizer, lr: float,
                 momentum: float) -> None:
        if params.ndim != 1 or params.size % n:
            raise ValueError(f"PS shard of {params.size} values is not whole {n}-value chunks")
        self.params = np.ascontiguousarray(params, dtype=np.float32)  # updated in place
        self.n = n
        self.divisor = quantizer.scale * quantizer.workers
        self.opt = MomentumSGD(lr, momentum)

    def __call__(self, chunks: np.ndarray, sums: np.ndarray) -> np.ndarray:
        grad = (sums / self.divisor).astype(np.float32)
        params = self.params.reshape(-1, self.n)
        self.opt.apply_rows(params, grad, chunks)
        return params[chunks].astype(">f4").view(np.uint8)

    def state(self) -> dict[str, np.ndarray]:
        """Arrays a checkpoint stores."""
        velocity = self.opt.velocity
        return {"params": self.params.copy(),
                "velocity": np.zeros_like(self.params) if velocity is None else velocity.copy()}

    def restore(self, params: np.ndarray, velocity: np.ndarray) -> None:
        self.params[:] = params.astype(np.float32)
        self.opt.velocity = velocity.astype(np.float32).copy()


class SumApply:
    """Return the exact integer sum (for exactly-once tests and the transport benchmark)."""

    def __call__(self, chunks: np.ndarray, sums: np.ndarray) -> np.ndarray:
        return np.asarray(sums, np.int64).astype(">i4").view(np.uint8)  # wraps to 32 bits

    def state(self) -> dict[str, np.ndarray]:
        return {}
