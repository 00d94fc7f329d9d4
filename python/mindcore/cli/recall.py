"""Ask a capability of a store what it holds for a query, as an agent would, from the shell:

- ``ltm --user-id U "query"``: a user's long-term memories, best first (recall does not bump their
  last access here, so asking from the shell changes nothing).
- ``mind --agent A "query"``: an agent's goals, beliefs and reflections; without a query, the
  agent's mind header as the model sees it.
- ``context --dataset D "query"``: tool discovery over a dataset's registered tools.
- ``working --thread-id T`` (or ``--resource-id R``): a working memory's block as the model sees it.

Queries are embedded with the model the store records (``--embedder`` picks another: ``hash`` for a
store built with the hashing embedder). ``--json`` prints the results as JSON. A capability with
nothing in the store says so; nothing is created.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mindcore._argtypes import positive_int
from mindcore.cli._common import add_embedder_argument, add_store_argument, embedder_for, open_store, table
from mindcore.errors import MindcoreError
from mindcore.store import Store

HELP = "query a capability from the shell: ltm, mind, context (tool discovery), working"
EXAMPLE = 'mindcore recall --store ./memory ltm --user-id user-7 "what does the user drink?"'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    sub = parser.add_subparsers(dest="capability", required=True, metavar="CAPABILITY")

    ltm = sub.add_parser("ltm", help="a user's long-term memories")
    ltm.add_argument("--user-id", required=True)
    ltm.add_argument("--namespace", default="default", help="the memory's namespace (default 'default')")
    ltm.add_argument("--workspace-id", default=None)
    ltm.add_argument("-k", type=positive_int, default=5, help="how many memories (default 5)")
    ltm.add_argument("query")
    add_embedder_argument(ltm)

    mind = sub.add_parser("mind", help="an agent's goals, beliefs and reflections (the header without a query)")
    mind.add_argument("--agent", required=True)
    mind.add_argument("--type", default="all", choices=["all", "goal", "belief", "reflection"])
    mind.add_argument("--limit", type=positive_int, default=5, help="at most this many of each type (default 5)")
    mind.add_argument("query", nargs="?", default=None)
    add_embedder_argument(mind)

    context = sub.add_parser("context", help="tool discovery over a dataset's tools")
    context.add_argument("--dataset", required=True)
    context.add_argument("--limit", type=positive_int, default=5, help="how many tools (default 5)")
    context.add_argument("--strategy", default=None, choices=["bm25", "semantic", "hybrid"],
                         help="how to rank (default: the context's default strategy)")
    context.add_argument("query")
    add_embedder_argument(context)

    working = sub.add_parser("working", help="a thread's or a resource's working memory")
    key = working.add_mutually_exclusive_group(required=True)
    key.add_argument("--thread-id")
    key.add_argument("--resource-id")


def _need(store: Store, name: str, what: str) -> None:
    if name not in store.table_names():
        raise MindcoreError(f"the store at {store.uri} holds no {what}")


def _ltm(store: Store, args: argparse.Namespace) -> tuple[list[dict[str, Any]], str]:
    from mindcore.ltm import LongTermMemory

    _need(store, "ltm_memories", "long-term memories")
    embedder = embedder_for(args.embedder, store.table_embedding("ltm_memories") or store.embedding)
    with LongTermMemory(store, user_id=args.user_id, namespace=args.namespace, workspace_id=args.workspace_id,
                        embedder=embedder) as ltm:
        found = ltm.recall(args.query, k=args.k, touch=False)
    rows = [{"id": m.id, "score": m.score, "similarity": m.similarity, "kind": m.kind, "importance": m.importance,
             "text": m.text} for m in found]
    text = table(["#", "score", "kind", "importance", "text", "id"],
                 [[i, f"{r['score']:.3f}", r["kind"], f"{r['importance']:.2f}", r["text"], r["id"]]
                  for i, r in enumerate(rows, start=1)])
    return rows, text if rows else f"no memories of user {args.user_id!r} in namespace {args.namespace!r}"


def _mind(store: Store, args: argparse.Namespace) -> tuple[Any, str]:
    from mindcore.mind import Mind

    _need(store, "mind_entries", "mind")
    embedder = embedder_for(args.embedder, store.table_embedding("mind_entries") or store.embedding)
    mind = Mind(store, agent=args.agent, embedder=embedder)
    if args.query is None:
        header = mind.header()
        return {"header": header}, header or f"agent {args.agent!r} has nothing in its mind"
    found = mind.recall(args.query, type=args.type, limit=args.limit)
    rows = [r.to_dict() for r in found]
    text = table(["#", "type", "score", "content", "id"],
                 [[i, r.type, "-" if r.score is None else f"{r.score:.3f}", r.content, r.id]
                  for i, r in enumerate(found, start=1)])
    return rows, text if rows else f"nothing in agent {args.agent!r}'s mind matches"


def _context(store: Store, args: argparse.Namespace) -> tuple[list[dict[str, Any]], str]:
    from mindcore.context import Context

    _need(store, "context_tools", "tools")
    embedder = None if args.strategy == "bm25" else embedder_for(args.embedder, store.embedding)
    ctx = Context(store, dataset=args.dataset, embedder=embedder)
    found = ctx.discover(args.query, limit=args.limit, strategy=args.strategy)
    rows = [{"name": t.name, "score": t.score, "description": t.tool.description} for t in found]
    text = table(["#", "score", "tool", "description"],
                 [[i, f"{r['score']:.3f}", r["name"], r["description"]] for i, r in enumerate(rows, start=1)])
    return rows, text if rows else f"no tools in dataset {args.dataset!r}"


def _working(store: Store, args: argparse.Namespace) -> tuple[Any, str]:
    from mindcore.working import WorkingMemory

    _need(store, "working_memory", "working memory")
    if args.thread_id is not None:
        wm = WorkingMemory(store, thread_id=args.thread_id, scope="thread", read_only=True)
    else:
        wm = WorkingMemory(store, resource_id=args.resource_id, scope="resource", read_only=True)
    block = wm.render()
    who = f"thread {args.thread_id!r}" if args.thread_id is not None else f"resource {args.resource_id!r}"
    return {"state": wm.state, "block": block}, block or f"the working memory of {who} is empty"


RECALLERS = {"ltm": _ltm, "mind": _mind, "context": _context, "working": _working}


def run(args: argparse.Namespace) -> int:
    # Only working memory can read a read-only store; the others open their tables to write.
    with open_store(args, read_only=args.capability == "working") as store:
        rows, text = RECALLERS[args.capability](store, args)
    print(json.dumps(rows, indent=2, ensure_ascii=False) if args.json else text)
    return 0
