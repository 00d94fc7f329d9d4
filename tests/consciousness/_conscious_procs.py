"""Child-process body for tests/consciousness/test_consciousness_procs.py: an agent running think
cycles as fast as it can, until it is killed.

It runs in a process forked from a fork server that imported LanceDB, mindcore and this module
once, so a child starts in milliseconds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

import _forkserver

import mindcore
from mindcore.consciousness import BaseInbox, Consciousness, Inbox
from mindcore.store import StoreConfig

AGENT = "crash-agent"
VISIBILITY = 0.4  # seconds: a killed child's leased events come back within a trial or two
# Compaction every ~25 cycles of ~540 tokens (a run of 20 kills has ~50 cycles), so kills land in
# snapshots and prunes too, while the summary lines of every cycle a test runs still fit (the
# oldest would give way otherwise).
MAX_TOKENS = 20_000
PAD = 2_000
MAX_ATTEMPTS = 1_000_000


def fork_context() -> Iterator[Any]:
    """The fork server for these children (a module-scoped pytest fixture: ``yield from fork_context()``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    yield from _forkserver.fork_context(["lancedb", "mindcore.consciousness", "_conscious_procs"], here)


def open_store(path: str) -> mindcore.Store:
    # Compact the store's table every few writes, inline: kills land inside LanceDB compaction too.
    return mindcore.open(path, config=StoreConfig(compact_every=6, compact_in_background=False,
                                                  cleanup_grace=timedelta(0)))


def open_agent(store: mindcore.Store, kind: str = "store", where: str = "") -> tuple[Consciousness, BaseInbox]:
    """The agent's consciousness on ``store``, and its inbox: on the same store, or at the Redis
    URL ``where``. Every kill costs the events leased at that moment an attempt; no event here is
    poisoned, so none may die however often the kills land on it (``MAX_ATTEMPTS``)."""
    inbox: BaseInbox
    if kind == "store":
        inbox = Inbox(store, agent=AGENT, visibility_timeout=VISIBILITY, max_attempts=MAX_ATTEMPTS)
    else:
        from mindcore.consciousness import RedisInbox

        inbox = RedisInbox(where, agent=AGENT, visibility_timeout=VISIBILITY, max_attempts=MAX_ATTEMPTS)
    return Consciousness(store, agent=AGENT, max_tokens=MAX_TOKENS, min_recent_cycles=2), inbox


def reply(number: int, tags: list[str]) -> list[dict[str, Any]]:
    """The model's messages for a cycle: a tool call, its result, and a final text naming the
    events handled (which survives compaction as the cycle's self-summary)."""
    call = f"tc-{number}"
    return [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "send_message", "arguments": '{"text": "ok"}'}}]},
        {"role": "tool", "content": "r" * PAD, "tool_call_id": call},
        {"role": "assistant", "content": f"Cycle {number} handled: {' '.join(tags) or 'nothing'}."},
    ]


def cycle_forever(path: str, kind: str, where: str, conn: Connection) -> None:
    """Run cycles until killed, reporting its progress over ``conn``: ``"ready <cycle_count>"``
    once open, then for each cycle ``"saving <n>"`` as its save begins and ``"saved <n>"`` once
    it is committed."""
    c, inbox = open_agent(open_store(path), kind, where)
    conn.send(f"ready {c.cycle_count}")
    while True:
        with c.cycle(system_prompt="You are the crash-test agent.", inbox=inbox, max_events=2) as cycle:
            cycle.append(reply(cycle.number, [str(e.payload["text"]) for e in cycle.events]))
            conn.send(f"saving {cycle.number}")  # the block ends: the cycle is saved, its events acked
        conn.send(f"saved {cycle.number}")
        if not cycle.events:
            time.sleep(0.02)  # a timer wake: fewer empty cycles
