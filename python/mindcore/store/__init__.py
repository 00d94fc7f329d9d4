"""mindcore.store: the storage layer every capability stores and recalls through (LanceDB).

Open a store, get a table per record kind, and read and write rows of one namespace at a time::

    import mindcore, pyarrow as pa
    from mindcore.embed import HashEmbedder
    from mindcore.store import col

    store = mindcore.open()                       # $MINDCORE_HOME or ./.mindcore
    store = mindcore.open("memory://scratch")     # throwaway, this process only
    store = mindcore.open("s3://bucket/memory", storage_options={...})   # shared by many machines
    store = mindcore.open(embedder=HashEmbedder())   # bind the store to an embedding model

    beliefs = store.table("mind_entries", {"type": pa.string(), "content": pa.string(),
                                           "confidence": pa.float32()}, vectors=True)
    ns = "mind/research-agent"
    beliefs.upsert(ns, [{"id": "b1", "type": "belief", "content": "...", "vector": v, "tags": ["ops"]}])
    beliefs.get(ns, ["b1"])                                   # -> [row dict]
    beliefs.scan(ns, col("type").eq("goal"), order_by="created_at")
    beliefs.count(ns, col("tags").contains_all(["ops"]))
    hits = beliefs.search(ns, "query text", k=5, w_sim=0.6, w_rec=0.2, w_extra=0.2,
                          tau_ms=30 * 86_400_000, extra_column="confidence",
                          where=col("type").is_in(["belief", "reflection"]))
    with beliefs.unit_of_work(ns) as uow:                     # one commit: all or nothing
        uow.upsert([...]); uow.update(["g1"], {"status": "completed"}); uow.delete(ids=["b7"])

**Tables.** ``Store.table(name, columns, *, vectors=False, embedder=None) -> Table`` creates or
opens a table with the standard columns ``id`` (string), ``namespace`` (string, BTree-indexed),
``created_at``/``updated_at`` (int64 unix ms, default now), ``tags`` (list<string>, default
``[]``), ``metadata`` (any JSON value) and, with ``vectors=True``, ``vector``
(fixed_size_list<float32>[dim]); then the kind's own ``columns`` (name -> pyarrow type, all
nullable). Opening a stored table adds the columns it lacks as nullable columns and keeps the
ones it has, so old stores keep opening. Rows are plain dicts; ``(namespace, id)`` is the key.

**Namespaces.** Every read and write names one namespace (reads may pass ``ALL_NAMESPACES``).

**Filters.** :func:`col` builds conditions (``eq ne lt le gt ge between is_in is_null
is_not_null starts_with contains_all contains_any``) combined with ``& | ~``, :func:`all_of`,
:func:`any_of`. No method takes a where string: :func:`to_where` is the single place where
column names are checked against the schema and values are type-checked and escaped.

**Writes.** ``upsert`` (whole rows), ``update`` (set columns on existing rows), ``delete`` (ids
and/or filter), ``clear``, ``insert_new`` (insert-if-absent), and ``unit_of_work(ns)`` for
several of them in one commit (one LanceDB ``add`` when every row is new, else one
``merge_insert``: a crash leaves all or none). Each commit holds the table's write lock
(``flock`` locally, a lease object on object storage), so two processes can never insert the
same id twice. Threads of one process writing a table at once share commits (group commit):
each call returns once the commit holding its rows has completed. After ``StoreConfig.compact_every`` writes the
table is compacted in the background: only its small fragments are merged, in tiers, so the cost of a compaction does
not grow with the table (``mindcore.store.compaction``), and only the commit of the merge holds the write lock. Old
versions are kept for ``StoreConfig.cleanup_grace`` (10 s), which spares most reads in other processes a second
read (a read whose version's files are gone reads the latest version instead); once the grace has passed,
maintenance runs again by itself to delete them, and a merge that concurrent writes kept conflicting with is run
again, so a table's files converge once its writes stop.

**Erasing for good.** A delete hides rows at once, but their values stay in the table's files
(old versions, and data files whose other rows live on) until compaction and the grace period
remove them. ``delete(..., purge=True)``, ``clear(ns, purge=True)`` and ``table.purge()`` erase
them at once: when they return, no file of the table, on a folder or on object storage, holds a
deleted row. Readers in other processes that were on an older version re-open the latest one.

**What a store holds.** ``store.stats()`` (every table's rows per namespace, versions kept,
sizes on disk, the recorded embedding models) and ``table.stats()`` read without writing;
``store.open_table(name)`` opens a stored table as it is, for tools that handle any table.

**Read-only stores and locks.** ``mindcore.open(path, read_only=True)`` reads an existing store
and writes nothing: every write raises :class:`StoreNotWritableError` naming the store.
``store.check_writable()`` raises it early for a store this process cannot write (capabilities
call it when they open to write). ``store.lock(name).hold()`` is a named lock shared by every
thread and process using the store, for read-modify-write sequences.

**Consistency.** Every read of a local store sees every committed write, from any process: the
table's latest version is probed from its version files (two ``stat`` calls) and the table
reloaded only when it moved. Object storage checks at most every
``StoreConfig.read_consistency`` (default 1 s).

**Search.** ``Table.search(namespace, query, *, k, metric, w_sim, w_rec, w_extra, time_column,
half_life_ms | tau_ms, now_ms, extra_column, where, min_score)`` (or ``weights=Weights(...)``)
scores ``w_sim*similarity + w_rec*decay(age) + w_extra*extra`` over an in-memory copy of the
namespace (numpy views of Arrow buffers, invalidated by table version). Namespaces of
``StoreConfig.ann_threshold`` rows or more use the table's IVF_HNSW_SQ index for candidates
instead. ``Table.vectors(namespace)`` hands the cached matrix to other kernels (near-duplicate
checks).

**Scoring.** :func:`rank` is the one scorer every recall uses (``Table.search``, the mind, long-term
memory): a query vector against a namespace's vectors under a :class:`Weights` (similarity,
recency with a half-life or time constant, and a per-row ``extra`` the caller computes:
importance, confidence, a lexical score), with an optional row mask, in one Rust pass::

    from mindcore.store import Weights, rank
    top = rank(query_vec, vectors, Weights(similarity=0.6, recency=0.2, extra=0.2, tau_ms=30 * 86_400_000),
               k=5, timestamps=created_ms, extra=confidence, mask=not_expired)
    top.indices, top.scores, top.similarities     # best first, real matches only

**Embedders.** A store records the model id and dimension of its embedder, and each vector table
its own; opening either with another model or dimension raises :class:`EmbedderMismatchError`
naming both. ``mindcore.batch.reembed`` moves a store to another model; a table it rewrote names
the model in its ``vector`` field, and a handle still bound to the old model raises
:class:`EmbedderMismatchError` at its next use.

**Capabilities.** ``Mind``, ``WorkingMemory`` and ``LongTermMemory`` take a ``Store`` or anything
``open`` takes as their first argument; :func:`resolve_store` is that rule (and refuses, when a
writer opens, a store it cannot write to).

**Async.** Every I/O method has an ``a``-prefixed twin (``aupsert``, ``asearch``, ...), and
``mindcore.store.aopen``; units of work also work with ``async with``.
"""

