"""Which messages fit a token budget: the ``recent``, ``full`` and ``compacted`` windows as pure
functions of per-message token counts (numpy, no Python loop over messages).

Messages are addressed by rank (0 = the oldest). The budget rule is the agentified server's: a
message is taken while ``used + tokens <= budget``, the walk stops at the first one that does not
fit, and at least one message is always taken.

>>> import numpy as np
>>> tokens = np.array([25, 25, 25, 25, 25])
>>> recent(tokens, 60).tolist(), full(tokens, 60).tolist()
([3, 4], [0, 1])
>>> recent(tokens, 60, pinned=0).tolist()  # the pinned message counts first
[4]
>>> plan = compact(tokens, 100, pinned=None)
>>> plan.window.tolist(), plan.older.tolist(), plan.summary_budget
([3, 4], [0, 1, 2], 40)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RECENT_SHARE", "CompactionPlan", "compact", "full", "recent"]

#: The share of the budget the recent window gets under ``compacted``; the summary gets the rest.
RECENT_SHARE = 0.6


def _fitting(tokens: np.ndarray, room: int) -> int:
    """How many of ``tokens``, taken in order, fit in ``room`` (at least one if any)."""
    if tokens.shape[0] == 0:
        return 0
    taken = int(np.searchsorted(np.cumsum(tokens, dtype=np.int64), room, side="right"))
    return max(taken, 1)


def recent(tokens: np.ndarray, budget: int, pinned: int | None = None) -> np.ndarray:
    """Ranks of the newest messages that fit ``budget``, ascending. ``pinned`` (a rank, counted
    first and kept out of the window) is for ``keep_first``; the caller puts it in front."""
    ranks = np.arange(tokens.shape[0], dtype=np.int64)
    used = 0
    if pinned is not None:
        used = int(tokens[pinned])
        ranks = np.delete(ranks, pinned)
    newest_first = ranks[::-1]
    taken = _fitting(tokens[newest_first], budget - used)
    return np.sort(newest_first[:taken])


def full(tokens: np.ndarray, budget: int) -> np.ndarray:
    """Ranks of the oldest messages that fit ``budget``, ascending."""
    return np.arange(_fitting(np.asarray(tokens), budget), dtype=np.int64)


@dataclass(frozen=True)
class CompactionPlan:
    """The ``compacted`` split: the recent ``window`` (ranks, ascending, without the pinned
    message), the ``older`` ranks to summarise and the summary's token budget."""

    window: np.ndarray
    older: np.ndarray
    summary_budget: int


def compact(tokens: np.ndarray, budget: int, pinned: int | None) -> CompactionPlan:
    """The recent window gets ``floor(0.6·budget)``; every message before it (but the pinned one)
    is summarised within the rest."""
    recent_budget = int(budget * RECENT_SHARE)
    window = recent(tokens, recent_budget, pinned)
    start = int(window[0]) if window.shape[0] else tokens.shape[0]
    older = np.arange(start, dtype=np.int64)
    if pinned is not None:
        older = older[older != pinned]
    return CompactionPlan(window, older, budget - recent_budget)
