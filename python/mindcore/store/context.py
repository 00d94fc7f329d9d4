"""What a table needs from the store that opened it, handed over as one small object.

A :class:`~mindcore.store.Table` reads its settings, the shared vector cache and the
maintenance scheduler from a :class:`TableContext` instead of from the ``Store`` itself, so the
table module never imports the store module (the store builds tables; tables do not know
stores).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from mindcore.store.cache import VectorCache
from mindcore.store.config import StoreConfig
from mindcore.store.errors import StoreNotWritableError
from mindcore.store.locks import Lock

__all__ = ["CommitCounter", "StoreHandle", "TableContext"]


class CommitCounter:
    """How many commits the tables of one store handle have made (thread-safe)."""

    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self._n += 1

    @property
    def value(self) -> int:
        return self._n


class StoreHandle(Protocol):
    """The public face of the store a table belongs to (``Table.store``)."""

    @property
    def uri(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def config(self) -> StoreConfig: ...

    @property
    def read_only(self) -> bool: ...

    def check_writable(self) -> None: ...

    def lock(self, name: str) -> Lock: ...


@dataclass(frozen=True, slots=True)
class TableContext:
    """Everything a table uses from its store: shared by every table of one store."""

    #: The store itself, for users of ``Table.store``.
    store: StoreHandle
    uri: str
    #: ``local``, ``memory`` or ``remote``.
    kind: str
    config: StoreConfig
    #: The store's vector cache (one LRU over all its tables).
    cache: VectorCache
    #: How often, in seconds, a table checks for versions written by others (``None``: never,
    #: only this process writes).
    read_consistency_s: float | None
    #: Ask for a background compaction of the table with this name.
    schedule_maintenance: Callable[[str], None]
    #: Opened ``read_only=True``: every write raises ``StoreNotWritableError``.
    read_only: bool = False
    #: Object storage: the credentials and endpoint the store was opened with.
    storage_options: Mapping[str, str] = field(default_factory=dict)
    #: Counts every commit of the store's tables.
    commits: CommitCounter = field(default_factory=CommitCounter)

    def refuse_writes(self, what: str) -> None:
        """Raise ``StoreNotWritableError`` (saying it could not ``what``) on a read-only store."""
        if self.read_only:
            raise StoreNotWritableError(f"store {self.uri} was opened read_only=True: cannot {what}")
