"""Show what a store holds, without writing to it: every table (which capability owns it), its
namespaces and their row counts, the kinds of record in it (the ``kind`` or ``type`` column:
goals, beliefs and reflections in ``mind_entries``, facts and preferences in ``ltm_memories``),
versions kept, data files (fragments), deleted rows the files still hold, sizes on disk, what
``mindcore compact`` would reclaim (an estimate, see :mod:`mindcore.store.stats`), and the embedding
model each vector table was built with.

``--retired --user-id U`` lists instead the long-term memories of a user that are retired now
(updated or superseded by a newer fact, or evicted), newest first, one line each:
``<id>  <action>  <date>  <text>  -> <successor id>  (<reason>)``; ``mindcore restore`` brings one
back.

The store is opened read-only: inspecting a store another process is writing is safe.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from mindcore.cli._common import add_store_argument, human_bytes, open_store, table
from mindcore.errors import MindcoreError
from mindcore.ltm.types import MemoryVersion
from mindcore.store import ALL_NAMESPACES, Store, TableStats

HELP = "what a store holds: tables, namespaces, kinds, rows, sizes, versions"
# Two examples: the epilog indents each line alike.
EXAMPLE = "mindcore inspect --store ./memory --namespaces\n  mindcore inspect --store ./memory --retired --user-id user-7"

#: Which capability writes each table, by name prefix.
OWNERS = {"mind_": "mind", "ltm_": "long-term memory", "working_": "working memory", "context_": "context",
          "consciousness_": "consciousness"}
KIND_COLUMNS = ("kind", "type")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--namespaces", action="store_true", help="list every namespace of every table")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    retired = parser.add_argument_group("retired long-term memories (--retired)")
    retired.add_argument("--retired", action="store_true",
                         help="list a user's retired long-term memories instead (needs --user-id)")
    retired.add_argument("--user-id", default=None)
    retired.add_argument("--namespace", default="default", help="the memory's namespace (default 'default')")
    retired.add_argument("--workspace-id", default=None)


def owner(name: str) -> str:
    return next((who for prefix, who in OWNERS.items() if name.startswith(prefix)), "-")


def kinds(store: Store, name: str) -> dict[str, dict[str, int]]:
    """Rows per kind in each namespace of table ``name`` (empty when the table has no kind column)."""
    t = store.open_table(name)
    column = next((c for c in KIND_COLUMNS if c in t.schema.names), None)
    if column is None:
        return {}
    data = t.scan_arrow(ALL_NAMESPACES, columns=["namespace", column])
    counts: dict[str, Counter[str]] = {}
    for ns, kind in zip(data.column("namespace").to_pylist(), data.column(column).to_pylist(), strict=True):
        counts.setdefault(str(ns), Counter())[str(kind)] += 1
    return {ns: dict(sorted(c.items())) for ns, c in sorted(counts.items())}


def describe(store: Store) -> dict[str, Any]:
    """The store's contents as one JSON-ready dict (what ``--json`` prints)."""
    stats = store.stats()
    return {
        "uri": stats.uri,
        "embedding": None if stats.embedding is None else {"model_id": stats.embedding.model_id,
                                                            "dim": stats.embedding.dim},
        "disk_bytes": stats.disk_bytes,
        "reclaimable_bytes": stats.reclaimable_bytes,
        "tables": [_table(store, t) for t in stats.tables],
    }


def _table(store: Store, t: TableStats) -> dict[str, Any]:
    by_ns = kinds(store, t.name)
    return {
        "name": t.name, "capability": owner(t.name), "rows": t.rows, "version": t.version, "versions": t.versions,
        "fragments": t.fragments, "deleted_rows": t.deleted_rows, "data_bytes": t.data_bytes,
        "disk_bytes": t.disk_bytes, "reclaimable_bytes": t.reclaimable_bytes, "dim": t.dim,
        "embedding": None if t.embedding is None else {"model_id": t.embedding.model_id, "dim": t.embedding.dim},
        "kinds": dict(sum((Counter(k) for k in by_ns.values()), Counter())),
        "namespaces": {ns: {"rows": n, "kinds": by_ns.get(ns, {})} for ns, n in t.namespaces.items()},
    }


