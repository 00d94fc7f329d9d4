"""Long-term memory: recall latency and extraction-pipeline throughput (embedding and LLM excluded).

* ``ltm: recall top-5 n=...``: one user's memories (500: the default cap; 1k and 100k: past it).
  ``mindcore`` is ``LongTermMemory.recall`` with the default weights (seed hybrid score + BM25
  lexical fusion), last-access bumps on as in production; ``mindcore-seed`` the seed's score
  without lexical fusion (the store's cached ``hybrid_topk`` search); ``lancedb`` LanceDB's own
  exact vector search over the same table with the same namespace prefilter (pure cosine, no
  re-ranking: less work than either mindcore row). ``mindcore-threads`` is the same memories
  stored as conversations of 20 turns (``thread`` and ``position``), recalled with the default
  one neighbour each side of a hit; ``mindcore-threads-no-neighbours`` the same store with
  ``RecallOptions(neighbours=0)``. ``mindcore-dated`` is the same memories dated over two years
  in the order they were stored, each query naming a month (the default time lever: a second ranking pass over that month's
  memories); ``mindcore-dated-no-time`` the same queries with ``RecallOptions(time_boost=0)``.
  The query embedding is a dict lookup. p50/p99 in extra_info.
* ``ltm: first recall after a write``: a memory is remembered (not timed), then one recall: what
  the next turn pays after an extraction wrote (the write patched the cached scope and the
  lexical index follows it). ``mindcore-no-write`` is the same recall with nothing written
  before it, same run: the difference is what a write costs the next recall.
* ``ltm: remember one``: one ``remember()`` (duplicate check against the whole scope, one commit);
  ``lancedb-add`` is LanceDB's own single-row add to the same table (no duplicate check);
  ``mindcore-bulk-100`` the bulk path beside it, ``remember_many`` of 100 facts (items = facts).
* ``ltm: remember, 8 threads x 50``: eight threads of one process each remembering 50 facts
  for their own user (one burst, items = facts); concurrent writers share commits (group
  commit), and the LanceDB commits the burst took are in extra_info. ``mindcore-one-thread``
  is the same 400 facts remembered one after the other by one thread.
* ``ltm: footprint 5000 remember()``: 5,000 facts remembered one at a time into one scope,
  beside the same facts in one ``remember_many`` (``mindcore-bulk``); extra_info holds the bytes
  on disk of each after the store's automatic maintenance, and after ``Store.compact`` with no
  grace period (what is left once old versions may go).
* ``ltm: footprint 4 threads remember()+recall()``: four threads each remembering facts one at a
  time and recalling after each, last-access bumps written 0.1 s after a recall (default 2 s) so
  that updates keep coming (each one conflicts with a background compaction rewriting the rows it
  touches), beside the same facts in one ``remember_many`` (``mindcore-bulk``); extra_info as
  above, plus the memory table's fragments after the compact.
* ``ltm: extraction pipeline``: ``remember_conversation`` with a scripted LLM reply of 8 new
  candidates (parse, secret filter, near-duplicate checks against the store and the batch, one
  commit with the inserts and the evictions at the 500 cap); items = candidates. Per turn the
  LanceDB commit dominates (the scope's cached vectors are patched with the commit, not reloaded).
  ``mindcore-background``: ``remember_conversation_in_background`` for a burst of 25 turns, then
  wait for all (turns queued while the worker is busy are stored in one commit);
  ``mindcore-background-uncoalesced`` the same with one commit per turn (the behaviour before
  coalescing), same run. The ``batch`` group ingests 250 such replies at once
  (``ingest_extractions``, what ``remember_conversations`` does for a backfill).

    pytest benches/bench_ltm.py --benchmark-only -q
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from _bench import finish, size_label

import mindcore
from mindcore.llm import ScriptedLLM
from mindcore.ltm import LongTermMemory, RecallOptions, RecallWeights
from mindcore.ltm._repo import TABLE, scope_key
from mindcore.store import to_where

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
DIM = 384
SIZES = [500, 1_000, 5_000] if QUICK else [500, 1_000, 100_000]
N_QUERIES = 64
THREAD_TURNS = 20
DAY_MS = 86_400_000
DATED_FROM = 1_704_067_200_000  # 2024-01-01 UTC: memories dated over 2024 and 2025
MONTHS = [f"{m} {y}" for y in (2024, 2025) for m in ("January", "February", "March", "April", "May", "June", "July",
                                                      "August", "September", "October", "November", "December")]
K = 5
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ri", "so", "ta", "vu", "ze") for b in
         ("ba", "de", "fi", "go", "hu", "ja", "ke", "li", "mo", "ny", "po", "qu", "ra", "si", "to")]


class LookupEmbedder:
    """Vectors made up front: embedding cost is excluded from the timings."""

    dim = DIM
    model_id = "bench-lookup-384"

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}
        self.rng = np.random.default_rng(0)

    def add(self, texts: Sequence[str]) -> None:
        v = self.rng.standard_normal((len(texts), DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        self.table.update(zip(texts, v, strict=True))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


def _texts(rng: np.random.Generator, n: int, start: int = 0) -> list[str]:
    return [f"Memory {start + i}: likes " + " ".join(rng.choice(WORDS, 5)) for i in range(n)]




@pytest.fixture(scope="module", params=SIZES, ids=lambda n: f"n={n}")
def corpus(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    n: int = request.param
    rng = np.random.default_rng(n)
    emb = LookupEmbedder()
    texts = _texts(rng, n)
    queries = [f"does the user like {' '.join(rng.choice(WORDS, 2))}?" for _ in range(N_QUERIES)]
    emb.add(texts)
    emb.add(queries)
    with tempfile.TemporaryDirectory(prefix="bench-ltm-") as tmp:
        store = mindcore.open(tmp)
        ltm = LongTermMemory(store, user_id="bench-user", namespace="chat", embedder=emb, max_items=0)
        for i in range(0, n, 20_000):
            ltm.remember_many(texts[i:i + 20_000], dedupe=False)
        seed = LongTermMemory(store, user_id="bench-user", namespace="chat", embedder=emb, max_items=0,
                              weights=RecallWeights(lexical=0.0))
        # The same memories as conversations of THREAD_TURNS turns each (thread and position kept).
        threaded = LongTermMemory(store, user_id="bench-user", namespace="threads", embedder=emb, max_items=0)
        for i in range(0, n, 20_000):
            threaded.remember_many([{"text": t, "thread": f"chat-{j // THREAD_TURNS}", "position": j % THREAD_TURNS}
                                    for j, t in enumerate(texts[i:i + 20_000], start=i)], dedupe=False)
        # The same memories dated over two years in the order they were stored, asked about a month.
        dated = LongTermMemory(store, user_id="bench-user", namespace="dated", embedder=emb, max_items=0)
        for i in range(0, n, 20_000):
            dated.remember_many([{"text": t, "created_at": DATED_FROM + (j * 730 // n) * DAY_MS}
                                 for j, t in enumerate(texts[i:i + 20_000], start=i)], dedupe=False)
        dated_queries = [f"{q[:-1]} in {MONTHS[j % 24]}?" for j, q in enumerate(queries)]
        emb.add(dated_queries)
        for memory in (ltm, seed, threaded, dated):
            memory.recall(queries[0])  # warm the caches
        yield {"n": n, "ltm": ltm, "seed": seed, "threaded": threaded, "dated": dated, "emb": emb,
               "queries": queries, "dated_queries": dated_queries, "store": store}
        for memory in (ltm, seed, threaded, dated):
            memory.close()



def _rounds(n: int) -> int:
    return 200 if n < 10_000 else 60


def test_recall_mindcore(benchmark: Any, corpus: dict[str, Any]) -> None:
    ltm: LongTermMemory = corpus["ltm"]
    qs = itertools.cycle(corpus["queries"])
    assert len(ltm.recall(corpus["queries"][1], k=K)) == K
    finish(benchmark, "mindcore", f"ltm: recall top-{K} n={size_label(corpus['n'])}", 1)
    benchmark.pedantic(lambda: ltm.recall(next(qs), k=K), rounds=_rounds(corpus["n"]), warmup_rounds=3)


def test_recall_mindcore_seed(benchmark: Any, corpus: dict[str, Any]) -> None:
    seed: LongTermMemory = corpus["seed"]
    qs = itertools.cycle(corpus["queries"])
    finish(benchmark, "mindcore-seed", f"ltm: recall top-{K} n={size_label(corpus['n'])}", 1)
    benchmark.pedantic(lambda: seed.recall(next(qs), k=K), rounds=_rounds(corpus["n"]), warmup_rounds=3)


@pytest.mark.parametrize("neighbours", [1, 0], ids=["threads", "threads-no-neighbours"])
def test_recall_threads(benchmark: Any, corpus: dict[str, Any], neighbours: int) -> None:
    """``mindcore-threads``: the same memories stored in threads, recalled with the default one
    neighbour each side of a hit; ``-no-neighbours``: the same store with ``neighbours=0``."""
    threaded: LongTermMemory = corpus["threaded"]
    options = RecallOptions(neighbours=neighbours)
    qs = itertools.cycle(corpus["queries"])
    hits = threaded.recall(corpus["queries"][1], k=K, options=options)
    assert len(hits) == K and all(m.thread is not None for m in hits)
    impl = "mindcore-threads" if neighbours else "mindcore-threads-no-neighbours"
    finish(benchmark, impl, f"ltm: recall top-{K} n={size_label(corpus['n'])}", 1)
    benchmark.pedantic(lambda: threaded.recall(next(qs), k=K, options=options), rounds=_rounds(corpus["n"]),
                       warmup_rounds=3)


@pytest.mark.parametrize("boost", [1.0, 0.0], ids=["dated", "dated-no-time"])
def test_recall_dated(benchmark: Any, corpus: dict[str, Any], boost: float) -> None:
    """``mindcore-dated``: memories dated over two years, each query naming a month ("... in May
    2025?"): the default time lever ranks the month's memories apart in a second pass;
    ``-no-time``: the same queries with ``time_boost=0``."""
    dated: LongTermMemory = corpus["dated"]
    options = RecallOptions(time_boost=boost)
    qs = itertools.cycle(corpus["dated_queries"])
    assert len(dated.recall(corpus["dated_queries"][1], k=K, options=options)) == K
    impl = "mindcore-dated" if boost else "mindcore-dated-no-time"
    finish(benchmark, impl, f"ltm: recall top-{K} n={size_label(corpus['n'])}", 1)
    benchmark.pedantic(lambda: dated.recall(next(qs), k=K, options=options), rounds=_rounds(corpus["n"]),
                       warmup_rounds=3)


def test_recall_lancedb(benchmark: Any, corpus: dict[str, Any]) -> None:
    import lancedb

    store = corpus["store"]
    emb: LookupEmbedder = corpus["emb"]
    table = lancedb.connect(store.uri).open_table(TABLE)
    where = to_where(scope_key("bench-user", "chat", None), None, table.schema)

    def search(query: str) -> list[str]:
        hits = (
            table.search(emb.table[query], vector_column_name="vector").distance_type("cosine")
            .bypass_vector_index().where(where, prefilter=True).select(["id", "text"]).limit(K).to_arrow()
        )
        return [str(i) for i in hits.column("id").to_pylist()]

    # Same answer as mindcore with pure-cosine weights (checked outside the timed call).
    cosine = LongTermMemory(store, user_id="bench-user", namespace="chat", embedder=emb, max_items=0,
                            weights=RecallWeights(similarity=1.0, recency=0.0, importance=0.0, lexical=0.0))
    for q in corpus["queries"][:4]:
        assert search(q) == [m.id for m in cosine.recall(q, k=K, touch=False)]
    cosine.close()
    qs = itertools.cycle(corpus["queries"])
    finish(benchmark, "lancedb", f"ltm: recall top-{K} n={size_label(corpus['n'])}", 1)
    benchmark.pedantic(lambda: search(next(qs)), rounds=_rounds(corpus["n"]) // 2, warmup_rounds=1)


@pytest.mark.parametrize("impl", ["mindcore", "mindcore-no-write"])
def test_recall_after_write(benchmark: Any, corpus: dict[str, Any], impl: str) -> None:
    """The first recall after a write (the write patched the scope's cached vectors; the lexical
    index follows the patch); the baseline recalls with nothing written since the last recall."""
    ltm: LongTermMemory = corpus["ltm"]
    emb: LookupEmbedder = corpus["emb"]
    qs = itertools.cycle(corpus["queries"])
    fresh = iter(_texts(np.random.default_rng(99), 1000, start=10**7))

    def write() -> tuple[tuple[str], dict[str, Any]]:
        if impl == "mindcore":
            text = next(fresh)
            emb.add([text])
            ltm.remember(text)
        return (next(qs),), {"k": K}

    finish(benchmark, impl, f"ltm: first recall after a write n={size_label(corpus['n'])}", 1)
    benchmark.pedantic(ltm.recall, setup=write, rounds=20 if corpus["n"] < 10_000 else 10)


def test_remember_one(benchmark: Any, corpus: dict[str, Any]) -> None:
    """One remember() into a scope of n memories (embedding excluded: a lookup)."""
    ltm: LongTermMemory = corpus["ltm"]
    emb: LookupEmbedder = corpus["emb"]
    fresh = iter(_texts(np.random.default_rng(7), 2000, start=2 * 10**7))

    def setup() -> tuple[tuple[str], dict[str, Any]]:
        text = next(fresh)
        emb.add([text])
        return (text,), {}

    finish(benchmark, "mindcore", f"ltm: remember one n={size_label(corpus['n'])}", 1)
    benchmark.pedantic(ltm.remember, setup=setup, rounds=20 if corpus["n"] < 10_000 else 10)


def test_remember_one_lancedb_add(benchmark: Any, corpus: dict[str, Any]) -> None:
    """Baseline: LanceDB's own single-row add to the same table (no duplicate check, no eviction)."""
    import lancedb
    import pyarrow as pa

    store = corpus["store"]
    table = lancedb.connect(store.uri).open_table(TABLE)
    template = table.search().limit(1).to_arrow()
    rows = iter(range(10**6))

    def add() -> None:
        i = next(rows)
        table.add(template.set_column(template.schema.get_field_index("id"), "id", pa.array([f"bench-add-{i}"])))

    finish(benchmark, "lancedb-add", f"ltm: remember one n={size_label(corpus['n'])}", 1)
    benchmark.pedantic(add, rounds=20 if corpus["n"] < 10_000 else 10)


def test_remember_bulk(benchmark: Any, corpus: dict[str, Any]) -> None:
    """The bulk path beside ``remember one``: 100 facts per ``remember_many`` call."""
    ltm: LongTermMemory = corpus["ltm"]
    emb: LookupEmbedder = corpus["emb"]
    fresh = iter(_texts(np.random.default_rng(8), 100 * 12, start=3 * 10**7))

    def setup() -> tuple[tuple[list[str]], dict[str, Any]]:
        texts = [next(fresh) for _ in range(100)]
        emb.add(texts)
        return (texts,), {}

    finish(benchmark, "mindcore-bulk-100", f"ltm: remember one n={size_label(corpus['n'])}", 100)
    benchmark.pedantic(ltm.remember_many, setup=setup, rounds=10 if corpus["n"] < 10_000 else 5)


@pytest.mark.parametrize("impl", ["mindcore", "mindcore-one-thread"])
def test_remember_threads(benchmark: Any, impl: str) -> None:
    """Eight threads remembering 50 facts each (their own users) at once: group commit."""
    import threading

    threads, per = 8, 50
    emb = LookupEmbedder()
    rounds = 3
    texts = _texts(np.random.default_rng(11), threads * per * (rounds + 1))
    emb.add(texts)
    burst = iter(range(rounds + 1))
    with tempfile.TemporaryDirectory(prefix="bench-ltm-threads-") as tmp:
        store = mindcore.open(tmp)
        users = [LongTermMemory(store, user_id=f"user-{k}", namespace="chat", embedder=emb, max_items=0)
                 for k in range(threads)]
        table = users[0]._repo.table
        commits: list[int] = []

        def run() -> None:
            b = next(burst)
            chunk = texts[b * threads * per:(b + 1) * threads * per]
            before = table.version
            if impl == "mindcore-one-thread":
                for k in range(threads):
                    for t in chunk[k * per:(k + 1) * per]:
                        users[k].remember(t)
            else:
                start = threading.Barrier(threads)

                def write(k: int) -> None:
                    start.wait()
                    for t in chunk[k * per:(k + 1) * per]:
                        users[k].remember(t)

                pool = [threading.Thread(target=write, args=(k,)) for k in range(threads)]
                for th in pool:
                    th.start()
                for th in pool:
                    th.join()
            commits.append(table.version - before)

        finish(benchmark, impl, f"ltm: remember, {threads} threads x {per}", threads * per)
        benchmark.pedantic(run, rounds=rounds, warmup_rounds=1)
        benchmark.extra_info["lancedb_commits_per_burst"] = commits[1:]  # versions; compaction adds a few
        assert sum(len(u) for u in users) == threads * per * (rounds + 1)
        for u in users:
            u.close()
        store.close()


@pytest.mark.parametrize("impl", ["mindcore", "mindcore-bulk"])
def test_footprint_concurrent(benchmark: Any, impl: str) -> None:
    """Bytes on disk after four threads of single remember() and recall() calls against the same
    facts written in bulk; maintenance runs in the background meanwhile."""
    import threading
    from datetime import timedelta

    from mindcore.store.stats import folder_bytes

    threads, per = 4, 50 if QUICK else 150
    emb = LookupEmbedder()
    texts = _texts(np.random.default_rng(17), threads * per)
    queries = [f"does the user like {w}?" for w in WORDS]
    emb.add(texts)
    emb.add(queries)
    with tempfile.TemporaryDirectory(prefix="bench-ltm-footprint-threads-") as tmp:
        store = mindcore.open(tmp)
        ltm = LongTermMemory(store, user_id="u", namespace="chat", embedder=emb, max_items=0, touch_delay=0.1)

        def one_thread(k: int) -> None:
            for i in range(k * per, (k + 1) * per):
                ltm.remember(texts[i])
                ltm.recall(queries[i % len(queries)])

        def write() -> None:
            if impl == "mindcore-bulk":
                ltm.remember_many(texts)
                return
            workers = [threading.Thread(target=one_thread, args=(k,)) for k in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()

        finish(benchmark, impl, f"ltm: footprint {threads} threads remember()+recall()", threads * per)
        benchmark.pedantic(write, rounds=1)
        ltm.flush()
        store.wait_for_maintenance()
        benchmark.extra_info["disk_mb_after_writes"] = round(folder_bytes(tmp) / 1e6, 2)
        store.compact(cleanup_grace=timedelta(0))
        benchmark.extra_info["disk_mb_after_compact"] = round(folder_bytes(tmp) / 1e6, 2)
        benchmark.extra_info["fragments_after_compact"] = store.open_table(TABLE).stats().fragments
        assert len(ltm) == threads * per
        ltm.close()
        store.close()


@pytest.mark.parametrize("impl", ["mindcore", "mindcore-bulk"])
def test_footprint(benchmark: Any, impl: str) -> None:
    """Bytes on disk after 5,000 single remember() calls against the same facts written in bulk."""
    from datetime import timedelta

    from mindcore.store.stats import folder_bytes

    n = 1_000 if QUICK else 5_000
    emb = LookupEmbedder()
    texts = _texts(np.random.default_rng(13), n)
    emb.add(texts)
    with tempfile.TemporaryDirectory(prefix="bench-ltm-footprint-") as tmp:
        store = mindcore.open(tmp)
        ltm = LongTermMemory(store, user_id="u", namespace="chat", embedder=emb, max_items=0)

        def write() -> None:
            if impl == "mindcore-bulk":
                ltm.remember_many(texts)
            else:
                for t in texts:
                    ltm.remember(t)

        finish(benchmark, impl, f"ltm: footprint {n} remember()", n)
        benchmark.pedantic(write, rounds=1)
        store.wait_for_maintenance()
        benchmark.extra_info["disk_mb_after_writes"] = round(folder_bytes(tmp) / 1e6, 2)
        store.compact(cleanup_grace=timedelta(0))
        benchmark.extra_info["disk_mb_after_compact"] = round(folder_bytes(tmp) / 1e6, 2)
        assert len(ltm) == n
        ltm.close()
        store.close()


def test_extraction_pipeline(benchmark: Any) -> None:
    rng = np.random.default_rng(1)
    emb = LookupEmbedder()
    rounds = 40 if QUICK else 250
    replies = []
    for r in range(rounds + 2):
        texts = _texts(rng, 8, start=r * 8)
        emb.add(texts)
        replies.append(json.dumps({"memories": [
            {"text": t, "kind": "preference", "importance": round(float(rng.random()), 2)} for t in texts
        ]}))
    conversation = [
        {"role": "user", "content": "I like kaba and lode, and I am moving to Mide next month."},
        {"role": "assistant", "content": "Noted! Good luck with the move."},
    ]
    with tempfile.TemporaryDirectory(prefix="bench-ltm-x-") as tmp:
        ltm = LongTermMemory(mindcore.open(tmp), user_id="bench-user", embedder=emb,
                             extractor=ScriptedLLM(replies), max_items=500)
        # 60 replies up front so the timed rounds run at (and past) the 500 cap.
        upfront = 2 if QUICK else 60
        for _ in range(upfront):
            assert len(ltm.remember_conversation(conversation).stored) == 8
        finish(benchmark, "mindcore", "ltm: extraction pipeline (8 candidates per turn)", 8)
        timed = rounds + 2 - upfront - 1
        report = benchmark.pedantic(lambda: ltm.remember_conversation(conversation), rounds=timed,
                                    warmup_rounds=1)
        # At the cap a new low-importance memory can rank below every stored one and not be written.
        assert report.ok and report.candidates == 8 and len(report.stored) + report.evicted >= 8
        assert len(ltm) == min(500, 8 * (upfront + 1 + timed))
        benchmark.extra_info["candidates_per_s"] = round(8 / benchmark.stats.stats.median)
        ltm.close()


@pytest.mark.parametrize("impl", ["mindcore-background", "mindcore-background-uncoalesced"])
def test_extraction_pipeline_background(benchmark: Any, impl: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if impl.endswith("uncoalesced"):
        monkeypatch.setattr(LongTermMemory, "_COALESCE_MAX", 1)
    rng = np.random.default_rng(3)
    emb = LookupEmbedder()
    burst = 25
    rounds = 3 if QUICK else 8
    upfront = 60
    replies = []
    for r in range(upfront + burst * (rounds + 1)):
        texts = _texts(rng, 8, start=r * 8)
        emb.add(texts)
        replies.append(json.dumps({"memories": [
            {"text": t, "kind": "preference", "importance": round(float(rng.random()), 2)} for t in texts
        ]}))
    conversation = [{"role": "user", "content": "I like kaba and lode."}, {"role": "assistant", "content": "Noted!"}]
    with tempfile.TemporaryDirectory(prefix="bench-ltm-xbg-") as tmp:
        ltm = LongTermMemory(mindcore.open(tmp), user_id="bench-user", embedder=emb,
                             extractor=ScriptedLLM(replies[upfront:]), max_items=500)
        ltm.ingest_extractions(replies[:upfront])  # the scope starts at the cap

        def burst_of_turns() -> list[Any]:
            futures = [ltm.remember_conversation_in_background(conversation) for _ in range(burst)]
            return [f.result() for f in futures]

        finish(benchmark, impl, "ltm: extraction pipeline (8 candidates per turn)", 8 * burst)
        reports = benchmark.pedantic(burst_of_turns, rounds=rounds, warmup_rounds=1)
        assert all(r.ok and r.candidates == 8 and len(r.stored) + r.evicted >= 8 for r in reports)
        assert len(ltm) == 500
        benchmark.extra_info["candidates_per_s"] = round(8 * burst / benchmark.stats.stats.median)
        ltm.close()


def test_extraction_pipeline_batch(benchmark: Any) -> None:
    rng = np.random.default_rng(2)
    emb = LookupEmbedder()
    per_batch = 25 if QUICK else 250
    rounds = 3 if QUICK else 5
    batches = []
    for b in range(rounds + 2):
        replies = []
        for r in range(per_batch):
            texts = _texts(rng, 8, start=(b * per_batch + r) * 8)
            emb.add(texts)
            replies.append(json.dumps({"memories": [
                {"text": t, "kind": "fact", "importance": round(float(rng.random()), 2)} for t in texts]}))
        batches.append(replies)
    with tempfile.TemporaryDirectory(prefix="bench-ltm-xb-") as tmp:
        ltm = LongTermMemory(mindcore.open(tmp), user_id="bench-user", embedder=emb, max_items=500)
        ltm.ingest_extractions(batches.pop())  # the scope starts full
        group = f"ltm: extraction pipeline batch ({per_batch} turns x 8 candidates)"
        finish(benchmark, "mindcore", group, per_batch * 8)
        reports = benchmark.pedantic(lambda: ltm.ingest_extractions(batches.pop()), rounds=rounds,
                                     warmup_rounds=1)
        assert all(r.ok for r in reports) and len(ltm) == 500
        benchmark.extra_info["candidates_per_s"] = round(per_batch * 8 / benchmark.stats.stats.median)
        ltm.close()
