"""The write path of a table: units of work, commits, and carrying commits into the vector cache.

Every write names one namespace and commits as one LanceDB version under the table's write lock
(``Store.lock(table_name)``): operations are replayed in order over the rows they touch, then
written with one ``merge_insert`` (or ``delete``), so a crash leaves all of them or none. A
commit by this process patches the cached namespace instead of dropping it, so the next search
after a write needs no scan.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mindcore.store.cache import CacheEntry, split_by_namespace
from mindcore.store.context import TableContext
from mindcore.store.filters import Filter, all_of, any_of, col, to_mask, to_where
from mindcore.store.ids import check_ids, check_namespace, new_id
from mindcore.store.locks import Lock
from mindcore.store.schema import Row, now_ms, rows_from_arrow, rows_to_arrow
from mindcore.store.versions import VersionTracker

__all__ = ["TableWrites", "UnitOfWork", "WriteResult"]


def _distinct(rows: pa.Table) -> bool:
    """Whether no two of ``rows`` share an id."""
    ids = rows.column("id")
    return len(ids) < 2 or int(pc.count_distinct(ids).as_py()) == len(ids)


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a commit did. ``version`` is the table version it created (unchanged if nothing was
    written)."""

    version: int
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


_Op = tuple[str, Any]


class UnitOfWork:
    """Writes to one namespace of one table that commit together as a single table version.

    Operations apply in the order they are made (a delete after an upsert removes the row; an
    upsert after a delete brings it back); :meth:`commit` (or leaving the ``with`` block without
    an exception) writes them in one LanceDB commit under the table's write lock, so after a
    crash at any point either all of them are stored or none. Leaving the block with an exception
    discards them.

    >>> import mindcore
    >>> t = mindcore.open("memory://").table("notes", {"text": pa.string()})
    >>> with t.unit_of_work("user-1") as uow:
    ...     uow.upsert([{"id": "a", "text": "hello"}, {"id": "b", "text": "bye"}])
    ...     uow.delete(ids=["b"])
    >>> [r["id"] for r in t.scan("user-1")]
    ['a']
    """

    def __init__(self, table: TableWrites, namespace: str) -> None:
        table._ctx.refuse_writes(f"write to table {table.name!r}")
        check_namespace(namespace)
        self.table = table
        self.namespace = namespace
        self._ops: list[_Op] = []
        self._done = False
        self.result: WriteResult | None = None

    def __len__(self) -> int:
        return len(self._ops)

    def _live(self) -> None:
        if self._done:
            raise RuntimeError("this unit of work has already been committed or discarded")

    def upsert(self, rows: Iterable[Mapping[str, Any]] | pa.Table) -> None:
        """Insert rows, or replace whole rows with the same ``id`` (columns left out are null;
        ``created_at``/``updated_at`` default to now)."""
        self._live()
        tbl = rows_to_arrow(rows, self.table._schema, self.namespace)  # validate now, at the call site
        self._ops.append(("upsert", tbl))

    def update(self, ids: Iterable[str], values: Mapping[str, Any]) -> None:
        """Set ``values`` on existing rows (ids with no row are ignored); ``updated_at`` becomes
        now unless given."""
        self._live()
        ids = check_ids(ids)
        if not isinstance(values, Mapping):
            raise TypeError(f"values: expected a dict of column -> value, got {type(values).__name__}")
        bad = set(values) & {"id", "namespace"}
        if bad:
            raise ValueError(f"values: {sorted(bad)} cannot be updated")
        probe = {"id": "_", **values}
        rows_to_arrow([probe], self.table._schema, self.namespace)  # type-check the values now
        self._ops.append(("update", (ids, dict(values))))

    def delete(self, *, ids: Iterable[str] | None = None, where: Filter | None = None) -> None:
        """Delete rows by id and/or by filter (both given: rows matching either)."""
        self._live()
        if ids is None and where is None:
            raise ValueError("delete: give ids= and/or where= (to delete a whole namespace use Table.clear)")
        if ids is not None:
            self._ops.append(("delete_ids", check_ids(ids)))
        if where is not None:
            to_where(self.namespace, where, self.table._schema)  # validate now
            self._ops.append(("delete_where", where))

    def clear(self) -> None:
        """Delete every row of the namespace."""
        self._live()
        self._ops.append(("delete_where", all_of()))

    def commit(self) -> WriteResult:
        """Write everything as one table version (a no-op when nothing is pending)."""
        self._live()
        self._done = True
        self.result = self.table._commit(self.namespace, self._ops)
        return self.result

    def discard(self) -> None:
        self._live()
        self._done = True
        self._ops.clear()

    def __enter__(self) -> UnitOfWork:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._done:
            return
        if et is None:
            self.commit()
        else:
            self.discard()

    async def __aenter__(self) -> UnitOfWork:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._done:
            return
        if et is None:
            await asyncio.to_thread(self.commit)
        else:
            self.discard()


