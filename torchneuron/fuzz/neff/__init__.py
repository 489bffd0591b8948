"""``python -m torchneuron.fuzz.neff``: the NEFF fuzzer, which lives in ``torchneuron.testing.fuzz.neff``."""
