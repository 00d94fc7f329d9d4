"""Filters: the only way to say *which rows* to the store.

A :class:`Filter` is an immutable tree built with :func:`col` and combined with ``&``, ``|`` and
``~``. :func:`to_where` is the one function in mindcore that turns a filter into a LanceDB
``where`` string: every column name is validated against the table's schema and every value is
type-checked and escaped there, and nowhere else. :func:`to_mask` evaluates the same tree over an
in-memory Arrow table with SQL's three-valued logic, so the vector cache filters exactly as
LanceDB does (the tests check the two against each other on random data).

>>> from mindcore.store import col
>>> f = (col("type").eq("belief") & col("tags").contains_all(["ops"])) | col("pinned").eq(True)
>>> f
Or(parts=(And(parts=(Cmp(column='type', op='=', value='belief'), TagsAll(column='tags', values=('ops',)))), Cmp(column='pinned', op='=', value=True)))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Col",
    "Filter",
    "Value",
    "all_of",
    "any_of",
    "col",
    "to_mask",
    "to_where",
]

Value: TypeAlias = str | int | float | bool
CmpOp = Literal["=", "!=", "<", "<=", ">", ">="]
_INT64_MAX = 2**63 - 1


class Filter:
    """A condition on rows. Combine with ``&`` (and), ``|`` (or) and ``~`` (not)."""

    __slots__ = ()

    def __and__(self, other: Filter) -> Filter:
        return all_of(self, other)

    def __or__(self, other: Filter) -> Filter:
        return any_of(self, other)

    def __invert__(self) -> Filter:
        return Not(self)


@dataclass(frozen=True, slots=True)
class Cmp(Filter):
    column: str
    op: CmpOp
    value: Value


@dataclass(frozen=True, slots=True)
class In(Filter):
    column: str
    values: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class IsNull(Filter):
    column: str


@dataclass(frozen=True, slots=True)
class StartsWith(Filter):
    column: str
    prefix: str


@dataclass(frozen=True, slots=True)
class TagsAll(Filter):
    column: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TagsAny(Filter):
    column: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class And(Filter):
    parts: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class Or(Filter):
    parts: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class Not(Filter):
    part: Filter


def all_of(*filters: Filter | None) -> Filter:
    """Rows matching every filter (``None`` entries are skipped; no filters matches every row).

    >>> all_of(col("a").eq(1), None)
    Cmp(column='a', op='=', value=1)
    """
    parts: list[Filter] = []
    for f in filters:
        if f is None:
            continue
        _check_filter(f)
        parts.extend(f.parts if isinstance(f, And) else (f,))
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def any_of(*filters: Filter | None) -> Filter:
    """Rows matching at least one filter (``None`` entries are skipped; none matches no row).

    >>> any_of(col("a").eq(1), col("a").eq(2))
    Or(parts=(Cmp(column='a', op='=', value=1), Cmp(column='a', op='=', value=2)))
    """
    parts: list[Filter] = []
    for f in filters:
        if f is None:
            continue
        _check_filter(f)
        parts.extend(f.parts if isinstance(f, Or) else (f,))
    return parts[0] if len(parts) == 1 else Or(tuple(parts))


def _check_filter(f: object) -> None:
    if not isinstance(f, Filter):
        raise TypeError(f"where: expected a Filter built with mindcore.store.col(...), got {type(f).__name__}")


class Col:
    """A column to build conditions on; see :func:`col`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"col: column name must be a str, got {type(name).__name__}")
        self.name = name

    def __repr__(self) -> str:
        return f"col({self.name!r})"

    def eq(self, value: Value) -> Filter:
        return Cmp(self.name, "=", _scalar(value, self.name))

    def ne(self, value: Value) -> Filter:
        """Not equal; like SQL, rows where the column is null match neither ``eq`` nor ``ne``."""
        return Cmp(self.name, "!=", _scalar(value, self.name))

    def lt(self, value: Value) -> Filter:
        return Cmp(self.name, "<", _scalar(value, self.name))

    def le(self, value: Value) -> Filter:
        return Cmp(self.name, "<=", _scalar(value, self.name))

    def gt(self, value: Value) -> Filter:
        return Cmp(self.name, ">", _scalar(value, self.name))

    def ge(self, value: Value) -> Filter:
        return Cmp(self.name, ">=", _scalar(value, self.name))

    def between(
        self,
        low: Value | None = None,
        high: Value | None = None,
        *,
        closed: Literal["both", "left", "right", "none"] = "both",
    ) -> Filter:
        """``low <= column <= high`` (``closed`` picks which ends are included; ``None`` leaves an
        end open).

        >>> col("created_at").between(10, 20, closed="left")
        And(parts=(Cmp(column='created_at', op='>=', value=10), Cmp(column='created_at', op='<', value=20)))
        """
        if closed not in ("both", "left", "right", "none"):
            raise ValueError(f"closed: expected 'both', 'left', 'right' or 'none', got {closed!r}")
        parts: list[Filter | None] = [None, None]
        if low is not None:
            parts[0] = self.ge(low) if closed in ("both", "left") else self.gt(low)
        if high is not None:
            parts[1] = self.le(high) if closed in ("both", "right") else self.lt(high)
        return all_of(*parts)

    def is_in(self, values: Iterable[Value]) -> Filter:
        """The column equals one of ``values`` (an empty list matches no row)."""
        if isinstance(values, str | bytes):
            raise TypeError(f"is_in on {self.name!r}: expected a list of values, got a single {type(values).__name__}")
        return In(self.name, tuple(_scalar(v, self.name) for v in values))

    def is_null(self) -> Filter:
        return IsNull(self.name)

    def is_not_null(self) -> Filter:
        return Not(IsNull(self.name))

    def starts_with(self, prefix: str) -> Filter:
        """A string column starts with ``prefix`` (no wildcards: ``%`` and ``_`` are literal)."""
        if not isinstance(prefix, str):
            raise TypeError(f"starts_with on {self.name!r}: prefix must be a str, got {type(prefix).__name__}")
        return StartsWith(self.name, prefix)

    def contains_all(self, values: Iterable[str]) -> Filter:
        """A list column holds every one of ``values`` (an empty list matches every row)."""
        return TagsAll(self.name, _strings(values, self.name))

    def contains_any(self, values: Iterable[str]) -> Filter:
        """A list column holds at least one of ``values`` (an empty list matches no row)."""
        return TagsAny(self.name, _strings(values, self.name))


