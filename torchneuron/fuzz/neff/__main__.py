"""Forwards ``python -m torchneuron.fuzz.neff`` to ``torchneuron.testing.fuzz.neff``."""

import sys

from torchneuron.testing.fuzz.neff.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
