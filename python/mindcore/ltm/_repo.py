"""Persistence of long-term memories: one table, one store namespace per (user, namespace, workspace).

Everything goes through :mod:`mindcore.store` (filters, units of work, the vector cache and its
``hybrid_topk`` search); nothing here builds a where string or scores rows itself.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mindcore.kernels import BM25Index, RowShadow, looks_like_secret
from mindcore.ltm._history import STATE_ACTIONS, Event, state_ids
from mindcore.ltm._lexical import lexical_index, lexical_terms
from mindcore.ltm._neighbours import cosines, has_threads, with_neighbours
from mindcore.ltm._when import TimeWindow, dated, with_time_boost
from mindcore.ltm.types import Memory, embedded_text, indexed_text
from mindcore.store.filters import col
from mindcore.store.ids import new_id
from mindcore.store.rewrite import VectorTexts
from mindcore.store.schema import take_rows
from mindcore.store.scoring import Weights, rank

if TYPE_CHECKING:
    from mindcore.store import Table
    from mindcore.store.cache import CacheEntry

__all__ = [
    "COLUMNS",
    "HISTORY_TABLE",
    "LEXICAL_FLOOR",
    "TABLE",
    "VECTOR_TEXTS",
    "HistoryEvent",
    "HistoryRepo",
    "MemoryRepo",
    "NewMemory",
    "ScopesRepo",
    "entry_memories",
    "entry_retention",
    "entry_vectors",
    "read_scope_history",
    "scope_key",
    "storable",
    "stored_terms",
    "touch_rows",
]

TABLE = "ltm_memories"
COLUMNS: dict[str, pa.DataType] = {
    "text": pa.string(),
    "kind": pa.string(),
    "importance": pa.float32(),
    "source": pa.string(),
    "last_accessed_at": pa.int64(),
    # max(created_at, last_accessed_at): the one time column recall's recency decays from.
    "recency_at": pa.int64(),
    # What BM25 indexes (mindcore.ltm._lexical, over the context and the text), computed once at
    # write time.
    "terms": pa.string(),
    # Optional text that situates the fact (Memory.context): embedded and indexed, never rendered.
    "context": pa.string(),
    # The older memories this one was kept beside though it may update or contradict them
    # (Memory.related), as a JSON list of ids; null when none.
    "related": pa.string(),
    # The conversation the memory came from and its place there (Memory.thread, Memory.position):
    # recall brings a hit's neighbours in its thread.
    "thread": pa.string(),
    "position": pa.int64(),
}
# What happened to the memories of a scope (same namespaces as TABLE): one row per event, its
# ``created_at`` being when it happened. A retired memory lives on here only, in full.
HISTORY_TABLE = "ltm_history"
HISTORY_COLUMNS: dict[str, pa.DataType] = {
    "memory_id": pa.string(),
    "action": pa.string(),
    "reason": pa.string(),
    "successor_id": pa.string(),
    "text": pa.string(),
    "kind": pa.string(),
    "importance": pa.float32(),
    "source": pa.string(),
    "context": pa.string(),
    "memory_created_at": pa.int64(),
    "thread": pa.string(),
    "position": pa.int64(),
}
_READ_COLUMNS = ["id", "created_at", *COLUMNS]
_MEMORY_COLUMNS = [c for c in _READ_COLUMNS if c != "terms"]
# Raw BM25 below which the best lexical match is not scaled up to 1: a query whose only overlap
# with the memories is a common word ("the", "like") must not hand some memory the full lexical
# weight. One distinctive word shared with a memory scores above this in any collection of more
# than a handful of memories.
LEXICAL_FLOOR = 2.0


def _embedded_texts(rows: pa.Table) -> list[str]:
    texts = rows.column("text").to_pylist()
    # Rows stored before the context column existed have none.
    contexts = rows.column("context").to_pylist() if "context" in rows.column_names else [None] * len(texts)
    return [embedded_text(str(t or ""), c) for t, c in zip(texts, contexts, strict=True)]


#: What each memory's vector embeds (:func:`~mindcore.ltm.types.embedded_text` of its text and
#: context): how ``mindcore.batch.reembed`` rebuilds this table's vectors for another model.
VECTOR_TEXTS = VectorTexts(TABLE, _embedded_texts)


class _Ids(Sequence[str]):
    """A read-only sequence over an Arrow column of ids; items are converted when read."""

    def __init__(self, column: pa.ChunkedArray[Any]) -> None:
        self._column = column

    def __len__(self) -> int:
        return len(self._column)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [str(v) for v in self._column[i].to_pylist()]
        return str(self._column[i].as_py())


def scope_key(user_id: str, namespace: str, workspace_id: str | None) -> str:
    """The store namespace of one (user, namespace, workspace) scope.

    JSON-encoding the triple makes the mapping injective: no choice of ids (slashes, colons,
    quotes, NULs) can make two scopes share a namespace.

    >>> scope_key("u1", "chat", "thread-9")
    'ltm:["u1","chat","thread-9"]'
    """
    return "ltm:" + json.dumps([user_id, namespace, workspace_id], ensure_ascii=False, separators=(",", ":"))


def touch_rows(table: Table, ns: str, pending: Mapping[str, tuple[int, int]]) -> None:
    """Record last access of memories of the store namespace ``ns`` of ``table`` (the
    ``ltm_memories`` table): ``id -> (last_accessed_at, recency_at)``, all in one commit."""
    groups: dict[tuple[int, int], list[str]] = defaultdict(list)
    for memory_id, stamps in pending.items():
        groups[stamps].append(memory_id)
    with table.unit_of_work(ns) as uow:
        for (accessed, recency), ids in groups.items():
            uow.update(ids, {"last_accessed_at": accessed, "recency_at": recency})


@dataclass(frozen=True, slots=True)
class NewMemory:
    text: str
    kind: str
    importance: float
    created_at: int
    source: str
    context: str | None = None
    related: tuple[str, ...] = ()
    thread: str | None = None
    position: int | None = None


def _arrow(memories: Sequence[Memory], vectors: np.ndarray) -> pa.Table:
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    created = pa.array([m.created_at for m in memories], pa.int64())
    return pa.table({
        "id": pa.array([m.id for m in memories], pa.string()),
        "created_at": created,
        "updated_at": created,
        "text": pa.array([m.text for m in memories], pa.string()),
        "kind": pa.array([m.kind for m in memories], pa.string()),
        "importance": pa.array([m.importance for m in memories], pa.float32()),
        "source": pa.array([m.source for m in memories], pa.string()),
        "last_accessed_at": pa.array([m.last_accessed_at for m in memories], pa.int64()),
        "recency_at": pa.array([max(m.created_at, m.last_accessed_at) for m in memories], pa.int64()),
        "terms": pa.array([lexical_terms(indexed_text(m.text, m.context)) for m in memories], pa.string()),
        "context": pa.array([m.context for m in memories], pa.string()),
        "related": pa.array([json.dumps(list(m.related)) if m.related else None for m in memories], pa.string()),
        "thread": pa.array([m.thread for m in memories], pa.string()),
        "position": pa.array([m.position for m in memories], pa.int64()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1]),
    })


def _memory(row: Mapping[str, Any], *, score: float | None = None, similarity: float | None = None) -> Memory:
    created = int(row.get("created_at") or 0)
    return Memory(
        id=str(row["id"]),
        text=str(row.get("text") or ""),
        kind=str(row.get("kind") or "fact"),
        # float32 in the table: round so 0.8 reads back as 0.8, not 0.800000011920929.
        importance=round(float(row.get("importance") or 0.0), 6),
        created_at=created,
        last_accessed_at=int(row.get("last_accessed_at") or created),
        source=str(row.get("source") or "manual"),
        score=score,
        similarity=similarity,
        context=None if row.get("context") is None else str(row["context"]),
        related=_related(row.get("related")),
        thread=None if row.get("thread") is None else str(row["thread"]),
        position=None if row.get("position") is None else int(row["position"]),
    )


def _related(raw: Any) -> tuple[str, ...]:
    """The ``related`` column's ids (a JSON list; null, or a row written before the column, is none)."""
    if not raw:
        return ()
    ids = json.loads(raw)
    return tuple(str(i) for i in ids) if isinstance(ids, list) else ()


