"""The mind's only door to storage: one ``mind_entries`` table (every agent a namespace).

Goals, beliefs and reflections share one table so that a run's flush is a single unit of work,
i.e. one LanceDB version: a crash leaves all of the run's writes or none. Read-modify-write
sequences (flush, completing a goal) hold the mind's lock, the store lock (``Store.lock``) named
after the namespace, so concurrent processes running the same agent never lose each other's
writes or exceed a cap.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from mindcore.errors import KernelError
from mindcore.kernels import SHADOW_MIN_ROWS, RowShadow, row_shadow
from mindcore.mind.entries import Belief, Entry, Goal, Reflection, entry_from_row, entry_to_row, recall_weight
from mindcore.mind.header import HeaderIndex
from mindcore.mind.recall import RECALL_WEIGHTS
from mindcore.store.rewrite import VectorTexts
from mindcore.store.scoring import Weights, rank

if TYPE_CHECKING:
    from mindcore.store import Store, Table

__all__ = ["COLUMNS", "TABLE", "VECTOR_TEXTS", "Repo", "Snapshot", "StoreView"]

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
    # A belief's replaced contents, JSON (mindcore.mind.entries.history_to_json).
    "history": pa.string(),
}
#: What each entry's vector embeds (beliefs and reflections embed their content; goals have no
#: vector): how ``mindcore.batch.reembed`` rebuilds this table's vectors for another model.
VECTOR_TEXTS = VectorTexts(TABLE, lambda rows: [str(c or "") for c in rows.column("content").to_pylist()])
_SCALARS = ["id", "created_at", "updated_at", "tags", *COLUMNS]

def _lock_name(namespace: str) -> str:
    """The name of the store lock guarding one mind namespace (namespaces may hold any text)."""
    return "mind-" + hashlib.sha256(namespace.encode()).hexdigest()[:32]


_NO_EXPIRY = np.iinfo(np.int64).max
# Near-duplicate checks rank by cosine alone.
SIMILARITY_ONLY = Weights()


class Snapshot:
    """The committed entries of a namespace at one table version, with the vectors of its
    beliefs and reflections (so a flush needs no read beyond the one scan per version)."""

    def __init__(self, version: int, entries: dict[str, Entry], vectors: dict[str, np.ndarray], dim: int,
                 serial: int | None = None) -> None:
        self.version = version
        self.entries = entries
        self.vectors = vectors
        self.dim = dim
        # The serial of the store's cache entry holding the same rows (``None``: not known): while
        # the cache keeps that entry, a newer table version changed nothing of this namespace.
        self.serial = serial
        self._indexes: dict[type, KindIndex] = {}
        self._index_guard = threading.Lock()

    @cached_property
    def header(self) -> HeaderIndex:
        return HeaderIndex(self.entries.values())

    def index(self, kind: type[Belief] | type[Reflection]) -> KindIndex:
        """The beliefs or reflections of this version as arrays for the scoring kernel (built on
        first use, once per version)."""
        with self._index_guard:
            idx = self._indexes.get(kind)
            if idx is None:
                idx = self._indexes[kind] = KindIndex(
                    [e for e in self._by_type[kind] if e.id in self.vectors], self.vectors, self.dim
                )
            return idx

    @cached_property
    def _by_type(self) -> dict[type, list[Any]]:
        # One pass per version: recall and the header ask for goals on every call.
        out: dict[type, list[Any]] = {Goal: [], Belief: [], Reflection: []}
        for e in self.entries.values():
            out[type(e)].append(e)
        return out

    def goals(self) -> list[Goal]:
        return list(self._by_type[Goal])

    def beliefs(self) -> list[Belief]:
        return list(self._by_type[Belief])

    def reflections(self) -> list[Reflection]:
        return list(self._by_type[Reflection])

    def active_goal_count(self) -> int:
        return len(self.header.goals)

    def pinned_ids(self, now: int) -> set[str]:
        return {r.id for r in self.header.pinned if not r.expired(now)}

    def rows(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Whole stored rows (vector included) of these ids."""
        return {i: entry_to_row(self.entries[i], self.vectors.get(i)) for i in ids if i in self.entries}

    def similar_belief(self, vector: np.ndarray, threshold: float, now: int) -> str | None:
        """The unexpired belief most similar to ``vector`` at cosine >= ``threshold``."""
        idx = self.index(Belief)
        top = rank(np.ascontiguousarray(vector, dtype=np.float32), idx.matrix, SIMILARITY_ONLY, k=1,
                   mask=idx.expires > now, min_score=threshold)
        return idx.entries[int(top.indices[0])].id if len(top.indices) else None

    def patched(self, version: int, rows: Sequence[dict[str, Any]], serial: int | None) -> Snapshot:
        """This snapshot with ``rows`` written over it, labelled ``version`` (and the cache entry
        ``serial`` holding the same rows, when known)."""
        entries, vectors = dict(self.entries), dict(self.vectors)
        for r in rows:
            rid = str(r["id"])
            entries[rid] = entry_from_row(r)
            v = r.get("vector")
            if v is None:
                vectors.pop(rid, None)
            else:
                vectors[rid] = np.asarray(v, dtype=np.float32)
        return Snapshot(version, entries, vectors, self.dim, serial)


