"""mindcore.mind without a store: config, durations, entries, tool specs, validation, header
formatting and budget, draft buffer and flush rules, recall parameters."""

from __future__ import annotations

import gc
import math
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindcore.mind import (
    TOOL_NAMES,
    TOOL_SPECS,
    Belief,
    Goal,
    MindConfig,
    MindError,
    RecallResult,
    Reflection,
)
from mindcore.mind.config import CAP_CEILING, TtlDefaults, parse_due_by, parse_duration
from mindcore.mind.draft import (
    Claims,
    DraftBelief,
    DraftBuffer,
    DraftGoal,
    DraftReflection,
    GoalUpdate,
    belief_key,
    merge_belief,
    plan_flush,
)
from mindcore.mind.entries import entry_from_row, recall_weight
from mindcore.mind.header import HeaderIndex, belief_line, goal_line, reflection_line, render_header
from mindcore.mind.recall import TAU_MS, W_CONFIDENCE, W_RECENCY, W_SIMILARITY, keywords, match_goals
from mindcore.mind.validate import check_choice, check_tags, check_text

DAY = 86_400_000

# -- config -------------------------------------------------------------------------------------


def test_config_defaults_are_the_seeds() -> None:
    c = MindConfig()
    assert (c.token_budget, c.recency_window_days, c.max_goals, c.max_pinned_reflections) == (300, 7, 10, 10)
    assert (c.deduplication_threshold, c.retrieval_threshold) == (0.85, 0.35)
    assert c.ttl_defaults == TtlDefaults(belief="30d", reflection=None)
    assert c.namespace_for("research-tracker") == "mind/research-tracker"
    assert MindConfig(namespace="shared/team").namespace_for("x") == "shared/team"


@pytest.mark.parametrize("n", [0, 1, 5, 10, 11, 25, 10_000])
def test_caps_have_a_ceiling_of_ten(n: int) -> None:
    c = MindConfig(max_goals=n, max_pinned_reflections=n)
    assert c.max_goals == c.max_pinned_reflections == min(n, CAP_CEILING)


def test_ttl_defaults_from_dict() -> None:
    c = MindConfig(ttl_defaults={"belief": "60d", "reflection": "90d"})  # type: ignore[arg-type]
    assert c.ttl_defaults.belief_ms == 60 * DAY and c.ttl_defaults.reflection_ms == 90 * DAY
    assert MindConfig(ttl_defaults={"belief": None}).ttl_defaults.belief_ms is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "err", "needle"),
    [
        ({"token_budget": -1}, ValueError, "token_budget"),
        ({"token_budget": 1.5}, TypeError, "token_budget"),
        ({"max_goals": -1}, ValueError, "max_goals"),
        ({"max_pinned_reflections": True}, TypeError, "max_pinned_reflections"),
        ({"recency_window_days": 0}, ValueError, "recency_window_days"),
        ({"recency_window_days": math.nan}, ValueError, "recency_window_days"),
        ({"deduplication_threshold": 1.5}, ValueError, "deduplication_threshold"),
        ({"retrieval_threshold": -0.1}, ValueError, "retrieval_threshold"),
        ({"ttl_defaults": {"belief": "2 weeks"}}, ValueError, "ttl_defaults.belief"),
        ({"ttl_defaults": {"reflection": "0d"}}, ValueError, "ttl_defaults.reflection"),
        ({"ttl_defaults": {"goal": "1d"}}, ValueError, "unknown keys"),
        ({"ttl_defaults": 30}, TypeError, "ttl_defaults"),
        ({"namespace": " "}, ValueError, "namespace"),
    ],
)
def test_config_rejects_bad_values(kwargs: dict[str, Any], err: type[Exception], needle: str) -> None:
    with pytest.raises(err, match=needle):
        MindConfig(**kwargs)


# -- durations and due dates ------------------------------------------------------------------------


@given(st.integers(1, 10_000), st.sampled_from("dhms"))
def test_parse_duration_property(n: int, unit: str) -> None:
    assert parse_duration(f"{n}{unit}") == n * {"d": DAY, "h": 3_600_000, "m": 60_000, "s": 1000}[unit]


@pytest.mark.parametrize("bad", ["", "d", "30", "30 d", "1.5d", "-3d", "0d", "30w", "30D", "thirty days",
                                 "999999999d"])