def related_ids(raw: Any) -> tuple[str, ...]:
    """The ids a stored ``related`` value names (see :attr:`Memory.related`)."""
    return _related(raw)


@dataclass(frozen=True, slots=True)
class _LexicalView:
    """The scope as the store caches it, aligned row by row (shared with the cache, not copied):
    the vectors, the columns recall scores on, and one query's BM25 score of each row."""

    matrix: np.ndarray
    rows: pa.Table
    recency_ms: np.ndarray
    created_ms: np.ndarray
    importance: np.ndarray
    lexical: np.ndarray
    # The cached inverse norms and shadow of ``matrix`` (None when it is a subset of the entry's rows).
    inv_norms: np.ndarray | None = None
    shadow: RowShadow | None = None


def stored_terms(rows: pa.Table) -> list[str]:
    """The ``terms`` of ``rows``; rows written before that column existed are analysed now."""
    terms: list[str | None] = rows.column("terms").to_pylist()
    if None in terms:
        texts, contexts = rows.column("text").to_pylist(), rows.column("context").to_pylist()
        terms = [lexical_terms(indexed_text(str(texts[i]), contexts[i])) if t is None else t
                 for i, t in enumerate(terms)]
    return [str(t) for t in terms]


def entry_vectors(entry: CacheEntry) -> tuple[Sequence[str], np.ndarray]:
    """Ids and vectors of the memories of a cached scope that have a vector (every memory this
    module wrote), without copies when all have one (the ids are then read on demand)."""
    if entry.has_vector.all():
        matrix = entry.matrix.view()
        matrix.flags.writeable = False
        return _Ids(entry.scalars.column("id")), matrix
    keep = np.flatnonzero(entry.has_vector)
    ids = [str(v) for v in entry.scalars.column("id").take(pa.array(keep, pa.int64())).to_pylist()]
    return ids, np.ascontiguousarray(entry.matrix[keep])


