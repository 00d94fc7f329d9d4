"""Hybrid scoring with top-k: similarity, recency decay and a per-row extra term in one pass."""

from __future__ import annotations

import time
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

import mindcore._core as _core
from mindcore.errors import KernelTypeError

__all__ = ["SHADOW_MIN_ROWS", "Metric", "RowShadow", "SimdPath", "TopK", "hybrid_topk", "row_shadow", "simd_path"]

Metric = Literal["cosine", "dot"]
SimdPath = Literal["avx512", "avx2", "neon", "portable"]


class TopK(NamedTuple):
    """The best rows, best first (ties broken by the lower row index).

    For a 1-D query each field is 1-D with at most `k` entries. For a ``(q, d)`` batch each field
    is ``(q, min(k, n))`` for an ``(n, d)`` matrix (no query can have more hits, so a huge `k`
    never allocates a huge result); rows with fewer qualifying matches are padded with index
    ``-1``, score ``-inf`` and similarity ``nan``.
    """

    indices: NDArray[np.int64]
    """Row numbers into `matrix`."""
    scores: NDArray[np.float32]
    """The hybrid scores."""
    similarities: NDArray[np.float32]
    """The similarity part alone (cosine or dot), before weighting."""


# Matches rust/kernels/src/scoring/shadow.rs MIN_ROWS: below it a shadow is not used (the plain
# scan is as fast), so callers need not build one.
SHADOW_MIN_ROWS = 8192
"""Row count from which :func:`hybrid_topk` uses a `shadow` (below it the plain scan is as fast)."""


class RowShadow(NamedTuple):
    """An int8 copy of a float32 matrix with per-row error bounds (see :func:`row_shadow`)."""

    codes: NDArray[np.int8]
    """``(n, d)`` int8: row ``r`` is approximately ``codes[r] * meta[r, 0]``."""
    meta: NDArray[np.float32]
    """``(n, 3)`` float32 per row: the scale, an upper bound on the rounding error's norm, and an
    upper bound on the row's norm."""


def row_shadow(matrix: NDArray[np.float32]) -> RowShadow:
    """The int8 shadow of `matrix` that makes a single-query :func:`hybrid_topk` over it faster.

    A quarter of the matrix's bytes: one query reads the shadow to rule out the rows that cannot
    make the top k (each row's score is known to within a bound), then scores the few left exactly,
    so the result is the plain scan's bit for bit. Compute it once per stored matrix (and for
    appended rows only, concatenated: each row's shadow depends on that row alone).

    Raises :class:`~mindcore.errors.KernelError` when a row holds NaN or inf.

    >>> m = np.array([[3, 4], [0, 0]], dtype=np.float32)
    >>> sh = row_shadow(m)
    >>> sh.codes.tolist(), sh.meta[:, 0].astype(float).round(4).tolist()
    ([[95, 127], [0, 0]], [0.0315, 0.0])
    """
    codes, meta = _core._row_shadow(matrix)
    return RowShadow(codes, meta)


