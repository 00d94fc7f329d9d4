"""Bulk ingest into long-term memory: many users' memories in a few commits.

``remember(store, rows)`` stores what ``LongTermMemory.remember_many`` would store for each user,
in one pass over the rows instead of one call (and one commit) per user: back-filling memories
from logs, importing another system's memories, seeding an evaluation. For each user it applies
the same rules (the secret policy; each row judged against the user's stored memories and earlier
rows: duplicates not stored, updated or contradicted memories retired to history; eviction down
to ``max_items``), and it does the heavy parts for many users at once: one secret scan and one
embedding call per chunk of rows, one scan of the stored memories of the chunk's users, and one
commit per chunk (after one commit of their history).

How it runs:

1. The rows are read once (into memory: the columns below only) and every row is validated
   before anything is written: a bad row raises :class:`~mindcore.errors.InvalidInputError`
   naming its index and column, and nothing is stored. A million rows of short facts take a few
   hundred MB; split larger inputs into several calls.
2. Rows are grouped by scope (user and workspace) in order of first appearance; chunks hold
   whole scopes of about ``chunk_size`` rows (a scope is never split, so each user's outcome is
   that of one ``remember_many`` call with all of that user's rows, in input order).
3. Each chunk is screened for secrets and embedded, then, under the locks of every scope it
   touches (the same locks single-user writes take, acquired in sorted order), its users' stored
   memories are read by one scan, duplicates and evictions are decided, and everything is
   committed as one table version. A crash or an error leaves every chunk committed before it
   and nothing of the chunk in progress.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from mindcore.batch._input import open_input
from mindcore.batch._twin import async_twin
from mindcore.embed.base import check_embedder, check_vectors
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.ltm._repo import ScopesRepo, scope_key
from mindcore.ltm.config import LongTermMemoryConfig
from mindcore.ltm.pipeline import BulkPipeline, Outcome, Row, validate_item
from mindcore.policy import SecretPolicy
from mindcore.store import StoreLike, resolve_store
from mindcore.validation import check_callable, text_problem

if TYPE_CHECKING:
    import numpy as np

    from mindcore.embed import Embedder
    from mindcore.store import Store

__all__ = ["COLUMNS", "BulkReport", "RowsLike", "aremember", "remember"]

#: The columns ``rows`` may have: ``user_id`` and ``text`` are required, the others optional (a
#: null or missing value means the default, as in ``LongTermMemory.remember``).
COLUMNS = ("user_id", "text", "kind", "importance", "created_at", "context", "thread", "position", "workspace_id")
_REQUIRED = ("user_id", "text")
_STRINGS = ("user_id", "text", "kind", "context", "thread", "workspace_id")
_INTEGERS = ("created_at", "position")

#: What ``rows`` may be: an Arrow table, record batch or reader, a pandas or polars data frame (or
#: anything with the Arrow stream interface), or the path of a Parquet, CSV or JSON-lines file or of a
#: folder of Parquet files.
RowsLike = Any

# Rows converted to Python objects at a time while validating (bounds the memory it takes).
_VALIDATE_SLICE = 65_536


@dataclass(frozen=True)
class BulkReport:
    """What :func:`remember` did.

    ``rows`` rows were read; of them ``stored`` became new memories, ``duplicates`` matched a
    stored memory or an earlier row of the same user, ``secrets`` were refused by the secret
    policy, and ``evicted`` counts memories dropped to keep each user within ``max_items`` (stored
    ones deleted, and new rows that ranked below every memory kept, whose status is
    ``evicted``). ``commits`` is the number of committed writes (one per chunk with anything to
    write), ``elapsed`` the seconds it took.

    ``results`` holds one row per input row, in input order: ``row_index`` (its position in the
    input), ``user_id``, ``status`` (``stored``, ``duplicate``, ``secret`` or ``evicted``, as
    :class:`~mindcore.ltm.RememberResult`) and ``memory_id`` (the memory stored, or the one it
    duplicates; null otherwise, or when that memory was evicted by the same write).
    """

    rows: int
    stored: int
    duplicates: int
    secrets: int
    evicted: int
    commits: int
    elapsed: float
    results: pa.Table = dataclasses.field(repr=False)


def remember(
    store: StoreLike,
    rows: RowsLike,
    *,
    namespace: str = "default",
    embedder: Embedder | None = None,
    dedupe: bool = True,
    max_items: int | None = None,
    secrets: SecretPolicy | None = None,
    source: str = "import",
    chunk_size: int = 5_000,
    progress: Callable[[int, int], None] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> BulkReport:
    """Store many users' memories (see the module docstring): per user, the outcome of
    ``LongTermMemory.create(store, user_id=..., namespace=..., workspace_id=...).remember_many(...)``
    with that user's rows.

    ``rows`` has the columns of :data:`COLUMNS` (``user_id`` and ``text`` required; ``kind``,
    ``importance``, ``created_at`` in unix ms, ``context``, ``thread``, ``position`` and
    ``workspace_id`` optional) and is an Arrow table or reader, a pandas or polars frame, or a ``.parquet``, ``.csv`` or ``.jsonl``
    file or a folder of parquet files (local, or on object storage with ``storage_options``). ``store`` is a
    :class:`~mindcore.store.Store` or what :func:`mindcore.open` takes (then opened with
    ``storage_options`` and closed at the end).

    ``embedder=None`` uses the bundled default model, as ``LongTermMemory.create`` does;
    ``max_items=None`` reads ``MINDCORE_MEMORY_MAX_ITEMS`` (default 500, 0: no eviction);
    ``secrets`` is the :class:`~mindcore.policy.SecretPolicy` (default: refuse); ``source`` is
    recorded on each new memory. ``chunk_size`` is the number of rows per commit (whole users;
    a user with more rows gets a chunk of their own); ``progress(done, total)`` is called after
    each chunk with the rows handled so far (an exception it raises stops the work there: the
    chunks done stay committed).

    Raises :class:`~mindcore.errors.InvalidInputError` naming the row and column of the first bad
    row, before anything is written. An error after the first commit (a failing embedder, a
    lock timeout) propagates with a note saying how many rows were committed before it.

    >>> import mindcore, pyarrow as pa
    >>> from mindcore.embed import HashEmbedder
    >>> store = mindcore.open("memory://bulk-doc")
    >>> rows = pa.table({"user_id": ["ann", "ann", "bob"],
    ...                  "text": ["Likes green tea", "Likes green tea", "Lives in Lyon"]})
    >>> report = remember(store, rows, embedder=HashEmbedder())
    >>> report.stored, report.duplicates, report.results.column("status").to_pylist()
    (2, 1, ['stored', 'duplicate', 'stored'])
    """
    started = time.perf_counter()
    if not isinstance(namespace, str) or not namespace:
        raise InvalidInputError(f"namespace: expected a non-empty string, got {namespace!r}")
    if not isinstance(dedupe, bool):
        raise InvalidTypeError(f"dedupe: expected True or False, got {type(dedupe).__name__}")
    if not isinstance(source, str) or not source:
        raise InvalidInputError(f"source: expected a non-empty string, got {source!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInputError(f"chunk_size: expected a positive int, got {chunk_size!r}")
    if progress is not None:
        check_callable(progress, "progress")
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise InvalidTypeError(f"storage_options: expected a mapping, got {type(storage_options).__name__}")
    config = LongTermMemoryConfig(max_items=max_items, secrets=SecretPolicy() if secrets is None else secrets)
    if embedder is None:
        embedder = _default_embedder()
    check_embedder(embedder)
    table = _read(rows, storage_options)
    scopes, validated = _validate(table, namespace)
    chunks = list(_chunks(scopes, chunk_size))

    owned = not _is_store(store)
    opened = _open(store, storage_options)
    try:
        repo = ScopesRepo(opened, embedder=embedder)
        model = embedder

        def embed(texts: list[str]) -> np.ndarray:
            dim = repo.table.dim or model.dim
            return check_vectors(model.embed(texts), len(texts), dim, f"embedder {model.model_id}")

        pipeline = BulkPipeline(opened, repo, config, embed, _now_ms)
        return _run(pipeline, table.column("user_id"), validated, chunks, namespace=namespace, dedupe=dedupe,
                    source=source, progress=progress, started=started)
    finally:
        if owned:
            opened.close()


aremember = async_twin(remember)


# -- running ---------------------------------------------------------------------------------------

# (user_id, workspace_id) -> the positions of its rows in the input, in order.
_Scopes = dict[tuple[str, str | None], list[int]]
_Chunk = list[tuple[tuple[str, str | None], list[int]]]


def _run(pipeline: BulkPipeline, user_ids: pa.ChunkedArray[Any], validated: list[Row], chunks: list[_Chunk], *,
         namespace: str, dedupe: bool, source: str, progress: Callable[[int, int], None] | None,
         started: float) -> BulkReport:
    total = len(validated)
    statuses: list[str | None] = [None] * total
    memory_ids: list[str | None] = [None] * total
    done = commits = evicted = 0
    for chunk in chunks:
        by_scope = {scope_key(user_id, namespace, workspace_id): [validated[i] for i in rows]
                    for (user_id, workspace_id), rows in chunk}
        try:
            outcomes, gone, committed = pipeline.ingest(by_scope, dedupe=dedupe, source=source)
        except Exception as exc:
            exc.add_note(f"batch.remember: {done} of {total} rows were committed before this error "
                         "(each chunk commits whole); the chunk in progress wrote nothing")
            raise
        evicted += gone
        for (_, rows), outcome in zip(chunk, _ordered(outcomes, chunk, namespace), strict=True):
            for i, (status, memory_id) in zip(rows, outcome, strict=True):
                statuses[i], memory_ids[i] = status, memory_id
        commits += committed
        done += sum(len(rows) for _, rows in chunk)
        if progress is not None:
            progress(done, total)
    results = pa.table({
        "row_index": pa.array(range(total), pa.int64()),
        "user_id": user_ids,
        "status": pa.array(statuses, pa.string()),
        "memory_id": pa.array(memory_ids, pa.string()),
    })
    counts = dict.fromkeys(("stored", "duplicate", "secret", "evicted"), 0)
    for found in statuses:
        counts[str(found)] += 1
    return BulkReport(rows=total, stored=counts["stored"], duplicates=counts["duplicate"], secrets=counts["secret"],
                      evicted=evicted, commits=commits, elapsed=time.perf_counter() - started, results=results)


def _ordered(outcomes: dict[str, list[Outcome]], chunk: _Chunk, namespace: str) -> Iterator[list[Outcome]]:
    for (user_id, workspace_id), _ in chunk:
        yield outcomes[scope_key(user_id, namespace, workspace_id)]


def _row(values: dict[str, list[Any] | None], j: int) -> Row:
    """Row ``j`` of ``values`` (columns as lists) validated by :func:`mindcore.ltm.pipeline.validate_item`."""
    item = {name: values[name][j] for name in ("text", "kind", "importance", "created_at", "context", "thread",  # type: ignore[index]
                                               "position")
            if values[name] is not None and values[name][j] is not None}  # type: ignore[index]
    return validate_item(item)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _default_embedder() -> Embedder:
    from mindcore.embed import default_embedder  # one instance per process, loaded on first use

    return default_embedder()


def _is_store(store: object) -> bool:
    from mindcore.store import Store

    return isinstance(store, Store)


def _open(store: StoreLike, storage_options: Mapping[str, str] | None) -> Store:
    if _is_store(store) or not storage_options:
        return resolve_store(store)
    from mindcore.store import open as open_store

    if not isinstance(store, str | os.PathLike):
        raise InvalidInputError(f"store: expected a Store, a path or a URI, got {type(store).__name__}")
    opened = open_store(store, storage_options=dict(storage_options))
    try:
        opened.check_writable()
    except BaseException:
        opened.close()
        raise
    return opened


# -- validation and grouping -----------------------------------------------------------------------


def _validate(table: pa.Table, namespace: str) -> tuple[_Scopes, list[Row]]:
    """Every row checked (the first bad one raises, naming its index and column): the rows of each
    scope, in order of first appearance, and each row as it will be written."""
    scopes: _Scopes = {}
    validated: list[Row] = []
    for start in range(0, table.num_rows, _VALIDATE_SLICE):
        part = table.slice(start, _VALIDATE_SLICE)
        values = {name: part.column(name).to_pylist() if name in part.column_names else None for name in COLUMNS}
        users, workspaces = values["user_id"], values["workspace_id"]
        assert users is not None
        for j in range(part.num_rows):
            i = start + j
            user_id = users[j]
            workspace_id = None if workspaces is None else workspaces[j]
            _check_id(i, "user_id", user_id)
            if workspace_id is not None:
                _check_id(i, "workspace_id", workspace_id)
            try:
                validated.append(_row(values, j))
            except (ValueError, TypeError) as exc:
                raise InvalidInputError(f"rows[{i}]: {exc}") from None
            scopes.setdefault((str(user_id), workspace_id), []).append(i)
    # Each scope's namespace must be one the store accepts (it is JSON: any id fits).
    for user_id, workspace_id in scopes:
        scope_key(user_id, namespace, workspace_id)
    return scopes, validated


def _check_id(i: int, column: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"rows[{i}]: {column}: expected a non-empty string, got {value!r}")
    problem = text_problem(value)
    if problem:
        raise InvalidInputError(f"rows[{i}]: {column}: {problem}")


def _chunks(scopes: _Scopes, size: int) -> Iterator[_Chunk]:
    """Whole scopes, in order, about ``size`` rows a chunk (a larger scope is a chunk of its own)."""
    chunk: _Chunk = []
    rows = 0
    for scope, indices in scopes.items():
        if chunk and rows + len(indices) > size:
            yield chunk
            chunk, rows = [], 0
        chunk.append((scope, indices))
        rows += len(indices)
    if chunk:
        yield chunk


# -- reading the input -----------------------------------------------------------------------------


def _read(rows: RowsLike, storage_options: Mapping[str, str] | None) -> pa.Table:
    """``rows`` as an Arrow table of the known columns, with their types checked."""
    table = open_input(rows, what="rows", strings=_STRINGS, storage_options=storage_options).read_all()
    unknown = [c for c in table.column_names if c not in COLUMNS]
    if unknown:
        raise InvalidInputError(f"rows: unknown columns {unknown}; expected {', '.join(_REQUIRED)} and optionally "
                                f"{', '.join(c for c in COLUMNS if c not in _REQUIRED)}")
    missing = [c for c in _REQUIRED if c not in table.column_names]
    if missing:
        raise InvalidInputError(f"rows: missing column {missing[0]!r} (columns given: {table.column_names})")
    if len(set(table.column_names)) != len(table.column_names):
        raise InvalidInputError(f"rows: a column is given twice ({table.column_names})")
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        t = column.type
        if name in _STRINGS:
            if pa.types.is_large_string(t) or pa.types.is_string_view(t) or pa.types.is_null(t):
                column = column.cast(pa.string())
            elif not pa.types.is_string(t):
                raise InvalidInputError(f"rows: column {name!r}: expected strings, got {t}")
        elif name == "importance":
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)):
                raise InvalidInputError(f"rows: column 'importance': expected numbers in [0, 1], got {t}")
            column = column.cast(pa.float64())
        elif name in _INTEGERS:
            expected = "unix milliseconds (int)" if name == "created_at" else "non-negative ints"
            if pa.types.is_floating(t):
                # pandas stores an int column with gaps as floats: whole values are still ints.
                try:
                    column = column.cast(pa.int64())
                except pa.ArrowInvalid:
                    raise InvalidInputError(f"rows: column {name!r}: expected {expected}, "
                                            "got fractional numbers") from None
            elif not (pa.types.is_integer(t) or pa.types.is_null(t)):
                raise InvalidInputError(f"rows: column {name!r}: expected {expected}, got {t}")
            else:
                column = column.cast(pa.int64())
        columns[name] = column
    return pa.table(columns)
