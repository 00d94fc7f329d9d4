"""Rewriting a table's vectors for a new embedding model while readers keep using the old ones.

The store half of :func:`mindcore.batch.reembed` (which decides what to embed; this module only
moves rows). For each table a *shadow* table (``_mindcore_reembed_<table>``) receives the table's
rows with new vectors, chunk by chunk, each chunk one commit; readers and writers of the table
never see it. :meth:`Shadow.sync` makes the shadow match the table: a row is written again when any
of its stored columns (or whether it has a vector) differs, so rows written to the table meanwhile
are never lost, and a rerun after a crash continues where the last committed chunk stopped.
:meth:`Shadow.swap` holds the table's write lock, syncs what changed since, and overwrites the
table with the shadow in one LanceDB commit (a new version with the new vector column, labelled
with the model: :func:`mindcore.store.schema.vector_model`). Readers see the old version or the new
one, never a mix.

The plan of a re-embedding (its target model, phase and the tables switched) is a row of the
store's meta table, so any process can tell that one is under way and resume it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from mindcore.store.filters import col, to_where
from mindcore.store.schema import VECTOR, vector_dim, vector_model, with_vector_model

if TYPE_CHECKING:
    from mindcore.store.store import EmbeddingInfo, Store

__all__ = ["SHADOW_PREFIX", "Shadow", "VectorTexts", "clear_plan", "load_plan", "save_plan"]

SHADOW_PREFIX = "_mindcore_reembed_"
_PLAN_NS = "reembed"
_PLAN_ID = "plan"
_HAS_VECTOR = "_has_vector"
# Rows read from LanceDB per streamed batch.
_SCAN_BATCH = 4096


@dataclass(frozen=True, slots=True)
class VectorTexts:
    """How the vectors of a table were made: ``texts(rows)`` gives, for stored rows (an Arrow
    table of the table's columns), the text each row's vector embeds. Each capability exposes one
    for its vector table, so re-embedding knows what to embed without knowing the capability.

    >>> import pyarrow as pa
    >>> VectorTexts("notes", lambda rows: rows.column("text").to_pylist()).texts(pa.table({"text": ["hi"]}))
    ['hi']
    """

    table: str
    texts: Callable[[pa.Table], Sequence[str]]


# -- the plan --------------------------------------------------------------------------------------


def load_plan(store: Store) -> dict[str, Any] | None:
    """The plan of the re-embedding under way in ``store``, or ``None``."""
    meta = store._meta
    if meta is None:
        return None
    meta.refresh()
    row = meta.get_one(_PLAN_NS, _PLAN_ID)
    plan = None if row is None else row.get("metadata")
    return plan if isinstance(plan, dict) else None


def save_plan(store: Store, plan: dict[str, Any]) -> None:
    """Record ``plan`` (one commit)."""
    assert store._meta is not None
    store._meta.upsert(_PLAN_NS, [{"id": _PLAN_ID, "metadata": plan}])


def clear_plan(store: Store) -> None:
    """Forget the plan: the re-embedding is over."""
    if store._meta is not None:
        store._meta.delete(_PLAN_NS, ids=[_PLAN_ID])


# -- one table -------------------------------------------------------------------------------------


def _digest(row: dict[str, Any]) -> bytes:
    """A fingerprint of a row's stored values (its vector excepted), in column order (the table's
    and its shadow's are the same)."""
    return hashlib.blake2b(repr(tuple(row.values())).encode("utf-8", "surrogatepass"), digest_size=16).digest()


Key = tuple[str, str]
#: Gives source rows (every column, their old vectors included) their new vectors, in the
#: shadow's schema.
Fill = Callable[[pa.Table], pa.Table]


@dataclass(slots=True)
class SyncResult:
    """What one :meth:`Shadow.sync` wrote: rows embedded and written, rows deleted."""

    written: int = 0
    deleted: int = 0


class Shadow:
    """The shadow of table ``name`` for the model ``target``."""

    def __init__(self, store: Store, name: str, target: EmbeddingInfo) -> None:
        self.store = store
        self.name = name
        self.shadow_name = SHADOW_PREFIX + name
        self.target = target
        self._source: Any = store._db.open_table(name)  # our own LanceDB object: never a reader's
        self._shadow: Any = None

    # -- state ----------------------------------------------------------------------------------

    def source_schema(self) -> pa.Schema:
        self._source.checkout_latest()
        schema: pa.Schema = self._source.schema
        return schema

    def swapped(self) -> bool:
        """Whether the table already holds the target model's vectors (a swap committed)."""
        schema = self.source_schema()
        return vector_model(schema) == self.target.model_id and vector_dim(schema) == self.target.dim

    def rows(self) -> int:
        self._source.checkout_latest()
        return int(self._source.count_rows())

    def open(self) -> None:
        """Open the shadow, creating it (empty) if needed; a shadow whose columns no longer match
        the table's (a column was added meanwhile) is made again."""
        wanted = with_vector_model(self.source_schema(), self.target.model_id, self.target.dim)
        if self.shadow_name in self.store._all_tables():
            shadow = self.store._db.open_table(self.shadow_name)
            if shadow.schema.equals(wanted) and vector_model(shadow.schema) == self.target.model_id:
                self._shadow = shadow
                return
            self.store._db.drop_table(self.shadow_name)
        self._shadow = self.store._db.create_table(self.shadow_name, schema=wanted, exist_ok=False)

    @property
    def schema(self) -> pa.Schema:
        """The shadow's schema: the table's with the target's vector column."""
        assert self._shadow is not None
        schema: pa.Schema = self._shadow.schema
        return schema

    def drop(self) -> None:
        if self.shadow_name in self.store._all_tables():
            self.store._db.drop_table(self.shadow_name)

    # -- copying --------------------------------------------------------------------------------

    def _scan(self, table: Any, *, with_vector: bool) -> Iterator[pa.RecordBatch]:
        table.checkout_latest()
        names = [n for n in table.schema.names if n != VECTOR]
        select: dict[str, str] = {n: f"`{n}`" for n in names}
        select[_HAS_VECTOR] = f"`{VECTOR}` IS NOT NULL"
        if with_vector:
            select[VECTOR] = f"`{VECTOR}`"
        yield from table.search().select(select).limit(None).to_batches(_SCAN_BATCH)

    def _digests(self, table: Any) -> dict[Key, bytes]:
        out: dict[Key, bytes] = {}
        for batch in self._scan(table, with_vector=False):
            for r in batch.to_pylist():
                out[(r["namespace"], r["id"])] = _digest(r)
        return out

    def sync(self, fill: Fill, chunk_size: int, on_chunk: Callable[[int, int], None] | None = None) -> SyncResult:
        """Make the shadow hold every row of the table with its new vector: rows missing from
        the shadow or changed since they were copied are given new vectors by ``fill``, at most
        ``chunk_size`` per call, each chunk one commit; rows gone from the table are deleted.
        ``on_chunk(examined, written)`` reports progress after each chunk."""
        assert self._shadow is not None
        have = self._digests(self._shadow)
        seen: set[Key] = set()
        result = SyncResult()
        pending: list[pa.Table] = []
        pending_rows = 0
        examined = 0

        def flush() -> None:
            nonlocal pending, pending_rows
            if not pending_rows:
                return
            rows = pa.concat_tables(pending).drop_columns([_HAS_VECTOR])
            filled = fill(rows)
            keys = zip(filled.column("namespace").to_pylist(), filled.column("id").to_pylist(), strict=True)
            if any(k in have for k in keys):
                (self._shadow.merge_insert(["namespace", "id"]).when_matched_update_all()
                 .when_not_matched_insert_all().execute(filled, on_bad_vectors="null"))
            else:
                self._shadow.add(filled, on_bad_vectors="null")
            result.written += filled.num_rows
            pending, pending_rows = [], 0
            if on_chunk is not None:
                on_chunk(examined, result.written)

        for batch in self._scan(self._source, with_vector=True):
            plain = batch.drop_columns([VECTOR]).to_pylist()
            take: list[int] = []
            for i, r in enumerate(plain):
                key = (r["namespace"], r["id"])
                seen.add(key)
                if have.get(key) != _digest(r):
                    take.append(i)
            examined += batch.num_rows
            start = 0
            while start < len(take):
                room = chunk_size - pending_rows
                part = take[start:start + room]
                pending.append(pa.Table.from_batches([batch]).take(pa.array(part, pa.int64())))
                pending_rows += len(part)
                start += len(part)
                if pending_rows >= chunk_size:
                    flush()
            if not take and on_chunk is not None:
                on_chunk(examined, result.written)
        flush()
        gone = [k for k in have if k not in seen]
        result.deleted = self._delete(gone)
        return result

    def _delete(self, keys: Sequence[Key]) -> int:
        by_ns: dict[str, list[str]] = {}
        for ns, rid in keys:
            by_ns.setdefault(ns, []).append(rid)
        for ns, ids in sorted(by_ns.items()):
            for i in range(0, len(ids), 1000):
                self._shadow.delete(to_where(ns, col("id").is_in(ids[i:i + 1000]), self._shadow.schema))
        return len(keys)

    # -- the switch -----------------------------------------------------------------------------

    def swap(self, fill: Fill, chunk_size: int) -> SyncResult:
        """Under the table's write lock: bring the shadow up to date with what was written since
        the last sync, then overwrite the table with it in one commit, and rebuild the indexes the
        overwrite dropped. Returns what the last sync wrote."""
        from lancedb.index import BTree

        store = self.store
        with store._table_lock(self.name).hold(store.config.lock_timeout):
            if self.swapped():
                result = SyncResult()  # an earlier run committed the swap and stopped after it
            else:
                had_vector_index = any(VECTOR in ix.columns for ix in self._source.list_indices())
                result = self.sync(fill, chunk_size)
                self._shadow.checkout_latest()
                # Null vectors (rows that never had one) are what the store's writes pass as "null".
                self._source.add(self._shadow.search().limit(None).to_batches(_SCAN_BATCH), mode="overwrite",
                                 on_bad_vectors="null")
                if had_vector_index and int(self._source.count_rows()) > 0:
                    from mindcore.store.table import Table

                    # Through a handle of our own: the store's may belong to a reader of the old model.
                    Table(store._context, self.name, self._source, store._table_lock(self.name), None)\
                        .create_vector_index()
            if not any(list(ix.columns) == ["namespace"] for ix in self._source.list_indices()):
                self._source.create_index("namespace", config=BTree(), replace=False)
        return result
