"""`recall`: long-term memory recall for many users at once.

The queries are read in chunks. In each chunk the queries are grouped by scope (user, namespace,
workspace); their texts are embedded in large batches (one ``embed`` call per batch); the scopes
they need are loaded a bounded number of rows at a time, many scopes per LanceDB scan, by a
background thread that reads ahead while the caller's thread embeds and scores; and every group is
scored by :func:`mindcore.kernels.grouped_recall` with long-term memory's own scoring.
"""

from __future__ import annotations

import importlib
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from mindcore.batch._input import MAX_ID_CHARS, QueryRows, QuerySource, open_queries, parse_rows
from mindcore.batch._load import Scopes, count_rows, load_scopes, memory_table, open_store, plan_loads
from mindcore.batch._twin import async_twin
from mindcore.embed import Embedder
from mindcore.embed.base import check_embedder, check_vectors
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.kernels import TopK, grouped_recall
from mindcore.ltm._neighbours import cosines, with_neighbours
from mindcore.ltm._order import TIE_MARGIN
from mindcore.ltm._repo import LEXICAL_FLOOR, TABLE, scope_key, touch_rows
from mindcore.ltm._when import TimeWindow, dated, time_window, with_time_boost
from mindcore.ltm.config import DAY_MS, RecallOptions, RecallWeights
from mindcore.ltm.memory import MAX_QUERY_CHARS, MAX_RECALL_K
from mindcore.store import Store, StoreLike, Table
from mindcore.validation import check_bool, check_choice, check_id, check_int

__all__ = ["RESULT_SCHEMA", "arecall", "recall"]

Engine = Literal["local", "ray"]
ENGINES: tuple[Engine, ...] = ("local", "ray")

_RESULT_COLUMNS: dict[str, pa.DataType] = {
    "user_id": pa.string(),
    "query_index": pa.int64(),
    "rank": pa.int32(),
    "memory_id": pa.string(),
    "text": pa.string(),
    "kind": pa.string(),
    "score": pa.float32(),
    "similarity": pa.float32(),
}
#: The columns of :func:`recall`'s result, one row per hit.
RESULT_SCHEMA = pa.schema(_RESULT_COLUMNS)


@dataclass(frozen=True, slots=True)
class _Options:
    k: int
    namespace: str
    workspace_id: str | None
    weights: RecallWeights
    options: RecallOptions
    now_ms: int
    touch: bool
    chunk_size: int
    max_rows: int
    embed_batch_size: int


