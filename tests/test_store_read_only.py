"""Read-only stores (``mindcore.open(path, read_only=True)``) and ``Store.check_writable``.

A read-only store reads everything and writes nothing (not even a lock file); every write path
raises ``StoreNotWritableError`` naming the store. ``check_writable`` finds out, when a
capability opens, that a folder cannot be written, instead of a later write failing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError, MindcoreError, StoreError, StoreNotWritableError
from mindcore.store import Store, StoreConfig, Table, col

EMB = HashEmbedder(dim=32)
COLUMNS = {"text": pa.string(), "n": pa.int64()}


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            st = os.stat(os.path.join(dirpath, name))
            out[os.path.relpath(os.path.join(dirpath, name), root)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A store with one vector table holding two namespaces, written by a normal open."""
    path = tmp_path / "db"
    store = mindcore.open(path, embedder=EMB)
    t = store.table("notes", COLUMNS, vectors=True)
    texts = ["green tea in the morning", "a blue volvo", "two cats called miso and tofu"]
    vectors = EMB.embed(texts)
    t.upsert("u1", [{"id": f"n{i}", "text": s, "n": i, "vector": vectors[i]} for i, s in enumerate(texts)])
    t.upsert("u2", [{"id": "x", "text": "other user", "n": 9}])
    store.table("plain", {"n": pa.int64()}).upsert("ns", [{"id": "a", "n": 1}])
    store.close()
    return path


def test_reads_work_and_write_nothing(written: Path) -> None:
    before = _files(written)
    store = mindcore.open(written, read_only=True, embedder=EMB)
    assert store.read_only and "read_only=True" in repr(store)
    assert store.table_names() == ["notes", "plain"]
    assert store.embedding is not None and store.embedding.dim == 32
    t = store.table("notes", COLUMNS, vectors=True)
    assert t.count("u1") == 3 and t.namespaces() == ["u1", "u2"]
    assert t.get_one("u1", "n1")["text"] == "a blue volvo"
    assert [r["n"] for r in t.scan("u1", col("n").ge(1), order_by="n")] == [1, 2]
    assert t.search("u1", "cats miso tofu", k=1)[0].id == "n2"
    ids, matrix = t.vectors("u1")
    assert len(ids) == 3 and matrix.shape == (3, 32)
    assert store.table("plain").get_one("ns", "a")["n"] == 1
    store.close()
    assert _files(written) == before  # not a byte written, not even a lock file


def test_reads_see_other_writers(written: Path) -> None:
    reader = mindcore.open(written, read_only=True).table("plain")
    assert reader.count("ns") == 1
    mindcore.open(written).table("plain", {"n": pa.int64()}).upsert("ns", [{"id": "b", "n": 2}])
    assert reader.count("ns") == 2


def _writes(t: Table, store: Store) -> dict[str, Callable[[], Any]]:
    vec = EMB.embed(["x"])[0]
    return {
        "upsert": lambda: t.upsert("u1", [{"id": "new", "text": "x", "vector": vec}]),
        "update": lambda: t.update("u1", ["n0"], {"n": 5}),
        "delete": lambda: t.delete("u1", ids=["n0"]),
        "delete where": lambda: t.delete("u1", where=col("n").eq(0)),
        "clear": lambda: t.clear("u1"),
        "append": lambda: t.append("u1", [{"text": "x"}]),
        "modify": lambda: t.modify("u1", "n0", lambda row: {"n": 7}),
        "insert_new": lambda: t.insert_new("u1", [{"id": "new2", "text": "x"}]),
        "unit_of_work": lambda: t.unit_of_work("u1"),
        "table compact": t.compact,
        "create_vector_index": t.create_vector_index,
        "async upsert": lambda: asyncio.run(t.aupsert("u1", [{"id": "new3"}])),
        "store compact": store.compact,
        "drop_table": lambda: store.drop_table("plain"),
        "create a table": lambda: store.table("brand_new", {"n": pa.int64()}),
        "add a column": lambda: store.table("plain", {"n": pa.int64(), "added": pa.string()}),
        "hold a lock": lambda: store.lock("job").hold(timeout=1).__enter__(),
        "check_writable": store.check_writable,
    }


def test_every_write_path_raises_naming_the_store(written: Path) -> None:
    before = _files(written)
    store = mindcore.open(written, read_only=True, embedder=EMB)
    t = store.table("notes", COLUMNS, vectors=True)
    for what, write in _writes(t, store).items():
        with pytest.raises(StoreNotWritableError, match=f"store {written}.*read_only=True") as info:
            write()
        assert isinstance(info.value, MindcoreError | PermissionError), what
    assert t.count("u1") == 3 and store.table_names() == ["notes", "plain"]
    assert _files(written) == before


