"""Dead letters, run against both inboxes (a store folder and a real Redis server): an event delivered
``max_attempts`` times without an ack leaves the live queue for the dead letters, whether it was nacked
or its leases ran out; requeue and discard; attempts survive reopening; every id of ack, nack, requeue
and discard is checked before any is applied."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from _redis_server import RedisServer

from mindcore.consciousness import BaseInbox, DeadLetter, Inbox
from mindcore.errors import InboxError, InvalidInputError, InvalidTypeError
from mindcore.store import new_id

MakeInbox = Callable[..., BaseInbox]
SHORT = 0.3  # a lease short enough to wait out in a test
SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def open_inbox(kind: str, where: str, **kw: Any) -> BaseInbox:
    if kind == "store":
        return Inbox(where, agent="assistant", **kw)
    from mindcore.consciousness import RedisInbox

    return RedisInbox(where, agent="assistant", **kw)


@pytest.fixture
def make(inbox_at: tuple[str, str]) -> Iterator[MakeInbox]:
    """Opens an inbox of agent ``assistant`` (a new consumer each call) at the test's location."""
    kind, where = inbox_at
    opened: list[BaseInbox] = []

    def open_one(**kw: Any) -> BaseInbox:
        opened.append(open_inbox(kind, where, **kw))
        return opened[-1]

    yield open_one
    for inbox in opened:
        inbox.close()


def msg(text: str) -> dict[str, Any]:
    return {"kind": "tool_result", "text": text}


def texts(events: Any) -> list[str]:
    return [e.payload["text"] for e in events]


def unknown_id(inbox: BaseInbox) -> str:
    return new_id() if isinstance(inbox, Inbox) else "1-1"


def test_an_event_nacked_max_attempts_times_is_a_dead_letter(make: MakeInbox) -> None:
    inbox = make(max_attempts=3)
    poison, *good = inbox.push_many([msg("poison"), msg("a"), msg("b")])
    before = datetime.now(UTC) - timedelta(seconds=5)
    for attempt in (1, 2, 3):
        (event,) = inbox.receive(1)
        assert (event.id, event.attempts) == (poison, attempt)
        inbox.nack([poison], error=f"ValueError: bad date (try {attempt})")
    assert inbox.dead_letters() == [
        DeadLetter(poison, msg("poison"), 3, "ValueError: bad date (try 3)", inbox.dead_letters()[0].died_at,
                   inbox.dead_letters()[0].pushed_at)]
    (dead,) = inbox.dead_letters()
    assert before < dead.pushed_at <= dead.died_at < datetime.now(UTC) + timedelta(seconds=5)
    assert len(inbox) == 2  # dead letters are not pending
    assert [(e.id, e.attempts) for e in inbox.receive(5)] == [(good[0], 1), (good[1], 1)]
    assert dead.to_dict()["error"] == "ValueError: bad date (try 3)" and dead.to_dict()["died_at"].endswith("+00:00")


def test_an_event_whose_leases_run_out_dies_at_the_next_receive(make: MakeInbox) -> None:
    inbox = make(max_attempts=2, visibility_timeout=SHORT)
    poison, good = inbox.push_many([msg("poison"), msg("good")])
    assert [(e.id, e.attempts) for e in inbox.receive(1)] == [(poison, 1)]
    time.sleep(SHORT + 0.1)
    assert [(e.id, e.attempts) for e in inbox.receive(1)] == [(poison, 2)]
    time.sleep(SHORT + 0.1)
    # Delivered twice, never acked: not a third time; the event behind it comes instead.
    assert [(e.id, e.attempts) for e in inbox.receive(1)] == [(good, 1)]
    (dead,) = inbox.dead_letters()
    assert (dead.id, dead.attempts, dead.error) == (poison, 2, None)


def test_the_last_error_is_kept_when_the_lease_runs_out_later(make: MakeInbox) -> None:
    inbox = make(max_attempts=2, visibility_timeout=SHORT)
    poison = inbox.push(msg("poison"))
    inbox.receive(1)
    inbox.nack([poison], error="TimeoutError: model took too long")
    inbox.receive(1)  # the second delivery; this consumer dies without a word
    time.sleep(SHORT + 0.1)
    assert inbox.receive() == []
    assert [(d.id, d.attempts, d.error) for d in inbox.dead_letters()] == [
        (poison, 2, "TimeoutError: model took too long")]