def recall(
    store: StoreLike,
    queries: Any,
    k: int = 10,
    *,
    namespace: str = "default",
    embedder: Embedder | None = None,
    workspace_id: str | None = None,
    weights: RecallWeights | None = None,
    options: RecallOptions | None = None,
    now_ms: int | None = None,
    touch: bool = False,
    engine: Engine = "local",
    chunk_size: int = 2_048,
    max_rows_in_memory: int = 500_000,
    embed_batch_size: int = 256,
    storage_options: Mapping[str, str] | None = None,
    num_workers: int | None = None,
    ray_init_kwargs: Mapping[str, Any] | None = None,
) -> pa.Table:
    """The ``k`` best long-term memories for every query, for many users at once.

    Each query gets what ``LongTermMemory.create(store, user_id=..., namespace=namespace,
    workspace_id=..., embedder=embedder, enabled=True).recall(query, k, touch=touch, options=options)``
    returns for it (same scores, same order, equal scores in memory-id order; neighbours in a
    thread and the lift of memories dated when a query says included; no query rewriter is asked),
    without a Python loop over users: the queries are grouped by user, embedded in large batches,
    each user's memories are read once per chunk (many users per LanceDB scan) and scored together.

    Parameters
    ----------
    store
        A :class:`~mindcore.store.Store`, or anything :func:`mindcore.open` takes (a folder,
        ``memory://name``, ``s3://...`` with ``storage_options``). A store opened here is opened
        read-only unless ``touch`` and is closed before returning.
    queries
        One query a row, with columns ``user_id`` and ``query`` (strings), optionally ``vector``
        (a list of floats per row: the query's embedding, so nothing is embedded) and
        ``workspace_id`` (null: no workspace). A ``pyarrow.Table`` or ``RecordBatchReader``, a
        pandas or polars DataFrame, or the path of a parquet, csv or jsonl file or of a folder of
        parquet files (parquet and csv are read in chunks, never whole; a jsonl file is read whole,
        as a column may first appear on any of its lines).
    k
        Hits per query, 1 to 1000.
    namespace
        The long-term memory namespace of every query.
    embedder
        The model the memories were embedded with (a store built with another model or
        dimension raises :class:`~mindcore.errors.EmbedderMismatchError`). ``None``: the bundled
        default embedder, unless the queries carry vectors.
    workspace_id
        The workspace of every query (give it here or as a column, not both).
    weights
        How to rank (:class:`~mindcore.ltm.RecallWeights`; default: long-term memory's default).
    options
        What recall adds around its hits (:class:`~mindcore.ltm.RecallOptions`; default: long-term
        memory's default, one neighbour on each side of a hit in its thread).
    now_ms
        "Now" for recency, in unix ms; default the time of the call, the same for every query.
    touch
        Record the returned memories' last access as ``LongTermMemory.recall`` does (one commit
        per scope, after every query is scored). By default nothing is written.
    engine
        ``"local"`` (this process) or ``"ray"`` (a Ray cluster, ``pip install mindcore[ray]``;
        the same result).
    chunk_size
        Queries read, embedded and scored together.
    max_rows_in_memory
        The most memory rows loaded at once. A background thread loads the next scopes while the
        current ones are scored, each load at most half of this (a scope is never split: one
        larger than that is loaded alone).
    embed_batch_size
        Texts per ``embedder.embed`` call.
    storage_options
        Object-storage options (credentials, endpoint) for a ``store`` given as a URI.
    num_workers
        ``engine="ray"``: the Ray workers (actors) sharing the work; default the cluster's CPUs.
    ray_init_kwargs
        ``engine="ray"``: arguments of ``ray.init`` when this process is not connected to Ray yet
        (then Ray is started for this call and stopped after it); an existing connection is used as is.

    Returns
    -------
    pyarrow.Table
        One row per hit (:data:`RESULT_SCHEMA`): ``user_id``, ``query_index`` (the query's row in
        the input, from 0), ``rank`` (0 is the best hit), ``memory_id``, ``text``, ``kind``,
        ``score`` and ``similarity`` (float32, as ``Memory.score`` and ``Memory.similarity``),
        sorted by ``query_index`` then ``rank``. A query of a user with no memories has no rows;
        so has every query when the store holds no long-term memory at all.

    Raises
    ------
    InvalidInputError
        A missing column; a null, empty or unstorable (NUL, over 1000 characters) user or
        workspace id; a null or blank query; a vector of the wrong dimension, null or not finite:
        the message names the row (its position in the input). Raised before any query is scored
        (a reader, readable once, is checked chunk by chunk; nothing is written or returned
        unless every chunk passed).
    EmbedderMismatchError
        The memories were embedded with another model or dimension.

    Examples
    --------
    >>> import mindcore, pyarrow as pa
    >>> from mindcore.embed import HashEmbedder
    >>> store = mindcore.open("memory://batch-doc")
    >>> for user, fact in [("ann", "Ann drinks green tea"), ("bob", "Bob rides a red bike")]:
    ...     _ = mindcore.LongTermMemory.create(store, user_id=user, embedder=HashEmbedder(),
    ...                                        enabled=True).remember(fact)
    >>> hits = mindcore.batch.recall(store, pa.table({"user_id": ["ann", "bob", "cy"],
    ...                                               "query": ["what tea?", "which bike?", "any?"]}),
    ...                              k=3, embedder=HashEmbedder())
    >>> hits.select(["user_id", "query_index", "rank", "text"]).to_pylist()[1]
    {'user_id': 'bob', 'query_index': 1, 'rank': 0, 'text': 'Bob rides a red bike'}
    >>> hits.num_rows
    2
    """
    check_choice(engine, "engine", ENGINES)
    if engine == "ray":  # the cluster engine lives beside this one and takes the same options
        ray_engine: Any = importlib.import_module("mindcore.batch._ray")
        return ray_engine.recall_ray(  # type: ignore[no-any-return]
            store, queries, k=k, namespace=namespace, embedder=embedder, workspace_id=workspace_id,
            weights=weights, options=options, now_ms=now_ms, touch=touch, chunk_size=chunk_size,
            max_rows_in_memory=max_rows_in_memory, embed_batch_size=embed_batch_size,
            storage_options=storage_options, num_workers=num_workers, ray_init_kwargs=ray_init_kwargs)
    for name, value in (("num_workers", num_workers), ("ray_init_kwargs", ray_init_kwargs)):
        if value is not None:
            raise InvalidInputError(f"{name}: only used with engine='ray'")
    opts = _options(k, namespace, workspace_id, weights, options, now_ms, touch, chunk_size, max_rows_in_memory,
                    embed_batch_size)
    if embedder is not None:
        check_embedder(embedder)
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise InvalidTypeError(f"storage_options: expected a mapping, got {type(storage_options).__name__}")
    source = open_queries(queries)
    if workspace_id is not None and source.has_workspaces:
        raise InvalidInputError("workspace_id: given both as an argument and as a column of the queries; give one")
    db, owned = open_store(store, storage_options=storage_options, writes=opts.touch)
    try:
        return _recall(db, source, embedder, opts)
    finally:
        if owned:
            db.close()


