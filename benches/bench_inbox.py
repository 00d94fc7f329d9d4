"""The inbox: pushes and receive+ack cycles per second, in one process and in two processes at once.

Implementations, measured in the same run:

* ``mindcore`` (:class:`~mindcore.consciousness.Inbox` on a store folder): a push is one LanceDB
  append under the table's write lock (pushes made at once by threads of a process share one); a
  receive takes leases under the agent's inbox lock; an ack deletes.
* ``mindcore-redis`` (:class:`~mindcore.consciousness.RedisInbox`): XADD; XAUTOCLAIM + XREADGROUP;
  XACK + XDEL, on a real Redis server on 127.0.0.1 (no persistence configured).
* ``redis-list`` (the seed's inbox): LPUSH, and RPOP of up to 20 as the receive. There is no
  ack, so an event popped by a consumer that crashes is lost: the baseline is faster because it
  keeps no leases.

A receive+ack round takes 20 events from a backlog and acks them. The two-process cases run two
worker processes (started once) that push, or drain, their share at the same time; their
throughput counts the events of both.

Measured (release build, 2 cores shared with other work, load ~3.5; p50): the store inbox pushes one
event in 3.9 ms (~260/s; the Redis list 0.05 ms, RedisInbox 0.11 ms), 20 with ``push_many`` in 8.8 ms
(~2,300 events/s), ~380 events/s from 8 threads of one process (group commit) and ~130/s from two
processes at once (each commit then first reloads the table the other moved); receive 20 + ack in
28 ms (~720 events/s; RedisInbox 0.55 ms), ~600 events/s with two processes draining at once.

    pytest benches/bench_inbox.py --benchmark-only -q
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest
from _bench import finish

import mindcore
from mindcore.consciousness import BaseInbox, Inbox

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _redis_server import RedisServer, server_binary  # the tests' real Redis server

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
BATCH = 20
PER_WORKER = 20 if QUICK else 60  # events each worker pushes (or drains) per round of the two-process cases
IMPLS = ["mindcore", "mindcore-redis", "redis-list"]
EVENT = {"kind": "space_message", "space": "Family", "sender": "Husam", "sender_type": "human",
         "text": "Can you send me the Q4 report before the meeting tomorrow?"}


class RedisList:
    """The seed's inbox: a Redis list, LPUSH to push, RPOP to take (nothing to ack)."""

    def __init__(self, url: str, agent: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url)
        self.key = f"inbox:{agent}"

    def push(self, payload: dict[str, Any]) -> None:
        import json

        self.client.lpush(self.key, json.dumps(payload))

    def take(self, n: int) -> list[Any]:
        import json

        got = self.client.rpop(self.key, n) or []
        return [json.loads(g) for g in got]

    def close(self) -> None:
        self.client.close()


def _open(impl: str, where: str, agent: str) -> Any:
    if impl == "mindcore":
        return Inbox(where, agent=agent)
    if impl == "mindcore-redis":
        from mindcore.consciousness import RedisInbox

        return RedisInbox(where, agent=agent)
    return RedisList(where, agent)


def _push(target: Any, n: int) -> None:
    for _ in range(n):
        target.push(EVENT)


def _drain(target: Any, n: int) -> None:
    """Receive (and ack) until ``n`` events were taken."""
    taken = 0
    while taken < n:
        if isinstance(target, BaseInbox):
            events = target.receive(BATCH)
            if events:
                target.ack([e.id for e in events])
            got = len(events)
        else:
            got = len(target.take(BATCH))
        if got == 0:
            time.sleep(0.001)
        taken += got


def _worker(impl: str, where: str, agent: str, conn: Connection) -> None:
    target = _open(impl, where, agent)
    try:
        while True:
            cmd, n = conn.recv()
            if cmd == "stop":
                return
            (_push if cmd == "push" else _drain)(target, n)
            conn.send("done")
    finally:
        target.close()


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    binary = server_binary()
    if binary is None:
        pytest.skip("no Redis server binary (install the test extra)")
    pytest.importorskip("redis")
    with RedisServer(binary) as server:
        yield server.url


