"""The inbox's only door to storage: the ``consciousness_inbox`` table, one namespace per agent.

A row is one event not acked yet: ``event`` (its id), ``seq`` (push order), ``payload`` (JSON
text), ``attempts`` (deliveries so far), ``lease_until`` (unix ms; the event is available once
it has passed, 0 for never leased) and ``lease_owner`` (the inbox object that took the lease, so
a release frees only its own leases). ``created_at`` is the push time.

A dead letter is the same row with ``lease_until`` at :data:`DEAD` (so no lease query ever sees
it), ``dead_at`` (unix ms) set, and ``last_error`` the last error a consumer gave: moving an event
to the dead letters, or back, rewrites its one row in one commit, so a crash leaves it in exactly
one of the two lists. ``last_error`` is also kept on live events nacked with an error.

Pushes only append rows (the cheapest commit, under the table's write lock; concurrent pushes of
one process share a commit). Everything that
reads rows and writes them back (taking leases, releasing them, acking) holds the agent's own
inbox lock, so a lease is never taken twice and an acked event is never written back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mindcore.consciousness.inbox import lock_name
from mindcore.store import ALL_NAMESPACES, Filter, Store, UnitOfWork, col, new_id, now_ms

__all__ = ["COLUMNS", "DEAD", "TABLE", "InboxRepo", "LeasedRow", "totals"]

TABLE = "consciousness_inbox"
COLUMNS: dict[str, pa.DataType] = {
    "event": pa.string(),
    "seq": pa.int64(),
    "payload": pa.string(),
    "attempts": pa.int64(),
    "lease_until": pa.int64(),
    "lease_owner": pa.string(),
    "dead_at": pa.int64(),
    "last_error": pa.string(),
}
#: ``lease_until`` of a dead letter: later than any lease.
DEAD = 1 << 62
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

    def lease(self, max_events: int, lease_ms: int, max_attempts: int) -> list[LeasedRow]:
        """Lease up to ``max_events`` available events, oldest first. An available event already
        delivered ``max_attempts`` times (its last lease ran out) becomes a dead letter in the same
        commit instead, and the next ones are taken in its place."""
        taken: list[dict[str, Any]] = []
        with self._lock.hold():
            self.table.refresh()  # the latest leases, also where reads may lag (object storage)
            now = now_ms()
            due = col("lease_until").le(now)
            while len(taken) < max_events:
                rows = self._due_rows(due, max_events - len(taken))
                if not rows:
                    break
                buried = 0
                for r in rows:
                    if int(r["attempts"] or 0) >= max_attempts:
                        r.update(lease_until=DEAD, dead_at=now, lease_owner=None)
                        buried += 1
                    else:
                        r.update(attempts=int(r["attempts"] or 0) + 1, lease_until=now + lease_ms, lease_owner=self.owner)
                        taken.append(r)
                self._settle(_upsert(rows), buried)
                if not buried:
                    break
        return [LeasedRow(r["event"], r["payload"], r["attempts"], int(r["created_at"])) for r in taken]

    def _due_rows(self, due: Filter, max_events: int) -> list[dict[str, Any]]:
        """The oldest ``max_events`` available rows, whole. A LanceDB query costs ~2 ms before it
        reads anything, so a small backlog is read whole in one scan; a big one (whose payloads
        would dominate) is read as ids first, then only the rows taken."""
        if self.table.count(self.namespace, due) <= _ONE_SCAN:
            return self.table.scan(self.namespace, due, order_by="seq", limit=max_events)
        first = self.table.scan_arrow(self.namespace, due, columns=["id", "seq"], order_by="seq", limit=max_events)
        return self.table.get(self.namespace, [str(v) for v in first.column("id").to_pylist()])  # in seq order

    def _settle(self, write: Callable[[UnitOfWork], None], buried: int) -> None:
        """Commit ``write`` as one table version: every event it moves to the dead letters (there
        are ``buried``) moves in that one commit (the hook tests kill a process at)."""
        with self.table.unit_of_work(self.namespace) as uow:
            write(uow)

    def ack(self, events: Sequence[str]) -> None:
        with self._lock.hold():
            self.table.delete(self.namespace, where=col("event").is_in(list(events)))

    def release(self, events: Sequence[str], max_attempts: int, error: str | None) -> None:
        """Release the events leased to this owner; those delivered ``max_attempts`` times become
        dead letters in the same commit."""
        with self._lock.hold():
            self.table.refresh()
            mine = (col("event").is_in(list(events)) & col("lease_owner").eq(self.owner) & col("lease_until").gt(0)
                    & col("lease_until").lt(DEAD))
            held = self.table.scan(self.namespace, mine, columns=["id", "attempts"])
            if not held:
                return
            dead = [r["id"] for r in held if int(r["attempts"] or 0) >= max_attempts]
            back = [r["id"] for r in held if int(r["attempts"] or 0) < max_attempts]
            err = {} if error is None else {"last_error": error}

            def write(uow: UnitOfWork) -> None:
                if back:
                    uow.update(back, {"lease_until": 0, **err})
                if dead:
                    uow.update(dead, {"lease_until": DEAD, "dead_at": now_ms(), "lease_owner": None, **err})

            self._settle(write, len(dead))

    def count(self) -> int:
        return self.table.count(self.namespace, col("lease_until").lt(DEAD))

    def dead(self, limit: int | None) -> list[dict[str, Any]]:
        return self.table.scan(self.namespace, col("lease_until").ge(DEAD), order_by="seq", limit=limit)

    def requeue(self, events: Sequence[str]) -> list[str]:
        """Make these dead letters live again, attempts reset, in one commit; the ones found."""
        with self._lock.hold():
            found = self._dead_ids(events)
            if found:
                self.table.update(self.namespace, list(found), {
                    "lease_until": 0, "attempts": 0, "dead_at": None, "last_error": None, "lease_owner": None})
        return [e for e in events if e in found.values()]

    def discard(self, events: Sequence[str]) -> list[str]:
        """Delete these dead letters, in one commit; the ones found."""
        with self._lock.hold():
            found = self._dead_ids(events)
            if found:
                self.table.delete(self.namespace, ids=list(found))
        return [e for e in events if e in found.values()]

    def _dead_ids(self, events: Sequence[str]) -> dict[str, str]:
        """``{row id: event id}`` of the dead letters among ``events``."""
        self.table.refresh()
        where = col("event").is_in(list(events)) & col("lease_until").ge(DEAD)
        return {r["id"]: r["event"] for r in self.table.scan(self.namespace, where, columns=["id", "event"])}


def totals(store: Store) -> dict[str, tuple[int, int]]:
    """``{agent: (events waiting, dead letters)}`` over every inbox in ``store``, read in one scan
    of two columns; empty when the store has no inbox (nothing is created)."""
    if TABLE not in store.table_names():
        return {}
    rows = store.open_table(TABLE).scan_arrow(ALL_NAMESPACES, columns=["namespace", "lease_until"])
    flagged = rows.append_column("dead", pc.greater_equal(rows.column("lease_until"), pa.scalar(DEAD, pa.int64())))
    grouped = flagged.group_by(["namespace", "dead"]).aggregate([("dead", "count")]).to_pydict()
    counts: dict[str, list[int]] = {}
    for agent, is_dead, n in zip(grouped["namespace"], grouped["dead"], grouped["dead_count"], strict=True):
        counts.setdefault(agent, [0, 0])[1 if is_dead else 0] = n
    return {agent: (live, buried) for agent, (live, buried) in sorted(counts.items())}


def _upsert(rows: list[dict[str, Any]]) -> Callable[[UnitOfWork], None]:
    def write(uow: UnitOfWork) -> None:
        uow.upsert(rows)

    return write
