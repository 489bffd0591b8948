"""Forwards ``python -m torchneuron.conformance`` to ``torchneuron.testing.conformance``."""

import sys

from torchneuron.testing.conformance.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
