"""`Consciousness`: an agent's continuous history across think cycles, on the store."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from mindcore.consciousness._repo import HistoryRepo, Saved, with_system
from mindcore.consciousness.compact import Compactor, Strategy, compact, split_cycles
from mindcore.consciousness.config import ConsciousnessConfig, strategy_name
from mindcore.consciousness.inbox import BaseInbox, Event, check_agent
from mindcore.consciousness.messages import check_sequence, compact_json, is_cycle_start, normalize, screen
from mindcore.consciousness.render import event_line, inbox_message
from mindcore.consciousness.tokens import estimate_tokens, message_text
from mindcore.embed.base import Embedder, check_embedder
from mindcore.errors import ConsciousnessError, InboxError, InvalidTypeError
from mindcore.kernels import estimate_message_tokens
from mindcore.store import Store, StoreLike, resolve_store
from mindcore.validation import check_callable, check_int, check_text, describe

__all__ = ["Consciousness", "Cycle", "OnError"]

#: What ``Consciousness.cycle(on_error=...)`` takes: called with the exception a cycle raised and the
#: cycle's events, it returns the ids of the events to give back (nack: an attempt counted); the
#: cycle's other events are acknowledged.
OnError = Callable[[BaseException, Sequence[Event]], Iterable[str]]

log = logging.getLogger("mindcore.consciousness")

#: The longest line one event may take in the INBOX message; a longer one is cut, visibly.
MAX_EVENT_CHARS = 64_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Consciousness:
    """An agent's history across think cycles: model-native chat messages, kept on the store,
    compacted when over budget, fed by a durable inbox.

    ``store`` is a :class:`~mindcore.store.Store` or anything :func:`mindcore.open` takes; ``agent``
    names the agent (1-200 letters, digits and ``_ . : @ + -``). The options live in ``config``
    (:class:`~mindcore.consciousness.ConsciousnessConfig`); ``max_tokens=``,
    ``min_recent_cycles=`` and ``compaction=`` given as keywords override it. ``embedder`` serves
    the semantic strategy (default: the store's, else the bundled model, loaded when first
    needed). ``clock`` (unix ms) exists for tests.

    Each think cycle is a ``with c.cycle(...)`` block: it receives the inbox's events, and
    ``cycle.messages`` is the history with the system prompt refreshed and the INBOX message
    added; the model's replies go in with ``cycle.append``. Leaving the block saves the cycle (one
    commit of only the new messages, or one snapshot when the history had to be compacted) and then
    acknowledges the events; leaving it with an exception saves nothing and gives the events back
    (a nack: each counts as an attempt, and an event that failed the inbox's ``max_attempts``
    times moves to its dead letters, so one poisoned event never stalls the agent;
    ``on_error=`` gives back only the events that failed).
    An event delivered again after a crash between the save and the acknowledgement is
    recognised (the save records the event ids) and acknowledged without a second processing.

    One consciousness per agent writes at a time: a save finds out when another writer saved
    since it loaded, saves nothing and raises :class:`~mindcore.errors.ConsciousnessError`.

    >>> import mindcore
    >>> store = mindcore.open("memory://consciousness-doc")
    >>> inbox = mindcore.Inbox(store, agent="assistant")
    >>> _ = inbox.push({"kind": "space_message", "space": "Family", "sender": "Husam",
    ...                 "sender_type": "human", "text": "Hello!"})
    >>> c = Consciousness(store, agent="assistant", clock=lambda: 1_771_491_600_000)
    >>> with c.cycle(system_prompt="You are a helpful agent.", inbox=inbox) as cycle:
    ...     print(cycle.messages[-1]["content"])
    ...     cycle.append([{"role": "assistant", "content": "Greeted Husam."}])
    INBOX (1 event, now=2026-02-19T09:00:00.000Z):
    [Family] Husam (human): "Hello!"
    >>> c.cycle_count, [m["role"] for m in c.messages], len(inbox)
    (1, ['system', 'user', 'assistant'], 0)
    """

    def __init__(
        self,
        store: StoreLike,
        *,
        agent: str,
        max_tokens: int | None = None,
        min_recent_cycles: int | None = None,
        compaction: Strategy | Compactor | None = None,
        embedder: Embedder | None = None,
        config: ConsciousnessConfig | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        try:
            self.agent = check_agent(agent)
        except InboxError as exc:
            raise ConsciousnessError(str(exc)) from None
        if config is not None and not isinstance(config, ConsciousnessConfig):
            raise InvalidTypeError(f"config: expected a ConsciousnessConfig, got {describe(config)}")
        given: dict[str, Any] = {k: v for k, v in (("max_tokens", max_tokens), ("min_recent_cycles", min_recent_cycles),
                                   ("compaction", compaction)) if v is not None}
        self.config = dataclasses.replace(config or ConsciousnessConfig(), **given)
        self.config.secrets.screen_identifier(self.agent, "agent")
        if embedder is not None:
            check_embedder(embedder)
        if clock is not None:
            check_callable(clock, "clock")
        self._embedder = embedder
        self._clock = clock or _now_ms
        # Opened (and checked writable) last: a bad argument opens nothing.
        self._store = resolve_store(store)
        self._owns_store = self._store is not store
        self._repo = HistoryRepo(self._store, self.agent)

    def __repr__(self) -> str:
        return (f"Consciousness(agent={self.agent!r}, max_tokens={self.config.max_tokens:,}, "
                f"compaction={strategy_name(self.config.compaction)!r}, store={self._store.uri!r})")

    # -- reading --------------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The store this consciousness lives in."""
        return self._store

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The history as saved: the system prompt (after the first cycle), then every cycle's
        messages (a copy: changing it changes nothing stored)."""
        return _copies(self._repo.load().messages)

    @property
    def cycle_count(self) -> int:
        """How many cycles have been saved (0 for an agent with no history)."""
        return self._repo.load().cycle_count

    @property
    def token_estimate(self) -> int:
        """The seed's token estimate of the saved history."""
        return self._repo.load().tokens

    def count_tokens(self) -> int:
        """The saved history's exact o200k_base token count (GPT-4o and later), with OpenAI's
        framing of chat messages; see :func:`~mindcore.consciousness.estimate_tokens`."""
        return estimate_tokens(self._repo.load().messages, exact=True)

    def cycles(self) -> list[list[dict[str, Any]]]:
        """The saved history cut into cycles, oldest first, each beginning with its INBOX
        message (the system prompt and an earlier compaction's summaries are in none)."""
        history = self._repo.load().messages
        return [_copies(history[a:b]) for a, b in split_cycles(history).cycles]

    async def amessages(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(lambda: self.messages)

    async def acycles(self) -> list[list[dict[str, Any]]]:
        return await asyncio.to_thread(self.cycles)

    @property
    def embedder(self) -> Embedder:
        """The embedder of the semantic strategy: the one given, else the store's, else the
        bundled model."""
        if self._embedder is None:
            from mindcore.embed import default_embedder

            self._embedder = self._store.embedder or default_embedder()
        return self._embedder

    # -- cycles ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def cycle(self, system_prompt: str | None = None, inbox: BaseInbox | None = None,
              max_events: int = 20, *, on_error: OnError | None = None) -> Iterator[Cycle]:
        """One think cycle (see the class docstring). ``system_prompt`` replaces message 0 (or
        becomes it); ``None`` keeps the saved one. ``inbox`` gives up to ``max_events`` events;
        without one, or with none pending, the cycle is a timer wake (``INBOX (0 events, ...)``).

        When the block raises, nothing is saved and the exception propagates; by default every
        event of the cycle is nacked with the error (each counts as an attempt). ``on_error(exc,
        events)`` decides instead: it returns the ids of the events to nack (those that failed);
        the cycle's other events are acknowledged, as handled (their side effects are done; the
        cycle's messages are not saved). If ``on_error`` raises or returns an id that is not one
        of ``events``, every event is nacked and a note saying why is added to the exception.

        >>> import mindcore
        >>> store = mindcore.open("memory://cycle-on-error-doc")
        >>> inbox = mindcore.Inbox(store, agent="assistant", max_attempts=3)
        >>> _ = inbox.push_many([{"kind": "plan", "text": "fine"}, {"kind": "plan", "text": "poison"}])
        >>> c = Consciousness(store, agent="assistant")
        >>> class EventFailed(Exception):
        ...     def __init__(self, event_id: str) -> None:
        ...         super().__init__(f"event {event_id} failed")
        ...         self.event_id = event_id
        >>> def only_the_failed(exc, events):
        ...     return [exc.event_id] if isinstance(exc, EventFailed) else [e.id for e in events]
        >>> try:
        ...     with c.cycle(inbox=inbox, on_error=only_the_failed) as cycle:
        ...         for event in cycle.events:
        ...             if event.payload["text"] == "poison":
        ...                 raise EventFailed(event.id)
        ... except EventFailed:
        ...     pass
        >>> [e.payload["text"] for e in inbox.receive()]     # "fine" was acked
        ['poison']
        """
        if on_error is not None:
            check_callable(on_error, "on_error")
        cycle = Cycle._begin(self, system_prompt, inbox, max_events)
        try:
            yield cycle
        except BaseException as exc:
            cycle._abort(exc, on_error)
            raise
        cycle._finish()

    @contextlib.asynccontextmanager
    async def acycle(self, system_prompt: str | None = None, inbox: BaseInbox | None = None,
                     max_events: int = 20, *, on_error: OnError | None = None) -> AsyncIterator[Cycle]:
        """The async twin of :meth:`cycle` (the store and inbox calls run in a worker thread;
        ``on_error`` is called there too)."""
        if on_error is not None:
            check_callable(on_error, "on_error")
        cycle = await asyncio.to_thread(Cycle._begin, self, system_prompt, inbox, max_events)
        try:
            yield cycle
        except BaseException as exc:
            await asyncio.to_thread(cycle._abort, exc, on_error)
            raise
        await asyncio.to_thread(cycle._finish)

    def close(self) -> None:
        """Close the store if this consciousness opened it (it was given a path)."""
        if self._owns_store:
            self._store.close()

    def __enter__(self) -> Consciousness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- saving ---------------------------------------------------------------------------------

    def _save(self, base: Saved, system: str | None, history: list[dict[str, Any]], fresh: Sequence[dict[str, Any]],
              number: int, events: list[str]) -> Saved | None:
        """Save the cycle: its new messages, or a snapshot when the history is over budget (then
        returned, so the rows it replaced can be pruned once the events are acked)."""
        cfg = self.config
        at = int(self._clock())
        _, texts = with_system([], base.texts, system, base.system_prompt)
        if estimate_message_tokens(texts + [message_text(m) for m in fresh]) <= cfg.max_tokens:
            self._repo.save_cycle(base, system, fresh, number, events, at)
            return None
        n_cycles = len(split_cycles(history).cycles)
        embedder = self.embedder if cfg.compaction == "semantic" else None
        compacted = compact(history, cfg.max_tokens, cfg.compaction, cfg.min_recent_cycles, embedder=embedder,
                            top_k=cfg.top_k, layers=cfg.layers, first_cycle=max(1, number - n_cycles + 1))
        return self._repo.save_snapshot(base, compacted, number, events, at, cfg.remembered_events)


