"""Store many users' long-term memories from a file (``mindcore.batch.remember``): a Parquet, CSV or
JSON-lines file with a ``user_id`` and a ``text`` column, and optionally ``kind``, ``importance``,
``created_at`` (unix ms), ``context`` and ``workspace_id``.

Each user gets what ``LongTermMemory.remember_many`` would store: secrets are refused,
duplicates (of the user's stored memories or of earlier rows) are not stored again, a row that
updates or contradicts a stored memory retires it (``LongTermMemory.history`` keeps it), and each
user keeps at most ``--max-items`` memories. Every row is checked before anything is written: a
bad row stops the command, naming the row (counted from 0) and the column. Rows are written in
chunks of whole users, one commit per chunk; Ctrl-C stops after the chunk in progress, and running the same command
again stores the rest (rows already stored come back as duplicates).
"""

from __future__ import annotations

import argparse

from mindcore._argtypes import positive_int
from mindcore.cli._common import (
    Progress,
    Stopped,
    add_embedder_argument,
    add_store_argument,
    embedder_for,
    open_store,
    stop_between_steps,
)

HELP = "store many users' long-term memories from a Parquet, CSV or JSON-lines file"
EXAMPLE = "mindcore remember-bulk --store ./memory memories.jsonl --embedder hash"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser, help="the store to write to (created if missing)")
    parser.add_argument("input", metavar="FILE", help="a .parquet, .csv or .jsonl file with user_id and text columns")
    parser.add_argument("--namespace", default="default", help="the long-term memory namespace (default: default)")
    parser.add_argument("--max-items", type=positive_int, default=None, metavar="N",
                        help="memories kept per user (default: $MINDCORE_MEMORY_MAX_ITEMS, else 500; 0: no limit)")
    parser.add_argument("--chunk-size", type=positive_int, default=5_000, metavar="N",
                        help="rows per committed write, whole users (5000)")
    parser.add_argument("--no-dedupe", action="store_true", help="store every row as it is (no duplicate, update or contradiction judgement)")
    parser.add_argument("--source", default="import", help="recorded as each new memory's source (import)")
    add_embedder_argument(parser)


def run(args: argparse.Namespace) -> int:
    from mindcore.batch import remember

    if args.chunk_size < 1:
        raise SystemExit("mindcore remember-bulk: --chunk-size must be at least 1")
    done = 0
    with open_store(args, read_only=False, create=True) as store:
        embedder = embedder_for(args.embedder, store.embedding)
        with stop_between_steps("the chunk in progress") as stop, Progress("remember", unit="rows") as bar:

            def progress(rows: int, total: int) -> None:
                nonlocal done
                if bar.total is None:
                    bar.set_total(total)
                bar.update(rows - done)
                done = rows
                if rows < total:
                    stop.check()

            try:
                report = remember(store, args.input, namespace=args.namespace, embedder=embedder,
                                  dedupe=not args.no_dedupe, max_items=args.max_items, source=args.source,
                                  chunk_size=args.chunk_size, progress=progress)
            except Stopped:
                print(f"stopped: {done} rows handled, each chunk committed whole; run the same command again "
                      "to store the rest")
                return 130
    print(f"{report.rows} rows: {report.stored} stored, {report.duplicates} duplicates, {report.secrets} secrets "
          f"refused, {report.evicted} evicted; {report.commits} commits in {report.elapsed:.1f} s ({store.uri})")
    return 0
