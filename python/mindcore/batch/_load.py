"""Loading long-term memory scopes for batch recall: many scopes per LanceDB scan, a bounded
number of rows at a time.

The rows of the scopes asked for are read by one scan of ``ltm_memories`` filtered on the
(scalar-indexed) ``namespace`` column, then grouped by scope, each scope keeping the order the
table returns its rows in: the order the store's vector cache holds them in, so ties between
equal scores go to the same memory as in ``LongTermMemory.recall``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from mindcore.embed import Embedder
from mindcore.errors import InvalidInputError
from mindcore.ltm._repo import COLUMNS, TABLE, stored_terms
from mindcore.store import ALL_NAMESPACES, Store, Table, col, resolve_store
from mindcore.store import open as open_store_at
from mindcore.store.cache import CacheEntry
from mindcore.store.schema import VECTOR

__all__ = ["MAX_SCOPES_PER_SCAN", "Scopes", "count_rows", "load_scopes", "memory_table", "open_store", "plan_loads"]

#: At most this many scopes are named in one scan's filter (a SQL ``IN`` list): measured on 1k users x 500
#: rows, scans of 100-200 scopes read fastest; one of 500 took twice as long per row.
MAX_SCOPES_PER_SCAN = 200
# What scoring and the result read of each memory (every name is a column of the ltm table).
_LOAD = ["namespace", "id", "created_at", *(c for c in COLUMNS if c not in ("source", "last_accessed_at")), VECTOR]


def open_store(store: Any, *, storage_options: Mapping[str, str] | None, writes: bool) -> tuple[Store, bool]:
    """The store to read (``True`` when opened here, so the caller closes it). A path or URI is
    opened read-only unless ``writes``."""
    if storage_options is None:
        resolved = resolve_store(store, writes=writes)
        return resolved, resolved is not store
    if not isinstance(store, str | os.PathLike):
        raise InvalidInputError("storage_options: only used with a store given as a URI, not an open Store")
    in_memory = str(store).startswith("memory://")
    opened = open_store_at(store, storage_options=storage_options, read_only=not writes and not in_memory)
    if writes:
        try:
            opened.check_writable()
        except BaseException:
            opened.close()
            raise
    return opened, True


def memory_table(store: Store, embedder: Embedder | None) -> Table | None:
    """The ``ltm_memories`` table, or ``None`` when the store has none (no memories anywhere).
    With an embedder, a table built with another model or dimension raises
    :class:`~mindcore.errors.EmbedderMismatchError`."""
    if TABLE not in store.table_names():
        return None
    if embedder is None:
        return store.open_table(TABLE)
    return store.table(TABLE, COLUMNS, vectors=True, embedder=embedder)


def count_rows(table: Table, keys: Sequence[str]) -> dict[str, int]:
    """How many rows each of the scopes ``keys`` holds (scopes with none are left out)."""
    counts: dict[str, int] = {}
    for start in range(0, len(keys), MAX_SCOPES_PER_SCAN):
        part = list(keys[start:start + MAX_SCOPES_PER_SCAN])
        names = table.scan_arrow(ALL_NAMESPACES, col("namespace").is_in(part), columns=["namespace"])
        found: Any = pc.value_counts(names.column("namespace"))
        counts.update(zip(found.field("values").to_pylist(), found.field("counts").to_pylist(), strict=True))
    return counts


def plan_loads(keys: Sequence[str], counts: Mapping[str, int], max_rows: int) -> list[list[str]]:
    """``keys`` (the scopes that hold rows) cut into runs loaded together: at most ``max_rows``
    rows and :data:`MAX_SCOPES_PER_SCAN` scopes a run; a scope larger than ``max_rows`` is a run
    of its own (a scope is never split)."""
    runs: list[list[str]] = []
    run: list[str] = []
    rows = 0
    for key in keys:
        n = counts.get(key, 0)
        if n == 0:
            continue
        if run and (rows + n > max_rows or len(run) >= MAX_SCOPES_PER_SCAN):
            runs.append(run)
            run, rows = [], 0
        run.append(key)
        rows += n
    if run:
        runs.append(run)
    return runs


@dataclass(frozen=True, slots=True)
class Scopes:
    """The rows of several scopes, scope after scope (scope ``g`` is rows
    ``offsets[g]:offsets[g+1]``), each in the table's order."""

    keys: list[str]
    offsets: NDArray[np.int64]
    matrix: NDArray[np.float32]
    has_vector: NDArray[np.bool_]
    recency: NDArray[np.int64]
    importance: NDArray[np.float32]
    created: NDArray[np.int64]
    terms: pa.Array[Any]  # strings, no nulls (rows stored before the column existed are analysed here)
    ids: pa.Array[Any]
    texts: pa.Array[Any]
    kinds: pa.Array[Any]
    threads: pa.Table  # thread, position and created_at: what recall's neighbours are found by