@pytest.fixture
def where(impl: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if impl == "mindcore":
        return str(tmp_path / "store")
    url: str = request.getfixturevalue("redis_url")
    import redis

    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return url


# -- one process ------------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS)
def test_push_one(benchmark: Any, impl: str, where: str) -> None:
    target = _open(impl, where, "bench")
    try:
        _push(target, 3)  # create the table / group
        finish(benchmark, impl, "inbox: push one event (1 process)", items=1)
        benchmark.pedantic(target.push, args=(EVENT,), rounds=30 if QUICK else 200, warmup_rounds=3)
    finally:
        target.close()


@pytest.mark.parametrize("impl", IMPLS)
def test_push_from_threads(benchmark: Any, impl: str, where: str) -> None:
    target = _open(impl, where, "bench")
    threads, each = 8, 5
    try:
        _push(target, 3)
        with ThreadPoolExecutor(threads) as pool:
            def round_() -> None:
                list(pool.map(lambda _: _push(target, each), range(threads)))

            finish(benchmark, impl, f"inbox: push {each} events from each of {threads} threads (1 process)",
                   items=threads * each)
            benchmark.pedantic(round_, rounds=5 if QUICK else 20, warmup_rounds=1)
    finally:
        target.close()


@pytest.mark.parametrize("impl", ["mindcore", "mindcore-redis"])
def test_push_many(benchmark: Any, impl: str, where: str) -> None:
    target = _open(impl, where, "bench")
    try:
        target.push(EVENT)
        finish(benchmark, impl, f"inbox: push_many {BATCH} events (1 process)", items=BATCH)
        benchmark.pedantic(target.push_many, args=([EVENT] * BATCH,), rounds=20 if QUICK else 100, warmup_rounds=3)
    finally:
        target.close()


@pytest.mark.parametrize("impl", IMPLS)
def test_receive_ack(benchmark: Any, impl: str, where: str) -> None:
    target = _open(impl, where, "bench")
    rounds = 10 if QUICK else 50
    try:
        _push(target, BATCH * (rounds + 3))
        finish(benchmark, impl, f"inbox: receive {BATCH} + ack (1 process)", items=BATCH)
        benchmark.pedantic(_drain, args=(target, BATCH), rounds=rounds, warmup_rounds=2)
    finally:
        target.close()


# -- two processes ----------------------------------------------------------------------------------


class Workers:
    """Two worker processes, each with its own inbox object, run one command at once."""

    def __init__(self, impl: str, where: str) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conns: list[Connection] = []
        self.procs = []
        for _ in range(2):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(impl, where, "bench", child), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def run(self, cmd: str, n: int) -> None:
        for c in self.conns:
            c.send((cmd, n))
        for c in self.conns:
            assert c.recv() == "done"

    def stop(self) -> None:
        for c in self.conns:
            c.send(("stop", 0))
        for p in self.procs:
            p.join(30)


@pytest.mark.parametrize("impl", IMPLS)
def test_push_two_processes(benchmark: Any, impl: str, where: str) -> None:
    workers = Workers(impl, where)
    try:
        workers.run("push", 2)  # both started, table / group created
        finish(benchmark, impl, f"inbox: push {PER_WORKER} events from each of 2 processes", items=2 * PER_WORKER)
        benchmark.pedantic(workers.run, args=("push", PER_WORKER), rounds=3 if QUICK else 8, warmup_rounds=1)
    finally:
        workers.stop()


@pytest.mark.parametrize("impl", IMPLS)
def test_receive_ack_two_processes(benchmark: Any, impl: str, where: str) -> None:
    rounds = 3 if QUICK else 8
    filler = _open(impl, where, "bench")
    try:
        _push(filler, 2 * PER_WORKER * (rounds + 2))
    finally:
        filler.close()
    workers = Workers(impl, where)
    try:
        workers.run("drain", 1)
        finish(benchmark, impl, f"inbox: receive {BATCH} + ack, {PER_WORKER} events in each of 2 processes",
               items=2 * PER_WORKER)
        benchmark.pedantic(workers.run, args=("drain", PER_WORKER), rounds=rounds, warmup_rounds=1)
    finally:
        workers.stop()


def test_store_inbox_push_is_durable_when_it_returns() -> None:
    """What the bench measures is a committed push: a new store object sees it."""
    with tempfile.TemporaryDirectory() as tmp:
        Inbox(tmp, agent="bench").push(EVENT)
        assert mindcore.open(tmp).table("consciousness_inbox").count("bench") == 1