def test_requeue_and_discard_round_trip(make: MakeInbox) -> None:
    inbox = make(max_attempts=1)
    ids = inbox.push_many([msg("a"), msg("b"), msg("c")])
    inbox.nack([e.id for e in inbox.receive(3)], error="RuntimeError: down")
    assert [d.id for d in inbox.dead_letters()] == ids and len(inbox) == 0
    assert [d.id for d in inbox.dead_letters(limit=2)] == ids[:2]

    moved = inbox.requeue([ids[0], ids[2], unknown_id(inbox)])
    assert list(moved) == [ids[0], ids[2]]
    assert [d.id for d in inbox.dead_letters()] == [ids[1]]
    again = inbox.receive(5)
    assert [(e.id, e.payload, e.attempts) for e in again] == [(moved[ids[0]], msg("a"), 1), (moved[ids[2]], msg("c"), 1)]
    inbox.ack([e.id for e in again])

    assert inbox.discard([ids[1], ids[1], unknown_id(inbox)]) == [ids[1]]
    assert inbox.dead_letters() == [] and len(inbox) == 0 and inbox.receive() == []
    assert inbox.requeue([ids[1]]) == {} and inbox.discard([ids[1]]) == []
    assert inbox.requeue([]) == {} and inbox.discard([]) == []


def test_a_requeued_event_that_fails_again_dies_again_with_its_attempts_reset(make: MakeInbox) -> None:
    inbox = make(max_attempts=2)
    first = inbox.push(msg("poison"))
    for _ in range(2):
        inbox.nack([e.id for e in inbox.receive()], error="KeyError: 'x'")
    live = inbox.requeue([first])[first]
    (event,) = inbox.receive()
    assert (event.id, event.attempts) == (live, 1)
    inbox.nack([live])
    inbox.nack([e.id for e in inbox.receive()])
    (dead,) = inbox.dead_letters()
    assert (dead.id, dead.attempts, dead.error) == (live, 2, None)  # the old error went with the requeue


def test_ack_removes_a_dead_letter(make: MakeInbox) -> None:
    inbox = make(max_attempts=1)
    event_id = inbox.push(msg("late"))
    inbox.receive()
    inbox.nack([event_id])
    inbox.ack([event_id])  # a slow consumer did handle it after all
    assert inbox.dead_letters() == [] and len(inbox) == 0


def test_a_nack_of_another_consumers_event_buries_nothing(make: MakeInbox) -> None:
    one, two = make(max_attempts=1), make(max_attempts=1)
    event_id = one.push(msg("x"))
    two.receive()
    one.nack([event_id], error="not mine")
    assert one.dead_letters() == []
    two.nack([event_id])
    assert [d.error for d in one.dead_letters()] == [None]


def test_attempts_survive_reopening(inbox_at: tuple[str, str]) -> None:
    kind, where = inbox_at
    with open_inbox(kind, where, max_attempts=3) as first:
        poison, good = first.push_many([msg("poison"), msg("good")])
        for _ in range(2):
            (event,) = first.receive(1)
            first.nack([event.id], error="OSError: disk")
    with open_inbox(kind, where, max_attempts=3) as second:
        (event,) = second.receive(1)
        assert (event.id, event.attempts) == (poison, 3)
        second.nack([poison], error="OSError: disk")
    with open_inbox(kind, where, max_attempts=3) as third:
        assert [(d.id, d.attempts, d.error) for d in third.dead_letters()] == [(poison, 3, "OSError: disk")]
        assert [e.id for e in third.receive()] == [good]


def test_attempts_and_dead_letters_survive_a_redis_restart(redis_server: RedisServer) -> None:
    redis = pytest.importorskip("redis")
    from mindcore.consciousness import RedisInbox

    with redis.Redis.from_url(redis_server.url) as client:
        client.flushdb()
    with RedisInbox(redis_server.url, agent="restart", max_attempts=2) as inbox:
        poison, other = inbox.push_many([msg("poison"), msg("other")])
        inbox.receive(1)
        inbox.nack([poison], error="E: one")
        assert [(e.id, e.attempts) for e in inbox.receive(2)] == [(poison, 2), (other, 1)]
        inbox.nack([poison], error="E: two")  # its second delivery: dead
        inbox.nack([other])
    redis_server.restart()
    with RedisInbox(redis_server.url, agent="restart", max_attempts=2) as inbox:
        assert [(e.id, e.attempts) for e in inbox.receive()] == [(other, 2)]
        assert [(x.id, x.attempts, x.error) for x in inbox.dead_letters()] == [(poison, 2, "E: two")]


