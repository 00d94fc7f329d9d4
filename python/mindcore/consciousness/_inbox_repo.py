"""The inbox's only door to storage: the ``consciousness_inbox`` table, one namespace per agent.

A row is one event not acked yet: ``event`` (its id), ``seq`` (push order), ``payload`` (JSON
text), ``attempts`` (deliveries so far), ``lease_until`` (unix ms; the event is available once
it has passed, 0 for never leased) and ``lease_owner`` (the inbox object that took the lease, so
a release frees only its own leases). ``created_at`` is the push time.

Pushes only append rows (the cheapest commit, under the table's write lock; concurrent pushes of
one process share a commit). Everything that
reads rows and writes them back (taking leases, releasing them, acking) holds the agent's own
inbox lock, so a lease is never taken twice and an acked event is never written back.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from mindcore.consciousness.inbox import lock_name
from mindcore.store import Filter, Store, col, new_id, now_ms

__all__ = ["COLUMNS", "TABLE", "InboxRepo", "LeasedRow"]

TABLE = "consciousness_inbox"
COLUMNS: dict[str, pa.DataType] = {
    "event": pa.string(),
    "seq": pa.int64(),
    "payload": pa.string(),
    "attempts": pa.int64(),
    "lease_until": pa.int64(),
    "lease_owner": pa.string(),
}
# seq = (table version the push read under the write lock) * _BATCH + position in the push: versions
# only grow and every push commits a newer one, so seq follows commit order across processes.
_BATCH = 1 << 20
_ONE_SCAN = 512  # available events up to which a receive reads whole rows in one scan


@dataclass(frozen=True, slots=True)
class LeasedRow:
    id: str
    payload: str
    attempts: int
    pushed_ms: int


@dataclass(slots=True)
class _Ticket:
    """One push waiting for the commit that stores it."""

    payloads: list[str]
    ids: list[str]
    done: bool = False
    error: BaseException | None = None


class InboxRepo:
    def __init__(self, store: Store, agent: str) -> None:
        self.store = store
        self.owner = new_id()
        self.namespace = agent
        self.table = store.table(TABLE, COLUMNS)
        self._lock = store.lock(lock_name("consciousness-inbox", agent))
        self._queue: list[_Ticket] = []
        self._queue_lock = threading.Lock()
        self._committer = threading.Lock()

    def push(self, payloads: Sequence[str]) -> list[str]:
        """Append the events and return their ids once committed. Pushes made at the same time by
        threads of this process share one commit (group commit): each still returns only once its
        own events are stored, but concurrent pushers pay for about one commit, not one each."""
        if len(payloads) >= _BATCH:
            raise ValueError(f"push at most {_BATCH - 1} events at once")
        ticket = _Ticket(list(payloads), [new_id() for _ in payloads])
        with self._queue_lock:
            self._queue.append(ticket)
        with self._committer:
            while not ticket.done:  # a commit takes the oldest pushes first: ours comes
                self._commit_queued()
        if ticket.error is not None:
            raise ticket.error
        return ticket.ids

    def _commit_queued(self) -> None:
        """Commit the pushes queued so far (up to one seq block), holding the committer lock."""
        with self._queue_lock:
            batch: list[_Ticket] = []
            size = 0
            while self._queue and size + len(self._queue[0].payloads) < _BATCH:
                size += len(self._queue[0].payloads)
                batch.append(self._queue.pop(0))
        table = self.table

        def rows() -> list[dict[str, Any]]:
            base = (table.version + 1) * _BATCH  # called under the write lock, at the latest version
            events = [(i, p) for t in batch for i, p in zip(t.ids, t.payloads, strict=True)]
            return [
                {"event": i, "seq": base + n, "payload": p, "attempts": 0, "lease_until": 0}
                for n, (i, p) in enumerate(events)
            ]

        try:
            table.append(self.namespace, rows)
        except BaseException as e:
            for t in batch:
                t.error = e
        finally:
            for t in batch:
                t.done = True

    def lease(self, max_events: int, lease_ms: int) -> list[LeasedRow]:
        with self._lock.hold():
            self.table.refresh()  # the latest leases, also where reads may lag (object storage)
            now = now_ms()
            due = col("lease_until").le(now)
            rows = self._due_rows(due, max_events)
            if not rows:
                return []
            until = now + lease_ms
            for r in rows:
                r["attempts"] = int(r["attempts"] or 0) + 1
                r["lease_until"] = until
                r["lease_owner"] = self.owner
            self.table.upsert(self.namespace, rows)
        return [LeasedRow(r["event"], r["payload"], r["attempts"], int(r["created_at"])) for r in rows]

    def _due_rows(self, due: Filter, max_events: int) -> list[dict[str, Any]]:
        """The oldest ``max_events`` available rows, whole. A LanceDB query costs ~2 ms before it
        reads anything, so a small backlog is read whole in one scan; a big one (whose payloads
        would dominate) is read as ids first, then only the rows taken."""
        if self.table.count(self.namespace, due) <= _ONE_SCAN:
            return self.table.scan(self.namespace, due, order_by="seq", limit=max_events)
        first = self.table.scan_arrow(self.namespace, due, columns=["id", "seq"], order_by="seq", limit=max_events)
        return self.table.get(self.namespace, [str(v) for v in first.column("id").to_pylist()])  # in seq order

    def ack(self, events: Sequence[str]) -> None:
        with self._lock.hold():
            self.table.delete(self.namespace, where=col("event").is_in(list(events)))

    def release(self, events: Sequence[str]) -> None:
        with self._lock.hold():
            self.table.refresh()
            mine = col("event").is_in(list(events)) & col("lease_owner").eq(self.owner) & col("lease_until").gt(0)
            held = self.table.scan(self.namespace, mine, columns=["id"])
            if held:
                self.table.update(self.namespace, [r["id"] for r in held], {"lease_until": 0})

    def count(self) -> int:
        return self.table.count(self.namespace)
