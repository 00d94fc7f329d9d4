"""BM25 text analysis (stop words, stemmer) and document removal.

The analyzer replaced a Python stemmer that long-term memory applied after the Rust tokenizer;
its output must stay the same term for term, so stored ``terms`` keep matching queries and
recall rankings (LoCoMo) do not move. ``_python_lexical_terms`` is that function, kept here as
the reference.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import shared_data
from hypothesis import given, settings
from hypothesis import strategies as st

from mindcore.errors import KernelError, KernelTypeError, MindcoreError
from mindcore.kernels import ENGLISH_STOP_WORDS, BM25Index, bm25_tokenize
from mindcore.ltm._lexical import STOPWORDS, lexical_index, lexical_terms
from mindcore.ltm.types import indexed_text

# --- the Python analyzer long-term memory used before (reference) -------------------------------

_PY_STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "what", "when", "where", "who", "whom", "which", "why", "how", "that", "this", "these", "those", "it", "its", "i", "you", "he", "she", "they", "we", "me", "him", "her", "them", "my", "your", "his", "their", "our"]
)
_PY_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s")
_PY_MIN_STEM = 3


def _py_stem(word: str) -> str:
    for suffix in _PY_SUFFIXES:
        if not word.endswith(suffix):
            continue
        if suffix in ("ies", "ied"):
            if len(word) - 3 >= _PY_MIN_STEM - 1:
                return word[:-3] + "y"
        elif len(word) - len(suffix) >= _PY_MIN_STEM:
            return word[: -len(suffix)]
    return word


def _python_lexical_terms(text: str) -> str:
    return " ".join(_py_stem(t) for t in bm25_tokenize(text) if t not in _PY_STOPWORDS)


def _locomo_texts() -> list[str]:
    """Every turn of LoCoMo alone and as recall indexes it (after the previous turn and the
    speaker), every question and answer, every session summary."""
    path = shared_data("locomo", "locomo10.json")
    texts: list[str] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        previous = ""
        for key, session in sample["conversation"].items():
            if not key.startswith("session_") or not isinstance(session, list):
                continue
            for turn in session:
                text = f"{turn['text']} [image: {turn['blip_caption']}]" if turn.get("blip_caption") else turn["text"]
                texts += [text, indexed_text(text, f"{previous}\n{turn['speaker']}:")]
                previous = f"{turn['speaker']}: {text}"
        for qa in sample["qa"]:
            texts += [str(qa["question"]), str(qa.get("answer", qa.get("adversarial_answer", "")))]
        texts += [str(v) for v in sample.get("session_summary", {}).values()]
    return texts


@pytest.fixture(scope="module")
def locomo_texts() -> list[str]:
    return _locomo_texts()


# --- the analyzer equals the Python one -----------------------------------------------------------


def test_english_stop_words_are_the_python_list() -> None:
    assert ENGLISH_STOP_WORDS == _PY_STOPWORDS
    assert STOPWORDS == _PY_STOPWORDS  # mindcore.ltm._lexical keeps its name


def test_analyzer_equals_the_python_one_on_locomo(locomo_texts: list[str]) -> None:
    assert len(locomo_texts) > 9_000
    for text in locomo_texts:
        want = _python_lexical_terms(text)
        assert lexical_terms(text) == want, text
        assert bm25_tokenize(text, stem=True, stop_words="english") == want.split(), text


_WORDS = st.sampled_from(
    ["stories", "tried", "lies", "ies", "ied", "cries", "loving", "amazingly", "reportedly", "bus", "gas", "things",
     "king", "sings", "hers", "its", "The", "WHAT", "ÉTÉS", "naïves", "éés", "Straße", "ΣΑΣ", "東京タワー", "x²", "İstanbul",
     "drinks", "teas", "3rd", "1990s", "s", "es", "ly", "edly", "ingly", "ing"]
)
_SUFFIX = st.sampled_from(["", "s", "es", "ed", "ing", "ies", "ied", "ly", "edly", "ingly", "ss", "Ies", "ING"])
_WORDISH = st.builds(lambda stem, suffix: stem + suffix, st.text(min_size=0, max_size=6), _SUFFIX)
_PIECE = st.one_of(_WORDS, _WORDISH, st.text(max_size=12), st.sampled_from([" ", ", ", "\n", "-", "_", "'"]))


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECE, max_size=12).map("".join))
def test_analyzer_equals_the_python_one_on_generated_text(text: str) -> None:
    assert lexical_terms(text) == _python_lexical_terms(text)
    stems = [_py_stem(t) for t in bm25_tokenize(text)]
    assert bm25_tokenize(text, stem=True) == stems
    assert bm25_tokenize(text, stop_words="english") == [t for t in bm25_tokenize(text) if t not in _PY_STOPWORDS]


def test_lexical_rankings_equal_the_python_pipeline(locomo_texts: list[str]) -> None:
    """Recall's BM25 side: an index over stored terms, queried with raw text, scores bit for bit
    like the old pipeline (a plain index over the Python terms, queried with the Python terms)."""
    docs, queries = locomo_texts[:3_000], locomo_texts[3_000:3_400]
    old = BM25Index([_python_lexical_terms(d) for d in docs])
    new = lexical_index()
    new.add([lexical_terms(d) for d in docs], analyzed=True)
    raw = BM25Index(docs, stem=True, stop_words="english")  # analyses the texts itself
    for q in queries:
        want = old.scores(_python_lexical_terms(q))
        np.testing.assert_array_equal(new.scores(q), want)
        np.testing.assert_array_equal(raw.scores(q), want)


# --- options ------------------------------------------------------------------------------------


def test_analysis_options() -> None:
    text = "The Stories she TRIED, loving it"
    assert bm25_tokenize(text) == ["the", "stories", "she", "tried", "loving", "it"]
    assert bm25_tokenize(text, stem=True) == ["the", "story", "she", "try", "lov", "it"]
    assert bm25_tokenize(text, stop_words="english") == ["stories", "tried", "loving"]
    assert bm25_tokenize(text, stop_words=["STORIES", "she"]) == ["the", "tried", "loving", "it"]  # any case
    assert bm25_tokenize(text, stop_words=ENGLISH_STOP_WORDS | {"loving"}) == ["stories", "tried"]
    assert bm25_tokenize(text, stop_words=[]) == bm25_tokenize(text)
    idx = BM25Index(["Stories she tried"], stem=True, stop_words="english")
    assert idx.stem and idx.stop_words == ENGLISH_STOP_WORDS
    assert repr(idx) == "BM25Index(documents=1, k1=0.9, b=0.4, stem=True, stop_words='english')"
    assert idx.top_k("story", 1)[0].tolist() == [0]
    assert idx.top_k("she", 1)[0].tolist() == []
    custom = BM25Index(stop_words={"x"})
    assert not custom.stem and custom.stop_words == {"x"}
    assert repr(custom) == "BM25Index(documents=0, k1=0.9, b=0.4, stop_words={...})"


def test_analysis_options_are_checked() -> None:
    with pytest.raises(KernelError, match="stop_words: unknown list 'french'"):
        bm25_tokenize("x", stop_words="french")  # type: ignore[arg-type]
    with pytest.raises(KernelError, match="stop_words"):
        BM25Index(stop_words="French")  # type: ignore[arg-type]
    with pytest.raises(KernelTypeError, match="stop_words"):
        bm25_tokenize("x", stop_words=[1])  # type: ignore[list-item]
    with pytest.raises(KernelTypeError, match="stem"):
        bm25_tokenize("x", stem="yes")  # type: ignore[arg-type]
    with pytest.raises(KernelTypeError, match="analyzed"):
        BM25Index().add(["x"], analyzed=1)  # type: ignore[arg-type]


def test_analyzed_documents_are_indexed_as_they_are() -> None:
    terms = lexical_terms("Counting blessings with hers")
    assert terms == "count blessing her"  # "her" is a stop word, but the stem of "hers"
    pre, twice = lexical_index(), lexical_index()
    pre.add([terms], analyzed=True)
    twice.add([terms])
    assert pre.top_k("blessings hers", 1)[1].tolist() == [1.0]
    assert pre.vocabulary_size == 3 and twice.vocabulary_size == 2  # "bless", "count"
    assert twice.top_k("blessings", 1)[0].tolist() == []


# --- removal ------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(["apple", "pear", "plum", "fig", "kiwi", "lime"]), max_size=6).map(" ".join),
                  min_size=1, max_size=25),
    data=st.data(),
)
def test_remove_equals_a_rebuild(docs: list[str], data: st.DataObject) -> None:
    removed = data.draw(st.lists(st.integers(0, len(docs) - 1), max_size=len(docs)))
    added = data.draw(st.lists(st.sampled_from(["fig fig", "new words", "apple kiwi"]), max_size=3))
    idx = BM25Index(docs, k1=1.2, b=0.75)
    idx.remove(removed)
    idx.add(added)
    fresh = BM25Index([d for i, d in enumerate(docs) if i not in set(removed)] + added, k1=1.2, b=0.75)
    assert len(idx) == len(fresh) and idx.vocabulary_size == fresh.vocabulary_size
    for q in ["apple", "fig plum plum", "words kiwi", "none"]:
        np.testing.assert_array_equal(idx.scores(q), fresh.scores(q))
        ids, scores = idx.top_k(q, 3)
        want_ids, want_scores = fresh.top_k(q, 3)
        assert ids.tolist() == want_ids.tolist() and scores.tolist() == want_scores.tolist()


def test_remove_checks_ids() -> None:
    idx = BM25Index(["a", "b"])
    idx.remove([])
    idx.remove(np.array([], dtype=np.int64))
    assert len(idx) == 2
    for bad in ([2], [-1]):
        with pytest.raises(KernelError, match="ids"):
            idx.remove(bad)
    with pytest.raises(KernelTypeError, match="ids"):
        idx.remove([0.5])  # type: ignore[list-item]
    with pytest.raises(KernelTypeError, match="ids"):
        idx.remove("0")  # type: ignore[arg-type]
    idx.remove(np.array([1, 1], dtype=np.int32))
    assert len(idx) == 1 and idx.top_k("a", 1)[0].tolist() == [0]
    assert issubclass(KernelError, MindcoreError)
