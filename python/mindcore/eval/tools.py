"""Tool-discovery quality of :class:`mindcore.Context` on BFCL and MetaTool (the evaluation behind
``benches/bench_context_quality.py`` and ``mindcore eval tools``).

Scored as the shared data README says: every tool of a set is registered, each query ranks all of
them (``discover(query, limit=10)``), and the report gives recall@1/5/10 and NDCG@10 (BFCL: strict
``gold_tool_ids`` and lenient ``gold_function_names``) or Hit@1, R@5, R@10 (MetaTool: every 10th
single-tool query) and both-tools-in-top-k (MetaTool's two-tool queries).

Each BFCL tool is registered as the agentified server stores one: its function name and description
as ``fields`` (their ids are unique, their names are not), and its parameters, whose names and
descriptions BM25 indexes. :func:`with_schema` also embeds the parameters as the input schema.

The data is read from a path (:func:`mindcore.eval.data_dir`) and never shipped with the package.
"""

from __future__ import annotations

import csv
import json
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mindcore.context import Context, Tool, ToolFields
from mindcore.context.types import SearchStrategy
from mindcore.embed import Embedder

__all__ = [
    "KS",
    "STRATEGIES",
    "BfclSet",
    "MetaToolSet",
    "load_bfcl",
    "load_metatool",
    "ndcg",
    "rankings",
    "recall_at",
    "register",
    "score_bfcl",
    "score_metatool",
    "with_schema",
]

KS = (1, 5, 10)
STRATEGIES: tuple[SearchStrategy, ...] = ("bm25", "semantic", "hybrid")


@dataclass(frozen=True, slots=True)
class BfclSet:
    tools: list[Tool]
    queries: list[dict[str, Any]]

    @property
    def names(self) -> dict[str, str]:
        """Each tool id's function name (lenient scoring credits any doc of a gold name)."""
        return {t.name: str(t.embedding_texts()[0]) for t in self.tools}


@dataclass(frozen=True, slots=True)
class MetaToolSet:
    tools: list[Tool]
    single: list[tuple[str, list[str]]]
    pairs: list[tuple[str, list[str]]]


def load_bfcl(folder: str | Path, *, limit: int | None = None) -> BfclSet:
    """``tool_pool.jsonl`` and ``queries.jsonl`` of ``folder`` (the first ``limit`` queries)."""
    folder = Path(folder)
    tools = []
    for line in (folder / "tool_pool.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        tools.append(Tool(doc["tool_id"], doc["description"], doc.get("parameters") or {},
                          fields=ToolFields(doc["name"], doc["description"])))
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    return BfclSet(tools, queries[:limit])


def load_metatool(folder: str | Path, *, limit: int | None = None, pair_limit: int | None = None) -> MetaToolSet:
    """MetaTool's tools, every 10th single-tool query (the first ``limit``) and the two-tool queries
    (the first ``pair_limit``)."""
    folder = Path(folder)
    described = json.loads((folder / "plugin_des.json").read_text(encoding="utf-8"))
    tools = [Tool(name, description) for name, description in described.items()]
    with (folder / "all_clean_data.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    single = [(r["Query"], [r["Tool"]]) for r in rows[::10]]
    pairs = [(q["query"], list(q["tool"]))
             for q in json.loads((folder / "multi_tool_query_golden.json").read_text(encoding="utf-8"))]
    return MetaToolSet(tools, single[:limit], pairs[:pair_limit])


def with_schema(tools: Sequence[Tool]) -> list[Tool]:
    """The same tools with their parameters embedded as the input schema (what agentified's
    TypeScript ``tool()`` helper sends)."""
    return [Tool(t.name, t.description, t.parameters, fields=ToolFields(
        t.embedding_texts()[0], t.embedding_texts()[1], input_schema=json.dumps(dict(t.parameters))))
        for t in tools]


def register(tools: Sequence[Tool], embedder: Embedder, folder: str | Path | None = None) -> Context:
    """A context over a new store (in ``folder``, else a temporary folder) with every tool registered."""
    ctx = Context(str(folder) if folder is not None else tempfile.mkdtemp(prefix="mindcore-eval-tools-"),
                  dataset="eval", embedder=embedder)
    ctx.register(tools)
    return ctx


def ndcg(ranked: Sequence[str], gold: set[str], k: int = 10) -> float:
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


def recall_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / len(gold) if gold else 0.0


def rankings(ctx: Context, queries: Sequence[str], strategy: SearchStrategy, *,
             progress: Callable[[int], None] | None = None) -> list[list[str]]:
    """The top-10 tool names of each query; ``progress(1)`` after each."""
    out = []
    for q in queries:
        out.append([t.name for t in ctx.discover(q, limit=10, strategy=strategy)])
        if progress is not None:
            progress(1)
    return out


def score_bfcl(data: BfclSet, ranked: Sequence[Sequence[str]]) -> dict[str, float]:
    """Strict and lenient recall@1/5/10 and NDCG@10 of ``ranked`` (one list per query)."""
    names = data.names
    scores: dict[str, float] = {}
    for mode in ("strict", "lenient"):
        golds: list[tuple[Sequence[str], set[str]]] = []
        for q, r in zip(data.queries, ranked, strict=True):
            if mode == "strict":
                golds.append((r, set(q["gold_tool_ids"])))
            else:  # any doc whose function name is a gold name
                golds.append(([names[x] for x in r], set(q["gold_function_names"])))
        for k in KS:
            scores[f"{mode} r@{k}"] = float(np.mean([recall_at(r, g, k) for r, g in golds]))
        scores[f"{mode} ndcg@10"] = float(np.mean([ndcg(r, g) for r, g in golds]))
    return scores


def score_metatool(data: MetaToolSet, ranked: Sequence[Sequence[str]],
                   ranked_pairs: Sequence[Sequence[str]]) -> dict[str, float]:
    """Hit@1, R@5, R@10 over the single-tool queries, both@5 and both@10 over the pairs."""

    def hit(k: int) -> float:
        return float(np.mean([gold[0] in r[:k] for (_, gold), r in zip(data.single, ranked, strict=True)]))

    scores = {"hit@1": hit(1), "r@5": hit(5), "r@10": hit(10)}
    for k in (5, 10):
        scores[f"both@{k}"] = float(np.mean([set(gold) <= set(r[:k])
                                             for (_, gold), r in zip(data.pairs, ranked_pairs, strict=True)]))
    scores["queries"] = len(data.single)
    return scores
