"""``Table.write_batch`` (rows and deletes of many namespaces in one commit) and
``Table.cached_many`` (many namespaces read by one scan): the same rows as one write per
namespace, one version, reads after the commit see it; ``new_ids`` makes ids as ``new_id`` does."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.store import ALL_NAMESPACES, Store, StoreConfig, Table, new_id, new_ids

DIM = 8


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return mindcore.open(tmp_path / "store", config=StoreConfig(compact_every=0))


@pytest.fixture
def notes(store: Store) -> Table:
    return store.table("notes", {"text": pa.string()}, vectors=True, embedder=HashEmbedder(DIM))


def vec(seed: int) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).tolist()


def text_seed(text: str) -> int:
    """A vector seed of its own for ``text``, the same in every process (``hash`` is salted per
    process) and apart from the small seeds the tests give their first rows."""
    return 1_000 + zlib.crc32(text.encode()) % 1_000


def rows(namespaces: list[str], ids: list[str], texts: list[str]) -> pa.Table:
    return pa.table({
        "namespace": namespaces, "id": ids, "text": texts,
        "vector": pa.array([vec(text_seed(t)) for t in texts], pa.list_(pa.float32(), DIM)),
    })


def snapshot(t: Table) -> list[tuple[str, str, str]]:
    return sorted((r["namespace"], r["id"], r["text"]) for r in t.scan(ALL_NAMESPACES, columns=["namespace", "id", "text"]))


def test_inserts_of_many_namespaces_are_one_version(store: Store, notes: Table) -> None:
    notes.upsert("a", [{"id": "0", "text": "kept", "vector": vec(0)}])
    before = notes.version
    res = notes.write_batch(rows(["a", "b", "c", "b"], ["1", "1", "1", "2"], ["a1", "b1", "c1", "b2"]))
    assert notes.version == before + 1 == res.version and res.inserted == 4
    assert snapshot(notes) == [("a", "0", "kept"), ("a", "1", "a1"), ("b", "1", "b1"), ("b", "2", "b2"),
                               ("c", "1", "c1")]


def test_deletes_and_replacements_in_the_same_commit(notes: Table) -> None:
    for ns in ("a", "b"):
        notes.upsert(ns, [{"id": str(i), "text": f"{ns}{i}", "vector": vec(i)} for i in range(3)])
    before = notes.version
    notes.write_batch(rows(["a", "b"], ["1", "9"], ["a1 again", "b9"]), delete={"a": ["0"], "b": ["1", "2"], "c": []})
    assert notes.version == before + 1
    # Deletes name (namespace, id): id "1" of "a" is replaced, id "0" of "b" stays.
    assert snapshot(notes) == [("a", "1", "a1 again"), ("a", "2", "a2"), ("b", "0", "b0"), ("b", "9", "b9")]
    only_deletes = notes.write_batch(rows([], [], []), delete={"b": ["0"]})
    assert only_deletes.version == before + 2
    assert ("b", "0", "b0") not in snapshot(notes)


def test_reads_after_the_commit_see_it(tmp_path: Path, notes: Table) -> None:
    # The written namespaces' cached entries go (the next read loads them again); the others stay.
    for ns in ("a", "b", "c", "d"):
        notes.upsert(ns, [{"id": str(i), "text": f"{ns}{i}", "vector": vec(i)} for i in range(3)])
    entries = notes.cached_many(["a", "b", "c", "d"])
    notes.write_batch(rows(["a", "c"], ["7", "8"], ["a7", "c8"]), delete={"b": ["1"]})
    fresh = mindcore.open(tmp_path / "store").open_table("notes")
    for ns in ("a", "b", "c", "d"):
        mine, theirs = notes.cached(ns), fresh.cached(ns)
        assert (mine is entries[ns]) == (ns == "d")
        assert mine.scalars.column("id").to_pylist() == theirs.scalars.column("id").to_pylist()
        assert np.array_equal(mine.matrix, theirs.matrix)
    assert [h.id for h in notes.search("a", np.array(vec(text_seed("a7")), np.float32), k=1)] == ["7"]


def test_new_ids_encode_as_new_id() -> None:
    from mindcore.store.ids import _encode, _encode_many, new_id_array

    raw = np.random.default_rng(0).integers(0, 256, (500, 16), dtype=np.uint8)
    raw[0], raw[1] = 0, 255
    assert _encode_many(raw) == "".join(_encode(int.from_bytes(r.tobytes(), "big")) for r in raw).encode()
    bits = np.array([list((1 << k).to_bytes(16, "big")) for k in range(128)], dtype=np.uint8)  # every digit boundary
    assert _encode_many(bits) == "".join(_encode(1 << k) for k in range(128)).encode()
    ids = new_ids(2000)
    assert len(set(ids)) == 2000 and all(len(i) == 26 for i in ids)
    assert len({i[:10] for i in ids}) == 1 and new_id()[:10] >= ids[0][:10]  # one timestamp, time-ordered
    assert new_ids(0) == []
    array = new_id_array(2000)
    assert array.type == pa.string() and len(set(array.to_pylist())) == 2000
    assert all(len(i) == 26 for i in array.to_pylist()) and array.to_pylist()[0][:10] >= ids[0][:10]
    assert new_id_array(0).to_pylist() == []


def test_cached_many_is_cached_of_each(tmp_path: Path, notes: Table) -> None:
    for ns in ("x", "y"):
        notes.upsert(ns, [{"id": str(i), "text": f"{ns}{i}", "vector": vec(i)} for i in range(4)])
    fresh = mindcore.open(tmp_path / "store").open_table("notes")
    many = fresh.cached_many(["y", "x", "nobody", "x"])
    assert list(many) == ["y", "x", "nobody"]
    assert many["nobody"].n == 0
    for ns in ("x", "y"):
        one = mindcore.open(tmp_path / "store").open_table("notes").cached(ns)
        assert many[ns].scalars.column("id").to_pylist() == one.scalars.column("id").to_pylist()
        assert np.array_equal(many[ns].matrix, one.matrix)
        assert fresh.cached(ns) is many[ns]  # put in the store's cache


def test_bad_input_writes_nothing(notes: Table) -> None:
    before = notes.version
    with pytest.raises(ValueError, match="namespace"):
        notes.write_batch(pa.table({"id": ["1"], "text": ["t"]}))
    with pytest.raises(ValueError, match="namespace"):
        notes.write_batch(pa.table({"namespace": ["a", None], "id": ["1", "2"], "text": ["t", "u"]}))
    with pytest.raises(ValueError, match="id"):
        notes.write_batch(pa.table({"namespace": ["a"], "id": [""], "text": ["t"]}))
    with pytest.raises(TypeError):
        notes.write_batch([{"namespace": "a", "id": "1"}])  # type: ignore[arg-type]
    assert notes.version == before


def test_later_rows_win_per_namespace_and_id(notes: Table) -> None:
    notes.write_batch(rows(["a", "b", "a"], ["1", "1", "1"], ["first", "other", "last"]))
    assert snapshot(notes) == [("a", "1", "last"), ("b", "1", "other")]


def test_rows_by_namespace_are_one_version_and_bad_ones_write_nothing(notes: Table) -> None:
    before = notes.version
    res = notes.write_batch({"a": [{"id": "1", "text": "a1", "vector": vec(1)}],
                             "b": [{"id": "1", "text": "b1", "vector": vec(2)}, {"id": "2", "text": "b2"}]})
    assert notes.version == before + 1 == res.version and res.inserted == 3
    assert snapshot(notes) == [("a", "1", "a1"), ("b", "1", "b1"), ("b", "2", "b2")]
    with pytest.raises(ValueError, match="namespace"):
        notes.write_batch({"": [{"id": "3", "text": "x"}]})
    with pytest.raises(ValueError, match="unknown"):
        notes.write_batch({"a": [{"id": "3", "text": "x"}], "b": [{"id": "4", "colour": "red"}]})
    assert notes.version == before + 1 and notes.write_batch({}).version == before + 1
