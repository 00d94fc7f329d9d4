"""What a scope's history says about its memories, as pure functions of its events (the rows of
``ltm_history``, oldest first) and of which memory ids are live in ``ltm_memories``.

A memory is *retired* when its last event that changed whether it is live is ``updated``,
``superseded`` or ``evicted`` (it left ``ltm_memories``, whole, for history), live again after a
``restored`` event, and gone for good after ``forgotten``. :func:`retired_versions` lists the
retired memories, :func:`earlier_versions` the versions a memory replaced.

A write commits its history events first and its memories second (see
:mod:`mindcore.ltm.pipeline`); a process killed between the two commits leaves events of a write
that never landed: a retirement of a memory that is still live, a restore of one that is not.
:func:`void_events` finds them, with every other event of the same write (the events of one
write share an id prefix, see ``_repo.HistoryRepo.append``). Readers drop them
(:func:`valid_events`); the next write, restore or forget of the scope deletes them under the
scope's lock, where no other writer can be between its two commits.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from mindcore.ltm.types import MemoryVersion

__all__ = [
    "LINKING",
    "RETIRED",
    "STATE_ACTIONS",
    "Event",
    "batch_of",
    "earlier_versions",
    "last_states",
    "restorable",
    "retired_versions",
    "state_ids",
    "valid_events",
    "version",
    "void_events",
]

#: One row of ``ltm_history``, as ``Table.scan`` returns it.
Event = Mapping[str, Any]

#: Actions after which the memory is no longer in ``ltm_memories`` but whole in history.
RETIRED = ("updated", "superseded", "evicted")
#: Actions that link a version to the successor that replaced it.
LINKING = ("updated", "superseded", "forgotten")
#: Actions that change whether a memory is live.
STATE_ACTIONS = (*RETIRED, "forgotten", "restored")


def batch_of(event_id: str) -> str:
    """The write an event belongs to: the events of one commit share the id before the last ``-``.

    >>> batch_of("01m8fkmwrx39n2qewstfnpf814-000002")
    '01m8fkmwrx39n2qewstfnpf814'
    """
    return event_id.rsplit("-", 1)[0]


def last_states(events: Sequence[Event]) -> dict[str, Event]:
    """Each memory's last event that changed whether it is live (see :data:`STATE_ACTIONS`)."""
    return {str(e["memory_id"]): e for e in events if e["action"] in STATE_ACTIONS}


def state_ids(events: Sequence[Event]) -> list[str]:
    """The memories whose liveness the history speaks of: the ids to check against
    ``ltm_memories`` before calling :func:`void_events` or :func:`retired_versions`."""
    return sorted(last_states(events))


def void_events(events: Sequence[Event], live: Collection[str]) -> list[str]:
    """Ids of the events of writes that never landed: every event of a write that retired a
    memory still live (and not restored since), or restored one that is not live.

    >>> events = [{"id": "a-000000", "memory_id": "m1", "action": "superseded"},
    ...           {"id": "a-000001", "memory_id": "m2", "action": "duplicate"}]
    >>> void_events(events, live={"m1", "m2"}), void_events(events, live={"m2"})
    (['a-000000', 'a-000001'], [])
    """
    void: set[str] = set()
    for memory_id, e in last_states(events).items():
        if (e["action"] in RETIRED and memory_id in live) or (e["action"] == "restored" and memory_id not in live):
            void.add(batch_of(str(e["id"])))
    return [str(e["id"]) for e in events if batch_of(str(e["id"])) in void] if void else []


def valid_events(events: Sequence[Event], live: Collection[str]) -> list[Event]:
    """``events`` without the :func:`void_events`."""
    void = set(void_events(events, live))
    return [e for e in events if str(e["id"]) not in void] if void else list(events)


def version(e: Event) -> MemoryVersion:
    """The :class:`MemoryVersion` an event records."""
    return MemoryVersion(str(e["memory_id"]), str(e["text"] or ""), str(e["kind"] or ""), e["action"],
                         int(e["created_at"] or 0), reason=e["reason"], successor_id=e["successor_id"] or None)


def restorable(events: Sequence[Event], memory_id: str) -> Event | None:
    """The event that retired ``memory_id`` (it holds the memory whole), if it is retired now."""
    e = last_states(events).get(memory_id)
    return e if e is not None and e["action"] in RETIRED else None


def retired_versions(events: Sequence[Event], live: Collection[str]) -> list[MemoryVersion]:
    """The memories retired now, newest retirement first: each as its retiring event records it
    (``action``, ``reason``, ``successor_id``). ``live``: which of :func:`state_ids` are live."""
    valid = valid_events(events, live)
    found = [e for memory_id, e in last_states(valid).items() if e["action"] in RETIRED and memory_id not in live]
    found.sort(key=lambda e: (int(e["created_at"] or 0), str(e["id"])), reverse=True)
    return [version(e) for e in found]


def earlier_versions(events: Sequence[Event], memory_id: str) -> list[str]:
    """``memory_id`` and every version it replaced, transitively. A version restored since it
    was replaced is live on its own again: it is not an earlier version any more."""
    links: dict[str, list[str]] = {}  # version -> successors it is linked to
    for e in events:
        mid = str(e["memory_id"])
        if e["action"] == "restored":
            links.pop(mid, None)
        elif e["action"] in LINKING and e["successor_id"]:
            links.setdefault(mid, []).append(str(e["successor_id"]))
    predecessors: dict[str, list[str]] = {}
    for mid, successors in links.items():
        for successor in successors:
            predecessors.setdefault(successor, []).append(mid)
    chain, todo = [], [memory_id]
    while todo:
        current = todo.pop()
        if current not in chain:
            chain.append(current)
            todo += predecessors.get(current, [])
    return chain