def _kinds_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "-"


def render(doc: dict[str, Any], *, namespaces: bool) -> str:
    lines = [f"store {doc['uri']}", _embedding_line(doc),
             f"on disk: {human_bytes(doc['disk_bytes'])} (compact would reclaim {human_bytes(doc['reclaimable_bytes'])})",
             ""]
    if not doc["tables"]:
        return "\n".join([*lines, "no tables"])
    rows = [[t["name"], t["capability"], len(t["namespaces"]), t["rows"], _kinds_text(t["kinds"]),
             t["version"], t["versions"], t["fragments"], "-" if t["deleted_rows"] is None else t["deleted_rows"],
             human_bytes(t["data_bytes"]), human_bytes(t["disk_bytes"]), human_bytes(t["reclaimable_bytes"]),
             t["dim"] or "-"] for t in doc["tables"]]
    lines.append(table(["table", "capability", "namespaces", "rows", "kinds", "version", "versions kept",
                        "fragments", "deleted rows", "data", "on disk", "compact would reclaim", "dim"], rows))
    if namespaces:
        for t in doc["tables"]:
            lines += ["", f"{t['name']}:",
                      table(["namespace", "rows", "kinds"],
                            [[ns, v["rows"], _kinds_text(v["kinds"])] for ns, v in t["namespaces"].items()])]
    return "\n".join(lines)


def retired(store: Store, *, user_id: str, namespace: str, workspace_id: str | None) -> list[MemoryVersion]:
    """The retired long-term memories of one scope, newest first, read without writing (see
    ``LongTermMemory.retired``)."""
    from mindcore.ltm._history import retired_versions
    from mindcore.ltm._repo import read_scope_history, scope_key

    events, live = read_scope_history(store, scope_key(user_id, namespace, workspace_id))
    return retired_versions(events, live)


def retired_line(v: MemoryVersion) -> str:
    """One retired memory as ``inspect --retired`` prints it."""
    date = datetime.fromtimestamp(v.at / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    line = f"{v.memory_id}  {v.action}  {date}  {v.text}"
    if v.successor_id:
        line += f"  -> {v.successor_id}"
    return line + (f"  ({v.reason})" if v.reason else "")


def run_retired(store: Store, args: argparse.Namespace) -> int:
    if args.user_id is None:
        raise MindcoreError("--retired needs --user-id")
    found = retired(store, user_id=args.user_id, namespace=args.namespace, workspace_id=args.workspace_id)
    if args.json:
        print(json.dumps([asdict(v) for v in found], indent=2, ensure_ascii=False))
    elif not found:
        print(f"no retired memories of user {args.user_id!r} in namespace {args.namespace!r}")
    else:
        print("\n".join(retired_line(v) for v in found))
    return 0


def _embedding_line(doc: dict[str, Any]) -> str:
    """The store's embedding model; for a store opened without one (tables given their own
    embedder, as from Python), the models its vector tables record."""
    emb = doc["embedding"]
    if emb:
        return f"embedding model: {emb['model_id']} (dim {emb['dim']})"
    models = sorted({(t["embedding"]["model_id"], t["embedding"]["dim"]) for t in doc["tables"] if t["embedding"]})
    if not models:
        return "embedding model: none recorded"
    listed = ", ".join(f"{model} (dim {dim})" for model, dim in models)
    return f"embedding model{'s' if len(models) > 1 else ''}: {listed}, recorded by its tables"


def run(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        if args.retired:
            return run_retired(store, args)
        doc = describe(store)
    print(json.dumps(doc, indent=2) if args.json else render(doc, namespaces=args.namespaces))
    return 0
