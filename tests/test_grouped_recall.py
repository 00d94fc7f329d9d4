"""`mindcore.kernels.grouped_recall` against long-term memory's own recall, one query at a time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from mindcore.embed import HashEmbedder
from mindcore.errors import KernelError, KernelTypeError, MindcoreError
from mindcore.kernels import BM25Index, TopK, bm25_tokenize, grouped_recall
from mindcore.ltm import LongTermMemory, RecallWeights
from mindcore.ltm._repo import COLUMNS, LEXICAL_FLOOR, TABLE, scope_key
from mindcore.store import Store
from mindcore.store.scoring import Weights, rank

DAY = 86_400_000
NOW = 1_760_000_000_000
WORDS = ["tea", "green", "coffee", "dogs", "walking", "park", "bikes", "riding", "stories", "user", "likes",
         "drinks", "Straße", "ÉTÉ", "東京", "x2"]
STOP = ["the", "what", "does", "to", "of", "her"]


@dataclass
class Case:
    queries: NDArray[np.float32]
    query_group: NDArray[np.int64]
    query_texts: list[str]
    matrix: NDArray[np.float32]
    offsets: NDArray[np.int64]
    timestamps: NDArray[np.int64]
    importance: NDArray[np.float32]
    terms: list[str]
    has_vector: NDArray[np.bool_]
    k: int
    weights: dict[str, float]

    def run(self, **changes: Any) -> TopK:
        args: dict[str, Any] = dict(
            queries=self.queries, query_group=self.query_group, matrix=self.matrix, group_offsets=self.offsets,
            timestamps=self.timestamps, importance=self.importance, query_texts=self.query_texts,
            terms=self.terms, has_vector=self.has_vector, k=self.k, now_ms=NOW, **self.weights,
        )
        args.update(changes)
        return grouped_recall(**args)


def oracle(c: Case, i: int) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.float32]]:
    """Long-term memory's recall of query ``i`` over its group, step by step as ``MemoryRepo`` does it."""
    w = c.weights
    g = int(c.query_group[i])
    lo, hi = int(c.offsets[g]), int(c.offsets[g + 1])
    query = c.queries[i]
    if w["w_lexical"] > 0:  # MemoryRepo.search_lexical
        index = BM25Index(stem=True, stop_words="english")
        index.add(c.terms[lo:hi], analyzed=True)
        lexical = index.scores(c.query_texts[i])
        keep = np.flatnonzero(c.has_vector[lo:hi])
        if keep.size == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.float32)
        lexical = lexical[keep]
        scale = max(float(lexical.max()), w["lexical_floor"])
        extra = w["w_importance"] * c.importance[lo:hi][keep] + (w["w_lexical"] / scale) * lexical
        weights = Weights(similarity=w["w_sim"], recency=w["w_rec"], extra=1.0, half_life_ms=w["half_life_ms"])
        top = rank(query, c.matrix[lo:hi][keep], weights, k=c.k, now_ms=NOW, timestamps=c.timestamps[lo:hi][keep],
                   extra=np.ascontiguousarray(extra, dtype=np.float32))
        return lo + keep[top.indices], top.scores, top.similarities
    # Table.search with extra_column="importance", rows without a vector masked out
    weights = Weights(similarity=w["w_sim"], recency=w["w_rec"], extra=w["w_importance"],
                      half_life_ms=w["half_life_ms"])
    top = rank(query, c.matrix[lo:hi], weights, k=c.k, now_ms=NOW, timestamps=c.timestamps[lo:hi],
               extra=c.importance[lo:hi], mask=c.has_vector[lo:hi])
    return lo + top.indices, top.scores, top.similarities


def assert_matches_oracle(c: Case, got: TopK) -> None:
    assert got.indices.shape == got.scores.shape == got.similarities.shape == (len(c.query_texts), c.k)
    for i in range(len(c.query_texts)):
        idx, scores, sims = oracle(c, i)
        n = len(idx)
        assert got.indices[i, :n].tolist() == idx.tolist(), f"query {i}"
        # bit for bit (tobytes tells -0.0 from 0.0, unlike ==)
        assert got.scores[i, :n].tobytes() == scores.tobytes(), f"query {i}"
        assert got.similarities[i, :n].tobytes() == sims.tobytes(), f"query {i}"
        assert (got.indices[i, n:] == -1).all() and (got.scores[i, n:] == -np.inf).all()
        assert np.isnan(got.similarities[i, n:]).all()


