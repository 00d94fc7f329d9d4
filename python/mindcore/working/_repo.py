"""Where working memory lives: an append-only log per (scope, key) in the store's
``working_memory`` table.

Every update appends the whole new state as the key's next ``seq`` (an append is the cheapest
LanceDB commit, and it is atomic: a crash leaves the old state or the new one). The latest row
wins; older rows are pruned every :data:`PRUNE_EVERY` updates. Updates read the latest state and
append its successor under the table's write lock (``Table.append`` with a function), so two
writers in different processes never lose each other's changes.

The process keeps the state it last read or wrote together with the table version it belongs
to; while the table has not moved (a two-``stat`` version probe), reads cost no query.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

import pyarrow as pa

from mindcore.store import col

if TYPE_CHECKING:
    from mindcore.store import Store, Table

T = TypeVar("T")

TABLE = "working_memory"
COLUMNS: dict[str, pa.DataType] = {"scope": pa.string(), "key": pa.string(), "seq": pa.int64(), "state": pa.string()}
PRUNE_EVERY = 32


class _Seen(NamedTuple):
    version: int
    seq: int
    raw: str | None


class StateRepo:
    """The stored JSON text of one working memory. The namespace is the scope (``thread`` or
    ``resource``) and ``key`` the thread or resource id, so two scopes never share rows."""

    def __init__(self, store: Store, *, scope: str, key: str) -> None:
        self._store = store
        self._table: Table | None = None
        self._seen: _Seen | None = None
        self.namespace = f"working/{scope}"
        self.scope = scope
        self.key = key

    @property
    def table(self) -> Table:
        if self._table is None:  # opened on first use: constructing a WorkingMemory does no I/O
            self._table = self._store.table(TABLE, COLUMNS)
        return self._table

    def _latest(self) -> _Seen:
        version = self.table.version
        if self._seen is not None and self._seen.version == version:
            return self._seen
        rows = self.table.scan(self.namespace, col("key").eq(self.key), columns=["seq", "state"],
                               order_by="seq", descending=True, limit=1)
        seen = _Seen(version, int(rows[0]["seq"]), rows[0]["state"]) if rows else _Seen(version, 0, None)
        self._seen = seen
        return seen

    def load(self) -> str | None:
        return self._latest().raw

    def modify(self, fn: Callable[[str | None], tuple[str, T]]) -> T:
        """Append ``fn(current_raw) -> (new_raw, new_state)`` as the next state, atomically (the
        write lock is held from the read to the commit); return ``new_state``. If ``fn`` raises,
        nothing is written."""
        out: list[tuple[int, str, T]] = []

        def successor() -> list[dict[str, object]]:
            current = self._latest()
            new_raw, state = fn(current.raw)
            out.append((current.seq + 1, new_raw, state))
            return [{"scope": self.scope, "key": self.key, "seq": current.seq + 1, "state": new_raw}]

        result = self.table.append(self.namespace, successor)
        seq, raw, state = out[0]
        self._seen = _Seen(result.version, seq, raw)
        if seq % PRUNE_EVERY == 0:
            self.table.delete(self.namespace, where=col("key").eq(self.key) & col("seq").lt(seq))
        return state

    def delete(self, *, purge: bool = False) -> None:
        self.table.delete(self.namespace, where=col("key").eq(self.key), purge=purge)
        self._seen = None
