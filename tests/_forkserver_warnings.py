"""Imported first by the tests' fork server (``tests/_forkserver.py``), never by a test.

The server imports LanceDB once so that each child starts in milliseconds, then forks the children.
LanceDB warns in every forked child that its fork support is experimental (its runtime is reset in
the child, "a small chance of deadlock remains if other state was mid-operation at fork time"). In
the server nothing is ever mid-operation: it only imported LanceDB and never ran any of its work,
and it forks from its idle loop. So that one warning says nothing here, and is ignored in the
server, hence in every child; every other warning still shows.
"""

from __future__ import annotations

import warnings

warnings.filterwarnings("ignore", message="lancedb fork support is experimental", category=RuntimeWarning)
