"""A table of one record kind: reads and hybrid search (its writes live in ``mindcore.store.write``)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar, final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mindcore.embed.base import Embedder
from mindcore.store.cache import CacheEntry, split_by_namespace
from mindcore.store.census import Census
from mindcore.store.compaction import RETRIES, TIERS, CompactionResult, is_retryable_conflict
from mindcore.store.compaction import plan as plan_compaction
from mindcore.store.context import StoreHandle, TableContext
from mindcore.store.errors import EmbedderMismatchError
from mindcore.store.filters import Filter, col, to_mask, to_where
from mindcore.store.ids import check_ids, check_namespace
from mindcore.store.schema import VECTOR, Row, now_ms, rows_from_arrow, vector_dim, vector_model
from mindcore.store.scoring import Weights, rank
from mindcore.store.stats import DiskUsage, TableStats, disk_usage
from mindcore.store.versions import VersionTracker
from mindcore.store.write import GroupCommit, TableWrites, UnitOfWork, WriteResult

if TYPE_CHECKING:
    from mindcore.kernels import Metric
    from mindcore.store.locks import Lock

__all__ = ["ALL_NAMESPACES", "AllNamespaces", "EmbedderLike", "Hit", "Table", "UnitOfWork", "WriteResult"]

log = logging.getLogger("mindcore.store")

_GET_CHUNK = 1000


EmbedderLike = Embedder  # deprecated alias of mindcore.embed.Embedder, kept for old imports


@final
class AllNamespaces:
    """Type of :data:`ALL_NAMESPACES`."""

    _instance: AllNamespaces | None = None

    def __new__(cls) -> AllNamespaces:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ALL_NAMESPACES"


#: Pass as ``namespace`` to a read (or to :meth:`Table.count`) to cover every namespace; writes
#: always name one namespace.
ALL_NAMESPACES = AllNamespaces()


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the row, its hybrid ``score`` and its raw vector ``similarity``."""

    id: str
    score: float
    similarity: float
    row: Row


# -- the table -------------------------------------------------------------------------------------

_T = TypeVar("_T")

#: How many times :meth:`Table.stats` lists the table's versions again when a cleanup deleted
#: one of them while it read them.
_STATS_ATTEMPTS = 8


def _vanished(e: BaseException) -> bool:
    """Whether a LanceDB read failed because a file of the version it read no longer exists."""
    return isinstance(e, FileNotFoundError) or "Not found" in str(e) or "NotFound" in str(e)


@functools.lru_cache(maxsize=256, typed=True)
def _weights(similarity: float, recency: float, extra: float, half_life_ms: float | None,
             tau_ms: float | None) -> Weights:
    # Searches repeat the same few weights: validate each combination once, not per search.
    return Weights(similarity, recency, extra, half_life_ms=half_life_ms, tau_ms=tau_ms)


@dataclass(frozen=True, slots=True)
class _Scoring:
    """How one search scores rows (the parts of :meth:`Table.search` that are not about rows)."""

    weights: Weights
    metric: Metric
    time_column: str
    extra_column: str | None
    now_ms: int | None
    min_score: float | None


