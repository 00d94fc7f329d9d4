"""The mind's only door to storage: one ``mind_entries`` table (every agent a namespace).

Goals, beliefs and reflections share one table so that a run's flush is a single unit of work,
i.e. one LanceDB version: a crash leaves all of the run's writes or none. Read-modify-write
sequences (flush, completing a goal) hold the mind's lock, a lock of the store's own kind
(``flock`` locally, a lease on object storage) named after the namespace, so concurrent
processes running the same agent never lose each other's writes or exceed a cap.
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from mindcore.mind.entries import Belief, Entry, Goal, Reflection, entry_from_row
from mindcore.mind.header import HeaderIndex

if TYPE_CHECKING:
    from mindcore.store import Filter, Hit, Store, Table

__all__ = ["COLUMNS", "TABLE", "Repo", "Snapshot"]

TABLE = "mind_entries"
COLUMNS: dict[str, pa.DataType] = {
    "type": pa.string(),  # goal | belief | reflection
    "content": pa.string(),  # a goal's description
    "confidence": pa.string(),
    "recall_weight": pa.float32(),  # confidence term of the recall score
    "priority": pa.string(),
    "status": pa.string(),
    "pinned": pa.bool_(),
    "progress": pa.list_(pa.string()),
    "outcome": pa.string(),
    "due_by": pa.string(),
    "expires_at": pa.int64(),
    "error": pa.bool_(),
    "related_to": pa.string(),
}
_SCALARS = ["id", "created_at", "updated_at", "tags", *COLUMNS]

_LOCKS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def _mind_lock(store: Store, namespace: str) -> Any:
    """The cross-process lock of one mind namespace, of the same kind as the store's table locks."""
    from mindcore.store.locks import FileLock, LeaseLock, ThreadLock

    name = "mind-" + hashlib.sha256(namespace.encode()).hexdigest()[:32]
    with _LOCKS_GUARD:
        per_store = _LOCKS.setdefault(store, {})
        lock = per_store.get(name)
        if lock is None:
            if store.kind == "local":
                lock = FileLock(os.path.join(store.uri, "_mindcore_locks", f"{name}.lock"), name)
            elif store.kind == "memory":
                lock = ThreadLock(name)
            else:
                lock = LeaseLock(store.uri, f"_mindcore_locks/{name}.lock", name,
                                 getattr(store, "_storage_options", {}), ttl=store.config.lease_ttl)
            per_store[name] = lock
        return lock


@dataclass(frozen=True)
class Snapshot:
    """The committed entries of a namespace at one table version."""

    version: int
    entries: dict[str, Entry]
    header: HeaderIndex

    def goals(self) -> list[Goal]:
        return [e for e in self.entries.values() if isinstance(e, Goal)]

    def beliefs(self) -> list[Belief]:
        return [e for e in self.entries.values() if isinstance(e, Belief)]

    def reflections(self) -> list[Reflection]:
        return [e for e in self.entries.values() if isinstance(e, Reflection)]

    def active_goal_count(self) -> int:
        return len(self.header.goals)

    def pinned_ids(self, now: int) -> set[str]:
        return {r.id for r in self.header.pinned if not r.expired(now)}


class Repo:
    """Reads and writes of one mind namespace."""

    def __init__(self, store: Store, namespace: str, embedder: Any) -> None:
        from mindcore.store import EmbedderMismatchError

        self.store = store
        self.namespace = namespace
        try:
            self.table: Table = store.table(TABLE, COLUMNS, vectors=True, embedder=embedder)
        except EmbedderMismatchError as e:
            raise EmbedderMismatchError(f"mind {namespace!r}: {e}") from None
        self._lock = _mind_lock(store, namespace)
        self._snap: Snapshot | None = None
        self._snap_guard = threading.Lock()

    # -- reads ----------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The committed entries (rebuilt only when the table version moved)."""
        version = self.table.version
        snap = self._snap
        if snap is not None and snap.version == version:
            return snap
        with self._snap_guard:
            snap = self._snap
            if snap is not None and snap.version == version:
                return snap
            data = self.table.scan_arrow(self.namespace, columns=_SCALARS)
            entries = {str(r["id"]): entry_from_row(r) for r in data.to_pylist()}
            snap = Snapshot(version, entries, HeaderIndex(entries.values()))
            self._snap = snap
            return snap

    def search(self, query: np.ndarray, *, k: int, where: Filter, now: int, min_score: float,
               w_sim: float, w_rec: float, w_extra: float, tau_ms: float) -> list[Hit]:
        return self.table.search(
            self.namespace, query, k=k, w_sim=w_sim, w_rec=w_rec, w_extra=w_extra, tau_ms=tau_ms,
            time_column="created_at", now_ms=now, extra_column="recall_weight", where=where,
            min_score=min_score, columns=_SCALARS,
        )

    def belief_vectors(self, now: int) -> tuple[list[str], np.ndarray]:
        """Ids and vectors of the committed, unexpired beliefs."""
        return self.table.vectors(self.namespace, unexpired_beliefs(now))

    def rows(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Full rows (vector included) of these ids, read from the latest version."""
        return {r["id"]: r for r in self.table.get(self.namespace, list(ids))}

    # -- writes ---------------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the mind's lock (read-modify-write of this namespace)."""
        with self._lock.hold(self.store.config.lock_timeout):
            yield

    def commit(self, rows: Sequence[dict[str, Any]]) -> int:
        """Write ``rows`` (whole rows) as one table version; returns the version."""
        if not rows:
            return self.table.version
        with self.table.unit_of_work(self.namespace) as uow:
            uow.upsert(rows)
        assert uow.result is not None
        return uow.result.version


def unexpired_beliefs(now: int) -> Filter:
    from mindcore.store import col

    return col("type").eq("belief") & (col("expires_at").is_null() | col("expires_at").gt(now))


class StoreView:
    """The fresh view :func:`mindcore.mind.draft.plan_flush` reads (make it under
    :meth:`Repo.locked`): counts come from the snapshot at the latest version, rows and
    vectors are read only when asked for."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self._snap = repo.snapshot()
        self.version = self._snap.version
        self._vectors: tuple[list[str], np.ndarray] | None = None

    def rows(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return self.repo.rows(ids)

    def active_goal_count(self) -> int:
        return self._snap.active_goal_count()

    def pinned_ids(self, now: int) -> set[str]:
        return self._snap.pinned_ids(now)

    def similar_belief(self, vector: np.ndarray, threshold: float, now: int) -> str | None:
        from mindcore.kernels import near_duplicates  # type: ignore[attr-defined,unused-ignore]

        if self._vectors is None:
            self._vectors = self.repo.belief_vectors(now)
        ids, matrix = self._vectors
        if not ids:
            return None
        idx, _ = near_duplicates(np.ascontiguousarray(vector, dtype=np.float32)[None, :], matrix,
                                 threshold=threshold)
        best = int(idx[0])
        return ids[best] if best >= 0 else None