def col(name: str) -> Col:
    """Start a condition on column ``name``.

    >>> col("namespace").eq("mind/agent-1")
    Cmp(column='namespace', op='=', value='mind/agent-1')
    """
    return Col(name)


def _scalar(value: object, column: str) -> Value:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"value for column {column!r} must be finite, got {value!r}")
        return value
    raise TypeError(f"value for column {column!r}: expected str, int, float or bool, got {type(value).__name__}")


def _strings(values: Iterable[str], column: str) -> tuple[str, ...]:
    if isinstance(values, str | bytes):
        raise TypeError(f"values for column {column!r}: expected a list of str, got a single {type(values).__name__}")
    out = tuple(values)
    for v in out:
        if not isinstance(v, str):
            raise TypeError(f"values for column {column!r}: expected str items, got {type(v).__name__}")
    return out


# -- validation against a schema -------------------------------------------------------------------

_Kind = Literal["str", "int", "float", "bool", "tags"]


def _kind(schema: pa.Schema, column: str) -> tuple[_Kind, pa.DataType]:
    """The filterable kind of ``column`` in ``schema``; the only place column names are checked."""
    idx = schema.get_field_index(column)
    if idx < 0:
        names = ", ".join(schema.names)
        raise ValueError(f"unknown column {column!r} in filter (columns: {names})")
    t = schema.field(idx).type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "str", t
    if pa.types.is_integer(t):
        return "int", t
    if pa.types.is_floating(t):
        return "float", t
    if pa.types.is_boolean(t):
        return "bool", t
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and (
        pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)
    ):
        return "tags", t
    raise ValueError(f"column {column!r} of type {t} cannot be used in a filter")


def _checked(value: Value, kind: _Kind, t: pa.DataType, column: str) -> Value:
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "tags": False,
    }[kind]
    if not ok:
        raise TypeError(f"column {column!r} has type {t}; cannot compare it with {type(value).__name__} {value!r}")
    if kind == "int":
        assert isinstance(value, int)
        lo, hi = _int_range(t)
        if not lo <= value <= hi:
            raise ValueError(f"value {value} is out of range for column {column!r} ({t}: {lo}..{hi})")
    if kind == "float":
        return float(value)
    return value


