"""``python -m torchneuron.cli``: the ``neuronc`` command."""

import sys

from torchneuron.cli import main

sys.exit(main())
