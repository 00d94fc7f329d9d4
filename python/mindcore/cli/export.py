"""Write a store to one JSONL file, losslessly: every table's schema and every row of every
namespace, with ids, timestamps, tags, metadata and vectors as stored, plus the embedding models
the store and its tables were built with. ``mindcore import`` reads it back into a store.

``--no-vectors`` leaves the vectors out (a file about 20 times smaller) and marks the rows that had
one; the import embeds their text again with the target store's model. That is also how a store
moves to another embedding model. Caches of vectors (``context_embeddings``) are left out then:
they are rebuilt on first use.

The store is opened read-only. The file is written under a temporary name and renamed when
complete, so Ctrl-C (or a crash) leaves no partial export behind.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from mindcore.cli._common import Progress, add_store_argument, open_store, stop_between_steps
from mindcore.cli._transfer import EMBEDDED_TEXT, VECTOR_CACHES, Header, TableHeader, TransferError, row_line
from mindcore.errors import MindcoreError
from mindcore.store import ALL_NAMESPACES, EmbeddingInfo, Store, col

HELP = "write a store to a JSONL file (with vectors, or marked for re-embedding)"
EXAMPLE = "mindcore export --store ./memory memory.jsonl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("output", metavar="FILE", help="the JSONL file to write (replaced when complete)")
    parser.add_argument("--no-vectors", action="store_true",
                        help="leave the vectors out; the import embeds the texts again")
    parser.add_argument("--table", action="append", default=None, metavar="NAME",
                        help="export only this table (repeat for several; default: every table)")


def _info(info: EmbeddingInfo | None) -> dict[str, object] | None:
    return None if info is None else {"model_id": info.model_id, "dim": info.dim}


def header(store: Store, names: list[str], *, vectors: bool) -> Header:
    tables = []
    for name in names:
        t = store.open_table(name)
        if not vectors and t.dim is not None and name not in EMBEDDED_TEXT and name not in VECTOR_CACHES:
            raise TransferError(f"table {name!r} has vectors that mindcore cannot embed again from its rows: "
                                "export it with its vectors (without --no-vectors)")
        rows = 0 if not vectors and name in VECTOR_CACHES else t.count(ALL_NAMESPACES)
        tables.append(TableHeader(name, t.schema, t.dim, _info(store.table_embedding(name)), rows))
    return Header(vectors, _info(store.embedding), tables)


NAMESPACES_PER_SCAN = 512


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    partial = out.with_name(out.name + ".partial")
    vectors = not args.no_vectors
    if out.is_dir():
        raise MindcoreError(f"{out} is a folder: give the file to write")
    with open_store(args, read_only=True) as store:
        out.parent.mkdir(parents=True, exist_ok=True)  # as `mkdir -p`: the folder the export goes in
        names = args.table or store.table_names()
        head = header(store, names, vectors=vectors)
        written = 0
        try:
            with (stop_between_steps("the current namespace") as stop, partial.open("w", encoding="utf-8") as f,
                  Progress("export", total=head.total_rows, unit="rows") as bar):
                f.write(json.dumps(head.to_json()) + "\n")
                for t in head.tables:
                    if t.rows == 0:
                        continue
                    table = store.open_table(t.name)
                    namespaces = sorted(table.namespaces())
                    # One scan per chunk of namespaces, not one per namespace: thousands of users'
                    # rows come out of a few reads, in namespace then id order as before.
                    for start in range(0, len(namespaces), NAMESPACES_PER_SCAN):
                        if stop.requested:
                            raise KeyboardInterrupt
                        chunk = namespaces[start : start + NAMESPACES_PER_SCAN]
                        rows = table.scan(ALL_NAMESPACES, col("namespace").is_in(chunk))
                        rows.sort(key=lambda r: (r["namespace"], r["id"]))
                        f.writelines(row_line(t.name, r["namespace"], r, vectors=vectors) + "\n" for r in rows)
                        written += len(rows)
                        bar.update(len(rows), note=t.name)
                f.write(json.dumps({"end": True, "rows": written}) + "\n")
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, out)
    print(f"exported {written} rows of {len(head.tables)} tables to {out}"
          + ("" if vectors else " (without vectors: the import embeds them again)"))
    return 0