def test_parse_duration_rejects_and_quotes_the_forms(bad: str) -> None:
    with pytest.raises(ValueError, match="expiresIn") as e:
        parse_duration(bad, arg="expiresIn")
    assert "<n>d" in str(e.value) or "1000 years" in str(e.value)


def test_parse_duration_rejects_non_strings() -> None:
    with pytest.raises(ValueError, match="duration string"):
        parse_duration(30)


def test_due_by_iso_dates_and_durations() -> None:
    now = int(datetime(2026, 5, 20, 23, 0, tzinfo=UTC).timestamp() * 1000)
    assert parse_due_by("2026-06-01", now_ms=now) == "2026-06-01"
    assert parse_due_by("2026-06-01T17:00:00+00:00", now_ms=now) == "2026-06-01T17:00:00+00:00"
    assert parse_due_by("30d", now_ms=now) == "2026-06-19"
    assert parse_due_by("2h", now_ms=now) == "2026-05-21"  # crosses midnight UTC
    for bad in ["next week", "2026-13-01", "06/01/2026", "", "30 days"]:
        with pytest.raises(ValueError, match=r"dueBy: .* ISO 8601 date .*<n>d"):
            parse_due_by(bad, now_ms=now)


# -- entries --------------------------------------------------------------------------------------


def test_entry_dicts_have_the_seeds_shapes() -> None:
    g = Goal("g1", "Ship", "high", tags=["a"], due_by="2026-06-01", progress=["p"], created_at=1, updated_at=2)
    assert g.to_dict() == {"id": "g1", "type": "goal", "description": "Ship", "priority": "high",
                           "status": "active", "tags": ["a"], "dueBy": "2026-06-01", "progress": ["p"],
                           "createdAt": 1, "updatedAt": 2}
    b = Belief("b1", "x", "low", expires_at=9, created_at=1, updated_at=2, error=True)
    assert b.to_dict() == {"id": "b1", "type": "belief", "content": "x", "confidence": "low", "tags": [],
                           "expiresAt": 9, "createdAt": 1, "updatedAt": 2, "error": True}
    r = RecallResult(Reflection("r1", "y", pinned=True, related_to="PR-1", created_at=1, updated_at=1), 0.5)
    assert r.to_dict() == {"id": "r1", "type": "reflection", "content": "y", "score": 0.5, "tags": [],
                           "createdAt": 1, "updatedAt": 1, "pinned": True, "relatedTo": "PR-1", "error": False}
    rg = RecallResult(g).to_dict()
    assert "score" not in rg and rg["content"] == "Ship" and rg["progress"] == ["p"]


def test_entry_from_row_round_trip() -> None:
    row = {"id": "g", "type": "goal", "content": "d", "priority": "low", "status": "completed", "tags": None,
           "due_by": None, "progress": ["a"], "outcome": "done", "created_at": 3, "updated_at": 4}
    assert entry_from_row(row) == Goal("g", "d", "low", "completed", [], None, ["a"], "done", 3, 4)
    with pytest.raises(ValueError, match="unknown entry type"):
        entry_from_row({**row, "type": "note"})


def test_recall_weights() -> None:
    assert [recall_weight("belief", c, False) for c in ("low", "medium", "high")] == [0.3, 0.6, 1.0]
    assert recall_weight("reflection", None, False) == 0.6
    assert recall_weight("belief", "high", True) == recall_weight("reflection", None, True) == 0.3
    assert (W_SIMILARITY, W_RECENCY, W_CONFIDENCE, TAU_MS) == (0.6, 0.2, 0.2, 30 * DAY)


# -- tool specs -----------------------------------------------------------------------------------

SEED_PARAMS = {
    "mind_recall": ({"query"}, {"type", "status", "tags", "pinned", "includeExpired", "threshold", "limit"}),
    # ``replaces`` is ours: the agent names the belief a new one replaces (nothing merges on a guess).
    "mind_believe": ({"content"}, {"confidence", "tags", "expiresIn", "allowDowngrade", "replaces"}),
    "mind_reflect": ({"content"}, {"pin", "tags", "relatedTo"}),
    "mind_unpin_reflection": ({"id"}, set()),
    "mind_set_goal": ({"description"}, {"priority", "tags", "dueBy"}),
    "mind_update_goal": ({"id"}, {"description", "priority", "progress"}),
    "mind_complete_goal": ({"id"}, {"outcome"}),
}


