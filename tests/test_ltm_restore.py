"""Undoing a retirement: ``LongTermMemory.restore`` brings a retired memory back, ``retired()``
lists what can be brought back, and a write killed between its two commits (history, then
memories) leaves no false retirement behind. Real LanceDB stores on disk, the hashing embedder;
"Is not allergic to peanuts" supersedes "Is allergic to peanuts" (an explicit negation)."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import kill_at

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.errors import MemoryNotFoundError, MindcoreError
from mindcore.ltm import LongTermMemory, Memory
from mindcore.store import ALL_NAMESPACES

OLD = "Is allergic to peanuts"
NEW = "Is not allergic to peanuts"
PROCS = Path(__file__).with_name("_ltm_procs.py")


def make(path: Path, **kwargs: object) -> LongTermMemory:
    return LongTermMemory(mindcore.open(str(path)), user_id="u1", embedder=HashEmbedder(), **kwargs)  # type: ignore[arg-type]


def retire(ltm: LongTermMemory) -> tuple[Memory, Memory]:
    old = ltm.try_remember(OLD, kind="identity", importance=0.9, context="Doctor: any allergies?\nUser:")
    new = ltm.try_remember(NEW)
    assert old.memory is not None and new.memory is not None
    assert new.action == "superseded" and new.replaced is not None and new.replaced.id == old.memory.id
    return old.memory, new.memory


def raw_history(path: Path) -> list[tuple[str, str]]:
    """(memory_id, action) of every stored history row, oldest first, read around the memory API."""
    rows = mindcore.open(str(path)).open_table("ltm_history").scan(ALL_NAMESPACES, order_by="created_at")
    return [(str(r["memory_id"]), str(r["action"])) for r in rows]


def test_restore_brings_the_memory_back_whole_and_recall_finds_it(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s")
    old, new = retire(ltm)
    assert [m.text for m in ltm.recall("peanut allergy", k=5)] == [NEW]
    restored = ltm.restore(old.id)
    assert (restored.id, restored.text, restored.kind, restored.importance, restored.source, restored.context,
            restored.created_at) == (old.id, OLD, "identity", 0.9, "manual", old.context, old.created_at)
    assert ltm.get(old.id) == restored
    # Both are live: the successor that retired it stays.
    assert {m.text for m in ltm.recall("peanut allergy", k=5)} == {OLD, NEW}
    assert {m.id for m in ltm.memories()} == {old.id, new.id}
    assert ltm.retired() == []


def test_history_shows_the_retirement_and_the_restore(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s")
    old, new = retire(ltm)
    ltm.restore(old.id)
    for asked in (old.id, new.id):
        versions = [(v.memory_id, v.action) for v in ltm.history(asked)]
        assert versions == [(old.id, "created"), (old.id, "superseded"), (new.id, "created"), (old.id, "restored")]
    restored = ltm.history(old.id)[-1]
    assert restored.text == OLD and restored.successor_id == new.id and restored.reason == "undoes superseded"


def test_restoring_a_live_memory_changes_nothing(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s")
    old, new = retire(ltm)
    first = ltm.restore(old.id)
    events = raw_history(tmp_path / "s")
    assert ltm.restore(old.id) == first
    assert ltm.restore(new.id) == ltm.get(new.id)
    assert raw_history(tmp_path / "s") == events


def test_an_unknown_or_forgotten_id_raises_and_writes_nothing(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s")
    old, _ = retire(ltm)
    other = LongTermMemory(ltm.store, user_id="u2", embedder=HashEmbedder())
    versions = {t.name: t.version for t in ltm.store.stats().tables}
    for unknown in ("no-such-id", old.id):
        store_of = other if unknown == old.id else ltm  # another user's retired memory is unknown here
        with pytest.raises(MemoryNotFoundError) as caught:
            store_of.restore(unknown)
        assert isinstance(caught.value, MindcoreError) and isinstance(caught.value, KeyError)
        assert str(caught.value).startswith(f"memory_id: no memory {unknown!r} in long-term memory scope ltm:")
    assert {t.name: t.version for t in ltm.store.stats().tables} == versions
    assert ltm.forget(old.id)
    with pytest.raises(MemoryNotFoundError):
        ltm.restore(old.id)
    with pytest.raises(mindcore.errors.InvalidInputError):
        ltm.restore("")


def test_retired_lists_the_memories_retired_now_newest_first(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s")
    assert ltm.retired() == []
    old, new = retire(ltm)
    lyon = ltm.remember("Lives in Lyon")
    berlin = ltm.try_remember("Does not live in Lyon")
    assert lyon is not None and berlin.action == "superseded" and berlin.memory is not None
    retired = ltm.retired()
    assert [(v.memory_id, v.text, v.action, v.successor_id) for v in retired] == [
        (lyon.id, "Lives in Lyon", "superseded", berlin.memory.id), (old.id, OLD, "superseded", new.id)]
    assert all(v.reason for v in retired) and retired[0].at >= retired[1].at
    ltm.restore(old.id)
    assert [v.memory_id for v in ltm.retired()] == [lyon.id]
    assert [v.memory_id for v in asyncio.run(ltm.aretired())] == [lyon.id]
    assert asyncio.run(ltm.arestore(lyon.id)).text == "Lives in Lyon"
    assert ltm.retired() == []


def test_restore_after_reopening_the_store(tmp_path: Path) -> None:
    first = make(tmp_path / "s")
    old, _ = retire(first)
    first.store.close()
    again = make(tmp_path / "s")
    assert [v.memory_id for v in again.retired()] == [old.id]
    assert again.restore(old.id).text == OLD
    assert {m.text for m in make(tmp_path / "s").memories()} == {OLD, NEW}


def test_restore_in_another_process(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s")
    old, _ = retire(ltm)
    ltm.store.close()
    done = subprocess.run([sys.executable, str(PROCS), "restore", str(tmp_path / "s"), old.id],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"restored {old.id}: {OLD}"
    reopened = make(tmp_path / "s")
    assert {m.text for m in reopened.memories()} == {OLD, NEW}
    assert [v.action for v in reopened.history(old.id) if v.memory_id == old.id] == ["created", "superseded",
                                                                                      "restored"]


def test_forget_after_restore(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s")
    old, new = retire(ltm)
    ltm.restore(old.id)
    # The restored memory is no longer an earlier version of its successor: forgetting the
    # successor leaves it, and its history.
    assert ltm.forget(new.id)
    assert [m.id for m in ltm.memories()] == [old.id]
    assert [v.action for v in ltm.history(old.id)] == ["created", "superseded", "restored"]
    assert ltm.forget(old.id)
    assert len(ltm) == 0 and ltm.history(old.id) == [] and raw_history(tmp_path / "s") == []


def test_restore_keeps_a_full_scope_within_max_items(tmp_path: Path) -> None:
    ltm = make(tmp_path / "s", max_items=2)
    old, new = retire(ltm)
    tea = ltm.remember("Prefers green tea", importance=0.1)
    assert tea is not None and len(ltm) == 2
    ltm.restore(old.id)
    assert len(ltm) == 2 and ltm.get(old.id) is not None
    retired = ltm.retired()
    assert len(retired) == 1 and retired[0].action == "evicted" and retired[0].memory_id in {new.id, tea.id}


def test_retirements_are_logged_at_info_and_nothing_at_warning(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    ltm = make(tmp_path / "s")
    with caplog.at_level(logging.INFO, logger="mindcore.ltm"):
        old, new = retire(ltm)
        ltm.restore(old.id)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "mindcore.ltm"]
    assert lines[0][0] == logging.INFO
    assert lines[0][1].startswith(f"retired {old.id} (superseded: ") and lines[0][1].endswith(f") for {new.id}")
    assert lines[1] == (logging.INFO, f"restored {old.id}: {OLD}")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def killed_write(path: Path) -> Memory:
    """OLD remembered on ``path``, then a child remembering NEW, killed once its history commit has
    landed and its memory commit waits; returns OLD's memory."""
    ltm = make(path)
    old = ltm.remember(OLD)
    assert old is not None
    ltm.store.close()
    kill_at([sys.executable, str(PROCS), "remember", str(path), NEW],
            {**os.environ, "MINDCORE_TEST_BLOCK_MEMORY_WRITE": "1"}, "blocked")
    return old