class Cycle:
    """One think cycle of a :class:`Consciousness`, made by :meth:`Consciousness.cycle`.

    ``messages`` is what the model sees (the history, the system prompt refreshed, the INBOX
    message, what was appended since); ``events`` are the inbox events it handles; ``number`` is
    its cycle number (1 for an agent's first).
    """

    def __init__(self, owner: Consciousness, base: Saved, system: str | None, head: list[dict[str, Any]],
                 inbox: BaseInbox | None, events: list[Event], number: int) -> None:
        self._owner = owner
        self._base = base
        self._system = system
        self._head = head  # the history with the system prompt refreshed, then the INBOX message
        self._inbox = inbox
        self.events = events
        self.number = number
        self._new: list[dict[str, Any]] = [head[-1]]
        self._done = False

    @classmethod
    def _begin(cls, owner: Consciousness, system_prompt: str | None, inbox: BaseInbox | None,
               max_events: int) -> Cycle:
        cfg = owner.config
        if system_prompt is not None:
            check_text(system_prompt, "system_prompt", max_chars=cfg.max_message_chars, allow_blank=True,
                       error=ConsciousnessError)
            system_prompt = cfg.secrets.screen(system_prompt, "system_prompt")
        if inbox is not None and not isinstance(inbox, BaseInbox):
            raise InvalidTypeError(f"inbox: expected an Inbox or RedisInbox, got {describe(inbox)}")
        check_int(max_events, "max_events", minimum=1, error=ConsciousnessError)
        base = owner._repo.load()
        events = inbox.receive(max_events) if inbox is not None else []
        try:
            seen = set(base.events)
            again = [e.id for e in events if e.id in seen]
            if again:  # saved before a crash kept them from being acked: done already
                assert inbox is not None
                inbox.ack(again)
                log.info("%s: %d event(s) delivered again were already saved; acknowledged", owner.agent, len(again))
            fresh = [e for e in events if e.id not in seen]
            now = datetime.fromtimestamp(int(owner._clock()) / 1000, tz=UTC)
            message = inbox_message([_cut(e.payload) for e in fresh], now)
            message["content"] = cfg.event_policy.screen(message["content"], "inbox message")
            history, _ = with_system(base.messages, [], system_prompt, base.system_prompt)
            return cls(owner, base, system_prompt, [*history, message], inbox, fresh, base.cycle_count + 1)
        except BaseException:
            if inbox is not None:
                inbox.nack([e.id for e in events if e.id not in set(base.events)])
            raise

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages to send the model now (copies: changing them changes nothing saved)."""
        return _copies(self._all())

    def _all(self) -> list[dict[str, Any]]:
        return [*self._head, *self._new[1:]]

    @property
    def inbox_message(self) -> dict[str, Any]:
        """The INBOX user message that begins this cycle."""
        return dict(self._head[-1])

    def append(self, messages: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> None:
        """Add the model's messages of this cycle (assistant and tool messages, OpenAI or
        content-part form; one message or a list). A malformed message (or one the secret
        policy refuses) raises and nothing of this call is added."""
        if self._done:
            raise ConsciousnessError("this cycle has ended; start a new one to append")
        given = [messages] if isinstance(messages, Mapping) else messages
        cfg = self._owner.config
        # Problems of one message name its place in what was given (messages[i]); problems of
        # order name its place in the cycle (cycle n message[i], the INBOX message being 0).
        rows = screen(normalize(given, max_chars=cfg.max_message_chars), cfg.secrets)
        for i, m in enumerate(rows):
            if m["role"] == "system":
                raise ConsciousnessError(f"messages[{i}]: the system prompt is set by cycle(system_prompt=...)")
            if is_cycle_start(m):
                raise ConsciousnessError(f"messages[{i}]: only the cycle itself writes an INBOX message")
        check_sequence([*self._new, *rows], where=f"cycle {self.number} message", complete=False)
        self._new += rows

    async def aappend(self, messages: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> None:
        await asyncio.to_thread(self.append, messages)

    def _finish(self) -> None:
        self._done = True
        ids = [e.id for e in self.events]
        try:
            check_sequence(self._new, where=f"cycle {self.number} message")
            snapshot = self._owner._save(self._base, self._system, self._all(), self._new, self.number, ids)
        except BaseException as exc:
            self._release(ids, _describe_error(exc))
            raise
        if self._inbox is not None and ids:
            self._inbox.ack(ids)
        if snapshot is not None:
            try:
                self._owner._repo.prune(snapshot)
            except Exception as exc:  # housekeeping: the snapshot is saved; the next one prunes
                log.warning("%s: pruning the rows before the snapshot failed: %s", self._owner.agent, exc)

    def _abort(self, exc: BaseException, on_error: OnError | None) -> None:
        """The cycle raised ``exc``: give its events back (the ones ``on_error`` names, acking
        the others)."""
        self._done = True
        ids = [e.id for e in self.events]
        if not ids or self._inbox is None:
            return
        failed = ids
        if on_error is not None:
            try:
                named = on_error(exc, list(self.events))
                if isinstance(named, str | bytes | Mapping) or not isinstance(named, Iterable):
                    raise ConsciousnessError(f"on_error must return a list of event ids, got {describe(named)}")
                chosen = list(named)
                strangers = [i for i in chosen if i not in ids]
                if strangers:
                    raise ConsciousnessError(f"on_error returned {strangers[0]!r}, which is not an event of this cycle")
                failed = [i for i in ids if i in chosen]
            except Exception as problem:
                exc.add_note(f"on_error failed ({type(problem).__name__}: {problem}): every event of the cycle "
                             "was given back")
                failed = ids
        handled = [i for i in ids if i not in failed]
        if handled:
            try:
                self._inbox.ack(handled)
            except Exception as problem:  # they come back when their lease runs out
                log.warning("%s: acknowledging %d handled event(s) failed: %s", self._owner.agent, len(handled), problem)
        self._release(failed, _describe_error(exc))

    def _release(self, ids: list[str], error: str | None = None) -> None:
        if self._inbox is not None and ids:
            try:
                self._inbox.nack(ids, error=error)
            except Exception as exc:  # their lease runs out instead
                log.warning("%s: giving %d event(s) back failed: %s", self._owner.agent, len(ids), exc)


def _describe_error(exc: BaseException) -> str:
    """``ValueError: bad date``: what a dead letter shows of the error that killed it."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _copies(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of history messages (their tool calls too), made without a generic deep copy."""
    out = []
    for m in messages:
        c = dict(m)
        calls = m.get("tool_calls")
        if calls is not None:
            c["tool_calls"] = [{**call, "function": dict(call["function"])} for call in calls]
        out.append(c)
    return out


def _cut(payload: dict[str, Any]) -> dict[str, Any]:
    """An event whose line would be longer than :data:`MAX_EVENT_CHARS` with its text cut,
    saying how much was left out."""
    line = event_line(payload)
    if len(line) <= MAX_EVENT_CHARS:
        return payload
    text = payload.get("text")
    body = text if isinstance(text, str) else compact_json(payload)
    keep = MAX_EVENT_CHARS - 200
    return {**payload, "text": f"{body[:keep]} ... [cut: {len(body) - keep:,} more characters]"}
