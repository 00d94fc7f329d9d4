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

from mindcore.consciousness.inbox import BaseInbox, DeadLetter, Event, InboxConfig, ms_to_datetime
from mindcore.errors import InboxError, InvalidTypeError
from mindcore.validation import check_text

if TYPE_CHECKING:
    import redis

__all__ = ["RedisInbox"]

_FIELD = "payload"


# Settle events this consumer holds (not those another consumer took over meanwhile), each in one
# atomic step. An event delivered at least ARGV[3] times moves to the dead letters (a hash, event id
# -> JSON: payload, attempts (its delivery count minus ARGV[4]), last error, when it died); with
# ARGV[5] = 'release' the others are released: marked idle since the epoch, the next XAUTOCLAIM of
# any consumer takes them over (JUSTID leaves the delivery count alone: the redelivery counts
# itself). ARGV[6] is the error to keep with each event ('' for none). Returns the ids buried.
# KEYS: the stream, the dead-letter hash, the hash of last errors.
_SETTLE = """
local stream, dead, errors = KEYS[1], KEYS[2], KEYS[3]
local group, consumer = ARGV[1], ARGV[2]
local limit, offset, release, err = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == 'release', ARGV[6]
local buried = {}
for i = 7, #ARGV do
  local id = ARGV[i]
  local held = redis.call('XPENDING', stream, group, id, id, 1, consumer)
  if #held > 0 then
    if err ~= '' then redis.call('HSET', errors, id, err) end
    local count = tonumber(held[1][4])
    if count >= limit then
      local entry = redis.call('XRANGE', stream, id, id)
      if #entry > 0 then
        local payload = '{}'
        local fields = entry[1][2]
        for f = 1, #fields, 2 do
          if fields[f] == 'payload' then payload = fields[f + 1] end
        end
        local now = redis.call('TIME')
        local last = redis.call('HGET', errors, id)
        local row = {payload = payload, attempts = count - offset,
                     died_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)}
        if last then row.error = last end
        redis.call('HSET', dead, id, cjson.encode(row))
      end
      redis.call('XACK', stream, group, id)
      redis.call('XDEL', stream, id)
      redis.call('HDEL', errors, id)
      buried[#buried + 1] = id
    elseif release then
      redis.call('XCLAIM', stream, group, consumer, 0, id, 'TIME', 0, 'JUSTID')
    end
  end
end
return buried
"""

# Put dead letters back in the stream (a new entry: a stream only appends), each in one atomic step.
# KEYS: the stream, the dead-letter hash. Returns {old id, new id, ...} for those found.
_REQUEUE = """
local out = {}
for i = 1, #ARGV do
  local row = redis.call('HGET', KEYS[2], ARGV[i])
  if row then
    local new = redis.call('XADD', KEYS[1], '*', 'payload', cjson.decode(row).payload)
    redis.call('HDEL', KEYS[2], ARGV[i])
    out[#out + 1] = ARGV[i]
    out[#out + 1] = new
  end
end
return out
"""

# Delete dead letters; returns the ids found. KEYS: the dead-letter hash.
_DISCARD = """
local out = {}
for i = 1, #ARGV do
  if redis.call('HDEL', KEYS[1], ARGV[i]) == 1 then out[#out + 1] = ARGV[i] end
end
return out
"""

