"""The cost model against first principles and the public Trainium figures.

Every expectation is computed by hand in the comment next to it, from the figures in
torchneuron/target/hardware.py and the named constants of the cost model:

- trn2 TensorE: 79 TFLOPS BF16/FP16, 158 FP8, 20 FP32 per physical core, 2.4 GHz;
  a logical core at LNC=2 has two: 158 TFLOPS BF16.
- trn2 HBM: 2.9 TB/s per chip, 4 logical cores at LNC=2 -> 725 GB/s each (below the
  2 x 16 DMA engines x 27.2 GB/s = 870 GB/s the DMA engines could move).
- trn3 HBM: 4.9 TB/s -> 1225 GB/s per logical core (DMA: 2 x 16 x 38.4 = 1229 GB/s).
- one matmul instruction: 512 moving columns + 64 cycles of overhead.

No numerics run here: the modules are built as text and only estimated.
"""

from __future__ import annotations

import pytest

from torchneuron.estimate.cost_model import estimate
from torchneuron.estimate.engine_cost import hbm_bytes_per_second, tensor_engine_flops
from torchneuron.passes import parse_module
from torchneuron.target import hardware

MiB = 1 << 20


def gemm(m: int, k: int, n: int, dtype: str = "bf16"):
    a, b, c = f"tensor<{m}x{k}x{dtype}>", f"tensor<{k}x{n}x{dtype}>", f"tensor<{m}x{n}x{dtype}>"
    return parse_module(
        f"func.func @main(%a: {a}, %b: {b}) -> {c} {{\n"
        f"  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({a}, {b}) -> {c}\n"
        f"  return %0 : {c}\n}}"
    )


def elementwise_add(elements: int, dtype: str = "f32"):
    t = f"tensor<{elements}x{dtype}>"
    return parse_module(
        f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
        f"  %0 = stablehlo.add %a, %b : {t}\n  return %0 : {t}\n}}"
    )


def matmul_gelu(m: int, k: int, n: int):
    """y = x @ w, then GELU(y) = 0.5 y (1 + tanh(0.7978845608 (y + 0.044715 y^3)))."""
    x, w, y = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    return parse_module(f"""
func.func @main(%x: {x}, %w: {w}) -> {y} {{
  %c1 = stablehlo.constant dense<0.044715> : {y}
  %c2 = stablehlo.constant dense<0.797884583> : {y}
  %one = stablehlo.constant dense<1.0> : {y}
  %half = stablehlo.constant dense<0.5> : {y}
  %z = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({x}, {w}) -> {y}
  %z2 = stablehlo.multiply %z, %z : {y}
  %z3 = stablehlo.multiply %z2, %z : {y}
  %a = stablehlo.multiply %z3, %c1 : {y}
  %s = stablehlo.add %z, %a : {y}
  %k = stablehlo.multiply %s, %c2 : {y}
  %t = stablehlo.tanh %k : {y}
  %u = stablehlo.add %t, %one : {y}
  %v = stablehlo.multiply %z, %u : {y}
  %g = stablehlo.multiply %v, %half : {y}
  return %g : {y}
}}""")


def test_figures_the_tests_rely_on():
    trn2, trn3 = hardware.CHIPS["trn2"], hardware.CHIPS["trn3"]
    assert tensor_engine_flops(trn2, "bfloat16") == 79e12
    assert tensor_engine_flops(trn2, "float8_e4m3fn") == 158e12
    assert tensor_engine_flops(trn2, "float32") == 20e12
    # Trainium3 lists microscaled FP8 only: plain FP8 runs at the MXFP8 rate.
    assert tensor_engine_flops(trn3, "float8_e4m3fn") == 315e12
    assert hbm_bytes_per_second(trn2, 2) == pytest.approx(725e9)  # 2.9e12 / 4
    assert hbm_bytes_per_second(trn2, 1) == pytest.approx(362.5e9)  # 2.9e12 / 8
    assert hbm_bytes_per_second(trn3, 2) == pytest.approx(1225e9)  # 4.9e12 / 4


def test_large_bf16_gemm_reaches_85_percent_of_tensor_engine_peak():
    schedule = estimate(gemm(4096, 4096, 4096), "trn2")
    # FLOPs = 2 * 4096^3 = 1.374e11; at 158 TFLOPS that is 869.8 us. Every instruction
    # streams 512 columns and pays 64 cycles, so the array is busy 512 / 576 = 88.9%:
    # 869.8 / 0.889 = 978.5 us. HBM traffic (384 MiB, see the SBUF test) takes 555 us,
    # so TensorE bounds the kernel.
    assert schedule.flops == 2 * 4096**3
    peak = hardware.CHIPS["trn2"].tensor_flops_per_logical_core("bfloat16", 2)
    utilisation = schedule.flops / schedule.latency_s / peak
    assert utilisation >= 0.85
    assert utilisation == pytest.approx(512 / 576, rel=0.01)
    assert schedule.mfu == pytest.approx(utilisation)
    assert schedule.kernels[0].bound == "TensorE"


