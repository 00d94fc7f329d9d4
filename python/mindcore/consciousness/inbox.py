"""An agent's inbox: events pushed by anyone, received with a lease, removed only when acknowledged.

:class:`Inbox` keeps the events in a table of the store (a folder, ``memory://`` or object
storage), so an event pushed is kept until it is acknowledged, whatever happens to the processes
in between; :class:`~mindcore.consciousness.RedisInbox` does the same over Redis Streams for agents
spread over machines. Both have one interface, :class:`BaseInbox`::

    inbox = Inbox(store, agent="assistant", visibility_timeout=30.0)
    inbox.push({"kind": "space_message", "space": "Family", "sender": "Husam",
                "sender_type": "human", "text": "Hello!"})          # -> event id, stored
    events = inbox.receive(max_events=20)     # leased: no other consumer gets them meanwhile
    ...                                       # handle them
    inbox.ack([e.id for e in events])         # done: removed for good
    inbox.nack(ids, error="ValueError: ...")  # not done: delivered again at once

An event received and neither acknowledged nor released comes back once its lease
(``visibility_timeout`` seconds) runs out, so a consumer that crashes loses nothing:
:attr:`Event.attempts` then says how often it was delivered. Events come in push order (oldest
first) among those not leased.

A queue never stalls on one event: an event delivered ``max_attempts`` times (default 5) without
an ack moves to the inbox's dead letters instead of being delivered again, in one atomic step (it
is never in both lists, never in neither). The delivery count is stored with the event, so it
survives restarts. An operator looks at them and decides::

    for d in inbox.dead_letters():            # DeadLetter: id, payload, attempts, error, died_at
        print(d.id, d.attempts, d.error)
    inbox.requeue([...])                      # back to the live queue, attempts reset
    inbox.discard([...])                      # gone for good

(or ``mindcore inbox dead-letters|requeue|discard`` from the shell).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from mindcore.errors import InboxError, InvalidTypeError
from mindcore.policy import SecretPolicy
from mindcore.store import StoreLike
from mindcore.validation import check_int, check_number, check_storable, describe

__all__ = ["BaseInbox", "DeadLetter", "Event", "Inbox", "InboxConfig", "InboxTotals", "check_agent", "inbox_totals"]

#: Agent names: letters, digits, ``_ . : @ + -`` (any script's letters), starting with a letter or digit.
_AGENT = re.compile(r"[^\W_][\w.:@+-]{0,199}\Z")


def check_agent(agent: object, name: str = "agent") -> str:
    """``agent`` when it is a usable agent name: 1-200 letters, digits and ``_ . : @ + -``,
    starting with a letter or digit. Anything else (quotes, slashes, spaces, control
    characters, an empty string) raises :class:`~mindcore.errors.InboxError`, so an agent name
    can never read as a path, a query or a line of a prompt.

    >>> check_agent("assistant-1")
    'assistant-1'
    >>> check_agent("../other-agent")
    Traceback (most recent call last):
    ...
    mindcore.errors.InboxError: agent: '../other-agent' is not a usable agent name (1-200 letters, digits and _ . : @ + -, starting with a letter or digit)
    """
    if not isinstance(agent, str):
        raise InboxError(f"{name}: expected a string, got {describe(agent)}")
    if not _AGENT.match(agent):
        raise InboxError(
            f"{name}: {agent[:220]!r} is not a usable agent name "
            "(1-200 letters, digits and _ . : @ + -, starting with a letter or digit)"
        )
    return agent


@dataclass(frozen=True)
class Event:
    """One event as received: its ``id`` (give it to ``ack`` / ``nack``), the ``payload`` pushed,
    how many times it has been delivered (``attempts``: 1 the first time) and when it was pushed
    (``pushed_at``, UTC)."""

    id: str
    payload: dict[str, Any]
    attempts: int
    pushed_at: datetime


@dataclass(frozen=True)
class DeadLetter:
    """An event that was delivered ``max_attempts`` times without an ack and no longer is: its
    ``id`` (give it to ``requeue`` / ``discard``), the ``payload`` pushed, how many times it was
    delivered (``attempts``), the last error a consumer gave with ``nack(..., error=...)``
    (``None`` when none did: its leases ran out), when it died (``died_at``) and when it was
    pushed (``pushed_at``), both UTC."""

    id: str
    payload: dict[str, Any]
    attempts: int
    error: str | None
    died_at: datetime
    pushed_at: datetime

    def to_dict(self) -> dict[str, Any]:
        """The dead letter as JSON-ready values (times as ISO 8601 strings)."""
        return {"id": self.id, "payload": self.payload, "attempts": self.attempts, "error": self.error,
                "died_at": self.died_at.isoformat(), "pushed_at": self.pushed_at.isoformat()}


#: The longest error text kept with an event; a longer one is cut, saying so.
MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class InboxConfig:
    """Options of an inbox; wrong values fail here, naming the option.

    ``max_event_bytes``: the largest event accepted, as UTF-8 JSON (a bigger one raises
    :class:`~mindcore.errors.InboxError` and nothing is stored). ``max_receive``: the most events
    one ``receive`` may ask for. ``secrets``: the :class:`~mindcore.policy.SecretPolicy` every
    payload string (keys too) goes through before it is stored: refuse by default,
    ``SecretPolicy(action="redact")`` to store placeholders instead.

    >>> InboxConfig(max_event_bytes=4096).max_event_bytes
    4096
    >>> InboxConfig(max_event_bytes=0)
    Traceback (most recent call last):
    ...
    mindcore.errors.InboxError: max_event_bytes: must be at least 64, got 0
    """

    max_event_bytes: int = 256 * 1024
    max_receive: int = 10_000
    secrets: SecretPolicy = field(default_factory=SecretPolicy)

    def __post_init__(self) -> None:
        check_int(self.max_event_bytes, "max_event_bytes", minimum=64, error=InboxError)
        check_int(self.max_receive, "max_receive", minimum=1, error=InboxError)
        if not isinstance(self.secrets, SecretPolicy):
            raise InvalidTypeError(f"secrets: expected a SecretPolicy, got {type(self.secrets).__name__}")


def encode_payload(payload: object, name: str, config: InboxConfig) -> str:
    """The payload as the compact JSON text stored, after every check an event passes: a dict with
    string keys and a non-empty string ``kind``, JSON values only (no NaN), storable text, within
    ``max_event_bytes``, screened for secrets."""
    if not isinstance(payload, Mapping):
        raise InboxError(f"{name}: expected a dict with a 'kind', got {describe(payload)}")
    kind = payload.get("kind")
    if not isinstance(kind, str) or not kind.strip():
        raise InboxError(f"{name}: 'kind' must be a non-empty string, got {kind!r}")
    _check_keys(payload, name)
    check_storable(payload, name, error=InboxError)
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InboxError(f"{name}: not JSON-serialisable: {e}") from None
    size = len(text.encode("utf-8"))
    if size > config.max_event_bytes:
        raise InboxError(
            f"{name}: the event is {size:,} bytes as JSON; the limit is {config.max_event_bytes:,} "
            "(InboxConfig.max_event_bytes): store large content elsewhere and push a reference"
        )
    screened = config.secrets.screen_value(payload, name)  # refuses, or gives the redacted value
    if config.secrets.action == "redact":
        text = json.dumps(screened, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text


_MAX_DEPTH = 64


def _check_keys(value: Any, name: str, depth: int = 0) -> None:
    # json.dumps turns the keys 1 and True into "1" and "true": a payload must read back as given.
    if depth > _MAX_DEPTH:
        raise InboxError(f"{name}: nested more than {_MAX_DEPTH} levels deep")
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InboxError(f"{name}: keys must be strings, got {describe(k)} {k!r}")
            _check_keys(v, f"{name}.{k}", depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_keys(v, f"{name}[{i}]", depth + 1)


def check_event_ids(ids: Iterable[str], name: str = "ids", valid: Callable[[str], bool] | None = None,
                    what: str = "") -> list[str]:
    """``ids`` as a list of distinct event ids, each checked before any is used (a single string or
    a dict is refused, not split). With ``valid``, an id it refuses (not an id this kind of inbox
    ever returns) is refused too; ``what`` describes the ids it accepts in the message."""
    if isinstance(ids, str | bytes | Mapping) or not isinstance(ids, Iterable):
        raise InboxError(f"{name}: expected a list of event ids, got {describe(ids)}")
    out = list(ids)
    for i, v in enumerate(out):
        if not isinstance(v, str) or not v or len(v) > 200:
            raise InboxError(f"{name}[{i}]: expected an event id (a non-empty string), got {describe(v)}")
        if valid is not None and not valid(v):
            raise InboxError(f"{name}[{i}]: {v[:80]!r} is not an event id of this inbox ({what}); nothing was done")
    return list(dict.fromkeys(out))


def error_text(error: object, config: InboxConfig) -> str | None:
    """``error`` (a string or ``None``) as it is stored beside an event: storable, at most
    :data:`MAX_ERROR_CHARS` characters, secrets redacted (an error message is diagnostics: it is
    never refused, which would lose the nack)."""
    if error is None:
        return None
    if not isinstance(error, str):
        raise InvalidTypeError(f"error: expected a string or None, got {describe(error)}")
    text = error.replace("\x00", "\\0").encode("utf-8", "replace").decode("utf-8")
    if len(text) > MAX_ERROR_CHARS:
        text = f"{text[:MAX_ERROR_CHARS - 40]} ... [cut: {len(text) - MAX_ERROR_CHARS + 40:,} more characters]"
    return dataclasses.replace(config.secrets, action="redact").screen(text, "error")


def ms_to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def lock_name(prefix: str, agent: str) -> str:
    """A store lock name for one agent (lock names allow fewer characters than agent names)."""
    return f"{prefix}-{hashlib.sha256(agent.encode()).hexdigest()[:32]}"


class BaseInbox(ABC):
    """What every inbox does (:class:`Inbox` on the store, ``RedisInbox`` on Redis Streams).

    The public methods check their arguments and that the inbox is open, then call the
    storage's own ``_push``, ``_receive``, ``_ack``, ``_nack``, ``_pending``, ``_dead_letters``,
    ``_requeue``, ``_discard`` and ``_close``. Every id given is checked against the shape of this
    inbox's ids (``_ID_SHAPE``) before anything is done, so a typo raises
    :class:`~mindcore.errors.InboxError` (an :class:`~mindcore.errors.InvalidInputError`) and no id
    of the call is applied.
    """

    agent: str
    visibility_timeout: float
    max_attempts: int
    config: InboxConfig
    _closed: bool = False
    _ID_SHAPE: re.Pattern[str]
    _ID_WHAT: str

    def _setup(self, agent: str, visibility_timeout: float, config: InboxConfig | None, max_attempts: int) -> None:
        self.agent = check_agent(agent)
        self.visibility_timeout = check_number(
            visibility_timeout, "visibility_timeout", minimum=0.001, maximum=86_400 * 365, error=InboxError
        )
        self.max_attempts = check_int(max_attempts, "max_attempts", minimum=1, maximum=1_000_000, error=InboxError)
        if config is not None and not isinstance(config, InboxConfig):
            raise InvalidTypeError(f"config: expected an InboxConfig, got {describe(config)}")
        self.config = config or InboxConfig()
        self.config.secrets.screen_identifier(self.agent, "agent")

    def _live(self) -> None:
        if self._closed:
            raise InboxError(f"the inbox of agent {self.agent!r} is closed")

    def _ids(self, ids: Iterable[str]) -> list[str]:
        return check_event_ids(ids, "ids", self._valid_id, self._ID_WHAT)

    def _valid_id(self, event_id: str) -> bool:
        """Whether ``event_id`` has the shape of this inbox's ids."""
        return self._ID_SHAPE.match(event_id) is not None

    # -- the interface ------------------------------------------------------------------------------

    def push(self, payload: Mapping[str, Any]) -> str:
        """Store one event (a dict with a string ``kind``); returns its id once it is stored.

        Refused, with nothing stored: a payload that is not a JSON object with a non-empty string
        ``kind``, one bigger than ``InboxConfig.max_event_bytes``, one whose text the secret
        policy refuses (:class:`~mindcore.errors.SecretRefusedError`).
        """
        if isinstance(payload, Mapping):
            return self.push_many([payload])[0]
        raise InboxError(f"payload: expected a dict with a 'kind', got {describe(payload)}")

    def push_many(self, payloads: Iterable[Mapping[str, Any]]) -> list[str]:
        """Store several events at once (all or none); their ids, in order."""
        if isinstance(payloads, Mapping | str | bytes) or not isinstance(payloads, Iterable):
            raise InboxError(f"payloads: expected a list of event dicts, got {describe(payloads)}")
        texts = [encode_payload(p, f"payloads[{i}]", self.config) for i, p in enumerate(payloads)]
        self._live()
        return self._push(texts) if texts else []

    def receive(self, max_events: int = 20) -> list[Event]:
        """Up to ``max_events`` events, oldest first, each leased to this inbox object for
        ``visibility_timeout`` seconds: no other consumer receives them until they are acked,
        nacked or the lease runs out (then they are delivered again). ``[]`` when none is
        available. An event whose lease ran out after its ``max_attempts``-th delivery is moved
        to the dead letters here instead of being delivered again."""
        n = check_int(max_events, "max_events", minimum=1, maximum=self.config.max_receive, error=InboxError)
        self._live()
        return self._receive(n)

    def ack(self, ids: Iterable[str]) -> None:
        """Remove these events for good, whichever consumer holds them, dead letters included
        (ids already acked or unknown are ignored, so acking twice is harmless). An id that is
        not shaped like this inbox's ids raises :class:`~mindcore.errors.InboxError` and none of
        the ids is acked."""
        want = self._ids(ids)
        self._live()
        if want:
            self._ack(want)

    def nack(self, ids: Iterable[str], error: str | None = None) -> None:
        """Release these events, received through this inbox object and still leased to it: they
        are delivered again at once, unless this was their ``max_attempts``-th delivery: then they
        move to the dead letters. ``error`` (say ``"ValueError: bad date"``) is kept with each of
        them and shown by :meth:`dead_letters` (cut to 2,000 characters, secrets redacted). Other
        ids (acked, unknown, or taken over by another consumer after this lease ran out) are
        ignored; a malformed id raises as :meth:`ack` does, and nothing is released."""
        want = self._ids(ids)
        text = error_text(error, self.config)
        self._live()
        if want:
            self._nack(want, text)

    def pending(self) -> int:
        """How many live events are not acked yet (leased ones included, dead letters not)."""
        self._live()
        return self._pending()

    def dead_letters(self, limit: int | None = None) -> list[DeadLetter]:
        """The events that were delivered ``max_attempts`` times without an ack, oldest pushed
        first (at most ``limit`` of them). They stay until :meth:`requeue`, :meth:`discard` or
        :meth:`ack` removes them."""
        if limit is not None:
            limit = check_int(limit, "limit", minimum=1, error=InboxError)
        self._live()
        return self._dead_letters(limit)

    def requeue(self, ids: Iterable[str]) -> dict[str, str]:
        """Put these dead letters back in the live queue with their attempts reset, each in one
        atomic step; returns ``{dead letter id: its id in the live queue}`` for those requeued
        (the same id on the store; a new one on Redis, where a stream only appends, so a requeued
        event comes after the events pushed before). Ids that are not dead letters are ignored."""
        want = self._ids(ids)
        self._live()
        return self._requeue(want) if want else {}

    def discard(self, ids: Iterable[str]) -> list[str]:
        """Delete these dead letters for good; returns the ids deleted (ids that are not dead
        letters are ignored: a live event is removed with :meth:`ack`)."""
        want = self._ids(ids)
        self._live()
        return self._discard(want) if want else []

    def close(self) -> None:
        """Release what this inbox holds open (the store it opened, the connection); idempotent.
        Events leased and not acked come back when their lease runs out."""
        if not self._closed:
            self._closed = True
            self._close()

    # -- what each storage provides -----------------------------------------------------------------

    @abstractmethod
    def _push(self, payloads: list[str]) -> list[str]:
        """Store these events (JSON texts, checked), all or none; their ids in order."""

    @abstractmethod
    def _receive(self, max_events: int) -> list[Event]: ...

    @abstractmethod
    def _ack(self, ids: list[str]) -> None: ...

    @abstractmethod
    def _nack(self, ids: list[str], error: str | None) -> None: ...

    @abstractmethod
    def _pending(self) -> int: ...

    @abstractmethod
    def _dead_letters(self, limit: int | None) -> list[DeadLetter]: ...

    @abstractmethod
    def _requeue(self, ids: list[str]) -> dict[str, str]: ...

    @abstractmethod
    def _discard(self, ids: list[str]) -> list[str]: ...

    @abstractmethod
    def _close(self) -> None: ...

    def __len__(self) -> int:
        return self.pending()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- async twins ----------------------------------------------------------------------------

    async def apush(self, payload: Mapping[str, Any]) -> str:
        """Async twin of :meth:`push`."""
        return await asyncio.to_thread(self.push, payload)

    async def apush_many(self, payloads: Iterable[Mapping[str, Any]]) -> list[str]:
        """Async twin of :meth:`push_many`."""
        return await asyncio.to_thread(self.push_many, list(payloads))

    async def areceive(self, max_events: int = 20) -> list[Event]:
        """Async twin of :meth:`receive`."""
        return await asyncio.to_thread(self.receive, max_events)

    async def aack(self, ids: Iterable[str]) -> None:
        """Async twin of :meth:`ack`."""
        await asyncio.to_thread(self.ack, _listed(ids))

    async def anack(self, ids: Iterable[str], error: str | None = None) -> None:
        """Async twin of :meth:`nack`."""
        await asyncio.to_thread(self.nack, _listed(ids), error)

    async def apending(self) -> int:
        """Async twin of :meth:`pending`."""
        return await asyncio.to_thread(self.pending)

    async def adead_letters(self, limit: int | None = None) -> list[DeadLetter]:
        """Async twin of :meth:`dead_letters`."""
        return await asyncio.to_thread(self.dead_letters, limit)

    async def arequeue(self, ids: Iterable[str]) -> dict[str, str]:
        """Async twin of :meth:`requeue`."""
        return await asyncio.to_thread(self.requeue, _listed(ids))

    async def adiscard(self, ids: Iterable[str]) -> list[str]:
        """Async twin of :meth:`discard`."""
        return await asyncio.to_thread(self.discard, _listed(ids))


