"""Tiered compaction: merge a table's small data files without rewriting its big ones.

Every commit of a few rows adds a small fragment (a data file) to the table; reads pay for each
one. LanceDB's own ``optimize()`` merges every fragment smaller than a million rows, i.e. the
whole table of most stores, so one compaction of a 100k-row table rewrites 100k rows to fold in
a few dozen. Maintenance here plans with Lance's own compaction planner (``pylance``) and picks
its ``target_rows_per_fragment`` per run from the sizes of the fragments, in tiers: a fragment
of at least ``BASE_ROWS * FANOUT**L`` rows is at tier ``L``; small fragments (under
``BASE_ROWS``) are merged at every run, and the fragments of one tier are merged into one of the
next tier only once ``FANOUT`` of them exist. So a run rewrites at most about ``BASE_ROWS`` rows
plus the new ones, a row is rewritten once per tier it climbs (a few times over its life), and a
fragment at the top tier (``BASE_ROWS * FANOUT**4`` rows and more, or any bulk write of that size)
is never rewritten, except where Lance's planner materialises deletions (a fragment with more than
10% of its rows deleted is rewritten without them).

The rewrite itself (reading the small fragments, writing the merged one) runs without the
table's write lock, beside the writers; only its commit takes the lock, for a few milliseconds.
Lance rebases that commit over appends committed meanwhile. A delete or an update that touched a
fragment being rewritten makes the commit fail as a conflict (nothing is committed, no row is
lost); the run is then planned and done again over the new version, up to ``RETRIES`` times, after
which the merge is left for the next run (``CompactionResult.deferred``). Conflicts are expected
beside busy writers: they are logged at DEBUG (``mindcore.store``), never printed. The files a
conflicted rewrite wrote are referenced by no version: the run deletes them before it returns
(Lance's own cleanup would keep them for 7 days, as it cannot tell them from the files of a write
still in progress).

>>> target_rows([100_000, 1, 1, 1])
64
>>> target_rows([4096] * 8 + [1] * 30)
32768
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BASE_ROWS", "DELETED_SHARE", "FANOUT", "MAX_ROWS", "RETRIES", "TIERS", "CompactionResult", "is_retryable_conflict",
           "plan", "target_rows"]

#: Fragments under this many rows are merged at every run. Small, so that a table that grows by
#: single writes does not rewrite its newest rows at every run: with runs every 32 writes (the
#: default ``compact_every``), a base of 1,024 rows would rewrite each row about 16 times before it
#: left the base tier; 64 does so at most twice.
BASE_ROWS = 64
#: This many fragments of one tier are merged into one of the next (``BASE_ROWS * FANOUT**L`` rows).
FANOUT = 8
#: Tiers stop below this size (Lance's own cap on the rows of one data file).
MAX_ROWS = 1 << 20
#: How many tiers there are above the base (a merge into one can fill the next: a settling
#: compaction runs at most this many times more).
TIERS = next(t for t in range(64) if BASE_ROWS * FANOUT ** (t + 1) > MAX_ROWS)
#: A fragment with more than this share of its rows deleted is rewritten without them, whatever
#: its size (Lance's default), at its own size.
DELETED_SHARE = 0.1
#: A compaction whose commit conflicts with a concurrent delete or update is redone this many times.
RETRIES = 3


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What one maintenance run of a table did.

    ``version``: the table's version after it; ``fragments_removed`` / ``fragments_added``: the
    data files merged away and written (0 / 0 when nothing was due); ``target_rows``: the tier's
    ``target_rows_per_fragment`` the run planned with (0 where the store's LanceDB optimize ran
    instead, on ``memory://``); ``retries``: runs redone after a commit conflict; ``deferred``:
    every run conflicted with concurrent writes (``RETRIES + 1`` of them), so nothing was merged
    and the merge is left for the next run.
    """

    version: int
    fragments_removed: int = 0
    fragments_added: int = 0
    target_rows: int = 0
    retries: int = 0
    deferred: bool = False


def target_rows(fragment_rows: Sequence[int], *, base: int = BASE_ROWS, fanout: int = FANOUT,
                cap: int = MAX_ROWS) -> int:
    """The ``target_rows_per_fragment`` of a compaction of fragments of these sizes (in rows).

    The highest tier ``L >= 1`` such that at least ``fanout`` fragments hold between
    ``base * fanout**(L-1)`` and ``base * fanout**L`` rows gives ``base * fanout**L`` (they merge
    into one fragment of tier ``L``, and every smaller fragment beside them with them); with no
    such tier, ``base`` (only the small fragments merge). Lance's planner leaves every fragment
    at or above the target alone (unless it has many deleted rows).
    """
    target = base
    low = base
    while low * fanout <= cap:
        high = low * fanout
        if sum(1 for r in fragment_rows if low <= r < high) >= fanout:
            target = high
        low = high
    return target


def is_retryable_conflict(error: BaseException) -> bool:
    """Whether ``error`` is Lance refusing a commit because a concurrent commit overtook it (nothing
    was committed; the same change planned again over the new version can succeed).

    >>> is_retryable_conflict(OSError("Retryable commit conflict for version 660: This Rewrite "
    ...                               "transaction was preempted by concurrent transaction Update"))
    True
    >>> is_retryable_conflict(OSError("No space left on device"))
    False
    """
    return isinstance(error, OSError) and "Retryable commit conflict" in str(error)


def plan(ds: Any, *, base: int = BASE_ROWS) -> tuple[int, list[Any]]:
    """The tier's ``target_rows_per_fragment`` and Lance's compaction plans for the dataset ``ds``
    (a ``lance.LanceDataset``) as maintenance would run them now, with tiers from ``base`` rows;
    planning reads only.

    A fragment at or above the target with more than ``DELETED_SHARE`` of its rows deleted is
    rewritten at its own size (the tier's target would cut it into small fragments), in a plan of
    its own.
    """
    from lance.optimize import Compaction

    sizes = [(f.fragment_id, f.metadata.physical_rows, f.metadata.num_deletions) for f in ds.get_fragments()]
    target = target_rows([rows for _, rows, _ in sizes], base=base)
    heavy = [i for i, rows, gone in sizes if rows >= target and gone > DELETED_SHARE * rows]
    plans = [Compaction.plan(ds, {"target_rows_per_fragment": target, "excluded_fragment_ids": heavy,
                                  "materialize_deletions_threshold": DELETED_SHARE})]
    if heavy:
        others = [i for i, _, _ in sizes if i not in heavy]
        plans.append(Compaction.plan(ds, {"target_rows_per_fragment": MAX_ROWS, "excluded_fragment_ids": others,
                                          "materialize_deletions_threshold": DELETED_SHARE}))
    return target, plans
