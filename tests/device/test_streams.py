"""Asynchronous eager execution: the per-device queue, streams, events, errors, memory.

A ``Gate`` queued with ``streams.enqueue`` holds a device's execution thread, so a
test knows for certain that the ops issued after it have not run yet.
"""

from __future__ import annotations

import gc
import threading

import pytest
import torch

from torchneuron import settings
from torchneuron.device import compiled, programs, stream_api, streams


class Gate:
    """A queue item that keeps the execution thread waiting until ``release()``."""

    def __init__(self, device: int = 0) -> None:
        self.device = device
        self.stream = None
        self.name = "test gate"
        self._open = threading.Event()

    def run(self) -> None:
        assert self._open.wait(60), "gate never released"

    def release(self) -> None:
        self._open.set()


@pytest.fixture(autouse=True)
def _exact_programs(monkeypatch):
    # padded calls run synchronously: these tests need every op queued
    monkeypatch.setenv(settings.BUCKETS, "off")
    compiled.forget_padded()


def warm(*calls) -> None:
    """Compile the ops of ``calls`` and let them run (so later runs only execute)."""
    for call in calls:
        call()
    torch.neuron.synchronize()


def test_a_long_chain_then_cpu_gives_the_chains_value(asynchronous):
    x = torch.zeros(64, device="neuron")
    for _ in range(200):
        x = x + 1
    x.mul_(2)
    assert torch.equal(x.cpu(), torch.full((64,), 400.0))


@pytest.fixture
def gate_after_warm(asynchronous):
    """A gate queued after the test's warm-up (call ``hold()`` when ready)."""
    held = []

    def hold() -> Gate:
        item = Gate()
        streams.enqueue(item)
        held.append(item)
        return item

    yield hold
    for item in held:
        item.release()
    torch.neuron.synchronize()


def test_ops_issued_behind_a_held_queue_have_not_run_until_it_moves(gate_after_warm):
    x = torch.ones(4, device="neuron")
    warm(lambda: x + 1)
    held = gate_after_warm()
    y = x + 1
    queue = streams._existing_queue(0)
    assert queue.completed < queue.submitted
    assert not torch.neuron.current_stream().query()
    held.release()
    assert torch.equal(y.cpu(), torch.full((4,), 2.0))
    assert torch.neuron.current_stream().query()


READS = {
    "item": lambda t: t.sum().item(),
    "cpu": lambda t: t.cpu()[0].item(),
    "print": lambda t: float(repr(t).split("[")[1].split(",")[0]),
}


@pytest.mark.parametrize("how", READS)
def test_reading_a_value_waits_for_the_ops_that_make_it(gate_after_warm, how):
    read = READS[how]
    x = torch.ones(3, device="neuron")
    warm(lambda: x * 5, lambda: (x * 5).sum())
    held = gate_after_warm()
    y = x * 5
    got = []
    reader = threading.Thread(target=lambda: got.append(read(y)))
    reader.start()
    reader.join(0.3)
    assert reader.is_alive() and not got  # it cannot read before the gate opens
    held.release()
    reader.join(30)
    assert got and got[0] in (5.0, 15.0)


def test_a_device_to_device_copy_is_queued_behind_the_ops_before_it(gate_after_warm):
    x = torch.ones(2, 3, device="neuron")
    warm(lambda: x * 3)
    held = gate_after_warm()
    y = x * 3  # queued behind the gate
    clone = y.clone()  # copy_ between neuron tensors: queued too, so it returns at once
    transposed = torch.empty(3, 2, device="neuron").t()
    transposed.copy_(y)
    widened = torch.empty(2, 3, dtype=torch.float64, device="neuron")
    widened.copy_(y)
    queue = streams._existing_queue(0)
    assert queue.completed < queue.submitted  # nothing ran: the copies did not wait
    held.release()
    expected = torch.full((2, 3), 3.0)
    assert torch.equal(clone.cpu(), expected)
    assert torch.equal(transposed.cpu(), expected)
    assert torch.equal(widened.cpu(), expected.double())