def test_a_unit_of_work_cannot_even_start(written: Path) -> None:
    t = mindcore.open(written, read_only=True).table("plain")
    with pytest.raises(StoreNotWritableError, match="write to table 'plain'"), t.unit_of_work("ns") as uow:
        uow.upsert([{"id": "z"}])
    assert t.count("ns") == 1


def test_aopen_read_only(written: Path) -> None:
    store = asyncio.run(mindcore.aopen(written, read_only=True))
    assert store.read_only
    with pytest.raises(StoreNotWritableError):
        store.table("plain").upsert("ns", [{"id": "z"}])


def test_read_only_never_creates_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store at"):
        mindcore.open(tmp_path / "missing", read_only=True)
    assert not (tmp_path / "missing").exists()


def test_read_only_needs_a_folder_or_object_storage() -> None:
    with pytest.raises(InvalidInputError, match="memory://"):
        mindcore.open("memory://ro", read_only=True)
    with pytest.raises(InvalidInputError, match="read_only"):
        mindcore.open("memory://", read_only="yes")  # type: ignore[arg-type]


def test_a_folder_without_store_metadata_opens_read_only(tmp_path: Path) -> None:
    import lancedb

    from mindcore.store.schema import build_schema

    lancedb.connect(str(tmp_path)).create_table("t", schema=build_schema(None, None))
    store = mindcore.open(tmp_path, read_only=True, embedder=EMB)  # no _mindcore_meta table: nothing recorded
    assert store.embedding is None and store.embedder is EMB
    assert store.table("t").count("ns") == 0


# -- check_writable --------------------------------------------------------------------------------


def test_check_writable_passes_where_writes_would(tmp_path: Path) -> None:
    mindcore.open("memory://").check_writable()
    store = mindcore.open(tmp_path / "db")
    store.check_writable()
    # The probes are removed again.
    assert not [f for f in os.listdir(tmp_path / "db" / "_mindcore_locks") if "probe" in f]
    assert not [f for f in os.listdir(tmp_path / "db") if "probe" in f]


def test_check_writable_finds_an_unwritable_folder(tmp_path: Path) -> None:
    # The store's folder is replaced by a file: no file can be created in it, whoever we are
    # (root included), as on a read-only file system.
    path = tmp_path / "db"
    store = mindcore.open(path)
    store.table("t").upsert("ns", [{"id": "a"}])
    path.rename(tmp_path / "moved")
    path.write_text("not a folder")
    with pytest.raises(StoreNotWritableError, match=f"store {path} is not writable by this process") as info:
        store.check_writable()
    assert isinstance(info.value, PermissionError) and isinstance(info.value.__cause__, OSError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions: chmod cannot make a folder unwritable")
def test_check_writable_finds_a_folder_without_write_permission(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = mindcore.open(path)
    store.table("t").upsert("ns", [{"id": "a"}])
    os.chmod(path, 0o555)
    try:
        with pytest.raises(StoreNotWritableError, match="not writable"):
            store.check_writable()
        assert mindcore.open(path, read_only=True).table("t").count("ns") == 1
    finally:
        os.chmod(path, 0o755)


def test_open_says_when_a_folder_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreNotWritableError, match="cannot create the store folder"):
        mindcore.open(tmp_path / "file" / "db")


def test_locks_of_a_read_only_store_refuse_to_be_held(written: Path) -> None:
    store = mindcore.open(written, read_only=True, config=StoreConfig(lock_timeout=0.1))
    lock = store.lock("job")
    assert lock.name == "job"
    with pytest.raises(StoreNotWritableError, match="cannot hold lock 'job'"):
        lock.hold()


def test_search_of_a_read_only_store_matches_a_writable_one(written: Path) -> None:
    q = EMB.embed(["tea in the morning"])[0]
    rw = mindcore.open(written, embedder=EMB).table("notes", COLUMNS, vectors=True)
    ro = mindcore.open(written, read_only=True, embedder=EMB).table("notes", COLUMNS, vectors=True)
    a, b = rw.search("u1", q, k=3), ro.search("u1", q, k=3)
    assert [h.id for h in a] == [h.id for h in b]
    np.testing.assert_array_equal([h.score for h in a], [h.score for h in b])