def _listed(ids: Iterable[str]) -> Iterable[str]:
    # A generator is read here, in the caller's thread; anything the checks refuse is passed as is.
    return list(ids) if not isinstance(ids, str | bytes | Mapping) and isinstance(ids, Iterable) else ids


@dataclass(frozen=True, slots=True)
class InboxTotals:
    """How many events an agent's inbox holds: ``pending`` (pushed and neither acked nor dead, as
    :meth:`BaseInbox.pending` counts them) and ``dead_letters``."""

    pending: int
    dead_letters: int


def inbox_totals(store: StoreLike) -> dict[str, InboxTotals]:
    """Every agent's :class:`InboxTotals` in ``store``'s inboxes (:class:`Inbox`), by agent name,
    in one read; an agent whose inbox is empty is absent. Reading creates nothing: a store without
    inboxes gives ``{}``.

    >>> import mindcore
    >>> store = mindcore.open("memory://totals-doc")
    >>> _ = Inbox(store, agent="assistant").push({"kind": "plan", "text": "Daily report"})
    >>> inbox_totals(store)
    {'assistant': InboxTotals(pending=1, dead_letters=0)}
    """
    from mindcore.consciousness._inbox_repo import totals
    from mindcore.store import resolve_store

    resolved = resolve_store(store)
    try:
        return {agent: InboxTotals(live, dead) for agent, (live, dead) in totals(resolved).items()}
    finally:
        if resolved is not store:
            resolved.close()