def test_an_ops_later_write_does_not_reach_an_earlier_queued_copy(gate_after_warm):
    x = torch.ones(4, device="neuron")
    warm(lambda: x.add_(0))
    held = gate_after_warm()
    copy = x.clone()
    x.add_(1)  # queued after the copy
    held.release()
    assert torch.equal(copy.cpu(), torch.ones(4))
    assert torch.equal(x.cpu(), torch.full((4,), 2.0))


def test_a_queued_copy_copies_what_the_tensors_were_at_the_call(gate_after_warm):
    x = torch.arange(6.0, device="neuron").view(2, 3)
    warm(lambda: x * 1)
    held = gate_after_warm()
    copy = x.clone()
    copy.transpose_(0, 1)  # metadata changed in place before the copy has run
    held.release()
    assert torch.equal(copy.cpu(), torch.arange(6.0).view(2, 3).t())


def test_new_gradients_are_taken_as_grad_without_a_copy_while_queued(gate_after_warm, monkeypatch):
    # x @ w + b as GPT-2's Conv1D layers compute it: w's gradient is an mm's own output
    torch.manual_seed(0)
    w, b, x = torch.randn(8, 16), torch.randn(16), torch.randn(5, 8)
    params = [torch.nn.Parameter(t.to("neuron")) for t in (w, b)]

    def backward(w, b, x):
        torch.addmm(b, x, w).tanh().square().sum().backward()

    x_device = x.to("neuron")
    warm(lambda: backward(*params, x_device))
    for p in params:
        p.grad = None
    copies = []
    queue_copy = streams.queue_copy
    monkeypatch.setattr(
        stream_api, "queue_copy", lambda *args: copies.append(args[0].shape) or queue_copy(*args)
    )
    held = gate_after_warm()  # every op of the backward is still queued when autograd
    backward(*params, x_device)  # looks at its new gradients
    held.release()
    assert copies == []  # autograd cloned none (a queued launch used to hold them)
    expected = [t.clone().requires_grad_() for t in (w, b)]
    backward(*expected, x)
    for got, want in zip(params, expected):
        torch.testing.assert_close(got.grad.cpu(), want.grad)


def test_a_copy_that_warns_or_fails_on_the_cpu_does_so_at_the_call(asynchronous):
    with pytest.warns(UserWarning, match="imaginary"):
        torch.empty(2, device="neuron").copy_(torch.ones(2, dtype=torch.complex64, device="neuron"))
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.empty(1, device="neuron").expand(3).copy_(torch.ones(3, device="neuron"))
    with pytest.raises(RuntimeError, match="must match"):
        torch.empty(3, device="neuron").copy_(torch.ones(2, device="neuron"))
    torch.neuron.synchronize()  # and nothing failed later, on the execution thread


def test_a_copy_under_launch_blocking_is_done_when_it_returns():
    streams.set_launch_blocking(True)
    try:
        x = torch.arange(4.0, device="neuron")
        copy = torch.empty(4, device="neuron")
        copy.copy_(x)
        assert streams.idle(0)
        assert torch.equal(copy.cpu(), torch.arange(4.0))
    finally:
        streams.set_launch_blocking(None)


def test_events_time_the_work_between_them(asynchronous):
    x = torch.randn(32, 32, device="neuron")
    warm(lambda: x @ x)
    start, end = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        y = x @ x
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert end.elapsed_time(start) <= 0.0 <= start.elapsed_time(end)
    torch.testing.assert_close(y.cpu(), x.cpu() @ x.cpu(), rtol=1e-4, atol=1e-4)


def test_an_event_is_pending_until_the_device_reaches_it(gate_after_warm):
    held = gate_after_warm()
    event = torch.neuron.Event()
    event.record()
    assert not event.query()
    held.release()
    event.synchronize()
    assert event.query()


def test_elapsed_time_needs_timing_events(asynchronous):
    start, end = torch.neuron.Event(), torch.neuron.Event()
    start.record()
    end.record()
    with pytest.raises(RuntimeError, match="enable_timing"):
        start.elapsed_time(end)


