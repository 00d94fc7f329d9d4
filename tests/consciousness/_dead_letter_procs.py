"""Child process of tests/consciousness/test_dead_letter_procs.py, run as
``python _dead_letter_procs.py KIND WHERE``: open the inbox of agent ``poison-agent`` (a store folder
with ``KIND=store``, a Redis URL with ``KIND=redis``; ``max_attempts=2``), receive one event and nack
it, which moves it to the dead letters when this is its second delivery.

``MINDCORE_TEST_KILL_AT`` (read only here) says where the step that moves it stops so that the parent
can ``kill -9`` the process exactly there; the process prints a marker line and then:

- ``before``: waits forever before the write (nothing of it was sent);
- ``after``: does the write, prints ``settled``, waits forever;
- ``racing``: does the write without waiting (the kill lands somewhere in or after it).

Without the variable it prints ``done`` and exits.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from mindcore.consciousness import BaseInbox, Inbox
from mindcore.consciousness._inbox_repo import InboxRepo

AGENT = "poison-agent"
HOOK = "MINDCORE_TEST_KILL_AT"
VISIBILITY = 0.3


def open_inbox(kind: str, where: str) -> BaseInbox:
    if kind == "store":
        return Inbox(where, agent=AGENT, visibility_timeout=VISIBILITY, max_attempts=2)
    from mindcore.consciousness import RedisInbox

    return RedisInbox(where, agent=AGENT, visibility_timeout=VISIBILITY, max_attempts=2)


def _stop_at(original: Any, when: str) -> Any:
    def hooked(*args: Any, **kwargs: Any) -> Any:
        print("settling", flush=True)
        if when == "before":
            threading.Event().wait()  # until the parent kills this process
        out = original(*args, **kwargs)
        if when == "after":
            print("settled", flush=True)
            threading.Event().wait()
        return out

    return hooked


def main(kind: str, where: str) -> int:
    when = os.environ.get(HOOK)
    if when is not None:
        if when not in ("before", "after", "racing"):
            raise SystemExit(f"{HOOK}: expected before, after or racing, got {when!r}")
        if kind == "store":
            original = InboxRepo._settle

            def settle(self: InboxRepo, write: Any, buried: int) -> None:
                if buried:
                    _stop_at(original, when)(self, write, buried)
                else:
                    original(self, write, buried)

            InboxRepo._settle = settle  # type: ignore[method-assign]
        else:
            from mindcore.consciousness import RedisInbox

            RedisInbox._settle = _stop_at(RedisInbox._settle, when)  # type: ignore[method-assign]
    inbox = open_inbox(kind, where)
    events = inbox.receive(1)
    inbox.nack([e.id for e in events], error="Poisoned: still failing")
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
