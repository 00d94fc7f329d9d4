"""Which namespaces of a table have rows: told without reading the table, for a new one.

A store serves many small namespaces (a session, a user, a dataset), and new ones keep coming. Asking
LanceDB whether a namespace has rows reads the table's namespace column (or its index) each time,
which costs more as the table grows. A :class:`Census` is the set of namespaces a table held at one
version, taken once per process by one read of that column and then kept up to date:

- by this process's own commits (:meth:`Census.committed` adds the namespaces a commit touched);
- after another process's commits, by reading only the fragments added since (Lance numbers
  fragments in the order they are written, and every write adds new ones).

Deletes and compaction never remove a name, so the census is a superset of the namespaces with
rows: a name missing from it surely has none, and one present is looked up as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow.compute as pc

__all__ = ["CENSUS_MAX_ROWS", "Census"]

#: A census is first taken only of a table of at most this many rows (one read of its namespace
#: column, tens of milliseconds at this size); a bigger table is looked up namespace by namespace.
CENSUS_MAX_ROWS = 100_000
# Catching up reads at most this many new fragments (a compaction that rewrote much of the table
# makes many); past it the census is taken anew, or given up for a big table.
_MAX_CATCH_UP = 64


class Census:
    """The namespaces that may have rows at table :attr:`version` (every one that has, perhaps
    more), and the highest fragment id read (the fragments after it are what a later version
    added). Names are only ever added, so the census is also right about any earlier version.
    Changed in place by its table, one thread at a time."""

    __slots__ = ("last_fragment", "names", "version")

    def __init__(self, version: int, names: set[str], last_fragment: int) -> None:
        self.version = version
        self.names = names
        self.last_fragment = last_fragment

    def __repr__(self) -> str:
        return f"Census(version={self.version}, names={len(self.names)}, last_fragment={self.last_fragment})"

    @classmethod
    def take(cls, lance_table: Any) -> Census | None:
        """The census of a LanceDB table at the version it has checked out; ``None`` when the
        table is too big to read whole here, or cannot be read as a Lance dataset."""
        try:
            ds = lance_table.to_lance()
            if ds.count_rows() > CENSUS_MAX_ROWS:
                return None
            fragments = ds.get_fragments()
            names = _names(ds, fragments)
        except (OSError, RuntimeError, ValueError):
            return None
        return cls(int(ds.version), names, max((f.fragment_id for f in fragments), default=-1))

    def lists_none_of(self, namespaces: Iterable[str], version: int) -> bool:
        """Whether none of ``namespaces`` has rows at ``version`` (at most :attr:`version`)."""
        return version <= self.version and not any(ns in self.names for ns in namespaces)

    def catch_up(self, lance_table: Any) -> bool:
        """Bring the census to the version a LanceDB table has checked out, reading only the
        fragments added since; ``False`` (the census unchanged) when there are too many of them,
        or the table cannot be read as a Lance dataset."""
        try:
            ds = lance_table.to_lance()
            if ds.version <= self.version:
                return True
            added = [f for f in ds.get_fragments() if f.fragment_id > self.last_fragment]
            if len(added) > _MAX_CATCH_UP:
                return False
            self.names |= _names(ds, added)
        except (OSError, RuntimeError, ValueError):
            return False
        self.last_fragment = max((f.fragment_id for f in added), default=self.last_fragment)
        self.version = int(ds.version)
        return True

    def committed(self, version: int, touched: Iterable[str]) -> None:
        """Count a commit of this process that wrote to ``touched`` and made ``version``, the one
        after :attr:`version`. The fragments it added hold only those names, so they need no read."""
        self.names.update(touched)
        self.version = version


def _names(ds: Any, fragments: list[Any]) -> set[str]:
    if not fragments:
        return set()
    column = ds.scanner(columns=["namespace"], fragments=fragments).to_table().column("namespace")
    return {str(v) for v in pc.unique(column).to_pylist()}