def test_stream_context_sets_the_current_stream_and_restores_it(asynchronous):
    default = torch.neuron.current_stream()
    assert default == torch.neuron.default_stream()
    side = torch.neuron.Stream(priority=-1)
    assert side != default and side.priority == -1
    with torch.neuron.stream(side):
        assert torch.neuron.current_stream() == side
        y = torch.ones(2, device="neuron") * 3
    assert torch.neuron.current_stream() == default
    side.synchronize()
    assert side.query()
    assert torch.equal(y.cpu(), torch.full((2,), 3.0))


def test_wait_stream_makes_a_stream_cover_the_other_streams_work(gate_after_warm):
    first, second = torch.neuron.Stream(), torch.neuron.Stream()
    x = torch.ones(8, device="neuron")
    warm(lambda: x + 2)
    held = gate_after_warm()
    with torch.neuron.stream(first):
        y = x + 2
    assert second.query()  # nothing issued on it
    second.wait_stream(first)
    assert not second.query()  # it now waits for first's work
    event = first.record_event()
    third = torch.neuron.Stream()
    third.wait_event(event)
    assert not third.query()
    held.release()
    second.synchronize()
    assert first.query() and third.query()
    assert torch.equal(y.cpu(), torch.full((8,), 3.0))


def test_a_thread_works_on_its_own_current_stream(asynchronous):
    side = torch.neuron.Stream()
    seen = []

    def work():
        torch.neuron.set_stream(side)
        seen.append(torch.neuron.current_stream())

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [side]
    assert torch.neuron.current_stream() == torch.neuron.default_stream()


def test_generic_torch_stream_and_accelerator_synchronize_wait_for_the_queue(gate_after_warm):
    x = torch.ones(4, device="neuron")
    warm(lambda: x - 1)
    held = gate_after_warm()
    y = x - 1
    generic = torch.Stream(device="neuron")
    assert not generic.query()
    held.release()
    generic.synchronize()
    assert generic.query()
    torch.accelerator.synchronize()
    assert torch.equal(y.cpu(), torch.zeros(4))


def test_memory_of_a_dropped_input_is_freed_only_after_the_op_ran(gate_after_warm):
    warm(lambda: torch.ones(512, 512, device="neuron") + 1)
    held = gate_after_warm()
    big = torch.ones(512, 512, device="neuron")
    y = big + 1
    before = torch.neuron.memory_allocated()
    del big
    assert torch.neuron.memory_allocated() == before  # the queued add still reads it
    held.release()
    torch.neuron.synchronize()
    # Once the op has run nothing holds ``big`` but, at times, a garbage cycle left by an
    # earlier test's first execution of the program (see the HBM-full test).
    gc.collect()
    assert torch.neuron.memory_allocated() <= before - 512 * 512 * 4
    assert torch.equal(y.cpu(), torch.full((512, 512), 2.0))


def test_record_stream_keeps_a_tensor_until_the_streams_work_ran(gate_after_warm):
    side = torch.neuron.Stream()
    x = torch.ones(128, 128, device="neuron")
    warm(lambda: x * 3, lambda: torch.empty(256, 256, device="neuron"))
    held = gate_after_warm()
    with torch.neuron.stream(side):
        y = x * 3
    scratch = torch.empty(256, 256, device="neuron")
    scratch.record_stream(side)
    before = torch.neuron.memory_allocated()
    del scratch
    assert torch.neuron.memory_allocated() == before
    held.release()
    side.synchronize()
    torch.neuron.synchronize()
    assert torch.neuron.memory_allocated() <= before - 256 * 256 * 4
    assert torch.equal(y.cpu(), torch.full((128, 128), 3.0))


@pytest.fixture
def failing_op(monkeypatch):
    """Make executions of ``aten::neg`` programs raise, as a failing program would."""
    real = programs.ResidentProgram.execute

    def execute(self, core, flat_inputs):
        if self.name.startswith("aten::neg"):
            raise RuntimeError("injected execution failure")
        return real(self, core, flat_inputs)

    x = torch.ones(5, device="neuron")
    warm(lambda: -x)
    monkeypatch.setattr(programs.ResidentProgram, "execute", execute)
    return x


