"""mindcore.mind on a real store: header, recall, the seven tools, the draft buffer and flush."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import Clock

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.mind import Belief, Mind, MindConfig, MindError, Reflection

DAY = 86_400_000
T0 = int(datetime(2026, 5, 20, 12, 0, tzinfo=UTC).timestamp() * 1000)


def make(store: Any, clock: Clock, emb: Any, agent: str = "tester", **cfg: Any) -> Mind:
    return Mind(store, agent=agent, embedder=emb, config=MindConfig(**cfg), clock=clock)


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["status"] == "ok", result
    return result


# -- header -----------------------------------------------------------------------------------------


def test_empty_store_has_no_header(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with mind.run() as run:
        assert run.header == ""
    assert mind.header() == ""
    # entries that no section shows (a medium belief, a completed goal) still make no block
    other = make(store, clock, emb, agent="nothing-to-show")
    other.believe("A medium-confidence belief", confidence="medium")
    other.complete_goal(other.set_goal("A goal already done"))
    assert other.header() == "" and other.run().header == ""
    assert len(run.tools) == 7 and {t["function"]["name"] for t in run.tools.openai()} == {
        "mind_recall", "mind_believe", "mind_reflect", "mind_unpin_reflection", "mind_set_goal",
        "mind_update_goal", "mind_complete_goal"}


def test_header_shows_the_committed_store(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with mind.run() as run:
        gid = ok(run.call("mind_set_goal", {"description": "Migrate all production databases to PostgreSQL",
                                            "priority": "high", "dueBy": "2026-06-01"}))["id"]
        ok(run.call("mind_set_goal", {"description": "Tidy the wiki", "priority": "low"}))
        ok(run.call("mind_set_goal", {"description": "Review open PRs"}))
        ok(run.call("mind_reflect", {"content": "Always confirm destructive operations before executing them.",
                                     "pin": True}))
        ok(run.call("mind_believe", {"content": "The staging environment uses a different API key than production.",
                                     "confidence": "high"}))
        ok(run.call("mind_believe", {"content": "Rate limits on the payments API are 100 req/min.",
                                     "confidence": "medium"}))
        ok(run.call("mind_reflect", {"content": "The user prefers concise bullet-point summaries over prose."}))
        assert run.header == ""  # the header is the store as it was when the run started
    clock.advance(1)
    with mind.run() as run:
        ok(run.call("mind_update_goal", {"id": gid, "progress": "schema migration started"}))
        ok(run.call("mind_update_goal", {"id": gid, "progress": "schema migration complete"}))
    with mind.run() as run:
        assert run.header == (
            "--- AGENT MIND ---\n\n"
            "## Goals\n"
            "[high] Migrate all production databases to PostgreSQL — last progress: schema migration complete "
            "(due: 2026-06-01)\n"
            "[normal] Review open PRs\n"
            "[low] Tidy the wiki\n\n"
            "## Standing Rules (Pinned)\n- Always confirm destructive operations before executing them.\n\n"
            "## Beliefs\n- The staging environment uses a different API key than production. (high confidence)\n\n"
            "## Recent Reflections\n- [2026-05-20] The user prefers concise bullet-point summaries over prose.\n\n"
            "---"
        )


FACTS = [
    "The billing service runs in Frankfurt",
    "Our CI pipeline takes twelve minutes",
    "Kafka retention is set to three days",
    "The mobile app targets iOS 17 and later",
    "Grafana dashboards live in the ops folder",
]


def test_header_filters_and_orders(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    mind.reflect("An old observation about caching layers")
    clock.advance(1)
    for i in range(5):
        clock.advance(0.1)
        mind.reflect(f"Reflection number {i} on topic {'abcde'[i]}")
        mind.believe(FACTS[i], confidence="high")
    mind.believe("A short-lived fact about deploy windows", confidence="high", expires_in="1d")
    with pytest.raises(ZeroDivisionError), mind.run() as run:
        run.believe("A belief from a crashed run about queues", confidence="high")
        run.reflect("A reflection from a crashed run about retries")
        1 / 0  # noqa: B018
    clock.advance(6)  # the first reflection is now 7.5 days old, the others 6.0 to 6.4
    text = mind.header()
    beliefs = _section(text, "## Beliefs")
    assert beliefs == [f"- {FACTS[i]} (high confidence)" for i in (4, 3, 2, 1, 0)]  # newest first; the expired and the crashed one left out
    recent = _section(text, "## Recent Reflections")
    assert [line.split("] ")[1] for line in recent] == [f"Reflection number {i} on topic {'abcde'[i]}"
                                                        for i in (4, 3, 2)]  # at most 3, clean, in window


def test_header_budget_ends_a_list_at_the_first_line_that_does_not_fit(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb, token_budget=40)
    mind.reflect("A reflection that still gets its chance")
    clock.advance(0.01)
    mind.believe("Old short belief about logs", confidence="high")
    clock.advance(0.01)
    mind.believe("A much longer belief that will not fit in the remaining budget at all, " * 2, confidence="high")
    clock.advance(0.01)
    mind.believe("Newest short belief about alerts", confidence="high")
    text = mind.header()
    # "- Newest short belief about alerts (high confidence)" = 52 chars -> 13 tokens; the long one
    # does not fit and ends the beliefs, although the old short one would have fitted.
    assert _section(text, "## Beliefs") == ["- Newest short belief about alerts (high confidence)"]
    assert _section(text, "## Recent Reflections") == ["- [2026-05-20] A reflection that still gets its chance"]


def test_goals_and_pinned_rules_are_outside_the_budget(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb, token_budget=10)
    rules = [f"Standing rule {i}: " + "always double-check the deployment target before running it " * 2
             for i in range(3)]
    for rule in rules:
        mind.reflect(rule, pin=True)
        clock.advance(0.01)
    mind.set_goal("A goal with a long description " * 5, priority="high")
    mind.believe("Fact A", confidence="high")  # "- Fact A (high confidence)": 26 chars -> 7 tokens
    text = mind.header()
    assert _section(text, "## Standing Rules (Pinned)") == [f"- {r.strip()}" for r in rules]  # each far over 10 tokens
    assert len(_section(text, "## Goals")) == 1
    assert _section(text, "## Beliefs") == ["- Fact A (high confidence)"]  # the budget is still whole
    zero = make(store, clock, emb, token_budget=0)
    text = zero.header()
    assert _section(text, "## Beliefs") == [] and len(_section(text, "## Standing Rules (Pinned)")) == 3


def _section(text: str, title: str) -> list[str]:
    lines = text.split("\n")
    if title not in lines:
        return []
    out, i = [], lines.index(title) + 1
    while lines[i]:
        out.append(lines[i])
        i += 1
    return out


# -- recall -----------------------------------------------------------------------------------------

TEXTS = [
    ("belief", "The payments API rate limit is 100 requests per minute", "high"),
    ("belief", "The payments API uses OAuth client credentials", "low"),
    ("belief", "Staging deploys happen every Tuesday", "medium"),
    ("reflection", "Searching the payments docs first saved time", None),
    ("reflection", "Rate limit errors came from the payments sandbox", None),
]


def _seed(mind: Mind, clock: Clock) -> dict[str, tuple[str, int, float]]:
    """Store TEXTS at different ages; returns id -> (text, created_at, confidence term)."""
    out = {}
    for kind, text, conf in TEXTS:
        if kind == "belief":
            bid = mind.believe(text, confidence=conf, tags=["api"] if "API" in text else [], expires_in="365d").id
            out[bid] = (text, clock.now, {"low": 0.3, "medium": 0.6, "high": 1.0}[conf or "medium"])
        else:
            out[mind.reflect(text, tags=["api"]).id] = (text, clock.now, 0.6)
        clock.advance(3)
    return out


def test_recall_scores_match_the_formula(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    stored = _seed(mind, clock)
    clock.advance(2)
    query = "payments API rate limit"
    results = mind.recall(query, threshold=0.0, limit=10)
    assert [r.type for r in results] == ["belief"] * 3 + ["reflection"] * 2
    q = emb.embed([query])[0]
    for r in results:
        text, created, weight = stored[r.id]
        cos = float(np.dot(q, emb.embed([text])[0]))
        want = 0.6 * cos + 0.2 * math.exp(-(clock.now - created) / DAY / 30) + 0.2 * weight
        assert r.score == pytest.approx(want, abs=1e-5)
    for kind in ("belief", "reflection"):
        scores = [r.score for r in results if r.type == kind]
        assert scores == sorted(scores, reverse=True)


def test_recall_threshold_drops_below_and_keeps_equal(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    _seed(mind, clock)
    everything = mind.recall("payments API", type="belief", threshold=0.0, limit=10)
    cut = everything[1].score
    assert cut is not None
    kept = mind.recall("payments API", type="belief", threshold=cut, limit=10)
    assert [r.id for r in kept] == [r.id for r in everything[:2]]
    default = mind.recall("payments API", type="belief", limit=10)  # retrieval_threshold 0.35
    assert all(r.score is not None and r.score >= 0.35 for r in default)
    assert len(default) == sum(1 for r in everything if r.score is not None and r.score >= 0.35)


def test_recall_filters(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    _seed(mind, clock)
    pinned = mind.reflect("Always check the payments sandbox status page", pin=True).id
    assert {r.id for r in mind.recall("payments", type="reflection", pinned=True, threshold=0)} == {pinned}
    assert pinned not in {r.id for r in mind.recall("payments", type="reflection", pinned=False, threshold=0)}
    tagged = mind.recall("payments", type="all", tags=["api"], threshold=0, limit=10)
    assert {r.type for r in tagged} == {"belief", "reflection"}
    assert all("api" in r.tags for r in tagged) and len(tagged) == 4
    assert len(mind.recall("payments", type="belief", threshold=0, limit=2)) == 2
    both = mind.recall("payments", threshold=0, limit=1)
    assert [r.type for r in both] == ["belief", "reflection"]  # limit applies per type
    as_float = ok(mind.run().call("mind_recall", {"query": "payments", "threshold": 0, "limit": 1.0}))["results"]
    assert [r["id"] for r in as_float] == [r.id for r in both]  # JSON 1.0 is an integer
    short = mind.believe("The payments webhook secret rotates weekly", expires_in="1h").id
    clock.advance(1)
    assert short not in {r.id for r in mind.recall("payments webhook", type="belief", threshold=0, limit=10)}
    expired = mind.recall("payments webhook", type="belief", threshold=0, limit=10, include_expired=True)
    assert short in {r.id for r in expired}
    assert mind.recall("payments", type="goal") == []


def _formula(emb: Any, query: str, text: str, age_ms: int, weight: float) -> float:
    cos = float(np.dot(emb.embed([query])[0], emb.embed([text])[0]))
    return 0.6 * cos + 0.2 * math.exp(-age_ms / DAY / 30) + 0.2 * weight


def test_recall_scores_crashed_run_entries_as_low_confidence(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    clean = mind.believe("The cron job runs at midnight UTC", confidence="high").id
    with pytest.raises(RuntimeError), mind.run() as run:
        crashed = run.believe("The cron job retries three times", confidence="high").id
        crashed_r = run.reflect("The cron job logs were hard to find").id
        raise RuntimeError("crash")
    clock.advance(2)
    got = {r.id: r for r in mind.recall("cron job", threshold=0, limit=10)}
    assert got[clean].score == pytest.approx(
        _formula(emb, "cron job", "The cron job runs at midnight UTC", 2 * DAY, 1.0), abs=1e-5)
    assert got[crashed].score == pytest.approx(
        _formula(emb, "cron job", "The cron job retries three times", 2 * DAY, 0.3), abs=1e-5)
    assert got[crashed_r].score == pytest.approx(
        _formula(emb, "cron job", "The cron job logs were hard to find", 2 * DAY, 0.3), abs=1e-5)
    assert got[crashed].to_dict()["error"] is True and got[crashed].to_dict()["confidence"] == "high"


def test_recall_age_counts_from_creation(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    bid = mind.believe("The nightly backup takes forty minutes", confidence="medium", expires_in="365d").id
    clock.advance(10)
    assert mind.believe("The nightly backup takes forty minutes", confidence="medium").action == "updated_store"
    clock.advance(5)
    [r] = mind.recall("nightly backup", type="belief", threshold=0)
    assert r.id == bid and r.entry.updated_at == clock.now - 5 * DAY
    assert r.score == pytest.approx(
        _formula(emb, "nightly backup", "The nightly backup takes forty minutes", 15 * DAY, 0.6), abs=1e-5)


def test_recall_tags_mean_all_tags(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    ids = {
        tuple(tags): mind.believe(f"Fact about the build cache number {i}", tags=tags).id
        for i, tags in enumerate([["ci"], ["ci", "cache"], ["cache"], ["ci", "cache", "linux"]])
    }
    both = mind.reflect("The build cache on CI was cold", tags=["cache", "ci"]).id
    mind.reflect("The build cache was warm", tags=["cache"])
    got = {r.id for r in mind.recall("build cache", tags=["ci", "cache"], threshold=0, limit=10)}
    assert got == {ids[("ci", "cache")], ids[("ci", "cache", "linux")], both}
    res = ok(mind.run().call("mind_recall", {"query": "build cache", "tags": ["cache", "ci"], "threshold": 0}))
    assert {r["id"] for r in res["results"]} == got


def test_recall_default_limit_is_five_per_type_and_results_are_goals_beliefs_reflections(
    store: Any, clock: Clock, emb: Any
) -> None:
    mind = make(store, clock, emb)
    for i in range(7):
        if i < 6:
            mind.set_goal(f"Release checklist item {i}")
        mind.believe(f"Release {FACTS[i % 5]} " + "abcdefg"[i] * 12)  # distinct: no two deduplicated
        mind.reflect(f"Release retrospective point {i}")
        clock.advance(0.1)
    assert len(mind.beliefs()) == 7
    res = ok(mind.run().call("mind_recall", {"query": "release", "threshold": 0}))["results"]
    assert [r["type"] for r in res] == ["goal"] * 5 + ["belief"] * 5 + ["reflection"] * 5
    assert all("score" not in r for r in res[:5]) and all(isinstance(r["score"], float) for r in res[5:])
    assert [r.type for r in mind.recall("release", threshold=0)] == [r["type"] for r in res]


def test_recall_goals_by_keyword(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    g1 = mind.set_goal("Migrate the billing database to PostgreSQL", priority="low")
    g2 = mind.set_goal("Write onboarding docs", priority="high", tags=["docs"])
    mind.believe("PostgreSQL 16 is the target version", confidence="high")
    res = mind.recall("postgresql migration plan", threshold=0)
    assert [r.type for r in res][:1] == ["goal"] and res[0].id == g1 and res[0].score is None
    assert [r.id for r in res if r.type == "goal"] == [g1]
    d = res[0].to_dict()
    assert d["type"] == "goal" and "score" not in d and d["status"] == "active"
    mind.complete_goal(g2, "published")
    assert mind.recall("onboarding", type="goal") == []
    done = mind.recall("onboarding", type="goal", status="completed")
    assert [r.id for r in done] == [g2] and done[0].to_dict()["outcome"] == "published"


def test_reads_see_committed_data_only(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with mind.run() as run:
        ok(run.call("mind_believe", {"content": "Invisible until the next run", "confidence": "high"}))
        assert ok(run.call("mind_recall", {"query": "Invisible until the next run", "threshold": 0}))["results"] == []
        assert mind.beliefs() == []
    res = mind.recall("Invisible until the next run", threshold=0)
    assert [r.content for r in res] == ["Invisible until the next run"]


# -- mind_believe ------------------------------------------------------------------------------------


def test_believe_dedupes_draft_then_store_then_creates(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with mind.run() as run:
        first = ok(run.call("mind_believe", {"content": "TSMC Q2 2026 capacity is fully booked.",
                                             "confidence": "medium", "tags": ["tsmc"]}))
        assert first["action"] == "created"
        again = ok(run.call("mind_believe", {"content": "TSMC Q2 2026 capacity is fully booked!",
                                             "confidence": "low"}))
        assert (again["action"], again["id"]) == ("updated_draft", first["id"])
        other = ok(run.call("mind_believe", {"content": "Samsung foundry yields improved in May"}))
        assert other["action"] == "created" and other["id"] != first["id"]
    [b] = [b for b in mind.beliefs() if b.id == first["id"]]
    assert (b.content, b.confidence, b.tags) == ("TSMC Q2 2026 capacity is fully booked!", "medium", ["tsmc"])
    created = b.created_at
    clock.advance(2)
    with mind.run() as run:
        upd = ok(run.call("mind_believe", {"content": "tsmc q2 2026 capacity is fully booked", "confidence": "high",
                                           "expiresIn": "7d"}))
        assert (upd["action"], upd["id"]) == ("updated_store", first["id"])
    b = mind.get(first["id"])  # type: ignore[assignment]
    assert isinstance(b, Belief)
    assert (b.content, b.confidence, b.tags) == ("tsmc q2 2026 capacity is fully booked", "high", ["tsmc"])
    assert b.created_at == created and b.updated_at == clock.now and b.expires_at == clock.now + 7 * DAY
    assert len(mind.beliefs()) == 2


def test_believe_checks_draft_then_concurrent_runs_then_store(tmp_path: Path, clock: Clock, emb: Any) -> None:
    path = tmp_path / "order"
    with mindcore.open(path) as s1, mindcore.open(path) as s2:
        mind = make(s1, clock, emb)
        a, b = mind.run(), mind.run()
        a_id = ok(a.call("mind_believe", {"content": "The office closes at six"}))["id"]
        # another process (a second store object: no shared in-flight claims) commits the same belief
        stored = make(s2, clock, emb).believe("The office closes at six", confidence="low").id
        assert stored != a_id
        # reads see what the other store object committed
        assert [r.id for r in mind.recall("office closes at six", type="belief", threshold=0)] == [stored]
        # run b: its draft is empty, run a holds the same text -> a's id, although the store has a match
        assert ok(b.call("mind_believe", {"content": " the OFFICE closes at six "})) == {
            "status": "ok", "action": "updated_draft", "id": a_id}
        # a different text held by no run goes to the store
        c = mind.run()
        c_res = ok(c.call("mind_believe", {"content": "The office closes at six!", "confidence": "high"}))
        assert (c_res["action"], c_res["id"]) == ("updated_store", stored)
        # now c's draft holds it: its own draft comes before run a's claim on the exact text
        assert ok(c.call("mind_believe", {"content": "The office closes at six"}))["id"] == stored
        assert ok(c.call("mind_believe", {"content": "The office closes at six"}))["action"] == "updated_draft"
        for run in (a, b, c):
            run.flush()
        [only] = mind.beliefs()  # every run merged into the one stored belief at its flush
        assert only.id == stored and only.confidence == "high" and mind._claims.held_by(a) == 0


def test_confidence_only_rises_unless_downgrade_allowed(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    bid = mind.believe("The cache TTL is five minutes", confidence="high", tags=["cache"]).id
    assert mind.believe("The cache TTL is five minutes", confidence="low").action == "updated_store"
    b = mind.get(bid)
    assert isinstance(b, Belief) and b.confidence == "high" and b.tags == ["cache"]
    mind.believe("The cache TTL is five minutes", confidence="low", allow_downgrade=True, tags=["ops"])
    b = mind.get(bid)
    assert isinstance(b, Belief) and b.confidence == "low" and b.tags == ["ops"]


def test_expiry_defaults_and_override(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb, ttl_defaults={"belief": "60d", "reflection": "90d"})
    b = mind.get(mind.believe("Default lifetime belief").id)
    assert isinstance(b, Belief) and b.expires_at == clock.now + 60 * DAY
    r = mind.get(mind.reflect("Reflections honour their ttl default").id)
    assert isinstance(r, Reflection) and r.expires_at == clock.now + 90 * DAY
    none = make(store, clock, emb, agent="no-ttl", ttl_defaults={"belief": None})
    b = none.get(none.believe("Never expires").id)
    assert isinstance(b, Belief) and b.expires_at is None
    clock.advance(91)
    assert mind.beliefs() == [] and mind.reflections() == []
    assert len(mind.reflections(include_expired=True)) == 1


def test_concurrent_runs_share_in_flight_beliefs(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    a, b = mind.run(), mind.run()
    ra = ok(a.call("mind_believe", {"content": "The release is on Friday", "confidence": "medium"}))
    rb = ok(b.call("mind_believe", {"content": "  the release is on friday ", "confidence": "high"}))
    assert (rb["action"], rb["id"]) == ("updated_draft", ra["id"])
    b.flush()
    a.flush()
    [only] = mind.beliefs()
    assert only.id == ra["id"] and only.confidence == "high"
    # claims are released at flush, even when a draft match changed the text (the seed leaks them)
    c = mind.run()
    ok(c.call("mind_believe", {"content": "Deploys freeze on Fridays"}))
    ok(c.call("mind_believe", {"content": "Deploys freeze on Fridays!!"}))
    c.flush()
    assert mind._claims.held_by(c) == 0
    d = mind.run()
    assert ok(d.call("mind_believe", {"content": "deploys freeze on fridays!!"}))["action"] == "updated_store"
    d.flush()


def test_clean_rebelieve_clears_the_crashed_flag(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with pytest.raises(RuntimeError), mind.run() as run:
        bid = run.believe("The queue drains in ten minutes", confidence="high").id
        raise RuntimeError("agent failed")
    b = mind.get(bid)
    assert isinstance(b, Belief) and b.error
    assert "queue drains" not in mind.header()
    r = mind.recall("The queue drains in ten minutes", threshold=0)[0]
    assert r.to_dict()["error"] is True
    mind.believe("The queue drains in ten minutes", confidence="high")
    b = mind.get(bid)
    assert isinstance(b, Belief) and not b.error
    assert "queue drains" in mind.header()


# -- reflections and pins ---------------------------------------------------------------------------


def test_reflections_are_never_deduplicated(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with mind.run() as run:
        ids = {ok(run.call("mind_reflect", {"content": "Same note", "relatedTo": "PR-7"}))["id"] for _ in range(3)}
    assert len(ids) == 3 and len(mind.reflections()) == 3
    assert mind.reflections()[0].related_to == "PR-7"


PIN_CAP_TEXT = ("Pinned reflection cap reached (4). Call mind_recall with type:'reflection' and pinned:true to "
                "list current pinned reflections, then call mind_unpin_reflection to remove one before adding another.")


def test_pin_cap_warning_and_unpin(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb, max_pinned_reflections=4)
    with mind.run() as run:
        r1 = ok(run.call("mind_reflect", {"content": "Rule one", "pin": True}))
        r2 = ok(run.call("mind_reflect", {"content": "Rule two", "pin": True}))
        assert "warning" not in r1 and "warning" not in r2  # 0 and 1 pinned before: not within 2 of 4
        assert "warning" not in ok(run.call("mind_reflect", {"content": "Not pinned"}))
    with mind.run() as run:
        r3 = ok(run.call("mind_reflect", {"content": "Rule three", "pin": True}))  # 2 pinned before (committed)
        assert r3["warning"] == ("Pinned reflection count is 3 of 4. Review and unpin standing rules that are no "
                                 "longer universally applicable.")
        r4 = ok(run.call("mind_reflect", {"content": "Rule four", "pin": True}))  # 3 before (2 committed, 1 draft)
        assert r4["warning"].startswith("Pinned reflection count is 4 of 4.")
        err = run.call("mind_reflect", {"content": "Rule five", "pin": True})
        assert err == {"status": "error", "error": PIN_CAP_TEXT}  # the seed's text
        assert "warning" not in ok(run.call("mind_reflect", {"content": "Unpinned is fine"}))
        ok(run.call("mind_unpin_reflection", {"id": r1["id"]}))
        ok(run.call("mind_reflect", {"content": "Rule five", "pin": True}))  # the unpin freed a slot
    assert {r.content for r in mind.reflections(pinned=True)} == {"Rule two", "Rule three", "Rule four", "Rule five"}
    assert "- Rule one" not in mind.header() and "- Rule five" in mind.header()
    err = mind.run().call("mind_unpin_reflection", {"id": "no-such-id"})
    assert err == {"status": "error", "error": "id: no reflection with id 'no-such-id'"}


def test_crashed_run_keeps_pins_and_drops_unpins(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    rid = mind.reflect("Confirm before deleting", pin=True).id
    with pytest.raises(KeyError), mind.run() as run:
        run.unpin_reflection(rid)
        new = run.reflect("Written during a crash", pin=True).id
        raise KeyError("boom")
    r, n = mind.get(rid), mind.get(new)
    assert isinstance(r, Reflection) and r.pinned
    assert isinstance(n, Reflection) and n.error and n.pinned


# -- goals ------------------------------------------------------------------------------------------


def test_goal_cap_and_lifecycle(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb, max_goals=2)
    with mind.run() as run:
        g1 = ok(run.call("mind_set_goal", {"description": "Goal one", "tags": ["q3"], "dueBy": "10d"}))["id"]
        g2 = ok(run.call("mind_set_goal", {"description": "Goal two"}))["id"]
        err = run.call("mind_set_goal", {"description": "Goal three"})
        assert err == {"status": "error", "error": "Active goal cap reached (2). Complete or archive an existing "
                                                   "goal before setting a new one."}
        ok(run.call("mind_update_goal", {"id": g2, "progress": "drafted", "priority": "high"}))
    [a, b] = mind.goals()
    assert (a.id, a.priority, a.progress) == (g2, "high", ["drafted"])
    assert (b.id, b.due_by, b.tags) == (g1, "2026-05-30", ["q3"])
    with mind.run() as run:
        ok(run.call("mind_update_goal", {"id": g1, "progress": "step 1"}))
        ok(run.call("mind_update_goal", {"id": g1, "progress": "step 2", "description": "Goal one, revised"}))
        ok(run.call("mind_complete_goal", {"id": g2, "outcome": "shipped"}))
        # committed at once: another reader sees it before this run ends
        other = make(store, clock, emb)
        assert [g.id for g in other.goals("completed")] == [g2]
        ok(run.call("mind_set_goal", {"description": "Goal three"}))  # the completion freed a slot
        err = run.call("mind_update_goal", {"id": g2, "progress": "too late"})
        assert err["status"] == "error" and "completed" in err["error"]
        assert run.call("mind_complete_goal", {"id": g2})["status"] == "error"
    g = mind.get(g1)
    assert g is not None and g.to_dict()["progress"] == ["step 1", "step 2"]
    assert g.to_dict()["description"] == "Goal one, revised"
    assert "Goal two" not in mind.header()
    for bad in ({"id": "nope", "progress": "x"}, {"id": g1}):
        assert mind.run().call("mind_update_goal", bad)["status"] == "error"
    assert mind.run().call("mind_complete_goal", {"id": "nope"}) == {
        "status": "error", "error": "id: no goal with id 'nope'"}


def test_setting_an_active_goal_again_returns_it_and_adds_nothing(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb, max_goals=2)
    with mind.run() as run:
        gid = ok(run.call("mind_set_goal", {"description": "Track TSMC N3 capacity", "priority": "high"}))["id"]
        # this run's own pending goal, written again in other case and spacing
        assert ok(run.call("mind_set_goal", {"description": " track tsmc  N3 CAPACITY "}))["id"] == gid
    table = store.table("mind_entries")
    before = table.version
    with mind.run() as run:  # a rerun of the same script: the stored active goal is returned
        assert ok(run.call("mind_set_goal", {"description": "Track TSMC N3 capacity", "priority": "low"}))["id"] == gid
        assert run.set_goal("Track TSMC N3\tcapacity") == gid
        other = ok(run.call("mind_set_goal", {"description": "Track TSMC N2 capacity"}))["id"]  # another goal
        # at the cap, the same goal still answers with its id instead of the cap error
        assert ok(run.call("mind_set_goal", {"description": "track TSMC N3 capacity"}))["id"] == gid
    assert [(g.id, g.priority) for g in mind.goals()] == [(gid, "high"), (other, "normal")]
    assert table.version == before + 1  # one commit: the new goal only
    mind.complete_goal(gid)
    again = mind.set_goal("Track TSMC N3 capacity")  # a completed goal is not active: set anew
    assert again != gid and {g.id for g in mind.goals()} == {other, again}


def test_complete_a_goal_set_in_the_same_run(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with pytest.raises(ValueError), mind.run() as run:
        gid = run.set_goal("Quick goal")
        run.update_goal(gid, progress="done already")
        run.complete_goal(gid, "done")
        raise ValueError("the run crashes afterwards")
    g = mind.get(gid)
    assert g is not None and g.to_dict()["status"] == "completed" and g.to_dict()["progress"] == ["done already"]


def test_unknown_ids_and_ids_of_another_kind_are_tool_errors_at_call_time(
    store: Any, clock: Clock, emb: Any
) -> None:
    mind = make(store, clock, emb)
    gid = mind.set_goal("A real goal")
    bid = mind.believe("A real belief").id
    rid = mind.reflect("A real reflection", pin=True).id
    other = make(store, clock, emb, agent="someone-else").set_goal("Another agent's goal")
    table = store.table("mind_entries")
    before = table.version
    with mind.run() as run:
        for tool, args, needle in [
            ("mind_update_goal", {"id": bid, "progress": "x"}, f"no goal with id {bid!r}"),
            ("mind_update_goal", {"id": other, "progress": "x"}, f"no goal with id {other!r}"),
            ("mind_complete_goal", {"id": rid}, f"no goal with id {rid!r}"),
            ("mind_unpin_reflection", {"id": gid}, f"no reflection with id {gid!r}"),
            ("mind_unpin_reflection", {"id": bid}, f"no reflection with id {bid!r}"),
        ]:
            res = run.call(tool, args)
            assert res["status"] == "error" and needle in res["error"], (tool, res)
    assert run.report is not None and run.report.version is None and table.version == before


def test_a_run_dropped_without_a_flush_gives_its_cap_slots_back(store: Any, clock: Clock, emb: Any) -> None:
    import gc

    mind = make(store, clock, emb, max_goals=1, max_pinned_reflections=1)
    dropped = mind.run()
    ok(dropped.call("mind_set_goal", {"description": "Never flushed"}))
    ok(dropped.call("mind_reflect", {"content": "Never flushed either", "pin": True}))
    run = mind.run()
    assert run.call("mind_set_goal", {"description": "Blocked by the pending goal"})["status"] == "error"
    with pytest.warns(ResourceWarning, match="1 reflection, 1 goal"):
        del dropped
        gc.collect()
    ok(run.call("mind_set_goal", {"description": "Now there is room"}))
    ok(run.call("mind_reflect", {"content": "And room for a pin", "pin": True}))
    run.flush()
    assert [g.description for g in mind.goals()] == ["Now there is room"]


def test_crashed_run_drops_goal_writes(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    gid = mind.set_goal("Existing goal")
    with pytest.raises(OSError), mind.run() as run:
        run.set_goal("Goal from a crashed run")
        run.update_goal(gid, progress="crashed progress")
        raise OSError("disk on fire")
    assert [g.description for g in mind.goals()] == ["Existing goal"]
    assert mind.goals()[0].progress == []
    assert run.report is not None and run.report.error and len(run.report.dropped) == 1


# -- flush ------------------------------------------------------------------------------------------


def test_a_flush_is_one_version(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    mind.set_goal("Warm up the table")
    table = store.table("mind_entries")
    before = table.version
    with mind.run() as run:
        for i in range(5):
            run.believe(FACTS[i])
            run.reflect(f"Reflection {i}")
        run.set_goal("Another goal")
    assert run.report is not None and run.report.version == before + 1 == table.version
    assert run.report.created == 11
    with mind.run():
        pass  # nothing written: no commit
    assert table.version == before + 1


def test_maintenance_moving_the_version_does_not_rebuild_the_snapshot(store: Any, clock: Clock, emb: Any) -> None:
    """A compaction or an index update makes a new table version with the same rows: the mind
    keeps its snapshot (relabelled) rather than rebuild it entry by entry (seconds at 100k entries,
    enough to set a flush's p99). A real change of the rows, by another writer, is read again."""
    mind = make(store, clock, emb)
    for i in range(3):
        with mind.run() as run:  # single commits: several small fragments to merge
            run.believe(FACTS[i])
    repo = mind._repo
    snap = repo.snapshot()
    table = store.table("mind_entries")
    result = table.compact()
    assert result.fragments_removed > 0 and table.version > snap.version
    assert repo.snapshot() is snap and snap.version == table.version
    with mind.run() as run:
        run.believe(FACTS[3])
    assert repo.snapshot().serial is not None  # patched by the flush, still tied to the cache
    patched = repo.snapshot()
    table.compact(cleanup_grace=None)
    assert repo.snapshot() is patched

    other = make(mindcore.open(store.uri), clock, emb)  # another writer, as another process
    with other.run() as run:
        run.believe(FACTS[4])
    assert table.refresh() > patched.version
    fresh = repo.snapshot()
    assert fresh is not patched and FACTS[4] in {e.content for e in fresh.entries.values() if isinstance(e, Belief)}


def test_async_run(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)

    async def main() -> None:
        async with mind.arun() as run:
            assert run.header == ""
            ok(await run.acall("mind_believe", {"content": "Async writes flush too", "confidence": "high"}))
        with pytest.raises(LookupError):
            async with mind.arun() as run:
                await run.acall("mind_reflect", {"content": "Crashed async run"})
                raise LookupError("x")
        assert [r.content for r in await mind.arecall("Async writes flush too", threshold=0)][:1] == [
            "Async writes flush too"]

    asyncio.run(main())
    [r] = mind.reflections()
    assert r.error


def test_a_run_cannot_be_used_after_its_flush(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with mind.run() as run:
        run.believe("x is y")
    assert run.closed and run.flush() is run.report
    assert run.call("mind_believe", {"content": "late"})["status"] == "error"
    with pytest.raises(MindError, match="run has ended"):
        run.believe("late")


# -- bad input --------------------------------------------------------------------------------------

BAD_CALLS: list[tuple[str, Any, str]] = [
    ("mind_believe", {}, "'content' is a required property"),
    ("mind_believe", {"content": 42}, "content: 42 is not of type 'string'"),
    ("mind_believe", {"content": "x" * 4001}, "content: is 4,001 characters; the limit is 4,000"),
    ("mind_believe", {"content": "   "}, "content: must not be empty"),
    ("mind_believe", {"content": "x", "confidence": "certain"}, "'certain' is not one of"),
    ("mind_believe", {"content": "x", "expiresIn": "2 weeks"}, "expiresIn: '2 weeks' is not a duration; use <n>d"),
    ("mind_believe", {"content": "x", "allowDowngrade": "yes"}, "allowDowngrade: 'yes' is not of type 'boolean'"),
    ("mind_believe", {"content": "x", "tags": "ops"}, "tags: 'ops' is not of type 'array'"),
    ("mind_believe", {"content": "x", "expires_in": "7d"}, "Additional properties are not allowed"),
    ("mind_believe", '{"content": "x"', "not valid JSON"),
    ("mind_believe", "[1, 2]", "must be a JSON object"),
    ("mind_reflect", {"content": "x", "pin": 1}, "pin: 1 is not of type 'boolean'"),
    ("mind_reflect", {"content": "x", "relatedTo": "y" * 5000}, "relatedTo: is 5,000 characters"),
    ("mind_set_goal", {"description": "x", "priority": "urgent"}, "'urgent' is not one of"),
    ("mind_set_goal", {"description": "x", "dueBy": "soon"}, "dueBy: 'soon' is neither an ISO 8601 date"),
    ("mind_update_goal", {"progress": "x"}, "'id' is a required property"),
    ("mind_update_goal", {"id": "g", "progress": "x" * 4001}, "progress: is 4,001 characters"),
    ("mind_complete_goal", {"id": 7}, "id: 7 is not of type 'string'"),
    ("mind_recall", {"query": "x", "type": "memo"}, "'memo' is not one of"),
    ("mind_recall", {"query": "x", "limit": 0}, "limit: 0 is less than the minimum of 1"),
    ("mind_recall", {"query": "x", "threshold": 2}, "threshold: 2 is greater than the maximum of 1"),
    ("mind_recall", {"query": "x" * 4001}, "query: is 4,001 characters"),
    ("mind_forget", {"id": "x"}, "unknown tool 'mind_forget'"),
    ("mind_reflect", {}, "'content' is a required property"),
    ("mind_reflect", {"content": "x" * 4001}, "content: is 4,001 characters"),
    ("mind_reflect", {"content": "x", "tags": ["ok", 3]}, "tags[1]: 3 is not of type 'string'"),
    ("mind_set_goal", {}, "'description' is a required property"),
    ("mind_set_goal", {"description": "x" * 4001}, "description: is 4,001 characters"),
    ("mind_set_goal", {"description": "x", "dueBy": 30}, "dueBy: 30 is not of type 'string'"),
    ("mind_update_goal", {"id": "g", "priority": "asap"}, "'asap' is not one of"),
    ("mind_complete_goal", {}, "'id' is a required property"),
    ("mind_complete_goal", {"id": "g", "outcome": "x" * 4001}, "outcome: is 4,001 characters"),
    ("mind_unpin_reflection", {}, "'id' is a required property"),
    ("mind_unpin_reflection", {"id": ""}, "id: '' should be non-empty"),
    ("mind_recall", {}, "'query' is a required property"),
    ("mind_recall", {"query": "x", "status": "archived"}, "'archived' is not one of"),
    ("mind_recall", {"query": "x", "includeExpired": "no"}, "includeExpired: 'no' is not of type 'boolean'"),
    ("mind_recall", {"query": "x", "limit": "5"}, "limit: '5' is not of type 'integer'"),
    ("mind_recall", "not json at all", "not valid JSON"),
]


@pytest.mark.parametrize(("tool", "args", "needle"), BAD_CALLS)
def test_bad_model_input_is_a_tool_error_and_leaves_the_store_untouched(
    store: Any, clock: Clock, emb: Any, tool: str, args: Any, needle: str
) -> None:
    mind = make(store, clock, emb)
    mind.set_goal("An existing goal")
    table = store.table("mind_entries")
    before = table.version
    with mind.run() as run:
        result = run.call(tool, args)
    assert result["status"] == "error" and needle in result["error"], result
    assert len(result["error"]) < 300
    assert run.report is not None and run.report.version is None and table.version == before


def test_python_api_raises_mind_error(store: Any, clock: Clock, emb: Any) -> None:
    mind = make(store, clock, emb)
    with mind.run() as run:
        with pytest.raises(MindError, match="expires_in: '7 days'"):
            run.believe("x", expires_in="7 days")
        with pytest.raises(MindError, match="confidence: 'sure'"):
            run.believe("x", confidence="sure")  # type: ignore[arg-type]
        with pytest.raises(MindError, match="due_by: 'soon'"):
            run.set_goal("x", due_by="soon")
        with pytest.raises(MindError, match="give at least one of"):
            run.update_goal("g")
    with pytest.raises(MindError, match="threshold"):
        mind.recall("x", threshold=1.5)
    with pytest.raises(MindError, match="limit"):
        mind.recall("x", limit=0)


# -- embedding dimension ------------------------------------------------------------------------------


def test_a_mind_refuses_another_embedding_dimension(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "dims"
    with mindcore.open(path) as s:
        make(s, clock, HashEmbedder(dim=384)).believe("stored with 384 dimensions")
    with mindcore.open(path) as s, pytest.raises(ValueError) as e:
        make(s, clock, HashEmbedder(dim=128))
    msg = str(e.value)
    assert "384" in msg and "128" in msg and "mind/tester" in msg


def test_the_embedder_defaults_to_the_stores_then_the_bundled_model(tmp_path: Path) -> None:
    from mindcore.embed import default_embedder

    bound = HashEmbedder(dim=64)
    assert Mind(mindcore.open(tmp_path / "a", embedder=bound), agent="x").embedder is bound
    mind = Mind(mindcore.open(tmp_path / "b"), agent="x")
    assert mind.embedder is default_embedder() and mind.dim == 384
    mind.believe("The default model embeds this", confidence="high")
    assert mind.recall("what does the default model embed?")[0].entry.content == "The default model embeds this"


def test_minds_of_two_agents_are_isolated(store: Any, clock: Clock, emb: Any) -> None:
    a, b = make(store, clock, emb, agent="a"), make(store, clock, emb, agent="b")
    a.believe("Only agent a knows this", confidence="high")
    assert b.beliefs() == [] and b.header() == "" and b.recall("Only agent a knows this", threshold=0) == []
    shared = make(store, clock, emb, agent="c", namespace="mind/a")
    assert [x.content for x in shared.beliefs()] == ["Only agent a knows this"]


def test_top_level_lazy_exports() -> None:
    assert mindcore.Mind is Mind and mindcore.MindConfig is MindConfig
    assert mindcore.Belief is Belief and mindcore.Reflection is Reflection
    assert {"Mind", "MindConfig", "Goal", "Belief", "Reflection", "RecallResult"} <= set(dir(mindcore))
