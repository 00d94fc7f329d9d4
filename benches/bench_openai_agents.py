"""The OpenAI Agents SDK's session: one ``add_items`` of a turn (a user message and the
assistant's reply) and one ``get_items`` of the whole history, the round trip ``Runner.run`` makes
each turn (target: ``mindcore`` <= 2x ``sqlite`` p50). The session starts with ``START`` turns;
each message is 40 random words.

- ``mindcore``: :class:`~mindcore.integrations.openai_agents.MindcoreSession` on a folder store;
- ``sqlite``: the SDK's own ``SQLiteSession`` on a file.
"""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path
from typing import Any

import pytest
from _bench import finish

pytest.importorskip("agents", reason="openai-agents is in the test extra")

from agents import SQLiteSession

from mindcore.integrations.openai_agents import MindcoreSession

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
ROUNDS = 30 if QUICK else 200
START = 20
WORDS = ["apple", "river", "stone", "cloud", "paper", "light", "music", "garden", "window", "forest"]


def _turn(rng: random.Random) -> list[dict[str, Any]]:
    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(40))

    return [{"role": "user", "content": text()}, {"role": "assistant", "content": text()}]


@pytest.mark.parametrize("impl", ["mindcore", "sqlite"])
def test_add_items_get_items(benchmark: Any, tmp_path: Path, impl: str) -> None:
    session: Any = (MindcoreSession("chat-1", str(tmp_path / "store")) if impl == "mindcore"
                    else SQLiteSession("chat-1", tmp_path / "sessions.db"))
    rng = random.Random(0)
    loop = asyncio.new_event_loop()

    async def turn() -> list[Any]:
        await session.add_items(_turn(rng))
        items: list[Any] = await session.get_items()
        return items

    for _ in range(START):
        loop.run_until_complete(turn())
    finish(benchmark, impl, "openai-agents: add_items + get_items, one turn")
    out = benchmark.pedantic(lambda: loop.run_until_complete(turn()), rounds=ROUNDS, warmup_rounds=3)
    assert len(out) == 2 * (START + ROUNDS + 3)
    loop.close()
    session.close()
