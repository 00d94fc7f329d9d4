"""One poisoned event never stalls an agent, with either inbox (a store folder, a real Redis server): a
cycle that raises nacks its events with the error, the poisoned event moves to the dead letters after
``max_attempts`` cycles and the good events behind it are handled; ``cycle(on_error=...)`` gives back
only the event that failed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from mindcore.consciousness import BaseInbox, Consciousness, Event, Inbox
from mindcore.errors import ConsciousnessError

T0 = 1_771_491_600_000


class Poisoned(Exception):
    def __init__(self, event_id: str) -> None:
        super().__init__(f"cannot handle event {event_id}")
        self.event_id = event_id


def only_the_failed(exc: BaseException, events: Sequence[Event]) -> list[str]:
    return [exc.event_id] if isinstance(exc, Poisoned) else [e.id for e in events]


def handle(cycle: Any, handled: list[str]) -> None:
    """What a think cycle does with its events: a poisoned one raises; the others are handled."""
    for event in cycle.events:
        if event.payload["text"] == "poison":
            raise Poisoned(event.id)
    handled += [e.payload["text"] for e in cycle.events]
    cycle.append({"role": "assistant", "content": f"Handled {len(cycle.events)} event(s)."})


@pytest.fixture
def inbox(inbox_at: tuple[str, str]) -> Iterator[BaseInbox]:
    kind, where = inbox_at
    if kind == "store":
        opened: BaseInbox = Inbox(where, agent="assistant", max_attempts=3)
    else:
        from mindcore.consciousness import RedisInbox

        opened = RedisInbox(where, agent="assistant", max_attempts=3)
    yield opened
    opened.close()


def test_a_poisoned_event_dies_and_the_good_ones_behind_it_are_handled(inbox: BaseInbox, tmp_path: Path) -> None:
    c = Consciousness(tmp_path / "history", agent="assistant", clock=lambda: T0)
    good = [f"good {i}" for i in range(5)]
    poison, *_ = inbox.push_many([{"kind": "plan", "text": t} for t in ["poison", *good]])
    handled: list[str] = []
    for _ in range(3 + len(good)):
        try:
            with c.cycle(system_prompt="sys", inbox=inbox, max_events=1) as cycle:
                handle(cycle, handled)
        except Poisoned:
            pass
    assert handled == good
    (dead,) = inbox.dead_letters()
    assert (dead.id, dead.payload["text"], dead.attempts) == (poison, "poison", 3)
    assert dead.error == f"Poisoned: cannot handle event {poison}"
    assert len(inbox) == 0 and c.cycle_count == len(good)


def test_on_error_gives_back_only_the_event_that_failed(inbox: BaseInbox, tmp_path: Path) -> None:
    c = Consciousness(tmp_path / "history", agent="assistant", clock=lambda: T0)
    ids = inbox.push_many([{"kind": "plan", "text": t} for t in ["a", "poison", "b"]])
    handled: list[str] = []
    with pytest.raises(Poisoned), c.cycle(inbox=inbox, on_error=only_the_failed) as cycle:
        handled += ["a"]  # handled before the poisoned event raised
        handle(cycle, handled)
    # "a" and "b" were acked (the callback's contract); the poisoned one was given back.
    assert [(e.id, e.attempts) for e in inbox.receive()] == [(ids[1], 2)]
    assert len(inbox) == 1 and c.cycle_count == 0


def test_on_error_that_fails_gives_every_event_back_and_says_why(inbox: BaseInbox, tmp_path: Path) -> None:
    c = Consciousness(tmp_path / "history", agent="assistant", clock=lambda: T0)
    inbox.push_many([{"kind": "plan", "text": "a"}, {"kind": "plan", "text": "b"}])

    def broken(exc: BaseException, events: Sequence[Event]) -> list[str]:
        raise KeyError("oops")

    callbacks: list[Any] = [broken, lambda exc, events: ["1-1"], lambda exc, events: "one id"]
    for attempt, on_error in enumerate(callbacks, start=1):
        with pytest.raises(RuntimeError, match="model down") as info, c.cycle(inbox=inbox, on_error=on_error) as cycle:
            assert [e.attempts for e in cycle.events] == [attempt] * 2
            raise RuntimeError("model down")
        assert any("on_error failed" in note and "every event of the cycle was given back" in note
                   for note in getattr(info.value, "__notes__", []))
    assert len(inbox) == 0  # the third cycle was the third delivery of both
    assert [(d.payload["text"], d.attempts, d.error) for d in inbox.dead_letters()] == [
        ("a", 3, "RuntimeError: model down"), ("b", 3, "RuntimeError: model down")]


def test_on_error_must_be_callable(tmp_path: Path) -> None:
    c = Consciousness(tmp_path / "history", agent="assistant")
    with pytest.raises(Exception, match="on_error"), c.cycle(on_error="nack all"):  # type: ignore[arg-type]
        pass


def test_acycle_on_error(inbox: BaseInbox, tmp_path: Path) -> None:
    c = Consciousness(tmp_path / "history", agent="assistant", clock=lambda: T0)
    ids = inbox.push_many([{"kind": "plan", "text": "a"}, {"kind": "plan", "text": "poison"}])

    async def run() -> None:
        with pytest.raises(Poisoned):
            async with c.acycle(inbox=inbox, on_error=only_the_failed) as cycle:
                handle(cycle, [])

    asyncio.run(run())
    assert [e.id for e in inbox.receive()] == [ids[1]]


def test_a_failed_save_nacks_with_its_error(tmp_path: Path) -> None:
    c = Consciousness(tmp_path / "history", agent="assistant", clock=lambda: T0)
    inbox = Inbox(tmp_path / "inbox", agent="assistant", max_attempts=1)
    inbox.push({"kind": "plan", "text": "x"})
    with pytest.raises(ConsciousnessError), c.cycle(inbox=inbox) as cycle:
        cycle.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})  # no tool result
    (dead,) = inbox.dead_letters()
    assert dead.error is not None and dead.error.startswith("ConsciousnessError: ")
    inbox.close()
