"""Differential fuzzing of ops: PyTorch on the CPU against eager ``neuron`` and torch.compile.

``python -m torchneuron.fuzz`` (see ``__main__``) generates, for every op of its
registry (``ops/``: hand-written families plus every unary/binary ufunc and reduction
of PyTorch's OpInfo database), inputs that stress semantics rather than arithmetic
(``inputs``): negative and out-of-range indices, bool/unsigned/every integer width
and Python scalars of every sign, 0-d/empty/size-1 broadcast dims, transposed,
strided, offset and expanded views (as inputs and as ``out=``), NaN, ±inf, -0.0,
denormals, int64 beyond 2**53, long half-precision rows. Each case runs on PyTorch's
CPU (the reference), eager on ``neuron`` and under ``torch.compile(backend="neuron")``
with fallback forbidden; ``runner`` says per mode pass / wrong / refused / error /
untested, ``pool`` runs ops in worker processes so a segfault or hang is a ``crash``
of that op and the run goes on.

Reproducible by seed: every op's hypothesis run has an explicit seed derived from
the run's ``--seed`` and the op's name (``runner.op_seed``), no example database, and
one example stream, so the same seed and op give the same cases and the same shrunk
reproduction. A wrong case is shrunk by hypothesis and printed as a runnable snippet
(``repro``). ``expected.EXPECTED_FAILURES`` lists what is known to be wrong still.

hypothesis is a test dependency (``pip install torchneuron[test]``).
"""
