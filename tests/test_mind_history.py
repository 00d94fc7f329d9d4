"""A belief that explicitly negates the one it matches, or that the agent says replaces it
(``replaces``), supersedes it, and the replaced content goes into the belief's history; a repeat
merges with no history; a belief that only reads alike is kept beside the held one (one judgement
with long-term memory: nothing merges on a guess).

Every path a belief can merge by: the run's draft, the committed store at ``believe`` time, and the
re-check at flush against a belief another process stored meanwhile.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import Clock

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.mind import BeliefChange, Mind, MindError
from mindcore.mind.draft import DraftBelief, DraftBuffer, merge_belief, plan_flush
from mindcore.mind.entries import BELIEF_HISTORY_LIMIT

UP = "The staging server is up"
DOWN = "The staging server is not up"
ANTONYM = "The staging server is down"


@pytest.fixture
def mind(tmp_path: Path, clock: Clock) -> Mind:
    return Mind(tmp_path / "store", agent="ops", embedder=HashEmbedder(), clock=clock)


def test_a_contradiction_supersedes_and_is_recorded(mind: Mind, clock: Clock, tmp_path: Path) -> None:
    first = mind.believe(UP, confidence="high")
    clock.advance(ms=5000)
    second = mind.believe(DOWN)
    assert second.action == "updated_store" and second.id == first.id
    assert second.replaced is not None and second.replaced.content == UP
    belief = mind.get(first.id)
    assert isinstance(belief, mindcore.Belief) and belief.content == DOWN
    [change] = mind.history(first.id)
    assert change == BeliefChange(UP, clock(), "contradiction", change.reason)
    assert "negation" in change.reason
    assert belief.to_dict()["history"] == [change.to_dict()]
    assert [b.content for b in mind.beliefs()] == [DOWN]
    # Durable: another process opening the store reads the same history.
    mind.close()
    again = Mind(tmp_path / "store", agent="ops", embedder=HashEmbedder())
    assert again.history(first.id) == [change]


def test_a_contradiction_within_one_run(mind: Mind, clock: Clock) -> None:
    with mind.run() as run:
        first = run.believe(UP)
        clock.advance(ms=10)
        second = run.believe(DOWN)
        assert second.action == "updated_draft" and second.id == first.id
        assert second.replaced is not None and second.replaced.content == UP
    assert [c.content for c in mind.history(first.id)] == [UP]
    assert mind.get(first.id).content == DOWN  # type: ignore[union-attr]


def test_paraphrases_still_merge_without_history(mind: Mind) -> None:
    first = mind.believe(UP)
    again = mind.believe("the staging server is up")
    assert again.id == first.id and again.replaced is None
    assert mind.get(first.id).content == "the staging server is up"  # type: ignore[union-attr]
    assert mind.history(first.id) == []
    assert "history" not in mind.get(first.id).to_dict()  # type: ignore[union-attr]


def test_a_belief_that_only_reads_alike_is_kept_beside(mind: Mind) -> None:
    first = mind.believe("The API rate limit is 100 requests per minute")
    second = mind.believe("The API rate limit is now 200 requests per minute")
    assert (second.action, second.replaced) == ("created", None) and second.id != first.id
    assert sorted(b.content for b in mind.beliefs()) == ["The API rate limit is 100 requests per minute",
                                                        "The API rate limit is now 200 requests per minute"]
    prod = mind.believe("The prod server is up")
    with mind.run() as run:  # within one run's draft too
        again = run.believe("The prod server is down")
    assert again.id != prod.id and mind.history(prod.id) == []


def test_the_agent_says_what_a_belief_replaces(mind: Mind) -> None:
    first = mind.believe("The API rate limit is 100 requests per minute")
    second = mind.believe("The API rate limit is now 200 requests per minute", replaces=first.id)
    assert (second.action, second.id) == ("updated_store", first.id)
    [change] = mind.history(first.id)
    assert (change.content, change.relation) == ("The API rate limit is 100 requests per minute", "update")
    assert "replaced by the agent" in change.reason
    assert [b.content for b in mind.beliefs()] == ["The API rate limit is now 200 requests per minute"]
    with mind.run() as run:  # a belief of the same run
        a = run.believe(UP)
        b = run.believe(ANTONYM, replaces=a.id)
        assert (b.action, b.id) == ("updated_draft", a.id) and b.replaced is not None
    assert mind.get(a.id).content == ANTONYM  # type: ignore[union-attr]
    with pytest.raises(MindError, match="replaces: no belief"):
        mind.believe("x", replaces="no-such-id")


def test_the_tool_tells_the_model_what_it_replaced(mind: Mind) -> None:
    first = mind.believe(UP)
    out = mind.tools.call("mind_believe", {"content": DOWN})
    assert out["status"] == "ok" and out["replaced"]["content"] == UP
    assert out["replaced"]["relation"] == "contradiction"
    plain = mind.tools.call("mind_believe", {"content": "The build cache lives in S3"})
    assert "replaced" not in plain
    chosen = mind.tools.call("mind_believe", {"content": "The build cache lives in GCS", "replaces": plain["id"]})
    assert chosen["id"] == plain["id"] and chosen["replaced"]["content"] == "The build cache lives in S3"
    bad = mind.tools.call("mind_believe", {"content": "y", "replaces": "nope"})
    assert bad["status"] == "error" and "replaces" in bad["error"]
    assert first.id != plain["id"]


def test_history_keeps_the_latest_entries(mind: Mind, clock: Clock) -> None:
    first = mind.believe(UP)
    for i in range(BELIEF_HISTORY_LIMIT + 5):
        clock.advance(ms=1)
        mind.believe(DOWN if i % 2 == 0 else UP)
    history = mind.history(first.id)
    assert len(history) == BELIEF_HISTORY_LIMIT
    assert history[-1].replaced_at == clock() and history == sorted(history, key=lambda c: c.replaced_at)


def test_history_of_an_unknown_id_raises(mind: Mind) -> None:
    goal = mind.set_goal("Ship v2")
    for bad in ("nope", goal):
        with pytest.raises(MindError, match="no belief"):
            mind.history(bad)


# -- the flush rules, without a store -------------------------------------------------------------------


def _vec(i: int) -> np.ndarray:
    v = np.zeros(8, dtype=np.float32)
    v[i] = 1.0
    return v


def _row(content: str, **kw: Any) -> dict[str, Any]:
    return {"id": "b", "type": "belief", "content": content, "confidence": "medium", "tags": [], "expires_at": None,
            "error": False, "created_at": 1, "updated_at": 1, "vector": _vec(0), **kw}


def test_merge_belief_appends_to_the_stored_history() -> None:
    earlier = json.dumps([{"content": "older", "replaced_at": 3, "relation": "update", "reason": "r"}])
    out = merge_belief(_row(UP, history=earlier), DraftBelief("b", DOWN, "medium", None, None, False, _vec(0), 40),
                       clean=True, now=50)
    chosen = merge_belief(_row(UP), DraftBelief("b", ANTONYM, "medium", None, None, False, _vec(0), 40, chosen=True),
                          clean=True, now=50)
    assert [(h["content"], h["relation"]) for h in json.loads(chosen["history"])] == [(UP, "update")]
    stored = json.loads(out["history"])
    assert [(h["content"], h["replaced_at"], h["relation"]) for h in stored] == [
        ("older", 3, "update"), (UP, 40, "contradiction")]
    same = merge_belief(_row(UP), DraftBelief("b", UP.lower(), "medium", None, None, False, _vec(0), 40),
                        clean=True, now=50)
    assert same["history"] is None and same["content"] == UP.lower()


class _View:
    """A store in which another process stored ``UP`` after this run checked."""

    version = 9

    def rows(self, ids: Any) -> dict[str, dict[str, Any]]:
        return {"other": _row(UP, id="other")} if "other" in ids else {}

    def active_goal_count(self) -> int:
        return 0

    def pinned_ids(self, now: int) -> set[str]:
        return set()

    def similar_belief(self, vector: np.ndarray, threshold: float, now: int) -> str | None:
        return "other"


def test_flush_recheck_supersedes_a_belief_stored_meanwhile() -> None:
    draft = DraftBuffer()
    draft.put_belief(DraftBelief("mine", DOWN, "medium", None, None, False, _vec(0), 70, seen_version=4))
    plan = plan_flush(draft, _View(), clean=True, now=80, max_goals=5, max_pinned=5, dedup_threshold=0.85)
    [row] = plan.rows
    assert row["id"] == "other" and row["content"] == DOWN
    assert [h["content"] for h in json.loads(row["history"])] == [UP]


def test_ahistory_is_history(mind: Mind) -> None:
    belief = mind.believe(UP)
    mind.believe(DOWN)
    want = mind.history(belief.id)
    assert [c.content for c in want] == [UP] and asyncio.run(mind.ahistory(belief.id)) == want
    with pytest.raises(MindError, match="no belief"):
        asyncio.run(mind.ahistory("nope"))
