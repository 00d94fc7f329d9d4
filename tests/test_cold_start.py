"""Cold start: ``mindcore.open`` and the default embedder return at once and load in the background.

LanceDB and onnxruntime are imported by a background thread; the first operation that needs them
waits. The subprocess tests hold that import at a gate (an import hook that stops a background thread
until the test opens it), so they show, without timing anything, that the call returned while
the import was still held. The in-process tests check that a load runs
once for many concurrent first callers and that its failure reaches every caller as the same
exception class as an eager open would raise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import mindcore
from mindcore.embed import EmbeddingError, MiniLMEmbedder
from mindcore.embed import minilm as minilm_mod
from mindcore.store import StoreError, StoreNotWritableError

# Holds the import of GATED in a background thread until `release` is set; an eager open or
# embedder would import it on the main thread, where the gate lets it through.
GATE = """
import importlib.abc, importlib.machinery, sys, threading
release = threading.Event()
held = threading.Event()
imported = threading.Event()   # GATED has been imported (its module ran)
class Held(importlib.abc.Loader):   # blocks in exec_module: finders run under the global import lock
    def __init__(self, real):
        self.real = real
    def create_module(self, spec):
        return self.real.create_module(spec)
    def exec_module(self, module):
        held.set()
        release.wait()
        self.real.exec_module(module)
        imported.set()
class Gate(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != GATED or threading.current_thread() is threading.main_thread():
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = Held(spec.loader)
        return spec
sys.meta_path.insert(0, Gate())
def wait_held():  # until the background thread is at the gate (never, if the caller imported GATED itself)
    if not held.wait(120):
        print("never held")
        sys.exit(1)
"""


def _run(code: str, **names: str) -> list[str]:
    prelude = "".join(f"{k} = {v!r}\n" for k, v in names.items())
    done = subprocess.run([sys.executable, "-c", prelude + GATE + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_open_returns_while_lancedb_is_still_being_imported(tmp_path: Path) -> None:
    out = _run("""
        import mindcore, pyarrow as pa
        store = mindcore.open(TMP)
        wait_held()   # the background thread has reached the gate: lancedb is not imported yet
        print("returned", imported.is_set())
        release.set()
        notes = store.table("notes", {"text": pa.string()})
        print(notes.upsert("me", [{"id": "n1", "text": "hi"}]).inserted, store.table_names())
    """, GATED="lancedb", TMP=str(tmp_path))
    assert out == ["returned", "False", "1", "['notes']"]


def test_the_default_embedder_returns_while_onnxruntime_is_still_being_imported() -> None:
    out = _run("""
        from mindcore.embed import default_embedder
        emb = default_embedder()
        wait_held()
        print("returned", emb.dim, imported.is_set())
        release.set()
        print(emb.embed(["hello"]).shape)
    """, GATED="onnxruntime")
    assert out == ["returned", "384", "False", "(1,", "384)"]


def test_long_term_memory_on_a_fresh_store_loads_both_in_the_background(tmp_path: Path) -> None:
    # Creating the memory needs its tables (so it waits for LanceDB) but not the model: the
    # model's import is still held when the memory exists, and the first remember waits for it.
    out = _run("""
        import mindcore
        ltm = mindcore.LongTermMemory.create(mindcore.open(TMP), user_id="u1", enabled=True)
        wait_held()
        print("created", imported.is_set())
        release.set()
        ltm.remember("Prefers green tea over coffee", kind="preference")
        print([m.text for m in ltm.recall("what does the user drink?", k=1)] == ["Prefers green tea over coffee"])
        ltm.close()
    """, GATED="onnxruntime", TMP=str(tmp_path))
    assert out == ["created", "False", "True"]


def test_a_child_forked_while_the_store_loads_can_use_its_own_store(tmp_path: Path) -> None:
    # The fork happens while lancedb's import is under way in the parent (the hook that opens the
    # gate runs at the start of the fork); the fork waits for the import, so the child neither
    # inherits a held import lock nor waits for a thread it does not have.
    out = _run("""
        import os, signal, warnings
        import mindcore, pyarrow as pa
        warnings.simplefilter("ignore")   # lancedb warns about fork
        store = mindcore.open(TMP)
        wait_held()
        os.register_at_fork(before=release.set)
        pid = os.fork()
        if pid == 0:
            signal.alarm(120)   # a hang becomes a failure
            try:
                inherited = store.table("notes", {"text": pa.string()}).count("me")
                own = mindcore.open(TMP).table("notes", {"text": pa.string()})
                own.upsert("me", [{"id": "c", "text": "from the child"}])
                os._exit(0 if (inherited, own.count("me")) == (0, 1) else 3)
            except BaseException:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), store.table("notes", {"text": pa.string()}).count("me"))
    """, GATED="lancedb", TMP=str(tmp_path))
    assert out == ["0", "1"]


# -- in process: one load, errors to every caller ---------------------------------------------------


def _together(n: int, call: Any) -> list[Any]:
    """``call()`` from ``n`` threads released at once; each result or raised exception."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def one(i: int) -> None:
        barrier.wait()
        try:
            results[i] = call()
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_first_uses_of_a_store_connect_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lancedb

    calls: list[str] = []
    gate = threading.Event()
    real = lancedb.connect

    def connect(uri: str, **kwargs: Any) -> Any:
        calls.append(uri)
        gate.wait()  # every first user asks while the connection is being made
        return real(uri, **kwargs)

    monkeypatch.setattr(lancedb, "connect", connect)
    store = mindcore.open(tmp_path)
    threading.Timer(0.2, gate.set).start()  # not an assertion: only makes the callers overlap the load
    tables = _together(8, lambda: store.table("notes", {"text": pa.string()}))
    assert calls == [str(tmp_path)]
    assert all(t is tables[0] for t in tables)
    store.close()


