"""`Store`: a LanceDB database (folder, ``memory://`` or object storage) and its tables."""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import logging
import os
import re
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import timedelta
from types import TracebackType
from typing import Any

import pyarrow as pa

from mindcore._background import BackgroundLoad
from mindcore.errors import InvalidInputError
from mindcore.store._lance_threads import settle_lance_threads
from mindcore.store.cache import VectorCache
from mindcore.store.compaction import CompactionResult, is_retryable_conflict
from mindcore.store.config import StoreConfig
from mindcore.store.context import TableContext
from mindcore.store.errors import EmbedderMismatchError, StoreError, StoreNotWritableError
from mindcore.store.locks import FileLock, LeaseLock, Lock, ThreadLock
from mindcore.store.schema import ColumnsSpec, build_schema, missing_fields, vector_dim, vector_model
from mindcore.store.stats import StoreStats, folder_bytes
from mindcore.store.table import EmbedderLike, Table

__all__ = ["EmbeddingInfo", "Store", "aopen", "open"]

log = logging.getLogger("mindcore.store")

META_TABLE = "_mindcore_meta"
_LOCK_DIR = "_mindcore_locks"
_TABLE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")
_MEMORY: weakref.WeakValueDictionary[str, Store] = weakref.WeakValueDictionary()
_OPEN: weakref.WeakSet[Store] = weakref.WeakSet()
_REGISTRY_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class EmbeddingInfo:
    """The embedding model a store or table was built with."""

    model_id: str
    dim: int

    @classmethod
    def of(cls, embedder: EmbedderLike) -> EmbeddingInfo:
        dim, model = getattr(embedder, "dim", None), getattr(embedder, "model_id", None)
        if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
            raise TypeError(f"embedder: expected a positive int .dim, got {dim!r}")
        if not isinstance(model, str) or not model:
            raise TypeError(f"embedder: expected a non-empty str .model_id, got {model!r}")
        return cls(model, dim)

    def __str__(self) -> str:
        return f"{self.model_id!r} (dim {self.dim})"


@dataclass(frozen=True, slots=True)
class _Loaded:
    """What a store opens in the background: the LanceDB connection and the meta table."""

    db: Any
    meta: Table | None


def _open_lance(db: Any, name: str) -> Any:
    """The LanceDB table ``name`` of ``db``, or None if it does not exist."""
    try:
        return db.open_table(name)
    except (ValueError, FileNotFoundError):
        return None


def _mismatch(what: str, stored: EmbeddingInfo, given: EmbeddingInfo) -> EmbedderMismatchError:
    return EmbedderMismatchError(
        f"{what} was built with embedding model {stored}, but the embedder given is {given}; "
        "use the same model, or move the store to the new one with mindcore.batch.reembed (mindcore reembed)"
    )


def _resolve(uri: str | os.PathLike[str] | None, *, create: bool = True) -> tuple[str, str]:
    """``(kind, location)`` with kind ``local`` (absolute path), ``memory`` or ``remote``; a
    local folder is created unless ``create`` is false (then it must exist)."""
    if uri is None:
        uri = os.environ.get("MINDCORE_HOME") or ".mindcore"
    if isinstance(uri, os.PathLike):
        uri = os.fspath(uri)
    if not isinstance(uri, str) or not uri:
        raise ValueError(f"uri: expected a path or a URI, got {uri!r}")
    if uri.startswith("memory://"):
        return "memory", uri
    if uri.startswith("file://"):
        uri = uri[len("file://") :]
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", uri):
        return "remote", uri.rstrip("/")
    path = os.path.abspath(os.path.expanduser(uri))
    if not create:
        if not os.path.isdir(path):
            raise StoreError(f"no store at {path}: read_only=True opens an existing store and never creates one")
        return "local", path
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise StoreNotWritableError(f"cannot create the store folder {path}: {e.strerror or e}") from e
    return "local", path


