"""Batch recall on Ray: ``mindcore.batch.recall(engine="ray")`` with 2 workers on a local Ray cluster,
against the local engine in the same run, on the data of ``bench_batch.py`` (U users x M memories,
10 queries a user, the queries carry their vectors: embedding excluded).

Group ``batch: recall on Ray ...``, items = queries:

* ``mindcore``: ``batch.recall(engine="ray", num_workers=2)`` over every query: the driver checks the
  input and the store, cuts the queries into blocks of whole users, two actors each open the store
  and run the local engine on the blocks they get;
* ``local-engine``: ``batch.recall(engine="local")`` over the same queries, in this process;
* ``ray-fixed``: ``engine="ray"`` over the 10 queries of one user (one block): what a call costs
  before any real work (starting two actors that import mindcore and open the store, scheduling,
  gathering).

The per-block cost is printed: ``block = W x (T_ray - T_fixed) / blocks`` (W = 2 workers): the time
one worker spends on one block of ``rows`` queries (scheduling it, moving it, scoring it), and the
per-worker rate ``rows / block``.

Projection to a cluster
-----------------------
A call on W workers takes about ``T(n, W) = d x n + F + n / (W x r)``: ``d`` the driver's own work
per query (checking every row, cutting the blocks, ordering the hits; printed), ``F`` the fixed cost
of a call (``ray-fixed``: starting W actors that import mindcore and open the store, scheduling,
gathering), ``r`` one worker's rate in queries/s (printed: the local engine on one block in this
process, and the same through Ray). The throughput ``n / T(n, W)`` approaches ``W x r`` while
``n / (W x r)`` dominates ``F + d x n``, and never passes ``1 / d`` (the driver). Assumptions: each
worker has a core of its own (on one 2-core machine the two workers share the cores with the driver,
so Ray cannot beat the local engine there, and the "through Ray" per-block cost measured there is
mostly that sharing); the store's reads scale with the workers (a local SSD or a shared disk read at
full speed by each worker; object storage adds its request latency to each block, so measure ``r``
against it); blocks hold whole users, so each user's memories are read by one worker and the bytes
read do not grow with W; there are at least ~4 W blocks (``chunk_size``, 2048 by default, caps a
block: n >= 8k W for full blocks) so the workers stay busy to the end; and Ray's scheduling of a
block on an idle cluster (milliseconds) stays small against scoring it (~0.5 s for 1,250 queries).

Measured on an AMD EPYC, 2 cores, quiet, 10k queries over 1k users x 500 memories, d=384, k=10: local
engine 1.09 s (9,176 queries/s); Ray with 2 workers 5.2 s (4.8x the local engine's time); F = 3.2 s; one
worker on whole blocks in process r = 9,250 queries/s; d = 15 us. So on a cluster of W workers with a core
each, 100k queries take about 1.5 s + F + 10.8 s / W (W = 16: about 5.4 s, ~18k queries/s), and the driver
caps a call near 65k queries/s (``benches/NOTES.md``).

Sizes come from the environment, as in ``bench_batch.py``::

    pytest benches/bench_batch_ray.py --benchmark-only -q -s                          # 1k users x 500
    MINDCORE_BATCH_USERS=10000 pytest benches/bench_batch_ray.py --benchmark-only -q -s   # the issue's size
"""

from __future__ import annotations

import inspect
import math
import statistics
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from _bench import finish
from bench_batch import DIM, GROUP, NOW, PER_USER, K
from bench_batch import data as data  # the same store and queries (a module-scoped fixture)

import mindcore
from mindcore.batch import _ray
from mindcore.batch._input import open_queries

ray = pytest.importorskip("ray", reason="Ray is not installed (the bench extra brings it, or the ray extra)")

WORKERS = 2
CHUNK = inspect.signature(mindcore.batch.recall).parameters["chunk_size"].default  # the largest block
RAY_GROUP = GROUP.replace("batch: recall", f"batch: recall on Ray, {WORKERS} workers,", 1)
_measured: dict[str, float] = {}


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=WORKERS, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


def _recall_on_ray(data: dict[str, Any], queries: pa.Table) -> pa.Table:
    return mindcore.batch.recall(str(data["store"].uri), queries, k=K, now_ms=NOW, engine="ray",
                                 num_workers=WORKERS)


def test_local_engine(benchmark: Any, data: dict[str, Any]) -> None:
    queries: pa.Table = data["queries"]
    finish(benchmark, "local-engine", RAY_GROUP, queries.num_rows)
    benchmark.pedantic(lambda: mindcore.batch.recall(data["store"], queries, k=K, now_ms=NOW), rounds=2,
                       iterations=1)
    _measured["local"] = benchmark.stats.stats.median
    print(f"\nlocal engine: {queries.num_rows / _measured['local']:,.0f} queries/s")