class Inbox(BaseInbox):
    """An agent's durable inbox on the store: ``store`` (a :class:`~mindcore.store.Store`, a
    folder, ``memory://name`` or an object-storage URI) first, then the ``agent`` it belongs to.

    Events live in the store's ``consciousness_inbox`` table (one namespace per agent) until
    acked: a push returns once its event is committed, so it survives the pushing process, the
    consumer and a restart. Any number of processes (on object storage: machines) may push and
    receive at once; a lease is taken under the store lock of the agent's inbox, so no event is
    leased to two consumers at once. Leases run on the wall clock (clocks of machines sharing
    object storage must agree to well within ``visibility_timeout``).

    >>> import mindcore
    >>> inbox = Inbox(mindcore.open("memory://inbox-doc"), agent="assistant", visibility_timeout=30)
    >>> first = inbox.push({"kind": "space_message", "space": "Family", "sender": "Husam",
    ...                     "sender_type": "human", "text": "Hello!"})
    >>> _ = inbox.push({"kind": "plan", "text": "Daily report"})
    >>> events = inbox.receive(max_events=20)
    >>> [e.payload["kind"] for e in events], events[0].id == first, events[0].attempts
    (['space_message', 'plan'], True, 1)
    >>> inbox.receive()                      # both leased: nothing more for anyone
    []
    >>> inbox.nack([events[1].id])           # give one back: delivered again at once
    >>> [(e.payload["kind"], e.attempts) for e in inbox.receive()]
    [('plan', 2)]
    >>> inbox.ack([e.id for e in events]); len(inbox)
    0
    """

    _ID_SHAPE = re.compile(r"[0-9a-hjkmnp-tv-z]{26}\Z")
    _ID_WHAT = "26 lower-case letters and digits, as push returns them"

    def __init__(
        self,
        store: StoreLike,
        agent: str,
        visibility_timeout: float = 30.0,
        config: InboxConfig | None = None,
        max_attempts: int = 5,
    ) -> None:
        self._setup(agent, visibility_timeout, config, max_attempts)
        from mindcore.consciousness._inbox_repo import InboxRepo
        from mindcore.store import resolve_store

        self.store = resolve_store(store)
        self._owns_store = self.store is not store
        self._repo = InboxRepo(self.store, self.agent)

    def __repr__(self) -> str:
        return (f"Inbox(agent={self.agent!r}, visibility_timeout={self.visibility_timeout:g}, "
                f"max_attempts={self.max_attempts}, store={self.store.uri!r})")

    def _push(self, payloads: list[str]) -> list[str]:
        return self._repo.push(payloads)

    def _receive(self, max_events: int) -> list[Event]:
        return [
            Event(r.id, json.loads(r.payload), r.attempts, ms_to_datetime(r.pushed_ms))
            for r in self._repo.lease(max_events, int(self.visibility_timeout * 1000), self.max_attempts)
        ]

    def _ack(self, ids: list[str]) -> None:
        self._repo.ack(ids)

    def _nack(self, ids: list[str], error: str | None) -> None:
        self._repo.release(ids, self.max_attempts, error)

    def _pending(self) -> int:
        return self._repo.count()

    def _dead_letters(self, limit: int | None) -> list[DeadLetter]:
        return [
            DeadLetter(r["event"], json.loads(r["payload"]), int(r["attempts"] or 0), r["last_error"],
                       ms_to_datetime(int(r["dead_at"] or 0)), ms_to_datetime(int(r["created_at"])))
            for r in self._repo.dead(limit)
        ]

    def _requeue(self, ids: list[str]) -> dict[str, str]:
        return {i: i for i in self._repo.requeue(ids)}

    def _discard(self, ids: list[str]) -> list[str]:
        return self._repo.discard(ids)

    def _close(self) -> None:
        if self._owns_store:
            self.store.close()
