"""Cold start: a fresh process, from ``python -c`` to the first long-term-memory recall, and to
``mindcore.open()`` returning.

Each round runs a new interpreter on a store already holding 200 memories (default embedder):
import mindcore, open the store, create ``LongTermMemory`` with the default embedder, recall. The
process ends (``os._exit``) as soon as the measured point is reached, so exit costs are not
counted; interpreter start-up is, alike for every row.

- ``mindcore``: the package as it is: ``open()`` returns at once and LanceDB loads in a background
  thread while the caller goes on; the default embedder loads in another one.
- ``eager`` (the baseline): the same steps one after the other, as when ``open`` imported LanceDB
  and connected before returning and the embedder loaded its model in its constructor: import
  LanceDB and onnxruntime, open and wait for the connection, load the model (embedding the query,
  which the recall then finds in the embedding cache), then create the memory and recall.

    pytest benches/bench_cold.py --benchmark-only -q
    MINDCORE_BENCH_QUICK=1 pytest benches/bench_cold.py --benchmark-only -q   # fewer rounds
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _bench import cpu_model, finish

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
ROUNDS = 2 if QUICK else 7
MEMORIES = 200
QUERY = "what does the user drink in the morning?"

RECALL = {
    "mindcore": """
        import mindcore
        store = mindcore.open(STORE)
        ltm = mindcore.LongTermMemory.create(store, user_id="u1", enabled=True)
        hits = ltm.recall(QUERY, k=5)
    """,
    "eager": """
        import lancedb, onnxruntime, tokenizers
        import mindcore
        from mindcore.embed import default_embedder
        store = mindcore.open(STORE)
        _ = store.embedding                  # waits for the connection and the meta table
        default_embedder().embed([QUERY])    # loads the model (the recall finds the vector cached)
        ltm = mindcore.LongTermMemory.create(store, user_id="u1", enabled=True)
        hits = ltm.recall(QUERY, k=5)
    """,
}

OPEN = {
    "mindcore": """
        import mindcore
        store = mindcore.open(STORE)
    """,
    "eager": """
        import lancedb
        import mindcore
        store = mindcore.open(STORE)
        _ = store.embedding
    """,
}

# Each script ends by printing the seconds from interpreter start to the measured point, then
# leaves without running exit handlers (failing if a recall found nothing).
EPILOGUE = """
import time
print(time.perf_counter() - T0)
sys.stdout.flush()
os._exit(0 if not EXPECT or hits else 3)
"""


def _script(body: str, store: Path, expect: bool) -> str:
    return (f"import os, sys, time\nT0 = time.perf_counter()\nSTORE = {str(store)!r}\nQUERY = {QUERY!r}\n"
            f"EXPECT = {expect!r}\n" + textwrap.dedent(body) + EPILOGUE)


def _run(script: str) -> float:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.split()[-1])


_printed: list[bool] = []


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with ``MEMORIES`` memories of one user, written once by another process."""
    path = tmp_path_factory.mktemp("cold") / "store"
    code = f"""
        import mindcore
        ltm = mindcore.LongTermMemory.create(mindcore.open({str(path)!r}), user_id="u1", enabled=True)
        drinks = ["green tea", "black coffee", "oat milk latte", "sparkling water", "chai"]
        for i in range({MEMORIES}):
            ltm.remember(f"Fact {{i}}: on day {{i}} the user had {{drinks[i % 5]}} and read chapter {{i}}")
        ltm.close()
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    if not _printed:
        print(f"\nCPU: {cpu_model()}, {os.cpu_count()} cores")
        _printed.append(True)
    return path


def _bench(benchmark: Any, script: str, impl: str, group: str) -> None:
    inner: list[float] = []

    def once() -> None:
        inner.append(_run(script))

    finish(benchmark, impl, group)  # before the run: pytest-benchmark reads the group as it starts
    benchmark.pedantic(once, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    measured = sorted(inner[1:])  # the warm-up round is not one of the rounds
    benchmark.extra_info["in_process_median_s"] = round(measured[len(measured) // 2], 3)


@pytest.mark.parametrize("impl", list(RECALL))
def test_cold_start_to_first_recall(benchmark: Any, store_path: Path, impl: str) -> None:
    _bench(benchmark, _script(RECALL[impl], store_path, True), impl, "cold start: to first recall")


@pytest.mark.parametrize("impl", list(OPEN))
def test_cold_start_to_open_return(benchmark: Any, store_path: Path, impl: str) -> None:
    _bench(benchmark, _script(OPEN[impl], store_path, False), impl, "cold start: to open() return")
