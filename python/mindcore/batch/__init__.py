"""mindcore.batch: long-term memory for many users at once.

:func:`recall` answers a table of queries (``user_id``, ``query``, optionally ``vector`` and
``workspace_id``) with one row per hit, exactly as ``LongTermMemory.recall`` would for each query,
grouping the queries by user so each user's memories are read once and scored together. It runs
in this process (``engine="local"``) or on a Ray cluster (``engine="ray"``) reading the same store.
"""

from __future__ import annotations

from mindcore.batch.recall import recall as recall

__all__ = ["recall"]
