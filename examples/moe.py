"""Mixture-of-experts training on an emulated NeuronCore, compiled once.

    python examples/moe.py [--dispatch gather|grouped] [--steps 8]

A top-k router sends each token to 2 of 4 experts; how many tokens each expert gets
changes at every step. With ``dispatch="gather"`` each expert takes its tokens with
``torch.where`` (a size only the data decides: compiled once at its bound, see
docs/data-dependent-shapes.md); with ``"grouped"`` the token slots are sorted by expert
and each layer's experts run as one ``torch._grouped_mm``. Both train natively
(``TORCHNEURON_NO_FALLBACK=1``) with losses equal to the same steps on the CPU, and the
counters show one forward and one backward compile for all the steps.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TORCHNEURON_NO_FALLBACK", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torchneuron.compiler import bounded, dynamic  # noqa: E402
from torchneuron.zoo import MoELM  # noqa: E402


def train_step(model, tokens, optimizer):
    logits, balance = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    total = loss + 0.01 * balance
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    return loss.detach(), balance.detach()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatch", choices=("gather", "grouped"), default="gather")
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    torch._dynamo.config.capture_dynamic_output_shape_ops = True

    torch.manual_seed(0)
    on_cpu = MoELM(dispatch=args.dispatch)
    on_device = MoELM(dispatch=args.dispatch)
    on_device.load_state_dict(on_cpu.state_dict())
    on_device.to("neuron")
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (on_cpu, on_device)]
    step = torch.compile(train_step, backend="neuron")
    generator = torch.Generator().manual_seed(1)
    for index in range(args.steps):
        tokens = torch.randint(0, 128, (4, 17), generator=generator)
        loss, balance = step(on_device, tokens.to("neuron"), optimizers[1])
        want, want_balance = train_step(on_cpu, tokens, optimizers[0])
        print(
            f"step {index}: loss {loss.item():.5f} (CPU {want.item():.5f}), load balance "
            f"{balance.item():.4f} (CPU {want_balance.item():.4f})"
        )
    counts = dynamic.stats()
    print(
        f"graphs compiled at their bounds: {bounded.stats()['bounded_graphs']}, "
        f"backward specializations: {counts['specializations']}, "
        f"per-shape recompiles: {counts['per_shape_front_half']}"
    )


if __name__ == "__main__":
    main()
