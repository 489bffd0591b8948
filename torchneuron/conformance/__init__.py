"""``python -m torchneuron.conformance``: the OpInfo conformance run, which lives in ``torchneuron.testing.conformance``."""
