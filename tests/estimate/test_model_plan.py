"""Plans of the user's own model (``model_plan``): built on fake tensors, costed op by op.

Small Hugging Face configurations are traced for real; the full-size ones (Llama 3 8B,
Mixtral 8x7B, in ``examples/configs``) are only built on the meta device for their
parameter counts, which must match the published ones.
"""

import json
import math

import pytest

from torchneuron.estimate.model_plan import describe_source, plan_model
from torchneuron.estimate.model_source import parse_source
from torchneuron.estimate.model_trace import trace_step
from torchneuron.estimate.plan_types import Layout, PlanError
from torchneuron.target import hardware

CONFIGS = __import__("pathlib").Path(__file__).parents[2] / "examples" / "configs"
TINY = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 128,
    "tie_word_embeddings": False,
}
TINY_MOE = {
    **TINY,
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
}


def _source(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return parse_source(f"hf:{path}")


@pytest.mark.parametrize(
    "config, published",
    [("llama-3-8b.json", 8.03e9), ("mixtral-8x7b.json", 46.7e9)],
)
def test_full_size_parameter_counts_match_the_published_ones(config, published):
    described = describe_source(parse_source(f"hf:{CONFIGS / config}"))
    assert described.parameters == pytest.approx(published, rel=0.005)


def test_the_trace_counts_every_matmul_flop_of_a_layer(tmp_path):
    source = _source(tmp_path, TINY)
    batch, seq = 2, 32
    trace = trace_step(source, hardware.chip("trn2"), 2, batch=batch, seq=seq, precision="bf16")
    tokens, d, f = batch * seq, 64, 128
    kv = 2 * 16  # two KV heads of 16
    linear = d * d + 2 * d * kv + d * d + 3 * d * f  # q, k, v, o; gate, up, down
    # forward, input gradient and weight gradient: 3 x 2 x tokens x weights
    linears = 3 * 2 * tokens * linear
    # causal flash attention: QK^T and PV forward, 5 products backward, half the tiles
    attention = (2 + 5) * 2 * batch * 4 * seq * 16 * seq // 2
    assert trace.layers == 4 and trace.traced_layers == 1
    assert trace.pieces["block0"].flops == linears + attention
    assert trace.pieces["block3"] is trace.pieces["block0"]  # identical layers traced once
    head = trace.pieces["head"].flops
    assert head == 3 * 2 * tokens * d * 256
    assert trace.pieces["block0"].forward_s > 0 and trace.pieces["block0"].backward_s > 0
    assert trace.pieces["block0"].saved_bytes > trace.pieces["block0"].input_bytes > 0


def test_tensor_parallelism_shards_the_weights_and_the_work(tmp_path):
    source = _source(tmp_path, TINY)
    chip = hardware.chip("trn2")
    whole = trace_step(source, chip, 2, batch=2, seq=32, precision="bf16")
    half = trace_step(source, chip, 2, batch=2, seq=32, precision="bf16", tp=2)
    assert half.pieces["block0"].flops * 2 == whole.pieces["block0"].flops
    norms = 2 * 64 * 4 + 64  # two RMSNorm weights per layer, the final norm: replicated
    sharded = sum(n for _, n, _ in whole.parameters) - norms
    assert sum(n for _, n, _ in half.parameters) == sharded // 2 + norms


def test_a_plan_adds_up_and_refuses_what_does_not_divide(tmp_path):
    source = _source(tmp_path, TINY)
    plan = plan_model(source, Layout(fsdp=2, tp=2), batch=8, seq=64)
    summary = plan.summary()
    assert summary["step_s"] == pytest.approx(plan.compute_s + plan.exposed_communication_s)
    assert summary["microbatches"] == 4  # 8 sequences over 2 data-parallel ranks, 1 at a time
    names = {row["name"] for row in summary["communication"]}
    assert {"TP all-reduce (activations)", "FSDP all-gather (forward)"} <= names
    memory = plan.memory
    assert memory["peak"] == sum(v for k, v in memory.items() if k != "peak")
    with pytest.raises(PlanError, match="--tp 3 does not divide"):
        plan_model(source, Layout(tp=3), batch=1, seq=64)
    with pytest.raises(PlanError, match="global batch 3 does not split"):
        plan_model(source, Layout(fsdp=2), batch=3, seq=64)


def test_checkpointing_trades_memory_for_a_second_forward(tmp_path):
    source = _source(tmp_path, TINY)
    plain = plan_model(source, Layout(), batch=1, seq=128)
    checkpointed = plan_model(source, Layout(), batch=1, seq=128, ac=True)
    assert checkpointed.memory["activations"] < plain.memory["activations"]
    layer = plain.details["trace"]["layer_forward_s"]
    assert checkpointed.backward_s == pytest.approx(plain.backward_s + 4 * layer)
    assert checkpointed.matmul_flops == plain.matmul_flops  # MFU counts the model's FLOPs


def test_pipeline_stages_split_layers_and_pay_a_bubble(tmp_path):
    source = _source(tmp_path, TINY)
    plan = plan_model(source, Layout(pp=2), batch=8, seq=64)
    pipe = plan.details["pipeline"]
    assert pipe["layers_per_stage"] == [2, 2]
    assert pipe["bubble_fraction"] == pytest.approx(1 / 9)  # (pp - 1) / (m + pp - 1)
    interleaved = plan_model(source, Layout(pp=2), batch=8, seq=64, schedule="interleaved")
    assert interleaved.details["pipeline"]["bubble_fraction"] == pytest.approx(0.5 / 8.5)
    assert interleaved.step_s < plan.step_s
    one_stage = plan_model(source, Layout(), batch=8, seq=64)
    assert plan.memory["parameters"] < one_stage.memory["parameters"]
    names = {row.name for row in plan.collectives}
    assert "PP send/recv (activations)" in names
    with pytest.raises(PlanError, match="micro-batches for 4 pipeline stages"):
        plan_model(source, Layout(pp=4), batch=2, seq=64)


def test_context_parallelism_gathers_keys_and_sees_the_whole_sequence(tmp_path):
    source = _source(tmp_path, TINY)
    chip = hardware.chip("trn2")
    whole = trace_step(source, chip, 2, batch=1, seq=64, precision="bf16")
    split = trace_step(source, chip, 2, batch=1, seq=64, precision="bf16", cp=2)
    assert split.tokens == 32
    # half the queries against all the keys: attention halves, like the linear layers
    assert split.pieces["block0"].flops * 2 == whole.pieces["block0"].flops
    plan = plan_model(source, Layout(cp=2), batch=1, seq=64)
    assert {"CP all-gather (keys, values)"} <= {row.name for row in plan.collectives}
    with pytest.raises(PlanError, match="--cp 3 does not divide"):
        plan_model(source, Layout(cp=3), batch=1, seq=64)


def test_experts_are_routed_evenly_and_divided_over_expert_parallel_ranks(tmp_path):
    source = _source(tmp_path, TINY_MOE)
    chip = hardware.chip("trn2")
    one = trace_step(source, chip, 2, batch=1, seq=64, precision="bf16")
    two = trace_step(source, chip, 2, batch=1, seq=64, precision="bf16", ep=2)

    def experts(trace):
        return sum(n for name, n, _ in trace.parameters if ".experts." in name)

    assert experts(two) * 2 == experts(one)
    # every token reaches top_k experts either way: the expert work per rank is the same
    assert two.pieces["block0"].flops == one.pieces["block0"].flops
    plan = plan_model(source, Layout(fsdp=2, ep=2), batch=2, seq=64)
    assert {"EP all-to-all (dispatch)", "EP all-to-all (combine)"} <= {
        row.name for row in plan.collectives
    }
    assert plan.shape.experts == 4 and plan.shape.top_k == 2


def test_fp8_linear_layers_run_at_the_fp8_rate(tmp_path):
    wide = {**TINY, "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 512}
    source = _source(tmp_path, wide)
    bf16 = plan_model(source, Layout(), batch=1, seq=512)
    fp8 = plan_model(source, Layout(), batch=1, seq=512, precision="fp8")
    assert fp8.forward_s < bf16.forward_s
    assert fp8.matmul_flops == bf16.matmul_flops
    with pytest.raises(PlanError, match="no MX matmul rate"):
        plan_model(source, Layout(), batch=1, seq=512, precision="mx")
    trn3 = Layout(target="trn3")
    mx = plan_model(source, trn3, batch=1, seq=512, precision="mx")
    assert mx.forward_s < plan_model(source, trn3, batch=1, seq=512).forward_s


def test_a_factory_and_an_exported_program_plan_too(tmp_path):
    import torch

    from torchneuron.zoo import MLP

    plan = plan_model(parse_source("torchneuron.zoo:GPTBlockLM"), Layout(), batch=2, seq=16)
    assert plan.shape.layers == 2 and plan.shape.d_model > 0 and plan.step_s > 0
    program = torch.export.export(MLP(), (torch.randn(8, 32),))
    path = tmp_path / "mlp.pt2"
    torch.export.save(program, str(path))
    plan = plan_model(parse_source(str(path)), Layout(), batch=1, seq=1)
    expected = sum(p.numel() for p in MLP().parameters())
    assert plan.shape.parameters == expected and plan.matmul_flops > 0
    with pytest.raises(PlanError, match="--tp and --ep"):
        plan_model(parse_source(str(path)), Layout(tp=2), batch=1, seq=1)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not a JSON configuration"),
        ("[1, 2]", "a configuration is a JSON object"),
        ('{"model_type": "llama"}', "'architectures' must be a list"),
        ('{"architectures": ["os.system"], "model_type": "llama"}', "'architectures' must"),
        ('{"architectures": ["NoSuchModel"], "model_type": "llama"}', "not a model class"),
        ('{"architectures": ["LlamaForCausalLM"]}', "'model_type'"),
    ],
)
def test_a_hostile_configuration_is_refused_by_name(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(PlanError, match=message) as error:
        parse_source(f"hf:{tmp_path}")
    assert str(path) in str(error.value) or "architectures" in str(error.value)


def test_a_configuration_field_tp_needs_is_checked(tmp_path):
    source = _source(tmp_path, {**TINY, "num_attention_heads": "four"})
    with pytest.raises(PlanError, match="'num_attention_heads' must be a positive integer"):
        plan_model(source, Layout(tp=2), batch=1, seq=64)
    big = tmp_path / "big.json"
    big.write_text(" " * (1 << 20) + "{}")
    with pytest.raises(PlanError, match="at most 1 MiB"):
        parse_source(f"hf:{big}")
    other = _source(tmp_path, {**TINY, "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"})
    with pytest.raises(PlanError, match="shards only"):
        plan_model(other, Layout(tp=2), batch=1, seq=64)


def test_an_mfu_and_tokens_per_second_follow_from_the_step(tmp_path):
    source = _source(tmp_path, TINY)
    plan = plan_model(source, Layout(fsdp=2), batch=4, seq=64)
    s = plan.summary()
    assert s["tokens_per_s"] == pytest.approx(4 * 64 / plan.step_s)
    assert 0 < s["mfu"] < 1
    assert math.isclose(s["mfu"], plan.matmul_flops / (plan.step_s * plan.peak_tensor_flops))
