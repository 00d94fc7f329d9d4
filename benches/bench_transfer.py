"""Moving a store: rows per second of ``mindcore export`` and ``mindcore import`` (run in-process
through the command's ``main``) against ``mindcore.batch.remember`` storing the same rows (what
``mindcore remember-bulk`` runs), same data, same run.

* ``transfer: U users x R rows``: U users (2,000; ``MINDCORE_BENCH_TRANSFER_USERS``) with R
  long-term memories each (10), 384-d vectors. ``mindcore-export`` writes the store to a JSONL file
  with its vectors; ``mindcore-import`` reads that file into a new store (every row through the
  secret policy, one commit per 5,000 rows); ``batch-remember`` stores the same texts with vectors
  looked up, not computed (embedding is excluded everywhere). items = rows; ``rows_per_s`` in
  extra_info.

    pytest benches/bench_transfer.py --benchmark-only -q
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _bench import LookupEmbedder, cpu_model, finish, size_label

import mindcore
from mindcore.batch import remember
from mindcore.cli import main as mindcore_cli
from mindcore.kernels import simd_path

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
USERS = int(os.environ.get("MINDCORE_BENCH_TRANSFER_USERS", "200" if QUICK else "2000"))
ROWS = 10
GROUP = f"transfer: {size_label(USERS)} users x {ROWS} rows"


@pytest.fixture(scope="module")
def data() -> Iterator[dict[str, Any]]:
    users = [f"user-{u:05d}" for u in range(USERS)]
    texts = [f"{u} fact {i}: likes item {i * 7919 % 1000}" for u in users for i in range(ROWS)]
    rows = pa.table({"user_id": [u for u in users for _ in range(ROWS)], "text": texts})
    emb = LookupEmbedder(texts)
    print(f"\ncpu: {cpu_model()}; kernels: {simd_path()} path")
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp:
        source = Path(tmp) / "source"
        remember(mindcore.open(source), rows, embedder=emb, chunk_size=5_000)
        yield {"rows": rows, "embedder": emb, "source": source, "tmp": Path(tmp)}


def _rows_per_s(benchmark: Any) -> int:
    return round(USERS * ROWS / benchmark.stats.stats.median)


def test_batch_remember(benchmark: Any, data: dict[str, Any]) -> None:
    target = data["tmp"] / "bulk"

    def setup() -> tuple[tuple[mindcore.Store], dict[str, Any]]:
        shutil.rmtree(target, ignore_errors=True)
        return (mindcore.open(target),), {}

    def bulk(store: mindcore.Store) -> Any:
        return remember(store, data["rows"], embedder=data["embedder"], chunk_size=5_000)

    finish(benchmark, "batch-remember", GROUP, USERS * ROWS)
    report = benchmark.pedantic(bulk, setup=setup, rounds=3)
    assert report.stored == USERS * ROWS
    benchmark.extra_info["rows_per_s"] = _rows_per_s(benchmark)


def test_export(benchmark: Any, data: dict[str, Any]) -> None:
    out = data["tmp"] / "export.jsonl"

    def export() -> int:
        return mindcore_cli(["export", "--store", str(data["source"]), str(out)])

    finish(benchmark, "mindcore-export", GROUP, USERS * ROWS)
    assert benchmark.pedantic(export, rounds=3) == 0
    benchmark.extra_info["rows_per_s"] = _rows_per_s(benchmark)
    data["export"] = out


def test_import(benchmark: Any, data: dict[str, Any]) -> None:
    source = data.get("export")
    if source is None:  # run alone: export once, untimed
        source = data["tmp"] / "export.jsonl"
        assert mindcore_cli(["export", "--store", str(data["source"]), str(source)]) == 0
    target = data["tmp"] / "imported"

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        shutil.rmtree(target, ignore_errors=True)
        return (), {}

    def load() -> int:
        return mindcore_cli(["import", "--store", str(target), str(source)])

    finish(benchmark, "mindcore-import", GROUP, USERS * ROWS)
    assert benchmark.pedantic(load, setup=setup, rounds=3) == 0
    benchmark.extra_info["rows_per_s"] = _rows_per_s(benchmark)
    imported = mindcore.open(target, read_only=True).open_table("ltm_memories")
    assert imported.count(mindcore.store.ALL_NAMESPACES) == USERS * ROWS
