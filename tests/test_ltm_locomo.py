"""LoCoMo recall@k with the hashing embedder: the whole evaluation (10 conversations, 5,882 turns,
1,977 questions) runs in seconds, so a drop in retrieval quality fails the suite.

Floors sit just under the measured values (default weights: seed hybrid + BM25 fusion; each turn
stored with the previous turn and the speaker as its context: 61.8 / 69.4 / 77.4 / 82.3 overall,
58.9 / 65.7 / 74.4 / 79.5 without category 5; bare turn texts measured 52.2 / 58.6 / 66.8 / 73.2).
The quality figures with the default embedder come from ``benches/bench_locomo.py``.
"""

from __future__ import annotations

import itertools

import pytest
from conftest import shared_data

from mindcore.embed import HashEmbedder
from mindcore.eval.locomo import KS, Conversation, bm25_rankings, evaluate_locomo, load_locomo, score_rankings
from mindcore.ltm import RecallOptions, RecallWeights


@pytest.fixture(scope="module")
def conversations() -> list[Conversation]:
    return load_locomo(shared_data("locomo", "locomo10.json"))


def test_loader_follows_the_scoring_rules(conversations: list[Conversation]) -> None:
    assert len(conversations) == 10
    assert sum(len(c.turns) for c in conversations) == 5_882
    # 1,986 questions, of which 9 have no evidence id that matches a turn.
    assert sum(len(c.questions) for c in conversations) == 1_977
    for c in conversations:
        known = {t.dia_id for t in c.turns}
        assert all(q.evidence and q.evidence <= known for q in c.questions)
        assert c.now_ms == max(t.timestamp_ms for t in c.turns)
    first = conversations[0].turns
    assert first[0].dia_id == "D1:1" and first[0].text.startswith("Hey Mel!")
    assert any("[image: " in t.text for t in first)  # blip captions are part of the turn


def test_scorer_reproduces_the_bm25_floor(conversations: list[Conversation]) -> None:
    report = score_rankings(conversations, bm25_rankings())
    published = {5: 46.3, 10: 54.2, 25: 63.0, 50: 70.7}  # shared/data/README.md
    for k in KS:
        assert abs(100 * report.overall[k] - published[k]) < 1.5, (k, report.overall[k])


def test_locomo_recall_with_the_hashing_embedder(conversations: list[Conversation]) -> None:
    report = evaluate_locomo(conversations=conversations, embedder=HashEmbedder())
    assert report.n["all"] == 1_977 and report.n["without_adversarial"] == 1_531
    floors = {5: 61.1, 10: 68.7, 25: 76.7, 50: 81.6}
    for k in KS:
        assert 100 * report.overall[k] >= floors[k], (k, report.overall)
    floors_no5 = {5: 58.2, 10: 65.0, 25: 73.7, 50: 78.8}
    for k in KS:
        assert 100 * report.without_adversarial[k] >= floors_no5[k], (k, report.without_adversarial)


def test_lexical_fusion_beats_the_seed_score_on_locomo(conversations: list[Conversation]) -> None:
    subset = conversations[:3]
    fused = evaluate_locomo(conversations=subset, embedder=HashEmbedder())
    seed = evaluate_locomo(conversations=subset, embedder=HashEmbedder(), weights=RecallWeights(lexical=0.0))
    for k in KS:
        assert fused.overall[k] > seed.overall[k] + 0.1, (k, fused.overall, seed.overall)


def test_turn_context_is_the_previous_turn_and_the_speaker(conversations: list[Conversation]) -> None:
    first = conversations[0].turns
    assert first[0].context == f"{first[0].speaker}:"  # a session's first turn: the speaker only
    assert first[1].context == f"{first[0].speaker}: {first[0].text}\n{first[1].speaker}:"
    starts = [t for prev, t in itertools.pairwise(first) if t.dia_id.split(":")[0] != prev.dia_id.split(":")[0]]
    assert starts and all(t.context == f"{t.speaker}:" for t in starts)  # no context across sessions


def test_turn_context_beats_bare_turns_on_locomo(conversations: list[Conversation]) -> None:
    subset = conversations[:3]
    alone = RecallOptions(neighbours=0)  # the context lever alone
    with_context = evaluate_locomo(conversations=subset, embedder=HashEmbedder(), options=alone)
    bare = evaluate_locomo(conversations=subset, embedder=HashEmbedder(), context=False, options=alone)
    for k in KS:
        assert with_context.overall[k] > bare.overall[k] + 0.05, (k, with_context.overall, bare.overall)


def test_plain_remember_keeps_every_turn(conversations: list[Conversation]) -> None:
    """Conversation turns stored one plain ``remember("{speaker}: {text}")`` at a time: no turn is
    retired, only verbatim repeats are not stored twice (at most 0.5% in all), and recall equals
    storing every turn as it is."""
    chosen = conversations[:2]
    judged = evaluate_locomo(conversations=chosen, embedder=HashEmbedder(), plain=True, dedupe=True)
    kept = evaluate_locomo(conversations=chosen, embedder=HashEmbedder(), plain=True, dedupe=False)
    turns = sum(len(c.turns) for c in chosen)
    assert judged.writes.get("retired", 0) == 0, judged.writes
    assert judged.writes.get("duplicate", 0) <= 0.005 * turns, judged.writes
    for k in KS:
        assert abs(judged.overall[k] - kept.overall[k]) <= 0.005, (k, judged.overall, kept.overall)
