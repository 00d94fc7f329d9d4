"""BM25 lexical ranking over an inverted index (tool discovery, lexical recall)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

import mindcore._core as _core
from mindcore.errors import KernelError, KernelTypeError

__all__ = ["BM25Index", "bm25_tokenize"]


def _str_list(values: Iterable[str], arg: str) -> list[str]:
    """`values` as a list of str; a bare str (a common slip for `[text]`) is refused."""
    if isinstance(values, str | bytes):
        raise KernelTypeError(f"{arg}: expected a sequence of str, got {type(values).__name__} (wrap it in a list)")
    out = list(values)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise KernelTypeError(f"{arg}: expected a sequence of str, item {i} is {type(v).__name__}")
    return out


def bm25_tokenize(text: str) -> list[str]:
    """Split `text` into the tokens BM25 (and the hashing embedder) use.

    The text is lower-cased with the full Unicode mapping, then cut into maximal runs of
    alphanumeric characters (Unicode Alphabetic or Numeric); everything else, including `_`,
    separates tokens.

    Examples
    --------
    >>> bm25_tokenize("Get_weather: São Paulo, 3-day FORECAST")
    ['get', 'weather', 'são', 'paulo', '3', 'day', 'forecast']
    """
    if not isinstance(text, str):
        raise KernelTypeError(f"text: expected str, got {type(text).__name__}")
    return _core.bm25_tokenize(text)


class BM25Index:
    """An append-only Okapi BM25 index; document ids are positions in insertion order.

    score(q, d) = Σ over query tokens t of idf(t) · tf·(k1 + 1) / (tf + k1·(1 - b + b·|d|/avgdl))

    with Lucene's idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5)), N documents of which n(t)
    contain t. Unlike the classic idf it is never negative, so a term found in most documents
    still adds a little instead of pushing those documents down. A token repeated in the query
    counts once per occurrence. Tokens come from :func:`bm25_tokenize`. Queries walk only the
    postings of their terms and run with the GIL released (several threads may query at once).

    Parameters
    ----------
    documents
        The initial documents (may be empty); more can be appended with :meth:`add`.
    k1
        Term-frequency saturation (>= 0).
    b
        Length normalisation in [0, 1].

    Examples
    --------
    >>> idx = BM25Index(["Get the weather forecast", "Send an email", "Weather radar maps"])
    >>> ids, scores = idx.top_k("weather forecast", 2)
    >>> ids.tolist(), scores.tolist()
    ([0, 2], [1.0, 0.0])
    >>> idx.add(["Forecast the stock market"])
    >>> len(idx)
    4
    """

    __slots__ = ("_index",)

    def __init__(self, documents: Iterable[str] = (), *, k1: float = 0.9, b: float = 0.4) -> None:
        self._index = _core.BM25Index(float(k1), float(b))
        self.add(documents)

    def add(self, documents: Iterable[str]) -> None:
        """Append `documents`; their ids continue from ``len(self)``."""
        docs = _str_list(documents, "documents")
        if docs:
            self._index.add(docs)

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"BM25Index(documents={len(self)}, k1={self.k1}, b={self.b})"

    @property
    def k1(self) -> float:
        return self._index.k1

    @property
    def b(self) -> float:
        return self._index.b

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct tokens indexed."""
        return self._index.vocabulary_size

    def scores(self, query: str) -> NDArray[np.float32]:
        """Raw BM25 score of every document, float32 of shape ``(len(self),)``; 0 where no query token occurs.

        Examples
        --------
        >>> [round(float(s), 4) for s in BM25Index(["red apple", "green pear"]).scores("apple")]
        [0.6931, 0.0]
        """
        return self._index.scores(_query(query))

    def top_k(
        self, query: str, k: int, *, normalize: bool = True
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The `k` best documents for `query`: ``(ids int64, scores float32)``, best first.

        Only documents with a score > 0 are candidates, so a query without any indexed token
        returns two empty arrays. Ties go to the lower id. With `normalize` the scores are
        min-max scaled over all candidates (not only the `k` returned): the best is 1.0, the
        weakest candidate 0.0, and if all candidates tie they all get 1.0.

        Examples
        --------
        >>> idx = BM25Index(["a b", "c", "a b", "a"])
        >>> idx.top_k("a", 2)[0].tolist()
        [3, 0]
        >>> idx.top_k("zzz", 5)[0].size
        0
        """
        if isinstance(k, bool) or not isinstance(k, int):
            raise KernelTypeError(f"k: expected int, got {type(k).__name__}")
        if k < 1:
            raise KernelError(f"k: must be >= 1, got {k}")
        return self._index.top_k(_query(query), k, bool(normalize))


def _query(query: str) -> str:
    if not isinstance(query, str):
        raise KernelTypeError(f"query: expected str, got {type(query).__name__}")
    return query
