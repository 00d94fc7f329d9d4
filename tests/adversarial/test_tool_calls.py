"""``Toolset.call`` never raises, whatever the model sends, and a refused call leaves stored state
untouched: deep nesting, escaped lone surrogates, numbers of the wrong kind, oversized arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Clock

from mindcore.embed import HashEmbedder
from mindcore.ltm import LongTermMemory
from mindcore.mind import Mind
from mindcore.store import Store
from mindcore.toolspec import Toolset
from mindcore.working import WorkingMemory

DEEP = "[" * 5000 + "]" * 5000
HOSTILE_ARGUMENTS: list[Any] = [
    '{"content": ' + DEEP + "}",
    '{"query": ' + DEEP + "}",
    '{"content": "caf\\ud800", "confidence": "high"}',
    '{"query": "caf\\udfff"}',
    '{"content": "nul\\u0000byte"}',
    '{"k": 2.0, "query": "tea"}',
    '{"limit": 2.5, "query": "tea"}',
    '{"content": "' + "x" * 2_000_000 + '"}',
    "not json at all",
    "[1, 2, 3]",
    b"\xff\xfe",
    None,
    {"content": {"nested": "object"}},
]


def _toolsets(store: Store, clock: Clock) -> tuple[Toolset, Any]:
    mind = Mind(store, agent="a", embedder=HashEmbedder(), clock=clock)
    run = mind.run()
    wm = WorkingMemory(store, thread_id="t")
    wm.update({"content": "kept"})
    ltm = LongTermMemory(store, user_id="u", embedder=HashEmbedder())
    ltm.remember("Prefers tea", importance=0.5)
    return run.tools + wm.tools + ltm.tools, (mind, run, wm, ltm)


def test_no_argument_makes_a_tool_raise_or_write(store: Store, clock: Clock) -> None:
    tools, (mind, run, wm, ltm) = _toolsets(store, clock)
    before = (wm.state, [m.text for m in ltm.memories()])
    for name in [spec.name for spec in tools]:
        for args in HOSTILE_ARGUMENTS:
            result = tools.call(name, args)
            assert isinstance(result, dict) and result["status"] in ("ok", "error", "refused"), (name, args)
            if result["status"] == "error":
                assert isinstance(result["error"], str) and result["error"]
                json.dumps(result)  # the model can read it: plain JSON, no lone surrogates
    run.close()
    assert (wm.state, [m.text for m in ltm.memories()]) == before
    assert mind.beliefs() == [] and mind.reflections() == [] and mind.goals() == []
    ltm.close()


@pytest.mark.parametrize("args", ['{"query": "tea", "k": 2.0}', '{"query": "tea", "k": true}'])
def test_ltm_recall_with_a_non_integer_k_is_a_tool_error(store: Store, args: str) -> None:
    ltm = LongTermMemory(store, user_id="u", embedder=HashEmbedder())
    result = ltm.call("ltm_recall", args)
    assert result["status"] == "error" and "k" in result["error"]
    ltm.close()
