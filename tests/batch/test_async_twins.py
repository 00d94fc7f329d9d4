"""The async twins of the batch functions give what their sync functions give, on real LanceDB
folders."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import mindcore
from mindcore.batch import arecall, areembed, aremember, recall, reembed, remember
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError
from mindcore.ltm import LongTermMemory

EMB = HashEmbedder(dim=64)
FACTS = ["Prefers green tea", "Lives in Lisbon", "Has a dog called Rex", "Plays the cello", "Studies Japanese"]


def ltm(store: mindcore.Store, user: str) -> LongTermMemory:
    memory = LongTermMemory.create(store, user_id=user, embedder=EMB, enabled=True, max_items=0)
    assert memory is not None
    return memory


@pytest.fixture
def built(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    store = mindcore.open(path, embedder=EMB)
    for u, user in enumerate(["ann", "bob", "cy"]):
        ltm(store, user).remember_many([f"{fact} ({user})" for fact in FACTS[u:]])
    store.close()
    return path


def rows_of(path: Path) -> list[dict[str, Any]]:
    store = mindcore.open(path, read_only=True)
    table = store.open_table("ltm_memories").scan_arrow(mindcore.store.ALL_NAMESPACES)
    return sorted(table.to_pylist(), key=lambda r: (r["namespace"], r["id"]))


def test_arecall_gives_the_hits_of_recall(built: Path) -> None:
    queries = pa.table({"user_id": ["ann", "bob", "cy", "nobody"], "query": ["tea", "dog", "cello", "tea"]})
    store = mindcore.open(built)
    now = int(time.time() * 1000)  # recency scores depend on it
    want = recall(store, queries, k=3, embedder=EMB, now_ms=now)
    got = asyncio.run(arecall(store, queries, k=3, embedder=EMB, now_ms=now))
    assert want.num_rows > 3 and got.equals(want)
    with pytest.raises(InvalidInputError, match="k: must be at most"):
        asyncio.run(arecall(store, queries, k=10_000, embedder=EMB))


def test_aremember_stores_what_remember_stores(built: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(built, twin)
    rows = pa.table({"user_id": ["ann", "ann", "dan", "bob"],
                     "text": ["Prefers green tea (ann)", "Owns a red bike", "Lives in Lyon", "Owns a red bike"]})
    seen: list[tuple[int, int]] = []
    want = remember(built, rows, embedder=EMB)
    got = asyncio.run(aremember(twin, rows, embedder=EMB, progress=lambda d, t: seen.append((d, t))))
    assert (got.rows, got.stored, got.duplicates, got.commits) == (want.rows, want.stored, want.duplicates,
                                                                     want.commits) == (4, 3, 1, 1)
    assert got.results.column("status").equals(want.results.column("status"))
    assert seen == [(4, 4)]
    assert [(r["namespace"], r["text"]) for r in rows_of(twin)] == [(r["namespace"], r["text"]) for r in rows_of(built)]


def test_areembed_rewrites_what_reembed_rewrites(built: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(built, twin)
    new = HashEmbedder(dim=96, seed=1)
    want = reembed(built, embedder=new)
    got = asyncio.run(areembed(twin, embedder=new))
    assert (got.tables, got.noop, got.skipped) == (want.tables, want.noop, want.skipped) and got.tables
    mine, theirs = rows_of(twin), rows_of(built)
    assert [r["id"] for r in mine] == [r["id"] for r in theirs]
    np.testing.assert_array_equal(np.array([r["vector"] for r in mine]), np.array([r["vector"] for r in theirs]))
    assert len(mine[0]["vector"]) == 96


def test_the_twins_are_exported_and_named() -> None:
    for name in ("arecall", "aremember", "areembed"):
        twin = getattr(mindcore.batch, name)
        assert name in mindcore.batch.__all__ and twin.__name__ == name
        assert asyncio.iscoroutinefunction(twin) and "async twin" in (twin.__doc__ or "")

