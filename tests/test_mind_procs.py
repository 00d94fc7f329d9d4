"""Reliability of mindcore.mind with real processes.

* kill -9 at random points while a process flushes run after run (>= 50 kills): the store always
  opens, and holds all of a run's writes or none; nothing committed earlier is lost.
* Two processes run the same agent at once (>= 200 runs each): no write is lost, and no table
  version ever holds more active goals or pinned reflections than the caps.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _mind_procs as procs  # noqa: E402

KILLS = int(os.environ.get("MINDCORE_MIND_KILLS", "50"))
RUNS = int(os.environ.get("MINDCORE_MIND_RUNS", "200"))


@pytest.fixture(scope="module")
def ctx() -> Any:
    if sys.platform != "linux":
        pytest.skip("fork server and SIGKILL tests run on Linux")
    c = multiprocessing.get_context("forkserver")
    c.set_forkserver_preload(["_mind_procs"])
    return c


def _tag_counts(path: Path) -> Counter[str]:
    mind = procs.open_mind(str(path), compact=False)
    try:
        entries = [*mind.beliefs(), *mind.reflections()]
        return Counter(t for e in entries for t in e.tags)
    finally:
        mind.store.close()


def test_kill_9_during_flush_leaves_all_or_nothing(ctx: Any, tmp_path: Path) -> None:
    path = tmp_path / "killed"
    rnd = random.Random(4)
    committed: set[str] = set()  # runs whose flush finished before a kill
    inside_flush = 0
    for trial in range(KILLS):
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=procs.flush_forever, args=(str(path), trial, send), daemon=True)
        p.start()
        send.close()
        assert recv.poll(60), "child did not start"
        assert recv.recv() == ("ready", -1)
        time.sleep(rnd.uniform(0.02, 0.35))
        os.kill(p.pid, signal.SIGKILL)
        p.join(10)
        events: list[tuple[str, int]] = []
        while recv.poll(0):
            try:
                events.append(recv.recv())
            except EOFError:
                break
        recv.close()
        if events and events[-1][0] == "start":
            inside_flush += 1
        ended = {n for kind, n in events if kind == "end"}
        counts = _tag_counts(path)
        per_run = procs.PER_RUN + 1
        for tag, n in counts.items():
            assert n == per_run, f"run {tag} is partly stored ({n} of {per_run} entries)"
        mine = {t for t in counts if t.startswith(f"k{trial}-")}
        assert {f"k{trial}-r{n}" for n in ended} <= mine  # every finished flush is stored
        assert mine <= {f"k{trial}-r{n}" for n in ended} | {f"k{trial}-r{max(ended, default=-1) + 1}"}
        assert committed <= set(counts), "a kill lost earlier runs"
        committed |= set(counts)
    # The child spends most of its time flushing, so most kills land inside a flush.
    assert inside_flush >= KILLS // 4, f"only {inside_flush} of {KILLS} kills landed inside a flush"


def test_two_processes_running_the_same_agent(ctx: Any, tmp_path: Path) -> None:
    import lancedb

    path = tmp_path / "shared"
    mind = procs.open_mind(str(path), compact=False, max_goals=procs.CAP, max_pinned_reflections=procs.CAP)
    shared = mind.set_goal("The goal both processes report progress on")
    mind.store.close()

    pipes, workers = [], []
    for who, seed in (("a", 1), ("b", 2)):
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=procs.writer, args=(str(path), who, RUNS, shared, seed, send), daemon=True)
        p.start()
        send.close()
        pipes.append(recv)
        workers.append(p)
    logs: list[procs.WriterLog] = []
    for recv, p in zip(pipes, workers, strict=True):
        assert recv.poll(600), "writer did not finish"
        logs.append(recv.recv())
        p.join(30)
        assert p.exitcode == 0

    mind = procs.open_mind(str(path), compact=False, max_goals=procs.CAP, max_pinned_reflections=procs.CAP)
    # beliefs: every one stored, none twice
    contents = Counter(b.content for b in mind.beliefs())
    assert all(contents[t] == 1 for log in logs for t in log.beliefs)
    assert sum(contents.values()) == 2 * RUNS
    # reflections: all of them
    stored = {r.id for r in mind.reflections()}
    assert {i for log in logs for i in log.reflections} <= stored and len(stored) == 2 * RUNS
    # the read-modify-write of the shared goal lost no progress note, and kept each writer's order
    g = mind.get(shared)
    assert g is not None
    notes = g.to_dict()["progress"]
    assert Counter(notes) == Counter(n for log in logs for n in log.progress)
    for log in logs:
        assert [n for n in notes if n.split(":")[0] == log.progress[0].split(":")[0]] == log.progress
    # goals: each one accepted and not refused at flush is stored; completions stuck
    goals = {x.id: x for x in mind.goals("all")}
    dropped = " ".join(d for log in logs for d in log.dropped)
    for log in logs:
        for gid in log.goals:
            assert gid in goals or gid in dropped
        for gid in log.completed:
            assert goals[gid].status == "completed"
    assert sum(len(log.goals) for log in logs) > RUNS // 10  # the caps left room for real work
    mind.store.close()

    # caps: check every version of the table
    db = lancedb.connect(str(path))
    tbl = db.open_table("mind_entries")
    versions = [v["version"] for v in tbl.list_versions()]
    assert len(versions) > 2 * RUNS
    worst_goals = worst_pins = 0
    for v in versions:
        tbl.checkout(v)
        if "type" not in tbl.schema.names:
            continue
        t = tbl.search().where("namespace = 'mind/proc-agent'").select(["type", "status", "pinned"]).limit(
            None).to_arrow().to_pylist()
        active = sum(1 for r in t if r["type"] == "goal" and r["status"] == "active")
        pins = sum(1 for r in t if r["type"] == "reflection" and r["pinned"])
        worst_goals, worst_pins = max(worst_goals, active), max(worst_pins, pins)
    assert worst_goals <= procs.CAP and worst_pins <= procs.CAP
    assert worst_goals == procs.CAP and worst_pins == procs.CAP  # the caps were actually reached
