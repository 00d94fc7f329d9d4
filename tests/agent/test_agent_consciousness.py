"""The agent runner over a consciousness: each turn is a think cycle, its message an inbox event,
saved (then acknowledged) only when the model answers."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import InvalidInputError
from mindcore.llm import Reply, ScriptedLLM, ToolCall
from mindcore.store import Store


def agent_on(store: Store, llm: Any, **kw: Any) -> mindcore.Agent:
    c = mindcore.Consciousness(store, agent="support", clock=lambda: 1_771_491_600_000)
    return mindcore.Agent(store, llm, name="support", user_id="husam", thread_id="Family", consciousness=c,
                          embedder=HashEmbedder(), long_term_memory=False, **kw)


def test_a_turn_is_a_saved_cycle_whose_inbox_holds_the_message(store: Store) -> None:
    llm = ScriptedLLM([Reply(tool_calls=(ToolCall("c1", "mind_believe", '{"content": "Husam says hello"}'),
                                         ToolCall("c2", "mind_believe", "{broken"))), "Hello Husam!"])
    agent = agent_on(store, llm, instructions="You are the family assistant.")
    result = agent.run("Hello!")
    assert result.ok and result.text == "Hello Husam!"
    sent = llm.calls[0].messages
    assert sent[0]["content"].startswith("You are the family assistant.")
    assert sent[-1]["content"] == 'INBOX (1 event, now=2026-02-19T09:00:00.000Z):\n[Family] husam (human): "Hello!"'
    c = agent.consciousness
    assert c.cycle_count == 1 and len(agent.inbox) == 0
    assert [m["role"] for m in agent.history] == ["user", "assistant", "tool", "tool", "assistant"]
    # The model's malformed arguments are kept as text (its tool error explains them).
    kept = agent.history[1]["tool_calls"][1]["function"]["arguments"]
    assert json.loads(kept) == {"_raw": "{broken"}
    # The next turn continues the same history.
    llm2 = ScriptedLLM(["Still here."])
    agent.llm = llm2
    agent.run("Are you there?")
    assert [m["role"] for m in llm2.calls[0].messages] == ["system", "user", "assistant", "tool", "tool", "assistant",
                                                           "user"]
    assert c.cycle_count == 2


def test_a_turn_without_an_answer_saves_nothing_and_gives_the_event_back(store: Store) -> None:
    looping = ScriptedLLM(lambda messages: Reply(tool_calls=(ToolCall(f"c{len(messages)}", "mind_recall",
                                                                      '{"query": "x"}'),)))
    agent = agent_on(store, looping, max_steps=2)
    result = agent.run("Please plan the trip")
    assert result.stop_reason == "max_steps"
    assert agent.consciousness.cycle_count == 0 and agent.history == []
    assert len(agent.inbox) == 1  # given back, delivered again to the next cycle
    agent.llm = ScriptedLLM(["Planning it now."])
    again = agent.think()
    assert again.ok and "Please plan the trip" in agent.llm.calls[0].messages[-1]["content"]
    assert agent.consciousness.cycle_count == 1 and len(agent.inbox) == 0


def test_think_on_an_empty_inbox_is_a_timer_wake(store: Store) -> None:
    llm = ScriptedLLM(["Nothing to do."])
    agent = agent_on(store, llm)
    assert agent.think().text == "Nothing to do."
    assert llm.calls[0].messages[-1]["content"] == "INBOX (0 events, now=2026-02-19T09:00:00.000Z):"


def test_context_and_consciousness_do_not_mix(store: Store) -> None:
    ctx = mindcore.Context(store, dataset="d", embedder=HashEmbedder())
    with pytest.raises(InvalidInputError, match="give one"):
        mindcore.Agent(store, ScriptedLLM([]), consciousness=True, context=ctx, embedder=HashEmbedder(),
                       long_term_memory=False)
    with pytest.raises(InvalidInputError, match="consciousness="):
        mindcore.Agent(store, ScriptedLLM([]), embedder=HashEmbedder(), long_term_memory=False).think()


def test_an_answer_the_history_refuses_saves_nothing_and_flushes_the_run_as_failed(store: Store) -> None:
    llm = ScriptedLLM([Reply(tool_calls=(ToolCall("c1", "mind_set_goal", '{"description": "Rotate keys"}'),)),
                       "Your key is ghp_R8fKq2Lm9Xv4Tz7Wn3Yb6Pc1Hd5Js0Ga2Ue4"])
    agent = agent_on(store, llm)
    with pytest.raises(mindcore.MindcoreError, match="secret"):
        agent.run("What is my token?")
    assert agent.consciousness.cycle_count == 0 and len(agent.inbox) == 1
    assert agent.mind.goals() == []
