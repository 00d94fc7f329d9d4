"""What erasing one row for good costs: ``Table.delete(..., purge=True)`` against today's delete
followed by a compaction (which leaves the text in old versions for ``cleanup_grace``, and in the
data file while too few of its rows are deleted).

* ``store: forget one row of n=...``: a table of n rows (384-d vectors, one namespace, written in
  one commit so they share a data file, plus 100 rows of another namespace), each round deleting
  one more of the n rows. ``delete+compact`` is the baseline; ``delete purge=True`` rewrites the
  data file holding the row, compacts, updates the indexes and deletes every old version.

    pytest benches/bench_purge.py --benchmark-only -q
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
SIZES = [1_000] if QUICK else [1_000, 10_000]
NS = "user/alice"


class _Dims:
    dim = DIM
    model_id = "bench-purge"

    def embed(self, texts: Any) -> np.ndarray:
        raise NotImplementedError


def _table(tmp: Path, n: int) -> Table:
    rng = np.random.default_rng(n)
    vecs = rng.standard_normal((n + 100, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = mindcore.open(tmp, embedder=_Dims(), config=StoreConfig(compact_every=0))
    t = store.table("memories", {"text": pa.string()}, vectors=True)
    t.upsert(NS, [{"id": f"m{i}", "text": f"memory number {i} of alice", "vector": vecs[i]} for i in range(n)])
    t.upsert("user/bob", [{"id": f"o{i}", "text": f"memory {i} of bob", "vector": vecs[n + i]} for i in range(100)])
    t.compact()
    return t


@pytest.fixture(params=SIZES, ids=size_label)
def table(request: pytest.FixtureRequest) -> Iterator[Table]:
    tmp = Path(tempfile.mkdtemp(prefix="bench_purge_"))
    yield _table(tmp, int(request.param))
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("impl", ["delete+compact", "delete purge=True"])
def test_forget_one_row(benchmark: Any, table: Table, impl: str) -> None:
    n = table.count(NS)
    ids = (f"m{i}" for i in itertools.count())

    def forget() -> None:
        victim = next(ids)
        if impl == "delete+compact":
            table.delete(NS, ids=[victim])
            table.compact()
        else:
            table.delete(NS, ids=[victim], purge=True)

    rounds = 5 if QUICK else 10
    finish(benchmark, impl, f"store: forget one row of n={size_label(n)}")
    benchmark.pedantic(forget, rounds=rounds, iterations=1, warmup_rounds=1)
    assert table.count(NS) == n - rounds - 1 and table.count("user/bob") == 100
