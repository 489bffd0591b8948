"""examples/llama_train.py under torchrun with 4 ranks (2 FSDP x 2 TP), natively.

The default run trains a tiny configuration for 5 steps, saving at step 3, and a second
launch resumes from that checkpoint: its losses must equal the first run's bit for bit.
Both runs' losses are compared with the same training in this process on the CPU (one
rank, no sharding, CPU autocast): bf16 rounds differently on the two devices, so they
agree to a relative 2e-3, not bit for bit. The slow test is the recipe at its default
size for 20 steps.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.distributed.torchrun import torchrun
from torchneuron import settings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama_train.py"
TINY = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
}
BATCH, SEQ, LR = 4, 16, 3e-3


def _recipe():
    spec = importlib.util.spec_from_file_location("llama_train", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(tmp_path, name, *flags, plan: bool = True) -> dict[int, float]:
    losses = tmp_path / f"{name}.json"
    planning = ["--plan-seq", "512"] if plan else ["--plan-config", ""]
    done = torchrun(
        EXAMPLE,
        "--losses", str(losses), *planning, *flags,
        nproc=4,
        env={settings.NO_FALLBACK: "1"},
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.output[-4000:]
    assert ("plan: llama-3-8b on trn2, fsdp 2 x tp 2" in done.stdout) == plan
    return {int(k): v for k, v in json.loads(losses.read_text()).items()}


def _cpu_losses(config: dict, steps: int) -> list[float]:
    recipe = _recipe()
    model = recipe.build(config, checkpointed=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    losses = []
    for tokens in recipe.batches(config, BATCH, SEQ, steps):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


def test_the_recipe_trains_on_four_ranks_resumes_and_matches_the_cpu(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY))
    common = ["--config", str(config), "--batch", str(BATCH), "--seq", str(SEQ),
              "--lr", str(LR), "--checkpoint-dir", str(tmp_path / "ckpt"), "--save-every", "3"]  # fmt: skip
    whole = _run(tmp_path, "whole", *common, "--steps", "5")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["step3", "step5"]
    (tmp_path / "ckpt" / "step5").rename(tmp_path / "later")  # resume from step 3
    resumed = _run(tmp_path, "resumed", *common, "--steps", "5", "--resume", plan=False)
    assert sorted(resumed) == [3, 4]
    assert [resumed[s] for s in (3, 4)] == [whole[s] for s in (3, 4)]  # bit for bit
    cpu = _cpu_losses(TINY, 5)
    assert [whole[s] for s in range(5)] == pytest.approx(cpu, rel=2e-3)
    assert whole[4] < whole[0]


@pytest.mark.slow
def test_the_recipe_at_its_default_size_trains_twenty_steps(tmp_path):
    losses = _run(tmp_path, "default", "--steps", "20")
    assert len(losses) == 20 and losses[19] < losses[0] - 1.0