def test_tool_names_and_parameters_are_the_seeds() -> None:
    assert tuple(SEED_PARAMS) == TOOL_NAMES
    for spec in TOOL_SPECS:
        required, optional = SEED_PARAMS[spec.name]
        assert set(spec.parameters["required"]) == required
        assert set(spec.parameters["properties"]) == required | optional
        assert spec.to_openai()["function"]["name"] == spec.name
        assert spec.to_anthropic()["input_schema"] == dict(spec.parameters)


def test_tool_enums() -> None:
    props = {s.name: s.parameters["properties"] for s in TOOL_SPECS}
    assert props["mind_recall"]["type"]["enum"] == ["belief", "reflection", "goal", "all"]
    assert props["mind_recall"]["status"]["enum"] == ["active", "completed"]
    assert props["mind_believe"]["confidence"]["enum"] == ["low", "medium", "high"]
    assert props["mind_set_goal"]["priority"]["enum"] == ["low", "normal", "high"]
    assert props["mind_update_goal"]["priority"]["enum"] == ["low", "normal", "high"]


# -- validation -----------------------------------------------------------------------------------


def test_text_validation() -> None:
    assert check_text("x" * 4000, "content") == "x" * 4000
    with pytest.raises(MindError, match="content: is 4,001 characters; the limit is 4,000"):
        check_text("x" * 4001, "content")
    with pytest.raises(MindError, match="must not be empty"):
        check_text(" \n", "content")
    with pytest.raises(MindError, match="expected a string, got int"):
        check_text(3, "content")
    assert check_text(None, "outcome", optional=True) is None


def test_choice_and_tags_validation() -> None:
    assert check_choice("high", "confidence", ("low", "medium", "high")) == "high"
    with pytest.raises(MindError, match="confidence: 'sure' is not one of 'low', 'medium', 'high'"):
        check_choice("sure", "confidence", ("low", "medium", "high"))
    assert check_tags(["a", "b", "a"]) == ["a", "b"]
    with pytest.raises(MindError, match="expected a list of strings"):
        check_tags("ops")
    with pytest.raises(MindError, match=r"tags\[1\]: expected a string"):
        check_tags(["a", 2])
    with pytest.raises(MindError, match="the limit is 32"):
        check_tags([str(i) for i in range(33)])


# -- header ---------------------------------------------------------------------------------------


def test_goal_line_forms() -> None:
    assert goal_line(Goal("g", "Migrate DBs")) == "[normal] Migrate DBs"
    assert goal_line(Goal("g", "Migrate DBs", "high", progress=["a", "schema done"], due_by="2026-06-01")) == (
        "[high] Migrate DBs — last progress: schema done (due: 2026-06-01)"
    )
    assert goal_line(Goal("g", "x", "low", due_by="2026-06-01")) == "[low] x (due: 2026-06-01)"


def test_lines_stay_on_one_line() -> None:
    assert belief_line(Belief("b", "two\nlines", "high")) == "- two lines (high confidence)"
    day = int(datetime(2026, 5, 20, tzinfo=UTC).timestamp() * 1000)
    assert reflection_line(Reflection("r", "x\r\ny", created_at=day + 5)) == "- [2026-05-20] x y"


def test_full_header_layout() -> None:
    day = int(datetime(2026, 5, 20, tzinfo=UTC).timestamp() * 1000)
    text = render_header(
        [Goal("g", "Migrate all production databases to PostgreSQL", "high", progress=["schema migration complete"],
              due_by="2026-06-01")],
        [Reflection("p", "Always confirm destructive operations before executing them.", pinned=True)],
        [Belief("b", "The staging environment uses a different API key than production.", "high")],
        [Reflection("r", "The user prefers concise bullet-point summaries over prose.", created_at=day)],
        token_budget=300,
    )
    assert text == (
        "--- AGENT MIND ---\n\n"
        "## Goals\n[high] Migrate all production databases to PostgreSQL — last progress: schema migration "
        "complete (due: 2026-06-01)\n\n"
        "## Standing Rules (Pinned)\n- Always confirm destructive operations before executing them.\n\n"
        "## Beliefs\n- The staging environment uses a different API key than production. (high confidence)\n\n"
        "## Recent Reflections\n- [2026-05-20] The user prefers concise bullet-point summaries over prose.\n\n"
        "---"
    )


