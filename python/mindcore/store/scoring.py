"""The one scoring path: rank the rows of a cached namespace for a query vector.

Every recall in mindcore ranks rows the same way,
``similarity·sim + recency·decay(now - timestamp) + extra·extra``, with the Rust kernel
(:func:`mindcore.kernels.hybrid_topk`): :meth:`Table.search <mindcore.store.Table.search>` over
the store's vector cache, the mind over its snapshot of beliefs and reflections, long-term memory
with BM25 folded into ``extra`` and for eviction (similarity weight 0). Capabilities build the
arrays (vectors, timestamps, a per-row extra, a row mask) and a :class:`Weights`; :func:`rank`
does the scoring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mindcore.errors import InvalidInputError
from mindcore.kernels import Metric, RowShadow, TopK, hybrid_topk

__all__ = ["Weights", "rank"]


def _finite(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{name}: expected a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Weights:
    """How :func:`rank` scores a row: ``similarity·sim + recency·decay(age) + extra·extra``.

    ``sim`` is the cosine similarity (or dot product) with the query; ``decay`` is
    ``2 ** (-age / half_life_ms)`` or ``exp(-age / tau_ms)`` (give exactly one when ``recency``
    is not 0); ``extra`` is a number per row chosen by the caller (importance, confidence, a
    lexical score). A term whose weight is 0 is not computed, so its inputs may be left out.

    >>> Weights(similarity=0.7, recency=0.2, extra=0.1, half_life_ms=30 * 86_400_000).recency
    0.2
    >>> Weights(recency=0.5)
    Traceback (most recent call last):
    ...
    mindcore.errors.InvalidInputError: recency: a non-zero recency weight needs half_life_ms or tau_ms
    """

    similarity: float = 1.0
    recency: float = 0.0
    extra: float = 0.0
    half_life_ms: float | None = None
    tau_ms: float | None = None

    def __post_init__(self) -> None:
        for name in ("similarity", "recency", "extra"):
            _finite(getattr(self, name), name)
        for name in ("half_life_ms", "tau_ms"):
            value = getattr(self, name)
            if value is not None and not _finite(value, name) > 0:
                raise InvalidInputError(f"{name}: expected a positive number of milliseconds, got {value!r}")
        if self.half_life_ms is not None and self.tau_ms is not None:
            raise InvalidInputError("half_life_ms and tau_ms: give one decay, not both")
        if self.recency != 0 and self.half_life_ms is None and self.tau_ms is None:
            raise InvalidInputError("recency: a non-zero recency weight needs half_life_ms or tau_ms")


_EMPTY = TopK(np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.float32))


def rank(
    query: NDArray[np.float32],
    vectors: NDArray[np.float32],
    weights: Weights,
    *,
    k: int,
    now_ms: int | None = None,
    timestamps: NDArray[np.int64] | None = None,
    extra: NDArray[np.float32] | None = None,
    mask: NDArray[np.bool_] | None = None,
    min_score: float | None = None,
    metric: Metric = "cosine",
    inv_norms: NDArray[np.float32] | None = None,
    shadow: RowShadow | None = None,
) -> TopK:
    """The at most ``k`` best rows of ``vectors`` for ``query`` under ``weights``, best first.

    ``vectors`` is ``(n, d)`` float32, one row per row of the namespace; ``timestamps`` (unix ms,
    needed when ``weights.recency`` is not 0) and ``extra`` (needed when ``weights.extra`` is not
    0) are aligned with it, and so is ``inv_norms``, the rows' inverse norms as
    :func:`~mindcore.kernels.row_norms` computes them, when the caller keeps them (cosine: each row
    is then read for its dot product alone), and ``shadow``, their :func:`~mindcore.kernels.row_shadow`,
    when the caller keeps it (a large namespace is then searched in a fraction of the time, with the
    same result). ``mask`` excludes rows (``False``); ``min_score`` drops
    rows scoring below it; ``now_ms`` (default: now) is when ages are measured from. Ties go to the
    lower row.
    The result holds real matches only (no padding): row indices, scores and raw similarities.

    >>> vectors = np.array([[1, 0], [0, 1], [0.8, 0.6]], dtype=np.float32)
    >>> top = rank(np.array([1, 0], dtype=np.float32), vectors, Weights(similarity=0.5, extra=0.5),
    ...            k=2, extra=np.array([0.0, 1.0, 0.5], dtype=np.float32))
    >>> top.indices.tolist(), top.scores.astype(float).round(2).tolist()
    ([2, 0], [0.65, 0.5])
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k <= 0:
        raise InvalidInputError(f"k: expected a positive int, got {k!r}")
    n = int(vectors.shape[0])
    if n == 0 or (mask is not None and not mask.any()):
        return _EMPTY
    if weights.recency != 0 and timestamps is None:
        raise InvalidInputError("timestamps: required when the recency weight is not 0")
    if weights.extra != 0 and extra is None:
        raise InvalidInputError("extra: required when the extra weight is not 0")
    decays = weights.recency != 0
    top = hybrid_topk(
        query, vectors, k=min(int(k), n), metric=metric,
        w_sim=weights.similarity, w_rec=weights.recency, w_extra=weights.extra,
        timestamps=timestamps if decays else None, now_ms=now_ms,
        half_life_ms=weights.half_life_ms if decays else None, tau_ms=weights.tau_ms if decays else None,
        extra=extra if weights.extra != 0 else None,
        mask=None if mask is None or mask.all() else mask, min_score=min_score,
        inv_norms=inv_norms if metric == "cosine" else None, shadow=shadow,
    )
    keep = top.indices >= 0
    if keep.all():
        return top
    return TopK(top.indices[keep], top.scores[keep], top.similarities[keep])