def test_a_write_killed_between_its_two_commits_leaves_no_false_retirement(tmp_path: Path) -> None:
    path = tmp_path / "s"
    old = killed_write(path)
    # The crash left history claiming a retirement that never happened.
    assert raw_history(path) == [(old.id, "superseded")]

    after = make(path)
    # Reads tell the truth before anything is repaired: nothing was lost, nothing is retired.
    assert [m.text for m in after.memories()] == [OLD]
    assert after.retired() == []
    assert [(v.memory_id, v.action) for v in after.history(old.id)] == [(old.id, "created")]
    # A restore (here of a live memory: a no-op) deletes the events of the write that never landed.
    assert after.restore(old.id) == after.get(old.id)
    assert raw_history(path) == []
    # The write done again retires it for real, once.
    again = after.try_remember(NEW)
    assert again.action == "superseded" and again.memory is not None
    assert [(v.memory_id, v.successor_id) for v in after.retired()] == [(old.id, again.memory.id)]
    assert raw_history(path) == [(old.id, "superseded")]


def test_the_next_write_repairs_a_killed_write(tmp_path: Path) -> None:
    path = tmp_path / "s"
    old = killed_write(path)
    after = make(path)
    tea = after.remember("Prefers green tea")
    assert tea is not None
    assert raw_history(path) == [] and after.get(old.id) == old
    assert {m.text for m in after.memories()} == {OLD, "Prefers green tea"}