def test_empty_header_is_empty() -> None:
    assert render_header([], [], [], [], token_budget=300) == ""
    # beliefs exist but none fits: still nothing to show
    assert render_header([], [], [Belief("b", "x" * 100, "high")], [], token_budget=5) == ""


def _reference_budget(beliefs: list[str], reflections: list[str], budget: int) -> tuple[list[str], list[str]]:
    """The seed's rule in plain Python: ceil(chars/4) per line, beliefs then reflections, the
    first line that does not fit ends its list."""
    left = budget
    out: tuple[list[str], list[str]] = ([], [])
    for lines, chosen in ((beliefs, out[0]), (reflections[:3], out[1])):
        for line in lines:
            cost = math.ceil(len(line) / 4)
            if cost > left:
                break
            chosen.append(line)
            left -= cost
    return out


@given(
    st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), min_size=1, max_size=120), max_size=12),
    st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), min_size=1, max_size=120), max_size=6),
    st.integers(0, 400),
)
def test_budget_matches_reference(b_texts: list[str], r_texts: list[str], budget: int) -> None:
    beliefs = [Belief(str(i), t, "high") for i, t in enumerate(b_texts)]
    refl = [Reflection(str(i), t, created_at=0) for i, t in enumerate(r_texts)]
    want_b, want_r = _reference_budget([belief_line(b) for b in beliefs], [reflection_line(r) for r in refl], budget)
    text = render_header([Goal("g", "keep the block")], [], beliefs, refl, token_budget=budget)
    got_b = _section(text, "## Beliefs")
    got_r = _section(text, "## Recent Reflections")
    assert (got_b, got_r) == (want_b, want_r)


def _section(text: str, title: str) -> list[str]:
    lines = text.split("\n")
    if title not in lines:
        return []
    i = lines.index(title) + 1
    out = []
    while lines[i] != "":
        out.append(lines[i])
        i += 1
    return out


def test_budget_first_line_that_does_not_fit_ends_the_list() -> None:
    short, long = Belief("1", "a" * 10, "high"), Belief("2", "b" * 200, "high")
    later = Belief("3", "c", "high")
    refl = Reflection("r", "still tried", created_at=0)
    text = render_header([], [], [short, long, later], [refl], token_budget=20)
    assert _section(text, "## Beliefs") == [belief_line(short)]  # 'later' would fit, but the list ended
    assert _section(text, "## Recent Reflections") == [reflection_line(refl)]


def test_header_index_selection() -> None:
    now = 100 * DAY
    entries = [
        Goal("g-low", "l", "low", created_at=1), Goal("g-high-late", "h2", "high", created_at=5),
        Goal("g-high", "h", "high", created_at=2), Goal("g-done", "d", "high", "completed", created_at=0),
        Goal("g-normal", "n", "normal", created_at=0),
        Belief("b-old", "o", "high", created_at=1), Belief("b-new", "n", "high", created_at=3),
        Belief("b-med", "m", "medium", created_at=4), Belief("b-exp", "e", "high", expires_at=now, created_at=5),
        Belief("b-err", "e", "high", created_at=6, error=True),
        Reflection("p2", "p2", pinned=True, created_at=2), Reflection("p1", "p1", pinned=True, created_at=1),
        Reflection("p-exp", "px", pinned=True, created_at=0, expires_at=now - 1),
        Reflection("p-err", "pe", pinned=True, created_at=3, error=True),
        *[Reflection(f"r{i}", f"r{i}", created_at=now - i * DAY) for i in range(6)],
        Reflection("r-old", "old", created_at=now - 8 * DAY),
        Reflection("r-err", "err", created_at=now, error=True),
    ]
    idx = HeaderIndex(entries)
    goals, pinned, beliefs, recent = idx.select(now_ms=now, window_ms=7 * DAY, token_budget=300)
    assert [g.id for g in goals] == ["g-high", "g-high-late", "g-normal", "g-low"]
    assert [r.id for r in pinned] == ["p1", "p2", "p-err"]  # pinned rules are always shown, crashed or not
    assert [b.id for b in beliefs] == ["b-new", "b-old"]
    assert [r.id for r in recent] == ["r0", "r1", "r2"]
    # window: with only old reflections, nothing is recent
    idx2 = HeaderIndex([Reflection("r-old", "old", created_at=now - 8 * DAY)])
    assert idx2.select(now_ms=now, window_ms=7 * DAY, token_budget=300)[3] == []
    assert HeaderIndex([]).empty and not idx.empty


