"""Child-process bodies for tests/test_mind_procs.py.

They run in processes forked from a multiprocessing fork server that imported this module (and
with it LanceDB and mindcore) once, so a child starts in milliseconds instead of the seconds a
fresh interpreter needs to import LanceDB.
"""

from __future__ import annotations

import os
import random
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import _forkserver
import lancedb  # noqa: F401  (preloaded by the fork server)

import mindcore
import mindcore.kernels
from mindcore.embed import HashEmbedder
from mindcore.mind import Mind, MindConfig
from mindcore.store import StoreConfig

AGENT = "proc-agent"
PER_RUN = 6  # reflections written by each run of the kill test (plus one belief)
CAP = 3  # max_goals and max_pinned_reflections of the two-writer test


def fork_context() -> Iterator[Any]:
    """A ``forkserver`` context whose server has imported LanceDB, mindcore and this module
    (use as a module-scoped pytest fixture: ``yield from fork_context()``)."""
    yield from _forkserver.fork_context(["lancedb", "mindcore.mind", "mindcore.embed", "_mind_procs"])


def open_mind(path: str, *, cleanup: bool = True, **cfg: Any) -> Mind:
    """``cleanup``: compact every 4 writes and delete old versions at once (kills then also land
    inside compaction and cleanup); otherwise compact every 8 writes and keep every version."""
    grace = timedelta(0) if cleanup else timedelta(hours=1)
    store_cfg = StoreConfig(compact_every=4 if cleanup else 8, compact_in_background=False, cleanup_grace=grace)
    store = mindcore.open(path, config=store_cfg)
    return Mind(store, agent=AGENT, embedder=HashEmbedder(), config=MindConfig(**cfg))


def unique_text(tag: str) -> str:
    # Random hex is far from everything else for the hashing embedder: never deduplicated.
    return f"{tag} {uuid.uuid4().hex} {uuid.uuid4().hex}"


def flush_forever(path: str, trial: int, conn: Any) -> None:
    """Kill test body: run after run, each writing one belief and PER_RUN reflections tagged
    ``k<trial>-r<n>``; report its progress through ``conn``: ``"ready"``, then ``"start <n>"`` and
    ``"end <n>"`` around every flush."""
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115  (lancedb's fork warning)
    # Inline compaction with no grace period: kills also land inside compaction and cleanup.
    mind = open_mind(path)
    n = 0
    conn.send("ready")
    while True:
        tag = f"k{trial}-r{n}"
        run = mind.run()
        run.believe(unique_text(tag), tags=[tag])
        for _ in range(PER_RUN):
            run.reflect(unique_text(tag), tags=[tag])
        conn.send(f"start {n}")
        run.flush()
        conn.send(f"end {n}")
        n += 1


@dataclass
class WriterLog:
    beliefs: list[str] = field(default_factory=list)
    reflections: list[str] = field(default_factory=list)
    goals: list[str] = field(default_factory=list)  # set with status ok
    dropped: list[str] = field(default_factory=list)  # flush-time refusals
    completed: list[str] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)
    pins_refused: int = 0
    goals_refused: int = 0


def writer(path: str, who: str, runs: int, shared_goal: str, seed: int, conn: Any) -> None:
    """Two-writer test body: ``runs`` runs of the same agent, each believing, reflecting
    (sometimes pinned), setting, updating and completing goals; sends its log at the end."""
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    rnd = random.Random(seed)
    mind = open_mind(path, cleanup=False, max_goals=CAP, max_pinned_reflections=CAP)
    log = WriterLog()
    for i in range(runs):
        with mind.run() as run:
            text = unique_text(f"{who}-{i}")
            run.call("mind_believe", {"content": text})
            log.beliefs.append(text)
            r = run.call("mind_reflect", {"content": unique_text(f"{who}-{i}"), "pin": rnd.random() < 0.4})
            if r["status"] == "ok":
                log.reflections.append(r["id"])
            else:
                log.pins_refused += 1
                log.reflections.append(run.call("mind_reflect", {"content": unique_text(f"{who}-{i}")})["id"])
            if rnd.random() < 0.3:
                pinned = [x.id for x in mind.reflections(pinned=True)]
                if pinned:
                    run.call("mind_unpin_reflection", {"id": rnd.choice(pinned)})
            g = run.call("mind_set_goal", {"description": f"goal of {who} run {i}"})
            if g["status"] == "ok":
                log.goals.append(g["id"])
            else:
                log.goals_refused += 1
            note = f"{who}:{i}"
            if run.call("mind_update_goal", {"id": shared_goal, "progress": note})["status"] == "ok":
                log.progress.append(note)
            mine = [x.id for x in mind.goals() if x.id != shared_goal and x.description.startswith(f"goal of {who}")]
            if mine and rnd.random() < 0.5:
                gid = rnd.choice(mine)
                if run.call("mind_complete_goal", {"id": gid, "outcome": "done"})["status"] == "ok":
                    log.completed.append(gid)
        assert run.report is not None
        log.dropped += run.report.dropped
    conn.send(log)
