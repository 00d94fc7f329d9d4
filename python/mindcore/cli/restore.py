"""Bring a retired long-term memory back: a memory that a newer fact updated or superseded, or
that eviction dropped, is live again with its id, text, kind, importance and creation time (see
``LongTermMemory.restore``); the memory that retired it stays. ``mindcore inspect --retired``
lists the retired memories of a user and their ids.

Prints ``restored <id>: <text>``. An id the scope does not hold, live or retired, is an error (exit
1); a memory that is already live is printed and left as it is. The text is embedded again with the
model the store records (``--embedder`` picks another).
"""

from __future__ import annotations

import argparse

from mindcore.cli._common import add_embedder_argument, add_store_argument, embedder_for, open_store
from mindcore.errors import MemoryNotFoundError

HELP = "bring a retired long-term memory back by its id"
EXAMPLE = "mindcore restore --store ./memory --user-id user-7 01m8fkmwrx39n2qewstfnpf814"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--user-id", required=True)
    parser.add_argument("--namespace", default="default", help="the memory's namespace (default 'default')")
    parser.add_argument("--workspace-id", default=None)
    add_embedder_argument(parser)
    parser.add_argument("memory_id", metavar="MEMORY_ID", help="the id of the retired memory")


def run(args: argparse.Namespace) -> int:
    from mindcore.ltm import LongTermMemory
    from mindcore.ltm._repo import TABLE

    with open_store(args, read_only=False) as store:
        if TABLE not in store.table_names():
            raise MemoryNotFoundError(f"memory_id: no memory {args.memory_id!r}: the store at {store.uri} holds "
                                      "no long-term memories")
        embedder = embedder_for(args.embedder, store.table_embedding(TABLE) or store.embedding)
        with LongTermMemory(store, user_id=args.user_id, namespace=args.namespace, workspace_id=args.workspace_id,
                            embedder=embedder) as ltm:
            memory = ltm.restore(args.memory_id)
    print(f"restored {memory.id}: {memory.text}")
    return 0
