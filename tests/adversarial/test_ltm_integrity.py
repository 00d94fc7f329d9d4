"""Long-term memory's integrity under concurrency: the duplicate check and the eviction plan read
the scope under the same store lock as the commit, so two writers (two objects in one process, as
web apps make one per request, or two processes) never store the same fact twice, and no reader
ever sees a scope over ``max_items``."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.ltm import LongTermMemory

_WORDS = ["apple", "river", "mountain", "violin", "pepper", "quantum", "garden", "rocket", "silver", "thunder", "candle", "forest", "marble", "ocean", "pencil", "tiger", "lemon", "castle", "winter", "desert", "piano", "coffee", "saddle", "meadow", "copper", "falcon", "harbor", "velvet", "orbit", "cactus"]
# 30 facts no two of which are near-duplicates (hashing-embedder cosine at most 0.84 < 0.92).
FACTS = [" ".join(random.Random(7 * 1000 + i).sample(_WORDS, 6)) for i in range(30)]


def _ltm(store: mindcore.Store, **kw: object) -> LongTermMemory:
    return LongTermMemory(store, user_id="u", embedder=HashEmbedder(), **kw)  # type: ignore[arg-type]


def test_two_objects_two_threads_store_each_fact_once(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "store")
    writers = [_ltm(store), _ltm(store)]
    barrier = threading.Barrier(2)

    def write(ltm: LongTermMemory) -> None:
        barrier.wait()
        for fact in FACTS:
            ltm.remember(fact)

    threads = [threading.Thread(target=write, args=(w,)) for w in writers]
    [t.start() for t in threads]
    [t.join() for t in threads]
    texts = [m.text for m in _ltm(store).memories()]
    assert sorted(texts) == sorted(FACTS)  # before: 21 duplicates
    [w.close() for w in writers]


def test_two_processes_store_each_fact_once(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import sys, mindcore
        from mindcore.embed import HashEmbedder
        from mindcore.ltm import LongTermMemory
        ltm = LongTermMemory(mindcore.open(sys.argv[1]), user_id="u", embedder=HashEmbedder())
        for fact in {FACTS!r}:
            ltm.remember(fact)
        ltm.close()
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "store")]) for _ in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    texts = [m.text for m in _ltm(mindcore.open(tmp_path / "store")).memories()]
    assert sorted(texts) == sorted(FACTS)


def test_no_reader_sees_the_scope_over_its_cap(tmp_path: Path) -> None:
    store = mindcore.open(tmp_path / "store")
    writer = _ltm(store, max_items=20)
    reader = _ltm(mindcore.open(tmp_path / "store"), max_items=20)
    seen: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.append(len(reader))

    thread = threading.Thread(target=read)
    thread.start()
    for i in range(60):
        # One write each, stored as given: the judgement would read these numbered facts as one
        # fact changing (each retiring the one before), and the cap is what is under test here.
        writer.remember_many([f"Fact number {i}: the user owns {i} plants of kind {i * 31 % 17}"], dedupe=False)
    done.set()
    thread.join()
    assert len(writer) == 20 and seen and max(seen) <= 20
    writer.close()
    reader.close()
