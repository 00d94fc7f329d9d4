"""The ``--- AGENT MIND ---`` block prepended to the system prompt.

Token costs are ``mindcore.kernels.estimate_tokens(rule="chars")`` (ceil(chars/4)) per line, and
the beliefs-then-reflections budget is filled by ``mindcore.kernels.pack_budget`` in
``first_fit_stop`` mode: within a list, the first line that does not fit ends that list.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice

from mindcore.blocks import one_line as _one_line
from mindcore.mind.entries import PRIORITY_RANK, Belief, Entry, Goal, Reflection

__all__ = [
    "HEADER_CLOSE",
    "HEADER_OPEN",
    "MAX_RECENT_REFLECTIONS",
    "HeaderBudget",
    "HeaderIndex",
    "belief_line",
    "goal_line",
    "pinned_line",
    "reflection_line",
    "render_header",
]

log = logging.getLogger("mindcore.mind")

HEADER_OPEN = "--- AGENT MIND ---"
HEADER_CLOSE = "---"
MAX_RECENT_REFLECTIONS = 3


@dataclass(frozen=True, slots=True)
class HeaderBudget:
    """Token budgets of the header's sections (``ceil(chars/4)`` per line) and the longest an
    entry may render. ``None`` leaves goals or pinned rules unbounded, as the seed does."""

    token_budget: int
    goals: int | None = None
    pinned: int | None = None
    max_entry_chars: int | None = None


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def goal_line(g: Goal) -> str:
    """``[<priority>] <description>`` + `` — last progress: <note>`` + `` (due: <dueBy>)``.

    >>> goal_line(Goal("g", "Ship v2", "high", progress=["a", "schema done"], due_by="2026-06-01"))
    '[high] Ship v2 — last progress: schema done (due: 2026-06-01)'
    """
    line = f"[{g.priority}] {_one_line(g.description)}"
    if g.progress:
        line += f" — last progress: {_one_line(g.progress[-1])}"
    if g.due_by:
        line += f" (due: {g.due_by})"
    return line


def pinned_line(r: Reflection) -> str:
    return f"- {_one_line(r.content)}"


def belief_line(b: Belief) -> str:
    return f"- {_one_line(b.content)} ({b.confidence} confidence)"


def reflection_line(r: Reflection) -> str:
    day = datetime.fromtimestamp(r.created_at / 1000, tz=UTC).date().isoformat()
    return f"- [{day}] {_one_line(r.content)}"


def render_header(
    goals: Sequence[Goal],
    pinned: Sequence[Reflection],
    beliefs: Sequence[Belief],
    reflections: Sequence[Reflection],
    *,
    token_budget: int | HeaderBudget,
) -> str:
    """Assemble the block from entries already selected and ordered (goals by priority then
    creation, pinned rules, high-confidence beliefs and recent reflections newest first).

    Beliefs, then at most three reflections, fill the token budget. Goals and pinned rules fill
    budgets of their own when a :class:`HeaderBudget` gives them (a line saying how many were left
    out ends a cut section, and a warning is logged); each entry is clipped to
    ``max_entry_chars``. Every entry goes through :func:`mindcore.blocks.one_line`, so no stored
    text can start a line of its own. Returns ``""`` when no section has a line.

    >>> print(render_header([Goal("g", "Ship v2", "high")], [], [Belief("b", "CI is green", "high")], [],
    ...                     token_budget=300))
    --- AGENT MIND ---
    <BLANKLINE>
    ## Goals
    [high] Ship v2
    <BLANKLINE>
    ## Beliefs
    - CI is green (high confidence)
    <BLANKLINE>
    ---
    """
    from mindcore.kernels import estimate_tokens, pack_budget

    budget = token_budget if isinstance(token_budget, HeaderBudget) else HeaderBudget(token_budget)
    clip = budget.max_entry_chars

    def fit(lines: list[str], limit: int | None, what: str) -> list[str]:
        lines = [_clip(line, clip) for line in lines]
        if limit is None or not lines:
            return lines
        costs = [int(c) for c in estimate_tokens(lines, rule="chars")]
        kept = [lines[i] for i in pack_budget(costs, budget=limit, mode="first_fit_stop")]
        if len(kept) < len(lines):
            cut = len(lines) - len(kept)
            log.warning("mind header: %d %s not shown (over the %d-token budget for them)", cut, what, limit)
            kept.append(f"(+{cut} more {what} not shown)")
        return kept

    b_lines = [_clip(belief_line(b), clip) for b in beliefs]
    r_lines = [_clip(reflection_line(r), clip) for r in reflections[:MAX_RECENT_REFLECTIONS]]
    chosen_b: list[str] = []
    chosen_r: list[str] = []
    lines = b_lines + r_lines
    if lines:
        costs = [int(c) for c in estimate_tokens(lines, rule="chars")]
        sections = [0] * len(b_lines) + [1] * len(r_lines)
        for i in pack_budget(costs, budget=budget.token_budget, sections=sections, mode="first_fit_stop"):
            (chosen_b if i < len(b_lines) else chosen_r).append(lines[i])

    parts = [HEADER_OPEN, ""]
    for title, body in (
        ("## Goals", fit([goal_line(g) for g in goals], budget.goals, "goals")),
        ("## Standing Rules (Pinned)", fit([pinned_line(r) for r in pinned], budget.pinned, "pinned rules")),
        ("## Beliefs", chosen_b),
        ("## Recent Reflections", chosen_r),
    ):
        if body:
            parts += [title, *body, ""]
    if len(parts) == 2:
        return ""
    parts.append(HEADER_CLOSE)
    return "\n".join(parts)


class HeaderIndex:
    """The committed entries sorted once for the header; :meth:`select` then applies the
    time-dependent rules (expiry, recency window) by walking only as far as it needs to.

    >>> idx = HeaderIndex([Belief("b", "CI is green", "high", created_at=5)])
    >>> [b.id for b in idx.select(now_ms=10, window_ms=100, token_budget=300)[2]]
    ['b']
    """

    def __init__(self, entries: Iterable[Entry]) -> None:
        goals: list[Goal] = []
        pinned: list[Reflection] = []
        beliefs: list[Belief] = []
        recent: list[Reflection] = []
        for e in entries:
            if isinstance(e, Goal):
                if e.status == "active":
                    goals.append(e)
            elif isinstance(e, Belief):
                if e.confidence == "high" and not e.error:
                    beliefs.append(e)
            elif e.pinned:
                pinned.append(e)
            elif not e.error:
                recent.append(e)
        goals.sort(key=lambda g: (PRIORITY_RANK[g.priority], g.created_at, g.id))
        pinned.sort(key=lambda r: (r.created_at, r.id))
        beliefs.sort(key=lambda b: (b.created_at, b.id), reverse=True)
        recent.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        self.goals, self.pinned, self.beliefs, self.recent = goals, pinned, beliefs, recent

    @property
    def empty(self) -> bool:
        return not (self.goals or self.pinned or self.beliefs or self.recent)

    def select(
        self, *, now_ms: int, window_ms: float, token_budget: int
    ) -> tuple[list[Goal], list[Reflection], list[Belief], list[Reflection]]:
        """Header candidates at ``now_ms``: active goals, unexpired pinned rules, unexpired
        high-confidence clean beliefs (newest first) and at most three clean unpinned
        reflections from the recency window (newest first)."""
        pinned = [r for r in self.pinned if not r.expired(now_ms)]
        # Every line costs at least one token, so more than budget + 1 candidates never matter.
        beliefs = list(islice((b for b in self.beliefs if not b.expired(now_ms)), token_budget + 1))
        recent: list[Reflection] = []
        oldest = now_ms - window_ms
        for r in self.recent:
            if r.created_at < oldest or len(recent) == MAX_RECENT_REFLECTIONS:
                break
            if not r.expired(now_ms):
                recent.append(r)
        return list(self.goals), pinned, beliefs, recent
