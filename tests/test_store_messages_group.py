"""MessageLog's group commit and its bounded view cache.

Plain appends queued at the same time, to different logs, go to the table in one commit, each
caller getting its own contiguous seq range; seq stays gap-free per log also when another process
appends to the same logs; a failed commit fails every append of its group and stores none. The
views kept per log are bounded, and an evicted log still reads and appends correctly.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _forkserver import fork_context
from _msglog_procs import LOGS, append_many

import mindcore
from mindcore.store import Store
from mindcore.store.messages import MessageLog

Acked = tuple[str, int, int, list[str]]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assert_logs_hold_exactly(log: MessageLog, acked: list[Acked]) -> None:
    """Every acknowledged append is in its log once, at the seq range it was given, and the logs
    hold nothing else: seq runs 1..n with no gap per log."""
    expected: dict[str, dict[int, str]] = {}
    for name, first, last, contents in acked:
        assert last - first + 1 == len(contents)
        for seq, content in zip(range(first, last + 1), contents, strict=True):
            assert seq not in expected.setdefault(name, {}), f"{name}: seq {seq} acknowledged twice"
            expected[name][seq] = content
    for name, want in expected.items():
        page = log.page(name, limit=10_000)
        assert [m["seq"] for m in page.messages] == list(range(1, len(want) + 1)), name
        assert {m["seq"]: m["content"] for m in page.messages} == want, name


class hold_commits:
    """Keep the log's appends queued, as while another thread commits (its group commit then
    has a leader), until the block ends: they are then committed as groups, not one by one as
    they arrive."""

    def __init__(self, log: MessageLog) -> None:
        self.log = log

    def __enter__(self) -> None:
        with self.log._group:
            assert not self.log._leading
            self.log._leading = True

    def __exit__(self, *exc: object) -> None:
        with self.log._group:
            self.log._leading = False
            self.log._group.notify_all()


def wait_queued(log: MessageLog, n: int, done: threading.Event) -> None:
    while len(log._queue) < n:
        assert not done.wait(0.001), "an append finished before the queue filled"


def test_appends_of_many_threads_to_many_logs_share_commits(store: Store) -> None:
    log = MessageLog(store, "chat_messages")
    log.append("a", [user("before")])
    acked: list[Acked] = []
    failed: list[BaseException] = []
    finished = threading.Event()
    threads, rounds, logs = 16, 6, [f"log-{i}" for i in range(8)]

    def client(t: int) -> None:
        try:
            for r in range(rounds):
                name = logs[(t + r) % len(logs)]
                contents = [f"{t}-{r}-{k}" for k in range(1 + (t + r) % 3)]
                first, last = log.append(name, [user(c) for c in contents])
                acked.append((name, first, last, contents))
        except BaseException as e:
            failed.append(e)
            finished.set()

    commits = store.commits
    workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    with hold_commits(log):
        for w in workers:
            w.start()
        wait_queued(log, threads, finished)  # every thread's first append waits in the queue
    for w in workers:
        w.join()
    assert failed == []
    assert len(acked) == threads * rounds
    assert_logs_hold_exactly(log, [("a", 1, 1, ["before"]), *acked])
    # The 16 first appends, queued to 8 logs, take two commits (one append per log each); the
    # others at most one each.
    assert store.commits - commits <= 2 + threads * (rounds - 1) < threads * rounds


def test_two_appends_to_one_log_in_the_queue_keep_their_order(store: Store) -> None:
    log = MessageLog(store, "chat_messages")
    results: dict[int, tuple[int, int]] = {}
    finished = threading.Event()

    def client(i: int) -> None:
        results[i] = log.append("chat", [user(f"{i}-0"), user(f"{i}-1")])

    workers = []
    with hold_commits(log):
        for i in range(3):  # queued one after the other: the queue order is 0, 1, 2
            workers.append(threading.Thread(target=client, args=(i,)))
            workers[-1].start()
            wait_queued(log, i + 1, finished)
    for w in workers:
        w.join()
    assert results == {0: (1, 2), 1: (3, 4), 2: (5, 6)}
    assert log.view("chat").column("content") == ["0-0", "0-1", "1-0", "1-1", "2-0", "2-1"]


class _FailingCommit:
    """The log's table, except that its multi-log append fails as a commit can (a full disk)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def append_many(self, rows: Any) -> Any:
        raise OSError(28, "No space left on device")


