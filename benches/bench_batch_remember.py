"""Bulk ingest into long-term memory: candidates per second of ``mindcore.batch.remember`` against a
loop of ``LongTermMemory.remember_many`` (one call, one commit per user), same data, same run.

* ``batch: remember U users x R rows``: U users (1,000; ``MINDCORE_BENCH_BULK_USERS``) with R new
  rows each (50; ``MINDCORE_BENCH_BULK_ROWS``), one row in ten a repeat of an earlier row of the
  same user; every user already has 20 memories (old, unimportant) and a cap of 60, so the write
  dedupes within the rows and against the store, and evicts stored memories (a commit with
  deletes: one ``merge_insert``) and new rows older than those. ``mindcore-batch`` is ``batch.remember`` (chunks of 5,000
  rows: one secret scan, one embedding call, one scan of the chunk's users, one commit each);
  ``remember_many-loop`` is one ``remember_many`` per user (the ``LongTermMemory`` objects are
  made before the clock starts). Each round starts from a copy of the same seeded store.
  Embedding is excluded: the embedder looks up vectors made up front (random unit vectors, 384-d).
  items = rows (candidates); ``candidates_per_s`` in extra_info.

    pytest benches/bench_batch_remember.py --benchmark-only -q
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from _bench import LookupEmbedder, finish, size_label

import mindcore
from mindcore.batch import remember
from mindcore.ltm import LongTermMemory

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
USERS = int(os.environ.get("MINDCORE_BENCH_BULK_USERS", "100" if QUICK else "1000"))
ROWS = int(os.environ.get("MINDCORE_BENCH_BULK_ROWS", "50"))
SEEDED = 20
CAP = 60
GROUP = f"batch: remember {size_label(USERS)} users x {ROWS} rows"


def _rows(rng: np.random.Generator, start: int, n: int, user: str) -> list[str]:
    texts = [f"{user} fact {start + i}: likes {rng.integers(1 << 30)}" for i in range(n)]
    for i in range(9, n, 10):  # one row in ten repeats an earlier row of the user
        texts[i] = texts[int(rng.integers(i))]
    return texts


@pytest.fixture(scope="module")
def data() -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(1)
    users = [f"user-{u:05d}" for u in range(USERS)]
    seeded = {u: _rows(rng, 0, SEEDED, u) for u in users}
    new = {u: _rows(rng, SEEDED, ROWS, u) for u in users}
    emb = LookupEmbedder([t for texts in (*seeded.values(), *new.values()) for t in texts])
    now = 1_750_000_000_000
    importance = rng.random(USERS * ROWS).round(2)
    created = now - rng.integers(0, 400, USERS * ROWS) * 86_400_000
    table = pa.table({"user_id": [u for u in users for _ in range(ROWS)],
                      "text": [t for u in users for t in new[u]],
                      "importance": importance, "created_at": created})
    with tempfile.TemporaryDirectory(prefix="bench-bulk-") as tmp:
        base = Path(tmp) / "seeded"
        store = mindcore.open(base)
        remember(store, pa.table({"user_id": [u for u in users for _ in range(SEEDED)],
                                  "text": [t for u in users for t in seeded[u]],
                                  "created_at": [now - 1000 * 86_400_000] * (USERS * SEEDED),
                                  "importance": [0.1] * (USERS * SEEDED)}),
                 embedder=emb, max_items=CAP)
        store.close()
        yield {"users": users, "table": table, "embedder": emb, "base": base, "tmp": Path(tmp), "results": {}}


def _fresh(data: dict[str, Any], name: str) -> mindcore.Store:
    path = data["tmp"] / name
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(data["base"], path)
    return mindcore.open(path)


def _candidates_per_s(benchmark: Any) -> int:
    return round(USERS * ROWS / benchmark.stats.stats.median)


def test_remember_many_loop(benchmark: Any, data: dict[str, Any]) -> None:
    table: pa.Table = data["table"]
    per_user: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        per_user.setdefault(row.pop("user_id"), []).append(row)
    rounds = 1 if not QUICK else 2

    def setup() -> tuple[tuple[list[LongTermMemory]], dict[str, Any]]:
        store = _fresh(data, "loop")
        memories = [LongTermMemory(store, user_id=u, embedder=data["embedder"], max_items=CAP) for u in data["users"]]
        return (memories,), {}

    def loop(memories: list[LongTermMemory]) -> int:
        stored = 0
        for memory in memories:
            stored += sum(r.status == "stored" for r in memory.remember_many(per_user[memory.user_id],
                                                                              source="import"))
        return stored

    finish(benchmark, "remember_many-loop", GROUP, USERS * ROWS)
    stored = benchmark.pedantic(loop, setup=setup, rounds=rounds)
    data["results"]["loop"] = (stored, benchmark.stats.stats.median)
    benchmark.extra_info["candidates_per_s"] = _candidates_per_s(benchmark)
    benchmark.extra_info["commits"] = USERS


def test_batch_remember(benchmark: Any, data: dict[str, Any]) -> None:
    rounds = 3

    def setup() -> tuple[tuple[mindcore.Store], dict[str, Any]]:
        return (_fresh(data, "batch"),), {}

    def bulk(store: mindcore.Store) -> Any:
        return remember(store, data["table"], embedder=data["embedder"], max_items=CAP, chunk_size=5_000)

    finish(benchmark, "mindcore-batch", GROUP, USERS * ROWS)
    report = benchmark.pedantic(bulk, setup=setup, rounds=rounds)
    assert report.rows == USERS * ROWS and report.duplicates > 0 and report.evicted > 0
    benchmark.extra_info["candidates_per_s"] = _candidates_per_s(benchmark)
    benchmark.extra_info["commits"] = report.commits
    loop = data["results"].get("loop")
    if loop is not None:  # the same outcome, and how much faster
        assert report.stored == loop[0]
        benchmark.extra_info["speedup_vs_loop"] = round(loop[1] / benchmark.stats.stats.median, 1)
