"""Lance and LanceDB stay quiet on stderr unless the user asks for their logs.

Both libraries log from Rust (``env_logger``) straight to stderr, at ``warn`` by default, and offer
no hook into Python's :mod:`logging`. Each reads its level once, when its extension module is first
imported: ``LANCE_LOG`` for pylance (``lance``: maintenance, i.e. compaction, index updates and
version cleanup) and ``LANCEDB_LOG`` for LanceDB (``lancedb``: every read and write). Their warnings
are about conditions the store already handles, such as a background compaction whose commit lost
a race with a concurrent delete (mindcore plans it again, see :mod:`mindcore.store.compaction`), so
by default they would only print noise a user cannot act on.

:func:`quiet_lance_logs` runs once, when this module is imported: :mod:`mindcore.store` imports it
before any module that can import either library (mindcore imports them nowhere else). It sets
both variables to ``error`` for this process (and the processes it starts) unless the user set
them. Setting either one (``LANCE_LOG=warn``) opts into both libraries' logs at that level (the
other variable, when also set, keeps its own value). A process that imported ``lance`` or
``lancedb`` before mindcore keeps the levels they started with.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT_LEVEL", "LANCE_FORK_WARNING", "LOG_VARIABLES", "quiet_lance_logs"]

#: The ``env_logger`` variables of pylance and LanceDB, in that order.
LOG_VARIABLES = ("LANCE_LOG", "LANCEDB_LOG")
#: Their level unless the user sets one: errors only (a warning there is handled by the store).
DEFAULT_LEVEL = "error"
#: What pylance, once imported, warns of at every fork of the process (``os.register_at_fork``),
#: also the fork of a ``subprocess`` about to exec another program; a filter for the calls that
#: only start programs.
LANCE_FORK_WARNING = r"lance is not fork-safe"


def quiet_lance_logs() -> None:
    """Default ``LANCE_LOG`` and ``LANCEDB_LOG`` to the user's choice (either variable) or ``error``."""
    given = next((os.environ[name] for name in LOG_VARIABLES if name in os.environ), DEFAULT_LEVEL)
    for name in LOG_VARIABLES:
        os.environ.setdefault(name, given)


quiet_lance_logs()