def test_a_failed_commit_fails_its_whole_group_and_stores_none(store: Store) -> None:
    log = MessageLog(store, "chat_messages")
    log.append("a", [user("kept")])
    real = log.table
    log._table = _FailingCommit(real)  # type: ignore[assignment]
    errors: dict[str, BaseException] = {}
    finished = threading.Event()

    def client(name: str) -> None:
        try:
            log.append(name, [user(f"lost in {name}")])
        except BaseException as e:
            errors[name] = e

    workers = [threading.Thread(target=client, args=(name,)) for name in ("a", "b", "c")]
    with hold_commits(log):
        for w in workers:
            w.start()
        wait_queued(log, 3, finished)
    for w in workers:
        w.join()
    assert sorted(errors) == ["a", "b", "c"]
    assert all(isinstance(e, OSError) and e.errno == 28 for e in errors.values())
    log._table = real
    assert log.view("a").column("content") == ["kept"]
    assert len(log.view("b")) == 0 and len(log.view("c")) == 0
    assert real.count("a") == 1 and real.count("b") == 0 and real.count("c") == 0
    # Nothing was stored, so the callers' retries are safe: seq goes on with no gap.
    assert log.append("a", [user("retried")]) == (2, 2)
    assert log.append("b", [user("retried")]) == (1, 1)


@pytest.fixture(scope="module")
def procs() -> Iterator[Any]:
    yield from fork_context(["lancedb", "mindcore", "_msglog_procs"], os.path.dirname(os.path.abspath(__file__)))


def test_two_processes_appending_to_the_same_logs_leave_no_gap_and_no_duplicate(procs: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    with mindcore.open(path) as store:  # the table exists before the writers race to create it
        MessageLog(store, "chat_messages").append("setup", [user("x")])
    children = []
    for name in ("p", "q"):
        parent, child = procs.Pipe()
        p = procs.Process(target=append_many, args=(path, name, 6, 8, child), daemon=True)
        p.start()
        children.append((p, parent))
    for _, conn in children:
        assert conn.poll(120), "a writer did not start"
        assert conn.recv() == "ready"
    for _, conn in children:
        conn.send("go")
    acked: list[Acked] = []
    for p, conn in children:
        assert conn.poll(600), "a writer did not finish"
        done, got = conn.recv()
        assert done == "done"
        acked += got
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(acked) == 2 * 6 * 8
    with mindcore.open(path) as store:
        log = MessageLog(store, "chat_messages")
        assert_logs_hold_exactly(log, acked)
        assert sorted({a[0] for a in acked}) == sorted(LOGS)


def test_views_are_kept_for_at_most_max_views_logs(store: Store) -> None:
    log = MessageLog(store, "chat_messages", max_views=4)
    for i in range(10):
        log.append(f"log-{i}", [user(f"{i}-{k}") for k in range(i + 1)])
        log.view(f"log-{i}")
        assert len(log._views) <= 4
    assert list(log._views) == [f"log-{i}" for i in range(6, 10)]  # the most recently used
    assert [m["content"] for m in log.page("log-0").messages] == ["0-0"]  # evicted, read again
    assert log.append("log-1", [user("1-2")]) == (3, 3)
    assert log.view("log-1").column("content") == ["1-0", "1-1", "1-2"]
    assert len(log._views) == 4
    assert list(log._views)[-2:] == ["log-0", "log-1"]


def test_max_views_must_be_positive(store: Store) -> None:
    with pytest.raises(mindcore.errors.InvalidInputError):
        MessageLog(store, "chat_messages", max_views=0)


def test_views_are_kept_for_at_most_max_view_bytes_of_rows(store: Store) -> None:
    log = MessageLog(store, "chat_messages")
    log.append("log-0", [user("x" * 1000) for _ in range(50)])
    one = log.view("log-0").entry.nbytes
    log = MessageLog(store, "chat_messages", max_view_bytes=one * 5 // 2)  # room for two such logs
    for i in range(6):
        if i:
            log.append(f"log-{i}", [user("x" * 1000) for _ in range(50)])
        log.view(f"log-{i}")
        assert sum(v.entry.nbytes for v in log._views.values()) <= one * 5 // 2
    assert list(log._views) == ["log-4", "log-5"]
    assert len(log.page("log-0", limit=100).messages) == 50  # evicted, read again
    assert list(log._views) == ["log-5", "log-0"]
