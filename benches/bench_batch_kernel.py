"""Grouped recall (``mindcore.kernels.grouped_recall``): long-term memory's ranking for many users at once,
1,000 groups x 500 rows x 384 d, 10 queries per group (10,000 queries), lexical fusion on.

Baseline, measured in the same run on the same data: ``python-loop``, what recalling user by user costs
without the kernel: per group a ``BM25Index`` over the stored terms (a batch job has none cached), then per
query ``index.scores``, the numpy extra term and ``mindcore.store.scoring.rank``, as long-term memory does
for one query. Both give the same hits, bit for bit (checked on a sample before timing).

    pytest benches/bench_batch_kernel.py --benchmark-only -q -s       # full size (release build, ~3 GB)
    MINDCORE_BENCH_QUICK=1 pytest benches/bench_batch_kernel.py --benchmark-only -q -s
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from _bench import cpu_model, finish, size_label
from numpy.typing import NDArray

from mindcore.kernels import BM25Index, TopK, grouped_recall, simd_path
from mindcore.store.scoring import Weights, rank

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
GROUPS = 100 if QUICK else 1_000
ROWS = 500
D = 384
PER_GROUP = 10
K = 10
DAY = 86_400_000
NOW = 1_760_000_000_000
W = {"w_sim": 0.7, "w_rec": 0.2, "w_importance": 0.1, "w_lexical": 1.0, "half_life_ms": 30.0 * DAY}
FLOOR = 2.0
VOCAB = [f"w{i}" for i in range(3_000)]


@dataclass
class Data:
    queries: NDArray[np.float32]
    query_group: NDArray[np.int64]
    query_texts: list[str]
    matrix: NDArray[np.float32]
    offsets: NDArray[np.int64]
    timestamps: NDArray[np.int64]
    importance: NDArray[np.float32]
    terms: list[str]


_data: list[Data] = []


def data() -> Data:
    """Random rows and terms (4-12 words of a 3,000-word vocabulary), ages up to a year; built once."""
    if not _data:
        rng = np.random.default_rng(7)
        n, nq = GROUPS * ROWS, GROUPS * PER_GROUP
        words = np.array(VOCAB)
        lengths = rng.integers(4, 13, n)
        picks = words[rng.integers(0, len(VOCAB), int(lengths.sum()))]
        ends = np.cumsum(lengths)
        terms = [" ".join(picks[e - m:e]) for e, m in zip(ends.tolist(), lengths.tolist(), strict=True)]
        texts = [" ".join(words[rng.integers(0, len(VOCAB), 4)]) + " the what" for _ in range(nq)]
        _data.append(Data(
            queries=rng.standard_normal((nq, D), dtype=np.float32),
            query_group=np.repeat(np.arange(GROUPS, dtype=np.int64), PER_GROUP),
            query_texts=texts,
            matrix=rng.standard_normal((n, D), dtype=np.float32),
            offsets=np.arange(0, n + 1, ROWS, dtype=np.int64),
            timestamps=NOW - rng.integers(0, 365 * DAY, n),
            importance=rng.random(n, dtype=np.float32),
            terms=terms,
        ))
        print(f"\nCPU: {cpu_model()}, {os.cpu_count()} cores; scan dispatch: {simd_path()}")
    return _data[0]


def kernel(d: Data, terms: Any) -> TopK:
    return grouped_recall(
        d.queries, d.query_group, d.matrix, d.offsets, timestamps=d.timestamps, importance=d.importance,
        query_texts=d.query_texts, terms=terms, k=K, now_ms=NOW, lexical_floor=FLOOR, **W,
    )


def python_loop(d: Data, groups: int = GROUPS) -> list[NDArray[np.int64]]:
    """Long-term memory's per-query computation, user by user."""
    out = []
    weights = Weights(similarity=W["w_sim"], recency=W["w_rec"], extra=1.0, half_life_ms=W["half_life_ms"])
    for g in range(groups):
        lo, hi = int(d.offsets[g]), int(d.offsets[g + 1])
        index = BM25Index(stem=True, stop_words="english")
        index.add(d.terms[lo:hi], analyzed=True)
        matrix, ts, importance = d.matrix[lo:hi], d.timestamps[lo:hi], d.importance[lo:hi]
        for i in range(g * PER_GROUP, (g + 1) * PER_GROUP):
            lexical = index.scores(d.query_texts[i])
            scale = max(float(lexical.max()), FLOOR)
            extra = W["w_importance"] * importance + (W["w_lexical"] / scale) * lexical
            top = rank(d.queries[i], matrix, weights, k=K, now_ms=NOW, timestamps=ts,
                       extra=np.ascontiguousarray(extra, dtype=np.float32))
            out.append(lo + top.indices)
    return out


@pytest.mark.parametrize("impl", ["mindcore", "mindcore-arrow", "python-loop"])
def test_grouped_recall(benchmark: Any, impl: str) -> None:
    d = data()
    nq = len(d.query_texts)
    group = f"batch recall: {GROUPS} groups x {ROWS} rows d={D}, {size_label(nq)} queries"
    benchmark.extra_info["cpu"] = cpu_model()
    benchmark.extra_info["dispatch"] = simd_path()
    if impl == "python-loop":
        sample = python_loop(d, groups=3)
        want = kernel(d, d.terms).indices[: 3 * PER_GROUP]
        assert [s.tolist() for s in sample] == want.tolist()
        finish(benchmark, impl, group, nq)
        benchmark.pedantic(python_loop, args=(d,), rounds=1, warmup_rounds=0)
        return
    terms: Any = d.terms
    if impl == "mindcore-arrow":
        import pyarrow as pa

        terms = pa.array(d.terms, pa.large_string())  # the store's column, read in place
        benchmark.extra_info["note"] = "terms as an Arrow large_string array"
    else:
        benchmark.extra_info["note"] = "terms as a list[str] (converted to Arrow each call)"
    finish(benchmark, impl, group, nq)
    benchmark.pedantic(kernel, args=(d, terms), rounds=3, warmup_rounds=1)
