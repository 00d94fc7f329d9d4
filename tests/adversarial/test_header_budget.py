"""Goals and pinned rules cannot blow up the header: each entry is clipped, and goals and pins
fill budgets of their own, with a warning and a marker line when something is left out."""

from __future__ import annotations

import logging

import pytest
from conftest import Clock

from mindcore.embed import HashEmbedder
from mindcore.kernels import count_tokens
from mindcore.mind import Mind, MindConfig
from mindcore.store import Store


def test_ten_huge_goals_and_pins_stay_within_their_budgets(
    store: Store, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    mind = Mind(store, agent="a", embedder=HashEmbedder(), clock=clock)
    with mind.run() as run:
        for i in range(10):
            assert run.call("mind_set_goal", {"description": f"goal {i} " + "x" * 3900})["status"] == "ok"
            assert run.call("mind_reflect", {"content": f"rule {i} " + "y" * 3900, "pin": True})["status"] == "ok"
    with caplog.at_level(logging.WARNING, logger="mindcore.mind"):
        header = mind.header()
    cfg = mind.config
    # Before: every entry in full, 22,617 tokens. Now each section is bounded by its budget.
    assert count_tokens(header) < cfg.goals_token_budget + cfg.pinned_token_budget + cfg.token_budget + 100
    lines = header.splitlines()
    assert all(len(line) <= cfg.max_entry_chars + 2 for line in lines)  # "- " prefix of pins
    assert any(line.startswith("(+") and "more goals not shown" in line for line in lines)
    assert any(line.startswith("(+") and "more pinned rules not shown" in line for line in lines)
    assert "not shown" in caplog.text


def test_goals_and_pins_within_budget_are_shown_whole(store: Store, clock: Clock) -> None:
    mind = Mind(store, agent="a", embedder=HashEmbedder(), clock=clock,
                config=MindConfig(max_entry_chars=60, goals_token_budget=1000))
    mind.set_goal("short goal", priority="high")
    mind.set_goal("z" * 200, priority="low")
    header = mind.header()
    assert "[high] short goal" in header
    assert "[low] " + "z" * 53 + "…" in header and "z" * 60 not in header
    assert "not shown" not in header
