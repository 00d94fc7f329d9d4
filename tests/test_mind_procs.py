"""kill -9 at random points while a process flushes run after run (>= 50 kills): the store
always opens, and holds all of a run's writes or none; nothing committed earlier is lost."""

from __future__ import annotations

import random
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _mind_procs as procs
from conftest import kill_forked_at, rounds

KILLS = rounds("MINDCORE_MIND_KILLS", default=20, full=50)


@pytest.fixture(scope="module")
def ctx() -> Iterator[Any]:
    yield from procs.fork_context()


def _tag_counts(path: Path) -> Counter[str]:
    mind = procs.open_mind(str(path), cleanup=False)
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
        # The child finishes `runs` flushes (its progress, never a delay, says when), then is
        # killed racing its next flush (at "start") or the run after it (at "end").
        runs = rnd.randint(0, 3)
        stop = ("start", "start", "end")[trial % 3]
        said = kill_forked_at(ctx, procs.flush_forever, (str(path), trial), "ready", *["end"] * runs, stop)
        events = [(kind, int(n)) for kind, n in (m.split() for m in said[1:])]
        if events[-1][0] == "start":
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
    # Two kills in three come as a flush starts: most land inside it.
    assert inside_flush >= KILLS // 4, f"only {inside_flush} of {KILLS} kills landed inside a flush"
    print(f"{KILLS} kills, {inside_flush} inside a flush")