def test_fp32_gemm_is_about_4x_slower_and_fp8_about_2x_faster():
    bf16 = estimate(gemm(4096, 4096, 4096, "bf16"), "trn2").latency_s
    fp32 = estimate(gemm(4096, 4096, 4096, "f32"), "trn2").latency_s
    fp8 = estimate(gemm(4096, 4096, 4096, "f8E4M3FN"), "trn2").latency_s
    # FP32: 79 / 20 = 3.95 -> 4 passes through the array, each a full instruction:
    # 4 x (512 x 2*128*128 / 80e12 + 64 / 2.4e9) = 945.5 ns vs 239.0 ns for BF16 -> 3.96x.
    assert fp32 / bf16 == pytest.approx(3.96, rel=0.03)
    # FP8: columns twice as fast but the same 64-cycle overhead:
    # (512 + 64) / (256 + 64) = 1.8x.
    assert fp8 < bf16
    assert bf16 / fp8 == pytest.approx(1.8, rel=0.03)
    assert 1.7 <= bf16 / fp8 <= 2.1


def test_contraction_of_64_uses_at_most_half_the_array():
    schedule = estimate(gemm(4096, 64, 4096), "trn2")
    kernel = schedule.kernels[0]
    peak = hardware.CHIPS["trn2"].tensor_flops_per_logical_core("bfloat16", 2)
    # K = 64 fills 64 of the 128 rows of the stationary tile: each instruction does half
    # the multiply-accumulates of a full one in the same time -> <= 50% (44.4% with the
    # 512 / 576 instruction efficiency).
    throughput = schedule.flops / kernel.engine_seconds["TensorE"]
    assert throughput <= 0.5 * peak
    assert throughput == pytest.approx(0.5 * 512 / 576 * peak, rel=0.01)
    assert schedule.latency_s >= schedule.flops / (0.5 * peak)


def test_large_elementwise_op_is_bound_by_hbm_bandwidth():
    elements = 1 << 26
    schedule = estimate(elementwise_add(elements), "trn2")
    # Reads 2 x 256 MiB and writes 256 MiB: 805,306,368 B / 725 GB/s = 1110.8 us.
    # VectorE needs 2^26 / 2 cores / (256 x 0.96 GHz) = 136.5 us, far less.
    ideal = 3 * 4 * elements / 725e9
    assert schedule.hbm_bytes == 3 * 4 * elements
    assert schedule.latency_s == pytest.approx(ideal, rel=0.10)
    assert schedule.latency_s == pytest.approx(ideal + hardware.TRN2.dma_fixed_latency_s, rel=1e-6)
    assert schedule.kernels[0].bound == "DMA"


def test_trainium3_is_faster_on_hbm_bound_ops_by_the_bandwidth_ratio():
    module = elementwise_add(1 << 26)
    trn2 = estimate(module, "trn2").latency_s
    trn3 = estimate(module, "trn3").latency_s
    # 4.9 TB/s / 2.9 TB/s = 1.69
    assert trn2 / trn3 == pytest.approx(4.9 / 2.9, rel=0.02)


def test_fusing_gelu_after_matmul_removes_the_intermediate_round_trip():
    module = matmul_gelu(1024, 1024, 1024)
    fused = estimate(module, "trn2", lnc=1)
    unfused = estimate(module, "trn2", lnc=1, fuse=False)
    matrix = 1024 * 1024 * 4  # 4 MiB: x, w, the matmul result, the GELU result
    # Fused: read x and w once (all fits in SBUF at LNC=1), write the GELU result; the
    # matmul result and every GELU intermediate stay in SBUF.
    assert len(fused.kernels) == 1
    assert fused.hbm_bytes == 3 * matrix
    # Unfused: the matmul result goes to HBM and is read back, at least once.
    assert unfused.hbm_bytes >= fused.hbm_bytes + 2 * matrix
    assert unfused.latency_s > fused.latency_s
    assert unfused.memory.temporaries_bytes >= matrix > fused.memory.temporaries_bytes == 0


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_estimates_grow_with_size(target):
    gemms = [estimate(gemm(n, n, n), target).latency_s for n in (128, 256, 512, 1024, 2048, 4096)]
    assert all(a < b for a, b in zip(gemms, gemms[1:])), gemms
    adds = [estimate(elementwise_add(1 << p), target).latency_s for p in range(10, 27, 4)]
    assert all(a < b for a, b in zip(adds, adds[1:])), adds


def test_working_set_beyond_sbuf_is_blocked_and_the_extra_traffic_counted():
    # Fits: at LNC=1 a 1024^3 BF16 GEMM holds 2 + 2 + 2 MiB < 18 MiB of usable SBUF
    # (24 MiB x 0.75): each operand is read once and the result written once.
    small = estimate(gemm(1024, 1024, 1024), "trn2", lnc=1)
    assert small.hbm_bytes == 3 * 2 * MiB
    assert small.kernels[0].notes == []
    # Does not fit: at LNC=2 each physical core computes 2048 rows of a 4096^3 GEMM and
    # needs all of B (32 MiB). Blocks of b x b with full-K panels must fit:
    # b * 4096 * (2 + 2) + 4 b^2 <= 18 MiB -> b = 896. A is re-read per column block,
    # ceil(4096 / 896) = 5 times; B per row block, ceil(2048 / 896) = 3 times by each of
    # the two cores: 32 x 5 + 32 x 3 x 2 + 32 (result) = 384 MiB.
    large = estimate(gemm(4096, 4096, 4096), "trn2", lnc=2)
    kernel = large.kernels[0]
    assert large.hbm_bytes == 384 * MiB
    assert any("exceeds SBUF" in note for note in kernel.notes)
    assert kernel.sbuf_bytes <= hardware.CHIPS["trn2"].sbuf_bytes_per_core


