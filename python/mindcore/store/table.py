"""A table of one record kind: reads, writes, units of work and hybrid search."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, final

import numpy as np
import pyarrow as pa

from mindcore.store.cache import CacheEntry
from mindcore.store.context import StoreHandle, TableContext
from mindcore.store.filters import Filter, all_of, any_of, col, to_mask, to_where
from mindcore.store.schema import VECTOR, Row, now_ms, rows_from_arrow, rows_to_arrow, vector_dim
from mindcore.store.versions import VersionTracker

if TYPE_CHECKING:
    from mindcore.kernels import Metric
    from mindcore.store.locks import Lock

__all__ = ["ALL_NAMESPACES", "AllNamespaces", "EmbedderLike", "Hit", "Table", "UnitOfWork", "WriteResult"]

log = logging.getLogger("mindcore.store")

_GET_CHUNK = 1000


class EmbedderLike(Protocol):
    """What the store needs from an embedder (``mindcore.embed.Embedder`` satisfies it)."""

    @property
    def dim(self) -> int: ...

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


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


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a commit did. ``version`` is the table version it created (unchanged if nothing was
    written)."""

    version: int
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


# -- units of work ---------------------------------------------------------------------------------

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

    def __init__(self, table: Table, namespace: str) -> None:
        _check_namespace(namespace)
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
        ids = _ids(ids)
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
            self._ops.append(("delete_ids", _ids(ids)))
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


def _check_namespace(namespace: object) -> str:
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"namespace: expected a non-empty str, got {namespace!r}")
    return namespace


def _ids(ids: Iterable[str]) -> list[str]:
    if isinstance(ids, str | bytes):
        raise TypeError("ids: expected a list of str, got a single str")
    out = list(ids)
    for i in out:
        if not isinstance(i, str) or not i:
            raise ValueError(f"ids: every id must be a non-empty str, got {i!r}")
    return out


# -- the table -------------------------------------------------------------------------------------