arecall = async_twin(recall)


def _options(k: object, namespace: object, workspace_id: object, weights: object, options: object, now_ms: object,
             touch: object, chunk_size: object, max_rows: object, embed_batch_size: object) -> _Options:
    if weights is not None and not isinstance(weights, RecallWeights):
        raise InvalidTypeError(f"weights: expected a RecallWeights, got {type(weights).__name__}")
    if options is not None and not isinstance(options, RecallOptions):
        raise InvalidTypeError(f"options: expected a RecallOptions, got {type(options).__name__}")
    check_id(namespace, "namespace", max_chars=MAX_ID_CHARS)
    if workspace_id is not None:
        check_id(workspace_id, "workspace_id", max_chars=MAX_ID_CHARS)
    return _Options(
        k=check_int(k, "k", minimum=1, maximum=MAX_RECALL_K),
        namespace=namespace,  # type: ignore[arg-type]  # checked above, kept as given (not stripped)
        workspace_id=workspace_id,  # type: ignore[arg-type]
        weights=weights or RecallWeights(),
        options=options or RecallOptions(),
        now_ms=time.time_ns() // 1_000_000 if now_ms is None else check_int(now_ms, "now_ms"),
        touch=check_bool(touch, "touch"),
        chunk_size=check_int(chunk_size, "chunk_size", minimum=1),
        max_rows=check_int(max_rows, "max_rows_in_memory", minimum=1),
        embed_batch_size=check_int(embed_batch_size, "embed_batch_size", minimum=1),
    )


def _default_embedder() -> Embedder:
    from mindcore.ltm.memory import _shared_default_embedder

    return _shared_default_embedder()  # type: ignore[no-any-return]