def _int_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    if pa.types.is_unsigned_integer(t):
        return 0, min(2**bits - 1, _INT64_MAX)
    # -2**63 itself does not parse as an int64 literal in LanceDB's SQL, so it is excluded.
    return -(2 ** (bits - 1)) + (1 if bits == 64 else 0), 2 ** (bits - 1) - 1


def _scalar_kind(f: Cmp | In | StartsWith, schema: pa.Schema) -> tuple[_Kind, pa.DataType]:
    kind, t = _kind(schema, f.column)
    if kind == "tags":
        raise ValueError(f"column {f.column!r} is a list; use contains_all/contains_any/is_null on it")
    if isinstance(f, StartsWith) and kind != "str":
        raise ValueError(f"starts_with needs a string column; {f.column!r} has type {t}")
    if isinstance(f, Cmp) and kind == "bool" and f.op not in ("=", "!="):
        raise ValueError(f"column {f.column!r} is boolean; only eq/ne apply")
    return kind, t


def _tags_kind(f: TagsAll | TagsAny, schema: pa.Schema) -> None:
    kind, t = _kind(schema, f.column)
    if kind != "tags":
        raise ValueError(f"contains_all/contains_any need a list<string> column; {f.column!r} has type {t}")


# -- the one where-string builder ----------------------------------------------------------------


def to_where(namespace: str | None, where: Filter | None, schema: pa.Schema) -> str:
    """The LanceDB ``where`` string for rows of ``namespace`` (``None``: every namespace) that
    match ``where``. Every where string the store sends to LanceDB is made here.

    >>> import pyarrow as pa
    >>> s = pa.schema([("namespace", pa.string()), ("id", pa.string())])
    >>> to_where("users/o'brien", col("id").is_in(["a", "b"]), s)
    "(`namespace` = 'users/o''brien') AND (`id` IN ('a', 'b'))"
    """
    parts: list[Filter] = []
    if namespace is not None:
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(f"namespace: expected a non-empty str, got {namespace!r}")
        parts.append(Cmp("namespace", "=", namespace))
    if where is not None:
        _check_filter(where)
        parts.append(where)
    if not parts:
        return "TRUE"
    return _sql(all_of(*parts), schema)


def _ident(column: str) -> str:
    # Column names come from the schema (checked by _kind); backticks keep case and keywords intact.
    if "`" in column:
        raise ValueError(f"column name {column!r} cannot contain a backtick")
    return f"`{column}`"


