"""BM25: tokenizer, scores and top-k against a pure-Python implementation of the same formula."""

from __future__ import annotations

import doctest
import json
import math
import threading
import unicodedata
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
from conftest import shared_data
from hypothesis import given, settings
from hypothesis import strategies as st

import mindcore.kernels.bm25
from mindcore.kernels import BM25Index, bm25_tokenize

# --- pure-Python reference -------------------------------------------------------------------


def ref_tokenize(text: str) -> list[str]:
    """Lower-case, then keep maximal runs of letters and numbers (Unicode categories L*, N*)."""
    out: list[str] = []
    cur: list[str] = []
    for ch in text.lower():
        if unicodedata.category(ch)[0] in "LN":
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def ref_scores(docs: Sequence[str], query: str, k1: float = 0.9, b: float = 0.4) -> np.ndarray:
    toks = [ref_tokenize(d) for d in docs]
    n = len(docs)
    if n == 0:
        return np.zeros(0)
    avgdl = sum(map(len, toks)) / n
    df = Counter(t for d in toks for t in set(d))
    tfs = [Counter(d) for d in toks]
    out = np.zeros(n)
    for q in ref_tokenize(query):
        if df[q] == 0:
            continue
        idf = math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
        for i, tf in enumerate(tfs):
            f = tf[q]
            if f:
                out[i] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(toks[i]) / avgdl))
    return out


def ref_top_k(scores: np.ndarray, k: int, normalize: bool) -> tuple[list[int], list[float]]:
    cand = [i for i in range(len(scores)) if scores[i] > 0]
    ranked = sorted(cand, key=lambda i: (-scores[i], i))[:k]
    vals = [float(scores[i]) for i in ranked]
    if normalize and cand:
        lo, hi = min(scores[cand]), max(scores[cand])
        vals = [(v - lo) / (hi - lo) if hi > lo else 1.0 for v in vals]
    return ranked, vals


@pytest.fixture(scope="module")
def tool_docs() -> list[str]:
    with shared_data("tools", "bfcl", "tool_pool.jsonl").open() as f:
        tools = [json.loads(line) for line in f]
    return [f"{t['name']} {t['description']}" for t in tools[:400]]


# --- tokenizer -------------------------------------------------------------------------------


def test_tokenize_examples() -> None:
    assert bm25_tokenize("Get_weather: São Paulo, 3-day FORECAST!") == [
        "get", "weather", "são", "paulo", "3", "day", "forecast",
    ]  # fmt: skip
    assert bm25_tokenize("ΣΑΣ straße 東京タワー x²") == ["σας", "straße", "東京タワー", "x²"]
    assert bm25_tokenize("") == []
    assert bm25_tokenize(" \t.,;!? ") == []


_TEXT_CHARS = st.characters(categories=["Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "P", "Zs", "Sm", "Sc", "Cc"])


@settings(max_examples=300, deadline=None)
@given(st.text(_TEXT_CHARS, max_size=40))
def test_tokenize_matches_reference(text: str) -> None:
    assert bm25_tokenize(text) == ref_tokenize(text)


def test_tokenize_rejects_non_str() -> None:
    with pytest.raises(TypeError, match="text"):
        bm25_tokenize(b"bytes")  # type: ignore[arg-type]


# --- scores ----------------------------------------------------------------------------------

QUERIES = [
    "Find the area of a triangle with a base of 10 units",
    "calculate factorial",
    "weather forecast for a city",
    "the the the of",
    "no_such_token_anywhere zzzqqq",
    "",
]


@pytest.mark.parametrize(("k1", "b"), [(0.9, 0.4), (1.2, 0.75), (0.0, 0.0), (2.0, 1.0)])
def test_scores_match_reference_on_tool_descriptions(tool_docs: list[str], k1: float, b: float) -> None:
    idx = BM25Index(tool_docs, k1=k1, b=b)
    assert len(idx) == len(tool_docs)
    for q in QUERIES:
        got = idx.scores(q)
        assert got.dtype == np.float32 and got.shape == (len(tool_docs),)
        np.testing.assert_allclose(got, ref_scores(tool_docs, q, k1, b), rtol=2e-5, atol=1e-6, err_msg=q)


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "Alpha", "ε", "42", "x"])
_DOC = st.lists(_WORDS, max_size=8).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_DOC, max_size=12), _DOC, st.integers(1, 15), st.booleans())
def test_random_corpora_match_reference(docs: list[str], query: str, k: int, normalize: bool) -> None:
    idx = BM25Index(docs)
    want = ref_scores(docs, query)
    np.testing.assert_allclose(idx.scores(query), want, rtol=2e-5, atol=1e-6)
    ids, vals = idx.top_k(query, k, normalize=normalize)
    want_ids, want_vals = ref_top_k(want, k, normalize)
    assert ids.dtype == np.int64 and vals.dtype == np.float32
    # The same ranking up to ties: documents whose true scores are equal (identical documents, or
    # `alpha beta beta gamma` against `alpha beta gamma gamma` when beta and gamma share a document
    # frequency) may differ in the last bit of the f32 sum, so either order is right; any other
    # difference is a wrong ranking.
    assert len(ids) == len(want_ids) and len(set(ids.tolist())) == len(want_ids)
    np.testing.assert_allclose([want[i] for i in ids.tolist()], [want[i] for i in want_ids], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vals, want_vals, rtol=1e-4, atol=1e-5)


def test_idf_never_negative() -> None:
    # "common" is in every document: classic RSJ idf would be negative, Lucene's stays > 0.
    idx = BM25Index(["common a", "common b", "common c"])
    s = idx.scores("common")
    assert (s > 0).all()
    np.testing.assert_allclose(s, ref_scores(["common a", "common b", "common c"], "common"), rtol=1e-6)


