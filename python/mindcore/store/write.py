"""The write path of a table: units of work, commits, and carrying commits into the vector cache.

Every write names one namespace and commits as one LanceDB version under the table's write lock
(``Store.lock(table_name)``): operations are replayed in order over the rows they touch, then
written with one ``add`` (when every row is new), ``merge_insert`` or ``delete``, so a crash
leaves all of them or none. A commit by this process patches the cached namespace instead of
dropping it, so the next search after a write needs no scan.

Threads of one process writing the same table at once share commits (group commit): the first
writer to find no commit under way leads; it takes the write lock and commits what every waiting
writer has queued as one LanceDB version, then hands over. Each writer returns once the commit
holding its rows has completed (or raises what made that commit fail). Rows are validated before
they are queued, so a bad row fails its own writer only. A writer whose unit of work deletes, or
that touches an id another queued writer touches, commits in a group of its own, so every
writer's result reads as if it had committed alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mindcore.store.cache import CacheEntry, split_by_namespace
from mindcore.store.census import Census
from mindcore.store.context import TableContext
from mindcore.store.errors import EmbedderMismatchError
from mindcore.store.filters import Filter, all_of, any_of, col, to_mask, to_where
from mindcore.store.ids import check_ids, check_namespace, new_id_array, new_ids
from mindcore.store.locks import Lock
from mindcore.store.schema import Row, now_ms, rows_from_arrow, rows_to_arrow
from mindcore.store.versions import VersionTracker
from mindcore.validation import check_bool

__all__ = ["GroupCommit", "TableWrites", "UnitOfWork", "WriteResult"]


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
# Ids at most a probe for stored rows names in its filter (see TableWrites._stored_counts).
_PROBE_IDS = 4096


@dataclass(slots=True, eq=False)
class _Request:
    """One writer's operations on one namespace, queued for a group commit."""

    namespace: str
    ops: list[_Op]
    #: The ids the operations write; ``None`` when they delete (then they commit alone).
    keys: frozenset[str] | None
    #: The rows carry fresh ids (``Table.append``): they cannot replace a stored row.
    fresh: bool = False
    result: WriteResult | None = None
    error: BaseException | None = None
    done: bool = False


def _keys(ops: Sequence[_Op]) -> frozenset[str] | None:
    out: set[str] = set()
    for kind, arg in ops:
        if kind == "upsert":
            out.update(arg.column("id").to_pylist())
        elif kind == "update":
            out.update(arg[0])
        else:
            return None
    return frozenset(out)


class GroupCommit:
    """The writers of one table in this process waiting for a commit, and whether one of them
    is committing (leading). ``commits`` counts the LanceDB commits the leaders made."""

    #: At most this many writers share one commit (bounds the rows one commit carries).
    MAX_GROUP = 256

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.queue: deque[_Request] = deque()
        self.leading = False
        self.commits = 0

    def take(self) -> list[_Request]:
        """The next group, oldest writer first (the caller holds ``cond``): writers whose ids
        do not overlap, stopping before one that deletes or overlaps (it leads the next group)."""
        first = self.queue.popleft()
        group = [first]
        if first.keys is None:
            return group
        seen = {(first.namespace, k) for k in first.keys}
        while self.queue and len(group) < self.MAX_GROUP:
            nxt = self.queue[0]
            if nxt.keys is None:
                break
            keys = {(nxt.namespace, k) for k in nxt.keys}
            if not seen.isdisjoint(keys):
                break
            group.append(self.queue.popleft())
            seen |= keys
        return group


