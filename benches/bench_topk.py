"""Hybrid top-10 (Mind's weighting: 0.6 similarity, 0.2 recency with tau = 30 days, 0.2 importance) over
float32 rows of dimension 384: mindcore against numpy and FAISS, single queries and a batch.

Baselines, all measured in the same run on the same data:
- ``numpy``: ``M @ q``, row norms (einsum), the same hybrid arithmetic, ``argpartition`` + a stable sort of
  the k; it does per call what mindcore does per call (no cached norms).
- ``numpy-cached-norms``: the same with the row norms computed once outside the timing (a cache a numpy
  user might keep; mindcore keeps none).
- ``mindcore-cached-norms``: mindcore given the rows' inverse norms (``row_norms(m).inv``, computed once
  outside the timing, as the store's vector cache keeps them): each row is read for its dot product alone.
- ``faiss``: ``IndexFlatIP`` over rows L2-normalised at build time, similarity only (FAISS has no hybrid
  score), so it does less work than the others.
- batch only: ``numpy-matmul``, the bare ``Q @ M.T`` (the GEMM every exact method must do).
The ``bandwidth`` groups are memory-bandwidth proxies (a numpy sum, and BLAS ``M @ q``) for reading the
GB/s columns: at these sizes every single-query method is bound by reading the matrix once.

    pytest benches/bench_topk.py --benchmark-only -q          # full sizes (release build)
    MINDCORE_BENCH_QUICK=1 pytest benches/bench_topk.py --benchmark-only -q
    MINDCORE_SIMD=avx2 pytest benches/bench_topk.py --benchmark-only -q   # force a kernel path

The CPU model and the kernels' instruction-set path (``simd_path()``) are printed once and kept in
each row's ``extra_info``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from _bench import cpu_model, forced_path, size_label
from numpy.typing import NDArray

from mindcore.kernels import RowShadow, TopK, hybrid_topk, row_norms, row_shadow, simd_path

faiss = pytest.importorskip("faiss", reason="faiss-cpu is the baseline: pip install faiss-cpu")

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
D = 384
K = 10
DAY = 86_400_000
NOW = 1_760_000_000_000
TAU = 30 * DAY
W_SIM, W_REC, W_EXTRA = 0.6, 0.2, 0.2
SINGLE_NS = [2_000, 10_000, 20_000] if QUICK else [10_000, 100_000, 1_000_000]
BATCH_Q, BATCH_N = (64, 10_000) if QUICK else (1_000, 100_000)
F32 = np.float32



@dataclass
class Data:
    matrix: NDArray[np.float32]
    timestamps: NDArray[np.int64]
    extra: NDArray[np.float32]
    queries: NDArray[np.float32]
    norms: NDArray[np.float32]
    inv_norms: NDArray[np.float32]  # row_norms(matrix).inv, as the store's cache keeps it
    shadow: RowShadow  # row_shadow(matrix), as the store's cache keeps it
    index: Any  # faiss.IndexFlatIP over the L2-normalised rows


_cache: dict[tuple[int, int], Data] = {}
_cache_printed: list[bool] = []


def data(n: int, nq: int) -> Data:
    """Random rows, ages up to a year, importances in [0, 1); one data set kept at a time (1M rows is 1.5 GB)."""
    key = (n, nq)
    if key not in _cache:
        _cache.clear()
        rng = np.random.default_rng(n)
        matrix = rng.standard_normal((n, D), dtype=F32)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        index = faiss.IndexFlatIP(D)
        index.add(matrix / norms[:, None])
        _cache[key] = Data(
            matrix=matrix,
            timestamps=NOW - rng.integers(0, 365 * DAY, size=n),
            extra=rng.random(n, dtype=F32),
            queries=rng.standard_normal((nq, D), dtype=F32),
            norms=norms,
            inv_norms=row_norms(matrix).inv,
            shadow=row_shadow(matrix),
            index=index,
        )
        if not _cache_printed:
            print(f"\nCPU: {cpu_model()}, {os.cpu_count()} cores; kernel path: {simd_path()}")
            _cache_printed.append(True)
    return _cache[key]


def mindcore_full(dat: Data, q: NDArray[np.float32], cached_norms: bool = False, shadow: bool = False) -> TopK:
    return hybrid_topk(
        q, dat.matrix, k=K, w_sim=W_SIM, w_rec=W_REC, w_extra=W_EXTRA,
        timestamps=dat.timestamps, now_ms=NOW, tau_ms=TAU, extra=dat.extra,
        inv_norms=dat.inv_norms if cached_norms else None, shadow=dat.shadow if shadow else None,
    )


def mindcore_topk(dat: Data, q: NDArray[np.float32], cached_norms: bool = False) -> NDArray[np.int64]:
    return mindcore_full(dat, q, cached_norms).indices


def _bias(dat: Data) -> NDArray[np.float64]:
    return W_REC * np.exp(-np.maximum(NOW - dat.timestamps, 0) / TAU) + W_EXTRA * dat.extra


def _best_k(scores: NDArray[Any]) -> NDArray[np.int64]:
    """Top K of each row of `scores` (1-D or 2-D), best first, ties by lower index."""
    part = np.argpartition(scores, -K, axis=-1)[..., -K:]
    vals = np.take_along_axis(scores, part, axis=-1)
    order = np.lexsort((part, -vals), axis=-1)
    return np.take_along_axis(part, order, axis=-1)


def numpy_topk(dat: Data, q: NDArray[np.float32], norms: NDArray[np.float32] | None = None) -> NDArray[np.int64]:
    m = dat.matrix
    dots = m @ q
    if norms is None:
        norms = np.sqrt(np.einsum("ij,ij->i", m, m))
    denom = norms * np.linalg.norm(q)
    sim = np.divide(dots, denom, out=np.zeros_like(dots), where=denom > 0)
    return _best_k(W_SIM * sim + _bias(dat))


def numpy_batch(dat: Data, queries: NDArray[np.float32]) -> NDArray[np.int64]:
    m = dat.matrix
    s = queries @ m.T  # (q, n): 400 MB at full size
    norms = np.sqrt(np.einsum("ij,ij->i", m, m))
    inv_r = np.divide(1, norms, out=np.zeros_like(norms), where=norms > 0)
    qn = np.linalg.norm(queries, axis=1)
    inv_q = np.divide(1, qn, out=np.zeros_like(qn), where=qn > 0)
    s *= inv_q[:, None]
    s *= (W_SIM * inv_r)[None, :]
    s += _bias(dat).astype(F32)[None, :]
    return _best_k(s)


def faiss_topk(dat: Data, queries: NDArray[np.float32]) -> NDArray[np.int64]:
    qn = queries / np.linalg.norm(queries, axis=-1, keepdims=True)
    _, idx = dat.index.search(np.atleast_2d(qn), K)
    return np.asarray(idx, dtype=np.int64)


def _rounds(n_floats: int) -> int:
    """Enough rounds for a stable median while the whole file stays within a few minutes."""
    return int(np.clip(3e9 / max(n_floats, 1), 5, 300))


def _same_hits(got: NDArray[np.int64], want: NDArray[np.int64], dat: Data, q: NDArray[np.float32]) -> None:
    """Equal top-k up to float noise: the same scores (recomputed in float64), rank by rank."""
    ref = _exact_scores(dat, q)
    np.testing.assert_allclose(ref[got], ref[want], atol=1e-5)


def _exact_scores(dat: Data, q: NDArray[np.float32]) -> NDArray[np.float64]:
    m64 = dat.matrix.astype(np.float64)
    sim = (m64 @ q.astype(np.float64)) / (dat.norms.astype(np.float64) * np.linalg.norm(q.astype(np.float64)))
    return W_SIM * sim + _bias(dat)


# --- single query ----------------------------------------------------------------------------------


SINGLE_IMPLS: dict[str, Callable[[Data, NDArray[np.float32]], NDArray[np.int64]]] = {
    "mindcore": mindcore_topk,
    "mindcore-cached-norms": lambda dat, q: mindcore_topk(dat, q, True),
    # The int8 shadow's first pass, then the few rows it cannot rule out exactly (as the store searches).
    "mindcore-shadow": lambda dat, q: mindcore_full(dat, q, True, True).indices,
    "numpy": numpy_topk,
    "numpy-cached-norms": lambda dat, q: numpy_topk(dat, q, dat.norms),
    "faiss": lambda dat, q: faiss_topk(dat, q)[0],
}


BANDWIDTH_IMPLS = ("numpy-sum", "numpy-gemv")


# One parametrisation, ordered by n, so each data set is built once (1M rows is 1.5 GB).
@pytest.mark.parametrize(("n", "impl"), [(n, i) for n in SINGLE_NS for i in [*SINGLE_IMPLS, *BANDWIDTH_IMPLS]])
def test_single(benchmark: Any, n: int, impl: str) -> None:
    dat = data(n, 1)
    q = dat.queries[0]
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["bytes"] = dat.matrix.nbytes
    benchmark.extra_info["dispatch"] = simd_path()
    if impl in BANDWIDTH_IMPLS:
        m = dat.matrix
        benchmark.group = f"topk: bandwidth n={size_label(n)} d={D}{forced_path()}"
        benchmark.extra_info["note"] = "one read of the matrix, " + ("1 thread" if impl == "numpy-sum" else "BLAS")
        proxy: Callable[[], Any] = m.sum if impl == "numpy-sum" else (lambda: m @ q)
        benchmark.pedantic(proxy, rounds=_rounds(n * D), warmup_rounds=2)
        return
    fn = SINGLE_IMPLS[impl]
    got = fn(dat, q)
    if impl == "faiss":
        # Similarity only: compare with mindcore's cosine-only top-k.
        want = hybrid_topk(q, dat.matrix, k=K).indices
        cos = dat.matrix.astype(np.float64) @ q / (dat.norms * np.linalg.norm(q))
        np.testing.assert_allclose(cos[got], cos[want], atol=1e-5)
        benchmark.extra_info["note"] = "similarity only; rows normalised at build time"
    elif impl == "mindcore-shadow":  # the same result as the plain scan, bit for bit
        plain, shadowed = mindcore_full(dat, q, True), mindcore_full(dat, q, True, True)
        for a, b in ((plain.indices, shadowed.indices), (plain.scores, shadowed.scores),
                     (plain.similarities, shadowed.similarities)):
            assert a.tobytes() == b.tobytes()
        benchmark.extra_info["note"] = "int8 first pass + exact rescoring; same result bit for bit"
    else:
        _same_hits(got, mindcore_topk(dat, q), dat, q)
    benchmark.group = f"topk: single n={size_label(n)} d={D}{forced_path()}"
    benchmark.pedantic(fn, args=(dat, q), rounds=_rounds(n * D), warmup_rounds=2)


# --- batch -----------------------------------------------------------------------------------------


BATCH_IMPLS: dict[str, Callable[[Data, NDArray[np.float32]], Any]] = {
    "mindcore": mindcore_topk,
    "mindcore-cached-norms": lambda dat, qs: mindcore_topk(dat, qs, True),
    "numpy": numpy_batch,
    "numpy-matmul": lambda dat, qs: qs @ dat.matrix.T,
    "faiss": faiss_topk,
}


@pytest.mark.parametrize("impl", list(BATCH_IMPLS))
def test_batch(benchmark: Any, impl: str) -> None:
    dat = data(BATCH_N, BATCH_Q)
    qs = dat.queries
    fn = BATCH_IMPLS[impl]
    benchmark.extra_info["dispatch"] = simd_path()
    if impl in ("mindcore", "mindcore-cached-norms", "numpy"):
        got = fn(dat, qs)
        assert got.shape == (BATCH_Q, K)
        want = mindcore_topk(dat, qs[:8]) if impl == "numpy" else numpy_batch(dat, qs[:8])
        for i in range(8):
            _same_hits(got[i], want[i], dat, qs[i])
    elif impl == "faiss":
        benchmark.extra_info["note"] = "similarity only; rows normalised at build time"
        got = fn(dat, qs[:8])
        for i in range(8):
            want = hybrid_topk(qs[i], dat.matrix, k=K).indices
            cos = dat.matrix.astype(np.float64) @ qs[i] / (dat.norms * np.linalg.norm(qs[i]))
            np.testing.assert_allclose(cos[got[i]], cos[want], atol=1e-5)
    else:
        benchmark.extra_info["note"] = "the bare GEMM, no top-k"
    benchmark.group = f"topk: batch q={BATCH_Q} n={size_label(BATCH_N)} d={D}{forced_path()}"
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["items"] = BATCH_Q * BATCH_N
    benchmark.pedantic(fn, args=(dat, qs), rounds=5 if QUICK else 4, warmup_rounds=1)
