"""Append-only chat message logs: contiguous ``seq`` per log, paging, atomic appends.

Context sessions and an agent's consciousness both keep chat histories; this is the one
component that stores them, so neither capability writes its own. A :class:`MessageLog` is one
table of the store (the capability names it); each log is one namespace of that table, so a log's
rows are found through the namespace index and held in memory by the store's namespace cache
(patched, not reloaded, after this process appends).

``seq`` starts at 1 and has no gaps within a log, also when several processes append at once:
every write to a log reads it and commits under the log's own lock (``Store.lock``: ``flock``
locally, a lease on object storage; one lock file per log, so logs never wait on each other).
:meth:`MessageLog.append` and :meth:`MessageLog.write` also take a function that decides *what*
to write from the log as it stands under that lock (a deduplicating append cannot then race
another writer).

Plain appends (messages given, no edits) made at the same time by threads of one process share
one commit, also across logs (group commit): one committer at a time takes every queued append
(one per log; a second to the same log waits for the next commit), holds the locks of all their
logs (taken in name order, so two committers never deadlock), reads the table once, numbers each
log's messages on from its last ``seq`` and commits once. Each caller returns once its own
messages are stored; if that commit fails, every append in it fails and none is stored.

A log keeps the :class:`LogView` it last read (with what capabilities computed per message) for
at most ``max_views`` logs whose stored rows take at most ``max_view_bytes`` together (a view
keeps its rows in memory, also once the store's cache let them go), the least recently used
going first; an evicted log is read again through the store's namespace cache.

A stored message can get a new version (:attr:`LogChange.edits`): the row keeps its ``id``,
``seq`` and ``created_at`` and shows the new version; the version it replaced stays as a row of
the same ``seq`` with ``replaced_at`` set, which only :meth:`MessageLog.versions` reads. Message
equality is :func:`message_key`.

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

import contextlib
import hashlib
import json
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa

from mindcore.errors import InvalidInputError
from mindcore.store.cache import CacheEntry
from mindcore.store.filters import col
from mindcore.store.ids import new_id, new_id_array
from mindcore.store.schema import now_ms
from mindcore.validation import check_int

if TYPE_CHECKING:
    from mindcore.store.locks import Lock
    from mindcore.store.store import Store
    from mindcore.store.table import Table

__all__ = [
    "COLUMNS", "LogChange", "LogPage", "LogView", "LogWindow", "LogWrite", "MessageKey", "MessageLog", "message_key",
]

#: The columns a message log adds to the standard ones (``created_at`` is the append time,
#: ``updated_at`` the time of the latest edit).
COLUMNS: dict[str, pa.DataType] = {
    "seq": pa.int64(),
    "role": pa.string(),
    "content": pa.string(),
    "tool_call_id": pa.string(),
    "tool_calls": pa.string(),  # JSON text
    "replaced_at": pa.int64(),  # unix ms an edit replaced this version; null for current messages
}
_READ = ["id", "seq", "role", "content", "tool_call_id", "tool_calls", "created_at"]
# The columns a message writes (``metadata``: the standard column, JSON text of what the caller
# keeps with the message), and their types.
_WRITTEN = ("role", "content", "tool_call_id", "tool_calls", "metadata")
_TYPES: dict[str, pa.DataType] = {**COLUMNS, "metadata": pa.string()}
_VERSION_READ = [*_READ, "updated_at", "replaced_at"]
_CALLS = _READ.index("tool_calls")


class MessageKey(NamedTuple):
    """What makes two messages the same message: ``role``, ``tool_call_id``, ``tool_calls`` (as
    JSON text with sorted keys, so key order does not count) and ``content``. The first three are
    the message's *shape*: an edit changes the content of a message of the same shape."""

    role: str
    tool_call_id: str | None
    tool_calls: str | None
    content: str

    @property
    def shape(self) -> tuple[str, str | None, str | None]:
        return self.role, self.tool_call_id, self.tool_calls


