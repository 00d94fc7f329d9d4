"""Append-only chat message logs: contiguous ``seq`` per log, paging, atomic appends.

Context sessions and an agent's consciousness both keep chat histories; this is the one
component that stores them, so neither capability writes its own. A :class:`MessageLog` is one
table of the store (the capability names it); each log is one namespace of that table, so a log's
rows are found through the namespace index and held in memory by the store's namespace cache
(patched, not reloaded, after this process appends).

``seq`` starts at 1 and has no gaps within a log, also when several processes append at once: an
append reads the log's last ``seq`` and writes its successors under the table's write lock
(``flock`` locally, a lease on object storage). :meth:`MessageLog.append` also takes a function
that decides *what* to append from the log as it stands under that lock (a deduplicating append
cannot then race another writer).

>>> import mindcore
>>> log = MessageLog(mindcore.open("memory://messages-doc"), "chat_messages")
>>> log.append("chat-1", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
(1, 2)
>>> log.append("chat-1", [{"role": "user", "content": "how are you?"}])
(3, 3)
>>> page = log.page("chat-1", limit=2)
>>> [m["seq"] for m in page.messages], page.has_more, page.max_seq
([2, 3], True, 3)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from mindcore.errors import InvalidInputError
from mindcore.store.filters import col
from mindcore.validation import check_int

if TYPE_CHECKING:
    from mindcore.store.cache import CacheEntry
    from mindcore.store.store import Store
    from mindcore.store.table import Table

__all__ = ["COLUMNS", "LogPage", "LogView", "MessageLog"]

#: The columns a message log adds to the standard ones (``created_at`` is the append time).
COLUMNS: dict[str, pa.DataType] = {
    "seq": pa.int64(),
    "role": pa.string(),
    "content": pa.string(),
    "tool_call_id": pa.string(),
    "tool_calls": pa.string(),  # JSON text
}
_READ = ["id", "seq", "role", "content", "tool_call_id", "tool_calls", "created_at"]


@dataclass(frozen=True)
class LogPage:
    """One page of a log: ``messages`` in ascending ``seq``; ``has_more`` says whether messages
    lie beyond the page (older ones for a page of the latest, later ones after a cursor);
    ``max_seq`` is the log's last ``seq`` (0 for an empty log)."""

    messages: list[dict[str, Any]]
    has_more: bool
    max_seq: int


@dataclass
class LogView:
    """A log at one table version: its rows in ascending ``seq`` (read-only; shared).

    ``seq`` is the int64 array of sequence numbers; :meth:`column` gives a column in ``seq``
    order, :meth:`messages` materialises rows by rank (0 is the oldest), :meth:`per_row` keeps
    what a capability computes per message. After this process appends, the new view reuses the
    old one's columns and per-row values for the rows they share.
    """

    entry: CacheEntry
    order: np.ndarray | None  # positions of the entry's rows in ascending seq; None: already so
    seq: np.ndarray
    #: The view this one extends (its rows are this view's first ``len(previous)`` rows), if any.
    previous: LogView | None = None
    _columns: dict[str, list[Any]] = field(default_factory=dict)
    _per_row: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.seq.shape[0])

    @property
    def serial(self) -> int:
        """Identifies the rows of this view: equal serials, equal rows."""
        return self.entry.serial

    @property
    def max_seq(self) -> int:
        return int(self.seq[-1]) if len(self.seq) else 0

    def column(self, name: str) -> list[Any]:
        """Column ``name`` in ``seq`` order (cached; never mutate it)."""
        got = self._columns.get(name)
        if got is None:
            prev = self.previous
            shared = prev._columns.get(name) if prev is not None else None
            start = len(shared) if shared is not None else 0
            values = self.entry.scalars.column(name)
            if self.order is not None:
                values = values.take(pa.array(self.order, type=pa.int64()))
            tail = values.slice(start).to_pylist()
            got = tail if shared is None else shared + tail
            self._columns[name] = got
        return got

    def per_row(self, key: str, compute: Callable[[int, int], np.ndarray]) -> np.ndarray:
        """Values a capability computes per message (token counts, ...), cached under ``key``:
        ``compute(lo, hi)`` gives those of ranks ``lo`` to ``hi``; only new rows are computed
        when this view extends one that has them."""
        got = self._per_row.get(key)
        if got is None:
            prev = self.previous
            shared = prev._per_row.get(key) if prev is not None else None
            if shared is None:
                got = np.asarray(compute(0, len(self)))
            else:
                got = np.concatenate([shared, np.asarray(compute(len(shared), len(self)), dtype=shared.dtype)])
            self._per_row[key] = got
        return got

    def messages(self, ranks: Sequence[int] | np.ndarray) -> list[dict[str, Any]]:
        """The rows at these ranks (0 = oldest) as dicts: ``id``, ``seq``, ``role``, ``content``,
        ``tool_call_id``, ``tool_calls`` (decoded JSON, or ``None``) and ``created_at``."""
        idx = np.asarray(ranks, dtype=np.int64)
        if self.order is not None:
            idx = self.order[idx]
        rows: list[dict[str, Any]] = self.entry.scalars.select(_READ).take(pa.array(idx, type=pa.int64())).to_pylist()
        for row in rows:
            raw = row["tool_calls"]
            row["tool_calls"] = None if raw is None else json.loads(raw)
        return rows


