"""Data-parallel training on emulated NeuronCores: one rank per logical core.

    torchrun --nproc-per-node 4 examples/train_ddp.py      # the 4 logical cores of one trn2 chip

Nothing here is specific to torchneuron but the device name: the process group is
PyTorch's, with the ``neuron`` backend (gloo underneath) that ``import torch`` registers.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from torchneuron.profiler import profile
from torchneuron.zoo import GPTBlockLM


def main() -> None:
    dist.init_process_group()  # "neuron" for neuron tensors; binds this rank to its core
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts them)
    model = DistributedDataParallel(GPTBlockLM().to("neuron"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 128, (8 * world, 17), generator=generator)  # the global batch
    shard = tokens[rank * 8 : (rank + 1) * 8].to("neuron")  # this rank's part
    with profile() as prof:
        for step in range(3):
            logits = model(shard[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), shard[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()  # gradients all-reduced in buckets during the backward
            optimizer.step()
            mean = loss.detach().clone()
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            if rank == 0:
                print(f"step {step}: loss {mean.item():.4f} (mean over {world} ranks)")
    collectives = sum(c.device_seconds for c in prof.collectives)
    if rank == 0:
        print(
            f"rank 0 on {torch.neuron.current_device()}: {len(prof.collectives)} collectives, "
            f"estimated {collectives * 1e6:.1f} us on the real interconnect"
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
