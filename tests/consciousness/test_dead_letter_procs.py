"""kill -9 while an event moves to the dead letters loses nothing, for both inboxes: a real child
process (``_dead_letter_procs.py``) stops at a marker it prints at the critical point (before the
write, after it, or racing it) and is killed with SIGKILL there; the event is then in exactly one of
the live queue and the dead letters, and it ends in the dead letters with the good events handled."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _dead_letter_procs import HOOK, open_inbox
from conftest import HANG, kill_at

from mindcore.consciousness import BaseInbox

PROCS = Path(__file__).with_name("_dead_letter_procs.py")


def where_it_is(inbox: BaseInbox, poison: str, acked: int = 0) -> str:
    """``"live"`` or ``"dead"``; fails if the event is in both lists or in neither (``acked``: how
    many of the good events were acked)."""
    dead = [d.id for d in inbox.dead_letters()]
    live = inbox.pending() + acked
    assert (live, dead) in ((3, []), (2, [poison])), f"live={live} dead={dead}"
    return "dead" if dead else "live"


@pytest.mark.parametrize("when", ["before", "after", "racing"])
def test_kill_9_while_dead_lettering_loses_nothing(inbox_at: tuple[str, str], when: str) -> None:
    kind, where = inbox_at
    with open_inbox(kind, where) as inbox:
        poison, *good = inbox.push_many([{"kind": "plan", "text": t} for t in ("poison", "a", "b")])
        (first,) = inbox.receive(1)
        assert first.id == poison
        inbox.nack([poison], error="Poisoned: failing")  # its first delivery: back in the queue
        kill_at([sys.executable, str(PROCS), kind, where], {**os.environ, HOOK: when},
                "settling", *(["settled"] if when == "after" else []))
        state = where_it_is(inbox, poison)
        assert state == {"before": "live", "after": "dead"}.get(when, state)
        # Whatever the kill left, the agent goes on: the good events are handled once the dead
        # consumer's lease runs out, and the poisoned event ends in the dead letters.
        handled: list[str] = []
        deadline = time.monotonic() + HANG
        while (len(handled) < 2 or not inbox.dead_letters()) and time.monotonic() < deadline:
            for event in inbox.receive(5):
                if event.id == poison:
                    inbox.nack([poison], error="Poisoned: failing")
                else:
                    handled.append(event.id)
                    inbox.ack([event.id])
            where_it_is(inbox, poison, len(handled))
            time.sleep(0.02)
        assert handled == good
        (dead,) = inbox.dead_letters()
        assert (dead.id, dead.attempts) == (poison, 2)
        assert dead.error in ("Poisoned: failing", "Poisoned: still failing")


def test_the_child_runs_to_the_end_without_the_hook(inbox_at: tuple[str, str]) -> None:
    kind, where = inbox_at
    with open_inbox(kind, where) as inbox:
        poison = inbox.push({"kind": "plan", "text": "poison"})
        inbox.nack([e.id for e in inbox.receive(1)])
        env = {k: v for k, v in os.environ.items() if k != HOOK}
        done = subprocess.run([sys.executable, str(PROCS), kind, where], capture_output=True, text=True, timeout=120,
                              env=env)
        assert done.stdout == "done\n", done.stderr
        assert [(d.id, d.attempts, d.error) for d in inbox.dead_letters()] == [(poison, 2, "Poisoned: still failing")]
