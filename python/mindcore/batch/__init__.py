"""Many users at once: whole-store jobs over every capability's tables.

- :func:`reembed`: rewrite every vector with a new embedding model, resumable, readers untouched
  until the switch (:class:`ReembedReport`, :class:`ReembedProgress`).
"""

from __future__ import annotations

from mindcore.batch.reembed import ReembedProgress, ReembedReport, reembed

__all__ = ["ReembedProgress", "ReembedReport", "reembed"]