def open(
    uri: str | os.PathLike[str] | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
    embedder: EmbedderLike | None = None,
    config: StoreConfig | None = None,
    read_only: bool = False,
) -> Store:
    """Open (creating if needed) the memory store at ``uri``.

    ``uri`` is a folder (default: ``$MINDCORE_HOME``, else ``./.mindcore``), ``memory://name``
    (a throwaway store shared by every ``open`` of that name in this process while it is in use;
    plain ``memory://`` is always a new one) or an object-storage URI such as
    ``s3://bucket/prefix`` with credentials in ``storage_options`` (LanceDB's keys:
    ``aws_access_key_id``, ``aws_endpoint``, ``allow_http``, ...), which lets several machines
    share one memory. ``embedder`` binds the store to that model: a store built with another
    model or dimension refuses to open.

    ``read_only=True`` opens an existing folder or object-storage store for reading: nothing is
    created or written (not even a lock file), and every write (``upsert``, ``update``,
    ``delete``, ``clear``, ``append``, ``modify``, ``insert_new``, units of work, ``compact``,
    ``drop_table``, creating a table or adding columns to one, holding a lock) raises
    :class:`StoreNotWritableError` naming the store. Reads see what other processes write.

    ``open`` returns at once: importing LanceDB (a second or two) and connecting happen in a
    background thread, and the first operation that needs the connection waits for it, so a
    caller's own start-up (loading an embedder, building a prompt) overlaps with it. What is cheap
    to check is checked here (the arguments, a local folder that cannot be created, a read-only
    store that does not exist); what needs LanceDB (an unknown URI scheme, credentials object
    storage refuses) raises from the first operation, and from every later one, as the same
    exception. Given an ``embedder``, ``open`` waits, to compare it with the recorded model.

    >>> import mindcore
    >>> store = mindcore.open("memory://doc")
    >>> store.table("notes", {"text": pa.string()}).upsert("me", [{"id": "n1", "text": "hi"}]).inserted
    1
    """
    if not isinstance(read_only, bool):
        raise InvalidInputError(f"read_only: expected a bool, got {read_only!r}")
    kind, location = _resolve(uri, create=not read_only)
    cfg = config or StoreConfig()
    if read_only and kind == "memory":
        raise InvalidInputError(
            "read_only=True needs a folder or object storage: a memory:// store lives in this process only"
        )
    if kind == "memory" and location != "memory://":
        with _REGISTRY_LOCK:
            shared = _MEMORY.get(location)
            if shared is None:
                shared = _MEMORY[location] = Store(location, kind, dict(storage_options or {}), cfg)
        store = shared
    else:
        store = Store(location, kind, dict(storage_options or {}), cfg, read_only=read_only)
    if embedder is not None:
        store.bind_embedder(embedder)
    return store


async def aopen(
    uri: str | os.PathLike[str] | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
    embedder: EmbedderLike | None = None,
    config: StoreConfig | None = None,
    read_only: bool = False,
) -> Store:
    """Async twin of :func:`open`."""
    return await asyncio.to_thread(
        lambda: open(uri, storage_options=storage_options, embedder=embedder, config=config, read_only=read_only)
    )