# -- draft buffer and flush -----------------------------------------------------------------------


def _vec(i: int, dim: int = 8) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i % dim] = 1.0
    return v


def _belief(id: str, content: str = "x", conf: str = "medium", *, v: int = 0, tags: list[str] | None = None,
            down: bool = False, exp: int | None = None, t: int = 1) -> DraftBelief:
    return DraftBelief(id, content, conf, tags, exp, down, _vec(v), t)  # type: ignore[arg-type]


class FakeView:
    version = 5

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.stored = {r["id"]: r for r in rows}
        self.similar: dict[int, str] = {}  # vector slot -> id returned by similar_belief

    def rows(self, ids: Any) -> dict[str, dict[str, Any]]:
        return {i: dict(self.stored[i]) for i in ids if i in self.stored}

    def active_goal_count(self) -> int:
        return sum(1 for r in self.stored.values() if r["type"] == "goal" and r["status"] == "active")

    def pinned_ids(self, now: int) -> set[str]:
        return {i for i, r in self.stored.items() if r["type"] == "reflection" and r["pinned"]
                and (r.get("expires_at") is None or r["expires_at"] > now)}

    def similar_belief(self, vector: np.ndarray, threshold: float, now: int) -> str | None:
        return self.similar.get(int(np.argmax(vector)))


def _plan(draft: DraftBuffer, view: FakeView, *, clean: bool = True, goals: int = 10, pins: int = 10) -> Any:
    return plan_flush(draft, view, clean=clean, now=1000, max_goals=goals, max_pinned=pins, dedup_threshold=0.85)


def _stored_belief(id: str, conf: str = "medium", **kw: Any) -> dict[str, Any]:
    return {"id": id, "type": "belief", "content": "old", "confidence": conf, "tags": ["keep"],
            "expires_at": 50, "error": False, "created_at": 7, "updated_at": 7, "vector": _vec(0), **kw}


def test_merge_belief_rules() -> None:
    row = _stored_belief("b", "high", error=True)
    m = merge_belief(row, _belief("b", "new text", "low", v=1), clean=True, now=99)
    assert (m["content"], m["confidence"], m["tags"], m["expires_at"], m["error"]) == ("new text", "high", ["keep"],
                                                                                       None, False)
    assert (m["created_at"], m["updated_at"], m["recall_weight"]) == (7, 99, 1.0)
    assert np.array_equal(m["vector"], _vec(1))
    m = merge_belief(row, _belief("b", "t", "low", tags=["new"], down=True, exp=500), clean=False, now=99)
    assert (m["confidence"], m["tags"], m["expires_at"], m["error"], m["recall_weight"]) == ("low", ["new"], 500,
                                                                                             True, 0.3)
    m = merge_belief(_stored_belief("b", "low"), _belief("b", "t", "high"), clean=True, now=1)
    assert m["confidence"] == "high"


def test_draft_absorb_rules() -> None:
    d = _belief("b", "first", "high", tags=["a"], exp=10)
    d.absorb(_belief("x", "second", "low", exp=20))
    assert (d.id, d.content, d.confidence, d.tags, d.expires_at) == ("b", "second", "high", ["a"], 20)
    d.absorb(_belief("x", "third", "low", tags=["b"], down=True))
    assert (d.confidence, d.tags, d.allow_downgrade) == ("low", ["b"], True)


