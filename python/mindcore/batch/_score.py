"""Scoring many queries against many scopes at once: long-term memory's recall, grouped.

:func:`score_groups` takes every loaded scope as one matrix cut into groups (``group_offsets``)
and every query with the group it searches, and returns each query's top ``k`` as global row
numbers. Its signature is the batch kernel's; each query is scored exactly as
``LongTermMemory.recall`` scores it (:class:`mindcore.ltm._repo.MemoryRepo`), so the two agree
bit for bit: hybrid score plus BM25 lexical fusion when ``w_lexical > 0``, the seed's hybrid score
otherwise, rows without a vector never matching, ties to the lower row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from mindcore.errors import InvalidInputError
from mindcore.ltm._lexical import lexical_index
from mindcore.store.scoring import Weights, rank

__all__ = ["SCORING_PATH", "score_groups"]

#: How :func:`score_groups` scores (printed by the benches).
SCORING_PATH = "per-query loop: kernels.hybrid_topk (one query at a time) + BM25Index per group"


def _checked(queries: NDArray[np.float32], query_group: NDArray[np.int64], query_texts: Sequence[str],
             matrix: NDArray[np.float32], group_offsets: NDArray[np.int64], n_terms: int,
             has_vector: NDArray[np.bool_] | None, k: int) -> None:
    if queries.ndim != 2 or matrix.ndim != 2 or queries.shape[1] != matrix.shape[1]:
        raise InvalidInputError(f"queries {queries.shape} and matrix {matrix.shape}: expected (Q, d) and (N, d)")
    q, n = queries.shape[0], matrix.shape[0]
    if query_group.shape != (q,) or len(query_texts) != q:
        raise InvalidInputError(f"query_group and query_texts: expected {q} of each")
    if group_offsets.ndim != 1 or len(group_offsets) < 1 or group_offsets[0] != 0 or group_offsets[-1] != n:
        raise InvalidInputError(f"group_offsets: expected (G+1,) offsets from 0 to {n}")
    if np.any(np.diff(group_offsets) < 0):
        raise InvalidInputError("group_offsets: must not decrease")
    groups = len(group_offsets) - 1
    if q and (query_group.min() < 0 or query_group.max() >= groups):
        raise InvalidInputError(f"query_group: expected group numbers in 0..{groups - 1}")
    if n_terms != n or (has_vector is not None and has_vector.shape != (n,)):
        raise InvalidInputError(f"terms and has_vector: expected {n} of each")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k: expected a positive int, got {k!r}")


def score_groups(
    queries: NDArray[np.float32],
    query_group: NDArray[np.int64],
    query_texts: Sequence[str],
    matrix: NDArray[np.float32],
    group_offsets: NDArray[np.int64],
    timestamps: NDArray[np.int64],
    importance: NDArray[np.float32],
    terms: Sequence[str],
    has_vector: NDArray[np.bool_] | None,
    *,
    k: int,
    w_sim: float,
    w_rec: float,
    w_importance: float,
    w_lexical: float,
    half_life_ms: float,
    now_ms: int,
    lexical_floor: float,
) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.float32]]:
    """The ``k`` best rows for each query among the rows of its group, best first.

    Group ``g`` is rows ``group_offsets[g]:group_offsets[g+1]`` of ``matrix`` (``(N, d)``
    float32) and of the per-row ``timestamps`` (the memories' ``recency_at``), ``importance``,
    ``terms`` (the stored BM25 terms) and ``has_vector`` (``None``: every row has one). Query
    ``i`` (row ``i`` of ``queries``, text ``query_texts[i]``) searches group ``query_group[i]``.

    The score is long-term memory's: ``w_sim·cosine + w_rec·2^(-age/half_life_ms) + extra``,
    where ``extra`` is ``w_importance·importance + w_lexical·bm25/max(max bm25, lexical_floor)``
    when ``w_lexical > 0`` (BM25 indexes every row of the group; the maximum is taken over the
    rows with a vector, the only ones ranked), else ``w_importance·importance``.

    Returns ``(indices, scores, similarities)``, each ``(Q, k)``: global row numbers into
    ``matrix`` (``-1`` past a query's last hit), hybrid scores (``-inf`` there) and cosine
    similarities (``nan`` there).
    """
    _checked(queries, query_group, query_texts, matrix, group_offsets, len(terms), has_vector, k)
    q = queries.shape[0]
    indices = np.full((q, k), -1, dtype=np.int64)
    scores = np.full((q, k), -np.inf, dtype=np.float32)
    sims = np.full((q, k), np.nan, dtype=np.float32)
    order = np.argsort(query_group, kind="stable")
    bounds = np.searchsorted(query_group[order], np.arange(len(group_offsets)), side="left")
    hybrid = Weights(similarity=w_sim, recency=w_rec, extra=w_importance, half_life_ms=half_life_ms)
    fused = Weights(similarity=w_sim, recency=w_rec, extra=1.0, half_life_ms=half_life_ms)
    for g in range(len(group_offsets) - 1):
        asked = order[bounds[g]:bounds[g + 1]]
        start, stop = int(group_offsets[g]), int(group_offsets[g + 1])
        if not len(asked) or start == stop:
            continue
        view = matrix[start:stop]
        recency, weight = timestamps[start:stop], importance[start:stop]
        present = None if has_vector is None else has_vector[start:stop]
        if w_lexical > 0:
            # As MemoryRepo.search_lexical: BM25 over every row of the scope, then only the rows
            # with a vector are ranked (the matrix and the columns subset together).
            bm25 = lexical_index()
            bm25.add(list(terms[start:stop]), analyzed=True)
            keep = None if present is None or present.all() else np.flatnonzero(present)
            if keep is not None:
                view, recency, weight = view[keep], recency[keep], weight[keep]
            if view.shape[0] == 0:
                continue
            for i in asked.tolist():
                lexical = bm25.scores(query_texts[i])
                if keep is not None:
                    lexical = lexical[keep]
                scale = max(float(lexical.max()), lexical_floor)
                extra = w_importance * weight + (w_lexical / scale) * lexical
                top = rank(queries[i], view, fused, k=k, now_ms=now_ms, timestamps=recency,
                           extra=np.ascontiguousarray(extra, dtype=np.float32))
                rows = top.indices if keep is None else keep[top.indices]
                _put(indices, scores, sims, i, rows + start, top.scores, top.similarities)
        else:
            # As MemoryRepo.search (Table.search over the cached scope): rows without a vector masked.
            for i in asked.tolist():
                top = rank(queries[i], view, hybrid, k=k, now_ms=now_ms, timestamps=recency, extra=weight,
                           mask=present)
                _put(indices, scores, sims, i, top.indices + start, top.scores, top.similarities)
    return indices, scores, sims


def _put(indices: NDArray[np.int64], scores: NDArray[np.float32], sims: NDArray[np.float32], i: int,
         rows: NDArray[np.int64], top_scores: NDArray[np.float32], top_sims: NDArray[np.float32]) -> None:
    n = len(rows)
    indices[i, :n] = rows
    scores[i, :n] = top_scores
    sims[i, :n] = top_sims
