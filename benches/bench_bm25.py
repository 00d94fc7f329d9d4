"""BM25 over 10k real tool descriptions: top-10 per query and index build, against rank-bm25.

Baselines (each checked against mindcore outside the timed call):
* ``rank-bm25``: ``BM25Okapi`` with its idf switched to Lucene's (same formula as mindcore, so the
  scores must agree to float tolerance); per query ``get_scores`` + ``argsort``.
* ``rank-bm25-rs`` (optional): the Rust drop-in for rank-bm25; it keeps rank-bm25's own Okapi idf
  (an override would send it back to the Python path), so it is checked against plain rank-bm25.
* ``bm25s`` (optional): sparse-matrix BM25, ``method="lucene"``; its scores are mindcore's divided
  by (k1 + 1) (Lucene dropped that constant), so the rankings agree.

The baselines get their tokens from mindcore's tokenizer (`bm25_tokenize`, Rust) so all four index
the same tokens; it also spares them a slower Python tokenizer, which only favours them.

Corpus: BFCL's 2,405 function docs (name, description, parameter names and descriptions) and
MetaTool's 199 plugin descriptions, repeated with seeded perturbations (words dropped and borrowed
from other tools, a version suffix on the name) up to 10,000 documents. Queries: real BFCL and
MetaTool user queries.

    pytest benches/bench_bm25.py --benchmark-only -q
"""

from __future__ import annotations

import csv
import json
import math
import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from mindcore.eval import data_dir
from mindcore.kernels import BM25Index, bm25_tokenize

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
N_DOCS = 1_000 if QUICK else 10_000
N_QUERIES = 10 if QUICK else 100
K = 10
K1, B = 0.9, 0.4


