"""The one scoring path (``mindcore.store.Weights`` and ``rank``) and the recalls built on it.

``rank`` must give exactly what a direct ``hybrid_topk`` call gives on the same inputs, and the
mind's recall, long-term memory's recall (with and without its lexical term) and its eviction
must rank exactly as they did when each called the kernel itself (the reference computations
below are those former calls).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError
from mindcore.kernels import hybrid_topk, row_norms
from mindcore.store import Weights, rank

DAY = 86_400_000
NOW = 1_750_000_000_000


def _inputs(seed: int, n: int = 400, d: int = 24) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, d)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return {
        "query": vectors[rng.integers(n)] + 0.3 * rng.standard_normal(d).astype(np.float32),
        "vectors": vectors,
        "timestamps": NOW - rng.integers(0, 120 * DAY, n).astype(np.int64),
        "extra": rng.random(n).astype(np.float32),
        "mask": rng.random(n) < 0.7,
    }


# -- Weights ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"similarity": math.nan}, "similarity"),
        ({"extra": math.inf}, "extra"),
        ({"recency": True}, "recency"),
        ({"similarity": "1"}, "similarity"),
        ({"recency": 0.2}, "needs half_life_ms or tau_ms"),
        ({"recency": 0.2, "half_life_ms": 1.0, "tau_ms": 1.0}, "not both"),
        ({"half_life_ms": 0}, "half_life_ms"),
        ({"tau_ms": -5.0}, "tau_ms"),
        ({"tau_ms": math.nan}, "tau_ms"),
    ],
)
def test_weights_are_validated(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        Weights(**kwargs)


def test_weights_are_a_frozen_value() -> None:
    w = Weights(similarity=0.6, recency=0.2, extra=0.2, tau_ms=30 * DAY)
    assert w == Weights(0.6, 0.2, 0.2, tau_ms=30 * DAY) and hash(w) == hash(Weights(0.6, 0.2, 0.2, tau_ms=30 * DAY))
    with pytest.raises(AttributeError):
        w.similarity = 1.0  # type: ignore[misc]


# -- rank against the kernel -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weights", "options"),
    [
        (Weights(), {}),
        (Weights(), {"metric": "dot"}),
        (Weights(0.7, 0.2, 0.1, half_life_ms=30 * DAY), {}),  # long-term memory
        (Weights(0.6, 0.2, 0.2, tau_ms=30 * DAY), {"min_score": 0.3}),  # the mind
        (Weights(0.0, 0.2, 0.1, half_life_ms=30 * DAY), {"metric": "dot"}),  # eviction
        (Weights(0.5, 0.0, 1.0), {"mask": True}),
        (Weights(1.0, 0.5, 0.0, tau_ms=7 * DAY), {"mask": True, "min_score": 0.1}),
    ],
)
@pytest.mark.parametrize("k", [1, 10, 1000])
def test_rank_equals_a_direct_kernel_call(weights: Weights, options: dict[str, Any], k: int) -> None:
    for seed in range(3):
        x = _inputs(seed)
        mask = x["mask"] if options.get("mask") else None
        metric = options.get("metric", "cosine")
        got = rank(x["query"], x["vectors"], weights, k=k, now_ms=NOW, timestamps=x["timestamps"],
                   extra=x["extra"], mask=mask, min_score=options.get("min_score"), metric=metric)
        want = hybrid_topk(
            x["query"], x["vectors"], k=min(k, len(x["vectors"])), metric=metric, w_sim=weights.similarity,
            w_rec=weights.recency, w_extra=weights.extra, timestamps=x["timestamps"], now_ms=NOW,
            half_life_ms=weights.half_life_ms, tau_ms=weights.tau_ms, extra=x["extra"], mask=mask,
            min_score=options.get("min_score"),
        )
        real = want.indices >= 0
        assert got.indices.tolist() == want.indices[real].tolist()
        np.testing.assert_array_equal(got.scores, want.scores[real])
        np.testing.assert_array_equal(got.similarities, want.similarities[real])
        # The cache's inverse norms change nothing, bit for bit.
        cached = rank(x["query"], x["vectors"], weights, k=k, now_ms=NOW, timestamps=x["timestamps"],
                      extra=x["extra"], mask=mask, min_score=options.get("min_score"), metric=metric,
                      inv_norms=row_norms(x["vectors"]).inv)
        assert all(a.tobytes() == b.tobytes() for a, b in zip(cached, got, strict=True))


def test_rank_edge_cases() -> None:
    x = _inputs(0, n=5)
    q, v = x["query"], x["vectors"]
    assert len(rank(q, v[:0], Weights(), k=3).indices) == 0
    assert len(rank(q, v, Weights(), k=3, mask=np.zeros(5, bool)).indices) == 0
    assert len(rank(q, v, Weights(), k=50).indices) == 5
    assert len(rank(q, v, Weights(), k=5, min_score=2.0).indices) == 0  # no padding, ever
    # A term with weight 0 needs no input; a term with a weight does.
    assert len(rank(q, v, Weights(recency=0.0, extra=0.0), k=2).indices) == 2
    with pytest.raises(InvalidInputError, match="timestamps"):
        rank(q, v, Weights(recency=0.1, tau_ms=DAY), k=2)
    with pytest.raises(InvalidInputError, match="extra"):
        rank(q, v, Weights(extra=0.1), k=2)
    for bad in (0, -1, True, 2.0):
        with pytest.raises(InvalidInputError, match="k"):
            rank(q, v, Weights(), k=bad)  # type: ignore[arg-type]


# -- Table.search ----------------------------------------------------------------------------------


def test_table_search_takes_weights(tmp_path: Path) -> None:
    x = _inputs(4, n=120, d=16)
    t = mindcore.open(tmp_path).table("t", {"importance": pa.float32()}, vectors=True,
                                      embedder=HashEmbedder(dim=16))
    t.upsert("ns", [{"id": f"r{i}", "vector": x["vectors"][i], "updated_at": int(x["timestamps"][i]),
                     "importance": float(x["extra"][i])} for i in range(120)])
    w = Weights(0.6, 0.2, 0.2, tau_ms=30 * DAY)
    loose = t.search("ns", x["query"], k=7, w_sim=0.6, w_rec=0.2, w_extra=0.2, tau_ms=30 * DAY, now_ms=NOW,
                     extra_column="importance")
    given = t.search("ns", x["query"], k=7, weights=w, now_ms=NOW, extra_column="importance")
    assert [(h.id, h.score) for h in given] == [(h.id, h.score) for h in loose]
    direct = rank(x["query"], x["vectors"], w, k=7, now_ms=NOW, timestamps=x["timestamps"], extra=x["extra"])
    assert [h.id for h in given] == [f"r{i}" for i in direct.indices]
    assert [h.score for h in given] == direct.scores.tolist()
    # The search computed the rows' norms once, into the cache, for the next query.
    e = t.cached("ns")
    assert e._norms is not None
    np.testing.assert_array_equal(e._norms.inv, row_norms(e.matrix).inv)
    with pytest.raises(ValueError, match="not both"):
        t.search("ns", x["query"], weights=w, w_sim=0.5, extra_column="importance")
    with pytest.raises(ValueError, match="needs half_life_ms or tau_ms"):
        t.search("ns", x["query"], w_rec=0.5)


# -- the mind --------------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.t = NOW - 90 * DAY

    def __call__(self) -> int:
        return self.t


def test_mind_recall_ranks_as_the_kernel_did(tmp_path: Path) -> None:
    from mindcore.mind import Belief, Mind, Reflection
    from mindcore.mind.recall import RECALL_WEIGHTS, TAU_MS, W_CONFIDENCE, W_RECENCY, W_SIMILARITY

    assert Weights(W_SIMILARITY, W_RECENCY, W_CONFIDENCE, tau_ms=TAU_MS) == RECALL_WEIGHTS
    clock = _Clock()
    mind = Mind(mindcore.open(tmp_path), agent="a", embedder=HashEmbedder(), clock=clock)
    topics = ["postgres", "latency", "budget", "hiring", "kafka", "pricing", "oncall", "backups"]
    for i, topic in enumerate(topics * 3):
        clock.t += 3 * DAY
        mind.believe(f"note {i}: the {topic} work needs attention in week {i}",
                     confidence=("low", "medium", "high")[i % 3], tags=["ops"] if i % 2 else None)
        if i % 4 == 0:
            mind.reflect(f"lesson {i}: {topic} planning went {'well' if i % 8 else 'badly'}",
                         tags=["ops"] if i % 8 else None)
    clock.t = NOW
    snap = mind._repo.snapshot()
    query = mind._embed(["what about the postgres and kafka work?"])[0]
    for kind in (Belief, Reflection):
        idx = snap.index(kind)
        for tags, threshold in ((None, 0.0), (["ops"], 0.1)):
            got = idx.search(query, k=6, now=NOW, min_score=threshold, include_expired=False, tags=tags, pinned=None)
            mask = idx.expires > NOW
            for tag in tags or ():
                mask &= idx.tag_mask(tag)
            top = hybrid_topk(query, idx.matrix, k=min(6, len(idx.entries)), metric="cosine", w_sim=0.6, w_rec=0.2,
                              w_extra=0.2, timestamps=idx.created, now_ms=NOW, tau_ms=30 * DAY, extra=idx.weight,
                              mask=None if mask.all() else mask, min_score=threshold)
            want = [(idx.entries[int(i)].id, float(s)) for i, s in zip(top.indices, top.scores, strict=True) if i >= 0]
            assert [(e.id, s) for e, s in got] == want and want
    results = mind.recall("what about the postgres and kafka work?", type="belief", threshold=0.0, limit=6)
    idx = snap.index(Belief)
    top = hybrid_topk(query, idx.matrix, k=6, w_sim=0.6, w_rec=0.2, w_extra=0.2, timestamps=idx.created,
                      now_ms=NOW, tau_ms=30 * DAY, extra=idx.weight, mask=idx.expires > NOW, min_score=0.0)
    assert [r.id for r in results] == [idx.entries[int(i)].id for i in top.indices if i >= 0]
    # The near-duplicate check: the closest unexpired belief at cosine >= threshold.
    first = idx.entries[int(top.indices[0])]
    assert snap.similar_belief(idx.matrix[int(top.indices[0])], 0.999, NOW) == first.id
    assert snap.similar_belief(-idx.matrix[0], 0.999, NOW) is None
    expired = int(np.argmin(idx.expires))
    assert idx.expires[expired] <= NOW  # an expired belief is never a duplicate
    assert snap.similar_belief(idx.matrix[expired], 0.999, NOW) is None


# -- long-term memory ------------------------------------------------------------------------------


def _ltm(tmp_path: Path, **kwargs: Any) -> Any:
    from mindcore.ltm import LongTermMemory

    return LongTermMemory(mindcore.open(tmp_path), user_id="u", embedder=HashEmbedder(), clock=lambda: NOW,
                          **kwargs)


_FACTS = [
    "Prefers green tea in the morning", "Works as a nurse at the city hospital", "Has two cats, Miso and Tofu",
    "Allergic to peanuts", "Training for a marathon in October", "Lives in Lyon since 2019",
    "Drives an old blue Volvo", "Learning Japanese on weekends", "Sister is called Ana",
    "Dislikes horror movies", "Plays the cello in a quartet", "Moving to Porto next spring",
]


def _remember_facts(ltm: Any) -> None:
    ltm.remember_many([{"text": f, "importance": (i % 5) / 4, "created_at": NOW - (i * 7 + 1) * DAY}
                       for i, f in enumerate(_FACTS)])


@pytest.mark.parametrize("lexical", [0.0, 1.0])
def test_ltm_recall_ranks_as_the_kernel_did(tmp_path: Path, lexical: float) -> None:
    from mindcore.kernels import BM25Index
    from mindcore.ltm import RecallWeights
    from mindcore.ltm._lexical import lexical_terms
    from mindcore.ltm._repo import LEXICAL_FLOOR
    from mindcore.ltm.types import indexed_text

    weights = RecallWeights(lexical=lexical)
    assert weights.hybrid == Weights(0.7, 0.2, 0.1, half_life_ms=30 * DAY)
    ltm = _ltm(tmp_path, weights=weights)
    _remember_facts(ltm)
    by_id = {m.id: m for m in ltm.memories()}
    ids, matrix = ltm._repo.vectors()
    memories = [by_id[i] for i in ids]
    recency = np.array([max(m.created_at, m.last_accessed_at) for m in memories], dtype=np.int64)
    importance = np.array([m.importance for m in memories], dtype=np.float32)
    for query in ["what does the user drink in the morning?", "cats", "where will they move to?"]:
        got = ltm.recall(query, k=4, touch=False)
        q = ltm._embed([query])[0]
        extra = importance
        w_extra = 0.1
        if lexical:
            bm25 = BM25Index([lexical_terms(indexed_text(m.text, m.context)) for m in memories])
            scores = bm25.scores(lexical_terms(query))
            extra = np.ascontiguousarray(0.1 * importance + (1.0 / max(float(scores.max()), LEXICAL_FLOOR)) * scores,
                                         dtype=np.float32)
            w_extra = 1.0
        top = hybrid_topk(q, matrix, k=4, metric="cosine", w_sim=0.7, w_rec=0.2, w_extra=w_extra, timestamps=recency,
                          now_ms=NOW, half_life_ms=30 * DAY, extra=extra)
        assert [m.id for m in got] == [ids[int(i)] for i in top.indices]
        np.testing.assert_allclose([m.score for m in got], top.scores, rtol=1e-6)


def test_ltm_eviction_ranks_as_the_kernel_did(tmp_path: Path) -> None:
    ltm = _ltm(tmp_path, max_items=len(_FACTS))
    _remember_facts(ltm)
    stored = ltm.memories()
    ids = [m.id for m in stored]
    from mindcore.ltm._repo import NewMemory

    new = [ltm._repo.new_memory(NewMemory(text=t, kind="fact", importance=imp, created_at=c, source="manual"))
           for t, imp, c in [("Owns a red kayak", 0.0, NOW - 200 * DAY), ("Speaks Basque", 1.0, NOW)]]
    new_vectors = ltm._embed([m.text for m in new])
    victims, dropped = ltm._plan_eviction(ids, new, new_vectors, NOW)
    # The former computation: 0.2·2^(-age/30d) + 0.1·importance over stored and new together.
    every = [*stored, *new]
    ages = np.array([max(m.created_at, m.last_accessed_at) for m in stored] + [m.created_at for m in new])
    scores = 0.2 * 2.0 ** (-(NOW - ages) / (30 * DAY)) + 0.1 * np.array([m.importance for m in every])
    order = np.argsort(-scores.astype(np.float32), kind="stable")
    cut = order[len(_FACTS):]
    assert victims == [ids[i] for i in cut if i < len(ids)]
    assert dropped == {int(i) - len(ids) for i in cut if i >= len(ids)}
    assert len(victims) + len(dropped) == 2 and 0 in dropped  # the old, unimportant newcomer goes
