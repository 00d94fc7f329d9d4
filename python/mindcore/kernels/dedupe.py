"""Near-duplicate search: new vectors against a store, and within one batch."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

import mindcore._core as _core
from mindcore.kernels.scoring import Metric

__all__ = ["RowNorms", "dedupe_within", "near_duplicates", "near_duplicates_pruned", "row_norms"]

#: Values of each stored row that :func:`near_duplicates_pruned` reads before deciding to read the rest.
#: With MiniLM embeddings of LoCoMo turns at the 0.92 threshold, 0.1% of rows are then read in full
#: (4% with 64 values, 32% with 48).
DEFAULT_HEAD = 96


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


class RowNorms(NamedTuple):
    """What :func:`near_duplicates_pruned` needs to know of each stored row (see :func:`row_norms`)."""

    head: int
    inv: NDArray[np.float32]  # 1/‖row‖, as the cosine uses it (0 for a zero row)
    tail: NDArray[np.float32]  # ‖row[head:]‖, rounded up


def row_norms(existing: NDArray[np.float32], *, head: int = DEFAULT_HEAD) -> RowNorms:
    """The per-row norms of `existing` that :func:`near_duplicates_pruned` uses. Compute them once
    per stored matrix (and for appended rows only, concatenated, as the store's cache does).

    Raises ``ValueError`` for a row with a NaN/inf or whose squared norm overflows float32, as
    :func:`near_duplicates` does.
    """
    inv, tail = _core._row_norms(existing, head=head)
    return RowNorms(head, inv, tail)


def near_duplicates_pruned(
    new: NDArray[np.float32], existing: NDArray[np.float32], norms: RowNorms, *, threshold: float
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """:func:`near_duplicates` with the cosine, when only matches matter: the same ``index`` for
    every row of `new`, and the similarity of the match (``nan`` when there is none).

    A stored row is read past its first ``norms.head`` values only when the Cauchy-Schwarz
    bound on the rest says it could reach `threshold`, so a scan of mostly unrelated rows reads a
    fraction of `existing`; every row that can match is compared exactly.

    Examples
    --------
    >>> store = np.array([[1, 0], [0, 1]], dtype=np.float32)
    >>> new = np.array([[2, 0.1], [1, 1]], dtype=np.float32)
    >>> idx, sim = near_duplicates_pruned(new, store, row_norms(store, head=1), threshold=0.95)
    >>> idx.tolist(), sim.astype(float).round(3).tolist()
    ([0, -1], [0.999, nan])
    """
    return _core._near_duplicates_pruned(new, existing, norms.inv, norms.tail, head=norms.head, threshold=threshold)


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
