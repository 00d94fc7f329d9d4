"""Many users at once: long-term memory recall and ingest for a whole user base, and jobs over every
capability's tables.

- :func:`recall` answers a table of queries (``user_id``, ``query``, optionally ``vector`` and
  ``workspace_id``) with one row per hit, exactly as ``LongTermMemory.recall`` would for each query,
  grouping the queries by user so each user's memories are read once and scored together. It runs in
  this process (``engine="local"``) or on a Ray cluster (``engine="ray"``) reading the same store.
- :func:`remember`: bulk ingest of many users' long-term memories (:class:`BulkReport`).
- :func:`reembed`: rewrite every vector with a new embedding model, resumable, readers untouched
  until the switch (:class:`ReembedReport`, :class:`ReembedProgress`).

Each has an async twin, :func:`arecall`, :func:`aremember` and :func:`areembed`: the same arguments,
result and errors, the work done in a worker thread so an event loop keeps serving meanwhile.
"""

from __future__ import annotations

from mindcore.batch.recall import arecall, recall
from mindcore.batch.reembed import ReembedProgress, ReembedReport, areembed, reembed
from mindcore.batch.remember import BulkReport, aremember, remember

__all__ = ["BulkReport", "ReembedProgress", "ReembedReport", "arecall", "areembed", "aremember", "recall", "reembed",
           "remember"]
