"""Background maintenance converges under steady writes: a rewrite that loses a race with a
concurrent write is redone, its files are deleted at once, a merge deferred by busy writers is run
again without waiting for another write, and ``cleanup_grace`` after the last pass a follow-up
deletes the versions the grace kept.

Every test uses a real LanceDB folder; data files are read with Lance itself (``lance.dataset``).
Concurrency waits on progress markers (passes recorded by a spy on ``Table._maintain``), never on
wall time.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import mindcore
import mindcore.store.table as table_module
from mindcore.embed import HashEmbedder
from mindcore.ltm import LongTermMemory
from mindcore.store import ALL_NAMESPACES, CompactionResult, StoreConfig, Table
from mindcore.store.compaction import RETRIES
from mindcore.store.stats import folder_bytes

COLUMNS = {"n": pa.int64()}
#: Generous bound on any wait for a marker (the machine is shared and busy): a hang fails, slowness does not.
PATIENCE = 300.0


@dataclass
class Passes:
    """Every maintenance pass of a store, as the spy saw it: (table, result or the error raised)."""

    seen: list[tuple[str, CompactionResult | BaseException]] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def of(self, name: str) -> list[CompactionResult | BaseException]:
        with self.changed:
            return [r for n, r in self.seen if n == name]

    def wait_for(self, name: str, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len([n for n, _ in self.seen if n == name]) >= count, PATIENCE), \
                f"fewer than {count} maintenance passes of {name!r} after {PATIENCE} s"


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Passes:
    spy = Passes()
    real = Table._maintain

    def maintain(self: Table, *args: Any, **kwargs: Any) -> CompactionResult:
        try:
            result: CompactionResult | BaseException = real(self, *args, **kwargs)
        except BaseException as e:
            result = e
        with spy.changed:
            spy.seen.append((self.name, result))
            spy.changed.notify_all()
        if isinstance(result, BaseException):
            raise result
        return result

    monkeypatch.setattr(Table, "_maintain", maintain)
    return spy


def _data_files(t: Table) -> tuple[set[str], set[str]]:
    """(files in the table's data folder, files some kept version references)."""
    root = os.path.join(t.store.uri, f"{t.name}.lance")
    ds = lance.dataset(root)
    referenced = {d.path for v in ds.versions()
                  for f in lance.dataset(root, version=v["version"]).get_fragments() for d in f.data_files()}
    return set(os.listdir(os.path.join(root, "data"))), referenced


def _conflict_on_rewrites(t: Table, monkeypatch: pytest.MonkeyPatch, conflicting: int) -> list[int]:
    """The first ``conflicting`` rewrites of ``t`` are each overtaken, before they commit, by
    another thread deleting one of the rows they merge. Returns the list the rewrites count into."""
    real = table_module._rewrite
    calls: list[int] = []

    def rewrite_then_delete(ds: Any, plan: Any) -> list[Any]:
        out = real(ds, plan)
        calls.append(plan.num_tasks())
        if len(calls) <= conflicting:
            th = threading.Thread(target=lambda: t.delete("u", ids=[f"s{len(calls)}"]))
            th.start()
            th.join()
        return out

    monkeypatch.setattr(table_module, "_rewrite", rewrite_then_delete)
    return calls


def _small_writes(t: Table, n: int) -> None:
    for i in range(n):
        t.upsert("u", [{"id": f"s{i}", "n": i}])


def test_a_conflicted_rewrite_leaves_no_file_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lance's cleanup would keep the files of a refused commit for 7 days; the pass deletes them."""
    cfg = StoreConfig(compact_every=0, cleanup_grace=timedelta(0))
    t = mindcore.open(tmp_path, config=cfg).table("t", COLUMNS)
    _small_writes(t, 12)
    calls = _conflict_on_rewrites(t, monkeypatch, conflicting=2)
    res = t.compact()
    assert len(calls) == 3 and res.retries == 2 and not res.deferred
    on_disk, referenced = _data_files(t)
    assert on_disk == referenced
    assert len(referenced) == 1 and t.count("u") == 12 - 2


def test_a_merge_whose_fragments_another_process_merged_and_deleted_plans_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a pass rewrites, another store (as another process would) compacts the same
    fragments and deletes the version the pass planned at: the rewrite finds its files gone, and
    the pass plans again at the latest version instead of failing."""
    cfg = StoreConfig(compact_every=0, cleanup_grace=timedelta(0))
    t = mindcore.open(tmp_path, config=cfg).table("t", COLUMNS)
    _small_writes(t, 12)
    other = mindcore.open(tmp_path, config=cfg).open_table("t")
    real = table_module._rewrite
    calls: list[int] = []  # the rewrites of ``t``'s pass (the other store's run through the same function)
    overtaking = threading.Event()

    def overtaken(ds: Any, plan: Any) -> list[Any]:
        if not overtaking.is_set():
            calls.append(plan.num_tasks())
            if len(calls) == 1:
                overtaking.set()
                other.compact()  # merges the fragments and deletes every other version, files and all
                overtaking.clear()
        return real(ds, plan)

    monkeypatch.setattr(table_module, "_rewrite", overtaken)
    res = t.compact()
    assert calls == [1] and res.retries == 1 and not res.deferred  # planned again: nothing left to merge
    assert t.count("u") == 12 and t.stats().fragments == 1
    on_disk, referenced = _data_files(t)
    assert on_disk == referenced


def test_a_merge_that_keeps_conflicting_leaves_no_file_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = StoreConfig(compact_every=0, cleanup_grace=timedelta(0))
    t = mindcore.open(tmp_path, config=cfg).table("t", COLUMNS)
    _small_writes(t, 12)
    _conflict_on_rewrites(t, monkeypatch, conflicting=RETRIES + 1)
    assert t.compact().deferred
    on_disk, referenced = _data_files(t)
    assert on_disk == referenced  # only the writes' own files, every one still in use


def test_a_deferred_merge_runs_again_without_another_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passes: Passes
) -> None:
    """Background maintenance: the scheduled pass conflicts on every attempt and is deferred;
    no write follows, yet the merge happens before ``wait_for_maintenance`` returns."""
    cfg = StoreConfig(compact_every=12, cleanup_grace=timedelta(0))
    store = mindcore.open(tmp_path, config=cfg)
    t = store.table("t", COLUMNS)
    _conflict_on_rewrites(t, monkeypatch, conflicting=RETRIES + 1)
    _small_writes(t, 12)  # the 12th write schedules the pass
    store.wait_for_maintenance()
    first, *rest = passes.of("t")
    assert isinstance(first, CompactionResult) and first.deferred
    assert rest and isinstance(rest[-1], CompactionResult) and not rest[-1].deferred
    assert rest[-1].fragments_removed > 0
    assert t.stats().fragments == 1
    assert t.count("u") == 12 - (RETRIES + 1)
    store.close()


def test_a_follow_up_deletes_the_versions_the_grace_kept(tmp_path: Path, passes: Passes) -> None:
    """No write after the scheduled pass: once the grace has passed, one follow-up pass deletes
    every old version (and their files), and it is the last."""
    cfg = StoreConfig(compact_every=10, cleanup_grace=timedelta(seconds=0.2))
    store = mindcore.open(tmp_path, config=cfg)
    t = store.table("t", COLUMNS)
    _small_writes(t, 10)
    store.wait_for_maintenance()
    assert len(passes.of("t")) == 1
    passes.wait_for("t", 2)  # the follow-up, cleanup_grace later
    store.wait_for_maintenance()  # ...and what it left owed, if anything
    follow_up = passes.of("t")[1]
    assert isinstance(follow_up, CompactionResult) and not follow_up.deferred
    assert t.stats().versions == 1
    on_disk, referenced = _data_files(t)
    assert on_disk == referenced and len(referenced) == 1
    assert not store._maint._due  # nothing left to follow up: the follow-ups end
    store.close()


def _failing_first(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> list[str]:
    """The first maintenance pass raises ``error``; the others run. Returns the tables passed."""
    real = Table._maintain
    calls: list[str] = []

    def maintain(self: Table, *args: Any, **kwargs: Any) -> CompactionResult:
        calls.append(self.name)
        if len(calls) == 1:
            raise error
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Table, "_maintain", maintain)
    return calls


def test_a_conflict_raised_by_a_pass_is_rerun_without_a_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    calls = _failing_first(monkeypatch, OSError("Retryable commit conflict for version 660: This Rewrite "
                                                "transaction was preempted by concurrent transaction Update"))
    store = mindcore.open(tmp_path, config=StoreConfig(compact_every=5, cleanup_grace=timedelta(0)))
    t = store.table("t", COLUMNS)
    _small_writes(t, 5)
    store.wait_for_maintenance()
    assert calls == ["t", "t"] and t.stats().fragments == 1
    assert not caplog.records
    store.close()


def test_a_failing_pass_is_one_warning_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Not a conflict (here a full disk): one line at WARNING naming the table and the error, the
    traceback only at DEBUG; the writer is not affected and the next scheduled pass runs."""
    caplog.set_level(logging.DEBUG, logger="mindcore.store")
    calls = _failing_first(monkeypatch, OSError(28, "No space left on device"))
    store = mindcore.open(tmp_path, config=StoreConfig(compact_every=5, cleanup_grace=timedelta(0)))
    t = store.table("t", COLUMNS)
    _small_writes(t, 5)
    store.wait_for_maintenance()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.getMessage(), r.exc_info) for r in warnings] == [
        ("compaction of table 't' failed (the next pass tries again): [Errno 28] No space left on device", None)]
    assert any(r.exc_info for r in caplog.records if r.levelno == logging.DEBUG)
    assert calls == ["t"]
    _small_writes(t, 5)
    store.wait_for_maintenance()
    assert calls == ["t", "t"] and t.stats().fragments == 1
    store.close()


