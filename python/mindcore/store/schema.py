"""Table schemas and the conversion of rows (plain dicts) to and from Arrow.

Every table has the standard columns below, then the columns of its record kind, all nullable so
that a newer schema only ever *adds* nullable columns and old stores keep opening:

============== ================================== ===============================================
column         type                               meaning
============== ================================== ===============================================
``id``         string, not null                   stable id, unique within a namespace
``namespace``  string, not null                   isolation boundary (scalar-indexed)
``created_at`` int64                              unix ms; defaults to now on insert
``updated_at`` int64                              unix ms; defaults to now on every write
``tags``       list<string>                       defaults to ``[]``
``metadata``   string (JSON)                      any JSON value; decoded on read
``vector``     fixed_size_list<float32>[dim]      only in tables made with ``vectors=True``
============== ================================== ===============================================

A table whose vectors were rewritten for another model (``mindcore.batch.reembed``) names that
model in the ``vector`` field's metadata (:func:`vector_model`), in the same commit as the vectors,
so the table itself says which model made them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mindcore.embed.base import bad_vector_row
from mindcore.store.errors import SchemaError

__all__ = [
    "RESERVED",
    "ColumnsSpec",
    "Row",
    "build_schema",
    "missing_fields",
    "now_ms",
    "rows_from_arrow",
    "rows_to_arrow",
    "take_rows",
    "vector_dim",
    "vector_model",
    "with_vector_model",
]

Row: TypeAlias = dict[str, Any]
ColumnsSpec: TypeAlias = "Mapping[str, pa.DataType | pa.Field[Any]] | pa.Schema | Sequence[pa.Field[Any]]"

VECTOR = "vector"
RESERVED = ("id", "namespace", "created_at", "updated_at", "tags", "metadata", VECTOR)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def now_ms() -> int:
    """The current time in unix milliseconds."""
    return time.time_ns() // 1_000_000


def _standard(dim: int | None) -> list[pa.Field[Any]]:
    fields: list[pa.Field[Any]] = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("namespace", pa.string(), nullable=False),
        pa.field("created_at", pa.int64()),
        pa.field("updated_at", pa.int64()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("metadata", pa.string()),
    ]
    if dim is not None:
        fields.append(pa.field(VECTOR, pa.list_(pa.float32(), dim)))
    return fields


def _kind_fields(columns: ColumnsSpec | None) -> list[pa.Field[Any]]:
    if columns is None:
        return []
    fields: list[Any]
    if isinstance(columns, pa.Schema):
        fields = list(columns)
    elif isinstance(columns, Mapping):
        fields = [v if isinstance(v, pa.Field) else pa.field(k, v) for k, v in columns.items()]
        for (k, _), f in zip(columns.items(), fields, strict=True):
            if f.name != k:
                raise SchemaError(f"column {k!r}: the pa.Field is named {f.name!r}")
    else:
        fields = list(columns)
    for f in fields:
        if not isinstance(f, pa.Field):
            raise TypeError(f"columns: expected pyarrow fields or types, got {type(f).__name__}")
        if not _NAME.match(f.name):
            raise SchemaError(f"column {f.name!r}: names must match [A-Za-z_][A-Za-z0-9_]*")
        if f.name in RESERVED:
            raise SchemaError(f"column {f.name!r} is a standard column every table has; pick another name")
        if not f.nullable:
            raise SchemaError(f"column {f.name!r} must be nullable (schemas only ever add nullable columns)")
    names = [f.name for f in fields]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SchemaError(f"duplicate columns: {sorted(dup)}")
    return fields


def build_schema(columns: ColumnsSpec | None, dim: int | None) -> pa.Schema:
    """The full schema of a table: standard columns, then ``columns`` (which must be nullable).

    >>> import pyarrow as pa
    >>> build_schema({"content": pa.string()}, 3).names
    ['id', 'namespace', 'created_at', 'updated_at', 'tags', 'metadata', 'vector', 'content']
    """
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0):
        raise ValueError(f"dim: expected a positive int, got {dim!r}")
    return pa.schema(_standard(dim) + _kind_fields(columns))


def vector_dim(schema: pa.Schema) -> int | None:
    """The dimension of the table's vector column, or ``None`` if it has none."""
    idx = schema.get_field_index(VECTOR)
    if idx < 0:
        return None
    t = schema.field(idx).type
    if not pa.types.is_fixed_size_list(t) or not pa.types.is_float32(t.value_type):
        raise SchemaError(f"column 'vector' has type {t}; expected fixed_size_list<float32>")
    return int(t.list_size)


