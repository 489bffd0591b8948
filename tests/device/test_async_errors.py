"""Failures inside an op's execution: what reaches the user, asynchronously or at the op.

The executor is replaced on the loaded program of ``aten::neg`` by one that raises what
XLA raises when host memory runs out (the emulator keeps device memory in host RAM), or
an error whose ``str()`` itself raises.
"""

from __future__ import annotations

import pytest
import torch

from torchneuron import settings
from torchneuron.device import compiled, programs, streams
from torchneuron.runtime import NeuronOutOfMemoryError


class UnprintableError(RuntimeError):
    def __str__(self) -> str:
        raise ValueError("this error cannot be printed")


@pytest.fixture
def neg_raises(monkeypatch):
    """``neg_raises(error)``: executing the ``aten::neg`` program raises ``error``;
    returns the input the program was compiled for."""
    monkeypatch.setenv(settings.BUCKETS, "off")  # padded calls run synchronously
    compiled.forget_padded()
    x = torch.ones(5, device="neuron")
    (-x).cpu()
    # every resident neg program (earlier tests in this process may have left others,
    # of other shapes): whichever this call runs raises
    loaded = [
        program.loaded[0]
        for program in programs._resident.values()
        if program.name.startswith("aten::neg") and 0 in program.loaded
    ]
    assert loaded, "the neg program was not loaded"

    def install(error: BaseException):
        def run(inputs, copy):
            raise error

        for each in loaded:
            monkeypatch.setattr(each, "_run", run)
        return x

    return install


HOST_MEMORY_EXHAUSTED = [
    RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 4096 bytes."),
    MemoryError(),
]


@pytest.mark.parametrize("error", HOST_MEMORY_EXHAUSTED, ids=["resource-exhausted", "memory"])
def test_host_memory_exhausted_later_is_an_out_of_memory_error_naming_the_op(
    asynchronous, neg_raises, error
):
    x = neg_raises(error)
    y = -x  # queued: no error yet
    with pytest.raises(torch.OutOfMemoryError) as raised:
        torch.neuron.synchronize()
    assert isinstance(raised.value, streams.NeuronAsyncError)
    assert isinstance(raised.value, NeuronOutOfMemoryError)
    message = str(raised.value)
    assert message.startswith("aten::neg") and "out of host memory" in message, message
    assert (x + 1).cpu().tolist() == [2.0] * 5  # the device still runs
    del y


@pytest.mark.parametrize("error", HOST_MEMORY_EXHAUSTED, ids=["resource-exhausted", "memory"])
def test_host_memory_exhausted_at_the_op_is_an_out_of_memory_error(neg_raises, error):
    x = neg_raises(error)
    streams.set_launch_blocking(True)
    try:
        with pytest.raises(NeuronOutOfMemoryError, match="NEFF 'aten.neg' ran out of host memory"):
            torch.neg(x)
    finally:
        streams.set_launch_blocking(None)


def test_an_unprintable_error_is_raised_later_with_a_message_made_when_it_was_caught(
    asynchronous, neg_raises
):
    x = neg_raises(UnprintableError())
    y = -x
    with pytest.raises(streams.NeuronAsyncError) as raised:
        torch.neuron.synchronize()
    error = raised.value
    assert isinstance(error, UnprintableError) and isinstance(error.original, UnprintableError)
    message = str(error)  # raised "this error cannot be printed" before
    assert message == error.args[0] and type(message) is str
    assert message.startswith("aten::neg") and "UnprintableError" in message, message
    assert "NeuronAsync" in repr(error)
    assert (x + 1).cpu().tolist() == [2.0] * 5  # the execution thread survived
    del y
