"""mindcore.batch.reembed on real LanceDB folders: every capability's vectors rewritten, readers of
the old model refused (never served wrong results), concurrent writes kept, kill -9 resumed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from conftest import HANG
from numpy.typing import NDArray

import mindcore
from mindcore.batch import ReembedProgress, ReembedReport, reembed
from mindcore.embed import HashEmbedder
from mindcore.errors import EmbeddingError, InvalidInputError, InvalidTypeError
from mindcore.ltm.types import embedded_text
from mindcore.store import EmbedderMismatchError, EmbeddingInfo

OLD = HashEmbedder(dim=64, seed=0)
NEW = HashEmbedder(dim=96, seed=1)  # another model and another dimension
SAME_DIM = HashEmbedder(dim=64, seed=7)  # another model, the same dimension
USERS = ["alice", "bob", "carol"]
FACTS = [
    "Prefers green tea in the morning", "Works on the billing service", "Has a dog called Rex",
    "Lives in Lisbon", "Is allergic to peanuts", "Plays the cello on weekends", "Drives an electric car",
    "Studies Japanese", "Runs a marathon every spring", "Uses vim for everything",
]
CHILD = Path(__file__).with_name("_reembed_child.py")


def populate(path: Path) -> None:
    """A store built with OLD: long-term memories of three users, a mind, tools, a user vector table."""
    store = mindcore.open(path, embedder=OLD)
    for u, user in enumerate(USERS):
        ltm = mindcore.LongTermMemory(store, user_id=user, embedder=OLD)
        for i, fact in enumerate(FACTS):
            ctx = f"Q: tell me about {user}\n{user.title()}:" if i % 3 == 0 else None
            ltm.remember(f"{fact} ({user} #{u})", importance=0.3 + 0.05 * i, context=ctx)
        ltm.close()
    mind = mindcore.Mind(store, agent="agent-1", embedder=OLD)
    with mind.run() as run:
        run.believe("The deploy pipeline is flaky on Fridays", confidence="high")
        run.believe("Customers prefer annual billing")
        run.reflect("Check the logs before paging anyone", pin=True)
        run.set_goal("Fix the flaky deploy pipeline", priority="high")
    context = mindcore.Context(store, dataset="tools", embedder=OLD)
    context.register([mindcore.Tool("get_weather", "Get the weather for a city"),
                      mindcore.Tool("book_flight", "Book a flight between two airports")])
    context.discover("weather in Paris", strategy="semantic")
    notes = store.table("notes", {"text": pa.string()}, vectors=True, embedder=OLD)
    texts = ["buy milk", "call the bank", "book the dentist"]
    notes.upsert("me", [{"id": f"n{i}", "text": t, "vector": v} for i, (t, v) in enumerate(zip(texts, OLD.embed(texts), strict=True))])
    store.close()


@pytest.fixture
def built(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    populate(path)
    return path


def table_rows(path: Path, name: str) -> list[dict[str, Any]]:
    """Every row of a table, sorted by (namespace, id), vectors as lists."""
    store = mindcore.open(path, read_only=True)
    rows = store.open_table(name).scan_arrow(mindcore.store.ALL_NAMESPACES).to_pylist()
    return sorted(rows, key=lambda r: (r["namespace"], r["id"]))


def check_vectors_of(path: Path, emb: HashEmbedder) -> None:
    """Every vector of the LTM, mind and notes tables is ``emb``'s embedding of its text."""
    for r in table_rows(path, "ltm_memories"):
        assert np.array_equal(np.asarray(r["vector"], np.float32), emb.embed([embedded_text(r["text"], r["context"])])[0])
    for r in table_rows(path, "mind_entries"):
        if r["type"] == "goal":
            assert r["vector"] is None
        else:
            assert np.array_equal(np.asarray(r["vector"], np.float32), emb.embed([r["content"]])[0])
    for r in table_rows(path, "notes"):
        assert np.array_equal(np.asarray(r["vector"], np.float32), emb.embed([r["text"]])[0])


def recall(path: Path, emb: HashEmbedder, user: str, query: str) -> list[str]:
    with mindcore.open(path) as store:
        ltm = mindcore.LongTermMemory(store, user_id=user, embedder=emb)
        return [m.text for m in ltm.recall(query, k=3, touch=False)]


# -- the result ------------------------------------------------------------------------------------


