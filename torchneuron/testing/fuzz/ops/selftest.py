"""Deliberately broken ops that test the fuzzer itself (chosen only by ``selftest.*``).

Each runs a correct function on the CPU and ``device_source`` on the device: off by
one, -0.0 lost, a segfault in the worker, a hang. The fuzzer must report the first
two as ``wrong`` with a reproduction and survive the last two as ``crash``.
"""

from __future__ import annotations

from ..cases import SELFTEST_FAMILY, Case, FuzzOp, register
from ..inputs import shapes, tensors


def _cases(dtype: str, source: str):
    return lambda: tensors(dtype, shapes(min_dims=1, max_dims=2, empty=False)).map(
        lambda spec: Case(source, (spec,))
    )


SELFTESTS = {
    # name: (dtype, reference source, device source, comparison)
    "selftest.off_by_one": ("int64", "lambda a: a + 1", "lambda a: a + 2", "exact"),
    "selftest.loses_negative_zero": (
        "float32",
        "lambda a: torch.neg(a)",
        "lambda a: torch.neg(a) + 0.0",
        "exact",
    ),
    "selftest.segfault": (
        "float32",
        "lambda a: a",
        "lambda a: __import__('os').kill(__import__('os').getpid(), 11)",
        "exact",
    ),
    "selftest.hang": (
        "float32",
        "lambda a: a",
        "lambda a: __import__('time').sleep(3600)",
        "exact",
    ),
    "selftest.pass": ("int64", "lambda a: a * 2", "lambda a: a * 2", "exact"),
}
for _name, (_dtype, _source, _device_source, _compare) in SELFTESTS.items():
    register(
        FuzzOp(
            _name, SELFTEST_FAMILY, _cases(_dtype, _source), _compare, device_source=_device_source
        )
    )
