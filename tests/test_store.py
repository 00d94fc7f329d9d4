"""mindcore.store: opening stores, tables and schemas, reads and writes, units of work, embedders."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mindcore
from mindcore.store import (
    ALL_NAMESPACES,
    EmbedderMismatchError,
    SchemaError,
    Store,
    StoreConfig,
    Table,
    col,
    new_id,
)


class FakeEmbedder:
    """Deterministic embedder: hashed character trigrams, L2-normalised."""

    def __init__(self, dim: int = 16, model_id: str = "fake-trigram") -> None:
        self.dim = dim
        self.model_id = model_id

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            s = f"  {t.lower()}  "
            for j in range(len(s) - 2):
                out[i, hash(s[j : j + 3]) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = mindcore.open(tmp_path / "db", config=StoreConfig(compact_in_background=False))
    yield s
    s.close()


@pytest.fixture
def notes(store: Store) -> Table:
    return store.table("notes", {"text": pa.string(), "n": pa.int64(), "score": pa.float32()})


# -- opening ---------------------------------------------------------------------------------------


def test_open_default_uses_mindcore_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINDCORE_HOME", str(tmp_path / "home"))
    s = mindcore.open()
    assert s.uri == str(tmp_path / "home") and s.kind == "local"
    s.table("t").upsert("ns", [{"id": "a"}])
    assert (tmp_path / "home" / "t.lance").is_dir()


def test_open_default_without_env_is_dot_mindcore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINDCORE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert mindcore.open().uri == str(tmp_path / ".mindcore")
    assert mindcore.open(f"file://{tmp_path}/x").uri == str(tmp_path / "x")


def test_memory_stores_are_shared_by_name_and_separate_otherwise() -> None:
    a, b = mindcore.open("memory://shared-test"), mindcore.open("memory://shared-test")
    assert a is b
    a.table("t").upsert("ns", [{"id": "x"}])
    assert b.table("t").count("ns") == 1
    fresh1, fresh2 = mindcore.open("memory://"), mindcore.open("memory://")
    fresh1.table("t").upsert("ns", [{"id": "x"}])
    assert fresh2.table("t").count("ns") == 0
    assert fresh1.kind == "memory"


def test_import_mindcore_does_not_import_lancedb() -> None:
    code = "import sys, mindcore; mindcore.open; print('lancedb' in sys.modules, 'mindcore.store' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    # Touching the name imports the store package, but lancedb still waits for the first open().
    assert out.stdout.split() == ["False", "True"]


def test_bad_uri_and_table_names(store: Store) -> None:
    with pytest.raises(ValueError, match="uri"):
        mindcore.open("")
    for bad in ["", "a/b", "../x", "_mindcore_meta", "x" * 200, "a b", "é"]:
        with pytest.raises(ValueError, match="table name"):
            store.table(bad)


# -- schemas ---------------------------------------------------------------------------------------


def test_standard_columns_and_types(store: Store) -> None:
    t = store.table("docs", {"text": pa.string()}, vectors=True, embedder=FakeEmbedder(8))
    s = t.schema
    assert s.names == ["id", "namespace", "created_at", "updated_at", "tags", "metadata", "vector", "text"]
    assert s.field("id").type == pa.string() and not s.field("id").nullable
    assert s.field("namespace").type == pa.string() and not s.field("namespace").nullable
    assert s.field("created_at").type == pa.int64() and s.field("updated_at").type == pa.int64()
    assert s.field("tags").type == pa.list_(pa.string())
    assert s.field("vector").type == pa.list_(pa.float32(), 8)
    assert t.dim == 8
    idx = t._tbl.list_indices()
    assert any(list(ix.columns) == ["namespace"] and ix.index_type == "BTree" for ix in idx)


def test_open_table_created_with_an_older_schema(tmp_path: Path) -> None:
    # A table as an older mindcore wrote it: fewer standard columns, no 'metadata', no 'importance'.
    old = pa.schema([
        pa.field("id", pa.string(), nullable=False),
        pa.field("namespace", pa.string(), nullable=False),
        pa.field("created_at", pa.int64()),
        pa.field("text", pa.string()),
        pa.field("legacy", pa.string()),
    ])
    db = lancedb.connect(str(tmp_path))
    db.create_table("facts", data=pa.Table.from_pylist(
        [{"id": "f1", "namespace": "u", "created_at": 5, "text": "old fact", "legacy": "keep me"}], schema=old))
    store = mindcore.open(tmp_path)
    t = store.table("facts", {"text": pa.string(), "importance": pa.float32()})
    names = t.schema.names
    for c in ["updated_at", "tags", "metadata", "importance", "legacy"]:
        assert c in names
    row = t.get_one("u", "f1")
    assert row is not None
    assert row["text"] == "old fact" and row["legacy"] == "keep me"
    assert row["importance"] is None and row["metadata"] is None and row["updated_at"] is None
    t.upsert("u", [{"id": "f2", "text": "new", "importance": 0.9}])
    assert t.count("u") == 2
    assert t.count("u", col("importance").gt(0.5)) == 1
    # Reopening with the older column set keeps the newer columns.
    again = mindcore.open(tmp_path).table("facts", {"text": pa.string()})
    assert "importance" in again.schema.names


def test_schema_conflicts_are_errors(store: Store) -> None:
    store.table("k", {"n": pa.int64()})
    with pytest.raises(SchemaError, match="'n' is stored as int64 but string"):
        store.table("k", {"n": pa.string()})
    with pytest.raises(SchemaError, match="nullable"):
        store.table("k2", [pa.field("x", pa.string(), nullable=False)])
    with pytest.raises(SchemaError, match="standard column"):
        store.table("k3", {"tags": pa.string()})
    with pytest.raises(SchemaError, match="names must match"):
        store.table("k4", {"bad name": pa.string()})


# -- writes and reads ------------------------------------------------------------------------------


def test_upsert_get_scan_count_roundtrip(notes: Table) -> None:
    r = notes.upsert("u1", [
        {"id": "a", "text": "alpha", "n": 1, "tags": ["x", "y"], "metadata": {"k": [1, "two"], "u": "é"}},
        {"id": "b", "text": "beta", "n": 2, "created_at": 100, "updated_at": 200},
    ])
    assert (r.inserted, r.updated, r.deleted) == (2, 0, 0)
    a, b = notes.get("u1", ["a", "b"])
    assert a["metadata"] == {"k": [1, "two"], "u": "é"} and a["tags"] == ["x", "y"]
    assert b["tags"] == [] and b["metadata"] is None and (b["created_at"], b["updated_at"]) == (100, 200)
    assert isinstance(a["created_at"], int) and abs(a["created_at"] - mindcore.store.now_ms()) < 60_000
    assert [r["id"] for r in notes.get("u1", ["b", "zz", "a", "b"])] == ["b", "a"]
    assert notes.get("u2", ["a"]) == [] and notes.get_one("u1", "zz") is None
    r = notes.upsert("u1", [{"id": "a", "text": "ALPHA"}])
    assert (r.inserted, r.updated) == (0, 1)
    a2 = notes.get_one("u1", "a")
    assert a2 is not None and a2["text"] == "ALPHA" and a2["n"] is None  # whole-row replace
    assert notes.count("u1") == 2 and notes.count(ALL_NAMESPACES) == 2
    assert notes.count("u1", col("text").starts_with("AL")) == 1
    assert notes.get("u1", ["a"], columns=["text"]) == [{"text": "ALPHA"}]


def test_same_id_in_two_namespaces_is_two_rows(notes: Table) -> None:
    notes.upsert("u1", [{"id": "same", "text": "one"}])
    notes.upsert("u2", [{"id": "same", "text": "two"}])
    notes.upsert("u1", [{"id": "same", "text": "one again"}])
    assert notes.get_one("u2", "same")["text"] == "two"  # type: ignore[index]
    assert notes.get_one("u1", "same")["text"] == "one again"  # type: ignore[index]
    notes.delete("u1", ids=["same"])
    assert notes.count("u2") == 1 and notes.count("u1") == 0
    assert notes.namespaces() == ["u2"]


def test_duplicate_ids_in_one_batch_last_wins(notes: Table) -> None:
    notes.upsert("u", [{"id": "a", "text": "1"}, {"id": "b", "text": "x"}, {"id": "a", "text": "2"}])
    assert notes.count("u") == 2 and notes.get_one("u", "a")["text"] == "2"  # type: ignore[index]


def test_scan_order_limit_columns(notes: Table) -> None:
    notes.upsert("u", [{"id": f"r{i}", "n": (i * 7) % 10, "text": str(i)} for i in range(10)])
    got = notes.scan("u", col("n").ge(3), order_by="n", descending=True, limit=3, columns=["id", "n"])
    assert got == [{"id": "r7", "n": 9}, {"id": "r4", "n": 8}, {"id": "r1", "n": 7}]
    assert len(notes.scan("u", limit=4)) == 4
    tbl = notes.scan_arrow("u", columns=["n"])
    assert tbl.column_names == ["n"] and tbl.num_rows == 10
    with pytest.raises(ValueError, match="unknown columns"):
        notes.scan("u", columns=["nope"])
    with pytest.raises(ValueError, match="limit"):
        notes.scan("u", limit=-1)
    # sorting by a column without selecting id (the tie-breaker) still works
    assert notes.scan("u", order_by="n", descending=True, limit=2, columns=["text"]) == [{"text": "7"}, {"text": "4"}]


def test_append_assigns_fresh_ids_in_one_commit(notes: Table) -> None:
    v0 = notes.version
    r = notes.append("u", [{"text": "one", "n": 1}, {"text": "two", "n": 2}])
    assert r.inserted == 2 and r.version == v0 + 1
    rows = notes.scan("u", order_by="n")
    assert [x["text"] for x in rows] == ["one", "two"] and len({x["id"] for x in rows}) == 2
    with pytest.raises(ValueError, match="fresh ids"):
        notes.append("u", [{"id": "r1", "text": "x"}])
    with pytest.raises(TypeError, match="dicts"):
        notes.append("u", ["not a row"])  # type: ignore[list-item]
    assert notes.append("u", []).version == r.version  # nothing to write: no commit

    # a function runs under the lock after the table is brought up to date: read-then-append
    def successor() -> list[dict[str, object]]:
        last = notes.scan("u", order_by="n", descending=True, limit=1)[0]
        return [{"text": "three", "n": last["n"] + 1}]

    notes.append("u", successor)
    assert [x["n"] for x in notes.scan("u", order_by="n")] == [1, 2, 3]
    assert notes.count("other") == 0


def test_append_takes_an_arrow_table(notes: Table) -> None:
    """Rows given as an Arrow table are checked column by column and get fresh ids, as dicts do."""
    v0 = notes.version
    r = notes.append("u", pa.table({"text": ["one", "two"], "n": [1, 2]}))
    assert r.inserted == 2 and r.version == v0 + 1
    rows = notes.scan("u", order_by="n")
    assert [(x["text"], x["n"], x["tags"], x["metadata"]) for x in rows] == [("one", 1, [], None), ("two", 2, [], None)]
    assert len({x["id"] for x in rows}) == 2 and all(x["created_at"] == x["updated_at"] > 0 for x in rows)
    with pytest.raises(ValueError, match="fresh ids"):
        notes.append("u", pa.table({"id": ["r1"], "text": ["x"]}))
    with pytest.raises(ValueError, match="unknown columns"):
        notes.append("u", pa.table({"nope": ["x"]}))
    assert notes.append("u", pa.table({"text": pa.array([], pa.string())})).version == r.version  # no commit
    notes.append("u", lambda: pa.table({"text": ["three"], "n": [3]}))
    assert [x["n"] for x in notes.scan("u", order_by="n")] == [1, 2, 3]


def test_modify_reads_and_writes_one_row(notes: Table) -> None:
    def bump(row: dict[str, object] | None) -> dict[str, object]:
        return {"text": "counter", "n": 1 if row is None else int(row["n"]) + 1}  # type: ignore[call-overload]

    notes.modify("u", "c", bump)
    notes.modify("u", "c", bump)
    assert notes.get_one("u", "c")["n"] == 2  # type: ignore[index]
    with pytest.raises(RuntimeError, match="boom"):
        notes.modify("u", "c", lambda row: (_ for _ in ()).throw(RuntimeError("boom")))
    assert notes.get_one("u", "c")["n"] == 2  # type: ignore[index]
    notes.modify("u", "c", lambda row: None)  # None deletes
    assert notes.get_one("u", "c") is None


def test_update_and_delete(notes: Table) -> None:
    notes.upsert("u", [{"id": "a", "text": "a", "created_at": 1, "updated_at": 1}, {"id": "b", "text": "b"}])
    r = notes.update("u", ["a", "missing"], {"n": 5})
    assert r.updated == 1 and r.inserted == 0
    a = notes.get_one("u", "a")
    assert a is not None and a["n"] == 5 and a["text"] == "a" and a["created_at"] == 1 and a["updated_at"] > 1
    notes.update("u", ["a"], {"updated_at": 7})
    assert notes.get_one("u", "a")["updated_at"] == 7  # type: ignore[index]
    with pytest.raises(ValueError, match="cannot be updated"):
        notes.update("u", ["a"], {"id": "z"})
    with pytest.raises(TypeError, match="'n'"):
        notes.update("u", ["a"], {"n": "five"})
    assert notes.delete("u", where=col("n").eq(5)).deleted == 1
    assert [r["id"] for r in notes.scan("u")] == ["b"]
    with pytest.raises(ValueError, match="ids= and/or where="):
        notes.delete("u")
    notes.clear("u")
    assert notes.count("u") == 0


def test_insert_new_keeps_existing_rows(notes: Table) -> None:
    notes.upsert("u", [{"id": "a", "text": "first"}])
    r = notes.insert_new("u", [{"id": "a", "text": "second"}, {"id": "b", "text": "b"}])
    assert r.inserted == 1
    assert notes.get_one("u", "a")["text"] == "first"  # type: ignore[index]


def test_row_validation_errors_name_the_problem(store: Store, notes: Table) -> None:
    with pytest.raises(ValueError, match=r"rows\[0\]: 'id' must be a non-empty str"):
        notes.upsert("u", [{"text": "no id"}])
    with pytest.raises(ValueError, match="unknown columns \\['nope'\\]"):
        notes.upsert("u", [{"id": "a", "nope": 1}])
    with pytest.raises(ValueError, match="differs from the namespace"):
        notes.upsert("u", [{"id": "a", "namespace": "other"}])
    with pytest.raises(TypeError, match="'tags' must be a list of str"):
        notes.upsert("u", [{"id": "a", "tags": "x"}])
    with pytest.raises(TypeError, match="every tag must be a str"):
        notes.upsert("u", [{"id": "a", "tags": ["x", 1]}])
    with pytest.raises(TypeError, match="unix milliseconds"):
        notes.upsert("u", [{"id": "a", "created_at": 1.5}])
    with pytest.raises(TypeError, match="JSON"):
        notes.upsert("u", [{"id": "a", "metadata": {"x": object()}}])
    with pytest.raises(TypeError, match="single dict"):
        notes.upsert("u", {"id": "a"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace"):
        notes.upsert("", [{"id": "a"}])
    vt = store.table("v", vectors=True, embedder=FakeEmbedder(4))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        vt.upsert("u", [{"id": "a", "vector": [1.0, 2.0]}])
    with pytest.raises(ValueError, match="NaN"):
        vt.upsert("u", [{"id": "a", "vector": [1.0, np.nan, 0, 0]}])
    assert notes.count(ALL_NAMESPACES) == 0 and vt.count(ALL_NAMESPACES) == 0


def test_arrow_input_and_null_vectors(store: Store) -> None:
    t = store.table("v", {"text": pa.string()}, vectors=True, embedder=FakeEmbedder(4))
    t.upsert("u", pa.table({"id": ["a", "b"], "text": ["x", "y"]}))
    t.upsert("u", [{"id": "c", "vector": np.array([1, 0, 0, 0], dtype=np.float32)}])
    rows = {r["id"]: r for r in t.scan("u")}
    assert rows["a"]["vector"] is None and rows["a"]["tags"] == []
    np.testing.assert_array_equal(rows["c"]["vector"], [1, 0, 0, 0])
    ids, mat = t.vectors("u")
    assert ids == ["c"] and mat.shape == (1, 4) and not mat.flags.writeable


# -- units of work ---------------------------------------------------------------------------------


def test_unit_of_work_is_one_version(notes: Table) -> None:
    notes.upsert("u", [{"id": f"old{i}", "n": i} for i in range(5)])
    v0 = notes.version
    with notes.unit_of_work("u") as uow:
        uow.upsert([{"id": "new1", "n": 10}, {"id": "new2", "n": 11}])
        uow.update(["old0"], {"text": "touched"})
        uow.delete(ids=["old1"])
        uow.delete(where=col("n").ge(3))
        assert len(uow) == 4
    assert notes.version == v0 + 1
    assert uow.result is not None and uow.result.version == v0 + 1
    # Operations apply in order: the filter delete also removes new1/new2 (n >= 3), upserted before it.
    assert sorted(r["id"] for r in notes.scan("u")) == ["old0", "old2"]
    assert notes.get_one("u", "old0")["text"] == "touched"  # type: ignore[index]


def test_unit_of_work_discarded_on_exception(notes: Table) -> None:
    notes.upsert("u", [{"id": "a"}])
    v0 = notes.version
    with pytest.raises(RuntimeError, match="boom"), notes.unit_of_work("u") as uow:
        uow.upsert([{"id": "b"}])
        uow.delete(ids=["a"])
        raise RuntimeError("boom")
    assert notes.version == v0 and [r["id"] for r in notes.scan("u")] == ["a"]
    with pytest.raises(RuntimeError, match="already"):
        uow.upsert([{"id": "c"}])
    empty = notes.unit_of_work("u")
    assert empty.commit().version == v0  # nothing pending: no new version


# A reference model of a unit of work: apply the operations one by one to a dict.
_IDS = st.sampled_from(["a", "b", "c", "d", "e"])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), st.lists(st.tuples(_IDS, st.integers(0, 9)), min_size=1, max_size=3)),
        st.tuples(st.just("update"), st.lists(_IDS, min_size=1, max_size=3), st.integers(0, 9)),
        st.tuples(st.just("delete_ids"), st.lists(_IDS, min_size=1, max_size=2)),
        st.tuples(st.just("delete_ge"), st.integers(0, 9)),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(initial=st.dictionaries(_IDS, st.integers(0, 9), max_size=5), ops=_OPS)
def test_unit_of_work_matches_sequential_reference(store: Store, initial: dict[str, int], ops: list[Any]) -> None:
    t = store.table("uow_ref", {"n": pa.int64()})
    t.clear("ns")
    t.upsert("other", [{"id": "a", "n": 1}])
    if initial:
        t.upsert("ns", [{"id": k, "n": v} for k, v in initial.items()])
    model = dict(initial)
    v0 = t.version
    with t.unit_of_work("ns") as uow:
        for op in ops:
            if op[0] == "upsert":
                uow.upsert([{"id": i, "n": n} for i, n in op[1]])
                for i, n in op[1]:
                    model[i] = n
            elif op[0] == "update":
                uow.update(op[1], {"n": op[2]})
                for i in op[1]:
                    if i in model:
                        model[i] = op[2]
            elif op[0] == "delete_ids":
                uow.delete(ids=op[1])
                for i in op[1]:
                    model.pop(i, None)
            else:
                uow.delete(where=col("n").ge(op[1]))
                model = {i: n for i, n in model.items() if n < op[1]}
    assert uow.result is not None and uow.result.version in (v0, v0 + 1)  # one commit at most
    assert {r["id"]: r["n"] for r in t.scan("ns")} == model
    assert t.count("other") == 1


async def _async_roundtrip(t: Table) -> list[str]:
    await t.aupsert("u", [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}])
    async with t.unit_of_work("u") as uow:
        uow.delete(ids=["b"])
    await t.aupdate("u", ["a"], {"n": 3})
    assert await t.acount("u") == 1
    assert await t.ahas_rows("u") and not await t.ahas_rows("nobody")
    assert (await t.aget_one("u", "a"))["n"] == 3  # type: ignore[index]
    rows = await t.ascan("u", col("n").eq(3))
    assert await t.arefresh() == t.version
    await t.acompact()
    return [r["id"] for r in rows]


def test_async_twins(notes: Table) -> None:
    assert asyncio.run(_async_roundtrip(notes)) == ["a"]


# -- embedders -------------------------------------------------------------------------------------


def test_store_records_its_embedder(tmp_path: Path) -> None:
    s = mindcore.open(tmp_path, embedder=FakeEmbedder(16, "model-a"))
    assert s.embedding is not None and (s.embedding.model_id, s.embedding.dim) == ("model-a", 16)
    mindcore.open(tmp_path, embedder=FakeEmbedder(16, "model-a"))  # same model: fine
    mindcore.open(tmp_path)  # no embedder: fine
    with pytest.raises(EmbedderMismatchError, match=r"'model-a' \(dim 16\).*'model-b' \(dim 16\)"):
        mindcore.open(tmp_path, embedder=FakeEmbedder(16, "model-b"))
    with pytest.raises(EmbedderMismatchError, match=r"'model-a' \(dim 16\).*'model-a' \(dim 32\)"):
        mindcore.open(tmp_path, embedder=FakeEmbedder(32, "model-a"))


def test_table_records_its_embedder(tmp_path: Path) -> None:
    s = mindcore.open(tmp_path)
    t = s.table("docs", vectors=True, embedder=FakeEmbedder(8, "m1"))
    assert t.embedder is not None and t.dim == 8
    with pytest.raises(EmbedderMismatchError, match=r"table 'docs'.*'m1' \(dim 8\).*'m2' \(dim 8\)"):
        mindcore.open(tmp_path).table("docs", vectors=True, embedder=FakeEmbedder(8, "m2"))
    with pytest.raises(EmbedderMismatchError, match=r"'m1' \(dim 8\).*'m1' \(dim 4\)"):
        mindcore.open(tmp_path).table("docs", vectors=True, embedder=FakeEmbedder(4, "m1"))
    # Opened through a store bound to another model: the table stays unbound, no text search.
    other = mindcore.open(tmp_path / "other", embedder=FakeEmbedder(8, "m2"))
    assert other.table("t", vectors=True).embedder is not None
    with pytest.raises(ValueError, match="vectors=True needs an embedder"):
        mindcore.open("memory://").table("x", vectors=True)


def test_adding_vectors_to_an_existing_table(store: Store) -> None:
    t = store.table("grow", {"text": pa.string()})
    t.upsert("u", [{"id": "a", "text": "no vector yet"}])
    t2 = store.table("grow", {"text": pa.string()}, vectors=True, embedder=FakeEmbedder(4))
    assert t2 is t and t.dim == 4
    t.upsert("u", [{"id": "b", "vector": [0, 1, 0, 0]}])
    assert t.vectors("u")[0] == ["b"]


# -- maintenance -----------------------------------------------------------------------------------


def _fragments(t: Table) -> int:
    return int(t._tbl.stats()["fragment_stats"]["num_fragments"])


def test_compaction_runs_every_n_writes(tmp_path: Path) -> None:
    cfg = StoreConfig(compact_every=10, compact_in_background=False)
    t = mindcore.open(tmp_path, config=cfg).table("t", {"n": pa.int64()})
    for i in range(35):
        t.upsert("u", [{"id": f"r{i}", "n": i}])
    assert _fragments(t) <= 10, _fragments(t)  # three compactions ran (35 without them)
    t.compact()
    assert _fragments(t) <= 3 and t.count("u") == 35
    untouched = mindcore.open(tmp_path / "b", config=StoreConfig(compact_every=0)).table("t", {"n": pa.int64()})
    for i in range(12):
        untouched.upsert("u", [{"id": f"r{i}", "n": i}])
    assert _fragments(untouched) == 12


def test_background_compaction(tmp_path: Path) -> None:
    s = mindcore.open(tmp_path, config=StoreConfig(compact_every=5))
    t = s.table("t", {"n": pa.int64()})
    for i in range(20):
        t.upsert("u", [{"id": f"r{i}", "n": i}])
    s.wait_for_maintenance(timeout=60)
    assert _fragments(t) <= 10 and t.count("u") == 20  # 20 without compaction
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        s.table("t")


def test_cleanup_keeps_versions_for_the_grace_period(tmp_path: Path) -> None:
    from datetime import timedelta

    t = mindcore.open(tmp_path, config=StoreConfig(compact_every=0)).table("t")
    first = t.upsert("u", [{"id": "r0"}]).version
    for i in range(1, 5):
        t.upsert("u", [{"id": f"r{i}"}])
    before = len(t._tbl.list_versions())
    t.compact()  # default grace: minutes, so every version stays readable
    assert len(t._tbl.list_versions()) >= before
    t._tbl.checkout(first)
    assert t._tbl.count_rows() == 1
    t._tbl.checkout_latest()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # LanceDB warns that grace 0 breaks other readers
        t.compact(cleanup_grace=timedelta(0))
    assert len(t._tbl.list_versions()) == 1 and t.count("u") == 5


# -- other processes -------------------------------------------------------------------------------


def test_other_processes_writes_are_visible(tmp_path: Path) -> None:
    t = mindcore.open(tmp_path).table("t", {"n": pa.int64()})
    t.upsert("u", [{"id": "mine"}])
    code = (
        "import mindcore, pyarrow as pa, sys;"
        f"t = mindcore.open({str(tmp_path)!r}).table('t', {{'n': pa.int64(), 'extra': pa.string()}});"
        "t.upsert('u', [{'id': 'theirs', 'extra': 'x'}])"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert sorted(r["id"] for r in t.scan("u")) == ["mine", "theirs"]
    assert t.count("u", col("extra").eq("x")) == 1  # a column another process added


def test_new_ids_are_unique_and_ordered() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == 2000 and all(len(i) == 26 for i in ids)
    assert ids[0][:10] <= ids[-1][:10]


def test_metadata_is_json(notes: Table) -> None:
    notes.upsert("u", [{"id": "a", "metadata": [1, {"b": None}]}])
    raw = notes.scan_arrow("u", columns=["metadata"]).column("metadata")[0].as_py()
    assert json.loads(raw) == [1, {"b": None}]
    assert os.fspath(notes.store.uri)


def test_arrow_input_is_validated_like_dicts(store: Store) -> None:
    t = store.table("arrow", {"n": pa.int64()}, vectors=True, embedder=FakeEmbedder(2))
    vec = pa.FixedSizeListArray.from_arrays(pa.array([1, 0, 0, 1, 1, 1], pa.float32()), 2)
    data = pa.table({"id": ["a", "b", "a"], "n": [1, 2, 3], "vector": vec, "tags": [["x"], None, []]})
    r = t.upsert("u", data)
    assert r.inserted == 2
    rows = {x["id"]: x for x in t.scan("u")}
    assert rows["a"]["n"] == 3 and rows["b"]["tags"] == [] and rows["a"]["created_at"] > 0
    np.testing.assert_array_equal(rows["a"]["vector"], [1, 1])
    with pytest.raises(ValueError, match="non-empty"):
        t.upsert("u", pa.table({"id": ["a", ""]}))
    with pytest.raises(ValueError, match="unknown columns"):
        t.upsert("u", pa.table({"id": ["a"], "zzz": [1]}))
    with pytest.raises(ValueError, match="namespace"):
        t.upsert("u", pa.table({"id": ["a"], "namespace": ["v"]}))
    with pytest.raises(TypeError, match="'n'"):
        t.upsert("u", pa.table({"id": ["a"], "n": ["x"]}))
    bad = pa.FixedSizeListArray.from_arrays(pa.array([1, float("nan")], pa.float32()), 2)
    with pytest.raises(ValueError, match="NaN"):
        t.upsert("u", pa.table({"id": ["a"], "vector": bad}))
    with pytest.raises(TypeError, match="'vector'"):
        t.upsert("u", pa.table({"id": ["a"], "vector": pa.array([[1.0, 2.0, 3.0]])}))
    with pytest.raises(TypeError, match="JSON"):
        t.upsert("u", pa.table({"id": ["a"], "metadata": ["{not json"]}))
    assert t.count("u") == 2


def _write_elsewhere(path: Path, rows: str) -> None:
    code = f"import mindcore; mindcore.open({str(path)!r}).table('t').upsert('u', {rows})"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("v2_paths", [True, False])
def test_version_probe_sees_other_writers(tmp_path: Path, v2_paths: bool) -> None:
    schema = mindcore.store.schema.build_schema(None, None)
    opts = {"new_table_enable_v2_manifest_paths": str(v2_paths).lower()}
    lancedb.connect(str(tmp_path), storage_options=opts).create_table("t", schema=schema)
    t = mindcore.open(tmp_path).table("t")
    assert t._versions._v2 is v2_paths  # the manifest layout was recognised
    t.upsert("u", [{"id": "a"}])
    v = t.version
    _write_elsewhere(tmp_path, "[{'id': 'b'}]")
    assert t.version == v + 1 and t.count("u") == 2
    _write_elsewhere(tmp_path, "[{'id': 'c'}]")
    _write_elsewhere(tmp_path, "[{'id': 'd'}]")
    assert [r["id"] for r in t.scan("u", order_by="id")] == ["a", "b", "c", "d"]


def test_version_tracking_without_a_recognised_layout(tmp_path: Path) -> None:
    t = mindcore.open(tmp_path).table("t")
    t._versions._v2 = None  # as if LanceDB changed its file layout: fall back to its own check
    t.upsert("u", [{"id": "a"}])
    _write_elsewhere(tmp_path, "[{'id': 'b'}]")
    assert t.count("u") == 2


# -- docstring examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["store", "table", "write", "ids", "scoring"])
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    mod = importlib.import_module(f"mindcore.store.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_stats_count_rows_per_namespace_versions_and_sizes_without_writing(tmp_path: Path) -> None:
    from datetime import timedelta

    from mindcore.embed import HashEmbedder
    from mindcore.store import StoreError

    s = mindcore.open(tmp_path / "st", embedder=HashEmbedder())
    t = s.table("notes", {"text": pa.string()}, vectors=True)
    for i in range(3):
        t.upsert("a" if i < 2 else "b", [{"id": str(i), "text": "x", "vector": HashEmbedder().embed(["x"])[0]}])
    reader = mindcore.open(tmp_path / "st", read_only=True)
    (stats,) = reader.stats().tables
    assert (stats.name, stats.rows, stats.namespaces, stats.dim) == ("notes", 3, {"a": 2, "b": 1}, 384)
    assert stats.version == t.version and stats.versions >= 3 and stats.fragments == 3
    assert stats.embedding == s.embedding and 0 < stats.data_bytes <= stats.disk_bytes
    assert reader.open_table("notes").version == t.version
    with pytest.raises(StoreError, match="no table 'nope'"):
        reader.open_table("nope")
    with warnings.catch_warnings():  # LanceDB warns that a zero grace drops every old version: that is the point
        warnings.simplefilter("ignore", UserWarning)
        s.compact(cleanup_grace=timedelta(0))
    (after,) = reader.stats().tables
    assert after.fragments == 1 and after.versions < stats.versions and after.rows == 3