def test_every_capability_is_reembedded_and_recall_works_with_the_new_model(built: Path) -> None:
    before = recall(built, OLD, "bob", "Has a dog called Rex (bob #1)")
    assert before[0] == "Has a dog called Rex (bob #1)"
    report = reembed(built, embedder=NEW, texts={"notes": "text"})
    assert isinstance(report, ReembedReport) and not report.noop and not report.resumed
    assert report.tables == {"ltm_memories": 30, "mind_entries": 3, "notes": 3}  # the goal has no vector
    assert report.rows == 36 and report.skipped == {}
    assert report.previous == EmbeddingInfo(OLD.model_id, OLD.dim)
    assert report.tool_texts == 4
    check_vectors_of(built, NEW)
    # recall with the new model finds the same memory first; with the old one it refuses
    assert recall(built, NEW, "bob", "Has a dog called Rex (bob #1)")[0] == "Has a dog called Rex (bob #1)"
    with pytest.raises(EmbedderMismatchError):
        recall(built, OLD, "bob", "dog")
    with pytest.raises(EmbedderMismatchError):
        mindcore.open(built, embedder=OLD)
    with mindcore.open(built, embedder=NEW) as store:
        assert store.embedding == EmbeddingInfo(NEW.model_id, NEW.dim)
        for name in ("ltm_memories", "mind_entries", "notes"):
            assert store.table_embedding(name) == EmbeddingInfo(NEW.model_id, NEW.dim)
            assert store.open_table(name).dim == NEW.dim
        assert not [n for n in store._all_tables() if n.startswith("_mindcore_reembed_")]  # shadows dropped
        # the mind recalls with the new model
        mind = mindcore.Mind(store, agent="agent-1", embedder=NEW)
        best = mind.recall("deploy pipeline flaky", type="belief")[0]
        assert best.content == "The deploy pipeline is flaky on Fridays"
        with pytest.raises(EmbedderMismatchError):
            mindcore.Mind(store, agent="agent-1", embedder=OLD)
        # namespace index rebuilt by the swap
        assert any(list(ix.columns) == ["namespace"] for ix in store.open_table("ltm_memories")._tbl.list_indices())