class Store:
    """A LanceDB database and the tables of every capability. Make one with
    :func:`mindcore.open`."""

    def __init__(
        self, uri: str, kind: str, storage_options: dict[str, str], config: StoreConfig, *, read_only: bool = False
    ) -> None:
        self.uri = uri
        self.kind = kind
        self.config = config
        self._read_only = read_only
        self._storage_options = storage_options
        rc = config.read_consistency
        if rc is None:
            rc = timedelta(seconds=1) if kind == "remote" else timedelta(0)
        self._read_consistency: timedelta | None = None if kind == "memory" else rc
        self._cache = VectorCache(config.cache_bytes)
        self._context = TableContext(
            store=self, uri=uri, kind=kind, config=config, cache=self._cache,
            read_consistency_s=None if self._read_consistency is None else self._read_consistency.total_seconds(),
            schedule_maintenance=self._schedule_maintenance, read_only=read_only,
            storage_options=dict(storage_options),
        )
        self._tables: dict[str, Table] = {}
        self._claimed: set[str] = set()  # tables whose embedding model this handle recorded or checked
        self._locks: dict[str, Lock] = {}
        self._lock = threading.RLock()
        self._embedder: EmbedderLike | None = None
        self._maint = _Maintainer(self)
        self._closed = False
        self._ready: _Loaded | None = None
        # Importing LanceDB takes a second or two: the connection and the meta table are opened in
        # the background, and the first operation that needs them waits (see `_loaded`).
        self._loading: BackgroundLoad[_Loaded] = BackgroundLoad(
            self._load, name=f"mindcore-open-{uri}", imports=["lancedb", "lancedb.index"]
        )
        _OPEN.add(self)

    def _load(self) -> _Loaded:
        """Connect and open the meta table (in the background thread). Takes ``self._lock``
        (briefly), so no caller may wait for this while holding it: public methods wait first."""
        import lancedb  # imported by the BackgroundLoad (~1.5 s), never by `import mindcore`

        # Tables track their latest version themselves (see mindcore.store.versions).
        db = lancedb.connect(self.uri, storage_options=self._storage_options or None, read_consistency_interval=None)
        meta_lock = self._table_lock(META_TABLE)
        lance = _open_lance(db, META_TABLE)
        wanted = build_schema(None, None)
        if self._read_only:
            if lance is None:  # a read-only store may predate the meta table: nothing is recorded
                return _Loaded(db, None)
            missing = missing_fields(lance.schema, wanted)
            if missing:
                self._refuse_writes(f"add columns {[f.name for f in missing]} to table {META_TABLE!r}")
        else:
            lance = self._open_or_create(db, META_TABLE, wanted, meta_lock)
        return _Loaded(db, Table(self._context, META_TABLE, lance, meta_lock, None))

    def _loaded(self) -> _Loaded:
        """The connection and meta table, waiting for the background open; its error if it failed."""
        loaded = self._ready
        if loaded is None:
            loaded = self._loading.result()
            with self._lock:
                if self._ready is None:
                    if loaded.meta is not None:
                        self._tables[META_TABLE] = loaded.meta
                    self._ready = loaded
        return loaded

    @property
    def _db(self) -> Any:
        """The LanceDB connection (waits for the background open)."""
        return self._loaded().db

    @property
    def _meta(self) -> Table | None:
        """The table of what the store records about itself (None in a read-only store that
        predates it); waits for the background open."""
        return self._loaded().meta

    def __repr__(self) -> str:
        return f"Store({self.uri!r}{', read_only=True' if self._read_only else ''})"

    # -- writability ----------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """Whether the store was opened with ``read_only=True`` (every write raises)."""
        return self._read_only

    def check_writable(self) -> None:
        """Raise :class:`StoreNotWritableError` unless this process can write to the store.

        Capabilities call this when they open in a mode that writes, so a write they accept
        cannot fail later for lack of permission. A store opened ``read_only=True`` always
        raises. A folder is checked by creating and removing a probe file in it and in its lock
        folder, which also catches a read-only file system (not a disk that fills up later).
        ``memory://`` is always writable. Object storage is not probed (a probe would be a
        billable write and a round trip per open): the configured credentials are trusted, and a
        refused write raises from the write itself.

        >>> import mindcore
        >>> mindcore.open("memory://").check_writable()
        """
        self._refuse_writes("write to it")
        if self.kind != "local":
            return
        for folder in (self.uri, os.path.join(self.uri, _LOCK_DIR)):
            try:
                os.makedirs(folder, exist_ok=True)
                fd, probe = tempfile.mkstemp(prefix=".mindcore-write-probe-", dir=folder)
                os.close(fd)
                os.remove(probe)
            except OSError as e:
                raise StoreNotWritableError(
                    f"store {self.uri} is not writable by this process: {folder}: {e.strerror or e} "
                    "(fix the permissions, or open it with read_only=True to read it)"
                ) from e

    def _refuse_writes(self, what: str) -> None:
        self._context.refuse_writes(what)

    # -- embedding ------------------------------------------------------------------------------

    @property
    def embedder(self) -> EmbedderLike | None:
        """The embedder bound with :func:`open` or :meth:`bind_embedder` (default of tables)."""
        return self._embedder

    @property
    def embedding(self) -> EmbeddingInfo | None:
        """The embedding model recorded in the store, if one was ever bound."""
        return self._recorded("store", "embedding")

    def _recorded(self, ns: str, key: str) -> EmbeddingInfo | None:
        if self._meta is None:
            return None
        row = self._meta.get_one(ns, key)
        if row is None or not isinstance(row.get("metadata"), dict):
            return None
        m = row["metadata"]
        return EmbeddingInfo(str(m["model_id"]), int(m["dim"]))

    def _claim(self, ns: str, key: str, info: EmbeddingInfo, what: str) -> None:
        """Record ``info`` under ``key`` unless something is recorded; then they must agree."""
        stored = self._recorded(ns, key)
        if stored is None and self._meta is not None and not self._read_only:  # a reader records nothing
            self._meta.insert_new(ns, [{"id": key, "metadata": {"model_id": info.model_id, "dim": info.dim}}])
            stored = self._recorded(ns, key)
        if stored is not None and stored != info:
            raise _mismatch(what, stored, info)

    def _record(self, ns: str, key: str, info: EmbeddingInfo) -> None:
        """Record ``info`` under ``key``, replacing what was recorded (a re-embedding's last step)."""
        self._refuse_writes("record an embedding model")
        assert self._meta is not None
        self._meta.upsert(ns, [{"id": key, "metadata": {"model_id": info.model_id, "dim": info.dim}}])

    def bind_embedder(self, embedder: EmbedderLike) -> None:
        """Make ``embedder`` the store's model (recorded on first use; a different model or
        dimension than the recorded one raises :class:`EmbedderMismatchError`)."""
        info = EmbeddingInfo.of(embedder)
        self._claim("store", "embedding", info, f"the store at {self.uri}")
        self._embedder = embedder

    # -- tables ---------------------------------------------------------------------------------

    def lock(self, name: str) -> Lock:
        """The store's lock called ``name``: exclusive across the threads and processes (and, on
        object storage, the machines) using this store, whatever they write while holding it.

        ``lock.hold(timeout=None)`` is a context manager that waits at most ``timeout`` seconds
        (default ``StoreConfig.lock_timeout``) and then raises :class:`LockTimeoutError`. The lock
        is ``flock`` on ``<store>/_mindcore_locks/<name>.lock`` for a folder (released by the OS
        if its holder dies), a lease object on object storage and a thread lock for
        ``memory://``. It is not reentrant. Every write to a table holds the lock named after the
        table, so never write a table while holding the lock of its name; use your own names
        (``[A-Za-z0-9][A-Za-z0-9_.-]*``, at most 128 characters) for read-modify-write sequences
        spanning several writes, and start them with :meth:`Table.refresh` (on object storage a
        read may otherwise lag behind writes by up to ``StoreConfig.read_consistency``). Locks guard
        writes: on a read-only store ``hold()`` raises :class:`StoreNotWritableError`.

        >>> import mindcore
        >>> store = mindcore.open("memory://")
        >>> counter = store.table("counters", {"n": pa.int64()})
        >>> with store.lock("bump-counters").hold(timeout=5):
        ...     _ = counter.refresh()
        ...     n = (counter.get_one("c", "hits") or {"n": 0})["n"]
        ...     _ = counter.upsert("c", [{"id": "hits", "n": n + 1}])
        >>> counter.get_one("c", "hits")["n"]
        1
        """
        if not isinstance(name, str) or not _TABLE_NAME.match(name):
            raise ValueError(f"lock name: expected 1-128 of [A-Za-z0-9_.-] starting alphanumeric, got {name!r}")
        return self._lock_named(name, f"lock {name!r}")

    def _lock_named(self, name: str, label: str) -> Lock:
        # One object per name, so threads of this process queue on it before touching the file.
        with self._lock:
            lock = self._locks.get(name)
            if lock is None:
                timeout = self.config.lock_timeout
                if self._read_only:
                    lock = _RefusedLock(name, f"store {self.uri} was opened read_only=True: cannot hold {label}")
                elif self.kind == "local":
                    lock = FileLock(os.path.join(self.uri, _LOCK_DIR, f"{name}.lock"), name, label=label,
                                    timeout=timeout)
                elif self.kind == "memory":
                    lock = ThreadLock(name, label=label, timeout=timeout)
                else:
                    lock = LeaseLock(self.uri, f"{_LOCK_DIR}/{name}.lock", name, self._storage_options,
                                     ttl=self.config.lease_ttl, label=label, timeout=timeout)
                self._locks[name] = lock
            return lock

    def _table_lock(self, name: str) -> Lock:
        return self._lock_named(name, f"table {name!r}")

    def table(
        self,
        name: str,
        columns: ColumnsSpec | None = None,
        *,
        vectors: bool = False,
        embedder: EmbedderLike | None = None,
    ) -> Table:
        """Open or create the table ``name`` with the standard columns plus ``columns`` (a dict
        of name -> pyarrow type, all nullable). Columns missing from a stored table are added
        (null in old rows); stored columns not asked for are kept.

        ``vectors=True`` gives the table a ``vector`` column of the embedder's dimension (the
        ``embedder`` given here, else the store's). A table built with another embedding model
        or dimension raises :class:`EmbedderMismatchError` naming both.

        >>> import mindcore, pyarrow as pa
        >>> store = mindcore.open("memory://")
        >>> store.table("goals", {"description": pa.string(), "priority": pa.string()}).schema.names[-2:]
        ['description', 'priority']
        """
        if not isinstance(name, str) or not _TABLE_NAME.match(name):
            raise ValueError(f"table name: expected 1-128 of [A-Za-z0-9_.-] starting alphanumeric, got {name!r}")
        emb = embedder if embedder is not None else self._embedder
        if vectors and emb is None:
            raise ValueError(f"table {name!r}: vectors=True needs an embedder (pass embedder= here or to mindcore.open)")
        explicit = vectors or embedder is not None
        return self._table(name, columns, emb, vectors=vectors, explicit=explicit)

    def _table(
        self,
        name: str,
        columns: ColumnsSpec | None,
        emb: EmbedderLike | None,
        *,
        vectors: bool = False,
        explicit: bool = False,
    ) -> Table:
        self._check_open()
        self._loaded()  # wait before taking self._lock (the background open needs it)
        info = EmbeddingInfo.of(emb) if emb is not None else None
        wanted = build_schema(columns, info.dim if vectors and info is not None else None)
        with self._lock:
            t = self._tables.get(name)
            if t is not None:
                try:
                    t._version()  # a handle that missed a re-embedding must see the new vector column
                except EmbedderMismatchError:
                    t = None  # retired (still held by whoever opened it with the old model): start afresh
                    del self._tables[name]
            if (t is not None and info is not None and t._bound == (info.model_id, info.dim)
                    and (not explicit or name in self._claimed) and not missing_fields(t._schema, wanted)):
                # Checked against the store's records when first bound to this model, and a
                # re-embedding since would have retired the handle above: nothing to read again.
                t._bind(emb, info.model_id, info.dim)  # type: ignore[arg-type]
                return t
            lance = t._tbl if t is not None else self._try_open(name)
            bind = False
            if lance is not None and info is not None:
                bind = self._embedding_ok(name, lance.schema, info, explicit)
            if self._read_only:
                if lance is None:
                    self._refuse_writes(f"create table {name!r} (it does not exist)")
                missing = missing_fields(lance.schema, wanted)
                if missing:
                    self._refuse_writes(f"add columns {[f.name for f in missing]} to table {name!r}")
            if t is None or missing_fields(lance.schema, wanted):
                lance = lance if self._read_only else self._open_or_create(self._db, name, wanted,
                                                                           self._table_lock(name))
                if t is None:
                    t = Table(self._context, name, lance, self._table_lock(name), None)
                    self._tables[name] = t
                else:
                    t._reset(lance)
            if info is not None and not bind and vector_dim(lance.schema) == info.dim:
                bind = self._embedding_ok(name, lance.schema, info, explicit)
            if bind and emb is not None and info is not None:
                if explicit:
                    self._claim("table-embedding", name, info, f"table {name!r}")
                    self._claimed.add(name)
                t._bind(emb, info.model_id, info.dim)
        return t

    def _embedding_ok(self, name: str, schema: pa.Schema, info: EmbeddingInfo, explicit: bool) -> bool:
        """Whether a table with ``schema`` may be used with embedder ``info``. A mismatch raises
        when the embedder was asked for explicitly; the store's default is simply not bound."""
        dim = vector_dim(schema)
        if dim is None:
            return False
        stored = self._recorded("table-embedding", name)
        labelled = vector_model(schema)
        if labelled is not None and (stored is None or stored.model_id != labelled):
            # A re-embedded table names its model in the same commit as its vectors: that wins over
            # a record written after it (or not yet, if the re-embedding stopped in between).
            stored = EmbeddingInfo(labelled, dim)
        if stored is None and dim != info.dim:
            stored = EmbeddingInfo("(not recorded)", dim)
        if stored is None or stored == info:
            return True
        if explicit:
            raise _mismatch(f"table {name!r}", stored, info)
        return False

    def _open_or_create(self, db: Any, name: str, wanted: pa.Schema, lock: Lock) -> Any:
        from lancedb.index import BTree

        lance = _open_lance(db, name)
        if lance is not None and not missing_fields(lance.schema, wanted) and self._has_ns_index(lance):
            return lance
        with lock.hold(self.config.lock_timeout):
            lance = _open_lance(db, name)
            if lance is None:
                lance = db.create_table(name, schema=wanted, exist_ok=True)
            add = missing_fields(lance.schema, wanted)
            if add:
                lance.add_columns(add)
            if not self._has_ns_index(lance):
                lance.create_index("namespace", config=BTree(), replace=False)
            return lance

    def _try_open(self, name: str) -> Any:
        return _open_lance(self._db, name)

    @staticmethod
    def _has_ns_index(lance: Any) -> bool:
        return any(list(ix.columns) == ["namespace"] for ix in lance.list_indices())

    def table_names(self) -> list[str]:
        """Names of the tables in the store (internal ones excluded)."""
        return sorted(n for n in self._all_tables() if not n.startswith("_mindcore"))

    def _all_tables(self) -> list[str]:
        names: list[str] = []
        token: str | None = None
        while True:
            resp = self._db.list_tables(page_token=token)
            names.extend(resp.tables)
            token = resp.page_token
            if not token:
                break
        return names

    def drop_table(self, name: str) -> None:
        """Delete a table and everything in it."""
        self._refuse_writes(f"drop table {name!r}")
        self._loaded()  # wait before taking self._lock (the background open needs it)
        with self._lock, self._table_lock(name).hold(self.config.lock_timeout):
            if name in self._all_tables():
                self._db.drop_table(name)
            self._tables.pop(name, None)
            self._cache.drop_table(name)
            if self._meta is not None:
                self._meta.delete("table-embedding", ids=[name])

    # -- maintenance ----------------------------------------------------------------------------

    def _schedule_maintenance(self, name: str) -> None:
        table = self._tables.get(name)
        if table is not None:
            self._maint.schedule(table)

    def compact(self, *, cleanup_grace: timedelta | None = None) -> None:
        """Compact every table now (see :meth:`Table.compact`): merge small fragments (big ones
        are left as they are) and delete versions older than ``cleanup_grace`` (default
        ``StoreConfig.cleanup_grace``; a reader in another process whose version is deleted
        reads the latest one instead)."""
        self._refuse_writes("compact")
        for name in [*self.table_names(), META_TABLE]:
            self.open_table(name).compact(cleanup_grace=cleanup_grace)

    def open_table(self, name: str) -> Table:
        """The stored table ``name`` as it is (every stored column, its vectors without an
        embedder bound): for tools that read or maintain any table. A table that does not exist
        raises :class:`StoreError`; nothing is created."""
        self._loaded()  # wait before taking self._lock (the background open needs it)
        with self._lock:
            if name in self._tables:
                return self._table(name, None, None)  # brought up to date (a retired handle is replaced)
        if name not in self._all_tables():
            raise StoreError(f"store {self.uri} has no table {name!r} (tables: {self.table_names()})")
        return self._table(name, None, None)

    def table_embedding(self, name: str) -> EmbeddingInfo | None:
        """The embedding model recorded for table ``name``, if one was."""
        return self._recorded("table-embedding", name)

    @property
    def commits(self) -> int:
        """Commits made through this handle since it was opened: every write of its tables that
        landed (writes that shared one group commit count once) and every maintenance commit.

        >>> import mindcore
        >>> store = mindcore.open("memory://")
        >>> _ = store.table("notes", {"text": pa.string()}).upsert("a", [{"id": "1", "text": "x"}])
        >>> store.commits
        1
        """
        return self._context.commits.value

    def stats(self) -> StoreStats:
        """What the store holds: every table's :class:`~mindcore.store.TableStats` (internal
        tables excluded), the recorded embedding model and the folder's size. Reads only, so it
        works on a store opened ``read_only=True``.

        >>> import mindcore, pyarrow as pa
        >>> store = mindcore.open("memory://")
        >>> _ = store.table("notes", {"text": pa.string()}).upsert("me", [{"id": "n1", "text": "hi"}])
        >>> [(t.name, t.rows) for t in store.stats().tables]
        [('notes', 1)]
        """
        tables = [
            dataclasses.replace(self.open_table(name).stats(), embedding=self.table_embedding(name))
            for name in self.table_names()
        ]
        disk = folder_bytes(self.uri) if self.kind == "local" else None
        return StoreStats(uri=self.uri, kind=self.kind, embedding=self.embedding, disk_bytes=disk, tables=tables)

    def wait_for_maintenance(self, timeout: float | None = None) -> None:
        """Block until scheduled background compactions have finished, including the reruns of
        a merge that concurrent writes deferred (not the cleanup that runs ``cleanup_grace``
        after the last one, which waits for time to pass)."""
        self._maint.join(timeout)

    def close(self) -> None:
        """Finish background maintenance and release the store (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._loading.wait()  # a store still opening in the background finishes first
        self._maint.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"store {self.uri} is closed")

    def __enter__(self) -> Store:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- async twins ----------------------------------------------------------------------------

    async def atable(
        self, name: str, columns: ColumnsSpec | None = None, *, vectors: bool = False,
        embedder: EmbedderLike | None = None,
    ) -> Table:
        return await asyncio.to_thread(lambda: self.table(name, columns, vectors=vectors, embedder=embedder))

    async def acompact(self) -> None:
        await asyncio.to_thread(self.compact)


class _RefusedLock:
    """The lock of a read-only store: locks guard writes, so holding one is refused."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        self._message = message

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]:
        raise StoreNotWritableError(self._message)


