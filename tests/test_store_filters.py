"""Filters: hostile values cannot widen a query or reach another namespace (real LanceDB on disk),
and the in-memory evaluator agrees with LanceDB's SQL on random data and random filters."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mindcore
from mindcore.store import ALL_NAMESPACES, Filter, StoreConfig, Table, all_of, any_of, col, to_mask, to_where

HOSTILE = [
    "'",
    "''",
    "a'b",
    "it's",
    "\\",
    "a\\'b",
    "\\'",
    "a\\",
    '"',
    'a"b',
    "`",
    "`namespace`",
    "%",
    "_",
    "a%",
    "%a%",
    "*",
    "a*",
    "--",
    "a -- comment",
    "/* c */",
    "' OR 1=1 --",
    "' OR '1'='1",
    "x' OR namespace != 'x",
    "') OR TRUE OR ('",
    "'); DROP TABLE notes; --",
    "\x00",
    "a\x00b",
    "\x00' OR 1=1 --",
    "line\nbreak",
    "tab\there",
    "\r\n",
    "é",
    "日本語",
    "emoji 🧠💥",
    "\u202eRTL override",
    "e\u0301 combining",
    "\ufeffbom",
    "NULL",
    "null",
    "TRUE",
    " ",
    "x" * 5000,
    "victim ",
    "VICTIM",
]

VICTIM = "victim"


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    path = tmp_path_factory.mktemp("hostile")
    store = mindcore.open(path, config=StoreConfig(compact_every=0))
    t = store.table("notes", {"text": pa.string()})
    # The victim namespace holds a row under every hostile id as well as its secrets.
    t.upsert(VICTIM, [{"id": "secret", "text": "victim data", "tags": ["private"]}])
    t.upsert(VICTIM, [{"id": h, "text": "victim copy", "tags": [h]} for h in HOSTILE])
    # Every hostile string is also a namespace holding one row with that id, tag and text.
    for h in HOSTILE:
        t.upsert(h, [{"id": h, "text": h, "tags": [h, "common"]}, {"id": "other", "text": "other"}])
    yield t
    store.close()


@pytest.mark.parametrize("h", HOSTILE, ids=[repr(h)[:30] for h in HOSTILE])
def test_hostile_values_match_exactly_and_stay_in_their_namespace(table: Table, h: str) -> None:
    rows = table.scan(h, col("id").eq(h))
    assert [(r["id"], r["namespace"], r["text"]) for r in rows] == [(h, h, h)]
    assert [r["id"] for r in table.get(h, [h])] == [h]
    assert table.count(h) == 2  # the namespace itself holds exactly its two rows
    assert table.count(h, col("tags").contains_all([h])) == 1
    assert table.count(h, col("tags").contains_any([h, "nope"])) == 1
    assert table.count(h, col("id").is_in([h, "nope"])) == 1
    assert table.count(h, col("text").starts_with(h)) == 1
    assert table.count(h, col("id").ne(h)) == 1
    # Across namespaces the id exists exactly twice: its own namespace and the victim's copy
    # (and once more when h is "other", which every namespace has).
    expected = 1 + len(HOSTILE) if h == "other" else 2
    assert table.count(ALL_NAMESPACES, col("id").eq(h)) == expected
    # Nothing of the victim leaks into the hostile namespace.
    assert table.count(h, col("text").eq("victim data")) == 0
    assert table.count(h, col("tags").contains_all(["private"])) == 0


def test_hostile_deletes_touch_only_their_row(tmp_path: Path) -> None:
    t = mindcore.open(tmp_path, config=StoreConfig(compact_every=0)).table("n", {"text": pa.string()})
    t.upsert(VICTIM, [{"id": h, "tags": [h]} for h in HOSTILE])
    for h in HOSTILE:
        t.upsert(h, [{"id": h, "tags": [h]}, {"id": "keep"}])
    for h in HOSTILE:
        assert t.delete(h, ids=[h]).deleted == 1
        assert t.delete(h, where=col("tags").contains_any([h])).deleted == 0
        assert t.count(h) == 1
    assert t.count(VICTIM) == len(HOSTILE)


def test_hostile_namespaces_are_isolated(tmp_path: Path) -> None:
    t = mindcore.open(tmp_path, config=StoreConfig(compact_every=0)).table("n")
    t.upsert(VICTIM, [{"id": "secret"}])
    for h in HOSTILE:
        t.upsert(h, [{"id": "x"}])
        assert t.count(h) == 1
        assert t.get(h, ["secret"]) == []
        t.clear(h)
        assert t.count(h) == 0
    assert t.count(VICTIM) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(min_size=1, max_size=40))
def test_any_text_matches_only_itself(table: Table, value: str) -> None:
    t = table
    t.upsert("fuzz", [{"id": value, "text": value, "tags": [value]}])
    try:
        assert [r["id"] for r in t.scan("fuzz", col("id").eq(value))] == [value]
        assert t.count("fuzz", col("tags").contains_all([value])) == 1
        assert t.count(VICTIM, col("id").eq(value)) == (1 if value in HOSTILE or value == "secret" else 0)
    finally:
        t.clear("fuzz")


# -- validation ------------------------------------------------------------------------------------

SCHEMA = pa.schema([
    ("id", pa.string()), ("namespace", pa.string()), ("s", pa.string()), ("i", pa.int64()),
    ("i8", pa.int8()), ("u", pa.uint32()), ("f", pa.float32()), ("b", pa.bool_()),
    ("tags", pa.list_(pa.string())), ("vector", pa.list_(pa.float32(), 4)),
])


def test_rendering() -> None:
    assert to_where("n", None, SCHEMA) == "`namespace` = 'n'"
    assert to_where(None, None, SCHEMA) == "TRUE"
    f = (col("s").eq("a'b") | col("i").between(1, 5, closed="left")) & ~col("b").eq(True)
    assert to_where(None, f, SCHEMA) == (
        "((`s` = 'a''b') OR ((`i` >= 1) AND (`i` < 5))) AND (NOT (`b` = TRUE))"
    )
    assert to_where(None, col("tags").contains_all(["x", "y'"]), SCHEMA) == "array_has_all(`tags`, ['x', 'y'''])"
    assert to_where(None, col("s").is_in([]), SCHEMA) == "FALSE"
    assert to_where(None, col("tags").contains_all([]), SCHEMA) == "TRUE"
    assert to_where(None, col("f").ge(1), SCHEMA) == "`f` >= 1.0"
    assert to_where(None, all_of(), SCHEMA) == "TRUE"
    assert to_where(None, any_of(), SCHEMA) == "FALSE"


@pytest.mark.parametrize(
    ("make", "err", "match"),
    [
        (lambda: col("nope").eq(1), ValueError, "unknown column 'nope'"),
        (lambda: col("s; DROP TABLE x").eq("a"), ValueError, "unknown column"),
        (lambda: col("`").eq("a"), ValueError, "unknown column"),
        (lambda: col("s").eq(1), TypeError, "column 's' has type string"),
        (lambda: col("i").eq("1"), TypeError, "column 'i' has type int64"),
        (lambda: col("i").eq(True), TypeError, "column 'i' has type int64"),
        (lambda: col("i").eq(1.5), TypeError, "column 'i'"),
        (lambda: col("b").eq(1), TypeError, "column 'b' has type bool"),
        (lambda: col("b").lt(True), ValueError, "only eq/ne"),
        (lambda: col("i8").eq(200), ValueError, "out of range"),
        (lambda: col("u").eq(-1), ValueError, "out of range"),
        (lambda: col("i").eq(-(2**63)), ValueError, "out of range"),
        (lambda: col("tags").eq("x"), ValueError, "is a list"),
        (lambda: col("s").contains_all(["x"]), ValueError, "list<string>"),
        (lambda: col("i").starts_with("1"), ValueError, "string column"),
        (lambda: col("vector").eq(1), ValueError, "cannot be used in a filter"),
    ],
)
def test_bad_filters_are_rejected(make: Any, err: type[Exception], match: str) -> None:
    with pytest.raises(err, match=match):
        to_where("n", make(), SCHEMA)


def test_bad_values_are_rejected_when_built() -> None:
    with pytest.raises(ValueError, match="finite"):
        col("f").eq(float("nan"))
    with pytest.raises(ValueError, match="finite"):
        col("f").lt(float("inf"))
    with pytest.raises(TypeError, match="expected str, int, float or bool"):
        col("s").eq(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="single str"):
        col("s").is_in("abc")
    with pytest.raises(TypeError, match="single str"):
        col("tags").contains_all("abc")
    with pytest.raises(TypeError, match="str items"):
        col("tags").contains_any(["a", 1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="Filter"):
        to_where("n", "id = 'x'", SCHEMA)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Filter"):
        all_of(col("s").eq("a"), "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace"):
        to_where("", None, SCHEMA)


def test_tables_take_no_where_strings(table: Table) -> None:
    with pytest.raises(TypeError, match="Filter"):
        table.scan("x", "TRUE")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Filter"):
        table.delete("x", where="TRUE")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Filter"):
        table.count("x", "1=1")  # type: ignore[arg-type]


def test_int_boundaries_render_and_match(tmp_path: Path) -> None:
    t = mindcore.open(tmp_path, config=StoreConfig(compact_every=0)).table("n", {"i": pa.int64()})
    lo, hi = -(2**63) + 1, 2**63 - 1
    t.upsert("u", [{"id": "lo", "i": lo}, {"id": "hi", "i": hi}, {"id": "z", "i": 0}])
    assert [r["id"] for r in t.scan("u", col("i").eq(lo))] == ["lo"]
    assert [r["id"] for r in t.scan("u", col("i").eq(hi))] == ["hi"]
    assert t.count("u", col("i").between(lo, hi)) == 3


# -- the in-memory evaluator agrees with LanceDB -----------------------------------------------------

EVAL_SCHEMA = {"s": pa.string(), "i": pa.int64(), "f": pa.float64(), "b": pa.bool_()}
_S = st.sampled_from(["a", "b", "ab", "a'b", "", "B", "%"])
_I = st.integers(-3, 3)
_F = st.sampled_from([-1.5, 0.0, 0.5, 1.0, 2.25])
_TAGS = st.sampled_from(["x", "y", "z", "x'y"])



def _random_rows(n: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)

    def maybe(v: Any) -> Any:
        return None if rnd.random() < 0.2 else v

    return [
        {
            "s": maybe(rnd.choice(["a", "b", "ab", "a'b", "", "B", "%"])),
            "i": maybe(rnd.randint(-3, 3)),
            "f": maybe(rnd.choice([-1.5, 0.0, 0.5, 1.0, 2.25])),
            "b": maybe(rnd.random() < 0.5),
            "tags": maybe(rnd.sample(["x", "y", "z", "x'y"], rnd.randint(0, 3))),
        }
        for _ in range(n)
    ]


_LEAF = st.one_of(
    st.builds(lambda v: col("s").eq(v), _S),
    st.builds(lambda v: col("s").ne(v), _S),
    st.builds(lambda v: col("s").lt(v), _S),
    st.builds(lambda v: col("s").starts_with(v), _S),
    st.builds(lambda vs: col("s").is_in(vs), st.lists(_S, max_size=3)),
    st.builds(lambda v: col("i").ge(v), _I),
    st.builds(lambda v: col("i").eq(v), _I),
    st.builds(lambda lo, hi, c: col("i").between(lo, hi, closed=c), _I, _I,
              st.sampled_from(["both", "left", "right", "none"])),
    st.builds(lambda vs: col("i").is_in(vs), st.lists(_I, max_size=3)),
    st.builds(lambda v: col("f").gt(v), _F),
    st.builds(lambda v: col("f").le(v), _F),
    st.builds(lambda v: col("b").eq(v), st.booleans()),
    st.builds(lambda v: col("b").ne(v), st.booleans()),
    st.builds(lambda c: col(c).is_null(), st.sampled_from(["s", "i", "f", "b", "tags"])),
    st.builds(lambda c: col(c).is_not_null(), st.sampled_from(["s", "i", "f", "b", "tags"])),
    st.builds(lambda vs: col("tags").contains_all(vs), st.lists(_TAGS, max_size=2)),
    st.builds(lambda vs: col("tags").contains_any(vs), st.lists(_TAGS, max_size=2)),
)
_FILTER: st.SearchStrategy[Filter] = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.builds(lambda a, b: a & b, inner, inner),
        st.builds(lambda a, b: a | b, inner, inner),
        st.builds(lambda a: ~a, inner),
    ),
    max_leaves=5,
)


@pytest.fixture(scope="module")
def eval_table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Table, pa.Table]]:
    store = mindcore.open(tmp_path_factory.mktemp("eval"), config=StoreConfig(compact_every=0))
    t = store.table("rows", EVAL_SCHEMA)
    rows = _random_rows(80, seed=7)
    t.upsert("ns", [{"id": f"r{j}", **r} for j, r in enumerate(rows)])
    t.upsert("other", [{"id": f"r{j}", **r} for j, r in enumerate(rows)])
    yield t, t.scan_arrow("ns")
    store.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(f=_FILTER)
def test_mask_agrees_with_lancedb(eval_table: tuple[Table, pa.Table], f: Filter) -> None:
    t, data = eval_table
    sql = {r["id"] for r in t.scan("ns", f, columns=["id"])}
    mask = to_mask(f, data)
    mem = {i for i, m in zip(data.column("id").to_pylist(), mask, strict=True) if m}
    assert sql == mem, to_where("ns", f, t.schema)
