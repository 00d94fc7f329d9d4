"""What :meth:`Session.update_conversation` stores, as a pure function of two message lists.

A client sends the whole conversation as it sees it, again and again; it may retry an old
request late, send from several threads at once, or trim what it sends to its system prompt and
the latest turns. :func:`plan_update` compares that view with the stored history (message
equality: :class:`~mindcore.store.messages.MessageKey`) and decides:

1. the view is matched against the history in order, run by run: its longest prefix found as a
   contiguous run of the history, then the longest prefix of the rest found as a run after that
   one, and so on. Matched messages are stored already; from the first message not found on,
   the view is new and appended. A view that is a run of the history (a prefix, an older view
   retried late, a middle run) so stores nothing, nor does a request repeated after another
   writer appended in between;
2. unless the whole view is matched, a view that lines up with the history from the first message,
   with the same shapes (roles, tool call fields), and differs only in the content of some
   messages is an edit: those messages get a new version, and what follows the history in the
   view is appended. At least one message must be unchanged, and when the view ends within the
   history its last message too: a client that sends its system prompt and a new question alone
   sends a new turn, not an edit.

>>> def m(*texts: str) -> list[tuple[str, str]]:  # (role, content)
...     return [("user", t) for t in texts]
>>> role = lambda message: message[0]
>>> plan_update(m("a", "b", "c"), m("a", "b"), role)  # an older view
Plan(edits=(), append_from=2)
>>> plan_update(m("a", "b", "c"), m("b", "c", "d"), role)  # a continuation: d is new
Plan(edits=(), append_from=2)
>>> plan_update(m("a", "b", "c", "d"), m("a", "c", "e"), role)  # a trimmed view: e is new
Plan(edits=(), append_from=2)
>>> plan_update(m("a", "b", "c"), m("a", "B", "c", "d"), role)  # b edited, d new
Plan(edits=(1,), append_from=3)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple, TypeVar

__all__ = ["Plan", "plan_update"]

K = TypeVar("K", bound=Hashable)


class Plan(NamedTuple):
    """``edits``: the positions (0-based, in both lists) whose stored message gets the view's
    version; ``append_from``: the view's messages from this index on are appended."""

    edits: tuple[int, ...]
    append_from: int


def plan_update(stored: Sequence[K], given: Sequence[K], shape: Callable[[K], Hashable]) -> Plan:
    """What to store of ``given`` (the conversation as a client sees it) after ``stored``.

    Messages are compared by equality; ``shape(message)`` is what an edit keeps (role, tool call
    fields), the rest (content) is what it changes."""
    n, m = len(stored), len(given)
    k = _matched(stored, given)
    if k == m:
        return Plan((), m)
    shared = min(n, m)
    if all(shape(stored[i]) == shape(given[i]) for i in range(shared)):
        edits = tuple(i for i in range(shared) if stored[i] != given[i])
        anchored = 0 < len(edits) < shared and (m > n or edits[-1] != shared - 1)
        if anchored:
            return Plan(edits, shared)
    return Plan((), k)


def _matched(stored: Sequence[K], given: Sequence[K]) -> int:
    """How many messages from the start of ``given`` are found in ``stored``, run by run in order."""
    i = pos = 0
    while i < len(given):
        length, at = _longest_run(stored, given, i, pos)
        if not length:
            break
        i, pos = i + length, at + length
    return i


def _longest_run(stored: Sequence[K], given: Sequence[K], i: int, pos: int) -> tuple[int, int]:
    """The longest prefix of ``given[i:]`` found as a run of ``stored`` starting at ``pos`` or
    later: ``(length, start)`` (the earliest start of that length; ``(0, pos)`` when none)."""
    n, m = len(stored), len(given)
    first, best, start = given[i], 0, pos
    for j in range(pos, n):
        if stored[j] != first:
            continue
        length = 1
        while i + length < m and j + length < n and stored[j + length] == given[i + length]:
            length += 1
        if length > best:
            best, start = length, j
            if i + best == m:
                break
    return best, start
