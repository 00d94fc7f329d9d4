"""Working memory: a scratchpad per thread or per resource, free text or schema-validated.

See :class:`WorkingMemory`. Concurrency: every update is a read-merge-write of one row under the
store's per-key lock, so concurrent updaters (threads or processes) never lose an update.
"""

from __future__ import annotations

from mindcore.working.config import WorkingMemoryConfig
from mindcore.working.memory import ReadOnlyError, WorkingMemory, WorkingMemoryError

__all__ = ["ReadOnlyError", "WorkingMemory", "WorkingMemoryConfig", "WorkingMemoryError"]