def message_key(message: Mapping[str, Any]) -> MessageKey:
    """The :class:`MessageKey` of a message as the log stores it (``tool_calls`` any JSON value or
    JSON text); keys the log does not store (``name``, ...) do not count.

    >>> message_key({"role": "user", "content": "hi", "name": "ann"}) == message_key({"role": "user", "content": "hi"})
    True
    """
    calls = message.get("tool_calls")
    if isinstance(calls, str):
        calls = json.loads(calls)
    text = None if calls is None else json.dumps(calls, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return MessageKey(message["role"], message.get("tool_call_id"), text, message["content"])


@dataclass(frozen=True)
class LogChange:
    """What one write does to a log: ``edits`` gives stored messages a new version (``seq`` ->
    the message as it now reads), ``append`` adds messages after the last one."""

    append: Sequence[Mapping[str, Any]] = ()
    edits: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class LogWrite:
    """What a write did: appended ``first_seq`` to ``last_seq`` (``(n + 1, n)`` when nothing was
    appended to a log of ``n``) and gave the messages ``edited`` (their ``seq``) a new version."""

    first_seq: int
    last_seq: int
    edited: tuple[int, ...] = ()

    @property
    def appended(self) -> int:
        return self.last_seq - self.first_seq + 1


@dataclass(frozen=True)
class LogPage:
    """One page of a log: ``messages`` in ascending ``seq``; ``has_more`` says whether messages
    lie beyond the page (older ones for a page of the latest, later ones after a cursor);
    ``max_seq`` is the log's last ``seq`` (0 for an empty log)."""

    messages: list[dict[str, Any]]
    has_more: bool
    max_seq: int


@dataclass(frozen=True)
class LogWindow:
    """Where a page lies in a log: ranks ``start`` to ``stop`` (exclusive) of ``view``, and
    whether messages lie beyond them (``has_more``, as :class:`LogPage` says)."""

    view: LogView
    start: int
    stop: int
    has_more: bool

    @property
    def ranks(self) -> range:
        return range(self.start, self.stop)


@dataclass
class LogView:
    """A log at one table version: its rows in ascending ``seq`` (read-only; shared).

    ``seq`` is the int64 array of sequence numbers; :meth:`column` gives a column in ``seq``
    order, :meth:`keys` the messages' :class:`MessageKey`, :meth:`messages` materialises rows by
    rank (0 is the oldest), :meth:`per_row` keeps what a capability computes per message. Only
    current versions are in a view. After this process appends, the new view reuses the old one's
    columns and per-row values for the rows they share.
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

    def keys(self) -> list[MessageKey]:
        """Every message's :class:`MessageKey`, in ``seq`` order (cached; never mutate it)."""
        got: list[Any] | None = self._columns.get(_KEYS)
        if got is None:
            prev = self.previous
            shared = prev._columns.get(_KEYS) if prev is not None else None
            start = len(shared) if shared is not None else 0
            columns = [self.column(name)[start:] for name in ("role", "tool_call_id", "tool_calls", "content")]
            tail = [_key(*values) for values in zip(*columns, strict=True)]
            got = tail if shared is None else shared + tail
            self._columns[_KEYS] = got
        return got

    def per_row(self, key: str, compute: Callable[[int, int], np.ndarray]) -> np.ndarray:
        """Values a capability computes per message (token counts, ...), cached under ``key``:
        ``compute(lo, hi)`` gives those of ranks ``lo`` to ``hi`` (an object array for one
        Python value per row); only new rows are computed when this view extends one that has
        them."""
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
        return [dict(zip(_READ, values, strict=True)) for values in self.records(ranks)]

    def records(self, ranks: Sequence[int] | np.ndarray) -> list[tuple[Any, ...]]:
        """:meth:`messages` as tuples of the values in that order (no dict per row: for callers
        that build their own objects)."""
        idx = np.asarray(ranks, dtype=np.int64)
        n, lo = idx.shape[0], _run_start(idx)
        if n * _FROM_COLUMNS >= len(self) or all(name in self._columns for name in _READ):
            # Most of the log (or columns read before): from the cached columns, which later
            # reads of this view (and of the views extending it) reuse.
            every = [self.column(name) for name in _READ]
            if lo is not None:
                columns = [c[lo:lo + n] for c in every]
            else:
                at = idx.tolist()
                columns = [[c[i] for i in at] for c in every]
        else:
            rows = self.entry.scalars.select(_READ)
            if lo is not None and self.order is None:  # a page: a run of rows as stored
                picked = rows.slice(lo, n)
            else:
                picked = rows.take(pa.array(idx if self.order is None else self.order[idx], type=pa.int64()))
            columns = [c.to_pylist() for c in picked.columns]
        calls = columns[_CALLS]
        if calls.count(None) != len(calls):  # some message makes tool calls
            columns[_CALLS] = [None if raw is None else json.loads(raw) for raw in calls]
        return list(zip(*columns, strict=True))


@dataclass(slots=True, eq=False)
class _Append:
    """One plain append waiting for the group commit that stores it."""

    log: str
    rows: pa.Table  # the messages' columns, without seq
    result: LogWrite | None = None
    error: BaseException | None = None
    done: bool = False


class MessageLog:
    """Append-only chat logs kept in table ``table`` of ``store``; ``log`` names one log (any
    non-empty string: it is the log's namespace).

    A message is a dict with ``role`` and ``content`` (str) and optionally ``tool_call_id`` (str),
    ``tool_calls`` and ``metadata`` (any JSON values: ``metadata`` is what the caller keeps with the
    message, read back through :meth:`LogView.column`); other keys are not stored. Checking what a capability
    accepts (roles, sizes, secrets) is the capability's job; the log checks only types.
    """

    #: Appends one group commit takes at most (bounds the locks it holds and the rows it writes).
    MAX_GROUP = 256

    def __init__(self, store: Store, table: str, *, max_views: int = 1024, max_view_bytes: int = 256 << 20) -> None:
        self._store = store
        self._table_name = table
        self._table: Table | None = None
        self.max_views = check_int(max_views, "max_views", minimum=1)
        self.max_view_bytes = check_int(max_view_bytes, "max_view_bytes", minimum=0)
        self._views: OrderedDict[str, LogView] = OrderedDict()  # least recently used first
        self._view_bytes = 0  # the stored rows of the views kept (CacheEntry.nbytes)
        self._views_lock = threading.Lock()
        self._queue: deque[_Append] = deque()
        self._group = threading.Condition(threading.Lock())  # guards the queue and _leading
        self._leading = False  # a thread is committing queued appends

    @property
    def table(self) -> Table:
        if self._table is None:  # opened on first use: building a log does no I/O
            self._table = self._store.table(self._table_name, COLUMNS)
        return self._table

    # -- reading --------------------------------------------------------------------------------

    def view(self, log: str) -> LogView:
        """The log as it is now (one version probe; a scan only when it moved)."""
        entry = self.table.cached(log)
        seen = self._seen(log)
        if seen is not None and seen.entry.serial == entry.serial:
            return seen
        seq = entry.int64("seq") if entry.n else np.empty(0, dtype=np.int64)
        order = None
        current = entry.int64("replaced_at") == 0 if entry.n else None  # nulls read as 0
        if current is not None and not bool(current.all()):  # an edited log: leave replaced versions out
            kept = np.flatnonzero(current).astype(np.int64)
            order = kept[np.argsort(seq[kept], kind="stable")]
            seq = seq[order]
        elif seq.shape[0] > 1 and not bool(np.all(seq[1:] > seq[:-1])):
            order = np.argsort(seq, kind="stable").astype(np.int64)
            seq = seq[order]
        view = LogView(entry, order, seq, previous=_extended(seen, entry, order))
        with self._views_lock:
            old = self._views.pop(log, None)
            if old is not None:
                self._view_bytes -= old.entry.nbytes
            self._views[log] = view
            self._view_bytes += entry.nbytes
            # The newest view stays even alone over the byte bound: its caller is reading it.
            while len(self._views) > 1 and (
                    len(self._views) > self.max_views or self._view_bytes > self.max_view_bytes):
                _, gone = self._views.popitem(last=False)
                self._view_bytes -= gone.entry.nbytes
        return view

    def _seen(self, log: str) -> LogView | None:
        """The view of ``log`` this process last read, if still kept (now the most recent)."""
        with self._views_lock:
            seen = self._views.get(log)
            if seen is not None:
                self._views.move_to_end(log)
            return seen

    def _forget(self, log: str) -> None:
        with self._views_lock:
            gone = self._views.pop(log, None)
            if gone is not None:
                self._view_bytes -= gone.entry.nbytes

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
        w = self.window(log, limit=limit, after_seq=after_seq, around_seq=around_seq)
        return LogPage(w.view.messages(w.ranks), w.has_more, w.view.max_seq)

    def window(
        self, log: str, *, limit: int = 50, after_seq: int | None = None, around_seq: int | None = None
    ) -> LogWindow:
        """Where :meth:`page` (same arguments) lies in the log's current view, without reading
        its messages: for callers that build them from the view's cached columns."""
        limit = check_int(limit, "limit", minimum=0)
        if after_seq is not None and around_seq is not None:
            raise InvalidInputError("cannot specify both after_seq and around_seq")
        if after_seq is not None:
            after_seq = check_int(after_seq, "after_seq")
        if around_seq is not None:
            around_seq = check_int(around_seq, "around_seq")
        view = self.view(log)
        n = len(view)
        if limit == 0:
            return LogWindow(view, n, n, False)
        if after_seq is None and around_seq is None:
            start, stop = max(0, n - limit), n
            return LogWindow(view, start, stop, start > 0)
        first = after_seq + 1 if after_seq is not None else max(1, around_seq - limit // 2)  # type: ignore[operator]
        start = int(np.searchsorted(view.seq, first, side="left"))
        stop = min(n, start + limit)
        return LogWindow(view, start, stop, stop < n)

    def versions(self, log: str, seq: int) -> list[dict[str, Any]]:
        """Every version of message ``seq``, oldest first (``[]`` if there is no such message):
        :meth:`LogView.messages` rows, plus ``written_at`` (unix ms the version was written) and
        ``replaced_at`` (unix ms an edit replaced it; ``None`` for the current version)."""
        seq = check_int(seq, "seq")
        entry = self.view(log).entry
        if not entry.n:
            return []
        ranks = np.flatnonzero(entry.int64("seq") == seq)
        rows: list[dict[str, Any]] = (
            entry.scalars.select(_VERSION_READ).take(pa.array(ranks, type=pa.int64())).to_pylist()
        )
        out = []
        for row in rows:
            raw, replaced = row["tool_calls"], row["replaced_at"]
            row["tool_calls"] = None if raw is None else json.loads(raw)
            # The current version's row is the message's first row: it keeps the append time as
            # created_at and notes when its content was written as updated_at.
            row["written_at"] = row["created_at"] if replaced is not None else row["updated_at"] or row["created_at"]
            del row["updated_at"]
            out.append(row)
        out.sort(key=lambda r: (r["replaced_at"] is None, r["replaced_at"] or 0, r["written_at"] or 0))
        return out

    # -- writing --------------------------------------------------------------------------------

    def lock(self, log: str) -> Lock:
        """The lock every write to ``log`` holds (``Store.lock``; not reentrant)."""
        return self._lock_of(log)

    def _lock_name(self, log: str) -> str:
        digest = hashlib.sha256(json.dumps([self._table_name, log]).encode("utf-8", "surrogatepass")).hexdigest()
        return f"msglog.{digest[:40]}"

    def _lock_of(self, log: str) -> Lock:
        return self._store.lock(self._lock_name(log))

    def append(
        self,
        log: str,
        messages: Sequence[Mapping[str, Any]] | Callable[[LogView], Sequence[Mapping[str, Any]]],
    ) -> tuple[int, int]:
        """Append ``messages`` as the log's next ``seq`` numbers, in one commit; return
        ``(first_seq, last_seq)`` (``(n + 1, n)`` when nothing was appended to a log of ``n``).

        ``messages`` may be a function of the log's current :class:`LogView`, called under the
        log's lock: what it returns is appended with no other write to the log in between.
        """
        if callable(messages):
            decide = messages
            done = self.write(log, lambda view: LogChange(append=decide(view)))
        else:
            done = self.write(log, LogChange(append=messages))
        return done.first_seq, done.last_seq

    def write(self, log: str, change: LogChange | Callable[[LogView], LogChange]) -> LogWrite:
        """Make ``change`` (new versions of stored messages and messages to append) in one commit,
        all or none; ``change`` may be a function of the log's current :class:`LogView`, called
        under the log's lock, so nothing else writes the log between what it read and the commit.

        An edit replaces the stored message of that ``seq`` (its ``id``, ``seq`` and
        ``created_at`` stay); the version it replaced is kept for :meth:`versions`.

        >>> import mindcore
        >>> log = MessageLog(mindcore.open("memory://messages-write-doc"), "chat_messages")
        >>> log.append("chat-1", [{"role": "user", "content": "helo"}])
        (1, 1)
        >>> log.write("chat-1", LogChange(append=[{"role": "assistant", "content": "hi"}],
        ...                               edits={1: {"role": "user", "content": "hello"}}))
        LogWrite(first_seq=2, last_seq=2, edited=(1,))
        >>> [v["content"] for v in log.versions("chat-1", 1)], log.view("chat-1").column("content")
        (['helo', 'hello'], ['hello', 'hi'])
        """
        if isinstance(change, LogChange) and not change.edits and change.append:
            return self._append_grouped(log, _columns(change.append))
        with self._lock_of(log).hold():
            version = self.table.refresh()  # see every write committed before the lock was taken
            view = self._locked_view(log, version)
            got = change(view) if callable(change) else change
            if not isinstance(got, LogChange):
                raise TypeError(f"write: expected a LogChange, got {type(got).__name__}")
            first = view.max_seq + 1
            added = _appended(got.append, first)
            done = LogWrite(first, first + added.num_rows - 1, tuple(sorted(got.edits)))
            if not got.edits:
                if added.num_rows:
                    self.table.append(log, added)
                return done
            now = now_ms()
            replaced: list[dict[str, Any]] = []
            for seq, message in sorted(got.edits.items()):
                rank = int(np.searchsorted(view.seq, seq))
                if rank >= len(view) or int(view.seq[rank]) != seq:
                    raise InvalidInputError(f"edits: the log has no message with seq {seq}")
                new = _row(message, f"edits[{seq}]")
                old = self._stored(view, rank)
                at = max(now, (old["updated_at"] or 0) + 1)  # two edits in one ms still order
                replaced.append({**new, "id": old["id"], "seq": seq, "created_at": old["created_at"], "updated_at": at})
                replaced.append({
                    **{k: old[k] for k in ("role", "content", "tool_call_id", "tool_calls", "metadata")},
                    "id": new_id(), "seq": seq, "created_at": old["updated_at"] or old["created_at"],
                    "updated_at": at, "replaced_at": at,
                })
            if added.num_rows:
                ids = new_id_array(added.num_rows)
                replaced += added.append_column("id", ids).to_pylist()
            with self.table.unit_of_work(log) as uow:
                uow.upsert(replaced)
            return done

    def _append_grouped(self, log: str, rows: pa.Table) -> LogWrite:
        """Append ``rows`` (validated columns, no ``seq``) through the group commit; return once
        the commit holding them is done."""
        ticket = _Append(log, rows)
        group = self._group
        with group:
            self._queue.append(ticket)
            while not ticket.done and self._leading:
                group.wait()
            lead = not ticket.done
            if lead:
                self._leading = True
        if lead:  # commit groups, oldest appends first, until ours is in one
            try:
                while not ticket.done:
                    self._commit_queued()
            finally:
                with group:
                    self._leading = False
                    group.notify_all()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.result is not None
        return ticket.result

    def _take(self) -> list[_Append]:
        """The next group, oldest first: at most one append per log (a second to a log stays
        queued, in order, for the next commit) and at most :attr:`MAX_GROUP`."""
        with self._group:
            batch: list[_Append] = []
            logs: set[str] = set()
            left: deque[_Append] = deque()
            while self._queue and len(batch) < self.MAX_GROUP:
                t = self._queue.popleft()
                if t.log in logs:
                    left.append(t)
                else:
                    logs.add(t.log)
                    batch.append(t)
            left.extend(self._queue)
            self._queue = left
        return batch

    def _commit_queued(self) -> None:
        """Commit the next group of queued appends in one commit (the caller leads)."""
        batch = self._take()
        try:
            with contextlib.ExitStack() as held:
                for name in sorted(self._lock_name(t.log) for t in batch):  # one order: no deadlock
                    held.enter_context(self._store.lock(name).hold())
                version = self.table.refresh()  # see every write committed before the locks were taken
                parts: dict[str, pa.Table] = {}
                results: list[LogWrite] = []
                for t in batch:
                    first = self._locked_view(t.log, version).max_seq + 1
                    n = t.rows.num_rows
                    parts[t.log] = t.rows.append_column(
                        "seq", pa.array(np.arange(first, first + n, dtype=np.int64)))
                    results.append(LogWrite(first, first + n - 1))
                self.table.append_many(parts)
            for t, done in zip(batch, results, strict=True):
                t.result = done
        except BaseException as e:  # nothing of the group is stored: every caller learns why
            for t in batch:
                t.error = e
        finally:
            with self._group:  # their callers return now, while this thread leads on
                for t in batch:
                    t.done = True
                self._group.notify_all()

    def _locked_view(self, log: str, version: int) -> LogView:
        """:meth:`view` for a writer holding the log's lock at table ``version``. A log this
        process has not read is looked up first (:meth:`Table.has_rows`, which tells a new log
        without a read once the process holds the table's census): a new one is then held in the
        store's cache as empty, without the scan of every column that finds nothing, and its first
        append patches that entry, so reading the log after costs no scan either. Nothing else
        writes the log meanwhile: every write holds its lock."""
        table = self.table
        with self._views_lock:
            known = log in self._views
        if not known and not table.has_rows(log):
            empty = CacheEntry.empty(table.schema, version, table.dim or 0)
            table._ctx.cache.put(table.name, log, empty)  # as Table.cached would hold it after a scan
        return self.view(log)

    def _stored(self, view: LogView, rank: int) -> dict[str, Any]:
        """The stored row at ``rank`` as written (``tool_calls`` as JSON text), with ``updated_at``."""
        idx = rank if view.order is None else int(view.order[rank])
        fields = ["id", "role", "content", "tool_call_id", "tool_calls", "metadata", "created_at", "updated_at"]
        row: dict[str, Any] = view.entry.scalars.select(fields).slice(idx, 1).to_pylist()[0]
        return row

    def prune(self, log: str, before_seq: int) -> int:
        """Delete the messages of ``log`` with ``seq < before_seq`` (a log that keeps snapshots
        drops what the latest one replaced), with their earlier versions; the others keep their
        ``seq``. Returns how many rows went."""
        before_seq = check_int(before_seq, "before_seq")
        with self._lock_of(log).hold():
            result = self.table.delete(log, where=col("seq").lt(before_seq))
        self._forget(log)
        return result.deleted

    def pop(self, log: str) -> dict[str, Any] | None:
        """Delete the last message of ``log`` (with its earlier versions) and return it as
        :meth:`LogView.messages` gives it, plus ``metadata`` (decoded JSON); ``None`` when the log
        is empty. The next message appended takes its ``seq``.

        >>> import mindcore
        >>> log = MessageLog(mindcore.open("memory://messages-pop-doc"), "chat_messages")
        >>> log.append("chat-1", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
        (1, 2)
        >>> log.pop("chat-1")["content"], log.max_seq("chat-1"), log.pop("empty")
        ('hello', 1, None)
        """
        with self._lock_of(log).hold():
            version = self.table.refresh()  # see every write committed before the lock was taken
            view = self._locked_view(log, version)
            if not len(view):
                return None
            last = len(view) - 1
            message = view.messages([last])[0]
            raw = view.column("metadata")[last]
            message["metadata"] = None if raw is None else json.loads(raw)
            self.table.delete(log, where=col("seq").eq(view.max_seq))
        self._forget(log)
        return message

    def clear(self, log: str) -> None:
        """Delete every message of ``log``."""
        with self._lock_of(log).hold():
            self.table.clear(log)
        self._forget(log)


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


_KEYS = "\0keys"  # where LogView keeps its keys (no column has this name)
# LogView.records reads the cached columns for at least one rank in this many of the log's rows.
_FROM_COLUMNS = 8


def _run_start(idx: np.ndarray) -> int | None:
    """The first of ``idx`` when they run on without gaps (``lo, lo + 1, ...``), else ``None``."""
    n = idx.shape[0]
    if n and int(idx[-1]) - int(idx[0]) == n - 1 and (n < 3 or bool(np.all(np.diff(idx) == 1))):
        return int(idx[0])
    return None


def _key(role: str, call_id: str | None, calls: str | None, content: str) -> MessageKey:
    if calls is not None:
        calls = json.dumps(json.loads(calls), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return MessageKey(role, call_id, calls, content)


def _appended(messages: Sequence[Mapping[str, Any]], first_seq: int) -> pa.Table:
    """``messages`` as the log's columns, ``seq`` from ``first_seq``."""
    table = _columns(messages)
    return table.append_column("seq", pa.array(np.arange(first_seq, first_seq + table.num_rows, dtype=np.int64)))


def _columns(messages: Sequence[Mapping[str, Any]]) -> pa.Table:
    """``messages`` as the log's columns but ``seq``: built column by column when every message
    is a dict of just a str ``role`` and ``content``, else (a tool call, another key, a str
    subclass, a bad message, which it names) message by message."""
    given = list(messages)
    columns: dict[str, list[Any]] = {}
    if set(map(type, given)) == {dict} and set(map(len, given)) == {2}:  # told at C speed, not row by row
        columns = {"role": [m.get("role") for m in given], "content": [m.get("content") for m in given]}
        if set(map(type, columns["role"])) != {str} or set(map(type, columns["content"])) != {str}:
            columns = {}
    if not columns:
        rows = [_row(m, f"messages[{i}]") for i, m in enumerate(given)]
        columns = {name: [r[name] for r in rows] for name in _WRITTEN}
    return pa.table({name: pa.array(values, type=_TYPES[name]) for name, values in columns.items()})


def _row(message: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise InvalidInputError(f"{where}: expected a dict, got {type(message).__name__}")
    role, content = message.get("role"), message.get("content")
    if not isinstance(role, str) or not isinstance(content, str):
        raise InvalidInputError(f"{where}: 'role' and 'content' must be strings")
    call_id = message.get("tool_call_id")
    if call_id is not None and not isinstance(call_id, str):
        raise InvalidInputError(f"{where}: 'tool_call_id' must be a string")
    calls = message.get("tool_calls")
    metadata = message.get("metadata")
    return {
        "role": role,
        "content": content,
        "tool_call_id": call_id,
        "tool_calls": None if calls is None else json.dumps(calls, ensure_ascii=False, separators=(",", ":")),
        "metadata": None if metadata is None else json.dumps(metadata, ensure_ascii=False, separators=(",", ":")),
    }