def _int(value: int, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise KernelTypeError(f"{arg}: expected int, got {type(value).__name__}")
    return int(value)


def hybrid_topk(
    query: NDArray[np.float32],
    matrix: NDArray[np.float32],
    *,
    k: int,
    metric: Metric = "cosine",
    w_sim: float = 1.0,
    w_rec: float = 0.0,
    w_extra: float = 0.0,
    timestamps: NDArray[np.int64] | None = None,
    now_ms: int | None = None,
    half_life_ms: float | None = None,
    tau_ms: float | None = None,
    extra: NDArray[np.float32] | None = None,
    mask: NDArray[np.bool_] | None = None,
    min_score: float | None = None,
    inv_norms: NDArray[np.float32] | None = None,
    normalized: bool = False,
    shadow: RowShadow | None = None,
) -> TopK:
    """The `k` best rows of `matrix` for `query` under a hybrid score.

    ``score = w_sim * sim + w_rec * decay(now_ms - timestamps) + w_extra * extra``, where `sim` is
    the cosine similarity (a zero vector has similarity 0) or, with ``metric="dot"``, the dot product
    (for rows that are already L2-normalised). `decay` is ``2 ** (-age / half_life_ms)`` or
    ``exp(-age / tau_ms)``; ages of future timestamps count as 0.

    Runs in Rust with the GIL released: one query in a single fused pass over `matrix` (in
    parallel over row chunks), a batch through a blocked multi-threaded matrix product.

    Parameters
    ----------
    query
        float32, ``(d,)`` for one query or ``(q, d)`` for a batch.
    matrix
        float32 ``(n, d)``, C-contiguous (read without copying). A row holding NaN or inf is a
        :class:`~mindcore.errors.KernelError` naming it (rows excluded by `mask` are not read).
    k
        How many rows to return per query, ``>= 1``.
    metric
        ``"cosine"`` or ``"dot"``.
    w_sim, w_rec, w_extra
        Weights of the three terms (finite). Mind uses ``(0.6, 0.2, 0.2)`` with ``tau_ms`` of 30
        days; long-term memory ``(0.7, 0.2, 0.1)`` with ``half_life_ms`` of 30 days.
    timestamps
        int64 unix milliseconds per row; required when ``w_rec != 0``.
    now_ms
        The time ages are measured from; defaults to now.
    half_life_ms, tau_ms
        The decay's half-life or time constant (ms, > 0). Exactly one is required when
        ``w_rec != 0``; giving both is an error.
    extra
        float32 per row (importance, confidence); required when ``w_extra != 0``.
    mask
        bool per row; ``False`` excludes the row.
    min_score
        Only rows scoring at least this (inclusive) are returned.
    inv_norms
        float32 ``1 / norm`` per row (0 for a zero row), kept by the caller (the ``inv`` of
        :func:`row_norms`), so a cosine query reads each row for its dot product alone. Cosine only.
    normalized
        ``True`` when every row has norm 1 (or is zero), as the bundled embedders produce: the
        cosine is the dot product scaled by the query's norm. Cosine only; not with `inv_norms`.
    shadow
        :func:`row_shadow` of exactly this `matrix` (rows changed since it was made make the result
        wrong). A single query over at least :data:`SHADOW_MIN_ROWS` rows then reads the shadow
        first and only the rows that can make the top k: the same result, bit for bit, in a fraction
        of the time. Ignored for a batch of queries and smaller matrices.

    Examples
    --------
    >>> m = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    >>> top = hybrid_topk(np.array([1, 0.2], dtype=np.float32), m, k=2)
    >>> top.indices.tolist(), top.scores.astype(float).round(3).tolist()
    ([0, 2], [0.981, 0.832])
    >>> day = 86_400_000
    >>> top = hybrid_topk(
    ...     np.array([1, 0], dtype=np.float32), m, k=3, w_sim=0.7, w_rec=0.2, w_extra=0.1,
    ...     timestamps=np.array([0, 30 * day, 60 * day]), now_ms=60 * day, half_life_ms=30 * day,
    ...     extra=np.array([0.0, 1.0, 0.5], dtype=np.float32))
    >>> top.indices.tolist(), top.scores.astype(float).round(3).tolist()
    ([0, 2, 1], [0.75, 0.745, 0.2])
    """
    if now_ms is None:
        now_ms = time.time_ns() // 1_000_000
    k = _int(k, "k")
    indices, scores, similarities = _core._hybrid_topk(
        query,
        matrix,
        k=k,
        metric=metric,
        w_sim=w_sim,
        w_rec=w_rec,
        w_extra=w_extra,
        timestamps=timestamps,
        now_ms=_int(now_ms, "now_ms"),
        half_life_ms=half_life_ms,
        tau_ms=tau_ms,
        extra=extra,
        mask=mask,
        min_score=min_score,
        inv_norms=inv_norms,
        normalized=bool(normalized),
        shadow=shadow,
    )
    return TopK(indices, scores, similarities)


def simd_path() -> SimdPath:
    """The instruction-set path the scoring kernels take in this process.

    The best the CPU supports (``"avx512"``, ``"avx2"`` with FMA, ``"neon"`` on 64-bit ARM, else
    ``"portable"``), capped by the ``MINDCORE_SIMD`` environment variable when it names one (read
    once, on first use), e.g. ``MINDCORE_SIMD=avx2`` to compare paths on one machine, or
    ``MINDCORE_SIMD=portable`` on any CPU. Each path sums in its own fixed order: results agree
    bit for bit across kernels within a process, and to float rounding across paths.

    >>> simd_path() in ("avx512", "avx2", "neon", "portable")
    True
    """
    path: SimdPath = _core._simd_path()
    return path