def test_launch_blocking_raises_an_execution_error_at_the_op(failing_op):
    streams.set_launch_blocking(True)
    try:
        with pytest.raises(RuntimeError, match="injected execution failure") as raised:
            torch.neg(failing_op)
        assert not isinstance(raised.value, streams.NeuronAsyncError)
    finally:
        streams.set_launch_blocking(None)


def test_an_asynchronous_error_is_raised_at_the_next_synchronization(asynchronous, failing_op):
    z = failing_op + 1
    y = -failing_op  # queued: no error yet
    with pytest.raises(streams.NeuronAsyncError) as raised:
        torch.neuron.synchronize()
    error = raised.value
    assert error.op == "aten::neg" or error.op.startswith("aten::neg")
    assert "NEURON_LAUNCH_BLOCKING=1" in str(error)
    assert isinstance(error, RuntimeError) and "injected execution failure" in str(error)
    torch.neuron.synchronize()  # raised once
    assert torch.equal(z.cpu(), torch.full((5,), 2.0))
    del y


def test_an_asynchronous_error_is_raised_at_the_next_op_or_read(asynchronous, failing_op):
    torch.neg(failing_op)
    with pytest.raises(streams.NeuronAsyncError):
        for _ in range(3):
            failing_op + 1  # submissions raise once the failure is recorded
        failing_op.cpu()


def test_an_out_of_range_index_still_raises_at_the_op(asynchronous):
    table = torch.randn(5, 2, device="neuron")
    with pytest.raises(IndexError):
        torch.nn.functional.embedding(torch.tensor([7], device="neuron"), table)


def test_a_background_thread_submits_ops_alongside_the_main_thread(asynchronous):
    results = {}

    def chain(name: str, start: float) -> None:
        x = torch.full((16,), start, device="neuron")
        for _ in range(50):
            x = x * 1 + 1
        results[name] = x.cpu()

    worker = threading.Thread(target=chain, args=("background", 10.0))
    worker.start()
    chain("main", 0.0)
    worker.join(120)
    assert torch.equal(results["main"], torch.full((16,), 50.0))
    assert torch.equal(results["background"], torch.full((16,), 60.0))


def test_in_place_metadata_changes_after_an_op_do_not_change_what_it_computed(asynchronous):
    x = torch.arange(6.0, device="neuron").reshape(2, 3)
    warm(lambda: x + 0)
    y = x + 10
    x.t_()  # changes x's strides after the add was queued
    y.t_()
    assert torch.equal(y.cpu(), (torch.arange(6.0).reshape(2, 3) + 10).t())


def test_an_allocation_that_finds_the_hbm_full_waits_for_the_queued_ops(asynchronous, monkeypatch):
    from torchneuron.runtime import reset_runtime

    monkeypatch.setenv("TORCHNEURON_HBM_BYTES_PER_CORE", "10MiB")
    reset_runtime()
    try:
        warm(lambda: torch.ones(512 * 1024, device="neuron") * 2)  # 2 MiB each
        gc.collect()  # a first compile leaves its call's tensors in a reference cycle
        held = Gate()
        streams.enqueue(held)
        threading.Timer(0.5, held.release).start()
        for _ in range(6):  # the dropped tensors are freed only once the gate has opened
            y = torch.ones(512 * 1024, device="neuron") * 2
        assert y[:2].cpu().tolist() == [2.0, 2.0]
        assert torch.neuron.memory_stats()["num_ooms"] >= 1  # it was full, and waited
    finally:
        torch.neuron.synchronize()
        monkeypatch.undo()
        reset_runtime()


def test_a_profile_holds_the_executions_of_the_ops_issued_inside_it(asynchronous):
    import torchneuron.profiler

    x = torch.randn(8, 8, device="neuron")
    warm(lambda: torch.sigmoid(x))
    with torchneuron.profiler.profile() as prof:
        torch.sigmoid(x)  # queued; the profile waits for it when it stops
    assert any("sigmoid" in event.name for event in prof.events)
