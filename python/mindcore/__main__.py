"""``python -m mindcore`` is the ``mindcore`` command."""

import sys

from mindcore.cli import main

sys.exit(main())
