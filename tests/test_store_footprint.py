"""Disk footprint: memories remembered one at a time take, once maintenance has run, at most
twice the bytes of the same memories written in bulk, and maintenance keeps every row.

Sizes are counted in bytes on disk (no timing). Compaction runs inline and often here, so the
single writes go through many compactions and cleanups, as a long session's would.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

import mindcore
from mindcore.embed import HashEmbedder
from mindcore.ltm import LongTermMemory
from mindcore.store import StoreConfig
from mindcore.store.stats import folder_bytes

N = 240


def _facts(n: int) -> list[str]:
    rng = np.random.default_rng(5)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return [f"fact {i}: " + " ".join("".join(rng.choice(letters, 6)) for _ in range(6)) for i in range(n)]


def _ltm(path: Path, config: StoreConfig) -> LongTermMemory:
    return LongTermMemory(mindcore.open(path, config=config), user_id="u", namespace="chat",
                          embedder=HashEmbedder(), max_items=0)


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_single_writes_after_maintenance_take_at_most_twice_the_bulk_bytes(tmp_path: Path) -> None:
    facts = _facts(N)
    bulk = _ltm(tmp_path / "bulk", StoreConfig())
    assert all(r.status == "stored" for r in bulk.remember_many(facts))
    bulk.store.wait_for_maintenance()
    bulk_bytes = folder_bytes(str(tmp_path / "bulk"))

    # Automatic maintenance every 8 commits, inline, old versions kept for a minute (the default).
    single = _ltm(tmp_path / "single", StoreConfig(compact_every=8, compact_in_background=False))
    for text in facts:
        assert single.remember(text) is not None
    before = folder_bytes(str(tmp_path / "single"))
    assert before > 2 * bulk_bytes  # old versions are kept through the grace period...
    single.store.compact(cleanup_grace=timedelta(0))  # ...and go once maintenance may drop them
    after = folder_bytes(str(tmp_path / "single"))
    assert after <= 2 * bulk_bytes, (after, bulk_bytes)

    # Maintenance kept every memory, and recall still finds them.
    assert len(single) == N
    assert sorted(m.text for m in single.memories()) == sorted(m.text for m in bulk.memories())
    assert single.recall(facts[17], k=1)[0].text == facts[17]
    bulk.close()
    single.close()
