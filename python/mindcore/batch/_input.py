"""Reading the tabular input of a batch call, one way for every call: Arrow tables and readers,
pandas and polars frames (converted through Arrow, never imported unless given), and files
(parquet, csv, json lines, a folder of parquet; local, or on object storage) through
``pyarrow.dataset``; then checking the queries of :func:`mindcore.batch.recall`.

Every problem is an :class:`~mindcore.errors.InvalidInputError` naming the input, the column, and
the row (its position in the input, counted from 0) when one row is at fault.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.validation import check_id

__all__ = ["MAX_ID_CHARS", "ArrowInput", "QueryRows", "QuerySource", "open_input", "open_queries"]

USER_ID, QUERY, VECTOR, WORKSPACE_ID = "user_id", "query", "vector", "workspace_id"
#: The longest user or workspace id accepted (a longer one is refused, not cut).
MAX_ID_CHARS = 1_000
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "json", ".ndjson": "json",
             ".json": "json"}


# -- any tabular input ----------------------------------------------------------------------------


@dataclass(slots=True)
class ArrowInput:
    """Tabular input, opened: ``table`` when it is whole in memory (an Arrow table, a frame, a
    JSON-lines file), else a file or folder (``dataset``, read again on each call), or a
    ``reader`` read once. ``what`` names it in errors, ``path`` is the file's."""

    what: str
    schema: pa.Schema
    table: pa.Table | None = None
    dataset: Any = None
    reader: pa.RecordBatchReader | None = None
    path: str | None = None

    @property
    def rereadable(self) -> bool:
        """Whether it can be read again (false only for a reader)."""
        return self.reader is None

    def batches(self, size: int, columns: list[str]) -> Iterator[pa.Table]:
        """``columns`` of the input in tables of ``size`` rows (the last one smaller), in input order."""
        if self.table is not None:
            source: Iterable[pa.RecordBatch] = self.table.select(columns).to_batches(max_chunksize=size)
        elif self.dataset is not None:
            source = self._scan(self.dataset.to_batches(columns=columns, batch_size=size))
        else:
            source = (b.select(columns) for b in self._take_reader())
        return _rechunk(source, size)

    def read_all(self) -> pa.Table:
        """The whole input as one table."""
        if self.table is not None:
            return self.table
        if self.dataset is not None:
            table: pa.Table = _reading(self.what, self.path, self.dataset.to_table)
            return table
        return self._take_reader().read_all()

    def _take_reader(self) -> pa.RecordBatchReader:
        reader, self.reader = self.reader, None
        if reader is None:
            raise InvalidInputError(f"{self.what}: the reader was already read")
        return reader

    def _scan(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches`` of a file, a bad row in it raising :class:`InvalidInputError`."""
        it = iter(batches)
        while (batch := _reading(self.what, self.path, lambda: next(it, None))) is not None:
            yield batch


def _reading(what: str, path: str | None, read: Callable[[], Any]) -> Any:
    """``read()``, an error reading the file at ``path`` raised as :class:`InvalidInputError`."""
    try:
        return read()
    except (pa.ArrowInvalid, OSError) as exc:
        raise InvalidInputError(f"{what}: cannot read {path!r}: {exc}") from exc


def open_input(data: Any, *, what: str, strings: Collection[str] = (),
               storage_options: Mapping[str, str] | None = None) -> ArrowInput:
    """``data`` opened for reading: a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, a
    pandas or polars (lazy) frame, anything with the Arrow stream interface, or the path of a
    parquet, csv or json-lines file or of a folder of parquet files (``s3://...`` and other URIs
    with ``storage_options``). ``what`` names the input in errors; the ``strings`` columns of a csv
    file are read as strings (so an id like ``1001`` stays one)."""
    if isinstance(data, pa.Table):
        return ArrowInput(what, data.schema, table=data)
    if isinstance(data, pa.RecordBatch):
        return ArrowInput(what, data.schema, table=pa.Table.from_batches([data]))
    if isinstance(data, pa.RecordBatchReader):
        return ArrowInput(what, data.schema, reader=data)
    if isinstance(data, str | os.PathLike):
        return _open_path(os.fspath(data), what, strings, storage_options)
    table = _frame(data, what)
    return ArrowInput(what, table.schema, table=table)


def _frame(data: Any, what: str) -> pa.Table:
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, pd.DataFrame):
        try:
            return pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InvalidInputError(f"{what}: the DataFrame does not convert to Arrow: {exc}") from exc
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(data, pl.DataFrame | pl.LazyFrame):
        frame = data.collect() if isinstance(data, pl.LazyFrame) else data
        converted: pa.Table = frame.to_arrow()
        return converted
    if hasattr(data, "__arrow_c_stream__"):  # any other Arrow-speaking frame
        return pa.table(data)
    raise InvalidTypeError(
        f"{what}: expected a pyarrow Table or RecordBatchReader, a pandas or polars DataFrame, or the path of "
        f"a parquet, csv or jsonl file (or a folder of parquet files), got {type(data).__name__}"
    )


def _open_path(path: str, what: str, strings: Collection[str],
               storage_options: Mapping[str, str] | None) -> ArrowInput:
    import pyarrow.dataset as ds
    import pyarrow.fs as fs

    filesystem, location = _reading(what, path, lambda: _filesystem(path, storage_options))
    info = _reading(what, path, lambda: filesystem.get_file_info(location))
    if info.type == fs.FileType.NotFound:
        raise InvalidInputError(f"{what}: no file or folder at {path!r}")
    if info.type == fs.FileType.Directory:
        folder = _reading(what, path, lambda: ds.dataset(location, filesystem=filesystem, format="parquet"))
        return ArrowInput(what, folder.schema, dataset=folder, path=path)
    kind = _SUFFIXES.get(os.path.splitext(location)[1].lower())
    if kind is None:
        raise InvalidInputError(f"{what}: cannot tell the format of {path!r} from its suffix; "
                                f"expected one of {sorted(_SUFFIXES)} or a folder of parquet files")
    if kind == "json":
        import pyarrow.json as pajson

        def read_json() -> pa.Table:
            # Read whole: a column may first appear on any line (a scan would keep only the
            # columns of the file's first block).
            with filesystem.open_input_stream(location) as f:
                return pajson.read_json(f)

        table: pa.Table = _reading(what, path, read_json)
        return ArrowInput(what, table.schema, table=table, path=path)
    fmt: Any = kind
    if kind == "csv":
        import pyarrow.csv as pacsv

        # Ids such as "1001" must stay strings (the CSV reader would infer integers); an empty
        # cell is a missing value, as CSV writers mean it.
        fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in strings}, strings_can_be_null=True))
    data = _reading(what, path, lambda: ds.dataset(location, filesystem=filesystem, format=fmt))
    return ArrowInput(what, data.schema, dataset=data, path=path)


# storage_options keys (LanceDB's object_store spelling) -> pyarrow.fs.S3FileSystem arguments.
_S3_OPTIONS = {"aws_access_key_id": "access_key", "access_key_id": "access_key",
               "aws_secret_access_key": "secret_key", "secret_access_key": "secret_key",
               "aws_session_token": "session_token", "session_token": "session_token",
               "aws_region": "region", "region": "region",
               "aws_endpoint": "endpoint_override", "endpoint": "endpoint_override",
               "aws_endpoint_url": "endpoint_override"}


def _filesystem(path: str, storage_options: Mapping[str, str] | None) -> tuple[Any, str]:
    """The pyarrow filesystem of ``path`` and the path within it."""
    import pyarrow.fs as fs

    if "://" not in path or path.startswith("file://"):
        return fs.LocalFileSystem(), os.path.abspath(path.removeprefix("file://"))
    if path.startswith("s3://") and storage_options:
        options: dict[str, Any] = {}
        for key, value in storage_options.items():
            arg = _S3_OPTIONS.get(key.lower())
            if arg is not None:
                options[arg] = value
        endpoint = options.get("endpoint_override")
        if isinstance(endpoint, str) and "://" in endpoint:  # pyarrow takes the scheme apart
            options["scheme"], options["endpoint_override"] = endpoint.split("://", 1)
        return fs.S3FileSystem(**options), path.removeprefix("s3://")
    filesystem, location = fs.FileSystem.from_uri(path)
    return filesystem, location


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


# -- the queries of recall -----------------------------------------------------------------------


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


class QuerySource:
    """The queries of one call, checked column by column on opening.

    ``table`` is set when the whole input is in memory; otherwise :meth:`batches` reads it (a
    file or folder: again on each call; a reader: once).
    """

    def __init__(self, data: ArrowInput) -> None:
        names = data.schema.names
        missing = [c for c in (USER_ID, QUERY) if c not in names]
        if missing:
            raise InvalidInputError(f"queries: missing column(s) {missing} (columns: {names}); "
                                    f"expected {USER_ID!r} and {QUERY!r}, optionally {VECTOR!r} and {WORKSPACE_ID!r}")
        self.columns = [c for c in (USER_ID, QUERY, VECTOR, WORKSPACE_ID) if c in names]
        self.table = None if data.table is None else data.table.select(self.columns)
        self._data = data

    @property
    def has_vectors(self) -> bool:
        return VECTOR in self.columns

    @property
    def has_workspaces(self) -> bool:
        return WORKSPACE_ID in self.columns

    @property
    def rereadable(self) -> bool:
        """Whether :meth:`batches` can be called again (false only for a reader)."""
        return self._data.rereadable

    def batches(self, size: int, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """The input in tables of ``size`` rows, in input order."""
        return self._data.batches(size, self.columns if columns is None else columns)


def open_queries(queries: Any) -> QuerySource:
    """The :class:`QuerySource` of whatever ``queries`` is (see :func:`mindcore.batch.recall`)."""
    return QuerySource(open_input(queries, what="queries", strings=(USER_ID, QUERY, WORKSPACE_ID)))