def test_clean_flush_writes_everything() -> None:
    view = FakeView([
        _stored_belief("s1"),
        {"id": "g1", "type": "goal", "content": "g", "status": "active", "priority": "low", "progress": ["p0"],
         "created_at": 1, "updated_at": 1},
        {"id": "r1", "type": "reflection", "content": "rule", "pinned": True, "created_at": 1, "updated_at": 1},
    ])
    draft = DraftBuffer()
    draft.beliefs["s1"] = _belief("s1", "merged", "high", v=0)
    draft.beliefs["n1"] = _belief("n1", "new", v=1)
    draft.reflections["r2"] = DraftReflection("r2", "obs", True, ["t"], "PR-1", None, _vec(2), 5)
    draft.goals["g2"] = DraftGoal("g2", "goal two", "high", [], "2026-01-01", 5, 5)
    draft.goal_updates["g1"] = GoalUpdate(description="g!", priority="high", progress=["p1", "p2"])
    draft.unpins["r1"] = None
    plan = _plan(draft, view)
    rows = {r["id"]: r for r in plan.rows}
    assert set(rows) == {"s1", "n1", "r2", "g2", "g1", "r1"} and plan.dropped == []
    assert rows["s1"]["content"] == "merged" and rows["s1"]["created_at"] == 7
    assert rows["n1"]["created_at"] == 1 and rows["n1"]["updated_at"] == 1000 and rows["n1"]["tags"] == []
    assert rows["r2"]["pinned"] and not rows["r2"]["error"] and rows["r2"]["related_to"] == "PR-1"
    assert rows["g2"]["status"] == "active" and rows["g2"]["due_by"] == "2026-01-01"
    assert rows["g1"]["progress"] == ["p0", "p1", "p2"] and rows["g1"]["content"] == "g!"
    assert rows["r1"]["pinned"] is False
    assert (plan.created, plan.updated) == (3, 3)


def test_crashed_flush_keeps_beliefs_and_reflections_flagged_and_drops_the_rest() -> None:
    view = FakeView([
        {"id": "g1", "type": "goal", "content": "g", "status": "active", "priority": "low", "progress": [],
         "created_at": 1, "updated_at": 1},
        {"id": "r1", "type": "reflection", "content": "rule", "pinned": True, "created_at": 1, "updated_at": 1},
    ])
    draft = DraftBuffer()
    draft.beliefs["n1"] = _belief("n1", "new", "high")
    draft.reflections["r2"] = DraftReflection("r2", "obs", False, [], None, None, _vec(2), 5)
    draft.goals["g2"] = DraftGoal("g2", "goal two", "high", [], None, 5, 5)
    draft.goal_updates["g1"] = GoalUpdate(progress=["p1"])
    draft.unpins["r1"] = None
    plan = _plan(draft, view, clean=False)
    rows = {r["id"]: r for r in plan.rows}
    assert set(rows) == {"n1", "r2"}
    assert rows["n1"]["error"] and rows["r2"]["error"]
    assert rows["n1"]["recall_weight"] == rows["r2"]["recall_weight"] == 0.3
    assert len(plan.dropped) == 2


def test_flush_merges_into_a_belief_stored_meanwhile() -> None:
    view = FakeView([_stored_belief("other", "low", content="Same idea")])
    view.similar[3] = "other"
    draft = DraftBuffer()
    draft.beliefs["mine"] = _belief("mine", "same idea", "high", v=3)
    rows = _plan(draft, view).rows
    assert [r["id"] for r in rows] == ["other"] and rows[0]["confidence"] == "high"
    # A belief that only reads alike (the view's nearest) is kept beside it.
    draft.beliefs["mine"] = _belief("mine", "another idea", "high", v=3)
    assert [r["id"] for r in _plan(draft, view).rows] == ["mine"]
    draft.beliefs["mine"] = _belief("mine", "same idea", "high", v=3)
    # checked against this very version at call time: nothing new to compare with
    draft.beliefs["mine"].seen_version = view.version
    assert [r["id"] for r in _plan(draft, view).rows] == ["mine"]


def test_flush_enforces_caps_against_the_fresh_store() -> None:
    stored = [{"id": f"g{i}", "type": "goal", "content": "g", "status": "active", "priority": "low",
               "created_at": 1, "updated_at": 1} for i in range(2)]
    stored += [{"id": f"p{i}", "type": "reflection", "content": "r", "pinned": True, "created_at": 1,
                "updated_at": 1} for i in range(2)]
    view = FakeView(stored)
    draft = DraftBuffer()
    for i in range(2):
        draft.goals[f"n{i}"] = DraftGoal(f"n{i}", f"new {i}", "normal", [], None, 5, 5)
        draft.reflections[f"q{i}"] = DraftReflection(f"q{i}", "pin me", True, [], None, None, _vec(1), 5)
    plan = _plan(draft, view, goals=3, pins=3)
    rows = {r["id"]: r for r in plan.rows}
    assert "n0" in rows and "n1" not in rows
    assert rows["q0"]["pinned"] and rows["q1"]["pinned"] is False  # kept, but unpinned
    assert len(plan.dropped) == 2


