"""Budget packing: which items (lines, messages, tools) fit a token budget, section by section."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

import mindcore._core as _core
from mindcore.errors import KernelError, KernelTypeError

__all__ = ["PackMode", "pack_budget"]

PackMode = Literal["first_fit_stop", "best_fit"]
_I64_MAX = 2**63 - 1


def _plain(values: Any) -> Any:
    # numpy arrays cross as Python lists: one fast conversion instead of per-element extraction.
    return values.tolist() if isinstance(values, np.ndarray) else values


def pack_budget(
    costs: Sequence[int],
    *,
    budget: int,
    sections: Sequence[int] | None = None,
    scores: Sequence[float] | None = None,
    section_budgets: Sequence[int | None] | None = None,
    section_max_items: Sequence[int | None] | None = None,
    mode: PackMode = "first_fit_stop",
) -> list[int]:
    """Choose items under token budgets; returns their indices in output order.

    Sections are emitted in ascending section number. Inside a section items are taken by
    `scores` descending (ties by lower index), or in the given order when `scores` is None.
    An item is taken only if its cost fits the overall `budget` left, its section's token cap
    left (``section_budgets[s]``) and its section's item cap (``section_max_items[s]``), so no
    budget is ever exceeded. An item that does not fit:

    * ``"first_fit_stop"``: ends its section (the Agent Mind header rule: a belief that does not
      fit ends the beliefs, and the reflections still get a try). A section thus shows a prefix
      of its ranking, e.g. the most recent messages without gaps.
    * ``"best_fit"``: is skipped; later, smaller items may still fit.

    Parameters
    ----------
    costs
        Token cost of each item (int >= 0; 0-cost items always fit).
    budget
        Overall token budget (int >= 0).
    sections
        Section number of each item (int >= 0); default: all in section 0.
    scores
        Finite score of each item; default: keep the given order.
    section_budgets, section_max_items
        Per-section token and item caps, indexed by section number, ``None`` entries (or the
        whole argument None) = uncapped. They must have an entry for every section in use and
        may have more (a fixed layout where some sections are empty this time).
    mode
        ``"first_fit_stop"`` or ``"best_fit"``.

    Raises
    ------
    KernelError
        Negative cost, budget, section or cap; non-finite score; a length mismatch; an unknown mode.
    KernelTypeError
        An argument that is not a sequence of the right kind of numbers.

    Examples
    --------
    Beliefs (section 0) by confidence, then recent reflections (section 1), 300 tokens in all:

    >>> pack_budget([120, 200, 90, 40], budget=300, sections=[0, 0, 1, 1], scores=[0.9, 0.8, 0.7, 0.6])
    [0, 2, 3]
    >>> pack_budget([5, 10, 2, 1], budget=8, mode="best_fit")
    [0, 2, 3]
    """
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer):
        raise KernelTypeError(f"budget: expected int, got {type(budget).__name__}")
    if costs is None or isinstance(costs, str | bytes):
        raise KernelTypeError(f"costs: expected a sequence of int, got {type(costs).__name__}")
    if mode not in ("first_fit_stop", "best_fit"):
        raise KernelError(f'mode: must be "first_fit_stop" or "best_fit", got {mode!r}')
    if budget < 0:
        raise KernelError(f"budget: must be >= 0, got {budget}")
    return _core.pack_budget(
        _plain(costs),
        min(int(budget), _I64_MAX),  # a budget beyond int64 is as good as unlimited
        _plain(sections),
        _plain(scores),
        _plain(section_budgets),
        _plain(section_max_items),
        mode,
    )