def test_a_store_that_fails_to_open_raises_the_same_class_to_every_caller() -> None:
    store = mindcore.open("nosuchscheme://bucket/x")  # returns: the scheme is LanceDB's to judge
    errors = _together(4, lambda: store.table("notes", {"text": pa.string()}))
    assert all(isinstance(e, ValueError) and "nosuchscheme" in str(e) for e in errors), errors
    for use in (store.table_names, lambda: store.embedding, lambda: store.open_table("notes")):
        with pytest.raises(ValueError, match="nosuchscheme"):
            use()
    store.close()  # closing a store that never opened is fine


def test_cheap_errors_still_raise_at_open(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreNotWritableError, match="cannot create the store folder"):
        mindcore.open(tmp_path / "file" / "db")
    with pytest.raises(StoreError, match="no store at"):
        mindcore.open(tmp_path / "missing", read_only=True)


def test_concurrent_first_embeds_load_the_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[int] = []
    gate = threading.Event()
    real = MiniLMEmbedder._open_session

    def open_session(threads: int) -> Any:
        loads.append(threads)
        gate.wait()
        return real(threads)

    monkeypatch.setattr(MiniLMEmbedder, "_open_session", staticmethod(open_session))
    emb = MiniLMEmbedder(cache=False)
    threading.Timer(0.2, gate.set).start()
    texts = [f"sentence number {i}" for i in range(6)]
    vectors = _together(6, lambda: emb.embed(texts))
    assert loads == [1]
    for v in vectors:
        np.testing.assert_array_equal(v, vectors[0])
    assert vectors[0].shape == (6, 384)


def test_a_model_that_fails_to_load_raises_embedding_error_to_every_caller(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not a model")
    monkeypatch.setattr(minilm_mod, "model_path", lambda: broken)
    minilm_mod._checked_model_path.cache_clear()
    try:
        emb = MiniLMEmbedder(cache=False)  # the file is there: its checksum is checked in the background
        errors = _together(4, lambda: emb.embed(["hello"]))
    finally:
        minilm_mod._checked_model_path.cache_clear()
    assert all(isinstance(e, EmbeddingError) and "sha256" in str(e) for e in errors), errors
    with pytest.raises(EmbeddingError, match="sha256"):
        emb.embed(["again"])
    assert emb.embed([]).shape == (0, 384)  # nothing to embed needs no model


def test_a_missing_model_file_raises_when_the_embedder_is_created(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(minilm_mod, "model_path", lambda: tmp_path / "gone.onnx")
    with pytest.raises(EmbeddingError, match="not found"):
        MiniLMEmbedder(cache=False)


def test_fork_hooks_leave_no_load_pending() -> None:
    # A load created and finished leaves nothing for a fork to wait for or a child to restart.
    from mindcore import _background

    job = _background.BackgroundLoad(lambda: os.getpid(), "pid", imports=["json"])
    assert job.result() == os.getpid()
    job.wait()
    assert job not in _background._PENDING