#: Key of the ``vector`` field's metadata naming the model that made the table's vectors.
MODEL_KEY = b"mindcore.model_id"


def vector_model(schema: pa.Schema) -> str | None:
    """The model id the ``vector`` field's metadata records (``None``: not recorded, the table was
    never re-embedded; the store's records then say which model it holds)."""
    idx = schema.get_field_index(VECTOR)
    if idx < 0:
        return None
    meta = schema.field(idx).metadata or {}
    model = meta.get(MODEL_KEY)
    return None if model is None else model.decode("utf-8")


def with_vector_model(schema: pa.Schema, model_id: str, dim: int) -> pa.Schema:
    """``schema`` with its ``vector`` column made ``dim`` wide and labelled as ``model_id``'s.

    >>> s = with_vector_model(build_schema(None, 3), "m2", 8)
    >>> vector_dim(s), vector_model(s)
    (8, 'm2')
    """
    idx = schema.get_field_index(VECTOR)
    if idx < 0:
        raise SchemaError("the table has no 'vector' column")
    field = pa.field(VECTOR, pa.list_(pa.float32(), dim), metadata={MODEL_KEY: model_id.encode("utf-8")})
    return schema.set(idx, field)


def missing_fields(existing: pa.Schema, wanted: pa.Schema) -> list[pa.Field[Any]]:
    """Fields of ``wanted`` that ``existing`` lacks (to add as nullable columns). A column present
    in both with different types is an error; columns only in ``existing`` are kept.
    """
    out: list[pa.Field[Any]] = []
    for f in wanted:
        idx = existing.get_field_index(f.name)
        if idx < 0:
            out.append(f.with_nullable(True))
            continue
        have = existing.field(idx).type
        if not have.equals(f.type):
            raise SchemaError(f"column {f.name!r} is stored as {have} but {f.type} was asked for")
    return out


# -- rows -> Arrow ---------------------------------------------------------------------------------


def rows_to_arrow(
    rows: Iterable[Mapping[str, Any]] | pa.Table,
    schema: pa.Schema,
    namespace: str | None,
    *,
    now: int | None = None,
) -> pa.Table:
    """Validate ``rows`` and build an Arrow table with exactly ``schema``, every row in
    ``namespace``. Later rows with the same id replace earlier ones. Missing columns are null;
    ``created_at``/``updated_at`` default to ``now`` and ``tags`` to ``[]``.

    ``namespace=None`` (Arrow rows only): each row's ``namespace`` column says where it goes;
    later rows with the same namespace and id replace earlier ones.
    """
    if isinstance(rows, pa.Table | pa.RecordBatch):
        rows = pa.Table.from_batches([rows]) if isinstance(rows, pa.RecordBatch) else rows
        return _arrow_rows(rows, schema, namespace, now_ms() if now is None else now)
    if namespace is None:
        raise TypeError("rows: namespace=None needs an Arrow table with a 'namespace' column")
    else:
        if isinstance(rows, Mapping):
            raise TypeError("rows: expected a list of dicts (or a pyarrow Table), got a single dict")
        records: Sequence[Mapping[str, Any]] = list(rows)
    ts = now_ms() if now is None else now
    names = set(schema.names)
    by_id: dict[str, Mapping[str, Any]] = {}
    for i, r in enumerate(records):
        if not isinstance(r, Mapping):
            raise TypeError(f"rows[{i}]: expected a dict, got {type(r).__name__}")
        unknown = set(r) - names
        if unknown:
            raise ValueError(f"rows[{i}]: unknown columns {sorted(unknown)} (table columns: {schema.names})")
        rid = r.get("id")
        if not isinstance(rid, str) or not rid:
            raise ValueError(f"rows[{i}]: 'id' must be a non-empty str, got {rid!r}")
        ns = r.get("namespace", namespace)
        if ns != namespace:
            raise ValueError(f"rows[{i}]: namespace {ns!r} differs from the namespace written to ({namespace!r})")
        by_id.pop(rid, None)  # keep the last occurrence, at its position
        by_id[rid] = r
    uniq = list(by_id.values())
    arrays: list[pa.Array[Any]] = []
    for field in schema:
        name = field.name
        if name == "namespace":
            arrays.append(pa.array([namespace] * len(uniq), type=field.type))
        elif name in ("created_at", "updated_at"):
            arrays.append(_array([_timestamp(r.get(name, ts), name, i) for i, r in enumerate(uniq)], field))
        elif name == "tags":
            arrays.append(_array([_tags(r.get("tags"), i) for i, r in enumerate(uniq)], field))
        elif name == "metadata":
            arrays.append(_array([_json(r.get("metadata"), i) for i, r in enumerate(uniq)], field))
        elif name == VECTOR:
            arrays.append(_vectors([r.get(VECTOR) for r in uniq], field.type.list_size))
        else:
            arrays.append(_array([r.get(name) for r in uniq], field))
    return pa.Table.from_arrays(arrays, schema=schema)


