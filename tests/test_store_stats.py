"""``Table.stats()`` / ``Store.stats()`` storage figures: bytes on disk, fragments, versions, deleted
rows still stored and what ``compact()`` would reclaim; all read without writing."""

from __future__ import annotations

import os
import stat
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import S3_BUCKET

import mindcore
from mindcore.store import StoreConfig, Table
from mindcore.store.stats import folder_bytes

WRITES = 12


def _single_writes(path: Path) -> Table:
    """Table ``notes`` of a store at ``path`` after ``WRITES`` upserts of one row each."""
    t = mindcore.open(path).table("notes", {"text": pa.string()})
    for i in range(WRITES):
        t.upsert("u", [{"id": f"n{i}", "text": f"note number {i} " * 8}])
    return t


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            st = os.stat(os.path.join(dirpath, name))
            out[os.path.relpath(os.path.join(dirpath, name), root)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A store written by single writes whose folder is then made unwritable (root may still write:
    the test compares the files too)."""
    path = tmp_path / "db"
    _single_writes(path)
    modes = {}
    for dirpath, _, _names in os.walk(path):
        modes[dirpath] = os.stat(dirpath).st_mode
        os.chmod(dirpath, modes[dirpath] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    yield path
    for dirpath, mode in modes.items():
        os.chmod(dirpath, mode)


def test_single_writes_leave_fragments_versions_and_reclaimable_bytes(tmp_path: Path) -> None:
    t = _single_writes(tmp_path / "db")
    s = t.stats()
    assert s.rows == WRITES and s.deleted_rows == 0
    assert s.fragments == WRITES and s.versions == len(t._dataset().versions()) > WRITES // 2
    assert s.disk_bytes == folder_bytes(str(tmp_path / "db" / "notes.lance"))
    assert 0 < s.reclaimable_bytes < s.disk_bytes  # type: ignore[operator]


def test_compaction_past_the_grace_reclaims_what_stats_announced(tmp_path: Path) -> None:
    t = _single_writes(tmp_path / "db")
    before = t.stats()
    t.compact(cleanup_grace=timedelta(0))
    after = t.stats()
    assert (after.fragments, after.versions, after.reclaimable_bytes, after.deleted_rows) == (1, 1, 0, 0)
    assert after.rows == before.rows
    assert before.disk_bytes is not None and after.disk_bytes is not None
    # An estimate from below: merging small files also saves their per-file overhead, not counted.
    assert before.disk_bytes - after.disk_bytes >= before.reclaimable_bytes  # type: ignore[operator]


def test_deleted_rows_count_until_a_compaction_drops_them(tmp_path: Path) -> None:
    t = mindcore.open(tmp_path / "db").table("notes", {"text": pa.string()})
    t.upsert("u", [{"id": f"n{i}", "text": "some words " * 20} for i in range(40)])
    t.compact(cleanup_grace=timedelta(0))
    clean = t.stats()
    t.delete("u", ids=[f"n{i}" for i in range(10)])
    s = t.stats()
    assert (s.rows, s.deleted_rows, s.fragments) == (30, 10, 1)
    # A quarter of the fragment's rows are deleted: the planner rewrites it without them, so its
    # deleted share counts beside the old versions' files.
    old_versions_only = s.disk_bytes - clean.disk_bytes  # type: ignore[operator]
    assert s.reclaimable_bytes > old_versions_only  # type: ignore[operator]
    t.compact(cleanup_grace=timedelta(0))
    assert (t.stats().deleted_rows, t.stats().reclaimable_bytes) == (0, 0)


def test_store_stats_sum_the_tables(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "db")
    for name in ("a", "b"):
        t = store.table(name, {"text": pa.string()})
        for i in range(3):
            t.upsert("u", [{"id": str(i), "text": "x"}])
    stats = store.stats()
    assert stats.reclaimable_bytes == sum(t.reclaimable_bytes or 0 for t in stats.tables) > 0


def test_memory_store_has_no_storage_figures() -> None:
    t = mindcore.open("memory://").table("notes", {"text": pa.string()})
    t.upsert("u", [{"id": "1", "text": "x"}])
    s = t.stats()
    assert (s.disk_bytes, s.deleted_rows, s.reclaimable_bytes) == (None, None, None)
    assert mindcore.open("memory://").stats().reclaimable_bytes == 0  # no tables


def test_stats_of_a_read_only_folder_write_nothing(read_only_folder: Path) -> None:
    files = _files(read_only_folder)
    store = mindcore.open(read_only_folder, read_only=True)
    t = store.open_table("notes")
    version = t.version
    s = t.stats()
    assert s.fragments == WRITES and s.reclaimable_bytes and s.reclaimable_bytes > 0
    assert store.stats().reclaimable_bytes == s.reclaimable_bytes
    assert t.version == version == s.version
    assert _files(read_only_folder) == files


def test_object_storage_lists_the_dataset_files(s3: dict[str, str]) -> None:
    """On object storage the figures come from the dataset's own file listing (no folder to walk)."""
    uri = f"s3://{S3_BUCKET}/stats-{uuid.uuid4().hex}"
    store = mindcore.open(uri, storage_options=s3, config=StoreConfig(compact_in_background=False))
    t = store.table("notes", {"text": pa.string()})
    for i in range(4):
        t.upsert("u", [{"id": str(i), "text": "x"}])
    s = mindcore.open(uri, storage_options=s3, read_only=True).open_table("notes").stats()
    assert s.fragments == 4 and s.disk_bytes and 0 < s.reclaimable_bytes < s.disk_bytes  # type: ignore[operator]
    assert s.versions == len(t._dataset().versions()) > 4  # counted from the listing: as many as Lance lists
    t.compact(cleanup_grace=timedelta(0))
    after = t.stats()
    assert (after.fragments, after.reclaimable_bytes, after.versions) == (1, 0, 1)
    assert after.disk_bytes < s.disk_bytes  # type: ignore[operator]


def test_stats_hold_while_maintenance_deletes_versions(tmp_path: Path) -> None:
    """``stats()`` from another store handle (as ``mindcore inspect`` run beside a live writer) while
    steady single writes and a short grace make maintenance delete versions as it reads them: every
    call answers, and the versions it counts are ones the table kept."""
    store = mindcore.open(tmp_path, config=StoreConfig(compact_every=4, cleanup_grace=timedelta(seconds=0.5)))
    t = store.table("notes", {"text": pa.string()})
    t.upsert("u", [{"id": "first", "text": "first"}])
    inspector = mindcore.open(tmp_path)
    answered: list[int] = []
    failed: list[BaseException] = []
    wanted = 40

    def inspect() -> None:
        while len(answered) < wanted and not failed:
            try:
                answered.append(inspector.open_table("notes").stats().versions)
            except BaseException as e:  # reported by the assertion below
                failed.append(e)

    reader = threading.Thread(target=inspect)
    reader.start()
    writes = 1
    while reader.is_alive():  # the writes go on until the inspector is done (its count is the marker)
        t.upsert("u", [{"id": f"n{writes}", "text": "y" * 500}])
        writes += 1
    reader.join()
    assert not failed, failed[0]
    assert len(answered) == wanted and all(1 <= v <= t.version for v in answered)
    store.close()