def _recall(db: Store, source: QuerySource, embedder: Embedder | None, opts: _Options) -> pa.Table:
    has_table = TABLE in db.table_names()
    if has_table and embedder is None and not source.has_vectors:
        embedder = _default_embedder()  # as LongTermMemory.create without an embedder
    table = memory_table(db, embedder) if has_table else None
    dim = table.dim if table is not None else (embedder.dim if embedder is not None else None)
    chunks = _checked_chunks(source, dim, opts)
    if table is None:
        for _ in chunks:  # every query is still checked; none has a memory to recall
            pass
        return RESULT_SCHEMA.empty_table()
    parts: list[pa.Table] = []
    touched: dict[str, dict[str, int]] = defaultdict(dict)
    loader = _Loader(table, chunks, opts.max_rows)
    try:
        chunk: _Chunk | None = None
        for item in loader:
            if isinstance(item, _Chunk):
                chunk = item
                _embed_chunk(chunk, embedder, int(table.dim or 0), opts)
                continue
            assert chunk is not None  # a chunk's runs follow it
            try:
                parts.extend(_score_run(chunk, item, opts, touched))
            finally:
                loader.release(item)
    finally:
        loader.close()
    if opts.touch:
        now = opts.now_ms
        for ns, hits in touched.items():
            touch_rows(table, ns, {mid: (now, max(now, created)) for mid, created in hits.items()})
    if not parts:
        return RESULT_SCHEMA.empty_table()
    return pa.concat_tables(parts).sort_by([("query_index", "ascending"), ("rank", "ascending")])


def _keys(rows: QueryRows, opts: _Options) -> list[str]:
    """The store namespace (scope) each query searches."""
    if opts.workspace_id is not None:
        return [scope_key(u, opts.namespace, opts.workspace_id) for u in rows.user_ids]
    return [scope_key(u, opts.namespace, w) for u, w in zip(rows.user_ids, rows.workspaces, strict=True)]


def _checked_chunks(source: QuerySource, dim: int | None, opts: _Options) -> Iterator[tuple[QueryRows, list[str]]]:
    """The queries in chunks, every row checked before the first chunk is handed out (except for
    a reader, which can be read only once: its chunks are checked as they come)."""
    if source.table is not None:
        rows = parse_rows(source.table, 0, dim=dim, max_query_chars=MAX_QUERY_CHARS)
        # All in memory: scope after scope, so each scope is loaded once.
        keys = _keys(rows, opts)
        order = np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)
        return ((rows.take(part), [keys[i] for i in part.tolist()])
                for part in _scope_chunks(order, [keys[i] for i in order.tolist()], opts.chunk_size))
    if source.rereadable:
        offset = 0
        for part in source.batches(opts.chunk_size):
            parse_rows(part, offset, dim=dim, max_query_chars=MAX_QUERY_CHARS)
            offset += part.num_rows
    return _parsed(source, dim, opts)


def _scope_chunks(order: NDArray[np.int64], keys: list[str], size: int) -> Iterator[NDArray[np.int64]]:
    """``order`` (queries sorted by scope, ``keys`` their scopes) cut into chunks of at most
    ``size``, each ending where a scope ends unless one scope has more queries than that."""
    start, n = 0, len(order)
    while start < n:
        end = min(start + size, n)
        if end < n and keys[end] == keys[end - 1]:  # the cut falls inside a scope: move it to its start
            cut = end - 1
            while cut > start and keys[cut - 1] == keys[end]:
                cut -= 1
            if cut > start:  # else that scope alone fills the chunk: it is split
                end = cut
        yield order[start:end]
        start = end


def _parsed(source: QuerySource, dim: int | None, opts: _Options) -> Iterator[tuple[QueryRows, list[str]]]:
    offset = 0
    for part in source.batches(opts.chunk_size):
        rows = parse_rows(part, offset, dim=dim, max_query_chars=MAX_QUERY_CHARS)
        yield rows, _keys(rows, opts)
        offset += part.num_rows


def _embed(embedder: Embedder, texts: list[str], dim: int, batch: int) -> NDArray[np.float32]:
    out = np.empty((len(texts), dim), dtype=np.float32)
    for a in range(0, len(texts), batch):
        part = texts[a:a + batch]
        out[a:a + len(part)] = check_vectors(embedder.embed(part), len(part), dim, f"embedder {embedder.model_id}")
    return out