def entry_memories(entry: CacheEntry, positions: Sequence[int]) -> list[Memory]:
    """The memories at ``positions`` of a cached scope, in :func:`entry_vectors` order, read from
    the cache (no I/O)."""
    if not len(positions):
        return []
    rows = np.asarray(positions, dtype=np.int64)
    if not entry.has_vector.all():
        rows = np.flatnonzero(entry.has_vector)[rows]
    return [_memory(r) for r in take_rows(entry.scalars, rows)]


def entry_retention(entry: CacheEntry, *, weights: Weights, now_ms: int) -> np.ndarray:
    """``weights.recency·recency + weights.extra·importance`` of each memory of a cached scope
    that has a vector (in :func:`entry_vectors` order), ranked as
    :meth:`MemoryRepo.retention_scores` ranks them (the store's scorer, similarity weight 0)."""
    keep = np.flatnonzero(entry.has_vector)
    scores = np.full(entry.n, -np.inf, dtype=np.float64)
    if len(keep):
        if weights.similarity != 0:
            raise ValueError("entry_retention: retention ignores similarity; use weights with similarity=0")
        top = rank(np.zeros(entry.matrix.shape[1], dtype=np.float32), entry.matrix, weights, k=len(keep),
                   metric="dot", now_ms=now_ms, mask=entry.has_vector, timestamps=entry.int64("recency_at"),
                   extra=entry.float32("importance"))
        scores[top.indices] = top.scores
    return scores[keep]


