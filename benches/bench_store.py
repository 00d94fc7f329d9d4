"""The store: recall latency, write throughput and reads after many small writes.

* ``store: recall top-10 n=... d=384``: one namespace of n entries; ``mindcore`` is
  ``Table.search`` (version check, in-memory cache, Rust hybrid top-k, rows materialised),
  ``lancedb`` is LanceDB's own exact search with the same namespace prefilter, ``numpy`` a matrix
  product and ``argpartition`` on the same vectors already in memory. p50/p99 in extra_info.
* ``store: write single-row`` / ``store: write 1000-row``: ``Table.upsert`` (validation, write
  lock, one merge_insert, scheduled compaction) against LanceDB's ``merge_insert`` on a prebuilt
  Arrow table without any maintenance.
* ``store: read after 10k single-row writes``: a point read and a namespace load on a table
  that took 10,000 single-row upserts through the store (compacting as configured) against the
  same rows written at once and compacted (``fresh-compacted``). Disk use in extra_info.

    pytest benches/bench_store.py --benchmark-only -q
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from _bench import finish, size_label

import mindcore
from mindcore.store import StoreConfig, Table

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
DIM = 384
SIZES = [1_000, 5_000] if QUICK else [1_000, 10_000, 100_000]
CHURN_WRITES = 500 if QUICK else 10_000
CHURN_LABEL = "500" if QUICK else "10k"
NS = "agent/bench"


class _Dims:
    dim = DIM
    model_id = "bench-random-384"

    def embed(self, texts: Any) -> np.ndarray:
        raise NotImplementedError("the bench passes vectors")



def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _arrow(ids: list[str], vecs: np.ndarray, rng: np.random.Generator) -> pa.Table:
    n = len(ids)
    return pa.table({
        "id": ids,
        "text": [f"memory {i}" for i in range(n)],
        "importance": rng.random(n).astype(np.float32),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM),
    })


COLUMNS = {"text": pa.string(), "importance": pa.float32()}




def _dir_usage(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


# -- recall ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=SIZES, ids=size_label)
def corpus(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    n = int(request.param)
    rng = np.random.default_rng(n)
    vecs = _unit(rng, n)
    tmp = Path(tempfile.mkdtemp(prefix="bench_store_"))
    store = mindcore.open(tmp, embedder=_Dims(), config=StoreConfig(compact_every=0))
    t = store.table("memories", COLUMNS, vectors=True)
    t.upsert(NS, _arrow([f"m{i}" for i in range(n)], vecs, rng))
    t.upsert("agent/other", _arrow([f"o{i}" for i in range(100)], _unit(rng, 100), rng))
    t.compact()
    queries = _unit(np.random.default_rng(0), 64)
    t.search(NS, queries[0], k=10)  # warm the cache, as every recall after the first is
    yield {"n": n, "table": t, "vecs": vecs, "queries": queries}
    store.close()
    shutil.rmtree(tmp, ignore_errors=True)


def _numpy_top10(vecs: np.ndarray, q: np.ndarray) -> np.ndarray:
    s = vecs @ q
    idx = np.argpartition(-s, 10)[:10]
    return idx[np.argsort(-s[idx], kind="stable")]


def _rounds(n: int, slow: bool = False) -> int:
    if QUICK:
        return 20
    return 30 if slow and n >= 100_000 else 200


def test_recall_mindcore(benchmark: Any, corpus: dict[str, Any]) -> None:
    t: Table = corpus["table"]
    qs = itertools.cycle(corpus["queries"])
    for q in corpus["queries"][:8]:  # same answer as numpy
        got = [int(h.id[1:]) for h in t.search(NS, q, k=10)]
        assert got == _numpy_top10(corpus["vecs"], q).tolist()
    finish(benchmark, "mindcore", f"store: recall top-10 n={size_label(corpus['n'])} d={DIM}", 1)
    benchmark.pedantic(lambda: t.search(NS, next(qs), k=10), rounds=_rounds(corpus["n"]), warmup_rounds=3)


def test_recall_lancedb(benchmark: Any, corpus: dict[str, Any]) -> None:
    lance = corpus["table"]._tbl
    qs = itertools.cycle(corpus["queries"])

    def search(q: np.ndarray) -> pa.Table:
        return (
            lance.search(q, vector_column_name="vector").distance_type("cosine").bypass_vector_index()
            .where(f"`namespace` = '{NS}'", prefilter=True).limit(10).to_arrow()
        )

    for q in corpus["queries"][:4]:
        got = [int(i[1:]) for i in search(q).column("id").to_pylist()]
        assert len(set(got) & set(_numpy_top10(corpus["vecs"], q).tolist())) >= 9
    finish(benchmark, "lancedb", f"store: recall top-10 n={size_label(corpus['n'])} d={DIM}", 1)
    benchmark.pedantic(lambda: search(next(qs)), rounds=_rounds(corpus["n"], slow=True), warmup_rounds=1)


def test_recall_numpy(benchmark: Any, corpus: dict[str, Any]) -> None:
    vecs = corpus["vecs"]
    qs = itertools.cycle(corpus["queries"])
    finish(benchmark, "numpy", f"store: recall top-10 n={size_label(corpus['n'])} d={DIM}", 1)
    benchmark.pedantic(lambda: _numpy_top10(vecs, next(qs)), rounds=_rounds(corpus["n"]), warmup_rounds=3)


# -- writes ----------------------------------------------------------------------------------------


@pytest.fixture
def write_table(tmp_path: Path) -> Iterator[Table]:
    store = mindcore.open(tmp_path, embedder=_Dims())
    t = store.table("memories", COLUMNS, vectors=True)
    rng = np.random.default_rng(1)
    t.upsert(NS, _arrow([f"seed{i}" for i in range(1000)], _unit(rng, 1000), rng))
    yield t
    store.close()


def _rows(prefix: str, n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    vecs = _unit(rng, n)
    return [{"id": f"{prefix}{i}", "text": f"memory {i}", "importance": 0.5, "tags": ["bench"],
             "vector": vecs[i]} for i in range(n)]


WRITE_ROUNDS = 30 if QUICK else 300


def test_write_single_mindcore(benchmark: Any, write_table: Table) -> None:
    rng = np.random.default_rng(2)
    rows = iter(_rows("w", WRITE_ROUNDS + 10, rng))
    finish(benchmark, "mindcore", "store: write single-row", 1)
    benchmark.pedantic(lambda: write_table.upsert(NS, [next(rows)]), rounds=WRITE_ROUNDS, warmup_rounds=2)
    assert write_table.count(NS) == 1000 + WRITE_ROUNDS + 2


def test_write_single_lancedb(benchmark: Any, write_table: Table) -> None:
    rng = np.random.default_rng(2)
    lance = write_table._tbl
    schema = lance.schema
    from mindcore.store.schema import rows_to_arrow

    batches = iter([rows_to_arrow([r], schema, NS) for r in _rows("w", WRITE_ROUNDS + 10, rng)])

    def write() -> None:
        lance.merge_insert(["namespace", "id"]).when_matched_update_all().when_not_matched_insert_all().execute(
            next(batches), on_bad_vectors="null")

    finish(benchmark, "lancedb", "store: write single-row", 1)
    benchmark.pedantic(write, rounds=WRITE_ROUNDS, warmup_rounds=2)
    assert lance.count_rows() == 1000 + WRITE_ROUNDS + 2


BATCH_ROUNDS = 5 if QUICK else 20


def test_write_batch_mindcore(benchmark: Any, write_table: Table) -> None:
    rng = np.random.default_rng(3)
    batches = iter([_rows(f"b{j}-", 1000, rng) for j in range(BATCH_ROUNDS + 1)])
    finish(benchmark, "mindcore", "store: write 1000-row", 1000)
    benchmark.pedantic(lambda: write_table.upsert(NS, next(batches)), rounds=BATCH_ROUNDS, warmup_rounds=1)
    assert write_table.count(NS) == 1000 * (BATCH_ROUNDS + 2)


def test_write_batch_mindcore_arrow(benchmark: Any, write_table: Table) -> None:
    rng = np.random.default_rng(3)
    batches = iter([_arrow([f"b{j}-{i}" for i in range(1000)], _unit(rng, 1000), rng) for j in range(BATCH_ROUNDS + 1)])
    finish(benchmark, "mindcore", "store: write 1000-row arrow", 1000)
    benchmark.pedantic(lambda: write_table.upsert(NS, next(batches)), rounds=BATCH_ROUNDS, warmup_rounds=1)
    assert write_table.count(NS) == 1000 * (BATCH_ROUNDS + 2)


@pytest.mark.parametrize("group", ["store: write 1000-row", "store: write 1000-row arrow"])
def test_write_batch_lancedb(benchmark: Any, write_table: Table, group: str) -> None:
    rng = np.random.default_rng(3)
    lance = write_table._tbl
    from mindcore.store.schema import rows_to_arrow

    batches = iter([rows_to_arrow(_rows(f"b{j}-", 1000, rng), lance.schema, NS) for j in range(BATCH_ROUNDS + 1)])

    def write() -> None:
        lance.merge_insert(["namespace", "id"]).when_matched_update_all().when_not_matched_insert_all().execute(
            next(batches), on_bad_vectors="null")

    finish(benchmark, "lancedb", group, 1000)
    benchmark.pedantic(write, rounds=BATCH_ROUNDS, warmup_rounds=1)
    assert lance.count_rows() == 1000 * (BATCH_ROUNDS + 2)


# -- reads after many small writes --------------------------------------------------------------------


@pytest.fixture(scope="module")
def churned() -> Iterator[dict[str, Any]]:
    tmp = Path(tempfile.mkdtemp(prefix="bench_store_churn_"))
    rng = np.random.default_rng(4)
    rows = _rows("c", CHURN_WRITES, rng)
    store = mindcore.open(tmp / "churned", embedder=_Dims())  # default maintenance
    t = store.table("memories", COLUMNS, vectors=True)
    for r in rows:
        t.upsert(NS, [r])
    store.wait_for_maintenance()
    fresh_store = mindcore.open(tmp / "fresh", embedder=_Dims())
    fresh = fresh_store.table("memories", COLUMNS, vectors=True)
    fresh.upsert(NS, rows)
    fresh.compact()
    info = {}
    for name, table in (("churned", t), ("fresh", fresh)):
        size, files = _dir_usage(tmp / name / "memories.lance")
        stats = table._tbl.stats()
        info[name] = {"disk_bytes": size, "files": files, "fragments": stats["fragment_stats"]["num_fragments"],
                      "versions": len(table._tbl.list_versions())}
    yield {"churned": t, "fresh": fresh, "ids": [r["id"] for r in rows], "info": info}
    store.close()
    fresh_store.close()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("which", ["churned", "fresh"])
def test_point_read_after_churn(benchmark: Any, churned: dict[str, Any], which: str) -> None:
    t: Table = churned[which]
    ids = itertools.cycle(np.random.default_rng(5).permutation(churned["ids"]).tolist())
    assert t.count(NS) == CHURN_WRITES
    finish(benchmark, "mindcore" if which == "churned" else "fresh-compacted",
            f"store: point read after {CHURN_LABEL} single-row writes", 1)
    benchmark.extra_info.update(churned["info"][which])
    benchmark.pedantic(lambda: t.get(NS, [next(ids)]), rounds=50 if QUICK else 200, warmup_rounds=3)


@pytest.mark.parametrize("which", ["churned", "fresh"])
def test_namespace_load_after_churn(benchmark: Any, churned: dict[str, Any], which: str) -> None:
    t: Table = churned[which]
    finish(benchmark, "mindcore" if which == "churned" else "fresh-compacted",
            f"store: namespace load after {CHURN_LABEL} single-row writes", CHURN_WRITES)
    benchmark.extra_info.update(churned["info"][which])
    result = benchmark.pedantic(lambda: t.scan_arrow(NS), rounds=10 if QUICK else 30, warmup_rounds=1)
    assert result.num_rows == CHURN_WRITES
