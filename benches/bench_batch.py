"""Batch recall: ``mindcore.batch.recall`` over many users at once, against a loop of
``LongTermMemory.recall`` calls and against the bare scoring, all in the same run (embedding excluded:
the queries carry their vectors).

A store of U users x M memories (dimension D, random unit vectors, short texts over a small
vocabulary so BM25 matters, ages spread over 90 days) is written straight into the ``ltm_memories``
table, then each user asks 10 questions. Group ``batch: recall top-10 ...``, items = queries:

* ``mindcore``: ``mindcore.batch.recall`` over every query (read from an Arrow table with a ``vector``
  column; default weights: hybrid score plus BM25 lexical fusion, ``touch=False``);
* ``ltm-loop``: ``LongTermMemory.recall(touch=False)`` over the 10 queries of a sample of 50 users
  (another sample each round), one memory per user, as a loop over users does (the first recall of
  a user reads its memories);
* ``grouped_recall``: the bare scoring kernel (``mindcore.kernels.grouped_recall``) of the sample's queries
  over their scopes, loaded beforehand: the ceiling batch recall approaches (the rest is I/O and
  grouping).

The issue's size is 100k queries over 10k users x 500 memories; the default is 1k users (10k queries) so
a run takes minutes. Sizes come from the environment::

    pytest benches/bench_batch.py --benchmark-only -q -s                          # 1k users x 500, d=384
    MINDCORE_BATCH_USERS=10000 pytest benches/bench_batch.py --benchmark-only -q -s   # the issue's size
    MINDCORE_BATCH_MEMORIES=200 MINDCORE_BATCH_DIM=128 ...                        # other shapes
"""

from __future__ import annotations

import itertools
import os
import platform
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from _bench import finish, size_label

import mindcore
from mindcore.batch import recall
from mindcore.batch._load import load_scopes
from mindcore.kernels import grouped_recall
from mindcore.ltm import LongTermMemory, RecallWeights
from mindcore.ltm._lexical import lexical_terms
from mindcore.ltm._repo import COLUMNS, LEXICAL_FLOOR, TABLE, scope_key
from mindcore.store import StoreConfig

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
USERS = int(os.environ.get("MINDCORE_BATCH_USERS", 200 if QUICK else 1_000))
MEMORIES = int(os.environ.get("MINDCORE_BATCH_MEMORIES", 500))
DIM = int(os.environ.get("MINDCORE_BATCH_DIM", 384))
PER_USER = 10
SAMPLE = 50  # users per round of the loop and of the bare scoring
K = 10
DAY = 86_400_000
NOW = 1_750_000_000_000
GROUP = (f"batch: recall top-{K} {size_label(USERS * PER_USER)} queries over {size_label(USERS)} users "
         f"x {MEMORIES} memories d={DIM}")
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ri", "so", "ta", "vu", "ze") for b in
         ("ba", "de", "fi", "go", "hu", "ja", "ke", "li", "mo", "ny", "po", "qu", "ra", "si", "to")]


class LookupEmbedder:
    """The queries' vectors, made up front: embedding is excluded from every timing."""

    model_id = f"bench-batch-{DIM}"
    dim = DIM

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def _user(u: int) -> str:
    return f"user-{u:06d}"