def test_flush_drops_updates_of_goals_no_longer_active() -> None:
    view = FakeView([{"id": "g", "type": "goal", "content": "g", "status": "completed", "priority": "low",
                      "created_at": 1, "updated_at": 1}])
    draft = DraftBuffer()
    draft.goal_updates["g"] = GoalUpdate(progress=["late"])
    draft.goal_updates["gone"] = GoalUpdate(progress=["late"])
    plan = _plan(draft, view)
    assert plan.rows == [] and len(plan.dropped) == 2


class _Run:
    """Stands in for a MindRun (claims hold runs by weak reference)."""


def test_claims_are_released_whatever_the_text_became() -> None:
    claims = Claims()
    a, b = _Run(), _Run()
    assert claims.claim(belief_key("  The Sky "), a, "id1") is None
    assert claims.holder("the sky", b) == "id1" and claims.holder("the sky", a) is None
    assert claims.claim("the sky", b, "id2") == "id1"
    claims.claim("a changed text", a, "id1")
    claims.set_pending(a, goals=2, pins=1)
    assert claims.others_pending(b) == (2, 1) and claims.others_pending(a) == (0, 0)
    claims.release(a)
    assert claims.held_by(a) == 0 and claims.holder("a changed text", b) is None
    assert claims.others_pending(b) == (0, 0)


def test_claims_of_a_run_dropped_without_a_flush_are_given_back() -> None:
    claims = Claims()
    a, b = _Run(), _Run()
    claims.claim("the sky is blue", a, "id1")
    claims.set_pending(a, goals=3, pins=2)
    assert claims.holder("the sky is blue", b) == "id1" and claims.others_pending(b) == (3, 2)
    del a
    gc.collect()
    assert claims.holder("the sky is blue", b) is None and claims.others_pending(b) == (0, 0)
    assert claims.claim("the sky is blue", b, "id2") is None and claims.held_by(b) == 1


# -- recall helpers -------------------------------------------------------------------------------


def test_goal_keyword_matching() -> None:
    goals = [
        Goal("1", "Migrate databases to PostgreSQL", created_at=3),
        Goal("2", "Write the onboarding docs", "high", tags=["docs"], created_at=2),
        Goal("3", "Monitor TSMC capacity", "low", progress=["postgres replica lag"], created_at=1),
        Goal("4", "Postgres backups", "high", status="completed", created_at=0),
    ]
    assert keywords("What is the status of the migration?") == {"status", "migration"}
    ids = [g.id for g in match_goals(goals, "POSTGRESQL or Postgres", status="active", tags=None, limit=5)]
    assert ids == ["1", "3"]
    assert [g.id for g in match_goals(goals, "postgres", status="completed", tags=None, limit=5)] == ["4"]
    assert [g.id for g in match_goals(goals, "docs", status="active", tags=["docs"], limit=5)] == ["2"]
    assert match_goals(goals, "the of", status="active", tags=None, limit=5) == []
    assert len(match_goals(goals, "postgres postgresql", status="active", tags=None, limit=1)) == 1


def test_draft_belief_matrix_grows_and_finds_matches() -> None:
    draft = DraftBuffer()
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((300, 16)).astype(np.float32)
    for i, v in enumerate(vecs):
        draft.put_belief(DraftBelief(f"b{i}", f"text {i}", "medium", None, None, False, v, i))
    for i in (0, 7, 150, 299):
        hit = draft.similar_belief(vecs[i], 0.99)
        assert hit is not None and hit.id == f"b{i}"
    moved = np.zeros(16, dtype=np.float32)
    moved[3] = 1.0
    draft.absorb_into("b7", DraftBelief("x", "new text", "high", None, None, False, moved, 500))
    hit = draft.similar_belief(moved, 0.99)
    assert hit is not None and hit.id == "b7" and hit.content == "new text"
    same_id = draft.put_belief(DraftBelief("b8", "again", "low", ["t"], None, False, vecs[8], 600))
    assert same_id is draft.beliefs["b8"] and same_id.tags == ["t"] and len(draft.beliefs) == 300


# -- docstring examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["__init__", "config", "entries", "header", "recall", "validate", "mind"])
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    mod = importlib.import_module("mindcore.mind" if module == "__init__" else f"mindcore.mind.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
