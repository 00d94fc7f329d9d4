"""Tuning knobs of a store (every one has a measured default)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from datetime import timedelta

__all__ = ["StoreConfig"]


@dataclass(frozen=True)
class StoreConfig:
    """How a store reads, writes and maintains its tables.

    >>> from datetime import timedelta
    >>> StoreConfig(compact_every=10, cleanup_grace=timedelta(minutes=1)).compact_every
    10
    """

    #: Object storage: how stale a read may be before the table is checked for versions written
    #: by other processes (``None``: 1 s; each check is a listing round trip). Local folders
    #: always read the latest version (a cheap probe of the version files, see
    #: ``mindcore.store.versions``); ``memory://`` stores have no other writers.
    read_consistency: timedelta | None = None
    #: Compact a table after this many writes by this process (0: never automatically). A
    #: compaction rewrites only the small fragments (see ``mindcore.store.compaction``), so its
    #: cost does not grow with the table.
    compact_every: int = 32
    #: No longer used (compaction no longer rewrites big tables); accepted with a
    #: ``DeprecationWarning`` so old configs keep working.
    compact_amplification: int | None = None
    #: No longer used, as ``compact_amplification``: compaction runs every ``compact_every`` writes.
    compact_max_writes: int | None = None
    #: Run scheduled compaction on a background thread (``False``: inline, after the write).
    compact_in_background: bool = True
    #: Maintenance deletes versions once they are this old. A read in another process that
    #: finds its version's files gone reads the latest version instead (a second read, not an
    #: error), so the grace only spares most reads that second read. One single write is one
    #: version, with files of its own: under steady writes, the disk holds about this many
    #: seconds of them on top of the data (see ``benches/NOTES.md``).
    cleanup_grace: timedelta = timedelta(seconds=10)
    #: A namespace with at least this many rows is searched through the table's vector index
    #: (when one exists); smaller ones through the in-memory cache and the Rust kernel.
    ann_threshold: int = 200_000
    #: Candidates fetched from the vector index before hybrid re-scoring (at least ``4 * k``).
    ann_candidates: int = 256
    #: Maintenance builds the vector index once a table holds this many rows (0: never).
    index_min_rows: int = 200_000
    #: Upper bound on the memory of the vector cache, over all tables of the store.
    cache_bytes: int = 1 << 30
    #: Seconds to wait for a table's write lock before raising ``LockTimeoutError``.
    lock_timeout: float = 60.0
    #: Lease length of object-storage write locks (renewed while held).
    lease_ttl: float = 30.0

    def __post_init__(self) -> None:
        for name in ("compact_amplification", "compact_max_writes"):
            if getattr(self, name) is not None:
                warnings.warn(f"StoreConfig.{name} is no longer used: compaction rewrites only the small "
                              "fragments, every compact_every writes", DeprecationWarning, stacklevel=3)
        for name in ("compact_every", "ann_threshold", "ann_candidates", "index_min_rows", "cache_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{name}: expected a non-negative int, got {v!r}")
        for name in ("lock_timeout", "lease_ttl"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or v <= 0:
                raise ValueError(f"{name}: expected a positive number of seconds, got {v!r}")
        if not isinstance(self.cleanup_grace, timedelta) or self.cleanup_grace < timedelta(0):
            raise ValueError(f"cleanup_grace: expected a non-negative timedelta, got {self.cleanup_grace!r}")
        rc = self.read_consistency
        if rc is not None and (not isinstance(rc, timedelta) or rc < timedelta(0)):
            raise ValueError(f"read_consistency: expected a non-negative timedelta or None, got {rc!r}")
