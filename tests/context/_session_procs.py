"""Child-process body for tests/context/test_session_updates.py: a client storing one 40-message
chat through update_conversation, its views growing, with late retries of older views.

It runs in a process forked from a fork server that imported LanceDB, mindcore.context and this
module once, so a child starts in milliseconds.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

import _forkserver

from mindcore.context import Context

SESSION = "shared"


def fork_context() -> Iterator[Any]:
    """The fork server for these children (a module-scoped pytest fixture: ``yield from fork_context()``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    yield from _forkserver.fork_context(["lancedb", "mindcore.context", "_session_procs"], here)


def chat(n: int = 40) -> list[dict[str, Any]]:
    """One conversation: a system prompt, then user / assistant turns, some with a tool call."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    while len(out) < n:
        i = len(out)
        if i % 7 == 3:
            call = {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": f'{{"i": {i}}}'}}
            out += [{"role": "assistant", "content": "", "tool_calls": [call]},
                    {"role": "tool", "content": f"result {i}", "tool_call_id": f"c{i}"}]
        else:
            out.append({"role": "user" if i % 2 else "assistant", "content": f"message {i}"})
    return out[:n]


def views(seed: int, n: int = 40) -> list[int]:
    """The lengths of the views one client sends: growing, with late retries of older ones."""
    rnd = random.Random(seed)
    out: list[int] = []
    for i in range(1, n + 1):
        out.append(i)
        if rnd.random() < 0.3:
            out.append(rnd.randint(1, i))
    return out


def store_chat(path: str, seed: int, conn: Connection) -> None:
    """Say ready, wait for go, send every view of :func:`chat` from :func:`views`, say done."""
    session = Context(path, dataset="ds").session(SESSION)
    conversation = chat()
    conn.send("ready")
    assert conn.recv() == "go"
    stored = sum(session.update_conversation(conversation[:k]) for k in views(seed))
    conn.send(("done", stored))
    conn.close()