@dataclass(slots=True)
class _Part:
    """What one commit writes to one namespace for one writer (or for a bulk write)."""

    namespace: str
    source: pa.Table | None
    deletes: Filter | None = None
    #: The rows carry fresh ids: none of them is stored yet.
    fresh: bool = False


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
    _census: Census | None
    _census_lock: threading.Lock
    _writes: int
    _retired: str | None
    _group: GroupCommit

    if TYPE_CHECKING:

        def _adopt(self, schema: pa.Schema) -> None: ...

        @property
        def dim(self) -> int | None: ...

        def _version(self) -> int: ...

        def _surely_empty(self, namespaces: Iterable[str], version: int) -> bool: ...

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

    def delete(
        self, namespace: str, *, ids: Iterable[str] | None = None, where: Filter | None = None, purge: bool = False
    ) -> WriteResult:
        """Delete rows of ``namespace`` by id and/or filter, in one commit.

        A plain delete leaves the deleted values in the table's files until compaction has
        rewritten them and the old versions have outlived ``StoreConfig.cleanup_grace``.
        ``purge=True`` then runs :meth:`~mindcore.store.Table.purge` under the same hold of the
        write lock: when it returns, no file of the table holds the deleted rows.
        """
        uow = self.unit_of_work(namespace)
        uow.delete(ids=ids, where=where)
        return self._commit_uow(uow, purge)

    def clear(self, namespace: str, *, purge: bool = False) -> WriteResult:
        """Delete every row of ``namespace`` (``purge``: as :meth:`delete`)."""
        uow = self.unit_of_work(namespace)
        uow.clear()
        return self._commit_uow(uow, purge)

    def _commit_uow(self, uow: UnitOfWork, purge: bool) -> WriteResult:
        check_bool(purge, "purge")
        uow._live()
        uow._done = True
        uow.result = self._commit(uow.namespace, uow._ops, purge=purge)
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

    def write_batch(
        self,
        rows: pa.Table | Mapping[str, Iterable[Mapping[str, Any]]],
        *,
        delete: Mapping[str, Iterable[str]] | None = None,
    ) -> WriteResult:
        """Insert or replace ``rows`` of many namespaces and delete rows by id, all in one commit:
        the write of a bulk job (one table version for thousands of namespaces, not one each).

        ``rows`` is an Arrow table whose ``namespace`` column says where each row goes, or a mapping
        of namespace -> row dicts (rows with the namespace and id of a stored row replace it; of two
        rows with the same namespace and id the later wins); ``delete`` maps a namespace to the ids to delete there. A crash leaves
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
        >>> _ = t.write_batch({"b": [{"id": "2", "text": "w"}], "c": [{"id": "1", "text": "v"}]})
        >>> t.count("b"), t.count("c")
        (2, 1)
        """
        self._ctx.refuse_writes(f"write to table {self.name!r}")
        if isinstance(rows, Mapping):
            rows = _by_namespace_to_arrow(rows, self._schema)
        if not isinstance(rows, pa.Table):
            raise TypeError(
                f"rows: expected a pyarrow Table with a 'namespace' column or a mapping of namespace -> rows, "
                f"got {type(rows).__name__}"
            )
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
            parts = {ns: _Part(ns, part) for ns, part in ({} if source is None else split_by_namespace(source)).items()}
            for ns, ids in deletes.items():
                parts.setdefault(ns, _Part(ns, None)).deletes = col("id").is_in(ids)
            res, _ = self._commit_parts(old, list(parts.values()), patch=False)
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
        rows: Iterable[Mapping[str, Any]] | pa.Table | Callable[[], Iterable[Mapping[str, Any]] | pa.Table],
    ) -> WriteResult:
        """Append rows under fresh ids (:func:`new_id`), in one commit: the cheapest write.

        For append-only records (logs, inboxes, versioned documents). Rows (dicts, or an Arrow
        table, checked column by column) must not carry an ``id``: fresh ones are assigned, so an
        append never collides with a stored row. ``rows`` may be a function, called under the
        table's write lock after the table is brought to its latest version, so a writer can
        read-then-append atomically across processes (read the latest row inside it, append its
        successor). Appends of given rows by several threads at once share one commit.

        >>> import mindcore
        >>> t = mindcore.open("memory://").table("log", {"line": pa.string()})
        >>> _ = t.append("ns", [{"line": "first"}, {"line": "second"}])
        >>> t.count("ns")
        2
        """
        self._ctx.refuse_writes(f"write to table {self.name!r}")
        check_namespace(namespace)
        if not callable(rows):
            source = self._fresh_rows(namespace, rows)
            if source is None:
                return WriteResult(self._version())
            return self._submit(_Request(namespace, [("upsert", source)], frozenset(), fresh=True))
        with self._lock.hold(self._ctx.config.lock_timeout):
            old = self._exact()
            source = self._fresh_rows(namespace, rows())
            if source is None:
                return WriteResult(old)
            res, _ = self._commit_parts(old, [_Part(namespace, source, fresh=True)])
        self._note_write()
        return res

    def append_many(self, rows: Mapping[str, pa.Table]) -> WriteResult:
        """:meth:`append` of rows (Arrow tables, no ``id``) to several namespaces in one commit,
        all or none; the cached namespaces are patched, as after :meth:`append`. For a writer
        that gathered appends to many namespaces under locks of its own (a group commit)."""
        self._ctx.refuse_writes(f"write to table {self.name!r}")
        sources = {check_namespace(ns): self._fresh_rows(ns, part) for ns, part in rows.items()}
        given = {ns: source for ns, source in sources.items() if source is not None}
        if not given:
            return WriteResult(self._version())
        with self._lock.hold(self._ctx.config.lock_timeout):
            schema = self._schema
            old = self._exact()
            if not schema.equals(self._schema):  # another process added columns
                given = {ns: rows_to_arrow(source, self._schema, ns) for ns, source in given.items()}
            parts = [_Part(ns, source, fresh=True) for ns, source in given.items()]
            res, _ = self._commit_parts(old, parts)
        self._note_write()
        return res

    def _fresh_rows(self, namespace: str, rows: Iterable[Mapping[str, Any]] | pa.Table) -> pa.Table | None:
        """``rows`` validated under fresh ids (``None`` when there are none)."""
        if isinstance(rows, pa.Table):
            if "id" in rows.column_names:
                raise ValueError("append: rows get fresh ids; do not pass 'id' (use upsert to replace rows)")
            if not rows.num_rows:
                return None
            ids = new_id_array(rows.num_rows)
            return rows_to_arrow(rows.append_column("id", ids), self._schema, namespace)
        given = list(rows)
        if any(not isinstance(r, Mapping) for r in given):
            raise TypeError("append: rows must be dicts")
        if any("id" in r for r in given):
            raise ValueError("append: rows get fresh ids; do not pass 'id' (use upsert to replace rows)")
        if not given:
            return None
        fresh = new_ids(len(given))
        return rows_to_arrow([{**r, "id": i} for r, i in zip(given, fresh, strict=True)], self._schema, namespace)

    def _commit(self, namespace: str, ops: list[_Op], *, purge: bool = False) -> WriteResult:
        if not ops and not purge:
            return WriteResult(self._version())
        if not purge:
            return self._submit(_Request(namespace, ops, _keys(ops)))
        with self._lock.hold(self._ctx.config.lock_timeout):
            res = self._commit_locked(namespace, ops)
            self._purge_locked()
        return res

    # -- group commit ---------------------------------------------------------------------------

    def _submit(self, request: _Request) -> WriteResult:
        """Queue ``request`` and return once a commit holding it has completed (see the module
        docstring): led by this thread if no other thread is committing, else by that one."""
        group = self._group
        with group.cond:
            group.queue.append(request)
            while not request.done and group.leading:
                group.cond.wait()
            lead = not request.done
            if lead:
                group.leading = True
        if lead:
            try:
                self._lead(request)
            finally:
                with group.cond:
                    group.leading = False
                    group.cond.notify_all()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _lead(self, request: _Request) -> None:
        """Commit groups of queued writers, oldest first, until ``request`` is done. Each group
        is taken once the write lock is held, so it holds every writer that queued meanwhile."""
        group = self._group
        while not request.done:
            with contextlib.ExitStack() as held:
                try:
                    held.enter_context(self._lock.hold(self._ctx.config.lock_timeout))
                except BaseException as e:  # no lock, no commit: this writer gives up, the others wait on
                    with group.cond:
                        group.queue.remove(request)
                        request.error, request.done = e, True
                    return
                with group.cond:
                    batch = group.take()
                committed = self._commit_group(batch)
            with group.cond:
                for r in batch:
                    r.done = True
                group.commits += committed
                group.cond.notify_all()
            if committed:
                self._note_write()

    def _commit_group(self, batch: list[_Request]) -> bool:
        """Commit the requests of ``batch`` as one LanceDB commit (the caller holds the write
        lock) and give each its result, or the exception of the commit; whether a commit was
        made. A request whose operations cannot be replayed (an update's read failed) gets its
        own exception and is left out."""
        try:
            old = self._exact()
            ready: list[tuple[_Request, _Part]] = []
            for r in batch:
                try:
                    source, deletes = self._replay(r.namespace, r.ops)
                except Exception as e:
                    r.error = e
                    continue
                if source is None and deletes is None:
                    r.result = WriteResult(old)
                else:
                    ready.append((r, _Part(r.namespace, source, deletes, r.fresh)))
            if not ready:
                return False
            _, each = self._commit_parts(old, [p for _, p in ready])
            for (r, _), res in zip(ready, each, strict=True):
                r.result = res
            return True
        except BaseException as e:  # the commit failed: every writer in it learns why
            for r in batch:
                if r.result is None and r.error is None:
                    r.error = e
            return False

    # -- purging --------------------------------------------------------------------------------

    def _purge_locked(self) -> int:
        """Leave no trace of deleted rows in the table's files; the caller holds the write lock.

        A LanceDB delete only marks rows in a deletion file beside the fragment that holds them,
        and compaction rewrites such a fragment only past a share of deleted rows, so deleted
        values can stay in a live data file indefinitely. Every fragment that has a deletion file
        is rewritten first (its live rows re-written unchanged, one atomic merge per fragment, so
        readers never miss a row); then LanceDB's optimize compacts, folds the rewritten rows into the
        indexes and deletes every old version and every file no version references. Nothing else
        writes meanwhile (every write holds the lock), so the unreferenced files it deletes are
        never another writer's work in progress. Returns the table's new version.
        """
        old = self._exact()
        if self._ctx.kind != "memory":
            for fragment in sorted(self._fragments_with_deletions()):
                self._rewrite_fragment(fragment)
        with warnings.catch_warnings():
            # LanceDB warns that removing every old version breaks readers of those versions:
            # purging means exactly that, and readers of this store re-open the latest version.
            warnings.filterwarnings("ignore", message=r".*cleanup_older_than", category=UserWarning)
            # Optimize compacts, then deletes old versions, then updates the indexes in a new
            # version, so the version before that (and its index files, which still hold the
            # deleted rows' indexed values) outlives the first pass; the second pass, with
            # nothing left to compact or index, only deletes it.
            for _ in range(2):
                self._tbl.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        new = int(self._tbl.version)
        # Row contents are unchanged by the rewrite: cached namespaces stay valid.
        self._after_commit(old, new, set())
        self._writes = 0
        return new

    def _fragments_with_deletions(self) -> set[int]:
        """Ids of the fragments that have (or had, in a version not yet cleaned up) a deletion
        file: LanceDB names them ``_deletions/<fragment>-<read version>-<id>.<arrow|bin>``."""
        names: list[str] = []
        if self._ctx.kind == "local":
            folder = os.path.join(self._ctx.uri, f"{self.name}.lance", "_deletions")
            with contextlib.suppress(FileNotFoundError):
                names = os.listdir(folder)
        else:
            from obstore.store import from_url

            from mindcore.store.locks import _split_options

            config, client = _split_options(self._ctx.storage_options)
            objects: Any = from_url(f"{self._ctx.uri}/{self.name}.lance",  # type: ignore[call-overload]
                                    config=config, client_options=client)
            for batch in objects.list("_deletions"):
                names.extend(str(meta["path"]).rsplit("/", 1)[-1] for meta in batch)
        found: set[int] = set()
        for n in names:
            head = n.split("-", 1)[0]
            if head.isdigit():
                found.add(int(head))
        return found

    def _rewrite_fragment(self, fragment: int) -> None:
        """Write the live rows of ``fragment`` again, unchanged, in one commit: LanceDB moves
        them to a new fragment and drops the old one with its deleted rows."""
        lo, hi = fragment << 32, (fragment + 1) << 32  # a row address is fragment id << 32 | offset
        rows = self._tbl.search().where(f"_rowaddr >= {lo} AND _rowaddr < {hi}").limit(None).to_arrow()
        if rows.num_rows == 0:
            return
        (self._tbl.merge_insert(["namespace", "id"]).when_matched_update_all()
         .execute(rows, on_bad_vectors="null"))

    def _exact(self) -> int:
        """The table at its latest version, for a writer holding the lock; the schema is re-read
        only when another process moved the table (reading it costs a round trip)."""
        if self._retired is not None:
            raise EmbedderMismatchError(self._retired)
        before = self._versions.loaded
        version = self._versions.exact()
        if version != before:
            self._adopt(self._tbl.schema)
        return version

    def _commit_locked(self, namespace: str, ops: list[_Op]) -> WriteResult:
        """Commit ``ops`` now; the caller holds the write lock."""
        old = self._exact()
        source, deletes = self._replay(namespace, ops)
        if source is None and deletes is None:
            return WriteResult(old)
        res, _ = self._commit_parts(old, [_Part(namespace, source, deletes)])
        return res

    def _commit_parts(self, old: int, parts: Sequence[_Part], *, patch: bool = True) -> tuple[WriteResult, list[WriteResult]]:
        """Write ``parts`` (at most one per namespace deletes) as one LanceDB commit over version
        ``old``; the caller holds the write lock. Returns what the commit did in all and for each
        part. Rows that are all new are appended (the cheapest commit, whose cost does not grow
        with the table); replacements or deletes take one ``merge_insert`` (or ``delete``).
        ``patch``: carry the commit into the cached namespaces, else drop them (a bulk write
        touches many namespaces once each: patching would copy every one of them)."""
        # A read on another thread that sees the new version before the patch waits for it,
        # rather than reading a whole namespace again.
        with self._ctx.cache.committing(self.name):
            return self._commit_and_patch(old, parts, patch=patch)

    def _commit_and_patch(self, old: int, parts: Sequence[_Part], *, patch: bool) -> tuple[WriteResult, list[WriteResult]]:
        touched = {p.namespace for p in parts}
        cached = {ns: self._ctx.cache.get(self.name, ns, old) for ns in touched}
        conds = [col("namespace").eq(p.namespace) & p.deletes for p in parts if p.deletes is not None]
        cond = to_where(None, any_of(*conds), self._schema) if conds else None
        sources = [p.source for p in parts if p.source is not None]
        source = None if not sources else sources[0] if len(sources) == 1 else pa.concat_tables(sources)
        # How many rows of each part replace a stored row (known when nothing is deleted).
        masks: dict[int, np.ndarray] = {}
        empty: set[str] = set()
        stored = self._stored_counts(parts, cached, masks, old, empty) if cond is None else None
        for ns in empty:  # a new namespace: its rows after the commit are the ones written
            cached[ns] = CacheEntry.empty(self._schema, old, self.dim or 0)
        if source is not None and stored is not None and not any(stored) and (
                all(p.fresh for p in parts) or _distinct(source)):
            added = self._tbl.add(source)
            total = WriteResult(int(added.version), inserted=source.num_rows)
        elif source is not None:
            b = self._tbl.merge_insert(["namespace", "id"]).when_matched_update_all().when_not_matched_insert_all()
            if cond is not None:
                b = b.when_not_matched_by_source_delete(cond)
            r = b.execute(source, on_bad_vectors="null")  # merge_insert sanitises anyway; a null vector is valid
            total = WriteResult(int(r.version), int(r.num_inserted_rows), int(r.num_updated_rows),
                                int(r.num_deleted_rows))
        else:
            assert cond is not None
            d = self._tbl.delete(cond)
            total = WriteResult(int(d.version), deleted=int(getattr(d, "num_deleted_rows", 0) or 0))
        new = total.version
        self._after_commit(old, new, touched)
        if stored is None:
            each = [total]  # one part: a unit of work that deletes, or a bulk write
        else:
            each = [WriteResult(new, inserted=(0 if p.source is None else p.source.num_rows) - n, updated=n)
                    for p, n in zip(parts, stored, strict=True)]
        if patch:
            for ns in touched:
                entry = cached[ns]
                if entry is None:
                    continue
                mine = [i for i, p in enumerate(parts) if p.namespace == ns]
                srcs = [t for t in (parts[i].source for i in mine) if t is not None]
                src = None if not srcs else srcs[0] if len(srcs) == 1 else pa.concat_tables(srcs)
                dels = [parts[i].deletes for i in mine if parts[i].deletes is not None]
                gone = to_mask(any_of(*dels), entry.scalars) if dels else None
                replaced = None
                if src is not None and all(i in masks for i in mine if parts[i].source is not None):
                    replaced = np.zeros(entry.n, dtype=bool)
                    for i in mine:
                        if i in masks:
                            replaced |= masks[i]
                self._patch_cache(ns, entry, src, gone, old, new, replaced=replaced)
        return total, each

    def _stored_counts(self, parts: Sequence[_Part], cached: Mapping[str, CacheEntry | None],
                       masks: dict[int, np.ndarray], version: int, empty: set[str]) -> list[int]:
        """For each part, how many of its rows have the id of a stored row: from the cached
        namespace (all of it at the version read, kept so by the lock; ``masks`` gets the
        cached rows each part replaces), else from one count of the namespaces not cached (and
        a read of their ids when they have rows). Fresh rows are new by construction.
        ``empty`` gets the namespaces found to have no rows at ``version``."""
        out = [0] * len(parts)
        probe: list[int] = []
        for i, p in enumerate(parts):
            if p.source is None or p.fresh:
                continue
            entry = cached[p.namespace]
            if entry is None:
                probe.append(i)
            else:
                masks[i] = entry.holding(p.source.column("id"))
                out[i] = int(np.count_nonzero(masks[i]))
        if probe:
            names = sorted({parts[i].namespace for i in probe})
            in_names = col("namespace").is_in(names)
            if self._surely_empty(names, version) or not int(
                    self._tbl.count_rows(to_where(None, in_names, self._schema))):
                empty.update(names)  # nothing stored under them: every row is new
                for i in probe:
                    masks[i] = np.zeros(0, dtype=bool)
                return out
            ids = sorted({str(v) for i in probe for v in parts[i].source.column("id").to_pylist()})  # type: ignore[union-attr]
            # A few ids go into the filter; many (a bulk write) would make it a huge IN list: the
            # ids of the namespaces are read instead.
            which = in_names & col("id").is_in(ids) if len(ids) <= _PROBE_IDS else in_names
            where = to_where(None, which, self._schema)
            found = self._tbl.search().where(where).select(["namespace", "id"]).limit(None).to_arrow()
            if found.num_rows:
                have = set(zip(found.column("namespace").to_pylist(), found.column("id").to_pylist(), strict=True))
                for i in probe:
                    ns = parts[i].namespace
                    out[i] = sum((ns, v) in have for v in parts[i].source.column("id").to_pylist())  # type: ignore[union-attr]
        return out

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
        self._ctx.commits.add()
        self._versions.committed(new)
        self._ctx.cache.committed(self.name, touched, old, new)
        with self._state_lock:
            self._count_cache = {k: (new, n) for k, (v, n) in self._count_cache.items()
                                 if v == old and (touched is not None and k not in touched)}
        # One commit after the census's version: it added only ``touched``. Otherwise the census
        # catches up from the fragments when next asked.
        with self._census_lock:
            if self._census is not None and self._census.version == old and new == old + 1 and touched is not None:
                self._census.committed(new, touched)

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
        every = self._ctx.config.compact_every
        self._writes += 1
        if every and self._writes >= every:
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
        rows: Iterable[Mapping[str, Any]] | pa.Table | Callable[[], Iterable[Mapping[str, Any]] | pa.Table],
    ) -> WriteResult:
        return await asyncio.to_thread(self.append, namespace, rows)

    async def amodify(
        self, namespace: str, id: str, fn: Callable[[Row | None], Mapping[str, Any] | None]
    ) -> WriteResult:
        return await asyncio.to_thread(self.modify, namespace, id, fn)

    async def adelete(
        self, namespace: str, *, ids: Iterable[str] | None = None, where: Filter | None = None, purge: bool = False
    ) -> WriteResult:
        return await asyncio.to_thread(lambda: self.delete(namespace, ids=ids, where=where, purge=purge))

    async def aclear(self, namespace: str, *, purge: bool = False) -> WriteResult:
        return await asyncio.to_thread(lambda: self.clear(namespace, purge=purge))


def _by_namespace_to_arrow(rows: Mapping[str, Iterable[Mapping[str, Any]]], schema: pa.Schema) -> pa.Table:
    """Row dicts grouped by namespace as one Arrow table of ``schema`` (each group checked by
    :func:`rows_to_arrow`)."""
    parts = [rows_to_arrow(part, schema, check_namespace(namespace)) for namespace, part in rows.items()]
    return pa.concat_tables(parts) if parts else schema.empty_table()
