"""Reading and checking the queries of a batch call: Arrow tables and readers, pandas and polars
frames (converted through Arrow, never imported unless given), and files (parquet, csv, jsonl, a
folder of parquet) streamed with ``pyarrow.dataset``.

Every problem is an :class:`~mindcore.errors.InvalidInputError` naming the column, and the row
(its position in the input, counted from 0) when one row is at fault.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.validation import check_id

__all__ = ["MAX_ID_CHARS", "QueryRows", "QuerySource", "open_queries"]

USER_ID, QUERY, VECTOR, WORKSPACE_ID = "user_id", "query", "vector", "workspace_id"
#: The longest user or workspace id accepted (a longer one is refused, not cut).
MAX_ID_CHARS = 1_000
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "json", ".ndjson": "json",
             ".json": "json"}


@dataclass(frozen=True, slots=True)
class QueryRows:
    """Checked queries: where each sits in the input, its user, text, workspace and vector."""

    index: NDArray[np.int64]
    user_ids: list[str]
    texts: list[str]
    workspaces: list[str | None]
    vectors: NDArray[np.float32] | None  # (n, d) when the input gave them

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, rows: NDArray[np.int64]) -> QueryRows:
        picked = rows.tolist()
        return QueryRows(
            index=self.index[rows], user_ids=[self.user_ids[i] for i in picked],
            texts=[self.texts[i] for i in picked], workspaces=[self.workspaces[i] for i in picked],
            vectors=None if self.vectors is None else np.ascontiguousarray(self.vectors[rows]),
        )


def _where(offset: int, row: int) -> str:
    return f"queries row {offset + row}"


def _strings(column: pa.ChunkedArray[Any] | pa.Array[Any], name: str) -> pa.Array[Any]:
    """``column`` as a plain string array (dictionary, large and view strings are cast)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = arr.type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if not (pa.types.is_null(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_string_view(t)):
        raise InvalidInputError(f"queries: column {name!r} must hold strings, got {arr.type}")
    return pc.cast(arr, pa.string())


def _vectors(column: pa.ChunkedArray[Any], offset: int, dim: int | None) -> NDArray[np.float32]:
    """The ``vector`` column as an ``(n, dim)`` float32 matrix; a null, short, long or non-finite
    vector is refused naming its row."""
    arr = column.combine_chunks()
    t = arr.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t)) or not (pa.types.is_floating(t.value_type)
                                                  or pa.types.is_integer(t.value_type)):
        raise InvalidInputError(f"queries: column {VECTOR!r} must hold lists of floats, got {t}")
    n = len(arr)
    if n == 0:
        return np.zeros((0, dim or 0), dtype=np.float32)
    if arr.null_count:
        row = int(np.argmax(np.asarray(arr.is_null().to_numpy(zero_copy_only=False))))
        raise InvalidInputError(f"{_where(offset, row)}: vector is null")
    lengths = np.asarray(pc.list_value_length(arr).to_numpy(zero_copy_only=False), dtype=np.int64)
    want = int(lengths[0]) if dim is None else dim
    wrong = np.flatnonzero(lengths != want)
    if len(wrong):
        row = int(wrong[0])
        raise InvalidInputError(
            f"{_where(offset, row)}: vector has {int(lengths[row])} dimensions; the memories' embedding has {want}"
        )
    values = pc.list_flatten(arr)
    matrix = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(n, want)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise InvalidInputError(f"{_where(offset, row)}: vector contains NaN, infinity or a null")
    return np.ascontiguousarray(matrix)


def parse_rows(table: pa.Table, offset: int, *, dim: int | None, max_query_chars: int) -> QueryRows:
    """Check ``table`` (rows ``offset..`` of the input) and return its queries."""
    n = table.num_rows
    user_ids: list[Any] = _strings(table.column(USER_ID), USER_ID).to_pylist()
    for i, u in enumerate(user_ids):
        if u is None:
            raise InvalidInputError(f"{_where(offset, i)}: user_id is null")
        check_id(u, f"{_where(offset, i)}: user_id", max_chars=MAX_ID_CHARS)
    texts: list[Any] = _strings(table.column(QUERY), QUERY).to_pylist()
    cut = False
    for i, q in enumerate(texts):
        if q is None:
            raise InvalidInputError(f"{_where(offset, i)}: query is null")
        if not q.strip():
            raise InvalidInputError(f"{_where(offset, i)}: query is blank (a blank query recalls nothing)")
        if len(q) > max_query_chars:
            texts[i], cut = q[:max_query_chars], True
    if cut:
        warnings.warn(f"batch.recall: queries longer than {max_query_chars:,} characters are cut to that length",
                      stacklevel=4)
    workspaces: list[Any]
    if WORKSPACE_ID in table.column_names:
        workspaces = _strings(table.column(WORKSPACE_ID), WORKSPACE_ID).to_pylist()
        for i, w in enumerate(workspaces):
            if w is not None:
                check_id(w, f"{_where(offset, i)}: workspace_id", max_chars=MAX_ID_CHARS)
    else:
        workspaces = [None] * n
    vectors = _vectors(table.column(VECTOR), offset, dim) if VECTOR in table.column_names else None
    return QueryRows(np.arange(offset, offset + n, dtype=np.int64), user_ids, texts, workspaces, vectors)