class MessageLog:
    """Append-only chat logs kept in table ``table`` of ``store``; ``log`` names one log (any
    non-empty string: it is the log's namespace).

    A message is a dict with ``role`` and ``content`` (str) and optionally ``tool_call_id`` (str)
    and ``tool_calls`` (any JSON value); other keys are not stored. Checking what a capability
    accepts (roles, sizes, secrets) is the capability's job; the log checks only types.
    """

    def __init__(self, store: Store, table: str) -> None:
        self._store = store
        self._table_name = table
        self._table: Table | None = None
        self._views: dict[str, LogView] = {}

    @property
    def table(self) -> Table:
        if self._table is None:  # opened on first use: building a log does no I/O
            self._table = self._store.table(self._table_name, COLUMNS)
        return self._table

    # -- reading --------------------------------------------------------------------------------

    def view(self, log: str) -> LogView:
        """The log as it is now (one version probe; a scan only when it moved)."""
        entry = self.table.cached(log)
        seen = self._views.get(log)
        if seen is not None and seen.entry.serial == entry.serial:
            return seen
        seq = entry.int64("seq") if entry.n else np.empty(0, dtype=np.int64)
        order = None
        if seq.shape[0] > 1 and not bool(np.all(seq[1:] > seq[:-1])):
            order = np.argsort(seq, kind="stable").astype(np.int64)
            seq = seq[order]
        view = LogView(entry, order, seq, previous=_extended(seen, entry, order))
        self._views[log] = view
        return view

    def max_seq(self, log: str) -> int:
        """The log's last ``seq`` (0 when it is empty)."""
        return self.view(log).max_seq

    def page(
        self, log: str, *, limit: int = 50, after_seq: int | None = None, around_seq: int | None = None
    ) -> LogPage:
        """A page of at most ``limit`` messages, in ascending ``seq``.

        No cursor: the latest ``limit`` messages (``has_more``: older ones exist). ``after_seq=a``:
        the first ``limit`` with ``seq > a``. ``around_seq=s``: the first ``limit`` from
        ``seq >= max(1, s - limit // 2)``. With a cursor ``has_more`` says whether later messages
        exist. ``limit=0`` gives no messages; both cursors at once is an error.
        """
        limit = check_int(limit, "limit", minimum=0)
        if after_seq is not None and around_seq is not None:
            raise InvalidInputError("cannot specify both after_seq and around_seq")
        if after_seq is not None:
            after_seq = check_int(after_seq, "after_seq")
        if around_seq is not None:
            around_seq = check_int(around_seq, "around_seq")
        view = self.view(log)
        if limit == 0:
            return LogPage([], False, view.max_seq)
        n = len(view)
        if after_seq is None and around_seq is None:
            start, stop = max(0, n - limit), n
            has_more = start > 0
        else:
            first = after_seq + 1 if after_seq is not None else max(1, around_seq - limit // 2)  # type: ignore[operator]
            start = int(np.searchsorted(view.seq, first, side="left"))
            stop = min(n, start + limit)
            has_more = stop < n
        return LogPage(view.messages(np.arange(start, stop)), has_more, view.max_seq)

    # -- writing --------------------------------------------------------------------------------

    def append(
        self,
        log: str,
        messages: Sequence[Mapping[str, Any]] | Callable[[LogView], Sequence[Mapping[str, Any]]],
    ) -> tuple[int, int]:
        """Append ``messages`` as the log's next ``seq`` numbers, in one commit; return
        ``(first_seq, last_seq)`` (``(n + 1, n)`` when nothing was appended to a log of ``n``).

        ``messages`` may be a function of the log's current :class:`LogView`, called under the
        table's write lock: what it returns is appended with no other append in between.
        """
        out: list[tuple[int, int]] = []

        def successors() -> list[dict[str, Any]]:
            view = self.view(log)
            given = messages(view) if callable(messages) else messages
            rows = [_row(m, i) for i, m in enumerate(given)]
            first = view.max_seq + 1
            for offset, row in enumerate(rows):
                row["seq"] = first + offset
            out.append((first, first + len(rows) - 1))
            return rows

        self.table.append(log, successors)
        return out[0]

    def prune(self, log: str, before_seq: int) -> int:
        """Delete the messages of ``log`` with ``seq < before_seq`` (a log that keeps snapshots
        drops what the latest one replaced); the others keep their ``seq``. Returns how many went."""
        before_seq = check_int(before_seq, "before_seq")
        result = self.table.delete(log, where=col("seq").lt(before_seq))
        self._views.pop(log, None)
        return result.deleted

    def clear(self, log: str) -> None:
        """Delete every message of ``log``."""
        self.table.clear(log)
        self._views.pop(log, None)


def _extended(seen: LogView | None, entry: CacheEntry, order: np.ndarray | None) -> LogView | None:
    """``seen`` when ``entry`` is its rows plus rows appended by this process (so a new view can
    reuse what was computed for them), else ``None``."""
    if seen is None or order is not None or seen.order is not None:
        return None
    changes = entry.changes_since(seen.entry.serial)
    if changes is None or changes[0].shape[0] or changes[1] != len(seen):
        return None
    seen.previous = None  # keep one view back at most, never a chain of them
    return seen


def _row(message: Mapping[str, Any], i: int) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise InvalidInputError(f"messages[{i}]: expected a dict, got {type(message).__name__}")
    role, content = message.get("role"), message.get("content")
    if not isinstance(role, str) or not isinstance(content, str):
        raise InvalidInputError(f"messages[{i}]: 'role' and 'content' must be strings")
    call_id = message.get("tool_call_id")
    if call_id is not None and not isinstance(call_id, str):
        raise InvalidInputError(f"messages[{i}]: 'tool_call_id' must be a string")
    calls = message.get("tool_calls")
    return {
        "role": role,
        "content": content,
        "tool_call_id": call_id,
        "tool_calls": None if calls is None else json.dumps(calls, ensure_ascii=False, separators=(",", ":")),
    }