from __future__ import annotations

import warnings
from typing import Any

# First of mindcore's imports, so before any of them can import lance or lancedb: importing it
# sets their log levels (Lance and LanceDB stay off stderr unless the user asks, see the module).
from mindcore.store import _lance_logs  # noqa: F401
from mindcore.store.compaction import CompactionResult
from mindcore.store.config import StoreConfig
from mindcore.store.errors import (
    EmbedderMismatchError,
    LockTimeoutError,
    SchemaError,
    StoreError,
    StoreNotWritableError,
)
from mindcore.store.filters import Col, Filter, all_of, any_of, col, to_mask, to_where
from mindcore.store.ids import new_id, new_id_array, new_ids
from mindcore.store.resolve import StoreLike, resolve_store
from mindcore.store.schema import RESERVED, Row, now_ms
from mindcore.store.scoring import Weights, rank
from mindcore.store.stats import StoreStats, TableStats
from mindcore.store.store import EmbeddingInfo, Store, aopen, open
from mindcore.store.table import ALL_NAMESPACES, Hit, Table, UnitOfWork, WriteResult

__all__ = [
    "ALL_NAMESPACES",
    "RESERVED",
    "Col",
    "CompactionResult",
    "EmbedderMismatchError",
    "EmbeddingInfo",
    "Filter",
    "Hit",
    "LockTimeoutError",
    "Row",
    "SchemaError",
    "Store",
    "StoreConfig",
    "StoreError",
    "StoreLike",
    "StoreNotWritableError",
    "StoreStats",
    "Table",
    "TableStats",
    "UnitOfWork",
    "Weights",
    "WriteResult",
    "all_of",
    "any_of",
    "aopen",
    "col",
    "new_id",
    "new_id_array",
    "new_ids",
    "now_ms",
    "open",
    "rank",
    "resolve_store",
    "to_mask",
    "to_where",
]


def __getattr__(name: str) -> Any:
    if name == "EmbedderLike":
        warnings.warn("mindcore.store.EmbedderLike is deprecated; use mindcore.embed.Embedder",
                      DeprecationWarning, stacklevel=2)
        from mindcore.embed import Embedder

        return Embedder
    raise AttributeError(f"module 'mindcore.store' has no attribute {name!r}")
