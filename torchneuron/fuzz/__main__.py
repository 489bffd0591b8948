"""Forwards ``python -m torchneuron.fuzz`` to ``torchneuron.testing.fuzz``."""

import sys

from torchneuron.testing.fuzz.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
