"""The agent runner's own overhead per turn: everything but the model and the embedding calls,
at 1k beliefs, 500 memories, a 20 KB working memory and a 2k-message context session (target:
p50 <= 10 ms).

The model answers at once (a scripted reply, one model call per turn) and queries embed through a
table of precomputed vectors, so what is timed is the runner: the Mind run and its flush, the
working-memory block, recall, tool discovery for the turn, the session's history assembled under
the budget, the prompt packed with exact o200k counts, the tools merged, and the turn appended to
the session.

Baseline ``hand-written``: the same prompt parts fetched directly from each capability (header,
working memory, recall, the last 40 messages of the session) and joined, without budgeting, tools,
flush or append: the least a user's own loop does.

    pytest benches/bench_agent.py --benchmark-only -q
"""

from __future__ import annotations

import itertools
import os
import random
import tempfile
from typing import Any

import pytest
from _bench import PrecomputedEmbedder, finish

import mindcore
from mindcore.context import Tool
from mindcore.embed import HashEmbedder
from mindcore.llm import Reply
from mindcore.ltm import LongTermMemory

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
BELIEFS, MEMORIES, MESSAGES = (100, 50, 200) if QUICK else (1_000, 500, 2_000)
GROUP = "agent: runner overhead per turn (1k beliefs, 500 memories, 20 KB working memory, 2k messages)"
TOPICS = ["garden", "invoice", "travel", "music", "kitchen", "printer", "insurance", "football", "taxes", "bikes"]


def _queries() -> list[str]:
    rng = random.Random(1)
    return [f"help me with my {rng.choice(TOPICS)} question number {i}" for i in range(200)]


@pytest.fixture(scope="module")
def world() -> dict[str, Any]:
    rng = random.Random(0)
    beliefs = [f"The user's {rng.choice(TOPICS)} detail #{i} is {rng.random():.4f}" for i in range(BELIEFS)]
    memories = [f"User fact {i}: likes {rng.choice(TOPICS)} on weekday {i % 7}" for i in range(MEMORIES)]
    queries = _queries()
    embedder = PrecomputedEmbedder(HashEmbedder(), beliefs + memories + queries)
    store = mindcore.open(tempfile.mkdtemp(prefix="bench-agent-"), embedder=embedder)
    mind = mindcore.Mind(store, agent="support", embedder=embedder)
    for at in range(0, BELIEFS, 50):
        with mind.run() as run:
            for text in beliefs[at:at + 50]:
                run.believe(text, confidence="medium")
    ltm = LongTermMemory(store, user_id="user-7", namespace="support", embedder=embedder)
    ltm.remember_many(memories)
    wm = mindcore.WorkingMemory(store, thread_id="t-1", max_tokens=100_000)
    wm.call("working_memory_update", {"content": "notes: " + "lorem ipsum dolor sit amet " * 740})
    ctx = mindcore.Context(store, dataset="support", embedder=embedder)
    ctx.register([Tool(name=f"{topic}_tool_{i}", description=f"Handle a {topic} request of kind {i}",
                       handler=lambda args: "done") for topic in TOPICS for i in range(10)])
    session = ctx.session("t-1", namespace="user-7")
    for at in range(0, MESSAGES, 500):
        session.append([{"role": "user" if (at + i) % 2 == 0 else "assistant",
                         "content": " ".join(rng.choices(TOPICS, k=40))} for i in range(min(500, MESSAGES - at))])
    return {"store": store, "mind": mind, "ltm": ltm, "wm": wm, "ctx": ctx, "session": session, "queries": queries}


class InstantModel:
    """A model that answers at once and checks nothing: the model call costs nothing here."""

    def chat(self, messages: Any, *, tools: Any = None, tool_choice: str = "auto", max_tokens: Any = None) -> Reply:
        return Reply("ok", finish_reason="stop")

    async def achat(self, messages: Any, **kw: Any) -> Reply:
        return self.chat(messages)


@pytest.mark.parametrize("impl", ["mindcore", "hand-written"])
def test_turn_overhead(benchmark: Any, world: dict[str, Any], impl: str) -> None:
    queries = itertools.cycle(world["queries"])
    finish(benchmark, impl, GROUP)
    if impl == "mindcore":
        agent = mindcore.Agent(world["store"], InstantModel(), name="support",
                               user_id="user-7", thread_id="t-1", instructions="You are a support agent.",
                               mind=world["mind"], working_memory=world["wm"], long_term_memory=world["ltm"],
                               context=world["ctx"], prompt_budget=8000)

        def turn() -> None:
            result = agent.run(next(queries))
            assert result.ok

    else:
        mind, wm, ltm, session = world["mind"], world["wm"], world["ltm"], world["session"]

        def turn() -> None:
            message = next(queries)
            history = session.get_messages(limit=40).messages
            system = "\n\n".join(["You are a support agent.", mind.header(), wm.render(),
                                  LongTermMemory.render(ltm.recall(message, k=5))])
            prompt = [{"role": "system", "content": system}, *[dict(m) for m in history],
                      {"role": "user", "content": message}]
            assert prompt

    turn()
    benchmark.pedantic(turn, rounds=30 if QUICK else 100, iterations=1, warmup_rounds=3)
