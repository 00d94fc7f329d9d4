"""What the lexical (BM25) side of recall indexes: the text's tokens, minus English function words,
with a light suffix stemmer, so "drinks" matches "drink" and "what"/"the" never decide a match.

The analysis is the BM25 kernel's own (:func:`mindcore.kernels.bm25_tokenize` with ``stem=True,
stop_words="english"``): one pass in Rust. Each memory stores its terms, space-joined (column
``terms``), so an index over a scope is built from them without analysing the texts again, and a
query is analysed once, by the index itself.

>>> lexical_terms("What does the user like to drink? Green teas!")
'user like drink green tea'
"""

from __future__ import annotations

from mindcore.kernels import ENGLISH_STOP_WORDS, BM25Index, bm25_tokenize

__all__ = ["STOPWORDS", "lexical_index", "lexical_terms"]

STOPWORDS = ENGLISH_STOP_WORDS


def lexical_terms(text: str) -> str:
    """The space-joined terms BM25 indexes for ``text`` (see the module docstring)."""
    return " ".join(bm25_tokenize(text, stem=True, stop_words="english"))


def lexical_index() -> BM25Index:
    """An empty index that analyses queries (and raw texts) like :func:`lexical_terms`; add stored
    terms to it with ``add(terms, analyzed=True)``."""
    return BM25Index(stem=True, stop_words="english")