def test_context_tool_vectors_are_stored_for_the_new_model_beside_the_old(built: Path) -> None:
    reembed(built, embedder=NEW, texts={"notes": "text"})

    calls: list[list[str]] = []

    class Counting(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
            calls.append(list(texts))
            return super().embed(texts)

    counting = Counting(dim=NEW.dim, seed=1)
    with mindcore.open(built) as store:
        cached = store.open_table("context_embeddings")
        assert set(cached.namespaces()) == {OLD.model_id, NEW.model_id}
        context = mindcore.Context(store, dataset="tools", embedder=counting)
        found = context.discover("weather in Paris", strategy="semantic", limit=1)
    assert [t.name for t in found] == ["get_weather"]
    assert calls == [["weather in Paris"]]  # the tool texts were embedded already


def test_a_handle_opened_with_the_old_model_refuses_after_the_switch(built: Path) -> None:
    """Same dimension, another model: an old handle must not score new vectors with old queries."""
    early = mindcore.open(built)  # another process's view, opened before the re-embedding
    old_ltm = mindcore.LongTermMemory(early, user_id="alice", embedder=OLD)
    assert old_ltm.recall("green tea", touch=False)
    reembed(built, embedder=SAME_DIM, texts={"notes": "text"})
    with pytest.raises(EmbedderMismatchError, match="re-embedded"):
        old_ltm.recall("green tea", touch=False)
    with pytest.raises(EmbedderMismatchError):
        old_ltm.remember("Likes jazz")
    # the same early store re-opens cleanly: the old model refuses, the new one works
    with pytest.raises(EmbedderMismatchError):
        mindcore.LongTermMemory(early, user_id="alice", embedder=OLD)
    fresh = mindcore.LongTermMemory(early, user_id="alice", embedder=SAME_DIM)
    assert fresh.recall("Prefers green tea in the morning (alice #0)", touch=False)[0].text.startswith("Prefers green tea")
    early.close()


def test_the_store_object_given_is_bound_to_the_new_model(built: Path) -> None:
    store = mindcore.open(built, embedder=OLD)
    ltm = mindcore.LongTermMemory(store, user_id="carol", embedder=OLD)
    reembed(store, embedder=NEW, texts={"notes": "text"})
    assert store.embedder is NEW
    with pytest.raises(EmbedderMismatchError):
        ltm.recall("cello", touch=False)
    assert store.table("notes", vectors=True).search("me", "buy milk", k=1)[0].id == "n0"
    store.close()


# -- no-op, idempotence, bad input -----------------------------------------------------------------


def versions(path: Path) -> dict[str, int]:
    with mindcore.open(path) as store:
        return {n: store.open_table(n).version for n in [*store.table_names(), "_mindcore_meta"]}


def test_same_model_is_a_no_op_and_a_rerun_changes_nothing(built: Path) -> None:
    with mindcore.open(built) as store:
        report = reembed(store, embedder=OLD, texts={"notes": "text"})
    assert report.noop and report.rows == 0 and "nothing to re-embed" in str(report)
    reembed(built, embedder=NEW, texts={"notes": "text"})
    after = versions(built)
    again = reembed(built, embedder=NEW, texts={"notes": "text"})
    assert again.noop and versions(built) == after
    check_vectors_of(built, NEW)


class Broken:
    """An embedder that claims ``dim`` and returns ``vectors(texts)``."""

    def __init__(self, dim: int, vectors: Any) -> None:
        self.dim, self.model_id, self._vectors = dim, "broken-model", vectors

    def embed(self, texts: Sequence[str]) -> Any:
        return self._vectors(texts)

    async def aembed(self, texts: Sequence[str]) -> Any:
        return self.embed(texts)


@pytest.mark.parametrize(("embedder", "error", "match"), [
    (object(), InvalidTypeError, "expected an Embedder"),
    (Broken(32, lambda t: np.ones((len(t), 16), np.float32)), EmbeddingError, r"shape \(2, 16\).*expected \(2, 32\)"),
    (Broken(8, lambda t: np.full((len(t), 8), np.nan, np.float32)), EmbeddingError, "NaN"),
    (Broken(0, lambda t: np.ones((len(t), 0), np.float32)), InvalidTypeError, "positive int .dim"),
])
def test_a_bad_embedder_is_refused_before_anything_is_written(built: Path, embedder: Any, error: type, match: str) -> None:
    before = versions(built)
    with pytest.raises(error, match=match):
        reembed(built, embedder=embedder, texts={"notes": "text"})
    assert versions(built) == before
    assert recall(built, OLD, "alice", "Lives in Lisbon (alice #0)")[0] == "Lives in Lisbon (alice #0)"


def test_a_vector_table_of_unknown_text_is_refused_or_skipped(built: Path) -> None:
    before = versions(built)
    with pytest.raises(InvalidInputError, match=r"\['notes'\].*texts=.*skip="):
        reembed(built, embedder=NEW)
    with pytest.raises(InvalidInputError, match="no vector table 'nope'"):
        reembed(built, embedder=NEW, texts={"nope": "text"})
    with pytest.raises(InvalidInputError, match="no column 'body'"):
        reembed(built, embedder=NEW, texts={"notes": "body"})
    with mindcore.open(built) as store:  # the failed run above had started: finish it properly now
        report = reembed(store, embedder=NEW, skip=["notes"])
    assert report.skipped == {"notes": "no known text (named in skip)"} and "notes" not in report.tables
    del before
    with mindcore.open(built) as store:
        assert store.table_embedding("notes") == EmbeddingInfo(OLD.model_id, OLD.dim)
        with pytest.raises(EmbedderMismatchError):
            store.table("notes", vectors=True, embedder=NEW)
        notes = store.table("notes", vectors=True, embedder=OLD)  # still usable with its own model
        assert notes.search("me", "call the bank", k=1)[0].id == "n1"


# -- concurrency and crashes -----------------------------------------------------------------------


def test_writes_made_during_the_reembedding_are_kept(built: Path) -> None:
    writer = mindcore.open(built)  # another writer, with the old model, while the copy runs
    ltm = mindcore.LongTermMemory(writer, user_id="dave", embedder=OLD)
    alice = mindcore.LongTermMemory(writer, user_id="alice", embedder=OLD)
    gone = next(m for m in alice.memories() if m.text.startswith("Lives in Lisbon"))
    steps: list[ReembedProgress] = []

    def progress(p: ReembedProgress) -> None:
        steps.append(p)
        if p.phase == "copy" and p.table == "ltm_memories" and len([s for s in steps if s.table == "ltm_memories"]) == 2:
            ltm.remember("Joined during the re-embedding")
            assert alice.forget(gone.id)

    report = reembed(built, embedder=NEW, texts={"notes": "text"}, chunk_size=4, progress=progress)
    assert report.caught_up.get("ltm_memories", 0) >= 1
    texts = {r["text"] for r in table_rows(built, "ltm_memories")}
    assert "Joined during the re-embedding" in texts and gone.text not in texts
    assert len(texts) == 30
    check_vectors_of(built, NEW)
    assert recall(built, NEW, "dave", "Joined during the re-embedding") == ["Joined during the re-embedding"]
    writer.close()


def test_a_crash_during_the_switch_resumes_and_readers_never_mix_models(built: Path) -> None:
    reference = built.parent / "reference"
    shutil.copytree(built, reference)
    reembed(reference, embedder=SAME_DIM, texts={"notes": "text"})

    class Crash(Exception):
        pass

    def crash(p: ReembedProgress) -> None:
        if p.phase == "switch":
            raise Crash  # after the first table was switched and recorded

    with pytest.raises(Crash):
        reembed(built, embedder=SAME_DIM, texts={"notes": "text"}, progress=crash)
    # half switched: the long-term memory holds the new model's vectors, the mind the old ones
    with pytest.raises(EmbedderMismatchError):
        recall(built, OLD, "alice", "green tea")
    with mindcore.open(built) as store:
        assert [r.content for r in mindcore.Mind(store, agent="agent-1", embedder=OLD).recall("billing")]
    with pytest.raises(InvalidInputError, match="half-way through a re-embedding"):
        reembed(built, embedder=NEW, texts={"notes": "text"})
    report = reembed(built, embedder=SAME_DIM, texts={"notes": "text"})
    assert report.resumed
    for name in ("ltm_memories", "mind_entries", "notes"):
        assert table_rows(built, name) == table_rows(reference, name)
    check_vectors_of(built, SAME_DIM)


def test_kill_9_mid_copy_then_resume_gives_the_uninterrupted_result(built: Path) -> None:
    reference = built.parent / "reference"
    shutil.copytree(built, reference)
    reembed(reference, embedder=NEW, texts={"notes": "text"})
    expected_recall = recall(reference, NEW, "carol", "Studies Japanese (carol #2)")

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, str(CHILD), str(built), str(NEW.dim), "1", "2"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdin is not None and child.stdout is not None
    guard = threading.Timer(HANG, child.kill)  # a hung child: its stdout ends and the test fails
    guard.start()
    copied = 0
    try:
        # The child waits for a go-ahead after each progress step: it is killed once it has copied
        # 8 rows, racing the next chunk (2 rows), whatever the machine's speed.
        for line in child.stdout:
            phase, table, done, _total = json.loads(line)
            if phase == "copy" and table == "ltm_memories":
                copied = done
                # readers keep the old model while the copy runs
                assert recall(built, OLD, "carol", "Studies Japanese (carol #2)")[0] == "Studies Japanese (carol #2)"
            child.stdin.write("go\n")
            child.stdin.flush()
            if copied >= 8:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=HANG)
        guard.cancel()
    assert child.returncode == -signal.SIGKILL and 8 <= copied < 30
    with mindcore.open(built) as store:
        assert any(n.startswith("_mindcore_reembed_") for n in store._all_tables())  # a shadow was left
        assert store.embedding == EmbeddingInfo(OLD.model_id, OLD.dim)
    assert recall(built, OLD, "carol", "Studies Japanese (carol #2)")[0] == "Studies Japanese (carol #2)"

    report = reembed(built, embedder=NEW, texts={"notes": "text"}, chunk_size=2)
    assert report.resumed and report.tables["ltm_memories"] < 30  # rows already in the shadow were kept
    for name in ("ltm_memories", "mind_entries", "notes"):
        assert table_rows(built, name) == table_rows(reference, name)
    assert recall(built, NEW, "carol", "Studies Japanese (carol #2)") == expected_recall