def test_error_text_is_cut_and_screened(make: MakeInbox) -> None:
    inbox = make(max_attempts=1)
    a, b = inbox.push_many([msg("a"), msg("b")])
    inbox.receive()
    inbox.nack([a], error="x" * 5000)
    inbox.nack([b], error=f"AuthError: token {SECRET} refused\x00")
    long, secret = inbox.dead_letters()
    assert long.error is not None and len(long.error) <= 2000 and long.error.endswith("more characters]")
    assert secret.error is not None and SECRET not in secret.error and secret.error.startswith("AuthError: token ")
    with pytest.raises(InvalidTypeError, match="error: expected a string or None"):
        inbox.nack([a], error=ValueError("x"))  # type: ignore[arg-type]


# -- every id checked first ---------------------------------------------------------------------------


def test_a_malformed_id_is_refused_and_nothing_is_applied(make: MakeInbox) -> None:
    inbox = make(max_attempts=1)
    ids = inbox.push_many([msg("a"), msg("b"), msg("c")])
    held = inbox.receive(2)
    bad = "1-1" if isinstance(inbox, Inbox) else new_id()  # the other inbox's shape
    for call in (inbox.ack, inbox.nack, inbox.requeue, inbox.discard):
        with pytest.raises(InvalidInputError, match=rf"ids\[1\]: {bad!r} is not an event id of this inbox .*nothing was done"):
            call([ids[0], bad, ids[1]])
    assert len(inbox) == 3 and inbox.dead_letters() == []
    assert [e.id for e in inbox.receive()] == [ids[2]]  # the two others still leased, not released
    inbox.nack([e.id for e in held])  # still leased to this consumer: their first nack applies now
    assert [d.id for d in inbox.dead_letters()] == ids[:2]


@pytest.mark.parametrize("ids", [{"a": 1}, "one-id", b"x", 42, None, [None], [""], ["x" * 201]])
def test_ids_must_be_a_list_of_strings(make: MakeInbox, ids: Any) -> None:
    inbox = make()
    inbox.push(msg("a"))
    for call in (inbox.ack, inbox.nack, inbox.requeue, inbox.discard):
        with pytest.raises(InboxError, match=r"ids"):
            call(ids)
    assert len(inbox) == 1


def test_redis_ids_out_of_range_are_refused_before_redis_sees_them(redis_server: RedisServer) -> None:
    pytest.importorskip("redis")
    from mindcore.consciousness import RedisInbox

    with RedisInbox(redis_server.url, agent="range") as inbox:
        good = inbox.push(msg("a"))
        inbox.receive()
        with pytest.raises(InvalidInputError, match=r"ids\[1\]: '99999999999999999999-1' is not an event id"):
            inbox.ack([good, "99999999999999999999-1"])
        assert len(inbox) == 1  # the good id was not acked either
        inbox.ack([good])
        assert len(inbox) == 0


def test_max_attempts_is_checked(make: MakeInbox) -> None:
    for bad, needle in ((0, "must be at least 1"), (1.5, "expected an integer"), ("3", "expected an integer")):
        with pytest.raises(InboxError, match=f"max_attempts: {needle}"):
            make(max_attempts=bad)
    with pytest.raises(InboxError, match="limit: must be at least 1"):
        make().dead_letters(limit=0)
    assert make().max_attempts == 5


def test_async_twins(make: MakeInbox) -> None:
    inbox = make(max_attempts=1)

    async def run() -> None:
        a, b = await inbox.apush_many([msg("a"), msg("b")])
        await inbox.anack([e.id for e in await inbox.areceive()], error="E")
        assert [d.id for d in await inbox.adead_letters()] == [a, b]
        assert list(await inbox.arequeue(iter([a]))) == [a]
        assert await inbox.adiscard(iter([b])) == [b]
        assert await inbox.adead_letters() == [] and await inbox.apending() == 1

    asyncio.run(run())


def test_inbox_totals_count_every_agents_pending_events_and_dead_letters(tmp_path: Any) -> None:
    import mindcore
    from mindcore.consciousness import InboxTotals, inbox_totals

    store = mindcore.open(tmp_path / "store")
    assert inbox_totals(store) == {}
    assert store.table_names() == []  # counting creates nothing
    support, billing = Inbox(store, agent="support", max_attempts=1), Inbox(store, agent="billing")
    support.push_many([msg("a"), msg("b"), msg("c")])
    billing.push(msg("d"))
    (first, *_rest) = support.receive(max_events=1)
    support.nack([first.id], error="poisoned")  # its one attempt spent: a dead letter
    assert inbox_totals(store) == {"billing": InboxTotals(1, 0), "support": InboxTotals(2, 1)}
    assert support.pending() == 2 and len(support.dead_letters()) == 1  # as each inbox counts itself
    billing.ack([e.id for e in billing.receive()])
    support.discard([first.id])
    assert inbox_totals(tmp_path / "store") == {"support": InboxTotals(2, 0)}  # a folder works as well
    support.close(), billing.close(), store.close()
