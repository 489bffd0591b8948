"""torch.neuron: devices from the topology variables, properties, current device, RNG."""

from __future__ import annotations

import pytest
import torch

from tests.device.conftest import run_python


def test_default_topology_is_one_trainium2_at_lnc2():
    assert torch.neuron.is_available()
    assert torch.neuron.device_count() == 4
    properties = torch.neuron.get_device_properties(0)
    assert properties.name.startswith("Trainium2")
    assert properties.lnc == 2 and properties.target == "trn2"
    # 96 GiB per chip over 4 logical cores
    assert properties.total_memory == 24 * 1024**3
    assert torch.neuron.get_device_name("neuron:1") == properties.name


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"NEURON_LOGICAL_NC_CONFIG": "1"}, "8 Trainium2"),
        ({"NEURON_RT_VISIBLE_CORES": "1-2"}, "2 Trainium2"),
        ({"NEURON_PLATFORM_TARGET_OVERRIDE": "trn3"}, "4 Trainium3"),
    ],
)
def test_device_count_follows_neuron_environment_variables(env, expected):
    code = "import torch; print(torch.neuron.device_count(), torch.neuron.get_device_name(0).split()[0])"
    result = run_python(code, env=env)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_current_device_set_device_and_context_manager():
    assert torch.neuron.current_device() == 0
    with torch.neuron.device(2):
        assert torch.neuron.current_device() == 2
        assert torch.empty(1, device="neuron").device == torch.device("neuron", 2)
    assert torch.neuron.current_device() == 0
    torch.neuron.set_device("neuron:1")
    try:
        assert torch.ones(1, device="neuron").device.index == 1
    finally:
        torch.neuron.set_device(0)
    with pytest.raises(ValueError, match="invalid neuron device index 9"):
        torch.neuron.set_device(9)
    with pytest.raises(RuntimeError, match="Invalid device neuron:7"):
        torch.empty(1, device="neuron:7")
    torch.neuron.synchronize()


def test_rng_functions_make_random_ops_reproducible():
    torch.manual_seed(123)
    first = torch.randn(5, device="neuron")
    dropped = torch.nn.functional.dropout(torch.ones(64, device="neuron"), 0.5)
    torch.manual_seed(123)
    assert torch.equal(first.cpu(), torch.randn(5, device="neuron").cpu())
    assert torch.equal(
        dropped.cpu(), torch.nn.functional.dropout(torch.ones(64, device="neuron"), 0.5).cpu()
    )
    # The device generator is the CPU engine: same seed, same numbers as on CPU.
    torch.manual_seed(5)
    on_cpu = torch.randn(4)
    torch.manual_seed(5)
    torch.neuron.manual_seed(5)
    assert torch.equal(torch.randn(4, device="neuron").cpu(), on_cpu)

    state = torch.neuron.get_rng_state()
    a = torch.rand(3, device="neuron").cpu()
    torch.neuron.set_rng_state(state)
    assert torch.equal(torch.rand(3, device="neuron").cpu(), a)
    torch.neuron.manual_seed_all(7)
    assert torch.neuron.initial_seed() == 7
    generator = torch.Generator("neuron").manual_seed(3)
    x = torch.randn(3, device="neuron", generator=generator)
    generator.manual_seed(3)
    assert torch.equal(x.cpu(), torch.randn(3, device="neuron", generator=generator).cpu())
    with pytest.raises(RuntimeError, match="Expected a 'neuron' device type for generator"):
        torch.randn(3, device="neuron", generator=torch.Generator())


def test_seeding_does_not_import_dynamo():
    """torch.manual_seed reaches the device's seed functions, which Dynamo must not
    trace; keeping it from them must not import torch._dynamo (a second per process)."""
    done = run_python(
        "import sys, torch\n"
        "torch.manual_seed(3)\n"
        "torch.neuron.seed(); torch.neuron.manual_seed(4)\n"
        "x = torch.randn(2, device='neuron')\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]


def test_a_compiled_function_that_seeds_runs_the_seed_eagerly(fresh_dynamo):
    def step(x):
        torch.neuron.manual_seed(11)
        return x * 2

    x = torch.ones(3, device="neuron")
    out = torch.compile(step, backend="neuron")(x)
    assert torch.equal(out.cpu(), torch.full((3,), 2.0))
    assert torch.neuron.initial_seed() == 11
    torch.neuron.manual_seed(11)
    expected = torch.rand(4, device="neuron").cpu()
    torch.compile(step, backend="neuron")(x)
    assert torch.equal(torch.rand(4, device="neuron").cpu(), expected)


def test_amp_and_misc_functions():
    assert torch.bfloat16 in torch.neuron.get_amp_supported_dtype()
    assert torch.amp.is_autocast_available("neuron")
    free, total = torch.neuron.mem_get_info()
    assert 0 < free <= total == torch.neuron.get_device_properties().total_memory
    start, end = (
        torch.Event(device="neuron", enable_timing=True),
        torch.Event(device="neuron", enable_timing=True),
    )
    start.record()
    end.record()
    assert end.query() and start.elapsed_time(end) >= 0.0