def test_a_store_opened_before_reads_every_table_after_the_switch(built: Path) -> None:
    early = mindcore.open(built)
    old_ltm = mindcore.LongTermMemory(early, user_id="bob", embedder=OLD)
    assert old_ltm.recall("dog", touch=False)
    reembed(built, embedder=NEW, texts={"notes": "text"})
    # raw reads (inspect, stats, compact) go on through a fresh handle; the capability's handle refuses
    assert early.open_table("ltm_memories").dim == NEW.dim
    assert {t.name: t.dim for t in early.stats().tables}["ltm_memories"] == NEW.dim
    with pytest.raises(EmbedderMismatchError):
        old_ltm.recall("dog", touch=False)
    early.close()


def test_a_write_prepared_with_the_old_model_and_committed_after_the_switch_is_refused(built: Path) -> None:
    """A writer that embedded with the old model and then waited for the table's lock (held by the
    switch) must not commit old-model vectors into the re-embedded table."""
    writer = mindcore.open(built)
    notes = writer.table("notes", vectors=True, embedder=OLD)
    uow = notes.unit_of_work("me")
    uow.upsert([{"id": "late", "text": "water the plants", "vector": OLD.embed(["water the plants"])[0]}])
    reembed(built, embedder=SAME_DIM, texts={"notes": lambda rows: [f"note: {t}" for t in rows.column("text").to_pylist()]})
    with pytest.raises(EmbedderMismatchError):
        uow.commit()
    rows = table_rows(built, "notes")
    assert [r["id"] for r in rows] == ["n0", "n1", "n2"]
    for r in rows:  # a function of the rows gave the texts
        assert np.array_equal(np.asarray(r["vector"], np.float32), SAME_DIM.embed([f"note: {r['text']}"])[0])
    writer.close()
