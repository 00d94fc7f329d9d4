"""`RedisInbox`: an agent's inbox over Redis Streams, for agents whose processes run on several machines.

Install the client with ``pip install 'mindcore[redis]'``; any Redis 6.2+ or Valkey server works.
"""

from __future__ import annotations

import json
import os
import re
import socket
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mindcore.consciousness.inbox import BaseInbox, Event, InboxConfig, ms_to_datetime
from mindcore.errors import InboxError, InvalidTypeError
from mindcore.validation import check_text

if TYPE_CHECKING:
    import redis

__all__ = ["RedisInbox"]

_STREAM_ID = re.compile(r"\d{1,20}-\d{1,20}\Z")
_FIELD = "payload"


# Release the events this consumer holds (not those another consumer took over meanwhile), in one
# atomic step: marked idle since the epoch, the next XAUTOCLAIM of any consumer takes them over.
# JUSTID leaves the delivery count alone (the redelivery counts itself).
_RELEASE = """
local released = 0
for i = 3, #ARGV do
  local held = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2])
  if #held > 0 then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'TIME', 0, 'JUSTID')
    released = released + 1
  end
end
return released
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _order(event_id: str) -> tuple[int, int]:
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq)


class RedisInbox(BaseInbox):
    """The :class:`~mindcore.consciousness.Inbox` interface over a Redis stream (one per agent,
    key ``<prefix>:<agent>``) read through a consumer group.

    ``url`` is a Redis URL (``redis://host:6379/0``, ``rediss://`` for TLS, ``unix://``) or a
    ``redis.Redis`` client (left open by :meth:`close`). A push is an ``XADD`` (several in one
    ``MULTI``), returning the stream entry id; :meth:`receive` first takes over events whose lease
    ran out (``XAUTOCLAIM`` with ``visibility_timeout`` as the minimum idle time), then reads new
    ones (``XREADGROUP``); :meth:`ack` is ``XACK`` plus ``XDEL`` (so the stream holds exactly the
    events not acked); :meth:`nack` marks events idle since the epoch, so the next receive takes
    them over at once. Every inbox object is its own consumer in the group (``consumer`` names
    it; default: host, process id and a random suffix).

    A lease is the taker's: an event is taken over once it has been idle for the
    ``visibility_timeout`` of the inbox object that receives it next (Redis keeps no deadline per
    event), so give every consumer of one agent the same ``visibility_timeout``.

    Durability is the server's: an event survives a server restart when the server persists
    (``appendonly yes``; ``appendfsync always`` for every push to be on disk when it returns).
    Leases run on the server's clock.

    Example (needs a server on 127.0.0.1)::

        inbox = RedisInbox("redis://127.0.0.1:6379/0", agent="assistant", visibility_timeout=30)
        inbox.push({"kind": "plan", "text": "Daily report"})
        events = inbox.receive(max_events=20)
        inbox.ack([e.id for e in events])
    """

    def __init__(
        self,
        url: str | redis.Redis,
        agent: str,
        visibility_timeout: float = 30.0,
        config: InboxConfig | None = None,
        *,
        prefix: str = "mindcore:inbox",
        group: str = "mindcore",
        consumer: str | None = None,
    ) -> None:
        self._setup(agent, visibility_timeout, config)
        try:
            import redis
        except ImportError as e:  # pragma: no cover - the extra is part of the test deps
            raise ImportError("RedisInbox needs the redis package: pip install 'mindcore[redis]'") from e
        check_text(prefix, "prefix", max_chars=200, error=InboxError)
        check_text(group, "group", max_chars=200, error=InboxError)
        if consumer is None:
            consumer = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        check_text(consumer, "consumer", max_chars=200, error=InboxError)
        if isinstance(url, str):
            self._client: redis.Redis = redis.Redis.from_url(url)
            self._owns_client = True
        elif isinstance(url, redis.Redis):
            self._client = url
            self._owns_client = False
        else:
            raise InvalidTypeError(f"url: expected a Redis URL or a redis.Redis client, got {type(url).__name__}")
        self._redis = redis
        self.key = f"{prefix}:{self.agent}"
        self.group = group
        self.consumer = consumer
        self._release = self._client.register_script(_RELEASE)
        try:
            self._client.xgroup_create(self.key, group, id="0", mkstream=True)
        except redis.ResponseError as e:
            if "BUSYGROUP" not in str(e):  # BUSYGROUP: another inbox object made the group first
                self._close()
                raise
        except BaseException:
            self._close()
            raise

    def __repr__(self) -> str:
        return f"RedisInbox(key={self.key!r}, group={self.group!r}, consumer={self.consumer!r})"

    @property
    def client(self) -> redis.Redis:
        """The Redis client this inbox talks through."""
        return self._client

    def _push(self, payloads: list[str]) -> list[str]:
        pipe = self._client.pipeline(transaction=True)
        for t in payloads:
            pipe.xadd(self.key, {_FIELD: t.encode()})
        return [_text(i) for i in pipe.execute()]

    def _receive(self, n: int) -> list[Event]:
        events = self._take_over(n)
        if len(events) < n:
            got: Any = self._client.xreadgroup(self.group, self.consumer, {self.key: ">"}, count=n - len(events))
            for _stream, entries in got or []:
                for raw_id, fields in entries:
                    events.append(self._event(_text(raw_id), fields, 1))
        events.sort(key=lambda e: _order(e.id))
        return events

    def _take_over(self, n: int) -> list[Event]:
        """Events whose lease ran out (or that were nacked), claimed for this consumer."""
        idle_ms = max(1, int(self.visibility_timeout * 1000))
        claimed: list[tuple[str, Any]] = []
        gone: list[str] = []
        cursor: Any = "0-0"
        while len(claimed) < n:
            reply = self._client.xautoclaim(
                self.key, self.group, self.consumer, idle_ms, start_id=cursor, count=n - len(claimed)
            )
            cursor = reply[0]
            for raw_id, fields in reply[1]:
                if fields:
                    claimed.append((_text(raw_id), fields))
                else:
                    gone.append(_text(raw_id))
            if _text(cursor) == "0-0":
                break
        if gone:  # deleted from the stream but still pending (Redis 6.2 reports them with no fields)
            self._client.xack(self.key, self.group, *gone)
        if not claimed:
            return []
        pipe = self._client.pipeline(transaction=False)
        for event_id, _ in claimed:
            pipe.xpending_range(self.key, self.group, min=event_id, max=event_id, count=1)
        counts = {}
        for rows in pipe.execute():
            for row in rows:
                counts[_text(row["message_id"])] = int(row["times_delivered"])
        return [self._event(i, fields, counts.get(i, 2)) for i, fields in claimed]

    def _event(self, event_id: str, fields: Mapping[Any, Any], attempts: int) -> Event:
        raw = fields.get(_FIELD.encode(), fields.get(_FIELD))
        payload = json.loads(_text(raw)) if raw is not None else {}
        return Event(event_id, payload, attempts, ms_to_datetime(_order(event_id)[0]))

    @staticmethod
    def _ours(ids: list[str]) -> list[str]:
        # Anything that is not a stream entry id cannot be one of this inbox's events: ignore it.
        return [i for i in ids if _STREAM_ID.match(i)]

    def _ack(self, ids: list[str]) -> None:
        want = self._ours(ids)
        if want:
            pipe = self._client.pipeline(transaction=True)
            pipe.xack(self.key, self.group, *want)
            pipe.xdel(self.key, *want)
            pipe.execute()

    def _nack(self, ids: list[str]) -> None:
        want = self._ours(ids)
        if want:
            self._release(keys=[self.key], args=[self.group, self.consumer, *want])

    def _pending(self) -> int:
        return int(self._client.xlen(self.key))

    def _close(self) -> None:
        self._closed = True
        try:
            # Leave no empty consumer behind; one still holding events stays, so they come back.
            for c in self._client.xinfo_consumers(self.key, self.group):
                if _text(c["name"]) == self.consumer and int(c["pending"]) == 0:
                    self._client.xgroup_delconsumer(self.key, self.group, self.consumer)
        except self._redis.RedisError:
            pass  # the server is gone: nothing to tidy
        finally:
            if self._owns_client:
                self._client.close()
