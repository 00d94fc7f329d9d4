"""Store maintenance: compact each table (merge the small data files many small writes leave, fold
new rows into the indexes) and delete versions older than ``--older-than`` seconds, then show each
table's size on disk, data files and versions kept before and after.

Writers compact in the background as they go; this command is for a store that was written in
bulk, or to reclaim the space of old versions now. Only a table's small data files are merged (big
ones are left as they are); each table's merge is one LanceDB commit, made under the table's write
lock after the rewrite, so other processes may keep reading and writing meanwhile, and
Ctrl-C stops between two tables: every table is left either compacted or as it was. Keep
``--older-than`` above the longest read another process may be running (default: the store's
cleanup grace, 10 s by default); ``0`` keeps only the latest version.
"""

from __future__ import annotations

import argparse
import warnings
from datetime import timedelta

from mindcore._argtypes import non_negative_float
from mindcore.cli._common import (
    Progress,
    add_store_argument,
    human_bytes,
    open_store,
    stop_between_steps,
    table,
)
from mindcore.store import TableStats

HELP = "store maintenance: merge small data files, delete old versions"
EXAMPLE = "mindcore compact --store ./memory --older-than 3600"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--older-than", type=non_negative_float, default=None, metavar="SECONDS",
                        help="delete versions older than this (default: the store's cleanup grace, 10 s unless configured)")
    parser.add_argument("--table", action="append", default=None, metavar="NAME",
                        help="compact only this table (repeat for several; default: every table)")


def _cells(s: TableStats) -> str:
    return f"{human_bytes(s.disk_bytes if s.disk_bytes is not None else s.data_bytes)}, {s.fragments} files, {s.versions} versions"


def run(args: argparse.Namespace) -> int:
    grace = None if args.older_than is None else timedelta(seconds=args.older_than)
    with open_store(args, read_only=False) as store:
        names = args.table or store.table_names()
        size_before = store.stats().disk_bytes
        rows: list[list[object]] = []
        deferred: list[str] = []
        stopped = False
        with stop_between_steps("the current table") as stop, Progress("compact", total=len(names),
                                                                       unit="tables") as bar:
            for name in names:
                if stop.requested:
                    stopped = True
                    break
                t = store.open_table(name)
                before = t.stats()
                with warnings.catch_warnings():  # --older-than 0 was asked for: LanceDB's warning says the same
                    warnings.simplefilter("ignore", UserWarning)
                    result = t.compact(cleanup_grace=grace, never_grow=True)
                after = t.stats()
                rows.append([name, _cells(before), _cells(after)])
                if result.deferred:
                    deferred.append(name)
                bar.update(1, note=name)
        if rows:
            print(table(["table", "before", "after"], rows))
        if deferred:
            # Merging now would keep the replaced files (versions younger than the grace still
            # use them) beside the merged ones: the store would grow.
            since = "the cleanup grace" if args.older_than is None else f"{args.older_than:g} s"
            print(f"not merged yet (written within {since}, or busy with a writer): {', '.join(deferred)}; "
                  "--older-than 0 merges them now")
        size_after = store.stats().disk_bytes
        if size_after is not None:
            print(f"store on disk: {human_bytes(size_before)} before, {human_bytes(size_after)} after")
    if stopped:
        print(f"stopped: {len(rows)} of {len(names)} tables compacted (the others are unchanged)")
        return 130
    return 0
