"""PyTorch over in-network aggregation.

    import inart.torch                              # registers backend "inart"
    dist.init_process_group("inart")                # all_reduce through the plan's switches

or keep your backend and send only DDP's gradient buckets through INA:

    ddp.register_comm_hook(inart.torch.hook_state(), inart.torch.inart_hook)

Start the script with ``inart train --script`` (loopback), ``inart emulate --mode train
--script`` (Mininet) or ``inart run --script`` (real hosts): they start the PSs and tell each
process its job.  docs/pytorch.md has the details.
"""

from host_stack.ddp.allreduce import error_bound
from host_stack.ddp.backend import InartJobAborted, register
from host_stack.ddp.backend import engine_for_hook as hook_state
from host_stack.ddp.comm_timer import CommTimer, timed_allreduce
from host_stack.ddp.engine_thread import InartBackendError
from host_stack.ddp.hook import inart_hook

register()

__all__ = ["CommTimer", "InartBackendError", "InartJobAborted", "error_bound", "hook_state",
           "inart_hook", "timed_allreduce"]
