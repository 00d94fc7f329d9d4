"""Measure retrieval quality on the public evaluation sets and print the tables the benches write:

- ``locomo``: LoCoMo turn-level recall@5/10/25/50 of long-term memory, one table per retriever
  (overall, without category 5, per category) and a summary row each, beside the published BM25
  and DRAGON anchors (``benches/bench_locomo.py``); ``--batch`` recalls through
  :func:`mindcore.batch.recall` instead (the same figures).
- ``tools``: tool discovery on BFCL (strict and lenient recall@1/5/10, NDCG@10) and MetaTool
  (Hit@1, R@5, R@10, both-tools@5/10), one row per strategy (``benches/bench_context_quality.py``).

The data is read from ``--data`` (default: ``$MINDCORE_DATA_DIR``, else ``shared/data`` beside a
source checkout); it is never shipped with the package. ``--limit`` runs a subset (conversations for
LoCoMo, queries for the tool sets) for a quick look; the benches' figures are over everything with
the bundled model (``--embedder default``, the default here too). Nothing is written but temporary
stores, removed on exit or Ctrl-C.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mindcore._argtypes import positive_int
from mindcore.cli._common import Progress, table
from mindcore.embed import Embedder
from mindcore.errors import MindcoreError

HELP = "LoCoMo recall and tool-discovery quality from the evaluation data"
EXAMPLE = "mindcore eval locomo --limit 1 --embedder hash"

T = TypeVar("T")

LOCOMO_ANCHORS = {"bm25 (published)": (46.3, 54.2, 63.0, 70.7), "DRAGON (published)": (56.7, 66.2, 76.7, 82.7)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="set", required=True, metavar="SET")
    locomo = sub.add_parser("locomo", help="LoCoMo recall@k of long-term memory")
    locomo.add_argument("--retriever", action="append", default=None,
                        help="a retriever to score (repeat; default: mindcore and bm25; 'all' for every one)")
    locomo.add_argument("--batch", action="store_true",
                        help="recall through mindcore.batch.recall (one batch call per conversation) instead of "
                             "a LongTermMemory per conversation: the same figures")
    tools = sub.add_parser("tools", help="tool discovery on BFCL and MetaTool")
    tools.add_argument("--set", dest="sets", action="append", choices=["bfcl", "metatool"], default=None,
                       help="which set (repeat; default both)")
    tools.add_argument("--strategy", action="append", choices=["bm25", "semantic", "hybrid"], default=None,
                       help="which discovery strategy (repeat; default all three)")
    for child in (locomo, tools):
        child.add_argument("--data", default=None, metavar="DIR", help="the evaluation data folder")
        child.add_argument("--limit", type=positive_int, default=None, metavar="N",
                           help="only the first N conversations (locomo) or queries (tools)")
        child.add_argument("--embedder", choices=["default", "hash"], default="default",
                           help="'default' the bundled all-MiniLM-L6-v2 (the benches' model), 'hash' the hashing "
                                "embedder (fast, no model files, lower scores)")


def _data(args: argparse.Namespace) -> Path:
    from mindcore.eval import data_dir

    if args.data is None:
        return data_dir(option="--data DIR")
    path = Path(args.data)
    if not path.is_dir():
        raise MindcoreError(f"--data {args.data}: not a folder")
    return path


def _load(load: Callable[..., T], path: Path, **kwargs: Any) -> T:
    """``load(path, **kwargs)``: a file missing from the evaluation data is one line, not a traceback."""
    try:
        return load(path, **kwargs)
    except FileNotFoundError as exc:
        raise MindcoreError(f"evaluation data incomplete: no {exc.filename}") from None


def _embedder(choice: str) -> Embedder:
    from mindcore.embed import HashEmbedder, default_embedder

    return HashEmbedder() if choice == "hash" else default_embedder(threads=2)


def _locomo(args: argparse.Namespace) -> None:
    from mindcore.eval.locomo import (
        KS,
        RETRIEVERS,
        BatchRecall,
        bm25_rankings,
        evaluate_locomo,
        load_locomo,
        score_rankings,
    )

    path = _data(args) / "locomo" / "locomo10.json"
    conversations = _load(load_locomo, path)[: args.limit]
    chosen = args.retriever or ["mindcore", "bm25"]
    if "all" in chosen:
        chosen = [*RETRIEVERS, "bm25"]
    unknown = [r for r in chosen if r not in RETRIEVERS and r != "bm25"]
    if unknown:
        raise SystemExit(f"mindcore eval: unknown retriever {unknown[0]!r} (known: {', '.join([*RETRIEVERS, 'bm25'])})")
    embedder = _embedder(args.embedder) if any(r != "bm25" for r in chosen) else None
    batch_recall: BatchRecall | None = None
    if args.batch:
        from mindcore.batch import recall

        batch_recall = recall
    summary: list[list[object]] = []
    questions = sum(len(c.questions) for c in conversations)
    with Progress("eval locomo", total=len(conversations) * len(chosen), unit="conversations") as bar:
        for name in chosen:
            if name == "bm25":
                report = score_rankings(conversations, bm25_rankings())
                bar.update(len(conversations), note=name)
            else:
                retriever = RETRIEVERS[name]
                assert embedder is not None

                def step(line: str, retriever: str = name) -> None:
                    bar.update(1, note=retriever)

                report = evaluate_locomo(conversations=conversations, embedder=embedder, weights=retriever.weights,
                                         context=retriever.context, options=retriever.options, progress=step,
                                         batch_recall=batch_recall)
            print(f"\n{name}\n{report.table()}", flush=True)
            summary.append([name, report.n["all"], *(f"{100 * report.overall[k]:.1f}" for k in KS)])
    summary += [[name, "", *(f"{v:.1f}" for v in values)] for name, values in LOCOMO_ANCHORS.items()]
    print(f"\nltm: locomo recall@k ({len(conversations)} conversations, {questions} questions, "
          f"embedder {embedder.model_id if embedder else '-'})")
    print(table(["impl", "questions", *(f"R@{k}" for k in KS)], summary))


def _tools(args: argparse.Namespace) -> None:
    import tempfile

    from mindcore.eval.tools import (
        STRATEGIES,
        load_bfcl,
        load_metatool,
        rankings,
        register,
        score_bfcl,
        score_metatool,
    )

    folder = _data(args) / "tools"
    strategies = args.strategy or list(STRATEGIES)
    embedder = _embedder(args.embedder)
    for name in args.sets or ["bfcl", "metatool"]:
        rows: list[list[Any]] = []
        columns: list[str] = []
        with tempfile.TemporaryDirectory(prefix="mindcore-eval-") as tmp:
            if name == "bfcl":
                bfcl = _load(load_bfcl, folder / "bfcl", limit=args.limit)
                ctx = register(bfcl.tools, embedder, Path(tmp))
                queries = [q["query"] for q in bfcl.queries]
            else:
                meta = _load(load_metatool, folder / "metatool", limit=args.limit, pair_limit=args.limit)
                ctx = register(meta.tools, embedder, Path(tmp))
                queries = [q for q, _ in meta.single + meta.pairs]
            with Progress(f"eval {name}", total=len(queries) * len(strategies), unit="queries") as bar:
                for strategy in strategies:
                    ranked = rankings(ctx, queries, strategy, progress=bar.update)
                    if name == "bfcl":
                        scores = score_bfcl(bfcl, ranked)
                    else:
                        n = len(meta.single)
                        scores = score_metatool(meta, ranked[:n], ranked[n:])
                    columns = list(scores)
                    rows.append([strategy, *(f"{v:.3f}" if isinstance(v, float) else v for v in scores.values())])
            ctx.close()
        counted = (f"{len(bfcl.queries)} queries" if name == "bfcl" else
                   f"{len(meta.single)} queries, {len(meta.pairs)} two-tool queries")
        title = "BFCL" if name == "bfcl" else "MetaTool"
        print(f"\ncontext: {title} tool discovery ({counted}, embedder {embedder.model_id})", flush=True)
        print(table(["strategy", *columns], rows))


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise SystemExit("mindcore eval: --limit must be at least 1")
    (_locomo if args.set == "locomo" else _tools)(args)
    return 0
