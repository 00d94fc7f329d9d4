"""Agent Mind: header assembly and ``mind_recall`` latency at 100 / 1k / 10k / 100k entries.

* ``mind: header n=...``: ``Mind.header()`` on the committed store (what every run's system
  prompt starts with). Target: <= 2 ms p50 at 1k entries. ``lancedb``: the same header from
  LanceDB's own filtered scans of the same table (what the seed's ``assemble()`` does: active goals,
  pinned rules, unexpired clean high-confidence beliefs, clean recent reflections), sorted and
  rendered by the same Python code; the two texts are checked equal.
* ``mind: recall n=...``: ``Mind.recall(query)`` (beliefs and reflections, limit 5 each, the seed's
  hybrid score ``0.6 cos + 0.2 e^(-age/30d) + 0.2 confidence`` and threshold). Embedding is excluded
  (the query vector is a dict lookup). Target: <= 3 ms p50 at 10k. ``lancedb``: the same recall with
  LanceDB's own search on the same table: per type, an exact vector search
  (``table.search(vec).where(...)``, prefilter: namespace, type, not expired) whose candidates,
  every row passing the prefilter, are re-scored with the same hybrid formula in numpy (LanceDB ranks
  by cosine alone, and the hybrid top 5 is often outside its cosine top 100). Answers are checked
  against mindcore's (>= 95% overlap, ties aside).

* ``mind: flush one belief n=...``: a run that believed one new fact is flushed (the draft checked
  against the stored entries under the mind's lock, one commit); embedding excluded, the
  ``believe`` itself is not timed. ``mindcore-bulk-50``: the bulk path beside it, a run of 50 new
  beliefs flushed at once (items = beliefs).

Entries: 70% beliefs (mixed confidence), 25% reflections (a few pinned), 5% goals, created over the
last 90 days, written straight to the mind's table in one commit. ``extra_info`` holds ``p50_ms``
and ``p99_ms``, computed from every round's time (``benchmark.stats.stats.data``).

    pytest benches/bench_mind.py --benchmark-only -q
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from _bench import finish, size_label

import mindcore
from mindcore.kernels import hash_embed
from mindcore.mind import Belief, Goal, Mind, MindConfig, Reflection
from mindcore.mind._repo import _SCALARS, TABLE
from mindcore.mind.entries import PRIORITY_RANK, entry_from_row, entry_to_row
from mindcore.mind.header import MAX_RECENT_REFLECTIONS, render_header
from mindcore.store import col, to_where

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
SIZES = [100, 1_000] if QUICK else [100, 1_000, 10_000, 100_000]
DIM = 384
DAY = 86_400_000
NOW = 1_790_000_000_000
N_QUERIES = 32
TOPICS = ["TSMC capacity", "API rate limits", "postgres failover", "GPU prices", "hiring plan", "EU AI act",
          "customer churn", "latency budget", "vendor contracts", "launch checklist"]


class LookupEmbedder:
    """Vectors made up front (hashing embeddings of the texts): embedding cost is excluded."""

    dim = DIM
    model_id = "bench-lookup-384"

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}

    def add(self, texts: Sequence[str]) -> np.ndarray:
        vecs = hash_embed(list(texts), dim=DIM)
        self.table.update(zip(texts, vecs, strict=True))
        return vecs

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


def _entries(n: int, rng: np.random.Generator) -> list[Goal | Belief | Reflection]:
    out: list[Goal | Belief | Reflection] = []
    goals = 0
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        created = NOW - int(rng.integers(0, 90 * DAY))
        r = rng.random()
        if r < 0.05 and goals < 10:
            goals += 1
            out.append(Goal(f"g{i}", f"Track {topic} ({i})", priority=str(rng.choice(["high", "normal", "low"])),  # type: ignore[arg-type]
                            created_at=created, updated_at=created))
        elif r < 0.30:
            out.append(Reflection(f"r{i}", f"Lesson {i} about {topic}: check sources twice", pinned=i < 40 and i % 8 == 0,
                                  created_at=created, updated_at=created))
        else:
            out.append(Belief(f"b{i}", f"Fact {i}: {topic} is {rng.choice(['rising', 'flat', 'falling'])}",
                              str(rng.choice(["low", "medium", "high"])), created_at=created,  # type: ignore[arg-type]
                              updated_at=created, expires_at=None if i % 5 else NOW + 30 * DAY))
    return out


def _rounds(n: int, small: int) -> int:
    """``small`` rounds, fewer at 100k (LanceDB's side takes a fraction of a second a round there)."""
    return small if n < 100_000 else max(small // 5, 20)


@pytest.fixture(scope="module", params=SIZES, ids=lambda n: f"n={n}")
def mind(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    n: int = request.param
    rng = np.random.default_rng(n)
    emb = LookupEmbedder()
    entries = _entries(n, rng)
    texts = [e.description if isinstance(e, Goal) else e.content for e in entries]
    vecs = emb.add(texts)
    queries = [f"what do we know about {TOPICS[i % len(TOPICS)]} {i}?" for i in range(N_QUERIES)]
    emb.add(queries)
    with tempfile.TemporaryDirectory(prefix="bench-mind-") as tmp:
        m = Mind(mindcore.open(tmp), agent="bench", embedder=emb, config=MindConfig(token_budget=300),
                 clock=lambda: NOW)
        m._repo.commit([entry_to_row(e, None if isinstance(e, Goal) else v)
                        for e, v in zip(entries, vecs, strict=True)])
        assert m.header().startswith("--- AGENT MIND ---")
        yield {"n": n, "mind": m, "emb": emb, "queries": queries}
        m.close()





def test_header(benchmark: Any, mind: dict[str, Any]) -> None:
    m: Mind = mind["mind"]
    finish(benchmark, "mindcore", f"mind: header n={size_label(mind['n'])}")
    out = benchmark.pedantic(m.header, rounds=_rounds(mind["n"], 300), warmup_rounds=3)
    assert "## Beliefs" in out


def test_header_lancedb(benchmark: Any, mind: dict[str, Any]) -> None:
    import lancedb

    m: Mind = mind["mind"]
    cfg = m.config
    table = lancedb.connect(m.store.uri).open_table(TABLE)
    clean = col("error").is_null() | col("error").eq(False)
    unexpired = col("expires_at").is_null() | col("expires_at").gt(NOW)
    wheres = [
        to_where(m.namespace, f, table.schema)
        for f in (
            col("type").eq("goal") & col("status").eq("active"),
            col("type").eq("reflection") & col("pinned").eq(True) & unexpired,
            col("type").eq("belief") & col("confidence").eq("high") & clean & unexpired,
            col("type").eq("reflection") & col("pinned").eq(False) & clean & unexpired
            & col("created_at").ge(NOW - int(cfg.recency_window_days * DAY)),
        )
    ]
    columns = [c for c in _SCALARS if c != "id"] + ["id"]

    def header() -> str:
        goals, pinned, beliefs, recent = (
            [entry_from_row(r) for r in table.search().where(w).select(columns).limit(None).to_arrow().to_pylist()]
            for w in wheres
        )
        goals.sort(key=lambda g: (PRIORITY_RANK[g.priority], g.created_at, g.id))  # type: ignore[union-attr]
        pinned.sort(key=lambda r: (r.created_at, r.id))
        beliefs.sort(key=lambda b: (b.created_at, b.id), reverse=True)
        recent.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return render_header(goals, pinned, beliefs, recent[:MAX_RECENT_REFLECTIONS],  # type: ignore[arg-type]
                             token_budget=cfg.token_budget)

    assert header() == m.header()
    finish(benchmark, "lancedb", f"mind: header n={size_label(mind['n'])}")
    benchmark.pedantic(header, rounds=_rounds(mind["n"], 100), warmup_rounds=3)


def test_recall_mindcore(benchmark: Any, mind: dict[str, Any]) -> None:
    m: Mind = mind["mind"]
    qs = itertools.cycle(mind["queries"])
    assert m.recall(mind["queries"][0], threshold=0)
    finish(benchmark, "mindcore", f"mind: recall n={size_label(mind['n'])}")
    benchmark.pedantic(lambda: m.recall(next(qs)), rounds=_rounds(mind["n"], 300), warmup_rounds=3)


def test_recall_lancedb(benchmark: Any, mind: dict[str, Any]) -> None:
    import lancedb

    m: Mind = mind["mind"]
    emb: LookupEmbedder = mind["emb"]
    table = lancedb.connect(m.store.uri).open_table(TABLE)
    wheres = {
        k: to_where(m.namespace, col("type").eq(k) & (col("expires_at").is_null() | col("expires_at").gt(NOW)),
                    table.schema)
        for k in ("belief", "reflection")
    }
    cfg = m.config
    # Every row of the type is a candidate: LanceDB ranks by cosine alone, and the hybrid top 5 is
    # often outside its cosine top 100 (measured overlap ~0.5 at 10k), so fewer would not be the same recall.
    limits = {k: max(1, m._repo.table.count(m.namespace, col("type").eq(k))) for k in wheres}

    def recall(query: str) -> list[tuple[str, float]]:
        q = emb.embed([query])[0]
        out: list[tuple[str, float]] = []
        for kind, where in wheres.items():
            cand = (table.search(q, vector_column_name="vector").distance_type("cosine").where(where, prefilter=True)
                    .select(["id", "created_at", "recall_weight"]).limit(limits[kind]).to_arrow())
            cos = 1.0 - cand.column("_distance").to_numpy()
            age_days = (NOW - cand.column("created_at").to_numpy()) / DAY
            score = 0.6 * cos + 0.2 * np.exp(-age_days / 30) + 0.2 * cand.column("recall_weight").to_numpy()
            keep = np.flatnonzero(score >= cfg.retrieval_threshold)
            best = keep[np.argsort(-score[keep], kind="stable")][:5]
            ids = cand.column("id").to_pylist()
            out += [(ids[i], float(score[i])) for i in best]
        return out

    # The same answers as mindcore (ties aside).
    overlap = []
    for query in mind["queries"][:8]:
        ref = {r.entry.id for r in m.recall(query) if not isinstance(r.entry, Goal)}
        got = {i for i, _ in recall(query)}
        overlap.append(len(ref & got) / max(1, len(ref)))
    assert np.mean(overlap) >= 0.95, overlap
    qs = itertools.cycle(mind["queries"])
    finish(benchmark, "lancedb", f"mind: recall n={size_label(mind['n'])}")
    benchmark.pedantic(lambda: recall(next(qs)), rounds=_rounds(mind["n"], 100), warmup_rounds=3)


def _new_beliefs(mind: dict[str, Any], count: int, seed: int) -> list[str]:
    """Texts unlike each other and the stored entries (so each belief is new), embedded up front."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    texts = [" ".join("".join(rng.choice(letters, 7)) for _ in range(6)) for _ in range(count)]
    mind["emb"].add(texts)
    return texts


@pytest.mark.parametrize("impl", ["mindcore", "mindcore-bulk-50"])
def test_flush(benchmark: Any, mind: dict[str, Any], impl: str) -> None:
    m: Mind = mind["mind"]
    per = 1 if impl == "mindcore" else 50
    rounds = 100 if per == 1 else 10
    texts = iter(_new_beliefs(mind, per * (rounds + 3), seed=per))
    created: list[int] = []

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        run = m.run()
        for _ in range(per):
            run.believe(next(texts))
        return (run,), {}

    def flush(run: Any) -> None:
        created.append(run.flush().created)

    finish(benchmark, impl, f"mind: flush one belief n={size_label(mind['n'])}", per)
    benchmark.pedantic(flush, setup=setup, rounds=rounds, warmup_rounds=2)
    assert sum(created) >= 0.9 * per * len(created)  # new beliefs, not near-duplicates of stored ones
