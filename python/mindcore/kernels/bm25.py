"""BM25 lexical ranking over an inverted index (tool discovery, lexical recall), with the text
analysis (tokenizer, stop words, stemmer) it indexes and queries with."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

import mindcore._core as _core
from mindcore.errors import KernelError, KernelTypeError

__all__ = ["ENGLISH_STOP_WORDS", "BM25Index", "bm25_tokenize"]

ENGLISH_STOP_WORDS: frozenset[str] = _core.ENGLISH_STOP_WORDS
"""The ``stop_words="english"`` list: 55 English function words (articles, conjunctions,
prepositions, auxiliaries, wh-words, pronouns). Extend it with ``ENGLISH_STOP_WORDS | {...}``."""

def _str_list(values: Iterable[str], arg: str) -> list[str]:
    """`values` as a list of str; a bare str (a common slip for `[text]`) is refused."""
    if isinstance(values, str | bytes):
        raise KernelTypeError(f"{arg}: expected a sequence of str, got {type(values).__name__} (wrap it in a list)")
    out = list(values)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise KernelTypeError(f"{arg}: expected a sequence of str, item {i} is {type(v).__name__}")
    return out


def _stop_words(stop_words: Literal["english"] | Iterable[str] | None) -> str | list[str] | None:
    if stop_words is None or isinstance(stop_words, str):
        return stop_words  # a name other than "english" is refused by the kernel
    return _str_list(stop_words, "stop_words")


def _flag(value: bool, arg: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise KernelTypeError(f"{arg}: expected bool, got {type(value).__name__}")
    return bool(value)


def bm25_tokenize(
    text: str, *, stem: bool = False, stop_words: Literal["english"] | Iterable[str] | None = None
) -> list[str]:
    """Split `text` into the terms BM25 indexes (the hashing embedder uses the plain tokens).

    The text is lower-cased with the full Unicode mapping, then cut into maximal runs of
    alphanumeric characters (Unicode Alphabetic or Numeric); everything else, including `_`,
    separates tokens. Then, optionally:

    - `stop_words` drops tokens found in a list (checked before stemming);
    - `stem` strips one English suffix (``ingly``, ``edly``, ``ing``, ``ies``, ``ied``, ``ed``,
      ``es``, ``ly``, ``s``: the first that leaves at least three characters; ``ies``/``ied``
      become ``y``), so "drinks" matches "drink" and "stories" matches "story". It is lighter
      than Porter's stemmer: it never cuts a word down to fewer than three characters.

    Parameters
    ----------
    text
        Any str.
    stem
        Apply the suffix stemmer.
    stop_words
        ``None``, ``"english"`` (:data:`ENGLISH_STOP_WORDS`), or a collection of words (compared
        with the lower-cased tokens, so their case does not matter).

    Raises
    ------
    KernelTypeError
        `text` is not a str, or `stop_words` is neither a name nor a collection of str.
    KernelError
        `stop_words` names an unknown list.

    Examples
    --------
    >>> bm25_tokenize("Get_weather: São Paulo, 3-day FORECAST")
    ['get', 'weather', 'são', 'paulo', '3', 'day', 'forecast']
    >>> bm25_tokenize("What does the user like to drink? Green teas!", stem=True, stop_words="english")
    ['user', 'like', 'drink', 'green', 'tea']
    >>> bm25_tokenize("The cat and the hat", stop_words={"the", "and"})
    ['cat', 'hat']
    """
    if not isinstance(text, str):
        raise KernelTypeError(f"text: expected str, got {type(text).__name__}")
    return _core.bm25_tokenize(text, _flag(stem, "stem"), _stop_words(stop_words))


class BM25Index:
    """An Okapi BM25 index; document ids are positions in insertion order.

    score(q, d) = Σ over query terms t of idf(t) · tf·(k1 + 1) / (tf + k1·(1 - b + b·|d|/avgdl))

    with Lucene's idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5)), N documents of which n(t)
    contain t. Unlike the classic idf it is never negative, so a term found in most documents
    still adds a little instead of pushing those documents down. A term repeated in the query
    counts once per occurrence. Documents and queries are analysed alike, by
    :func:`bm25_tokenize` with the index's `stem` and `stop_words`. Queries walk only the
    postings of their terms and run with the GIL released (several threads may query at once).

    Parameters
    ----------
    documents
        The initial documents (may be empty); more can be appended with :meth:`add` and
        removed with :meth:`remove`.
    k1
        Term-frequency saturation (>= 0).
    b
        Length normalisation in [0, 1].
    stem
        Stem documents and queries (see :func:`bm25_tokenize`).
    stop_words
        Drop these words from documents and queries: ``None``, ``"english"``
        (:data:`ENGLISH_STOP_WORDS`) or a collection of words.

    Raises
    ------
    KernelError
        `k1` or `b` out of range, an unknown `stop_words` name.
    KernelTypeError
        `documents` is a str or holds something that is not a str.

    Examples
    --------
    >>> idx = BM25Index(["Get the weather forecast", "Send an email", "Weather radar maps"])
    >>> ids, scores = idx.top_k("weather forecast", 2)
    >>> ids.tolist(), scores.tolist()
    ([0, 2], [1.0, 0.0])
    >>> idx.add(["Forecast the stock market"])
    >>> len(idx)
    4

    With stemming and English stop words, "forecasts" finds "forecast" and "the" finds nothing:

    >>> idx = BM25Index(["Get the weather forecast", "Send an email"], stem=True, stop_words="english")
    >>> idx.top_k("the forecasts", 5)[0].tolist(), idx.top_k("the", 5)[0].tolist()
    ([0], [])
    """

    __slots__ = ("_index",)

    def __init__(
        self,
        documents: Iterable[str] = (),
        *,
        k1: float = 0.9,
        b: float = 0.4,
        stem: bool = False,
        stop_words: Literal["english"] | Iterable[str] | None = None,
    ) -> None:
        self._index = _core.BM25Index(float(k1), float(b), _flag(stem, "stem"), _stop_words(stop_words))
        self.add(documents)

    def add(self, documents: Iterable[str], *, analyzed: bool = False) -> None:
        """Append `documents`; their ids continue from ``len(self)``.

        With `analyzed`, the documents already are this index's terms joined by spaces (the
        output of :func:`bm25_tokenize` with the same `stem` and `stop_words`, e.g. stored when
        the text was written) and are indexed as they are. Analysing them a second time would
        change them: a stem can stem further ("blessings" -> "blessing" -> "bless") or be a
        stop word ("hers" -> "her").

        Examples
        --------
        >>> terms = " ".join(bm25_tokenize("Counting blessings", stem=True))
        >>> terms
        'count blessing'
        >>> idx = BM25Index(stem=True)
        >>> idx.add([terms], analyzed=True)
        >>> idx.add([terms])  # analysed twice: "blessing" became "bless"
        >>> idx.top_k("blessings", 5)[0].tolist()
        [0]
        """
        docs = _str_list(documents, "documents")
        if docs:
            self._index.add(docs, _flag(analyzed, "analyzed"))

    def remove(self, ids: Sequence[int] | NDArray[np.integer]) -> None:
        """Remove the documents `ids` (repeats are fine). Ids stay positions: each later document's
        id drops by the number of removed ids below it. The index is then exactly the one built
        from the remaining documents, so are its scores; the cost is proportional to the postings
        of the documents from the first removed id on, not a rebuild.

        Raises
        ------
        KernelError
            An id outside ``0 .. len(self) - 1``.

        Examples
        --------
        >>> idx = BM25Index(["red apple", "green pear", "red wine"])
        >>> idx.remove([0])
        >>> len(idx), idx.top_k("red", 5)[0].tolist()
        (2, [1])
        """
        if isinstance(ids, str | bytes):
            raise KernelTypeError(f"ids: expected a sequence of int, got {type(ids).__name__}")
        arr = np.asarray(ids)
        if arr.size == 0:
            return
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise KernelTypeError(f"ids: expected a 1-D sequence of int, got {arr.dtype} of shape {arr.shape}")
        if arr.min() < 0:
            raise KernelError(f"ids: {int(arr.min())} is not a document id")
        self._index.remove(np.ascontiguousarray(arr, dtype=np.int64))

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        analysis = ""
        if self.stem:
            analysis += ", stem=True"
        if self.stop_words:
            analysis += ", stop_words='english'" if self.stop_words == ENGLISH_STOP_WORDS else ", stop_words={...}"
        return f"BM25Index(documents={len(self)}, k1={self.k1}, b={self.b}{analysis})"

    @property
    def k1(self) -> float:
        return self._index.k1

    @property
    def b(self) -> float:
        return self._index.b

    @property
    def stem(self) -> bool:
        """Whether documents and queries are stemmed."""
        return self._index.stem

    @property
    def stop_words(self) -> frozenset[str]:
        """The words dropped from documents and queries (empty: none)."""
        return frozenset(self._index.stop_words)

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct terms in the documents."""
        return self._index.vocabulary_size

    def scores(self, query: str) -> NDArray[np.float32]:
        """Raw BM25 score of every document, float32 of shape ``(len(self),)``; 0 where no query term occurs.

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

        Only documents with a score > 0 are candidates, so a query without any indexed term
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