def _expiry(e: Entry) -> int:
    x = getattr(e, "expires_at", None)
    return _NO_EXPIRY if x is None else int(x)


class KindIndex:
    """Beliefs or reflections as the scoring kernel reads them: one C-contiguous matrix, creation
    times, confidence terms and expiries; filters become boolean masks (tag masks are memoised)."""

    def __init__(self, entries: list[Belief] | list[Reflection], vectors: dict[str, np.ndarray], dim: int) -> None:
        self.entries: list[Belief | Reflection] = list(entries)
        n = len(self.entries)
        self.matrix = (np.stack([vectors[e.id] for e in self.entries]) if n else np.empty((0, dim))).astype(
            np.float32, copy=False
        )
        self.created = np.fromiter((e.created_at for e in self.entries), dtype=np.int64, count=n)
        self.expires = np.fromiter((_expiry(e) for e in self.entries), dtype=np.int64, count=n)
        self.weight = np.fromiter(
            (recall_weight(e.type, getattr(e, "confidence", None), e.error) for e in self.entries),
            dtype=np.float32, count=n,
        )
        self.pinned = np.fromiter((getattr(e, "pinned", False) for e in self.entries), dtype=bool, count=n)
        self._tags: dict[str, np.ndarray] = {}
        self._searches = 0
        self._shadow: RowShadow | None = None

    def shadow(self) -> RowShadow | None:
        """The matrix's int8 shadow (same results, a fraction of the time), built on the second search
        of a large index: an index searched once, as after each write, never pays for it."""
        self._searches += 1
        if self._shadow is None and self._searches >= 2 and len(self.entries) >= SHADOW_MIN_ROWS:
            try:
                self._shadow = row_shadow(self.matrix)
            except KernelError:  # a row that is not finite: the kernel reports it
                return None
        return self._shadow

    def tag_mask(self, tag: str) -> np.ndarray:
        m = self._tags.get(tag)
        if m is None:
            m = self._tags[tag] = np.fromiter((tag in e.tags for e in self.entries), dtype=bool,
                                              count=len(self.entries))
        return m

    def search(self, query: np.ndarray, *, k: int, now: int, min_score: float, include_expired: bool,
               tags: Sequence[str] | None, pinned: bool | None,
               weights: Weights = RECALL_WEIGHTS) -> list[tuple[Belief | Reflection, float]]:
        """The ``k`` best entries passing the filters, best first, with their hybrid scores
        (age from creation, the confidence term as the per-row extra)."""
        n = len(self.entries)
        if n == 0:
            return []
        mask = np.ones(n, dtype=bool) if include_expired else self.expires > now
        if pinned is not None:
            mask &= self.pinned == pinned
        for t in tags or ():
            mask &= self.tag_mask(t)
        top = rank(query, self.matrix, weights, k=k, now_ms=now, timestamps=self.created, extra=self.weight,
                   mask=mask, min_score=min_score, shadow=self.shadow() if 8 * k <= n else None)
        return [(self.entries[int(i)], float(sc)) for i, sc in zip(top.indices, top.scores, strict=True)]


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
        dim = self.table.dim
        assert dim is not None
        self.dim: int = dim
        self._lock = store.lock(_lock_name(namespace))
        self._snap: Snapshot | None = None
        self._snap_guard = threading.Lock()

    # -- reads ----------------------------------------------------------------------------------

    def snapshot(self, *, exact: bool = False) -> Snapshot:
        """The committed entries (rebuilt only when the table version moved). ``exact`` (for
        writers holding the lock) never trusts a version that may be stale on object storage."""
        version = self._latest() if exact else self.table.version
        snap = self._snap
        if snap is not None and snap.version == version:
            return snap
        with self._snap_guard:
            snap = self._snap
            if snap is not None and snap.version == version:
                return snap
            # Through the store's vector cache: a flush then finds the namespace there, so the
            # store knows which rows are new (an append) without asking the table, and patches
            # it with the commit instead of reading it again.
            entry = self.table.cached(self.namespace)
            if snap is not None and snap.serial == entry.serial:
                # Only the table moved (maintenance merged files or updated an index): the same
                # rows, so the same snapshot, relabelled rather than rebuilt entry by entry.
                snap.version = entry.version
                return snap
            snap = _from_columns(entry.version, entry.scalars.select(_SCALARS), entry.matrix, entry.has_vector,
                                 self.dim, entry.serial)
            self._snap = snap
            return snap

    def _latest(self) -> int:
        # Local and memory stores always read the latest version; on object storage reads may lag
        # by the read-consistency interval, which a read-modify-write under the lock must not.
        tracker = getattr(self.table, "_versions", None)
        if self.store.kind == "remote" and tracker is not None:
            tracker.exact()
        return self.table.version

    # -- writes ---------------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the mind's lock (read-modify-write of this namespace)."""
        with self._lock.hold():
            yield

    def commit(self, rows: Sequence[dict[str, Any]]) -> int:
        """Write ``rows`` (whole rows) as one table version; returns the version. When nothing
        else was committed in between, the snapshot is patched instead of read again."""
        if not rows:
            return self.table.version
        before = self._snap
        with self.table.unit_of_work(self.namespace) as uow:
            uow.upsert(rows)
        assert uow.result is not None
        version = uow.result.version
        if before is not None and before.version == version - 1:
            with self._snap_guard:
                if self._snap is before:
                    held = self.table.held(self.namespace)  # the cache patched by the same commit
                    serial = held.serial if held is not None and held.version == version else None
                    self._snap = before.patched(version, rows, serial)
        return version


