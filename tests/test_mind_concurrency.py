"""Two processes run the same agent at once (>= 200 runs each): no write is lost, and no table
version ever holds more active goals or pinned reflections than the caps."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _mind_procs as procs
from conftest import HANG, rounds

RUNS = rounds("MINDCORE_MIND_RUNS", default=100, full=200)


@pytest.fixture(scope="module")
def ctx() -> Iterator[Any]:
    yield from procs.fork_context()


def _caps_at(path: Path, versions: list[int]) -> tuple[int, int]:
    """The most active goals and pinned reflections any of ``versions`` holds (read with
    LanceDB directly, not through mindcore)."""
    import lancedb

    tbl = lancedb.connect(str(path)).open_table("mind_entries")
    worst_goals = worst_pins = 0
    for v in versions:
        tbl.checkout(v)
        if "type" not in tbl.schema.names:
            continue
        rows = (tbl.search().where("namespace = 'mind/proc-agent'").select(["type", "status", "pinned"])
                .limit(None).to_arrow().to_pylist())
        worst_goals = max(worst_goals, sum(1 for r in rows if r["type"] == "goal" and r["status"] == "active"))
        worst_pins = max(worst_pins, sum(1 for r in rows if r["type"] == "reflection" and r["pinned"]))
    return worst_goals, worst_pins


def test_two_processes_running_the_same_agent(ctx: Any, tmp_path: Path) -> None:
    path = tmp_path / "shared"
    mind = procs.open_mind(str(path), cleanup=False, max_goals=procs.CAP, max_pinned_reflections=procs.CAP)
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
        p.join(HANG)
        assert p.exitcode == 0

    mind = procs.open_mind(str(path), cleanup=False, max_goals=procs.CAP, max_pinned_reflections=procs.CAP)
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

    # caps: check every version of the table (two readers, each over half of them)
    import lancedb

    versions = [v["version"] for v in lancedb.connect(str(path)).open_table("mind_entries").list_versions()]
    assert len(versions) > 2 * RUNS
    with ThreadPoolExecutor(2) as pool:
        worst = list(pool.map(lambda part: _caps_at(path, part), [versions[0::2], versions[1::2]]))
    worst_goals, worst_pins = max(w[0] for w in worst), max(w[1] for w in worst)
    assert worst_goals <= procs.CAP and worst_pins <= procs.CAP
    assert worst_goals == procs.CAP and worst_pins == procs.CAP  # the caps were actually reached
