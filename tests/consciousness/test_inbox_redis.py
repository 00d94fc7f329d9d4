"""What only `RedisInbox` has (a real Redis server on 127.0.0.1): its client, consumers and keys."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from _redis_server import RedisServer

from mindcore.errors import InboxError, InvalidTypeError

redis = pytest.importorskip("redis", reason="RedisInbox needs the redis package (the test extra has it)")

from mindcore.consciousness import RedisInbox  # noqa: E402  (after the skip: it needs redis)


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[Any]:
    with redis.Redis.from_url(redis_server.url) as c:
        c.flushdb()
        yield c


def _consumers(client: Any, key: str) -> dict[str, int]:
    return {c["name"].decode(): int(c["pending"]) for c in client.xinfo_consumers(key, "mindcore")}


def test_one_stream_per_agent_under_the_prefix(client: Any) -> None:
    with RedisInbox(client, agent="assistant") as a, RedisInbox(client, agent="other", prefix="app:q") as b:
        a.push({"kind": "plan", "text": "x"})
        b.push_many([{"kind": "plan"}, {"kind": "service"}])
        assert (a.key, b.key) == ("mindcore:inbox:assistant", "app:q:other")
        assert client.xlen("mindcore:inbox:assistant") == 1 and client.xlen("app:q:other") == 2
    assert client.ping()  # a client passed in stays open


def test_close_removes_an_idle_consumer_and_keeps_one_holding_events(client: Any) -> None:
    idle = RedisInbox(client, agent="a", consumer="idle")
    busy = RedisInbox(client, agent="a", consumer="busy")
    busy.push_many([{"kind": "plan"}, {"kind": "plan"}])
    assert len(busy.receive(1)) == 1
    idle.ack([e.id for e in idle.receive(1)])
    assert _consumers(client, "mindcore:inbox:a") == {"busy": 1, "idle": 0}
    idle.close()
    busy.close()
    assert _consumers(client, "mindcore:inbox:a") == {"busy": 1}  # its event must still come back


def test_attempts_count_every_delivery_across_consumers(client: Any) -> None:
    one = RedisInbox(client, agent="a", visibility_timeout=0.05, consumer="one")
    two = RedisInbox(client, agent="a", visibility_timeout=0.05, consumer="two")
    event_id = one.push({"kind": "plan"})
    seen = []
    for inbox in (one, two, one, two):
        got = inbox.receive()
        seen.append([(e.id, e.attempts) for e in got])
        time.sleep(0.1)
    assert seen == [[(event_id, n)] for n in (1, 2, 3, 4)]


def test_bad_arguments(redis_server: RedisServer) -> None:
    with pytest.raises(InvalidTypeError, match=r"url: expected a Redis URL or a redis\.Redis client"):
        RedisInbox(42, agent="a")  # type: ignore[arg-type]
    with pytest.raises(InboxError, match="prefix: must not be empty"):
        RedisInbox(redis_server.url, agent="a", prefix="")
    with pytest.raises(InboxError, match="agent"):
        RedisInbox(redis_server.url, agent="a b")


def test_an_unreachable_server_is_a_connection_error() -> None:
    with pytest.raises(redis.ConnectionError):
        RedisInbox("redis://127.0.0.1:1/0", agent="a")