def test_a_logical_core_of_two_physical_cores_is_twice_as_fast_on_compute():
    one = estimate(gemm(4096, 4096, 4096), "trn2", lnc=1)
    two = estimate(gemm(4096, 4096, 4096), "trn2", lnc=2)
    # Tiles split evenly over two TensorEngines; traffic stays below compute in both.
    assert one.latency_s / two.latency_s == pytest.approx(2.0, rel=0.02)
    assert one.kernels[0].bound == two.kernels[0].bound == "TensorE"


def test_memory_plan_of_a_chain_reuses_dead_buffers():
    t = "tensor<1024x1024xf32>"  # 4 MiB
    module = parse_module(f"""
func.func @main(%x: {t}) -> {t} {{
  %a = stablehlo.exponential %x : {t}
  %b = stablehlo.add %a, %a : {t}
  %c = stablehlo.multiply %b, %b : {t}
  %d = stablehlo.subtract %c, %b : {t}
  return %d : {t}
}}""")
    plan = estimate(module, "trn2", fuse=False).memory
    size = 4 * MiB
    # Temporaries a, b, c. a lives until %b's kernel ends, b until %d's, c from %c to %d:
    # at most two are live at once (b with a, then b with c), so the arena holds two and
    # c reuses a's place.
    assert plan.temporaries_live_peak_bytes == 2 * size
    assert plan.temporaries_bytes == 2 * size
    offsets = {b.name.split("#")[0]: b.offset for b in plan.buffers}
    assert sorted(offsets.values()) == [0, 0, size]
    assert plan.peak_hbm_bytes == size + size + 2 * size  # input + output + arena
    # Fused, everything stays in SBUF.
    assert estimate(module, "trn2").memory.temporaries_bytes == 0


def test_weights_count_separately_from_inputs():
    t, w = "tensor<8x16xf32>", "tensor<16x4xf32>"
    module = parse_module(f"""
func.func @main(%x: {t}, %w: {w} {{neuron.weight = "fc.weight"}}) -> tensor<8x4xf32> {{
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({t}, {w}) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}}""")
    plan = estimate(module, "trn3").memory
    assert plan.weights_bytes == 16 * 4 * 4
    assert plan.inputs_bytes == 8 * 16 * 4
    assert plan.outputs_bytes == 8 * 4 * 4


def test_the_estimate_does_not_change_an_unannotated_module():
    module = gemm(256, 256, 256)
    before = str(module)
    estimate(module, "trn2")
    assert str(module) == before


def test_half_precision_convolution_with_bias_is_costed_at_bfloat16_width():
    # The lowering upcasts a bfloat16 convolution with bias to float32 (bias added to the
    # accumulator, rounded once); the TensorEngine still multiplies bfloat16 operands.
    import torch
    import torch.nn.functional as F
    from torch.fx.experimental.proxy_tensor import make_fx

    from torchneuron.compiler.pipeline import compile_graph

    x, w, b = torch.randn(8, 64, 32, 32), torch.randn(128, 64, 3, 3), torch.randn(128)
    latency = {}
    for name, function, args in [
        ("bias", lambda x, w, b: F.conv2d(x, w, b), (x, w, b)),
        ("plain", lambda x, w: F.conv2d(x, w), (x, w)),
    ]:
        for dtype in (torch.bfloat16, torch.float32):
            typed = [t.to(dtype) for t in args]
            compiled = compile_graph(make_fx(function)(*typed), typed)
            latency[name, dtype] = compiled.schedule.latency_s
    assert latency["bias", torch.bfloat16] < 0.5 * latency["bias", torch.float32]
    assert latency["bias", torch.bfloat16] < 1.2 * latency["plain", torch.bfloat16]


def test_a_module_without_main_is_an_estimate_error():
    from torchneuron.errors import TorchNeuronError
    from torchneuron.estimate.cost_model import EstimateError

    module = parse_module(
        "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }\n"
        "func.func @g(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }"
    )
    with pytest.raises(EstimateError, match="@main") as caught:
        estimate(module, "trn2")
    assert isinstance(caught.value, TorchNeuronError) and isinstance(caught.value, ValueError)


def test_an_unknown_target_is_named():
    from torchneuron.errors import TorchNeuronError

    with pytest.raises(hardware.UnknownTargetError, match="'trn9'") as caught:
        estimate(elementwise_add(8), "trn9")
    assert isinstance(caught.value, TorchNeuronError) and isinstance(caught.value, ValueError)
