"""``neuronc plan`` in real processes: the JSON a script reads, the text, and its errors.

The JSON run is the installed console script; the other command lines run in processes
forked from one runner that imported the CLI once (``tests/cli/neuronc.py``).
"""

import json

import pytest

from tests.cli.neuronc import console_script

LLM = [
    "--layers", "32", "--d-model", "4096", "--heads", "32", "--ffn", "11008",
    "--vocab", "32000", "--context", "4096", "--seq", "2048",
]  # fmt: skip


def test_plan_json_from_the_console_script():
    result = console_script(
        "plan", "gpt", *LLM, "--batch", "16", "--dp", "2", "--fsdp", "8", "--tp", "4",
        "--world-size", "64", "--instance", "trn2.48xlarge", "--json",
    )  # fmt: skip
    plan = json.loads(result.stdout)
    assert plan["model_name"] == "gpt"
    assert plan["model"]["layers"] == 32 and plan["model"]["parameters"] > 5e9
    layout = plan["layout"]
    assert (layout["world_size"], layout["instances"], layout["instance"]) == (
        64,
        1,
        "trn2.48xlarge",
    )
    names = {row["name"] for row in plan["communication"]}
    assert {"TP all-reduce (activations)", "FSDP reduce-scatter (gradients)"} <= names
    assert "HSDP all-reduce (gradient shards)" in names
    assert plan["step_s"] == pytest.approx(
        plan["compute"]["total_s"] + plan["exposed_communication_s"]
    )
    assert plan["memory"]["fits"] is True and plan["warnings"] == []
    assert len(plan["overlap_rules"]) == 4


def test_plan_text_warns_when_the_layout_does_not_fit(neuronc):
    result = neuronc.run("plan", "gpt", *LLM, "--batch", "64", "--dp", "64")
    assert "DDP gradient all-reduce" in result.stdout
    assert "DOES NOT FIT" in result.stdout
    assert "warning: does not fit: peak HBM per core" in result.stdout


def test_plan_of_the_zoo_gpt_at_its_own_sizes(neuronc):
    plan = json.loads(neuronc.run("plan", "gpt", "--dp", "4", "--json").stdout)
    # The zoo model: 2 layers, d_model 64, vocab 128, context 32; one sequence per rank.
    assert (plan["model"]["layers"], plan["model"]["d_model"], plan["training"]["seq"]) == (
        2,
        64,
        32,
    )
    assert plan["training"]["global_batch"] == 4
    (row,) = plan["communication"]
    assert row["nbytes"] == 4 * plan["model"]["parameters"]


@pytest.mark.parametrize(
    "args, status, message",
    [
        (["--dp", "2", "--tp", "2", "--world-size", "8"], 1, "--dp 2 x --fsdp 1 x --tp 2 = 4"),
        (["--tp", "8"], 1, "--tp 8 is more than the model's 4 attention heads"),
        (["--dp", "128", "--instances", "1"], 1, "128 ranks do not fit on 1 trn2.48xlarge"),
        (["--instance", "trn2.48xlarge", "--target", "trn3"], 2, "holds trn2 chips"),
    ],
)
def test_plan_errors_are_one_line(neuronc, args, status, message):
    result = neuronc.run("plan", "gpt", *args, check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status
    assert len(lines) == 1 and lines[0].startswith("neuronc: error: ") and message in lines[0]


def test_plan_refuses_a_model_it_cannot_plan(neuronc):
    result = neuronc.run("plan", "mlp", check=False)
    assert result.returncode == 2
    assert "GPT-style language models, the zoo's gpt" in result.stderr


TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 128,
}


def test_plan_of_a_configuration_searches_the_layouts_that_fit(neuronc, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY_CONFIG))
    result = neuronc.run(
        "plan", "--model", f"hf:{config}", "--instance", "trn2", "--batch", "64", "--search",
        "--json",
    )  # fmt: skip
    found = json.loads(result.stdout)
    assert found["world_size"] == 64 and found["plans"]
    steps = [plan["step_s"] for plan in found["plans"]]
    assert steps == sorted(steps)  # fastest first
    assert all(plan["memory"]["fits"] for plan in found["plans"])
    layouts = {(p["layout"]["tp"], p["layout"]["pp"], p["layout"]["cp"]) for p in found["plans"]}
    assert (1, 1, 1) in layouts and any(pp > 1 for _, pp, _ in layouts)


@pytest.mark.parametrize(
    "content, status, message",
    [
        ("{broken", 1, "not a JSON configuration"),
        ('{"architectures": ["NoSuchModel"], "model_type": "llama"}', 1, "not a model class"),
    ],
)
def test_plan_of_a_hostile_configuration_is_one_line(neuronc, tmp_path, content, status, message):
    config = tmp_path / "config.json"
    config.write_text(content)
    result = neuronc.run("plan", "--model", f"hf:{config}", "--seq", "8", check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status
    assert len(lines) == 1 and lines[0].startswith("neuronc: error: ") and message in lines[0]
    assert str(config) in lines[0]


def test_plan_of_a_model_that_does_not_fit_exits_with_one(neuronc, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**TINY_CONFIG, "hidden_size": 8192, "intermediate_size": 28672}))
    result = neuronc.run(
        "plan", "--model", f"hf:{config}", "--seq", "128", "--batch", "1", check=False
    )
    assert result.returncode == 1
    assert "DOES NOT FIT" in result.stdout and "checkpoint activations (--ac)" in result.stdout
