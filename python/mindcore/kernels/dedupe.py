"""Near-duplicate search: new vectors against a store, and within one batch."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import mindcore._core as _core
from mindcore.kernels.scoring import Metric

__all__ = ["dedupe_within", "near_duplicates"]


def near_duplicates(
    new: NDArray[np.float32],
    existing: NDArray[np.float32],
    *,
    threshold: float,
    metric: Metric = "cosine",
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """For each row of `new`, its best match in `existing`.

    Returns ``(index, similarity)``, both of length ``len(new)``: `index` is the row of `existing`
    with the highest similarity (the lower index on ties) when that similarity is
    ``>= threshold``, else ``-1``; `similarity` is that best similarity either way (``nan`` when
    `existing` is empty). Uses the same similarity as :func:`dedupe_within`, so a row that
    :func:`dedupe_within` drops always finds its kept twin here at the same threshold.

    Parameters
    ----------
    new, existing
        float32 ``(m, d)`` and ``(n, d)``, C-contiguous, finite.
    threshold
        Inclusive similarity threshold.
    metric
        ``"cosine"`` (zero vectors have similarity 0) or ``"dot"``.

    Examples
    --------
    >>> store = np.array([[1, 0], [0, 1]], dtype=np.float32)
    >>> idx, sim = near_duplicates(np.array([[2, 0.1], [1, 1]], dtype=np.float32), store, threshold=0.95)
    >>> idx.tolist(), sim.astype(float).round(3).tolist()
    ([0, -1], [0.999, 0.707])
    """
    return _core._near_duplicates(new, existing, threshold=threshold, metric=metric)


def dedupe_within(
    vectors: NDArray[np.float32], *, threshold: float, metric: Metric = "cosine"
) -> NDArray[np.bool_]:
    """Greedy keep-mask: the first row is kept, and a later row is dropped when its similarity
    to any *kept* earlier row is ``>= threshold``.

    Parameters
    ----------
    vectors
        float32 ``(n, d)``, C-contiguous, finite.
    threshold
        Inclusive similarity threshold.
    metric
        ``"cosine"`` (zero vectors have similarity 0) or ``"dot"``.

    Examples
    --------
    >>> v = np.array([[1, 0], [0.99, 0.1], [0, 1], [0, 2]], dtype=np.float32)
    >>> dedupe_within(v, threshold=0.95).tolist()
    [True, False, True, False]
    """
    return _core._dedupe_within(vectors, threshold=threshold, metric=metric)