class Table:
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
        self._schema: pa.Schema = lance.schema
        self._writes = 0
        table_dir = os.path.join(ctx.uri, f"{name}.lance") if ctx.kind == "local" else None
        self._versions = VersionTracker(lance, ctx.kind, table_dir, ctx.read_consistency_s)
        self._state_lock = threading.Lock()
        self._index_cache: tuple[int, bool] | None = None
        self._count_cache: dict[str, tuple[int, int]] = {}

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

    def _version(self) -> int:
        """Bring the LanceDB table object up to the latest version; every read starts here."""
        before = self._versions.loaded
        v = self._versions.current()
        if v != before:
            self._schema = self._tbl.schema
        return v

    def _reset(self, lance: Any) -> None:
        """Use a new LanceDB object for this table (after the store altered its schema)."""
        self._tbl = lance
        self._versions.reset(lance)
        self._schema = lance.schema

    # -- reads ----------------------------------------------------------------------------------

    def _refresh_schema(self) -> bool:
        """Re-read the stored schema (another process may have added columns); True if it moved."""
        fresh = self._tbl.schema
        if fresh.equals(self._schema):
            return False
        self._schema = fresh
        return True

    def _where(self, namespace: str | AllNamespaces, where: Filter | None) -> str:
        ns = None if isinstance(namespace, AllNamespaces) else _check_namespace(namespace)
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
        q = self._tbl.search().where(w)
        if select is not None:
            q = q.select(select)
        q = q.limit(None if order_by is not None else limit)
        out: pa.Table = q.to_arrow()
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
        _check_namespace(namespace)
        want = _ids(ids)
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
        return int(self._tbl.count_rows(self._where(namespace, where)))

    def namespaces(self) -> list[str]:
        """Every namespace that has rows (sorted)."""
        t = self.scan_arrow(ALL_NAMESPACES, columns=["namespace"])
        return sorted({str(v) for v in t.column("namespace").to_pylist()})

    # -- the vector cache -----------------------------------------------------------------------

    def _entry(self, namespace: str, version: int | None = None) -> CacheEntry:
        cache = self._ctx.cache
        v = self._version() if version is None else version
        e = cache.get(self.name, namespace, v)
        if e is not None:
            return e
        # Label with the version read *before* the scan: data at least that new, never older.
        data = self._tbl.search().where(to_where(namespace, None, self._schema)).limit(None).to_arrow()
        e = CacheEntry.from_arrow(data, v, self.dim or 0)
        cache.put(self.name, namespace, e)
        return e

    def vectors(self, namespace: str, where: Filter | None = None) -> tuple[list[str], np.ndarray]:
        """Ids and vectors (``(n, dim)`` float32, read-only) of the rows of ``namespace`` that
        have a vector and match ``where``: the input of ``kernels.near_duplicates`` and friends.
        """
        _check_namespace(namespace)
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
    ) -> list[Hit]:
        """The ``k`` best rows of ``namespace`` for ``query``, best first, scored
        ``w_sim * similarity + w_rec * decay(now - time_column) + w_extra * extra_column``
        (``mindcore.kernels.hybrid_topk``; decay is ``0.5 ** (age / half_life_ms)`` or
        ``exp(-age / tau_ms)``). ``query`` is a vector, or text embedded with the table's
        embedder. ``where`` pre-filters; rows without a vector never match.

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
        _check_namespace(namespace)
        dim = self._need_vectors()
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"k: expected a positive int, got {k!r}")
        if metric not in ("cosine", "dot"):
            raise ValueError(f"metric: expected 'cosine' or 'dot', got {metric!r}")
        q = self._query_vector(query, dim)
        cols = self._columns(columns)
        for c in (time_column, extra_column):
            if c is not None:
                self._columns([c])
        cfg = self._ctx.config
        version = self._version()  # one check per search (it costs a LanceDB round trip)
        use_ann = exact is not True and self._ann_eligible(namespace, version)
        if use_ann:
            return self._search_ann(
                namespace, q, k=k, metric=metric, w_sim=w_sim, w_rec=w_rec, w_extra=w_extra,
                time_column=time_column, half_life_ms=half_life_ms, tau_ms=tau_ms, now_ms=now_ms,
                extra_column=extra_column, where=where, min_score=min_score, cols=cols,
                with_vector=with_vector, candidates=max(cfg.ann_candidates, 4 * k),
            )
        e = self._entry(namespace, version)
        if e.n == 0:
            return []
        mask = e.has_vector & to_mask(where, e.scalars)
        return self._score(
            e, q, mask, k=k, metric=metric, w_sim=w_sim, w_rec=w_rec, w_extra=w_extra,
            time_column=time_column, half_life_ms=half_life_ms, tau_ms=tau_ms, now=now_ms,
            extra_column=extra_column, min_score=min_score, cols=cols, with_vector=with_vector,
        )

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
        self,
        e: CacheEntry,
        q: np.ndarray,
        mask: np.ndarray,
        *,
        k: int,
        metric: Metric,
        w_sim: float,
        w_rec: float,
        w_extra: float,
        time_column: str,
        half_life_ms: float | None,
        tau_ms: float | None,
        now: int | None,
        extra_column: str | None,
        min_score: float | None,
        cols: list[str] | None,
        with_vector: bool,
    ) -> list[Hit]:
        from mindcore.kernels import hybrid_topk

        kwargs: dict[str, Any] = {}
        if w_rec != 0.0:
            kwargs.update(
                timestamps=e.int64(time_column), now_ms=now_ms() if now is None else now,
                half_life_ms=half_life_ms, tau_ms=tau_ms,
            )
        if w_extra != 0.0:
            if extra_column is None:
                raise ValueError("w_extra is non-zero but no extra_column was given")
            kwargs["extra"] = e.float32(extra_column)
        if not mask.any():
            return []
        top = hybrid_topk(
            q, e.matrix, k=min(k, e.n), metric=metric, w_sim=w_sim, w_rec=w_rec, w_extra=w_extra,
            mask=None if mask.all() else mask, min_score=min_score, **kwargs,
        )
        idx = np.asarray(top.indices, dtype=np.int64)
        keep = idx >= 0
        idx = idx[keep]
        scores = np.asarray(top.scores)[keep]
        sims = np.asarray(top.similarities)[keep]
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
            hits.append(Hit(str(rid), float(scores[j]), float(sims[j]), r))
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

    def _search_ann(
        self, namespace: str, q: np.ndarray, *, k: int, metric: Metric, where: Filter | None, candidates: int,
        time_column: str, half_life_ms: float | None, tau_ms: float | None, now_ms: int | None,
        extra_column: str | None, w_sim: float, w_rec: float, w_extra: float, min_score: float | None,
        cols: list[str] | None, with_vector: bool,
    ) -> list[Hit]:
        data = (
            self._tbl.search(q, vector_column_name=VECTOR)
            .distance_type("dot" if metric == "dot" else "cosine")
            .where(self._where(namespace, where), prefilter=True)
            .limit(candidates)
            .to_arrow()
        )
        data = data.drop_columns([c for c in data.column_names if c.startswith("_")])
        e = CacheEntry.from_arrow(data, -1, self.dim or 0)
        if e.n == 0:
            return []
        return self._score(
            e, q, e.has_vector.copy(), k=k, metric=metric, w_sim=w_sim, w_rec=w_rec,
            w_extra=w_extra, time_column=time_column, half_life_ms=half_life_ms, tau_ms=tau_ms, now=now_ms,
            extra_column=extra_column, min_score=min_score, cols=cols, with_vector=with_vector,
        )

    def create_vector_index(self, *, metric: Literal["cosine", "dot"] = "cosine") -> None:
        """Build (or rebuild) the IVF_HNSW_SQ index on the vector column. Maintenance does this
        by itself once the table reaches ``StoreConfig.index_min_rows`` rows."""
        from lancedb.index import IvfHnswSq

        self._need_vectors()
        n = int(self._tbl.count_rows())
        # LanceDB's default partitioning; small tables get at least one partition per ~4k rows.
        parts = max(1, min(256, n // 4096))
        self._tbl.create_index(VECTOR, config=IvfHnswSq(distance_type=metric, num_partitions=parts), replace=True)
        self._index_cache = None

    # -- writes ---------------------------------------------------------------------------------

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
        _check_namespace(namespace)
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
        _check_namespace(namespace)
        (id,) = _ids([id])
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
        from mindcore.store.ids import new_id

        _check_namespace(namespace)
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
        if source is not None:
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
        self._patch_cache(namespace, cached, source, gone, old, res.version)
        return res

    def _patch_cache(
        self, namespace: str, cached: CacheEntry | None, source: pa.Table | None, gone: np.ndarray | None,
        old: int, new: int,
    ) -> None:
        """Carry this process's commit into the cached namespace (read at ``old``) instead of
        dropping it: the next search after a write needs no scan. Only when the commit is the one
        version after ``old`` (we hold the lock, so nobody else wrote in between)."""
        if cached is None or new != old + 1:
            return
        entry = cached.patched(source, gone, new, self.dim or 0)
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

    # -- maintenance ----------------------------------------------------------------------------

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

    def compact(self, *, cleanup_grace: Any = None) -> None:
        """Merge small fragments, fold new rows into the indexes, and delete versions older than
        ``cleanup_grace`` (default ``StoreConfig.cleanup_grace``). Runs under the write lock; the
        data (and the vector cache) are unchanged."""
        cfg = self._ctx.config
        grace = cfg.cleanup_grace if cleanup_grace is None else cleanup_grace
        with self._lock.hold(cfg.lock_timeout):
            old = self._versions.exact()
            self._tbl.optimize(cleanup_older_than=grace)
            new = int(self._tbl.version)
            self._after_commit(old, new, set())
        self._writes = 0
        if (
            self.dim is not None
            and cfg.index_min_rows
            and not self._has_vector_index()
            and int(self._tbl.count_rows()) >= cfg.index_min_rows
        ):
            self.create_vector_index()

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

    async def aget(self, namespace: str, ids: Iterable[str], *, columns: Sequence[str] | None = None) -> list[Row]:
        return await asyncio.to_thread(lambda: self.get(namespace, ids, columns=columns))

    async def aget_one(self, namespace: str, id: str) -> Row | None:
        return await asyncio.to_thread(self.get_one, namespace, id)

    async def ascan(self, namespace: str | AllNamespaces, where: Filter | None = None, **kwargs: Any) -> list[Row]:
        return await asyncio.to_thread(lambda: self.scan(namespace, where, **kwargs))

    async def acount(self, namespace: str | AllNamespaces, where: Filter | None = None) -> int:
        return await asyncio.to_thread(self.count, namespace, where)

    async def asearch(self, namespace: str, query: str | np.ndarray | Sequence[float], **kwargs: Any) -> list[Hit]:
        return await asyncio.to_thread(lambda: self.search(namespace, query, **kwargs))

    async def avectors(self, namespace: str, where: Filter | None = None) -> tuple[list[str], np.ndarray]:
        return await asyncio.to_thread(self.vectors, namespace, where)

    async def acompact(self) -> None:
        await asyncio.to_thread(self.compact)