# -- the whole path, from four threads ---------------------------------------------------------------

THREADS = 4
#: Maintenance passes of the memory table to see while the writers run.
PASSES = 6
#: Each writer stops after this many turns even if maintenance never ran (the test then fails).
MAX_TURNS = 400


@pytest.fixture
def quiet(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.WARNING)
    yield caplog


def test_four_threads_remember_and_recall_while_maintenance_runs(
    tmp_path: Path, passes: Passes, quiet: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """Recalls and writes from 4 threads through LongTermMemory (dedupe updates rows, recalls
    bump their last access) while background maintenance runs with the default settings: nothing
    is logged at WARNING or printed, every pass that could not merge is run again, and after the
    writes stop one pass past the grace leaves the memory table as compact as a fresh table holding
    the same rows."""
    ltm = LongTermMemory(tmp_path / "store", user_id="u", namespace="n", embedder=HashEmbedder(), touch_delay=0.05)
    memories = "ltm_memories"
    errors: list[BaseException] = []
    turns = [0] * THREADS

    def writer(k: int) -> None:
        try:
            for i in range(MAX_TURNS):
                if len(passes.of(memories)) >= PASSES:
                    return
                ltm.remember(f"writer {k} noted fact {i} about topic {i % 13} in colour {i % 5}")
                ltm.recall(f"topic {i % 13}", k=3)
                turns[k] += 1
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(passes.of(memories)) >= PASSES, f"only {passes.of(memories)} passes in {turns} turns"
    ltm.flush()  # the last recalls' bumps
    ltm.store.wait_for_maintenance()

    # No pass raised, and each table's last pass merged (no deferred merge left without a rerun).
    for name in {n for n, _ in passes.seen}:
        results = passes.of(name)
        assert not [r for r in results if isinstance(r, BaseException)], results
        assert not results[-1].deferred, (name, results)  # type: ignore[union-attr]
    assert not quiet.records, [r.getMessage() for r in quiet.records]
    out, err = capfd.readouterr()
    assert err == "" and out == ""

    # One pass past the grace (as the follow-up does cleanup_grace later).
    ltm.store.compact(cleanup_grace=timedelta(0))
    t = ltm.store.open_table(memories)
    again = t.compact(cleanup_grace=timedelta(0))
    assert again.fragments_removed == 0  # nothing left for a second pass to merge
    on_disk, referenced = _data_files(t)
    assert on_disk == referenced

    # The same rows written at once into a fresh memory, then compacted.
    with LongTermMemory(tmp_path / "fresh", user_id="u", namespace="n", embedder=HashEmbedder()) as other:
        fresh = other.store.open_table(memories)
        fresh.write_batch(t.scan_arrow(ALL_NAMESPACES))
        fresh.compact(cleanup_grace=timedelta(0))
        # Tiered compaction may leave a few fragments where the bulk write has one (Lance merges
        # only neighbouring small fragments; one between two bigger ones waits for the next
        # tier): what must match is the bytes.
        disk, fresh_disk = (folder_bytes(os.path.join(x.store.uri, f"{memories}.lance")) for x in (t, fresh))
        assert disk <= 1.25 * fresh_disk, (disk, fresh_disk)
    assert t.count(ALL_NAMESPACES) == len(ltm.memories())
    ltm.close()


def test_a_table_deleted_from_disk_ends_its_maintenance_without_a_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A store left open while its folder is deleted (a temporary folder, say): the pass that finds
    the table gone logs nothing at WARNING and owes no follow-up."""
    import shutil

    caplog.set_level(logging.WARNING)
    real = Table._maintain
    calls: list[str] = []

    def delete_then_maintain(self: Table, *args: Any, **kwargs: Any) -> CompactionResult:
        calls.append(self.name)
        shutil.rmtree(os.path.join(self.store.uri, f"{self.name}.lance"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Table, "_maintain", delete_then_maintain)
    store = mindcore.open(tmp_path / "s", config=StoreConfig(compact_every=5, cleanup_grace=timedelta(seconds=60)))
    t = store.table("t", COLUMNS)
    _small_writes(t, 5)
    store.wait_for_maintenance()
    assert calls == ["t"] and not caplog.records
    assert not store._maint._due  # no follow-up owed for a table that is gone
    store.close()


# -- readers in another process while maintenance deletes versions -------------------------------------

READER = r"""
import json, os, sys
import mindcore
uri, stop = sys.argv[1], sys.argv[2]
t = mindcore.open(uri).open_table("notes")
print("ready", flush=True)
reads = 0
while True:
    done = os.path.exists(stop)  # looked at before the reads: the last round reads every write
    counts = [t.count("u"), len(t.scan("u", columns=["id", "text"])), t.cached("u").n,
              t.cached_many(["u"])["u"].n]
    reads += 1
    if done:
        break
print(json.dumps({"reads": reads, "final": counts}), flush=True)
"""


def test_a_reader_in_another_process_reads_on_while_maintenance_deletes_versions(tmp_path: Path) -> None:
    """Steady single writes with a short grace: maintenance deletes versions while another
    process reads the table as fast as it can, and that process's counts, scans and cached reads
    go on without an error. (On object storage, where a reader may keep an old version, a read
    whose version's files are gone reads the latest one: ``tests/test_purge.py``.)"""
    uri = tmp_path / "store"
    store = mindcore.open(uri, config=StoreConfig(compact_every=4, cleanup_grace=timedelta(seconds=2)))
    t = store.table("notes", {"text": pa.string()})
    t.upsert("u", [{"id": "first", "text": "first"}])
    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    reader = subprocess.Popen([sys.executable, "-c", READER, str(uri), str(stop)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    assert reader.stdout is not None
    assert reader.stdout.readline().strip() == "ready", reader.communicate(timeout=PATIENCE)[1]
    # Write until maintenance has deleted 50 versions made after the reader started reading.
    first_read = t.version
    writes = 1
    while _oldest_version(uri / "notes.lance") <= first_read + 50:
        assert writes < 20_000, "maintenance deleted no version in 20,000 writes"
        for _ in range(20):
            t.upsert("u", [{"id": f"n{writes}", "text": f"note {writes} " + "x" * 2_000}])
            writes += 1
    store.wait_for_maintenance()
    stop.touch()
    out, err = reader.communicate(timeout=PATIENCE)
    assert reader.returncode == 0, err
    assert err == ""
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["final"] == [writes] * 4 and summary["reads"] >= 1
    store.close()


def _oldest_version(dataset: Path) -> int:
    """The oldest version a Lance dataset keeps, from its manifests' names (Lance names each
    ``2**64 - 1 - version``), which, unlike listing versions, cannot race with a cleanup."""
    return min(2**64 - 1 - int(f.stem) for f in (dataset / "_versions").glob("*.manifest"))
