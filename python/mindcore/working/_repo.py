"""Where working memory lives: one row per (scope, key) in the store's ``working_memory`` table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

if TYPE_CHECKING:
    from mindcore.store import Store, Table

T = TypeVar("T")

TABLE = "working_memory"
COLUMNS = {"scope": pa.string(), "state": pa.string()}


class StateRepo:
    """The stored JSON text of one working memory. The namespace is the scope (``thread`` or
    ``resource``) and the row id is the thread or resource id, so two scopes never share a row."""

    def __init__(self, store: Store, *, scope: str, key: str) -> None:
        self._store = store
        self._table: Table | None = None
        self.namespace = f"working/{scope}"
        self.scope = scope
        self.key = key

    @property
    def table(self) -> Table:
        if self._table is None:  # opened on first use: constructing a WorkingMemory does no I/O
            self._table = self._store.table(TABLE, COLUMNS)
        return self._table

    def load(self) -> str | None:
        row = self.table.get_one(self.namespace, self.key)
        return None if row is None else row["state"]

    def modify(self, fn: Callable[[str | None], tuple[str, T]]) -> T:
        """Apply ``fn(current_raw) -> (new_raw, new_state)`` atomically (the table's write lock is
        held from the read to the commit); return ``new_state``. If ``fn`` raises, nothing changes."""
        result: list[T] = []

        def step(row: dict[str, object] | None) -> dict[str, object]:
            raw = None if row is None else row.get("state")
            new_raw, state = fn(raw if isinstance(raw, str) else None)
            result.append(state)
            return {"scope": self.scope, "state": new_raw}

        self.table.modify(self.namespace, self.key, step)
        return result[0]

    def delete(self) -> None:
        self.table.delete(self.namespace, ids=[self.key])