class Table(TableWrites):
    """One record kind (``store.table(...)``): rows keyed by ``(namespace, id)``.

    Every read and write names a namespace (reads may pass :data:`ALL_NAMESPACES`), so no value
    can reach another namespace. Filters are :class:`~mindcore.store.Filter` objects built with
    :func:`~mindcore.store.col`; there is no way to pass a where string.

    >>> import mindcore, pyarrow as pa
    >>> t = mindcore.open("memory://").table("facts", {"text": pa.string(), "importance": pa.float32()})
    >>> _ = t.upsert("u1", [{"id": "f1", "text": "likes tea", "tags": ["food"], "importance": 0.5}])
    >>> t.get("u1", ["f1"])[0]["text"], t.count("u1"), t.count("u2")
    ('likes tea', 1, 0)
    """

    def __init__(
        self,
        ctx: TableContext,
        name: str,
        lance: Any,
        lock: Lock,
        embedder: EmbedderLike | None,
    ) -> None:
        self._ctx = ctx
        self.name = name
        self._tbl = lance
        self._lock = lock
        self._embedder = embedder
        # (model id, dim) of the bound embedder, read once when bound (reading .dim may cost a request).
        self._bound: tuple[str, int] | None = None
        # Set when the table's vectors were rewritten for another model than the bound one: every
        # read and write of this handle then raises instead of mixing two models' vectors.
        self._retired: str | None = None
        self._schema: pa.Schema = lance.schema
        self._writes = 0
        table_dir = os.path.join(ctx.uri, f"{name}.lance") if ctx.kind == "local" else None
        self._versions = VersionTracker(lance, ctx.kind, table_dir, ctx.read_consistency_s)
        self._state_lock = threading.Lock()
        self._index_cache: tuple[int, bool] | None = None
        self._count_cache: dict[str, tuple[int, int]] = {}
        self._census: Census | None = None  # the namespaces with rows, for has_rows
        self._census_off = False  # no census can be taken (too big a table): look namespaces up
        self._census_lock = threading.Lock()
        self._group = GroupCommit()  # this process's writers waiting to share a commit

    def __repr__(self) -> str:
        return f"Table({self.name!r}, dim={self.dim}, store={self._ctx.uri!r})"

    # -- introspection --------------------------------------------------------------------------

    @property
    def store(self) -> StoreHandle:
        """The store this table belongs to."""
        return self._ctx.store

    @property
    def schema(self) -> pa.Schema:
        """The stored Arrow schema (standard columns, kind columns, any added later)."""
        return self._schema

    @property
    def dim(self) -> int | None:
        """Dimension of the vector column (``None`` for tables without vectors)."""
        return vector_dim(self._schema)

    @property
    def embedder(self) -> EmbedderLike | None:
        """The embedder bound to this table (used when :meth:`search` is given text)."""
        return self._embedder

    @property
    def version(self) -> int:
        """The table's latest version (on object storage: as of the read-consistency interval)."""
        return self._version()

    def refresh(self) -> int:
        """Bring the table to its latest committed version now, whatever the read-consistency
        interval allows, and return that version.

        Call it first in a read-modify-write under a store lock (:meth:`Store.lock`): the reads that
        follow then see every write committed before the lock was taken. Reads of a local folder
        always do; on object storage they may otherwise lag by up to
        ``StoreConfig.read_consistency``.
        """
        return self._exact()

    def _version(self) -> int:
        """Bring the LanceDB table object up to the latest version; every read starts here."""
        if self._retired is not None:
            raise EmbedderMismatchError(self._retired)
        before = self._versions.loaded
        v = self._versions.current()
        if v != before:
            self._adopt(self._tbl.schema)
        return v

    def _reset(self, lance: Any) -> None:
        """Use a new LanceDB object for this table (after the store altered its schema)."""
        self._tbl = lance
        self._versions.reset(lance)
        self._adopt(lance.schema)

    def _bind(self, embedder: EmbedderLike, model_id: str, dim: int) -> None:
        """Embed text queries with ``embedder`` (model ``model_id``, ``dim`` wide)."""
        self._embedder = embedder
        self._bound = (model_id, dim)

    def _adopt(self, schema: pa.Schema) -> None:
        """Use ``schema`` as the stored schema. When the vector column now holds another model's
        vectors than the bound embedder's (the table was re-embedded), retire this handle and raise
        :class:`EmbedderMismatchError`: its queries would be scored against the wrong model."""
        if self._bound is not None and self._retired is None:
            model, dim = vector_model(schema), vector_dim(schema)
            if (model is not None and model != self._bound[0]) or (dim is not None and dim != self._bound[1]):
                # Keep the old schema: the handle's users still see the dimension of their own model.
                self._retire(model or "(not recorded)", dim)
                raise EmbedderMismatchError(self._retired)
        self._schema = schema

    def _retire(self, model_id: str, dim: int | None) -> None:
        """Refuse every further use of this handle: the table now holds ``model_id``'s vectors."""
        bound = "(none)" if self._bound is None else f"{self._bound[0]!r} (dim {self._bound[1]})"
        self._retired = (
            f"table {self.name!r} was re-embedded with model {model_id!r} (dim {dim}) but this handle uses "
            f"embedding model {bound}; open the store again with the new model"
        )

    # -- reads ----------------------------------------------------------------------------------

    def _read(self, read: Callable[[], _T], *, attempts: int = 2) -> _T:
        """Run ``read`` against the loaded version; if files it reads are gone (another process
        purged the table, or its maintenance deleted the version), re-open the latest version and
        run it again, up to ``attempts`` runs in all."""
        for _ in range(attempts - 1):
            try:
                return read()
            except (RuntimeError, OSError, ValueError) as e:
                if not _vanished(e):
                    raise
                log.info("table %r: files of version %d were deleted (a purge or a cleanup of old "
                         "versions); reading the latest", self.name, self._versions.loaded)
            self._exact()
        return read()

    def _refresh_schema(self) -> bool:
        """Re-read the stored schema (another process may have added columns); True if it moved."""
        fresh = self._tbl.schema
        if fresh.equals(self._schema):
            return False
        self._adopt(fresh)
        return True

    def _where(self, namespace: str | AllNamespaces, where: Filter | None) -> str:
        ns = None if isinstance(namespace, AllNamespaces) else check_namespace(namespace)
        try:
            return to_where(ns, where, self._schema)
        except ValueError:
            if not self._refresh_schema():
                raise
            return to_where(ns, where, self._schema)

    def _columns(self, columns: Sequence[str] | None) -> list[str] | None:
        if columns is None:
            return None
        cols = list(columns)
        unknown = [c for c in cols if c not in self._schema.names]
        if unknown and self._refresh_schema():
            unknown = [c for c in cols if c not in self._schema.names]
        if unknown:
            raise ValueError(f"unknown columns {unknown} (table columns: {self._schema.names})")
        return cols

    def scan_arrow(
        self,
        namespace: str | AllNamespaces,
        where: Filter | None = None,
        *,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        order_by: str | None = None,
        descending: bool = False,
    ) -> pa.Table:
        """Rows of ``namespace`` matching ``where`` as an Arrow table (see :meth:`scan`)."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
            raise ValueError(f"limit: expected a non-negative int or None, got {limit!r}")
        self._version()
        cols = self._columns(columns)
        w = self._where(namespace, where)
        if order_by is not None:
            self._columns([order_by])
        # Sorting needs the key and the tie-breaker (id) even when they are not asked for.
        select = cols if cols is None or order_by is None else list(dict.fromkeys([*cols, order_by, "id"]))
        def read() -> pa.Table:
            q = self._tbl.search().where(w)
            if select is not None:
                q = q.select(select)
            out: pa.Table = q.limit(None if order_by is not None else limit).to_arrow()
            return out

        out = self._read(read)
        if order_by is not None:
            out = out.sort_by([(order_by, "descending" if descending else "ascending"), ("id", "ascending")])
            if limit is not None:
                out = out.slice(0, limit)
            if cols is not None:
                out = out.select(cols)
        return out

    def scan(
        self,
        namespace: str | AllNamespaces,
        where: Filter | None = None,
        *,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        order_by: str | None = None,
        descending: bool = False,
    ) -> list[Row]:
        """Rows of ``namespace`` matching ``where`` (all rows if ``None``), as dicts.

        ``columns`` picks columns (default: all), ``order_by`` sorts (ties by id), ``limit`` caps.

        >>> import mindcore, pyarrow as pa
        >>> t = mindcore.open("memory://").table("t", {"n": pa.int64()})
        >>> _ = t.upsert("ns", [{"id": str(i), "n": i} for i in range(5)])
        >>> [r["n"] for r in t.scan("ns", col("n").ge(2), order_by="n", descending=True, limit=2)]
        [4, 3]
        """
        return rows_from_arrow(
            self.scan_arrow(namespace, where, columns=columns, limit=limit, order_by=order_by, descending=descending)
        )

    def get(self, namespace: str, ids: Iterable[str], *, columns: Sequence[str] | None = None) -> list[Row]:
        """The rows with these ids, in the order asked (ids with no row are skipped)."""
        check_namespace(namespace)
        want = check_ids(ids)
        found: dict[str, Row] = {}
        uniq = list(dict.fromkeys(want))
        cols = None if columns is None else list(dict.fromkeys(["id", *columns]))
        for i in range(0, len(uniq), _GET_CHUNK):
            chunk = uniq[i : i + _GET_CHUNK]
            for r in self.scan(namespace, col("id").is_in(chunk), columns=cols):
                found[r["id"]] = r
        out = [found[i] for i in uniq if i in found]
        if columns is not None and "id" not in columns:
            for r in out:
                r.pop("id")
        return out

    def get_one(self, namespace: str, id: str) -> Row | None:
        """The row with this id, or ``None``."""
        rows = self.get(namespace, [id])
        return rows[0] if rows else None

    def count(self, namespace: str | AllNamespaces, where: Filter | None = None) -> int:
        """Number of rows of ``namespace`` matching ``where``."""
        self._version()
        w = self._where(namespace, where)
        return self._read(lambda: int(self._tbl.count_rows(w)))

    def has_rows(self, namespace: str) -> bool:
        """Whether ``namespace`` has any row at the table's latest version. Once this process
        holds the list of the table's namespaces (see :class:`~mindcore.store.census.Census`), a
        namespace that never had rows, a new session or user, is told without a read.

        >>> import mindcore, pyarrow as pa
        >>> t = mindcore.open("memory://").table("log", {"line": pa.string()})
        >>> _ = t.append("a", [{"line": "first"}])
        >>> t.has_rows("a"), t.has_rows("b")
        (True, False)
        """
        check_namespace(namespace)
        if self._surely_empty([namespace], self._version()):
            return False
        return self.count(namespace) > 0

    def _surely_empty(self, namespaces: Iterable[str], version: int) -> bool:
        """Whether the census says none of ``namespaces`` has rows at ``version`` (``False`` when
        it cannot tell), taking the census first if this process has none."""
        if self._ctx.kind == "memory" or self._census_off:
            return False  # an in-process table has no fragments to follow
        with self._census_lock:  # one thread at a time reads or changes the census
            census = self._census
            if census is not None and census.version < version and not census.catch_up(self._tbl):
                census = None
            if census is None:
                census = self._census = Census.take(self._tbl)
                if census is None:  # too big a table to hold its namespaces
                    self._census_off = True
                    return False
            return census.lists_none_of(namespaces, version)

    def stats(self) -> TableStats:
        """What the table holds at its latest version (rows per namespace, versions kept, sizes):
        see :class:`~mindcore.store.TableStats`. Reads only.

        >>> import mindcore, pyarrow as pa
        >>> t = mindcore.open("memory://").table("notes", {"text": pa.string()})
        >>> _ = t.upsert("a", [{"id": "1", "text": "x"}, {"id": "2", "text": "y"}])
        >>> _ = t.upsert("b", [{"id": "1", "text": "z"}])
        >>> s = t.stats()
        >>> s.rows, s.namespaces
        (3, {'a': 2, 'b': 1})
        """
        # Lance lists the files, then reads what they say: a cleanup (maintenance here or in
        # another process) can delete one in between, as often as the table is written.
        return self._read(self._stats, attempts=_STATS_ATTEMPTS)

    def _stats(self) -> TableStats:
        version = self._version()
        names = self.scan_arrow(ALL_NAMESPACES, columns=["namespace"]).column("namespace")
        found: Any = pc.value_counts(names)
        counts = {str(v): int(n) for v, n in zip(found.field("values").to_pylist(),
                                                 found.field("counts").to_pylist(), strict=True)}
        lance_stats = self._tbl.stats()
        # A memory:// table has no files for Lance to list.
        usage: DiskUsage | None = None if self._ctx.kind == "memory" else disk_usage(self._dataset())
        return TableStats(
            name=self.name, rows=sum(counts.values()), namespaces=dict(sorted(counts.items())), version=version,
            versions=len(self._tbl.list_versions()) if usage is None else usage.versions,
            data_bytes=int(lance_stats.get("total_bytes", 0)),
            disk_bytes=None if usage is None else usage.disk_bytes,
            fragments=int(lance_stats.get("fragment_stats", {}).get("num_fragments", 0)),
            deleted_rows=None if usage is None else usage.deleted_rows,
            reclaimable_bytes=None if usage is None else usage.reclaimable_bytes,
            dim=self.dim, columns=list(self._schema.names),
        )

    def namespaces(self) -> list[str]:
        """Every namespace that has rows (sorted)."""
        t = self.scan_arrow(ALL_NAMESPACES, columns=["namespace"])
        return sorted({str(v) for v in t.column("namespace").to_pylist()})

    # -- the vector cache -----------------------------------------------------------------------

    def _held_entries(self, namespaces: Sequence[str], version: int | None) -> tuple[int, dict[str, CacheEntry]]:
        """The version read at (``version``, else the table's current one) and the entries of
        ``namespaces`` held at it. When one is missing while another thread of this process is
        committing, that commit is waited for and the lookup made again: the version seen may be
        that commit's, and its patch holds the rows."""
        cache = self._ctx.cache
        for attempt in range(2):
            v = self._version() if version is None else version
            held = {ns: e for ns in namespaces if (e := cache.get(self.name, ns, v)) is not None}
            if len(held) == len(namespaces) or attempt or not cache.wait_committed(
                    self.name, self._ctx.config.lock_timeout):
                break
        return v, held

    def _entry(self, namespace: str, version: int | None = None) -> CacheEntry:
        cache = self._ctx.cache
        v, held = self._held_entries([namespace], version)
        if namespace in held:
            return held[namespace]
        if self._surely_empty([namespace], v):  # a new namespace: nothing to read
            e = CacheEntry.empty(self._schema, v, self.dim or 0)
            cache.put(self.name, namespace, e)
            return e
        # Label with the version read *before* the scan: data at least that new, never older.
        w = to_where(namespace, None, self._schema)
        data = self._read(lambda: self._tbl.search().where(w).limit(None).to_arrow())
        e = CacheEntry.from_arrow(data, v, self.dim or 0)
        cache.put(self.name, namespace, e)
        return e

    def cached(self, namespace: str) -> CacheEntry:
        """``namespace`` at the table's current version as held in memory (loaded by one scan
        if it is not): every column, and the vectors as an ``(n, dim)`` matrix. Read-only and
        shared: never modify its arrays. A new entry replaces it after each write."""
        check_namespace(namespace)
        return self._entry(namespace)

    def held(self, namespace: str) -> CacheEntry | None:
        """:meth:`cached` when ``namespace`` is held in memory at the table's current version,
        else ``None``; never reads the table. An entry keeps its ``serial`` while the table's
        version moves without changing its rows (a compaction, an index update)."""
        check_namespace(namespace)
        return self._ctx.cache.get(self.name, namespace, self._version())

    def cached_many(self, namespaces: Iterable[str]) -> dict[str, CacheEntry]:
        """:meth:`cached` of several namespaces at one table version: those not held in memory
        are loaded by one scan (``namespace IN (...)``) and split, not one scan each. Every
        namespace asked for is in the result (an empty entry when it has no rows). Like
        :meth:`cached`, the entries are read-only and shared.

        >>> import mindcore, pyarrow as pa
        >>> t = mindcore.open("memory://").table("notes", {"text": pa.string()})
        >>> _ = t.upsert("a", [{"id": "1", "text": "x"}, {"id": "2", "text": "y"}])
        >>> _ = t.upsert("b", [{"id": "1", "text": "z"}])
        >>> {ns: e.n for ns, e in t.cached_many(["a", "b", "c"]).items()}
        {'a': 2, 'b': 1, 'c': 0}
        """
        wanted = list(dict.fromkeys(check_namespace(ns) for ns in namespaces))
        cache = self._ctx.cache
        v, out = self._held_entries(wanted, None)
        missing = [ns for ns in wanted if ns not in out]
        if missing:
            # Label with the version read *before* the scan: data at least that new, never older.
            where = to_where(None, col("namespace").is_in(missing), self._schema)
            parts = split_by_namespace(self._read(lambda: self._tbl.search().where(where).limit(None).to_arrow()))
            empty = self._schema.empty_table()
            for ns in missing:
                e = CacheEntry.from_arrow(parts.get(ns, empty), v, self.dim or 0)
                cache.put(self.name, ns, e)
                out[ns] = e
        return {ns: out[ns] for ns in wanted}

    def vectors(self, namespace: str, where: Filter | None = None) -> tuple[list[str], np.ndarray]:
        """Ids and vectors (``(n, dim)`` float32, read-only) of the rows of ``namespace`` that
        have a vector and match ``where``: the input of ``kernels.near_duplicates`` and friends.
        """
        check_namespace(namespace)
        self._need_vectors()
        e = self._entry(namespace)
        mask = e.has_vector & to_mask(where, e.scalars)
        idx = np.flatnonzero(mask)
        ids = [str(v) for v in e.scalars.column("id").take(idx).to_pylist()]
        mat = e.matrix if len(idx) == e.n else e.matrix[idx]
        mat = mat.view()
        mat.flags.writeable = False
        return ids, mat

    def _need_vectors(self) -> int:
        dim = self.dim
        if dim is None:
            raise ValueError(f"table {self.name!r} has no vector column (create it with vectors=True)")
        return dim

    # -- search ---------------------------------------------------------------------------------

    def search(
        self,
        namespace: str,
        query: str | np.ndarray | Sequence[float],
        *,
        k: int = 10,
        metric: Literal["cosine", "dot"] = "cosine",
        w_sim: float = 1.0,
        w_rec: float = 0.0,
        w_extra: float = 0.0,
        time_column: str = "updated_at",
        half_life_ms: float | None = None,
        tau_ms: float | None = None,
        now_ms: int | None = None,
        extra_column: str | None = None,
        where: Filter | None = None,
        min_score: float | None = None,
        exact: bool | None = None,
        columns: Sequence[str] | None = None,
        with_vector: bool = False,
        weights: Weights | None = None,
    ) -> list[Hit]:
        """The ``k`` best rows of ``namespace`` for ``query``, best first, scored
        ``w_sim * similarity + w_rec * decay(now - time_column) + w_extra * extra_column``
        (:func:`mindcore.store.rank`; decay is ``0.5 ** (age / half_life_ms)`` or
        ``exp(-age / tau_ms)``). ``weights`` (a :class:`~mindcore.store.Weights`) may replace
        ``w_sim``, ``w_rec``, ``w_extra``, ``half_life_ms`` and ``tau_ms``. ``query`` is a vector,
        or text embedded with the table's embedder. ``where`` pre-filters; rows without a vector
        never match.

        Namespaces below ``StoreConfig.ann_threshold`` rows are searched exactly in memory.
        Larger ones use the table's vector index when it exists (``exact=True`` forbids that):
        the index proposes ``ann_candidates`` rows, which are then scored as above.

        >>> import mindcore, numpy as np, pyarrow as pa
        >>> from mindcore.embed import HashEmbedder
        >>> emb = HashEmbedder()
        >>> t = mindcore.open("memory://", embedder=emb).table("docs", {"text": pa.string()}, vectors=True)
        >>> texts = ["the cat sat on the mat", "stock markets fell", "a kitten on a rug"]
        >>> _ = t.upsert("u", [{"id": str(i), "text": s, "vector": v}
        ...                    for i, (s, v) in enumerate(zip(texts, emb.embed(texts)))])
        >>> t.search("u", "cat on a mat", k=2)[0].row["text"]
        'the cat sat on the mat'
        """
        check_namespace(namespace)
        dim = self._need_vectors()
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"k: expected a positive int, got {k!r}")
        if metric not in ("cosine", "dot"):
            raise ValueError(f"metric: expected 'cosine' or 'dot', got {metric!r}")
        if weights is None:
            weights = _weights(w_sim, w_rec, w_extra, half_life_ms, tau_ms)
        elif (w_sim, w_rec, w_extra, half_life_ms, tau_ms) != (1.0, 0.0, 0.0, None, None):
            raise ValueError("weights: give weights= or w_sim/w_rec/w_extra/half_life_ms/tau_ms, not both")
        elif not isinstance(weights, Weights):
            raise TypeError(f"weights: expected mindcore.store.Weights, got {type(weights).__name__}")
        q = self._query_vector(query, dim)
        cols = self._columns(columns)
        for c in (time_column, extra_column):
            if c is not None:
                self._columns([c])
        if weights.extra != 0 and extra_column is None:
            raise ValueError("w_extra is non-zero but no extra_column was given")
        scoring = _Scoring(weights, metric, time_column, extra_column, now_ms, min_score)
        version = self._version()  # one check per search (it costs a LanceDB round trip)
        if exact is not True and self._ann_eligible(namespace, version):
            e = self._ann_candidates(namespace, q, metric, where, max(self._ctx.config.ann_candidates, 4 * k))
            mask = e.has_vector.copy()
        else:
            e = self._entry(namespace, version)
            mask = e.has_vector & to_mask(where, e.scalars)
        if e.n == 0:
            return []
        return self._score(e, q, mask, scoring, k=k, cols=cols, with_vector=with_vector)

    def _query_vector(self, query: str | np.ndarray | Sequence[float], dim: int) -> np.ndarray:
        if isinstance(query, str):
            if self._embedder is None:
                raise ValueError(
                    f"table {self.name!r} has no embedder to embed a text query: pass a vector, or an "
                    "embedder to mindcore.open / store.table"
                )
            query = self._embedder.embed([query])[0]
        q = np.ascontiguousarray(query, dtype=np.float32)
        if q.shape != (dim,):
            raise ValueError(f"query: expected a vector of shape ({dim},), got {q.shape}")
        if not np.isfinite(q).all():
            raise ValueError("query: contains NaN or infinity")
        return q

    def _score(
        self, e: CacheEntry, q: np.ndarray, mask: np.ndarray, scoring: _Scoring, *, k: int,
        cols: list[str] | None, with_vector: bool,
    ) -> list[Hit]:
        """Rank the rows of ``e`` with :func:`rank` and turn the best into :class:`Hit` objects."""
        w = scoring.weights
        top = rank(
            q, e.matrix, w, k=k, metric=scoring.metric, min_score=scoring.min_score,
            now_ms=now_ms() if scoring.now_ms is None else scoring.now_ms, mask=mask,
            timestamps=e.int64(scoring.time_column) if w.recency != 0 else None,
            extra=e.float32(scoring.extra_column) if w.extra != 0 and scoring.extra_column is not None else None,
            inv_norms=_cached_inv_norms(e) if scoring.metric == "cosine" else None, shadow=e.row_shadow() if 8 * k <= e.n else None,
        )
        idx = top.indices
        if len(idx) == 0:
            return []
        names = None if cols is None else [c for c in dict.fromkeys(["id", *cols]) if c != VECTOR]
        out_rows = e.rows(idx, names)
        want_vec = with_vector or (cols is not None and VECTOR in cols)
        hits = []
        for j, r in enumerate(out_rows):
            i = int(idx[j])
            if want_vec:
                r[VECTOR] = e.matrix[i].copy()
            rid = r["id"] if cols is None or "id" in cols else r.pop("id")
            hits.append(Hit(str(rid), float(top.scores[j]), float(top.similarities[j]), r))
        return hits

    # -- ANN --------------------------------------------------------------------------------------

    def _has_vector_index(self, version: int | None = None) -> bool:
        v = self._version() if version is None else version
        if self._index_cache is not None and self._index_cache[0] == v:
            return self._index_cache[1]
        has = any(VECTOR in ix.columns for ix in self._tbl.list_indices())
        self._index_cache = (v, has)
        return has

    def _ann_eligible(self, namespace: str, v: int) -> bool:
        threshold = self._ctx.config.ann_threshold
        e = self._ctx.cache.get(self.name, namespace, v)
        if e is not None:
            n = e.n
        else:
            hit = self._count_cache.get(namespace)
            if hit is not None and hit[0] == v:
                n = hit[1]
            else:
                n = self.count(namespace)
                self._count_cache[namespace] = (v, n)
        return n >= threshold and self._has_vector_index(v)

    def _ann_candidates(
        self, namespace: str, q: np.ndarray, metric: Metric, where: Filter | None, candidates: int
    ) -> CacheEntry:
        """The rows the vector index proposes for ``q``, as an uncached entry to be scored exactly."""
        w = self._where(namespace, where)
        data = self._read(lambda: (
            self._tbl.search(q, vector_column_name=VECTOR)
            .distance_type("dot" if metric == "dot" else "cosine")
            .where(w, prefilter=True)
            .limit(candidates)
            .to_arrow()
        ))
        data = data.drop_columns([c for c in data.column_names if c.startswith("_")])
        return CacheEntry.from_arrow(data, -1, self.dim or 0)

    def create_vector_index(self, *, metric: Literal["cosine", "dot"] = "cosine") -> None:
        """Build (or rebuild) the IVF_HNSW_SQ index on the vector column. Maintenance does this
        by itself once the table reaches ``StoreConfig.index_min_rows`` rows."""
        self._ctx.refuse_writes(f"index table {self.name!r}")
        from lancedb.index import IvfHnswSq

        self._need_vectors()
        n = int(self._tbl.count_rows())
        # LanceDB's default partitioning; small tables get at least one partition per ~4k rows.
        parts = max(1, min(256, n // 4096))
        self._tbl.create_index(VECTOR, config=IvfHnswSq(distance_type=metric, num_partitions=parts), replace=True)
        self._index_cache = None

    # -- maintenance ----------------------------------------------------------------------------

    def compact(self, *, cleanup_grace: timedelta | None = None, never_grow: bool = False) -> CompactionResult:
        """Merge the table's small fragments, fold new rows into its indexes, and delete versions
        older than ``cleanup_grace`` (default ``StoreConfig.cleanup_grace``). The rows (and the
        vector cache) are unchanged. Maintenance runs this by itself every
        ``StoreConfig.compact_every`` writes.

        Compaction is tiered (see :mod:`mindcore.store.compaction`): fragments under 1,024 rows
        merge at every run, bigger ones only once eight of a size exist, and big fragments (a
        bulk write, or half a million rows merged over time) are never rewritten, except to drop
        deleted rows where more than a tenth of a fragment's rows are deleted. Rows not indexed
        yet are folded into the indexes first, so that one call merges as far as compaction can
        (the automatic passes wait until a sixteenth of the rows are new). The rewrite runs
        beside the writers; only its commit, and the index update, hold the table's write lock.
        A commit that conflicts with a concurrent delete or update is redone over the new
        version, up to ``RETRIES`` times, and the files of the refused rewrite are deleted at
        once; after that the merge is left for the next run (``deferred`` in the result), which
        background maintenance runs again by itself.

        ``never_grow=True`` (``mindcore compact``) merges only when the files it replaces can be
        deleted in the same run, i.e. when the table's newest version is older than
        ``cleanup_grace``; otherwise it only deletes old versions and leaves the merge for later
        (``deferred``), since the replaced files would stay on disk beside the merged ones.

        >>> import mindcore, pyarrow as pa
        >>> t = mindcore.open("memory://").table("notes", {"text": pa.string()})
        >>> for i in range(3):
        ...     _ = t.upsert("u", [{"id": str(i), "text": "x"}])
        >>> _ = t.compact()
        >>> t.count("u")
        3
        """
        return self._maintain(cleanup_grace, never_grow=never_grow, settle=True)

    def _maintain(self, cleanup_grace: timedelta | None = None, *, never_grow: bool = False,
                  settle: bool) -> CompactionResult:
        """One maintenance pass (see :meth:`compact`). ``settle`` folds every row not indexed
        yet into the indexes before merging, so the merge is not split at the indexed rows'
        edge (the planner never merges fragments covered by different indexes): one pass leaves
        the table as compact as a compaction can. Passes scheduled by writes skip that until a
        sixteenth of the rows are new (updating an index rewrites it whole)."""
        self._ctx.refuse_writes(f"compact table {self.name!r}")
        cfg = self._ctx.config
        grace = cfg.cleanup_grace if cleanup_grace is None else cleanup_grace
        if self._ctx.kind == "memory":
            # An in-process table has no files another library can open: LanceDB's own optimize.
            with self._lock.hold(cfg.lock_timeout):
                old = self._versions.exact()
                self._tbl.optimize(cleanup_older_than=grace)
                new = int(self._tbl.version)
                self._after_commit(old, new, set())
            result = CompactionResult(new)
        elif never_grow and self._newest_commit_age() < grace:
            self._dataset().cleanup_old_versions(older_than=grace)
            result = CompactionResult(int(self._tbl.version), deferred=True)
        else:
            self._optimize_indices(every_row=settle)
            result = self._compact_files()
            # A merge can fill the next tier: settling runs again until a run merges nothing (one
            # run per tier at most), so the table is left as compact as compaction makes it.
            for _ in range(TIERS if settle else 0):
                if not result.fragments_removed or result.deferred:
                    break
                again = self._compact_files()
                if not again.fragments_removed:
                    break
                result = dataclasses.replace(
                    again, fragments_removed=result.fragments_removed + again.fragments_removed,
                    fragments_added=result.fragments_added + again.fragments_added,
                    retries=result.retries + again.retries)
            self._dataset().cleanup_old_versions(older_than=grace)
        self._writes = 0
        if (
            self.dim is not None
            and cfg.index_min_rows
            and not self._has_vector_index()
            and int(self._tbl.count_rows()) >= cfg.index_min_rows
        ):
            self.create_vector_index()
        return result

    def _newest_commit_age(self) -> timedelta:
        """How long ago the table's newest version was committed."""
        ds = self._dataset()
        # Lance 14 reads the checked-out version from its manifest; Lance 13 lists every version.
        current = ds.get_version() if hasattr(ds, "get_version") else ds.versions()[-1]
        newest: datetime = current["timestamp"]
        now = datetime.now(newest.tzinfo) if newest.tzinfo is not None else datetime.now()
        return now - newest

    def _dataset(self) -> Any:
        """The table as a ``lance.LanceDataset`` at its latest version (for maintenance)."""
        import lance

        return lance.dataset(self._lance_uri(), storage_options=dict(self._ctx.storage_options) or None)

    def _lance_uri(self) -> str:
        """Where LanceDB keeps the table (a folder or an object-storage prefix)."""
        if self._ctx.kind == "local":
            return os.path.join(self._ctx.uri, f"{self.name}.lance")
        return f"{self._ctx.uri.rstrip('/')}/{self.name}.lance"

    def _compact_files(self) -> CompactionResult:
        """One tiered compaction: plan and rewrite without the write lock, commit under it; a
        commit that conflicts is planned and rewritten again, up to ``RETRIES`` times."""
        from lance.optimize import Compaction

        retries = 0
        discarded: list[Any] = []  # rewrites whose commit conflicted: their files are referenced by no version
        try:
            while True:
                ds = self._dataset()
                target, plans = plan_compaction(ds)
                rewrites: list[Any] = []
                try:
                    for plan in plans:
                        if plan.num_tasks():
                            rewrites += _rewrite(ds, plan)
                except (OSError, RuntimeError) as e:
                    # Another process compacted these fragments and its cleanup deleted them (the
                    # version planned at was past the grace): plan again at the latest version.
                    discarded.extend(rewrites)  # plans rewritten before: no version will use them
                    if not _vanished(e) or retries >= RETRIES:
                        raise
                    log.debug("table %r: the fragments planned for merging were merged elsewhere; "
                              "planning again", self.name)
                    retries += 1
                    continue
                if not rewrites:
                    return CompactionResult(self._version(), target_rows=target, retries=retries)
                with self._lock.hold(self._ctx.config.lock_timeout):
                    old = self._exact()
                    # The rewrite changes no row, and no one else commits while we hold the lock:
                    # cached namespaces stay valid, also for a read that sees the new version
                    # before it is recorded.
                    with self._ctx.cache.keeping_rows(self.name, old):
                        try:
                            # Committed against ``ds``, the version it was planned at, so Lance
                            # sees every delete and update made since (and refuses the commit if
                            # one touched a rewritten fragment): no deleted row comes back.
                            metrics = Compaction.commit(ds, rewrites)
                        except OSError as e:
                            if not is_retryable_conflict(e):
                                raise
                            metrics = None
                        else:
                            new = self._versions.exact()
                            self._after_commit(old, new, set())
                if metrics is not None:
                    return CompactionResult(new, int(metrics.fragments_removed), int(metrics.fragments_added),
                                            target, retries)
                # Nothing was committed: the table is as the concurrent write left it.
                discarded.extend(rewrites)
                if retries >= RETRIES:
                    log.debug("table %r: compaction conflicted with concurrent writes %d times; "
                              "left for the next run", self.name, retries + 1)
                    return CompactionResult(old, target_rows=target, retries=retries, deferred=True)
                log.debug("table %r: compaction conflicted with a concurrent write; planning again", self.name)
                retries += 1
        finally:
            if discarded:
                self._delete_unreferenced(discarded)

    def _delete_unreferenced(self, rewrites: Sequence[Any]) -> None:
        """Delete the data files ``rewrites`` wrote, whose commit was refused (no version
        references them, and no later one will: every rewrite writes files of new names)."""
        from lance.file import LanceFileSession

        data = LanceFileSession(f"{self._lance_uri()}/data", storage_options=dict(self._ctx.storage_options) or None)
        for rewrite in rewrites:
            for fragment in rewrite.new_fragments:
                for file in fragment.files:
                    try:
                        data.delete_file(file.path)
                    except OSError:  # Lance's version cleanup deletes it once it is 7 days old
                        log.debug("table %r: could not delete the unreferenced file %s", self.name, file.path,
                                  exc_info=True)

    def _optimize_indices(self, *, every_row: bool) -> None:
        """Fold the rows not indexed yet into the table's indexes: any such row with
        ``every_row``, else once they are a sixteenth of the rows (updating an index rewrites
        it whole); under the write lock, as it commits."""
        ds = self._dataset()
        indexes = ds.describe_indices()
        if every_row:
            due = any(int(ds.stats.index_stats(ix.name)["num_unindexed_fragments"]) for ix in indexes)
        else:
            total = int(ds.count_rows())
            due = any((total - int(ix.num_rows_indexed)) * 16 >= total > 0 for ix in indexes)
        if not due:
            return
        with self._lock.hold(self._ctx.config.lock_timeout):
            old = self._exact()
            with self._ctx.cache.keeping_rows(self.name, old):
                self._dataset().optimize.optimize_indices()  # may commit once per index
                new = self._versions.exact()
                self._after_commit(old, new, set())
        self._index_cache = None

    def purge(self) -> int:
        """Remove deleted rows from every file of the table now, and every old version with them;
        returns the table's new version.

        After a delete, LanceDB keeps the deleted values in data files (a fragment is rewritten
        only once enough of its rows are deleted) and in old versions (kept for
        ``StoreConfig.cleanup_grace``). When this returns, no file of the table holds a row that
        was deleted before it: each fragment with deleted rows is rewritten without them, then the
        table is compacted, its indexes updated and every version but the latest deleted, all
        under the table's write lock. Live rows are unchanged. Readers in other processes that
        were reading an old version re-open the latest one at their next read. Rather than
        calling it after a delete, pass ``purge=True`` to :meth:`delete` or :meth:`clear`.

        >>> import mindcore, pyarrow as pa
        >>> t = mindcore.open("memory://").table("notes", {"text": pa.string()})
        >>> _ = t.upsert("u", [{"id": "a", "text": "keep"}, {"id": "b", "text": "forget me"}])
        >>> _ = t.delete("u", ids=["b"], purge=True)
        >>> [r["text"] for r in t.scan("u")], t.stats().versions
        (['keep'], 1)
        """
        self._ctx.refuse_writes(f"purge table {self.name!r}")
        with self._lock.hold(self._ctx.config.lock_timeout):
            return self._purge_locked()

    # -- async twins ----------------------------------------------------------------------------

    async def apurge(self) -> int:
        return await asyncio.to_thread(self.purge)

    async def aget(self, namespace: str, ids: Iterable[str], *, columns: Sequence[str] | None = None) -> list[Row]:
        return await asyncio.to_thread(lambda: self.get(namespace, ids, columns=columns))

    async def aget_one(self, namespace: str, id: str) -> Row | None:
        return await asyncio.to_thread(self.get_one, namespace, id)

    async def ascan(self, namespace: str | AllNamespaces, where: Filter | None = None, **kwargs: Any) -> list[Row]:
        return await asyncio.to_thread(lambda: self.scan(namespace, where, **kwargs))

    async def acount(self, namespace: str | AllNamespaces, where: Filter | None = None) -> int:
        return await asyncio.to_thread(self.count, namespace, where)

    async def ahas_rows(self, namespace: str) -> bool:
        return await asyncio.to_thread(self.has_rows, namespace)

    async def asearch(self, namespace: str, query: str | np.ndarray | Sequence[float], **kwargs: Any) -> list[Hit]:
        return await asyncio.to_thread(lambda: self.search(namespace, query, **kwargs))

    async def avectors(self, namespace: str, where: Filter | None = None) -> tuple[list[str], np.ndarray]:
        return await asyncio.to_thread(self.vectors, namespace, where)

    async def arefresh(self) -> int:
        return await asyncio.to_thread(self.refresh)

    async def acompact(self, *, cleanup_grace: timedelta | None = None) -> CompactionResult:
        return await asyncio.to_thread(lambda: self.compact(cleanup_grace=cleanup_grace))


def _rewrite(ds: Any, plan: Any) -> list[Any]:
    """Run the tasks of a compaction plan: read the fragments, write the merged ones (nothing is
    committed yet; writers go on meanwhile)."""
    return [task.execute(ds) for task in plan.tasks]


def _cached_inv_norms(e: CacheEntry) -> np.ndarray | None:
    """The entry's cached ``1/norm`` per row, so a cosine search reads each row for its dot
    product alone; ``None`` (the kernel computes them) while a row is not finite."""
    try:
        return e.row_norms().inv
    except ValueError:
        return None
