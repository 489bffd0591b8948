"""``python -m torchneuron.fuzz``: differential fuzzing of ops, which lives in ``torchneuron.testing.fuzz``."""
