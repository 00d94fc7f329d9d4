"""Working memory across real processes: no lost updates between two writers, no torn state
after a ``kill -9`` mid-update.

Updates are serialised by the store's per-table write lock (``Table.modify``): the lock is held
from reading the stored state to committing the merged one, so concurrent writers queue instead
of overwriting each other.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

from conftest import kill_at, start_together

import mindcore
from mindcore.working import WorkingMemory

UPDATER = r"""
import sys
import mindcore
from mindcore.working import WorkingMemory

path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
wm = WorkingMemory(mindcore.open(path), thread_id=f"thread-{who}", resource_id="user-1",
                   scope="resource", schema={"type": "object"}, max_tokens=100_000)
print("ready", flush=True)
sys.stdin.readline()  # start together
for i in range(n):
    wm.update({who: {f"k{i}": i}})
"""

TEXT_WRITER = r"""
import hashlib, sys
import mindcore
from mindcore.working import WorkingMemory

wm = WorkingMemory(mindcore.open(sys.argv[1]), thread_id="t", max_tokens=1_000_000)
i = 0
while True:
    body = f"v{i}:" + "abcdefgh" * (500 + i % 700)
    print("updating", flush=True)
    wm.update({"content": body + "|" + hashlib.sha256(body.encode()).hexdigest()})
    print("updated", flush=True)
    i += 1
"""


def test_two_processes_lose_no_update(tmp_path: Path) -> None:
    n = 200
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", UPDATER, str(tmp_path), who, str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for who in ("a", "b")
    ]
    start_together(procs)
    for p in procs:
        assert p.wait(timeout=600) == 0
    state = WorkingMemory(mindcore.open(tmp_path), thread_id="x", resource_id="user-1", scope="resource",
                          schema={"type": "object"}).state
    assert isinstance(state, dict)
    for who in ("a", "b"):
        assert state[who] == {f"k{i}": i for i in range(n)}


def _intact(content: str) -> bool:
    body, _, digest = content.rpartition("|")
    return body.startswith("v") and hashlib.sha256(body.encode()).hexdigest() == digest


def test_kill_during_update_leaves_old_or_new_state(tmp_path: Path) -> None:
    rng = random.Random(7)
    seen: list[int] = []
    for trial in range(6):
        # The writer makes `updates` updates (its progress, never a delay, says when), then is
        # killed racing its next update (at "updating") or the start of the one after (at "updated").
        updates = rng.randint(1, 20)
        kill_at([sys.executable, "-c", TEXT_WRITER, str(tmp_path)], dict(os.environ),
                *["updating", "updated"] * updates, *(["updating"] if trial % 2 else []))
        # A fresh reader in a fresh process state: the stored text is one whole update.
        wm = WorkingMemory(mindcore.open(tmp_path), thread_id="t", max_tokens=1_000_000)
        state = wm.state
        assert isinstance(state, str)
        if state:
            assert _intact(state), state[:80]
            seen.append(int(state[1 : state.index(":")]))
        # and the memory keeps working after the crash
        wm.update({"content": "after crash"})
        assert WorkingMemory(mindcore.open(tmp_path), thread_id="t").state == "after crash"
    assert seen, "the writer never committed an update before being killed"

