"""kill -9 at random points of an agent's think cycles (>= 50 kills, with the store's inbox and
with RedisInbox): the history is always the last saved state, and every pushed event is either in
the saved history or delivered again: none is lost and none appears twice."""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _conscious_procs import cycle_forever, fork_context, open_agent, open_store, reply
from conftest import HANG, kill_forked_at, rounds

from mindcore.consciousness.compact import SUMMARY_HEADER
from mindcore.consciousness.messages import check_sequence

pytestmark = pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")

KILLS = rounds("MINDCORE_CONSCIOUSNESS_KILLS", default=20, full=50)
TAG = re.compile(r"#\d+#")


@pytest.fixture(scope="module")
def ctx() -> Iterator[Any]:
    yield from fork_context()


def handled(messages: list[dict[str, Any]]) -> Counter[str]:
    """How often each event tag appears as handled: in the cycles' final texts and in the summary
    lines of compacted cycles (INBOX messages, which also name them, are not counted)."""
    found: Counter[str] = Counter()
    for m in messages:
        text = m["content"]
        if m["role"] == "assistant" or (m["role"] == "user" and text.startswith(SUMMARY_HEADER)):
            found.update(TAG.findall(text))
    return found


def test_kill_9_during_cycles_loses_no_event_and_repeats_none(ctx: Any, tmp_path: Path,
                                                              inbox_at: tuple[str, str]) -> None:
    kind, where = inbox_at  # the inbox on the history's store (a folder of its own), or on Redis
    path = str(tmp_path / "agent")
    store = open_store(path)
    c, inbox = open_agent(store, kind, where)
    rnd = random.Random(10)
    pushed: list[str] = []
    done: set[str] = set()
    compactions = 0
    unreported = 0  # kills after a save committed and before the child could say so
    for trial in range(KILLS):
        fresh = [f"#{len(pushed) + i}#" for i in range(rnd.randint(1, 4))]
        inbox.push_many([{"kind": "space_message", "space": "Test", "sender": "Tester", "sender_type": "human",
                          "text": t} for t in fresh])
        pushed += fresh
        # The child runs `cycles` whole cycles (its progress, never a delay, says when), then is
        # killed racing its next save (at "saving") or the start of the cycle after (at "saved").
        cycles = rnd.randint(0, 5)
        stop = ("saving", "saved")[trial % 2]
        said = [m.split() for m in kill_forked_at(ctx, cycle_forever, (path, kind, where),
                                                  "ready", *["saved"] * cycles, stop)]
        at_start = int(said[0][1])
        saved = max((int(n) for word, n in said if word == "saved"), default=at_start)

        messages = c.messages  # the store as the killed child left it
        count = c.cycle_count
        assert saved <= count <= saved + 1, f"trial {trial}: {count} cycles saved, the child reported {saved}"
        unreported += count == saved + 1
        check_sequence(messages)
        seen = handled(messages)
        assert max(seen.values(), default=1) == 1, f"trial {trial}: an event was handled twice: {seen.most_common(2)}"
        assert set(seen) <= set(pushed)
        assert done <= set(seen), f"trial {trial}: saved events vanished: {sorted(done - set(seen))}"
        done = set(seen)
        assert len(set(pushed) - done) <= inbox.pending(), f"trial {trial}: an event is neither saved nor pending"
        compactions += any(m["content"].startswith(SUMMARY_HEADER) for m in messages[1:2])

    # Drain what is left in this process: every event ends up handled exactly once.
    deadline = time.monotonic() + HANG
    while inbox.pending() and time.monotonic() < deadline:
        with c.cycle(system_prompt="You are the crash-test agent.", inbox=inbox, max_events=20) as cycle:
            cycle.append(reply(cycle.number, [str(e.payload["text"]) for e in cycle.events]))
        if not cycle.events:
            time.sleep(0.1)  # events of a killed child are still leased
    seen = handled(c.messages)
    assert inbox.pending() == 0
    assert sorted(seen) == sorted(pushed) and set(seen.values()) == {1}
    assert compactions, "no kill came after a compaction: raise the history's size"
    print(f"{KILLS} kills, {c.cycle_count} cycles, {unreported} right after a save, "
          f"{compactions} after a compaction")
    store.close()