def _load() -> tuple[list[str], list[str]]:
    data = data_dir() / "tools"
    if not (data / "bfcl" / "tool_pool.jsonl").exists():
        pytest.skip(f"shared tool data not found under {data}")
    base: list[str] = []
    with (data / "bfcl" / "tool_pool.jsonl").open() as f:
        for line in f:
            tool = json.loads(line)
            props = tool.get("parameters", {}).get("properties", {})
            params = " ".join(f"{k} {v.get('description', '')}" for k, v in props.items() if isinstance(v, dict))
            base.append(f"{tool['name']} {tool['description']} {params}")
    plugins = json.loads((data / "metatool" / "plugin_des.json").read_text())
    base.extend(f"{name} {desc}" for name, desc in plugins.items())

    rng = random.Random(0)
    pool = [w for doc in base for w in doc.split()]
    docs = list(base)
    copy = 1
    while len(docs) < N_DOCS:
        for doc in base:
            words = [w for w in doc.split() if rng.random() > 0.1]
            words[:0] = [f"{words[0]}_v{copy}"] if words else []
            words.extend(rng.choice(pool) for _ in range(3))
            docs.append(" ".join(words))
        copy += 1
    docs = docs[:N_DOCS]

    queries: list[str] = []
    with (data / "bfcl" / "queries.jsonl").open() as f:
        bfcl = [json.loads(line)["query"] for line in f]
    queries.extend(bfcl[:: max(1, len(bfcl) // (N_QUERIES // 2))][: N_QUERIES // 2])
    with (data / "metatool" / "all_clean_data.csv").open(newline="") as f:
        meta = [row["Query"] for row in csv.DictReader(f)]
    queries.extend(meta[:: max(1, len(meta) // (N_QUERIES - len(queries)))][: N_QUERIES - len(queries)])
    return docs, queries


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str]]:
    return _load()


def _lucene_rank_bm25() -> Any:
    rank_bm25 = pytest.importorskip("rank_bm25")

    class LuceneBM25(rank_bm25.BM25Okapi):  # type: ignore[misc, name-defined]
        """rank-bm25's Okapi scoring with Lucene's idf: the exact formula mindcore implements."""

        def _calc_idf(self, nd: dict[str, int]) -> None:
            for word, freq in nd.items():
                self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    return LuceneBM25


def _top(scores: np.ndarray) -> np.ndarray:
    """Top-K of positive scores, best first, ties by lower index (mindcore's contract)."""
    order = np.argsort(-scores, kind="stable")[:K]
    return order[scores[order] > 0]


def _same_top(ours: np.ndarray, ref_scores: np.ndarray, ref_ids: np.ndarray) -> None:
    """Our picks carry the reference's top scores (robust to f32/f64 near-ties)."""
    assert len(ours) == len(ref_ids)
    np.testing.assert_allclose(ref_scores[ours], ref_scores[ref_ids], rtol=1e-5)


def _mark(benchmark: Any, case: str, impl: str, items: int) -> None:
    benchmark.group = f"bm25: {case}"
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["items"] = items


# --- top-10 per query ------------------------------------------------------------------------


def test_top10_mindcore(benchmark: Any, corpus: tuple[list[str], list[str]]) -> None:
    docs, queries = corpus
    idx = BM25Index(docs, k1=K1, b=B)
    _mark(benchmark, f"top-{K} n={N_DOCS} ({len(queries)} queries)", "mindcore", len(queries))
    out = benchmark(lambda: [idx.top_k(q, K, normalize=False) for q in queries])
    ref = _lucene_rank_bm25()([bm25_tokenize(d) for d in docs], k1=K1, b=B)
    for q, (ids, vals) in zip(queries[:20], out, strict=False):
        ref_scores = ref.get_scores(bm25_tokenize(q))
        _same_top(ids, ref_scores, _top(ref_scores))
        np.testing.assert_allclose(vals, ref_scores[ids], rtol=1e-5)


def _bench_query_loop(benchmark: Any, impl: str, n_queries: int, fn: Callable[[], Any]) -> Any:
    _mark(benchmark, f"top-{K} n={N_DOCS} ({n_queries} queries)", impl, n_queries)
    return benchmark.pedantic(fn, rounds=3 if not QUICK else 2, iterations=1, warmup_rounds=0)


def test_top10_rank_bm25(benchmark: Any, corpus: tuple[list[str], list[str]]) -> None:
    docs, queries = corpus
    ref = _lucene_rank_bm25()([bm25_tokenize(d) for d in docs], k1=K1, b=B)
    out = _bench_query_loop(
        benchmark, "rank-bm25", len(queries), lambda: [_top(ref.get_scores(bm25_tokenize(q))) for q in queries]
    )
    assert len(out) == len(queries)
    idx = BM25Index(docs, k1=K1, b=B)
    for q, ref_ids in zip(queries[:20], out, strict=False):
        _same_top(idx.top_k(q, K, normalize=False)[0], ref.get_scores(bm25_tokenize(q)), ref_ids)


def test_top10_rank_bm25_rs(benchmark: Any, corpus: tuple[list[str], list[str]]) -> None:
    rs = pytest.importorskip("rank_bm25_rs")
    rank_bm25 = pytest.importorskip("rank_bm25")
    docs, queries = corpus
    toks = [bm25_tokenize(d) for d in docs]
    bm = rs.BM25Okapi(toks, k1=K1, b=B)
    out = _bench_query_loop(
        benchmark, "rank-bm25-rs", len(queries), lambda: [_top(bm.get_scores(bm25_tokenize(q))) for q in queries]
    )
    benchmark.extra_info["idf"] = "okapi (rank-bm25's own)"
    plain = rank_bm25.BM25Okapi(toks, k1=K1, b=B)
    for q, ids in zip(queries[:10], out, strict=False):
        want = plain.get_scores(bm25_tokenize(q))
        np.testing.assert_allclose(bm.get_scores(bm25_tokenize(q)), want, rtol=1e-12)
        _same_top(ids, want, _top(want))


def test_top10_bm25s(benchmark: Any, corpus: tuple[list[str], list[str]]) -> None:
    bm25s = pytest.importorskip("bm25s")
    docs, queries = corpus
    retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
    retriever.index([bm25_tokenize(d) for d in docs], show_progress=False)

    def run() -> list[np.ndarray]:
        out = []
        for q in queries:
            toks = [t for t in bm25_tokenize(q) if t in retriever.vocab_dict]
            out.append(_top(retriever.get_scores(toks)) if toks else np.zeros(0, dtype=np.int64))
        return out

    _mark(benchmark, f"top-{K} n={N_DOCS} ({len(queries)} queries)", "bm25s", len(queries))
    out = benchmark(run)
    idx = BM25Index(docs, k1=K1, b=B)
    for q, ids in zip(queries, out, strict=True):
        ours = idx.scores(q)
        np.testing.assert_allclose(ours[ids], ours[idx.top_k(q, K)[0]], rtol=1e-5)


# --- index build -----------------------------------------------------------------------------


def test_build_mindcore(benchmark: Any, corpus: tuple[list[str], list[str]]) -> None:
    docs, _ = corpus
    _mark(benchmark, f"index build n={N_DOCS}", "mindcore", len(docs))
    idx = benchmark(lambda: BM25Index(docs, k1=K1, b=B))
    assert len(idx) == len(docs)


def test_build_rank_bm25(benchmark: Any, corpus: tuple[list[str], list[str]]) -> None:
    docs, _ = corpus
    cls = _lucene_rank_bm25()
    _mark(benchmark, f"index build n={N_DOCS}", "rank-bm25", len(docs))
    bm = benchmark.pedantic(lambda: cls([bm25_tokenize(d) for d in docs], k1=K1, b=B), rounds=3, iterations=1)
    assert bm.corpus_size == len(docs)


def test_build_rank_bm25_rs(benchmark: Any, corpus: tuple[list[str], list[str]]) -> None:
    rs = pytest.importorskip("rank_bm25_rs")
    docs, _ = corpus
    _mark(benchmark, f"index build n={N_DOCS}", "rank-bm25-rs", len(docs))
    bm = benchmark.pedantic(lambda: rs.BM25Okapi([bm25_tokenize(d) for d in docs], k1=K1, b=B), rounds=3, iterations=1)
    assert bm.corpus_size == len(docs)


def test_build_bm25s(benchmark: Any, corpus: tuple[list[str], list[str]]) -> None:
    bm25s = pytest.importorskip("bm25s")
    docs, _ = corpus

    def build() -> Any:
        retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
        retriever.index([bm25_tokenize(d) for d in docs], show_progress=False)
        return retriever

    _mark(benchmark, f"index build n={N_DOCS}", "bm25s", len(docs))
    retriever = benchmark.pedantic(build, rounds=3, iterations=1)
    assert retriever.scores["num_docs"] == len(docs)