def _arrow_rows(data: pa.Table, schema: pa.Schema, namespace: str | None, ts: int) -> pa.Table:
    """:func:`rows_to_arrow` for Arrow input, column by column (no per-row Python)."""
    names = set(schema.names)
    unknown = [c for c in data.column_names if c not in names]
    if unknown:
        raise ValueError(f"rows: unknown columns {sorted(unknown)} (table columns: {schema.names})")
    n = data.num_rows
    if "id" not in data.column_names:
        raise ValueError("rows: an 'id' column is required")
    ids: Any = data.column("id").combine_chunks()
    if not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type)):
        raise TypeError(f"rows: 'id' must be a string column, got {ids.type}")
    if ids.null_count or (n and pc.min(pc.utf8_length(ids)).as_py() == 0):
        raise ValueError("rows: every 'id' must be a non-empty str")
    key: Any = ids
    if namespace is None:
        if "namespace" not in data.column_names:
            raise ValueError("rows: a 'namespace' column is required when no namespace is given")
        ns: Any = data.column("namespace").combine_chunks()
        if not pa.types.is_string(ns.type) or ns.null_count or (n and pc.min(pc.utf8_length(ns)).as_py() == 0):
            raise ValueError("rows: every 'namespace' must be a non-empty str")
        # ids are unique per namespace: the key joins both, after the namespace's length so that
        # no choice of namespaces and ids makes two keys equal.
        key = pc.binary_join_element_wise(pc.cast(pc.utf8_length(ns), pa.string()), ns, ids, "\x00")
    elif "namespace" in data.column_names:
        ns = data.column("namespace")
        if ns.null_count or (n and not pc.all(pc.equal(ns, pa.scalar(namespace))).as_py()):
            raise ValueError(f"rows: 'namespace' differs from the namespace written to ({namespace!r})")
    # Later rows with the same id replace earlier ones: keep each id's last occurrence (counting
    # distinct ids in Arrow is far cheaper than sorting them, and ids are usually distinct).
    if n > 1 and int(pc.count_distinct(key).as_py()) != n:
        _, last_rev = np.unique(key.to_numpy(zero_copy_only=False)[::-1], return_index=True)
        data = data.take(np.sort(n - 1 - last_rev))
    n = data.num_rows
    arrays: list[Any] = []
    for field in schema:
        name = field.name
        have = name in data.column_names
        col: Any = data.column(name).combine_chunks() if have else None
        if name == "namespace":
            arrays.append(col.cast(field.type) if namespace is None else pa.array([namespace] * n, type=field.type))
        elif not have:
            if name in ("created_at", "updated_at"):
                arrays.append(pa.array(np.full(n, ts, dtype=np.int64)))
            elif name == "tags":  # n empty lists: n + 1 zero offsets over no values
                offsets: Any = pa.array(np.zeros(n + 1, dtype=np.int32))
                arrays.append(pa.ListArray.from_arrays(offsets, pa.array([], type=field.type.value_type),
                                                       type=field.type))
            else:
                arrays.append(pa.nulls(n, field.type))
        elif name in ("created_at", "updated_at"):
            if not pa.types.is_integer(col.type):
                raise TypeError(f"rows: {name!r} must be unix milliseconds (int), got {col.type}")
            arrays.append(pc.fill_null(col.cast(pa.int64()), pa.scalar(ts, pa.int64())))
        elif name == "tags":
            arrays.append(_cast(col, field))
            if pc.list_flatten(arrays[-1]).null_count:
                raise TypeError("rows: every tag must be a str")
            if arrays[-1].null_count:
                arrays[-1] = pa.array([t if t is not None else [] for t in arrays[-1].to_pylist()], type=field.type)
        elif name == "metadata":
            if not pa.types.is_string(col.type):
                raise TypeError(f"rows: 'metadata' must be a column of JSON strings, got {col.type}")
            for i, m in enumerate(col.to_pylist()):
                if m is not None:
                    try:
                        json.loads(m)
                    except ValueError as e:
                        raise TypeError(f"rows[{i}]: 'metadata' is not valid JSON: {e}") from None
            arrays.append(col)
        elif name == VECTOR:
            arr = _cast(col, field)
            vals = arr.values.slice(arr.offset * field.type.list_size, n * field.type.list_size)
            flat = vals.to_numpy(zero_copy_only=False)
            rows_ok = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            if field.type.list_size and rows_ok.any():
                mat = np.asarray(flat, dtype=np.float32).reshape(n, field.type.list_size)[rows_ok]
                bad = bad_vector_row(mat)
                if bad is not None:
                    raise ValueError(f"rows: 'vector' of a row is unusable: {bad[1]}")
            arrays.append(arr)
        else:
            arrays.append(_cast(col, field))
    return pa.Table.from_arrays(arrays, schema=schema)