def _from_columns(version: int, data: pa.Table, matrix: np.ndarray, has: np.ndarray, dim: int,
                  serial: int | None) -> Snapshot:
    """A snapshot of the rows ``data`` (no vector column) whose vectors are the rows of
    ``matrix`` where ``has`` is true (read-only views: shared with the store's cache entry
    ``serial``)."""
    scalars = data.to_pylist()
    entries: dict[str, Entry] = {}
    vectors: dict[str, np.ndarray] = {}
    for i, r in enumerate(scalars):
        rid = str(r["id"])
        entries[rid] = entry_from_row(r)
        if has[i]:
            vectors[rid] = matrix[i]
    return Snapshot(version, entries, vectors, dim, serial)


class StoreView:
    """The fresh view :func:`mindcore.mind.draft.plan_flush` reads: the snapshot at the exact
    latest version (make it while holding :meth:`Repo.locked`)."""

    def __init__(self, repo: Repo) -> None:
        self._snap = repo.snapshot(exact=True)
        self.version = self._snap.version

    def rows(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return self._snap.rows(ids)

    def active_goal_count(self) -> int:
        return self._snap.active_goal_count()

    def pinned_ids(self, now: int) -> set[str]:
        return self._snap.pinned_ids(now)

    def similar_belief(self, vector: np.ndarray, threshold: float, now: int) -> str | None:
        return self._snap.similar_belief(vector, threshold, now)