_U64 = (1 << 64) - 1


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
        max_attempts: int = 5,
        *,
        prefix: str = "mindcore:inbox",
        group: str = "mindcore",
        consumer: str | None = None,
    ) -> None:
        self._setup(agent, visibility_timeout, config, max_attempts)
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
        self.dead_key = f"{self.key}:dead"
        self.errors_key = f"{self.key}:errors"
        self.group = group
        self.consumer = consumer
        self._settle_script = self._client.register_script(_SETTLE)
        self._requeue_script = self._client.register_script(_REQUEUE)
        self._discard_script = self._client.register_script(_DISCARD)
        try:
            self._client.xgroup_create(self.key, group, id="0", mkstream=True)
        except redis.ResponseError as e:
            if "BUSYGROUP" not in str(e):  # BUSYGROUP: another inbox object made the group first
                self._close()
                raise
        except BaseException:
            self._close()
            raise

    _ID_SHAPE = re.compile(r"\d{1,20}-\d{1,20}\Z")
    _ID_WHAT = "a Redis stream entry id such as '1771491600000-0' (two numbers up to 2**64 - 1), as push returns them"

    def __repr__(self) -> str:
        return (f"RedisInbox(key={self.key!r}, group={self.group!r}, consumer={self.consumer!r}, "
                f"max_attempts={self.max_attempts})")

    def _valid_id(self, event_id: str) -> bool:
        return self._ID_SHAPE.match(event_id) is not None and all(int(p) <= _U64 for p in event_id.split("-"))

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
        """Events whose lease ran out (or that were nacked), claimed for this consumer; those
        claimed after their ``max_attempts``-th delivery move to the dead letters instead."""
        idle_ms = max(1, int(self.visibility_timeout * 1000))
        events: list[Event] = []
        cursor: Any = "0-0"
        while len(events) < n:
            reply = self._client.xautoclaim(
                self.key, self.group, self.consumer, idle_ms, start_id=cursor, count=n - len(events)
            )
            cursor = reply[0]
            claimed = [(_text(raw_id), fields) for raw_id, fields in reply[1] if fields]
            gone = [_text(raw_id) for raw_id, fields in reply[1] if not fields]
            if gone:  # deleted from the stream but still pending (Redis 6.2 reports them with no fields)
                self._client.xack(self.key, self.group, *gone)
            if claimed:
                counts = self._delivery_counts([i for i, _ in claimed])
                over = [i for i, _ in claimed if counts.get(i, 2) > self.max_attempts]
                if over:  # the claim was one delivery too many: it is not delivered, it dies
                    self._settle(over, None, limit=self.max_attempts + 1, offset=1, release=False)
                events += [self._event(i, fields, counts.get(i, 2)) for i, fields in claimed if i not in over]
            if _text(cursor) == "0-0":
                break
        return events

    def _delivery_counts(self, ids: list[str]) -> dict[str, int]:
        pipe = self._client.pipeline(transaction=False)
        for event_id in ids:
            pipe.xpending_range(self.key, self.group, min=event_id, max=event_id, count=1)
        counts = {}
        for rows in pipe.execute():
            for row in rows:
                counts[_text(row["message_id"])] = int(row["times_delivered"])
        return counts

    def _event(self, event_id: str, fields: Mapping[Any, Any], attempts: int) -> Event:
        raw = fields.get(_FIELD.encode(), fields.get(_FIELD))
        payload = json.loads(_text(raw)) if raw is not None else {}
        return Event(event_id, payload, attempts, ms_to_datetime(_order(event_id)[0]))

    def _settle(self, ids: list[str], error: str | None, *, limit: int, offset: int, release: bool) -> list[str]:
        """Run the settle script (see ``_SETTLE``) on ``ids``: the ids moved to the dead letters."""
        buried = self._settle_script(
            keys=[self.key, self.dead_key, self.errors_key],
            args=[self.group, self.consumer, limit, offset, "release" if release else "keep", error or "", *ids],
        )
        return [_text(i) for i in buried]

    def _ack(self, ids: list[str]) -> None:
        pipe = self._client.pipeline(transaction=True)
        pipe.xack(self.key, self.group, *ids)
        pipe.xdel(self.key, *ids)
        pipe.hdel(self.dead_key, *ids)
        pipe.hdel(self.errors_key, *ids)
        pipe.execute()

    def _nack(self, ids: list[str], error: str | None) -> None:
        self._settle(ids, error, limit=self.max_attempts, offset=0, release=True)

    def _dead_letters(self, limit: int | None) -> list[DeadLetter]:
        rows = sorted(((_text(k), v) for k, v in self._client.hgetall(self.dead_key).items()),
                      key=lambda kv: _order(kv[0]))
        out = []
        for event_id, raw in rows[:limit]:
            row = json.loads(_text(raw))
            out.append(DeadLetter(event_id, json.loads(row["payload"]), int(row["attempts"]), row.get("error"),
                                  ms_to_datetime(int(row["died_ms"])), ms_to_datetime(_order(event_id)[0])))
        return out

    def _requeue(self, ids: list[str]) -> dict[str, str]:
        flat = [_text(v) for v in self._requeue_script(keys=[self.key, self.dead_key], args=ids)]
        return dict(zip(flat[::2], flat[1::2], strict=True))

    def _discard(self, ids: list[str]) -> list[str]:
        return [_text(v) for v in self._discard_script(keys=[self.dead_key], args=ids)]

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
