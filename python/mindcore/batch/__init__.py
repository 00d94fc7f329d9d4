"""Many users at once: jobs over every user of a store.

- :func:`remember`: bulk ingest of many users' long-term memories (:class:`BulkReport`).
- :func:`reembed`: rewrite every vector with a new embedding model, resumable, readers untouched
  until the switch (:class:`ReembedReport`, :class:`ReembedProgress`).
"""

from __future__ import annotations

from mindcore.batch.reembed import ReembedProgress, ReembedReport, reembed
from mindcore.batch.remember import BulkReport, remember

__all__ = ["BulkReport", "ReembedProgress", "ReembedReport", "reembed", "remember"]