def storable(memories: Sequence[Memory]) -> list[int]:
    """Positions of the memories the repository writes: every text (and context) passes the
    built-in secret filter here, whoever the caller is (a defence in depth behind the policy)."""
    return [i for i, m in enumerate(memories)
            if not looks_like_secret(m.text) and not (m.context and looks_like_secret(m.context))]


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One row of the history table: ``memory`` (as it was) had ``action`` happen at ``at``."""

    memory: Memory
    action: str
    at: int
    reason: str | None = None
    successor_id: str | None = None
    # A duplicate's event records how the fact was said again, not the stored text.
    text: str | None = None


def _history_rows(events: Sequence[tuple[str, HistoryEvent]]) -> pa.Table:
    from mindcore.store import new_id

    at = pa.array([e.at for _, e in events], pa.int64())
    base = new_id()  # ids ordered as the events happened (a scan orders equal times by id)
    return pa.table({
        "namespace": pa.array([ns for ns, _ in events], pa.string()),
        "id": pa.array([f"{base}-{n:06d}" for n in range(len(events))], pa.string()),
        "created_at": at,
        "updated_at": at,
        "memory_id": pa.array([e.memory.id for _, e in events], pa.string()),
        "action": pa.array([e.action for _, e in events], pa.string()),
        "reason": pa.array([e.reason for _, e in events], pa.string()),
        "successor_id": pa.array([e.successor_id for _, e in events], pa.string()),
        "text": pa.array([e.memory.text if e.text is None else e.text for _, e in events], pa.string()),
        "kind": pa.array([e.memory.kind for _, e in events], pa.string()),
        "importance": pa.array([e.memory.importance for _, e in events], pa.float32()),
        "source": pa.array([e.memory.source for _, e in events], pa.string()),
        "context": pa.array([e.memory.context for _, e in events], pa.string()),
        "memory_created_at": pa.array([e.memory.created_at for _, e in events], pa.int64()),
        "thread": pa.array([e.memory.thread for _, e in events], pa.string()),
        "position": pa.array([e.memory.position for _, e in events], pa.int64()),
    })


class HistoryRepo:
    """The ``ltm_history`` table: what happened to the memories of every scope (same namespaces
    as ``ltm_memories``). Retired memories live here, whole, linked to their successor."""

    def __init__(self, store: Any) -> None:
        self.table: Table = store.table(HISTORY_TABLE, HISTORY_COLUMNS)

    def append(self, events: Sequence[tuple[str, HistoryEvent]]) -> dict[str, list[str]]:
        """Record ``(scope namespace, event)`` pairs, all in one commit; returns the event ids by namespace."""
        if not events:
            return {}
        rows = _history_rows(events)
        self.table.write_batch(rows)
        out: dict[str, list[str]] = defaultdict(list)
        for ns, event_id in zip(rows.column("namespace").to_pylist(), rows.column("id").to_pylist(), strict=True):
            out[str(ns)].append(str(event_id))
        return dict(out)

    def undo(self, appended: Mapping[str, Sequence[str]]) -> None:
        """Delete the events :meth:`append` just recorded (the write to the memories did not land)."""
        if appended:
            self.table.write_batch(pa.table({"namespace": pa.array([], pa.string())}), delete=appended)

    def events(self, namespace: str) -> list[dict[str, Any]]:
        """Every event of a scope, oldest first."""
        return self.table.scan(namespace, order_by="created_at")

    def state_events(self, namespace: str) -> list[dict[str, Any]]:
        """The events of a scope that changed whether a memory is live (``_history.STATE_ACTIONS``),
        oldest first, with only the columns that say so: what a check for a write that never
        landed reads (duplicates, the bulk of a long history, are skipped)."""
        return self.table.scan(namespace, col("action").is_in(list(STATE_ACTIONS)),
                               columns=["id", "memory_id", "action", "created_at"], order_by="created_at")

    def delete_events(self, namespace: str, event_ids: Sequence[str]) -> int:
        """Delete events by id, in one commit; how many there were."""
        if not event_ids:
            return 0
        return int(self.table.delete(namespace, ids=list(event_ids)).deleted)

    def delete_memories(self, namespace: str, memory_ids: Sequence[str], *, purge: bool = False) -> int:
        """Delete every event of these memories; how many there were. ``purge``: and leave none of
        their texts in any file of the store (see ``Table.purge``)."""
        if not memory_ids:
            if purge:
                self.table.purge()
            return 0
        where = col("memory_id").is_in(list(memory_ids))
        return int(self.table.delete(namespace, where=where, purge=purge).deleted)

    def clear(self, namespace: str, *, purge: bool = False) -> int:
        return int(self.table.clear(namespace, purge=purge).deleted)


def read_scope_history(store: Any, namespace: str) -> tuple[list[dict[str, Any]], set[str]]:
    """A scope's history events (oldest first) and which memories they speak of are live, read
    from the stored tables as they are (a read-only store, no embedder): what
    ``mindcore inspect --retired`` reads. Nothing is created or repaired."""
    names = set(store.table_names())
    if HISTORY_TABLE not in names:
        return [], set()
    events: list[Event] = store.open_table(HISTORY_TABLE).scan(namespace, order_by="created_at")
    ids = state_ids(events)
    live = {str(r["id"]) for r in store.open_table(TABLE).get(namespace, ids, columns=["id"])} \
        if ids and TABLE in names else set()
    return [dict(e) for e in events], live


class ScopesRepo:
    """The rows of many scopes of the ``ltm_memories`` table at once: the door of bulk writes
    (one scan to read the scopes, one commit to write them)."""

    def __init__(self, store: Any, *, embedder: Any) -> None:
        self.table: Table = store.table(TABLE, COLUMNS, vectors=True, embedder=embedder)

    def entries(self, namespaces: Sequence[str]) -> dict[str, CacheEntry]:
        """Each scope (a :func:`scope_key`) at the table's latest version, as the store caches it;
        those not cached are read by one scan."""
        self.table.refresh()  # a read-modify-write under the scopes' locks starts at the latest version
        return self.table.cached_many(namespaces)

    def write(self, writes: Mapping[str, tuple[Sequence[Memory], np.ndarray, Sequence[str]]]) -> set[str]:
        """For each scope, ``(memories, vectors, ids to delete)``: all of it in one commit; returns
        the ids written (a memory that looks like a credential is not, see :func:`storable`). A
        memory with the id of a stored one replaces it (how a last-access bump is written)."""
        memories: list[Memory] = []
        vectors: list[np.ndarray] = []
        namespaces: list[str] = []
        delete: dict[str, list[str]] = {}
        for ns, (new, matrix, victims) in writes.items():
            if len(new) != len(matrix):
                raise ValueError(f"{ns}: {len(new)} memories but {len(matrix)} vectors")
            keep = storable(new)
            memories += [new[i] for i in keep]
            vectors.append(matrix[keep])
            namespaces += [ns] * len(keep)
            if victims:
                delete[ns] = list(victims)
        if not memories and not delete:
            return set()
        dim = int(self.table.dim or 0)
        rows = _arrow(memories, np.concatenate(vectors) if memories else np.zeros((0, dim), np.float32))
        self.table.write_batch(rows.append_column("namespace", pa.array(namespaces, pa.string())), delete=delete)
        return {m.id for m in memories}


class MemoryRepo:
    """The rows of one scope in the ``ltm_memories`` table."""

    def __init__(self, store: Any, *, user_id: str, namespace: str, workspace_id: str | None, embedder: Any) -> None:
        self.table = store.table(TABLE, COLUMNS, vectors=True, embedder=embedder)
        self.ns = scope_key(user_id, namespace, workspace_id)
        # BM25 over the stored terms of the cached namespace `_indexed`, patched as the cache is.
        self._bm25: BM25Index = lexical_index()
        self._indexed: CacheEntry | None = None
        self._bm25_lock = threading.Lock()

    # -- reads ----------------------------------------------------------------------------------

    def search(self, vector: np.ndarray, *, k: int, weights: Weights, now_ms: int) -> list[Memory]:
        """Hybrid top-k over the scope (``Table.search`` over the store's vector cache), the
        extra term being importance and the age running from ``recency_at``."""
        hits = self.table.search(
            self.ns, vector, k=k, metric="cosine", weights=weights, time_column="recency_at", now_ms=now_ms,
            extra_column="importance", columns=_MEMORY_COLUMNS,
        )
        return [_memory(h.row | {"id": h.id}, score=h.score, similarity=h.similarity) for h in hits]

    def search_lexical(self, vector: np.ndarray, query: str, *, k: int, w_sim: float, w_rec: float,
                       w_importance: float, w_lexical: float, half_life_ms: float, now_ms: int,
                       neighbours: int = 0, neighbour_decay: float = 0.0, window: TimeWindow | None = None,
                       time_boost: float = 0.0) -> list[Memory]:
        """Hybrid top-k with lexical fusion: the extra term is ``w_importance·importance +
        w_lexical·bm25/max(max(bm25), LEXICAL_FLOOR)`` (BM25 over the scope's texts, scaled so the
        query's best match gets 1 unless even that match is weak), scored in one ``hybrid_topk``
        call over the cached vectors. With ``neighbours``, the memories up to that many places
        around a hit in its thread score at least ``neighbour_decay ** distance`` times the hit's
        (positive) score (see :func:`~mindcore.ltm._neighbours.with_neighbours`). With a ``window``,
        the memories created in it score ``s + time_boost·|s|`` first (see
        :func:`~mindcore.ltm._when.with_time_boost`)."""
        view = self._lexical_view(query if w_lexical > 0 else None)
        n = view.matrix.shape[0]
        if n == 0:
            return []
        if w_lexical > 0:
            lexical = view.lexical
            scale = max(float(lexical.max()), LEXICAL_FLOOR)
            extra = np.ascontiguousarray(w_importance * view.importance + (w_lexical / scale) * lexical,
                                         dtype=np.float32)
            weights = Weights(similarity=w_sim, recency=w_rec, extra=1.0, half_life_ms=half_life_ms)
        else:  # importance weighted in the kernel, as the store's search (and batch recall) weighs it
            extra = np.ascontiguousarray(view.importance, dtype=np.float32)
            weights = Weights(similarity=w_sim, recency=w_rec, extra=w_importance, half_life_ms=half_life_ms)
        top = rank(vector, view.matrix, weights, k=k, now_ms=now_ms, timestamps=view.recency_ms,
                   extra=extra, inv_norms=view.inv_norms, shadow=view.shadow if 8 * k <= n else None)
        indices, scores, similarities = top.indices, top.scores, top.similarities
        complete = len(indices) < k or len(indices) == n
        inside = dated(window, view.created_ms) if window is not None and time_boost > 0 else None
        if inside is not None and inside.any():
            top_dated = rank(vector, view.matrix, weights, k=k, now_ms=now_ms, timestamps=view.recency_ms,
                             extra=extra, inv_norms=view.inv_norms, mask=inside)
            indices, scores, similarities, complete = with_time_boost(
                (indices, scores, similarities), inside[indices],
                (top_dated.indices, top_dated.scores, top_dated.similarities),
                need=k, complete=complete, boost=time_boost)
        if neighbours > 0:
            def cosine(rows: np.ndarray) -> np.ndarray:
                return cosines(vector, view.matrix[rows])

            indices, scores, similarities = with_neighbours(
                view.rows, indices, scores, similarities, k=k, complete=complete, radius=neighbours,
                decay=neighbour_decay, similarity=cosine)
        names = view.rows.column_names
        rows = take_rows(view.rows.select([c for c in _MEMORY_COLUMNS if c in names]), indices)
        return [_memory(r, score=float(sc), similarity=float(si))
                for r, sc, si in zip(rows, scores, similarities, strict=True)]

    def _lexical_view(self, query: str | None) -> _LexicalView:
        """The scope's cached rows with a vector, and ``query``'s BM25 scores over them (zeros
        without a query: the BM25 index is then not read)."""
        if query is None:
            entry = self.table.cached(self.ns)
            lexical = np.zeros(entry.matrix.shape[0], dtype=np.float32)
        else:
            entry = self._indexed
            if entry is None or entry.version != int(self.table.version):
                entry = self.table.cached(self.ns)  # kept while current, even if the store's cache lets it go
            with self._bm25_lock:  # the index moves with the newest entry: score before another thread moves it
                self._follow(entry)
                lexical = self._bm25.scores(query)
        matrix, rows = entry.matrix, entry.scalars
        recency, importance = entry.int64("recency_at"), entry.float32("importance")
        created = entry.int64("created_at")
        if not entry.has_vector.all():  # rows whose vector was refused never match
            keep = np.flatnonzero(entry.has_vector)
            matrix, rows = matrix[keep], rows.take(pa.array(keep, pa.int64()))
            recency, importance, lexical, created = recency[keep], importance[keep], lexical[keep], created[keep]
            return _LexicalView(matrix=matrix, rows=rows, recency_ms=recency, created_ms=created,
                                importance=importance, lexical=lexical)
        try:
            inv: np.ndarray | None = entry.row_norms().inv
        except ValueError:  # a row that is not finite: the kernel reports it, as before
            inv = None
        return _LexicalView(matrix=matrix, rows=rows, recency_ms=recency, created_ms=created, importance=importance,
                            lexical=lexical, inv_norms=inv, shadow=entry.row_shadow() if inv is not None else None)

    def _follow(self, entry: CacheEntry) -> None:
        """Bring the BM25 index to ``entry``: patch it when this process's commits led from the
        indexed entry to ``entry`` (drop the rows that went, add the new ones), else rebuild it
        from the cached ``terms`` column. Neither rescans the table or re-analyses stored texts."""
        indexed = self._indexed
        if indexed is not None and indexed.serial == entry.serial:
            return
        changes = None if indexed is None else entry.changes_since(indexed.serial)
        self._indexed = None  # until the index matches an entry again
        if changes is None:
            self._bm25, start = lexical_index(), 0
        else:
            dropped, start = changes
            self._bm25.remove(dropped)
        self._bm25.add(stored_terms(entry.scalars.slice(start)), analyzed=True)
        self._indexed = entry

    def has_threads(self) -> bool:
        """Whether any memory of the scope has a thread (read from the cached scope)."""
        entry: CacheEntry = self.table.cached(self.ns)
        return has_threads(entry.scalars)

    def vectors(self) -> tuple[Sequence[str], np.ndarray]:
        """Ids and vectors of every memory of the scope, from the cached namespace without copies:
        the ids are read one by one on demand (a write needs only the few it matched), so the
        cost does not grow with the scope."""
        return entry_vectors(self.table.cached(self.ns))

    def entry(self) -> CacheEntry:
        """The scope as the store caches it, at the table's latest version."""
        entry: CacheEntry = self.table.cached(self.ns)
        return entry

    def get(self, ids: Sequence[str]) -> list[Memory]:
        return [_memory(r) for r in self.table.get(self.ns, list(ids), columns=_MEMORY_COLUMNS)] if ids else []

    def live_among(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are memories of the scope now (read from the cached scope: one
        vectorised membership test, no I/O while the cache is current)."""
        if not ids:
            return set()
        asked = pa.array(list(ids), pa.string())
        found = asked.filter(pc.is_in(asked, value_set=self.entry().scalars.column("id").cast(pa.string())))
        return {str(i) for i in found.to_pylist()}

    def all(self) -> list[Memory]:
        return [_memory(r) for r in self.table.scan(self.ns, columns=_MEMORY_COLUMNS, order_by="created_at")]

    def count(self) -> int:
        return int(self.table.count(self.ns))

    # -- writes ---------------------------------------------------------------------------------

    def retention_scores(self, n: int, *, weights: Weights, now_ms: int) -> dict[str, float]:
        """``weights.recency·recency + weights.extra·importance`` of the scope's ``n`` memories (one
        ranking pass of ``Table.search`` over the cached scope; ``weights.similarity`` must be 0)."""
        if n == 0:
            return {}
        if weights.similarity != 0:
            raise ValueError("retention_scores: retention ignores similarity; use weights with similarity=0")
        dim = int(self.table.dim or 0)
        hits = self.table.search(
            self.ns, np.zeros(dim, dtype=np.float32), k=n, metric="dot", weights=weights,
            time_column="recency_at", now_ms=now_ms, extra_column="importance", columns=["id"],
        )
        return {h.id: h.score for h in hits}

    @staticmethod
    def new_memory(row: NewMemory, memory_id: str | None = None) -> Memory:
        """The memory ``row`` becomes when written: ``memory_id``, else a fresh, time-ordered,
        collision-free id (bulk writes make theirs with ``store.new_ids``)."""
        return Memory(id=new_id() if memory_id is None else memory_id, text=row.text, kind=row.kind, importance=row.importance,
                      created_at=row.created_at, last_accessed_at=row.created_at, source=row.source,
                      context=row.context, related=row.related, thread=row.thread, position=row.position)

    def insert(self, rows: Sequence[NewMemory], vectors: np.ndarray) -> list[Memory | None]:
        """Insert ``rows`` in one commit: the stored memory for each, ``None`` where refused."""
        memories = [self.new_memory(r) for r in rows]
        written = self.write(memories, vectors)
        return [m if m.id in written else None for m in memories]

    def write(self, memories: Sequence[Memory], vectors: np.ndarray, *, delete: Sequence[str] = (),
              touch: Sequence[Memory] = ()) -> set[str]:
        """Insert ``memories``, delete the ids in ``delete`` and set the last access of the stored
        memories in ``touch`` to theirs, as one commit; returns the ids written. Every text (and
        context) passes the secret filter here, whoever the caller is: a memory that looks like a
        credential is not written."""
        if len(memories) != len(vectors):
            raise ValueError(f"{len(memories)} memories but {len(vectors)} vectors")
        keep = storable(memories)
        if not keep and not delete and not touch:
            return set()
        with self.table.unit_of_work(self.ns) as uow:
            if keep:
                uow.upsert(_arrow([memories[i] for i in keep], vectors[keep]))
            if delete:
                uow.delete(ids=list(delete))
            for m in touch:
                uow.update([m.id], {"last_accessed_at": m.last_accessed_at,
                                    "recency_at": max(m.created_at, m.last_accessed_at)})
        return {memories[i].id for i in keep}

    def touch(self, pending: Mapping[str, tuple[int, int]]) -> None:
        """Record last access: ``id -> (last_accessed_at, recency_at)``, all in one commit."""
        touch_rows(self.table, self.ns, pending)

    def delete(self, ids: Sequence[str], *, purge: bool = False) -> int:
        """Delete memories by id; ``purge``: and leave no deleted row (this one or any deleted
        before, such as retired versions) in any file of the table (see ``Table.purge``)."""
        if ids:
            return int(self.table.delete(self.ns, ids=list(ids), purge=purge).deleted)
        if purge:
            self.table.purge()
        return 0

    def clear(self, *, purge: bool = False) -> int:
        return int(self.table.clear(self.ns, purge=purge).deleted)
