"""Tool discovery quality of ``mindcore.Context`` on BFCL and MetaTool (a quality bench).

Scored as ``shared/data/README.md`` says: every tool of a set is registered, each query ranks all
of them (``discover(query, limit=10)``), and the report gives recall@1/5/10 and NDCG@10 (BFCL:
strict ``gold_tool_ids`` and lenient ``gold_function_names``) or Hit@1, R@5, R@10 (MetaTool:
every 10th single-tool query, n = 2,062) and both-tools-in-top-k (MetaTool's two-tool queries).
One row per strategy (``bm25``, ``semantic``, ``hybrid``) with the bundled default embedder.

Each tool is registered as the agentified server stores one: BFCL tools keep their function
name and description as ``fields`` (their ids are unique, their names are not), and their
parameters, whose names and descriptions BM25 indexes. The ``+schema`` rows also embed the
parameters as the input schema (what agentified's TypeScript ``tool()`` helper sends). Nothing is
tuned on the queries. Targets (issue 9): hybrid NDCG@10 >= BM25 + 0.15 on BFCL, Hit@1 >= BM25 +
0.15 on MetaTool. README floors (BM25): BFCL strict R@1 .286, R@5 .544, R@10 .658, NDCG@10 .490;
MetaTool Hit@1 .250, R@5 .419, R@10 .496.

Measured (all queries, default embedder, 2 shared cores), strict BFCL R@1 / R@5 / R@10 / NDCG@10:
bm25 .334 / .625 / .733 / .536, semantic .307 / .602 / .725 / .511, hybrid .378 / .681 / .811 /
.594 (+.058 NDCG over bm25: the +.15 target is not met); ``+schema`` changes hybrid by under .01.
The bundled all-MiniLM-L6-v2 is the limit: embedding names split into words, parameters as a third
field, name and description together, min-max normalised semantic scores, other semantic/BM25
weights (.3 to .7) and reciprocal-rank fusion all gave hybrid NDCG@10 between .57 and .595 (one
offline run over every query, nothing chosen from it). A stronger embedding model, passed as
``embedder=``, is what moves this figure.
MetaTool Hit@1 / R@5 / R@10 / both@10: bm25 .246 / .411 / .490 / .145, semantic .563 / .786 /
.853 / .579, hybrid .461 / .692 / .774 / .527 (+.215 Hit@1 over bm25: target met).

    pytest benches/bench_context_quality.py --benchmark-only -q -s
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _bench import PrecomputedEmbedder

import mindcore
from mindcore.context import Tool, ToolFields
from mindcore.eval import data_dir

QUICK = os.environ.get("MINDCORE_BENCH_QUICK") == "1"
KS = (1, 5, 10)
STRATEGIES = ("bm25", "semantic", "hybrid")


def _embedder() -> Any:
    try:
        from mindcore.embed import default_embedder

        return default_embedder(threads=2)
    except Exception as exc:  # the bundled model is an optional extra
        pytest.skip(f"default embedder unavailable: {exc}")


def _bfcl() -> tuple[list[Tool], list[dict[str, Any]]]:
    folder = data_dir() / "tools" / "bfcl"
    tools = []
    for line in (folder / "tool_pool.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        tools.append(Tool(doc["tool_id"], doc["description"], doc.get("parameters") or {},
                          fields=ToolFields(doc["name"], doc["description"])))
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    return tools, queries[: 200 if QUICK else None]


def _metatool() -> tuple[list[Tool], list[tuple[str, list[str]]], list[tuple[str, list[str]]]]:
    folder = data_dir() / "tools" / "metatool"
    described = json.loads((folder / "plugin_des.json").read_text(encoding="utf-8"))
    tools = [Tool(name, description) for name, description in described.items()]
    with (folder / "all_clean_data.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    single = [(r["Query"], [r["Tool"]]) for r in rows[::10]]
    pairs = [(q["query"], list(q["tool"])) for q in json.loads((folder / "multi_tool_query_golden.json").read_text())]
    return tools, single[: 200 if QUICK else None], pairs[: 50 if QUICK else None]


def _with_schema(tools: list[Tool]) -> list[Tool]:
    return [Tool(t.name, t.description, t.parameters, fields=ToolFields(
        t.embedding_texts()[0], t.embedding_texts()[1], input_schema=json.dumps(dict(t.parameters))))
        for t in tools]


def _context(tools: list[Tool], embedder: Any) -> mindcore.Context:
    ctx = mindcore.Context(tempfile.mkdtemp(prefix="bench-context-"), dataset="bench", embedder=embedder)
    ctx.register(tools)
    return ctx


def _ndcg(ranked: list[str], gold: set[str], k: int = 10) -> float:
    """Binary-relevance NDCG@k; each gold item is credited once (lenient BFCL scoring maps several
    docs to one function name)."""
    credited: set[str] = set()
    dcg = 0.0
    for i, name in enumerate(ranked[:k]):
        if name in gold and name not in credited:
            credited.add(name)
            dcg += 1.0 / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def _recall(ranked: list[str], gold: set[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / len(gold) if gold else 0.0


def _rankings(ctx: mindcore.Context, queries: list[str], strategy: str) -> list[list[str]]:
    return [[t.name for t in ctx.discover(q, limit=10, strategy=strategy)] for q in queries]  # type: ignore[arg-type]


def _record(benchmark: Any, group: str, impl: str, scores: dict[str, float]) -> None:
    benchmark.group = group
    benchmark.extra_info["impl"] = impl
    for key, value in scores.items():
        benchmark.extra_info[key] = round(value, 3)
    print(f"\n{group} {impl}: " + "  ".join(f"{k} {v:.3f}" for k, v in scores.items()))


@pytest.fixture(scope="module")
def bfcl() -> dict[str, Any]:
    tools, queries = _bfcl()
    schema_tools = _with_schema(tools)
    texts = [q["query"] for q in queries]
    for t in schema_tools:
        texts += [x for x in t.embedding_texts() if x is not None]
    embedder = PrecomputedEmbedder(_embedder(), texts)
    return {"queries": queries, "names": {t.name: t.embedding_texts()[0] for t in tools},
            "ctx": _context(tools, embedder), "ctx+schema": _context(schema_tools, embedder)}


@pytest.fixture(scope="module")
def metatool() -> dict[str, Any]:
    tools, single, pairs = _metatool()
    texts = [q for q, _ in single + pairs] + [x for t in tools for x in t.embedding_texts() if x is not None]
    return {"single": single, "pairs": pairs, "ctx": _context(tools, PrecomputedEmbedder(_embedder(), texts))}


@pytest.mark.parametrize("variant", ["", "+schema"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_bfcl(benchmark: Any, bfcl: dict[str, Any], strategy: str, variant: str) -> None:
    queries, names = bfcl["queries"], bfcl["names"]
    ctx = bfcl["ctx" + variant]
    benchmark.group = "context: BFCL tool discovery"  # before the run: pytest-benchmark records it then
    ranked = benchmark.pedantic(lambda: _rankings(ctx, [q["query"] for q in queries], strategy), rounds=1, iterations=1)
    scores: dict[str, float] = {}
    for mode in ("strict", "lenient"):
        golds = []
        for q, r in zip(queries, ranked, strict=True):
            if mode == "strict":
                golds.append((r, set(q["gold_tool_ids"])))
            else:  # any doc whose function name is a gold name
                wanted = set(q["gold_function_names"])
                golds.append(([names[x] for x in r], wanted))
        for k in KS:
            scores[f"{mode} r@{k}"] = float(np.mean([_recall(r, g, k) for r, g in golds]))
        scores[f"{mode} ndcg@10"] = float(np.mean([_ndcg(r, g) for r, g in golds]))
    _record(benchmark, "context: BFCL tool discovery", strategy + variant, scores)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_metatool(benchmark: Any, metatool: dict[str, Any], strategy: str) -> None:
    single, pairs, ctx = metatool["single"], metatool["pairs"], metatool["ctx"]

    def run() -> tuple[list[list[str]], list[list[str]]]:
        return _rankings(ctx, [q for q, _ in single], strategy), _rankings(ctx, [q for q, _ in pairs], strategy)

    benchmark.group = "context: MetaTool tool discovery"
    ranked, ranked_pairs = benchmark.pedantic(run, rounds=1, iterations=1)
    hit: Callable[[int], float] = lambda k: float(np.mean([gold[0] in r[:k] for (_, gold), r in zip(single, ranked, strict=True)]))  # noqa: E731
    scores = {"hit@1": hit(1), "r@5": hit(5), "r@10": hit(10)}
    for k in (5, 10):
        scores[f"both@{k}"] = float(np.mean([set(gold) <= set(r[:k]) for (_, gold), r in zip(pairs, ranked_pairs, strict=True)]))
    scores["queries"] = len(single)
    _record(benchmark, "context: MetaTool tool discovery", strategy, scores)
