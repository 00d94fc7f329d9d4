"""Group commit: threads of one process writing one table share LanceDB commits.

Each test that needs a group holds the table's write lock (``store.lock(table_name)``) while
the writers queue, so the group they form is known; versions are counted on the table itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from conftest import HANG

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.store import StoreConfig, Table, WriteResult, col

COLUMNS = {"text": pa.string(), "n": pa.int64()}


def _table(tmp_path: Path, *, vectors: bool = False) -> Table:
    store = mindcore.open(tmp_path / "store", config=StoreConfig(compact_every=0), embedder=HashEmbedder())
    return store.table("notes", COLUMNS, vectors=vectors)


def _queued(t: Table) -> int:
    with t._group.cond:
        return len(t._group.queue)


def _wait_queued(t: Table, n: int) -> None:
    deadline = time.monotonic() + HANG
    while _queued(t) < n:
        assert time.monotonic() < deadline, f"only {_queued(t)} of {n} writers queued"
        time.sleep(0.002)


class _Writers:
    """Writers started one at a time, each queued before the next starts (so queue order is
    start order); results or exceptions collected by name."""

    def __init__(self, t: Table) -> None:
        self.t = t
        self.threads: list[threading.Thread] = []
        self.results: dict[str, WriteResult] = {}
        self.errors: dict[str, BaseException] = {}

    def start(self, name: str, write: Callable[[], WriteResult]) -> None:
        def run() -> None:
            try:
                self.results[name] = write()
            except BaseException as e:
                self.errors[name] = e

        before = _queued(self.t)
        th = threading.Thread(target=run)
        th.start()
        self.threads.append(th)
        _wait_queued(self.t, before + 1)

    def join(self) -> None:
        for th in self.threads:
            th.join(HANG)
            assert not th.is_alive()


def test_writers_queued_together_share_one_commit(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.upsert("a", [{"id": "old", "text": "stored", "n": 0}])
    before = t.version
    w = _Writers(t)
    with t.store.lock("notes").hold():
        for i in range(8):
            ns = "a" if i % 2 else "b"
            w.start(f"w{i}", lambda i=i, ns=ns: t.upsert(ns, [{"id": f"r{i}-{j}", "text": "x", "n": i} for j in range(3)]))
        w.start("upd", lambda: t.update("a", ["old"], {"text": "updated"}))
        w.start("app", lambda: t.append("c", [{"text": "line"}]))
    w.join()
    assert not w.errors
    assert t.version == before + 1  # ten writers, one commit
    assert {r.version for r in w.results.values()} == {before + 1}
    assert all(w.results[f"w{i}"] == WriteResult(before + 1, inserted=3) for i in range(8))
    assert w.results["upd"] == WriteResult(before + 1, updated=1)
    assert w.results["app"] == WriteResult(before + 1, inserted=1)
    assert t.count("a") == 1 + 4 * 3 and t.count("b") == 4 * 3 and t.count("c") == 1
    assert t.get_one("a", "old")["text"] == "updated"  # type: ignore[index]


def test_a_replacing_write_in_a_group_reports_its_own_counts(tmp_path: Path) -> None:
    """Rows replaced through an uncached namespace (the store asks the table which ids exist)."""
    t = _table(tmp_path)
    t.upsert("a", [{"id": "x", "text": "old", "n": 1}])
    t._ctx.cache.drop_table("notes")
    before = t.version
    w = _Writers(t)
    with t.store.lock("notes").hold():
        w.start("replace", lambda: t.upsert("a", [{"id": "x", "text": "new", "n": 2}, {"id": "y", "text": "y", "n": 3}]))
        w.start("insert", lambda: t.upsert("a", [{"id": "z", "text": "z", "n": 4}]))
    w.join()
    assert t.version == before + 1
    assert w.results["replace"] == WriteResult(before + 1, inserted=1, updated=1)
    assert w.results["insert"] == WriteResult(before + 1, inserted=1)
    assert sorted((r["id"], r["text"]) for r in t.scan("a")) == [("x", "new"), ("y", "y"), ("z", "z")]


def test_many_threads_make_fewer_commits_than_writes(tmp_path: Path) -> None:
    t = _table(tmp_path, vectors=True)
    emb = HashEmbedder()
    vec = emb.embed(["a note"])[0]
    before = t.version
    threads, writes = 8, 25
    start = threading.Barrier(threads)
    seen: list[list[WriteResult]] = [[] for _ in range(threads)]

    def writer(k: int) -> None:
        start.wait()
        for j in range(writes):
            seen[k].append(t.upsert(f"user-{k % 3}", [{"id": f"{k}-{j}", "text": "x", "n": j, "vector": vec}]))

    with t.store.lock("notes").hold():  # every thread queues its first write behind the lock
        pool = [threading.Thread(target=writer, args=(k,)) for k in range(threads)]
        for th in pool:
            th.start()
        _wait_queued(t, threads)
    for th in pool:
        th.join(HANG)
    commits = t.version - before
    assert commits < threads * writes
    assert all(r.inserted == 1 for rs in seen for r in rs)
    assert all(before < r.version <= t.version for rs in seen for r in rs)
    assert sum(t.count(f"user-{u}") for u in range(3)) == threads * writes
    # The cache followed every group: searches see every row without a reload.
    hits = t.search("user-0", vec, k=1000)
    assert len(hits) == t.count("user-0")


def test_a_failed_commit_fails_exactly_the_writers_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first commit fails (injected into the LanceDB table); the writers grouped in it all
    get its exception, and a writer queued behind them (its id overlaps, so it waits for the
    next group) is committed."""
    t = _table(tmp_path)
    before = t.version
    real_add = t._tbl.add
    calls: list[int] = []

    def failing_add(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("disk full")
        return real_add(*args, **kwargs)

    monkeypatch.setattr(t._tbl, "add", failing_add)
    w = _Writers(t)
    with t.store.lock("notes").hold():
        for name in ("a", "b", "c"):
            w.start(name, lambda name=name: t.upsert("ns", [{"id": name, "text": name, "n": 1}]))
        w.start("again", lambda: t.upsert("ns", [{"id": "a", "text": "second", "n": 2}]))
    w.join()
    assert {k: type(e) for k, e in w.errors.items()} == {"a": OSError, "b": OSError, "c": OSError}
    assert all(w.errors[k] is w.errors["a"] for k in "bc")
    assert w.results["again"] == WriteResult(before + 1, inserted=1)
    assert [(r["id"], r["text"]) for r in t.scan("ns")] == [("a", "second")]


def test_a_bad_row_is_refused_before_it_joins_a_group(tmp_path: Path) -> None:
    t = _table(tmp_path, vectors=True)
    dim = t.dim
    assert dim is not None
    good = np.ones(dim, dtype=np.float32) / np.sqrt(dim)
    bad = np.full(dim, np.nan, dtype=np.float32)
    before = t.version
    w = _Writers(t)
    with t.store.lock("notes").hold():
        w.start("good1", lambda: t.upsert("ns", [{"id": "g1", "text": "x", "vector": good}]))
        w.start("good2", lambda: t.upsert("ns", [{"id": "g2", "text": "x", "vector": good}]))
        # Refused at once, while the lock is still held: it never waited for the group.
        with pytest.raises(ValueError, match="NaN"):
            t.upsert("ns", [{"id": "b", "text": "x", "vector": bad}])
        assert _queued(t) == 2
    w.join()
    assert not w.errors and t.version == before + 1
    assert sorted(r["id"] for r in t.scan("ns")) == ["g1", "g2"]


def test_a_deleting_unit_of_work_commits_alone(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.upsert("ns", [{"id": "gone", "text": "x", "n": 1}, {"id": "kept", "text": "x", "n": 2}])
    before = t.version

    def delete_and_add() -> WriteResult:
        with t.unit_of_work("ns") as uow:
            uow.delete(where=col("n").eq(1))
            uow.upsert([{"id": "new", "text": "x", "n": 3}])
        assert uow.result is not None
        return uow.result

    w = _Writers(t)
    with t.store.lock("notes").hold():
        w.start("first", lambda: t.upsert("ns", [{"id": "p", "text": "x", "n": 5}]))
        w.start("delete", delete_and_add)
        w.start("last", lambda: t.upsert("other", [{"id": "q", "text": "x", "n": 6}]))
    w.join()
    assert not w.errors
    assert t.version == before + 3
    assert w.results["delete"] == WriteResult(before + 2, inserted=1, deleted=1)
    assert sorted(r["id"] for r in t.scan("ns")) == ["kept", "new", "p"]


def test_a_memory_store_groups_too(tmp_path: Path) -> None:
    t = mindcore.open("memory://").table("notes", COLUMNS)
    before = t.version
    w = _Writers(t)
    with t.store.lock("notes").hold():
        for i in range(4):
            w.start(str(i), lambda i=i: t.upsert("ns", [{"id": str(i), "text": "x", "n": i}]))
    w.join()
    assert not w.errors and t.version == before + 1 and t.count("ns") == 4


@pytest.mark.parametrize("n", [50, 5000])
def test_rows_of_an_uncached_namespace_replace_stored_ones(tmp_path: Path, n: int) -> None:
    """The store asks the table which ids exist (by id for a few rows, by namespace for many):
    stored ids are replaced, never stored twice."""
    t = _table(tmp_path)
    t.upsert("ns", [{"id": f"r{i}", "text": "old", "n": i} for i in range(0, n, 10)])
    t.upsert("other", [{"id": "r1", "text": "elsewhere", "n": 1}])
    t._ctx.cache.drop_table("notes")
    rows = pa.table({"namespace": ["ns"] * n, "id": [f"r{i}" for i in range(n)], "text": ["new"] * n,
                     "n": list(range(n))})
    res = t.write_batch(rows)
    assert (res.inserted, res.updated) == (n - n // 10, n // 10)
    assert t.count("ns") == n and t.count("ns", col("text").eq("new")) == n
    assert t.get_one("other", "r1")["text"] == "elsewhere"  # type: ignore[index]