def _write(store: mindcore.Store, rng: np.random.Generator) -> None:
    """Every user's memories, written straight into the ltm table in large appends."""
    import lancedb

    table = store.table(TABLE, COLUMNS, vectors=True, embedder=LookupEmbedder())
    schema = table.schema
    lance = lancedb.connect(store.uri).open_table(TABLE)
    step = max(1, 100_000 // MEMORIES)  # users per append
    for first in range(0, USERS, step):
        users = range(first, min(first + step, USERS))
        n = len(users) * MEMORIES
        texts = [" ".join(rng.choice(WORDS, 6)) for _ in range(n)]
        created = NOW - rng.integers(0, 90 * DAY, n)
        vectors = _unit(rng, n)
        columns: dict[str, Any] = {
            "id": [f"m{u}-{j}" for u in users for j in range(MEMORIES)],
            "namespace": [scope_key(_user(u), "default", None) for u in users for _ in range(MEMORIES)],
            "created_at": created, "updated_at": created, "tags": [[]] * n, "metadata": [None] * n,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
            "text": texts, "kind": ["fact"] * n, "importance": rng.choice([0.2, 0.5, 0.8], n).astype(np.float32),
            "source": ["bench"] * n, "last_accessed_at": created, "recency_at": created,
            "terms": [lexical_terms(t) for t in texts], "context": [None] * n,
        }
        lance.add(pa.table({f.name: pa.array(columns[f.name], f.type) for f in schema}, schema=schema))
    table.compact()  # fold the appends into the namespace index, as a store in use would be


@pytest.fixture(scope="module")
def data() -> Iterator[dict[str, Any]]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "") if Path("/proc/cpuinfo").exists() else ""
    print(f"\nCPU: {cpu or platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"scoring: kernels.grouped_recall; {USERS} users x {MEMORIES} memories, d={DIM}")
    rng = np.random.default_rng(0)
    emb = LookupEmbedder()
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        # No vector index (the scopes are small: exact search, as in production) and no
        # background compaction competing with the timings.
        store = mindcore.open(Path(tmp) / "store", embedder=emb,
                              config=StoreConfig(index_min_rows=0, compact_in_background=False))
        _write(store, rng)
        users = [_user(u) for u in range(USERS) for _ in range(PER_USER)]
        texts = [f"does the user like {' '.join(rng.choice(WORDS, 2))}? #{i}" for i in range(len(users))]
        vectors = _unit(rng, len(users))
        emb.table.update(zip(texts, vectors, strict=True))
        queries = pa.table({"user_id": users, "query": texts,
                            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM)})
        # The batch answers as the loop does (checked outside the timings, on a few users).
        check = queries.slice(0, 3 * PER_USER)
        hits = recall(store, check, k=K, now_ms=NOW)
        for u in range(3):
            ltm = LongTermMemory(store, user_id=_user(u), embedder=emb, max_items=0, clock=lambda: NOW)
            for i in range(u * PER_USER, (u + 1) * PER_USER):
                got = hits.filter(pa.compute.equal(hits.column("query_index"), i)).column("memory_id").to_pylist()
                assert got == [m.id for m in ltm.recall(texts[i], K, touch=False)]
            ltm.close()
        yield {"store": store, "emb": emb, "queries": queries, "texts": texts, "vectors": vectors}
        store.close()


def test_batch_recall(benchmark: Any, data: dict[str, Any]) -> None:
    queries: pa.Table = data["queries"]
    finish(benchmark, "mindcore", GROUP, queries.num_rows)
    hits = benchmark.pedantic(lambda: recall(data["store"], queries, k=K, now_ms=NOW), rounds=3, iterations=1,
                              warmup_rounds=1)
    assert hits.num_rows == queries.num_rows * K
    print(f"\nbatch.recall: {queries.num_rows / benchmark.stats.stats.median:,.0f} queries/s")


def test_ltm_loop(benchmark: Any, data: dict[str, Any]) -> None:
    # Users no other case read before (at small sizes the samples come round again).
    samples = itertools.cycle(range(USERS // 2, USERS, SAMPLE))

    def setup() -> tuple[tuple[list[int]], dict[str, Any]]:
        first = next(samples)
        return (list(range(first, min(first + SAMPLE, USERS))),), {}

    def loop(users: list[int]) -> int:
        n = 0
        for u in users:
            ltm = LongTermMemory(data["store"], user_id=_user(u), embedder=data["emb"], max_items=0,
                                 clock=lambda: NOW)
            for i in range(u * PER_USER, (u + 1) * PER_USER):
                n += len(ltm.recall(data["texts"][i], K, touch=False))
            ltm.close()
        return n

    finish(benchmark, "ltm-loop", GROUP, min(SAMPLE, USERS) * PER_USER)
    benchmark.pedantic(loop, setup=setup, rounds=3)
    print(f"\nLongTermMemory.recall loop: {min(SAMPLE, USERS) * PER_USER / benchmark.stats.stats.median:,.0f} "
          "queries/s")


def test_grouped_recall_kernel(benchmark: Any, data: dict[str, Any]) -> None:
    store = data["store"]
    users = list(range(min(SAMPLE, USERS)))
    keys = [scope_key(_user(u), "default", None) for u in users]
    scopes = load_scopes(store.table(TABLE, COLUMNS, vectors=True, embedder=data["emb"]), keys)
    rows = [u * PER_USER + j for u in users for j in range(PER_USER)]
    vectors = np.ascontiguousarray(data["vectors"][rows])
    group = np.repeat(np.arange(len(users), dtype=np.int64), PER_USER)
    texts = [data["texts"][i] for i in rows]
    w = RecallWeights()

    def score() -> Any:
        return grouped_recall(vectors, group, scopes.matrix, scopes.offsets, timestamps=scopes.recency,
                              importance=scopes.importance, query_texts=texts, terms=scopes.terms, k=K,
                              w_sim=w.similarity, w_rec=w.recency, w_importance=w.importance, w_lexical=w.lexical,
                              half_life_ms=w.half_life_days * DAY, now_ms=NOW, lexical_floor=LEXICAL_FLOOR)

    finish(benchmark, "grouped_recall", GROUP, len(rows))
    benchmark.pedantic(score, rounds=5, warmup_rounds=1)
    print(f"\ngrouped_recall: {len(rows) / benchmark.stats.stats.median:,.0f} queries/s")