@dataclass(frozen=True, slots=True)
class _Due:
    """A maintenance pass owed to a table: when it may run (monotonic time), whether
    ``wait_for_maintenance`` waits for it (``awaited``: scheduled by writes, or the rerun of a
    deferred merge; not a follow-up waiting for the cleanup grace), and the table's version when
    it was owed (a follow-up that finds it unchanged is the last)."""

    when: float
    awaited: bool
    version: int | None = None


#: What a pass over a table whose folder was deleted under it gives: nothing more to do.
_GONE = CompactionResult(-1)


class _Maintainer:
    """Runs maintenance passes (:meth:`Table.compact`) on one background thread per store (or
    inline, after the write that scheduled them).

    Writes schedule a pass every ``StoreConfig.compact_every`` writes of a table. On the
    background thread, follow-ups keep a table converging once its writes stop, without a caller
    asking:

    - a pass whose merge was deferred (every commit of it conflicted with concurrent writes) is
      run again, at once and then after short pauses (``_RERUN_AFTER``); past those the writers
      are still busy (perhaps in another process), and it is tried again like a cleanup
      follow-up, until a pass merges;
    - ``cleanup_grace`` after a pass, a follow-up pass deletes the versions the grace kept, and
      merges what was written since. One that finds the table as its previous pass left it is
      the last.

    Passes here fold new rows into the indexes only once a sixteenth of the rows are new (an
    index update rewrites the index under the write lock, up to a second at 100k rows), so the
    merge may stay split at the indexed rows' edge by one fragment; ``Store.compact`` settles it.

    ``Store.wait_for_maintenance`` waits for scheduled passes and the reruns of ``_RERUN_AFTER``,
    not for the follow-ups waiting for time to pass; ``close`` runs the passes due and drops the
    rest (the next process to write the table takes over). A failure that is not a
    commit conflict is logged as a one-line warning (the traceback at DEBUG) and tried again by
    the next scheduled pass, or the follow-up.
    """

    #: Pauses (seconds) before each rerun of a merge deferred that many times in a row.
    _RERUN_AFTER = (0.0, 0.25, 1.0, 4.0)

    def __init__(self, store: Store) -> None:
        self._store = weakref.ref(store)
        self._cond = threading.Condition()
        self._due: dict[str, _Due] = {}  # table name -> the pass it is owed
        self._running: str | None = None
        self._deferred: dict[str, int] = {}  # table name -> merges deferred in a row
        self._closing = False
        self._thread: threading.Thread | None = None

    def schedule(self, table: Table) -> None:
        store = self._store()
        if store is None:
            return
        if not store.config.compact_in_background:
            self._run(table)
            return
        with self._cond:
            if self._closing:
                return
            due = self._due.get(table.name)
            if due is None or not due.awaited or due.when > time.monotonic():
                self._due[table.name] = _Due(time.monotonic(), awaited=True)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=f"mindcore-compact-{store.uri}", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    @staticmethod
    def _run(table: Table) -> CompactionResult | None:
        """One pass over ``table``; ``None`` when it failed (logged, never raised: maintenance
        must never break the writer)."""
        try:
            return table._maintain(settle=False)
        except Exception as e:
            if is_retryable_conflict(e):  # a commit beside the merge's lost a race: as a deferred merge
                log.debug("maintenance of table %r conflicted with a concurrent write", table.name, exc_info=True)
                return CompactionResult(table.version, deferred=True)
            if table._ctx.kind == "local" and not os.path.isdir(table._lance_uri()):
                log.debug("table %r was deleted from disk: its maintenance ends", table.name, exc_info=True)
                return _GONE
            log.warning("compaction of table %r failed (the next pass tries again): %s", table.name, e)
            log.debug("compaction of table %r failed", table.name, exc_info=True)
            return None

    def _next(self) -> tuple[str, _Due] | None:
        """The next pass to run, waiting until one is due; ``None`` once closing. Holds the lock."""
        while True:
            now = time.monotonic()
            # Closing: only the awaited passes due now still run (a rerun's pause is not waited for).
            owed = [n for n, d in self._due.items() if not self._closing or (d.awaited and d.when <= now)]
            if self._closing and not owed:
                return None
            name = min(owed, key=lambda n: self._due[n].when, default=None)
            if name is not None and self._due[name].when <= now:
                return name, self._due.pop(name)
            self._cond.wait(None if name is None else self._due[name].when - now)

    def _loop(self) -> None:
        while True:
            with self._cond:
                item = self._next()
                if item is None:
                    return
                name, due = item
                self._running = name
            try:
                store = self._store()
                table = None if store is None else store._tables.get(name)
                result = None if table is None else self._run(table)
                self._owe(name, due, result, store)
            finally:
                with self._cond:
                    self._running = None
                    self._cond.notify_all()

    def _owe(self, name: str, due: _Due, result: CompactionResult | None, store: Store | None) -> None:
        """Record the follow-up a pass calls for (if the table is not owed a pass already)."""
        if store is None or result is _GONE:
            return
        grace = store.config.cleanup_grace.total_seconds()
        now = time.monotonic()
        follow: _Due | None = None
        if result is not None and result.deferred:
            n = self._deferred[name] = self._deferred.get(name, 0) + 1
            if n <= len(self._RERUN_AFTER):
                log.debug("table %r: merge deferred by concurrent writes; running the pass again", name)
                follow = _Due(now + self._RERUN_AFTER[n - 1], awaited=True)
            else:
                follow = _Due(now + max(grace, self._RERUN_AFTER[-1]), awaited=False)
        else:
            self._deferred.pop(name, None)
            unchanged = result is not None and due.version == result.version
            if grace > 0 and not unchanged:
                follow = _Due(now + grace, awaited=False, version=None if result is None else result.version)
        with self._cond:
            if follow is not None and name not in self._due:
                self._due[name] = follow

    def join(self, timeout: float | None = None) -> None:
        """Wait (at most ``timeout`` seconds) until no awaited pass is owed or running."""
        with self._cond:
            self._cond.wait_for(lambda: self._running is None and not any(d.awaited for d in self._due.values()),
                                timeout)

    def close(self) -> None:
        """Run the awaited passes due now, then stop the thread (the rest are dropped)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join()


@atexit.register
def _close_all() -> None:
    for store in list(_OPEN):
        try:
            store.close()
        except Exception:  # pragma: no cover - best effort at exit
            log.debug("closing %r at exit failed", store, exc_info=True)
    settle_lance_threads()  # before the interpreter finalizes: see mindcore.store._lance_threads