class TableWrites:
    """The write half of :class:`~mindcore.store.Table`: every method here commits under the
    table's write lock and carries the commit into the store's vector cache."""

    # Provided by Table (the read half): declared here for the type checker.
    name: str
    _ctx: TableContext
    _tbl: Any
    _schema: pa.Schema
    _lock: Lock
    _versions: VersionTracker
    _state_lock: threading.Lock
    _count_cache: dict[str, tuple[int, int]]
    _writes: int

    if TYPE_CHECKING:

        @property
        def dim(self) -> int | None: ...

        def _version(self) -> int: ...

        def get(self, namespace: str, ids: Iterable[str], *, columns: Sequence[str] | None = None) -> list[Row]: ...

        def get_one(self, namespace: str, id: str) -> Row | None: ...

    def unit_of_work(self, namespace: str) -> UnitOfWork:
        """Start a :class:`UnitOfWork` on ``namespace`` (use it as a context manager)."""
        return UnitOfWork(self, namespace)

    def upsert(self, namespace: str, rows: Iterable[Mapping[str, Any]] | pa.Table) -> WriteResult:
        """Insert rows or replace whole rows with the same id, in one commit."""
        with self.unit_of_work(namespace) as uow:
            uow.upsert(rows)
        assert uow.result is not None
        return uow.result

    def update(self, namespace: str, ids: Iterable[str], values: Mapping[str, Any]) -> WriteResult:
        """Set ``values`` on the rows with these ids (read-modify-write under the lock)."""
        with self.unit_of_work(namespace) as uow:
            uow.update(ids, values)
        assert uow.result is not None
        return uow.result

    def delete(self, namespace: str, *, ids: Iterable[str] | None = None, where: Filter | None = None) -> WriteResult:
        """Delete rows of ``namespace`` by id and/or filter, in one commit."""
        with self.unit_of_work(namespace) as uow:
            uow.delete(ids=ids, where=where)
        assert uow.result is not None
        return uow.result

    def clear(self, namespace: str) -> WriteResult:
        """Delete every row of ``namespace``."""
        with self.unit_of_work(namespace) as uow:
            uow.clear()
        assert uow.result is not None
        return uow.result

    def insert_new(self, namespace: str, rows: Iterable[Mapping[str, Any]] | pa.Table) -> WriteResult:
        """Insert the rows whose id is not stored yet and leave existing rows untouched (an
        atomic insert-if-absent: of several processes inserting one id, exactly one wins)."""
        self._ctx.refuse_writes(f"write to table {self.name!r}")
        check_namespace(namespace)
        source = rows_to_arrow(rows, self._schema, namespace)
        if source.num_rows == 0:
            return WriteResult(self._version())
        with self._lock.hold(self._ctx.config.lock_timeout):
            schema = self._schema
            old = self._exact()
            if not schema.equals(self._schema):
                source = rows_to_arrow(rows_from_arrow(source), self._schema, namespace)
            r = self._tbl.merge_insert(["namespace", "id"]).when_not_matched_insert_all().execute(source, on_bad_vectors="null")
            res = WriteResult(int(r.version), inserted=int(r.num_inserted_rows))
            self._after_commit(old, res.version, {namespace})
        self._note_write()
        return res

    def write_batch(self, rows: pa.Table, *, delete: Mapping[str, Iterable[str]] | None = None) -> WriteResult:
        """Insert or replace ``rows`` of many namespaces and delete rows by id, all in one commit:
        the write of a bulk job (one table version for thousands of namespaces, not one each).

        ``rows`` is an Arrow table whose ``namespace`` column says where each row goes (rows with
        the namespace and id of a stored row replace it; of two rows with the same namespace and
        id the later wins); ``delete`` maps a namespace to the ids to delete there. A crash leaves
        all of it or none. Rows that are all new are appended (the cheapest commit); deletes or
        replacements take one ``merge_insert``. The cached entries of the namespaces written are
        dropped, not patched (a bulk write touches many namespaces once each: patching would copy
        every one of them), so the next read of one of them loads it again.

        >>> import mindcore
        >>> t = mindcore.open("memory://").table("notes", {"text": pa.string()})
        >>> _ = t.upsert("a", [{"id": "old", "text": "x"}])
        >>> _ = t.write_batch(pa.table({"namespace": ["a", "b"], "id": ["1", "1"], "text": ["y", "z"]}),
        ...                   delete={"a": ["old"]})
        >>> sorted(r["id"] for r in t.scan("a")), t.count("b")
        (['1'], 1)
        """
        self._ctx.refuse_writes(f"write to table {self.name!r}")
        if not isinstance(rows, pa.Table):
            raise TypeError(f"rows: expected a pyarrow Table with a 'namespace' column, got {type(rows).__name__}")
        if delete is not None and not isinstance(delete, Mapping):
            raise TypeError(f"delete: expected a mapping of namespace -> ids, got {type(delete).__name__}")
        deletes = {check_namespace(ns): check_ids(ids) for ns, ids in (delete or {}).items()}
        deletes = {ns: ids for ns, ids in deletes.items() if ids}
        source = rows_to_arrow(rows, self._schema, None) if rows.num_rows else None  # validate before the lock
        if source is None and not deletes:
            return WriteResult(self._version())
        with self._lock.hold(self._ctx.config.lock_timeout):
            schema = self._schema
            old = self._exact()
            if source is not None and not schema.equals(self._schema):
                source = rows_to_arrow(source, self._schema, None)  # another process added columns
            parts = {} if source is None else split_by_namespace(source)
            touched = set(parts) | set(deletes)
            cached = {ns: self._ctx.cache.get(self.name, ns, old) for ns in touched}
            replaced = {ns: None if cached[ns] is None else cached[ns].holding(part.column("id"))  # type: ignore[union-attr]
                        for ns, part in parts.items()}
            cond = None
            if deletes:
                cond = to_where(None, any_of(*(col("namespace").eq(ns) & col("id").is_in(ids)
                                               for ns, ids in deletes.items())), self._schema)
            if source is not None and cond is None and all(r is not None and not r.any() for r in replaced.values()):
                # Every row is new to its namespace (each cached entry is all of it at `old`, and
                # the lock keeps it so): an append stores what the merge would, without the join.
                added = self._tbl.add(source, on_bad_vectors="null")
                res = WriteResult(int(added.version), inserted=source.num_rows)
            elif source is not None:
                b = self._tbl.merge_insert(["namespace", "id"]).when_matched_update_all().when_not_matched_insert_all()
                if cond is not None:
                    b = b.when_not_matched_by_source_delete(cond)
                r = b.execute(source, on_bad_vectors="null")
                res = WriteResult(int(r.version), int(r.num_inserted_rows), int(r.num_updated_rows),
                                  int(r.num_deleted_rows))
            else:
                assert cond is not None
                d = self._tbl.delete(cond)
                res = WriteResult(int(d.version), deleted=int(getattr(d, "num_deleted_rows", 0) or 0))
            self._after_commit(old, res.version, touched)
        self._note_write()
        return res

    def modify(
        self, namespace: str, id: str, fn: Callable[[Row | None], Mapping[str, Any] | None]
    ) -> WriteResult:
        """Read-modify-write one row atomically across threads and processes.

        Under the table's write lock, reads the latest stored row (``None`` if absent), calls
        ``fn(row)`` and writes what it returns: a row (``id`` is set for you) replaces the stored
        one, ``None`` deletes it. An exception from ``fn`` propagates and nothing is written.

        >>> import mindcore
        >>> t = mindcore.open("memory://").table("counters", {"n": pa.int64()})
        >>> _ = t.modify("ns", "c", lambda row: {"n": (row["n"] if row else 0) + 1})
        >>> _ = t.modify("ns", "c", lambda row: {"n": (row["n"] if row else 0) + 1})
        >>> t.get_one("ns", "c")["n"]
        2
        """
        self._ctx.refuse_writes(f"write to table {self.name!r}")
        check_namespace(namespace)
        (id,) = check_ids([id])
        with self._lock.hold(self._ctx.config.lock_timeout):
            self._exact()
            new = fn(self.get_one(namespace, id))
            if new is None:
                ops: list[_Op] = [("delete_ids", [id])]
            else:
                if not isinstance(new, Mapping):
                    raise TypeError(f"modify: fn must return a row dict or None, got {type(new).__name__}")
                ops = [("upsert", rows_to_arrow([{**new, "id": id}], self._schema, namespace))]
            res = self._commit_locked(namespace, ops)
        self._note_write()
        return res

    def append(
        self,
        namespace: str,
        rows: Iterable[Mapping[str, Any]] | Callable[[], Iterable[Mapping[str, Any]]],
    ) -> WriteResult:
        """Append rows under fresh ids (:func:`new_id`), in one commit: the cheapest write.

        For append-only records (logs, inboxes, versioned documents). Rows must not carry an
        ``id``: fresh ones are assigned, so an append never collides with a stored row. ``rows``
        may be a function, called under the table's write lock after the table is brought to its
        latest version, so a writer can read-then-append atomically across processes (read the
        latest row inside it, append its successor).

        >>> import mindcore
        >>> t = mindcore.open("memory://").table("log", {"line": pa.string()})
        >>> _ = t.append("ns", [{"line": "first"}, {"line": "second"}])
        >>> t.count("ns")
        2
        """
        self._ctx.refuse_writes(f"write to table {self.name!r}")
        check_namespace(namespace)
        with self._lock.hold(self._ctx.config.lock_timeout):
            old = self._exact()
            given = list(rows() if callable(rows) else rows)
            if any(not isinstance(r, Mapping) for r in given):
                raise TypeError("append: rows must be dicts")
            if any("id" in r for r in given):
                raise ValueError("append: rows get fresh ids; do not pass 'id' (use upsert to replace rows)")
            if not given:
                return WriteResult(old)
            source = rows_to_arrow([{**r, "id": new_id()} for r in given], self._schema, namespace)
            cached = self._ctx.cache.get(self.name, namespace, old)
            added = self._tbl.add(source, on_bad_vectors="null")
            res = WriteResult(int(added.version), inserted=len(given))
            self._after_commit(old, res.version, {namespace})
            self._patch_cache(namespace, cached, source, None, old, res.version)
        self._note_write()
        return res

    def _commit(self, namespace: str, ops: list[_Op]) -> WriteResult:
        if not ops:
            return WriteResult(self._version())
        with self._lock.hold(self._ctx.config.lock_timeout):
            res = self._commit_locked(namespace, ops)
        self._note_write()
        return res

    def _exact(self) -> int:
        """The table at its latest version, for a writer holding the lock; the schema is re-read
        only when another process moved the table (reading it costs a round trip)."""
        before = self._versions.loaded
        version = self._versions.exact()
        if version != before:
            self._schema = self._tbl.schema
        return version

    def _commit_locked(self, namespace: str, ops: list[_Op]) -> WriteResult:
        old = self._exact()
        source, deletes = self._replay(namespace, ops)
        if source is None and deletes is None:
            return WriteResult(old)
        cached = self._ctx.cache.get(self.name, namespace, old)
        gone = None if cached is None or deletes is None else to_mask(deletes, cached.scalars)
        cond = None if deletes is None else to_where(namespace, deletes, self._schema)
        replaced = None if cached is None or source is None else cached.holding(source.column("id"))
        if source is not None and cond is None and replaced is not None and not replaced.any() and _distinct(source):
            # Every row is new to the namespace (the cached entry is all of it at `old`, and the
            # lock keeps it so): an append stores what the merge would, without the merge's join
            # against the table, whose cost grows with the table.
            added = self._tbl.add(source, on_bad_vectors="null")
            res = WriteResult(int(added.version), inserted=source.num_rows)
        elif source is not None:
            b = (
                self._tbl.merge_insert(["namespace", "id"])
                .when_matched_update_all()
                .when_not_matched_insert_all()
            )
            if cond is not None:
                b = b.when_not_matched_by_source_delete(cond)
            r = b.execute(source, on_bad_vectors="null")
            res = WriteResult(int(r.version), int(r.num_inserted_rows), int(r.num_updated_rows),
                              int(r.num_deleted_rows))
        else:
            assert cond is not None
            d = self._tbl.delete(cond)
            new_version = int(d.version)
            res = WriteResult(new_version, deleted=int(getattr(d, "num_deleted_rows", 0) or 0))
        self._after_commit(old, res.version, {namespace})
        self._patch_cache(namespace, cached, source, gone, old, res.version, replaced=replaced)
        return res

    def _patch_cache(
        self, namespace: str, cached: CacheEntry | None, source: pa.Table | None, gone: np.ndarray | None,
        old: int, new: int, *, replaced: np.ndarray | None = None,
    ) -> None:
        """Carry this process's commit into the cached namespace (read at ``old``) instead of
        dropping it: the next search after a write needs no scan. Only when the commit is the one
        version after ``old`` (we hold the lock, so nobody else wrote in between). ``replaced``:
        the cached rows whose id ``source`` holds, when already known."""
        if cached is None or new != old + 1:
            return
        entry = cached.patched(source, gone, new, self.dim or 0, replaced=replaced)
        if entry is not None:
            self._ctx.cache.put(self.name, namespace, entry)

    def _after_commit(self, old: int, new: int, touched: set[str] | None) -> None:
        self._versions.committed(new)
        self._ctx.cache.committed(self.name, touched, old, new)
        with self._state_lock:
            self._count_cache = {k: (new, n) for k, (v, n) in self._count_cache.items()
                                 if v == old and (touched is not None and k not in touched)}

    def _replay(self, namespace: str, ops: list[_Op]) -> tuple[pa.Table | None, Filter | None]:
        """Apply ``ops`` in order to the rows they touch; return the rows to merge and the
        condition for deleting untouched rows."""
        schema = self._schema
        if len(ops) == 1 and ops[0][0] == "upsert" and ops[0][1].schema.equals(schema):
            return ops[0][1], None  # plain upsert, validated against the current schema already
        update_ids = [i for kind, arg in ops if kind == "update" for i in arg[0]]
        state: dict[str, Row | None] = {}
        if update_ids:
            for r in self.get(namespace, update_ids):
                state[r["id"]] = r
        dirty: set[str] = set()
        filters: list[Filter] = []
        now = now_ms()
        for kind, arg in ops:
            if kind == "upsert":
                for r in rows_from_arrow(arg):
                    state[r["id"]] = r
                    dirty.add(r["id"])
            elif kind == "update":
                ids, values = arg
                for i in ids:
                    row = state.get(i)
                    if row is None:
                        continue
                    row.update(values)
                    if "updated_at" not in values:
                        row["updated_at"] = now
                    dirty.add(i)
            elif kind == "delete_ids":
                for i in arg:
                    state[i] = None
                    dirty.add(i)
            elif kind == "delete_where":
                live = [(i, r) for i, r in state.items() if r is not None]
                if live:
                    hit = to_mask(arg, rows_to_arrow([r for _, r in live], schema, namespace, now=now))
                    for (i, _), h in zip(live, hit, strict=True):
                        if h:
                            state[i] = None
                            dirty.add(i)
                filters.append(arg)
        rows = [state[i] for i in state if i in dirty and state[i] is not None]
        gone = [i for i in state if i in dirty and state[i] is None]
        source = rows_to_arrow([r for r in rows if r is not None], schema, namespace, now=now) if rows else None
        deletes = None
        if filters or gone:
            deletes = any_of(*filters, col("id").is_in(gone) if gone else None)
        return source, deletes

    def _note_write(self) -> None:
        cfg = self._ctx.config
        self._writes += 1
        if not cfg.compact_every or self._writes < cfg.compact_every:
            return
        due = cfg.compact_every
        if cfg.compact_amplification and self._writes < cfg.compact_max_writes:
            # Compaction rewrites the table: on big tables wait for more writes (count_rows
            # without a filter reads only metadata).
            due = max(due, int(self._tbl.count_rows()) // cfg.compact_amplification)
        if self._writes >= min(due, max(cfg.compact_max_writes, cfg.compact_every)):
            self._writes = 0
            self._ctx.schedule_maintenance(self.name)

    # -- async twins ----------------------------------------------------------------------------

    async def aupsert(self, namespace: str, rows: Iterable[Mapping[str, Any]] | pa.Table) -> WriteResult:
        return await asyncio.to_thread(self.upsert, namespace, rows)

    async def aupdate(self, namespace: str, ids: Iterable[str], values: Mapping[str, Any]) -> WriteResult:
        return await asyncio.to_thread(self.update, namespace, ids, values)

    async def aappend(
        self,
        namespace: str,
        rows: Iterable[Mapping[str, Any]] | Callable[[], Iterable[Mapping[str, Any]]],
    ) -> WriteResult:
        return await asyncio.to_thread(self.append, namespace, rows)

    async def amodify(
        self, namespace: str, id: str, fn: Callable[[Row | None], Mapping[str, Any] | None]
    ) -> WriteResult:
        return await asyncio.to_thread(self.modify, namespace, id, fn)

    async def adelete(
        self, namespace: str, *, ids: Iterable[str] | None = None, where: Filter | None = None
    ) -> WriteResult:
        return await asyncio.to_thread(lambda: self.delete(namespace, ids=ids, where=where))

    async def aclear(self, namespace: str) -> WriteResult:
        return await asyncio.to_thread(self.clear, namespace)