@st.composite
def cases(draw: st.DrawFn) -> Case:
    d = draw(st.integers(1, 8))
    sizes = draw(st.lists(st.integers(0, 12), min_size=1, max_size=6))
    n = sum(sizes)
    small = st.integers(-3, 3).map(float)
    anyf = st.floats(-4, 4, width=32, allow_subnormal=False)
    values = draw(st.lists(st.one_of(small, anyf), min_size=n * d, max_size=n * d))
    matrix = np.array(values, dtype=np.float32).reshape(n, d)
    for _ in range(draw(st.integers(0, 3)) if n > 1 else 0):  # duplicate rows: exact ties
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        matrix[b] = matrix[a]
    nq = draw(st.integers(1, 12))
    query_group = np.array(draw(st.lists(st.integers(0, len(sizes) - 1), min_size=nq, max_size=nq)), np.int64)
    rows_or_new = st.one_of(st.integers(0, max(n - 1, 0)).map(lambda j: matrix[j] if n else None), st.none())
    queries = np.zeros((nq, d), np.float32)
    for i in range(nq):
        row = draw(rows_or_new)
        queries[i] = row if row is not None else draw(st.lists(anyf, min_size=d, max_size=d))
    words = st.sampled_from(WORDS + STOP + ["zebra", "teas", "story"])
    texts = st.lists(words, max_size=6).map(" ".join)
    query_texts = draw(st.lists(texts, min_size=nq, max_size=nq))
    # Stored terms are usually analysed; raw text (capitals, non-ASCII) must be read the same way too.
    terms = [" ".join(bm25_tokenize(t, stem=True, stop_words="english")) if draw(st.booleans()) else t
             for t in draw(st.lists(texts, min_size=n, max_size=n))]
    lexical = draw(st.one_of(st.just(0.0), st.floats(0.01, 2.0)))
    return Case(
        queries=queries,
        query_group=query_group,
        query_texts=query_texts,
        matrix=matrix,
        offsets=np.cumsum([0, *sizes], dtype=np.int64),
        timestamps=NOW - np.array(draw(st.lists(st.integers(-5, 200), min_size=n, max_size=n)), np.int64) * DAY // 3,
        importance=np.array(draw(st.lists(st.floats(0, 1, width=32), min_size=n, max_size=n)), np.float32),
        terms=terms,
        has_vector=np.array(draw(st.lists(st.integers(0, 3).map(bool), min_size=n, max_size=n)), bool),
        k=draw(st.integers(1, 15)),
        weights={
            "w_sim": draw(st.floats(0, 1)), "w_rec": draw(st.floats(0, 1)), "w_importance": draw(st.floats(0, 1)),
            "w_lexical": lexical, "half_life_ms": draw(st.sampled_from([30 * DAY, 1.5 * DAY])),
            "lexical_floor": draw(st.sampled_from([LEXICAL_FLOOR, 0.25])),
        },
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_equals_long_term_memory_recall_one_query_at_a_time(c: Case) -> None:
    assert_matches_oracle(c, c.run())


def _sample() -> Case:
    rng = np.random.default_rng(5)
    n, d = 40, 6
    matrix = rng.standard_normal((n, d), dtype=np.float32)
    matrix[7] = matrix[3]
    words = ["tea green", "coffee user like", "dog walk park", "", "bike ride story", "green tea tea"]
    return Case(
        queries=rng.standard_normal((9, d), dtype=np.float32),
        query_group=np.array([0, 1, 2, 2, 3, 0, 1, 3, 2], np.int64),
        query_texts=["green teas", "the dogs", "zebra", "", "Stories of bikes!", "tea tea", "coffee", "x", "walk"],
        matrix=matrix,
        offsets=np.array([0, 10, 10, 25, 40], np.int64),
        timestamps=NOW - rng.integers(0, 90 * DAY, n),
        importance=rng.random(n, dtype=np.float32),
        terms=[words[j % len(words)] for j in range(n)],
        has_vector=np.arange(n) % 7 != 2,
        k=4,
        weights={"w_sim": 0.7, "w_rec": 0.2, "w_importance": 0.1, "w_lexical": 1.0,
                 "half_life_ms": 30.0 * DAY, "lexical_floor": LEXICAL_FLOOR},
    )


def test_texts_as_arrow_arrays_read_in_place() -> None:
    c = _sample()
    want = c.run()
    assert_matches_oracle(c, want)
    terms = pa.array(c.terms, pa.string())
    padded = pa.array(["junk", *c.terms, "junk"], pa.large_string())
    for form in (terms, terms.cast(pa.large_string()), terms.cast(pa.string_view()),
                 pa.chunked_array([terms[:13], terms[13:]]), pa.chunked_array([terms]), padded.slice(1, len(c.terms)),
                 tuple(c.terms)):
        got = c.run(terms=form, query_texts=pa.array(c.query_texts))
        assert got.indices.tolist() == want.indices.tolist()
        assert got.scores.tobytes() == want.scores.tobytes()


def test_texts_are_not_needed_without_lexical_fusion() -> None:
    c = _sample()
    c.weights["w_lexical"] = 0.0
    got = c.run(terms=None, query_texts=None)
    assert_matches_oracle(c, got)
    assert got.indices.tolist() == c.run(terms=[None] * 40).indices.tolist()  # not even read
    got = c.run(has_vector=None)
    c.has_vector = np.ones(40, bool)
    assert_matches_oracle(c, got)


def test_groups_can_leave_rows_out_and_queries_can_be_none() -> None:
    c = _sample()
    c.offsets = np.array([2, 10, 10, 25, 30], np.int64)  # rows 0-1 and 30-39 belong to no group
    assert_matches_oracle(c, c.run())
    empty = c.run(query_texts=[], queries=np.empty((0, 6), np.float32), query_group=np.empty(0, np.int64))
    assert empty.indices.shape == (0, 4)


def _error(c: Case, **changes: Any) -> str:
    with pytest.raises(MindcoreError) as info:
        c.run(**changes)
    return str(info.value)


def test_bad_input_names_what_to_fix() -> None:
    c = _sample()
    bad = c.matrix.copy()
    bad[12, 3] = np.nan
    assert _error(c, matrix=bad) == "matrix: row 12 contains NaN or inf"
    bad[12, 3] = 0.0
    bad[2, 0] = np.inf  # row 2 has no vector: never read
    c.run(matrix=bad)
    queries = c.queries.copy()
    queries[4, 1] = np.inf
    assert _error(c, queries=queries) == "queries: row 4, column 1 is inf (must be finite)"
    assert _error(c, query_group=np.array([0, 1, 2, 2, 4, 0, 1, 3, 2])) == (
        "query_group: entry 4 is 4, outside 0..4 (the groups group_offsets defines)")
    assert _error(c, query_group=np.zeros(3, np.int64)) == "query_group: has 3 entries but there are 9 queries"
    assert _error(c, group_offsets=np.array([0, 10, 9, 25, 40])).startswith(
        "group_offsets: entry 2 is 9, below entry 1 (10)")
    assert _error(c, group_offsets=np.array([0, 10, 10, 25, 41])) == (
        "group_offsets: entry 4 is 41, outside 0..=40 (the matrix rows)")
    assert _error(c, group_offsets=np.array([-1, 10])).startswith("group_offsets: entry 0 is -1")
    assert _error(c, timestamps=c.timestamps[:5]) == "timestamps: has 5 entries but matrix has 40 rows"
    assert _error(c, has_vector=c.has_vector[:5]) == "has_vector: has 5 entries but matrix has 40 rows"
    assert _error(c, terms=c.terms[:5]).startswith("terms: has 6 offsets, expected 41")
    assert _error(c, terms=pa.array([*c.terms[:3], None, *c.terms[4:]])) == (
        "terms: entry 3 is null (give an empty string for no text)")
    assert _error(c, query_texts=None) == "query_texts: required when w_lexical > 0"
    assert _error(c, k=0) == "k: must be >= 1, got 0"
    assert _error(c, w_lexical=-0.5).startswith("w_lexical: must be >= 0")
    assert _error(c, w_sim=float("inf")).startswith("w_sim: must be a finite float32 value")
    assert _error(c, w_rec=1e39).startswith("w_rec: must be a finite float32 value")
    assert _error(c, half_life_ms=0).startswith("half_life_ms: must be a finite number > 0")
    assert _error(c, lexical_floor=float("nan")).startswith("lexical_floor:")
    importance = c.importance.copy()
    importance[6] = np.nan
    assert _error(c, importance=importance) == "importance: entry 6 is NaN (must be finite)"
    with pytest.raises(KernelError, match="queries: expected dtype float32"):
        c.run(queries=c.queries.astype(np.float64))
    with pytest.raises(KernelError, match="matrix: expected a 2-D array"):
        c.run(matrix=c.matrix.ravel())
    with pytest.raises(KernelError, match="queries have dimension 6 but matrix rows have dimension 5"):
        c.run(matrix=np.ascontiguousarray(c.matrix[:, :5]))
    with pytest.raises(KernelError, match="C-contiguous"):
        c.run(matrix=c.matrix[:, :5])
    for changes, pattern in (({"k": True}, "k: expected int"), ({"w_sim": "0.7"}, "w_sim: expected a number"),
                             ({"terms": "one string"}, "terms: expected a sequence of str"),
                             ({"terms": pa.array(np.arange(40))}, "terms: expected strings"),
                             ({"query_group": c.query_group.astype(np.int32)}, "query_group: expected dtype int64")):
        with pytest.raises(KernelTypeError, match=pattern):
            c.run(**changes)


def _rows(store: Store, users: list[str], emb: HashEmbedder) -> dict[str, Any]:
    """Every user's memories as the store caches them, concatenated: what a batch job hands the kernel."""
    table = store.table(TABLE, COLUMNS, vectors=True, embedder=emb)
    entries = [table.cached(scope_key(u, "default", None)) for u in users]
    return {
        "ids": [i for e in entries for i in e.scalars.column("id").to_pylist()],
        "matrix": np.ascontiguousarray(np.concatenate([e.matrix for e in entries])),
        "offsets": np.cumsum([0, *(e.n for e in entries)], dtype=np.int64),
        "timestamps": np.concatenate([e.int64("recency_at") for e in entries]),
        "importance": np.concatenate([e.float32("importance") for e in entries]),
        "has_vector": np.concatenate([e.has_vector for e in entries]),
        "terms": pa.chunked_array([e.scalars.column("terms").combine_chunks() for e in entries]),
    }


@pytest.mark.parametrize("lexical", [1.0, 0.0])
def test_equals_ltm_recall_over_a_real_store(store: Store, emb: HashEmbedder, lexical: float) -> None:
    rng = np.random.default_rng(11)
    topics = ["green tea", "espresso coffee", "dog walks in the park", "riding bikes", "bedtime stories",
              "Python programming", "the Alps in winter", "jazz records", "sourdough bread", "chess openings"]
    weights = RecallWeights(lexical=lexical)
    clock = [NOW - 120 * DAY]
    users = ["alice", "bob", "carol", "dave"]
    memories = {u: LongTermMemory(store, user_id=u, embedder=emb, weights=weights, clock=lambda: clock[0])
                for u in users}
    for u, ltm in memories.items():
        for j in range(int(rng.integers(0, 30)) if u != "dave" else 0):  # dave has no memories
            a, b = rng.choice(len(topics), 2, replace=False)
            clock[0] += int(rng.integers(0, 3 * DAY))
            # Stored as given (the write's judgement would read "#1" / "#2" as one fact changing).
            ltm.remember_many([{"text": f"{u} likes {topics[a]} and {topics[b]} #{j}", "importance": float(rng.random()),
                                "context": "User: what do you like?" if j % 3 == 0 else None}], dedupe=False)
    clock[0] += 5 * DAY
    rows = _rows(store, users, emb)
    questions = [f"{w} {topics[int(rng.integers(len(topics)))]}?" for w in ("what about", "does she like", "the")]
    questions += ["zebra quantum", "What does the user like to drink?", "bikes bikes bikes"]
    texts, groups = [], []
    for g in range(len(users)):
        for q in questions:
            texts.append(q)
            groups.append(g)
    top = grouped_recall(
        emb.embed(texts), np.array(groups, np.int64), rows["matrix"], rows["offsets"],
        timestamps=rows["timestamps"], importance=rows["importance"], query_texts=texts, terms=rows["terms"],
        has_vector=rows["has_vector"], k=7, now_ms=clock[0], w_sim=weights.similarity, w_rec=weights.recency,
        w_importance=weights.importance, w_lexical=weights.lexical, half_life_ms=weights.half_life_days * DAY,
        lexical_floor=LEXICAL_FLOOR,
    )
    checked = 0
    for i, (text, g) in enumerate(zip(texts, groups, strict=True)):
        want = memories[users[g]].recall(text, k=7, touch=False)
        got = [j for j in top.indices[i].tolist() if j >= 0]
        assert [rows["ids"][j] for j in got] == [m.id for m in want], text
        assert [float(s) for s in top.scores[i, :len(got)]] == [m.score for m in want]
        assert [float(s) for s in top.similarities[i, :len(got)]] == [m.similarity for m in want]
        checked += len(want)
    assert checked > 50