def test_repeated_query_token_counts_per_occurrence() -> None:
    idx = BM25Index(["apple pie", "banana"])
    np.testing.assert_allclose(idx.scores("apple apple"), 2 * idx.scores("apple"), rtol=1e-6)


# --- top_k -----------------------------------------------------------------------------------


def test_top_k_order_ties_and_normalisation() -> None:
    idx = BM25Index(["a b", "c", "a b", "a"])
    ids, vals = idx.top_k("a", 10, normalize=False)
    assert ids.tolist() == [3, 0, 2]
    assert vals[1] == vals[2] and vals[0] > vals[1]
    ids, vals = idx.top_k("a", 2)
    # Normalised over all three candidates, not only the two returned.
    assert ids.tolist() == [3, 0] and vals.tolist() == [1.0, 0.0]
    ids, vals = idx.top_k("b", 5)
    assert ids.tolist() == [0, 2] and vals.tolist() == [1.0, 1.0]
    ids, vals = idx.top_k("c", 5)
    assert ids.tolist() == [1] and vals.tolist() == [1.0]


def test_top_k_matches_reference_on_tool_descriptions(tool_docs: list[str]) -> None:
    idx = BM25Index(tool_docs)
    for q in QUERIES[:4]:
        got_ids, got_vals = idx.top_k(q, 10, normalize=False)
        want_ids, want_vals = ref_top_k(ref_scores(tool_docs, q), 10, False)
        assert got_ids.tolist() == want_ids, q
        np.testing.assert_allclose(got_vals, want_vals, rtol=2e-5)


def test_query_without_known_terms_is_empty() -> None:
    idx = BM25Index(["red apple", "green pear"])
    for q in ["blue", "", "!!!"]:
        ids, vals = idx.top_k(q, 3)
        assert ids.size == 0 and vals.size == 0
        assert ids.dtype == np.int64 and vals.dtype == np.float32
        assert not idx.scores(q).any()


def test_empty_index() -> None:
    idx = BM25Index([])
    assert len(idx) == 0
    assert idx.scores("x").shape == (0,)
    assert idx.top_k("x", 5)[0].size == 0


# --- add -------------------------------------------------------------------------------------


def test_add_continues_ids_and_matches_a_fresh_build(tool_docs: list[str]) -> None:
    grown = BM25Index(tool_docs[:100])
    grown.add(tool_docs[100:250])
    grown.add([])
    grown.add(iter(tool_docs[250:]))
    fresh = BM25Index(tool_docs)
    assert len(grown) == len(fresh) == len(tool_docs)
    assert grown.vocabulary_size == fresh.vocabulary_size
    for q in QUERIES:
        np.testing.assert_array_equal(grown.scores(q), fresh.scores(q))
    idx = BM25Index()
    idx.add(["first doc"])
    idx.add(["second doc about tools"])
    assert idx.top_k("tools", 5)[0].tolist() == [1]


def test_parameters_and_repr() -> None:
    idx = BM25Index(["x"], k1=1.5, b=0.3)
    assert (idx.k1, idx.b) == (1.5, 0.3)
    assert repr(idx) == "BM25Index(documents=1, k1=1.5, b=0.3)"
    assert BM25Index().k1 == 0.9 and BM25Index().b == 0.4


# --- errors ----------------------------------------------------------------------------------


def test_bad_input_raises_clear_errors() -> None:
    with pytest.raises(ValueError, match="k1"):
        BM25Index([], k1=-0.1)
    with pytest.raises(ValueError, match="k1"):
        BM25Index([], k1=float("nan"))
    with pytest.raises(ValueError, match="b"):
        BM25Index([], b=1.5)
    with pytest.raises(TypeError, match="documents"):
        BM25Index("one long string")
    with pytest.raises(TypeError, match=r"documents: .*item 1 is int"):
        BM25Index(["ok", 3])  # type: ignore[list-item]
    idx = BM25Index(["a"])
    with pytest.raises(TypeError, match="documents"):
        idx.add("abc")
    assert len(idx) == 1
    with pytest.raises(TypeError, match="query"):
        idx.scores(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="query"):
        idx.top_k(["a"], 3)  # type: ignore[arg-type]
    for k in (0, -1):
        with pytest.raises(ValueError, match="k: must be >= 1"):
            idx.top_k("a", k)
    for bad in (1.5, True, "3"):
        with pytest.raises(TypeError, match="k"):
            idx.top_k("a", bad)  # type: ignore[arg-type]
    assert idx.top_k("a", 10**12)[0].tolist() == [0]


def test_concurrent_queries_and_adds_are_consistent(tool_docs: list[str]) -> None:
    """Queries run with the GIL released while another thread appends: no errors, well-formed
    results throughout, and the final index equals one built in one go."""
    idx = BM25Index(tool_docs)
    extra = [f"calculate filler document {i}" for i in range(40)]
    errors: list[BaseException] = []

    def query() -> None:
        try:
            for _ in range(40):
                for q in QUERIES[:3]:
                    ids, vals = idx.top_k(q, 10, normalize=False)
                    assert ids.size == vals.size and (np.diff(vals) <= 0).all()
                    assert ids.max() < len(idx)
        except BaseException as e:
            errors.append(e)

    def add() -> None:
        for doc in extra:
            idx.add([doc])

    threads = [threading.Thread(target=query) for _ in range(3)] + [threading.Thread(target=add)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    fresh = BM25Index(tool_docs + extra)
    for q in QUERIES:
        np.testing.assert_array_equal(idx.scores(q), fresh.scores(q))


def test_docstring_examples() -> None:
    assert doctest.testmod(mindcore.kernels.bm25).failed == 0
