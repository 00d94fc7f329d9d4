"""Grouped recall: long-term memory's ranking for many queries over many users' memories in one call."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

import mindcore._core as _core
from mindcore.errors import KernelError, KernelTypeError
from mindcore.kernels.bm25 import _str_list
from mindcore.kernels.scoring import TopK, _int

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["grouped_recall"]

def _float(value: float, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise KernelTypeError(f"{arg}: expected a number, got {type(value).__name__}")
    return float(value)


def _text_buffers(values: Any, arg: str) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """``values`` as Arrow ``large_string`` buffers ``(offsets, data)``, shared with the array
    (a ``string`` array's offsets are widened, its data is not copied)."""
    import pyarrow as pa  # here, not at import: `import mindcore.kernels` stays light

    if isinstance(values, pa.ChunkedArray):
        values = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    elif not isinstance(values, pa.Array):
        values = pa.array(_str_list(values, arg), pa.large_string())
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_string_view(kind):
        values = values.cast(pa.large_string())
    elif not pa.types.is_large_string(kind):
        raise KernelTypeError(f"{arg}: expected strings, got an Arrow array of {kind}")
    if values.null_count:
        first = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise KernelError(f"{arg}: entry {first} is null (give an empty string for no text)")
    _, offsets, data = values.buffers()
    n = len(values)
    if offsets is None:  # an empty array may come without buffers
        return np.zeros(1, np.int64), np.empty(0, np.uint8)
    return (
        np.frombuffer(offsets, np.int64, count=n + 1, offset=values.offset * 8),
        np.empty(0, np.uint8) if data is None else np.frombuffer(data, np.uint8),
    )


def grouped_recall(
    queries: NDArray[np.float32],
    query_group: NDArray[np.int64],
    matrix: NDArray[np.float32],
    group_offsets: NDArray[np.int64],
    *,
    timestamps: NDArray[np.int64],
    importance: NDArray[np.float32],
    query_texts: pa.Array[Any] | pa.ChunkedArray[Any] | Iterable[str] | None = None,
    terms: pa.Array[Any] | pa.ChunkedArray[Any] | Iterable[str] | None = None,
    has_vector: NDArray[np.bool_] | None = None,
    eligible: NDArray[np.bool_] | None = None,
    k: int,
    now_ms: int,
    w_sim: float,
    w_rec: float,
    w_importance: float,
    w_lexical: float,
    half_life_ms: float,
    lexical_floor: float = 2.0,
    k1: float = 0.9,
    b: float = 0.4,
) -> TopK:
    """The `k` best rows of its own group for every query, ranked as long-term memory recall ranks.

    Query ``i`` is ranked against the rows of group ``query_group[i]``: rows
    ``group_offsets[g]:group_offsets[g + 1]`` of `matrix` (one user's memories). Each query gets
    exactly the indices, scores and similarities, as float32 bit for bit, that
    :meth:`LongTermMemory.recall <mindcore.ltm.LongTermMemory.recall>` (exact search, without
    touching) gives for it over those rows:

    - ``w_lexical > 0``: BM25 (:class:`~mindcore.kernels.BM25Index` with ``stem=True,
      stop_words="english"``, `k1`, `b`) of the query text over the group's `terms`; among the
      rows with a vector, ``scale = max(max bm25, lexical_floor)`` and
      ``extra = w_importance * importance + (w_lexical / scale) * bm25`` in float32; the score is
      ``w_sim * cosine + w_rec * 2 ** (-age / half_life_ms) + extra``.
    - ``w_lexical == 0``: ``w_sim * cosine + w_rec * 2 ** (-age / half_life_ms) +
      w_importance * importance`` (texts are not needed).

    Ages run from `timestamps` to `now_ms` (future ones count as 0). Rows whose `has_vector` is
    False never match but still count in BM25's statistics. Ties go to the lower row. Blank
    queries and over-long query texts are the caller's to drop or cut, as recall does before
    ranking. The groups run in parallel in Rust with the GIL released; each group's stored terms
    are tokenized once for all of its queries.

    Parameters
    ----------
    queries
        float32 ``(Q, d)``, C-contiguous, finite.
    query_group
        int64 ``(Q,)``: each query's group, in ``0 .. G - 1``.
    matrix
        float32 ``(N, d)``, C-contiguous (read without copying). A row that has a vector and
        holds NaN or inf is an error naming it.
    group_offsets
        int64 ``(G + 1,)``, non-decreasing, within ``0 .. N``. Rows outside every group are
        never read.
    timestamps, importance
        int64 unix ms and float32 (finite), one per row.
    query_texts, terms
        The query texts ``(Q,)`` and each row's analysed terms ``(N,)`` (the ``terms`` column
        long-term memory stores: :func:`~mindcore.kernels.bm25_tokenize` output, space-joined).
        A pyarrow ``string`` / ``large_string`` array (read in place) or any sequence of str.
        Required when ``w_lexical > 0``.
    has_vector
        bool ``(N,)``; default: every row has one.
    eligible
        bool ``(N,)``: the rows that may be returned (default: every row). Unlike `has_vector`,
        it changes no score: an eligible row gets exactly the score it gets without `eligible`
        (the lexical scale is still taken over every row with a vector).
    k
        Hits per query, ``>= 1``; the result is ``(Q, k)``.
    now_ms
        The time ages are measured from (unix ms).
    w_sim, w_rec, w_importance, w_lexical, half_life_ms
        :class:`~mindcore.ltm.RecallWeights` (``half_life_ms`` is ``half_life_days * 86_400_000``).
    lexical_floor
        Raw BM25 below which the best lexical match is not scaled up to the full `w_lexical`.
    k1, b
        BM25's parameters (:class:`~mindcore.kernels.BM25Index`'s defaults).

    Returns
    -------
    TopK
        ``(Q, k)`` arrays: global row indices into `matrix`, scores, cosine similarities; a query
        with fewer than `k` matching rows is padded with index ``-1``, score ``-inf`` and
        similarity ``nan``.

    Raises
    ------
    KernelTypeError
        A wrong dtype or type.
    KernelError
        A wrong shape, offsets that decrease or leave ``0 .. N``, a group out of range, NaN or inf
        in a query, a row or importance, ``k < 1``, non-finite or negative weights, a null text.

    Examples
    --------
    Two users, two memories each; one query per user:

    >>> import numpy as np
    >>> matrix = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    >>> top = grouped_recall(
    ...     np.array([[1, 0], [0, 1]], dtype=np.float32), np.array([1, 0]), matrix, np.array([0, 2, 4]),
    ...     timestamps=np.zeros(4, np.int64), importance=np.full(4, 0.5, np.float32),
    ...     query_texts=["green tea", "dogs"], terms=["user like coffee", "user dog", "green tea", "bike"],
    ...     k=2, now_ms=0, w_sim=0.7, w_rec=0.2, w_importance=0.1, w_lexical=1.0,
    ...     half_life_ms=30 * 86_400_000)
    >>> top.indices.tolist()
    [[2, 3], [1, 0]]
    >>> top.scores.astype(float).round(3).tolist()
    [[1.602, 0.67], [1.31, 0.25]]
    """
    lexical = _float(w_lexical, "w_lexical")
    # The texts are read only with lexical fusion (the kernel says so when they are missing).
    texts = {
        name: _text_buffers(value, name) if lexical > 0 and value is not None else None
        for name, value in (("query_texts", query_texts), ("terms", terms))
    }
    indices, scores, similarities = _core._grouped_recall(
        queries, query_group, matrix, group_offsets, timestamps, importance,
        k=_int(k, "k"), w_sim=_float(w_sim, "w_sim"), w_rec=_float(w_rec, "w_rec"),
        w_importance=_float(w_importance, "w_importance"), w_lexical=lexical,
        half_life_ms=_float(half_life_ms, "half_life_ms"), now_ms=_int(now_ms, "now_ms"),
        lexical_floor=_float(lexical_floor, "lexical_floor"), k1=_float(k1, "k1"), b=_float(b, "b"),
        query_texts=texts["query_texts"], terms=texts["terms"], has_vector=has_vector, eligible=eligible,
    )
    return TopK(indices, scores, similarities)
