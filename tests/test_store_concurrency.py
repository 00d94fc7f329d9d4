"""Crash safety and concurrent writers, with real processes.

* A unit of work commits as one version: writers killed with SIGKILL at random points leave
  either all of a unit or none of it, and the table always opens.
* Two processes upserting the same new ids never create duplicate rows (the table's write lock),
  and concurrent writers lose nothing.
"""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import HANG, kill_at, rounds, start_together

import mindcore
from mindcore.store import StoreConfig, col

TRIALS = rounds("MINDCORE_STORE_KILL_TRIALS", default=8, full=16)

WRITER = r"""
import sys
from datetime import timedelta
import mindcore, pyarrow as pa
from mindcore.store import StoreConfig, col

# Compact inline every 3 commits and delete old versions at once, so kills also land inside
# compaction and cleanup.
cfg = StoreConfig(compact_every=3, compact_in_background=False, cleanup_grace=timedelta(0))
t = mindcore.open(sys.argv[1], config=cfg).table("runs", {"batch": pa.int64(), "payload": pa.string()})
b = max((r["batch"] for r in t.scan("ns", columns=["batch"])), default=0) + 1
print("ready", flush=True)
while True:
    with t.unit_of_work("ns") as uow:
        uow.upsert([{"id": f"b{b}-{j}", "batch": b, "payload": "x" * 200} for j in range(20)])
        uow.update([f"b{b - 1}-0"], {"payload": f"touched-{b}"})
        uow.delete(where=col("batch").le(b - 2))
        print("committing", flush=True)  # the block ends: the unit commits (and every 3rd compacts)
    print("committed", flush=True)
    b += 1
"""


def _check_state(path: Path) -> int:
    """The table holds exactly the state after some whole number of units; returns that number."""
    t = mindcore.open(path).table("runs", {"batch": pa.int64(), "payload": pa.string()})
    rows = t.scan("ns")
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate rows"
    if not rows:
        return 0
    last = max(r["batch"] for r in rows)
    by_batch: dict[int, list[dict[str, object]]] = {}
    for r in rows:
        by_batch.setdefault(int(r["batch"]), []).append(r)
    expected_batches = {last} if last == 1 else {last - 1, last}
    assert set(by_batch) == expected_batches, sorted(by_batch)
    for b, rs in by_batch.items():
        assert sorted(str(r["id"]) for r in rs) == sorted(f"b{b}-{j}" for j in range(20))
        for r in rs:
            touched = b == last - 1 and r["id"] == f"b{b}-0"
            assert r["payload"] == (f"touched-{last}" if touched else "x" * 200), (r["id"], r["payload"])
    return last


def test_units_of_work_survive_kill_9(tmp_path: Path) -> None:
    rnd = random.Random(1234)
    path = tmp_path / "db"
    progress = []
    for trial in range(TRIALS):
        # The writer commits `units` units (its progress, never a delay, says when), then is killed
        # racing the commit of the next (at "committing") or the start of the one after (at "committed").
        units = rnd.randint(1, 3)
        before = progress[-1] if progress else 0
        kill_at([sys.executable, "-c", WRITER, str(path)], dict(os.environ),
                "ready", *["committing", "committed"] * units, *(["committing"] if trial % 2 else []))
        progress.append(_check_state(path))
        assert progress[-1] >= before + units, progress  # every unit it said it committed is there


SAME_IDS = r"""
import sys, mindcore, pyarrow as pa
path, who, mode = sys.argv[1], sys.argv[2], sys.argv[3]
t = mindcore.open(path).table("t", {"who": pa.string()})
print("ready", flush=True)
sys.stdin.readline()  # start together
for i in range(60):
    key = f"k{i}" if mode != "distinct" else f"{who}{i}"
    if mode == "insert_new":
        t.insert_new("ns", [{"id": key, "who": who}])
    else:
        t.upsert("ns", [{"id": key, "who": who}])
"""


def _race(path: Path, mode: str) -> list[dict[str, object]]:
    store = mindcore.open(path, config=StoreConfig(compact_every=0))
    t = store.table("t", {"who": pa.string()})
    t.upsert("warm", [{"id": f"w{i}"} for i in range(500)])  # a table with data and its index
    procs = [
        subprocess.Popen([sys.executable, "-c", SAME_IDS, str(path), who, mode],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for who in ("A", "B")
    ]
    start_together(procs)
    for p in procs:
        assert p.wait(timeout=HANG) == 0
    return t.scan("ns")


@pytest.mark.parametrize("mode", ["upsert", "insert_new"])
def test_two_processes_same_new_ids_make_no_duplicates(tmp_path: Path, mode: str) -> None:
    rows = _race(tmp_path, mode)
    ids = [r["id"] for r in rows]
    assert sorted(set(ids)) == sorted(f"k{i}" for i in range(60))
    assert len(ids) == 60, f"{len(ids) - 60} duplicate rows"
    assert {r["who"] for r in rows} <= {"A", "B"}


def test_two_processes_lose_nothing(tmp_path: Path) -> None:
    rows = _race(tmp_path, "distinct")
    assert sorted(r["id"] for r in rows) == sorted([f"A{i}" for i in range(60)] + [f"B{i}" for i in range(60)])


def test_lock_timeout_is_an_error(tmp_path: Path) -> None:
    import fcntl

    from mindcore.store import LockTimeoutError

    t = mindcore.open(tmp_path, config=StoreConfig(lock_timeout=0.3)).table("t")
    lock_file = tmp_path / "_mindcore_locks" / "t.lock"
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another holder (a separate open file description)
        with pytest.raises(LockTimeoutError, match="table 't'"):
            t.upsert("ns", [{"id": "a"}])
    finally:
        os.close(fd)
    t.upsert("ns", [{"id": "a"}])
    assert t.count("ns", col("id").eq("a")) == 1


# -- Store.lock: named locks shared by threads and processes ------------------------------------

LOCKED_COUNTER = r"""
import sys, time
import mindcore

store = mindcore.open(sys.argv[1])
counter = sys.argv[2]
for _ in range(int(sys.argv[3])):
    with store.lock("counter").hold(timeout=60):
        n = int(open(counter).read())
        time.sleep(0.002)  # widen the read-modify-write window: unlocked, increments would be lost
        open(counter, "w").write(str(n + 1))
"""


@pytest.mark.parametrize("uri", ["folder", "memory://"])
def test_store_lock_serialises_threads(tmp_path: Path, uri: str) -> None:
    store = mindcore.open(tmp_path if uri == "folder" else uri)
    held: list[tuple[float, float]] = []

    def work() -> None:
        for _ in range(20):
            with store.lock("job").hold(timeout=30):
                start = time.monotonic()
                time.sleep(0.002)
                held.append((start, time.monotonic()))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    held.sort()
    assert len(held) == 40
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(held)), "overlap"


