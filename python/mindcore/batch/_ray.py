"""The Ray engine of :func:`mindcore.batch.recall` (``engine="ray"``): the same result table as the
local engine, computed by the workers of a Ray cluster that each read the store themselves.

How a call runs:

1. On the driver, before Ray does any work: the arguments and every query row are checked by the
   local engine's own checks (a bad row or column raises here, naming it); the store's embedding
   is checked against the embedder from the table's metadata (no memory is read); the store's
   location is resolved to a URI every worker can open (a :class:`~mindcore.store.Store` given by
   the caller becomes its URI and storage options; a ``memory://`` store lives in one process and
   is refused); ``now_ms`` is fixed once so every worker scores at the same instant; and the
   embedder is checked to be picklable. The query columns are held by the driver (a file is read
   in chunks as the local engine reads it): each row's position in the input is its
   ``query_index``, and every row must be checked before any work starts.
2. The queries are sorted by scope (workspace, user) and cut into Arrow blocks at user boundaries
   (about four blocks per worker, at most ``chunk_size`` queries unless one user has more): all
   of a user's queries land in one block, so a user's memories are read by one worker, once.
3. ``ray.data.from_arrow(blocks).map_batches(...)`` runs a callable class on an actor pool: each
   actor opens the store once, at its first block (by URI, with the caller's ``storage_options``:
   a folder on shared disk or object storage), keeps the embedder (the default embedder is loaded
   once per actor), and runs the local engine on each block it receives. Store data never passes
   through the driver; only the query blocks and the hit tables do. An error raised in a worker
   (a store it cannot reach, an embedder that fails) is raised by the call as itself.
4. The driver gathers the hit tables and orders them by ``query_index`` and ``rank``.

An existing Ray connection (``ray.is_initialized()``) is used as it is; otherwise this call starts
Ray with ``ray.init(**ray_init_kwargs)`` (the dashboard off unless asked for) and shuts it down when
it returns. On a cluster, every node needs ``mindcore`` installed (or a ``runtime_env`` in
``ray_init_kwargs``) and must reach the store.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mindcore.batch._input import QuerySource, open_queries, parse_rows
from mindcore.batch._load import memory_table, open_store
from mindcore.batch.recall import RESULT_SCHEMA, _default_embedder, _options
from mindcore.embed import Embedder
from mindcore.embed.base import check_embedder
from mindcore.errors import InvalidInputError, InvalidTypeError, MindcoreError
from mindcore.ltm._repo import TABLE
from mindcore.ltm.config import RecallOptions, RecallWeights
from mindcore.ltm.memory import MAX_QUERY_CHARS
from mindcore.store import Store, StoreLike
from mindcore.store import open as open_store_at
from mindcore.store._lance_logs import LANCE_FORK_WARNING

__all__ = ["recall_ray"]

# Each input row's position in the caller's queries, carried through the blocks so the workers'
# hits can be given the caller's query_index back.
_INDEX = "__mindcore_query_index"
# The columns that name a query's scope, coarsest first: a block never splits one scope.
_SCOPE_COLUMNS = ("workspace_id", "user_id")
# Blocks per worker when the queries are plentiful: several, so a worker that finishes early takes
# another block instead of idling while a slow one finishes.
_BLOCKS_PER_WORKER = 4


def recall_ray(
    store: StoreLike,
    queries: Any,
    *,
    k: int,
    namespace: str,
    embedder: Embedder | None,
    workspace_id: str | None,
    weights: RecallWeights | None,
    options: RecallOptions | None,
    now_ms: int | None,
    touch: bool,
    chunk_size: int,
    max_rows_in_memory: int,
    embed_batch_size: int,
    storage_options: Mapping[str, str] | None,
    num_workers: int | None,
    ray_init_kwargs: Mapping[str, Any] | None,
) -> pa.Table:
    """:func:`mindcore.batch.recall` with ``engine="ray"`` (see there): the same table, row for row.

    ``store`` is a folder every worker can read (shared disk), an object-storage URI (with
    ``storage_options``, sent to every worker) or an open :class:`~mindcore.store.Store` of either
    kind (its URI and storage options are used). ``embedder`` must be picklable (it is sent to
    every worker); ``None`` loads the default embedder once per worker, and a ``vector`` column
    skips embedding. With ``touch``, each worker records the last access of its blocks' memories
    after scoring them (a user's queries are all in one block, so no score sees another block's
    writes).
    """
    # Every option checked as the local engine checks it; now_ms is fixed here, once, for every worker.
    opts = _options(k, namespace, workspace_id, weights, options, now_ms, touch, chunk_size, max_rows_in_memory,
                    embed_batch_size)
    if embedder is not None:
        check_embedder(embedder)
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise InvalidTypeError(f"storage_options: expected a mapping, got {type(storage_options).__name__}")
    _check_workers(num_workers)
    if ray_init_kwargs is not None and not isinstance(ray_init_kwargs, Mapping):
        raise InvalidTypeError(f"ray_init_kwargs: expected a mapping, got {type(ray_init_kwargs).__name__}")
    uri, shared_options = _location(store, storage_options)
    source = open_queries(queries)
    if workspace_id is not None and source.has_workspaces:
        raise InvalidInputError("workspace_id: given both as an argument and as a column of the queries; give one")
    if embedder is not None and not source.has_vectors:
        _check_picklable(embedder)
    dim = _stored_dimension(store, storage_options, embedder, embeds=not source.has_vectors, writes=opts.touch)
    table = _checked_queries(source, dim, opts.chunk_size)
    if dim is None or table.num_rows == 0:  # no memory anywhere, or no query: no hits
        return RESULT_SCHEMA.empty_table()
    table = table.append_column(_INDEX, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    worker_options: dict[str, Any] = {
        "k": opts.k, "namespace": opts.namespace, "workspace_id": opts.workspace_id, "weights": opts.weights,
        "options": opts.options,        "now_ms": opts.now_ms, "touch": opts.touch, "chunk_size": opts.chunk_size,
        "max_rows_in_memory": opts.max_rows, "embed_batch_size": opts.embed_batch_size,
    }

    ray = _import_ray()
    started = _connect(ray, ray_init_kwargs)
    try:
        workers = num_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        blocks = list(_blocks(table, workers=workers, max_rows=opts.chunk_size))
        ds = ray.data.from_arrow(blocks).map_batches(
            _RecallWorker,
            fn_constructor_kwargs={
                "uri": uri, "storage_options": shared_options, "embedder": embedder, "options": worker_options,
            },
            batch_size=None,  # one call per block: a block holds whole users
            batch_format="pyarrow",
            zero_copy_batch=True,
            compute=ray.data.ActorPoolStrategy(size=min(workers, len(blocks))),
        )
        # A worker's exception itself, not Ray Data's "UDF failed" wrapper that drops it.
        ds.context.raise_original_map_exception = True
        try:
            parts = ray.get(ds.to_arrow_refs())
        except Exception as exc:
            cause = _worker_error(exc)
            if cause is None:
                raise
            raise cause from exc
    finally:
        if started:
            ray.shutdown()
    hits = pa.concat_tables([RESULT_SCHEMA.empty_table(), *parts])
    return hits.sort_by([("query_index", "ascending"), ("rank", "ascending")])


def _stored_dimension(store: StoreLike, storage_options: Mapping[str, str] | None, embedder: Embedder | None,
                      *, embeds: bool, writes: bool) -> int | None:
    """The dimension of the stored memories' vectors (``None``: the store holds no memories), read
    by the driver from the table's metadata; a store built with another embedder raises
    :class:`~mindcore.errors.EmbedderMismatchError` here, before Ray runs."""
    db, owned = open_store(store, storage_options=storage_options, writes=writes)
    try:
        if TABLE not in db.table_names():
            return None
        if embedder is None and embeds:
            embedder = _default_embedder()  # what every worker will load
        table = memory_table(db, embedder)
        assert table is not None
        return table.dim
    finally:
        if owned:
            db.close()


def _checked_queries(source: QuerySource, dim: int | None, chunk_size: int) -> pa.Table:
    """Every query row checked (the error names the row), then the query columns as one table."""
    if source.table is not None:
        parse_rows(source.table, 0, dim=dim, max_query_chars=MAX_QUERY_CHARS)
        return source.table
    parts: list[pa.Table] = []
    offset = 0
    for part in source.batches(chunk_size):
        parse_rows(part, offset, dim=dim, max_query_chars=MAX_QUERY_CHARS)
        parts.append(part)
        offset += part.num_rows
    if not parts:
        return pa.schema([]).empty_table()
    return pa.concat_tables(parts)


class _RecallWorker:
    """One Ray actor: opens the store once, then runs the local engine on each block it is given."""

    def __init__(self, uri: str, storage_options: dict[str, str], embedder: Embedder | None,
                 options: dict[str, Any]) -> None:
        self._uri = uri
        self._storage_options = storage_options
        self._embedder = embedder
        self._options = options
        self._store: Store | None = None

    def _opened(self) -> Store:
        # Opened at the first block rather than in __init__: an error raised while a block is
        # processed reaches the caller as itself, while one raised by an actor's constructor
        # reaches it only as the text of Ray's ActorDiedError.
        if self._store is None:
            # A recall that touches writes last-access times; otherwise the worker only reads.
            self._store = open_store_at(self._uri, storage_options=self._storage_options or None,
                                        read_only=not self._options["touch"])
        return self._store

    def __call__(self, block: pa.Table) -> pa.Table:
        from mindcore.batch import recall

        index = block.column(_INDEX)
        hits = recall(self._opened(), block.drop_columns([_INDEX]), embedder=self._embedder, engine="local",
                      **self._options)
        at = hits.schema.get_field_index("query_index")
        caller_index = pc.take(index, hits.column(at)).cast(hits.schema.field(at).type)
        return hits.set_column(at, hits.schema.field(at), caller_index)


def _location(store: Any, storage_options: Mapping[str, str] | None) -> tuple[str, dict[str, str]]:
    """Where every worker opens the store: an absolute folder or an object-storage URI, and the
    storage options they open it with."""
    if isinstance(store, Store):
        if store.kind == "memory":
            raise InvalidInputError(_MEMORY_REFUSED.format(store.uri))
        # The options the store was opened with (the local engine takes none beside a Store either).
        return store.uri, dict(store._storage_options)
    if isinstance(store, str | os.PathLike):
        where = os.fspath(store)
        if where.startswith("memory://"):
            raise InvalidInputError(_MEMORY_REFUSED.format(where))
        if where.startswith("file://"):
            where = where[len("file://") :]
        elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", where):
            return where.rstrip("/"), dict(storage_options or {})
        # Workers do not share the driver's working directory.
        return os.path.abspath(os.path.expanduser(where)), dict(storage_options or {})
    if store is None:  # the default store, as mindcore.open(None) finds it
        return _location(os.environ.get("MINDCORE_HOME") or ".mindcore", storage_options)
    raise InvalidTypeError(f"store: expected a Store, a path or a URI, got {type(store).__name__}")


_MEMORY_REFUSED = (
    "store: {} lives in this process only, so Ray workers cannot open it; "
    "use a folder on shared disk or object storage (s3://, gs://, az://) with engine='ray', or engine='local'"
)


def _check_workers(num_workers: object) -> None:
    if num_workers is None:
        return
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise InvalidInputError(f"num_workers: expected a positive int or None, got {num_workers!r}")


def _check_picklable(embedder: object) -> None:
    """Refuse, on the driver, an embedder that cannot be sent to the workers."""
    from ray import cloudpickle  # how Ray serialises an actor's arguments

    try:
        cast(Any, cloudpickle).dumps(embedder)  # ray's vendored copy has no type hints
    except Exception as exc:
        raise InvalidInputError(
            f"embedder: {type(embedder).__name__} cannot be sent to Ray workers ({exc}); pass a picklable "
            "embedder, embedder=None (each worker loads the default embedder) or a 'vector' column"
        ) from exc


def _blocks(table: pa.Table, *, workers: int, max_rows: int | None) -> Iterator[pa.Table]:
    """``table`` sorted by scope and cut into blocks of whole scopes: about ``_BLOCKS_PER_WORKER``
    blocks per worker, none larger than ``max_rows`` unless one scope alone is."""
    n = table.num_rows
    if n == 0:
        return
    keys = [name for name in _SCOPE_COLUMNS if name in table.column_names]
    table = table.sort_by([(name, "ascending") for name in [*keys, _INDEX]])
    # A scope starts where any of its key columns changes (a null counts as a change: harmless,
    # nulls only ever fall back to the call's default scope).
    changed = np.zeros(n, dtype=bool)
    changed[0] = True
    for name in keys:
        column = table.column(name)
        differs = pc.not_equal(column.slice(1), column.slice(0, n - 1)).fill_null(True)
        changed[1:] |= differs.to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(changed)
    target = math.ceil(n / (workers * _BLOCKS_PER_WORKER))
    if max_rows is not None:
        target = min(target, max_rows)
    begin = 0
    for start in starts[1:]:
        if start - begin >= target:
            yield table.slice(begin, start - begin)
            begin = int(start)
    yield table.slice(begin, n - begin)


def _import_ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as e:
        raise ImportError("engine='ray' needs Ray Data: pip install 'mindcore[ray]'") from e
    return ray


def _connect(ray: Any, ray_init_kwargs: Mapping[str, Any] | None) -> bool:
    """Use the current Ray connection, or start Ray; True when this call started it (and stops it)."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False}
    kwargs.update(ray_init_kwargs or {})
    with warnings.catch_warnings():
        # Ray starts its processes by fork and exec, which pylance (once loaded) warns of as a fork;
        # nothing of this process runs in them.
        warnings.filterwarnings("ignore", message=LANCE_FORK_WARNING, category=UserWarning)
        ray.init(**kwargs)
    return True


def _worker_error(exc: BaseException) -> MindcoreError | None:
    """The mindcore error a worker raised, out of the Ray error that carries it."""
    current = exc
    for _ in range(8):  # Ray nests its errors a level or two deep
        cause = getattr(current, "cause", None)
        if not isinstance(cause, BaseException) or cause is current:
            break
        current = cause
    return current if isinstance(current, MindcoreError) else None
