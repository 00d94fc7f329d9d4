"""Disk use of long-term memory under steady single writes: LoCoMo's 5,882 turns, one ``remember()``
each, against the same texts stored in bulk.

Group ``ltm: disk, LoCoMo turns by single remember()``. Every turn of the ten conversations is
stored as ``"{speaker}: {text}"`` (stamped with its session's date) by one plain ``remember()`` call,
one user per conversation, on a folder store at its defaults (background maintenance on,
``cleanup_grace`` 10 s) with the default embedder (its vectors computed up front in batches: the
store sees the same vectors, the embedding time is left out). The baseline is the bulk size: the
same texts through ``remember_many(..., dedupe=False)`` into a fresh store, then
``Store.compact(cleanup_grace=timedelta(0))``.

The bytes on disk (the store's folder) are sampled every 100 turns while the turns are stored;
the row's ``curve`` (plotted by ``mindcore bench``) is that size over the bulk size, against the
turns stored. extra_info also holds the peak ratio (target: at most 3x at any moment), the ratio
once the writes and their maintenance are done, and the ratio after one ``Store.compact()`` run
once ``cleanup_grace`` has passed since that maintenance (target: at most 2x). The timed call is the
loop of single remembers (items = turns), so its throughput is the user path's at this size.

    pytest benches/bench_ltm_disk.py --benchmark-only -q -s
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import timedelta
from typing import Any

import pytest
from _bench import PrecomputedEmbedder, cpu_model, finish

import mindcore
from mindcore.eval import data_dir
from mindcore.eval.locomo import Conversation, load_locomo
from mindcore.ltm import LongTermMemory
from mindcore.store.stats import folder_bytes

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
GROUP = "ltm: disk, LoCoMo turns by single remember()" + (" (2 conversations)" if QUICK else "")
SAMPLE_EVERY = 100
PEAK_LIMIT, FINAL_LIMIT = 3.0, 2.0


def _text(speaker: str, text: str) -> str:
    return f"{speaker}: {text}"


@pytest.fixture(scope="module")
def setup() -> dict[str, Any]:
    try:
        conversations = load_locomo(data_dir() / "locomo" / "locomo10.json")
    except Exception as exc:  # no shared data here: the bench says where it comes from
        pytest.skip(f"LoCoMo data unavailable: {exc}")
    try:
        from mindcore.embed import default_embedder

        inner = default_embedder(threads=2)
    except Exception as exc:  # the bundled model is an optional extra
        pytest.skip(f"default embedder unavailable: {exc}")
    conversations = conversations[: 2 if QUICK else None]
    texts = [_text(t.speaker, t.text) for c in conversations for t in c.turns]
    return {"conversations": conversations, "embedder": PrecomputedEmbedder(inner, texts)}


def _memories(store: mindcore.Store, conv: Conversation, embedder: Any) -> LongTermMemory:
    return LongTermMemory(store, user_id=conv.sample_id, embedder=embedder)


def _bulk_bytes(conversations: list[Conversation], embedder: Any) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-ltm-disk-bulk-") as tmp:
        store = mindcore.open(tmp)
        for conv in conversations:
            _memories(store, conv, embedder).remember_many(
                [{"text": _text(t.speaker, t.text), "created_at": t.timestamp_ms} for t in conv.turns], dedupe=False)
        store.wait_for_maintenance()
        store.compact(cleanup_grace=timedelta(0))
        size = folder_bytes(tmp)
        store.close()
    return size


def test_disk_under_single_remembers(benchmark: Any, setup: dict[str, Any]) -> None:
    conversations: list[Conversation] = setup["conversations"]
    embedder = setup["embedder"]
    turns = sum(len(c.turns) for c in conversations)
    bulk = _bulk_bytes(conversations, embedder)
    with tempfile.TemporaryDirectory(prefix="bench-ltm-disk-single-") as tmp:
        store = mindcore.open(tmp)
        xs: list[int] = []
        ratios: list[float] = []

        def store_every_turn() -> None:
            done = 0
            for conv in conversations:
                ltm = _memories(store, conv, embedder)
                for t in conv.turns:
                    ltm.remember(_text(t.speaker, t.text), created_at=t.timestamp_ms)
                    done += 1
                    if done % SAMPLE_EVERY == 0 or done == turns:
                        xs.append(done)
                        ratios.append(round(folder_bytes(tmp) / bulk, 3))

        finish(benchmark, "mindcore", GROUP, turns)
        benchmark.pedantic(store_every_turn, rounds=1, iterations=1)
        store.wait_for_maintenance()
        settled = time.monotonic()
        after_writes = folder_bytes(tmp)
        grace = store.config.cleanup_grace.total_seconds()
        time.sleep(max(0.0, settled + grace + 1 - time.monotonic()))  # past the grace of every version
        store.compact()
        final = folder_bytes(tmp)
        stored = sum(len(_memories(store, c, embedder)) for c in conversations)
        store.close()
    peak = max(ratios)
    benchmark.extra_info.update(
        cpu=cpu_model(), turns=turns, memories=stored, bulk_mb=round(bulk / 1e6, 2),
        peak_ratio=peak, after_writes_ratio=round(after_writes / bulk, 2), final_mb=round(final / 1e6, 2),
        final_ratio=round(final / bulk, 2),
        curve={"x": xs, "y": ratios, "x_label": "turns stored", "y_label": "bytes on disk / bulk size",
               "limit": PEAK_LIMIT},
    )
    print(f"\n{GROUP}: bulk {bulk / 1e6:.2f} MB, peak {peak:.2f}x, after the writes {after_writes / bulk:.2f}x, "
          f"after compact {final / bulk:.2f}x ({final / 1e6:.2f} MB), {stored} memories")
    assert stored > 0
