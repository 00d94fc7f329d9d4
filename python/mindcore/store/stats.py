"""What a store holds, read without writing anything: :class:`TableStats` and :class:`StoreStats`.

``Table.stats()`` and ``Store.stats()`` build them (``mindcore inspect`` prints them)::

    store = mindcore.open("./memory", read_only=True)
    for t in store.stats().tables:
        print(t.name, t.rows, t.namespaces, t.version, t.versions, t.disk_bytes, t.reclaimable_bytes)

``reclaimable_bytes`` estimates what ``compact()`` would free once every old version is past the
cleanup grace: the bytes Lance's own cleanup would delete with no grace (files only old versions
use, read from its dry run), plus, for each fragment the compaction planner would rewrite now,
the share of its data file that holds deleted rows and its deletion file. Not counted: the few
kilobytes per file that merging many small files into one saves, and files no version references
that are younger than Lance's 7-day safety window (a write may still be committing them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from mindcore.store.compaction import plan

__all__ = ["DiskUsage", "StoreStats", "TableStats", "disk_usage", "folder_bytes"]


@dataclass(frozen=True, slots=True)
class TableStats:
    """One table at one version.

    ``namespaces`` maps each namespace with rows to its row count. ``version`` is the latest
    version and ``versions`` how many versions are kept (compaction with a short grace drops old
    ones). ``data_bytes`` is the size of the latest version's data files; ``disk_bytes`` every file
    the table keeps (data, old versions, indexes, manifests), as the dataset lists them, so also on
    object storage.
    ``fragments`` is the number of data files of the latest version (many small writes make many;
    compaction merges them). ``deleted_rows`` counts the rows deleted (or replaced by an update)
    that the latest version's data files still hold, until compaction rewrites them;
    ``reclaimable_bytes`` what ``compact()`` would free once old versions are past the cleanup
    grace (an estimate: see :mod:`mindcore.store.stats`). Both are ``None`` on ``memory://``.
    ``dim`` is the vector dimension (``None`` without vectors) and
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
    deleted_rows: int | None
    reclaimable_bytes: int | None
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

    @property
    def reclaimable_bytes(self) -> int | None:
        """What ``Store.compact()`` would free over every table (``TableStats.reclaimable_bytes``),
        ``None`` on ``memory://``."""
        figures = [t.reclaimable_bytes for t in self.tables]
        return None if None in figures else sum(f for f in figures if f is not None)


@dataclass(frozen=True, slots=True)
class DiskUsage:
    """A table's files as the dataset lists them (so also on object storage): ``disk_bytes`` in all,
    ``deleted_rows`` still stored, ``reclaimable_bytes`` (see :mod:`mindcore.store.stats`) and the
    ``versions`` kept (their manifests, counted in the same listing)."""

    disk_bytes: int
    deleted_rows: int
    reclaimable_bytes: int
    versions: int


def disk_usage(ds: Any) -> DiskUsage:
    """The :class:`DiskUsage` of ``ds`` (a ``lance.LanceDataset`` at its latest version). Reads
    only: the file listing, the manifests, a cleanup dry run and a compaction plan."""
    files = ds.all_files().read_all()
    size = dict(zip(files.column("path").to_pylist(), files.column("size_bytes").to_pylist(), strict=True))
    # Lance's own dry run of the cleanup ``compact(cleanup_grace=timedelta(0))`` runs.
    old_versions = ds.explain_cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    _, plans = plan(ds)
    rewritten = [f for p in plans for task in p.tasks for f in task.fragments]
    stale = 0.0
    for f in rewritten:
        if f.deletion_file is None or not f.physical_rows:
            continue
        data = sum(size.get(f"data/{d.path}", 0) for d in f.files)
        stale += data * f.num_deletions / f.physical_rows + size.get(f.deletion_file.path(f.id), 0)
    return DiskUsage(
        disk_bytes=sum(size.values()),
        deleted_rows=sum(int(f.metadata.num_deletions) for f in ds.get_fragments()),
        reclaimable_bytes=int(old_versions.stats.bytes_removed) + round(stale),
        # Counted from the listing: reading every manifest (as listing versions does) takes long
        # enough for a cleanup to delete some of them meanwhile.
        versions=sum(p.startswith("_versions/") and p.endswith(".manifest") for p in size),
    )


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
