"""What a store holds, read without writing anything: :class:`TableStats` and :class:`StoreStats`.

``Table.stats()`` and ``Store.stats()`` build them (``mindcore inspect`` prints them)::

    store = mindcore.open("./memory", read_only=True)
    for t in store.stats().tables:
        print(t.name, t.rows, t.namespaces, t.version, t.versions, t.disk_bytes)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

__all__ = ["StoreStats", "TableStats", "folder_bytes"]


@dataclass(frozen=True, slots=True)
class TableStats:
    """One table at one version.

    ``namespaces`` maps each namespace with rows to its row count. ``version`` is the latest
    version and ``versions`` how many versions are kept (compaction with a short grace drops old
    ones). ``data_bytes`` is the size of the latest version's data files; ``disk_bytes`` everything
    the table keeps in its folder (old versions, indexes, manifests), ``None`` off the local disk.
    ``fragments`` is the number of data files of the latest version (many small writes make many;
    compaction merges them). ``dim`` is the vector dimension (``None`` without vectors) and
    ``embedding`` the model recorded for the table (``model_id``, ``dim``), if any.
    """

    name: str
    rows: int
    namespaces: dict[str, int]
    version: int
    versions: int
    data_bytes: int
    disk_bytes: int | None
    fragments: int
    dim: int | None
    columns: list[str]
    embedding: Any = None  # EmbeddingInfo | None (store.py defines it and imports this module)


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Every table of a store (internal ones excluded), the store's recorded embedding model and,
    for a folder, its size on disk (``None`` elsewhere)."""

    uri: str
    kind: str
    embedding: Any
    disk_bytes: int | None
    tables: list[TableStats] = field(default_factory=list)


def folder_bytes(path: str) -> int:
    """Total size of the files under ``path`` (0 when it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:  # removed while walking (a concurrent cleanup): it no longer counts
                continue
    return total
