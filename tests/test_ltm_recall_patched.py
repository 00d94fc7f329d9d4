"""Long-term memory recall over a scope large enough for the store to keep an int8 shadow of its
vectors: after writes, updates and forgets (each patching the cached vectors, norms, shadow and
lexical index instead of reloading them) it answers exactly as a store opened afresh does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from conftest import Clock

import mindcore
from mindcore.kernels import SHADOW_MIN_ROWS
from mindcore.ltm import LongTermMemory

WORDS = ["tea", "coffee", "hiking", "chess", "violin", "sushi", "paris", "tokyo", "dogs", "cats", "rust", "python", "jazz", "opera", "cycling", "sailing", "yoga", "pottery", "kayak", "ramen", "tango", "sketching"]


def _texts(rng: np.random.Generator, n: int, tag: str) -> list[str]:
    return [f"the user {tag} {i} likes {' '.join(rng.choice(WORDS, 3))}" for i in range(n)]


def _answers(ltm: LongTermMemory, queries: list[str]) -> list[list[tuple[str, float, float | None]]]:
    return [[(m.id, m.score or 0.0, m.similarity) for m in ltm.recall(q, k=7, touch=False)] for q in queries]


def _fresh(path: Path, emb: Any, clock: Clock) -> LongTermMemory:
    return LongTermMemory(mindcore.open(path), user_id="u", namespace="chat", embedder=emb, max_items=0,
                          clock=clock)


def test_recall_after_writes_and_forgets_equals_a_fresh_store(tmp_path: Path, emb: Any, clock: Clock) -> None:
    rng = np.random.default_rng(1)
    path = tmp_path / "store"
    ltm = _fresh(path, emb, clock)
    ltm.remember_many(_texts(rng, SHADOW_MIN_ROWS + 300, "a"), dedupe=False)
    queries = [f"does the user like {' '.join(rng.choice(WORDS, 2))}?" for _ in range(6)]
    queries.append("the user a 17 likes")
    before = _answers(ltm, queries)  # loads the scope and, from its second search, builds its shadow

    entry = ltm._repo.entry()
    assert entry.row_shadow() is not None  # the path under test is taken

    added = [ltm.remember(t) for t in _texts(rng, 5, "b")]
    ltm.remember_many(_texts(rng, 40, "c"), dedupe=False)
    hits = ltm.recall("the user a 17 likes", k=3, touch=False)
    for m in [*hits[:2], *[a for a in added[:2] if a is not None]]:
        assert ltm.forget(m.id)
    clock.advance(days=2)
    after = _answers(ltm, queries)

    patched = ltm._repo.entry()
    assert patched.serial != entry.serial and patched.row_shadow() is not None
    assert patched._shadow_rows is not None  # carried from the patches, not rebuilt from a reload

    gone = {m.id for m in hits[:2]} | {a.id for a in added[:2] if a is not None}
    assert not gone & {mid for hits_ in after for mid, _, _ in hits_}  # forgotten memories are never recalled
    fresh = _fresh(path, emb, clock)
    assert after == _answers(fresh, queries)
    assert after != before


def test_write_judgement_over_a_shadowed_scope_finds_the_same_neighbours(tmp_path: Path, emb: Any, clock: Clock) -> None:
    from mindcore.ltm._decide import Stored, _candidates
    from mindcore.ltm.pipeline import _stored

    rng = np.random.default_rng(2)
    ltm = _fresh(tmp_path / "store", emb, clock)
    texts = _texts(rng, SHADOW_MIN_ROWS + 200, "a")
    ltm.remember_many(texts, dedupe=False)
    entry = ltm._repo.entry()
    entry.row_shadow()
    stored = _stored(entry, ltm.config, clock())
    assert stored.shadow is not None and stored.inv_norms is not None  # the path under test is taken

    news = [texts[5], texts[4000], f"{texts[77]} and jazz", "something else entirely about the user"]
    vectors = np.asarray(emb.embed(news), dtype=np.float32)
    plain = Stored(stored.ids, stored.matrix, stored.read, stored.retention)
    for threshold, k in ((0.4, 3), (0.0, 10), (0.95, 1)):
        assert _candidates(vectors, stored, threshold=threshold, k=k) == _candidates(
            vectors, plain, threshold=threshold, k=k)

    (again,) = ltm.remember_many([texts[4000]])
    assert again.action == "duplicate" and again.memory is not None and again.memory.text == texts[4000]