def _lit(value: Value) -> str:
    """SQL literal for an already type-checked value."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # finite (checked): digits, '.', 'e', sign only
    # Standard SQL strings: the only special character is the quote, doubled. Backslashes, %, *,
    # NUL and every other code point are literal in LanceDB's dialect (tested).
    return "'" + value.replace("'", "''") + "'"


def _sql(f: Filter, schema: pa.Schema) -> str:
    if isinstance(f, Cmp):
        kind, t = _scalar_kind(f, schema)
        return f"{_ident(f.column)} {f.op} {_lit(_checked(f.value, kind, t, f.column))}"
    if isinstance(f, In):
        kind, t = _scalar_kind(f, schema)
        if not f.values:
            return "FALSE"
        items = ", ".join(_lit(_checked(v, kind, t, f.column)) for v in f.values)
        return f"{_ident(f.column)} IN ({items})"
    if isinstance(f, IsNull):
        _kind(schema, f.column)
        return f"{_ident(f.column)} IS NULL"
    if isinstance(f, StartsWith):
        _scalar_kind(f, schema)
        return f"starts_with({_ident(f.column)}, {_lit(f.prefix)})"
    if isinstance(f, TagsAll | TagsAny):
        _tags_kind(f, schema)
        if not f.values:
            return "TRUE" if isinstance(f, TagsAll) else "FALSE"
        fn = "array_has_all" if isinstance(f, TagsAll) else "array_has_any"
        items = ", ".join(_lit(v) for v in f.values)
        return f"{fn}({_ident(f.column)}, [{items}])"
    if isinstance(f, And):
        return " AND ".join(f"({_sql(p, schema)})" for p in f.parts) if f.parts else "TRUE"
    if isinstance(f, Or):
        return " OR ".join(f"({_sql(p, schema)})" for p in f.parts) if f.parts else "FALSE"
    if isinstance(f, Not):
        return f"NOT ({_sql(f.part, schema)})"
    raise TypeError(f"where: unsupported filter node {type(f).__name__}")


# -- in-memory evaluation (same semantics as LanceDB) ---------------------------------------------


def to_mask(where: Filter | None, table: pa.Table) -> np.ndarray:
    """Boolean mask of the rows of ``table`` that ``where`` selects, evaluated like SQL (a
    condition on a null value is unknown, and unknown rows are not selected).

    >>> import pyarrow as pa
    >>> t = pa.table({"n": [1, None, 3]})
    >>> to_mask(~col("n").eq(1), t).tolist()
    [False, False, True]
    """
    n = table.num_rows
    if where is None:
        return np.ones(n, dtype=bool)
    _check_filter(where)
    out: Any = pc.fill_null(_eval(where, table), False)
    return np.asarray(out.to_numpy(zero_copy_only=False), dtype=bool)


def _column(table: pa.Table, name: str) -> Any:
    return table.column(name).combine_chunks()


def _const(value: bool | None, n: int) -> Any:
    return pa.array(np.full(n, bool(value)), type=pa.bool_()) if value is not None else pa.nulls(n, pa.bool_())


def _eval(f: Filter, table: pa.Table) -> Any:
    n = table.num_rows
    schema = table.schema
    if isinstance(f, Cmp):
        kind, t = _scalar_kind(f, schema)
        v = _checked(f.value, kind, t, f.column)
        fn = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
              ">=": pc.greater_equal}[f.op]
        c = _column(table, f.column)
        # LanceDB converts a literal to the column's type before comparing; so do we.
        return fn(c, pa.scalar(v, type=c.type))
    if isinstance(f, In):
        kind, t = _scalar_kind(f, schema)
        if not f.values:
            return _const(False, n)
        c = _column(table, f.column)
        vals = [_checked(v, kind, t, f.column) for v in f.values]
        hit = pc.is_in(c, value_set=pa.array(vals, type=c.type))
        # SQL: NULL IN (...) is unknown, not false.
        return pc.if_else(pc.is_null(c), pa.scalar(None, pa.bool_()), hit)
    if isinstance(f, IsNull):
        _kind(schema, f.column)
        return pc.is_null(_column(table, f.column))
    if isinstance(f, StartsWith):
        _scalar_kind(f, schema)
        return pc.starts_with(_column(table, f.column), pattern=f.prefix)
    if isinstance(f, TagsAll | TagsAny):
        _tags_kind(f, schema)
        if not f.values:
            return _const(isinstance(f, TagsAll), n)
        return _tags(f, _column(table, f.column))
    if isinstance(f, And):
        acc = _const(True, n)
        for p in f.parts:
            acc = pc.and_kleene(acc, _eval(p, table))
        return acc
    if isinstance(f, Or):
        acc = _const(False, n)
        for p in f.parts:
            acc = pc.or_kleene(acc, _eval(p, table))
        return acc
    if isinstance(f, Not):
        return pc.invert(_eval(f.part, table))
    raise TypeError(f"where: unsupported filter node {type(f).__name__}")


def _tags(f: TagsAll | TagsAny, lists: Any) -> Any:
    n = len(lists)
    flat = pc.list_flatten(lists)
    parents = np.asarray(pc.list_parent_indices(lists).to_numpy(zero_copy_only=False), dtype=np.int64)
    wanted: Sequence[str] = list(dict.fromkeys(f.values))
    # For each wanted tag, which rows hold it; then all/any across tags.
    hits = np.zeros((len(wanted), n), dtype=bool)
    flat_np = flat.to_numpy(zero_copy_only=False)
    for i, tag in enumerate(wanted):
        rows = parents[flat_np == tag]
        hits[i, rows] = True
    res = np.asarray(hits.all(axis=0) if isinstance(f, TagsAll) else hits.any(axis=0), dtype=bool)
    nulls = np.asarray(lists.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(list(res), type=pa.bool_(), mask=nulls) if nulls.any() else pa.array(res, type=pa.bool_())
