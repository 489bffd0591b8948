"""The test tools, kept apart from the compiler and the runtime they test.

- ``conformance``: PyTorch's OpInfo entries run on the backend, checked against an
  expectations file (``python -m torchneuron.conformance``).
- ``fuzz``: differential fuzzing of ops against PyTorch on the CPU
  (``python -m torchneuron.fuzz``); ``fuzz.neff`` mutates real NEFFs and checks that
  loading and running them fails cleanly (``python -m torchneuron.fuzz.neff``).

``torchneuron.conformance`` and ``torchneuron.fuzz`` only forward ``python -m`` here.
"""