def test_store_lock_serialises_processes(tmp_path: Path) -> None:
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    procs = [
        subprocess.Popen([sys.executable, "-c", LOCKED_COUNTER, str(tmp_path / "db"), str(counter), "40"])
        for _ in range(2)
    ]
    for p in procs:
        assert p.wait(timeout=300) == 0
    assert counter.read_text() == "80"  # no increment lost


def test_store_lock_times_out(tmp_path: Path) -> None:
    from mindcore.store import LockTimeoutError

    store = mindcore.open(tmp_path, config=StoreConfig(lock_timeout=0.2))
    taken, release = threading.Event(), threading.Event()

    def holder() -> None:
        with store.lock("job").hold():
            taken.set()
            release.wait(10)

    th = threading.Thread(target=holder)
    th.start()
    try:
        assert taken.wait(10)
        t0 = time.monotonic()
        with pytest.raises(LockTimeoutError, match="lock 'job'"), store.lock("job").hold():
            pass  # the store's lock_timeout (0.2 s) applies when hold() is given none
        assert 0.15 < time.monotonic() - t0 < 30  # its 0.2 s, not the default 60 s
        with pytest.raises(LockTimeoutError), store.lock("job").hold(timeout=0.05):
            pass
    finally:
        release.set()
        th.join()
    with store.lock("job").hold(timeout=1):  # released: taken at once
        pass


def test_store_lock_of_a_table_name_is_its_write_lock(tmp_path: Path) -> None:
    from mindcore.store import LockTimeoutError

    store = mindcore.open(tmp_path, config=StoreConfig(lock_timeout=0.2))
    t = store.table("t")
    assert store.lock("t") is store.lock("t")
    done = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            t.upsert("ns", [{"id": "a"}])
        except BaseException as e:
            errors.append(e)
        done.set()

    with store.lock("t").hold():
        th = threading.Thread(target=writer)
        th.start()
        assert done.wait(10)
    th.join()
    assert len(errors) == 1 and isinstance(errors[0], LockTimeoutError)
    t.upsert("ns", [{"id": "a"}])
    assert t.count("ns") == 1


@pytest.mark.parametrize("name", ["", "../escape", "a/b", ".hidden", "x" * 129, 7])
def test_store_lock_names_are_checked(name: object) -> None:
    with pytest.raises(ValueError, match="lock name"):
        mindcore.open("memory://").lock(name)  # type: ignore[arg-type]


def test_a_read_that_sees_another_threads_write_before_its_patch_waits_for_the_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LanceDB writes the new version before the writer carries its rows into the namespace held in
    # memory. A read on another thread in between must not read the whole namespace again (seconds
    # at 100k rows): it waits for the writer's patch, which holds the rows of the version it saw.
    # (A folder: a reader there sees a version on disk as soon as LanceDB has written it.)
    t = mindcore.open(tmp_path).table("notes", {"text": pa.string()})
    t.upsert("u", [{"id": f"n{i}", "text": f"note {i}"} for i in range(50)])
    t.cached("u")
    on_disk, reader_waiting = threading.Event(), threading.Event()
    real_add, real_wait = t._tbl.add, t._ctx.cache.wait_committed

    def add_then_pause(*args: object, **kwargs: object) -> object:
        out = real_add(*args, **kwargs)
        on_disk.set()
        reader_waiting.wait(HANG)  # the reader is reading before the patch
        return out

    def waiting(*args: object, **kwargs: object) -> bool:
        reader_waiting.set()
        return bool(real_wait(*args, **kwargs))

    monkeypatch.setattr(t._tbl, "add", add_then_pause)
    monkeypatch.setattr(t._ctx.cache, "wait_committed", waiting)
    got: dict[str, object] = {}

    def read() -> None:
        on_disk.wait(HANG)
        got["version"] = t.version
        got["entry"] = t.cached("u")

    reader = threading.Thread(target=read)
    reader.start()
    t.upsert("u", [{"id": "new", "text": "a new note"}])
    reader.join(HANG)
    entry = t.cached("u")
    assert got["entry"] is entry  # the writer's patch, not a second read of the namespace
    assert got["version"] == entry.version == t.version and entry.n == 51
    assert reader_waiting.is_set()  # it had seen the new version: it waited for the commit