def _cast(col: Any, field: pa.Field[Any]) -> Any:
    try:
        return col.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise TypeError(f"column {field.name!r}: cannot store {col.type} as {field.type}: {e}") from None


def _array(values: list[Any], field: pa.Field[Any]) -> pa.Array[Any]:
    try:
        arr: pa.Array[Any] = pa.array(values, type=field.type)
        return arr
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
        raise TypeError(f"column {field.name!r} ({field.type}): {e}") from None


def _timestamp(v: Any, name: str, i: int) -> int | None:
    if v is None:
        return None
    if isinstance(v, np.integer):
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"rows[{i}]: {name!r} must be unix milliseconds (int), got {type(v).__name__}")
    return v


def _tags(v: Any, i: int) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str | bytes) or not isinstance(v, Iterable):
        raise TypeError(f"rows[{i}]: 'tags' must be a list of str, got {type(v).__name__}")
    out = list(v)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"rows[{i}]: every tag must be a str, got {type(t).__name__}")
    return out


def _json(v: Any, i: int) -> str | None:
    if v is None:
        return None
    try:
        return json.dumps(v, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise TypeError(f"rows[{i}]: 'metadata' must be JSON-serialisable: {e}") from None


def _vectors(values: list[Any], dim: int) -> pa.Array[Any]:
    n = len(values)
    mat = np.zeros((n, dim), dtype=np.float32)
    valid = np.zeros(n, dtype=bool)
    for i, v in enumerate(values):
        if v is None:
            continue
        a = np.asarray(v, dtype=np.float32)
        if a.shape != (dim,):
            raise ValueError(f"rows[{i}]: 'vector' must have shape ({dim},), got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"rows[{i}]: 'vector' contains NaN or infinity")
        mat[i] = a
        valid[i] = True
    flat = pa.array(mat.reshape(-1), type=pa.float32())
    arr = pa.FixedSizeListArray.from_arrays(flat, dim)
    if not valid.all():
        arr = pa.FixedSizeListArray.from_arrays(flat, dim, mask=pa.array(~valid))
    return arr


# -- Arrow -> rows ---------------------------------------------------------------------------------


def take_rows(table: pa.Table, idx: Sequence[int] | np.ndarray) -> list[Row]:
    """Rows ``idx`` of ``table`` as plain dicts, as ``table.take(idx).to_pylist()`` gives them.

    Read one zero-copy slice per row, converted together: a take over a table in many chunks (a
    cached namespace after many writes) first concatenates them, so picking a few rows would cost
    as much as copying the table.

    >>> take_rows(pa.concat_tables([pa.table({"a": [1, 2]}), pa.table({"a": [3]})]), [2, 0])
    [{'a': 3}, {'a': 1}]
    """
    if not len(idx):
        return []
    rows: list[Row] = pa.concat_tables([table.slice(int(i), 1) for i in idx]).to_pylist()
    return rows


def rows_from_arrow(table: pa.Table) -> list[Row]:
    """Plain dicts from an Arrow table: ``metadata`` decoded from JSON, ``vector`` as a float32
    numpy array (``None`` when null)."""
    names = table.column_names
    plain = table.drop_columns([VECTOR]) if VECTOR in names else table
    rows: list[Row] = plain.to_pylist()
    if "metadata" in names:
        for r in rows:
            m = r.get("metadata")
            r["metadata"] = json.loads(m) if m is not None else None
    if VECTOR in names:
        vec: Any = table.column(VECTOR).combine_chunks()
        dim = vec.type.list_size
        mat = np.asarray(vec.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        valid = ~np.asarray(vec.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if valid.all():
            mat = mat.reshape(len(rows), dim)
            for r, v in zip(rows, mat, strict=True):
                r[VECTOR] = v
        else:
            it = iter(mat.reshape(-1, dim)) if dim else iter(())
            for r, ok in zip(rows, valid, strict=True):
                r[VECTOR] = next(it) if ok else None
    return rows

