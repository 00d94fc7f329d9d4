"""``python -m mindcore.mcp`` is ``mindcore mcp``."""

import sys

from mindcore.mcp.command import main

sys.exit(main())