@dataclass(slots=True)
class _Chunk:
    """A chunk of queries with its scopes planned into runs (scopes loaded together)."""

    rows: QueryRows
    by_scope: dict[str, list[int]]  # scope -> its queries (positions in the chunk)
    runs: list[list[str]]
    vectors: NDArray[np.float32] | None = None


class _Loader:
    """Reads ahead in a background thread while the caller embeds and scores: it plans each
    chunk (one count scan) and loads its runs (one scan each), handing out a chunk, then its
    loaded runs, in order. At most two runs are in memory at once (the one scored, the one
    loading), so each holds at most half of ``max_rows``."""

    def __init__(self, table: Table, chunks: Iterator[tuple[QueryRows, list[str]]], max_rows: int) -> None:
        self._queue: queue.SimpleQueue[_Chunk | Scopes | BaseException | None] = queue.SimpleQueue()
        self._slots = threading.Semaphore(2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(table, chunks, max(1, max_rows // 2)),
                                        name="mindcore-batch-load", daemon=True)
        self._thread.start()

    def _run(self, table: Table, chunks: Iterator[tuple[QueryRows, list[str]]], max_rows: int) -> None:
        try:
            for rows, keys in chunks:
                if self._stop.is_set():
                    return
                by_scope: dict[str, list[int]] = defaultdict(list)
                for i, key in enumerate(keys):
                    by_scope[key].append(i)
                runs = plan_loads(list(by_scope), count_rows(table, list(by_scope)), max_rows)
                self._queue.put(_Chunk(rows, by_scope, runs))
                for run in runs:
                    self._slots.acquire()
                    if self._stop.is_set():
                        return
                    self._queue.put(load_scopes(table, run))
            self._queue.put(None)
        except BaseException as exc:  # handed to the caller, raised there
            self._queue.put(exc)

    def __iter__(self) -> Iterator[_Chunk | Scopes]:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def release(self, scopes: Scopes) -> None:
        """The caller is done with ``scopes``: the next run may load."""
        self._slots.release()

    def close(self) -> None:
        self._stop.set()
        self._slots.release()  # a reader waiting for a slot wakes up and stops
        self._thread.join()


def _embed_chunk(chunk: _Chunk, embedder: Embedder | None, dim: int, opts: _Options) -> None:
    """The chunk's query vectors: given, or embedded in batches (only the queries of scopes that
    hold memories: the others have no hits)."""
    rows = chunk.rows
    if rows.vectors is not None:
        chunk.vectors = rows.vectors
        return
    assert embedder is not None  # resolved when the queries carry no vectors
    asked = np.array([i for run in chunk.runs for key in run for i in chunk.by_scope[key]], dtype=np.int64)
    vectors = np.zeros((len(rows), dim), dtype=np.float32)
    if len(asked):
        vectors[asked] = _embed(embedder, [rows.texts[i] for i in asked.tolist()], dim, opts.embed_batch_size)
    chunk.vectors = vectors


def _score_run(chunk: _Chunk, scopes: Scopes, opts: _Options, touched: dict[str, dict[str, int]]) -> Iterator[pa.Table]:
    """The hits of the chunk's queries whose scopes are ``scopes``, as a result table."""
    rows, vectors, w = chunk.rows, chunk.vectors, opts.weights
    assert vectors is not None
    picked = [(i, g) for g, key in enumerate(scopes.keys) for i in chunk.by_scope[key]]
    qsel = np.array([i for i, _ in picked], dtype=np.int64)
    group = np.array([g for _, g in picked], dtype=np.int64)
    boost = opts.options.time_boost
    windows = [time_window(rows.texts[i], opts.now_ms) if boost > 0 else None for i in qsel.tolist()]
    fetch = opts.k + TIE_MARGIN

    def top_k(selected: NDArray[np.int64], eligible: NDArray[np.bool_] | None, k: int) -> TopK:
        """The kernel's top ``k`` for the ``selected`` queries among the ``eligible`` rows (all: ``None``)."""
        return grouped_recall(
            np.ascontiguousarray(vectors[qsel[selected]]), group[selected], scopes.matrix, scopes.offsets,
            timestamps=scopes.recency, importance=scopes.importance,
            query_texts=[rows.texts[i] for i in qsel[selected].tolist()], terms=scopes.terms,
            has_vector=None if scopes.has_vector.all() else scopes.has_vector, eligible=eligible,
            k=k, w_sim=w.similarity, w_rec=w.recency, w_importance=w.importance, w_lexical=w.lexical,
            half_life_ms=w.half_life_days * DAY_MS, now_ms=opts.now_ms, lexical_floor=LEXICAL_FLOOR,
        )

    while True:  # equal scores are ordered by id, as LongTermMemory.recall orders them
        top = top_k(np.arange(len(qsel), dtype=np.int64), None, fetch)
        indices, scores, similarities = top.indices, top.scores, top.similarities
        if any(window is not None for window in windows):
            indices, scores, similarities = _with_time_boost(indices, scores, similarities, windows, group, scopes,
                                                             fetch, boost, top_k)
        if opts.options.neighbours > 0:
            indices, scores, similarities = _with_neighbours(indices, scores, similarities, vectors[qsel], group,
                                                             scopes, fetch, opts.options)
        ordered = _by_score_then_id(indices, scores, similarities, scopes, opts.k, fetch)
        if ordered is not None:
            break
        fetch *= 2
    idx, scores, sims = ordered
    hit_q, hit_rank = np.nonzero(idx >= 0)
    if not len(hit_q):
        return
    hit_rows = idx[hit_q, hit_rank]
    if opts.touch:
        _collect_touches(scopes, group[hit_q], hit_rows, touched)
    take = pa.array(hit_rows, pa.int64())
    asked = qsel[hit_q]
    yield pa.table({
        "user_id": pa.array([rows.user_ids[i] for i in asked.tolist()], pa.string()),
        "query_index": pa.array(rows.index[asked], pa.int64()),
        "rank": pa.array(hit_rank.astype(np.int32), pa.int32()),
        "memory_id": scopes.ids.take(take),
        "text": scopes.texts.take(take),
        "kind": scopes.kinds.take(take),
        "score": pa.array(scores[hit_q, hit_rank], pa.float32()),
        "similarity": pa.array(sims[hit_q, hit_rank], pa.float32()),
    }, schema=RESULT_SCHEMA)


def _with_time_boost(idx: NDArray[np.int64], scores: Any, sims: Any, windows: list[TimeWindow | None],
                     group: NDArray[np.int64], scopes: Scopes, fetch: int, boost: float,
                     top_k: Callable[[NDArray[np.int64], NDArray[np.bool_] | None, int], TopK]) -> tuple[NDArray[np.int64], Any, Any]:
    """Each query's top ``fetch`` once the memories created in the times it names scored
    ``s + boost·|s|``, exactly as ``LongTermMemory.recall`` does it: the kernel's top over the
    dated rows alone (one call per distinct window), merged with its top over every row (see
    :func:`mindcore.ltm._when.with_time_boost`)."""
    idx, scores, sims = idx.copy(), np.asarray(scores, dtype=np.float64).copy(), np.asarray(sims).copy()
    by_window: dict[TimeWindow, list[int]] = defaultdict(list)
    for qi, window in enumerate(windows):
        if window is not None:
            by_window[window].append(qi)
    for window, asked in by_window.items():
        inside = dated(window, scopes.created)
        if not inside.any():
            continue
        selected = np.array(asked, dtype=np.int64)
        top = top_k(selected, inside, fetch)
        for n, qi in enumerate(asked):
            valid, valid_dated = idx[qi] >= 0, top.indices[n] >= 0
            hits = idx[qi][valid]
            size = int(scopes.offsets[group[qi] + 1]) - int(scopes.offsets[group[qi]])
            got, got_scores, got_sims, _ = with_time_boost(
                (hits, scores[qi][valid], sims[qi][valid]), inside[hits],
                (top.indices[n][valid_dated], top.scores[n][valid_dated], top.similarities[n][valid_dated]),
                need=fetch, complete=len(hits) < fetch or len(hits) == size, boost=boost)
            m = len(got)
            idx[qi, :m], scores[qi, :m], sims[qi, :m] = got, got_scores, got_sims
            idx[qi, m:] = -1
    return idx, scores, sims


def _with_neighbours(idx: NDArray[np.int64], scores: Any, sims: Any, queries: NDArray[np.float32],
                     group: NDArray[np.int64], scopes: Scopes, fetch: int,
                     options: RecallOptions) -> tuple[NDArray[np.int64], Any, Any]:
    """Each query's top ``fetch`` once its hits lent their neighbours in a thread a share of their
    score, exactly as ``LongTermMemory.recall`` does it (see :mod:`mindcore.ltm._neighbours`)."""
    idx, scores, sims = idx.copy(), np.asarray(scores, dtype=np.float64).copy(), np.asarray(sims).copy()
    for qi in range(idx.shape[0]):
        valid = idx[qi] >= 0
        start = int(scopes.offsets[group[qi]])
        size = int(scopes.offsets[group[qi] + 1]) - start
        rows = scopes.threads.slice(start, size)
        query = queries[qi]

        def cosine(local: np.ndarray, start: int = start, query: np.ndarray = query) -> np.ndarray:
            return cosines(query, scopes.matrix[start + local])

        hits = idx[qi][valid] - start
        got, got_scores, got_sims = with_neighbours(rows, hits, scores[qi][valid], sims[qi][valid], k=fetch,
                                                    complete=len(hits) < fetch, radius=options.neighbours,
                                                    decay=options.neighbour_decay, similarity=cosine)
        n = len(got)
        idx[qi, :n], scores[qi, :n], sims[qi, :n] = got + start, got_scores, got_sims
        idx[qi, n:] = -1
    return idx, scores, sims


def _by_score_then_id(idx: NDArray[np.int64], scores: Any, sims: Any, scopes: Scopes, k: int,
                      fetch: int) -> tuple[Any, Any, Any] | None:
    """Each query's best ``k`` of the kernel's top ``fetch``, equal scores in memory-id order (see
    :func:`mindcore.ltm._order.by_score_then_id`); ``None`` when a query's hits fill ``fetch`` and
    end inside a run of scores equal to its ``k``-th (fetch more)."""
    valid = idx >= 0
    width = idx.shape[1]
    if width > k:
        full = valid[:, width - 1]
        if np.any(full & (scores[:, width - 1] == scores[:, k - 1])):
            return None
    if width <= 1 or not np.any(valid[:, 1:] & (scores[:, 1:] == scores[:, :-1])):
        return idx[:, :k], scores[:, :k], sims[:, :k]  # no equal scores anywhere: the kernel's order stands
    rank = np.empty(len(scopes.ids), dtype=np.int64)
    rank[np.asarray(pc.sort_indices(scopes.ids), dtype=np.int64)] = np.arange(len(scopes.ids), dtype=np.int64)
    primary = np.where(valid, -scores.astype(np.float64), np.inf)
    secondary = np.where(valid, rank[np.where(valid, idx, 0)], np.iinfo(np.int64).max)
    perm = np.lexsort((secondary, primary), axis=-1)[:, :k]
    return (np.take_along_axis(idx, perm, 1), np.take_along_axis(scores, perm, 1),
            np.take_along_axis(sims, perm, 1))


def _collect_touches(scopes: Scopes, groups: NDArray[np.int64], hit_rows: NDArray[np.int64],
                     touched: dict[str, dict[str, int]]) -> None:
    ids: list[Any] = scopes.ids.take(pa.array(hit_rows, pa.int64())).to_pylist()
    for g, memory_id, created in zip(groups.tolist(), ids, scopes.created[hit_rows].tolist(), strict=True):
        touched[scopes.keys[g]][memory_id] = created
