"""Recall's neighbour expansion: a hit in a thread (the conversation a memory came from) lends a
decayed share of its score to the memories next to it there, so the turns around an answer are
recalled with it (:class:`~mindcore.ltm.RecallOptions`).

Both recall paths (:meth:`LongTermMemory.recall` and :func:`mindcore.batch.recall`) apply it to
the top ``k`` their kernel returned, without scoring the scope again: a memory outside those ``k``
scores at most the ``k``-th score, so one that is lent more than that scores exactly what it is
lent, and one lent less cannot enter the top ``k``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["cosines", "has_threads", "lent_scores", "with_neighbours"]

_LAST = np.iinfo(np.int64).max  # a memory without a position sorts after those with one
# The memory before a hit is lent a hair less than the one after it, so the two never tie (ties
# would go by memory id, which says nothing): what follows a hit (an answer) comes first.
_BEFORE = 1.0 - 1e-6


def cosines(vector: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The cosine of ``vector`` with each of ``rows`` (0 for a zero row)."""
    norms = np.linalg.norm(rows, axis=1) * float(np.linalg.norm(vector))
    dots = rows @ vector
    return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0).astype(np.float32)


def has_threads(rows: pa.Table) -> bool:
    """Whether any of ``rows`` has a thread (a count Arrow keeps: no scan)."""
    if "thread" not in rows.column_names:
        return False
    column = rows.column("thread")
    return bool(column.null_count < len(column))


def lent_scores(rows: pa.Table, hits: np.ndarray, scores: np.ndarray, radius: int, decay: float) -> dict[int, float]:
    """Row -> the best score a hit lends it: each hit with a thread lends ``decay ** d`` times its
    score (when positive) to the rows ``d <= radius`` places after it in its thread, ordered by
    position, then creation, then row, and a hair less to those before it. Only the hits'
    threads are read and sorted, so the cost follows their size, not the scope's."""
    if not has_threads(rows) or not len(hits):
        return {}
    thread: Any = rows.column("thread")
    hit_threads: list[str | None] = thread.take(pa.array(hits, pa.int64())).to_pylist()
    wanted = sorted({t for t in hit_threads if t is not None})
    if not wanted:
        return {}
    member_mask: Any = pc.is_in(thread, value_set=pa.array(wanted, pa.string()))
    members: list[int] = np.flatnonzero(np.asarray(pc.fill_null(member_mask, False).to_numpy(), dtype=bool)).tolist()
    take = pa.array(members, pa.int64())
    threads: list[str] = thread.take(take).to_pylist()
    positions: list[int | None] = rows.column("position").take(take).to_pylist()
    created: list[int | None] = rows.column("created_at").take(take).to_pylist()
    ordered = sorted(zip(threads, [_LAST if p is None else p for p in positions], [c or 0 for c in created],
                         members, strict=True))
    place = {row: n for n, (_, _, _, row) in enumerate(ordered)}
    lent: dict[int, float] = {}
    for hit, score in zip(hits.tolist(), scores.tolist(), strict=True):
        p = place.get(hit)
        if p is None or score <= 0:
            continue
        own_thread = ordered[p][0]
        for step in range(1, radius + 1):
            after = score * decay**step
            for q, share in ((p + step, after), (p - step, after * _BEFORE)):
                if 0 <= q < len(ordered) and ordered[q][0] == own_thread:
                    row = ordered[q][3]
                    if share > lent.get(row, -np.inf):
                        lent[row] = share
    return lent


def with_neighbours(rows: pa.Table, hits: np.ndarray, scores: np.ndarray, similarities: np.ndarray, *, k: int,
                    complete: bool, radius: int, decay: float,
                    similarity: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, Any, Any]:
    """The top ``k`` once the hits (``k`` best rows of ``rows``, best first; ``complete`` when
    they are every row) have lent their neighbours a share of their score: indices, scores and
    similarities, best first. ``similarity(rows)`` gives the cosine of rows that were not hits."""
    lent = lent_scores(rows, hits, scores, radius, decay)
    if not lent:
        return hits, scores, similarities
    cut = -np.inf if complete or not len(scores) else float(scores[-1])
    at = {int(r): n for n, r in enumerate(hits.tolist())}
    fused = np.asarray(scores, dtype=np.float64).copy()
    for row, share in lent.items():
        n = at.get(row)
        if n is not None and share > fused[n]:
            fused[n] = share
    new = np.array([r for r, share in lent.items() if r not in at and share > cut], dtype=np.int64)
    all_rows = np.concatenate([hits.astype(np.int64), new])
    all_scores = np.concatenate([fused, np.array([lent[int(r)] for r in new], dtype=np.float64)])
    all_sims = np.concatenate([np.asarray(similarities, dtype=np.float32),
                               similarity(new) if len(new) else np.empty(0, np.float32)])
    best = np.argsort(-all_scores, kind="stable")[:k]
    return all_rows[best], all_scores[best], all_sims[best]
