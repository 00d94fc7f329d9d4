"""LangGraph checkpointers: one ``put`` of a chat step's checkpoint and one ``get_tuple`` of the
thread's latest, the round trip a graph makes each step, on a folder (target: ``mindcore``
<= 2x ``sqlite`` p50).

Each round adds one message (40 random words) to the thread's ``messages`` channel and stores
the checkpoint whose parent is the previous one, as a chat graph does; the thread starts with
``START`` messages. Rows:

- ``mindcore``: :class:`~mindcore.integrations.langgraph.MindcoreSaver` on a folder store;
- ``sqlite``: LangGraph's own ``SqliteSaver`` (``langgraph-checkpoint-sqlite``) on a file;
- ``memory``: LangGraph's ``InMemorySaver``, the floor (nothing written to disk).
"""

from __future__ import annotations

import os
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _bench import finish

pytest.importorskip("langgraph.checkpoint.sqlite", reason="langgraph-checkpoint-sqlite is in the test extra")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from mindcore.integrations.langgraph import MindcoreSaver

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
ROUNDS = 30 if QUICK else 200
START = 20
WORDS = ["apple", "river", "stone", "cloud", "paper", "light", "music", "garden", "window", "forest", "copper", "silver"]


def _message(i: int, rng: random.Random) -> Any:
    text = " ".join(rng.choice(WORDS) for _ in range(40))
    return HumanMessage(text) if i % 2 == 0 else AIMessage(text)


def _savers(folder: Path) -> dict[str, Callable[[], BaseCheckpointSaver[Any]]]:
    return {
        "mindcore": lambda: MindcoreSaver.open(str(folder / "mindcore")),
        "sqlite": lambda: SqliteSaver(sqlite3.connect(folder / "sqlite.db", check_same_thread=False)),
        "memory": InMemorySaver,
    }


@pytest.mark.parametrize("impl", ["mindcore", "sqlite", "memory"])
def test_put_get_tuple(benchmark: Any, tmp_path: Path, impl: str) -> None:
    saver = _savers(tmp_path)[impl]()
    rng = random.Random(0)
    messages: list[Any] = []
    config: Any = {"configurable": {"thread_id": "chat-1", "checkpoint_ns": ""}}
    version: Any = None

    def step() -> Any:
        nonlocal config, version
        messages.append(_message(len(messages), rng))
        checkpoint = empty_checkpoint()
        version = saver.get_next_version(version, None)
        checkpoint["channel_values"] = {"messages": list(messages)}
        checkpoint["channel_versions"] = {"messages": version}
        config = saver.put(config, checkpoint, {"source": "loop", "step": len(messages)}, {"messages": version})
        return saver.get_tuple({"configurable": {"thread_id": "chat-1", "checkpoint_ns": ""}})

    for _ in range(START):
        step()
    finish(benchmark, impl, "langgraph: put + get_tuple, one chat step")
    out = benchmark.pedantic(step, rounds=ROUNDS, warmup_rounds=3)
    assert out is not None and len(out.checkpoint["channel_values"]["messages"]) == len(messages)
    if isinstance(saver, MindcoreSaver):
        saver.close()