def _rechunk(batches: Iterable[pa.RecordBatch], size: int) -> Iterator[pa.Table]:
    """Tables of exactly ``size`` rows (the last one smaller) from batches of any size."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        held.append(batch)
        count += batch.num_rows
        while count >= size:
            table = pa.Table.from_batches(held)
            yield table.slice(0, size)
            rest = table.slice(size)
            held, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(held)


class QuerySource:
    """Where the queries of one call come from, checked column by column on opening.

    ``table`` is set when the whole input is in memory (an Arrow table, a frame); otherwise
    :meth:`batches` reads it (a file or folder: again on each call; a reader: once).
    """

    def __init__(self, schema: pa.Schema, *, table: pa.Table | None = None, dataset: Any = None,
                 reader: pa.RecordBatchReader | None = None) -> None:
        names = schema.names
        missing = [c for c in (USER_ID, QUERY) if c not in names]
        if missing:
            raise InvalidInputError(f"queries: missing column(s) {missing} (columns: {names}); "
                                    f"expected {USER_ID!r} and {QUERY!r}, optionally {VECTOR!r} and {WORKSPACE_ID!r}")
        self.columns = [c for c in (USER_ID, QUERY, VECTOR, WORKSPACE_ID) if c in names]
        self.table = None if table is None else table.select(self.columns)
        self._dataset = dataset
        self._reader = reader

    @property
    def has_vectors(self) -> bool:
        return VECTOR in self.columns

    @property
    def has_workspaces(self) -> bool:
        return WORKSPACE_ID in self.columns

    @property
    def rereadable(self) -> bool:
        """Whether :meth:`batches` can be called again (false only for a reader)."""
        return self._reader is None

    def batches(self, size: int, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """The input in tables of ``size`` rows, in input order."""
        cols = self.columns if columns is None else columns
        if self.table is not None:
            source: Iterable[pa.RecordBatch] = self.table.select(cols).to_batches(max_chunksize=size)
        elif self._dataset is not None:
            source = self._dataset.to_batches(columns=cols, batch_size=size)
        else:
            reader, self._reader = self._reader, None
            if reader is None:
                raise InvalidInputError("queries: the reader was already read")
            source = (b.select(cols) for b in reader)
        return _rechunk(source, size)


def _dataset(path: Path) -> Any:
    import pyarrow.dataset as ds

    if path.is_dir():
        return ds.dataset(str(path), format="parquet")
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InvalidInputError(f"queries: cannot tell the format of {str(path)!r} from its suffix; "
                                f"expected one of {sorted(_SUFFIXES)} or a folder of parquet files")
    if kind == "csv":
        import pyarrow.csv as pacsv

        # Ids such as "1001" must stay strings (the CSV reader would infer integers); an empty
        # cell is a missing value (no workspace), as CSV writers mean it.
        strings = {c: pa.string() for c in (USER_ID, QUERY, WORKSPACE_ID)}
        return ds.dataset(str(path), format=ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
            column_types=strings, strings_can_be_null=True)))
    fmt: Any = ds.JsonFileFormat() if kind == "json" else kind
    return ds.dataset(str(path), format=fmt)


def open_queries(queries: Any) -> QuerySource:
    """The :class:`QuerySource` of whatever ``queries`` is (see :func:`mindcore.batch.recall`)."""
    if isinstance(queries, pa.Table):
        return QuerySource(queries.schema, table=queries)
    if isinstance(queries, pa.RecordBatch):
        return QuerySource(queries.schema, table=pa.Table.from_batches([queries]))
    if isinstance(queries, pa.RecordBatchReader):
        return QuerySource(queries.schema, reader=queries)
    if isinstance(queries, str | os.PathLike):
        path = Path(queries)
        if not path.exists():
            raise InvalidInputError(f"queries: no file or folder at {str(path)!r}")
        try:
            data = _dataset(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidInputError(f"queries: cannot read {str(path)!r}: {exc}") from exc
        return QuerySource(data.schema, dataset=data)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(queries, pd.DataFrame):
        try:
            table = pa.Table.from_pandas(queries, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InvalidInputError(f"queries: the DataFrame does not convert to Arrow: {exc}") from exc
        return QuerySource(table.schema, table=table)
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(queries, pl.DataFrame):
        table = queries.to_arrow()
        return QuerySource(table.schema, table=table)
    if hasattr(queries, "__arrow_c_stream__"):  # any other Arrow-speaking frame
        table = pa.table(queries)
        return QuerySource(table.schema, table=table)
    raise InvalidTypeError(
        "queries: expected a pyarrow Table or RecordBatchReader, a pandas or polars DataFrame, or the path of "
        f"a parquet, csv or jsonl file (or a folder of parquet files), got {type(queries).__name__}"
    )