def load_scopes(table: Table, keys: Sequence[str]) -> Scopes:
    """The rows of the scopes ``keys``, read by one scan (scopes without rows are left out;
    ``Scopes.keys`` says which scope is which group)."""
    data = table.scan_arrow(ALL_NAMESPACES, col("namespace").is_in(keys), columns=_LOAD)
    # The cache's own conversion: the same matrix (zeros where a vector is missing) and columns.
    entry = CacheEntry.from_arrow(data, -1, table.dim or 0)
    code = np.asarray(pc.index_in(entry.scalars.column("namespace"), value_set=pa.array(keys, pa.string()))
                      .to_numpy(zero_copy_only=False), dtype=np.int64)
    starts = np.flatnonzero(np.diff(code, prepend=-1))
    if len(starts) == len(np.unique(code)):
        # Each scope's rows are together already (written scope by scope): number the scopes in
        # the order they come and use the rows where they are, without copying them.
        keys = [keys[int(c)] for c in code[starts]]
        sizes = np.diff(np.append(starts, len(code)))
    else:
        order = np.argsort(code, kind="stable")  # stable: each scope keeps the table's row order
        entry = CacheEntry(-1, entry.scalars.take(pa.array(order, pa.int64())), entry.matrix[order],
                           entry.has_vector[order], 0)
        sizes = np.bincount(code, minlength=len(keys))
        present = sizes > 0
        keys, sizes = [k for k, p in zip(keys, present.tolist(), strict=True) if p], sizes[present]
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    scalars = entry.scalars
    return Scopes(
        keys=list(keys), offsets=offsets, matrix=entry.matrix, has_vector=entry.has_vector,
        recency=entry.int64("recency_at"), importance=entry.float32("importance"),
        created=entry.int64("created_at"), terms=_terms(scalars),
        ids=scalars.column("id").combine_chunks(),
        texts=_filled(scalars.column("text"), ""),
        kinds=_kinds(scalars.column("kind")),
        threads=_threads(scalars, entry.has_vector),
    )


def _threads(scalars: pa.Table, has_vector: NDArray[np.bool_]) -> pa.Table:
    """What recall's neighbours are found by: ``thread``, ``position`` and ``created_at``, a row
    without a vector having no thread (recall never ranks it, so it is nobody's neighbour, as in
    ``LongTermMemory.recall``)."""
    present = [c for c in ("thread", "position", "created_at") if c in scalars.column_names]
    threads = scalars.select(present)
    if "thread" in present and not has_vector.all():
        column: Any = pc.if_else(pa.array(has_vector), threads.column("thread"), pa.scalar(None, pa.string()))
        threads = threads.set_column(present.index("thread"), "thread", column)
    return threads


def _terms(scalars: pa.Table) -> pa.Array[Any]:
    """The stored BM25 terms of every row, as one string array (read in place when complete)."""
    column = scalars.column("terms")
    if column.null_count:
        return pa.array(stored_terms(scalars), pa.string())
    return column.combine_chunks()


def _filled(column: pa.ChunkedArray[Any], value: str) -> pa.Array[Any]:
    """``column`` as one array, nulls replaced by ``value``."""
    filled: Any = pc.fill_null(column, pa.scalar(value, pa.string()))
    return filled.combine_chunks()  # type: ignore[no-any-return]


def _kinds(column: pa.ChunkedArray[Any]) -> pa.Array[Any]:
    """The ``kind`` column as recall reports it: a missing or empty kind reads as ``"fact"``."""
    kinds = _filled(column, "fact")
    fact = pa.scalar("fact", pa.string())
    out: Any = pc.if_else(pc.equal(kinds, pa.scalar("", pa.string())), fact, kinds)
    return out  # type: ignore[no-any-return]