def test_ray_fixed_cost(benchmark: Any, cluster: None, data: dict[str, Any]) -> None:
    one_user = data["queries"].slice(0, PER_USER)
    finish(benchmark, "ray-fixed", RAY_GROUP, one_user.num_rows)
    hits = benchmark.pedantic(lambda: _recall_on_ray(data, one_user), rounds=2, iterations=1)
    assert hits.num_rows == PER_USER * K
    _measured["fixed"] = benchmark.stats.stats.median
    print(f"\nRay, one block of {PER_USER} queries: {_measured['fixed']:.2f} s a call")


def _shape(queries: pa.Table) -> tuple[int, int]:
    """The rows of a block and the number of blocks, as the engine cuts the queries (users of 10
    queries: a block ends at the first user boundary at or after the target size)."""
    rows = min(math.ceil(queries.num_rows / (WORKERS * _ray._BLOCKS_PER_WORKER)), CHUNK)
    rows = math.ceil(rows / PER_USER) * PER_USER
    return rows, math.ceil(queries.num_rows / rows)


def test_worker_block_cost(benchmark: Any, data: dict[str, Any]) -> None:
    """What one worker does, in this process: open the store, then run the local engine on each
    block (the first block of a worker reads cold; the median is steady state)."""
    queries: pa.Table = data["queries"]
    # The driver's own work, linear in the queries: check every row, cut the blocks, order the hits.
    start = time.perf_counter()
    checked = _ray._checked_queries(open_queries(queries), DIM, CHUNK)
    with_index = checked.append_column(_ray._INDEX, pa.array(range(queries.num_rows), pa.int64()))
    blocks = list(_ray._blocks(with_index, workers=WORKERS, max_rows=CHUNK))
    prepared = time.perf_counter() - start
    hits = mindcore.batch.recall(data["store"], queries, k=K, now_ms=NOW)
    start = time.perf_counter()
    parts = [pa.Table.from_batches([b]) for b in hits.to_batches(max_chunksize=max(1, hits.num_rows // len(blocks)))]
    pa.concat_tables(parts).sort_by(
        [("query_index", "ascending"), ("rank", "ascending")])
    _measured["driver"] = prepared + time.perf_counter() - start
    print(f"\ndriver: {_measured['driver']:.3f} s for {queries.num_rows:,} queries "
          f"({_measured['driver'] / queries.num_rows * 1e6:.1f} us a query: checks, blocks, ordering the hits)")
    options = {"k": K, "namespace": "default", "workspace_id": None, "weights": None, "now_ms": NOW,
               "touch": False, "chunk_size": CHUNK, "max_rows_in_memory": 500_000, "embed_batch_size": 256}
    opened: list[float] = []

    def run() -> list[float]:
        start = time.perf_counter()
        worker = _ray._RecallWorker(str(data["store"].uri), {}, None, options)
        opened.append(time.perf_counter() - start)
        times = []
        for block in blocks:
            start = time.perf_counter()
            worker(block)
            times.append(time.perf_counter() - start)
        return times

    finish(benchmark, "worker-in-process", RAY_GROUP, queries.num_rows)
    times = benchmark.pedantic(run, rounds=1, iterations=1)
    _measured["block"] = statistics.median(times)
    print(f"\none worker in process: store opened in {statistics.median(opened):.3f} s; {len(blocks)} blocks of "
          f"~{blocks[0].num_rows:,} queries: first {times[0]:.3f} s, median {_measured['block']:.3f} s "
          f"({blocks[0].num_rows / _measured['block']:,.0f} queries/s)")


def test_ray_engine(benchmark: Any, cluster: None, data: dict[str, Any]) -> None:
    queries: pa.Table = data["queries"]
    n = queries.num_rows
    finish(benchmark, "mindcore", RAY_GROUP, n)
    hits = benchmark.pedantic(lambda: _recall_on_ray(data, queries), rounds=2, iterations=1)
    local = mindcore.batch.recall(data["store"], queries, k=K, now_ms=NOW)
    assert hits.equals(local)  # the same table, row for row
    total = benchmark.stats.stats.median
    rows, blocks = _shape(queries)
    line = f"\nRay engine, {WORKERS} workers: {n / total:,.0f} queries/s ({total:.2f} s for {n:,} queries"
    if "local" in _measured:
        line += f"; local engine {_measured['local']:.2f} s, Ray / local {total / _measured['local']:.2f}x"
    print(line + ")")
    if "fixed" in _measured:
        block = WORKERS * (total - _measured["fixed"]) / blocks
        print(f"per block of {rows:,} queries, through Ray: {block:.3f} s a worker "
              f"({rows / block:,.0f} queries/s a worker); fixed cost of a call {_measured['fixed']:.2f} s")
    if "block" in _measured:
        print(f"of which scoring the block (the local engine): {_measured['block']:.3f} s; Ray's share "
              f"(scheduling, moving the block and its hits): {block - _measured['block']:.3f} s")
